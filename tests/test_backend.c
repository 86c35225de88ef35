// test_backend.c — the back-end seam itself (src/backend/): buffers and their accounting,
// bf16 rounding, the dry back end (nothing allocated, nothing computed, everything counted),
// the op records the observer sees (FLOPs, shapes, labels), the timing wrapper, and the whole
// model on the dry and on the bf16 CPU back end against the fp32 reference.
#include <math.h>
#include <stdint.h>
#include "testlib.h"
#include "backend/ops.h"
#include "backend/profile.h"
#include "backend/bf16.h"
#include "core/rng.h"
#include "model/model.h"
#include "parallel/comm.h"
#include "train/optimizer.h"
TL_MAIN_DEFS

TEST(buffers_and_accounting) {
    Backend *b = backend_cpu(DT_F32);
    float *x = bk_alloc(b, 100, DT_F32, MEM_ACTS);
    uint16_t *h = bk_alloc(b, 50, DT_BF16, MEM_PARAMS);
    EXPECT(x && h, "allocation");
    EXPECT(b->mem[MEM_ACTS] == 400 && b->mem[MEM_PARAMS] == 100 && b->mem_total == 500 && b->mem_peak == 500,
           "accounting: acts %zu params %zu total %zu peak %zu", b->mem[MEM_ACTS], b->mem[MEM_PARAMS], b->mem_total, b->mem_peak);
    int zeroed = 1;
    for (int i = 0; i < 100; i++) if (x[i] != 0.0f) zeroed = 0;
    EXPECT(zeroed, "bk_alloc must return zeroed memory");
    // copy2d: a [3, 4] block out of a [3, 10] matrix into a [3, 5] one
    float src[30], dst[15];
    for (int i = 0; i < 30; i++) src[i] = (float)i;
    for (int i = 0; i < 15; i++) dst[i] = -1.0f;
    op_copy2d(b, dst, 5, src + 2, 10, 3, 4, DT_F32);
    int ok = 1;
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 4; c++) if (dst[r * 5 + c] != src[r * 10 + 2 + c]) ok = 0;
        if (dst[r * 5 + 4] != -1.0f) ok = 0;   // outside the block: untouched
    }
    EXPECT(ok, "copy2d");
    op_add2d(b, dst, 5, src + 2, 10, 3, 4);
    ok = 1;
    for (int r = 0; r < 3; r++) for (int c = 0; c < 4; c++) if (dst[r * 5 + c] != 2 * src[r * 10 + 2 + c]) ok = 0;
    EXPECT(ok, "add2d");
    EXPECT(bk_at_t(x, 3, DT_F32) == (void *)(x + 3) && bk_at_t(h, 3, DT_BF16) == (void *)(h + 3) &&
           bk_at_t(NULL, 7, DT_F32) == NULL, "bk_at offsets");
    bk_free(b, x, 100, DT_F32, MEM_ACTS);
    bk_free(b, h, 50, DT_BF16, MEM_PARAMS);
    EXPECT(b->mem_total == 0 && b->mem_peak == 500, "after free: total %zu peak %zu", b->mem_total, b->mem_peak);
    backend_free(b);
}

TEST(bf16_round_to_nearest_even) {
    // exact values survive; halfway cases go to the even mantissa; NaN stays NaN; the cast op
    // does the same as the scalar conversion on a whole buffer
    float exact[] = { 0.0f, 1.0f, -2.5f, 65280.0f, 1.0f / 1024 };
    for (int i = 0; i < 5; i++) EXPECT(bf16_to_f32(bf16_from_f32(exact[i])) == exact[i], "exact %g", exact[i]);
    uint32_t one = 0x3f800000u, half_ulp = 0x8000u;   // 1 + 2^-8 is halfway between 1 and 1 + 2^-7
    float f; uint32_t u = one + half_ulp; memcpy(&f, &u, 4);
    EXPECT(bf16_from_f32(f) == 0x3f80, "halfway below an even mantissa rounds down: %04x", bf16_from_f32(f));
    u = 0x3f818000u; memcpy(&f, &u, 4);   // halfway above an odd mantissa rounds up to even
    EXPECT(bf16_from_f32(f) == 0x3f82, "halfway above an odd mantissa rounds up: %04x", bf16_from_f32(f));
    EXPECT(isnan(bf16_to_f32(bf16_from_f32(NAN))), "NaN");
    Backend *b = backend_cpu(DT_F32);
    Rng r = { 5 };
    float src[257], back[257]; uint16_t mid[257];
    for (int i = 0; i < 257; i++) src[i] = (rng_uniform(&r) - 0.5f) * 1000.0f;
    op_cast(b, mid, DT_BF16, src, DT_F32, 257);
    op_cast(b, back, DT_F32, mid, DT_BF16, 257);
    int ok = 1;
    for (int i = 0; i < 257; i++) {
        if (mid[i] != bf16_from_f32(src[i])) ok = 0;
        if (fabsf(back[i] - src[i]) > fabsf(src[i]) * (1.0f / 256)) ok = 0;   // half an ulp of 8 bits
    }
    EXPECT(ok, "cast fp32 -> bf16 -> fp32");
    backend_free(b);
}

// What the observer saw: names, FLOPs, shapes, labels.
TEST(op_records_and_dry_backend) {
    Backend *b = backend_dry(DT_BF16);
    OpProfile p;
    op_profile_attach(&p, b, 0, 1);
    void *x = bk_alloc(b, 1 << 20, DT_BF16, MEM_ACTS);
    EXPECT(x == NULL && b->mem[MEM_ACTS] == (size_t)2 << 20, "dry: NULL and counted (%zu bytes)", b->mem[MEM_ACTS]);
    bk_label(b, PHASE_BACKWARD, 7);
    op_gemm(b, TR_N, TR_T, 64, 128, 32, 1.0f, NULL, 32, NULL, 32, 0.0f, NULL, 128);   // dry: NULL buffers are fine
    op_attention_forward(b, NULL, NULL, NULL, NULL, NULL, 2, 16, 4, 2, 8);
    op_silu_forward(b, NULL, NULL, 1000);
    EXPECT(p.n_trace == 3, "%zu records", p.n_trace);
    if (p.n_trace == 3) {
        const OpInfo *g = &p.trace[0].op;
        EXPECT(!strcmp(g->name, "gemm") && g->cls == OPC_GEMM && g->M == 64 && g->N == 128 && g->K == 32 &&
               g->flops == 2.0 * 64 * 128 * 32 && g->phase == PHASE_BACKWARD && g->layer == 7 && g->dtype == DT_BF16,
               "gemm record: %s cls %d %dx%dx%d flops %g phase %d layer %d", g->name, g->cls, g->M, g->N, g->K,
               g->flops, g->phase, g->layer);
        EXPECT(g->bytes == 2.0 * (64 * 32 + 32 * 128 + 64 * 128), "gemm bytes %g (bf16, beta 0)", g->bytes);
        const OpInfo *a = &p.trace[1].op;   // causal: 2 GEMM-equivalents over s(s+1)/2 pairs per head
        EXPECT(a->cls == OPC_ATTENTION && a->flops == 2 * 2.0 * 8 * (2.0 * 4 * 16 * 17 / 2), "attention flops %g", a->flops);
        EXPECT(p.trace[2].op.bytes == 2.0 * 2 * 1000, "silu bytes %g", p.trace[2].op.bytes);
    }
    OpAggregate t = op_profile_total(&p, PHASE_BACKWARD);
    EXPECT(t.calls == 3 && t.seconds == 0, "aggregate over the backward phase: %ld calls", t.calls);
    op_profile_detach(&p);
    bk_free(b, x, 1 << 20, DT_BF16, MEM_ACTS);
    backend_free(b);
}

static ModelConfig tiny(LinearKind k) {
    ModelConfig c = {0};
    c.linear = k; c.vocab_size = 64; c.n_layers = 2; c.d_model = 32; c.n_heads = 4; c.n_kv_heads = 2;
    c.d_ff = 48; c.rank_attn = k == LINEAR_DENSE ? 0 : 8; c.rank_mlp = c.rank_attn; c.seq_len = 16;
    c.only_lr_act = 1; c.norm_eps = 1e-6f; c.rope_theta = 10000.0f; c.embed_std = 0.02f;
    c.lax_gate = LAX_GATE_KRON;   // LaX defaults (cola base, LayerNorm: the zero values)
    return c;
}
static void batch(int32_t *in, int32_t *tg, int n) {
    Rng r = { 17 };
    for (int i = 0; i < n; i++) { in[i] = (int32_t)(rng_next(&r) % 64); tg[i] = (int32_t)(rng_next(&r) % 64); }
}

// The whole model on the dry back end at tp 4 (virtual grid): no memory, no math, and the same
// collectives and the same op sequence (names, shapes) as the real model at tp 1 plus the
// layout's: here just that the run completes and its records are consistent.
TEST(model_on_the_dry_backend) {
    for (int k = 1; k <= 3; k++) {   // cola, svd, LaX (defaults)
        Comm c; comm_init_virtual(&c, 4, 1, 1);
        Backend *dry = backend_dry(DT_F32);
        OpProfile p; op_profile_attach(&p, dry, 0, 0);
        BoostConfig boost = { .btp = 1, .online_rmsnorm = 1, .grouping = 1, .lowrank_ckpt = 1 };
        Model m;
        ModelConfig cfg = tiny((LinearKind)k);
        cfg.n_kv_heads = 4;   // divisible by tp
        model_init_parallel(&m, &cfg, 2, 16, 1, &c, &boost, 1, dry, 1);
        EXPECT(m.params == NULL && m.act_memory == NULL && dry->mem[MEM_ACTS] == m.act_bytes,
               "dry model: buffers NULL, %zu activation bytes counted", dry->mem[MEM_ACTS]);
        model_stage_forward(&m, 0, NULL, NULL);
        model_stage_backward(&m, 0, 1.0f);
        CommStat f = comm_stats_sum(&c, COMM_ALL_REDUCE, PHASE_FORWARD, GROUP_TP, 0);
        EXPECT(f.calls == 4, "layer 0 forward all-reduces: %llu (grouped online BTP: 4)", (unsigned long long)f.calls);
        OpAggregate rec = op_profile_total(&p, PHASE_RECOMPUTE), fwd = op_profile_total(&p, PHASE_FORWARD);
        EXPECT(rec.calls > 0 && rec.flops < fwd.flops, "low-rank recompute ops: %ld calls, %.0f FLOPs (forward %.0f)",
               rec.calls, rec.flops, fwd.flops);
        CommStat r = comm_stats_sum(&c, COMM_ANY, PHASE_RECOMPUTE, COMM_ANY, COMM_ANY);
        EXPECT(r.calls == 0, "low-rank recompute issued %llu collectives", (unsigned long long)r.calls);
        op_profile_detach(&p);
        model_free(&m);
        EXPECT(dry->mem_total == 0, "dry: %zu bytes still counted after model_free", dry->mem_total);
        backend_free(dry);
        comm_free(&c);
    }
}

// One step of the same model on the bf16 CPU back end against fp32: bf16 storage rounds every
// tensor to 8 significant bits (2^-9 relative), so the loss agrees to ~1e-2 relative and the
// gradients to a few percent of their scale (measured at d 128: relative RMS error 1.2-1.6 %
// per tensor; at d 32 the smallest gradients, sums of cancelling terms, reach 16 %, so the
// test uses d 128); the master weights stay fp32 and the bf16
// parameters are their rounding. (docs/gpu.md states the bounds; the CUDA path is checked
// against the same numbers.)
TEST(bf16_step_tracks_fp32) {
    for (int k = 0; k <= 3; k++) {   // dense, cola, svd, LaX (defaults: cola base, kron gate, LayerNorm)
        ModelConfig cfg = tiny((LinearKind)k);
        cfg.lax_gate = LAX_GATE_KRON;
        cfg.d_model = 128; cfg.d_ff = 192;
        if (k) cfg.rank_attn = cfg.rank_mlp = 32;
        Backend *b32 = backend_cpu(DT_F32), *b16 = backend_cpu(DT_BF16);
        Model m32, m16;
        model_init_parallel(&m32, &cfg, 2, 16, 3, comm_single(), NULL, 1, b32, 1);
        model_init_parallel(&m16, &cfg, 2, 16, 3, comm_single(), NULL, 1, b16, 1);
        int32_t in[32], tg[32]; batch(in, tg, 32);
        model_zero_grads(&m32); model_zero_grads(&m16);
        double l32 = model_forward(&m32, in, tg), l16 = model_forward(&m16, in, tg);
        model_backward(&m32, 1.0f / 32); model_backward(&m16, 1.0f / 32);
        EXPECT(fabs(l16 - l32) <= 1e-2 * fabs(l32), "%s: bf16 loss %.6f vs fp32 %.6f", linear_kind_name((LinearKind)k), l16, l32);
        size_t n = m32.table.n_params;
        float *g32 = malloc(n * 4), *g16 = malloc(n * 4);
        model_get_grads(&m32, g32); model_get_grads(&m16, g16);
        int bad = 0;
        for (int i = 0; i < m32.table.n_specs; i++) {
            const ParamSpec *s = &m32.table.specs[i];
            double num = 0, den = 0;
            for (size_t j = 0; j < s->numel; j++) {
                double d = (double)g16[s->offset + j] - g32[s->offset + j];
                num += d * d; den += (double)g32[s->offset + j] * g32[s->offset + j];
            }
            double rel = sqrt(num / (den > 0 ? den : 1));   // normalised RMS error of the tensor
            if (!(rel <= 0.05) && bad++ < 3) EXPECT(0, "%s: %s gradient relative RMS error %.3g", linear_kind_name((LinearKind)k), s->name, rel);
        }
        // the optimizer keeps fp32 master weights; the bf16 parameters are their rounding
        Optimizer o; optimizer_init(&o, &m16, 0);
        TrainConfig tc = { .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .adam_eps = 1e-8, .weight_decay = 0.1 };
        optimizer_step(&o, &m16, &tc, 1e-2, 1);
        float *master = malloc(n * 4), *p16 = malloc(n * 4);
        optimizer_state_to_host(&o, &m16, master, NULL, NULL);
        model_get_params(&m16, p16);
        int ok = o.mixed;
        for (size_t j = 0; j < n; j++) if (p16[j] != bf16_to_f32(bf16_from_f32(master[j]))) ok = 0;
        EXPECT(ok, "%s: the bf16 parameters are not the rounding of the fp32 master weights", linear_kind_name((LinearKind)k));
        optimizer_free(&o);
        free(g32); free(g16); free(master); free(p16);
        model_free(&m32); model_free(&m16);
        backend_free(b32); backend_free(b16);
    }
}

// The timing wrapper on the real CPU back end: every op timed, nothing lost or invented.
TEST(timing_wrapper_counts_every_op) {
    ModelConfig cfg = tiny(LINEAR_COLA);
    Backend *b = backend_cpu(DT_F32);
    Model m; model_init_parallel(&m, &cfg, 2, 16, 3, comm_single(), NULL, 1, b, 1);
    int32_t in[32], tg[32]; batch(in, tg, 32);
    OpProfile untimed, timed;
    op_profile_attach(&untimed, b, 0, 1);
    model_forward(&m, in, tg); model_backward(&m, 1.0f / 32);
    size_t n_untimed = untimed.n_trace;
    double fl_untimed = op_profile_total(&untimed, -1).flops;
    op_profile_detach(&untimed);
    op_profile_attach(&timed, b, 1, 1);
    model_forward(&m, in, tg); model_backward(&m, 1.0f / 32);
    OpAggregate t = op_profile_total(&timed, -1);
    EXPECT(timed.n_trace == n_untimed && t.flops == fl_untimed && t.seconds > 0,
           "timed run saw %zu ops (%.0f FLOPs, %.3g s), untimed %zu (%.0f FLOPs)", timed.n_trace, t.flops, t.seconds,
           n_untimed, fl_untimed);
    int all_timed = 1;
    for (size_t i = 0; i < timed.n_trace; i++) if (timed.trace[i].seconds < 0) all_timed = 0;
    EXPECT(all_timed, "negative op time");
    op_profile_detach(&timed);
    model_free(&m);
    backend_free(b);
}

int main(void) {
    RUN(buffers_and_accounting);
    RUN(bf16_round_to_nearest_even);
    RUN(op_records_and_dry_backend);
    RUN(model_on_the_dry_backend);
    RUN(bf16_step_tracks_fp32);
    RUN(timing_wrapper_counts_every_op);
    TL_EXIT();
}
