// model_internal.h — the shared helpers of src/model/ (not part of the public interface).
// src/model/ is layered, each level using only those above it (docs/architecture.md):
//   helpers  model.h, flops.h, kind.h, this file; scratch.c, walk.c — no driver, no kind
//   kinds    kind.c (registry), kind_dense.c, kind_cola.c, kind_svd.c, kind_lax.c, linear.c
//            (the factor pair's math the low-rank kinds share)
//   drivers  params.c, head.c, layer_megatron.c, layer_btp.c, flops.c — call the kinds
//            through kind.h, never test which kind they run
//   model    model.c — allocation and the stage drivers
// The drivers hold no BLAS call, no OpenMP pragma and no loop over activations: every piece
// of math is an op of backend/ops.h, every piece of communication a named collective of
// parallel/comm.h.
#pragma once
#include "model.h"
#include "kind.h"
#include "../backend/ops.h"
#include "../parallel/comm.h"

// Element i of a compute-dtype tensor of this model (NULL stays NULL on the dry back end).
static inline void *at(const Model *m, const void *p, size_t i) { return bk_at(m->bk, p, i); }
static inline void zero_t(const Model *m, void *p, size_t n) { op_zero(m->bk, p, n, m->bk->dtype); }
static inline void copy_t(const Model *m, void *dst, const void *src, size_t n) { op_copy(m->bk, dst, src, n, m->bk->dtype); }

// How a parameter gradient is written in this backward (model.h model_grads_overwrite): its
// writer adds (1) or, in the step's first micro-batch, stores (0) — the acc flag of an op
// (backend/ops.h) and the beta of a GEMM. Every parameter gradient has exactly one writer per
// backward, except the tied embedding's: the head's GEMM writes it first (grad_acc), the
// embedding's backward adds to it (1).
static inline int grad_acc(const Model *m) { return m->grad_acc; }
static inline float grad_beta(const Model *m) { return m->grad_acc ? 1.0f : 0.0f; }

// The all-reduce (sum) of an activation buffer over the TP group, in the compute dtype.
static inline void tp_all_reduce(Model *m, void *buf, size_t n, int phase, int layer) {
    comm_all_reduce(m->comm, GROUP_TP, buf, n, (CommDtype)m->comm_dtype, OP_SUM, (CommPhase)phase, layer);
}

// Sequence parallelism (Layout.sp; docs/parallelism.md §8): TP rank i holds rows
// [i·N_res, (i+1)·N_res) of every [N, width] tensor of the residual stream. The two
// collectives along the sequence, in the compute dtype (Megatron-LM's mappings):
//   gather:  full [N, width] = the group's shards [N_res, width], rank i's at row i·N_res
//   scatter: shard [N_res, width] = Σ over the group of rows [i·N_res, ...) of everyone's full
//            [N, width] (reduce-scatter; shard may be full: the result in its first rows)
// Whether the residual stream holds this rank's tokens only (sequence parallelism under the
// Megatron scheme; under BTP it cuts the bottlenecks, the residual stays a column slice).
static inline int seq_residual(const Layout *L) { return L->sp && L->scheme == TP_MEGATRON; }
static inline void tp_seq_gather(Model *m, void *full, const void *shard, size_t width, int phase, int layer) {
    comm_all_gather(m->comm, GROUP_TP, shard, full, (size_t)m->N_res * width, (CommDtype)m->comm_dtype,
                    (CommPhase)phase, layer);
}
static inline void tp_seq_scatter(Model *m, void *shard, const void *full, size_t width, int phase, int layer) {
    comm_reduce_scatter(m->comm, GROUP_TP, full, shard, (size_t)m->N_res * width, (CommDtype)m->comm_dtype,
                        (CommPhase)phase, layer);
}

// Products of a linear layer, y = x @ W with W [din, dout] (row-major, as the paper notes):
// y[N,dout] (beta 1: +=) x[N,din] @ W[din,dout]
static inline void mm_forward(Model *m, void *y, const void *x, const void *W, int N, int din, int dout, float beta) {
    op_gemm(m->bk, TR_N, TR_N, N, dout, din, 1.0f, x, din, W, dout, beta, y, dout);
}
// y[N,dout] = r[N,dout] + x[N,din] @ W[din,dout]: a residual add inside the GEMM (C = r is
// read, D = y written: no copy of r into y first; y may be r)
static inline void mm_forward_residual(Model *m, void *y, const void *r, const void *x, const void *W, int N, int din,
                                       int dout) {
    op_gemm_into(m->bk, TR_N, TR_N, N, dout, din, 1.0f, x, din, W, dout, 1.0f, r, dout, y, dout);
}
// A linear's last product, with or without its residual: y = x@W (add_res 0) or y = res + x@W
// (add_res 1: the residual add inside the GEMM; y may be res). A kind's forward ends with this,
// so that a driver can hand it the residual (kind.h). A flag, not a NULL test: on the dry back
// end every pointer is NULL and the trace must hold the same GEMM.
static inline void mm_forward_to(Model *m, void *y, const void *res, int add_res, const void *x, const void *W, int N,
                                 int din, int dout) {
    if (add_res) mm_forward_residual(m, y, res, x, W, N, din, dout);
    else mm_forward(m, y, x, W, N, din, dout, 0.0f);
}
// dx[N,din] = beta_dx·dx + dy[N,dout] @ W^T (beta_dx 0: this GEMM is dx's first writer, no
// zero pass before it; 1: +=) ; dW[din,dout] (+)= x^T @ dy (grad_beta). Both are always issued
// (no NULL test: on the dry back end every pointer is NULL and the trace must still hold both GEMMs).
// While m->dw_defer is set the dW GEMM is queued (Model.dw_queue; run by mm_weight_grads).
static inline void mm_backward(Model *m, void *dx, void *dW, const void *dy, const void *x, const void *W,
                               int N, int din, int dout, float beta_dx) {
    op_gemm(m->bk, TR_N, TR_T, N, din, dout, 1.0f, dy, dout, W, dout, beta_dx, dx, din);
    GemmArgs w = { TR_T, TR_N, din, dout, N, 1.0f, x, din, dy, dout, grad_beta(m), dW, dout };
    if (!m->dw_defer) { op_gemm(m->bk, w.ta, w.tb, w.M, w.N, w.K, w.alpha, w.A, w.lda, w.B, w.ldb, w.beta, w.C, w.ldc); return; }
    CHECK(m->n_dw < (int)(sizeof m->dw_queue / sizeof *m->dw_queue), "mm_backward: more than %d weight gradients held back",
          (int)(sizeof m->dw_queue / sizeof *m->dw_queue));
    m->dw_queue[m->n_dw++] = w;
}
// The held-back weight-gradient GEMMs, in the order they were queued; deferring stops.
static inline void mm_weight_grads(Model *m) {
    for (int i = 0; i < m->n_dw; i++) {
        const GemmArgs *w = &m->dw_queue[i];
        op_gemm(m->bk, w->ta, w->tb, w->M, w->N, w->K, w->alpha, w->A, w->lda, w->B, w->ldb, w->beta, w->C, w->ldc);
    }
    m->n_dw = 0;
    m->dw_defer = 0;
}

// Backward working set of one layer (reused layer by layer), carved from mdl->scratch.
typedef struct Scratch {
    void *dx;            // [N_res,d_res] running gradient of the residual stream (stage grad)
    void *da;            // [N,d_res] gradient of a normed input (a, m); also [N,d] xf (sequence
                         // parallelism: [N,d], reduce-scattered in place to its first N_res rows)
    void *dq, *dk, *dv;  // [N,dq], [N,dkv], [N,dkv]
    void *dy;            // [N,dq]
    void *dg, *du, *dgu; // [N,dff]
    void *dz, *dh;       // [N,r_max] low-rank inner gradients
    float *lmax, *gmax;  // [N] f32 vocab-parallel cross-entropy: local and global row maxima
    double *sumexp, *tlogit; // [N] f64
    float *dot;          // [N] f32 BTP norm backward: Σ dP·P over the bottleneck
    // BTP only (NULL otherwise):
    void *xn;            // [N,d_res] normed input of a row-parallel A (forward and backward)
    void *acat, *dacat;  // [d_res, max(3·ra, 2·rm)] grouped A_q|A_k|A_v or A_gate|A_up, its gradient
    void *dzb, *dpb;     // btp_bn size: gradient of a bottleneck's σ output and of its input
    void *dfull;         // [N,d] full-width embedding output / d(x_full) (tp > 1)
    // BTP with sequence parallelism only (NULL otherwise): a bottleneck of this rank's tokens (the
    // kind's Z or dZ of them), and the staging of a collective whose statistic rides with the
    // payload (each rank's chunk: its payload rows, then their statistic)
    void *bns;           // btp_bn size for N/tp tokens
    void *stage;         // btp_bn size for N tokens
    // Sequence parallelism only (NULL otherwise):
    void *seq_full;      // [N,d] a normed input (a, m, xf) or an output gradient gathered along the
                         // sequence; the embedding's and o's / down's full outputs before their scatter
    void *gains;         // [(2·layers here + last stage)·d] the norm gains' gradients packed for
                         // their TP all-reduce (model_finish_grads)
    // LaX only (NULL otherwise; docs/lax.md §6-§7):
    void *carry;         // [N, 4·lra + 3·lrm] dL/dZ of the previous layer's latents (message
                         // layout), right after dx: the stage gradient carries it back
    void *zprev;         // [N, 4·lra + 3·lrm] Z_{l-1} recomputed from U_{l-1} (CKPT_LOWRANK)
    // one chunk each (BTP: the largest bottleneck; Vanilla-TP: [N, r] of one projection):
    void *luh, *lduh;    // Û = LN(U) recomputed, dÛ (lax_norm: layernorm)
    void *lp;            // BTP: P = U − g(Z_prev); Vanilla-TP: dU
    void *lz;            // Vanilla-TP: the all-gathered dZ
    void *lg;            // BTP: [N, max(r_a, r_m)] one gate's output g(Z_prev)
    float *lmean, *lrstd; // [3·N] f32 LayerNorm statistics of the chunk at hand (layernorm)
} Scratch;

// The attention core of a layer, the same under every layout: RoPE on the local q/k heads,
// then causal flash attention over the local heads (q [N,dq], k/v [N,dkv] -> y [N,dq], lse).
static inline void attention_core_forward(Model *m, LayerActs *la) {
    const ModelConfig *c = &m->cfg;
    const Layout *L = &m->lay;
    int hd = c->d_model / c->n_heads;
    op_rope_forward(m->bk, la->q, m->B, m->T, L->H, hd, c->rope_theta);
    op_rope_forward(m->bk, la->k, m->B, m->T, L->Hkv, hd, c->rope_theta);
    op_attention_forward(m->bk, la->y, la->lse, la->q, la->k, la->v, m->B, m->T, L->H, L->Hkv, hd);
}
// Its backward: s->dy [N,dq] -> s->dq [N,dq], s->dk, s->dv [N,dkv] (stored by the attention
// backward), rotated back to the projections' outputs.
static inline void attention_core_backward(Model *m, const LayerActs *la, Scratch *s) {
    const ModelConfig *c = &m->cfg;
    const Layout *L = &m->lay;
    int hd = c->d_model / c->n_heads;
    op_attention_backward(m->bk, s->dq, s->dk, s->dv, s->dy, la->y, la->q, la->k, la->v, la->lse,
                          m->B, m->T, L->H, L->Hkv, hd);
    op_rope_backward(m->bk, s->dq, m->B, m->T, L->H, hd, c->rope_theta);
    op_rope_backward(m->bk, s->dk, m->B, m->T, L->Hkv, hd, c->rope_theta);
}

// CKPT_SELECTIVE (model.h): y and lse of a layer from its kept q, k, v — flash attention's
// forward replayed before the layer's attention backward (no collective; PHASE_RECOMPUTE).
static inline void attention_core_replay(Model *m, LayerActs *la, int gl) {
    const ModelConfig *c = &m->cfg;
    const Layout *L = &m->lay;
    bk_label(m->bk, PHASE_RECOMPUTE, gl);
    op_attention_forward(m->bk, la->y, la->lse, la->q, la->k, la->v, m->B, m->T, L->H, L->Hkv, c->d_model / c->n_heads);
    bk_label(m->bk, PHASE_BACKWARD, gl);
}

// Carving a family buffer in bytes: two passes (count with base == NULL, then assign).
// Every tensor starts on a 64-byte boundary.
typedef struct { void *base; size_t off; } Carve;
static inline void *carve(Carve *cv, size_t n, DType t) {
    void *p = cv->base ? (char *)cv->base + cv->off : NULL;
    cv->off += (n * dtype_size(t) + 63) / 64 * 64;
    return p;
}

// scratch.c: the views of mdl->scratch, and its size (count with base NULL).
void scratch_view(const Model *mdl, Scratch *s);
size_t scratch_carve(Carve *cv, Scratch *s, const Model *mdl);

// The layout of one BTP bottleneck buffer of G slots of width r (q|k|v: G = 3, gate|up:
// G = 2, o and down: G = 1) for N tokens: a SlotView (slot j, row n at off[j] + n·ld).
//   grouped:   [N, G·r] row-major (ld = G·r, off[j] = j·r): one GEMM, one all-reduce;
//   ungrouped: G blocks [N, r] (ld = r), one all-reduce each.
// With stat, the per-token statistic [N] (Σx² of the norm input) sits at `stat`, right
// after the payload when grouped and right after slot 0 when not, so that one all-reduce
// of a contiguous range carries payload and statistic (online RMSNorm). Offsets are in
// elements of the compute dtype.
typedef struct Bn { SlotView v; int grouped; size_t stat, size; } Bn;
static inline Bn btp_bn(int N, int G, int r, int grouped, int with_stat) {
    Bn b = { .v = { .N = N, .G = G, .r = r }, .grouped = grouped || G == 1 };
    size_t nr = (size_t)N * r, ns = with_stat ? (size_t)N : 0;
    b.v.ld = b.grouped ? G * r : r;
    for (int j = 0; j < G; j++)
        b.v.off[j] = b.grouped ? (size_t)j * r : (j == 0 ? 0 : nr + ns + (size_t)(j - 1) * nr);
    b.stat = b.grouped ? (size_t)G * nr : nr;
    b.size = (size_t)G * nr + ns;
    return b;
}
// The same bottleneck for `rows` tokens (BTP with sequence parallelism: this rank's N/tp).
static inline Bn bn_rows(const Bn *b, int rows) {
    int with_stat = b->size > (size_t)b->v.G * b->v.N * b->v.r;
    return btp_bn(rows, b->v.G, b->v.r, b->grouped, with_stat);
}
static inline Bn bn_qkv(const Model *m) { return btp_bn(m->N, 3, m->lay.ra, m->boost.grouping, 1); }
static inline Bn bn_o(const Model *m) { return btp_bn(m->N, 1, m->lay.ra, 1, 0); }
static inline Bn bn_gu(const Model *m) { return btp_bn(m->N, 2, m->lay.rm, m->boost.grouping, 1); }
static inline Bn bn_down(const Model *m) { return btp_bn(m->N, 1, m->lay.rm, 1, 0); }
// The contiguous payload segments of a bottleneck: grouped one of G·N·r, else G of N·r.
static inline int bn_segments(const Bn *b, size_t *off, size_t *len) {
    if (b->grouped) { off[0] = 0; *len = (size_t)b->v.G * b->v.N * b->v.r; return 1; }
    for (int j = 0; j < b->v.G; j++) off[j] = b->v.off[j];
    *len = (size_t)b->v.N * b->v.r;
    return b->v.G;
}

// SiLU on the gate: always for dense, svd and lax on the svd base; for cola (and lax on the
// cola base) unless only_lr_act.
static inline int gate_silu(const ModelConfig *c) { return !latent_silu(c) || !c->only_lr_act; }

// ---- latents that cross layers (the latent kinds: kind_lax.c; docs/lax.md) --------------------
// The seven projections of a block, in the order of the pipeline message and of the carry.
enum { LX_Q, LX_K, LX_V, LX_O, LX_GATE, LX_UP, LX_DOWN, LX_N };
// Latent width held here of projection p (Layout.lra for q,k,v,o; lrm for gate,up,down).
static inline int lax_width(const Layout *L, int p) { return p < LX_GATE ? L->lra : L->lrm; }
// Elements of one micro-batch's latents on this rank: N·(4·lra + 3·lrm).
static inline size_t lax_elems(const Model *m) { return (size_t)m->N * (4 * (size_t)m->lay.lra + 3 * (size_t)m->lay.lrm); }
// Per projection: where its latent (or its gradient) is, [N, width] with row stride ld.
typedef struct Lat { void *z[LX_N]; int ld[LX_N]; } Lat;
// G ≤ 3 slot views [N, r] of one buffer (a bottleneck chunk): slot j at base + off[j], rows ld apart.
typedef struct { int G, N, r, ld; void *base; size_t off[3]; } Slots;
static inline void *slot_at(const Model *m, const Slots *s, int j) { return at(m, s->base, s->off[j]); }
static inline Slots slots_of(void *base, const SlotView *v) {
    Slots s = { .G = v->G, .N = v->N, .r = v->r, .ld = v->ld, .base = base };
    for (int j = 0; j < v->G; j++) s.off[j] = v->off[j];
    return s;
}
static inline Slots slots_like(const Slots *s, void *base) { Slots t = *s; t.base = base; return t; }
// scratch.c: the message layout at base (NULL: no latents): Z_q|Z_k|...|Z_down, each [N, width] row-major.
Lat lat_message(const Model *m, void *base);
// Slots p0 .. p0+G-1 of a Lat whose slots are consecutive blocks of one buffer (a message).
Slots lat_slots(const Model *m, const Lat *lat, int p0, int G, int r);
// ---- parameters (walk.c): one enumeration of the tensors fills the table and binds views ----
typedef struct ParamWalk {
    ParamTable *t;     // when non-NULL: append specs
    void *base;        // when non-NULL: return base + offset (elements of dtype) for views
    DType dtype;
    size_t offset;
    const ModelConfig *cfg;
    const Layout *lay;
} ParamWalk;
// One tensor: appended to the table (wk->t) and/or its view returned (wk->base; else NULL).
// Full shape rows x cols, cut over the TP ranks along `shard`; decay: AdamW weight decay.
void *walk_take(ParamWalk *wk, const char *name, int ndim, int64_t rows, int64_t cols, ShardDim shard,
                int decay, InitKind init, float std);

// linear.c — the factor pair A [din, r], B [r, dout] of the low-rank kinds, local math on this
// rank's factors, no communication: y[N,dout] = (res +) σ(x[N,din] @ A) @ B, σ = SiLU when silu
// (cola), else the identity (svd: z is h); res [N,dout] added when add_res (mm_forward_to).
void factor_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                    const LinearW *w, int N, int din, int dout, int r, int silu);
// dx[N,din] = beta_dx·dx + ... (0: dx's first writer), dw (+)= ... (grad_acc); dz, dh: scratch [N,r]
void factor_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                     const LinearW *w, int N, int din, int dout, int r, void *dz, void *dh, float beta_dx, int silu);
// Their parameters: A [din, r], B [r, dout] with CoLA's init N(0,1)·r^(-1/4)·(din + dout)^(-1/4)
// (paper notes §1), sharded by the scheme: Vanilla-TP splits A's columns and B's rows (over
// r); BTP splits A's rows (d_in) and B's columns (d_out), never r.
LinearW factor_take(ParamWalk *wk, const char *prefix, int din, int dout, int r);
