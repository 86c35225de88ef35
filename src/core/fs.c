// fs.c — see fs.h.
#include "fs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fileio.h"

char *fs_read_text(const char *path) {
    char err[1400];
    FILE *f = file_fopen_regular(path, "r", "file", err, sizeof err);   // (a FIFO is never waited on)
    if (!f) die_input("%s", err);
    CHECK_ERRNO(fseek(f, 0, SEEK_END) != 0, path);
    long n = ftell(f);
    CHECK_ERRNO(n < 0 || fseek(f, 0, SEEK_SET) != 0, path);
    char *s = xmalloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    CHECK(got == (size_t)n, "%s: read %zu of %ld bytes", path, got, n);
    s[got] = 0;
    fclose(f);
    return s;
}
