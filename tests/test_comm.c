// test_comm.c — the process grid, every collective's results, exact accounting, the
// account-only and virtual modes, and the pipeline schedules.
//
// Run directly (a 1-rank grid) or under mpirun with the grid as arguments:
//   mpirun -np 4 --oversubscribe build/test_comm 2 1 2      (tp pp dp; default: world 1 1)
// Every rank checks its own results; after each test rank 0 prints the AND over all ranks
// ("PASS name" / "FAIL name: ...") and the failing ranks print details ("  rank r: ...") to
// stderr. tests/t_comm.sh runs the grids 1×1×1 2×1×1 4×1×1 2×2×1 2×1×2 1×2×2.
#include <math.h>
#include <time.h>
#define TL_USAGE "the accounted collectives over a tp x pp x dp grid: test_comm [tp pp dp] under mpirun -np tp*pp*dp\n"
#include "testlib.h"
#define MPI_TL_MAX_DETAILS 6
#include "mpitestlib.h"
#include "../src/parallel/comm.h"
#include "../src/parallel/schedule.h"
TL_MAIN_DEFS

static Comm G;
int my_rank, n_ranks, n_details;


// ---- helpers ----
// World rank of member i of group g, as seen from this rank (the TP-fastest layout).
static int member(const Comm *c, CommGroup g, int i) {
    switch (g) {
    case GROUP_TP: return grid_world_rank(c->tp, c->dp, i, c->dp_rank, c->pp_rank);
    case GROUP_DP: return grid_world_rank(c->tp, c->dp, c->tp_rank, i, c->pp_rank);
    case GROUP_PP: return grid_world_rank(c->tp, c->dp, c->tp_rank, c->dp_rank, i);
    default: return i;
    }
}
// A value every rank can predict for any other rank: small integers, exact in float sums.
static float val(int world_rank, size_t i) { return (float)(world_rank * 100 + (int)(i % 89) - 40); }
static float *fbuf(size_t n) { return xmalloc((n ? n : 1) * sizeof(float)); }

// ---- grid ----
TEST(grid_check_messages) {
    char m[256];
    CK(grid_check(2, 1, 2, 4, m, sizeof m) == 0 && m[0] == 0, "2x1x2 on 4 ranks rejected: %s", m);
    CK(grid_check(2, 1, 2, 3, m, sizeof m) == 1, "2x1x2 on 3 ranks accepted");
    CK(strstr(m, "the process grid tp×pp×dp = 2×1×2 = 4 needs 4 ranks, but mpirun started 3"), "message: %s", m);
    CK(grid_check(0, 1, 1, 1, m, sizeof m) == 1 && strstr(m, "at least 1"), "tp=0: %s", m);
    CK(grid_check(1, -1, 1, 0, m, sizeof m) == 1, "pp=-1 accepted");
    CK(grid_check(4, 2, 8, 0, m, sizeof m) == 0, "world 0 (factors only) rejected: %s", m);
    CK(grid_check(65536, 65536, 2, 0, m, sizeof m) == 1, "overflowing grid accepted");
    for (int r = 0; r < 24; r++) {   // coordinates invert the layout formula
        int t, d, p;
        grid_coords(2, 3, r, &t, &d, &p);
        CK(grid_world_rank(2, 3, t, d, p) == r && t == r % 2 && d == (r / 2) % 3 && p == r / 6,
           "grid_coords(2,3,%d) = %d %d %d", r, t, d, p);
    }
}

TEST(grid_layout) {
    Comm *c = &G;
    CK(c->rank == my_rank && c->world == n_ranks, "rank %d world %d", c->rank, c->world);
    CK(c->rank == c->tp_rank + c->tp * (c->dp_rank + c->dp * c->pp_rank), "layout formula");
    int sizes[GROUP_COUNT] = { c->tp, c->dp, c->pp, n_ranks };
    for (int g = 0; g < GROUP_COUNT; g++) {
        int s = 0; CHECK_MPI(MPI_Comm_size(c->mpi[g], &s));
        CK(s == sizes[g] && c->size[g] == s, "%s size %d", comm_group_name((CommGroup)g), s);
        int *all = xmalloc((size_t)s * sizeof(int));
        CHECK_MPI(MPI_Allgather(&c->rank, 1, MPI_INT, all, 1, MPI_INT, c->mpi[g]));
        for (int i = 0; i < s; i++)
            CK(all[i] == member(c, (CommGroup)g, i), "%s member %d is world rank %d, expected %d",
               comm_group_name((CommGroup)g), i, all[i], member(c, (CommGroup)g, i));
        free(all);
    }
    // TP groups are runs of tp consecutive ranks (one node)
    CK(member(c, GROUP_TP, 0) % c->tp == 0 && member(c, GROUP_TP, c->tp - 1) == member(c, GROUP_TP, 0) + c->tp - 1, "tp run");
    CK(c->pp_prev == (c->pp_rank ? member(c, GROUP_PP, c->pp_rank - 1) : -1), "pp_prev %d", c->pp_prev);
    CK(c->pp_next == (c->pp_rank < c->pp - 1 ? member(c, GROUP_PP, c->pp_rank + 1) : -1), "pp_next %d", c->pp_next);
}

// ---- collective results, for one message-size limit ----
static void check_collectives(Comm *c) {
    static const size_t ns[] = { 0, 1, 37, 100 };
    for (int g = 0; g < GROUP_COUNT; g++) {
        CommGroup G_ = (CommGroup)g;
        int s = c->size[g], me = c->grank[g];
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            size_t n = ns[k];
            // all-reduce: sum, max (float, double), int sum
            float *b = fbuf(n), *m = fbuf(n); double *d = xmalloc((n + 1) * sizeof(double));
            int32_t *iv = xmalloc((n + 1) * sizeof(int32_t));
            for (size_t i = 0; i < n; i++) { b[i] = m[i] = val(c->rank, i); d[i] = 0.5 * val(c->rank, i); iv[i] = (int32_t)i * c->rank; }
            comm_all_reduce(c, G_, b, n, DTYPE_F32, OP_SUM, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, m, n, DTYPE_F32, OP_MAX, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, d, n, DTYPE_F64, OP_SUM, PHASE_FORWARD, -1);
            comm_all_reduce(c, G_, iv, n, DTYPE_I32, OP_SUM, PHASE_FORWARD, -1);
            for (size_t i = 0; i < n; i++) {
                float e = 0, mx = -1e30f; int32_t ie = 0;
                for (int j = 0; j < s; j++) { float v = val(member(c, G_, j), i); e += v; if (v > mx) mx = v; ie += (int32_t)i * member(c, G_, j); }
                CK(b[i] == e, "%s all_reduce n=%zu [%zu] = %g, expected %g", comm_group_name(G_), n, i, b[i], e);
                CK(m[i] == mx, "%s all_reduce_max n=%zu [%zu] = %g, expected %g", comm_group_name(G_), n, i, m[i], mx);
                CK(d[i] == 0.5 * e, "%s all_reduce_f64 n=%zu [%zu] = %g", comm_group_name(G_), n, i, d[i]);
                CK(iv[i] == ie, "%s all_reduce i32 n=%zu [%zu] = %d, expected %d", comm_group_name(G_), n, i, iv[i], ie);
            }
            double dm[2] = { -(double)c->rank, (double)c->rank * 3 };
            comm_all_reduce(c, G_, dm, 2, DTYPE_F64, OP_MAX, PHASE_FORWARD, -1);
            CK(dm[0] == -(double)member(c, G_, 0) && dm[1] == 3.0 * member(c, G_, s - 1), "%s max_f64 %g %g", comm_group_name(G_), dm[0], dm[1]);
            free(b); free(m); free(d); free(iv);

            // all-gather: separate buffers and in place
            float *in = fbuf(n), *out = fbuf(n * (size_t)s), *ip = fbuf(n * (size_t)s);
            for (size_t i = 0; i < n; i++) in[i] = ip[(size_t)me * n + i] = val(c->rank, i);
            comm_all_gather(c, G_, in, out, n, DTYPE_F32, PHASE_FORWARD, -1);
            comm_all_gather(c, G_, ip + (size_t)me * n, ip, n, DTYPE_F32, PHASE_FORWARD, -1);
            for (int j = 0; j < s; j++)
                for (size_t i = 0; i < n; i++) {
                    CK(out[(size_t)j * n + i] == val(member(c, G_, j), i), "%s all_gather n=%zu chunk %d [%zu]", comm_group_name(G_), n, j, i);
                    CK(ip[(size_t)j * n + i] == val(member(c, G_, j), i), "%s all_gather in place n=%zu chunk %d [%zu]", comm_group_name(G_), n, j, i);
                }
            free(in); free(out); free(ip);

            // reduce-scatter: in [s·n] where block j of rank w is val(w, j·n + i)
            float *rin = fbuf(n * (size_t)s), *rout = fbuf(n), *rip = fbuf(n * (size_t)s);
            for (size_t i = 0; i < n * (size_t)s; i++) rin[i] = rip[i] = val(c->rank, i);
            comm_reduce_scatter(c, G_, rin, rout, n, DTYPE_F32, PHASE_BACKWARD, -1);
            comm_reduce_scatter(c, G_, rip, rip, n, DTYPE_F32, PHASE_BACKWARD, -1);
            for (size_t i = 0; i < n; i++) {
                float e = 0;
                for (int j = 0; j < s; j++) e += val(member(c, G_, j), (size_t)me * n + i);
                CK(rout[i] == e, "%s reduce_scatter n=%zu [%zu] = %g, expected %g", comm_group_name(G_), n, i, rout[i], e);
                CK(rip[i] == e, "%s reduce_scatter in place n=%zu [%zu] = %g, expected %g", comm_group_name(G_), n, i, rip[i], e);
            }
            free(rin); free(rout); free(rip);

            // broadcast from the last group rank
            float *bc = fbuf(n);
            for (size_t i = 0; i < n; i++) bc[i] = val(c->rank, i);
            comm_broadcast(c, G_, bc, n, DTYPE_F32, s - 1, PHASE_OTHER, -1);
            for (size_t i = 0; i < n; i++)
                CK(bc[i] == val(member(c, G_, s - 1), i), "%s broadcast n=%zu [%zu]", comm_group_name(G_), n, i);
            free(bc);

            if (s < 2) continue;
            // sendrecv around the ring, then paired send/recv
            int right = (me + 1) % s, left = (me + s - 1) % s;
            float *sb = fbuf(n), *rb = fbuf(n);
            for (size_t i = 0; i < n; i++) { sb[i] = val(c->rank, i); rb[i] = -1; }
            comm_sendrecv(c, G_, sb, n, right, 5, rb, n, left, 5, DTYPE_F32, PHASE_PIPELINE, -1);
            for (size_t i = 0; i < n; i++) CK(rb[i] == val(member(c, G_, left), i), "%s sendrecv n=%zu [%zu]", comm_group_name(G_), n, i);
            // pairs (0,1), (2,3): even sends first
            int peer = me ^ 1;
            if (peer < s) {
                for (size_t i = 0; i < n; i++) rb[i] = -1;
                if (me % 2 == 0) { comm_send(c, G_, sb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); comm_recv(c, G_, rb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); }
                else { comm_recv(c, G_, rb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); comm_send(c, G_, sb, n, DTYPE_F32, peer, 7, PHASE_PIPELINE, -1); }
                for (size_t i = 0; i < n; i++) CK(rb[i] == val(member(c, G_, peer), i), "%s send/recv n=%zu [%zu]", comm_group_name(G_), n, i);
            }
            free(sb); free(rb);
        }
        // gather along the last dim: [rows, cl] → [rows, s·cl]
        size_t rows = 3, cl = 5, cols = cl * (size_t)s;
        float *in = fbuf(rows * cl), *out = fbuf(rows * cols);
        for (size_t r = 0; r < rows; r++) for (size_t j = 0; j < cl; j++) in[r * cl + j] = val(c->rank, r * 10 + j);
        comm_all_gather_cols(c, G_, in, out, rows, cl, DTYPE_F32, PHASE_FORWARD, -1);
        for (size_t r = 0; r < rows; r++)
            for (int i = 0; i < s; i++)
                for (size_t j = 0; j < cl; j++)
                    CK(out[r * cols + (size_t)i * cl + j] == val(member(c, G_, i), r * 10 + j),
                       "%s all_gather_cols [%zu, %zu]", comm_group_name(G_), r, (size_t)i * cl + j);
        free(in); free(out);
        comm_barrier(c, G_, PHASE_OTHER, -1);
    }
    // pipeline neighbours: activation to pp_next, from pp_prev
    if (c->pp > 1) {
        float a[4], r[4] = { -1, -1, -1, -1 };
        for (int i = 0; i < 4; i++) a[i] = val(c->rank, (size_t)i);
        if (c->pp_rank % 2 == 0) {
            if (c->pp_next >= 0) comm_send(c, GROUP_PP, a, 4, DTYPE_F32, c->pp_rank + 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            if (c->pp_prev >= 0) comm_recv(c, GROUP_PP, r, 4, DTYPE_F32, c->pp_rank - 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
        } else {
            comm_recv(c, GROUP_PP, r, 4, DTYPE_F32, c->pp_rank - 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
            if (c->pp_next >= 0) comm_send(c, GROUP_PP, a, 4, DTYPE_F32, c->pp_rank + 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1);
        }
        if (c->pp_prev >= 0) for (int i = 0; i < 4; i++) CK(r[i] == val(c->pp_prev, (size_t)i), "pp activation from stage %d", c->pp_rank - 1);
    }
}

TEST(collectives_results) { check_collectives(&G); }

// The same with MPI messages limited to 7 elements: every long message is split.
TEST(collectives_split_messages) {
    comm_stats_reset(&G);
    G.mpi_max_count = 7;
    check_collectives(&G);
    G.mpi_max_count = INT32_MAX;
    CommStat ar = comm_stats_sum(&G, COMM_ALL_REDUCE, COMM_ANY, GROUP_WORLD, COMM_ANY);
    // 4 sizes × 5 all-reduces (sum, max, f64, i32, max_f64), each one accounted call however split
    CK(ar.calls == (n_ranks > 1 ? 20u : 0u), "world all_reduce calls %llu", (unsigned long long)ar.calls);
}

// ---- accounting ----
// The scripted sequence (buffers may be NULL in account-only mode). Layers 0..2.
typedef struct { float *a, *b, *c; double *d; } Bufs;
static void script(Comm *c, Bufs *B) {
    int s_tp = c->size[GROUP_TP], s_pp = c->size[GROUP_PP];
    for (int l = 0; l < 3; l++) {
        comm_all_reduce(c, GROUP_TP, B->a, 12, DTYPE_F32, OP_SUM, PHASE_FORWARD, l);
        comm_all_reduce(c, GROUP_TP, B->a, 12, DTYPE_F32, OP_SUM, PHASE_FORWARD, l);
        comm_all_reduce(c, GROUP_TP, B->a, 5, DTYPE_F32, OP_SUM, PHASE_BACKWARD, l);
        comm_all_gather(c, GROUP_TP, B->a, B->b, 5, DTYPE_F32, PHASE_FORWARD, l);          // b: 5·tp
        comm_all_gather_cols(c, GROUP_TP, B->a, B->b, 2, 3, DTYPE_F32, PHASE_RECOMPUTE, l); // 6·tp
        comm_reduce_scatter(c, GROUP_DP, B->b, B->c, 3, DTYPE_F32, PHASE_BACKWARD, l);      // in 3·dp
        if (s_pp > 1) {
            int me = c->grank[GROUP_PP];
            comm_sendrecv(c, GROUP_PP, B->a, 7, (me + 1) % s_pp, 3, B->c, 7, (me + s_pp - 1) % s_pp, 3, DTYPE_F32, PHASE_PIPELINE, l);
        }
    }
    comm_all_reduce(c, GROUP_DP, B->d, 4, DTYPE_F64, OP_SUM, PHASE_OPTIMIZER, -1);
    comm_all_reduce(c, GROUP_TP, B->a, 9, DTYPE_F32, OP_MAX, PHASE_FORWARD, -1);
    comm_broadcast(c, GROUP_WORLD, B->a, 6, DTYPE_F32, 0, PHASE_OTHER, -1);
    comm_barrier(c, GROUP_WORLD, PHASE_OTHER, -1);
    comm_barrier(c, GROUP_DP, PHASE_OTHER, -1);
    (void)s_tp;
}
// What script() must have counted, from the conventions alone.
static CommStat expected(const Comm *c, int k, int p, int g, int l) {
    CommStat e = {0};
    int tp = c->size[GROUP_TP] > 1, dp = c->size[GROUP_DP] > 1, pp = c->size[GROUP_PP] > 1, w = c->size[GROUP_WORLD] > 1;
    uint64_t T = (uint64_t)c->size[GROUP_TP], D = (uint64_t)c->size[GROUP_DP];
#define SET(calls_, el_, es_) do { e.calls = (calls_); e.elements = (el_); e.bytes = (uint64_t)(el_) * (es_); } while (0)
    size_t fb = (size_t)c->account_float_bytes;
    if (l >= 0) {
        if (k == COMM_ALL_REDUCE && p == PHASE_FORWARD && g == GROUP_TP && tp) SET(2, 24, fb);
        if (k == COMM_ALL_REDUCE && p == PHASE_BACKWARD && g == GROUP_TP && tp) SET(1, 5, fb);
        if (k == COMM_ALL_GATHER && p == PHASE_FORWARD && g == GROUP_TP && tp) SET(1, 5 * T, fb);
        if (k == COMM_ALL_GATHER && p == PHASE_RECOMPUTE && g == GROUP_TP && tp) SET(1, 6 * T, fb);
        if (k == COMM_REDUCE_SCATTER && p == PHASE_BACKWARD && g == GROUP_DP && dp) SET(1, 3 * D, fb);
        if ((k == COMM_SEND || k == COMM_RECV) && p == PHASE_PIPELINE && g == GROUP_PP && pp) SET(1, 7, fb);
    } else {
        if (k == COMM_ALL_REDUCE && p == PHASE_OPTIMIZER && g == GROUP_DP && dp) SET(1, 4, 8);
        if (k == COMM_ALL_REDUCE && p == PHASE_FORWARD && g == GROUP_TP && tp) SET(1, 9, fb);
        if (k == COMM_BROADCAST && p == PHASE_OTHER && g == GROUP_WORLD && w) SET(1, 6, fb);
        if (k == COMM_BARRIER && p == PHASE_OTHER && g == GROUP_WORLD && w) SET(1, 0, 0);
        if (k == COMM_BARRIER && p == PHASE_OTHER && g == GROUP_DP && dp) SET(1, 0, 0);
    }
#undef SET
    return e;
}
// Compare the whole table, the sums and the exported rows with expected(); returns #rows.
static int check_table(const Comm *c, const char *label) {
    int nonzero = 0;
    CommStat tot = {0};
    for (int k = 0; k < COMM_KIND_COUNT; k++) for (int p = 0; p < PHASE_COUNT; p++)
    for (int g = 0; g < GROUP_COUNT; g++) for (int l = -1; l < c->n_layers; l++) {
        CommStat s = comm_stats_sum(c, k, p, g, l), e = expected(c, k, p, g, l);
        CK(s.calls == e.calls && s.elements == e.elements && s.bytes == e.bytes,
           "%s: %s/%s/%s/layer %d: calls %llu elements %llu bytes %llu, expected %llu %llu %llu", label,
           comm_kind_name((CommKind)k), comm_phase_name((CommPhase)p), comm_group_name((CommGroup)g), l,
           (unsigned long long)s.calls, (unsigned long long)s.elements, (unsigned long long)s.bytes,
           (unsigned long long)e.calls, (unsigned long long)e.elements, (unsigned long long)e.bytes);
        nonzero += e.calls > 0;
        tot.calls += e.calls; tot.elements += e.elements; tot.bytes += e.bytes;
    }
    CommStat all = comm_stats_sum(c, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY);
    CK(all.calls == tot.calls && all.elements == tot.elements && all.bytes == tot.bytes, "%s: grand total", label);
    // per-layer sum equals the sum of its cells
    for (int l = -1; l < c->n_layers; l++) {
        uint64_t el = 0;
        for (int k = 0; k < COMM_KIND_COUNT; k++) for (int p = 0; p < PHASE_COUNT; p++)
            for (int g = 0; g < GROUP_COUNT; g++) el += expected(c, k, p, g, l).elements;
        CK(comm_stats_sum(c, COMM_ANY, COMM_ANY, COMM_ANY, l).elements == el, "%s: layer %d total", label, l);
    }
    int it = 0, rows = 0; CommStatRow r;
    while (comm_stats_next(c, &it, &r)) {
        CommStat e = expected(c, r.kind, r.phase, r.group, r.layer);
        CK(e.calls && r.s.calls == e.calls && r.s.elements == e.elements && r.s.bytes == e.bytes,
           "%s: exported row %s/%s/%s/%d", label, comm_kind_name(r.kind), comm_phase_name(r.phase), comm_group_name(r.group), r.layer);
        rows++;
    }
    CK(rows == nonzero, "%s: %d exported rows, expected %d", label, rows, nonzero);
    return rows;
}
static Bufs bufs_new(float fill) {
    Bufs B = { fbuf(64), fbuf(64), fbuf(64), xmalloc(8 * sizeof(double)) };
    for (int i = 0; i < 64; i++) { B.a[i] = fill + (float)i; B.b[i] = fill - (float)i; B.c[i] = 2 * fill + (float)i; }
    for (int i = 0; i < 8; i++) B.d[i] = fill * i;
    return B;
}
static void bufs_free(Bufs *B) { free(B->a); free(B->b); free(B->c); free(B->d); }

TEST(accounting_exact) {
    comm_set_n_layers(&G, 3);
    Bufs B = bufs_new(1);
    script(&G, &B);
    check_table(&G, "live");
    // layer outside the table
    CK(G.n_layers == 3, "n_layers");
    comm_stats_reset(&G);
    CK(comm_stats_sum(&G, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY).calls == 0, "reset");
    int it = 0; CommStatRow r;
    CK(!comm_stats_next(&G, &it, &r), "rows after reset");
    bufs_free(&B);
}

// Waiting apart from moving data (comm_measure_waits): in every group that holds rank 0, each
// member in turn arrives DELAY late at an all-reduce, a gather and a barrier; rank 0's rows then
// say it waited about DELAY when another member was late and hardly at all when it was late
// itself; 0 <= wait <= seconds, every call's wait measured, the results untouched.
TEST(wait_split_finds_the_late_rank) {
    const double DELAY = 0.12;
    comm_set_n_layers(&G, 1);
    for (int g = 0; g < GROUP_COUNT; g++) {
        if (G.size[g] < 2 || member(&G, (CommGroup)g, 0) != 0) continue;
        for (int late = 0; late < G.size[g]; late++) {
            comm_stats_reset(&G);
            float x[64], y[64 * 8];
            for (int i = 0; i < 64; i++) x[i] = (float)(G.grank[g] + i);
            for (int k = 0; k < 3; k++) {
                CHECK_MPI(MPI_Barrier(G.mpi[g]));   // raw MPI: not in the table
                if (G.grank[g] == late) { struct timespec ts = { 0, (long)(DELAY * 1e9) }; nanosleep(&ts, NULL); }
                if (k == 0) comm_all_reduce(&G, (CommGroup)g, x, 64, DTYPE_F32, OP_SUM, PHASE_OTHER, 0);
                else if (k == 1) comm_all_gather(&G, (CommGroup)g, x, y, 64, DTYPE_F32, PHASE_OTHER, 0);
                else comm_barrier(&G, (CommGroup)g, PHASE_OTHER, 0);
            }
            comm_measure_waits(&G);
            float want = 0;
            for (int r = 0; r < G.size[g]; r++) want += (float)r;
            CK(x[0] == want, "group %s: the all-reduce's result %g, expected %g", comm_group_name((CommGroup)g), x[0], want);
            if (my_rank != 0) continue;
            const CommKind kinds[3] = { COMM_ALL_REDUCE, COMM_ALL_GATHER, COMM_BARRIER };
            for (int k = 0; k < 3; k++) {
                CommStat s = comm_stats_sum(&G, kinds[k], PHASE_OTHER, g, 0);
                CK(s.calls == 1 && s.waited_calls == 1, "%s over %s: %llu calls, %llu waits measured", comm_kind_name(kinds[k]),
                   comm_group_name((CommGroup)g), (unsigned long long)s.calls, (unsigned long long)s.waited_calls);
                CK(s.wait_seconds >= 0 && s.wait_seconds <= s.seconds, "%s over %s: wait %g of %g s", comm_kind_name(kinds[k]),
                   comm_group_name((CommGroup)g), s.wait_seconds, s.seconds);
                if (late == 0) CK(s.wait_seconds < DELAY / 2, "%s over %s, rank 0 late by %g s: it waited %g s",
                                  comm_kind_name(kinds[k]), comm_group_name((CommGroup)g), DELAY, s.wait_seconds);
                else CK(s.wait_seconds > DELAY / 2, "%s over %s, member %d late by %g s: rank 0 waited only %g s",
                        comm_kind_name(kinds[k]), comm_group_name((CommGroup)g), late, DELAY, s.wait_seconds);
            }
        }
    }
    comm_stats_reset(&G);
}

TEST(account_only_moves_no_data) {
    comm_set_n_layers(&G, 3);
    // every operation on every group of size > 1 leaves its buffers as they were
    for (int g = 0; g < GROUP_COUNT; g++) {
        int s = G.size[g], me = G.grank[g];
        if (s < 2) continue;
        Bufs B = bufs_new(-7), R = bufs_new(-7);
        CommGroup gg = (CommGroup)g;
        G.account_only = 1;
        comm_all_reduce(&G, gg, B.a, 16, DTYPE_F32, OP_SUM, PHASE_FORWARD, 0);
        comm_all_reduce(&G, gg, B.a, 16, DTYPE_F32, OP_MAX, PHASE_FORWARD, 0);
        comm_all_reduce(&G, gg, B.d, 8, DTYPE_F64, OP_SUM, PHASE_FORWARD, 0);
        comm_all_gather(&G, gg, B.a, B.b, 16, DTYPE_F32, PHASE_FORWARD, 0);
        comm_all_gather_cols(&G, gg, B.a, B.b, 4, 4, DTYPE_F32, PHASE_FORWARD, 0);
        comm_reduce_scatter(&G, gg, B.b, B.c, 16, DTYPE_F32, PHASE_FORWARD, 0);
        comm_broadcast(&G, gg, B.a, 16, DTYPE_F32, s - 1, PHASE_FORWARD, 0);
        comm_sendrecv(&G, gg, B.a, 16, (me + 1) % s, 1, B.c, 16, (me + s - 1) % s, 1, DTYPE_F32, PHASE_PIPELINE, 0);
        comm_recv(&G, gg, B.c, 16, DTYPE_F32, (me + 1) % s, 2, PHASE_PIPELINE, 0);   // would block if it were real
        comm_send(&G, gg, B.a, 16, DTYPE_F32, (me + 1) % s, 2, PHASE_PIPELINE, 0);
        comm_barrier(&G, gg, PHASE_OTHER, 0);
        G.account_only = 0;
        CK(!memcmp(B.a, R.a, 64 * sizeof(float)) && !memcmp(B.b, R.b, 64 * sizeof(float)) &&
           !memcmp(B.c, R.c, 64 * sizeof(float)) && !memcmp(B.d, R.d, 8 * sizeof(double)),
           "%s: a buffer changed in account-only mode", comm_group_name(gg));
        bufs_free(&B); bufs_free(&R);
    }
    // and it counts what the live run counts (check_table compares with expected()),
    // with NULL buffers and no time
    comm_stats_reset(&G);
    G.account_only = 1;
    Bufs Z = {0};
    script(&G, &Z);
    G.account_only = 0;
    check_table(&G, "account-only");
    CK(comm_stats_sum(&G, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY).seconds == 0, "account-only time is not 0");
}

// A group of size 1: a local no-op, not counted (all-gather / reduce-scatter copy in → out).
TEST(size1_group_not_counted) {
    comm_stats_reset(&G);
    for (int g = 0; g < GROUP_COUNT; g++) {
        if (G.size[g] != 1) continue;
        float a[5] = { 1, 2, 3, 4, 5 }, o[5] = {0}, r[5] = {0};
        comm_all_reduce(&G, (CommGroup)g, a, 5, DTYPE_F32, OP_SUM, PHASE_FORWARD, -1);
        comm_broadcast(&G, (CommGroup)g, a, 5, DTYPE_F32, 0, PHASE_FORWARD, -1);
        comm_all_gather(&G, (CommGroup)g, a, o, 5, DTYPE_F32, PHASE_FORWARD, -1);
        comm_reduce_scatter(&G, (CommGroup)g, a, r, 5, DTYPE_F32, PHASE_FORWARD, -1);
        comm_barrier(&G, (CommGroup)g, PHASE_FORWARD, -1);
        for (int i = 0; i < 5; i++)
            CK(a[i] == (float)(i + 1) && o[i] == a[i] && r[i] == a[i], "%s size-1 results", comm_group_name((CommGroup)g));
        G.account_only = 1;   // the local copy happens in account-only mode too; NULL buffers are skipped
        float o2[5] = {0};
        comm_all_gather(&G, (CommGroup)g, a, o2, 5, DTYPE_F32, PHASE_FORWARD, -1);
        comm_all_gather(&G, (CommGroup)g, NULL, NULL, 5, DTYPE_F32, PHASE_FORWARD, -1);
        comm_reduce_scatter(&G, (CommGroup)g, NULL, NULL, 5, DTYPE_F32, PHASE_FORWARD, -1);
        G.account_only = 0;
        CK(o2[0] == 1 && o2[4] == 5, "%s account-only size-1 copy did not happen", comm_group_name((CommGroup)g));
    }
    // the single-process grid: virtual 1x1x1, every call local, nothing counted
    Comm one;
    comm_init_virtual(&one, 1, 1, 1);
    float x[6] = { 1, 2, 3, 4, 5, 6 }, y[6] = {0};
    comm_all_reduce(&one, GROUP_TP, x, 6, DTYPE_F32, OP_SUM, PHASE_FORWARD, -1);
    comm_all_gather_cols(&one, GROUP_TP, x, y, 2, 3, DTYPE_F32, PHASE_FORWARD, -1);
    comm_reduce_scatter(&one, GROUP_WORLD, x, x, 6, DTYPE_F32, PHASE_FORWARD, -1);
    comm_barrier(&one, GROUP_WORLD, PHASE_OTHER, -1);
    for (int i = 0; i < 6; i++) CK(x[i] == (float)(i + 1) && y[i] == x[i], "single-process grid [%d]", i);
    CK(comm_stats_sum(&one, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY).calls == 0, "single-process grid counted");
    comm_free(&one);
    CK(comm_stats_sum(&G, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY).calls == 0, "size-1 calls were counted");
}

// ---- virtual grid: no MPI, configured group sizes ----
TEST(virtual_grid_accounting) {
    static const int grids[][3] = { {4, 2, 2}, {1, 1, 1}, {2, 4, 1}, {8, 1, 3} };
    for (size_t i = 0; i < sizeof grids / sizeof *grids; i++) {
        Comm v;
        comm_init_virtual(&v, grids[i][0], grids[i][1], grids[i][2]);
        CK(v.account_only && v.is_virtual && v.size[GROUP_TP] == grids[i][0] && v.size[GROUP_PP] == grids[i][1] &&
           v.size[GROUP_DP] == grids[i][2] && v.world == grids[i][0] * grids[i][1] * grids[i][2], "virtual sizes");
        CK(v.pp_next == (grids[i][1] > 1 ? grids[i][0] * grids[i][2] : -1) && v.pp_prev == -1, "virtual neighbours");
        comm_set_n_layers(&v, 3);
        Bufs Z = {0};
        script(&v, &Z);
        check_table(&v, "virtual");
        comm_free(&v);
    }
}

// The paper's per-layer forward TP volume (§3 table, Fig. 7) at LLaMA-7B, b=4, s=4096,
// TP=4, bf16 (2 bytes per element), on a virtual grid with NULL buffers.
TEST(paper_7b_volumes) {
    const uint64_t b = 4, s = 4096, d = 4096, dff = 11008, r = 1024, bs = b * s;
    Comm v;
    comm_init_virtual(&v, 4, 1, 1);
    v.account_float_bytes = 2;
    comm_set_n_layers(&v, 32);
    for (int l = 0; l < 32; l++) {   // BTP grouped: [bs,3r] [bs,r] [bs,2r] [bs,r]
        comm_all_reduce(&v, GROUP_TP, NULL, bs * 3 * r, DTYPE_F32, OP_SUM, PHASE_FORWARD, l);
        comm_all_reduce(&v, GROUP_TP, NULL, bs * r, DTYPE_F32, OP_SUM, PHASE_FORWARD, l);
        comm_all_reduce(&v, GROUP_TP, NULL, bs * 2 * r, DTYPE_F32, OP_SUM, PHASE_FORWARD, l);
        comm_all_reduce(&v, GROUP_TP, NULL, bs * r, DTYPE_F32, OP_SUM, PHASE_FORWARD, l);
    }
    CommStat btp = comm_stats_sum(&v, COMM_ALL_REDUCE, PHASE_FORWARD, GROUP_TP, 7);
    CK(btp.calls == 4 && btp.elements == 7 * bs * r && btp.bytes == 14 * bs * r, "BTP layer: %llu elements",
       (unsigned long long)btp.elements);
    CK(fabs(btp.bytes / 1073741824.0 - 0.22) < 0.005, "BTP %.3f GiB per layer, paper 0.22 GB", btp.bytes / 1073741824.0);
    CK(comm_stats_sum(&v, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY).bytes == 32 * 14 * bs * r, "32 layers");
    comm_stats_reset(&v);
    comm_all_reduce(&v, GROUP_TP, NULL, bs * d, DTYPE_F32, OP_SUM, PHASE_FORWARD, 0);   // FullRank: 2 × [bs, d]
    comm_all_reduce(&v, GROUP_TP, NULL, bs * d, DTYPE_F32, OP_SUM, PHASE_FORWARD, 0);
    CommStat fr = comm_stats_sum(&v, COMM_ANY, PHASE_FORWARD, COMM_ANY, 0);
    CK(fabs(fr.bytes / 1073741824.0 - 0.25) < 0.005, "FullRank %.3f GiB, paper 0.25", fr.bytes / 1073741824.0);
    comm_stats_reset(&v);   // Vanilla: q k v o (d), gate up (d_ff), down (d)
    static const int widths_dff[7] = { 0, 0, 0, 0, 1, 1, 0 };
    for (int i = 0; i < 7; i++) comm_all_reduce(&v, GROUP_TP, NULL, bs * (widths_dff[i] ? dff : d), DTYPE_F32, OP_SUM, PHASE_FORWARD, 0);
    CommStat va = comm_stats_sum(&v, COMM_ANY, PHASE_FORWARD, COMM_ANY, 0);
    CK(va.elements == bs * (5 * d + 2 * dff), "Vanilla elements");
    CK(fabs(va.bytes / 1073741824.0 - 1.32) < 0.03, "Vanilla %.3f GiB, paper 1.32 GB", va.bytes / 1073741824.0);
    comm_free(&v);
}

// ---- pipeline schedules (pure) ----
TEST(schedule_steps_properties) {
    for (int kind = 0; kind < 2; kind++)
    for (int P = 1; P <= 6; P++) for (int M = 1; M <= 9; M++) for (int p = 0; p < P; p++) {
        PipeStep st[18];
        int n = schedule_steps((PipeSchedule)kind, p, P, M, st);
        const char *k = schedule_name((PipeSchedule)kind);
        CK(n == 2 * M, "%s P=%d M=%d p=%d: %d steps", k, P, M, p, n);
        int nf = 0, nb = 0, fwd_at[9], ok = 1;
        for (int i = 0; i < n; i++) {
            if (st[i].op == PIPE_FORWARD) { ok &= st[i].mb == nf; fwd_at[nf++] = i; }
            else { ok &= st[i].mb == nb && st[i].mb < nf && fwd_at[st[i].mb] < i; nb++; }
        }
        CK(ok && nf == M && nb == M, "%s P=%d M=%d p=%d: each micro-batch forwarded then backwarded once, in order", k, P, M, p);
        int w = 0;
        while (w < n && st[w].op == PIPE_FORWARD) w++;
        int want_w = kind == SCHED_1F1B ? (P - p - 1 < M ? P - p : M) : M;  // warm-up + the first steady forward
        CK(w == want_w, "%s P=%d M=%d p=%d: %d forwards before the first backward, expected %d", k, P, M, p, w, want_w);
        int inflight = schedule_max_in_flight(st, n);
        int want = kind == SCHED_1F1B ? (P - p < M ? P - p : M) : M;
        CK(inflight == want, "%s P=%d M=%d p=%d: %d in flight, expected %d", k, P, M, p, inflight, want);
        if (kind == SCHED_1F1B)   // steady state alternates strictly
            for (int i = w; i + 1 < n && i < 2 * M - (P - p - 1 < M ? P - p - 1 : M); i += 2)
                CK(st[i].op == PIPE_BACKWARD || st[i + 1].op == PIPE_BACKWARD, "alternation at %d", i);
    }
}

// Build every stage's action list and simulate.
static long simulate(PipeSchedule kind, int P, int M, int fuse, int tf, int tb, PipeTiming **tim, char *msg, size_t n) {
    PipeAction *acts[8]; int na[8];
    for (int p = 0; p < P; p++) {
        PipeStep st[64];
        int ns = schedule_steps(kind, p, P, M, st);
        acts[p] = xmalloc(SCHEDULE_MAX_ACTIONS(ns) * sizeof(PipeAction));
        na[p] = schedule_actions(st, ns, p, P, fuse, acts[p]);
    }
    long t = schedule_simulate(P, (const PipeAction *const *)acts, na, tf, tb, tim, msg, n);
    for (int p = 0; p < P; p++) free(acts[p]);
    return t;
}

TEST(schedule_simulation) {
    char msg[512];
    for (int kind = 0; kind < 2; kind++)
    for (int P = 1; P <= 6; P++) for (int M = 1; M <= 12; M++) {
        PipeTiming *tim[8];
        for (int p = 0; p < P; p++) tim[p] = xcalloc((size_t)(2 * M), sizeof(PipeTiming));
        const int tf = 1, tb = 2;
        long T = simulate((PipeSchedule)kind, P, M, 1, tf, tb, tim, msg, sizeof msg);
        const char *k = schedule_name((PipeSchedule)kind);
        CK(T >= 0, "%s P=%d M=%d: %s", k, P, M, msg);
        // the classic bound: (M + P − 1)(t_f + t_b), the same bubble for both schedules
        CK(T == (long)(M + P - 1) * (tf + tb), "%s P=%d M=%d: makespan %ld, expected %d", k, P, M, T, (M + P - 1) * (tf + tb));
        // data dependencies: F(p, m) after F(p−1, m); B(p, m) after B(p+1, m)
        for (int p = 0; p < P && T >= 0; p++) {
            PipeStep st[64], sq[64];
            schedule_steps((PipeSchedule)kind, p, P, M, st);
            for (int i = 0; i < 2 * M; i++) {
                int q = st[i].op == PIPE_FORWARD ? p - 1 : p + 1;
                if (q < 0 || q >= P) continue;
                schedule_steps((PipeSchedule)kind, q, P, M, sq);
                for (int j = 0; j < 2 * M; j++)
                    if (sq[j].op == st[i].op && sq[j].mb == st[i].mb)
                        CK(tim[p][i].start >= tim[q][j].end, "%s P=%d M=%d: stage %d %c%d starts at %ld before stage %d's ends at %ld",
                           k, P, M, p, st[i].op == PIPE_FORWARD ? 'F' : 'B', st[i].mb, tim[p][i].start, q, tim[q][j].end);
            }
        }
        for (int p = 0; p < P; p++) free(tim[p]);
        // without the fused exchanges, 1F1B deadlocks with blocking sends (P, M ≥ 2); GPipe does not
        long U = simulate((PipeSchedule)kind, P, M, 0, tf, tb, NULL, msg, sizeof msg);
        if (kind == SCHED_1F1B && P >= 2 && M >= 2) CK(U < 0 && strstr(msg, "deadlock"), "unfused 1F1B P=%d M=%d did not deadlock", P, M);
        else CK(U == T, "%s unfused P=%d M=%d: %ld (%s)", k, P, M, U, msg);
    }
    // a stage that backwards out of order is caught
    PipeStep s0[8], s1[8];
    schedule_steps(SCHED_GPIPE, 0, 2, 3, s0);
    schedule_steps(SCHED_GPIPE, 1, 2, 3, s1);
    PipeStep tmp = s1[3]; s1[3] = s1[4]; s1[4] = tmp;   // B0 B1 → B1 B0 on the last stage
    PipeAction a0[24], a1[24];
    const PipeAction *acts[2] = { a0, a1 };
    int na[2] = { schedule_actions(s0, 6, 0, 2, 1, a0), schedule_actions(s1, 6, 1, 2, 1, a1) };
    CK(schedule_simulate(2, acts, na, 1, 1, NULL, msg, sizeof msg) < 0 && strstr(msg, "out of order"), "swap not caught: %s", msg);
    // the fused 1F1B actions of stage 1 of 4 with 4 micro-batches read like Megatron's loop
    PipeStep st[8]; PipeAction ac[24]; char line[512] = "", one[64];
    int n = schedule_actions(st, schedule_steps(SCHED_1F1B, 1, 4, 4, st), 1, 4, 1, ac);
    for (int i = 0; i < n; i++) { schedule_action_str(&ac[i], one, sizeof one); strcat(line, one); strcat(line, " "); }
    CK(!strcmp(line, "recv_fwd(0) forward(0) send_fwd(0) recv_fwd(1) forward(1) send_fwd(1) recv_fwd(2) forward(2) "
                     "send_fwd_recv_bwd(2,0) backward(0) send_bwd_recv_fwd(0,3) forward(3) send_fwd_recv_bwd(3,1) "
                     "backward(1) send_bwd(1) recv_bwd(2) backward(2) send_bwd(2) recv_bwd(3) backward(3) send_bwd(3) "),
       "actions: %s", line);
}

// The fused schedule actions executed over MPI on the PP group with messages long enough
// for rendezvous sends (80 KB), whole and split into pieces: each stage checks that every
// activation and gradient it receives is the one of the right stage and micro-batch.
static float code(int stage, int mb, int dir, size_t i) { return (float)(stage * 1000 + mb * 10 + dir) + (float)(i % 3); }
static void run_pipeline(PipeSchedule kind, int M, size_t n) {
    Comm *c = &G;
    int P = c->pp, p = c->pp_rank;
    PipeStep st[64]; PipeAction ac[192];
    int na = schedule_actions(st, schedule_steps(kind, p, P, M, st), p, P, 1, ac);
    float *in = fbuf((size_t)M * n), *out = fbuf((size_t)M * n), *gin = fbuf((size_t)M * n), *gout = fbuf((size_t)M * n);
    comm_stats_reset(c);
    for (int i = 0; i < na; i++) {
        int m = ac[i].mb, m2 = ac[i].mb_recv;
        switch (ac[i].kind) {
        case PA_FORWARD:
            if (p > 0) for (size_t j = 0; j < n; j++)
                if (in[(size_t)m * n + j] != code(p - 1, m, 0, j)) { CK(0, "%s stage %d: forward input of mb %d wrong at %zu", schedule_name(kind), p, m, j); break; }
            for (size_t j = 0; j < n; j++) out[(size_t)m * n + j] = code(p, m, 0, j);
            break;
        case PA_BACKWARD:
            if (p < P - 1) for (size_t j = 0; j < n; j++)
                if (gin[(size_t)m * n + j] != code(p + 1, m, 1, j)) { CK(0, "%s stage %d: gradient of mb %d wrong at %zu", schedule_name(kind), p, m, j); break; }
            for (size_t j = 0; j < n; j++) gout[(size_t)m * n + j] = code(p, m, 1, j);
            break;
        case PA_RECV_FWD: comm_recv(c, GROUP_PP, in + (size_t)m * n, n, DTYPE_F32, p - 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1); break;
        case PA_SEND_FWD: comm_send(c, GROUP_PP, out + (size_t)m * n, n, DTYPE_F32, p + 1, PIPE_TAG_FWD, PHASE_PIPELINE, -1); break;
        case PA_RECV_BWD: comm_recv(c, GROUP_PP, gin + (size_t)m * n, n, DTYPE_F32, p + 1, PIPE_TAG_BWD, PHASE_PIPELINE, -1); break;
        case PA_SEND_BWD: comm_send(c, GROUP_PP, gout + (size_t)m * n, n, DTYPE_F32, p - 1, PIPE_TAG_BWD, PHASE_PIPELINE, -1); break;
        case PA_SEND_FWD_RECV_BWD:
            comm_sendrecv(c, GROUP_PP, out + (size_t)m * n, n, p + 1, PIPE_TAG_FWD, gin + (size_t)m2 * n, n, p + 1, PIPE_TAG_BWD, DTYPE_F32, PHASE_PIPELINE, -1);
            break;
        case PA_SEND_BWD_RECV_FWD:
            comm_sendrecv(c, GROUP_PP, gout + (size_t)m * n, n, p - 1, PIPE_TAG_BWD, in + (size_t)m2 * n, n, p - 1, PIPE_TAG_FWD, DTYPE_F32, PHASE_PIPELINE, -1);
            break;
        }
    }
    uint64_t msgs = (uint64_t)M * ((p < P - 1) + (p > 0));
    CommStat sd = comm_stats_sum(c, COMM_SEND, PHASE_PIPELINE, GROUP_PP, -1), rv = comm_stats_sum(c, COMM_RECV, PHASE_PIPELINE, GROUP_PP, -1);
    CK(sd.calls == msgs && rv.calls == msgs && sd.elements == msgs * n && rv.bytes == msgs * n * 4,
       "%s stage %d: %llu sends %llu recvs, expected %llu each", schedule_name(kind), p,
       (unsigned long long)sd.calls, (unsigned long long)rv.calls, (unsigned long long)msgs);
    free(in); free(out); free(gin); free(gout);
}
TEST(pipeline_over_mpi) {
    if (G.pp < 2) return;
    run_pipeline(SCHED_1F1B, 5, 20000);
    run_pipeline(SCHED_GPIPE, 3, 20000);
    G.mpi_max_count = 4096;   // pieces: the chunked send / recv / exchange paths
    run_pipeline(SCHED_1F1B, 4, 20000);
    G.mpi_max_count = INT32_MAX;
}

// ---- started collectives (comm.h: overlap) ----
// Every element of a started sum is ((v0 + v1) + v2) ... over the group in group-rank order
// (bf16: comm_bf16_reduce after each addition), whatever the buffer's length, how MPI cuts its
// messages (mpi_max_count) or whether it overlaps (c->overlap 0: the blocking form); cutting a
// buffer into two calls changes no bit; ZeRO-1's form leaves the other pieces untouched; each
// start is counted once, as the blocking call. Values over 12 binades, so an order other than
// that one would show.
static float started_value(int grank, size_t i, int salt) {
    uint32_t h = (uint32_t)(grank * 2654435761u) ^ (uint32_t)(i * 2246822519u) ^ (uint32_t)(salt * 3266489917u);
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    return ldexpf((float)(h % 2001) - 1000.0f, (int)(h >> 28) - 6);
}
static uint16_t bf16_of(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); }
static void fill_started(void *buf, size_t n, CommDtype t, int grank, int salt) {
    for (size_t i = 0; i < n; i++) {
        float v = started_value(grank, i, salt);
        if (t == DTYPE_BF16) ((uint16_t *)buf)[i] = bf16_of(v); else ((float *)buf)[i] = v;
    }
}
// The expected sum of element i (offset `at` into every rank's buffer) in group-rank order.
static void expected_started(void *out, size_t i, size_t at, CommDtype t, int gs, int salt) {
    if (t == DTYPE_BF16) {
        uint16_t a = bf16_of(started_value(0, at + i, salt));
        for (int r = 1; r < gs; r++) { uint16_t v = bf16_of(started_value(r, at + i, salt)); comm_bf16_reduce(&v, &a, 1, OP_SUM); }
        ((uint16_t *)out)[i] = a;
    } else {
        float a = started_value(0, at + i, salt);
        for (int r = 1; r < gs; r++) a += started_value(r, at + i, salt);
        ((float *)out)[i] = a;
    }
}
// The records of the observer by their started flag: a blocking call's CALL record is not
// started; a start's records (its CALL in the blocking form, or START and WAIT) are.
typedef struct { int blocking, started, other; } StartedSeen;
static void see_started(void *ctx, const CommRecord *r) {
    StartedSeen *s = ctx;
    if (r->type == COMM_RECORD_CALL && !r->started && r->seq == 0) s->blocking++;
    else if (r->started) s->started++;
    else s->other++;
}

TEST(started_sums_in_group_rank_order) {
    const size_t sizes[] = { 0, 1, 3, 5, 37, 1000 };
    const CommGroup groups[] = { GROUP_TP, GROUP_DP, GROUP_WORLD };
    const CommDtype types[] = { DTYPE_F32, DTYPE_BF16 };
    int was_overlap = G.overlap;
    for (int gi = 0; gi < 3; gi++) {
        CommGroup g = groups[gi];
        int gs = G.size[g], me = G.grank[g];
        if (gs < 2) continue;
        for (int ti = 0; ti < 2; ti++) for (int si = 0; si < 6; si++) for (int mode = 0; mode < 4; mode++) {
            CommDtype t = types[ti];
            size_t n = sizes[si], es = comm_dtype_size(t);
            int salt = (int)(100 * gi + 10 * si + ti);
            G.overlap = mode & 1;
            G.mpi_max_count = mode & 2 ? 7 : INT32_MAX;
            char *buf = xmalloc(n * es + 8), *want = xmalloc(n * es + 8);
            for (size_t i = 0; i < n; i++) expected_started(want, i, 0, t, gs, salt);
            comm_stats_reset(&G);
            // the all-reduce, whole, then cut in two calls (started together, waited in reverse)
            fill_started(buf, n, t, me, salt);
            CommHandle h = comm_all_reduce_start(&G, g, buf, n, t, OP_SUM, PHASE_OPTIMIZER, -1);
            comm_progress(&G);
            comm_wait(&G, &h);
            CK(!memcmp(buf, want, n * es), "all-reduce over %s of %zu %s (overlap %d, max count %zu): not the group-rank-order sum",
               comm_group_name(g), n, t == DTYPE_BF16 ? "bf16" : "f32", G.overlap, G.mpi_max_count);
            fill_started(buf, n, t, me, salt);
            size_t cut = n / 3;
            CommHandle h1 = comm_all_reduce_start(&G, g, buf, cut, t, OP_SUM, PHASE_OPTIMIZER, -1);
            CommHandle h2 = comm_all_reduce_start(&G, g, buf + cut * es, n - cut, t, OP_SUM, PHASE_OPTIMIZER, -1);
            comm_wait(&G, &h2);
            comm_wait(&G, &h1);
            CK(!memcmp(buf, want, n * es), "all-reduce over %s of %zu cut at %zu: other bits", comm_group_name(g), n, cut);
            // ZeRO-1's form: pieces of generated lengths (some empty); this rank's piece summed, the rest untouched
            size_t *cnt = xcalloc((size_t)gs, sizeof *cnt), total = 0, off = 0;
            for (int r = 0; r < gs; r++) { cnt[r] = (size_t)((r * 7 + si * 3) % 5 == 0 ? 0 : (r + 1) * (si + 1)); total += cnt[r]; }
            for (int r = 0; r < me; r++) off += cnt[r];
            char *v = xmalloc(total * es + 8), *orig = xmalloc(total * es + 8), *wv = xmalloc(total * es + 8);
            fill_started(v, total, t, me, salt);
            memcpy(orig, v, total * es);
            for (size_t i = 0; i < cnt[me]; i++) expected_started(wv, i, off, t, gs, salt);
            CommHandle hv = comm_reduce_scatter_v_start(&G, g, v, cnt, t, PHASE_OPTIMIZER, -1);
            comm_wait_group(&G, COMM_ANY);
            comm_wait(&G, &hv);   // (done already: nothing)
            CK(!memcmp(v + off * es, wv, cnt[me] * es) && !memcmp(v, orig, off * es) &&
               !memcmp(v + (off + cnt[me]) * es, orig + (off + cnt[me]) * es, (total - off - cnt[me]) * es),
               "reduce-scatter-v over %s of %zu: this rank's piece not the sum or another piece touched", comm_group_name(g), total);
            CommStat ar = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_OPTIMIZER, g, -1),
                     rs = comm_stats_sum(&G, COMM_REDUCE_SCATTER, PHASE_OPTIMIZER, g, -1);
            CK(ar.calls == 3 && ar.elements == 2 * n && rs.calls == 1 && rs.elements == total,
               "counts over %s: all-reduce %llu calls %llu elements, reduce-scatter %llu %llu", comm_group_name(g),
               (unsigned long long)ar.calls, (unsigned long long)ar.elements, (unsigned long long)rs.calls, (unsigned long long)rs.elements);
            // every one of them made through a start (CommStat, CommRecord.started: §17 of
            // docs/performance-model.md); a blocking call is not
            CK(ar.started_calls == ar.calls && ar.started_bytes == ar.bytes && rs.started_calls == 1 && rs.started_bytes == rs.bytes,
               "started counts over %s: all-reduce %llu of %llu calls, reduce-scatter %llu", comm_group_name(g),
               (unsigned long long)ar.started_calls, (unsigned long long)ar.calls, (unsigned long long)rs.started_calls);
            StartedSeen seen = { 0, 0, 0 };
            G.observer = see_started;
            G.observer_ctx = &seen;
            fill_started(buf, n, t, me, salt);
            comm_all_reduce(&G, g, buf, n, t, OP_SUM, PHASE_FORWARD, -1);
            h = comm_all_reduce_start(&G, g, buf, n, t, OP_SUM, PHASE_FORWARD, -1);
            comm_wait(&G, &h);
            G.observer = NULL;
            G.observer_ctx = NULL;
            CommStat fw = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_FORWARD, g, -1);
            CK(fw.calls == 2 && fw.started_calls == 1 && fw.started_bytes == n * es, "a blocking and a started call: %llu started of %llu",
               (unsigned long long)fw.started_calls, (unsigned long long)fw.calls);
            CK(seen.blocking == 1 && seen.started == (G.overlap ? 2 : 1) && seen.other == 0,
               "records (overlap %d): %d blocking, %d started, %d mislabelled", G.overlap, seen.blocking, seen.started, seen.other);
            free(buf); free(want); free(cnt); free(v); free(orig); free(wv);
        }
    }
    G.overlap = was_overlap;
    G.mpi_max_count = INT32_MAX;
    comm_stats_reset(&G);
}

int main(int argc, char **argv) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &my_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n_ranks));
    int tp = n_ranks, pp = 1, dp = 1;
    if (argc == 4) { tp = atoi(argv[1]); pp = atoi(argv[2]); dp = atoi(argv[3]); }
    else if (argc != 1) die_input("usage: test_comm [tp pp dp]");
    comm_init(&G, tp, pp, dp);   // a wrong world size exits 2 here
    RUN_ALL(grid_check_messages);
    RUN_ALL(grid_layout);
    RUN_ALL(collectives_results);
    RUN_ALL(collectives_split_messages);
    RUN_ALL(accounting_exact);
    RUN_ALL(wait_split_finds_the_late_rank);
    RUN_ALL(account_only_moves_no_data);
    RUN_ALL(size1_group_not_counted);
    RUN_ALL(virtual_grid_accounting);
    RUN_ALL(paper_7b_volumes);
    RUN_ALL(schedule_steps_properties);
    RUN_ALL(schedule_simulation);
    RUN_ALL(pipeline_over_mpi);
    RUN_ALL(started_sums_in_group_rank_order);
    comm_free(&G);
    CHECK_MPI(MPI_Finalize());
    TL_EXIT();
}
