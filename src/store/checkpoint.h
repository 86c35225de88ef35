// checkpoint.h — HDF5 training checkpoints: everything a bit-exact resume needs
// (parameters, AdamW m and v, the optimizer step, the data position), in the layout
// documented in docs/checkpoint-format.md (a contract: other tools read these files).
//
// Files are named <dir>/step_<N>.h5. A checkpoint is written to "<path>.tmp", flushed
// and fsync'ed, closed, renamed into place and the directory fsync'ed: a file with the
// final name is always complete; a crash leaves at most a *.tmp, which is never read.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "../model/state.h"

#define CHECKPOINT_FORMAT "boost-c checkpoint"
#define CHECKPOINT_FORMAT_VERSION 1

typedef struct {
    int64_t step;           // optimizer steps completed
    int64_t tokens_seen;
    uint64_t samples_seen;  // training samples consumed: the data loader position
    uint64_t seed;          // train.seed (data sampling is a pure function of seed and sample index)
    int64_t adam_t;         // AdamW step t of the last update (attribute /optimizer step)
    // Text: write reads these (NULL = ""); checkpoint_read fills malloc'd copies
    // (free with checkpoint_meta_free).
    char *manifest;         // full manifest text
    char *config_json;      // resolved configuration (config_to_json)
    char *git_commit;
} CheckpointMeta;

// Write the params, m and v families of the unsharded state `s` and `meta` to `path`
// (atomically, see above).
// Creates the parent directory.
void checkpoint_write(const char *path, const ModelState *s, const CheckpointMeta *meta);
// Load a checkpoint into s (built with model_state_init(..., STATE_PARAMS | STATE_OPTIM)
// for the configuration being resumed). Refuses (exit 2, naming the file and the dataset) a file that is not a
// boost-c checkpoint of format_version 1, a missing tensor, a tensor of another shape
// or type, or a model tensor the configuration does not have. `out` may be NULL.
void checkpoint_read(const char *path, ModelState *s, CheckpointMeta *out);
void checkpoint_meta_free(CheckpointMeta *meta);

// "<dir>/step_<step>.h5"
void checkpoint_path(char *buf, size_t n, const char *dir, int64_t step);

typedef struct { int64_t step; char path[1024]; } CheckpointEntry;
// Complete checkpoints in dir (step_<N>.h5 that open as HDF5 with the right format
// attribute), ascending by step; *.tmp files are ignored, unreadable files are skipped
// with a warning on stderr. Returns the count (0 if dir does not exist); *out is
// malloc'd (free it; NULL when 0).
int checkpoint_list(const char *dir, CheckpointEntry **out);
// The highest-step complete checkpoint: 1 and fills path/step, or 0 if none.
int checkpoint_latest(const char *dir, char *path, size_t n, int64_t *step);
// Keep the newest keep_last complete checkpoints (keep_last >= 1): deletes older
// step_<N>.h5 files (complete or not) and step_<N>.h5.tmp leftovers with N below the
// newest complete step. Returns the number of files removed.
int checkpoint_prune(const char *dir, int keep_last);
