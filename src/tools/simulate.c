// simulate — one training step of a manifest variant on a hardware profile, priced from the
// real drivers' traces (docs/performance-model.md):
//
//   build/simulate experiments/X.yaml [--variant V] --hardware a100-80gb-node4 [--set k=v]...
//                  [--per-layer]
//
// For every pipeline stage (seen from its tp rank 0, dp rank 0: the other ranks of a stage hold
// the same shapes up to a vocabulary row), the model and its optimizer are built on the dry
// back end over a virtual grid at that stage's coordinates (comm_init_virtual_at, account
// only), and the trainer's step runs for real: zero the gradients, the stage's fused 1F1B
// action list over the step's micro-batches (model_stage_forward / model_stage_backward and
// the pipeline sends), the loss reduction, the data-parallel gradient reduction, clipping and
// the AdamW step. Every op and every collective arrives at a SimTracer (sim.h) that prices it
// with the profile; the per-action costs then go through the pipeline simulation. Printed:
// each stage's costs, the step time split into compute, exposed communication (this engine
// never overlaps communication with computation), pipeline transfers and bubble, tokens/s,
// MFU and HFU, and the memory per rank against the device's capacity.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/backend.h"
#include "../config/manifest.h"
#include "../core/check.h"
#include "../model/model.h"
#include "../parallel/comm.h"
#include "../parallel/schedule.h"
#include "../sim/sim.h"
#include "../train/optimizer.h"
#include "../train/trainer.h"

#define MAX_SETS 64

typedef struct {
    double *fwd, *bwd;       // [K] seconds of each micro-batch's forward / backward on this stage
    double head, tail;       // zeroing the gradients; loss and gradient reduction, clip, update
    double send_fwd_bytes;   // one activation message to the next stage (0 on the last)
    double send_bwd_bytes;   // one gradient message to the previous stage (0 on the first)
    SimCost total;
    double flops;
    int layer_begin, layer_end;
    SimTracer tracer;
} StageSim;

// Micro-batches whose activations a stage keeps at once (the trainer's choice).
static int stage_slots(int pp, int pp_rank, int K) {
    if (pp == 1) return 1;
    PipeStep *steps = xcalloc((size_t)2 * K, sizeof(PipeStep));
    int slots = schedule_max_in_flight(steps, schedule_steps(SCHED_1F1B, pp_rank, pp, K, steps));
    free(steps);
    return slots;
}

// Cost of what ran since the last take: the seconds of a compute action (ops + collectives).
static double take_seconds(SimTracer *t) {
    SimCost c = sim_tracer_take(t);
    return c.compute_s + c.comm_s;
}

// One pipeline stage: build it on the dry back end and run the trainer's step through it.
static void simulate_stage(StageSim *st, const Config *cfg, const HwProfile *hw, SimPrecision prec, DType dt, int stage) {
    const ParallelConfig *pc = &cfg->parallel;
    const TrainConfig *tc = &cfg->train;
    int K = tc->grad_accum, rank = grid_world_rank(pc->tp, pc->dp, 0, 0, stage);
    int zero1 = pc->zero1 && pc->dp > 1;
    Comm c;
    comm_init_virtual_at(&c, pc->tp, pc->pp, pc->dp, rank);
    Backend *bk = backend_dry(dt);
    Model m;
    Optimizer o;
    model_init_parallel(&m, &cfg->model, tc->batch_size / pc->dp, cfg->model.seq_len, tc->seed, &c, &cfg->boost,
                        stage_slots(pc->pp, stage, K), bk, zero1 ? pc->dp : 1);
    optimizer_init(&o, &m, zero1);
    st->layer_begin = m.lay.layer_begin;
    st->layer_end = m.lay.layer_end;
    // price everything from here on: the set-up above is not part of a step
    sim_tracer_init(&st->tracer, hw, prec, pc->tp, pc->dp, pc->pp, 0, 0, stage, cfg->model.n_layers);
    SimTracer *t = &st->tracer;
    OpObserver obs = { NULL, sim_tracer_op };
    bk_observe(bk, &obs, t);
    c.observer = sim_tracer_comm;
    c.observer_ctx = t;
    st->fwd = xcalloc((size_t)K, sizeof(double));
    st->bwd = xcalloc((size_t)K, sizeof(double));
    int32_t *tokens = xcalloc((size_t)m.N, sizeof(int32_t));   // never read on the dry back end
    float scale = (float)(1.0 / ((double)K * tc->batch_size * m.T));

    model_zero_grads(&m);
    st->head = take_seconds(t);
    if (pc->pp == 1) {
        for (int k = 0; k < K; k++) {
            model_stage_forward(&m, 0, tokens, tokens);
            st->fwd[k] = take_seconds(t);
            model_stage_backward(&m, 0, scale);
            st->bwd[k] = take_seconds(t);
        }
    } else {
        // the trainer's fused 1F1B actions (trainer.c run_micro_batches), each priced alone
        PipeStep *steps = xcalloc((size_t)2 * K, sizeof(PipeStep));
        int ns = schedule_steps(SCHED_1F1B, stage, pc->pp, K, steps);
        PipeAction *acts = xcalloc((size_t)SCHEDULE_MAX_ACTIONS(ns), sizeof(PipeAction));
        int na = schedule_actions(steps, ns, stage, pc->pp, 1, acts);
        size_t n_act = (size_t)m.N * m.lay.d_res;
        CommDtype ct = (CommDtype)m.comm_dtype;
        for (int i = 0; i < na; i++) {
            const PipeAction *a = &acts[i];
            int slot = a->mb % m.n_slots;
            switch (a->kind) {
            case PA_FORWARD:
                model_stage_forward(&m, slot, tokens, tokens);
                st->fwd[a->mb] = take_seconds(t);
                continue;
            case PA_BACKWARD:
                model_stage_backward(&m, slot, scale);
                st->bwd[a->mb] = take_seconds(t);
                continue;
            case PA_RECV_FWD:
                comm_recv_ex(&c, GROUP_PP, model_stage_input(&m, slot), n_act, ct, stage - 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
                break;
            case PA_RECV_BWD:
                comm_recv_ex(&c, GROUP_PP, model_stage_grad(&m), n_act, ct, stage + 1, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
                break;
            case PA_SEND_FWD:
            case PA_SEND_FWD_RECV_BWD:
                if (a->kind == PA_SEND_FWD)
                    comm_send_ex(&c, GROUP_PP, model_stage_output(&m, slot), n_act, ct, stage + 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
                else
                    comm_sendrecv_ex(&c, GROUP_PP, model_stage_output(&m, slot), n_act, stage + 1, PIPE_TAG_FWD,
                                     model_stage_grad(&m), n_act, stage + 1, PIPE_TAG_BWD, ct, PHASE_PIPELINE, -1);
                st->send_fwd_bytes = t->cur.p2p_bytes;
                break;
            case PA_SEND_BWD:
            case PA_SEND_BWD_RECV_FWD:
                if (a->kind == PA_SEND_BWD)
                    comm_send_ex(&c, GROUP_PP, model_stage_grad(&m), n_act, ct, stage - 1, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
                else
                    comm_sendrecv_ex(&c, GROUP_PP, model_stage_grad(&m), n_act, stage - 1, PIPE_TAG_BWD,
                                     model_stage_input(&m, a->mb_recv % m.n_slots), n_act, stage - 1, PIPE_TAG_FWD,
                                     ct, PHASE_PIPELINE, -1);
                st->send_bwd_bytes = t->cur.p2p_bytes;
                break;
            }
            // a communication action: its transfer is priced by the pipeline simulation
            SimCost cc = sim_tracer_take(t);
            CHECK(cc.compute_s == 0 && cc.comm_s == 0, "simulate: a pipeline action priced ops or collectives");
        }
        free(steps);
        free(acts);
    }
    // the rest of trainer_step: the loss over PP and DP, the gradient reduction, clip, AdamW
    double loss = 0;
    comm_all_reduce_f64(&c, GROUP_PP, &loss, 1, PHASE_OTHER, -1);
    comm_all_reduce_f64(&c, GROUP_DP, &loss, 1, PHASE_OTHER, -1);
    optimizer_reduce_grads(&o, &m, 0);
    optimizer_clip(&o, &m, tc->grad_clip);
    optimizer_step(&o, &m, tc, lr_at(tc, 0), 1);
    st->tail = take_seconds(t);
    st->total = t->total;
    free(tokens);
    bk_observe(bk, NULL, NULL);
    optimizer_free(&o);
    model_free(&m);
    backend_free(bk);
    comm_free(&c);
}

static void print_per_layer(const StageSim *st, int stage, int K) {
    static const Phase ph[3] = { PHASE_FORWARD, PHASE_BACKWARD, PHASE_RECOMPUTE };
    printf("\nstage %d per layer and micro-batch, ms (compute / exposed communication)\n", stage);
    printf("%6s  %17s  %17s  %17s\n", "layer", "forward", "backward", "recompute");
    for (int l = -1; l < st->tracer.n_layers; l++) {
        if (l >= 0 && (l < st->layer_begin || l >= st->layer_end)) continue;
        printf("%6d ", l);
        for (int i = 0; i < 3; i++)
            printf("  %8.3f / %6.3f", 1e3 * sim_tracer_layer_compute(&st->tracer, ph[i], l) / K,
                   1e3 * sim_tracer_layer_comm(&st->tracer, ph[i], l) / K);
        printf("\n");
    }
}

int main(int argc, char **argv) {
    const char *manifest = NULL, *variant = NULL, *hardware = NULL;
    const char *sets[MAX_SETS];
    int n_sets = 0, per_layer = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--per-layer")) { per_layer = 1; continue; }
        if (argv[i][0] != '-') {
            if (manifest) die_input("one manifest expected, got '%s' and '%s'", manifest, argv[i]);
            manifest = argv[i];
            continue;
        }
        if (i + 1 >= argc) die_input("option %s needs a value", argv[i]);
        if (!strcmp(argv[i], "--variant")) variant = argv[++i];
        else if (!strcmp(argv[i], "--hardware")) hardware = argv[++i];
        else if (!strcmp(argv[i], "--set")) {
            if (n_sets == MAX_SETS) die_input("at most %d --set overrides", MAX_SETS);
            sets[n_sets++] = argv[++i];
        } else die_input("unknown option '%s' (expected --variant, --hardware, --set, --per-layer)", argv[i]);
    }
    if (!manifest || !hardware)
        die_input_hint("profiles: experiments/hardware/*.yaml (docs/performance-model.md)",
                       "usage: build/simulate experiments/X.yaml [--variant V] --hardware PROFILE [--set k=v]... [--per-layer]");
    Manifest *man = manifest_load_with(manifest, sets, n_sets);
    const ManifestVariant *mv = manifest_variant(man, variant);
    Config cfg = mv->config;
    HwProfile hw;
    hw_load_or_die(hardware, "experiments/hardware", &hw);
    DType dt = cfg.train.precision == PRECISION_BF16 ? DT_BF16 : DT_F32;
    SimPrecision prec = sim_precision_of(dt, 0);
    char why[512];
    if (hw_check_precision(&hw, prec, why, sizeof why))
        die_input_hint("the GPU profiles price bf16 runs: add --set train.precision=bf16", "%s: the variant runs in %s; %s",
                       hw.path, sim_precision_name(prec), why);
    const ParallelConfig *pc = &cfg.parallel;
    if (sim_check_grid(&hw, pc->tp, pc->dp, pc->pp, why, sizeof why)) die_input("%s", why);
    int P = pc->pp, K = cfg.train.grad_accum, world = pc->tp * pc->pp * pc->dp;
    double tokens = (double)K * cfg.train.batch_size * cfg.model.seq_len;
    int nodes = (world + hw.ranks_per_node - 1) / hw.ranks_per_node;
    printf("simulate: %s, variant %s, on %s (%s), %s\n", manifest, mv->name, hw.name, hw.device, sim_precision_name(prec));
    printf("grid tp x pp x dp = %d x %d x %d: %d device%s on %d node%s of %d; %d micro-batch%s of %d x %d tokens per step "
           "(%.0f tokens)\n", pc->tp, pc->pp, pc->dp, world, world > 1 ? "s" : "", nodes, nodes > 1 ? "s" : "",
           hw.ranks_per_node, K, K > 1 ? "es" : "", cfg.train.batch_size, cfg.model.seq_len, tokens);

    StageSim *st = xcalloc((size_t)P, sizeof *st);
    for (int p = 0; p < P; p++) simulate_stage(&st[p], &cfg, &hw, prec, dt, p);
    // The trace must hold at least the GEMMs of 6·(matmul parameters)·tokens (forward, input
    // and weight gradients; recompute only adds): a driver that skipped ops on the dry back
    // end (whose buffers are all NULL) would otherwise be priced as faster than it is.
    // model_train_flops_per_token = 6·matmul params + 12·L·T·d (attention), config.c.
    const ModelConfig *mc = &cfg.model;
    double gemm_expected = tokens * (model_train_flops_per_token(mc) - 12.0 * mc->n_layers * (double)mc->seq_len * mc->d_model);
    double gemm_traced = 0;
    for (int p = 0; p < P; p++) gemm_traced += st[p].total.gemm_flops * pc->tp * pc->dp;
    if (gemm_traced < 0.999 * gemm_expected)
        DIE("the trace is incomplete: its GEMMs do %.4g FLOPs per step, the model's matmuls need at least %.4g "
            "(6 x matmul parameters x tokens); some driver skips ops on the dry back end, so no time is printed",
            gemm_traced, gemm_expected);

    // the pipeline: transfers between neighbouring stages at their placement
    double **fwd = xcalloc((size_t)P, sizeof *fwd), **bwd = xcalloc((size_t)P, sizeof *bwd);
    double *xf = xcalloc((size_t)P, sizeof *xf), *xb = xcalloc((size_t)P, sizeof *xb);
    double *head = xcalloc((size_t)P, sizeof *head), *tail = xcalloc((size_t)P, sizeof *tail);
    for (int p = 0; p < P; p++) {
        fwd[p] = st[p].fwd;
        bwd[p] = st[p].bwd;
        head[p] = st[p].head;
        tail[p] = st[p].tail;
        if (p + 1 < P) {
            SimPlacement pair = sim_pair_placement(grid_world_rank(pc->tp, pc->dp, 0, 0, p),
                                                   grid_world_rank(pc->tp, pc->dp, 0, 0, p + 1), hw.ranks_per_node);
            xf[p] = sim_collective_time(&hw, COMM_SEND, st[p].send_fwd_bytes, pair);
            xb[p] = sim_collective_time(&hw, COMM_SEND, st[p + 1].send_bwd_bytes, pair);
        }
    }
    SimPipeIn in = { P, K, (const double *const *)fwd, (const double *const *)bwd, xf, xb, tail, head };
    SimStageTime *tm = xcalloc((size_t)P, sizeof *tm);
    char msg[256];
    double step = sim_pipeline(&in, tm, msg, sizeof msg);
    CHECK(step >= 0, "simulate: the pipeline simulation failed: %s", msg);

    printf("\n%5s %7s %11s %11s %10s %10s %10s %10s %10s\n", "stage", "layers", "fwd/mb ms", "bwd/mb ms", "compute s",
           "comm s", "p2p s", "idle s", "end s");
    int crit = 0;
    double hw_flops = 0;
    for (int p = 0; p < P; p++) {
        double f = 0, b = 0;
        for (int k = 0; k < K; k++) { f += st[p].fwd[k]; b += st[p].bwd[k]; }
        printf("%5d %3d-%-3d %11.3f %11.3f %10.4f %10.4f %10.4f %10.4f %10.4f\n", p, st[p].layer_begin, st[p].layer_end - 1,
               1e3 * f / K, 1e3 * b / K, st[p].total.compute_s, st[p].total.comm_s, tm[p].xfer_s, tm[p].wait_s, tm[p].end_s);
        if (tm[p].busy_s > tm[crit].busy_s) crit = p;
        hw_flops += st[p].total.flops * pc->tp * pc->dp;
    }
    SimStepReport r;
    sim_report_fill(&r, step, &st[crit].total, tm[crit].xfer_s, tokens, model_train_flops_per_token(&cfg.model) * tokens,
                    hw_flops, hw.peak_flops[prec], world);
    printf("\nthe step, as the busiest stage (%d) spends it:\n", crit);
    sim_report_print(&r, stdout);

    printf("\nmemory per rank, GiB (dry back end; tp rank 0, dp rank 0 of each stage), capacity %.2f GiB:\n",
           hw.memory_bytes / 1073741824.0);
    printf("%5s", "stage");
    for (int i = 0; i < MEM_COUNT; i++) printf(" %9s", mem_category_name((MemCategory)i));
    printf(" %9s\n", "peak");
    for (int p = 0; p < P; p++) {
        MemReport mr;
        trainer_memory_report(&cfg, grid_world_rank(pc->tp, pc->dp, 0, 0, p), dt, &mr);
        printf("%5d", p);
        for (int i = 0; i < MEM_COUNT; i++) printf(" %9.3f", mr.bytes[i] / 1073741824.0);
        printf(" %9.3f  %s\n", mr.total / 1073741824.0, mr.total <= hw.memory_bytes ? "fits" : "DOES NOT FIT");
    }
    if (per_layer)
        for (int p = 0; p < P; p++) print_per_layer(&st[p], p, K);

    for (int p = 0; p < P; p++) { free(st[p].fwd); free(st[p].bwd); sim_tracer_free(&st[p].tracer); }
    free(st); free(fwd); free(bwd); free(xf); free(xb); free(head); free(tail); free(tm);
    hw_free(&hw);
    manifest_free(man);
    return 0;
}
