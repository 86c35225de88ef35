// gemm_choice.h — which fp32 GEMM library is the faster for one GEMM shape on this host:
// the measurement and the host's table of its results (a text file, one line per shape).
//
// A shape is the call's transposes, M, N, K, strides and the thread count. Not whether beta
// is 0: a product that stores (beta 0, a gradient's first writer) and the same product added
// into zeros (beta 1) must give the same bits, so they run on the same library; the beta a
// shape was measured with is recorded beside it. Measured by cpu_gemm_measure: every available library (gemm_libs.h) on operands of
// the shape, one warm-up call each, then rounds in which each library runs once, in an order
// that rotates from round to round; each round gives each library's time over OpenBLAS's in
// the same round (paired: a burst of other work hits the pair alike), and the median of
// those ratios over the rounds decides. A library 1.5x slower than the round's fastest in each
// of the first 3 rounds sits out the rest (its ratios are those 3 rounds'). A library other
// than the CPU's default (sgemm.h cpu_sgemm_default_lib) is taken only when, paired round by
// round against the default, its median time over the default's is CHOICE_MARGIN below 1 and
// it was faster in two thirds of the rounds: a tie, or a lead a burst of load could have made,
// keeps the default (a choice persists in the table). Every library is put to that test, and
// of those that pass, the one of the lowest median over OpenBLAS is taken.
//
// The table (cpu_gemm_table_*): a tab-separated file, appended to under an exclusive lock
// (flock) so that the processes of one host (MPI ranks, concurrent runs) measure each shape
// once and agree. Each line: host, CPU model, cores, threads, the libraries' versions, the
// shape, the choice, each library's median ratio and quartiles, rounds, load, time. A line
// of another host, CPU, core count or library set does not apply here (read as a forced
// table, every line applies: cpu_gemm_table_load's any_host).
#pragma once
#include <stdio.h>
#include "gemm_libs.h"

#define CHOICE_MARGIN 0.02

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc, threads;
} GemmKey;

typedef struct {
    GemmKey key;
    GemmLib lib;                                 // the choice
    int beta_nz;                                 // measured with beta 1 (else 0); not part of the key
    float med[GEMM_N_LIBS], q1[GEMM_N_LIBS], q3[GEMM_N_LIBS];   // time / OpenBLAS's time; NAN: not measured
    int rounds;
    double load;                                 // 1-minute load average when measured (-1: unknown)
    char when[24];                               // ISO time of the measurement
} GemmChoice;

GemmKey cpu_gemm_key(const GemmArgs *g, int threads);
int cpu_gemm_key_equal(const GemmKey *a, const GemmKey *b);
// "NT 1024x128x1376 ld 1376,1376,128 x2": a shape in a line of text.
void cpu_gemm_key_format(const GemmKey *k, char *buf, size_t n);

// Measures g's shape on the n libraries libs (each available; libs[0] must be OpenBLAS, the
// reference of the ratios) on operands of its own, and chooses (def: the library a tie
// keeps). About budget_s seconds, within 7..31 rounds.
void cpu_gemm_measure(const GemmArgs *g, const GemmLib *libs, int n, GemmLib def, double budget_s, GemmChoice *out);

// The choice from the rounds' times: tt[i][r] the seconds of libs[i] in round r (NAN: it sat
// that round out; each library ran in one round at least). Fills out's ratios, rounds and lib
// (key, beta, load and time are the caller's): of the libraries that beat the default round
// by round (the rule above), the one of the lowest median ratio; none: the default (OpenBLAS
// where def is not among libs).
enum { GEMM_MAX_ROUNDS = 31 };
void cpu_gemm_decide(const double (*tt)[GEMM_MAX_ROUNDS], int rounds, const GemmLib *libs, int n, GemmLib def, GemmChoice *out);

// The host's identity as the table's lines carry it: host name, CPU model, cores, and the
// versions of the libraries available here.
typedef struct { char host[128], cpu[128], libs[400]; int cores; } GemmHost;
void cpu_gemm_host(GemmHost *h, const GemmLib *libs, int n);

// The table's lines that apply (any_host 0: this host's identity; 1: every line) into
// *out (grown; *n entries), the last line of a shape replacing earlier ones. A malformed line
// is an input error naming the file and line. fd: an open descriptor of path (read from the
// start), or -1 to open path (a missing file is an empty table).
void cpu_gemm_table_load(const char *path, int fd, const GemmHost *h, int any_host, GemmChoice **out, int *n, int *cap);
// Appends c as one line to the open table fd (the caller holds the lock).
void cpu_gemm_table_append(const char *path, int fd, const GemmHost *h, const GemmChoice *c);
// Prints c's ratios: "openblas 1.000, onednn 0.874 (0.85-0.90), mkl -".
void cpu_gemm_ratios_format(const GemmChoice *c, char *buf, size_t n);
