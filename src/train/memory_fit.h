// memory_fit.h — does a run fit this machine's memory? The one memory pre-flight, made before
// anything is allocated or created: by `make exp` (once, before it starts the ranks), by
// build/train (rank 0 for the largest rank, before its run folder and database; every rank
// for its own part, before the trainer allocates it).
//
// The need is the dry back end's accounting of the run's largest rank (trainer_memory_report:
// nothing is allocated). Each rank on this host may have the least of:
//   host      the host's available memory (MemAvailable) divided among the ranks on it (CPU
//             back ends; a device back end checks its own allocations)
//   cgroup    the memory limit of this process's cgroup (memory.max - memory.current, divided
//             among the ranks): a scheduler's job limit (Slurm, Kubernetes)
//   process   the address-space and data-segment limits of this process (ulimit -v, ulimit -d)
//             less what it has mapped already, where the BLAS library's buffers count too:
//             OpenBLAS maps BLAS_BUFFER_BYTES per thread, and where it cannot, it retries
//             without end (a tiny run under `ulimit -v 200000` spun forever)
// A run that does not fit is refused (exit 2) naming the limit that binds; one that fits has
// OpenBLAS map its buffer at once, while the room is there.
#pragma once
#include <stddef.h>
#include "../config/config.h"

// OpenBLAS's buffer per thread: BUFFER_SIZE (32 << 22 on x86-64, common_x86_64.h of 0.3.x)
// plus the page it aligns to (memory.c).
#define BLAS_BUFFER_BYTES ((double)(128u << 20) + 4096.0)

// 1 if world rank `rank`'s part of the run (rank < 0: its largest rank's) fits; else 0 and
// what does not (the need, the limit that binds, what it leaves) in why.
int trainer_memory_fits(const Config *cfg, int rank, int ranks_on_host, char *why, size_t n);
// Refuse (exit 2) a run that does not fit: the per-stage memory table on stderr, the reason
// and a hint; for one that fits, map OpenBLAS's buffer now (one GEMM). experiment/variant: the manifest's names, for the performance model's command in
// the hint (NULL: no manifest).
void trainer_refuse_unless_fits(const Config *cfg, int rank, int ranks_on_host, const char *experiment, const char *variant);
