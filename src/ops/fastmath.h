// fastmath.h — a vectorisable expf for the softmax loops (attention, cross-entropy).
//
// Why not expf(): without -ffast-math GCC never vectorises a libm call, and the
// softmax over V=32000 logits per token is exp-bound (32M expf per step at N=1024).
// This is the Cephes single-precision algorithm (range reduction by ln2 split in two
// constants + degree-6 polynomial), max error ~2 ulp over the clamped range, written
// as straight-line float/int code so `#pragma omp simd` loops turn it into AVX2.
#pragma once
#include <stdint.h>
#include <string.h>
#include <math.h>

static inline float fast_expf(float x) {
    // Clamp so that 2^n stays a normal float: exp(-87.33) ~ 1.2e-38 (effectively 0 in
    // a softmax), exp(88.37) ~ 2.4e38 (logits never get there after max subtraction).
    x = x < -87.33654f ? -87.33654f : x;
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    float fx = floorf(x * 1.44269504088896341f + 0.5f);        // n = round(x / ln2)
    x = x - fx * 0.693359375f - fx * -2.12194440e-4f;           // r = x - n*ln2 (2-part ln2)
    float z = x * x;
    float y = 1.9875691500e-4f;
    y = y * x + 1.3981999507e-3f;
    y = y * x + 8.3334519073e-3f;
    y = y * x + 4.1665795894e-2f;
    y = y * x + 1.6666665459e-1f;
    y = y * x + 5.0000001201e-1f;
    y = y * z + x + 1.0f;                                       // e^r
    int32_t n = (int32_t)fx;
    uint32_t bits = (uint32_t)(n + 127) << 23;                  // 2^n as float bits
    float p2; memcpy(&p2, &bits, sizeof p2);
    return y * p2;
}
