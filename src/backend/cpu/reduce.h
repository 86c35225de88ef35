// reduce.h — sums of float products in double, at memory speed and in a fixed order.
//
// Why not `#pragma omp simd reduction(+:s)`: that is ONE vector accumulator, so the loop waits
// for each double add before the next (4 cycles latency): ~1 element per cycle per thread at
// 256 bits, slower than the memory. Here element i goes to partial sum i mod RD_LANES: 32
// independent sums are 4 zmm (8 ymm) chains, enough to hide the latency. The partials are
// folded pairwise in a fixed order, so a result depends on neither the thread count nor the
// vector width (the lanes are the array's, not the compiler's). GCC keeps acc[] in registers
// and vectorises the k loop (checked with -S). Callers of these helpers should be FM_WIDE.
#pragma once
#include <stddef.h>

#define RD_LANES 32

// acc[0] = Σ acc[0..RD_LANES), pairwise (acc is consumed)
static inline double rd_fold(double *acc) {
    for (int h = RD_LANES / 2; h > 0; h /= 2)
        for (int k = 0; k < h; k++) acc[k] += acc[k + h];
    return acc[0];
}

// Σ x[i]² in double (the float → double square is exact)
static inline double rd_sumsq(const float *x, size_t n) {
    double acc[RD_LANES] = {0};
    size_t i = 0;
    for (; i + RD_LANES <= n; i += RD_LANES)
        for (int k = 0; k < RD_LANES; k++) acc[k] += (double)x[i + k] * x[i + k];
    for (int k = 0; i + k < n; k++) acc[k] += (double)x[i + k] * x[i + k];
    return rd_fold(acc);
}

// rd_sumsq(x + lo, hi - lo) of an array of rows of rl floats that is zero outside the rows r
// with live[r]: the same bits, reading only the live rows. A zero adds nothing to a partial
// sum (acc + 0·0 = acc: acc is never −0), and with lo and rl multiples of RD_LANES every
// element keeps its partial sum (its offset from lo mod RD_LANES) and its place in the order.
static inline double rd_sumsq_live(const float *x, size_t lo, size_t hi, size_t rl, const unsigned char *live) {
    double acc[RD_LANES] = {0};
    for (size_t r = lo / rl; r * rl < hi; r++) {
        if (!live[r]) continue;
        size_t a = r * rl > lo ? r * rl : lo, b = (r + 1) * rl < hi ? (r + 1) * rl : hi;
        for (size_t i = a; i < b; i += RD_LANES)
            for (int k = 0; k < RD_LANES; k++) acc[k] += (double)x[i + k] * x[i + k];
    }
    return rd_fold(acc);
}

// rd_sumsq of RD_WAYS arrays of n floats each, read at once: out[s] = rd_sumsq(x[s], n), the
// same bits (each array has its own accumulators, in the same order). One read stream per
// core leaves the memory idle between misses; four streams keep more misses in flight (2
// threads on Intel model 167: 24 GB/s against 18, the compute ~30 GB/s per core in L2).
#define RD_WAYS 4
static inline void rd_sumsq_ways(const float *const *x, size_t n, double *out) {
    double acc[RD_WAYS][RD_LANES] = {{0}};
    size_t i = 0;
    for (; i + RD_LANES <= n; i += RD_LANES)
        for (int s = 0; s < RD_WAYS; s++)
            for (int k = 0; k < RD_LANES; k++) acc[s][k] += (double)x[s][i + k] * x[s][i + k];
    for (int s = 0; s < RD_WAYS; s++) {
        for (int k = 0; i + k < n; k++) acc[s][k] += (double)x[s][i + k] * x[s][i + k];
        out[s] = rd_fold(acc[s]);
    }
}
