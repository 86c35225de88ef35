// shellword.h — printed commands that a user pastes into a shell: every argument one
// shell word, single-quoted when it holds anything but [A-Za-z0-9-_./=:,+@] (a name like
// `r$(touch x)` is printed as 'r$(touch x)' and pastes as that text, never as a command).
#pragma once
#include <stddef.h>

// Append `arg` to the NUL-terminated `buf` (size n) as one shell word, after a space
// when buf is not empty. A word that does not fit is left out whole (never cut inside
// its quotes).
void shell_append_word(char *buf, size_t n, const char *arg);
// Append "KEY=" followed by `value` quoted as one word (make variables: EXP='r$(x)').
void shell_append_assign(char *buf, size_t n, const char *key, const char *value);
