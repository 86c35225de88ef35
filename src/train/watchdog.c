// watchdog.c — see watchdog.h.
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/check.h"
#include "../core/outdir.h"

#define REC 256   // bytes of one heartbeat record (fixed: rewritten in place)

// The watchdog's state: one per process (its two threads and the run loop share it, as the
// run has one heartbeat per rank). The only file-scope state of the watchdog, by necessity:
// its threads outlive no call, but they read it without being handed a pointer.
static struct {
    int (*record_failure)(const char *message);   // the run's recorder (stop.h), given at start
    int on, rank, world, fd, timeout;
    unsigned long long session;   // the same on every rank of this start of the run
    OutDir run, hb;               // the run's folder and its .heartbeat (core/outdir.h: never a link)
    char name[32], host[256];     // this rank's file in hb: rank_<R>
    atomic_int stop, finished;
    pthread_t beat, watch;
} W;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int watchdog_timeout_s(void) {
    const char *e = getenv("BOOST_LIVENESS_TIMEOUT");
    char *end = NULL;
    long v = e && *e ? strtol(e, &end, 10) : WATCHDOG_TIMEOUT_S;
    if (e && *e && (*end || v < 2 || v > 3600))
        die_input("BOOST_LIVENESS_TIMEOUT=%s: expected whole seconds from 2 to 3600 (default %d)", e, WATCHDOG_TIMEOUT_S);
    return (int)v;
}

static void write_beat(unsigned long long beat, int finished) {
    char rec[REC];
    memset(rec, ' ', sizeof rec);
    int k = snprintf(rec, sizeof rec, "boost-c heartbeat\nsession %llu\npid %d\nhost %s\nbeat %llu\nstate %s\n",
                     W.session, (int)getpid(), W.host, beat, finished ? "finished" : "running");
    if (k > 0 && k < REC) rec[k] = ' ';
    rec[REC - 1] = '\n';
    if (pwrite(W.fd, rec, sizeof rec, 0) != (ssize_t)sizeof rec) { /* a full disk: the peers will see a stall */ }
}

static void *beat_thread(void *unused) {
    unsigned long long beat = 0;
    while (!atomic_load(&W.stop)) {
        write_beat(++beat, atomic_load(&W.finished));
        struct timespec ts = { 0, 250000000 };
        for (int i = 0; i < 4 && !atomic_load(&W.stop); i++) nanosleep(&ts, NULL);
    }
    return NULL;
}

typedef struct { int present, pid, finished; unsigned long long beat; char host[256]; } Beat;

static Beat read_beat(int r) {
    Beat b = {0};
    char name[32], rec[REC + 1];
    snprintf(name, sizeof name, "rank_%d", r);
    int fd = outdir_open_read(&W.hb, name);
    if (fd < 0) return b;
    ssize_t k = pread(fd, rec, REC, 0);
    close(fd);
    if (k != REC) { b.present = -1; return b; }   // (being written: read again next time)
    rec[REC] = 0;
    char state[16] = "";
    unsigned long long session = 0;
    if (sscanf(rec, "boost-c heartbeat\nsession %llu\npid %d\nhost %255s\nbeat %llu\nstate %15s", &session, &b.pid, b.host,
               &b.beat, state) != 5) {
        b.present = -1; return b;
    }
    if (session != W.session) return b;   // a file left by an earlier start of the run (a resume): not this rank yet
    b.present = 1;
    b.finished = !strcmp(state, "finished");
    return b;
}

static int process_gone(int pid) {
    if (pid <= 0) return 0;
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char p[64], st[512];
    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t k = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[k] = 0;
    const char *rp = strrchr(st, ')');
    return rp && rp[1] == ' ' && rp[2] == 'Z';   // a zombie: dead, not yet reaped
}

static void fail_run(const char *msg, int kill_pid) {
    if (!W.record_failure(msg)) return;   // (another thread of this rank ended the run first)
    fprintf(stderr, "error: %s\n", msg);
    fflush(stderr);
    if (kill_pid > 0) kill(kill_pid, SIGKILL);
    _exit(1);
}

static void *watch_thread(void *unused) {
    int n = W.world;
    double *changed = calloc((size_t)n, sizeof(double));
    unsigned long long *last = calloc((size_t)n, sizeof *last);
    int *seen = calloc((size_t)n, sizeof(int)), *done = calloc((size_t)n, sizeof(int));
    if (!changed || !last || !seen || !done) return NULL;
    double t0 = mono_s();
    for (int r = 0; r < n; r++) changed[r] = t0;
    while (!atomic_load(&W.stop)) {
        struct timespec ts = { 0, 250000000 };
        for (int i = 0; i < 4 && !atomic_load(&W.stop); i++) nanosleep(&ts, NULL);
        if (atomic_load(&W.stop)) break;
        double now = mono_s();
        for (int r = 0; r < n; r++) {
            if (r == W.rank || done[r]) continue;
            Beat b = read_beat(r);
            char msg[1024];
            if (b.present == 0 && seen[r]) { done[r] = 1; continue; }   // removed (or replaced): it ended normally
            if (b.present == 1) {
                if (b.finished) { done[r] = 1; continue; }
                if (!seen[r] || b.beat != last[r]) { seen[r] = 1; last[r] = b.beat; changed[r] = now; }
                if (!strcmp(b.host, W.host) && process_gone(b.pid)) {
                    snprintf(msg, sizeof msg, "rank %d of %d (pid %d on %s) died: its process is gone (killed by a signal "
                             "or crashed) before the run ended; seen by rank %d's watchdog", r, n, b.pid, b.host, W.rank);
                    fail_run(msg, 0);
                }
            }
            if (now - changed[r] > W.timeout) {
                if (seen[r])
                    snprintf(msg, sizeof msg, "rank %d of %d (pid %d on %s) stopped progressing: no heartbeat for %d s "
                             "(stopped, frozen or cut off); seen by rank %d's watchdog, which ends the run",
                             r, n, b.pid, b.present == 1 ? b.host : "?", W.timeout, W.rank);
                else
                    snprintf(msg, sizeof msg, "rank %d of %d never started its heartbeat within %d s (in %.600s); "
                             "seen by rank %d's watchdog", r, n, W.timeout, W.hb.path, W.rank);
                fail_run(msg, b.present == 1 && !strcmp(b.host, W.host) ? b.pid : 0);
            }
        }
    }
    free(changed); free(last); free(seen); free(done);
    return NULL;
}

// A heartbeat file this project wrote (its first line): a file left by an earlier start of
// the run (a dead rank of a resumed run) is replaced; anything else at the name is refused.
static int heartbeat_owned(int dirfd, const char *name) {
    static const char magic[] = "boost-c heartbeat\n";
    char head[sizeof magic];
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t k = pread(fd, head, sizeof magic - 1, 0);
    close(fd);
    return k == (ssize_t)(sizeof magic - 1) && !memcmp(head, magic, sizeof magic - 1);
}

void watchdog_start(const char *run_dir, int rank, int world, unsigned long long session,
                    int (*record_failure)(const char *message)) {
    memset(&W, 0, sizeof W);
    W.run.fd = W.hb.fd = W.fd = -1;
    W.record_failure = record_failure;
    W.session = session;
    W.rank = rank; W.world = world; W.timeout = watchdog_timeout_s();
    if (gethostname(W.host, sizeof W.host - 1) != 0) snprintf(W.host, sizeof W.host, "unknown");
    for (char *p = W.host; *p; p++) if (*p == ' ' || *p == '\n') *p = '_';
    char err[2000];
    if (outdir_open(&W.run, run_dir, 0, err, sizeof err) != 0 || outdir_sub(&W.hb, &W.run, ".heartbeat", 1, err, sizeof err) != 0)
        die_input_hint("remove what is at that name (a run folder holds only what boost-c wrote there); the run can then be resumed",
                       "cannot start this rank's heartbeat: %s", err);
    xsnprintf(W.name, sizeof W.name, "rank_%d", rank);
    W.fd = outdir_create(&W.hb, W.name, heartbeat_owned, err, sizeof err);
    if (W.fd < 0)
        die_input_hint("remove what is at that name (a run folder holds only what boost-c wrote there); the run can then be resumed",
                       "cannot write the heartbeat file: %s", err);
    write_beat(0, 0);
    int rc = pthread_create(&W.beat, NULL, beat_thread, NULL);
    check_resource(rc, "starting the heartbeat thread (pthread_create)");
    if (world > 1) {
        rc = pthread_create(&W.watch, NULL, watch_thread, NULL);
        check_resource(rc, "starting the watchdog thread (pthread_create)");
    }
    W.on = 1;
}

void watchdog_finish(void) {
    if (!W.on) return;
    atomic_store(&W.finished, 1);
    write_beat(~0ULL, 1);
    atomic_store(&W.stop, 1);
    pthread_join(W.beat, NULL);
    if (W.world > 1) pthread_join(W.watch, NULL);
    write_beat(~0ULL, 1);
    outdir_remove_held(&W.hb, W.name, W.fd);   // (only the file this rank created)
    close(W.fd);
    outdir_close(&W.hb);
    outdir_rmdir(&W.run, ".heartbeat");        // (only once every rank removed its file; never a link)
    outdir_close(&W.run);
    W.on = 0;
}

int watchdog_dead_peer(char *msg, size_t n) {
    if (!W.on) return 0;
    for (int r = 0; r < W.world; r++) {
        if (r == W.rank) continue;
        Beat b = read_beat(r);
        if (b.present == 1 && !b.finished && !strcmp(b.host, W.host) && process_gone(b.pid)) {
            snprintf(msg, n, "rank %d of %d (pid %d on %s) died: its process is gone (killed by a signal or crashed); "
                     "the other ranks were then stopped", r, W.world, b.pid, b.host);
            return 1;
        }
    }
    return 0;
}
