// fuzzlib.h — what the fuzz harnesses share (fuzz/README.md).
//
// The engine refuses bad input with die_input(): a message and exit 2. Inside a fuzzer
// that exit would end the run, so a die hook jumps back to the harness instead, and the
// harness goes on with the next input (what was allocated on the abandoned path leaks:
// the fuzzers run without leak detection). Exit code 1 (die_at/CHECK: an internal error)
// on any input is a bug: the hook aborts, and the fuzzer reports it as a crash.
//
// The readers take paths, so each input is written to a private file first (in /dev/shm
// when there is one).
//
// Those abandoned allocations add up over hundreds of thousands of inputs, so `make fuzz`
// runs libFuzzer in fork mode (-fork=1: jobs in child processes, corpora merged) and a job
// ends itself (_exit(0), which libFuzzer takes as a finished job) once its memory passes
// FZ_JOB_RSS_MB; the next job starts fresh.
#define FZ_JOB_RSS_MB 1024
#pragma once
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/core/check.h"

static sigjmp_buf fz_jump;
static int fz_refused;   // inputs refused with exit 2 (a clean error), for the replay's summary

static void fz_hook(void *ctx, const char *message, int code) {
    (void)ctx;
    if (code != EXIT_BAD_INPUT) {
        fprintf(stderr, "fuzz: an internal error (exit %d) on this input: %s\n", code, message);
        abort();
    }
    fz_refused++;
    siglongjmp(fz_jump, 1);
}

// Arms the hook; true when the engine refused the input (we came back through the hook).
#define FZ_REFUSED() (set_die_hook(fz_hook, NULL), sigsetjmp(fz_jump, 0) != 0)

static char fz_dir[256];
static void fz_cleanup(void) {   // the private directory and what is in it
    DIR *d = opendir(fz_dir);
    struct dirent *e;
    char p[600];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') { snprintf(p, sizeof p, "%s/%s", fz_dir, e->d_name); unlink(p); }
    if (d) closedir(d);
    rmdir(fz_dir);
}

static void fz_check_rss(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return;
    if (fscanf(f, "%ld %ld", &pages, &resident) == 2 && resident * (sysconf(_SC_PAGESIZE) / 1024) > FZ_JOB_RSS_MB * 1024L) {
        fprintf(stderr, "fuzz: this job holds %ld MB of abandoned inputs; ending it for a fresh one\n",
                resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024);
        fz_cleanup();
        _exit(0);
    }
    fclose(f);
}

// Writes data to "<dir>/<name>" (a directory of this process) and returns that path.
static const char *fz_file(const char *name, const uint8_t *data, size_t n) {
    static char path[512];
    fz_check_rss();
    if (!fz_dir[0]) {
        snprintf(fz_dir, sizeof fz_dir, "%s/boost-fuzz.%ld", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
        if (mkdir(fz_dir, 0700) != 0 && errno != EEXIST) { perror(fz_dir); abort(); }
        atexit(fz_cleanup);
    }
    const char *dir = fz_dir;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) { perror(path); abort(); }
    return path;
}
