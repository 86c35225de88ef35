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

static sigset_t g_set;
static atomic_int g_signal;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int active;
    char db[1024];
    int64_t run;
    int rank, world;
    char resume[2048];
} g_target;

static void *signal_thread(void *unused) {
    for (;;) {
        int sig = 0;
        if (sigwait(&g_set, &sig) != 0) continue;
        if (atomic_load(&g_signal)) {
            fprintf(stderr, "second signal (%s): exiting now\n", strsignal(sig));
            _exit(128 + sig);
        }
        pthread_mutex_lock(&g_mu);
        if (!g_target.active) {
            pthread_mutex_unlock(&g_mu);
            fprintf(stderr, "interrupted by %s before the run started\n", strsignal(sig));
            _exit(128 + sig);
        }
        char msg[3000], dead[1024];
        if (g_target.world > 1 && watchdog_dead_peer(dead, sizeof dead)) {
            // mpirun stops the others when a rank dies: the cause is that rank's death
            snprintf(msg, sizeof msg, "%s; then %s received by rank %d", dead, strsignal(sig), g_target.rank);
            if (g_target.db[0]) rundb_mark_run(g_target.db, g_target.run, "failed", msg);
            fprintf(stderr, "error: %s\n", msg);
            g_target.active = 0;
            pthread_mutex_unlock(&g_mu);
            atomic_store(&g_signal, sig);
            continue;
        }
        snprintf(msg, sizeof msg, "%s received by rank %d of %d (pid %d); resume with: %s", strsignal(sig),
                 g_target.rank, g_target.world, (int)getpid(), g_target.resume);
        if (g_target.db[0]) rundb_mark_run(g_target.db, g_target.run, "interrupted", msg);
        // Only one rank prints the hint (every rank may get the signal from mpirun).
        if (g_target.rank == 0 || g_target.world == 1)
            fprintf(stderr, "\ninterrupted (%s): the run stops after the current step\nresume with: %s\n",
                    strsignal(sig), g_target.resume);
        pthread_mutex_unlock(&g_mu);
        atomic_store(&g_signal, sig);
    }
    return NULL;
}

static pthread_t g_thread;

// Threads that existed before main() (a library constructor's: OpenBLAS starts its thread
// pool when it is loaded) do not block the signals, and the kernel may deliver a
// process-directed signal to any of them — whose default action would end the process
// without a word. This handler catches it there and hands it to the signal thread
// (pthread_kill: a thread-directed signal, pending for that thread, which sigwait takes).
static void forward_to_signal_thread(int sig) { pthread_kill(g_thread, sig); }

void stop_signals_init(void) {
    sigemptyset(&g_set);
    sigaddset(&g_set, SIGINT);
    sigaddset(&g_set, SIGTERM);
    sigaddset(&g_set, SIGHUP);
    int rc = pthread_sigmask(SIG_BLOCK, &g_set, NULL);
    CHECK(rc == 0, "pthread_sigmask failed: %s", strerror(rc));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&g_thread, &attr, signal_thread, NULL);
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

int stop_signal_received(void) { return atomic_load(&g_signal); }

void stop_set_run(const char *db_path, int64_t run_id, int rank, int world, const char *resume_command) {
    pthread_mutex_lock(&g_mu);
    snprintf(g_target.db, sizeof g_target.db, "%s", db_path ? db_path : "");
    snprintf(g_target.resume, sizeof g_target.resume, "%s", resume_command);
    g_target.run = run_id;
    g_target.rank = rank;
    g_target.world = world;
    g_target.active = 1;
    pthread_mutex_unlock(&g_mu);
}

void stop_clear_run(void) {
    pthread_mutex_lock(&g_mu);
    g_target.active = 0;
    pthread_mutex_unlock(&g_mu);
}

int stop_record_failure_as(const char *message) {
    pthread_mutex_lock(&g_mu);
    int known = g_target.active;
    if (known && g_target.db[0]) rundb_mark_run(g_target.db, g_target.run, "failed", message);
    g_target.active = 0;
    pthread_mutex_unlock(&g_mu);
    return known;
}

int stop_record_failure(const char *message) {
    pthread_mutex_lock(&g_mu);
    int known = g_target.active;
    if (known && g_target.db[0]) {
        char msg[2600];
        snprintf(msg, sizeof msg, "rank %d: %s", g_target.rank, message);
        rundb_mark_run(g_target.db, g_target.run, "failed", msg);
    }
    g_target.active = 0;
    pthread_mutex_unlock(&g_mu);
    return known;
}
