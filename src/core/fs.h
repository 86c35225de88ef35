// fs.h — small file-system helpers whose failures the caller reports in its own words
// (an unwritable output directory is the user's environment: exit 2 with the key to change).
#pragma once
#include <stddef.h>

// mkdir -p `dir`. Returns 0, or the errno of the first component that could not be
// created (its path in `failed`, size n).
int fs_mkdir_p(const char *dir, char *failed, size_t n);
// The whole file as a NUL-terminated string (malloc'd); dies naming the file if it cannot
// be read (for files that were just opened by a parser, such as a manifest).
char *fs_read_text(const char *path);
