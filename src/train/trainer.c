// trainer.c — one optimizer step over the process grid (see trainer.h).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "trainer.h"
#include "state_io.h"
#include "step_loop.h"
#include "../backend/ops.h"
#include "../parallel/gpu_setup.h"
#include "../core/check.h"
#include "../core/timer.h"

extern void openblas_set_num_threads(int);

int trainer_set_threads(int threads) {
    if (threads <= 0) threads = omp_get_num_procs();
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    return threads;
}

static DType run_dtype(const Config *cfg) { return cfg->train.precision == PRECISION_BF16 ? DT_BF16 : DT_F32; }

// The back end is found by run.device's name in the registry and then used by what it
// can do (backend.h capabilities), never by its name: a back end on a device of the rank's
// own is placed by local rank (gpu_place); attention kernels are chosen where it offers a choice.
Backend *trainer_backend(const Config *cfg) {
    DType dt = run_dtype(cfg);
    const char *name = config_device_name(cfg->run.device);
    const BackendKind *kind = backend_kind(name);
    CHECK(kind, "run.device %s has no entry in the back-end registry (backend/select.c)", name);
    const char *hint = "set run.device: cpu, or build and run where a GPU and CUDA are present (docs/gpu.md)";
    char why[256] = "";
    int device = -1;
    if (kind->per_rank_device) {
        GpuPlacement gp;
        if (gpu_place(&gp, why, sizeof why)) die_input_hint(hint, "run.device is %s but %s", name, why);
        device = gp.device;
    }
    Backend *b = kind->create(dt, device, why, sizeof why);
    if (!b) die_input_hint(hint, "run.device is %s but the %s back end is not available: %s", name, name, why);
    if (kind->per_rank_device) b->tf32 = dt == DT_F32 && cfg->train.tf32;
    if (b->set_attention && b->set_attention(b, cfg->train.attention, why, sizeof why))
        die_input_hint("set train.attention: auto (cuDNN where it can, else the flash kernel) or flash",
                       "train.attention is cudnn but %s", why);
    return b;
}

// A device back end: the Comm's buffers live there (NCCL when every rank has its own GPU,
// else MPI with staging through page-locked host memory); one line says which.
static void place_comm(Comm *comm, Backend *bk) {
    if (!bk->device_memory) return;
    GpuPlacement gp; char why[256];
    if (gpu_place(&gp, why, sizeof why)) die_input("run.device is cuda but %s", why);
    gpu_setup(comm, bk, &gp);
    if (comm->rank == 0) gpu_placement_print(&gp, comm, stdout);
}

// Micro-batches whose activations a stage keeps at once: the 1F1B schedule's in-flight count.
static int stage_slots(const Config *cfg, int pp_rank) {
    int K = cfg->train.grad_accum, pp = cfg->parallel.pp;
    if (pp == 1) return 1;
    PipeStep *steps = xcalloc((size_t)2 * K, sizeof(PipeStep));
    int n = schedule_steps(SCHED_1F1B, pp_rank, pp, K, steps);
    int slots = schedule_max_in_flight(steps, n);
    free(steps);
    return slots;
}

// This rank's model and optimizer on `bk` (the real one, or the dry one of the memory report).
static void build_rank(Model *m, Optimizer *o, const Config *cfg, Comm *comm, Backend *bk, int zero1) {
    int B_local = cfg->train.batch_size / comm->dp;
    model_init_parallel(m, &cfg->model, B_local, cfg->model.seq_len, cfg->train.seed, comm, &cfg->boost,
                        stage_slots(cfg, comm->pp_rank), bk, zero1 ? comm->dp : 1);
    optimizer_init(o, m, zero1);
}

void trainer_memory_report(const Config *cfg, int rank, DType dt, MemReport *r) {
    const ParallelConfig *pc = &cfg->parallel;
    Comm c;
    comm_init_virtual_at(&c, pc->tp, pc->pp, pc->dp, rank);
    Backend *bk = backend_dry(dt);
    Model m; Optimizer o;
    build_rank(&m, &o, cfg, &c, bk, pc->zero1 && pc->dp > 1);
    // The communication staging the run allocates: the all-gather of the last layer's
    // column slices under BTP (tp > 1, last stage).
    if (m.lay.scheme == TP_BTP && pc->tp > 1 && m.lay.last_stage)
        bk_alloc(bk, (size_t)m.N * cfg->model.d_model, dt, MEM_COMM);
    memset(r, 0, sizeof *r);
    for (int i = 0; i < MEM_COUNT; i++) r->bytes[i] = (double)bk->mem[i];
    r->total = (double)bk->mem_peak;
    optimizer_free(&o);
    model_free(&m);
    backend_free(bk);
    comm_free(&c);
}

static void print_report_row(FILE *f, const char *label, const MemReport *r) {
    fprintf(f, "%-22s", label);
    for (int i = 0; i < MEM_COUNT; i++) fprintf(f, " %10.3f", r->bytes[i] / 1073741824.0);
    fprintf(f, " %10.3f\n", r->total / 1073741824.0);
}

double trainer_memory_print(const Config *cfg, FILE *f) {
    const ParallelConfig *pc = &cfg->parallel;
    DType own = run_dtype(cfg);
    double worst = 0;
    fprintf(f, "memory per rank, GiB (dry run of the model and optimizer; per pipeline stage; b %d/dp, s %d)\n",
            cfg->train.batch_size, cfg->model.seq_len);
    fprintf(f, "%-22s", "stage, dtype");
    for (int i = 0; i < MEM_COUNT; i++) fprintf(f, " %10s", mem_category_name((MemCategory)i));
    fprintf(f, " %10s\n", "peak");
    DType dts[2] = { DT_F32, DT_BF16 };
    for (int k = 0; k < 2; k++) {
        for (int s = 0; s < pc->pp; s++) {
            MemReport r;
            trainer_memory_report(cfg, grid_world_rank(pc->tp, pc->dp, 0, 0, s), dts[k], &r);
            char label[64];
            snprintf(label, sizeof label, "stage %d, %s%s", s, dtype_name(dts[k]), dts[k] == own ? " (run)" : "");
            print_report_row(f, label, &r);
            if (dts[k] == own && r.total > worst) worst = r.total;
        }
    }
    return worst;
}

void trainer_init(Trainer *tr, const Config *cfg, Comm *comm) {
    memset(tr, 0, sizeof *tr);
    tr->cfg = *cfg;
    if (!comm) comm = comm_single();
    tr->comm = comm;
    const ModelConfig *mc = &tr->cfg.model;
    const TrainConfig *tc = &tr->cfg.train;
    if (tc->batch_size % comm->dp != 0)
        die_input("train.batch_size = %d is not divisible by parallel.dp = %d (each data-parallel rank takes batch_size/dp sequences of every micro-batch)",
                  tc->batch_size, comm->dp);
    tr->B_local = tc->batch_size / comm->dp;
    comm->overlap = tr->cfg.parallel.overlap;   // started collectives overlap the compute, or block
    tr->bk = trainer_backend(&tr->cfg);
    place_comm(comm, tr->bk);
    // Every rank prepares through the cache; rank 0 first so the others only read it.
    dataset_set_quiet(comm->rank != 0);   // "data: reading kjv ..." once per run, not once per rank
    if (comm->rank == 0) dataset_prepare(&tr->cfg.data, mc->vocab_size, tc->seed, &tr->data);
    if (comm->world > 1) comm_barrier(comm, GROUP_WORLD, PHASE_OTHER, -1);
    if (comm->rank != 0) dataset_prepare(&tr->cfg.data, mc->vocab_size, tc->seed, &tr->data);
    loader_open(&tr->loader, &tr->data, mc->seq_len, mc->vocab_size, tc->seed);

    int K = tc->grad_accum;
    if (comm->pp > 1) {
        tr->pipe_steps = xcalloc((size_t)2 * K, sizeof(PipeStep));
        int n = schedule_steps(SCHED_1F1B, comm->pp_rank, comm->pp, K, tr->pipe_steps);
        tr->pipe_actions = xcalloc((size_t)SCHEDULE_MAX_ACTIONS(n), sizeof(PipeAction));
        tr->n_pipe_actions = schedule_actions(tr->pipe_steps, n, comm->pp_rank, comm->pp, 1, tr->pipe_actions);
    }
    tr->zero1 = tr->cfg.parallel.zero1 && comm->dp > 1;
    build_rank(&tr->model, &tr->opt, &tr->cfg, comm, tr->bk, tr->zero1);
    size_t n = (size_t)K * tr->B_local * mc->seq_len;
    tr->inputs = xmalloc(n * sizeof(int32_t));
    tr->targets = xmalloc(n * sizeof(int32_t));
    tr->flops_per_token = flops_train_per_token(mc);
}

void trainer_free(Trainer *tr) {
    optimizer_free(&tr->opt);
    model_free(&tr->model);
    if (tr->comm && tr->comm->device == tr->bk) comm_detach_device(tr->comm);   // its buffers are on bk
    backend_free(tr->bk);
    loader_close(&tr->loader);
    free(tr->inputs); free(tr->targets);
    free(tr->pipe_steps); free(tr->pipe_actions);
}

// This rank's rows of micro-batch k of the current step.
static int32_t *mb_inputs(Trainer *tr, int k) { return tr->inputs + (size_t)k * tr->model.N; }
static int32_t *mb_targets(Trainer *tr, int k) { return tr->targets + (size_t)k * tr->model.N; }

// The step's micro-batches through the loop the simulator runs too (step_loop.h): the trainer's
// hooks feed each micro-batch's tokens; the last stage's loss sum stays in the model, on the
// back end, until the step reads it (model_loss_read).
typedef struct { Trainer *tr; float scale; } MbCtx;
static void mb_forward(void *ctx, int slot, int mb) {
    MbCtx *x = ctx;
    model_stage_forward(&x->tr->model, slot, mb_inputs(x->tr, mb), mb_targets(x->tr, mb));
}
static void mb_backward(void *ctx, int slot, int mb) {
    (void)mb;
    MbCtx *x = ctx;
    model_stage_backward(&x->tr->model, slot, x->scale);
}
// The step's first backward on this stage stores the gradients (no zero pass over them), the
// later ones add; at tp = 1 each micro-batch's loss and its gradient come from one pass over
// the logits (model_step_begin), the fusion off again afterwards for validation's forwards.
static void run_micro_batches(Trainer *tr, float scale) {
    MbCtx x = { tr, scale };
    StepHooks h = { mb_forward, mb_backward, NULL, &x };
    model_step_begin(&tr->model, scale);
    step_micro_batches(&tr->model, tr->comm, tr->cfg.train.grad_accum, tr->pipe_actions, tr->n_pipe_actions, &h);
    model_fuse_loss_grad(&tr->model, 0);
}

StepMetrics trainer_step(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg.train;
    Model *mdl = &tr->model;
    Comm *c = tr->comm;
    int B = tc->batch_size, K = tc->grad_accum, Bl = tr->B_local;
    double t0 = now_seconds();
    // Global sample index of row j of micro-batch k: samples_seen + k*B + j; this DP
    // rank takes rows [dp_rank*Bl, (dp_rank+1)*Bl).
    for (int k = 0; k < K; k++)
        loader_train_batch(&tr->loader, tr->samples_seen + (uint64_t)k * B + (uint64_t)c->dp_rank * Bl,
                           Bl, mb_inputs(tr, k), mb_targets(tr, k));
    double n_tokens = (double)K * B * mdl->T;             // tokens of the whole step
    // Data parallel: every rank's gradient is of (its tokens' loss sum)/n_tokens, so the
    // sum over DP is the gradient of the step's mean loss. ZeRO-1 needs only this rank's
    // slice of it, except when a step dump wants the whole gradient. The sum starts bucket by
    // bucket in the step's last backward (optimizer.h) and is complete after reduce_grads.
    int dump_step = tr->before_update && config_step_listed(tr->cfg.run.dump_steps, tr->step + 1);
    optimizer_want_full(&tr->opt, dump_step);
    run_micro_batches(tr, (float)(1.0 / n_tokens));
    double loss_sum = step_reduce_and_read_loss(mdl, &tr->opt, c, dump_step);
    tr->samples_seen += (uint64_t)K * B;

    StepMetrics sm = {0};
    sm.loss = loss_sum / n_tokens;
    double t_hook = 0;
    if (tr->before_update) {
        double th = now_seconds();
        tr->before_update(tr->hook_ctx, tr, sm.loss);
        t_hook = now_seconds() - th;
    }
    sm.grad_norm = optimizer_clip(&tr->opt, mdl, tc->grad_clip);
    sm.lr = optimizer_lr_at(tc, tr->step);
    tr->step++;
    optimizer_step(&tr->opt, mdl, tc, sm.lr, tr->step);
    op_sync(tr->bk);
    sm.seconds = now_seconds() - t0 - t_hook;
    tr->tokens_seen += (int64_t)n_tokens;
    sm.step = tr->step;
    sm.tokens_seen = tr->tokens_seen;
    sm.tokens_per_s = n_tokens / sm.seconds;
    sm.mfu = tr->peak_gflops > 0 ? sm.tokens_per_s * tr->flops_per_token / (tr->peak_gflops * 1e9 * c->world) : 0;
    return sm;
}

double trainer_validate(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg.train;
    Model *mdl = &tr->model;
    Comm *c = tr->comm;
    if (!loader_has_val(&tr->loader)) return NAN;
    // Validation windows are split over DP like training rows; forwards only, passed
    // along the pipeline stage by stage.
    size_t n_act = model_stage_elems(mdl);
    CommDtype t = (CommDtype)mdl->comm_dtype;
    model_loss_begin(mdl);
    for (int i = 0; i < tc->val_batches; i++) {
        loader_val_batch(&tr->loader, (uint64_t)i * tc->batch_size + (uint64_t)c->dp_rank * tr->B_local,
                         tr->B_local, tr->inputs, tr->targets);
        if (!mdl->lay.first_stage)
            comm_recv(c, GROUP_PP, model_stage_input(mdl, 0), n_act, t, c->pp_rank - 1, PIPE_TAG_FWD, PHASE_OTHER, -1);
        model_stage_forward(mdl, 0, tr->inputs, tr->targets);
        if (!mdl->lay.last_stage)
            comm_send(c, GROUP_PP, model_stage_output(mdl, 0), n_act, t, c->pp_rank + 1, PIPE_TAG_FWD, PHASE_OTHER, -1);
    }
    double sum = model_loss_read(mdl);   // once, after every window's forward
    comm_host_all_reduce(c, GROUP_PP, &sum, 1, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    comm_host_all_reduce(c, GROUP_DP, &sum, 1, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    return sum / ((double)tc->val_batches * tc->batch_size * mdl->T);
}

// ---- the state of checkpoints and dumps ------------------------------------------------------
static float *host_family(size_t n) { return xaligned_alloc(n * sizeof(float) + 64); }

void trainer_gather_state(Trainer *tr, ModelState *full, int families) {
    Model *m = &tr->model;
    size_t n = m->table.n_params;
    StateArrays a = {0};
    if (families & STATE_PARAMS) a.params = host_family(n);
    if (families & STATE_GRADS) { a.grads = host_family(n); model_get_grads(m, a.grads); }
    if (families & STATE_OPTIM) { a.m = host_family(n); a.v = host_family(n); }
    optimizer_state_to_host(&tr->opt, m, a.params, a.m, a.v);   // collective over DP (ZeRO-1)
    state_gather(tr->comm, &m->cfg, m->lay.scheme, &m->table, &a, full, families);
    free(a.params); free(a.grads); free(a.m); free(a.v);
}

void trainer_scatter_state(Trainer *tr, const ModelState *full) {
    Model *m = &tr->model;
    size_t n = m->table.n_params;
    StateArrays a = { .params = host_family(n), .m = host_family(n), .v = host_family(n) };
    state_scatter(&m->table, &a, full, STATE_PARAMS | STATE_OPTIM);
    optimizer_state_from_host(&tr->opt, m, a.params, a.m, a.v);
    free(a.params); free(a.m); free(a.v);
}
