// db_query.c — lookups for the experiment runner and the trainer, and the comparison
// table (see db.h and docs/database.md).
#include "db_internal.h"

#include <math.h>
#include <stdlib.h>

#include "../core/check.h"
#include "../core/fileio.h"
#include "../core/stats.h"

// ---------------------------------------------------------------------------------
// Runs

#define RUNROW_COLS "id, uid, experiment, variant, status, experiment_version, manifest_sha256, started_at, resumed_count, " \
                    "(SELECT COALESCE(MAX(step), 0) FROM steps WHERE run_id = runs.id), COALESCE(launch_id, 0), repeat_index, peak_gflops"
static void read_runrow(sqlite3_stmt *st, RunRow *r) {
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    db_col_text(st, 1, r->uid, sizeof r->uid);
    db_col_text(st, 2, r->experiment, sizeof r->experiment);
    db_col_text(st, 3, r->variant, sizeof r->variant);
    db_col_text(st, 4, r->status, sizeof r->status);
    db_col_text(st, 5, r->experiment_version, sizeof r->experiment_version);
    db_col_text(st, 6, r->manifest_sha256, sizeof r->manifest_sha256);
    db_col_text(st, 7, r->started_at, sizeof r->started_at);
    r->resumed_count = sqlite3_column_int(st, 8);
    r->last_step = sqlite3_column_int(st, 9);
    r->launch_id = sqlite3_column_int64(st, 10);
    r->repeat_index = sqlite3_column_int(st, 11);
    r->peak_gflops = db_col_dbl(st, 12);
}

// First row of a run query with text parameters ?1, ?2 (NULL = unbound).
static int one_run(RunDB *db, const char *where, const char *p1, const char *p2, RunRow *out) {
    rundb_flush(db);
    char sql[512];
    xsnprintf(sql, sizeof sql, "SELECT " RUNROW_COLS " FROM runs WHERE %s", where);
    sqlite3_stmt *st = db_prep(db, sql);
    if (p1) db_bind_text(db, st, 1, p1);
    if (p2) db_bind_text(db, st, 2, p2);
    int found = db_next_row(db, st, "looking up a run");
    if (found && out) read_runrow(st, out);
    db_finalize(db, st);
    return found;
}

int rundb_latest_run(RunDB *db, const char *experiment, const char *variant, RunRow *out) {
    return one_run(db, "experiment=?1 AND variant=?2 ORDER BY started_at DESC, id DESC LIMIT 1", experiment, variant, out);
}

int rundb_run_by_uid(RunDB *db, const char *uid, RunRow *out) {
    return one_run(db, "uid=?1", uid, NULL, out);
}

int rundb_launch_run(RunDB *db, int64_t launch, const char *variant, int repeat_index, RunRow *out) {
    char where[160];
    xsnprintf(where, sizeof where, "launch_id=%lld AND variant=?1 AND repeat_index=%d ORDER BY id DESC LIMIT 1",
              (long long)launch, repeat_index);
    return one_run(db, where, variant, NULL, out);
}

int rundb_launch_runs(RunDB *db, int64_t launch, RunRow **out) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT " RUNROW_COLS " FROM runs WHERE launch_id=?1 ORDER BY id");
    db_bind_i64(db, st, 1, launch);
    int n = 0, cap = 8;
    RunRow *v = xmalloc((size_t)cap * sizeof *v);
    while (db_next_row(db, st, "listing the runs of a launch")) {
        if (n == cap) { cap *= 2; v = xrealloc(v, (size_t)cap * sizeof *v); }
        read_runrow(st, &v[n++]);
    }
    db_finalize(db, st);
    *out = v;
    return n;
}

int rundb_run_overrides(RunDB *db, int64_t run, char ***out) {
    sqlite3_stmt *st = db_prep(db, "SELECT overrides FROM runs WHERE id=?1");
    db_bind_i64(db, st, 1, run);
    int n = 0;
    *out = NULL;
    if (db_next_row(db, st, "reading a run's overrides")) n = db_json_strings(db->db, (const char *)sqlite3_column_text(st, 0), out);
    db_finalize(db, st);
    return n;
}

int rundb_peek_run(const char *path, const char *experiment, const char *variant, const char *uid,
                   RunRow *out, char ***overrides, int *n_overrides) {
    *overrides = NULL; *n_overrides = 0;
    sqlite3 *h = NULL;
    char err[1400];
    if (file_check_regular(path, "run database", err, sizeof err) != 0) return 0;   // (rundb_open says why)
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) { sqlite3_close(h); return 0; }
    sqlite3_busy_timeout(h, 5000);
    // A schema-1 database has no overrides column: those runs had none stored.
    int v2 = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v2 = sqlite3_column_int(st, 0) >= 2;
    sqlite3_finalize(st);
    const char *sql = uid && uid[0]
        ? (v2 ? "SELECT " RUNROW_COLS ", overrides FROM runs WHERE uid=?1"
              : "SELECT id, uid, experiment, variant, status, manifest_version, manifest_sha256, started_at, resumed_count, 0, 0, 0, peak_gflops, '[]' FROM runs WHERE uid=?1")
        : (v2 ? "SELECT " RUNROW_COLS ", overrides FROM runs WHERE experiment=?1 AND variant=?2 ORDER BY started_at DESC, id DESC LIMIT 1"
              : "SELECT id, uid, experiment, variant, status, manifest_version, manifest_sha256, started_at, resumed_count, 0, 0, 0, peak_gflops, '[]' "
                "FROM runs WHERE experiment=?1 AND variant=?2 ORDER BY started_at DESC, id DESC LIMIT 1");
    int found = 0;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (uid && uid[0]) sqlite3_bind_text(st, 1, uid, -1, SQLITE_TRANSIENT);
        else { sqlite3_bind_text(st, 1, experiment, -1, SQLITE_TRANSIENT); sqlite3_bind_text(st, 2, variant, -1, SQLITE_TRANSIENT); }
        if (sqlite3_step(st) == SQLITE_ROW) {
            found = 1;
            read_runrow(st, out);
            *n_overrides = db_json_strings(h, (const char *)sqlite3_column_text(st, 13), overrides);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return found;
}

int rundb_manifest_conflicts(RunDB *db, const char *experiment, const char *experiment_version,
                             const char *sha256, RunRow *first) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT " RUNROW_COLS " FROM runs WHERE experiment=?1 AND experiment_version IS ?2 "
                                   "AND manifest_sha256 IS NOT ?3 ORDER BY started_at, id");
    db_bind_text(db, st, 1, experiment); db_bind_text(db, st, 2, experiment_version); db_bind_text(db, st, 3, sha256);
    int n = 0;
    while (db_next_row(db, st, "looking up runs of the manifest version")) {
        if (n == 0 && first) read_runrow(st, first);
        n++;
    }
    db_finalize(db, st);
    return n;
}

double rundb_step_loss(RunDB *db, int64_t run, int step) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT loss FROM steps WHERE run_id=?1 AND step=?2");
    db_bind_i64(db, st, 1, run); db_bind_i64(db, st, 2, step);
    double v = db_next_row(db, st, "reading a step's loss") ? db_col_dbl(st, 0) : NAN;
    db_finalize(db, st);
    return v;
}

int rundb_steps_contiguous(RunDB *db, int64_t run) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db,
        "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM steps WHERE run_id=?1 AND step=1) THEN 0 ELSE "
        "(SELECT min(s.step) FROM steps s WHERE s.run_id=?1 AND NOT EXISTS "
        "(SELECT 1 FROM steps t WHERE t.run_id=?1 AND t.step=s.step+1)) END");
    db_bind_i64(db, st, 1, run);
    int v = db_next_row(db, st, "reading a run's step rows") ? sqlite3_column_int(st, 0) : 0;
    db_finalize(db, st);
    return v;
}

char *rundb_run_config(RunDB *db, int64_t run) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT " RUN_CONFIG_SQL("runs") " FROM runs WHERE id=?1");
    db_bind_i64(db, st, 1, run);
    char *json = NULL;
    if (db_next_row(db, st, "reading a run's configuration") && sqlite3_column_type(st, 0) != SQLITE_NULL)
        json = xstrdup((const char *)sqlite3_column_text(st, 0));
    db_finalize(db, st);
    return json;
}

int rundb_last_checkpoint(RunDB *db, int64_t run, char *path, size_t n) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT step, detail FROM events WHERE run_id=?1 AND kind='checkpoint' AND step IS NOT NULL "
                                   "ORDER BY step DESC, id DESC LIMIT 1");
    db_bind_i64(db, st, 1, run);
    int step = -1;
    if (n) path[0] = 0;
    if (db_next_row(db, st, "reading a run's checkpoint events")) { step = sqlite3_column_int(st, 0); db_col_text(st, 1, path, n); }
    db_finalize(db, st);
    return step;
}

int rundb_config_differs(RunDB *db, int64_t run_a, int64_t run_b, const char *dotted_key,
                         char *value_a, char *value_b, size_t n) {
    char path[300];
    xsnprintf(path, sizeof path, "$.%s", dotted_key);
    // the configuration in effect: after a resume that changed it, the last config_change's
    sqlite3_stmt *st = db_prep(db,
        "WITH cfg(id, json) AS (SELECT id, " RUN_CONFIG_SQL("runs") " FROM runs WHERE id IN (?1, ?2)) "
        "SELECT json_extract(a.json, ?3), json_extract(b.json, ?3), json_extract(a.json, ?3) IS NOT json_extract(b.json, ?3) "
        "FROM cfg a, cfg b WHERE a.id=?1 AND b.id=?2");
    db_bind_i64(db, st, 1, run_a); db_bind_i64(db, st, 2, run_b); db_bind_text(db, st, 3, path);
    int differs = 0;
    value_a[0] = value_b[0] = 0;
    if (db_next_row(db, st, "comparing configurations")) {
        db_col_text(st, 0, value_a, n);
        db_col_text(st, 1, value_b, n);
        differs = sqlite3_column_int(st, 2);
    }
    db_finalize(db, st);
    return differs;
}

// ---------------------------------------------------------------------------------
// Launches

static void read_launch(RunDB *db, sqlite3_stmt *st, LaunchRow *l) {
    memset(l, 0, sizeof *l);
    l->id = sqlite3_column_int64(st, 0);
    db_col_text(st, 1, l->experiment, sizeof l->experiment);
    db_col_text(st, 2, l->status, sizeof l->status);
    db_col_text(st, 3, l->started_at, sizeof l->started_at);
    db_col_text(st, 4, l->experiment_version, sizeof l->experiment_version);
    db_col_text(st, 5, l->manifest_sha256, sizeof l->manifest_sha256);
    db_col_text(st, 6, l->variant_filter, sizeof l->variant_filter);
    l->repeat = sqlite3_column_int(st, 7);
    l->peak_gflops = db_col_dbl(st, 8);
    l->load_avg = db_col_dbl(st, 9);
    db_col_text(st, 10, l->host, sizeof l->host);
    l->n_overrides = db_json_strings(db->db, (const char *)sqlite3_column_text(st, 11), &l->overrides);
    db_col_text(st, 12, l->kind, sizeof l->kind);
    db_col_text(st, 13, l->hardware, sizeof l->hardware);
    l->peak_check_gflops = db_col_dbl(st, 14);
    l->peak_load = db_col_dbl(st, 15);
    db_col_text(st, 16, l->peak_note, sizeof l->peak_note);
    db_col_text(st, 17, l->launcher, sizeof l->launcher);
    db_col_text(st, 18, l->error, sizeof l->error);
}
#define LAUNCH_COLS "id, experiment, status, started_at, experiment_version, manifest_sha256, variant_filter, repeat, " \
                    "peak_gflops, load_avg_1m, host, overrides, kind, hardware, peak_check_gflops, peak_load_1m, peak_note, " \
                    "launcher, error"

int rundb_launch(RunDB *db, int64_t id, LaunchRow *out) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT " LAUNCH_COLS " FROM launches WHERE id=?1");
    db_bind_i64(db, st, 1, id);
    int found = db_next_row(db, st, "looking up a launch");
    if (found) read_launch(db, st, out);
    db_finalize(db, st);
    return found;
}

int rundb_latest_launch(RunDB *db, const char *experiment, LaunchRow *out) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT " LAUNCH_COLS " FROM launches WHERE experiment=?1 ORDER BY id DESC LIMIT 1");
    db_bind_text(db, st, 1, experiment);
    int found = db_next_row(db, st, "looking up the latest launch");
    if (found) read_launch(db, st, out);
    db_finalize(db, st);
    return found;
}

int rundb_previous_launch(RunDB *db, const char *experiment, int64_t before, LaunchRow *out) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT " LAUNCH_COLS " FROM launches WHERE experiment=?1 AND id<?2 ORDER BY id DESC LIMIT 1");
    db_bind_text(db, st, 1, experiment);
    db_bind_i64(db, st, 2, before);
    int found = db_next_row(db, st, "looking up the launch before");
    if (found) read_launch(db, st, out);
    db_finalize(db, st);
    return found;
}

void rundb_launch_row_free(LaunchRow *row) {
    rundb_free_strings(row->overrides, row->n_overrides);
    row->overrides = NULL; row->n_overrides = 0;
}

// "measured" is also spelled "" (rows written before launches had a kind)
static const char *kind_or_measured(const char *k) { return k && k[0] ? k : "measured"; }

int rundb_launch_joinable(RunDB *db, int64_t id, const char *experiment, const char *manifest_sha256, const char *kind,
                          const char *hardware, char *why, size_t why_n, char *hint, size_t hint_n) {
    snprintf(hint, hint_n, "the launches of %s: sqlite3 %s \"SELECT launch_id, experiment, kind, hardware, status FROM "
             "launch_summary WHERE experiment = '%s'\"; or leave out --launch (a run of its own)", experiment, db->path, experiment);
    LaunchRow lr;
    if (id <= 0 || !rundb_launch(db, id, &lr)) {
        snprintf(why, why_n, "--launch %lld: %s has no launch %lld (a run is recorded in the database of its launch)",
                 (long long)id, db->path, (long long)id);
        return 0;
    }
    const char *lk = kind_or_measured(lr.kind), *rk = kind_or_measured(kind);
    int sim = !strcmp(rk, "simulated");
    const char *differs = strcmp(lr.experiment, experiment) ? "experiment"
                        : manifest_sha256 && strcmp(lr.manifest_sha256, manifest_sha256) ? "manifest text"
                        : strcmp(lk, rk) ? "kind"
                        : sim && strcmp(lr.hardware, hardware ? hardware : "") ? "hardware profile" : NULL;
    if (differs) {
        char hw_l[160] = "", hw_r[160] = "";
        if (!strcmp(lk, "simulated")) snprintf(hw_l, sizeof hw_l, " on %s", lr.hardware);
        if (sim) snprintf(hw_r, sizeof hw_r, " on %s", hardware ? hardware : "");
        snprintf(why, why_n, "--launch %lld: launch %lld in %s is of experiment %s, kind %s%s; this run is of experiment %s, "
                 "kind %s%s: its %s differs (a run joins only a launch of its own experiment, manifest text, kind and "
                 "hardware)", (long long)id, (long long)id, db->path, lr.experiment, lk, hw_l, experiment, rk, hw_r, differs);
    }
    rundb_launch_row_free(&lr);
    return !differs;
}

// ---------------------------------------------------------------------------------
// The comparison table

static double q_run_double(RunDB *db, const char *sql, int64_t run) {
    sqlite3_stmt *st = db_prep(db, sql);
    db_bind_i64(db, st, 1, run);
    double v = db_next_row(db, st, "querying a run summary") ? db_col_dbl(st, 0) : NAN;
    db_finalize(db, st);
    return v;
}

#define TIMED_STEP_SQL RUNDB_TIMED_STEPS_SQL("?1")

// Per run: its step times after warm-up, sorted. Returns the count; *out malloc'd.
static int timed_steps(RunDB *db, int64_t run, double **out, double *tokens_per_step) {
    sqlite3_stmt *st = db_prep(db, "SELECT s.step_seconds, s.tokens_per_s * s.step_seconds FROM steps s WHERE " TIMED_STEP_SQL
                                   " ORDER BY s.step_seconds");
    db_bind_i64(db, st, 1, run);
    int n = 0, cap = 64;
    double *v = xmalloc((size_t)cap * sizeof *v);
    *tokens_per_step = NAN;
    while (db_next_row(db, st, "reading step times")) {
        if (n == cap) { cap *= 2; v = xrealloc(v, (size_t)cap * sizeof *v); }
        v[n++] = sqlite3_column_double(st, 0);
        *tokens_per_step = db_col_dbl(st, 1);
    }
    db_finalize(db, st);
    *out = v;
    return n;
}

double rundb_run_median_step(RunDB *db, int64_t run) {
    rundb_flush(db);
    double *t, tps;
    int n = timed_steps(db, run, &t, &tps);
    double m = stats_quantile_sorted(t, n, 0.5);
    free(t);
    return m;
}

// Per run: the median over its timed steps of rank 0's seconds inside collectives per step,
// and of the part of them spent waiting for the last peer (NAN when a call's wait was not
// measured: simulated runs, NCCL, runs recorded before it was). NAN, NAN: no collectives.
static void run_comm_medians(RunDB *db, int64_t run, double *comm_s, double *wait_s) {
    sqlite3_stmt *st = db_prep(db,
        "SELECT COALESCE(SUM(c.seconds), 0), SUM(c.wait_seconds), COUNT(c.wait_seconds) = COUNT(c.run_id), COUNT(c.run_id) "
        "FROM steps s LEFT JOIN comm c ON c.run_id = s.run_id AND c.step = s.step WHERE " TIMED_STEP_SQL " GROUP BY s.step");
    db_bind_i64(db, st, 1, run);
    int n = 0, cap = 64, waits = 1, any = 0;
    double *c = xmalloc((size_t)cap * sizeof *c), *w = xmalloc((size_t)cap * sizeof *w);
    while (db_next_row(db, st, "reading a run's collective times")) {
        if (n == cap) {
            cap *= 2;
            c = realloc(c, (size_t)cap * sizeof *c); w = realloc(w, (size_t)cap * sizeof *w);
            CHECK(c && w, "out of memory");
        }
        c[n] = sqlite3_column_double(st, 0);
        w[n] = db_col_dbl(st, 1);
        waits &= sqlite3_column_int(st, 2);
        any |= sqlite3_column_int(st, 3) > 0;
        n++;
    }
    db_finalize(db, st);
    *comm_s = any ? stats_median(c, n) : NAN;
    *wait_s = any && waits ? stats_median(w, n) : NAN;
    free(c); free(w);
}

int rundb_summarize(RunDB *db, const int64_t *run_ids, int n_runs, VariantSummary **out) {
    rundb_flush(db);
    VariantSummary *rows = xcalloc((size_t)(n_runs > 0 ? n_runs : 1), sizeof *rows);
    int n = 0;
    // group the runs by variant, in order of first appearance
    int *which = xcalloc((size_t)(n_runs > 0 ? n_runs : 1), sizeof *which);
    RunRow *rr = xcalloc((size_t)(n_runs > 0 ? n_runs : 1), sizeof *rr);
    for (int i = 0; i < n_runs; i++) {
        char where[64];
        xsnprintf(where, sizeof where, "id=%lld", (long long)run_ids[i]);
        CHECK(one_run(db, where, NULL, NULL, &rr[i]), "run %lld vanished", (long long)run_ids[i]);
        int k = 0;
        while (k < n && strcmp(rows[k].variant, rr[i].variant)) k++;
        if (k == n) { xsnprintf(rows[n].variant, sizeof rows[n].variant, "%s", rr[i].variant); n++; }
        which[i] = k;
    }
    double *meds = xmalloc((size_t)(n_runs > 0 ? n_runs : 1) * sizeof *meds);
    double *losses = xmalloc((size_t)(n_runs > 0 ? n_runs : 1) * sizeof *losses);
    double *vals = xmalloc((size_t)(n_runs > 0 ? n_runs : 1) * sizeof *vals);
    double *cms = xmalloc((size_t)(n_runs > 0 ? n_runs : 1) * sizeof *cms);
    double *wms = xmalloc((size_t)(n_runs > 0 ? n_runs : 1) * sizeof *wms);
    for (int k = 0; k < n; k++) {
        VariantSummary *s = &rows[k];
        int nm = 0, nl = 0, nv = 0, nc = 0, nw = 0;
        s->final_loss = s->val_loss = s->ms_per_step = s->ms_lo = s->ms_hi = NAN;
        s->comm_ms = s->comm_wait_ms = NAN;
        s->tokens_per_step = s->tokens_per_s = s->mfu = NAN;
        for (int i = 0; i < n_runs; i++) {
            if (which[i] != k) continue;
            const RunRow *r = &rr[i];
            int done = strcmp(r->status, "completed") == 0;
            s->n_runs++;
            if (s->n_runs == 1) xsnprintf(s->status, sizeof s->status, "%s", r->status);
            else if (strcmp(s->status, r->status)) xsnprintf(s->status, sizeof s->status, "mixed");
            // the reference run: the first completed one (else the first one)
            if (s->n_runs == 1 || (done && s->n_completed == 0)) {
                s->run_id = r->id;
                xsnprintf(s->uid, sizeof s->uid, "%s", r->uid);
                s->steps = r->last_step;
            }
            if (!done) continue;
            s->n_completed++;
            double fl = q_run_double(db, "SELECT loss FROM steps WHERE run_id=?1 ORDER BY step DESC LIMIT 1", r->id);
            double vl = q_run_double(db, "SELECT loss FROM validation WHERE run_id=?1 ORDER BY step DESC LIMIT 1", r->id);
            if (!isnan(fl)) losses[nl++] = fl;
            if (!isnan(vl)) vals[nv++] = vl;
            double *t, tps;
            int nt = timed_steps(db, r->id, &t, &tps);
            if (nt > 0) {
                meds[nm++] = stats_quantile_sorted(t, nt, 0.5);
                if (s->n_completed == 1) {
                    s->timed_steps = nt;
                    if (nt > 1) {   // one step (a simulated run) has no spread
                        s->ms_lo = 1e3 * stats_quantile_sorted(t, nt, 0.1);
                        s->ms_hi = 1e3 * stats_quantile_sorted(t, nt, 0.9);
                    }
                    s->tokens_per_step = tps;
                    double fpt = q_run_double(db, "SELECT flops_per_token FROM runs WHERE id=?1", r->id);
                    double peak = q_run_double(db, "SELECT peak_gflops FROM runs WHERE id=?1", r->id);
                    s->mfu = peak > 0 ? fpt / (peak * 1e9) : NAN;   // x tokens/s below
                }
            }
            free(t);
            double cs, ws;
            run_comm_medians(db, r->id, &cs, &ws);
            if (!isnan(cs)) { cms[nc++] = cs; if (!isnan(ws)) wms[nw++] = ws; }
            if (s->n_completed == 1) {
                char note[8] = "";
                sqlite3_stmt *st = db_prep(db, "SELECT COALESCE(peak_note, '') FROM runs WHERE id=?1");
                db_bind_i64(db, st, 1, r->id);
                if (db_next_row(db, st, "reading a run's peak note")) db_col_text(st, 0, note, sizeof note);
                db_finalize(db, st);
                s->peak_loaded = note[0] != 0;
                double mem = q_run_double(db, "SELECT COALESCE((SELECT bytes FROM memory WHERE run_id=?1 AND category='peak_rss'), "
                                              "(SELECT SUM(bytes) FROM memory WHERE run_id=?1), 0)", r->id);
                s->peak_memory = isnan(mem) ? 0 : (int64_t)mem;
                double b = q_run_double(db, "SELECT COALESCE(SUM(bytes) * 1.0 / COUNT(DISTINCT step), 0) FROM comm WHERE run_id=?1", r->id);
                double c = q_run_double(db, "SELECT COALESCE(SUM(calls) * 1.0 / COUNT(DISTINCT step), 0) FROM comm WHERE run_id=?1", r->id);
                s->comm_bytes = isnan(b) ? 0 : (int64_t)llround(b);
                s->comm_calls = isnan(c) ? 0 : (int64_t)llround(c);
            }
        }
        if (nl) s->final_loss = stats_median(losses, nl);
        if (nv) s->val_loss = stats_median(vals, nv);
        if (nc) s->comm_ms = 1e3 * stats_median(cms, nc);
        if (nc && nw == nc) s->comm_wait_ms = 1e3 * stats_median(wms, nw);
        if (nm) {
            s->ms_per_step = 1e3 * stats_median(meds, nm);
            if (nm > 1) { s->ms_lo = 1e3 * meds[0]; s->ms_hi = 1e3 * meds[nm - 1]; }   // sorted by stats_median
            s->tokens_per_s = s->tokens_per_step / (s->ms_per_step / 1e3);
            s->mfu *= s->tokens_per_s;
        } else {
            s->mfu = NAN;
        }
    }
    free(meds); free(losses); free(vals); free(cms); free(wms); free(which); free(rr);
    *out = rows;
    return n;
}

int rundb_compare(RunDB *db, const char *experiment, VariantSummary **out) {
    rundb_flush(db);
    // measured runs only: a run priced by build/simulate --record is no run made by hand
    sqlite3_stmt *st = db_prep(db, "SELECT (SELECT id FROM runs r2 WHERE r2.experiment = r.experiment AND r2.variant = r.variant "
                                   "AND r2.kind = 'measured' ORDER BY started_at DESC, id DESC LIMIT 1), MIN(id) AS first "
                                   "FROM runs r WHERE experiment=?1 AND kind = 'measured' GROUP BY variant ORDER BY first");
    db_bind_text(db, st, 1, experiment);
    int n = 0, cap = 8;
    int64_t *ids = xmalloc((size_t)cap * sizeof *ids);
    while (db_next_row(db, st, "listing the latest run of each variant")) {
        if (n == cap) { cap *= 2; ids = xrealloc(ids, (size_t)cap * sizeof *ids); }
        ids[n++] = sqlite3_column_int64(st, 0);
    }
    db_finalize(db, st);
    int k = rundb_summarize(db, ids, n, out);
    free(ids);
    return k;
}
