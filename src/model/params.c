// params.c — the parameter table: names, full shapes, this rank's shard, offsets,
// init and decay rules; and the layout (local widths) of a rank in the grid.
//
// One enumeration (walk_params) defines the order of tensors; it both fills the table
// and binds views, so the two can never disagree. A linear's tensors, their init and their
// shard are its kind's (kind.h take); the norms, embedding and head are here.
#include <math.h>
#include "model_internal.h"
#include "../core/check.h"
#include "../core/rng.h"

static int divides(int a, int b) { return a > 0 && b % a == 0; }

int layout_make(Layout *lay, const ModelConfig *c, TPScheme scheme, int tp, int tp_rank,
                int pp, int pp_rank, char *msg, size_t n) {
    memset(lay, 0, sizeof *lay);
    const Kind *kind = kind_of(c);
    int lowrank = kind->lowrank;
    int hd = c->d_model / c->n_heads;
    msg[0] = 0;
#define REFUSE(...) do { snprintf(msg, n, __VA_ARGS__); return 0; } while (0)
    if (scheme == TP_BTP && !lowrank)
        REFUSE("bottleneck-aware TP (boost.btp) needs a low-rank model (model.linear cola, svd or lax), not dense");
    if (!divides(pp, c->n_layers))
        REFUSE("model.n_layers = %d is not divisible by parallel.pp = %d", c->n_layers, pp);
    if (tp > 1) {
        if (!divides(tp, c->n_heads)) REFUSE("model.n_heads = %d is not divisible by parallel.tp = %d", c->n_heads, tp);
        if (!divides(tp, c->n_kv_heads)) REFUSE("model.n_kv_heads = %d is not divisible by parallel.tp = %d", c->n_kv_heads, tp);
        if (!divides(tp, c->d_model)) REFUSE("model.d_model = %d is not divisible by parallel.tp = %d", c->d_model, tp);
        if (!divides(tp, c->d_ff)) REFUSE("model.d_ff = %d is not divisible by parallel.tp = %d", c->d_ff, tp);
        if (!divides(tp, c->vocab_size)) REFUSE("model.vocab_size = %d is not divisible by parallel.tp = %d (vocab-parallel embedding and LM head)", c->vocab_size, tp);
        if (lowrank && scheme == TP_MEGATRON) {
            if (!divides(tp, c->rank_attn)) REFUSE("model.rank_attn = %d is not divisible by parallel.tp = %d (Vanilla-TP splits r; bottleneck-aware TP does not need this)", c->rank_attn, tp);
            if (!divides(tp, c->rank_mlp)) REFUSE("model.rank_mlp = %d is not divisible by parallel.tp = %d (Vanilla-TP splits r; bottleneck-aware TP does not need this)", c->rank_mlp, tp);
        }
    }
    if (pp > 1 && c->tie_embeddings)
        REFUSE("model.tie_embeddings with parallel.pp = %d is not supported: the embedding (first stage) and LM head (last stage) would live on different stages", pp);
#undef REFUSE
    lay->scheme = scheme; lay->tp = tp; lay->tp_rank = tp_rank; lay->pp = pp; lay->pp_rank = pp_rank;
    int per_stage = c->n_layers / pp;
    lay->layer_begin = pp_rank * per_stage; lay->layer_end = lay->layer_begin + per_stage;
    lay->first_stage = pp_rank == 0; lay->last_stage = pp_rank == pp - 1;
    lay->V = c->vocab_size / tp; lay->v0 = tp_rank * lay->V;
    if (!lowrank) {                       // FullRank-TP: heads and d_ff split, residual full
        lay->d_res = c->d_model;
        lay->H = c->n_heads / tp; lay->Hkv = c->n_kv_heads / tp;
        lay->dff = c->d_ff / tp;
    } else if (scheme == TP_MEGATRON) {   // Vanilla-TP: r split, everything else replicated
        lay->d_res = c->d_model;
        lay->H = c->n_heads; lay->Hkv = c->n_kv_heads;
        lay->dff = c->d_ff;
        lay->ra = c->rank_attn / tp; lay->rm = c->rank_mlp / tp;
    } else {                              // BTP: residual, heads and d_ff split, r full
        lay->d_res = c->d_model / tp;
        lay->H = c->n_heads / tp; lay->Hkv = c->n_kv_heads / tp;
        lay->dff = c->d_ff / tp;
        lay->ra = c->rank_attn; lay->rm = c->rank_mlp;
    }
    lay->dq = lay->H * hd; lay->dkv = lay->Hkv * hd;
    if (kind->layout) kind->layout(lay, c);   // the kind's own widths (LaX: its latents)
    return 1;
}

static void walk_params(ParamWalk *wk, ModelW *w) {
    const ModelConfig *c = wk->cfg;
    const Layout *lay = wk->lay;
    int d = c->d_model, hd = d / c->n_heads, kvd = c->n_kv_heads * hd;
    // Norm gains are sharded with the residual stream under BTP, replicated otherwise.
    ShardDim norm_shard = lay->scheme == TP_BTP ? SHARD_COLS : SHARD_NONE;
    const Kind *kind = kind_of(c);
    char name[PARAM_NAME_MAX];
    if (lay->first_stage || c->tie_embeddings) {   // vocab-parallel rows
        void *embed = walk_take(wk, "model/embed_tokens", 2, c->vocab_size, d, SHARD_ROWS, 1, INIT_NORMAL, c->embed_std);
        if (w) w->embed = embed;
    }
    for (int l = lay->layer_begin; l < lay->layer_end; l++) {
        LayerW lw;
        xsnprintf(name, sizeof name, "model/layers/%d/input_norm", l);
        lw.input_norm = walk_take(wk, name, 1, 1, d, norm_shard, 0, INIT_ONES, 0);
        xsnprintf(name, sizeof name, "model/layers/%d/post_attn_norm", l);
        lw.post_attn_norm = walk_take(wk, name, 1, 1, d, norm_shard, 0, INIT_ONES, 0);
        char pre[PARAM_NAME_MAX];
#define LIN(field, group, proj, din, dout, r, colpar) \
        xsnprintf(pre, sizeof pre, "model/layers/%d/" group "/" proj, l); \
        lw.field = kind->take(wk, pre, din, dout, r, colpar, l);
        LIN(q, "attn", "q", d, d, c->rank_attn, 1)
        LIN(k, "attn", "k", d, kvd, c->rank_attn, 1)
        LIN(v, "attn", "v", d, kvd, c->rank_attn, 1)
        LIN(o, "attn", "o", d, d, c->rank_attn, 0)
        LIN(gate, "mlp", "gate", d, c->d_ff, c->rank_mlp, 1)
        LIN(up, "mlp", "up", d, c->d_ff, c->rank_mlp, 1)
        LIN(down, "mlp", "down", c->d_ff, d, c->rank_mlp, 0)
#undef LIN
        if (w) w->layers[l - lay->layer_begin] = lw;
    }
    if (lay->last_stage) {
        // The final norm sees the all-gathered full hidden vector under BTP: replicated.
        void *fn = walk_take(wk, "model/final_norm", 1, 1, d, SHARD_NONE, 0, INIT_ONES, 0);
        void *head = NULL;
        if (!c->tie_embeddings) head = walk_take(wk, "model/lm_head", 2, d, c->vocab_size, SHARD_COLS, 1, INIT_NORMAL, c->embed_std);
        if (w) { w->final_norm = fn; w->lm_head = head; }
    }
}

static Layout single_layout(const ModelConfig *cfg) {
    Layout lay; char msg[256];
    CHECK(layout_make(&lay, cfg, TP_MEGATRON, 1, 0, 1, 0, msg, sizeof msg), "%s", msg);
    return lay;
}

void param_table_build(ParamTable *t, const ModelConfig *cfg, const Layout *lay) {
    Layout single;
    if (!lay) { single = single_layout(cfg); lay = &single; }
    memset(t, 0, sizeof *t);
    ParamWalk wk = { .t = t, .base = NULL, .offset = 0, .cfg = cfg, .lay = lay };
    walk_params(&wk, NULL);
    t->n_params = wk.offset;
}

void param_table_free(ParamTable *t) { free(t->specs); memset(t, 0, sizeof *t); }

const ParamSpec *param_find(const ParamTable *t, const char *name) {
    for (int i = 0; i < t->n_specs; i++)
        if (strcmp(t->specs[i].name, name) == 0) return &t->specs[i];
    return NULL;
}

void model_bind(ModelW *w, const ModelConfig *cfg, const Layout *lay, const ParamTable *t, void *base, DType dtype) {
    Layout single;
    if (!lay) { single = single_layout(cfg); lay = &single; }
    ParamWalk wk = { .t = NULL, .base = base, .dtype = dtype, .offset = 0, .cfg = cfg, .lay = lay };
    walk_params(&wk, w);
    CHECK(wk.offset == t->n_params, "parameter table and binding disagree");
}

void param_table_init_weights(const ParamTable *t, float *params, uint64_t seed) {
    memset(params, 0, t->n_params * sizeof(float));  // padding between tensors stays 0
    for (int i = 0; i < t->n_specs; i++) {
        const ParamSpec *s = &t->specs[i];
        float *p = params + s->offset;
        if (s->init == INIT_ONES) {
            for (size_t j = 0; j < s->numel; j++) p[j] = 1.0f;
            continue;
        }
        if (s->init == INIT_ZEROS) continue;   // already zero
        // Element (i,j) of the full tensor is rng_normal_at(seed(name), i*cols + j) (rng_uniform_at
        // for INIT_UNIFORM): this rank draws exactly the indices of its block, so every
        // layout starts equal.
        uint64_t sd = rng_seed_for_name(seed, s->name);
        if (s->init == INIT_UNIFORM) {
            for (int64_t r = 0; r < s->local_rows; r++)
                for (int64_t j = 0; j < s->local_cols; j++) {
                    uint64_t idx = (uint64_t)((s->row0 + r) * s->cols + s->col0 + j);
                    p[r * s->local_cols + j] = (float)(s->init_std * (2.0 * rng_uniform_at(sd, idx) - 1.0));
                }
            continue;
        }
        if (s->local_cols == s->cols) {   // whole rows: the block is contiguous in the full tensor
            rng_fill_normal(p, s->numel, sd, (uint64_t)(s->row0 * s->cols), s->init_std);
        } else {
            for (int64_t r = 0; r < s->local_rows; r++)
                rng_fill_normal(p + r * s->local_cols, (size_t)s->local_cols, sd,
                            (uint64_t)((s->row0 + r) * s->cols + s->col0), s->init_std);
        }
    }
}
