// bench — training-step throughput of dense vs low-rank (CoLA, SVD) models on this CPU.
//
//   build/bench [--preset cola-60m] [--seq 256] [--batch 4] [--steps 6] [--warmup 2]
//               [--linears dense,cola,svd] [--threads N] [--profile R | --no-profile] [--json OUT]
//               [--set key=value]...
//
// For each linear kind the model is built directly (model_init, weights from the seed),
// bypassing the data pipeline: every step gets fresh uniform-random tokens from a fixed
// seed, drawn outside the timed region. One timed step is exactly what trainer_step does
// for one micro-batch: zero grads + model_forward + model_backward (mean loss) + global
// grad-norm clip + AdamW over the parameter table. The first --warmup steps are dropped;
// ms/step is the mean of the remaining --steps (also printed: the best step).
//
// MFU = tokens/s × model_train_flops_per_token / measured sgemm peak (optim.h: best-of-3
// 2048³ sgemm with the same thread count), the definition the trainer logs; here the
// peak is measured before and after every kind and the maximum is used.
//
// Per-op profile (--profile R, default 3; --no-profile skips it): after the timed steps,
// R more steps are REPLAYED op by op — the same op calls in the same order as model.c's
// model_forward/model_backward, on the model's own buffers, with a timer around each op
// (so the kernels themselves are untouched). The replay's loss and gradient norm must
// equal the real step's (checked, printed) — that guards the replay against drifting
// from model.c. Per op the minimum over the R replays is reported (other processes on
// the machine only add time). GEMM rows show achieved GFLOP/s and % of the sgemm peak.
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../config/config.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/rng.h"
#include "../core/timer.h"
#include "../model/model.h"
#include "../ops/ops.h"
#include "../train/optim.h"
#include "../train/trainer.h"

// ---------------------------------------------------------------------------------
// Op replay with timers (mirrors src/model/model.c; keep in sync — checked at run time).

enum {
    P_EMBED_F, P_NORM_F, P_QKV_F, P_ROPE_F, P_ATT_F, P_O_F, P_GU_F, P_SWIGLU_F, P_DOWN_F,
    P_SILU_F, P_RESID, P_HEAD_F, P_CE,
    P_HEAD_B, P_DOWN_B, P_SWIGLU_B, P_GU_B, P_NORM_B, P_O_B, P_ATT_B, P_ROPE_B, P_QKV_B,
    P_SILU_B, P_EMBED_B, P_MEMSET, P_ZERO, P_CLIP, P_ADAMW, P_N
};
static const char *const P_NAMES[P_N] = {
    "fwd  embedding", "fwd  rmsnorm", "fwd  q,k,v linears (GEMM)", "fwd  rope", "fwd  attention core",
    "fwd  o linear (GEMM)", "fwd  gate,up linears (GEMM)", "fwd  swiglu (g*u)", "fwd  down linear (GEMM)",
    "fwd  SiLU in bottlenecks", "fwd  residual adds", "fwd  LM head (GEMM)", "fwd+bwd cross-entropy",
    "bwd  LM head (GEMM)", "bwd  down linear (GEMM)", "bwd  swiglu", "bwd  gate,up linears (GEMM)",
    "bwd  rmsnorm", "bwd  o linear (GEMM)", "bwd  attention core", "bwd  rope",
    "bwd  q,k,v linears (GEMM)", "bwd  SiLU in bottlenecks", "bwd  embedding", "bwd  memsets",
    "opt  zero grads", "opt  grad-norm clip", "opt  AdamW",
};
static const int P_IS_GEMM[P_N] = {
    [P_QKV_F] = 1, [P_O_F] = 1, [P_GU_F] = 1, [P_DOWN_F] = 1, [P_HEAD_F] = 1,
    [P_HEAD_B] = 1, [P_DOWN_B] = 1, [P_GU_B] = 1, [P_O_B] = 1, [P_QKV_B] = 1,
};

typedef struct { double s[P_N], flops[P_N]; } Prof;

#define TIMED(P, slot, fl, stmt) do { double t0_ = now_seconds(); stmt; \
    (P)->s[slot] += now_seconds() - t0_; (P)->flops[slot] += (fl); } while (0)

static int kv_dim(const ModelConfig *c) { return c->n_kv_heads * (c->d_model / c->n_heads); }
static int gate_silu(const ModelConfig *c) { return c->linear != LINEAR_COLA || !c->only_lr_act; }

static void rp_linear_fwd(Prof *P, int slot, const ModelConfig *c, float *y, LowRankActs *la,
                          const float *x, const LinearW *w, int N, int din, int dout, int r) {
    if (c->linear == LINEAR_DENSE) {
        TIMED(P, slot, 2.0 * N * din * dout, matmul_forward(y, x, w->W, N, din, dout, 0));
        return;
    }
    TIMED(P, slot, 2.0 * N * din * r, matmul_forward(la->h, x, w->A, N, din, r, 0));
    if (c->linear == LINEAR_COLA) TIMED(P, P_SILU_F, 0, silu_forward(la->z, la->h, (size_t)N * r));
    TIMED(P, slot, 2.0 * N * r * dout, matmul_forward(y, la->z, w->B, N, r, dout, 0));
}

static void rp_linear_bwd(Prof *P, int slot, const ModelConfig *c, float *dx, LinearW *dw,
                          const float *dy, const float *x, const LowRankActs *la, const LinearW *w,
                          int N, int din, int dout, int r, float *dz, float *dh) {
    if (c->linear == LINEAR_DENSE) {
        TIMED(P, slot, 4.0 * N * din * dout, matmul_backward(dx, dw->W, dy, x, w->W, N, din, dout));
        return;
    }
    size_t nr = (size_t)N * r;
    TIMED(P, P_MEMSET, 0, memset(dz, 0, nr * sizeof(float)));
    TIMED(P, slot, 4.0 * N * r * dout, matmul_backward(dz, dw->B, dy, la->z, w->B, N, r, dout));
    const float *dpre = dz;
    if (c->linear == LINEAR_COLA) {
        TIMED(P, P_MEMSET, 0, memset(dh, 0, nr * sizeof(float)));
        TIMED(P, P_SILU_B, 0, silu_backward(dh, dz, la->h, nr));
        dpre = dh;
    }
    TIMED(P, slot, 4.0 * N * din * r, matmul_backward(dx, dw->A, dpre, x, w->A, N, din, r));
}

typedef struct { float *dx, *da, *dq, *dk, *dv, *dy, *dg, *du, *dgu, *dz, *dh; } RpScratch;

static void rp_scratch_alloc(RpScratch *s, const ModelConfig *c, int N) {
    size_t d = c->d_model, kvd = kv_dim(c), ff = c->d_ff;
    size_t r = c->rank_attn > c->rank_mlp ? c->rank_attn : c->rank_mlp;
    if (r < 1) r = 1;
    s->dx = xaligned_alloc(N * d * 4); s->da = xaligned_alloc(N * d * 4);
    s->dq = xaligned_alloc(N * d * 4); s->dk = xaligned_alloc(N * kvd * 4); s->dv = xaligned_alloc(N * kvd * 4);
    s->dy = xaligned_alloc(N * d * 4);
    s->dg = xaligned_alloc(N * ff * 4); s->du = xaligned_alloc(N * ff * 4); s->dgu = xaligned_alloc(N * ff * 4);
    s->dz = xaligned_alloc(N * r * 4); s->dh = xaligned_alloc(N * r * 4);
}
static void rp_scratch_free(RpScratch *s) {
    free(s->dx); free(s->da); free(s->dq); free(s->dk); free(s->dv); free(s->dy);
    free(s->dg); free(s->du); free(s->dgu); free(s->dz); free(s->dh);
}

// Full-T×T attention FLOPs (as the MFU formula counts them): QK^T and PV, 2 each.
static double att_flops(int B, int T, int H, int hd) { return 4.0 * B * H * (double)T * T * hd; }

static double rp_forward(Prof *P, Model *mdl, const int32_t *inputs, const int32_t *targets) {
    const ModelConfig *c = &mdl->cfg;
    Acts *A = &mdl->acts;
    int B = mdl->B, T = mdl->T, N = mdl->N, d = c->d_model, H = c->n_heads, Hkv = c->n_kv_heads;
    int hd = d / H, kvd = kv_dim(c), ff = c->d_ff, ra = c->rank_attn, rm = c->rank_mlp, V = c->vocab_size;
    size_t Nd = (size_t)N * d;
    memcpy(A->inputs, inputs, (size_t)N * sizeof(int32_t));
    memcpy(A->targets, targets, (size_t)N * sizeof(int32_t));
    TIMED(P, P_EMBED_F, 0, embedding_forward(A->layers[0].x, inputs, mdl->w.embed, N, d));
    for (int l = 0; l < c->n_layers; l++) {
        LayerW *w = &mdl->w.layers[l];
        LayerActs *la = &A->layers[l];
        float *x_out = l + 1 < c->n_layers ? A->layers[l + 1].x : A->x_final;
        TIMED(P, P_NORM_F, 0, rmsnorm_forward(la->a, la->rstd1, la->x, w->input_norm, N, d, c->norm_eps));
        rp_linear_fwd(P, P_QKV_F, c, la->q, &la->lq, la->a, &w->q, N, d, d, ra);
        rp_linear_fwd(P, P_QKV_F, c, la->k, &la->lk, la->a, &w->k, N, d, kvd, ra);
        rp_linear_fwd(P, P_QKV_F, c, la->v, &la->lv, la->a, &w->v, N, d, kvd, ra);
        TIMED(P, P_ROPE_F, 0, rope_forward(la->q, B, T, H, hd, c->rope_theta));
        TIMED(P, P_ROPE_F, 0, rope_forward(la->k, B, T, Hkv, hd, c->rope_theta));
        TIMED(P, P_ATT_F, att_flops(B, T, H, hd),
              attention_forward(la->y, la->att, la->q, la->k, la->v, B, T, H, Hkv, hd));
        rp_linear_fwd(P, P_O_F, c, la->x_mid, &la->lo, la->y, &w->o, N, d, d, ra);
        TIMED(P, P_RESID, 0, add_inplace(la->x_mid, la->x, Nd));
        TIMED(P, P_NORM_F, 0, rmsnorm_forward(la->m, la->rstd2, la->x_mid, w->post_attn_norm, N, d, c->norm_eps));
        rp_linear_fwd(P, P_GU_F, c, la->g, &la->lg, la->m, &w->gate, N, d, ff, rm);
        rp_linear_fwd(P, P_GU_F, c, la->u, &la->lu, la->m, &w->up, N, d, ff, rm);
        TIMED(P, P_SWIGLU_F, 0, swiglu_forward(la->gu, la->g, la->u, (size_t)N * ff, gate_silu(c)));
        rp_linear_fwd(P, P_DOWN_F, c, x_out, &la->ld, la->gu, &w->down, N, ff, d, rm);
        TIMED(P, P_RESID, 0, add_inplace(x_out, la->x_mid, Nd));
    }
    TIMED(P, P_NORM_F, 0, rmsnorm_forward(A->xf, A->rstdf, A->x_final, mdl->w.final_norm, N, d, c->norm_eps));
    if (mdl->w.lm_head)
        TIMED(P, P_HEAD_F, 2.0 * N * d * V, matmul_forward(A->logits, A->xf, mdl->w.lm_head, N, d, V, 0));
    else
        TIMED(P, P_HEAD_F, 2.0 * N * d * V, matmul_forward_wt(A->logits, A->xf, mdl->w.embed, N, d, V, 0));
    double sum;
    TIMED(P, P_CE, 0, sum = crossentropy_forward_backward(NULL, A->losses, A->logits, targets, N, V, 0.0f));
    return sum / N;
}

static void rp_backward(Prof *P, Model *mdl, RpScratch *s, float loss_scale) {
    const ModelConfig *c = &mdl->cfg;
    Acts *A = &mdl->acts;
    int B = mdl->B, T = mdl->T, N = mdl->N, d = c->d_model, H = c->n_heads, Hkv = c->n_kv_heads;
    int hd = d / H, kvd = kv_dim(c), ff = c->d_ff, ra = c->rank_attn, rm = c->rank_mlp, V = c->vocab_size;
    size_t Nd = (size_t)N * d, Nff = (size_t)N * ff;
    TIMED(P, P_CE, 0, crossentropy_forward_backward(A->logits, A->losses, A->logits, A->targets, N, V, loss_scale));
    TIMED(P, P_MEMSET, 0, memset(s->da, 0, Nd * sizeof(float)));
    if (mdl->w.lm_head)
        TIMED(P, P_HEAD_B, 4.0 * N * d * V, matmul_backward(s->da, mdl->dw.lm_head, A->logits, A->xf, mdl->w.lm_head, N, d, V));
    else
        TIMED(P, P_HEAD_B, 4.0 * N * d * V, matmul_backward_wt(s->da, mdl->dw.embed, A->logits, A->xf, mdl->w.embed, N, d, V));
    TIMED(P, P_MEMSET, 0, memset(s->dx, 0, Nd * sizeof(float)));
    TIMED(P, P_NORM_B, 0, rmsnorm_backward(s->dx, mdl->dw.final_norm, s->da, A->x_final, mdl->w.final_norm, A->rstdf, N, d));
    for (int l = c->n_layers - 1; l >= 0; l--) {
        LayerW *w = &mdl->w.layers[l], *dw = &mdl->dw.layers[l];
        LayerActs *la = &A->layers[l];
        TIMED(P, P_MEMSET, 0, memset(s->dgu, 0, Nff * sizeof(float)));
        rp_linear_bwd(P, P_DOWN_B, c, s->dgu, &dw->down, s->dx, la->gu, &la->ld, &w->down, N, ff, d, rm, s->dz, s->dh);
        TIMED(P, P_MEMSET, 0, memset(s->dg, 0, Nff * sizeof(float)); memset(s->du, 0, Nff * sizeof(float)));
        TIMED(P, P_SWIGLU_B, 0, swiglu_backward(s->dg, s->du, s->dgu, la->g, la->u, Nff, gate_silu(c)));
        TIMED(P, P_MEMSET, 0, memset(s->da, 0, Nd * sizeof(float)));
        rp_linear_bwd(P, P_GU_B, c, s->da, &dw->gate, s->dg, la->m, &la->lg, &w->gate, N, d, ff, rm, s->dz, s->dh);
        rp_linear_bwd(P, P_GU_B, c, s->da, &dw->up, s->du, la->m, &la->lu, &w->up, N, d, ff, rm, s->dz, s->dh);
        TIMED(P, P_NORM_B, 0, rmsnorm_backward(s->dx, dw->post_attn_norm, s->da, la->x_mid, w->post_attn_norm, la->rstd2, N, d));
        TIMED(P, P_MEMSET, 0, memset(s->dy, 0, Nd * sizeof(float)));
        rp_linear_bwd(P, P_O_B, c, s->dy, &dw->o, s->dx, la->y, &la->lo, &w->o, N, d, d, ra, s->dz, s->dh);
        TIMED(P, P_MEMSET, 0, memset(s->dq, 0, Nd * sizeof(float));
              memset(s->dk, 0, (size_t)N * kvd * sizeof(float)); memset(s->dv, 0, (size_t)N * kvd * sizeof(float)));
        TIMED(P, P_ATT_B, 2.0 * att_flops(B, T, H, hd),
              attention_backward(s->dq, s->dk, s->dv, s->dy, la->q, la->k, la->v, la->att, B, T, H, Hkv, hd));
        TIMED(P, P_ROPE_B, 0, rope_backward(s->dq, B, T, H, hd, c->rope_theta));
        TIMED(P, P_ROPE_B, 0, rope_backward(s->dk, B, T, Hkv, hd, c->rope_theta));
        TIMED(P, P_MEMSET, 0, memset(s->da, 0, Nd * sizeof(float)));
        rp_linear_bwd(P, P_QKV_B, c, s->da, &dw->q, s->dq, la->a, &la->lq, &w->q, N, d, d, ra, s->dz, s->dh);
        rp_linear_bwd(P, P_QKV_B, c, s->da, &dw->k, s->dk, la->a, &la->lk, &w->k, N, d, kvd, ra, s->dz, s->dh);
        rp_linear_bwd(P, P_QKV_B, c, s->da, &dw->v, s->dv, la->a, &la->lv, &w->v, N, d, kvd, ra, s->dz, s->dh);
        TIMED(P, P_NORM_B, 0, rmsnorm_backward(s->dx, dw->input_norm, s->da, la->x, w->input_norm, la->rstd1, N, d));
    }
    TIMED(P, P_EMBED_B, 0, embedding_backward(mdl->dw.embed, s->dx, A->inputs, N, d));
}

// ---------------------------------------------------------------------------------

typedef struct {
    LinearKind kind;
    int64_t params;
    double flops_per_token;
    double ms_step, ms_best, ms_fwd, ms_bwd, ms_opt;
    double tokens_per_s, mfu;
    double first_loss, last_loss;
    int profiled;
    Prof prof;
    double prof_total_s, replay_loss_diff, replay_norm_rel;
} KindResult;

static void fill_random(int32_t *x, size_t n, int V, Rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)(rng_next(r) % (uint64_t)V);
}

static void usage(void) {
    fprintf(stderr,
            "usage: bench [--preset NAME] [--seq T] [--batch B] [--steps N] [--warmup W]\n"
            "             [--linears dense,cola,svd] [--threads N] [--profile R | --no-profile]\n"
            "             [--json OUT] [--set key=value]...\n"
            );
    exit(EXIT_BAD_INPUT);
}

static int parse_int(const char *opt, const char *v, int lo) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > 1000000) die_input("%s expects an integer >= %d, got '%s'", opt, lo, v);
    return (int)x;
}

static void run_kind(KindResult *R, const Config *cfg, int batch, int steps, int warmup, int profile) {
    const ModelConfig *mc = &cfg->model;
    const TrainConfig *tc = &cfg->train;
    Model mdl;
    model_init(&mdl, mc, batch, mc->seq_len, tc->seed);
    int N = mdl.N;
    int32_t *in = xmalloc((size_t)N * sizeof(int32_t)), *tg = xmalloc((size_t)N * sizeof(int32_t));
    Rng rng = { .state = 0x5eed0000u + (uint64_t)mc->linear };
    R->kind = mc->linear;
    R->params = model_param_count(mc);
    R->flops_per_token = model_train_flops_per_token(mc);
    double sum = 0, best = 1e30, fwd = 0, bwd = 0, opt = 0;
    for (int s = 0; s < warmup + steps; s++) {
        fill_random(in, (size_t)N, mc->vocab_size, &rng);
        fill_random(tg, (size_t)N, mc->vocab_size, &rng);
        double t0 = now_seconds();
        model_zero_grads(&mdl);
        double loss = model_forward(&mdl, in, tg);
        double t1 = now_seconds();
        model_backward(&mdl, 1.0f / (float)N);
        double t2 = now_seconds();
        clip_grad_norm(&mdl, tc->grad_clip);
        adamw_step(&mdl, tc, lr_at(tc, s), s + 1);
        double t3 = now_seconds();
        if (!isfinite(loss)) die_input("bench: loss is %f at step %d", loss, s + 1);
        if (s == 0) R->first_loss = loss;
        R->last_loss = loss;
        if (s >= warmup) {
            double dt = t3 - t0;
            sum += dt; if (dt < best) best = dt;
            fwd += t1 - t0; bwd += t2 - t1; opt += t3 - t2;
        }
    }
    R->ms_step = 1e3 * sum / steps;
    R->ms_best = 1e3 * best;
    R->ms_fwd = 1e3 * fwd / steps; R->ms_bwd = 1e3 * bwd / steps; R->ms_opt = 1e3 * opt / steps;
    R->tokens_per_s = N / (sum / steps);

    if (profile > 0) {
        // `profile` replays, each checked against the real drivers on the same batch
        // (reference run first, then the timed replay). Per op the MINIMUM over the
        // replays is kept: interference from other processes only ever adds time.
        RpScratch sc;
        rp_scratch_alloc(&sc, mc, N);
        Prof *P = &R->prof;
        for (int i = 0; i < P_N; i++) P->s[i] = 1e30;
        R->prof_total_s = 1e30;
        for (int rep = 0; rep < profile; rep++) {
            fill_random(in, (size_t)N, mc->vocab_size, &rng);
            fill_random(tg, (size_t)N, mc->vocab_size, &rng);
            model_zero_grads(&mdl);
            double loss_ref = model_forward(&mdl, in, tg);
            model_backward(&mdl, 1.0f / (float)N);
            double norm_ref = sqrt(sumsq(mdl.grads, mdl.table.n_params));
            Prof one;
            memset(&one, 0, sizeof one);
            int t = warmup + steps + rep;
            double t0 = now_seconds();
            TIMED(&one, P_ZERO, 0, model_zero_grads(&mdl));
            double loss_rp = rp_forward(&one, &mdl, in, tg);
            rp_backward(&one, &mdl, &sc, 1.0f / (float)N);
            double norm_rp = 0;
            TIMED(&one, P_CLIP, 0, norm_rp = clip_grad_norm(&mdl, tc->grad_clip));
            TIMED(&one, P_ADAMW, 0, adamw_step(&mdl, tc, lr_at(tc, t), t + 1));
            double wall = now_seconds() - t0;
            if (wall < R->prof_total_s) R->prof_total_s = wall;
            for (int i = 0; i < P_N; i++) {
                if (one.s[i] < P->s[i]) P->s[i] = one.s[i];
                P->flops[i] = one.flops[i];
            }
            double dl = fabs(loss_rp - loss_ref), dn = fabs(norm_rp - norm_ref) / (norm_ref > 0 ? norm_ref : 1);
            if (dl > R->replay_loss_diff) R->replay_loss_diff = dl;
            if (dn > R->replay_norm_rel) R->replay_norm_rel = dn;
        }
        R->profiled = 1;
        rp_scratch_free(&sc);
    }
    free(in); free(tg);
    model_free(&mdl);
}

static void print_profile(const KindResult *R, double peak, int n_rep) {
    const Prof *P = &R->prof;
    double total = 0;
    for (int i = 0; i < P_N; i++) total += P->s[i];
    printf("\nper-op time, %s (min over %d replayed steps; replay = model.c: loss diff %.1e, grad-norm rel diff %.1e%s)\n",
           linear_kind_name(R->kind), n_rep, R->replay_loss_diff, R->replay_norm_rel,
           R->replay_loss_diff > 1e-6 || R->replay_norm_rel > 1e-5 ? "  WARNING: replay drifted from model.c" : "");
    printf("  %-30s %9s %6s %9s %7s\n", "op", "ms", "share", "GFLOP/s", "%peak");
    int order[P_N];
    for (int i = 0; i < P_N; i++) order[i] = i;
    for (int i = 1; i < P_N; i++)  // by time, descending
        for (int j = i; j > 0 && P->s[order[j]] > P->s[order[j - 1]]; j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
    double gemm_s = 0, gemm_fl = 0;
    for (int k = 0; k < P_N; k++) {
        int i = order[k];
        if (P->s[i] <= 0) continue;
        if (P_IS_GEMM[i]) { gemm_s += P->s[i]; gemm_fl += P->flops[i]; }
        if (P->s[i] < 1e-4 * total) continue;
        if (P->flops[i] > 0)
            printf("  %-30s %9.2f %5.1f%% %9.1f %6.1f%%\n", P_NAMES[i], 1e3 * P->s[i], 100 * P->s[i] / total,
                   P->flops[i] / P->s[i] * 1e-9, 100 * P->flops[i] / P->s[i] * 1e-9 / peak);
        else
            printf("  %-30s %9.2f %5.1f%%\n", P_NAMES[i], 1e3 * P->s[i], 100 * P->s[i] / total);
    }
    printf("  %-30s %9.2f %5.1f%% %9.1f %6.1f%%\n", "all linear/head GEMMs", 1e3 * gemm_s, 100 * gemm_s / total,
           gemm_fl / gemm_s * 1e-9, 100 * gemm_fl / gemm_s * 1e-9 / peak);
    printf("  %-30s %9.2f %5.1f%%   (replayed step wall %.2f ms vs measured mean %.2f ms)\n", "non-GEMM (everything else)",
           1e3 * (total - gemm_s), 100 * (total - gemm_s) / total, 1e3 * R->prof_total_s, R->ms_step);
}

static void json_write(const char *path, const KindResult *res, int n, const Config *base, int batch,
                       int steps, int warmup, int threads, double peak) {
    FILE *f = fopen(path, "w");
    CHECK_ERRNO(!f, path);
    const char *wp = getenv("OMP_WAIT_POLICY");
    fprintf(f, "{\"engine\": \"boost-c\", \"preset\": \"%s\", \"batch\": %d, \"seq\": %d, \"steps\": %d, "
               "\"warmup\": %d, \"threads\": %d, \"peak_gflops\": %.3f, \"openblas_parallel\": %d, "
               "\"omp_wait_policy\": \"%s\", \"results\": [\n",
            base->model.preset, batch, base->model.seq_len, steps, warmup, threads, peak,
            openblas_get_parallel(), wp ? wp : "");
    for (int i = 0; i < n; i++) {
        const KindResult *R = &res[i];
        fprintf(f, "  {\"kind\": \"%s\", \"params\": %lld, \"flops_per_token\": %.6g, \"ms_per_step\": %.4f, "
                   "\"ms_best\": %.4f, \"ms_fwd\": %.4f, \"ms_bwd\": %.4f, \"ms_opt\": %.4f, "
                   "\"tokens_per_s\": %.3f, \"mfu\": %.5f, \"first_loss\": %.6f, \"last_loss\": %.6f",
                linear_kind_name(R->kind), (long long)R->params, R->flops_per_token, R->ms_step, R->ms_best,
                R->ms_fwd, R->ms_bwd, R->ms_opt, R->tokens_per_s, R->mfu, R->first_loss, R->last_loss);
        if (R->profiled) {
            fprintf(f, ", \"ops_ms\": {");
            for (int k = 0; k < P_N; k++)
                fprintf(f, "%s\"%s\": %.4f", k ? ", " : "", P_NAMES[k], 1e3 * R->prof.s[k]);
            fprintf(f, "}");
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "]}\n");
    CHECK_ERRNO(fclose(f) != 0, path);
}

int main(int argc, char **argv) {
    ensure_passive_omp(argv);   // see core/env.h: OpenMP spin-waiting starves OpenBLAS
    const char *preset = "cola-60m", *linears = "dense,cola,svd", *json = NULL;
    int seq = 256, batch = 4, steps = 6, warmup = 2, threads = 0, profile = 3;
    const char **sets = xcalloc((size_t)argc, sizeof(char *));
    int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && (v || (die_input("%s needs a value", name), 0)) && ++i)
        if (OPT("--preset")) preset = v;
        else if (OPT("--seq")) seq = parse_int(a, v, 1);
        else if (OPT("--batch")) batch = parse_int(a, v, 1);
        else if (OPT("--steps")) steps = parse_int(a, v, 1);
        else if (OPT("--warmup")) warmup = parse_int(a, v, 0);
        else if (OPT("--linears")) linears = v;
        else if (OPT("--threads")) threads = parse_int(a, v, 0);
        else if (OPT("--json")) json = v;
        else if (OPT("--set")) sets[n_sets++] = v;
        else if (OPT("--profile")) profile = parse_int(a, v, 0);
        else if (strcmp(a, "--no-profile") == 0) profile = 0;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) usage();
        else { fprintf(stderr, "bench: unknown argument '%s'\n", a); usage(); }
#undef OPT
    }
    threads = set_threads(threads);

    // kinds
    LinearKind kinds[8];
    int n_kinds = 0;
    char buf[256];
    xsnprintf(buf, sizeof buf, "%s", linears);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n_kinds == 8) die_input("--linears: at most 8 entries");
        if (!strcmp(tok, "dense")) kinds[n_kinds++] = LINEAR_DENSE;
        else if (!strcmp(tok, "cola")) kinds[n_kinds++] = LINEAR_COLA;
        else if (!strcmp(tok, "svd")) kinds[n_kinds++] = LINEAR_SVD;
        else die_input("--linears: unknown kind '%s' (expected dense, cola, svd)", tok);
    }
    if (n_kinds == 0) die_input("--linears: empty");

    Config cfgs[8];
    for (int k = 0; k < n_kinds; k++) {
        Config *c = &cfgs[k];
        config_defaults(c);
        char kv[128];
        xsnprintf(kv, sizeof kv, "model.preset=%s", preset); config_set_override(c, kv);
        xsnprintf(kv, sizeof kv, "model.linear=%s", linear_kind_name(kinds[k])); config_set_override(c, kv);
        xsnprintf(kv, sizeof kv, "model.seq_len=%d", seq); config_set_override(c, kv);
        for (int i = 0; i < n_sets; i++) config_set_override(c, sets[i]);
        config_finalize(c);
    }

    // The sgemm "peak" is a 0.4 s measurement: another process on the machine during it
    // lowers it (and inflates MFU). It is measured again after every kind; the maximum
    // of all measurements is used.
    double peaks[9];
    int n_peaks = 0;
    peaks[n_peaks++] = measure_sgemm_peak_gflops();
    double peak = peaks[0];
    const ModelConfig *m0 = &cfgs[0].model;
    printf("bench | preset %s: L=%d d=%d H=%d/%d d_ff=%d V=%d | batch %d x seq %d = %d tokens/step | "
           "%d timed steps after %d warm-up | %d threads | sgemm peak (first) %.1f GFLOP/s\n",
           preset, m0->n_layers, m0->d_model, m0->n_heads, m0->n_kv_heads, m0->d_ff, m0->vocab_size,
           batch, seq, batch * seq, steps, warmup, threads, peak);
    // Threading setup: libgomp's wait policy and OpenBLAS's threading model decide how the
    // two thread pools share the cores (docs/benchmarks.md) — record them with the numbers.
    int par = openblas_get_parallel();
    const char *wp = getenv("OMP_WAIT_POLICY");
    printf("threading | OpenBLAS %s (%s, core %s) | OMP_WAIT_POLICY=%s\n", openblas_get_config(),
           par == 0 ? "sequential" : par == 1 ? "pthreads" : par == 2 ? "OpenMP" : "?",
           openblas_get_corename(), wp ? wp : "(unset)");
    fflush(stdout);

    KindResult res[8];
    memset(res, 0, sizeof res);
    for (int k = 0; k < n_kinds; k++) {
        run_kind(&res[k], &cfgs[k], batch, steps, warmup, profile);
        peaks[n_peaks] = measure_sgemm_peak_gflops();
        if (peaks[n_peaks] > peak) peak = peaks[n_peaks];
        n_peaks++;
        fprintf(stderr, "  %s done: %.1f ms/step\n", linear_kind_name(kinds[k]), res[k].ms_step);
    }
    printf("sgemm peak measurements (GFLOP/s):");
    for (int i = 0; i < n_peaks; i++) printf(" %.1f", peaks[i]);
    printf(" -> using the maximum, %.1f\n", peak);
    for (int k = 0; k < n_kinds; k++)
        res[k].mfu = res[k].tokens_per_s * res[k].flops_per_token / (peak * 1e9);
    const KindResult *dense = NULL;
    for (int k = 0; k < n_kinds; k++) if (res[k].kind == LINEAR_DENSE) dense = &res[k];

    printf("\n| kind  | params  | train GFLOP/token | ms/step | tokens/s | MFU   | speed-up vs dense "
           "| FLOP ratio dense/kind | speed-up ÷ FLOP ratio |\n");
    printf("|-------|---------|-------------------|---------|----------|-------|-------------------"
           "|-----------------------|-----------------------|\n");
    for (int k = 0; k < n_kinds; k++) {
        const KindResult *R = &res[k];
        char su[32] = "-", fr[32] = "-", eff[32] = "-";
        if (dense) {
            double s = dense->ms_step / R->ms_step, f = dense->flops_per_token / R->flops_per_token;
            snprintf(su, sizeof su, "%.2fx", s);
            snprintf(fr, sizeof fr, "%.2fx", f);
            snprintf(eff, sizeof eff, "%.2f", s / f);
        }
        printf("| %-5s | %6.2fM | %17.4f | %7.1f | %8.0f | %4.1f%% | %17s | %21s | %21s |\n",
               linear_kind_name(R->kind), R->params / 1e6, R->flops_per_token / 1e9, R->ms_step,
               R->tokens_per_s, 100 * R->mfu, su, fr, eff);
    }
    printf("\n| kind  | fwd ms | bwd ms | clip+AdamW ms | best step ms | loss first→last |\n");
    printf("|-------|--------|--------|---------------|--------------|-----------------|\n");
    for (int k = 0; k < n_kinds; k++) {
        const KindResult *R = &res[k];
        printf("| %-5s | %6.1f | %6.1f | %13.1f | %12.1f | %6.3f → %6.3f |\n", linear_kind_name(R->kind),
               R->ms_fwd, R->ms_bwd, R->ms_opt, R->ms_best, R->first_loss, R->last_loss);
    }
    if (profile)
        for (int k = 0; k < n_kinds; k++) print_profile(&res[k], peak, profile);

    printf("\ntargets:\n");
    if (dense)
        printf("  dense MFU %.1f%% of the measured sgemm peak (target >= 50%%): %s\n", 100 * dense->mfu,
               dense->mfu >= 0.5 ? "met" : "MISSED");
    for (int k = 0; k < n_kinds; k++) {
        if (!dense || res[k].kind == LINEAR_DENSE) continue;
        double s = dense->ms_step / res[k].ms_step, f = dense->flops_per_token / res[k].flops_per_token;
        printf("  %s speed-up %.2fx = %.2f of the FLOP ratio %.2fx (target >= 0.80): %s\n",
               linear_kind_name(res[k].kind), s, s / f, f, s / f >= 0.8 ? "met" : "MISSED");
    }
    if (json) {
        json_write(json, res, n_kinds, &cfgs[0], batch, steps, warmup, threads, peak);
        printf("wrote %s\n", json);
    }
    free(sets);
    return 0;
}
