// kind_svd.c — the plain low-rank linear y = (x @ A) @ B, A [d_in, r], B [r, d_out]: the
// bottleneck has no activation, so its latent z is the bottleneck buffer h (BTP: P) itself,
// and every bottleneck hook is the identity.
#include "model_internal.h"

static int svd_own_z(const ModelConfig *c) { (void)c; return 0; }     // z is h

// BTP: Z is P, dP is dZ.
static void svd_bn_forward(Model *m, const Bn *b, int p0, void *Z, void *P, LinearW *const *W, int gl, const Lat *prev,
                           const Lat *out) {
    (void)m; (void)b; (void)p0; (void)Z; (void)P; (void)W; (void)gl; (void)prev; (void)out;
}
static void svd_bn_recompute(Model *m, const Bn *b, void *Z, void *P, LinearW *const *W, int gl) {
    (void)m; (void)b; (void)Z; (void)P; (void)W; (void)gl;
}
static void *svd_bn_backward(Model *m, const Bn *b, int p0, void *dZ, void *P, LinearW *const *W, LinearW *const *dW,
                             int gl, const Lat *prev, Scratch *s) {
    (void)m; (void)b; (void)p0; (void)P; (void)W; (void)dW; (void)gl; (void)prev; (void)s;
    return dZ;
}

const Kind kind_svd = {
    .name = "svd", .silu = 0, KIND_FACTOR_PAIR, .own_z = svd_own_z,
    .bn_forward = svd_bn_forward, .bn_recompute = svd_bn_recompute, .bn_backward = svd_bn_backward,
};
