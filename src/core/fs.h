// fs.h — a small file-system helper: a text file read whole. (Output folders are written
// through core/outdir.h.)
#pragma once
#include <stddef.h>

// The whole file as a NUL-terminated string (malloc'd); dies naming the file if it cannot
// be read (for files that were just opened by a parser, such as a manifest).
char *fs_read_text(const char *path);
