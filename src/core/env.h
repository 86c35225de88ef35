// env.h — process environment set-up shared by the binaries.
#pragma once
// libgomp reads OMP_WAIT_POLICY before main(): its default spin-waiting threads fight
// OpenBLAS's pthreads for the cores (measured: sgemm inside the training loop at 87-90
// GFLOP/s instead of 124-129 on 2 cores). If the variable is unset, set it to
// "passive" and re-exec this binary once. Call first thing in main().
void ensure_passive_omp(char **argv);
