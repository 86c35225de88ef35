// embedding.c — token embedding lookup and its scatter-add gradient.
#include "ops.h"
#include "../core/check.h"
#include <string.h>

// out[N,d] = wte[tokens[i], :]; tokens[N], wte[V,d] (V unknown here: ids are checked >= 0,
// the data loader guarantees < V)
void embedding_forward(float *out, const int32_t *tokens, const float *wte, int N, int d) {
    if (ops_dry_run) return;   // accounting mode: no math
    for (int i = 0; i < N; i++) CHECK(tokens[i] >= 0, "embedding: negative token id %d at %d", tokens[i], i);
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        memcpy(out + (size_t)i * d, wte + (size_t)tokens[i] * d, sizeof(float) * d);
}

// Columns per task of the scatter-add. Repeated tokens hit the same row, so splitting
// tokens across threads would need float atomics (non-deterministic order). Splitting
// the d columns instead gives each thread a disjoint slice of every row, walked in token
// order: bit-identical for any thread count.
#define EMB_COLBLK 32

// dwte[V,d] += scatter-add of dout[N,d] at rows tokens[N]
void embedding_backward(float *dwte, const float *dout, const int32_t *tokens, int N, int d) {
    if (ops_dry_run) return;   // accounting mode: no math
    int nblk = (d + EMB_COLBLK - 1) / EMB_COLBLK;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < nblk; b++) {
        int j0 = b * EMB_COLBLK, j1 = j0 + EMB_COLBLK < d ? j0 + EMB_COLBLK : d;
        for (int i = 0; i < N; i++) {
            float *w = dwte + (size_t)tokens[i] * d;
            const float *g = dout + (size_t)i * d;
            for (int j = j0; j < j1; j++) w[j] += g[j];
        }
    }
}
