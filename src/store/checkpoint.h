// checkpoint.h — HDF5 training checkpoints: everything a bit-exact resume needs
// (parameters, AdamW m and v, the optimizer step, the data position), in the layout
// documented in docs/checkpoint-format.md (a contract: other tools read these files).
//
// Files are named <dir>/step_<N>.h5. The first 512 bytes are a checksum block (an HDF5 user
// block) holding the format version, the step and the CRC-32 of the rest of the file; it
// is verified before HDF5 reads anything. A checkpoint is written to "<path>.tmp.<pid>",
// created exclusively and never through a link (core/outdir.h), marked as boost-c's from its
// first bytes ("unsealed" until the checksum is in), flushed and fsync'ed, closed, renamed
// into place with renameat and the directory fsync'ed: a file with the final name was
// complete when written; a crash leaves at most a *.tmp.<pid>, which is never read. Every tensor carries the CRC-32 of its bytes
// and the metadata one CRC-32 of their own, so damage that happens later (a bad disk, a
// bad copy) is detected on load instead of being trained on.
//
// No function here crashes or exits with HDF5 objects open: an HDF5 failure (a damaged
// file, a full disk) closes what was opened, in order, and is reported once, naming the
// file and the operation.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "../config/config.h"
#include "../core/outdir.h"
#include "../model/state.h"

#define CHECKPOINT_FORMAT "boost-c checkpoint"
// 2: the checksum block, per-tensor "crc32" attributes and the root "meta_crc32"; HDF5 1.8+
// object headers.
// 1 (older builds): no checksums; refused with a message saying so.
#define CHECKPOINT_FORMAT_VERSION 2

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
    // Where the file comes from: the run's uid (its runs.uid and folder), its variant and the
    // path of the tokenizer its data was encoded with (absolute; "" for synthetic data). Covered by the root attribute identity_crc32,
    // not by meta_crc32, so that older builds still read these files; files written before
    // them read back as "".
    char *run_uid;
    char *variant;
    char *tokenizer_path;
    // The tokenizer itself (group /tokenizer): checkpoint_write embeds the bytes of the file
    // at tokenizer_path; the readers fill these from the file (tokenizer_bin NULL and
    // tokenizer_sha256 "" when it has none: synthetic data, or written before checkpoints
    // embedded it). tokenizer_sha256 is the hex SHA-256 of the bytes (= sha256sum of the
    // tokenizer.bin they were read from).
    uint8_t *tokenizer_bin;
    size_t tokenizer_bin_n;
    char tokenizer_sha256[65];
} CheckpointMeta;

// Write the params, m and v families of the unsharded state `s` and `meta` to `path`
// (atomically, see above). Creates the parent directory. A failure (full disk, an
// unwritable directory) removes the partial file and exits 2 naming the checkpoint and
// the failed operation; the checkpoints already there are untouched.
void checkpoint_write(const char *path, const ModelState *s, const CheckpointMeta *meta);
// The same as step_<meta->step>.h5 in the folder d (a run's folder handle).
void checkpoint_write_in(const OutDir *d, const ModelState *s, const CheckpointMeta *meta);
// Load a checkpoint into s (built with model_state_init(..., STATE_PARAMS | STATE_OPTIM)
// for the configuration being resumed), verifying every checksum. Refuses (exit 2,
// naming the file and the dataset) a file that is not a boost-c checkpoint of this
// format_version, a damaged one (a checksum that does not match, an HDF5 object that
// cannot be read), a missing tensor, a tensor of another shape or type, or a model tensor
// the configuration does not have. `out` may be NULL.
void checkpoint_read(const char *path, ModelState *s, CheckpointMeta *out);
void checkpoint_meta_free(CheckpointMeta *meta);
// The metadata of a checkpoint without a model (to build one from its configuration):
// verifies the file as checkpoint_verify does, then 1 and *out (free with
// checkpoint_meta_free); else 0 and the reason in why (never exits).
int checkpoint_read_meta(const char *path, CheckpointMeta *out, char *why, size_t n);
// The checkpoint a user names (build/sample, build/export): a file as it is, or a run's
// folder's newest checkpoint that verifies (its path into file), verified, with its
// metadata (free with checkpoint_meta_free) and configuration (config_from_json, finalized);
// exit 2 with a message naming the file otherwise.
void checkpoint_open(const char *path, char *file, size_t n, CheckpointMeta *meta, Config *cfg);
// Verify a checkpoint without a model: format and version, the structure (every /model
// tensor has its m and v of the same shape, all float32), every tensor and the metadata
// against their checksums. 1 if good; else 0 and the reason in why (never exits).
int checkpoint_verify(const char *path, char *why, size_t n);

// (Re)write the checksum block of a checkpoint file for `step`: after writing, and for a
// tool that edited a checkpoint on purpose (h5py opens and writes these files like any
// HDF5 file with a user block). 0, or -1 and err.
int checkpoint_seal(const char *path, int64_t step, char *err, size_t n);

// "<dir>/step_<step>.h5"
void checkpoint_path(char *buf, size_t n, const char *dir, int64_t step);
// The N of a name "step_<N>.h5" (the name of checkpoints and step dumps), or -1.
int64_t checkpoint_name_step(const char *name);
// Is `path` a regular file (not a symlink) that starts with the checkpoint block's magic
// text, i.e. one boost-c wrote (sealed, or being written)? What pruning may delete and a
// step dump must not overwrite.
int checkpoint_written_here(const char *path);

typedef struct { int64_t step; char path[1024]; } CheckpointEntry;
typedef struct { int64_t step; char path[1024]; char reason[700]; } CheckpointSkip;
// Checkpoints in dir whose checksum block verifies and names step N (the file is read;
// HDF5 is not involved), ascending by step;
// *.tmp.<pid> files are ignored, other files (and names that are symbolic links) are skipped
// with a warning on stderr. Returns the count (0 if dir does not exist); *out is malloc'd
// (free it; NULL when 0). The _in forms take the run's folder handle (core/outdir.h).
int checkpoint_list(const char *dir, CheckpointEntry **out);
int checkpoint_list_in(const OutDir *d, CheckpointEntry **out);
// The newest checkpoint of dir that verifies (checkpoint_verify, and its step attribute
// is N): 1 and path/step filled, or 0 if there is none. Every newer step_<N>.h5 that
// does not verify is skipped with a warning on stderr naming it and the reason, and is
// listed in *skipped (malloc'd, newest first; free it) when skipped is not NULL.
// Resume uses it: a damaged newest checkpoint falls back to the one before, saying so.
int checkpoint_latest_good(const char *dir, char *path, size_t n, int64_t *step,
                           CheckpointSkip **skipped, int *n_skipped);
// The same for a resume: the newest checkpoint at or below max_step that verifies and
// belongs to run_uid (its run_uid attribute; NULL: any run), its metadata into *meta when
// meta is not NULL (free with checkpoint_meta_free). A checkpoint of another run (copied
// into this run's folder) is skipped with a warning naming its run, as a damaged one is.
int checkpoint_latest_of_run(const char *dir, const char *run_uid, int64_t max_step, char *path, size_t n, int64_t *step,
                             CheckpointMeta *meta, CheckpointSkip **skipped, int *n_skipped);
int checkpoint_latest_of_run_in(const OutDir *d, const char *run_uid, int64_t max_step, char *path, size_t n,
                                int64_t *step, CheckpointMeta *meta, CheckpointSkip **skipped, int *n_skipped);
int checkpoint_latest_good_in(const OutDir *d, char *path, size_t n, int64_t *step,
                              CheckpointSkip **skipped, int *n_skipped);
// Keep the newest keep_last checkpoints that verify (keep_last >= 1): deletes older
// step_<N>.h5 files (good or damaged), and leftovers step_<N>.h5.tmp.<pid> whose N is
// below the newest good step or whose writer (pid, this host) is gone — each only if it is
// a regular file that starts with the checkpoint block's magic text (never a link, never a
// file boost-c did not write: those are left alone with a warning). Damaged or unreadable
// files are warned about, never fatal; a file that cannot be deleted is a warning. Returns
// the number of files removed. The folder is never followed through a link.
int checkpoint_prune(const char *dir, int keep_last);
int checkpoint_prune_in(const OutDir *d, int keep_last);
