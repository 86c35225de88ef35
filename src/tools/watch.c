// watch — the progress of a launch while it runs (make watch [EXP=name] [LAUNCH=id]): every
// planned run of the launch (each variant x REPEAT) with its status, step, last loss and
// step time, and an ETA for the whole launch. Reads the run database only (a read-only
// SQLite connection: WAL readers never block the runs writing to it), every few seconds
// until the launch ends (--once: one table). `watch --help` lists the options.
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../config/manifest.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/fileio.h"
#include "../store/compare.h"
#include "../store/db.h"

static const char *USAGE =
"usage: watch [NAME|PATH] [--launch ID] [--db PATH] [--every SECONDS] [--once]\n"
"\n"
"The runs of a launch (the latest of experiment NAME, or --launch ID) while it runs: each\n"
"planned run (variant x repeat) with its status, step of its total, last training loss and\n"
"median step time so far (after warm-up: as run_summary.median_ms_per_step, the statistic of the\n"
"make exp table), and the ETA of the launch (the remaining steps of every run not finished,\n"
"at its own step time, or its variant's, or the launch's mean). Read-only.\n"
"\n"
"  --launch ID      the launch (make watch LAUNCH=ID; default: the latest launch of NAME,\n"
"                   else the latest launch in the database)\n"
"  --db PATH        the run database (default: NAME's run.db, else runs/boost.db; make watch DB=)\n"
"  --every SECONDS  refresh period (default 5) until the launch is no longer running\n"
"  --once           print the table once and exit\n"
"Exit 0, or 2 on bad input (no database, no such launch).\n";

typedef struct {
    char variant[256], status[16];
    int repeat, step, total, have;   // have: a runs row exists
    double loss, ms;                 // last loss, median ms per step after warm-up so far (NAN: none)
} WatchRow;

static sqlite3 *open_ro(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) die_input_hint("start one: make exp EXP=<name>", "%s: no run database there", path);
    char err[1400];
    if (file_check_regular(path, "run database", err, sizeof err) != 0)
        die_input_hint("--db names a run database file (runs/boost.db)", "%s", err);
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        die_input("%s: cannot open the run database read-only: %s", path, h ? sqlite3_errmsg(h) : "out of memory");
    sqlite3_busy_timeout(h, 5000);
    return h;
}

static sqlite3_stmt *prep(sqlite3 *h, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
        die_input("%s: not a run database of this build (%s)", sqlite3_db_filename(h, "main"), sqlite3_errmsg(h));
    return st;
}

static void text(sqlite3_stmt *st, int i, char *buf, size_t n) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, n, "%s", t ? (const char *)t : "");
}

static double col_or_nan(sqlite3_stmt *st, int i) { return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i); }

static void duration(char *b, size_t n, double s) {
    if (isnan(s)) snprintf(b, n, "?");
    else if (s < 60) snprintf(b, n, "%.0fs", s);
    else if (s < 3600) snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

// One table; returns 1 while the launch is running.
static int watch_once(sqlite3 *h, int64_t launch, const Manifest *man) {
    sqlite3_stmt *st = prep(h, "SELECT experiment, status, started_at, repeat, COALESCE(variant_filter, ''), manifest_sha256, kind "
                               "FROM launches WHERE id=?1");
    sqlite3_bind_int64(st, 1, launch);
    if (sqlite3_step(st) != SQLITE_ROW) die_input("no launch %lld in %s", (long long)launch, sqlite3_db_filename(h, "main"));
    char experiment[256], status[16], started[32], filter[256], sha[65], kind[16];
    text(st, 0, experiment, sizeof experiment); text(st, 1, status, sizeof status); text(st, 2, started, sizeof started);
    int repeat = sqlite3_column_int(st, 3);
    text(st, 4, filter, sizeof filter); text(st, 5, sha, sizeof sha); text(st, 6, kind, sizeof kind);
    sqlite3_finalize(st);
    // the plan: from the manifest when it is the launch's own text, else the runs recorded so far
    int planned_known = man && !strcmp(man->sha256, sha);
    int cap = 16, n = 0;
    WatchRow *rows = xcalloc((size_t)cap, sizeof *rows);
    if (planned_known)
        for (int r = 0; r < repeat; r++)
            for (int i = 0; i < man->n_variants; i++) {
                const ManifestVariant *v = &man->variants[i];
                if (filter[0] ? strcmp(v->name, filter) : (v->config.run.on_demand && strcmp(kind, "simulated"))) continue;
                if (n == cap) { cap *= 2; rows = xrealloc(rows, (size_t)cap * sizeof *rows); }
                memset(&rows[n], 0, sizeof rows[n]);
                snprintf(rows[n].variant, sizeof rows[n].variant, "%s", v->name);
                if (!strcmp(kind, "simulated")) rows[n].total = 1;
                snprintf(rows[n].status, sizeof rows[n].status, "pending");
                rows[n].repeat = r;
                rows[n].total = v->config.train.steps;
                rows[n].loss = rows[n].ms = NAN;
                n++;
            }
    st = prep(h,
        "SELECT r.variant, r.repeat_index, r.status, COALESCE(json_extract(r.config_json, '$.train.steps'), 0), "
        "  (SELECT MAX(step) FROM steps WHERE run_id = r.id), "
        "  (SELECT loss FROM steps WHERE run_id = r.id ORDER BY step DESC LIMIT 1), "
        "  " RUNDB_MEDIAN_MS_SQL("r.id") " "   // run_summary.median_ms_per_step: the statistic of make exp's table
        "FROM runs r WHERE r.launch_id = ?1 ORDER BY r.id");
    sqlite3_bind_int64(st, 1, launch);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char variant[256];
        text(st, 0, variant, sizeof variant);
        int rep = sqlite3_column_int(st, 1), k = 0;
        while (k < n && (strcmp(rows[k].variant, variant) || rows[k].repeat != rep || rows[k].have)) k++;
        if (k == n) {
            if (n == cap) { cap *= 2; rows = xrealloc(rows, (size_t)cap * sizeof *rows); }
            memset(&rows[n], 0, sizeof rows[n]);
            snprintf(rows[n].variant, sizeof rows[n].variant, "%s", variant);
            rows[n].repeat = rep;
            n++;
        }
        WatchRow *w = &rows[k];
        w->have = 1;
        text(st, 2, w->status, sizeof w->status);
        if (sqlite3_column_int(st, 3) > 0) w->total = sqlite3_column_int(st, 3);
        if (!strcmp(kind, "simulated")) w->total = 1;   // one modeled step
        w->step = sqlite3_column_int(st, 4);
        w->loss = col_or_nan(st, 5);
        w->ms = col_or_nan(st, 6);
    }
    sqlite3_finalize(st);

    // ETA: the remaining steps of every run not finished, at its own step time, else its
    // variant's (another repeat), else the mean of the runs measured so far.
    double sum = 0; int cnt = 0;
    for (int i = 0; i < n; i++) if (!isnan(rows[i].ms)) { sum += rows[i].ms; cnt++; }
    double eta = 0, mean = cnt ? sum / cnt : NAN;
    int unknown = 0, done_runs = 0;
    time_t now = time(NULL);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%H:%M:%S", gmtime(&now));
    if (isatty(STDOUT_FILENO)) printf("\033[H\033[2J");
    printf("launch %lld of %s (%s, started %s) at %s UTC%s\n", (long long)launch, experiment, status, started, stamp,
           planned_known ? "" : " — the manifest is not the launch's own: only the runs recorded so far");
    printf("%-20s %6s %-11s %13s %9s %9s %9s\n", "variant", "repeat", "status", "step", "loss", "median ms", "left");
    for (int i = 0; i < n; i++) {
        WatchRow *w = &rows[i];
        int finished = strcmp(w->status, "running") && strcmp(w->status, "pending");
        done_runs += finished;
        double ms = w->ms;
        for (int j = 0; j < n && isnan(ms); j++) if (!strcmp(rows[j].variant, w->variant)) ms = rows[j].ms;
        if (isnan(ms)) ms = mean;
        double left = finished ? 0 : (w->total - w->step) * ms / 1e3;
        if (!finished && isnan(left)) unknown++;
        else eta += left;
        char alias[64], stepcol[32], loss[32], mscol[32], leftcol[32];
        store_variant_alias(w->variant, alias, sizeof alias);
        snprintf(stepcol, sizeof stepcol, "%d/%d", w->step, w->total);
        snprintf(loss, sizeof loss, isnan(w->loss) ? "-" : "%.4f", w->loss);
        snprintf(mscol, sizeof mscol, isnan(w->ms) ? "-" : "%.1f", w->ms);
        if (finished) snprintf(leftcol, sizeof leftcol, "-");
        else duration(leftcol, sizeof leftcol, left);
        printf("%-20s %6d %-11s %13s %9s %9s %9s\n", alias, w->repeat, w->status, stepcol, loss, mscol, leftcol);
    }
    for (int i = 0; i < n; i++) {
        char alias[64];
        store_variant_alias(rows[i].variant, alias, sizeof alias);
        if (strcmp(alias, rows[i].variant) && rows[i].repeat == 0) printf("  %s = %s\n", alias, rows[i].variant);
    }
    char e[32];
    duration(e, sizeof e, eta);
    int running = !strcmp(status, "running");
    if (running) {
        time_t end = now + (time_t)eta;
        char at[32];
        strftime(at, sizeof at, "%H:%M", gmtime(&end));
        printf("%d of %d runs finished; ETA of the launch %s%s (about %s UTC)%s\n", done_runs, n, unknown ? "at least " : "", e, at,
               unknown ? ": no step time measured yet for some runs" : "");
    } else {
        printf("%d of %d runs finished; the launch is %s\n", done_runs, n, status);
    }
    fflush(stdout);
    free(rows);
    return running;
}

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { g_stop = sig; }

int main(int argc, char **argv) {
    const char *name = NULL, *db = NULL;
    int64_t launch = 0;
    double every = 5;
    int once = 0, n_pos = 0;
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_FLAG_ROW("once", &once),
        OPT_PATH_ROW("db", &db),
        OPT_INT64_ROW("launch", 1, INT64_MAX, &launch),
        OPT_REAL_ROW("every", 0.2, 3600, &every),
        OPT_END };
    opt_parse("watch", opts, argc, argv, &name, 1, &n_pos, USAGE);
    Manifest *man = NULL;
    char path[1100] = "";
    if (name && *name) {
        if (strchr(name, '/') || strstr(name, ".yaml")) xsnprintf(path, sizeof path, "%s", name);
        else xsnprintf(path, sizeof path, "experiments/%s.yaml", name);
        man = manifest_load_with(path, NULL, 0);
    }
    char dbbuf[1024];
    if (!db) { snprintf(dbbuf, sizeof dbbuf, "%s", man ? man->variants[0].config.run.db : "runs/boost.db"); db = dbbuf; }
    sqlite3 *h = open_ro(db);
    if (!launch) {
        sqlite3_stmt *st = prep(h, man ? "SELECT MAX(id) FROM launches WHERE experiment=?1" : "SELECT MAX(id) FROM launches");
        if (man) sqlite3_bind_text(st, 1, man->name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) launch = (long)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (!launch) die_input_hint("start one: make exp EXP=<name>", "no launch%s%s in %s", man ? " of " : "", man ? man->name : "", db);
    }
    // The plan (variants x repeat, each with its steps) from the manifest with the launch's own
    // overrides: the experiment's file, else the launch's manifest_path while it is there.
    sqlite3_stmt *st = prep(h, "SELECT COALESCE(manifest_path, ''), (SELECT COUNT(*) FROM json_each(overrides)) FROM launches WHERE id=?1");
    sqlite3_bind_int64(st, 1, launch);
    int n_sets = 0;
    if (sqlite3_step(st) == SQLITE_ROW) { if (!path[0]) text(st, 0, path, sizeof path); n_sets = sqlite3_column_int(st, 1); }
    sqlite3_finalize(st);
    char **sets = xcalloc((size_t)n_sets + 1, sizeof *sets);
    st = prep(h, "SELECT value FROM launches, json_each(launches.overrides) WHERE launches.id=?1");
    sqlite3_bind_int64(st, 1, launch);
    for (int i = 0; i < n_sets && sqlite3_step(st) == SQLITE_ROW; i++) sets[i] = xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    struct stat sb;
    if (man) manifest_free(man);
    man = path[0] && stat(path, &sb) == 0 ? manifest_load_with(path, (const char **)sets, n_sets) : NULL;
    for (int i = 0; i < n_sets; i++) free(sets[i]);
    free(sets);
    signal(SIGINT, on_signal); signal(SIGTERM, on_signal);
    while (watch_once(h, launch, man) && !once && !g_stop) {
        struct timespec ts = { (time_t)every, (long)(fmod(every, 1) * 1e9) };
        nanosleep(&ts, NULL);
    }
    sqlite3_close(h);
    if (man) manifest_free(man);
    return 0;
}
