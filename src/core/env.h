// env.h — process environment set-up shared by the binaries.
#pragma once
// The two thread pools of a step, OpenMP's (our kernels) and OpenBLAS's (its pthreads, the
// GEMMs), take turns on the same cores, and either one spin-waiting after its work steals
// the cores from the other. libgomp reads OMP_WAIT_POLICY and OpenBLAS reads
// OPENBLAS_THREAD_TIMEOUT when they load, before main(): unset, OpenMP's threads spin
// (measured: sgemm inside the training loop at 87-90 GFLOP/s instead of 124-129 on 2 cores)
// and OpenBLAS's spin for 2^28 cycles (~0.1 s) after every GEMM, so the attention, loss and
// optimizer regions that follow a GEMM run beside a spinning thread per core. Each unset
// variable is set ("passive"; "4", OpenBLAS's shortest busy wait) and the binary re-execs
// itself once. Call first thing in main(). A variable the user set is left as it is.
void env_passive_waiting(char **argv);

// This process's index among the processes of its node, and their number (local_ranks may
// be NULL), from the launcher's variables: Open MPI (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE), MPICH
// and Intel MPI (MPI_LOCALRANKID/MPI_LOCALNRANKS), MVAPICH2, Slurm (SLURM_LOCALID/
// SLURM_NTASKS_PER_NODE), torchrun (LOCAL_RANK/LOCAL_WORLD_SIZE); 0 of 1 when there is none.
// The one parser of these variables: gpu_local_rank (parallel/gpu_setup.h, which prefers MPI's
// shared-memory split once MPI is up) and the CUDA back end's default device use it.
int env_local_rank(int *local_ranks);
