// trainer.h — the training state and one optimizer step, separate from the run loop so
// that loggers (stdout, SQLite), checkpoints and dumps hook in around it.
//
// Batch arithmetic (the same for every process layout, so layouts are comparable):
//   one optimizer step = K micro-batches (train.grad_accum) of B sequences
//   (train.batch_size) of T tokens; global sample k of the run is the same window
//   whatever tp/pp/dp are. Each DP rank takes B/dp rows of every micro-batch; each
//   pipeline stage runs the K micro-batches through the 1F1B schedule.
#pragma once
#include "../config/config.h"
#include "../core/metrics.h"   // StepMetrics
#include "../data/data.h"
#include "../model/model.h"
#include "../parallel/comm.h"

typedef struct Trainer {
    Config cfg;
    Comm *comm;                // the process grid (a virtual 1x1x1 one for a single process)
    Model model;
    DataLoader loader;
    PreparedData data;
    int step;                  // optimizer steps completed
    int64_t tokens_seen;
    uint64_t samples_seen;     // global training samples consumed (the loader position)
    int B_local;               // sequences per micro-batch on this DP rank
    int zero1;                 // AdamW state sharded over DP (parallel.zero1 with dp > 1)
    int32_t *inputs, *targets; // [K*B_local,T] staging: every micro-batch of the current step
    PipeStep *pipe_steps; PipeAction *pipe_actions; int n_pipe_actions;
    // Called once per step after all gradients are in and BEFORE clipping and the
    // update (params = the weights this step's forward used; grads = d mean loss).
    // Step dumps hook in here. NULL = none.
    void (*before_update)(void *ctx, struct Trainer *tr, double mean_loss);
    void *hook_ctx;
    double peak_gflops;        // measured at init (this process)
    double flops_per_token;    // training FLOPs per token (config/model_train_flops_per_token)
} Trainer;

// Prepares data (cached), builds and initialises this rank's part of the model,
// measures the sgemm peak. comm NULL = single process.
void trainer_init(Trainer *tr, const Config *cfg, Comm *comm);
void trainer_free(Trainer *tr);
// One optimizer step over train.grad_accum micro-batches.
StepMetrics trainer_step(Trainer *tr);
// Mean loss over train.val_batches validation micro-batches (no gradient).
double trainer_validate(Trainer *tr);
// Set OpenMP and OpenBLAS thread counts (0 = all cores); returns the count used.
int set_threads(int threads);
