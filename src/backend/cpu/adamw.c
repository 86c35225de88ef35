// adamw.c — AdamW with decoupled weight decay, plus the reductions the optimizer needs
// (global gradient norm, clipping). Memory-bound elementwise loops.
//
// A step is two passes over the gradients, the fewest that global-norm clipping allows
// when the norm is not known before the update: cpu_sumsq_multi (reads each gradient once) and
// cpu_adamw_multi (reads each parameter, gradient and moment once, writes each parameter and
// moment once, the clipping factor applied as the gradient is read). Each is ONE parallel
// region over fixed chunks of all the tensors: a region per tensor (~130 at cola-60m) wakes
// the threads ~130 times per pass, which costs more than the small tensors' work.
#include "kernels.h"
#include "../../core/check.h"
#include <math.h>
#include "fastmath.h"
#include "reduce.h"

// Chunk length of an AdamW pass: 256 KB per stream, long enough that a chunk's start costs
// nothing, short enough that two threads share even a small model's span evenly.
#define ADAMW_CHUNK 65536

// 1 / (1 - beta^t), in double (see adamw_update)
static float bias_correction(float beta, int t) { return (float)(1.0 / (1.0 - pow((double)beta, t))); }

// n elements of an AdamW update, on one thread: the one formula of adamw_update and
// adamw_multi. The four streams are distinct tensors (restrict: the loop vectorises without
// run-time overlap checks).
FM_WIDE static void adamw_range(float *restrict param, const float *restrict grad, float *restrict m,
                                float *restrict v, size_t n, float lr, float beta1, float beta2, float eps,
                                float wd, float bc1, float bc2, float gs) {
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

// param[n], grad[n] (read-only), m[n], v[n] (first/second moments, updated in place).
// g = grad·gs (gs: the clipping factor, 1 = none, folded in here so that clipping is no pass
// of its own), p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / (1 - beta1^t),
// vhat = v / (1 - beta2^t); t is the 1-based step. Bias corrections in double: at
// beta2 = 0.999 and small t, 1 - beta2^t in fp32 loses several digits. The product grad·gs
// is the one a separate scale pass would have stored, so the result is bit-identical to it.
void cpu_adamw_update(float *param, const float *grad, float *m, float *v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, int t, float gs) {
    CHECK(t >= 1, "adamw: step t=%d must be >= 1", t);
    float bc1 = bias_correction(beta1, t), bc2 = bias_correction(beta2, t);
    size_t nch = (n + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
    #pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nch; c++) {
        size_t lo = c * ADAMW_CHUNK, len = lo + ADAMW_CHUNK < n ? ADAMW_CHUNK : n - lo;
        adamw_range(param + lo, grad + lo, m + lo, v + lo, len, lr, beta1, beta2, eps, wd, bc1, bc2, gs);
    }
}

// Fixed-size chunks, each summed by one thread (rd_sumsq: several partial sums, see
// reduce.h), partials added serially in chunk order: bit-identical for any thread count.
#define SUMSQ_CHUNK 65536

// The chunks of a multi-tensor pass: chunk c covers [lo, hi) of tensor `t`. Tensors are cut
// at multiples of `chunk` from their own start, so a tensor's chunks (and sumsq's partial
// sums) are the same as in a pass over that tensor alone.
typedef struct { int t; size_t lo, hi; } Chunk;
static Chunk *chunks_of(int n, const size_t *len, size_t chunk, size_t *n_chunks) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (len[i] + chunk - 1) / chunk;
    Chunk *c = xmalloc(sizeof *c * (total + 1));
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (size_t lo = 0; lo < len[i]; lo += chunk)
            c[k++] = (Chunk){ i, lo, lo + chunk < len[i] ? lo + chunk : len[i] };
    *n_chunks = k;
    return c;
}

// part[k] = rd_sumsq of chunk k. Runs of RD_WAYS chunks of one length are read at once
// (rd_sumsq_ways: the same bits, more memory parallelism); the rest one by one; the chunks of
// the live tensor (lt, rows of rl, -1: none) in their live rows only (rd_sumsq_live). Dynamic
// schedule: the live tensor's groups cost next to nothing, so equal shares of groups are not
// equal work (the partial sums do not depend on which thread computes them).
FM_WIDE static void sumsq_chunks(const float *const *x, const Chunk *c, size_t nc, double *part, int lt, size_t rl,
                                 const unsigned char *live) {
    size_t ng = (nc + RD_WAYS - 1) / RD_WAYS;
    #pragma omp parallel for schedule(dynamic, 1)
    for (size_t g = 0; g < ng; g++) {
        size_t k0 = g * RD_WAYS, k1 = k0 + RD_WAYS < nc ? k0 + RD_WAYS : nc, n0 = c[k0].hi - c[k0].lo;
        int same = k1 - k0 == RD_WAYS;
        for (size_t k = k0; k < k1; k++) same = same && c[k].hi - c[k].lo == n0 && c[k].t != lt;
        if (same) {
            const float *p[RD_WAYS];
            for (int s = 0; s < RD_WAYS; s++) p[s] = x[c[k0 + s].t] + c[k0 + s].lo;
            rd_sumsq_ways(p, n0, part + k0);
        } else {
            for (size_t k = k0; k < k1; k++)
                part[k] = c[k].t == lt ? rd_sumsq_live(x[lt], c[k].lo, c[k].hi, rl, live)
                                       : rd_sumsq(x[c[k].t] + c[k].lo, c[k].hi - c[k].lo);
        }
    }
}

FM_WIDE double cpu_sumsq_multi(int n, const float *const *x, const size_t *len, const double *w, const SumsqLive *live) {
    size_t nc;
    Chunk *c = chunks_of(n, len, SUMSQ_CHUNK, &nc);
    double *part = xmalloc(sizeof(double) * (nc + 1));
    // the hint where rd_sumsq_live keeps the bits (rows and chunks on RD_LANES boundaries)
    int lt = live && live->t >= 0 && live->t < n && live->row_len > 0 && live->row_len % RD_LANES == 0 &&
             SUMSQ_CHUNK % RD_LANES == 0 && len[live->t] % live->row_len == 0 ? live->t : -1;
    sumsq_chunks(x, c, nc, part, lt, lt >= 0 ? live->row_len : 0, lt >= 0 ? live->live : NULL);
    // serially, tensor by tensor in chunk order: the sums of cpu_sumsq() per tensor, weighted
    double total = 0.0;
    for (size_t k = 0; k < nc;) {
        int t = c[k].t;
        double s = 0.0;
        for (; k < nc && c[k].t == t; k++) s += part[k];
        total += w[t] * s;
    }
    free(part); free(c);
    return total;
}

// x[n] -> sum of x^2 in double: the pass above on one tensor (weight 1: the same bits)
double cpu_sumsq(const float *x, size_t n) {
    const double one = 1.0;
    return cpu_sumsq_multi(1, &x, &n, &one, NULL);
}

// The gradient of the rows a span marks zero (AdamWSpan.live) is read from here, where it stays
// in L1, instead of from memory: the same values (+0, as the zeroed rows hold), so the same
// update bit for bit, one stream of the seven fewer. Never written.
static float g_zero_grad[ADAMW_CHUNK];

void cpu_adamw_multi(int n, const AdamWSpan *s, const AdamWHyper *h) {
    CHECK(h->t >= 1, "adamw: step t=%d must be >= 1", h->t);
    size_t *len = xmalloc(sizeof(size_t) * ((size_t)n + 1));
    for (int i = 0; i < n; i++) len[i] = s[i].n;
    size_t nc;
    Chunk *c = chunks_of(n, len, ADAMW_CHUNK, &nc);
    float bc1 = bias_correction(h->beta1, h->t), bc2 = bias_correction(h->beta2, h->t);
    #pragma omp parallel for schedule(static)
    for (size_t k = 0; k < nc; k++) {
        const AdamWSpan *sp = &s[c[k].t];
        size_t rl = sp->row_len, hi = c[k].hi;
        const unsigned char *live = sp->live && rl > 0 && rl <= ADAMW_CHUNK ? sp->live : NULL;
        for (size_t a = c[k].lo; a < hi;) {   // the chunk in one piece, or row by row with the hint
            size_t b = hi;
            const float *g = (const float *)sp->grad + a;
            if (live) {
                size_t r = a / rl;
                b = (r + 1) * rl < hi ? (r + 1) * rl : hi;
                if (!live[r]) g = g_zero_grad;
            }
            adamw_range(sp->master + a, g, sp->m + a, sp->v + a, b - a, h->lr, h->beta1, h->beta2, h->eps,
                        sp->weight_decay, bc1, bc2, h->grad_scale);
            a = b;
        }
    }
    free(c); free(len);
}

// x[n] *= s
void cpu_scale_inplace(float *x, float s, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}
