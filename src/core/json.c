// json.c — see json.h.
#include "json.h"

#include <stdio.h>

size_t json_escape(char *out, size_t cap, const char *s) {
    size_t len = 0;
#define PUT(ch) do { if (len + 1 < cap) out[len] = (ch); len++; } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *short_esc = NULL;
        switch (*p) {
        case '"': short_esc = "\\\""; break;
        case '\\': short_esc = "\\\\"; break;
        case '\b': short_esc = "\\b"; break;
        case '\f': short_esc = "\\f"; break;
        case '\n': short_esc = "\\n"; break;
        case '\r': short_esc = "\\r"; break;
        case '\t': short_esc = "\\t"; break;
        }
        if (short_esc) { PUT(short_esc[0]); PUT(short_esc[1]); }
        else if (*p < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", *p);
            for (char *q = e; *q; q++) PUT(*q);
        } else PUT((char)*p);
    }
    PUT('"');
#undef PUT
    if (cap) out[len < cap ? len : cap - 1] = 0;
    return len;
}
