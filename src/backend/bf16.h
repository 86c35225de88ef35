// bf16.h — bfloat16 <-> fp32 on the host: the top 16 bits of an IEEE fp32, rounded to
// nearest even (NaN stays a quiet NaN). The same rounding as CUDA's __float2bfloat16_rn,
// so the CPU bf16 back end rounds where and how the GPU kernels do.
#pragma once
#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

static inline bf16 bf16_from_f32(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16)((u >> 16) | 0x40);   // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                        // round to nearest even
    return (bf16)(u >> 16);
}
static inline float bf16_to_f32(bf16 h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4);
    return f;
}
