// cuda_norm.cu — RMSNorm over full rows, and the pieces of BTP's RMSNorm of a
// column-sharded residual (rowsumsq, rownorm, scale_rows, rowdot, the sharded backward).
//
// Row statistics: one warp per row, fp32 accumulation, the per-row factor 1/sqrt(S/w + eps)
// taken in double from the fp32 sum (the CPU's formula). Column reductions (dgamma) are
// deterministic without atomics: fixed chunks of ROWS_PER_CHUNK rows are summed in row
// order into fp32 partials [chunks, d], then the partials are added in chunk order.
#include "cuda_common.cuh"
#include <math.h>

enum { ROW_THREADS = 256, ROWS_PER_BLOCK = ROW_THREADS / 32, COL_THREADS = 256, ROWS_PER_CHUNK = 64 };

static unsigned row_blocks(int N) { return (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK); }


// ---- the per-row factor from a sum of squares ---------------------------------------------------
// f[n] = (S[n]/width + eps)^(-1/2) (power −1: rstd) or ^(+1/2) (power +1: rms), in double.
__device__ __forceinline__ float row_factor(float S, int width, float eps, int power) {
    double ms = (double)S / width + (double)eps;
    return power < 0 ? (float)(1.0 / sqrt(ms)) : (float)sqrt(ms);
}
template <typename T>
__global__ void row_factor_kernel(float *f, const T *S, int N, int width, float eps, int power) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < N) f[n] = row_factor(ldf(S[n]), width, eps, power);
}
// Per-row factors of S (compute dtype) in SCR_ROWS.
static float *row_factors(Backend *b, const void *S, int N, int width, float eps, int power) {
    float *f = (float *)cuda_scratch(b, SCR_ROWS, sizeof(float) * (size_t)N);
    DISPATCH(b->dtype, T, (LAUNCH((N + 255) / 256, 256, 0, stream_of(b), row_factor_kernel<T>)(f, (const T *)S, N, width, eps, power)));
    return f;
}

// Σ_j xr[j]² over a row, fp32, by the calling warp (every lane gets it)
template <typename T>
__device__ __forceinline__ float warp_row_sumsq(const T *xr, int d, int lane) {
    float ss = 0.0f;
    for (int j = lane; j < d; j += 32) { float v = ldf(xr[j]); ss += v * v; }
    return warp_sum(ss);
}

// ---- deterministic column sums: dst[j] (+)= Σ_n A[n,j]·(B[n,j]·r[n]) (acc: 1 +=, 0 =) ----------------
template <typename T>
__global__ void colsum_partial_kernel(float *part, const T *A, const T *B, const float *r, int N, int d) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    int n0 = blockIdx.y * ROWS_PER_CHUNK, n1 = min(N, n0 + ROWS_PER_CHUNK);
    float acc = 0.0f;
    for (int n = n0; n < n1; n++) {
        size_t i = (size_t)n * d + j;
        acc += ldf(A[i]) * (ldf(B[i]) * r[n]);
    }
    part[(size_t)blockIdx.y * d + j] = acc;
}
template <typename T>
__global__ void colsum_finish_kernel(T *dst, const float *part, int chunks, int d, int acc) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    float s = 0.0f;
    for (int c = 0; c < chunks; c++) s += part[(size_t)c * d + j];
    dst[j] = stf<T>((acc ? ldf(dst[j]) : 0.0f) + s);
}
static void colsum_scaled(Backend *b, void *dst, const void *A, const void *B, const float *r, int N, int d, int acc) {
    int chunks = (N + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK;
    float *part = (float *)cuda_scratch(b, SCR_PART, sizeof(float) * (size_t)chunks * d);
    dim3 g1((unsigned)((d + COL_THREADS - 1) / COL_THREADS), (unsigned)chunks);
    unsigned g2 = (unsigned)((d + COL_THREADS - 1) / COL_THREADS);
    DISPATCH(b->dtype, T, (LAUNCH(g1, COL_THREADS, 0, stream_of(b), colsum_partial_kernel<T>)(part, (const T *)A, (const T *)B, r, N, d)));
    DISPATCH(b->dtype, T, (LAUNCH(g2, COL_THREADS, 0, stream_of(b), colsum_finish_kernel<T>)((T *)dst, part, chunks, d, acc)));
}

// ---- RMSNorm over full rows -----------------------------------------------------------------------
// y[N,d] = x·rstd·gamma, rstd[N] = 1/sqrt(mean(x²) + eps)
template <typename T>
__global__ void rmsnorm_fwd_kernel(T *y, float *rstd, const T *x, const T *gamma, int N, int d, float eps) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    const T *xr = x + (size_t)row * d;
    float r = row_factor(warp_row_sumsq(xr, d, lane), d, eps, -1);
    if (lane == 0) rstd[row] = r;
    T *yr = y + (size_t)row * d;
    for (int j = lane; j < d; j += 32) yr[j] = stf<T>(ldf(xr[j]) * r * ldf(gamma[j]));
}

// dx[N,d] (+)= r·(gamma·dy − x·r·c), c = (1/d)·Σ_j (gamma·dy)·(x·r)  (acc: 1 +=, 0 =)
template <typename T>
__global__ void rmsnorm_bwd_dx_kernel(T *dx, const T *dy, const T *x, const T *gamma, const float *rstd, int N, int d,
                                      int acc) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    size_t o = (size_t)row * d;
    float r = rstd[row], dot = 0.0f;
    for (int j = lane; j < d; j += 32) dot += (ldf(gamma[j]) * ldf(dy[o + j])) * (ldf(x[o + j]) * r);
    float c = warp_sum(dot) / d;
    for (int j = lane; j < d; j += 32)
        dx[o + j] = stf<T>((acc ? ldf(dx[o + j]) : 0.0f) + r * (ldf(gamma[j]) * ldf(dy[o + j]) - ldf(x[o + j]) * r * c));
}

void cuda_rmsnorm_forward(Backend *b, void *y, float *rstd, const void *x, const void *gamma, int N, int d, float eps) {
    if (N <= 0 || d <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH(row_blocks(N), ROW_THREADS, 0, stream_of(b), rmsnorm_fwd_kernel<T>)(
        (T *)y, rstd, (const T *)x, (const T *)gamma, N, d, eps)));
}

void cuda_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *dy, const void *x,
                           const void *gamma, const float *rstd, int N, int d, int acc_dx, int acc_dgamma) {
    if (N <= 0 || d <= 0) return;
    if (dx)
        DISPATCH(b->dtype, T, (LAUNCH(row_blocks(N), ROW_THREADS, 0, stream_of(b), rmsnorm_bwd_dx_kernel<T>)(
            (T *)dx, (const T *)dy, (const T *)x, (const T *)gamma, rstd, N, d, acc_dx)));
    if (dgamma) colsum_scaled(b, dgamma, dy, x, rstd, N, d, acc_dgamma);     // Σ_n dy·(x·rstd)
}

// ---- BTP's sharded RMSNorm ------------------------------------------------------------------------
// S[N] = Σ_j x[n,j]² (fp32 accumulation, stored in T)
template <typename T>
__global__ void rowsumsq_kernel(T *S, const T *x, int N, int d) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    float ss = warp_row_sumsq(x + (size_t)row * d, d, lane);
    if (lane == 0) S[row] = stf<T>(ss);
}
void cuda_rowsumsq(Backend *b, void *S, const void *x, int N, int d) {
    if (N <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH(row_blocks(N), ROW_THREADS, 0, stream_of(b), rowsumsq_kernel<T>)((T *)S, (const T *)x, N, d)));
}

// y[N,d] = x·f[n]·gamma
template <typename T>
__global__ void rownorm_kernel(T *y, const T *x, const T *gamma, const float *f, int N, int d) {
    for (int n = blockIdx.y * RC_ROWS + threadIdx.y; n < N; n += gridDim.y * RC_ROWS) {
        size_t o = (size_t)n * d;
        float fn = f[n];
        for (int j = blockIdx.x * RC_COLS + threadIdx.x; j < d; j += gridDim.x * RC_COLS)
            y[o + j] = stf<T>(ldf(x[o + j]) * fn * ldf(gamma[j]));
    }
}
void cuda_rownorm(Backend *b, void *y, const void *x, const void *gamma, const void *S, int N, int d, int width, float eps) {
    if (N <= 0 || d <= 0) return;
    const float *f = row_factors(b, S, N, width, eps, -1);
    DISPATCH(b->dtype, T, (LAUNCH(rc_grid(N, d), rc_block(), 0, stream_of(b), rownorm_kernel<T>)(
        (T *)y, (const T *)x, (const T *)gamma, f, N, d)));
}

// Every payload row n of the slots of view v *= f[n]
template <typename T>
__global__ void scale_rows_kernel(T *P, SlotView v, const float *f) {
    for (int n = blockIdx.y * RC_ROWS + threadIdx.y; n < v.N; n += gridDim.y * RC_ROWS) {
        float fn = f[n];
        for (int j = 0; j < v.G; j++) {
            T *row = P + v.off[j] + (size_t)n * v.ld;
            for (int k = blockIdx.x * RC_COLS + threadIdx.x; k < v.r; k += gridDim.x * RC_COLS)
                row[k] = stf<T>(ldf(row[k]) * fn);
        }
    }
}
void cuda_scale_rows(Backend *b, void *P, const SlotView *v, const void *S, int width, float eps, int power) {
    CHECK(v->G >= 1 && v->G <= 3, "scale_rows: %d slots (1..3)", v->G);
    if (v->N <= 0 || v->r <= 0) return;
    const float *f = row_factors(b, S, v->N, width, eps, power);
    DISPATCH(b->dtype, T, (LAUNCH(rc_grid(v->N, v->r), rc_block(), 0, stream_of(b), scale_rows_kernel<T>)((T *)P, *v, f)));
}

// dot[N] = Σ_j Σ_k X·Y over the G slots of view v (fp32)
template <typename T>
__global__ void rowdot_kernel(float *dot, const T *X, const T *Y, SlotView v) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= v.N) return;
    float s = 0.0f;
    for (int j = 0; j < v.G; j++) {
        size_t o = v.off[j] + (size_t)row * v.ld;
        for (int k = lane; k < v.r; k += 32) s += ldf(X[o + k]) * ldf(Y[o + k]);
    }
    s = warp_sum(s);
    if (lane == 0) dot[row] = s;
}
void cuda_rowdot(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v) {
    CHECK(v->G >= 1 && v->G <= 3, "rowdot: %d slots (1..3)", v->G);
    if (v->N <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH(row_blocks(v->N), ROW_THREADS, 0, stream_of(b), rowdot_kernel<T>)(dot, (const T *)X, (const T *)Y, *v)));
}

// dx[N,d] += r·(gamma·da − x·r·dot/d_full), r = rs[n]
template <typename T>
__global__ void sharded_dx_kernel(T *dx, const T *da, const T *x, const T *gamma, const float *rs, const float *dot,
                                  int N, int d, int d_full) {
    RC_ROWS_LOOP(n, N) {
        size_t o = (size_t)n * d;
        float r = rs[n], c = dot[n] / (float)d_full;
        RC_COLS_LOOP(j, d) dx[o + j] = stf<T>(ldf(dx[o + j]) + r * (ldf(gamma[j]) * ldf(da[o + j]) - ldf(x[o + j]) * r * c));
    }
}
void cuda_sharded_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *da, const void *x,
                                   const void *gamma, const void *S, const float *dot, int N, int d,
                                   int d_full, float eps, int acc_dgamma) {
    if (N <= 0 || d <= 0 || (!dx && !dgamma)) return;
    const float *rs = row_factors(b, S, N, d_full, eps, -1);
    if (dx)
        DISPATCH(b->dtype, T, (LAUNCH(rc_grid(N, d), rc_block(), 0, stream_of(b), sharded_dx_kernel<T>)(
            (T *)dx, (const T *)da, (const T *)x, (const T *)gamma, rs, dot, N, d, d_full)));
    if (dgamma) colsum_scaled(b, dgamma, da, x, rs, N, d, acc_dgamma);   // Σ_n da·(x·rstd)
}
