// db_internal.h — shared by db.c (open, buffered writes, lifecycle), db_query.c (lookups
// and the comparison table) and db_schema.c (schema, views, migration). Not an API.
#pragma once
#include <sqlite3.h>
#include "db.h"

// The schema this build writes (db_schema.c; docs/database.md shows the same statements).
extern const char *const RUNDB_SCHEMA_SQL;
// Schema 1, 2, 3 and 4 -> 5, run inside the caller's transaction with foreign keys off.
extern const char *const RUNDB_MIGRATE_V1_SQL;
extern const char *const RUNDB_MIGRATE_V2_SQL;
extern const char *const RUNDB_MIGRATE_V3_SQL;
extern const char *const RUNDB_MIGRATE_V4_SQL;
extern const char *const RUNDB_MIGRATE_V5_SQL;
extern const char *const RUNDB_MIGRATE_V6_SQL;

struct RunDB {
    sqlite3 *db;
    char path[1024];
    struct RunDBBuffers *buf;          // rows waiting for the next flush (db.c)
    sqlite3_stmt *ins_step, *ins_val, *ins_comm, *ins_comm_rank, *ins_mem, *ins_event;
    int busy_ms;                       // SQLite busy timeout of one attempt
    double final_s;                    // patience of close / lifecycle calls on a busy database
    // A failing flush streak: when to try again and what went wrong.
    int failing;
    double fail_since, next_try, backoff, last_warned;
    char last_error[512];
    unsigned long long dev, ino;       // the file opened: a database moved or deleted under a run is noticed
    int anchor;                        // a descriptor of that file, held open for the connection's life
                                       // (its identity: device and inode), -1 when none
};

// Reads and set-up: a failure here is an internal error (file:line + SQLite's message).
__attribute__((noreturn))
void db_die(RunDB *db, int rc, const char *what, const char *file, int line);
#define DB_OK(db, call, what) do { int rc_ = (call); if (rc_ != SQLITE_OK) db_die((db), rc_, (what), __FILE__, __LINE__); } while (0)
sqlite3_stmt *db_prep(RunDB *db, const char *sql);
// Next row: 1, or 0 at the end.
int db_next_row(RunDB *db, sqlite3_stmt *st, const char *what);
void db_finalize(RunDB *db, sqlite3_stmt *st);
// Bind helpers (a failing bind is a programming error: dies). NaN binds as NULL.
void db_bind_text(RunDB *db, sqlite3_stmt *st, int i, const char *s);
void db_bind_i64(RunDB *db, sqlite3_stmt *st, int i, int64_t v);
void db_bind_dbl(RunDB *db, sqlite3_stmt *st, int i, double v);
void db_bind_null(RunDB *db, sqlite3_stmt *st, int i);
// Column text copied into buf ("" for NULL); NULL reads as NAN.
void db_col_text(sqlite3_stmt *st, int i, char *buf, size_t n);
double db_col_dbl(sqlite3_stmt *st, int i);
// A JSON array of the strings (SQLite builds it: no hand escaping), malloc'd; "[]" when n = 0.
char *db_json_array(RunDB *db, const char *const *list, int n);
// The strings of a JSON array (SQLite's json_each): the count, *out malloc'd.
int db_json_strings(sqlite3 *h, const char *json, char ***out);

// The configuration a run ran with (runs alias r): after a resume that changed it, its last
// config_change event's, else config_json at the start (the views, rundb_run_config).
#define RUN_CONFIG_SQL(r) \
"COALESCE((SELECT detail FROM events e WHERE e.run_id = " r ".id AND e.kind = 'config_change' ORDER BY e.id DESC LIMIT 1), " r ".config_json)"

// ---- shared by db.c and db_lifecycle.c --------------------------------------------------
// Growable arrays: VEC(T) v = {0}; *VEC_PUSH(v) = x;
#define VEC(T) struct { T *v; int n, cap; }
// appends one element (core/check.h vec_grow); yields a pointer to it
#define VEC_PUSH(vec) ((vec).v = vec_grow((vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v), &(vec).v[(vec).n - 1])

// Writes that may fail without killing anything return an SQLite result code.
#define TRY(call) do { int rc_t_ = (call); if (rc_t_ != SQLITE_OK) return rc_t_; } while (0)
int rundb_step_done(sqlite3_stmt *st);                          // step to DONE and reset: SQLITE_OK or the code
void rundb_bind_text(sqlite3_stmt *st, int i, const char *s);   // NULL binds NULL
// The body of one write transaction (returns SQLITE_OK or an error code; never dies).
typedef int (*TxBody)(RunDB *db, void *arg);
// BEGIN IMMEDIATE, body, COMMIT until it succeeds: a busy database for up to patience_s,
// any other failure 3 times a second apart (warning before each wait); the last code.
int rundb_tx_retry(RunDB *db, TxBody body, void *arg, double patience_s, const char *what);
// The buffered rows: written inside a transaction (a TxBody), emptied after its commit.
int rundb_write_buffers(RunDB *db, void *unused);
void rundb_empty_buffers(RunDB *db);
int rundb_n_buffered(const RunDB *db);
// The static spelling of `s` among `names` (dies on an unknown one: a programming error).
const char *rundb_one_of(const char *what, const char *s, const char *const *names);
extern const char *const RUNDB_LAUNCH_END_STATUS[];   // (RUNDB_END_STATUS: db.h)
