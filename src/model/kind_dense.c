// kind_dense.c — the full-rank linear y = x @ W, W [d_in, d_out] (FullRank-TP: Megatron's
// column-parallel q,k,v,gate,up and row-parallel o,down). No bottleneck: BTP and
// lowrank_ckpt refuse it (params.c layout_make, config.c).
#include "model_internal.h"
#include "flops.h"
#include "../core/check.h"

// W ~ N(0, 0.02), the LLaMA/HF `initializer_range`; split along d_out (column-parallel) or
// d_in (row-parallel).
static LinearW dense_take(ParamWalk *wk, const char *prefix, int din, int dout, int r, int col_parallel, int layer) {
    (void)r; (void)layer;
    LinearW lw = {0};
    char name[PARAM_NAME_MAX];
    xsnprintf(name, sizeof name, "%s/W", prefix);
    lw.W = walk_take(wk, name, 2, din, dout, col_parallel ? SHARD_COLS : SHARD_ROWS, 1, INIT_NORMAL, 0.02f);
    return lw;
}
static int dense_own_z(const ModelConfig *c) { (void)c; return 0; }   // no bottleneck at all

static void dense_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                          const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, const Lat *out) {
    (void)la; (void)r; (void)p; (void)gl; (void)prev; (void)out;
    mm_forward_to(m, y, res, add_res, x, w->W, m->N, din, dout);           // y = (res +) x@W
}
static void dense_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                           const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, Scratch *s,
                           float beta_dx) {
    (void)la; (void)r; (void)p; (void)gl; (void)prev; (void)s;
    mm_backward(m, dx, dw->W, dy, x, w->W, m->N, din, dout, beta_dx);     // dx (+)= dy@W^T, dW (+)= x^T dy
}

static int64_t dense_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer) {
    (void)m; (void)r; (void)layer;
    return din * dout;
}
static double dense_flops(const ModelConfig *m, int din, int dout, int r, int layer) {
    (void)m; (void)r; (void)layer;
    return 3.0 * flops_gemm(1, dout, din);      // y = x@W; dx, dW
}

const Kind kind_dense = {
    .name = "dense", .lowrank = 0, .latent = 0,
    .take = dense_take, .own_z = dense_own_z,
    .forward = dense_forward, .backward = dense_backward,
    .linear_params = dense_params, .linear_flops = dense_flops, .describe = kind_describe_none,
};
