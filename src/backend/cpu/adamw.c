// adamw.c — AdamW with decoupled weight decay, plus the reductions the optimizer needs
// (global gradient norm, clipping). Memory-bound elementwise loops.
#include "kernels.h"
#include "../../core/check.h"
#include <math.h>

// param[n], grad[n] (read-only), m[n], v[n] (first/second moments, updated in place).
// g = grad·gs (gs: the clipping factor, 1 = none, folded in here so that clipping is no pass
// of its own), p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / (1 - beta1^t),
// vhat = v / (1 - beta2^t); t is the 1-based step. Bias corrections in double: at
// beta2 = 0.999 and small t, 1 - beta2^t in fp32 loses several digits. The product grad·gs
// is the one a separate scale pass would have stored, so the result is bit-identical to it.
void adamw_update(float *param, const float *grad, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int t, float gs) {
    CHECK(t >= 1, "adamw: step t=%d must be >= 1", t);
    float bc1 = (float)(1.0 / (1.0 - pow((double)beta1, t)));
    float bc2 = (float)(1.0 / (1.0 - pow((double)beta2, t)));
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] * gs;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi * bc1, vhat = vi * bc2;
        param[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * param[i]);
    }
}

// Fixed-size chunks, each summed by one thread, partials added serially in chunk order:
// the result is bit-identical for any thread count.
#define SUMSQ_CHUNK 65536

// x[n] -> sum of x^2 in double
double sumsq(const float *x, size_t n) {
    size_t nch = (n + SUMSQ_CHUNK - 1) / SUMSQ_CHUNK;
    if (nch == 0) return 0.0;
    double *part = xmalloc(sizeof(double) * nch);
    #pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nch; c++) {
        size_t i0 = c * SUMSQ_CHUNK, i1 = i0 + SUMSQ_CHUNK < n ? i0 + SUMSQ_CHUNK : n;
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (size_t i = i0; i < i1; i++) s += (double)x[i] * x[i];
        part[c] = s;
    }
    double total = 0.0;
    for (size_t c = 0; c < nch; c++) total += part[c];
    free(part);
    return total;
}

// x[n] *= s
void scale_inplace(float *x, float s, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}
