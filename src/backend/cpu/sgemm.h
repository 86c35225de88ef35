// sgemm.h — the fp32 GEMM of the CPU back ends (cpu_sgemm: every fp32 product of the fp32
// table, the bf16 table's fp32 fallback, LaX's gates and the sgemm peak) and which library
// runs it.
//
//   openblas  OpenBLAS's cblas_sgemm (the kernels env_runtime_setup made sure of, core/env.h)
//   onednn    oneDNN's fp32 matmul primitive (onednn.h), one primitive per distinct GEMM
//
// BOOST_CPU_GEMM chooses, read on the first GEMM of the process:
//   auto (default)  onednn where it is the faster library on this CPU (onednn_f32_faster:
//                   AMD with AVX-512), else openblas
//   openblas, onednn  that library
// Both are deterministic and give the same bits for any thread count; they differ from each
// other by the order of the fp32 accumulation (within the tests' fp32 bounds). The choice is
// recorded with the run (runs.library_versions "gemm") and printed by build/bench.
#pragma once
#include "../backend.h"

typedef enum { SGEMM_OPENBLAS = 0, SGEMM_ONEDNN = 1 } SgemmLib;

// Chooses the library for request ("auto", "openblas", "onednn"; NULL: BOOST_CPU_GEMM, unset
// or empty = auto) and returns it; a bad value is a clear error (exit 2). Later GEMMs use it
// until the next call.
SgemmLib cpu_sgemm_choose(const char *request);
// 1 where the fp32 GEMMs run on OpenMP's threads (oneDNN: BOOST_CPU_GEMM=onednn, or auto on
// a CPU where oneDNN is the faster library), 0 for OpenBLAS's own pthreads or a bad
// BOOST_CPU_GEMM (which the first GEMM reports). Chooses nothing and never fails:
// env_runtime_setup asks before the libraries load, to set OpenMP's waiting (core/env.h).
int cpu_sgemm_on_openmp(void);
// One line: the library in use and why ("" never: chooses from the environment first).
const char *cpu_sgemm_describe(void);
// C[M,N] = alpha·op(A)·op(B) + beta·C in fp32 host memory (beta 0: C is not read).
void cpu_sgemm(const GemmArgs *g);
