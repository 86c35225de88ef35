// attention_bench — boost-c's causal flash attention, forward and forward+backward, timed on
// a back end at one shape: make gpu-check's comparison with PyTorch's scaled_dot_product_
// attention at s 4096 (analysis/torch_gpu_bench.py --attention, same shape and dtype).
//
//   build/attention_bench [--device cuda|cpu] [--precision bf16|fp32] [--shape B H T HD]
//                         [--kv-heads HKV] [--reps 10] [--json OUT]
//
// The ops go through the op front ends (backend/ops.h); inputs are random (never zeros).
// Timing: 3 warm-up calls, then --reps calls between two synchronisations of the back end,
// host clock; ms = the mean. TFLOP/s counts the causal half of 4·B·H·T²·hd for forward and
// 2.5 times that for backward (FlashAttention-2's accounting), as torch_gpu_bench.py does.
// The per-op table of every op for the performance model is test_backend_ops --json.
// Without the back end (no GPU, no CUDA build): "SKIP attention_bench: <reason>", exit 0.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../src/backend/bf16.h"
#include "../../src/backend/ops.h"
#include "../../src/core/check.h"
#include "../../src/core/timer.h"

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
    bk_from_host(b, d, h, n, t);
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
    bk_sync(a->b);
    double t0 = now_seconds();
    for (int i = 0; i < reps; i++) { forward(a); if (with_backward) backward(a); }
    bk_sync(a->b);
    return (now_seconds() - t0) * 1e3 / reps;
}

static void usage(void) {
    fprintf(stderr, "usage: attention_bench [--device cuda|cpu] [--precision bf16|fp32] [--shape B H T HD] "
                    "[--kv-heads HKV] [--reps N] [--json OUT]\n");
    exit(EXIT_BAD_INPUT);
}

int main(int argc, char **argv) {
    const char *device = "cuda", *precision = "bf16", *json = NULL;
    int shape[4] = { 2, 32, 4096, 64 }, Hkv = 0, reps = 10;
    for (int i = 1; i < argc; i++) {
#define NEXT() (i + 1 < argc ? argv[++i] : (usage(), ""))
        if (!strcmp(argv[i], "--device")) device = NEXT();
        else if (!strcmp(argv[i], "--precision")) precision = NEXT();
        else if (!strcmp(argv[i], "--shape")) { for (int k = 0; k < 4; k++) shape[k] = atoi(NEXT()); }
        else if (!strcmp(argv[i], "--kv-heads")) Hkv = atoi(NEXT());
        else if (!strcmp(argv[i], "--reps")) reps = atoi(NEXT());
        else if (!strcmp(argv[i], "--json")) json = NEXT();
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: attention_bench [--device cuda|cpu] [--precision bf16|fp32] [--shape B H T HD] "
                   "[--kv-heads HKV] [--reps N] [--json OUT]\n"
                   "Times the flash attention forward+backward of a back end (make gpu-check uses it next to SDPA).\n");
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
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
    Attn a = { b, B, T, H, Hkv, hd, rand_buf(b, nq), rand_buf(b, nk), rand_buf(b, nk), rand_buf(b, nq), rand_buf(b, nq),
               rand_buf(b, nq), rand_buf(b, nk), rand_buf(b, nk), bk_alloc(b, (size_t)B * H * T, DT_F32, MEM_WORK) };
    double f = 2.0 * B * H * (double)T * T * hd;   // causal forward FLOPs
    double ms_f = time_ms(&a, 0, reps), ms_fb = time_ms(&a, 1, reps);
    printf("attention_bench: %s %s causal B %d H %d (kv %d) T %d hd %d: forward %.3f ms (%.1f TFLOP/s), "
           "forward+backward %.3f ms (%.1f TFLOP/s), mean of %d\n", b->name, dtype_name(dt), B, H, Hkv, T, hd,
           ms_f, f / (ms_f * 1e-3) / 1e12, ms_fb, 3.5 * f / (ms_fb * 1e-3) / 1e12, reps);
    if (json) {
        FILE *fj = fopen(json, "w");
        CHECK_ERRNO(!fj, json);
        fprintf(fj, "{\"engine\": \"boost-c\", \"device\": \"%s\", \"dtype\": \"%s\", \"shape\": {\"B\": %d, \"H\": %d, "
                "\"Hkv\": %d, \"T\": %d, \"hd\": %d}, \"reps\": %d, \"ms_forward\": %.6g, \"ms_forward_backward\": %.6g}\n",
                b->name, dtype_name(dt), B, H, Hkv, T, hd, reps, ms_f, ms_fb);
        CHECK_ERRNO(fclose(fj) != 0, json);
    }
    void *q[] = { a.q, a.o, a.dout, a.dq }, *k[] = { a.k, a.v, a.dk, a.dv };
    for (int i = 0; i < 4; i++) { bk_free(b, q[i], nq, dt, MEM_WORK); bk_free(b, k[i], nk, dt, MEM_WORK); }
    bk_free(b, a.lse, (size_t)B * H * T, DT_F32, MEM_WORK);
    backend_free(b);
    return 0;
}
