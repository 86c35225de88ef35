// state.h — the model's unsharded training state on the host, in fp32: what checkpoints
// and step dumps hold, whatever the process layout, dtype or device of the run (a run saved
// at tp = 2 in bf16 on a GPU resumes at tp = 1 on the CPU). The parameters are the fp32
// master weights; m and v are AdamW's moments; grads are the gradients of the step's mean
// loss before clipping (step dumps). Families not held are NULL.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "model.h"

enum { STATE_PARAMS = 1, STATE_GRADS = 2, STATE_OPTIM = 4, STATE_ALL = 7 };

typedef struct {
    ModelConfig cfg;
    ParamTable table;          // the single-process (unsharded) table
    float *params;             // [table.n_params] fp32
    float *grads;              // [table.n_params] or NULL
    float *m, *v;              // [table.n_params] or NULL (STATE_OPTIM)
} ModelState;

// Zeroed host buffers for the families in the STATE_* mask `families`.
void model_state_init(ModelState *s, const ModelConfig *cfg, int families);
void model_state_free(ModelState *s);
// params = the layout-independent initial weights of `seed` (what every run starts from).
void model_state_init_weights(ModelState *s, uint64_t seed);
