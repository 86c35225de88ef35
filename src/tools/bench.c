// bench — training-step throughput of dense vs low-rank (CoLA, SVD) models on this CPU, and
// the per-op profile of the real drivers.
//
//   build/bench [--preset cola-60m] [--seq 256] [--batch 4] [--steps 6] [--warmup 2]
//               [--linears dense,cola,svd] [--threads N] [--profile R | --no-profile]
//               [--switches LIST | --no-switches] [--precision LIST] [--json OUT] [--set key=value]...
//   build/bench --peak-only            the sgemm peak alone (GFLOP/s, JSON on stdout)
//
// For each linear kind the model and its optimizer are built directly (model_init_parallel
// + optimizer_init on the CPU fp32 back end), bypassing the data pipeline: every step gets
// fresh uniform-random tokens from a fixed seed, drawn outside the timed region. One timed
// step is what trainer_step does for one micro-batch: zero grads, forward, backward of the
// mean loss, global grad-norm clip, AdamW. The first --warmup steps are dropped; ms/step is
// the mean of the remaining --steps (also printed: the best step).
//
// MFU = tokens/s × flops_train_per_token / measured sgemm peak (best-of-3 2048³ sgemm
// with the same thread count), the definition the trainer logs; the peak is measured before
// and after every kind and the maximum is used.
//
// Per-op profile (--profile R, default 3): R more steps run with the timing wrapper attached
// to the back end (backend/profile.h), which times every op of the real drivers — no copy of
// the model's op sequence exists here. Rows are per op and phase, the mean over the R steps.
// --switches profiles the BOOST techniques one after another at tp = 1 on the low-rank kinds
// (the default ladder: Vanilla, +BTP, +online RMSNorm, +grouping, +low-rank checkpointing,
// and full recompute instead).
//
// --precision LIST (default fp32): each kind is run at each listed precision in the listed
// order, fp32 on the reference back end, bf16 on the bf16-storage one (its GEMMs in bf16
// arithmetic where the CPU has it, cpu_bf16.h); "fp32,bf16,fp32,bf16" interleaves the two,
// and a last table gives per kind the median ms/step of each and the bf16 speed-up.
#include <cblas.h>
#include <math.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../backend/cpu/cpu_bf16.h"
#include "../backend/cpu/sgemm.h"
#include "../backend/ops.h"
#include "../core/fileio.h"
#include "../backend/profile.h"
#include "../config/config.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/rng.h"
#include "../core/timer.h"
#include "../model/model.h"
#include "../store/db.h"
#include "../store/host.h"
#include "../model/kind.h"
#include "../train/optimizer.h"
#include "../train/trainer.h"

typedef struct {
    char label[64];
    LinearKind kind;
    DType dtype;             // the back end: cpu fp32, or cpu bf16 storage
    int64_t params;
    double flops_per_token;
    double ms_step, ms_best, ms_fwd, ms_bwd, ms_opt;
    double tokens_per_s, mfu;
    double first_loss, last_loss;
    int profiled, prof_steps;
    OpProfile prof;
    double mem_peak_bytes;   // the back end's peak allocation (model, optimizer, activations)
} KindResult;

static void fill_random(int32_t *x, size_t n, int V, Rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)(rng_next(r) % (uint64_t)V);
}

#define BENCH_USAGE \
   "usage: bench [--preset NAME] [--seq T] [--batch B] [--steps N] [--warmup W]\n" \
   "             [--linears dense,cola,svd] [--threads N] [--profile R | --no-profile]\n" \
   "             [--switches LIST | --no-switches] [--precision LIST] [--json OUT] [--set key=value]...\n" \
   "       bench --peak-only [--threads N]\n" \
   "  LIST: comma-separated BOOST settings profiled on the low-rank kinds at tp = 1, each one of\n" \
   "        vanilla, btp, btp+online, btp+online+grouping, btp+online+grouping+lowrank, full\n" \
   "  --precision LIST: comma-separated fp32, bf16, run in that order for each kind (fp32,bf16,fp32,bf16)\n"


// One step as trainer_step does it for a single micro-batch; returns the loss and the
// forward/backward/optimizer split.
static double one_step(Model *m, Optimizer *o, const TrainConfig *tc, const int32_t *in, const int32_t *tg,
                       int t, double *fwd, double *bwd, double *opt) {
    double t0 = now_seconds();
    model_step_begin(m, 1.0f / (float)m->N);     // as trainer_step: no zero pass, one loss pass
    double loss = model_forward(m, in, tg);
    double t1 = now_seconds();
    model_backward(m, 1.0f / (float)m->N);
    double t2 = now_seconds();
    optimizer_clip(o, m, tc->grad_clip);
    optimizer_step(o, m, tc, optimizer_lr_at(tc, t), t + 1);
    double t3 = now_seconds();
    *fwd = t1 - t0; *bwd = t2 - t1; *opt = t3 - t2;
    return loss;
}

static void run_kind(KindResult *R, const Config *cfg, int batch, int steps, int warmup, int profile) {
    const ModelConfig *mc = &cfg->model;
    const TrainConfig *tc = &cfg->train;
    Backend *bk = backend_cpu(R->dtype);
    Model mdl; Optimizer opt;
    model_init_parallel(&mdl, mc, batch, mc->seq_len, tc->seed, comm_single(), &cfg->boost, 1, bk, 1);
    optimizer_init(&opt, &mdl, 0);
    int N = mdl.N;
    int32_t *in = xmalloc((size_t)N * sizeof(int32_t)), *tg = xmalloc((size_t)N * sizeof(int32_t));
    Rng rng = { .state = 0x5eed0000u + (uint64_t)mc->linear };
    R->kind = mc->linear;
    R->params = model_param_count(mc);
    R->flops_per_token = flops_train_per_token(mc);
    double sum = 0, best = 1e30, fwd = 0, bwd = 0, op = 0;
    for (int s = 0; s < warmup + steps; s++) {
        fill_random(in, (size_t)N, mc->vocab_size, &rng);
        fill_random(tg, (size_t)N, mc->vocab_size, &rng);
        double f, b, o;
        double loss = one_step(&mdl, &opt, tc, in, tg, s, &f, &b, &o);
        if (!isfinite(loss)) die_input("bench: loss is %f at step %d", loss, s + 1);
        if (s == 0) R->first_loss = loss;
        R->last_loss = loss;
        if (s >= warmup) {
            double dt = f + b + o;
            sum += dt; if (dt < best) best = dt;
            fwd += f; bwd += b; op += o;
        }
    }
    R->ms_step = 1e3 * sum / steps;
    R->ms_best = 1e3 * best;
    R->ms_fwd = 1e3 * fwd / steps; R->ms_bwd = 1e3 * bwd / steps; R->ms_opt = 1e3 * op / steps;
    R->tokens_per_s = N / (sum / steps);
    R->mem_peak_bytes = (double)bk->mem_peak;
    if (profile > 0) {   // the timing wrapper on the same back end: every op of the real drivers
        op_profile_attach(&R->prof, bk, 1, 0);
        for (int rep = 0; rep < profile; rep++) {
            fill_random(in, (size_t)N, mc->vocab_size, &rng);
            fill_random(tg, (size_t)N, mc->vocab_size, &rng);
            double f, b, o;
            one_step(&mdl, &opt, tc, in, tg, warmup + steps + rep, &f, &b, &o);
        }
        bk_observe(bk, NULL, NULL);   // detached; the records stay in R->prof
        R->prof.bk = NULL;
        R->profiled = 1; R->prof_steps = profile;
    }
    free(in); free(tg);
    optimizer_free(&opt);
    model_free(&mdl);
    backend_free(bk);
}

// The profile's rows divided by the number of profiled steps (per-step means).
static void profile_per_step(OpProfile *p, int steps) {
    for (int i = 0; i < p->n_agg; i++) {
        p->agg[i].calls /= steps; p->agg[i].flops /= steps; p->agg[i].bytes /= steps; p->agg[i].seconds /= steps;
    }
}

static void print_profile(KindResult *R, double peak) {
    profile_per_step(&R->prof, R->prof_steps);
    OpAggregate tot = op_profile_total(&R->prof, -1);
    double gemm_s = 0, gemm_f = 0;
    for (int i = 0; i < R->prof.n_agg; i++)
        if (!strncmp(R->prof.agg[i].name, "gemm", 4)) { gemm_s += R->prof.agg[i].seconds; gemm_f += R->prof.agg[i].flops; }
    printf("\nper-op time, %s (mean of %d steps timed op by op; the timing wrapper on the real drivers)\n",
           R->label, R->prof_steps);
    op_profile_print(&R->prof, stdout, peak);
    printf("all GEMMs: %.1f ms = %.1f%% of the profiled step (%.1f GFLOP/s, %.0f%% of the sgemm peak); "
           "everything else %.1f ms (profiled step %.1f ms vs measured mean %.1f ms)\n",
           1e3 * gemm_s, 100 * gemm_s / tot.seconds, gemm_f / gemm_s * 1e-9, 100 * gemm_f / gemm_s * 1e-9 / peak,
           1e3 * (tot.seconds - gemm_s), 1e3 * tot.seconds, R->ms_step);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
// --precision with both: per kind, the median ms/step of the fp32 and of the bf16 runs (in
// the listed order: interleaved when the list alternates) and the bf16 speed-up.
// The fp32-vs-bf16 table; each kind's bf16 speed-up into speedup[kind] (0 where a kind lacks a run
// of either precision).
static void print_precisions(const KindResult *res, int n, double speedup[LINEAR_KIND_COUNT]) {
    printf("\nfp32 vs bf16 step (median of the runs of each, one process; %s)\n", cpu_bf16_gemm_describe());
    printf("| kind  | fp32 ms/step (min–max) | bf16 ms/step (min–max) | bf16 speed-up | runs | loss first→last fp32 / bf16 |\n");
    printf("|-------|------------------------|------------------------|---------------|------|-----------------------------|\n");
    for (int k = 0; k < n; k++) {
        int first = 1;
        for (int j = 0; j < k; j++) if (res[j].kind == res[k].kind) first = 0;
        if (!first) continue;
        double t[2][16]; int c[2] = { 0, 0 }; const KindResult *last[2] = { NULL, NULL };
        for (int j = 0; j < n; j++) {
            if (res[j].kind != res[k].kind) continue;
            int p = res[j].dtype == DT_BF16;
            if (c[p] < 16) t[p][c[p]++] = res[j].ms_step;
            last[p] = &res[j];
        }
        if (!c[0] || !c[1]) continue;
        double med[2];
        for (int p = 0; p < 2; p++) {
            qsort(t[p], (size_t)c[p], sizeof(double), cmp_double);
            med[p] = c[p] % 2 ? t[p][c[p] / 2] : 0.5 * (t[p][c[p] / 2 - 1] + t[p][c[p] / 2]);
        }
        speedup[res[k].kind] = med[0] / med[1];
        printf("| %-5s | %8.1f (%.1f–%.1f) | %8.1f (%.1f–%.1f) | %12.2fx | %d+%d | %.3f→%.3f / %.3f→%.3f |\n",
               linear_kind_name(res[k].kind), med[0], t[0][0], t[0][c[0] - 1], med[1], t[1][0], t[1][c[1] - 1],
               med[0] / med[1], c[0], c[1], last[0]->first_loss, last[0]->last_loss, last[1]->first_loss, last[1]->last_loss);
    }
}

// The BOOST ladder: each entry a boost: setting of a low-rank model at tp = 1.
typedef struct { const char *name; BoostConfig b; } SwitchSet;
static const SwitchSet SWITCHES[] = {
    { "vanilla", {0} },
    { "btp", { .btp = 1 } },
    { "btp+online", { .btp = 1, .online_rmsnorm = 1 } },
    { "btp+online+grouping", { .btp = 1, .online_rmsnorm = 1, .grouping = 1 } },
    { "btp+online+grouping+lowrank", { .btp = 1, .online_rmsnorm = 1, .grouping = 1, .lowrank_ckpt = 1 } },
    { "full", { .full_recompute = 1 } },
};
#define N_SWITCHES ((int)(sizeof SWITCHES / sizeof SWITCHES[0]))

static void json_write(const char *path, const KindResult *res, int n, const Config *base, int batch,
                       int steps, int warmup, int threads, double peak) {
    char err[1400];
    FILE *f = file_fopen_regular(path, "w", "--json", err, sizeof err);
    if (!f) die_input_hint("--json names a regular file to write (or a new name)", "%s", err);
    const char *wp = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    fprintf(f, "{\"engine\": \"boost-c\", \"preset\": \"%s\", \"batch\": %d, \"seq\": %d, \"steps\": %d, "
               "\"warmup\": %d, \"threads\": %d, \"peak_gflops\": %.3f, \"openblas_parallel\": %d, "
               "\"omp_wait_policy\": \"%s\", \"gomp_spincount\": \"%s\", \"results\": [\n",
            base->model.preset, batch, base->model.seq_len, steps, warmup, threads, peak,
            openblas_get_parallel(), wp ? wp : "", spin ? spin : "");
    for (int i = 0; i < n; i++) {
        const KindResult *R = &res[i];
        fprintf(f, "  {\"kind\": \"%s\", \"precision\": \"%s\", \"label\": \"%s\", \"params\": %lld, \"flops_per_token\": %.6g, \"ms_per_step\": %.4f, "
                   "\"ms_best\": %.4f, \"ms_fwd\": %.4f, \"ms_bwd\": %.4f, \"ms_opt\": %.4f, "
                   "\"tokens_per_s\": %.3f, \"mfu\": %.5f, \"first_loss\": %.6f, \"last_loss\": %.6f, "
                   "\"mem_peak_bytes\": %.0f",
                linear_kind_name(R->kind), dtype_name(R->dtype), R->label, (long long)R->params, R->flops_per_token, R->ms_step, R->ms_best,
                R->ms_fwd, R->ms_bwd, R->ms_opt, R->tokens_per_s, R->mfu, R->first_loss, R->last_loss, R->mem_peak_bytes);
        if (R->profiled) {
            fprintf(f, ", \"ops\": [");
            for (int k = 0; k < R->prof.n_agg; k++) {
                const OpAggregate *a = &R->prof.agg[k];
                fprintf(f, "%s{\"op\": \"%s\", \"phase\": %d, \"calls\": %ld, \"ms\": %.4f, \"gflop\": %.6f, \"mb\": %.4f}",
                        k ? ", " : "", a->name, (int)a->phase, a->calls, 1e3 * a->seconds, a->flops / 1e9, a->bytes / 1e6);
            }
            fprintf(f, "]");
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    fprintf(f, "], \"max_rss_bytes\": %.0f}\n", (double)ru.ru_maxrss * 1024.0);
    CHECK_ERRNO(fclose(f) != 0, path);
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);   // see core/env.h: OpenMP spin-waiting starves OpenBLAS
    const char *preset = "cola-60m", *linears = "dense,cola,svd", *json = NULL, *precisions = "fp32";
    const char *switches = "vanilla,btp,btp+online,btp+online+grouping,btp+online+grouping+lowrank,full";
    int seq = 256, batch = 4, steps = 6, warmup = 2, threads = 0, profile = 3, peak_only = 0;
    OptList set_list = {0};
    int no_profile = 0, no_switches = 0;
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_STR_ROW("preset", &preset),
        OPT_INT_ROW("seq", 1, 1000000, &seq),
        OPT_INT_ROW("batch", 1, 1000000, &batch),
        OPT_INT_ROW("steps", 1, 1000000, &steps),
        OPT_INT_ROW("warmup", 0, 1000000, &warmup),
        OPT_STR_ROW("linears", &linears),
        OPT_KEY_ROW("threads", "train.threads", &threads),
        OPT_PATH_ROW("json", &json),
        OPT_LIST_ROW("set", &set_list),
        OPT_INT_ROW("profile", 0, 1000000, &profile),
        OPT_STR_ROW("switches", &switches),
        OPT_STR_ROW("precision", &precisions),
        OPT_FLAG_ROW("no-profile", &no_profile),
        OPT_FLAG_ROW("no-switches", &no_switches),
        OPT_FLAG_ROW("peak-only", &peak_only),
        OPT_END };
    opt_parse("bench", opts, argc, argv, NULL, 0, NULL, BENCH_USAGE);
    if (no_profile) profile = 0;
    if (no_switches) switches = "";
    const char **sets = set_list.v;
    int n_sets = set_list.n;
    threads = trainer_set_threads(threads);
    if (peak_only) {   // best of three measurements of the best-of-3 sgemm
        double p = 0;
        for (int i = 0; i < 3; i++) { double x = cpu_sgemm_peak_gflops(); if (x > p) p = x; }
        const char *wp = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
        const char *best = env_blas_core_best(), *below = env_blas_core_user_below_best();
        printf("{\"peak_gflops\": %.3f, \"threads\": %d, \"blas_core\": \"%s\", \"blas_core_forced\": %s, "
               "\"blas_core_best\": \"%s\", \"blas_core_user_below_best\": %s, \"gemm\": \"%s\", "
               "\"omp_wait_policy\": \"%s\", \"gomp_spincount\": \"%s\"}\n", p,
               threads, openblas_get_corename(), env_blas_core_chosen() ? "true" : "false",
               best ? best : "", below ? "true" : "false",
               cpu_sgemm_mode_name(), wp ? wp : "", spin ? spin : "");
        return 0;
    }

    // Runs: every kind with the manifest defaults (boost off), then the BOOST ladder on the
    // low-rank kinds (profile only).
    KindResult res[48];
    Config cfgs[48];
    int n_runs = 0, n_kinds = 0;
    char buf[256];
    xsnprintf(buf, sizeof buf, "%s", linears);
    DType dts[16];
    int n_dts = 0, mixed = 0;
    char pbuf[256];
    xsnprintf(pbuf, sizeof pbuf, "%s", precisions);
    for (char *tok = strtok(pbuf, ","); tok; tok = strtok(NULL, ",")) {
        if (n_dts == 16) die_input("--precision: at most 16 entries");
        if (strcmp(tok, "fp32") && strcmp(tok, "bf16")) die_input("--precision: unknown precision '%s' (expected fp32, bf16)", tok);
        dts[n_dts++] = strcmp(tok, "bf16") ? DT_F32 : DT_BF16;
        if (dts[n_dts - 1] != dts[0]) mixed = 1;
    }
    if (n_dts == 0) die_input("--precision: empty");
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (strcmp(tok, "dense") && strcmp(tok, "cola") && strcmp(tok, "svd"))
            die_input("--linears: unknown kind '%s' (expected dense, cola, svd)", tok);
        for (int p = 0; p < n_dts; p++) {
            if (n_kinds == 16) die_input("--linears x --precision: at most 16 runs");
            config_for_shape(&cfgs[n_runs], preset, tok, seq, (const char *const *)sets, n_sets);
            memset(&res[n_runs], 0, sizeof res[n_runs]);
            res[n_runs].dtype = dts[p];
            if (n_dts == 1 && dts[0] == DT_F32) xsnprintf(res[n_runs].label, sizeof res[n_runs].label, "%s", tok);
            else xsnprintf(res[n_runs].label, sizeof res[n_runs].label, "%s %s", tok, dtype_name(dts[p]));
            n_runs++; n_kinds++;
        }
    }
    if (n_kinds == 0) die_input("--linears: empty");
    int first_switch = n_runs;
    if (profile > 0 && switches[0]) {
        char sw[512];
        xsnprintf(sw, sizeof sw, "%s", switches);
        for (char *tok = strtok(sw, ","); tok; tok = strtok(NULL, ",")) {
            int s = -1;
            for (int j = 0; j < N_SWITCHES; j++) if (!strcmp(tok, SWITCHES[j].name)) s = j;
            if (s < 0) die_input("--switches: unknown setting '%s' (see bench --help)", tok);
            for (int k = 0; k < n_kinds; k++) {
                if (!kind_of(&cfgs[k].model)->lowrank) continue;   // the switches need a bottleneck
                if (n_runs == 48) die_input("--switches: too many runs");
                cfgs[n_runs] = cfgs[k];
                cfgs[n_runs].boost = SWITCHES[s].b;
                memset(&res[n_runs], 0, sizeof res[n_runs]);
                res[n_runs].dtype = res[k].dtype;
                xsnprintf(res[n_runs].label, sizeof res[n_runs].label, "%s %s", res[k].label, SWITCHES[s].name);
                n_runs++;
            }
        }
    }

    // The sgemm "peak" is a 0.4 s measurement: another process on the machine during it
    // lowers it (and inflates MFU). It is measured again after every kind; the maximum
    // of all measurements is used.
    double peaks[56];
    int n_peaks = 0;
    peaks[n_peaks++] = cpu_sgemm_peak_gflops();
    double peak = peaks[0];
    const ModelConfig *m0 = &cfgs[0].model;
    printf("bench | preset %s: L=%d d=%d H=%d/%d d_ff=%d V=%d | batch %d x seq %d = %d tokens/step | "
           "%d timed steps after %d warm-up | %d threads | sgemm peak (first) %.1f GFLOP/s\n",
           preset, m0->n_layers, m0->d_model, m0->n_heads, m0->n_kv_heads, m0->d_ff, m0->vocab_size,
           batch, seq, batch * seq, steps, warmup, threads, peak);
    // Threading setup: libgomp's wait policy and OpenBLAS's threading model decide how the
    // two thread pools share the cores (docs/benchmarks.md) — record them with the numbers.
    int par = openblas_get_parallel();
    const char *wp = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    const char *chosen = env_blas_core_chosen();
    printf("threading | OpenBLAS %s (%s, core %s%s%s%s) | OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n", openblas_get_config(),
           par == 0 ? "sequential" : par == 1 ? "pthreads" : par == 2 ? "OpenMP" : "?",
           openblas_get_corename(), chosen ? ", OPENBLAS_CORETYPE set by boost-c: OpenBLAS chose " : "",
           chosen ? chosen : "", chosen ? " for this CPU" : "", wp ? wp : "(unset)", spin ? spin : "(unset)");
    const char *below = env_blas_core_user_below_best();
    if (below)
        printf("note | OPENBLAS_CORETYPE=%s from the environment is below this CPU's best OpenBLAS kernels (%s): "
               "OpenBLAS's GEMMs here run slower than they can (unset it to let OpenBLAS or boost-c choose)\n",
               getenv("OPENBLAS_CORETYPE"), below);
    printf("fp32 GEMMs | %s\n", cpu_sgemm_describe());
    fflush(stdout);

    for (int k = 0; k < n_runs; k++) {
        int is_switch = k >= first_switch;
        run_kind(&res[k], &cfgs[k], batch, is_switch ? 1 : steps, is_switch ? 1 : warmup, profile);
        peaks[n_peaks] = cpu_sgemm_peak_gflops();
        if (peaks[n_peaks] > peak) peak = peaks[n_peaks];
        n_peaks++;
        fprintf(stderr, "  %s done: %.1f ms/step\n", res[k].label, res[k].ms_step);
    }
    printf("sgemm peak measurements (GFLOP/s):");
    for (int i = 0; i < n_peaks; i++) printf(" %.1f", peaks[i]);
    printf(" -> using the maximum, %.1f\n", peak);
    {   // the margin and the quiet bound of the peak that launches use (store/db.h)
        double lo = peak, load = host_load_average();
        for (int i = 0; i < n_peaks; i++) if (peaks[i] < lo) lo = peaks[i];
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (lo > 0 && peak / lo - 1 > RUNDB_PEAK_MARGIN)
            printf("warning: the sgemm measurements spread %.0f%% (%.1f-%.1f GFLOP/s), more than the %.0f%% margin: other work "
                   "slowed some of them, so the steps measured then are slow too; MFU is against the maximum; rerun on a "
                   "quieter machine (load now %.2f on %ld cores)\n", 100 * (peak / lo - 1), lo, peak,
                   100 * RUNDB_PEAK_MARGIN, load, cores);
        if (load < 0 || load > RUNDB_PEAK_QUIET_LOAD * cores)
            printf("note: the load is %.2f on %ld cores (above the quiet bound %.2f): the sgemm peak may be below this machine's "
                   "and MFU above it; rerun on a quieter machine\n", load, cores, RUNDB_PEAK_QUIET_LOAD * cores);
    }
    printf("\nfp32 GEMM library per shape (%s):\n\n", cpu_sgemm_describe());
    cpu_sgemm_print_choices(stdout);
    for (int k = 0; k < n_runs; k++)
        res[k].mfu = res[k].tokens_per_s * res[k].flops_per_token / (peak * 1e9);
    const KindResult *dense = NULL;
    for (int k = 0; k < n_kinds; k++) if (res[k].kind == LINEAR_DENSE && res[k].dtype == res[0].dtype && !dense) dense = &res[k];

    printf("\n| kind  | params  | train GFLOP/token | ms/step | tokens/s | MFU   | speed-up vs dense "
           "| FLOP ratio dense/kind | speed-up ÷ FLOP ratio |\n");
    printf("|-------|---------|-------------------|---------|----------|-------|-------------------"
           "|-----------------------|-----------------------|\n");
    for (int k = 0; k < n_kinds; k++) {
        const KindResult *R = &res[k];
        char su[32] = "-", fr[32] = "-", eff[32] = "-";
        if (dense) {
            double s = dense->ms_step / R->ms_step, f = dense->flops_per_token / R->flops_per_token;
            snprintf(su, sizeof su, "%.2fx", s);
            snprintf(fr, sizeof fr, "%.2fx", f);
            snprintf(eff, sizeof eff, "%.2f", s / f);
        }
        printf("| %-5s | %6.2fM | %17.4f | %7.1f | %8.0f | %4.1f%% | %17s | %21s | %21s |\n",
               R->label, R->params / 1e6, R->flops_per_token / 1e9, R->ms_step,
               R->tokens_per_s, 100 * R->mfu, su, fr, eff);
    }
    printf("\n| kind  | fwd ms | bwd ms | clip+AdamW ms | best step ms | loss first→last |\n");
    printf("|-------|--------|--------|---------------|--------------|-----------------|\n");
    for (int k = 0; k < n_kinds; k++) {
        const KindResult *R = &res[k];
        printf("| %-5s | %6.1f | %6.1f | %13.1f | %12.1f | %6.3f → %6.3f |\n", R->label,
               R->ms_fwd, R->ms_bwd, R->ms_opt, R->ms_best, R->first_loss, R->last_loss);
    }
    if (profile) {
        for (int k = 0; k < n_kinds; k++) print_profile(&res[k], peak);
        if (n_runs > first_switch) {
            printf("\nBOOST switches at tp = 1 (one profiled step each; per phase, ms)\n");
            printf("%-36s %9s %9s %9s %9s %9s %8s\n", "setting", "forward", "backward", "recompute", "optimizer", "total", "ops");
            for (int k = first_switch; k < n_runs; k++) {
                KindResult *R = &res[k];
                profile_per_step(&R->prof, R->prof_steps);
                double ph[4];
                for (int p = 0; p < 4; p++) ph[p] = op_profile_total(&R->prof, p).seconds;
                OpAggregate t = op_profile_total(&R->prof, -1);
                printf("%-36s %9.1f %9.1f %9.1f %9.1f %9.1f %8ld\n", R->label, 1e3 * ph[0], 1e3 * ph[1], 1e3 * ph[2],
                       1e3 * ph[3], 1e3 * t.seconds, t.calls);
            }
        }
    }

    double bf16_speedup[LINEAR_KIND_COUNT] = { 0 };
    if (mixed) print_precisions(res, n_kinds, bf16_speedup);

    printf("\ntargets:\n");
    // CPU bf16 >= 1.5x the fp32 step where auto takes bf16 arithmetic (the CPU's bf16 units win:
    // docs/cpu-bf16.md); where auto keeps fp32 the target does not apply.
    int bf16_taken = mixed && cpu_bf16_gemm_choose(NULL, 1) == BF16_GEMM_BF16;
    for (int k = 0; k < LINEAR_KIND_COUNT; k++)
        if (bf16_speedup[k] > 0)
            printf("  %s bf16 step %.2fx the fp32 step (target >= 1.5x where bf16 arithmetic is taken): %s\n",
                   linear_kind_name((LinearKind)k), bf16_speedup[k],
                   !bf16_taken ? "not applicable (this path widens to fp32: docs/cpu-bf16.md)" : bf16_speedup[k] >= 1.5 ? "met" : "MISSED");
    if (dense)
        printf("  dense MFU %.1f%% of the measured sgemm peak (target >= 50%%): %s\n", 100 * dense->mfu,
               dense->mfu >= 0.5 ? "met" : "MISSED");
    for (int k = 0; k < n_kinds; k++) {
        if (!dense || res[k].kind == LINEAR_DENSE) continue;
        double s = dense->ms_step / res[k].ms_step, f = dense->flops_per_token / res[k].flops_per_token;
        printf("  %s speed-up %.2fx = %.2f of the FLOP ratio %.2fx (target >= 0.80): %s\n",
               linear_kind_name(res[k].kind), s, s / f, f, s / f >= 0.8 ? "met" : "MISSED");
    }
    if (json) {
        json_write(json, res, n_kinds, &cfgs[0], batch, steps, warmup, threads, peak);
        printf("wrote %s\n", json);
    }
    for (int k = 0; k < n_runs; k++) op_profile_detach(&res[k].prof);
    free(sets);
    return 0;
}
