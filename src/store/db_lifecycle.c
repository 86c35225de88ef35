// db_lifecycle.c — launches and runs: begin, end (from any process), resume, stale
// (see db.h and docs/database.md).
#include "db_internal.h"

#include <inttypes.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "../core/check.h"

// ---------------------------------------------------------------------------------
// Launches

typedef struct { const LaunchInfo *li; char *overrides; int64_t id; } LaunchArgs;

static int begin_launch_body(RunDB *db, void *varg) {
    LaunchArgs *a = varg;
    const LaunchInfo *li = a->li;
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db,
        "INSERT INTO launches(experiment, manifest_path, experiment_version, manifest_format, manifest_sha256, "
        "manifest_text, overrides, variant_filter, repeat, status, started_at, host, pid, cpu_model, git_commit, "
        "git_dirty, load_avg_1m, peak_gflops, kind, hardware, launcher) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,'running',?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)",
        -1, &st, NULL));
    rundb_bind_text(st, 1, li->experiment); rundb_bind_text(st, 2, li->manifest_path); rundb_bind_text(st, 3, li->experiment_version);
    if (li->manifest_format > 0) sqlite3_bind_int(st, 4, li->manifest_format); else sqlite3_bind_null(st, 4);
    rundb_bind_text(st, 5, li->manifest_sha256); rundb_bind_text(st, 6, li->manifest_text); rundb_bind_text(st, 7, a->overrides);
    rundb_bind_text(st, 8, li->variant_filter[0] ? li->variant_filter : NULL); sqlite3_bind_int(st, 9, li->repeat > 0 ? li->repeat : 1);
    rundb_bind_text(st, 10, now); rundb_bind_text(st, 11, li->host.host); sqlite3_bind_int(st, 12, li->host.pid);
    rundb_bind_text(st, 13, li->host.cpu_model); rundb_bind_text(st, 14, li->host.git_commit);
    if (li->host.git_dirty >= 0) sqlite3_bind_int(st, 15, li->host.git_dirty); else sqlite3_bind_null(st, 15);
    if (li->load_avg >= 0) sqlite3_bind_double(st, 16, li->load_avg); else sqlite3_bind_null(st, 16);
    if (li->peak_gflops > 0) sqlite3_bind_double(st, 17, li->peak_gflops); else sqlite3_bind_null(st, 17);
    rundb_bind_text(st, 18, li->kind[0] ? li->kind : "measured");
    rundb_bind_text(st, 19, li->hardware[0] ? li->hardware : NULL);
    rundb_bind_text(st, 20, li->launcher[0] ? li->launcher : NULL);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    a->id = sqlite3_last_insert_rowid(db->db);
    return rc;
}

int64_t rundb_begin_launch(RunDB *db, const LaunchInfo *li) {
    LaunchArgs a = { .li = li, .overrides = db_json_array(db, li->overrides, li->n_overrides) };
    if (rundb_tx_retry(db, begin_launch_body, &a, db->final_s, "recording the launch") != SQLITE_OK)
        die_input("%s: cannot record the launch: %s", db->path, db->last_error);
    free(a.overrides);
    return a.id;
}

typedef struct { int64_t id; const char *status, *error; } EndLaunchArgs;
static int end_launch_body(RunDB *db, void *varg) {
    EndLaunchArgs *a = varg;
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db, a->error ? "UPDATE launches SET status=?1, ended_at=?2, error=?4 WHERE id=?3"
                                            : "UPDATE launches SET status=?1, ended_at=?2 WHERE id=?3", -1, &st, NULL));
    rundb_bind_text(st, 1, a->status); rundb_bind_text(st, 2, now); sqlite3_bind_int64(st, 3, a->id);
    if (a->error) rundb_bind_text(st, 4, a->error);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    return rc;
}

static void end_launch(RunDB *db, int64_t launch, const char *status, const char *error) {
    EndLaunchArgs a = { launch, rundb_one_of("launch end status", status, RUNDB_LAUNCH_END_STATUS), error };
    if (rundb_tx_retry(db, end_launch_body, &a, db->final_s, "ending the launch") != SQLITE_OK)
        fprintf(stderr, "error: run database %s: could not record the end of launch %" PRId64 ": %s\n",
                db->path, launch, db->last_error);
}
void rundb_end_launch(RunDB *db, int64_t launch, const char *status) { end_launch(db, launch, status, NULL); }
void rundb_refuse_launch(RunDB *db, int64_t launch, const char *why) { end_launch(db, launch, "failed", why ? why : ""); }

// ---------------------------------------------------------------------------------
// Runs

void runinfo_add_library(RunInfo *ri, const char *key, const char *value) {
    char *buf = ri->library_versions;
    size_t n = sizeof ri->library_versions, l = strlen(buf);
    CHECK(l >= 2 && buf[l - 1] == '}', "runinfo_add_library: library_versions is not a JSON object: %s", buf);
    buf[l - 1] = 0;   // reopen the object: {..., "key": "value"}
    xsnprintf(buf + l - 1, n - (l - 1), "%s", l > 2 ? ", " : "");
    store_json_str(buf, n, key);
    l = strlen(buf);
    xsnprintf(buf + l, n - l, ": ");
    store_json_str(buf, n, value);
    l = strlen(buf);
    xsnprintf(buf + l, n - l, "}");
}

void runinfo_set_host(RunInfo *ri, const HostFacts *h) {
    xsnprintf(ri->host, sizeof ri->host, "%s", h->host);
    ri->pid = h->pid;
    xsnprintf(ri->cpu_model, sizeof ri->cpu_model, "%s", h->cpu_model);
    xsnprintf(ri->gpu_model, sizeof ri->gpu_model, "%s", h->gpu_model);
    xsnprintf(ri->compiler, sizeof ri->compiler, "%s", h->compiler);
    xsnprintf(ri->cflags, sizeof ri->cflags, "%s", h->cflags);
    xsnprintf(ri->library_versions, sizeof ri->library_versions, "%s", h->library_versions);
    xsnprintf(ri->git_commit, sizeof ri->git_commit, "%s", h->git_commit);
    ri->git_dirty = h->git_dirty;
}

void runinfo_host_facts(RunInfo *ri) {
    HostFacts h;
    host_facts(&h);
    runinfo_set_host(ri, &h);
}

typedef struct { const RunInfo *ri; char *overrides; int64_t id; } BeginRunArgs;

static int begin_run_body(RunDB *db, void *varg) {
    BeginRunArgs *a = varg;
    const RunInfo *ri = a->ri;
    TRY(rundb_write_buffers(db, NULL));
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db,
        "INSERT INTO runs(uid, experiment, variant, manifest_path, experiment_version, manifest_sha256, config_json, "
        "git_commit, git_dirty, host, pid, cpu_model, gpu_model, compiler, cflags, library_versions, tp, pp, dp, "
        "world_size, status, started_at, resumed_count, params, flops_per_token, peak_gflops, launch_id, repeat_index, "
        "overrides, manifest_format, kind, hardware) VALUES "
        "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,'running',?21,0,?22,?23,?24,?25,?26,?27,?28,?29,?30)",
        -1, &st, NULL));
    rundb_bind_text(st, 1, ri->uid); rundb_bind_text(st, 2, ri->experiment); rundb_bind_text(st, 3, ri->variant);
    rundb_bind_text(st, 4, ri->manifest_path); rundb_bind_text(st, 5, ri->experiment_version);
    rundb_bind_text(st, 6, ri->manifest_sha256[0] ? ri->manifest_sha256 : NULL); rundb_bind_text(st, 7, ri->config_json);
    rundb_bind_text(st, 8, ri->git_commit);
    if (ri->git_dirty >= 0) sqlite3_bind_int(st, 9, ri->git_dirty); else sqlite3_bind_null(st, 9);
    rundb_bind_text(st, 10, ri->host); sqlite3_bind_int(st, 11, ri->pid); rundb_bind_text(st, 12, ri->cpu_model);
    rundb_bind_text(st, 13, ri->gpu_model); rundb_bind_text(st, 14, ri->compiler); rundb_bind_text(st, 15, ri->cflags);
    rundb_bind_text(st, 16, ri->library_versions[0] ? ri->library_versions : NULL);
    sqlite3_bind_int(st, 17, ri->tp > 0 ? ri->tp : 1); sqlite3_bind_int(st, 18, ri->pp > 0 ? ri->pp : 1);
    sqlite3_bind_int(st, 19, ri->dp > 0 ? ri->dp : 1); sqlite3_bind_int(st, 20, ri->world_size > 0 ? ri->world_size : 1);
    rundb_bind_text(st, 21, now);
    sqlite3_bind_int64(st, 22, ri->params); sqlite3_bind_double(st, 23, ri->flops_per_token);
    sqlite3_bind_double(st, 24, ri->peak_gflops);
    if (ri->launch_id > 0) sqlite3_bind_int64(st, 25, ri->launch_id); else sqlite3_bind_null(st, 25);
    sqlite3_bind_int(st, 26, ri->repeat_index);
    rundb_bind_text(st, 27, a->overrides);
    if (ri->manifest_format > 0) sqlite3_bind_int(st, 28, ri->manifest_format); else sqlite3_bind_null(st, 28);
    rundb_bind_text(st, 29, ri->kind[0] ? ri->kind : "measured");
    rundb_bind_text(st, 30, ri->hardware[0] ? ri->hardware : NULL);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    a->id = sqlite3_last_insert_rowid(db->db);
    return rc;
}

int64_t rundb_begin_run(RunDB *db, const RunInfo *ri) {
    BeginRunArgs a = { .ri = ri, .overrides = db_json_array(db, ri->overrides, ri->n_overrides) };
    if (rundb_tx_retry(db, begin_run_body, &a, db->final_s, "recording the run") != SQLITE_OK)
        die_input("%s: cannot record the run: %s", db->path, db->last_error);
    rundb_empty_buffers(db);
    free(a.overrides);
    return a.id;
}

typedef struct { int64_t run; const RunSimulation *s; } SimArgs;
static int simulation_body(RunDB *db, void *varg) {
    SimArgs *a = varg;
    const RunSimulation *s = a->s;
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db,
        "INSERT OR REPLACE INTO simulation(run_id, hardware, hardware_path, hardware_sha256, precision, micro_batches, "
        "step_seconds, compute_seconds, comm_seconds, p2p_seconds, bubble_seconds, tokens_per_s, mfu, hfu, critical_stage, "
        "memory_bytes, memory_capacity, memory_fits, report) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)",
        -1, &st, NULL));
    sqlite3_bind_int64(st, 1, a->run);
    rundb_bind_text(st, 2, s->hardware); rundb_bind_text(st, 3, s->hardware_path[0] ? s->hardware_path : NULL);
    rundb_bind_text(st, 4, s->hardware_sha256[0] ? s->hardware_sha256 : NULL); rundb_bind_text(st, 5, s->precision);
    sqlite3_bind_int(st, 6, s->micro_batches);
    const double v[] = { s->step_s, s->compute_s, s->comm_s, s->p2p_s, s->bubble_s, s->tokens_per_s, s->mfu, s->hfu };
    for (int i = 0; i < 8; i++) sqlite3_bind_double(st, 7 + i, v[i]);
    sqlite3_bind_int(st, 15, s->critical_stage);
    sqlite3_bind_int64(st, 16, (sqlite3_int64)s->memory_bytes); sqlite3_bind_int64(st, 17, (sqlite3_int64)s->memory_capacity);
    sqlite3_bind_int(st, 18, s->memory_fits);
    rundb_bind_text(st, 19, s->report_json);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    return rc;
}

void rundb_record_simulation(RunDB *db, int64_t run, const RunSimulation *s) {
    SimArgs a = { run, s };
    if (rundb_tx_retry(db, simulation_body, &a, db->final_s, "recording the simulation") != SQLITE_OK)
        die_input("%s: cannot record the simulation of run %" PRId64 ": %s", db->path, run, db->last_error);
}

// The UPDATE of a run's end. A 'failed' run keeps its status and first message;
// with `only_running` (for 'interrupted') only a 'running' run changes: a signal thread
// may have recorded the interruption already.
static int end_status_sql(sqlite3 *h, int64_t run, const char *status, const char *error, int only_running, int *changed) {
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(h, only_running
            ? "UPDATE runs SET status=?1, ended_at=?2, error=?3 WHERE id=?4 AND status='running'"
            : "UPDATE runs SET status=?1, ended_at=?2, error=?3 WHERE id=?4 AND status<>'failed'", -1, &st, NULL));
    rundb_bind_text(st, 1, status); rundb_bind_text(st, 2, now); rundb_bind_text(st, 3, error); sqlite3_bind_int64(st, 4, run);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    *changed = sqlite3_changes(h);
    return rc;
}

// The event that goes with an end status (none for 'completed').
static const char *end_event_kind(const char *status) {
    if (!strcmp(status, "failed")) return "error";
    if (!strcmp(status, "completed")) return NULL;
    return status;   // interrupted, diverged
}

static int insert_event(sqlite3 *h, int64_t run, int step, const char *kind, const char *detail) {
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(h, "INSERT INTO events(run_id, step, at, kind, detail) VALUES (?1,?2,?3,?4,?5)", -1, &st, NULL));
    sqlite3_bind_int64(st, 1, run);
    if (step >= 0) sqlite3_bind_int(st, 2, step); else sqlite3_bind_null(st, 2);
    rundb_bind_text(st, 3, now); rundb_bind_text(st, 4, kind); rundb_bind_text(st, 5, detail);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    return rc;
}

typedef struct { int64_t run; const char *status, *error; } EndRunArgs;
static int end_run_body(RunDB *db, void *varg) {
    EndRunArgs *a = varg;
    TRY(rundb_write_buffers(db, NULL));
    int changed = 0;
    TRY(end_status_sql(db->db, a->run, a->status, a->error, !strcmp(a->status, "interrupted"), &changed));
    const char *ev = end_event_kind(a->status);
    if (changed && ev) TRY(insert_event(db->db, a->run, -1, ev, a->error ? a->error : a->status));
    return SQLITE_OK;
}

int rundb_end_run(RunDB *db, int64_t run, const char *status, const char *error) {
    EndRunArgs a = { run, rundb_one_of("run end status", status, RUNDB_END_STATUS), error };
    if (rundb_tx_retry(db, end_run_body, &a, db->final_s, "recording the end of the run") != SQLITE_OK) {
        fprintf(stderr, "error: run database %s: could not record run %" PRId64 " as %s (%d rows unwritten): %s\n",
                db->path, run, status, rundb_n_buffered(db), db->last_error);
        return 1;
    }
    rundb_empty_buffers(db);
    db->failing = 0;
    return 0;
}

int rundb_mark_run(const char *path, int64_t run, const char *status, const char *message) {
    sqlite3 *h = NULL;
    const char *ev = end_event_kind(status);
    int only_running = !strcmp(status, "interrupted");
    int rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(h, 5000);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    int changed = 0;
    if (rc == SQLITE_OK) rc = end_status_sql(h, run, status, message, only_running, &changed);
    if (rc == SQLITE_OK && changed && ev) rc = insert_event(h, run, -1, ev, message);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        fprintf(stderr, "warning: could not record run %" PRId64 " as %s in %s: %s\n", run, status, path,
                h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
    sqlite3_close(h);   // rolls back an open transaction
    return rc == SQLITE_OK ? 0 : 1;
}

static int process_gone(const char *host, int pid, const char *this_host);

int rundb_mark_orphan(const char *path, int64_t run, const char *status, const char *message) {
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    const char *ev = end_event_kind(status);
    char host[256], this_host[256] = "";
    host_name(this_host, sizeof this_host);
    int rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(h, 5000);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    int orphan = 0, changed = 0;
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(h, "SELECT host, pid FROM runs WHERE id=?1 AND status='running'", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            db_col_text(st, 0, host, sizeof host);
            orphan = process_gone(host, sqlite3_column_int(st, 1), this_host);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK && orphan) rc = end_status_sql(h, run, status, message, 1, &changed);
    if (rc == SQLITE_OK && changed && ev) rc = insert_event(h, run, -1, ev, message);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        fprintf(stderr, "warning: could not record run %" PRId64 " as %s in %s: %s\n", run, status, path,
                h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
    sqlite3_close(h);
    return rc != SQLITE_OK ? -1 : changed > 0;
}

typedef struct { int64_t run; int from_step; char *overrides; } ResumeArgs;
static int resume_body(RunDB *db, void *varg) {
    ResumeArgs *a = varg;
    char host[256], detail[512];
    host_name(host, sizeof host);
    TRY(rundb_write_buffers(db, NULL));
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db, "UPDATE runs SET status='running', resumed_count=resumed_count+1, pid=?1, host=?2, "
                                   "ended_at=NULL, error=NULL, overrides=COALESCE(?4, overrides) WHERE id=?3", -1, &st, NULL));
    sqlite3_bind_int(st, 1, (int)getpid()); rundb_bind_text(st, 2, host); sqlite3_bind_int64(st, 3, a->run);
    rundb_bind_text(st, 4, a->overrides);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    TRY(rc);
    if (sqlite3_changes(db->db) != 1) return SQLITE_NOTFOUND;
    if (a->from_step >= 0) {
        const char *tables[] = { "steps", "validation", "comm", "comm_ranks" };
        for (int i = 0; i < 4; i++) {
            char sql[128];
            xsnprintf(sql, sizeof sql, "DELETE FROM %s WHERE run_id=?1 AND step>?2", tables[i]);
            TRY(sqlite3_prepare_v2(db->db, sql, -1, &st, NULL));
            sqlite3_bind_int64(st, 1, a->run); sqlite3_bind_int(st, 2, a->from_step);
            rc = rundb_step_done(st);
            sqlite3_finalize(st);
            TRY(rc);
        }
        if (a->from_step == 0)
            xsnprintf(detail, sizeof detail, "from step 0: no checkpoint was written, the run trains again from the start; "
                      "pid %d on %s", (int)getpid(), host);
        else
            xsnprintf(detail, sizeof detail, "from the checkpoint at step %d; pid %d on %s", a->from_step, (int)getpid(), host);
    } else {
        xsnprintf(detail, sizeof detail, "pid %d on %s", (int)getpid(), host);
    }
    return insert_event(db->db, a->run, a->from_step, "resumed", detail);
}

void rundb_resume_run(RunDB *db, int64_t run, int from_step, const char *const *overrides, int n_overrides) {
    ResumeArgs a = { run, from_step, overrides ? db_json_array(db, overrides, n_overrides) : NULL };
    int rc = rundb_tx_retry(db, resume_body, &a, db->final_s, "recording the resume");
    if (rc == SQLITE_NOTFOUND) DIE("%s: resuming: no run with id %" PRId64, db->path, run);
    if (rc != SQLITE_OK) die_input("%s: cannot record the resume of run %" PRId64 ": %s", db->path, run, db->last_error);
    rundb_empty_buffers(db);
    free(a.overrides);
}

// ---------------------------------------------------------------------------------
// Stale runs and launches

typedef struct { int64_t id; char why[400]; } Stale;
typedef struct { VEC(Stale) runs; VEC(Stale) launches; char host[256]; char cutoff[32]; } StaleArgs;

// Is the process `pid` on `host` gone? Only decidable on this host.
static int process_gone(const char *host, int pid, const char *this_host) {
    return strcmp(host, this_host) == 0 && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static int stale_body(RunDB *db, void *varg) {
    StaleArgs *a = varg;
    a->runs.n = a->launches.n = 0;
    sqlite3_stmt *sel = NULL;
    TRY(sqlite3_prepare_v2(db->db, "SELECT id, host, pid, started_at FROM runs WHERE status='running'", -1, &sel, NULL));
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        char h[256], started[32];
        int64_t id = sqlite3_column_int64(sel, 0);
        db_col_text(sel, 1, h, sizeof h);
        int pid = sqlite3_column_int(sel, 2);
        db_col_text(sel, 3, started, sizeof started);
        Stale s = { .id = id };
        if (process_gone(h, pid, a->host))
            snprintf(s.why, sizeof s.why, "process %d on %s is gone (found at open)", pid, h);
        else if (strcmp(h, a->host) != 0 && strcmp(started, a->cutoff) < 0)
            snprintf(s.why, sizeof s.why, "running on another host (%s, pid %d) since %s: more than 7 days ago", h, pid, started);
        else continue;
        *VEC_PUSH(a->runs) = s;
    }
    sqlite3_finalize(sel);
    if (rc != SQLITE_DONE) return rc;
    TRY(sqlite3_prepare_v2(db->db, "SELECT id, host, pid FROM launches WHERE status='running'", -1, &sel, NULL));
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        char h[256];
        db_col_text(sel, 1, h, sizeof h);
        int pid = sqlite3_column_int(sel, 2);
        if (!process_gone(h, pid, a->host)) continue;
        Stale s = { .id = sqlite3_column_int64(sel, 0) };
        snprintf(s.why, sizeof s.why, "launching process %d on %s is gone", pid, h);
        *VEC_PUSH(a->launches) = s;
    }
    sqlite3_finalize(sel);
    if (rc != SQLITE_DONE) return rc;
    for (int i = 0; i < a->runs.n; i++) {
        int changed = 0;
        TRY(end_status_sql(db->db, a->runs.v[i].id, "interrupted", a->runs.v[i].why, 1, &changed));
        if (changed) TRY(insert_event(db->db, a->runs.v[i].id, -1, "interrupted", a->runs.v[i].why));
    }
    char now[32];
    store_iso_now(now);
    for (int i = 0; i < a->launches.n; i++) {
        TRY(sqlite3_prepare_v2(db->db, "UPDATE launches SET status='interrupted', ended_at=?1 WHERE id=?2 AND status='running'",
                               -1, &sel, NULL));
        rundb_bind_text(sel, 1, now); sqlite3_bind_int64(sel, 2, a->launches.v[i].id);
        rc = rundb_step_done(sel);
        sqlite3_finalize(sel);
        TRY(rc);
    }
    return SQLITE_OK;
}

int rundb_mark_stale(RunDB *db) {
    rundb_flush(db);
    StaleArgs a = {0};
    host_name(a.host, sizeof a.host);
    // cutoff = now - 7 days, in the started_at format (ISO-8601 text compares in time order)
    struct timeval tv;
    CHECK_ERRNO(gettimeofday(&tv, NULL) != 0, "gettimeofday");
    time_t cut_t = tv.tv_sec - 7 * 24 * 3600;
    struct tm tm;
    CHECK(gmtime_r(&cut_t, &tm), "gmtime_r failed");
    strftime(a.cutoff, sizeof a.cutoff, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    int n = 0;
    if (rundb_tx_retry(db, stale_body, &a, db->final_s, "marking stale runs") != SQLITE_OK)
        fprintf(stderr, "warning: run database %s: could not mark stale runs: %s\n", db->path, db->last_error);
    else n = a.runs.n;
    free(a.runs.v); free(a.launches.v);
    return n;
}
