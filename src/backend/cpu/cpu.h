// cpu.h — pieces shared by the CPU back end's fp32 table (cpu.c) and its bf16 table
// (cpu_bf16.c). Internal to src/backend/cpu.
#pragma once
#include "../backend.h"
#include "sgemm.h"

void *cpu_alloc(Backend *b, size_t bytes);
void cpu_free(Backend *b, void *p);
void cpu_zero(Backend *b, void *p, size_t bytes);
void cpu_copy(Backend *b, void *dst, const void *src, size_t bytes);
void cpu_copy2d(Backend *b, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows);
void cpu_sync(Backend *b);
void cpu_cast(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n);
// gemm_into's D ≠ C on host memory: copies C into D (es bytes per element) unless beta is 0
// and returns g's arguments in place in D (C = D, ldc = ldd).
GemmArgs cpu_gemm_into_args(const GemmArgs *g, void *D, int ldd, size_t es);
void cpu_op_xent_rescale(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N);
void cpu_op_xent_loss(Backend *b, double *loss, float *losses, const double *sumexp, const float *gmax, const double *tlogit,
                   int N, int accumulate);

extern const BackendOps cpu_bf16_ops;
// The bf16 table's GEMM paths, one line (Backend.gemm_library): chooses from the environment
// (with its stderr line) when no GEMM has chosen yet.
const char *cpu_bf16_gemm_library(Backend *b);
