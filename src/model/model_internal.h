// model_internal.h — pieces shared by the model's drivers (model.c and the per-scheme
// layer drivers). Not part of the public interface.
#pragma once
#include "model.h"
#include "../parallel/comm.h"
#include "../ops/ops.h"

// The drivers' own memory work, skipped in accounting mode (ops_dry_run: no buffers
// exist; only the control flow and its accounted collectives run).
static inline void zero_f(float *p, size_t n) { if (!ops_dry_run) memset(p, 0, n * sizeof(float)); }
static inline void copy_f(float *dst, const float *src, size_t n) { if (!ops_dry_run) memcpy(dst, src, n * sizeof(float)); }

// Backward working set of one layer (reused layer by layer), carved from mdl->scratch.
typedef struct {
    float *dx;           // [N,d_res] running gradient of the residual stream (stage grad)
    float *da;           // [N,d_res] gradient of a normed input (a, m); also [N,d] xf
    float *dq, *dk, *dv; // [N,dq], [N,dkv], [N,dkv]
    float *dy;           // [N,dq]
    float *dg, *du, *dgu;// [N,dff]
    float *dz, *dh;      // [N,r_max] low-rank inner gradients
    float *row_max;      // [N]   vocab-parallel cross-entropy statistics
    double *sumexp, *target_logit; // [N]
    // BTP only (NULL otherwise):
    float *xn;           // [N,d_res] normed input of a row-parallel A (forward and backward)
    float *acat, *dacat; // [d_res, max(3·ra, 2·rm)] grouped A_q|A_k|A_v or A_gate|A_up, its gradient
    float *dzb, *dpb;    // btp_bn size: gradient of a bottleneck's σ output and of its input
    float *dfull;        // [N,d] full-width embedding output / d(x_full) (tp > 1)
} Scratch;

// The layout of one BTP bottleneck buffer of G slots of width r (q|k|v: G = 3, gate|up:
// G = 2, o and down: G = 1) for N tokens. Slot j, row n starts at off[j] + n·ld.
//   grouped:   [N, G·r] row-major (ld = G·r, off[j] = j·r): one GEMM, one all-reduce;
//   ungrouped: G blocks [N, r] (ld = r), one all-reduce each.
// With stat, the per-token statistic [N] (Σx² of the norm input) sits at `stat`, right
// after the payload when grouped and right after slot 0 when not, so that one all-reduce
// of a contiguous range carries payload and statistic (online RMSNorm).
typedef struct { int N, G, r, ld, grouped; size_t off[3], stat, size; } Bn;
static inline Bn btp_bn(int N, int G, int r, int grouped, int with_stat) {
    Bn b = { .N = N, .G = G, .r = r, .grouped = grouped || G == 1 };
    size_t nr = (size_t)N * r, ns = with_stat ? (size_t)N : 0;
    b.ld = b.grouped ? G * r : r;
    for (int j = 0; j < G; j++)
        b.off[j] = b.grouped ? (size_t)j * r : (j == 0 ? 0 : nr + ns + (size_t)(j - 1) * nr);
    b.stat = b.grouped ? (size_t)G * nr : nr;
    b.size = (size_t)G * nr + ns;
    return b;
}
static inline Bn bn_qkv(const Model *m) { return btp_bn(m->N, 3, m->lay.ra, m->boost.grouping, 1); }
static inline Bn bn_o(const Model *m) { return btp_bn(m->N, 1, m->lay.ra, 1, 0); }
static inline Bn bn_gu(const Model *m) { return btp_bn(m->N, 2, m->lay.rm, m->boost.grouping, 1); }
static inline Bn bn_down(const Model *m) { return btp_bn(m->N, 1, m->lay.rm, 1, 0); }

void scratch_view(const Model *mdl, Scratch *s);

static inline int is_lowrank(const ModelConfig *c) { return c->linear != LINEAR_DENSE; }
// SiLU on the gate: always for dense and svd; for cola unless only_lr_act.
static inline int gate_silu(const ModelConfig *c) { return c->linear != LINEAR_COLA || !c->only_lr_act; }

// One linear's local math on this rank's factors, no communication:
// y[N,dout] = x[N,din] @ W, or σ(x @ A) @ B with the bottleneck width r.
void linear_forward(const ModelConfig *c, float *y, LowRankActs *la, const float *x,
                    const LinearW *w, int N, int din, int dout, int r);
// dx[N,din] += ..., dw += ...; dz, dh: scratch [N,r]
void linear_backward(const ModelConfig *c, float *dx, LinearW *dw, const float *dy,
                     const float *x, const LowRankActs *la, const LinearW *w,
                     int N, int din, int dout, int r, float *dz, float *dh);

// Megatron FullRank-TP (dense) / Vanilla-TP (low-rank) block; l is the local layer index.
void megatron_layer_forward(Model *mdl, LayerActs *la, int l, float *x_out);
void megatron_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s);

// Bottleneck-aware TP block (layer_btp.c): same contract. The forward's collectives use
// mdl->fwd_phase; under CKPT_LOWRANK the backward recomputes each chunk's interior from
// the kept bottleneck buffers first (no collective).
void btp_layer_forward(Model *mdl, LayerActs *la, int l, float *x_out);
void btp_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s);
