#include "check.h"

#include <pthread.h>
#include <unistd.h>

// The process's one fatal-error hook and its context: a fatal error reaches finish() from any
// depth, with no caller to hand state through, so this is file-scope by necessity.
static DieHook die_hook = NULL;
static void *die_ctx = NULL;
void set_die_hook(DieHook hook, void *ctx) { die_hook = hook; die_ctx = ctx; }

// Print "<prefix><message>" to stderr, run the hook once, end the process.
// One thread ends it: a second thread failing meanwhile (an OpenMP worker) waits for the end
// (the lock is recursive: a hook that jumps back, as the fuzz harnesses' does, may fail again).
// _exit, after flushing stdio: the libraries' exit handlers are not run, because one may wait
// forever for a thread that never finishes (OpenBLAS's shutdown joins its threads, one of which
// can be retrying an allocation that will never succeed).
static pthread_mutex_t ending = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
__attribute__((noreturn)) static void finish(const char *prefix, const char *msg, const char *hint, int code) {
    pthread_mutex_lock(&ending);
    fflush(stdout);
    fprintf(stderr, "%s%s\n", prefix, msg);
    if (hint) fprintf(stderr, "hint: %s\n", hint);
    DieHook h = die_hook;
    die_hook = NULL;               // a failure inside the hook must not recurse
    if (h) h(die_ctx, msg, code);
    fflush(NULL);
    _exit(code);
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

// An allocation that fails is the environment (the memory or a limit on it), not a bug: a
// message naming the size and what to change, exit 2, from any thread (train/memory_fit.h
// refuses a run that cannot fit before it starts; this is what is left).
void die_out_of_memory(size_t bytes) {
    die_input_hint("lower train.batch_size or train.threads, raise parallel.tp/pp, or give the process more memory "
                   "(its limits: ulimit -v, ulimit -d, the job's memory limit); build/info --memory shows a run's need",
                   "out of memory: allocating %zu bytes (%.3f GiB) failed", bytes, (double)bytes / 1073741824.0);
}

void check_resource(int rc, const char *what) {
    if (rc == 0) return;
    if (rc == EAGAIN || rc == ENOMEM)
        die_input_hint("give the process more memory or threads (its limits: ulimit -v, ulimit -u, the job's limits), or "
                       "lower train.threads", "out of resources: %s failed: %s", what, strerror(rc));
    DIE("%s failed: %s", what, strerror(rc));
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die_out_of_memory(n);
    return p;
}
void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) die_out_of_memory(n * sz);
    return p;
}
void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) die_out_of_memory(n);
    return q;
}
void *vec_grow(void *v, int *n, int *cap, size_t elt) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        v = realloc(v, elt * (size_t)*cap);
        if (!v) die_out_of_memory(elt * (size_t)*cap);
    }
    (*n)++;
    return v;
}
void *xaligned_alloc(size_t n) {
    size_t rounded = (n + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) die_out_of_memory(n);
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
    CHECK(k >= 0, "xsnprintf: vsnprintf failed");
    // what is too long is a path or a name someone gave (every buffer holds what the program
    // makes itself): refused as input, never cut short to name another file
    if ((size_t)k >= n)
        die_input_hint("use a shorter path or name", "'%.60s...' is %d bytes long; a path or name here holds at most %zu",
                       buf, k, n - 1);
}
