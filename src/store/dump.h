// dump.h — step dumps: one self-contained HDF5 file with everything needed to replay
// or cross-check one optimizer step elsewhere (e.g. against a PyTorch reference):
// the weights the step's forward used, its whole batch, its mean loss, the gradients
// of that loss before clipping, and optionally the activations of the last
// micro-batch. Layout: docs/checkpoint-format.md ("Step dumps").
#pragma once
#include <stdint.h>
#include "../core/outdir.h"
#include "../model/state.h"

#define DUMP_FORMAT "boost-c step dump"
#define DUMP_FORMAT_VERSION 1

// Call after the step's backward passes and BEFORE clipping and the optimizer update.
//   inputs/targets: the step's K micro-batches, [rows = K*B, T] row-major;
//   loss: mean loss of the step; config_json: resolved configuration (may be NULL);
//   s: the unsharded weights the step used and the gradients (STATE_PARAMS | STATE_GRADS);
//   acts: NULL, or the single-process model whose slot 0 holds the LAST micro-batch's
//   activations (host back end): they go to /activations.
// Written atomically as `name` in the folder `d` (core/outdir.h: "<name>.tmp.<pid>" created
// exclusively, never through a link, fsync, renameat); a failure (full disk, unwritable
// folder, a link or a foreign file at the temporary name) removes the partial file and exits 2
// naming both.
void dump_write_in(const OutDir *d, const char *name, const ModelState *s, const Model *acts, int64_t step,
                   const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                   double loss);
// The same at `path` (its folder created).
void dump_write(const char *path, const ModelState *s, const Model *acts, int64_t step,
                const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                double loss);
