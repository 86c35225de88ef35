// attention.c — causal multi-head attention with grouped KV heads, materialised
// probabilities (att is saved for backward, zeros above the diagonal).
//
// How it is made fast on a few cores:
//  * Every product is an OpenBLAS sgemm on strided views of q/k/v ([B,T,H,hd] rows
//    have stride H*hd), so nothing is transposed or copied.
//  * Work is split over (batch, head) tasks with OpenMP, each task calling
//    single-threaded sgemm and doing its own softmax while its T x T tile is in L2.
//    At T=256, hd=64 one head's products are too small (8 MFLOP) for OpenBLAS's own
//    threading to pay, and alternating OpenBLAS threads with OpenMP softmax loops per
//    head makes both thread pools fight for the cores. When there are fewer tasks than
//    threads the same task code runs serially with OpenBLAS threading each product.
//  * Causality: queries are processed in row blocks of ATT_BQ; block [i0,i1) only
//    touches keys [0,i1), which skips ~3/8 of the FLOPs at T=256 (more at larger T).
//  * Backward tasks are (batch, kv head): the H/Hkv query heads sharing a kv head
//    accumulate into the same dk/dv rows, so they run in one task, in order — no
//    races, and the sum order is fixed (bit-identical run to run).
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include "ops.h"
#include "../core/check.h"
#include "fastmath.h"

#ifndef ATT_BQ
#define ATT_BQ 64
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

// Forward of one head. Q,O [T,hd] (ld ldq), K,V [T,hd] (ld ldkv), A [T,T] probabilities.
static void att_fwd_head(float *O, float *A, const float *Q, const float *K, const float *V, const AttShape *s) {
    int T = s->T, hd = s->hd;
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        int m = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + m;   // rows [i0,nk), keys [0,nk)
        float *S = A + (size_t)i0 * T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, nk, hd,
                    s->scale, Q + (size_t)i0 * s->ldq, s->ldq, K, s->ldkv, 0.0f, S, T);
        for (int r = 0; r < m; r++) {
            int t = i0 + r;
            float *row = S + (size_t)r * T;
            float mx = -INFINITY;
            #pragma omp simd reduction(max:mx)
            for (int j = 0; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
            double sum = 0.0;                       // up to T terms: double keeps 1/sum exact-ish
            #pragma omp simd reduction(+:sum)
            for (int j = 0; j <= t; j++) { float e = fast_expf(row[j] - mx); row[j] = e; sum += e; }
            float inv = (float)(1.0 / sum);
            #pragma omp simd
            for (int j = 0; j <= t; j++) row[j] *= inv;
            for (int j = t + 1; j < T; j++) row[j] = 0.0f;   // causal mask (saved as zeros)
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, nk,
                    1.0f, S, T, V, s->ldkv, 0.0f, O + (size_t)i0 * s->ldq, s->ldq);
    }
}

// Backward of one head, accumulating. dO,Q,dQ [T,hd] (ld ldq); K,V,dK,dV [T,hd] (ld ldkv);
// A [T,T] saved probabilities; dS scratch [ATT_BQ, T].
// With S = scale * Q K^T, P = softmax(S), O = P V:
//   dP = dO V^T, dS_raw = P * (dP - rowsum(P * dP)),
//   dV += P^T dO, dQ += scale * dS_raw K, dK += scale * dS_raw^T Q.
static void att_bwd_head(float *dQ, float *dK, float *dV, const float *dO, const float *Q,
                         const float *K, const float *V, const float *A, float *dS, const AttShape *s) {
    int T = s->T, hd = s->hd;
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        int m = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + m;
        const float *P = A + (size_t)i0 * T;
        const float *dOb = dO + (size_t)i0 * s->ldq;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, nk, hd,
                    1.0f, dOb, s->ldq, V, s->ldkv, 0.0f, dS, nk);              // dP
        for (int r = 0; r < m; r++) {
            int t = i0 + r;
            const float *p = P + (size_t)r * T;
            float *d = dS + (size_t)r * nk;
            double rd = 0.0;
            #pragma omp simd reduction(+:rd)
            for (int j = 0; j <= t; j++) rd += (double)(p[j] * d[j]);
            float rdf = (float)rd;
            #pragma omp simd
            for (int j = 0; j <= t; j++) d[j] = p[j] * (d[j] - rdf);
            for (int j = t + 1; j < nk; j++) d[j] = 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hd, m,
                    1.0f, P, T, dOb, s->ldq, 1.0f, dV, s->ldkv);                // dV += P^T dO
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, nk,
                    s->scale, dS, nk, K, s->ldkv, 1.0f, dQ + (size_t)i0 * s->ldq, s->ldq);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hd, m,
                    s->scale, dS, nk, Q + (size_t)i0 * s->ldq, s->ldq, 1.0f, dK, s->ldkv);
    }
}

// Forward task = one (b, h) head; task = b*H + h.
static void att_fwd_task(int task, float *out, float *att, const float *q, const float *k, const float *v,
                         int H, int Hkv, const AttShape *s) {
    int T = s->T, hd = s->hd, b = task / H, h = task % H;
    size_t qo = (size_t)b * T * H * hd + (size_t)h * hd;
    size_t ko = (size_t)b * T * Hkv * hd + (size_t)(h / (H / Hkv)) * hd;
    att_fwd_head(out + qo, att + (size_t)task * T * T, q + qo, k + ko, v + ko, s);
}

// Backward task = one (b, kv head) with all the query heads that share it, in order;
// task = b*Hkv + kh. dS: scratch [ATT_BQ, T].
static void att_bwd_task(int task, float *dq, float *dk, float *dv, const float *dout, const float *q,
                         const float *k, const float *v, const float *att, int H, int Hkv,
                         float *dS, const AttShape *s) {
    int T = s->T, hd = s->hd, G = H / Hkv, b = task / Hkv, kh = task % Hkv;
    size_t ko = (size_t)b * T * Hkv * hd + (size_t)kh * hd;
    for (int h = kh * G; h < (kh + 1) * G; h++) {
        size_t qo = (size_t)b * T * H * hd + (size_t)h * hd;
        att_bwd_head(dq + qo, dk + ko, dv + ko, dout + qo, q + qo, k + ko, v + ko,
                     att + ((size_t)b * H + h) * T * T, dS, s);
    }
}

// out[B,T,H,hd], att[B,H,T,T]; q[B,T,H,hd], k,v[B,T,Hkv,hd]
void attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                       int B, int T, int H, int Hkv, int hd) {
    if (ops_dry_run) return;   // accounting mode: no math
    CHECK(Hkv > 0 && H % Hkv == 0, "attention: n_heads %d not a multiple of n_kv_heads %d", H, Hkv);
    AttShape s = { T, hd, H * hd, Hkv * hd, (float)(1.0 / sqrt((double)hd)) };
    int ntask = B * H, nthr = omp_get_max_threads();   // team size read before touching OpenBLAS
    if (ntask >= nthr) {
        int nt = blas_threads_serial();
        #pragma omp parallel for schedule(static) num_threads(nthr)
        for (int task = 0; task < ntask; task++) att_fwd_task(task, out, att, q, k, v, H, Hkv, &s);
        blas_threads_restore(nt);
    } else {
        for (int task = 0; task < ntask; task++) att_fwd_task(task, out, att, q, k, v, H, Hkv, &s);
    }
}

// dq[B,T,H,hd] +=, dk,dv[B,T,Hkv,hd] +=; dout[B,T,H,hd], q[B,T,H,hd], k,v[B,T,Hkv,hd], att[B,H,T,T]
void attention_backward(float *dq, float *dk, float *dv, const float *dout,
                        const float *q, const float *k, const float *v, const float *att,
                        int B, int T, int H, int Hkv, int hd) {
    if (ops_dry_run) return;   // accounting mode: no math
    CHECK(Hkv > 0 && H % Hkv == 0, "attention: n_heads %d not a multiple of n_kv_heads %d", H, Hkv);
    AttShape s = { T, hd, H * hd, Hkv * hd, (float)(1.0 / sqrt((double)hd)) };
    int ntask = B * Hkv, nthr = omp_get_max_threads();
    size_t scratch = sizeof(float) * ATT_BQ * (size_t)T;
    if (ntask >= nthr) {
        int nt = blas_threads_serial();
        #pragma omp parallel num_threads(nthr)
        {
            float *dS = xmalloc(scratch);
            #pragma omp for schedule(static)
            for (int task = 0; task < ntask; task++)
                att_bwd_task(task, dq, dk, dv, dout, q, k, v, att, H, Hkv, dS, &s);
            free(dS);
        }
        blas_threads_restore(nt);
    } else {
        float *dS = xmalloc(scratch);
        for (int task = 0; task < ntask; task++)
            att_bwd_task(task, dq, dk, dv, dout, q, k, v, att, H, Hkv, dS, &s);
        free(dS);
    }
}
