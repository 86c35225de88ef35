// compare.h — runs of one or several launches side by side (make compare, exp --compare,
// exp --summary --csv/--json): one row per (launch, variant) with the configuration keys
// on which the compared runs differ as columns, as a text table, CSV or JSON; and the
// step series of those runs as CSV or JSON. Reads the run database only.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "db.h"

typedef enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON } OutputFormat;

// A short, stable name for a long variant name (tables, figure legends): the name itself
// when it has at most VARIANT_ALIAS_MAX characters; a grid name ("online_rmsnorm=false,
// linear=cola") as its keys' initials with the values ("or=false,l=cola") if that is
// short enough; else the first characters and a hash of the whole ("abcdefghijklmnop~1f2e").
// analysis/plot_common.py store_variant_alias() computes the same.
#define VARIANT_ALIAS_MAX 20
void store_variant_alias(const char *variant, char *out, size_t n);

// Bytes as "254.5 MiB" (one decimal, binary units); communication per step with enough
// digits to tell two variants apart whose traffic differs by a few KiB ("9.104 MiB").
void store_format_bytes(char *buf, size_t n, double b);
void store_format_comm_bytes(char *buf, size_t n, double b);

// The summary of the runs (ids in the order given; grouped by launch, then variant in
// order of first appearance) in `format`. Returns the number of rows.
int compare_print(RunDB *db, const int64_t *run_ids, int n_runs, OutputFormat format, FILE *out);
// Every logged step of the runs: run_id, launch_id, variant, step, tokens_seen, loss, lr,
// grad_norm, step_seconds, tokens_per_s, mfu (CSV: one line per step; JSON: one object
// per run with its steps).
void compare_steps(RunDB *db, const int64_t *run_ids, int n_runs, OutputFormat format, FILE *out);
