// plan.h — what a launch and a run will do, decided in one place before anything starts.
//
// A launch (build/exp, `make exp`): which runs (variants x REPEAT, interleaved; on-demand
// variants left out unless named; a resume: which runs are done, which resume and from which
// run row, which start), the overrides in effect, which launcher starts the ranks (mpirun,
// srun inside a Slurm allocation, or what LAUNCHER= names) with which arguments, the exact
// argument vector of every run, and what is refused and why. A run (build/train, rank 0):
// a new run's uid, folder and lock, or the run to resume and its checkpoint (the newest that
// verifies and whose step rows are all recorded), the dump folder. The tools keep the command
// line, the processes and the printing; everything decided here is returned in a struct and
// tested against a temporary database without MPI or fork (tests/test_plan.c).
//
// Nothing here exits for a refusal: it is returned (PlanRefusal) with its message and hint, and
// the tool reports it (exit 2). Only a broken environment (a damaged database, out of memory)
// dies as everywhere else.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "../config/manifest.h"
#include "../core/outdir.h"
#include "../store/db.h"

// ---- a refusal --------------------------------------------------------------------------------
typedef struct {
    int refused;            // 1: nothing may start
    int preflight;          // 1: by the pre-flight (device, memory): a new launch records it (launches.error)
    char message[3072];
    char hint[4096];        // a command or setting that is itself valid ("" = none)
} PlanRefusal;

// ---- where the ranks run: what the pre-flight checks against ---------------------------------
#define PLAN_MAX_DEVICES 64
typedef struct {
    char where[300];                         // "this host (vm)", or "node gpu01 (probed through srun)"
    char host[256];                          // the host's name
    double mem_available;                    // bytes (MemAvailable; -1 unknown)
    int cores;                               // physical cores this process may use (0 unknown)
    int n_devices;                           // visible CUDA devices (0: none)
    double device_memory[PLAN_MAX_DEVICES];  // bytes each, as the driver reports it (0 unknown)
    char device_name[128];                   // the first device's name
    char no_device[300];                     // why there is none ("" when there are devices)
} PlanResources;
// This host's: /proc/meminfo, the cores of this process's CPU set, the CUDA devices.
void plan_resources_here(PlanResources *r);
// As "key value" lines (build/exp --probe-resources prints them where the ranks run), and back:
// 1, or 0 when the text holds no such lines (the probe printed something else).
void plan_resources_print(const PlanResources *r, FILE *f);
int plan_resources_parse(const char *text, PlanResources *r);

// The pre-flight of one variant before any of its ranks starts: on a back end with a device per
// rank (cuda), a device must be visible and the largest rank's memory (the dry back end's
// accounting, trainer_memory_report) times the ranks that share a device must fit its memory; on
// the CPU the ranks on a node must fit what the node has available. ranks_per_node: the ranks
// that share one node's memory and devices. 0, or 1 and *out (preflight = 1). The one check
// build/exp (every variant of a launch) and build/train make.
int plan_preflight(const Config *c, const char *experiment, const char *variant, const PlanResources *res,
                   int ranks_per_node, PlanRefusal *out);

// ---- the launcher ------------------------------------------------------------------------------
typedef enum { LAUNCHER_MPIRUN, LAUNCHER_SRUN, LAUNCHER_OTHER } LauncherKind;
typedef struct {
    // asked for (make exp LAUNCHER="srun --mpi=pmix" LAUNCHER_ARGS="..." HOSTFILE=...)
    const char *const *words; int n_words;   // LAUNCHER= as words (0: the default)
    const char *const *args; int n_args;     // LAUNCHER_ARGS= as words, after the launcher's own
    const char *hostfile;                    // HOSTFILE= (NULL or "": none)
    // the environment (plan_launch_env)
    char slurm_job[64];      // SLURM_JOB_ID ("" outside a Slurm allocation)
    char slurm_tasks_spec[128]; // SLURM_TASKS_PER_NODE: the allocation's tasks per node ("2(x3),1")
    int slurm_mpi_type;      // SLURM_MPI_TYPE is set: srun's --mpi is the user's
    int cores;               // physical cores of this host (0 unknown)
    int root;                // running as root (Open MPI's mpirun refuses it without --allow-run-as-root)
    int openmpi;             // the MPI library is Open MPI: mpirun and mpiexec are Open MPI's
    long pid;                // this process (names srun's job steps: boost.<pid>.<run>)
} LaunchEnv;
void plan_launch_env(LaunchEnv *e);

typedef struct {
    LauncherKind kind;
    char **words; int n_words;  // the launcher with its fixed arguments (LAUNCHER_ARGS included)
    char label[512];            // the launcher as the user would write it: launches.launcher
    char why[512];              // how it was chosen, for the launch's header
    int slots;                  // task slots the ranks get (hostfile, allocation, cores; 0 unknown)
    int nodes;                  // nodes the ranks may spread over (1 when unknown)
    int first_node_slots;       // slots of the first node (0 unknown)
    int remote;                 // the ranks may run on another host than this one: the pre-flight
                                // probes through the launcher (plan_probe_argv)
    char slots_from[300];       // where slots comes from ("SLURM_TASKS_PER_NODE=2", "hosts: 4 slots", "cores")
} PlanLauncher;
// The words that start `world` ranks (the program follows), NULL-terminated, malloc'd (each word
// and the vector: plan_free_words); *oversubscribed says whether --oversubscribe (mpirun) or
// --overcommit (srun) was added because world exceeds the slots. step: srun's job-step name index.
char **plan_launcher_argv(const PlanLauncher *l, const LaunchEnv *e, int world, int step, int *oversubscribed);
void plan_free_words(char **words);

// ---- a launch ------------------------------------------------------------------------------------
typedef struct {
    const char *path;                        // the manifest file
    const char *const *sets; int n_sets;     // --set given now
    const char *const *allow_change; int n_allow_change;   // --allow-change KEY for resumed runs (config/config_diff.h)
    const char *only;                        // --variant (NULL or "": every variant not on demand)
    int repeat;                              // --repeat (a resume keeps the launch's)
    int resume; int64_t launch_id;           // --resume [--launch ID] (0: the latest)
    int dry;                                 // --dry-run: nothing recorded
    const char *simulate_profile;            // --simulate: the hardware profile's file (NULL: train)
    const char *train_bin, *sim_bin;         // build/train, build/simulate
    const LaunchEnv *env;
} LaunchRequest;

typedef enum { PLAN_RUN_START, PLAN_RUN_RESUME, PLAN_RUN_DONE, PLAN_RUN_ON_DEMAND } PlanRunAction;
typedef struct {
    int variant;              // index into man->variants
    int repeat_index;
    int world;                // tp x pp x dp
    PlanRunAction action;
    RunRow prior;             // RESUME, DONE: this launch's run of (variant, repeat_index)
    int under_launcher;       // started by the launcher (else the process itself: one rank, here)
    int oversubscribed;       // the launcher was told to place more ranks than slots
    char **argv;              // NULL-terminated (after plan_commands; DONE, ON_DEMAND: NULL)
} PlannedRun;

typedef struct {
    Manifest *man;            // the manifest (a resume: loaded with the launch's overrides, then the new ones)
    char path[1024], db_path[1024], only[256];
    int repeat, resume, dry, simulate;
    LaunchRow launch;         // a resume: the launch continued (id 0: a new launch)
    char **all_sets; int n_all;   // the overrides of every new run (a resume: the launch's, then the new)
    char **new_sets; int n_new;   // the ones given now (a resumed run adds them to its stored ones)
    PlanLauncher launcher;
    int uses_launcher;        // some run starts under the launcher
    PlannedRun *runs; int n_runs; // in launch order: repeat 0's variants, then repeat 1's, ...
    int n_to_run;             // runs that START or RESUME
    int ranks_per_node;       // the most ranks of one run on one node (the pre-flight's)
    const LaunchRequest *rq;
    PlanRefusal refusal;
} LaunchPlan;

// Decide the launch: 0, or 1 with p->refusal (nothing recorded, nothing started). db: the launch's
// database (NULL for a dry run of a new launch: nothing is looked up).
int plan_launch(const LaunchRequest *rq, RunDB *db, LaunchPlan *p);
// The pre-flight of every variant that will run, against the resources where its ranks run:
// 0, or 1 with p->refusal (preflight = 1).
int plan_launch_preflight(LaunchPlan *p, const PlanResources *res);
// The words that run `build/exp --probe-resources` once where the ranks run (through the
// launcher, one task): NULL-terminated, malloc'd (plan_free_words); NULL when they run here.
char **plan_probe_argv(const LaunchPlan *p, const char *exp_bin);
// Every run's argument vector, with the launch's id and peak (0, 0 for a dry run).
void plan_commands(LaunchPlan *p, int64_t launch_id, double peak_gflops);
void plan_free(LaunchPlan *p);

// ---- a run (build/train, rank 0) ---------------------------------------------------------------
typedef struct {
    const Config *cfg;
    const char *experiment, *variant;
    const char *manifest_sha256;   // the manifest trained (NULL: a plain YAML file)
    int resume; const char *resume_uid;  // --resume[=UID] ("" or NULL: the latest run of (experiment, variant))
    int64_t launch_id;             // --launch (0: none)
    const char *stamp;             // a new run's time stamp, "YYYYmmdd-HHMMSS" (NULL: now, UTC)
    long pid;                      // a new run's uid ends with it (0: this process's)
} RunRequest;

typedef struct {
    int noop;                 // the run to resume completed its steps: nothing to do
    RunRow row;               // the run resumed (noop too)
    char uid[256], ckpt_dir[1300], dump_dir[1400];
    char resume_path[1500];   // the checkpoint to resume from ("" = a new run, or from step 0)
    int64_t resume_step;
    int64_t resume_run;       // the run row resumed (0 = a new run)
    int64_t launch_id;        // a resumed run's own launch
    double resumed_peak;      // its recorded peak (host peak x hosts)
    int restart;              // resumed from step 0 (it stopped before its first checkpoint) ...
    int restart_stopped_at;   // ... at this step ...
    char *resume_config;      // the configuration the resumed run ran with: its checkpoint's, or its
                              // recorded one when it restarts from step 0 (malloc'd; plan_run_free)
    OutDir ckpt_root, run_dir;   // handles (core/outdir.h) on run.checkpoint_dir and the run's own folder,
                                 // which holds the run's lock (an flock held until the process exits)
    OutDir dump_out;             // where step dumps go, when run.dump_steps is set (fd -1: none)
    char warning[4096];       // printed by the tool ("" = none)
    PlanRefusal refusal;
} RunPlan;
// Rank 0's decision, folder and lock: 0, or 1 with p->refusal (folders it made are removed
// again). db NULL: --no-db (no resume, no launch).
int plan_run(RunDB *db, const RunRequest *rq, RunPlan *p);
void plan_run_free(RunPlan *p);
// <run.dump_dir, or <checkpoint folder>/dumps>: where a run's step dumps go.
void plan_dump_dir(const Config *cfg, const char *ckpt_dir, char *buf, size_t n);
