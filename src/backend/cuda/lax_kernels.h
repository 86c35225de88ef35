// lax_kernels.h — the CUDA kernels of LaX's crossing ops (docs/lax.md §3; lax_kernels.cu).
// Each function has exactly the signature of its BackendOps entry (backend.h), so the CUDA
// op table takes them as they are:
//   .layernorm_forward   = cuda_lax_layernorm_forward,
//   .layernorm_backward  = cuda_lax_layernorm_backward,
//   .dense_gate_forward  = cuda_lax_dense_gate_forward,
//   .dense_gate_backward = cuda_lax_dense_gate_backward,
//   .kron_gate_forward   = cuda_lax_kron_gate_forward,
//   .kron_gate_backward  = cuda_lax_kron_gate_backward,
// They run on backend_cuda_stream(b) in b's compute dtype (fp32, or bf16 storage with fp32
// math and one rounding per output, as backend/cpu/cpu_bf16.c does on the host); pointers are
// device pointers; mean/rstd are fp32. The arithmetic is backend/cpu/lax.c's (the reference),
// with every reduction in a fixed order (no float atomics): bit-identical from run to run.
#pragma once
#include "../backend.h"

#ifdef __cplusplus
extern "C" {
#endif

void cuda_lax_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                                const void *gamma, const void *beta, int N, int r, float eps);
void cuda_lax_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                                 const void *x, int ldx, const float *mean, const float *rstd, const void *gamma,
                                 int N, int r, int acc_dx, int acc_dw);
void cuda_lax_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W,
                                 const void *bias, int N, int r);
void cuda_lax_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                                  const void *z, int ldz, const void *W, int N, int r, int acc_dz, int acc_dw);
void cuda_lax_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1,
                                const void *G2, int N, int r1, int r2);
void cuda_lax_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                                 const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2,
                                 int acc_dz, int acc_dw);

#ifdef __cplusplus
}
#endif
