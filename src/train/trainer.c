#include <math.h>
#include <omp.h>
#include "trainer.h"
#include "optim.h"
#include "../core/check.h"
#include "../core/timer.h"
#include "../parallel/schedule.h"

extern void openblas_set_num_threads(int);

int set_threads(int threads) {
    if (threads <= 0) threads = omp_get_num_procs();
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    return threads;
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
    // Every rank prepares through the cache; rank 0 first so the others only read it.
    if (comm->rank == 0) dataset_prepare(&tr->cfg.data, mc->vocab_size, tc->seed, &tr->data);
    if (comm->world > 1) comm_barrier(comm, GROUP_WORLD, PHASE_OTHER, -1);
    if (comm->rank != 0) dataset_prepare(&tr->cfg.data, mc->vocab_size, tc->seed, &tr->data);
    loader_open(&tr->loader, &tr->data, mc->seq_len, mc->vocab_size, tc->seed);

    int K = tc->grad_accum, n_slots = 1;
    if (comm->pp > 1) {
        tr->pipe_steps = xcalloc((size_t)2 * K, sizeof(PipeStep));
        int n = schedule_steps(SCHED_1F1B, comm->pp_rank, comm->pp, K, tr->pipe_steps);
        tr->pipe_actions = xcalloc((size_t)SCHEDULE_MAX_ACTIONS(n), sizeof(PipeAction));
        tr->n_pipe_actions = schedule_actions(tr->pipe_steps, n, comm->pp_rank, comm->pp, 1, tr->pipe_actions);
        n_slots = schedule_max_in_flight(tr->pipe_steps, n);
    }
    model_init_parallel(&tr->model, mc, tr->B_local, mc->seq_len, tc->seed, comm, &tr->cfg.boost, n_slots);
    tr->zero1 = tr->cfg.parallel.zero1 && comm->dp > 1;
    if (tr->zero1) model_shard_optimizer(&tr->model, comm->dp, comm->dp_rank);
    size_t n = (size_t)K * tr->B_local * mc->seq_len;
    tr->inputs = xmalloc(n * sizeof(int32_t));
    tr->targets = xmalloc(n * sizeof(int32_t));
    tr->peak_gflops = measure_sgemm_peak_gflops();
    tr->flops_per_token = model_train_flops_per_token(mc);
}

void trainer_free(Trainer *tr) {
    model_free(&tr->model);
    loader_close(&tr->loader);
    free(tr->inputs); free(tr->targets);
    free(tr->pipe_steps); free(tr->pipe_actions);
}

// This rank's rows of micro-batch k of the current step.
static int32_t *mb_inputs(Trainer *tr, int k) { return tr->inputs + (size_t)k * tr->model.N; }
static int32_t *mb_targets(Trainer *tr, int k) { return tr->targets + (size_t)k * tr->model.N; }

// Runs the K micro-batches through this stage: forward and backward, with the pipeline
// sends/receives of the 1F1B schedule between stages. Returns the sum of token losses
// computed here (non-zero on the last stage only).
static double run_micro_batches(Trainer *tr, float scale) {
    Model *mdl = &tr->model;
    Comm *c = tr->comm;
    int K = tr->cfg.train.grad_accum;
    double loss_sum = 0;
    if (c->pp == 1) {
        for (int k = 0; k < K; k++) {
            loss_sum += model_stage_forward(mdl, 0, mb_inputs(tr, k), mb_targets(tr, k));
            model_stage_backward(mdl, 0, scale);
        }
        return loss_sum;
    }
    size_t n_act = (size_t)mdl->N * mdl->lay.d_res;   // one micro-batch's residual slice
    int prev = c->pp_rank - 1, next = c->pp_rank + 1;
    for (int i = 0; i < tr->n_pipe_actions; i++) {
        const PipeAction *a = &tr->pipe_actions[i];
        int slot = a->mb % mdl->n_slots;
        switch (a->kind) {
        case PA_FORWARD:
            loss_sum += model_stage_forward(mdl, slot, mb_inputs(tr, a->mb), mb_targets(tr, a->mb));
            break;
        case PA_BACKWARD:
            model_stage_backward(mdl, slot, scale);
            break;
        case PA_RECV_FWD:
            comm_recv(c, GROUP_PP, model_stage_input(mdl, slot), n_act, prev, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_FWD:
            comm_send(c, GROUP_PP, model_stage_output(mdl, slot), n_act, next, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            break;
        case PA_RECV_BWD:
            comm_recv(c, GROUP_PP, model_stage_grad(mdl), n_act, next, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_BWD:
            comm_send(c, GROUP_PP, model_stage_grad(mdl), n_act, prev, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_FWD_RECV_BWD:   // the gradient arrives in the stage-gradient buffer
            comm_sendrecv(c, GROUP_PP, model_stage_output(mdl, slot), n_act, next, PIPE_TAG_FWD,
                          model_stage_grad(mdl), n_act, next, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_BWD_RECV_FWD:
            comm_sendrecv(c, GROUP_PP, model_stage_grad(mdl), n_act, prev, PIPE_TAG_BWD,
                          model_stage_input(mdl, a->mb_recv % mdl->n_slots), n_act, prev,
                          PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            break;
        }
    }
    return loss_sum;
}

StepMetrics trainer_step(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg.train;
    Model *mdl = &tr->model;
    Comm *c = tr->comm;
    int B = tc->batch_size, K = tc->grad_accum, Bl = tr->B_local;
    double t0 = now_seconds();
    model_zero_grads(mdl);
    // Global sample index of row j of micro-batch k: samples_seen + k*B + j; this DP
    // rank takes rows [dp_rank*Bl, (dp_rank+1)*Bl).
    for (int k = 0; k < K; k++)
        loader_train_batch(&tr->loader, tr->samples_seen + (uint64_t)k * B + (uint64_t)c->dp_rank * Bl,
                           Bl, mb_inputs(tr, k), mb_targets(tr, k));
    double n_tokens = (double)K * B * mdl->T;             // tokens of the whole step
    double loss_sum = run_micro_batches(tr, (float)(1.0 / n_tokens));
    // The loss lives on the last stage (identical on its TP ranks); sum over DP.
    comm_all_reduce_f64(c, GROUP_PP, &loss_sum, 1, PHASE_OTHER, -1);
    comm_all_reduce_f64(c, GROUP_DP, &loss_sum, 1, PHASE_OTHER, -1);
    // Data parallel: every rank's gradient is of (its tokens' loss sum)/n_tokens, so the
    // sum over DP is the gradient of the step's mean loss. ZeRO-1 needs only this rank's
    // shard of it (reduce-scatter), except when a step dump wants the whole gradient.
    int dump_step = tr->before_update && config_step_listed(tr->cfg.run.dump_steps, tr->step + 1);
    if (tr->zero1 && !dump_step) {
        comm_reduce_scatter(c, GROUP_DP, mdl->grads, mdl->grads, mdl->opt_len, PHASE_OPTIMIZER, -1);
        if (mdl->opt_offset)   // the shard arrives at the front of the buffer
            memmove(mdl->grads + mdl->opt_offset, mdl->grads, mdl->opt_len * sizeof(float));
    } else {
        comm_all_reduce(c, GROUP_DP, mdl->grads, tr->zero1 ? mdl->n_alloc : mdl->table.n_params, PHASE_OPTIMIZER, -1);
    }
    tr->samples_seen += (uint64_t)K * B;

    StepMetrics sm = {0};
    sm.loss = loss_sum / n_tokens;
    double t_hook = 0;
    if (tr->before_update) {
        double th = now_seconds();
        tr->before_update(tr->hook_ctx, tr, sm.loss);
        t_hook = now_seconds() - th;
    }
    sm.grad_norm = clip_grad_norm(mdl, tc->grad_clip);
    sm.lr = lr_at(tc, tr->step);
    tr->step++;
    adamw_step(mdl, tc, sm.lr, tr->step);
    if (tr->zero1)   // every DP rank updated its shard; assemble the full weights again
        comm_all_gather(c, GROUP_DP, mdl->params + mdl->opt_offset, mdl->params, mdl->opt_len, PHASE_OPTIMIZER, -1);
    sm.seconds = now_seconds() - t0 - t_hook;
    tr->tokens_seen += (int64_t)n_tokens;
    sm.step = tr->step;
    sm.tokens_seen = tr->tokens_seen;
    sm.tokens_per_s = n_tokens / sm.seconds;
    sm.mfu = sm.tokens_per_s * tr->flops_per_token / (tr->peak_gflops * 1e9 * c->world);
    return sm;
}

double trainer_validate(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg.train;
    Model *mdl = &tr->model;
    Comm *c = tr->comm;
    if (!loader_has_val(&tr->loader)) return NAN;
    // Validation windows are split over DP like training rows; forwards only, passed
    // along the pipeline stage by stage.
    double sum = 0;
    size_t n_act = (size_t)mdl->N * mdl->lay.d_res;
    for (int i = 0; i < tc->val_batches; i++) {
        loader_val_batch(&tr->loader, (uint64_t)i * tc->batch_size + (uint64_t)c->dp_rank * tr->B_local,
                         tr->B_local, tr->inputs, tr->targets);
        if (!mdl->lay.first_stage)
            comm_recv(c, GROUP_PP, model_stage_input(mdl, 0), n_act, c->pp_rank - 1, PIPE_TAG_FWD, PHASE_OTHER, -1);
        sum += model_stage_forward(mdl, 0, tr->inputs, tr->targets);
        if (!mdl->lay.last_stage)
            comm_send(c, GROUP_PP, model_stage_output(mdl, 0), n_act, c->pp_rank + 1, PIPE_TAG_FWD, PHASE_OTHER, -1);
    }
    comm_all_reduce_f64(c, GROUP_PP, &sum, 1, PHASE_OTHER, -1);
    comm_all_reduce_f64(c, GROUP_DP, &sum, 1, PHASE_OTHER, -1);
    return sum / ((double)tc->val_batches * tc->batch_size * mdl->T);
}
