// test_flops.c — the FLOP module (model/flops.h) against the op profile: for every linear
// kind (dense, cola, svd; lax with each gate, on both bases), one training step (forward and
// backward of a micro-batch) on the dry back end, with an observer summing the FLOPs of the
// GEMM-class and attention ops it reports outside recomputation. That sum must equal the
// module's flops_train_per_token × tokens exactly (every term is an integer below 2^53), and
// its GEMM part flops_gemm_per_token × tokens. So MFU (train/trainer.c, tools/bench.c) and
// `build/info`, which print the module's count, agree with the op profile and the simulator.
// And the dry back end runs the same ops, in the same order, as the cpu (dry_trace_equals_cpu_trace).
// At tp = 1 the step has no `add` op: the residual adds run inside their GEMMs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "../src/config/config.h"
#include "../src/model/model.h"
#include "../src/model/kind.h"
#include "../src/backend/profile.h"
#include "../src/parallel/comm.h"

TL_MAIN_DEFS

typedef struct { double gemm, attention; long ops, adds; } Sum;

// Σ over the recorded trace of the GEMM-class and attention ops' FLOPs (recompute excluded),
// and the number of `add` ops (recompute included).
static Sum sum_trace(const OpProfile *p) {
    Sum s = {0};
    for (size_t i = 0; i < p->n_trace; i++) {
        const OpInfo *op = &p->trace[i].op;
        s.adds += !strcmp(op->name, "add");
        if (op->phase == PHASE_RECOMPUTE) continue;
        if (op->cls == OPC_GEMM) s.gemm += op->flops;
        else if (op->cls == OPC_ATTENTION) s.attention += op->flops;
        s.ops++;
    }
    return s;
}

// One training step (forward and backward of a micro-batch of 2 sequences) of the tiny-odd
// preset (odd ranks, GQA, untied) with model.linear and the overrides `sets`, on bk, its op
// trace in p (detached; the caller frees it) and its configuration in c.
static void step_trace(const char *linear, const char *const *sets, Backend *bk, OpProfile *p, Config *c) {
    config_defaults(c);
    config_set_override(c, "model.preset=tiny-odd");
    char a[128];
    snprintf(a, sizeof a, "model.linear=%s", linear);
    config_set_override(c, a);
    for (; sets && *sets; sets++) config_set_override(c, *sets);
    config_finalize(c);
    int B = 2, T = c->model.seq_len;
    Model m;
    model_init_parallel(&m, &c->model, B, T, 1, comm_single(), &c->boost, 1, bk, 1);
    op_profile_attach(p, bk, 0, 1);
    int32_t *tok = calloc((size_t)B * T, sizeof *tok);
    model_forward(&m, tok, tok);
    model_backward(&m, 1.0f);
    free(tok);
    bk_observe(bk, NULL, NULL);   // detached; the trace stays
    p->bk = NULL;
    model_free(&m);
}

// The overrides of a step with boost.full_recompute, and with boost.selective_recompute (both
// tests run each: the replays are PHASE_RECOMPUTE ops, outside the model's FLOPs).
static const char *const full_recompute[] = { "boost.full_recompute=true", NULL };
static const char *const selective[] = { "boost.selective_recompute=true", NULL };

static void check_kind(const char *linear, const char *const *sets, const char *label) {
    Config c;
    Backend *dry = backend_dry(DT_F32);
    OpProfile p;
    step_trace(linear, sets, dry, &p, &c);
    Sum s = sum_trace(&p);
    double N = 2.0 * c.model.seq_len;
    double want_gemm = flops_gemm_per_token(&c.model) * N, want = flops_train_per_token(&c.model) * N;
    EXPECT(s.ops > 0, "%s: the dry step reported no op", label);
    // tp 1: the Megatron block's residual adds are inside the o and down GEMMs (layer_megatron.c)
    EXPECT(s.adds == 0, "%s: %ld add op(s) in a tp 1 step (the residual adds belong in the GEMMs)", label, s.adds);
    EXPECT(s.gemm == want_gemm, "%s: the GEMM ops report %.0f FLOPs, flops_gemm_per_token x %g tokens = %.0f", label,
           s.gemm, N, want_gemm);
    EXPECT(s.gemm + s.attention == want, "%s: the op profile sums to %.0f FLOPs (attention %.0f), "
           "flops_train_per_token x %g tokens = %.0f", label, s.gemm + s.attention, s.attention, N, want);
    op_profile_detach(&p);
    backend_free(dry);
}

TEST(step_flops_equal_op_profile) {
    check_kind("dense", NULL, "dense");
    check_kind("cola", NULL, "cola");
    check_kind("svd", NULL, "svd");
    check_kind("cola", full_recompute, "cola full recompute");
    check_kind("dense", selective, "dense selective recompute");
    static const char *const gates[][3] = {
        { "model.lax_gate=identity", "model.lax_norm=none", NULL },
        { "model.lax_gate=dense", "model.lax_norm=layernorm", NULL },
        { "model.lax_gate=kron", "model.lax_norm=layernorm", NULL },
    };
    for (int g = 0; g < 3; g++) {
        for (int base = 0; base < 2; base++) {
            const char *sets[4] = { gates[g][0], gates[g][1], base ? "model.lax_base=svd" : "model.lax_base=cola", NULL };
            char label[128];
            snprintf(label, sizeof label, "lax %s %s %s", sets[0], sets[1], sets[2]);
            check_kind("lax", sets, label);
        }
    }
}

// The dry back end allocates nothing, so a driver that chose its ops by testing a buffer
// pointer (a weight that exists or not) would run other ops on dry than on the cpu, and the
// simulator would price a step the engine never takes. One training step of each kind, tied
// and untied, records the same op trace (name, phase, layer, shape, FLOPs, bytes) on both.
static void check_same_trace(const char *linear, const char *const *sets, const char *label) {
    Backend *cpu = backend_cpu(DT_F32), *dry = backend_dry(DT_F32);
    OpProfile pc, pd;
    Config c;
    step_trace(linear, sets, cpu, &pc, &c);
    step_trace(linear, sets, dry, &pd, &c);
    EXPECT(pc.n_trace > 0 && pc.n_trace == pd.n_trace, "%s: %zu ops on cpu, %zu on dry", label, pc.n_trace, pd.n_trace);
    size_t n = pc.n_trace < pd.n_trace ? pc.n_trace : pd.n_trace;
    for (size_t i = 0; i < n; i++) {
        const OpInfo *x = &pc.trace[i].op, *y = &pd.trace[i].op;
        if (strcmp(x->name, y->name) || x->phase != y->phase || x->layer != y->layer || x->M != y->M || x->N != y->N ||
            x->K != y->K || x->count != y->count || x->flops != y->flops || x->bytes != y->bytes) {
            EXPECT(0, "%s: op %zu is %s (phase %d, layer %d, %dx%dx%d, %.0f FLOPs, %.0f B) on cpu, "
                   "%s (phase %d, layer %d, %dx%dx%d, %.0f FLOPs, %.0f B) on dry", label, i, x->name, (int)x->phase,
                   x->layer, x->M, x->N, x->K, x->flops, x->bytes, y->name, (int)y->phase, y->layer, y->M, y->N, y->K,
                   y->flops, y->bytes);
            break;
        }
    }
    op_profile_detach(&pc);
    op_profile_detach(&pd);
    backend_free(cpu);
    backend_free(dry);
}

TEST(dry_trace_equals_cpu_trace) {
    static const char *const untied[] = { NULL }, *const tied[] = { "model.tie_embeddings=true", NULL };
    static const char *const lax_sets[][4] = {
        { "model.lax_gate=identity", "model.lax_norm=none", "model.lax_base=svd", NULL },
        { "model.lax_gate=kron", "model.lax_norm=layernorm", "model.lax_base=cola", NULL },
    };
    const char *kinds[] = { "dense", "cola", "svd" };
    for (int k = 0; k < 3; k++) {
        char label[64];
        snprintf(label, sizeof label, "%s untied", kinds[k]);
        check_same_trace(kinds[k], untied, label);
        snprintf(label, sizeof label, "%s tied", kinds[k]);
        check_same_trace(kinds[k], tied, label);
    }
    check_same_trace("lax", lax_sets[0], "lax svd identity");
    check_same_trace("lax", lax_sets[1], "lax cola kron layernorm");
    static const char *const boost[] = { "boost.btp=true", "boost.online_rmsnorm=true", "boost.grouping=true",
                                         "boost.lowrank_ckpt=true", NULL };
    check_same_trace("cola", boost, "cola btp, every switch");
    check_same_trace("svd", boost, "svd btp, every switch");
    static const char *const btp_only[] = { "boost.btp=true", NULL };
    check_same_trace("cola", btp_only, "cola btp");
    check_same_trace("cola", full_recompute, "cola full recompute");
    check_same_trace("svd", selective, "svd selective recompute");
}

// The kinds' per-linear counts add up to the closed form the tests of test_config.c check by
// hand, and the registry names each kind as model.linear spells it.
TEST(registry_names_kinds) {
    for (int k = 0; k < LINEAR_KIND_COUNT; k++) {
        ModelConfig m = {0};
        m.linear = (LinearKind)k;
        EXPECT(!strcmp(kind_of(&m)->name, linear_kind_name((LinearKind)k)), "kind %d is named %s, model.linear says %s",
               k, kind_of(&m)->name, linear_kind_name((LinearKind)k));
    }
}

int main(void) {
    RUN(step_flops_equal_op_profile);
    RUN(registry_names_kinds);
    RUN(dry_trace_equals_cpu_trace);
    printf("\n%d passed, %d failed, %d skipped\n", tl_n_pass, tl_n_fail, tl_n_skip);
    TL_EXIT();
}
