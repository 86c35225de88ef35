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

static inline float fast_expf(float x) {
    // Clamp so that 2^n stays a normal float: exp(-87.34) ~ 1.2e-38 (0 for any softmax),
    // exp(88.38) ~ 2.4e38 (sigmoid(-88) ~ 4e-39 either way).
    // NaN is passed through (integer test, same reason) so a diverged run still shows NaN.
    int32_t xb; memcpy(&xb, &x, 4);
    int nan = (xb & 0x7fffffff) > 0x7f800000;
    int32_t o = fm_ord_(x);
    const int32_t lo = -1118743632 /* fm_ord_(-87.33654f) */, hi = 1118879909 /* fm_ord_(88.3762626647949f) */;
    o = o < lo ? lo : o;
    o = o > hi ? hi : o;
    x = fm_unord_(o);
    float fx = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   // round(x / ln2)
    x = FM_FMA_(fx, -0.693359375f, x);                                  // r = x - n*ln2, in
    x = FM_FMA_(fx, 2.12194440e-4f, x);                                 //   [-ln2/2, ln2/2]
    float z = x * x;
    float y = 1.9875691500e-4f;
    y = FM_FMA_(y, x, 1.3981999507e-3f);
    y = FM_FMA_(y, x, 8.3334519073e-3f);
    y = FM_FMA_(y, x, 4.1665795894e-2f);
    y = FM_FMA_(y, x, 1.6666665459e-1f);
    y = FM_FMA_(y, x, 5.0000001201e-1f);
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
