#include "check.h"

// The process's one fatal-error hook and its context: a fatal error reaches finish() from any
// depth, with no caller to hand state through, so this is file-scope by necessity.
static DieHook die_hook = NULL;
static void *die_ctx = NULL;
void set_die_hook(DieHook hook, void *ctx) { die_hook = hook; die_ctx = ctx; }

// Print "<prefix><message>" to stderr, run the hook once, exit.
__attribute__((noreturn)) static void finish(const char *prefix, const char *msg, const char *hint, int code) {
    fflush(stdout);
    fprintf(stderr, "%s%s\n", prefix, msg);
    if (hint) fprintf(stderr, "hint: %s\n", hint);
    DieHook h = die_hook;
    die_hook = NULL;               // a failure inside the hook must not recurse
    if (h) h(die_ctx, msg, code);
    exit(code);
}

void die_at(const char *file, int line, const char *fmt, ...) {
    char msg[2048];
    int k = snprintf(msg, sizeof msg, "%s:%d: ", file, line);
    va_list ap; va_start(ap, fmt); vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap); va_end(ap);
    finish("fatal: ", msg, NULL, EXIT_INTERNAL);
}

__attribute__((noreturn)) static void vdie_input(const char *hint, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    finish("error: ", msg, hint, EXIT_BAD_INPUT);
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
void *vec_grow(void *v, int *n, int *cap, size_t elt) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        v = realloc(v, elt * (size_t)*cap);
        CHECK(v, "out of memory growing an array to %d elements of %zu bytes", *cap, elt);
    }
    (*n)++;
    return v;
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
