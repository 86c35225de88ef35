// state_io.h — moving the model state between a parallel run's shards and the
// unsharded form that checkpoints and step dumps hold (always unsharded, whatever the
// process layout: a run saved at tp=2 resumes at tp=1 and vice versa).
#pragma once
#include "../model/state.h"
#include "../parallel/comm.h"

// Assemble the full state on world rank 0 (into `full`, built with
// model_state_init; other ranks pass NULL) from the ranks of DP replica 0.
// `families` is a mask of STATE_*. Collective over the world.
void state_gather(Model *local, ModelState *full, int families);
// Copy this rank's blocks out of a full state (every rank holds `full`).
void state_scatter(Model *local, const ModelState *full, int families);

// ZeRO-1 keeps only this rank's shard of AdamW's m and v. These two bracket a
// state_gather/state_scatter of STATE_OPTIM: `begin` swaps in whole-span m, v (assembled
// from the DP shards when `assemble`), `end` keeps this rank's shard of them and swaps
// back. No-ops without sharding.
void zero1_optim_begin(Model *local, int assemble);
void zero1_optim_end(Model *local);
