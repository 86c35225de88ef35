// stop.h — how a run learns that it must stop, on any rank, and what it records: every
// signal that ends or warns a process on a workstation or under a cluster scheduler is in
// one table (stop.c SIGNALS, printed by `build/train --signals`, docs/reliability.md) with
// what this program does with it:
//   stop        INT, TERM, HUP, QUIT, ALRM, PWR (Ctrl-C, `kill`, mpirun passing a signal
//               on, a closed terminal, a timer, a power failure): the run stops after the
//               current step (its checkpoint, if one is due), recorded 'interrupted'
//   checkpoint  USR1, USR2, XCPU (a scheduler's warning before the end of a job: Slurm's
//               --signal, SGE's -notify, a CPU-time limit): the same, and a checkpoint is
//               written at that step, so the resume loses nothing
//   ignored     PIPE: a closed standard output (`build/train ... | head -1`) is found where
//               it happens (stop_check_output) and stops the run as a PIPE would; XFSZ: a
//               write past the file-size limit fails with EFBIG and the writer reports it
//   default     the crashes (SEGV, BUS, ILL, FPE, ABRT, TRAP, SYS: a core for the debugger),
//               KILL and STOP (they cannot be caught), job control (TSTP, TTIN, TTOU,
//               CONT), those ignored by default (CHLD, URG, WINCH), the profilers' PROF and
//               VTALRM, IO (never armed), STKFLT and the real-time signals (libraries');
//               a run ended by one is recorded by the other ranks' watchdog, by exp, or
//               'interrupted' (its process gone) when the database is next opened
//
// A signal is received by a dedicated thread (the signals are blocked in every other
// thread), not by an asynchronous handler, so it can write to SQLite at once: mpirun
// sends SIGTERM to every rank and SIGKILL one second later, far sooner than a long step
// ends. On the first signal the thread marks the run 'interrupted' (if it is still
// 'running'), prints the resume command, and sets the flag that the step loop reads at
// the end of the step (all ranks stop after the same step). A second signal exits at
// once. A signal before the run is registered exits at once (nothing to record).
#pragma once
#include <stdint.h>

typedef enum { STOP_SIG_STOP, STOP_SIG_CHECKPOINT, STOP_SIG_IGNORED, STOP_SIG_DEFAULT } StopSignalAction;
typedef struct {
    int sig;                  // 0: the real-time signals, SIGRTMIN..SIGRTMAX
    const char *name;         // "TERM"
    StopSignalAction action;
    const char *why;          // who sends it and why it is treated so
} StopSignal;
// The table (n entries): every standard signal, once.
const StopSignal *stop_signal_table(int *n);
// The action for sig (a real-time signal: STOP_SIG_DEFAULT).
StopSignalAction stop_signal_action(int sig);
const char *stop_action_name(StopSignalAction a);
// Is standard output a pipe whose reader is gone? Then this process stops as if it had
// received SIGPIPE (recorded 'interrupted' when a run is set). The step loop asks once a step.
void stop_check_output(void);

// First thing in main(), before MPI_Init or any other thread exists.
void stop_signals_init(void);
// The first signal received (0 = none).
int stop_signal_received(void);
// From now on a signal or a fatal error on this rank is recorded for this run: db_path
// ("" = no database), run id, this rank, and the command that resumes the run.
void stop_set_run(const char *db_path, int64_t run_id, int rank, int world, const char *resume_command);
// The run is over (or being ended by this rank): signals only set the flag.
void stop_clear_run(void);
// A fatal error on this rank (the die hook of a rank other than 0): record the run as
// 'failed' with "rank R: message" and clear the target. Returns 1 if a run was known.
int stop_record_failure(const char *message);
// The same with `message` recorded as it is (the watchdog: "rank 1 ... stopped progressing").
int stop_record_failure_as(const char *message);
