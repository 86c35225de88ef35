// env.h — process environment set-up shared by the binaries.
#pragma once
// libgomp reads OMP_WAIT_POLICY before main(): its default spin-waiting threads fight
// OpenBLAS's pthreads for the cores (measured: sgemm inside the training loop at 87-90
// GFLOP/s instead of 124-129 on 2 cores). If the variable is unset, set it to
// "passive" and re-exec this binary once. Call first thing in main().
void ensure_passive_omp(char **argv);

// This process's index among the processes of its node, and their number (local_ranks may
// be NULL), from the launcher's variables: Open MPI (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE), MPICH
// and Intel MPI (MPI_LOCALRANKID/MPI_LOCALNRANKS), MVAPICH2, Slurm (SLURM_LOCALID/
// SLURM_NTASKS_PER_NODE), torchrun (LOCAL_RANK/LOCAL_WORLD_SIZE); 0 of 1 when there is none.
// The one parser of these variables: gpu_local_rank (parallel/gpu_setup.h, which prefers MPI's
// shared-memory split once MPI is up) and the CUDA back end's default device use it.
int env_local_rank(int *local_ranks);
