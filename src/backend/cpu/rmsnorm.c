// rmsnorm.c — RMSNorm (LLaMA): y = x * rsqrt(mean(x^2) + eps) * gamma.
// Rows are independent, so OpenMP splits rows; sums of squares are in double because
// d can be thousands wide and the norm feeds every layer.
#include "kernels.h"
#include "../../core/check.h"
#include <math.h>
#include <string.h>
#include "fastmath.h"
#include "reduce.h"

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

// Rows per dgamma partial. The backward is ONE pass over x and dy: each fixed block of rows
// sums its dgamma partial (double, rows in order) while its rows are in L1 for dx, and the
// partials are added in block order at the end, so dgamma is bit-identical for any thread
// count (no float atomics). A second pass over column blocks read x and dy again (a third
// of the traffic).
#define RMS_ROWBLK 64

// dx[N,d] (+)= ..., dgamma[d] (+)= ... (acc_dx, acc_dgamma: 1 +=, 0 =); dy[N,d], x[N,d], gamma[d], rstd[N]
// With xh = x*r (r = rstd): y = xh*gamma, so
//   dgamma_j = sum_n dy_nj * xh_nj
//   dx_j     = r * (gamma_j dy_j - xh_j * mean_k(gamma_k dy_k xh_k))
// The row dot uses reduce.h's partial sums (one accumulator made it latency-bound).
FM_WIDE void cpu_rmsnorm_backward(float *dx, float *dgamma, const float *dy, const float *x, const float *gamma,
                      const float *rstd, int N, int d, int acc_dx, int acc_dgamma) {
    if ((!dx && !dgamma) || N <= 0 || d <= 0) return;
    int nblk = (N + RMS_ROWBLK - 1) / RMS_ROWBLK;
    double *part = dgamma ? xmalloc(sizeof(double) * (size_t)nblk * d) : NULL;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < nblk; b++) {
        int n1 = (b + 1) * RMS_ROWBLK < N ? (b + 1) * RMS_ROWBLK : N;
        double *pg = part ? part + (size_t)b * d : NULL;
        if (pg) memset(pg, 0, sizeof(double) * (size_t)d);
        for (int n = b * RMS_ROWBLK; n < n1; n++) {
            const float *xr = x + (size_t)n * d, *dyr = dy + (size_t)n * d;
            float r = rstd[n];
            if (dx) {
                float *dxr = dx + (size_t)n * d;
                double acc[RD_LANES] = {0};   // Σ_j (gamma dy)_j xh_j
                int j = 0;
                for (; j + RD_LANES <= d; j += RD_LANES)
                    for (int k = 0; k < RD_LANES; k++) acc[k] += (double)(gamma[j + k] * dyr[j + k]) * (xr[j + k] * r);
                for (int k = 0; j + k < d; k++) acc[k] += (double)(gamma[j + k] * dyr[j + k]) * (xr[j + k] * r);
                float c = (float)(rd_fold(acc) / d);
                if (acc_dx)
                    for (j = 0; j < d; j++) dxr[j] += r * (gamma[j] * dyr[j] - xr[j] * r * c);
                else
                    for (j = 0; j < d; j++) dxr[j] = 0.0f + r * (gamma[j] * dyr[j] - xr[j] * r * c);
            }
            if (pg)
                for (int j = 0; j < d; j++) pg[j] += (double)(dyr[j] * (xr[j] * r));
        }
    }
    if (dgamma) {
        for (int j = 0; j < d; j++) {
            double s = 0.0;
            for (int b = 0; b < nblk; b++) s += part[(size_t)b * d + j];
            dgamma[j] = (acc_dgamma ? dgamma[j] : 0.0f) + (float)s;
        }
        free(part);
    }
}
