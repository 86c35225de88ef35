// run.h — one training run of one manifest variant, start to finish: the run row in
// SQLite (with its launch, overrides and host), the step loop with its metrics and
// communication counters, validation, checkpoints, step dumps, resume, one owner per
// run (a lock), and a clean record of how the run ended on any rank:
//   completed     every step done
//   failed        an error on any rank (that rank's message; the first failure wins)
//   interrupted   SIGINT/SIGTERM/SIGHUP on any rank or to mpirun (stop.h); resumable
//   diverged      the training loss is not finite, or above DIVERGE_FACTOR x the loss of
//                 the run's first step (an untrained model's loss is about ln V; a run
//                 that climbs to twice it is not coming back); the last checkpoint stays
// Exit codes: 0 completed (or a resume of a completed run: nothing to do), 1 failed,
// 2 bad input or environment (docs: README "Exit codes"), 3 diverged, 128+signal.
//
// Fault injection for tests (BOOST_FAULT, comma-separated; docs/database.md):
//   kill_after_checkpoint=N   rank 0 SIGKILLs itself right after step N's checkpoint is final
//   fail=R@N                  rank R dies with "injected failure" after step N
//   signal=R@N:SIG[:TARGET]   rank R sends SIG (INT, TERM or HUP) after step N to TARGET: self
//                             (default), group (its process group, as Ctrl-C does) or parent
//                             (mpirun, which passes SIGTERM on to every rank)
#pragma once
#include "../config/manifest.h"
#include "../parallel/comm.h"

#define DIVERGE_FACTOR 2.0
#define EXIT_DIVERGED 3
// A trained model's loss is below ln V (an untrained one's is about ln V); a run that ends at
// more than three times it has not trained (model.embed_std=1e30: 2.6e31 at every step).
#define PLAUSIBLE_LOSS_FACTOR 3.0

typedef struct {
    const Manifest *manifest;      // the manifest trained (its name is the experiment)
    const char *config_path;       // the file trained (manifest path or plain YAML)
    const char *variant_name;      // "" = the only variant
    Config cfg;                    // the resolved, finalized configuration
    int resume;                    // continue a run from its newest checkpoint ...
    const char *resume_uid;        // ... this one ("" = the latest run of (experiment, variant))
    int use_db;                    // record in run.db (0: --no-db, stdout only)
    const char *const *overrides;  // the --set strings in effect (a resume: stored ones, then new ones)
    int n_overrides;
    const char *const *allow_change; // a resume: keys whose change of the run's meaning is allowed
    int n_allow_change;              // (--allow-change KEY; config/config_diff.h)
    int64_t launch_id;             // the launch (exp) this run belongs to; 0 = run by hand
    int repeat_index;              // its repetition inside the launch (REPEAT=N)
    double peak_gflops;            // sgemm peak of one host with all its cores, measured once by the
                                   // launch; 0 = measure it here (rank 0, the other ranks idle)
    int ranks_per_host;            // ranks sharing this host: MFU is relative to peak x hosts
    int print_config;              // print the resolved configuration (exp prints its own diff)
    const char *train_command;     // how this binary was invoked (argv[0]), for resume hints
} RunOptions;

// Runs on every rank of comm's grid; rank 0 prints and records. Returns the exit code.
int run_training(const RunOptions *opt, Comm *comm);
