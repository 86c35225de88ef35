// kind_lax.c — LaX (latent crossing, docs/lax.md) on a cola or svd base: each projection of
// layer l ≥ 1 adds a gated copy of the same projection's latent of layer l−1 to its own
// bottleneck before the up factor: U = x@A + g(Z_prev), Z = σ(LN(U)), y = Z@B.
//
// Sizes (docs/lax.md §4-§5): layers 1 .. L−1 add to each of their 7 projections a crossing of
// that projection's width r (r_a for q,k,v,o; r_m for gate,up,down), layer 0 none:
//   parameters  gate: identity 0 | dense r² + r | kron r1² + r2²   + norm: layernorm 2r | none 0
//   FLOPs       those the gate ops report (model/flops.h): identity 0 (an add) | dense
//               (2r² + r) + (4r² + r) | kron 2r(r1 + r2) + 2r(2r1 + 3r2) per token.
#include <stdio.h>
#include "kind.h"
#include "flops.h"

static int64_t crossing_params(const ModelConfig *m, int64_t r) {
    int64_t g = 0;
    if (m->lax_gate == LAX_GATE_DENSE) g = r * r + r;
    else if (m->lax_gate == LAX_GATE_KRON) {
        int r1, r2;
        lax_kron_factors((int)r, &r1, &r2);
        g = (int64_t)r1 * r1 + (int64_t)r2 * r2;
    }
    return g + (m->lax_norm == LAX_NORM_LAYERNORM ? 2 * r : 0);
}
static double crossing_flops(const ModelConfig *m, int r) {
    if (m->lax_gate == LAX_GATE_DENSE) return flops_dense_gate_forward(1, r) + flops_dense_gate_backward(1, r);
    if (m->lax_gate == LAX_GATE_KRON) {
        int r1, r2;
        lax_kron_factors(r, &r1, &r2);
        return flops_kron_gate_forward(1, r1, r2) + flops_kron_gate_backward(1, r1, r2);
    }
    return 0;
}

static int64_t lax_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer) {
    return kind_factor_params(m, din, dout, r, layer) + (layer >= 1 ? crossing_params(m, r) : 0);
}
static double lax_flops(const ModelConfig *m, int din, int dout, int r, int layer) {
    return kind_factor_flops(m, din, dout, r, layer) + (layer >= 1 ? crossing_flops(m, r) : 0);
}
static void lax_describe(const ModelConfig *m, char *buf, size_t n) {
    static const char *const base[] = { "cola", "svd" }, *const gate[] = { "identity", "dense", "kron" },
                             *const norm[] = { "layernorm", "none" };
    snprintf(buf, n, "LaX base %s, gate %s, norm %s: layers 1..%d add 7 crossings of %lld + %lld parameters "
             "(attn/mlp), %.0f + %.0f FLOPs/token each", base[m->lax_base], gate[m->lax_gate], norm[m->lax_norm],
             m->n_layers - 1, (long long)crossing_params(m, m->rank_attn), (long long)crossing_params(m, m->rank_mlp),
             crossing_flops(m, m->rank_attn), crossing_flops(m, m->rank_mlp));
}

const Kind kind_lax = {
    .name = "lax", .lowrank = 1, .latent = 1,
    .linear_params = lax_params, .linear_flops = lax_flops, .describe = lax_describe,
};
