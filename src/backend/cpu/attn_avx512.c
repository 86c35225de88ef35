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

#include "attn_simd.h"
const AttnIsa *const attn_isa_avx512 = &attn_isa_avx512_table;
#else
const AttnIsa *const attn_isa_avx512 = NULL;
#endif
