// flops.h — the one FLOP module: every FLOP formula of the engine, once.
//
// Two layers, the second built from the first:
//  (1) the FLOPs of one op (static inline, below): what backend/ops.c reports to the
//      observer for every GEMM-class and attention op (the op profile, the dry back end's
//      records, the simulator's trace);
//  (2) the model's training FLOPs per token (flops.c): the sum of (1) over the GEMM-class
//      and attention ops of one training step's forward and backward, per token — what MFU
//      (train/trainer.c, tools/bench.c), `build/info`, the simulator (tools/simulate.c) and
//      docs/architecture.md use. tests/test_flops.c checks (2) against the sum of the op
//      profile's FLOPs of a dry step for dense, cola, svd and lax.
//
// THE CONVENTION (one, everywhere):
//  * a GEMM C[M,N] = A[M,K]·B[K,N] is 2·M·N·K FLOPs; a linear's backward is two GEMMs (dx and
//    dW), so a matmul with P weights costs 6·P FLOPs per token per step (2 forward, 4 back);
//  * attention is CAUSAL, as the kernels compute it: per sequence and head, the T(T+1)/2
//    (query, key) pairs on or below the diagonal, each 2·hd FLOPs per GEMM-equivalent.
//    Forward: 2 GEMM-equivalents (S = QKᵀ and O = PV); backward: 5 (S recomputed from the
//    saved log-sum-exp, dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q), as the flash kernels
//    do. Per layer and token at sequence length T: (2 + 5)·d·(T+1) FLOPs (d = H·hd);
//  * elementwise work (norms, RoPE, SiLU, softmax statistics, the LaX LayerNorm, the cross
//    entropy) is not counted in (2) (the ops report it, as memory-bound ops, in (1));
//  * LaX gates are GEMM-class ops: their FLOPs below (dense: the bias add counted; kron: its
//    GEMM plan, two products forward, five backward);
//  * activation recomputation (boost.full_recompute, boost.lowrank_ckpt) is NOT model work:
//    (2) counts the step once, the op profile labels recomputed ops PHASE_RECOMPUTE.
// Previously config.c counted attention non-causally (12·L·T·d per token, PaLM's full T×T);
// that is gone: MFU figures from before this convention are not comparable.
#pragma once
#include <stdint.h>
#include "../config/config.h"

// ---- (1) one op --------------------------------------------------------------------------
// C[M,N] = op(A)[M,K]·op(B)[K,N]
static inline double flops_gemm(int M, int N, int K) { return 2.0 * M * N * K; }
// Causal (query, key) pairs of B sequences of length T over H heads: B·H·T(T+1)/2.
static inline double flops_attention_pairs(int B, int T, int H) { return (double)B * H * T * (T + 1.0) / 2.0; }
// Flash attention forward: 2 GEMM-equivalents over the causal pairs, 2·hd FLOPs each.
static inline double flops_attention_forward(int B, int T, int H, int hd) {
    return 2 * 2.0 * hd * flops_attention_pairs(B, T, H);
}
// Its backward: 5 GEMM-equivalents (S recomputed, dP, dV, dQ, dK).
static inline double flops_attention_backward(int B, int T, int H, int hd) {
    return 5 * 2.0 * hd * flops_attention_pairs(B, T, H);
}
// LaX dense gate on N rows of width r: out += z·W + b (the bias add counted), and its
// backward (dz, dW: two products; dbias: a sum).
static inline double flops_dense_gate_forward(int N, int r) { double n = (double)N * r; return 2.0 * n * r + n; }
static inline double flops_dense_gate_backward(int N, int r) { double n = (double)N * r; return 4.0 * n * r + n; }
// LaX kron gate, r = r1·r2 (docs/lax.md §3): forward [N·r1, r2]·[r2, r2] and [N·r2, r1]·[r1, r1];
// backward re-forms T and adds dT, dz, dG1, dG2 (five products).
static inline double flops_kron_gate_forward(int N, int r1, int r2) {
    double n = (double)N * r1 * r2;
    return 2.0 * n * (r1 + r2);
}
static inline double flops_kron_gate_backward(int N, int r1, int r2) {
    double n = (double)N * r1 * r2;
    return 2.0 * n * (2.0 * r1 + 3.0 * r2);
}

// ---- (2) the model -----------------------------------------------------------------------
// Training FLOPs per token of one step (forward + backward, no recompute) of model m at
// sequence length m->seq_len: Σ layers (7 linears, by their kind: kind.h) + the LM head
// 6·d·V (counted when tied: the product still happens) + attention 7·d·(T+1) per layer.
double flops_train_per_token(const ModelConfig *m);
// The GEMM-class part of it alone (linears, LaX gates, LM head): the simulator's check
// that its trace's GEMMs add up.
double flops_gemm_per_token(const ModelConfig *m);
// The attention part: 7·L·d·(T+1) per token.
double flops_attention_per_token(const ModelConfig *m);

// Closed-form parameter counts (independent of the parameter table, so a test can check
// one against the other): every tensor, and the embedding plus the untied LM head.
int64_t model_param_count(const ModelConfig *m);
int64_t model_embedding_param_count(const ModelConfig *m);
