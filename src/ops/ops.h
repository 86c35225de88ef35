// ops.h — every op as a forward/backward pair of free functions on raw fp32 pointers.
//
// Conventions (row-vector form, as in the paper notes):
//   N = number of tokens (B*T). Linear weights are stored [d_in, d_out]: y = x @ W.
//   Every *_backward ACCUMULATES (+=) into its input gradients and weight gradients;
//   the caller zeroes them. Shapes of every pointer are in the comment above it.
//   Matrix products go to OpenBLAS sgemm; elementwise work is OpenMP-parallel.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Accounting mode (build/bench_comm): when set, every op returns at once without
// touching memory, so the model drivers can run their control flow — and issue their
// accounted collectives — at paper scale without buffers and without the math.
extern int ops_dry_run;

// ---- matmul (ops/matmul.c) --------------------------------------------------
// y[N,dout] = x[N,din] @ W[din,dout]   (accumulate=1: y += ...)
void matmul_forward(float *y, const float *x, const float *W, int N, int din, int dout, int accumulate);
// dx[N,din] += dy[N,dout] @ W^T ; dW[din,dout] += x^T @ dy. dx or dW may be NULL (skipped).
void matmul_backward(float *dx, float *dW, const float *dy, const float *x, const float *W,
                     int N, int din, int dout);

// Transposed-weight variants (ops/matmul_t.c), Wt [dout,din] — the tied LM head:
// y[N,dout] (+)= x[N,din] @ Wt^T ; dx[N,din] += dy @ Wt ; dWt[dout,din] += dy^T @ x
void matmul_forward_wt(float *y, const float *x, const float *Wt, int N, int din, int dout, int accumulate);
void matmul_backward_wt(float *dx, float *dWt, const float *dy, const float *x, const float *Wt,
                        int N, int din, int dout);

// ---- RMSNorm (ops/rmsnorm.c) -------------------------------------------------
// y[N,d] = x / sqrt(mean(x^2) + eps) * gamma[d];  rstd[N] saved for backward.
void rmsnorm_forward(float *y, float *rstd, const float *x, const float *gamma, int N, int d, float eps);
// dx[N,d] += ..., dgamma[d] += ...
void rmsnorm_backward(float *dx, float *dgamma, const float *dy, const float *x, const float *gamma,
                      const float *rstd, int N, int d);

// ---- activations (ops/activation.c) -----------------------------------------
// y[n] = silu(x) = x * sigmoid(x)
void silu_forward(float *y, const float *x, size_t n);
// dx[n] += dy * silu'(x)
void silu_backward(float *dx, const float *dy, const float *x, size_t n);
// z[n] = (gate_silu ? silu(g) : g) * u
void swiglu_forward(float *z, const float *g, const float *u, size_t n, int gate_silu);
// dg[n] += ..., du[n] += ...
void swiglu_backward(float *dg, float *du, const float *dz, const float *g, const float *u, size_t n, int gate_silu);
// x[n] += y[n]  (residual add)
void add_inplace(float *x, const float *y, size_t n);

// ---- RoPE (ops/rope.c) --------------------------------------------------------
// x[B,T,H,hd] rotated in place; non-interleaved halves: pairs (i, i+hd/2),
// angle = t * theta^(-2i/hd) for position t in 0..T-1.
void rope_forward(float *x, int B, int T, int H, int hd, float theta);
// Gradient of rope: rotate dx[B,T,H,hd] in place by the opposite angle.
void rope_backward(float *dx, int B, int T, int H, int hd, float theta);

// ---- causal attention (ops/attention.c) -------------------------------------
// q[B,T,H,hd], k,v[B,T,Hkv,hd] (H % Hkv == 0; head h uses kv head h/(H/Hkv)),
// out[B,T,H,hd], att[B,H,T,T] softmax probabilities (saved; upper triangle 0).
// Scale 1/sqrt(hd).
void attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                       int B, int T, int H, int Hkv, int hd);
// dq[B,T,H,hd] += ..., dk,dv[B,T,Hkv,hd] += ...
void attention_backward(float *dq, float *dk, float *dv, const float *dout,
                        const float *q, const float *k, const float *v, const float *att,
                        int B, int T, int H, int Hkv, int hd);

// ---- embedding (ops/embedding.c) --------------------------------------------
// out[N,d] = wte[tokens[i], :]   (wte [V,d])
void embedding_forward(float *out, const int32_t *tokens, const float *wte, int N, int d);
// dwte[V,d] += scatter-add of dout[N,d]
void embedding_backward(float *dwte, const float *dout, const int32_t *tokens, int N, int d);

// ---- cross-entropy (ops/crossentropy.c) --------------------------------------
// logits[N,V] -> losses[N] = -log softmax(logits)[target]. Returns the sum of losses
// (double). If dlogits != NULL it is written (may alias logits: in place) with
// dscale * (softmax - onehot(target)), i.e. the gradient of dscale * sum(losses).
double crossentropy_forward_backward(float *dlogits, float *losses, const float *logits,
                                     const int32_t *targets, int N, int V, float dscale);

// ---- vocabulary-parallel pieces (ops/vocab_parallel.c) --------------------------
// Each TP rank holds vocabulary rows/columns [v0, v0+V); the collectives between the
// pieces are the caller's (see model.c).
void embedding_forward_shard(float *out, const int32_t *tokens, const float *wte_local, int N, int d, int v0, int V);
void embedding_backward_shard(float *dwte_local, const float *dout, const int32_t *tokens, int N, int d, int v0, int V);
void xent_shard_max(float *row_max, const float *logits, int N, int V);
void xent_shard_sums(double *sumexp, double *target_logit, const float *logits, const float *row_max,
                     const int32_t *targets, int N, int V, int v0);
void xent_shard_grad(float *dlogits, const float *logits, const float *row_max, const double *sumexp,
                     const int32_t *targets, int N, int V, int v0, float scale);

// ---- AdamW (ops/adamw.c) -----------------------------------------------------
// Decoupled weight decay: p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p); t is the
// 1-based step for bias correction. grad is read-only.
void adamw_update(float *param, const float *grad, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int t);
// Sum of squares in double (for global grad norm).
double sumsq(const float *x, size_t n);
void scale_inplace(float *x, float s, size_t n);
