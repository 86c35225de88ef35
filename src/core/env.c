#include <stdlib.h>
#include <unistd.h>
#include "env.h"

void env_passive_waiting(char **argv) {
    int set = 0;
    if (!getenv("OMP_WAIT_POLICY")) { setenv("OMP_WAIT_POLICY", "passive", 1); set = 1; }
    // 2^4 cycles, OpenBLAS's least: its workers go to sleep right after a GEMM
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) { setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1); set = 1; }
    if (!set) return;
    execv("/proc/self/exe", argv);
    // exec failed (no /proc): carry on with the default policies
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
            if (!env_uint(pairs[i][1], &n) || n <= r) n = r + 1;
            if (local_ranks) *local_ranks = n;
            return r;
        }
    }
    if (local_ranks) *local_ranks = 1;
    return 0;
}
