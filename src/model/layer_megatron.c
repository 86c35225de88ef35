// layer_megatron.c — one transformer block under Megatron-style tensor parallelism:
//
//  * dense model = "FullRank-TP": q,k,v,gate,up column-parallel (local heads, local
//    d_ff), o and down row-parallel. Per block: 2 all-reduces of [N,d] forward (after o
//    and down: the g operator) and 2 backward (input gradients of the column-parallel
//    groups qkv and gate/up: the f operator).
//  * low-rank model = the paper's "Vanilla-TP" baseline: each factor pair is its own
//    Megatron pair — A column-parallel over r, σ on the r/tp slice, B row-parallel over
//    r, and an all-reduce of B's full-width output. Forward: 7 all-reduces (q,k,v,o of
//    width d / kv_dim, gate and up of width d_ff, down of width d). Backward: 4 (the
//    input gradients of the fused q/k/v A's, of o's A, of the fused gate/up A's, of
//    down's A). The attention core and g*u run replicated on every TP rank, as in the
//    authors' baseline.
// Megatron's conjugate operators appear below by name:
//   f = identity forward / all-reduce backward   (input of a column-parallel layer)
//   g = all-reduce forward / identity backward   (output of a row-parallel layer)
// At tp = 1 every collective is a no-op on a group of one and is not counted.
//
// Sequence parallelism (Layout.sp; Korthikanti et al. 2022, Megatron-LM's mappings.py;
// docs/parallelism.md §8): the residual stream, both norms and both residual adds hold this
// rank's N_res = N/tp tokens, and the block's boundary operators become the conjugate pair
// along the sequence:
//   seq_gather  = all-gather forward / reduce-scatter backward  (input of a column-parallel group)
//   seq_scatter = reduce-scatter forward / all-gather backward  (output of a row-parallel linear)
// Only the normed shard is kept; the backward gathers it again for the weight gradients, as
// Megatron does. Per block, each [N,d]: forward 2 all-gathers + 2 reduce-scatters (the ring
// traffic of the 2 all-reduces they replace); backward 4 all-gathers (2 output gradients, the 2
// normed inputs again) + 2 reduce-scatters. Vanilla-TP's inner all-reduces (q, k, v, gate, up
// outputs and the A_down, A_o input gradients) stay: their consumers (the replicated attention
// core and g*u, the A's) need every token.
//
// LaX (docs/lax.md §6.2): each projection's latent crosses with the previous layer's
// (kind_lax.c). Slice-local (identity gate, no norm): no collective more. Otherwise one all-gather
// of P [N, r] per projection forward (gather_fwd; global layer 0 only when L ≥ 2) and one of
// dZ backward in layers ≥ 1 (split_fwd), inside the kind's forward and backward (kind_lax.c).
#include "drivers.h"

// Forward collectives use mdl->fwd_phase: PHASE_FORWARD, or PHASE_RECOMPUTE while
// boost.full_recompute replays the block in backward (model.c).
static void g_forward(Model *mdl, void *buf, size_t n, int layer) { tp_all_reduce(mdl, buf, n, mdl->fwd_phase, layer); }

// Communication beside compute (comm.h: started collectives, with comm->overlap), where the
// block's order allows it:
//   forward (Vanilla-TP)  g's all-reduce of q's (k's; gate's) output runs while the next
//                         projection's GEMMs do; the attention core (g*u) waits for all three (two)
//   backward              the input-gradient collective of a column-parallel group (f's
//                         all-reduce, or sequence parallelism's reduce-scatter) and, under
//                         Vanilla-TP, of A_down's and A_o's input gradients, runs while the weight
//                         gradients of the linear that completed it are computed (Megatron-LM's
//                         LinearWithGradAccumulationAndAsyncCommunication): that linear's dW GEMMs
//                         are held back (mm_backward's queue) until the collective has started.
// Only that last linear's: the kinds' backward of q and k reuse the scratch (dz, dh) that v's
// rewrites, so their weight gradients run in place. Everything else here feeds the next op.
static CommHandle g_forward_start(Model *mdl, void *buf, size_t n, int layer) {
    return comm_all_reduce_start(mdl->comm, GROUP_TP, buf, n, (CommDtype)mdl->comm_dtype, OP_SUM,
                                 (CommPhase)mdl->fwd_phase, layer);
}
// The next linear's weight gradients wait for the collective after it (with overlap only: in
// the blocking form they run in place).
static void hold_weight_grads(Model *mdl) { mdl->dw_defer = mdl->comm->overlap; }
// Sequence parallelism: the input of a column-parallel group, gathered along the sequence into
// the scratch's full [N,d] (forward, and again in backward for the weight gradients); returns
// where the group reads it (the shard itself without sequence parallelism).
static const void *seq_gather(Model *mdl, Scratch *s, const void *shard, int phase, int layer) {
    if (!mdl->lay.sp) return shard;
    tp_seq_gather(mdl, s->seq_full, shard, (size_t)mdl->cfg.d_model, phase, layer);
    return s->seq_full;
}
// The output of a row-parallel linear (o, down) into the residual stream: g's all-reduce of
// out [N,d], or the reduce-scatter of the scratch's full partial sums to this rank's tokens.
static void row_parallel_out(Model *mdl, void *out, const Scratch *s, int layer) {
    if (mdl->lay.sp) tp_seq_scatter(mdl, out, s->seq_full, (size_t)mdl->cfg.d_model, mdl->fwd_phase, layer);
    else g_forward(mdl, out, (size_t)mdl->N * mdl->cfg.d_model, layer);
}
// A started input-gradient collective, with the held-back weight gradients meanwhile.
static void beside_weight_grads(Model *mdl, CommHandle h) {
    mm_weight_grads(mdl);
    comm_wait(mdl->comm, &h);
}
// f's backward: the all-reduce of an input gradient (Vanilla-TP: also A_down's and A_o's).
static void f_backward(Model *mdl, void *buf, size_t n, int layer) {
    beside_weight_grads(mdl, comm_all_reduce_start(mdl->comm, GROUP_TP, buf, n, (CommDtype)mdl->comm_dtype, OP_SUM,
                                                   PHASE_BACKWARD, layer));
}
// Backward of a column-parallel group's input: f's all-reduce of s->da [N,d], or the
// reduce-scatter of it in place to this rank's tokens (its first N_res rows).
static void col_parallel_in_backward(Model *mdl, Scratch *s, int layer) {
    size_t d = (size_t)mdl->cfg.d_model;
    if (!mdl->lay.sp) { f_backward(mdl, s->da, (size_t)mdl->N * d, layer); return; }
    beside_weight_grads(mdl, comm_reduce_scatter_start(mdl->comm, GROUP_TP, s->da, s->da, (size_t)mdl->N_res * d,
                                                       (CommDtype)mdl->comm_dtype, PHASE_BACKWARD, layer));
}

// One projection: its kind's local math (kind.h), p its index LX_* (a latent kind crosses it
// with the same projection of the previous layer).
// y = res + lin(x) when add_res (the residual add inside the kind's last GEMM).
static void lin_forward(Model *mdl, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                        const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, const Lat *out) {
    mdl->kind->forward(mdl, y, res, add_res, la, x, w, din, dout, r, p, gl, prev, out);
}
static void lin_backward(Model *mdl, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                         const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, Scratch *s,
                         float beta_dx) {
    mdl->kind->backward(mdl, dx, dw, dy, x, la, w, din, dout, r, p, gl, prev, s, beta_dx);
}

void megatron_layer_forward(Model *mdl, LayerActs *la, int l, void *x_out, const Lat *prev, const Lat *out) {
    Backend *bk = mdl->bk;
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    LayerW *w = &mdl->w.layers[l];
    int gl = L->layer_begin + l;                  // global layer index (accounting)
    int N = mdl->N, d = c->d_model, Nr = mdl->N_res;   // Nr: the residual's tokens here
    int lr = mdl->kind->lowrank;               // low-rank: every linear's output is a partial sum over r
    size_t Nrd = (size_t)Nr * d;
    Scratch s; scratch_view(mdl, &s);
    // sequence parallelism: o's and down's full partial sums go to the scratch, then scatter
    void *o_out = L->sp ? s.seq_full : la->x_mid, *down_out = L->sp ? s.seq_full : x_out;

    // ---- attention -------------------------------------------------------------------
    op_rmsnorm_forward(bk, la->a, la->rstd1, la->x, w->input_norm, Nr, d, c->norm_eps);
    // f(a): identity forward (sequence parallelism: seq_gather). Dense: q,k,v of the local
    // heads. Low-rank: full-width partial sums over the r/tp slice, completed by g.
    const void *a = seq_gather(mdl, &s, la->a, mdl->fwd_phase, gl);
    CommHandle hq = COMM_DONE, hk = COMM_DONE, hv = COMM_DONE;   // (low-rank: g's all-reduces, started)
    lin_forward(mdl, la->q, NULL, 0, &la->lq, a, &w->q, d, L->dq, L->ra, LX_Q, gl, prev, out);
    if (lr) hq = g_forward_start(mdl, la->q, (size_t)N * L->dq, gl);
    lin_forward(mdl, la->k, NULL, 0, &la->lk, a, &w->k, d, L->dkv, L->ra, LX_K, gl, prev, out);
    if (lr) hk = g_forward_start(mdl, la->k, (size_t)N * L->dkv, gl);
    lin_forward(mdl, la->v, NULL, 0, &la->lv, a, &w->v, d, L->dkv, L->ra, LX_V, gl, prev, out);
    if (lr) hv = g_forward_start(mdl, la->v, (size_t)N * L->dkv, gl);
    comm_wait(mdl->comm, &hq); comm_wait(mdl->comm, &hk); comm_wait(mdl->comm, &hv);
    attention_core_forward(mdl, la);
    // o: dense row-parallel over the local heads; low-rank A_o column-parallel over r.
    // At tp = 1 no all-reduce completes o's and down's outputs, so the residual add goes inside
    // their last GEMM (C = the residual, D = the output: no pass of its own).
    const int fold = L->tp == 1;
    lin_forward(mdl, o_out, la->x, fold, &la->lo, la->y, &w->o, L->dq, d, L->ra, LX_O, gl, prev, out);
    row_parallel_out(mdl, la->x_mid, &s, gl);     // full o output (or this rank's tokens of it)
    if (!fold) op_add(bk, la->x_mid, la->x, Nrd); // x_mid = x + o(y)

    // ---- MLP -----------------------------------------------------------------------
    op_rmsnorm_forward(bk, la->m, la->rstd2, la->x_mid, w->post_attn_norm, Nr, d, c->norm_eps);
    const void *m = seq_gather(mdl, &s, la->m, mdl->fwd_phase, gl);
    CommHandle hg = COMM_DONE, hu = COMM_DONE;
    lin_forward(mdl, la->g, NULL, 0, &la->lg, m, &w->gate, d, L->dff, L->rm, LX_GATE, gl, prev, out);
    if (lr) hg = g_forward_start(mdl, la->g, (size_t)N * L->dff, gl);
    lin_forward(mdl, la->u, NULL, 0, &la->lu, m, &w->up, d, L->dff, L->rm, LX_UP, gl, prev, out);
    if (lr) hu = g_forward_start(mdl, la->u, (size_t)N * L->dff, gl);
    comm_wait(mdl->comm, &hg); comm_wait(mdl->comm, &hu);
    op_swiglu_forward(bk, la->gu, la->g, la->u, (size_t)N * L->dff, gate_silu(c));
    lin_forward(mdl, down_out, la->x_mid, fold, &la->ld, la->gu, &w->down, L->dff, d, L->rm, LX_DOWN, gl, prev, out);
    row_parallel_out(mdl, x_out, &s, gl);         // full down output (or this rank's tokens of it)
    if (!fold) op_add(bk, x_out, la->x_mid, Nrd); // x_out = x_mid + down(gu)
}

// On entry s->dx = d(x_out); on exit s->dx = d(x) (the block input).
void megatron_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s, const Lat *prev) {
    Backend *bk = mdl->bk;
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    LayerW *w = &mdl->w.layers[l], *dw = &mdl->dw.layers[l];
    int gl = L->layer_begin + l;
    int N = mdl->N, d = c->d_model, Nr = mdl->N_res;
    int lr = mdl->kind->lowrank;               // low-rank: every linear's output is a partial sum over r
    size_t Nff = (size_t)N * L->dff;
    // seq_scatter's backward: the output gradient d(x_out), d(x_mid) of every token, gathered
    const void *dout = s->dx;
    if (L->sp) { tp_seq_gather(mdl, s->seq_full, s->dx, (size_t)d, PHASE_BACKWARD, gl); dout = s->seq_full; }

    // ---- MLP: s->dx passes through the residual to x_mid unchanged ------------------
    // (each scratch gradient's first writer overwrites it: beta 0 GEMMs, the SwiGLU backward)
    if (lr) hold_weight_grads(mdl);
    lin_backward(mdl, s->dgu, &dw->down, dout, la->gu, &la->ld, &w->down, L->dff, d, L->rm, LX_DOWN, gl, prev, s, 0.0f);
    if (lr) f_backward(mdl, s->dgu, Nff, gl);   // A_down's input gradient (partial over r) ‖ dA, dB of down
    op_swiglu_backward(bk, s->dg, s->du, s->dgu, la->g, la->u, Nff, gate_silu(c));
    const void *m = seq_gather(mdl, s, la->m, PHASE_BACKWARD, gl);   // (sequence parallelism: again)
    lin_backward(mdl, s->da, &dw->gate, s->dg, m, &la->lg, &w->gate, d, L->dff, L->rm, LX_GATE, gl, prev, s, 0.0f);
    hold_weight_grads(mdl);
    lin_backward(mdl, s->da, &dw->up, s->du, m, &la->lu, &w->up, d, L->dff, L->rm, LX_UP, gl, prev, s, 1.0f);
    col_parallel_in_backward(mdl, s, gl);         // gate/up input gradient (fused) ‖ up's weight gradients
    op_rmsnorm_backward(bk, s->dx, dw->post_attn_norm, s->da, la->x_mid, w->post_attn_norm, la->rstd2, Nr, d, 1,
                        grad_acc(mdl));   // dx += (the residual's gradient is there)

    // ---- attention: s->dx is now d(x_mid) --------------------------------------------
    if (L->sp) { tp_seq_gather(mdl, s->seq_full, s->dx, (size_t)d, PHASE_BACKWARD, gl); dout = s->seq_full; }
    if (mdl->ckpt == CKPT_SELECTIVE) attention_core_replay(mdl, la, gl);   // y, lse from q, k, v
    if (lr) hold_weight_grads(mdl);
    lin_backward(mdl, s->dy, &dw->o, dout, la->y, &la->lo, &w->o, L->dq, d, L->ra, LX_O, gl, prev, s, 0.0f);
    if (lr) f_backward(mdl, s->dy, (size_t)N * L->dq, gl);   // A_o's input gradient ‖ dA, dB of o
    attention_core_backward(mdl, la, s);
    const void *a = seq_gather(mdl, s, la->a, PHASE_BACKWARD, gl);   // (sequence parallelism: again)
    lin_backward(mdl, s->da, &dw->q, s->dq, a, &la->lq, &w->q, d, L->dq, L->ra, LX_Q, gl, prev, s, 0.0f);
    lin_backward(mdl, s->da, &dw->k, s->dk, a, &la->lk, &w->k, d, L->dkv, L->ra, LX_K, gl, prev, s, 1.0f);
    hold_weight_grads(mdl);
    lin_backward(mdl, s->da, &dw->v, s->dv, a, &la->lv, &w->v, d, L->dkv, L->ra, LX_V, gl, prev, s, 1.0f);
    col_parallel_in_backward(mdl, s, gl);         // q/k/v input gradient (fused) ‖ v's weight gradients
    op_rmsnorm_backward(bk, s->dx, dw->input_norm, s->da, la->x, w->input_norm, la->rstd1, Nr, d, 1, grad_acc(mdl));
}
