// compare.h — runs of one or several launches side by side (make compare, exp --compare,
// exp --summary --csv/--json): one row per (launch, variant) with the configuration keys
// on which the compared runs differ as columns, as a text table, CSV or JSON; and the
// step series of those runs as CSV or JSON. Reads the run database only.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "db.h"
#include "../core/stats.h"

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
// Time in collectives per step with its waiting part, "191.0 (31.8)" ("-": no collectives;
// "(-)": the wait was not measured), and the tables' legend lines for that column and for an
// MFU marked "*" (a peak measured under load).
void store_format_comm_ms(char *buf, size_t n, double comm_ms, double wait_ms);
void store_print_comm_ms_legend(FILE *out);
void store_print_peak_legend(FILE *out);

// The summary of the runs (ids in the order given; grouped by launch, then variant in
// order of first appearance) in `format`. Returns the number of rows.
int compare_print(RunDB *db, const int64_t *run_ids, int n_runs, OutputFormat format, FILE *out);
// Every logged step of the runs: run_id, launch_id, variant, step, tokens_seen, loss, lr,
// grad_norm, step_seconds, tokens_per_s, mfu (CSV: one line per step; JSON: one object
// per run with its steps).
void compare_steps(RunDB *db, const int64_t *run_ids, int n_runs, OutputFormat format, FILE *out);

// Timing verdicts: per pair of variants whether their step times differ beyond the runs' noise
// (core/stats.h: each completed run stands for itself by its median step time; the exact
// rank-sum test over runs, 95 %). The pairs, in this order: in each launch every variant
// against the launch's first (the manifest's baseline); one variant in a later launch against
// its first launch; when two or more launches of one experiment are compared and each
// variant's runs agree on every configuration key (train.threads aside), the launches pooled
// (every variant against the first). A run named twice counts once.
typedef struct {
    char scope[128];             // "launch 5", "launch 6 against launch 5", "2 launches pooled"
    char experiment[256];
    char a[256], b[256];         // the variants: b compared with a (the reference)
    int64_t launch_a, launch_b;  // their launches (0: runs without a launch; -1: pooled)
    int not_pooled;              // a pooled line that was not made: text says which key differs
    StatsVerdict v;
    char text[320];              // stats_verdict_text, or why the launches are not pooled
} CompareVerdict;
// The verdicts of the runs (ids as for compare_print). Returns the count; *out malloc'd.
int compare_verdicts(RunDB *db, const int64_t *run_ids, int n_runs, CompareVerdict **out);
// As lines under the tables (FORMAT_TABLE; with_scope: each line names its launch or pooling),
// or as CSV or JSON (docs/database.md "Timing verdicts" documents the fields).
void compare_print_verdicts(const CompareVerdict *v, int n, OutputFormat format, int with_scope, FILE *out);
