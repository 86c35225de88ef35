// config_diff.c — see config_diff.h.
#include "config_diff.h"

#include <stdlib.h>
#include <string.h>

#include "../core/check.h"

// ---- the JSON of config_to_json -----------------------------------------------------------
// {"section": {"key": value, ...}, ...} with string, number, true/false values: read by a
// small walker of exactly that shape (the engine writes it; anything else is refused).

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    return p;
}

// A JSON string at p (after its opening quote) into out (escapes decoded; \u00XX only, as
// json_escape writes control characters). Returns the byte after the closing quote, or NULL.
static const char *read_string(const char *p, char *out, size_t n) {
    size_t len = 0;
    for (; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\') {
            p++;
            switch (*p) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case '"': case '\\': case '/': c = *p; break;
            case 'u': {
                unsigned v = 0;
                for (int i = 1; i <= 4; i++) {
                    char h = p[i];
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return NULL;
                    v = v * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                if (v == 0 || v > 0x7F) return NULL;
                c = (char)v;
                p += 4;
                break;
            }
            default: return NULL;
            }
        }
        if (len + 1 >= n) return NULL;
        out[len++] = c;
    }
    if (*p != '"') return NULL;
    out[len] = 0;
    return p + 1;
}

void config_from_json(Config *c, const char *json, const char *where) {
    config_defaults(c);
    Config defaults;
    config_defaults(&defaults);
    int nk;
    const ConfigKey *keys = config_schema(&nk);
    const char *p = json ? skip_ws(json) : "";
    const char *bad = NULL;
    int n_keys = 0;
    if (*p++ != '{') bad = "not a JSON object";
    p = skip_ws(p);
    while (!bad && *p != '}') {
        char section[64], key[96], value[1100], dotted[200];
        if (*p != '"' || !(p = read_string(p + 1, section, sizeof section))) { bad = "a section name"; break; }
        p = skip_ws(p);
        if (*p++ != ':') { bad = "':' after a section"; break; }
        p = skip_ws(p);
        if (*p++ != '{') { bad = "a section's object"; break; }
        p = skip_ws(p);
        while (!bad && *p != '}') {
            if (*p != '"' || !(p = read_string(p + 1, key, sizeof key))) { bad = "a key name"; break; }
            p = skip_ws(p);
            if (*p++ != ':') { bad = "':' after a key"; break; }
            p = skip_ws(p);
            YamlScalarType type = YS_STR;   // (a JSON string; a bare value is a plain YAML scalar)
            if (*p == '"') {
                if (!(p = read_string(p + 1, value, sizeof value))) { bad = "a string value"; break; }
            } else {
                size_t len = strcspn(p, ",} \n\t\r");
                if (!len || len >= sizeof value) { bad = "a value"; break; }
                memcpy(value, p, len);
                value[len] = 0;
                p += len;
                char why[8];
                type = yaml_plain_type(value, why, sizeof why);
            }
            snprintf(dotted, sizeof dotted, "%s.%s", section, key);
            int ki = config_key_index(dotted);
            if (ki >= 0) {   // (a key of a newer engine: left out)
                char dv[1100];
                config_format_value(&defaults, &keys[ki], dv, sizeof dv);
                if (type == YS_NULL || strcmp(dv, value)) {   // as the default: left unset, as the manifest left it
                    char w[1400];
                    snprintf(w, sizeof w, "%.1000s: %s", where, dotted);
                    config_set_key(c, dotted, value, type, w);
                }
                n_keys++;
            }
            p = skip_ws(p);
            if (*p == ',') p = skip_ws(p + 1);
            else if (*p != '}') bad = "',' or '}' after a value";
        }
        if (bad) break;
        p = skip_ws(p + 1);
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p != '}') bad = "',' or '}' after a section";
    }
    if (!bad && *skip_ws(p + 1)) bad = "text after the object";
    if (!bad && n_keys == 0) bad = "no key of this engine";
    if (bad)
        die_input_hint("it was not written by this engine (or it was damaged)",
                       "%s: the stored configuration is not the JSON of a configuration (at %s, byte %ld)", where, bad,
                       json ? (long)(p - json) : 0L);
}

// ---- differences ----------------------------------------------------------------------------

int config_diff(const Config *before, const Config *after, ConfigChange *out, int cap) {
    int nk, n = 0;
    const ConfigKey *keys = config_schema(&nk);
    for (int i = 0; i < nk; i++) {
        char a[1100], b[1100];
        config_format_value(before, &keys[i], a, sizeof a);
        config_format_value(after, &keys[i], b, sizeof b);
        if (!strcmp(a, b)) continue;
        if (n < cap) {   // (a long value, a path, shown by its first characters)
            out[n].key = i;
            snprintf(out[n].before, sizeof out[n].before, "%.90s%s", a, strlen(a) > 90 ? "..." : "");
            snprintf(out[n].after, sizeof out[n].after, "%.90s%s", b, strlen(b) > 90 ? "..." : "");
        }
        n++;
    }
    return n;
}

int config_change_is_free(ConfigChangeClass c) { return c == CHANGE_LAYOUT || c == CHANGE_RECORDING; }

// ---- what a resume may change ----------------------------------------------------------------

static void append(char **buf, size_t *len, const char *fmt, const char *a, const char *b, const char *c, const char *d) {
    int need = snprintf(NULL, 0, fmt, a, b, c, d);
    *buf = realloc(*buf, *len + (size_t)need + 1);
    CHECK(*buf, "out of memory");
    snprintf(*buf + *len, (size_t)need + 1, fmt, a, b, c, d);
    *len += (size_t)need;
}

char *config_resume_changes(const char *before_json, const Config *now, const char *const *allowed, int n_allowed,
                            const ResumeSource *src, FILE *out) {
    int nk;
    const ConfigKey *keys = config_schema(&nk);
    const char *const *names = config_key_names();
    // every allowed key is a key (a typo would allow nothing and say nothing)
    for (int a = 0; a < n_allowed; a++)
        if (config_key_index(allowed[a]) < 0) {
            char where[300];
            snprintf(where, sizeof where, "--allow-change %.200s", allowed[a]);
            config_die_unknown_key(where, allowed[a], NULL);
        }
    if (!before_json) {
        fprintf(out, "warning: %s holds no configuration to compare with: the changes of this resume are not checked\n",
                src->held_in);
        return NULL;
    }
    char where[1500];
    snprintf(where, sizeof where, "RESUME: %s (the configuration stored in %s)", src->name, src->held_in);
    Config before;
    config_from_json(&before, before_json, where);
    ConfigChange ch[CONFIG_MAX_KEYS];
    int n = config_diff(&before, now, ch, CONFIG_MAX_KEYS);
    // the model first: never resumed with another one
    for (int i = 0; i < n; i++)
        if (keys[ch[i].key].change == CHANGE_MODEL)
            die_input_hint("resume with the model the run was trained with, or start a new run (without --resume)",
                           "RESUME: %s %s a different model: %s is %s in %s and %s now; resuming with a different model is refused",
                           src->name, src->verb, names[ch[i].key], ch[i].before, src->held_in, ch[i].after);
    char *record = NULL, *refused = NULL, *flags = NULL;
    size_t rl = 0, fl = 0, fll = 0;
    int n_refused = 0;
    if (n) fprintf(out, "resume: %d key%s changed since %s:\n", n, n == 1 ? "" : "s", src->held_in);
    for (int i = 0; i < n; i++) {
        const ConfigKey *k = &keys[ch[i].key];
        const char *cls = config_change_class_name(k->change);
        int ok = 1;
        const char *how = "accepted: the same function";
        if (k->change == CHANGE_RECORDING) how = "accepted: where or how often results are written";
        if (!config_change_is_free(k->change)) {
            ok = 0;
            for (int a = 0; a < n_allowed; a++) ok |= !strcmp(allowed[a], names[ch[i].key]);
            how = ok ? "changes the run's meaning; allowed by --allow-change" : "changes the run's meaning: refused";
        }
        fprintf(out, "  %-28s %s -> %s  (%s: %s)\n", names[ch[i].key], ch[i].before, ch[i].after, cls, how);
        if (config_change_is_free(k->change)) continue;
        if (ok) {
            append(&record, &rl, "%s%s %s -> %s", rl ? "; " : "", names[ch[i].key], ch[i].before, ch[i].after);
            append(&record, &rl, " (%s)%s%s%s", cls, "", "", "");
        } else {
            append(&refused, &fl, "%s%s (%s)%s", n_refused ? ", " : "", names[ch[i].key], cls, "");
            append(&flags, &fll, "%s--allow-change %s%s%s", n_refused ? " " : "", names[ch[i].key], "", "");
            n_refused++;
        }
    }
    for (int a = 0; a < n_allowed; a++) {
        int changed = 0;
        for (int i = 0; i < n; i++) changed |= !strcmp(allowed[a], names[ch[i].key]);
        if (!changed) fprintf(out, "note: --allow-change %s: %s did not change; nothing to allow\n", allowed[a], allowed[a]);
    }
    fflush(out);
    if (n_refused) {
        char hint[2400];
        snprintf(hint, sizeof hint, "resume with the values the run had, or allow each change explicitly (%s; make exp ... "
                 "RESUME=1 ALLOW_CHANGE=\"KEY ...\"): it is recorded with the run; or start a new run", flags);
        die_input_hint(hint, "RESUME: %s: %d change%s of the run's meaning since %s: %s", src->name, n_refused,
                       n_refused == 1 ? "" : "s", src->held_in, refused);
    }
    free(flags);
    return record;
}
