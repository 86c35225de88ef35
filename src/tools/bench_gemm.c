// bench_gemm — every GEMM of one training step of a preset, timed shape by shape on this CPU.
//
//   build/bench_gemm [--bf16] [--preset cola-60m] [--linear cola] [--seq 256] [--batch 4]
//                    [--threads N] [--reps 5] [--set key=value]...
//
// Recording: one step (zero grads, forward, backward of the mean loss) of the real drivers
// runs with the back end's GEMM entries wrapped, on the fp32 back end (default) or on the
// bf16 one (--bf16). Each call's transposes, shape, strides, alpha, beta, phase and the size
// of the group it came in (1: a lone gemm) are recorded; calls equal in all of these are one
// row, counted ("calls/step").
//
// Timing: each row's GEMM runs on operands of its own (random, bf16-representable values),
// its paths interleaved: one warm-up round (it also creates oneDNN's primitive), then --reps
// rounds, the best time of each path kept. Rows are printed largest fp32 time per step first.
//
// Default mode: where the GEMM time goes and which shapes fall short of the sgemm peak.
// Columns: ms/call, GFLOP/s, % of the sgemm peak (best-of-3 2048³ before and one after, the
// same threads), %ref (against a 1024³ product timed right after each rep: on a shared
// machine the load hits both alike, where a peak measured once is off by the load of its
// moment), "1-thr xT" (the shape on one thread, times T: what T such GEMMs side by side would
// reach, a batch split over the threads rather than each product over all of them), and the
// step's GEMM time at the measured rate.
//
// --bf16: fp32 sgemm (the fp32 back end) against the bf16 back end's two GEMM paths
// (cpu_bf16.h, docs/cpu-bf16.md): bf16 arithmetic through oneDNN and the fp32 fallback (widen,
// sgemm, round). max rel err: the bf16 path against the fallback on the same bf16 inputs,
// max |diff| / max |C|. The totals weigh a shape's time by how often the step calls it.
//
// Both modes print one header first: the CPU model, threads, the run's shape, the load
// before and after the timing (and the sgemm peak in the default mode). Performance is shown
// by these tables, not asserted anywhere.
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../backend/bf16.h"
#include "../backend/cpu/cpu.h"
#include "../backend/cpu/cpu_bf16.h"
#include "../backend/cpu/sgemm.h"
#include "../backend/ops.h"
#include "../config/config.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/phase.h"
#include "../core/rng.h"
#include "../core/timer.h"
#include "../model/model.h"
#include "../store/host.h"
#include "../train/trainer.h"

// ---- the command line ---------------------------------------------------------------------
typedef struct {
    const char *preset, *linear;
    int seq, batch, threads, reps, bf16, libs;
    const char **sets;
    int n_sets;
} Args;

static const char USAGE[] =
    "usage: bench_gemm [--bf16 | --libs] [--preset cola-60m] [--linear dense|cola|svd|lax] [--seq 256] [--batch 4]\n"
    "                  [--threads N] [--reps 5] [--set key=value]...\n"
    "  every GEMM of one training step replayed shape by shape on this CPU\n"
    "  default: fp32 sgemm per shape: GFLOP/s, % of the sgemm peak, %ref, 1-thread rate, ms/step\n"
    "  --bf16:  fp32 sgemm against the bf16 back end's oneDNN path and its fp32 fallback, max rel err\n"
    "  --libs:  every fp32 GEMM library installed here, per shape, against the one BOOST_CPU_GEMM gives the shape\n";
static Args parse_args(int argc, char **argv) {
    Args a = { .preset = "cola-60m", .linear = "cola", .seq = 256, .batch = 4, .reps = 5 };
    OptList set_list = {0};
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_FLAG_ROW("bf16", &a.bf16),
        OPT_FLAG_ROW("libs", &a.libs),
        OPT_STR_ROW("preset", &a.preset),
        OPT_STR_ROW("linear", &a.linear),
        OPT_INT_ROW("seq", 1, 1000000, &a.seq),
        OPT_INT_ROW("batch", 1, 1000000, &a.batch),
        OPT_KEY_ROW("threads", "train.threads", &a.threads),
        OPT_INT_ROW("reps", 1, 1000000, &a.reps),
        OPT_LIST_ROW("set", &set_list),
        OPT_END };
    opt_parse("bench_gemm", opts, argc, argv, NULL, 0, NULL, USAGE);
    a.sets = set_list.v;
    a.n_sets = set_list.n;
    return a;
}

// ---- the recorder: the step's GEMMs, one row per distinct call ----------------------------
enum { P_SGEMM, P_BF16, P_FALLBACK, P_REF, N_PATHS };   // the timed paths of a row
typedef struct {
    GemmArgs g;              // as recorded (its pointers are the step's, not used afterwards)
    Phase phase;
    int group;               // the size of the gemm_group call it came in; 1: a lone gemm
    long calls;              // per step
    int order;               // first call's position in the step (ties of the sort)
    double best[N_PATHS];    // seconds per call, each path's best; P_REF: the 1024³ product's
    double lib[GEMM_N_LIBS]; // --libs: seconds per call on each library (0: not installed)
    GemmLib chosen;          // --libs: the library cpu_sgemm gives the shape
    double t1;               // P_SGEMM on one thread (default mode)
    double err;              // max rel err of bf16 against the fallback (--bf16)
} Row;

// The op table's wrappers have no context of their own: the recording is file-scope.
static Row *rows;
static int n_rows, cap_rows;
static const BackendOps *inner_ops;

// The one dedupe rule: every argument but the pointers, and the phase and group.
static int same_call(const Row *r, const GemmArgs *g, Phase phase, int group) {
    const GemmArgs *s = &r->g;
    return s->ta == g->ta && s->tb == g->tb && s->M == g->M && s->N == g->N && s->K == g->K && s->lda == g->lda &&
           s->ldb == g->ldb && s->ldc == g->ldc && s->alpha == g->alpha && s->beta == g->beta && r->phase == phase &&
           r->group == group;
}
static void record(const Backend *b, const GemmArgs *g, int group) {
    for (int i = 0; i < n_rows; i++)
        if (same_call(&rows[i], g, b->phase, group)) { rows[i].calls++; return; }
    rows = vec_grow(rows, &n_rows, &cap_rows, sizeof *rows);
    rows[n_rows - 1] = (Row){ .g = *g, .phase = b->phase, .group = group, .calls = 1, .order = n_rows - 1 };
}
static void rec_gemm(Backend *b, const GemmArgs *g) { record(b, g, 1); inner_ops->gemm(b, g); }
static void rec_gemm_group(Backend *b, int count, const GemmArgs *g) {
    for (int i = 0; i < count; i++) record(b, &g[i], count);
    inner_ops->gemm_group(b, count, g);
}

// One step of the real drivers on bk with every GEMM recorded; returns the step's tokens.
static int record_step(Backend *bk, const Config *cfg, int batch) {
    inner_ops = bk->ops;
    BackendOps wrapped = *bk->ops;
    wrapped.gemm = rec_gemm;
    wrapped.gemm_group = rec_gemm_group;
    bk->ops = &wrapped;
    Model m;
    model_init_parallel(&m, &cfg->model, batch, cfg->model.seq_len, cfg->train.seed, comm_single(), &cfg->boost, 1, bk, 1);
    int N = m.N;
    int32_t *in = xmalloc((size_t)N * sizeof(int32_t)), *tg = xmalloc((size_t)N * sizeof(int32_t));
    Rng rng = { .state = 0x6e770000u };
    for (int i = 0; i < N; i++) { in[i] = (int32_t)(rng_next(&rng) % (uint64_t)cfg->model.vocab_size); tg[i] = in[(i + 1) % N]; }
    model_grads_overwrite(&m);   // as trainer_step: the weight gradients' GEMMs store (beta 0)
    model_forward(&m, in, tg);
    model_backward(&m, 1.0f / (float)N);
    model_free(&m);
    free(in); free(tg);
    bk->ops = inner_ops;
    return N;
}

// ---- operands and timed paths -------------------------------------------------------------
static size_t span(int rows_, int cols, int ld) { return rows_ ? (size_t)(rows_ - 1) * (size_t)ld + (size_t)cols : 0; }
static size_t a_span(const GemmArgs *g) { return g->ta == TR_N ? span(g->M, g->K, g->lda) : span(g->K, g->M, g->lda); }
static size_t b_span(const GemmArgs *g) { return g->tb == TR_N ? span(g->K, g->N, g->ldb) : span(g->N, g->K, g->ldb); }

// A GEMM's operands: fp32 (sgemm) and, with bf16, the same values as bf16 plus a start C0
// that both bf16 paths copy (beta != 0 reads C) and their outputs.
typedef struct {
    GemmArgs g;
    size_t nc;
    float *A, *B, *C;
    bf16 *A16, *B16, *C0, *C16, *Cfb;
} Operands;

static Operands operands_make(const GemmArgs *g, int with_bf16, Rng *rng) {
    size_t na = a_span(g), nb = b_span(g), nc = span(g->M, g->N, g->ldc);
    Operands o = { .g = *g, .nc = nc, .A = xaligned_alloc(na * 4 + 64), .B = xaligned_alloc(nb * 4 + 64),
                   .C = xaligned_alloc(nc * 4 + 64) };
    if (with_bf16) {
        o.A16 = xaligned_alloc(na * 2 + 64); o.B16 = xaligned_alloc(nb * 2 + 64); o.C0 = xaligned_alloc(nc * 2 + 64);
        o.C16 = xaligned_alloc(nc * 2 + 64); o.Cfb = xaligned_alloc(nc * 2 + 64);
    }
    float *x[3] = { o.A, o.B, o.C };
    bf16 *x16[3] = { o.A16, o.B16, o.C0 };
    size_t n[3] = { na, nb, nc };
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < n[t]; i++) {
            bf16 h = bf16_from_f32(2 * rng_uniform(rng) - 1);
            x[t][i] = bf16_to_f32(h);
            if (with_bf16) x16[t][i] = h;
        }
    if (with_bf16) { memcpy(o.C16, o.C0, nc * 2); memcpy(o.Cfb, o.C0, nc * 2); }
    o.g.A = o.A; o.g.B = o.B; o.g.C = o.C;
    return o;
}
static void operands_free(Operands *o) {
    free(o->A); free(o->B); free(o->C); free(o->A16); free(o->B16); free(o->C0); free(o->C16); free(o->Cfb);
}

typedef struct { Operands *op, *ref; Backend *bk; } Bench;

// One call of path p, timed (the bf16 paths without their copy of C0 and the path switch).
static double run_path(const Bench *b, int p) {
    if (p == P_SGEMM || p == P_REF) {
        const GemmArgs *g = p == P_SGEMM ? &b->op->g : &b->ref->g;
        double t0 = now_seconds();
        cpu_sgemm(g);
        return now_seconds() - t0;
    }
    bf16 *out = p == P_BF16 ? b->op->C16 : b->op->Cfb;
    memcpy(out, b->op->C0, b->op->nc * 2);
    cpu_bf16_gemm_choose(p == P_BF16 ? "bf16" : "fp32", 1);
    GemmArgs h = b->op->g;
    h.A = b->op->A16; h.B = b->op->B16; h.C = out;
    double t0 = now_seconds();
    b->bk->ops->gemm(b->bk, &h);
    return now_seconds() - t0;
}

// One warm-up round, then reps rounds of the paths in turn; best[path] = each one's best.
static void time_paths(const Bench *b, int reps, const int *paths, int n, double *best) {
    for (int i = 0; i < n; i++) best[paths[i]] = 1e30;
    for (int r = 0; r <= reps; r++)
        for (int i = 0; i < n; i++) {
            double dt = run_path(b, paths[i]);
            if (r > 0 && dt < best[paths[i]]) best[paths[i]] = dt;
        }
}

// max |bf16 - fallback| / max |fallback| over C's M x N elements.
static double max_rel_err(const Operands *o) {
    double err = 0, cmax = 0;
    for (int i = 0; i < o->g.M; i++)
        for (int j = 0; j < o->g.N; j++) {
            size_t k = (size_t)i * (size_t)o->g.ldc + (size_t)j;
            double a = bf16_to_f32(o->Cfb[k]), d = fabs(bf16_to_f32(o->C16[k]) - a);
            if (d > err) err = d;
            if (fabs(a) > cmax) cmax = fabs(a);
        }
    return cmax > 0 ? err / cmax : err;
}

// ---- printing -----------------------------------------------------------------------------
static double flops_of(const GemmArgs *g) { return 2.0 * g->M * g->N * g->K; }

static int by_fp32_step_time(const void *x, const void *y) {
    const Row *a = x, *b = y;
    double ta = a->best[P_SGEMM] * (double)a->calls, tb = b->best[P_SGEMM] * (double)b->calls;
    if (ta != tb) return ta < tb ? 1 : -1;
    return a->order - b->order;
}

typedef struct { const char *name; int width; } Column;

// One markdown table line: cells padded to their columns' widths.
static void print_cells(const Column *cols, int n, char cells[][32]) {
    for (int i = 0; i < n; i++) printf("| %*s ", cols[i].width, cells[i]);
    printf("|\n");
}
static void print_head(const Column *cols, int n) {
    char cells[24][32];
    for (int i = 0; i < n; i++) xsnprintf(cells[i], sizeof cells[i], "%s", cols[i].name);
    print_cells(cols, n, cells);
    for (int i = 0; i < n; i++) { printf("|"); for (int k = 0; k < cols[i].width + 2; k++) putchar('-'); }
    printf("|\n");
}

// The columns every mode starts with: the recorded call.
#define N_CALL_COLS 13
static const Column CALL_COLS[N_CALL_COLS] = {
    { "phase", 9 }, { "ta", 2 }, { "tb", 2 }, { "M", 6 }, { "N", 6 }, { "K", 6 }, { "lda", 6 }, { "ldb", 6 },
    { "ldc", 6 }, { "alpha", 5 }, { "beta", 4 }, { "group", 5 }, { "calls/step", 10 } };
static void call_cells(const Row *r, char cells[][32]) {
    const GemmArgs *g = &r->g;
    xsnprintf(cells[0], 32, "%s", phase_name(r->phase));
    xsnprintf(cells[1], 32, "%c", g->ta == TR_T ? 'T' : 'N');
    xsnprintf(cells[2], 32, "%c", g->tb == TR_T ? 'T' : 'N');
    int v[6] = { g->M, g->N, g->K, g->lda, g->ldb, g->ldc };
    for (int i = 0; i < 6; i++) xsnprintf(cells[3 + i], 32, "%d", v[i]);
    xsnprintf(cells[9], 32, "%g", g->alpha);
    xsnprintf(cells[10], 32, "%g", g->beta);
    xsnprintf(cells[11], 32, "%d", r->group);
    xsnprintf(cells[12], 32, "%ld", r->calls);
}

static void print_load(const char *when, const double l[3]) {
    if (l[0] < 0) printf("load %s: unavailable\n", when);
    else printf("load %s: %.2f %.2f %.2f (1, 5, 15 min)\n", when, l[0], l[1], l[2]);
}
static void sample_load(double l[3]) { if (getloadavg(l, 3) < 0) l[0] = -1; }

// ---- --libs: every installed library per shape ------------------------------------------
// Each row's libraries interleaved (one warm-up round, then reps rounds, each library's best),
// against the library BOOST_CPU_GEMM gives the shape (auto: the host's table, measuring the
// shapes it lacks first). The totals weigh a shape by its calls per step.
static void libs_mode(const Args *a, int threads, int N) {
    GemmLib libs[GEMM_N_LIBS];
    int nl = 0;
    char missing[600] = "";
    for (int l = 0; l < GEMM_N_LIBS; l++) {
        char why[400];
        if (cpu_gemm_lib_available((GemmLib)l, why, sizeof why)) libs[nl++] = (GemmLib)l;
        else { size_t k = strlen(missing); xsnprintf(missing + k, sizeof missing - k, "  %s: %s\n", cpu_gemm_lib_name((GemmLib)l), why); }
    }
    for (int s = 0; s < n_rows; s++) rows[s].chosen = cpu_sgemm_lib_for(&rows[s].g);   // auto measures new shapes here
    Rng rng = { .state = 0x9e3779b9u };
    double load_before[3], load_after[3];
    sample_load(load_before);
    for (int s = 0; s < n_rows; s++) {
        Row *r = &rows[s];
        Operands op = operands_make(&r->g, 0, &rng);
        for (int i = 0; i < nl; i++) r->lib[libs[i]] = 1e30;
        for (int rep = 0; rep <= a->reps; rep++)
            for (int j = 0; j < nl; j++) {
                GemmLib l = libs[(j + rep) % nl];
                double t0 = now_seconds();
                cpu_gemm_lib_run(l, &op.g);
                double dt = now_seconds() - t0;
                if (rep > 0 && dt < r->lib[l]) r->lib[l] = dt;
            }
        r->best[P_SGEMM] = r->lib[r->chosen];
        operands_free(&op);
    }
    sample_load(load_after);
    qsort(rows, (size_t)n_rows, sizeof *rows, by_fp32_step_time);
    HostFacts host;
    host_facts(&host);
    printf("bench_gemm --libs | %s, %d threads | preset %s, linear %s, batch %d x seq %d = %d tokens | %d distinct GEMMs of "
           "one step, best of %d interleaved reps per library\n", host.cpu_model, threads, a->preset, a->linear, a->batch,
           a->seq, N, n_rows, a->reps);
    printf("fp32 GEMMs: %s\n", cpu_sgemm_describe());
    for (int i = 0; i < nl; i++) printf("library %s: %s\n", cpu_gemm_lib_name(libs[i]), cpu_gemm_lib_version(libs[i]));
    if (missing[0]) printf("not installed:\n%s", missing);
    print_load("before", load_before);
    print_load("after", load_after);
    Column cols[24];
    memcpy(cols, CALL_COLS, sizeof CALL_COLS);
    int nc = N_CALL_COLS;
    char names[GEMM_N_LIBS][32];
    for (int i = 0; i < nl; i++) {
        xsnprintf(names[i], sizeof names[i], "%s GFLOP/s", cpu_gemm_lib_name(libs[i]));
        cols[nc++] = (Column){ names[i], (int)strlen(names[i]) };
    }
    cols[nc++] = (Column){ "choice", 8 };
    cols[nc++] = (Column){ "best / choice", 13 };
    printf("\n");
    print_head(cols, nc);
    double step[GEMM_N_LIBS] = { 0 }, chosen = 0, best_all = 0;
    for (int s = 0; s < n_rows; s++) {
        const Row *r = &rows[s];
        char cells[24][32];
        call_cells(r, cells);
        double f = flops_of(&r->g), fastest = 1e30;
        for (int i = 0; i < nl; i++) {
            xsnprintf(cells[N_CALL_COLS + i], 32, "%.1f", f / r->lib[libs[i]] * 1e-9);
            step[libs[i]] += (double)r->calls * r->lib[libs[i]];
            if (r->lib[libs[i]] < fastest) fastest = r->lib[libs[i]];
        }
        xsnprintf(cells[N_CALL_COLS + nl], 32, "%s", cpu_gemm_lib_name(r->chosen));
        xsnprintf(cells[N_CALL_COLS + nl + 1], 32, "%.2f", fastest / r->lib[r->chosen]);
        chosen += (double)r->calls * r->lib[r->chosen];
        best_all += (double)r->calls * fastest;
        print_cells(cols, nc, cells);
    }
    printf("\nGEMM time per step:");
    for (int i = 0; i < nl; i++) printf(" %s %.1f ms |", cpu_gemm_lib_name(libs[i]), 1e3 * step[libs[i]]);
    printf(" the per-shape choice %.1f ms | the fastest of each row %.1f ms\n", 1e3 * chosen, 1e3 * best_all);
    printf("(best-of-%d timings of this run; the choice itself is the host table's median of paired ratios: compare the "
           "columns of one run only)\n", a->reps);
}

// ---- main ---------------------------------------------------------------------------------
int main(int argc, char **argv) {
    env_runtime_setup(argv);
    Args a = parse_args(argc, argv);
    int threads = trainer_set_threads(a.threads);
    Config cfg;
    config_for_shape(&cfg, a.preset, a.linear, a.seq, a.sets, a.n_sets);

    Backend *bk = backend_cpu(a.bf16 ? DT_BF16 : DT_F32);
    if (a.bf16) cpu_bf16_gemm_choose("fp32", 1);   // recording: the path that every CPU has
    int N = record_step(bk, &cfg, a.batch);
    // the bf16 units are timed wherever the CPU has them, whichever path auto takes
    char path_line[512];   // auto's line (the timing below switches paths)
    if (a.bf16) cpu_bf16_gemm_choose("auto", 1);
    xsnprintf(path_line, sizeof path_line, "%s", cpu_bf16_gemm_describe());
    int have16 = a.bf16 && cpu_bf16_has_units();
    if (a.libs && a.bf16)
        die_input_hint("build/bench_gemm --preset cola-60m --libs (or --bf16; --help)", "bench_gemm: --libs and --bf16 are two modes; give one");
    if (a.libs) {
        libs_mode(&a, threads, N);
        backend_free(bk);
        free(rows); free(a.sets);
        return 0;
    }

    // ---- timing
    Rng rng = { .state = 0x9e3779b9u };
    GemmArgs rg = { TR_N, TR_N, 1024, 1024, 1024, 1.0f, NULL, 1024, NULL, 1024, 0.0f, NULL, 1024 };
    Operands ref = operands_make(&rg, 0, &rng);
    double load_before[3], load_after[3], peak = 0;
    sample_load(load_before);
    if (!a.bf16)
        for (int i = 0; i < 3; i++) { double p = cpu_sgemm_peak_gflops(); if (p > peak) peak = p; }
    for (int s = 0; s < n_rows; s++) {
        Row *r = &rows[s];
        Operands op = operands_make(&r->g, a.bf16, &rng);
        Bench b = { &op, &ref, bk };
        if (a.bf16) {
            int paths[3] = { P_SGEMM, P_BF16, P_FALLBACK }, np = 0;
            for (int i = 0; i < 3; i++) if (paths[i] != P_BF16 || have16) paths[np++] = paths[i];   // no bf16 units: fp32 and the fallback
            time_paths(&b, a.reps, paths, np, r->best);
            if (have16) r->err = max_rel_err(&op);
        } else {
            int paths[2] = { P_SGEMM, P_REF };
            time_paths(&b, a.reps, paths, 2, r->best);
            // One thread per GEMM: what T such products side by side (a batch split over the
            // threads instead of each product over all of them) would reach, per thread.
            if (threads == 1) r->t1 = r->best[P_SGEMM];
            else {
                double one[N_PATHS];
                int p1 = P_SGEMM;
                openblas_set_num_threads(1);
                time_paths(&b, a.reps, &p1, 1, one);
                openblas_set_num_threads(threads);
                r->t1 = one[P_SGEMM];
            }
        }
        operands_free(&op);
    }
    if (!a.bf16) { double p = cpu_sgemm_peak_gflops(); if (p > peak) peak = p; }
    sample_load(load_after);
    operands_free(&ref);
    qsort(rows, (size_t)n_rows, sizeof *rows, by_fp32_step_time);

    // ---- the header
    HostFacts host;
    host_facts(&host);
    printf("bench_gemm | %s | %s, %d threads | preset %s, linear %s, batch %d x seq %d = %d tokens | %d distinct GEMMs "
           "of one step, best of %d interleaved reps\n", a.bf16 ? "bf16 back end: fp32 sgemm vs bf16 vs fallback" :
           "fp32 sgemm per shape", host.cpu_model, threads, a.preset, a.linear, a.batch, cfg.model.seq_len, N, n_rows, a.reps);
    printf("fp32 GEMMs: %s\n", cpu_sgemm_describe());
    if (a.bf16) printf("bf16 path taken by auto: %s\n", path_line);
    else printf("sgemm peak %.1f GFLOP/s (2048^3, best of the measurements before and after)\n", peak);
    print_load("before", load_before);
    print_load("after", load_after);
    if (!a.bf16)
        printf("%%ref: against a 1024^3 product timed next to each rep (robust to the load); 1-thr x%d: the shape on one "
               "thread times %d (%d such GEMMs side by side)\n", threads, threads, threads);

    // ---- the mode's table and totals
    Column cols[24];
    memcpy(cols, CALL_COLS, sizeof CALL_COLS);
    int nc = N_CALL_COLS;
    char col1[32];
    xsnprintf(col1, sizeof col1, "1-thr x%d", threads);
    if (a.bf16) {
        Column m[] = { { "fp32 sgemm GFLOP/s", 18 }, { "bf16 GFLOP/s", 12 }, { "fallback GFLOP/s", 16 },
                       { "bf16 / fp32", 11 }, { "max rel err", 11 } };
        memcpy(cols + nc, m, sizeof m); nc += (int)(sizeof m / sizeof m[0]);
    } else {
        Column m[] = { { "ms/call", 8 }, { "GFLOP/s", 8 }, { "%peak", 6 }, { "%ref", 6 }, { col1, 9 }, { "ms/step", 8 } };
        memcpy(cols + nc, m, sizeof m); nc += (int)(sizeof m / sizeof m[0]);
    }
    printf("\n");
    print_head(cols, nc);
    double ref_f = flops_of(&rg), step[N_PATHS] = { 0 }, flops = 0, at_ref = 0;
    for (int s = 0; s < n_rows; s++) {
        const Row *r = &rows[s];
        double f = flops_of(&r->g), t = r->best[P_SGEMM];
        char cells[24][32];
        call_cells(r, cells);
        char (*c)[32] = cells + N_CALL_COLS;
        if (a.bf16) {
            xsnprintf(c[0], 32, "%.1f", f / t * 1e-9);
            xsnprintf(c[1], 32, "-"); xsnprintf(c[3], 32, "-"); xsnprintf(c[4], 32, "-");
            if (have16) {
                xsnprintf(c[1], 32, "%.1f", f / r->best[P_BF16] * 1e-9);
                xsnprintf(c[3], 32, "%.2fx", t / r->best[P_BF16]);
                xsnprintf(c[4], 32, "%.1e", r->err);
            }
            xsnprintf(c[2], 32, "%.1f", f / r->best[P_FALLBACK] * 1e-9);
            step[P_BF16] += (double)r->calls * (have16 ? r->best[P_BF16] : r->best[P_FALLBACK]);
            step[P_FALLBACK] += (double)r->calls * r->best[P_FALLBACK];
        } else {
            xsnprintf(c[0], 32, "%.3f", 1e3 * t);
            xsnprintf(c[1], 32, "%.1f", f / t * 1e-9);
            xsnprintf(c[2], 32, "%.1f%%", 100 * f / t * 1e-9 / peak);
            xsnprintf(c[3], 32, "%.1f%%", 100 * (f / t) / (ref_f / r->best[P_REF]));
            xsnprintf(c[4], 32, "%.1f", threads * f / r->t1 * 1e-9);
            xsnprintf(c[5], 32, "%.2f", 1e3 * t * (double)r->calls);
            at_ref += f * (double)r->calls / (ref_f / r->best[P_REF]);   // the time at the reference's rate
        }
        print_cells(cols, nc, cells);
        step[P_SGEMM] += (double)r->calls * t;
        flops += (double)r->calls * f;
    }
    printf("\n");
    if (a.bf16)
        printf("total per step (%.1f GFLOP of GEMMs): fp32 sgemm %.1f ms (%.1f GFLOP/s) | bf16 %.1f ms (%.1f GFLOP/s, "
               "%.2fx fp32)%s | fallback %.1f ms\n", flops * 1e-9, 1e3 * step[P_SGEMM], flops / step[P_SGEMM] * 1e-9,
               1e3 * step[P_BF16], flops / step[P_BF16] * 1e-9, step[P_SGEMM] / step[P_BF16],
               have16 ? "" : " (no bf16 units: the fallback's)", 1e3 * step[P_FALLBACK]);
    else
        printf("total: %.1f ms of GEMMs per step, %.1f GFLOP, %.1f GFLOP/s = %.1f%% of the sgemm peak, %.1f%% of the "
               "1024^3 reference's rate\n", 1e3 * step[P_SGEMM], flops * 1e-9, flops / step[P_SGEMM] * 1e-9,
               100 * flops / step[P_SGEMM] * 1e-9 / peak, 100 * at_ref / step[P_SGEMM]);
    printf("(timings on a shared machine are not results: compare the columns of one run only)\n");
    backend_free(bk);
    free(rows); free(a.sets);
    return 0;
}
