// cpu.c — the CPU back end's op table in fp32: the reference every other back end is tested
// against. Buffers are host memory; every entry forwards to a kernel of kernels.h.
#include <string.h>
#include "cpu.h"
#include "kernels.h"
#include "sgemm.h"
#include "../bf16.h"
#include "../../core/check.h"

// ---- buffers (shared with the bf16 table: cpu.h) ---------------------------------------
void *cpu_alloc(Backend *b, size_t bytes) { (void)b; return xaligned_alloc(bytes); }
void cpu_free(Backend *b, void *p) { (void)b; free(p); }
void cpu_zero(Backend *b, void *p, size_t bytes) { (void)b; memset(p, 0, bytes); }
void cpu_copy(Backend *b, void *dst, const void *src, size_t bytes) { (void)b; memmove(dst, src, bytes); }
void cpu_copy2d(Backend *b, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows) {
    (void)b;
    for (size_t r = 0; r < rows; r++) memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
}
void cpu_sync(Backend *b) { (void)b; }

void cpu_cast(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n) {
    (void)b;
    if (dt == st) { memmove(dst, src, n * dtype_size(dt)); return; }
    if (dt == DT_BF16 && st == DT_F32) {
        bf16 *d = dst; const float *s = src;
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) d[i] = bf16_from_f32(s[i]);
        return;
    }
    if (dt == DT_F32 && st == DT_BF16) {
        float *d = dst; const bf16 *s = src;
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) d[i] = bf16_to_f32(s[i]);
        return;
    }
    DIE("cast from %s to %s is not supported", dtype_name(st), dtype_name(dt));
}

// gemm_into on host memory: D = C first (nothing to copy when D is C or beta is 0: the
// product does not read C then), then the GEMM in place in D. Returns the in-place arguments.
GemmArgs cpu_gemm_into_args(const GemmArgs *g, void *D, int ldd, size_t es) {
    GemmArgs h = *g;
    h.C = D; h.ldc = ldd;
    if (D == g->C && ldd == g->ldc) return h;
    CHECK(ldd >= g->N, "gemm_into: row stride ldd=%d of D below N=%d", ldd, g->N);
    if (g->beta == 0.0f || g->M == 0 || g->N == 0) return h;
    const char *c0 = g->C, *c1 = c0 + ((size_t)(g->M - 1) * g->ldc + g->N) * es;
    const char *d0 = D, *d1 = d0 + ((size_t)(g->M - 1) * ldd + g->N) * es;
    CHECK(d1 <= c0 || c1 <= d0, "gemm_into: D (ldd %d) overlaps C (ldc %d) without being C", ldd, g->ldc);
    for (int m = 0; m < g->M; m++)
        memcpy((char *)D + (size_t)m * ldd * es, (const char *)g->C + (size_t)m * g->ldc * es, (size_t)g->N * es);
    return h;
}

// ---- fp32 entries ------------------------------------------------------------------------
static void f_add2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols) {
    (void)b; cpu_add2d(dst, ldd, src, lds, rows, cols);
}
static void f_gemm(Backend *b, const GemmArgs *g) { (void)b; cpu_sgemm(g); }
static void f_gemm_into(Backend *b, const GemmArgs *g, void *D, int ldd) {
    (void)b;
    GemmArgs h = cpu_gemm_into_args(g, D, ldd, sizeof(float));
    cpu_sgemm(&h);
}
static void f_gemm_group(Backend *b, int count, const GemmArgs *g) { (void)b; for (int i = 0; i < count; i++) cpu_sgemm(&g[i]); }
static void f_rmsnorm_forward(Backend *b, void *y, float *rstd, const void *x, const void *gamma, int N, int d, float eps) {
    (void)b; cpu_rmsnorm_forward(y, rstd, x, gamma, N, d, eps);
}
static void f_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *dy, const void *x, const void *gamma,
                               const float *rstd, int N, int d, int acc_dx, int acc_dgamma) {
    (void)b; cpu_rmsnorm_backward(dx, dgamma, dy, x, gamma, rstd, N, d, acc_dx, acc_dgamma);
}
static void f_rowsumsq(Backend *b, void *S, const void *x, int N, int d) { (void)b; cpu_rowsumsq(S, x, N, d); }
static void f_rownorm(Backend *b, void *y, const void *x, const void *gamma, const void *S, int N, int d, int width, float eps) {
    (void)b; cpu_rownorm(y, x, gamma, S, N, d, width, eps);
}
static void f_scale_rows(Backend *b, void *P, const SlotView *v, const void *S, int width, float eps, int power) {
    (void)b; cpu_scale_rows(P, v, S, width, eps, power);
}
static void f_rowdot(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v) { (void)b; cpu_rowdot(dot, X, Y, v); }
static void f_sharded_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *da, const void *x, const void *gamma,
                                       const void *S, const float *dot, int N, int d, int d_full, float eps,
                                       int acc_dgamma) {
    (void)b; cpu_sharded_rmsnorm_backward(dx, dgamma, da, x, gamma, S, dot, N, d, d_full, eps, acc_dgamma);
}
static void f_silu_forward(Backend *b, void *y, const void *x, size_t n) { (void)b; cpu_silu_forward(y, x, n); }
static void f_silu_backward(Backend *b, void *dx, const void *dy, const void *x, size_t n) { (void)b; cpu_silu_backward(dx, dy, x, n); }
static void f_swiglu_forward(Backend *b, void *z, const void *g, const void *u, size_t n, int gs) { (void)b; cpu_swiglu_forward(z, g, u, n, gs); }
static void f_swiglu_backward(Backend *b, void *dg, void *du, const void *dz, const void *g, const void *u, size_t n, int gs) {
    (void)b; cpu_swiglu_backward(dg, du, dz, g, u, n, gs);
}
static void f_add(Backend *b, void *x, const void *y, size_t n) { (void)b; cpu_add_inplace(x, y, n); }
static void f_scale(Backend *b, void *x, float s, size_t n) { (void)b; cpu_scale_inplace(x, s, n); }
static void f_rope(Backend *b, void *x, int B, int T, int H, int hd, float theta, int inverse) {
    (void)b;
    if (inverse) cpu_rope_backward(x, B, T, H, hd, theta);
    else cpu_rope_forward(x, B, T, H, hd, theta);
}
static void f_attention_forward(Backend *b, void *out, float *lse, const void *q, const void *k, const void *v,
                                int B, int T, int H, int Hkv, int hd) {
    (void)b; cpu_attention_forward(out, lse, q, k, v, B, T, H, Hkv, hd);
}
static void f_attention_backward(Backend *b, void *dq, void *dk, void *dv, const void *dout, const void *out,
                                 const void *q, const void *k, const void *v, const float *lse,
                                 int B, int T, int H, int Hkv, int hd) {
    (void)b; cpu_attention_backward(dq, dk, dv, dout, out, q, k, v, lse, B, T, H, Hkv, hd);
}
static void f_embedding_forward(Backend *b, void *out, const int32_t *tokens, const void *wte, int N, int d, int v0, int V) {
    (void)b; cpu_embedding_forward_shard(out, tokens, wte, N, d, v0, V);
}
static void f_embedding_backward(Backend *b, void *dwte, const void *dout, const int32_t *tokens, int N, int d, int v0, int V,
                                 int acc, const unsigned char *nz) {
    (void)b; cpu_embedding_backward_shard(dwte, dout, tokens, N, d, v0, V, acc, nz);
}
static void f_xent_forward(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                           const int32_t *targets, int N, int V, int v0) {
    (void)b; cpu_xent_forward(lmax, sumexp, tlogit, logits, targets, N, V, v0);
}
void cpu_op_xent_rescale(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N) {
    (void)b; cpu_xent_rescale(sumexp, lmax, gmax, N);
}
// The sum of this micro-batch's losses into the loss scalar (host memory here): written, or
// added when accumulating — the same double additions, in the same order, as summing on the host.
void cpu_op_xent_loss(Backend *b, double *loss, float *losses, const double *sumexp, const float *gmax, const double *tlogit,
                   int N, int accumulate) {
    (void)b;
    double s = cpu_xent_loss(losses, sumexp, gmax, tlogit, N);
    *loss = accumulate ? *loss + s : s;
}
static void f_xent_backward(Backend *b, void *dlogits, const void *logits, const float *gmax, const double *sumexp,
                            const int32_t *targets, int N, int V, int v0, float scale) {
    (void)b; cpu_xent_backward(dlogits, logits, gmax, sumexp, targets, N, V, v0, scale);
}
static void f_xent_fused(Backend *b, void *dlogits, float *lmax, double *sumexp, double *tlogit, const void *logits,
                         const int32_t *targets, int N, int V, int v0, float scale) {
    (void)b; cpu_xent_fused(dlogits, lmax, sumexp, tlogit, logits, targets, N, V, v0, scale);
}
static double f_sumsq_multi(Backend *b, int n, const void *const *x, const size_t *len, const double *w,
                            const SumsqLive *live) {
    (void)b; return cpu_sumsq_multi(n, (const float *const *)x, len, w, live);
}
static void f_adamw_multi(Backend *b, int n, const AdamWSpan *s, const AdamWHyper *h) {
    (void)b;
    for (int i = 0; i < n; i++)
        CHECK(s[i].param == NULL, "cpu fp32: the master weights are the parameters (param must be NULL)");
    cpu_adamw_multi(n, s, h);
}

// LaX latent crossing (lax.c)
static void f_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                                const void *gamma, const void *beta, int N, int r, float eps) {
    (void)b; cpu_layernorm_forward(y, ldy, mean, rstd, x, ldx, gamma, beta, N, r, eps);
}
static void f_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                                 const void *x, int ldx, const float *mean, const float *rstd, const void *gamma,
                                 int N, int r, int acc_dx, int acc_dw) {
    (void)b; cpu_layernorm_backward(dx, lddx, dgamma, dbeta, dy, lddy, x, ldx, mean, rstd, gamma, N, r, acc_dx, acc_dw);
}
static void f_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W,
                                 const void *bias, int N, int r) {
    (void)b; cpu_dense_gate_forward(out, ldo, z, ldz, W, bias, N, r);
}
static void f_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                                  const void *z, int ldz, const void *W, int N, int r, int acc_dz, int acc_dw) {
    (void)b; cpu_dense_gate_backward(dz, lddz, dW, dbias, dout, lddo, z, ldz, W, N, r, acc_dz, acc_dw);
}
static void f_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1,
                                const void *G2, int N, int r1, int r2) {
    (void)b; cpu_kron_gate_forward(out, ldo, z, ldz, G1, G2, N, r1, r2);
}
static void f_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                                 const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2,
                                 int acc_dz, int acc_dw) {
    (void)b; cpu_kron_gate_backward(dz, lddz, dG1, dG2, dout, lddo, z, ldz, G1, G2, N, r1, r2, acc_dz, acc_dw);
}

static const BackendOps cpu_f32_ops = {
    .alloc = cpu_alloc, .free = cpu_free, .zero = cpu_zero, .copy = cpu_copy, .copy2d = cpu_copy2d,
    .to_host = cpu_copy, .from_host = cpu_copy, .sync = cpu_sync, .cast = cpu_cast, .add2d = f_add2d,
    .gemm = f_gemm, .gemm_into = f_gemm_into, .gemm_group = f_gemm_group,
    .rmsnorm_forward = f_rmsnorm_forward, .rmsnorm_backward = f_rmsnorm_backward,
    .rowsumsq = f_rowsumsq, .rownorm = f_rownorm, .scale_rows = f_scale_rows, .rowdot = f_rowdot,
    .sharded_rmsnorm_backward = f_sharded_rmsnorm_backward,
    .silu_forward = f_silu_forward, .silu_backward = f_silu_backward,
    .swiglu_forward = f_swiglu_forward, .swiglu_backward = f_swiglu_backward,
    .add = f_add, .scale = f_scale, .rope = f_rope,
    .attention_forward = f_attention_forward, .attention_backward = f_attention_backward,
    .embedding_forward = f_embedding_forward, .embedding_backward = f_embedding_backward,
    .xent_forward = f_xent_forward, .xent_rescale = cpu_op_xent_rescale, .xent_loss = cpu_op_xent_loss,
    .xent_backward = f_xent_backward, .xent_fused = f_xent_fused,
    .sumsq_multi = f_sumsq_multi, .adamw_multi = f_adamw_multi,
    .layernorm_forward = f_layernorm_forward, .layernorm_backward = f_layernorm_backward,
    .dense_gate_forward = f_dense_gate_forward, .dense_gate_backward = f_dense_gate_backward,
    .kron_gate_forward = f_kron_gate_forward, .kron_gate_backward = f_kron_gate_backward,
};

static const char *cpu_f32_gemm_library(Backend *b) { (void)b; return cpu_sgemm_describe(); }
static double cpu_peak_gflops(Backend *b) { (void)b; return cpu_sgemm_peak_gflops(); }

Backend *backend_cpu(DType dtype) {
    CHECK(dtype == DT_F32 || dtype == DT_BF16, "the CPU back end computes in fp32 or bf16, not %s", dtype_name(dtype));
    Backend *b = xcalloc(1, sizeof *b);
    b->ops = dtype == DT_F32 ? &cpu_f32_ops : &cpu_bf16_ops;
    b->name = "cpu";
    b->dtype = dtype;
    b->layer = -1;
    b->peak_gflops = cpu_peak_gflops;   // the host's sgemm with its current thread count
    b->peak_per_host = 1;
    b->gemm_library = dtype == DT_F32 ? cpu_f32_gemm_library : cpu_bf16_gemm_library;
    return b;
}
