// test_comm_device.c — the communication interface with buffers on a device back end, on
// the CPU: the MPI back end's staging of device buffers through host scratch, the bf16
// reductions (user-defined MPI_Ops), the front end's device-timing hooks, and the NCCL
// switch refusing cleanly where it cannot run (docs/gpu.md).
//
// The "device" is a back end whose memory the host cannot touch: its pointers are host
// addresses moved by 2^46 (outside the address space: a host access faults), and it
// holds every byte XOR 0x5A of its value, which only its to_host/from_host undo. A
// collective that handed a device pointer to MPI, or copied with memcpy where the back
// end's copy is needed, crashes or gives wrong numbers here.
//
// Run directly (one rank: the bf16 arithmetic, size-1 groups, the timing protocol) or
// under mpirun with the grid as arguments (tests/t_comm_device.sh):
//   mpirun -np 4 --oversubscribe build/test_comm_device 2 1 2      (tp pp dp)
#include <math.h>
#define TL_USAGE "the collectives on device buffers over a grid: test_comm_device [tp [pp [dp]]] under mpirun (default: tp = the world size)\n"
#include "testlib.h"
#define MPI_TL_MAX_DETAILS 6
#include "mpitestlib.h"
#include "../src/backend/backend.h"
#include "../src/parallel/comm.h"
TL_MAIN_DEFS

static Comm G;
int my_rank, n_ranks, n_details;

// ---- the scrambled device ----
// key 0 turns the "device" into plain host memory (the host-buffer passes below).
static unsigned char key = 0x5A;
static size_t n_to_host, n_from_host, n_syncs;
static void scramble(void *dst, const void *src, size_t bytes) {
    const unsigned char *s = src; unsigned char *d = dst;
    for (size_t i = 0; i < bytes; i++) d[i] = s[i] ^ key;
}
// Device address ↔ the host memory behind it (key 0: the same address, plain host memory).
#define DEV_SHIFT ((uintptr_t)1 << 46)
static void *dptr(void *host) { return key ? (void *)((uintptr_t)host + DEV_SHIFT) : host; }
static char *hptr(const void *dev) { return key ? (char *)((uintptr_t)dev - DEV_SHIFT) : (char *)dev; }
static void *dev_alloc(Backend *b, size_t bytes) { (void)b; return dptr(xaligned_alloc(bytes ? bytes : 1)); }
static void dev_free(Backend *b, void *p) { (void)b; free(hptr(p)); }
static void dev_zero(Backend *b, void *p, size_t bytes) { (void)b; memset(hptr(p), key, bytes); }
static void dev_copy(Backend *b, void *dst, const void *src, size_t bytes) { (void)b; memmove(hptr(dst), hptr(src), bytes); }
static void dev_copy2d(Backend *b, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows) {
    (void)b;
    for (size_t r = 0; r < rows; r++) memcpy(hptr(dst) + r * dpitch, hptr(src) + r * spitch, width);
}
static void dev_to_host(Backend *b, void *host, const void *src, size_t bytes) { (void)b; n_to_host++; scramble(host, hptr(src), bytes); }
static void dev_from_host(Backend *b, void *dst, const void *host, size_t bytes) { (void)b; n_from_host++; scramble(hptr(dst), host, bytes); }
static void dev_sync(Backend *b) { (void)b; n_syncs++; }
static const BackendOps dev_ops = {
    .alloc = dev_alloc, .free = dev_free, .zero = dev_zero, .copy = dev_copy, .copy2d = dev_copy2d,
    .to_host = dev_to_host, .from_host = dev_from_host, .sync = dev_sync,
};
static Backend dev = { .ops = &dev_ops, .name = "scrambled", .dtype = DT_F32, .device_memory = 1 };

// Page-locked host memory stand-in: counts what the staging asks for.
static size_t n_host_allocs, n_host_frees;
static void *pinned_alloc(size_t bytes) { n_host_allocs++; return xmalloc(bytes); }
static void pinned_free(void *p) { n_host_frees++; free(p); }

// Device buffers from host values and back.
static void *up(const void *host, size_t bytes) {
    void *d = dev_alloc(&dev, bytes);
    scramble(hptr(d), host, bytes);
    return d;
}
static void down(void *host, const void *d, size_t bytes) { scramble(host, hptr(d), bytes); }
static void dfree(void *d) { dev_free(&dev, d); }

// ---- helpers ----
#define member grid_member
static float val(int world_rank, size_t i) { return (float)(world_rank * 100 + (int)(i % 89) - 40); }
// Values whose sums over ≤ 4 ranks are exact in bf16 (multiples of 1/8 below 32 in magnitude).
static float bval(int world_rank, size_t i) { return (float)((int)((i * 7 + (size_t)world_rank * 13) % 128) - 64) / 8.0f; }
static uint16_t bf16_of(float f) {   // exact for the values above
    uint32_t u; memcpy(&u, &f, sizeof u); return (uint16_t)(u >> 16);
}
static float f32_of(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, sizeof f); return f; }
// Round to nearest even through double: the reference for comm_bf16_reduce.
static uint16_t ref_bf16(double x) {
    float f = (float)x;
    if (isnan(f)) return 0x7fc0;
    uint32_t u; memcpy(&u, &f, sizeof u);
    uint32_t lo = u & 0xffffu, hi = u >> 16;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
    return (uint16_t)hi;
}

// ---- bf16 arithmetic (every rank, no communication) ----
TEST(bf16_reduce_rounds_fp32_result) {
    uint64_t s = 12345;
    for (int t = 0; t < 20000; t++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint16_t a = (uint16_t)(s >> 20), b = (uint16_t)(s >> 40);
        if ((a & 0x7f80) == 0x7f80 || (b & 0x7f80) == 0x7f80) continue;   // finite inputs here
        for (int op = OP_SUM; op <= OP_MIN; op++) {
            uint16_t io = b;
            comm_bf16_reduce(&a, &io, 1, (CommOp)op);
            double x = f32_of(a), y = f32_of(b);
            // fp32 result first (the documented semantics), then rounded to bf16
            float r = op == OP_SUM ? (float)(x + y) : op == OP_MAX ? (float)(x > y ? x : y) : (float)(x < y ? x : y);
            uint16_t want = ref_bf16(r);
            int both_nan = isnan(f32_of(io)) && isnan(f32_of(want));
            CK(io == want || both_nan || (f32_of(io) == 0 && f32_of(want) == 0),
               "op %d: %g, %g -> 0x%04x, expected 0x%04x", op, x, y, io, want);
        }
    }
    // ties go to even; overflow goes to infinity; NaN and inf - inf stay NaN
    struct { float a, b; CommOp op; float want; } cases[] = {
        { 1.0f, 0x1p-8f, OP_SUM, 1.0f },                 // exact tie, even mantissa: down
        { 1.0f + 0x1p-7f, 0x1p-8f, OP_SUM, 1.0f + 0x1p-6f }, // tie, odd mantissa: up
        { 1.0f, 0x1.8p-8f, OP_SUM, 1.0f + 0x1p-7f },      // above the tie: up
        { 0x1.fep127f, 0x1.fep127f, OP_SUM, INFINITY },   // bf16 max + max
        { -3.0f, 2.0f, OP_MAX, 2.0f }, { -3.0f, 2.0f, OP_MIN, -3.0f },
        { INFINITY, -INFINITY, OP_SUM, NAN }, { NAN, 1.0f, OP_SUM, NAN }, { 1.0f, NAN, OP_MAX, NAN }, { NAN, 1.0f, OP_MIN, NAN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t a = bf16_of(cases[i].a), io = bf16_of(cases[i].b);
        comm_bf16_reduce(&a, &io, 1, cases[i].op);
        float got = f32_of(io);
        CK(isnan(cases[i].want) ? isnan(got) : got == cases[i].want, "case %zu: %a op%d %a = %a, expected %a",
           i, cases[i].a, cases[i].op, cases[i].b, got, cases[i].want);
    }
}

// ---- collectives with device buffers ----
// The results of every operation on every group, for buffers on the scrambled device.
static void check_device_collectives(Comm *c) {
    static const size_t ns[] = { 0, 1, 37, 100 };
    for (int g = 0; g < GROUP_COUNT; g++) {
        CommGroup G_ = (CommGroup)g;
        const char *gn = comm_group_name(G_);
        int s = c->size[g], me = c->grank[g];
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            size_t n = ns[k], nb = n ? n : 1;
            float *h = xmalloc(nb * s * sizeof(float)), *h2 = xmalloc(nb * s * sizeof(float));
            double *hd = xmalloc(nb * sizeof(double));
            uint16_t *hb = xmalloc(nb * sizeof(uint16_t)), *hbm = xmalloc(nb * sizeof(uint16_t));

            // all-reduce: f32 sum and max, f64 sum, bf16 sum and max
            for (size_t i = 0; i < n; i++) {
                h[i] = h2[i] = val(c->rank, i); hd[i] = 0.5 * val(c->rank, i);
                hb[i] = hbm[i] = bf16_of(bval(c->rank, i));
            }
            float *d = up(h, nb * sizeof(float)), *dm = up(h2, nb * sizeof(float));
            double *dd = up(hd, nb * sizeof(double));
            uint16_t *db = up(hb, nb * 2), *dbm = up(hbm, nb * 2);
            comm_all_reduce(c, G_, d, n, DTYPE_F32, OP_SUM, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, dm, n, DTYPE_F32, OP_MAX, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, dd, n, DTYPE_F64, OP_SUM, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, db, n, DTYPE_BF16, OP_SUM, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, dbm, n, DTYPE_BF16, OP_MAX, PHASE_FORWARD, -1);
            down(h, d, n * sizeof(float)); down(h2, dm, n * sizeof(float)); down(hd, dd, n * sizeof(double));
            down(hb, db, n * 2); down(hbm, dbm, n * 2);
            for (size_t i = 0; i < n; i++) {
                float e = 0, mx = -1e30f, be = 0, bm = -1e30f;
                for (int j = 0; j < s; j++) {
                    float v = val(member(c, G_, j), i), w = bval(member(c, G_, j), i);
                    e += v; if (v > mx) mx = v; be += w; if (w > bm) bm = w;
                }
                CK(h[i] == e, "%s all_reduce n=%zu [%zu] = %g, expected %g", gn, n, i, h[i], e);
                CK(h2[i] == mx, "%s all_reduce_max n=%zu [%zu] = %g, expected %g", gn, n, i, h2[i], mx);
                CK(hd[i] == 0.5 * e, "%s all_reduce_f64 n=%zu [%zu] = %g", gn, n, i, hd[i]);
                CK(f32_of(hb[i]) == be, "%s bf16 sum n=%zu [%zu] = %g, expected %g", gn, n, i, f32_of(hb[i]), be);
                CK(f32_of(hbm[i]) == bm, "%s bf16 max n=%zu [%zu] = %g, expected %g", gn, n, i, f32_of(hbm[i]), bm);
            }
            dfree(d); dfree(dm); dfree(dd); dfree(db); dfree(dbm);

            // all-gather: separate buffers and in place
            for (size_t i = 0; i < n; i++) h[i] = val(c->rank, i);
            float *din = up(h, nb * sizeof(float));
            float *dout = dev_alloc(&dev, nb * s * sizeof(float)), *dip = dev_alloc(&dev, nb * s * sizeof(float));
            scramble(hptr(dip + (size_t)me * n), h, n * sizeof(float));
            comm_all_gather(c, G_, din, dout, n, DTYPE_F32, PHASE_FORWARD, -1);
            comm_all_gather(c, G_, dip + (size_t)me * n, dip, n, DTYPE_F32, PHASE_FORWARD, -1);
            down(h, dout, n * s * sizeof(float)); down(h2, dip, n * s * sizeof(float));
            for (int j = 0; j < s; j++)
                for (size_t i = 0; i < n; i++) {
                    CK(h[(size_t)j * n + i] == val(member(c, G_, j), i), "%s all_gather n=%zu chunk %d [%zu]", gn, n, j, i);
                    CK(h2[(size_t)j * n + i] == val(member(c, G_, j), i), "%s all_gather in place n=%zu chunk %d [%zu]", gn, n, j, i);
                }
            dfree(din); dfree(dout); dfree(dip);

            // reduce-scatter: separate and in place
            for (size_t i = 0; i < n * (size_t)s; i++) h[i] = val(c->rank, i);
            float *rin = up(h, nb * s * sizeof(float)), *rip = up(h, nb * s * sizeof(float)), *rout = dev_alloc(&dev, nb * sizeof(float));
            comm_reduce_scatter(c, G_, rin, rout, n, DTYPE_F32, PHASE_BACKWARD, -1);
            comm_reduce_scatter(c, G_, rip, rip, n, DTYPE_F32, PHASE_BACKWARD, -1);
            down(h, rout, n * sizeof(float)); down(h2, rip, n * sizeof(float));
            for (size_t i = 0; i < n; i++) {
                float e = 0;
                for (int j = 0; j < s; j++) e += val(member(c, G_, j), (size_t)me * n + i);
                CK(h[i] == e, "%s reduce_scatter n=%zu [%zu] = %g, expected %g", gn, n, i, h[i], e);
                CK(h2[i] == e, "%s reduce_scatter in place n=%zu [%zu] = %g, expected %g", gn, n, i, h2[i], e);
            }
            dfree(rin); dfree(rip); dfree(rout);

            // broadcast from the last group rank
            for (size_t i = 0; i < n; i++) h[i] = val(c->rank, i);
            float *bc = up(h, nb * sizeof(float));
            comm_broadcast(c, G_, bc, n, DTYPE_F32, s - 1, PHASE_OTHER, -1);
            down(h, bc, n * sizeof(float));
            for (size_t i = 0; i < n; i++) CK(h[i] == val(member(c, G_, s - 1), i), "%s broadcast n=%zu [%zu]", gn, n, i);
            dfree(bc);

            if (s >= 2) {   // sendrecv around the ring, then paired send/recv
                int right = (me + 1) % s, left = (me + s - 1) % s, peer = me ^ 1;
                for (size_t i = 0; i < n; i++) { h[i] = val(c->rank, i); h2[i] = -1; }
                float *sb = up(h, nb * sizeof(float)), *rb = up(h2, nb * sizeof(float));
                comm_sendrecv(c, G_, sb, n, right, 5, rb, n, left, 5, DTYPE_F32, PHASE_PIPELINE, -1);
                down(h2, rb, n * sizeof(float));
                for (size_t i = 0; i < n; i++) CK(h2[i] == val(member(c, G_, left), i), "%s sendrecv n=%zu [%zu]", gn, n, i);
                if (peer < s) {
                    if (me % 2 == 0) { comm_send(c, G_, sb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); comm_recv(c, G_, rb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); }
                    else { comm_recv(c, G_, rb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); comm_send(c, G_, sb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); }
                    down(h2, rb, n * sizeof(float));
                    for (size_t i = 0; i < n; i++) CK(h2[i] == val(member(c, G_, peer), i), "%s send/recv n=%zu [%zu]", gn, n, i);
                }
                dfree(sb); dfree(rb);
            }
            free(h); free(h2); free(hd); free(hb); free(hbm);
        }
        // gather along the last dim: [rows, cl] → [rows, s·cl], placed by the device's copy2d
        size_t rows = 3, cl = 5, cols = cl * (size_t)s;
        float *h = xmalloc(rows * cols * sizeof(float));
        for (size_t r = 0; r < rows; r++) for (size_t j = 0; j < cl; j++) h[r * cl + j] = val(c->rank, r * 10 + j);
        float *din = up(h, rows * cl * sizeof(float)), *dout = dev_alloc(&dev, rows * cols * sizeof(float));
        comm_all_gather_cols(c, G_, din, dout, rows, cl, DTYPE_F32, PHASE_FORWARD, -1);
        down(h, dout, rows * cols * sizeof(float));
        for (size_t r = 0; r < rows; r++)
            for (int i = 0; i < s; i++)
                for (size_t j = 0; j < cl; j++)
                    CK(h[r * cols + (size_t)i * cl + j] == val(member(c, G_, i), r * 10 + j),
                       "%s all_gather_cols [%zu, %zu]", gn, r, (size_t)i * cl + j);
        free(h); dfree(din); dfree(dout);
        comm_barrier(c, G_, PHASE_OTHER, -1);
    }
}

TEST(device_buffers_staged) {
    comm_set_device(&G, &dev, pinned_alloc, pinned_free);
    size_t th = n_to_host, fh = n_from_host;
    check_device_collectives(&G);
    if (n_ranks > 1) {
        CK(n_to_host > th && n_from_host > fh, "no staging copies seen (to_host %zu, from_host %zu)", n_to_host - th, n_from_host - fh);
        CK(n_host_allocs > 0, "staging did not use the page-locked allocator");
    }
    comm_set_device(&G, NULL, NULL, NULL);
    CK(n_host_frees == n_host_allocs, "staging buffers: %zu allocated, %zu freed", n_host_allocs, n_host_frees);
}

// The same with MPI messages limited to 7 elements: staged messages are split too.
TEST(device_buffers_split_messages) {
    comm_set_device(&G, &dev, pinned_alloc, pinned_free);
    G.mpi_max_count = 7;
    check_device_collectives(&G);
    G.mpi_max_count = INT32_MAX;
    comm_set_device(&G, NULL, NULL, NULL);
}

// The staging path with the CPU back end's own buffer ops (backend/cpu/) in the device's
// place: its memory is host memory, marked device memory here so that the MPI back end
// stages through its to_host/from_host and the front end copies with its copy/copy2d;
// the gather buffer is counted in its memory as communication staging and given back.
TEST(cpu_backend_as_device) {
    Backend *cpu = backend_cpu(DT_F32);
    Backend as_dev = *cpu;
    as_dev.device_memory = 1;
    key = 0;                          // plain host buffers for up()/down()
    comm_set_device(&G, &as_dev, pinned_alloc, pinned_free);
    check_device_collectives(&G);
    if (n_ranks > 1) CK(as_dev.mem[MEM_COMM] > 0, "the gather buffer was not counted as MEM_COMM");
    comm_set_device(&G, NULL, NULL, NULL);
    CK(as_dev.mem[MEM_COMM] == 0, "MEM_COMM %zu bytes after comm_set_device(NULL)", as_dev.mem[MEM_COMM]);
    key = 0x5A;
    backend_free(cpu);
}

// Device buffers change nothing in the accounting: the same calls on host buffers and on
// device buffers give the same table (calls, elements, bytes).
TEST(device_accounting_identical) {
    comm_set_n_layers(&G, 2);
    CommStat host[COMM_KIND_COUNT][GROUP_COUNT], devs[COMM_KIND_COUNT][GROUP_COUNT];
    for (int pass = 0; pass < 2; pass++) {
        comm_stats_reset(&G);
        key = pass ? 0x5A : 0;           // pass 0: plain host buffers, no device
        if (pass) comm_set_device(&G, &dev, pinned_alloc, pinned_free);
        check_device_collectives(&G);
        if (pass) comm_set_device(&G, NULL, NULL, NULL);
        for (int k = 0; k < COMM_KIND_COUNT; k++)
            for (int g = 0; g < GROUP_COUNT; g++)
                (pass ? devs : host)[k][g] = comm_stats_sum(&G, k, COMM_ANY, g, COMM_ANY);
    }
    for (int k = 0; k < COMM_KIND_COUNT; k++)
        for (int g = 0; g < GROUP_COUNT; g++)
            CK(host[k][g].calls == devs[k][g].calls && host[k][g].elements == devs[k][g].elements &&
               host[k][g].bytes == devs[k][g].bytes, "%s/%s: host %llu calls %llu el %llu B, device %llu %llu %llu",
               comm_kind_name((CommKind)k), comm_group_name((CommGroup)g),
               (unsigned long long)host[k][g].calls, (unsigned long long)host[k][g].elements, (unsigned long long)host[k][g].bytes,
               (unsigned long long)devs[k][g].calls, (unsigned long long)devs[k][g].elements, (unsigned long long)devs[k][g].bytes);
    key = 0x5A;
    comm_stats_reset(&G);
}

// ---- the device-timing protocol of the front end ----
// A back end that is MPI plus timing hooks: each timed call is "measured" as 0.125 s and
// booked only at the flush, as the NCCL back end books its CUDA events.
static size_t pending[4096]; static int n_pending, n_begun;
static void fake_begin(Comm *c) { (void)c; n_begun++; }
static void fake_end(Comm *c, size_t cell) { (void)c; if (n_pending < 4096) pending[n_pending++] = cell; }
static void fake_flush(Comm *c) { for (int i = 0; i < n_pending; i++) c->stats[pending[i]].seconds += 0.125; n_pending = 0; }

TEST(device_timing_hooks) {
    CommBackend timed = comm_backend_mpi;
    timed.name = "mpi+events";
    timed.time_begin = fake_begin; timed.time_end = fake_end; timed.time_flush = fake_flush;
    const CommBackend *saved = G.backend;
    G.backend = &timed;
    comm_set_n_layers(&G, 2);
    n_pending = n_begun = 0;
    key = 0;                        // host buffers this time (device unset): plain MPI underneath
    check_device_collectives(&G);
    key = 0x5A;
    CK(n_ranks == 1 || n_pending > 0, "no call was timed through the hooks");
    // the queries flush: every row's seconds is 0.125 per call, except recv rows of
    // exchanges (an exchange's time is booked on its send row)
    int it = 0; CommStatRow r; int rows = 0;
    while (comm_stats_next(&G, &it, &r)) {
        rows++;
        double want = 0.125 * (double)r.s.calls;
        if (r.kind == COMM_RECV) {
            CK(r.s.seconds <= want, "recv row %s/%s: %g s for %llu calls", comm_phase_name(r.phase), comm_group_name(r.group),
               r.s.seconds, (unsigned long long)r.s.calls);
        } else {
            CK(r.s.seconds == want, "row %s/%s/%s: %g s, expected %g (MPI_Wtime leaked in, or a call untimed)",
               comm_kind_name(r.kind), comm_phase_name(r.phase), comm_group_name(r.group), r.s.seconds, want);
        }
    }
    CK(n_pending == 0, "%d timings still pending after a query", n_pending);
    CK(n_ranks == 1 || rows > 0, "no rows");
    comm_stats_reset(&G);
    G.backend = saved;
}

// The host entry points (comm_host_*) take host memory whatever comm_set_device says: with
// the scrambled device set and a back end with device-timing hooks in place, host scalars
// and tables reduce, broadcast and travel correctly, nothing is staged (a staged host
// pointer would be read through hptr() and fault), no device timing hook is called, and
// each call is accounted like its device twin.
TEST(host_entry_points_ignore_device) {
    CommBackend timed = comm_backend_mpi;
    timed.name = "mpi+events";
    timed.time_begin = fake_begin; timed.time_end = fake_end; timed.time_flush = fake_flush;
    const CommBackend *saved = G.backend;
    comm_set_device(&G, &dev, pinned_alloc, pinned_free);
    G.backend = &timed;
    comm_stats_reset(&G);
    n_pending = n_begun = 0;
    size_t th = n_to_host, fh = n_from_host;
    uint64_t want_calls = 0;
    for (int g = 0; g < GROUP_COUNT; g++) {
        CommGroup G_ = (CommGroup)g;
        int s = G.size[g];
        double x[3] = { 1.0, (double)G.rank, -(double)G.rank }, want1 = 0, want2 = 0;
        for (int i = 0; i < s; i++) want1 += member(&G, G_, i);
        for (int i = 0; i < s; i++) if (member(&G, G_, i) > want2) want2 = member(&G, G_, i);
        comm_host_all_reduce(&G, G_, x, 2, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
        comm_host_all_reduce(&G, G_, x + 2, 1, DTYPE_F64, OP_MIN, PHASE_OTHER, -1);
        CK(x[0] == (double)s && x[1] == want1 && x[2] == -want2, "%s: host all-reduce gave %g %g %g, want %d %g %g",
           comm_group_name(G_), x[0], x[1], x[2], s, want1, -want2);
        unsigned char id[5] = { 0 };
        if (G.grank[g] == 0) memcpy(id, "run42", 5);
        comm_host_broadcast(&G, G_, id, 5, DTYPE_U8, 0, PHASE_OTHER, -1);
        CK(!memcmp(id, "run42", 5), "%s: host broadcast", comm_group_name(G_));
        if (s > 1) want_calls += 3;
    }
    if (n_ranks > 1) {   // world ranks 0 and 1: a table there and back
        float t[4] = { 0 };
        if (G.rank == 0) { for (int i = 0; i < 4; i++) t[i] = (float)i + 0.5f; comm_host_send(&G, GROUP_WORLD, t, 4, DTYPE_F32, 1, 100, PHASE_OTHER, -1); }
        if (G.rank == 1) {
            comm_host_recv(&G, GROUP_WORLD, t, 4, DTYPE_F32, 0, 100, PHASE_OTHER, -1);
            CK(t[0] == 0.5f && t[3] == 3.5f, "host recv gave %g .. %g", t[0], t[3]);
        }
        if (G.rank < 2) want_calls += 1;
    }
    CK(n_to_host == th && n_from_host == fh, "host buffers were staged through the device (%zu to_host, %zu from_host)",
       n_to_host - th, n_from_host - fh);
    CK(n_begun == 0 && n_pending == 0, "%d host calls went through the device timing hooks", n_begun);
    CommStat all = comm_stats_sum(&G, COMM_ANY, PHASE_OTHER, COMM_ANY, COMM_ANY);
    CK(all.calls == want_calls, "accounted %llu host calls, expected %llu", (unsigned long long)all.calls,
       (unsigned long long)want_calls);
    CK(all.seconds >= 0, "seconds %g", all.seconds);
    G.backend = saved;
    comm_set_device(&G, NULL, NULL, NULL);
    comm_stats_reset(&G);
}

// The NCCL switch refuses where it cannot work and leaves the MPI back end in place.
TEST(nccl_switch_refuses_cleanly) {
    char why[256] = "";
    int rc = comm_use_nccl(&G, &dev, why, sizeof why);
    CK(rc == 1, "comm_use_nccl accepted the scrambled host 'device'");
    CK(why[0] != 0, "no reason given");
    CK(G.backend == &comm_backend_mpi, "back end changed to %s", G.backend ? G.backend->name : "NULL");
    if (my_rank == 0) fprintf(stderr, "  (comm_use_nccl: %s)\n", why);
    // still communicates
    float x = 1;
    comm_all_reduce(&G, GROUP_WORLD, &x, 1, DTYPE_F32, OP_SUM, PHASE_OTHER, -1);
    CK(x == (float)n_ranks, "all-reduce after the refusal: %g", x);
}

int main(int argc, char **argv) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &my_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n_ranks));
    int tp = argc > 1 ? atoi(argv[1]) : n_ranks, pp = argc > 2 ? atoi(argv[2]) : 1, dp = argc > 3 ? atoi(argv[3]) : 1;
    comm_init(&G, tp, pp, dp);
    RUN_ALL(bf16_reduce_rounds_fp32_result);
    RUN_ALL(device_buffers_staged);
    RUN_ALL(device_buffers_split_messages);
    RUN_ALL(cpu_backend_as_device);
    RUN_ALL(device_accounting_identical);
    RUN_ALL(device_timing_hooks);
    RUN_ALL(host_entry_points_ignore_device);
    RUN_ALL(nccl_switch_refuses_cleanly);
    comm_free(&G);
    CHECK_MPI(MPI_Finalize());
    TL_EXIT();
}
