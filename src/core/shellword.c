// shellword.c — see shellword.h.
#include "shellword.h"

#include <string.h>

static int plain_char(char c) {
    return c && strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@", c) != NULL;
}

// The quoted form of `arg` into out (size n); 0 if it does not fit.
static int quote(char *out, size_t n, const char *arg) {
    int plain = arg[0] != 0;
    for (const char *p = arg; *p; p++) if (!plain_char(*p)) plain = 0;
    size_t len = 0;
    if (!plain) { if (len + 1 >= n) return 0; out[len++] = '\''; }
    for (const char *p = arg; *p; p++) {
        if (!plain && *p == '\'') { if (len + 4 >= n) return 0; memcpy(out + len, "'\\''", 4); len += 4; }
        else { if (len + 1 >= n) return 0; out[len++] = *p; }
    }
    if (!plain) { if (len + 1 >= n) return 0; out[len++] = '\''; }
    out[len] = 0;
    return 1;
}

static void append(char *buf, size_t n, const char *prefix, const char *arg) {
    size_t len = strlen(buf), need = (len ? 1 : 0) + strlen(prefix);
    if (len + need >= n) return;
    char *w = buf + len + (len ? 1 : 0) + strlen(prefix);
    if (!quote(w, n - (size_t)(w - buf), arg)) { buf[len] = 0; return; }
    if (len) buf[len] = ' ';
    memcpy(buf + len + (len ? 1 : 0), prefix, strlen(prefix));
}

void shell_append_word(char *buf, size_t n, const char *arg) { append(buf, n, "", arg); }

void shell_append_assign(char *buf, size_t n, const char *key, const char *value) {
    char prefix[128];
    size_t k = strlen(key);
    if (k + 2 > sizeof prefix) return;
    memcpy(prefix, key, k); prefix[k] = '='; prefix[k + 1] = 0;
    append(buf, n, prefix, value);
}
