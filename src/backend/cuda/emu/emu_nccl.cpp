// emu_nccl.cpp — an NCCL stand-in for the CPU emulator (include/nccl.h): the part of NCCL's
// API that src/parallel/comm_nccl.c uses, between emulated ranks that are processes on one
// machine, so that the NCCL code path runs in the emulated multi-rank training
// (build/emu/train_nccl, tests/emu/cuda_emu_train.sh) and fails where NCCL would.
//
//   pointers       every buffer must be device memory (cudaMalloc) or page-locked host memory
//                  (cudaMallocHost; NCCL accepts it through UVA), over its whole extent;
//                  anything else is ncclInvalidArgument at the call, with the call and the
//                  argument named (NCCL's CudaPtrCheck: "... is not a valid pointer")
//   asynchrony     each call is queued on its stream and runs when the stream's worker gets
//                  there (emu::enqueue), as NCCL's kernels do; the host returns at once
//   communicators  ncclCommInitRank maps one POSIX shared-memory segment per communicator,
//                  named by the unique id (which the caller broadcasts, as with NCCL); rank 0
//                  creates it, every rank waits for all to arrive (a blocking init, as NCCL's)
//   collectives    rounds through the segment: each rank copies a chunk of its input into its
//                  slot (SLOT_BYTES), a barrier, each reads the slots it needs, a barrier;
//                  reductions add the slots in rank order on every rank, so all ranks get the
//                  same bits (bf16: rounded after each addition, as NCCL's per-hop rounding)
//   send / recv    one mailbox per ordered pair of ranks (MBOX_BYTES); a group
//                  (ncclGroupStart/End) runs its sends and receives together, advancing
//                  whichever can move, so an exchange larger than a mailbox cannot deadlock
//   failure        ncclCommAbort marks the segment aborted: every rank's waiting worker
//                  gives up, its communicator's asynchronous error becomes ncclRemoteError
//                  (ncclCommGetAsyncError), and the stream moves on. A peer that never joins
//                  a collective leaves the others waiting, as with NCCL (comm_nccl.c's
//                  polling timeout is what ends that).
//   faults         EMU_NCCL_FAULT=hang:R@N or error:R@N (tests/emu/cuda_emu_train.sh): the N-th
//                  operation (from 1, in issue order over every communicator) of the process
//                  of world rank R (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK; 0 without
//                  one) hangs — its stream's worker waits inside it, as a kernel spinning on a
//                  peer that never comes, until the communicator is aborted — or fails
//                  asynchronously (ncclSystemError, the operation does not run and its peers
//                  wait for it, as for a failed network link).
#include "emu_cuda.h"
#include <nccl.h>
#include <atomic>
#include <errno.h>
#include <fcntl.h>
#include <mutex>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <memory>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

enum : size_t { SLOT_BYTES = 64 << 10, MBOX_BYTES = 64 << 10 };
enum : uint32_t { MAGIC = 0x6e63636cu };   // "nccl"

struct Header {
    uint32_t magic, n;
    uint32_t arrived;             // ranks that joined (init)
    uint32_t bar_count, bar_gen;  // the sense-reversing barrier
    uint32_t aborted;             // some rank called ncclCommAbort
};
struct Mailbox { uint32_t full, pad; uint64_t len; };   // then MBOX_BYTES of data

size_t header_bytes() { return 64; }
size_t mailbox_stride() { return sizeof(Mailbox) + MBOX_BYTES; }
size_t segment_bytes(int n) { return header_bytes() + (size_t)n * SLOT_BYTES + (size_t)n * n * mailbox_stride(); }

// Errors of a call (on the calling thread); a communicator's asynchronous error has its own
// text (ncclComm::error), set by the stream's worker.
thread_local std::string last_error;

std::string format(const char *fmt, va_list ap) {
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fprintf(stderr, "cuda emulator (nccl): %s\n", buf);
    return buf;
}
void set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void set_last_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    last_error = format(fmt, ap);
    va_end(ap);
}

void pause_briefly() { struct timespec ts = { 0, 20000 }; nanosleep(&ts, nullptr); }   // 20 µs

size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    }
    return 0;
}

}   // namespace

struct ncclComm {
    int n = 0, rank = 0;
    Header *h = nullptr;
    size_t map_bytes = 0;
    std::string name;
    std::atomic<int> async_error{ ncclSuccess };
    std::mutex m;
    std::string error;            // the asynchronous error's text (set once, by the worker)
    void fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 3, 4))) {
        va_list ap;
        va_start(ap, fmt);
        std::string t = format(fmt, ap);
        va_end(ap);
        std::lock_guard<std::mutex> l(m);
        if (async_error.load() == ncclSuccess) { error = t; async_error.store(r); }
    }
    char *slot(int r) const { return (char *)h + header_bytes() + (size_t)r * SLOT_BYTES; }
    Mailbox *mbox(int src, int dst) const {
        return (Mailbox *)((char *)h + header_bytes() + (size_t)n * SLOT_BYTES + ((size_t)src * n + dst) * mailbox_stride());
    }
    bool aborted() const { return __atomic_load_n(&h->aborted, __ATOMIC_ACQUIRE) != 0; }
    // Gives up (false) once some rank aborted the communicator.
    bool fail_aborted(const char *what) {
        fail(ncclRemoteError, "%s: the communicator was aborted (ncclCommAbort) while rank %d waited", what, rank);
        return false;
    }
    bool barrier(const char *what) {
        uint32_t gen = __atomic_load_n(&h->bar_gen, __ATOMIC_ACQUIRE);
        if (__atomic_add_fetch(&h->bar_count, 1, __ATOMIC_ACQ_REL) == (uint32_t)n) {
            __atomic_store_n(&h->bar_count, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&h->bar_gen, gen + 1, __ATOMIC_RELEASE);
            return true;
        }
        while (__atomic_load_n(&h->bar_gen, __ATOMIC_ACQUIRE) == gen) {
            if (aborted()) return fail_aborted(what);
            pause_briefly();
        }
        return true;
    }
};

namespace {

// ---- reductions: acc = acc op x over n elements, in the element type -------------------------
template <typename T> T apply(T a, T b, ncclRedOp_t op) {
    switch (op) {
    case ncclSum: return a + b;
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
    }
}
template <typename T> void reduce_into(void *acc, const void *x, size_t n, ncclRedOp_t op) {
    T *a = (T *)acc; const T *b = (const T *)x;
    for (size_t i = 0; i < n; i++) a[i] = apply(a[i], b[i], op);
}
void reduce_bf16(void *acc, const void *x, size_t n, ncclRedOp_t op) {
    __nv_bfloat16 *a = (__nv_bfloat16 *)acc; const __nv_bfloat16 *b = (const __nv_bfloat16 *)x;
    for (size_t i = 0; i < n; i++)
        a[i] = __float2bfloat16_rn(apply(__bfloat162float(a[i]), __bfloat162float(b[i]), op));
}
bool reduce(void *acc, const void *x, size_t n, ncclDataType_t t, ncclRedOp_t op) {
    switch (t) {
    case ncclInt8: reduce_into<int8_t>(acc, x, n, op); return true;
    case ncclUint8: reduce_into<uint8_t>(acc, x, n, op); return true;
    case ncclInt32: reduce_into<int32_t>(acc, x, n, op); return true;
    case ncclUint32: reduce_into<uint32_t>(acc, x, n, op); return true;
    case ncclInt64: reduce_into<int64_t>(acc, x, n, op); return true;
    case ncclUint64: reduce_into<uint64_t>(acc, x, n, op); return true;
    case ncclFloat32: reduce_into<float>(acc, x, n, op); return true;
    case ncclFloat64: reduce_into<double>(acc, x, n, op); return true;
    case ncclBfloat16: reduce_bf16(acc, x, n, op); return true;
    case ncclFloat16: return false;
    }
    return false;
}

// Elements of type size es per round: a whole number of elements per slot
size_t chunk_elems(size_t es) { return SLOT_BYTES / es; }

// out[k] = in_0[k] op in_1[k] op ... in rank order, for the round's elements in the slots
void reduce_slots(ncclComm *c, void *out, size_t n, ncclDataType_t t, ncclRedOp_t op) {
    size_t bytes = n * type_size(t);
    std::vector<char> acc(c->slot(0), c->slot(0) + bytes);
    for (int r = 1; r < c->n; r++) reduce(acc.data(), c->slot(r), n, t, op);
    memcpy(out, acc.data(), bytes);
}

// ---- the operations, run on the stream's worker ---------------------------------------------
enum Kind { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, SEND, RECV };
struct Op {
    Kind kind;
    const void *send; void *recv;
    size_t count;                 // all-reduce, broadcast, p2p: elements; all-gather: per rank
                                  // sent; reduce-scatter: per rank received
    ncclDataType_t type; ncclRedOp_t op;
    int root_or_peer;
    ncclComm *comm;
    size_t done = 0;              // p2p progress (bytes)
    int fault = 0;                // an injected fault (Fault): EMU_NCCL_FAULT
};

// ---- injected faults -------------------------------------------------------------------------
enum Fault { FAULT_NONE = 0, FAULT_HANG = 1, FAULT_ERROR = 2 };
struct FaultPlan { int kind = FAULT_NONE; long at = 0; int rank = -1; };
int world_rank() {
    for (const char *v : { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" })
        if (const char *x = getenv(v)) return atoi(x);
    return 0;
}
const FaultPlan &fault_plan() {
    static const FaultPlan plan = [] {
        FaultPlan p;
        const char *v = getenv("EMU_NCCL_FAULT");
        if (!v || !*v) return p;
        char kind[8] = ""; int rank = -1, k = 0; long at = 0;
        if (sscanf(v, "%7[a-z]:%d@%ld%n", kind, &rank, &at, &k) != 3 || v[k] || rank < 0 || at < 1 ||
            (strcmp(kind, "hang") && strcmp(kind, "error"))) {
            fprintf(stderr, "cuda emulator (nccl): EMU_NCCL_FAULT=%s: expected hang:RANK@N or error:RANK@N (world rank "
                    "RANK's N-th NCCL operation, N >= 1)\n", v);
            exit(2);
        }
        p.rank = rank; p.at = at;
        if (rank == world_rank()) p.kind = !strcmp(kind, "hang") ? FAULT_HANG : FAULT_ERROR;
        return p;
    }();
    return plan;
}
// The fault for this process's next operation (counted when it is issued)
int next_fault(const char *call) {
    static std::atomic<long> issued{ 0 };
    const FaultPlan &p = fault_plan();
    long n = ++issued;
    if (p.kind == FAULT_NONE || n != p.at) return FAULT_NONE;
    fprintf(stderr, "cuda emulator (nccl): EMU_NCCL_FAULT: world rank %d's operation %ld (%s) %s\n", p.rank, n, call,
            p.kind == FAULT_HANG ? "will never complete" : "will fail asynchronously");
    return p.kind;
}
// Runs an injected fault in the stream's worker; false: the operation (and its group) stops.
bool run_fault(Op &o, const char *call) {
    if (o.fault == FAULT_HANG) {
        while (!o.comm->aborted()) { struct timespec ts = { 0, 1000000 }; nanosleep(&ts, nullptr); }
        return o.comm->fail_aborted(call);
    }
    o.comm->fail(ncclSystemError, "%s: injected fault (EMU_NCCL_FAULT): rank %d's operation failed", call, o.comm->rank);
    return false;
}
const char *op_name(Kind k) {
    switch (k) {
    case ALL_REDUCE: return "ncclAllReduce";
    case ALL_GATHER: return "ncclAllGather";
    case REDUCE_SCATTER: return "ncclReduceScatter";
    case BROADCAST: return "ncclBroadcast";
    case REDUCE: return "ncclReduce";
    case SEND: return "ncclSend";
    case RECV: return "ncclRecv";
    }
    return "nccl";
}

bool run_collective(Op &o) {
    ncclComm *c = o.comm;
    size_t es = type_size(o.type), step = chunk_elems(es);
    const char *name = op_name(o.kind);
    if (o.kind == ALL_REDUCE || o.kind == BROADCAST) {
        for (size_t off = 0; off < o.count; off += step) {
            size_t m = std::min(step, o.count - off);
            if (o.kind == ALL_REDUCE || c->rank == o.root_or_peer)
                memcpy(c->slot(c->rank), (const char *)o.send + off * es, m * es);
            if (!c->barrier(name)) return false;
            if (o.kind == ALL_REDUCE) reduce_slots(c, (char *)o.recv + off * es, m, o.type, o.op);
            else memmove((char *)o.recv + off * es, c->slot(o.root_or_peer), m * es);
            if (!c->barrier(name)) return false;
        }
        return true;
    }
    if (o.kind == REDUCE) {       // recv[k] (on the root) = Σ_r rank r's send[k], in rank order
        for (size_t off = 0; off < o.count; off += step) {
            size_t m = std::min(step, o.count - off);
            memcpy(c->slot(c->rank), (const char *)o.send + off * es, m * es);
            if (!c->barrier(name)) return false;
            if (c->rank == o.root_or_peer) reduce_slots(c, (char *)o.recv + off * es, m, o.type, o.op);
            if (!c->barrier(name)) return false;
        }
        return true;
    }
    if (o.kind == ALL_GATHER) {   // recv[r·count + k] = rank r's send[k]
        for (size_t off = 0; off < o.count; off += step) {
            size_t m = std::min(step, o.count - off);
            memcpy(c->slot(c->rank), (const char *)o.send + off * es, m * es);
            if (!c->barrier(name)) return false;
            for (int r = 0; r < c->n; r++)
                memmove((char *)o.recv + ((size_t)r * o.count + off) * es, c->slot(r), m * es);
            if (!c->barrier(name)) return false;
        }
        return true;
    }
    // reduce-scatter: recv[k] (on rank p) = Σ_r rank r's send[p·count + k]
    for (int p = 0; p < c->n; p++)
        for (size_t off = 0; off < o.count; off += step) {
            size_t m = std::min(step, o.count - off);
            memcpy(c->slot(c->rank), (const char *)o.send + ((size_t)p * o.count + off) * es, m * es);
            if (!c->barrier(name)) return false;
            if (p == c->rank) reduce_slots(c, (char *)o.recv + off * es, m, o.type, o.op);
            if (!c->barrier(name)) return false;
        }
    return true;
}

// One step of a send or receive if its mailbox allows; true when it moved data.
bool p2p_step(Op &o, bool *failed) {
    ncclComm *c = o.comm;
    size_t total = o.count * type_size(o.type);
    if (o.done >= total) return false;
    Mailbox *mb = o.kind == SEND ? c->mbox(c->rank, o.root_or_peer) : c->mbox(o.root_or_peer, c->rank);
    char *data = (char *)(mb + 1);
    uint32_t full = __atomic_load_n(&mb->full, __ATOMIC_ACQUIRE);
    size_t m = std::min((size_t)MBOX_BYTES, total - o.done);
    if (o.kind == SEND && !full) {
        memcpy(data, (const char *)o.send + o.done, m);
        mb->len = m;
        __atomic_store_n(&mb->full, 1, __ATOMIC_RELEASE);
        o.done += m;
        return true;
    }
    if (o.kind == RECV && full) {
        if (mb->len != m) {
            c->fail(ncclInvalidUsage, "ncclRecv: rank %d expected %zu bytes from rank %d in this piece, the sender sent %llu "
                           "(a send and a receive of different sizes)", c->rank, m, o.root_or_peer, (unsigned long long)mb->len);
            *failed = true;
            return false;
        }
        memcpy((char *)o.recv + o.done, data, m);
        __atomic_store_n(&mb->full, 0, __ATOMIC_RELEASE);
        o.done += m;
        return true;
    }
    return false;
}

// A group (or a single call): collectives in order, then every send and receive together.
void run_ops(std::vector<Op> &ops) {
    for (Op &o : ops) {
        if (o.comm->async_error.load() != ncclSuccess) return;   // a failed communicator stays failed
        if (o.fault && !run_fault(o, op_name(o.kind))) return;
        if (o.kind != SEND && o.kind != RECV && !run_collective(o)) return;
    }
    for (;;) {
        bool pending = false, moved = false, failed = false;
        for (Op &o : ops) {
            if (o.kind != SEND && o.kind != RECV) continue;
            if (o.done < o.count * type_size(o.type)) pending = true;
            if (p2p_step(o, &failed)) moved = true;
            if (failed) return;
        }
        if (!pending) return;
        if (!moved) {
            for (Op &o : ops)
                if ((o.kind == SEND || o.kind == RECV) && o.comm->aborted()) { o.comm->fail_aborted(o.kind == SEND ? "ncclSend" : "ncclRecv"); return; }
            pause_briefly();
        }
    }
}

struct Group { int depth = 0; cudaStream_t stream = nullptr; std::vector<Op> ops; ncclResult_t error = ncclSuccess; };
thread_local Group group;

void submit(cudaStream_t s, std::vector<Op> ops) {
    auto shared = std::make_shared<std::vector<Op>>(std::move(ops));
    emu::enqueue(s, [shared]() { run_ops(*shared); });
}

// A buffer NCCL can use: device or page-locked memory over all of its bytes
bool buffer_ok(const void *p, size_t bytes, const char *call, const char *arg) {
    if (bytes == 0) return true;
    emu::Space a = emu::space_of(p), b = emu::space_of((const char *)p + bytes - 1);
    if (a == emu::SPACE_HOST || b == emu::SPACE_HOST || a != b) {
        set_last_error("%s : %s %p (%zu bytes) is not a valid pointer: %s memory, not device memory (cudaMalloc) "
                       "or page-locked memory (cudaMallocHost)", call, arg, p, bytes,
                       a == emu::SPACE_HOST ? "host" : "partly host");
        return false;
    }
    return true;
}

ncclResult_t issue(const Op &o, cudaStream_t s, const char *call) {
    if (!o.comm) { set_last_error("%s: comm is NULL", call); return ncclInvalidArgument; }
    size_t es = type_size(o.type);
    if (es == 0 || o.type == ncclFloat16) { set_last_error("%s: data type %d is not emulated", call, (int)o.type); return ncclInvalidArgument; }
    int n = o.comm->n;
    size_t sbytes = 0, rbytes = 0;
    switch (o.kind) {
    case ALL_REDUCE: sbytes = rbytes = o.count * es; break;
    case BROADCAST: sbytes = o.comm->rank == o.root_or_peer ? o.count * es : 0; rbytes = o.count * es; break;
    case REDUCE: sbytes = o.count * es; rbytes = o.comm->rank == o.root_or_peer ? o.count * es : 0; break;
    case ALL_GATHER: sbytes = o.count * es; rbytes = (size_t)n * o.count * es; break;
    case REDUCE_SCATTER: sbytes = (size_t)n * o.count * es; rbytes = o.count * es; break;
    case SEND: sbytes = o.count * es; break;
    case RECV: rbytes = o.count * es; break;
    }
    if ((o.kind == BROADCAST || o.kind == REDUCE || o.kind == SEND || o.kind == RECV) && (o.root_or_peer < 0 || o.root_or_peer >= n)) {
        set_last_error("%s: %s %d is not a rank of this communicator of %d", call,
                       o.kind == BROADCAST || o.kind == REDUCE ? "root" : "peer", o.root_or_peer, n);
        return ncclInvalidArgument;
    }
    if ((o.kind == SEND || o.kind == RECV) && o.root_or_peer == o.comm->rank) {
        set_last_error("%s: peer %d is this rank (not emulated)", call, o.root_or_peer);
        return ncclInvalidArgument;
    }
    if (!buffer_ok(o.send, sbytes, call, "sendbuff") || !buffer_ok(o.recv, rbytes, call, "recvbuff")) return ncclInvalidArgument;
    Op q = o;
    q.fault = next_fault(call);
    if (group.depth > 0) {
        if (group.ops.empty()) group.stream = s;
        else if (group.stream != s) { set_last_error("%s: one group on two streams (not emulated)", call); return ncclInvalidUsage; }
        group.ops.push_back(q);
        return ncclSuccess;
    }
    submit(s, std::vector<Op>{ q });
    return ncclSuccess;
}

}   // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) { if (!version) return ncclInvalidArgument; *version = 22809; return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    }
    return "unknown result code";
}
const char *ncclGetLastError(ncclComm_t c) {
    if (c) {
        std::lock_guard<std::mutex> l(c->m);
        if (!c->error.empty()) return c->error.c_str();
    }
    return last_error.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static std::atomic<unsigned> counter{ 0 };
    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(id->internal, sizeof id->internal, "/boostc-emu-nccl-%ld-%u-%llx", (long)getpid(), counter++,
             (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 30));
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
    if (!out || nranks < 1 || rank < 0 || rank >= nranks) {
        set_last_error("ncclCommInitRank: rank %d of %d is not valid", rank, nranks);
        return ncclInvalidArgument;
    }
    id.internal[sizeof id.internal - 1] = 0;
    if (id.internal[0] != '/') { set_last_error("ncclCommInitRank: the unique id is not one ncclGetUniqueId made"); return ncclInvalidArgument; }
    size_t bytes = segment_bytes(nranks);
    int fd = -1;
    double t0 = emu::now_ms();
    if (rank == 0) {
        fd = shm_open(id.internal, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
            set_last_error("ncclCommInitRank: shm_open/ftruncate(%s): %s", id.internal, strerror(errno));
            return ncclSystemError;
        }
    } else {
        for (;;) {   // rank 0 may not have created it yet
            fd = shm_open(id.internal, O_RDWR, 0600);
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size == bytes) break;
            if (fd >= 0) close(fd);
            if (emu::now_ms() - t0 > 60e3) { set_last_error("ncclCommInitRank: rank %d: no segment %s from rank 0 after 60 s", rank, id.internal); return ncclSystemError; }
            pause_briefly();
        }
    }
    void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) { set_last_error("ncclCommInitRank: mmap(%zu bytes): %s", bytes, strerror(errno)); return ncclSystemError; }
    ncclComm *c = new ncclComm();
    c->n = nranks; c->rank = rank; c->h = (Header *)m; c->map_bytes = bytes; c->name = id.internal;
    if (rank == 0) { c->h->n = (uint32_t)nranks; __atomic_store_n(&c->h->magic, MAGIC, __ATOMIC_RELEASE); }
    while (__atomic_load_n(&c->h->magic, __ATOMIC_ACQUIRE) != MAGIC) pause_briefly();
    if (c->h->n != (uint32_t)nranks) {
        set_last_error("ncclCommInitRank: rank %d was told %d ranks, rank 0 %u", rank, nranks, c->h->n);
        munmap(m, bytes); delete c;
        return ncclInvalidUsage;
    }
    __atomic_add_fetch(&c->h->arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&c->h->arrived, __ATOMIC_ACQUIRE) < (uint32_t)nranks) pause_briefly();   // blocking, as NCCL's
    if (rank == 0) shm_unlink(id.internal);   // every rank has it mapped now
    *out = c;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c) { return c ? ncclSuccess : ncclInvalidArgument; }
ncclResult_t ncclCommDestroy(ncclComm_t c) {
    if (!c) return ncclInvalidArgument;
    munmap(c->h, c->map_bytes);
    delete c;
    return ncclSuccess;
}
// The segment stays mapped (a worker may still be inside a collective on it): an aborted
// communicator's memory is not reused.
ncclResult_t ncclCommAbort(ncclComm_t c) {
    if (!c) return ncclSuccess;
    __atomic_store_n(&c->h->aborted, 1, __ATOMIC_RELEASE);
    return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) {
    if (!c || !e) return ncclInvalidArgument;
    *e = (ncclResult_t)c->async_error.load();
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    return issue(Op{ ALL_REDUCE, sendbuff, recvbuff, count, t, op, 0, comm }, stream, "ncclAllReduce");
}
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
    return issue(Op{ ALL_GATHER, sendbuff, recvbuff, sendcount, t, ncclSum, 0, comm }, stream, "ncclAllGather");
}
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
    return issue(Op{ REDUCE_SCATTER, sendbuff, recvbuff, recvcount, t, op, 0, comm }, stream, "ncclReduceScatter");
}
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t stream) {
    return issue(Op{ BROADCAST, sendbuff, recvbuff, count, t, ncclSum, root, comm }, stream, "ncclBroadcast");
}
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
    return issue(Op{ REDUCE, sendbuff, recvbuff, count, t, op, root, comm }, stream, "ncclReduce");
}
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
    return issue(Op{ SEND, sendbuff, nullptr, count, t, ncclSum, peer, comm }, stream, "ncclSend");
}
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
    return issue(Op{ RECV, nullptr, recvbuff, count, t, ncclSum, peer, comm }, stream, "ncclRecv");
}
ncclResult_t ncclGroupStart(void) { group.depth++; return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) {
    if (group.depth == 0) { set_last_error("ncclGroupEnd without ncclGroupStart"); return ncclInvalidUsage; }
    if (--group.depth > 0) return ncclSuccess;
    if (!group.ops.empty()) submit(group.stream, std::move(group.ops));
    group.ops.clear();
    group.stream = nullptr;
    return ncclSuccess;
}

}   // extern "C"
