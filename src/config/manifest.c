// manifest.c — YAML files -> a small tree with file/line on every node (the YAML walker
// shared with hardware profiles, core/yaml_walk.h) ->
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
#include "manifest.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/check.h"
#include "../core/fileio.h"
#include "../core/utf8.h"
#include "../core/yaml_walk.h"

// ---------------------------------------------------------------------------------
// Files: the shared YAML walker (core/yaml_walk.h) builds the tree
// ---------------------------------------------------------------------------------

#define MANIFEST_MAX_BYTES (1 << 20)   // a manifest file

static int name_char_ok(char ch);
static void check_name_chars(const char *name, const char *file, int line, const char *what, const char *rule,
                             const char *hint);

static const YamlKind MANIFEST_YAML = { "manifest", "write the values out, or use extends: for shared settings" };

// Parse a file into a tree. The file's bytes are hashed into sha_out.
static YamlNode *parse_file(YamlArena *a, const char *path, char sha_out[65]) {
    // a regular file of bounded size, refused at once otherwise (/dev/zero, a FIFO, a
    // terminal on /dev/stdin would be read without end or block)
    char *buf, err[1300];
    size_t len;
    if (file_read_regular(path, MANIFEST_MAX_BYTES, "manifest", &buf, &len, err, sizeof err) != 0)
        die_input("%s", err);
    sha256_hex(buf, len, sha_out);
    YamlError ye;
    YamlNode *root = yaml_parse(a, path, &MANIFEST_YAML, buf, len, &ye);
    free(buf);
    if (!root && ye.msg[0]) {
        if (ye.hint) die_input_hint(ye.hint, "%s", ye.msg);
        die_input("%s", ye.msg);
    }
    if (!root)
        die_input_hint("a manifest sets at least one key (docs/configuration.md); `{}` asks for all the defaults",
                       "%s is empty: no YAML document in it", path);
    if (root->kind != YAML_MAP)
        die_input("%s:%d: expected a mapping at the top level (model:, data:, train:, ...), got %s", path, root->line,
                  yaml_kind_name(root));
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

typedef struct {
    char name[256];
    YamlNode *override;  // mapping of (dotted or nested) keys; NULL = none
    const char *file;    // a named variant: its file and the line of its name (0: a grid's)
    int line;
} VariantSpec;

// The layer being applied, for messages: variant i of the file's n (NULL: a file's own keys).
typedef struct { const VariantSpec *all; int n, i; } VariantAt;

// "FILE:LINE: variant 'b'". A key written above the variant's own name came into it from
// elsewhere (a merge key <<: *a or an alias *a: the anchor is always above): it is named where
// it is written, "variant 'a' (merged into variant 'b')", so the message points at the variant
// that holds it, not at the one that takes it.
static void where_of(char *buf, size_t n, const char *file, int line, const VariantAt *va) {
    if (!va) { snprintf(buf, n, "%s:%d", file, line); return; }
    const VariantSpec *me = &va->all[va->i];
    if (!me->line || strcmp(me->file, file) || line >= me->line) { snprintf(buf, n, "%s:%d: variant '%s'", file, line, me->name); return; }
    const char *owner = NULL;   // the named variant whose mapping holds the line (variants are in file order)
    for (int j = 0; j < va->i; j++)
        if (va->all[j].line && va->all[j].line <= line && !strcmp(va->all[j].file, file)) owner = va->all[j].name;
    if (owner) snprintf(buf, n, "%s:%d: variant '%s' (merged into variant '%s')", file, line, owner, me->name);
    else snprintf(buf, n, "%s:%d (merged into variant '%s')", file, line, me->name);
}

// Where each key of one layer (a file's mapping, a variant's overrides) was given: a key is
// given once per layer, in whatever spelling (train.lr dotted, train: {lr: } nested, or
// through a merge key), never twice with one of them silently winning.
typedef struct { const char *file; int line; char spelling[160]; } KeySeen;

static void note_key(KeySeen *seen, int idx, const char *full, const char *path, const YamlEntry *e, const VariantAt *variant) {
    KeySeen *s = &seen[idx];
    char spelling[160];
    if (path[0]) snprintf(spelling, sizeof spelling, "%s: {%s: ...}", path, e->key);
    else snprintf(spelling, sizeof spelling, "%s: ...", e->key);
    if (s->file) {
        char where[1400];
        where_of(where, sizeof where, e->val->file, e->line, variant);
        die_input_hint("keep one of them (a variant or a file that extends this one may set it again)",
                       "%s: %s is given twice in one mapping: as '%s' at line %d%s%s and as '%s' at line %d; "
                       "a key is set once per file (or variant)", where, full, s->spelling, s->line,
                       strcmp(s->file, e->val->file) ? " of " : "", strcmp(s->file, e->val->file) ? s->file : "",
                       spelling, e->line);
    }
    s->file = e->val->file;
    s->line = e->line;
    memcpy(s->spelling, spelling, sizeof spelling);
}

// Walk a mapping; `path` is the dotted prefix ("" at the top). pass 0: validate all
// names, note where each key is given and apply CKF_FIRST keys; pass 1: apply the other keys.
static void apply_map(Config *c, const YamlNode *map, const char *path, int pass, int allow_meta, const VariantAt *variant,
                      KeySeen *seen) {
    int nk;
    const ConfigKey *schema = config_schema(&nk);
    for (int i = 0; i < map->n; i++) {
        const YamlEntry *e = &map->e[i];
        char full[512], where[1400];
        if (path[0]) snprintf(full, sizeof full, "%s.%s", path, e->key);
        else snprintf(full, sizeof full, "%s", e->key);
        if (!path[0] && is_meta(e->key)) {
            if (allow_meta) continue;
            // a manifest's own key inside a variant: the suggestion would be itself
            where_of(where, sizeof where, e->val->file, e->line, variant);
            die_input_hint("set it at the top of the manifest; a variant sets configuration keys (model.*, data.*, train.*, "
                           "parallel.*, boost.*, run.*)",
                           "%s: '%s' is a key of the manifest itself, not one a variant can set", where, e->key);
        }
        int idx = config_key_index(full);
        const YamlNode *v = e->val;
        if (idx >= 0) {
            int first = (schema[idx].flags & CKF_FIRST) != 0;
            if (v->kind == YAML_MAP || v->kind == YAML_SEQ) {
                char want[512];
                where_of(where, sizeof where, v->file, e->line, variant);
                config_describe_key(&schema[idx], want, sizeof want);
                die_input("%s: %s: expected %s, got %s", where, full, want, yaml_kind_name(v));
            }
            if (pass == 0) note_key(seen, idx, full, path, e, variant);
            if (pass == (first ? 0 : 1)) {
                where_of(where, sizeof where, v->file, v->kind == YAML_SCALAR ? v->line : e->line, variant);
                config_set_key(c, full, v->text, v->kind == YAML_NULL ? YS_NULL : v->type, where);
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
        if (v->kind == YAML_NULL) continue;
        if (v->kind != YAML_MAP)
            die_input("%s: '%s' must be a mapping of keys (%s.KEY: value), got %s%s%s%s", where, full, full, yaml_kind_name(v),
                      v->text ? " '" : "", v->text ? v->text : "", v->text ? "'" : "");
        apply_map(c, v, full, pass, 0, variant, seen);
    }
}

static void apply_layer(Config *c, const YamlNode *root, int allow_meta, const VariantAt *variant) {
    KeySeen seen[CONFIG_MAX_KEYS];
    memset(seen, 0, sizeof seen);
    apply_map(c, root, "", 0, allow_meta, variant, seen);
    apply_map(c, root, "", 1, allow_meta, variant, seen);
}

// ---------------------------------------------------------------------------------
// Files, meta keys and extends
// ---------------------------------------------------------------------------------

#define MAX_CHAIN 32
typedef struct {
    YamlArena arena;
    int n;                          // files in the chain: [0] = the file, [n-1] = farthest parent
    YamlNode *root[MAX_CHAIN];
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

static const YamlNode *meta_scalar(const YamlNode *root, const char *key, const char *file, int *line_out) {
    const YamlEntry *e = yaml_map_find(root, key);
    if (!e) return NULL;
    if (line_out) *line_out = e->line;
    if (e->val->kind != YAML_SCALAR)
        die_input("%s:%d: %s: expected a single value (string or number), got %s", file, e->line, key, yaml_kind_name(e->val));
    return e->val;
}

// Checks of one file's own meta keys (manifest_version, name, version, description).
static void check_meta(const YamlNode *root, const char *file) {
    int line = 0;
    const YamlNode *v = meta_scalar(root, "manifest_version", file, &line);
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
        check_name_chars(v->text, file, line, "name", "an experiment name (it names folders and is printed in commands) "
                         "has only letters, digits and ._-+=,@%:", "rename the file (and its name:) with letters, digits and ._-+=,@%:, the first not '.'");
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
    const YamlEntry *ve = yaml_map_find(root, "variants");
    if (ve && ve->val->kind != YAML_MAP && ve->val->kind != YAML_NULL)
        die_input("%s:%d: variants: expected a mapping (NAME: {overrides}) or grid: {KEY: [values]}, got %s", file,
                  ve->line, yaml_kind_name(ve->val));
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
static const char *resolve_extends(YamlArena *a, const char *file, int line, const char *p) {
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
            if (is_file(c)) return yaml_strdup(a, c);
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
        ch->path[i] = yaml_strdup(&ch->arena, cur);
        ch->root[i] = parse_file(&ch->arena, cur, ch->sha[i]);   // first: it refuses what is not a regular file
        char real[PATH_MAX];
        if (!realpath(cur, real)) snprintf(real, sizeof real, "%s", cur);
        ch->real[i] = yaml_strdup(&ch->arena, real);
        check_meta(ch->root[i], ch->path[i]);
        const YamlEntry *ext = yaml_map_find(ch->root[i], "extends");
        if (!ext) break;
        if (ext->val->kind != YAML_SCALAR || !ext->val->text[0])
            die_input("%s:%d: extends: expected the path of another manifest, got %s", ch->path[i], ext->line,
                      yaml_kind_name(ext->val));
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
static const YamlEntry *chain_find(const Chain *ch, const char *key, const char **file) {
    for (int i = 0; i < ch->n; i++) {
        const YamlEntry *e = yaml_map_find(ch->root[i], key);
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

#define MAX_VARIANTS 4096
// A variant name goes into Config.variant (the run's uid, the run database): at most
// sizeof(Config.variant) - 1 characters, checked here where the file and line are known.
#define VARIANT_NAME_MAX ((int)sizeof(((Config *)0)->variant) - 1)

static int name_char_ok(char ch) {
    return isalnum((unsigned char)ch) || (ch && strchr("._-+=,@%:", ch));
}

// A name of letters, digits and ._-+=,@%: (it names folders and is printed in commands), or
// a refusal that shows the name printably and its first other character whole, with its
// code point ('é' (U+00E9), never one byte of it).
static void check_name_chars(const char *name, const char *file, int line, const char *what, const char *rule,
                             const char *hint) {
    // a leading dot: '.', '..' and hidden names are no folder of their own (a run uid begins with the name)
    if (name[0] == '.') {
        char shown[600];
        utf8_printable(name, shown, sizeof shown);
        die_input_hint(hint, "%s:%d: %s '%s' begins with '.' (a hidden folder, or '.' or '..'); %s, the first not '.'",
                       file, line, what, shown, rule);   // (hint may be NULL)
    }
    for (const char *p = name; *p; p++) {
        if (name_char_ok(*p)) continue;
        char shown[600], ch[64];
        utf8_printable(name, shown, sizeof shown);
        utf8_describe_char(p, ch, sizeof ch);
        if (hint) die_input_hint(hint, "%s:%d: %s '%s' holds %s; %s", file, line, what, shown, ch, rule);
        die_input("%s:%d: %s '%s' holds %s; %s", file, line, what, shown, ch, rule);
    }
}

static void sanitize(char *s) {
    for (; *s; s++)
        if (!name_char_ok(*s)) *s = '_';
}

static VariantSpec *expand_variants(Chain *ch, int *n_out) {
    const char *file = ch->path[0];
    const YamlEntry *ve = chain_find(ch, "variants", &file);
    VariantSpec *vs;
    if (!ve || ve->val->kind == YAML_NULL || ve->val->n == 0) {
        vs = xcalloc(1, sizeof *vs);
        snprintf(vs[0].name, sizeof vs[0].name, "default");
        *n_out = 1;
        return vs;
    }
    const YamlNode *v = ve->val;
    const YamlEntry *grid = yaml_map_find(v, "grid");
    if (grid) {
        if (v->n != 1)
            die_input("%s:%d: variants: use either named variants or grid, not both", file, grid->line);
        const YamlNode *g = grid->val;
        if (g->kind != YAML_MAP || g->n == 0)
            die_input("%s:%d: variants.grid: expected a mapping KEY: [values, ...], got %s", file, grid->line, yaml_kind_name(g));
        long total = 1;
        for (int i = 0; i < g->n; i++) {
            const YamlEntry *e = &g->e[i];
            char where[1200];
            snprintf(where, sizeof where, "%s:%d: variants.grid", file, e->line);
            if (config_key_index(e->key) < 0) config_die_unknown_key(where, e->key, NULL);
            if (e->val->kind != YAML_SEQ || e->val->n == 0)
                die_input("%s: %s: expected a non-empty list of values, e.g. [1, 2], got %s", where, e->key,
                          yaml_kind_name(e->val));
            for (int j = 0; j < e->val->n; j++)
                if (e->val->e[j].val->kind != YAML_SCALAR)
                    die_input("%s:%d: variants.grid: %s: list items must be single values, got %s", file,
                              e->val->e[j].val->line, e->key, yaml_kind_name(e->val->e[j].val));
            total *= e->val->n;
            if (total > MAX_VARIANTS)
                die_input("%s:%d: variants.grid: more than %d combinations", file, grid->line, MAX_VARIANTS);
        }
        vs = xcalloc((size_t)total, sizeof *vs);
        YamlArena *a = &ch->arena;  // nodes of generated overrides live in the chain's arena
        for (long t = 0; t < total; t++) {
            long rem = t;
            int idx[64];
            // first key varies slowest
            for (int i = g->n - 1; i >= 0; i--) {
                idx[i] = (int)(rem % g->e[i].val->n);
                rem /= g->e[i].val->n;
            }
            YamlNode *ov = yaml_alloc(a, sizeof *ov);
            ov->kind = YAML_MAP;
            ov->file = file;
            ov->line = grid->line;
            char name[1024] = "";
            size_t used = 0;
            for (int i = 0; i < g->n; i++) {
                const YamlEntry *e = &g->e[i];
                const YamlNode *item = e->val->e[idx[i]].val;
                yaml_push(a, ov, e->key, item->line, (YamlNode *)item);
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
            const YamlEntry *e = &v->e[i];
            if (!e->key[0] || strlen(e->key) > VARIANT_NAME_MAX)
                die_input("%s:%d: variants: a variant name must have 1 to %d characters (this one has %zu)", file, e->line,
                          VARIANT_NAME_MAX, strlen(e->key));
            check_name_chars(e->key, file, e->line, "variants: name", "use letters, digits and ._-+=,@%:", NULL);
            if (e->val->kind != YAML_MAP && e->val->kind != YAML_NULL)
                die_input("%s:%d: variant '%s': expected a mapping of overrides (KEY: value), got %s", file, e->line,
                          e->key, yaml_kind_name(e->val));
            snprintf(vs[i].name, sizeof vs[i].name, "%s", e->key);
            vs[i].override = e->val->kind == YAML_MAP ? e->val : NULL;
            vs[i].file = file;
            vs[i].line = e->line;
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
            VariantAt at = { vs, nv, i };
            apply_layer(&scratch, vs[i].override, 0, &at);
        }
    free(vs);
    xsnprintf(c->source_path, sizeof c->source_path, "%s", path);
    yaml_arena_free(&ch.arena);
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
    const YamlEntry *e = yaml_map_find(ch.root[0], "name");
    if (e) xsnprintf(m->name, sizeof m->name, "%s", e->val->text);
    else path_stem(path, m->name, sizeof m->name);
    e = yaml_map_find(ch.root[0], "version");
    if (e) xsnprintf(m->version, sizeof m->version, "%s", e->val->text);
    e = chain_find(&ch, "description", NULL);
    if (e) snprintf(m->description, sizeof m->description, "%s", e->val->text);
    e = yaml_map_find(ch.root[0], "manifest_version");
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
        VariantAt at = { vs, nv, i };
        if (vs[i].override) apply_layer(c, vs[i].override, 0, &at);
        xsnprintf(c->source_path, sizeof c->source_path, "%s", path);
        xsnprintf(c->variant, sizeof c->variant, "%s", vs[i].name);
        for (int k = 0; k < n_overrides; k++) config_set_override(c, overrides[k]);
        config_finalize(c);
    }
    free(vs);
    yaml_arena_free(&ch.arena);
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
