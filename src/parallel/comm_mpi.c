// comm_mpi.c — the MPI backend of the communication interface (see CommBackend in comm.h).
// Called by the accounting front end (comm.c) only for groups of size > 1 and never in
// account-only mode. MPI counts are int: a message longer than c->mpi_max_count elements is
// split into several MPI calls (still one accounted call). Every MPI call is CHECK_MPI'd.
#include "comm.h"

static MPI_Datatype mpi_type(CommDtype t) {
    switch (t) {
    case DTYPE_F32: return MPI_FLOAT;
    case DTYPE_F64: return MPI_DOUBLE;
    case DTYPE_I32: return MPI_INT32_T;
    case DTYPE_U8:  return MPI_UNSIGNED_CHAR;
    default: DIE("comm: unknown dtype %d", (int)t);
    }
}
static MPI_Op mpi_op(CommOp op) {
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

static void mpi_all_reduce(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, CommOp op) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {   // n == 0: one empty call
        size_t k = n - off < mc ? n - off : mc;
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * es, (int)k, mpi_type(t), mpi_op(op), c->mpi[g]));
        if (n == 0) break;
    }
}

static void mpi_all_gather(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t) {
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

static void mpi_reduce_scatter(Comm *c, CommGroup g, const void *in, void *out, size_t n_chunk, CommDtype t, CommOp op) {
    size_t es = comm_dtype_size(t), mc = max_count(c), gs = (size_t)c->size[g];
    if (n_chunk * gs <= mc) {
        CHECK_MPI(MPI_Reduce_scatter_block(in == out ? MPI_IN_PLACE : in, out, (int)n_chunk,
                                           mpi_type(t), mpi_op(op), c->mpi[g]));
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
        CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, s, (int)k, mpi_type(t), mpi_op(op), c->mpi[g]));
        memcpy((char *)out + off * es, s, k * es);
    }
}

static void mpi_broadcast(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int root) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {
        size_t k = n - off < mc ? n - off : mc;
        CHECK_MPI(MPI_Bcast((char *)buf + off * es, (int)k, mpi_type(t), root, c->mpi[g]));
        if (n == 0) break;
    }
}

// Pieces of one message travel in order: MPI does not overtake between the same
// (source, tag, communicator).
static void mpi_send(Comm *c, CommGroup g, const void *buf, size_t n, CommDtype t, int peer, int tag) {
    size_t es = comm_dtype_size(t), mc = max_count(c);
    for (size_t off = 0; off < n || off == 0; off += mc) {
        size_t k = n - off < mc ? n - off : mc;
        CHECK_MPI(MPI_Send((const char *)buf + off * es, (int)k, mpi_type(t), peer, tag, c->mpi[g]));
        if (n == 0) break;
    }
}

static void mpi_recv(Comm *c, CommGroup g, void *buf, size_t n, CommDtype t, int peer, int tag) {
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
static void mpi_sendrecv(Comm *c, CommGroup g, const void *sbuf, size_t ns, int dest, int stag,
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

static void mpi_barrier(Comm *c, CommGroup g) {
    CHECK_MPI(MPI_Barrier(c->mpi[g]));
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
};
