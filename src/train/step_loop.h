// step_loop.h — one training step's micro-batch loop, shared by the trainer (trainer.c) and the
// simulator (tools/simulate.c): the stage's fused 1F1B action list (parallel/schedule.h) with
// its pipeline sends and receives, sized by model_stage_elems (the residual slice and, with
// LaX, the latents). What differs between the two callers is only what a forward and a backward
// of a micro-batch do around the model call (the trainer feeds tokens and sums the loss; the
// simulator takes the priced seconds): the hooks. The loss stays in the model (model_loss_read).
#ifndef BOOST_STEP_LOOP_H
#define BOOST_STEP_LOOP_H

#include "../model/model.h"
#include "../parallel/comm.h"
#include "../parallel/schedule.h"
#include "optimizer.h"

typedef struct {
    // the forward of micro-batch mb in slot `slot` (the last stage adds its loss to the model's sum)
    void (*forward)(void *ctx, int slot, int mb);
    void (*backward)(void *ctx, int slot, int mb);
    // after every pipeline transfer action (NULL: nothing): the simulator checks and clears its costs
    void (*after_transfer)(void *ctx, const PipeAction *a);
    void *ctx;
} StepHooks;

// The micro-batches of one step: K of them on one stage (pp 1: forward then backward each), or
// the stage's action list acts[0..n_acts) (pp > 1).
void step_micro_batches(Model *mdl, Comm *c, int K, const PipeAction *acts, int n_acts, const StepHooks *h);

// What follows the micro-batches in every step (trainer, simulator, step_record): the gradient
// reduction completed (its buckets started in the last backward; want_full: the whole gradient
// under ZeRO-1), then the step's one read of the loss — after the reduction is queued, so a GPU
// waits for its stream here, not once per micro-batch — summed over PP (it lives on the last
// stage, identical on its TP ranks) and DP. Returns the sum (0 on the dry back end).
double step_reduce_and_read_loss(Model *mdl, Optimizer *o, Comm *c, int want_full);

#endif
