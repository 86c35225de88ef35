// matmul.c — linear layers as row-major OpenBLAS sgemm. Weights are [din, dout] so that
// y = x @ W needs no transpose on the forward path (the hot one at inference).
// Called from the main thread only: OpenBLAS threads each product itself.
#include <cblas.h>
#include "ops.h"

// y[N,dout] (+)= x[N,din] @ W[din,dout]
void matmul_forward(float *y, const float *x, const float *W, int N, int din, int dout, int accumulate) {
    if (ops_dry_run) return;   // accounting mode: no math
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, dout, din,
                1.0f, x, din, W, dout, accumulate ? 1.0f : 0.0f, y, dout);
}

// dx[N,din] += dy[N,dout] @ W[din,dout]^T ; dW[din,dout] += x[N,din]^T @ dy[N,dout].
// beta = 1 makes both accumulate (the caller zeroes; shared weights sum for free).
void matmul_backward(float *dx, float *dW, const float *dy, const float *x, const float *W,
                     int N, int din, int dout) {
    if (ops_dry_run) return;   // accounting mode: no math
    if (dx) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, din, dout,
                        1.0f, dy, dout, W, dout, 1.0f, dx, din);
    if (dW) cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, din, dout, N,
                        1.0f, x, din, dy, dout, 1.0f, dW, dout);
}
