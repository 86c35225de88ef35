// flops.h — the one FLOP module: every FLOP formula of the engine, once.
//
// Two layers, the second built from the first:
//  (1) the FLOPs of one op (static inline, backend/op_flops.h): what backend/ops.c reports to the
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
#include "../backend/op_flops.h"   // (1): the FLOPs of one op

// ---- (1) one op: backend/op_flops.h (flops_gemm, flops_attention_*, the LaX gates) ------

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
