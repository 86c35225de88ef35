// test_stats.c — the timing verdicts of core/stats.h on generated cases (seeded, so every run
// of this binary sees the same cases): the exact null distribution against brute-force
// enumeration of every relabelling; equal distributions called different at most at the
// stated rate; shifted ones called faster or slower with intervals that hold the true ratio
// at the stated coverage; too few runs never given a verdict; the normal approximation
// beyond the exact range; the phrases.
#include "testlib.h"
#include "core/rng.h"
#include "core/stats.h"

TL_MAIN_DEFS

static double normal(Rng *r) {   // Box-Muller from two uniforms in (0, 1]
    double u = (rng_next(r) >> 11) * (1.0 / 9007199254740992.0), v = (rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}
// n run times: scale x exp(sigma x N(0, 1)) (a multiplicative noise: a shift on the log scale)
static void draw(Rng *r, double *x, int n, double scale, double sigma) {
    for (int i = 0; i < n; i++) x[i] = scale * exp(sigma * normal(r));
}

// Brute force: the two-sided p-value of the rank-sum statistic by enumerating every way of
// choosing which n_a of the pooled values are a's (bit masks; sizes up to 6 + 6).
static double brute_p(const double *a, int na, const double *b, int nb) {
    double pool[12];
    int N = na + nb;
    for (int i = 0; i < na; i++) pool[i] = a[i];
    for (int j = 0; j < nb; j++) pool[na + j] = b[j];
    double obs = 0;
    for (int i = 0; i < na; i++) for (int j = 0; j < nb; j++) obs += b[j] > a[i];
    long le = 0, ge = 0, total = 0;
    for (int mask = 0; mask < (1 << N); mask++) {
        if (__builtin_popcount((unsigned)mask) != na) continue;
        double u = 0;
        for (int i = 0; i < N; i++) if (mask >> i & 1) for (int j = 0; j < N; j++) if (!(mask >> j & 1)) u += pool[j] > pool[i];
        total++; le += u <= obs; ge += u >= obs;
    }
    double p = 2.0 * (le < ge ? le : ge) / total;
    return p < 1 ? p : 1;
}

TEST(stats_exact_null_matches_enumeration) {
    Rng r = { 0x57a750001ull };
    int checked = 0;
    for (int na = 1; na <= 6; na++)
        for (int nb = 1; nb <= 6; nb++)
            for (int rep = 0; rep < 4; rep++) {
                double a[6], b[6];
                draw(&r, a, na, 1.0, 0.3);
                draw(&r, b, nb, rep < 2 ? 1.0 : 1.3, 0.3);   // null and shifted: every part of the distribution
                StatsVerdict v = stats_compare_times(a, na, b, nb);
                double p = brute_p(a, na, b, nb);
                EXPECT(fabs(v.p - p) < 1e-12, "sizes %d, %d: p %.15g, enumeration %.15g", na, nb, v.p, p);
                checked++;
            }
    EXPECT(checked == 144, "cases %d", checked);
}

// Equal distributions: "faster" or "slower" at most at 1 - STATS_LEVEL (plus three binomial
// standard deviations of the estimate), over sizes at and above the minimum, scales and spreads.
TEST(stats_equal_distributions_not_distinguishable_at_the_stated_rate) {
    Rng r = { 0x57a750002ull };
    const int cases = 4000;
    int called = 0, too_few = 0;
    for (int c = 0; c < cases; c++) {
        int na = 4 + (int)(rng_next(&r) % 6), nb = 4 + (int)(rng_next(&r) % 6);
        double scale = 0.01 + (rng_next(&r) % 1000) * 1e-3, sigma = 0.02 + (rng_next(&r) % 100) * 0.005;
        double a[16], b[16];
        draw(&r, a, na, scale, sigma);
        draw(&r, b, nb, scale, sigma);
        StatsVerdict v = stats_compare_times(a, na, b, nb);
        called += v.verdict == STATS_FASTER || v.verdict == STATS_SLOWER;
        too_few += v.verdict == STATS_TOO_FEW;
        if (v.verdict == STATS_NOT_DISTINGUISHABLE)
            EXPECT(v.lo <= 1 && v.hi >= 1 && v.lo <= v.ratio && v.ratio <= v.hi, "not distinguishable but [%g, %g] (ratio %g)",
                   v.lo, v.hi, v.ratio);
    }
    double alpha = 1 - STATS_LEVEL, rate = (double)called / cases, bound = alpha + 3 * sqrt(alpha * (1 - alpha) / cases);
    EXPECT(rate <= bound, "equal distributions called different in %.2f %% of %d cases (stated: at most %.0f %%)",
           100 * rate, cases, 100 * alpha);
    EXPECT(too_few == 0, "%d cases with at least %d runs each got no verdict", too_few, stats_min_runs());
    printf("  equal distributions: %d of %d called different (%.2f %%, bound %.2f %%)\n", called, cases, 100 * rate, 100 * bound);
}

// A true time ratio rho (b = rho x a in distribution): faster when rho < 1, slower when > 1,
// for effects well above the noise; the interval holds rho at the stated coverage.
TEST(stats_shifted_distributions_called_with_the_true_ratio_inside) {
    Rng r = { 0x57a750003ull };
    const int cases = 3000;
    int right = 0, covered = 0;
    for (int c = 0; c < cases; c++) {
        int na = 5 + (int)(rng_next(&r) % 5), nb = 5 + (int)(rng_next(&r) % 5);
        double u = (rng_next(&r) % 10000) / 10000.0;
        double rho = c % 2 ? 0.5 + 0.45 * u : 1.05 + 0.95 * u;   // 0.5..0.95 or 1.05..2
        double sigma = 0.005 + 0.01 * ((rng_next(&r) % 100) / 100.0);
        double a[16], b[16];
        draw(&r, a, na, 0.2, sigma);
        draw(&r, b, nb, 0.2 * rho, sigma);
        StatsVerdict v = stats_compare_times(a, na, b, nb);
        right += v.verdict == (rho < 1 ? STATS_FASTER : STATS_SLOWER);
        covered += v.lo <= rho && rho <= v.hi;
    }
    EXPECT(right == cases, "%d of %d clear effects called the right way", right, cases);
    double level = STATS_LEVEL, cov = (double)covered / cases, bound = level - 3 * sqrt(level * (1 - level) / cases);
    EXPECT(cov >= bound, "the interval held the true ratio in %.2f %% of %d cases (stated: %.0f %%)", 100 * cov, cases, 100 * level);
    printf("  shifted: %d of %d called right; the interval held the true ratio in %.2f %% (bound %.2f %%)\n", right, cases,
           100 * cov, 100 * bound);
}

// Fewer runs than the minimum: never a verdict, whatever the difference; the phrase says how many.
TEST(stats_too_few_runs_give_no_verdict) {
    EXPECT(stats_min_runs() == 4, "minimum runs %d (1/C(8,4) = 1/70 <= 2.5 %% < 1/C(6,3) = 1/20)", stats_min_runs());
    Rng r = { 0x57a750004ull };
    for (int na = 1; na < stats_min_runs(); na++)
        for (int nb = 1; nb < stats_min_runs(); nb++) {
            double a[8], b[8];
            draw(&r, a, na, 1.0, 0.001);
            draw(&r, b, nb, 3.0, 0.001);   // three times slower, no noise to speak of
            StatsVerdict v = stats_compare_times(a, na, b, nb);
            EXPECT(v.verdict == STATS_TOO_FEW && isnan(v.lo) && fabs(v.ratio - 3) < 0.01, "%d and %d runs: verdict %s, ratio %g",
                   na, nb, stats_verdict_name(v.verdict), v.ratio);
        }
    double a[1] = { 0.1 }, b[1] = { 0.29 };
    StatsVerdict v = stats_compare_times(a, 1, b, 1);
    char t[256];
    stats_verdict_text(&v, 1, t, sizeof t);
    EXPECT(!strcmp(t, "REPEAT=1: no verdict possible; use REPEAT>=4"), "REPEAT=1 phrase: %s", t);
    double a2[2] = { 0.1, 0.12 }, b3[3] = { 0.2, 0.21, 0.19 };
    v = stats_compare_times(a2, 2, b3, 3);
    stats_verdict_text(&v, 0, t, sizeof t);
    EXPECT(!strcmp(t, "2 and 3 runs: no verdict possible; at least 4 runs of each"), "phrase without a launch: %s", t);
    v = stats_compare_times(a, 0, b, 1);
    EXPECT(v.verdict == STATS_TOO_FEW && isnan(v.ratio), "an empty side: %s", stats_verdict_name(v.verdict));
}

// Beyond the exact range (n_a x n_b > STATS_EXACT_MAX_PAIRS): the normal approximation keeps
// the rate and finds a 2 % effect that 250 runs a side resolve.
TEST(stats_normal_approximation_beyond_the_exact_range) {
    Rng r = { 0x57a750005ull };
    enum { N = 250 };
    EXPECT(N * N > STATS_EXACT_MAX_PAIRS, "the case is beyond the exact range");
    static double a[N], b[N];
    int called = 0, found = 0;
    const int cases = 100;
    for (int c = 0; c < cases; c++) {
        draw(&r, a, N, 0.1, 0.05);
        draw(&r, b, N, 0.1, 0.05);
        StatsVerdict v = stats_compare_times(a, N, b, N);
        called += v.verdict == STATS_FASTER || v.verdict == STATS_SLOWER;
        draw(&r, b, N, 0.098, 0.05);
        v = stats_compare_times(a, N, b, N);
        found += v.verdict == STATS_FASTER && v.lo <= 0.98 && 0.98 <= v.hi;
    }
    double alpha = 1 - STATS_LEVEL;
    EXPECT(called <= cases * (alpha + 3 * sqrt(alpha * (1 - alpha) / cases)), "equal: %d of %d called different", called, cases);
    EXPECT(found >= cases * 0.8, "a 2 %% effect found with the ratio inside in %d of %d cases", found, cases);
}

TEST(stats_phrases) {
    StatsVerdict v = { .n_a = 4, .n_b = 4, .ratio = 0.877, .lo = 0.80, .hi = 0.96, .min_runs = 4, .verdict = STATS_FASTER };
    char t[256];
    stats_verdict_text(&v, 4, t, sizeof t);
    EXPECT(!strcmp(t, "12.3 % faster [4.0-20.0 %] over 4 repeats"), "faster: %s", t);
    v.ratio = 1.5; v.lo = 1.2; v.hi = 1.9; v.verdict = STATS_SLOWER; v.n_b = 6;
    stats_verdict_text(&v, 0, t, sizeof t);
    EXPECT(!strcmp(t, "50.0 % slower [20.0-90.0 %] over 4 and 6 runs"), "slower: %s", t);
    v.ratio = 1.031; v.lo = 0.902; v.hi = 1.18; v.verdict = STATS_NOT_DISTINGUISHABLE;
    stats_verdict_text(&v, 0, t, sizeof t);
    EXPECT(!strcmp(t, "not distinguishable at this spread: time ratio 1.031 [0.902, 1.180] over 4 and 6 runs"), "same: %s", t);
    double x[5] = { 3, 1, 2, 5, 4 };
    EXPECT(stats_median(x, 5) == 3 && x[0] == 1 && x[4] == 5, "median of 5 (sorted in place)");
    EXPECT(stats_median(x, 4) == 2.5, "median of 4: the mean of the middle two");
    EXPECT(fabs(stats_quantile_sorted(x, 5, 0.9) - 4.6) < 1e-12 && isnan(stats_quantile_sorted(x, 0, 0.5)), "quantiles");
}

int main(void) {
    RUN(stats_exact_null_matches_enumeration);
    RUN(stats_equal_distributions_not_distinguishable_at_the_stated_rate);
    RUN(stats_shifted_distributions_called_with_the_true_ratio_inside);
    RUN(stats_too_few_runs_give_no_verdict);
    RUN(stats_normal_approximation_beyond_the_exact_range);
    RUN(stats_phrases);
    TL_EXIT();
}
