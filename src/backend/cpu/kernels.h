// kernels.h — the CPU back end's fp32 kernels: free functions on raw float pointers
// (OpenBLAS sgemm for products, OpenMP for the rest). backend/cpu/cpu.c binds them into the
// op table; backend/cpu/cpu_bf16.c wraps them for bf16 storage. The model never calls these
// directly: it calls the op front ends of backend/ops.h.
//
// Conventions (row-vector form): N = tokens (B·T), linear weights [d_in, d_out].
// Gradient outputs follow ops.h's contract: an acc flag 1 adds (+=), 0 stores without reading
// (exactly the sum the += would give on a zeroed buffer). Shapes of every pointer are in the
// comment above each function. Every reduction has a fixed order
// (no float atomics, no order-dependent OpenMP reductions): results are bit-identical for
// any thread count.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "../backend.h"

// ---- RMSNorm over full rows (rmsnorm.c) ----------------------------------------------
// y[N,d] = x / sqrt(mean(x^2) + eps) * gamma[d];  rstd[N] saved for backward.
void cpu_rmsnorm_forward(float *y, float *rstd, const float *x, const float *gamma, int N, int d, float eps);
// dx[N,d] (+)= ..., dgamma[d] (+)= ... (acc_dx, acc_dgamma; either may be NULL)
void cpu_rmsnorm_backward(float *dx, float *dgamma, const float *dy, const float *x, const float *gamma,
                      const float *rstd, int N, int d, int acc_dx, int acc_dgamma);

// ---- RMSNorm of a column-sharded residual (rmsnorm_sharded.c; BTP, docs/boost.md) -------
// S[N] = Σ_j x[n,j]² (double accumulation); x[N,d]
void cpu_rowsumsq(float *S, const float *x, int N, int d);
// y[N,d] = x·gamma / sqrt(S/width + eps); S[N], gamma[d]
void cpu_rownorm(float *y, const float *x, const float *gamma, const float *S, int N, int d, int width, float eps);
// Payload rows of the bottleneck view v in P: row n *= sqrt(S[n]/width + eps)^power (power ±1)
void cpu_scale_rows(float *P, const SlotView *v, const float *S, int width, float eps, int power);
// dot[N] = Σ_slots Σ_k X·Y over the view v (double accumulation)
void cpu_rowdot(float *dot, const float *X, const float *Y, const SlotView *v);
// rstd = 1/sqrt(S/d_full + eps), c = dot/d_full:
// dx[N,d] += rstd·(gamma⊙da − x·rstd·c);  dgamma[d] (+)= Σ_n da⊙x·rstd (acc_dgamma)
void cpu_sharded_rmsnorm_backward(float *dx, float *dgamma, const float *da, const float *x, const float *gamma,
                              const float *S, const float *dot, int N, int d, int d_full, float eps, int acc_dgamma);

// ---- elementwise (activation.c) -------------------------------------------------------
// y[n] = silu(x) = x * sigmoid(x)
void cpu_silu_forward(float *y, const float *x, size_t n);
// dx[n] = dy * silu'(x) (overwritten)
void cpu_silu_backward(float *dx, const float *dy, const float *x, size_t n);
// z[n] = (gate_silu ? silu(g) : g) * u
void cpu_swiglu_forward(float *z, const float *g, const float *u, size_t n, int gate_silu);
// dg[n] = dz * u * act'(g), du[n] = dz * act(g) (overwritten; either may be NULL)
void cpu_swiglu_backward(float *dg, float *du, const float *dz, const float *g, const float *u, size_t n, int gate_silu);
// x[n] += y[n]
void cpu_add_inplace(float *x, const float *y, size_t n);
// x[n] *= s
void cpu_scale_inplace(float *x, float s, size_t n);
// dst[rows,cols] (ldd) += src[rows,cols] (lds)
void cpu_add2d(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols);

// ---- RoPE (rope.c) --------------------------------------------------------------------
// x[B,T,H,hd] rotated in place; non-interleaved halves: pairs (i, i+hd/2),
// angle = t * theta^(-2i/hd) for position t in 0..T-1.
void cpu_rope_forward(float *x, int B, int T, int H, int hd, float theta);
// Gradient of rope: rotate dx[B,T,H,hd] in place by the opposite angle.
void cpu_rope_backward(float *dx, int B, int T, int H, int hd, float theta);

// ---- causal flash attention with grouped KV heads (attention.c) -----------------------
// q[B,T,H,hd], k,v[B,T,Hkv,hd] (H % Hkv == 0; head h uses kv head h/(H/Hkv)), scale
// 1/sqrt(hd). out[B,T,H,hd]; lse[B,H,T] = log Σ_j exp(score) of each query row (saved).
void cpu_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                       int B, int T, int H, int Hkv, int hd);
// dq[B,T,H,hd] =, dk,dv[B,T,Hkv,hd] = (stored, not read); the probabilities are recomputed from lse.
void cpu_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *out,
                        const float *q, const float *k, const float *v, const float *lse,
                        int B, int T, int H, int Hkv, int hd);

// ---- vocabulary-parallel embedding and cross-entropy (vocab_parallel.c) ---------------
// Each TP rank holds vocabulary rows/columns [v0, v0+V); v0 = 0, V = vocab is the whole.
// out[N,d] = wte_local[tokens[i]-v0] if tokens[i] in [v0,v0+V), else 0
void cpu_embedding_forward_shard(float *out, const int32_t *tokens, const float *wte_local, int N, int d, int v0, int V);
// dwte_local[V,d] += dout rows of tokens in range, each row summed in token order (deterministic);
// acc 0: every row stored once (its tokens' sum, or 0), except with nz (NULL: none) the rows no
// token hits and nz[r] = 0 marks as zero already: not written
void cpu_embedding_backward_shard(float *dwte_local, const float *dout, const int32_t *tokens, int N, int d, int v0, int V,
                              int acc, const unsigned char *nz);
// lmax[N] = local row max, sumexp[N] = Σ exp(x - lmax), tlogit[N] = x[target-v0] or 0; logits[N,V]
void cpu_xent_forward(float *lmax, double *sumexp, double *tlogit, const float *logits, const int32_t *targets,
                  int N, int V, int v0);
// sumexp[n] *= exp(lmax[n] - gmax[n])
void cpu_xent_rescale(double *sumexp, const float *lmax, const float *gmax, int N);
// losses[N] = log(sumexp) + gmax - tlogit; returns their sum (double, row order)
double cpu_xent_loss(float *losses, const double *sumexp, const float *gmax, const double *tlogit, int N);
// dlogits[N,V] = scale * (softmax - onehot(target)) over the local columns (may alias logits)
void cpu_xent_backward(float *dlogits, const float *logits, const float *gmax, const double *sumexp,
                   const int32_t *targets, int N, int V, int v0, float scale);
// xent_forward and cpu_xent_backward (gmax = lmax) in one pass per row: the tp = 1 loss (may alias)
void cpu_xent_fused(float *dlogits, float *lmax, double *sumexp, double *tlogit, const float *logits,
                const int32_t *targets, int N, int V, int v0, float scale);

// ---- LaX latent crossing (lax.c; docs/lax.md §3) -----------------------------------------
// Strided row views: row n of a [N, r] view starts at p + n·ld.
// LayerNorm over r: y = (x − μ)·rstd ⊙ gamma + beta, μ and var (biased) per row, rstd =
// 1/sqrt(var + eps); mean[N], rstd[N] saved. y may be x (same ld). gamma, beta [r]
void cpu_layernorm_forward(float *y, int ldy, float *mean, float *rstd, const float *x, int ldx, const float *gamma,
                       const float *beta, int N, int r, float eps);
// dx (+)= rstd·(h − mean_r(h) − x̂·mean_r(h⊙x̂)) with h = dy⊙gamma, x̂ = (x−μ)·rstd (acc_dx);
// dgamma (+)= Σ_n dy⊙x̂, dbeta (+)= Σ_n dy (acc_dw) (any output may be NULL)
void cpu_layernorm_backward(float *dx, int lddx, float *dgamma, float *dbeta, const float *dy, int lddy, const float *x,
                        int ldx, const float *mean, const float *rstd, const float *gamma, int N, int r,
                        int acc_dx, int acc_dw);
// out[N,r] += z[N,r] @ W[r,r] + bias[r]
void cpu_dense_gate_forward(float *out, int ldo, const float *z, int ldz, const float *W, const float *bias, int N, int r);
// dz (+)= dout @ Wᵀ (acc_dz), dW[r,r] (+)= zᵀ dout, dbias[r] (+)= Σ_n dout (acc_dw) (any may be NULL)
void cpu_dense_gate_backward(float *dz, int lddz, float *dW, float *dbias, const float *dout, int lddo, const float *z,
                         int ldz, const float *W, int N, int r, int acc_dz, int acc_dw);
// out[N, r1·r2] += z @ (G1 ⊗ G2): per token, Z = z as [r1, r2] row-major, out = vec(G1ᵀ·Z·G2).
// G1 [r1,r1], G2 [r2,r2]
void cpu_kron_gate_forward(float *out, int ldo, const float *z, int ldz, const float *G1, const float *G2, int N, int r1, int r2);
// dz (+)= dT·G2ᵀ (acc_dz), dG1 (+)= Σ_n T·dOᵀ, dG2 (+)= Σ_n Zᵀ·dT (acc_dw) per token, with dO =
// dout as [r1, r2], T = Z·G2, dT = G1·dO (any output may be NULL)
void cpu_kron_gate_backward(float *dz, int lddz, float *dG1, float *dG2, const float *dout, int lddo, const float *z,
                        int ldz, const float *G1, const float *G2, int N, int r1, int r2, int acc_dz, int acc_dw);

// ---- optimizer (adamw.c) ----------------------------------------------------------------
// Decoupled weight decay: p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p); t is the
// 1-based step for bias correction (in double). grad is read-only and read as grad·gs
// (gs: the clipping factor, 1 = none).
void cpu_adamw_update(float *param, const float *grad, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int t, float gs);
// Sum of squares in double (fixed chunks: bit-identical for any thread count).
double cpu_sumsq(const float *x, size_t n);
// Σ_i w[i]·cpu_sumsq(x[i], len[i]), the same bits, in one parallel region over all the tensors;
// live (NULL: none): tensor live->t is read only in its live rows (backend.h SumsqLive).
double cpu_sumsq_multi(int n, const float *const *x, const size_t *len, const double *w, const SumsqLive *live);
// adamw_update on every span (fp32 grad; param must be NULL: master is the parameter), the
// same bits, in one parallel region over fixed chunks of all the spans.
void cpu_adamw_multi(int n, const AdamWSpan *s, const AdamWHyper *h);
