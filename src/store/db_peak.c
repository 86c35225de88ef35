// db_peak.c — the sgemm peak of each host (host_peaks) and the one decision of the peak a
// launch or a run made by hand measures MFU against (db.h: the best measurement is kept, a
// check beyond the margin warns, a peak measured under load is said to be).
#include "db_internal.h"

#include <stdio.h>
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

void rundb_peak_note(double gflops, double load_avg, int cores, char *buf, size_t n) {
    double bound = RUNDB_PEAK_QUIET_LOAD * cores;
    if (load_avg >= 0 && load_avg <= bound) { if (n) buf[0] = 0; return; }
    if (load_avg < 0)
        snprintf(buf, n, "the sgemm peak %.1f GFLOP/s was measured at an unknown load: MFU against it may be overstated; "
                 "make exp ... MEASURE_PEAK=1 on a quiet machine measures it again", gflops);
    else
        snprintf(buf, n, "the sgemm peak %.1f GFLOP/s was measured at load %.2f on %d cores (above the quiet bound %.2f): "
                 "other work took cores from it, so MFU against it may be overstated; make exp ... MEASURE_PEAK=1 on a "
                 "quiet machine measures it again", gflops, load_avg, cores, bound);
}

void rundb_decide_peak(RunDB *db, const HostFacts *h, double check, double check_load, int remeasure, PeakDecision *d) {
    memset(d, 0, sizeof *d);
    d->check = check; d->check_load = check_load;
    int cores = host_cores();
    HostPeak hp;
    int have = rundb_host_peak(db, h, &hp);
    double drift = have && hp.gflops > 0 ? check / hp.gflops - 1 : 0;
    size_t k = 0;
    if (!have || remeasure || drift > RUNDB_PEAK_MARGIN) {   // this measurement becomes the peak
        d->id = rundb_store_host_peak(db, h, check, check_load);
        d->gflops = check; d->load_avg = check_load;
        store_iso_now(d->measured_at);
        k += (size_t)snprintf(d->message + k, sizeof d->message - k,
                              "sgemm peak of this machine: %.1f GFLOP/s, measured now at load %.2f and stored (host_peaks %lld)%s\n",
                              check, check_load, (long long)d->id,
                              !have ? ": later launches reuse it" : remeasure ? ", replacing the earlier one (MEASURE_PEAK=1)" : "");
        if (have && !remeasure)
            k += (size_t)snprintf(d->message + k, sizeof d->message - k,
                                  "warning: this sgemm check is %+.1f%% above the stored peak (%.1f GFLOP/s, measured %s at load %.2f), "
                                  "more than the %.0f%% margin: that peak was measured while other work took cores, so it replaces "
                                  "it (the best measurement is kept); MFU of earlier launches against it is overstated by up to "
                                  "%.0f%% (runs.peak_gflops says which peak each run used)\n",
                                  100 * drift, hp.gflops, hp.measured_at, hp.load_avg, 100 * RUNDB_PEAK_MARGIN, 100 * drift);
    } else {
        d->id = hp.id; d->gflops = hp.gflops; d->load_avg = hp.load_avg;
        xsnprintf(d->measured_at, sizeof d->measured_at, "%s", hp.measured_at);
        k += (size_t)snprintf(d->message + k, sizeof d->message - k,
                              "sgemm peak of this machine: %.1f GFLOP/s, measured %s at load %.2f (host_peaks %lld); this check "
                              "%.1f GFLOP/s at load %.2f (%+.1f%%)\n", hp.gflops, hp.measured_at, hp.load_avg, (long long)hp.id,
                              check, check_load, 100 * drift);
        if (drift < -RUNDB_PEAK_MARGIN)
            k += (size_t)snprintf(d->message + k, sizeof d->message - k,
                                  "warning: this sgemm check is %.1f%% below the stored peak, more than the %.0f%% margin: the "
                                  "machine is busy now (load %.2f), so this launch's speed is below what the machine does and its "
                                  "MFU understated; compare it with other launches only beyond that; run on a quieter machine, or "
                                  "measure the peak again with make exp ... MEASURE_PEAK=1\n",
                                  -100 * drift, 100 * RUNDB_PEAK_MARGIN, check_load);
    }
    rundb_peak_note(d->gflops, d->load_avg, cores, d->note, sizeof d->note);
    if (d->note[0] && k < sizeof d->message) snprintf(d->message + k, sizeof d->message - k, "warning: %s\n", d->note);
}

typedef struct { int64_t id; const PeakDecision *d; double load; const char *note; int launch; } PeakSetArgs;
static int set_peak_body(RunDB *db, void *varg) {
    PeakSetArgs *a = varg;
    sqlite3_stmt *st = NULL;
    if (a->launch) {
        TRY(sqlite3_prepare_v2(db->db, "UPDATE launches SET peak_check_gflops=?1, peak_load_1m=?2, peak_note=?3 WHERE id=?4",
                               -1, &st, NULL));
        sqlite3_bind_double(st, 1, a->d->check);
    } else {
        TRY(sqlite3_prepare_v2(db->db, "UPDATE runs SET peak_load_1m=?2, peak_note=?3 WHERE id=?4", -1, &st, NULL));
    }
    if (a->load >= 0) sqlite3_bind_double(st, 2, a->load); else sqlite3_bind_null(st, 2);
    rundb_bind_text(st, 3, a->note && a->note[0] ? a->note : NULL);
    sqlite3_bind_int64(st, 4, a->id);
    int rc = rundb_step_done(st);
    sqlite3_finalize(st);
    return rc;
}

void rundb_set_launch_peak(RunDB *db, int64_t launch, const PeakDecision *d) {
    PeakSetArgs a = { launch, d, d->load_avg, d->note, 1 };
    if (rundb_tx_retry(db, set_peak_body, &a, db->final_s, "recording the launch's sgemm check") != SQLITE_OK)
        die_input("%s: cannot record the launch's sgemm check: %s", db->path, db->last_error);
}

void rundb_set_run_peak(RunDB *db, int64_t run, double load_avg, const char *note) {
    PeakSetArgs a = { run, NULL, load_avg, note, 0 };
    if (rundb_tx_retry(db, set_peak_body, &a, db->final_s, "recording the run's peak") != SQLITE_OK)
        die_input("%s: cannot record the run's peak: %s", db->path, db->last_error);
}
