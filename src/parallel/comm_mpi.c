// comm_mpi.c — the MPI backend of the communication interface (see CommBackend in comm.h).
// Called by the accounting front end (comm.c) only for groups of size > 1 and never in
// account-only mode. MPI counts are int: a message longer than c->mpi_max_count elements is
// split into several MPI calls (still one accounted call). Every MPI call is CHECK_MPI'd.
//
// Two additions for the GPU path (docs/gpu.md):
//   - bf16 payloads travel as 16-bit words and are reduced by user-defined MPI_Ops that
//     form each sum (max, min) in fp32 and round it to bf16 once per reduction step, as
//     NCCL does (the CPU bf16 back end uses them too);
//   - buffers on a device back end (comm_set_device, b->device_memory) are staged: copied
//     to page-locked host scratch, handed to MPI, copied back. That is how several ranks
//     sharing one GPU communicate (NCCL refuses two ranks on one device).
#include <math.h>
#include "comm.h"
#include "../backend/backend.h"
#include "../backend/bf16.h"

// ---- bf16 reductions (bf16.h: round to nearest even, as the GPU kernels) ----
void comm_bf16_reduce(const uint16_t *in, uint16_t *inout, size_t n, CommOp op) {
    for (size_t i = 0; i < n; i++) {
        float a = bf16_to_f32(in[i]), b = bf16_to_f32(inout[i]), r;
        switch (op) {
        case OP_SUM: r = a + b; break;
        case OP_MAX: r = isnan(a) || isnan(b) ? NAN : (a > b ? a : b); break;
        case OP_MIN: r = isnan(a) || isnan(b) ? NAN : (a < b ? a : b); break;
        default: DIE("comm: unknown reduction op %d", (int)op);
        }
        inout[i] = bf16_from_f32(r);
    }
}
// MPI_User_function signatures (commutative ops on MPI_UINT16_T words).
static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *t) { (void)t; comm_bf16_reduce(in, inout, (size_t)*len, OP_SUM); }
static void bf16_max_fn(void *in, void *inout, int *len, MPI_Datatype *t) { (void)t; comm_bf16_reduce(in, inout, (size_t)*len, OP_MAX); }
static void bf16_min_fn(void *in, void *inout, int *len, MPI_Datatype *t) { (void)t; comm_bf16_reduce(in, inout, (size_t)*len, OP_MIN); }
// Created at the first bf16 reduction (MPI is initialised by then); MPI_Finalize frees them.
static MPI_Op bf16_op(CommOp op) {
    static MPI_Op ops[3] = { MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL };
    static MPI_User_function *const fns[3] = { bf16_sum_fn, bf16_max_fn, bf16_min_fn };
    CHECK((unsigned)op < 3, "comm: unknown reduction op %d", (int)op);
    if (ops[op] == MPI_OP_NULL) CHECK_MPI(MPI_Op_create(fns[op], 1, &ops[op]));
    return ops[op];
}

static MPI_Datatype mpi_type(CommDtype t) {
    switch (t) {
    case DTYPE_F32: return MPI_FLOAT;
    case DTYPE_F64: return MPI_DOUBLE;
    case DTYPE_I32: return MPI_INT32_T;
    case DTYPE_U8:  return MPI_UNSIGNED_CHAR;
    case DTYPE_BF16: return MPI_UINT16_T;   // reduced by bf16_op
    default: DIE("comm: unknown dtype %d", (int)t);
    }
}
static MPI_Op mpi_op(CommOp op, CommDtype t) {
    if (t == DTYPE_BF16) return bf16_op(op);
    switch (op) {
    case OP_SUM: return MPI_SUM;
    case OP_MAX: return MPI_MAX;
    case OP_MIN: return MPI_MIN;
    default: DIE("comm: unknown reduction op %d", (int)op);
    }
}
static size_t max_count(const Comm *c) {
    return c->mpi_max_count > 0 && c->mpi_max_count <= INT32_MAX ? c->mpi_max_count : INT32_MAX;
}
static void *scratch(Comm *c, size_t bytes) {
    if (bytes > c->scratch_bytes) {
        free(c->scratch);
        c->scratch = xmalloc(bytes);
        c->scratch_bytes = bytes;
    }
    return c->scratch;
}

static void host_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {   // n == 0: one empty call
        size_t k = n - off < mc ? n - off : mc;
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * es, (int)k, mpi_type(t), mpi_op(op, t), c->mpi[g]));
        if (n == 0) break;
    }
}

static void host_all_gather(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t) {
    size_t es = comm_dtype_size(t), mc = max_count(c), gs = (size_t)c->size[g], me = (size_t)c->grank[g];
    int in_place = (const char *)in == (const char *)out + me * n_chunk * es;
    if (n_chunk * gs <= mc) {
        CHECK_MPI(MPI_Allgather(in_place ? MPI_IN_PLACE : in, (int)n_chunk, mpi_type(t),
                                out, (int)n_chunk, mpi_type(t), c->mpi[g]));
        return;
    }
    // Split every rank's chunk into pieces of p elements; gather piece j of all ranks
    // contiguously into scratch [g, p], then scatter it to out + i·n_chunk + j·p.
    size_t p = mc / gs ? mc / gs : 1;
    char *s = scratch(c, gs * p * es);
    for (size_t off = 0; off < n_chunk; off += p) {
        size_t k = n_chunk - off < p ? n_chunk - off : p;
        memcpy(s + me * k * es, (const char *)in + off * es, k * es);
        CHECK_MPI(MPI_Allgather(MPI_IN_PLACE, (int)k, mpi_type(t), s, (int)k, mpi_type(t), c->mpi[g]));
        for (size_t i = 0; i < gs; i++)
            memcpy((char *)out + (i * n_chunk + off) * es, s + i * k * es, k * es);
    }
}

static void host_reduce_scatter(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t, CommOp op) {
    size_t es = comm_dtype_size(t), mc = max_count(c), gs = (size_t)c->size[g];
    if (n_chunk * gs <= mc) {
        CHECK_MPI(MPI_Reduce_scatter_block(in == out ? MPI_IN_PLACE : in, out, (int)n_chunk,
                                           mpi_type(t), mpi_op(op, t), c->mpi[g]));
        return;
    }
    // Pieces of p elements: pack piece j of every block into scratch [g, p], reduce-scatter
    // it in place (result at scratch's start), copy to out + j·p. With in == out, block 0's
    // piece j is packed before out's piece j is written, and later pieces are not touched.
    size_t p = mc / gs ? mc / gs : 1;
    char *s = scratch(c, gs * p * es);
    for (size_t off = 0; off < n_chunk; off += p) {
        size_t k = n_chunk - off < p ? n_chunk - off : p;
        for (size_t i = 0; i < gs; i++)
            memcpy(s + i * k * es, (const char *)in + (i * n_chunk + off) * es, k * es);
        CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, s, (int)k, mpi_type(t), mpi_op(op, t), c->mpi[g]));
        memcpy((char *)out + off * es, s, k * es);
    }
}

static void host_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {
        size_t k = n - off < mc ? n - off : mc;
        CHECK_MPI(MPI_Bcast((char *)buf + off * es, (int)k, mpi_type(t), root, c->mpi[g]));
        if (n == 0) break;
    }
}

// Pieces of one message travel in order: MPI does not overtake between the same
// (source, tag, communicator).
static void host_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {
        size_t k = n - off < mc ? n - off : mc;
        CHECK_MPI(MPI_Send((const char *)buf + off * es, (int)k, mpi_type(t), peer, tag, c->mpi[g]));
        if (n == 0) break;
    }
}

static void host_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {
        size_t k = n - off < mc ? n - off : mc;
        MPI_Status st;
        CHECK_MPI(MPI_Recv((char *)buf + off * es, (int)k, mpi_type(t), peer, tag, c->mpi[g], &st));
        int got = 0;
        CHECK_MPI(MPI_Get_count(&st, mpi_type(t), &got));
        CHECK((size_t)got == k, "comm_recv: expected %zu elements from %s rank %d (tag %d), got %d",
              k, comm_group_name(g), peer, tag, got);
        if (n == 0) break;
    }
}

// Both directions at once. Long messages go as pieces of mpi_max_count elements (the same
// limit on every rank, so the pieces pair up).
static void host_sendrecv(Comm *c, CommGroup g, const void *sbuf, size_t ns, int dest, int stag,
                         void *rbuf, size_t nr, int src, int rtag, CommDtype t) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    if (ns <= mc && nr <= mc) {
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(sbuf, (int)ns, mpi_type(t), dest, stag, rbuf, (int)nr, mpi_type(t), src, rtag,
                               c->mpi[g], &st));
        int got = 0;
        CHECK_MPI(MPI_Get_count(&st, mpi_type(t), &got));
        CHECK((size_t)got == nr, "comm_sendrecv: expected %zu elements from %s rank %d (tag %d), got %d",
              nr, comm_group_name(g), src, rtag, got);
        return;
    }
    // Long messages: nonblocking pieces, all posted at once (no ordering constraint between
    // the directions, so no deadlock whatever the peer's piece count).
    size_t nps = (ns + mc - 1) / mc, npr = (nr + mc - 1) / mc;
    MPI_Request *req = xmalloc((nps + npr) * sizeof *req);
    size_t q = 0;
    for (size_t off = 0; off < nr; off += mc)
        CHECK_MPI(MPI_Irecv((char *)rbuf + off * es, (int)(nr - off < mc ? nr - off : mc), mpi_type(t), src, rtag,
                            c->mpi[g], &req[q++]));
    for (size_t off = 0; off < ns; off += mc)
        CHECK_MPI(MPI_Isend((const char *)sbuf + off * es, (int)(ns - off < mc ? ns - off : mc), mpi_type(t), dest,
                            stag, c->mpi[g], &req[q++]));
    CHECK_MPI(MPI_Waitall((int)q, req, MPI_STATUSES_IGNORE));
    free(req);
}

// ---- staging of device buffers ----
// Host scratch slot i of at least `bytes` (page-locked when comm_set_device gave an allocator).
static void *stage_buf(Comm *c, int i, size_t bytes) {
    if (bytes > c->stage_bytes[i]) {
        if (c->stage[i]) { if (c->host_free) c->host_free(c->stage[i]); else free(c->stage[i]); }
        c->stage[i] = c->host_alloc ? c->host_alloc(bytes) : xmalloc(bytes);
        CHECK(c->stage[i], "comm: could not allocate %zu bytes of page-locked staging memory", bytes);
        c->stage_bytes[i] = bytes;
    }
    return c->stage[i];
}
static Backend *staging(const Comm *c) { return c->device && c->device->device_memory ? c->device : NULL; }
// dev → host slot i; the host may read it on return.
static void *to_host(Comm *c, Backend *b, int i, const void *dev, size_t bytes) {
    void *h = stage_buf(c, i, bytes);
    if (bytes) { b->ops->to_host(b, h, dev, bytes); b->ops->sync(b); }
    return h;
}
// host → dev; complete on return (the slot may be reused at once).
static void from_host(Backend *b, void *dev, const void *h, size_t bytes) {
    if (bytes) { b->ops->from_host(b, dev, h, bytes); b->ops->sync(b); }
}

static void mpi_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op) {
    Backend *b = staging(c);
    if (!b) { host_all_reduce(c, g, buf, n, t, op); return; }
    size_t bytes = n * comm_dtype_size(t);
    void *h = to_host(c, b, 0, buf, bytes);
    host_all_reduce(c, g, h, n, t, op);
    from_host(b, buf, h, bytes);
}

static void mpi_all_gather(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t) {
    Backend *b = staging(c);
    if (!b) { host_all_gather(c, g, in, out, n_chunk, t); return; }
    size_t es = comm_dtype_size(t), chunk = n_chunk * es, gs = (size_t)c->size[g], me = (size_t)c->grank[g];
    char *h_out = stage_buf(c, 1, gs * chunk);
    if ((const char *)in == (const char *)out + me * chunk) {   // in place: only this rank's chunk goes up
        if (chunk) { b->ops->to_host(b, h_out + me * chunk, in, chunk); b->ops->sync(b); }
        host_all_gather(c, g, h_out + me * chunk, h_out, n_chunk, t);
    } else {
        host_all_gather(c, g, to_host(c, b, 0, in, chunk), h_out, n_chunk, t);
    }
    from_host(b, out, h_out, gs * chunk);
}

static void mpi_reduce_scatter(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t, CommOp op) {
    Backend *b = staging(c);
    if (!b) { host_reduce_scatter(c, g, in, out, n_chunk, t, op); return; }
    size_t chunk = n_chunk * comm_dtype_size(t), gs = (size_t)c->size[g];
    void *h_in = to_host(c, b, 0, in, gs * chunk);
    void *h_out = in == out ? h_in : stage_buf(c, 1, chunk);   // keeps the in-place form
    host_reduce_scatter(c, g, h_in, h_out, n_chunk, t, op);
    from_host(b, out, h_out, chunk);
}

static void mpi_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root) {
    Backend *b = staging(c);
    if (!b) { host_broadcast(c, g, buf, n, t, root); return; }
    size_t bytes = n * comm_dtype_size(t);
    void *h = c->grank[g] == root ? to_host(c, b, 0, buf, bytes) : stage_buf(c, 0, bytes);
    host_broadcast(c, g, h, n, t, root);
    if (c->grank[g] != root) from_host(b, buf, h, bytes);
}

static void mpi_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag) {
    Backend *b = staging(c);
    if (!b) { host_send(c, g, buf, n, t, peer, tag); return; }
    host_send(c, g, to_host(c, b, 0, buf, n * comm_dtype_size(t)), n, t, peer, tag);
}

static void mpi_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag) {
    Backend *b = staging(c);
    if (!b) { host_recv(c, g, buf, n, t, peer, tag); return; }
    size_t bytes = n * comm_dtype_size(t);
    void *h = stage_buf(c, 0, bytes);
    host_recv(c, g, h, n, t, peer, tag);
    from_host(b, buf, h, bytes);
}

static void mpi_sendrecv(Comm *c, CommGroup g, const void *sbuf, size_t ns, int dest, int stag,
                         void *rbuf, size_t nr, int src, int rtag, CommDtype t) {
    Backend *b = staging(c);
    if (!b) { host_sendrecv(c, g, sbuf, ns, dest, stag, rbuf, nr, src, rtag, t); return; }
    size_t es = comm_dtype_size(t);
    void *hs = to_host(c, b, 0, sbuf, ns * es), *hr = stage_buf(c, 1, nr * es);
    host_sendrecv(c, g, hs, ns, dest, stag, hr, nr, src, rtag, t);
    from_host(b, rbuf, hr, nr * es);
}

static void mpi_barrier(Comm *c, CommGroup g) {
    CHECK_MPI(MPI_Barrier(c->mpi[g]));
}

// ---- started reductions (comm.h: overlap) ------------------------------------------------------
// The project's own order, whatever the message size or the number of calls a buffer is cut
// into: the input is cut into g pieces in group-rank order; each rank sends piece j to group
// rank j (phase 1), which sums the g copies of its piece in group-rank order — for every
// element ((v0 + v1) + v2) + ... in the element type (bf16: rounded after each addition, as
// comm_bf16_reduce) — and, for an all-reduce, sends the sum to every other rank (phase 2).
// So every element's bits are those of that sum, and all ranks hold the same ones. Phase 1
// and 2 are non-blocking sends and receives on the group's own communicator (mpi_async: they
// never match a blocking call's messages), tagged by the call's number in the group (every
// member starts the same calls in the same order); wait completes them, test advances them.
// Device buffers are staged: the input copied to host memory at the start (the compute
// stream synchronised: the producers are done), the result copied back at the end.
typedef struct {
    CommGroup g; CommDtype t; CommOp op;
    int all;                     // all-reduce: phase 2 sends this rank's sum to everyone
    size_t *cnt, *off;           // [gs] the pieces
    char *in;                    // the (host) input, pieces at off[i]; all-reduce: also the output
    char *res;                   // where this rank's sum goes (host)
    char *recv;                  // [gs][cnt[me]] the other ranks' copies of this rank's piece
    char *stage;                 // the host copy of a device buffer (NULL: host buffers)
    void *dev_out; size_t dev_bytes; const char *res_stage;   // staged: where the result goes back
    MPI_Request *req; int nreq, capreq;
    int phase;                   // 1, 2, or 3 = complete
    int tag;
} MpiStarted;

static void add_req(MpiStarted *r, MPI_Request q) {
    if (r->nreq == r->capreq) {
        r->capreq = r->capreq ? 2 * r->capreq : 8;
        r->req = realloc(r->req, (size_t)r->capreq * sizeof *r->req);
        CHECK(r->req, "comm: out of memory for %d MPI requests", r->capreq);
    }
    r->req[r->nreq++] = q;
}
// Non-blocking send / receive of n elements in pieces of at most mpi_max_count (the same limit
// on every rank, so the pieces pair up; one (source, tag, communicator) keeps their order).
static void isend(Comm *c, MpiStarted *r, const char *p, size_t n, int peer, int tag) {
    size_t es = comm_dtype_size(r->t), mc = max_count(c);
    for (size_t o = 0; o < n; o += mc) {
        MPI_Request q;
        CHECK_MPI(MPI_Isend(p + o * es, (int)(n - o < mc ? n - o : mc), mpi_type(r->t), peer, tag, c->mpi_async[r->g], &q));
        add_req(r, q);
    }
}
static void irecv(Comm *c, MpiStarted *r, char *p, size_t n, int peer, int tag) {
    size_t es = comm_dtype_size(r->t), mc = max_count(c);
    for (size_t o = 0; o < n; o += mc) {
        MPI_Request q;
        CHECK_MPI(MPI_Irecv(p + o * es, (int)(n - o < mc ? n - o : mc), mpi_type(r->t), peer, tag, c->mpi_async[r->g], &q));
        add_req(r, q);
    }
}

// out[k] = ((v[0][k] op v[1][k]) op v[2][k]) ... for k < n, element by element (out may be
// one of the v: each element is read before it is written).
static float op_f32(float a, float b, CommOp op) { return op == OP_SUM ? a + b : op == OP_MAX ? (a > b ? a : b) : (a < b ? a : b); }
static double op_f64(double a, double b, CommOp op) { return op == OP_SUM ? a + b : op == OP_MAX ? (a > b ? a : b) : (a < b ? a : b); }
static int32_t op_i32(int32_t a, int32_t b, CommOp op) { return op == OP_SUM ? a + b : op == OP_MAX ? (a > b ? a : b) : (a < b ? a : b); }
static void reduce_in_order(char *out, const char *const *v, int gs, size_t n, CommDtype t, CommOp op) {
    for (size_t k = 0; k < n; k++) {
        switch (t) {
        case DTYPE_F32: {
            float a = ((const float *)v[0])[k];
            for (int i = 1; i < gs; i++) a = op_f32(a, ((const float *)v[i])[k], op);
            ((float *)out)[k] = a;
            break;
        }
        case DTYPE_F64: {
            double a = ((const double *)v[0])[k];
            for (int i = 1; i < gs; i++) a = op_f64(a, ((const double *)v[i])[k], op);
            ((double *)out)[k] = a;
            break;
        }
        case DTYPE_I32: {
            int32_t a = ((const int32_t *)v[0])[k];
            for (int i = 1; i < gs; i++) a = op_i32(a, ((const int32_t *)v[i])[k], op);
            ((int32_t *)out)[k] = a;
            break;
        }
        case DTYPE_BF16: {
            uint16_t a = ((const uint16_t *)v[0])[k];
            for (int i = 1; i < gs; i++) comm_bf16_reduce(&((const uint16_t *)v[i])[k], &a, 1, op);
            ((uint16_t *)out)[k] = a;
            break;
        }
        default: DIE("comm: no started reduction of dtype %d", (int)t);
        }
    }
}

// Phase 1 done: sum this rank's piece; an all-reduce then sends it to everyone (phase 2).
static void phase1_done(Comm *c, MpiStarted *r) {
    int gs = c->size[r->g], me = c->grank[r->g];
    size_t es = comm_dtype_size(r->t), m = r->cnt[me];
    const char **v = xcalloc((size_t)gs, sizeof *v);
    for (int i = 0; i < gs; i++) v[i] = i == me ? r->in + r->off[me] * es : r->recv + (size_t)i * m * es;
    reduce_in_order(r->res, v, gs, m, r->t, r->op);
    free(v);
    r->nreq = 0;
    if (!r->all) { r->phase = 3; return; }
    for (int i = 0; i < gs; i++) {
        if (i == me) continue;
        irecv(c, r, r->in + r->off[i] * es, r->cnt[i], i, r->tag + 1);
        isend(c, r, r->res, m, i, r->tag + 1);
    }
    r->phase = 2;
}

// A started reduction of the (possibly device) input `in` cut into pieces cnt[] (group-rank
// order); this rank's sum to `out` (host, or device when staged; NULL: in place at its piece).
static MpiStarted *started_new(Comm *c, CommGroup g, const void *in, void *out, const size_t *cnt, int all,
                               CommDtype t, CommOp op) {
    int gs = c->size[g], me = c->grank[g];
    size_t es = comm_dtype_size(t), n = 0;
    MpiStarted *r = xcalloc(1, sizeof *r);
    r->g = g; r->t = t; r->op = op; r->all = all;
    r->cnt = xcalloc((size_t)gs, sizeof *r->cnt);
    r->off = xcalloc((size_t)gs, sizeof *r->off);
    for (int i = 0; i < gs; i++) { r->off[i] = n; r->cnt[i] = cnt[i]; n += cnt[i]; }
    size_t m = r->cnt[me];
    Backend *b = staging(c);
    if (b) {   // the input to the host now (the stream synchronised: its producers are done)
        r->stage = xmalloc(n * es + 1);
        if (n) { b->ops->to_host(b, r->stage, in, n * es); b->ops->sync(b); }
        r->in = r->stage;
        r->res = r->stage + r->off[me] * es;   // the host copy is ours to write
        r->res_stage = all ? r->stage : r->res;
        r->dev_out = all ? (void *)in : out ? out : (char *)in + r->off[me] * es;
        r->dev_bytes = (all ? n : m) * es;
    } else {
        r->in = (char *)in;   // (an all-reduce and the in-place forms write it; comm.h's contract)
        r->res = out ? (char *)out : r->in + r->off[me] * es;
    }
    r->recv = xmalloc((size_t)gs * m * es + 1);
    r->tag = (int)(c->started_seq[g] % 8192) * 2;   // phase 1: tag, phase 2: tag + 1 (< 32768)
    for (int i = 0; i < gs; i++) {
        if (i == me) continue;
        irecv(c, r, r->recv + (size_t)i * m * es, m, i, r->tag);
        isend(c, r, r->in + r->off[i] * es, r->cnt[i], i, r->tag);
    }
    r->phase = 1;
    return r;
}

static void started_test(Comm *c, void *p) {
    MpiStarted *r = p;
    while (r->phase < 3) {
        int done = 0;
        CHECK_MPI(MPI_Testall(r->nreq, r->req, &done, MPI_STATUSES_IGNORE));
        if (!done) return;
        if (r->phase == 1) phase1_done(c, r);
        else { r->nreq = 0; r->phase = 3; }
    }
}

static void started_wait(Comm *c, void *p, size_t cell) {
    (void)cell;
    MpiStarted *r = p;
    while (r->phase < 3) {
        CHECK_MPI(MPI_Waitall(r->nreq, r->req, MPI_STATUSES_IGNORE));
        if (r->phase == 1) phase1_done(c, r);
        else { r->nreq = 0; r->phase = 3; }
    }
    Backend *b = staging(c);
    if (b && r->dev_bytes) from_host(b, r->dev_out, r->res_stage, r->dev_bytes);
    free(r->cnt); free(r->off); free(r->recv); free(r->stage); free(r->req); free(r);
}

static void *mpi_all_reduce_start(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op) {
    int gs = c->size[g];
    size_t *cnt = xcalloc((size_t)gs, sizeof *cnt);
    for (int i = 0; i < gs; i++) cnt[i] = n / (size_t)gs + ((size_t)i < n % (size_t)gs);   // balanced pieces
    MpiStarted *r = started_new(c, g, buf, NULL, cnt, 1, t, op);
    free(cnt);
    return r;
}
static void *mpi_reduce_scatter_start(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t,
                                      CommOp op) {
    int gs = c->size[g];
    size_t *cnt = xcalloc((size_t)gs, sizeof *cnt);
    for (int i = 0; i < gs; i++) cnt[i] = n_chunk;
    MpiStarted *r = started_new(c, g, in, out, cnt, 0, t, op);
    free(cnt);
    return r;
}
static void *mpi_reduce_scatter_v_start(Comm *c, CommGroup g, void *buf, const size_t *counts, CommDtype t, CommOp op) {
    return started_new(c, g, buf, NULL, counts, 0, t, op);
}

const CommBackend comm_backend_mpi = {
    .name = "mpi",
    .all_reduce = mpi_all_reduce,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .broadcast = mpi_broadcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .sendrecv = mpi_sendrecv,
    .barrier = mpi_barrier,
    .all_reduce_start = mpi_all_reduce_start,
    .reduce_scatter_start = mpi_reduce_scatter_start,
    .reduce_scatter_v_start = mpi_reduce_scatter_v_start,
    .wait = started_wait,
    .test = started_test,
};

// Host memory whatever comm_set_device says (the comm_host_* entry points of comm.c): MPI on
// the buffer itself, never staged, whichever back end moves the device buffers.
const CommBackend comm_backend_mpi_host = {
    .name = "mpi-host",
    .all_reduce = host_all_reduce,
    .all_gather = host_all_gather,
    .reduce_scatter = host_reduce_scatter,
    .broadcast = host_broadcast,
    .send = host_send,
    .recv = host_recv,
    .sendrecv = host_sendrecv,
    .barrier = mpi_barrier,
};
