// matmul_t.c — products with a weight stored transposed, Wt [dout, din]: y = x @ Wt^T.
// Used by the tied LM head, whose weight is the embedding table [V,d].
#include <cblas.h>
#include "ops.h"

// y[N,dout] (+)= x[N,din] @ Wt[dout,din]^T
void matmul_forward_wt(float *y, const float *x, const float *Wt, int N, int din, int dout, int accumulate) {
    if (ops_dry_run) return;   // accounting mode: no math
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, dout, din,
                1.0f, x, din, Wt, din, accumulate ? 1.0f : 0.0f, y, dout);
}

// dx[N,din] += dy[N,dout] @ Wt ; dWt[dout,din] += dy^T @ x
void matmul_backward_wt(float *dx, float *dWt, const float *dy, const float *x, const float *Wt,
                        int N, int din, int dout) {
    if (ops_dry_run) return;   // accounting mode: no math
    if (dx) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, din, dout,
                        1.0f, dy, dout, Wt, din, 1.0f, dx, din);
    if (dWt) cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dout, din, N,
                         1.0f, dy, dout, x, din, 1.0f, dWt, din);
}
