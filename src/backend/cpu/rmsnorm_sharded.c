// rmsnorm_sharded.c — RMSNorm of a residual stream that is split by columns over the TP
// ranks (bottleneck-aware TP, docs/boost.md): the statistic Σx² of a row needs every
// shard, so the norm is cut into pieces around the collective that completes it.
//   SyncRMSNorm:    S = cpu_rowsumsq(x_i); AR(S); a = cpu_rownorm(x_i, width = d);  P = a @ A_i; AR(P)
//   online RMSNorm: S = cpu_rowsumsq(x_i); ŷ = cpu_rownorm(x_i, width = d/tp); H = ŷ @ A_i;
//                   cpu_scale_rows(H, +1, width = d/tp); AR([H | S]); cpu_scale_rows(H, -1, width = d)
// and the backward of either from the replicated bottleneck gradient: dot = cpu_rowdot(dP, P)
// gives the full row's Σ da·a for free, then sharded_rmsnorm_backward.
#include <math.h>
#include "kernels.h"

// 1/sqrt(S/width + eps) in double, rounded once (one formula for every piece).
static inline float inv_rms(float S, int width, float eps) { return (float)(1.0 / sqrt((double)S / width + (double)eps)); }
static inline float rms(float S, int width, float eps) { return (float)sqrt((double)S / width + (double)eps); }

// S[N] = Σ x² per row (double accumulation, stored fp32); x[N,d]
void cpu_rowsumsq(float *S, const float *x, int N, int d) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * d;
        double ss = 0.0;
        for (int j = 0; j < d; j++) ss += (double)xr[j] * xr[j];
        S[n] = (float)ss;
    }
}

// y[N,d] = x·gamma·inv_rms(S, width)
void cpu_rownorm(float *y, const float *x, const float *gamma, const float *S, int N, int d, int width, float eps) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float sc = inv_rms(S[n], width, eps);
        const float *xr = x + (size_t)n * d;
        float *yr = y + (size_t)n * d;
        for (int j = 0; j < d; j++) yr[j] = xr[j] * sc * gamma[j];
    }
}

// P's payload rows (view v) *= rms(S)^power, power = +1 or -1
void cpu_scale_rows(float *P, const SlotView *v, const float *S, int width, float eps, int power) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < v->N; n++) {
        float sc = power > 0 ? rms(S[n], width, eps) : inv_rms(S[n], width, eps);
        for (int j = 0; j < v->G; j++) {
            float *row = P + v->off[j] + (size_t)n * v->ld;
            for (int k = 0; k < v->r; k++) row[k] *= sc;
        }
    }
}

// dot[N] = Σ_j Σ_k X_j[n,k]·Y_j[n,k]
void cpu_rowdot(float *dot, const float *X, const float *Y, const SlotView *v) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < v->N; n++) {
        double s = 0.0;
        for (int j = 0; j < v->G; j++) {
            const float *xr = X + v->off[j] + (size_t)n * v->ld, *yr = Y + v->off[j] + (size_t)n * v->ld;
            for (int k = 0; k < v->r; k++) s += (double)xr[k] * yr[k];
        }
        dot[n] = (float)s;
    }
}

// Column block of dgamma owned by one thread, rows summed in order: deterministic.
#define SHARDED_COLBLK 64

// With a = x·rstd·gamma (rstd of the full row), P = a @ A, c = dot/d_full = Σ_full da·a / d_full:
// dx += rstd·(gamma⊙da − x·rstd·c);  dgamma (+)= Σ_n da⊙x·rstd (acc_dgamma)
void cpu_sharded_rmsnorm_backward(float *dx, float *dgamma, const float *da, const float *x, const float *gamma,
                              const float *S, const float *dot, int N, int d, int d_full, float eps, int acc_dgamma) {
    if (dx) {
        #pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            float rs = inv_rms(S[n], d_full, eps), cc = (float)((double)dot[n] / d_full);
            const float *xr = x + (size_t)n * d, *dar = da + (size_t)n * d;
            float *dxr = dx + (size_t)n * d;
            for (int j = 0; j < d; j++) dxr[j] += rs * (gamma[j] * dar[j] - xr[j] * rs * cc);
        }
    }
    if (dgamma) {
        int nblk = (d + SHARDED_COLBLK - 1) / SHARDED_COLBLK;
        #pragma omp parallel for schedule(static)
        for (int bk = 0; bk < nblk; bk++) {
            int j0 = bk * SHARDED_COLBLK, j1 = j0 + SHARDED_COLBLK < d ? j0 + SHARDED_COLBLK : d;
            double acc[SHARDED_COLBLK] = {0};
            for (int n = 0; n < N; n++) {
                float rs = inv_rms(S[n], d_full, eps);
                const float *xr = x + (size_t)n * d, *dar = da + (size_t)n * d;
                for (int j = j0; j < j1; j++) acc[j - j0] += (double)(dar[j] * (xr[j] * rs));
            }
            for (int j = j0; j < j1; j++) dgamma[j] = (acc_dgamma ? dgamma[j] : 0.0f) + (float)acc[j - j0];
        }
    }
}
