// db.c — see db.h and docs/database.md.
#include "db.h"

#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>
#include <libfyaml.h>
#include <mpi.h>

#include "util.h"
#include "../core/check.h"

extern char *openblas_get_config(void);

// ---------------------------------------------------------------------------------
// Schema (docs/database.md shows the same statements).
static const char *SCHEMA_SQL =
"CREATE TABLE IF NOT EXISTS runs (\n"
"  id               INTEGER PRIMARY KEY,\n"
"  uid              TEXT NOT NULL UNIQUE,\n"
"  experiment       TEXT NOT NULL,\n"
"  variant          TEXT NOT NULL,\n"
"  manifest_path    TEXT,\n"
"  manifest_version TEXT,\n"
"  manifest_sha256  TEXT,\n"
"  config_json      TEXT,\n"
"  git_commit       TEXT,\n"
"  git_dirty        INTEGER,\n"
"  host             TEXT,\n"
"  pid              INTEGER,\n"
"  cpu_model        TEXT,\n"
"  gpu_model        TEXT,\n"
"  compiler         TEXT,\n"
"  cflags           TEXT,\n"
"  library_versions TEXT,\n"
"  tp               INTEGER NOT NULL DEFAULT 1,\n"
"  pp               INTEGER NOT NULL DEFAULT 1,\n"
"  dp               INTEGER NOT NULL DEFAULT 1,\n"
"  world_size       INTEGER NOT NULL DEFAULT 1,\n"
"  status           TEXT NOT NULL CHECK (status IN ('running','completed','failed','interrupted')),\n"
"  started_at       TEXT NOT NULL,\n"
"  ended_at         TEXT,\n"
"  error            TEXT,\n"
"  resumed_count    INTEGER NOT NULL DEFAULT 0,\n"
"  params           INTEGER,\n"
"  flops_per_token  REAL,\n"
"  peak_gflops      REAL\n"
");\n"
"CREATE INDEX IF NOT EXISTS runs_by_variant ON runs(experiment, variant, started_at);\n"
"CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status);\n"
"CREATE TABLE IF NOT EXISTS steps (\n"
"  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
"  step         INTEGER NOT NULL,\n"
"  tokens_seen  INTEGER NOT NULL,\n"
"  loss         REAL,\n"
"  lr           REAL,\n"
"  grad_norm    REAL,\n"
"  step_seconds REAL,\n"
"  tokens_per_s REAL,\n"
"  mfu          REAL,\n"
"  PRIMARY KEY (run_id, step)\n"
") WITHOUT ROWID;\n"
"CREATE TABLE IF NOT EXISTS validation (\n"
"  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
"  step        INTEGER NOT NULL,\n"
"  tokens_seen INTEGER NOT NULL,\n"
"  loss        REAL,\n"
"  PRIMARY KEY (run_id, step)\n"
") WITHOUT ROWID;\n"
"CREATE TABLE IF NOT EXISTS comm (\n"
"  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
"  step     INTEGER NOT NULL,\n"
"  kind     TEXT NOT NULL CHECK (kind IN ('all_reduce','all_gather','reduce_scatter','broadcast','send','recv','barrier')),\n"
"  phase    TEXT NOT NULL CHECK (phase IN ('forward','backward','recompute','optimizer','pipeline','other')),\n"
"  grp      TEXT NOT NULL CHECK (grp IN ('tp','dp','pp','world')),\n"
"  layer    INTEGER NOT NULL DEFAULT -1,\n"
"  calls    INTEGER NOT NULL,\n"
"  elements INTEGER NOT NULL,\n"
"  bytes    INTEGER NOT NULL,\n"
"  seconds  REAL,\n"
"  PRIMARY KEY (run_id, step, kind, phase, grp, layer)\n"
") WITHOUT ROWID;\n"
"CREATE TABLE IF NOT EXISTS memory (\n"
"  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
"  category TEXT NOT NULL CHECK (category IN ('parameters','gradients','optimizer','activations','peak_rss')),\n"
"  bytes    INTEGER NOT NULL,\n"
"  PRIMARY KEY (run_id, category)\n"
") WITHOUT ROWID;\n"
"CREATE TABLE IF NOT EXISTS events (\n"
"  id     INTEGER PRIMARY KEY,\n"
"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
"  step   INTEGER,\n"
"  at     TEXT NOT NULL,\n"
"  kind   TEXT NOT NULL CHECK (kind IN ('checkpoint','resumed','error','interrupted','dump','config_change')),\n"
"  detail TEXT\n"
");\n"
"CREATE INDEX IF NOT EXISTS events_by_run ON events(run_id, id);\n";

// ---------------------------------------------------------------------------------
typedef struct { int64_t run; StepMetrics sm; } StepRow;
typedef struct { int64_t run; int step; int64_t tokens; double loss; } ValRow;
typedef struct { int64_t run; int step; const char *kind, *phase, *group; int layer; int64_t calls, elements, bytes; double seconds; } CommRow;
typedef struct { int64_t run; const char *category; int64_t bytes; } MemRow;
typedef struct { int64_t run; int step; char at[32]; const char *kind; char *detail; } EventRow;

#define VEC(T) struct { T *v; int n, cap; }
// Appends one (uninitialised) element; returns the possibly moved array.
static void *vec_grow(void *v, int *n, int *cap, size_t elt) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        v = realloc(v, elt * (size_t)*cap);
        CHECK(v, "out of memory growing a run-database buffer");
    }
    (*n)++;
    return v;
}
#define VEC_PUSH(vec) ((vec).v = vec_grow((vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v), &(vec).v[(vec).n - 1])

struct RunDB {
    sqlite3 *db;
    char path[1024];
    sqlite3_stmt *ins_step, *ins_val, *ins_comm, *ins_mem, *ins_event;
    VEC(StepRow) steps;
    VEC(ValRow) vals;
    VEC(CommRow) comms;
    VEC(MemRow) mems;
    VEC(EventRow) events;
};

// Automatic flush when this many rows are buffered (the caller normally flushes sooner).
#define AUTO_FLUSH_ROWS 65536

__attribute__((noreturn))
static void sql_die(RunDB *db, int rc, const char *what, const char *file, int line) {
    die_at(file, line, "%s: %s failed: %s (%s)", db->path, what,
           db->db ? sqlite3_errmsg(db->db) : "no connection", sqlite3_errstr(rc));
}
#define SQL_OK(db, call, what) do { int rc_ = (call); if (rc_ != SQLITE_OK) sql_die((db), rc_, (what), __FILE__, __LINE__); } while (0)

static void exec_sql(RunDB *db, const char *sql) {
    char *err = NULL;
    int rc = sqlite3_exec(db->db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        die_at(__FILE__, __LINE__, "%s: SQL failed: %s (%s) in: %.200s", db->path,
               err ? err : sqlite3_errmsg(db->db), sqlite3_errstr(rc), sql);
    }
}

static sqlite3_stmt *prep(RunDB *db, const char *sql, unsigned flags) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v3(db->db, sql, -1, flags, &st, NULL);
    if (rc != SQLITE_OK) die_at(__FILE__, __LINE__, "%s: preparing SQL failed: %s in: %.200s", db->path, sqlite3_errmsg(db->db), sql);
    return st;
}

// Run a statement that returns no rows, then reset it for reuse.
static void run_done(RunDB *db, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) sql_die(db, rc, what, __FILE__, __LINE__);
    SQL_OK(db, sqlite3_reset(st), what);
    SQL_OK(db, sqlite3_clear_bindings(st), what);
}
// Next row: 1, or 0 at the end.
static int next_row(RunDB *db, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) return 1;
    if (rc != SQLITE_DONE) sql_die(db, rc, what, __FILE__, __LINE__);
    return 0;
}

static void b_text(RunDB *db, sqlite3_stmt *st, int i, const char *s) {
    SQL_OK(db, s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i), "binding text");
}
static void b_i64(RunDB *db, sqlite3_stmt *st, int i, int64_t v) { SQL_OK(db, sqlite3_bind_int64(st, i, v), "binding an integer"); }
static void b_dbl(RunDB *db, sqlite3_stmt *st, int i, double v) { SQL_OK(db, sqlite3_bind_double(st, i, v), "binding a real"); } // NaN -> NULL
static void b_null(RunDB *db, sqlite3_stmt *st, int i) { SQL_OK(db, sqlite3_bind_null(st, i), "binding NULL"); }

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t n) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, n, "%s", t ? (const char *)t : "");
}
static double col_dbl(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int user_version(RunDB *db, int *notadb) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) { int v = sqlite3_column_int(st, 0); sqlite3_finalize(st); return v; }
    }
    sqlite3_finalize(st);
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT) { *notadb = rc; return -1; }
    sql_die(db, rc, "reading PRAGMA user_version", __FILE__, __LINE__);
}

static int version_or_die(RunDB *db) {
    int notadb = 0, v = user_version(db, &notadb);
    if (v < 0)
        die_input("%s: not a run database: %s (%s); move it away or choose another database path",
                  db->path, sqlite3_errmsg(db->db), sqlite3_errstr(notadb));
    if (v > RUNDB_SCHEMA_VERSION)
        die_input_hint("use the boost-c version that created it, or another database path",
                       "%s: run database schema version %d is newer than this build supports (%d)",
                       db->path, v, RUNDB_SCHEMA_VERSION);
    return v;
}

RunDB *rundb_open(const char *path) {
    store_mkdir_parent(path);
    RunDB *db = xcalloc(1, sizeof *db);
    xsnprintf(db->path, sizeof db->path, "%s", path);
    int rc = sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK)
        die_input("%s: cannot open the run database: %s", path, db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
    SQL_OK(db, sqlite3_extended_result_codes(db->db, 1), "enabling extended result codes");
    SQL_OK(db, sqlite3_busy_timeout(db->db, 30000), "setting busy_timeout");
    int v = version_or_die(db);
    exec_sql(db, "PRAGMA journal_mode=WAL");
    exec_sql(db, "PRAGMA synchronous=NORMAL");
    exec_sql(db, "PRAGMA foreign_keys=ON");
    if (v < RUNDB_SCHEMA_VERSION) {
        exec_sql(db, "BEGIN IMMEDIATE");
        int notadb = 0;
        if (user_version(db, &notadb) < RUNDB_SCHEMA_VERSION) {   // another process may have won the race
            exec_sql(db, SCHEMA_SQL);
            char pragma[64];
            xsnprintf(pragma, sizeof pragma, "PRAGMA user_version=%d", RUNDB_SCHEMA_VERSION);
            exec_sql(db, pragma);
        }
        exec_sql(db, "COMMIT");
    }
    unsigned P = SQLITE_PREPARE_PERSISTENT;
    db->ins_step = prep(db, "INSERT OR REPLACE INTO steps(run_id, step, tokens_seen, loss, lr, grad_norm, step_seconds, "
                            "tokens_per_s, mfu) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)", P);
    db->ins_val = prep(db, "INSERT OR REPLACE INTO validation(run_id, step, tokens_seen, loss) VALUES (?1,?2,?3,?4)", P);
    db->ins_comm = prep(db, "INSERT OR REPLACE INTO comm(run_id, step, kind, phase, layer, calls, elements, bytes, seconds, grp) "
                            "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)", P);
    db->ins_mem = prep(db, "INSERT OR REPLACE INTO memory(run_id, category, bytes) VALUES (?1,?2,?3)", P);
    db->ins_event = prep(db, "INSERT INTO events(run_id, step, at, kind, detail) VALUES (?1,?2,?3,?4,?5)", P);
    return db;
}

const char *rundb_path(const RunDB *db) { return db->path; }

static void free_buffers(RunDB *db) {
    for (int i = 0; i < db->events.n; i++) free(db->events.v[i].detail);
    free(db->steps.v); free(db->vals.v); free(db->comms.v); free(db->mems.v); free(db->events.v);
}

void rundb_close(RunDB *db) {
    if (!db) return;
    rundb_flush(db);
    sqlite3_stmt *sts[] = { db->ins_step, db->ins_val, db->ins_comm, db->ins_mem, db->ins_event };
    for (size_t i = 0; i < sizeof sts / sizeof *sts; i++) SQL_OK(db, sqlite3_finalize(sts[i]), "finalizing a statement");
    SQL_OK(db, sqlite3_close(db->db), "closing the database");
    free_buffers(db);
    free(db);
}

// ---------------------------------------------------------------------------------
// Buffered rows

static int n_buffered(const RunDB *db) { return db->steps.n + db->vals.n + db->comms.n + db->mems.n + db->events.n; }

// Writes the buffers inside the caller's transaction, then empties them.
static void write_buffers(RunDB *db) {
    for (int i = 0; i < db->steps.n; i++) {
        const StepRow *r = &db->steps.v[i]; sqlite3_stmt *st = db->ins_step;
        b_i64(db, st, 1, r->run); b_i64(db, st, 2, r->sm.step); b_i64(db, st, 3, r->sm.tokens_seen);
        b_dbl(db, st, 4, r->sm.loss); b_dbl(db, st, 5, r->sm.lr); b_dbl(db, st, 6, r->sm.grad_norm);
        b_dbl(db, st, 7, r->sm.seconds); b_dbl(db, st, 8, r->sm.tokens_per_s); b_dbl(db, st, 9, r->sm.mfu);
        run_done(db, st, "inserting a step row");
    }
    for (int i = 0; i < db->vals.n; i++) {
        const ValRow *r = &db->vals.v[i]; sqlite3_stmt *st = db->ins_val;
        b_i64(db, st, 1, r->run); b_i64(db, st, 2, r->step); b_i64(db, st, 3, r->tokens); b_dbl(db, st, 4, r->loss);
        run_done(db, st, "inserting a validation row");
    }
    for (int i = 0; i < db->comms.n; i++) {
        const CommRow *r = &db->comms.v[i]; sqlite3_stmt *st = db->ins_comm;
        b_i64(db, st, 1, r->run); b_i64(db, st, 2, r->step); b_text(db, st, 3, r->kind); b_text(db, st, 4, r->phase);
        b_i64(db, st, 5, r->layer); b_i64(db, st, 6, r->calls); b_i64(db, st, 7, r->elements);
        b_i64(db, st, 8, r->bytes); b_dbl(db, st, 9, r->seconds); b_text(db, st, 10, r->group);
        run_done(db, st, "inserting a comm row");
    }
    for (int i = 0; i < db->mems.n; i++) {
        const MemRow *r = &db->mems.v[i]; sqlite3_stmt *st = db->ins_mem;
        b_i64(db, st, 1, r->run); b_text(db, st, 2, r->category); b_i64(db, st, 3, r->bytes);
        run_done(db, st, "inserting a memory row");
    }
    for (int i = 0; i < db->events.n; i++) {
        EventRow *r = &db->events.v[i]; sqlite3_stmt *st = db->ins_event;
        b_i64(db, st, 1, r->run);
        if (r->step >= 0) b_i64(db, st, 2, r->step); else b_null(db, st, 2);
        b_text(db, st, 3, r->at); b_text(db, st, 4, r->kind); b_text(db, st, 5, r->detail);
        run_done(db, st, "inserting an event");
        free(r->detail); r->detail = NULL;
    }
    db->steps.n = db->vals.n = db->comms.n = db->mems.n = db->events.n = 0;
}

void rundb_flush(RunDB *db) {
    if (n_buffered(db) == 0) return;
    exec_sql(db, "BEGIN IMMEDIATE");
    write_buffers(db);
    exec_sql(db, "COMMIT");
}

static void maybe_autoflush(RunDB *db) { if (n_buffered(db) >= AUTO_FLUSH_ROWS) rundb_flush(db); }

void rundb_log_step(RunDB *db, int64_t run, const StepMetrics *sm) {
    StepRow *r = VEC_PUSH(db->steps);
    r->run = run; r->sm = *sm;
    maybe_autoflush(db);
}

void rundb_log_val(RunDB *db, int64_t run, int step, int64_t tokens_seen, double loss) {
    ValRow *r = VEC_PUSH(db->vals);
    r->run = run; r->step = step; r->tokens = tokens_seen; r->loss = loss;
    maybe_autoflush(db);
}

// Returns the static spelling of `s` from `names` (so buffered rows need no copies).
static const char *one_of(const char *what, const char *s, const char *const *names) {
    for (int i = 0; names[i]; i++) if (strcmp(s, names[i]) == 0) return names[i];
    DIE("run database: unknown %s '%s'", what, s);
}
static const char *const COMM_KINDS[] = { "all_reduce", "all_gather", "reduce_scatter", "broadcast", "send", "recv", "barrier", NULL };
static const char *const COMM_PHASES[] = { "forward", "backward", "recompute", "optimizer", "pipeline", "other", NULL };
static const char *const COMM_GROUPS[] = { "tp", "dp", "pp", "world", NULL };
static const char *const MEM_CATS[] = { "parameters", "gradients", "optimizer", "activations", "peak_rss", NULL };
static const char *const EVENT_KINDS[] = { "checkpoint", "resumed", "error", "interrupted", "dump", "config_change", NULL };
static const char *const END_STATUS[] = { "completed", "failed", "interrupted", NULL };

void rundb_log_comm(RunDB *db, int64_t run, int step, const char *kind, const char *phase, const char *group,
                    int layer, int64_t calls, int64_t elements, int64_t bytes, double seconds) {
    CommRow *r = VEC_PUSH(db->comms);
    r->run = run; r->step = step; r->layer = layer;
    r->group = one_of("comm group", group, COMM_GROUPS);
    r->kind = one_of("comm kind", kind, COMM_KINDS);
    r->phase = one_of("comm phase", phase, COMM_PHASES);
    r->calls = calls; r->elements = elements; r->bytes = bytes; r->seconds = seconds;
    maybe_autoflush(db);
}

void rundb_set_memory(RunDB *db, int64_t run, const char *category, int64_t bytes) {
    MemRow *r = VEC_PUSH(db->mems);
    r->run = run; r->category = one_of("memory category", category, MEM_CATS); r->bytes = bytes;
    maybe_autoflush(db);
}

void rundb_event(RunDB *db, int64_t run, int step, const char *kind, const char *detail) {
    const char *k = one_of("event kind", kind, EVENT_KINDS);
    EventRow *r = VEC_PUSH(db->events);
    r->run = run; r->step = step; r->kind = k;
    r->detail = detail ? xstrdup(detail) : NULL;
    store_iso_now(r->at);
    maybe_autoflush(db);
}

// ---------------------------------------------------------------------------------
// Run lifecycle

int64_t rundb_begin_run(RunDB *db, const RunInfo *ri) {
    rundb_flush(db);
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = prep(db,
        "INSERT INTO runs(uid, experiment, variant, manifest_path, manifest_version, manifest_sha256, config_json, "
        "git_commit, git_dirty, host, pid, cpu_model, gpu_model, compiler, cflags, library_versions, tp, pp, dp, "
        "world_size, status, started_at, resumed_count, params, flops_per_token, peak_gflops) VALUES "
        "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,'running',?21,0,?22,?23,?24)", 0);
    b_text(db, st, 1, ri->uid); b_text(db, st, 2, ri->experiment); b_text(db, st, 3, ri->variant);
    b_text(db, st, 4, ri->manifest_path); b_text(db, st, 5, ri->manifest_version);
    b_text(db, st, 6, ri->manifest_sha256); b_text(db, st, 7, ri->config_json); b_text(db, st, 8, ri->git_commit);
    if (ri->git_dirty >= 0) b_i64(db, st, 9, ri->git_dirty); else b_null(db, st, 9);
    b_text(db, st, 10, ri->host); b_i64(db, st, 11, ri->pid); b_text(db, st, 12, ri->cpu_model);
    b_text(db, st, 13, ri->gpu_model); b_text(db, st, 14, ri->compiler); b_text(db, st, 15, ri->cflags);
    b_text(db, st, 16, ri->library_versions[0] ? ri->library_versions : NULL);
    b_i64(db, st, 17, ri->tp > 0 ? ri->tp : 1); b_i64(db, st, 18, ri->pp > 0 ? ri->pp : 1);
    b_i64(db, st, 19, ri->dp > 0 ? ri->dp : 1); b_i64(db, st, 20, ri->world_size > 0 ? ri->world_size : 1);
    b_text(db, st, 21, now);
    b_i64(db, st, 22, ri->params); b_dbl(db, st, 23, ri->flops_per_token); b_dbl(db, st, 24, ri->peak_gflops);
    run_done(db, st, "inserting the run row");
    SQL_OK(db, sqlite3_finalize(st), "finalizing");
    return sqlite3_last_insert_rowid(db->db);
}

static void update_one(RunDB *db, sqlite3_stmt *st, int64_t run, const char *what) {
    run_done(db, st, what);
    if (sqlite3_changes(db->db) != 1) DIE("%s: %s: no run with id %" PRId64, db->path, what, run);
    SQL_OK(db, sqlite3_finalize(st), "finalizing");
}

void rundb_end_run(RunDB *db, int64_t run, const char *status, const char *error) {
    status = one_of("run end status", status, END_STATUS);
    if (strcmp(status, "failed") == 0) rundb_event(db, run, -1, "error", error ? error : "failed");
    if (strcmp(status, "interrupted") == 0) rundb_event(db, run, -1, "interrupted", error ? error : "interrupted");
    char now[32];
    store_iso_now(now);
    exec_sql(db, "BEGIN IMMEDIATE");
    write_buffers(db);
    sqlite3_stmt *st = prep(db, "UPDATE runs SET status=?1, ended_at=?2, error=?3 WHERE id=?4", 0);
    b_text(db, st, 1, status); b_text(db, st, 2, now); b_text(db, st, 3, error); b_i64(db, st, 4, run);
    update_one(db, st, run, "ending the run");
    exec_sql(db, "COMMIT");
}

static void this_host(char *buf, size_t n) {
    if (gethostname(buf, n) != 0) snprintf(buf, n, "unknown");
    buf[n - 1] = 0;
}

void rundb_resume_run(RunDB *db, int64_t run, int from_step) {
    char host[256], detail[512];
    this_host(host, sizeof host);
    exec_sql(db, "BEGIN IMMEDIATE");
    write_buffers(db);
    sqlite3_stmt *st = prep(db, "UPDATE runs SET status='running', resumed_count=resumed_count+1, pid=?1, host=?2, "
                                "ended_at=NULL, error=NULL WHERE id=?3", 0);
    b_i64(db, st, 1, getpid()); b_text(db, st, 2, host); b_i64(db, st, 3, run);
    update_one(db, st, run, "resuming the run");
    if (from_step >= 0) {
        const char *tables[] = { "steps", "validation", "comm" };
        for (int i = 0; i < 3; i++) {
            char sql[128];
            xsnprintf(sql, sizeof sql, "DELETE FROM %s WHERE run_id=?1 AND step>?2", tables[i]);
            st = prep(db, sql, 0);
            b_i64(db, st, 1, run); b_i64(db, st, 2, from_step);
            run_done(db, st, "deleting rows after the resumed checkpoint");
            SQL_OK(db, sqlite3_finalize(st), "finalizing");
        }
        xsnprintf(detail, sizeof detail, "from the checkpoint at step %d; pid %d on %s", from_step, (int)getpid(), host);
    } else {
        xsnprintf(detail, sizeof detail, "pid %d on %s", (int)getpid(), host);
    }
    rundb_event(db, run, from_step, "resumed", detail);
    write_buffers(db);
    exec_sql(db, "COMMIT");
}

int rundb_mark_stale(RunDB *db) {
    rundb_flush(db);
    char host[256];
    this_host(host, sizeof host);
    // cutoff = now - 7 days, in the started_at format (ISO-8601 text compares in time order)
    struct timeval tv;
    CHECK_ERRNO(gettimeofday(&tv, NULL) != 0, "gettimeofday");
    time_t cut_t = tv.tv_sec - 7 * 24 * 3600;
    struct tm tm;
    CHECK(gmtime_r(&cut_t, &tm), "gmtime_r failed");
    char cutoff[32];
    strftime(cutoff, sizeof cutoff, "%Y-%m-%dT%H:%M:%S.000Z", &tm);

    exec_sql(db, "BEGIN IMMEDIATE");
    sqlite3_stmt *sel = prep(db, "SELECT id, host, pid, started_at FROM runs WHERE status='running'", 0);
    VEC(struct { int64_t id; char why[400]; }) stale = {0};
    while (next_row(db, sel, "listing running runs")) {
        char h[256], started[32], why[400];
        int64_t id = sqlite3_column_int64(sel, 0);
        col_text(sel, 1, h, sizeof h);
        int pid = sqlite3_column_int(sel, 2);
        col_text(sel, 3, started, sizeof started);
        int gone = 0;
        if (strcmp(h, host) == 0) {
            if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
                gone = 1;
                snprintf(why, sizeof why, "process %d on %s is gone (found at open)", pid, h);
            }
        } else if (strcmp(started, cutoff) < 0) {
            gone = 1;
            snprintf(why, sizeof why, "running on another host (%s, pid %d) since %s: more than 7 days ago", h, pid, started);
        }
        if (gone) {
            __typeof__(stale.v) e = VEC_PUSH(stale);
            e->id = id;
            xsnprintf(e->why, sizeof e->why, "%s", why);
        }
    }
    SQL_OK(db, sqlite3_finalize(sel), "finalizing");
    char now[32];
    store_iso_now(now);
    for (int i = 0; i < stale.n; i++) {
        sqlite3_stmt *st = prep(db, "UPDATE runs SET status='interrupted', ended_at=?1, error=?2 WHERE id=?3 AND status='running'", 0);
        b_text(db, st, 1, now); b_text(db, st, 2, stale.v[i].why); b_i64(db, st, 3, stale.v[i].id);
        run_done(db, st, "marking a stale run interrupted");
        SQL_OK(db, sqlite3_finalize(st), "finalizing");
        rundb_event(db, stale.v[i].id, -1, "interrupted", stale.v[i].why);
    }
    write_buffers(db);
    exec_sql(db, "COMMIT");
    int n = stale.n;
    free(stale.v);
    return n;
}

// ---------------------------------------------------------------------------------
// Lookups

#define RUNROW_COLS "id, uid, experiment, variant, status, manifest_version, manifest_sha256, started_at, resumed_count, " \
                    "(SELECT COALESCE(MAX(step), 0) FROM steps WHERE run_id = runs.id)"
static void read_runrow(sqlite3_stmt *st, RunRow *r) {
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    col_text(st, 1, r->uid, sizeof r->uid);
    col_text(st, 2, r->experiment, sizeof r->experiment);
    col_text(st, 3, r->variant, sizeof r->variant);
    col_text(st, 4, r->status, sizeof r->status);
    col_text(st, 5, r->manifest_version, sizeof r->manifest_version);
    col_text(st, 6, r->manifest_sha256, sizeof r->manifest_sha256);
    col_text(st, 7, r->started_at, sizeof r->started_at);
    r->resumed_count = sqlite3_column_int(st, 8);
    r->last_step = sqlite3_column_int(st, 9);
}

int rundb_latest_run(RunDB *db, const char *experiment, const char *variant, RunRow *out) {
    rundb_flush(db);
    sqlite3_stmt *st = prep(db, "SELECT " RUNROW_COLS " FROM runs WHERE experiment=?1 AND variant=?2 "
                                "ORDER BY started_at DESC, id DESC LIMIT 1", 0);
    b_text(db, st, 1, experiment); b_text(db, st, 2, variant);
    int found = next_row(db, st, "looking up the latest run");
    if (found && out) read_runrow(st, out);
    SQL_OK(db, sqlite3_finalize(st), "finalizing");
    return found;
}

int rundb_manifest_conflicts(RunDB *db, const char *experiment, const char *manifest_version,
                             const char *sha256, RunRow *first) {
    rundb_flush(db);
    sqlite3_stmt *st = prep(db, "SELECT " RUNROW_COLS " FROM runs WHERE experiment=?1 AND manifest_version IS ?2 "
                                "AND manifest_sha256 IS NOT ?3 ORDER BY started_at, id", 0);
    b_text(db, st, 1, experiment); b_text(db, st, 2, manifest_version); b_text(db, st, 3, sha256);
    int n = 0;
    while (next_row(db, st, "looking up runs of the manifest version")) {
        if (n == 0 && first) read_runrow(st, first);
        n++;
    }
    SQL_OK(db, sqlite3_finalize(st), "finalizing");
    return n;
}

// First column of the first row of `sql` with ?1 = run (NAN if no row or NULL).
static double q_run_double(RunDB *db, const char *sql, int64_t run) {
    sqlite3_stmt *st = prep(db, sql, 0);
    b_i64(db, st, 1, run);
    double v = next_row(db, st, "querying a run summary") ? col_dbl(st, 0) : NAN;
    SQL_OK(db, sqlite3_finalize(st), "finalizing");
    return v;
}

int rundb_compare(RunDB *db, const char *experiment, VariantSummary **out) {
    rundb_flush(db);
    sqlite3_stmt *st = prep(db, "SELECT variant, MIN(id) AS first FROM runs WHERE experiment=?1 GROUP BY variant ORDER BY first", 0);
    b_text(db, st, 1, experiment);
    VEC(VariantSummary) rows = {0};
    while (next_row(db, st, "listing variants")) {
        VariantSummary *s = VEC_PUSH(rows);
        memset(s, 0, sizeof *s);
        col_text(st, 0, s->variant, sizeof s->variant);
    }
    SQL_OK(db, sqlite3_finalize(st), "finalizing");
    for (int i = 0; i < rows.n; i++) {
        VariantSummary *s = &rows.v[i];
        RunRow r;
        CHECK(rundb_latest_run(db, experiment, s->variant, &r), "variant %s vanished", s->variant);
        int64_t id = r.id;
        s->run_id = id;
        xsnprintf(s->uid, sizeof s->uid, "%s", r.uid);
        xsnprintf(s->status, sizeof s->status, "%s", r.status);
        s->steps = r.last_step;
        s->final_loss = q_run_double(db, "SELECT loss FROM steps WHERE run_id=?1 ORDER BY step DESC LIMIT 1", id);
        s->val_loss = q_run_double(db, "SELECT loss FROM validation WHERE run_id=?1 ORDER BY step DESC LIMIT 1", id);
        const char *timed = "FROM steps WHERE run_id=?1 AND (step > (SELECT MIN(step) FROM steps WHERE run_id=?1) "
                            "OR (SELECT COUNT(*) FROM steps WHERE run_id=?1) = 1)";
        char sql[512];
        xsnprintf(sql, sizeof sql, "SELECT 1000.0 * AVG(step_seconds) %s", timed);
        s->ms_per_step = q_run_double(db, sql, id);
        xsnprintf(sql, sizeof sql, "SELECT AVG(tokens_per_s) %s", timed);
        s->tokens_per_s = q_run_double(db, sql, id);
        double mem = q_run_double(db, "SELECT COALESCE((SELECT bytes FROM memory WHERE run_id=?1 AND category='peak_rss'), "
                                      "(SELECT SUM(bytes) FROM memory WHERE run_id=?1), 0)", id);
        s->peak_memory = isnan(mem) ? 0 : (int64_t)mem;
        double comm = q_run_double(db, "SELECT COALESCE(SUM(bytes), 0) FROM comm WHERE run_id=?1", id);
        s->comm_bytes = isnan(comm) ? 0 : (int64_t)comm;
        double calls = q_run_double(db, "SELECT COALESCE(SUM(calls), 0) FROM comm WHERE run_id=?1", id);
        s->comm_calls = isnan(calls) ? 0 : (int64_t)calls;
    }
    *out = rows.v;
    return rows.n;
}

// ---------------------------------------------------------------------------------
// Host facts

static void first_line(char *s) { s[strcspn(s, "\r\n")] = 0; }
// Copy with truncation (for text of unknown length from files and commands).
static void copy_trunc(char *dst, size_t n, const char *src) {
    size_t l = strlen(src);
    if (l >= n) l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

// Output of `cmd` (first line) into buf; returns the exit status (-1 if it could not run).
static int run_cmd(const char *cmd, char *buf, size_t n, int *any_output) {
    buf[0] = 0;
    if (any_output) *any_output = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int first = 1;
    while (fgets(line, sizeof line, p)) {
        if (any_output) *any_output = 1;
        if (first) { copy_trunc(buf, n, line); first_line(buf); first = 0; }
    }
    int st = pclose(p);
    return st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0 || strncmp(line, "cpu model", 9) == 0) {
            char *c = strchr(line, ':');
            if (c) { c++; while (*c == ' ' || *c == '\t') c++; snprintf(buf, n, "%s", c); first_line(buf); break; }
        }
    }
    fclose(f);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t l = strlen(buf);
    if (cores > 0 && l + 24 < n) snprintf(buf + l, n - l, " (%ld cores)", cores);
}

static void gpu_model(char *buf, size_t n) {
    snprintf(buf, n, "none");
    glob_t g;
    if (glob("/proc/driver/nvidia/gpus/*/information", 0, NULL, &g) != 0) return;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        if (!f) continue;
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "Model:", 6) == 0) {
                char *c = line + 6; while (*c == ' ' || *c == '\t') c++;
                first_line(c);
                if (len + strlen(c) + 3 < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "; " : "", c);
                break;
            }
        }
        fclose(f);
    }
    globfree(&g);
    if (!buf[0]) snprintf(buf, n, "none");
}

static void library_versions(char *buf, size_t n) {
    char ob[256], h5[32], mpi[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    const char *obc = openblas_get_config();
    snprintf(ob, sizeof ob, "%s", obc ? obc : "unknown");   // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
    unsigned maj = 0, min = 0, rel = 0;
    if (H5get_libversion(&maj, &min, &rel) < 0) snprintf(h5, sizeof h5, "unknown");
    else snprintf(h5, sizeof h5, "%u.%u.%u", maj, min, rel);
    int len = 0;
    if (MPI_Get_library_version(mpi, &len) != MPI_SUCCESS) snprintf(mpi, sizeof mpi, "unknown");
    mpi[sizeof mpi - 1] = 0;
    mpi[strcspn(mpi, ",\r\n")] = 0;   // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
    const char *fy = fy_library_version();
    buf[0] = 0;
    const char *keys[] = { "openblas", "hdf5", "sqlite", "libfyaml", "mpi" };
    const char *vals[] = { ob, h5, sqlite3_libversion(), fy ? fy : "unknown", mpi };
    xsnprintf(buf, n, "{");
    for (int i = 0; i < 5; i++) {
        size_t l = strlen(buf);
        xsnprintf(buf + l, n - l, "%s", i ? ", " : "");
        store_json_str(buf, n, keys[i]);
        l = strlen(buf);
        xsnprintf(buf + l, n - l, ": ");
        store_json_str(buf, n, vals[i]);
    }
    size_t l = strlen(buf);
    xsnprintf(buf + l, n - l, "}");
}

#define STR2(x) #x
#define STR(x) STR2(x)

void runinfo_host_facts(RunInfo *ri) {
    this_host(ri->host, sizeof ri->host);
    ri->pid = (int)getpid();
    cpu_model(ri->cpu_model, sizeof ri->cpu_model);
    gpu_model(ri->gpu_model, sizeof ri->gpu_model);
#if defined(__clang__)
    snprintf(ri->compiler, sizeof ri->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(ri->compiler, sizeof ri->compiler, "gcc %s", __VERSION__);
#else
    snprintf(ri->compiler, sizeof ri->compiler, "unknown");
#endif
#ifdef BOOST_CFLAGS
    snprintf(ri->cflags, sizeof ri->cflags, "%s", BOOST_CFLAGS);
#else
    // Not passed by the build: what the preprocessor knows about this translation unit
    // (compiled with the same flags as the rest of the engine).
    snprintf(ri->cflags, sizeof ri->cflags, "(derived)%s%s%s%s%s%s",
#ifdef __OPTIMIZE__
             " optimized",
#else
             " -O0",
#endif
#ifdef __AVX512F__
             " avx512f",
#else
             "",
#endif
#ifdef __AVX2__
             " avx2",
#else
             "",
#endif
#ifdef __FMA__
             " fma",
#else
             "",
#endif
#ifdef _OPENMP
             " openmp-" STR(_OPENMP),
#else
             "",
#endif
#ifdef NDEBUG
             " NDEBUG"
#else
             ""
#endif
    );
#endif
    library_versions(ri->library_versions, sizeof ri->library_versions);
    char out[256];
    int any = 0;
    if (run_cmd("git rev-parse HEAD 2>/dev/null", out, sizeof out, NULL) == 0 && out[0]) {
        copy_trunc(ri->git_commit, sizeof ri->git_commit, out);
        int rc = run_cmd("git status --porcelain 2>/dev/null", out, sizeof out, &any);
        ri->git_dirty = rc == 0 ? any : -1;
    } else {
        snprintf(ri->git_commit, sizeof ri->git_commit, "unknown");
        ri->git_dirty = -1;
    }
}
