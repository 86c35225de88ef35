// hardware.c — loading and validating hardware profiles (hardware.h). The file is read into
// the YAML walker's tree (core/yaml_walk.h, the front end manifests use too: strict UTF-8,
// aliases and merge keys, FILE:LINE on every node); every value is checked for type and
// range, every mapping for unknown and missing keys, and each message names FILE:LINE and
// the key. A failure unwinds with longjmp to hw_load, which frees what was built and returns
// the message.
#include "hardware.h"
#include "roofline.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"   // config_suggest: "did you mean"
#include "../core/check.h"
#include "../core/fileio.h"
#include "../core/yaml_walk.h"

// NULL-terminated name lists: YAML keys, in enum order.
static const char *const prec_names[SP_COUNT + 1] = { "fp32", "tf32", "bf16", NULL };
static const char *const coll_names[HW_COLL_COUNT + 1] = { "all_reduce", "all_gather", "reduce_scatter", "p2p", NULL };
static const char *const link_names[HW_LINK_COUNT + 1] = { "intra_node", "inter_node", NULL };

const char *sim_precision_name(SimPrecision p) { return (unsigned)p < SP_COUNT ? prec_names[p] : "?"; }
const char *hw_coll_name(HwColl k) { return (unsigned)k < HW_COLL_COUNT ? coll_names[k] : "?"; }

SimPrecision sim_precision_of(DType dt, int tf32) {
    if (dt == DT_BF16) return SP_BF16;
    CHECK(dt == DT_F32, "no GEMM precision for compute dtype %d (fp32 or bf16 expected)", (int)dt);
    return tf32 ? SP_TF32 : SP_FP32;
}

// ---- error context ------------------------------------------------------------------------

typedef struct {
    const char *file;
    char *err;
    size_t err_len;
    jmp_buf jb;
} Ctx;

__attribute__((noreturn, format(printf, 3, 4)))
static void fail(Ctx *c, int line, const char *fmt, ...) {
    int k = snprintf(c->err, c->err_len, "%s:%d: ", c->file, line > 0 ? line : 1);
    if (k < 0) k = 0;
    va_list ap;
    va_start(ap, fmt);
    if ((size_t)k < c->err_len) vsnprintf(c->err + k, c->err_len - (size_t)k, fmt, ap);
    va_end(ap);
    longjmp(c->jb, 1);
}

// Line of a node (1-based): a scalar's own line, a mapping's or a list's the line of its key;
// `fallback` for a missing node (the caller passes the line of the mapping above).
static int node_line(const YamlNode *n, int fallback) { return n ? n->line : fallback; }

static const YamlNode *lookup(const YamlNode *map, const char *key) {
    const YamlEntry *e = yaml_map_find(map, key);
    return e ? e->val : NULL;
}
static int key_line(const YamlNode *map, const char *key, int fallback) {
    const YamlEntry *e = yaml_map_find(map, key);
    return e ? e->line : fallback;
}

static const char *kind_of(const YamlNode *n) { return yaml_kind_name(n); }
static int is_map(const YamlNode *n) { return n && n->kind == YAML_MAP; }
static int is_seq(const YamlNode *n) { return n && n->kind == YAML_SEQ; }

static void expect_map(Ctx *c, const YamlNode *n, int line, const char *what) {
    if (!n || !is_map(n)) fail(c, line, "%s: expected a mapping, got %s", what, kind_of(n));
}

// Every key of `map` must be in `allowed` (NULL-terminated); every key in `required` present.
static void check_keys(Ctx *c, const YamlNode *map, int line, const char *where,
                       const char *const *allowed, const char *const *required) {
    for (int e = 0; e < map->n; e++) {
        int kl = map->e[e].line;
        char key[128];
        snprintf(key, sizeof key, "%.127s", map->e[e].key);
        int ok = 0;
        for (int i = 0; allowed[i]; i++) ok |= !strcmp(allowed[i], key);
        if (!ok) {
            const char *sug = config_suggest(key, allowed);
            if (sug) fail(c, kl, "unknown key '%s' in %s; did you mean '%s'?", key, where, sug);
            char list[512] = "";
            for (int i = 0; allowed[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", allowed[i]);
            fail(c, kl, "unknown key '%s' in %s (expected one of: %s)", key, where, list);
        }
    }
    for (int i = 0; required && required[i]; i++)
        if (!yaml_map_find(map, required[i]))
            fail(c, line, "%s: missing key '%s'", where, required[i]);
}

static const char *scalar_text(Ctx *c, const YamlNode *n, int line, const char *what, char *buf, size_t bn) {
    if (!n || n->kind != YAML_SCALAR) fail(c, line, "%s: expected a value, got %s", what, kind_of(n));
    size_t len = strlen(n->text);
    const char *s = n->text;
    if (len >= bn) fail(c, line, "%s: value longer than %zu characters", what, bn - 1);
    memcpy(buf, s, len);
    buf[len] = 0;
    return buf;
}

// A number is written as the one scalar rule types it (core/yaml_walk.h, as the manifests and
// analysis/yaml12.py read it): plain, not quoted; an integer where one is wanted; no spelling the
// rule refuses (010, 1_000, 0o17, ...), which another YAML reader would read as another value.
static void plain_number(Ctx *c, const YamlNode *n, int line, const char *what, int integer) {
    char why[256] = "";
    YamlScalarType t = yaml_plain_type(n->text, why, sizeof why);   // (also a mapping key's text)
    if (n->type == YS_STR && (t == YS_INT || t == YS_FLOAT))
        fail(c, line, "%s: expected a number, got the text '%s' (quoted); write it without quotes", what, n->text);
    if (n->type == YS_STR || t == YS_STR) fail(c, line, "%s: expected %s, got '%s'", what, integer ? "an integer" : "a number", n->text);
    if (t == YS_BAD) fail(c, line, "%s: %s", what, why);
    if (integer ? t != YS_INT : t != YS_INT && t != YS_FLOAT)
        fail(c, line, "%s: expected %s, got %s '%s'", what, integer ? "an integer" : "a number", yaml_type_name(t), n->text);
}

// A finite number in [lo, hi] (lo_open: lo excluded).
static double num_node(Ctx *c, const YamlNode *n, int line, const char *what, double lo, int lo_open, double hi) {
    char buf[64];
    scalar_text(c, n, line, what, buf, sizeof buf);
    plain_number(c, n, line, what, 0);
    char *end = NULL;
    double v = strtod(buf, &end);
    if (!buf[0] || *end || !isfinite(v)) fail(c, line, "%s: expected a number, got '%s'", what, buf);
    if (lo_open ? !(v > lo) : !(v >= lo)) fail(c, line, "%s: expected a number %s %g, got %s", what, lo_open ? ">" : ">=", lo, buf);
    if (v > hi) fail(c, line, "%s: expected a number <= %g, got %s", what, hi, buf);
    return v;
}
static int int_node(Ctx *c, const YamlNode *n, int line, const char *what, long lo, long hi) {
    char buf[64];
    scalar_text(c, n, line, what, buf, sizeof buf);
    plain_number(c, n, line, what, 1);
    char *end = NULL;
    long v = strtol(buf, &end, 0);   // (0x10 as the rule reads it: plain_number refused 010 and -0x10)
    if (!buf[0] || *end) fail(c, line, "%s: expected an integer, got '%s'", what, buf);
    if (v < lo || v > hi) fail(c, line, "%s: expected an integer in [%ld, %ld], got %ld", what, lo, hi, v);
    return (int)v;
}

static double num_key(Ctx *c, const YamlNode *map, int line, const char *where, const char *key,
                      double lo, int lo_open, double hi) {
    char what[160];
    snprintf(what, sizeof what, "%s%s%s", where, *where ? "." : "", key);
    return num_node(c, lookup(map, key), key_line(map, key, line), what, lo, lo_open, hi);
}
static int int_key(Ctx *c, const YamlNode *map, int line, const char *where, const char *key, long lo, long hi) {
    char what[160];
    snprintf(what, sizeof what, "%s%s%s", where, *where ? "." : "", key);
    return int_node(c, lookup(map, key), key_line(map, key, line), what, lo, hi);
}
static void str_key(Ctx *c, const YamlNode *map, int line, const char *key, char *out, size_t n, int nonempty) {
    int kl = key_line(map, key, line);
    scalar_text(c, lookup(map, key), kl, key, out, n);
    if (nonempty && !out[0]) fail(c, kl, "%s: must not be empty", key);
}
// One of names[] (NULL-terminated); returns its index.
static int enum_key(Ctx *c, const YamlNode *map, int line, const char *what, const char *key, const char *const *names) {
    char buf[64];
    int kl = key_line(map, key, line);
    scalar_text(c, lookup(map, key), kl, what, buf, sizeof buf);
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], buf)) return i;
    char list[256] = "";
    for (int i = 0; names[i]; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    fail(c, kl, "%s: expected one of %s, got '%s'", what, list, buf);
}

// A flow list of exactly n integers >= 1 ([128, 128]).
static void int_list(Ctx *c, const YamlNode *map, int line, const char *what, const char *key, int *out, int n) {
    const YamlNode *s = lookup(map, key);
    int kl = key_line(map, key, line);
    if (!is_seq(s) || s->n != n)
        fail(c, kl, "%s.%s: expected a list of %d integers, got %s", what, key, n, kind_of(s));
    for (int i = 0; i < n; i++)
        out[i] = int_node(c, s->e[i].val, kl, what, 1, 1 << 30);
}

// ---- sections ------------------------------------------------------------------------------

static int prec_index(const char *name) {
    for (int i = 0; i < SP_COUNT; i++)
        if (!strcmp(prec_names[i], name)) return i;
    return -1;
}

// Iterate a mapping whose keys are precisions; calls fn for each.
typedef void (*PrecFn)(Ctx *c, HwProfile *p, SimPrecision prec, const YamlNode *val, int line, const char *where);
static void each_precision(Ctx *c, HwProfile *p, const YamlNode *map, int line, const char *section, PrecFn fn) {
    expect_map(c, map, line, section);
    check_keys(c, map, line, section, prec_names, NULL);
    for (int i = 0; i < map->n; i++) {
        const YamlEntry *e = &map->e[i];
        char key[16];
        snprintf(key, sizeof key, "%.15s", e->key);
        char where[64];
        snprintf(where, sizeof where, "%s.%s", section, key);
        fn(c, p, (SimPrecision)prec_index(key), e->val, e->line, where);
    }
}

static double elem_bytes(SimPrecision p) { return p == SP_BF16 ? 2.0 : 4.0; }

static void parse_peak(Ctx *c, HwProfile *p, SimPrecision prec, const YamlNode *val, int line, const char *where) {
    p->peak_flops[prec] = num_node(c, val, node_line(val, line), where, 0, 1, 1e20);
}

static int cmp_int(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
// Sorted distinct values of v[n] into out; returns their count.
static int distinct(const int *v, int n, int *out) {
    memcpy(out, v, sizeof *v * (size_t)n);
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!k || out[k - 1] != out[i]) out[k++] = out[i];
    return k;
}
static int axis_index(const int *axis, int n, int v) {
    for (int i = 0; i < n; i++)
        if (axis[i] == v) return i;
    return -1;
}

// gemm.<prec>.points: a full M×N×K grid of [M, N, K, flop_per_s]. The raw columns are read
// into g's own arrays (so that a failure part-way leaves nothing unowned), then replaced by
// the sorted grid axes and the rates in [iM][iN][iK] order.
static void parse_table(Ctx *c, HwGemm *g, const YamlNode *map, int line, const char *where) {
    const YamlNode *pts = lookup(map, "points");
    int kl = key_line(map, "points", line);
    if (!is_seq(pts) || pts->n < 1)
        fail(c, kl, "%s.points: expected a non-empty list of [M, N, K, flop_per_s], got %s", where, kind_of(pts));
    int n = pts->n;
    g->Ms = xcalloc((size_t)n, sizeof(int));
    g->Ns = xcalloc((size_t)n, sizeof(int));
    g->Ks = xcalloc((size_t)n, sizeof(int));
    g->rate = xcalloc((size_t)n, sizeof(double));
    int *col[3] = { g->Ms, g->Ns, g->Ks };
    for (int i = 0; i < n; i++) {
        const YamlNode *q = pts->e[i].val;
        int q_seq = is_seq(q);
        int ql = node_line(q_seq && q->n ? q->e[0].val : q, kl);
        char what[96];
        snprintf(what, sizeof what, "%s.points[%d]", where, i);
        if (!q_seq || q->n != 4) fail(c, ql, "%s: expected [M, N, K, flop_per_s], got %s", what, kind_of(q));
        for (int j = 0; j < 3; j++) col[j][i] = int_node(c, q->e[j].val, ql, what, 1, 1 << 30);
        g->rate[i] = num_node(c, q->e[3].val, ql, what, 0, 1, 1e20);
    }
    int *raw[3] = { g->Ms, g->Ns, g->Ks }, *axis[3], na[3];
    double *rate = g->rate, *grid = xcalloc((size_t)n, sizeof *grid);
    for (int j = 0; j < 3; j++) { axis[j] = xcalloc((size_t)n, sizeof(int)); na[j] = distinct(raw[j], n, axis[j]); }
    int bad = (long)na[0] * na[1] * na[2] != n, dup = -1;
    for (int i = 0; i < n && !bad; i++) {
        size_t at = ((size_t)axis_index(axis[0], na[0], raw[0][i]) * (size_t)na[1] + (size_t)axis_index(axis[1], na[1], raw[1][i])) *
                    (size_t)na[2] + (size_t)axis_index(axis[2], na[2], raw[2][i]);
        if (grid[at] > 0) { dup = i; break; }
        grid[at] = rate[i];
    }
    int dM = dup >= 0 ? raw[0][dup] : 0, dN = dup >= 0 ? raw[1][dup] : 0, dK = dup >= 0 ? raw[2][dup] : 0;
    g->Ms = axis[0]; g->Ns = axis[1]; g->Ks = axis[2]; g->rate = grid;
    g->nM = na[0]; g->nN = na[1]; g->nK = na[2];
    for (int j = 0; j < 3; j++) free(raw[j]);
    free(rate);
    if (bad)
        fail(c, kl, "%s.points: %d points do not form a full grid (%d M × %d N × %d K values = %ld)", where, n,
             na[0], na[1], na[2], (long)na[0] * na[1] * na[2]);
    if (dup >= 0) fail(c, kl, "%s.points: the shape %d×%d×%d appears twice", where, dM, dN, dK);
}

static void parse_gemm(Ctx *c, HwProfile *p, SimPrecision prec, const YamlNode *val, int line, const char *where) {
    static const char *const models[] = { "roofline", "table", NULL };
    static const char *const roof_keys[] = { "model", "tile", "mamf", "mamf_shape", "epilogue", "split_k", NULL };
    static const char *const roof_required[] = { "model", "tile", "mamf", "mamf_shape", NULL };
    static const char *const epilogues[] = { "overlapped", "serial", NULL };
    static const char *const table_keys[] = { "model", "points", "in_step", NULL };
    static const char *const table_required[] = { "model", "points", NULL };
    HwGemm *g = &p->gemm[prec];
    expect_map(c, val, line, where);
    char what[96];
    snprintf(what, sizeof what, "%s.model", where);
    g->model = (GemmModel)enum_key(c, val, line, what, "model", models);
    g->present = 1;
    if (g->model == GEMM_TABLE) {
        check_keys(c, val, line, where, table_keys, table_required);
        parse_table(c, g, val, line, where);
        if (lookup(val, "in_step")) g->in_step = num_key(c, val, line, where, "in_step", HW_IN_STEP_MIN, 0, HW_IN_STEP_MAX);
        return;
    }
    check_keys(c, val, line, where, roof_keys, roof_required);
    if (lookup(val, "epilogue")) {
        snprintf(what, sizeof what, "%s.epilogue", where);
        g->epilogue_serial = enum_key(c, val, line, what, "epilogue", epilogues);
    }
    if (lookup(val, "split_k")) {
        static const char *const bools[] = { "false", "true", NULL };
        snprintf(what, sizeof what, "%s.split_k", where);
        g->split_k = enum_key(c, val, line, what, "split_k", bools);
    }
    int tile[2], shape[3];
    int_list(c, val, line, where, "tile", tile, 2);
    int_list(c, val, line, where, "mamf_shape", shape, 3);
    g->tile_m = tile[0]; g->tile_n = tile[1];
    g->mamf_M = shape[0]; g->mamf_N = shape[1]; g->mamf_K = shape[2];
    g->mamf = num_key(c, val, line, where, "mamf", 0, 1, 1e20);
    int ml = key_line(val, "mamf", line);
    if (!(p->peak_flops[prec] > 0)) fail(c, ml, "%s: a roofline needs peak_flops.%s", where, prec_names[prec]);
    if (g->mamf > p->peak_flops[prec]) fail(c, ml, "%s.mamf %g exceeds peak_flops.%s %g", where, g->mamf, prec_names[prec], p->peak_flops[prec]);
    // Pin the compute efficiency so that the curve gives mamf at its shape; the shape must
    // be compute-bound there, else no efficiency reproduces the measurement.
    double M = g->mamf_M, N = g->mamf_N, K = g->mamf_K;
    double q = hw_wave_quantization(p->sm_count, g->tile_m, g->tile_n, M, N, 1);
    double t_meas = 2 * M * N * K / g->mamf;
    double t_mem = elem_bytes(prec) * (M * K + K * N + M * N) / hw_memory_rate(p);
    if (t_mem > t_meas)
        fail(c, ml, "%s: the mamf shape %d×%d×%d is memory-bound under this profile's memory bandwidth "
             "(%.3g s > %.3g s): the roofline cannot reproduce the measurement", where, g->mamf_M, g->mamf_N, g->mamf_K, t_mem, t_meas);
    // A serial epilogue (sim.h): the main loops at the rate x = peak·eff_core (2K FLOPs per
    // output element, over whole tiles: q), then the stores of the useful outputs, elem_bytes
    // each, at the memory bandwidth B over the waves' tiles (q_w, tiles only): t = 2MNK/(x·q) +
    // M·N·c/(B·q_w). Pinned at the mamf shape: x = 2MNK / (q·(2MNK/mamf − M·N·c/(B·q_w))).
    double B = hw_memory_rate(p), cb = elem_bytes(prec);
    double x = g->mamf / q;
    if (g->epilogue_serial) {
        double qw = hw_wave_fill(p->sm_count, g->tile_m, g->tile_n, M, N, 1);
        double den = q * (t_meas - M * N * cb / (B * qw));
        if (!(den > 0))
            fail(c, ml, "%s: with a serial epilogue the mamf shape's K %d is too short to reproduce the measurement", where, g->mamf_K);
        x = 2 * M * N * K / den;
    }
    g->eff_core = x / p->peak_flops[prec];
    g->epilogue_k0 = g->epilogue_serial ? cb * x / (2 * B) : 0;
    // the pinning assumes the measurement's shape ran unsplit
    if (g->split_k && sim_gemm_split(p, prec, M, N, K, 1) != 1)
        fail(c, ml, "%s: with split_k the mamf shape %d×%d×%d would be split: it must fill the processors unsplit", where,
             g->mamf_M, g->mamf_N, g->mamf_K);
    if (g->eff_core > 1)
        fail(c, ml, "%s: mamf at %d×%d×%d implies %.3f of peak after wave quantization (%.3f): more than the peak",
             where, g->mamf_M, g->mamf_N, g->mamf_K, g->eff_core, q);
}

static void parse_attention(Ctx *c, HwProfile *p, SimPrecision prec, const YamlNode *val, int line, const char *where) {
    static const char *const keys[] = { "forward", "backward", NULL };
    expect_map(c, val, line, where);
    check_keys(c, val, line, where, keys, keys);
    p->attention[prec].forward = num_key(c, val, line, where, "forward", 0, 1, 1);
    p->attention[prec].backward = num_key(c, val, line, where, "backward", 0, 1, 1);
    p->attention[prec].present = 1;
}

double hw_busbw(const HwCollCost *c, int n) {
    int i = 0;
    while (i + 1 < c->n_bw && c->bw_n[i + 1] <= n) i++;
    return c->bw[i];
}

// A mapping {rank count: number} with distinct counts >= lo, sorted ascending into ns/vs
// (at most HW_BUSBW_MAX entries); numbers in (0, hi].
static int parse_count_table(Ctx *c, const YamlNode *v, int kl, const char *what, int lo, double hi, int *ns, double *vs) {
    int n = v->n;
    if (n < 1 || n > HW_BUSBW_MAX) fail(c, kl, "%s: expected 1 to %d entries {rank count: number}, got %d", what, HW_BUSBW_MAX, n);
    int k = 0;
    for (int e = 0; e < v->n; e++) {
        int el = v->e[e].line;
        const YamlNode key = { .kind = YAML_SCALAR, .text = v->e[e].key, .file = v->file, .line = el };
        int size = int_node(c, &key, el, what, lo, 1 << 20);
        double x = num_node(c, v->e[e].val, el, what, 0, 1, hi);
        int i = k++;
        while (i > 0 && ns[i - 1] > size) { ns[i] = ns[i - 1]; vs[i] = vs[i - 1]; i--; }
        if (i > 0 && ns[i - 1] == size) fail(c, el, "%s: rank count %d listed twice", what, size);
        ns[i] = size;
        vs[i] = x;
    }
    return k;
}

// busbw: a number, or a mapping {group size: number} with distinct sizes >= 2.
static void parse_busbw(Ctx *c, HwCollCost *cost, const YamlNode *map, int line, const char *where) {
    const YamlNode *v = lookup(map, "busbw");
    int kl = key_line(map, "busbw", line);
    char what[128];
    snprintf(what, sizeof what, "%s.busbw", where);
    if (!is_map(v)) {
        cost->n_bw = 1;
        cost->bw_n[0] = 0;
        cost->bw[0] = num_node(c, v, kl, what, 0, 1, 1e16);
        return;
    }
    cost->n_bw = parse_count_table(c, v, kl, what, 2, 1e16, cost->bw_n, cost->bw);
}

const HwOpRate *hw_op_rate(const HwProfile *p, SimPrecision prec, const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < p->n_op_rates[prec]; i++)
        if (!strcmp(p->op_rates[prec][i].name, name)) return &p->op_rates[prec][i];
    return NULL;
}

// op_rates.<prec>: {name: {flop_per_s: x} | {byte_per_s: x}, ...}
static void parse_op_rates(Ctx *c, HwProfile *p, SimPrecision prec, const YamlNode *val, int line, const char *where) {
    static const char *const one_of[] = { "flop_per_s", "byte_per_s", NULL };
    expect_map(c, val, line, where);
    for (int e = 0; e < val->n; e++) {
        int kl = val->e[e].line;
        if (p->n_op_rates[prec] == HW_OP_RATES_MAX) fail(c, kl, "%s: at most %d ops", where, HW_OP_RATES_MAX);
        HwOpRate *r = &p->op_rates[prec][p->n_op_rates[prec]++];
        size_t len = strlen(val->e[e].key);
        const char *k = val->e[e].key;
        if (len == 0 || len >= sizeof r->name) fail(c, kl, "%s: an op name of 1 to %zu characters expected", where, sizeof r->name - 1);
        snprintf(r->name, sizeof r->name, "%.*s", (int)len, k);
        for (int i = 0; i < p->n_op_rates[prec] - 1; i++)
            if (!strcmp(p->op_rates[prec][i].name, r->name)) fail(c, kl, "%s: op %s listed twice", where, r->name);
        char w[120];
        snprintf(w, sizeof w, "%.60s.%s", where, r->name);
        const YamlNode *v = val->e[e].val;
        expect_map(c, v, kl, w);
        if (v->n != 1) fail(c, kl, "%s: expected exactly one of flop_per_s, byte_per_s", w);
        check_keys(c, v, kl, w, one_of, NULL);
        r->per_byte = lookup(v, "byte_per_s") != NULL;
        r->rate = num_key(c, v, kl, w, r->per_byte ? "byte_per_s" : "flop_per_s", 0, 1, 1e18);
    }
}

double hw_rank_table_at(const HwRankTable *t, int n, double none) {
    if (t->n == 0 || n < t->at[0]) return none;
    int i = 0;
    while (i + 1 < t->n && t->at[i + 1] <= n) i++;
    return t->v[i];
}

double hw_link_in_step(const HwLink *l, int group, HwColl kind, int n) {
    double f = hw_rank_table_at(&l->in_step, n, 1.0);
    if (group >= 0 && group < GROUP_COUNT) f = hw_rank_table_at(&l->in_step_by[group][kind], n, f);
    return f;
}

double hw_rank_share(const HwProfile *p, int ranks_on_node) { return hw_rank_table_at(&p->rank_share, ranks_on_node, 1.0); }

// size_curve: {ranks: R, points: [[bytes, busbw], ...]}: ascending sizes, stored as the shape
// busbw / busbw(largest).
static void parse_curve(Ctx *c, HwSizeCurve *cv, const YamlNode *map, int line, const char *where) {
    static const char *const keys[] = { "ranks", "points", NULL };
    char w[128];
    snprintf(w, sizeof w, "%s.size_curve", where);
    expect_map(c, map, line, w);
    check_keys(c, map, line, w, keys, keys);
    cv->ranks = int_key(c, map, line, w, "ranks", 2, 1 << 20);
    const YamlNode *pts = lookup(map, "points");
    int kl = key_line(map, "points", line);
    if (!is_seq(pts) || pts->n < 2 || pts->n > HW_CURVE_MAX)
        fail(c, kl, "%s.points: expected a list of 2 to %d [bytes, busbw] pairs, got %s", w, HW_CURVE_MAX, kind_of(pts));
    double bw[HW_CURVE_MAX];
    for (int i = 0; i < pts->n; i++) {
        const YamlNode *q = pts->e[i].val;
        int ql = node_line(is_seq(q) && q->n ? q->e[0].val : q, kl);
        char what[160];
        snprintf(what, sizeof what, "%s.points[%d]", w, i);
        if (!is_seq(q) || q->n != 2) fail(c, ql, "%s: expected [bytes, busbw], got %s", what, kind_of(q));
        cv->bytes[i] = num_node(c, q->e[0].val, ql, what, 0, 1, 1e15);
        bw[i] = num_node(c, q->e[1].val, ql, what, 0, 1, 1e16);
        if (i && !(cv->bytes[i] > cv->bytes[i - 1])) fail(c, ql, "%s: sizes must ascend (%g after %g)", what, cv->bytes[i], cv->bytes[i - 1]);
    }
    cv->n = pts->n;
    for (int i = 0; i < cv->n; i++) {
        cv->frac[i] = bw[i] / bw[cv->n - 1];
        if (cv->frac[i] > 1.5) fail(c, kl, "%s.points: busbw %g at %g bytes is %.2f× the largest message's: not a size curve", w,
                                    bw[i], cv->bytes[i], cv->frac[i]);
    }
    // A larger message never takes less time: where a measurement's busbw grows faster than the
    // size (noise of the smallest sizes), the shape is held to the size's ratio; log-log
    // interpolation between points then keeps the time non-decreasing.
    for (int i = 1; i < cv->n; i++) {
        double cap = cv->frac[i - 1] * cv->bytes[i] / cv->bytes[i - 1];
        if (cv->frac[i] > cap) cv->frac[i] = cap;
    }
}

// key {group size: number} of map, each number in [lo, hi] (lo 0: >= 0), into t; an
// inter-node link has none of the in_step keys.
static void parse_in_step(Ctx *c, HwRankTable *t, const YamlNode *map, int line, const char *where, const char *key, int inter,
                          double lo, double hi) {
    const YamlNode *v = lookup(map, key);
    int kl = key_line(map, key, line);
    char w[160];
    snprintf(w, sizeof w, "%.80s.%.60s", where, key);
    if (inter) fail(c, kl, "%s: only links.intra_node has it", w);
    if (!is_map(v)) fail(c, kl, "%s: expected a mapping {group size: number}, got %s", w, kind_of(v));
    t->n = parse_count_table(c, v, kl, w, 2, hi, t->at, t->v);
    for (int i = 0; i < t->n; i++)
        if (t->v[i] < lo) fail(c, kl, "%s: %g for %d ranks: expected a number in [%g, %g]", w, t->v[i], t->at[i], lo, hi);
}

// One α-β cost {base_s, hop_s, busbw}.
static void parse_cost(Ctx *c, HwCollCost *cost, const YamlNode *v, int vl, const char *w) {
    static const char *const cost_keys[] = { "base_s", "hop_s", "busbw", NULL };
    expect_map(c, v, vl, w);
    check_keys(c, v, vl, w, cost_keys, cost_keys);
    cost->base_s = num_key(c, v, vl, w, "base_s", 0, 0, 10);
    cost->hop_s = num_key(c, v, vl, w, "hop_s", 0, 0, 10);
    parse_busbw(c, cost, v, vl, w);
}

// in_step_by's keys: "tp_all_reduce" is group GROUP_TP and kind HW_ALL_REDUCE (k -1: the group
// prefix alone).
static int in_step_key_is(const char *key, int g, int k) {
    const char *gn = comm_group_name((CommGroup)g);
    size_t n = strlen(gn);
    if (strncmp(key, gn, n) || key[n] != '_') return 0;
    return k < 0 || !strcmp(key + n + 1, coll_names[k]);
}

static void parse_link(Ctx *c, HwLink *l, const YamlNode *map, int line, const char *where, int inter) {
    static const char *const keys[] = { "all_reduce", "all_gather", "reduce_scatter", "p2p", "ll", "size_curve", "nics_per_node",
                                        "in_step", "in_step_by", "in_step_call_s", "ordered", NULL };
    static const char *const ll_keys[] = { "base_s", "hop_s", "bw_fraction", NULL };
    expect_map(c, map, line, where);
    check_keys(c, map, line, where, keys, coll_names);
    if (lookup(map, inter ? "size_curve" : "nics_per_node"))
        fail(c, key_line(map, inter ? "size_curve" : "nics_per_node", line), "%s.%s: only links.%s has it", where,
             inter ? "size_curve" : "nics_per_node", inter ? "intra_node" : "inter_node");
    if (lookup(map, "size_curve")) parse_curve(c, &l->curve, lookup(map, "size_curve"), key_line(map, "size_curve", line), where);
    if (lookup(map, "nics_per_node")) l->nics_per_node = int_key(c, map, line, where, "nics_per_node", 1, 1 << 10);
    if (lookup(map, "in_step")) parse_in_step(c, &l->in_step, map, line, where, "in_step", inter, HW_IN_STEP_MIN, HW_IN_STEP_MAX);
    if (lookup(map, "in_step_call_s")) parse_in_step(c, &l->in_step_call_s, map, line, where, "in_step_call_s", inter, 0, 0.1);
    const YamlNode *by = lookup(map, "in_step_by");
    if (by) {
        int bl = key_line(map, "in_step_by", line);
        char w[96];
        snprintf(w, sizeof w, "%.80s.in_step_by", where);
        if (inter) fail(c, bl, "%s: only links.intra_node has it", w);
        if (!is_map(by)) fail(c, bl, "%s: expected a mapping {GROUP_KIND: {group size: factor}}, got %s", w, kind_of(by));
        for (int e = 0; e < by->n; e++) {
            int g = 0, k = 0;
            while (g < GROUP_COUNT && !in_step_key_is(by->e[e].key, g, -1)) g++;
            while (g < GROUP_COUNT && k < HW_P2P && !in_step_key_is(by->e[e].key, g, k)) k++;
            if (g == GROUP_COUNT || k == HW_P2P)
                fail(c, by->e[e].line, "%s: unknown key '%s': expected GROUP_KIND, GROUP one of tp, dp, pp, world and KIND one "
                     "of all_reduce, all_gather, reduce_scatter (for example tp_all_reduce)", w, by->e[e].key);
            if (l->in_step_by[g][k].n) fail(c, by->e[e].line, "%s: '%s' listed twice", w, by->e[e].key);
            parse_in_step(c, &l->in_step_by[g][k], by, bl, w, by->e[e].key, 0, HW_IN_STEP_MIN, HW_IN_STEP_MAX);
        }
    }
    for (int k = 0; k < HW_COLL_COUNT; k++) {
        const YamlNode *v = lookup(map, coll_names[k]);
        int vl = key_line(map, coll_names[k], line);
        char w[96];
        snprintf(w, sizeof w, "%s.%s", where, coll_names[k]);
        parse_cost(c, &l->coll[k], v, vl, w);
    }
    const YamlNode *ord = lookup(map, "ordered");
    if (ord) {
        static const char *const ord_keys[] = { "all_reduce", "reduce_scatter", NULL };
        int ol = key_line(map, "ordered", line);
        char w[96];
        snprintf(w, sizeof w, "%.80s.ordered", where);
        if (inter) fail(c, ol, "%s: only links.intra_node has it", w);
        expect_map(c, ord, ol, w);
        check_keys(c, ord, ol, w, ord_keys, NULL);
        if (!ord->n) fail(c, ol, "%s: expected all_reduce and/or reduce_scatter, each {base_s, hop_s, busbw}", w);
        for (int k = 0; k < HW_COLL_COUNT; k++) {
            const YamlNode *v = lookup(ord, coll_names[k]);
            if (!v) continue;
            char wk[128];
            snprintf(wk, sizeof wk, "%s.%s", w, coll_names[k]);
            parse_cost(c, &l->ordered[k], v, key_line(ord, coll_names[k], ol), wk);
            l->has_ordered[k] = 1;
        }
    }
    const YamlNode *ll = lookup(map, "ll");
    if (ll) {
        int vl = key_line(map, "ll", line);
        char w[96];
        snprintf(w, sizeof w, "%s.ll", where);
        expect_map(c, ll, vl, w);
        check_keys(c, ll, vl, w, ll_keys, ll_keys);
        l->ll_base_s = num_key(c, ll, vl, w, "base_s", 0, 0, 10);
        l->ll_hop_s = num_key(c, ll, vl, w, "hop_s", 0, 0, 10);
        l->ll_bw_fraction = num_key(c, ll, vl, w, "bw_fraction", 0, 1, 1);
        l->has_ll = 1;
    }
    l->present = 1;
}

static void parse_root(Ctx *c, HwProfile *p, const YamlNode *root) {
    static const char *const keys[] = { "profile_version", "name", "description", "device", "ranks_per_node",
        "memory_bytes", "memory_bandwidth", "memory_efficiency", "host_bandwidth", "op_overhead_s", "launch_s", "launch_python_s",
        "clock", "sm_count", "peak_flops", "gemm", "attention", "all_reduce_algorithm", "links", "rank_share", "op_rates",
        NULL };
    static const char *const required[] = { "profile_version", "name", "description", "device", "ranks_per_node",
        "memory_bytes", "memory_bandwidth", "memory_efficiency", "host_bandwidth", "op_overhead_s", "sm_count",
        "peak_flops", "gemm", "attention", "all_reduce_algorithm", "links", NULL };
    static const char *const algos[] = { "ring", "tree", "auto", NULL };
    expect_map(c, root, 1, "the top level");
    check_keys(c, root, 1, "the top level", keys, required);
    int v = int_key(c, root, 1, "", "profile_version", 1, 1 << 30);
    if (v != HW_PROFILE_VERSION)
        fail(c, key_line(root, "profile_version", 1), "profile_version %d: this engine reads version %d", v, HW_PROFILE_VERSION);
    str_key(c, root, 1, "name", p->name, sizeof p->name, 1);
    // the name must be the file stem, so that --hardware NAME finds this file
    const char *base = strrchr(p->path, '/');
    base = base ? base + 1 : p->path;
    size_t stem = strlen(base);
    if (stem > 5 && !strcmp(base + stem - 5, ".yaml")) stem -= 5;
    if (strlen(p->name) != stem || strncmp(p->name, base, stem))
        fail(c, key_line(root, "name", 1), "name '%s' must equal the file stem '%.*s'", p->name, (int)stem, base);
    str_key(c, root, 1, "description", p->description, sizeof p->description, 1);
    str_key(c, root, 1, "device", p->device, sizeof p->device, 1);
    p->ranks_per_node = int_key(c, root, 1, "", "ranks_per_node", 1, 1 << 20);
    p->memory_bytes = num_key(c, root, 1, "", "memory_bytes", 0, 1, 1e18);
    p->memory_bandwidth = num_key(c, root, 1, "", "memory_bandwidth", 0, 1, 1e16);
    p->memory_efficiency = num_key(c, root, 1, "", "memory_efficiency", 0, 1, 1);
    p->host_bandwidth = num_key(c, root, 1, "", "host_bandwidth", 0, 1, 1e16);
    p->op_overhead_s = num_key(c, root, 1, "", "op_overhead_s", 0, 0, 1);
    if (lookup(root, "launch_s")) p->launch_s = num_key(c, root, 1, "", "launch_s", 0, 0, 1);
    p->launch_python_s = p->launch_s;
    if (lookup(root, "launch_python_s")) {
        p->launch_python_s = num_key(c, root, 1, "", "launch_python_s", 0, 0, 1);
        if (p->launch_python_s < p->launch_s)
            fail(c, key_line(root, "launch_python_s", 1), "launch_python_s %g: expected at least launch_s %g (Python "
                 "issues the same kernels through more host code)", p->launch_python_s, p->launch_s);
    }
    const YamlNode *clock = lookup(root, "clock");
    if (clock) {
        static const char *const clock_keys[] = { "boost_mhz", "sustained_mhz", NULL };
        int cl = key_line(root, "clock", 1);
        expect_map(c, clock, cl, "clock");
        check_keys(c, clock, cl, "clock", clock_keys, clock_keys);
        p->clock_boost_mhz = num_key(c, clock, cl, "clock", "boost_mhz", 0, 1, 1e5);
        p->clock_sustained_mhz = num_key(c, clock, cl, "clock", "sustained_mhz", 0, 1, 1e5);
        if (p->clock_sustained_mhz > p->clock_boost_mhz)
            fail(c, key_line(clock, "sustained_mhz", cl), "clock.sustained_mhz %g: expected at most clock.boost_mhz %g "
                 "(the clock a step sustains under the power limit)", p->clock_sustained_mhz, p->clock_boost_mhz);
    }
    p->sm_count = int_key(c, root, 1, "", "sm_count", 0, 1 << 20);
    p->all_reduce_algorithm = (AllReduceAlgo)enum_key(c, root, 1, "all_reduce_algorithm", "all_reduce_algorithm", algos);
    const YamlNode *share = lookup(root, "rank_share");
    if (share) {
        int sl = key_line(root, "rank_share", 1);
        if (!is_map(share)) fail(c, sl, "rank_share: expected a mapping {rank count: fraction}, got %s", kind_of(share));
        p->rank_share.n = parse_count_table(c, share, sl, "rank_share", 1, 16, p->rank_share.at, p->rank_share.v);
    }

    each_precision(c, p, lookup(root, "peak_flops"), key_line(root, "peak_flops", 1), "peak_flops", parse_peak);
    each_precision(c, p, lookup(root, "gemm"), key_line(root, "gemm", 1), "gemm", parse_gemm);
    each_precision(c, p, lookup(root, "attention"), key_line(root, "attention", 1), "attention", parse_attention);
    if (lookup(root, "op_rates"))
        each_precision(c, p, lookup(root, "op_rates"), key_line(root, "op_rates", 1), "op_rates", parse_op_rates);

    const YamlNode *links = lookup(root, "links");
    int ll = key_line(root, "links", 1);
    expect_map(c, links, ll, "links");
    check_keys(c, links, ll, "links", link_names, NULL);
    for (int k = 0; k < HW_LINK_COUNT; k++) {
        const YamlNode *v = lookup(links, link_names[k]);
        if (v) {
            char w[64];
            snprintf(w, sizeof w, "links.%s", link_names[k]);
            parse_link(c, &p->link[k], v, key_line(links, link_names[k], ll), w, k == HW_INTER);
        }
    }
    if (p->ranks_per_node > 1 && !p->link[HW_INTRA].present)
        fail(c, ll, "links: ranks_per_node is %d, so links.intra_node is required", p->ranks_per_node);
    if (p->ranks_per_node == 1 && p->link[HW_INTRA].present)
        fail(c, key_line(links, "intra_node", ll), "links.intra_node: ranks_per_node is 1, a node has no intra-node link");
}

#define HW_MAX_BYTES (1 << 20)   // a profile file (cpu-local's GEMM table is a few kB)

static const YamlKind PROFILE_YAML = { "hardware profile", "write the values out" };

int hw_load(const char *path, HwProfile *p, char *err, size_t err_len) {
    memset(p, 0, sizeof *p);
    if (strlen(path) >= sizeof p->path) {
        snprintf(err, err_len, "hardware profile path of %zu bytes ('%.60s...'): at most %zu", strlen(path), path, sizeof p->path - 1);
        return -1;
    }
    snprintf(p->path, sizeof p->path, "%s", path);
    Ctx c = { .file = path, .err = err, .err_len = err_len };
    char *buf = NULL;
    size_t len = 0;
    // a regular file of bounded size (as a manifest): a FIFO or /dev/zero is refused at once
    if (file_read_regular(path, HW_MAX_BYTES, "hardware profile", &buf, &len, err, err_len) != 0) return 1;
    YamlArena arena = {0};
    YamlError ye;
    const YamlNode *root = yaml_parse(&arena, path, &PROFILE_YAML, buf, len, &ye);
    free(buf);
    if (setjmp(c.jb)) {
        yaml_arena_free(&arena);
        hw_free(p);
        return 1;
    }
    if (!root && ye.msg[0]) {
        snprintf(err, err_len, "%s", ye.msg);
        longjmp(c.jb, 1);
    }
    if (!root) fail(&c, 1, "the profile is empty: no YAML document in it");
    parse_root(&c, p, root);
    yaml_arena_free(&arena);
    return 0;
}

void hw_load_or_die(const char *name_or_path, const char *dir, HwProfile *p) {
    char path[1024], err[1024];
    size_t n = strlen(name_or_path);
    int is_path = strchr(name_or_path, '/') || (n > 5 && !strcmp(name_or_path + n - 5, ".yaml"));
    if (is_path) xsnprintf(path, sizeof path, "%s", name_or_path);
    else xsnprintf(path, sizeof path, "%s/%s.yaml", dir, name_or_path);
    if (hw_load(path, p, err, sizeof err))
        die_input_hint("the hardware profiles are experiments/hardware/*.yaml (docs/performance-model.md)", "%s", err);
}

void hw_free(HwProfile *p) {
    for (int i = 0; i < SP_COUNT; i++) {
        HwGemm *g = &p->gemm[i];
        free(g->Ms); free(g->Ns); free(g->Ks); free(g->rate);
        g->Ms = g->Ns = g->Ks = NULL;
        g->rate = NULL;
    }
}

double hw_memory_rate(const HwProfile *p) { return p->memory_bandwidth * p->memory_efficiency; }

double hw_clock_factor(const HwProfile *p) {
    return p->clock_sustained_mhz > 0 ? p->clock_boost_mhz / p->clock_sustained_mhz : 1.0;
}

int hw_check_precision(const HwProfile *p, SimPrecision prec, char *why, size_t n) {
    const char *pn = sim_precision_name(prec);
    if (!(p->peak_flops[prec] > 0)) { snprintf(why, n, "profile %s has no peak_flops.%s", p->name, pn); return 1; }
    if (!p->gemm[prec].present) { snprintf(why, n, "profile %s has no gemm.%s model", p->name, pn); return 1; }
    if (!p->attention[prec].present) { snprintf(why, n, "profile %s has no attention.%s efficiency", p->name, pn); return 1; }
    return 0;
}
