// attn_avx512.c — the AVX-512F tile kernels of the CPU flash attention: attn_simd.h with
// 16-lane vectors (masked loads and stores for the head-dim and row tails, vscalefps for
// 2^n in exp2). Compiled to a NULL table where the build does not target AVX-512F.
#include <stddef.h>
#include "attn_kernels.h"

#ifdef __AVX512F__
#include <immintrin.h>
#include <math.h>

#define VT __m512
#define VL 16
#define NV_A 2   // qk block: 8 rows × 32 columns = 16 accumulators
#define MR_B 6   // acc block: 6 rows × 64 columns = 24 accumulators
#define NV_B 4
#define ISA_NAME "avx512"
#define ISA_TABLE attn_isa_avx512_table

#define MASK_(n) ((__mmask16)((1u << (n)) - 1u))
#define vzero() _mm512_setzero_ps()
#define vset1(x) _mm512_set1_ps(x)
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps((p), (v))
#define vloadn(p, n) _mm512_maskz_loadu_ps(MASK_(n), (p))
#define vstoren(p, v, n) _mm512_mask_storeu_ps((p), MASK_(n), (v))
#define vkeep(v, n, fill) _mm512_mask_mov_ps(_mm512_set1_ps(fill), MASK_(n), (v))
#define vfma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define vadd(a, b) _mm512_add_ps((a), (b))
#define vmul(a, b) _mm512_mul_ps((a), (b))
#define vmax(a, b) _mm512_max_ps((a), (b))
#define vhsum(v) _mm512_reduce_add_ps(v)
#define vhmax(v) _mm512_reduce_max_ps(v)

#define vsub(a, b) _mm512_sub_ps((a), (b))
#define vmin(a, b) _mm512_min_ps((a), (b))
#define vround(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vscale2n(p, n) _mm512_scalef_ps((p), (n))   // vscalefps

// The cross-lane step of vtranspose (attn_simd.h): r[4i + j] lane L holds rows 4i..4i+3 of
// column 4L + j; column c = 4L + j gathers lane L of r[j], r[4 + j], r[8 + j], r[12 + j]
// (two rounds of shuffle_f32x4).
#define vunpacklo(a, b) _mm512_unpacklo_ps((a), (b))
#define vunpackhi(a, b) _mm512_unpackhi_ps((a), (b))
#define vshuffle(a, b, imm) _mm512_shuffle_ps((a), (b), (imm))
static inline void vtranspose_across(__m512 r[16]) {
    __m512 t[16];
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88); t[j + 4] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
        t[j + 8] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88); t[j + 12] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[4 + j] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD);
        r[12 + j] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0xDD);
    }
}

#include "attn_simd.h"
const AttnIsa *const attn_isa_avx512 = &attn_isa_avx512_table;
#else
const AttnIsa *const attn_isa_avx512 = NULL;
#endif
