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

// Where the build targets AVX-512, the sigmoid loops below run over blocks of 16 with
// fast_expf16: the same operations in the same order as the scalar expressions (C11 does not
// contract them), so the same bits (tests/test_ops.c activation_vector_bits).
#ifdef FM_AVX512
static inline __m512 sigmoid16_(__m512 x) {
    __m512 negx = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
    return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), fast_expf16(negx)));
}
static inline __m512 silu_slope16_(__m512 x, __m512 s) {
    __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_add_ps(one, _mm512_mul_ps(x, _mm512_sub_ps(one, s)));
}
#define LD16(m, p) _mm512_maskz_loadu_ps((m), (p))
#endif

// y[n] = x * sigmoid(x); x[n]
FM_WIDE void cpu_silu_forward(float *y, const float *x, size_t n) {
#ifdef FM_AVX512
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = fm_mask16(i, n);
        __m512 v = LD16(m, x + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, sigmoid16_(v)));
    }
    return;
#endif
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) y[i] = x[i] * sigmoidf_(x[i]);
}

// dx[n] = dy * silu'(x), silu'(x) = s * (1 + x * (1 - s)); dy[n], x[n]. Overwrites dx: its
// callers' dx is a scratch buffer written here first, so no zero pass is needed before.
FM_WIDE void cpu_silu_backward(float *dx, const float *dy, const float *x, size_t n) {
#ifdef FM_AVX512
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = fm_mask16(i, n);
        __m512 v = LD16(m, x + i), s = sigmoid16_(v);
        __m512 d = _mm512_mul_ps(_mm512_mul_ps(LD16(m, dy + i), s), silu_slope16_(v, s));
        _mm512_mask_storeu_ps(dx + i, m, d);
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
#ifdef FM_AVX512
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i += 16) {
            __mmask16 m = fm_mask16(i, n);
            __m512 v = LD16(m, g + i);
            _mm512_mask_storeu_ps(z + i, m, _mm512_mul_ps(_mm512_mul_ps(v, sigmoid16_(v)), LD16(m, u + i)));
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
#ifdef FM_AVX512
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i += 16) {
            __mmask16 m = fm_mask16(i, n);
            __m512 gv = LD16(m, g + i), s = sigmoid16_(gv), dzv = LD16(m, dz + i);
            __m512 d = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(dzv, LD16(m, u + i)), s), silu_slope16_(gv, s));
            _mm512_mask_storeu_ps(dg + i, m, d);
            _mm512_mask_storeu_ps(du + i, m, _mm512_mul_ps(_mm512_mul_ps(dzv, gv), s));
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
