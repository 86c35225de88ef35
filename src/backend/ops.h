// ops.h — the op front ends: what the model drivers and the optimizer call. Each reports
// an OpInfo (FLOPs, bytes, labels) to the back end's observer and runs the back end's
// implementation (none on the dry back end). Forward/backward pairs.
//
// Gradient outputs: no buffer is zeroed before its first writer. A GEMM stores with beta = 0
// and adds with beta = 1; every other *_backward that writes a gradient a later op may add to
// takes an acc_* flag per output (1: += into it; 0: stored without being read, as if the
// buffer held zeros). So a training step makes no zero pass over its gradients: the first
// writer of each gradient in the step's first micro-batch stores, every later one adds
// (model.h model_grads_overwrite). silu_backward, swiglu_backward, attention_backward and
// xent_backward always store theirs (each is its outputs' only writer).
//
// Conventions (row-vector form, paper notes): N tokens (B·T), a linear y = x @ W with W
// [d_in, d_out]. "T" below is the back end's compute dtype (b->dtype); f32/f64/i32 are
// fixed types. Shapes of every pointer are in the comment above each op.
//
// ONE description: OP_FRONT_ENDS below is the list of every front end op_<name>, one row
// each, which both declares it (here) and defines it (ops.c, OP_DEFINE): its signature, the
// BackendOps entry it runs (backend.h) with the arguments it passes, when it runs at all, its
// class, FLOPs (the FLOP module, model/flops.h) and bytes read + written, and its GEMM
// shape. Every generated front end refuses, naming the entry and the back end, to call an
// entry the back end's table lacks. Prefix: op_ for every front end of this layer (bk_ is
// the back end's own layer: backend.h's bk_alloc, bk_free, bk_at, bk_label, bk_observe).
//
// Row: X(RET, name, "label", (params), entry, (call args), when, class, flops, bytes, shape)
//   RET void or double (double: 0 on the dry back end); "label" the OpInfo name the observer
//   sees; shape a comma expression setting i.M, i.N, i.K, i.count ((void)0: none; attention: M =
//   batch × heads, N = sequence, K = head dim, which the performance model's materialised pricing reads).
#pragma once
#include "backend.h"

#define OP_FRONT_ENDS(X)                                                                              \
/* ---- buffers ---- */                                                                              \
/* p[n] = 0 (elements of dtype t) */                                                                 \
X(void, zero, "zero", (Backend *b, void *p, size_t n, DType t), zero, (b, p, n * dtype_size(t)), n,      \
  OPC_MEMORY, 0, (double)n * dtype_size(t), (void)0)                                                 \
/* dst[n] = src[n] */                                                                                \
X(void, copy, "copy", (Backend *b, void *dst, const void *src, size_t n, DType t), copy,                 \
  (b, dst, src, n * dtype_size(t)), n && dst != src, OPC_MEMORY, 0, 2.0 * n * dtype_size(t), (void)0)  \
/* dst[rows, cols] (row stride ldd) = src[rows, cols] (row stride lds); strides in elements */       \
X(void, copy2d, "copy2d", (Backend *b, void *dst, size_t ldd, const void *src, size_t lds, size_t rows,  \
  size_t cols, DType t), copy2d, (b, dst, ldd * dtype_size(t), src, lds * dtype_size(t),                  \
  cols * dtype_size(t), rows), rows && cols, OPC_MEMORY, 0, 2.0 * rows * cols * dtype_size(t), (void)0)  \
/* dst[rows, cols] (ldd) += src[rows, cols] (lds), compute dtype */                                 \
X(void, add2d, "add2d", (Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows,       \
  int cols), add2d, (b, dst, ldd, src, lds, rows, cols), rows && cols, OPC_MEMORY, (double)rows * cols,  \
  3.0 * rows * cols * es(b), (void)0)                                                                \
/* host[n] = src[n] (a host pointer; a copy on host back ends) */                                    \
X(void, to_host, "to_host", (Backend *b, void *host, const void *src, size_t n, DType t), to_host,       \
  (b, host, src, n * dtype_size(t)), n, OPC_TRANSFER, 0, (double)n * dtype_size(t), (void)0)          \
/* dst[n] = host[n] */                                                                               \
X(void, from_host, "from_host", (Backend *b, void *dst, const void *host, size_t n, DType t), from_host, \
  (b, dst, host, n * dtype_size(t)), n, OPC_TRANSFER, 0, (double)n * dtype_size(t), (void)0)          \
/* dst[n] (dtype dt) = src[n] (dtype st), round to nearest even */                                   \
X(void, cast, "cast", (Backend *b, void *dst, DType dt, const void *src, DType st, size_t n), cast,      \
  (b, dst, dt, src, st, n), n, OPC_MEMORY, (double)n, (double)n * (dtype_size(dt) + dtype_size(st)),  \
  (void)0)                                                                                           \
/* ---- matrix products ---- */                                                                      \
/* C[M,N] = alpha·op(A)·op(B) + beta·C (GemmArgs in backend.h), T operands, fp32 accumulation */    \
X(void, gemm, "gemm", (Backend *b, Trans ta, Trans tb, int M, int N, int K, float alpha, const void *A,  \
  int lda, const void *B, int ldb, float beta, void *C, int ldc), gemm,                              \
  (b, &(GemmArgs){ ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc }), M && N, OPC_GEMM,         \
  flops_gemm(M, N, K), gemm_bytes(b, M, N, K, beta), (i.M = M, i.N = N, i.K = K))                     \
/* D[M,N] = alpha·op(A)·op(B) + beta·C with its own output D (row stride ldd; C read only): a     \
   residual add folded into the GEMM (x_mid = x + z·B) with no copy of C into D first. D may be   \
   C (ldd == ldc); else, when beta ≠ 0, D and C must not overlap. Reported as a "gemm" */          \
X(void, gemm_into, "gemm", (Backend *b, Trans ta, Trans tb, int M, int N, int K, float alpha,           \
  const void *A, int lda, const void *B, int ldb, float beta, const void *C, int ldc, void *D, int ldd),\
  gemm_into, (b, &(GemmArgs){ ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, (void *)C, ldc }, D, ldd),  \
  M && N, OPC_GEMM, flops_gemm(M, N, K), gemm_bytes(b, M, N, K, beta), (i.M = M, i.N = N, i.K = K))    \
/* `count` ≥ 1 independent GEMMs in one launch where the back end can (the batched up factors) */   \
X(void, gemm_group, "gemm_group", (Backend *b, int count, const GemmArgs *g), gemm_group,              \
  (b, count, g), 1, OPC_GEMM, group_flops(count, g), group_bytes(b, count, g),                        \
  (i.M = g[0].M, i.N = g[0].N, i.K = g[0].K, i.count = count))                                       \
/* ---- RMSNorm over full rows (Megatron layers, the final norm) ---- */                             \
/* y[N,d] = x·rstd·gamma, rstd[N] (f32) = 1/sqrt(mean(x²) + eps); x[N,d], gamma[d] */                \
X(void, rmsnorm_forward, "rmsnorm_forward", (Backend *b, void *y, float *rstd, const void *x,          \
  const void *gamma, int N, int d, float eps), rmsnorm_forward, (b, y, rstd, x, gamma, N, d, eps), 1,   \
  OPC_MEMORY, 4.0 * N * d, es(b) * (2.0 * N * d + d) + 4.0 * N, (void)0)                               \
/* dx[N,d] (+)= ..., dgamma[d] (+)= ... (acc_dx, acc_dgamma: 1 +=, 0 =); dy[N,d], x[N,d], gamma[d],    \
   rstd[N] f32. dx or dgamma may be NULL */                                                          \
X(void, rmsnorm_backward, "rmsnorm_backward", (Backend *b, void *dx, void *dgamma, const void *dy,      \
  const void *x, const void *gamma, const float *rstd, int N, int d, int acc_dx, int acc_dgamma),      \
  rmsnorm_backward, (b, dx, dgamma, dy, x, gamma, rstd, N, d, acc_dx, acc_dgamma), 1, OPC_MEMORY,      \
  10.0 * N * d, es(b) * ((3.0 + (acc_dx != 0)) * N * d + (2.0 + (acc_dgamma != 0)) * d) + 4.0 * N,     \
  (void)0)                                                                                           \
/* ---- RMSNorm of a column-sharded residual (BTP, docs/boost.md) ---- */                            \
/* S[N] = Σ_j x[n,j]² (fp32 accumulation, stored as T); x[N,d] */                                   \
X(void, rowsumsq, "rowsumsq", (Backend *b, void *S, const void *x, int N, int d), rowsumsq,            \
  (b, S, x, N, d), 1, OPC_MEMORY, 2.0 * N * d, es(b) * ((double)N * d + N), (void)0)                  \
/* y[N,d] = x·gamma / sqrt(S/width + eps): width = d_full gives RMSNorm of the full row (S          \
   all-reduced), width = d gives online RMSNorm's locally scaled ŷ. S[N] T, gamma[d] */             \
X(void, rownorm, "rownorm", (Backend *b, void *y, const void *x, const void *gamma, const void *S,      \
  int N, int d, int width, float eps), rownorm, (b, y, x, gamma, S, N, d, width, eps), 1, OPC_MEMORY,  \
  2.0 * N * d, es(b) * (2.0 * N * d + d + N), (void)0)                                                 \
/* Each payload row n of the bottleneck P (view v) *= sqrt(S[n]/width + eps)^power, power = +1       \
   (online step 5: undo the local scale) or -1 (step 7: divide by the full row's rms) */             \
X(void, scale_rows, "scale_rows", (Backend *b, void *P, const SlotView *v, const void *S, int width,    \
  float eps, int power), scale_rows, (b, P, v, S, width, eps, power), 1, OPC_MEMORY, slot_elems(v),   \
  es(b) * (2.0 * slot_elems(v) + v->N), (void)0)                                                       \
/* dot[N] (f32) = Σ over the G slots and r columns of X ⊙ Y (views v): the c-term Σ dP·P */         \
X(void, rowdot, "rowdot", (Backend *b, float *dot, const void *X, const void *Y, const SlotView *v),    \
  rowdot, (b, dot, X, Y, v), 1, OPC_MEMORY, 2.0 * slot_elems(v), es(b) * 2.0 * slot_elems(v) + 4.0 * v->N,\
  (void)0)                                                                                           \
/* Backward of a = x·rstd·gamma with rstd = 1/sqrt(S/d_full + eps) given dot[n] = Σ_full-row da·a:  \
     dx[N,d] += rstd·(gamma⊙da − x·rstd·dot/d_full),  dgamma[d] (+)= Σ_n da⊙x·rstd (acc_dgamma)      \
   da, x [N,d], gamma[d], S[N] T, dot[N] f32 */                                                      \
X(void, sharded_rmsnorm_backward, "sharded_rmsnorm_backward", (Backend *b, void *dx, void *dgamma,     \
  const void *da, const void *x, const void *gamma, const void *S, const float *dot, int N, int d,      \
  int d_full, float eps, int acc_dgamma), sharded_rmsnorm_backward, (b, dx, dgamma, da, x, gamma, S,    \
  dot, N, d, d_full, eps, acc_dgamma), 1, OPC_MEMORY, 8.0 * N * d,                                    \
  es(b) * (4.0 * N * d + (2.0 + (acc_dgamma != 0)) * d + N) + 4.0 * N, (void)0)                       \
/* ---- elementwise ---- */                                                                          \
/* y[n] = x·sigmoid(x) */                                                                            \
X(void, silu_forward, "silu_forward", (Backend *b, void *y, const void *x, size_t n), silu_forward,     \
  (b, y, x, n), 1, OPC_MEMORY, 4.0 * n, es(b) * 2.0 * n, (void)0)                                     \
/* dx[n] = dy·silu'(x) (overwritten; dy, x read, dx written) */                                      \
X(void, silu_backward, "silu_backward", (Backend *b, void *dx, const void *dy, const void *x, size_t n),\
  silu_backward, (b, dx, dy, x, n), 1, OPC_MEMORY, 8.0 * n, es(b) * 3.0 * n, (void)0)                 \
/* z[n] = (gate_silu ? silu(g) : g)·u */                                                             \
X(void, swiglu_forward, "swiglu_forward", (Backend *b, void *z, const void *g, const void *u, size_t n, \
  int gate_silu), swiglu_forward, (b, z, g, u, n, gate_silu), 1, OPC_MEMORY, 5.0 * n, es(b) * 3.0 * n,  \
  (void)0)                                                                                           \
/* dg[n] = dz·u·act'(g), du[n] = dz·act(g), overwritten (either may be NULL; dz, g, u read) */       \
X(void, swiglu_backward, "swiglu_backward", (Backend *b, void *dg, void *du, const void *dz,            \
  const void *g, const void *u, size_t n, int gate_silu), swiglu_backward,                           \
  (b, dg, du, dz, g, u, n, gate_silu), 1, OPC_MEMORY, 12.0 * n, es(b) * 5.0 * n, (void)0)              \
/* x[n] += y[n] */                                                                                   \
X(void, add, "add", (Backend *b, void *x, const void *y, size_t n), add, (b, x, y, n), 1, OPC_MEMORY,   \
  (double)n, es(b) * 3.0 * n, (void)0)                                                                \
/* x[n] *= s */                                                                                      \
X(void, scale, "scale", (Backend *b, void *x, float s, size_t n), scale, (b, x, s, n), 1, OPC_MEMORY,   \
  (double)n, es(b) * 2.0 * n, (void)0)                                                                \
/* ---- attention ---- */                                                                            \
/* x[B,T,H,hd] rotated in place (non-interleaved halves, angle t·theta^(-2i/hd)) */                 \
X(void, rope_forward, "rope_forward", (Backend *b, void *x, int B, int T, int H, int hd, float theta),  \
  rope, (b, x, B, T, H, hd, theta, 0), 1, OPC_MEMORY, 3.0 * rope_elems(B, T, H, hd),                   \
  es(b) * 2.0 * rope_elems(B, T, H, hd), (void)0)                                                      \
/* dx[B,T,H,hd] rotated back in place */                                                             \
X(void, rope_backward, "rope_backward", (Backend *b, void *dx, int B, int T, int H, int hd,            \
  float theta), rope, (b, dx, B, T, H, hd, theta, 1), 1, OPC_MEMORY, 3.0 * rope_elems(B, T, H, hd),    \
  es(b) * 2.0 * rope_elems(B, T, H, hd), (void)0)                                                      \
/* Causal GQA flash attention (head h uses kv head h/(H/Hkv), scale 1/sqrt(hd)): tiles of           \
   queries against tiles of keys with an online softmax; saves only lse[B,H,T] (f32, the            \
   row log-sum-exp of the scaled scores). out[B,T,H,hd]; q[B,T,H,hd]; k, v[B,T,Hkv,hd].              \
   Bytes: q, out; k, v */                                                                            \
X(void, attention_forward, "attention_forward", (Backend *b, void *out, float *lse, const void *q,      \
  const void *k, const void *v, int B, int T, int H, int Hkv, int hd), attention_forward,             \
  (b, out, lse, q, k, v, B, T, H, Hkv, hd), 1, OPC_ATTENTION, flops_attention_forward(B, T, H, hd),    \
  es(b) * ((double)B * T * hd * (2.0 * H + 2.0 * Hkv)) + 4.0 * B * H * T,                             \
  (i.M = B * H, i.N = T, i.K = hd))                                                                  \
/* Backward, recomputing the probabilities tile by tile from lse, with D = rowsum(dout⊙out):        \
   dq[B,T,H,hd] =, dk, dv[B,T,Hkv,hd] = (stored, not read). Bytes: reads q k v out dout, writes      \
   dq dk dv */                                                                                       \
X(void, attention_backward, "attention_backward", (Backend *b, void *dq, void *dk, void *dv,           \
  const void *dout, const void *out, const void *q, const void *k, const void *v, const float *lse,    \
  int B, int T, int H, int Hkv, int hd), attention_backward,                                         \
  (b, dq, dk, dv, dout, out, q, k, v, lse, B, T, H, Hkv, hd), 1, OPC_ATTENTION,                       \
  flops_attention_backward(B, T, H, hd),                                                             \
  es(b) * ((double)B * T * hd * (3.0 * H + 2.0 * Hkv + H + 2.0 * Hkv)) + 4.0 * B * H * T,               \
  (i.M = B * H, i.N = T, i.K = hd))                                                                  \
/* ---- vocabulary-parallel embedding and loss (rows/columns [v0, v0+V) held here) ---- */          \
/* out[N,d] = wte[tokens[i] - v0] for tokens in range, else 0; tokens[N] i32, wte[V,d] */            \
X(void, embedding_forward, "embedding_forward", (Backend *b, void *out, const int32_t *tokens,         \
  const void *wte, int N, int d, int v0, int V), embedding_forward, (b, out, tokens, wte, N, d, v0, V), \
  1, OPC_MEMORY, 0, es(b) * 2.0 * N * d + 4.0 * N, (void)0)                                            \
/* dwte[V,d] += the rows of dout[N,d] whose token is in range (deterministic order); acc 0: every   \
   row of dwte is stored once (the sum of its tokens' rows, 0 for a row no token hits). nz: NULL,  \
   or a hint (host [V]) that the rows r with nz[r] = 0 hold zeros already: with acc 0 a back end    \
   may leave those no token hits unwritten (the same result; bytes count every row) */               \
X(void, embedding_backward, "embedding_backward", (Backend *b, void *dwte, const void *dout,           \
  const int32_t *tokens, int N, int d, int v0, int V, int acc, const unsigned char *nz),             \
  embedding_backward, (b, dwte, dout, tokens, N, d, v0, V, acc, nz), 1, OPC_MEMORY, (double)N * d,   \
  es(b) * (acc ? 3.0 * N * d : (double)N * d + (double)V * d) + 4.0 * N, (void)0)                    \
/* One pass over logits[N,V] (local columns): lmax[N] f32 = local row max, sumexp[N] f64 =            \
   Σ exp(x − lmax), tlogit[N] f64 = logits[n, target − v0] if the target is local, else 0 */         \
X(void, xent_forward, "xent_forward", (Backend *b, float *lmax, double *sumexp, double *tlogit,        \
  const void *logits, const int32_t *targets, int N, int V, int v0), xent_forward,                   \
  (b, lmax, sumexp, tlogit, logits, targets, N, V, v0), 1, OPC_MEMORY, 4.0 * N * V,                   \
  es(b) * (double)N * V + 24.0 * N, (void)0)                                                           \
/* After the all-reduce of the maxima (gmax): sumexp[n] *= exp(lmax − gmax)  (tp > 1) */             \
X(void, xent_rescale, "xent_rescale", (Backend *b, double *sumexp, const float *lmax, const float *gmax,\
  int N), xent_rescale, (b, sumexp, lmax, gmax, N), 1, OPC_MEMORY, 3.0 * N, 24.0 * N, (void)0)          \
/* losses[N] f32 = log(sumexp) + gmax − tlogit; loss[0] (f64, this back end's memory) = Σ losses in  \
   double (row order), added to loss[0] when accumulate, else written. The sum stays on the back    \
   end: no host synchronisation (the caller reads it once per step, model_loss_read) */             \
X(void, xent_loss, "xent_loss", (Backend *b, double *loss, float *losses, const double *sumexp,         \
  const float *gmax, const double *tlogit, int N, int accumulate), xent_loss,                          \
  (b, loss, losses, sumexp, gmax, tlogit, N, accumulate), 1, OPC_MEMORY, 3.0 * N, 28.0 * N, (void)0)    \
/* dlogits[N,V] = scale·(softmax − onehot(target)) over the local columns (may alias logits) */      \
X(void, xent_backward, "xent_backward", (Backend *b, void *dlogits, const void *logits,                \
  const float *gmax, const double *sumexp, const int32_t *targets, int N, int V, int v0, float scale),  \
  xent_backward, (b, dlogits, logits, gmax, sumexp, targets, N, V, v0, scale), 1, OPC_MEMORY,          \
  3.0 * N * V, es(b) * 2.0 * N * V + 16.0 * N, (void)0)                                                \
/* tp = 1 (the whole vocabulary here, so no all-reduce sits between the loss and its gradient):      \
   xent_forward and xent_backward in ONE pass over each row of logits[N,V], the row read from       \
   memory once while it sits in cache — lmax, sumexp, tlogit as xent_forward, then dlogits          \
   = scale·(softmax − onehot) with gmax = lmax, the same bits as the two ops (may alias logits) */   \
X(void, xent_fused, "xent_fused", (Backend *b, void *dlogits, float *lmax, double *sumexp,            \
  double *tlogit, const void *logits, const int32_t *targets, int N, int V, int v0, float scale),      \
  xent_fused, (b, dlogits, lmax, sumexp, tlogit, logits, targets, N, V, v0, scale), 1, OPC_MEMORY,    \
  7.0 * N * V, es(b) * 2.0 * N * V + 28.0 * N, (void)0)                                                \
/* ---- optimizer ---- */                                                                            \
/* Σ_i w[i]·Σ_j x_i[j]² in double over n tensors of the compute dtype (one launch); live: NULL or  \
   which rows of one tensor may be nonzero (SumsqLive; the bytes count every row) */                  \
X(double, sumsq_multi, "sumsq_multi", (Backend *b, int n, const void *const *x, const size_t *len,     \
  const double *w, const SumsqLive *live), sumsq_multi, (b, n, x, len, w, live), n != 0, OPC_MEMORY,   \
  2.0 * len_total(n, len), es(b) * len_total(n, len), (void)0)                                        \
/* AdamW (decoupled weight decay, bias corrections in double) on n tensors (one launch), each        \
   gradient read once and multiplied by h->grad_scale (the clipping factor, a finite > 0) as it      \
   is read. Bytes: master, m, v read + written (fp32), grad read; the compute-dtype copy written */  \
X(void, adamw_multi, "adamw", (Backend *b, int n, const AdamWSpan *spans, const AdamWHyper *h),         \
  adamw_multi, (b, n, spans, h), n, OPC_MEMORY, 12.0 * adamw_total(n, spans, h),                      \
  adamw_bytes(b, n, spans), (void)0)                                                                   \
/* ---- LaX latent crossing (docs/lax.md §3) ----                                                    \
   Strided row views: row n of a [N, r] view starts at element n·ld (a slot of a grouped BTP         \
   bottleneck [N, G·r] has ld = G·r). Statistics mean, rstd are f32 [N].                             \
   LayerNorm over r: y = (x − μ)·rstd ⊙ gamma + beta, μ and the biased variance of each row,         \
   rstd = 1/sqrt(var + eps). y may be x (same ld). gamma, beta [r] */                                \
X(void, layernorm_forward, "layernorm_forward", (Backend *b, void *y, int ldy, float *mean, float *rstd,\
  const void *x, int ldx, const void *gamma, const void *beta, int N, int r, float eps),              \
  layernorm_forward, (b, y, ldy, mean, rstd, x, ldx, gamma, beta, N, r, eps), 1, OPC_MEMORY,           \
  8.0 * ((double)N * r), es(b) * (2.0 * ((double)N * r) + 2.0 * r) + 8.0 * N, (void)0)                 \
/* x̂ = (x − μ)·rstd, h = dy ⊙ gamma: dx (+)= rstd·(h − mean_r(h) − x̂·mean_r(h ⊙ x̂)) (acc_dx),      \
   dgamma[r] (+)= Σ_n dy ⊙ x̂, dbeta[r] (+)= Σ_n dy (acc_dw) (any output may be NULL) */             \
X(void, layernorm_backward, "layernorm_backward", (Backend *b, void *dx, int lddx, void *dgamma,       \
  void *dbeta, const void *dy, int lddy, const void *x, int ldx, const float *mean, const float *rstd,  \
  const void *gamma, int N, int r, int acc_dx, int acc_dw), layernorm_backward,                       \
  (b, dx, lddx, dgamma, dbeta, dy, lddy, x, ldx, mean, rstd, gamma, N, r, acc_dx, acc_dw), 1,          \
  OPC_MEMORY, 14.0 * ((double)N * r),                                                                \
  es(b) * ((3.0 + (acc_dx != 0)) * ((double)N * r) + (3.0 + 2.0 * (acc_dw != 0)) * r) + 8.0 * N, (void)0) \
/* Dense gate: out[N,r] += z[N,r] @ W[r,r] + bias[r] */                                              \
X(void, dense_gate_forward, "dense_gate_forward", (Backend *b, void *out, int ldo, const void *z,      \
  int ldz, const void *W, const void *bias, int N, int r), dense_gate_forward,                       \
  (b, out, ldo, z, ldz, W, bias, N, r), 1, OPC_GEMM, flops_dense_gate_forward(N, r),                   \
  es(b) * (3.0 * ((double)N * r) + (double)r * r + r), (i.M = N, i.N = r, i.K = r))                    \
/* dz[N,r] (+)= dout @ Wᵀ (acc_dz), dW[r,r] (+)= zᵀ dout, dbias[r] (+)= Σ_n dout (acc_dw) (any      \
   output may be NULL) */                                                                            \
X(void, dense_gate_backward, "dense_gate_backward", (Backend *b, void *dz, int lddz, void *dW,         \
  void *dbias, const void *dout, int lddo, const void *z, int ldz, const void *W, int N, int r,        \
  int acc_dz, int acc_dw), dense_gate_backward,                                                      \
  (b, dz, lddz, dW, dbias, dout, lddo, z, ldz, W, N, r, acc_dz, acc_dw), 1, OPC_GEMM,                 \
  flops_dense_gate_backward(N, r), es(b) * ((4.0 + (acc_dz != 0)) * ((double)N * r)                   \
  + (2.0 + (acc_dw != 0)) * (double)r * r + (1.0 + (acc_dw != 0)) * r),                              \
  (i.M = N, i.N = r, i.K = r, i.count = 2))                                                          \
/* Kronecker gate: out[N, r1·r2] += z @ (G1 ⊗ G2) with G1 [r1,r1], G2 [r2,r2]: per token, z         \
   viewed row-major as Z [r1, r2], out += vec(G1ᵀ·Z·G2) (two small products; no r×r matrix) */      \
X(void, kron_gate_forward, "kron_gate_forward", (Backend *b, void *out, int ldo, const void *z,        \
  int ldz, const void *G1, const void *G2, int N, int r1, int r2), kron_gate_forward,                \
  (b, out, ldo, z, ldz, G1, G2, N, r1, r2), 1, OPC_GEMM, flops_kron_gate_forward(N, r1, r2),           \
  es(b) * (3.0 * ((double)N * r1 * r2) + (double)r1 * r1 + (double)r2 * r2),                           \
  (i.M = N * r1, i.N = r2, i.K = r2, i.count = 2))                                                   \
/* Per token, dO = dout as [r1, r2], T = Z·G2, dT = G1·dO: dz (+)= dT·G2ᵀ (acc_dz), dG1 (+)= Σ_n     \
   T·dOᵀ, dG2 (+)= Σ_n Zᵀ·dT (acc_dw) (any output may be NULL) */                                    \
X(void, kron_gate_backward, "kron_gate_backward", (Backend *b, void *dz, int lddz, void *dG1,          \
  void *dG2, const void *dout, int lddo, const void *z, int ldz, const void *G1, const void *G2, int N, \
  int r1, int r2, int acc_dz, int acc_dw), kron_gate_backward,                                       \
  (b, dz, lddz, dG1, dG2, dout, lddo, z, ldz, G1, G2, N, r1, r2, acc_dz, acc_dw),                      \
  1, OPC_GEMM, flops_kron_gate_backward(N, r1, r2),                                                  \
  es(b) * ((3.0 + (acc_dz != 0)) * ((double)N * r1 * r2)                                              \
  + (1.0 + (acc_dw != 0)) * ((double)r1 * r1 + (double)r2 * r2)),                                      \
  (i.M = N * r1, i.N = r2, i.K = r2, i.count = 5))

#define OP_DECLARE(RET, name, label, params, ...) RET op_##name params;
OP_FRONT_ENDS(OP_DECLARE)
#undef OP_DECLARE

// Wait for every queued op (a no-op on host back ends). Not an op: nothing is reported.
void op_sync(Backend *b);
