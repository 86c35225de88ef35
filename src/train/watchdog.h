// watchdog.h — liveness of every rank of a run: a heartbeat per rank and a watchdog on
// every rank that reads the others' (without them a rank stopped by kill -STOP left rank 0
// spinning in a collective forever, the run 'running', and a rank killed by kill -9 was
// recorded as "Terminated received by rank 0").
//
// Each rank's heartbeat thread rewrites <run folder>/.heartbeat/rank_<R> once a second (the
// folder and the file made and removed through core/outdir.h: never through a link; a file
// of the same name is replaced only if it is a heartbeat, and removed only if it is still
// this rank's own)
// ("session S / pid P / host H / beat N / state running|finished"). Each rank's watchdog thread reads
// every other rank's file once a second and, with its own clock (no clock is compared
// across hosts), decides:
//   stalled   the beat counter did not change for WATCHDOG_TIMEOUT_S seconds (default 30;
//             env BOOST_LIVENESS_TIMEOUT, 2..3600): the process is stopped, frozen or cut off
//   dead      same host, and its process is gone (or a zombie) before it said `finished`
// The first rank to see it records the run 'failed' naming the rank ("rank 1 (pid P on
// H) stopped progressing: no heartbeat for 30 s"), prints it, SIGKILLs the stalled
// process when it is on this host, and exits 1: mpirun then ends the job. A normal end
// writes `finished` first, so a rank that ends before another is never taken for dead.
// Works where the ranks share the run folder's file system (one host, or a shared one).
#pragma once
#include <stddef.h>

#define WATCHDOG_TIMEOUT_S 30

// Start this rank's heartbeat and watchdog for the run folder `run_dir`. `session` is the
// same on every rank of this start of the run (rank 0's choice, broadcast): a heartbeat
// file left by an earlier start (a resumed run's dead ranks) is not mistaken for a peer.
// record_failure records the run 'failed' with the message and returns 1, or 0 if the run
// had already ended (stop.h stop_record_failure_as; handed in so that the watchdog and the
// signal thread, which asks watchdog_dead_peer, do not call each other in a circle).
void watchdog_start(const char *run_dir, int rank, int world, unsigned long long session,
                    int (*record_failure)(const char *message));
// This rank ended its loop normally: say `finished`, stop both threads, remove the file.
void watchdog_finish(void);
// Is a peer's process gone (on this host) without having said `finished`? 1 and a
// message naming it ("rank 1 (pid P on H) died: ..."), else 0. For the signal thread:
// mpirun's SIGTERM after a rank was killed is that rank's death, not an interruption.
int watchdog_dead_peer(char *msg, size_t n);
// The timeout in effect (seconds).
int watchdog_timeout_s(void);
