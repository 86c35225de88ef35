// kind.c — the registry of linear kinds: one line per kind (kind.h).
#include "model_internal.h"
#include "flops.h"
#include "../core/check.h"

static const Kind *const kinds[] = {
    [LINEAR_DENSE] = &kind_dense,
    [LINEAR_COLA] = &kind_cola,
    [LINEAR_SVD] = &kind_svd,
    [LINEAR_LAX] = &kind_lax,
};

const Kind *kind_of(const ModelConfig *m) {
    int n = (int)(sizeof kinds / sizeof kinds[0]);
    CHECK((int)m->linear >= 0 && (int)m->linear < n && kinds[m->linear], "model.linear = %d has no registered kind (model/kind.c)",
          (int)m->linear);
    return kinds[m->linear];
}

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
void kind_factor_forward(Model *m, void *y, LowRankActs *la, const void *x, const LinearW *w, int din, int dout, int r,
                         int p, int gl, const Lat *prev, const Lat *out) {
    (void)p; (void)gl; (void)prev; (void)out;
    factor_forward(m, y, la, x, w, m->N, din, dout, r, m->kind->silu);
}
void kind_factor_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                          const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, Scratch *s,
                          float beta_dx) {
    (void)p; (void)gl; (void)prev;
    factor_backward(m, dx, dw, dy, x, la, w, m->N, din, dout, r, s->dz, s->dh, beta_dx, m->kind->silu);
}
