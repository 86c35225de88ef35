// options.c — see options.h.
#include "options.h"

#include <stdlib.h>
#include <string.h>

#include "../core/check.h"

// The schema row a value is checked against: the key's own, or one made from the option.
static ConfigKey row_of(const ToolOption *o) {
    if (o->key) {
        int nk, i = config_key_index(o->key);
        CHECK(i >= 0, "option --%s names no key '%s'", o->name, o->key);
        return config_schema(&nk)[i];
    }
    // (size: an own string option keeps its argument, of any length)
    ConfigKey k = { "", o->name, o->type, 0, (size_t)-1, o->min, o->max, o->flags, o->enum_names, NULL, "", CHANGE_RECORDING };
    return k;
}

// The C object the parsed value goes to: an own string option keeps the argument itself.
static void store(const ToolOption *o, const ConfigKey *k, const char *tool, const char *text, void *dst) {
    char why[1400], help[200];
    snprintf(help, sizeof help, "%s --help lists the options", tool);
    if (!o->key && k->type == CK_STRING) {
        if (config_parse_value(k, text, NULL, why, sizeof why) != 0) die_input_hint(help, "%s --%s: %s", tool, o->name, why);
        *(const char **)dst = text;
        return;
    }
    if (config_parse_value(k, text, dst, why, sizeof why) != 0) die_input_hint(help, "%s --%s: %s", tool, o->name, why);
}

void opt_value(const char *tool, const char *name, const ToolOption *spec, const char *text, void *dst) {
    ToolOption o = *spec;
    o.name = name;
    ConfigKey k = row_of(&o);
    store(&o, &k, tool, text, dst);
}

int opt_int_list(const char *tool, const char *name, const char *text, int lo, int hi, int *out, int max) {
    const ToolOption one = OPT_INT_ROW(name, lo, hi, NULL);
    int n = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len >= sizeof item) die_input("%s --%s: '%.40s...' is not a number", tool, name, p);
        memcpy(item, p, len);
        item[len] = 0;
        if (n == max) die_input("%s --%s: at most %d values, got '%s'", tool, name, max, text);
        opt_value(tool, name, &one, item, &out[n++]);
        p += len;
        if (*p == ',') p++;
    }
    if (!n) die_input("%s --%s: expected a list like %d,%d, got '%s'", tool, name, lo, lo * 2, text);
    // a value twice would be measured (and printed) twice: refused, the hint the list without repeats
    char uniq[512] = "";
    int twice = -1;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= out[j] == out[i];
        if (seen) { if (twice < 0) twice = out[i]; continue; }
        snprintf(uniq + strlen(uniq), sizeof uniq - strlen(uniq), "%s%d", uniq[0] ? "," : "", out[i]);
    }
    if (twice >= 0) die_input("%s --%s: %d listed twice in '%s'; hint: --%s %s", tool, name, twice, text, name, uniq);
    return n;
}

static const char *kind_name(OptKind k) {
    return k == OPT_FLAG ? "flag" : k == OPT_VALUE ? "value" : k == OPT_LIST ? "list" : "flag_or_value";
}

// BOOST_OPTIONS=list: the table, for tools/probe_options.py.
static void print_table(const ToolOption *opts) {
    for (const ToolOption *o = opts; o->name; o++) {
        ConfigKey k = row_of(o);
        printf("--%s\t%s\t%s\t", o->name, kind_name(o->kind), o->kind == OPT_FLAG ? "flag" : config_type_name(k.type));
        if (k.flags & CKF_MIN) printf("%s%.17g", (k.flags & CKF_MIN_EXCL) ? ">" : "", k.min);
        printf("\t");
        if (k.flags & CKF_MAX) printf("%s%.17g", (k.flags & CKF_MAX_EXCL) ? "<" : "", k.max);
        printf("\t");
        for (int i = 0; k.enum_names && k.enum_names[i]; i++) printf("%s%s", i ? "," : "", k.enum_names[i]);
        printf("\t%s\t%s\n", o->key ? o->key : "", (k.flags & CKF_PATH) ? "path" : "");
    }
}

// BOOST_OPTIONS=values: each option's value as the tool uses it.
static void print_values(const ToolOption *opts) {
    for (const ToolOption *o = opts; o->name; o++) {
        ConfigKey k = row_of(o);
        printf("--%s\t", o->name);
        if (o->kind == OPT_FLAG) printf("%d", *(const int *)o->dst);
        else if (o->kind == OPT_LIST) {
            const OptList *l = o->dst;
            for (int i = 0; i < l->n; i++) {
                printf("%s", i ? "\x1f" : "");
                if (o->key || k.type == CK_STRING) { printf("%s", l->v[i]); continue; }
                // a typed item as the tool reads it (opt_value), not as typed ("1e0" is 1)
                union { int i; int64_t i64; uint64_t u64; float f; double d; } item;
                char buf[64], why[400];
                config_parse_value(&k, l->v[i], &item, why, sizeof why);   // (checked by opt_parse)
                k.offset = 0;
                config_format_value((const Config *)(void *)&item, &k, buf, sizeof buf);
                printf("%s", buf);
            }
        } else if (o->kind == OPT_FLAG_OR_VALUE || (!o->key && k.type == CK_STRING)) {
            const char *s = *(const char *const *)o->dst;
            printf("%s", s ? s : "");
        } else {
            char buf[1100];
            k.offset = 0;   // (config_format_value reads the field at offset from the pointer it is given)
            config_format_value((const Config *)o->dst, &k, buf, sizeof buf);
            printf("%s", buf);
        }
        printf("\n");
    }
}

void opt_parse(const char *tool, const ToolOption *opts, int argc, char **argv, const char **pos, int max_pos, int *n_pos,
               const char *usage) {
    int n_opts = 0;
    while (opts[n_opts].name) n_opts++;
    const char *mode = getenv("BOOST_OPTIONS");
    if (mode && !strcmp(mode, "list")) { print_table(opts); fflush(stdout); exit(0); }
    unsigned char *given = xcalloc((size_t)n_opts + 1, 1);
    for (int i = 0; i < n_opts; i++)
        if (opts[i].kind == OPT_LIST) {
            OptList *l = opts[i].dst;
            l->v = xcalloc((size_t)argc + 1, sizeof *l->v);
            l->n = 0;
        }
    if (n_pos) *n_pos = 0;
    char help[200];
    snprintf(help, sizeof help, "%s --help lists the options", tool);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); fputc('\n', stdout); exit(0); }
        if (a[0] != '-' || !a[1]) {
            if (!n_pos || *n_pos >= max_pos)
                die_input_hint(usage, "%s: unexpected argument '%s'%s", tool, a, max_pos ? " (one is enough)" : "");
            pos[(*n_pos)++] = a;
            continue;
        }
        const char *name = a[1] == '-' ? a + 2 : a + 1;
        size_t nl = strcspn(name, "=");
        const char *eq = name[nl] == '=' ? name + nl + 1 : NULL;
        const ToolOption *o = NULL;
        int oi = -1;
        for (int j = 0; j < n_opts && !o; j++)
            if (strlen(opts[j].name) == nl && !strncmp(opts[j].name, name, nl) && a[1] == '-') { o = &opts[j]; oi = j; }
        if (!o) {
            const char **names = xcalloc((size_t)n_opts + 1, sizeof *names);
            char (*dashed)[80] = xcalloc((size_t)n_opts + 1, sizeof *dashed);
            for (int j = 0; j < n_opts; j++) { snprintf(dashed[j], sizeof dashed[j], "--%s", opts[j].name); names[j] = dashed[j]; }
            char given_name[200];
            snprintf(given_name, sizeof given_name, "%.*s", (int)(a[1] == '-' ? nl + 2 : nl + 1), a);
            const char *s = config_suggest(given_name, names);
            if (s) die_input_hint(help, "%s: unknown option '%s'; did you mean '%s'?", tool, given_name, s);
            die_input_hint(usage, "%s: unknown option '%s'", tool, given_name);
        }
        if (o->kind == OPT_FLAG) {
            if (eq) die_input_hint(help, "%s --%s takes no value (got '%s')", tool, o->name, eq);
            *(int *)o->dst = 1;
            continue;
        }
        if (o->kind == OPT_FLAG_OR_VALUE) {
            if (given[oi]) die_input_hint("give it once", "%s --%s is given twice", tool, o->name);
            given[oi] = 1;
            // "--name=" with nothing after it is no value: a script's --resume=$UID with UID unset
            // must not turn into the bare option's meaning
            if (eq && !*eq) {
                char hint[160];
                snprintf(hint, sizeof hint, "give --%s alone, or --%s=VALUE with a value", o->name, o->name);
                die_input_hint(hint, "%s --%s= has an empty value", tool, o->name);
            }
            ConfigKey k = row_of(o);
            if (eq) store(o, &k, tool, eq, o->dst);
            else *(const char **)o->dst = "";
            continue;
        }
        const char *v = eq;
        if (!v) {
            if (i + 1 >= argc) die_input_hint(help, "%s --%s needs a value", tool, o->name);
            v = argv[++i];
        }
        ConfigKey k = row_of(o);
        if (o->kind == OPT_LIST) {
            OptList *l = o->dst;
            const char *tmp;
            // (an own string item: store keeps the text in tmp; any other type: checked only)
            store(o, &k, tool, v, !o->key && k.type == CK_STRING ? (void *)&tmp : NULL);
            l->v[l->n++] = v;
            continue;
        }
        if (given[oi]) die_input_hint("give it once", "%s --%s is given twice (again as '%s'); an option is given once", tool, o->name, v);
        given[oi] = 1;
        store(o, &k, tool, v, o->dst);
    }
    free(given);
    if (mode && !strcmp(mode, "values")) { print_values(opts); fflush(stdout); exit(0); }
}
