// bench_attention — the CPU fp32 flash attention (src/backend/cpu/attention.c) against the
// sgemm peak measured in the same run: forward and backward GFLOP/s and % of the peak per
// batch and sequence length, at one head dim (`make bench-attention`, docs/benchmarks.md).
// The default batches are 1 and 4: B 4 × 8 heads at s 256 is the shape of a CoLA-60M step
// (bench --preset cola-60m --batch 4 --seq 256), 32 heads on a few threads.
//
//   build/bench_attention [--batch 1,4] [--heads 8] [--kv-heads 8] [--hd 64]
//                         [--seq 256,512,1024,2048] [--min-time 0.5] [--isa avx512|avx2|scalar]
//
// FLOPs, the causal convention: only the (query, key) pairs the causal mask keeps,
// pairs = B·H·T(T+1)/2, and 2 FLOPs per multiply-add. Forward = 2 products over the pairs
// (S = Q Kᵀ, O = P V) = 4·hd·pairs; backward = 5 products (S again, dP = dO Vᵀ, dV = Pᵀ dO,
// dQ = dS K, dK = dSᵀ Q) = 10·hd·pairs (FlashAttention-2's 2.5× of the forward). The softmax,
// exp and masking are not counted. Counted here, independent of the model's FLOP module.
// Timing: one warm-up call, then calls until --min-time seconds have passed (at least 3);
// the best call is reported (the least disturbed by other work on a shared machine). The
// peak is the CPU back end's 2048³ sgemm (cpu_sgemm), best of 3 (cpu_sgemm_peak_gflops, the MFU
// denominator), measured before each row and after the table; % uses the largest. On a
// shared machine wall times mostly measure the other work, so each call and the sgemm are
// also timed in CPU seconds of all threads (idle OpenMP threads sleep, beside oneDNN after a
// ~0.1 ms spin that a call of milliseconds hardly counts: core/env.h), and "% cpu" compares
// GFLOP per CPU-second. An attention call's CPU time is the sum of its OpenMP threads' own
// clocks (CLOCK_THREAD_CPUTIME_ID, read in a parallel region before and after the call):
// the process clock leaves out what the other threads ran since their last scheduler tick,
// a large share of a call under a millisecond (it gave % cpu above 100 at s 256). The
// sgemm, which may run on another library's threads, keeps the process clock (a 2048³ call
// lasts ~50 ms). --cold writes a buffer of 256 MiB (untimed) before every timed call, so that the
// operands come from memory as inside a training step, where other ops ran between (the warm
// rows: from L2). The 1-minute load average is printed before and after: numbers taken under
// load are not results.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../backend/backend.h"
#include "../config/options.h"
#include "../backend/cpu/attn_kernels.h"
#include "../backend/cpu/kernels.h"
#include "../backend/cpu/sgemm.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/rng.h"
#include "../core/timer.h"
#include "../store/host.h"

#define USAGE "usage: bench_attention [--batch B1,B2,...] [--heads H] [--kv-heads HKV] [--hd HD] [--seq T1,T2,...] " \
              "[--min-time SECONDS] [--isa avx512|avx2|scalar] [--cold]\n"

// CPU seconds of every thread of this process (OpenMP waits passively: idle threads sleep).
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The CPU seconds of the OpenMP threads (the pool every parallel region of this process uses):
// each thread's own clock, exact to the call.
static double omp_cpu_seconds(void) {
    double sum = 0;
    #pragma omp parallel reduction(+:sum)
    {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        sum += (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return sum;
}

// --cold: the caches' contents replaced by a buffer written before each timed call
static float *g_evict;
static size_t g_evict_n;
static void evict_caches(void) {
    if (!g_evict) return;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < g_evict_n; i++) g_evict[i] += 1.0f;
}

typedef struct { double best, best_cpu, total; int calls; } Timing;
// fn(ctx) until min_time has passed and at least 3 calls; one warm-up call first. The best
// wall time and the best CPU time (over all threads; cpu(): which clock) of one call.
static Timing time_calls(void (*fn)(void *), void *ctx, double min_time, double (*cpu)(void)) {
    fn(ctx);
    Timing t = { 1e30, 1e30, 0, 0 };
    while (t.calls < 3 || t.total < min_time) {
        evict_caches();
        double c0 = cpu(), t0 = now_seconds();
        fn(ctx);
        double dt = now_seconds() - t0, dc = cpu() - c0;
        t.total += dt;
        t.calls++;
        if (dt < t.best) t.best = dt;
        if (dc < t.best_cpu) t.best_cpu = dc;
    }
    return t;
}

// The same 2048³ sgemm as cpu_sgemm_peak_gflops, timed by CPU seconds: FLOPs per
// CPU-second of the threads, the per-core rate that time slices taken by other processes
// do not dilute. Best of 3 after a warm-up.
typedef struct { float *a, *b, *c; } Gemm;
static void gemm_call(void *p) {
    Gemm *g = p;
    GemmArgs a = { TR_N, TR_N, 2048, 2048, 2048, 1.0f, g->a, 2048, g->b, 2048, 0.0f, g->c, 2048 };
    cpu_sgemm(&a);
}
static double sgemm_cpu_gflops(void) {
    size_t n = (size_t)2048 * 2048;
    Gemm g = { xaligned_alloc(n * 4), xaligned_alloc(n * 4), xaligned_alloc(n * 4) };
    for (size_t i = 0; i < n; i++) { g.a[i] = (float)(i % 7) * 0.1f; g.b[i] = (float)(i % 5) * 0.1f; }
    Timing t = time_calls(gemm_call, &g, 0, cpu_seconds);
    free(g.a); free(g.b); free(g.c);
    return 2.0 * 2048 * 2048 * 2048.0 / t.best_cpu * 1e-9;
}

typedef struct { int B, T, H, Hkv, hd; float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv; } Case;
static void fwd(void *p) { Case *c = p; cpu_attention_forward(c->o, c->lse, c->q, c->k, c->v, c->B, c->T, c->H, c->Hkv, c->hd); }
static void bwd(void *p) {   // accumulates: a few dozen calls keep dq/dk/dv far from overflow
    Case *c = p;
    cpu_attention_backward(c->dq, c->dk, c->dv, c->dout, c->o, c->q, c->k, c->v, c->lse, c->B, c->T, c->H, c->Hkv, c->hd);
}

static float *rand_buf(size_t n, Rng *r) {
    float *p = xaligned_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = 2.0f * rng_uniform(r) - 1.0f;
    return p;
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    int batches[8] = { 1, 4 }, nbatch = 2, H = 8, Hkv = 8, hd = 64, seqs[16] = { 256, 512, 1024, 2048 }, nseq = 4;
    double min_time = 0.5;
    const char *isa_name = NULL, *seq_list = NULL, *batch_list = NULL;
    int cold = 0;
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_STR_ROW("batch", &batch_list),
        OPT_INT_ROW("heads", 1, 1 << 20, &H),
        OPT_INT_ROW("kv-heads", 1, 1 << 20, &Hkv),
        OPT_INT_ROW("hd", 1, 1 << 20, &hd),
        OPT_REAL_ROW("min-time", 0, 600, &min_time),
        OPT_STR_ROW("isa", &isa_name),
        OPT_STR_ROW("seq", &seq_list),
        OPT_FLAG_ROW("cold", &cold),
        OPT_END };
    opt_parse("bench_attention", opts, argc, argv, NULL, 0, NULL, USAGE);
    if (seq_list) nseq = opt_int_list("bench_attention", "seq", seq_list, 1, 1 << 20, seqs, 16);
    if (batch_list) nbatch = opt_int_list("bench_attention", "batch", batch_list, 1, 1 << 20, batches, 8);
    if (H % Hkv) { fprintf(stderr, "bench_attention: --heads %d is not a multiple of --kv-heads %d\n", H, Hkv); return EXIT_BAD_INPUT; }
    if (isa_name && !cpu_attention_use_isa(isa_name)) {
        fprintf(stderr, "bench_attention: --isa '%s': not in this build (expected avx512, avx2 or scalar; this build uses %s)\n",
                isa_name, cpu_attention_isa());
        return EXIT_BAD_INPUT;
    }

    if (cold) {
        g_evict_n = (size_t)64 << 20;   // 256 MiB of floats
        g_evict = xaligned_alloc(g_evict_n * sizeof(float));
        memset(g_evict, 0, g_evict_n * sizeof(float));
    }
    HostFacts hf; host_facts(&hf);
    enum { MAXROW = 16 * 8 };
    int nrow = nbatch * nseq;
    double load0 = host_load_average(), peaks[MAXROW + 1], cpu_peaks[MAXROW + 1];
    int Tmax = 0, Bmax = 0;
    for (int i = 0; i < nseq; i++) Tmax = seqs[i] > Tmax ? seqs[i] : Tmax;
    for (int i = 0; i < nbatch; i++) Bmax = batches[i] > Bmax ? batches[i] : Bmax;
    Rng r = { 2024 };
    size_t nq = (size_t)Bmax * Tmax * H * hd, nk = (size_t)Bmax * Tmax * Hkv * hd;
    Case c = { 0, 0, H, Hkv, hd, rand_buf(nq, &r), rand_buf(nk, &r), rand_buf(nk, &r), xaligned_alloc(nq * 4),
               xaligned_alloc((size_t)Bmax * H * Tmax * 4), rand_buf(nq, &r), xaligned_alloc(nq * 4),
               xaligned_alloc(nk * 4), xaligned_alloc(nk * 4) };
    Timing tf[MAXROW], tb[MAXROW];
    for (int i = 0; i < nrow; i++) {   // batch-major: B 1 at every s, then B 4 ...
        c.B = batches[i / nseq];
        c.T = seqs[i % nseq];
        memset(c.dq, 0, nq * 4); memset(c.dk, 0, nk * 4); memset(c.dv, 0, nk * 4);
        peaks[i] = cpu_sgemm_peak_gflops();
        cpu_peaks[i] = sgemm_cpu_gflops();
        tf[i] = time_calls(fwd, &c, min_time, omp_cpu_seconds);
        tb[i] = time_calls(bwd, &c, min_time, omp_cpu_seconds);
    }
    peaks[nrow] = cpu_sgemm_peak_gflops();
    cpu_peaks[nrow] = sgemm_cpu_gflops();
    double load1 = host_load_average(), peak = 0, peak_lo = 1e30, cpeak = 0, cpeak_lo = 1e30;
    for (int i = 0; i <= nrow; i++) {
        peak = peaks[i] > peak ? peaks[i] : peak; peak_lo = peaks[i] < peak_lo ? peaks[i] : peak_lo;
        cpeak = cpu_peaks[i] > cpeak ? cpu_peaks[i] : cpeak; cpeak_lo = cpu_peaks[i] < cpeak_lo ? cpu_peaks[i] : cpeak_lo;
    }

    int nth = omp_get_max_threads();
    printf("bench_attention: CPU fp32 causal flash attention, kernels %s, %d thread%s\n", cpu_attention_isa(), nth, nth == 1 ? "" : "s");
    printf("cpu: %s\n", hf.cpu_model);
    printf("load (1-min average): %.2f before, %.2f after; sgemm peak (2048^3, best of 3, before each row and after): "
           "%.1f-%.1f GFLOP/s\n", load0, load1, peak_lo, peak);
    printf("sgemm per CPU-second (the same product, FLOPs / CPU seconds of all threads, best of 3): %.1f-%.1f GFLOP/cpu-s\n",
           cpeak_lo, cpeak);
    printf("shape: heads %d, kv heads %d, head dim %d; best of >= 3 calls (>= %.2f s each)%s\n", H, Hkv, hd, min_time,
           cold ? "; cold: 256 MiB written before each call" : "");
    printf("FLOPs, causal convention: pairs = B*H*T(T+1)/2; forward 4*hd*pairs (QK^T, PV), backward 10*hd*pairs "
           "(S, dP, dV, dQ, dK); %% peak: of the largest\n"
           "wall-clock peak; %% cpu: GFLOP per CPU-second (the OpenMP threads' clocks) against the sgemm's (the\n"
           "load-independent ratio)\n\n");
    printf("| B | s | fwd ms | fwd GFLOP/s | fwd %% peak | fwd %% cpu | bwd ms | bwd GFLOP/s | bwd %% peak | bwd %% cpu |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrow; i++) {
        int B = batches[i / nseq];
        double T = seqs[i % nseq], pairs = (double)B * H * T * (T + 1) / 2;
        double gf = 4.0 * hd * pairs / tf[i].best * 1e-9, gb = 10.0 * hd * pairs / tb[i].best * 1e-9;
        double cf = 4.0 * hd * pairs / tf[i].best_cpu * 1e-9, cb = 10.0 * hd * pairs / tb[i].best_cpu * 1e-9;
        printf("| %d | %d | %.2f | %.1f | %.1f %% | %.1f %% | %.2f | %.1f | %.1f %% | %.1f %% |\n", B, seqs[i % nseq], tf[i].best * 1e3, gf,
               100 * gf / peak, 100 * cf / cpeak, tb[i].best * 1e3, gb, 100 * gb / peak, 100 * cb / cpeak);
    }
    free(c.q); free(c.k); free(c.v); free(c.o); free(c.lse); free(c.dout); free(c.dq); free(c.dk); free(c.dv); free(g_evict);
    return 0;
}
