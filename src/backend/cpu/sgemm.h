// sgemm.h — the fp32 GEMM of the CPU back ends (cpu_sgemm: every fp32 product of the fp32
// table, the bf16 table's fp32 fallback, LaX's gates and the sgemm peak) and which library
// runs each product (gemm_libs.h: openblas, onednn, blis, mkl and the first two sliced).
//
// BOOST_CPU_GEMM chooses, read on the first GEMM of the process:
//   auto (default)  per shape, the faster library on this host: the host's table
//                   (gemm_choice.h; BOOST_CPU_GEMM_CACHE, default runs/gemm-choices.tsv beside
//                   the default run database) names it, and a shape the table lacks is measured
//                   on its first use and added, under a file lock (the ranks of a host agree).
//                   Where the table cannot be written (no folder for it, or a read-only
//                   file) nothing is measured: a shape it lacks runs on the CPU's default
//                   (cpu_sgemm_default_lib), and the line says so.
//   openblas, onednn, blis, mkl, openblas_sliced, onednn_sliced
//                   that library for every product (one not installed: exit 2)
//   table:PATH      per shape as the table at PATH says (every line of it, any host), never
//                   measuring; a shape it lacks runs on the CPU's default (said once on stderr)
// Every library is deterministic for a given thread count; they differ from each other by
// the order of the fp32 accumulation (within the tests' fp32 bounds), so a run's bits follow
// the table: a resumed run on the same host reads the same table and keeps them. The mode and
// the table are recorded with the run (runs.library_versions "gemm") and printed by build/bench;
// the shapes a process ran and their libraries by cpu_sgemm_print_choices.
#pragma once
#include <stdio.h>
#include "../backend.h"
#include "gemm_libs.h"

#define SGEMM_PER_SHAPE GEMM_N_LIBS   // cpu_sgemm_choose's answer for auto and table:PATH

// Chooses the mode for request (NULL: BOOST_CPU_GEMM, unset or empty = auto) and returns a
// GemmLib (forced) or SGEMM_PER_SHAPE; a bad value is a clear error (exit 2). Forgets the
// shapes decided before. Later GEMMs use it until the next call.
int cpu_sgemm_choose(const char *request);
// "openblas", ... or "auto", "table": the mode in one word (chooses from the environment first).
const char *cpu_sgemm_mode_name(void);
// The CPU's default library, the one a tie keeps and a shape without a table runs on:
// oneDNN on AMD with AVX-512 (onednn_f32_faster), else OpenBLAS; why (may be NULL) says so.
GemmLib cpu_sgemm_default_lib(char *why, size_t why_n);
// 1 where the fp32 GEMMs run on OpenMP's threads (every mode but BOOST_CPU_GEMM=openblas),
// 0 for OpenBLAS's own pthreads or a bad BOOST_CPU_GEMM (which the first GEMM reports).
// Chooses nothing and never fails: env_runtime_setup asks before the libraries load, to set
// OpenMP's waiting (core/env.h).
int cpu_sgemm_on_openmp(void);
// One line: the mode, the libraries and the table (chooses from the environment first).
const char *cpu_sgemm_describe(void);
// C[M,N] = alpha·op(A)·op(B) + beta·C in fp32 host memory (beta 0: C is not read), on the
// library the mode gives this shape.
void cpu_sgemm(const GemmArgs *g);
// The library cpu_sgemm runs g's shape on (deciding it as cpu_sgemm would: a measurement in
// auto mode when the table lacks it).
GemmLib cpu_sgemm_lib_for(const GemmArgs *g);
// The shapes this process ran since the mode was chosen, one markdown table row each: the
// shape, calls, the library, where the choice came from, each library's time over
// OpenBLAS's. Nothing when none ran.
void cpu_sgemm_print_choices(FILE *f);
