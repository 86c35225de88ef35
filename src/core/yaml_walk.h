// yaml_walk.h — the engine's one YAML front end, shared by manifests (src/config/manifest.c)
// and hardware profiles (src/sim/hardware.c): a file's text (libfyaml) becomes a small tree
// with the file and the line on every node, so that every message about a value can say
// "FILE:LINE: key: what was expected". A file is one YAML document (a second one, after
// "---", is refused rather than left unread). The text must be strict UTF-8 (core/utf8.h);
// aliases (*name) are
// expanded here node by node within a budget (a 600-byte "billion laughs" file would
// otherwise grow without bound); YAML merge keys (<<) are applied; mapping keys are plain
// names; the plain null words (~, null, empty) become YAML_NULL; tags (!!int 5, !x) are
// refused. Every scalar gets its type by the one scalar rule below (yaml_plain_type).
//
// What a key means is the caller's business: the walker only builds and reads the tree.
#pragma once
#include <stddef.h>

// Every node and string of one load lives in an arena, freed in one go.
typedef struct YamlBlock YamlBlock;
typedef struct { YamlBlock *blocks; } YamlArena;
void *yaml_alloc(YamlArena *a, size_t n);             // zeroed, 16-byte aligned
char *yaml_strdup(YamlArena *a, const char *s);
void yaml_arena_free(YamlArena *a);

enum { YAML_NULL, YAML_SCALAR, YAML_MAP, YAML_SEQ };

// The one scalar rule (docs/configuration.md "Values"), shared with analysis/yaml12.py
// (tests/config_scalars.py checks that both read every spelling alike): a quoted or block
// scalar is text; a plain one is typed by the YAML 1.2 core schema, except that a spelling
// YAML 1.1 reads as another value (010 octal, 1_000, 0b101, -0x10, 1:30, yes/on/off/y/n),
// 0o17, and a number beyond a double (1e400, 1e-400) are refused (YS_BAD).
typedef enum { YS_BAD = -1, YS_NULL, YS_BOOL, YS_INT, YS_FLOAT, YS_STR } YamlScalarType;
// The type of the plain scalar s; for YS_BAD, why[n] says what it is and what to write.
YamlScalarType yaml_plain_type(const char *s, char *why, size_t n);
// "text", "a boolean", ...: for "expected X, got Y".
const char *yaml_type_name(YamlScalarType t);
typedef struct YamlNode YamlNode;
typedef struct {
    const char *key;  // mapping entries; NULL for list items
    int line;         // line of the key (1-based); of the item for list items
    YamlNode *val;
} YamlEntry;
struct YamlNode {
    int kind;
    const char *text;     // YAML_SCALAR (may be ""); NULL otherwise
    YamlScalarType type;  // YAML_SCALAR: yaml_plain_type of a plain one (YS_BAD kept for the
                          // reader of the key to refuse, naming it), YS_STR of a quoted one
    const char *file;
    int line;             // 1-based: a scalar's own line; a mapping's or a list's: the line of its key
    int n, cap;           // entries (YAML_MAP, YAML_SEQ)
    YamlEntry *e;
};

// "a mapping", "a list", "an empty value", "a scalar": for "expected X, got Y".
const char *yaml_kind_name(const YamlNode *y);
// The entry of `key` in a mapping, or NULL (also for y NULL or not a mapping).
const YamlEntry *yaml_map_find(const YamlNode *y, const char *key);
// Appends an entry to a mapping or a list (a caller building an override mapping).
void yaml_push(YamlArena *a, YamlNode *y, const char *key, int line, YamlNode *val);

// Bounds on what one file can make us build (aliases expanded).
#define YAML_MAX_NODES 100000      // YAML nodes of one file
#define YAML_MAX_DEPTH 64          // nesting of mappings and lists

// A refusal: the message names the file and the line ("FILE:LINE: ..."); hint, when not
// NULL, is a static suggestion for the line after it.
typedef struct {
    char msg[1400];
    const char *hint;
} YamlError;

// What the file is, for the messages: noun "manifest" gives "a manifest is UTF-8 text" and
// "the manifest expands to more than ..."; expand_hint is the hint of that last refusal.
typedef struct {
    const char *noun;
    const char *expand_hint;
} YamlKind;

// The tree of the YAML text buf[len] of `file` (the name messages use; kept in the arena).
// Returns the root (a mapping, a list or a scalar), or NULL: err->msg empty when the text is
// nothing but blanks and comments (the caller says what an empty file means), else the
// refusal (syntax error, invalid UTF-8, NUL in a value, an alias to nowhere, the node
// budget or the depth, a key that is not a plain name).
YamlNode *yaml_parse(YamlArena *a, const char *file, const YamlKind *kind, const char *buf, size_t len, YamlError *err);
