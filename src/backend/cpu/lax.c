// lax.c — the LaX latent crossing's kernels (docs/lax.md §3): the LayerNorm over the r
// columns of a latent, the dense gate z @ W + b and the Kronecker gate z @ (G1 ⊗ G2), each a
// forward/backward pair on strided row views (row n of a [N, r] view starts at p + n·ld: the
// slots of a grouped BTP bottleneck [N, G·r] are such views).
//
// Every reduction runs in double in a fixed order (tokens in order, per output element or
// per column block), so the results are bit-identical for any thread count.
#include <math.h>
#include "kernels.h"
#include "sgemm.h"
#include "../../core/check.h"

// ---- LayerNorm over r ---------------------------------------------------------------------
// y = (x − μ)·rstd ⊙ gamma + beta; μ, var (biased) in double; y may be x (same ld).
void cpu_layernorm_forward(float *y, int ldy, float *mean, float *rstd, const float *x, int ldx, const float *gamma,
                       const float *beta, int N, int r, float eps) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * ldx;
        float *yr = y + (size_t)n * ldy;
        double s = 0.0;
        for (int j = 0; j < r; j++) s += xr[j];
        double mu = s / r, v = 0.0;
        for (int j = 0; j < r; j++) { double t = xr[j] - mu; v += t * t; }
        float m = (float)mu, rs = (float)(1.0 / sqrt(v / r + (double)eps));
        mean[n] = m; rstd[n] = rs;
        for (int j = 0; j < r; j++) yr[j] = (xr[j] - m) * rs * gamma[j] + beta[j];
    }
}

// Column block for dgamma/dbeta: one thread owns a block and sums over rows in order.
#define LN_COLBLK 64

// x̂ = (x − μ)·rstd, h = dy ⊙ gamma:  dx (+)= rstd·(h − mean_r(h) − x̂·mean_r(h ⊙ x̂)) (acc_dx),
// dgamma (+)= Σ_n dy ⊙ x̂, dbeta (+)= Σ_n dy (acc_dw). Any output may be NULL.
void cpu_layernorm_backward(float *dx, int lddx, float *dgamma, float *dbeta, const float *dy, int lddy, const float *x,
                        int ldx, const float *mean, const float *rstd, const float *gamma, int N, int r,
                        int acc_dx, int acc_dw) {
    if (dx) {
        #pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            const float *xr = x + (size_t)n * ldx, *dyr = dy + (size_t)n * lddy;
            float *dxr = dx + (size_t)n * lddx;
            float m = mean[n], rs = rstd[n];
            double sh = 0.0, shx = 0.0;
            for (int j = 0; j < r; j++) {
                double h = (double)dyr[j] * gamma[j], xh = (double)(xr[j] - m) * rs;
                sh += h; shx += h * xh;
            }
            float mh = (float)(sh / r), mhx = (float)(shx / r);
            for (int j = 0; j < r; j++)
                dxr[j] = (acc_dx ? dxr[j] : 0.0f) + rs * (dyr[j] * gamma[j] - mh - (xr[j] - m) * rs * mhx);
        }
    }
    if (dgamma || dbeta) {
        int nblk = (r + LN_COLBLK - 1) / LN_COLBLK;
        #pragma omp parallel for schedule(static)
        for (int b = 0; b < nblk; b++) {
            int j0 = b * LN_COLBLK, j1 = j0 + LN_COLBLK < r ? j0 + LN_COLBLK : r;
            double ag[LN_COLBLK] = {0}, ab[LN_COLBLK] = {0};
            for (int n = 0; n < N; n++) {
                const float *xr = x + (size_t)n * ldx, *dyr = dy + (size_t)n * lddy;
                float m = mean[n], rs = rstd[n];
                for (int j = j0; j < j1; j++) {
                    ag[j - j0] += (double)dyr[j] * ((xr[j] - m) * rs);
                    ab[j - j0] += dyr[j];
                }
            }
            for (int j = j0; j < j1; j++) {
                if (dgamma) dgamma[j] = (acc_dw ? dgamma[j] : 0.0f) + (float)ag[j - j0];
                if (dbeta) dbeta[j] = (acc_dw ? dbeta[j] : 0.0f) + (float)ab[j - j0];
            }
        }
    }
}

// dcol[r] (+)= Σ_n x[n, :] over the rows of a strided view (double, rows in order; acc)
static void column_sums(float *dcol, const float *x, int ldx, int N, int r, int acc) {
    int nblk = (r + LN_COLBLK - 1) / LN_COLBLK;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < nblk; b++) {
        int j0 = b * LN_COLBLK, j1 = j0 + LN_COLBLK < r ? j0 + LN_COLBLK : r;
        double sum[LN_COLBLK] = {0};
        for (int n = 0; n < N; n++)
            for (int j = j0; j < j1; j++) sum[j - j0] += x[(size_t)n * ldx + j];
        for (int j = j0; j < j1; j++) dcol[j] = (acc ? dcol[j] : 0.0f) + (float)sum[j - j0];
    }
}

// ---- dense gate: g(z) = z @ W + b ---------------------------------------------------------
// out[N,r] += z[N,r] @ W[r,r] + bias[r]
void cpu_dense_gate_forward(float *out, int ldo, const float *z, int ldz, const float *W, const float *bias, int N, int r) {
    GemmArgs g = { TR_N, TR_N, N, r, r, 1.0f, z, ldz, W, r, 1.0f, out, ldo };
    cpu_sgemm(&g);
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int j = 0; j < r; j++) out[(size_t)n * ldo + j] += bias[j];
}

// dz (+)= dout @ Wᵀ (acc_dz), dW (+)= zᵀ @ dout, dbias (+)= Σ_n dout (acc_dw) (any may be NULL)
void cpu_dense_gate_backward(float *dz, int lddz, float *dW, float *dbias, const float *dout, int lddo, const float *z,
                         int ldz, const float *W, int N, int r, int acc_dz, int acc_dw) {
    GemmArgs gz = { TR_N, TR_T, N, r, r, 1.0f, dout, lddo, W, r, acc_dz ? 1.0f : 0.0f, dz, lddz };
    GemmArgs gw = { TR_T, TR_N, r, r, N, 1.0f, z, ldz, dout, lddo, acc_dw ? 1.0f : 0.0f, dW, r };
    if (dz) cpu_sgemm(&gz);
    if (dW) cpu_sgemm(&gw);
    if (dbias) column_sums(dbias, dout, lddo, N, r, acc_dw);
}

// ---- Kronecker gate: g(z) = z @ (G1 ⊗ G2) ---------------------------------------------------
// Per token, z viewed row-major as Z [r1, r2] (element (i, j) = z[i·r2 + j]):
//   T = Z·G2 [r1, r2],  O = G1ᵀ·T = the token's g(z)  (no r×r matrix is formed).
// T[n] (r1·r2 floats) of every token into t (contiguous [N, r]).
static void kron_T(float *t, const float *z, int ldz, const float *G2, int N, int r1, int r2) {
    int r = r1 * r2;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *Z = z + (size_t)n * ldz;
        float *T = t + (size_t)n * r;
        for (int i = 0; i < r1; i++)
            for (int j = 0; j < r2; j++) {
                double acc = 0.0;
                for (int m = 0; m < r2; m++) acc += (double)Z[i * r2 + m] * G2[m * r2 + j];
                T[i * r2 + j] = (float)acc;
            }
    }
}

// out[N, r1·r2] += vec(G1ᵀ·Z[n]·G2) for every token; G1 [r1,r1], G2 [r2,r2]
void cpu_kron_gate_forward(float *out, int ldo, const float *z, int ldz, const float *G1, const float *G2, int N, int r1, int r2) {
    int r = r1 * r2;
    float *t = xmalloc(((size_t)N * r + 1) * sizeof(float));
    kron_T(t, z, ldz, G2, N, r1, r2);
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *T = t + (size_t)n * r;
        float *O = out + (size_t)n * ldo;
        for (int k = 0; k < r1; k++)
            for (int j = 0; j < r2; j++) {
                double acc = 0.0;
                for (int i = 0; i < r1; i++) acc += (double)G1[i * r1 + k] * T[i * r2 + j];
                O[k * r2 + j] += (float)acc;
            }
    }
    free(t);
}

// With dO[n] = dout[n] as [r1, r2], T[n] = Z[n]·G2 and dT[n] = G1·dO[n]:
//   dz[n] (+)= dT[n]·G2ᵀ (acc_dz),   dG1 (+)= Σ_n T[n]·dO[n]ᵀ,   dG2 (+)= Σ_n Z[n]ᵀ·dT[n] (acc_dw)
//   (any may be NULL)
void cpu_kron_gate_backward(float *dz, int lddz, float *dG1, float *dG2, const float *dout, int lddo, const float *z,
                        int ldz, const float *G1, const float *G2, int N, int r1, int r2, int acc_dz, int acc_dw) {
    int r = r1 * r2;
    float *dt = xmalloc(((size_t)N * r + 1) * sizeof(float));
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *dO = dout + (size_t)n * lddo;
        float *dT = dt + (size_t)n * r;
        for (int i = 0; i < r1; i++)
            for (int j = 0; j < r2; j++) {
                double acc = 0.0;
                for (int k = 0; k < r1; k++) acc += (double)G1[i * r1 + k] * dO[k * r2 + j];
                dT[i * r2 + j] = (float)acc;
            }
        if (dz) {
            float *dZ = dz + (size_t)n * lddz;
            for (int i = 0; i < r1; i++)
                for (int m = 0; m < r2; m++) {
                    double acc = 0.0;
                    for (int j = 0; j < r2; j++) acc += (double)dT[i * r2 + j] * G2[m * r2 + j];
                    dZ[i * r2 + m] = (acc_dz ? dZ[i * r2 + m] : 0.0f) + (float)acc;
                }
        }
    }
    if (dG1) {
        float *t = xmalloc(((size_t)N * r + 1) * sizeof(float));
        kron_T(t, z, ldz, G2, N, r1, r2);
        #pragma omp parallel for schedule(static)
        for (int ik = 0; ik < r1 * r1; ik++) {
            int i = ik / r1, k = ik % r1;
            double acc = 0.0;
            for (int n = 0; n < N; n++) {
                const float *T = t + (size_t)n * r, *dO = dout + (size_t)n * lddo;
                for (int j = 0; j < r2; j++) acc += (double)T[i * r2 + j] * dO[k * r2 + j];
            }
            dG1[ik] = (acc_dw ? dG1[ik] : 0.0f) + (float)acc;
        }
        free(t);
    }
    if (dG2) {
        #pragma omp parallel for schedule(static)
        for (int mj = 0; mj < r2 * r2; mj++) {
            int m = mj / r2, j = mj % r2;
            double acc = 0.0;
            for (int n = 0; n < N; n++) {
                const float *Z = z + (size_t)n * ldz, *dT = dt + (size_t)n * r;
                for (int i = 0; i < r1; i++) acc += (double)Z[i * r2 + m] * dT[i * r2 + j];
            }
            dG2[mj] = (acc_dw ? dG2[mj] : 0.0f) + (float)acc;
        }
    }
    free(dt);
}
