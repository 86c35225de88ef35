// db.h — the SQLite run registry: one row per training run (who, what, where, with
// which code and libraries), its step metrics, validation losses, communication
// volumes, memory use and events. Schema and example queries: docs/database.md.
//
// Logging is buffered: rundb_log_* append to memory, rundb_flush writes everything in
// ONE transaction through prepared statements that stay open. The trainer flushes
// every few steps and at exit; run lifecycle calls (begin/end/resume) flush first.
// Any SQLite failure dies with file:line and SQLite's message.
#pragma once
#include <stdint.h>
#include "../train/trainer.h"

#define RUNDB_SCHEMA_VERSION 1   // PRAGMA user_version of databases this build writes

typedef struct RunDB RunDB;

// Everything in a `runs` row that the caller provides (status, started_at, ended_at,
// error and resumed_count are managed by the functions below).
typedef struct {
    char uid[256];               // "<experiment>.<variant>.<YYYYmmdd-HHMMSS>.<pid>": also the checkpoint folder name
    char experiment[256];
    char variant[256];
    char manifest_path[1024];
    char manifest_version[128];  // the manifest's own `version` field, as written
    char manifest_sha256[65];
    const char *config_json;     // resolved configuration (not copied; may be NULL)
    char git_commit[64];         // "unknown" outside a git checkout
    int git_dirty;               // 1: uncommitted changes; -1: unknown
    char host[256];
    int pid;
    char cpu_model[256];
    char gpu_model[256];         // "none" on CPU-only hosts
    char compiler[256];
    char cflags[512];
    char library_versions[1024]; // JSON: {"openblas":..,"hdf5":..,"sqlite":..,"libfyaml":..,"mpi":..}
    int tp, pp, dp, world_size;
    int64_t params;
    double flops_per_token;
    double peak_gflops;
} RunInfo;

// Fill host, pid, cpu_model, gpu_model, compiler, cflags, library_versions, git_commit
// and git_dirty (git run in the current directory; absent git -> "unknown", -1).
// Leaves the other fields alone. MPI need not be initialised.
void runinfo_host_facts(RunInfo *ri);

// Open (creating the parent directory and the schema if absent) in WAL mode with a
// busy timeout and foreign keys on. A database whose schema version is newer than
// RUNDB_SCHEMA_VERSION, or a file that is not SQLite, is refused (exit 2).
RunDB *rundb_open(const char *path);
void rundb_close(RunDB *db);     // flushes first
const char *rundb_path(const RunDB *db);

// New run, status 'running', started_at now. Returns runs.id.
int64_t rundb_begin_run(RunDB *db, const RunInfo *ri);
// Buffered rows (written by the next rundb_flush). Steps, validation and comm rows
// replace an earlier row with the same key (a resumed run re-doing steps).
void rundb_log_step(RunDB *db, int64_t run, const StepMetrics *sm);
void rundb_log_val(RunDB *db, int64_t run, int step, int64_t tokens_seen, double loss);
// kind: all_reduce|all_gather|reduce_scatter|broadcast|send|recv|barrier;
// phase: forward|backward|recompute|optimizer|pipeline|other; group: tp|dp|pp|world
// (the process group the collective ran over); layer -1 = not layer-specific.
void rundb_log_comm(RunDB *db, int64_t run, int step, const char *kind, const char *phase, const char *group,
                    int layer, int64_t calls, int64_t elements, int64_t bytes, double seconds);
// category: parameters|gradients|optimizer|activations|peak_rss
void rundb_set_memory(RunDB *db, int64_t run, const char *category, int64_t bytes);
// kind: checkpoint|resumed|error|interrupted|dump|config_change; step -1 = none (NULL).
void rundb_event(RunDB *db, int64_t run, int step, const char *kind, const char *detail);
// Write all buffered rows in one transaction.
void rundb_flush(RunDB *db);

// Flush, then status := status ('completed'|'failed'|'interrupted'), ended_at := now,
// error := error (NULL ok). 'failed' also logs an 'error' event, 'interrupted' an
// 'interrupted' event.
void rundb_end_run(RunDB *db, int64_t run, const char *status, const char *error);
// A run continues from its checkpoint at from_step: status 'running', resumed_count+1,
// pid/host of this process, ended_at/error cleared, event 'resumed'; step, validation
// and comm rows after from_step are deleted (they are redone). from_step < 0: keep rows.
void rundb_resume_run(RunDB *db, int64_t run, int from_step);
// Runs still 'running' whose process is gone (same host and kill(pid,0) says ESRCH),
// or on another host and started more than 7 days ago, become 'interrupted' (with an
// event). Returns how many.
int rundb_mark_stale(RunDB *db);

// ---- lookups for the experiment runner ----------------------------------------------
typedef struct {
    int64_t id;
    char uid[256], experiment[256], variant[256];
    char status[16];
    char manifest_version[128], manifest_sha256[65];
    char started_at[32];
    int resumed_count;
    int last_step;               // highest logged step (0 if none)
} RunRow;
// Latest run (by started_at, then id) of (experiment, variant): 1 and *out, or 0.
int rundb_latest_run(RunDB *db, const char *experiment, const char *variant, RunRow *out);
// Number of runs of (experiment, manifest_version) whose manifest_sha256 differs from
// `sha256` (an edited manifest whose version was not bumped); *first = the earliest.
int rundb_manifest_conflicts(RunDB *db, const char *experiment, const char *manifest_version,
                             const char *sha256, RunRow *first);

typedef struct {
    char variant[256];
    int64_t run_id;
    char uid[256], status[16];
    int steps;                   // last logged step
    double final_loss;           // train loss at the last logged step (NAN: none)
    double val_loss;             // validation loss at the last validated step (NAN: none)
    double ms_per_step;          // mean step time, first step excluded (unless it is the only one)
    double tokens_per_s;         // mean, same steps
    int64_t peak_memory;         // bytes: peak_rss if recorded, else the sum of the categories (0: none)
    int64_t comm_bytes;          // total bytes over all comm rows
    int64_t comm_calls;          // total collective calls over all comm rows
} VariantSummary;
// One row per variant of `experiment` (its latest run), in order of each variant's
// first run. Returns the count; *out malloc'd (free it).
int rundb_compare(RunDB *db, const char *experiment, VariantSummary **out);
