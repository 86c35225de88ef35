// model.c — allocation, the embedding, LM head and loss, and the stage drivers that
// run a pipeline stage's blocks forward and backward for one micro-batch.
//
// Block (paper notes §1), x the residual stream [N,d], N = B*T tokens:
//   a = RMSNorm(x)                      q,k,v = lin(a); RoPE(q,k)
//   y = causal_attention(q,k,v)         x_mid = x + lin_o(y)
//   m = RMSNorm(x_mid)                  g,u = lin_gate(m), lin_up(m)
//   gu = (SiLU(g) or g) * u             x_out = x_mid + lin_down(gu)
// lin(x) is x@W (dense), σ(x@A)@B (cola, σ = SiLU) or (x@A)@B (svd). The blocks of each
// tensor-parallel scheme live in layer_<scheme>.c with their collectives in plain sight:
// layer_megatron.c (FullRank-TP / Vanilla-TP), layer_btp.c (bottleneck-aware TP, whose
// residual stream is a d/tp column slice: the embedding output is sliced and the last
// block's output all-gathered here). Activation checkpointing (mdl->ckpt, docs/boost.md)
// decides what each layer keeps (carve_acts) and, for CKPT_FULL, replays each block's
// forward before its backward (model_stage_backward).
#include <math.h>
#include "model_internal.h"
#include "../core/check.h"
#include "../ops/ops.h"

// ---------------------------------------------------------------------------------
// Carving: one buffer per family, two passes (count with base == NULL, then assign).
typedef struct { float *base; size_t off; } Carve;
static float *carve(Carve *cv, size_t n) {
    float *p = cv->base ? cv->base + cv->off : NULL;
    cv->off += (n + 15) / 16 * 16;
    return p;
}
static LowRankActs carve_lowrank(Carve *cv, const ModelConfig *c, int N, int r) {
    LowRankActs a = {0};
    if (!is_lowrank(c)) return a;
    a.h = carve(cv, (size_t)N * r);
    a.z = c->linear == LINEAR_COLA ? carve(cv, (size_t)N * r) : a.h;  // svd: z aliases h
    return a;
}
// One layer's activations, everything kept (CKPT_NONE; also the one-block working set of
// CKPT_FULL), for this layout's scheme.
static void carve_layer(Carve *cv, LayerActs *la, const Model *mdl) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    size_t N = (size_t)mdl->N, dr = L->d_res;
    int cola = c->linear == LINEAR_COLA;
    memset(la, 0, sizeof *la);
    la->x = carve(cv, N * dr);
    if (L->scheme == TP_BTP) {
        Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
        la->pqkv = carve(cv, bq.size); la->zqkv = cola ? carve(cv, bq.size) : la->pqkv;
        la->q = carve(cv, N * L->dq); la->k = carve(cv, N * L->dkv); la->v = carve(cv, N * L->dkv);
        la->att = carve(cv, (size_t)mdl->B * L->H * mdl->T * mdl->T);
        la->y = carve(cv, N * L->dq);
        la->po = carve(cv, bo.size); la->zo = cola ? carve(cv, bo.size) : la->po;
        la->x_mid = carve(cv, N * dr);
        la->pgu = carve(cv, bg.size); la->zgu = cola ? carve(cv, bg.size) : la->pgu;
        la->g = carve(cv, N * L->dff); la->u = carve(cv, N * L->dff); la->gu = carve(cv, N * L->dff);
        la->pd = carve(cv, bd.size); la->zd = cola ? carve(cv, bd.size) : la->pd;
        return;
    }
    la->a = carve(cv, N * dr); la->rstd1 = carve(cv, N);
    la->lq = carve_lowrank(cv, c, N, L->ra);
    la->lk = carve_lowrank(cv, c, N, L->ra);
    la->lv = carve_lowrank(cv, c, N, L->ra);
    la->q = carve(cv, N * L->dq); la->k = carve(cv, N * L->dkv); la->v = carve(cv, N * L->dkv);
    la->att = carve(cv, (size_t)mdl->B * L->H * mdl->T * mdl->T);
    la->y = carve(cv, N * L->dq);
    la->lo = carve_lowrank(cv, c, N, L->ra);
    la->x_mid = carve(cv, N * dr);
    la->m = carve(cv, N * dr); la->rstd2 = carve(cv, N);
    la->lg = carve_lowrank(cv, c, N, L->rm);
    la->lu = carve_lowrank(cv, c, N, L->rm);
    la->g = carve(cv, N * L->dff); la->u = carve(cv, N * L->dff); la->gu = carve(cv, N * L->dff);
    la->ld = carve_lowrank(cv, c, N, L->rm);
}

// CKPT_LOWRANK working set, shared by every layer and slot: σ(P_o), σ(P_d) (cola), and
// one region holding either chunk 1's interior (σ(P_qkv), q, k, v, att, y) or chunk 3's
// (σ(P_gu), g, u, gu) — never alive at once, forward or backward (docs/boost.md).
static void carve_lowrank_work(Carve *cv, LayerActs *w, const Model *mdl) {
    const Layout *L = &mdl->lay;
    size_t N = (size_t)mdl->N;
    int cola = mdl->cfg.linear == LINEAR_COLA;
    memset(w, 0, sizeof *w);
    if (cola) { w->zo = carve(cv, bn_o(mdl).size); w->zd = carve(cv, bn_down(mdl).size); }
    size_t start = cv->off;
    if (cola) w->zqkv = carve(cv, bn_qkv(mdl).size);
    w->q = carve(cv, N * L->dq); w->k = carve(cv, N * L->dkv); w->v = carve(cv, N * L->dkv);
    w->att = carve(cv, (size_t)mdl->B * L->H * mdl->T * mdl->T);
    w->y = carve(cv, N * L->dq);
    size_t attn_end = cv->off;
    cv->off = start;
    if (cola) w->zgu = carve(cv, bn_gu(mdl).size);
    w->g = carve(cv, N * L->dff); w->u = carve(cv, N * L->dff); w->gu = carve(cv, N * L->dff);
    if (cv->off < attn_end) cv->off = attn_end;
}

// One micro-batch slot: what each layer keeps under mdl->ckpt (the rest of its LayerActs
// points into mdl->work), the stage output, and on the last stage the head's buffers.
static void carve_acts(Carve *cv, Acts *A, const Model *mdl) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    size_t N = (size_t)mdl->N, dr = L->d_res, d = c->d_model;
    A->inputs = (int32_t *)carve(cv, N);     // int32 ids live in the float family (same size)
    A->targets = (int32_t *)carve(cv, N);
    for (int l = 0; l < L->layer_end - L->layer_begin; l++) {
        LayerActs la;
        if (mdl->ckpt == CKPT_NONE) {
            carve_layer(cv, &la, mdl);
        } else if (mdl->ckpt == CKPT_FULL) {         // the block input only
            la = mdl->work;
            la.x = carve(cv, N * dr);
        } else {                                     // CKPT_LOWRANK: 2 residual slices + 4 bottlenecks
            la = mdl->work;
            la.x = carve(cv, N * dr);
            la.pqkv = carve(cv, bn_qkv(mdl).size);
            la.po = carve(cv, bn_o(mdl).size);
            la.x_mid = carve(cv, N * dr);
            la.pgu = carve(cv, bn_gu(mdl).size);
            la.pd = carve(cv, bn_down(mdl).size);
            if (c->linear != LINEAR_COLA) { la.zqkv = la.pqkv; la.zo = la.po; la.zgu = la.pgu; la.zd = la.pd; }
        }
        A->layers[l] = la;
    }
    A->x_final = carve(cv, N * dr);
    if (L->last_stage) {
        A->x_full = L->scheme == TP_BTP && L->tp > 1 ? carve(cv, N * d) : A->x_final;
        A->xf = carve(cv, N * d); A->rstdf = carve(cv, N);
        A->logits = carve(cv, N * (size_t)L->V);
        A->losses = carve(cv, N);
    }
}

// The whole activation family: the shared working set, then the slots.
static void carve_all(Carve *cv, Model *mdl) {
    if (mdl->ckpt == CKPT_FULL) carve_layer(cv, &mdl->work, mdl);
    else if (mdl->ckpt == CKPT_LOWRANK) carve_lowrank_work(cv, &mdl->work, mdl);
    for (int s = 0; s < mdl->n_slots; s++) carve_acts(cv, &mdl->slots[s], mdl);
}

static void carve_scratch(Carve *cv, Scratch *s, const ModelConfig *c, const Layout *L, int N) {
    size_t dr = L->d_res, d = c->d_model;
    size_t r = L->ra > L->rm ? L->ra : L->rm;
    memset(s, 0, sizeof *s);
    s->dx = carve(cv, N * dr); s->da = carve(cv, N * (dr > d ? dr : d));
    s->dq = carve(cv, N * L->dq); s->dk = carve(cv, N * L->dkv); s->dv = carve(cv, N * L->dkv);
    s->dy = carve(cv, N * L->dq);
    s->dg = carve(cv, N * L->dff); s->du = carve(cv, N * L->dff); s->dgu = carve(cv, N * L->dff);
    s->dz = carve(cv, N * r); s->dh = carve(cv, N * r);
    s->row_max = carve(cv, N);
    s->sumexp = (double *)carve(cv, 2 * (size_t)N);
    s->target_logit = (double *)carve(cv, 2 * (size_t)N);
    if (L->scheme == TP_BTP) {
        size_t gr = 3 * (size_t)L->ra > 2 * (size_t)L->rm ? 3 * (size_t)L->ra : 2 * (size_t)L->rm;
        s->xn = carve(cv, N * dr);
        s->acat = carve(cv, dr * gr); s->dacat = carve(cv, dr * gr);
        s->dzb = carve(cv, N * gr + N); s->dpb = carve(cv, N * gr + N);   // ≥ every btp_bn size
        s->dfull = carve(cv, N * d);
    }
}

void scratch_view(const Model *mdl, Scratch *s) {
    Carve cv = { .base = mdl->scratch, .off = 0 };
    carve_scratch(&cv, s, &mdl->cfg, &mdl->lay, mdl->N);
}

// ---------------------------------------------------------------------------------

void model_init(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed) {
    model_init_parallel(mdl, cfg, B, T, seed, comm_single(), NULL, 1);
}

void model_init_parallel(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed,
                         Comm *comm, const BoostConfig *boost, int n_slots) {
    memset(mdl, 0, sizeof *mdl);
    if (boost) mdl->boost = *boost;
    TPScheme scheme = mdl->boost.btp ? TP_BTP : TP_MEGATRON;
    mdl->cfg = *cfg; mdl->B = B; mdl->T = T; mdl->N = B * T;
    mdl->comm = comm;
    if (comm->n_layers < cfg->n_layers) comm_set_n_layers(comm, cfg->n_layers);
    CHECK(T <= cfg->seq_len, "micro-batch length %d exceeds model.seq_len %d", T, cfg->seq_len);
    char msg[512];
    if (!layout_make(&mdl->lay, cfg, scheme, comm->tp, comm->tp_rank, comm->pp, comm->pp_rank, msg, sizeof msg))
        die_input("impossible layout: %s", msg);
    const Layout *L = &mdl->lay;
    param_table_build(&mdl->table, cfg, L);
    size_t np = mdl->table.n_params;
    // Accounting mode (ops_dry_run): sizes and views only; every buffer stays NULL.
    int dry = ops_dry_run;
    if (!dry) {
        mdl->params = xaligned_alloc(np * sizeof(float));
        mdl->grads = xaligned_alloc(np * sizeof(float));
        mdl->m = xaligned_alloc(np * sizeof(float));
        mdl->v = xaligned_alloc(np * sizeof(float));
    }
    mdl->bytes_params = mdl->bytes_grads = np * sizeof(float);
    mdl->bytes_optim = 2 * np * sizeof(float);
    mdl->n_alloc = mdl->opt_len = np;
    mdl->opt_offset = 0;
    int n_local = L->layer_end - L->layer_begin;
    mdl->w.layers = xcalloc((size_t)n_local, sizeof(LayerW));
    mdl->dw.layers = xcalloc((size_t)n_local, sizeof(LayerW));
    model_bind(&mdl->w, cfg, L, &mdl->table, mdl->params);
    model_bind(&mdl->dw, cfg, L, &mdl->table, mdl->grads);

    // Checkpointing in effect: full_recompute (any scheme) wins over lowrank_ckpt, which
    // needs BTP's bottlenecks and otherwise falls back to keeping everything.
    mdl->ckpt = mdl->boost.full_recompute ? CKPT_FULL
              : mdl->boost.lowrank_ckpt && scheme == TP_BTP ? CKPT_LOWRANK : CKPT_NONE;
    mdl->fwd_phase = PHASE_FORWARD;
    mdl->n_slots = n_slots < 1 ? 1 : n_slots;
    mdl->slots = xcalloc((size_t)mdl->n_slots, sizeof(Acts));
    for (int s = 0; s < mdl->n_slots; s++)
        mdl->slots[s].layers = xcalloc((size_t)(n_local ? n_local : 1), sizeof(LayerActs));
    Carve cv = {0};
    carve_all(&cv, mdl);                        // count
    mdl->act_floats = cv.off;
    mdl->act_memory = dry ? NULL : xaligned_alloc(cv.off * sizeof(float));
    cv = (Carve){ .base = mdl->act_memory, .off = 0 };
    carve_all(&cv, mdl);                        // assign
    mdl->acts = mdl->slots[0];

    Scratch s; cv = (Carve){0};
    carve_scratch(&cv, &s, cfg, L, mdl->N);
    mdl->scratch_floats = cv.off;
    mdl->scratch = dry ? NULL : xaligned_alloc(cv.off * sizeof(float));
    mdl->bytes_acts = (mdl->act_floats + mdl->scratch_floats) * sizeof(float);
    if (!dry) model_init_weights(mdl, seed);
}

void model_shard_optimizer(Model *mdl, int parts, int index) {
    if (parts <= 1) return;
    size_t np = mdl->table.n_params;
    size_t shard = ((np + (size_t)parts - 1) / (size_t)parts + 15) / 16 * 16;
    size_t n_alloc = shard * (size_t)parts;
    // params/grads grow to parts x shard (the padding stays zero) so that the
    // reduce-scatter and all-gather move equal chunks.
    float *p = xaligned_alloc(n_alloc * sizeof(float)), *g = xaligned_alloc(n_alloc * sizeof(float));
    memcpy(p, mdl->params, np * sizeof(float));
    memcpy(g, mdl->grads, np * sizeof(float));
    free(mdl->params); free(mdl->grads); free(mdl->m); free(mdl->v);
    mdl->params = p; mdl->grads = g;
    mdl->m = xaligned_alloc(shard * sizeof(float));
    mdl->v = xaligned_alloc(shard * sizeof(float));
    mdl->n_alloc = n_alloc;
    mdl->opt_offset = (size_t)index * shard;
    mdl->opt_len = shard;
    mdl->bytes_params = mdl->bytes_grads = n_alloc * sizeof(float);
    mdl->bytes_optim = 2 * shard * sizeof(float);
    model_bind(&mdl->w, &mdl->cfg, &mdl->lay, &mdl->table, mdl->params);
    model_bind(&mdl->dw, &mdl->cfg, &mdl->lay, &mdl->table, mdl->grads);
}

void model_free(Model *mdl) {
    free(mdl->params); free(mdl->grads); free(mdl->m); free(mdl->v);
    free(mdl->w.layers); free(mdl->dw.layers);
    for (int s = 0; s < mdl->n_slots; s++) free(mdl->slots[s].layers);
    free(mdl->slots);
    free(mdl->act_memory); free(mdl->scratch);
    param_table_free(&mdl->table);
    memset(mdl, 0, sizeof *mdl);
}

void model_init_weights(Model *mdl, uint64_t seed) { param_table_init_weights(&mdl->table, mdl->params, seed); }

void model_zero_grads(Model *mdl) { zero_f(mdl->grads, mdl->table.n_params); }

// ---------------------------------------------------------------------------------
void linear_forward(const ModelConfig *c, float *y, LowRankActs *la, const float *x,
                    const LinearW *w, int N, int din, int dout, int r) {
    if (!is_lowrank(c)) { matmul_forward(y, x, w->W, N, din, dout, 0); return; }
    matmul_forward(la->h, x, w->A, N, din, r, 0);                 // h = x@A   [N,r]
    if (c->linear == LINEAR_COLA) silu_forward(la->z, la->h, (size_t)N * r);  // z = σ(h)
    matmul_forward(y, la->z, w->B, N, r, dout, 0);                // y = z@B   [N,dout]
}

void linear_backward(const ModelConfig *c, float *dx, LinearW *dw, const float *dy,
                     const float *x, const LowRankActs *la, const LinearW *w,
                     int N, int din, int dout, int r, float *dz, float *dh) {
    if (!is_lowrank(c)) { matmul_backward(dx, dw->W, dy, x, w->W, N, din, dout); return; }
    size_t nr = (size_t)N * r;
    zero_f(dz, nr);
    matmul_backward(dz, dw->B, dy, la->z, w->B, N, r, dout);     // dz = dy@B^T, dB += z^T dy
    const float *dpre = dz;
    if (c->linear == LINEAR_COLA) {
        zero_f(dh, nr);
        silu_backward(dh, dz, la->h, nr);                          // dh = dz * σ'(h)
        dpre = dh;
    }
    matmul_backward(dx, dw->A, dpre, x, w->A, N, din, r);         // dx += dh@A^T, dA += x^T dh
}

// ---------------------------------------------------------------------------------
// Embedding (vocab-parallel over TP): out[N,d] = E[tokens]. Each rank looks up the rows
// it holds (zeros elsewhere) and the TP all-reduce assembles the full vectors.
static void embed_forward(Model *mdl, float *out, const int32_t *tokens) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model;
    if (L->tp == 1) { embedding_forward(out, tokens, mdl->w.embed, N, d); return; }
    embedding_forward_shard(out, tokens, mdl->w.embed, N, d, L->v0, L->V);
    comm_all_reduce(mdl->comm, GROUP_TP, out, (size_t)N * d, PHASE_FORWARD, -1);
}
// dE[local rows] += dout (dout [N,d] is replicated on the TP ranks: no collective).
static void embed_backward(Model *mdl, const float *dout, const int32_t *tokens) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model;
    if (L->tp == 1) { embedding_backward(mdl->dw.embed, dout, tokens, N, d); return; }
    embedding_backward_shard(mdl->dw.embed, dout, tokens, N, d, L->v0, L->V);
}

// LM head and loss (vocab-parallel over TP): logits_i = xf @ H_i [N, V/tp] with
// H = lm_head [d,V] (column block) or E^T (tied: E's row block). Returns the sum of
// token losses. Three small all-reduces per micro-batch when tp > 1 (Megatron):
// the row max, the sum of exponentials and the target logit.
static double head_loss_forward(Model *mdl, Acts *A) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model;
    if (mdl->w.lm_head) matmul_forward(A->logits, A->xf, mdl->w.lm_head, N, d, L->V, 0);
    else matmul_forward_wt(A->logits, A->xf, mdl->w.embed, N, d, L->V, 0);
    if (L->tp == 1)
        return crossentropy_forward_backward(NULL, A->losses, A->logits, A->targets, N, L->V, 0.0f);
    Scratch s; scratch_view(mdl, &s);
    xent_shard_max(s.row_max, A->logits, N, L->V);
    comm_all_reduce_max(mdl->comm, GROUP_TP, s.row_max, (size_t)N, PHASE_FORWARD, -1);
    xent_shard_sums(s.sumexp, s.target_logit, A->logits, s.row_max, A->targets, N, L->V, L->v0);
    comm_all_reduce_f64(mdl->comm, GROUP_TP, s.sumexp, (size_t)N, PHASE_FORWARD, -1);
    comm_all_reduce_f64(mdl->comm, GROUP_TP, s.target_logit, (size_t)N, PHASE_FORWARD, -1);
    double sum = 0;
    for (int n = 0; n < N && !ops_dry_run; n++) {
        double loss = log(s.sumexp[n]) + (double)s.row_max[n] - s.target_logit[n];
        A->losses[n] = (float)loss;
        sum += loss;
    }
    return sum;
}

// dlogits (in place of the logits) -> dxf[N,d] (+=) and the head's weight gradient.
// The head is column-parallel: its input gradient is a partial sum over the vocab
// shards, completed by the f-operator's backward all-reduce.
static void head_loss_backward(Model *mdl, Acts *A, float *dxf, float loss_scale) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model;
    if (L->tp == 1) {
        crossentropy_forward_backward(A->logits, A->losses, A->logits, A->targets, N, L->V, loss_scale);
    } else {
        Scratch s; scratch_view(mdl, &s);   // row_max/sumexp still hold the forward's values
        xent_shard_grad(A->logits, A->logits, s.row_max, s.sumexp, A->targets, N, L->V, L->v0, loss_scale);
    }
    if (mdl->w.lm_head) matmul_backward(dxf, mdl->dw.lm_head, A->logits, A->xf, mdl->w.lm_head, N, d, L->V);
    else matmul_backward_wt(dxf, mdl->dw.embed, A->logits, A->xf, mdl->w.embed, N, d, L->V);
    comm_all_reduce(mdl->comm, GROUP_TP, dxf, (size_t)N * d, PHASE_BACKWARD, -1);   // f backward
}

// ---------------------------------------------------------------------------------
float *model_stage_input(Model *mdl, int slot) { return mdl->slots[slot].layers[0].x; }
float *model_stage_output(Model *mdl, int slot) { return mdl->slots[slot].x_final; }
float *model_stage_grad(Model *mdl) { return mdl->scratch; /* Scratch.dx is carved first */ }

// The residual is column-sharded under BTP with tp > 1: the embedding's full [N,d] output
// is cut to this rank's d/tp columns, and the last block's slices are all-gathered before
// the (replicated) final norm.
static int btp_sharded(const Layout *L) { return L->scheme == TP_BTP && L->tp > 1; }
static void copy_cols(float *dst, int ldd, const float *src, int lds, int N, int cols) {
    for (int n = 0; n < N; n++) copy_f(dst + (size_t)n * ldd, src + (size_t)n * lds, (size_t)cols);
}

static void layer_forward(Model *mdl, LayerActs *la, int l, float *x_out) {
    if (mdl->lay.scheme == TP_BTP) btp_layer_forward(mdl, la, l, x_out);
    else megatron_layer_forward(mdl, la, l, x_out);
}
static void layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s) {
    if (mdl->lay.scheme == TP_BTP) btp_layer_backward(mdl, la, l, s);
    else megatron_layer_backward(mdl, la, l, s);
}

double model_stage_forward(Model *mdl, int slot, const int32_t *inputs, const int32_t *targets) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    Acts *A = &mdl->slots[slot];
    int N = mdl->N, d = c->d_model, dr = L->d_res, n_local = L->layer_end - L->layer_begin;
    if (!ops_dry_run) {
        memcpy(A->inputs, inputs, (size_t)N * sizeof(int32_t));
        memcpy(A->targets, targets, (size_t)N * sizeof(int32_t));
    }
    if (L->first_stage) {                                    // x = E[tokens]
        if (btp_sharded(L)) {
            Scratch s; scratch_view(mdl, &s);
            embed_forward(mdl, s.dfull, inputs);             // [N,d] (vocab-parallel + AR)
            copy_cols(A->layers[0].x, dr, s.dfull + (size_t)L->tp_rank * dr, d, N, dr);
        } else {
            embed_forward(mdl, A->layers[0].x, inputs);
        }
    }
    for (int l = 0; l < n_local; l++) {
        float *x_out = l + 1 < n_local ? A->layers[l + 1].x : A->x_final;
        layer_forward(mdl, &A->layers[l], l, x_out);
    }
    if (!L->last_stage) return 0.0;
    if (btp_sharded(L))   // the hidden slices -> [N,d] for the replicated final norm
        comm_all_gather_cols(mdl->comm, GROUP_TP, A->x_final, A->x_full, (size_t)N, (size_t)dr, PHASE_FORWARD, -1);
    rmsnorm_forward(A->xf, A->rstdf, A->x_full, mdl->w.final_norm, N, d, c->norm_eps);
    return head_loss_forward(mdl, A);
}

void model_stage_backward(Model *mdl, int slot, float loss_scale) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    Acts *A = &mdl->slots[slot];
    int N = mdl->N, d = c->d_model, dr = L->d_res, n_local = L->layer_end - L->layer_begin;
    Scratch s; scratch_view(mdl, &s);
    if (L->last_stage) {
        // loss -> logits (in place) -> final norm -> residual gradient s.dx
        zero_f(s.da, (size_t)N * d);
        head_loss_backward(mdl, A, s.da, loss_scale);
        if (btp_sharded(L)) {   // d(x_full) is replicated: keep this rank's column slice
            zero_f(s.dfull, (size_t)N * d);
            rmsnorm_backward(s.dfull, mdl->dw.final_norm, s.da, A->x_full, mdl->w.final_norm, A->rstdf, N, d);
            copy_cols(s.dx, dr, s.dfull + (size_t)L->tp_rank * dr, d, N, dr);
        } else {
            zero_f(s.dx, (size_t)N * dr);
            rmsnorm_backward(s.dx, mdl->dw.final_norm, s.da, A->x_final, mdl->w.final_norm, A->rstdf, N, d);
        }
    }
    for (int l = n_local - 1; l >= 0; l--) {
        LayerActs *la = &A->layers[l];
        if (mdl->ckpt == CKPT_FULL) {
            // Replay the block's forward from its kept input into the shared one-block
            // working set (its output goes to the working set's own x, unused otherwise);
            // its collectives are counted under PHASE_RECOMPUTE.
            mdl->fwd_phase = PHASE_RECOMPUTE;
            layer_forward(mdl, la, l, mdl->work.x);
            mdl->fwd_phase = PHASE_FORWARD;
        }
        layer_backward(mdl, la, l, &s);
    }
    if (L->first_stage) {
        if (btp_sharded(L)) {   // the slice gradient -> [N,d], then the local vocab rows
            comm_all_gather_cols(mdl->comm, GROUP_TP, s.dx, s.dfull, (size_t)N, (size_t)dr, PHASE_BACKWARD, -1);
            embed_backward(mdl, s.dfull, A->inputs);
        } else {
            embed_backward(mdl, s.dx, A->inputs);
        }
    }
}

double model_forward(Model *mdl, const int32_t *inputs, const int32_t *targets) {
    return model_stage_forward(mdl, 0, inputs, targets) / mdl->N;
}

void model_backward(Model *mdl, float loss_scale) { model_stage_backward(mdl, 0, loss_scale); }
