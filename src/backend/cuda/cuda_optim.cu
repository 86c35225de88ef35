// cuda_optim.cu — the optimizer's multi-tensor launches (llm.c's global_norm.cuh and
// adamw.cuh): the weighted global sum of squares over all gradients in one launch, and
// AdamW over all parameters in one launch.
//
// Both take a host table of tensors; it is uploaded (cuda_upload_table) with each tensor's
// first chunk index, and every block finds its tensor by binary search over those. The sum
// of squares is deterministic: a fixed grid (SQ_BLOCKS, independent of the GPU) with a
// fixed chunk-to-block assignment, per-block double partials, and the last block to finish
// adds the partials in block order (threadfence reduction) — no float atomics.
#include "cuda_common.cuh"
#include <math.h>

enum { SQ_CHUNK = 16384, SQ_BLOCKS = 1024, SQ_THREADS = 256, ADAM_CHUNK = 4096, ADAM_THREADS = 256 };

// Index of the tensor holding chunk c: the largest i with c0[i] <= c (tensors with no
// chunks share their successor's c0 and are never chosen for a chunk they do not hold).
template <typename Span>
__device__ __forceinline__ int find_span(const Span *sp, int n, unsigned long long c) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (sp[mid].c0 <= c) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// ---- Σ_i w_i·Σ_j x_i[j]² ------------------------------------------------------------------
struct SqSpan { const void *p; unsigned long long n, c0; double w; };

template <typename T>
__global__ void sumsq_multi_kernel(double *result, double *partial, unsigned int *counter,
                                   const SqSpan *sp, int nspan, unsigned long long chunks) {
    __shared__ double sh[32];
    __shared__ int last;
    double acc = 0.0;
    for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        const SqSpan s = sp[find_span(sp, nspan, c)];
        const T *x = (const T *)s.p;
        unsigned long long i0 = (c - s.c0) * SQ_CHUNK, i1 = min(s.n, i0 + SQ_CHUNK);
        double cs = 0.0;
        for (unsigned long long i = i0 + threadIdx.x; i < i1; i += blockDim.x) { double v = ldf(x[i]); cs += v * v; }
        acc += s.w * cs;
    }
    acc = block_sum_d(acc, sh);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();                               // the partial is visible before the count
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    double tot = 0.0;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) tot += __ldcg(&partial[i]);
    tot = block_sum_d(tot, sh);
    if (threadIdx.x == 0) { *result = tot; *counter = 0; }
}

double cuda_sumsq_multi(Backend *b, int n, const void *const *x, const size_t *len, const double *w,
                        const SumsqLive *live) {
    (void)live;   // every row read (the hint is optional)
    if (n <= 0) return 0.0;
    CudaImpl *im = impl_of(b);
    SqSpan *tab = (SqSpan *)xmalloc(sizeof(SqSpan) * (size_t)n);
    unsigned long long chunks = 0;
    for (int i = 0; i < n; i++) {
        tab[i].p = x[i]; tab[i].n = len[i]; tab[i].c0 = chunks; tab[i].w = w ? w[i] : 1.0;
        chunks += (len[i] + SQ_CHUNK - 1) / SQ_CHUNK;
    }
    if (chunks == 0) { free(tab); return 0.0; }
    const SqSpan *dtab = (const SqSpan *)cuda_upload_table(b, tab, sizeof(SqSpan) * (size_t)n);
    free(tab);
    unsigned grid = chunks < (unsigned long long)SQ_BLOCKS ? (unsigned)chunks : (unsigned)SQ_BLOCKS;
    double *part = (double *)cuda_scratch(b, SCR_PART, sizeof(double) * (SQ_BLOCKS + 1));
    double *result = part + SQ_BLOCKS;
    DISPATCH(b->dtype, T, (LAUNCH(grid, SQ_THREADS, 0, im->stream, sumsq_multi_kernel<T>)(result, part, im->counter, dtab, n, chunks)));
    CUDA_CHECK(cudaMemcpyAsync(im->result_host, result, sizeof(double), cudaMemcpyDeviceToHost, im->stream));
    cuda_wait_stream(b, "the gradient norm (sumsq_multi)");
    return *im->result_host;
}

// ---- AdamW ---------------------------------------------------------------------------------------
// The CPU's update (cpu/adamw.c), element by element, with g = grad·grad_scale (clipping):
//   m = β1·m + (1−β1)·g,  v = β2·v + (1−β2)·g²,  p −= lr·(m·bc1 / (sqrt(v·bc2) + eps) + wd·p)
// on the fp32 master p, then the compute-dtype copy param = RNE(p) when there is one.
struct AdamSpanDev { float *master; const void *grad; float *m, *v; void *param; unsigned long long n, c0; float wd; };

template <typename T>
__global__ void adamw_multi_kernel(const AdamSpanDev *sp, int nspan, unsigned long long chunks,
                                   float lr, float beta1, float beta2, float eps, float bc1, float bc2, float gs) {
    for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        const AdamSpanDev s = sp[find_span(sp, nspan, c)];
        const T *grad = (const T *)s.grad;
        T *param = (T *)s.param;
        unsigned long long i0 = (c - s.c0) * ADAM_CHUNK, i1 = min(s.n, i0 + ADAM_CHUNK);
        for (unsigned long long i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
            float g = ldf(grad[i]) * gs;   // the clipping factor, folded in (no scale pass)
            float mi = beta1 * s.m[i] + (1.0f - beta1) * g;
            float vi = beta2 * s.v[i] + (1.0f - beta2) * g * g;
            s.m[i] = mi;
            s.v[i] = vi;
            float mhat = mi * bc1, vhat = vi * bc2;
            float p = s.master[i];
            p -= lr * (mhat / (sqrtf(vhat) + eps) + s.wd * p);
            s.master[i] = p;
            if (param) param[i] = stf<T>(p);
        }
    }
}

void cuda_adamw_multi(Backend *b, int n, const AdamWSpan *spans, const AdamWHyper *h) {
    if (n <= 0) return;
    CHECK(h->t >= 1, "adamw: step t=%d must be >= 1", h->t);
    AdamSpanDev *tab = (AdamSpanDev *)xmalloc(sizeof(AdamSpanDev) * (size_t)n);
    unsigned long long chunks = 0;
    for (int i = 0; i < n; i++) {
        const AdamWSpan *s = &spans[i];
        tab[i].master = s->master; tab[i].grad = s->grad; tab[i].m = s->m; tab[i].v = s->v;
        tab[i].param = s->param; tab[i].n = s->n; tab[i].c0 = chunks; tab[i].wd = s->weight_decay;
        chunks += (s->n + ADAM_CHUNK - 1) / ADAM_CHUNK;
    }
    if (chunks == 0) { free(tab); return; }
    const AdamSpanDev *dtab = (const AdamSpanDev *)cuda_upload_table(b, tab, sizeof(AdamSpanDev) * (size_t)n);
    free(tab);
    // bias corrections in double, as on the CPU
    float bc1 = (float)(1.0 / (1.0 - pow((double)h->beta1, h->t)));
    float bc2 = (float)(1.0 / (1.0 - pow((double)h->beta2, h->t)));
    unsigned grid = chunks < (1u << 20) ? (unsigned)chunks : (1u << 20);
    DISPATCH(b->dtype, T, (LAUNCH(grid, ADAM_THREADS, 0, stream_of(b), adamw_multi_kernel<T>)(
        dtab, n, chunks, h->lr, h->beta1, h->beta2, h->eps, bc1, bc2, h->grad_scale)));
}
