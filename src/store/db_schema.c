// db_schema.c — the run database's tables, views and the migrations from schemas 1 to 6
// (docs/database.md shows the same statements and explains every column).
#include "db_internal.h"

// The tables of schema 3. `runs` and `events` are written in the same form by the
// migration from schema 1 below (their CHECK lists grew), so keep the two in step; the
// columns schema 3 added come last, where ALTER TABLE puts them in a migrated schema 2.
// Schema 3: a run (and a launch) is `measured` (trained) or `simulated` (priced by
// build/simulate on a hardware profile, docs/performance-model.md); `hardware` names the
// profile of a simulated one.
#define KIND_COLUMN "kind TEXT NOT NULL DEFAULT 'measured' CHECK (kind IN ('measured','simulated'))"
#define RUN_KIND_COLUMNS \
"  " KIND_COLUMN ",\n" \
"  hardware           TEXT,\n"

// Schema 5: the load at which the sgemm peak MFU is relative to was measured, and a note when
// that load was above the quiet bound (runs and launches); each collective's time spent
// waiting for the last peer of its group (comm.wait_seconds). Older files gain the columns by
// SCHEMA5_ALTERS (ALTER TABLE puts them last, where the tables below have them too).
#define PEAK_COLUMNS_LIST \
"  peak_load_1m       REAL,\n" \
"  peak_note          TEXT"
#define PEAK_COLUMNS PEAK_COLUMNS_LIST "\n"
#define SCHEMA5_ALTERS \
"ALTER TABLE runs ADD COLUMN peak_load_1m REAL;\n" \
"ALTER TABLE runs ADD COLUMN peak_note TEXT;\n" \
"ALTER TABLE launches ADD COLUMN peak_load_1m REAL;\n" \
"ALTER TABLE launches ADD COLUMN peak_note TEXT;\n" \
"ALTER TABLE comm ADD COLUMN wait_seconds REAL;\n"

// Schema 6: how a launch started its ranks (launches.launcher: "mpirun", "srun --mpi=pmix", ...)
// and why a launch was refused before any rank started (launches.error: the pre-flight's
// message). Older files gain them by SCHEMA6_ALTERS, after SCHEMA5_ALTERS (the same order as the
// table below), before their views are recreated (launch_summary reads them).
#define SCHEMA6_ALTERS \
"ALTER TABLE launches ADD COLUMN launcher TEXT;\n" \
"ALTER TABLE launches ADD COLUMN error TEXT;\n"

#define RUNS_TABLE(name) \
"CREATE TABLE " name " (\n" \
"  id                 INTEGER PRIMARY KEY,\n" \
"  uid                TEXT NOT NULL UNIQUE,\n" \
"  launch_id          INTEGER REFERENCES launches(id),\n" \
"  repeat_index       INTEGER NOT NULL DEFAULT 0,\n" \
"  experiment         TEXT NOT NULL,\n" \
"  variant            TEXT NOT NULL,\n" \
"  manifest_path      TEXT,\n" \
"  experiment_version TEXT,\n" \
"  manifest_format    INTEGER,\n" \
"  manifest_sha256    TEXT,\n" \
"  config_json        TEXT,\n" \
"  overrides          TEXT NOT NULL DEFAULT '[]',\n" \
"  git_commit         TEXT,\n" \
"  git_dirty          INTEGER,\n" \
"  host               TEXT,\n" \
"  pid                INTEGER,\n" \
"  cpu_model          TEXT,\n" \
"  gpu_model          TEXT,\n" \
"  compiler           TEXT,\n" \
"  cflags             TEXT,\n" \
"  library_versions   TEXT,\n" \
"  tp                 INTEGER NOT NULL DEFAULT 1,\n" \
"  pp                 INTEGER NOT NULL DEFAULT 1,\n" \
"  dp                 INTEGER NOT NULL DEFAULT 1,\n" \
"  world_size         INTEGER NOT NULL DEFAULT 1,\n" \
"  status             TEXT NOT NULL CHECK (status IN ('running','completed','failed','interrupted','diverged')),\n" \
"  started_at         TEXT NOT NULL,\n" \
"  ended_at           TEXT,\n" \
"  error              TEXT,\n" \
"  resumed_count      INTEGER NOT NULL DEFAULT 0,\n" \
"  params             INTEGER,\n" \
"  flops_per_token    REAL,\n" \
"  peak_gflops        REAL,\n" \
RUN_KIND_COLUMNS \
PEAK_COLUMNS \
");\n"

#define EVENTS_TABLE(name) \
"CREATE TABLE " name " (\n" \
"  id     INTEGER PRIMARY KEY,\n" \
"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  step   INTEGER,\n" \
"  at     TEXT NOT NULL,\n" \
"  kind   TEXT NOT NULL CHECK (kind IN ('checkpoint','resumed','error','interrupted','diverged','dump','config_change','warning','backend')),\n" \
"  detail TEXT\n" \
");\n"

// The events table rebuilt with this schema's kinds (SQLite cannot alter a CHECK): new table,
// copy with the same ids, drop, rename. Views read events, so a migration drops them first.
#define EVENTS_REBUILD \
    EVENTS_TABLE("events_v2") \
    "INSERT INTO events_v2 (id, run_id, step, at, kind, detail) SELECT id, run_id, step, at, kind, detail FROM events;\n" \
    "DROP TABLE events;\n" \
    "ALTER TABLE events_v2 RENAME TO events;\n" \
    "CREATE INDEX events_by_run ON events(run_id, id);\n"

#define LAUNCHES_TABLE \
"CREATE TABLE launches (\n" \
"  id                 INTEGER PRIMARY KEY,\n" \
"  experiment         TEXT NOT NULL,\n" \
"  manifest_path      TEXT,\n" \
"  experiment_version TEXT,\n" \
"  manifest_format    INTEGER,\n" \
"  manifest_sha256    TEXT NOT NULL,\n" \
"  manifest_text      TEXT,\n" \
"  overrides          TEXT NOT NULL DEFAULT '[]',\n" \
"  variant_filter     TEXT,\n" \
"  repeat             INTEGER NOT NULL DEFAULT 1,\n" \
"  status             TEXT NOT NULL CHECK (status IN ('running','completed','failed','interrupted')),\n" \
"  started_at         TEXT NOT NULL,\n" \
"  ended_at           TEXT,\n" \
"  host               TEXT,\n" \
"  pid                INTEGER,\n" \
"  cpu_model          TEXT,\n" \
"  git_commit         TEXT,\n" \
"  git_dirty          INTEGER,\n" \
"  load_avg_1m        REAL,\n" \
"  peak_gflops        REAL,\n" \
"  " KIND_COLUMN ",\n" \
"  hardware           TEXT,\n" \
"  peak_check_gflops  REAL,\n" \
PEAK_COLUMNS_LIST ",\n" \
"  launcher           TEXT,\n" \
"  error              TEXT\n" \
");\n" \
"CREATE INDEX launches_by_experiment ON launches(experiment, id);\n"

#define COMM_RANKS_TABLE \
"CREATE TABLE comm_ranks (\n" \
"  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  step     INTEGER NOT NULL,\n" \
"  rank     INTEGER NOT NULL,\n" \
"  tp_rank  INTEGER NOT NULL,\n" \
"  pp_rank  INTEGER NOT NULL,\n" \
"  dp_rank  INTEGER NOT NULL,\n" \
"  calls    INTEGER NOT NULL,\n" \
"  elements INTEGER NOT NULL,\n" \
"  bytes    INTEGER NOT NULL,\n" \
"  seconds  REAL,\n" \
"  PRIMARY KEY (run_id, step, rank)\n" \
") WITHOUT ROWID;\n"

// One row per simulated run: the modeled step and its split, the profile, and the whole
// report of build/simulate --json (json_extract reads any part of it).
#define SIMULATION_TABLE \
"CREATE TABLE simulation (\n" \
"  run_id          INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  hardware        TEXT NOT NULL,\n" \
"  hardware_path   TEXT,\n" \
"  hardware_sha256 TEXT,\n" \
"  precision       TEXT NOT NULL,\n" \
"  micro_batches   INTEGER NOT NULL,\n" \
"  step_seconds    REAL NOT NULL,\n" \
"  compute_seconds REAL NOT NULL,\n" \
"  comm_seconds    REAL NOT NULL,\n" \
"  p2p_seconds     REAL NOT NULL,\n" \
"  bubble_seconds  REAL NOT NULL,\n" \
"  tokens_per_s    REAL,\n" \
"  mfu             REAL,\n" \
"  hfu             REAL,\n" \
"  critical_stage  INTEGER,\n" \
"  memory_bytes    INTEGER,\n" \
"  memory_capacity INTEGER,\n" \
"  memory_fits     INTEGER,\n" \
"  report          TEXT\n" \
");\n"

#define RUN_INDEXES \
"CREATE INDEX runs_by_variant ON runs(experiment, variant, started_at);\n" \
"CREATE INDEX runs_by_status ON runs(status);\n" \
"CREATE INDEX runs_by_launch ON runs(launch_id, id);\n"

// Views. Warm-up: the first max(1, last_step / 10) steps of a run are not timed.
// tokens of a step = tokens_per_s x step_seconds (the trainer's own count).
// A run with a single step (a simulated run: its one modeled step) has no warm-up.
// One configuration value as the manifest writes it: true/false for booleans (json_extract
// would give 1/0), numbers and strings as text.
#define CFG_VALUE(json, path) \
"(CASE json_type(" json ", '" path "') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE CAST(json_extract(" json ", '" path "') AS TEXT) END)"

// Views. Warm-up: the first max(1, last_step / 10) steps of a run are not timed.
// tokens of a step = tokens_per_s x step_seconds (the trainer's own count).
// A run with a single step (a simulated run: its one modeled step) has no warm-up.
// Schema 4: run_summary carries the key configuration columns and the median step time
// (the statistic `make exp` prints: the middle timed step, or the mean of the two middle
// ones), tokens_per_s and mfu from that median, as the table; run_config holds every
// key of every run's configuration, config_diff the keys that differ within a launch.
#define LAUNCH_SUMMARY_VIEW \
"CREATE VIEW launch_summary AS\n" \
"SELECT l.id AS launch_id, l.experiment, l.experiment_version, l.kind, l.hardware, l.status, l.started_at, l.ended_at,\n" \
"       l.repeat, l.variant_filter, l.overrides, l.host, l.load_avg_1m, l.peak_gflops, l.launcher, l.error,\n" \
"       COUNT(r.id) AS runs,\n" \
"       COALESCE(SUM(r.status = 'completed'), 0) AS completed,\n" \
"       COALESCE(SUM(r.status <> 'completed'), 0) AS not_completed,\n" \
"       group_concat(DISTINCT r.variant) AS variants\n" \
"FROM launches l LEFT JOIN runs r ON r.launch_id = l.id\n" \
"GROUP BY l.id;\n"
#define VIEWS \
"CREATE VIEW run_config AS\n" \
"SELECT r.id AS run_id, r.launch_id, r.experiment, r.variant, r.repeat_index, s.key || '.' || k.key AS key,\n" \
"       CASE k.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'\n" \
"                   WHEN 'array' THEN k.value WHEN 'object' THEN k.value ELSE CAST(k.atom AS TEXT) END AS value\n" \
"FROM runs r, json_each(" RUN_CONFIG_SQL("r") ") s, json_each(s.value) k\n" \
"WHERE s.type = 'object';\n" \
"CREATE VIEW config_diff AS\n" \
"SELECT c.launch_id, c.run_id, c.variant, c.repeat_index, c.key, c.value\n" \
"FROM run_config c\n" \
"WHERE c.launch_id IS NOT NULL AND (c.launch_id, c.key) IN (\n" \
"    SELECT launch_id, key FROM run_config WHERE launch_id IS NOT NULL\n" \
"    GROUP BY launch_id, key HAVING COUNT(DISTINCT COALESCE(value, 'null')) > 1);\n" \
"CREATE VIEW run_summary AS\n" \
"SELECT r.id AS run_id, r.uid, r.launch_id, r.repeat_index, r.experiment, r.variant, r.kind, r.hardware, r.status,\n" \
"       " CFG_VALUE("c.json", "$.model.linear") " AS linear,\n" \
"       " CFG_VALUE("c.json", "$.boost.btp") " AS btp,\n" \
"       " CFG_VALUE("c.json", "$.boost.online_rmsnorm") " AS online_rmsnorm,\n" \
"       " CFG_VALUE("c.json", "$.boost.grouping") " AS grouping,\n" \
"       " CFG_VALUE("c.json", "$.boost.lowrank_ckpt") " AS lowrank_ckpt,\n" \
"       r.tp, r.pp, r.dp, r.world_size,\n" \
"       " CFG_VALUE("c.json", "$.train.precision") " AS precision,\n" \
"       " CFG_VALUE("c.json", "$.run.device") " AS device,\n" \
"       r.overrides, r.started_at, r.ended_at, r.error,\n" \
"       (SELECT MAX(step) FROM steps WHERE run_id = r.id) AS steps,\n" \
"       (SELECT loss FROM steps WHERE run_id = r.id ORDER BY step DESC LIMIT 1) AS final_loss,\n" \
"       (SELECT loss FROM validation WHERE run_id = r.id ORDER BY step DESC LIMIT 1) AS val_loss,\n" \
"       t.timed_steps,\n" \
"       1000.0 * m.seconds AS median_ms_per_step,\n" \
"       1000.0 * t.seconds / t.timed_steps AS mean_ms_per_step,\n" \
"       t.tokens / t.timed_steps / m.seconds AS tokens_per_s,\n" \
"       t.tokens / t.timed_steps / m.seconds * r.flops_per_token / (1e9 * r.peak_gflops) AS mfu,\n" \
"       r.peak_gflops,\n" \
"       COALESCE((SELECT bytes FROM memory WHERE run_id = r.id AND category = 'peak_rss'),\n" \
"                (SELECT SUM(bytes) FROM memory WHERE run_id = r.id)) AS peak_memory_bytes,\n" \
"       (SELECT SUM(bytes) * 1.0 / COUNT(DISTINCT step) FROM comm WHERE run_id = r.id) AS comm_bytes_per_step,\n" \
"       (SELECT SUM(calls) * 1.0 / COUNT(DISTINCT step) FROM comm WHERE run_id = r.id) AS comm_calls_per_step,\n" \
"       (SELECT SUM(seconds) * 1000.0 / COUNT(DISTINCT step) FROM comm WHERE run_id = r.id) AS comm_ms_per_step,\n" \
"       (SELECT CASE WHEN COUNT(wait_seconds) = COUNT(*) THEN SUM(wait_seconds) * 1000.0 / COUNT(DISTINCT step) END\n" \
"        FROM comm WHERE run_id = r.id) AS comm_wait_ms_per_step,\n" \
"       r.peak_load_1m, r.peak_note\n" \
"FROM runs r\n" \
"LEFT JOIN (SELECT id, " RUN_CONFIG_SQL("runs") " AS json FROM runs) c ON c.id = r.id\n" \
"LEFT JOIN (\n" \
"    SELECT s.run_id, COUNT(*) AS timed_steps, SUM(s.step_seconds) AS seconds,\n" \
"           SUM(s.tokens_per_s * s.step_seconds) AS tokens\n" \
"    FROM steps s\n" \
"    WHERE s.step_seconds > 0 AND (s.step > (SELECT MAX(1, MAX(step) / 10) FROM steps WHERE run_id = s.run_id)\n" \
"       OR (SELECT COUNT(*) FROM steps WHERE run_id = s.run_id) = 1)\n" \
"    GROUP BY s.run_id) t ON t.run_id = r.id\n" \
"LEFT JOIN (\n" \
"    SELECT run_id, AVG(step_seconds) AS seconds FROM (\n" \
"        SELECT s.run_id, s.step_seconds, ROW_NUMBER() OVER (PARTITION BY s.run_id ORDER BY s.step_seconds) AS i,\n" \
"               COUNT(*) OVER (PARTITION BY s.run_id) AS n\n" \
"        FROM steps s\n" \
"        WHERE s.step_seconds > 0 AND (s.step > (SELECT MAX(1, MAX(step) / 10) FROM steps WHERE run_id = s.run_id)\n" \
"           OR (SELECT COUNT(*) FROM steps WHERE run_id = s.run_id) = 1))\n" \
"    WHERE i IN ((n + 1) / 2, (n + 2) / 2) GROUP BY run_id) m ON m.run_id = r.id;\n" \
"CREATE VIEW latest_runs AS\n" \
"SELECT * FROM run_summary rs\n" \
"WHERE rs.run_id = (SELECT id FROM runs r2 WHERE r2.experiment = rs.experiment AND r2.variant = rs.variant\n" \
"                   ORDER BY r2.started_at DESC, r2.id DESC LIMIT 1);\n" \
LAUNCH_SUMMARY_VIEW \
"CREATE VIEW simulated_runs AS\n" \
"SELECT r.id AS run_id, r.launch_id, r.experiment, r.variant, r.hardware, s.precision, r.tp, r.pp, r.dp, r.world_size,\n" \
"       s.micro_batches, s.step_seconds, s.compute_seconds, s.comm_seconds, s.p2p_seconds, s.bubble_seconds,\n" \
"       s.tokens_per_s, s.mfu, s.hfu, s.memory_bytes, s.memory_capacity, s.memory_fits, r.overrides, r.started_at\n" \
"FROM runs r JOIN simulation s ON s.run_id = r.id;\n"

#define DROP_VIEWS \
"DROP VIEW IF EXISTS latest_runs;\n" \
"DROP VIEW IF EXISTS run_summary;\n" \
"DROP VIEW IF EXISTS launch_summary;\n" \
"DROP VIEW IF EXISTS simulated_runs;\n" \
"DROP VIEW IF EXISTS config_diff;\n" \
"DROP VIEW IF EXISTS run_config;\n"

// Schema 4: the sgemm peak of each host, measured once and reused by every launch on it
// (MFU comparable across launches); a new row when the machine changes (another CPU model
// or core count) or when a launch asks to measure again (make exp MEASURE_PEAK=1).
#define HOST_PEAKS_TABLE \
"CREATE TABLE host_peaks (\n" \
"  id          INTEGER PRIMARY KEY,\n" \
"  host        TEXT NOT NULL,\n" \
"  cpu_model   TEXT NOT NULL,\n" \
"  cores       INTEGER NOT NULL,\n" \
"  gflops      REAL NOT NULL,\n" \
"  load_avg_1m REAL,\n" \
"  measured_at TEXT NOT NULL\n" \
");\n" \
"CREATE INDEX host_peaks_by_host ON host_peaks(host, cpu_model, cores, id);\n"

#define STEP_TABLES \
"CREATE TABLE steps (\n" \
"  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  step         INTEGER NOT NULL,\n" \
"  tokens_seen  INTEGER NOT NULL,\n" \
"  loss         REAL,\n" \
"  lr           REAL,\n" \
"  grad_norm    REAL,\n" \
"  step_seconds REAL,\n" \
"  tokens_per_s REAL,\n" \
"  mfu          REAL,\n" \
"  PRIMARY KEY (run_id, step)\n" \
") WITHOUT ROWID;\n" \
"CREATE TABLE validation (\n" \
"  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  step        INTEGER NOT NULL,\n" \
"  tokens_seen INTEGER NOT NULL,\n" \
"  loss        REAL,\n" \
"  PRIMARY KEY (run_id, step)\n" \
") WITHOUT ROWID;\n" \
"CREATE TABLE comm (\n" \
"  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  step     INTEGER NOT NULL,\n" \
"  kind     TEXT NOT NULL CHECK (kind IN ('all_reduce','all_gather','reduce_scatter','broadcast','send','recv','barrier')),\n" \
"  phase    TEXT NOT NULL CHECK (phase IN ('forward','backward','recompute','optimizer','pipeline','other')),\n" \
"  grp      TEXT NOT NULL CHECK (grp IN ('tp','dp','pp','world')),\n" \
"  layer    INTEGER NOT NULL DEFAULT -1,\n" \
"  calls    INTEGER NOT NULL,\n" \
"  elements INTEGER NOT NULL,\n" \
"  bytes    INTEGER NOT NULL,\n" \
"  seconds  REAL,\n" \
"  wait_seconds REAL,\n" \
"  PRIMARY KEY (run_id, step, kind, phase, grp, layer)\n" \
") WITHOUT ROWID;\n" \
"CREATE TABLE memory (\n" \
"  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n" \
"  category TEXT NOT NULL CHECK (category IN ('parameters','gradients','optimizer','activations','peak_rss')),\n" \
"  bytes    INTEGER NOT NULL,\n" \
"  PRIMARY KEY (run_id, category)\n" \
") WITHOUT ROWID;\n"

const char *const RUNDB_SCHEMA_SQL =
    LAUNCHES_TABLE
    RUNS_TABLE("runs")
    RUN_INDEXES
    STEP_TABLES
    COMM_RANKS_TABLE
    SIMULATION_TABLE
    EVENTS_TABLE("events")
    "CREATE INDEX events_by_run ON events(run_id, id);\n"
    HOST_PEAKS_TABLE
    VIEWS;

// Schema 1 -> 7: new tables (launches, comm_ranks, host_peaks) and views; `runs` gains launch_id,
// repeat_index, overrides and manifest_format, its `manifest_version` (which held the
// experiment's `version:`) becomes `experiment_version`, and the status CHECK admits
// 'diverged'; `events` admits 'diverged' and 'warning'. SQLite cannot alter a CHECK, so
// both tables are rebuilt (the procedure of sqlite.org/lang_altertable.html: foreign keys
// off, new table, copy, drop, rename; ids kept, so every reference stays valid). The
// rebuilt tables and the new ones are the current schema's (every run of schema 1 was measured).
const char *const RUNDB_MIGRATE_V1_SQL =
    LAUNCHES_TABLE
    RUNS_TABLE("runs_v2")
    "INSERT INTO runs_v2 (id, uid, experiment, variant, manifest_path, experiment_version, manifest_sha256,\n"
    "  config_json, git_commit, git_dirty, host, pid, cpu_model, gpu_model, compiler, cflags, library_versions,\n"
    "  tp, pp, dp, world_size, status, started_at, ended_at, error, resumed_count, params, flops_per_token, peak_gflops)\n"
    "SELECT id, uid, experiment, variant, manifest_path, manifest_version, manifest_sha256,\n"
    "  config_json, git_commit, git_dirty, host, pid, cpu_model, gpu_model, compiler, cflags, library_versions,\n"
    "  tp, pp, dp, world_size, status, started_at, ended_at, error, resumed_count, params, flops_per_token, peak_gflops\n"
    "FROM runs;\n"
    "DROP TABLE runs;\n"
    "ALTER TABLE runs_v2 RENAME TO runs;\n"
    RUN_INDEXES
    EVENTS_REBUILD
    COMM_RANKS_TABLE
    SIMULATION_TABLE
    HOST_PEAKS_TABLE
    "ALTER TABLE comm ADD COLUMN wait_seconds REAL;\n"
    VIEWS;

// Schema 2 -> 7: runs and launches gain `kind` and `hardware` (every existing row is a
// measured one: the default), the simulation and host_peaks tables, schema 5's and 6's
// columns, events admit 'backend', and the views are recreated (they gained columns, and a run
// of one step is timed).
const char *const RUNDB_MIGRATE_V2_SQL =
    "ALTER TABLE runs ADD COLUMN " KIND_COLUMN ";\n"
    "ALTER TABLE runs ADD COLUMN hardware TEXT;\n"
    "ALTER TABLE launches ADD COLUMN " KIND_COLUMN ";\n"
    "ALTER TABLE launches ADD COLUMN hardware TEXT;\n"
    "ALTER TABLE launches ADD COLUMN peak_check_gflops REAL;\n"
    SCHEMA5_ALTERS
    SCHEMA6_ALTERS
    SIMULATION_TABLE
    HOST_PEAKS_TABLE
    DROP_VIEWS
    EVENTS_REBUILD
    VIEWS;

// Schema 3 -> 7: the host_peaks table, launches.peak_check_gflops, schema 5's and 6's columns,
// events admit 'backend'; the views are recreated (run_summary gained the key configuration columns and the median
// step time; run_config and config_diff are new).
const char *const RUNDB_MIGRATE_V3_SQL =
    "ALTER TABLE launches ADD COLUMN peak_check_gflops REAL;\n"
    SCHEMA5_ALTERS
    SCHEMA6_ALTERS
    HOST_PEAKS_TABLE
    DROP_VIEWS
    EVENTS_REBUILD
    VIEWS;

// Schema 4 -> 7: the peak's load and note (runs, launches), comm.wait_seconds, the launcher and
// the pre-flight's refusal, events admit 'backend'; the views are recreated (run_summary gained
// comm_wait_ms_per_step, peak_load_1m, peak_note; launch_summary launcher and error).
const char *const RUNDB_MIGRATE_V4_SQL =
    SCHEMA5_ALTERS
    SCHEMA6_ALTERS
    DROP_VIEWS
    EVENTS_REBUILD
    VIEWS;

// Schema 5 -> 7: the launcher and the pre-flight's refusal (launches; launch_summary shows them),
// events admit 'backend'.
const char *const RUNDB_MIGRATE_V5_SQL =
    SCHEMA6_ALTERS
    DROP_VIEWS
    EVENTS_REBUILD
    VIEWS;

// Schema 6 -> 7: events admit 'backend' (what a back end decided for the run: which attention
// ran for each shape, and why). SQLite cannot alter a CHECK: the table is rebuilt, ids kept.
const char *const RUNDB_MIGRATE_V6_SQL =
    DROP_VIEWS
    EVENTS_REBUILD
    VIEWS;
