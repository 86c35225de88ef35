// compare.c — see compare.h. The numbers come from rundb_summarize (the statistics `make
// exp` prints and run_summary holds), the configuration from the run_config view.
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "../core/check.h"
#include "../core/json.h"
#include "../core/stats.h"

// FNV-1a: the same 32 bits in analysis/plot_common.py.
static uint32_t fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 16777619u; }
    return h;
}

void store_variant_alias(const char *v, char *out, size_t n) {
    if (strlen(v) <= VARIANT_ALIAS_MAX) { xsnprintf(out, n, "%s", v); return; }
    if (strchr(v, '=')) {   // a grid name: key=value,key=value; a key: its words' initials
        char a[512] = "";
        size_t k = 0;
        int at_key = 1, word_start = 1;
        for (const char *p = v; *p && k + 2 < sizeof a; p++, a[k] = 0) {
            if (*p == '=') { at_key = 0; a[k++] = '='; }
            else if (*p == ',') { at_key = 1; word_start = 1; a[k++] = ','; }
            else if (!at_key) a[k++] = *p;
            else if (*p == '.') {   // "model.linear": the last part of a dotted key
                char *comma = strrchr(a, ',');
                k = comma ? (size_t)(comma - a + 1) : 0;
                word_start = 1;
            }
            else if (*p == '_') word_start = 1;
            else if (word_start) { a[k++] = *p; word_start = 0; }
        }
        if (strlen(a) <= VARIANT_ALIAS_MAX) { xsnprintf(out, n, "%s", a); return; }
    }
    xsnprintf(out, n, "%.15s~%04x", v, (unsigned)(fnv1a(v) & 0xffff));
}

// ---- cells of the text table: (rows) x cols strings, widths from the longest -----------
typedef struct { char **cell; int rows, cols; } Grid;

static void csv_field(FILE *out, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, out); return; }
    fputc('"', out);
    for (; *s; s++) { if (*s == '"') fputc('"', out); fputc(*s, out); }
    fputc('"', out);
}
static void json_str(FILE *out, const char *s) {
    size_t need = json_escape(NULL, 0, s) + 1;
    char *b = xmalloc(need);
    json_escape(b, need, s);
    fputs(b, out);
    free(b);
}

void store_format_bytes(char *buf, size_t n, double b) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

void store_format_comm_ms(char *buf, size_t n, double comm_ms, double wait_ms) {
    if (isnan(comm_ms)) snprintf(buf, n, "-");
    else if (isnan(wait_ms)) snprintf(buf, n, "%.1f (-)", comm_ms);
    else snprintf(buf, n, "%.1f (%.1f)", comm_ms, wait_ms);
}

void store_print_comm_ms_legend(FILE *out) {
    fprintf(out, "coll ms (wait): rank 0's ms inside collectives per step (median over the timed steps), and in parentheses the\n"
                 "part spent waiting for the last rank of the group to arrive; the rest moved data (\"-\": not measured).\n");
}

void store_print_peak_legend(FILE *out) {
    fprintf(out, "*: MFU against an sgemm peak measured at a load above the quiet bound (runs.peak_note): other work took cores\n"
                 "from it, so the peak is likely low and MFU high; make exp ... MEASURE_PEAK=1 on a quiet machine measures it again.\n");
}

void store_format_comm_bytes(char *buf, size_t n, double b) {
    if (b >= 1024.0 * 1024 * 1024) snprintf(buf, n, "%.3f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) snprintf(buf, n, "%.3f MiB", b / (1024.0 * 1024));
    else if (b >= 1024) snprintf(buf, n, "%.2f KiB", b / 1024.0);
    else snprintf(buf, n, "%.0f B", b);
}

// "id, id, ..." of the runs, for IN (...).
static char *id_list(const int64_t *ids, int n) {
    char *s = xcalloc((size_t)n * 24 + 2, 1);
    size_t k = 0;
    for (int i = 0; i < n; i++) k += (size_t)sprintf(s + k, "%s%lld", i ? "," : "", (long long)ids[i]);
    if (!n) s[0] = '0';
    return s;
}

// The configuration keys on which the runs differ (run_config), sorted.
static int differing_keys(RunDB *db, const int64_t *ids, int n, char ***out) {
    char *in = id_list(ids, n);
    size_t len = 2 * strlen(in) + 384;
    char *sql = xmalloc(len);
    // a key some runs lack (an older engine's configuration) differs too; runs without any
    // recorded configuration do not make every key differ
    snprintf(sql, len, "SELECT key FROM run_config WHERE run_id IN (%s) GROUP BY key "
                       "HAVING COUNT(DISTINCT COALESCE(value, 'null')) > 1 OR COUNT(*) < "
                       "(SELECT COUNT(DISTINCT run_id) FROM run_config WHERE run_id IN (%s)) ORDER BY key", in, in);
    sqlite3_stmt *st = db_prep(db, sql);
    int k = 0, cap = 8;
    char **keys = xmalloc((size_t)cap * sizeof *keys);
    while (db_next_row(db, st, "finding the configuration keys that differ")) {
        if (k == cap) { cap *= 2; keys = xrealloc(keys, (size_t)cap * sizeof *keys); }
        keys[k++] = xstrdup((const char *)sqlite3_column_text(st, 0));
    }
    db_finalize(db, st);
    free(sql); free(in);
    *out = keys;
    return k;
}

static void config_value(RunDB *db, int64_t run, const char *key, char *buf, size_t n) {
    sqlite3_stmt *st = db_prep(db, "SELECT COALESCE(value, 'null') FROM run_config WHERE run_id=?1 AND key=?2");
    db_bind_i64(db, st, 1, run);
    db_bind_text(db, st, 2, key);
    buf[0] = 0;
    if (db_next_row(db, st, "reading a configuration value")) db_col_text(st, 0, buf, n);
    else xsnprintf(buf, n, "-");
    db_finalize(db, st);
}

// The same value as JSON (numbers and booleans bare, strings quoted, arrays as written; "null"
// when the run's configuration lacks the key), for the JSON export.
static void config_json_value(RunDB *db, int64_t run, const char *key, char *buf, size_t n) {
    char path[300];
    xsnprintf(path, sizeof path, "$.%s", key);
    sqlite3_stmt *st = db_prep(db, "WITH c(j) AS (SELECT " RUN_CONFIG_SQL("runs") " FROM runs WHERE id=?1) "
                                   "SELECT CASE json_type(j, ?2) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
                                   "WHEN 'text' THEN json_quote(json_extract(j, ?2)) WHEN 'integer' THEN json_extract(j, ?2) "
                                   "WHEN 'real' THEN json_quote(json_extract(j, ?2)) ELSE json_extract(j, ?2) END FROM c");
    db_bind_i64(db, st, 1, run);
    db_bind_text(db, st, 2, path);
    buf[0] = 0;
    if (db_next_row(db, st, "reading a configuration value")) db_col_text(st, 0, buf, n);
    if (!buf[0]) xsnprintf(buf, n, "null");
    db_finalize(db, st);
}

typedef struct { int64_t launch; char experiment[256]; VariantSummary s; } Row;

static int64_t run_launch(RunDB *db, int64_t run, char *experiment, size_t n) {
    sqlite3_stmt *st = db_prep(db, "SELECT COALESCE(launch_id, 0), experiment FROM runs WHERE id=?1");
    db_bind_i64(db, st, 1, run);
    int64_t l = -1;
    if (db_next_row(db, st, "reading a run's launch")) { l = sqlite3_column_int64(st, 0); db_col_text(st, 1, experiment, n); }
    db_finalize(db, st);
    return l;
}

// Group by launch (in order of first appearance), each summarised by variant.
static int summarize_groups(RunDB *db, const int64_t *ids, int n, Row **out) {
    int64_t *launch = xcalloc((size_t)(n ? n : 1), sizeof *launch);
    char (*exp)[256] = xcalloc((size_t)(n ? n : 1), sizeof *exp);
    for (int i = 0; i < n; i++) {
        launch[i] = run_launch(db, ids[i], exp[i], sizeof exp[i]);
        if (launch[i] < 0) die_input("no run %lld in %s", (long long)ids[i], rundb_path(db));
    }
    Row *rows = NULL;
    int nr = 0;
    int64_t *sub = xcalloc((size_t)(n ? n : 1), sizeof *sub);
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) if (launch[j] == launch[i] && !strcmp(exp[j], exp[i])) seen = 1;
        if (seen) continue;
        int m = 0;
        for (int j = i; j < n; j++) if (launch[j] == launch[i] && !strcmp(exp[j], exp[i])) sub[m++] = ids[j];
        VariantSummary *vs = NULL;
        int k = rundb_summarize(db, sub, m, &vs);
        rows = xrealloc(rows, (size_t)(nr + k + 1) * sizeof *rows);
        for (int j = 0; j < k; j++) {
            rows[nr].launch = launch[i];
            xsnprintf(rows[nr].experiment, sizeof rows[nr].experiment, "%s", exp[i]);
            rows[nr++].s = vs[j];
        }
        free(vs);
    }
    free(sub); free(launch); free(exp);
    *out = rows;
    return nr;
}

static void fmt(char *b, size_t n, const char *f, double v) { if (isnan(v)) snprintf(b, n, "-"); else snprintf(b, n, f, v); }

// The runs to compare, each once and each there: a run named twice (RUNS="3 3", or a run of
// a launch that is also given) would be counted twice ("runs 2/2"), an unknown id would
// leave no row without a word.
static void check_run_ids(RunDB *db, const int64_t *ids, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            if (ids[j] == ids[i])
                die_input_hint("name each run once, and leave out runs of the launches given (make compare LAUNCH=\"5\" RUNS=\"9\")",
                               "run %lld is compared twice: it is named twice (RUNS, --run) or is also a run of a launch given "
                               "(LAUNCH, --launch); each run counts once", (long long)ids[i]);
        sqlite3_stmt *st = db_prep(db, "SELECT 1 FROM runs WHERE id=?1");
        db_bind_i64(db, st, 1, ids[i]);
        int there = db_next_row(db, st, "looking up a run");
        db_finalize(db, st);
        if (!there)
            die_input_hint("the runs: sqlite3 DB \"SELECT id, experiment, variant, status FROM runs\"", "no run %lld in %s",
                           (long long)ids[i], rundb_path(db));
    }
}

int compare_print(RunDB *db, const int64_t *ids, int n, OutputFormat format, FILE *out) {
    rundb_flush(db);
    check_run_ids(db, ids, n);
    Row *rows = NULL;
    int nr = summarize_groups(db, ids, n, &rows);
    char **keys = NULL;
    int nk = differing_keys(db, ids, n, &keys);
    const char *fixed_tab[] = {"launch", "experiment", "variant"};
    const char *stats_tab[] = {"runs", "steps", "loss", "val loss", "median ms", "spread", "tokens/s", "MFU", "peak mem",
                               "comm/step", "calls", "coll ms (wait)"};
    const char *fixed_csv[] = {"launch_id", "experiment", "variant", "alias", "run_id"};
    const char *stats_csv[] = {"runs", "completed", "steps", "final_loss", "val_loss", "median_ms_per_step", "ms_lo", "ms_hi",
                               "spread_of", "tokens_per_s", "mfu", "peak_memory_bytes", "comm_bytes_per_step", "comm_calls_per_step",
                               "comm_ms_per_step", "comm_wait_ms_per_step"};
    int any_alias = 0, any_loaded = 0;
    if (format == FORMAT_JSON) fputs("[", out);
    Grid g = {0};
    if (format == FORMAT_TABLE) {   // the header row
        g.cols = 3 + nk + 12;
        g.cell = xcalloc((size_t)(nr + 1) * (size_t)g.cols, sizeof *g.cell);
        int c = 0;
        for (int i = 0; i < 3; i++) g.cell[c++] = xstrdup(fixed_tab[i]);
        for (int i = 0; i < nk; i++) g.cell[c++] = xstrdup(keys[i]);
        for (int i = 0; i < 12; i++) g.cell[c++] = xstrdup(stats_tab[i]);
        g.rows = 1;
    } else if (format == FORMAT_CSV) {
        for (int i = 0; i < 5; i++) { if (i) fputc(',', out); csv_field(out, fixed_csv[i]); }
        for (int i = 0; i < nk; i++) { fputc(',', out); csv_field(out, keys[i]); }
        for (int i = 0; i < 16; i++) { fputc(',', out); csv_field(out, stats_csv[i]); }
        fputc('\n', out);
    }
    for (int r = 0; r < nr; r++) {
        const VariantSummary *s = &rows[r].s;
        char alias[64], launch[32], tmp[1100];
        store_variant_alias(s->variant, alias, sizeof alias);
        if (strcmp(alias, s->variant)) any_alias = 1;
        snprintf(launch, sizeof launch, rows[r].launch ? "%lld" : "-", (long long)rows[r].launch);
        int spread_runs = s->n_completed > 1;
        if (format == FORMAT_TABLE) {
            char c[12][64];
            snprintf(c[0], 64, "%d/%d", s->n_completed, s->n_runs);
            snprintf(c[1], 64, "%d", s->steps);
            fmt(c[2], 64, "%.4f", s->final_loss);
            fmt(c[3], 64, "%.4f", s->val_loss);
            fmt(c[4], 64, s->ms_per_step < 10 ? "%.3f" : "%.1f", s->ms_per_step);
            if (isnan(s->ms_lo)) snprintf(c[5], 64, "-");
            else snprintf(c[5], 64, "%.1f-%.1f %s", s->ms_lo, s->ms_hi, spread_runs ? "runs" : "p10-90");
            fmt(c[6], 64, "%.0f", s->tokens_per_s);
            fmt(c[7], 64, s->peak_loaded ? "%.1f%%*" : "%.1f%%", 100 * s->mfu);
            if (s->peak_loaded && !isnan(s->mfu)) any_loaded = 1;
            store_format_bytes(c[8], 64, (double)s->peak_memory);
            store_format_comm_bytes(c[9], 64, (double)s->comm_bytes);
            snprintf(c[10], 64, "%lld", (long long)s->comm_calls);
            store_format_comm_ms(c[11], 64, s->comm_ms, s->comm_wait_ms);
            if (s->n_completed == 0) { snprintf(c[8], 64, "-"); snprintf(c[9], 64, "-"); }
            int k = g.rows * g.cols;
            g.cell[k++] = xstrdup(launch);
            g.cell[k++] = xstrdup(rows[r].experiment);
            g.cell[k++] = xstrdup(alias);
            for (int i = 0; i < nk; i++) { config_value(db, s->run_id, keys[i], tmp, sizeof tmp); g.cell[k++] = xstrdup(tmp); }
            for (int i = 0; i < 12; i++) g.cell[k++] = xstrdup(c[i]);
            g.rows++;
        } else {
            double num[] = { s->final_loss, s->val_loss, s->ms_per_step, s->ms_lo, s->ms_hi, s->tokens_per_s, s->mfu };
            if (format == FORMAT_CSV) {
                fprintf(out, "%s,", launch);
                csv_field(out, rows[r].experiment); fputc(',', out);
                csv_field(out, s->variant); fputc(',', out);
                csv_field(out, alias);
                fprintf(out, ",%lld", (long long)s->run_id);
                for (int i = 0; i < nk; i++) { config_value(db, s->run_id, keys[i], tmp, sizeof tmp); fputc(',', out); csv_field(out, tmp); }
                fprintf(out, ",%d,%d,%d", s->n_runs, s->n_completed, s->steps);
                for (int i = 0; i < 7; i++) {
                    if (i == 5) fprintf(out, ",%s", isnan(s->ms_lo) ? "" : spread_runs ? "runs" : "p10-90");
                    if (isnan(num[i])) fputc(',', out); else fprintf(out, ",%.17g", num[i]);
                }
                fprintf(out, ",%lld,%lld,%lld", (long long)s->peak_memory, (long long)s->comm_bytes, (long long)s->comm_calls);
                double cm[] = { s->comm_ms, s->comm_wait_ms };
                for (int i = 0; i < 2; i++) if (isnan(cm[i])) fputc(',', out); else fprintf(out, ",%.17g", cm[i]);
                fputc('\n', out);
            } else {
                fprintf(out, "%s\n  {\"launch_id\": %s, \"experiment\": ", r ? "," : "", rows[r].launch ? launch : "null");
                json_str(out, rows[r].experiment);
                fputs(", \"variant\": ", out); json_str(out, s->variant);
                fputs(", \"alias\": ", out); json_str(out, alias);
                fprintf(out, ", \"run_id\": %lld, \"config\": {", (long long)s->run_id);
                for (int i = 0; i < nk; i++) {
                    config_json_value(db, s->run_id, keys[i], tmp, sizeof tmp);
                    fputs(i ? ", " : "", out); json_str(out, keys[i]); fprintf(out, ": %s", tmp);
                }
                fprintf(out, "}, \"runs\": %d, \"completed\": %d, \"steps\": %d", s->n_runs, s->n_completed, s->steps);
                const char *names[] = { "final_loss", "val_loss", "median_ms_per_step", "ms_lo", "ms_hi", "tokens_per_s", "mfu" };
                for (int i = 0; i < 7; i++) {
                    if (i == 5) { fputs(", \"spread_of\": ", out); json_str(out, isnan(s->ms_lo) ? "" : spread_runs ? "runs" : "p10-90"); }
                    if (isnan(num[i])) fprintf(out, ", \"%s\": null", names[i]); else fprintf(out, ", \"%s\": %.17g", names[i], num[i]);
                }
                fprintf(out, ", \"peak_memory_bytes\": %lld, \"comm_bytes_per_step\": %lld, \"comm_calls_per_step\": %lld",
                        (long long)s->peak_memory, (long long)s->comm_bytes, (long long)s->comm_calls);
                const char *cn[] = { "comm_ms_per_step", "comm_wait_ms_per_step" };
                double cm[] = { s->comm_ms, s->comm_wait_ms };
                for (int i = 0; i < 2; i++)
                    if (isnan(cm[i])) fprintf(out, ", \"%s\": null", cn[i]); else fprintf(out, ", \"%s\": %.17g", cn[i], cm[i]);
                fputc('}', out);
            }
        }
    }
    if (format == FORMAT_JSON) fputs("\n]\n", out);
    if (format == FORMAT_TABLE) {
        int *w = xcalloc((size_t)g.cols, sizeof *w);
        for (int r = 0; r < g.rows; r++)
            for (int c = 0; c < g.cols; c++) { int l = (int)strlen(g.cell[r * g.cols + c]); if (l > w[c]) w[c] = l; }
        for (int r = 0; r < g.rows; r++) {
            for (int c = 0; c < g.cols; c++) {
                const char *v = g.cell[r * g.cols + c];
                int left = c < 3 + nk;   // names and configuration values left, numbers right
                fprintf(out, left ? "%s%-*s" : "%s%*s", c ? "  " : "", c + 1 < g.cols || !left ? w[c] : 0, v);
            }
            fputc('\n', out);
        }
        free(w);
        if (!nk) fprintf(out, "configuration: the compared runs agree on every key\n");
        else fprintf(out, "configuration: the %d key%s on which the compared runs differ are the columns after variant "
                          "(the value of each row's first completed run)\n", nk, nk == 1 ? "" : "s");
        if (any_alias)
            for (int r = 0; r < nr; r++) {
                char alias[64];
                store_variant_alias(rows[r].s.variant, alias, sizeof alias);
                int dup = 0;
                for (int j = 0; j < r; j++) dup |= !strcmp(rows[j].s.variant, rows[r].s.variant);
                if (strcmp(alias, rows[r].s.variant) && !dup) fprintf(out, "  %s = %s\n", alias, rows[r].s.variant);
            }
        fprintf(out, "median ms: median step time after warm-up (run_summary.median_ms_per_step), median over a row's completed\n"
                     "runs; spread: min-max of the run medians (\"runs\", REPEAT >= 2) or the 10th-90th percentile of one run's steps\n"
                     "(\"p10-90\"); tokens/s = tokens per step / median ms; MFU against each run's recorded peak.\n");
        store_print_comm_ms_legend(out);
        if (any_loaded) store_print_peak_legend(out);
        CompareVerdict *v = NULL;
        int nv = compare_verdicts(db, ids, n, &v);
        int scoped = 0;   // name the launch of each line unless all are of one launch
        for (int i = 0; i < nv; i++) scoped |= strcmp(v[i].scope, v[0].scope) != 0 || v[i].launch_a != v[i].launch_b;
        compare_print_verdicts(v, nv, FORMAT_TABLE, scoped, out);
        free(v);
        for (int i = 0; i < g.rows * g.cols; i++) free(g.cell[i]);
        free(g.cell);
    }
    for (int i = 0; i < nk; i++) free(keys[i]);
    free(keys);
    free(rows);
    return nr;
}

void compare_steps(RunDB *db, const int64_t *ids, int n, OutputFormat format, FILE *out) {
    rundb_flush(db);
    check_run_ids(db, ids, n);
    if (format == FORMAT_CSV) fputs("run_id,launch_id,variant,step,tokens_seen,loss,lr,grad_norm,step_seconds,tokens_per_s,mfu\n", out);
    else fputs("[", out);
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = db_prep(db, "SELECT r.id, COALESCE(r.launch_id, 0), r.variant, s.step, s.tokens_seen, s.loss, s.lr, "
                                       "s.grad_norm, s.step_seconds, s.tokens_per_s, s.mfu "
                                       "FROM runs r LEFT JOIN steps s ON s.run_id = r.id WHERE r.id=?1 ORDER BY s.step");
        db_bind_i64(db, st, 1, ids[i]);
        int first = 1;
        while (db_next_row(db, st, "reading the step series")) {
            char variant[256];
            db_col_text(st, 2, variant, sizeof variant);
            long long launch = sqlite3_column_int64(st, 1);
            if (format == FORMAT_JSON && first) {
                fprintf(out, "%s\n  {\"run_id\": %lld, \"launch_id\": ", i ? "," : "", (long long)ids[i]);
                if (launch) fprintf(out, "%lld", launch); else fputs("null", out);
                fputs(", \"variant\": ", out); json_str(out, variant); fputs(", \"steps\": [", out);
            }
            if (sqlite3_column_type(st, 3) == SQLITE_NULL) { first = 0; continue; }   // a run without steps
            if (format == FORMAT_CSV) {
                if (launch) fprintf(out, "%lld,%lld,", (long long)ids[i], launch); else fprintf(out, "%lld,,", (long long)ids[i]);
                csv_field(out, variant);
                fprintf(out, ",%lld,%lld", (long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4));
                for (int c = 5; c <= 10; c++)
                    if (sqlite3_column_type(st, c) == SQLITE_NULL) fputc(',', out);
                    else fprintf(out, ",%.17g", sqlite3_column_double(st, c));
                fputc('\n', out);
            } else {
                fprintf(out, "%s{\"step\": %lld, \"tokens_seen\": %lld", first ? "" : ", ",
                        (long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4));
                const char *names[] = { "loss", "lr", "grad_norm", "step_seconds", "tokens_per_s", "mfu" };
                for (int c = 5; c <= 10; c++)
                    if (sqlite3_column_type(st, c) == SQLITE_NULL) fprintf(out, ", \"%s\": null", names[c - 5]);
                    else fprintf(out, ", \"%s\": %.17g", names[c - 5], sqlite3_column_double(st, c));
                fputc('}', out);
            }
            first = 0;
        }
        db_finalize(db, st);
        if (format == FORMAT_JSON && !first) fputs("]}", out);
    }
    if (format == FORMAT_JSON) fputs("\n]\n", out);
}

// ---- timing verdicts --------------------------------------------------------------------------
// One side of a comparison: the completed runs of one variant in one launch (or pooled), each
// standing for itself by its median step time (stats.h says why a run, not a step).
typedef struct {
    int64_t launch;               // 0: runs made without a launch
    char experiment[256], variant[256];
    int repeat;                   // the launch's REPEAT (0: no launch)
    int n;                        // completed runs with timed steps
    double *sec;                  // their median step times
    int64_t *ids;                 // their run ids (every run of the side, completed or not)
    int n_ids;
} Side;

static Side *side_of(Side **sides, int *ns, int64_t launch, const char *experiment, const char *variant) {
    for (int i = 0; i < *ns; i++)
        if ((*sides)[i].launch == launch && !strcmp((*sides)[i].experiment, experiment) && !strcmp((*sides)[i].variant, variant))
            return &(*sides)[i];
    *sides = realloc(*sides, (size_t)(*ns + 1) * sizeof **sides);
    CHECK(*sides, "out of memory");
    Side *s = &(*sides)[(*ns)++];
    memset(s, 0, sizeof *s);
    s->launch = launch;
    xsnprintf(s->experiment, sizeof s->experiment, "%s", experiment);
    xsnprintf(s->variant, sizeof s->variant, "%s", variant);
    return s;
}

static void side_add(Side *s, int64_t id, double sec) {
    s->ids = realloc(s->ids, (size_t)(s->n_ids + 1) * sizeof *s->ids);
    s->sec = realloc(s->sec, (size_t)(s->n + 1) * sizeof *s->sec);
    CHECK(s->ids && s->sec, "out of memory");
    s->ids[s->n_ids++] = id;
    if (sec > 0) s->sec[s->n++] = sec;
}

static void add_verdict(CompareVerdict **out, int *nv, const char *scope, const Side *a, const Side *b, int repeat) {
    *out = realloc(*out, (size_t)(*nv + 1) * sizeof **out);
    CHECK(*out, "out of memory");
    CompareVerdict *v = &(*out)[(*nv)++];
    memset(v, 0, sizeof *v);
    xsnprintf(v->scope, sizeof v->scope, "%s", scope);
    xsnprintf(v->experiment, sizeof v->experiment, "%s", a->experiment);
    xsnprintf(v->a, sizeof v->a, "%s", a->variant);
    xsnprintf(v->b, sizeof v->b, "%s", b->variant);
    v->launch_a = a->launch; v->launch_b = b->launch;
    v->v = stats_compare_times(a->sec, a->n, b->sec, b->n);
    stats_verdict_text(&v->v, repeat, v->text, sizeof v->text);
}

// The first configuration key (train.threads aside: resolved at run time) on which the runs
// differ, in key[kn] ("" when they agree).
static void runs_differ_on(RunDB *db, const int64_t *ids, int n, char *key, size_t kn) {
    char **keys = NULL;
    int nk = differing_keys(db, ids, n, &keys);
    key[0] = 0;
    for (int i = 0; i < nk; i++) {
        if (!key[0] && strcmp(keys[i], "train.threads")) xsnprintf(key, kn, "%s", keys[i]);
        free(keys[i]);
    }
    free(keys);
}

int compare_verdicts(RunDB *db, const int64_t *ids, int n, CompareVerdict **out) {
    rundb_flush(db);
    Side *sides = NULL;
    int ns = 0;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = db_prep(db, "SELECT COALESCE(r.launch_id, 0), r.experiment, r.variant, r.status = 'completed', "
                                       "COALESCE(l.repeat, 0) FROM runs r LEFT JOIN launches l ON l.id = r.launch_id WHERE r.id=?1");
        db_bind_i64(db, st, 1, ids[i]);
        if (!db_next_row(db, st, "reading a run")) die_input("no run %lld in %s", (long long)ids[i], rundb_path(db));
        char experiment[256], variant[256];
        int64_t launch = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, experiment, sizeof experiment);
        db_col_text(st, 2, variant, sizeof variant);
        int done = sqlite3_column_int(st, 3), repeat = sqlite3_column_int(st, 4);
        db_finalize(db, st);
        Side *s = side_of(&sides, &ns, launch, experiment, variant);
        s->repeat = repeat;
        int seen = 0;   // a run named twice counts once
        for (int j = 0; j < s->n_ids; j++) seen |= s->ids[j] == ids[i];
        if (!seen) side_add(s, ids[i], done ? rundb_run_median_step(db, ids[i]) : NAN);
    }
    CompareVerdict *v = NULL;
    int nv = 0;
    char scope[128];
    // 1. within each launch: every variant against the launch's first (the manifest's baseline)
    int n_groups = 0;
    for (int i = 0; i < ns; i++) {
        int first = 1;
        for (int j = 0; j < i; j++) if (sides[j].launch == sides[i].launch && !strcmp(sides[j].experiment, sides[i].experiment)) first = 0;
        if (!first) continue;
        n_groups++;
        if (sides[i].launch) snprintf(scope, sizeof scope, "launch %lld", (long long)sides[i].launch);
        else snprintf(scope, sizeof scope, "runs without a launch");
        for (int j = i + 1; j < ns; j++)
            if (sides[j].launch == sides[i].launch && !strcmp(sides[j].experiment, sides[i].experiment))
                add_verdict(&v, &nv, scope, &sides[i], &sides[j], sides[i].launch ? sides[i].repeat : 0);
    }
    // 2. one variant in two launches of its experiment: did the launches measure the same speed?
    for (int i = 0; i < ns; i++)
        for (int j = i + 1; j < ns; j++)
            if (sides[j].launch != sides[i].launch && !strcmp(sides[j].experiment, sides[i].experiment) &&
                !strcmp(sides[j].variant, sides[i].variant)) {
                int earlier = 0;   // pair each later launch with the variant's first one only
                for (int k = 0; k < i; k++) earlier |= !strcmp(sides[k].experiment, sides[i].experiment) && !strcmp(sides[k].variant, sides[i].variant);
                if (earlier) continue;
                snprintf(scope, sizeof scope, "launch %lld against launch %lld", (long long)sides[j].launch, (long long)sides[i].launch);
                add_verdict(&v, &nv, scope, &sides[i], &sides[j], 0);
            }
    // 3. the launches of one experiment pooled, when each variant's runs agree on every key:
    //    more repeats than any one launch has
    if (n_groups > 1) {
        for (int i = 0; i < ns; i++) {
            int first_of_exp = 1;
            for (int k = 0; k < i; k++) first_of_exp &= strcmp(sides[k].experiment, sides[i].experiment) != 0;
            if (!first_of_exp) continue;
            Side *pool = NULL;
            int np = 0, launches = 0;
            char diff[256] = "", diff_variant[256] = "";
            for (int j = i; j < ns; j++) {
                if (strcmp(sides[j].experiment, sides[i].experiment)) continue;
                int new_launch = 1;
                for (int k = i; k < j; k++) new_launch &= !(sides[k].launch == sides[j].launch && !strcmp(sides[k].experiment, sides[j].experiment));
                launches += new_launch;
                Side *p = side_of(&pool, &np, -1, sides[j].experiment, sides[j].variant);
                for (int k = 0; k < sides[j].n_ids; k++) {
                    p->ids = realloc(p->ids, (size_t)(p->n_ids + 1) * sizeof *p->ids);
                    CHECK(p->ids, "out of memory");
                    p->ids[p->n_ids++] = sides[j].ids[k];
                }
                for (int k = 0; k < sides[j].n; k++) { p->sec = realloc(p->sec, (size_t)(p->n + 1) * sizeof *p->sec); CHECK(p->sec, "out of memory"); p->sec[p->n++] = sides[j].sec[k]; }
            }
            for (int k = 0; k < np && !diff[0]; k++) {
                runs_differ_on(db, pool[k].ids, pool[k].n_ids, diff, sizeof diff);
                if (diff[0]) xsnprintf(diff_variant, sizeof diff_variant, "%s", pool[k].variant);
            }
            if (launches > 1 && np > 1) {
                snprintf(scope, sizeof scope, "%d launches pooled", launches);
                if (diff[0]) {   // a pair that is not made, said as one line
                    CompareVerdict *x;
                    v = realloc(v, (size_t)(nv + 1) * sizeof *v);
                    CHECK(v, "out of memory");
                    x = &v[nv++];
                    memset(x, 0, sizeof *x);
                    xsnprintf(x->scope, sizeof x->scope, "%s", scope);
                    xsnprintf(x->experiment, sizeof x->experiment, "%s", sides[i].experiment);
                    x->not_pooled = 1;
                    x->launch_a = x->launch_b = -1;
                    snprintf(x->text, sizeof x->text, "not pooled: the runs of %.100s differ on %.100s", diff_variant, diff);
                } else {
                    for (int k = 1; k < np; k++) {
                        add_verdict(&v, &nv, scope, &pool[0], &pool[k], 0);
                        v[nv - 1].launch_a = v[nv - 1].launch_b = -1;
                    }
                }
            }
            for (int k = 0; k < np; k++) { free(pool[k].ids); free(pool[k].sec); }
            free(pool);
        }
    }
    for (int i = 0; i < ns; i++) { free(sides[i].ids); free(sides[i].sec); }
    free(sides);
    *out = v;
    return nv;
}

void compare_print_verdicts(const CompareVerdict *v, int n, OutputFormat format, int with_scope, FILE *out) {
    if (format == FORMAT_TABLE) {
        if (!n) return;
        fprintf(out, "timing verdicts (each run's median step time after warm-up; exact rank-sum test over the runs, %.0f %%):\n",
                100 * STATS_LEVEL);
        for (int i = 0; i < n; i++) {
            char a[64], b[64];
            store_variant_alias(v[i].a, a, sizeof a);
            store_variant_alias(v[i].b, b, sizeof b);
            if (with_scope) fprintf(out, "  %s:", v[i].scope);
            if (v[i].not_pooled) { fprintf(out, "%s%s\n", with_scope ? " " : "  ", v[i].text); continue; }
            if (!strcmp(a, b)) fprintf(out, "%s%s: %s\n", with_scope ? " " : "  ", a, v[i].text);
            else fprintf(out, "%s%s vs %s: %s\n", with_scope ? " " : "  ", b, a, v[i].text);
        }
        return;
    }
    if (format == FORMAT_CSV)
        fputs("experiment,scope,launch_a,launch_b,a,b,metric,ratio,lo,hi,level,p,n_a,n_b,min_runs,verdict,text\n", out);
    else fputs("[", out);
    for (int i = 0; i < n; i++) {
        const StatsVerdict *s = &v[i].v;
        const char *verdict = v[i].not_pooled ? "not pooled" : stats_verdict_name(s->verdict);
        char la[32] = "", lb[32] = "";
        if (v[i].launch_a > 0) snprintf(la, sizeof la, "%lld", (long long)v[i].launch_a);
        if (v[i].launch_b > 0) snprintf(lb, sizeof lb, "%lld", (long long)v[i].launch_b);
        double num[] = { s->ratio, s->lo, s->hi };
        if (v[i].not_pooled) num[0] = num[1] = num[2] = NAN;
        if (format == FORMAT_CSV) {
            csv_field(out, v[i].experiment); fputc(',', out); csv_field(out, v[i].scope);
            fprintf(out, ",%s,%s,", la, lb);
            csv_field(out, v[i].a); fputc(',', out); csv_field(out, v[i].b);
            fputs(",median_ms_per_step", out);
            for (int k = 0; k < 3; k++) if (isnan(num[k])) fputc(',', out); else fprintf(out, ",%.17g", num[k]);
            fprintf(out, ",%g", STATS_LEVEL);
            if (isnan(s->p)) fputc(',', out); else fprintf(out, ",%.17g", s->p);
            fprintf(out, ",%d,%d,%d,", s->n_a, s->n_b, s->min_runs);
            csv_field(out, verdict); fputc(',', out); csv_field(out, v[i].text); fputc('\n', out);
        } else {
            fprintf(out, "%s\n  {\"experiment\": ", i ? "," : "");
            json_str(out, v[i].experiment);
            fputs(", \"scope\": ", out); json_str(out, v[i].scope);
            fprintf(out, ", \"launch_a\": %s, \"launch_b\": %s, \"a\": ", la[0] ? la : "null", lb[0] ? lb : "null");
            json_str(out, v[i].a); fputs(", \"b\": ", out); json_str(out, v[i].b);
            fputs(", \"metric\": \"median_ms_per_step\"", out);
            if (isnan(num[0])) fputs(", \"ratio\": null", out); else fprintf(out, ", \"ratio\": %.17g", num[0]);
            if (isnan(num[1])) fputs(", \"interval\": null", out); else fprintf(out, ", \"interval\": [%.17g, %.17g]", num[1], num[2]);
            fprintf(out, ", \"level\": %g, \"p\": ", STATS_LEVEL);
            if (isnan(s->p)) fputs("null", out); else fprintf(out, "%.17g", s->p);
            fprintf(out, ", \"n_a\": %d, \"n_b\": %d, \"min_runs\": %d, \"verdict\": ", s->n_a, s->n_b, s->min_runs);
            json_str(out, verdict); fputs(", \"text\": ", out); json_str(out, v[i].text); fputc('}', out);
        }
    }
    if (format == FORMAT_JSON) fputs("\n]\n", out);
}
