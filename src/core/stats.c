// stats.c — see stats.h.
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double stats_quantile_sorted(const double *v, int n, double q) {
    if (n <= 0) return NAN;
    double pos = q * (n - 1);
    int i = (int)pos;
    return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

double stats_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return stats_quantile_sorted(v, n, 0.5);
}

// The null distribution of the Mann-Whitney count U (pairs with b above a) for sizes m, n:
// c[u] = the number of the C(m+n, m) relabellings with U = u, u = 0..m·n: the coefficients of
// the Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built
// factor by factor (each partial product is [n+i choose i]_q, nonnegative). Returns P(U <= u)
// for u = 0..m·n in cdf (malloc'd).
static double *u_null_cdf(int m, int n) {
    int top = m * n;
    double *c = xcalloc((size_t)top + 1, sizeof *c);
    c[0] = 1;
    for (int i = 1; i <= m; i++) {
        int deg = i * n;   // the degree of [n+i choose i]_q
        for (int u = i; u <= deg; u++) c[u] += c[u - i];           // / (1 - q^i), as a series
        for (int u = deg; u >= n + i; u--) c[u] -= c[u - n - i];   // x (1 - q^(n+i)): a polynomial again
    }
    double total = 0;
    for (int u = 0; u <= top; u++) { if (c[u] < 0) c[u] = 0; total += c[u]; }   // (rounding of the subtractions)
    double acc = 0;
    for (int u = 0; u <= top; u++) { acc += c[u]; c[u] = acc / total; }
    return c;
}

// P(U <= u) under the null: exact up to STATS_EXACT_MAX_PAIRS pairs, else the normal
// approximation with continuity correction.
typedef struct { int m, n; double *cdf; } UNull;
static double u_cdf(const UNull *z, double u) {
    if (u < 0) return 0;
    if (z->cdf) { int k = (int)floor(u + 1e-9); return k >= z->m * z->n ? 1 : z->cdf[k]; }
    double mean = z->m * (double)z->n / 2, sd = sqrt(z->m * (double)z->n * (z->m + z->n + 1) / 12.0);
    return 0.5 * erfc(-(floor(u + 1e-9) + 0.5 - mean) / (sd * sqrt(2.0)));
}

int stats_min_runs(void) {
    double alpha2 = (1 - STATS_LEVEL) / 2;
    // the smallest U has probability 1 / C(2n, n): below alpha/2, an interval can exclude 1
    for (int n = 1; n < 64; n++) {
        double c = 1;
        for (int i = 1; i <= n; i++) c = c * (n + i) / i;
        if (1 / c <= alpha2) return n;
    }
    return 64;
}

StatsVerdict stats_compare_times(const double *a, int n_a, const double *b, int n_b) {
    StatsVerdict v = { .n_a = n_a, .n_b = n_b, .ratio = NAN, .lo = NAN, .hi = NAN, .p = NAN,
                       .min_runs = stats_min_runs(), .verdict = STATS_TOO_FEW };
    for (int i = 0; i < n_a; i++) CHECK(a[i] > 0 && isfinite(a[i]), "stats_compare_times: time %g of side a", a[i]);
    for (int j = 0; j < n_b; j++) CHECK(b[j] > 0 && isfinite(b[j]), "stats_compare_times: time %g of side b", b[j]);
    if (n_a < 1 || n_b < 1) return v;
    // the pairwise log ratios log(b_j / a_i), sorted: their median is the estimate, their
    // order statistics the interval
    size_t N = (size_t)n_a * (size_t)n_b;
    double *d = xmalloc(N * sizeof *d);
    double above = 0;   // U: pairs with b above a (a tie counts half)
    for (int i = 0; i < n_a; i++)
        for (int j = 0; j < n_b; j++) {
            double x = log(b[j]) - log(a[i]);
            d[(size_t)i * n_b + j] = x;
            above += x > 0 ? 1 : x == 0 ? 0.5 : 0;
        }
    qsort(d, N, sizeof *d, cmp_double);
    v.ratio = exp(stats_quantile_sorted(d, (int)N, 0.5));
    int m = n_a < n_b ? n_a : n_b, n = n_a < n_b ? n_b : n_a;   // U's distribution is symmetric in the sizes
    UNull z = { m, n, N <= STATS_EXACT_MAX_PAIRS ? u_null_cdf(m, n) : NULL };
    double lower = u_cdf(&z, above), upper = 1 - u_cdf(&z, ceil(above - 1e-9) - 1);   // P(U <= obs), P(U >= obs)
    v.p = fmin(1, 2 * fmin(lower, upper));
    // k: the largest count with P(U <= k) <= alpha/2; the interval is [D(k+1), D(N-k)] (1-based)
    double alpha2 = (1 - STATS_LEVEL) / 2;
    long k = -1;
    while (k + 1 < (long)N && u_cdf(&z, (double)(k + 1)) <= alpha2) k++;
    if (k >= 0) {
        v.lo = exp(d[k]);
        v.hi = exp(d[N - 1 - (size_t)k]);
        v.verdict = v.hi < 1 ? STATS_FASTER : v.lo > 1 ? STATS_SLOWER : STATS_NOT_DISTINGUISHABLE;
    }
    free(z.cdf);
    free(d);
    return v;
}

const char *stats_verdict_name(StatsVerdictKind k) {
    switch (k) {
    case STATS_FASTER: return "faster";
    case STATS_SLOWER: return "slower";
    case STATS_NOT_DISTINGUISHABLE: return "not distinguishable";
    default: return "too few runs";
    }
}

void stats_verdict_text(const StatsVerdict *v, int repeat, char *buf, size_t n) {
    char over[64];
    if (v->n_a == v->n_b) snprintf(over, sizeof over, "over %d repeat%s", v->n_a, v->n_a == 1 ? "" : "s");
    else snprintf(over, sizeof over, "over %d and %d runs", v->n_a, v->n_b);
    switch (v->verdict) {
    case STATS_FASTER:
        snprintf(buf, n, "%.1f %% faster [%.1f-%.1f %%] %s", 100 * (1 - v->ratio), 100 * (1 - v->hi), 100 * (1 - v->lo), over);
        break;
    case STATS_SLOWER:
        snprintf(buf, n, "%.1f %% slower [%.1f-%.1f %%] %s", 100 * (v->ratio - 1), 100 * (v->lo - 1), 100 * (v->hi - 1), over);
        break;
    case STATS_NOT_DISTINGUISHABLE:
        snprintf(buf, n, "not distinguishable at this spread: time ratio %.3f [%.3f, %.3f] %s", v->ratio, v->lo, v->hi, over);
        break;
    default:
        if (repeat > 0 && v->n_a == repeat && v->n_b == repeat)
            snprintf(buf, n, "REPEAT=%d: no verdict possible; use REPEAT>=%d", repeat, v->min_runs);
        else
            snprintf(buf, n, "%d and %d run%s: no verdict possible; at least %d runs of each", v->n_a, v->n_b,
                     v->n_b == 1 ? "" : "s", v->min_runs);
    }
}
