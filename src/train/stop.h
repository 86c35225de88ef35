// stop.h — how a run learns that it must stop, on any rank: SIGINT, SIGTERM or SIGHUP
// (Ctrl-C, `kill`, mpirun forwarding a signal, a batch system), and what it records.
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
