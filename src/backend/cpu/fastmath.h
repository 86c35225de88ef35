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
// fast_expf16 is fast_expf on 16 lanes for the hottest loops (cross-entropy, the sigmoids),
// where GCC's vectorisation of fast_expf spends a third of the time on the integer clamp and
// the integer 2^n. The same IEEE operations give the same bits in every lane (compared on all
// 2^32 inputs when written; tests/test_ops.c compares a sample of them and the kernels).
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

// The constants of both forms below (fast_expf16 must give fast_expf's bits): the clamp,
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

#if defined(__AVX512F__) && defined(__FMA__)   // (the same fused steps as fast_expf)
#include <immintrin.h>
#define FM_AVX512 1
// fast_expf of each lane, the same bits: for a non-NaN x, vmaxps/vminps clamp exactly as the
// integer order does; round(x / ln2) is the same add and subtract of 1.5·2^23; vscalefps
// multiplies y by 2^n with the one rounding of y·2^n (2^n is a normal float after the clamp,
// so y·p2 above is that same correctly rounded product, subnormal results included); a NaN
// lane returns x itself, as above.
static inline __m512 fast_expf16(__m512 x) {
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __m512 c = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(FM_EXP_LO)), _mm512_set1_ps(FM_EXP_HI));
    const __m512 round = _mm512_set1_ps(FM_ROUND);
    __m512 fx = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(c, _mm512_set1_ps(FM_LOG2E)), round), round);
    __m512 r = _mm512_fmadd_ps(fx, _mm512_set1_ps(FM_LN2_HI), c);
    r = _mm512_fmadd_ps(fx, _mm512_set1_ps(FM_LN2_LO), r);
    __m512 z = _mm512_mul_ps(r, r);
    __m512 y = _mm512_set1_ps(FM_EXP_P0);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FM_EXP_P1));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FM_EXP_P2));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FM_EXP_P3));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FM_EXP_P4));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FM_EXP_P5));
    y = _mm512_add_ps(_mm512_fmadd_ps(y, z, r), _mm512_set1_ps(1.0f));
    return _mm512_mask_mov_ps(_mm512_scalef_ps(y, fx), nan, x);
}
// the lanes of the 16-float block at i that lie below n (i < n): the last block is masked, so
// a loop over blocks needs no scalar tail (masked-off lanes are neither read nor written)
static inline __mmask16 fm_mask16(size_t i, size_t n) {
    return n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
}
#endif
