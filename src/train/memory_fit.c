// memory_fit.c — see memory_fit.h.
#include "memory_fit.h"

#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "trainer.h"
#include "../backend/backend.h"
#include "../core/check.h"

extern int openblas_get_num_threads(void);
extern void openblas_set_num_threads(int);

// The BLAS threads whose buffers this process has mapped (map_blas_buffers): a later check
// counts only the ones beyond them.
static int blas_mapped_threads = 0;

#define GIB 1073741824.0

// A "Key:   N kB" line of a /proc file, in bytes (-1: absent).
static double proc_kb(const char *file, const char *key) {
    FILE *f = fopen(file, "r");
    if (!f) return -1;
    char line[256], fmt[64];
    double kb = -1;
    snprintf(fmt, sizeof fmt, "%s: %%lf kB", key);
    while (fgets(line, sizeof line, f)) if (sscanf(line, fmt, &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024.0;
}

// One number from a cgroup v2 file of this process's cgroup (-1: none, or "max").
static double cgroup_value(const char *name) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[1024], path[1300] = "";
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "0::", 3)) { line[strcspn(line, "\n")] = 0; snprintf(path, sizeof path, "/sys/fs/cgroup%s/%s", line + 3, name); }
    fclose(f);
    if (!path[0] || !(f = fopen(path, "r"))) return -1;
    double v = -1;
    if (fscanf(f, "%lf", &v) != 1) v = -1;   // ("max": no limit)
    fclose(f);
    return v;
}

// The most BLAS threads this process runs GEMMs on: its own (train.threads), the pool OpenBLAS
// started with when it was loaded, and every core (the sgemm peak is measured on all of them).
static int blas_threads(const Config *c) {
    int t = c->train.threads;
    int pool = openblas_get_num_threads();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (pool > t) t = pool;
    if (cores > t) t = (int)cores;
    return t < 1 ? 1 : t;
}

int trainer_memory_fits(const Config *c, int rank, int ranks_on_host, char *why, size_t n) {
    const BackendKind *kind = backend_kind(config_device_name(c->run.device));
    int on_device = kind && kind->per_rank_device;   // its tensors are in the device's memory
    int world = c->parallel.tp * c->parallel.pp * c->parallel.dp;
    if (ranks_on_host < 1) ranks_on_host = 1;
    if (ranks_on_host > world) ranks_on_host = world;
    DType dt = c->train.precision == PRECISION_BF16 ? DT_BF16 : DT_F32;
    double need = 0;
    if (!on_device)
        for (int r = rank < 0 ? 0 : rank; r < (rank < 0 ? world : rank + 1); r++) {   // (the largest: pipeline stages differ)
            MemReport m;
            trainer_memory_report(c, r, dt, &m);
            if (m.total > need) need = m.total;
        }
    char ranks[96];
    snprintf(ranks, sizeof ranks, "%d rank%s on this host", ranks_on_host, ranks_on_host == 1 ? "" : "s");
    double host = proc_kb("/proc/meminfo", "MemAvailable");
    if (!on_device && host >= 0 && need > host / ranks_on_host) {
        snprintf(why, n, "it needs %.2f GiB per rank (the dry back end's accounting) but this host has "
                 "%.2f GiB available per rank (MemAvailable, %s)", need / GIB, host / ranks_on_host / GIB, ranks);
        return 0;
    }
    double max = cgroup_value("memory.max"), cur = cgroup_value("memory.current");
    if (!on_device && max >= 0 && cur >= 0 && need > (max - cur) / ranks_on_host) {
        snprintf(why, n, "it needs %.2f GiB per rank but this process's cgroup (a job's memory limit) leaves %.2f GiB per rank "
                 "(memory.max %.2f GiB, %.2f GiB in use, %s)", need / GIB, (max - cur) / ranks_on_host / GIB, max / GIB, cur / GIB, ranks);
        return 0;
    }
    int threads = blas_threads(c);
    double blas = (threads > blas_mapped_threads ? threads - blas_mapped_threads : 0) * BLAS_BUFFER_BYTES;
    const struct { int res; const char *name, *status, *ulimit; } lim[2] = {
        { RLIMIT_AS, "address-space", "VmSize", "ulimit -v" }, { RLIMIT_DATA, "data-segment", "VmData", "ulimit -d" } };
    for (int i = 0; i < 2; i++) {
        struct rlimit rl;
        if (getrlimit(lim[i].res, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) continue;
        double used = proc_kb("/proc/self/status", lim[i].status);
        double left = (double)rl.rlim_cur - (used > 0 ? used : 0);
        if (need + blas > left) {
            snprintf(why, n, "it needs %.2f GiB more of this process's memory (the model %.2f GiB, the BLAS library's buffers "
                     "%.2f GiB: %d thread%s x %.0f MiB) but its %s limit (%s) of %.2f GiB leaves %.2f GiB (%.2f GiB mapped already)",
                     (need + blas) / GIB, need / GIB, blas / GIB, threads, threads == 1 ? "" : "s", BLAS_BUFFER_BYTES / 1048576.0,
                     lim[i].name, lim[i].ulimit, (double)rl.rlim_cur / GIB, left > 0 ? left / GIB : 0.0, used > 0 ? used / GIB : 0.0);
            return 0;
        }
    }
    return 1;
}

// OpenBLAS maps its buffer at a thread's first GEMM and, when it cannot, retries forever. Once
// the pre-flight has found the room, one GEMM (beyond OpenBLAS's small-matrix path, which takes
// no buffer) maps it now: the process's later allocations may fail, and then they fail cleanly
// (core/check.h die_out_of_memory), never inside OpenBLAS.
static void map_blas_buffers(const Config *c) {
    enum { N = 512 };   // (large enough to be split over every thread)
    int threads = blas_threads(c), before = openblas_get_num_threads();
    if (threads <= blas_mapped_threads) return;
    float *a = xcalloc((size_t)3 * N * N, sizeof(float));
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, a + N * N, N, 0.0f, a + 2 * N * N, N);
    openblas_set_num_threads(before);
    free(a);
    blas_mapped_threads = threads;
}

void trainer_refuse_unless_fits(const Config *c, int rank, int ranks_on_host, const char *experiment, const char *variant) {
    char why[1500];
    if (trainer_memory_fits(c, rank, ranks_on_host, why, sizeof why)) { map_blas_buffers(c); return; }
    fprintf(stderr, "The memory of this run per pipeline stage (the dry back end's accounting):\n");
    trainer_memory_print(c, stderr);
    char hint[2600];
    int k = snprintf(hint, sizeof hint, "lower train.batch_size or train.threads, raise parallel.tp/pp, turn on boost.lowrank_ckpt / "
                     "boost.full_recompute, or raise the limit named");
    if (experiment && variant)
        snprintf(hint + k, sizeof hint - k, "; a paper-scale variant runs on GPUs (experiments/paper-*.yaml, docs/gpu.md), and here "
                 "its step can be priced by the performance model: make exp EXP=%s VARIANT=%s SIMULATE=1", experiment, variant);
    char who[400];
    if (variant) snprintf(who, sizeof who, "variant %s", variant);
    else snprintf(who, sizeof who, "this run");
    die_input_hint(hint, "out of memory: %s does not fit: %s; refused before anything is allocated or created", who, why);
}
