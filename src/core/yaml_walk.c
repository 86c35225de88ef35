// yaml_walk.c — see yaml_walk.h.
#include "yaml_walk.h"

#include <ctype.h>
#include <libfyaml.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "utf8.h"

// ---- arena --------------------------------------------------------------------------------

struct YamlBlock { struct YamlBlock *next; };

void *yaml_alloc(YamlArena *a, size_t n) {
    YamlBlock *b = xcalloc(1, sizeof(YamlBlock) + n + 16);
    b->next = a->blocks;
    a->blocks = b;
    return (char *)b + sizeof(YamlBlock) + (16 - sizeof(YamlBlock) % 16) % 16;
}
static char *astrndup(YamlArena *a, const char *s, size_t n) {
    char *p = yaml_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
char *yaml_strdup(YamlArena *a, const char *s) { return astrndup(a, s, strlen(s)); }
void yaml_arena_free(YamlArena *a) {
    for (YamlBlock *b = a->blocks, *nx; b; b = nx) { nx = b->next; free(b); }
    a->blocks = NULL;
}

// ---- tree ---------------------------------------------------------------------------------

const char *yaml_kind_name(const YamlNode *y) {
    switch (y ? y->kind : YAML_NULL) {
    case YAML_MAP: return "a mapping";
    case YAML_SEQ: return "a list";
    case YAML_NULL: return "an empty value";
    default: return "a scalar";
    }
}

void yaml_push(YamlArena *a, YamlNode *y, const char *key, int line, YamlNode *val) {
    if (y->n == y->cap) {
        int nc = y->cap ? y->cap * 2 : 8;
        YamlEntry *ne = yaml_alloc(a, sizeof(YamlEntry) * (size_t)nc);
        if (y->n) memcpy(ne, y->e, sizeof(YamlEntry) * (size_t)y->n);
        y->e = ne;
        y->cap = nc;
    }
    y->e[y->n++] = (YamlEntry){key, line, val};
}

const YamlEntry *yaml_map_find(const YamlNode *y, const char *key) {
    if (!y || y->kind != YAML_MAP) return NULL;
    for (int i = 0; i < y->n; i++)
        if (!strcmp(y->e[i].key, key)) return &y->e[i];
    return NULL;
}

// ---- the one scalar rule -------------------------------------------------------------------

static int word_in(const char *s, const char *const *words) {
    for (; *words; words++)
        if (!strcmp(s, *words)) return 1;
    return 0;
}
static int all_of(const char *s, const char *set) { return *s && strspn(s, set) == strlen(s); }

// [-+]? (. digits | digits [. digits?]) ([eE] [-+]? digits)?: YAML 1.2's decimal number.
static int is_decimal(const char *p) {
    if (*p == '+' || *p == '-') p++;
    size_t ip = strspn(p, "0123456789");
    p += ip;
    size_t fp = 0;
    if (*p == '.') { p++; fp = strspn(p, "0123456789"); p += fp; }
    if (!ip && !fp) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return 0;
        p += strspn(p, "0123456789");
    }
    return !*p;
}

// YAML 1.1's base-60 numbers: [-+]? digit [0-9_]* (: [0-5]? digit)+ (and . [0-9_]* for a float).
static int is_sexagesimal(const char *p) {
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return 0;
    int first_nonzero = *p != '0';
    p += strspn(p, "0123456789_");
    int parts = 0;
    while (*p == ':') {
        p++;
        size_t d = strspn(p, "0123456789");
        if (d == 0 || d > 2 || (d == 2 && *p > '5')) return 0;
        p += d;
        parts++;
    }
    if (!parts) return 0;
    if (*p == '.') return all_of(p + 1, "0123456789_") || !p[1];
    return !*p && first_nonzero;
}

YamlScalarType yaml_plain_type(const char *s, char *why, size_t n) {
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE", NULL};
    static const char *const bools11[] = {"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
                                          "y", "Y", "n", "N", NULL};
    static const char *const special[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
                                          ".nan", ".NaN", ".NAN", NULL};
    if (word_in(s, nulls)) return YS_NULL;
    if (word_in(s, bools)) return YS_BOOL;
    if (word_in(s, special)) return YS_FLOAT;
    if (word_in(s, bools11)) {
        snprintf(why, n, "'%s' is a boolean in YAML 1.1 and text in YAML 1.2: write true or false, or quote it ('%s') for text",
                 s, s);
        return YS_BAD;
    }
    size_t len = strlen(s);
    if (len > 200) return YS_STR;   // (no number is this long; the buffers below hold any shorter one)
    const char *p = s + (*s == '+' || *s == '-');
    // digits grouped by '_' (1_000, 0x_ff): a number in YAML 1.1, text in YAML 1.2
    if (strchr(s, '_')) {
        char t[208], w2[8];
        size_t j = 0;
        for (const char *q = s; *q; q++) if (*q != '_') t[j++] = *q;
        t[j] = 0;
        YamlScalarType tt = is_sexagesimal(s) ? YS_BAD : yaml_plain_type(t, w2, sizeof w2);
        if (tt == YS_INT || tt == YS_FLOAT) {
            snprintf(why, n, "'%s' groups digits with '_': a number in YAML 1.1, text in YAML 1.2: write %s for the number, "
                     "or quote it ('%s') for text", s, t, s);
            return YS_BAD;
        }
    }
    if (is_sexagesimal(s)) {
        snprintf(why, n, "'%s' is a base-60 number in YAML 1.1 (1:30 is 90) and text in YAML 1.2: quote it ('%s') for text, "
                 "or write the number in decimal", s, s);
        return YS_BAD;
    }
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'b')) {
        const char *digits = p[1] == 'x' ? "0123456789abcdefABCDEF" : p[1] == 'o' ? "01234567" : "01";
        if (all_of(p + 2, digits)) {
            unsigned long long v = strtoull(p + 2, NULL, p[1] == 'x' ? 16 : p[1] == 'o' ? 8 : 2);
            int overflow = strlen(p + 2) > (p[1] == 'x' ? 16u : p[1] == 'o' ? 21u : 64u);
            char dec[40];
            if (overflow) snprintf(dec, sizeof dec, "it in decimal");
            else snprintf(dec, sizeof dec, "%s%llu", *s == '-' ? "-" : "", v);
            if (p[1] == 'x' && p == s) return YS_INT;   // 0x10: 16 in YAML 1.1 and 1.2
            if (p[1] == 'o' && p != s) return YS_STR;   // +0o10: text in both
            snprintf(why, n, "'%s' is %s: write %s", s,
                     p[1] == 'o' ? "an octal number in YAML 1.2 and text in YAML 1.1"
                     : p[1] == 'b' ? "a binary number in YAML 1.1 and text in YAML 1.2"
                                   : "a number in YAML 1.1 and text in YAML 1.2 (whose hexadecimal numbers have no sign)",
                     dec);
            return YS_BAD;
        }
    }
    if (!is_decimal(s)) return YS_STR;
    if (p[0] == '0' && isdigit((unsigned char)p[1])) {
        // 010: octal 8 in YAML 1.1, 10 in YAML 1.2
        char t[208];
        size_t z = strspn(p, "0");
        const char *rest = isdigit((unsigned char)p[z]) ? p + z : p + z - 1;
        snprintf(t, sizeof t, "%.*s%s", (int)(p - s), s, rest);
        snprintf(why, n, "'%s' has a leading zero, which YAML 1.1 reads as octal (010 is 8) and YAML 1.2 does not: write %s "
                 "for the decimal number, or quote it ('%s') for text", s, t, s);
        return YS_BAD;
    }
    if (strspn(p, "0123456789") == strlen(p)) return YS_INT;
    // a decimal beyond a double: every YAML reader makes it infinite or 0, not what is written
    double d = strtod(s, NULL);
    size_t m = strcspn(p, "eE");
    int nonzero = strcspn(p, "123456789") < m;
    if (isinf(d) || (nonzero && d == 0)) {
        snprintf(why, n, "'%s' is %s a double (YAML readers read it as %s): write a number within about 1e-308 ... 1.8e308",
                 s, isinf(d) ? "too large for" : "too small for", isinf(d) ? "infinite" : "0");
        return YS_BAD;
    }
    return YS_FLOAT;
}

const char *yaml_type_name(YamlScalarType t) {
    switch (t) {
    case YS_NULL: return "an empty value";
    case YS_BOOL: return "a boolean";
    case YS_INT: return "an integer";
    case YS_FLOAT: return "a number";
    case YS_STR: return "text";
    default: return "a refused value";
    }
}

// ---- building the tree from libfyaml's document --------------------------------------------

typedef struct {
    YamlArena *a;
    const char *file;
    const YamlKind *kind;
    long nodes;       // built so far
    YamlError *err;
    jmp_buf jb;
} Build;

__attribute__((noreturn, format(printf, 3, 4)))
static void refuse(Build *b, const char *hint, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err->msg, sizeof b->err->msg, fmt, ap);
    va_end(ap);
    b->err->hint = hint;
    longjmp(b->jb, 1);
}

static int token_line(struct fy_node *fn) {
    struct fy_token *t = fy_node_get_scalar_token(fn);
    const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
    return m ? m->line + 1 : 0;
}

static int is_null_word(const char *s) {
    char why[8];
    return yaml_plain_type(s, why, sizeof why) == YS_NULL;
}

static YamlNode *convert(Build *b, struct fy_node *fn, int line, int depth);

// One node more: refused past the budget or the depth (the message says which and why).
static void count_node(Build *b, int line, int depth) {
    if (++b->nodes > YAML_MAX_NODES)
        refuse(b, b->kind->expand_hint,
               "%s:%d: the %s expands to more than %d YAML nodes (aliases *name are expanded; "
               "an alias that repeats another alias many times grows exponentially)",
               b->file, line, b->kind->noun, YAML_MAX_NODES);
    if (depth > YAML_MAX_DEPTH)
        refuse(b, NULL, "%s:%d: mappings and lists nested more than %d levels deep", b->file, line, YAML_MAX_DEPTH);
}

static int is_merge_key(struct fy_node *k) {
    size_t n = 0;
    const char *s = fy_node_get_scalar(k, &n);
    return s && n == 2 && !memcmp(s, "<<", 2) && fy_node_get_style(k) == FYNS_PLAIN;
}

// YAML merge keys (`<<: *base` or `<<: [*a, *b]`): the entries of the merged mappings
// that the mapping does not set itself, earlier sources first (YAML 1.1 merge semantics).
static void apply_merge(Build *b, YamlNode *y, struct fy_node *v, int line, int depth) {
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
        YamlNode *m = convert(b, src[i], line, depth + 1);
        if (m->kind != YAML_MAP)
            refuse(b, NULL, "%s:%d: a merge key (<<) takes a mapping or a list of mappings, got %s", b->file, line,
                   yaml_kind_name(m));
        for (int k = 0; k < m->n; k++)
            if (!yaml_map_find(y, m->e[k].key)) yaml_push(b->a, y, m->e[k].key, m->e[k].line, m->e[k].val);
    }
}

// A tag (!!int 5, !!str 5, !x) would give a value a type that the one scalar rule does not,
// and readers differ on what each means: refused, naming the key.
static void refuse_tag(Build *b, struct fy_node *fn, int line, const char *key) {
    size_t tl = 0;
    const char *tag = fy_node_get_tag(fn, &tl);
    if (!tag) return;
    size_t n = 0;
    const char *s = fy_node_is_scalar(fn) ? fy_node_get_scalar(fn, &n) : NULL;
    refuse(b, "remove the tag: a plain 5 is a number, a quoted '5' is text, true/false a boolean",
           "%s:%d: %s%s%.*s %.*s: YAML tags are not read (the type of a value is that of its spelling)", b->file, line,
           key ? key : "", key ? ": " : "", (int)tl, tag, (int)(s ? n : 0), s ? s : "");
}

static YamlNode *convert(Build *b, struct fy_node *fn, int line, int depth) {
    count_node(b, line, depth);
    if (fn && fy_node_is_alias(fn)) {
        struct fy_node *target = fy_node_resolve_alias(fn);
        int l = token_line(fn);
        if (!target) {
            size_t n = 0;
            const char *s = fy_node_get_scalar(fn, &n);
            refuse(b, NULL, "%s:%d: alias *%.*s refers to no anchor (or to itself)", b->file, l ? l : line, (int)n, s ? s : "");
        }
        return convert(b, target, l ? l : line, depth + 1);
    }
    if (fn) refuse_tag(b, fn, line, NULL);
    YamlNode *y = yaml_alloc(b->a, sizeof *y);
    y->file = b->file;
    y->line = line;
    if (!fn || fy_node_is_null(fn)) { y->kind = YAML_NULL; return y; }
    if (fy_node_is_scalar(fn)) {
        size_t n = 0;
        const char *s = fy_node_get_scalar(fn, &n);
        int l = token_line(fn);
        if (l) y->line = l;
        // An escaped NUL ("cola\0dense") would cut the value short where C reads it: refused.
        if (s && memchr(s, 0, n))
            refuse(b, NULL, "%s:%d: a value holds a NUL character (an escaped \\0 or \\x00): '%.*s...'; values are plain text",
                   b->file, y->line, (int)strnlen(s, n), s);
        y->text = astrndup(b->a, s ? s : "", s ? n : 0);
        char why[8];
        y->type = fy_node_get_style(fn) == FYNS_PLAIN ? yaml_plain_type(y->text, why, sizeof why) : YS_STR;
        y->kind = y->type == YS_NULL ? YAML_NULL : YAML_SCALAR;
        return y;
    }
    if (fy_node_is_sequence(fn)) {
        y->kind = YAML_SEQ;
        void *it = NULL;
        struct fy_node *item;
        while ((item = fy_node_sequence_iterate(fn, &it))) {
            YamlNode *v = convert(b, item, line, depth + 1);
            yaml_push(b->a, y, NULL, v->line, v);
        }
        return y;
    }
    y->kind = YAML_MAP;
    void *it = NULL;
    struct fy_node_pair *pair;
    struct fy_node *merges[16];
    int merge_lines[16], n_merges = 0;
    while ((pair = fy_node_mapping_iterate(fn, &it))) {
        struct fy_node *k = fy_node_pair_key(pair), *v = fy_node_pair_value(pair);
        int kl = k ? token_line(k) : 0;
        if (!kl) kl = line;
        if (k && fy_node_is_alias(k)) refuse(b, NULL, "%s:%d: mapping keys must be plain names (got an alias key)", b->file, kl);
        if (!k || !fy_node_is_scalar(k))
            refuse(b, NULL, "%s:%d: mapping keys must be plain names (got a %s key)", b->file, kl,
                   k && fy_node_is_sequence(k) ? "list" : k ? "mapping" : "null");
        if (is_merge_key(k)) {
            if (n_merges == 16) refuse(b, NULL, "%s:%d: more than 16 merge keys (<<) in one mapping", b->file, kl);
            merge_lines[n_merges] = kl;
            merges[n_merges++] = v;
            continue;
        }
        size_t n = 0;
        const char *ks = fy_node_get_scalar(k, &n);
        if (ks && memchr(ks, 0, n))
            refuse(b, NULL, "%s:%d: a key holds a NUL character (an escaped \\0 or \\x00): '%.*s...'", b->file, kl,
                   (int)strnlen(ks, n), ks);
        const char *key = astrndup(b->a, ks ? ks : "", ks ? n : 0);
        refuse_tag(b, k, kl, NULL);
        if (v && !fy_node_is_alias(v)) refuse_tag(b, v, kl, key);
        yaml_push(b->a, y, key, kl, convert(b, v, kl, depth + 1));
    }
    for (int i = 0; i < n_merges; i++) apply_merge(b, y, merges[i], merge_lines[i], depth);
    return y;
}

// A diag that collects errors instead of printing them (nothing printed by the library);
// dies if libfyaml cannot make one.
static struct fy_diag *diag_collecting(void) {
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dc);
    CHECK(diag, "fy_diag_create failed");
    fy_diag_set_collect_errors(diag, true);
    return diag;
}

YamlNode *yaml_parse(YamlArena *a, const char *path, const YamlKind *kind, const char *buf, size_t len, YamlError *err) {
    err->msg[0] = 0;
    err->hint = NULL;
    // YAML text is Unicode; libfyaml 0.8 loops forever on some invalid sequences (a directive
    // line "%" followed by bytes such as D3 DF, found by fuzz/fuzz_manifest.c), so nothing
    // else reaches it (the one UTF-8 rule: core/utf8.h)
    long bad = utf8_first_invalid((const unsigned char *)buf, len);
    if (bad >= 0) {
        int line = 1, col = 1;
        for (long i = 0; i < bad; i++) { if (buf[i] == '\n') { line++; col = 1; } else col++; }
        snprintf(err->msg, sizeof err->msg, "%s:%d: not valid UTF-8 (byte 0x%02x at column %d): a %s is UTF-8 text", path, line,
                 (unsigned char)buf[bad], col, kind->noun);
        return NULL;
    }
    Build b = { .a = a, .file = yaml_strdup(a, path), .kind = kind, .err = err };
    struct fy_diag *diag = diag_collecting();
    struct fy_parse_cfg pc = {0};
    pc.flags = FYPCF_QUIET;   // no FYPCF_RESOLVE_DOCUMENT: aliases are expanded by convert(), within a budget
    pc.diag = diag;
    // One document per file: a parser, so that a second document ("---" and more keys) is
    // refused rather than silently left unread.
    struct fy_parser *fyp = fy_parser_create(&pc);
    CHECK(fyp, "fy_parser_create failed");
    /* volatile: assigned after setjmp, and refuse() longjmps back here */
    struct fy_document *volatile doc = NULL, *volatile more = NULL;
    if (setjmp(b.jb)) {
        if (more) fy_parse_document_destroy(fyp, more);
        if (doc) fy_parse_document_destroy(fyp, doc);
        fy_parser_destroy(fyp);
        fy_diag_destroy(diag);
        return NULL;
    }
    if (len) {
        CHECK(fy_parser_set_string(fyp, buf, len) == 0, "fy_parser_set_string failed");
        doc = fy_parse_load_document(fyp);
        if (doc && !fy_diag_got_error(diag)) more = fy_parse_load_document(fyp);
    }
    void *it = NULL;
    struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
    if (e) refuse(&b, NULL, "%s:%d: YAML syntax error: %s (column %d)", b.file, e->line > 0 ? e->line : 1, e->msg ? e->msg : "?",
                  e->column);
    if (doc && fy_diag_got_error(diag)) refuse(&b, NULL, "%s: YAML syntax error", b.file);
    if (more) {
        struct fy_document_state *ds = fy_document_get_document_state(more);
        const struct fy_mark *m = ds ? fy_document_state_start_mark(ds) : NULL;
        refuse(&b, "put every key in the first document (one mapping), or use extends: for another file",
               "%s:%d: a second YAML document ('---'); a %s is one document, and nothing after the first would be read",
               b.file, m ? m->line + 1 : 1, kind->noun);
    }
    // no document and no message: nothing but blanks and comments
    struct fy_node *r = doc ? fy_document_root(doc) : NULL;
    YamlNode *root = NULL;
    if (r && !(fy_node_is_scalar(r) && !fy_node_is_alias(r) && fy_node_get_style(r) == FYNS_PLAIN &&
               is_null_word(fy_node_get_scalar0(r) ? fy_node_get_scalar0(r) : "")))
        root = convert(&b, r, 1, 0);
    if (doc) fy_parse_document_destroy(fyp, doc);
    fy_parser_destroy(fyp);
    fy_diag_destroy(diag);
    return root;
}
