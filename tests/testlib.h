// testlib.h — a minimal test harness. Each tests/test_*.c defines TEST(name) functions
// and a main() that calls RUN(name) for each. Output per test: "PASS name",
// "FAIL name: reason", or "SKIP name: reason" for a test that cannot run on this machine
// (SKIP_TEST inside the test, then return); tests/run.sh counts them and prints
// "N passed, N failed" (skips counted apart, never as passes).
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int tl_failed_current;
extern const char *tl_current;   // name of the running test
extern int tl_n_pass, tl_n_fail, tl_n_skip;
extern int tl_skipped_current;

#define TEST(name) static void test_##name(void)
#define RUN(name) do { tl_failed_current = 0; tl_skipped_current = 0; tl_current = #name; test_##name(); \
    if (tl_failed_current) { tl_n_fail++; } else if (tl_skipped_current) { tl_n_skip++; } \
    else { tl_n_pass++; printf("PASS %s\n", #name); } \
    fflush(stdout); } while (0)
// Mark the running test as skipped and say why ("SKIP name: no GPU (...)"); the test then
// returns. A test that already failed stays failed.
#define SKIP_TEST(...) do { if (!tl_failed_current && !tl_skipped_current) { \
    printf("SKIP %s: ", tl_current); printf(__VA_ARGS__); printf("\n"); } tl_skipped_current = 1; } while (0)
// Record a failure (first one per test is printed as the FAIL line; later ones as detail).
#define EXPECT(cond, ...) do { if (!(cond)) { \
    if (!tl_failed_current) printf("FAIL %s: ", tl_current); else printf("  also: "); \
    printf(__VA_ARGS__); printf("  [%s:%d]\n", __FILE__, __LINE__); tl_failed_current = 1; } } while (0)
// `build/test_x --help` (or -h): what the binary runs and its arguments, before main() (and
// before MPI), exit 0. A test file with arguments defines TL_USAGE before including this.
#ifndef TL_USAGE
#define TL_USAGE "runs every test of this binary (no arguments); prints PASS/FAIL/SKIP lines, exit 1 if one failed\n"
#endif
__attribute__((constructor)) static void tl_help(void) {
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f) return;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    size_t first = strlen(buf);
    if (first + 1 >= n) return;
    const char *arg = buf + first + 1;
    if (strcmp(arg, "--help") && strcmp(arg, "-h")) return;
    const char *name = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
    printf("usage: %s [--help]\n%s: %s(tests/run.sh runs every test binary; see the comment at the top of tests/%s.c)\n",
           name, name, TL_USAGE, name);
    exit(0);
}

#define TL_MAIN_DEFS int tl_failed_current = 0, tl_skipped_current = 0, tl_n_pass = 0, tl_n_fail = 0, \
    tl_n_skip = 0; const char *tl_current = "";
#define TL_EXIT() return tl_n_fail ? 1 : 0

// A test binary's scratch folder: /tmp/<name>.XXXXXX made into dir (0, or 1 after saying why).
// tl_finish removes it when every test passed (a failure keeps it to look at) and gives main's
// exit status.
static inline int tl_tmpdir(char *dir, size_t size, const char *name) {
    snprintf(dir, size, "/tmp/%s.XXXXXX", name);
    if (mkdtemp(dir)) return 0;
    perror("mkdtemp");
    return 1;
}
static inline int tl_finish(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "/bin/rm -rf '%s'", dir);   // absolute: a test may narrow PATH (test_plan's fake launchers)
    if (!tl_n_fail && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return tl_n_fail ? 1 : 0;
}

// A word of /proc/cpuinfo (a flag such as amx_bf16, or the vendor_id) on its first CPU: what
// a test writes out independently of the engine's own CPU detection.
static inline int tl_cpuinfo_has(const char *word) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int found = 0, cpus = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9) && ++cpus > 1) break;
        for (char *t = strtok(line, " \t\n:"); t && !found; t = strtok(NULL, " \t\n:")) found = !strcmp(t, word);
    }
    fclose(f);
    return found;
}

// max_i |a_i - b_i| / (atol + rtol*|b_i|)  <= 1 means "close".
static inline double tl_close_ratio(const float *a, const float *b, size_t n, double atol, double rtol, size_t *worst) {
    double r = 0; size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]) / (atol + rtol * fabs((double)b[i]));
        if (!(e <= r)) { r = e; w = i; }   // NaN-safe: NaN makes it the worst
    }
    if (worst) *worst = w;
    return r;
}
