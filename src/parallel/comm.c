// comm.c — the accounting front end of the communication interface. Each operation:
// validates its arguments, handles the size-1 group (local no-op, not counted) and the
// account-only mode (counted, no data moved), otherwise times the backend call and counts it.
// Conventions: comm.h header comment and docs/parallelism.md.
#include "comm.h"
#include "../backend/backend.h"

static const char *const kind_names[COMM_KIND_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "send", "recv", "barrier" };
static const char *const group_names[GROUP_COUNT] = { "tp", "dp", "pp", "world" };

const char *comm_kind_name(CommKind k) { return (unsigned)k < COMM_KIND_COUNT ? kind_names[k] : "?"; }
const char *comm_phase_name(CommPhase p) { return phase_name(p); }
const char *comm_group_name(CommGroup g) { return (unsigned)g < GROUP_COUNT ? group_names[g] : "?"; }
size_t comm_dtype_size(CommDtype t) {
    switch (t) {
    case DTYPE_F32: return sizeof(float);
    case DTYPE_F64: return sizeof(double);
    case DTYPE_I32: return sizeof(int32_t);
    case DTYPE_U8:  return 1;
    case DTYPE_BF16: return 2;
    default: DIE("comm: unknown dtype %d", (int)t);
    }
}
// Bytes accounted per element: floats may be accounted at another width (bf16: 2).
static size_t acct_size(const Comm *c, CommDtype t) {
    return t == DTYPE_F32 && c->account_float_bytes > 0 ? (size_t)c->account_float_bytes : comm_dtype_size(t);
}

// ---- the table: [kind][phase][group][layer + 1] ----
static size_t n_rows_per_key(const Comm *c) { return (size_t)c->n_layers + 1; }
static size_t table_len(const Comm *c) {
    return (size_t)COMM_KIND_COUNT * PHASE_COUNT * GROUP_COUNT * n_rows_per_key(c);
}
static size_t cell_index(const Comm *c, int k, int p, int g, int layer) {
    return (((size_t)k * PHASE_COUNT + (size_t)p) * GROUP_COUNT + (size_t)g) * n_rows_per_key(c) + (size_t)(layer + 1);
}

void comm_cell_describe(const Comm *c, size_t cell, char *buf, size_t n) {
    size_t per = n_rows_per_key(c);
    int layer = (int)(cell % per) - 1;
    cell /= per;
    CommGroup g = (CommGroup)(cell % GROUP_COUNT);
    cell /= GROUP_COUNT;
    CommPhase p = (CommPhase)(cell % PHASE_COUNT);
    CommKind k = (CommKind)(cell / PHASE_COUNT);
    snprintf(buf, n, "%s over %s (%s, layer %d)", comm_kind_name(k), comm_group_name(g), comm_phase_name(p), layer);
}

void comm_flush_timing(Comm *c) {
    if (c->backend && c->backend->time_flush) c->backend->time_flush(c);
}

void comm_set_n_layers(Comm *c, int n_layers) {
    CHECK(n_layers >= 0, "comm_set_n_layers: n_layers = %d < 0", n_layers);
    for (int g = 0; g < GROUP_COUNT; g++)
        CHECK(!c->outstanding[g], "comm_set_n_layers: %d started calls on %s are not waited for (their cells would go)",
              c->outstanding[g], comm_group_name((CommGroup)g));
    comm_flush_timing(c);   // pending timings name cells of the old table
    free(c->stats);
    c->n_layers = n_layers;
    c->stats = xcalloc(table_len(c), sizeof *c->stats);
    for (int g = 0; g < GROUP_COUNT; g++) c->n_timed[g] = 0;   // their cells were the old table's
}
void comm_stats_reset(Comm *c) {
    comm_flush_timing(c);
    memset(c->stats, 0, table_len(c) * sizeof *c->stats);
    for (int g = 0; g < GROUP_COUNT; g++) c->n_timed[g] = 0;
}

// Buffers on a device back end: the staging and gather buffers made for the previous
// placement are released, the next call makes them where they now belong.
static int on_device(const Comm *c) { return c->device && c->device->device_memory; }
void comm_set_device(Comm *c, struct Backend *b, void *(*host_alloc)(size_t), void (*host_free)(void *)) {
    for (int g = 0; g < GROUP_COUNT; g++)
        CHECK(!c->outstanding[g], "comm_set_device: %d started calls on %s are not waited for",
              c->outstanding[g], comm_group_name((CommGroup)g));
    comm_flush_timing(c);
    if (c->gbuf) {
        if (on_device(c)) bk_free(c->device, c->gbuf, c->gbuf_bytes / 4, DT_F32, MEM_COMM); else free(c->gbuf);
    }
    c->gbuf = NULL; c->gbuf_bytes = 0;
    for (int i = 0; i < 2; i++) {
        if (c->stage[i]) { if (c->host_free) c->host_free(c->stage[i]); else free(c->stage[i]); }
        c->stage[i] = NULL; c->stage_bytes[i] = 0;
    }
    CHECK(!b || b->ops, "comm_set_device: back end '%s' has no op table", b->name ? b->name : "?");
    CHECK(!b || !b->device_memory || (b->ops->alloc && b->ops->free && b->ops->copy && b->ops->copy2d &&
          b->ops->to_host && b->ops->from_host && b->ops->sync),
          "comm_set_device: back end '%s' lacks a buffer op the staging needs", b->name ? b->name : "?");
    CHECK(!host_alloc == !host_free, "comm_set_device: host_alloc and host_free come together");
    c->device = b;
    c->host_alloc = host_alloc;
    c->host_free = host_free;
}

// The back end that held the buffers is about to go: its NCCL communicators (which
// synchronise its stream) and the staging and gather buffers (its memory) go first.
void comm_detach_device(Comm *c) {
    comm_wait_group(c, COMM_ANY);   // (a step waits for its calls; this is for a caller that did not)
    if (c->backend && c->backend->destroy) c->backend->destroy(c);   // NCCL: back to MPI
    comm_set_device(c, NULL, NULL, NULL);
}

// Argument checks shared by every operation (internal errors: the model code is wrong).
static void check_call(const Comm *c, const char *what, CommGroup g, CommPhase phase, int layer) {
    CHECK(c->stats, "%s: the Comm was not initialised (comm_init / comm_init_virtual)", what);
    CHECK((unsigned)g < GROUP_COUNT, "%s: group %d is not a CommGroup", what, (int)g);
    CHECK((unsigned)phase < PHASE_COUNT, "%s: phase %d is not a CommPhase", what, (int)phase);
    CHECK(layer >= -1 && layer < c->n_layers, "%s: layer %d outside [-1, %d): size the table with "
          "comm_set_n_layers(c, n_layers) after comm_init", what, layer, c->n_layers);
}

static void notify(Comm *c, CommKind k, CommPhase phase, CommGroup g, int layer, uint64_t elements, uint64_t bytes,
                   CommRecordType type, uint64_t seq, int started) {
    if (!c->observer) return;
    CommRecord r = { k, phase, g, layer, c->size[g], elements, bytes, type, seq, started };
    c->observer(c->observer_ctx, &r);
}
// One call in the table (calls, elements, bytes, seconds) and to the observer: a blocking call
// (COMM_RECORD_CALL), or a started one (COMM_RECORD_START, its seq); `started`: made through a
// start (its blocking form too).
static void count_as(Comm *c, CommKind k, CommPhase phase, CommGroup g, int layer, size_t elements,
                     size_t elem_bytes, double seconds, CommRecordType type, uint64_t seq, int started) {
    CommStat *s = &c->stats[cell_index(c, k, phase, g, layer)];
    uint64_t bytes = (uint64_t)elements * elem_bytes;
    s->calls += 1;
    s->elements += elements;
    s->bytes += bytes;
    s->seconds += seconds;
    if (started) { s->started_calls += 1; s->started_bytes += bytes; }
    notify(c, k, phase, g, layer, elements, bytes, type, seq, started);
}
static void count(Comm *c, CommKind k, CommPhase phase, CommGroup g, int layer, size_t elements,
                  size_t elem_bytes, double seconds) {
    count_as(c, k, phase, g, layer, elements, elem_bytes, seconds, COMM_RECORD_CALL, 0, 0);
}

// 1 = move data through the backend (timed); 0 = no backend call (account-only).
static int live(const Comm *c) {
    CHECK(c->account_only || !c->is_virtual, "comm: a virtual grid has no processes behind its groups of "
          "size > 1: account_only must stay 1");
    return !c->account_only;
}
// The local semantics of a size-1 all-gather / reduce-scatter: out = in. Done in every mode
// (it is not communication; a single process relies on it), skipped for NULL buffers.
static void local_copy(Comm *c, void *out, const void *in, size_t n, CommDtype t) {
    if (!in || !out || in == out || !n) return;
    if (on_device(c)) c->device->ops->copy(c->device, out, in, n * comm_dtype_size(t));
    else memmove(out, in, n * comm_dtype_size(t));
}

// Timing of one call: MPI_Wtime around it, or the back end's device timing (the call's
// seconds then reach its row through time_end/time_flush, and count() adds 0 here).
// Nothing is timed in account-only mode.
static double timer_start(Comm *c, const CommBackend *be) {
    if (c->is_virtual || c->account_only) return 0.0;
    if (be->time_begin) { be->time_begin(c); return 0.0; }
    return MPI_Wtime();
}
// A collective timed on the host is remembered, per group in call order, for comm_measure_waits
// (sends and receives are not: a pipeline's peers make different calls). A started call is
// remembered at its wait, with the host's time in its start and wait (every member waits for
// the same calls in the same order).
static void remember_timed(Comm *c, CommGroup g, size_t cell, double seconds) {
    if (c->n_timed[g] == c->cap_timed[g]) {
        c->cap_timed[g] = c->cap_timed[g] ? 2 * c->cap_timed[g] : 64;
        c->timed[g] = realloc(c->timed[g], (size_t)c->cap_timed[g] * sizeof *c->timed[g]);
        CHECK(c->timed[g], "out of memory");
    }
    c->timed[g][c->n_timed[g]++] = (struct CommTimedCall){ cell, seconds };
}
static double timer_stop(Comm *c, const CommBackend *be, double t0, CommKind k, CommPhase phase, CommGroup g, int layer) {
    if (c->is_virtual || c->account_only) return 0.0;
    if (be->time_end) { be->time_end(c, cell_index(c, k, phase, g, layer)); return 0.0; }
    double dt = MPI_Wtime() - t0;
    if (k != COMM_SEND && k != COMM_RECV) remember_timed(c, g, cell_index(c, k, phase, g, layer), dt);
    return dt;
}

void comm_measure_waits(Comm *c) {
    int split = !c->is_virtual && !c->account_only && !(c->backend && c->backend->time_end);
    for (int g = 0; g < GROUP_COUNT && split; g++) {
        int n = c->n_timed[g];
        // every member made the same collectives on the group (MPI's rule), so n agrees; only
        // the groups that hold world rank 0 exchange, since only its rows are stored
        if (c->size[g] < 2 || n == 0 || grid_member(c, (CommGroup)g, 0) != 0) continue;
        double *own = xmalloc((size_t)n * sizeof *own), *least = xmalloc((size_t)n * sizeof *least);
        for (int i = 0; i < n; i++) own[i] = c->timed[g][i].seconds;
        CHECK_MPI(MPI_Reduce(own, least, n, MPI_DOUBLE, MPI_MIN, 0, c->mpi[g]));
        if (c->rank == 0)
            for (int i = 0; i < n; i++) {
                CommStat *s = &c->stats[c->timed[g][i].cell];
                s->wait_seconds += own[i] - least[i];
                s->waited_calls++;
            }
        free(own); free(least);
    }
    for (int g = 0; g < GROUP_COUNT; g++) c->n_timed[g] = 0;
}

// The operations that exist in two forms (buffers where comm_set_device says, or host
// memory) run through `be`: c->backend, or c->host_backend (comm_backend_mpi_host, set by
// grid.c) for the comm_host_* forms. comm.c names no back end itself: the back ends use
// its helpers (comm_dtype_size, the names), so naming one here would close a circle.
// A blocking operation on device buffers (be == c->backend) first waits for the group's
// started calls: one group's calls then never run out of order (NCCL needs that of the calls
// on one communicator). The host forms run on other communicators.
static void drain(Comm *c, const CommBackend *be, CommGroup g) {
    if (be == c->backend && c->outstanding[g]) comm_wait_group(c, g);
}

static void all_reduce_on(Comm *c, const CommBackend *be, const char *what, CommGroup g, void *buf, size_t n,
                          CommDtype t, CommOp op, CommPhase phase, int layer) {
    check_call(c, what, g, phase, layer);
    if (c->size[g] == 1) return;
    drain(c, be, g);
    double t0 = timer_start(c, be);
    if (live(c)) be->all_reduce(c, g, buf, n, t, op);
    count(c, COMM_ALL_REDUCE, phase, g, layer, n, acct_size(c, t),
          timer_stop(c, be, t0, COMM_ALL_REDUCE, phase, g, layer));
}
void comm_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op,
                        CommPhase phase, int layer) {
    all_reduce_on(c, c->backend, "comm_all_reduce", g, buf, n, t, op, phase, layer);
}
void comm_host_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op,
                          CommPhase phase, int layer) {
    all_reduce_on(c, c->host_backend, "comm_host_all_reduce", g, buf, n, t, op, phase, layer);
}

void comm_all_gather(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                        CommPhase phase, int layer) {
    check_call(c, "comm_all_gather", g, phase, layer);
    size_t gs = (size_t)c->size[g];
    if (gs == 1) { local_copy(c, out, in, n_chunk, t); return; }
    drain(c, c->backend, g);
    double t0 = timer_start(c, c->backend);
    if (live(c)) c->backend->all_gather(c, g, in, out, n_chunk, t);
    count(c, COMM_ALL_GATHER, phase, g, layer, n_chunk * gs, acct_size(c, t),
          timer_stop(c, c->backend, t0, COMM_ALL_GATHER, phase, g, layer));
}

void comm_all_gather_cols(Comm *c, CommGroup g, const void *in, void *out, size_t rows,
                             size_t cols_local, CommDtype t, CommPhase phase, int layer) {
    check_call(c, "comm_all_gather_cols", g, phase, layer);
    size_t gs = (size_t)c->size[g], blk = rows * cols_local, es = comm_dtype_size(t);
    if (gs == 1) { local_copy(c, out, in, blk, t); return; }
    drain(c, c->backend, g);
    double t0 = timer_start(c, c->backend);
    if (live(c)) {
        // gbuf [g, rows, cols_local] ← all-gather of the contiguous blocks, then place them
        // (on a device: gbuf is device memory and the placement a strided device copy)
        size_t need = gs * blk * es, cols = gs * cols_local;
        Backend *b = on_device(c) ? c->device : NULL;
        if (need > c->gbuf_bytes) {
            if (b) {   // counted in the back end's memory as communication staging (4-byte units)
                if (c->gbuf) bk_free(b, c->gbuf, c->gbuf_bytes / 4, DT_F32, MEM_COMM);
                need = (need + 3) / 4 * 4;
                c->gbuf = bk_alloc(b, need / 4, DT_F32, MEM_COMM);
            } else { free(c->gbuf); c->gbuf = xmalloc(need); }
            c->gbuf_bytes = need;
        }
        char *tmp = c->gbuf;
        c->backend->all_gather(c, g, in, tmp, blk, t);
        for (size_t i = 0; i < gs; i++) {
            if (b) b->ops->copy2d(b, (char *)out + i * cols_local * es, cols * es, tmp + i * blk * es,
                                  cols_local * es, cols_local * es, rows);
            else
                for (size_t r = 0; r < rows; r++)
                    memcpy((char *)out + (r * cols + i * cols_local) * es, tmp + (i * blk + r * cols_local) * es, cols_local * es);
        }
    }
    count(c, COMM_ALL_GATHER, phase, g, layer, blk * gs, acct_size(c, t),
          timer_stop(c, c->backend, t0, COMM_ALL_GATHER, phase, g, layer));
}

void comm_reduce_scatter(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                            CommPhase phase, int layer) {
    check_call(c, "comm_reduce_scatter", g, phase, layer);
    size_t gs = (size_t)c->size[g];
    if (gs == 1) { local_copy(c, out, in, n_chunk, t); return; }
    drain(c, c->backend, g);
    double t0 = timer_start(c, c->backend);
    if (live(c)) c->backend->reduce_scatter(c, g, in, out, n_chunk, t, OP_SUM);
    count(c, COMM_REDUCE_SCATTER, phase, g, layer, n_chunk * gs, acct_size(c, t),
          timer_stop(c, c->backend, t0, COMM_REDUCE_SCATTER, phase, g, layer));
}

static void broadcast_on(Comm *c, const CommBackend *be, const char *what, CommGroup g, void *buf, size_t n,
                         CommDtype t, int root, CommPhase phase, int layer) {
    check_call(c, what, g, phase, layer);
    CHECK(root >= 0 && root < c->size[g], "%s: root %d outside the %s group of size %d",
          what, root, comm_group_name(g), c->size[g]);
    if (c->size[g] == 1) return;
    drain(c, be, g);
    double t0 = timer_start(c, be);
    if (live(c)) be->broadcast(c, g, buf, n, t, root);
    count(c, COMM_BROADCAST, phase, g, layer, n, acct_size(c, t),
          timer_stop(c, be, t0, COMM_BROADCAST, phase, g, layer));
}
void comm_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root,
                       CommPhase phase, int layer) {
    broadcast_on(c, c->backend, "comm_broadcast", g, buf, n, t, root, phase, layer);
}
void comm_host_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root,
                         CommPhase phase, int layer) {
    broadcast_on(c, c->host_backend, "comm_host_broadcast", g, buf, n, t, root, phase, layer);
}

static void check_peer(const Comm *c, const char *what, CommGroup g, int peer, int tag) {
    CHECK(peer >= 0 && peer < c->size[g] && peer != c->grank[g],
          "%s: peer %d is not another rank of the %s group (size %d, this rank %d)",
          what, peer, comm_group_name(g), c->size[g], c->grank[g]);
    CHECK(tag >= 0 && tag <= 32767, "%s: tag %d outside [0, 32767]", what, tag);
}

static void send_on(Comm *c, const CommBackend *be, const char *what, CommGroup g, const void *buf, size_t n,
                    CommDtype t, int peer, int tag, CommPhase phase, int layer) {
    check_call(c, what, g, phase, layer);
    check_peer(c, what, g, peer, tag);
    drain(c, be, g);
    double t0 = timer_start(c, be);
    if (live(c)) be->send(c, g, buf, n, t, peer, tag);
    count(c, COMM_SEND, phase, g, layer, n, acct_size(c, t),
          timer_stop(c, be, t0, COMM_SEND, phase, g, layer));
}
void comm_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag,
                  CommPhase phase, int layer) {
    send_on(c, c->backend, "comm_send", g, buf, n, t, peer, tag, phase, layer);
}
void comm_host_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag,
                    CommPhase phase, int layer) {
    send_on(c, c->host_backend, "comm_host_send", g, buf, n, t, peer, tag, phase, layer);
}

static void recv_on(Comm *c, const CommBackend *be, const char *what, CommGroup g, void *buf, size_t n,
                    CommDtype t, int peer, int tag, CommPhase phase, int layer) {
    check_call(c, what, g, phase, layer);
    check_peer(c, what, g, peer, tag);
    drain(c, be, g);
    double t0 = timer_start(c, be);
    if (live(c)) be->recv(c, g, buf, n, t, peer, tag);
    count(c, COMM_RECV, phase, g, layer, n, acct_size(c, t),
          timer_stop(c, be, t0, COMM_RECV, phase, g, layer));
}
void comm_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag,
                  CommPhase phase, int layer) {
    recv_on(c, c->backend, "comm_recv", g, buf, n, t, peer, tag, phase, layer);
}
void comm_host_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag,
                    CommPhase phase, int layer) {
    recv_on(c, c->host_backend, "comm_host_recv", g, buf, n, t, peer, tag, phase, layer);
}

void comm_sendrecv(Comm *c, CommGroup g, const void *sendbuf, size_t n_send, int dest, int send_tag,
                      void *recvbuf, size_t n_recv, int src, int recv_tag, CommDtype t,
                      CommPhase phase, int layer) {
    check_call(c, "comm_sendrecv", g, phase, layer);
    check_peer(c, "comm_sendrecv", g, dest, send_tag);
    check_peer(c, "comm_sendrecv", g, src, recv_tag);
    drain(c, c->backend, g);
    double t0 = timer_start(c, c->backend);
    if (live(c)) c->backend->sendrecv(c, g, sendbuf, n_send, dest, send_tag, recvbuf, n_recv, src, recv_tag, t);
    double dt = timer_stop(c, c->backend, t0, COMM_SEND, phase, g, layer);
    // One exchange: its time is booked on the send row, the recv row gets the call and volume.
    count(c, COMM_SEND, phase, g, layer, n_send, acct_size(c, t), dt);
    count(c, COMM_RECV, phase, g, layer, n_recv, acct_size(c, t), 0.0);
}

void comm_barrier(Comm *c, CommGroup g, CommPhase phase, int layer) {
    check_call(c, "comm_barrier", g, phase, layer);
    if (c->size[g] == 1) return;
    drain(c, c->backend, g);
    double t0 = timer_start(c, c->backend);
    if (live(c)) c->backend->barrier(c, g);
    count(c, COMM_BARRIER, phase, g, layer, 0, 0,
          timer_stop(c, c->backend, t0, COMM_BARRIER, phase, g, layer));
}

// ---- started collectives (comm.h: overlap) ----
// A free slot of the started-call table (grown as needed).
static int started_slot(Comm *c) {
    for (int i = 0; i < c->cap_started; i++)
        if (!c->started[i].active) return i;
    int old = c->cap_started;
    c->cap_started = old ? 2 * old : 16;
    c->started = realloc(c->started, (size_t)c->cap_started * sizeof *c->started);
    CHECK(c->started, "comm: out of memory for %d started calls", c->cap_started);
    memset(c->started + old, 0, (size_t)(c->cap_started - old) * sizeof *c->started);
    return old;
}

// What every start does around its back end's call `go` (which returns the request): with
// overlap, counted as started (the host's time in the start kept for the wait) and a handle;
// without, the blocking form: the start and its wait at once, timed and counted as a call.
typedef struct {
    const char *what; CommKind kind; CommGroup g; CommPhase phase; int layer; size_t elements; CommDtype t;
} StartInfo;
typedef void *(*StartFn)(Comm *c, const void *args);
static CommHandle start_call(Comm *c, const StartInfo *si, StartFn go, const void *args) {
    const CommBackend *be = c->backend;
    size_t cell = cell_index(c, si->kind, si->phase, si->g, si->layer), es = acct_size(c, si->t);
    CHECK(!live(c) || (be->wait && be->all_reduce_start && be->reduce_scatter_start && be->reduce_scatter_v_start),
          "%s: the %s back end cannot start collectives", si->what, be->name);
    uint64_t seq = ++c->started_seq[si->g];   // (the MPI back end tags the call's messages with it)
    if (!c->overlap) {
        double t0 = timer_start(c, be);
        if (live(c)) be->wait(c, go(c, args), cell);
        count_as(c, si->kind, si->phase, si->g, si->layer, si->elements, es,
                 timer_stop(c, be, t0, si->kind, si->phase, si->g, si->layer), COMM_RECORD_CALL, 0, 1);
        return COMM_DONE;
    }
    int h = started_slot(c);
    struct CommStarted *s = &c->started[h];
    *s = (struct CommStarted){ .active = 1, .group = si->g, .kind = si->kind, .phase = si->phase, .layer = si->layer,
                               .id = ++c->last_id, .seq = seq, .elements = si->elements,
                               .bytes = (uint64_t)si->elements * es, .cell = cell };
    c->outstanding[si->g]++;
    if (live(c)) {
        double t0 = be->time_end ? 0.0 : MPI_Wtime();
        void *req = go(c, args);
        s = &c->started[h];
        s->req = req;
        if (!be->time_end) s->seconds = MPI_Wtime() - t0;
    }
    count_as(c, si->kind, si->phase, si->g, si->layer, si->elements, es, 0.0, COMM_RECORD_START, s->seq, 1);
    return s->id;
}

typedef struct { CommGroup g; void *buf; const void *in; size_t n; const size_t *counts; CommDtype t; } StartArgs;
static void *go_all_reduce(Comm *c, const void *p) {
    const StartArgs *a = p;
    return c->backend->all_reduce_start(c, a->g, a->buf, a->n, a->t, OP_SUM);
}
static void *go_reduce_scatter(Comm *c, const void *p) {
    const StartArgs *a = p;
    return c->backend->reduce_scatter_start(c, a->g, a->in, a->buf, a->n, a->t, OP_SUM);
}
static void *go_reduce_scatter_v(Comm *c, const void *p) {
    const StartArgs *a = p;
    return c->backend->reduce_scatter_v_start(c, a->g, a->buf, a->counts, a->t, OP_SUM);
}

CommHandle comm_all_reduce_start(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op,
                                 CommPhase phase, int layer) {
    check_call(c, "comm_all_reduce_start", g, phase, layer);
    CHECK(op == OP_SUM, "comm_all_reduce_start: only sums are started (op %d)", (int)op);
    if (c->size[g] == 1) return COMM_DONE;
    StartInfo si = { "comm_all_reduce_start", COMM_ALL_REDUCE, g, phase, layer, n, t };
    StartArgs a = { g, buf, NULL, n, NULL, t };
    return start_call(c, &si, go_all_reduce, &a);
}

CommHandle comm_reduce_scatter_start(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                                     CommPhase phase, int layer) {
    check_call(c, "comm_reduce_scatter_start", g, phase, layer);
    size_t gs = (size_t)c->size[g];
    if (gs == 1) { local_copy(c, out, in, n_chunk, t); return COMM_DONE; }
    StartInfo si = { "comm_reduce_scatter_start", COMM_REDUCE_SCATTER, g, phase, layer, n_chunk * gs, t };
    StartArgs a = { g, out, in, n_chunk, NULL, t };
    return start_call(c, &si, go_reduce_scatter, &a);
}

CommHandle comm_reduce_scatter_v_start(Comm *c, CommGroup g, void *buf, const size_t *counts, CommDtype t,
                                       CommPhase phase, int layer) {
    check_call(c, "comm_reduce_scatter_v_start", g, phase, layer);
    if (c->size[g] == 1) return COMM_DONE;
    size_t n = 0;
    for (int i = 0; i < c->size[g]; i++) n += counts[i];
    StartInfo si = { "comm_reduce_scatter_v_start", COMM_REDUCE_SCATTER, g, phase, layer, n, t };
    StartArgs a = { g, buf, NULL, n, counts, t };
    return start_call(c, &si, go_reduce_scatter_v, &a);
}

// Complete the started call in slot i.
static void wait_slot(Comm *c, int i) {
    struct CommStarted *s = &c->started[i];
    const CommBackend *be = c->backend;
    if (s->req) {
        double t0 = be->time_end ? 0.0 : MPI_Wtime();
        be->wait(c, s->req, s->cell);   // (time_end: the back end books the compute's wait in the cell)
        if (!be->time_end) {
            s->seconds += MPI_Wtime() - t0;
            remember_timed(c, s->group, s->cell, s->seconds);
        }
    }
    c->stats[s->cell].seconds += s->seconds;
    notify(c, s->kind, s->phase, s->group, s->layer, s->elements, s->bytes, COMM_RECORD_WAIT, s->seq, 1);
    s->active = 0;
    s->req = NULL;
    c->outstanding[s->group]--;
}

void comm_wait(Comm *c, CommHandle *h) {
    CHECK(*h <= c->last_id, "comm_wait: %llu is not a handle of this Comm", (unsigned long long)*h);
    for (int i = 0; i < c->cap_started && *h != COMM_DONE; i++)
        if (c->started[i].active && c->started[i].id == *h) wait_slot(c, i);
    *h = COMM_DONE;
}

void comm_wait_group(Comm *c, int g) {
    for (;;) {   // the oldest started call first (a group's seq orders its calls)
        int best = -1;
        for (int i = 0; i < c->cap_started; i++) {
            const struct CommStarted *s = &c->started[i];
            if (!s->active || (g != COMM_ANY && (int)s->group != g)) continue;
            if (best < 0 || (s->group == c->started[best].group ? s->seq < c->started[best].seq : s->group < c->started[best].group))
                best = i;
        }
        if (best < 0) return;
        wait_slot(c, best);
    }
}

void comm_progress(Comm *c) {
    const CommBackend *be = c->backend;
    if (!be || !be->test) return;
    for (int i = 0; i < c->cap_started; i++)
        if (c->started[i].active && c->started[i].req) be->test(c, c->started[i].req);
}

// ---- queries ----
static int matches(int want, int v) { return want == COMM_ANY || want == v; }

// The queries first resolve pending device timings: that completes the measurement of
// calls already made and changes nothing else, so they keep their const signatures.
CommStat comm_stats_sum(const Comm *c, int kind, int phase, int group, int layer) {
    comm_flush_timing((Comm *)c);
    CommStat t = {0};
    for (int k = 0; k < COMM_KIND_COUNT; k++) if (matches(kind, k))
    for (int p = 0; p < PHASE_COUNT; p++) if (matches(phase, p))
    for (int g = 0; g < GROUP_COUNT; g++) if (matches(group, g))
    for (int l = -1; l < c->n_layers; l++) if (matches(layer, l)) {
        const CommStat *s = &c->stats[cell_index(c, k, p, g, l)];
        t.calls += s->calls; t.elements += s->elements; t.bytes += s->bytes; t.seconds += s->seconds;
        t.wait_seconds += s->wait_seconds; t.waited_calls += s->waited_calls;
        t.started_calls += s->started_calls; t.started_bytes += s->started_bytes;
    }
    return t;
}

int comm_stats_next(const Comm *c, int *cursor, CommStatRow *row) {
    if (*cursor == 0) comm_flush_timing((Comm *)c);
    size_t n = table_len(c), per = n_rows_per_key(c);
    for (size_t i = (size_t)*cursor; i < n; i++) {
        if (!c->stats[i].calls) continue;
        size_t key = i / per;
        row->layer = (int)(i % per) - 1;
        row->group = (CommGroup)(key % GROUP_COUNT);
        row->phase = (CommPhase)(key / GROUP_COUNT % PHASE_COUNT);
        row->kind = (CommKind)(key / GROUP_COUNT / PHASE_COUNT);
        row->s = c->stats[i];
        *cursor = (int)(i + 1);
        return 1;
    }
    *cursor = (int)n;
    return 0;
}

void comm_stats_print(const Comm *c, FILE *f) {
    fprintf(f, "%-15s %-10s %-6s %5s %10s %14s %16s %12s\n",
            "kind", "phase", "group", "layer", "calls", "elements", "bytes", "seconds");
    int it = 0; CommStatRow r;
    while (comm_stats_next(c, &it, &r))
        fprintf(f, "%-15s %-10s %-6s %5d %10llu %14llu %16llu %12.6f\n", comm_kind_name(r.kind),
                comm_phase_name(r.phase), comm_group_name(r.group), r.layer,
                (unsigned long long)r.s.calls, (unsigned long long)r.s.elements,
                (unsigned long long)r.s.bytes, r.s.seconds);
}
