// op_flops.h — the FLOPs of one op: layer (1) of the one FLOP module (its convention and
// layer (2), the model's FLOPs per token, are in model/flops.h). These formulas sit in
// backend/ because backend/ops.c reports them to the observer for every GEMM-class and
// attention op, and backend/ may not include model/ (model/ includes backend/: the include
// rules of docs/architecture.md, checked by tests/t_layers.sh); model/flops.c sums them.
#pragma once

// ---- one op --------------------------------------------------------------------------
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

