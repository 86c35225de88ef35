// comm_nccl.c — the NCCL back end of the communication interface (CommBackend, comm.h),
// for buffers on the CUDA back end: every call is queued on that back end's compute
// stream, so a collective is ordered after the kernels that produced its buffer and before
// those that read it, and the host does not wait (except at a barrier).
//
//   communicators  one per group of size > 1 (tp, dp, pp, world), created in that order on
//                  every rank from a unique id that group rank 0 broadcasts over the
//                  group's MPI communicator (the groups of one kind partition the world,
//                  so the blocking inits cannot deadlock)
//   timing         CUDA events around each call on the stream (time_begin/time_end); the
//                  elapsed times reach the accounting table at the next query
//                  (time_flush), which waits for the events, so the training loop is not
//                  serialised by the measurement
//   p2p            ncclSend/ncclRecv; an exchange (the 1F1B send-forward/receive-backward)
//                  is one ncclGroupStart/End. NCCL has no tags: messages between two ranks
//                  match in the order they are posted, which the pipeline schedule fixes
//                  (tests/test_comm.c's schedule simulation)
//   barrier        an all-reduce of one int, then a stream synchronise
//   started calls  (comm.h: overlap) with c->overlap, on the communicator's own stream: the
//                  compute stream records an event, the group's stream waits for it (the
//                  producers are done), the call, an event there; comm_wait makes the compute
//                  stream wait for that one (the consumers come after) and books the compute
//                  stream's stall in the cell (CUDA events around the wait). The host waits for
//                  neither. Without c->overlap they run on the compute stream like the others.
//                  BOOST_OVERLAP_DROP_DEPENDENCY=producer|consumer (tests only) drops one of
//                  the two waits, so that a test can show the wrong result it causes
//   waiting        every host wait on the stream polls (below): this back end's own, and the
//                  CUDA back end's (to_host, sync, staging, results, frees), whose waits it
//                  takes over (Backend.set_wait) while NCCL shares the stream
//
// Every CUDA and NCCL call is checked (the library's error string, and NCCL's last error
// detail). Built only with CUDA (mk/gpu.mk defines BOOST_CUDA); otherwise comm_use_nccl
// says "built without CUDA". Which back end a run uses: gpu_setup (gpu_setup.h), docs/gpu.md.
#include "comm.h"
#include "../backend/backend.h"

#if defined(BOOST_CUDA) && !defined(BOOST_CUDA_EMU)
#include <cuda_runtime.h>
#include <nccl.h>
#include <time.h>

#define CHECK_CUDA(call) do { cudaError_t e_cu_ = (call); if (e_cu_ != cudaSuccess) \
    die_at(__FILE__, __LINE__, "%s failed: %s (%s)", #call, cudaGetErrorString(e_cu_), cudaGetErrorName(e_cu_)); } while (0)
#define CHECK_NCCL(call) do { ncclResult_t e_nc_ = (call); if (e_nc_ != ncclSuccess) { \
    const char *d_nc_ = ncclGetLastError(NULL); \
    die_at(__FILE__, __LINE__, "%s failed: %s%s%s", #call, ncclGetErrorString(e_nc_), \
           d_nc_ && *d_nc_ ? ": " : "", d_nc_ ? d_nc_ : ""); } } while (0)

// One issued call: its start and stop events (recorded before and after it on the stream), the
// table cell it is counted in, and when this rank first saw it running (start reached, stop
// not: 0 until then) — what the timeout measures.
typedef struct { cudaEvent_t start, stop; size_t cell; double running_since; } PendingTiming;

typedef struct {
    ncclComm_t comm[GROUP_COUNT];   // NULL for groups of size 1 (never called)
    cudaStream_t stream;            // the CUDA back end's compute stream
    cudaStream_t cstream[GROUP_COUNT];   // each communicator's stream for started calls (overlap)
    Backend *bk;                    // that back end (its host waits go through nccl_wait_event)
    int device;
    int *barrier_word;              // device int for the barrier's all-reduce
    cudaEvent_t open_start;         // the running call's start (time_begin → time_end)
    int open_active;                // between time_begin and time_end (the barrier waits there)
    double open_running_since;      // as PendingTiming.running_since, for that call
    PendingTiming *pending; int n_pending, cap_pending;
    int first_open;                 // pending[0 .. first_open) have completed (stream order)
    cudaEvent_t *pool; int n_pool, cap_pool;   // idle events
    cudaEvent_t *later; int n_later, cap_later;   // fences given back, idle once reached (event_get)
} NcclState;

static NcclState *state(Comm *c) { return (NcclState *)c->backend_state; }

static ncclDataType_t nccl_type(CommDtype t) {
    switch (t) {
    case DTYPE_F32:  return ncclFloat32;
    case DTYPE_F64:  return ncclFloat64;
    case DTYPE_I32:  return ncclInt32;
    case DTYPE_U8:   return ncclUint8;
    case DTYPE_BF16: return ncclBfloat16;
    default: DIE("comm: unknown dtype %d", (int)t);
    }
}
static ncclRedOp_t nccl_op(CommOp op) {
    switch (op) {
    case OP_SUM: return ncclSum;
    case OP_MAX: return ncclMax;
    case OP_MIN: return ncclMin;
    default: DIE("comm: unknown reduction op %d", (int)op);
    }
}
static ncclComm_t group_comm(Comm *c, CommGroup g) {
    ncclComm_t nc = state(c)->comm[g];
    CHECK(nc, "comm (nccl): no communicator for the %s group (size %d)", comm_group_name(g), c->size[g]);
    return nc;
}

// ---- operations (all on the compute stream; zero-length messages move nothing) ----
static void nccl_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op) {
    if (!n) return;
    CHECK_NCCL(ncclAllReduce(buf, buf, n, nccl_type(t), nccl_op(op), group_comm(c, g), state(c)->stream));
}

// NCCL's in-place all-gather is ours: in == out + rank·n_chunk.
static void nccl_all_gather(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t) {
    if (!n_chunk) return;
    CHECK_NCCL(ncclAllGather(in, out, n_chunk, nccl_type(t), group_comm(c, g), state(c)->stream));
}

// Ours "in place" (in == out) leaves the result at out's start; NCCL's leaves it at
// out + rank·n_chunk, so other ranks than 0 move it down afterwards (disjoint ranges).
static void reduce_scatter_on(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                              CommOp op, cudaStream_t on) {
    if (!n_chunk) return;
    size_t chunk = n_chunk * comm_dtype_size(t), me = (size_t)c->grank[g];
    if (in == out && me > 0) {
        char *mine = (char *)out + me * chunk;
        CHECK_NCCL(ncclReduceScatter(in, mine, n_chunk, nccl_type(t), nccl_op(op), group_comm(c, g), on));
        CHECK_CUDA(cudaMemcpyAsync(out, mine, chunk, cudaMemcpyDeviceToDevice, on));
        return;
    }
    CHECK_NCCL(ncclReduceScatter(in, out, n_chunk, nccl_type(t), nccl_op(op), group_comm(c, g), on));
}
static void nccl_reduce_scatter(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t, CommOp op) {
    reduce_scatter_on(c, g, in, out, n_chunk, t, op, state(c)->stream);
}

static void nccl_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root) {
    if (!n) return;
    CHECK_NCCL(ncclBroadcast(buf, buf, n, nccl_type(t), root, group_comm(c, g), state(c)->stream));
}

static void nccl_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag) {
    (void)tag;   // no tags in NCCL: order of posting matches sends to receives
    if (!n) return;
    CHECK_NCCL(ncclSend(buf, n, nccl_type(t), peer, group_comm(c, g), state(c)->stream));
}

static void nccl_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag) {
    (void)tag;
    if (!n) return;
    CHECK_NCCL(ncclRecv(buf, n, nccl_type(t), peer, group_comm(c, g), state(c)->stream));
}

// Both directions in one group: neither waits for the other (no deadlock whatever the
// peer's order), as MPI_Sendrecv.
static void nccl_sendrecv(Comm *c, CommGroup g, const void *sbuf, size_t ns, int dest, int stag,
                          void *rbuf, size_t nr, int src, int rtag, CommDtype t) {
    (void)stag; (void)rtag;
    NcclState *s = state(c);
    ncclComm_t nc = group_comm(c, g);
    CHECK_NCCL(ncclGroupStart());
    if (ns) CHECK_NCCL(ncclSend(sbuf, ns, nccl_type(t), dest, nc, s->stream));
    if (nr) CHECK_NCCL(ncclRecv(rbuf, nr, nccl_type(t), src, nc, s->stream));
    CHECK_NCCL(ncclGroupEnd());
}

// ---- started calls (comm.h: overlap) --------------------------------------------------------
// BOOST_OVERLAP_DROP_DEPENDENCY (tests only: tests/emu/cuda_emu_train.sh shows the results go
// wrong): producer = the communication stream does not wait for the compute stream before a
// started call; consumer = the compute stream does not wait for its end at comm_wait.
enum { DROP_NONE, DROP_PRODUCER, DROP_CONSUMER };
static int dropped_dependency(void) {
    static int d = -1;
    if (d < 0) {
        const char *v = getenv("BOOST_OVERLAP_DROP_DEPENDENCY");
        d = !v || !*v ? DROP_NONE : !strcmp(v, "producer") ? DROP_PRODUCER : !strcmp(v, "consumer") ? DROP_CONSUMER : -2;
        if (d == -2)
            die_input_hint("unset it (it exists to show a test the wrong results a missing dependency causes)",
                           "BOOST_OVERLAP_DROP_DEPENDENCY=%s is not producer or consumer", v);
        if (d != DROP_NONE) fprintf(stderr, "comm (nccl): BOOST_OVERLAP_DROP_DEPENDENCY=%s: the %s's wait is dropped "
                                    "(results will be wrong)\n", v, d == DROP_PRODUCER ? "communication stream" : "compute stream");
    }
    return d;
}

typedef struct { int inline_call; cudaEvent_t ready, done; } NcclStarted;
static cudaEvent_t event_get(NcclState *s);
static void event_put(NcclState *s, cudaEvent_t e);
static void event_put_later(NcclState *s, cudaEvent_t e);
// Where a started call runs: on the compute stream (no overlap: the blocking form), or on the
// group's stream after the compute stream's work so far (its event).
static NcclStarted *started_begin(Comm *c, CommGroup g, cudaStream_t *on) {
    NcclState *s = state(c);
    NcclStarted *r = xcalloc(1, sizeof *r);
    if (!c->overlap) { r->inline_call = 1; *on = s->stream; return r; }
    CHECK(s->cstream[g], "comm (nccl): no stream for the %s group", comm_group_name(g));
    r->ready = event_get(s);
    CHECK_CUDA(cudaEventRecord(r->ready, s->stream));
    if (dropped_dependency() != DROP_PRODUCER) CHECK_CUDA(cudaStreamWaitEvent(s->cstream[g], r->ready, 0));
    *on = s->cstream[g];
    return r;
}
static void *started_end(Comm *c, CommGroup g, NcclStarted *r) {
    if (r->inline_call) return r;
    NcclState *s = state(c);
    r->done = event_get(s);
    CHECK_CUDA(cudaEventRecord(r->done, s->cstream[g]));
    return r;
}
static void nccl_time_begin(Comm *c);
static void nccl_time_end(Comm *c, size_t cell);
// The compute stream waits for the call's end (the host does not); its stall is timed into the cell.
static void nccl_started_wait(Comm *c, void *p, size_t cell) {
    NcclStarted *r = p;
    if (!r->inline_call) {
        NcclState *s = state(c);
        nccl_time_begin(c);
        if (dropped_dependency() != DROP_CONSUMER) CHECK_CUDA(cudaStreamWaitEvent(s->stream, r->done, 0));
        nccl_time_end(c, cell);
        // (given back once reached: the emulator's events remember only their latest record)
        event_put_later(s, r->ready);
        event_put_later(s, r->done);
    }
    free(r);
}

static void *nccl_all_reduce_start(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op) {
    cudaStream_t on;
    NcclStarted *r = started_begin(c, g, &on);
    if (n) CHECK_NCCL(ncclAllReduce(buf, buf, n, nccl_type(t), nccl_op(op), group_comm(c, g), on));
    return started_end(c, g, r);
}
static void reduce_scatter_on(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                              CommOp op, cudaStream_t on);
static void *nccl_reduce_scatter_start(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                                       CommOp op) {
    cudaStream_t on;
    NcclStarted *r = started_begin(c, g, &on);
    reduce_scatter_on(c, g, in, out, n_chunk, t, op, on);
    return started_end(c, g, r);
}
// One ncclReduce per piece, rooted at its owner, in one group (in place on the root; NCCL has
// no reduce-scatter of unequal pieces).
static void *nccl_reduce_scatter_v_start(Comm *c, CommGroup g, void *buf, const size_t *counts, CommDtype t, CommOp op) {
    cudaStream_t on;
    NcclStarted *r = started_begin(c, g, &on);
    ncclComm_t nc = group_comm(c, g);
    size_t es = comm_dtype_size(t), off = 0;
    CHECK_NCCL(ncclGroupStart());
    for (int i = 0; i < c->size[g]; i++) {
        char *piece = (char *)buf + off * es;
        if (counts[i]) CHECK_NCCL(ncclReduce(piece, piece, counts[i], nccl_type(t), nccl_op(op), i, nc, on));
        off += counts[i];
    }
    CHECK_NCCL(ncclGroupEnd());
    return started_end(c, g, r);
}

// ---- waiting without hanging ----
// A dead peer leaves an NCCL kernel spinning forever, and a plain cudaEventSynchronize with
// it. Every wait polls instead — this back end's (the barrier, the timing flush, destroy) and,
// through the hook comm_use_nccl installs (Backend.set_wait), every host wait of the CUDA back
// end on the shared stream (to_host, sync, from_host's staging buffers, the gradient norm,
// frees): the event, then every communicator's asynchronous error, then whether an NCCL call
// has been running (its start event reached, its stop event not) for BOOST_NCCL_TIMEOUT_S
// seconds (default 600; 0 = no limit) — a collective whose peers never join it, not a long
// wait for compute. An error or the timeout aborts the communicators (ncclCommAbort) and dies
// with the reason — the die hook of the run loop records the run as failed with it
// (src/train/run.c). tests/emu/cuda_emu_train.sh shows both on the emulator's NCCL stand-in (a
// peer whose collective never completes; a peer whose communicator fails).
static double nccl_timeout_s(void) {
    static double t = -1;
    if (t < 0) {
        const char *v = getenv("BOOST_NCCL_TIMEOUT_S");
        char *end = NULL;
        t = v && *v ? strtod(v, &end) : 600.0;
        if (v && *v && (*end || t < 0))
            die_input_hint("unset it, or give seconds >= 0 (0: no limit)", "BOOST_NCCL_TIMEOUT_S=%s is not a number of seconds", v);
    }
    return t;
}
static void nccl_abort_all(Comm *c) {
    NcclState *s = state(c);
    for (int g = 0; g < GROUP_COUNT; g++)
        if (s->comm[g]) { (void)ncclCommAbort(s->comm[g]); s->comm[g] = NULL; }
}
// Dies (after aborting every communicator) if one failed asynchronously.
static void nccl_check_async(Comm *c, const char *what) {
    NcclState *s = state(c);
    for (int g = 0; g < GROUP_COUNT; g++) {
        if (!s->comm[g]) continue;
        ncclResult_t ae = ncclSuccess;
        CHECK_NCCL(ncclCommGetAsyncError(s->comm[g], &ae));
        if (ae == ncclSuccess || ae == ncclInProgress) continue;
        char detail[256];
        snprintf(detail, sizeof detail, "%s", ncclGetLastError(s->comm[g]) ? ncclGetLastError(s->comm[g]) : "");
        nccl_abort_all(c);
        DIE("comm (nccl): the %s communicator failed (seen while waiting for %s): %s%s%s (communicators aborted)", comm_group_name((CommGroup)g),
            what, ncclGetErrorString(ae), detail[0] ? ": " : "", detail);
    }
}
static int event_done(cudaEvent_t e) {
    cudaError_t q = cudaEventQuery(e);
    if (q != cudaSuccess && q != cudaErrorNotReady) CHECK_CUDA(q);
    return q == cudaSuccess;
}
// How long the oldest unfinished NCCL call has been running (0: none is running: the stream is
// busy with compute, or idle), and which. Calls complete in stream order, so only the first
// unfinished one is queried; during a call (the barrier's wait) that call is the open one,
// whose end is the awaited event.
static double running_for(NcclState *s, cudaEvent_t open_stop, double now, size_t *cell) {
    while (s->first_open < s->n_pending && event_done(s->pending[s->first_open].stop)) s->first_open++;
    cudaEvent_t start = NULL;
    double *since = NULL;
    if (s->first_open < s->n_pending) {
        PendingTiming *p = &s->pending[s->first_open];
        start = p->start; since = &p->running_since; *cell = p->cell;
    } else if (s->open_active && open_stop) {
        start = s->open_start; since = &s->open_running_since; *cell = (size_t)-1;
    }
    if (!start || !event_done(start)) return 0.0;
    if (*since == 0.0) *since = now;
    return now - *since;
}
static void nccl_wait_event(Comm *c, cudaEvent_t e, const char *what) {
    NcclState *s = state(c);
    double limit = nccl_timeout_s();
    for (;;) {
        int done = event_done(e);
        // also once the event has completed: work behind a failed collective completes too,
        // on garbage, and the host must not take its results (a copy to the host, the norm)
        nccl_check_async(c, what);
        if (done) return;
        size_t cell = 0;
        double ran = limit > 0 ? running_for(s, s->open_active ? e : NULL, MPI_Wtime(), &cell) : 0.0;
        if (ran > limit) {
            char call[160] = "a barrier";
            if (cell != (size_t)-1) comm_cell_describe(c, cell, call, sizeof call);
            nccl_abort_all(c);
            DIE("comm (nccl): rank %d: an NCCL %s has been running for %.0f s without completing while waiting for %s "
                "(a dead or stuck peer?); communicators aborted (BOOST_NCCL_TIMEOUT_S=%g sets the limit)",
                c->rank, call, ran, what, limit);
        }
        struct timespec ts = { 0, 100000 };   // 0.1 ms
        nanosleep(&ts, NULL);
    }
}

// The CUDA back end's host waits (Backend.set_wait) while NCCL shares its stream
static void nccl_backend_wait(void *ctx, void *event, const char *what) {
    nccl_wait_event((Comm *)ctx, (cudaEvent_t)event, what);
}

static cudaEvent_t event_get(NcclState *s);
static void event_put(NcclState *s, cudaEvent_t e);
static void nccl_barrier(Comm *c, CommGroup g) {
    NcclState *s = state(c);
    CHECK_NCCL(ncclAllReduce(s->barrier_word, s->barrier_word, 1, ncclInt32, ncclSum, group_comm(c, g), s->stream));
    cudaEvent_t e = event_get(s);
    CHECK_CUDA(cudaEventRecord(e, s->stream));
    nccl_wait_event(c, e, "a barrier");
    event_put(s, e);
}

// ---- timing with CUDA events ----
static cudaEvent_t event_get(NcclState *s) {
    for (int i = 0; i < s->n_later; )   // the fences given back whose record has been reached
        if (event_done(s->later[i])) { event_put(s, s->later[i]); s->later[i] = s->later[--s->n_later]; }
        else i++;
    if (s->n_pool) return s->pool[--s->n_pool];
    cudaEvent_t e;
    CHECK_CUDA(cudaEventCreate(&e));
    return e;
}
static void event_put_later(NcclState *s, cudaEvent_t e) {
    if (s->n_later == s->cap_later) {
        s->cap_later = s->cap_later ? 2 * s->cap_later : 64;
        cudaEvent_t *p = realloc(s->later, (size_t)s->cap_later * sizeof *p);
        CHECK(p, "comm (nccl): out of memory for %d events", s->cap_later);
        s->later = p;
    }
    s->later[s->n_later++] = e;
}
static void event_put(NcclState *s, cudaEvent_t e) {
    if (s->n_pool == s->cap_pool) {
        s->cap_pool = s->cap_pool ? 2 * s->cap_pool : 64;
        cudaEvent_t *p = xrealloc(s->pool, (size_t)s->cap_pool * sizeof *p);
        s->pool = p;
    }
    s->pool[s->n_pool++] = e;
}

// A flush waits for the device; bound the pending list so a long run without queries
// keeps a bounded number of events alive (a flush every 4096 calls).
#define MAX_PENDING 4096

static void nccl_time_flush(Comm *c) {
    NcclState *s = state(c);
    if (!s) return;
    for (int i = 0; i < s->n_pending; i++) {
        PendingTiming *p = &s->pending[i];
        float ms = 0;
        nccl_wait_event(c, p->stop, "a collective to complete");
        CHECK_CUDA(cudaEventElapsedTime(&ms, p->start, p->stop));
        c->stats[p->cell].seconds += ms * 1e-3;
        event_put(s, p->start);
        event_put(s, p->stop);
    }
    s->n_pending = 0;
    s->first_open = 0;
    nccl_check_async(c, "the timings of the collectives");   // a peer died, a network error
}

static void nccl_time_begin(Comm *c) {
    NcclState *s = state(c);
    s->open_start = event_get(s);
    s->open_active = 1;
    s->open_running_since = 0.0;
    CHECK_CUDA(cudaEventRecord(s->open_start, s->stream));
}

static void nccl_time_end(Comm *c, size_t cell) {
    NcclState *s = state(c);
    s->open_active = 0;                            // issued: a pending entry from here on
    if (s->n_pending == MAX_PENDING) nccl_time_flush(c);
    if (s->n_pending == s->cap_pending) {
        s->cap_pending = s->cap_pending ? 2 * s->cap_pending : 256;
        PendingTiming *p = xrealloc(s->pending, (size_t)s->cap_pending * sizeof *p);
        s->pending = p;
    }
    PendingTiming *p = &s->pending[s->n_pending++];
    p->start = s->open_start;
    p->stop = event_get(s);
    p->cell = cell;
    p->running_since = s->open_running_since;    // (seen running during the call: the barrier)
    CHECK_CUDA(cudaEventRecord(p->stop, s->stream));
}

static void nccl_destroy(Comm *c) {
    NcclState *s = state(c);
    if (!s) return;
    nccl_time_flush(c);
    cudaEvent_t e = event_get(s);
    CHECK_CUDA(cudaEventRecord(e, s->stream));
    nccl_wait_event(c, e, "the collectives queued before the communicators are destroyed");
    event_put(s, e);
    for (int g = 0; g < GROUP_COUNT; g++)
        if (s->cstream[g]) {   // (every started call was waited for: this finds them done)
            e = event_get(s);
            CHECK_CUDA(cudaEventRecord(e, s->cstream[g]));
            nccl_wait_event(c, e, "the started collectives before the communicators are destroyed");
            event_put(s, e);
        }
    if (s->bk->set_wait) s->bk->set_wait(s->bk, NULL, NULL);   // the back end waits by itself again
    for (int g = 0; g < GROUP_COUNT; g++)
        if (s->comm[g]) {
            CHECK_NCCL(ncclCommFinalize(s->comm[g]));   // flushes what was issued
            CHECK_NCCL(ncclCommDestroy(s->comm[g]));
        }
    for (int i = 0; i < s->n_later; i++) CHECK_CUDA(cudaEventSynchronize(s->later[i]));   // (reached: streams synced above)
    for (int i = 0; i < s->n_later; i++) CHECK_CUDA(cudaEventDestroy(s->later[i]));
    for (int i = 0; i < s->n_pool; i++) CHECK_CUDA(cudaEventDestroy(s->pool[i]));
    for (int g = 0; g < GROUP_COUNT; g++)
        if (s->cstream[g]) CHECK_CUDA(cudaStreamDestroy(s->cstream[g]));
    CHECK_CUDA(cudaFree(s->barrier_word));
    free(s->pool); free(s->later); free(s->pending); free(s);
    c->backend_state = NULL;
    c->backend = &comm_backend_mpi;
}

static const CommBackend comm_backend_nccl = {
    .name = "nccl",
    .all_reduce = nccl_all_reduce,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .sendrecv = nccl_sendrecv,
    .barrier = nccl_barrier,
    .all_reduce_start = nccl_all_reduce_start,
    .reduce_scatter_start = nccl_reduce_scatter_start,
    .reduce_scatter_v_start = nccl_reduce_scatter_v_start,
    .wait = nccl_started_wait,
    .time_begin = nccl_time_begin,
    .time_end = nccl_time_end,
    .time_flush = nccl_time_flush,
    .destroy = nccl_destroy,
};

// This rank's reason not to use NCCL, or "" (local checks, then the one-GPU-per-rank rule).
static void local_reason(Comm *c, Backend *b, char *why, size_t n) {
    why[0] = 0;
    if (c->is_virtual) { snprintf(why, n, "the grid is virtual (no MPI processes behind it)"); return; }
    if (!b || !b->cuda_device || !b->cuda_stream) {   // the capability, not the name (backend.h)
        snprintf(why, n, "the buffers are not on a back end with a CUDA device and stream (back end '%s')", b && b->name ? b->name : "none");
        return;
    }
    int version = 0;
    ncclResult_t r = ncclGetVersion(&version);
    if (r != ncclSuccess) snprintf(why, n, "NCCL is not usable: %s", ncclGetErrorString(r));
}

// World ranks that share this rank's GPU (by UUID, so CUDA_VISIBLE_DEVICES renumbering and
// several nodes are handled): the first such other rank, or -1.
static int rank_sharing_gpu(Comm *c, int device) {
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    char *all = xmalloc((size_t)c->world * 16);
    CHECK_MPI(MPI_Allgather(prop.uuid.bytes, 16, MPI_BYTE, all, 16, MPI_BYTE, c->mpi[GROUP_WORLD]));
    int other = -1;
    for (int r = 0; r < c->world && other < 0; r++)
        if (r != c->rank && !memcmp(all + (size_t)r * 16, prop.uuid.bytes, 16)) other = r;
    free(all);
    return other;
}

int comm_use_nccl(Comm *c, struct Backend *b, char *why, size_t why_len) {
    char mine[256];
    local_reason(c, b, mine, sizeof mine);
    if (c->is_virtual) { snprintf(why, why_len, "%s", mine); return 1; }   // no MPI to agree over
    int device = mine[0] ? -1 : b->cuda_device(b);
    if (!mine[0]) {
        CHECK_CUDA(cudaSetDevice(device));
    }
    // The rule needs every rank's GPU, so every rank takes part even after a local refusal.
    int ok_local = !mine[0];
    int all_ok = 0;
    CHECK_MPI(MPI_Allreduce(&ok_local, &all_ok, 1, MPI_INT, MPI_MIN, c->mpi[GROUP_WORLD]));
    if (all_ok) {
        int other = rank_sharing_gpu(c, device);
        if (other >= 0)
            snprintf(mine, sizeof mine, "world ranks %d and %d share one GPU (device %d of rank %d); NCCL needs "
                     "one GPU per rank, so the ranks communicate through MPI with host staging",
                     c->rank < other ? c->rank : other, c->rank < other ? other : c->rank, device, c->rank);
    }
    // Agree: the lowest rank with a reason tells everyone.
    int first = mine[0] ? c->rank : c->world, first_all = 0;
    CHECK_MPI(MPI_Allreduce(&first, &first_all, 1, MPI_INT, MPI_MIN, c->mpi[GROUP_WORLD]));
    if (first_all < c->world) {
        char reason[256];
        memcpy(reason, mine, sizeof reason);
        CHECK_MPI(MPI_Bcast(reason, (int)sizeof reason, MPI_CHAR, first_all, c->mpi[GROUP_WORLD]));
        reason[sizeof reason - 1] = 0;
        snprintf(why, why_len, "rank %d: %s", first_all, reason);
        return 1;
    }

    NcclState *s = xcalloc(1, sizeof *s);
    s->device = device;
    s->stream = (cudaStream_t)b->cuda_stream(b);
    s->bk = b;
    CHECK_CUDA(cudaMalloc((void **)&s->barrier_word, sizeof(int)));
    CHECK_CUDA(cudaMemsetAsync(s->barrier_word, 0, sizeof(int), s->stream));
    static const CommGroup order[] = { GROUP_TP, GROUP_DP, GROUP_PP, GROUP_WORLD };
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        CommGroup g = order[i];
        if (c->size[g] < 2) continue;
        ncclUniqueId id;
        memset(&id, 0, sizeof id);
        if (c->grank[g] == 0) CHECK_NCCL(ncclGetUniqueId(&id));
        CHECK_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->mpi[g]));
        CHECK_NCCL(ncclCommInitRank(&s->comm[g], c->size[g], id, c->grank[g]));
        CHECK_CUDA(cudaStreamCreateWithFlags(&s->cstream[g], cudaStreamNonBlocking));   // its started calls
    }
    if (c->device != b) comm_set_device(c, b, c->host_alloc, c->host_free);
    c->backend_state = s;
    c->backend = &comm_backend_nccl;
    if (b->set_wait) b->set_wait(b, nccl_backend_wait, c);   // the back end's host waits poll too
    if (why && why_len) why[0] = 0;
    return 0;
}

#else   // no CUDA in this build, or the CPU emulator's (which has no NCCL)

int comm_use_nccl(Comm *c, struct Backend *b, char *why, size_t why_len) {
    (void)c; (void)b;
#ifdef BOOST_CUDA_EMU
    snprintf(why, why_len, "the CUDA emulator has no NCCL (the ranks communicate through MPI with host staging)");
#else
    snprintf(why, why_len, "built without CUDA (this build has no CUDA back end; docs/gpu.md says how to build it)");
#endif
    return 1;
}

#endif
