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
#include "../model/state.h"
#include "../parallel/comm.h"
#include "../parallel/schedule.h"
#include "optimizer.h"

typedef struct Trainer {
    Config cfg;
    Comm *comm;                // the process grid (a virtual 1x1x1 one for a single process)
    Backend *bk;               // where this rank's model runs (run.device, train.precision)
    Model model;
    Optimizer opt;
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
    double peak_gflops;        // per rank, for MFU: set by the caller (the launch's measured
                               // peak); 0 = no MFU
    double flops_per_token;    // training FLOPs per token (model/flops.h flops_train_per_token)
} Trainer;

// The back end of run.device and train.precision (cpu fp32/bf16, or cuda); dies with a
// clear message when it is not available (no CUDA build, no GPU).
Backend *trainer_backend(const Config *cfg);
// Prepares data (cached), then builds and initialises this rank's part of the model and its
// optimizer (the caller has checked that it fits: train/memory_fit.h). comm NULL = single process.
void trainer_init(Trainer *tr, const Config *cfg, Comm *comm);
void trainer_free(Trainer *tr);
// One optimizer step over train.grad_accum micro-batches.
StepMetrics trainer_step(Trainer *tr);
// Mean loss over train.val_batches validation micro-batches (no gradient).
double trainer_validate(Trainer *tr);
// Set OpenMP and OpenBLAS thread counts (0 = all cores); returns the count used.
int trainer_set_threads(int threads);

// The unsharded state (STATE_* families: params = the fp32 master weights, grads, AdamW m
// and v) assembled on world rank 0 into `full` (other ranks pass NULL). Collective.
void trainer_gather_state(Trainer *tr, ModelState *full, int families);
// Every rank takes its blocks of the master weights, parameters, m and v from `full`
// (held by every rank).
void trainer_scatter_state(Trainer *tr, const ModelState *full);

// ---- memory (built on the dry back end: nothing is allocated) ----------------------------
typedef struct {
    double bytes[MEM_COUNT];   // per category (backend.h MemCategory)
    double total;              // everything this rank allocates at once: its peak working set
} MemReport;
// The memory of world rank `rank`'s part of the run described by cfg, in dtype dt.
void trainer_memory_report(const Config *cfg, int rank, DType dt, MemReport *r);
// A table per pipeline stage (tp rank 0, dp rank 0 of each: the other ranks of a stage hold
// the same shapes up to a vocabulary row) in fp32 and bf16; returns the largest total of
// the run's own dtype.
double trainer_memory_print(const Config *cfg, FILE *f);
