// options.h — the command-line options of the tools, parsed through the configuration
// schema's types, ranges and messages (config_parse_value): one table per tool, one parser.
// An option either takes a schema key's row (prepare --seed is train.seed: an integer in
// [0, 2^64 - 1]) or states its own type and range the way a schema row does. A value is
// checked at the type the tool uses it at, and a refusal says why, naming the tool and the
// option ("sample --seed: expected an integer in [0, 18446744073709551615], got '-1'").
//
// For make probes (tools/probe_options.py) every tool that parses through here answers two
// questions without doing anything else: BOOST_OPTIONS=list prints its option table, one
// option per line (name, kind, type, lower and upper bound, enum values, schema key, "path" for
// a value that names a file or folder (CKF_PATH); tab-separated);
// BOOST_OPTIONS=values parses the command line and prints each option's value as the tool
// will use it ("--seed<TAB>7"), then exits 0.
#pragma once
#include "config.h"

typedef enum {
    OPT_FLAG,           // --name: *(int *)dst = 1
    OPT_VALUE,          // --name VALUE or --name=VALUE, at most once: dst has the value's type
    OPT_LIST,           // --name VALUE, repeatable: dst is an OptList of the texts, each checked at the
                        // row's type (a list of ids: OPT_INT64_LIST_ROW; read one with opt_value)
    OPT_FLAG_OR_VALUE,  // --name or --name=VALUE: dst is a const char * ("" when given bare)
} OptKind;

typedef struct { const char **v; int n; } OptList;   // v: argc entries (opt_parse allocates)

typedef struct {
    const char *name;                // without the dashes: "seed" for --seed
    OptKind kind;
    const char *key;                 // a schema key whose row the value takes ("train.seed"): dst is that
                                     // field's type (a char[] for a string key); or NULL and:
    ConfigKeyType type;              // CK_INT, CK_INT64, CK_UINT64, CK_FLOAT, CK_DOUBLE, CK_ENUM or CK_STRING
    double min, max;                 // with the schema's CKF_* flags
    unsigned flags;                  // CKF_PATH: the value names a file or folder (OPT_PATH_ROW; a key row
                                     // takes its key's flags, so prepare --cache-dir is a path as data.cache_dir is)
    const char *const *enum_names;   // CK_ENUM: NULL-terminated
    void *dst;                       // int (CK_INT, CK_ENUM), int64_t, uint64_t, float, double, const char *
} ToolOption;

// Table rows. Bounds are inclusive.
#define OPT_FLAG_ROW(nm, d) { .name = (nm), .kind = OPT_FLAG, .dst = (d) }
#define OPT_KEY_ROW(nm, k, d) { .name = (nm), .kind = OPT_VALUE, .key = (k), .dst = (d) }
#define OPT_INT_ROW(nm, lo, hi, d) \
    { .name = (nm), .kind = OPT_VALUE, .type = CK_INT, .min = (lo), .max = (hi), .flags = CKF_MIN | CKF_MAX, .dst = (d) }
#define OPT_INT64_ROW(nm, lo, hi, d) \
    { .name = (nm), .kind = OPT_VALUE, .type = CK_INT64, .min = (lo), .max = (hi), .flags = CKF_MIN | CKF_MAX, .dst = (d) }
#define OPT_REAL_ROW(nm, lo, hi, d) \
    { .name = (nm), .kind = OPT_VALUE, .type = CK_DOUBLE, .min = (lo), .max = (hi), .flags = CKF_MIN | CKF_MAX, .dst = (d) }
#define OPT_ENUM_ROW(nm, names, d) { .name = (nm), .kind = OPT_VALUE, .type = CK_ENUM, .enum_names = (names), .dst = (d) }
#define OPT_STR_ROW(nm, d) { .name = (nm), .kind = OPT_VALUE, .type = CK_STRING, .dst = (d) }
#define OPT_PATH_ROW(nm, d) { .name = (nm), .kind = OPT_VALUE, .type = CK_STRING, .flags = CKF_PATH, .dst = (d) }
#define OPT_LIST_ROW(nm, d) { .name = (nm), .kind = OPT_LIST, .type = CK_STRING, .dst = (d) }
#define OPT_INT64_LIST_ROW(nm, lo, hi, d) \
    { .name = (nm), .kind = OPT_LIST, .type = CK_INT64, .min = (lo), .max = (hi), .flags = CKF_MIN | CKF_MAX, .dst = (d) }
#define OPT_END { .name = NULL }

// Parses argv[1..argc) against opts (ended by OPT_END) and up to max_pos positional
// arguments into pos[] (*n_pos of them; pos may be NULL when max_pos is 0). --help or -h
// prints usage and exits 0. An unknown option (with the nearest name), a missing value, a
// value given twice or one the type refuses: exit 2, "TOOL --NAME: why". Then the
// BOOST_OPTIONS questions above.
void opt_parse(const char *tool, const ToolOption *opts, int argc, char **argv, const char **pos, int max_pos, int *n_pos,
               const char *usage);
// The value of one option as text, checked as opt_parse checks it, for a tool that reads a
// value outside the table (a comma-separated list's items): exit 2 as above when refused.
void opt_value(const char *tool, const char *name, const ToolOption *spec, const char *text, void *dst);
// A comma-separated list of integers in [lo, hi] (bench_attention --seq 256,512): at most max
// of them into out, each checked as an option value; returns the count. Exit 2 as above for
// an item the type refuses, an empty list or more than max items.
int opt_int_list(const char *tool, const char *name, const char *text, int lo, int hi, int *out, int max);
