// json.h — the one JSON string escape of the project (the resolved configuration, the
// run database's library versions).
#pragma once
#include <stddef.h>

// Writes `s` as a JSON string literal, quotes included, into out (NUL-terminated when
// cap > 0; cut short if it does not fit), like snprintf: returns the full length of the
// literal, so `json_escape(NULL, 0, s) + 1` is the size it needs. '"', '\\', \b \f \n \r \t
// get their short escapes, other bytes below 0x20 \u00XX; everything else (UTF-8
// included) is copied as is.
size_t json_escape(char *out, size_t cap, const char *s);
