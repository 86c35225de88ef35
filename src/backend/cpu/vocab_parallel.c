// vocab_parallel.c — the embedding lookup and its gradient over the vocabulary rows
// [v0, v0+V) held here (Megatron's vocabulary-parallel embedding; v0 = 0, V = vocab at
// tp = 1). The all-reduce that assembles the full vectors is the caller's (model/head.c).
#include <string.h>
#include "kernels.h"
#include "../../core/check.h"

// out[N,d] = wte_local[tokens[i]-v0] if tokens[i] in [v0,v0+V), else 0
void cpu_embedding_forward_shard(float *out, const int32_t *tokens, const float *wte_local,
                             int N, int d, int v0, int V) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t >= 0 && t < V) memcpy(out + (size_t)i * d, wte_local + (size_t)t * d, sizeof(float) * d);
        else memset(out + (size_t)i * d, 0, sizeof(float) * d);
    }
}

// dwte_local[V,d] += dout rows of tokens in [v0,v0+V). The token positions are bucketed by
// row (a counting sort, positions ascending within a row), and each row is owned by one
// thread that sums its tokens' rows in position order: no float atomics, bit-identical for
// any thread count. acc 0: each row is stored once — 0 + the first token's row + the next
// ones, the sums += gives on a zeroed buffer — and a row no token hits is zeroed.
void cpu_embedding_backward_shard(float *dwte_local, const float *dout, const int32_t *tokens,
                              int N, int d, int v0, int V, int acc) {
    if (V <= 0 || d <= 0) return;
    int *start = xcalloc((size_t)V + 1, sizeof(int)), *pos = xmalloc((size_t)(N > 0 ? N : 1) * sizeof(int));
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t >= 0 && t < V) start[t + 1]++;
    }
    for (int v = 0; v < V; v++) start[v + 1] += start[v];
    int *fill = xmalloc((size_t)V * sizeof(int));
    memcpy(fill, start, (size_t)V * sizeof(int));
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t >= 0 && t < V) pos[fill[t]++] = i;
    }
    free(fill);
    #pragma omp parallel for schedule(static)
    for (int v = 0; v < V; v++) {
        float *w = dwte_local + (size_t)v * d;
        int s0 = start[v], s1 = start[v + 1];
        if (s0 == s1) {
            if (!acc) memset(w, 0, sizeof(float) * (size_t)d);
            continue;
        }
        const float *g = dout + (size_t)pos[s0] * d;
        if (acc) for (int j = 0; j < d; j++) w[j] += g[j];
        else for (int j = 0; j < d; j++) w[j] = 0.0f + g[j];
        for (int s = s0 + 1; s < s1; s++) {
            g = dout + (size_t)pos[s] * d;
            for (int j = 0; j < d; j++) w[j] += g[j];
        }
    }
    free(start); free(pos);
}
