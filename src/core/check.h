// check.h — error handling for every library call and every bad input.
//
// Style (from llm.c): a failed call prints file:line, the call, and the library's
// own error text, then exits non-zero. Input errors (config, data file, checkpoint,
// command line) go through die_input() which names the file and what was expected.
#pragma once
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Exit codes: 1 = internal/library failure, 2 = bad user input.
#define EXIT_INTERNAL 1
#define EXIT_BAD_INPUT 2

__attribute__((noreturn, format(printf, 3, 4)))
void die_at(const char *file, int line, const char *fmt, ...);
// Bad user input: "error: <fmt>" (+ optional hint line), exit 2.
__attribute__((noreturn, format(printf, 1, 2)))
void die_input(const char *fmt, ...);
__attribute__((noreturn, format(printf, 2, 3)))
void die_input_hint(const char *hint, const char *fmt, ...);

#define DIE(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
// errno-setting calls (fopen, fwrite, rename, ...): condition true = failure.
#define CHECK_ERRNO(cond, what) \
    do { if (cond) die_at(__FILE__, __LINE__, "%s failed: %s", (what), strerror(errno)); } while (0)
#define CHECK(cond, ...) do { if (!(cond)) die_at(__FILE__, __LINE__, __VA_ARGS__); } while (0)

// A process that owns results (the trainer with an open run database) registers a hook
// that runs before any die_* exit with the message text, to record the failure and
// flush what was logged. The hook must not call die_* itself.
typedef void (*DieHook)(void *ctx, const char *message, int exit_code);
// ctx is handed back to the hook (the run's context); set_die_hook(NULL, NULL) removes it.
void set_die_hook(DieHook hook, void *ctx);

// The memory refusal (exit 2, "out of memory: allocating N bytes ... failed" and a hint): what
// every checked allocator calls, and the place for an allocation of another library that fails.
__attribute__((noreturn))
void die_out_of_memory(size_t bytes);
// A thread (or another resource) that could not be had for want of memory or a limit (rc:
// pthread_create's EAGAIN, ENOMEM): the same kind of refusal, naming what and why; any other
// rc is an internal failure (file:line). rc 0 returns.
void check_resource(int rc, const char *what);
void *xmalloc(size_t n);           // malloc that never returns NULL
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);  // realloc that never returns NULL
void *xaligned_alloc(size_t n);    // 64-byte aligned, zeroed; free() with free()
// Appends one (uninitialised) element to an array of *n of *cap elements of elt bytes,
// doubling the capacity when full; returns the possibly moved array (element *n - 1 is new).
void *vec_grow(void *v, int *n, int *cap, size_t elt);
char *xstrdup(const char *s);
// snprintf for paths and names: one that would not fit is refused as bad input (exit 2, its
// length and the most the buffer holds), never cut short.
__attribute__((format(printf, 3, 4)))
void xsnprintf(char *buf, size_t n, const char *fmt, ...);
