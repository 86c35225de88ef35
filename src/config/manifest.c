// manifest.c — YAML files (libfyaml) -> a small tree with file/line on every node ->
// validated application onto a Config through the schema (config.c). Manifests add
// `extends` (a chain of files, applied parent first), `variants` (named or grid) and
// meta keys. config_load_file() is the same machinery for one Config.
//
// Layering: defaults <- farthest parent <- ... <- the file <- variant <- --set.
// Within one layer `model.preset` is applied first, then every other key in file order;
// a later layer overrides an earlier one key by key. For plain keys this is exactly a
// deep merge of the files (child keys override parent keys, mappings merge recursively);
// for model.preset it means a preset set in a later layer replaces the shape keys of
// earlier layers, while keys next to it in its own layer override the preset.
#include "yaml_diag.h"
#include "manifest.h"

#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/check.h"
#include "../core/fileio.h"

// ---------------------------------------------------------------------------------
// Arena: every node and string of one load lives here; freed in one go.
// ---------------------------------------------------------------------------------

typedef struct Block { struct Block *next; } Block;
typedef struct {
    Block *blocks;
} Arena;

static void *aalloc(Arena *a, size_t n) {
    Block *b = xcalloc(1, sizeof(Block) + n + 16);
    b->next = a->blocks;
    a->blocks = b;
    return (char *)b + sizeof(Block) + (16 - sizeof(Block) % 16) % 16;
}
static char *astrndup(Arena *a, const char *s, size_t n) {
    char *p = aalloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
static char *astrdup(Arena *a, const char *s) { return astrndup(a, s, strlen(s)); }
static void afree(Arena *a) {
    for (Block *b = a->blocks, *nx; b; b = nx) { nx = b->next; free(b); }
    a->blocks = NULL;
}

// ---------------------------------------------------------------------------------
// Tree
// ---------------------------------------------------------------------------------

enum { YN_NULL, YN_SCALAR, YN_MAP, YN_SEQ };
typedef struct YNode YNode;
typedef struct {
    const char *key;  // map entries; NULL for sequence items
    int line;         // line of the key (1-based)
    YNode *val;
} YEntry;
struct YNode {
    int kind;
    const char *text;     // YN_SCALAR
    const char *file;
    int line;             // 1-based
    int n, cap;
    YEntry *e;
};

static const char *kind_name(const YNode *y) {
    switch (y->kind) {
    case YN_MAP: return "a mapping";
    case YN_SEQ: return "a list";
    case YN_NULL: return "an empty value";
    default: return "a scalar";
    }
}

static void push_entry(Arena *a, YNode *y, const char *key, int line, YNode *val) {
    if (y->n == y->cap) {
        int nc = y->cap ? y->cap * 2 : 8;
        YEntry *ne = aalloc(a, sizeof(YEntry) * (size_t)nc);
        if (y->n) memcpy(ne, y->e, sizeof(YEntry) * (size_t)y->n);
        y->e = ne;
        y->cap = nc;
    }
    y->e[y->n++] = (YEntry){key, line, val};
}

static const YEntry *map_find(const YNode *y, const char *key) {
    if (!y || y->kind != YN_MAP) return NULL;
    for (int i = 0; i < y->n; i++)
        if (!strcmp(y->e[i].key, key)) return &y->e[i];
    return NULL;
}

static int token_line(struct fy_node *fn) {
    struct fy_token *t = fy_node_get_scalar_token(fn);
    const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
    return m ? m->line + 1 : 0;
}

static int name_char_ok(char ch);

static int is_null_word(const char *s) {
    return !strcmp(s, "") || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

// Bounds on what one file can make us build. Aliases (*name) are expanded here, node by
// node, against MANIFEST_MAX_NODES: a 600-byte "billion laughs" file would otherwise grow
// without bound (libfyaml's own resolution expands it all in memory first).
#define MANIFEST_MAX_BYTES (1 << 20)   // a manifest file
#define MANIFEST_MAX_NODES 100000      // YAML nodes of one file, aliases expanded
#define MANIFEST_MAX_DEPTH 64          // nesting of mappings and lists

typedef struct {
    Arena *a;
    const char *file;
    long nodes;       // built so far
} Build;

static YNode *convert(Build *b, struct fy_node *fn, int line, int depth);

// One node more: dies past the budget or the depth (the message says which and why).
static void count_node(Build *b, int line, int depth) {
    if (++b->nodes > MANIFEST_MAX_NODES)
        die_input_hint("write the values out, or use extends: for shared settings",
                       "%s:%d: the manifest expands to more than %d YAML nodes (aliases *name are expanded; "
                       "an alias that repeats another alias many times grows exponentially)",
                       b->file, line, MANIFEST_MAX_NODES);
    if (depth > MANIFEST_MAX_DEPTH)
        die_input("%s:%d: mappings and lists nested more than %d levels deep", b->file, line, MANIFEST_MAX_DEPTH);
}

static int is_merge_key(struct fy_node *k) {
    size_t n = 0;
    const char *s = fy_node_get_scalar(k, &n);
    return s && n == 2 && !memcmp(s, "<<", 2) && fy_node_get_style(k) == FYNS_PLAIN;
}

// YAML merge keys (`<<: *base` or `<<: [*a, *b]`): the entries of the merged mappings
// that the mapping does not set itself, earlier sources first (YAML 1.1 merge semantics).
static void apply_merge(Build *b, YNode *y, struct fy_node *v, int line, int depth) {
    struct fy_node *one[1] = { v }, **src = one;
    int ns = 1;
    struct fy_node *items[64];
    if (fy_node_is_sequence(v)) {
        void *it = NULL;
        struct fy_node *item;
        ns = 0;
        while ((item = fy_node_sequence_iterate(v, &it)))
            if (ns < 64) items[ns++] = item;
        src = items;
    }
    for (int i = 0; i < ns; i++) {
        YNode *m = convert(b, src[i], line, depth + 1);
        if (m->kind != YN_MAP)
            die_input("%s:%d: a merge key (<<) takes a mapping or a list of mappings, got %s", b->file, line, kind_name(m));
        for (int k = 0; k < m->n; k++)
            if (!map_find(y, m->e[k].key)) push_entry(b->a, y, m->e[k].key, m->e[k].line, m->e[k].val);
    }
}

static YNode *convert(Build *b, struct fy_node *fn, int line, int depth) {
    count_node(b, line, depth);
    if (fn && fy_node_is_alias(fn)) {
        struct fy_node *target = fy_node_resolve_alias(fn);
        int l = token_line(fn);
        if (!target) {
            size_t n = 0;
            const char *s = fy_node_get_scalar(fn, &n);
            die_input("%s:%d: alias *%.*s refers to no anchor (or to itself)", b->file, l ? l : line, (int)n, s ? s : "");
        }
        return convert(b, target, l ? l : line, depth + 1);
    }
    YNode *y = aalloc(b->a, sizeof *y);
    y->file = b->file;
    y->line = line;
    if (!fn || fy_node_is_null(fn)) { y->kind = YN_NULL; return y; }
    if (fy_node_is_scalar(fn)) {
        size_t n = 0;
        const char *s = fy_node_get_scalar(fn, &n);
        int l = token_line(fn);
        if (l) y->line = l;
        // An escaped NUL ("cola\0dense") would cut the value short where C reads it: refused.
        if (s && memchr(s, 0, n))
            die_input("%s:%d: a value holds a NUL character (an escaped \\0 or \\x00): '%.*s...'; values are plain text",
                      b->file, y->line, (int)strnlen(s, n), s);
        y->text = astrndup(b->a, s ? s : "", s ? n : 0);
        y->kind = (fy_node_get_style(fn) == FYNS_PLAIN && is_null_word(y->text)) ? YN_NULL : YN_SCALAR;
        return y;
    }
    if (fy_node_is_sequence(fn)) {
        y->kind = YN_SEQ;
        void *it = NULL;
        struct fy_node *item;
        while ((item = fy_node_sequence_iterate(fn, &it))) {
            YNode *v = convert(b, item, line, depth + 1);
            push_entry(b->a, y, NULL, v->line, v);
        }
        return y;
    }
    y->kind = YN_MAP;
    void *it = NULL;
    struct fy_node_pair *pair;
    struct fy_node *merges[16];
    int merge_lines[16], n_merges = 0;
    while ((pair = fy_node_mapping_iterate(fn, &it))) {
        struct fy_node *k = fy_node_pair_key(pair), *v = fy_node_pair_value(pair);
        int kl = k ? token_line(k) : 0;
        if (!kl) kl = line;
        if (k && fy_node_is_alias(k)) die_input("%s:%d: mapping keys must be plain names (got an alias key)", b->file, kl);
        if (!k || !fy_node_is_scalar(k))
            die_input("%s:%d: mapping keys must be plain names (got a %s key)", b->file, kl,
                      k && fy_node_is_sequence(k) ? "list" : k ? "mapping" : "null");
        if (is_merge_key(k)) {
            if (n_merges == 16) die_input("%s:%d: more than 16 merge keys (<<) in one mapping", b->file, kl);
            merge_lines[n_merges] = kl;
            merges[n_merges++] = v;
            continue;
        }
        size_t n = 0;
        const char *ks = fy_node_get_scalar(k, &n);
        if (ks && memchr(ks, 0, n))
            die_input("%s:%d: a key holds a NUL character (an escaped \\0 or \\x00): '%.*s...'", b->file, kl, (int)strnlen(ks, n), ks);
        const char *key = astrndup(b->a, ks ? ks : "", ks ? n : 0);
        push_entry(b->a, y, key, kl, convert(b, v, kl, depth + 1));
    }
    for (int i = 0; i < n_merges; i++) apply_merge(b, y, merges[i], merge_lines[i], depth);
    return y;
}

// Parse a file into a tree. The file's bytes are hashed into sha_out.
// The first byte that breaks strict UTF-8 (no overlong forms, no surrogates, <= U+10FFFF),
// or -1. YAML text is Unicode; libfyaml 0.8 loops forever on some invalid sequences (a
// directive line "%" followed by bytes such as D3 DF, found by fuzz/fuzz_manifest.c), so
// nothing else reaches it.
static long invalid_utf8(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t k = c < 0x80 ? 0 : (c >= 0xC2 && c <= 0xDF) ? 1 : (c >= 0xE0 && c <= 0xEF) ? 2 : (c >= 0xF0 && c <= 0xF4) ? 3 : 9;
        if (k == 9 || i + k >= n + (k == 0)) return (long)i;
        if (k >= 1) {
            unsigned lo = 0x80, hi = 0xBF;   // the second byte's range excludes overlongs and surrogates
            if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; else if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F;
            if (p[i + 1] < lo || p[i + 1] > hi) return (long)i;
            for (size_t j = 2; j <= k; j++) if ((p[i + j] & 0xC0) != 0x80) return (long)i;
        }
        i += k + 1;
    }
    return -1;
}

static YNode *parse_file(Arena *a, const char *path, char sha_out[65]) {
    // a regular file of bounded size, refused at once otherwise (/dev/zero, a FIFO, a
    // terminal on /dev/stdin would be read without end or block)
    char *buf, err[1300];
    size_t len;
    if (file_read_regular(path, MANIFEST_MAX_BYTES, "manifest", &buf, &len, err, sizeof err) != 0)
        die_input("%s", err);
    sha256_hex(buf, len, sha_out);
    long bad = invalid_utf8((const unsigned char *)buf, len);
    if (bad >= 0) {
        int line = 1, col = 1;
        for (long i = 0; i < bad; i++) { if (buf[i] == '\n') { line++; col = 1; } else col++; }
        die_input("%s:%d: not valid UTF-8 (byte 0x%02x at column %d): a manifest is UTF-8 text", path, line,
                  (unsigned char)buf[bad], col);
    }

    const char *file = astrdup(a, path);
    struct fy_diag *diag = yaml_diag_collecting();
    struct fy_parse_cfg pc = {0};
    pc.flags = FYPCF_QUIET;   // no FYPCF_RESOLVE_DOCUMENT: aliases are expanded by convert(), within a budget
    pc.diag = diag;
    struct fy_document *doc = len ? fy_document_build_from_string(&pc, buf, len) : NULL;
    void *it = NULL;
    struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
    if (e) die_input("%s:%d: YAML syntax error: %s (column %d)", file, e->line > 0 ? e->line : 1,
                     e->msg ? e->msg : "?", e->column);
    if (doc && fy_diag_got_error(diag)) die_input("%s: YAML syntax error", file);
    // no document and no message: nothing but blanks and comments
    struct fy_node *r = doc ? fy_document_root(doc) : NULL;
    if (!r || (fy_node_is_scalar(r) && !fy_node_is_alias(r) && fy_node_get_style(r) == FYNS_PLAIN &&
               is_null_word(fy_node_get_scalar0(r) ? fy_node_get_scalar0(r) : "")))
        die_input_hint("a manifest sets at least one key (docs/configuration.md); `{}` asks for all the defaults",
                       "%s is empty: no YAML document in it", file);
    Build b = { .a = a, .file = file };
    YNode *root = convert(&b, r, 1, 0);
    if (root->kind != YN_MAP)
        die_input("%s:%d: expected a mapping at the top level (model:, data:, train:, ...), got %s", file, root->line,
                  kind_name(root));
    fy_document_destroy(doc);
    fy_diag_destroy(diag);
    free(buf);
    return root;
}

// ---------------------------------------------------------------------------------
// Applying a tree onto a Config
// ---------------------------------------------------------------------------------

static const char *const META_KEYS[] = {"manifest_version", "name", "version", "description", "extends", "variants", NULL};

static int is_meta(const char *k) {
    for (int i = 0; META_KEYS[i]; i++)
        if (!strcmp(k, META_KEYS[i])) return 1;
    return 0;
}

// Section names of the schema plus the meta keys: extra candidates for suggestions.
static const char *const *toplevel_candidates(void) {
    static const char *c[64];
    if (!c[0]) {
        int n = 0, nk;
        const ConfigKey *s = config_schema(&nk);
        for (int i = 0; META_KEYS[i]; i++) c[n++] = META_KEYS[i];
        for (int i = 0; i < nk && n < 63; i++) {
            int seen = 0;
            for (int j = 0; j < n; j++) seen |= !strcmp(c[j], s[i].section);
            if (!seen) c[n++] = s[i].section;
        }
        c[n] = NULL;
    }
    return c;
}

static void where_of(char *buf, size_t n, const char *file, int line, const char *variant) {
    if (variant) snprintf(buf, n, "%s:%d: variant '%s'", file, line, variant);
    else snprintf(buf, n, "%s:%d", file, line);
}

// Walk a mapping; `path` is the dotted prefix ("" at the top). pass 0: validate all
// names and apply CKF_FIRST keys; pass 1: apply the other keys.
static void apply_map(Config *c, const YNode *map, const char *path, int pass, int allow_meta, const char *variant) {
    int nk;
    const ConfigKey *schema = config_schema(&nk);
    for (int i = 0; i < map->n; i++) {
        const YEntry *e = &map->e[i];
        char full[512], where[1400];
        if (path[0]) snprintf(full, sizeof full, "%s.%s", path, e->key);
        else snprintf(full, sizeof full, "%s", e->key);
        if (!path[0] && allow_meta && is_meta(e->key)) continue;
        int idx = config_key_index(full);
        const YNode *v = e->val;
        if (idx >= 0) {
            int first = (schema[idx].flags & CKF_FIRST) != 0;
            if (v->kind == YN_MAP || v->kind == YN_SEQ) {
                char want[512];
                where_of(where, sizeof where, v->file, e->line, variant);
                config_describe_key(&schema[idx], want, sizeof want);
                die_input("%s: %s: expected %s, got %s", where, full, want, kind_name(v));
            }
            if (pass == (first ? 0 : 1)) {
                where_of(where, sizeof where, v->file, v->kind == YN_SCALAR ? v->line : e->line, variant);
                config_set_key(c, full, v->text, v->kind == YN_NULL, where);
            }
            continue;
        }
        // not a key: a section (or a dotted prefix of keys) holding a mapping
        int known_prefix = 0;
        size_t fl = strlen(full);
        for (const char *const *k = config_key_names(); *k; k++)
            if (!strncmp(*k, full, fl) && (*k)[fl] == '.') known_prefix = 1;
        where_of(where, sizeof where, v->file, e->line, variant);
        if (!known_prefix) config_die_unknown_key(where, full, path[0] ? NULL : toplevel_candidates());
        if (v->kind == YN_NULL) continue;
        if (v->kind != YN_MAP)
            die_input("%s: '%s' must be a mapping of keys (%s.KEY: value), got %s%s%s%s", where, full, full, kind_name(v),
                      v->text ? " '" : "", v->text ? v->text : "", v->text ? "'" : "");
        apply_map(c, v, full, pass, 0, variant);
    }
}

static void apply_layer(Config *c, const YNode *root, int allow_meta, const char *variant) {
    apply_map(c, root, "", 0, allow_meta, variant);
    apply_map(c, root, "", 1, allow_meta, variant);
}

// ---------------------------------------------------------------------------------
// Files, meta keys and extends
// ---------------------------------------------------------------------------------

#define MAX_CHAIN 32
typedef struct {
    Arena arena;
    int n;                          // files in the chain: [0] = the file, [n-1] = farthest parent
    YNode *root[MAX_CHAIN];
    const char *path[MAX_CHAIN];    // as displayed in messages
    char *real[MAX_CHAIN];          // realpath, for cycle detection
    char sha[MAX_CHAIN][65];
} Chain;

static const char *path_stem(const char *path, char *buf, size_t n) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(buf, n, "%s", b);
    size_t l = strlen(buf);
    if (l > 5 && !strcmp(buf + l - 5, ".yaml")) buf[l - 5] = 0;
    else if (l > 4 && !strcmp(buf + l - 4, ".yml")) buf[l - 4] = 0;
    return buf;
}

static const YNode *meta_scalar(const YNode *root, const char *key, const char *file, int *line_out) {
    const YEntry *e = map_find(root, key);
    if (!e) return NULL;
    if (line_out) *line_out = e->line;
    if (e->val->kind != YN_SCALAR)
        die_input("%s:%d: %s: expected a single value (string or number), got %s", file, e->line, key, kind_name(e->val));
    return e->val;
}

// Checks of one file's own meta keys (manifest_version, name, version, description).
static void check_meta(const YNode *root, const char *file) {
    int line = 0;
    const YNode *v = meta_scalar(root, "manifest_version", file, &line);
    if (v) {
        char *end;
        errno = 0;
        long mv = strtol(v->text, &end, 10);
        if (!v->text[0] || *end || errno || mv < 1)
            die_input("%s:%d: manifest_version: expected an integer >= 1, got '%s'", file, line, v->text);
        if (mv > MANIFEST_VERSION)
            die_input_hint("or lower manifest_version if the file uses no newer features",
                           "%s:%d: manifest_version %ld is newer than this engine supports (%d); update boost-c", file,
                           line, mv, MANIFEST_VERSION);
    }
    v = meta_scalar(root, "name", file, &line);
    if (v) {
        char stem[256];
        path_stem(file, stem, sizeof stem);
        for (const char *c = v->text; *c; c++)
            if (!name_char_ok(*c))
                die_input_hint("rename the file (and its name:) with letters, digits and ._-+=,@%:",
                               "%s:%d: name '%s' holds '%c'; an experiment name (it names folders and is printed in "
                               "commands) has only letters, digits and ._-+=,@%%:", file, line, v->text, *c);
        if (strlen(v->text) > 127)   // (docs/configuration.md: with a 127-character variant, a run uid still fits a folder name)
            die_input_hint("use a shorter file name", "%s:%d: name '%.40s...' has %zu characters; an experiment name has at most 127",
                           file, line, v->text, strlen(v->text));
        if (strcmp(v->text, stem))
            die_input_hint("rename the file or the name so that they agree",
                           "%s:%d: name '%s' must equal the file name stem '%s'", file, line, v->text, stem);
    }
    v = meta_scalar(root, "version", file, &line);
    if (v && strlen(v->text) >= 128) die_input("%s:%d: version: longer than 127 characters", file, line);
    meta_scalar(root, "description", file, &line);
    const YEntry *ve = map_find(root, "variants");
    if (ve && ve->val->kind != YN_MAP && ve->val->kind != YN_NULL)
        die_input("%s:%d: variants: expected a mapping (NAME: {overrides}) or grid: {KEY: [values]}, got %s", file,
                  ve->line, kind_name(ve->val));
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int has_yaml_suffix(const char *p) {
    size_t l = strlen(p);
    return (l > 5 && !strcmp(p + l - 5, ".yaml")) || (l > 4 && !strcmp(p + l - 4, ".yml"));
}

// Candidates for `extends: p` of `file`: p itself if absolute; next to the file; under
// the nearest ancestor directory called experiments/; under ./experiments/.
static const char *resolve_extends(Arena *a, const char *file, int line, const char *p) {
    char cands[8][PATH_MAX + 8];
    int nc = 0;
    if (p[0] == '/') {
        snprintf(cands[nc++], sizeof cands[0], "%s", p);
    } else {
        const char *slash = strrchr(file, '/');
        if (slash) snprintf(cands[nc++], sizeof cands[0], "%.*s/%s", (int)(slash - file), file, p);
        else snprintf(cands[nc++], sizeof cands[0], "%s", p);
        char real[PATH_MAX];
        if (realpath(file, real)) {
            char *s;
            while ((s = strrchr(real, '/')) && s != real) {
                *s = 0;
                const char *base = strrchr(real, '/');
                if (base && !strcmp(base + 1, "experiments")) {
                    snprintf(cands[nc++], sizeof cands[0], "%s/%s", real, p);
                    break;
                }
            }
        }
        snprintf(cands[nc++], sizeof cands[0], "experiments/%s", p);
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nc; i++) {
            char c[PATH_MAX + 16];
            if (pass == 1 && has_yaml_suffix(p)) continue;
            size_t l = strnlen(cands[i], sizeof cands[0] - 1);
            memcpy(c, cands[i], l);
            c[l] = 0;
            if (pass == 1) strcat(c, ".yaml");
            if (is_file(c)) return astrdup(a, c);
        }
    char looked[4 * PATH_MAX] = "";
    size_t used = 0;
    for (int i = 0; i < nc && used < sizeof looked; i++)
        used += (size_t)snprintf(looked + used, sizeof looked - used, "%s%s", i ? ", " : "", cands[i]);
    die_input("%s:%d: extends: cannot find '%s' (looked for %s)", file, line, p, looked);
}

static void load_chain(Chain *ch, const char *path) {
    memset(ch, 0, sizeof *ch);
    const char *cur = path;
    for (;;) {
        if (ch->n == MAX_CHAIN) die_input("%s: extends chain longer than %d files", path, MAX_CHAIN);
        int i = ch->n++;
        ch->path[i] = astrdup(&ch->arena, cur);
        ch->root[i] = parse_file(&ch->arena, cur, ch->sha[i]);   // first: it refuses what is not a regular file
        char real[PATH_MAX];
        if (!realpath(cur, real)) snprintf(real, sizeof real, "%s", cur);
        ch->real[i] = astrdup(&ch->arena, real);
        check_meta(ch->root[i], ch->path[i]);
        const YEntry *ext = map_find(ch->root[i], "extends");
        if (!ext) break;
        if (ext->val->kind != YN_SCALAR || !ext->val->text[0])
            die_input("%s:%d: extends: expected the path of another manifest, got %s", ch->path[i], ext->line,
                      kind_name(ext->val));
        const char *next = resolve_extends(&ch->arena, ch->path[i], ext->line, ext->val->text);
        char nreal[PATH_MAX];
        if (realpath(next, nreal)) {
            for (int j = 0; j <= i; j++)
                if (!strcmp(ch->real[j], nreal)) {
                    char cyc[8192];
                    size_t used = 0;
                    for (int q = j; q <= i && used < sizeof cyc; q++)
                        used += (size_t)snprintf(cyc + used, sizeof cyc - used, "%s -> ", ch->path[q]);
                    if (used < sizeof cyc) snprintf(cyc + used, sizeof cyc - used, "%s", next);
                    die_input("%s:%d: extends cycle: %s", ch->path[i], ext->line, cyc);
                }
        }
        cur = next;
    }
}

// Layers onto c: farthest parent first.
static void apply_chain(Config *c, const Chain *ch) {
    for (int i = ch->n - 1; i >= 0; i--) apply_layer(c, ch->root[i], 1, NULL);
}

// The nearest file of the chain that has `key` (meta keys inherit through extends).
static const YEntry *chain_find(const Chain *ch, const char *key, const char **file) {
    for (int i = 0; i < ch->n; i++) {
        const YEntry *e = map_find(ch->root[i], key);
        if (e) {
            if (file) *file = ch->path[i];
            return e;
        }
    }
    return NULL;
}

// ---------------------------------------------------------------------------------
// Variants
// ---------------------------------------------------------------------------------

typedef struct {
    char name[256];
    YNode *override;  // mapping of (dotted or nested) keys; NULL = none
} VariantSpec;

#define MAX_VARIANTS 4096
// A variant name goes into Config.variant (the run's uid, the run database): at most
// sizeof(Config.variant) - 1 characters, checked here where the file and line are known.
#define VARIANT_NAME_MAX ((int)sizeof(((Config *)0)->variant) - 1)

static int name_char_ok(char ch) {
    return isalnum((unsigned char)ch) || strchr("._-+=,@%:", ch);
}

static void sanitize(char *s) {
    for (; *s; s++)
        if (!name_char_ok(*s)) *s = '_';
}

static VariantSpec *expand_variants(Chain *ch, int *n_out) {
    const char *file = ch->path[0];
    const YEntry *ve = chain_find(ch, "variants", &file);
    VariantSpec *vs;
    if (!ve || ve->val->kind == YN_NULL || ve->val->n == 0) {
        vs = xcalloc(1, sizeof *vs);
        snprintf(vs[0].name, sizeof vs[0].name, "default");
        *n_out = 1;
        return vs;
    }
    const YNode *v = ve->val;
    const YEntry *grid = map_find(v, "grid");
    if (grid) {
        if (v->n != 1)
            die_input("%s:%d: variants: use either named variants or grid, not both", file, grid->line);
        const YNode *g = grid->val;
        if (g->kind != YN_MAP || g->n == 0)
            die_input("%s:%d: variants.grid: expected a mapping KEY: [values, ...], got %s", file, grid->line, kind_name(g));
        long total = 1;
        for (int i = 0; i < g->n; i++) {
            const YEntry *e = &g->e[i];
            char where[1200];
            snprintf(where, sizeof where, "%s:%d: variants.grid", file, e->line);
            if (config_key_index(e->key) < 0) config_die_unknown_key(where, e->key, NULL);
            if (e->val->kind != YN_SEQ || e->val->n == 0)
                die_input("%s: %s: expected a non-empty list of values, e.g. [1, 2], got %s", where, e->key,
                          kind_name(e->val));
            for (int j = 0; j < e->val->n; j++)
                if (e->val->e[j].val->kind != YN_SCALAR)
                    die_input("%s:%d: variants.grid: %s: list items must be single values, got %s", file,
                              e->val->e[j].val->line, e->key, kind_name(e->val->e[j].val));
            total *= e->val->n;
            if (total > MAX_VARIANTS)
                die_input("%s:%d: variants.grid: more than %d combinations", file, grid->line, MAX_VARIANTS);
        }
        vs = xcalloc((size_t)total, sizeof *vs);
        Arena *a = &ch->arena;  // nodes of generated overrides live in the chain's arena
        for (long t = 0; t < total; t++) {
            long rem = t;
            int idx[64];
            // first key varies slowest
            for (int i = g->n - 1; i >= 0; i--) {
                idx[i] = (int)(rem % g->e[i].val->n);
                rem /= g->e[i].val->n;
            }
            YNode *ov = aalloc(a, sizeof *ov);
            ov->kind = YN_MAP;
            ov->file = file;
            ov->line = grid->line;
            char name[1024] = "";
            size_t used = 0;
            for (int i = 0; i < g->n; i++) {
                const YEntry *e = &g->e[i];
                const YNode *item = e->val->e[idx[i]].val;
                push_entry(a, ov, e->key, item->line, (YNode *)item);
                // short name = last component, unless another grid key has the same one
                const char *lf = strrchr(e->key, '.');
                lf = lf ? lf + 1 : e->key;
                for (int j = 0; j < g->n; j++) {
                    const char *lj = strrchr(g->e[j].key, '.');
                    lj = lj ? lj + 1 : g->e[j].key;
                    if (j != i && !strcmp(lj, lf)) lf = e->key;
                }
                char val[256];
                snprintf(val, sizeof val, "%s", item->text);
                sanitize(val);
                used += (size_t)snprintf(name + used, sizeof name - used, "%s%s=%s", i ? "," : "", lf, val);
                if (used >= sizeof name) used = sizeof name - 1;
            }
            if (strlen(name) > VARIANT_NAME_MAX)
                die_input("%s:%d: variants.grid: the generated variant name '%.60s...' is longer than %d characters; "
                          "use shorter values or named variants", file, grid->line, name, VARIANT_NAME_MAX);
            memcpy(vs[t].name, name, strlen(name) + 1);
            vs[t].override = ov;
        }
        *n_out = (int)total;
    } else {
        if (v->n > MAX_VARIANTS) die_input("%s:%d: variants: more than %d", file, ve->line, MAX_VARIANTS);
        vs = xcalloc((size_t)v->n, sizeof *vs);
        for (int i = 0; i < v->n; i++) {
            const YEntry *e = &v->e[i];
            if (!e->key[0] || strlen(e->key) > VARIANT_NAME_MAX)
                die_input("%s:%d: variants: a variant name must have 1 to %d characters (this one has %zu)", file, e->line,
                          VARIANT_NAME_MAX, strlen(e->key));
            for (const char *p = e->key; *p; p++)
                if (!name_char_ok(*p))
                    die_input("%s:%d: variants: name '%s' has the character '%c'; use letters, digits and ._-+=,@%%:",
                              file, e->line, e->key, *p);
            if (e->val->kind != YN_MAP && e->val->kind != YN_NULL)
                die_input("%s:%d: variant '%s': expected a mapping of overrides (KEY: value), got %s", file, e->line,
                          e->key, kind_name(e->val));
            snprintf(vs[i].name, sizeof vs[i].name, "%s", e->key);
            vs[i].override = e->val->kind == YN_MAP ? e->val : NULL;
        }
        *n_out = v->n;
    }
    for (int i = 0; i < *n_out; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(vs[i].name, vs[j].name))
                die_input("%s:%d: variants: two variants are named '%s'", file, ve->line, vs[i].name);
    return vs;
}

// ---------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------

void config_load_file(Config *c, const char *path) {
    Chain ch;
    load_chain(&ch, path);
    apply_chain(c, &ch);
    // validate the variants (names, keys, values) without using them: the whole file is
    // checked even by tools that take only the base configuration
    int nv;
    VariantSpec *vs = expand_variants(&ch, &nv);
    for (int i = 0; i < nv; i++)
        if (vs[i].override) {
            Config scratch = *c;
            apply_layer(&scratch, vs[i].override, 0, vs[i].name);
        }
    free(vs);
    xsnprintf(c->source_path, sizeof c->source_path, "%s", path);
    afree(&ch.arena);
}

Manifest *manifest_load(const char *path) { return manifest_load_with(path, NULL, 0); }

Manifest *manifest_load_with(const char *path, const char *const *overrides, int n_overrides) {
    Chain ch;
    load_chain(&ch, path);
    Manifest *m = xcalloc(1, sizeof *m);
    xsnprintf(m->path, sizeof m->path, "%s", path);
    memcpy(m->sha256, ch.sha[0], 65);
    m->n_sources = ch.n;
    m->sources = xcalloc((size_t)ch.n, sizeof *m->sources);
    for (int i = 0; i < ch.n; i++) {
        xsnprintf(m->sources[i].path, sizeof m->sources[i].path, "%s", ch.path[i]);
        memcpy(m->sources[i].sha256, ch.sha[i], 65);
    }
    // meta: name and version from this file; description inherits; manifest_version of this file
    const YEntry *e = map_find(ch.root[0], "name");
    if (e) xsnprintf(m->name, sizeof m->name, "%s", e->val->text);
    else path_stem(path, m->name, sizeof m->name);
    e = map_find(ch.root[0], "version");
    if (e) xsnprintf(m->version, sizeof m->version, "%s", e->val->text);
    e = chain_find(&ch, "description", NULL);
    if (e) snprintf(m->description, sizeof m->description, "%s", e->val->text);
    e = map_find(ch.root[0], "manifest_version");
    m->manifest_version = e ? atoi(e->val->text) : MANIFEST_VERSION;

    // base layers first on their own: an error there is reported without a variant name
    Config base;
    config_defaults(&base);
    apply_chain(&base, &ch);

    int nv;
    VariantSpec *vs = expand_variants(&ch, &nv);
    m->n_variants = nv;
    m->variants = xcalloc((size_t)nv, sizeof *m->variants);
    for (int i = 0; i < nv; i++) {
        ManifestVariant *v = &m->variants[i];
        snprintf(v->name, sizeof v->name, "%s", vs[i].name);
        Config *c = &v->config;
        *c = base;
        if (vs[i].override) apply_layer(c, vs[i].override, 0, vs[i].name);
        xsnprintf(c->source_path, sizeof c->source_path, "%s", path);
        xsnprintf(c->variant, sizeof c->variant, "%s", vs[i].name);
        for (int k = 0; k < n_overrides; k++) config_set_override(c, overrides[k]);
        config_finalize(c);
    }
    free(vs);
    afree(&ch.arena);
    return m;
}

const ManifestVariant *manifest_variant(const Manifest *m, const char *name) {
    if (!name || !name[0]) {
        if (m->n_variants == 1) return &m->variants[0];
    } else {
        for (int i = 0; i < m->n_variants; i++)
            if (!strcmp(m->variants[i].name, name)) return &m->variants[i];
    }
    char list[4096] = "";
    size_t used = 0;
    for (int i = 0; i < m->n_variants && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", m->variants[i].name);
    if (!name || !name[0])
        die_input_hint(list, "%s has %d variants; choose one (--variant NAME)", m->path, m->n_variants);
    const char **names = xcalloc((size_t)m->n_variants + 1, sizeof *names);
    for (int i = 0; i < m->n_variants; i++) names[i] = m->variants[i].name;
    const char *s = config_suggest(name, names);
    if (s) die_input_hint(list, "%s: no variant '%s'; did you mean '%s'?", m->path, name, s);
    die_input_hint(list, "%s: no variant '%s'", m->path, name);
}

void manifest_free(Manifest *m) {
    if (!m) return;
    free(m->sources);
    free(m->variants);
    free(m);
}
