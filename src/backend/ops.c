// ops.c — the op front ends (ops.h): each states its cost (FLOPs, bytes read + written at
// the dtypes involved), tells the observer, and runs the back end's implementation unless the
// back end is dry. The costs are what the dry back end's records, the timing wrapper's
// profile and the performance model see, so they are written once, here.
#include <math.h>
#include "ops.h"
#include "../core/check.h"

static double es(const Backend *b) { return (double)dtype_size(b->dtype); }

static OpInfo mk(const Backend *b, const char *name, OpClass cls, double flops, double bytes) {
    OpInfo i = { .name = name, .cls = cls, .flops = flops, .bytes = bytes, .count = 1,
                 .phase = b->phase, .layer = b->layer, .dtype = b->dtype };
    return i;
}
static void begin(Backend *b, const OpInfo *i) { if (b->obs && b->obs->begin) b->obs->begin(b->obs_ctx, i); }
static void end(Backend *b, const OpInfo *i) { if (b->obs && b->obs->end) b->obs->end(b->obs_ctx, i); }

// ---- buffers ------------------------------------------------------------------------------
void bk_zero(Backend *b, void *p, size_t n, DType t) {
    OpInfo i = mk(b, "zero", OPC_MEMORY, 0, (double)n * dtype_size(t));
    begin(b, &i);
    if (!b->dry && n) b->ops->zero(b, p, n * dtype_size(t));
    end(b, &i);
}
void bk_copy(Backend *b, void *dst, const void *src, size_t n, DType t) {
    OpInfo i = mk(b, "copy", OPC_MEMORY, 0, 2.0 * n * dtype_size(t));
    begin(b, &i);
    if (!b->dry && n && dst != src) b->ops->copy(b, dst, src, n * dtype_size(t));
    end(b, &i);
}
void bk_copy2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, size_t rows, size_t cols, DType t) {
    size_t e = dtype_size(t);
    OpInfo i = mk(b, "copy2d", OPC_MEMORY, 0, 2.0 * rows * cols * e);
    begin(b, &i);
    if (!b->dry && rows && cols) b->ops->copy2d(b, dst, ldd * e, src, lds * e, cols * e, rows);
    end(b, &i);
}
void bk_add2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols) {
    OpInfo i = mk(b, "add2d", OPC_MEMORY, (double)rows * cols, 3.0 * rows * cols * es(b));
    begin(b, &i);
    if (!b->dry && rows && cols) b->ops->add2d(b, dst, ldd, src, lds, rows, cols);
    end(b, &i);
}
void bk_to_host(Backend *b, void *host, const void *src, size_t n, DType t) {
    OpInfo i = mk(b, "to_host", OPC_TRANSFER, 0, (double)n * dtype_size(t));
    begin(b, &i);
    if (!b->dry && n) b->ops->to_host(b, host, src, n * dtype_size(t));
    end(b, &i);
}
void bk_from_host(Backend *b, void *dst, const void *host, size_t n, DType t) {
    OpInfo i = mk(b, "from_host", OPC_TRANSFER, 0, (double)n * dtype_size(t));
    begin(b, &i);
    if (!b->dry && n) b->ops->from_host(b, dst, host, n * dtype_size(t));
    end(b, &i);
}
void bk_cast(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n) {
    OpInfo i = mk(b, "cast", OPC_MEMORY, (double)n, (double)n * (dtype_size(dt) + dtype_size(st)));
    begin(b, &i);
    if (!b->dry && n) b->ops->cast(b, dst, dt, src, st, n);
    end(b, &i);
}
void bk_sync(Backend *b) { if (!b->dry && b->ops->sync) b->ops->sync(b); }

// ---- matrix products ------------------------------------------------------------------------
static double gemm_bytes(const Backend *b, const GemmArgs *g) {
    return es(b) * ((double)g->M * g->K + (double)g->K * g->N + (double)g->M * g->N * (g->beta != 0.0f ? 2 : 1));
}
void op_gemm(Backend *b, Trans ta, Trans tb, int M, int N, int K, float alpha, const void *A, int lda,
             const void *B, int ldb, float beta, void *C, int ldc) {
    GemmArgs g = { ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc };
    OpInfo i = mk(b, "gemm", OPC_GEMM, 2.0 * M * N * K, gemm_bytes(b, &g));
    i.M = M; i.N = N; i.K = K;
    begin(b, &i);
    if (!b->dry && M && N) b->ops->gemm(b, &g);
    end(b, &i);
}
void op_gemm_group(Backend *b, int count, const GemmArgs *g) {
    if (count <= 0) return;
    OpInfo i = mk(b, "gemm_group", OPC_GEMM, 0, 0);
    for (int j = 0; j < count; j++) { i.flops += 2.0 * g[j].M * g[j].N * g[j].K; i.bytes += gemm_bytes(b, &g[j]); }
    i.M = g[0].M; i.N = g[0].N; i.K = g[0].K; i.count = count;
    begin(b, &i);
    if (!b->dry) b->ops->gemm_group(b, count, g);
    end(b, &i);
}

// ---- normalisation --------------------------------------------------------------------------
void op_rmsnorm_forward(Backend *b, void *y, float *rstd, const void *x, const void *gamma, int N, int d, float eps) {
    OpInfo i = mk(b, "rmsnorm_forward", OPC_MEMORY, 4.0 * N * d, es(b) * (2.0 * N * d + d) + 4.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->rmsnorm_forward(b, y, rstd, x, gamma, N, d, eps);
    end(b, &i);
}
void op_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *dy, const void *x, const void *gamma,
                         const float *rstd, int N, int d) {
    OpInfo i = mk(b, "rmsnorm_backward", OPC_MEMORY, 10.0 * N * d, es(b) * (4.0 * N * d + 3.0 * d) + 4.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->rmsnorm_backward(b, dx, dgamma, dy, x, gamma, rstd, N, d);
    end(b, &i);
}
void op_rowsumsq(Backend *b, void *S, const void *x, int N, int d) {
    OpInfo i = mk(b, "rowsumsq", OPC_MEMORY, 2.0 * N * d, es(b) * ((double)N * d + N));
    begin(b, &i);
    if (!b->dry) b->ops->rowsumsq(b, S, x, N, d);
    end(b, &i);
}
void op_rownorm(Backend *b, void *y, const void *x, const void *gamma, const void *S, int N, int d, int width, float eps) {
    OpInfo i = mk(b, "rownorm", OPC_MEMORY, 2.0 * N * d, es(b) * (2.0 * N * d + d + N));
    begin(b, &i);
    if (!b->dry) b->ops->rownorm(b, y, x, gamma, S, N, d, width, eps);
    end(b, &i);
}
void op_scale_rows(Backend *b, void *P, const SlotView *v, const void *S, int width, float eps, int power) {
    double n = (double)v->N * v->G * v->r;
    OpInfo i = mk(b, "scale_rows", OPC_MEMORY, n, es(b) * (2.0 * n + v->N));
    begin(b, &i);
    if (!b->dry) b->ops->scale_rows(b, P, v, S, width, eps, power);
    end(b, &i);
}
void op_rowdot(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v) {
    double n = (double)v->N * v->G * v->r;
    OpInfo i = mk(b, "rowdot", OPC_MEMORY, 2.0 * n, es(b) * 2.0 * n + 4.0 * v->N);
    begin(b, &i);
    if (!b->dry) b->ops->rowdot(b, dot, X, Y, v);
    end(b, &i);
}
void op_sharded_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *da, const void *x,
                                 const void *gamma, const void *S, const float *dot, int N, int d,
                                 int d_full, float eps) {
    OpInfo i = mk(b, "sharded_rmsnorm_backward", OPC_MEMORY, 8.0 * N * d, es(b) * (4.0 * N * d + 3.0 * d + N) + 4.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->sharded_rmsnorm_backward(b, dx, dgamma, da, x, gamma, S, dot, N, d, d_full, eps);
    end(b, &i);
}

// ---- elementwise --------------------------------------------------------------------------------
void op_silu_forward(Backend *b, void *y, const void *x, size_t n) {
    OpInfo i = mk(b, "silu_forward", OPC_MEMORY, 4.0 * n, es(b) * 2.0 * n);
    begin(b, &i);
    if (!b->dry) b->ops->silu_forward(b, y, x, n);
    end(b, &i);
}
void op_silu_backward(Backend *b, void *dx, const void *dy, const void *x, size_t n) {
    OpInfo i = mk(b, "silu_backward", OPC_MEMORY, 8.0 * n, es(b) * 3.0 * n);   // dy, x read; dx written
    begin(b, &i);
    if (!b->dry) b->ops->silu_backward(b, dx, dy, x, n);
    end(b, &i);
}
void op_swiglu_forward(Backend *b, void *z, const void *g, const void *u, size_t n, int gate_silu) {
    OpInfo i = mk(b, "swiglu_forward", OPC_MEMORY, 5.0 * n, es(b) * 3.0 * n);
    begin(b, &i);
    if (!b->dry) b->ops->swiglu_forward(b, z, g, u, n, gate_silu);
    end(b, &i);
}
void op_swiglu_backward(Backend *b, void *dg, void *du, const void *dz, const void *g, const void *u,
                        size_t n, int gate_silu) {
    OpInfo i = mk(b, "swiglu_backward", OPC_MEMORY, 12.0 * n, es(b) * 5.0 * n);   // dz, g, u read; dg, du written
    begin(b, &i);
    if (!b->dry) b->ops->swiglu_backward(b, dg, du, dz, g, u, n, gate_silu);
    end(b, &i);
}
void op_add(Backend *b, void *x, const void *y, size_t n) {
    OpInfo i = mk(b, "add", OPC_MEMORY, (double)n, es(b) * 3.0 * n);
    begin(b, &i);
    if (!b->dry) b->ops->add(b, x, y, n);
    end(b, &i);
}
void op_scale(Backend *b, void *x, float s, size_t n) {
    OpInfo i = mk(b, "scale", OPC_MEMORY, (double)n, es(b) * 2.0 * n);
    begin(b, &i);
    if (!b->dry) b->ops->scale(b, x, s, n);
    end(b, &i);
}

// ---- attention ------------------------------------------------------------------------------------
static void rope(Backend *b, const char *name, void *x, int B, int T, int H, int hd, float theta, int inverse) {
    double n = (double)B * T * H * hd;
    OpInfo i = mk(b, name, OPC_MEMORY, 3.0 * n, es(b) * 2.0 * n);
    begin(b, &i);
    if (!b->dry) b->ops->rope(b, x, B, T, H, hd, theta, inverse);
    end(b, &i);
}
void op_rope_forward(Backend *b, void *x, int B, int T, int H, int hd, float theta) { rope(b, "rope_forward", x, B, T, H, hd, theta, 0); }
void op_rope_backward(Backend *b, void *dx, int B, int T, int H, int hd, float theta) { rope(b, "rope_backward", dx, B, T, H, hd, theta, 1); }

// Causal: T(T+1)/2 (query, key) pairs per head; a GEMM-equivalent over them is 2·hd FLOPs a pair.
static double att_pairs(int B, int T, int H) { return (double)B * H * T * (T + 1.0) / 2.0; }
void op_attention_forward(Backend *b, void *out, float *lse, const void *q, const void *k, const void *v,
                          int B, int T, int H, int Hkv, int hd) {
    double io = (double)B * T * hd * (2.0 * H + 2.0 * Hkv);   // q, out; k, v
    OpInfo i = mk(b, "attention_forward", OPC_ATTENTION, 2 * 2.0 * hd * att_pairs(B, T, H),
                  es(b) * io + 4.0 * B * H * T);
    begin(b, &i);
    if (!b->dry) b->ops->attention_forward(b, out, lse, q, k, v, B, T, H, Hkv, hd);
    end(b, &i);
}
void op_attention_backward(Backend *b, void *dq, void *dk, void *dv, const void *dout, const void *out,
                           const void *q, const void *k, const void *v, const float *lse,
                           int B, int T, int H, int Hkv, int hd) {
    // S recomputed, dP, dV, dQ, dK: five GEMM-equivalents; reads q k v out dout, accumulates dq dk dv
    double io = (double)B * T * hd * (3.0 * H + 2.0 * Hkv + 2.0 * H + 4.0 * Hkv);
    OpInfo i = mk(b, "attention_backward", OPC_ATTENTION, 5 * 2.0 * hd * att_pairs(B, T, H),
                  es(b) * io + 4.0 * B * H * T);
    begin(b, &i);
    if (!b->dry) b->ops->attention_backward(b, dq, dk, dv, dout, out, q, k, v, lse, B, T, H, Hkv, hd);
    end(b, &i);
}

// ---- embedding, loss --------------------------------------------------------------------------------
void op_embedding_forward(Backend *b, void *out, const int32_t *tokens, const void *wte, int N, int d, int v0, int V) {
    OpInfo i = mk(b, "embedding_forward", OPC_MEMORY, 0, es(b) * 2.0 * N * d + 4.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->embedding_forward(b, out, tokens, wte, N, d, v0, V);
    end(b, &i);
}
void op_embedding_backward(Backend *b, void *dwte, const void *dout, const int32_t *tokens, int N, int d, int v0, int V) {
    OpInfo i = mk(b, "embedding_backward", OPC_MEMORY, (double)N * d, es(b) * 3.0 * N * d + 4.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->embedding_backward(b, dwte, dout, tokens, N, d, v0, V);
    end(b, &i);
}
void op_xent_forward(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                     const int32_t *targets, int N, int V, int v0) {
    OpInfo i = mk(b, "xent_forward", OPC_MEMORY, 4.0 * N * V, es(b) * (double)N * V + 24.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->xent_forward(b, lmax, sumexp, tlogit, logits, targets, N, V, v0);
    end(b, &i);
}
void op_xent_rescale(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N) {
    OpInfo i = mk(b, "xent_rescale", OPC_MEMORY, 3.0 * N, 24.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->xent_rescale(b, sumexp, lmax, gmax, N);
    end(b, &i);
}
double op_xent_loss(Backend *b, float *losses, const double *sumexp, const float *gmax, const double *tlogit, int N) {
    OpInfo i = mk(b, "xent_loss", OPC_MEMORY, 3.0 * N, 28.0 * N);
    begin(b, &i);
    double total = b->dry ? 0.0 : b->ops->xent_loss(b, losses, sumexp, gmax, tlogit, N);
    end(b, &i);
    return total;
}
void op_xent_backward(Backend *b, void *dlogits, const void *logits, const float *gmax, const double *sumexp,
                      const int32_t *targets, int N, int V, int v0, float scale) {
    OpInfo i = mk(b, "xent_backward", OPC_MEMORY, 3.0 * N * V, es(b) * 2.0 * N * V + 16.0 * N);
    begin(b, &i);
    if (!b->dry) b->ops->xent_backward(b, dlogits, logits, gmax, sumexp, targets, N, V, v0, scale);
    end(b, &i);
}

// ---- optimizer ------------------------------------------------------------------------------------
double op_sumsq_multi(Backend *b, int n, const void *const *x, const size_t *len, const double *w) {
    double total = 0;
    for (int j = 0; j < n; j++) total += (double)len[j];
    OpInfo i = mk(b, "sumsq_multi", OPC_MEMORY, 2.0 * total, es(b) * total);
    begin(b, &i);
    double r = b->dry || n == 0 ? 0.0 : b->ops->sumsq_multi(b, n, x, len, w);
    end(b, &i);
    return r;
}
void op_adamw_multi(Backend *b, int n, const AdamWSpan *spans, const AdamWHyper *h) {
    CHECK(h->grad_scale > 0 && isfinite(h->grad_scale),
          "adamw: grad_scale %g must be a finite factor > 0 (1 = no clipping)", (double)h->grad_scale);
    double total = 0, bytes = 0;
    for (int j = 0; j < n; j++) {
        total += (double)spans[j].n;
        // master, m, v read + written (fp32), grad read; the compute-dtype copy written
        bytes += (double)spans[j].n * (6 * 4 + es(b) + (spans[j].param ? es(b) : 0));
    }
    OpInfo i = mk(b, "adamw", OPC_MEMORY, 12.0 * total, bytes);
    begin(b, &i);
    if (!b->dry && n) b->ops->adamw_multi(b, n, spans, h);
    end(b, &i);
}

// ---- LaX latent crossing ---------------------------------------------------------------------
// A back end whose table predates LaX (or is still being written) refuses by name instead of
// calling through NULL.
static void need(const Backend *b, int present, const char *op) {
    CHECK(present, "the %s back end (%s) has no %s op: LaX (docs/lax.md) needs it", b->name, dtype_name(b->dtype), op);
}
void op_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                          const void *gamma, const void *beta, int N, int r, float eps) {
    double n = (double)N * r;
    OpInfo i = mk(b, "layernorm_forward", OPC_MEMORY, 8.0 * n, es(b) * (2.0 * n + 2.0 * r) + 8.0 * N);
    begin(b, &i);
    if (!b->dry) { need(b, b->ops->layernorm_forward != NULL, "layernorm_forward");
                   b->ops->layernorm_forward(b, y, ldy, mean, rstd, x, ldx, gamma, beta, N, r, eps); }
    end(b, &i);
}
void op_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                           const void *x, int ldx, const float *mean, const float *rstd, const void *gamma, int N, int r) {
    double n = (double)N * r;
    OpInfo i = mk(b, "layernorm_backward", OPC_MEMORY, 14.0 * n, es(b) * (4.0 * n + 5.0 * r) + 8.0 * N);
    begin(b, &i);
    if (!b->dry) { need(b, b->ops->layernorm_backward != NULL, "layernorm_backward");
                   b->ops->layernorm_backward(b, dx, lddx, dgamma, dbeta, dy, lddy, x, ldx, mean, rstd, gamma, N, r); }
    end(b, &i);
}
void op_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W, const void *bias,
                           int N, int r) {
    double n = (double)N * r;
    OpInfo i = mk(b, "dense_gate_forward", OPC_GEMM, 2.0 * n * r + n, es(b) * (3.0 * n + (double)r * r + r));
    i.M = N; i.N = r; i.K = r;
    begin(b, &i);
    if (!b->dry) { need(b, b->ops->dense_gate_forward != NULL, "dense_gate_forward");
                   b->ops->dense_gate_forward(b, out, ldo, z, ldz, W, bias, N, r); }
    end(b, &i);
}
void op_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                            const void *z, int ldz, const void *W, int N, int r) {
    double n = (double)N * r;
    OpInfo i = mk(b, "dense_gate_backward", OPC_GEMM, 4.0 * n * r + n,
                  es(b) * (5.0 * n + 3.0 * (double)r * r + 2.0 * r));
    i.M = N; i.N = r; i.K = r; i.count = 2;
    begin(b, &i);
    if (!b->dry) { need(b, b->ops->dense_gate_backward != NULL, "dense_gate_backward");
                   b->ops->dense_gate_backward(b, dz, lddz, dW, dbias, dout, lddo, z, ldz, W, N, r); }
    end(b, &i);
}
// The kron gate's cost is that of its GEMM plan (docs/lax.md §3): forward [N·r1, r2]·[r2, r2]
// and [N·r2, r1]·[r1, r1]; backward re-forms T and adds dT, dz, dG1, dG2 (five products).
void op_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1, const void *G2,
                          int N, int r1, int r2) {
    double n = (double)N * r1 * r2;
    OpInfo i = mk(b, "kron_gate_forward", OPC_GEMM, 2.0 * n * (r1 + r2),
                  es(b) * (3.0 * n + (double)r1 * r1 + (double)r2 * r2));
    i.M = N * r1; i.N = r2; i.K = r2; i.count = 2;
    begin(b, &i);
    if (!b->dry) { need(b, b->ops->kron_gate_forward != NULL, "kron_gate_forward");
                   b->ops->kron_gate_forward(b, out, ldo, z, ldz, G1, G2, N, r1, r2); }
    end(b, &i);
}
void op_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                           const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2) {
    double n = (double)N * r1 * r2;
    OpInfo i = mk(b, "kron_gate_backward", OPC_GEMM, 2.0 * n * (2.0 * r1 + 3.0 * r2),
                  es(b) * (4.0 * n + 2.0 * ((double)r1 * r1 + (double)r2 * r2)));
    i.M = N * r1; i.N = r2; i.K = r2; i.count = 5;
    begin(b, &i);
    if (!b->dry) { need(b, b->ops->kron_gate_backward != NULL, "kron_gate_backward");
                   b->ops->kron_gate_backward(b, dz, lddz, dG1, dG2, dout, lddo, z, ldz, G1, G2, N, r1, r2); }
    end(b, &i);
}
