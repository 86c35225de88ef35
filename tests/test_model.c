// test_model.c — whole-model properties: parameter table vs closed-form counts,
// layout-independent init, gradients of every tensor vs finite differences (dense,
// cola, svd and LaX on either base with every gate and norm; MHA and GQA; tied and untied;
// odd shapes), determinism.
#include "testlib.h"
#include "../src/config/config.h"
#include "../src/core/rng.h"
#include "../src/model/model.h"
#include "../src/parallel/comm.h"
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
    c.lax_gate = LAX_GATE_KRON;   // LaX defaults (cola base, LayerNorm: the zero values)
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
        // dense, cola, svd, then lax with every gate × norm (k = 3 .. 8)
        for (int k = 0; k < 9; k++) {
            Config cfg; config_defaults(&cfg);
            cfg.model.rank_attn = cfg.model.rank_mlp = 0;
            EXPECT(preset_apply(names[i], &cfg.model), "preset %s unknown", names[i]);
            cfg.model.linear = (LinearKind)(k < 3 ? k : LINEAR_LAX);
            if (k >= 3) { cfg.model.lax_gate = (k - 3) / 2; cfg.model.lax_norm = (k - 3) % 2; }
            if (k == LINEAR_DENSE) cfg.model.rank_attn = cfg.model.rank_mlp = 0;
            config_finalize(&cfg);
            ParamTable t; param_table_build(&t, &cfg.model, NULL);
            int64_t sum = 0;
            for (int j = 0; j < t.n_specs; j++) sum += (int64_t)t.specs[j].numel;
            int64_t want = model_param_count(&cfg.model);
            EXPECT(sum == want, "%s/%s gate %d norm %d: table %lld vs formula %lld", names[i],
                   linear_kind_name(cfg.model.linear), cfg.model.lax_gate, cfg.model.lax_norm, (long long)sum,
                   (long long)want);
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
        rng_fill_normal(slice, 16, rng_seed_for_name(42, s->name), 24, s->init_std);
        EXPECT(memcmp(slice, ((float *)m.params) + s->offset + 24, sizeof slice) == 0, "slice differs");
        double sq = 0; for (size_t j = 0; j < s->numel; j++) sq += (double)((float *)m.params)[s->offset + j] * ((float *)m.params)[s->offset + j];
        double std = sqrt(sq / s->numel);
        EXPECT(fabs(std - s->init_std) < 0.15 * s->init_std, "std %g vs %g", std, s->init_std);
    }
    model_free(&m);
}

// The LaX tensors (docs/lax.md §4): names and order after each projection's A and B in layers
// ≥ 1 only, shapes (kron (r1, r2) of r = 8 is (2, 4); of the prime 7, (1, 7)), init kinds and
// decay, replicated over TP; the kron factors drawn from U(±sqrt(6/S)) by name and index.
TEST(lax_parameter_table) {
    ModelConfig c = small_cfg(LINEAR_LAX, 1);   // ranks 7 (attn) and 5 (mlp): prime
    c.lax_gate = LAX_GATE_KRON; c.lax_norm = LAX_NORM_LAYERNORM;
    ParamTable t; param_table_build(&t, &c, NULL);
    EXPECT(param_find(&t, "model/layers/0/attn/q/lax_gate/G1") == NULL, "layer 0 has a crossing");
    const ParamSpec *B = param_find(&t, "model/layers/1/attn/q/B"), *g1 = param_find(&t, "model/layers/1/attn/q/lax_gate/G1");
    const ParamSpec *g2 = param_find(&t, "model/layers/1/attn/q/lax_gate/G2"), *ga = param_find(&t, "model/layers/1/attn/q/lax_norm/gamma");
    const ParamSpec *be = param_find(&t, "model/layers/1/mlp/down/lax_norm/beta");
    EXPECT(B && g1 && g2 && ga && be, "LaX tensors missing");
    if (B && g1 && g2 && ga && be) {
        EXPECT(g1 == B + 1 && g2 == B + 2 && ga == B + 3 && (ga + 2)->name[0] && strstr((ga + 2)->name, "attn/k/A"),
               "order: %s, %s, %s, then %s", g1->name, g2->name, ga->name, (ga + 2)->name);
        EXPECT(g1->rows == 1 && g1->cols == 1 && g2->rows == 7 && g2->cols == 7 && ga->ndim == 1 && ga->cols == 7 &&
               be->cols == 5, "shapes: G1 %lldx%lld G2 %lldx%lld gamma %lld beta %lld", (long long)g1->rows,
               (long long)g1->cols, (long long)g2->rows, (long long)g2->cols, (long long)ga->cols, (long long)be->cols);
        EXPECT(g1->init == INIT_UNIFORM && fabs(g2->init_std - sqrt(6.0 / 7)) < 1e-6 && g1->decay && g2->decay &&
               ga->init == INIT_ONES && !ga->decay && be->init == INIT_ZEROS && !be->decay, "init/decay kinds");
        float *p = calloc(t.n_params, sizeof(float));
        param_table_init_weights(&t, p, 42);
        int ok = 1;
        for (int64_t j = 0; j < 49; j++) {
            double want = g2->init_std * (2.0 * rng_uniform_at(rng_seed_for_name(42, g2->name), (uint64_t)j) - 1.0);
            if (p[g2->offset + j] != (float)want || fabs(p[g2->offset + j]) > g2->init_std) ok = 0;
        }
        for (int64_t j = 0; j < 5; j++) if (p[be->offset + j] != 0.0f || p[ga->offset + j] != 1.0f) ok = 0;
        EXPECT(ok, "kron/LayerNorm initial values");
        free(p);
    }
    param_table_free(&t);
    c.lax_gate = LAX_GATE_DENSE; c.lax_norm = LAX_NORM_NONE;
    param_table_build(&t, &c, NULL);
    const ParamSpec *W = param_find(&t, "model/layers/1/mlp/gate/lax_gate/W"), *b = param_find(&t, "model/layers/1/mlp/gate/lax_gate/b");
    EXPECT(W && b && W->rows == 5 && W->cols == 5 && W->init == INIT_NORMAL && fabsf(W->init_std - 0.02f) < 1e-7f &&
           b->init == INIT_ZEROS && !b->decay && !param_find(&t, "model/layers/1/mlp/gate/lax_norm/gamma"),
           "dense gate without norm");
    param_table_free(&t);
    int r1, r2, want[][3] = { {128, 8, 16}, {256, 16, 16}, {1024, 32, 32}, {1280, 32, 40}, {11, 1, 11}, {12, 3, 4} };
    for (int i = 0; i < 6; i++) {
        lax_kron_factors(want[i][0], &r1, &r2);
        EXPECT(r1 == want[i][1] && r2 == want[i][2], "kron factors of %d: (%d, %d)", want[i][0], r1, r2);
    }
}

// Directional finite differences, one tensor at a time: for a random direction u that
// is non-zero only in tensor P, (L(p+εu) - L(p-εu)) / 2ε must equal <dL/dP, u>.
// The loss is a double sum of fp32 token losses; with ε = 1e-3 and |u| entries O(1),
// fp32 rounding in the forward (~1e-7 relative on a loss ~4) contributes ~1e-4 absolute
// to the difference quotient, and curvature O(ε²). ε is scaled to each tensor's RMS
// (ε = 5e-3·rms): the embedding (std 0.02) feeds an RMSNorm that divides by ~0.02, so a
// fixed ε = 1e-3 would be a 5% perturbation there and curvature would dominate.
// Tolerance: |fd - an| <= 2e-3 + 2e-2*|an|.
static void check_grads_cfg(ModelConfig c, const char *label, double eps_rel) {
    int B = 2, T = c.seq_len, N = B * T;
    Model m; model_init(&m, &c, B, T, 7);
    // make the norms (and LaX's zero-initialised biases) non-trivial so their gradients are exercised
    for (int i = 0; i < m.table.n_specs; i++) {
        const ParamSpec *s = &m.table.specs[i];
        if (s->init == INIT_ONES || s->init == INIT_ZEROS) rng_fill_normal(((float *)m.params) + s->offset, s->numel, 99 + i, 0, 0.3f);
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
        float eps = (float)(eps_rel * sqrt(ms / s->numel));
        if (eps < 1e-5f) eps = 1e-5f;
        rng_fill_normal(u, s->numel, 1234 + i, 0, 1.0f);
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
static void check_grads(LinearKind kind, int odd, int tied, int only_lr_act, const char *label) {
    ModelConfig c = small_cfg(kind, odd);
    c.tie_embeddings = tied; c.only_lr_act = only_lr_act;
    check_grads_cfg(c, label, 5e-3);
}
// LaX: three layers, so that layer 1 both receives a carry (from layer 2) and sends one
// (to layer 0), for every base × gate × norm (rank 8: kron (2, 4)). ε = 1e-3·rms: the crossing chain makes the
// loss more curved in the early layers' tensors (each latent passes the later layers' gates,
// kron entries up to ±1.7, and LayerNorms), and at 5e-3·rms the O(ε²) term of the central
// difference reached 5 % on a few layer-0 tensors; at 2e-3 and 1e-3 every tensor passes.
static void check_grads_lax(int base) {
    for (int g = 0; g < 3; g++)
        for (int nrm = 0; nrm < 2; nrm++) {
            ModelConfig c = small_cfg(LINEAR_LAX, 0);
            c.n_layers = 3; c.lax_base = base; c.lax_gate = g; c.lax_norm = nrm;
            c.only_lr_act = base == LAX_BASE_COLA;
            char label[96];
            snprintf(label, sizeof label, "lax base %s gate %d norm %d", base ? "svd" : "cola", g, nrm);
            check_grads_cfg(c, label, 1e-3);
        }
}

TEST(grad_dense) { check_grads(LINEAR_DENSE, 0, 0, 1, "dense"); }
TEST(grad_cola) { check_grads(LINEAR_COLA, 0, 0, 1, "cola"); }
TEST(grad_cola_silu_gate) { check_grads(LINEAR_COLA, 0, 0, 0, "cola only_lr_act=0"); }
TEST(grad_svd) { check_grads(LINEAR_SVD, 0, 0, 1, "svd"); }
TEST(grad_dense_odd_tied) { check_grads(LINEAR_DENSE, 1, 1, 1, "dense odd tied"); }
TEST(grad_cola_odd) { check_grads(LINEAR_COLA, 1, 0, 1, "cola odd"); }
TEST(grad_svd_odd_tied) { check_grads(LINEAR_SVD, 1, 1, 1, "svd odd tied"); }
TEST(grad_lax_cola) { check_grads_lax(LAX_BASE_COLA); }
TEST(grad_lax_svd) { check_grads_lax(LAX_BASE_SVD); }
TEST(grad_lax_odd) {   // prime ranks (kron (1, 7), (1, 5)): the defaults on cola, the dense gate on svd
    ModelConfig c = small_cfg(LINEAR_LAX, 1);
    c.n_layers = 3;
    check_grads_cfg(c, "lax odd cola kron layernorm", 1e-3);
    c.lax_base = LAX_BASE_SVD; c.lax_gate = LAX_GATE_DENSE; c.lax_norm = LAX_NORM_NONE;
    check_grads_cfg(c, "lax odd svd dense none", 1e-3);
}
TEST(grad_lax_silu_gate_tied) {   // only_lr_act = 0 (SiLU on the MLP gate), tied embeddings, GQA
    ModelConfig c = small_cfg(LINEAR_LAX, 0);
    c.n_layers = 3; c.only_lr_act = 0; c.tie_embeddings = 1;
    check_grads_cfg(c, "lax silu-gate tied", 1e-3);
}

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

// A step's gradients without a zero pass (model_grads_overwrite: each gradient's first writer
// stores it) and with the loss gradient fused into the forward (model_fuse_loss_grad, tp = 1)
// are, bit for bit, those of model_zero_grads + forward/backward: two micro-batches (the second
// adds), the gradient family and the scratch filled with NaN first (0xff bytes: NaN in fp32 and
// bf16), so a gradient no op writes, or one read before its first write, shows. Every kind and
// LaX gate/norm, tied embeddings, GQA and odd shapes; fp32 and the bf16 CPU back end. Compared:
// every tensor of the table (not the alignment gaps between tensors, which no op writes and a
// run's zeroed allocation keeps at zero). Two steps of new batches: from the second on, the
// storing embedding backward zeroes only the rows the step before hit (model.h embed_live).
static int overwrite_matches(ModelConfig c, DType dt, const char *label) {
    int B = 2, T = c.seq_len, N = B * T;
    int32_t in[2][2][64], tg[2][2][64];
    for (int st = 0; st < 2; st++)
        for (int mb = 0; mb < 2; mb++) random_batch(in[st][mb], tg[st][mb], N, c.vocab_size, 21 + 2 * st + mb);
    float scale = 1.0f / (2 * N);
    Model m[2];
    for (int k = 0; k < 2; k++) {
        Backend *bk = dt == DT_F32 ? NULL : backend_cpu(dt);
        model_init_parallel(&m[k], &c, B, T, 7, comm_single(), NULL, 1, bk, 1);
    }
    memset(m[1].grads, 0xff, m[1].n_alloc * dtype_size(m[1].bk->dtype));
    memset(m[1].scratch, 0xff, m[1].scratch_bytes);
    int same = 1;
    for (int st = 0; st < 2 && same; st++) {
        double loss[2] = { 0, 0 };
        for (int k = 0; k < 2; k++) {
            if (k == 0) model_zero_grads(&m[k]);
            else {
                model_grads_overwrite(&m[k]);
                model_fuse_loss_grad(&m[k], scale);
            }
            model_loss_begin(&m[k]);
            for (int mb = 0; mb < 2; mb++) {
                model_stage_forward(&m[k], 0, in[st][mb], tg[st][mb]);
                model_stage_backward(&m[k], 0, scale);
            }
            loss[k] = model_loss_read(&m[k]);
        }
        size_t es = dtype_size(m[0].bk->dtype);
        const char *bad = NULL;   // the first tensor that differs
        for (int i = 0; i < m[0].table.n_specs && !bad; i++) {
            const ParamSpec *p = &m[0].table.specs[i];
            if (memcmp((char *)m[0].grads + p->offset * es, (char *)m[1].grads + p->offset * es, p->numel * es)) bad = p->name;
        }
        same = loss[0] == loss[1] && !bad;
        EXPECT(same, "%s (%s), step %d: %s%s", label, dtype_name(dt), st + 1,
               loss[0] != loss[1] ? "the losses differ" : "the gradient differs from zero + accumulate: ", bad ? bad : "");
    }
    for (int k = 0; k < 2; k++) {
        Backend *bk = m[k].bk;
        model_free(&m[k]);
        if (dt != DT_F32) backend_free(bk);
    }
    return same;
}
TEST(grads_overwrite_and_fused_loss_are_zero_and_accumulate) {
    for (int dt = 0; dt < 2; dt++) {
        DType t = dt ? DT_BF16 : DT_F32;
        overwrite_matches(small_cfg(LINEAR_DENSE, 0), t, "dense");
        overwrite_matches(small_cfg(LINEAR_COLA, 0), t, "cola");
        overwrite_matches(small_cfg(LINEAR_SVD, 0), t, "svd");
        ModelConfig c = small_cfg(LINEAR_DENSE, 1); c.tie_embeddings = 1;
        overwrite_matches(c, t, "dense odd tied");
        c = small_cfg(LINEAR_COLA, 1); c.tie_embeddings = 1; c.only_lr_act = 0;
        overwrite_matches(c, t, "cola odd tied silu-gate");
        for (int base = 0; base < 2; base++)
            for (int g = 0; g < 3; g++)
                for (int nrm = 0; nrm < 2; nrm++) {
                    c = small_cfg(LINEAR_LAX, 0);
                    c.n_layers = 3; c.lax_base = base; c.lax_gate = g; c.lax_norm = nrm; c.tie_embeddings = g == 1;
                    char label[96];
                    snprintf(label, sizeof label, "lax base %s gate %d norm %d%s", base ? "svd" : "cola", g, nrm,
                             c.tie_embeddings ? " tied" : "");
                    overwrite_matches(c, t, label);
                }
    }
}

// Selective recomputation (boost.selective_recompute, docs/boost.md §4) replays flash attention's
// forward from the kept q, k, v before each layer's attention backward: the same kernel on the
// same inputs, so the loss and every gradient are bit for bit those of the model that keeps y
// and the lse — for every kind, LaX's gates and norms, odd shapes, tied embeddings and GQA,
// under the Megatron block and BTP's (tp = 1), on the fp32 and bf16 CPU back ends; and it keeps
// less: the attention output and lse of every layer but one's.
static void selective_matches(ModelConfig c, int btp, DType dt, const char *label) {
    int B = 2, T = c.seq_len, N = B * T;
    int32_t in[64], tg[64];
    random_batch(in, tg, N, c.vocab_size, 31);
    Model m[2];
    double loss[2];
    for (int k = 0; k < 2; k++) {
        BoostConfig b = { .btp = btp, .online_rmsnorm = btp, .grouping = btp, .selective_recompute = k };
        Backend *bk = dt == DT_F32 ? NULL : backend_cpu(dt);
        model_init_parallel(&m[k], &c, B, T, 7, comm_single(), &b, 1, bk, 1);
        model_zero_grads(&m[k]);
        loss[k] = model_forward(&m[k], in, tg);
        model_backward(&m[k], 1.0f / N);
    }
    size_t es = dtype_size(m[0].bk->dtype);
    const char *bad = NULL;
    for (int i = 0; i < m[0].table.n_specs && !bad; i++) {
        const ParamSpec *p = &m[0].table.specs[i];
        if (memcmp((char *)m[0].grads + p->offset * es, (char *)m[1].grads + p->offset * es, p->numel * es)) bad = p->name;
    }
    EXPECT(loss[0] == loss[1] && !bad, "%s%s (%s): %s%s", label, btp ? " btp" : "", dtype_name(dt),
           loss[0] != loss[1] ? "the losses differ" : "a gradient differs: ", bad ? bad : "");
    EXPECT(m[1].ckpt == CKPT_SELECTIVE && m[1].act_bytes < m[0].act_bytes, "%s: selective keeps %zu bytes, plain %zu",
           label, m[1].act_bytes, m[0].act_bytes);
    for (int k = 0; k < 2; k++) {
        Backend *bk = m[k].bk;
        model_free(&m[k]);
        if (dt != DT_F32) backend_free(bk);
    }
}
TEST(selective_recompute_same_bits) {
    for (int dt = 0; dt < 2; dt++) {
        DType t = dt ? DT_BF16 : DT_F32;
        for (int k = 0; k < 3; k++)
            for (int odd = 0; odd < 2; odd++)
                for (int btp = 0; btp < 1 + (k != LINEAR_DENSE); btp++) {
                    ModelConfig c = small_cfg((LinearKind)k, odd);
                    c.tie_embeddings = odd;
                    char label[64];
                    snprintf(label, sizeof label, "%s%s", linear_kind_name((LinearKind)k), odd ? " odd tied" : "");
                    selective_matches(c, btp, t, label);
                }
        for (int g = 0; g < 3; g++) {
            ModelConfig c = small_cfg(LINEAR_LAX, 0);
            c.lax_gate = g; c.lax_norm = g % 2; c.n_layers = 3;
            selective_matches(c, 0, t, "lax");
            selective_matches(c, 1, t, "lax");
        }
    }
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
    RUN(lax_parameter_table);
    RUN(grad_lax_cola);
    RUN(grad_lax_svd);
    RUN(grad_lax_odd);
    RUN(grad_lax_silu_gate_tied);
    RUN(initial_loss_and_determinism);
    RUN(grads_overwrite_and_fused_loss_are_zero_and_accumulate);
    RUN(selective_recompute_same_bits);
    TL_EXIT();
}
