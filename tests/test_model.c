// test_model.c — whole-model properties: parameter table vs closed-form counts,
// layout-independent init, gradients of every tensor vs finite differences (dense,
// cola, svd; MHA and GQA; tied and untied; odd shapes), determinism.
#include "testlib.h"
#include "../src/config/config.h"
#include "../src/core/rng.h"
#include "../src/model/model.h"
TL_MAIN_DEFS

static ModelConfig small_cfg(LinearKind kind, int odd) {
    ModelConfig c = {0};
    c.linear = kind;
    if (odd) {  // odd sizes everywhere: d=30, 3 heads (hd=10), 1 kv head, d_ff=38, ranks 7/5
        c.vocab_size = 37; c.n_layers = 2; c.d_model = 30; c.n_heads = 3; c.n_kv_heads = 1;
        c.d_ff = 38; c.rank_attn = 7; c.rank_mlp = 5; c.seq_len = 5;
    } else {
        c.vocab_size = 64; c.n_layers = 2; c.d_model = 32; c.n_heads = 4; c.n_kv_heads = 2;
        c.d_ff = 48; c.rank_attn = 8; c.rank_mlp = 8; c.seq_len = 8;
    }
    if (kind == LINEAR_DENSE) c.rank_attn = c.rank_mlp = 0;
    c.only_lr_act = 1; c.norm_eps = 1e-6f; c.rope_theta = 10000.0f; c.embed_std = 0.02f;
    return c;
}

static void random_batch(int32_t *in, int32_t *tg, int n, int V, uint64_t seed) {
    Rng r = { seed };
    for (int i = 0; i < n; i++) { in[i] = (int32_t)(rng_next(&r) % V); tg[i] = (int32_t)(rng_next(&r) % V); }
}

// The parameter table must hold exactly model_param_count() values for every preset
// and linear kind (the table is what is allocated; the formula is what the paper says).
TEST(param_table_matches_closed_form) {
    const char *const *names = preset_names();
    for (int i = 0; names[i]; i++) {
        for (int k = 0; k < 3; k++) {
            Config cfg; config_defaults(&cfg);
            cfg.model.rank_attn = cfg.model.rank_mlp = 0;
            EXPECT(preset_apply(names[i], &cfg.model), "preset %s unknown", names[i]);
            cfg.model.linear = (LinearKind)k;
            if (k == LINEAR_DENSE) cfg.model.rank_attn = cfg.model.rank_mlp = 0;
            config_finalize(&cfg);
            ParamTable t; param_table_build(&t, &cfg.model, NULL);
            int64_t sum = 0;
            for (int j = 0; j < t.n_specs; j++) sum += (int64_t)t.specs[j].numel;
            int64_t want = model_param_count(&cfg.model);
            EXPECT(sum == want, "%s/%s: table %lld vs formula %lld", names[i], linear_kind_name(k),
                   (long long)sum, (long long)want);
            param_table_free(&t);
        }
    }
}

// Element j of a parameter depends only on (seed, name, j): a slice drawn on its own
// equals the same slice of the full tensor (what a tensor-parallel rank will do).
TEST(init_is_layout_independent) {
    ModelConfig c = small_cfg(LINEAR_COLA, 0);
    Model m; model_init(&m, &c, 1, c.seq_len, 42);
    const ParamSpec *s = param_find(&m.table, "model/layers/1/mlp/down/A");
    EXPECT(s != NULL, "tensor missing");
    if (s) {
        float slice[16];
        fill_normal(slice, 16, seed_for_name(42, s->name), 24, s->init_std);
        EXPECT(memcmp(slice, ((float *)m.params) + s->offset + 24, sizeof slice) == 0, "slice differs");
        double sq = 0; for (size_t j = 0; j < s->numel; j++) sq += (double)((float *)m.params)[s->offset + j] * ((float *)m.params)[s->offset + j];
        double std = sqrt(sq / s->numel);
        EXPECT(fabs(std - s->init_std) < 0.15 * s->init_std, "std %g vs %g", std, s->init_std);
    }
    model_free(&m);
}

// Directional finite differences, one tensor at a time: for a random direction u that
// is non-zero only in tensor P, (L(p+εu) - L(p-εu)) / 2ε must equal <dL/dP, u>.
// The loss is a double sum of fp32 token losses; with ε = 1e-3 and |u| entries O(1),
// fp32 rounding in the forward (~1e-7 relative on a loss ~4) contributes ~1e-4 absolute
// to the difference quotient, and curvature O(ε²). ε is scaled to each tensor's RMS
// (ε = 5e-3·rms): the embedding (std 0.02) feeds an RMSNorm that divides by ~0.02, so a
// fixed ε = 1e-3 would be a 5% perturbation there and curvature would dominate.
// Tolerance: |fd - an| <= 2e-3 + 2e-2*|an|.
static void check_grads(LinearKind kind, int odd, int tied, int only_lr_act, const char *label) {
    ModelConfig c = small_cfg(kind, odd);
    c.tie_embeddings = tied; c.only_lr_act = only_lr_act;
    int B = 2, T = c.seq_len, N = B * T;
    Model m; model_init(&m, &c, B, T, 7);
    // make the norms non-trivial so their gradients are exercised
    for (int i = 0; i < m.table.n_specs; i++) {
        const ParamSpec *s = &m.table.specs[i];
        if (s->init == INIT_ONES) fill_normal(((float *)m.params) + s->offset, s->numel, 99 + i, 0, 0.3f);
        if (s->init == INIT_ONES) for (size_t j = 0; j < s->numel; j++) ((float *)m.params)[s->offset + j] += 1.0f;
    }
    int32_t in[64], tg[64];
    random_batch(in, tg, N, c.vocab_size, 3);
    model_zero_grads(&m);
    model_forward(&m, in, tg);
    model_backward(&m, 1.0f / N);
    int bad = 0;
    for (int i = 0; i < m.table.n_specs; i++) {
        const ParamSpec *s = &m.table.specs[i];
        float *p = ((float *)m.params) + s->offset;
        float *save = malloc(s->numel * sizeof(float));
        float *u = malloc(s->numel * sizeof(float));
        memcpy(save, p, s->numel * sizeof(float));
        double ms = 0; for (size_t j = 0; j < s->numel; j++) ms += (double)save[j] * save[j];
        float eps = (float)(5e-3 * sqrt(ms / s->numel));
        if (eps < 1e-5f) eps = 1e-5f;
        fill_normal(u, s->numel, 1234 + i, 0, 1.0f);
        double an = 0;
        for (size_t j = 0; j < s->numel; j++) an += (double)((float *)m.grads)[s->offset + j] * u[j];
        for (size_t j = 0; j < s->numel; j++) p[j] = save[j] + eps * u[j];
        double lp = model_forward(&m, in, tg);
        for (size_t j = 0; j < s->numel; j++) p[j] = save[j] - eps * u[j];
        double lm = model_forward(&m, in, tg);
        memcpy(p, save, s->numel * sizeof(float));
        double fd = (lp - lm) / (2.0 * eps);
        if (!(fabs(fd - an) <= 2e-3 + 2e-2 * fabs(an))) {
            if (bad++ < 5) EXPECT(0, "%s: %s: finite difference %.6g vs analytic %.6g", label, s->name, fd, an);
        }
        free(save); free(u);
    }
    model_free(&m);
}

TEST(grad_dense) { check_grads(LINEAR_DENSE, 0, 0, 1, "dense"); }
TEST(grad_cola) { check_grads(LINEAR_COLA, 0, 0, 1, "cola"); }
TEST(grad_cola_silu_gate) { check_grads(LINEAR_COLA, 0, 0, 0, "cola only_lr_act=0"); }
TEST(grad_svd) { check_grads(LINEAR_SVD, 0, 0, 1, "svd"); }
TEST(grad_dense_odd_tied) { check_grads(LINEAR_DENSE, 1, 1, 1, "dense odd tied"); }
TEST(grad_cola_odd) { check_grads(LINEAR_COLA, 1, 0, 1, "cola odd"); }
TEST(grad_svd_odd_tied) { check_grads(LINEAR_SVD, 1, 1, 1, "svd odd tied"); }

// A fresh model's loss is close to ln(V) (near-uniform predictions at init), and two
// identical forward/backward passes give bit-identical loss and gradients.
TEST(initial_loss_and_determinism) {
    ModelConfig c = small_cfg(LINEAR_COLA, 0);
    int B = 2, N = B * c.seq_len;
    Model m; model_init(&m, &c, B, c.seq_len, 5);
    int32_t in[64], tg[64]; random_batch(in, tg, N, c.vocab_size, 8);
    model_zero_grads(&m);
    double l1 = model_forward(&m, in, tg); model_backward(&m, 1.0f / N);
    float *g1 = malloc(m.table.n_params * sizeof(float));
    memcpy(g1, ((float *)m.grads), m.table.n_params * sizeof(float));
    model_zero_grads(&m);
    double l2 = model_forward(&m, in, tg); model_backward(&m, 1.0f / N);
    EXPECT(fabs(l1 - log((double)c.vocab_size)) < 0.2, "initial loss %g vs ln V %g", l1, log((double)c.vocab_size));
    EXPECT(l1 == l2, "loss not bit-identical: %.17g vs %.17g", l1, l2);
    EXPECT(memcmp(g1, ((float *)m.grads), m.table.n_params * sizeof(float)) == 0, "gradients not bit-identical");
    free(g1); model_free(&m);
}

int main(void) {
    RUN(param_table_matches_closed_form);
    RUN(init_is_layout_independent);
    RUN(grad_dense);
    RUN(grad_cola);
    RUN(grad_cola_silu_gate);
    RUN(grad_svd);
    RUN(grad_dense_odd_tied);
    RUN(grad_cola_odd);
    RUN(grad_svd_odd_tied);
    RUN(initial_loss_and_determinism);
    TL_EXIT();
}
