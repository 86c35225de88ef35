// lax_kernels.cu — LaX's crossing ops on the GPU (docs/lax.md §3; lax_kernels.h maps them to
// the BackendOps entries). The arithmetic is backend/cpu/lax.c's, with its double
// accumulators wherever it has them (they cost nothing next to the loads):
//
//   layernorm   y = (x − μ)·rstd ⊙ γ + β per row of a strided [N, r] view: a warp per row,
//               μ, var and the backward's two row means in double; dγ, dβ by a two-stage
//               column reduction (chunks of LN_ROWS_PER_CHUNK rows summed in row order into
//               double partials, then the partials in chunk order; no float atomics)
//   dense gate  out += z @ W + b: one cuBLASLt GEMM with beta = 1 on out and the BIAS
//               epilogue (cuda_gemm_into), fp32 accumulation and one rounding per element, as
//               backend/cpu/cpu_bf16.c does; the backward dz += dout·Wᵀ, dW += zᵀ·dout as
//               GEMMs with beta = 1, db by column sums. (It used to be a GEMM into an fp32
//               product in scratch and a kernel adding it: a write and a read of N·r fp32
//               per GEMM, and a second pass, fewer now.) Backward outputs follow the acc flags
//               (ops.h): beta 0 / a store where an output is its step's first write.
//   kron gate   out += vec(G1ᵀ·Z·G2) per token (Z = z as [r1, r2]): one block per token with
//               G1, G2, Z and T = Z·G2 in shared memory; backward one block per chunk of
//               KRON_CHUNK tokens: dT = G1·dO, dz += dT·G2ᵀ, and the chunk's double partials
//               of dG1 = Σ T·dOᵀ and dG2 = Σ Zᵀ·dT, summed over the chunks in order by a
//               second kernel
//
// T is float or bf16 (the back end's compute dtype): loads widen to fp32, products and
// element updates are fp32 (dot products in double as on the CPU), each output is rounded
// once. Everything is queued on the back end's stream; temporaries are the back end's scratch.
#include "cuda_common.cuh"
#include "lax_kernels.h"
#include <math.h>

enum {
    ROW_THREADS = 256, ROWS_PER_BLOCK = ROW_THREADS / 32,   // layernorm rows: a warp per row
    COL_THREADS = 128, LN_ROWS_PER_CHUNK = 64,              // column sums
    KRON_MAX_THREADS = 256, KRON_CHUNK = 32,                // kron gate
};

static unsigned row_blocks(int N) { return (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK); }

// ---- LayerNorm over r ------------------------------------------------------------------------
// y = (x − μ)·rstd ⊙ γ + β, μ and the biased variance in double; y may be x (same ld): every
// lane reads its elements before it writes them.
template <typename T>
__global__ void ln_fwd_kernel(T *y, int ldy, float *mean, float *rstd, const T *x, int ldx, const T *gamma,
                              const T *beta, int N, int r, float eps) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    const T *xr = x + (size_t)row * ldx;
    T *yr = y + (size_t)row * ldy;
    double s = 0.0;
    for (int j = lane; j < r; j += 32) s += ldf(xr[j]);
    double mu = warp_sum_d(s) / r, v = 0.0;
    for (int j = lane; j < r; j += 32) { double t = ldf(xr[j]) - mu; v += t * t; }
    float m = (float)mu, rs = (float)(1.0 / sqrt(warp_sum_d(v) / r + (double)eps));
    if (lane == 0) { mean[row] = m; rstd[row] = rs; }
    for (int j = lane; j < r; j += 32) yr[j] = stf<T>((ldf(xr[j]) - m) * rs * ldf(gamma[j]) + ldf(beta[j]));
}

// x̂ = (x − μ)·rstd, h = dy ⊙ γ:  dx (+)= rstd·(h − mean_r(h) − x̂·mean_r(h ⊙ x̂)), the means in double
template <typename T>
__global__ void ln_bwd_dx_kernel(T *dx, int lddx, const T *dy, int lddy, const T *x, int ldx, const float *mean,
                                 const float *rstd, const T *gamma, int N, int r, int acc) {
    int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    const T *xr = x + (size_t)row * ldx, *dyr = dy + (size_t)row * lddy;
    T *dxr = dx + (size_t)row * lddx;
    float m = mean[row], rs = rstd[row];
    double sh = 0.0, shx = 0.0;
    for (int j = lane; j < r; j += 32) {
        double h = (double)ldf(dyr[j]) * ldf(gamma[j]), xh = (double)(ldf(xr[j]) - m) * rs;
        sh += h; shx += h * xh;
    }
    float mh = (float)(warp_sum_d(sh) / r), mhx = (float)(warp_sum_d(shx) / r);
    for (int j = lane; j < r; j += 32)
        dxr[j] = stf<T>((acc ? ldf(dxr[j]) : 0.0f) + rs * (ldf(dyr[j]) * ldf(gamma[j]) - mh - (ldf(xr[j]) - m) * rs * mhx));
}

// ---- deterministic column sums of a strided view ----------------------------------------------
// part [2][chunks][r] (double): part[0][c][j] = Σ dy·x̂ over the rows of chunk c (only when x
// is given), part[1][c][j] = Σ dy, rows in order.
template <typename T>
__global__ void col_partial_kernel(double *part, const T *dy, int lddy, const T *x, int ldx, const float *mean,
                                   const float *rstd, int N, int r) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
    if (j >= r) return;
    int n0 = c * LN_ROWS_PER_CHUNK, n1 = min(N, n0 + LN_ROWS_PER_CHUNK);
    double a = 0.0, s = 0.0;
    for (int n = n0; n < n1; n++) {
        float d = ldf(dy[(size_t)n * lddy + j]);
        s += d;
        if (x) a += (double)d * ((ldf(x[(size_t)n * ldx + j]) - mean[n]) * rstd[n]);
    }
    size_t chunks = gridDim.y;
    if (x) part[(size_t)c * r + j] = a;
    part[(chunks + c) * r + j] = s;
}
// dst0[j] (+)= Σ_c part[0][c][j], dst1[j] (+)= Σ_c part[1][c][j] (chunks in order; acc; either may be NULL)
template <typename T>
__global__ void col_finish_kernel(T *dst0, T *dst1, const double *part, int chunks, int r, int acc) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= r) return;
    if (dst0) {
        double s = 0.0;
        for (int c = 0; c < chunks; c++) s += part[(size_t)c * r + j];
        dst0[j] = stf<T>((acc ? ldf(dst0[j]) : 0.0f) + (float)s);
    }
    if (dst1) {
        double s = 0.0;
        for (int c = 0; c < chunks; c++) s += part[(size_t)(chunks + c) * r + j];
        dst1[j] = stf<T>((acc ? ldf(dst1[j]) : 0.0f) + (float)s);
    }
}
// dxhat (+)= Σ_n dy ⊙ x̂ (x given), dsum (+)= Σ_n dy (acc); either output may be NULL (partials in SCR_PART)
static void column_sums(Backend *b, void *dxhat, void *dsum, const void *dy, int lddy, const void *x, int ldx,
                        const float *mean, const float *rstd, int N, int r, int acc) {
    if (!dxhat && !dsum) return;
    if (!dxhat) x = NULL;
    int chunks = (N + LN_ROWS_PER_CHUNK - 1) / LN_ROWS_PER_CHUNK;
    double *part = (double *)cuda_scratch(b, SCR_PART, sizeof(double) * 2 * (size_t)chunks * r);
    unsigned cb = (unsigned)((r + COL_THREADS - 1) / COL_THREADS);
    DISPATCH(b->dtype, T, (LAUNCH(dim3(cb, (unsigned)chunks), COL_THREADS, 0, stream_of(b), col_partial_kernel<T>)(
        part, (const T *)dy, lddy, (const T *)x, ldx, mean, rstd, N, r)));
    DISPATCH(b->dtype, T, (LAUNCH(cb, COL_THREADS, 0, stream_of(b), col_finish_kernel<T>)(
        (T *)dxhat, (T *)dsum, part, chunks, r, acc)));
}

extern "C" void cuda_lax_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                                           const void *gamma, const void *beta, int N, int r, float eps) {
    if (N <= 0 || r <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH(row_blocks(N), ROW_THREADS, 0, stream_of(b), ln_fwd_kernel<T>)(
        (T *)y, ldy, mean, rstd, (const T *)x, ldx, (const T *)gamma, (const T *)beta, N, r, eps)));
}

extern "C" void cuda_lax_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy,
                                            int lddy, const void *x, int ldx, const float *mean, const float *rstd,
                                            const void *gamma, int N, int r, int acc_dx, int acc_dw) {
    if (N <= 0 || r <= 0) return;
    if (dx)
        DISPATCH(b->dtype, T, (LAUNCH(row_blocks(N), ROW_THREADS, 0, stream_of(b), ln_bwd_dx_kernel<T>)(
            (T *)dx, lddx, (const T *)dy, lddy, (const T *)x, ldx, mean, rstd, (const T *)gamma, N, r, acc_dx)));
    column_sums(b, dgamma, dbeta, dy, lddy, x, ldx, mean, rstd, N, r, acc_dw);   // dγ = Σ dy ⊙ x̂, dβ = Σ dy
}

// ---- dense gate: g(z) = z @ W + b --------------------------------------------------------------
// out[N, r] (ldo) += z[N, r] (ldz) @ W[r, r] + bias[r]
extern "C" void cuda_lax_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W,
                                            const void *bias, int N, int r) {
    if (N <= 0 || r <= 0) return;
    GemmArgs g = { TR_N, TR_N, N, r, r, 1.0f, z, ldz, W, r, 1.0f, out, ldo };
    cuda_gemm_into(b, &g, out, ldo, bias);                                    // out = out + z @ W + b
}

// dz (+)= dout @ Wᵀ (acc_dz), dW (+)= zᵀ @ dout, dbias (+)= Σ_n dout (acc_dw) (any may be NULL)
extern "C" void cuda_lax_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout,
                                             int lddo, const void *z, int ldz, const void *W, int N, int r,
                                             int acc_dz, int acc_dw) {
    if (N <= 0 || r <= 0) return;
    if (dz) {
        GemmArgs g = { TR_N, TR_T, N, r, r, 1.0f, dout, lddo, W, r, acc_dz ? 1.0f : 0.0f, dz, lddz };
        cuda_gemm(b, &g);                                                     // dz (+)= dout @ Wᵀ
    }
    if (dW) {
        GemmArgs g = { TR_T, TR_N, r, r, N, 1.0f, z, ldz, dout, lddo, acc_dw ? 1.0f : 0.0f, dW, r };
        cuda_gemm(b, &g);                                                     // dW (+)= zᵀ @ dout
    }
    column_sums(b, NULL, dbias, dout, lddo, NULL, 0, NULL, NULL, N, r, acc_dw);
}

// ---- Kronecker gate: g(z) = z @ (G1 ⊗ G2) -----------------------------------------------------
// Per token, Z = z[n] as [r1, r2] (row-major), T = Z·G2, and out[n] += G1ᵀ·T.
// Threads per block: enough for the r (and r1² + r2²) elements a thread loop walks, whole warps.
static int kron_threads(int r1, int r2) {
    int r = r1 * r2, q = r1 * r1 + r2 * r2, n = r > q ? r : q;
    n = (n + 31) / 32 * 32;
    return n < KRON_MAX_THREADS ? n : KRON_MAX_THREADS;
}
// Shared memory (bytes). Forward: G1 [r1²], G2 [r2²], Z [r], T [r] (fp32). Backward: the
// chunk's accumulators dG1 [r1²], dG2 [r2²] (double, first: aligned), then G1, G2, Z, dO, T, dT.
static size_t kron_fwd_smem(int r1, int r2) {
    return sizeof(float) * ((size_t)r1 * r1 + (size_t)r2 * r2 + 2 * (size_t)r1 * r2);
}
static size_t kron_bwd_smem(int r1, int r2) {
    size_t q = (size_t)r1 * r1 + (size_t)r2 * r2;
    return sizeof(double) * q + sizeof(float) * (q + 4 * (size_t)r1 * r2);
}

template <typename T>
__device__ __forceinline__ void load_square(float *dst, const T *src, int n) {
    for (int i = threadIdx.x; i < n * n; i += blockDim.x) dst[i] = ldf(src[i]);
}

template <typename T>
__global__ void kron_fwd_kernel(T *out, int ldo, const T *z, int ldz, const T *G1, const T *G2, int N, int r1, int r2) {
    DYN_SMEM(smem);
    int r = r1 * r2;
    float *g1 = (float *)smem, *g2 = g1 + r1 * r1, *Z = g2 + r2 * r2, *Tm = Z + r;
    load_square(g1, G1, r1);
    load_square(g2, G2, r2);
    for (int n = blockIdx.x; n < N; n += gridDim.x) {
        __syncthreads();                                             // G1, G2 loaded; last token's T read
        for (int e = threadIdx.x; e < r; e += blockDim.x) Z[e] = ldf(z[(size_t)n * ldz + e]);
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {          // T = Z·G2 (stored fp32, as on the CPU)
            int i = e / r2, j = e % r2;
            double a = 0.0;
            for (int m = 0; m < r2; m++) a += (double)Z[i * r2 + m] * g2[m * r2 + j];
            Tm[e] = (float)a;
        }
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {          // out += G1ᵀ·T
            int k = e / r2, j = e % r2;
            double a = 0.0;
            for (int i = 0; i < r1; i++) a += (double)g1[i * r1 + k] * Tm[i * r2 + j];
            T *o = out + (size_t)n * ldo + e;
            *o = stf<T>(ldf(*o) + (float)a);
        }
    }
}

// Block c owns tokens [c·KRON_CHUNK, (c+1)·KRON_CHUNK): dz (+)= dT·G2ᵀ per token (acc_dz; dz may be NULL),
// and part[c] = [Σ T·dOᵀ (r1²) | Σ Zᵀ·dT (r2²)] over its tokens in order (double; part NULL:
// neither dG1 nor dG2 is wanted).
template <typename T>
__global__ void kron_bwd_kernel(T *dz, int lddz, double *part, const T *dout, int lddo, const T *z, int ldz, const T *G1,
                                const T *G2, int N, int r1, int r2, int acc_dz) {
    DYN_SMEM(smem);
    int r = r1 * r2, q1 = r1 * r1, q2 = r2 * r2;
    double *a1 = (double *)smem, *a2 = a1 + q1;
    float *g1 = (float *)(a2 + q2), *g2 = g1 + q1, *Z = g2 + q2, *dO = Z + r, *Tm = dO + r, *dT = Tm + r;
    load_square(g1, G1, r1);
    load_square(g2, G2, r2);
    for (int e = threadIdx.x; e < q1 + q2; e += blockDim.x) a1[e] = 0.0;    // a1, a2 are contiguous
    int n0 = blockIdx.x * KRON_CHUNK, n1 = min(N, n0 + KRON_CHUNK);
    for (int n = n0; n < n1; n++) {
        __syncthreads();                                             // G1, G2 loaded; last token read
        for (int e = threadIdx.x; e < r; e += blockDim.x) {
            Z[e] = ldf(z[(size_t)n * ldz + e]);
            dO[e] = ldf(dout[(size_t)n * lddo + e]);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {
            int i = e / r2, j = e % r2;
            double t = 0.0, d = 0.0;
            for (int m = 0; m < r2; m++) t += (double)Z[i * r2 + m] * g2[m * r2 + j];      // T = Z·G2
            for (int k = 0; k < r1; k++) d += (double)g1[i * r1 + k] * dO[k * r2 + j];     // dT = G1·dO
            Tm[e] = (float)t; dT[e] = (float)d;
        }
        __syncthreads();
        if (dz)
            for (int e = threadIdx.x; e < r; e += blockDim.x) {                             // dz (+)= dT·G2ᵀ
                int i = e / r2, m = e % r2;
                double a = 0.0;
                for (int j = 0; j < r2; j++) a += (double)dT[i * r2 + j] * g2[m * r2 + j];
                T *p = dz + (size_t)n * lddz + e;
                *p = stf<T>((acc_dz ? ldf(*p) : 0.0f) + (float)a);
            }
        if (!part) continue;
        for (int e = threadIdx.x; e < q1; e += blockDim.x) {                                // dG1 += T·dOᵀ
            int i = e / r1, k = e % r1;
            double a = 0.0;
            for (int j = 0; j < r2; j++) a += (double)Tm[i * r2 + j] * dO[k * r2 + j];
            a1[e] += a;
        }
        for (int e = threadIdx.x; e < q2; e += blockDim.x) {                                // dG2 += Zᵀ·dT
            int m = e / r2, j = e % r2;
            double a = 0.0;
            for (int i = 0; i < r1; i++) a += (double)Z[i * r2 + m] * dT[i * r2 + j];
            a2[e] += a;
        }
    }
    if (!part) return;
    __syncthreads();           // a2[e] is thread e's (mod blockDim), its copy thread (q1 + e)'s
    for (int e = threadIdx.x; e < q1 + q2; e += blockDim.x) part[(size_t)blockIdx.x * (q1 + q2) + e] = a1[e];
}
// dG1 (+)= Σ_c part[c][0 .. q1), dG2 (+)= Σ_c part[c][q1 .. q1+q2) (chunks in order; acc; either may be NULL)
template <typename T>
__global__ void kron_finish_kernel(T *dG1, T *dG2, const double *part, int chunks, int q1, int q2, int acc) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= q1 + q2) return;
    T *dst = e < q1 ? (dG1 ? dG1 + e : NULL) : (dG2 ? dG2 + (e - q1) : NULL);
    if (!dst) return;
    double s = 0.0;
    for (int c = 0; c < chunks; c++) s += part[(size_t)c * (q1 + q2) + e];
    *dst = stf<T>((acc ? ldf(*dst) : 0.0f) + (float)s);
}

// out[N, r1·r2] (ldo) += vec(G1ᵀ·Z[n]·G2); G1 [r1, r1], G2 [r2, r2]
extern "C" void cuda_lax_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1,
                                           const void *G2, int N, int r1, int r2) {
    if (N <= 0 || r1 <= 0 || r2 <= 0) return;
    size_t smem = kron_fwd_smem(r1, r2);
    unsigned grid = (unsigned)(N < 65535 ? N : 65535);              // blocks stride over the tokens
    DISPATCH(b->dtype, T, (cuda_set_smem(b, kron_fwd_kernel<T>, smem, "kron_gate_forward"),
                           LAUNCH(grid, kron_threads(r1, r2), smem, stream_of(b), kron_fwd_kernel<T>)(
                               (T *)out, ldo, (const T *)z, ldz, (const T *)G1, (const T *)G2, N, r1, r2)));
}

// With dO[n] = dout[n] as [r1, r2]: dz[n] (+)= dT[n]·G2ᵀ (acc_dz), dG1 (+)= Σ_n T[n]·dO[n]ᵀ, dG2 (+)=
// Σ_n Z[n]ᵀ·dT[n] (acc_dw) (dT = G1·dO, T = Z·G2; any output may be NULL)
extern "C" void cuda_lax_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout,
                                            int lddo, const void *z, int ldz, const void *G1, const void *G2, int N,
                                            int r1, int r2, int acc_dz, int acc_dw) {
    if (N <= 0 || r1 <= 0 || r2 <= 0) return;
    int chunks = (N + KRON_CHUNK - 1) / KRON_CHUNK, q1 = r1 * r1, q2 = r2 * r2;
    double *part = dG1 || dG2 ? (double *)cuda_scratch(b, SCR_PART, sizeof(double) * (size_t)chunks * (q1 + q2)) : NULL;
    size_t smem = kron_bwd_smem(r1, r2);
    DISPATCH(b->dtype, T, (cuda_set_smem(b, kron_bwd_kernel<T>, smem, "kron_gate_backward"),
                           LAUNCH(chunks, kron_threads(r1, r2), smem, stream_of(b), kron_bwd_kernel<T>)(
                               (T *)dz, lddz, part, (const T *)dout, lddo, (const T *)z, ldz, (const T *)G1,
                               (const T *)G2, N, r1, r2, acc_dz)));
    if (dG1 || dG2)
        DISPATCH(b->dtype, T, (LAUNCH((q1 + q2 + 255) / 256, 256, 0, stream_of(b), kron_finish_kernel<T>)(
            (T *)dG1, (T *)dG2, part, chunks, q1, q2, acc_dw)));
}
