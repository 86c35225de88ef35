// comm.h — the process grid (TP × PP × DP) and the one communication interface of the
// engine. Every collective and point-to-point call names its group, the training phase and
// the layer it serves, and is accounted per (kind, phase, group, layer): calls, elements,
// bytes, seconds. docs/parallelism.md states the conventions; in short:
//
//   rank layout   world_rank = tp_rank + tp·(dp_rank + dp·pp_rank)   (TP fastest, then DP, PP)
//   elements      the length of the logical buffer of the operation on this rank:
//                   all-reduce: n (the buffer)          all-gather: n_chunk·g (the full output)
//                   reduce-scatter: n_chunk·g (input)   broadcast: n (root and receivers)
//                   send / recv: n                      barrier: 0
//   bytes         elements × element size (float: c->account_float_bytes, default 4;
//                 double 8; int32 4; byte 1)
//   seconds       MPI_Wtime around the call, or CUDA events around it on the stream (NCCL);
//                 0 in account-only mode
//   size-1 group  the operation is a local no-op (all-gather/reduce-scatter copy in → out,
//                 in every mode, skipped for NULL buffers) and is NOT counted: no
//                 communication happens.
//   account-only  c->account_only = 1: every call on a group of size > 1 is counted exactly
//                 as it would be, and no data moves: those buffers are neither read nor
//                 written (they may be NULL).
//
// Backend seam: the accounting front end (comm.c) calls a CommBackend table of function
// pointers: comm_mpi.c (host buffers, or device buffers staged through page-locked host
// memory) and comm_nccl.c (device buffers, on the CUDA back end's compute stream). The
// grid and the communicators stay MPI (NCCL's unique id travels by MPI_Bcast on each
// group). docs/gpu.md says which is chosen when.
//
// Device buffers: comm_set_device tells the Comm that the buffers of its (non-host)
// operations live on a back end (backend/backend.h). On one whose memory the host cannot address
// (b->device_memory), the MPI back end copies to host scratch, calls MPI and copies back,
// and the front end's local copies (size-1 groups, comm_all_gather_cols' placement) go
// through the back end's copy ops. Accounting is the same whichever back end moves data.
//
// Timing: the front end times each call with MPI_Wtime around the back end's call, unless
// the back end has time_begin/time_end (NCCL: CUDA events on the stream, since the call
// only enqueues work); then the back end adds the seconds to the call's row itself, once
// the events have completed (comm_flush_timing, called by every query of the table).
//
// Waiting apart from moving data: a collective cannot finish before the last rank of its
// group arrives, so a rank's time in it is waiting for the latest one plus the data's
// movement. Every rank leaves at about the same moment, so the rank that arrived last spent
// the least time in the call: that time is the movement, and the rest of any rank's time
// the wait. comm_measure_waits (after a step, outside its timed region) reduces each
// host-timed collective's seconds over the group (MPI_MIN, to rank 0's groups only: rank 0's
// rows are the ones stored) and books wait = own - min on world rank 0. No clocks are
// compared across ranks (it holds across nodes). Pipeline sends and receives are not split
// (their waiting is the pipeline's bubble); a broadcast's root may leave before the data
// arrives, so its receivers' wait is an upper bound. The NCCL back end is not split (its
// calls are timed on the device, asynchronously): nothing is exchanged there.
#pragma once
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../core/check.h"
#include "../core/phase.h"

// Every MPI call goes through CHECK_MPI: file:line, the call, MPI's own error text, exit 1.
// comm_init sets MPI_ERRORS_RETURN on the world communicator so errors reach this check.
#define CHECK_MPI(call) do { int rc_mpi_ = (call); if (rc_mpi_ != MPI_SUCCESS) { \
    char es_mpi_[MPI_MAX_ERROR_STRING]; int el_mpi_ = 0; MPI_Error_string(rc_mpi_, es_mpi_, &el_mpi_); \
    die_at(__FILE__, __LINE__, "%s failed: %s", #call, es_mpi_); } } while (0)

typedef enum { GROUP_TP, GROUP_DP, GROUP_PP, GROUP_WORLD, GROUP_COUNT } CommGroup;
typedef Phase CommPhase;   // core/phase.h: forward, backward, recompute, optimizer, pipeline, other
typedef enum { COMM_ALL_REDUCE, COMM_ALL_GATHER, COMM_REDUCE_SCATTER, COMM_BROADCAST, COMM_SEND,
               COMM_RECV, COMM_BARRIER, COMM_KIND_COUNT } CommKind;
// DTYPE_BF16: bfloat16 payloads of bf16 runs (sums are formed in fp32 and rounded once per
// reduction step, as NCCL does; the MPI back end uses a user-defined op).
typedef enum { DTYPE_F32, DTYPE_F64, DTYPE_I32, DTYPE_U8, DTYPE_BF16, DTYPE_COUNT } CommDtype;
typedef enum { OP_SUM, OP_MAX, OP_MIN } CommOp;

// Wildcard for comm_stats_sum (kind, phase, group or layer).
#define COMM_ANY (-2)

// wait_seconds: of `seconds`, the time spent waiting for the group's last rank, summed over
// the waited_calls calls whose wait was measured (comm_measure_waits; world rank 0 only):
// the split is known for the row when waited_calls == calls. started_calls, started_bytes: of
// calls and bytes, those made through comm_*_start (CommRecord.started).
typedef struct {
    uint64_t calls, elements, bytes; double seconds; double wait_seconds; uint64_t waited_calls;
    uint64_t started_calls, started_bytes;
} CommStat;
// One exported row (SQLite comm table: run_id, step, kind, phase, [group,] layer, calls,
// elements, bytes, seconds — run_id and step are the caller's).
typedef struct { CommKind kind; CommPhase phase; CommGroup group; int layer; CommStat s; } CommStatRow;

typedef struct Comm Comm;
struct Backend;   // backend/backend.h

// One accounted call, as the observer sees it (the simulator's trace): the group's size and
// the bytes at the accounted element size. A sendrecv exchange is two records (send, recv).
// A started collective (comm_*_start, with c->overlap) is two records: COMM_RECORD_START when
// it is started (counted then), and COMM_RECORD_WAIT where the compute waits for it (the same
// kind, phase, group, layer, elements and bytes; not a call of its own: counted nothing).
// seq numbers the started calls of a group from 1, the same on every member. started: the call
// was made through a start (either overlap), which a back end may run with another algorithm
// than its blocking form (MPI: the engine's ordered reduction; docs/performance-model.md §17).
typedef enum { COMM_RECORD_CALL = 0, COMM_RECORD_START, COMM_RECORD_WAIT } CommRecordType;
typedef struct {
    CommKind kind; CommPhase phase; CommGroup group; int layer;
    int group_size;
    uint64_t elements, bytes;
    CommRecordType type;          // CALL: a blocking call
    uint64_t seq;                 // START / WAIT: the started call
    int started;                  // made through comm_*_start (CALL: the blocking form of one)
} CommRecord;
typedef void (*CommObserver)(void *ctx, const CommRecord *r);
// A started call (comm_*_start): its number in its Comm, from 1; COMM_DONE = 0: none, or complete.
typedef uint64_t CommHandle;
#define COMM_DONE ((CommHandle)0)

// Backend: called only for groups of size > 1 and never in account-only mode. Peers and
// roots are ranks inside the group. Element counts are size_t; a backend with a smaller
// native count (MPI's int) splits the message itself.
typedef struct CommBackend {
    const char *name;
    void (*all_reduce)(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op);
    // in == out + group_rank·n_chunk means "in place"
    void (*all_gather)(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t);
    // in == out means "in place": out holds the g·n_chunk input, its first n_chunk get the result
    void (*reduce_scatter)(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t, CommOp op);
    void (*broadcast)(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root);
    void (*send)(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag);
    void (*recv)(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag);
    void (*sendrecv)(Comm *c, CommGroup g, const void *sbuf, size_t ns, int dest, int stag,
                     void *rbuf, size_t nr, int src, int rtag, CommDtype t);
    void (*barrier)(Comm *c, CommGroup g);
    // Started collectives (comm_*_start): each returns the back end's request, which `wait`
    // completes (the buffers are the caller's again: a GPU's compute stream is ordered after
    // the call). With c->overlap == 0 the front end calls `wait` right after the start (the
    // blocking form; NCCL then runs the call on the compute stream). `test` (optional) lets a
    // started request advance without blocking (MPI: a test call; progress needs MPI calls).
    // With time_end the back end books, in c->stats[cell].seconds, the compute's wait at `wait`.
    void *(*all_reduce_start)(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op);
    void *(*reduce_scatter_start)(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t, CommOp op);
    // buf [Σ counts]: piece i (counts[i] elements, pieces in group-rank order) summed over the
    // group into this rank's piece, in place; the other pieces are left as they were
    void *(*reduce_scatter_v_start)(Comm *c, CommGroup g, void *buf, const size_t *counts, CommDtype t, CommOp op);
    void (*wait)(Comm *c, void *req, size_t cell);
    void (*test)(Comm *c, void *req);
    // Optional (NULL: the front end times with MPI_Wtime). time_begin before the call;
    // time_end after it with the index of the table cell the call is counted in
    // (c->stats[cell]); the back end adds the call's seconds to c->stats[cell].seconds by
    // the next time_flush at the latest (which may wait for the device).
    void (*time_begin)(Comm *c);
    void (*time_end)(Comm *c, size_t cell);
    void (*time_flush)(Comm *c);
    void (*destroy)(Comm *c);       // frees c->backend_state (comm_free); NULL: nothing to free
} CommBackend;
// The call a cell of the accounting table counts, for a back end's messages:
// "all_reduce over tp (forward, layer 3)".
void comm_cell_describe(const Comm *c, size_t cell, char *buf, size_t n);
extern const CommBackend comm_backend_mpi;
// MPI on host buffers, never staged: what the comm_host_* operations call (comm_mpi.c).
extern const CommBackend comm_backend_mpi_host;

struct Comm {
    int tp, pp, dp, world;            // grid; world = tp·pp·dp
    int rank;                         // world rank
    int tp_rank, dp_rank, pp_rank;    // coordinates
    int pp_prev, pp_next;             // world ranks of the neighbouring stages (same tp, dp); -1 at the ends
    int size[GROUP_COUNT];            // group sizes: tp, dp, pp, world
    int grank[GROUP_COUNT];           // this rank inside each group: tp_rank, dp_rank, pp_rank, rank
    int is_virtual;                   // comm_init_virtual: no MPI at all, account_only forced
    int account_only;                 // count every call, move no data
    int account_float_bytes;          // bytes accounted per float element (4; 2 to account as bf16)
    size_t mpi_max_count;             // largest count per MPI call (INT_MAX; tests lower it)
    MPI_Comm mpi[GROUP_COUNT];        // split communicators (world is a dup of MPI_COMM_WORLD)
    const CommBackend *backend;
    const CommBackend *host_backend;  // what the comm_host_* operations call (comm_backend_mpi_host)
    void *backend_state;              // the backend's own (NCCL communicators, events)
    void *scratch; size_t scratch_bytes;   // the backend's (chunked collectives)
    void *gbuf; size_t gbuf_bytes;         // comm_all_gather_cols' staging buffer (on the device, if any)
    // comm_set_device: the back end the buffers live on (NULL: host memory), and the
    // page-locked host memory the MPI back end stages device buffers through.
    struct Backend *device;
    void *(*host_alloc)(size_t bytes);     // NULL: malloc
    void (*host_free)(void *p);
    void *stage[2]; size_t stage_bytes[2];
    int n_layers;                     // accounting table rows: layers -1 .. n_layers-1
    CommStat *stats;                  // [kind][phase][group][n_layers + 1]
    CommObserver observer;            // called for every accounted call (NULL = none)
    void *observer_ctx;
    // the collectives timed on the host since comm_stats_reset, per group in call order: the
    // table cell and the seconds of each (comm_measure_waits)
    struct CommTimedCall { size_t cell; double seconds; } *timed[GROUP_COUNT];
    int n_timed[GROUP_COUNT], cap_timed[GROUP_COUNT];
    // Started collectives (comm_*_start; docs/parallelism.md §9). overlap: 1 = they run beside
    // the compute until their comm_wait (parallel.overlap, the default); 0 = each completes at
    // its start, on the compute stream (the blocking form, which gives the same bits).
    int overlap;
    struct CommStarted {
        int active; CommGroup group; CommKind kind; CommPhase phase; int layer;
        CommHandle id;                // its handle
        uint64_t seq, elements, bytes;
        size_t cell;
        double seconds;               // the host's time in its start and wait (no time_end)
        void *req;                    // the back end's request (NULL in account-only mode)
    } *started;
    int cap_started;
    CommHandle last_id;               // the handles given so far
    int outstanding[GROUP_COUNT];     // started and not yet waited, per group
    uint64_t started_seq[GROUP_COUNT];
    MPI_Comm mpi_async[GROUP_COUNT];  // the MPI back end's started calls' own communicators (a
                                      // dup of mpi[g]: their messages never meet a blocking call's)
};

// ---- process grid (grid.c) ----
// Pure: 0 if tp, pp, dp ≥ 1 and tp·pp·dp == world (world ≤ 0: only the factors are checked);
// else 1 and a one-line reason in msg ("the process grid tp×pp×dp = 2×1×2 = 4 needs 4 ranks,
// but mpirun started 3").
int grid_check(int tp, int pp, int dp, int world, char *msg, size_t n);
static inline int grid_world_rank(int tp, int dp, int tp_rank, int dp_rank, int pp_rank) {
    return tp_rank + tp * (dp_rank + dp * pp_rank);
}
void grid_coords(int tp, int dp, int world_rank, int *tp_rank, int *dp_rank, int *pp_rank);
// The world rank of member i of group g, as seen from this rank (the TP-fastest layout).
static inline int grid_member(const Comm *c, CommGroup g, int i) {
    switch (g) {
    case GROUP_TP: return grid_world_rank(c->tp, c->dp, i, c->dp_rank, c->pp_rank);
    case GROUP_DP: return grid_world_rank(c->tp, c->dp, c->tp_rank, i, c->pp_rank);
    case GROUP_PP: return grid_world_rank(c->tp, c->dp, c->tp_rank, c->dp_rank, i);
    default: return i;
    }
}

// After MPI_Init (the caller initialises and finalises MPI). A world size ≠ tp·pp·dp is bad
// input: rank 0 prints the error and a launch hint, every rank finalises MPI and exits 2.
void comm_init(Comm *c, int tp, int pp, int dp);
// No MPI: a grid seen from world rank 0 whose groups pretend to have their configured sizes;
// account_only is set and must stay set (a call that would move data on a group of size > 1
// dies). For computing paper-scale communication tables. comm_init_virtual(c, 1, 1, 1) is
// also the single-process grid: every group has size 1, every call is local and uncounted.
void comm_init_virtual(Comm *c, int tp, int pp, int dp);
// The same grid seen from `world_rank` (its tp/dp/pp coordinates): the memory report and the
// simulator look at each pipeline stage this way.
void comm_init_virtual_at(Comm *c, int tp, int pp, int dp, int world_rank);
// Size the accounting table for layers -1 .. n_layers-1 (zeroes it). comm_init sizes it for
// layer -1 only; a call naming a layer outside the table is an internal error.
// The grid of a single process: a virtual 1×1×1 grid shared by everything that runs
// without MPI (every group has one member, so no collective is issued or counted).
Comm *comm_single(void);
void comm_set_n_layers(Comm *c, int n_layers);
void comm_free(Comm *c);          // frees communicators and tables; does not finalise MPI
// The ranks of this run sharing this node (1 on a virtual grid). Collective over the world.
int comm_ranks_on_node(const Comm *c);
// The buffers of every later operation live on back end b (NULL: host memory again).
// host_alloc/host_free: page-locked host memory for the MPI back end's staging (NULL:
// malloc/free). Call before the first operation that uses such buffers, on every rank.
void comm_set_device(Comm *c, struct Backend *b, void *(*host_alloc)(size_t), void (*host_free)(void *));
// Switch to the NCCL back end (comm_nccl.c) for buffers on the CUDA back end b: one NCCL
// communicator per group of size > 1 (tp, dp, pp, world), created from a unique id that
// group rank 0 broadcasts over MPI; every call is queued on b's compute stream and timed
// with CUDA events. Collective over the world (every rank calls it). Returns 0, or 1 and
// a one-line reason in why when any rank cannot (built without CUDA, a virtual grid, b not
// a CUDA back end, two ranks on one GPU — NCCL refuses that), in which case no rank
// switches and the Comm keeps the MPI back end (with staging, after comm_set_device).
int comm_use_nccl(Comm *c, struct Backend *b, char *why, size_t why_len);
// Before the back end that comm_set_device / comm_use_nccl named is freed: destroys the NCCL
// communicators (back to MPI), frees the staging and gather buffers (device memory), and
// leaves the Comm on host memory. comm_free does it too (too late if the back end is gone).
void comm_detach_device(Comm *c);
// Resolve pending device timings into the table (waits for the timed calls to finish).
void comm_flush_timing(Comm *c);
// Collective over the world, on every rank at the same point (after a step): split the
// collectives timed since comm_stats_reset into waiting and moving data (the header's
// "Waiting apart from moving data"); world rank 0's table gains their wait_seconds. One
// MPI_Reduce of one double per call, per group of size > 1 that holds world rank 0; nothing
// on a virtual grid, in account-only mode or on the NCCL back end.
void comm_measure_waits(Comm *c);

// ---- operations (comm.c) ----
// One entry per collective; the element type is an argument (CommDtype t): DTYPE_F32 for
// fp32 activations and gradients, DTYPE_BF16 for those of bf16 runs, DTYPE_F64 for fp64
// sums (the head's softmax denominators), DTYPE_I32 / DTYPE_U8 for integer payloads.
// n, n_chunk, rows, cols_local count elements of type t.
// all-reduce in place over the group: op is OP_SUM, OP_MAX or OP_MIN.
void comm_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op,
                     CommPhase phase, int layer);
// in [n_chunk] → out [g·n_chunk], chunk of group rank i at out + i·n_chunk.
// in may be out + group_rank·n_chunk (in place); otherwise in and out must not overlap.
void comm_all_gather(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                     CommPhase phase, int layer);
// Gather along the last dim: in [rows, cols_local] (this rank's column block) →
// out [rows, g·cols_local], row-major, where group rank i's block occupies columns
// [i·cols_local, (i+1)·cols_local). One all-gather into scratch [g, rows, cols_local], then a
// local transpose of the blocks. Counted as one all-gather of rows·cols_local·g elements.
void comm_all_gather_cols(Comm *c, CommGroup g, const void *in, void *out, size_t rows,
                          size_t cols_local, CommDtype t, CommPhase phase, int layer);
// in [g·n_chunk] → out [n_chunk] = Σ over the group of chunk group_rank of everyone's input.
// in == out allowed (result in out's first n_chunk); otherwise they must not overlap.
void comm_reduce_scatter(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                         CommPhase phase, int layer);
void comm_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root,
                    CommPhase phase, int layer);
// Blocking point to point; peer is a rank inside group g; 0 ≤ tag ≤ 32767.
void comm_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag,
               CommPhase phase, int layer);
void comm_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag,
               CommPhase phase, int layer);
// Send to dest and receive from src at once (a deadlock-free exchange: the pipeline's
// send-forward/receive-backward). Each half has its own tag, as in MPI_Sendrecv: the
// peer's matching halves use the same tags (pipeline: activations PIPE_TAG_FWD, gradients
// PIPE_TAG_BWD, whether sent alone or in an exchange). Counted as one send (n_send; the
// exchange's seconds go here) and one recv (n_recv).
void comm_sendrecv(Comm *c, CommGroup g, const void *sendbuf, size_t n_send, int dest, int send_tag,
                   void *recvbuf, size_t n_recv, int src, int recv_tag, CommDtype t,
                   CommPhase phase, int layer);
void comm_barrier(Comm *c, CommGroup g, CommPhase phase, int layer);

// ---- operations on host memory ----
// The location of a buffer is part of the call, not state of the Comm. The operations above
// take buffers where comm_set_device says (a device back end's memory on a GPU run: model
// parameters, gradients, activations, workspace). These take host memory always (scalars
// and tables of the run loop: the step's loss sum, the squared gradient norm, per-rank
// totals, checkpoint blocks, the run's identity): MPI on the buffer itself, never staged
// and never NCCL, timed with MPI_Wtime, accounted in the same table as the others.
// tests/t_comm_location.sh checks that every host buffer in src/ goes through these.
void comm_host_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op,
                          CommPhase phase, int layer);
void comm_host_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root,
                         CommPhase phase, int layer);
void comm_host_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag,
                    CommPhase phase, int layer);
void comm_host_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag,
                    CommPhase phase, int layer);

// ---- started collectives (overlap) ----
// A collective started here and completed by comm_wait, so that the compute that does not
// need its buffers runs meanwhile: with c->overlap, NCCL runs it on the group's communication
// stream (after an event the compute stream records: the producers are done), and comm_wait
// makes the compute stream wait for its end (an event; the host does not wait); MPI starts
// non-blocking sends and receives and comm_wait completes them (comm_progress advances them
// in between: MPI progresses only inside MPI calls). Between start and wait the caller neither
// reads nor writes the call's buffers. A blocking (device-buffer) operation on a group first
// waits for that group's started calls, so one group's calls never run out of order.
//
// Bits: with c->overlap == 0 each start completes before it returns, on the compute stream
// (the blocking form): the same calls, so the same bits — whatever overlaps a call changes
// only when it runs. On MPI the order is moreover the project's own: every element is summed
// by one rank over the group in group-rank order ((v0 + v1) + v2 ...; bf16 rounded after each
// addition, as comm_bf16_reduce) and the sum sent to the others, so its bits do not depend on
// how a buffer is cut into calls either (the emulator's NCCL sums in the same order; NCCL
// itself sums in its algorithm's order, fixed for a given call). Accounting: counted when started (the
// same cell, elements and bytes as the blocking call); its seconds are what the caller lost
// to it — the host's time in start and wait (MPI), or the compute stream's stall at the wait
// (NCCL, CUDA events) — not its time on the wire, which overlapped compute; on MPI,
// comm_measure_waits splits those seconds as a blocking call's (less the group's least).
// Size-1 groups: a local no-op (in place: nothing; in → out: a copy), not counted, the handle
// done at once.
CommHandle comm_all_reduce_start(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op,
                                 CommPhase phase, int layer);
// As comm_reduce_scatter (in [g·n_chunk] → out [n_chunk]; in == out allowed).
CommHandle comm_reduce_scatter_start(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                                     CommPhase phase, int layer);
// ZeRO-1's form: buf [Σ counts] cut into g pieces in group-rank order (piece i: counts[i]
// elements, any of them 0); this rank's piece becomes the sum over the group, in place; the
// others are left as they were. Counted as one reduce-scatter of Σ counts elements.
CommHandle comm_reduce_scatter_v_start(Comm *c, CommGroup g, void *buf, const size_t *counts, CommDtype t,
                                       CommPhase phase, int layer);
// Complete a started call (*h becomes COMM_DONE; nothing to do when it is COMM_DONE or the
// call was completed already, by comm_wait_group).
void comm_wait(Comm *c, CommHandle *h);
// Every started call on group g (COMM_ANY: on every group), in the order they were started.
void comm_wait_group(Comm *c, int g);
// Let started calls advance without waiting for them (MPI: a test of each).
void comm_progress(Comm *c);

// ---- accounting ----
void comm_stats_reset(Comm *c);
// One cell, or a sum over any argument given as COMM_ANY (layer: -1 is a real row).
CommStat comm_stats_sum(const Comm *c, int kind, int phase, int group, int layer);
// Iterate the non-zero rows (calls > 0) in table order:
//   int it = 0; CommStatRow r; while (comm_stats_next(c, &it, &r)) { ... }
int comm_stats_next(const Comm *c, int *cursor, CommStatRow *row);
void comm_stats_print(const Comm *c, FILE *f);   // the non-zero rows as an aligned table
const char *comm_kind_name(CommKind k);     // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "send", "recv", "barrier"
const char *comm_phase_name(CommPhase p);   // "forward", "backward", "recompute", "optimizer", "pipeline", "other"
const char *comm_group_name(CommGroup g);   // "tp", "dp", "pp", "world"
size_t comm_dtype_size(CommDtype t);        // true in-memory size (4, 8, 4, 1, 2)

// The reduction of bf16 payloads that the MPI back end's user-defined MPI_Ops apply:
// inout[i] = bf16(op(float(in[i]), float(inout[i]))), the fp32 result rounded to nearest
// even (NaN stays NaN). Exposed for the tests.
void comm_bf16_reduce(const uint16_t *in, uint16_t *inout, size_t n, CommOp op);
