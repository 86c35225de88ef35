// attention.c — causal multi-head flash attention with grouped KV heads (FlashAttention-2's
// algorithm, Dao 2023, on the CPU): tiles of ATT_BQ queries against tiles of ATT_BK keys with
// an online softmax. Only the per-row log-sum-exp is saved; the backward recomputes the
// probabilities tile by tile from it, with D = rowsum(dO ⊙ O). Activation memory is O(B·T·d)
// per layer instead of the O(B·H·T²) probabilities of a materialised softmax.
//
// How it is made fast on a few cores:
//  * The products of a tile are computed by our own register-blocked micro-kernels
//    (attn_kernels.h: AVX-512, AVX2 or scalar, the widest the build targets), not by sgemm
//    calls (with K = hd = 64 the sgemm-per-tile version reached 14–37 % of the sgemm peak,
//    docs/benchmarks.md). Kᵀ and Vᵀ of a head are packed once per thread and head (the qk
//    kernel broadcasts a query and loads 32 keys' worth of one head-dim coordinate; pack_t
//    transposes 16 × 16 blocks in registers); a query block is copied once into contiguous
//    rows that the qk kernel broadcasts from and every key tile reuses; V, K, Q, dO and the
//    forward's O accumulator are contiguous copies (see pack_tiles_t); the backward's
//    products accumulate straight into the rows of dq, dk and dv (TileOut).
//  * Causality: query block [i0, i1) only touches keys [0, i1); key tiles past it are never
//    visited, and on the diagonal tile the kernels skip the register blocks above the
//    diagonal (8 × 32 for QKᵀ, exact key ranges per 6-row block for the products with P).
//    Masked entries inside a computed block are written as exact zeros.
//  * The operands come from L3 or DRAM inside a training step: the rows the next query block
//    and the next item (head) will read, and the output rows they will write, are prefetched
//    a tile ahead while the current tiles are computed (Prefetch).
//  * The softmax runs in base 2: p = 2^(s·scale·log2 e − m), so one FMA and a vector exp2
//    (vscalefps) per score.
//  * Threads (OpenMP): the forward is split over whole heads where there are at least 4 per
//    thread (B·H = 32 in a CoLA-60M step at batch 4), else over chunks of a head's query
//    blocks, paired first with last so that chunks cost the same under the causal mask; each
//    item writes its own rows of out and lse. (Items of single query blocks had both threads
//    pack the keys and values of every head.) The backward is split over (batch, kv head)
//    tasks: the H/Hkv query heads sharing a kv head accumulate into the same dk/dv rows, so
//    they run in one task, in order. Each thread takes a contiguous share of the items or
//    tasks (thread_range: the rows RoPE gave it). With fewer tasks than threads the backward runs in two
//    parallel passes instead — dk/dv by key tile, then dq by query block — recomputing the
//    probabilities in each (7 tile products instead of 5, on every thread). Every output
//    element is summed in the same order on every path (tile by tile, in order), so the
//    results are bit-identical run to run and for any thread count.
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "attn_kernels.h"
#include "../../core/check.h"

#ifndef ATT_BQ
#define ATT_BQ 64
#endif
#ifndef ATT_BK
#define ATT_BK 64
#endif
_Static_assert(ATT_BQ % ATT_PANEL == 0, "ATT_BQ must be a multiple of the 8-row panels");
_Static_assert(ATT_BK % 32 == 0, "ATT_BK must be a multiple of 32 (the qk kernels' column blocks)");

#define LOG2E 1.4426950408889634
#define LN2 0.6931471805599453

// ---- which kernels ------------------------------------------------------------------
static const AttnIsa *g_isa;
static const AttnIsa *isa_best(void) {
    return attn_isa_avx512 ? attn_isa_avx512 : attn_isa_avx2 ? attn_isa_avx2 : &attn_isa_scalar;
}
static const AttnIsa *isa(void) {   // called outside parallel regions only
    if (!g_isa) g_isa = isa_best();
    return g_isa;
}
const char *cpu_attention_isa(void) { return isa()->name; }
const char *cpu_attention_use_isa(const char *name) {
    const AttnIsa *want = !strcmp(name, "avx512") ? attn_isa_avx512 : !strcmp(name, "avx2") ? attn_isa_avx2
                        : !strcmp(name, "scalar") ? &attn_isa_scalar : NULL;
    if (!want) return NULL;
    const char *was = isa()->name;
    g_isa = want;
    return was;
}

// ---- shapes, packing, per-thread scratch ---------------------------------------------
typedef struct {
    int B, T, H, Hkv, hd, G;   // G = H / Hkv query heads per kv head
    int ldq, ldkv, nkt;        // row strides of q/out (H·hd) and k/v (Hkv·hd); key tiles
    float scale, c;            // 1/sqrt(hd); scale·log2 e (scores in base 2)
    const AttnIsa *isa;
} Att;

static Att att_shape(int B, int T, int H, int Hkv, int hd) {
    CHECK(Hkv > 0 && H % Hkv == 0, "attention: n_heads %d not a multiple of n_kv_heads %d", H, Hkv);
    CHECK(T > 0 && hd > 0, "attention: T %d and head dim %d must be positive", T, hd);
    double scale = 1.0 / sqrt((double)hd);
    Att a = { B, T, H, Hkv, hd, H / Hkv, H * hd, Hkv * hd, (T + ATT_BK - 1) / ATT_BK, (float)scale,
              (float)(scale * LOG2E), isa() };
    return a;
}
static size_t q_off(const Att *a, int b, int h) { return (size_t)b * a->T * a->ldq + (size_t)h * a->hd; }
static size_t kv_off(const Att *a, int b, int kh) { return (size_t)b * a->T * a->ldkv + (size_t)kh * a->hd; }

// The packed copies of a head's keys and values are contiguous: rows of q/k/v are H·hd
// floats apart (2 KiB at 8 heads of 64), and walking 64 such rows maps them onto a few L1
// sets (conflict misses that halved the kernels' speed).
//
// Key tiles transposed, one [hd, ATT_BK] block per tile: Xt[tile][c][t − j0] = X[t][c],
// 0 for t ≥ T — the keys as the qk kernels read them (ldb = ATT_BK). The kernel set's pack_t
// transposes 16 × 16 (8 × 8) blocks in registers.
static void pack_tiles_t(float *Xt, const float *X, int ld, const Att *a) {
    for (int j0 = 0; j0 < a->T; j0 += ATT_BK) {
        int n = a->T - j0 < ATT_BK ? a->T - j0 : ATT_BK;
        a->isa->pack_t(Xt + (size_t)(j0 / ATT_BK) * a->hd * ATT_BK, ATT_BK, X + (size_t)j0 * ld, ld, n, a->hd);
    }
}
static const float *tile_t(const float *Xt, int j0, const Att *a) { return Xt + (size_t)(j0 / ATT_BK) * a->hd * ATT_BK; }

// n rows of X [., hd] (ld) as contiguous rows [n, hd]: the A operand of qk, the Y operand of acc.
static void pack_rows(float *Xc, const float *X, int ld, int n, int hd) {
    for (int t = 0; t < n; t++) memcpy(Xc + (size_t)t * hd, X + (size_t)t * ld, sizeof(float) * (size_t)hd);
}
typedef struct {
    float *Kt, *Vt;          // [nkt, hd, ATT_BK] key tiles of kv head `packed`, transposed: K; V (backward)
    float *Kc, *Vc;          // [T, hd] contiguous rows: K (backward); V (forward)
    long packed;             // b·Hkv + kh of the packed copies, −1 for none
    float *Qc, *dOc, *Oc;    // [ATT_BQ, hd] contiguous: Q, dO block (backward); O accumulator (forward)
    float *S, *dP;           // [ATT_BQ, ATT_BK] scores → P; dP → dS (backward)
    float *mrow, *alpha, *lrow, *D;   // [ATT_BQ] row statistics
    double *l;               // [ATT_BQ] running softmax sums (up to T terms)
    int *blk, *nblk;         // [nqb] the query blocks of a forward item; of the next one
} Work;

// The buffers of a Work are carved from one block per thread that lives as long as the
// thread (OpenMP's pool: the process) and grows when a call needs more. Allocated per call,
// the blocks of a few hundred KiB came back from the kernel each time: page faults and
// zeroing were ~5 % of a B 4, s 256 backward (perf). Nothing is read before it is written.
// The block is also the value of a pthread key whose destructor frees it when its thread
// ends: OpenMP's pool shrinks when a caller asks for fewer threads, and a _Thread_local
// pointer alone would lose the block with the thread (LeakSanitizer reports it).
static _Thread_local char *g_scratch;
static _Thread_local size_t g_scratch_n;
static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static void scratch_free(void *p) { free(p); }
static void scratch_key_create(void) {
    CHECK(pthread_key_create(&g_scratch_key, scratch_free) == 0, "attention: pthread_key_create failed");
}
static size_t r64(size_t n) { return (n + 63) / 64 * 64; }
static void *take(char **at, size_t n) { void *p = *at; *at += r64(n); return p; }

static Work work_alloc(const Att *a, int backward) {
    Work w;
    size_t kt = sizeof(float) * (size_t)a->nkt * a->hd * ATT_BK, kc = sizeof(float) * (size_t)a->T * a->hd;
    size_t blk = sizeof(float) * ATT_BQ * (size_t)a->hd, tile = sizeof(float) * ATT_BQ * ATT_BK;
    size_t nqb = (size_t)(a->T + ATT_BQ - 1) / ATT_BQ, row = sizeof(float) * ATT_BQ;
    size_t need = r64(kt) + r64(blk) + r64(tile) + r64(row) + r64(sizeof(double) * ATT_BQ)   // what both take
                + (backward ? r64(kt) + r64(kc) + r64(blk) + r64(tile) + 2 * r64(row)
                            : r64(kc) + r64(blk) + r64(row) + 2 * r64(sizeof(int) * nqb));
    if (need > g_scratch_n) {
        CHECK(pthread_once(&g_scratch_once, scratch_key_create) == 0, "attention: pthread_once failed");
        free(g_scratch);
        g_scratch = xaligned_alloc(need);
        g_scratch_n = need;
        CHECK(pthread_setspecific(g_scratch_key, g_scratch) == 0, "attention: pthread_setspecific failed");
    }
    char *at = g_scratch;
    memset(&w, 0, sizeof w);
    w.packed = -1;
    w.Kt = take(&at, kt);
    w.Qc = take(&at, blk);
    w.S = take(&at, tile);
    w.mrow = take(&at, sizeof(float) * ATT_BQ);
    w.l = take(&at, sizeof(double) * ATT_BQ);
    if (backward) {
        w.Vt = take(&at, kt); w.Kc = take(&at, kc);
        w.dOc = take(&at, blk); w.dP = take(&at, tile);
        w.lrow = take(&at, sizeof(float) * ATT_BQ); w.D = take(&at, sizeof(float) * ATT_BQ);
    } else {
        w.Vc = take(&at, kc); w.Oc = take(&at, blk);
        w.alpha = take(&at, sizeof(float) * ATT_BQ);
        w.blk = take(&at, sizeof(int) * nqb); w.nblk = take(&at, sizeof(int) * nqb);
    }
    CHECK((size_t)(at - g_scratch) <= g_scratch_n, "attention: scratch of %zu bytes overrun (%zu)", g_scratch_n, (size_t)(at - g_scratch));
    return w;
}

// The visible keys of row r of a tile whose first query is off positions past its first key.
static int visible(int r, int off, int n) { return r + off + 1 < n ? r + off + 1 : n; }
// The rows of query block i0 and the key tiles it visits.
static int block_rows(int i0, const Att *a) { return a->T - i0 < ATT_BQ ? a->T - i0 : ATT_BQ; }
static int block_tiles(int i0, const Att *a) { return (i0 + block_rows(i0, a) + ATT_BK - 1) / ATT_BK; }

// ---- software prefetch streams --------------------------------------------------------
// The operands come from L3 or DRAM in a training step (written by other ops, or a whole
// forward pass earlier): 256-byte rows 2 KiB apart, which the hardware prefetchers follow
// poorly. A stream is a list of row ranges (rows of hd floats, ld apart) that the work after
// the current one will read (or write: prefetchw, so the stores of a gradient or output row
// do not wait for the line): the next query block's rows, the next item's keys and values.
// It is issued before each tile, one tile ahead of the computation and in proportion to the
// tiles done. Hints only: no result depends on them.
enum { PF_MAXREG = 8 };
typedef struct { const float *p; size_t ld; int rows, write; } PfReg;
typedef struct { PfReg reg[PF_MAXREG]; int nreg, lpr, ri, row, li; long total, done; } Pf;

static void pf_init(Pf *pf, int hd) { memset(pf, 0, sizeof *pf); pf->lpr = (hd + 15) / 16; }
static void pf_add(Pf *pf, const float *p, size_t ld, int rows, int write) {
    if (rows <= 0 || pf->nreg == PF_MAXREG) return;
    pf->reg[pf->nreg++] = (PfReg){ p, ld, rows, write };
    pf->total += (long)rows * pf->lpr;
}
// Issue the stream up to the fraction num/den of its cache lines.
static void pf_upto(Pf *pf, long num, long den) {
    long target = num >= den ? pf->total : pf->total * num / den;
    while (pf->done < target) {
        const PfReg *r = &pf->reg[pf->ri];
        const float *x = r->p + (size_t)pf->row * r->ld + (size_t)pf->li * 16;
        if (r->write) __builtin_prefetch(x, 1, 2); else __builtin_prefetch(x, 0, 2);
        pf->done++;
        if (++pf->li == pf->lpr) { pf->li = 0; if (++pf->row == r->rows) { pf->row = 0; pf->ri++; } }
    }
}
// A block stream (the next query block's rows, over the tiles of the current block) and an
// item stream (the next item's, over all tiles of the current item), advanced together.
// Each tile's share is issued in steps through the tile (before its products and every 4
// rows of its softmax), not in one burst before it: a prefetch that misses holds one of the
// core's line fill buffers, so a burst of hundreds of lines (512 per backward tile at B 4,
// s 256) waited on the buffers — the prefetch instructions held ~25 % of the attention's
// samples in a training step (perf) — where spread out the lines arrive while the tile computes.
typedef struct { Pf blk, item; int nblk; long nitem, done; } Prefetch;
static void pf_step(Prefetch *p, int j, int s, int ns) {   // step s of ns in tile j of the block
    pf_upto(&p->blk, (long)j * ns + s + 1, (long)p->nblk * ns);
    pf_upto(&p->item, p->done * ns + s + 1, p->nitem * ns);
    if (s == ns - 1) p->done++;
}

// ---- threads ---------------------------------------------------------------------------
// Items [lo, hi) of n for the calling thread: contiguous equal shares in item order (batch
// major). The ops around the attention split the tokens the same way (RoPE: static over
// rows), so a thread reads mostly rows that it wrote itself, still in its own L2, and RoPE's
// backward reads the dq, dk rows this thread wrote; a dynamic schedule dealt each batch's
// heads to both threads in turn. The items cost the same (whole heads, or pairs of query
// blocks of equal work under the causal mask), so equal shares balance.
static void thread_range(long n, long *lo, long *hi) {
    long t = omp_get_thread_num(), nt = omp_get_num_threads();
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

// ---- forward --------------------------------------------------------------------------
// One query block [i0, i0+m) of head (b, h): O = softmax(scale·Q Kᵀ, causal) V, lse. The
// keys and values of the head are packed (fwd_item).
static void fwd_block(float *out, float *lse, const float *q, int b, int h, int i0, const Att *a, Work *w,
                      Prefetch *pf) {
    int T = a->T, hd = a->hd, m = block_rows(i0, a), nk = i0 + m;
    const AttnIsa *K = a->isa;
    float *O = w->Oc;   // [m, hd]
    pack_rows(w->Qc, q + q_off(a, b, h) + (size_t)i0 * a->ldq, a->ldq, m, hd);
    for (int r = 0; r < m; r++) { w->mrow[r] = -INFINITY; w->l[r] = 0.0; }
    for (int j0 = 0; j0 < nk; j0 += ATT_BK) {
        int n = nk - j0 < ATT_BK ? nk - j0 : ATT_BK, off = i0 - j0;
        int jt = j0 / ATT_BK, ns = m + 2;   // prefetch steps: before qk, per row, before acc
        pf_step(pf, jt, 0, ns);
        K->qk(w->S, ATT_BK, w->Qc, hd, tile_t(w->Kt, j0, a), ATT_BK, m, n, hd, off);  // S = Q Kᵀ (unscaled)
        for (int r = 0; r < m; r++) {
            float *s = w->S + (size_t)r * ATT_BK;
            int nv = visible(r, off, n);
            if (r % 4 == 0) pf_step(pf, jt, 1 + r, ns);   // a step costs two divisions
            if (nv <= 0) {                                                           // no key of this tile
                memset(s, 0, sizeof(float) * (size_t)n);
                w->alpha[r] = 1.0f;
                continue;
            }
            float mx = K->rowmax(s, nv) * a->c;                                      // c > 0: max commutes
            if (mx < w->mrow[r]) mx = w->mrow[r];
            w->alpha[r] = j0 ? exp2f(w->mrow[r] - mx) : 0.0f;                        // re-base the running sums
            float sum = K->softmax_row(s, nv, n, a->c, mx);                          // s → p = 2^(s·c − mx)
            w->l[r] = w->l[r] * w->alpha[r] + sum;
            w->mrow[r] = mx;
        }
        pf_step(pf, jt, ns - 1, ns);
        // O = alpha ⊙ O + P V_tile   (the first tile overwrites)
        K->acc(O, hd, w->S, ATT_BK, 1, w->Vc + (size_t)j0 * hd, hd, m, n, hd, CAUSAL_ROWS, off,
               j0 ? ACC_RESCALE : ACC_SET, w->alpha);
    }
    float *L = lse + ((size_t)b * a->H + h) * T + i0, *Out = out + q_off(a, b, h) + (size_t)i0 * a->ldq;
    for (int r = 0; r < m; r++) {
        float inv = (float)(1.0 / w->l[r]), *o = O + (size_t)r * hd, *dst = Out + (size_t)r * a->ldq;
        for (int c = 0; c < hd; c++) dst[c] = o[c] * inv;
        L[r] = (float)((w->mrow[r] + log2(w->l[r])) * LN2);
    }
}

// A forward item: head bh = b·H + h and the query-block pairs [u0, u1) of it, pair u = blocks
// u and nqb−1−u (one when they coincide): equal work per pair under the causal mask. Its
// blocks in order into blk; returns their number.
typedef struct { int nqb, npair, nch; } FwdSplit;
static int fwd_item(const FwdSplit *sp, long it, int *bh, int *blk) {
    int ch = (int)(it % sp->nch), u0 = (int)((long)sp->npair * ch / sp->nch), u1 = (int)((long)sp->npair * (ch + 1) / sp->nch), n = 0;
    *bh = (int)(it / sp->nch);
    for (int u = u0; u < u1; u++) {
        blk[n++] = u;
        if (sp->nqb - 1 - u != u) blk[n++] = sp->nqb - 1 - u;
    }
    return n;
}

// out[B,T,H,hd], lse[B,H,T]; q[B,T,H,hd], k,v[B,T,Hkv,hd]
void cpu_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                       int B, int T, int H, int Hkv, int hd) {
    Att a = att_shape(B, T, H, Hkv, hd);
    int nthr = omp_get_max_threads();
    FwdSplit sp = { (T + ATT_BQ - 1) / ATT_BQ, 0, 1 };
    sp.npair = (sp.nqb + 1) / 2;
    // Whole heads where there are enough of them (each thread packs the keys and values of
    // its heads once), else each head split into chunks of block pairs.
    while (sp.nch < sp.npair && (long)B * H * sp.nch < 4L * nthr) sp.nch *= 2;
    if (sp.nch > sp.npair) sp.nch = sp.npair;
    long nitem = (long)B * H * sp.nch;   // head-major
    #pragma omp parallel
    {
        Work w = work_alloc(&a, 0);
        int *nblk = w.nblk;
        long lo, hi;
        thread_range(nitem, &lo, &hi);
        for (long it = lo; it < hi; it++) {
            int bh, nb = fwd_item(&sp, it, &bh, w.blk), b = bh / H, h = bh % H, kh = h / a.G;
            long key = (long)b * Hkv + kh;
            if (w.packed != key) {
                pack_tiles_t(w.Kt, k + kv_off(&a, b, kh), a.ldkv, &a);
                pack_rows(w.Vc, v + kv_off(&a, b, kh), a.ldkv, T, hd);
                w.packed = key;
            }
            // The thread's next item: its keys and values (on a new kv head) and first block's rows.
            Prefetch pf = { .nitem = 0 };
            pf_init(&pf.item, hd);
            for (int i = 0; i < nb; i++) pf.nitem += block_tiles(w.blk[i] * ATT_BQ, &a);
            long nt = it + 1;
            if (nt < hi) {
                int nbh, nnb = fwd_item(&sp, nt, &nbh, nblk), nb0 = nblk[0] * ATT_BQ, nkend = 0;
                int b2 = nbh / H, h2 = nbh % H;
                for (int i = 0; i < nnb; i++) { int e = nblk[i] * ATT_BQ + block_rows(nblk[i] * ATT_BQ, &a); nkend = e > nkend ? e : nkend; }
                if ((long)b2 * Hkv + h2 / a.G != key) {
                    pf_add(&pf.item, k + kv_off(&a, b2, h2 / a.G), a.ldkv, nkend, 0);
                    pf_add(&pf.item, v + kv_off(&a, b2, h2 / a.G), a.ldkv, nkend, 0);
                }
                pf_add(&pf.item, q + q_off(&a, b2, h2) + (size_t)nb0 * a.ldq, a.ldq, block_rows(nb0, &a), 0);
                pf_add(&pf.item, out + q_off(&a, b2, h2) + (size_t)nb0 * a.ldq, a.ldq, block_rows(nb0, &a), 1);
            }
            for (int i = 0; i < nb; i++) {
                int i0 = w.blk[i] * ATT_BQ;
                pf_init(&pf.blk, hd);
                pf.nblk = block_tiles(i0, &a);
                if (i + 1 < nb) {   // the next block's queries and output rows
                    int n0 = w.blk[i + 1] * ATT_BQ;
                    pf_add(&pf.blk, q + q_off(&a, b, h) + (size_t)n0 * a.ldq, a.ldq, block_rows(n0, &a), 0);
                    pf_add(&pf.blk, out + q_off(&a, b, h) + (size_t)n0 * a.ldq, a.ldq, block_rows(n0, &a), 1);
                }
                fwd_block(out, lse, q, b, h, i0, &a, &w, &pf);
            }
        }
    }
}

// ---- backward -------------------------------------------------------------------------
// With S = scale·Q Kᵀ, P = exp(S − lse), O = P V:
//   dP = dO Vᵀ, dS = P ⊙ (dP − D), D = rowsum(dO ⊙ O),
//   dV += Pᵀ dO, dQ += scale·dS K, dK += scale·dSᵀ Q.
typedef struct {
    float *dq, *dk, *dv;
    const float *dout, *out, *q, *k, *v, *lse;
} Grads;

enum { BWD_KV = 1, BWD_Q = 2 };

static void bwd_pack_kv(const Grads *g, int b, int kh, const Att *a, Work *w) {
    long key = (long)b * a->Hkv + kh;
    if (w->packed == key) return;
    pack_tiles_t(w->Kt, g->k + kv_off(a, b, kh), a->ldkv, a);
    pack_tiles_t(w->Vt, g->v + kv_off(a, b, kh), a->ldkv, a);
    pack_rows(w->Kc, g->k + kv_off(a, b, kh), a->ldkv, a->T, a->hd);
    w->packed = key;
}

// Σ x[c]·y[c] in double, as 8 interleaved partial sums added pairwise (GCC makes the 8 lanes
// one or two vectors; a single running sum was ~6 % of a B 4, s 256 backward).
static float dot8(const float *x, const float *y, int n) {
    double acc[8] = { 0 };
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int i = 0; i < 8; i++) acc[i] += (double)x[c + i] * y[c + i];
    for (int i = 0; c + i < n; i++) acc[i] += (double)x[c + i] * y[c + i];
    return (float)(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
}

// The query block [i0, i0+m) of head (b, h): contiguous Q and dO, D and lse in base 2.
static void bwd_rows(const Grads *g, int b, int h, int i0, int m, const Att *a, Work *w) {
    size_t qo = q_off(a, b, h) + (size_t)i0 * a->ldq;
    pack_rows(w->Qc, g->q + qo, a->ldq, m, a->hd);
    pack_rows(w->dOc, g->dout + qo, a->ldq, m, a->hd);
    const float *L = g->lse + ((size_t)b * a->H + h) * a->T + i0;
    for (int r = 0; r < m; r++) {
        w->D[r] = dot8(w->dOc + (size_t)r * a->hd, g->out + qo + (size_t)r * a->ldq, a->hd);
        w->lrow[r] = (float)(L[r] * LOG2E);
    }
}

// Where a tile's gradient products go: dk, dv of the kv head from its row 0 (ld ldkv) and
// dq of the query block (ld ldq). The products accumulate straight into the caller's rows
// (the C rows of an acc block are touched once per block, so their 2 KiB stride costs no
// L1 conflicts); the first contribution to a row sets it (ACC_SET) instead of adding to a
// zeroed copy that is stored at the end.
typedef struct { float *dk, *dv, *dq; int kv_first; } TileOut;

// Rows [j0, j0+n) of x (ld) = 0.
static void zero_rows(float *x, size_t ld, int j0, int n, int hd) {
    for (int t = j0; t < j0 + n; t++) memset(x + (size_t)t * ld, 0, sizeof(float) * (size_t)hd);
}

// One tile: query block [i0, i0+m) (after bwd_rows) against keys [j0, j0+n) of the packed
// kv head; `what` selects the products into dk/dv and/or dq. o.kv_first: the first block to
// reach this key tile (it sets the tile's dk, dv rows); j0 = 0 sets dq.
static void bwd_tile(int i0, int m, int j0, int what, const Att *a, Work *w, Prefetch *pf, TileOut o) {
    int hd = a->hd, n = i0 + m - j0 < ATT_BK ? i0 + m - j0 : ATT_BK, off = i0 - j0;
    const AttnIsa *K = a->isa;
    int jt = j0 / ATT_BK, ns = m + 3;   // prefetch steps: before each qk, per row, before the accs
    if (pf) pf_step(pf, jt, 0, ns);
    K->qk(w->S, ATT_BK, w->Qc, hd, tile_t(w->Kt, j0, a), ATT_BK, m, n, hd, off);    // S (unscaled)
    if (pf) pf_step(pf, jt, 1, ns);
    K->qk(w->dP, ATT_BK, w->dOc, hd, tile_t(w->Vt, j0, a), ATT_BK, m, n, hd, off);  // dP = dO Vᵀ
    for (int r = 0; r < m; r++) {
        float *s = w->S + (size_t)r * ATT_BK, *d = w->dP + (size_t)r * ATT_BK;
        int nv = visible(r, off, n);
        if (pf && r % 4 == 0) pf_step(pf, jt, 2 + r, ns);   // a step costs two divisions
        if (nv <= 0) { memset(s, 0, sizeof(float) * (size_t)n); memset(d, 0, sizeof(float) * (size_t)n); continue; }
        K->dsoftmax_row(s, d, nv, n, a->c, w->lrow[r], w->D[r], a->scale);   // S → P, dP → scale·dS
    }
    if (pf) pf_step(pf, jt, ns - 1, ns);
    if (what & BWD_KV) {
        int tn = a->T - j0 < ATT_BK ? a->T - j0 : ATT_BK, mode = ACC_ADD;   // the key tile's rows
        if (o.kv_first && n == tn) mode = ACC_SET;
        else if (o.kv_first) { zero_rows(o.dk, a->ldkv, j0, tn, hd); zero_rows(o.dv, a->ldkv, j0, tn, hd); }
        size_t kr = (size_t)j0 * a->ldkv;
        K->acc(o.dv + kr, a->ldkv, w->S, 1, ATT_BK, w->dOc, hd, n, m, hd, CAUSAL_COLS, off, mode, NULL);
        K->acc(o.dk + kr, a->ldkv, w->dP, 1, ATT_BK, w->Qc, hd, n, m, hd, CAUSAL_COLS, off, mode, NULL);
    }
    if (what & BWD_Q)
        K->acc(o.dq, a->ldq, w->dP, ATT_BK, 1, w->Kc + (size_t)j0 * hd, hd, m, n, hd, CAUSAL_ROWS, off,
               j0 ? ACC_ADD : ACC_SET, NULL);
}

// All key tiles of query block [i0, i0+m) of head (b, h), tile by tile: into dq (set by the
// first tile), and with BWD_KV into dk, dv of its kv head (kv_first: the first head of the
// group, whose blocks reach each key tile first).
static void bwd_dq_block(const Grads *g, int b, int h, int i0, int m, int what, int kv_first, const Att *a, Work *w,
                         Prefetch *pf) {
    bwd_rows(g, b, h, i0, m, a, w);
    TileOut o = { g->dk + kv_off(a, b, h / a->G), g->dv + kv_off(a, b, h / a->G), g->dq + q_off(a, b, h) + (size_t)i0 * a->ldq, 0 };
    for (int j0 = 0; j0 < i0 + m; j0 += ATT_BK) {
        o.kv_first = kv_first && i0 == j0 / ATT_BQ * ATT_BQ;   // the first block that reaches key tile j0
        bwd_tile(i0, m, j0, what, a, w, pf, o);
    }
}

// The rows of query block i0 of head (b, h) that bwd_dq_block reads and writes, into a stream.
static void pf_add_block(Pf *pf, const Grads *g, int b, int h, int i0, const Att *a) {
    size_t qo = q_off(a, b, h) + (size_t)i0 * a->ldq;
    int m = block_rows(i0, a);
    pf_add(pf, g->q + qo, a->ldq, m, 0);
    pf_add(pf, g->dout + qo, a->ldq, m, 0);
    pf_add(pf, g->out + qo, a->ldq, m, 0);
    pf_add(pf, g->dq + qo, a->ldq, m, 1);
}

// dq[B,T,H,hd] =, dk,dv[B,T,Hkv,hd] = (stored; not read); dout, out[B,T,H,hd], q[B,T,H,hd],
// k,v[B,T,Hkv,hd], lse[B,H,T]. Every gradient element is its tile contributions summed in
// tile order, set by the first (dK/dV rows over (head, query block), dQ rows over key
// tiles), on both paths.
void cpu_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *out,
                        const float *q, const float *k, const float *v, const float *lse,
                        int B, int T, int H, int Hkv, int hd) {
    Att a = att_shape(B, T, H, Hkv, hd);
    Grads g = { dq, dk, dv, dout, out, q, k, v, lse };
    int ntask = B * Hkv, nthr = omp_get_max_threads(), nqb = (T + ATT_BQ - 1) / ATT_BQ;
    if (ntask >= nthr || nthr == 1) {
        // one task per (b, kv head): heads of the group, query blocks, key tiles, in order
        long ntile = 0;
        for (int i0 = 0; i0 < T; i0 += ATT_BQ) ntile += block_tiles(i0, &a);
        ntile *= a.G;
        #pragma omp parallel
        {
            Work w = work_alloc(&a, 1);
            long lo, hi;
            thread_range(ntask, &lo, &hi);
            for (int task = (int)lo; task < hi; task++) {
                int b = task / Hkv, kh = task % Hkv;
                bwd_pack_kv(&g, b, kh, &a, &w);
                // Over the task: its dk and dv rows (accumulated from its first block), then what the
                // thread's next task reads first: its keys, values and first query block.
                Prefetch pf = { .nitem = ntile };
                pf_init(&pf.item, hd);
                pf_add(&pf.item, dk + kv_off(&a, b, kh), a.ldkv, T, 1);
                pf_add(&pf.item, dv + kv_off(&a, b, kh), a.ldkv, T, 1);
                int nt = task + 1;
                if (nt < hi) {
                    pf_add(&pf.item, k + kv_off(&a, nt / Hkv, nt % Hkv), a.ldkv, T, 0);
                    pf_add(&pf.item, v + kv_off(&a, nt / Hkv, nt % Hkv), a.ldkv, T, 0);
                    pf_add_block(&pf.item, &g, nt / Hkv, nt % Hkv * a.G, 0, &a);
                }
                for (int h = kh * a.G; h < (kh + 1) * a.G; h++)
                    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
                        pf_init(&pf.blk, hd);   // the next block of the task, over this one's tiles
                        pf.nblk = block_tiles(i0, &a);
                        if (i0 + ATT_BQ < T) pf_add_block(&pf.blk, &g, b, h, i0 + ATT_BQ, &a);
                        else if (h + 1 < (kh + 1) * a.G) pf_add_block(&pf.blk, &g, b, h + 1, 0, &a);
                        bwd_dq_block(&g, b, h, i0, block_rows(i0, &a), BWD_KV | BWD_Q, h == kh * a.G, &a, &w, &pf);
                    }
            }
        }
        return;
    }
    // Fewer tasks than threads: pass 1 owns key tiles (dk, dv), pass 2 query blocks (dq).
    #pragma omp parallel
    {
        Work w = work_alloc(&a, 1);
        #pragma omp for schedule(dynamic, 1)
        for (long it = 0; it < (long)ntask * a.nkt; it++) {
            int task = (int)(it / a.nkt), j0 = (int)(it % a.nkt) * ATT_BK, b = task / Hkv, kh = task % Hkv;
            bwd_pack_kv(&g, b, kh, &a, &w);
            TileOut o = { dk + kv_off(&a, b, kh), dv + kv_off(&a, b, kh), NULL, 1 };
            for (int h = kh * a.G; h < (kh + 1) * a.G; h++)
                for (int i0 = j0 / ATT_BQ * ATT_BQ; i0 < T; i0 += ATT_BQ) {
                    int m = block_rows(i0, &a);
                    if (j0 >= i0 + m) continue;
                    bwd_rows(&g, b, h, i0, m, &a, &w);
                    bwd_tile(i0, m, j0, BWD_KV, &a, &w, NULL, o);   // the same order as one task per kv head
                    o.kv_first = 0;
                }
        }
        #pragma omp for schedule(dynamic, 1)
        for (long it = 0; it < (long)B * H * nqb; it++) {
            int bh = (int)(it / nqb), i0 = (int)(it % nqb) * ATT_BQ, b = bh / H, h = bh % H;
            bwd_pack_kv(&g, b, h / a.G, &a, &w);
            bwd_dq_block(&g, b, h, i0, block_rows(i0, &a), BWD_Q, 0, &a, &w, NULL);
        }
    }
}
