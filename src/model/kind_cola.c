// kind_cola.c — CoLA's low-rank linear y = σ(x @ A) @ B with σ = SiLU in the bottleneck,
// A [d_in, r], B [r, d_out] (paper notes §1). SiLU adds no parameter and is elementwise: the
// sizes are those of the factor pair. Under BTP σ runs on the all-reduced bottleneck P, on its
// own buffer Z.
#include "model_internal.h"

static int cola_own_z(const ModelConfig *c) { (void)c; return 1; }    // z = σ(h)

// BTP: Z = σ(P) on the payload segments. Z is always a buffer of its own (cola_own_z); the
// ops never depend on the pointers (the dry back end has none: tests/test_flops.c).
static void cola_bn_recompute(Model *m, const Bn *b, void *Z, void *P, LinearW *const *W, int gl) {
    (void)W; (void)gl;
    size_t off[3], len; int ns = bn_segments(b, off, &len);
    for (int i = 0; i < ns; i++) op_silu_forward(m->bk, at(m, Z, off[i]), at(m, P, off[i]), len);
}
static void cola_bn_forward(Model *m, const Bn *b, int p0, void *Z, void *P, LinearW *const *W, int gl, const Lat *prev,
                            const Lat *out) {
    (void)p0; (void)prev; (void)out;
    cola_bn_recompute(m, b, Z, P, W, gl);
}
// dP = dZ ⊙ σ'(P) into the scratch's dpb (overwritten).
static void *cola_bn_backward(Model *m, const Bn *b, int p0, void *dZ, void *P, LinearW *const *W, LinearW *const *dW,
                              int gl, const Lat *prev, Scratch *s) {
    (void)p0; (void)W; (void)dW; (void)gl; (void)prev;
    size_t off[3], len; int ns = bn_segments(b, off, &len);
    for (int i = 0; i < ns; i++)
        op_silu_backward(m->bk, at(m, s->dpb, off[i]), at(m, dZ, off[i]), at(m, P, off[i]), len);
    return s->dpb;
}

const Kind kind_cola = {
    .name = "cola", .silu = 1, KIND_FACTOR_PAIR, .own_z = cola_own_z,
    .bn_forward = cola_bn_forward, .bn_recompute = cola_bn_recompute, .bn_backward = cola_bn_backward,
};
