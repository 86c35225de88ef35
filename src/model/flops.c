// flops.c — the model's training FLOPs per token and its parameter counts in closed form
// (flops.h states the convention), from the kinds' per-linear counts (kind.h).
//
// Notation: L layers, d = d_model, h heads, g = n_kv_heads, hd = d/h, kv = g·hd, f = d_ff,
// V = vocab, T = seq_len, ra/rm = ranks of the attention/MLP linears. Per layer the 7 linears
//   q (d,d), k (d,kv), v (d,kv), o (d,d) at rank ra; gate (d,f), up (d,f), down (f,d) at rm,
// and two RMSNorm gains (2d). Model: Σ layers + d (final norm) + V·d (embedding) + V·d (the
// LM head unless tied).
#include "flops.h"
#include "kind.h"

typedef struct { int64_t din, dout, r; } Lin;

// The 7 linears of a layer, in the parameter table's order.
static void layer_linears(const ModelConfig *m, Lin *l) {
    int64_t d = m->d_model, f = m->d_ff;
    int64_t g = m->n_kv_heads ? m->n_kv_heads : m->n_heads;
    int64_t kv = g * (d / m->n_heads);
    int64_t ra = m->rank_attn ? m->rank_attn : d / 4, rm = m->rank_mlp ? m->rank_mlp : d / 4;
    const Lin v[7] = { { d, d, ra }, { d, kv, ra }, { d, kv, ra }, { d, d, ra }, { d, f, rm }, { d, f, rm }, { f, d, rm } };
    for (int i = 0; i < 7; i++) l[i] = v[i];
}

int64_t model_embedding_param_count(const ModelConfig *m) {
    int64_t vd = (int64_t)m->vocab_size * m->d_model;
    return m->tie_embeddings ? vd : 2 * vd;
}

int64_t model_param_count(const ModelConfig *m) {
    const Kind *k = kind_of(m);
    Lin l[7];
    layer_linears(m, l);
    int64_t d = m->d_model, total = 0;
    for (int layer = 0; layer < m->n_layers; layer++) {
        total += 2 * d;
        for (int i = 0; i < 7; i++) total += k->linear_params(m, l[i].din, l[i].dout, l[i].r, layer);
    }
    return total + d + model_embedding_param_count(m);
}

double flops_gemm_per_token(const ModelConfig *m) {
    const Kind *k = kind_of(m);
    Lin l[7];
    layer_linears(m, l);
    double total = 0;
    for (int layer = 0; layer < m->n_layers; layer++)
        for (int i = 0; i < 7; i++) total += k->linear_flops(m, (int)l[i].din, (int)l[i].dout, (int)l[i].r, layer);
    return total + 3.0 * flops_gemm(1, m->vocab_size, m->d_model);   // the LM head (tied too)
}

double flops_attention_per_token(const ModelConfig *m) {
    int T = m->seq_len, hd = m->d_model / m->n_heads;
    double seq = flops_attention_forward(1, T, m->n_heads, hd) + flops_attention_backward(1, T, m->n_heads, hd);
    return m->n_layers * (seq / T);
}

double flops_train_per_token(const ModelConfig *m) { return flops_gemm_per_token(m) + flops_attention_per_token(m); }
