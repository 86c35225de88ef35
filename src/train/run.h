// run.h — one training run of one manifest variant, start to finish: the run row in
// SQLite, the step loop with its metrics and communication counters, validation,
// checkpoints, step dumps, resume, and a clean record of how the run ended.
#pragma once
#include "../config/manifest.h"
#include "../parallel/comm.h"

typedef struct {
    const Manifest *manifest;      // NULL: a plain configuration (no experiment layer)
    const char *config_path;       // the file trained (manifest path or plain YAML)
    const char *variant_name;      // "" = the only variant
    Config cfg;                    // the resolved, finalized configuration
    int resume;                    // continue the latest run of (experiment, variant)
    int use_db;                    // record in run.db (0: --no-db, stdout only)
} RunOptions;

// Runs on every rank of comm's grid; rank 0 prints and records. Returns the exit code.
int run_training(const RunOptions *opt, Comm *comm);
