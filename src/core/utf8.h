// utf8.h — the one rule of what valid UTF-8 is (manifests and hardware profiles must be
// valid UTF-8, a text: corpus is warned about when it is not), and how a character of a
// name is shown in a message: whole, with its code point, never as one byte of it.
//
// Valid means RFC 3629: no overlong forms (C0 AF), no surrogates (ED A0 80), nothing
// above U+10FFFF, no sequence cut short by the end of the text.
#pragma once
#include <stddef.h>

// The length (1-4) of the valid UTF-8 sequence at p[0..n), or 0 when the bytes there are
// not one (n == 0 included).
size_t utf8_seq_len(const unsigned char *p, size_t n);
// The offset of the first byte that breaks the rule, or -1 when all n bytes are valid.
long utf8_first_invalid(const unsigned char *p, size_t n);
// The number of bytes that belong to no valid sequence (0 for valid text).
size_t utf8_count_invalid(const unsigned char *p, size_t n);
// The character that starts at s, for a message: "'é' (U+00E9)" for a valid non-ASCII
// character, "'a'" for printable ASCII, "byte 0xC3" for a byte that starts no valid
// sequence, "control character U+0009" for a control character. Returns the number of
// bytes the character takes (>= 1; 0 at the end of s).
size_t utf8_describe_char(const char *s, char *out, size_t cap);
// s as it can be printed on one line: valid printable UTF-8 copied, control characters and
// bytes of no valid sequence written as \xNN (cut short, NUL-terminated, when cap is small).
void utf8_printable(const char *s, char *out, size_t cap);
