// simulate — one training step of a manifest variant on a hardware profile, priced from the
// real drivers' traces (docs/performance-model.md):
//
//   build/simulate experiments/X.yaml [--variant V] --hardware a100-80gb-node4 [--set k=v]...
//                  [--per-layer] [--json FILE] [--trace-layer L]
//                  [--record [--launch ID] [--repeat-index R]] [--attention-kernel flash|flash1|materialized|materialized-dropout]
//                  [--virtual-stages V] [--host c|python]
//   build/simulate --hardware NAME --gemm M,N,K[,COUNT] [--precision bf16]
//   build/simulate experiments/X.yaml [--variant V] --hardware cpu-local --measure-ops STEPS [--ops-csv FILE]
//
// For every pipeline stage (seen from its tp rank 0, dp rank 0: the other ranks of a stage hold
// the same shapes up to a vocabulary row), the model and its optimizer are built on the dry
// back end over a virtual grid at that stage's coordinates (comm_init_virtual_at, account
// only), and the trainer's step runs for real: zero the gradients, the stage's fused 1F1B
// action list over the step's micro-batches (model_stage_forward / model_stage_backward and
// the pipeline sends), the loss reduction, the data-parallel gradient reduction, clipping and
// the AdamW step. Every op and every collective arrives at a SimTracer (sim.h) that prices it
// with the profile; the per-action costs then go through the pipeline simulation. Printed:
// each stage's costs, the step time split into compute, exposed communication (what the compute
// waits for: with parallel.overlap the engine's started collectives hide behind compute,
// sim_comm_exposed), pipeline transfers and bubble, tokens/s,
// MFU and HFU, and the memory per rank against the device's capacity.
//
// --json writes the same report (and more: time by op class and by group, every layer, the
// ordered ops and collectives of one layer) as JSON; --record writes the simulated run into
// the run database (run.db) as a run of kind `simulated` (docs/database.md), as
// `make exp ... SIMULATE=1` does for every variant. --gemm prices one GEMM launch alone.
//
// --measure-ops STEPS is the op layer of the CPU validation (analysis/validate_cpu.py): the
// same step runs for real on the CPU back end (one rank: tp = pp = dp = 1) with the timing
// wrapper (backend/profile.h) recording every op and its seconds; each recorded op is then
// priced by the same SimTracer the simulation uses. Measured and modeled come from the very
// same op records of the same steps (after one warm-up step), per op name and class.
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../backend/backend.h"
#include "../backend/profile.h"
#include "../config/manifest.h"
#include "../core/fileio.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../model/model.h"
#include "../parallel/comm.h"
#include "../parallel/schedule.h"
#include "../sim/sim.h"
#include "../store/db.h"
#include "../train/optimizer.h"
#include "../train/step_loop.h"
#include "../train/step_record.h"
#include "../train/trainer.h"

static const char *const OP_CLASS_NAMES[OPC_COUNT] = { "gemm", "attention", "memory", "transfer" };

typedef struct {
    double *fwd, *bwd;       // [K] seconds of each micro-batch's forward / backward on this stage
    double head, tail;       // zeroing the gradients; loss and gradient reduction, clip, update
    double send_fwd_bytes;   // one activation message to the next stage (0 on the last)
    double send_bwd_bytes;   // one gradient message to the previous stage (0 on the first)
    SimCost total;
    int layer_begin, layer_end;
    SimTracer tracer;
    CommStatRow *rows;       // the stage's communication table of the step, modeled seconds
    int n_rows;
    MemReport mem;
} StageSim;

// Everything a simulation produced: printed, written as JSON, recorded.
typedef struct {
    const char *manifest;
    const Manifest *man;
    const ManifestVariant *mv;
    Config cfg;
    HwProfile hw;
    char hw_sha256[65];
    SimPrecision prec;
    SimAttentionKernel att;  // how the attention ops are priced (--attention-kernel)
    int vstages;             // a published run's interleaved schedule (--virtual-stages; 1: this engine's 1F1B)
    int host_python;         // a published program issuing its ops from Python (--host python: launch_python_s)
    unsigned unfused;        // a published program's eager element-wise compositions (--unfused; bit 1 << SimUnfused)
    int P, K, world, nodes, trace_stage, trace_layer;
    double tokens, step, model_flops, hw_flops;
    StageSim *st;
    SimStageTime *tm;
    double *xf, *xb;
    int crit;
    SimStepReport r;
} SimRun;

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

// The layer trace covers micro-batch 0 of the traced stage: on for its forward and backward.
static void trace_mb(StageSim *st, int traced, int mb, int on) {
    if (traced && mb == 0) sim_tracer_trace_layer(&st->tracer, st->tracer.trace_layer, on);
}

// The simulator's hooks of the shared micro-batch loop: the model call, then the seconds the
// tracer priced for it; a pipeline transfer is priced by the pipeline simulation (main), so
// its action must have priced nothing else.
typedef struct { StageSim *st; Model *m; int32_t *tokens; float scale; int traced; } SimMb;
static void sim_mb_forward(void *ctx, int slot, int mb) {
    SimMb *x = ctx;
    trace_mb(x->st, x->traced, mb, 1);
    model_stage_forward(x->m, slot, x->tokens, x->tokens);
    x->st->fwd[mb] = take_seconds(&x->st->tracer);
    trace_mb(x->st, x->traced, mb, 0);
}
static void sim_mb_backward(void *ctx, int slot, int mb) {
    SimMb *x = ctx;
    trace_mb(x->st, x->traced, mb, 1);
    model_stage_backward(x->m, slot, x->scale);
    x->st->bwd[mb] = take_seconds(&x->st->tracer);
    trace_mb(x->st, x->traced, mb, 0);
}
static void sim_after_transfer(void *ctx, const PipeAction *a) {
    SimMb *x = ctx;
    SimTracer *t = &x->st->tracer;
    if (a->kind == PA_SEND_FWD || a->kind == PA_SEND_FWD_RECV_BWD) x->st->send_fwd_bytes = t->cur.p2p_bytes;
    if (a->kind == PA_SEND_BWD || a->kind == PA_SEND_BWD_RECV_FWD) x->st->send_bwd_bytes = t->cur.p2p_bytes;
    SimCost cc = sim_tracer_take(t);
    CHECK(cc.compute_s == 0 && cc.comm_s == 0, "simulate: a pipeline action priced ops or collectives");
}

// One pipeline stage: build it on the dry back end and run the trainer's step through it.
static void simulate_stage(StageSim *st, const Config *cfg, const HwProfile *hw, SimPrecision prec, unsigned unfused, DType dt, int stage,
                           int trace_layer, SimAttentionKernel att) {
    const ParallelConfig *pc = &cfg->parallel;
    const TrainConfig *tc = &cfg->train;
    int K = tc->grad_accum, rank = grid_world_rank(pc->tp, pc->dp, 0, 0, stage);
    int zero1 = pc->zero1 && pc->dp > 1;
    Comm c;
    comm_init_virtual_at(&c, pc->tp, pc->pp, pc->dp, rank);
    c.overlap = pc->overlap;   // the engine's started collectives: overlapped, or each waited at once
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
    t->attention = att;
    t->unfused = unfused;
    int traced = trace_layer >= st->layer_begin && trace_layer < st->layer_end;
    if (traced) sim_tracer_trace_layer(t, trace_layer, 0);
    OpObserver obs = { NULL, sim_tracer_op };
    bk_observe(bk, &obs, t);
    comm_stats_reset(&c);
    c.observer = sim_tracer_comm;
    c.observer_ctx = t;
    st->fwd = xcalloc((size_t)K, sizeof(double));
    st->bwd = xcalloc((size_t)K, sizeof(double));
    int32_t *tokens = xcalloc((size_t)m.N, sizeof(int32_t));   // never read on the dry back end
    float scale = (float)(1.0 / ((double)K * tc->batch_size * m.T));

    model_step_begin(&m, scale);         // as trainer_step: no zero pass, the loss gradient fused at tp = 1
    st->head = take_seconds(t);
    // the trainer's micro-batch loop (train/step_loop.c), each action priced alone
    PipeStep *steps = xcalloc((size_t)2 * K, sizeof(PipeStep));
    PipeAction *acts = NULL;
    int na = 0;
    if (pc->pp > 1) {
        int ns = schedule_steps(SCHED_1F1B, stage, pc->pp, K, steps);
        acts = xcalloc((size_t)SCHEDULE_MAX_ACTIONS(ns), sizeof(PipeAction));
        na = schedule_actions(steps, ns, stage, pc->pp, 1, acts);
    }
    SimMb x = { st, &m, tokens, scale, traced };
    StepHooks h = { sim_mb_forward, sim_mb_backward, sim_after_transfer, &x };
    step_micro_batches(&m, &c, K, acts, na, &h);
    free(steps);
    free(acts);
    // the rest of trainer_step: the gradient reduction, the loss over PP and DP, clip, AdamW;
    // its calls that join the stages recorded for the pipeline simulation (§21)
    t->record_syncs = 1;
    t->sync_from_s = t->clock_s;
    step_reduce_and_read_loss(&m, &o, &c, 0);
    optimizer_clip(&o, &m, tc->grad_clip);
    optimizer_step(&o, &m, tc, optimizer_lr_at(tc, 0), 1);
    t->record_syncs = 0;
    st->tail = take_seconds(t);
    st->total = t->total;
    // the communication table of the step; each row's modeled seconds are filled in from the
    // tracer's cells once main has run sim_pipeline, which prices the sends and
    // the joins' waits
    int it = 0, cap = 64;
    CommStatRow row;
    st->rows = xcalloc((size_t)cap, sizeof *st->rows);
    while (comm_stats_next(&c, &it, &row)) {
        if (st->n_rows == cap) { cap *= 2; st->rows = xrealloc(st->rows, (size_t)cap * sizeof *st->rows); }
        row.s.seconds = 0;
        st->rows[st->n_rows++] = row;
    }
    free(tokens);
    bk_observe(bk, NULL, NULL);
    optimizer_free(&o);
    model_free(&m);
    backend_free(bk);
    comm_free(&c);
}

// ---- the op layer of the CPU validation (--measure-ops) -------------------------------------
typedef struct { const char *name; int cls; long calls, dry_calls; double measured, modeled, dry; } OpRow;

// The row of (name, class), added when new.
static OpRow *op_row(OpRow *rows, int *nr, const OpInfo *op) {
    int r = 0;
    while (r < *nr && (strcmp(rows[r].name, op->name) || rows[r].cls != (int)op->cls)) r++;
    if (r == *nr) rows[(*nr)++] = (OpRow){ op->name, (int)op->cls, 0, 0, 0, 0, 0 };
    return &rows[r];
}

// One rank's step on the CPU back end, timed op by op, every recorded op priced by a SimTracer
// on the profile: per op name, measured and modeled seconds per step. The same steps also run
// on the dry back end (what the simulation prices): where the two back ends issue other op
// records, the "dry" columns say so (a trace gap: the simulation prices the dry records). Printed,
// and written as CSV when csv_path is set.
static void measure_ops(const SimRun *s, DType dt, int steps, const char *csv_path) {
    const Config *cfg = &s->cfg;
    const ParallelConfig *pc = &cfg->parallel;
    const TrainConfig *tc = &cfg->train;
    if (pc->tp * pc->pp * pc->dp != 1)
        die_input_hint("add --set parallel.tp=1 (the collectives and whole steps of larger layouts are validated by make validate-cpu)",
                       "--measure-ops: one rank only (tp x pp x dp = %d x %d x %d): the op layer times one rank's ops on its core",
                       pc->tp, pc->pp, pc->dp);
    if (dt != DT_F32) die_input("--measure-ops: the CPU reference runs fp32 (train.precision=fp32), got another precision");
    int threads = tc->threads > 0 ? tc->threads : omp_get_num_procs();
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    OpProfile prof, dry;
    memset(&prof, 0, sizeof prof);
    memset(&dry, 0, sizeof dry);
    Backend *bk = backend_cpu(dt);
    double wall = step_record(cfg, bk, NULL, steps, 1, &prof);
    backend_free(bk);
    bk = backend_dry(dt);
    step_record(cfg, bk, NULL, steps, 0, &dry);
    backend_free(bk);
    // price every record with the simulation's tracer (its rank share for one rank)
    SimTracer t;
    sim_tracer_init(&t, &s->hw, s->prec, 1, 1, 1, 0, 0, 0, cfg->model.n_layers);
    OpRow *rows = xcalloc(prof.n_trace + dry.n_trace + 1, sizeof *rows);
    int nr = 0;
    double meas_total = 0, model_total = 0, dry_total = 0, cls_m[OPC_COUNT] = {0}, cls_p[OPC_COUNT] = {0};
    for (size_t i = 0; i < prof.n_trace; i++) {
        const OpEvent *e = &prof.trace[i];
        sim_tracer_op(&t, &e->op);
        double pred = sim_tracer_take(&t).compute_s;
        OpRow *r = op_row(rows, &nr, &e->op);
        r->calls++;
        r->measured += e->seconds;
        r->modeled += pred;
        meas_total += e->seconds;
        model_total += pred;
        cls_m[e->op.cls] += e->seconds;
        cls_p[e->op.cls] += pred;
    }
    for (size_t i = 0; i < dry.n_trace; i++) {
        sim_tracer_op(&t, &dry.trace[i].op);
        double pred = sim_tracer_take(&t).compute_s;
        OpRow *r = op_row(rows, &nr, &dry.trace[i].op);
        r->dry_calls++;
        r->dry += pred;
        dry_total += pred;
    }
    printf("\nop layer: %s variant %s, one rank, %d thread%s, %d timed step%s after a warm-up (%zu ops per step), "
           "priced on %s (rank share %.3f)\n", s->manifest, s->mv->name, threads, threads > 1 ? "s" : "", steps,
           steps > 1 ? "s" : "", prof.n_trace / (size_t)steps, s->hw.name, t.share);
    printf("%-28s %-9s %7s %12s %12s %8s   %s\n", "op", "class", "calls", "measured ms", "modeled ms", "error",
           "the dry back end's records where they differ (calls, modeled ms)");
    int gaps = 0;
    for (int r = 0; r < nr; r++) {
        const OpRow *o = &rows[r];
        int gap = o->calls != o->dry_calls || fabs(o->modeled - o->dry) > 1e-9 * (o->modeled + o->dry);
        gaps += gap;
        char g[64] = "";
        if (gap) snprintf(g, sizeof g, "%ld, %.3f", o->dry_calls / steps, 1e3 * o->dry / steps);
        if (o->calls)
            printf("%-28s %-9s %7ld %12.3f %12.3f %+7.1f%%   %s\n", o->name, OP_CLASS_NAMES[o->cls], o->calls / steps,
                   1e3 * o->measured / steps, 1e3 * o->modeled / steps, 100 * (o->modeled / o->measured - 1), g);
        else
            printf("%-28s %-9s %7s %12s %12s %8s   %s\n", o->name, OP_CLASS_NAMES[o->cls], "0", "-", "-", "", g);
    }
    for (int k = 0; k < OPC_COUNT; k++)
        if (cls_m[k] > 0)
            printf("%-28s %-9s %7s %12.3f %12.3f %+7.1f%%\n", "(all of the class)", OP_CLASS_NAMES[k], "", 1e3 * cls_m[k] / steps,
                   1e3 * cls_p[k] / steps, 100 * (cls_p[k] / cls_m[k] - 1));
    printf("%-28s %-9s %7s %12.3f %12.3f %+7.1f%%   (the step's wall time %.3f ms: ops + the timing wrapper's own cost)\n",
           "all ops", "", "", 1e3 * meas_total / steps, 1e3 * model_total / steps, 100 * (model_total / meas_total - 1),
           1e3 * wall / steps);
    printf("trace gap: the dry back end's records of the same steps (what the simulation prices) %.3f ms, %+.2f%% against "
           "the CPU back end's; %d op name%s differ%s\n", 1e3 * dry_total / steps, 100 * (dry_total / model_total - 1), gaps,
           gaps == 1 ? "" : "s", gaps == 1 ? "s" : "");
    if (csv_path) {
        char err[1400];
        FILE *f = file_fopen_regular(csv_path, "w", "--ops-csv", err, sizeof err);
        if (!f) die_input_hint("--ops-csv names a regular file to write (or a new name)", "%s", err);
        fprintf(f, "op,class,calls_per_step,measured_s,modeled_s,dry_calls_per_step,dry_modeled_s\n");
        for (int r = 0; r < nr; r++)
            fprintf(f, "%s,%s,%ld,%.9g,%.9g,%ld,%.9g\n", rows[r].name, OP_CLASS_NAMES[rows[r].cls], rows[r].calls / steps,
                    rows[r].measured / steps, rows[r].modeled / steps, rows[r].dry_calls / steps, rows[r].dry / steps);
        fprintf(f, "(step wall),,,%.9g,,,\n", wall / steps);
        if (fclose(f) != 0) die_input("--ops-csv %s: writing failed: %s", csv_path, strerror(errno));
    }
    free(rows);
    sim_tracer_free(&t);
    op_profile_detach(&prof);
    op_profile_detach(&dry);
}

// One row per run of consecutive layers with the same times (layer −1, the embedding and head,
// apart), with how many layers it stands for: the blocks of a stage are usually all alike.
static void layer_times(const StageSim *st, int l, int K, double t[6]) {
    static const Phase ph[3] = { PHASE_FORWARD, PHASE_BACKWARD, PHASE_RECOMPUTE };
    for (int i = 0; i < 3; i++) {
        t[2 * i] = 1e3 * sim_tracer_layer_compute(&st->tracer, ph[i], l) / K;
        t[2 * i + 1] = 1e3 * sim_tracer_layer_comm(&st->tracer, ph[i], l) / K;
    }
}
static void print_per_layer(const StageSim *st, int stage, int K) {
    printf("\nstage %d per layer and micro-batch, ms (compute / exposed communication)\n", stage);
    printf("%-12s %6s  %17s  %17s  %17s\n", "layers", "count", "forward", "backward", "recompute");
    for (int l = -1; l < st->layer_end; ) {
        if (l >= 0 && l < st->layer_begin) { l = st->layer_begin; continue; }
        double t[6], u[6];
        layer_times(st, l, K, t);
        int last = l;
        while (l >= 0 && last + 1 < st->layer_end && (layer_times(st, last + 1, K, u), !memcmp(t, u, sizeof t))) last++;
        char name[32];
        if (l < 0) snprintf(name, sizeof name, "-1 (ends)");
        else if (last == l) snprintf(name, sizeof name, "%d", l);
        else snprintf(name, sizeof name, "%d-%d", l, last);
        printf("%-12s %6d ", name, l < 0 ? 1 : last - l + 1);
        for (int i = 0; i < 3; i++) printf("  %8.3f / %6.3f", t[2 * i], t[2 * i + 1]);
        printf("\n");
        l = last + 1;
    }
}

// Does every stage's memory fit the profile's capacity? The stage that needs the most, in *worst.
static int run_fits(const SimRun *s, int *worst) {
    int w = 0;
    for (int p = 1; p < s->P; p++)
        if (s->st[p].mem.total > s->st[w].mem.total) w = p;
    if (worst) *worst = w;
    return s->st[w].mem.total <= s->hw.memory_bytes;
}

// ---- the text report ---------------------------------------------------------------------
static void print_memory(const SimRun *s) {
    const HwProfile *hw = &s->hw;
    printf("\nmemory per rank, GiB (dry back end; tp rank 0, dp rank 0 of each stage), capacity %.2f GiB:\n",
           hw->memory_bytes / 1073741824.0);
    printf("%5s", "stage");
    for (int i = 0; i < MEM_COUNT; i++) printf(" %9s", mem_category_name((MemCategory)i));
    printf(" %9s\n", "peak");
    for (int p = 0; p < s->P; p++) {
        const MemReport *mr = &s->st[p].mem;
        printf("%5d", p);
        for (int i = 0; i < MEM_COUNT; i++) printf(" %9.3f", mr->bytes[i] / 1073741824.0);
        printf(" %9.3f  %s\n", mr->total / 1073741824.0, mr->total <= hw->memory_bytes ? "fits" : "DOES NOT FIT");
    }
}

static void print_report(const SimRun *s, int per_layer) {
    int worst;
    if (!run_fits(s, &worst)) {
        // a step that cannot run has no time: the memory that rules it out, and nothing else
        print_memory(s);
        printf("\nthe configuration does not fit: stage %d needs %.1f GiB per device of the profile's %.1f GiB, so the step\n"
               "cannot run and no time is shown (--json still carries the model's times, flagged \"fits\": false, for the\n"
               "check of published systems whose memory layout differs from this engine's)\n",
               worst, s->st[worst].mem.total / 1073741824.0, s->hw.memory_bytes / 1073741824.0);
        return;
    }
    printf("\n%5s %7s %11s %11s %10s %10s %10s %10s %10s\n", "stage", "layers", "fwd/mb ms", "bwd/mb ms", "compute s",
           "comm s", "p2p s", "idle s", "end s");
    for (int p = 0; p < s->P; p++) {
        const StageSim *st = &s->st[p];
        double f = 0, b = 0;
        for (int k = 0; k < s->K; k++) { f += st->fwd[k]; b += st->bwd[k]; }
        printf("%5d %3d-%-3d %11.3f %11.3f %10.4f %10.4f %10.4f %10.4f %10.4f\n", p, st->layer_begin, st->layer_end - 1,
               1e3 * f / s->K, 1e3 * b / s->K, st->total.compute_s, st->total.comm_s + s->tm[p].sync_wait_s, s->tm[p].xfer_s, s->tm[p].wait_s,
               s->tm[p].end_s);
    }
    if (s->vstages > 1)
        printf("\nthe table is this engine's 1F1B; the step below prices a published interleaved schedule of %d chunks per device:\n"
               "the busiest stage's idle time / %d and its pipeline transfers x %d (docs/performance-model.md §12, 3.)\n",
               s->vstages, s->vstages, s->vstages);
    printf("\nthe step, as the busiest stage (%d) spends it:\n", s->crit);
    sim_report_print(&s->r, stdout);
    print_memory(s);
    if (per_layer)
        for (int p = 0; p < s->P; p++) print_per_layer(&s->st[p], p, s->K);
}

// ---- the JSON report -----------------------------------------------------------------------
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}
// Numbers: 17 significant digits; a non-finite one as null (JSON has no NaN).
static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v); else fputs("null", f);
}
static void json_kv(FILE *f, const char *key, double v, int last) {
    json_str(f, key); fputs(": ", f); json_num(f, v); fputs(last ? "" : ", ", f);
}

static void json_stage(FILE *f, const SimRun *s, int p) {
    const StageSim *st = &s->st[p];
    const SimTracer *t = &st->tracer;
    double fw = 0, bw = 0;
    for (int k = 0; k < s->K; k++) { fw += st->fwd[k]; bw += st->bwd[k]; }
    fprintf(f, "    {\"stage\": %d, \"layer_begin\": %d, \"layer_end\": %d, ", p, st->layer_begin, st->layer_end);
    json_kv(f, "forward_s_per_micro_batch", fw / s->K, 0);
    json_kv(f, "backward_s_per_micro_batch", bw / s->K, 0);
    json_kv(f, "head_s", st->head, 0); json_kv(f, "tail_s", st->tail, 0);
    json_kv(f, "compute_s", st->total.compute_s, 0); json_kv(f, "comm_s", st->total.comm_s + s->tm[p].sync_wait_s, 0);
    json_kv(f, "launch_wait_s", st->total.launch_wait_s, 0);
    json_kv(f, "sync_wait_s", s->tm[p].sync_wait_s, 0);
    json_kv(f, "xfer_s", s->tm[p].xfer_s, 0); json_kv(f, "idle_s", s->tm[p].wait_s, 0);
    json_kv(f, "busy_s", s->tm[p].busy_s, 0); json_kv(f, "end_s", s->tm[p].end_s, 0);
    json_kv(f, "flops", st->total.flops, 0); json_kv(f, "gemm_flops", st->total.gemm_flops, 0);
    fputs("\n     \"op_class_s\": {", f);
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        fprintf(f, "%s\"%s\": {", ph ? ", " : "", comm_phase_name((CommPhase)ph));
        for (int c = 0; c < OPC_COUNT; c++) json_kv(f, OP_CLASS_NAMES[c], t->op_class_s[ph][c], c == OPC_COUNT - 1);
        fputs("}", f);
    }
    fputs("},\n     \"comm_group_s\": {", f);
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        fprintf(f, "%s\"%s\": {", ph ? ", " : "", comm_phase_name((CommPhase)ph));
        for (int g = 0; g < GROUP_COUNT; g++) json_kv(f, comm_group_name((CommGroup)g), t->comm_group_s[ph][g], g == GROUP_COUNT - 1);
        fputs("}", f);
    }
    fputs("},\n     \"memory_bytes\": {", f);
    for (int i = 0; i < MEM_COUNT; i++) json_kv(f, mem_category_name((MemCategory)i), st->mem.bytes[i], 0);
    json_kv(f, "total", st->mem.total, 1);
    fprintf(f, "}, \"memory_fits\": %s,\n     \"layers\": [", st->mem.total <= s->hw.memory_bytes ? "true" : "false");
    // per layer and micro-batch: [compute, communication] seconds of each phase
    static const Phase ph3[3] = { PHASE_FORWARD, PHASE_BACKWARD, PHASE_RECOMPUTE };
    int first = 1;
    for (int l = -1; l < t->n_layers; l++) {
        if (l >= 0 && (l < st->layer_begin || l >= st->layer_end)) continue;
        fprintf(f, "%s\n      {\"layer\": %d", first ? "" : ",", l);
        first = 0;
        for (int i = 0; i < 3; i++) {
            fprintf(f, ", \"%s\": [", comm_phase_name(ph3[i]));
            json_num(f, sim_tracer_layer_compute(t, ph3[i], l) / s->K); fputs(", ", f);
            json_num(f, sim_tracer_layer_comm(t, ph3[i], l) / s->K); fputs("]", f);
        }
        fputs("}", f);
    }
    fputs("]}", f);
}

static void json_trace(FILE *f, const SimRun *s) {
    fputs("  \"layer_trace\": ", f);
    if (s->trace_stage < 0) { fputs("null", f); return; }
    const SimTracer *t = &s->st[s->trace_stage].tracer;
    fprintf(f, "{\"stage\": %d, \"layer\": %d, \"micro_batch\": 0, \"events\": [", s->trace_stage, s->trace_layer);
    for (int i = 0; i < t->n_events; i++) {
        const SimEvent *e = &t->events[i];
        fprintf(f, "%s\n    {", i ? "," : "");
        if (e->is_comm) {
            fputs("\"type\": \"comm\", \"kind\": ", f); json_str(f, e->name);
            fprintf(f, ", \"group\": \"%s\", \"phase\": \"%s\", ", comm_group_name((CommGroup)e->group), comm_phase_name(e->phase));
        } else {
            fputs("\"type\": \"op\", \"name\": ", f); json_str(f, e->name);
            fprintf(f, ", \"class\": \"%s\", \"phase\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"count\": %d, ",
                    OP_CLASS_NAMES[e->cls], comm_phase_name(e->phase), e->M, e->N, e->K, e->count);
            json_kv(f, "flops", e->flops, 0);
        }
        json_kv(f, "bytes", e->bytes, 0);
        json_kv(f, "seconds", e->seconds, 1);
        fputs("}", f);
    }
    fputs("]}", f);
}

static void write_json(FILE *f, const SimRun *s) {
    const Config *c = &s->cfg;
    const ModelConfig *mc = &c->model;
    const HwProfile *hw = &s->hw;
    fputs("{\n  \"tool\": \"build/simulate\", \"manifest\": ", f); json_str(f, s->manifest);
    fputs(", \"experiment\": ", f); json_str(f, s->man->name);
    fputs(", \"variant\": ", f); json_str(f, s->mv->name);
    fputs(",\n  \"hardware\": {\"name\": ", f); json_str(f, hw->name);
    fputs(", \"device\": ", f); json_str(f, hw->device);
    fputs(", \"path\": ", f); json_str(f, hw->path);
    fputs(", \"sha256\": ", f); json_str(f, s->hw_sha256);
    fprintf(f, ", \"ranks_per_node\": %d, ", hw->ranks_per_node);
    json_kv(f, "peak_flops", hw->peak_flops[s->prec], 0);
    json_kv(f, "memory_bytes", hw->memory_bytes, 1);
    fprintf(f, "},\n  \"fits\": %s,\n  \"precision\": \"%s\",\n  \"attention_kernel\": \"%s\",\n  \"virtual_stages\": %d,\n  \"host\": \"%s\",\n"
               "  \"unfused\": [",
            run_fits(s, NULL) ? "true" : "false", sim_precision_name(s->prec), sim_attention_kernel_name(s->att), s->vstages,
            s->host_python ? "python" : "c");
    for (int k = 0, n = 0; k < SIM_UNFUSED_COUNT; k++)
        if (s->unfused & 1u << k) fprintf(f, "%s\"%s\"", n++ ? ", " : "", sim_unfused_name((SimUnfused)k));
    fprintf(f, "],\n  \"model\": {\"linear\": \"%s\", \"preset\": ", linear_kind_name((LinearKind)mc->linear));
    json_str(f, mc->preset);
    fprintf(f, ", \"n_layers\": %d, \"d_model\": %d, \"n_heads\": %d, \"n_kv_heads\": %d, \"d_ff\": %d, \"rank_attn\": %d, "
               "\"rank_mlp\": %d, \"seq_len\": %d, \"vocab_size\": %d, \"tie_embeddings\": %s, \"params\": %lld},\n",
            mc->n_layers, mc->d_model, mc->n_heads, mc->n_kv_heads, mc->d_ff, mc->rank_attn, mc->rank_mlp, mc->seq_len,
            mc->vocab_size, mc->tie_embeddings ? "true" : "false", (long long)model_param_count(mc));
    const BoostConfig *b = &c->boost;
    fprintf(f, "  \"boost\": {\"btp\": %d, \"online_rmsnorm\": %d, \"grouping\": %d, \"lowrank_ckpt\": %d, \"full_recompute\": %d, "
               "\"sync_norm_backward\": %d},\n", b->btp, b->online_rmsnorm, b->grouping, b->lowrank_ckpt, b->full_recompute,
            b->sync_norm_backward);
    fprintf(f, "  \"grid\": {\"tp\": %d, \"pp\": %d, \"dp\": %d, \"world\": %d, \"nodes\": %d},\n", c->parallel.tp,
            c->parallel.pp, c->parallel.dp, s->world, s->nodes);
    fprintf(f, "  \"micro_batches\": %d, \"micro_batch_size\": %d, \"seq_len\": %d, ", s->K, c->train.batch_size, mc->seq_len);
    json_kv(f, "tokens_per_step", s->tokens, 1);
    fputs(",\n  \"step\": {", f);
    const SimStepReport *r = &s->r;
    json_kv(f, "seconds", r->step_s, 0); json_kv(f, "compute_s", r->compute_s, 0); json_kv(f, "comm_s", r->comm_s, 0);
    json_kv(f, "p2p_s", r->p2p_s, 0); json_kv(f, "bubble_s", r->bubble_s, 0); json_kv(f, "launch_wait_s", r->launch_wait_s, 0);
    json_kv(f, "tokens_per_s", r->tokens_per_s, 0);
    json_kv(f, "mfu", r->mfu, 0); json_kv(f, "hfu", r->hfu, 0); json_kv(f, "model_flops", r->model_flops, 0);
    json_kv(f, "hw_flops", r->hw_flops, 0);
    fprintf(f, "\"critical_stage\": %d},\n  \"stages\": [\n", s->crit);
    for (int p = 0; p < s->P; p++) { json_stage(f, s, p); fputs(p + 1 < s->P ? ",\n" : "\n", f); }
    fputs("  ],\n", f);
    json_trace(f, s);
    fputs("\n}\n", f);
}

// The JSON report as a string (for the file and for the run database).
static char *json_text(const SimRun *s) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK_ERRNO(!f, "open_memstream");
    write_json(f, s);
    CHECK_ERRNO(fclose(f) != 0, "writing the JSON report");
    return buf;
}

// ---- the run database ----------------------------------------------------------------------
// The run database of --record, opened before anything is computed or written: a launch the run
// may not join (store/db.h rundb_launch_joinable, train's rule) is refused with nothing recorded.
static RunDB *record_open(const SimRun *s, int64_t launch_id) {
    RunDB *db = rundb_open(s->cfg.run.db);
    char why[2048], hint[2048];
    if (launch_id && !rundb_launch_joinable(db, launch_id, s->man->name, s->man->sha256, "simulated", s->hw.name, why, sizeof why,
                                            hint, sizeof hint)) {
        rundb_close(db);
        die_input_hint(hint, "%s", why);
    }
    return db;
}

static void record_run(RunDB *db, const SimRun *s, const char *json, int64_t launch_id, int repeat_index,
                       const char *const *sets, int n_sets) {
    const Config *c = &s->cfg;
    RunInfo ri;
    memset(&ri, 0, sizeof ri);
    runinfo_host_facts(&ri);
    char stamp[32];
    time_t now = time(NULL);
    struct tm tmv;
    CHECK(gmtime_r(&now, &tmv), "gmtime_r");
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
    xsnprintf(ri.uid, sizeof ri.uid, "%s.%s.sim-%s.%s.%d", s->man->name, s->mv->name, s->hw.name, stamp, (int)getpid());
    xsnprintf(ri.experiment, sizeof ri.experiment, "%s", s->man->name);
    xsnprintf(ri.variant, sizeof ri.variant, "%s", s->mv->name);
    xsnprintf(ri.manifest_path, sizeof ri.manifest_path, "%s", s->manifest);
    xsnprintf(ri.experiment_version, sizeof ri.experiment_version, "%s", s->man->version);
    xsnprintf(ri.manifest_sha256, sizeof ri.manifest_sha256, "%s", s->man->sha256);
    ri.manifest_format = s->man->manifest_version;
    char *cfg_json = config_to_json(c);
    ri.config_json = cfg_json;
    ri.overrides = sets; ri.n_overrides = n_sets;
    ri.launch_id = launch_id; ri.repeat_index = repeat_index;
    ri.tp = c->parallel.tp; ri.pp = c->parallel.pp; ri.dp = c->parallel.dp; ri.world_size = s->world;
    ri.params = model_param_count(&c->model);
    ri.flops_per_token = flops_train_per_token(&c->model);
    ri.peak_gflops = s->hw.peak_flops[s->prec] * s->world / 1e9;
    xsnprintf(ri.kind, sizeof ri.kind, "simulated");
    xsnprintf(ri.hardware, sizeof ri.hardware, "%s", s->hw.name);
    int64_t run = rundb_begin_run(db, &ri);
    // the one modeled step, like a measured step row (no loss: nothing was computed)
    StepMetrics sm = { .step = 1, .loss = NAN, .lr = optimizer_lr_at(&c->train, 0), .grad_norm = NAN, .seconds = s->step,
                       .tokens_per_s = s->r.tokens_per_s, .mfu = s->r.mfu, .tokens_seen = (int64_t)s->tokens };
    rundb_log_step(db, run, &sm);
    // rank 0's collectives (stage 0), modeled seconds; every rank's totals (a stage's ranks alike)
    for (int i = 0; i < s->st[0].n_rows; i++) {
        const CommStatRow *r = &s->st[0].rows[i];
        rundb_log_comm(db, run, 1, comm_kind_name(r->kind), comm_phase_name(r->phase), comm_group_name(r->group), r->layer,
                       (int64_t)r->s.calls, (int64_t)r->s.elements, (int64_t)r->s.bytes, r->s.seconds, NAN);   // the model has no waiting
    }
    const ParallelConfig *pc = &c->parallel;
    for (int rank = 0; rank < s->world; rank++) {
        int tpr = rank % pc->tp, dpr = (rank / pc->tp) % pc->dp, ppr = rank / (pc->tp * pc->dp);
        const StageSim *st = &s->st[ppr];
        double calls = 0, el = 0, by = 0, sec = 0;
        for (int i = 0; i < st->n_rows; i++) {
            calls += (double)st->rows[i].s.calls; el += (double)st->rows[i].s.elements;
            by += (double)st->rows[i].s.bytes; sec += st->rows[i].s.seconds;
        }
        rundb_log_comm_rank(db, run, 1, rank, tpr, ppr, dpr, (int64_t)calls, (int64_t)el, (int64_t)by, sec);
    }
    // memory of the largest rank, in the measured runs' categories (activations: kept
    // activations + working set + communication staging, so the categories sum to the total)
    int big = 0;
    for (int p = 1; p < s->P; p++) if (s->st[p].mem.total > s->st[big].mem.total) big = p;
    const MemReport *mr = &s->st[big].mem;
    rundb_set_memory(db, run, "parameters", (int64_t)mr->bytes[MEM_PARAMS]);
    rundb_set_memory(db, run, "gradients", (int64_t)mr->bytes[MEM_GRADS]);
    rundb_set_memory(db, run, "optimizer", (int64_t)mr->bytes[MEM_OPTIM]);
    rundb_set_memory(db, run, "activations", (int64_t)(mr->bytes[MEM_ACTS] + mr->bytes[MEM_WORK] + mr->bytes[MEM_COMM]));
    RunSimulation rs;
    memset(&rs, 0, sizeof rs);
    xsnprintf(rs.hardware, sizeof rs.hardware, "%s", s->hw.name);
    xsnprintf(rs.hardware_path, sizeof rs.hardware_path, "%s", s->hw.path);
    xsnprintf(rs.hardware_sha256, sizeof rs.hardware_sha256, "%s", s->hw_sha256);
    xsnprintf(rs.precision, sizeof rs.precision, "%s", sim_precision_name(s->prec));
    rs.micro_batches = s->K; rs.critical_stage = s->crit;
    rs.step_s = s->r.step_s; rs.compute_s = s->r.compute_s; rs.comm_s = s->r.comm_s; rs.p2p_s = s->r.p2p_s;
    rs.bubble_s = s->r.bubble_s; rs.tokens_per_s = s->r.tokens_per_s; rs.mfu = s->r.mfu; rs.hfu = s->r.hfu;
    rs.memory_bytes = mr->total; rs.memory_capacity = s->hw.memory_bytes; rs.memory_fits = mr->total <= s->hw.memory_bytes;
    rs.report_json = json;
    rundb_flush_wait(db, 600);
    rundb_record_simulation(db, run, &rs);
    int lost = rundb_end_run(db, run, "completed", NULL);
    lost |= rundb_close(db);
    free(cfg_json);
    if (lost) DIE("the simulated run could not be recorded completely in %s", c->run.db);
    printf("\nrecorded: run %lld (%s) in %s, kind simulated, hardware %s\n", (long long)run, ri.uid, c->run.db, s->hw.name);
}

// ---- one GEMM alone ------------------------------------------------------------------------
static int gemm_query(const char *hardware, const char *shape, const char *precision) {
    HwProfile hw;
    hw_load_or_die(hardware, "experiments/hardware", &hw);
    long v[4] = { 0, 0, 0, 1 };
    int n = 0;
    char *end = NULL;
    const char *p = shape;
    while (n < 4) {
        v[n] = strtol(p, &end, 10);
        if (end == p || v[n] < 1 || v[n] > (1L << 30)) die_input("--gemm %s: expected M,N,K[,COUNT] of positive integers", shape);
        n++;
        if (*end == 0) break;
        if (*end != ',') die_input("--gemm %s: expected M,N,K[,COUNT] of positive integers", shape);
        p = end + 1;
    }
    if (n < 3 || *end) die_input("--gemm %s: expected M,N,K[,COUNT] of positive integers", shape);
    SimPrecision prec = SP_COUNT;
    for (int i = 0; i < SP_COUNT; i++) if (!strcmp(precision, sim_precision_name((SimPrecision)i))) prec = (SimPrecision)i;
    if (prec == SP_COUNT) die_input("--precision %s: expected fp32, tf32 or bf16", precision);
    char why[512];
    if (hw_check_precision(&hw, prec, why, sizeof why)) die_input("%s", why);
    double M = (double)v[0], N = (double)v[1], K = (double)v[2];
    int count = (int)v[3];
    double es = prec == SP_BF16 ? 2 : 4;
    double flops = 2 * M * N * K * count, bytes = (M * K + K * N + M * N) * es * count;
    double t = sim_gemm_time(&hw, prec, M, N, K, count, flops, bytes);
    printf("{\"hardware\": \"%s\", \"precision\": \"%s\", \"M\": %ld, \"N\": %ld, \"K\": %ld, \"count\": %d, \"flops\": %.17g, "
           "\"bytes\": %.17g, \"seconds\": %.17g, \"flop_per_s\": %.17g, \"utilisation\": %.17g}\n",
           hw.name, precision, v[0], v[1], v[2], count, flops, bytes, t, flops / t, flops / t / hw.peak_flops[prec]);
    hw_free(&hw);
    return 0;
}

// --unfused: "none", or a comma-separated list of distinct families (norm, rope, swiglu): their bits.
static unsigned parse_unfused(const char *arg) {
    if (!strcmp(arg, "none")) return 0;
    unsigned mask = 0;
    const char *p = arg;
    for (;;) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (k < SIM_UNFUSED_COUNT && !(strlen(sim_unfused_name((SimUnfused)k)) == n && !strncmp(p, sim_unfused_name((SimUnfused)k), n))) k++;
        if (k == SIM_UNFUSED_COUNT || mask & 1u << k)
            die_input_hint("--unfused none prices this engine's fused kernels; a list of norm, rope and swiglu (each once) prices "
                           "those families as a published program's eager compositions (docs/performance-model.md §20)",
                           "--unfused %s: '%.*s' %s: expected none or a comma-separated list of norm, rope, swiglu", arg, (int)n, p,
                           k == SIM_UNFUSED_COUNT ? "is no family" : "twice");
        mask |= 1u << k;
        if (!p[n]) return mask;
        p += n + 1;
    }
}

static const char *USAGE =
    "usage: build/simulate experiments/X.yaml [--variant V] --hardware PROFILE [--set k=v]...\n"
    "                      [--per-layer] [--json FILE] [--trace-layer L]\n"
    "                      [--record [--launch ID] [--repeat-index R]] [--attention-kernel flash|flash1|materialized|materialized-dropout]\n"
    "                      [--virtual-stages V] [--host c|python] [--unfused none|norm,rope,swiglu]\n"
    "       build/simulate --hardware PROFILE --gemm M,N,K[,COUNT] [--precision bf16|tf32|fp32]\n"
    "       build/simulate experiments/X.yaml [--variant V] --hardware cpu-local --measure-ops STEPS [--ops-csv FILE]\n"
    "One training step of a manifest variant priced on a hardware profile (experiments/hardware/*.yaml):\n"
    "the real drivers run on the accounting back end and every op and collective is timed by the\n"
    "profile. Prints the step split into compute, exposed communication, pipeline transfers and bubble,\n"
    "tokens/s, MFU and memory per rank. --json writes the full report, --record stores a run of kind\n"
    "'simulated' in run.db, --gemm prices one GEMM. --measure-ops (one rank) also runs the step on the CPU\n"
    "back end, times every op and prices the same op records: the op layer of make validate-cpu.\n"
    "--attention-kernel prices attention as a published system ran it (materialised s x s scores, with or\n"
    "without dropout, or FlashAttention v1) instead of this engine's flash kernel, and --virtual-stages V a\n"
    "published interleaved pipeline schedule (V model chunks per device) instead of this engine's 1F1B, and\n"
    "--host python the host of a program that issues its ops from Python (the profile's launch_python_s per\n"
    "kernel instead of launch_s), --unfused the element-wise families (norm, rope, swiglu) a published program\n"
    "computes as several framework operations, each priced as its reference composition's kernels: the\n"
    "check against published throughputs.\n"
    "See docs/performance-model.md.\n";

int main(int argc, char **argv) {
    const char *manifest = NULL, *variant = NULL, *hardware = NULL, *json_path = NULL, *gemm = NULL, *precision = "bf16";
    int per_layer = 0, record = 0, repeat_index = 0, trace_layer = 0, measure_steps = 0, n_pos = 0, vstages = 1;
    const char *ops_csv = NULL, *att_kernel = "flash", *host = "c", *unfused = "none";
    int64_t launch_id = 0;
    OptList set_list = {0};
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_FLAG_ROW("per-layer", &per_layer),
        OPT_FLAG_ROW("record", &record),
        OPT_STR_ROW("variant", &variant),
        OPT_PATH_ROW("hardware", &hardware),
        OPT_PATH_ROW("json", &json_path),
        OPT_STR_ROW("gemm", &gemm),
        OPT_STR_ROW("precision", &precision),
        OPT_INT64_ROW("launch", 1, INT64_MAX, &launch_id),
        OPT_INT_ROW("repeat-index", 0, INT32_MAX, &repeat_index),
        OPT_INT_ROW("trace-layer", 0, 65535, &trace_layer),
        OPT_INT_ROW("measure-ops", 1, 1000000000, &measure_steps),
        OPT_PATH_ROW("ops-csv", &ops_csv),
        OPT_STR_ROW("attention-kernel", &att_kernel),
        OPT_INT_ROW("virtual-stages", 1, 1000000000, &vstages),
        OPT_STR_ROW("host", &host),
        OPT_STR_ROW("unfused", &unfused),
        OPT_LIST_ROW("set", &set_list),
        OPT_END };
    opt_parse("simulate", opts, argc, argv, &manifest, 1, &n_pos, USAGE);
    const char **sets = set_list.v;
    int n_sets = set_list.n;
    if (gemm) {
        if (!hardware || manifest) die_input("usage: build/simulate --hardware PROFILE --gemm M,N,K[,COUNT] [--precision bf16]");
        return gemm_query(hardware, gemm, precision);
    }
    if (!manifest || !hardware)
        die_input_hint("profiles: experiments/hardware/*.yaml (docs/performance-model.md)",
                       "usage: build/simulate experiments/X.yaml [--variant V] --hardware PROFILE [--set k=v]... [--per-layer] "
                       "[--json FILE] [--trace-layer L] [--record [--launch ID] [--repeat-index R]]");
    if ((launch_id || repeat_index) && !record) die_input("--launch and --repeat-index go with --record");
    if (ops_csv && !measure_steps) die_input("--ops-csv goes with --measure-ops STEPS");
    SimRun s;
    memset(&s, 0, sizeof s);
    s.manifest = manifest;
    s.att = SIM_ATT_COUNT;
    for (int k = 0; k < SIM_ATT_COUNT; k++)
        if (!strcmp(att_kernel, sim_attention_kernel_name((SimAttentionKernel)k))) s.att = (SimAttentionKernel)k;
    if (s.att == SIM_ATT_COUNT)
        die_input_hint("--attention-kernel flash prices the engine's kernel; materialized and materialized-dropout price the "
                       "s x s scores of published runs without a flash kernel, flash1 FlashAttention v1 (docs/performance-model.md "
                       "§11, §12)", "--attention-kernel %s: expected flash, flash1, materialized or materialized-dropout", att_kernel);
    if (s.att != SIM_ATT_FLASH && (record || measure_steps))
        die_input("--attention-kernel %s prices a published system's kernel, not this engine's: it does not go with --record "
                  "or --measure-ops", att_kernel);
    if (vstages > 1 && (record || measure_steps))
        die_input("--virtual-stages %d prices a published system's interleaved schedule, not this engine's 1F1B: it does not go "
                  "with --record or --measure-ops", vstages);
    s.vstages = vstages;
    if (strcmp(host, "c") && strcmp(host, "python"))
        die_input_hint("--host c prices this engine's host (its kernels issued from C), --host python a published program's "
                       "(docs/performance-model.md §19, 3.)", "--host %s: expected c or python", host);
    s.host_python = !strcmp(host, "python");
    if (s.host_python && (record || measure_steps))
        die_input("--host python prices a published program's host, not this engine's: it does not go with --record or "
                  "--measure-ops");
    s.unfused = parse_unfused(unfused);
    if (s.unfused && (record || measure_steps))
        die_input("--unfused %s prices a published program's element-wise kernels, not this engine's: it does not go with "
                  "--record or --measure-ops", unfused);
    Manifest *man = manifest_load_with(manifest, sets, n_sets);
    s.man = man;
    s.mv = manifest_variant(man, variant);
    s.cfg = s.mv->config;
    hw_load_or_die(hardware, "experiments/hardware", &s.hw);
    if (s.host_python) s.hw.launch_s = s.hw.launch_python_s;   // the launch queue at the Python host's cost (§19, 3.)
    if (sha256_file_hex(s.hw.path, s.hw_sha256)) s.hw_sha256[0] = 0;
    DType dt = s.cfg.train.precision == PRECISION_BF16 ? DT_BF16 : DT_F32;
    s.prec = sim_precision_of(dt, 0);
    char why[512];
    // An fp32 recipe (the CPU reference) on a GPU profile without an fp32 GEMM model is
    // priced as the run it becomes on GPUs, bf16 (the paper's precision): said in one line,
    // and recorded so (the run's train.precision and simulation.precision are bf16).
    if (s.prec == SP_FP32 && hw_check_precision(&s.hw, SP_FP32, why, sizeof why) &&
        !hw_check_precision(&s.hw, SP_BF16, why, sizeof why)) {
        printf("note: the variant runs in fp32 and profile %s has no fp32 GEMM model: priced as bf16, the precision "
               "of GPU runs (recorded with train.precision=bf16)\n", s.hw.name);
        s.cfg.train.precision = PRECISION_BF16;
        dt = DT_BF16;
        s.prec = sim_precision_of(dt, 0);
    }
    if (hw_check_precision(&s.hw, s.prec, why, sizeof why))
        die_input_hint("the GPU profiles price bf16 runs: add --set train.precision=bf16", "%s: the variant runs in %s; %s",
                       s.hw.path, sim_precision_name(s.prec), why);
    const ParallelConfig *pc = &s.cfg.parallel;
    RunDB *db = record ? record_open(&s, launch_id) : NULL;
    if (sim_check_grid(&s.hw, pc->tp, pc->dp, pc->pp, why, sizeof why)) die_input("%s", why);
    if (trace_layer >= s.cfg.model.n_layers)
        die_input("--trace-layer %d: the model has %d layers (0..%d)", trace_layer, s.cfg.model.n_layers, s.cfg.model.n_layers - 1);
    // Megatron's conditions of the interleaved schedule: whole chunks of layers, whole rounds of micro-batches
    if (vstages > 1 && (pc->pp < 2 || s.cfg.model.n_layers % (pc->pp * vstages) || s.cfg.train.grad_accum % pc->pp))
        die_input_hint("--virtual-stages 1, or a layout with parallel.pp > 1, model.n_layers divisible by pp x V and "
                       "train.grad_accum divisible by pp",
                       "--virtual-stages %d: an interleaved schedule needs pp > 1 (here %d), the %d layers in pp x V = %d equal "
                       "chunks and the %d micro-batches per step divisible by pp", vstages, pc->pp, s.cfg.model.n_layers,
                       pc->pp * vstages, s.cfg.train.grad_accum);
    s.P = pc->pp; s.K = s.cfg.train.grad_accum; s.world = pc->tp * pc->pp * pc->dp;
    s.tokens = (double)s.K * s.cfg.train.batch_size * s.cfg.model.seq_len;
    s.nodes = (s.world + s.hw.ranks_per_node - 1) / s.hw.ranks_per_node;
    s.trace_layer = trace_layer;
    s.trace_stage = -1;
    printf("simulate: %s, variant %s, on %s (%s), %s%s%s", manifest, s.mv->name, s.hw.name, s.hw.device, sim_precision_name(s.prec),
           s.att != SIM_ATT_FLASH ? ", attention priced as " : "", s.att != SIM_ATT_FLASH ? sim_attention_kernel_name(s.att) : "");
    if (vstages > 1) printf(", pipeline priced as interleaved with %d chunks per device", vstages);
    if (s.host_python) printf(", host priced as Python (%.3g s per issued kernel)", s.hw.launch_s);
    if (s.unfused) printf(", unfused %s", unfused);
    printf("\n");
    printf("grid tp x pp x dp = %d x %d x %d: %d device%s on %d node%s of %d; %d micro-batch%s of %d x %d tokens per step "
           "(%.0f tokens)\n", pc->tp, pc->pp, pc->dp, s.world, s.world > 1 ? "s" : "", s.nodes, s.nodes > 1 ? "s" : "",
           s.hw.ranks_per_node, s.K, s.K > 1 ? "es" : "", s.cfg.train.batch_size, s.cfg.model.seq_len, s.tokens);

    s.st = xcalloc((size_t)s.P, sizeof *s.st);
    for (int p = 0; p < s.P; p++) {
        simulate_stage(&s.st[p], &s.cfg, &s.hw, s.prec, s.unfused, dt, p, trace_layer, s.att);
        if (trace_layer >= s.st[p].layer_begin && trace_layer < s.st[p].layer_end) s.trace_stage = p;
        trainer_memory_report(&s.cfg, grid_world_rank(pc->tp, pc->dp, 0, 0, p), dt, &s.st[p].mem);
    }
    // The trace must hold at least the GEMMs of 6·(matmul parameters)·tokens (forward, input
    // and weight gradients; recompute only adds): a driver that skipped ops on the dry back
    // end (whose buffers are all NULL) would otherwise be priced as faster than it is.
    // flops_gemm_per_token: the GEMM-class part of the FLOP module's count (model/flops.h).
    double gemm_expected = s.tokens * flops_gemm_per_token(&s.cfg.model);
    double gemm_traced = 0;
    for (int p = 0; p < s.P; p++) gemm_traced += s.st[p].total.gemm_flops * pc->tp * pc->dp;
    if (gemm_traced < 0.999 * gemm_expected)
        DIE("the trace is incomplete: its GEMMs do %.4g FLOPs per step, the model's matmuls need at least %.4g "
            "(6 x matmul parameters x tokens); some driver skips ops on the dry back end, so no time is printed",
            gemm_traced, gemm_expected);

    // the pipeline: transfers between neighbouring stages at their placement
    int P = s.P;
    double **fwd = xcalloc((size_t)P, sizeof *fwd), **bwd = xcalloc((size_t)P, sizeof *bwd);
    s.xf = xcalloc((size_t)P, sizeof *s.xf);
    s.xb = xcalloc((size_t)P, sizeof *s.xb);
    double *head = xcalloc((size_t)P, sizeof *head), *tail = xcalloc((size_t)P, sizeof *tail);
    for (int p = 0; p < P; p++) {
        fwd[p] = s.st[p].fwd;
        bwd[p] = s.st[p].bwd;
        head[p] = s.st[p].head;
        tail[p] = s.st[p].tail;
        if (p + 1 < P) {
            SimPlacement pair = sim_pair_placement(grid_world_rank(pc->tp, pc->dp, 0, 0, p),
                                                   grid_world_rank(pc->tp, pc->dp, 0, 0, p + 1), s.hw.ranks_per_node);
            s.xf[p] = sim_collective_time(&s.hw, COMM_SEND, s.st[p].send_fwd_bytes, pair);
            s.xb[p] = sim_collective_time(&s.hw, COMM_SEND, s.st[p + 1].send_bwd_bytes, pair);
        }
    }
    // the tails' calls that join the stages: the same calls in the same order on every stage
    int n_sync = s.st[0].tracer.n_syncs;
    const SimSync **sync = xcalloc((size_t)P, sizeof *sync);
    double **sync_wait = xcalloc((size_t)P, sizeof *sync_wait);
    for (int p = 0; p < P; p++) {
        CHECK(s.st[p].tracer.n_syncs == n_sync, "simulate: stage %d makes %d calls that join the stages, stage 0 makes %d",
              p, s.st[p].tracer.n_syncs, n_sync);
        sync[p] = s.st[p].tracer.syncs;
        sync_wait[p] = xcalloc((size_t)n_sync + 1, sizeof **sync_wait);
    }
    SimPipeIn in = { P, s.K, (const double *const *)fwd, (const double *const *)bwd, s.xf, s.xb, tail, head,
                     n_sync, (const SimSync *const *)sync, (double *const *)sync_wait };
    s.tm = xcalloc((size_t)P, sizeof *s.tm);
    char msg[256];
    s.step = sim_pipeline(&in, s.tm, msg, sizeof msg);
    CHECK(s.step >= 0, "simulate: the pipeline simulation failed: %s", msg);
    // a stage's wait inside a joining call is its time in that call, as the measured comm table
    // books it: the call's cell, hence its row, and the stage table's communication; the step's
    // split of its busiest stage keeps it in the bubble, which is what it is (an interleaved
    // schedule shrinks it)
    for (int p = 0; p < P; p++) {
        for (int j = 0; j < n_sync; j++) sim_tracer_book_wait(&s.st[p].tracer, &sync[p][j], sync_wait[p][j]);
        free(sync_wait[p]);
    }
    free(sync); free(sync_wait);
    // each row of a stage's communication table: a collective takes the seconds of its cell
    // (its calls and its joins' waits); a pipeline send, K micro-batches' transfers each way
    for (int p = 0; p < P; p++)
        for (int i = 0; i < s.st[p].n_rows; i++) {
            CommStatRow *r = &s.st[p].rows[i];
            if (r->kind == COMM_SEND || r->kind == COMM_RECV)
                r->s.seconds = r->kind == COMM_SEND && r->phase == PHASE_PIPELINE
                             ? s.K * ((p + 1 < P ? s.xf[p] : 0) + (p > 0 ? s.xb[p - 1] : 0)) : 0;
            else
                r->s.seconds = sim_tracer_comm_cell(&s.st[p].tracer, r->kind, r->phase, r->group, r->layer);
        }
    for (int p = 0; p < P; p++) {
        if (s.tm[p].busy_s > s.tm[s.crit].busy_s) s.crit = p;
        s.hw_flops += s.st[p].total.flops * pc->tp * pc->dp;
    }
    s.model_flops = flops_train_per_token(&s.cfg.model) * s.tokens;
    // a published interleaved schedule: this 1F1B step with the critical stage's bubble / V and transfers × V
    double xfer = s.tm[s.crit].xfer_s;
    if (vstages > 1) {
        s.step = sim_pipeline_interleaved(s.step, s.tm[s.crit].wait_s + s.tm[s.crit].sync_wait_s, xfer, vstages);
        xfer *= vstages;
    }
    sim_report_fill(&s.r, s.step, &s.st[s.crit].total, xfer, s.tokens, s.model_flops, s.hw_flops,
                    s.hw.peak_flops[s.prec], s.world);
    print_report(&s, per_layer);

    char *json = json_path || record ? json_text(&s) : NULL;
    if (json_path) {
        char err[1400];
        FILE *f = file_fopen_regular(json_path, "w", "--json", err, sizeof err);
        if (!f) die_input_hint("--json names a regular file to write (or a new name)", "%s", err);
        fputs(json, f);
        if (fclose(f) != 0) die_input("--json %s: writing failed: %s", json_path, strerror(errno));
    }
    if (record) record_run(db, &s, json, launch_id, repeat_index, sets, n_sets);
    if (measure_steps) measure_ops(&s, dt, measure_steps, ops_csv);

    free(json);
    for (int p = 0; p < P; p++) {
        free(s.st[p].fwd); free(s.st[p].bwd); free(s.st[p].rows);
        sim_tracer_free(&s.st[p].tracer);
    }
    free(s.st); free(fwd); free(bwd); free(s.xf); free(s.xb); free(head); free(tail); free(s.tm);
    hw_free(&s.hw);
    manifest_free(man);
    return 0;
}
