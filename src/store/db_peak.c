// db_peak.c — the sgemm peak of each host, measured once and reused (host_peaks, schema 4):
// MFU of launches on one machine is relative to one number, so it can be compared.
#include "db_internal.h"

#include <stdlib.h>
#include <unistd.h>

#include "util.h"
#include "../core/check.h"

static int host_cores(void) { long c = sysconf(_SC_NPROCESSORS_ONLN); return c > 0 ? (int)c : 1; }

int rundb_host_peak(RunDB *db, const HostFacts *h, HostPeak *out) {
    rundb_flush(db);
    sqlite3_stmt *st = db_prep(db, "SELECT id, gflops, COALESCE(load_avg_1m, -1), measured_at FROM host_peaks "
                                   "WHERE host=?1 AND cpu_model=?2 AND cores=?3 ORDER BY id DESC LIMIT 1");
    db_bind_text(db, st, 1, h->host);
    db_bind_text(db, st, 2, h->cpu_model);
    db_bind_i64(db, st, 3, host_cores());
    int found = db_next_row(db, st, "looking up the host's sgemm peak");
    if (found) {
        out->id = sqlite3_column_int64(st, 0);
        out->gflops = sqlite3_column_double(st, 1);
        out->load_avg = sqlite3_column_double(st, 2);
        db_col_text(st, 3, out->measured_at, sizeof out->measured_at);
    }
    db_finalize(db, st);
    return found;
}

typedef struct { const HostFacts *h; double gflops, load; int64_t id; } PeakArgs;
static int store_peak_body(RunDB *db, void *varg) {
    PeakArgs *a = varg;
    char now[32];
    store_iso_now(now);
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db, "INSERT INTO host_peaks(host, cpu_model, cores, gflops, load_avg_1m, measured_at) "
                                   "VALUES (?1,?2,?3,?4,?5,?6)", -1, &st, NULL));
    rundb_bind_text(st, 1, a->h->host); rundb_bind_text(st, 2, a->h->cpu_model); sqlite3_bind_int(st, 3, host_cores());
    sqlite3_bind_double(st, 4, a->gflops);
    if (a->load >= 0) sqlite3_bind_double(st, 5, a->load); else sqlite3_bind_null(st, 5);
    rundb_bind_text(st, 6, now);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    a->id = sqlite3_last_insert_rowid(db->db);
    return rc;
}

int64_t rundb_store_host_peak(RunDB *db, const HostFacts *h, double gflops, double load_avg) {
    PeakArgs a = { h, gflops, load_avg, 0 };
    if (rundb_tx_retry(db, store_peak_body, &a, db->final_s, "recording the host's sgemm peak") != SQLITE_OK)
        die_input("%s: cannot record the host's sgemm peak: %s", db->path, db->last_error);
    return a.id;
}

typedef struct { int64_t launch; double gflops; } CheckArgs;
static int peak_check_body(RunDB *db, void *varg) {
    CheckArgs *a = varg;
    sqlite3_stmt *st = NULL;
    TRY(sqlite3_prepare_v2(db->db, "UPDATE launches SET peak_check_gflops=?1 WHERE id=?2", -1, &st, NULL));
    sqlite3_bind_double(st, 1, a->gflops);
    sqlite3_bind_int64(st, 2, a->launch);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    return rc;
}

void rundb_set_launch_peak_check(RunDB *db, int64_t launch, double gflops) {
    CheckArgs a = { launch, gflops };
    if (rundb_tx_retry(db, peak_check_body, &a, db->final_s, "recording the launch's sgemm check") != SQLITE_OK)
        die_input("%s: cannot record the launch's sgemm check: %s", db->path, db->last_error);
}
