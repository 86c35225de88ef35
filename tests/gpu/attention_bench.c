// attention_bench — boost-c's causal attention, forward and forward+backward, timed on a
// back end at one shape: make gpu-check's comparison with PyTorch's scaled_dot_product_
// attention (analysis/torch_gpu_bench.py --attention, same shape and dtype), and of the CUDA
// back end's two attentions with each other (--compare).
//
//   build/attention_bench [--device cuda|cpu] [--precision bf16|fp32] [--shape B H T HD]
//                         [--kv-heads HKV] [--reps 10] [--attention auto|cudnn|flash]
//                         [--compare] [--json OUT]
//
// --attention picks the CUDA back end's implementation (train.attention's values); the line
// and the JSON name the one that ran ("impl"). --compare (cuda, bf16) runs the same inputs
// through the hand-written flash kernel and through cuDNN's fused attention, prints the largest
// difference of out, lse, dq, dk and dv relative to the largest magnitude of the flash
// kernel's, and the time of each: PASS when every difference is within 5 % of that magnitude
// (two bf16 implementations that round P and dS at different points), FAIL beyond, SKIP when
// cuDNN is unavailable or refuses the shape.
//
// The ops go through the op front ends (backend/ops.h); inputs are random (never zeros).
// Timing: 3 warm-up calls, then --reps calls between two synchronisations of the back end,
// host clock; ms = the mean. TFLOP/s counts the causal half of 4·B·H·T²·hd for forward and
// 2.5 times that for backward (FlashAttention-2's accounting), as torch_gpu_bench.py does.
// The per-op table of every op for the performance model is test_backend_ops --json.
// Without the back end (no GPU, no CUDA build): "SKIP attention_bench: <reason>", exit 0.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../src/backend/bf16.h"
#include "../../src/backend/ops.h"
#include "../../src/core/check.h"
#include "../../src/core/timer.h"
#ifdef BOOST_CUDA
#include "../../src/backend/cuda/cuda_backend.h"
#endif

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void) {   // uniform in [-1, 1)
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}
static void *rand_buf(Backend *b, size_t n) {
    DType t = b->dtype;
    void *d = bk_alloc(b, n, t, MEM_WORK), *h = xmalloc(n * dtype_size(t));
    for (size_t i = 0; i < n; i++) {
        if (t == DT_BF16) ((bf16 *)h)[i] = bf16_from_f32(urand());
        else ((float *)h)[i] = urand();
    }
    op_from_host(b, d, h, n, t);
    free(h);
    return d;
}

typedef struct { Backend *b; int B, T, H, Hkv, hd; void *q, *k, *v, *o, *dout, *dq, *dk, *dv; float *lse; } Attn;
static void forward(Attn *a) { op_attention_forward(a->b, a->o, a->lse, a->q, a->k, a->v, a->B, a->T, a->H, a->Hkv, a->hd); }
static void backward(Attn *a) {
    op_attention_backward(a->b, a->dq, a->dk, a->dv, a->dout, a->o, a->q, a->k, a->v, a->lse, a->B, a->T, a->H, a->Hkv, a->hd);
}
// backward accumulates into dq, dk, dv: a dozen calls keep them far from overflow
static double time_ms(Attn *a, int with_backward, int reps) {
    for (int i = 0; i < 3; i++) { forward(a); if (with_backward) backward(a); }
    op_sync(a->b);
    double t0 = now_seconds();
    for (int i = 0; i < reps; i++) { forward(a); if (with_backward) backward(a); }
    op_sync(a->b);
    return (now_seconds() - t0) * 1e3 / reps;
}

#define USAGE "usage: attention_bench [--device cuda|cpu] [--precision bf16|fp32] [--shape B H T HD] " \
              "[--kv-heads HKV] [--reps N] [--attention auto|cudnn|flash] [--compare] [--json OUT]\n"
static void usage(void) {
    fputs(USAGE, stderr);
    exit(EXIT_BAD_INPUT);
}

static const char *impl_used(Backend *b) {
#ifdef BOOST_CUDA
    if (!strcmp(b->name, "cuda")) return backend_cuda_attention_used(b);
#endif
    return b->name;
}

#ifdef BOOST_CUDA   // the cuDNN-against-flash comparison only
// One forward and backward from zeroed gradients; the five results as fp32 on the host.
typedef struct { float *t[5]; size_t n[5]; } Result;
static const char *const RESULT_NAMES[5] = { "out", "lse", "dq", "dk", "dv" };
static Result one_pass(Attn *a) {
    size_t nq = (size_t)a->B * a->T * a->H * a->hd, nk = (size_t)a->B * a->T * a->Hkv * a->hd;
    DType dt = a->b->dtype;
    op_zero(a->b, a->dq, nq, dt); op_zero(a->b, a->dk, nk, dt); op_zero(a->b, a->dv, nk, dt);
    forward(a);
    backward(a);
    Result r = { { 0 }, { nq, (size_t)a->B * a->H * a->T, nq, nk, nk } };
    const void *src[5] = { a->o, a->lse, a->dq, a->dk, a->dv };
    for (int i = 0; i < 5; i++) {
        DType t = i == 1 ? DT_F32 : dt;
        void *h = xmalloc(r.n[i] * dtype_size(t));
        op_to_host(a->b, h, src[i], r.n[i], t);
        r.t[i] = xmalloc(r.n[i] * sizeof(float));
        for (size_t j = 0; j < r.n[i]; j++) r.t[i][j] = t == DT_BF16 ? bf16_to_f32(((bf16 *)h)[j]) : ((float *)h)[j];
        free(h);
    }
    return r;
}

// --compare: flash against cuDNN on the same inputs; returns 0 (PASS or SKIP) or 1 (FAIL).
static int compare(Attn *a, int reps, FILE *fj) {
    Backend *b = a->b;
    char why[512] = "";
    if (strcmp(b->name, "cuda") || b->dtype != DT_BF16) { printf("SKIP attention_compare: needs --device cuda --precision bf16\n"); return 0; }
    backend_cuda_set_attention(b, CUDA_ATTN_FLASH, why, sizeof why);
    Result f = one_pass(a);
    double ms_flash = time_ms(a, 1, reps);
    if (backend_cuda_set_attention(b, CUDA_ATTN_AUTO, why, sizeof why) || (one_pass(a), strcmp(impl_used(b), "cudnn"))) {
        printf("SKIP attention_compare: cuDNN %s (the note above says why)\n", *why ? why : "refused the shape");
        return 0;
    }
    Result c = one_pass(a);
    double ms_cudnn = time_ms(a, 1, reps);
    int bad = 0;
    printf("attention_compare: B %d H %d (kv %d) T %d hd %d, cuDNN vs flash:", a->B, a->H, a->Hkv, a->T, a->hd);
    if (fj) fprintf(fj, ", \"compare\": {\"ms_flash\": %.6g, \"ms_cudnn\": %.6g", ms_flash, ms_cudnn);
    for (int i = 0; i < 5; i++) {
        double dmax = 0, rmax = 0;
        for (size_t j = 0; j < f.n[i]; j++) {
            double d = fabs((double)c.t[i][j] - f.t[i][j]), m = fabs((double)f.t[i][j]);
            if (!(d <= dmax)) dmax = d;   // NaN counts as the largest
            if (m > rmax) rmax = m;
        }
        double rel = rmax > 0 ? dmax / rmax : dmax;
        if (!(rel <= 0.05)) bad = 1;
        printf(" %s %.3g (%.2g of max %.3g)", RESULT_NAMES[i], dmax, rel, rmax);
        if (fj) fprintf(fj, ", \"%s_max_abs_diff\": %.6g, \"%s_max_abs\": %.6g", RESULT_NAMES[i], dmax, RESULT_NAMES[i], rmax);
        free(f.t[i]); free(c.t[i]);
    }
    printf("; forward+backward flash %.3f ms, cuDNN %.3f ms (%.2fx)\n", ms_flash, ms_cudnn, ms_cudnn / ms_flash);
    if (fj) fprintf(fj, "}");
    if (bad) printf("FAIL attention_compare_T%d_hd%d: a difference beyond 5%% of the flash kernel's largest value\n", a->T, a->hd);
    else printf("PASS attention_compare_T%d_hd%d\n", a->T, a->hd);
    return bad;
}
#endif

int main(int argc, char **argv) {
    const char *device = "cuda", *precision = "bf16", *json = NULL;
    const char *attention = NULL;
    int shape[4] = { 2, 32, 4096, 64 }, Hkv = 0, reps = 10, do_compare = 0;
    for (int i = 1; i < argc; i++) {
#define NEXT() (i + 1 < argc ? argv[++i] : (usage(), ""))
        if (!strcmp(argv[i], "--device")) device = NEXT();
        else if (!strcmp(argv[i], "--precision")) precision = NEXT();
        else if (!strcmp(argv[i], "--shape")) { for (int k = 0; k < 4; k++) shape[k] = atoi(NEXT()); }
        else if (!strcmp(argv[i], "--kv-heads")) Hkv = atoi(NEXT());
        else if (!strcmp(argv[i], "--reps")) reps = atoi(NEXT());
        else if (!strcmp(argv[i], "--json")) json = NEXT();
        else if (!strcmp(argv[i], "--attention")) attention = NEXT();
        else if (!strcmp(argv[i], "--compare")) do_compare = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(USAGE "Times the attention forward+backward of a back end (make gpu-check uses it next to SDPA);\n"
                   "--compare: the CUDA back end's flash kernel against cuDNN's fused attention (error and time).\n");
            return 0;
        }
        else usage();
#undef NEXT
    }
    int B = shape[0], H = shape[1], T = shape[2], hd = shape[3];
    if (!Hkv) Hkv = H;
    if (B < 1 || H < 1 || T < 1 || hd < 2 || hd % 2 || reps < 1 || Hkv < 1 || H % Hkv)
        die_input("attention_bench: --shape B H T HD needs positive sizes, an even HD, H a multiple of --kv-heads; --reps >= 1");
    if (strcmp(precision, "bf16") && strcmp(precision, "fp32")) die_input("attention_bench: --precision is bf16 or fp32, not '%s'", precision);
    DType dt = !strcmp(precision, "bf16") ? DT_BF16 : DT_F32;
    char why[256] = "";
    Backend *b = backend_create(device, dt, why, sizeof why);
    if (!b) { printf("SKIP attention_bench: %s\n", why); return 0; }
    if (attention) {
        static const char *const modes[] = { "auto", "cudnn", "flash" };
        int m = -1;
        for (int k = 0; k < 3; k++) if (!strcmp(attention, modes[k])) m = k;
        if (m < 0) die_input("attention_bench: --attention is auto, cudnn or flash, not '%s'", attention);
#ifdef BOOST_CUDA
        if (!strcmp(b->name, "cuda") && backend_cuda_set_attention(b, m, why, sizeof why))
            die_input("attention_bench: --attention cudnn, but %s", why);
#endif
    }
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
    Attn a = { b, B, T, H, Hkv, hd, rand_buf(b, nq), rand_buf(b, nk), rand_buf(b, nk), rand_buf(b, nq), rand_buf(b, nq),
               rand_buf(b, nq), rand_buf(b, nk), rand_buf(b, nk), bk_alloc(b, (size_t)B * H * T, DT_F32, MEM_WORK) };
    double f = 2.0 * B * H * (double)T * T * hd;   // causal forward FLOPs
    double ms_f = time_ms(&a, 0, reps), ms_fb = time_ms(&a, 1, reps);
    const char *impl = impl_used(b);
    printf("attention_bench: %s (%s) %s causal B %d H %d (kv %d) T %d hd %d: forward %.3f ms (%.1f TFLOP/s), "
           "forward+backward %.3f ms (%.1f TFLOP/s), mean of %d\n", b->name, impl, dtype_name(dt), B, H, Hkv, T, hd,
           ms_f, f / (ms_f * 1e-3) / 1e12, ms_fb, 3.5 * f / (ms_fb * 1e-3) / 1e12, reps);
    FILE *fj = NULL;
    if (json) {
        fj = fopen(json, "w");
        CHECK_ERRNO(!fj, json);
        fprintf(fj, "{\"engine\": \"boost-c\", \"impl\": \"%s\", \"device\": \"%s\", \"dtype\": \"%s\", \"shape\": {\"B\": %d, \"H\": %d, "
                "\"Hkv\": %d, \"T\": %d, \"hd\": %d}, \"reps\": %d, \"ms_forward\": %.6g, \"ms_forward_backward\": %.6g",
                impl, b->name, dtype_name(dt), B, H, Hkv, T, hd, reps, ms_f, ms_fb);
    }
    int rc = 0;
    if (do_compare) {
#ifdef BOOST_CUDA
        rc = compare(&a, reps, fj);
#else
        printf("SKIP attention_compare: built without CUDA\n");
#endif
    }
    if (fj) {
        fprintf(fj, "}\n");
        CHECK_ERRNO(fclose(fj) != 0, json);
    }
    void *q[] = { a.q, a.o, a.dout, a.dq }, *k[] = { a.k, a.v, a.dk, a.dv };
    for (int i = 0; i < 4; i++) { bk_free(b, q[i], nq, dt, MEM_WORK); bk_free(b, k[i], nk, dt, MEM_WORK); }
    bk_free(b, a.lse, (size_t)B * H * T, DT_F32, MEM_WORK);
    backend_free(b);
    return rc;
}
