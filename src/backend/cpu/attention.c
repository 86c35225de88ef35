// attention.c — causal multi-head flash attention with grouped KV heads (FlashAttention-2's
// algorithm, Dao 2023, on the CPU): tiles of ATT_BQ queries against tiles of ATT_BK keys with
// an online softmax. Only the per-row log-sum-exp is saved; the backward recomputes the
// probabilities tile by tile from it, with D = rowsum(dO ⊙ O). Activation memory is O(B·T·d)
// per layer instead of the O(B·H·T²) probabilities of a materialised softmax.
//
// How it is made fast on a few cores:
//  * Every product is an OpenBLAS sgemm on strided views of q/k/v ([B,T,H,hd] rows have
//    stride H·hd), so nothing is transposed or copied; tiles are sized for L2
//    (ATT_BQ × ATT_BK floats = 64 KB).
//  * Work is split over (batch, head) tasks with OpenMP, each task calling single-threaded
//    sgemm on its own tiles. When there are fewer tasks than threads the same task code runs
//    serially with OpenBLAS threading each product.
//  * Causality: query block [i0, i1) only touches keys [0, i1); the key tiles stop there.
//  * Backward tasks are (batch, kv head): the H/Hkv query heads sharing a kv head accumulate
//    into the same dk/dv rows, so they run in one task, in order — no races, and the sum
//    order is fixed (bit-identical run to run and for any thread count).
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include "kernels.h"
#include "../../core/check.h"
#include "fastmath.h"

#ifndef ATT_BQ
#define ATT_BQ 64
#endif
#ifndef ATT_BK
#define ATT_BK 256
#endif

// A pthreads OpenBLAS must not run its own thread pool from inside our OpenMP region:
// set it to one thread around the parallel loop, restore after (returns the previous
// setting, 0 = nothing changed). An OpenMP OpenBLAS is already serial inside a parallel
// region — and its set_num_threads would also change OUR team size — so leave it alone.
static int blas_threads_serial(void) {
    if (openblas_get_parallel() != OPENBLAS_THREAD) return 0;
    int nt = openblas_get_num_threads();
    if (nt <= 1) return 0;
    openblas_set_num_threads(1);
    return nt;
}
static void blas_threads_restore(int nt) { if (nt > 1) openblas_set_num_threads(nt); }

// Strided views of one (b, h) head.
typedef struct {
    int T, hd, ldq, ldkv;   // ldq = H*hd, ldkv = Hkv*hd: row strides of q/out and k/v
    float scale;
} AttShape;

// Per-thread tiles: S/P [ATT_BQ, ATT_BK], dP [ATT_BQ, ATT_BK], row statistics [ATT_BQ].
typedef struct { float *S, *dP; double *l; float *m, *D; } AttScratch;
static void scratch_alloc(AttScratch *s) {
    s->S = xaligned_alloc(sizeof(float) * ATT_BQ * ATT_BK);
    s->dP = xaligned_alloc(sizeof(float) * ATT_BQ * ATT_BK);
    s->l = xaligned_alloc(sizeof(double) * ATT_BQ);
    s->m = xaligned_alloc(sizeof(float) * ATT_BQ);
    s->D = xaligned_alloc(sizeof(float) * ATT_BQ);
}
static void scratch_free(AttScratch *s) { free(s->S); free(s->dP); free(s->l); free(s->m); free(s->D); }

// Forward of one head. Q,O [T,hd] (ld ldq), K,V [T,hd] (ld ldkv), lse [T].
static void att_fwd_head(float *O, float *lse, const float *Q, const float *K, const float *V,
                         const AttShape *s, AttScratch *w) {
    int T = s->T, hd = s->hd;
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        int m = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + m;   // rows [i0,nk), keys [0,nk)
        float *Ob = O + (size_t)i0 * s->ldq;
        for (int r = 0; r < m; r++) { w->m[r] = -INFINITY; w->l[r] = 0.0; }
        for (int j0 = 0; j0 < nk; j0 += ATT_BK) {
            int kn = nk - j0 < ATT_BK ? nk - j0 : ATT_BK;
            float *S = w->S;   // [m, kn]
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, kn, hd,
                        s->scale, Q + (size_t)i0 * s->ldq, s->ldq, K + (size_t)j0 * s->ldkv, s->ldkv, 0.0f, S, kn);
            for (int r = 0; r < m; r++) {
                int t = i0 + r, valid = t - j0 + 1;               // keys j0 .. t are visible
                if (valid > kn) valid = kn;
                float *row = S + (size_t)r * kn;
                if (valid <= 0) { for (int j = 0; j < kn; j++) row[j] = 0.0f; continue; }
                float mx = w->m[r];
                for (int j = 0; j < valid; j++) mx = row[j] > mx ? row[j] : mx;
                double sum = 0.0;                                  // up to T terms
                #pragma omp simd reduction(+:sum)
                for (int j = 0; j < valid; j++) { float e = fast_expf(row[j] - mx); row[j] = e; sum += e; }
                for (int j = valid; j < kn; j++) row[j] = 0.0f;    // causal mask
                if (j0 > 0 && mx != w->m[r]) {                     // re-base the running sums
                    float corr = fast_expf(w->m[r] - mx);
                    w->l[r] *= corr;
                    float *orow = Ob + (size_t)r * s->ldq;
                    for (int c = 0; c < hd; c++) orow[c] *= corr;
                }
                w->m[r] = mx;
                w->l[r] += sum;
            }
            // O_blk (+)= P V_tile   (the first tile overwrites)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, kn,
                        1.0f, S, kn, V + (size_t)j0 * s->ldkv, s->ldkv, j0 ? 1.0f : 0.0f, Ob, s->ldq);
        }
        for (int r = 0; r < m; r++) {
            float inv = (float)(1.0 / w->l[r]);
            float *orow = Ob + (size_t)r * s->ldq;
            for (int c = 0; c < hd; c++) orow[c] *= inv;
            lse[i0 + r] = w->m[r] + (float)log(w->l[r]);
        }
    }
}

// Backward of one head, accumulating. dO,O,Q,dQ [T,hd] (ld ldq); K,V,dK,dV [T,hd] (ld ldkv).
// With S = scale·Q K^T, P = exp(S − lse), O = P V:
//   dP = dO V^T, dS = P ⊙ (dP − D), D = rowsum(dO ⊙ O),
//   dV += P^T dO, dQ += scale·dS K, dK += scale·dS^T Q.
static void att_bwd_head(float *dQ, float *dK, float *dV, const float *dO, const float *O, const float *Q,
                         const float *K, const float *V, const float *lse, const AttShape *s, AttScratch *w) {
    int T = s->T, hd = s->hd;
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        int m = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + m;
        const float *dOb = dO + (size_t)i0 * s->ldq, *Qb = Q + (size_t)i0 * s->ldq;
        for (int r = 0; r < m; r++) {
            const float *a = dOb + (size_t)r * s->ldq, *b = O + (size_t)(i0 + r) * s->ldq;
            double dd = 0.0;
            for (int c = 0; c < hd; c++) dd += (double)a[c] * b[c];
            w->D[r] = (float)dd;
        }
        for (int j0 = 0; j0 < nk; j0 += ATT_BK) {
            int kn = nk - j0 < ATT_BK ? nk - j0 : ATT_BK;
            const float *Kt = K + (size_t)j0 * s->ldkv, *Vt = V + (size_t)j0 * s->ldkv;
            float *P = w->S, *dS = w->dP;   // [m, kn]
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, kn, hd,
                        s->scale, Qb, s->ldq, Kt, s->ldkv, 0.0f, P, kn);              // S
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, kn, hd,
                        1.0f, dOb, s->ldq, Vt, s->ldkv, 0.0f, dS, kn);                // dP
            for (int r = 0; r < m; r++) {
                int t = i0 + r, valid = t - j0 + 1;
                if (valid > kn) valid = kn;
                if (valid < 0) valid = 0;
                float *p = P + (size_t)r * kn, *d = dS + (size_t)r * kn;
                float l = lse[i0 + r], D = w->D[r];
                #pragma omp simd
                for (int j = 0; j < valid; j++) { float e = fast_expf(p[j] - l); p[j] = e; d[j] = e * (d[j] - D); }
                for (int j = valid; j < kn; j++) { p[j] = 0.0f; d[j] = 0.0f; }
            }
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kn, hd, m,
                        1.0f, P, kn, dOb, s->ldq, 1.0f, dV + (size_t)j0 * s->ldkv, s->ldkv);   // dV += P^T dO
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, kn,
                        s->scale, dS, kn, Kt, s->ldkv, 1.0f, dQ + (size_t)i0 * s->ldq, s->ldq);  // dQ += dS K
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kn, hd, m,
                        s->scale, dS, kn, Qb, s->ldq, 1.0f, dK + (size_t)j0 * s->ldkv, s->ldkv); // dK += dS^T Q
        }
    }
}

// Forward task = one (b, h) head; task = b*H + h.
static void att_fwd_task(int task, float *out, float *lse, const float *q, const float *k, const float *v,
                         int H, int Hkv, const AttShape *s, AttScratch *w) {
    int T = s->T, hd = s->hd, b = task / H, h = task % H;
    size_t qo = (size_t)b * T * H * hd + (size_t)h * hd;
    size_t ko = (size_t)b * T * Hkv * hd + (size_t)(h / (H / Hkv)) * hd;
    att_fwd_head(out + qo, lse + (size_t)task * T, q + qo, k + ko, v + ko, s, w);
}

// Backward task = one (b, kv head) with all the query heads that share it, in order;
// task = b*Hkv + kh.
static void att_bwd_task(int task, float *dq, float *dk, float *dv, const float *dout, const float *out,
                         const float *q, const float *k, const float *v, const float *lse, int H, int Hkv,
                         const AttShape *s, AttScratch *w) {
    int T = s->T, hd = s->hd, G = H / Hkv, b = task / Hkv, kh = task % Hkv;
    size_t ko = (size_t)b * T * Hkv * hd + (size_t)kh * hd;
    for (int h = kh * G; h < (kh + 1) * G; h++) {
        size_t qo = (size_t)b * T * H * hd + (size_t)h * hd;
        att_bwd_head(dq + qo, dk + ko, dv + ko, dout + qo, out + qo, q + qo, k + ko, v + ko,
                     lse + ((size_t)b * H + h) * T, s, w);
    }
}

// out[B,T,H,hd], lse[B,H,T]; q[B,T,H,hd], k,v[B,T,Hkv,hd]
void attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                       int B, int T, int H, int Hkv, int hd) {
    CHECK(Hkv > 0 && H % Hkv == 0, "attention: n_heads %d not a multiple of n_kv_heads %d", H, Hkv);
    AttShape s = { T, hd, H * hd, Hkv * hd, (float)(1.0 / sqrt((double)hd)) };
    int ntask = B * H, nthr = omp_get_max_threads();   // team size read before touching OpenBLAS
    if (ntask >= nthr) {
        int nt = blas_threads_serial();
        #pragma omp parallel num_threads(nthr)
        {
            AttScratch w; scratch_alloc(&w);
            #pragma omp for schedule(static)
            for (int task = 0; task < ntask; task++) att_fwd_task(task, out, lse, q, k, v, H, Hkv, &s, &w);
            scratch_free(&w);
        }
        blas_threads_restore(nt);
    } else {
        AttScratch w; scratch_alloc(&w);
        for (int task = 0; task < ntask; task++) att_fwd_task(task, out, lse, q, k, v, H, Hkv, &s, &w);
        scratch_free(&w);
    }
}

// dq[B,T,H,hd] +=, dk,dv[B,T,Hkv,hd] +=; dout, out[B,T,H,hd], q[B,T,H,hd], k,v[B,T,Hkv,hd], lse[B,H,T]
void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *out,
                        const float *q, const float *k, const float *v, const float *lse,
                        int B, int T, int H, int Hkv, int hd) {
    CHECK(Hkv > 0 && H % Hkv == 0, "attention: n_heads %d not a multiple of n_kv_heads %d", H, Hkv);
    AttShape s = { T, hd, H * hd, Hkv * hd, (float)(1.0 / sqrt((double)hd)) };
    int ntask = B * Hkv, nthr = omp_get_max_threads();
    if (ntask >= nthr) {
        int nt = blas_threads_serial();
        #pragma omp parallel num_threads(nthr)
        {
            AttScratch w; scratch_alloc(&w);
            #pragma omp for schedule(static)
            for (int task = 0; task < ntask; task++)
                att_bwd_task(task, dq, dk, dv, dout, out, q, k, v, lse, H, Hkv, &s, &w);
            scratch_free(&w);
        }
        blas_threads_restore(nt);
    } else {
        AttScratch w; scratch_alloc(&w);
        for (int task = 0; task < ntask; task++)
            att_bwd_task(task, dq, dk, dv, dout, out, q, k, v, lse, H, Hkv, &s, &w);
        scratch_free(&w);
    }
}
