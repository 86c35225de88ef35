// test_flops.c — the FLOP module (model/flops.h) against the op profile: for every linear
// kind (dense, cola, svd; lax with each gate, on both bases), one training step (forward and
// backward of a micro-batch) on the dry back end, with an observer summing the FLOPs of the
// GEMM-class and attention ops it reports outside recomputation. That sum must equal the
// module's flops_train_per_token × tokens exactly (every term is an integer below 2^53), and
// its GEMM part flops_gemm_per_token × tokens. So MFU (train/trainer.c, tools/bench.c) and
// `build/info`, which print the module's count, agree with the op profile and the simulator.
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

typedef struct { double gemm, attention; long ops; } Sum;

// Σ over the recorded trace of the GEMM-class and attention ops' FLOPs (recompute excluded).
static Sum sum_trace(const OpProfile *p) {
    Sum s = {0};
    for (size_t i = 0; i < p->n_trace; i++) {
        const OpInfo *op = &p->trace[i].op;
        if (op->phase == PHASE_RECOMPUTE) continue;
        if (op->cls == OPC_GEMM) s.gemm += op->flops;
        else if (op->cls == OPC_ATTENTION) s.attention += op->flops;
        s.ops++;
    }
    return s;
}

static void check_kind(const char *linear, const char *const *sets, const char *label) {
    Config c;
    config_defaults(&c);
    config_set_override(&c, "model.preset=tiny-odd");   // odd ranks, GQA, untied
    char a[128];
    snprintf(a, sizeof a, "model.linear=%s", linear);
    config_set_override(&c, a);
    for (; sets && *sets; sets++) config_set_override(&c, *sets);
    config_finalize(&c);
    int B = 2, T = c.model.seq_len;
    Model m;
    Backend *dry = backend_dry(DT_F32);
    model_init_parallel(&m, &c.model, B, T, 1, comm_single(), NULL, 1, dry, 1);
    OpProfile p;
    op_profile_attach(&p, dry, 0, 1);
    int32_t *tok = calloc((size_t)B * T, sizeof *tok);
    model_forward(&m, tok, tok);
    model_backward(&m, 1.0f);
    Sum s = sum_trace(&p);
    double N = (double)B * T;
    double want_gemm = flops_gemm_per_token(&c.model) * N, want = flops_train_per_token(&c.model) * N;
    EXPECT(s.ops > 0, "%s: the dry step reported no op", label);
    EXPECT(s.gemm == want_gemm, "%s: the GEMM ops report %.0f FLOPs, flops_gemm_per_token x %g tokens = %.0f", label,
           s.gemm, N, want_gemm);
    EXPECT(s.gemm + s.attention == want, "%s: the op profile sums to %.0f FLOPs (attention %.0f), "
           "flops_train_per_token x %g tokens = %.0f", label, s.gemm + s.attention, s.attention, N, want);
    free(tok);
    op_profile_detach(&p);
    model_free(&m);
    backend_free(dry);
}

TEST(step_flops_equal_op_profile) {
    check_kind("dense", NULL, "dense");
    check_kind("cola", NULL, "cola");
    check_kind("svd", NULL, "svd");
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

// The kinds' per-linear counts add up to the closed form the tests of test_config.c check by
// hand, and the registry names each kind as model.linear spells it.
TEST(registry_names_kinds) {
    for (int k = LINEAR_DENSE; k <= LINEAR_LAX; k++) {
        ModelConfig m = {0};
        m.linear = (LinearKind)k;
        EXPECT(!strcmp(kind_of(&m)->name, linear_kind_name((LinearKind)k)), "kind %d is named %s, model.linear says %s",
               k, kind_of(&m)->name, linear_kind_name((LinearKind)k));
    }
}

int main(void) {
    RUN(step_flops_equal_op_profile);
    RUN(registry_names_kinds);
    printf("\n%d passed, %d failed, %d skipped\n", tl_n_pass, tl_n_fail, tl_n_skip);
    TL_EXIT();
}
