// lax_kernels.cu — LaX's crossing ops on the GPU (docs/lax.md §3; lax_kernels.h maps them to
// the BackendOps entries). The arithmetic is backend/cpu/lax.c's:
//
//   layernorm   y = (x − μ)·rstd ⊙ γ + β per row of a strided [N, r] view; one block per
//               row, block-wide sums in a fixed order; dγ, dβ as column sums over fixed row
//               chunks, then the chunks summed in order (no float atomics)
//   dense gate  out += z @ W + b: cuBLAS GEMM into an fp32 temporary, then one kernel adds it,
//               the bias and the old out and rounds once; backward likewise (dz, dW), db by
//               column sums
//   kron gate   out += vec(G1ᵀ·Z·G2) per token (Z = z as [r1, r2]): one block per token with Z,
//               T = Z·G2, G1, G2 in shared memory; backward one block per chunk of tokens:
//               dT = G1·dO, dz += dT·G2ᵀ, and the chunk's partial dG1 = Σ T·dOᵀ, dG2 = Σ Zᵀ·dT,
//               summed over the chunks in order by a second kernel
//
// T is float or __nv_bfloat16 (the back end's compute dtype): loads widen to fp32, all math is
// fp32, each output is rounded once. Every launch is on backend_cuda_stream(b); temporaries
// come from cudaMallocAsync on that stream (stream-ordered, freed after use).
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>

extern "C" {
#include "../backend.h"
#include "cuda_backend.h"
#include "../../core/check.h"
}
#include "lax_kernels.h"

#define CUDA_OK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) \
    die_at(__FILE__, __LINE__, "%s failed: %s", #call, cudaGetErrorString(e_)); } while (0)
#define CUBLAS_OK(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) \
    die_at(__FILE__, __LINE__, "%s failed: %s", #call, cublasGetStatusString(s_)); } while (0)
#define LAUNCHED() CUDA_OK(cudaGetLastError())

static cudaStream_t stream_of(const Backend *b) { return (cudaStream_t)backend_cuda_stream(b); }

// ---- element access: fp32 math on float or bf16 storage -------------------------------------
__device__ __forceinline__ float ld(const float *p) { return *p; }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
__device__ __forceinline__ void st(float *p, float v) { *p = v; }
__device__ __forceinline__ void st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

// Sum of v over the block, returned to every thread; fixed order (shuffles, then warp 0).
__device__ float block_sum(float v) {
    __shared__ float part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    __syncthreads();                          // part[] may still be read by a previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? part[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    return part[0];
}

enum { ROW_THREADS = 128, COL_THREADS = 128, COL_CHUNK = 256, KRON_THREADS = 256, KRON_CHUNK = 32 };

// ---- LayerNorm over r --------------------------------------------------------------------------
template <typename T>
__global__ void ln_forward_k(T *y, int ldy, float *mean, float *rstd, const T *x, int ldx, const T *g, const T *b,
                             int r, float eps) {
    const T *xr = x + (size_t)blockIdx.x * ldx;
    T *yr = y + (size_t)blockIdx.x * ldy;
    float s = 0.0f;
    for (int j = threadIdx.x; j < r; j += blockDim.x) s += ld(xr + j);
    float mu = block_sum(s) / r, v = 0.0f;
    for (int j = threadIdx.x; j < r; j += blockDim.x) { float t = ld(xr + j) - mu; v += t * t; }
    float rs = rsqrtf(block_sum(v) / r + eps);
    if (threadIdx.x == 0) { mean[blockIdx.x] = mu; rstd[blockIdx.x] = rs; }
    for (int j = threadIdx.x; j < r; j += blockDim.x) st(yr + j, (ld(xr + j) - mu) * rs * ld(g + j) + ld(b + j));
}

// dx += rstd·(h − mean(h) − x̂·mean(h ⊙ x̂)), h = dy ⊙ γ
template <typename T>
__global__ void ln_backward_dx_k(T *dx, int lddx, const T *dy, int lddy, const T *x, int ldx, const float *mean,
                                 const float *rstd, const T *g, int r) {
    size_t n = blockIdx.x;
    const T *xr = x + n * ldx, *dyr = dy + n * lddy;
    T *dxr = dx + n * lddx;
    float m = mean[n], rs = rstd[n], sh = 0.0f, shx = 0.0f;
    for (int j = threadIdx.x; j < r; j += blockDim.x) {
        float h = ld(dyr + j) * ld(g + j);
        sh += h; shx += h * (ld(xr + j) - m) * rs;
    }
    float mh = block_sum(sh) / r, mhx = block_sum(shx) / r;
    for (int j = threadIdx.x; j < r; j += blockDim.x) {
        float h = ld(dyr + j) * ld(g + j), xh = (ld(xr + j) - m) * rs;
        st(dxr + j, ld(dxr + j) + rs * (h - mh - xh * mhx));
    }
}

// part[c][j] (and part[nchunk + c][j]) = Σ over rows c·COL_CHUNK .. of dy·x̂ (and of dy); with
// x == NULL only the plain column sums of dy (into part[c][j]).
template <typename T>
__global__ void col_partials_k(float *part, const T *dy, int lddy, const T *x, int ldx, const float *mean,
                               const float *rstd, int N, int r) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y, nchunk = gridDim.y;
    if (j >= r) return;
    int n0 = c * COL_CHUNK, n1 = min(N, n0 + COL_CHUNK);
    float a = 0.0f, s = 0.0f;
    for (int n = n0; n < n1; n++) {
        float d = ld(dy + (size_t)n * lddy + j);
        s += d;
        if (x) a += d * (ld(x + (size_t)n * ldx + j) - mean[n]) * rstd[n];
    }
    if (x) { part[(size_t)c * r + j] = a; part[(size_t)(nchunk + c) * r + j] = s; }
    else part[(size_t)c * r + j] = s;
}
// out[j] += Σ_c part[c][j] (chunks in order); out may be NULL
template <typename T>
__global__ void col_reduce_k(T *out, const float *part, int nchunk, int r) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= r || !out) return;
    float s = 0.0f;
    for (int c = 0; c < nchunk; c++) s += part[(size_t)c * r + j];
    st(out + j, ld(out + j) + s);
}

template <typename T>
static void layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                              const void *gamma, const void *beta, int N, int r, float eps) {
    if (N == 0) return;
    ln_forward_k<T><<<N, ROW_THREADS, 0, stream_of(b)>>>((T *)y, ldy, mean, rstd, (const T *)x, ldx, (const T *)gamma,
                                                          (const T *)beta, r, eps);
    LAUNCHED();
}

// dγ, dβ (either may be NULL; with x NULL: dgamma gets the column sums of dy — the bias gradient)
template <typename T>
static void column_grads(Backend *b, void *dgamma, void *dbeta, const void *dy, int lddy, const void *x, int ldx,
                         const float *mean, const float *rstd, int N, int r) {
    if ((!dgamma && !dbeta) || N == 0) return;
    cudaStream_t s = stream_of(b);
    int nchunk = (N + COL_CHUNK - 1) / COL_CHUNK, nb = (r + COL_THREADS - 1) / COL_THREADS;
    float *part;
    CUDA_OK(cudaMallocAsync((void **)&part, sizeof(float) * 2 * (size_t)nchunk * r, s));
    col_partials_k<T><<<dim3(nb, nchunk), COL_THREADS, 0, s>>>(part, (const T *)dy, lddy, (const T *)x, ldx, mean, rstd, N, r);
    LAUNCHED();
    col_reduce_k<T><<<nb, COL_THREADS, 0, s>>>((T *)dgamma, part, nchunk, r);
    LAUNCHED();
    if (x) { col_reduce_k<T><<<nb, COL_THREADS, 0, s>>>((T *)dbeta, part + (size_t)nchunk * r, nchunk, r); LAUNCHED(); }
    CUDA_OK(cudaFreeAsync(part, s));
}

template <typename T>
static void layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                               const void *x, int ldx, const float *mean, const float *rstd, const void *gamma, int N, int r) {
    if (N == 0) return;
    if (dx) {
        ln_backward_dx_k<T><<<N, ROW_THREADS, 0, stream_of(b)>>>((T *)dx, lddx, (const T *)dy, lddy, (const T *)x, ldx,
                                                                  mean, rstd, (const T *)gamma, r);
        LAUNCHED();
    }
    column_grads<T>(b, dgamma, dbeta, dy, lddy, x, ldx, mean, rstd, N, r);
}

// ---- dense gate: cuBLAS products into fp32 temporaries -----------------------------------------
// One handle per process and device (a rank drives one GPU), bound to the op's stream per call.
static cublasHandle_t cublas_for(const Backend *b) {
    static cublasHandle_t h;
    static int dev = -1;
    int d = backend_cuda_device(b);
    if (!h || dev != d) {
        if (h) CUBLAS_OK(cublasDestroy(h));
        CUDA_OK(cudaSetDevice(d));
        CUBLAS_OK(cublasCreate(&h));
        dev = d;
    }
    CUBLAS_OK(cublasSetStream(h, stream_of(b)));
    return h;
}
template <typename T> static cudaDataType_t cuda_type();
template <> cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <> cudaDataType_t cuda_type<__nv_bfloat16>() { return CUDA_R_16BF; }

// Row-major C[M,N] (fp32, ldc) = op(A)[M,K] · op(B)[K,N] (T), as cuBLAS's column-major
// Cᵀ = op(B)ᵀ · op(A)ᵀ.
template <typename T>
static void gemm_f32out(Backend *b, bool ta, bool tb, int M, int N, int K, const void *A, int lda, const void *B,
                        int ldb, float *C, int ldc) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_OK(cublasGemmEx(cublas_for(b), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one,
                           B, cuda_type<T>(), ldb, A, cuda_type<T>(), lda, &zero, C, CUDA_R_32F, ldc,
                           b->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
// out[rows, cols] (ldo) += tmp[rows, cols] (+ bias[cols] when given), one rounding
template <typename T>
__global__ void add_tmp_k(T *out, int ldo, const float *tmp, const T *bias, int rows, int cols) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * cols) return;
    int n = (int)(i / cols), j = (int)(i % cols);
    float v = ld(out + (size_t)n * ldo + j) + tmp[i] + (bias ? ld(bias + j) : 0.0f);
    st(out + (size_t)n * ldo + j, v);
}
template <typename T>
static void add_tmp(Backend *b, void *out, int ldo, const float *tmp, const void *bias, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    add_tmp_k<T><<<(unsigned)((n + 255) / 256), 256, 0, stream_of(b)>>>((T *)out, ldo, tmp, (const T *)bias, rows, cols);
    LAUNCHED();
}

template <typename T>
static void dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W, const void *bias,
                               int N, int r) {
    if (N == 0) return;
    cudaStream_t s = stream_of(b);
    float *tmp;
    CUDA_OK(cudaMallocAsync((void **)&tmp, sizeof(float) * (size_t)N * r, s));
    gemm_f32out<T>(b, false, false, N, r, r, z, ldz, W, r, tmp, r);          // z @ W
    add_tmp<T>(b, out, ldo, tmp, bias, N, r);                                 // out += z @ W + b
    CUDA_OK(cudaFreeAsync(tmp, s));
}

template <typename T>
static void dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                                const void *z, int ldz, const void *W, int N, int r) {
    if (N == 0) return;
    cudaStream_t s = stream_of(b);
    float *tmp;
    size_t n = (size_t)(N > r ? N : r) * r;
    CUDA_OK(cudaMallocAsync((void **)&tmp, sizeof(float) * n, s));
    if (dz) {
        gemm_f32out<T>(b, false, true, N, r, r, dout, lddo, W, r, tmp, r);   // dout @ Wᵀ
        add_tmp<T>(b, dz, lddz, tmp, NULL, N, r);
    }
    if (dW) {
        gemm_f32out<T>(b, true, false, r, r, N, z, ldz, dout, lddo, tmp, r);  // zᵀ @ dout
        add_tmp<T>(b, dW, r, tmp, NULL, r, r);
    }
    CUDA_OK(cudaFreeAsync(tmp, s));
    column_grads<T>(b, dbias, NULL, dout, lddo, NULL, 0, NULL, NULL, N, r);   // db += Σ_n dout
}

// ---- Kronecker gate -------------------------------------------------------------------------------
// Shared memory: G1 [r1²], G2 [r2²], then the per-token vectors.
static size_t kron_fwd_smem(int r1, int r2) { return sizeof(float) * ((size_t)r1 * r1 + (size_t)r2 * r2 + 2 * (size_t)r1 * r2); }
static size_t kron_bwd_smem(int r1, int r2) {
    return sizeof(float) * (2 * ((size_t)r1 * r1 + (size_t)r2 * r2) + 4 * (size_t)r1 * r2);
}

template <typename T>
__device__ void load_square(float *dst, const T *src, int n) {
    for (int i = threadIdx.x; i < n * n; i += blockDim.x) dst[i] = ld(src + i);
}

template <typename T>
__global__ void kron_forward_k(T *out, int ldo, const T *z, int ldz, const T *G1, const T *G2, int N, int r1, int r2) {
    extern __shared__ float sm[];
    int r = r1 * r2;
    float *g1 = sm, *g2 = g1 + r1 * r1, *Z = g2 + r2 * r2, *Tm = Z + r;
    load_square(g1, G1, r1);
    load_square(g2, G2, r2);
    for (int n = blockIdx.x; n < N; n += gridDim.x) {
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) Z[e] = ld(z + (size_t)n * ldz + e);
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {          // T = Z·G2
            int i = e / r2, j = e % r2;
            float a = 0.0f;
            for (int m = 0; m < r2; m++) a += Z[i * r2 + m] * g2[m * r2 + j];
            Tm[e] = a;
        }
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {          // O = G1ᵀ·T, out += O
            int k = e / r2, j = e % r2;
            float a = 0.0f;
            for (int i = 0; i < r1; i++) a += g1[i * r1 + k] * Tm[i * r2 + j];
            T *o = out + (size_t)n * ldo + e;
            st(o, ld(o) + a);
        }
    }
}

// One block per KRON_CHUNK tokens: dz += dT·G2ᵀ per token, and the chunk's partial sums
// part[blockIdx.x] = [Σ T·dOᵀ (r1²) | Σ Zᵀ·dT (r2²)] accumulated over its tokens in order.
template <typename T>
__global__ void kron_backward_k(T *dz, int lddz, float *part, const T *dout, int lddo, const T *z, int ldz, const T *G1,
                                const T *G2, int N, int r1, int r2) {
    extern __shared__ float sm[];
    int r = r1 * r2, q1 = r1 * r1, q2 = r2 * r2;
    float *g1 = sm, *g2 = g1 + q1, *a1 = g2 + q2, *a2 = a1 + q1, *Z = a2 + q2, *dO = Z + r, *Tm = dO + r, *dT = Tm + r;
    load_square(g1, G1, r1);
    load_square(g2, G2, r2);
    for (int e = threadIdx.x; e < q1 + q2; e += blockDim.x) a1[e] = 0.0f;   // a1, a2 are contiguous
    int n0 = blockIdx.x * KRON_CHUNK, n1 = min(N, n0 + KRON_CHUNK);
    for (int n = n0; n < n1; n++) {
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {
            Z[e] = ld(z + (size_t)n * ldz + e);
            dO[e] = ld(dout + (size_t)n * lddo + e);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < r; e += blockDim.x) {
            int i = e / r2, j = e % r2;
            float t = 0.0f, d = 0.0f;
            for (int m = 0; m < r2; m++) t += Z[i * r2 + m] * g2[m * r2 + j];        // T = Z·G2
            for (int k = 0; k < r1; k++) d += g1[i * r1 + k] * dO[k * r2 + j];       // dT = G1·dO
            Tm[e] = t; dT[e] = d;
        }
        __syncthreads();
        if (dz)
            for (int e = threadIdx.x; e < r; e += blockDim.x) {                       // dz += dT·G2ᵀ
                int i = e / r2, m = e % r2;
                float a = 0.0f;
                for (int j = 0; j < r2; j++) a += dT[i * r2 + j] * g2[m * r2 + j];
                T *p = dz + (size_t)n * lddz + e;
                st(p, ld(p) + a);
            }
        for (int e = threadIdx.x; e < q1; e += blockDim.x) {                          // dG1 += T·dOᵀ
            int i = e / r1, k = e % r1;
            float a = 0.0f;
            for (int j = 0; j < r2; j++) a += Tm[i * r2 + j] * dO[k * r2 + j];
            a1[e] += a;
        }
        for (int e = threadIdx.x; e < q2; e += blockDim.x) {                          // dG2 += Zᵀ·dT
            int m = e / r2, j = e % r2;
            float a = 0.0f;
            for (int i = 0; i < r1; i++) a += Z[i * r2 + m] * dT[i * r2 + j];
            a2[e] += a;
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < q1 + q2; e += blockDim.x) part[(size_t)blockIdx.x * (q1 + q2) + e] = a1[e];
}
// dG1 += Σ_c part[c][0 .. q1), dG2 += Σ_c part[c][q1 .. q1+q2) (chunks in order)
template <typename T>
__global__ void kron_reduce_k(T *dG1, T *dG2, const float *part, int nchunk, int q1, int q2) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= q1 + q2) return;
    T *out = e < q1 ? (dG1 ? dG1 + e : NULL) : (dG2 ? dG2 + (e - q1) : NULL);
    if (!out) return;
    float s = 0.0f;
    for (int c = 0; c < nchunk; c++) s += part[(size_t)c * (q1 + q2) + e];
    st(out, ld(out) + s);
}

// Dynamic shared memory above the 48 KiB default needs an opt-in per kernel (r1·r2 ≥ ~2500).
template <typename K>
static void allow_smem(K kernel, size_t bytes) {
    if (bytes > 48 * 1024) CUDA_OK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <typename T>
static void kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1, const void *G2,
                              int N, int r1, int r2) {
    if (N == 0) return;
    size_t smem = kron_fwd_smem(r1, r2);
    allow_smem(kron_forward_k<T>, smem);
    int grid = N < 65535 ? N : 65535;
    kron_forward_k<T><<<grid, KRON_THREADS, smem, stream_of(b)>>>((T *)out, ldo, (const T *)z, ldz, (const T *)G1,
                                                                  (const T *)G2, N, r1, r2);
    LAUNCHED();
}

template <typename T>
static void kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                               const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2) {
    if (N == 0) return;
    cudaStream_t s = stream_of(b);
    int nchunk = (N + KRON_CHUNK - 1) / KRON_CHUNK, q1 = r1 * r1, q2 = r2 * r2;
    float *part;
    CUDA_OK(cudaMallocAsync((void **)&part, sizeof(float) * (size_t)nchunk * (q1 + q2), s));
    size_t smem = kron_bwd_smem(r1, r2);
    allow_smem(kron_backward_k<T>, smem);
    kron_backward_k<T><<<nchunk, KRON_THREADS, smem, s>>>((T *)dz, lddz, part, (const T *)dout, lddo, (const T *)z, ldz,
                                                          (const T *)G1, (const T *)G2, N, r1, r2);
    LAUNCHED();
    kron_reduce_k<T><<<(q1 + q2 + 255) / 256, 256, 0, s>>>((T *)dG1, (T *)dG2, part, nchunk, q1, q2);
    LAUNCHED();
    CUDA_OK(cudaFreeAsync(part, s));
}

// ---- the C entries: dispatch on the compute dtype ---------------------------------------------------
#define DISPATCH(b, fn, ...) do { \
    if ((b)->dtype == DT_F32) fn<float>(b, __VA_ARGS__); \
    else if ((b)->dtype == DT_BF16) fn<__nv_bfloat16>(b, __VA_ARGS__); \
    else die_at(__FILE__, __LINE__, "LaX CUDA kernels: compute dtype %s is not fp32 or bf16", dtype_name((b)->dtype)); \
} while (0)

extern "C" void cuda_lax_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                                           const void *gamma, const void *beta, int N, int r, float eps) {
    DISPATCH(b, layernorm_forward, y, ldy, mean, rstd, x, ldx, gamma, beta, N, r, eps);
}
extern "C" void cuda_lax_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy,
                                            int lddy, const void *x, int ldx, const float *mean, const float *rstd,
                                            const void *gamma, int N, int r) {
    DISPATCH(b, layernorm_backward, dx, lddx, dgamma, dbeta, dy, lddy, x, ldx, mean, rstd, gamma, N, r);
}
extern "C" void cuda_lax_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W,
                                            const void *bias, int N, int r) {
    DISPATCH(b, dense_gate_forward, out, ldo, z, ldz, W, bias, N, r);
}
extern "C" void cuda_lax_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout,
                                             int lddo, const void *z, int ldz, const void *W, int N, int r) {
    DISPATCH(b, dense_gate_backward, dz, lddz, dW, dbias, dout, lddo, z, ldz, W, N, r);
}
extern "C" void cuda_lax_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1,
                                           const void *G2, int N, int r1, int r2) {
    DISPATCH(b, kron_gate_forward, out, ldo, z, ldz, G1, G2, N, r1, r2);
}
extern "C" void cuda_lax_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout,
                                            int lddo, const void *z, int ldz, const void *G1, const void *G2, int N,
                                            int r1, int r2) {
    DISPATCH(b, kron_gate_backward, dz, lddz, dG1, dG2, dout, lddo, z, ldz, G1, G2, N, r1, r2);
}
