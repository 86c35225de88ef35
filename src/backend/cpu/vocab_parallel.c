// vocab_parallel.c — the embedding lookup and its gradient over the vocabulary rows
// [v0, v0+V) held here (Megatron's vocabulary-parallel embedding; v0 = 0, V = vocab at
// tp = 1). The all-reduce that assembles the full vectors is the caller's (model/head.c).
#include <string.h>
#include "kernels.h"

// out[N,d] = wte_local[tokens[i]-v0] if tokens[i] in [v0,v0+V), else 0
void embedding_forward_shard(float *out, const int32_t *tokens, const float *wte_local,
                             int N, int d, int v0, int V) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t >= 0 && t < V) memcpy(out + (size_t)i * d, wte_local + (size_t)t * d, sizeof(float) * d);
        else memset(out + (size_t)i * d, 0, sizeof(float) * d);
    }
}

// dwte_local[V,d] += dout rows of tokens in [v0,v0+V). Repeated tokens hit the same row, so
// splitting tokens across threads would need float atomics (non-deterministic order);
// splitting the d columns instead gives each thread a disjoint slice of every row, walked in
// token order: bit-identical for any thread count.
void embedding_backward_shard(float *dwte_local, const float *dout, const int32_t *tokens,
                              int N, int d, int v0, int V) {
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
