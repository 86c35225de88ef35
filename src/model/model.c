// model.c — allocation and the single-process forward/backward drivers.
//
// Block (paper notes §1), x the residual stream [N,d], N = B*T tokens:
//   a = RMSNorm(x)                      q,k,v = lin(a); RoPE(q,k)
//   y = causal_attention(q,k,v)         x_mid = x + lin_o(y)
//   m = RMSNorm(x_mid)                  g,u = lin_gate(m), lin_up(m)
//   gu = (SiLU(g) or g) * u             x_out = x_mid + lin_down(gu)
// lin(x) is x@W (dense), σ(x@A)@B (cola, σ = SiLU) or (x@A)@B (svd).
#include "model.h"
#include "../core/check.h"
#include "../ops/ops.h"

static int kv_dim(const ModelConfig *c) { return c->n_kv_heads * (c->d_model / c->n_heads); }
static int is_lowrank(const ModelConfig *c) { return c->linear != LINEAR_DENSE; }
// SiLU on the gate: always for dense and svd; for cola unless only_lr_act.
static int gate_silu(const ModelConfig *c) { return c->linear != LINEAR_COLA || !c->only_lr_act; }

// ---------------------------------------------------------------------------------
// Activation carving: one buffer, two passes (count with base == NULL, then assign).
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
static void carve_acts(Carve *cv, Acts *A, const ModelConfig *c, int B, int T) {
    size_t N = (size_t)B * T, d = c->d_model, kvd = kv_dim(c), ff = c->d_ff;
    // token ids live in the float buffer as int32 (same size, 16-aligned)
    A->inputs = (int32_t *)carve(cv, N);
    A->targets = (int32_t *)carve(cv, N);
    for (int l = 0; l < c->n_layers; l++) {
        LayerActs la;
        la.x = carve(cv, N * d);
        la.a = carve(cv, N * d); la.rstd1 = carve(cv, N);
        la.lq = carve_lowrank(cv, c, N, c->rank_attn);
        la.lk = carve_lowrank(cv, c, N, c->rank_attn);
        la.lv = carve_lowrank(cv, c, N, c->rank_attn);
        la.q = carve(cv, N * d); la.k = carve(cv, N * kvd); la.v = carve(cv, N * kvd);
        la.att = carve(cv, (size_t)B * c->n_heads * T * T);
        la.y = carve(cv, N * d);
        la.lo = carve_lowrank(cv, c, N, c->rank_attn);
        la.x_mid = carve(cv, N * d);
        la.m = carve(cv, N * d); la.rstd2 = carve(cv, N);
        la.lg = carve_lowrank(cv, c, N, c->rank_mlp);
        la.lu = carve_lowrank(cv, c, N, c->rank_mlp);
        la.g = carve(cv, N * ff); la.u = carve(cv, N * ff); la.gu = carve(cv, N * ff);
        la.ld = carve_lowrank(cv, c, N, c->rank_mlp);
        if (cv->base) A->layers[l] = la;
    }
    A->x_final = carve(cv, N * d);
    A->xf = carve(cv, N * d); A->rstdf = carve(cv, N);
    A->logits = carve(cv, N * (size_t)c->vocab_size);
    A->losses = carve(cv, N);
}

// Backward scratch: gradients of one layer's activations (reused layer by layer).
typedef struct {
    float *dx;           // [N,d] running gradient of the residual stream
    float *da;           // [N,d] gradient of a normed input (a, m or xf)
    float *dq, *dk, *dv; // [N,d], [N,kvd], [N,kvd]
    float *dy;           // [N,d]
    float *dg, *du, *dgu;// [N,d_ff]
    float *dz, *dh;      // [N,r_max] low-rank inner gradients
} Scratch;
static void carve_scratch(Carve *cv, Scratch *s, const ModelConfig *c, int N) {
    size_t d = c->d_model, kvd = kv_dim(c), ff = c->d_ff;
    size_t r = c->rank_attn > c->rank_mlp ? c->rank_attn : c->rank_mlp;
    s->dx = carve(cv, N * d); s->da = carve(cv, N * d);
    s->dq = carve(cv, N * d); s->dk = carve(cv, N * kvd); s->dv = carve(cv, N * kvd);
    s->dy = carve(cv, N * d);
    s->dg = carve(cv, N * ff); s->du = carve(cv, N * ff); s->dgu = carve(cv, N * ff);
    s->dz = carve(cv, N * r); s->dh = carve(cv, N * r);
}

void model_init(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed) {
    memset(mdl, 0, sizeof *mdl);
    mdl->cfg = *cfg; mdl->B = B; mdl->T = T; mdl->N = B * T;
    CHECK(T <= cfg->seq_len, "micro-batch length %d exceeds model.seq_len %d", T, cfg->seq_len);
    param_table_build(&mdl->table, cfg);
    size_t np = mdl->table.n_params;
    mdl->params = xaligned_alloc(np * sizeof(float));
    mdl->grads = xaligned_alloc(np * sizeof(float));
    mdl->m = xaligned_alloc(np * sizeof(float));
    mdl->v = xaligned_alloc(np * sizeof(float));
    mdl->bytes_params = mdl->bytes_grads = np * sizeof(float);
    mdl->bytes_optim = 2 * np * sizeof(float);
    mdl->w.layers = xcalloc((size_t)cfg->n_layers, sizeof(LayerW));
    mdl->dw.layers = xcalloc((size_t)cfg->n_layers, sizeof(LayerW));
    model_bind(&mdl->w, cfg, &mdl->table, mdl->params);
    model_bind(&mdl->dw, cfg, &mdl->table, mdl->grads);

    mdl->acts.layers = xcalloc((size_t)cfg->n_layers, sizeof(LayerActs));
    Carve cv = {0};
    carve_acts(&cv, &mdl->acts, cfg, B, T);
    mdl->act_floats = cv.off;
    mdl->act_memory = xaligned_alloc(cv.off * sizeof(float));
    cv = (Carve){ .base = mdl->act_memory, .off = 0 };
    carve_acts(&cv, &mdl->acts, cfg, B, T);

    Scratch s; cv = (Carve){0};
    carve_scratch(&cv, &s, cfg, mdl->N);
    mdl->scratch_floats = cv.off;
    mdl->scratch = xaligned_alloc(cv.off * sizeof(float));
    mdl->bytes_acts = (mdl->act_floats + mdl->scratch_floats) * sizeof(float);
    model_init_weights(mdl, seed);
}

void model_free(Model *mdl) {
    free(mdl->params); free(mdl->grads); free(mdl->m); free(mdl->v);
    free(mdl->w.layers); free(mdl->dw.layers); free(mdl->acts.layers);
    free(mdl->act_memory); free(mdl->scratch);
    param_table_free(&mdl->table);
    memset(mdl, 0, sizeof *mdl);
}

void model_zero_grads(Model *mdl) { memset(mdl->grads, 0, mdl->table.n_params * sizeof(float)); }

// ---------------------------------------------------------------------------------
// One linear of the configured kind. Single-process: no communication here; the
// tensor-parallel layer drivers place their collectives around the factors explicitly.

// y[N,dout] = lin(x[N,din])
static void linear_forward(const ModelConfig *c, float *y, LowRankActs *la, const float *x,
                           const LinearW *w, int N, int din, int dout, int r) {
    if (!is_lowrank(c)) { matmul_forward(y, x, w->W, N, din, dout, 0); return; }
    matmul_forward(la->h, x, w->A, N, din, r, 0);                 // h = x@A   [N,r]
    if (c->linear == LINEAR_COLA) silu_forward(la->z, la->h, (size_t)N * r);  // z = σ(h)
    matmul_forward(y, la->z, w->B, N, r, dout, 0);                // y = z@B   [N,dout]
}

// dx[N,din] += ..., dw += ...; dz, dh: scratch [N,r]
static void linear_backward(const ModelConfig *c, float *dx, LinearW *dw, const float *dy,
                            const float *x, const LowRankActs *la, const LinearW *w,
                            int N, int din, int dout, int r, float *dz, float *dh) {
    if (!is_lowrank(c)) { matmul_backward(dx, dw->W, dy, x, w->W, N, din, dout); return; }
    size_t nr = (size_t)N * r;
    memset(dz, 0, nr * sizeof(float));
    matmul_backward(dz, dw->B, dy, la->z, w->B, N, r, dout);     // dz = dy@B^T, dB += z^T dy
    const float *dpre = dz;
    if (c->linear == LINEAR_COLA) {
        memset(dh, 0, nr * sizeof(float));
        silu_backward(dh, dz, la->h, nr);                          // dh = dz * σ'(h)
        dpre = dh;
    }
    matmul_backward(dx, dw->A, dpre, x, w->A, N, din, r);         // dx += dh@A^T, dA += x^T dh
}

// LM head: logits[N,V] = xf[N,d] @ head, head = lm_head [d,V] or embed^T (tied).
static void head_forward(const Model *mdl, float *logits, const float *xf) {
    const ModelConfig *c = &mdl->cfg;
    if (mdl->w.lm_head) matmul_forward(logits, xf, mdl->w.lm_head, mdl->N, c->d_model, c->vocab_size, 0);
    else matmul_forward_wt(logits, xf, mdl->w.embed, mdl->N, c->d_model, c->vocab_size, 0);
}
static void head_backward(Model *mdl, float *dxf, const float *dlogits, const float *xf) {
    const ModelConfig *c = &mdl->cfg;
    if (mdl->w.lm_head) matmul_backward(dxf, mdl->dw.lm_head, dlogits, xf, mdl->w.lm_head, mdl->N, c->d_model, c->vocab_size);
    else matmul_backward_wt(dxf, mdl->dw.embed, dlogits, xf, mdl->w.embed, mdl->N, c->d_model, c->vocab_size);
}

// ---------------------------------------------------------------------------------
double model_forward(Model *mdl, const int32_t *inputs, const int32_t *targets) {
    const ModelConfig *c = &mdl->cfg;
    Acts *A = &mdl->acts;
    int B = mdl->B, T = mdl->T, N = mdl->N, d = c->d_model, H = c->n_heads, Hkv = c->n_kv_heads;
    int hd = d / H, kvd = kv_dim(c), ff = c->d_ff, ra = c->rank_attn, rm = c->rank_mlp;
    size_t Nd = (size_t)N * d;
    memcpy(A->inputs, inputs, (size_t)N * sizeof(int32_t));
    memcpy(A->targets, targets, (size_t)N * sizeof(int32_t));

    embedding_forward(A->layers[0].x, inputs, mdl->w.embed, N, d);            // x = E[tokens]
    for (int l = 0; l < c->n_layers; l++) {
        LayerW *w = &mdl->w.layers[l];
        LayerActs *la = &A->layers[l];
        float *x_out = l + 1 < c->n_layers ? A->layers[l + 1].x : A->x_final;
        // attention
        rmsnorm_forward(la->a, la->rstd1, la->x, w->input_norm, N, d, c->norm_eps);
        linear_forward(c, la->q, &la->lq, la->a, &w->q, N, d, d, ra);
        linear_forward(c, la->k, &la->lk, la->a, &w->k, N, d, kvd, ra);
        linear_forward(c, la->v, &la->lv, la->a, &w->v, N, d, kvd, ra);
        rope_forward(la->q, B, T, H, hd, c->rope_theta);
        rope_forward(la->k, B, T, Hkv, hd, c->rope_theta);
        attention_forward(la->y, la->att, la->q, la->k, la->v, B, T, H, Hkv, hd);
        linear_forward(c, la->x_mid, &la->lo, la->y, &w->o, N, d, d, ra);     // x_mid = o(y)
        add_inplace(la->x_mid, la->x, Nd);                                     //       + x
        // MLP
        rmsnorm_forward(la->m, la->rstd2, la->x_mid, w->post_attn_norm, N, d, c->norm_eps);
        linear_forward(c, la->g, &la->lg, la->m, &w->gate, N, d, ff, rm);
        linear_forward(c, la->u, &la->lu, la->m, &w->up, N, d, ff, rm);
        swiglu_forward(la->gu, la->g, la->u, (size_t)N * ff, gate_silu(c));
        linear_forward(c, x_out, &la->ld, la->gu, &w->down, N, ff, d, rm);    // x_out = down(gu)
        add_inplace(x_out, la->x_mid, Nd);                                     //       + x_mid
    }
    rmsnorm_forward(A->xf, A->rstdf, A->x_final, mdl->w.final_norm, N, d, c->norm_eps);
    head_forward(mdl, A->logits, A->xf);
    double sum = crossentropy_forward_backward(NULL, A->losses, A->logits, targets, N, c->vocab_size, 0.0f);
    return sum / N;
}

void model_backward(Model *mdl, float loss_scale) {
    const ModelConfig *c = &mdl->cfg;
    Acts *A = &mdl->acts;
    int B = mdl->B, T = mdl->T, N = mdl->N, d = c->d_model, H = c->n_heads, Hkv = c->n_kv_heads;
    int hd = d / H, kvd = kv_dim(c), ff = c->d_ff, ra = c->rank_attn, rm = c->rank_mlp;
    size_t Nd = (size_t)N * d;
    Scratch s; Carve cv = { .base = mdl->scratch, .off = 0 };
    carve_scratch(&cv, &s, c, N);

    // loss -> logits (in place) -> final norm -> residual gradient s.dx
    crossentropy_forward_backward(A->logits, A->losses, A->logits, A->targets, N, c->vocab_size, loss_scale);
    memset(s.da, 0, Nd * sizeof(float));
    head_backward(mdl, s.da, A->logits, A->xf);
    memset(s.dx, 0, Nd * sizeof(float));
    rmsnorm_backward(s.dx, mdl->dw.final_norm, s.da, A->x_final, mdl->w.final_norm, A->rstdf, N, d);

    for (int l = c->n_layers - 1; l >= 0; l--) {
        LayerW *w = &mdl->w.layers[l], *dw = &mdl->dw.layers[l];
        LayerActs *la = &A->layers[l];
        // MLP: s.dx is d(x_out); the residual passes it through to x_mid unchanged.
        memset(s.dgu, 0, (size_t)N * ff * sizeof(float));
        linear_backward(c, s.dgu, &dw->down, s.dx, la->gu, &la->ld, &w->down, N, ff, d, rm, s.dz, s.dh);
        memset(s.dg, 0, (size_t)N * ff * sizeof(float));
        memset(s.du, 0, (size_t)N * ff * sizeof(float));
        swiglu_backward(s.dg, s.du, s.dgu, la->g, la->u, (size_t)N * ff, gate_silu(c));
        memset(s.da, 0, Nd * sizeof(float));
        linear_backward(c, s.da, &dw->gate, s.dg, la->m, &la->lg, &w->gate, N, d, ff, rm, s.dz, s.dh);
        linear_backward(c, s.da, &dw->up, s.du, la->m, &la->lu, &w->up, N, d, ff, rm, s.dz, s.dh);
        rmsnorm_backward(s.dx, dw->post_attn_norm, s.da, la->x_mid, w->post_attn_norm, la->rstd2, N, d);
        // attention: s.dx is now d(x_mid)
        memset(s.dy, 0, Nd * sizeof(float));
        linear_backward(c, s.dy, &dw->o, s.dx, la->y, &la->lo, &w->o, N, d, d, ra, s.dz, s.dh);
        memset(s.dq, 0, Nd * sizeof(float));
        memset(s.dk, 0, (size_t)N * kvd * sizeof(float));
        memset(s.dv, 0, (size_t)N * kvd * sizeof(float));
        attention_backward(s.dq, s.dk, s.dv, s.dy, la->q, la->k, la->v, la->att, B, T, H, Hkv, hd);
        rope_backward(s.dq, B, T, H, hd, c->rope_theta);
        rope_backward(s.dk, B, T, Hkv, hd, c->rope_theta);
        memset(s.da, 0, Nd * sizeof(float));
        linear_backward(c, s.da, &dw->q, s.dq, la->a, &la->lq, &w->q, N, d, d, ra, s.dz, s.dh);
        linear_backward(c, s.da, &dw->k, s.dk, la->a, &la->lk, &w->k, N, d, kvd, ra, s.dz, s.dh);
        linear_backward(c, s.da, &dw->v, s.dv, la->a, &la->lv, &w->v, N, d, kvd, ra, s.dz, s.dh);
        rmsnorm_backward(s.dx, dw->input_norm, s.da, la->x, w->input_norm, la->rstd1, N, d);
    }
    embedding_backward(mdl->dw.embed, s.dx, A->inputs, N, d);
}
