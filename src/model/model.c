// model.c — allocation on a back end, and the stage drivers that run a pipeline stage's
// blocks forward and backward for one micro-batch.
//
// Block (paper notes §1), x the residual stream [N,d], N = B*T tokens:
//   a = RMSNorm(x)                      q,k,v = lin(a); RoPE(q,k)
//   y = causal_attention(q,k,v)         x_mid = x + lin_o(y)
//   m = RMSNorm(x_mid)                  g,u = lin_gate(m), lin_up(m)
//   gu = (SiLU(g) or g) * u             x_out = x_mid + lin_down(gu)
// lin(x) is x@W (dense), σ(x@A)@B (cola, σ = SiLU), (x@A)@B (svd) or, with LaX, σ(LN(x@A +
// g(z_prev)))@B where z_prev is the same projection's latent in the previous layer (kind_lax.c,
// docs/lax.md: the latents flow layer to layer and stage to stage). What differs between the
// kinds is behind kind.h; this file and the drivers never test which kind they run. The blocks of each
// tensor-parallel scheme live in layer_<scheme>.c with their collectives in plain sight:
// layer_megatron.c (FullRank-TP / Vanilla-TP), layer_btp.c (bottleneck-aware TP). The
// embedding, final norm, head and loss are in head.c. Activation checkpointing (mdl->ckpt,
// docs/boost.md) decides what each layer keeps (carve_acts) and, for CKPT_FULL, replays
// each block's forward before its backward (model_stage_backward).
#include <math.h>
#include "drivers.h"
#include "../core/check.h"

// ---------------------------------------------------------------------------------
// Carving: one buffer per family, two passes (count with base == NULL, then assign).
static LowRankActs carve_lowrank(Carve *cv, const Model *mdl, int r) {
    LowRankActs a = {0};
    if (!mdl->kind->lowrank) return a;
    DType t = mdl->bk->dtype;
    a.h = carve(cv, (size_t)mdl->N * r, t);
    a.z = mdl->kind->own_z(&mdl->cfg) ? carve(cv, (size_t)mdl->N * r, t) : a.h;  // svd: z aliases h
    return a;
}
static float *carve_lse(Carve *cv, const Model *mdl) {
    return carve(cv, (size_t)mdl->B * mdl->lay.H * mdl->T, DT_F32);
}
// One layer's activations but its input x, everything kept (CKPT_NONE; also the one-block
// working set of CKPT_FULL), for this layout's scheme. CKPT_SELECTIVE: the attention core's
// output y and lse are the working set's (mdl->work), replayed in backward.
static void carve_layer(Carve *cv, LayerActs *la, const Model *mdl) {
    const Layout *L = &mdl->lay;
    DType t = mdl->bk->dtype;
    size_t N = (size_t)mdl->N, dr = L->d_res, Nr = (size_t)mdl->N_res;   // Nr: the residual's tokens here
    int keep_core = mdl->ckpt != CKPT_SELECTIVE;
    int cola = mdl->kind->own_z(&mdl->cfg);   // z has its own buffer (cola; LaX but svd without a norm)
    int latent = mdl->kind->latent;
    int ra = latent ? L->lra : L->ra, rm = latent ? L->lrm : L->rm;   // widths of h, z (a latent's)
    memset(la, 0, sizeof *la);
    if (L->scheme == TP_BTP && L->sp) {   // p: this rank's tokens; z (every token) always its own
        Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
        int rows = mdl->N / L->tp;
        la->pqkv = carve(cv, bn_rows(&bq, rows).size, t); la->zqkv = carve(cv, bq.size, t);
        la->stat_qkv = at(mdl, la->zqkv, bq.stat);
        la->q = carve(cv, N * L->dq, t); la->k = carve(cv, N * L->dkv, t); la->v = carve(cv, N * L->dkv, t);
        la->lse = keep_core ? carve_lse(cv, mdl) : mdl->work.lse;
        la->y = keep_core ? carve(cv, N * L->dq, t) : mdl->work.y;
        la->po = carve(cv, bn_rows(&bo, rows).size, t); la->zo = carve(cv, bo.size, t);
        la->x_mid = carve(cv, N * dr, t);
        la->pgu = carve(cv, bn_rows(&bg, rows).size, t); la->zgu = carve(cv, bg.size, t);
        la->stat_gu = at(mdl, la->zgu, bg.stat);
        la->g = carve(cv, N * L->dff, t); la->u = carve(cv, N * L->dff, t); la->gu = carve(cv, N * L->dff, t);
        la->pd = carve(cv, bn_rows(&bd, rows).size, t); la->zd = carve(cv, bd.size, t);
        return;
    }
    if (L->scheme == TP_BTP) {
        Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
        la->pqkv = carve(cv, bq.size, t); la->zqkv = cola ? carve(cv, bq.size, t) : la->pqkv;
        la->q = carve(cv, N * L->dq, t); la->k = carve(cv, N * L->dkv, t); la->v = carve(cv, N * L->dkv, t);
        la->lse = keep_core ? carve_lse(cv, mdl) : mdl->work.lse;
        la->y = keep_core ? carve(cv, N * L->dq, t) : mdl->work.y;
        la->po = carve(cv, bo.size, t); la->zo = cola ? carve(cv, bo.size, t) : la->po;
        la->x_mid = carve(cv, N * dr, t);
        la->pgu = carve(cv, bg.size, t); la->zgu = cola ? carve(cv, bg.size, t) : la->pgu;
        la->g = carve(cv, N * L->dff, t); la->u = carve(cv, N * L->dff, t); la->gu = carve(cv, N * L->dff, t);
        la->pd = carve(cv, bd.size, t); la->zd = cola ? carve(cv, bd.size, t) : la->pd;
        return;
    }
    la->a = carve(cv, Nr * dr, t); la->rstd1 = carve(cv, Nr, DT_F32);
    la->lq = carve_lowrank(cv, mdl, ra);
    la->lk = carve_lowrank(cv, mdl, ra);
    la->lv = carve_lowrank(cv, mdl, ra);
    la->q = carve(cv, N * L->dq, t); la->k = carve(cv, N * L->dkv, t); la->v = carve(cv, N * L->dkv, t);
    la->lse = keep_core ? carve_lse(cv, mdl) : mdl->work.lse;
    la->y = keep_core ? carve(cv, N * L->dq, t) : mdl->work.y;
    la->lo = carve_lowrank(cv, mdl, ra);
    la->x_mid = carve(cv, Nr * dr, t);
    la->m = carve(cv, Nr * dr, t); la->rstd2 = carve(cv, Nr, DT_F32);
    la->lg = carve_lowrank(cv, mdl, rm);
    la->lu = carve_lowrank(cv, mdl, rm);
    la->g = carve(cv, N * L->dff, t); la->u = carve(cv, N * L->dff, t); la->gu = carve(cv, N * L->dff, t);
    la->ld = carve_lowrank(cv, mdl, rm);
}

// CKPT_LOWRANK working set, shared by every layer and slot: σ(P_o), σ(P_d) (cola), and
// one region holding either chunk 1's interior (σ(P_qkv), q, k, v, lse, y) or chunk 3's
// (σ(P_gu), g, u, gu) — never alive at once, forward or backward (docs/boost.md). LaX: also
// the forward latent buffer zin [N, 4·r_a + 3·r_m], which each layer reads (its Z_prev) before
// it writes its own Z there (docs/lax.md §6.4).
static void carve_lowrank_work(Carve *cv, LayerActs *w, const Model *mdl) {
    const Layout *L = &mdl->lay;
    DType t = mdl->bk->dtype;
    size_t N = (size_t)mdl->N;
    int cola = mdl->kind->own_z(&mdl->cfg) || L->sp;   // (sequence parallelism: z of every token always)
    memset(w, 0, sizeof *w);
    if (mdl->kind->latent) w->zin = carve(cv, lax_elems(mdl), t);
    if (cola) { w->zo = carve(cv, bn_o(mdl).size, t); w->zd = carve(cv, bn_down(mdl).size, t); }
    size_t start = cv->off;
    if (cola) w->zqkv = carve(cv, bn_qkv(mdl).size, t);
    w->q = carve(cv, N * L->dq, t); w->k = carve(cv, N * L->dkv, t); w->v = carve(cv, N * L->dkv, t);
    w->lse = carve_lse(cv, mdl);
    w->y = carve(cv, N * L->dq, t);
    size_t attn_end = cv->off;
    cv->off = start;
    if (cola) w->zgu = carve(cv, bn_gu(mdl).size, t);
    w->g = carve(cv, N * L->dff, t); w->u = carve(cv, N * L->dff, t); w->gu = carve(cv, N * L->dff, t);
    if (cv->off < attn_end) cv->off = attn_end;
}

// One micro-batch slot: what each layer keeps under mdl->ckpt (the rest of its LayerActs
// points into mdl->work), the stage output, and on the last stage the head's buffers.
static void carve_acts(Carve *cv, Acts *A, const Model *mdl) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    DType t = mdl->bk->dtype;
    size_t N = (size_t)mdl->N, dr = L->d_res, d = c->d_model, Nr = (size_t)mdl->N_res;
    A->inputs = carve(cv, N, DT_I32);
    A->targets = carve(cv, N, DT_I32);
    // LaX: a stage's input and output messages carry the latents right after the residual
    size_t nlat = mdl->kind->latent && L->pp > 1 ? lax_elems(mdl) : 0;
    A->lat_in = A->lat_out = NULL;
    for (int l = 0; l < L->layer_end - L->layer_begin; l++) {
        LayerActs la;
        int gl = L->layer_begin + l;
        void *x = carve(cv, Nr * dr + (l == 0 && !L->first_stage ? nlat : 0), t);
        if (l == 0 && nlat && !L->first_stage) A->lat_in = at(mdl, x, Nr * dr);
        if (mdl->ckpt == CKPT_NONE || mdl->ckpt == CKPT_SELECTIVE) {
            carve_layer(cv, &la, mdl);
        } else if (mdl->ckpt == CKPT_FULL) {         // the block input only (LaX: and its incoming latents)
            la = mdl->work;
            la.zin = !mdl->kind->latent || gl == 0 ? NULL : l == 0 ? A->lat_in : carve(cv, lax_elems(mdl), t);
        } else {                                     // CKPT_LOWRANK: 2 residual slices + 4 bottlenecks
            la = mdl->work;                          // (sequence parallelism: this rank's tokens of them,
            la.zin = NULL;                           //  and the two norms' full-row statistics)
            int rows = L->sp ? mdl->N / L->tp : mdl->N;
            Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
            la.pqkv = carve(cv, bn_rows(&bq, rows).size, t);
            la.po = carve(cv, bn_rows(&bo, rows).size, t);
            la.x_mid = carve(cv, N * dr, t);
            la.pgu = carve(cv, bn_rows(&bg, rows).size, t);
            la.pd = carve(cv, bn_rows(&bd, rows).size, t);
            if (L->sp) { la.stat_qkv = carve(cv, N, t); la.stat_gu = carve(cv, N, t); }
            else if (!mdl->kind->own_z(c)) { la.zqkv = la.pqkv; la.zo = la.po; la.zgu = la.pgu; la.zd = la.pd; }
        }
        la.x = x;
        A->layers[l] = la;
    }
    A->x_final = carve(cv, Nr * dr + (!L->last_stage ? nlat : 0), t);
    if (nlat && !L->last_stage) A->lat_out = at(mdl, A->x_final, Nr * dr);
    if (L->last_stage) {
        A->x_full = L->scheme == TP_BTP && L->tp > 1 ? carve(cv, N * d, t) : A->x_final;
        A->xf = carve(cv, Nr * d, t); A->rstdf = carve(cv, Nr, DT_F32);
        A->logits = carve(cv, N * (size_t)L->V, t);
        A->losses = carve(cv, N, DT_F32);
    }
}

// The whole activation family: the shared working set, then the slots.
static void carve_all(Carve *cv, Model *mdl) {
    if (mdl->ckpt == CKPT_FULL) {
        carve_layer(cv, &mdl->work, mdl);
        mdl->work.x = carve(cv, (size_t)mdl->N_res * mdl->lay.d_res, mdl->bk->dtype);   // the replay's output
    }
    else if (mdl->ckpt == CKPT_LOWRANK) carve_lowrank_work(cv, &mdl->work, mdl);
    else if (mdl->ckpt == CKPT_SELECTIVE) {   // one layer's attention output and lse, replayed
        memset(&mdl->work, 0, sizeof mdl->work);
        mdl->work.lse = carve_lse(cv, mdl);
        mdl->work.y = carve(cv, (size_t)mdl->N * mdl->lay.dq, mdl->bk->dtype);
    }
    for (int s = 0; s < mdl->n_slots; s++) carve_acts(cv, &mdl->slots[s], mdl);
}

// ---------------------------------------------------------------------------------

size_t model_family_len(size_t n_params, int parts) {
    if (parts <= 1) return n_params;
    size_t shard = ((n_params + (size_t)parts - 1) / (size_t)parts + 15) / 16 * 16;
    return shard * (size_t)parts;
}

void model_init(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed) {
    model_init_parallel(mdl, cfg, B, T, seed, comm_single(), NULL, 1, NULL, 1);
}

void model_init_parallel(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed,
                         Comm *comm, const BoostConfig *boost, int n_slots, Backend *bk, int family_parts) {
    memset(mdl, 0, sizeof *mdl);
    if (boost) mdl->boost = *boost;
    mdl->bk = bk ? bk : backend_default();
    DType t = mdl->bk->dtype;
    mdl->comm_dtype = t == DT_BF16 ? DTYPE_BF16 : DTYPE_F32;
    TPScheme scheme = mdl->boost.btp ? TP_BTP : TP_MEGATRON;
    CHECK(B >= 1 && T >= 1 && (int64_t)B * T <= INT32_MAX, "micro-batch %d x %d tokens out of range", B, T);
    mdl->cfg = *cfg; mdl->B = B; mdl->T = T; mdl->N = B * T;
    mdl->kind = kind_of(cfg);
    mdl->comm = comm;
    if (comm->n_layers < cfg->n_layers) comm_set_n_layers(comm, cfg->n_layers);
    CHECK(T <= cfg->seq_len, "micro-batch length %d exceeds model.seq_len %d", T, cfg->seq_len);
    char msg[512];
    if (!layout_make(&mdl->lay, cfg, scheme, comm->tp, comm->tp_rank, comm->pp, comm->pp_rank, msg, sizeof msg))
        die_input("impossible layout: %s", msg);
    // Sequence parallelism cuts the micro-batch's tokens, not a tensor of the parameter table
    // (the layout of the weights is the same with it and without).
    // (Under BTP the residual stays a column slice of every token: the bottlenecks are cut.)
    mdl->lay.sp = mdl->boost.sequence_parallel && comm->tp > 1;
    if (mdl->lay.sp && mdl->N % comm->tp)
        die_input("impossible layout: sequence parallelism needs the micro-batch's %d x %d tokens divisible by "
                  "parallel.tp = %d (model.seq_len a multiple of tp)", B, T, comm->tp);
    if (mdl->lay.sp && scheme == TP_BTP && mdl->kind->latent)
        die_input("impossible layout: BTP with sequence parallelism does not support LaX (docs/boost.md §8)");
    mdl->N_res = seq_residual(&mdl->lay) ? mdl->N / comm->tp : mdl->N;
    const Layout *L = &mdl->lay;
    param_table_build(&mdl->table, cfg, L);
    // Parameters and gradients: one family each, padded to equal ZeRO-1 slices (the padding
    // stays zero) so that the reduce-scatter and all-gather move equal chunks.
    mdl->n_alloc = model_family_len(mdl->table.n_params, family_parts);
    mdl->params = bk_alloc(mdl->bk, mdl->n_alloc, t, MEM_PARAMS);
    mdl->grads = bk_alloc(mdl->bk, mdl->n_alloc, t, MEM_GRADS);
    mdl->grad_acc = 1;                          // (zeroed: adding to them is storing)
    int n_local = L->layer_end - L->layer_begin;
    mdl->w.layers = xcalloc((size_t)(n_local ? n_local : 1), sizeof(LayerW));
    mdl->dw.layers = xcalloc((size_t)(n_local ? n_local : 1), sizeof(LayerW));
    model_bind(&mdl->w, cfg, L, &mdl->table, mdl->params, t);
    model_bind(&mdl->dw, cfg, L, &mdl->table, mdl->grads, t);

    // Checkpointing in effect: full_recompute (any scheme) wins over lowrank_ckpt, which
    // needs BTP's bottlenecks (config_finalize refuses lowrank_ckpt without btp).
    mdl->ckpt = mdl->boost.full_recompute ? CKPT_FULL
              : mdl->boost.lowrank_ckpt && scheme == TP_BTP ? CKPT_LOWRANK
              : mdl->boost.selective_recompute ? CKPT_SELECTIVE : CKPT_NONE;
    mdl->fwd_phase = PHASE_FORWARD;
    mdl->n_slots = n_slots < 1 ? 1 : n_slots;
    mdl->slots = xcalloc((size_t)mdl->n_slots, sizeof(Acts));
    for (int s = 0; s < mdl->n_slots; s++)
        mdl->slots[s].layers = xcalloc((size_t)(n_local ? n_local : 1), sizeof(LayerActs));
    Carve cv = {0};
    carve_all(&cv, mdl);                        // count
    mdl->act_bytes = cv.off;
    mdl->act_memory = bk_alloc(mdl->bk, cv.off / 4, DT_F32, MEM_ACTS);   // bytes, a multiple of 64
    cv = (Carve){ .base = mdl->act_memory, .off = 0 };
    carve_all(&cv, mdl);                        // assign
    mdl->acts = mdl->slots[0];

    Scratch s; cv = (Carve){0};
    mdl->scratch_bytes = scratch_carve(&cv, &s, mdl);
    mdl->scratch = bk_alloc(mdl->bk, mdl->scratch_bytes / 4, DT_F32, MEM_WORK);
    if (L->last_stage) mdl->loss = bk_alloc(mdl->bk, 1, DT_F64, MEM_WORK);
    if (L->first_stage && !cfg->tie_embeddings && comm->dp == 1 && !mdl->bk->dry && !mdl->bk->device_memory)
        mdl->embed_live = xcalloc((size_t)L->V + 1, 1);   // (model.h; the tokens are read on the host)
    if (!mdl->bk->dry) model_init_weights(mdl, seed);
}

void model_free(Model *mdl) {
    DType t = mdl->bk->dtype;
    bk_free(mdl->bk, mdl->params, mdl->n_alloc, t, MEM_PARAMS);
    bk_free(mdl->bk, mdl->grads, mdl->n_alloc, t, MEM_GRADS);
    bk_free(mdl->bk, mdl->act_memory, mdl->act_bytes / 4, DT_F32, MEM_ACTS);
    bk_free(mdl->bk, mdl->scratch, mdl->scratch_bytes / 4, DT_F32, MEM_WORK);
    if (mdl->lay.last_stage) bk_free(mdl->bk, mdl->loss, 1, DT_F64, MEM_WORK);
    free(mdl->w.layers); free(mdl->dw.layers);
    free(mdl->embed_live);
    for (int s = 0; s < mdl->n_slots; s++) free(mdl->slots[s].layers);
    free(mdl->slots);
    param_table_free(&mdl->table);
    memset(mdl, 0, sizeof *mdl);
}

void model_set_params(Model *mdl, const float *host) {
    size_t n = mdl->table.n_params;
    Backend *bk = mdl->bk;
    if (bk->dtype == DT_F32) { op_from_host(bk, mdl->params, host, n, DT_F32); return; }
    // another compute dtype: upload fp32 to a temporary, cast into the parameters
    float *f = bk_alloc(bk, n, DT_F32, MEM_WORK);
    op_from_host(bk, f, host, n, DT_F32);
    op_cast(bk, mdl->params, bk->dtype, f, DT_F32, n);
    bk_free(bk, f, n, DT_F32, MEM_WORK);
}

static void get_family(const Model *mdl, const void *fam, float *host) {
    size_t n = mdl->table.n_params;
    Backend *bk = mdl->bk;
    if (bk->dtype == DT_F32) { op_to_host(bk, host, fam, n, DT_F32); return; }
    float *f = bk_alloc(bk, n, DT_F32, MEM_WORK);
    op_cast(bk, f, DT_F32, fam, bk->dtype, n);
    op_to_host(bk, host, f, n, DT_F32);
    bk_free(bk, f, n, DT_F32, MEM_WORK);
}
void model_get_params(const Model *mdl, float *host) { get_family(mdl, mdl->params, host); }
void model_get_grads(const Model *mdl, float *host) { get_family(mdl, mdl->grads, host); }

void model_init_weights(Model *mdl, uint64_t seed) {
    float *host = xaligned_alloc(mdl->table.n_params * sizeof(float) + 64);
    param_table_init_weights(&mdl->table, host, seed);
    model_set_params(mdl, host);
    free(host);
}

void model_zero_grads(Model *mdl) {
    zero_t(mdl, mdl->grads, mdl->n_alloc);
    mdl->grad_acc = 1;
    if (mdl->embed_live) { memset(mdl->embed_live, 0, (size_t)mdl->lay.V); mdl->embed_live_ok = 1; }
}
void model_grads_overwrite(Model *mdl) { mdl->grad_acc = 0; }
void model_fuse_loss_grad(Model *mdl, float loss_scale) {
    CHECK(loss_scale >= 0 && isfinite(loss_scale), "model_fuse_loss_grad: loss_scale %g must be finite and >= 0",
          (double)loss_scale);
    mdl->fuse_loss_scale = loss_scale;
}
void model_step_begin(Model *mdl, float loss_scale) {
    model_grads_overwrite(mdl);
    model_fuse_loss_grad(mdl, loss_scale);
    model_loss_begin(mdl);
}

// ---------------------------------------------------------------------------------
void *model_stage_input(Model *mdl, int slot) { return mdl->slots[slot].layers[0].x; }
void *model_stage_output(Model *mdl, int slot) { return mdl->slots[slot].x_final; }
void *model_stage_grad(Model *mdl) { return mdl->scratch; /* Scratch.dx (+ carry) is carved first */ }
size_t model_stage_elems(const Model *mdl) {
    return (size_t)mdl->N_res * mdl->lay.d_res + (mdl->kind->latent ? lax_elems(mdl) : 0);
}

void model_finish_grads(Model *mdl) {
    const Layout *L = &mdl->lay;
    // (BTP with sequence parallelism: its norm gains are column slices whose gradients sum over
    // every token, and the A's and B's see every token: nothing is partial)
    if (!seq_residual(L)) return;
    // The gains' gradients may be in their data-parallel reduction (started in the backward as
    // their layer's gradients became final): it completes first, then the TP sum — over DP,
    // then over TP, as Megatron-LM's finalize_model_grads (under ZeRO-1 only this rank's slice
    // holds the DP sum, and only that slice is read)
    comm_wait_group(mdl->comm, COMM_ANY);
    // the replicated gains of this stage, packed into one buffer: one all-reduce, not 2L + 1
    Scratch s; scratch_view(mdl, &s);
    size_t d = (size_t)mdl->cfg.d_model, n = 0;
    int n_local = L->layer_end - L->layer_begin;
    for (int l = 0; l < n_local; l++) {
        copy_t(mdl, at(mdl, s.gains, n), mdl->dw.layers[l].input_norm, d); n += d;
        copy_t(mdl, at(mdl, s.gains, n), mdl->dw.layers[l].post_attn_norm, d); n += d;
    }
    if (L->last_stage) { copy_t(mdl, at(mdl, s.gains, n), mdl->dw.final_norm, d); n += d; }
    comm_all_reduce(mdl->comm, GROUP_TP, s.gains, n, (CommDtype)mdl->comm_dtype, OP_SUM, PHASE_OPTIMIZER, -1);
    n = 0;
    for (int l = 0; l < n_local; l++) {
        copy_t(mdl, mdl->dw.layers[l].input_norm, at(mdl, s.gains, n), d); n += d;
        copy_t(mdl, mdl->dw.layers[l].post_attn_norm, at(mdl, s.gains, n), d); n += d;
    }
    if (L->last_stage) copy_t(mdl, mdl->dw.final_norm, at(mdl, s.gains, n), d);
}

// ---- LaX: where each layer's latents come from and go (docs/lax.md §6.4-§6.6) -----------
// Views of layer la's own latents Z (CKPT_NONE and CKPT_SELECTIVE keep them).
static Lat lat_of_layer(const Model *mdl, const LayerActs *la) {
    Lat t;
    if (mdl->lay.scheme == TP_BTP) {
        Bn b[4] = { bn_qkv(mdl), bn_o(mdl), bn_gu(mdl), bn_down(mdl) };
        void *z[4] = { la->zqkv, la->zo, la->zgu, la->zd };
        for (int c = 0, p = 0; c < 4; c++)
            for (int j = 0; j < b[c].v.G; j++, p++) { t.z[p] = at(mdl, z[c], b[c].v.off[j]); t.ld[p] = b[c].v.ld; }
    } else {
        const LowRankActs *a[LX_N] = { &la->lq, &la->lk, &la->lv, &la->lo, &la->lg, &la->lu, &la->ld };
        for (int p = 0; p < LX_N; p++) { t.z[p] = a[p]->z; t.ld[p] = lax_width(&mdl->lay, p); }
    }
    return t;
}
// The latents local layer l crosses with: none in global layer 0; the received ones in a
// stage's first layer; else layer l−1's — kept (CKPT_NONE, CKPT_SELECTIVE), kept as layer l's input (CKPT_FULL),
// or, under CKPT_LOWRANK, the forward latent buffer (forward) or recomputed from layer l−1's
// kept U into the scratch (backward: local ops, no collective).
static const Lat *lat_prev(Model *mdl, Acts *A, int l, int backward, Lat *buf) {
    if (!mdl->kind->latent || mdl->lay.layer_begin + l == 0) return NULL;
    if (l == 0) *buf = lat_message(mdl, A->lat_in);
    else if (mdl->ckpt == CKPT_FULL) *buf = lat_message(mdl, A->layers[l].zin);
    else if (mdl->ckpt == CKPT_NONE || mdl->ckpt == CKPT_SELECTIVE) *buf = lat_of_layer(mdl, &A->layers[l - 1]);
    else if (!backward) *buf = lat_message(mdl, mdl->work.zin);
    else {
        Scratch s; scratch_view(mdl, &s);
        *buf = lat_message(mdl, s.zprev);
        bk_label(mdl->bk, PHASE_RECOMPUTE, mdl->lay.layer_begin + l);
        mdl->kind->latents_recompute(mdl, &A->layers[l - 1], l - 1, buf);
    }
    return buf;
}
// Where local layer l's latents go besides its own buffers: the stage's outgoing message
// (last layer), the next layer's kept input (CKPT_FULL) or the forward latent buffer
// (CKPT_LOWRANK). Nowhere in a replay (CKPT_FULL's recompute: they are already there).
static const Lat *lat_next(Model *mdl, Acts *A, int l, Lat *buf) {
    const Layout *L = &mdl->lay;
    if (!mdl->kind->latent || mdl->fwd_phase == PHASE_RECOMPUTE) return NULL;
    if (l == L->layer_end - L->layer_begin - 1) {
        if (L->last_stage) return NULL;
        *buf = lat_message(mdl, A->lat_out);
    } else if (mdl->ckpt == CKPT_FULL) *buf = lat_message(mdl, A->layers[l + 1].zin);
    else if (mdl->ckpt == CKPT_LOWRANK) *buf = lat_message(mdl, mdl->work.zin);
    else return NULL;
    return buf;
}

static void layer_forward(Model *mdl, Acts *A, int l, LayerActs *la, void *x_out) {
    Lat pb, ob;
    const Lat *prev = lat_prev(mdl, A, l, 0, &pb), *out = lat_next(mdl, A, l, &ob);
    bk_label(mdl->bk, (Phase)mdl->fwd_phase, mdl->lay.layer_begin + l);
    if (mdl->lay.scheme == TP_BTP) btp_layer_forward(mdl, la, l, x_out, prev, out);
    else megatron_layer_forward(mdl, la, l, x_out, prev, out);
}
static void layer_backward(Model *mdl, Acts *A, int l, Scratch *s) {
    Lat pb;
    const Lat *prev = lat_prev(mdl, A, l, 1, &pb);
    bk_label(mdl->bk, PHASE_BACKWARD, mdl->lay.layer_begin + l);
    if (mdl->lay.scheme == TP_BTP) btp_layer_backward(mdl, &A->layers[l], l, s, prev);
    else megatron_layer_backward(mdl, &A->layers[l], l, s, prev);
}

void model_stage_forward(Model *mdl, int slot, const int32_t *inputs, const int32_t *targets) {
    const Layout *L = &mdl->lay;
    Acts *A = &mdl->slots[slot];
    int N = mdl->N, n_local = L->layer_end - L->layer_begin;
    bk_label(mdl->bk, PHASE_FORWARD, -1);
    if (L->first_stage) op_from_host(mdl->bk, A->inputs, inputs, (size_t)N, DT_I32);
    if (L->last_stage) op_from_host(mdl->bk, A->targets, targets, (size_t)N, DT_I32);
    if (L->first_stage) embed_forward(mdl, A->layers[0].x, A->inputs);   // x = E[tokens]
    for (int l = 0; l < n_local; l++) {
        void *x_out = l + 1 < n_local ? A->layers[l + 1].x : A->x_final;
        layer_forward(mdl, A, l, &A->layers[l], x_out);
    }
    if (!L->last_stage) return;
    head_loss_forward(mdl, A, mdl->loss, mdl->loss_written);   // the first forward writes, later ones add
    mdl->loss_written = 1;
}

void model_loss_begin(Model *mdl) { mdl->loss_written = 0; }

double model_loss_read(Model *mdl) {
    // on dry too: the front end records the read (the simulator prices it) and runs nothing
    double sum = 0.0;
    if (mdl->loss_written) op_to_host(mdl->bk, &sum, mdl->loss, 1, DT_F64);
    return sum;
}

// ---- where gradients become final (the data-parallel reduction's buckets) -----------------
int model_grad_parts(const Model *mdl, GradPart *out) {
    const Layout *L = &mdl->lay;
    const ParamTable *t = &mdl->table;
    int n_local = L->layer_end - L->layer_begin, n = 0;
    // the family: [embedding] layer_begin .. layer_end−1 [final norm, LM head] (params.c's walk);
    // a layer's part starts at its first tensor, its input norm
    size_t *start = xcalloc((size_t)n_local + 2, sizeof *start);
    for (int l = 0; l < n_local; l++) {
        char name[PARAM_NAME_MAX];
        xsnprintf(name, sizeof name, "model/layers/%d/input_norm", L->layer_begin + l);
        const ParamSpec *ps = param_find(t, name);
        CHECK(ps, "model_grad_parts: no tensor %s in the parameter table", name);
        start[l] = ps->offset;
    }
    const ParamSpec *fn = L->last_stage ? param_find(t, "model/final_norm") : NULL;
    CHECK(!L->last_stage || fn, "model_grad_parts: no final norm on the last stage");
    start[n_local] = fn ? fn->offset : t->n_params;
#define PART(o, len, lay) do { if (out) out[n] = (GradPart){ (o), (len), (lay) }; n++; } while (0)
    if (L->last_stage) PART(fn->offset, t->n_params - fn->offset, -1);
    for (int l = n_local - 1; l >= 0; l--) PART(start[l], start[l + 1] - start[l], L->layer_begin + l);
    if (start[0] > 0) PART(0, start[0], -1);   // the embedding (first stage, or tied to the head)
#undef PART
    free(start);
    return n;
}
void model_grads_final_hook(Model *mdl, void (*fn)(void *ctx, int part), void *ctx) {
    mdl->grads_final = fn;
    mdl->grads_final_ctx = ctx;
}
void model_final_backward(Model *mdl, int last) { mdl->final_backward = last; }
// The next part of the final backward is final (parts in model_grad_parts' order).
static void part_final(Model *mdl, int *part) {
    if (mdl->final_backward && mdl->grads_final) mdl->grads_final(mdl->grads_final_ctx, *part);
    (*part)++;
}

void model_stage_backward(Model *mdl, int slot, float loss_scale) {
    const Layout *L = &mdl->lay;
    Acts *A = &mdl->slots[slot];
    int n_local = L->layer_end - L->layer_begin, part = 0;
    Scratch s; scratch_view(mdl, &s);
    // (LaX: the last layer reads no carry: no layer after it sends one)
    if (L->last_stage) {
        head_loss_backward(mdl, A, loss_scale, &s);   // loss -> s.dx
        part_final(mdl, &part);                       // final norm, LM head (tied: the embedding waits)
    }
    for (int l = n_local - 1; l >= 0; l--) {
        LayerActs *la = &A->layers[l];
        if (mdl->ckpt == CKPT_FULL) {
            // Replay the block's forward from its kept input (LaX: and incoming latents) into
            // the shared one-block working set (its output goes to the working set's own x,
            // unused otherwise); its ops and collectives are counted under PHASE_RECOMPUTE.
            mdl->fwd_phase = PHASE_RECOMPUTE;
            layer_forward(mdl, A, l, la, mdl->work.x);
            mdl->fwd_phase = PHASE_FORWARD;
        }
        layer_backward(mdl, A, l, &s);
        part_final(mdl, &part);
    }
    if (L->first_stage) embed_backward(mdl, s.dx, A->inputs);
    if (L->first_stage || mdl->cfg.tie_embeddings) part_final(mdl, &part);
    mdl->grad_acc = 1;                           // every later backward of the step adds
    mdl->final_backward = 0;
}

double model_forward(Model *mdl, const int32_t *inputs, const int32_t *targets) {
    model_loss_begin(mdl);
    model_stage_forward(mdl, 0, inputs, targets);
    return model_loss_read(mdl) / mdl->N;
}

void model_backward(Model *mdl, float loss_scale) { model_stage_backward(mdl, 0, loss_scale); }
