// fastmath.h — a vectorisable expf for the softmax/sigmoid loops.
//
// Why not expf(): without -ffast-math GCC never vectorises a libm call, and e.g. the
// softmax over V=32000 logits per token is exp-bound (32M exps per step at N=1024).
// This is the Cephes single-precision algorithm (n = round(x/ln2), r = x - n*ln2 with
// ln2 split in two constants, degree-6 polynomial for e^r, times 2^n): max relative
// error 8.3e-8 (measured over the clamped range). It is written so GCC vectorises it inside
// `#pragma omp simd` loops under the project's strict flags (-std=c11, trapping math):
//  * floorf/rintf do not vectorise there, so rounding uses the 1.5*2^23 trick (this
//    file must never be built with -ffast-math, which would fold that away);
//  * a float compare feeding arithmetic blocks if-conversion under -ftrapping-math,
//    so the clamp compares the floats' bit patterns as ordered integers instead.
//  * -std=c11 turns off FP contraction, so the polynomial uses fmaf explicitly where
//    the target has FMA (one rounding per step: faster and slightly more accurate).
//
// FM_WIDE on a function lets GCC vectorise its loops with 512-bit registers where the build
// targets AVX-512 (GCC's default for -march=native on Intel is 256 bits). The exp-bound
// loops (softmax, sigmoid) run about twice as fast, and the results are the same bits:
// fast_expf is the same sequence of IEEE operations in every lane at either width (only a
// reduction's order of summation can differ: the lanes it is split over).
//
// fmv_exp is fast_expf on 16 (AVX-512) or 8 (AVX2 + FMA) lanes for the hottest loops
// (cross-entropy, the sigmoids), where GCC's vectorisation of fast_expf spends a third of the
// time on the integer clamp and the integer 2^n. The same IEEE operations give the same bits in
// every lane (the 16-lane form compared on all 2^32 inputs when written; tests/test_ops.c
// compares a sample of them and the kernels at the build's width). FM_VEC, below, gives it and
// the few operations those loops need around it (fmv_*), so that each loop is written once for
// either width.
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __FMA__
#define FM_FMA_(a, b, c) fmaf((a), (b), (c))
#else
#define FM_FMA_(a, b, c) ((a) * (b) + (c))
#endif

// int32 whose signed order is the float order (non-NaN); the map is its own inverse.
static inline int32_t fm_ord_(float f) { int32_t b; memcpy(&b, &f, 4); return b ^ ((b >> 31) & 0x7fffffff); }
static inline float fm_unord_(int32_t o) { int32_t b = o ^ ((o >> 31) & 0x7fffffff); float f; memcpy(&f, &b, 4); return f; }

#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define FM_WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define FM_WIDE
#endif

// The constants of both forms below (fmv_exp must give fast_expf's bits): the clamp,
// round(x / ln2) by adding and subtracting 1.5·2^23, ln2 in two parts, the polynomial.
#define FM_EXP_LO -87.33654f
#define FM_EXP_HI 88.3762626647949f
#define FM_LOG2E 1.44269504088896341f
#define FM_ROUND 12582912.0f
#define FM_LN2_HI -0.693359375f
#define FM_LN2_LO 2.12194440e-4f
#define FM_EXP_P0 1.9875691500e-4f
#define FM_EXP_P1 1.3981999507e-3f
#define FM_EXP_P2 8.3334519073e-3f
#define FM_EXP_P3 4.1665795894e-2f
#define FM_EXP_P4 1.6666665459e-1f
#define FM_EXP_P5 5.0000001201e-1f

static inline float fast_expf(float x) {
    // Clamp so that 2^n stays a normal float: exp(-87.34) ~ 1.2e-38 (0 for any softmax),
    // exp(88.38) ~ 2.4e38 (sigmoid(-88) ~ 4e-39 either way).
    // NaN is passed through (integer test, same reason) so a diverged run still shows NaN.
    int32_t xb; memcpy(&xb, &x, 4);
    int nan = (xb & 0x7fffffff) > 0x7f800000;
    int32_t o = fm_ord_(x);
    const int32_t lo = -1118743632 /* fm_ord_(FM_EXP_LO) */, hi = 1118879909 /* fm_ord_(FM_EXP_HI) */;
    o = o < lo ? lo : o;
    o = o > hi ? hi : o;
    x = fm_unord_(o);
    float fx = (x * FM_LOG2E + FM_ROUND) - FM_ROUND;                    // round(x / ln2)
    x = FM_FMA_(fx, FM_LN2_HI, x);                                      // r = x - n*ln2, in
    x = FM_FMA_(fx, FM_LN2_LO, x);                                      //   [-ln2/2, ln2/2]
    float z = x * x;
    float y = FM_EXP_P0;
    y = FM_FMA_(y, x, FM_EXP_P1);
    y = FM_FMA_(y, x, FM_EXP_P2);
    y = FM_FMA_(y, x, FM_EXP_P3);
    y = FM_FMA_(y, x, FM_EXP_P4);
    y = FM_FMA_(y, x, FM_EXP_P5);
    y = FM_FMA_(y, z, x) + 1.0f;                                        // e^r
    int32_t n = (int32_t)fx;
    uint32_t bits = (uint32_t)(n + 127) << 23;                          // 2^n
    float p2; memcpy(&p2, &bits, sizeof p2);
    float r = y * p2;
    int32_t rb; memcpy(&rb, &r, 4);
    int32_t msk = -(int32_t)nan;                                        // all ones if NaN
    rb = (xb & msk) | (rb & ~msk);                                      // (a ?: here is not if-converted)
    memcpy(&r, &rb, 4);
    return r;
}

// ---- FM_VEC: fast_expf and the exp-bound loops at the widest width the build has ----------
// fmv: FMV_LANES floats (AVX-512: 16; AVX2 + FMA: 8); fmvd: half as many
// doubles. Per instruction set only the primitives below; fmv_exp is written once over them.
// fmv_loadn/fmv_storen: the block at p + i of a buffer of n floats (i < n), whole where
// FMV_LANES fit, else only the lanes below n (the others read as 0, never written).
// fmvd_add_halves: the low half of e converted to double and added to *lo, the high half to *hi
// (lane k of e goes to lane k of lo:hi). fmv_scale2n(y, n): y·2^n for integral n in [-126, 127],
// one rounding (AVX-512: vscalefps; AVX2: 2^n built in the exponent bits, then one multiply, as
// fast_expf does). fmv_keep_nan(r, x): r, with x itself in the lanes where x is a NaN.
#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#define FM_VEC 1
#define FMV_LANES 16
typedef __m512 fmv;
typedef __m512d fmvd;
// the lanes of the 16-float block at i that lie below n (i < n): the last block is masked, so
// a loop over blocks needs no scalar tail (masked-off lanes are neither read nor written)
static inline __mmask16 fm_mask16(size_t i, size_t n) {
    return n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
}
static inline fmv fmv_set1(float a) { return _mm512_set1_ps(a); }
static inline fmv fmv_add(fmv a, fmv b) { return _mm512_add_ps(a, b); }
static inline fmv fmv_sub(fmv a, fmv b) { return _mm512_sub_ps(a, b); }
static inline fmv fmv_mul(fmv a, fmv b) { return _mm512_mul_ps(a, b); }
static inline fmv fmv_div(fmv a, fmv b) { return _mm512_div_ps(a, b); }
static inline fmv fmv_fmadd(fmv a, fmv b, fmv c) { return _mm512_fmadd_ps(a, b, c); }
static inline fmv fmv_min(fmv a, fmv b) { return _mm512_min_ps(a, b); }
static inline fmv fmv_max(fmv a, fmv b) { return _mm512_max_ps(a, b); }
static inline fmv fmv_neg(fmv a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN))); }
static inline fmv fmv_scale2n(fmv y, fmv n) { return _mm512_scalef_ps(y, n); }
static inline fmv fmv_keep_nan(fmv r, fmv x) { return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x); }
static inline fmv fmv_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void fmv_store(float *p, fmv v) { _mm512_storeu_ps(p, v); }
static inline fmv fmv_loadn(const float *p, size_t i, size_t n) { return _mm512_maskz_loadu_ps(fm_mask16(i, n), p + i); }
static inline void fmv_storen(float *p, fmv v, size_t i, size_t n) { _mm512_mask_storeu_ps(p + i, fm_mask16(i, n), v); }
static inline fmvd fmvd_zero(void) { return _mm512_setzero_pd(); }
static inline void fmvd_store(double *p, fmvd v) { _mm512_storeu_pd(p, v); }
static inline void fmvd_add_halves(fmvd *lo, fmvd *hi, fmv e) {
    *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    *hi = _mm512_add_pd(*hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
}
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FM_VEC 1
#define FMV_LANES 8
typedef __m256 fmv;
typedef __m256d fmvd;
static inline __m256i fm_mask8_(size_t i, size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline fmv fmv_set1(float a) { return _mm256_set1_ps(a); }
static inline fmv fmv_add(fmv a, fmv b) { return _mm256_add_ps(a, b); }
static inline fmv fmv_sub(fmv a, fmv b) { return _mm256_sub_ps(a, b); }
static inline fmv fmv_mul(fmv a, fmv b) { return _mm256_mul_ps(a, b); }
static inline fmv fmv_div(fmv a, fmv b) { return _mm256_div_ps(a, b); }
static inline fmv fmv_fmadd(fmv a, fmv b, fmv c) { return _mm256_fmadd_ps(a, b, c); }
static inline fmv fmv_min(fmv a, fmv b) { return _mm256_min_ps(a, b); }
static inline fmv fmv_max(fmv a, fmv b) { return _mm256_max_ps(a, b); }
static inline fmv fmv_neg(fmv a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
static inline fmv fmv_scale2n(fmv y, fmv n) {
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}
static inline fmv fmv_keep_nan(fmv r, fmv x) { return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
static inline fmv fmv_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void fmv_store(float *p, fmv v) { _mm256_storeu_ps(p, v); }
// (vmaskmovps only for a partial block: its store form is slow on AMD)
static inline fmv fmv_loadn(const float *p, size_t i, size_t n) {
    return n - i >= 8 ? _mm256_loadu_ps(p + i) : _mm256_maskload_ps(p + i, fm_mask8_(i, n));
}
static inline void fmv_storen(float *p, fmv v, size_t i, size_t n) {
    if (n - i >= 8) _mm256_storeu_ps(p + i, v); else _mm256_maskstore_ps(p + i, fm_mask8_(i, n), v);
}
static inline fmvd fmvd_zero(void) { return _mm256_setzero_pd(); }
static inline void fmvd_store(double *p, fmvd v) { _mm256_storeu_pd(p, v); }
static inline void fmvd_add_halves(fmvd *lo, fmvd *hi, fmv e) {
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}
#endif

#ifdef FM_VEC
// fast_expf of each lane, the same bits: for a non-NaN x, vmaxps/vminps clamp exactly as the
// integer order does; round(x / ln2) is the same add and subtract of 1.5·2^23; the same fused
// steps; y·2^n with the one rounding of fast_expf's y·p2 (2^n is a normal float after the
// clamp, so that product is correctly rounded, subnormal results included); a NaN lane
// returns x itself, as fast_expf does.
static inline fmv fmv_exp(fmv x) {
    fmv c = fmv_min(fmv_max(x, fmv_set1(FM_EXP_LO)), fmv_set1(FM_EXP_HI));
    const fmv round = fmv_set1(FM_ROUND);
    fmv fx = fmv_sub(fmv_add(fmv_mul(c, fmv_set1(FM_LOG2E)), round), round);
    fmv r = fmv_fmadd(fx, fmv_set1(FM_LN2_HI), c);
    r = fmv_fmadd(fx, fmv_set1(FM_LN2_LO), r);
    fmv z = fmv_mul(r, r);
    fmv y = fmv_set1(FM_EXP_P0);
    y = fmv_fmadd(y, r, fmv_set1(FM_EXP_P1));
    y = fmv_fmadd(y, r, fmv_set1(FM_EXP_P2));
    y = fmv_fmadd(y, r, fmv_set1(FM_EXP_P3));
    y = fmv_fmadd(y, r, fmv_set1(FM_EXP_P4));
    y = fmv_fmadd(y, r, fmv_set1(FM_EXP_P5));
    y = fmv_add(fmv_fmadd(y, z, r), fmv_set1(1.0f));
    return fmv_keep_nan(fmv_scale2n(y, fx), x);
}
#endif
