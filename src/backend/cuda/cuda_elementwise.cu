// cuda_elementwise.cu — casts, the strided add, SiLU and the SwiGLU gate product, add,
// scale, and RoPE. Memory-bound grid-stride loops: load T, compute in fp32, store T once.
#include "cuda_common.cuh"
#include <math.h>

enum { EW_THREADS = 256 };

// ---- casts: dst[n] (D) = src[n] (S), round to nearest even where D is narrower -------------
__device__ __forceinline__ float cvt_f(float x) { return x; }
__device__ __forceinline__ float cvt_f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float cvt_f(double x) { return (float)x; }    // RNE (IEEE conversion)
template <typename D> __device__ __forceinline__ D cvt_to(float x);
template <> __device__ __forceinline__ float cvt_to<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 cvt_to<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ double cvt_to<double>(float x) { return (double)x; }

template <typename D, typename S>
__global__ void cast_kernel(D *dst, const S *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = cvt_to<D>(cvt_f(src[i]));
}
// double -> bf16 through fp32 would round twice; a double is first rounded to fp32 only when
// the target is fp32. For bf16 targets the double is rounded directly (__double2bfloat16).
__global__ void cast_d_to_bf16_kernel(bf16 *dst, const double *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __double2bfloat16(src[i]);
}

template <typename D>
static void cast_from(Backend *b, D *dst, const void *src, DType st, size_t n) {
    cudaStream_t s = stream_of(b);
    unsigned g = grid_for(n, EW_THREADS);
    switch (st) {
    case DT_F32: LAUNCH(g, EW_THREADS, 0, s, cast_kernel<D, float>)(dst, (const float *)src, n); break;
    case DT_BF16: LAUNCH(g, EW_THREADS, 0, s, cast_kernel<D, bf16>)(dst, (const bf16 *)src, n); break;
    default: die_at(__FILE__, __LINE__, "cuda cast: source dtype %s not supported", dtype_name(st));
    }
    LAUNCH_CHECK();
}

void cuda_cast(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n) {
    if (n == 0) return;
    if (dt == st) {
        CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(dt), cudaMemcpyDeviceToDevice, stream_of(b)));
        return;
    }
    if (st == DT_F64) {
        unsigned g = grid_for(n, EW_THREADS);
        if (dt == DT_BF16) LAUNCH(g, EW_THREADS, 0, stream_of(b), cast_d_to_bf16_kernel)((bf16 *)dst, (const double *)src, n);
        else if (dt == DT_F32) LAUNCH(g, EW_THREADS, 0, stream_of(b), cast_kernel<float, double>)((float *)dst, (const double *)src, n);
        else die_at(__FILE__, __LINE__, "cuda cast: fp64 -> %s not supported", dtype_name(dt));
        LAUNCH_CHECK();
        return;
    }
    switch (dt) {
    case DT_F32: cast_from<float>(b, (float *)dst, src, st, n); break;
    case DT_BF16: cast_from<bf16>(b, (bf16 *)dst, src, st, n); break;
    case DT_F64: cast_from<double>(b, (double *)dst, src, st, n); break;
    default: die_at(__FILE__, __LINE__, "cuda cast: %s -> %s not supported", dtype_name(st), dtype_name(dt));
    }
}

// ---- dst[rows, cols] (ldd) += src[rows, cols] (lds) ------------------------------------------
template <typename T>
__global__ void add2d_kernel(T *dst, size_t ldd, const T *src, size_t lds, int rows, int cols) {
    RC_ROWS_LOOP(r, rows) {
        T *d = dst + (size_t)r * ldd;
        const T *s = src + (size_t)r * lds;
        RC_COLS_LOOP(c, cols) d[c] = stf<T>(ldf(d[c]) + ldf(s[c]));
    }
}
void cuda_add2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    DISPATCH(b->dtype, T, (LAUNCH(rc_grid(rows, cols), rc_block(), 0, stream_of(b), add2d_kernel<T>)(
        (T *)dst, ldd, (const T *)src, lds, rows, cols)));
}

// ---- SiLU, SwiGLU --------------------------------------------------------------------------
// sigmoid with expf: for x -> -inf, expf(-x) = inf and 1/inf = 0 (no NaN).
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

// y[n] = x·sigmoid(x)
template <typename T> __global__ void silu_fwd_kernel(T *y, const T *x, size_t n) {
    GRID_STRIDE(i, n) { float v = ldf(x[i]); y[i] = stf<T>(v * sigmoid(v)); }
}
// dx[n] = dy·s·(1 + x·(1 − s)), s = sigmoid(x) (overwritten: no zero pass before it)
template <typename T> __global__ void silu_bwd_kernel(T *dx, const T *dy, const T *x, size_t n) {
    GRID_STRIDE(i, n) {
        float v = ldf(x[i]), s = sigmoid(v);
        dx[i] = stf<T>(ldf(dy[i]) * s * (1.0f + v * (1.0f - s)));
    }
}
// z[n] = act(g)·u, act = silu (gate_silu) or identity
template <typename T> __global__ void swiglu_fwd_kernel(T *z, const T *g, const T *u, size_t n, int gate_silu) {
    GRID_STRIDE(i, n) {
        float gv = ldf(g[i]);
        float a = gate_silu ? gv * sigmoid(gv) : gv;
        z[i] = stf<T>(a * ldf(u[i]));
    }
}
// dg[n] = dz·u·act'(g), du[n] = dz·act(g) (overwritten); either may be NULL
template <typename T> __global__ void swiglu_bwd_kernel(T *dg, T *du, const T *dz, const T *g, const T *u,
                                                        size_t n, int gate_silu) {
    GRID_STRIDE(i, n) {
        float gv = ldf(g[i]), dzv = ldf(dz[i]);
        float a, da;                                   // act(g), act'(g)
        if (gate_silu) { float s = sigmoid(gv); a = gv * s; da = s * (1.0f + gv * (1.0f - s)); }
        else { a = gv; da = 1.0f; }
        if (dg) dg[i] = stf<T>(dzv * ldf(u[i]) * da);
        if (du) du[i] = stf<T>(dzv * a);
    }
}
template <typename T> __global__ void add_kernel(T *x, const T *y, size_t n) {
    GRID_STRIDE(i, n) x[i] = stf<T>(ldf(x[i]) + ldf(y[i]));
}
template <typename T> __global__ void scale_kernel(T *x, float s, size_t n) {
    GRID_STRIDE(i, n) x[i] = stf<T>(ldf(x[i]) * s);
}

void cuda_silu_forward(Backend *b, void *y, const void *x, size_t n) {
    if (!n) return;
    DISPATCH(b->dtype, T, (LAUNCH(grid_for(n, EW_THREADS), EW_THREADS, 0, stream_of(b), silu_fwd_kernel<T>)((T *)y, (const T *)x, n)));
}
void cuda_silu_backward(Backend *b, void *dx, const void *dy, const void *x, size_t n) {
    if (!n) return;
    DISPATCH(b->dtype, T, (LAUNCH(grid_for(n, EW_THREADS), EW_THREADS, 0, stream_of(b), silu_bwd_kernel<T>)((T *)dx, (const T *)dy, (const T *)x, n)));
}
void cuda_swiglu_forward(Backend *b, void *z, const void *g, const void *u, size_t n, int gate_silu) {
    if (!n) return;
    DISPATCH(b->dtype, T, (LAUNCH(grid_for(n, EW_THREADS), EW_THREADS, 0, stream_of(b), swiglu_fwd_kernel<T>)(
        (T *)z, (const T *)g, (const T *)u, n, gate_silu)));
}
void cuda_swiglu_backward(Backend *b, void *dg, void *du, const void *dz, const void *g, const void *u,
                          size_t n, int gate_silu) {
    if (!n || (!dg && !du)) return;
    DISPATCH(b->dtype, T, (LAUNCH(grid_for(n, EW_THREADS), EW_THREADS, 0, stream_of(b), swiglu_bwd_kernel<T>)(
        (T *)dg, (T *)du, (const T *)dz, (const T *)g, (const T *)u, n, gate_silu)));
}
void cuda_add(Backend *b, void *x, const void *y, size_t n) {
    if (!n) return;
    DISPATCH(b->dtype, T, (LAUNCH(grid_for(n, EW_THREADS), EW_THREADS, 0, stream_of(b), add_kernel<T>)((T *)x, (const T *)y, n)));
}
void cuda_scale(Backend *b, void *x, float s, size_t n) {
    if (!n) return;
    DISPATCH(b->dtype, T, (LAUNCH(grid_for(n, EW_THREADS), EW_THREADS, 0, stream_of(b), scale_kernel<T>)((T *)x, s, n)));
}

// ---- RoPE ------------------------------------------------------------------------------------
// The (cos, sin) table cs[T, hd/2] of angle t·theta^(-2i/hd) is computed in double, as on
// the CPU (an fp32 angle at t ~ 4096 is off by ~2e-4 rad), and cached in the back end until
// T, hd or theta change.
__global__ void rope_table_kernel(float2 *cs, int T, int hd, double theta) {
    int half = hd / 2;
    size_t n = (size_t)T * half;
    GRID_STRIDE(idx, n) {
        int t = (int)(idx / half), i = (int)(idx % half);
        double a = (double)t * pow(theta, -2.0 * i / hd);
        cs[idx] = make_float2((float)cos(a), (float)sin(a));
    }
}

// x[B,T,H,hd] in place: pairs (i, i + hd/2) rotated by +angle (dir = 1) or −angle (dir = −1).
template <typename T>
__global__ void rope_kernel(T *x, const float2 *cs, int B, int T_, int H, int hd, float dir) {
    int half = hd / 2, rows = B * T_ * H;               // row = (b·T + t)·H + h (B·T·H < 2^31: checked)
    RC_ROWS_LOOP(row, rows) {
        int t = (row / H) % T_;                        // one 32-bit division per row, none per element
        const float2 *ct = cs + (size_t)t * half;
        T *xr = x + (size_t)row * hd;
        RC_COLS_LOOP(i, half) {
            float co = ct[i].x, si = dir * ct[i].y;
            float x0 = ldf(xr[i]), x1 = ldf(xr[i + half]);
            xr[i] = stf<T>(x0 * co - x1 * si);
            xr[i + half] = stf<T>(x0 * si + x1 * co);
        }
    }
}

void cuda_rope(Backend *b, void *x, int B, int T, int H, int hd, float theta, int inverse) {
    CHECK(hd % 2 == 0, "rope: head_dim %d must be even", hd);
    if ((size_t)B * T * H * hd == 0) return;
    CudaImpl *im = impl_of(b);
    if (!im->rope_cs || im->rope_T != T || im->rope_hd != hd || im->rope_theta != theta) {
        size_t need = (size_t)T * (hd / 2);
        if (need > im->rope_cap) {
            if (im->rope_cs) {
                cuda_wait_stream(b, "the work queued before the RoPE table grows");
                CUDA_CHECK(cudaFree(im->rope_cs));
            }
            CUDA_CHECK(cudaMalloc((void **)&im->rope_cs, need * sizeof(float2)));
            im->rope_cap = need;
        }
        LAUNCH(grid_for(need, EW_THREADS), EW_THREADS, 0, im->stream, rope_table_kernel)(im->rope_cs, T, hd, (double)theta);
        LAUNCH_CHECK();
        im->rope_T = T; im->rope_hd = hd; im->rope_theta = theta;
    }
    CHECK((size_t)B * T * H < (1u << 31), "rope: B·T·H = %zu rows (at most 2^31 - 1)", (size_t)B * T * H);
    float dir = inverse ? -1.0f : 1.0f;
    DISPATCH(b->dtype, Tt, (LAUNCH(rc_grid(B * T * H, hd / 2), rc_block(), 0, im->stream, rope_kernel<Tt>)(
        (Tt *)x, im->rope_cs, B, T, H, hd, dir)));
}
