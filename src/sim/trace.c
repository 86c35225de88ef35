// trace.c — pricing the op and collective records of one rank as the drivers emit them
// (an OpObserver and a CommObserver context), and the step report (sim.h).
#include <string.h>

#include "../core/check.h"
#include "sim.h"

void sim_tracer_init(SimTracer *t, const HwProfile *hw, SimPrecision prec, int tp, int dp, int pp,
                     int tp_rank, int dp_rank, int pp_rank, int n_layers) {
    memset(t, 0, sizeof *t);
    t->hw = hw;
    t->prec = prec;
    for (int g = 0; g < GROUP_COUNT; g++)
        t->place[g] = sim_group_placement(tp, dp, pp, tp_rank, dp_rank, pp_rank, (CommGroup)g, hw->ranks_per_node);
    // the ranks on this rank's node (world ranks fill nodes in order, TP fastest)
    int world = tp * dp * pp, node = grid_world_rank(tp, dp, tp_rank, dp_rank, pp_rank) / hw->ranks_per_node;
    int first = node * hw->ranks_per_node, last = first + hw->ranks_per_node;
    t->share = hw_rank_share(hw, (last < world ? last : world) - first);
    CHECK(n_layers >= 0, "sim_tracer_init: %d layers", n_layers);
    t->n_layers = n_layers;
    t->layer_compute = xcalloc((size_t)PHASE_COUNT * (size_t)(n_layers + 1), sizeof(double));
    t->layer_comm = xcalloc((size_t)PHASE_COUNT * (size_t)(n_layers + 1), sizeof(double));
    t->comm_cell_s = xcalloc((size_t)COMM_KIND_COUNT * PHASE_COUNT * GROUP_COUNT * (size_t)(n_layers + 1), sizeof(double));
    t->trace_layer = -2;
}

void sim_tracer_free(SimTracer *t) {
    free(t->layer_compute);
    free(t->layer_comm);
    free(t->comm_cell_s);
    free(t->events);
    free(t->syncs);
    t->syncs = NULL;
    t->n_syncs = t->cap_syncs = 0;
    for (int g = 0; g < GROUP_COUNT; g++) {
        free(t->started_end[g]); free(t->started_event[g]);
        t->started_end[g] = NULL; t->started_event[g] = NULL; t->cap_started[g] = 0;
    }
    t->layer_compute = t->layer_comm = t->comm_cell_s = NULL;
    t->events = NULL;
    t->n_events = t->cap_events = 0;
}

void sim_tracer_trace_layer(SimTracer *t, int layer, int on) {
    CHECK(layer >= -1 && layer < t->n_layers, "sim tracer: no layer %d to trace (%d layers)", layer, t->n_layers);
    t->trace_layer = layer;
    t->trace_on = on;
}

static SimEvent *push_event(SimTracer *t) {
    t->events = vec_grow(t->events, &t->n_events, &t->cap_events, sizeof *t->events);
    SimEvent *e = &t->events[t->n_events - 1];
    memset(e, 0, sizeof *e);
    return e;
}

static size_t comm_cell(const SimTracer *t, int kind, int phase, int group, int layer) {
    CHECK(kind >= 0 && kind < COMM_KIND_COUNT && phase >= 0 && phase < PHASE_COUNT && group >= 0 && group < GROUP_COUNT
          && layer >= -1 && layer < t->n_layers, "sim tracer: comm cell (%d, %d, %d, %d) outside the table", kind, phase, group, layer);
    return (((size_t)kind * PHASE_COUNT + (size_t)phase) * GROUP_COUNT + (size_t)group) * (size_t)(t->n_layers + 1) + (size_t)(layer + 1);
}

double sim_tracer_comm_cell(const SimTracer *t, CommKind kind, Phase ph, CommGroup g, int layer) {
    return t->comm_cell_s[comm_cell(t, kind, ph, g, layer)];
}

static size_t layer_slot(const SimTracer *t, int phase, int layer) {
    CHECK(phase >= 0 && phase < PHASE_COUNT && layer >= -1 && layer < t->n_layers,
          "sim tracer: phase %d layer %d outside the table (%d layers)", phase, layer, t->n_layers);
    return (size_t)phase * (size_t)(t->n_layers + 1) + (size_t)(layer + 1);
}

// The launch queue (sim.h): the seconds the device spends on a call of t seconds, its wait for
// the host's launch included. Without launch_s the call's own seconds, bit for bit.
static double queued(SimTracer *t, double s) {
    if (!(t->hw->launch_s > 0)) return s;
    t->host_s += t->hw->launch_s;
    double wait = t->host_s > t->dev_s ? t->host_s - t->dev_s : 0;
    t->dev_s += wait + s;
    t->cur.launch_wait_s += wait;
    return s + wait;
}

void sim_tracer_op(void *ctx, const OpInfo *op) {
    SimTracer *t = ctx;
    double bytes[SIM_UNFUSED_MAX_KERNELS], s = 0;
    int k = sim_unfused_kernels(op, t->unfused, bytes);
    if (k)   // a published program's eager composition: each kernel a memory pass and a launch (§20)
        for (int i = 0; i < k; i++)
            s += queued(t, sim_memory_pass_time(t->hw, bytes[i]) / t->share);
    else
        s = queued(t, (op->cls == OPC_ATTENTION ? sim_attention_kernel_time(t->hw, t->prec, op, t->attention)
                                                : sim_op_time(t->hw, t->prec, op)) / t->share);
    t->cur.compute_s += s;
    t->clock_s += s;
    t->cur.flops += op->flops;
    if (op->cls == OPC_GEMM) t->cur.gemm_flops += op->flops;
    t->cur.n_ops++;
    t->layer_compute[layer_slot(t, op->phase, op->layer)] += s;
    CHECK((unsigned)op->cls < OPC_COUNT, "sim tracer: op class %d", (int)op->cls);
    t->op_class_s[op->phase][op->cls] += s;
    if (t->trace_on && op->layer == t->trace_layer) {
        SimEvent *e = push_event(t);
        e->name = op->name ? op->name : "?";
        e->cls = op->cls; e->group = -1; e->phase = op->phase;
        e->M = op->M; e->N = op->N; e->K = op->K; e->count = op->count;
        e->flops = op->flops; e->bytes = op->bytes; e->seconds = s;
    }
}

// Seconds of communication of one (kind, phase, group, layer): the per-layer, per-group and
// per-cell tables (a call's own seconds, or a stage's wait inside a joining call).
static void book_comm(SimTracer *t, CommKind kind, Phase ph, CommGroup g, int layer, double s) {
    t->layer_comm[layer_slot(t, ph, layer)] += s;
    t->comm_group_s[ph][g] += s;
    t->comm_cell_s[comm_cell(t, kind, ph, g, layer)] += s;
}

void sim_tracer_comm(void *ctx, const CommRecord *r) {
    SimTracer *t = ctx;
    CHECK((unsigned)r->group < GROUP_COUNT, "sim tracer: group %d", (int)r->group);
    CHECK(r->group_size == t->place[r->group].n, "sim tracer: a %s record of a group of %d, the grid says %d",
          comm_group_name(r->group), r->group_size, t->place[r->group].n);
    if (r->type != COMM_RECORD_WAIT) t->cur.n_calls++;   // (a wait is no call of its own)
    // Point-to-point messages are the pipeline's: their time depends on the stage boundary
    // they cross, which the pipeline simulation prices (sim_pipeline's transfer durations).
    if (r->kind == COMM_SEND || r->kind == COMM_RECV) {
        if (r->kind == COMM_SEND) t->cur.p2p_bytes += (double)r->bytes;
        return;
    }
    double s = sim_comm_exposed(t, r, r->type == COMM_RECORD_WAIT ? 0.0
                                      : sim_collective_in_group(t->hw, r->kind, r->group, r->started, (double)r->bytes, t->place[r->group]));
    // a blocking call waits in the launch queue as an op does; a started call runs on its own
    // stream and its wait launches nothing on the compute stream
    if (r->type == COMM_RECORD_CALL) s = queued(t, s);
    // a blocking call whose members run other stages joins their time lines (§21)
    if (t->record_syncs && r->type == COMM_RECORD_CALL && r->group_size > 1 && t->place[GROUP_PP].n > 1
        && (r->group == GROUP_PP || r->group == GROUP_WORLD)) {
        t->syncs = vec_grow(t->syncs, &t->n_syncs, &t->cap_syncs, sizeof *t->syncs);
        t->syncs[t->n_syncs - 1] = (SimSync){ t->clock_s - t->sync_from_s, s, r->kind, r->phase, r->group, r->layer };
    }
    t->clock_s += s;
    t->cur.comm_s += s;
    book_comm(t, r->kind, r->phase, r->group, r->layer, s);
    // The layer trace: one event per call; a started call's event gets the seconds its wait exposes.
    if (r->type == COMM_RECORD_WAIT) {
        int ev = t->started_event[r->group][r->seq];
        if (ev) t->events[ev - 1].seconds += s;
    } else if (t->trace_on && r->layer == t->trace_layer) {
        SimEvent *e = push_event(t);
        e->is_comm = 1;
        e->name = comm_kind_name(r->kind);
        e->cls = r->kind; e->group = r->group; e->phase = r->phase;
        e->bytes = (double)r->bytes; e->seconds = s;
        if (r->type == COMM_RECORD_START) t->started_event[r->group][r->seq] = t->n_events;
    }
}

void sim_tracer_book_wait(SimTracer *t, const SimSync *y, double wait_s) {
    CHECK(wait_s >= 0, "sim tracer: a wait of %g s", wait_s);
    book_comm(t, y->kind, y->phase, y->group, y->layer, wait_s);
}

double sim_comm_exposed(SimTracer *t, const CommRecord *r, double seconds) {
    int g = r->group;
    switch (r->type) {
    case COMM_RECORD_CALL:
        return seconds;                                // blocking: the compute waits for all of it
    case COMM_RECORD_START: {                          // on the group's stream, behind the ones before it
        double begin = t->clock_s > t->stream_end[g] ? t->clock_s : t->stream_end[g];
        t->stream_end[g] = begin + seconds;
        if (r->seq >= t->cap_started[g]) {
            uint64_t cap = t->cap_started[g] ? 2 * t->cap_started[g] : 64;
            while (cap <= r->seq) cap *= 2;
            t->started_end[g] = realloc(t->started_end[g], (size_t)cap * sizeof *t->started_end[g]);
            t->started_event[g] = realloc(t->started_event[g], (size_t)cap * sizeof *t->started_event[g]);
            CHECK(t->started_end[g] && t->started_event[g], "sim tracer: out of memory for %llu started calls",
                  (unsigned long long)cap);
            t->cap_started[g] = cap;
        }
        t->started_end[g][r->seq] = t->stream_end[g];
        t->started_event[g][r->seq] = 0;
        t->started_s += seconds;
        t->hidden_s += seconds;                        // (less what its wait exposes)
        return 0.0;
    }
    case COMM_RECORD_WAIT: {                           // what is left of it now
        CHECK(r->seq >= 1 && r->seq < t->cap_started[g], "sim tracer: a wait for %s call %llu, never started",
              comm_group_name(r->group), (unsigned long long)r->seq);
        double left = t->started_end[g][r->seq] - t->clock_s;
        if (left < 0) left = 0;
        t->hidden_s -= left;
        return left;
    }
    }
    DIE("sim tracer: collective record type %d", (int)r->type);
}

SimCost sim_tracer_take(SimTracer *t) {
    SimCost c = t->cur;
    t->total.compute_s += c.compute_s;
    t->total.comm_s += c.comm_s;
    t->total.launch_wait_s += c.launch_wait_s;
    t->total.p2p_bytes += c.p2p_bytes;
    t->total.flops += c.flops;
    t->total.gemm_flops += c.gemm_flops;
    t->total.n_ops += c.n_ops;
    t->total.n_calls += c.n_calls;
    memset(&t->cur, 0, sizeof t->cur);
    t->host_s = t->dev_s = 0;
    return c;
}

double sim_tracer_layer_compute(const SimTracer *t, Phase ph, int layer) { return t->layer_compute[layer_slot(t, ph, layer)]; }
double sim_tracer_layer_comm(const SimTracer *t, Phase ph, int layer) { return t->layer_comm[layer_slot(t, ph, layer)]; }

void sim_report_fill(SimStepReport *r, double step_s, const SimCost *stage, double stage_xfer_s,
                     double tokens, double model_flops, double hw_flops, double peak, int world) {
    memset(r, 0, sizeof *r);
    r->step_s = step_s;
    r->compute_s = stage->compute_s;
    r->comm_s = stage->comm_s;
    r->launch_wait_s = stage->launch_wait_s;
    r->p2p_s = stage_xfer_s;
    r->bubble_s = step_s - r->compute_s - r->comm_s - r->p2p_s;
    // the parts come from one stage's own time line, which the step contains
    CHECK(r->bubble_s > -1e-9 * (step_s > 1 ? step_s : 1), "sim report: the parts (%.9g s) exceed the step (%.9g s)",
          r->compute_s + r->comm_s + r->p2p_s, step_s);
    // The step and its parts are sums of the same seconds in another order: a difference within
    // their rounding (a relative 1e-12 of the step) is no idle time, not 5.6e-17 s of it.
    if (r->bubble_s < 1e-12 * step_s) r->bubble_s = 0;
    r->tokens_per_s = step_s > 0 ? tokens / step_s : 0;
    r->model_flops = model_flops;
    r->hw_flops = hw_flops;
    double denom = step_s * peak * world;
    r->mfu = denom > 0 ? model_flops / denom : 0;
    r->hfu = denom > 0 ? hw_flops / denom : 0;
}

void sim_report_print(const SimStepReport *r, FILE *f) {
    double s = r->step_s > 0 ? r->step_s : 1;
    fprintf(f, "step time        %10.4f s\n", r->step_s);
    fprintf(f, "  compute        %10.4f s  %5.1f%%\n", r->compute_s, 100 * r->compute_s / s);
    fprintf(f, "  communication  %10.4f s  %5.1f%%  (exposed: what the compute waits for; parallel.overlap)\n",
            r->comm_s, 100 * r->comm_s / s);
    if (r->launch_wait_s > 0)
        fprintf(f, "  (of compute and communication, waiting for the host's launches %.4f s, %.1f%%)\n", r->launch_wait_s,
                100 * r->launch_wait_s / s);
    fprintf(f, "  pipeline p2p   %10.4f s  %5.1f%%\n", r->p2p_s, 100 * r->p2p_s / s);
    fprintf(f, "  bubble / idle  %10.4f s  %5.1f%%\n", r->bubble_s, 100 * r->bubble_s / s);
    fprintf(f, "tokens/s         %10.0f\n", r->tokens_per_s);
    fprintf(f, "MFU              %10.1f%%  (model FLOPs %.4g per step)\n", 100 * r->mfu, r->model_flops);
    fprintf(f, "HFU              %10.1f%%  (traced FLOPs %.4g per step, recompute included)\n", 100 * r->hfu, r->hw_flops);
}
