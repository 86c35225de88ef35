// mpitestlib.h — testlib.h for tests that run on every rank of an mpirun: CK records a
// failure on this rank (details on stderr, at most MPI_TL_MAX_DETAILS per test); RUN_ALL
// runs a test on every rank and rank 0 prints one PASS/FAIL line for the AND over ranks
// (raw MPI, so the engine's communication accounting stays untouched).
#pragma once
#include <mpi.h>
#include <stdio.h>
#include "testlib.h"

#ifndef MPI_TL_MAX_DETAILS
#define MPI_TL_MAX_DETAILS 8
#endif
// Defined by the test file: its world rank and size, and the per-test detail counter.
extern int my_rank, n_ranks, n_details;

#define CK(cond, ...) do { if (!(cond)) { tl_failed_current = 1; if (n_details++ < MPI_TL_MAX_DETAILS) { \
    fprintf(stderr, "  rank %d: %s: ", my_rank, __func__); fprintf(stderr, __VA_ARGS__); \
    fprintf(stderr, "  [%s:%d]\n", __FILE__, __LINE__); } } } while (0)

#define RUN_ALL(name) do { tl_failed_current = 0; n_details = 0; test_##name(); \
    int f_[2] = { tl_failed_current, tl_failed_current ? my_rank : n_ranks }, s_[2]; \
    CHECK_MPI(MPI_Allreduce(&f_[0], &s_[0], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)); \
    CHECK_MPI(MPI_Allreduce(&f_[1], &s_[1], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD)); \
    if (s_[0]) tl_n_fail++; else tl_n_pass++; \
    if (my_rank == 0) { if (s_[0]) printf("FAIL %s: failed on %d of %d ranks (first: rank %d; details on stderr)\n", \
        #name, s_[0], n_ranks, s_[1]); else printf("PASS %s\n", #name); fflush(stdout); } } while (0)
