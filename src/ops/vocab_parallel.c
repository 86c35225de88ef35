// vocab_parallel.c — the local pieces of a vocabulary-parallel embedding and
// cross-entropy (Megatron): each TP rank holds vocabulary rows [v0, v0+V) of the
// embedding and columns [v0, v0+V) of the LM head. The caller places the collectives
// between the pieces (model.c), so they are visible there:
//   embedding: out = lookup of the local rows (0 elsewhere) -> all-reduce(sum)
//   loss:      max -> all-reduce(max); sumexp, target logit -> all-reduce(sum)
#include <math.h>
#include <string.h>
#include "ops.h"
#include "fastmath.h"

// out[N,d] = wte_local[tokens[i]-v0] if tokens[i] in [v0,v0+V), else 0
void embedding_forward_shard(float *out, const int32_t *tokens, const float *wte_local,
                             int N, int d, int v0, int V) {
    if (ops_dry_run) return;   // accounting mode: no math
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t >= 0 && t < V) memcpy(out + (size_t)i * d, wte_local + (size_t)t * d, sizeof(float) * d);
        else memset(out + (size_t)i * d, 0, sizeof(float) * d);
    }
}

// dwte_local[V,d] += dout rows of tokens in [v0,v0+V). Parallel over column blocks
// (deterministic, see embedding.c).
void embedding_backward_shard(float *dwte_local, const float *dout, const int32_t *tokens,
                              int N, int d, int v0, int V) {
    if (ops_dry_run) return;   // accounting mode: no math
    int nblk = (d + 31) / 32;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < nblk; b++) {
        int j0 = b * 32, j1 = j0 + 32 < d ? j0 + 32 : d;
        for (int i = 0; i < N; i++) {
            int t = tokens[i] - v0;
            if (t < 0 || t >= V) continue;
            float *w = dwte_local + (size_t)t * d;
            const float *g = dout + (size_t)i * d;
            for (int j = j0; j < j1; j++) w[j] += g[j];
        }
    }
}

// row_max[N] = max_j logits[n, j] over the local columns (logits [N,V])
void xent_shard_max(float *row_max, const float *logits, int N, int V) {
    if (ops_dry_run) return;   // accounting mode: no math
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float mx = -INFINITY;
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        row_max[n] = mx;
    }
}

// With the GLOBAL row max: sumexp[N] = sum_j exp(logits - max) over the local columns,
// target_logit[N] = logits[n, target - v0] if the target is local, else 0.
void xent_shard_sums(double *sumexp, double *target_logit, const float *logits, const float *row_max,
                     const int32_t *targets, int N, int V, int v0) {
    if (ops_dry_run) return;   // accounting mode: no math
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float mx = row_max[n];
        double s = 0;
        for (int j = 0; j < V; j++) s += fast_expf(x[j] - mx);
        sumexp[n] = s;
        int t = targets[n] - v0;
        target_logit[n] = (t >= 0 && t < V) ? (double)x[t] : 0.0;
    }
}

// dlogits[N,V] = scale * (softmax - onehot) over the local columns, in place allowed.
void xent_shard_grad(float *dlogits, const float *logits, const float *row_max, const double *sumexp,
                     const int32_t *targets, int N, int V, int v0, float scale) {
    if (ops_dry_run) return;   // accounting mode: no math
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float *g = dlogits + (size_t)n * V;
        float mx = row_max[n], s = (float)(scale / sumexp[n]);
        for (int j = 0; j < V; j++) g[j] = fast_expf(x[j] - mx) * s;
        int t = targets[n] - v0;
        if (t >= 0 && t < V) g[t] -= scale;
    }
}
