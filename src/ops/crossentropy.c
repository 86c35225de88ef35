// crossentropy.c — fused softmax cross-entropy over the vocabulary.
//
// At N=1024 tokens and V=32000 the logits are 131 MB: this op is memory- and exp-bound,
// so each row is handled by one thread start to finish while it sits in L2 (128 KB):
// one DRAM read (max), exp+sum in L2 (exps parked in dlogits), a scale pass, one
// DRAM write. dlogits may alias logits, which saves the second 131 MB buffer.
#include "ops.h"
#include "../core/check.h"
#include "fastmath.h"
#include <math.h>

// logits[N,V], targets[N] in [0,V), losses[N] (may be NULL), dlogits[N,V] (NULL = loss only;
// may == logits). Returns sum of losses.
double crossentropy_forward_backward(float *dlogits, float *losses, const float *logits,
                                     const int32_t *targets, int N, int V, float dscale) {
    if (ops_dry_run) return 0;   // accounting mode: no math
    for (int n = 0; n < N; n++)
        CHECK(targets[n] >= 0 && targets[n] < V, "crossentropy: target %d at row %d outside [0,%d)", targets[n], n, V);
    float *row_loss = losses ? losses : xmalloc(sizeof(float) * (N > 0 ? N : 1));
    // Each row's loss is kept in double until stored; the total is summed serially in
    // row order after the parallel loop so it is deterministic (an OpenMP reduction
    // combines thread partials in an unspecified order).
    double *dl = xmalloc(sizeof(double) * (N > 0 ? N : 1));
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float *g = dlogits ? dlogits + (size_t)n * V : NULL;
        int tgt = targets[n];
        float xt = x[tgt];                 // read before an in-place write overwrites it
        float mx = -INFINITY;
        #pragma omp simd reduction(max:mx)
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        double sum = 0.0;
        if (g) {
            #pragma omp simd reduction(+:sum)
            for (int j = 0; j < V; j++) { float e = fast_expf(x[j] - mx); g[j] = e; sum += e; }
        } else {
            #pragma omp simd reduction(+:sum)
            for (int j = 0; j < V; j++) sum += fast_expf(x[j] - mx);
        }
        // loss = -log softmax[tgt] = log(sum) + max - x[tgt]
        double loss = log(sum) + (double)mx - (double)xt;
        dl[n] = loss;
        row_loss[n] = (float)loss;
        if (g) {
            float s = (float)(dscale / sum);
            #pragma omp simd
            for (int j = 0; j < V; j++) g[j] *= s;
            g[tgt] -= dscale;
        }
    }
    double total = 0.0;
    for (int n = 0; n < N; n++) total += dl[n];
    free(dl);
    if (!losses) free(row_loss);
    return total;
}
