// params.c — the parameter table: names, full shapes, offsets, init and decay rules.
//
// One enumeration (walk_params) defines the order of tensors; it both fills the table
// and binds views, so the two can never disagree.
#include <math.h>
#include "model.h"
#include "../core/check.h"
#include "../core/rng.h"

typedef struct {
    ParamTable *t;     // when non-NULL: append specs
    float *base;       // when non-NULL: return base + offset for views
    size_t offset;
    const ModelConfig *cfg;
} Walk;

static float *take(Walk *wk, const char *name, int ndim, int64_t rows, int64_t cols,
                   int decay, InitKind init, float std) {
    size_t numel = (size_t)rows * (size_t)cols;
    if (wk->t) {
        ParamTable *t = wk->t;
        t->specs = realloc(t->specs, sizeof(ParamSpec) * (size_t)(t->n_specs + 1));
        CHECK(t->specs, "out of memory growing the parameter table");
        ParamSpec *s = &t->specs[t->n_specs++];
        memset(s, 0, sizeof *s);
        xsnprintf(s->name, sizeof s->name, "%s", name);
        s->ndim = ndim; s->rows = rows; s->cols = cols;
        s->offset = wk->offset; s->numel = numel;
        s->decay = decay; s->init = init; s->init_std = std;
    }
    float *p = wk->base ? wk->base + wk->offset : NULL;
    // Keep every tensor 16-float (64-byte) aligned inside its family.
    wk->offset += (numel + 15) / 16 * 16;
    return p;
}

// CoLA init: every entry of A and B ~ N(0,1) * r^(-1/4) * (d_in + d_out)^(-1/4), with
// d_in/d_out those of the dense layer being replaced (paper notes §1). Dense linears
// use N(0, 0.02), the LLaMA/HF `initializer_range`.
static LinearW take_linear(Walk *wk, const char *prefix, int din, int dout, int rank) {
    LinearW lw = {0};
    char name[PARAM_NAME_MAX];
    if (wk->cfg->linear == LINEAR_DENSE) {
        xsnprintf(name, sizeof name, "%s/W", prefix);
        lw.W = take(wk, name, 2, din, dout, 1, INIT_NORMAL, 0.02f);
    } else {
        float std = (float)(pow((double)rank, -0.25) * pow((double)(din + dout), -0.25));
        xsnprintf(name, sizeof name, "%s/A", prefix);
        lw.A = take(wk, name, 2, din, rank, 1, INIT_NORMAL, std);
        xsnprintf(name, sizeof name, "%s/B", prefix);
        lw.B = take(wk, name, 2, rank, dout, 1, INIT_NORMAL, std);
    }
    return lw;
}

static void walk_params(Walk *wk, ModelW *w) {
    const ModelConfig *c = wk->cfg;
    int d = c->d_model, hd = d / c->n_heads, kvd = c->n_kv_heads * hd;
    char name[PARAM_NAME_MAX];
    float *embed = take(wk, "model/embed_tokens", 2, c->vocab_size, d, 1, INIT_NORMAL, c->embed_std);
    if (w) { w->embed = embed; }
    for (int l = 0; l < c->n_layers; l++) {
        LayerW lw;
        xsnprintf(name, sizeof name, "model/layers/%d/input_norm", l);
        lw.input_norm = take(wk, name, 1, 1, d, 0, INIT_ONES, 0);
        xsnprintf(name, sizeof name, "model/layers/%d/post_attn_norm", l);
        lw.post_attn_norm = take(wk, name, 1, 1, d, 0, INIT_ONES, 0);
        char pre[PARAM_NAME_MAX];
#define LIN(field, group, proj, din, dout, r) \
        xsnprintf(pre, sizeof pre, "model/layers/%d/" group "/" proj, l); \
        lw.field = take_linear(wk, pre, din, dout, r);
        LIN(q, "attn", "q", d, d, c->rank_attn)
        LIN(k, "attn", "k", d, kvd, c->rank_attn)
        LIN(v, "attn", "v", d, kvd, c->rank_attn)
        LIN(o, "attn", "o", d, d, c->rank_attn)
        LIN(gate, "mlp", "gate", d, c->d_ff, c->rank_mlp)
        LIN(up, "mlp", "up", d, c->d_ff, c->rank_mlp)
        LIN(down, "mlp", "down", c->d_ff, d, c->rank_mlp)
#undef LIN
        if (w) w->layers[l] = lw;
    }
    float *fn = take(wk, "model/final_norm", 1, 1, d, 0, INIT_ONES, 0);
    float *head = NULL;
    if (!c->tie_embeddings) head = take(wk, "model/lm_head", 2, d, c->vocab_size, 1, INIT_NORMAL, c->embed_std);
    if (w) { w->final_norm = fn; w->lm_head = head; }
}

void param_table_build(ParamTable *t, const ModelConfig *cfg) {
    memset(t, 0, sizeof *t);
    Walk wk = { .t = t, .base = NULL, .offset = 0, .cfg = cfg };
    walk_params(&wk, NULL);
    t->n_params = wk.offset;
}

void param_table_free(ParamTable *t) { free(t->specs); memset(t, 0, sizeof *t); }

const ParamSpec *param_find(const ParamTable *t, const char *name) {
    for (int i = 0; i < t->n_specs; i++)
        if (strcmp(t->specs[i].name, name) == 0) return &t->specs[i];
    return NULL;
}

void model_bind(ModelW *w, const ModelConfig *cfg, const ParamTable *t, float *base) {
    Walk wk = { .t = NULL, .base = base, .offset = 0, .cfg = cfg };
    walk_params(&wk, w);
    CHECK(wk.offset == t->n_params, "parameter table and binding disagree");
}

void model_init_weights(Model *mdl, uint64_t seed) {
    const ParamTable *t = &mdl->table;
    memset(mdl->params, 0, t->n_params * sizeof(float));  // padding between tensors stays 0
    for (int i = 0; i < t->n_specs; i++) {
        const ParamSpec *s = &t->specs[i];
        float *p = mdl->params + s->offset;
        if (s->init == INIT_ONES) {
            for (size_t j = 0; j < s->numel; j++) p[j] = 1.0f;
        } else {
            // Element j of the full tensor is normal_at(seed(name), j): a shard that
            // holds rows/cols [a,b) draws exactly those indices.
            fill_normal(p, s->numel, seed_for_name(seed, s->name), 0, s->init_std);
        }
    }
}
