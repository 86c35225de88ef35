// stop.c — see stop.h.
#include "stop.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/check.h"
#include "../store/db.h"
#include "watchdog.h"

// The one file-scope state of src/train/, by necessity: signals belong to the process, not to
// a run, and the receiving thread (started before MPI_Init, before any run exists) and the
// forwarding handler (async: it can only read what is already in memory — pthread_kill is
// async-signal-safe, a lookup through a caller's pointer would not be handed in) have no
// caller to pass them a context. S.target is the run they record into (stop_set_run).
static struct {
    sigset_t set;              // SIGINT, SIGTERM, SIGHUP: blocked everywhere, taken by the thread
    atomic_int signal;         // the first signal received (0 = none)
    pthread_mutex_t mu;        // guards target
    pthread_t thread;          // the signal thread (the handler forwards to it)
    struct {
        int active;
        char db[1024];
        int64_t run;
        int rank, world;
        char resume[2048];
    } target;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *signal_thread(void *unused) {
    for (;;) {
        int sig = 0;
        if (sigwait(&S.set, &sig) != 0) continue;
        if (atomic_load(&S.signal)) {
            fprintf(stderr, "second signal (%s): exiting now\n", strsignal(sig));
            _exit(128 + sig);
        }
        pthread_mutex_lock(&S.mu);
        if (!S.target.active) {
            pthread_mutex_unlock(&S.mu);
            fprintf(stderr, "interrupted by %s before the run started\n", strsignal(sig));
            _exit(128 + sig);
        }
        char msg[3000], dead[1024];
        if (S.target.world > 1 && watchdog_dead_peer(dead, sizeof dead)) {
            // mpirun stops the others when a rank dies: the cause is that rank's death
            snprintf(msg, sizeof msg, "%s; then %s received by rank %d", dead, strsignal(sig), S.target.rank);
            if (S.target.db[0]) rundb_mark_run(S.target.db, S.target.run, "failed", msg);
            fprintf(stderr, "error: %s\n", msg);
            S.target.active = 0;
            pthread_mutex_unlock(&S.mu);
            atomic_store(&S.signal, sig);
            continue;
        }
        snprintf(msg, sizeof msg, "%s received by rank %d of %d (pid %d); resume with: %s", strsignal(sig),
                 S.target.rank, S.target.world, (int)getpid(), S.target.resume);
        if (S.target.db[0]) rundb_mark_run(S.target.db, S.target.run, "interrupted", msg);
        // Only one rank prints the hint (every rank may get the signal from mpirun).
        if (S.target.rank == 0 || S.target.world == 1)
            fprintf(stderr, "\ninterrupted (%s): the run stops after the current step\nresume with: %s\n",
                    strsignal(sig), S.target.resume);
        pthread_mutex_unlock(&S.mu);
        atomic_store(&S.signal, sig);
    }
    return NULL;
}

// Threads that existed before main() (a library constructor's: OpenBLAS starts its thread
// pool when it is loaded) do not block the signals, and the kernel may deliver a
// process-directed signal to any of them — whose default action would end the process
// without a word. This handler catches it there and hands it to the signal thread
// (pthread_kill: a thread-directed signal, pending for that thread, which sigwait takes).
static void forward_to_signal_thread(int sig) { pthread_kill(S.thread, sig); }

void stop_signals_init(void) {
    sigemptyset(&S.set);
    sigaddset(&S.set, SIGINT);
    sigaddset(&S.set, SIGTERM);
    sigaddset(&S.set, SIGHUP);
    int rc = pthread_sigmask(SIG_BLOCK, &S.set, NULL);
    CHECK(rc == 0, "pthread_sigmask failed: %s", strerror(rc));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&S.thread, &attr, signal_thread, NULL);
    CHECK(rc == 0, "pthread_create (signal thread) failed: %s", strerror(rc));
    pthread_attr_destroy(&attr);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_to_signal_thread;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
    for (int i = 0; i < 3; i++) CHECK_ERRNO(sigaction(sigs[i], &sa, NULL) != 0, "sigaction");
}

int stop_signal_received(void) { return atomic_load(&S.signal); }

void stop_set_run(const char *db_path, int64_t run_id, int rank, int world, const char *resume_command) {
    pthread_mutex_lock(&S.mu);
    snprintf(S.target.db, sizeof S.target.db, "%s", db_path ? db_path : "");
    snprintf(S.target.resume, sizeof S.target.resume, "%s", resume_command);
    S.target.run = run_id;
    S.target.rank = rank;
    S.target.world = world;
    S.target.active = 1;
    pthread_mutex_unlock(&S.mu);
}

void stop_clear_run(void) {
    pthread_mutex_lock(&S.mu);
    S.target.active = 0;
    pthread_mutex_unlock(&S.mu);
}

int stop_record_failure_as(const char *message) {
    pthread_mutex_lock(&S.mu);
    int known = S.target.active;
    if (known && S.target.db[0]) rundb_mark_run(S.target.db, S.target.run, "failed", message);
    S.target.active = 0;
    pthread_mutex_unlock(&S.mu);
    return known;
}

int stop_record_failure(const char *message) {
    pthread_mutex_lock(&S.mu);
    int known = S.target.active;
    if (known && S.target.db[0]) {
        char msg[2600];
        snprintf(msg, sizeof msg, "rank %d: %s", S.target.rank, message);
        rundb_mark_run(S.target.db, S.target.run, "failed", msg);
    }
    S.target.active = 0;
    pthread_mutex_unlock(&S.mu);
    return known;
}
