// schedule.h — pipeline-parallel schedules (pure functions, no MPI).
//
// A schedule is, per stage p of P, the order of compute steps over M micro-batches:
//   1F1B (Megatron, non-interleaved): min(P−p−1, M) warm-up forwards, then one forward /
//         one backward alternately, then the remaining backwards. At most min(P−p, M)
//         micro-batches are in flight (forwarded, not yet backwarded) on stage p.
//   GPipe: all M forwards, then all M backwards (M in flight).
// Backwards run in micro-batch order in both.
//
// schedule_actions() expands the steps into what a stage executes, with its communication:
// a forward of m is preceded by receiving m's activation from stage p−1 and followed by
// sending it to p+1; a backward is preceded by receiving the gradient from p+1 and followed
// by sending it to p−1 (none of these on the first / last stage). With fuse = 1, a
// send-forward immediately followed by a receive-backward (both with p+1) becomes one
// exchange SEND_FWD_RECV_BWD, and a send-backward followed by a receive-forward (both with
// p−1) becomes SEND_BWD_RECV_FWD — Megatron's send_forward_recv_backward /
// send_backward_recv_forward, executed with comm_sendrecv. The fused lists are
// deadlock-free with blocking (rendezvous) sends; the unfused 1F1B list is not (stage p
// sends forward to p+1 while p+1 sends backward to p) — schedule_simulate shows both.
#pragma once
#include <stddef.h>

typedef enum { SCHED_1F1B, SCHED_GPIPE } PipeSchedule;
typedef enum { PIPE_FORWARD, PIPE_BACKWARD } PipeOp;
typedef struct { PipeOp op; int mb; } PipeStep;

// Suggested tags: one per direction (MPI keeps messages of one (source, tag, communicator)
// in order, and the order of micro-batches between two stages is fixed by the schedule).
#define PIPE_TAG_FWD 1
#define PIPE_TAG_BWD 2

// Writes 2·n_micro steps to out and returns that count.
int schedule_steps(PipeSchedule kind, int stage, int n_stages, int n_micro, PipeStep *out);
// Forwards before the first backward: min(P−p−1, M) for 1F1B, M for GPipe.
int schedule_warmup(PipeSchedule kind, int stage, int n_stages, int n_micro);
// Largest number of micro-batches forwarded and not yet backwarded, over the sequence.
int schedule_max_in_flight(const PipeStep *steps, int n_steps);
const char *schedule_name(PipeSchedule kind);   // "1f1b", "gpipe"

typedef enum {
    PA_FORWARD, PA_BACKWARD,
    PA_RECV_FWD,            // activation of mb from stage p−1
    PA_SEND_FWD,            // activation of mb to stage p+1
    PA_RECV_BWD,            // gradient of mb from stage p+1
    PA_SEND_BWD,            // gradient of mb to stage p−1
    PA_SEND_FWD_RECV_BWD,   // send activation of mb to p+1, receive gradient of mb_recv from p+1
    PA_SEND_BWD_RECV_FWD,   // send gradient of mb to p−1, receive activation of mb_recv from p−1
} PipeActionKind;
typedef struct { PipeActionKind kind; int mb, mb_recv; } PipeAction;   // mb_recv: fused kinds only

// Upper bound on the actions of n_steps steps (3 per step).
#define SCHEDULE_MAX_ACTIONS(n_steps) (3 * (n_steps))
// Returns the number of actions written to out (room for SCHEDULE_MAX_ACTIONS(n_steps)).
int schedule_actions(const PipeStep *steps, int n_steps, int stage, int n_stages, int fuse, PipeAction *out);
const char *schedule_action_name(PipeActionKind k);
// "send_fwd_recv_bwd(3,1)" style text for messages.
void schedule_action_str(const PipeAction *a, char *buf, size_t n);

// Discrete-event simulation of n_stages stages, stage p executing acts[p][0 .. n_acts[p]):
// a forward costs t_fwd, a backward t_bwd; communication is instantaneous and blocking with
// rendezvous semantics (a send completes only when the peer is at the matching receive;
// the two halves of a fused exchange complete independently). Returns the makespan, or −1
// with the reason in msg on a deadlock, a message received out of order (different
// micro-batch than the one sent) or a peer outside [0, P). timing (optional): timing[p][j]
// gets start/end of the j-th compute action of stage p.
typedef struct { long start, end; } PipeTiming;
long schedule_simulate(int n_stages, const PipeAction *const *acts, const int *n_acts, int t_fwd,
                       int t_bwd, PipeTiming *const *timing, char *msg, size_t n);
