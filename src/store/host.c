// host.c — see host.h.
#include "host.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>
#include <libfyaml.h>
#include <mpi.h>
#include <sqlite3.h>

#include "util.h"
#include "../core/check.h"
#include "../core/env.h"

extern char *openblas_get_config(void);
extern char *openblas_get_corename(void);

void host_name(char *buf, size_t n) {
    if (gethostname(buf, n) != 0) snprintf(buf, n, "unknown");
    buf[n - 1] = 0;
}

double host_load_average(void) {
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : -1.0;
}

static void first_line(char *s) { s[strcspn(s, "\r\n")] = 0; }
// Copy with truncation (for text of unknown length from files and commands).
static void copy_trunc(char *dst, size_t n, const char *src) {
    size_t l = strlen(src);
    if (l >= n) l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

// Output of `cmd` (first line) into buf; returns the exit status (-1 if it could not run).
static int run_cmd(const char *cmd, char *buf, size_t n, int *any_output) {
    buf[0] = 0;
    if (any_output) *any_output = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int first = 1;
    while (fgets(line, sizeof line, p)) {
        if (any_output) *any_output = 1;
        if (first) { copy_trunc(buf, n, line); first_line(buf); first = 0; }
    }
    int st = pclose(p);
    return st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0 || strncmp(line, "cpu model", 9) == 0) {
            char *c = strchr(line, ':');
            if (c) { c++; while (*c == ' ' || *c == '\t') c++; snprintf(buf, n, "%s", c); first_line(buf); break; }
        }
    }
    fclose(f);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t l = strlen(buf);
    if (cores > 0 && l + 24 < n) snprintf(buf + l, n - l, " (%ld cores)", cores);
}

static void gpu_model(char *buf, size_t n) {
    snprintf(buf, n, "none");
    glob_t g;
    if (glob("/proc/driver/nvidia/gpus/*/information", 0, NULL, &g) != 0) return;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        if (!f) continue;
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "Model:", 6) == 0) {
                char *c = line + 6; while (*c == ' ' || *c == '\t') c++;
                first_line(c);
                if (len + strlen(c) + 3 < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "; " : "", c);
                break;
            }
        }
        fclose(f);
    }
    globfree(&g);
    if (!buf[0]) snprintf(buf, n, "none");
}

static void library_versions(char *buf, size_t n) {
    char ob[256], h5[32], mpi[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    const char *obc = openblas_get_config();
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH ... core Cooperlake" and, when env_runtime_setup had to
    // set OPENBLAS_CORETYPE (core/env.h), " (OPENBLAS_CORETYPE set by boost-c; OpenBLAS chose Prescott)"
    const char *core = openblas_get_corename(), *user = getenv("OPENBLAS_CORETYPE");
    // ... or " (OPENBLAS_CORETYPE set by the user, below this CPU's best: Cooperlake)"
    const char *chosen = env_blas_core_chosen(), *below = env_blas_core_user_below_best();
    if (user && !*user) user = NULL;
    snprintf(ob, sizeof ob, "%s core %s%s%s%s", obc ? obc : "unknown", core ? core : "unknown",
             chosen ? " (OPENBLAS_CORETYPE set by boost-c; OpenBLAS chose "
             : below ? " (OPENBLAS_CORETYPE set by the user, below this CPU's best: "
             : user ? " (OPENBLAS_CORETYPE set by the user)" : "",
             chosen ? chosen : below ? below : "", chosen || below ? ")" : "");
    unsigned maj = 0, min = 0, rel = 0;
    if (H5get_libversion(&maj, &min, &rel) < 0) snprintf(h5, sizeof h5, "unknown");
    else snprintf(h5, sizeof h5, "%u.%u.%u", maj, min, rel);
    int len = 0;
    if (MPI_Get_library_version(mpi, &len) != MPI_SUCCESS) snprintf(mpi, sizeof mpi, "unknown");
    mpi[sizeof mpi - 1] = 0;
    mpi[strcspn(mpi, ",\r\n")] = 0;   // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
    const char *fy = fy_library_version();
    // How OpenMP's idle threads wait (core/env.h sets one of the two): it moves timings.
    char omp[160];
    const char *wp = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    snprintf(omp, sizeof omp, "OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s", wp ? wp : "(unset)", spin ? spin : "(unset)");
    buf[0] = 0;
    const char *keys[] = { "openblas", "hdf5", "sqlite", "libfyaml", "mpi", "openmp" };
    const char *vals[] = { ob, h5, sqlite3_libversion(), fy ? fy : "unknown", mpi, omp };
    xsnprintf(buf, n, "{");
    for (int i = 0; i < 6; i++) {
        size_t l = strlen(buf);
        xsnprintf(buf + l, n - l, "%s", i ? ", " : "");
        store_json_str(buf, n, keys[i]);
        l = strlen(buf);
        xsnprintf(buf + l, n - l, ": ");
        store_json_str(buf, n, vals[i]);
    }
    size_t l = strlen(buf);
    xsnprintf(buf + l, n - l, "}");
}

#define STR2(x) #x
#define STR(x) STR2(x)

void host_facts(HostFacts *h) {
    host_name(h->host, sizeof h->host);
    h->pid = (int)getpid();
    cpu_model(h->cpu_model, sizeof h->cpu_model);
    gpu_model(h->gpu_model, sizeof h->gpu_model);
#if defined(__clang__)
    snprintf(h->compiler, sizeof h->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(h->compiler, sizeof h->compiler, "gcc %s", __VERSION__);
#else
    snprintf(h->compiler, sizeof h->compiler, "unknown");
#endif
#ifdef BOOST_CFLAGS
    snprintf(h->cflags, sizeof h->cflags, "%s", BOOST_CFLAGS);
#else
    // Not passed by the build: what the preprocessor knows about this translation unit
    // (compiled with the same flags as the rest of the engine).
    snprintf(h->cflags, sizeof h->cflags, "(derived)%s%s%s%s%s%s",
#ifdef __OPTIMIZE__
             " optimized",
#else
             " -O0",
#endif
#ifdef __AVX512F__
             " avx512f",
#else
             "",
#endif
#ifdef __AVX2__
             " avx2",
#else
             "",
#endif
#ifdef __FMA__
             " fma",
#else
             "",
#endif
#ifdef _OPENMP
             " openmp-" STR(_OPENMP),
#else
             "",
#endif
#ifdef NDEBUG
             " NDEBUG"
#else
             ""
#endif
    );
#endif
    library_versions(h->library_versions, sizeof h->library_versions);
    char out[256];
    int any = 0;
    if (run_cmd("git rev-parse HEAD 2>/dev/null", out, sizeof out, NULL) == 0 && out[0]) {
        copy_trunc(h->git_commit, sizeof h->git_commit, out);
        int rc = run_cmd("git status --porcelain 2>/dev/null", out, sizeof out, &any);
        h->git_dirty = rc == 0 ? any : -1;
    } else {
        snprintf(h->git_commit, sizeof h->git_commit, "unknown");
        h->git_dirty = -1;
    }
}
