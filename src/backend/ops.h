// ops.h — the op front ends: what the model drivers and the optimizer call. Each reports
// an OpInfo (FLOPs, bytes, labels) to the back end's observer and runs the back end's
// implementation (none on the dry back end). Forward/backward pairs; every *_backward
// ACCUMULATES (+=) into its gradients, which the caller zeroes, except the elementwise
// silu_backward and swiglu_backward, which OVERWRITE theirs (scratch buffers they write
// first: no zero pass before them). GEMMs take beta = 0 where they are a buffer's first writer.
//
// Conventions (row-vector form, paper notes): N tokens (B·T), a linear y = x @ W with W
// [d_in, d_out]. "T" below is the back end's compute dtype (b->dtype); f32/f64/i32 are
// fixed types. Shapes of every pointer are in the comment above each op.
#pragma once
#include "backend.h"

// ---- buffers ------------------------------------------------------------------------------
// p[n] = 0 (elements of dtype t)
void bk_zero(Backend *b, void *p, size_t n, DType t);
// dst[n] = src[n]
void bk_copy(Backend *b, void *dst, const void *src, size_t n, DType t);
// dst[rows, cols] (row stride ldd) = src[rows, cols] (row stride lds); strides in elements
void bk_copy2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, size_t rows, size_t cols, DType t);
// dst[rows, cols] (ldd) += src[rows, cols] (lds), compute dtype
void bk_add2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols);
// host[n] = src[n] (a host pointer; a copy on host back ends)
void bk_to_host(Backend *b, void *host, const void *src, size_t n, DType t);
// dst[n] = host[n]
void bk_from_host(Backend *b, void *dst, const void *host, size_t n, DType t);
// dst[n] (dtype dt) = src[n] (dtype st), round to nearest even
void bk_cast(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n);
// Wait for every queued op (a no-op on host back ends).
void bk_sync(Backend *b);

// ---- matrix products ------------------------------------------------------------------------
// C[M,N] = alpha·op(A)·op(B) + beta·C (GemmArgs in backend.h), T operands, fp32 accumulation
void op_gemm(Backend *b, Trans ta, Trans tb, int M, int N, int K, float alpha, const void *A, int lda,
             const void *B, int ldb, float beta, void *C, int ldc);
// `count` independent GEMMs in one launch where the back end can (the batched up factors)
void op_gemm_group(Backend *b, int count, const GemmArgs *g);

// ---- RMSNorm over full rows (Megatron layers, the final norm) ---------------------------------
// y[N,d] = x·rstd·gamma, rstd[N] (f32) = 1/sqrt(mean(x²) + eps); x[N,d], gamma[d]
void op_rmsnorm_forward(Backend *b, void *y, float *rstd, const void *x, const void *gamma, int N, int d, float eps);
// dx[N,d] += ..., dgamma[d] += ...; dy[N,d], x[N,d], gamma[d], rstd[N] f32. dx or dgamma may be NULL.
void op_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *dy, const void *x, const void *gamma,
                         const float *rstd, int N, int d);

// ---- RMSNorm of a column-sharded residual (BTP, docs/boost.md) ---------------------------------
// S[N] = Σ_j x[n,j]² (fp32 accumulation, stored as T); x[N,d]
void op_rowsumsq(Backend *b, void *S, const void *x, int N, int d);
// y[N,d] = x·gamma / sqrt(S/width + eps): width = d_full gives RMSNorm of the full row (S
// all-reduced), width = d gives online RMSNorm's locally scaled ŷ. S[N] T, gamma[d]
void op_rownorm(Backend *b, void *y, const void *x, const void *gamma, const void *S, int N, int d, int width, float eps);
// Each payload row n of the bottleneck P (view v) *= sqrt(S[n]/width + eps)^power, power = +1
// (online step 5: undo the local scale) or -1 (step 7: divide by the full row's rms)
void op_scale_rows(Backend *b, void *P, const SlotView *v, const void *S, int width, float eps, int power);
// dot[N] (f32) = Σ over the G slots and r columns of X ⊙ Y (views v): the c-term Σ dP·P
void op_rowdot(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v);
// Backward of a = x·rstd·gamma with rstd = 1/sqrt(S/d_full + eps) given dot[n] = Σ_full-row da·a:
//   dx[N,d] += rstd·(gamma⊙da − x·rstd·dot/d_full),  dgamma[d] += Σ_n da⊙x·rstd
// da, x [N,d], gamma[d], S[N] T, dot[N] f32
void op_sharded_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *da, const void *x,
                                 const void *gamma, const void *S, const float *dot, int N, int d,
                                 int d_full, float eps);

// ---- elementwise ------------------------------------------------------------------------------
// y[n] = x·sigmoid(x)
void op_silu_forward(Backend *b, void *y, const void *x, size_t n);
// dx[n] = dy·silu'(x) (overwritten)
void op_silu_backward(Backend *b, void *dx, const void *dy, const void *x, size_t n);
// z[n] = (gate_silu ? silu(g) : g)·u
void op_swiglu_forward(Backend *b, void *z, const void *g, const void *u, size_t n, int gate_silu);
// dg[n] = dz·u·act'(g), du[n] = dz·act(g), overwritten (either may be NULL)
void op_swiglu_backward(Backend *b, void *dg, void *du, const void *dz, const void *g, const void *u,
                        size_t n, int gate_silu);
// x[n] += y[n]
void op_add(Backend *b, void *x, const void *y, size_t n);
// x[n] *= s
void op_scale(Backend *b, void *x, float s, size_t n);

// ---- attention ----------------------------------------------------------------------------------
// x[B,T,H,hd] rotated in place (non-interleaved halves, angle t·theta^(-2i/hd))
void op_rope_forward(Backend *b, void *x, int B, int T, int H, int hd, float theta);
// dx[B,T,H,hd] rotated back in place
void op_rope_backward(Backend *b, void *dx, int B, int T, int H, int hd, float theta);
// Causal GQA flash attention (head h uses kv head h/(H/Hkv), scale 1/sqrt(hd)): tiles of
// queries against tiles of keys with an online softmax; saves only lse[B,H,T] (f32, the
// row log-sum-exp of the scaled scores). out[B,T,H,hd]; q[B,T,H,hd]; k, v[B,T,Hkv,hd]
void op_attention_forward(Backend *b, void *out, float *lse, const void *q, const void *k, const void *v,
                          int B, int T, int H, int Hkv, int hd);
// Backward, recomputing the probabilities tile by tile from lse, with D = rowsum(dout⊙out):
// dq[B,T,H,hd] +=, dk, dv[B,T,Hkv,hd] +=
void op_attention_backward(Backend *b, void *dq, void *dk, void *dv, const void *dout, const void *out,
                           const void *q, const void *k, const void *v, const float *lse,
                           int B, int T, int H, int Hkv, int hd);

// ---- vocabulary-parallel embedding and loss (rows/columns [v0, v0+V) held here) -----------------
// out[N,d] = wte[tokens[i] - v0] for tokens in range, else 0; tokens[N] i32, wte[V,d]
void op_embedding_forward(Backend *b, void *out, const int32_t *tokens, const void *wte, int N, int d, int v0, int V);
// dwte[V,d] += the rows of dout[N,d] whose token is in range (deterministic order)
void op_embedding_backward(Backend *b, void *dwte, const void *dout, const int32_t *tokens, int N, int d, int v0, int V);
// One pass over logits[N,V] (local columns): lmax[N] f32 = local row max, sumexp[N] f64 =
// Σ exp(x − lmax), tlogit[N] f64 = logits[n, target − v0] if the target is local, else 0
void op_xent_forward(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                     const int32_t *targets, int N, int V, int v0);
// After the all-reduce of the maxima (gmax): sumexp[n] *= exp(lmax − gmax)  (tp > 1)
void op_xent_rescale(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N);
// losses[N] f32 = log(sumexp) + gmax − tlogit; returns Σ losses in double (row order)
double op_xent_loss(Backend *b, float *losses, const double *sumexp, const float *gmax, const double *tlogit, int N);
// dlogits[N,V] = scale·(softmax − onehot(target)) over the local columns (may alias logits)
void op_xent_backward(Backend *b, void *dlogits, const void *logits, const float *gmax, const double *sumexp,
                      const int32_t *targets, int N, int V, int v0, float scale);

// ---- optimizer ------------------------------------------------------------------------------------
// Σ_i w[i]·Σ_j x_i[j]² in double over n tensors of the compute dtype (one launch)
double op_sumsq_multi(Backend *b, int n, const void *const *x, const size_t *len, const double *w);
// AdamW (decoupled weight decay, bias corrections in double) on n tensors (one launch), each
// gradient read once and multiplied by h->grad_scale (the clipping factor, > 0) as it is read
void op_adamw_multi(Backend *b, int n, const AdamWSpan *spans, const AdamWHyper *h);

// ---- LaX latent crossing (docs/lax.md §3) ----------------------------------------------------
// Strided row views: row n of a [N, r] view starts at element n·ld (a slot of a grouped BTP
// bottleneck [N, G·r] has ld = G·r). Statistics mean, rstd are f32 [N].
// LayerNorm over r: y = (x − μ)·rstd ⊙ gamma + beta, μ and the biased variance of each row,
// rstd = 1/sqrt(var + eps). y may be x (same ld). gamma, beta [r]
void op_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                          const void *gamma, const void *beta, int N, int r, float eps);
// x̂ = (x − μ)·rstd, h = dy ⊙ gamma: dx += rstd·(h − mean_r(h) − x̂·mean_r(h ⊙ x̂)),
// dgamma[r] += Σ_n dy ⊙ x̂, dbeta[r] += Σ_n dy (any output may be NULL)
void op_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                           const void *x, int ldx, const float *mean, const float *rstd, const void *gamma, int N, int r);
// Dense gate: out[N,r] += z[N,r] @ W[r,r] + bias[r]
void op_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W, const void *bias,
                           int N, int r);
// dz[N,r] += dout @ Wᵀ, dW[r,r] += zᵀ dout, dbias[r] += Σ_n dout (any output may be NULL)
void op_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                            const void *z, int ldz, const void *W, int N, int r);
// Kronecker gate: out[N, r1·r2] += z @ (G1 ⊗ G2) with G1 [r1,r1], G2 [r2,r2]: per token, z
// viewed row-major as Z [r1, r2], out += vec(G1ᵀ·Z·G2) (two small products; no r×r matrix)
void op_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1, const void *G2,
                          int N, int r1, int r2);
// Per token, dO = dout as [r1, r2], T = Z·G2, dT = G1·dO: dz += dT·G2ᵀ, dG1 += Σ_n T·dOᵀ,
// dG2 += Σ_n Zᵀ·dT (any output may be NULL)
void op_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                           const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2);
