// calibrate — measure this machine and write the performance model's `cpu-local` profile.
//
//   build/calibrate [--out experiments/hardware/cpu-local.yaml] [--ranks 2,4] [--quick] [--best] [--threads N]
//
// Every timing runs with the threads of one rank as the trainer gives them (tools/train.c):
// --threads N (the CPU validation's domain: 1), else the cores divided among the ranks — all
// of them for the single-process tables below, cores / R in R ranks.
// Every timing is repeated and the median kept (--best: the fastest): the validation
// (analysis/validate_cpu.py) compares the model with median step times of runs on this
// shared machine, so the profile describes the machine as a run meets it.
// Measures, printing each table as it goes:
//   1. GEMMs through the engine's CPU fp32 back end (op_gemm: OpenBLAS sgemm, row-major NN,
//      one rank's threads) on a grid of shapes M × N × K, the skinny low-rank ones included (N or K
//      = 16 … 64): the profile's GEMM table;
//   2. the engine's sgemm peak (cpu_sgemm_peak_gflops: best-of-3 2048³, what the
//      trainer's MFU uses);
//   3. memory bandwidth: the engine's op_add (x += y) over 2 × 64 MiB, bytes as its OpInfo
//      counts them (2 reads + 1 write);
//   4. the engine's causal flash attention (op_attention_forward/backward) at the CPU
//      recipes' shape, as a fraction of the sgemm peak, FLOPs as its OpInfo counts
//      them (FlashAttention-2's convention, docs/performance-model.md);
//   4b. the row, element-wise and LaX ops timed as themselves; 4c. the same ops, the attention
//      and the GEMMs inside real training steps of one rank at a configuration the CPU
//      validation does not check: the in-step rates replace 4.'s and 4b.'s where the step runs
//      the op, and the GEMM table gains in_step (the step's GEMM seconds over the table's);
//   5. the engine's MPI collectives (parallel/comm.h: all-reduce, all-gather,
//      reduce-scatter, sendrecv) at 2 and 4 ranks (4 oversubscribed on this 2-core
//      machine) over message sizes 4 B … 16 MiB — each rank count in a child
//      `mpirun -np N build/calibrate --mpi-worker FILE` — then fits α (base + per-step
//      latency) and β (bus bandwidth) per collective by least squares on relative error;
//      in the same workers, the rank share: every rank times one GEMM while all compute at
//      once (ranks share this host's cores), against the same timing in this process alone;
//   5b. in the same workers, real training steps on tp = N and dp = N grids: their scalar
//      collectives' seconds per call, and the others by group and kind against the fits' price
//      of the same calls (links.intra_node.in_step_call_s, in_step_by, in_step);
//   and the fixed cost of one op call (op_overhead_s).
// Then writes the profile with the date, host, CPU and load average in its comments.
// Takes about a minute and a half on 2 cores. Timings on a shared machine vary: rerun when
// the load average was high, and never read one number as a property of the code.
#include <cblas.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../backend/ops.h"
#include "../backend/profile.h"
#include "../config/config.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/fileio.h"
#include "../core/outdir.h"
#include "../core/timer.h"
#include "../parallel/comm.h"
#include "../sim/sim.h"
#include "../train/step_record.h"
#include "../train/trainer.h"

// ---- helpers --------------------------------------------------------------------------------

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The statistic of repeated timings: the median (default: what a run on this shared machine
// meets, the statistic the validation compares with, since make exp reports median step
// times) or, with --best, the fastest (what the machine does when nothing else runs).
static int use_best = 0;
// Of n timings (seconds, sorted in place): the median or the best.
static double pick(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return use_best ? t[0] : (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]));
}

static void load_average(double la[3]) {
    if (getloadavg(la, 3) != 3) la[0] = la[1] = la[2] = -1;
}

// ---- timing the engine's ops ------------------------------------------------------------------
// An op observer that times each op between its begin and end (the CPU back end runs ops
// synchronously) and keeps the OpInfo's own FLOPs and bytes: so every rate below is counted
// exactly as the simulator's traces count it.
typedef struct { double t0, seconds, flops, bytes; } OpTimer;
static void timer_begin(void *ctx, const OpInfo *op) { (void)op; ((OpTimer *)ctx)->t0 = now_seconds(); }
static void timer_end(void *ctx, const OpInfo *op) {
    OpTimer *t = ctx;
    t->seconds = now_seconds() - t->t0;
    t->flops = op->flops;
    t->bytes = op->bytes;
}
static const OpObserver op_timer = { timer_begin, timer_end };

// Operands as a training step meets them (docs/performance-model.md §13): an op's operands were
// last touched several ops earlier and have left the core's private caches, where repeating a
// call on the same operands keeps them. Before every timed call of the GEMM grid, the attention
// and the ops timed as themselves, a read-modify-write sweep over 4 x the L2 size (4 MiB where
// the size is not known) evicts L1 and L2; the sweep is outside the op observer's timing.
static float *evict_buf;
static size_t evict_n;
static void evict_private_caches(void) {
    if (!evict_buf) {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        size_t bytes = 4 * (size_t)(l2 > 0 ? l2 : 1 << 20);
        evict_n = bytes / sizeof(float);
        evict_buf = xcalloc(evict_n, sizeof(float));
    }
    for (size_t i = 0; i < evict_n; i += 16) evict_buf[i] += 1.0f;   // one float per 64-byte line
}

static float *rand_host(size_t n, unsigned seed) {
    float *p = xaligned_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}
// n random fp32 elements in a buffer of back end b.
static void *rand_buf(Backend *b, size_t n, unsigned seed) {
    void *d = bk_alloc(b, n, DT_F32, MEM_WORK);
    float *h = rand_host(n, seed);
    op_from_host(b, d, h, n, DT_F32);
    free(h);
    return d;
}

// ---- 1. GEMM grid ---------------------------------------------------------------------------

// Seconds of one C[M,N] = A[M,K] B[K,N] (op_gemm): the median (--best: the best) of >= 3
// timed repetitions (more until min_total seconds are spent, at most 64) after a warm-up,
// each call after evict_private_caches. Small shapes repeat the call so that a repetition
// holds >= 2 ms of GEMM time (at most 64 calls: each costs a sweep).
static double time_gemm(Backend *b, int M, int N, int K, double min_total) {
    void *A = rand_buf(b, (size_t)M * K, 1), *B = rand_buf(b, (size_t)K * N, 2), *C = bk_alloc(b, (size_t)M * N, DT_F32, MEM_WORK);
    OpTimer t = { 0 };
    bk_observe(b, &op_timer, &t);
    evict_private_caches();
    op_gemm(b, TR_N, TR_N, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    int inner = t.seconds > 0 ? (int)ceil(2e-3 / t.seconds) : 64;
    if (inner < 1) inner = 1;
    if (inner > 64) inner = 64;
    double per[64], spent = 0;
    int reps = 0;
    for (; reps < 64 && (reps < 3 || spent < min_total); reps++) {
        double sum = 0;
        for (int i = 0; i < inner; i++) {
            evict_private_caches();
            op_gemm(b, TR_N, TR_N, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
            sum += t.seconds;
        }
        spent += sum;
        per[reps] = sum / inner;
    }
    double best = pick(per, reps);
    bk_observe(b, NULL, NULL);
    bk_free(b, A, (size_t)M * K, DT_F32, MEM_WORK);
    bk_free(b, B, (size_t)K * N, DT_F32, MEM_WORK);
    bk_free(b, C, (size_t)M * N, DT_F32, MEM_WORK);
    return best;
}

// The grid is swept `passes` times and each shape keeps the median (--best: the best) of its
// sweeps: a burst of other processes then spoils one pass of a shape, not the shape.
static void measure_gemm(Backend *b, HwGemm *g, const int *Ms, int nM, const int *Ns, int nN, const int *Ks, int nK,
                         int passes, double min_total) {
    g->present = 1;
    g->model = GEMM_TABLE;
    g->nM = nM; g->nN = nN; g->nK = nK;
    g->Ms = xcalloc((size_t)nM, sizeof(int)); memcpy(g->Ms, Ms, sizeof(int) * (size_t)nM);
    g->Ns = xcalloc((size_t)nN, sizeof(int)); memcpy(g->Ns, Ns, sizeof(int) * (size_t)nN);
    g->Ks = xcalloc((size_t)nK, sizeof(int)); memcpy(g->Ks, Ks, sizeof(int) * (size_t)nK);
    g->rate = xcalloc((size_t)(nM * nN * nK), sizeof(double));
    size_t cells = (size_t)nM * nN * nK;
    double *secs = xcalloc(cells * (size_t)passes, sizeof(double));   // [cell][pass]
    for (int pass = 0; pass < passes; pass++)
        for (int a = 0; a < nM; a++)
            for (int n = 0; n < nN; n++)
                for (int k = 0; k < nK; k++)
                    secs[(((size_t)a * nN + n) * nK + k) * passes + pass] = time_gemm(b, Ms[a], Ns[n], Ks[k], min_total);
    for (int a = 0; a < nM; a++)
        for (int n = 0; n < nN; n++)
            for (int k = 0; k < nK; k++) {
                size_t cell = ((size_t)a * nN + n) * nK + k;
                g->rate[cell] = 2.0 * Ms[a] * Ns[n] * Ks[k] / pick(&secs[cell * passes], passes);
            }
    free(secs);
    printf("\n1. GEMM GFLOP/s (op_gemm, fp32, row-major NN, %d threads; %s of %d sweeps), rows M x N, columns K\n",
           omp_get_max_threads(), use_best ? "best" : "median", passes);
    for (int a = 0; a < nM; a++) {
        printf("%6s %6s", "M", "N");
        for (int k = 0; k < nK; k++) printf("  K=%-6d", Ks[k]);
        printf("\n");
        for (int n = 0; n < nN; n++) {
            printf("%6d %6d", Ms[a], Ns[n]);
            for (int k = 0; k < nK; k++) printf("  %8.2f", g->rate[((size_t)a * nN + n) * nK + k] / 1e9);
            printf("\n");
        }
    }
}

// ---- 3. memory bandwidth --------------------------------------------------------------------

// Bytes/s of op_add (x[n] += y[n]) as its OpInfo counts the bytes; the median (--best: the
// best) of the passes after the first (which faults the pages in).
static double measure_bandwidth(Backend *b, size_t n, int reps) {
    void *x = rand_buf(b, n, 3), *y = rand_buf(b, n, 4);
    OpTimer t = { 0 };
    bk_observe(b, &op_timer, &t);
    double per[64], bytes = 0;
    if (reps > 63) reps = 63;
    for (int r = 0; r < reps + 1; r++) {
        op_add(b, x, y, n);
        if (r > 0) per[r - 1] = t.seconds;
        bytes = t.bytes;
    }
    bk_observe(b, NULL, NULL);
    bk_free(b, x, n, DT_F32, MEM_WORK);
    bk_free(b, y, n, DT_F32, MEM_WORK);
    return bytes / pick(per, reps);
}

// The fixed cost of one op call (dispatch, the observer, an OpenMP parallel region under the
// engine's passive wait policy): the median (--best: the best) of 201 op_add calls on 64 floats.
static double measure_op_overhead(Backend *b) {
    void *x = rand_buf(b, 64, 3), *y = rand_buf(b, 64, 4);
    OpTimer t = { 0 };
    bk_observe(b, &op_timer, &t);
    double per[201];
    op_add(b, x, y, 64);
    for (int r = 0; r < 201; r++) { op_add(b, x, y, 64); per[r] = t.seconds; }
    bk_observe(b, NULL, NULL);
    bk_free(b, x, 64, DT_F32, MEM_WORK);
    bk_free(b, y, 64, DT_F32, MEM_WORK);
    return pick(per, 201);
}

// ---- 4. attention ---------------------------------------------------------------------------

// FLOP/s of the engine's causal attention, forward and backward, FLOPs as the ops report them
// (FlashAttention-2's convention); the median (--best: the best) of 7 calls each after a warm-up.
static void measure_attention(Backend *b, int B, int T, int H, int hd, double *fwd_rate, double *bwd_rate) {
    size_t nq = (size_t)B * T * H * hd, nl = (size_t)B * H * T;
    void *q = rand_buf(b, nq, 5), *k = rand_buf(b, nq, 6), *v = rand_buf(b, nq, 7), *dout = rand_buf(b, nq, 8);
    void *out = bk_alloc(b, nq, DT_F32, MEM_WORK), *dq = bk_alloc(b, nq, DT_F32, MEM_WORK);
    void *dk = bk_alloc(b, nq, DT_F32, MEM_WORK), *dv = bk_alloc(b, nq, DT_F32, MEM_WORK);
    float *lse = bk_alloc(b, nl, DT_F32, MEM_WORK);
    OpTimer t = { 0 };
    bk_observe(b, &op_timer, &t);
    double tf[7], tb[7], ff = 0, fb = 0;
    for (int r = 0; r < 8; r++) {   // r = 0: warm-up
        evict_private_caches();
        op_attention_forward(b, out, lse, q, k, v, B, T, H, H, hd);
        if (r > 0) { tf[r - 1] = t.seconds; ff = t.flops; }
        evict_private_caches();
        op_attention_backward(b, dq, dk, dv, dout, out, q, k, v, lse, B, T, H, H, hd);
        if (r > 0) { tb[r - 1] = t.seconds; fb = t.flops; }
    }
    *fwd_rate = ff / pick(tf, 7);
    *bwd_rate = fb / pick(tb, 7);
    bk_observe(b, NULL, NULL);
    void *bufs[] = { q, k, v, dout, out, dq, dk, dv };
    for (int i = 0; i < 8; i++) bk_free(b, bufs[i], nq, DT_F32, MEM_WORK);
    bk_free(b, lse, nl, DT_F32, MEM_WORK);
}

// ---- 4b. ops with their own kernels --------------------------------------------------------

// Ops whose kernels the GEMM table and the streaming bandwidth do not describe are measured
// as themselves, each at a recipe-sized shape, and priced so (op_rates: named ops, whole calls):
//  * LaX's crossing ops (docs/lax.md): custom loops, not sgemm — FLOP/s of the kron gate,
//    bytes/s of LayerNorm over r, at N 1536 tokens, r 40 = 5 × 8;
//  * the CPU back end's element-wise and row kernels that do more than stream their bytes:
//    an exp, a division or a square root per element (cross-entropy, SiLU, SwiGLU, RMSNorm,
//    AdamW), a reduction along each row or over a tensor (rowsumsq, rowdot, sumsq_multi), a
//    gather or scatter (the embedding) — at sizes of the recipes' kind that the CPU validation
//    does not check (N 1536 tokens of d 160, SwiGLU at d_ff 432, a vocabulary of 2560, a BTP
//    bottleneck of 3 slots of r 40, 1.25 × 2^20 parameters: the validated recipe has N 1024,
//    d 128, d_ff 344, r 32, V 2048), whose activations sit in the caches, these kernels are bound by their
//    arithmetic or by a reduction's dependency chain, not by the DRAM bandwidth of op_add over
//    64 MiB (3.): priced at it,
//    cross-entropy's forward and rowsumsq took 4–5× their modeled time inside real steps
//    (thread CPU time, 2026-12-02). bytes/s as their OpInfo counts them;
//  * the streaming ops on a step's activations ([N, d] residual adds, RoPE on q and k of
//    12 × 128 tokens, 5 heads of 32): their tensors (~1 MiB) sit in L2, where
//    3.'s DRAM stream over 64 MiB priced them 2–4× slow (and moves with what other guests on
//    the host do to DRAM, which a cache-resident op does not meet). The streaming ops on whole
//    parameter or gradient buffers (zero, copy, cast) stay on 3.'s bandwidth.
// Each: the median (--best: the best) of 7 calls after a warm-up, each call after
// evict_private_caches: the operands out of L1 and L2 as a step meets them (timed hot, the same
// call repeated, ops at these very shapes ran 2x faster than inside a step: §13 of
// docs/performance-model.md).
typedef struct { const char *name; int per_byte; double rate; } NamedRate;
static const char *const named_ops[] = {
    "kron_gate_forward", "kron_gate_backward",   // the first two per FLOP, the rest per byte
    "layernorm_forward", "layernorm_backward",
    "rmsnorm_forward", "rmsnorm_backward", "rowsumsq", "rownorm", "scale_rows", "rowdot", "sharded_rmsnorm_backward",
    "silu_forward", "silu_backward", "swiglu_forward", "swiglu_backward", "embedding_forward", "embedding_backward",
    "xent_forward", "xent_backward", "xent_fused", "sumsq_multi", "adamw", "add", "rope_forward", "rope_backward" };
enum { N_NAMED = (int)(sizeof named_ops / sizeof *named_ops) };
static int measure_named_ops(Backend *b, NamedRate *out) {
    // Shapes of the recipes' kind but none the CPU validation checks (its recipe: N 1024 or 512
    // tokens, d 128, d_ff 344, r 32, V 2048, 4 heads of 32): a rate is measured out of sample.
    const int N = 1536, r1 = 5, r2 = 8, r = r1 * r2, d = 160, d_ff = 432, V = 2560, G = 3;
    const size_t P = (size_t)5 << 18, big = (size_t)N * V;   // parameters; logits
    void *X = rand_buf(b, P, 11), *Y = rand_buf(b, P, 12), *Z = rand_buf(b, P, 13), *W = rand_buf(b, P, 14);
    void *L = bk_alloc(b, big, DT_F32, MEM_WORK), *L0 = rand_buf(b, big, 15);   // the logits, refreshed from L0
    void *G1 = rand_buf(b, (size_t)r1 * r1, 16), *G2 = rand_buf(b, (size_t)r2 * r2, 17);
    void *dG1 = rand_buf(b, (size_t)r1 * r1, 18), *dG2 = rand_buf(b, (size_t)r2 * r2, 19);
    void *gam = rand_buf(b, (size_t)d, 20), *bet = rand_buf(b, (size_t)d, 21), *dgam = rand_buf(b, (size_t)d, 22), *dbet = rand_buf(b, (size_t)d, 23);
    float *mean = bk_alloc(b, (size_t)N, DT_F32, MEM_WORK), *rstd = bk_alloc(b, (size_t)N, DT_F32, MEM_WORK);
    float *dot = bk_alloc(b, (size_t)N, DT_F32, MEM_WORK), *S = bk_alloc(b, (size_t)N, DT_F32, MEM_WORK);
    double *sumexp = bk_alloc(b, (size_t)N, DT_F64, MEM_WORK), *tlogit = bk_alloc(b, (size_t)N, DT_F64, MEM_WORK);
    int32_t *tok = bk_alloc(b, (size_t)N, DT_I32, MEM_WORK), *htok = xcalloc((size_t)N, sizeof *htok);
    for (int i = 0; i < N; i++) htok[i] = (int32_t)((i * 7919L) % V);
    op_from_host(b, tok, htok, (size_t)N, DT_I32);
    free(htok);
    float *mo = bk_alloc(b, P, DT_F32, MEM_WORK), *vo = bk_alloc(b, P, DT_F32, MEM_WORK);   // AdamW's moments: from 0
    op_zero(b, mo, P, DT_F32);
    op_zero(b, vo, P, DT_F32);
    SlotView sv = { N, G, r, G * r, { 0, (size_t)r, 2 * (size_t)r } };
    const void *xs[1] = { X };
    size_t lens[1] = { P };
    double ws[1] = { 1 };
    AdamWSpan span = { X, Y, mo, vo, NULL, P, 0.01f, NULL, 0 };
    AdamWHyper hyp = { 1e-3f, 0.9f, 0.95f, 1e-8f, 1, 1.0f };
    op_rowsumsq(b, S, X, N, d);   // S > 0 before the ops that read it
    OpTimer t = { 0 };
    bk_observe(b, &op_timer, &t);
    for (int op = 0; op < N_NAMED; op++) {
        double per[7];
        for (int k = 0; k < 8; k++) {   // k = 0: warm-up
            hyp.t = k + 1;
            evict_private_caches();
            // the logits as the head's GEMM has just written them (the backward works in place
            // as the head's does: model/head.c), after the sweep; the copy's own timing is
            // replaced by the op's
            if (op >= 17 && op <= 19) op_copy(b, L, L0, big, DT_F32);
            switch (op) {
            case 0: op_kron_gate_forward(b, Y, r, X, r, G1, G2, N, r1, r2); break;
            case 1: op_kron_gate_backward(b, Z, r, dG1, dG2, Y, r, X, r, G1, G2, N, r1, r2, 1, 1); break;
            case 2: op_layernorm_forward(b, Y, r, mean, rstd, X, r, gam, bet, N, r, 1e-5f); break;
            case 3: op_layernorm_backward(b, Z, r, dgam, dbet, Y, r, X, r, mean, rstd, gam, N, r, 1, 1); break;
            case 4: op_rmsnorm_forward(b, Y, rstd, X, gam, N, d, 1e-5f); break;
            case 5: op_rmsnorm_backward(b, Z, dgam, Y, X, gam, rstd, N, d, 1, 1); break;
            case 6: op_rowsumsq(b, S, X, N, d); break;
            case 7: op_rownorm(b, Y, X, gam, S, N, d, d, 1e-5f); break;
            case 8: op_scale_rows(b, Y, &sv, S, G * r, 1e-5f, -1); break;
            case 9: op_rowdot(b, dot, X, Y, &sv); break;
            case 10: op_sharded_rmsnorm_backward(b, Z, dgam, Y, X, gam, S, dot, N, d, 2 * d, 1e-5f, 1); break;
            case 11: op_silu_forward(b, Y, X, (size_t)N * d); break;
            case 12: op_silu_backward(b, Z, Y, X, (size_t)N * d); break;
            case 13: op_swiglu_forward(b, Z, X, Y, (size_t)N * d_ff, 1); break;   // the MLP's width
            case 14: op_swiglu_backward(b, W, Z, Y, X, L0, (size_t)N * d_ff, 1); break;   // 5 distinct streams, as its bytes count
            case 15: op_embedding_forward(b, Y, tok, W, N, d, 0, V); break;
            case 16: op_embedding_backward(b, W, Y, tok, N, d, 0, V, 1, NULL); break;
            case 17: op_xent_forward(b, mean, sumexp, tlogit, L, tok, N, V, 0); break;
            case 18: op_xent_backward(b, L, L, mean, sumexp, tok, N, V, 0, 1.0f / N); break;
            case 19: op_xent_fused(b, L, mean, sumexp, tlogit, L, tok, N, V, 0, 1.0f / N); break;   // tp 1's loss
            case 20: op_sumsq_multi(b, 1, xs, lens, ws, NULL); break;
            case 21: op_adamw_multi(b, 1, &span, &hyp); break;
            case 22: op_add(b, Y, X, (size_t)N * d); break;
            case 23: op_rope_forward(b, Y, N / 128, 128, d / 32, 32, 10000.0f); break;
            default: op_rope_backward(b, Y, N / 128, 128, d / 32, 32, 10000.0f); break;
            }
            if (k > 0) per[k - 1] = t.seconds;
        }
        out[op].name = named_ops[op];
        out[op].per_byte = op >= 2;
        out[op].rate = (out[op].per_byte ? t.bytes : t.flops) / pick(per, 7);
    }
    bk_observe(b, NULL, NULL);
    void *bufs[] = { X, Y, Z, W, mo, vo };
    for (int i = 0; i < 6; i++) bk_free(b, bufs[i], P, DT_F32, MEM_WORK);
    bk_free(b, L, big, DT_F32, MEM_WORK); bk_free(b, L0, big, DT_F32, MEM_WORK);
    bk_free(b, G1, (size_t)r1 * r1, DT_F32, MEM_WORK); bk_free(b, G2, (size_t)r2 * r2, DT_F32, MEM_WORK);
    bk_free(b, dG1, (size_t)r1 * r1, DT_F32, MEM_WORK); bk_free(b, dG2, (size_t)r2 * r2, DT_F32, MEM_WORK);
    void *small[] = { gam, bet, dgam, dbet };
    for (int i = 0; i < 4; i++) bk_free(b, small[i], (size_t)d, DT_F32, MEM_WORK);
    void *rows[] = { mean, rstd, dot, S };
    for (int i = 0; i < 4; i++) bk_free(b, rows[i], (size_t)N, DT_F32, MEM_WORK);
    bk_free(b, sumexp, (size_t)N, DT_F64, MEM_WORK); bk_free(b, tlogit, (size_t)N, DT_F64, MEM_WORK);
    bk_free(b, tok, (size_t)N, DT_I32, MEM_WORK);
    return N_NAMED;
}

// ---- 4c. the ops inside a training step ----------------------------------------------------

// 1.–4b. time each op alone, after a sweep that evicts L1 and L2. Inside a step an op meets its
// operands where the step left them — the output of the op before in L1 or L2, the forward's
// activations and the weights read by the backward further away, part of them in DRAM (the
// host's L3 share of a guest is not known) — which no sweep reproduces (§13, §14 of
// docs/performance-model.md). So the ops are also timed where the model prices them: the
// trainer's step of one rank (train/step_record.c, op by op), of a configuration of the CPU
// recipes' kind that the validation does not check (4b.'s sizes: 12 × 128 tokens, d 160, 5 heads
// of 32, d_ff 432, V 2560, r 40; 4 layers), in the validated recipe's three kinds (dense; CoLA;
// CoLA with BTP, online RMSNorm and grouping), 3 steps each after a warm-up. From its records:
//  * every named op (4b.) the step runs takes its in-step rate, Σ bytes (or FLOPs) / Σ seconds,
//    in place of the one timed alone; ops the step does not run (LaX's, the tp > 1 norm pieces)
//    keep 4b.'s;
//  * attention its in-step efficiency in place of 4.'s (the same T, 128);
//  * the GEMM table keeps the shape dependence measured alone and gains in_step: the step's
//    GEMM seconds over the table's price of the very same calls.
static const char *const step_sizes[] = { "model.vocab_size=2560", "model.n_layers=4", "model.d_model=160",
    "model.n_heads=5", "model.d_ff=432", "model.seq_len=128", "train.batch_size=12", "boost.lowrank_ckpt=false" };
static const char *const step_kinds[3][4] = {
    { "model.linear=dense", "boost.btp=false", "boost.online_rmsnorm=false", "boost.grouping=false" },
    { "model.linear=cola", "boost.btp=false", "boost.online_rmsnorm=false", "boost.grouping=false" },
    { "model.linear=cola", "boost.btp=true", "boost.online_rmsnorm=true", "boost.grouping=true" } };
enum { STEP_SIZES = (int)(sizeof step_sizes / sizeof *step_sizes), STEP_KINDS = 3, STEP_TIMED = 3 };

// The calibration step's configuration: step_sizes with n_heads heads, of kind k, on a
// tp × dp grid (4c.: 5 heads on one rank; 5b.: 8, so that tp 2 and 4 divide them).
static void step_config(Config *cfg, int n_heads, int k, int tp, int dp) {
    config_defaults(cfg);
    for (int i = 0; i < STEP_SIZES; i++) config_set_override(cfg, step_sizes[i]);
    char o[3][48];
    snprintf(o[0], sizeof o[0], "model.n_heads=%d", n_heads);
    snprintf(o[1], sizeof o[1], "parallel.tp=%d", tp);
    snprintf(o[2], sizeof o[2], "parallel.dp=%d", dp);
    for (int i = 0; i < 3; i++) config_set_override(cfg, o[i]);
    for (int i = 0; i < 4; i++) config_set_override(cfg, step_kinds[k][i]);
    config_finalize(cfg);
}

static void measure_in_step(Backend *bk, HwProfile *p) {
    HwGemm *g = &p->gemm[SP_FP32];
    CHECK(g->present && g->model == GEMM_TABLE, "calibrate: the in-step GEMMs need the GEMM table first");
    g->in_step = 0;   // the table's own price below
    int nr = p->n_op_rates[SP_FP32];
    double *r_s = xcalloc((size_t)nr + 1, sizeof *r_s), *r_w = xcalloc((size_t)nr + 1, sizeof *r_w);
    long *r_calls = xcalloc((size_t)nr + 1, sizeof *r_calls);
    double gemm_s = 0, gemm_table_s = 0, att_s[2] = { 0, 0 }, att_f[2] = { 0, 0 };
    long gemm_calls = 0, att_calls[2] = { 0, 0 };
    for (int k = 0; k < STEP_KINDS; k++) {
        Config cfg;
        step_config(&cfg, 5, k, 1, 1);
        OpProfile prof;
        memset(&prof, 0, sizeof prof);
        step_record(&cfg, bk, NULL, STEP_TIMED, 1, &prof);
        for (size_t i = 0; i < prof.n_trace; i++) {
            const OpInfo *op = &prof.trace[i].op;
            double sec = prof.trace[i].seconds;
            int named = -1;
            for (int j = 0; j < nr && op->name; j++)
                if (!strcmp(p->op_rates[SP_FP32][j].name, op->name)) named = j;
            if (named >= 0) {
                r_s[named] += sec;
                r_w[named] += p->op_rates[SP_FP32][named].per_byte ? op->bytes : op->flops;
                r_calls[named]++;
            } else if (op->cls == OPC_GEMM) {
                gemm_s += sec;
                gemm_table_s += sim_gemm_time(p, SP_FP32, op->M, op->N, op->K, op->count, op->flops, op->bytes);
                gemm_calls++;
            } else if (op->cls == OPC_ATTENTION) {
                int b = op->name && strstr(op->name, "backward") != NULL;
                att_s[b] += sec;
                att_f[b] += op->flops;
                att_calls[b]++;
            }
        }
        op_profile_detach(&prof);
    }
    printf("\n4c. the ops inside a training step (one rank, %d thread%s: d 160, 5 heads of 32, d_ff 432, 12 x 128 tokens, "
           "V 2560, 4 layers; dense, CoLA, CoLA + BTP/online/grouping; %d steps each after a warm-up)\n",
           omp_get_max_threads(), omp_get_max_threads() > 1 ? "s" : "", STEP_TIMED);
    printf("   %-24s %7s %12s %12s %8s\n", "op", "calls", "alone", "in the step", "ratio");
    CHECK(gemm_calls > 0 && gemm_s > 0 && gemm_table_s > 0, "calibrate: the calibration step ran no GEMM");
    g->in_step = gemm_s / gemm_table_s;
    printf("   %-24s %7ld %10.2f ms %10.2f ms %8.3f   (the table's price of the same calls; in_step)\n", "gemm", gemm_calls,
           gemm_table_s * 1e3, gemm_s * 1e3, g->in_step);
    HwAttention *a = &p->attention[SP_FP32];
    double peak = p->peak_flops[SP_FP32];
    for (int b = 0; b < 2; b++) {
        CHECK(att_calls[b] > 0 && att_s[b] > 0, "calibrate: the calibration step ran no attention %s", b ? "backward" : "forward");
        double eff = att_f[b] / att_s[b] / peak, *slot = b ? &a->backward : &a->forward;
        printf("   %-24s %7ld %9.3f eff %9.3f eff %8.3f\n", b ? "attention_backward" : "attention_forward", att_calls[b],
               *slot, eff, *slot / eff);
        *slot = eff > 1 ? 1 : eff;
    }
    for (int j = 0; j < nr; j++) {
        HwOpRate *r = &p->op_rates[SP_FP32][j];
        if (!r_calls[j]) continue;
        CHECK(r_s[j] > 0 && r_w[j] > 0, "calibrate: op %s ran %ld calls in the step with no time or no work", r->name, r_calls[j]);
        double rate = r_w[j] / r_s[j];
        printf("   %-24s %7ld %7.3f %s %7.3f %s %8.3f\n", r->name, r_calls[j], r->rate / 1e9, r->per_byte ? "GB/s " : "GF/s ",
               rate / 1e9, r->per_byte ? "GB/s " : "GF/s ", r->rate / rate);
        r->rate = rate;
    }
    printf("   (ratio: alone over in the step, the factor by which the op takes longer inside the step; named ops the step\n"
           "   does not run keep the rate timed alone)\n");
    free(r_s); free(r_w); free(r_calls);
}

// ---- 5. collectives: the MPI worker ---------------------------------------------------------

// K_AR .. K_P2P are HwColl's order; K_OAR, K_ORS the started (ordered) all-reduce and
// reduce-scatter of the MPI back end (links.intra_node.ordered; docs/performance-model.md §17).
enum { K_AR, K_AG, K_RS, K_P2P, K_OAR, K_ORS, K_N };
static const char *const kind_names[K_N] = { "all_reduce", "all_gather", "reduce_scatter", "p2p", "ordered_all_reduce",
                                             "ordered_reduce_scatter" };
// The ring form a kind's time is fitted in (an ordered kind: its collective's).
static int ring_kind(int k) { return k == K_OAR ? K_AR : k == K_ORS ? K_RS : k; }

// One call of kind k moving S bytes (the CommRecord's bytes) on the whole world as one TP group.
static void one_call(Comm *c, int k, float *buf, float *out, size_t S) {
    size_t n = S / sizeof(float), g = (size_t)c->tp;
    switch (k) {
    case K_AR: comm_all_reduce(c, GROUP_TP, buf, n, DTYPE_F32, OP_SUM, PHASE_OTHER, -1); break;
    case K_AG: comm_all_gather(c, GROUP_TP, buf, out, n / g, DTYPE_F32, PHASE_OTHER, -1); break;
    case K_RS: comm_reduce_scatter(c, GROUP_TP, buf, out, n / g, DTYPE_F32, PHASE_OTHER, -1); break;
    case K_OAR: {   // started (c->overlap 0: completed at once), as the engine's started calls run
        CommHandle h = comm_all_reduce_start(c, GROUP_TP, buf, n, DTYPE_F32, OP_SUM, PHASE_OTHER, -1);
        comm_wait(c, &h);
        break;
    }
    case K_ORS: {
        CommHandle h = comm_reduce_scatter_start(c, GROUP_TP, buf, out, n / g, DTYPE_F32, PHASE_OTHER, -1);
        comm_wait(c, &h);
        break;
    }
    default: {
        // pairs (0,1), (2,3): every rank sends S bytes and receives S bytes at once
        int peer = c->tp_rank ^ 1;
        if (peer < c->tp) comm_sendrecv(c, GROUP_TP, buf, n, peer, 1, out, n, peer, 1, DTYPE_F32, PHASE_OTHER, -1);
        break;
    }
    }
}

// The GEMM of the rank-share measurement: a micro-batch of the recipes' tokens against a
// bottleneck-sized weight.
enum { SHARE_M = 1024, SHARE_N = 256, SHARE_K = 256 };
#define SHARE_WINDOW_S 0.6

// The threads of one rank, as the trainer gives them (tools/train.c): --threads N when given
// (the validation's domain: 1), else the cores this process may use divided among the ranks
// on the host, at least 1. Every timing of this tool runs with them, so that the GEMM table,
// the other rates and the rank share describe ranks as a run of `ranks` ranks has them.
static int threads_opt = 0;
static int rank_threads(int ranks) {
    int t = threads_opt > 0 ? threads_opt : omp_get_num_procs() / ranks;
    return t < 1 ? 1 : t;
}
static void use_threads(int threads) {
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
}

// Seconds per SHARE GEMM (op_gemm) of this process over a SHARE_WINDOW_S wall-clock window
// after one warm-up call: the window's wall time over the iterations done (a throughput: time
// the process is not scheduled counts). sync, when set, is called once before the window
// starts (the ranks' barrier).
static double share_window_seconds(void (*sync)(void)) {
    Backend *b = backend_cpu(DT_F32);
    void *A = rand_buf(b, (size_t)SHARE_M * SHARE_K, 1), *B = rand_buf(b, (size_t)SHARE_K * SHARE_N, 2);
    void *C = bk_alloc(b, (size_t)SHARE_M * SHARE_N, DT_F32, MEM_WORK);
    op_gemm(b, TR_N, TR_N, SHARE_M, SHARE_N, SHARE_K, 1.0f, A, SHARE_K, B, SHARE_N, 0.0f, C, SHARE_N);   // warm-up
    if (sync) sync();
    int n = 0;
    double t0 = now_seconds(), t1 = t0;
    while (t1 - t0 < SHARE_WINDOW_S) {
        op_gemm(b, TR_N, TR_N, SHARE_M, SHARE_N, SHARE_K, 1.0f, A, SHARE_K, B, SHARE_N, 0.0f, C, SHARE_N);
        n++;
        t1 = now_seconds();
    }
    bk_free(b, A, (size_t)SHARE_M * SHARE_K, DT_F32, MEM_WORK);
    bk_free(b, B, (size_t)SHARE_K * SHARE_N, DT_F32, MEM_WORK);
    bk_free(b, C, (size_t)SHARE_M * SHARE_N, DT_F32, MEM_WORK);
    backend_free(b);
    return (t1 - t0) / n;
}
static void world_barrier(void) { CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

// The rank share's two measurements are the same function under the same conditions but one:
// share_window_seconds with the threads of one rank (rank_threads), in a lone process — this
// one, unpinned, as a 1-rank run is (its reference, share_reference_seconds) — and in each of
// `world` ranks at once under mpirun (as make exp starts a multi-rank run, binding as its
// environment says), the windows started together by a barrier. share(world) = the reference
// over the median rank's time: what one rank's ops run at when `world` ranks share the node
// (the cores' division, memory bandwidth, caches, the clock a loaded socket keeps), in (0, 1]
// but for noise, with nothing clamped. The GEMM table is not its reference: a table rate at
// the share's shape is another statistic (the median of calls) at another time, and with the
// quick grid an interpolation (it gave shares above 1: two ranks "faster" than one).
// The ranks are NOT coupled inside the window: no collective between the GEMMs, so the time a
// rank waits for a descheduled peer is not in the share. That waiting is in the measured
// collectives (5.: the α-β fits time the engine's collectives between the same ranks under the
// same conditions), and the model adds the two: measuring it in both (the share used to come
// from a GEMM + one-float all-reduce loop) counted it twice.
static double share_reference_seconds(void) {
    use_threads(rank_threads(1));
    return share_window_seconds(NULL);
}
static double rank_share_seconds(Comm *c, int world) {
    use_threads(rank_threads(world));
    double mine = share_window_seconds(world_barrier), all[64];
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(world <= 64, "calibrate: at most 64 ranks");
    CHECK_MPI(MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (c->rank) return 0;
    qsort(all, (size_t)world, sizeof *all, cmp_double);
    return world % 2 ? all[world / 2] : 0.5 * (all[world / 2 - 1] + all[world / 2]);
}

// 5b. The collectives inside real training steps (§15–§17 of docs/performance-model.md): the
// α-β points above time each call alone, between barriers, on a buffer the loop keeps hot. In
// a step a collective follows the compute that produced its buffer, the ranks arrive when
// their compute ends, and the step's compute has pushed the transport's buffers and state out
// of the caches. Here the world runs the trainer's own step (trainer_init, trainer_step: each DP
// rank its share of the batch, parallel.overlap as the validated recipes have it; §17: the
// step of train/step_record.c ran every rank on the whole batch with its started calls
// overlapped, comm_init's default) as a tp = world grid and as a dp = world grid, in the
// validated recipe's three kinds, at 4c.'s configuration not validated, with 8 heads of 20 so
// that tp 2 and 4 divide them, on synthetic data, IN_STEP_TIMED steps after a warm-up (the
// waits split after each, as the trainer's run loop does), in IN_STEP_PASSES passes over the
// six configurations, interleaved as the validation's rounds are (§18: a slow stretch of the
// machine then touches one pass of each, not every step of one), and rank 0 writes its comm
// table's rows: "in_step PASS LAYOUT KIND GROUP n calls bytes seconds started_calls started_bytes"
// (seconds: rank 0's time inside the calls, waiting for a peer included — what the
// validation's collectives measure; started: those made through a start). The parent prices
// each pass and keeps the median over the passes (in_step_fit).
enum { IN_STEP_TIMED = 8, IN_STEP_PASSES = 3 };
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}
static void collectives_in_step(int world, FILE *f, int rank) {
    int threads = rank_threads(world);
    use_threads(threads);
    // the synthetic tokens' cache: a directory of this run's own, removed after
    char cache[64] = "";
    if (rank == 0) {
        xsnprintf(cache, sizeof cache, "/tmp/calibrate-data.XXXXXX");
        CHECK_ERRNO(!mkdtemp(cache), "mkdtemp /tmp/calibrate-data.XXXXXX");
    }
    CHECK_MPI(MPI_Bcast(cache, sizeof cache, MPI_CHAR, 0, MPI_COMM_WORLD));
    for (int pass = 0; pass < IN_STEP_PASSES; pass++)
    for (int layout = 0; layout < 2; layout++)
        for (int k = 0; k < STEP_KINDS; k++) {
            Config cfg;
            step_config(&cfg, 8, k, layout ? 1 : world, layout ? world : 1);
            char o[2][96];
            xsnprintf(o[0], sizeof o[0], "data.cache_dir=%s", cache);
            xsnprintf(o[1], sizeof o[1], "train.threads=%d", threads);
            config_set_override(&cfg, "data.dataset=synthetic");
            for (int i = 0; i < 2; i++) config_set_override(&cfg, o[i]);
            config_finalize(&cfg);
            Comm c;
            comm_init(&c, layout ? 1 : world, 1, layout ? world : 1);
            Trainer tr;
            trainer_init(&tr, &cfg, &c);
            trainer_step(&tr);   // warm-up: its first calls set up the shared-memory connections
            comm_measure_waits(&c);
            comm_stats_reset(&c);
            for (int s = 0; s < IN_STEP_TIMED; s++) {
                trainer_step(&tr);
                comm_measure_waits(&c);
            }
            int it = 0;
            CommStatRow r;
            while (f && comm_stats_next(&c, &it, &r))
                if (r.s.calls && c.size[r.group] > 1
                    && (r.kind == COMM_ALL_REDUCE || r.kind == COMM_ALL_GATHER || r.kind == COMM_REDUCE_SCATTER))
                    fprintf(f, "in_step %d %s%s %s %s %d %llu %llu %.9g %llu %llu\n", pass, layout ? "dp" : "tp",
                            k == 0 ? "-dense" : k == 1 ? "-cola" : "-boost", comm_kind_name(r.kind), comm_group_name(r.group),
                            c.size[r.group], (unsigned long long)r.s.calls, (unsigned long long)r.s.bytes, r.s.seconds,
                            (unsigned long long)r.s.started_calls, (unsigned long long)r.s.started_bytes);
            trainer_free(&tr);
            comm_free(&c);
        }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) CHECK_ERRNO(nftw(cache, remove_entry, 8, FTW_DEPTH | FTW_PHYS) != 0, cache);
}

static int refresh_only = 0;   // --refresh: the machine now (refresh_profile), the workers only the rank share

static int mpi_worker(int argc, char **argv, const char *path) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    int world;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
    Comm c;
    comm_init(&c, world, 1, 1);
    c.overlap = 0;   // a started call completes at once, as the engine's do with parallel.overlap off
    FILE *f = NULL;
    if (c.rank == 0) {
        f = fopen(path, "w");
        CHECK_ERRNO(!f, path);
    }
    double share_s = rank_share_seconds(&c, world);
    if (f) fprintf(f, "share_gemm %d %d %.9g\n", world, rank_threads(world), share_s);
    if (refresh_only) {
        if (f) CHECK_ERRNO(fclose(f) != 0, path);
        comm_free(&c);
        CHECK_MPI(MPI_Finalize());
        return 0;
    }
    size_t max_bytes = (size_t)16 << 20;
    float *buf = rand_host(max_bytes / 4, 9), *out = xaligned_alloc(max_bytes);
    for (int k = 0; k < K_N; k++)
        for (size_t S = 4 * (size_t)world; S <= max_bytes; S *= 4) {
            // Every call is timed on its own between barriers, and the time of a call is the
            // slowest rank's; the size's time is the median call (--best: the best one, what
            // the hardware does when nothing else runs).
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            double t0 = MPI_Wtime();
            one_call(&c, k, buf, out, S);   // warm-up, and an estimate for the repetitions
            double one = MPI_Wtime() - t0;
            CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
            int reps = one > 0 ? (int)(0.1 / one) : 300;
            if (reps < 10) reps = 10;
            if (reps > 300) reps = 300;
            double per[300];
            for (int r = 0; r < reps; r++) {
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                t0 = MPI_Wtime();
                one_call(&c, k, buf, out, S);
                per[r] = MPI_Wtime() - t0;
            }
            CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, per, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
            if (f) fprintf(f, "%s %d %zu %.9g\n", kind_names[k], world, S, pick(per, reps));
        }
    free(buf); free(out);
    int rank = c.rank;
    comm_free(&c);
    collectives_in_step(world, f, rank);
    if (f) CHECK_ERRNO(fclose(f) != 0, path);
    CHECK_MPI(MPI_Finalize());
    return 0;
}

// Runs the worker under mpirun with n ranks; returns 0 on success.
static int run_worker(int n, const char *out_path) {
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK_ERRNO(len <= 0, "readlink /proc/self/exe");
    self[len] = 0;
    char np[16];
    snprintf(np, sizeof np, "%d", n);
    const char *args[24];
    int a = 0;
    args[a++] = "timeout"; args[a++] = "300"; args[a++] = "mpirun"; args[a++] = "-np"; args[a++] = np;
    args[a++] = "--oversubscribe";
    if (geteuid() == 0) args[a++] = "--allow-run-as-root";
    args[a++] = "-x"; args[a++] = "OMP_NUM_THREADS=1";
    args[a++] = self; args[a++] = "--mpi-worker"; args[a++] = out_path;
    if (use_best) args[a++] = "--best";
    if (refresh_only) args[a++] = "--refresh";
    char threads_s[16];
    if (threads_opt > 0) {
        snprintf(threads_s, sizeof threads_s, "%d", threads_opt);
        args[a++] = "--threads"; args[a++] = threads_s;
    }
    args[a] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        execvp(args[0], (char *const *)args);
        fprintf(stderr, "calibrate: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    CHECK_ERRNO(waitpid(pid, &status, 0) < 0, "waitpid");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// run_worker(n) into a fresh temporary file, opened for reading: its lines are "kind n size
// seconds". The caller reads it and then worker_results_close(f, path) removes it.
static FILE *worker_results(int n, char *path, size_t path_len, const char *hint) {
    xsnprintf(path, path_len, "/tmp/calibrate.XXXXXX");
    int fd = mkstemp(path);
    CHECK_ERRNO(fd < 0, "mkstemp");
    close(fd);
    if (run_worker(n, path)) die_input("calibrate: the MPI worker at %d ranks failed%s", n, hint);
    FILE *f = fopen(path, "r");
    CHECK_ERRNO(!f, path);
    return f;
}
static void worker_results_close(FILE *f, const char *path) {
    fclose(f);
    unlink(path);
}

// ---- the α-β fit ----------------------------------------------------------------------------
//
// Per collective and rank count n, t(S) = α_n + bus(S)/β_n with bus(S) the bytes on the bus
// (sim.h: S·2(n−1)/n for all-reduce, S·(n−1)/n for reduce-scatter and all-gather, S for a
// send) is fitted in log space — minimising Σ log²(model/measured), which treats a model
// twice too fast and twice too slow alike (a least-squares fit on relative error does not,
// and sides with the fast points) — by Gauss-Newton from a relative least-squares start.
// Points more than max(3× the median, 50%) off are then left out and the fit redone once:
// a call descheduled by other processes is an outlier of the machine's load. The profile
// takes busbw per rank count ({2: β_2, 4: β_4}: an oversubscribed machine is not one link
// speed) and the latencies base + steps·hop through α_2 and α_4 (steps: 2(n−1) for
// all-reduce, n−1 for reduce-scatter and all-gather; a send has one step at every n, so its
// latency is all base).

typedef struct { int kind, n; double bytes, t; int used; } Meas;   // used: kept by the fit
// A row of 5b.: `calls` collectives of `kind` on n ranks moving `bytes` in all, in `t` seconds.
// started_calls, started_bytes: of calls and bytes, those made through a start (§17)
// pass: which of 5b.'s interleaved passes (§18).
typedef struct { char layout[32]; int pass; CommKind kind; CommGroup group; int n; double calls, bytes, t, started_calls, started_bytes; } StepRow;

// One rank count's entry of a HwRankTable (ascending sizes; a size already there is replaced).
static void rank_table_put(HwRankTable *t, int n, double v) {
    int at = 0;
    while (at < t->n && t->at[at] < n) at++;
    if (at == t->n || t->at[at] != n) {
        CHECK(t->n < HW_BUSBW_MAX, "calibrate: too many rank counts");
        memmove(t->at + at + 1, t->at + at, (size_t)(t->n - at) * sizeof *t->at);
        memmove(t->v + at + 1, t->v + at, (size_t)(t->n - at) * sizeof *t->v);
        t->n++;
    }
    t->at[at] = n;
    t->v[at] = v;
}

static double clamp_in_step(double f) { return f < HW_IN_STEP_MIN ? HW_IN_STEP_MIN : f > HW_IN_STEP_MAX ? HW_IN_STEP_MAX : f; }

// 5b.'s pricing (§16 of docs/performance-model.md), per rank count n and per pass:
//  * in_step_call_s: the median, over the step's scalar collectives (<= HW_SCALAR_CALL_BYTES:
//    the gradient norm's and the loss's sums), of rank 0's seconds per call — what a call costs
//    in a step before it moves any data;
//  * in_step_by GROUP_KIND: over the other calls of that group and kind, their seconds beyond
//    that fixed cost against the fitted α-β's price beyond a call of 0 bytes (the price is
//    affine in the bytes, so a row's calls priced at their mean size sum exactly; a row's
//    blocking and started calls each at their own α-β, §17);
//  * in_step: the same over all the non-scalar calls (groups and kinds not measured).
// Without a scalar call at n, the factors are seconds over the whole α-β price (§15).
// Each term of the profile is the median of that term over the passes (§18).
typedef struct {
    double call;                                                      // -1: no scalar call
    double calls[GROUP_COUNT + 1][HW_P2P], bytes[GROUP_COUNT + 1][HW_P2P],   // GROUP_COUNT: all
           alone[GROUP_COUNT + 1][HW_P2P], t[GROUP_COUNT + 1][HW_P2P], f[GROUP_COUNT + 1][HW_P2P];
} PassTerms;
static void pass_terms(const HwProfile *p, const StepRow *rows, int n_rows, int n, int pass, PassTerms *out) {
    SimPlacement pl = { n, 1, n };
    memset(out, 0, sizeof *out);
    double *per = xcalloc((size_t)n_rows + 1, sizeof *per);
    int ns = 0;
    for (int j = 0; j < n_rows; j++)
        if (rows[j].n == n && rows[j].pass == pass && rows[j].bytes / rows[j].calls <= HW_SCALAR_CALL_BYTES)
            per[ns++] = rows[j].t / rows[j].calls;
    out->call = ns ? median(per, ns) : -1;
    free(per);
    double x[GROUP_COUNT + 1][HW_P2P] = { { 0 } }, pr[GROUP_COUNT + 1][HW_P2P] = { { 0 } };
    for (int j = 0; j < n_rows; j++) {
        const StepRow *r = &rows[j];
        if (r->n != n || r->pass != pass || r->bytes / r->calls <= HW_SCALAR_CALL_BYTES) continue;
        int k = (int)sim_coll_priced_as(r->kind);
        if (k >= HW_P2P) continue;
        // the row's blocking and started calls, each at its own price alone (§17)
        double alone = 0, lat = 0;
        for (int st = 0; st < 2; st++) {
            double nc = st ? r->started_calls : r->calls - r->started_calls;
            double nb = st ? r->started_bytes : r->bytes - r->started_bytes;
            if (nc <= 0) continue;
            alone += nc * sim_collective_alone(p, r->kind, st, nb / nc, pl);
            lat += nc * sim_collective_alone(p, r->kind, st, 0, pl);
        }
        for (int g = (int)r->group; ; g = GROUP_COUNT) {   // its own group, then "all of them"
            x[g][k] += out->call < 0 ? r->t : r->t - r->calls * out->call;
            pr[g][k] += out->call < 0 ? alone : alone - lat;
            out->calls[g][k] += r->calls; out->bytes[g][k] += r->bytes; out->t[g][k] += r->t; out->alone[g][k] += alone;
            if (g == GROUP_COUNT) break;
        }
    }
    double all_x = 0, all_p = 0;
    for (int k = 0; k < HW_P2P; k++) { all_x += x[GROUP_COUNT][k]; all_p += pr[GROUP_COUNT][k]; }
    for (int g = 0; g < GROUP_COUNT; g++)
        for (int k = 0; k < HW_P2P; k++) {
            if (out->calls[g][k] == 0) continue;
            CHECK(pr[g][k] > 0, "calibrate: 5b. pass %d: %s %s at %d ranks priced %g s", pass + 1, comm_group_name((CommGroup)g),
                  hw_coll_name((HwColl)k), n, pr[g][k]);
            out->f[g][k] = clamp_in_step(x[g][k] / pr[g][k]);
        }
    CHECK(all_p > 0, "calibrate: 5b. pass %d: at %d ranks no collective beyond %d bytes", pass + 1, n, HW_SCALAR_CALL_BYTES);
    out->f[GROUP_COUNT][0] = clamp_in_step(all_x / all_p);   // "all of them" pooled over kinds: in_step
}
static void print_passes(const double *v, int nv, double scale, const char *fmt) {
    for (int i = 0; i < nv; i++) printf(fmt, v[i] * scale);
}
static void in_step_fit(HwProfile *p, const StepRow *rows, int n_rows) {
    HwLink *l = &p->link[HW_INTRA];
    memset(&l->in_step, 0, sizeof l->in_step);
    memset(l->in_step_by, 0, sizeof l->in_step_by);
    memset(&l->in_step_call_s, 0, sizeof l->in_step_call_s);   // the α-β alone from here
    printf("\n5b. the collectives inside the trainer's steps (tp = n and dp = n grids; d 160, 8 heads, d_ff 432, 12 x 128 tokens,\n"
           "    V 2560; dense, CoLA, CoLA + BOOST's switches; %d steps after a warm-up; rank 0's seconds, waiting included)\n"
           "    against the fits above (a started call against the ordered fit); %d interleaved passes, each term the median\n"
           "    over them (docs/performance-model.md §18)\n", IN_STEP_TIMED, IN_STEP_PASSES);
    PassTerms pt[IN_STEP_PASSES];
    for (int i = 0; i < n_rows; i++) {
        int n = rows[i].n, seen = 0;
        for (int j = 0; j < i; j++) seen |= rows[j].n == n;
        if (seen) continue;
        for (int ps = 0; ps < IN_STEP_PASSES; ps++) pass_terms(p, rows, n_rows, n, ps, &pt[ps]);
        double v[IN_STEP_PASSES], tmp[IN_STEP_PASSES];
        int nv = 0;
        for (int ps = 0; ps < IN_STEP_PASSES; ps++)
            if (pt[ps].call >= 0) v[nv++] = pt[ps].call;
        printf("   %d ranks: %s", n, nv ? "" : "no scalar collectives: the factors price the whole alpha-beta time\n");
        if (nv) {
            memcpy(tmp, v, sizeof v);
            double call = median(tmp, nv);
            rank_table_put(&l->in_step_call_s, n, call);
            SimPlacement pl = { n, 1, n };
            printf("scalar collectives in %d of %d passes, rank 0's seconds per call, median %.2f us (each pass's median:", nv,
                   IN_STEP_PASSES, call * 1e6);
            print_passes(v, nv, 1e6, " %.2f");
            printf("; the alpha-beta alone: %.2f us): in_step_call_s\n", sim_collective_alone(p, COMM_ALL_REDUCE, 0, 8, pl) * 1e6);
        }
        printf("   %-22s %7s %10s %12s %12s %8s   %s\n", "group and kind", "calls", "MB/call", "alone ms", "in step ms", "factor",
               "(each pass's factor; alone and in-step ms: the passes' median)");
        for (int g = 0; g <= GROUP_COUNT; g++)
            for (int k = 0; k < (g == GROUP_COUNT ? 1 : HW_P2P); k++) {
                double f[IN_STEP_PASSES], a[IN_STEP_PASSES], t[IN_STEP_PASSES], c = 0, b = 0;
                nv = 0;
                for (int ps = 0; ps < IN_STEP_PASSES; ps++) {
                    int kk = g == GROUP_COUNT ? -1 : k;   // "all of them": summed over kinds
                    double pc = 0, pb = 0, pa = 0, ptt = 0;
                    for (int q = (kk < 0 ? 0 : kk); q <= (kk < 0 ? HW_P2P - 1 : kk); q++) {
                        pc += pt[ps].calls[g][q]; pb += pt[ps].bytes[g][q]; pa += pt[ps].alone[g][q]; ptt += pt[ps].t[g][q];
                    }
                    if (pc == 0) continue;
                    f[nv] = pt[ps].f[g][k]; a[nv] = pa; t[nv] = ptt; c = pc; b = pb;
                    nv++;
                }
                if (!nv) continue;
                double fs[IN_STEP_PASSES];
                memcpy(fs, f, sizeof f);
                double fm = median(fs, nv), am = median(a, nv), tm = median(t, nv);
                if (g == GROUP_COUNT) {
                    rank_table_put(&l->in_step, n, fm);
                    printf("   %-22s %7.0f %10s %12.3f %12.3f %8.3f  ", "all of them", c, "", am * 1e3, tm * 1e3, fm);
                } else {
                    rank_table_put(&l->in_step_by[g][k], n, fm);
                    printf("   %-4s %-17s %7.0f %10.3f %12.3f %12.3f %8.3f  ", comm_group_name((CommGroup)g), hw_coll_name((HwColl)k), c,
                           b / c / 1e6, am * 1e3, tm * 1e3, fm);
                }
                print_passes(f, nv, 1, " %.3f");
                printf("%s\n", g == GROUP_COUNT ? "   (in_step: a group or kind not measured)" : "");
            }
    }
}

static CommKind comm_kind_named(const char *name) {
    for (int k = 0; k < COMM_KIND_COUNT; k++)
        if (!strcmp(comm_kind_name((CommKind)k), name)) return (CommKind)k;
    DIE("calibrate: the worker wrote an unknown collective '%s'", name);
}
static CommGroup comm_group_named(const char *name) {
    for (int g = 0; g < GROUP_COUNT; g++)
        if (!strcmp(comm_group_name((CommGroup)g), name)) return (CommGroup)g;
    DIE("calibrate: the worker wrote an unknown group '%s'", name);
}

static double ring_steps(int k, int n) {
    k = ring_kind(k);
    return k == K_AR ? 2.0 * (n - 1) : k == K_P2P ? 1.0 : n - 1.0;
}
static double bus_bytes(int k, int n, double S) {
    k = ring_kind(k);
    return k == K_AR ? S * 2.0 * (n - 1) / n : k == K_P2P ? S : S * (n - 1.0) / n;
}
// Where kind k's fit goes in the link.
static HwCollCost *cost_of(HwLink *l, int k) {
    if (k == K_OAR || k == K_ORS) {
        l->has_ordered[ring_kind(k)] = 1;
        return &l->ordered[ring_kind(k)];
    }
    return &l->coll[k];
}

// Fit α, g = 1/β of the used points of (k, n); returns 0 when there are too few points.
static int fit_alpha_beta(const Meas *m, int nm, int k, int n, double *alpha, double *g) {
    // start: weighted least squares on relative error, closed form for 2 unknowns
    double a11 = 0, a12 = 0, a22 = 0, r1 = 0, r2 = 0;
    int cnt = 0;
    for (int i = 0; i < nm; i++) {
        if (m[i].kind != k || m[i].n != n || !m[i].used) continue;
        double w = 1.0 / (m[i].t * m[i].t), x = bus_bytes(k, n, m[i].bytes);
        a11 += w; a12 += w * x; a22 += w * x * x; r1 += w * m[i].t; r2 += w * x * m[i].t;
        cnt++;
    }
    if (cnt < 2) return 0;
    double det = a11 * a22 - a12 * a12;
    double al = det != 0 ? (r1 * a22 - r2 * a12) / det : r1 / a11, gg = det != 0 ? (a11 * r2 - a12 * r1) / det : 0;
    if (al < 1e-9) al = 1e-9;
    if (gg < 1e-15) gg = 1e-15;
    // Gauss-Newton on r_i = log(α + x_i g) − log t_i, with step halving; α, g kept > 0
    for (int it = 0; it < 50; it++) {
        double j11 = 0, j12 = 0, j22 = 0, b1 = 0, b2 = 0, cost = 0;
        for (int i = 0; i < nm; i++) {
            if (m[i].kind != k || m[i].n != n || !m[i].used) continue;
            double x = bus_bytes(k, n, m[i].bytes), mod = al + x * gg, r = log(mod / m[i].t);
            double da = 1 / mod, dg = x / mod;
            j11 += da * da; j12 += da * dg; j22 += dg * dg; b1 += da * r; b2 += dg * r; cost += r * r;
        }
        double d = j11 * j22 - j12 * j12;
        if (!(fabs(d) > 0)) break;
        double sa = -(b1 * j22 - b2 * j12) / d, sg = -(j11 * b2 - j12 * b1) / d;
        double step = 1;
        for (int h = 0; h < 30; h++, step /= 2) {
            double na = al + step * sa, ng = gg + step * sg;
            if (na <= 0 || ng <= 0) continue;
            double c2 = 0;
            for (int i = 0; i < nm; i++) {
                if (m[i].kind != k || m[i].n != n || !m[i].used) continue;
                double r = log((na + bus_bytes(k, n, m[i].bytes) * ng) / m[i].t);
                c2 += r * r;
            }
            if (c2 < cost) { al = na; gg = ng; break; }
        }
        if (step < 1e-8) break;
    }
    *alpha = al;
    *g = gg;
    return 1;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// The rank counts measured (ascending, distinct), at most 8.
static int rank_counts(const Meas *m, int nm, int *ns) {
    int k = 0;
    for (int i = 0; i < nm; i++) {
        int j = 0;
        while (j < k && ns[j] != m[i].n) j++;
        if (j == k && k < 8) ns[k++] = m[i].n;
    }
    qsort(ns, (size_t)k, sizeof *ns, cmp_int);
    return k;
}

static double model_time(const HwCollCost *c, const Meas *m) {
    return c->base_s + ring_steps(m->kind, m->n) * c->hop_s + bus_bytes(m->kind, m->n, m->bytes) / hw_busbw(c, m->n);
}

static void fit_kind(Meas *m, int nm, int k, HwCollCost *out) {
    int ns[8], nn = rank_counts(m, nm, ns);
    double alpha[8];
    for (int pass = 0; pass < 2; pass++) {
        out->n_bw = 0;
        for (int j = 0; j < nn; j++) {
            double g;
            CHECK(fit_alpha_beta(m, nm, k, ns[j], &alpha[j], &g), "calibrate: too few points for %s at %d ranks", kind_names[k], ns[j]);
            out->bw_n[out->n_bw] = nn > 1 ? ns[j] : 0;
            out->bw[out->n_bw++] = 1.0 / g;
        }
        // latencies: α_n = base + steps(n)·hop through the measured rank counts (least
        // squares when more than two), both >= 0; a send's is all base
        out->hop_s = 0;
        out->base_s = alpha[0];
        if (nn > 1 && k != K_P2P) {
            double sx = 0, sy = 0, sxx = 0, sxy = 0;
            for (int j = 0; j < nn; j++) {
                double x = ring_steps(k, ns[j]);
                sx += x; sy += alpha[j]; sxx += x * x; sxy += x * alpha[j];
            }
            double hop = (nn * sxy - sx * sy) / (nn * sxx - sx * sx);
            if (hop < 0) hop = 0;
            double base = (sy - hop * sx) / nn;
            if (base < 0) { base = 0; hop = sxy / sxx; }
            out->base_s = base;
            out->hop_s = hop;
        } else if (nn > 1) {
            double sum = 0;
            for (int j = 0; j < nn; j++) sum += alpha[j];
            out->base_s = sum / nn;
        }
        if (pass) break;
        double err[4096];
        int n = 0;
        for (int i = 0; i < nm; i++)
            if (m[i].kind == k) err[n++] = fabs(log(model_time(out, &m[i]) / m[i].t));
        double lim = 3 * median(err, n);
        if (lim < log(1.5)) lim = log(1.5);
        for (int i = 0; i < nm; i++)
            if (m[i].kind == k && fabs(log(model_time(out, &m[i]) / m[i].t)) > lim) m[i].used = 0;
    }
}

// ---- main -----------------------------------------------------------------------------------

static void host_facts(char *host, size_t nh, char *cpu, size_t nc) {
    if (gethostname(host, nh) != 0) snprintf(host, nh, "unknown");
    snprintf(cpu, nc, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ') p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(cpu, nc, "%s", p);
            }
            break;
        }
    fclose(f);
}

// 4. and 4b. into p: the attention efficiencies (over p's peak) and the op rates of the ops
// timed as themselves (measure_named_ops), printed. The attention at the CPU recipes' T and head
// dim (experiments/base/boost-cpu.yaml: 128 tokens, heads of 32) with another batch and head
// count than the validated recipe's (8 × 4; here 12 × 5: no validated shape is calibrated): the
// causal kernel's efficiency depends on T (the diagonal tiles' share: 2 of the 3 tiles the
// 64-query blocks visit at T 128, 4 of 10 at T 256; the mean with a T 256 shape this used to
// take priced the recipes' attention at a T they do not have).
static void measure_kernels(Backend *bk, HwProfile *p) {
    static const int shapes[1][4] = { { 12, 128, 5, 32 } };
    enum { N_ATT = (int)(sizeof shapes / sizeof *shapes) };
    double ef = 0, eb = 0, peak = p->peak_flops[SP_FP32];
    printf("\n4. attention (the engine's causal flash attention, FLOPs as its ops count them) over the sgemm peak\n");
    printf("   %4s %5s %3s %4s  %12s %12s\n", "B", "T", "H", "hd", "fwd GFLOP/s", "bwd GFLOP/s");
    for (int s = 0; s < N_ATT; s++) {
        double rf, rb;
        measure_attention(bk, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], &rf, &rb);
        printf("   %4d %5d %3d %4d  %12.2f %12.2f\n", shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], rf / 1e9, rb / 1e9);
        ef += rf / peak / N_ATT;
        eb += rb / peak / N_ATT;
    }
    p->attention[SP_FP32] = (HwAttention){ 1, ef > 1 ? 1 : ef, eb > 1 ? 1 : eb };
    printf("   efficiency: forward %.3f, backward %.3f\n", p->attention[SP_FP32].forward, p->attention[SP_FP32].backward);
    NamedRate named[N_NAMED];
    int nn = measure_named_ops(bk, named);
    printf("\n4b. ops timed as themselves (LaX's crossing at N 1536, r 40 = 5 x 8; the row, element-wise and activation "
           "streaming kernels at N 1536, d 160, V 2560, 1.25 x 2^20 parameters; %s of 7 calls)\n", use_best ? "best" : "median");
    p->n_op_rates[SP_FP32] = 0;
    for (int i = 0; i < nn; i++) {
        HwOpRate *r = &p->op_rates[SP_FP32][p->n_op_rates[SP_FP32]++];
        snprintf(r->name, sizeof r->name, "%s", named[i].name);
        r->per_byte = named[i].per_byte;
        r->rate = named[i].rate;
        printf("   %-24s %10.3f %s\n", r->name, r->rate / 1e9, r->per_byte ? "GB/s" : "GFLOP/s");
    }
}

// --refresh PROFILE: the machine as it is now, for a profile calibrated earlier: the op
// overhead, the attention and the ops timed as themselves and in a step (4., 4b., 4c.: the
// GEMM table's in_step too) and the rank share with
// its reference (5.), measured again; the GEMM table, the bandwidth and the collectives kept.
// A few seconds: analysis/validate_cpu.py runs it before every measured launch, since what
// this machine's guests leave of its cores, caches and memory changes from one minute to the
// next (two calibrations of 2026-12-02 seven minutes apart: swiglu_forward 15.5 and 28.3 GB/s,
// adamw 27 and 86 GB/s, xent_backward 7.0 and 24.2 GB/s). Run it with the --threads of PROFILE's
// own calibration: the attention efficiency is this measurement over PROFILE's peak.
static int refresh_profile(const char *from, const char *out_path, const int *ranks, int n_ranks) {
    HwProfile p;
    hw_load_or_die(from, "experiments/hardware", &p);
    CHECK(p.gemm[SP_FP32].present && p.gemm[SP_FP32].model == GEMM_TABLE, "--refresh: %s has no fp32 GEMM table", from);
    double la[3];
    load_average(la);
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    use_threads(rank_threads(1));
    Backend *bk = backend_cpu(DT_F32);
    p.op_overhead_s = measure_op_overhead(bk);
    measure_kernels(bk, &p);
    measure_in_step(bk, &p);
    backend_free(bk);
    double flops = 2.0 * SHARE_M * SHARE_N * SHARE_K, one = share_reference_seconds();
    p.rank_share.n = 0;
    printf("calibrate --refresh %s (%s, load average %.2f): op overhead %.2f us; 1 rank alone (%d thread%s) %.2f GFLOP/s "
           "on %dx%dx%d\n", from, date, la[0], p.op_overhead_s * 1e6, rank_threads(1), rank_threads(1) > 1 ? "s" : "",
           flops / one / 1e9, SHARE_M, SHARE_N, SHARE_K);
    for (int r = 0; r < n_ranks; r++) {
        char tmp[64];
        FILE *f = worker_results(ranks[r], tmp, sizeof tmp, "");
        char kind[32];
        int n;
        double thr, t;   // the worker's threads per rank, its median rank's seconds per GEMM
        if (fscanf(f, "%31s %d %lf %lf", kind, &n, &thr, &t) != 4 || strcmp(kind, "share_gemm")) DIE("calibrate: no rank share in %s", tmp);
        worker_results_close(f, tmp);
        rank_table_put(&p.rank_share, n, one / t);
        printf("   rank share: %d ranks (%.0f thread%s each) each at %.2f GFLOP/s: %.3f\n", n, thr, thr > 1 ? "s" : "",
               flops / t / 1e9, one / t);
    }
    char header[1400];
    snprintf(header, sizeof header,
             "%s: %s with its rank_share, op_overhead_s, attention and op_rates measured again by build/calibrate --refresh\n"
             "on %s (load average %.2f); everything else as calibrated there (see its comments)", p.name, from, date, la[0]);
    const char *comments[HW_SEC_COUNT] = { 0 };
    char tmp_out[1100];
    FILE *f = file_atomic_open(out_path, tmp_out, sizeof tmp_out);
    hw_write_yaml(f, &p, header, comments);
    file_atomic_commit(f, tmp_out, out_path);
    hw_free(&p);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "--mpi-worker")) {
        for (int i = 3; i < argc; i++) {
            use_best |= !strcmp(argv[i], "--best");
            refresh_only |= !strcmp(argv[i], "--refresh");
            if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads_opt = atoi(argv[++i]);
        }
        return mpi_worker(argc, argv, argv[2]);
    }
    env_runtime_setup(argv);
    const char *out_path = "experiments/hardware/cpu-local.yaml";
    const char *refresh_from = NULL;
    int ranks[4] = { 2, 4 }, n_ranks = 2, quick = 0, best = 0;
    const char *ranks_opt = NULL;
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_FLAG_ROW("quick", &quick),
        OPT_FLAG_ROW("best", &best),
        OPT_PATH_ROW("out", &out_path),
        OPT_INT_ROW("threads", 1, 1024, &threads_opt),
        OPT_PATH_ROW("refresh", &refresh_from),
        OPT_STR_ROW("ranks", &ranks_opt),
        OPT_END };
    opt_parse("calibrate", opts, argc, argv, NULL, 0, NULL,
              "usage: build/calibrate [--out FILE] [--ranks 2,4] [--quick] [--best] [--threads N]\n"
              "       build/calibrate --refresh PROFILE [--out FILE] [--ranks 2,4] [--threads N]\n"
              "Measures this machine for the performance model and writes the cpu-local hardware profile\n"
              "(default experiments/hardware/cpu-local.yaml): op_gemm FLOP/s over a grid of shapes, memory\n"
              "bandwidth and op overhead, MPI shared-memory collectives over sizes, and the compute share of\n"
              "ranks that share the host. Every timing is repeated; the median is kept (--best: the fastest).\n"
              "--quick: a smaller grid. --refresh: the rank share, the op overhead, the attention and the ops\n"
              "timed as themselves, measured again in a few seconds, written into a copy of PROFILE. --threads N: every timing with N threads per rank\n"
              "(default: as the trainer gives them, the cores divided among the ranks). See\n"
              "docs/performance-model.md section 3.");
    use_best = best;
    if (refresh_from) refresh_only = 1;
    if (ranks_opt) n_ranks = opt_int_list("calibrate", "ranks", ranks_opt, 2, 16, ranks, 4);
    {   // fail now, not after the measurements, when the output cannot be written: a FIFO, a device
        // or a directory at --out (core/fileio.h), or a folder that takes no new file
        char err[1600], name[1024];
        OutDir d;
        if (file_check_replace(out_path, err, sizeof err) != 0 ||
            outdir_open_parent(&d, out_path, 0, name, sizeof name, err, sizeof err) != 0)
            die_input_hint("--out names the profile to write: a regular file or a new name in a writable folder",
                           "calibrate --out: %s", err);
        int rc = outdir_probe_writable(&d, err, sizeof err);
        outdir_close(&d);
        if (rc) die_input_hint("--out names the profile to write in a writable folder", "calibrate --out %s: %s", out_path, err);
    }
    if (refresh_from) return refresh_profile(refresh_from, out_path, ranks, n_ranks);
    char host[256], cpu[256], date[64];
    host_facts(host, sizeof host, cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    double la0[3], la1[3];
    load_average(la0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double t_start = now_seconds();
    printf("calibrate: %s, host %s, %s, %ld cores, load average %.2f %.2f %.2f\n", date, host, cpu, cores, la0[0], la0[1], la0[2]);

    HwProfile p;
    memset(&p, 0, sizeof p);
    // the profile's name is its file stem (hw_load checks it)
    const char *base = strrchr(out_path, '/');
    base = base ? base + 1 : out_path;
    size_t stem = strlen(base);
    if (stem < 6 || strcmp(base + stem - 5, ".yaml")) die_input("--out %s: expected a path ending in .yaml", out_path);
    snprintf(p.name, sizeof p.name, "%.*s", (int)(stem - 5), base);
    snprintf(p.device, sizeof p.device, "%.100s (%ld cores)", cpu, cores);
    snprintf(p.description, sizeof p.description, "this machine (%s), measured by build/calibrate on %s", host, date);

    use_threads(rank_threads(1));   // every timing below with one rank's threads
    Backend *bk = backend_cpu(DT_F32);
    // 1. GEMM grid: M = tokens of a micro-batch, N and K down to the bottleneck widths
    static const int Ms[] = { 64, 256, 1024, 4096 }, Ns[] = { 16, 64, 256, 1024, 4096 }, Ks[] = { 16, 64, 256, 1024, 4096 };
    // the quick grid brackets the CPU recipes' dimensions (32 … 2048) within a factor of 5 and holds
    // none of the validated recipe's (32, 64, 96, 128, 172, 344, 512, 1024, 2048): no validated
    // GEMM shape is a calibrated point
    static const int qMs[] = { 24, 80, 400, 1600 }, qNs[] = { 24, 80, 400, 1600 }, qKs[] = { 24, 80, 400, 1600 };
    double peak0 = cpu_sgemm_peak_gflops() * 1e9;
    if (quick) measure_gemm(bk, &p.gemm[SP_FP32], qMs, 4, qNs, 4, qKs, 4, 1, 0.005);
    else measure_gemm(bk, &p.gemm[SP_FP32], Ms, 4, Ns, 5, Ks, 5, 3, 0.005);
    // 2. the engine's peak
    // the peak before and after the grid, the larger (the machine is shared)
    double peak1 = cpu_sgemm_peak_gflops() * 1e9, peak = peak0 > peak1 ? peak0 : peak1;
    p.peak_flops[SP_FP32] = peak;
    printf("\n2. sgemm peak (best-of-3 2048^3, the trainer's MFU reference, before and after the grid): %.2f and %.2f "
           "GFLOP/s: %.2f\n", peak0 / 1e9, peak1 / 1e9, peak / 1e9);
    // 3. memory bandwidth
    double bw = measure_bandwidth(bk, (size_t)16 << 20, quick ? 2 : 5);
    p.memory_bandwidth = bw;
    p.memory_efficiency = 1.0;
    p.host_bandwidth = bw;   // "host" and device memory are the same memory here
    p.memory_bytes = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    printf("\n3. memory bandwidth (op_add, 2 x 64 MiB, %d threads, %s): %.2f GB/s\n", omp_get_max_threads(),
           use_best ? "best" : "median", bw / 1e9);
    p.op_overhead_s = measure_op_overhead(bk);
    printf("   op overhead (op_add on 64 floats, %s of 201 calls): %.2f us per op\n", use_best ? "best" : "median",
           p.op_overhead_s * 1e6);
    // 4. attention, 4b. the ops timed as themselves
    measure_kernels(bk, &p);
    measure_in_step(bk, &p);
    backend_free(bk);

    // 5. collectives, and the rank share against its reference measured here just before
    double share_flops = 2.0 * SHARE_M * SHARE_N * SHARE_K, share_one = share_reference_seconds();
    printf("\n5. the rank share's reference: 1 rank alone (%d thread%s) at %.2f GFLOP/s on %dx%dx%d\n", rank_threads(1),
           rank_threads(1) > 1 ? "s" : "", share_flops / share_one / 1e9, SHARE_M, SHARE_N, SHARE_K);
    Meas *meas = xcalloc(4096, sizeof *meas);
    int nm = 0, max_n = 0, n_steprows = 0;
    StepRow *steprows = xcalloc(4096, sizeof *steprows);
    for (int r = 0; r < n_ranks; r++) {
        printf("\n5. collectives at %d ranks%s (mpirun ... --mpi-worker)\n", ranks[r], ranks[r] > cores ? ", oversubscribed" : "");
        char tmp[64];
        FILE *f = worker_results(ranks[r], tmp, sizeof tmp, " (is mpirun installed?)");
        char kind[32], line[256], ckind[32];
        int n;
        double S, t, calls;
        while (nm < 4096 && fgets(line, sizeof line, f)) {
            char lay[32];
            char grp[32];
            double sc, sb;
            int pass;
            if (sscanf(line, "in_step %d %31s %31s %31s %d %lf %lf %lf %lf %lf", &pass, lay, ckind, grp, &n, &calls, &S, &t, &sc, &sb)
                == 10) {   // 5b.
                CHECK(n_steprows < 4096, "calibrate: too many in-step rows");
                CHECK(pass >= 0 && pass < IN_STEP_PASSES && calls > 0 && sc >= 0 && sc <= calls && sb >= 0 && sb <= S,
                      "calibrate: an in-step row of pass %d, %g calls (%g started) and %g bytes (%g started) in %s", pass, calls, sc,
                      S, sb, tmp);
                steprows[n_steprows] = (StepRow){ "", pass, comm_kind_named(ckind), comm_group_named(grp), n, calls, S, t, sc, sb };
                snprintf(steprows[n_steprows++].layout, sizeof steprows->layout, "%s", lay);
                continue;
            }
            CHECK(sscanf(line, "%31s %d %lf %lf", kind, &n, &S, &t) == 4, "calibrate: unreadable line '%s' in %s", line, tmp);
            if (!strcmp(kind, "share_gemm")) {   // one rank's GEMM while n ranks compute at once (S: its threads)
                rank_table_put(&p.rank_share, n, share_one / t);
                printf("   rank share: %d ranks (%.0f thread%s each) each at %.2f GFLOP/s on %dx%dx%d (1 rank alone: %.2f): %.3f\n",
                       n, S, S > 1 ? "s" : "", share_flops / t / 1e9, SHARE_M, SHARE_N, SHARE_K, share_flops / share_one / 1e9,
                       share_one / t);
                continue;
            }
            int k = 0;
            while (k < K_N && strcmp(kind_names[k], kind)) k++;
            CHECK(k < K_N, "calibrate: unknown kind '%s' in %s", kind, tmp);
            meas[nm++] = (Meas){ k, n, S, t, 1 };
        }
        worker_results_close(f, tmp);
        if (ranks[r] > max_n) max_n = ranks[r];
    }
    p.ranks_per_node = max_n;
    HwLink *l = &p.link[HW_INTRA];
    l->present = 1;
    for (int k = 0; k < K_N; k++) fit_kind(meas, nm, k, cost_of(l, k));
    printf("\n   fitted: t = base + steps·hop + bytes·f/busbw(n) (steps, f: docs/performance-model.md)\n");
    for (int k = 0; k < K_N; k++) {
        const HwCollCost *c = cost_of(l, k);
        printf("   %-22s base %8.2f us  hop %8.2f us  busbw", kind_names[k], c->base_s * 1e6, c->hop_s * 1e6);
        for (int j = 0; j < c->n_bw; j++) printf("  %d ranks %.3f GB/s", c->bw_n[j], c->bw[j] / 1e9);
        printf("\n");
    }
    printf("\n   %-22s %5s %10s %12s %12s %8s\n", "collective", "ranks", "bytes", "measured us", "model us", "error");
    double errs[4096];
    int ne = 0, dropped = 0;
    for (int i = 0; i < nm; i++) {
        double model = model_time(cost_of(l, meas[i].kind), &meas[i]);
        double e = (model - meas[i].t) / meas[i].t;
        errs[ne++] = fabs(e);
        dropped += !meas[i].used;
        printf("   %-22s %5d %10.0f %12.2f %12.2f %+7.1f%%%s\n", kind_names[meas[i].kind], meas[i].n, meas[i].bytes,
               meas[i].t * 1e6, model * 1e6, 100 * e, meas[i].used ? "" : "  (left out of the fit)");
    }
    double med = ne ? median(errs, ne) : 0, mx = ne ? errs[ne - 1] : 0;
    printf("   fit error over all %d points: median %.1f%%, max %.1f%% (%d points left out of the fit)\n", ne, 100 * med, 100 * mx, dropped);
    free(meas);
    p.all_reduce_algorithm = AR_RING;
    in_step_fit(&p, steprows, n_steprows);
    free(steprows);

    load_average(la1);
    double took = now_seconds() - t_start;
    printf("\nload average after: %.2f %.2f %.2f; calibration took %.0f s\n", la1[0], la1[1], la1[2], took);

    // write the profile
    char header[2048], c_links[2048];
    snprintf(header, sizeof header,
             "cpu-local: THIS machine, measured by build/calibrate (src/tools/calibrate.c). Do not edit by\n"
             "hand: rerun `build/calibrate` (about a minute and a half) to refresh it.\n"
             "measured: %s on host %s\n"
             "CPU: %s, %ld cores; OpenBLAS and OpenMP with one rank's threads (%d%s)\n"
             "load average before: %.2f %.2f %.2f, after: %.2f %.2f %.2f\n"
             "(other processes share this machine: timings are not properties of the code)\n"
             "calibration took %.0f s", date, host, cpu, cores, omp_get_max_threads(),
             threads_opt > 0 ? ", --threads" : ": all cores", la0[0], la0[1], la0[2],
             la1[0], la1[1], la1[2], took);
    const char *c_peak =
        "peak: the engine's sgemm peak (backend/cpu/peak.c cpu_sgemm_peak_gflops: best-of-3 2048^3),\n"
        "the reference of the trainer's MFU, the larger of before and after the grid; no nominal CPU\n"
        "peak is assumed";
    const char *stat = use_best ? "best" : "median";
    char c_gemm[1024], c_mem[512], c_att[1024];
    snprintf(c_gemm, sizeof c_gemm,
        "gemm: measured op_gemm (CPU fp32 back end, its GEMM library per shape; row-major, no transpose)\n"
        "FLOP/s on the grid, L1 and L2 evicted before each call (a sweep of 4 x L2, not timed) as a step\n"
        "meets its operands; the %s of 3 sweeps of the %s of >= 3 timed repetitions each; the model\n"
        "interpolates in log2(M, N, K) and clamps outside. Transposed operands (backward GEMMs) are priced\n"
        "with the same table. in_step: the GEMMs of a real training step (4c.: one rank, d 160, 12 x 128\n"
        "tokens, dense and CoLA; not a validated configuration) over the table's price of the same calls.", stat, stat);
    snprintf(c_mem, sizeof c_mem,
        "memory: the engine's op_add (x += y, 2 x 64 MiB; the %s pass after the first), bytes as\n"
        "its OpInfo counts them (2 reads + 1 write); memory_bytes = physical memory of the machine;\n"
        "op_overhead_s: the %s of 201 op_add calls on 64 floats (dispatch, an OpenMP region)", stat, stat);
    snprintf(c_att, sizeof c_att,
        "attention: the engine's flash attention (op_attention_forward/backward) at B,T,H,hd =\n"
        "12,128,5,32, the CPU recipes' T and head dim, not their validated shape, timed inside the\n"
        "training steps of 4c. (in gemm's comment; alone: %s of 7 calls, printed beside); FLOPs as the ops\n"
        "count them (FlashAttention-2's convention: 2*2*hd per causal (query, key) pair forward, 2.5x\n"
        "backward) over the sgemm peak", stat);
    char rank_list[64] = "";
    for (int r = 0; r < n_ranks; r++)
        snprintf(rank_list + strlen(rank_list), sizeof rank_list - strlen(rank_list), "%s%d", r ? (r == n_ranks - 1 ? " and " : ", ") : "", ranks[r]);
    snprintf(c_links, sizeof c_links, "links: the engine's MPI collectives (parallel/comm_mpi.c, shared memory) at %s ranks on this\n"
             "%ld-core machine (more ranks than cores oversubscribe it); sizes 4 B .. 16 MiB; per size the\n"
             "%s of 10-300 calls, each timed between barriers (the slowest rank's time). Per rank count\n"
             "alpha + bytes/busbw fitted in log space (busbw per rank count), base and hop through the\n"
             "alphas; model error over all points median %.1f%%, max %.1f%% (%d points left out of the\n"
             "fit). p2p is a sendrecv exchange (both directions at once); its latency is all base_s.\n"
             "in_step*: rank 0's seconds inside the TP and DP collectives of real training steps on R\n"
             "ranks (5b.: tp = R and dp = R grids, d 160, 8 heads, 12 x 128 tokens; not a validated\n"
             "configuration). in_step_call_s {R: s}: the median seconds of the steps' scalar collectives;\n"
             "in_step_by {GROUP_KIND: {R: f}}: that group's calls of that kind, their seconds beyond s\n"
             "over these fits' price beyond a call of 0 bytes; in_step {R: f}: the same over all of them\n"
             "(a group or kind not measured); each the median over 3 interleaved passes. An intra-node\n"
             "collective but a send takes s + f x (its time alone - the time of 0 bytes)",
             rank_list, cores, stat, 100 * med, 100 * mx, dropped);
    char c_share[700], share_threads[64] = "threads cores / R, at least 1";
    if (threads_opt > 0) snprintf(share_threads, sizeof share_threads, "%d thread%s (--threads)", threads_opt, threads_opt > 1 ? "s" : "");
    snprintf(c_share, sizeof c_share,
             "rank_share: with R ranks on this host (make exp at tp R), one rank's ops run at this fraction of\n"
             "the rates above: op_gemm %dx%dx%d timed over a %.1f s window (window / iterations: time not\n"
             "scheduled counts) in R ranks at once under mpirun (%s each, no collective between\n"
             "the GEMMs), the median rank, against the same window in this process alone (threads as\n"
             "above): the same measurement but for the ranks beside it, so in (0, 1] but for noise. Applied to\n"
             "every op (GEMM, attention, memory-bound) of a rank; collectives are measured as such.",
             SHARE_M, SHARE_N, SHARE_K, SHARE_WINDOW_S, share_threads);
    char c_named[1024];
    snprintf(c_named, sizeof c_named,
             "op_rates: ops the GEMM table and the streaming bandwidth do not describe, each timed as itself:\n"
             "LaX's crossing ops (custom loops, not sgemm: kron_gate, layernorm) at N 1536, r 40 = 5 x 8, and the\n"
             "CPU back end's row and element-wise kernels that do more than stream (an exp, division or square\n"
             "root per element, a reduction, a gather) at N 1536, d 160, V 2560, 1.25 x 2^20 parameters (none a\n"
             "shape the CPU validation checks), L1 and L2 evicted before each call; %s of 7 calls. Every op\n"
             "the training steps of 4c. run (in gemm's comment) has its rate inside those steps instead:\n"
             "where a step leaves its operands. FLOP/s (kron gate) or bytes/s as their OpInfo counts them",
             use_best ? "best" : "median");
    const char *comments[HW_SEC_COUNT] = { c_peak, c_gemm, c_mem, c_att, c_links, c_share, c_named };
    // Validate before replacing the old profile: write a copy under a temporary directory
    // (its file name must be the profile's name), load it, then write the real file via
    // a temporary name and rename.
    char dir[] = "/tmp/calibrate.XXXXXX", check_path[256], tmp_out[1100];
    CHECK_ERRNO(!mkdtemp(dir), "mkdtemp");
    xsnprintf(check_path, sizeof check_path, "%s/%s.yaml", dir, p.name);
    FILE *f = fopen(check_path, "w");   // (in the folder just made)
    CHECK_ERRNO(!f, check_path);
    hw_write_yaml(f, &p, header, comments);
    CHECK_ERRNO(fclose(f) != 0, check_path);
    HwProfile check;
    char err[1024];
    if (hw_load(check_path, &check, err, sizeof err)) DIE("calibrate wrote a profile that does not load: %s", err);
    hw_free(&check);
    CHECK_ERRNO(unlink(check_path) != 0 || rmdir(dir) != 0, "removing the check copy");
    f = file_atomic_open(out_path, tmp_out, sizeof tmp_out);
    hw_write_yaml(f, &p, header, comments);
    file_atomic_commit(f, tmp_out, out_path);
    printf("wrote %s\n", out_path);
    hw_free(&p);
    return 0;
}
