// state_io.h — moving the model state between a parallel run's shards and the unsharded
// form that checkpoints and step dumps hold (always unsharded, whatever the process layout:
// a run saved at tp=2 resumes at tp=1 and vice versa). Everything here works on host fp32
// arrays in this rank's parameter-table order; the trainer brings the families to the host
// (trainer.h: trainer_gather_state / trainer_scatter_state).
#pragma once
#include "../model/state.h"
#include "../parallel/comm.h"

// The families of a state, in STATE_* order: params, grads, m, v (NULL = not held).
typedef struct { float *params, *grads, *m, *v; } StateArrays;

// Assemble the families in the STATE_* mask on world rank 0 (into `full`, built with
// model_state_init; other ranks pass NULL) from the ranks of DP replica 0, whose host arrays
// `local` follow their table `t`. Collective over the world.
void state_gather(Comm *c, const ModelConfig *cfg, TPScheme scheme, const ParamTable *t,
                  const StateArrays *local, ModelState *full, int families);
// Copy this rank's blocks (table t) out of a full state into the host arrays `local`.
void state_scatter(const ParamTable *t, StateArrays *local, const ModelState *full, int families);
// A Model's parameters and gradients only (no optimizer), e.g. for parity tests: host copies
// made here. Collective like state_gather.
void state_gather_model(Model *m, ModelState *full, int families);
