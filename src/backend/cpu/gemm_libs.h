// gemm_libs.h — the fp32 GEMM libraries the CPU back end can run a product on, one entry
// each: OpenBLAS and oneDNN (linked), BLIS and MKL (loaded at run time where installed).
// Which one runs which product is decided in sgemm.c (per shape, by measurement on the
// host: gemm_choice.h).
//
//   openblas  OpenBLAS's cblas_sgemm on its own pthreads (the kernels env_runtime_setup made
//             sure of, core/env.h)
//   onednn    oneDNN's fp32 matmul primitive on OpenMP's threads (onednn.h)
//   blis      BLIS's bli_sgemm from Debian's libblis4-openmp (libblis.so.4), on OpenMP's threads
//   mkl       Intel MKL's cblas_sgemm from libmkl_rt (PyPI's `mkl` wheel: .ci/deps.sh --mkl puts
//             it in build/venv-mkl; else the loader's path, or the file BOOST_MKL names), GNU threading layer (OpenMP's threads), conditional
//             numerical reproducibility on (MKL_CBWR_AUTO | STRICT: the same bits run to run)
//   openblas_sliced, onednn_sliced
//             that library's one-thread kernel on each of OpenMP's threads, over one slice of C
//             each (a grid of slices, gemm_libs.c slice_grid; oneDNN's through dnnl_sgemm, which shares no
//             state between concurrent calls): a product whose M x N is small beside K, or whose
//             K is short, keeps every core busy where the library's own threading leaves them
//             idle (a 2-vCPU Zen 3 guest took them for 11 of the CoLA step's 16 shapes, and
//             its step ran 4.4 % shorter: docs/benchmarks.md section 2). Each slice's bits
//             follow the slicing, so a sliced library's bits follow the thread count.
// The two loaded libraries are opened RTLD_LOCAL | RTLD_DEEPBIND, so their BLAS symbols and
// OpenBLAS's never stand in for each other.
#pragma once
#include <stddef.h>
#include "../backend.h"

typedef enum { GEMM_OPENBLAS = 0, GEMM_ONEDNN, GEMM_BLIS, GEMM_MKL, GEMM_OPENBLAS_SLICED, GEMM_ONEDNN_SLICED, GEMM_N_LIBS } GemmLib;

// "openblas", "onednn", "blis", "mkl", "openblas_sliced", "onednn_sliced".
const char *cpu_gemm_lib_name(GemmLib l);
// Every name, "openblas, onednn, ..., onednn_sliced" (for messages).
const char *cpu_gemm_lib_names(void);
// The library a name means (as cpu_gemm_lib_name), -1 for none.
int cpu_gemm_lib_by_name(const char *name);
// 1 when the library can run here (loading it the first time), else 0 with the reason in
// why (may be NULL): not installed, or no AVX-512 kernels where the CPU has AVX-512.
int cpu_gemm_lib_available(GemmLib l, char *why, size_t why_n);
// 1 where the library is installed but runs kernels for a lower ISA than the CPU has (BLIS's
// haswell kernels on an AVX-512 CPU: Debian's 0.9.0 has no skx set), with the reason in why:
// auto leaves it out of the measurement (it can still be forced).
int cpu_gemm_lib_below_cpu(GemmLib l, char *why, size_t why_n);
// "OpenBLAS 0.3.21 Cooperlake", "oneDNN 2.6.3", "BLIS 0.9.0 haswell", "MKL 2026.2.0",
// "OpenBLAS 0.3.21 Cooperlake sliced": the version and kernels this process runs (of an
// available library).
const char *cpu_gemm_lib_version(GemmLib l);
// 1 where the library's threads are OpenMP's (all but OpenBLAS on its own pthreads).
int cpu_gemm_lib_on_openmp(GemmLib l);
// C[M,N] = alpha·op(A)·op(B) + beta·C on library l (available; M, N, K ≥ 1), with as many
// threads as OpenMP's current maximum.
void cpu_gemm_lib_run(GemmLib l, const GemmArgs *g);
