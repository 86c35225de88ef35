// attn_avx2.c — the AVX2+FMA tile kernels of the CPU flash attention: attn_simd.h with
// 8-lane vectors (vmaskmovps for the tails, 2^n built in the exponent bits). Compiled to a
// NULL table where the build does not target AVX2 and FMA. On an AVX-512 build it is still
// compiled (the tests compare it with the AVX-512 kernels); attention.c uses the widest.
#include <stddef.h>
#include "attn_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

#define VT __m256
#define VL 8
// 16 ymm registers. qk: 8 rows × 8 columns = 8 accumulators. acc: 6 rows × 16 columns = 12
// accumulators + 2 rows of Y + a broadcast: 12 FMAs per 8 loads (4 rows: 8 per 6, and 8
// chains barely cover the FMA latency). Measured on Zen 3 (docs/benchmarks.md): 6 rows ran the
// backward 5-15 points of the peak faster than 4 at s 256-2048; 4 rows × 2 vectors for qk
// was slower than 8 × 1. Which sums share registers does not change the bits.
#define NV_A 1
#define MR_B 6
#define NV_B 2
#define ISA_NAME "avx2"
#define ISA_TABLE attn_isa_avx2_table

// lanes < n all ones
static inline __m256i lanes_(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define vzero() _mm256_setzero_ps()
#define vset1(x) _mm256_set1_ps(x)
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps((p), (v))
#define vloadn(p, n) _mm256_maskload_ps((p), lanes_(n))
#define vstoren(p, v, n) _mm256_maskstore_ps((p), lanes_(n), (v))
#define vkeep(v, n, fill) _mm256_blendv_ps(_mm256_set1_ps(fill), (v), _mm256_castsi256_ps(lanes_(n)))
#define vfma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define vadd(a, b) _mm256_add_ps((a), (b))
#define vmul(a, b) _mm256_mul_ps((a), (b))
#define vmax(a, b) _mm256_max_ps((a), (b))

static inline float vhsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}
static inline float vhmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#define vsub(a, b) _mm256_sub_ps((a), (b))
#define vmin(a, b) _mm256_min_ps((a), (b))
#define vround(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
// p·2^n with 2^n = (n + 127) << 23 in the exponent bits (n in [−126, 127] after the clamp)
#define VEXP2_CLAMP 1
#define vscale2n(p, n) _mm256_mul_ps((p), _mm256_castsi256_ps(_mm256_slli_epi32( \
    _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)))

// The cross-lane step of vtranspose (attn_simd.h): r[4i + j] lane L holds rows 4i..4i+3 of
// column 4L + j; column c = 4L + j is lane L of r[j] and of r[4 + j] (permute2f128).
#define vunpacklo(a, b) _mm256_unpacklo_ps((a), (b))
#define vunpackhi(a, b) _mm256_unpackhi_ps((a), (b))
#define vshuffle(a, b, imm) _mm256_shuffle_ps((a), (b), (imm))
static inline void vtranspose_across(__m256 r[8]) {
    __m256 t[8];
    for (int j = 0; j < 4; j++) {
        t[j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20);
        t[4 + j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}

#include "attn_simd.h"
const AttnIsa *const attn_isa_avx2 = &attn_isa_avx2_table;
#else
const AttnIsa *const attn_isa_avx2 = NULL;
#endif
