// linear.c — what the kinds share (kind.h, model_internal.h), below every kind's file: the
// factor pair A [d_in, r], B [r, d_out] of the low-rank kinds — its local math on this rank's
// factors (no communication: the drivers place the collectives around it), its parameters, its
// sizes — and the hooks of a kind with nothing to add.
//   cola:  y = σ(x @ A) @ B,  σ = SiLU (silu = 1)       svd: y = (x @ A) @ B (silu = 0; z is h)
#include <math.h>
#include "model_internal.h"
#include "flops.h"
#include "../core/check.h"

void factor_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                    const LinearW *w, int N, int din, int dout, int r, int silu) {
    mm_forward(m, la->h, x, w->A, N, din, r, 0.0f);                         // h = x@A   [N,r]
    if (silu) op_silu_forward(m->bk, la->z, la->h, (size_t)N * r);           // z = σ(h)
    mm_forward_to(m, y, res, add_res, la->z, w->B, N, r, dout);             // y = (res +) z@B   [N,dout]
}

void factor_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                     const LinearW *w, int N, int din, int dout, int r, void *dz, void *dh, float beta_dx, int silu) {
    size_t nr = (size_t)N * r;
    mm_backward(m, dz, dw->B, dy, la->z, w->B, N, r, dout, 0.0f);   // dz = dy@B^T, dB (+)= z^T dy
    const void *dpre = dz;
    if (silu) {
        op_silu_backward(m->bk, dh, dz, la->h, nr);              // dh = dz * σ'(h)
        dpre = dh;
    }
    mm_backward(m, dx, dw->A, dpre, x, w->A, N, din, r, beta_dx);   // dx (+)= dh@A^T, dA (+)= x^T dh
}

LinearW factor_take(ParamWalk *wk, const char *prefix, int din, int dout, int r) {
    LinearW lw = {0};
    char name[PARAM_NAME_MAX];
    int btp = wk->lay->scheme == TP_BTP;
    float std = (float)(pow((double)r, -0.25) * pow((double)(din + dout), -0.25));
    xsnprintf(name, sizeof name, "%s/A", prefix);
    lw.A = walk_take(wk, name, 2, din, r, btp ? SHARD_ROWS : SHARD_COLS, 1, INIT_NORMAL, std);
    xsnprintf(name, sizeof name, "%s/B", prefix);
    lw.B = walk_take(wk, name, 2, r, dout, btp ? SHARD_COLS : SHARD_ROWS, 1, INIT_NORMAL, std);
    return lw;
}

// ---- as the Kind table's entries (kind.h) ----------------------------------------------------
int64_t kind_factor_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer) {
    (void)m; (void)layer;
    return r * (din + dout);
}
double kind_factor_flops(const ModelConfig *m, int din, int dout, int r, int layer) {
    (void)m; (void)layer;
    double fwd = flops_gemm(1, r, din) + flops_gemm(1, dout, r);   // h = x@A, y = z@B
    return 3.0 * fwd;                                              // + dx, dW of each
}
void kind_describe_none(const ModelConfig *m, char *buf, size_t n) { (void)m; if (n) buf[0] = 0; }
const void *kind_bn_input_kept(Model *m, const Bn *b, int p0, void *P, LinearW *const *W, int gl, const Lat *prev,
                               Scratch *s) {
    (void)m; (void)b; (void)p0; (void)W; (void)gl; (void)prev; (void)s;
    return P;
}
void kind_factor_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                         const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, const Lat *out) {
    (void)p; (void)gl; (void)prev; (void)out;
    factor_forward(m, y, res, add_res, la, x, w, m->N, din, dout, r, m->kind->silu);
}
void kind_factor_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                          const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, Scratch *s,
                          float beta_dx) {
    (void)p; (void)gl; (void)prev;
    factor_backward(m, dx, dw, dy, x, la, w, m->N, din, dout, r, s->dz, s->dh, beta_dx, m->kind->silu);
}
LinearW kind_factor_take(ParamWalk *wk, const char *prefix, int din, int dout, int r, int col_parallel, int layer) {
    (void)col_parallel; (void)layer;
    return factor_take(wk, prefix, din, dout, r);
}
