// test_db.c — the run database beyond its basic round trip (tests/test_store.c): the
// migration of schema-1 files, launches, stored overrides, the views, the comparison
// table's medians, spreads and rates, the end-status rules when several ranks record
// (first failure wins, interrupted only replaces running), and the database that never
// kills training: busy (a lock held by another process), full, damaged; a database of
// another schema refused by name (every column of the schema taken away in turn); paths
// refused before anything is made; a database written over in place under a run is never
// its 'completed'.
#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "storetestlib.h"
#include "store/db.h"
#include "store/compare.h"
#include "core/check.h"
#include "core/rng.h"

TL_MAIN_DEFS




static int count_lines(const char *text, const char *prefix) {
    int n = 0;
    for (const char *p = text; p && *p; ) {
        if (!strncmp(p, prefix, strlen(prefix))) n++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return n;
}

static RunInfo make_info(const char *exp, const char *variant, const char *uid) {
    RunInfo ri = runinfo_for_test(exp, variant, uid);
    snprintf(ri.experiment_version, sizeof ri.experiment_version, "1");
    ri.config_json = "{\"model\": {\"d_model\": 64}, \"train\": {\"steps\": 10, \"threads\": 1}}";
    ri.params = 1000; ri.flops_per_token = 1e6;
    return ri;
}

// Steps 1..n: step 1 takes 1 s (warm-up); the others `sec` s each, 1000 tokens per step.
static void log_steps(RunDB *db, int64_t run, int n, double sec) {
    for (int s = 1; s <= n; s++) {
        StepMetrics sm = {0};
        sm.step = s; sm.loss = 5.0 - 0.1 * s; sm.lr = 1e-3; sm.grad_norm = 1;
        sm.seconds = s == 1 ? 1.0 : sec; sm.tokens_per_s = 1000.0 / sm.seconds; sm.mfu = 0;
        sm.tokens_seen = 1000LL * s;
        rundb_log_step(db, run, &sm);
    }
}

// ---- schema 1 files are migrated, nothing lost ----------------------------------------------
static const char *V1_SCHEMA =
"CREATE TABLE runs (id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, experiment TEXT NOT NULL, variant TEXT NOT NULL,"
" manifest_path TEXT, manifest_version TEXT, manifest_sha256 TEXT, config_json TEXT, git_commit TEXT, git_dirty INTEGER,"
" host TEXT, pid INTEGER, cpu_model TEXT, gpu_model TEXT, compiler TEXT, cflags TEXT, library_versions TEXT,"
" tp INTEGER NOT NULL DEFAULT 1, pp INTEGER NOT NULL DEFAULT 1, dp INTEGER NOT NULL DEFAULT 1, world_size INTEGER NOT NULL DEFAULT 1,"
" status TEXT NOT NULL CHECK (status IN ('running','completed','failed','interrupted')), started_at TEXT NOT NULL, ended_at TEXT,"
" error TEXT, resumed_count INTEGER NOT NULL DEFAULT 0, params INTEGER, flops_per_token REAL, peak_gflops REAL);"
"CREATE INDEX runs_by_variant ON runs(experiment, variant, started_at);"
"CREATE INDEX runs_by_status ON runs(status);"
"CREATE TABLE steps (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL, tokens_seen INTEGER NOT NULL,"
" loss REAL, lr REAL, grad_norm REAL, step_seconds REAL, tokens_per_s REAL, mfu REAL, PRIMARY KEY (run_id, step)) WITHOUT ROWID;"
"CREATE TABLE validation (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL,"
" tokens_seen INTEGER NOT NULL, loss REAL, PRIMARY KEY (run_id, step)) WITHOUT ROWID;"
"CREATE TABLE comm (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL, kind TEXT NOT NULL,"
" phase TEXT NOT NULL, grp TEXT NOT NULL, layer INTEGER NOT NULL DEFAULT -1, calls INTEGER NOT NULL, elements INTEGER NOT NULL,"
" bytes INTEGER NOT NULL, seconds REAL, PRIMARY KEY (run_id, step, kind, phase, grp, layer)) WITHOUT ROWID;"
"CREATE TABLE memory (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, category TEXT NOT NULL, bytes INTEGER NOT NULL,"
" PRIMARY KEY (run_id, category)) WITHOUT ROWID;"
"CREATE TABLE events (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER,"
" at TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('checkpoint','resumed','error','interrupted','dump','config_change')), detail TEXT);"
"CREATE INDEX events_by_run ON events(run_id, id);"
"PRAGMA user_version=1;"
"INSERT INTO runs(id, uid, experiment, variant, manifest_version, status, started_at, tp) VALUES"
" (7, 'old.v.1', 'old', 'v', '3', 'completed', '2024-01-01T00:00:00.000Z', 2);"
"INSERT INTO steps VALUES (7, 1, 100, 4.5, 1e-3, 1, 0.5, 200, 0.1), (7, 2, 200, 4.0, 1e-3, 1, 0.25, 400, 0.2);"
"INSERT INTO events(run_id, step, at, kind, detail) VALUES (7, 2, '2024-01-01T00:00:01.000Z', 'checkpoint', 'x/step_2.h5');";

TEST(db_migrates_schema_1) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "v1.db");
    sqlite3 *s = raw_open(path);
    EXPECT(sqlite3_exec(s, V1_SCHEMA, NULL, NULL, NULL) == SQLITE_OK, "creating the v1 file: %s", sqlite3_errmsg(s));
    sqlite3_close(s);
    RunDB *db = rundb_open(path);
    s = raw_open(path);
    EXPECT(q_num(s, "PRAGMA user_version") == RUNDB_SCHEMA_VERSION, "user_version");
    q_text(s, "SELECT uid || '|' || experiment_version || '|' || status || '|' || tp || '|' || overrides || '|' || repeat_index FROM runs WHERE id=7", t, sizeof t);
    EXPECT(!strcmp(t, "old.v.1|3|completed|2|[]|0"), "migrated run: %s", t);
    EXPECT(q_num(s, "SELECT COUNT(*) FROM steps WHERE run_id=7") == 2, "steps kept");
    EXPECT(q_num(s, "SELECT COUNT(*) FROM events WHERE run_id=7 AND kind='checkpoint'") == 1, "events kept");
    q_text(s, "SELECT COUNT(*) FROM pragma_foreign_key_check", t, sizeof t);
    EXPECT(!strcmp(t, "0"), "foreign keys after the rebuild: %s", t);
    q_text(s, "SELECT steps || '|' || printf('%.1f', tokens_per_s) FROM run_summary WHERE run_id=7", t, sizeof t);
    EXPECT(!strcmp(t, "2|400.0"), "run_summary of a migrated run: %s", t);   // step 2 timed: 100 tokens / 0.25 s
    // the new status and event kinds are accepted; cascades still work
    EXPECT(sqlite3_exec(s, "UPDATE runs SET status='diverged' WHERE id=7", NULL, NULL, NULL) == SQLITE_OK, "diverged status");
    sqlite3_exec(s, "PRAGMA foreign_keys=ON; DELETE FROM runs WHERE id=7", NULL, NULL, NULL);
    EXPECT(q_num(s, "SELECT COUNT(*) FROM steps") == 0, "cascade after the migration");
    sqlite3_close(s);
    rundb_close(db);
    db = rundb_open(path);   // opening again changes nothing
    rundb_close(db);
}

// Schema 5's columns taken away again (the views that read them are dropped first).
#define SCHEMA6_DOWN "ALTER TABLE launches DROP COLUMN launcher; ALTER TABLE launches DROP COLUMN error;"
#define SCHEMA5_DOWN \
    "ALTER TABLE runs DROP COLUMN peak_load_1m; ALTER TABLE runs DROP COLUMN peak_note;" \
    "ALTER TABLE launches DROP COLUMN peak_load_1m; ALTER TABLE launches DROP COLUMN peak_note;" \
    "ALTER TABLE comm DROP COLUMN wait_seconds;"

// ---- schema 2 files are migrated: runs and launches gain kind and hardware ----------------------
// A schema-2 file is made from a fresh one by taking schema 3's additions away again (the
// columns schema 3 added come last, as ALTER TABLE ADD COLUMN puts them).
TEST(db_migrates_schema_2) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "v2.db");
    RunDB *db = rundb_open(path);
    RunInfo ri = make_info("old2", "v", "old2.v.1");
    int64_t id = rundb_begin_run(db, &ri);
    log_steps(db, id, 10, 0.1);
    rundb_end_run(db, id, "completed", NULL);
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    const char *down =
        "DROP VIEW latest_runs; DROP VIEW run_summary; DROP VIEW launch_summary; DROP VIEW simulated_runs;"
        "DROP VIEW config_diff; DROP VIEW run_config; DROP TABLE host_peaks;"
        "DROP TABLE simulation;"
        "ALTER TABLE runs DROP COLUMN kind; ALTER TABLE runs DROP COLUMN hardware;"
        "ALTER TABLE launches DROP COLUMN kind; ALTER TABLE launches DROP COLUMN hardware;"
        "ALTER TABLE launches DROP COLUMN peak_check_gflops;" SCHEMA6_DOWN SCHEMA5_DOWN
        "PRAGMA user_version=2;";
    EXPECT(sqlite3_exec(s, down, NULL, NULL, NULL) == SQLITE_OK, "making a schema-2 file: %s", sqlite3_errmsg(s));
    EXPECT(q_num(s, "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name='kind'") == 0, "no kind column in schema 2");
    sqlite3_close(s);
    db = rundb_open(path);
    s = raw_open(path);
    EXPECT(q_num(s, "PRAGMA user_version") == RUNDB_SCHEMA_VERSION, "user_version");
    q_text(s, "SELECT kind || '|' || COALESCE(hardware, 'null') || '|' || timed_steps FROM run_summary WHERE uid='old2.v.1'", t, sizeof t);
    EXPECT(!strcmp(t, "measured|null|9"), "migrated run in run_summary: %s", t);
    EXPECT(q_num(s, "SELECT COUNT(*) FROM simulated_runs") == 0, "the simulated_runs view exists");
    EXPECT(sqlite3_exec(s, "UPDATE runs SET kind='guessed'", NULL, NULL, NULL) != SQLITE_OK, "kind is checked after the migration");
    sqlite3_close(s);
    rundb_close(db);
}

// ---- schema 3 files are migrated: host_peaks, the configuration views, the median ------------
// A schema-3 file: a fresh one without schema 4's table and views, and schema 3's run_summary
// (no median, no configuration columns).
TEST(db_migrates_schema_3) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "v3.db");
    RunDB *db = rundb_open(path);
    RunInfo ri = make_info("old3", "v", "old3.v.1");
    ri.config_json = "{\"model\": {\"linear\": \"cola\"}, \"boost\": {\"btp\": true}, \"train\": {\"precision\": \"fp32\"}}";
    int64_t id = rundb_begin_run(db, &ri);
    log_steps(db, id, 10, 0.1);
    rundb_end_run(db, id, "completed", NULL);
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    const char *down =
        "DROP VIEW latest_runs; DROP VIEW run_summary; DROP VIEW config_diff; DROP VIEW run_config; DROP TABLE host_peaks;"
        "CREATE VIEW run_summary AS SELECT r.id AS run_id, r.uid FROM runs r;"
        "CREATE VIEW latest_runs AS SELECT * FROM run_summary; ALTER TABLE launches DROP COLUMN peak_check_gflops;"
        "DROP VIEW launch_summary;" SCHEMA6_DOWN SCHEMA5_DOWN
        "CREATE VIEW launch_summary AS SELECT l.id AS launch_id FROM launches l;"
        "PRAGMA user_version=3;";
    EXPECT(sqlite3_exec(s, down, NULL, NULL, NULL) == SQLITE_OK, "making a schema-3 file: %s", sqlite3_errmsg(s));
    sqlite3_close(s);
    db = rundb_open(path);
    s = raw_open(path);
    EXPECT(q_num(s, "PRAGMA user_version") == RUNDB_SCHEMA_VERSION, "user_version");
    q_text(s, "SELECT linear || '|' || btp || '|' || precision || printf('|%.1f', median_ms_per_step) FROM run_summary WHERE uid='old3.v.1'",
           t, sizeof t);
    EXPECT(!strcmp(t, "cola|true|fp32|100.0"), "migrated run in the new run_summary: %s", t);
    EXPECT(q_num(s, "SELECT COUNT(*) FROM host_peaks") == 0, "the host_peaks table exists");
    EXPECT(q_num(s, "SELECT COUNT(*) FROM config_diff") == 0, "the config_diff view exists (a run without a launch: no rows)");
    sqlite3_close(s);
    rundb_close(db);
}

// An older schema made from a file of this one by SQL that takes the newer parts away.
static void downgrade(const char *path, const char *sql) {
    sqlite3 *s = raw_open(path);
    EXPECT(sqlite3_exec(s, sql, NULL, NULL, NULL) == SQLITE_OK, "making an older file: %s", sqlite3_errmsg(s));
    sqlite3_close(s);
}

// A launch of `exp` whose manifest hash is the number `sha` written out.
static LaunchInfo launch_info(const char *exp, int sha) {
    LaunchInfo li;
    memset(&li, 0, sizeof li);
    snprintf(li.experiment, sizeof li.experiment, "%s", exp);
    snprintf(li.manifest_sha256, sizeof li.manifest_sha256, "%064d", sha);
    return li;
}

// ---- schema 4 files are migrated: the peak's load and note, the collectives' wait -----------
TEST(db_migrates_schema_4) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "v4.db");
    RunDB *db = rundb_open(path);
    RunInfo ri = make_info("old4", "v", "old4.v.1");
    int64_t id = rundb_begin_run(db, &ri);
    log_steps(db, id, 10, 0.1);
    for (int s = 1; s <= 10; s++) rundb_log_comm(db, id, s, "all_reduce", "forward", "tp", 0, 2, 100, 400, 0.01, NAN);
    rundb_end_run(db, id, "completed", NULL);
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    const char *down =
        "DROP VIEW latest_runs; DROP VIEW run_summary; DROP VIEW launch_summary; DROP VIEW simulated_runs;"
        "DROP VIEW config_diff; DROP VIEW run_config;" SCHEMA6_DOWN SCHEMA5_DOWN
        "PRAGMA user_version=4;";
    EXPECT(sqlite3_exec(s, down, NULL, NULL, NULL) == SQLITE_OK, "making a schema-4 file: %s", sqlite3_errmsg(s));
    sqlite3_close(s);
    db = rundb_open(path);
    s = raw_open(path);
    EXPECT(q_num(s, "PRAGMA user_version") == RUNDB_SCHEMA_VERSION, "user_version");
    q_text(s, "SELECT printf('%.1f', comm_ms_per_step) || '|' || COALESCE(comm_wait_ms_per_step, 'null') || '|' || "
              "COALESCE(peak_load_1m, 'null') || '|' || COALESCE(peak_note, 'null') FROM run_summary WHERE uid='old4.v.1'", t, sizeof t);
    EXPECT(!strcmp(t, "10.0|null|null|null"), "a migrated run: its collectives' time kept, their wait and its peak's load unknown: %s", t);
    EXPECT(q_num(s, "SELECT COUNT(*) FROM pragma_table_info('launches') WHERE name IN ('peak_load_1m', 'peak_note')") == 2,
           "launches gained the peak's load and note");
    sqlite3_close(s);
    rundb_close(db);
    db = rundb_open(path);   // opening again changes nothing
    rundb_close(db);
}

// ---- schema 5 files are migrated: launches gain launcher and error, launch_summary shows them --
TEST(db_migrates_schema_5) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "v5.db");
    RunDB *db = rundb_open(path);
    LaunchInfo li = launch_info("old5", 5);
    li.repeat = 1;
    int64_t L = rundb_begin_launch(db, &li);
    RunInfo ri = make_info("old5", "v", "old5.v.1");
    ri.launch_id = L;
    rundb_end_run(db, rundb_begin_run(db, &ri), "completed", NULL);
    rundb_end_launch(db, L, "completed");
    rundb_close(db);
    downgrade(path, "DROP VIEW launch_summary; ALTER TABLE launches DROP COLUMN launcher; ALTER TABLE launches DROP COLUMN error;"
                    "CREATE VIEW launch_summary AS SELECT l.id AS launch_id, l.experiment, l.status FROM launches l;"
                    "PRAGMA user_version=5;");
    db = rundb_open(path);
    li.launcher[0] = 0;
    snprintf(li.launcher, sizeof li.launcher, "srun --mpi=pmix");
    int64_t L2 = rundb_begin_launch(db, &li);
    rundb_refuse_launch(db, L2, "no usable CUDA device");
    LaunchRow a, b;
    EXPECT(rundb_launch(db, L, &a) && rundb_launch(db, L2, &b), "the launches");
    EXPECT(!strcmp(a.status, "completed") && !a.launcher[0] && !a.error[0] && !strcmp(b.status, "failed") &&
           !strcmp(b.launcher, "srun --mpi=pmix") && !strcmp(b.error, "no usable CUDA device"),
           "migrated launch %s '%s' '%s'; new one %s '%s' '%s'", a.status, a.launcher, a.error, b.status, b.launcher, b.error);
    rundb_launch_row_free(&a); rundb_launch_row_free(&b);
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    EXPECT(q_num(s, "PRAGMA user_version") == RUNDB_SCHEMA_VERSION, "user_version");
    q_text(s, "SELECT group_concat(runs || ':' || COALESCE(launcher, '-') || ':' || COALESCE(error, '-'), ' ') FROM launch_summary", t, sizeof t);
    EXPECT(!strcmp(t, "1:-:- 0:srun --mpi=pmix:no usable CUDA device"), "launch_summary after the migration: %s", t);
    sqlite3_close(s);
}

// ---- a simulated run: kind, hardware, its one step, the simulation row, the views ------------
// ---- schema 6 files are migrated: events admit 'backend', nothing lost ------------------------
// A schema-6 file: a fresh one whose events table has schema 6's CHECK (no 'backend'); its views
// (which read events) go with it, as the migration recreates them.
TEST(db_migrates_schema_6) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "v6.db");
    RunDB *db = rundb_open(path);
    RunInfo ri = make_info("old6", "v", "old6.v.1");
    int64_t id = rundb_begin_run(db, &ri);
    rundb_event(db, id, 3, "checkpoint", "ckpt/step_3.h5");
    rundb_end_run(db, id, "completed", NULL);
    rundb_close(db);
    downgrade(path,
        "CREATE TABLE events_v6 (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
        " step INTEGER, at TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('checkpoint','resumed','error','interrupted',"
        "'diverged','dump','config_change','warning')), detail TEXT);"
        "INSERT INTO events_v6 SELECT * FROM events; DROP VIEW latest_runs; DROP VIEW run_summary; DROP VIEW launch_summary;"
        "DROP VIEW simulated_runs; DROP VIEW run_config; DROP VIEW config_diff; DROP TABLE events;"
        "ALTER TABLE events_v6 RENAME TO events; CREATE INDEX events_by_run ON events(run_id, id);"
        "PRAGMA user_version=6;");
    sqlite3 *s = raw_open(path);
    EXPECT(sqlite3_exec(s, "INSERT INTO events (run_id, at, kind) VALUES (1, 'x', 'backend')", NULL, NULL, NULL) != SQLITE_OK,
           "schema 6 refuses the new kind");
    sqlite3_close(s);
    db = rundb_open(path);
    rundb_event(db, id, 1, "backend", "attention forward B 2 T 128 H 4 Hkv 2 hd 64: the flash kernel (fp32)");
    rundb_close(db);
    s = raw_open(path);
    EXPECT(q_num(s, "PRAGMA user_version") == RUNDB_SCHEMA_VERSION, "user_version");
    q_text(s, "SELECT group_concat(kind || ':' || COALESCE(step, '-'), ',') FROM (SELECT * FROM events WHERE run_id = 1 ORDER BY id)", t, sizeof t);
    EXPECT(!strcmp(t, "checkpoint:3,backend:1"), "events after the migration: %s", t);
    EXPECT(q_num(s, "SELECT COUNT(*) FROM run_config") >= 0, "the views read events again");
    sqlite3_close(s);
}

TEST(db_simulated_run) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "sim.db");
    RunDB *db = rundb_open(path);
    LaunchInfo li = launch_info("ex", 1);
    snprintf(li.kind, sizeof li.kind, "simulated");
    snprintf(li.hardware, sizeof li.hardware, "a100-80gb-node4");
    li.repeat = 1; li.load_avg = -1; host_facts(&li.host);
    int64_t L = rundb_begin_launch(db, &li);
    LaunchRow lr;
    EXPECT(rundb_launch(db, L, &lr) && !strcmp(lr.kind, "simulated") && !strcmp(lr.hardware, "a100-80gb-node4"), "launch kind read back");
    rundb_launch_row_free(&lr);
    RunInfo ri = make_info("ex", "boost", "ex.boost.sim");
    snprintf(ri.kind, sizeof ri.kind, "simulated");
    snprintf(ri.hardware, sizeof ri.hardware, "a100-80gb-node4");
    ri.launch_id = L; ri.peak_gflops = 4 * 312e3; ri.flops_per_token = 4e10; ri.tp = 4; ri.world_size = 4;
    int64_t id = rundb_begin_run(db, &ri);
    StepMetrics sm = { .step = 1, .loss = NAN, .seconds = 0.5, .tokens_per_s = 16384 / 0.5, .tokens_seen = 16384 };
    rundb_log_step(db, id, &sm);
    rundb_log_comm(db, id, 1, "all_reduce", "forward", "tp", 0, 4, 400, 800, 0.002, NAN);
    rundb_set_memory(db, id, "parameters", 1000);
    rundb_set_memory(db, id, "activations", 3000);
    RunSimulation rs;
    memset(&rs, 0, sizeof rs);
    snprintf(rs.hardware, sizeof rs.hardware, "a100-80gb-node4");
    snprintf(rs.precision, sizeof rs.precision, "bf16");
    rs.micro_batches = 1; rs.step_s = 0.5; rs.compute_s = 0.4; rs.comm_s = 0.1; rs.tokens_per_s = 32768;
    rs.memory_bytes = 4000; rs.memory_capacity = 8e10; rs.memory_fits = 1; rs.report_json = "{\"step\": {\"seconds\": 0.5}}";
    rundb_record_simulation(db, id, &rs);
    rundb_end_run(db, id, "completed", NULL);
    VariantSummary *vs = NULL;
    int n = rundb_summarize(db, &id, 1, &vs);
    EXPECT(n == 1 && fabs(vs[0].ms_per_step - 500) < 1e-9 && isnan(vs[0].ms_lo) && isnan(vs[0].final_loss) &&
           fabs(vs[0].tokens_per_s - 32768) < 1e-6 && vs[0].peak_memory == 4000,
           "summary of the one modeled step: %g ms, spread %g, loss %g, %g tokens/s, %lld B", n ? vs[0].ms_per_step : -1,
           n ? vs[0].ms_lo : -1, n ? vs[0].final_loss : -1, n ? vs[0].tokens_per_s : -1, n ? (long long)vs[0].peak_memory : -1);
    free(vs);
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    // one set of queries: run_summary times the single step (no warm-up) and gives MFU
    q_text(s, "SELECT kind || '|' || hardware || '|' || timed_steps || printf('|%.1f|%.0f|%.3f|%.1f', mean_ms_per_step, "
              "tokens_per_s, mfu, comm_ms_per_step) || '|' || COALESCE(final_loss, 'null') FROM run_summary WHERE run_id = (SELECT MAX(id) FROM runs)",
           t, sizeof t);
    EXPECT(!strcmp(t, "simulated|a100-80gb-node4|1|500.0|32768|1.050|2.0|null"), "run_summary of a simulated run: %s", t);
    q_text(s, "SELECT hardware || printf('|%.1f|%.1f', step_seconds, compute_seconds) || '|' || memory_fits FROM simulated_runs", t, sizeof t);
    EXPECT(!strcmp(t, "a100-80gb-node4|0.5|0.4|1"), "simulated_runs: %s", t);
    q_text(s, "SELECT json_extract(report, '$.step.seconds') FROM simulation", t, sizeof t);
    EXPECT(!strcmp(t, "0.5"), "the JSON report is queryable: %s", t);
    q_text(s, "SELECT kind || '|' || hardware || '|' || runs FROM launch_summary", t, sizeof t);
    EXPECT(!strcmp(t, "simulated|a100-80gb-node4|1"), "launch_summary: %s", t);
    sqlite3_close(s);
}

// ---- launches, overrides, views ------------------------------------------------------------
TEST(db_launch_overrides_views) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "launch.db");
    RunDB *db = rundb_open(path);
    const char *sets[] = { "train.steps=60", "data.dataset=text:a b \"c\".txt" };
    LaunchInfo li;
    memset(&li, 0, sizeof li);
    snprintf(li.experiment, sizeof li.experiment, "ex");
    snprintf(li.manifest_sha256, sizeof li.manifest_sha256, "%064d", 1);
    li.manifest_text = "name: ex\n"; li.overrides = sets; li.n_overrides = 2; li.repeat = 2;
    li.load_avg = 1.5; li.peak_gflops = 80; host_facts(&li.host);
    int64_t L = rundb_begin_launch(db, &li);
    LaunchRow lr;
    EXPECT(rundb_latest_launch(db, "ex", &lr) && lr.id == L && lr.repeat == 2 && lr.n_overrides == 2 &&
           !strcmp(lr.overrides[1], sets[1]) && lr.peak_gflops == 80, "launch row read back");
    rundb_launch_row_free(&lr);
    EXPECT(!rundb_latest_launch(db, "other", &lr), "no launch of another experiment");
    for (int r = 0; r < 2; r++) {
        const char *v[] = { "a", "b" };
        for (int i = 0; i < 2; i++) {
            char uid[64]; snprintf(uid, sizeof uid, "ex.%s.%d", v[i], r);
            RunInfo ri = make_info("ex", v[i], uid);
            ri.launch_id = L; ri.repeat_index = r; ri.overrides = sets; ri.n_overrides = 2;
            int64_t id = rundb_begin_run(db, &ri);
            log_steps(db, id, 10, 0.1);
            rundb_end_run(db, id, r == 1 && i == 1 ? "interrupted" : "completed", NULL);
        }
    }
    rundb_end_launch(db, L, "interrupted");
    RunRow rr;
    EXPECT(rundb_launch_run(db, L, "b", 1, &rr) && !strcmp(rr.status, "interrupted") && rr.repeat_index == 1, "launch_run");
    char **ov = NULL;
    int n = rundb_run_overrides(db, rr.id, &ov);
    EXPECT(n == 2 && !strcmp(ov[0], sets[0]) && !strcmp(ov[1], sets[1]), "stored overrides (%d)", n);
    rundb_free_strings(ov, n);
    char **pov = NULL; int pn = 0;
    RunRow pr;
    EXPECT(rundb_peek_run(path, "ex", "a", NULL, &pr, &pov, &pn) && !strcmp(pr.uid, "ex.a.1") && pn == 2, "peek latest");
    rundb_free_strings(pov, pn);
    EXPECT(rundb_peek_run(path, NULL, NULL, "ex.b.0", &pr, &pov, &pn) && !strcmp(pr.variant, "b"), "peek by uid");
    rundb_free_strings(pov, pn);
    char missing[300]; tmp_path(missing, sizeof missing, "no-such.db");
    EXPECT(!rundb_peek_run(missing, "ex", "a", NULL, &pr, &pov, &pn) && access(missing, F_OK) != 0, "peek creates nothing");
    rundb_close(db);

    sqlite3 *s = raw_open(path);
    q_text(s, "SELECT runs || '|' || completed || '|' || not_completed || '|' || status || '|' || variants FROM launch_summary", t, sizeof t);
    EXPECT(!strcmp(t, "4|3|1|interrupted|a,b"), "launch_summary: %s", t);
    q_text(s, "SELECT group_concat(j.value, ';') FROM runs r, json_each(r.overrides) j WHERE r.uid='ex.a.0'", t, sizeof t);
    EXPECT(!strcmp(t, "train.steps=60;data.dataset=text:a b \"c\".txt"), "overrides queryable: %s", t);
    q_text(s, "SELECT COUNT(*) || '|' || group_concat(run_id) FROM latest_runs", t, sizeof t);
    EXPECT(!strcmp(t, "2|3,4"), "latest_runs: %s", t);
    // 9 timed steps of 0.1 s and 1000 tokens each (step 1 is warm-up)
    q_text(s, "SELECT timed_steps || '|' || printf('%.1f|%.0f|%.2f', mean_ms_per_step, tokens_per_s, mfu) FROM run_summary WHERE uid='ex.a.0'", t, sizeof t);
    EXPECT(!strcmp(t, "9|100.0|10000|0.10"), "run_summary: %s", t);
    sqlite3_close(s);
}

// ---- the comparison table: medians over repeats, spreads, rates ------------------------------
TEST(db_summary_medians_spread_rates) {
    char path[300];
    tmp_path(path, sizeof path, "summary.db");
    RunDB *db = rundb_open(path);
    int64_t ids[5];
    double sec[3] = { 0.30, 0.10, 0.20 };   // three repeats of "a": run medians 300, 100, 200 ms
    for (int r = 0; r < 3; r++) {
        char uid[32]; snprintf(uid, sizeof uid, "s.a.%d", r);
        RunInfo ri = make_info("s", "a", uid);
        ids[r] = rundb_begin_run(db, &ri);
        log_steps(db, ids[r], 20, sec[r]);
        rundb_end_run(db, ids[r], "completed", NULL);
    }
    RunInfo rb = make_info("s", "b", "s.b.0");
    ids[3] = rundb_begin_run(db, &rb);
    log_steps(db, ids[3], 20, 0.05);
    rundb_end_run(db, ids[3], "interrupted", "signal");
    RunInfo rc = make_info("s", "c", "s.c.0");   // one run: spread = p10..p90 of its steps
    ids[4] = rundb_begin_run(db, &rc);
    for (int s = 1; s <= 11; s++) {    // steps 2..11 take 10, 20, ..., 100 ms (step 1 = warm-up)
        StepMetrics sm = {0};
        sm.step = s; sm.loss = 3; sm.seconds = s == 1 ? 5.0 : 0.01 * (s - 1); sm.tokens_per_s = 500 / sm.seconds;
        sm.tokens_seen = 500LL * s;
        rundb_log_step(db, ids[4], &sm);
    }
    rundb_end_run(db, ids[4], "completed", NULL);
    VariantSummary *vs = NULL;
    int n = rundb_summarize(db, ids, 5, &vs);
    EXPECT(n == 3, "variants %d", n);
    if (n == 3) {
        EXPECT(!strcmp(vs[0].variant, "a") && vs[0].n_runs == 3 && vs[0].n_completed == 3, "a counts");
        EXPECT(fabs(vs[0].ms_per_step - 200) < 1e-9 && fabs(vs[0].ms_lo - 100) < 1e-9 && fabs(vs[0].ms_hi - 300) < 1e-9,
               "a: median %g, spread %g..%g (expected 200, 100..300)", vs[0].ms_per_step, vs[0].ms_lo, vs[0].ms_hi);
        EXPECT(fabs(vs[0].tokens_per_s - 5000) < 1e-6, "a: tokens/s %g = 1000 tokens / 0.2 s", vs[0].tokens_per_s);
        EXPECT(fabs(vs[0].mfu - 5000 * 1e6 / 100e9) < 1e-12, "a: MFU %g", vs[0].mfu);
        EXPECT(vs[1].n_runs == 1 && vs[1].n_completed == 0 && isnan(vs[1].ms_per_step) && isnan(vs[1].final_loss) &&
               !strcmp(vs[1].status, "interrupted"), "b (interrupted) left out of the numbers");
        // c: 10 timed steps 10..100 ms: median 55, p10 19, p90 91 (linear interpolation)
        EXPECT(fabs(vs[2].ms_per_step - 55) < 1e-9 && fabs(vs[2].ms_lo - 19) < 1e-9 && fabs(vs[2].ms_hi - 91) < 1e-9 &&
               vs[2].timed_steps == 10, "c: median %g p10 %g p90 %g (%d steps)", vs[2].ms_per_step, vs[2].ms_lo, vs[2].ms_hi, vs[2].timed_steps);
        EXPECT(fabs(vs[2].tokens_per_s - 500 / 0.055) < 1e-6, "c: tokens/s %g consistent with ms/step", vs[2].tokens_per_s);
    }
    free(vs);
    rundb_close(db);
}

// ---- end statuses recorded by several processes ----------------------------------------------
// ---- the timing verdicts of launches (compare_verdicts) ------------------------------------------
// A launch of `repeat` rounds of variants base and fast whose runs' median steps are given
// (the other steps around them), in one database; config_json per variant. Returns the ids.
static int64_t verdict_launch(RunDB *db, int repeat, const double *base_s, const double *fast_s, const char *fast_cfg,
                              int64_t *ids) {
    LaunchInfo li;
    memset(&li, 0, sizeof li);
    snprintf(li.experiment, sizeof li.experiment, "vx");
    snprintf(li.manifest_sha256, sizeof li.manifest_sha256, "%064d", 7);
    li.repeat = repeat; li.load_avg = -1; li.peak_gflops = 100; host_facts(&li.host);
    int64_t L = rundb_begin_launch(db, &li);
    static int uid = 0;
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < 2; v++) {
            char u[64]; snprintf(u, sizeof u, "vx.%d", uid++);
            RunInfo ri = make_info("vx", v ? "fast" : "base", u);
            ri.launch_id = L; ri.repeat_index = r;
            ri.config_json = v ? fast_cfg : "{\"boost\": {\"online_rmsnorm\": false}, \"train\": {\"threads\": 1}}";
            int64_t id = rundb_begin_run(db, &ri);
            double med = v ? fast_s[r] : base_s[r];
            for (int s = 1; s <= 21; s++) {   // step 1 and 2 warm-up; 19 timed around the median
                StepMetrics sm = { .step = s, .loss = 3, .seconds = s <= 2 ? 1.0 : med * (1 + 0.01 * (s - 12)) };
                sm.tokens_per_s = 100 / sm.seconds; sm.tokens_seen = 100LL * s;
                rundb_log_step(db, id, &sm);
            }
            rundb_end_run(db, id, "completed", NULL);
            if (ids) ids[r * 2 + v] = id;
        }
    return L;
}

TEST(db_timing_verdicts_of_launches) {
    char path[300];
    tmp_path(path, sizeof path, "verdicts.db");
    RunDB *db = rundb_open(path);
    const char *fast_cfg = "{\"boost\": {\"online_rmsnorm\": true}, \"train\": {\"threads\": 2}}";
    Rng r = { 0x7e4d1c75ull };
    // REPEAT=4, a 20 % faster variant with 1 % noise between runs: faster, the ratio inside
    double b4[4], f4[4];
    for (int i = 0; i < 4; i++) { b4[i] = 0.1 * (1 + 0.01 * (rng_uniform(&r) - 0.5)); f4[i] = 0.08 * (1 + 0.01 * (rng_uniform(&r) - 0.5)); }
    int64_t ids[8];
    int64_t L1 = verdict_launch(db, 4, b4, f4, fast_cfg, ids);
    CompareVerdict *v = NULL;
    int n = compare_verdicts(db, ids, 8, &v);
    EXPECT(n == 1 && !strcmp(v[0].a, "base") && !strcmp(v[0].b, "fast") && v[0].v.verdict == STATS_FASTER &&
           v[0].v.n_a == 4 && v[0].v.lo <= 0.8 * 1.02 && v[0].v.hi >= 0.8 * 0.98 && strstr(v[0].text, "% faster") &&
           strstr(v[0].text, "over 4 repeats"), "REPEAT=4, 20 %% faster: %d verdicts, %s", n, n ? v[0].text : "");
    for (int i = 0; i < 4; i++)
        EXPECT(fabs(rundb_run_median_step(db, ids[2 * i]) - b4[i]) < 1e-12, "run %d's median is its middle timed step", i);
    free(v);
    // two REPEAT=1 launches whose one run each says 2.9x slower and 1.2x faster: no verdict in
    // either, none across launches; pooled (2 and 2 runs) still none
    double b1[1] = { 0.1 }, s1[1] = { 0.29 }, b2[1] = { 0.12 }, s2[1] = { 0.1 };
    int64_t a_ids[2], c_ids[2];
    int64_t L2 = verdict_launch(db, 1, b1, s1, fast_cfg, a_ids);
    int64_t L3 = verdict_launch(db, 1, b2, s2, fast_cfg, c_ids);
    int64_t both[4] = { a_ids[0], a_ids[1], c_ids[0], c_ids[1] };
    n = compare_verdicts(db, both, 4, &v);
    int too_few = 0, pooled = 0, across = 0;
    for (int i = 0; i < n; i++) {
        too_few += v[i].v.verdict == STATS_TOO_FEW;
        pooled += strstr(v[i].scope, "pooled") != NULL;
        across += strstr(v[i].scope, "against") != NULL;
    }
    EXPECT(n == 5 && too_few == 5 && pooled == 1 && across == 2 && strstr(v[0].text, "REPEAT=1: no verdict possible; use REPEAT>=4"),
           "two REPEAT=1 launches: %d verdicts (%d too few, %d pooled, %d across): %s", n, too_few, pooled, across, n ? v[0].text : "");
    free(v);
    // a launch pooled with L1 whose fast runs ran another configuration: not pooled, the key named
    double b4b[4], f4b[4];
    for (int i = 0; i < 4; i++) { b4b[i] = b4[i]; f4b[i] = f4[i]; }
    int64_t ids2[8];
    verdict_launch(db, 4, b4b, f4b, "{\"boost\": {\"online_rmsnorm\": true}, \"train\": {\"threads\": 2, \"lr\": 0.5}}", ids2);
    int64_t all[16];
    for (int i = 0; i < 8; i++) { all[i] = ids[i]; all[8 + i] = ids2[i]; }
    n = compare_verdicts(db, all, 16, &v);
    int not_pooled = 0;
    for (int i = 0; i < n; i++) not_pooled += v[i].not_pooled && strstr(v[i].text, "train.lr");
    EXPECT(not_pooled == 1, "launches whose runs differ on train.lr are not pooled (%d verdicts)", n);
    // the same launches without the odd key pool to 8 + 8 runs (train.threads is not compared)
    int64_t ids3[8];
    verdict_launch(db, 4, b4b, f4b, fast_cfg, ids3);
    for (int i = 0; i < 8; i++) all[8 + i] = ids3[i];
    free(v);
    n = compare_verdicts(db, all, 16, &v);
    int pooled8 = 0;
    for (int i = 0; i < n; i++) pooled8 += strstr(v[i].scope, "pooled") && v[i].v.n_a == 8 && v[i].v.verdict == STATS_FASTER;
    EXPECT(pooled8 == 1, "two REPEAT=4 launches pooled: 8 and 8 runs, faster (%d verdicts)", n);
    free(v);
    (void)L1; (void)L2; (void)L3;
    rundb_close(db);
}

// ---- the peak MFU is relative to: generated sequences of checks at generated loads -------------
TEST(db_peak_decision) {
    char path[300];
    tmp_path(path, sizeof path, "peak.db");
    RunDB *db = rundb_open(path);
    HostFacts h;
    host_facts(&h);
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    Rng r = { 0x9e4c0001ull };
    double peak = 0, prev = 0;
    for (int i = 0; i < 120; i++) {
        double check = 50 + 300 * rng_uniform(&r), load = i % 7 == 6 ? -1 : 4 * cores * rng_uniform(&r);
        int remeasure = i % 23 == 22;
        PeakDecision d;
        rundb_decide_peak(db, &h, check, load, remeasure, &d);
        double drift = prev > 0 ? check / prev - 1 : 0;
        if (i == 0 || remeasure) EXPECT(d.gflops == check, "case %d: a first or requested measurement is the peak", i);
        else if (drift > RUNDB_PEAK_MARGIN) EXPECT(d.gflops == check && strstr(d.message, "warning: this sgemm check is +"),
                                                  "case %d: a check %.0f%% above replaces the peak and warns", i, 100 * drift);
        else EXPECT(d.gflops == prev, "case %d: a check within the margin or below keeps the peak", i);
        if (!(i == 0 || remeasure)) {
            EXPECT(d.gflops >= prev, "case %d: the peak fell without MEASURE_PEAK=1 (%g -> %g)", i, prev, d.gflops);
            EXPECT((drift < -RUNDB_PEAK_MARGIN) == (strstr(d.message, "below the stored peak") != NULL),
                   "case %d: a check %.0f%% off: the below-margin warning", i, 100 * drift);
        }
        EXPECT(d.check == check && d.gflops * (1 + RUNDB_PEAK_MARGIN) >= check * (1 - 1e-12), "case %d: a check far above the peak kept", i);
        HostPeak hp;
        EXPECT(rundb_host_peak(db, &h, &hp) && hp.gflops == d.gflops && hp.id == d.id, "case %d: the stored peak is the decision", i);
        int loaded = d.load_avg < 0 || d.load_avg > RUNDB_PEAK_QUIET_LOAD * cores;
        EXPECT(loaded == (d.note[0] != 0) && (!loaded || strstr(d.message, "MEASURE_PEAK=1")),
               "case %d: peak load %.2f on %d cores: note '%s'", i, d.load_avg, cores, d.note);
        prev = peak = d.gflops;
    }
    (void)peak;
    rundb_close(db);
}

TEST(db_end_status_rules) {
    char path[300], t[512];
    tmp_path(path, sizeof path, "status.db");
    RunDB *db = rundb_open(path);
    RunInfo a = make_info("e", "a", "e.a");
    int64_t ra = rundb_begin_run(db, &a);
    EXPECT(rundb_mark_run(path, ra, "failed", "rank 1: out of memory") == 0, "mark failed");
    rundb_mark_run(path, ra, "failed", "rank 0: MPI_Allreduce failed");
    rundb_mark_run(path, ra, "interrupted", "Terminated received by rank 0");
    rundb_end_run(db, ra, "completed", NULL);
    RunInfo b = make_info("e", "b", "e.b");
    int64_t rb = rundb_begin_run(db, &b);
    rundb_mark_run(path, rb, "interrupted", "Interrupt received by rank 2");
    rundb_end_run(db, rb, "interrupted", "Interrupt after step 3");   // the loop ends too: no second event
    RunInfo c = make_info("e", "c", "e.c");
    int64_t rc = rundb_begin_run(db, &c);
    rundb_mark_run(path, rc, "interrupted", "Terminated during the last step");
    rundb_end_run(db, rc, "completed", NULL);                           // it did finish every step
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT status || '|' || error || '|' || (SELECT COUNT(*) FROM events WHERE run_id=%lld AND kind='error') FROM runs WHERE id=%lld", (long long)ra, (long long)ra);
    q_text(s, sql, t, sizeof t);
    EXPECT(!strcmp(t, "failed|rank 1: out of memory|1"), "first failure wins: %s", t);
    snprintf(sql, sizeof sql, "SELECT status || '|' || error || '|' || (SELECT COUNT(*) FROM events WHERE run_id=%lld AND kind='interrupted') FROM runs WHERE id=%lld", (long long)rb, (long long)rb);
    q_text(s, sql, t, sizeof t);
    EXPECT(!strcmp(t, "interrupted|Interrupt received by rank 2|1"), "interrupted once: %s", t);
    snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id=%lld", (long long)rc);
    q_text(s, sql, t, sizeof t);
    EXPECT(!strcmp(t, "completed"), "a run that finished is completed: %s", t);
    sqlite3_close(s);
}

// ---- busy: training goes on, the rows wait in memory ------------------------------------------
TEST(db_busy_keeps_rows_and_retries) {
    char path[300];
    tmp_path(path, sizeof path, "busy.db");
    RunDB *db = rundb_open(path);
    rundb_set_patience(db, 50, 0.3);
    RunInfo ri = make_info("b", "v", "b.v");
    int64_t run = rundb_begin_run(db, &ri);
    sqlite3 *other = raw_open(path);
    EXPECT(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK, "the other writer takes the lock");
    log_steps(db, run, 5, 0.1);
    EXPECT(rundb_flush(db) == 1, "a flush on a locked database keeps the rows");
    EXPECT(rundb_flush(db) == 1, "and backs off");
    EXPECT(rundb_end_run(db, run, "completed", NULL) == 1, "ending the run waits its patience, then reports (no exit)");
    sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
    EXPECT(rundb_flush_wait(db, 5) == 0, "once the lock is released the rows are written");
    EXPECT(rundb_end_run(db, run, "completed", NULL) == 0, "and the run ends");
    EXPECT(q_num(other, "SELECT COUNT(*) FROM steps") == 5, "all 5 steps recorded");
    char t[64]; q_text(other, "SELECT status FROM runs", t, sizeof t);
    EXPECT(!strcmp(t, "completed"), "status %s", t);
    sqlite3_close(other);
    EXPECT(rundb_close(db) == 0, "close");
}

// ---- full: one clean error, the rows never silently dropped ----------------------------------
static void full_child(void *arg) {
    RunDB *db = rundb_open((const char *)arg);
    rundb_set_patience(db, 50, 0.2);
    RunInfo ri = make_info("f", "v", "f.v");
    int64_t run = rundb_begin_run(db, &ri);
    // the file may not grow any more (what a full disk looks like to SQLite)
    char pragma[64];
    sqlite3_stmt *st;
    sqlite3_prepare_v2(rundb_handle(db), "PRAGMA page_count", -1, &st, NULL);
    sqlite3_step(st);
    snprintf(pragma, sizeof pragma, "PRAGMA max_page_count=%d", sqlite3_column_int(st, 0));
    sqlite3_finalize(st);
    sqlite3_exec(rundb_handle(db), pragma, NULL, NULL, NULL);
    for (int k = 0; k < 40; k++) log_steps(db, run, 400, 0.1);   // rows that need new pages
    int f = rundb_flush(db);
    int e = rundb_end_run(db, run, "completed", NULL);
    int c = rundb_close(db);
    fflush(stderr);
    _exit(f == 1 && e == 1 && c == 1 ? 7 : 8);
}
TEST(db_full_disk_clean_error) {
    char path[300], err[8192];
    tmp_path(path, sizeof path, "full.db");
    int rc = in_child(full_child, path, err, sizeof err);
    EXPECT(rc == 7, "exit %d (7: flush, end and close reported the failure without dying); stderr: %.400s", rc, err);
    EXPECT(strstr(err, "database or disk is full") != NULL, "stderr names the cause: %.300s", err);
    EXPECT(count_lines(err, "fatal:") == 0 && count_lines(err, "error: run database") == 2,
           "one error for the end, one for the close, no fatal: %.600s", err);
    // one warning when the flush fails, then one per retry of the end and of the close (3 tries each)
    EXPECT(count_lines(err, "warning: run database") == 1 + 2 + 2, "warnings: %.900s", err);
}

// ---- damaged: refused at open, untouched ------------------------------------------------------
TEST(db_damaged_refused) {
    char path[300], err[4096];
    tmp_path(path, sizeof path, "damaged.db");
    RunDB *db = rundb_open(path);
    RunInfo ri = make_info("d", "v", "d.v");
    int64_t run = rundb_begin_run(db, &ri);
    log_steps(db, run, 3000, 0.1);
    rundb_end_run(db, run, "completed", NULL);
    rundb_close(db);
    sqlite3 *s = raw_open(path);
    sqlite3_exec(s, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    sqlite3_close(s);
    struct stat sb;
    stat(path, &sb);
    FILE *f = fopen(path, "r+b");
    EXPECT(f != NULL, "open for damage");
    if (!f) return;
    // overwrite pages 3.. with a pattern (the header page stays: the file still looks like SQLite)
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 37 + 11);
    for (long off = 2 * 4096; off + 4096 <= sb.st_size; off += 3 * 4096) { fseek(f, off, SEEK_SET); fwrite(junk, 1, sizeof junk, f); }
    fclose(f);
    struct stat damaged;   // the file as damaged: opening it must change nothing
    stat(path, &damaged);
    int rc = in_child(rundb_open_child, path, err, sizeof err);
    EXPECT(rc == 2, "exit %d, stderr %s", rc, err);
    EXPECT(strstr(err, "damaged.db: the run database is damaged") && strstr(err, ".recover"), "stderr: %s", err);
    struct stat after;
    stat(path, &after);
    EXPECT(after.st_size == damaged.st_size && after.st_mtim.tv_sec == damaged.st_mtim.tv_sec &&
           after.st_mtim.tv_nsec == damaged.st_mtim.tv_nsec, "the damaged file was written by the refused open");
}

// ---- another schema: refused by name, whatever is missing -----------------------------------
// A column of every table of the schema this build writes (read from a new database, not
// listed here; table k loses its column k mod its width, so the cases move through the
// columns) is taken away: each file is refused naming the table and the column.
static void drop_column(const char *path, const char *table, const char *column, const char *keep) {
    sqlite3 *s = raw_open(path);
    char sql[8192] = "PRAGMA foreign_keys=OFF; ", view[128];
    sqlite3_stmt *st = NULL;   // every view first (they name the tables)
    sqlite3_prepare_v2(s, "SELECT name FROM sqlite_master WHERE type='view'", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(view, sizeof view, "%s", sqlite3_column_text(st, 0));
        size_t l = strlen(sql); snprintf(sql + l, sizeof sql - l, "DROP VIEW %s; ", view);
    }
    sqlite3_finalize(st);
    size_t l = strlen(sql);
    snprintf(sql + l, sizeof sql - l, "CREATE TABLE x_new AS SELECT %s FROM %s; DROP TABLE %s; ALTER TABLE x_new RENAME TO %s;",
             keep, table, table, table);
    char *e = NULL;
    if (sqlite3_exec(s, sql, NULL, NULL, &e) != SQLITE_OK) fprintf(stderr, "drop %s.%s: %s\n", table, column, e);
    sqlite3_free(e);
    sqlite3_close(s);
}

TEST(db_other_schema_refused_by_name) {
    char fresh[300], path[300], err[4096];
    tmp_path(fresh, sizeof fresh, "fresh.db");
    rundb_close(rundb_open(fresh));
    sqlite3 *s = raw_open(fresh);
    sqlite3_exec(s, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    sqlite3_stmt *tables = NULL, *cols = NULL;
    sqlite3_prepare_v2(s, "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name", -1, &tables, NULL);
    int cases = 0, clean = 0, k = 0;
    while (sqlite3_step(tables) == SQLITE_ROW) {
        char table[128];
        snprintf(table, sizeof table, "%s", sqlite3_column_text(tables, 0));
        char names[64][64]; int n = 0;
        sqlite3_prepare_v2(s, "SELECT name FROM pragma_table_info(?1)", -1, &cols, NULL);
        sqlite3_bind_text(cols, 1, table, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(cols) == SQLITE_ROW && n < 64) snprintf(names[n++], 64, "%s", sqlite3_column_text(cols, 0));
        sqlite3_finalize(cols);
        for (int drop = k++ % (n ? n : 1); drop < n; drop = n) {
            char keep[4096] = "";
            for (int i = 0; i < n; i++) if (i != drop) { size_t l = strlen(keep); snprintf(keep + l, sizeof keep - l, "%s%.63s", l ? ", " : "", names[i]); }
            if (!keep[0]) continue;
            tmp_path(path, sizeof path, "dropped.db");
            char cmd[700]; snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fresh, path);
            if (system(cmd) != 0) continue;
            drop_column(path, table, names[drop], keep);
            cases++;
            int rc = in_child(rundb_open_child, path, err, sizeof err);
            char want[300]; snprintf(want, sizeof want, "table %s without its column %s", table, names[drop]);
            if (rc == 2 && strstr(err, want) && !strstr(err, "fatal:")) clean++;
            else EXPECT(0, "without %s.%s: exit %d: %.300s", table, names[drop], rc, err);
        }
    }
    sqlite3_finalize(tables);
    sqlite3_close(s);
    printf("INFO another schema: a column taken away from each of %d tables, %d refused by name\n", cases, clean);
    EXPECT(cases >= 8 && clean == cases, "%d of %d", clean, cases);
    // schema versions that are none of this build's: refused naming the version
    const int versions[] = { -1, -2147483647 - 1, RUNDB_SCHEMA_VERSION + 1, 99 };
    for (int i = 0; i < 4; i++) {
        tmp_path(path, sizeof path, "version.db");
        char cmd[700]; snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fresh, path);
        EXPECT(system(cmd) == 0, "cp");
        sqlite3 *v = raw_open(path);
        char sql[64]; snprintf(sql, sizeof sql, "PRAGMA user_version=%d", versions[i]);
        sqlite3_exec(v, sql, NULL, NULL, NULL);
        sqlite3_close(v);
        int rc = in_child(rundb_open_child, path, err, sizeof err);
        char want[64]; snprintf(want, sizeof want, versions[i] < 0 ? "(PRAGMA user_version) is %d" : "schema version %d", versions[i]);
        EXPECT(rc == 2 && strstr(err, want) && !strstr(err, "not an error"), "user_version %d: exit %d: %s", versions[i], rc, err);
    }
}

// ---- run.db paths refused before anything is made ---------------------------------------------
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)); ) n += e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, ".."));
    closedir(d);
    return n;
}

TEST(db_path_refusals_make_nothing) {
    char dir[300], link[400], err[4096];
    tmp_path(dir, sizeof dir, "paths");
    mkdir(dir, 0755);
    snprintf(link, sizeof link, "%s/dangling.db", dir);
    EXPECT(symlink("/nonexistent/boost-c-test/x.db", link) == 0, "symlink");
    const char *names[] = { "x.db/", "new/sub/x.db/", "new/.", "new/..", "dangling.db" };
    for (int i = 0; i < 5; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int before = count_entries(dir);
        int rc = in_child(rundb_open_child, path, err, sizeof err);
        EXPECT(rc == 2 && strstr(err, "run.db=") && count_entries(dir) == before,
               "%s: exit %d, %d entries before, %d after: %s", names[i], rc, before, count_entries(dir), err);
    }
    struct stat st;
    EXPECT(stat("/nonexistent/boost-c-test", &st) != 0, "a file was created through the dangling link");
}

// ---- written over in place under a run: never 'completed' --------------------------------------
// An older copy written over the file (cp older.db run.db) after the WAL was checkpointed into
// it: this connection's cache still shows its own pages, a fresh reader sees the damage or
// another run table. rundb_run_complete says so; a database left alone is complete.
TEST(db_replaced_in_place_not_complete) {
    char path[300], older[300], why[2000];
    tmp_path(path, sizeof path, "inplace.db");
    tmp_path(older, sizeof older, "older.db");
    RunDB *db = rundb_open(path);
    RunInfo r0 = make_info("p", "v", "p.v.0");
    int64_t first = rundb_begin_run(db, &r0);
    log_steps(db, first, 10, 0.1);
    rundb_end_run(db, first, "completed", NULL);
    EXPECT(rundb_run_complete(db, first, "p.v.0", 10, why, sizeof why), "a database left alone: %s", why);
    sqlite3 *s = raw_open(path);
    sqlite3_exec(s, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_close(s);
    char cmd[700]; snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, older);
    EXPECT(system(cmd) == 0, "cp");
    RunInfo r1 = make_info("p", "v", "p.v.1");
    int64_t run = rundb_begin_run(db, &r1);
    log_steps(db, run, 3000, 0.1);
    rundb_flush(db);
    s = raw_open(path);
    sqlite3_exec(s, "PRAGMA wal_checkpoint(PASSIVE)", NULL, NULL, NULL);   // (the run's pages in the file)
    sqlite3_close(s);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", older, path);                   // written over, in place
    EXPECT(system(cmd) == 0, "cp");
    log_steps(db, run, 3000, 0.1);
    EXPECT(!rundb_run_complete(db, run, "p.v.1", 3000, why, sizeof why) &&
           (strstr(why, "integrity check") || strstr(why, "not this run")), "written over in place: complete? %s", why);
    printf("INFO written over in place: %s\n", why);
    rundb_close(db);
}

int main(void) {
    if (tl_tmpdir(TMPDIR_, sizeof TMPDIR_, "test_db")) return 1;
    RUN(db_migrates_schema_1);
    RUN(db_migrates_schema_2);
    RUN(db_migrates_schema_3);
    RUN(db_migrates_schema_4);
    RUN(db_migrates_schema_5);
    RUN(db_migrates_schema_6);
    RUN(db_simulated_run);
    RUN(db_launch_overrides_views);
    RUN(db_summary_medians_spread_rates);
    RUN(db_timing_verdicts_of_launches);
    RUN(db_peak_decision);
    RUN(db_end_status_rules);
    RUN(db_busy_keeps_rows_and_retries);
    RUN(db_full_disk_clean_error);
    RUN(db_damaged_refused);
    RUN(db_other_schema_refused_by_name);
    RUN(db_path_refusals_make_nothing);
    RUN(db_replaced_in_place_not_complete);
    return tl_finish(TMPDIR_);
}
