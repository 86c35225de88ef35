// crossentropy.c — softmax cross-entropy over the (local columns of the) vocabulary, in the
// pieces that a vocabulary-parallel head needs (Megatron): a local pass, the all-reduces of
// the maxima and of the sums (the caller's, model/head.c), the loss, the gradient.
//
// At N = 1024 tokens and V = 32000 the logits are 131 MB: these passes are memory- and
// exp-bound, so each row is handled by one thread start to finish while it sits in L2
// (128 KB): the forward reads it twice from L2 (max, then Σexp) after one DRAM read, the
// backward reads it once and writes the gradient in place. That is the whole traffic a
// vocabulary-parallel loss allows on one rank: the forward's statistics must cross the TP
// all-reduces (max, then the sums) before any probability is known, so the gradient pass
// cannot join the forward's. What remains is the exp (32M per pass at this shape), so the
// loops are FM_WIDE: at 512-bit width they run at about twice the rate of 256 (the same
// exps, bit for bit).
#include <math.h>
#include "kernels.h"
#include "fastmath.h"

// lmax[N], sumexp[N] (double), tlogit[N] (double); logits[N,V], targets[N]
FM_WIDE void xent_forward(float *lmax, double *sumexp, double *tlogit, const float *logits, const int32_t *targets,
                  int N, int V, int v0) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float mx = -INFINITY;
        #pragma omp simd reduction(max:mx)
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (int j = 0; j < V; j++) s += fast_expf(x[j] - mx);
        lmax[n] = mx;
        sumexp[n] = s;
        int t = targets[n] - v0;
        tlogit[n] = (t >= 0 && t < V) ? (double)x[t] : 0.0;
    }
}

// sumexp[N] *= exp(lmax - gmax): the local sums re-based on the global max
void xent_rescale(double *sumexp, const float *lmax, const float *gmax, int N) {
    for (int n = 0; n < N; n++) sumexp[n] *= exp((double)lmax[n] - (double)gmax[n]);
}

// losses[N] = -log softmax[target] = log(sumexp) + gmax - tlogit. The total is summed
// serially in row order from the double losses: deterministic.
double xent_loss(float *losses, const double *sumexp, const float *gmax, const double *tlogit, int N) {
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        double loss = log(sumexp[n]) + (double)gmax[n] - tlogit[n];
        losses[n] = (float)loss;
        total += loss;
    }
    return total;
}

// dlogits[N,V] = scale * (softmax - onehot) over the local columns; in place allowed.
FM_WIDE void xent_backward(float *dlogits, const float *logits, const float *gmax, const double *sumexp,
                   const int32_t *targets, int N, int V, int v0, float scale) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float *g = dlogits + (size_t)n * V;
        float mx = gmax[n], s = (float)(scale / sumexp[n]);
        #pragma omp simd
        for (int j = 0; j < V; j++) g[j] = fast_expf(x[j] - mx) * s;
        int t = targets[n] - v0;
        if (t >= 0 && t < V) g[t] -= scale;
    }
}
