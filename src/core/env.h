// env.h — process environment set-up shared by the binaries.
#pragma once
// Set-up before the libraries do their own, from the environment, when they load (before
// main()); each variable this sets, it sets only when unset, and then the binary re-execs
// itself once. Call first thing in main(). A variable the user set is left as it is.
// - The two thread pools of a step, OpenMP's (our kernels) and OpenBLAS's (its pthreads, the
//   GEMMs), take turns on the same cores, and either one spin-waiting after its work steals
//   the cores from the other. Unset, libgomp's threads spin (measured: sgemm inside the
//   training loop at 87-90 GFLOP/s instead of 124-129 on 2 cores) and OpenBLAS's spin for
//   2^28 cycles (~0.1 s) after every GEMM: OMP_WAIT_POLICY=passive, OPENBLAS_THREAD_TIMEOUT=4
//   (OpenBLAS's shortest busy wait).
//   Where the fp32 GEMMs may run on OpenMP's own threads (cpu_sgemm_on_openmp: oneDNN, MKL and
//   BLIS do; every BOOST_CPU_GEMM but openblas, since auto picks per shape), a short spin instead: GOMP_SPINCOUNT=ENV_OPENMP_SPIN (libgomp's
//   "about 100000 spins per ms": ~0.1 ms) and no OMP_WAIT_POLICY. A sleeping thread takes
//   tens of microseconds to wake, and a CoLA-60M step makes 574 back-end calls, nearly each a
//   parallel region of its own; on a Zen 4 guest the step's work outside GEMMs went from
//   14.5 % to 13.9 % of the step (docs/benchmarks.md). Neither is set when the user set either.
// - OPENBLAS_CORETYPE when OpenBLAS loaded kernels for an older ISA than this CPU has (a CPU
//   newer than the library: env_blas_core_wanted); BOOST_BLAS_CORE_CHOSEN then says what
//   OpenBLAS had chosen by itself, for the run's record.
void env_runtime_setup(char **argv);
#define ENV_OPENMP_SPIN "10000"

// OpenBLAS's kernel set for this CPU when the one it loaded needs less than the CPU has (an
// x86-64 CPU newer than the library gets its generic SSE3 "Prescott" kernels), else NULL
// (OPENBLAS_CORETYPE already set, OpenBLAS not linked, an unknown core name, not x86-64).
const char *env_blas_core_wanted(void);
// The best of OpenBLAS's kernel sets for this CPU's ISA (env_blas_core_for_isa), NULL when not x86-64.
const char *env_blas_core_best(void);
// When the user's OPENBLAS_CORETYPE names a kernel set for less ISA than this CPU has (a shell
// or cluster profile that pins "Haswell" on an AVX-512 machine halves OpenBLAS's sgemm), the
// best set's name; else NULL (unset, set by boost-c, unknown name, or not below). The user's
// choice still stands; bench and the run's record say so, and `make bench` drops it for both
// sides of its comparison (analysis/bench_paired.py).
const char *env_blas_core_user_below_best(void);
// The best of OpenBLAS's x86-64 kernel sets for an ISA: "Cooperlake" (AVX-512 + BF16),
// "SkylakeX" (AVX-512 F/BW/VL/DQ), "Haswell" (AVX2 + FMA), "Sandybridge" (AVX), else NULL.
const char *env_blas_core_for_isa(int avx, int avx2_fma, int avx512, int avx512_bf16);
// What OpenBLAS had chosen by itself when env_runtime_setup set OPENBLAS_CORETYPE for this
// process (or its launcher), else NULL: the one test the run's record and bench's output use.
const char *env_blas_core_chosen(void);
// The ISA rank of an OpenBLAS core name (0 SSE .. 4 AVX-512 BF16; case-insensitive), -1 unknown.
int env_blas_core_rank(const char *name);

// This process's index among the processes of its node, and their number (local_ranks may
// be NULL), from the launcher's variables: Open MPI (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE), MPICH
// and Intel MPI (MPI_LOCALRANKID/MPI_LOCALNRANKS), MVAPICH2, Slurm (SLURM_LOCALID; the count
// from the step's SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID, which srun always sets, else
// SLURM_NTASKS_PER_NODE, set only with --ntasks-per-node), torchrun (LOCAL_RANK/
// LOCAL_WORLD_SIZE); 0 of 1 when there is none.
// The one parser of these variables: gpu_local_rank (parallel/gpu_setup.h, which prefers MPI's
// shared-memory split once MPI is up) and the CUDA back end's default device use it.
int env_local_rank(int *local_ranks);

// Slurm's task lists ("2(x3),1": 2 tasks on each of 3 nodes, then 1; SLURM_TASKS_PER_NODE of an
// allocation, SLURM_STEP_TASKS_PER_NODE of a step): the tasks on node `node` (0-based; 0 past
// the end), and in *total and *nodes (may be NULL) the sums. -1 when spec is not such a list.
int env_slurm_tasks(const char *spec, int node, int *total, int *nodes);
