// attn_scalar.c — the portable tile kernels of the CPU flash attention (contract in
// attn_kernels.h): plain loops, libm's exp2f. The fallback where the build targets neither
// AVX-512 nor AVX2, and the tests' second opinion on the vector kernels.
#include <math.h>
#include <stddef.h>
#include "attn_kernels.h"

// Loops ordered so the innermost one runs along contiguous memory (the compiler may vectorise
// it across output elements); each element is still summed over k in order from 0.
static void qk(float *C, int ldc, const float *A, int lda, const float *Bt, int ldb, int m, int n, int k, int off) {
    for (int r = 0; r < m; r++) {
        int nv = r + off + 1 < n ? r + off + 1 : n;
        float *c = C + (size_t)r * ldc;
        const float *a = A + (size_t)r * lda;
        for (int j = 0; j < nv; j++) c[j] = 0.0f;
        for (int i = 0; i < k; i++) {
            float x = a[i];
            const float *b = Bt + (size_t)i * ldb;
            for (int j = 0; j < nv; j++) c[j] += x * b[j];
        }
    }
}

static void acc(float *C, int ldc, const float *X, int xr, int xk, const float *Y, int ldy, int rows, int kn, int hd,
                int causal, int off, int mode, const float *alpha) {
    float sum[64];   // one row of the sum, 64 columns at a time
    for (int r = 0; r < rows; r++) {
        int k0 = 0, k1 = kn;
        if (causal == CAUSAL_ROWS && r + off + 1 < k1) k1 = r + off + 1;
        if (causal == CAUSAL_COLS && r - off > 0) k0 = r - off;
        const float *x = X + (size_t)r * xr;
        float *c = C + (size_t)r * ldc;
        for (int c0 = 0; c0 < hd; c0 += 64) {
            int w = hd - c0 < 64 ? hd - c0 : 64;
            for (int i = 0; i < w; i++) sum[i] = 0.0f;
            for (int kk = k0; kk < k1; kk++) {
                float xv = x[(size_t)kk * xk];
                const float *y = Y + (size_t)kk * ldy + c0;
                for (int i = 0; i < w; i++) sum[i] += xv * y[i];
            }
            float *cc = c + c0;
            for (int i = 0; i < w; i++)
                cc[i] = mode == ACC_SET ? sum[i] : mode == ACC_ADD ? cc[i] + sum[i] : alpha[r] * cc[i] + sum[i];
        }
    }
}

static float rowmax(const float *s, int n) {
    float mx = s[0];
    for (int j = 1; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    return mx;
}

static float softmax_row(float *s, int nv, int n, float c, float mx) {
    float sum = 0.0f;
    for (int j = 0; j < nv; j++) { s[j] = exp2f(s[j] * c - mx); sum += s[j]; }
    for (int j = nv; j < n; j++) s[j] = 0.0f;
    return sum;
}

static void dsoftmax_row(float *s, float *dp, int nv, int n, float c, float l, float D, float scale) {
    for (int j = 0; j < nv; j++) {
        float p = exp2f(s[j] * c - l);
        s[j] = p;
        dp[j] = scale * p * (dp[j] - D);
    }
    for (int j = nv; j < n; j++) { s[j] = 0.0f; dp[j] = 0.0f; }
}

static void pack_t(float *Xt, int ldt, const float *X, int ld, int n, int hd) {
    for (int c = 0; c < hd; c++) {
        float *xt = Xt + (size_t)c * ldt;
        for (int t = 0; t < n; t++) xt[t] = X[(size_t)t * ld + c];
        for (int t = n; t < ldt; t++) xt[t] = 0.0f;
    }
}

const AttnIsa attn_isa_scalar = { "scalar", qk, acc, rowmax, softmax_row, dsoftmax_row, pack_t };
