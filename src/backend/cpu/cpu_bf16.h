// cpu_bf16.h — how the bf16-storage CPU back end (cpu_bf16.c) runs its GEMMs.
//
//   bf16     bf16 arithmetic: oneDNN's matmul on the bf16 inputs as stored (AMX or
//            AVX512-BF16), fp32 accumulation, the output rounded to bf16 once
//   fp32     the inputs widened to fp32, OpenBLAS sgemm, the output rounded to bf16 once
//
// Both see the same bf16 inputs, and a product of two bf16 values is exact in fp32, so
// the two differ by the order of the fp32 accumulation (and bf16's denormals, which the
// bf16 units flush to zero) and by where the final rounding to bf16 falls
// (docs/cpu-bf16.md states the bounds the tests check).
//
// BOOST_CPU_BF16_GEMM chooses, read on the first GEMM of the process:
//   auto (default)  bf16 where oneDNN's bf16 matmul is the faster path on this CPU (AMX, or
//                   AVX512-BF16 on AMD: onednn_bf16_faster), else fp32
//   bf16            bf16 or an error naming what is missing
//   fp32            fp32 (the reference; forces the fallback)
// One line on stderr says which path the process uses and why.
#pragma once
#include <stddef.h>

typedef enum { BF16_GEMM_FP32 = 0, BF16_GEMM_BF16 = 1 } Bf16GemmPath;

// Chooses the path for request ("auto", "bf16", "fp32"; NULL: BOOST_CPU_BF16_GEMM, unset =
// auto) and returns it; a bad value or an unavailable "bf16" is a clear error. Later GEMMs
// use it until the next call. quiet: no log line.
Bf16GemmPath cpu_bf16_gemm_choose(const char *request, int quiet);
// 1 when this CPU has bf16 arithmetic at all (what "bf16" needs), whatever auto would take.
int cpu_bf16_has_units(void);
// The line logged for the current path ("" before the first choice).
const char *cpu_bf16_gemm_describe(void);
