// layer_btp.c — one transformer block under bottleneck-aware tensor parallelism (BTP,
// paper notes §3-§6; docs/boost.md). A TP chunk runs from an up factor B to the next down
// factor A; both are split along their large dimension, never along r:
//
//   residual x, norm gains      column slice [N, d/tp] on every rank, all through the model
//   A (q,k,v,o,gate,up,down)    row-parallel: local input rows, full r outputs = partial sums
//   B (q,k,v,o,gate,up,down)    column-parallel: local heads / local d_ff / residual slice
//   attention core, g*u         local heads (H/tp, Hkv/tp) and local d_ff/tp
//
// so the only collective of a chunk is the all-reduce at its narrow bottleneck:
//
//   (1) P_qkv = AR(RMSNorm(x) @ A_qkv)   [N,3r]   (grouped; else three [N,r])
//   (2) P_o   = AR(attn(q,k,v) @ A_o)    [N,r]
//   (3) P_gu  = AR(RMSNorm(x_mid) @ A_gu)[N,2r]   (grouped; else two [N,r])
//   (4) P_d   = AR((g*u) @ A_down)       [N,r]
//
// and in backward one all-reduce of the gradient at the input of each group of B's
// (dZ_d, dZ_gu, dZ_o, dZ_qkv: the same shapes); the A's backward needs no collective.
//
// RMSNorm of a sharded residual. The statistic Σx² needs the full row:
//   boost.online_rmsnorm = 0 ("SyncRMSNorm"): one extra all-reduce of the per-token local
//     Σx² [N] (fp32, like the payload) before each of the two norms, then normalise locally.
//   boost.online_rmsnorm = 1 (paper §4, 7 steps): S_i local, ŷ_i = x_i/rms_i ⊙ γ_i with the
//     local rms_i, H_i = (ŷ_i @ A_i)·rms_i, ONE all-reduce of [H_i | S_i] (the statistic is
//     packed after the payload, see btp_bn), Y = H / sqrt(S/d + eps) == RMSNorm(x) @ A.
// Backward of either (no collective): with a = x·rstd·γ (rstd of the full row) and P = a@A
// the all-reduced bottleneck input, da_i = dP @ A_i^T is local and
//   dx_i = rstd·(γ_i ⊙ da_i − x_i·rstd·c),   c = (1/d)·Σ_{full row} da ⊙ a = (1/d)·Σ_k dP_k·P_k
// where the second sum runs over the G·r bottleneck columns, which are replicated after
// the backward all-reduce of dZ. So the full-row term costs nothing extra.
//
// The forward's collectives use mdl->fwd_phase (PHASE_FORWARD, or PHASE_RECOMPUTE while
// model.c replays the block for boost.full_recompute). Under CKPT_LOWRANK the backward
// first recomputes each chunk's interior from the kept bottleneck buffers: σ(P), the B
// products, RoPE, the attention core, g*u — none of which communicates (its ops are
// labelled PHASE_RECOMPUTE).
//
// The norm pieces (rowsumsq, rownorm, scale_rows, rowdot, sharded_rmsnorm_backward) are ops
// of backend/ops.h: backend/cpu/rmsnorm_sharded.c states their arithmetic.
//
// What happens at a bottleneck between its all-reduce and the up factor is the linear kind's
// (kind.h bn_*): σ(P) for cola, nothing for svd; LaX (docs/lax.md §6.3, kind_lax.c) crosses
// the replicated P with the previous layer's latent there, locally on every rank (no collective
// more, forward or backward), adds the carry after the dZ all-reduce, and gives the norm
// backward's c-term P back as U − g(Z_prev) (bn_p). Under CKPT_LOWRANK the kept bottleneck
// buffers hold what the kind keeps (LaX: U), from which Z is recomputed locally.
#include "drivers.h"

// The all-reduce(s) of a bottleneck over the TP group. fwd (phase = mdl->fwd_phase):
// with_stat adds the [N] statistic to the call that carries it (grouped: the one call;
// else the slot-0 call, q resp. gate). bwd: the gradient dZ, payload only.
// Grouped: 1 call of G·N·r (+N); ungrouped: G calls of N·r (+N on the first).
static void bn_all_reduce(Model *mdl, const Bn *b, void *buf, int with_stat, int phase, int gl) {
    size_t nr = (size_t)b->v.N * b->v.r, ns = with_stat ? (size_t)b->v.N : 0;
    if (b->grouped) { tp_all_reduce(mdl, buf, (size_t)b->v.G * nr + ns, phase, gl); return; }
    for (int j = 0; j < b->v.G; j++)
        tp_all_reduce(mdl, at(mdl, buf, b->v.off[j]), nr + (j == 0 ? ns : 0), phase, gl);
}

// ---- the kind's hooks at a bottleneck (kind.h): σ for cola, nothing for svd, the crossing
// for LaX (kind_lax.c) -------------------------------------------------------------------------
static void bn_latent_forward(Model *mdl, const Bn *b, int p0, void *Z, void *P, LinearW *const *W, int gl,
                              const Lat *prev, const Lat *out) {
    mdl->kind->bn_forward(mdl, b, p0, Z, P, W, gl, prev, out);
}
static void bn_latent_recompute(Model *mdl, const Bn *b, void *Z, void *U, LinearW *const *W, int gl) {
    mdl->kind->bn_recompute(mdl, b, Z, U, W, gl);
}
static void *bn_latent_backward(Model *mdl, const Bn *b, int p0, void *dZ, void *U, LinearW *const *W,
                                LinearW *const *dW, int gl, const Lat *prev, Scratch *s) {
    return mdl->kind->bn_backward(mdl, b, p0, dZ, U, W, dW, gl, prev, s);
}
static const void *bn_p(Model *mdl, const Bn *b, int p0, void *U, LinearW *const *W, int gl, const Lat *prev,
                        Scratch *s) {
    return mdl->kind->bn_input(mdl, b, p0, U, W, gl, prev, s);
}

// Concatenate the local A's [dr, r] of a group into acat [dr, G·r] (grouping).
static void concat_A(Model *mdl, void *acat, LinearW *const *A, int G, int dr, int r) {
    for (int j = 0; j < G; j++)
        op_copy2d(mdl->bk, at(mdl, acat, (size_t)j * r), (size_t)G * r, A[j]->A, (size_t)r, (size_t)dr, (size_t)r,
                  mdl->bk->dtype);
}

// The authors' 7B norm (boost.rmsnorm_variant = shard_local): RMSNorm over this rank's d/tp
// columns only — a different function from RMSNorm(x_full) at tp > 1, the same at tp 1.
static int norm_is_shard_local(const Model *mdl) { return mdl->boost.rmsnorm_variant == RMSNORM_SHARD_LOCAL; }
// The norm backward's c-term Σ_full-row da·a as Σ dP·P over the bottleneck (online RMSNorm, or
// SyncRMSNorm's `bottleneck` form), not the authors' all-reduce of the local Σ da·a nor a
// per-shard norm's local sum.
static int c_term_from_bottleneck(const Model *mdl) {
    return !norm_is_shard_local(mdl) &&
           (mdl->boost.online_rmsnorm || mdl->boost.sync_norm_backward != SYNC_NORM_BWD_ALLREDUCE);
}

// ---- chunk boundary into a bottleneck: P = RMSNorm(x_full) @ [A_1|..|A_G] --------------
// x [N,dr] this rank's residual slice, gamma [dr]. Writes P's payload (all-reduced, full)
// and its statistic slot (the full-row Σx²). Collectives: sync: AR(S) [N] then the
// payload AR(s); online: the payload AR(s) carrying S. reduce 0 (sequence parallelism)
// stops before the payload's collective: P holds this rank's partial sums (online: scaled by
// the local rms, the local Σx² in the statistic slot; sync: the all-reduced Σx² there).
static void norm_down_forward(Model *mdl, const Bn *b, void *P, const void *x, const void *gamma,
                              LinearW *const *A, int gl, Scratch *s, int reduce) {
    const ModelConfig *c = &mdl->cfg;
    Backend *bk = mdl->bk;
    int N = mdl->N, dr = mdl->lay.d_res, d = c->d_model, G = b->v.G, r = b->v.r;
    int online = mdl->boost.online_rmsnorm, local = norm_is_shard_local(mdl);
    float eps = c->norm_eps;
    void *S = at(mdl, P, b->stat);
    op_rowsumsq(bk, S, x, N, dr);                                   // step 1: local Σx²
    if (!online && !local)   // SyncRMSNorm: the full row's Σx², a separate [N] all-reduce
        tp_all_reduce(mdl, S, (size_t)N, mdl->fwd_phase, gl);
    // sync: a = x·rstd(full)·γ;  online steps 2-3: ŷ = x / rms_local · γ;  shard-local
    // (authors' 7B): a = x·rstd(local)·γ, final — the statistic never leaves the rank
    op_rownorm(bk, s->xn, x, gamma, S, N, dr, online || local ? dr : d, eps);
    // step 4: the row-parallel down factor(s): partial sums over this rank's rows
    if (b->grouped && G > 1) {
        concat_A(mdl, s->acat, A, G, dr, r);
        op_gemm(bk, TR_N, TR_N, N, G * r, dr, 1.0f, s->xn, dr, s->acat, G * r, 0.0f, P, b->v.ld);
    } else {
        for (int j = 0; j < G; j++)
            op_gemm(bk, TR_N, TR_N, N, r, dr, 1.0f, s->xn, dr, A[j]->A, r, 0.0f, at(mdl, P, b->v.off[j]), b->v.ld);
    }
    if (online) op_scale_rows(bk, P, &b->v, S, dr, eps, +1);       // step 5: undo the local scale
    if (!reduce) return;
    if (online && mdl->boost.rmsnorm_variant == RMSNORM_TWO_CALL) {  // authors' code: payload, then the statistic
        bn_all_reduce(mdl, b, P, 0, mdl->fwd_phase, gl);
        tp_all_reduce(mdl, S, (size_t)N, mdl->fwd_phase, gl);
    } else
        bn_all_reduce(mdl, b, P, online, mdl->fwd_phase, gl);       // step 6 / the bottleneck AR
    if (online) op_scale_rows(bk, P, &b->v, S, d, eps, -1);        // step 7: Y = H / rms(full row)
}

// Backward of norm_down_forward given dP (the full gradient wrt P, replicated): dA_j, dgamma
// (+)= (grad_acc), dx += (this rank's slice). The c-term Σ_full-row da·a comes for free from the
// replicated bottleneck (Σ dP·P), except in the authors' SyncRMSNorm form
// (boost.sync_norm_backward = allreduce), which all-reduces the local Σ da·a instead.
// S [N]: the full-row Σx² of every token. dot_ready: s->dot already holds the c-term's Σ dP·P of
// every token (sequence parallelism: each rank's tokens' sums, gathered with dP; P unused).
static void norm_down_backward(Model *mdl, const Bn *b, const void *P, const void *S, const void *dP,
                               const void *x, const void *gamma, LinearW *const *A,
                               LinearW *const *dA, void *dgamma, void *dx, int gl, Scratch *s, int dot_ready) {
    const ModelConfig *c = &mdl->cfg;
    Backend *bk = mdl->bk;
    int N = mdl->N, dr = mdl->lay.d_res, d = c->d_model, G = b->v.G, r = b->v.r;
    float eps = c->norm_eps;
    int dn = norm_is_shard_local(mdl) ? dr : d;                     // the width the statistic was taken over
    op_rownorm(bk, s->xn, x, gamma, S, N, dr, dn, eps);            // the forward's a = x·rstd·γ
    // da = dP @ A^T, dA += a^T dP
    if (b->grouped && G > 1) {
        concat_A(mdl, s->acat, A, G, dr, r);
        op_gemm(bk, TR_T, TR_N, dr, G * r, N, 1.0f, s->xn, dr, dP, b->v.ld, 0.0f, s->dacat, G * r);
        for (int j = 0; j < G; j++) {
            const void *src = at(mdl, s->dacat, (size_t)j * r);
            if (grad_acc(mdl)) op_add2d(bk, dA[j]->A, (size_t)r, src, (size_t)G * r, dr, r);
            else op_copy2d(bk, dA[j]->A, (size_t)r, src, (size_t)G * r, (size_t)dr, (size_t)r, bk->dtype);
        }
        op_gemm(bk, TR_N, TR_T, N, dr, G * r, 1.0f, dP, b->v.ld, s->acat, G * r, 0.0f, s->da, dr);
    } else {
        for (int j = 0; j < G; j++) {
            const void *dPj = at(mdl, dP, b->v.off[j]);
            op_gemm(bk, TR_T, TR_N, dr, r, N, 1.0f, s->xn, dr, dPj, b->v.ld, grad_beta(mdl), dA[j]->A, r);
            op_gemm(bk, TR_N, TR_T, N, dr, r, 1.0f, dPj, b->v.ld, A[j]->A, r, j ? 1.0f : 0.0f, s->da, dr);
        }
    }
    SlotView slice = { .N = N, .G = 1, .r = dr, .ld = dr };         // Σ over the local columns
    if (norm_is_shard_local(mdl)) {   // a per-shard RMSNorm: its c-term is the local Σ da·a, no collective
        op_rowdot(bk, s->dot, s->da, s->xn, &slice);
    } else if (!c_term_from_bottleneck(mdl)) {
        op_rowdot(bk, s->dot, s->da, s->xn, &slice);
        comm_all_reduce(mdl->comm, GROUP_TP, s->dot, (size_t)N, DTYPE_F32, OP_SUM, PHASE_BACKWARD, gl);
    } else if (!dot_ready) {
        op_rowdot(bk, s->dot, dP, P, &b->v);                        // Σ over the replicated bottleneck
    }
    op_sharded_rmsnorm_backward(bk, dx, dgamma, s->da, x, gamma, S, s->dot, N, dr, dn, eps, grad_acc(mdl));
}

// ---- up factors (column-parallel B's) ---------------------------------------------------
// out_j [N, dout_j] = Z_j @ B_j for the G slots of a bottleneck: one batched GEMM.
static void up_forward(Model *mdl, const Bn *b, const void *Z, LinearW *const *W, void *const *out, const int *dout) {
    GemmArgs g[3];
    for (int j = 0; j < b->v.G; j++)
        g[j] = (GemmArgs){ TR_N, TR_N, b->v.N, dout[j], b->v.r, 1.0f, at(mdl, Z, b->v.off[j]), b->v.ld,
                           W[j]->B, dout[j], 0.0f, out[j], dout[j] };
    op_gemm_group(mdl->bk, b->v.G, g);
}
// dZ_j = dout_j @ B_j^T (partial over this rank's columns; the caller all-reduces) and
// dB_j (+)= Z_j^T @ dout_j (grad_beta): two batched GEMMs — dZ's, then (up_weight_backward)
// dB's, which run while dZ's collective does (bn_backward_start / bn_backward).
typedef struct { const Bn *b; void *dZ; const void *Z; LinearW *const *W, *const *dW; void *const *dout; const int *wd; } UpBwd;
static void up_input_backward(Model *mdl, const UpBwd *u) {
    GemmArgs gz[3];
    for (int j = 0; j < u->b->v.G; j++)
        gz[j] = (GemmArgs){ TR_N, TR_T, u->b->v.N, u->b->v.r, u->wd[j], 1.0f, u->dout[j], u->wd[j], u->W[j]->B, u->wd[j],
                            0.0f, at(mdl, u->dZ, u->b->v.off[j]), u->b->v.ld };
    op_gemm_group(mdl->bk, u->b->v.G, gz);
}
static void up_weight_backward(Model *mdl, const UpBwd *u) {
    GemmArgs gw[3];
    for (int j = 0; j < u->b->v.G; j++)
        gw[j] = (GemmArgs){ TR_T, TR_N, u->b->v.r, u->wd[j], u->b->v.N, 1.0f, at(mdl, u->Z, u->b->v.off[j]), u->b->v.ld,
                            u->dout[j], u->wd[j], grad_beta(mdl), u->dW[j]->B, u->wd[j] };
    op_gemm_group(mdl->bk, u->b->v.G, gw);
}

// ---- chunk interiors (forward, and the recompute of CKPT_LOWRANK) ----------------------
// Chunk 1 (from Z_qkv): B_q|B_k|B_v on the local heads, RoPE, causal attention -> y.
static void attn_chunk(Model *mdl, LayerActs *la, LayerW *w) {
    const Layout *L = &mdl->lay;
    Bn b = bn_qkv(mdl);
    LinearW *W[3] = { &w->q, &w->k, &w->v };
    void *out[3] = { la->q, la->k, la->v };
    int dout[3] = { L->dq, L->dkv, L->dkv };
    up_forward(mdl, &b, la->zqkv, W, out, dout);
    attention_core_forward(mdl, la);
}
// Chunk 3 (from Z_gu): B_gate|B_up over the local d_ff, g*u.
static void mlp_chunk(Model *mdl, LayerActs *la, LayerW *w) {
    const Layout *L = &mdl->lay;
    Bn b = bn_gu(mdl);
    LinearW *W[2] = { &w->gate, &w->up };
    void *out[2] = { la->g, la->u };
    int dout[2] = { L->dff, L->dff };
    up_forward(mdl, &b, la->zgu, W, out, dout);
    op_swiglu_forward(mdl->bk, la->gu, la->g, la->u, (size_t)mdl->N * L->dff, gate_silu(&mdl->cfg));
}

// ---- sequence parallelism at the bottlenecks (Layout.sp; docs/boost.md §8) ---------------
// A bottleneck b of every token and the same bottleneck bs of this rank's N/tp tokens (rows
// [i·N/tp, (i+1)·N/tp) on TP rank i). Each payload segment (grouped: one; else G) is one
// collective over TP whose rank-i chunk is rank i's rows; the segment that carries a statistic
// (grouped: the one; else slot 0's) is packed through the staging buffer so that rank i's chunk
// is its payload rows followed by their statistic: one call carries both, as in BTP's all-reduce.
// started: the reduce-scatters are started into it (a backward's, whose caller waits for them)
// rather than blocking.
typedef struct { CommHandle h[3]; int n; } Started;
static void started_wait(Model *mdl, Started *st) {
    for (int i = 0; i < st->n; i++) comm_wait(mdl->comm, &st->h[i]);
    st->n = 0;
}
static void bn_scatter(Model *mdl, const Bn *b, const void *full, const Bn *bs, void *shard, int with_stat, int phase,
                       int gl, Scratch *s, Started *started) {
    Backend *bk = mdl->bk;
    size_t tp = (size_t)mdl->lay.tp, rows = (size_t)bs->v.N;
    size_t seg = (b->grouped ? (size_t)b->v.G : 1) * rows * b->v.r;   // one rank's payload of a segment
    for (int j = 0; j < (b->grouped ? 1 : b->v.G); j++) {
        const void *in = at(mdl, full, b->v.off[j]);
        size_t chunk = seg;
        if (with_stat && j == 0) {   // [payload rows | statistic] per rank
            op_copy2d(bk, s->stage, seg + rows, in, seg, tp, seg, bk->dtype);
            op_copy2d(bk, at(mdl, s->stage, seg), seg + rows, at(mdl, full, b->stat), rows, tp, rows, bk->dtype);
            in = s->stage;
            chunk += rows;
        }
        if (started)
            started->h[started->n++] = comm_reduce_scatter_start(mdl->comm, GROUP_TP, in, at(mdl, shard, bs->v.off[j]),
                                                                 chunk, (CommDtype)mdl->comm_dtype, (CommPhase)phase, gl);
        else
            comm_reduce_scatter(mdl->comm, GROUP_TP, in, at(mdl, shard, bs->v.off[j]), chunk, (CommDtype)mdl->comm_dtype,
                                (CommPhase)phase, gl);
    }
}
// The inverse: every rank's tokens of bs gathered into the bottleneck of every token; with_stat:
// the statistic after slot 0's (or the grouped) payload rides too and lands in stat_full [N].
// (Flags, not NULL tests, choose the collectives: the dry back end's pointers are all NULL.)
static void bn_gather(Model *mdl, const Bn *bs, const void *shard, const Bn *b, void *full, int with_stat,
                      void *stat_full, int phase, int gl, Scratch *s) {
    Backend *bk = mdl->bk;
    size_t tp = (size_t)mdl->lay.tp, rows = (size_t)bs->v.N;
    size_t seg = (b->grouped ? (size_t)b->v.G : 1) * rows * b->v.r;
    for (int j = 0; j < (b->grouped ? 1 : b->v.G); j++) {
        const void *in = at(mdl, shard, bs->v.off[j]);
        void *out = at(mdl, full, b->v.off[j]);
        if (!with_stat || j) {
            comm_all_gather(mdl->comm, GROUP_TP, in, out, seg, (CommDtype)mdl->comm_dtype, (CommPhase)phase, gl);
            continue;
        }
        comm_all_gather(mdl->comm, GROUP_TP, in, s->stage, seg + rows, (CommDtype)mdl->comm_dtype, (CommPhase)phase, gl);
        op_copy2d(bk, out, seg, s->stage, seg + rows, tp, seg, bk->dtype);
        op_copy2d(bk, stat_full, rows, at(mdl, s->stage, seg), seg + rows, tp, rows, bk->dtype);
    }
}

// Forward at a bottleneck: Pp holds this rank's partial sums of every token (the A GEMM, or
// norm_down_forward before its collective). Reduce-scattered to this rank's tokens P (online
// RMSNorm: the statistic riding, then step 7 on those tokens), the kind's Z of them, gathered to
// every token into Z (the statistic riding again into S_full, the norm backward's). normed 0:
// a bottleneck without a norm (o, down). S_full without online RMSNorm: Pp's statistic as it is
// (sync: all-reduced already; shard_local: the rank's own). The authors' two-call form
// (boost.rmsnorm_variant two_call) moves the statistic by calls of its own, both ways.
static void seq_bn_forward(Model *mdl, const Bn *b, const void *Pp, void *P, void *Z, int normed, void *S_full, int p0,
                           LinearW *const *W, int gl, const Lat *prev, const Lat *out, Scratch *s) {
    Backend *bk = mdl->bk;
    int rows = mdl->N / mdl->lay.tp, ph = mdl->fwd_phase, own = mdl->kind->own_z(&mdl->cfg);
    int online = normed && mdl->boost.online_rmsnorm, two = online && mdl->boost.rmsnorm_variant == RMSNORM_TWO_CALL;
    int ride = online && !two;
    CommDtype t = (CommDtype)mdl->comm_dtype;
    Bn bs = bn_rows(b, rows);
    if (normed && !online) copy_t(mdl, S_full, at(mdl, Pp, b->stat), (size_t)mdl->N);
    bn_scatter(mdl, b, Pp, &bs, P, ride, ph, gl, s, NULL);
    if (two) comm_reduce_scatter(mdl->comm, GROUP_TP, at(mdl, Pp, b->stat), at(mdl, P, bs.stat), (size_t)rows, t,
                                 (CommPhase)ph, gl);
    if (online) op_scale_rows(bk, P, &bs.v, at(mdl, P, bs.stat), mdl->cfg.d_model, mdl->cfg.norm_eps, -1);   // step 7
    void *Zs = own ? s->bns : P;                  // (svd: Z is P)
    bn_latent_forward(mdl, &bs, p0, Zs, P, W, gl, prev, out);
    if (ride && own) copy_t(mdl, at(mdl, Zs, bs.stat), at(mdl, P, bs.stat), (size_t)rows);
    bn_gather(mdl, &bs, Zs, b, Z, ride, S_full, ph, gl, s);
    if (two) comm_all_gather(mdl->comm, GROUP_TP, at(mdl, P, bs.stat), S_full, (size_t)rows, t, (CommPhase)ph, gl);
}
// CKPT_LOWRANK's recompute of Z from the kept P of this rank's tokens: the kind's Z of them,
// gathered to every token (the recompute's one collective per bottleneck).
static void seq_bn_recompute(Model *mdl, const Bn *b, void *Z, void *P, LinearW *const *W, int gl, Scratch *s) {
    Bn bs = bn_rows(b, mdl->N / mdl->lay.tp);
    void *Zs = mdl->kind->own_z(&mdl->cfg) ? s->bns : P;
    bn_latent_recompute(mdl, &bs, Zs, P, W, gl);
    bn_gather(mdl, &bs, Zs, b, Z, 0, NULL, PHASE_RECOMPUTE, gl, s);
}
// Backward at a bottleneck: dZp, this rank's partial dZ of every token (up_input_backward),
// reduce-scattered to its tokens (started by bn_backward_start, waited for here), the kind's dP
// of them (P: the kept P of those tokens), with with_dot the c-term's Σ dP·P of each token
// riding, and dP gathered to every token into dZp's buffer, which it returns (the gathered
// Σ dP·P in s->dot).
static void *seq_bn_backward(Model *mdl, const Bn *b, void *dZp, void *P, int p0, LinearW *const *W,
                             LinearW *const *dW, int gl, const Lat *prev, Scratch *s, int with_dot, Started *st) {
    Backend *bk = mdl->bk;
    int rows = mdl->N / mdl->lay.tp;
    Bn bs = bn_rows(b, rows);
    started_wait(mdl, st);                        // dZp reduce-scattered into s->bns
    void *dPs = bn_latent_backward(mdl, &bs, p0, s->bns, P, W, dW, gl, prev, s);
    if (with_dot) {   // Σ dP·P of this rank's tokens, carried in dP's statistic slot (compute dtype)
        op_rowdot(bk, s->dot, dPs, P, &bs.v);
        op_cast(bk, at(mdl, dPs, bs.stat), bk->dtype, s->dot, DT_F32, (size_t)rows);
    }
    bn_gather(mdl, &bs, dPs, b, dZp, with_dot, at(mdl, dZp, b->stat), PHASE_BACKWARD, gl, s);
    if (with_dot) op_cast(bk, s->dot, DT_F32, at(mdl, dZp, b->stat), bk->dtype, (size_t)mdl->N);
    return dZp;
}

// Into bottleneck b from the residual (q|k|v, gate|up): P, Z and (sequence parallelism) S_full
// of the layer; x, gamma the norm's input slice and gain.
static void norm_bn_forward(Model *mdl, const Bn *b, void *P, void *Z, void *S_full, const void *x, const void *gamma,
                            LinearW *const *A, int p0, int gl, const Lat *prev, const Lat *out, Scratch *s) {
    if (!mdl->lay.sp) {
        norm_down_forward(mdl, b, P, x, gamma, A, gl, s, 1);
        bn_latent_forward(mdl, b, p0, Z, P, A, gl, prev, out);
        return;
    }
    norm_down_forward(mdl, b, s->dpb, x, gamma, A, gl, s, 0);
    seq_bn_forward(mdl, b, s->dpb, P, Z, 1, S_full, p0, A, gl, prev, out, s);
}
// Into bottleneck b from a local product (o, down): Pp = in @ A (row-parallel), then the
// bottleneck's collective(s) and the kind's Z.
static void plain_bn_forward(Model *mdl, const Bn *b, void *P, void *Z, const void *in, LinearW *const *A, int din,
                             int p0, int gl, const Lat *prev, const Lat *out, Scratch *s) {
    void *Pp = mdl->lay.sp ? s->dpb : P;
    mm_forward(mdl, Pp, in, A[0]->A, mdl->N, din, b->v.r, 0.0f);
    if (!mdl->lay.sp) {
        bn_all_reduce(mdl, b, P, 0, mdl->fwd_phase, gl);
        bn_latent_forward(mdl, b, p0, Z, P, A, gl, prev, out);
        return;
    }
    seq_bn_forward(mdl, b, Pp, P, Z, 0, NULL, p0, A, gl, prev, out, s);
}
// Backward at bottleneck b from dZp [b] (this rank's partial sums, in s->dzb), in two halves
// around the B's weight gradients, which run while dZp's collective(s) do (comm.h: started
// collectives; Megatron-LM overlaps a column-parallel input gradient's all-reduce with the
// weight-gradient GEMM the same way): bn_backward_start starts the all-reduce(s) of dZp
// (sequence parallelism: its reduce-scatter(s) to this rank's tokens); bn_backward waits for
// them and returns dP of every token (replicated), as the A's backward needs it.
static Started bn_backward_start(Model *mdl, const Bn *b, Scratch *s, int gl) {
    Started st = { .n = 0 };
    if (mdl->lay.sp) {
        Bn bs = bn_rows(b, mdl->N / mdl->lay.tp);
        bn_scatter(mdl, b, s->dzb, &bs, s->bns, 0, PHASE_BACKWARD, gl, s, &st);
        return st;
    }
    size_t nr = (size_t)b->v.N * b->v.r;   // bn_all_reduce's calls, payload only
    for (int j = 0; j < (b->grouped ? 1 : b->v.G); j++)
        st.h[st.n++] = comm_all_reduce_start(mdl->comm, GROUP_TP, at(mdl, s->dzb, b->v.off[j]),
                                             b->grouped ? (size_t)b->v.G * nr : nr, (CommDtype)mdl->comm_dtype, OP_SUM,
                                             PHASE_BACKWARD, gl);
    return st;
}
static void *bn_backward(Model *mdl, const Bn *b, void *P, int p0, LinearW *const *W, LinearW *const *dW, int gl,
                         const Lat *prev, Scratch *s, int with_dot, Started *st) {
    if (mdl->lay.sp) return seq_bn_backward(mdl, b, s->dzb, P, p0, W, dW, gl, prev, s, with_dot, st);
    started_wait(mdl, st);
    return bn_latent_backward(mdl, b, p0, s->dzb, P, W, dW, gl, prev, s);
}
// From a bottleneck's output gradients dout to dP: dZ = dout @ B^T, its collective started, the
// B's weight gradients meanwhile, then dP (bn_backward).
static void *up_bn_backward(Model *mdl, const UpBwd *u, void *P, int p0, int gl, const Lat *prev, Scratch *s,
                            int with_dot) {
    up_input_backward(mdl, u);
    Started st = bn_backward_start(mdl, u->b, s, gl);
    up_weight_backward(mdl, u);
    return bn_backward(mdl, u->b, P, p0, u->W, u->dW, gl, prev, s, with_dot, &st);
}
static void bn_recompute(Model *mdl, const Bn *b, void *Z, void *P, LinearW *const *W, int gl, Scratch *s) {
    if (mdl->lay.sp) seq_bn_recompute(mdl, b, Z, P, W, gl, s);
    else bn_latent_recompute(mdl, b, Z, P, W, gl);
}
// Backward of norm_bn_forward from dP (every token's): the A's, the gain, s->dx +=.
static void norm_bn_backward(Model *mdl, const Bn *b, void *P, const void *S_full, const void *dP, const void *x,
                             const void *gamma, LinearW *const *A, LinearW *const *dA, void *dgamma, int p0, int gl,
                             const Lat *prev, Scratch *s) {
    if (mdl->lay.sp) {   // the c-term's Σ dP·P came with dP (when the norm takes it from the bottleneck)
        norm_down_backward(mdl, b, NULL, S_full, dP, x, gamma, A, dA, dgamma, s->dx, gl, s, c_term_from_bottleneck(mdl));
        return;
    }
    const void *Pin = bn_p(mdl, b, p0, P, A, gl, prev, s);
    norm_down_backward(mdl, b, Pin, at(mdl, Pin, b->stat), dP, x, gamma, A, dA, dgamma, s->dx, gl, s, 0);
}

void btp_layer_forward(Model *mdl, LayerActs *la, int l, void *x_out, const Lat *prev, const Lat *out) {
    const Layout *L = &mdl->lay;
    LayerW *w = &mdl->w.layers[l];
    int gl = L->layer_begin + l;                  // global layer index (accounting)
    int N = mdl->N, dr = L->d_res;
    Scratch s; scratch_view(mdl, &s);
    Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);

    // ---- attention ------------------------------------------------------------------
    LinearW *Aqkv[3] = { &w->q, &w->k, &w->v };
    norm_bn_forward(mdl, &bq, la->pqkv, la->zqkv, la->stat_qkv, la->x, w->input_norm, Aqkv, LX_Q, gl, prev, out,
                    &s);                                            // (1) AR [N,3r] (+S)
    attn_chunk(mdl, la, w);
    LinearW *Ao[1] = { &w->o };                                     // A_o row-parallel (local heads)
    plain_bn_forward(mdl, &bo, la->po, la->zo, la->y, Ao, L->dq, LX_O, gl, prev, out, &s);   // (2) AR [N,r]
    mm_forward_residual(mdl, la->x_mid, la->x, la->zo, w->o.B, N, L->ra, dr);   // x_mid = x + σ(P_o) @ B_o (slice)

    // ---- MLP ------------------------------------------------------------------------
    LinearW *Agu[2] = { &w->gate, &w->up };
    norm_bn_forward(mdl, &bg, la->pgu, la->zgu, la->stat_gu, la->x_mid, w->post_attn_norm, Agu, LX_GATE, gl, prev, out,
                    &s);                                            // (3) AR [N,2r] (+S)
    mlp_chunk(mdl, la, w);
    LinearW *Ad[1] = { &w->down };                                  // A_down row-parallel (local d_ff)
    plain_bn_forward(mdl, &bd, la->pd, la->zd, la->gu, Ad, L->dff, LX_DOWN, gl, prev, out, &s);   // (4) AR [N,r]
    mm_forward_residual(mdl, x_out, la->x_mid, la->zd, w->down.B, N, L->rm, dr);  // x_out = x_mid + σ(P_d) @ B_down
}

// On entry s->dx = d(x_out) [N,d_res]; on exit s->dx = d(x).
void btp_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s, const Lat *prev) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    Backend *bk = mdl->bk;
    LayerW *w = &mdl->w.layers[l], *dw = &mdl->dw.layers[l];
    int gl = L->layer_begin + l;
    int N = mdl->N, dr = L->d_res;
    int recompute = mdl->ckpt == CKPT_LOWRANK, dot = c_term_from_bottleneck(mdl);
    Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
    size_t Nff = (size_t)N * L->dff;
    void *dP;
    LinearW *Wqkv[3] = { &w->q, &w->k, &w->v }, *Wo[1] = { &w->o }, *Wgu[2] = { &w->gate, &w->up }, *Wd[1] = { &w->down };
    LinearW *dWqkv[3] = { &dw->q, &dw->k, &dw->v }, *dWo[1] = { &dw->o }, *dWgu[2] = { &dw->gate, &dw->up },
            *dWd[1] = { &dw->down };

    // ---- MLP: s->dx is d(x_out), and d(x_mid) before the norm path is added -----------
    if (recompute) {                              // chunks 3 and 4 from P_gu, P_d
        bk_label(bk, PHASE_RECOMPUTE, gl);
        bn_recompute(mdl, &bd, la->zd, la->pd, Wd, gl, s);
        bn_recompute(mdl, &bg, la->zgu, la->pgu, Wgu, gl, s);
        mlp_chunk(mdl, la, w);
        bk_label(bk, PHASE_BACKWARD, gl);
    }
    {   // B_down: dZ_d = d(x_out) @ B_down^T, partial over this rank's residual columns
        void *dout[1] = { s->dx }; int wd[1] = { dr };
        UpBwd u = { &bd, s->dzb, la->zd, Wd, dWd, dout, wd };
        dP = up_bn_backward(mdl, &u, la->pd, LX_DOWN, gl, prev, s, 0);   // (4') AR dZ_d [N,r] ‖ dB_down
    }
    mm_backward(mdl, s->dgu, dw->down.A, dP, la->gu, w->down.A, N, L->dff, L->rm, 0.0f);  // A_down: local
    op_swiglu_backward(bk, s->dg, s->du, s->dgu, la->g, la->u, Nff, gate_silu(c));
    {
        void *dout[2] = { s->dg, s->du }; int wd[2] = { L->dff, L->dff };
        UpBwd u = { &bg, s->dzb, la->zgu, Wgu, dWgu, dout, wd };
        dP = up_bn_backward(mdl, &u, la->pgu, LX_GATE, gl, prev, s, dot);   // (3') AR dZ_gu [N,2r] or 2×[N,r] ‖ dB_gate|up
    }
    norm_bn_backward(mdl, &bg, la->pgu, la->stat_gu, dP, la->x_mid, w->post_attn_norm, Wgu, dWgu, dw->post_attn_norm,
                     LX_GATE, gl, prev, s);     // s->dx = d(x_mid)

    // ---- attention ------------------------------------------------------------------
    if (recompute) {                              // chunks 2 and 1 from P_o, P_qkv
        bk_label(bk, PHASE_RECOMPUTE, gl);
        bn_recompute(mdl, &bo, la->zo, la->po, Wo, gl, s);
        bn_recompute(mdl, &bq, la->zqkv, la->pqkv, Wqkv, gl, s);
        attn_chunk(mdl, la, w);
        bk_label(bk, PHASE_BACKWARD, gl);
    }
    {
        void *dout[1] = { s->dx }; int wd[1] = { dr };
        UpBwd u = { &bo, s->dzb, la->zo, Wo, dWo, dout, wd };
        dP = up_bn_backward(mdl, &u, la->po, LX_O, gl, prev, s, 0);   // (2') AR dZ_o [N,r] ‖ dB_o
    }
    if (mdl->ckpt == CKPT_SELECTIVE) attention_core_replay(mdl, la, gl);   // y, lse from q, k, v
    mm_backward(mdl, s->dy, dw->o.A, dP, la->y, w->o.A, N, L->dq, L->ra, 0.0f);  // A_o: local
    attention_core_backward(mdl, la, s);
    {
        void *dout[3] = { s->dq, s->dk, s->dv }; int wd[3] = { L->dq, L->dkv, L->dkv };
        UpBwd u = { &bq, s->dzb, la->zqkv, Wqkv, dWqkv, dout, wd };
        dP = up_bn_backward(mdl, &u, la->pqkv, LX_Q, gl, prev, s, dot);   // (1') AR dZ_qkv [N,3r] or 3×[N,r] ‖ dB_q|k|v
    }
    norm_bn_backward(mdl, &bq, la->pqkv, la->stat_qkv, dP, la->x, w->input_norm, Wqkv, dWqkv, dw->input_norm, LX_Q, gl,
                     prev, s);                  // s->dx = d(x)
}
