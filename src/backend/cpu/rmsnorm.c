// rmsnorm.c — RMSNorm (LLaMA): y = x * rsqrt(mean(x^2) + eps) * gamma.
// Rows are independent, so OpenMP splits rows; sums of squares are in double because
// d can be thousands wide and the norm feeds every layer.
#include "kernels.h"
#include <math.h>

// y[N,d], rstd[N] (saved for backward), x[N,d], gamma[d]
void cpu_rmsnorm_forward(float *y, float *rstd, const float *x, const float *gamma, int N, int d, float eps) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * d;
        float *yr = y + (size_t)n * d;
        double ss = 0.0;
        #pragma omp simd reduction(+:ss)
        for (int j = 0; j < d; j++) ss += (double)xr[j] * xr[j];
        float r = (float)(1.0 / sqrt(ss / d + (double)eps));
        rstd[n] = r;
        for (int j = 0; j < d; j++) yr[j] = xr[j] * r * gamma[j];
    }
}

// Column block for dgamma: each block is owned by one thread and summed over rows in
// order, so dgamma is bit-identical for any thread count (no float atomics).
#define RMS_COLBLK 64

// dx[N,d] (+)= ..., dgamma[d] (+)= ... (acc_dx, acc_dgamma: 1 +=, 0 =); dy[N,d], x[N,d], gamma[d], rstd[N]
// With xh = x*r (r = rstd): y = xh*gamma, so
//   dgamma_j = sum_n dy_nj * xh_nj
//   dx_j     = r * (gamma_j dy_j - xh_j * mean_k(gamma_k dy_k xh_k))
void cpu_rmsnorm_backward(float *dx, float *dgamma, const float *dy, const float *x, const float *gamma,
                      const float *rstd, int N, int d, int acc_dx, int acc_dgamma) {
    if (dx) {
        #pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            const float *xr = x + (size_t)n * d, *dyr = dy + (size_t)n * d;
            float *dxr = dx + (size_t)n * d;
            float r = rstd[n];
            double dot = 0.0;
            #pragma omp simd reduction(+:dot)
            for (int j = 0; j < d; j++) dot += (double)(gamma[j] * dyr[j]) * (xr[j] * r);
            float c = (float)(dot / d);
            for (int j = 0; j < d; j++) dxr[j] = (acc_dx ? dxr[j] : 0.0f) + r * (gamma[j] * dyr[j] - xr[j] * r * c);
        }
    }
    if (dgamma) {
        int nblk = (d + RMS_COLBLK - 1) / RMS_COLBLK;
        #pragma omp parallel for schedule(static)
        for (int b = 0; b < nblk; b++) {
            int j0 = b * RMS_COLBLK, j1 = j0 + RMS_COLBLK < d ? j0 + RMS_COLBLK : d;
            double acc[RMS_COLBLK] = {0};
            for (int n = 0; n < N; n++) {
                const float *xr = x + (size_t)n * d, *dyr = dy + (size_t)n * d;
                float r = rstd[n];
                for (int j = j0; j < j1; j++) acc[j - j0] += (double)(dyr[j] * (xr[j] * r));
            }
            for (int j = j0; j < j1; j++) dgamma[j] = (acc_dgamma ? dgamma[j] : 0.0f) + (float)acc[j - j0];
        }
    }
}
