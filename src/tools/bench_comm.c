// bench_comm — per-layer tensor-parallel communication of each scheme at paper scale,
// computed by the model's own drivers in accounting mode: a virtual process grid counts
// every collective the drivers issue, and the ops do no math (no buffers are allocated),
// so the table costs milliseconds even for LLaMA-7B at b = 4, s = 4096.
//   build/bench_comm [--preset boost-7b] [--tp 4] [--batch 4] [--seq 4096] [--layer 0]
// Elements are what the paper counts; bytes are given in bf16 (2 bytes per element, as
// in the paper; GiB = 2^30 bytes, which is how the paper's Fig. 7 volumes read). Elements count
// an all-gather's full output and a reduce-scatter's full input (docs/parallelism.md §3), so the
// pair that replaces an all-reduce under sequence parallelism counts twice its elements; the
// ring columns give what a rank sends in a ring — 2(g−1)/g·n for an all-reduce, (g−1)/g·n for an
// all-gather or reduce-scatter — where the two forms are equal.
#include <stdio.h>
#include "../config/config.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../model/model.h"
#include "../backend/backend.h"
#include "../parallel/comm.h"

typedef struct {
    const char *name;
    LinearKind linear;
    BoostConfig boost;
} Scheme;

typedef struct { CommStat fwd, bwd, rec; double ring[3]; } LayerComm;

// Elements a rank sends in a ring implementation of the calls of one phase (group size g).
static double ring_elements(const Comm *c, int phase, int layer, int g) {
    double f = (g - 1.0) / g;
    return 2 * f * (double)comm_stats_sum(c, COMM_ALL_REDUCE, phase, GROUP_TP, layer).elements +
           f * (double)comm_stats_sum(c, COMM_ALL_GATHER, phase, GROUP_TP, layer).elements +
           f * (double)comm_stats_sum(c, COMM_REDUCE_SCATTER, phase, GROUP_TP, layer).elements;
}

static LayerComm account(const ModelConfig *base, const Scheme *s, int tp, int B, int T, int layer) {
    ModelConfig mc = *base;
    mc.linear = s->linear;
    Comm comm;
    comm_init_virtual(&comm, tp, 1, 1);
    Backend *dry = backend_dry(DT_BF16);   // the paper's dtype: bytes below are bf16
    Model m;
    model_init_parallel(&m, &mc, B, T, 0, &comm, &s->boost, 1, dry, 1);
    comm_stats_reset(&comm);
    model_stage_forward(&m, 0, NULL, NULL);
    model_stage_backward(&m, 0, 1.0f);
    LayerComm lc;
    lc.fwd = comm_stats_sum(&comm, COMM_ANY, PHASE_FORWARD, GROUP_TP, layer);
    lc.bwd = comm_stats_sum(&comm, COMM_ANY, PHASE_BACKWARD, GROUP_TP, layer);
    lc.rec = comm_stats_sum(&comm, COMM_ANY, PHASE_RECOMPUTE, GROUP_TP, layer);
    static const int ph[3] = { PHASE_FORWARD, PHASE_BACKWARD, PHASE_RECOMPUTE };
    for (int i = 0; i < 3; i++) lc.ring[i] = ring_elements(&comm, ph[i], layer, tp);
    model_free(&m);
    backend_free(dry);
    comm_free(&comm);
    return lc;
}

int main(int argc, char **argv) {
    const char *preset = "boost-7b";
    int tp = 4, B = 4, T = 4096, layer = 0;
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_STR_ROW("preset", &preset),
        OPT_INT_ROW("tp", 1, 4096, &tp),
        OPT_INT_ROW("batch", 1, 1 << 24, &B),
        OPT_KEY_ROW("seq", "model.seq_len", &T),
        OPT_INT_ROW("layer", 0, 65535, &layer),
        OPT_END };
    opt_parse("bench_comm", opts, argc, argv, NULL, 0, NULL,
              "usage: bench_comm [--preset boost-7b] [--tp 4] [--batch 4] [--seq 4096] [--layer 0]\n"
              "Per-layer tensor-parallel communication (calls, elements, bf16 GiB; forward, backward,\n"
              "recompute) of FullRank-TP, Vanilla-TP and every BTP variant at the given shape, counted by\n"
              "the model's own drivers on the dry back end (no memory, no math), next to the paper's formulas.");
    Config cfg;
    config_defaults(&cfg);
    if (!preset_apply(preset, &cfg.model)) die_input("unknown preset '%s'", preset);
    cfg.model.linear = LINEAR_COLA;
    cfg.model.seq_len = T;
    config_finalize(&cfg);
    const ModelConfig *mc = &cfg.model;
    if (layer < 0 || layer >= mc->n_layers) die_input("--layer %d outside 0..%d", layer, mc->n_layers - 1);

    // The paper's schemes, then each with sequence parallelism (parallel.sequence_parallel:
    // Megatron-LM's form for FullRank-TP and Vanilla-TP, BTP's of docs/boost.md §8)
    enum { FULLRANK, VANILLA, BTP_GO, BTP_GS, BTP_NO, BTP_NS, BTP_LOW, VANILLA_FULL, FULLRANK_SP, VANILLA_SP, BTP_SP,
           BTP_LOW_SP };
    const Scheme schemes[] = {
        { "FullRank-TP (dense)", LINEAR_DENSE, {0} },
        { "Vanilla-TP (cola)", LINEAR_COLA, {0} },
        { "BTP, grouped, online RMSNorm", LINEAR_COLA, { .btp = 1, .online_rmsnorm = 1, .grouping = 1 } },
        { "BTP, grouped, sync RMSNorm", LINEAR_COLA, { .btp = 1, .online_rmsnorm = 0, .grouping = 1 } },
        { "BTP, not grouped, online RMSNorm", LINEAR_COLA, { .btp = 1, .online_rmsnorm = 1, .grouping = 0 } },
        { "BTP, not grouped, sync RMSNorm", LINEAR_COLA, { .btp = 1, .online_rmsnorm = 0, .grouping = 0 } },
        { "BTP + low-rank checkpointing", LINEAR_COLA, { .btp = 1, .online_rmsnorm = 1, .grouping = 1, .lowrank_ckpt = 1 } },
        { "Vanilla-TP + full recompute", LINEAR_COLA, { .full_recompute = 1 } },
        { "FullRank-TP + SP", LINEAR_DENSE, { .sequence_parallel = 1 } },
        { "Vanilla-TP + SP", LINEAR_COLA, { .sequence_parallel = 1 } },
        { "BTP, grouped, online + SP", LINEAR_COLA, { .btp = 1, .online_rmsnorm = 1, .grouping = 1, .sequence_parallel = 1 } },
        { "BTP + low-rank ckpt + SP", LINEAR_COLA,
          { .btp = 1, .online_rmsnorm = 1, .grouping = 1, .lowrank_ckpt = 1, .sequence_parallel = 1 } },
    };
    int n = (int)(sizeof schemes / sizeof schemes[0]);
    double bs = (double)B * T, d = mc->d_model, ff = mc->d_ff, r = mc->rank_attn, G = 2.0 / 1073741824.0;
    printf("per-layer tensor-parallel communication, %s shape (d %d, d_ff %d, r %d, heads %d), b %d, s %d, tp %d, layer %d\n",
           preset, mc->d_model, mc->d_ff, mc->rank_attn, mc->n_heads, B, T, tp, layer);
    printf("computed by the model drivers in accounting mode (virtual grid, no math); GiB in bf16; ring: GiB a rank sends\n"
           "in a ring (all-reduce 2(g-1)/g of its elements, all-gather and reduce-scatter (g-1)/g; SP = sequence parallelism)\n\n");
    printf("%-32s %4s %13s %8s %8s %4s %13s %8s %8s %4s %8s  %s\n", "scheme", "fwd", "fwd elements", "fwd GiB", "ring",
           "bwd", "bwd elements", "bwd GiB", "ring", "rec", "rec ring", "paper formula (fwd elements)");
    LayerComm res[16];
    for (int i = 0; i < n; i++) {
        res[i] = account(mc, &schemes[i], tp, B, T, layer);
        char formula[96] = "";
        if (i == FULLRANK) snprintf(formula, sizeof formula, "2·bsd = %.0f", 2 * bs * d);
        if (i == VANILLA) snprintf(formula, sizeof formula, "bs(5d + 2d_ff) = %.0f", bs * (5 * d + 2 * ff));
        if (i == BTP_GO || i == BTP_NO) snprintf(formula, sizeof formula, "7·bsr = %.0f (+ 2·bs stats = %.0f)", 7 * bs * r, 7 * bs * r + 2 * bs);
        if (i == BTP_GS || i == BTP_NS) snprintf(formula, sizeof formula, "7·bsr + 2·bs = %.0f", 7 * bs * r + 2 * bs);
        if (i == FULLRANK_SP) snprintf(formula, sizeof formula, "2 AG + 2 RS of bsd = %.0f", 4 * bs * d);
        printf("%-32s %4llu %13llu %8.3f %8.3f %4llu %13llu %8.3f %8.3f %4llu %8.3f  %s\n", schemes[i].name,
               (unsigned long long)res[i].fwd.calls, (unsigned long long)res[i].fwd.elements, res[i].fwd.elements * G,
               res[i].ring[0] * G, (unsigned long long)res[i].bwd.calls, (unsigned long long)res[i].bwd.elements,
               res[i].bwd.elements * G, res[i].ring[1] * G, (unsigned long long)res[i].rec.calls, res[i].ring[2] * G, formula);
    }
    double btp = (double)res[BTP_GO].fwd.elements;
    printf("\nratios of forward volume (bf16 bytes or elements alike):\n");
    printf("  FullRank-TP / BTP = %.3f   (paper: 8/7 = 1.143 at r = d/4, norm statistics excluded)\n", res[FULLRANK].fwd.elements / btp);
    printf("  Vanilla-TP  / BTP = %.3f   (paper: ~5.9 at LLaMA-7B dims)\n", res[VANILLA].fwd.elements / btp);
    printf("  paper Fig. 7 (7B, b 4, s 4096, tp 4, per layer fwd): FullRank 0.25, Vanilla 1.32, BTP 0.22 (GB as printed there)\n");
    printf("sequence parallelism, ring traffic per rank with SP / without (forward, backward):\n");
    const int pairs[4][2] = { { FULLRANK_SP, FULLRANK }, { VANILLA_SP, VANILLA }, { BTP_SP, BTP_GO }, { BTP_LOW_SP, BTP_LOW } };
    for (int i = 0; i < 4; i++) {
        const LayerComm *a = &res[pairs[i][0]], *b = &res[pairs[i][1]];
        printf("  %-32s %.3f, %.3f   (%llu -> %llu calls forward)\n", schemes[pairs[i][0]].name, a->ring[0] / b->ring[0],
               a->ring[1] / b->ring[1], (unsigned long long)b->fwd.calls, (unsigned long long)a->fwd.calls);
    }
    printf("  (Megatron-LM's form: the forward's reduce-scatter + all-gather carry what the all-reduce did; the backward also\n"
           "   gathers each normed input again, so its ring traffic is 3/2 of the all-reduce form's; docs/parallelism.md §8)\n");
    printf("  ring traffic of the forward, with SP: FullRank-TP / BTP = %.3f, Vanilla-TP / BTP = %.3f\n",
           res[FULLRANK_SP].ring[0] / res[BTP_SP].ring[0], res[VANILLA_SP].ring[0] / res[BTP_SP].ring[0]);
    return 0;
}
