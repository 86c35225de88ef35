// fs.c — see fs.h.
#include "fs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

int fs_mkdir_p(const char *dir, char *failed, size_t n) {
    char buf[4096];
    xsnprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            struct stat st;
            if (mkdir(buf, 0777) != 0 && (errno != EEXIST || stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))) {
                int e = errno == EEXIST ? ENOTDIR : errno;
                snprintf(failed, n, "%s", buf);
                return e;
            }
            *p = c;
            if (!c) return 0;
        }
    }
}

char *fs_read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK_ERRNO(!f, path);
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
