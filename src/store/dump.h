// dump.h — step dumps: one self-contained HDF5 file with everything needed to replay
// or cross-check one optimizer step elsewhere (e.g. against a PyTorch reference):
// the weights the step's forward used, its whole batch, its mean loss, the gradients
// of that loss before clipping, and optionally the activations of the last
// micro-batch. Layout: docs/checkpoint-format.md ("Step dumps").
#pragma once
#include <stdint.h>
#include <stddef.h>
#include "../core/outdir.h"
#include "../model/state.h"

#define DUMP_FORMAT "boost-c step dump"
#define DUMP_FORMAT_VERSION 1

// Call after the step's backward passes and BEFORE clipping and the optimizer update.
//   run_uid: the run the dump belongs to (its attribute run_uid);
//   inputs/targets: the step's K micro-batches, [rows = K*B, T] row-major;
//   loss: mean loss of the step; config_json: resolved configuration (may be NULL);
//   s: the unsharded weights the step used and the gradients (STATE_PARAMS | STATE_GRADS);
//   acts: NULL, or the single-process model whose slot 0 holds the LAST micro-batch's
//   activations (host back end): they go to /activations.
// Written atomically as `name` in the folder `d` (core/outdir.h: "<name>.tmp.<pid>" created
// exclusively, never through a link, fsync, renameat). Only a dump of the same run is ever
// replaced (dump_may_write_in); anything else at `name` is refused, exit 2, as is a failure
// (full disk, unwritable folder, a link or a foreign file at the temporary name), which
// removes the partial file and names both.
void dump_write_in(const OutDir *d, const char *name, const char *run_uid, const ModelState *s, const Model *acts,
                   int64_t step, const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                   double loss);
// The same at `path` (its folder created).
void dump_write(const char *path, const char *run_uid, const ModelState *s, const Model *acts, int64_t step,
                const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                double loss);

// A dump folder holds the dumps of one run: a second run would overwrite them or mix its own
// in among them, and its results would be lost or taken for the first one's.
// May run_uid's dump be written at `name` in `d`? 0 when nothing is there or a step dump of
// that run is (a step redone after a resume); else -1 and, in err, what is there: another
// run's step dump (naming the run), a step dump that names no run (written before dumps stored
// their run), a checkpoint, a symbolic link, a folder, a file boost-c did not write.
int dump_may_write_in(const OutDir *d, const char *name, const char *run_uid, char *err, size_t n);
// Every step_<N>.h5 of `d` is a step dump of run_uid (dump_may_write_in): 0, or -1 and the
// first that is not (its name and what it is) in err. Other names are not looked at.
int dump_folder_is_runs(const OutDir *d, const char *run_uid, char *err, size_t n);
