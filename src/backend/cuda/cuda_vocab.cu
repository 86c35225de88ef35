// cuda_vocab.cu — the vocabulary-parallel embedding and cross-entropy: this rank holds
// rows / columns [v0, v0+V) of the vocabulary; the collectives between the pieces are the
// caller's (model drivers), as on the CPU.
//
// Embedding backward is deterministic without float atomics: the token positions are
// sorted by local token id (CUB's radix sort is stable, so equal ids keep position order),
// and each run of equal ids is summed by one block, rows in position order, in fp32, then
// added to its row of dwte once (acc 0: the table is zeroed first, every row then holds
// 0 + its run's sum, as += on a zeroed table).
#include "cuda_common.cuh"
#include <cub/cub.cuh>
#include <math.h>

enum { XENT_THREADS = 512, EMB_THREADS = 256 };

// ---- embedding ------------------------------------------------------------------------------
// out[N,d] = wte[tokens[i] − v0] for tokens in range, else 0
template <typename T>
__global__ void embedding_fwd_kernel(T *out, const int32_t *tokens, const T *wte, int N, int d, int v0, int V) {
    RC_ROWS_LOOP(n, N) {
        int t = tokens[n] - v0;
        T *o = out + (size_t)n * d;
        if (t >= 0 && t < V) { const T *w = wte + (size_t)t * d; RC_COLS_LOOP(j, d) o[j] = w[j]; }
        else RC_COLS_LOOP(j, d) o[j] = stf<T>(0.0f);
    }
}
void cuda_embedding_forward(Backend *b, void *out, const int32_t *tokens, const void *wte, int N, int d, int v0, int V) {
    if (N <= 0 || d <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH(rc_grid(N, d), rc_block(), 0, stream_of(b), embedding_fwd_kernel<T>)(
        (T *)out, tokens, (const T *)wte, N, d, v0, V)));
}

// key[i] = tokens[i] − v0 if in range, else V (sorted last, skipped); pos[i] = i
__global__ void embedding_keys_kernel(int *key, int *pos, const int32_t *tokens, int N, int v0, int V) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    int t = tokens[i] - v0;
    key[i] = (t >= 0 && t < V) ? t : V;
    pos[i] = i;
}
// One block per sorted index s; the block that starts a run of equal keys sums the run's
// dout rows (positions ascending) and adds the sum to dwte[key].
template <typename T>
__global__ void embedding_runs_kernel(T *dwte, const T *dout, const int *key, const int *pos, int N, int d, int V) {
    int s = blockIdx.x;
    int k = key[s];
    if (k >= V || (s > 0 && key[s - 1] == k)) return;
    int e = s;
    while (e < N && key[e] == k) e++;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        float acc = 0.0f;
        for (int q = s; q < e; q++) acc += ldf(dout[(size_t)pos[q] * d + j]);
        T *w = dwte + (size_t)k * d + j;
        *w = stf<T>(ldf(*w) + acc);
    }
}

void cuda_embedding_backward(Backend *b, void *dwte, const void *dout, const int32_t *tokens, int N, int d, int v0, int V,
                             int acc, const unsigned char *nz) {
    (void)nz;   // every row written (the hint is optional)
    if (d <= 0 || V <= 0) return;
    cudaStream_t st = stream_of(b);
    if (!acc) CUDA_CHECK(cudaMemsetAsync(dwte, 0, (size_t)V * d * dtype_size(b->dtype), st));   // rows no token hits
    if (N <= 0) return;
    int bits = 1;                                   // keys lie in [0, V]
    while (bits < 31 && (1 << bits) <= V) bits++;
    size_t tmp = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, tmp, (const int *)NULL, (int *)NULL, (const int *)NULL,
                                              (int *)NULL, N, 0, bits, st));
    size_t arr = ((size_t)N * sizeof(int) + 255) / 256 * 256;
    char *base = (char *)cuda_scratch(b, SCR_SORT, 4 * arr + tmp);
    int *key_in = (int *)base, *key_out = (int *)(base + arr), *pos_in = (int *)(base + 2 * arr), *pos_out = (int *)(base + 3 * arr);
    void *tmp_store = base + 4 * arr;
    LAUNCH((N + 255) / 256, 256, 0, st, embedding_keys_kernel)(key_in, pos_in, tokens, N, v0, V);
    LAUNCH_CHECK();
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp_store, tmp, key_in, key_out, pos_in, pos_out, N, 0, bits, st));
    DISPATCH(b->dtype, T, (LAUNCH((unsigned)N, EMB_THREADS, 0, st, embedding_runs_kernel<T>)(
        (T *)dwte, (const T *)dout, key_out, pos_out, N, d, V)));
}

// ---- cross-entropy ---------------------------------------------------------------------------
// A running (max, Σexp(x − max)) pair; combine() merges two (the online softmax).
struct MaxSum { float m; float s; };
__device__ __forceinline__ MaxSum ms_combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return MaxSum{ m, 0.0f };
    return MaxSum{ m, a.s * expf(a.m - m) + b.s * expf(b.m - m) };
}

// One block per row, one pass over the row x[V]: every thread gets the row max m and sumexp
// s = Σ exp(x − m) (per-thread fp32 partials, combined in double; 0 when m is −inf); thread 0
// writes lmax[n], sumexp[n] and tlogit[n] (double) if the target is local, before the block's
// last barrier (so a caller may overwrite the row after it returns).
template <typename T>
__device__ __forceinline__ void xent_row_stats(const T *x, int V, int t, float *lmax, double *sumexp, double *tlogit,
                                               float *m_out, double *s_out) {
    __shared__ float sh_m[32];
    __shared__ double sh_s[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    MaxSum a = { -INFINITY, 0.0f };
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float v = ldf(x[j]);
        if (v > a.m) { a.s = a.s * expf(a.m - v) + 1.0f; a.m = v; }
        else a.s += expf(v - a.m);
    }
    // block max, then every thread's sum rescaled to it and added in double (fixed order)
    float m = warp_max(a.m);
    if (lane == 0) sh_m[w] = m;
    __syncthreads();
    m = lane < nw ? sh_m[lane] : -INFINITY;
    m = warp_max(m);
    double s = (a.m == -INFINITY) ? 0.0 : (double)a.s * exp((double)a.m - (double)m);
    if (threadIdx.x == 0) *tlogit = (t >= 0 && t < V) ? (double)ldf(x[t]) : 0.0;
    s = block_sum_d(s, sh_s);
    if (m == -INFINITY) s = 0.0;
    if (threadIdx.x == 0) { *lmax = m; *sumexp = s; }
    *m_out = m; *s_out = s;
}
template <typename T>
__global__ void xent_fwd_kernel(float *lmax, double *sumexp, double *tlogit, const T *logits,
                                const int32_t *targets, int V, int v0) {
    int n = blockIdx.x;
    float m; double s;
    xent_row_stats(logits + (size_t)n * V, V, targets[n] - v0, &lmax[n], &sumexp[n], &tlogit[n], &m, &s);
}
void cuda_xent_forward(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                       const int32_t *targets, int N, int V, int v0) {
    if (N <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH((unsigned)N, XENT_THREADS, 0, stream_of(b), xent_fwd_kernel<T>)(
        lmax, sumexp, tlogit, (const T *)logits, targets, V, v0)));
}

// sumexp[n] *= exp(lmax − gmax)
__global__ void xent_rescale_kernel(double *sumexp, const float *lmax, const float *gmax, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < N) sumexp[n] *= exp((double)lmax[n] - (double)gmax[n]);
}
void cuda_xent_rescale(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N) {
    if (N <= 0) return;
    LAUNCH((N + 255) / 256, 256, 0, stream_of(b), xent_rescale_kernel)(sumexp, lmax, gmax, N);
    LAUNCH_CHECK();
}

// losses[n] = log(sumexp) + gmax − tlogit; *loss = Σ_n (one block, fixed order), or *loss += Σ_n
// when accumulating: the loss stays on the device (no host synchronisation per micro-batch)
__global__ void xent_loss_kernel(double *loss, float *losses, const double *sumexp, const float *gmax,
                                 const double *tlogit, int N, int accumulate) {
    __shared__ double sh[32];
    double acc = 0.0;
    for (int n = threadIdx.x; n < N; n += blockDim.x) {
        double l = log(sumexp[n]) + (double)gmax[n] - tlogit[n];
        if (losses) losses[n] = (float)l;
        acc += l;
    }
    acc = block_sum_d(acc, sh);
    if (threadIdx.x == 0) *loss = accumulate ? *loss + acc : acc;
}
void cuda_xent_loss(Backend *b, double *loss, float *losses, const double *sumexp, const float *gmax, const double *tlogit,
                    int N, int accumulate) {
    if (N <= 0) {
        if (!accumulate) CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(double), stream_of(b)));
        return;
    }
    LAUNCH(1, 1024, 0, stream_of(b), xent_loss_kernel)(loss, losses, sumexp, gmax, tlogit, N, accumulate);
    LAUNCH_CHECK();
}

// g[j] = scale·(exp(x − mx)/sumexp − [j = t]) over a row, by the block; g may be x
template <typename T>
__device__ __forceinline__ void xent_row_grad(T *g, const T *x, int V, int t, float mx, double sumexp, float scale) {
    float s = (float)((double)scale / sumexp);
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float p = expf(ldf(x[j]) - mx) * s;
        g[j] = stf<T>(j == t ? p - scale : p);
    }
}
// dlogits[n, j] = scale·(exp(x − gmax)/sumexp − [j = target − v0]); may alias logits
template <typename T>
__global__ void xent_bwd_kernel(T *dlogits, const T *logits, const float *gmax, const double *sumexp,
                                const int32_t *targets, int V, int v0, float scale) {
    int n = blockIdx.x;
    xent_row_grad(dlogits + (size_t)n * V, logits + (size_t)n * V, V, targets[n] - v0, gmax[n], sumexp[n], scale);
}
// tp = 1: the row's statistics and then its gradient, one block per row (the row is read from
// memory once; the second read hits L2); the same bits as xent_fwd_kernel + xent_bwd_kernel
template <typename T>
__global__ void xent_fused_kernel(T *dlogits, float *lmax, double *sumexp, double *tlogit, const T *logits,
                                  const int32_t *targets, int V, int v0, float scale) {
    int n = blockIdx.x, t = targets[n] - v0;
    float m; double s;
    xent_row_stats(logits + (size_t)n * V, V, t, &lmax[n], &sumexp[n], &tlogit[n], &m, &s);
    xent_row_grad(dlogits + (size_t)n * V, logits + (size_t)n * V, V, t, m, s, scale);
}
void cuda_xent_fused(Backend *b, void *dlogits, float *lmax, double *sumexp, double *tlogit, const void *logits,
                     const int32_t *targets, int N, int V, int v0, float scale) {
    if (N <= 0 || V <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH((unsigned)N, XENT_THREADS, 0, stream_of(b), xent_fused_kernel<T>)(
        (T *)dlogits, lmax, sumexp, tlogit, (const T *)logits, targets, V, v0, scale)));
}
void cuda_xent_backward(Backend *b, void *dlogits, const void *logits, const float *gmax, const double *sumexp,
                        const int32_t *targets, int N, int V, int v0, float scale) {
    if (N <= 0 || V <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH((unsigned)N, XENT_THREADS, 0, stream_of(b), xent_bwd_kernel<T>)(
        (T *)dlogits, (const T *)logits, gmax, sumexp, targets, V, v0, scale)));
}
