// stop.c — see stop.h.
#include "stop.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/check.h"
#include "../store/db.h"
#include "watchdog.h"

// ---- the table: every signal that ends or warns a process, and what this program does ---
static const StopSignal SIGNALS[] = {
    { SIGINT,    "INT",    STOP_SIG_STOP,       "Ctrl-C; exp and mpirun pass it on" },
    { SIGTERM,   "TERM",   STOP_SIG_STOP,       "kill, mpirun's end of a job, a scheduler's end of job or time limit" },
    { SIGHUP,    "HUP",    STOP_SIG_STOP,       "the terminal closed (ssh dropped)" },
    { SIGQUIT,   "QUIT",   STOP_SIG_STOP,       "Ctrl-\\ (its default, a core dump, would lose the run's end)" },
    { SIGALRM,   "ALRM",   STOP_SIG_STOP,       "a timer: timeout -s ALRM, a batch system's wall-clock alarm" },
    { SIGPWR,    "PWR",    STOP_SIG_STOP,       "power failure (a UPS daemon)" },
    { SIGUSR1,   "USR1",   STOP_SIG_CHECKPOINT, "a scheduler's warning before the end: Slurm --signal=USR1@T, SGE -notify; mpirun passes it on" },
    { SIGUSR2,   "USR2",   STOP_SIG_CHECKPOINT, "a scheduler's warning before the end: Slurm --signal=USR2@T, SGE -notify before SIGKILL" },
    { SIGXCPU,   "XCPU",   STOP_SIG_CHECKPOINT, "the CPU-time limit (ulimit -t, a scheduler's cputime): sent before SIGKILL" },
    { SIGPIPE,   "PIPE",   STOP_SIG_IGNORED,    "a closed output (| head): found by stop_check_output, the run stops as by a signal" },
    { SIGXFSZ,   "XFSZ",   STOP_SIG_IGNORED,    "the file-size limit: the write fails with EFBIG and its writer reports it (exit 2)" },
    { SIGSEGV,   "SEGV",   STOP_SIG_DEFAULT,    "a crash: the core is the debugger's" },
    { SIGBUS,    "BUS",    STOP_SIG_DEFAULT,    "a crash (a mapped file truncated, a bad address)" },
    { SIGILL,    "ILL",    STOP_SIG_DEFAULT,    "a crash (an instruction this CPU lacks)" },
    { SIGFPE,    "FPE",    STOP_SIG_DEFAULT,    "a crash (integer division by zero)" },
    { SIGABRT,   "ABRT",   STOP_SIG_DEFAULT,    "abort(): a library's or sanitizer's assertion" },
    { SIGTRAP,   "TRAP",   STOP_SIG_DEFAULT,    "a debugger's breakpoint" },
    { SIGSYS,    "SYS",    STOP_SIG_DEFAULT,    "a system call refused by a seccomp filter" },
    { SIGKILL,   "KILL",   STOP_SIG_DEFAULT,    "cannot be caught: mpirun after TERM, the OOM killer; recorded by peers, exp or the next open" },
    { SIGSTOP,   "STOP",   STOP_SIG_DEFAULT,    "cannot be caught: a stopped rank is named by the other ranks' watchdog" },
    { SIGTSTP,   "TSTP",   STOP_SIG_DEFAULT,    "Ctrl-Z: job control pauses the run, fg continues it" },
    { SIGTTIN,   "TTIN",   STOP_SIG_DEFAULT,    "job control: a background read of the terminal" },
    { SIGTTOU,   "TTOU",   STOP_SIG_DEFAULT,    "job control: a background write to the terminal" },
    { SIGCONT,   "CONT",   STOP_SIG_DEFAULT,    "job control: continue" },
    { SIGCHLD,   "CHLD",   STOP_SIG_DEFAULT,    "ignored by default (a child's end)" },
    { SIGURG,    "URG",    STOP_SIG_DEFAULT,    "ignored by default (socket out-of-band data)" },
    { SIGWINCH,  "WINCH",  STOP_SIG_DEFAULT,    "ignored by default (the terminal resized)" },
    { SIGPROF,   "PROF",   STOP_SIG_DEFAULT,    "a profiler's timer: a profiler installs its own handler" },
    { SIGVTALRM, "VTALRM", STOP_SIG_DEFAULT,    "a virtual timer: a profiler's or a library's" },
    { SIGIO,     "IO",     STOP_SIG_DEFAULT,    "asynchronous I/O: never armed by this program" },
    { SIGSTKFLT, "STKFLT", STOP_SIG_DEFAULT,    "unused on Linux" },
    { 0,         "RTMIN..RTMAX", STOP_SIG_DEFAULT, "real-time signals: the threads and MPI libraries' own" },
};
#define N_SIGNALS ((int)(sizeof SIGNALS / sizeof SIGNALS[0]))

const StopSignal *stop_signal_table(int *n) { *n = N_SIGNALS; return SIGNALS; }

StopSignalAction stop_signal_action(int sig) {
    for (int i = 0; i < N_SIGNALS; i++) if (SIGNALS[i].sig == sig && sig) return SIGNALS[i].action;
    return STOP_SIG_DEFAULT;
}

const char *stop_action_name(StopSignalAction a) {
    return a == STOP_SIG_STOP ? "stop" : a == STOP_SIG_CHECKPOINT ? "checkpoint" : a == STOP_SIG_IGNORED ? "ignored" : "default";
}

// The one file-scope state of src/train/, by necessity: signals belong to the process, not to
// a run, and the receiving thread (started before MPI_Init, before any run exists) and the
// forwarding handler (async: it can only read what is already in memory — pthread_kill is
// async-signal-safe, a lookup through a caller's pointer would not be handed in) have no
// caller to pass them a context. S.target is the run they record into (stop_set_run).
static struct {
    sigset_t set;              // the table's stop and checkpoint signals: blocked everywhere, taken by the thread
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

// Record the interruption (S.mu held, a run set): 'interrupted' with the signal and the
// resume command; one rank prints the hint (every rank may get the signal from mpirun).
static void interrupt(int sig, const char *resume) {
    char msg[3000];
    int save = stop_signal_action(sig) == STOP_SIG_CHECKPOINT;
    if (sig == SIGPIPE)
        snprintf(msg, sizeof msg, "%s: the standard output of rank %d of %d (pid %d) was closed (the command reading it "
                 "ended); resume with: %s", strsignal(sig), S.target.rank, S.target.world, (int)getpid(), resume);
    else
        snprintf(msg, sizeof msg, "%s received by rank %d of %d (pid %d)%s; resume with: %s", strsignal(sig),
                 S.target.rank, S.target.world, (int)getpid(),
                 save ? " (a warning before the end of the job: a checkpoint is written at this step)" : "", resume);
    if (S.target.db[0]) rundb_mark_run(S.target.db, S.target.run, "interrupted", msg);
    if (S.target.rank == 0 || S.target.world == 1)
        fprintf(stderr, "\ninterrupted (%s): the run stops after the current step%s\nresume with: %s\n",
                strsignal(sig), save ? ", with a checkpoint" : "", resume);
}

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
        char msg[3000], dead[1024];   // (msg: a dead peer's end)
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
        interrupt(sig, S.target.resume);
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
    for (int i = 0; i < N_SIGNALS; i++)
        if (SIGNALS[i].action == STOP_SIG_STOP || SIGNALS[i].action == STOP_SIG_CHECKPOINT) sigaddset(&S.set, SIGNALS[i].sig);
    int rc = pthread_sigmask(SIG_BLOCK, &S.set, NULL);
    CHECK(rc == 0, "pthread_sigmask failed: %s", strerror(rc));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&S.thread, &attr, signal_thread, NULL);
    check_resource(rc, "starting the signal thread (pthread_create)");
    pthread_attr_destroy(&attr);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < N_SIGNALS; i++) {
        if (SIGNALS[i].action == STOP_SIG_DEFAULT) continue;
        sa.sa_handler = SIGNALS[i].action == STOP_SIG_IGNORED ? SIG_IGN : forward_to_signal_thread;
        CHECK_ERRNO(sigaction(SIGNALS[i].sig, &sa, NULL) != 0, "sigaction");
    }
}

void stop_check_output(void) {
    static int is_pipe = -1;
    if (is_pipe < 0) { struct stat st; is_pipe = fstat(STDOUT_FILENO, &st) == 0 && S_ISFIFO(st.st_mode); }
    if (!is_pipe || atomic_load(&S.signal)) return;
    struct pollfd p = { .fd = STDOUT_FILENO, .events = 0 };
    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLERR)) return;   // (POLLERR: the pipe's reader is gone)
    pthread_mutex_lock(&S.mu);
    if (S.target.active) interrupt(SIGPIPE, S.target.resume);
    pthread_mutex_unlock(&S.mu);
    atomic_store(&S.signal, SIGPIPE);
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
