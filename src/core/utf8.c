// utf8.c — see utf8.h.
#include "utf8.h"

#include <stdio.h>
#include <string.h>

size_t utf8_seq_len(const unsigned char *p, size_t n) {
    if (n == 0) return 0;
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t k = (c >= 0xC2 && c <= 0xDF) ? 1 : (c >= 0xE0 && c <= 0xEF) ? 2 : (c >= 0xF0 && c <= 0xF4) ? 3 : 0;
    if (k == 0 || k >= n) return 0;
    // the second byte's range excludes overlong forms, surrogates and code points past U+10FFFF
    unsigned lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; else if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t j = 2; j <= k; j++)
        if ((p[j] & 0xC0) != 0x80) return 0;
    return k + 1;
}

long utf8_first_invalid(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq_len(p + i, n - i);
        if (!k) return (long)i;
        i += k;
    }
    return -1;
}

size_t utf8_count_invalid(const unsigned char *p, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq_len(p + i, n - i);
        if (!k) { bad++; i++; } else i += k;
    }
    return bad;
}

size_t utf8_describe_char(const char *s, char *out, size_t cap) {
    const unsigned char *p = (const unsigned char *)s;
    if (!*p) { if (cap) out[0] = 0; return 0; }
    size_t k = utf8_seq_len(p, strnlen(s, 4));
    if (!k) { snprintf(out, cap, "byte 0x%02X", p[0]); return 1; }
    unsigned cp = k == 1 ? p[0] : k == 2 ? p[0] & 0x1F : k == 3 ? p[0] & 0x0F : p[0] & 0x07;
    for (size_t j = 1; j < k; j++) cp = cp << 6 | (p[j] & 0x3F);
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) snprintf(out, cap, "control character U+%04X", cp);
    else if (k == 1) snprintf(out, cap, "'%c'", (char)cp);
    else snprintf(out, cap, "'%.*s' (U+%04X)", (int)k, s, cp);
    return k;
}

void utf8_printable(const char *s, char *out, size_t cap) {
    if (!cap) return;
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq_len(p + i, n - i);
        int control = k == 1 ? (p[i] < 0x20 || p[i] == 0x7F) : k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0;
        if (k && !control) {
            if (o + k >= cap) break;
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
        } else {
            if (o + 4 >= cap) break;
            snprintf(out + o, cap - o, "\\x%02X", p[i]);
            o += 4;
            i++;
        }
    }
    out[o] = 0;
}
