// optimizer.h — AdamW in one module: it owns the fp32 master weights (bf16 runs; in fp32
// runs the model's parameters are the master weights), AdamW's m and v, the data-parallel
// gradient reduction, global-norm clipping and ZeRO-1 sharding. The Model owns parameters,
// gradients and activations only.
//
// ZeRO-1 (parallel.zero1 with dp > 1): the flat parameter span (the model's families are
// padded to dp equal slices, model_family_len) is cut into dp slices; DP rank i keeps the
// master weights, m and v of slice i only, receives that slice of the summed gradient by a
// reduce-scatter, updates it, and the DP ranks all-gather the updated parameters.
//
// The data-parallel gradient reduction runs in buckets: the model's gradient parts
// (model_grad_parts: the head's, each layer's, the embedding's). Each bucket's reduction
// starts in the step's last backward as soon as its gradients are final (the model's hook,
// model_grads_final_hook), so it overlaps the rest of that backward (comm.h: started
// collectives; parallel.overlap false runs each at once, blocking); optimizer_reduce_grads
// waits for them all. A bucket is an all-reduce, or under ZeRO-1 a reduce-scatter cut along
// the DP slices (comm_reduce_scatter_v_start: each rank receives the sum of its slice's part
// of the bucket), counted in phase optimizer at the bucket's layer (-1: head, embedding).
#pragma once
#include "../config/config.h"
#include "../model/model.h"
#include "../parallel/comm.h"

// lr for 0-based optimizer step `step`: linear warm-up from lr/warmup to lr over
// `warmup_steps`, then cosine decay to lr*min_lr_ratio at the last step.
double optimizer_lr_at(const TrainConfig *tc, int step);

typedef struct {
    Backend *bk;
    Comm *comm;
    const ParamTable *table;   // the model's (this rank's blocks)
    int tp;                    // TP group size: replicated tensors count 1/tp each in the norm
    int mixed;                 // compute dtype is not fp32: separate fp32 master weights
    int zero1;                 // master, m, v hold this DP rank's slice only
    size_t n_params, n_alloc;  // the model's family lengths (n_alloc: padded for ZeRO-1)
    size_t shard_off, shard_len; // the flat range [shard_off, shard_off + shard_len) updated here
    float *master;             // [shard_len] fp32; a view of the model's params when !mixed
    float *m, *v;              // [shard_len] fp32
    int n_spans;               // the tensors' parts inside the shard
    float grad_scale;          // the clipping factor optimizer_clip found, for the next step (1: none)
    struct { size_t off, n; int decay; double norm_weight; } *spans;
    // the data-parallel reduction's buckets (the model's gradient parts, in backward order)
    Model *mdl;
    GradPart *parts;
    int n_parts;
    CommHandle *pending;       // [n_parts] each bucket's reduction this step (COMM_DONE: none running)
    int *started;              // [n_parts] started this step
    int want_full;             // this step's buckets are all-reduces even under ZeRO-1 (optimizer_want_full)
} Optimizer;

// Set up for `mdl` (built with family_parts = dp when zero1), taking its current
// parameters as the master weights; m = v = 0.
void optimizer_init(Optimizer *o, Model *mdl, int zero1);
void optimizer_free(Optimizer *o);
// Before a step's micro-batches: its gradient reduction must leave the whole gradient on
// every rank (a step dump wants it) even under ZeRO-1 (the buckets are all-reduces).
void optimizer_want_full(Optimizer *o, int want_full);
// Sum the gradients over DP: this rank's slice only (ZeRO-1 reduce-scatter) unless
// `want_full` (as optimizer_want_full said before the step), else an all-reduce. Waits for the
// buckets the backward started and starts (and waits for) those it did not.
void optimizer_reduce_grads(Optimizer *o, Model *mdl, int want_full);
// Global L2 norm of the whole model's gradients (over TP, PP and the ZeRO-1 slices; double
// accumulation; a tensor replicated on the TP ranks counts once). If clip > 0 and the norm
// exceeds it, the next optimizer_step reads this rank's gradients scaled by clip/norm (AdamW
// applies the factor as it reads them; the gradients themselves are left as they are).
// Returns the norm BEFORE clipping.
double optimizer_clip(Optimizer *o, Model *mdl, double clip);
// One AdamW step (1-based t) on this rank's slice, the compute-dtype parameters rewritten
// (and all-gathered over DP under ZeRO-1). Weight decay on tensors whose spec says decay.
void optimizer_step(Optimizer *o, Model *mdl, const TrainConfig *tc, double lr, int t);

// Host fp32 copies of the full local span (this rank's table, n_params each) of the master
// weights, m and v — assembled from the DP slices under ZeRO-1 (collective over DP). Any
// pointer may be NULL (not wanted).
void optimizer_state_to_host(Optimizer *o, Model *mdl, float *params, float *m, float *v);
// The reverse, from full local-span host arrays (every DP rank passes the same): master
// weights, the model's compute-dtype parameters, m and v.
void optimizer_state_from_host(Optimizer *o, Model *mdl, const float *params, const float *m, const float *v);
