// activation.c — SiLU, the SwiGLU gate product and the residual add. Pure elementwise,
// memory-bound: one OpenMP+SIMD loop each (static schedule: results never depend on timing).
#include "kernels.h"
#include "fastmath.h"

// fast_expf (not libm expf) so the loops vectorise: the MLP gate is N*d_ff wide. The
// sigmoid loops are FM_WIDE (fastmath.h): exp- and divide-bound, same bits at 512 bits.
static inline float sigmoidf_(float x) { return 1.0f / (1.0f + fast_expf(-x)); }
// silu'(x) = s * (1 + x * (1 - s)) with s = sigmoid(x): the factor after s, the one place the
// derivative is written (callers multiply by s first: the order their bits were set in)
static inline float silu_slope_(float x, float s) { return 1.0f + x * (1.0f - s); }

// Where the build has FM_VEC (fastmath.h: AVX-512 or AVX2 + FMA), the sigmoid loops below run
// over blocks of FMV_LANES with fmv_exp: the same operations in the same order as the scalar
// expressions (C11 does not contract them), so the same bits (tests/test_ops.c
// activation_vector_bits).
#ifdef FM_VEC
static inline fmv sigmoidv_(fmv x) { return fmv_div(fmv_set1(1.0f), fmv_add(fmv_set1(1.0f), fmv_exp(fmv_neg(x)))); }
static inline fmv silu_slopev_(fmv x, fmv s) { return fmv_add(fmv_set1(1.0f), fmv_mul(x, fmv_sub(fmv_set1(1.0f), s))); }
#define LDV(p) fmv_loadn((p), i, n)
#define STV(p, v) fmv_storen((p), (v), i, n)
#endif

// y[n] = x * sigmoid(x); x[n]
FM_WIDE void cpu_silu_forward(float *y, const float *x, size_t n) {
#ifdef FM_VEC
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += FMV_LANES) {
        fmv v = LDV(x);
        STV(y, fmv_mul(v, sigmoidv_(v)));
    }
    return;
#endif
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) y[i] = x[i] * sigmoidf_(x[i]);
}

// dx[n] = dy * silu'(x), silu'(x) = s * (1 + x * (1 - s)); dy[n], x[n]. Overwrites dx: its
// callers' dx is a scratch buffer written here first, so no zero pass is needed before.
FM_WIDE void cpu_silu_backward(float *dx, const float *dy, const float *x, size_t n) {
#ifdef FM_VEC
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += FMV_LANES) {
        fmv v = LDV(x), s = sigmoidv_(v);
        STV(dx, fmv_mul(fmv_mul(LDV(dy), s), silu_slopev_(v, s)));
    }
    return;
#endif
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float s = sigmoidf_(x[i]);
        dx[i] = dy[i] * s * silu_slope_(x[i], s);
    }
}

// z[n] = act(g) * u with act = silu (gate_silu) or identity (CoLA's only_lr_act); g[n], u[n]
FM_WIDE void cpu_swiglu_forward(float *z, const float *g, const float *u, size_t n, int gate_silu) {
    if (gate_silu) {
#ifdef FM_VEC
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i += FMV_LANES) {
            fmv v = LDV(g);
            STV(z, fmv_mul(fmv_mul(v, sigmoidv_(v)), LDV(u)));
        }
        return;
#endif
        #pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) z[i] = g[i] * sigmoidf_(g[i]) * u[i];
    } else {
        #pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) z[i] = g[i] * u[i];
    }
}

// dg[n] = dz * u * act'(g), du[n] = dz * act(g) (overwritten, as silu_backward); dz[n], g[n],
// u[n]. Either grad may be NULL. The NULL tests stay outside the loops so that every loop vectorises.
FM_WIDE void cpu_swiglu_backward(float *dg, float *du, const float *dz, const float *g, const float *u, size_t n, int gate_silu) {
    if (gate_silu && dg && du) {
#ifdef FM_VEC
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i += FMV_LANES) {
            fmv gv = LDV(g), s = sigmoidv_(gv), dzv = LDV(dz);
            STV(dg, fmv_mul(fmv_mul(fmv_mul(dzv, LDV(u)), s), silu_slopev_(gv, s)));
            STV(du, fmv_mul(fmv_mul(dzv, gv), s));
        }
        return;
#endif
        #pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) {
            float s = sigmoidf_(g[i]);
            dg[i] = dz[i] * u[i] * s * silu_slope_(g[i], s);
            du[i] = dz[i] * g[i] * s;
        }
    } else if (gate_silu) {
        if (dg) {
            #pragma omp parallel for simd schedule(static)
            for (size_t i = 0; i < n; i++) {
                float s = sigmoidf_(g[i]);
                dg[i] = dz[i] * u[i] * s * silu_slope_(g[i], s);
            }
        }
        if (du) {
            #pragma omp parallel for simd schedule(static)
            for (size_t i = 0; i < n; i++) du[i] = dz[i] * g[i] * sigmoidf_(g[i]);
        }
    } else {
        if (dg) {
            #pragma omp parallel for simd schedule(static)
            for (size_t i = 0; i < n; i++) dg[i] = dz[i] * u[i];
        }
        if (du) {
            #pragma omp parallel for simd schedule(static)
            for (size_t i = 0; i < n; i++) du[i] = dz[i] * g[i];
        }
    }
}

// x[n] += y[n]
void cpu_add_inplace(float *x, const float *y, size_t n) {
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

// dst[rows,cols] (row stride ldd) += src[rows,cols] (row stride lds)
void cpu_add2d(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        float *d = dst + (size_t)i * ldd;
        const float *s = src + (size_t)i * lds;
        #pragma omp simd
        for (int j = 0; j < cols; j++) d[j] += s[j];
    }
}
