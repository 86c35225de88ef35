// step_loop.c — the micro-batch loop of one training step (step_loop.h).
#include "step_loop.h"

// The stage's micro-batches (pp 1: forward then backward each; else the 1F1B action list),
// then the gradients of this stage completed over TP where sequence parallelism left them
// partial (model_finish_grads).
static void run_actions(Model *mdl, Comm *c, int K, const PipeAction *acts, int n_acts, const StepHooks *h);
void step_micro_batches(Model *mdl, Comm *c, int K, const PipeAction *acts, int n_acts, const StepHooks *h) {
    run_actions(mdl, c, K, acts, n_acts, h);
    model_finish_grads(mdl);
}

static void run_actions(Model *mdl, Comm *c, int K, const PipeAction *acts, int n_acts, const StepHooks *h) {
    // The stage's last backward makes its gradients final, part by part (model_final_backward:
    // each part's data-parallel reduction starts there, overlapping the rest of that backward)
    if (c->pp == 1) {
        for (int k = 0; k < K; k++) {
            h->forward(h->ctx, 0, k);
            model_final_backward(mdl, k == K - 1);
            h->backward(h->ctx, 0, k);
        }
        return;
    }
    int last_bwd = -1;
    for (int i = 0; i < n_acts; i++)
        if (acts[i].kind == PA_BACKWARD) last_bwd = i;
    // one micro-batch's residual (a column slice under BTP, this rank's tokens under sequence
    // parallelism) + LaX's latents
    size_t n_act = model_stage_elems(mdl);
    CommDtype t = (CommDtype)mdl->comm_dtype;
    int prev = c->pp_rank - 1, next = c->pp_rank + 1;
    for (int i = 0; i < n_acts; i++) {
        const PipeAction *a = &acts[i];
        int slot = a->mb % mdl->n_slots;
        switch (a->kind) {
        case PA_FORWARD:
            h->forward(h->ctx, slot, a->mb);
            continue;
        case PA_BACKWARD:
            model_final_backward(mdl, i == last_bwd);
            h->backward(h->ctx, slot, a->mb);
            continue;
        case PA_RECV_FWD:
            comm_recv(c, GROUP_PP, model_stage_input(mdl, slot), n_act, t, prev, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_FWD:
            comm_send(c, GROUP_PP, model_stage_output(mdl, slot), n_act, t, next, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            break;
        case PA_RECV_BWD:
            comm_recv(c, GROUP_PP, model_stage_grad(mdl), n_act, t, next, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_BWD:
            comm_send(c, GROUP_PP, model_stage_grad(mdl), n_act, t, prev, PIPE_TAG_BWD, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_FWD_RECV_BWD:   // the gradient arrives in the stage-gradient buffer
            comm_sendrecv(c, GROUP_PP, model_stage_output(mdl, slot), n_act, next, PIPE_TAG_FWD,
                             model_stage_grad(mdl), n_act, next, PIPE_TAG_BWD, t, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_BWD_RECV_FWD:
            comm_sendrecv(c, GROUP_PP, model_stage_grad(mdl), n_act, prev, PIPE_TAG_BWD,
                             model_stage_input(mdl, a->mb_recv % mdl->n_slots), n_act, prev,
                             PIPE_TAG_FWD, t, PHASE_PIPELINE, -1);
            break;
        }
        if (h->after_transfer) h->after_transfer(h->ctx, a);
    }
}

double step_reduce_and_read_loss(Model *mdl, Optimizer *o, Comm *c, int want_full) {
    optimizer_reduce_grads(o, mdl, want_full);
    double loss_sum = model_loss_read(mdl);
    // a host scalar: the host entry point
    comm_host_all_reduce(c, GROUP_PP, &loss_sum, 1, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    comm_host_all_reduce(c, GROUP_DP, &loss_sum, 1, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    return loss_sum;
}
