// crossentropy.c — softmax cross-entropy over the (local columns of the) vocabulary, in the
// pieces that a vocabulary-parallel head needs (Megatron): a local pass, the all-reduces of
// the maxima and of the sums (the caller's, model/head.c), the loss, the gradient; and, where
// the vocabulary is not split (tp = 1), the loss and its gradient in one pass (xent_fused).
//
// At N = 1024 tokens and V = 32000 the logits are 131 MB: these passes are memory- and
// exp-bound, so each row is handled by one thread start to finish while it sits in L2
// (128 KB). Split over TP ranks (tp > 1), the forward reads it once from DRAM (then twice
// from L2: max, then Σexp) and the backward reads it once more and writes the gradient in
// place: the forward's statistics must cross the TP all-reduces (max, then the sums) before
// any probability is known, so the gradient pass cannot join the forward's — two passes over
// the logits in memory, the least a vocabulary-parallel loss allows. At tp = 1 nothing sits
// between them: xent_fused reads each row from DRAM once, takes its statistics from L2 and
// writes the gradient over it — one pass (one read and one write of the logits). What
// remains is the exp (32M per pass at this shape): FM_VEC's exp at the build's widest vectors
// (fastmath.h; the same exps, bit for bit, at 16 or 8 lanes), and the loops left to GCC are
// FM_WIDE. The three entry points share the row code below, so the fused pass computes the
// same bits as the two ops.
#include <math.h>
#include "kernels.h"
#include "fastmath.h"
#include "reduce.h"

#define XENT_ROW static inline __attribute__((always_inline))

// The max is exact in any order: RD_LANES partial maxima only break the latency chain of one.
XENT_ROW float xent_row_max(const float *x, int V) {
    float m[RD_LANES];
    for (int k = 0; k < RD_LANES; k++) m[k] = -INFINITY;
    int j = 0;
    for (; j + RD_LANES <= V; j += RD_LANES)
        for (int k = 0; k < RD_LANES; k++) m[k] = x[j + k] > m[k] ? x[j + k] : m[k];
    for (int k = 0; j + k < V; k++) m[k] = x[j + k] > m[k] ? x[j + k] : m[k];
    float mx = m[0];
    for (int k = 1; k < RD_LANES; k++) mx = m[k] > mx ? m[k] : mx;
    return mx;
}
// Σ exp(x − mx) over a row in double (reduce.h's partial sums: one accumulator was latency-
// bound), each exp also stored to g[j] when g is not NULL (g may be x). `next` (may be NULL):
// the row this thread handles next, prefetched into L2 a line per 16 exps, so that its read
// from memory overlaps this row's exps instead of stalling the next max pass.
XENT_ROW double xent_row_sumexp(float *g, const float *x, int V, float mx, const float *next) {
    double acc[RD_LANES] = {0};
    int j = 0;
#ifdef FM_VEC
    // fmv_exp (fastmath.h) on the same lanes: element j + k still goes to acc[k], as a double
    // added in the same order (RD_LANES / FMV_LANES blocks of exps, each two vectors of
    // partial sums), so the same bits.
    enum { NB = RD_LANES / FMV_LANES };
    _Static_assert(RD_LANES % FMV_LANES == 0, "whole blocks of exps per step");
    fmvd a[2 * NB];
    for (int q = 0; q < 2 * NB; q++) a[q] = fmvd_zero();
    const fmv vmx = fmv_set1(mx);
    for (; j + RD_LANES <= V; j += RD_LANES) {
        if (next) { __builtin_prefetch(next + j, 0, 2); __builtin_prefetch(next + j + 16, 0, 2); }
        for (int h = 0; h < NB; h++) {
            fmv e = fmv_exp(fmv_sub(fmv_load(x + j + FMV_LANES * h), vmx));
            if (g) fmv_store(g + j + FMV_LANES * h, e);
            fmvd_add_halves(&a[2 * h], &a[2 * h + 1], e);
        }
    }
    for (int q = 0; q < 2 * NB; q++) fmvd_store(acc + FMV_LANES / 2 * q, a[q]);
#endif
    for (; j + RD_LANES <= V; j += RD_LANES) {
        if (next) { __builtin_prefetch(next + j, 0, 2); __builtin_prefetch(next + j + 16, 0, 2); }
        if (g) {
            #pragma omp simd
            for (int k = 0; k < RD_LANES; k++) { float e = fast_expf(x[j + k] - mx); g[j + k] = e; acc[k] += e; }
        } else {
            #pragma omp simd
            for (int k = 0; k < RD_LANES; k++) acc[k] += fast_expf(x[j + k] - mx);
        }
    }
    for (int k = 0; j + k < V; k++) { float e = fast_expf(x[j + k] - mx); if (g) g[j + k] = e; acc[k] += e; }
    return rd_fold(acc);
}
// One row x[V]: its max, Σ exp(x − max) (double) and the target's logit (t local, else 0).
XENT_ROW void xent_row_stats(const float *x, int V, int t, float *lmax, double *sumexp, double *tlogit, const float *next) {
    float mx = xent_row_max(x, V);
    *lmax = mx;
    *sumexp = xent_row_sumexp(NULL, x, V, mx, next);
    *tlogit = (t >= 0 && t < V) ? (double)x[t] : 0.0;
}
// g[V] = scale·(exp(x − mx)/sumexp − [j = t]); g may be x.
XENT_ROW void xent_row_grad(float *g, const float *x, int V, int t, float mx, double sumexp, float scale) {
    float s = (float)(scale / sumexp);
#ifdef FM_VEC
    const fmv vmx = fmv_set1(mx), vs = fmv_set1(s);
    for (int j = 0; j < V; j += FMV_LANES)
        fmv_storen(g, fmv_mul(fmv_exp(fmv_sub(fmv_loadn(x, (size_t)j, (size_t)V), vmx)), vs), (size_t)j, (size_t)V);
#else
    #pragma omp simd
    for (int j = 0; j < V; j++) g[j] = fast_expf(x[j] - mx) * s;
#endif
    if (t >= 0 && t < V) g[t] -= scale;
}

// lmax[N], sumexp[N] (double), tlogit[N] (double); logits[N,V], targets[N]
FM_WIDE void cpu_xent_forward(float *lmax, double *sumexp, double *tlogit, const float *logits, const int32_t *targets,
                  int N, int V, int v0) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        xent_row_stats(logits + (size_t)n * V, V, targets[n] - v0, &lmax[n], &sumexp[n], &tlogit[n],
                       n + 1 < N ? logits + (size_t)(n + 1) * V : NULL);
}

// sumexp[N] *= exp(lmax - gmax): the local sums re-based on the global max
void cpu_xent_rescale(double *sumexp, const float *lmax, const float *gmax, int N) {
    for (int n = 0; n < N; n++) sumexp[n] *= exp((double)lmax[n] - (double)gmax[n]);
}

// losses[N] = -log softmax[target] = log(sumexp) + gmax - tlogit. The total is summed
// serially in row order from the double losses: deterministic.
double cpu_xent_loss(float *losses, const double *sumexp, const float *gmax, const double *tlogit, int N) {
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        double loss = log(sumexp[n]) + (double)gmax[n] - tlogit[n];
        losses[n] = (float)loss;
        total += loss;
    }
    return total;
}

// dlogits[N,V] = scale * (softmax - onehot) over the local columns; in place allowed.
FM_WIDE void cpu_xent_backward(float *dlogits, const float *logits, const float *gmax, const double *sumexp,
                   const int32_t *targets, int N, int V, int v0, float scale) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        xent_row_grad(dlogits + (size_t)n * V, logits + (size_t)n * V, V, targets[n] - v0, gmax[n], sumexp[n], scale);
}

// One row at tp = 1 with one exp per element where the two ops take two: exp(x − max) is
// stored into g as Σ is summed (xent_row_sumexp, the loop of xent_row_stats, plus the store), then g is scaled
// by the factor xent_row_grad multiplies its exp by — the same float operations on the same
// values, so the same bits (tests/test_ops.c compares them). g may be x: the target's logit
// is read before the row is overwritten.
XENT_ROW void xent_row_fused(float *g, const float *x, int V, int t, float *lmax, double *sumexp, double *tlogit,
                             float scale, const float *next) {
    float mx = xent_row_max(x, V);
    *tlogit = (t >= 0 && t < V) ? (double)x[t] : 0.0;
    double s = xent_row_sumexp(g, x, V, mx, next);
    *lmax = mx;
    *sumexp = s;
    float f = (float)(scale / s);
    #pragma omp simd
    for (int j = 0; j < V; j++) g[j] *= f;
    if (t >= 0 && t < V) g[t] -= scale;
}

// Both in one pass per row (tp = 1: gmax = lmax, no rescale): the statistics of the row, read
// from memory once, then its gradient written over it while it is still in cache.
FM_WIDE void cpu_xent_fused(float *dlogits, float *lmax, double *sumexp, double *tlogit, const float *logits,
                        const int32_t *targets, int N, int V, int v0, float scale) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        xent_row_fused(dlogits + (size_t)n * V, logits + (size_t)n * V, V, targets[n] - v0, &lmax[n], &sumexp[n],
                       &tlogit[n], scale, n + 1 < N ? logits + (size_t)(n + 1) * V : NULL);
}
