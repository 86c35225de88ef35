// kernel_bench — the memory-bound CPU kernels of a step against this machine's bandwidth:
// cross-entropy forward, backward and the tp = 1 fused pass at the head's shape, the optimizer's two passes (the
// global norm's sum of squares, AdamW) over a model's span, RoPE, SiLU and SwiGLU. Each row: best-of-R
// time, the bytes the kernel must move, GB/s, and that rate as a share of what a plain copy
// (read + write, OpenMP, the same threads) reaches on the same buffers, measured next to it.
//
//   build/kernel_bench [--tokens 1024] [--vocab 32000] [--params 42770944] [--threads N] [--reps R]
//
// The defaults are cola-60m's bench shape (batch 4 x seq 256, V = 32000, 42.77 M parameters).
// Performance is shown by this table, not asserted anywhere.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../backend/cpu/kernels.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/timer.h"
#include "../train/trainer.h"

static void copy_omp(float *dst, const float *src, size_t n) {
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

static void fill(float *x, size_t n, float scale, float shift) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) * scale + shift;
}

static void row(const char *name, double s, double bytes, double copy_gbs) {
    double gbs = bytes / s * 1e-9;
    printf("%-28s %9.3f %10.1f %8.1f %7.0f%%\n", name, 1e3 * s, bytes * 1e-6, gbs, 100 * gbs / copy_gbs);
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    int N = 1024, V = 32000, threads = 0, reps = 7;
    int64_t P64 = 42770944;
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_INT_ROW("tokens", 1, 1 << 20, &N),
        OPT_INT_ROW("vocab", 2, 1 << 22, &V),
        OPT_INT64_ROW("params", 1, 1 << 30, &P64),
        OPT_INT_ROW("threads", 0, 1024, &threads),
        OPT_INT_ROW("reps", 1, 1000, &reps),
        OPT_END };
    opt_parse("kernel_bench", opts, argc, argv, NULL, 0, NULL,
              "usage: kernel_bench [--tokens N] [--vocab V] [--params P] [--threads T] [--reps R]\n"
              "  cross-entropy, the optimizer's passes, RoPE, SiLU and SwiGLU against a plain copy's GB/s");
    size_t P = (size_t)P64;
    threads = trainer_set_threads(threads);
    size_t nl = (size_t)N * V;
    float *L = xaligned_alloc(nl * 4), *G = xaligned_alloc(nl * 4);
    int32_t *tg = xmalloc(sizeof(int32_t) * (size_t)N);
    float *lmax = xmalloc(sizeof(float) * (size_t)N);
    double *se = xmalloc(sizeof(double) * (size_t)N), *tl = xmalloc(sizeof(double) * (size_t)N);
    fill(L, nl, 0.01f, -5.0f);
    for (int i = 0; i < N; i++) tg[i] = (int32_t)(((size_t)i * 7919) % (size_t)V);
    float *p = xaligned_alloc(P * 4), *g = xaligned_alloc(P * 4), *m = xaligned_alloc(P * 4), *v = xaligned_alloc(P * 4);
    fill(p, P, 1e-4f, -0.05f);
    fill(g, P, 1e-5f, -0.005f);

    // best-of-reps of each, a copy of the same size timed right after each rep
    double t_xf = 1e30, t_xb = 1e30, t_xu = 1e30, t_cl = 1e30, t_ss = 1e30, t_aw = 1e30, t_cp = 1e30;
    AdamWSpan span = { p, g, m, v, NULL, P, 0.1f, NULL, 0 };
    for (int r = 0; r <= reps; r++) {
        double t0 = now_seconds();
        cpu_xent_forward(lmax, se, tl, L, tg, N, V, 0);
        double t1 = now_seconds();
        copy_omp(G, L, nl);
        double t2 = now_seconds();
        cpu_xent_backward(G, G, lmax, se, tg, N, V, 0, 1.0f / (float)N);
        double t3 = now_seconds();
        copy_omp(G, L, nl);
        double t4 = now_seconds();
        cpu_xent_fused(G, lmax, se, tl, G, tg, N, V, 0, 1.0f / (float)N);   // tp = 1: in place, as the head
        double t4u = now_seconds();
        copy_omp(G, L, nl);
        double t4c = now_seconds();
        double ss = cpu_sumsq(g, P);
        double t5 = now_seconds();
        AdamWHyper h = { 1e-3f, 0.9f, 0.95f, 1e-8f, r + 1, ss > 1.0 ? (float)(1.0 / ss) : 1.0f };
        cpu_adamw_multi(1, &span, &h);
        double t6 = now_seconds();
        copy_omp(m, g, P);
        double t7 = now_seconds();
        if (r == 0) continue;   // warm-up
        if (t1 - t0 < t_xf) t_xf = t1 - t0;
        if (t3 - t2 < t_xb) t_xb = t3 - t2;
        if (t2 - t1 < t_cl) t_cl = t2 - t1;
        if (t4 - t3 < t_cl) t_cl = t4 - t3;
        if (t4u - t4 < t_xu) t_xu = t4u - t4;
        if (t5 - t4c < t_ss) t_ss = t5 - t4c;
        if (t6 - t5 < t_aw) t_aw = t6 - t5;
        if (t7 - t6 < t_cp) t_cp = t7 - t6;
    }
    double copy_l = 2.0 * nl * 4 / t_cl * 1e-9, copy_p = 2.0 * P * 4 / t_cp * 1e-9;
    printf("kernel_bench | %d tokens x vocab %d (logits %.0f MB), %zu parameters (%.0f MB per family) | %d threads\n",
           N, V, nl * 4e-6, P, P * 4e-6, threads);
    printf("plain copy (read + write): %.1f GB/s on the logits, %.1f GB/s on a parameter family\n", copy_l, copy_p);
    printf("%-28s %9s %10s %8s %8s\n", "kernel", "ms", "MB moved", "GB/s", "of copy");
    row("xent_forward (read)", t_xf, (double)nl * 4, copy_l);
    row("xent_backward (read+write)", t_xb, 2.0 * nl * 4, copy_l);
    row("xent_fused (read+write)", t_xu, 2.0 * nl * 4, copy_l);
    row("sumsq (read)", t_ss, (double)P * 4, copy_p);
    row("adamw (4 read, 3 write)", t_aw, 7.0 * P * 4, copy_p);

    // small per-layer kernels at the layer's shape (d = 512, r = 128, H*hd = 512, T = 256)
    size_t nr = (size_t)N * 128, nq = (size_t)N * 512;
    float *Q = xaligned_alloc(nq * 4), *Y = xaligned_alloc(nq * 4);
    fill(Q, nq, 0.01f, -5.0f);
    int B = N / 256 > 0 ? N / 256 : 1, T = N >= 256 ? 256 : N;
    size_t nf = (size_t)N * 1376;   // the MLP's d_ff
    float *F0 = xaligned_alloc(nf * 4), *F1 = xaligned_alloc(nf * 4), *F2 = xaligned_alloc(nf * 4),
          *F3 = xaligned_alloc(nf * 4), *F4 = xaligned_alloc(nf * 4);
    fill(F0, nf, 0.01f, -5.0f); fill(F1, nf, 0.003f, -1.5f); fill(F2, nf, 0.001f, -0.5f);
    double t_rope = 1e30, t_silu = 1e30, t_silub = 1e30, t_swf = 1e30, t_swb = 1e30, t_c = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = now_seconds();
        cpu_rope_forward(Q, B, T, 8, 64, 10000.0f);
        double t1 = now_seconds();
        cpu_silu_forward(Y, Q, nr);
        double t2 = now_seconds();
        copy_omp(Y, Q, nq);
        double t3 = now_seconds();
        cpu_silu_backward(Y, Q + nr, Q, nr);
        double t3b = now_seconds();
        cpu_swiglu_forward(F3, F0, F1, nf, 1);
        double t3f = now_seconds();
        cpu_swiglu_backward(F3, F4, F2, F0, F1, nf, 1);
        double t3s = now_seconds();
        if (r == 0) continue;
        if (t3b - t3 < t_silub) t_silub = t3b - t3;
        if (t3f - t3b < t_swf) t_swf = t3f - t3b;
        if (t3s - t3f < t_swb) t_swb = t3s - t3f;
        if (t1 - t0 < t_rope) t_rope = t1 - t0;
        if (t2 - t1 < t_silu) t_silu = t2 - t1;
        if (t3 - t2 < t_c) t_c = t3 - t2;
    }
    double copy_s = 2.0 * nq * 4 / t_c * 1e-9;
    row("rope_forward [N,8,64]", t_rope, 2.0 * (double)B * T * 512 * 4, copy_s);
    row("silu_forward [N,128]", t_silu, 2.0 * nr * 4, copy_s);
    row("silu_backward [N,128]", t_silub, 3.0 * nr * 4, copy_s);
    row("swiglu_forward [N,1376]", t_swf, 3.0 * nf * 4, copy_s);
    row("swiglu_backward [N,1376]", t_swb, 5.0 * nf * 4, copy_s);
    free(F0); free(F1); free(F2); free(F3); free(F4);
    free(Q); free(Y); free(L); free(G); free(tg); free(lmax); free(se); free(tl); free(p); free(g); free(m); free(v);
    return 0;
}
