#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "env.h"

// OpenBLAS's own report of the kernels it loaded. Weak: the fuzz harnesses link core/ without
// OpenBLAS, and there is nothing to choose then.
extern char *openblas_get_corename(void) __attribute__((weak));
// The CPU back end's answer to "do the fp32 GEMMs run on OpenMP's threads?" (backend/cpu/sgemm.h).
// Weak, like the above: a binary without the CPU back end keeps passive waiting.
extern int cpu_sgemm_on_openmp(void) __attribute__((weak));

void env_runtime_setup(char **argv) {
    int set = 0;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
        if (cpu_sgemm_on_openmp && cpu_sgemm_on_openmp()) setenv("GOMP_SPINCOUNT", ENV_OPENMP_SPIN, 1);
        else setenv("OMP_WAIT_POLICY", "passive", 1);
        set = 1;
    }
    // 2^4 cycles, OpenBLAS's least: its workers go to sleep right after a GEMM
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) { setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1); set = 1; }
    const char *core = env_blas_core_wanted();
    if (core) {
        // what OpenBLAS chose by itself, for the run's record (store/host.c) and bench's header
        setenv("BOOST_BLAS_CORE_CHOSEN", openblas_get_corename(), 1);
        setenv("OPENBLAS_CORETYPE", core, 1);
        set = 1;
    }
    if (!set) return;
    execv("/proc/self/exe", argv);
    // exec failed (no /proc): carry on with the default policies
    if (core) unsetenv("OPENBLAS_CORETYPE"), unsetenv("BOOST_BLAS_CORE_CHOSEN");
}

// A variable holding a non-negative integer (at most 2^24): 1 and *out, else 0.
static int env_uint(const char *name, int *out) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > (1 << 24)) return 0;
    *out = (int)x;
    return 1;
}

int env_slurm_tasks(const char *spec, int node, int *total, int *nodes) {
    if (!spec || !*spec) return -1;
    int sum = 0, count = 0, here = -1;
    const char *p = spec;
    for (;;) {
        char *end;
        long t = strtol(p, &end, 10), rep = 1;
        if (end == p || t < 0 || t > (1 << 24)) return -1;
        p = end;
        if (*p == '(') {   // "2(x3)": 2 tasks on each of 3 nodes
            if (p[1] != 'x') return -1;
            rep = strtol(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || rep < 1 || rep > (1 << 20)) return -1;
            p = end + 1;
        }
        if (node >= count && node < count + rep) here = (int)t;
        sum += (int)(t * rep);
        count += (int)rep;
        if (sum > (1 << 24)) return -1;
        if (!*p) break;
        if (*p++ != ',') return -1;
    }
    if (total) *total = sum;
    if (nodes) *nodes = count;
    return here < 0 ? 0 : here;
}

int env_local_rank(int *local_ranks) {
    static const char *const pairs[][2] = {
        { "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE" },
        { "MPI_LOCALRANKID", "MPI_LOCALNRANKS" },
        { "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE" },
        { "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE" },
        { "LOCAL_RANK", "LOCAL_WORLD_SIZE" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        int r, n;
        if (env_uint(pairs[i][0], &r)) {
            int node;
            // srun sets SLURM_NTASKS_PER_NODE only when it was asked for (--ntasks-per-node);
            // the step's own list "2(x3),1", indexed by this node, always holds the count
            if (!strcmp(pairs[i][0], "SLURM_LOCALID") && env_uint("SLURM_NODEID", &node) &&
                (n = env_slurm_tasks(getenv("SLURM_STEP_TASKS_PER_NODE"), node, NULL, NULL)) > r) {
                if (local_ranks) *local_ranks = n;
                return r;
            }
            if (!env_uint(pairs[i][1], &n) || n <= r) n = r + 1;
            if (local_ranks) *local_ranks = n;
            return r;
        }
    }
    if (local_ranks) *local_ranks = 1;
    return 0;
}

// --- OpenBLAS's kernel set ----------------------------------------------------------------
// A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU's family and model when it loads; a
// model newer than the library (Debian 12's 0.3.21 on an Emerald Rapids Xeon, family 6 model
// 207) gets its generic "Prescott" SSE3 kernels: the sgemm peak read 41-44 GFLOP/s there
// against 222-250 with the AVX-512 kernels (2026-12-02, docs/benchmarks.md). The ISA the
// kernels need is what matters, so the kernel set is judged by its rank below.
static const struct { const char *name; int rank; } blas_cores[] = {
    { "Katmai", 0 }, { "Coppermine", 0 }, { "Northwood", 0 }, { "Prescott", 0 }, { "Banias", 0 },
    { "Atom", 0 }, { "Core2", 0 }, { "Penryn", 0 }, { "Dunnington", 0 }, { "Nehalem", 0 },
    { "Opteron", 0 }, { "Barcelona", 0 }, { "Bobcat", 0 },
    { "Sandybridge", 1 }, { "Bulldozer", 1 }, { "Piledriver", 1 }, { "Steamroller", 1 },
    { "Excavator", 1 },
    { "Haswell", 2 }, { "Zen", 2 },
    { "SkylakeX", 3 },
    { "Cooperlake", 4 }, { "SapphireRapids", 4 },
};
static const char *const blas_core_of_rank[] = { NULL, "Sandybridge", "Haswell", "SkylakeX", "Cooperlake" };

int env_blas_core_rank(const char *name) {
    if (!name) return -1;
    for (size_t i = 0; i < sizeof blas_cores / sizeof *blas_cores; i++)
        if (strcasecmp(name, blas_cores[i].name) == 0) return blas_cores[i].rank;
    return -1;
}

const char *env_blas_core_for_isa(int avx, int avx2_fma, int avx512, int avx512_bf16) {
    int rank = avx512 && avx512_bf16 ? 4 : avx512 ? 3 : avx2_fma ? 2 : avx ? 1 : 0;
    return blas_core_of_rank[rank];
}

const char *env_blas_core_best(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return env_blas_core_for_isa(
        __builtin_cpu_supports("avx"), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"),
        __builtin_cpu_supports("avx512bf16"));
#else
    return NULL;
#endif
}

const char *env_blas_core_wanted(void) {
    const char *user = getenv("OPENBLAS_CORETYPE");
    if ((user && *user) || !openblas_get_corename) return NULL;   // the user's choice stands (empty: none)
    const char *best = env_blas_core_best();
    int have = env_blas_core_rank(openblas_get_corename());
    // An unknown name is newer than this table (or not x86): OpenBLAS knows best then.
    if (!best || have < 0 || have >= env_blas_core_rank(best)) return NULL;
    return best;
}

const char *env_blas_core_user_below_best(void) {
    const char *user = getenv("OPENBLAS_CORETYPE"), *best = env_blas_core_best();
    if (!user || !*user || env_blas_core_chosen() || !best) return NULL;
    int rank = env_blas_core_rank(user);
    return rank >= 0 && rank < env_blas_core_rank(best) ? best : NULL;
}

const char *env_blas_core_chosen(void) {
    const char *forced = getenv("OPENBLAS_CORETYPE"), *chosen = getenv("BOOST_BLAS_CORE_CHOSEN");
    return forced && *forced && chosen && *chosen ? chosen : NULL;
}
