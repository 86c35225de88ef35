// db.c — opening the run database, its helpers, buffered logging and writes that retry
// instead of dying (see db.h and docs/database.md). The lifecycle of launches and runs is
// in db_lifecycle.c.
#include "db_internal.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "../parallel/comm.h"
#include "../core/check.h"
#include "../core/outdir.h"
#include "../core/timer.h"

// ---------------------------------------------------------------------------------
// Helpers shared with db_query.c (db_internal.h)

void db_die(RunDB *db, int rc, const char *what, const char *file, int line) {
    die_at(file, line, "%s: %s failed: %s (%s)", db->path, what,
           db->db ? sqlite3_errmsg(db->db) : "no connection", sqlite3_errstr(rc));
}

static void exec_sql(RunDB *db, const char *sql) {
    char *err = NULL;
    int rc = sqlite3_exec(db->db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        die_at(__FILE__, __LINE__, "%s: SQL failed: %s (%s) in: %.200s", db->path,
               err ? err : sqlite3_errmsg(db->db), sqlite3_errstr(rc), sql);
    }
}

sqlite3_stmt *db_prep(RunDB *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) die_at(__FILE__, __LINE__, "%s: preparing SQL failed: %s in: %.200s", db->path, sqlite3_errmsg(db->db), sql);
    return st;
}
static sqlite3_stmt *prep_persistent(RunDB *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) die_at(__FILE__, __LINE__, "%s: preparing SQL failed: %s in: %.200s", db->path, sqlite3_errmsg(db->db), sql);
    return st;
}

int db_next_row(RunDB *db, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) return 1;
    if (rc != SQLITE_DONE) db_die(db, rc, what, __FILE__, __LINE__);
    return 0;
}
void db_finalize(RunDB *db, sqlite3_stmt *st) { DB_OK(db, sqlite3_finalize(st), "finalizing a statement"); }

void db_bind_text(RunDB *db, sqlite3_stmt *st, int i, const char *s) {
    DB_OK(db, s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i), "binding text");
}
void db_bind_i64(RunDB *db, sqlite3_stmt *st, int i, int64_t v) { DB_OK(db, sqlite3_bind_int64(st, i, v), "binding an integer"); }
void db_bind_dbl(RunDB *db, sqlite3_stmt *st, int i, double v) { DB_OK(db, sqlite3_bind_double(st, i, v), "binding a real"); }
void db_bind_null(RunDB *db, sqlite3_stmt *st, int i) { DB_OK(db, sqlite3_bind_null(st, i), "binding NULL"); }

void db_col_text(sqlite3_stmt *st, int i, char *buf, size_t n) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, n, "%s", t ? (const char *)t : "");
}
double db_col_dbl(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

char *db_json_array(RunDB *db, const char *const *list, int n) {
    char *json = xstrdup("[]");
    sqlite3_stmt *st = db_prep(db, "SELECT json_insert(?1, '$[#]', ?2)");
    for (int i = 0; i < n; i++) {
        db_bind_text(db, st, 1, json);
        db_bind_text(db, st, 2, list[i]);
        CHECK(db_next_row(db, st, "building a JSON array"), "json_insert returned no row");
        free(json);
        json = xstrdup((const char *)sqlite3_column_text(st, 0));
        DB_OK(db, sqlite3_reset(st), "resetting");
    }
    db_finalize(db, st);
    return json;
}

int db_json_strings(sqlite3 *h, const char *json, char ***out) {
    *out = NULL;
    sqlite3_stmt *st = NULL;
    if (!json || sqlite3_prepare_v2(h, "SELECT value FROM json_each(?1)", -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
    int n = 0, cap = 0;
    char **v = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) { cap = cap ? 2 * cap : 8; v = xrealloc(v, (size_t)cap * sizeof *v); }
        const unsigned char *t = sqlite3_column_text(st, 0);
        v[n++] = xstrdup(t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    *out = v;
    return n;
}

void rundb_free_strings(char **list, int n) {
    for (int i = 0; i < n; i++) free(list[i]);
    free(list);
}

struct sqlite3 *rundb_handle(RunDB *db) { return db->db; }
const char *rundb_path(const RunDB *db) { return db->path; }

// ---------------------------------------------------------------------------------
// Buffered rows

typedef struct { int64_t run; StepMetrics sm; } StepRow;
typedef struct { int64_t run; int step; int64_t tokens; double loss; } ValRow;
typedef struct { int64_t run; int step; const char *kind, *phase, *group; int layer; int64_t calls, elements, bytes; double seconds, wait; } CommRow;
typedef struct { int64_t run; int step, rank, tp, pp, dp; int64_t calls, elements, bytes; double seconds; } CommRankRow;
typedef struct { int64_t run; const char *category; int64_t bytes; } MemRow;
typedef struct { int64_t run; int step; char at[32]; const char *kind; char *detail; } EventRow;


struct RunDBBuffers {
    VEC(StepRow) steps;
    VEC(ValRow) vals;
    VEC(CommRow) comms;
    VEC(CommRankRow) ranks;
    VEC(MemRow) mems;
    VEC(EventRow) events;
};

// Automatic flush attempt when this many rows are buffered (the caller normally flushes sooner).
#define AUTO_FLUSH_ROWS 65536

int rundb_n_buffered(const RunDB *db) {
    const struct RunDBBuffers *b = db->buf;
    return b->steps.n + b->vals.n + b->comms.n + b->ranks.n + b->mems.n + b->events.n;
}

// ---------------------------------------------------------------------------------
// Writes that may fail without killing anything: every function below returns an
// SQLite result code instead of dying, and the transaction wrapper rolls back.

// Step a write statement to completion and reset it.
int rundb_step_done(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void rundb_bind_text(sqlite3_stmt *st, int i, const char *s) {
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT); else sqlite3_bind_null(st, i);
}

// The buffered rows, inside the caller's transaction. The buffers are emptied only
// after the transaction commits (rundb_empty_buffers), so a failure loses nothing.
int rundb_write_buffers(RunDB *db, void *unused) {
    struct RunDBBuffers *b = db->buf;
    for (int i = 0; i < b->steps.n; i++) {
        const StepRow *r = &b->steps.v[i]; sqlite3_stmt *st = db->ins_step;
        sqlite3_bind_int64(st, 1, r->run); sqlite3_bind_int64(st, 2, r->sm.step); sqlite3_bind_int64(st, 3, r->sm.tokens_seen);
        sqlite3_bind_double(st, 4, r->sm.loss); sqlite3_bind_double(st, 5, r->sm.lr); sqlite3_bind_double(st, 6, r->sm.grad_norm);
        sqlite3_bind_double(st, 7, r->sm.seconds); sqlite3_bind_double(st, 8, r->sm.tokens_per_s); sqlite3_bind_double(st, 9, r->sm.mfu);
        TRY(rundb_step_done(st));
    }
    for (int i = 0; i < b->vals.n; i++) {
        const ValRow *r = &b->vals.v[i]; sqlite3_stmt *st = db->ins_val;
        sqlite3_bind_int64(st, 1, r->run); sqlite3_bind_int64(st, 2, r->step); sqlite3_bind_int64(st, 3, r->tokens);
        sqlite3_bind_double(st, 4, r->loss);
        TRY(rundb_step_done(st));
    }
    for (int i = 0; i < b->comms.n; i++) {
        const CommRow *r = &b->comms.v[i]; sqlite3_stmt *st = db->ins_comm;
        sqlite3_bind_int64(st, 1, r->run); sqlite3_bind_int64(st, 2, r->step); rundb_bind_text(st, 3, r->kind); rundb_bind_text(st, 4, r->phase);
        sqlite3_bind_int64(st, 5, r->layer); sqlite3_bind_int64(st, 6, r->calls); sqlite3_bind_int64(st, 7, r->elements);
        sqlite3_bind_int64(st, 8, r->bytes); sqlite3_bind_double(st, 9, r->seconds); rundb_bind_text(st, 10, r->group);
        sqlite3_bind_double(st, 11, r->wait);   // NaN: not measured, stored NULL
        TRY(rundb_step_done(st));
    }
    for (int i = 0; i < b->ranks.n; i++) {
        const CommRankRow *r = &b->ranks.v[i]; sqlite3_stmt *st = db->ins_comm_rank;
        sqlite3_bind_int64(st, 1, r->run); sqlite3_bind_int64(st, 2, r->step); sqlite3_bind_int64(st, 3, r->rank);
        sqlite3_bind_int64(st, 4, r->tp); sqlite3_bind_int64(st, 5, r->pp); sqlite3_bind_int64(st, 6, r->dp);
        sqlite3_bind_int64(st, 7, r->calls); sqlite3_bind_int64(st, 8, r->elements); sqlite3_bind_int64(st, 9, r->bytes);
        sqlite3_bind_double(st, 10, r->seconds);
        TRY(rundb_step_done(st));
    }
    for (int i = 0; i < b->mems.n; i++) {
        const MemRow *r = &b->mems.v[i]; sqlite3_stmt *st = db->ins_mem;
        sqlite3_bind_int64(st, 1, r->run); rundb_bind_text(st, 2, r->category); sqlite3_bind_int64(st, 3, r->bytes);
        TRY(rundb_step_done(st));
    }
    for (int i = 0; i < b->events.n; i++) {
        const EventRow *r = &b->events.v[i]; sqlite3_stmt *st = db->ins_event;
        sqlite3_bind_int64(st, 1, r->run);
        if (r->step >= 0) sqlite3_bind_int64(st, 2, r->step); else sqlite3_bind_null(st, 2);
        rundb_bind_text(st, 3, r->at); rundb_bind_text(st, 4, r->kind); rundb_bind_text(st, 5, r->detail);
        TRY(rundb_step_done(st));
    }
    return SQLITE_OK;
}

void rundb_empty_buffers(RunDB *db) {
    struct RunDBBuffers *b = db->buf;
    for (int i = 0; i < b->events.n; i++) free(b->events.v[i].detail);
    b->steps.n = b->vals.n = b->comms.n = b->ranks.n = b->mems.n = b->events.n = 0;
}

// One write transaction: BEGIN IMMEDIATE, body, COMMIT. On failure: ROLLBACK, the
// message in db->last_error, and the result code.
static int tx_once(RunDB *db, TxBody body, void *arg) {
    int rc = sqlite3_exec(db->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = body(db, arg);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        snprintf(db->last_error, sizeof db->last_error, "%s (%s)", sqlite3_errmsg(db->db), sqlite3_errstr(rc));
        if (!sqlite3_get_autocommit(db->db)) sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

static int is_busy(int rc) { rc &= 0xff; return rc == SQLITE_BUSY || rc == SQLITE_LOCKED; }

static void sleep_s(double s) {
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

// tx_once until it succeeds: a busy database for up to `patience_s`, any other failure
// (full disk, I/O error, damaged file) 3 times a second apart. Warns on stderr before
// each wait of more than a second. Returns the last result code.
int rundb_tx_retry(RunDB *db, TxBody body, void *arg, double patience_s, const char *what) {
    double t0 = now_seconds(), wait = 0.05;
    int other_failures = 0;
    for (;;) {
        int rc = tx_once(db, body, arg);
        if (rc == SQLITE_OK) return rc;
        double waited = now_seconds() - t0;
        if (!is_busy(rc) && ++other_failures >= 3) return rc;
        if (is_busy(rc) && waited >= patience_s) return rc;
        if (!is_busy(rc)) wait = 1.0;
        if (wait >= 1.0)
            fprintf(stderr, "warning: run database %s: %s: %s; retrying in %.0f s (waited %.0f s)\n",
                    db->path, what, db->last_error, wait, waited);
        sleep_s(wait);
        wait = fmin(2 * wait, 30.0);
    }
}

static int flush_body(RunDB *db, void *arg) { return rundb_write_buffers(db, arg); }

// A flush attempt now; on failure the rows stay and the back-off grows (1 s .. 60 s).
static int flush_now(RunDB *db) {
    int n = rundb_n_buffered(db);
    int rc = tx_once(db, flush_body, NULL);
    double now = now_seconds();
    if (rc == SQLITE_OK) {
        if (db->failing)
            fprintf(stderr, "note: run database %s is writable again after %.0f s; %d buffered rows written\n",
                    db->path, now - db->fail_since, n);
        rundb_empty_buffers(db);
        db->failing = 0;
        return 0;
    }
    if (!db->failing) {
        db->failing = 1; db->fail_since = now; db->backoff = 1.0; db->last_warned = now;
        fprintf(stderr, "warning: run database %s: writing %d rows failed: %s; they stay in memory and are retried "
                "(training continues)\n", db->path, n, db->last_error);
    } else {
        db->backoff = fmin(2 * db->backoff, 60.0);
        if (now - db->last_warned >= 60.0) {
            db->last_warned = now;
            fprintf(stderr, "warning: run database %s still failing after %.0f s: %s; %d rows in memory\n",
                    db->path, now - db->fail_since, db->last_error, n);
        }
    }
    db->next_try = now + db->backoff;
    return 1;
}

int rundb_flush(RunDB *db) {
    if (rundb_n_buffered(db) == 0) return 0;
    if (db->failing && now_seconds() < db->next_try) return 1;   // backing off
    return flush_now(db);
}

int rundb_flush_wait(RunDB *db, double patience_s) {
    if (rundb_n_buffered(db) == 0) return 0;
    int rc = rundb_tx_retry(db, flush_body, NULL, patience_s, "writing buffered rows");
    if (rc == SQLITE_OK) { rundb_empty_buffers(db); db->failing = 0; return 0; }
    return flush_now(db);   // records the failure streak (and warns once)
}

static void maybe_autoflush(RunDB *db) { if (rundb_n_buffered(db) >= AUTO_FLUSH_ROWS) rundb_flush(db); }

// ---------------------------------------------------------------------------------
// Open and close

// PRAGMA user_version into *v: SQLITE_OK, or the code of the failure (not an SQLite file...).
static int user_version(RunDB *db, int *v) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) { *v = sqlite3_column_int(st, 0); rc = SQLITE_OK; }
        else if (rc == SQLITE_DONE) rc = SQLITE_CORRUPT;
    }
    sqlite3_finalize(st);
    return rc;
}

// PRAGMA quick_check: 1 if "ok", else 0 and the first problem it reports (damaged pages,
// broken indexes, or why it could not run) in first[n].
static int quick_check(RunDB *db, char *first, size_t n) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->db, "PRAGMA quick_check(1)", -1, &st, NULL);
    first[0] = 0;
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) { db_col_text(st, 0, first, n); rc = SQLITE_OK; }
    }
    if (rc != SQLITE_OK) snprintf(first, n, "%s (%s)", sqlite3_errmsg(db->db), sqlite3_errstr(rc));
    sqlite3_finalize(st);
    for (char *c = first; *c; c++) if (*c == '\n') *c = ' ';   // (one line in messages and the record)
    return strcmp(first, "ok") == 0;
}

// A damaged database is refused before anything is written to it.
static void integrity_or_die(RunDB *db) {
    char first[512];
    if (!quick_check(db, first, sizeof first))
        die_input_hint("move the file away (runs are then recorded in a new database), or salvage it: "
                       "sqlite3 DAMAGED.db .recover | sqlite3 NEW.db",
                       "%s: the run database is damaged (integrity check: %s); nothing was written to it",
                       db->path, first);
}

static int schema_body(RunDB *db, void *from_version) {
    int v = 0;
    TRY(user_version(db, &v));
    if (v == RUNDB_SCHEMA_VERSION) return SQLITE_OK;   // another process won the race
    const char *sql = v == 0 ? RUNDB_SCHEMA_SQL : v == 1 ? RUNDB_MIGRATE_V1_SQL : v == 2 ? RUNDB_MIGRATE_V2_SQL
                    : v == 3 ? RUNDB_MIGRATE_V3_SQL : v == 4 ? RUNDB_MIGRATE_V4_SQL : v == 5 ? RUNDB_MIGRATE_V5_SQL
                    : RUNDB_MIGRATE_V6_SQL;
    int rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    if (v == 1) {   // every row must still point at its run (ids were kept)
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(db->db, "PRAGMA foreign_key_check", -1, &st, NULL);
        if (rc != SQLITE_OK) return rc;
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW) return SQLITE_CONSTRAINT_FOREIGNKEY;
        if (rc != SQLITE_DONE) return rc;
    }
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version=%d", RUNDB_SCHEMA_VERSION);
    return sqlite3_exec(db->db, pragma, NULL, NULL, NULL);
}

// The longest run.db SQLite opens: its unix VFS takes path names of mxPathname (512) bytes,
// made absolute (from the working folder, symbolic links resolved), and the pager refuses a
// database whose name leaves no room for its "-journal" file (8 more). A longer one would fail
// in sqlite3_open as "unable to open database file", after its folders were created; refused
// here instead, before anything is created, as is a folder or file name over NAME_MAX. The
// limit is below every buffer that holds the path here (RunDB.path, the folder, 1024 bytes).
static void check_db_path_length(const char *path, const char *hint) {
    size_t len = strlen(path);
    for (const char *p = path; *p;) {   // each folder or file name
        size_t n = strcspn(p, "/");
        if (n > NAME_MAX)
            die_input_hint("use folder and file names of at most 255 bytes, e.g. runs/boost.db", "run.db=%.60s...: a folder or file name of %zu bytes ('%.30s...'); a name holds at most %d",
                           path, n, p, NAME_MAX);
        p += n;
        while (*p == '/') p++;
    }
    sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
    CHECK(vfs, "SQLite has no default VFS");
    int limit = vfs->mxPathname - 8;   // (sqlite3PagerOpen: the name and "-journal" in mxPathname)
    char cwd[PATH_MAX] = "";
    size_t abs_len = len;
    if (path[0] != '/') {
        if (!getcwd(cwd, sizeof cwd)) die_input("run.db=%.60s...: cannot read the working folder: %s", path, strerror(errno));
        abs_len += strlen(cwd) + 1;
    }
    // the name SQLite itself makes ("." and ".." folded, links resolved); when it cannot make
    // one (too long for it), the length from the working folder says by how much
    char *full = xcalloc((size_t)vfs->mxPathname + 1, 1);
    int rc = vfs->xFullPathname(vfs, path, vfs->mxPathname + 1, full);
    if (rc == SQLITE_OK) abs_len = strlen(full);
    free(full);
    if (abs_len > (size_t)limit) {
        char h[200];
        snprintf(h, sizeof h, "set run.db to a shorter path (at most %d bytes from /), e.g. runs/boost.db", limit);
        die_input_hint(h, "run.db=%.60s... is %zu bytes long, %zu as the absolute path SQLite opens%s; SQLite opens at most %d "
                       "(its %d-byte path names, less 8 for the database's -journal file)", path, len, abs_len,
                       path[0] == '/' ? "" : " (from the working folder)", limit, vfs->mxPathname);
    }
}

// run.db must name a plain file this project can keep: not an in-memory or URI name (SQLite
// would keep nothing, or read `file:...?mode=` as options), not a device or a FIFO
// (/dev/null), on a writable file system (WAL mode writes two files beside it). Checked
// where the value enters, before SQLite sees it, with the key and the reason.
static void check_db_path(const char *path) {
    const char *hint = "set run.db to a file path, e.g. runs/boost.db";
    if (!path[0]) die_input_hint(hint, "run.db is empty");
    size_t len = strlen(path);
    if (path[len - 1] == '/' || (len >= 2 && !strcmp(path + len - 2, "/.")) || !strcmp(path, ".") ||
        (len >= 3 && !strcmp(path + len - 3, "/..")) || !strcmp(path, ".."))
        die_input_hint(hint, "run.db=%s names a directory (it ends in '/', '.' or '..'); the run database is a file", path);
    if (path[0] == ':' || !strncmp(path, "file:", 5))
        die_input_hint(hint, "run.db=%s: an in-memory or URI database name is refused (nothing would be kept, or the "
                       "text after '?' would be read as SQLite options); run.db is a plain file path", path);
    check_db_path_length(path, hint);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        die_input_hint(hint, "run.db=%s is %s, not a regular file", path, file_kind_name(st.st_mode));
    char dir[1024];
    xsnprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) xsnprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    if (access(dir, W_OK) != 0 && errno != ENOENT)
        die_input_hint("set run.db to a file on a writable disk",
                       "run.db=%s: its folder %s is not writable: %s (the database and its -wal and -shm files are written there)",
                       path, dir, strerror(errno));
    if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
        die_input_hint("set run.db to a file on a writable disk, or make the file writable",
                       "run.db=%s is not writable: %s", path, strerror(errno));
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) != 0)
        die_input_hint(hint, "run.db=%s is a symbolic link to nothing (%s); boost-c never creates a file through a link",
                       path, strerror(errno));
}

// The columns of `table` (PRAGMA table_info) as ",a,b,c," into out[n]; the SQLite code.
static int table_columns(sqlite3 *h, const char *table, char *out, size_t n) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL);
    snprintf(out, n, ",");
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            size_t l = strlen(out);
            snprintf(out + l, n - l, "%s,", (const char *)sqlite3_column_text(st, 0));
        }
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

// A database at this build's schema version has every table and column this build writes:
// the expectation is the schema itself (RUNDB_SCHEMA_SQL built in memory), never a hand list,
// so a file whose `steps` lacks a column is refused by name here, not met later as "preparing
// SQL failed".
static void check_columns(RunDB *db) {
    sqlite3 *mem = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(mem, RUNDB_SCHEMA_SQL, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(mem, "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                                -1, &st, NULL);
    char problem[900] = "";
    while (rc == SQLITE_OK && !problem[0] && sqlite3_step(st) == SQLITE_ROW) {
        char table[128], want[4096], have[4096];
        db_col_text(st, 0, table, sizeof table);
        if ((rc = table_columns(mem, table, want, sizeof want)) != SQLITE_OK) break;
        if ((rc = table_columns(db->db, table, have, sizeof have)) != SQLITE_OK) break;
        if (!strcmp(have, ",")) { snprintf(problem, sizeof problem, "has no table %s", table); break; }
        for (char *c = want + 1; *c && !problem[0]; ) {
            char *e = strchr(c, ',');
            char col[200];
            snprintf(col, sizeof col, ",%.*s,", (int)(e - c), c);
            if (!strstr(have, col))
                snprintf(problem, sizeof problem, "has a table %s without its column %.*s (this build writes %.*s)",
                         table, (int)(e - c), c, (int)(strlen(want) - 2), want + 1);
            c = e + 1;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(mem);
    if (rc != SQLITE_OK && !problem[0])
        die_input("%s: cannot read the run database's tables: %s (%s)", db->path, sqlite3_errmsg(db->db), sqlite3_errstr(rc));
    if (problem[0])
        die_input_hint("move the file away (runs are then recorded in a new database), or restore it from a copy",
                       "%s: the run database (schema version %d) %s; it is damaged, was edited, or was written by "
                       "another build under the same version number", db->path, RUNDB_SCHEMA_VERSION, problem);
}

// A file with user_version 0 but tables of its own is another program's database: it is
// refused, never given this schema. One at this schema version must have every table and
// column (check_columns).
static void check_tables(RunDB *db, int version) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->db, "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                                -1, &st, NULL);
    char names[600] = "";
    int n = 0;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW) break;
        char t[128];
        db_col_text(st, 0, t, sizeof t);
        if (n++ < 8) { size_t l = strlen(names); snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", t); }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        die_input("%s: cannot list its tables: %s (%s)", db->path, sqlite3_errmsg(db->db), sqlite3_errstr(rc));
    if (version == 0 && n > 0)
        die_input_hint("set run.db to a new file (or an existing run database)",
                       "%s is an SQLite database of something else (tables %s%s, no run-database schema version); "
                       "boost-c does not add its tables to another program's database", db->path, names, n > 8 ? ", ..." : "");
    if (version == RUNDB_SCHEMA_VERSION) check_columns(db);
}

// The database file: an existing one is opened as it is (a link the user placed to a database
// is followed); a new one is created here, exclusively and never through a link
// (core/outdir.h), before SQLite opens it. The descriptor is kept: the connection's file by
// identity (device and inode) for as long as it is open.
static int open_anchor(const char *path) {
    OutDir dir;
    char name[1024], err[2000];
    if (outdir_open_parent(&dir, path, 1, name, sizeof name, err, sizeof err) != 0)
        die_input("%s: cannot create the run database's directory: %s (set run.db to a writable place)", path, err);
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 3; attempt++) {
        fd = openat(dir.fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   // (a FIFO is never waited on: refused below)
        if (fd >= 0 || errno != ENOENT) break;
        fd = outdir_create(&dir, name, NULL, err, sizeof err);   // (EEXIST: another process made it meanwhile)
        if (fd < 0 && errno != EEXIST) { outdir_close(&dir); die_input("run.db=%s: %s", path, err); }
    }
    int e = errno;
    outdir_close(&dir);
    if (fd < 0) die_input("run.db=%s: cannot open it: %s", path, strerror(e));
    return fd;
}

// Is the file at the database's path still the one opened (the anchor's device and inode)?
static int same_file_at_path(const RunDB *db, char *why, size_t n) {
    struct stat fst;
    if (!db->ino) return 1;
    if (stat(db->path, &fst) != 0) { snprintf(why, n, "%s is gone (%s): it was moved or deleted while this process wrote it", db->path, strerror(errno)); return 0; }
    if ((unsigned long long)fst.st_ino != db->ino || (unsigned long long)fst.st_dev != db->dev) {
        snprintf(why, n, "%s is another file now: the database was moved or replaced while this process wrote it", db->path);
        return 0;
    }
    return 1;
}

RunDB *rundb_open(const char *path) {
    check_db_path(path);   // (every refusal of the path comes before anything is created)
    RunDB *db = xcalloc(1, sizeof *db);
    db->buf = xcalloc(1, sizeof *db->buf);
    db->busy_ms = 2000;
    db->final_s = 600;
    db->anchor = -1;
    xsnprintf(db->path, sizeof db->path, "%s", path);
    db->anchor = open_anchor(path);
    struct stat fst;
    if (fstat(db->anchor, &fst) != 0) die_input("run.db=%s: cannot stat it: %s", path, strerror(errno));
    if (!S_ISREG(fst.st_mode)) die_input("run.db=%s is not a regular file", path);
    db->dev = (unsigned long long)fst.st_dev; db->ino = (unsigned long long)fst.st_ino;
    int rc = sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK)
        die_input("%s: cannot open the run database: %s", path, db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
    DB_OK(db, sqlite3_extended_result_codes(db->db, 1), "enabling extended result codes");
    char why[1400];
    if (!same_file_at_path(db, why, sizeof why)) die_input("run.db: %s", why);
    DB_OK(db, sqlite3_busy_timeout(db->db, db->busy_ms), "setting busy_timeout");
    int v = 0;
    rc = user_version(db, &v);
    if (rc != SQLITE_OK)
        die_input_hint("move it away, or choose another database path (run.db)",
                       "%s: not a run database: SQLite cannot read it: %s (%s)", path, sqlite3_errmsg(db->db), sqlite3_errstr(rc));
    if (v < 0)
        die_input_hint("move it away, or choose another database path (run.db)",
                       "%s: not a run database: its schema version (PRAGMA user_version) is %d; a run database is 0 when "
                       "new, 1 to %d (older builds' versions are migrated) or %d (this build's)",
                       path, v, RUNDB_SCHEMA_VERSION - 1, RUNDB_SCHEMA_VERSION);
    if (v > RUNDB_SCHEMA_VERSION)
        die_input_hint("use the boost-c version that created it, or another database path",
                       "%s: run database schema version %d is newer than this build supports (%d)",
                       path, v, RUNDB_SCHEMA_VERSION);
    if (v > 0) integrity_or_die(db);
    check_tables(db, v);
    exec_sql(db, "PRAGMA journal_mode=WAL");
    exec_sql(db, "PRAGMA synchronous=NORMAL");
    if (v < RUNDB_SCHEMA_VERSION) {
        exec_sql(db, "PRAGMA foreign_keys=OFF");   // a table rebuild needs them off (no effect inside a transaction)
        char what[64];
        if (v) snprintf(what, sizeof what, "migrating schema %d to %d", v, RUNDB_SCHEMA_VERSION);
        else snprintf(what, sizeof what, "creating the schema");
        rc = rundb_tx_retry(db, schema_body, NULL, db->final_s, what);
        if (rc != SQLITE_OK) die_input("%s: cannot %s: %s", path, what, db->last_error);
    }
    exec_sql(db, "PRAGMA foreign_keys=ON");
    db->ins_step = prep_persistent(db, "INSERT OR REPLACE INTO steps(run_id, step, tokens_seen, loss, lr, grad_norm, step_seconds, "
                                       "tokens_per_s, mfu) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
    db->ins_val = prep_persistent(db, "INSERT OR REPLACE INTO validation(run_id, step, tokens_seen, loss) VALUES (?1,?2,?3,?4)");
    db->ins_comm = prep_persistent(db, "INSERT OR REPLACE INTO comm(run_id, step, kind, phase, layer, calls, elements, bytes, seconds, grp, wait_seconds) "
                                       "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
    db->ins_comm_rank = prep_persistent(db, "INSERT OR REPLACE INTO comm_ranks(run_id, step, rank, tp_rank, pp_rank, dp_rank, "
                                            "calls, elements, bytes, seconds) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
    db->ins_mem = prep_persistent(db, "INSERT OR REPLACE INTO memory(run_id, category, bytes) VALUES (?1,?2,?3)");
    db->ins_event = prep_persistent(db, "INSERT INTO events(run_id, step, at, kind, detail) VALUES (?1,?2,?3,?4,?5)");
    return db;
}

// The checks read the file through a connection of their own: this connection's page cache
// would still show the pages it read before a copy was written over the file in place (a
// `cp` updates neither the WAL nor its index, so SQLite sees no change to invalidate).
static sqlite3 *fresh_reader(RunDB *db, char *why, size_t n) {
    sqlite3 *h = NULL;
    int rc = sqlite3_open_v2(db->path, &h, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(h, 10000);
    if (rc != SQLITE_OK) {
        snprintf(why, n, "%s cannot be opened to check it: %s", db->path, h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
        sqlite3_close(h);
        return NULL;
    }
    return h;
}

static int check_with(RunDB *db, sqlite3 *h, char *why, size_t n) {
    RunDB view = *db;   // (quick_check on the fresh connection)
    view.db = h;
    char first[512];
    if (!quick_check(&view, first, sizeof first)) {
        snprintf(why, n, "%s fails its integrity check (PRAGMA quick_check: %s): it was damaged or written over while "
                 "this process wrote it", db->path, first);
        return 0;
    }
    return 1;
}

int rundb_intact(RunDB *db, int deep, char *why, size_t n) {
    if (!same_file_at_path(db, why, n)) return 0;
    if (!deep) return 1;
    sqlite3 *h = fresh_reader(db, why, n);
    int ok = h && check_with(db, h, why, n);
    sqlite3_close(h);
    return ok;
}

// One integer (and the text of column 1, if asked) from a query with one bound run id, never
// dying: SQLITE_OK, SQLITE_NOTFOUND for no row, or the code.
static int query_int(sqlite3 *h, const char *sql, int64_t run, int64_t *v, char *text, size_t n) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);
    *v = 0;
    if (text) text[0] = 0;
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            if (text && sqlite3_column_type(st, 1) != SQLITE_NULL) snprintf(text, n, "%s", (const char *)sqlite3_column_text(st, 1));
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) rc = SQLITE_NOTFOUND;
    }
    sqlite3_finalize(st);
    return rc;
}

int rundb_run_complete(RunDB *db, int64_t run, const char *uid, int steps, char *why, size_t n) {
    if (rundb_flush_wait(db, 60) != 0) {
        snprintf(why, n, "%d rows could not be written to %s: %s", rundb_n_buffered(db), db->path, db->last_error);
        return 0;
    }
    if (!same_file_at_path(db, why, n)) return 0;
    sqlite3 *h = fresh_reader(db, why, n);
    if (!h) return 0;
    int ok = check_with(db, h, why, n);
    int64_t one = 0, last = 0;
    char got_uid[300];
    int rc = ok ? query_int(h, "SELECT 1, uid FROM runs WHERE id=?1", run, &one, got_uid, sizeof got_uid) : SQLITE_OK;
    if (ok && (rc == SQLITE_NOTFOUND || (rc == SQLITE_OK && strcmp(got_uid, uid)))) {
        snprintf(why, n, "%s has %s as run %lld, not this run (%s): the database was replaced while this process wrote it",
                 db->path, rc == SQLITE_OK ? got_uid : "no row", (long long)run, uid);
        ok = 0;
    }
    if (ok && rc == SQLITE_OK)
        rc = query_int(h, "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM steps WHERE run_id=?1 AND step=1) THEN 0 ELSE "
                          "(SELECT min(s.step) FROM steps s WHERE s.run_id=?1 AND NOT EXISTS "
                          "(SELECT 1 FROM steps t WHERE t.run_id=?1 AND t.step=s.step+1)) END", run, &last, NULL, 0);
    if (ok && rc != SQLITE_OK) {
        snprintf(why, n, "%s cannot be read: %s (%s)", db->path, sqlite3_errmsg(h), sqlite3_errstr(rc));
        ok = 0;
    }
    if (ok && last < steps) {
        snprintf(why, n, "%s has the step rows of this run only up to step %lld of %d", db->path, (long long)last, steps);
        ok = 0;
    }
    sqlite3_close(h);
    return ok;
}

void rundb_set_patience(RunDB *db, int busy_ms, double final_s) {
    db->busy_ms = busy_ms;
    db->final_s = final_s;
    DB_OK(db, sqlite3_busy_timeout(db->db, busy_ms), "setting busy_timeout");
}

int rundb_close(RunDB *db) {
    if (!db) return 0;
    int lost = 0;
    if (rundb_n_buffered(db) > 0 && rundb_tx_retry(db, flush_body, NULL, db->final_s, "writing buffered rows") != SQLITE_OK) {
        lost = rundb_n_buffered(db);
        fprintf(stderr, "error: run database %s: %d rows could not be written: %s\n", db->path, lost, db->last_error);
    } else {
        rundb_empty_buffers(db);
    }
    // Everything written went to the file opened; if that file is no longer at its path
    // (renamed, deleted, replaced) the results are not where the run says they are.
    char why[1400];
    if (!same_file_at_path(db, why, sizeof why)) {
        fprintf(stderr, "error: run database %s was moved, deleted or replaced while this process wrote it: its rows are not "
                "in %s (look for the moved file; a deleted one is lost with them)\n", db->path, db->path);
        if (!lost) lost = 1;
    }
    if (db->anchor >= 0) close(db->anchor);
    sqlite3_stmt *sts[] = { db->ins_step, db->ins_val, db->ins_comm, db->ins_comm_rank, db->ins_mem, db->ins_event };
    for (size_t i = 0; i < sizeof sts / sizeof *sts; i++) sqlite3_finalize(sts[i]);
    sqlite3_close(db->db);
    rundb_empty_buffers(db);
    struct RunDBBuffers *b = db->buf;
    free(b->steps.v); free(b->vals.v); free(b->comms.v); free(b->ranks.v); free(b->mems.v); free(b->events.v);
    free(b);
    free(db);
    return lost ? 1 : 0;
}

// ---------------------------------------------------------------------------------
// Logging

// Returns the static spelling of `s` from `names` (so buffered rows need no copies).
const char *rundb_one_of(const char *what, const char *s, const char *const *names) {
    for (int i = 0; names[i]; i++) if (strcmp(s, names[i]) == 0) return names[i];
    DIE("run database: unknown %s '%s'", what, s);
}
// The comm rows' kind, phase and group are spelled as parallel/comm.c names them (one table
// each there); the static spelling is kept, so buffered rows need no copies.
static const char *comm_spelling(const char *what, const char *s, int n, const char *(*name_of)(int)) {
    for (int i = 0; i < n; i++) if (strcmp(s, name_of(i)) == 0) return name_of(i);
    DIE("run database: unknown %s '%s'", what, s);
}
static const char *kind_of(int i) { return comm_kind_name((CommKind)i); }
static const char *phase_of(int i) { return comm_phase_name((CommPhase)i); }
static const char *group_of(int i) { return comm_group_name((CommGroup)i); }
const char *const RUNDB_MEMORY_NAMES[RUN_MEM_COUNT + 1] = { "parameters", "gradients", "optimizer", "activations", "peak_rss", NULL };
static const char *const EVENT_KINDS[] = { "checkpoint", "resumed", "error", "interrupted", "diverged", "dump",
                                           "config_change", "warning", "backend", NULL };
const char *const RUNDB_END_STATUS[RUN_END_COUNT + 1] = { "completed", "failed", "interrupted", "diverged", NULL };
const char *const RUNDB_LAUNCH_END_STATUS[] = { "completed", "failed", "interrupted", NULL };

void rundb_log_step(RunDB *db, int64_t run, const StepMetrics *sm) {
    StepRow *r = VEC_PUSH(db->buf->steps);
    r->run = run; r->sm = *sm;
    maybe_autoflush(db);
}

void rundb_log_val(RunDB *db, int64_t run, int step, int64_t tokens_seen, double loss) {
    ValRow *r = VEC_PUSH(db->buf->vals);
    r->run = run; r->step = step; r->tokens = tokens_seen; r->loss = loss;
    maybe_autoflush(db);
}

void rundb_log_comm(RunDB *db, int64_t run, int step, const char *kind, const char *phase, const char *group,
                    int layer, int64_t calls, int64_t elements, int64_t bytes, double seconds, double wait_seconds) {
    CommRow *r = VEC_PUSH(db->buf->comms);
    r->run = run; r->step = step; r->layer = layer;
    r->group = comm_spelling("comm group", group, GROUP_COUNT, group_of);
    r->kind = comm_spelling("comm kind", kind, COMM_KIND_COUNT, kind_of);
    r->phase = comm_spelling("comm phase", phase, PHASE_COUNT, phase_of);
    r->calls = calls; r->elements = elements; r->bytes = bytes; r->seconds = seconds; r->wait = wait_seconds;
    maybe_autoflush(db);
}

void rundb_log_comm_rank(RunDB *db, int64_t run, int step, int rank, int tp_rank, int pp_rank, int dp_rank,
                         int64_t calls, int64_t elements, int64_t bytes, double seconds) {
    CommRankRow *r = VEC_PUSH(db->buf->ranks);
    r->run = run; r->step = step; r->rank = rank; r->tp = tp_rank; r->pp = pp_rank; r->dp = dp_rank;
    r->calls = calls; r->elements = elements; r->bytes = bytes; r->seconds = seconds;
    maybe_autoflush(db);
}

void rundb_set_memory(RunDB *db, int64_t run, const char *category, int64_t bytes) {
    MemRow *r = VEC_PUSH(db->buf->mems);
    r->run = run; r->category = rundb_one_of("memory category", category, RUNDB_MEMORY_NAMES); r->bytes = bytes;
    maybe_autoflush(db);
}

void rundb_event(RunDB *db, int64_t run, int step, const char *kind, const char *detail) {
    const char *k = rundb_one_of("event kind", kind, EVENT_KINDS);
    EventRow *r = VEC_PUSH(db->buf->events);
    r->run = run; r->step = step; r->kind = k;
    r->detail = detail ? xstrdup(detail) : NULL;
    store_iso_now(r->at);
    maybe_autoflush(db);
}

