// gemm_shapes — every GEMM of one training step of a preset, timed shape by shape on this
// CPU: where the GEMM time goes and which shapes fall short of the sgemm peak.
//
//   build/gemm_shapes [--preset cola-60m] [--linear cola] [--seq 256] [--batch 4]
//                     [--threads N] [--reps R] [--set key=value]...
//
// One step (zero grads, forward, backward of the mean loss) of the real drivers runs on the
// CPU fp32 back end with its GEMM entries wrapped: each call's arguments (transposes, shape,
// strides, beta, and the group it came in) are recorded. The distinct calls are then replayed
// on buffers of their own, R times each after one warm-up (the best time kept), and printed
// largest total first: calls per step, GFLOP/s, % of the sgemm peak (best-of-3 2048³, the
// same threads), %ref (against a 1024³ product timed right after each rep: on a shared
// machine the load hits both alike, where a peak measured once is off by the load of its
// moment), "1-thr xT" (the shape on one thread, times T: what T such GEMMs side by side
// would reach, a batch split over the threads rather than each product over all of them),
// and the step's GEMM time at the measured rate. Performance is shown by this table, not
// asserted anywhere.
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../backend/ops.h"
#include "../backend/cpu/cpu.h"
#include "../config/config.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/timer.h"
#include "../model/model.h"
#include "../train/trainer.h"

typedef struct { GemmArgs g; Phase phase; int group; long calls; } Shape;

static const char *phase_label(Phase p) {
    return p == PHASE_FORWARD ? "forward" : p == PHASE_BACKWARD ? "backward" : p == PHASE_RECOMPUTE ? "recompute" : "other";
}

static Shape *g_shapes;
static int g_n, g_cap;
static const BackendOps *g_inner;

static int same(const GemmArgs *a, const GemmArgs *b) {
    return a->ta == b->ta && a->tb == b->tb && a->M == b->M && a->N == b->N && a->K == b->K &&
           a->lda == b->lda && a->ldb == b->ldb && a->ldc == b->ldc && (a->beta == 0) == (b->beta == 0);
}

static void record(Backend *b, const GemmArgs *g, int group) {
    for (int i = 0; i < g_n; i++)
        if (same(&g_shapes[i].g, g) && g_shapes[i].phase == b->phase && g_shapes[i].group == group) {
            g_shapes[i].calls++;
            return;
        }
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 64;
        g_shapes = realloc(g_shapes, sizeof *g_shapes * (size_t)g_cap);
        CHECK(g_shapes != NULL, "gemm_shapes: out of memory");
    }
    g_shapes[g_n++] = (Shape){ *g, b->phase, group, 1 };
}

static void rec_gemm(Backend *b, const GemmArgs *g) { record(b, g, 1); g_inner->gemm(b, g); }
static void rec_gemm_group(Backend *b, int count, const GemmArgs *g) {
    for (int i = 0; i < count; i++) record(b, &g[i], count);
    g_inner->gemm_group(b, count, g);
}

// Elements a row-major operand with `rows` rows of stride ld spans.
static size_t span(int rows, int ld) { return (size_t)rows * (size_t)ld; }

// Operands of a shape's replay, filled once.
typedef struct { float *A, *B, *C; GemmArgs g; } Replay;
static Replay replay_make(const GemmArgs *s) {
    int arows = s->ta == TR_N ? s->M : s->K, brows = s->tb == TR_N ? s->K : s->N;
    Replay r = { xaligned_alloc(sizeof(float) * span(arows, s->lda)), xaligned_alloc(sizeof(float) * span(brows, s->ldb)),
                 xaligned_alloc(sizeof(float) * span(s->M, s->ldc)), *s };
    for (size_t i = 0; i < span(arows, s->lda); i++) r.A[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < span(brows, s->ldb); i++) r.B[i] = (float)(i % 5) * 0.01f;
    r.g.A = r.A; r.g.B = r.B; r.g.C = r.C; r.g.alpha = 1.0f;
    return r;
}
static void replay_free(Replay *r) { free(r->A); free(r->B); free(r->C); }
static double replay_once(Replay *r) {
    double t0 = now_seconds();
    cpu_sgemm(&r->g);
    return now_seconds() - t0;
}

// Best-of-reps time of the shape at the current thread count and, right next to each rep (so
// that a shared machine's load hits both alike), of the 1024³ reference product: *ref_s.
static double time_shape(const GemmArgs *s, int reps, Replay *ref, double *ref_s) {
    Replay r = replay_make(s);
    double best = 1e30, rbest = 1e30;
    replay_once(&r);
    for (int i = 0; i < reps; i++) {
        double dt = replay_once(&r), rt = replay_once(ref);
        if (dt < best) best = dt;
        if (rt < rbest) rbest = rt;
    }
    replay_free(&r);
    *ref_s = rbest;
    return best;
}

static int parse_count(const char *opt, const char *v, int lo) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > 1000000)
        die_input("gemm_shapes: %s expects an integer >= %d, got '%s'", opt, lo, v);
    return (int)x;
}

int main(int argc, char **argv) {
    ensure_passive_omp(argv);
    const char *preset = "cola-60m", *linear = "cola";
    int seq = 256, batch = 4, threads = 0, reps = 5;
    const char **sets = xcalloc((size_t)argc, sizeof(char *));
    int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            printf("usage: gemm_shapes [--preset cola-60m] [--linear cola] [--seq 256] [--batch 4] [--threads N]\n"
                   "                   [--reps R] [--set key=value]...\n"
                   "  every GEMM of one training step replayed shape by shape: GFLOP/s, %% of the sgemm peak\n");
            return 0;
        }
        if (!v) die_input("gemm_shapes: %s needs a value (options: --preset --linear --seq --batch --threads --reps --set)", a);
        if (strcmp(a, "--preset") == 0) preset = v;
        else if (strcmp(a, "--linear") == 0) linear = v;
        else if (strcmp(a, "--seq") == 0) seq = parse_count(a, v, 1);
        else if (strcmp(a, "--batch") == 0) batch = parse_count(a, v, 1);
        else if (strcmp(a, "--threads") == 0) threads = parse_count(a, v, 0);
        else if (strcmp(a, "--reps") == 0) reps = parse_count(a, v, 1);
        else if (strcmp(a, "--set") == 0) sets[n_sets++] = v;
        else die_input("gemm_shapes: unknown argument '%s' (options: --preset --linear --seq --batch --threads --reps --set)", a);
        i++;
    }
    threads = trainer_set_threads(threads);

    Config cfg;
    config_for_shape(&cfg, preset, linear, seq, sets, n_sets);

    Backend *bk = backend_cpu(DT_F32);
    static BackendOps wrapped;
    g_inner = bk->ops;
    wrapped = *bk->ops;
    wrapped.gemm = rec_gemm;
    wrapped.gemm_group = rec_gemm_group;
    Model mdl;
    model_init_parallel(&mdl, &cfg.model, batch, cfg.model.seq_len, cfg.train.seed, comm_single(), &cfg.boost, 1, bk, 1);
    int N = mdl.N;
    int32_t *in = xmalloc(sizeof(int32_t) * (size_t)N), *tg = xmalloc(sizeof(int32_t) * (size_t)N);
    for (int i = 0; i < N; i++) { in[i] = (int32_t)((i * 7919) % cfg.model.vocab_size); tg[i] = (int32_t)((i * 104729 + 1) % cfg.model.vocab_size); }
    bk->ops = &wrapped;
    model_zero_grads(&mdl);
    model_forward(&mdl, in, tg);
    model_backward(&mdl, 1.0f / (float)N);
    bk->ops = g_inner;

    double peak = 0;
    for (int i = 0; i < 3; i++) { double p = measure_sgemm_peak_gflops(); if (p > peak) peak = p; }
    GemmArgs rg = { TR_N, TR_N, 1024, 1024, 1024, 1.0f, NULL, 1024, NULL, 1024, 0.0f, NULL, 1024 };
    Replay ref = replay_make(&rg);
    double ref_f = 2.0 * 1024 * 1024 * 1024;
    double tot_s = 0, tot_f = 0, tot_ref = 0;
    double *t1 = xcalloc((size_t)g_n + 1, sizeof(double)), *tref = xcalloc((size_t)g_n + 1, sizeof(double));
    for (int i = 0; i < g_n; i++) {
        double t = time_shape(&g_shapes[i].g, reps, &ref, &tref[i]);
        g_shapes[i].g.alpha = (float)t;   // the replay's time, for sorting and printing
        double f = 2.0 * g_shapes[i].g.M * g_shapes[i].g.N * g_shapes[i].g.K;
        tot_s += t * g_shapes[i].calls;
        tot_f += f * g_shapes[i].calls;
        tot_ref += f * g_shapes[i].calls / (ref_f / tref[i]);   // the time at the reference's rate
    }
    // One thread per GEMM: what two such products side by side (a batch split over the
    // threads instead of each product over both) would reach, per thread.
    int th = threads;
    openblas_set_num_threads(1);
    for (int i = 0; i < g_n; i++) { double r; t1[i] = time_shape(&g_shapes[i].g, reps, &ref, &r); }
    openblas_set_num_threads(th);
    double peak_after = measure_sgemm_peak_gflops();
    if (peak_after > peak) peak = peak_after;
    // sort the three arrays together: by the shape's total time
    for (int i = 0; i < g_n; i++) for (int j = i + 1; j < g_n; j++) {
        Shape a = g_shapes[i], b = g_shapes[j];
        if ((double)b.g.alpha * b.calls > (double)a.g.alpha * a.calls) {
            g_shapes[i] = b; g_shapes[j] = a;
            double x = t1[i]; t1[i] = t1[j]; t1[j] = x;
            x = tref[i]; tref[i] = tref[j]; tref[j] = x;
        }
    }
    printf("gemm_shapes | preset %s, linear %s, batch %d x seq %d = %d tokens | %d threads | "
           "sgemm peak %.1f GFLOP/s (2048^3, best of the measurements before and after)\n",
           preset, linear, batch, seq, N, threads, peak);
    printf("%%ref: against a 1024^3 product timed next to each rep (robust to the load); 1-thr x%d: "
           "the shape on one thread times %d (%d such GEMMs side by side)\n", threads, threads, threads);
    char col1[32];
    xsnprintf(col1, sizeof col1, "1-thr x%d", threads);
    printf("%-9s %2s %2s %6s %6s %6s %6s %6s %6s %4s %5s %5s %8s %8s %6s %6s %9s %7s\n", "phase", "ta", "tb", "M", "N", "K",
           "lda", "ldb", "ldc", "beta", "group", "calls", "ms/call", "GFLOP/s", "%peak", "%ref", col1, "ms/step");
    for (int i = 0; i < g_n; i++) {
        const Shape *s = &g_shapes[i];
        double t = s->g.alpha, f = 2.0 * s->g.M * s->g.N * s->g.K;
        printf("%-9s %2s %2s %6d %6d %6d %6d %6d %6d %4s %5d %5ld %8.3f %8.1f %5.1f%% %5.1f%% %9.1f %7.2f\n",
               phase_label(s->phase), s->g.ta == TR_T ? "T" : "N", s->g.tb == TR_T ? "T" : "N", s->g.M, s->g.N,
               s->g.K, s->g.lda, s->g.ldb, s->g.ldc, s->g.beta == 0 ? "0" : "1", s->group, s->calls, 1e3 * t,
               f / t * 1e-9, 100 * f / t * 1e-9 / peak, 100 * (f / t) / (ref_f / tref[i]), threads * f / t1[i] * 1e-9,
               1e3 * t * s->calls);
    }
    printf("total: %.1f ms of GEMMs per step, %.1f GFLOP, %.1f GFLOP/s = %.1f%% of the sgemm peak, %.1f%% of the "
           "1024^3 reference's rate\n", 1e3 * tot_s, tot_f * 1e-9, tot_f / tot_s * 1e-9,
           100 * tot_f / tot_s * 1e-9 / peak, 100 * tot_ref / tot_s);
    replay_free(&ref);
    free(t1); free(tref);
    model_free(&mdl);
    backend_free(bk);
    free(in); free(tg); free(g_shapes); free(sets);
    return 0;
}
