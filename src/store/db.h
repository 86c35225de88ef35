// db.h — the SQLite run registry: one row per launch of an experiment (`make exp`), one
// row per training run (who, what, where, with which code, libraries and overrides), its
// step metrics, validation losses, communication volumes (rank 0 per collective; every
// rank's totals per step), memory use and events; views that summarise them. Schema,
// views and example queries: docs/database.md.
//
// Logging is buffered: rundb_log_* append to memory, rundb_flush writes everything in
// ONE transaction through prepared statements that stay open. The database never kills
// training: a flush that finds the file busy (locked by another process), full or
// unwritable keeps the rows in memory, warns once per failure streak on stderr and
// tries again later with a growing back-off; rundb_close and the run lifecycle calls
// wait longer (RunDBPatience) and then report one clean error. A database that cannot
// be opened, is damaged (PRAGMA quick_check) or has a newer schema is refused at open
// with a message naming the file (exit 2).
#pragma once
#include <stdint.h>
#include "host.h"
#include "../core/metrics.h"

#define RUNDB_SCHEMA_VERSION 7   // PRAGMA user_version of databases this build writes (1 to 6 are migrated)

typedef struct RunDB RunDB;

// Everything in a `runs` row that the caller provides (status, started_at, ended_at,
// error and resumed_count are managed by the functions below).
typedef struct {
    char uid[256];               // "<experiment>.<variant alias>.<YYYYmmdd-HHMMSS>.<pid>": also the checkpoint folder name
    char experiment[256];
    char variant[256];
    char manifest_path[1024];
    char experiment_version[128];// the manifest's `version:` field (the experiment's own version), as written
    int manifest_format;         // the manifest's `manifest_version:` (file format; 0 = unknown)
    char manifest_sha256[65];
    const char *config_json;     // resolved configuration (not copied; may be NULL)
    const char *const *overrides;// the --set "key=value" strings the run was started with (not copied)
    int n_overrides;
    int64_t launch_id;           // the launch (`make exp`) this run belongs to; 0 = none (run by hand)
    int repeat_index;            // 0-based repetition of its variant inside the launch (REPEAT=N)
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
    double peak_gflops;          // the sgemm peak MFU is relative to: one host's (all cores) x hosts used;
                                 // a simulated run: the profile's device peak x devices
    char kind[16];               // "measured" (trained; "" means the same) or "simulated" (build/simulate)
    char hardware[128];          // a simulated run's hardware profile ("" for a measured run)
} RunInfo;

// Copy the host facts into a RunInfo (host, pid, cpu/gpu, compiler, cflags, libraries, git).
void runinfo_set_host(RunInfo *ri, const HostFacts *h);
// library_versions (after runinfo_set_host) gains "key": "value" (JSON-escaped).
void runinfo_add_library(RunInfo *ri, const char *key, const char *value);
// host_facts() + runinfo_set_host(): collects everything now.
void runinfo_host_facts(RunInfo *ri);

// Open (creating the parent directory and the schema if absent; migrating schema 1) in
// WAL mode with a busy timeout and foreign keys on. Refused with exit 2 and a message
// naming the file: a path that cannot be opened or created, a file that is not SQLite,
// a damaged database (PRAGMA quick_check), a schema newer than RUNDB_SCHEMA_VERSION.
RunDB *rundb_open(const char *path);
// Flushes (waiting up to the final patience), then closes. Returns 0, or 1 when buffered
// rows could not be written (one error line on stderr says how many and why).
int rundb_close(RunDB *db);
const char *rundb_path(const RunDB *db);
// The database is held by identity: the file opened (its device and inode, a descriptor of
// it kept open) must still be the file at its path. rundb_intact: 1 if it is and, with deep,
// PRAGMA quick_check passes; else 0 and what is wrong in why (a database moved, deleted or
// replaced, a copy written over it in place).
int rundb_intact(RunDB *db, int deep, char *why, size_t n);
// Before a run is recorded 'completed': every buffered row written, the database intact
// (rundb_intact, deep), the run's row there with its uid, and a step row for every step
// 1..steps. 1, or 0 and what is wrong in why. Never dies (a damaged file is a reason).
int rundb_run_complete(RunDB *db, int64_t run, const char *uid, int steps, char *why, size_t n);

// How long a write waits for a busy database. busy_ms: SQLite's busy timeout of one
// attempt (default 2000 ms); final_s: how long rundb_close, rundb_end_run and the other
// lifecycle calls keep retrying a busy database (default 600 s; a full disk or an I/O
// error is retried 3 times over a few seconds instead).
void rundb_set_patience(RunDB *db, int busy_ms, double final_s);

// ---- launches: one `make exp` = one launch ---------------------------------------------
typedef struct {
    char experiment[256];
    char manifest_path[1024];
    char experiment_version[128];
    int manifest_format;
    char manifest_sha256[65];
    const char *manifest_text;   // the manifest file's text (not copied)
    const char *const *overrides;// SET= strings given to every run (not copied)
    int n_overrides;
    char variant_filter[256];    // VARIANT= ("" = every variant that is not on demand)
    int repeat;                  // REPEAT= (>= 1): the variants run `repeat` times, interleaved
    double load_avg;             // 1-minute load average at the start (-1 unknown)
    double peak_gflops;          // the host's sgemm peak (host_peaks: measured once per machine, all
                                 // cores) every run's MFU uses; a simulated launch: the profile's peak of one device
    HostFacts host;
    char kind[16];               // "measured" ("" means the same) or "simulated" (make exp SIMULATE=1)
    char hardware[128];          // a simulated launch's hardware profile
    char launcher[512];          // how the ranks are started: "mpirun", "srun --mpi=pmix", ... ("" = none:
                                 // every run one process, or simulated)
} LaunchInfo;
// New launch, status 'running'. Returns launches.id.
int64_t rundb_begin_launch(RunDB *db, const LaunchInfo *li);
// status: completed | failed | interrupted.
void rundb_end_launch(RunDB *db, int64_t launch, const char *status);
// A launch refused before any rank started (the pre-flight: no device, not enough memory):
// status 'failed', launches.error := why.
void rundb_refuse_launch(RunDB *db, int64_t launch, const char *why);

typedef struct {
    int64_t id;
    char experiment[256], status[16], started_at[32];
    char experiment_version[128], manifest_sha256[65];
    char variant_filter[256];
    int repeat;
    double peak_gflops, load_avg;
    double peak_check_gflops;    // the sgemm measured at the launch's start (NAN: none)
    double peak_load;            // the 1-minute load its peak was measured at (NAN: unknown)
    char peak_note[400];         // "" when that peak was measured quietly (rundb_peak_note)
    char host[256];
    char kind[16], hardware[128];// "measured" or "simulated"; the profile of a simulated launch
    char launcher[512];          // launches.launcher ("" = none)
    char error[1024];            // launches.error: why it was refused before any rank started ("" = it was not)
    int n_overrides;
    char **overrides;            // malloc'd (rundb_launch_row_free)
} LaunchRow;
// The launch with this id (1), or 0.
int rundb_launch(RunDB *db, int64_t id, LaunchRow *out);
// The newest launch of an experiment (1), or 0.
int rundb_latest_launch(RunDB *db, const char *experiment, LaunchRow *out);
// The launch of the experiment just before launch `before` (1), or 0.
int rundb_previous_launch(RunDB *db, const char *experiment, int64_t before, LaunchRow *out);
void rundb_launch_row_free(LaunchRow *row);
// May a run join launch `id` (train --launch, simulate --record --launch)? The one rule: the
// launch is in this database and is of the run's experiment, manifest text (manifest_sha256;
// NULL: a plain YAML file, not compared), kind ("measured" or "simulated") and, for a simulated
// launch, hardware profile. 1, or 0 with why (the launch named: its experiment, kind, hardware)
// and a hint that is itself valid (how to list the launches; leave out --launch).
int rundb_launch_joinable(RunDB *db, int64_t id, const char *experiment, const char *manifest_sha256, const char *kind,
                          const char *hardware, char *why, size_t why_n, char *hint, size_t hint_n);

// ---- the sgemm peak of a host (host_peaks): one place decides the peak MFU is relative to ---
// A peak measured while other work takes cores is too low, and MFU against it too high (a
// launch stored 100 GFLOP/s at load 4 where later checks reached 315). So: the peak of a
// machine (host name, CPU model, cores) is its newest host_peaks row; every launch (and every
// run made by hand on the CPU) measures the sgemm again as a check; a check more than
// RUNDB_PEAK_MARGIN above the peak replaces it (the best of the checks is kept: an sgemm can
// only be slowed by other work), one more than RUNDB_PEAK_MARGIN below it warns that this
// machine is busy now; MEASURE_PEAK=1 stores a new measurement whatever it is. A peak
// measured at a 1-minute load above RUNDB_PEAK_QUIET_LOAD per core is "under load": the
// tables mark MFU against it, and runs.peak_note / launches.peak_note say so.
#define RUNDB_PEAK_MARGIN 0.10
#define RUNDB_PEAK_QUIET_LOAD 0.25
typedef struct { int64_t id; double gflops, load_avg; char measured_at[32]; } HostPeak;
// The newest stored peak of this machine (host name, CPU model, core count): 1, or 0.
int rundb_host_peak(RunDB *db, const HostFacts *h, HostPeak *out);
// A new measurement of this machine (load_avg: the 1-minute load while it ran, -1 unknown).
int64_t rundb_store_host_peak(RunDB *db, const HostFacts *h, double gflops, double load_avg);
typedef struct {
    double gflops;               // the peak MFU is relative to
    double load_avg;             // the 1-minute load it was measured at (-1 unknown)
    int64_t id;                  // its host_peaks row
    char measured_at[32];
    double check, check_load;    // this measurement and the load at it
    char note[400];              // "" for a peak measured quietly; else why MFU against it may be high
    char message[1600];          // what was decided, and any warning: lines for the console
} PeakDecision;
// The one decision (above): check_gflops measured now at check_load; remeasure: store it as
// the new peak (MEASURE_PEAK=1). Stores the check when it becomes the peak.
void rundb_decide_peak(RunDB *db, const HostFacts *h, double check_gflops, double check_load, int remeasure, PeakDecision *out);
// The note for a peak measured at `load_avg` on `cores` cores: "" when quiet (at most
// RUNDB_PEAK_QUIET_LOAD per core), else one sentence (an unknown load, -1, is said too).
void rundb_peak_note(double gflops, double load_avg, int cores, char *buf, size_t n);
// A launch's check beside its peak: launches.peak_check_gflops, peak_load_1m, peak_note.
void rundb_set_launch_peak(RunDB *db, int64_t launch, const PeakDecision *d);
// The load and note of the peak a run's MFU is relative to (runs.peak_load_1m, peak_note).
void rundb_set_run_peak(RunDB *db, int64_t run, double load_avg, const char *note);

// ---- runs ------------------------------------------------------------------------------
// New run, status 'running', started_at now. Returns runs.id.
int64_t rundb_begin_run(RunDB *db, const RunInfo *ri);
// Buffered rows (written by the next rundb_flush). Steps, validation and comm rows
// replace an earlier row with the same key (a resumed run re-doing steps).
void rundb_log_step(RunDB *db, int64_t run, const StepMetrics *sm);
void rundb_log_val(RunDB *db, int64_t run, int step, int64_t tokens_seen, double loss);
// kind: all_reduce|all_gather|reduce_scatter|broadcast|send|recv|barrier;
// phase: forward|backward|recompute|optimizer|pipeline|other; group: tp|dp|pp|world
// (the process group the collective ran over); layer -1 = not layer-specific. wait_seconds:
// the part of seconds spent waiting for the group's last rank to arrive (NAN: not measured).
void rundb_log_comm(RunDB *db, int64_t run, int step, const char *kind, const char *phase, const char *group,
                    int layer, int64_t calls, int64_t elements, int64_t bytes, double seconds, double wait_seconds);
// One rank's communication totals of one step (all kinds, phases, groups and layers).
void rundb_log_comm_rank(RunDB *db, int64_t run, int step, int rank, int tp_rank, int pp_rank, int dp_rank,
                         int64_t calls, int64_t elements, int64_t bytes, double seconds);
// The run's memory categories as stored (memory.category): one table, RUNDB_MEMORY_NAMES.
// (The back end's own MemCategory, backend.h, is finer — activations and working set apart,
// communication staging — and spelled short ("params") in its tables; a run records
// parameters = params, gradients = grads, optimizer, activations = acts + working, peak_rss.)
typedef enum { RUN_MEM_PARAMETERS, RUN_MEM_GRADIENTS, RUN_MEM_OPTIMIZER, RUN_MEM_ACTIVATIONS, RUN_MEM_PEAK_RSS,
               RUN_MEM_COUNT } RunMemory;
extern const char *const RUNDB_MEMORY_NAMES[RUN_MEM_COUNT + 1];   // "parameters", ..., NULL
// category: one of RUNDB_MEMORY_NAMES
void rundb_set_memory(RunDB *db, int64_t run, const char *category, int64_t bytes);
// kind: checkpoint|resumed|error|interrupted|diverged|dump|config_change|warning|backend (what the back end
// decided for the run: which attention ran for a shape, and why); step -1 = none (NULL).
void rundb_event(RunDB *db, int64_t run, int step, const char *kind, const char *detail);
// Write all buffered rows in one transaction. Never dies on a busy, full or unwritable
// database: returns 0 when everything is written, 1 when rows stay buffered (a warning
// says so; the next flush retries once the back-off has passed).
int rundb_flush(RunDB *db);
// Like rundb_flush, but retries for up to `patience_s` seconds (checkpoints call it so
// that a step's rows are in the database before its checkpoint becomes final).
int rundb_flush_wait(RunDB *db, double patience_s);

// A simulated run's model (build/simulate --record): one row of the `simulation` table.
// Its step (rundb_log_step), communication (rundb_log_comm, with modeled seconds) and
// memory rows are logged like a measured run's.
typedef struct {
    char hardware[128], hardware_path[1024], hardware_sha256[65], precision[8];
    int micro_batches, critical_stage;
    double step_s, compute_s, comm_s, p2p_s, bubble_s;   // the critical stage's split of the step
    double tokens_per_s, mfu, hfu;
    double memory_bytes, memory_capacity;               // the largest rank's total; the device's
    int memory_fits;
    const char *report_json;     // build/simulate's JSON report (not copied; may be NULL)
} RunSimulation;
// Written at once (one transaction, retried like the lifecycle calls; dies with exit 2
// when the database cannot be written).
void rundb_record_simulation(RunDB *db, int64_t run, const RunSimulation *s);

// Flush, then the end of a run: status ('completed'|'failed'|'interrupted'|'diverged'),
// ended_at := now, error := error (NULL ok). 'failed', 'interrupted' and 'diverged' also
// log an event of that kind ('failed' as 'error'). A run already 'failed' keeps its
// status and first message (the first failure of any rank is the cause); 'interrupted'
// replaces only 'running' (a signal thread may have recorded it already).
// Returns 0, or 1 if the database could not be written within the patience.
int rundb_end_run(RunDB *db, int64_t run, const char *status, const char *error);
// The end statuses of a run, one table (RUNDB_END_STATUS[RUN_END_COMPLETED] = "completed").
typedef enum { RUN_END_COMPLETED, RUN_END_FAILED, RUN_END_INTERRUPTED, RUN_END_DIVERGED, RUN_END_COUNT } RunEnd;
extern const char *const RUNDB_END_STATUS[RUN_END_COUNT + 1];
// From any process (another rank, a signal thread): open `path`, set the run's status
// as rundb_end_run would, close. 'interrupted' only replaces 'running'. Never dies:
// returns 0, or 1 with one warning line on stderr. For the die hooks of every rank.
int rundb_mark_run(const char *path, int64_t run, const char *status, const char *message);
// From a process that does not own the run (exp after its child ended): set the status
// only if the run is still 'running' AND the process recorded as its owner (runs.pid on
// this host) is gone. A live run is only ever changed by its owner: a second resume that
// was refused ("run ... is live") leaves the live run alone. Returns 1 if it changed the
// run, 0 if not (owner alive, another host, not running), -1 with a warning on a failure.
int rundb_mark_orphan(const char *path, int64_t run, const char *status, const char *message);
// A run continues from its checkpoint at from_step: status 'running', resumed_count+1,
// pid/host of this process, ended_at/error cleared, event 'resumed'; step, validation
// and comm rows after from_step are deleted (they are redone). from_step 0: a run stopped
// before its first checkpoint trains again from the start as the same run (every row of
// it redone). from_step < 0: keep rows.
// overrides (may be NULL): the run's --set strings from now on (stored + new ones).
void rundb_resume_run(RunDB *db, int64_t run, int from_step, const char *const *overrides, int n_overrides);
// Runs still 'running' whose process is gone (same host and kill(pid,0) says ESRCH),
// or on another host and started more than 7 days ago, become 'interrupted' (with an
// event); launches still 'running' whose runs are all finished and whose starting
// process is gone become 'interrupted' too. Returns how many runs.
int rundb_mark_stale(RunDB *db);

// ---- lookups ---------------------------------------------------------------------------
typedef struct {
    int64_t id;
    char uid[256], experiment[256], variant[256];
    char status[16];
    char experiment_version[128], manifest_sha256[65];
    char started_at[32];
    int resumed_count;
    int last_step;               // highest logged step (0 if none)
    int64_t launch_id;           // 0 = none
    int repeat_index;
    double peak_gflops;          // the peak its MFU is relative to (host peak x hosts; NAN: none)
} RunRow;
// Latest run (by started_at, then id) of (experiment, variant): 1 and *out, or 0.
int rundb_latest_run(RunDB *db, const char *experiment, const char *variant, RunRow *out);
// The run with this uid: 1 and *out, or 0.
int rundb_run_by_uid(RunDB *db, const char *uid, RunRow *out);
// The run of (launch, variant, repeat_index): 1 and *out, or 0.
int rundb_launch_run(RunDB *db, int64_t launch, const char *variant, int repeat_index, RunRow *out);
// The --set strings a run was started (or last resumed) with: the count; *out malloc'd
// (rundb_free_strings).
int rundb_run_overrides(RunDB *db, int64_t run, char ***out);
void rundb_free_strings(char **list, int n);
// Before MPI, on every rank of a resume: open `path` read-only (no schema change) and
// look up the run with `uid` (or, uid NULL/"", the latest of (experiment, variant)) and
// its stored overrides. Returns 1 and fills *out / *overrides (malloc'd), or 0 when the
// database or the run does not exist.
int rundb_peek_run(const char *path, const char *experiment, const char *variant, const char *uid,
                   RunRow *out, char ***overrides, int *n_overrides);
// Number of runs of (experiment, experiment_version) whose manifest_sha256 differs from
// `sha256` (an edited manifest whose version was not bumped); *first = the earliest.
int rundb_manifest_conflicts(RunDB *db, const char *experiment, const char *experiment_version,
                             const char *sha256, RunRow *first);
// The training loss logged at `step` of a run (NAN if absent).
double rundb_step_loss(RunDB *db, int64_t run, int step);
// The last step S such that the run has a step row for every step 1..S (0: none). A
// resume continues only from a checkpoint at or below it: rows lost to a full disk are
// then recomputed, never left missing under a 'completed' run.
int rundb_steps_contiguous(RunDB *db, int64_t run);
// The configuration a run trains with (config_json, or after a resume that changed it, its
// last config_change event's): malloc'd, NULL if none is stored.
char *rundb_run_config(RunDB *db, int64_t run);
// The newest checkpoint the run recorded (its 'checkpoint' events): the step, its path in
// path[n]; -1 when the run never recorded one (a resume tells "never written" from "gone").
int rundb_last_checkpoint(RunDB *db, int64_t run, char *path, size_t n);
// The value of one configuration key ("model.d_model") in the configurations two runs
// ran with (a resume that changed it: its config_change event's), as text ("" if
// absent): 1 if they differ, else 0.
int rundb_config_differs(RunDB *db, int64_t run_a, int64_t run_b, const char *dotted_key,
                         char *value_a, char *value_b, size_t n);

// ---- the comparison table ----------------------------------------------------------------
// SQL of a run's timed steps (the rows of `steps` aliased s; RUN: the run's id as an SQL
// expression, "?1" or "r.id"): after warm-up, the first max(1, last_step/10) steps, unless the
// run has a single step (a simulated run). The views (db_schema.c) say the same.
#define RUNDB_TIMED_STEPS_SQL(RUN) \
    "s.run_id = " RUN " AND s.step_seconds > 0 AND (s.step > (SELECT MAX(1, MAX(step) / 10) FROM steps WHERE run_id = " RUN ") " \
    "OR (SELECT COUNT(*) FROM steps WHERE run_id = " RUN ") = 1)"
// A run's median step time in ms over those steps (the middle one, or the mean of the two
// middle ones): run_summary.median_ms_per_step for one run, cheap inside a query over a few
// runs (make watch) where the view would summarise every run of the database.
#define RUNDB_MEDIAN_MS_SQL(RUN) \
    "(SELECT 1000.0 * AVG(step_seconds) FROM (SELECT s.step_seconds, ROW_NUMBER() OVER (ORDER BY s.step_seconds) AS i, " \
    "COUNT(*) OVER () AS n FROM steps s WHERE " RUNDB_TIMED_STEPS_SQL(RUN) ") WHERE i IN ((n + 1) / 2, (n + 2) / 2))"
// One row per variant. Only completed runs enter the numbers; the others are counted
// (n_runs - n_completed) and listed by the caller from rundb_launch_runs.
typedef struct {
    char variant[256];
    int n_runs, n_completed;     // runs of the variant considered; those completed
    int64_t run_id;              // its first completed run (else its first run)
    char uid[256], status[16];   // that run's; status "mixed" when the runs' statuses differ
    int steps;                   // last logged step of that run
    double final_loss;           // train loss at the last step (median over the completed runs; NAN: none)
    double val_loss;             // last validation loss (median; NAN: none)
    double ms_per_step;          // median step time after warm-up (per run), median over runs
    double ms_lo, ms_hi;         // spread: min..max of the run medians (n_completed > 1), else
                                 // the 10th..90th percentile of the single run's timed steps
    int timed_steps;             // steps after warm-up in that run (the first max(1, steps/10) are warm-up)
    double tokens_per_step;      // tokens of one optimizer step
    double tokens_per_s;         // tokens_per_step / ms_per_step: consistent with the ms/step column
    double mfu;                  // tokens_per_s x flops_per_token / the run's recorded peak
    int64_t peak_memory;         // bytes: peak_rss if recorded, else the sum of the categories (0: none)
    int64_t comm_bytes;          // per step, rank 0's view: all comm rows / steps that have comm rows
    int64_t comm_calls;          // collective calls per step, same rows
    double comm_ms;              // rank 0's ms inside collectives per step (median over the timed steps,
                                 // then over the completed runs; NAN: no collectives)
    double comm_wait_ms;         // the part of comm_ms spent waiting for the last peer to arrive (same
                                 // medians; NAN: not measured): comm_ms - comm_wait_ms moved data
    int peak_loaded;             // the reference run's peak was measured under load (runs.peak_note)
} VariantSummary;
// The runs of a launch, in the order they ran (repeat-interleaved). *out malloc'd.
int rundb_launch_runs(RunDB *db, int64_t launch, RunRow **out);
// One row per variant of the given runs (variants in order of first appearance).
int rundb_summarize(RunDB *db, const int64_t *run_ids, int n_runs, VariantSummary **out);
// A run's median step time after warm-up, in seconds (NAN: no timed step): the number that
// stands for the run in the table's medians and in the timing verdicts (compare.h).
double rundb_run_median_step(RunDB *db, int64_t run);
// The latest measured run of each variant of `experiment` (for runs made without a launch;
// simulated runs are not among them), in order of each variant's first run. Returns the count; *out malloc'd (free it).
int rundb_compare(RunDB *db, const char *experiment, VariantSummary **out);

// For tests: the connection (to provoke busy, full or damaged databases).
struct sqlite3 *rundb_handle(RunDB *db);
