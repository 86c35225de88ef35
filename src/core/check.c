#include "check.h"

void die_at(const char *file, int line, const char *fmt, ...) {
    fflush(stdout);
    fprintf(stderr, "fatal: %s:%d: ", file, line);
    va_list ap; va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
    fputc('\n', stderr);
    exit(EXIT_INTERNAL);
}

static void vdie_input(const char *hint, const char *fmt, va_list ap) {
    fflush(stdout);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    if (hint) fprintf(stderr, "hint: %s\n", hint);
    exit(EXIT_BAD_INPUT);
}
void die_input(const char *fmt, ...) { va_list ap; va_start(ap, fmt); vdie_input(NULL, fmt, ap); }
void die_input_hint(const char *hint, const char *fmt, ...) { va_list ap; va_start(ap, fmt); vdie_input(hint, fmt, ap); }

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK(p, "out of memory allocating %zu bytes", n);
    return p;
}
void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    CHECK(p, "out of memory allocating %zu x %zu bytes", n, sz);
    return p;
}
void *xaligned_alloc(size_t n) {
    size_t rounded = (n + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    CHECK(p, "out of memory allocating %zu bytes", n);
    memset(p, 0, rounded ? rounded : 64);
    return p;
}
char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}
void xsnprintf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    CHECK(k >= 0 && (size_t)k < n, "string too long for its %zu-byte buffer: '%.60s...'", n, buf);
}
