// onednn.h — GEMMs on the CPU through oneDNN's matmul primitive, in fp32 or in bf16.
// bf16: AMX tiles (TDPBF16PS) or AVX512-BF16 dot products (VDPBF16PS), whichever oneDNN's
// own CPU dispatch picks (it also asks Linux for the AMX tile state, ARCH_REQ_XCOMP_PERM).
// Products of two bf16 values are exact in fp32 and are accumulated in fp32; the output is
// rounded to bf16 once. Used by the bf16-storage CPU back end (cpu_bf16.c). fp32: the fp32
// GEMM of the CPU back ends where it is the faster library (sgemm.c).
#pragma once
#include <stddef.h>
#include "../backend.h"

// 1 when oneDNN's effective ISA on this CPU has bf16 arithmetic (AVX512-BF16 or AMX);
// else 0 with the reason in why. isa (may be NULL) gets the ISA's name either way.
int onednn_bf16_supported(char *isa, size_t isa_n, char *why, size_t why_n);

// Of a CPU with bf16 arithmetic (onednn_bf16_supported): 1 where oneDNN's bf16 matmul is
// the faster path, so `auto` takes it (cpu_bf16.h), else 0 with the reason in why. Measured
// (docs/cpu-bf16.md): AMX tiles (a Sapphire Rapids-class guest, CoLA step 1.99x fp32) and
// AVX512-BF16 on AMD Zen 4 (1.85x) are faster; AVX512-BF16 alone on Intel (an Emerald
// Rapids guest without AMX exposed) ran the GEMMs at 0.74x sgemm and the step at 0.58x.
// Zen 4's VDPBF16PS does twice an FMA's multiply-adds at the same rate; Intel's does not
// beat its two FMA ports. Decided by the CPU, never by timing, so a run's arithmetic does
// not depend on the machine's load.
int onednn_bf16_faster(char *why, size_t why_n);

// "oneDNN 2.6.3": the library this process loaded.
const char *onednn_version(void);

// Of a CPU with AVX-512 (oneDNN's effective ISA avx512_core or above): 1 where oneDNN's fp32
// matmul is the faster fp32 GEMM, so cpu_sgemm's `auto` takes it (sgemm.h), else 0 with the
// reason in why. Measured per GEMM shape of the CoLA and dense steps against OpenBLAS 0.3.21
// (docs/benchmarks.md): on AMD Zen 4 oneDNN 2.6.3 was faster on every shape (1.01-1.19x, the
// 2048^3 square 1.04x); on an Intel Emerald Rapids guest it was faster on the skinny factor
// GEMMs and slower on the LM head (0.81-0.90x), even over the step. From the CPU, never from
// a timing: a run's arithmetic does not depend on the machine's load.
int onednn_f32_faster(char *why, size_t why_n);

// C[M,N] = alpha·op(A)·op(B) + beta·C, every matrix of element type dt (DT_F32 or DT_BF16;
// GemmArgs' row-major convention; beta 0: C is not read). One matmul primitive per distinct
// GEMM, created on first use. M, N, K ≥ 1. Not thread-safe: called from one thread (each op
// runs threaded inside, on OpenMP's threads). fp32: the same bits run to run at one thread
// count; across thread counts only where onednn_f32_thread_invariant says so.
void onednn_gemm(const GemmArgs *g, DType dt);
// The fp32 product through oneDNN's BLAS-like dnnl_sgemm (no primitive, no shared state: safe
// to call from several threads at once), on one thread when called inside an OpenMP region.
void onednn_sgemm(const GemmArgs *g);

// Whether oneDNN's fp32 matmul gives the same bits for 1 and 2 threads on this CPU: measured
// so with its AVX-512 kernels (AMD Zen 4, Intel models 167 and 207); its AVX2 kernels split a
// skinny product's work another way per thread count (AMD Zen 3: 60 of 400 generated shapes
// differed, N < 64 with K > 120). Else 0 and the reason in why. (Nothing in the engine needs
// it: the per-shape choice is keyed by the thread count, tests/test_sgemm.c asserts it.)
int onednn_f32_thread_invariant(char *why, size_t why_n);

// Primitives held now (each distinct GEMM of the run is one, at most the cache's bound).
int onednn_cached(void);
