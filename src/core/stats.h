// stats.h — whether two timings differ beyond their noise, from a handful of runs.
//
// The unit of replication is a run: the steps of one run share its machine state (the load,
// the clock, the other ranks' scheduling), so they are not independent samples of a
// variant's speed, and their spread says nothing about the next run (one launch measured
// online RMSNorm 2.9x slower, the next 1.2x faster, each with a narrow spread of steps). A
// run is summarised by one number, its median step time after warm-up; two variants are
// compared over those numbers with the exact Wilcoxon rank-sum (Mann-Whitney) test on their
// logarithms, and the time ratio's confidence interval is the one that test gives when
// inverted (Hodges-Lehmann / Moses: order statistics of the pairwise log ratios). Every one of
// the C(n_a + n_b, n_a) relabellings is counted (no sampling, so the answer is the same on
// every call); beyond STATS_EXACT_MAX_PAIRS the normal approximation of the same statistic.
// Under "same distribution" the interval excludes 1 with probability at most 1 - STATS_LEVEL;
// with fewer runs than stats_min_runs() of each it cannot exclude 1 at all, and the verdict
// says so instead of ranking noise. docs/database.md ("Timing verdicts") states the method.
#pragma once
#include <stddef.h>

#define STATS_LEVEL 0.95               // two-sided confidence of every verdict
#define STATS_EXACT_MAX_PAIRS 40000    // n_a x n_b up to which the null distribution is exact

typedef enum { STATS_TOO_FEW, STATS_NOT_DISTINGUISHABLE, STATS_FASTER, STATS_SLOWER } StatsVerdictKind;

typedef struct {
    int n_a, n_b;                // runs on each side
    double ratio;                // b's time / a's time: the median of the pairwise ratios b_j / a_i
    double lo, hi;               // its STATS_LEVEL confidence interval (NAN when too few runs)
    double p;                    // two-sided p-value of "a and b have the same distribution"
    int min_runs;                // the fewest runs of each side that can give a verdict
    StatsVerdictKind verdict;    // FASTER / SLOWER: b's time below / above a's (the interval
                                 // excludes 1); NOT_DISTINGUISHABLE; TOO_FEW: no verdict possible
} StatsVerdict;

// a[0..n_a), b[0..n_b): one positive, finite time per run (e.g. seconds per step).
StatsVerdict stats_compare_times(const double *a, int n_a, const double *b, int n_b);
// The fewest runs of each of two equal sides for which any verdict is possible (4 at 95 %).
int stats_min_runs(void);
// "faster", "slower", "not distinguishable", "too few runs" (the JSON's `verdict`).
const char *stats_verdict_name(StatsVerdictKind k);
// The verdict as one phrase: "12.3 % faster [4.1-19.8 %] over 4 repeats", "not distinguishable
// at this spread: time ratio 1.031 [0.902, 1.180] over 4 repeats", "REPEAT=1: no verdict
// possible; use REPEAT>=4". repeat > 0: both sides are the REPEAT runs of one launch.
void stats_verdict_text(const StatsVerdict *v, int repeat, char *buf, size_t n);

// Quantile q (0..1) of sorted v[0..n) by linear interpolation (NAN when n = 0).
double stats_quantile_sorted(const double *v, int n, double q);
// The median of v[0..n) (sorts v; the mean of the two middle values when n is even).
double stats_median(double *v, int n);
