// bench_gemm — the GEMMs of one training step, per shape: fp32 sgemm (the fp32 back end)
// against the bf16 back end's two GEMM paths (cpu_bf16.h): bf16 arithmetic through oneDNN
// and the fp32 fallback (widen, sgemm, round). docs/cpu-bf16.md.
//
//   build/bench_gemm [--preset cola-60m] [--seq 256] [--batch 4] [--linear cola]
//                    [--reps 5] [--threads N] [--set key=value]...
//
// The shapes are the real drivers' own: one forward and backward step of the model on the
// bf16 back end records every GEMM (shape, transposes, strides, alpha, beta) through a
// wrapper of the op table. Each distinct GEMM is then timed on random operands, the three
// paths interleaved (fp32, bf16, fallback, fp32, ...) --reps times, the best of each kept;
// "per step" weighs a shape's time by how often the step calls it. max rel err: the bf16
// path against the fallback on the same bf16 inputs, max |diff| / max |C|.
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../backend/bf16.h"
#include "../backend/cpu/cpu_bf16.h"
#include "../backend/ops.h"
#include "../config/config.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/rng.h"
#include "../core/timer.h"
#include "../model/model.h"
#include "../store/host.h"
#include "../train/trainer.h"

typedef struct { GemmArgs g; int count; } Shape;
static Shape *shapes;
static int n_shapes, cap_shapes;
static const BackendOps *real_ops;

static void record(const GemmArgs *g) {
    for (int i = 0; i < n_shapes; i++) {
        const GemmArgs *s = &shapes[i].g;
        if (s->ta == g->ta && s->tb == g->tb && s->M == g->M && s->N == g->N && s->K == g->K && s->lda == g->lda &&
            s->ldb == g->ldb && s->ldc == g->ldc && s->alpha == g->alpha && s->beta == g->beta) { shapes[i].count++; return; }
    }
    shapes = vec_grow(shapes, &n_shapes, &cap_shapes, sizeof *shapes);
    shapes[n_shapes - 1] = (Shape){ .g = *g, .count = 1 };
}
static void rec_gemm(Backend *b, const GemmArgs *g) { record(g); real_ops->gemm(b, g); }
static void rec_gemm_group(Backend *b, int count, const GemmArgs *g) {
    for (int i = 0; i < count; i++) record(&g[i]);
    real_ops->gemm_group(b, count, g);
}

static size_t span(int rows, int cols, int ld) { return rows ? (size_t)(rows - 1) * ld + cols : 0; }
static size_t a_span(const GemmArgs *g) { return g->ta == TR_N ? span(g->M, g->K, g->lda) : span(g->K, g->M, g->lda); }
static size_t b_span(const GemmArgs *g) { return g->tb == TR_N ? span(g->K, g->N, g->ldb) : span(g->N, g->K, g->ldb); }

static void print_load(const char *when) {
    double l[3] = { 0, 0, 0 };
    if (getloadavg(l, 3) < 0) { printf("load %s: unavailable\n", when); return; }
    printf("load %s: %.2f %.2f %.2f (1, 5, 15 min)\n", when, l[0], l[1], l[2]);
}

static int parse_int(const char *opt, const char *v, int lo) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > 1000000) die_input("%s expects an integer >= %d, got '%s'", opt, lo, v);
    return (int)x;
}

int main(int argc, char **argv) {
    ensure_passive_omp(argv);
    const char *preset = "cola-60m", *linear = "cola";
    int seq = 256, batch = 4, reps = 5, threads = 0;
    const char **sets = xcalloc((size_t)argc, sizeof(char *));
    int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: bench_gemm [--preset NAME] [--seq T] [--batch B] [--linear dense|cola|svd|lax] [--reps R]\n"
                   "                  [--threads N] [--set key=value]...\n");
            return 0;
        }
        static const char *const known[] = { "--preset", "--seq", "--batch", "--linear", "--reps", "--threads", "--set" };
        int k = 0;
        while (k < 7 && strcmp(a, known[k])) k++;
        if (k == 7) die_input("bench_gemm: unknown argument '%s' (see --help)", a);
        if (!v) die_input("bench_gemm: %s needs a value (see --help)", a);
        if (!strcmp(a, "--preset")) preset = v;
        else if (!strcmp(a, "--seq")) seq = parse_int(a, v, 1);
        else if (!strcmp(a, "--batch")) batch = parse_int(a, v, 1);
        else if (!strcmp(a, "--linear")) linear = v;
        else if (!strcmp(a, "--reps")) reps = parse_int(a, v, 1);
        else if (!strcmp(a, "--threads")) threads = parse_int(a, v, 0);
        else sets[n_sets++] = v;   // --set
        i++;
    }
    threads = trainer_set_threads(threads);
    Config cfg;
    config_for_shape(&cfg, preset, linear, seq, sets, n_sets);

    // one step of the real drivers on the bf16 back end, every GEMM recorded
    Backend *bk = backend_cpu(DT_BF16);
    real_ops = bk->ops;
    BackendOps rec = *bk->ops;
    rec.gemm = rec_gemm; rec.gemm_group = rec_gemm_group;
    bk->ops = &rec;
    cpu_bf16_gemm_choose("fp32", 1);
    Model m;
    model_init_parallel(&m, &cfg.model, batch, seq, cfg.train.seed, comm_single(), &cfg.boost, 1, bk, 1);
    int N = m.N;
    int32_t *in = xmalloc((size_t)N * sizeof(int32_t)), *tg = xmalloc((size_t)N * sizeof(int32_t));
    Rng rng = { .state = 0x6e770000u };
    for (int i = 0; i < N; i++) { in[i] = (int32_t)(rng_next(&rng) % (uint64_t)cfg.model.vocab_size); tg[i] = in[(i + 1) % N]; }
    model_zero_grads(&m);
    model_forward(&m, in, tg);
    model_backward(&m, 1.0f / (float)N);
    model_free(&m);
    free(in); free(tg);
    bk->ops = real_ops;

    HostFacts host;
    host_facts(&host);
    Bf16GemmPath have = cpu_bf16_gemm_choose("auto", 1);
    printf("bench_gemm | %s, %d threads | preset %s, linear %s, %d tokens | %d distinct GEMMs of one step, best of %d "
           "interleaved reps\n", host.cpu_model, threads, preset, linear, N, n_shapes, reps);
    printf("bf16 path: %s\n", cpu_bf16_gemm_describe());
    print_load("before");

    printf("\n| M x N x K (ta tb, beta) | calls/step | fp32 sgemm GFLOP/s | bf16 GFLOP/s | fallback GFLOP/s | bf16 / fp32 | max rel err |\n");
    printf("|---|---|---|---|---|---|---|\n");
    double step32 = 0, step16 = 0, stepfb = 0, flops = 0;
    for (int s = 0; s < n_shapes; s++) {
        GemmArgs g = shapes[s].g;
        size_t na = a_span(&g), nb = b_span(&g), nc = span(g.M, g.N, g.ldc);
        float *A = xaligned_alloc(na * 4 + 64), *B = xaligned_alloc(nb * 4 + 64), *C = xaligned_alloc(nc * 4 + 64);
        bf16 *A16 = xaligned_alloc(na * 2 + 64), *B16 = xaligned_alloc(nb * 2 + 64), *C16 = xaligned_alloc(nc * 2 + 64),
             *Cfb = xaligned_alloc(nc * 2 + 64), *C0 = xaligned_alloc(nc * 2 + 64);
        for (size_t i = 0; i < na; i++) { A16[i] = bf16_from_f32(2 * rng_uniform(&rng) - 1); A[i] = bf16_to_f32(A16[i]); }
        for (size_t i = 0; i < nb; i++) { B16[i] = bf16_from_f32(2 * rng_uniform(&rng) - 1); B[i] = bf16_to_f32(B16[i]); }
        for (size_t i = 0; i < nc; i++) C0[i] = bf16_from_f32(2 * rng_uniform(&rng) - 1);
        double best[3] = { 1e30, 1e30, 1e30 };
        for (int r = 0; r < reps + 1; r++) {   // the first rep warms up (and creates the primitive)
            for (int p = 0; p < 3; p++) {
                if (p == 1 && have != BF16_GEMM_BF16) continue;   // no bf16 units: fp32 and the fallback only
                double t0 = now_seconds();
                if (p == 0) {
                    cblas_sgemm(CblasRowMajor, g.ta == TR_T ? CblasTrans : CblasNoTrans, g.tb == TR_T ? CblasTrans : CblasNoTrans,
                                g.M, g.N, g.K, g.alpha, A, g.lda, B, g.ldb, g.beta, C, g.ldc);
                } else {
                    bf16 *out = p == 1 ? C16 : Cfb;
                    memcpy(out, C0, nc * 2);   // beta != 0 reads C: the same start for both paths
                    cpu_bf16_gemm_choose(p == 1 ? "bf16" : "fp32", 1);
                    t0 = now_seconds();
                    GemmArgs h = g; h.A = A16; h.B = B16; h.C = out;
                    bk->ops->gemm(bk, &h);
                }
                double dt = now_seconds() - t0;
                if (r > 0 && dt < best[p]) best[p] = dt;
            }
        }
        double err = 0, cmax = 0;
        for (int i = 0; i < g.M; i++)
            for (int j = 0; j < g.N; j++) {
                size_t k = (size_t)i * g.ldc + j;
                double a = bf16_to_f32(Cfb[k]), d = fabs(bf16_to_f32(C16[k]) - a);
                if (d > err) err = d;
                if (fabs(a) > cmax) cmax = fabs(a);
            }
        double f = 2.0 * g.M * g.N * g.K;
        int have16 = have == BF16_GEMM_BF16;
        char b16[32] = "-", ratio[32] = "-", e[32] = "-";
        if (have16) {
            snprintf(b16, sizeof b16, "%.1f", f / best[1] * 1e-9);
            snprintf(ratio, sizeof ratio, "%.2fx", best[0] / best[1]);
            snprintf(e, sizeof e, "%.1e", cmax > 0 ? err / cmax : err);
        }
        printf("| %d x %d x %d (%c%c, %g) | %d | %.1f | %s | %.1f | %s | %s |\n", g.M, g.N, g.K, g.ta == TR_T ? 'T' : 'N',
               g.tb == TR_T ? 'T' : 'N', g.beta, shapes[s].count, f / best[0] * 1e-9, b16, f / best[2] * 1e-9, ratio, e);
        step32 += shapes[s].count * best[0];
        step16 += shapes[s].count * (have16 ? best[1] : best[2]);
        stepfb += shapes[s].count * best[2];
        flops += shapes[s].count * f;
        free(A); free(B); free(C); free(A16); free(B16); free(C16); free(Cfb); free(C0);
    }
    printf("\nper step (%.1f GFLOP of GEMMs): fp32 sgemm %.1f ms (%.1f GFLOP/s) | bf16 %.1f ms (%.1f GFLOP/s, %.2fx fp32) | "
           "fallback %.1f ms\n", flops * 1e-9, 1e3 * step32, flops / step32 * 1e-9, 1e3 * step16, flops / step16 * 1e-9,
           step32 / step16, 1e3 * stepfb);
    print_load("after");
    printf("(timings on a shared machine are not results: compare the columns of one run only)\n");
    backend_free(bk);
    free(shapes); free(sets);
    return 0;
}
