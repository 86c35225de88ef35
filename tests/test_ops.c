// test_ops.c — every fp32 kernel of the CPU back end (src/backend/cpu/) and the GEMM of its
// op table: finite-difference gradient checks of each backward against its forward, naive
// references, accumulation, aliasing, determinism, and guard regions around every output
// (ggml-style: a write one element out of bounds fails).
//
// Finite differences: the objective is L = sum(out * w) with fixed random w, so dL/dout = w
// is what we feed to backward. The forward runs in fp32 but L is summed in double.
// Central differences with eps = 1e-3 have truncation error O(eps^2 * f''') ~ 1e-6
// (inputs are O(1)), but the fp32 forward rounds each output by ~6e-8 relative, and that
// noise is divided by 2*eps: ~3e-5 * sqrt(#outputs) * |out| in the difference quotient,
// i.e. up to a few 1e-4 here. Hence |g_fd - g| <= atol + rtol*|g| with atol = 1e-3
// (noise floor) and rtol = 1e-2 (relative noise on large gradients); a wrong formula
// (missing term, wrong sign, wrong index) is off by O(1) and fails by orders of magnitude.
#include <stdint.h>
#include <omp.h>
#include "testlib.h"
#include "backend/ops.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/fastmath.h"
#include "backend/cpu/reduce.h"
#include "core/rng.h"

TL_MAIN_DEFS

#define FD_EPS 1e-3
#define FD_ATOL 1e-3
#define FD_RTOL 1e-2

// ---- guarded buffers -----------------------------------------------------------------
// Every buffer has GUARD floats on each side holding a sentinel bit pattern (a NaN that
// no op produces). gcheck() verifies all live buffers; gfree_all() releases them.
#define GUARD 16
#define MAXBUF 256
static const uint32_t SENTINEL = 0x7fa5a5a5u;
static float *g_bufs[MAXBUF]; static size_t g_lens[MAXBUF]; static int g_nbuf;

static float sentinel_f(void) { float f; memcpy(&f, &SENTINEL, 4); return f; }
__attribute__((noinline)) static float *galloc(size_t n) {
    if (g_nbuf == MAXBUF) { fprintf(stderr, "test_ops: too many buffers\n"); exit(1); }
    float *base = malloc(sizeof(float) * (n + 2 * GUARD));
    float s = sentinel_f();
    for (size_t i = 0; i < n + 2 * GUARD; i++) base[i] = s;
    g_bufs[g_nbuf] = base; g_lens[g_nbuf++] = n;
    return base + GUARD;
}
// 1 if every guard of every live buffer is intact.
static int gcheck(void) {
    for (int b = 0; b < g_nbuf; b++) {
        const float *base = g_bufs[b]; size_t n = g_lens[b];
        for (size_t i = 0; i < GUARD; i++) {
            if (memcmp(&base[i], &SENTINEL, 4) || memcmp(&base[GUARD + n + i], &SENTINEL, 4)) return 0;
        }
    }
    return 1;
}
static void gfree_all(void) { for (int b = 0; b < g_nbuf; b++) free(g_bufs[b]); g_nbuf = 0; }

static Rng g_rng = { 12345 };
// Uniform in [-a, a).
static float *grand(size_t n, float a) {
    float *p = galloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (2.0f * rng_uniform(&g_rng) - 1.0f) * a;
    return p;
}
static float *gzeros(size_t n) { float *p = galloc(n); memset(p, 0, sizeof(float) * n); return p; }
static float *gcopy(const float *src, size_t n) { float *p = galloc(n); memcpy(p, src, sizeof(float) * n); return p; }
static double dot_d(const float *a, const float *w, size_t n) {
    double s = 0; for (size_t i = 0; i < n; i++) s += (double)a[i] * w[i]; return s;
}

// ---- finite-difference driver --------------------------------------------------------
// f(ctx) runs the forward on the current inputs and returns L in double.
typedef double (*ObjFn)(void *ctx);
// Perturbs each x[i], compares the central difference with g[i]. Returns the worst
// |fd - g| / (atol + rtol*|g|) (<= 1 passes) and describes the worst element in msg.
static double fd_check(ObjFn f, void *ctx, float *x, const float *g, size_t n, char *msg, size_t msglen) {
    double worst = 0;
    snprintf(msg, msglen, "ok");
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i];
        float xp = (float)(x0 + FD_EPS), xm = (float)(x0 - FD_EPS);
        x[i] = xp; double lp = f(ctx);
        x[i] = xm; double lm = f(ctx);
        x[i] = x0;
        double fd = (lp - lm) / ((double)xp - (double)xm);   // the step fp32 actually took
        double r = fabs(fd - g[i]) / (FD_ATOL + FD_RTOL * fabs(g[i]));
        if (!(r <= worst)) {
            worst = r;
            snprintf(msg, msglen, "element %zu: fd %.6g vs backward %.6g", i, fd, (double)g[i]);
        }
    }
    return worst;
}
#define FD_EXPECT(what, f, ctx, x, g, n) do { char m_[200]; \
    double r_ = fd_check((f), (ctx), (x), (g), (n), m_, sizeof m_); \
    EXPECT(r_ <= 1.0, "%s: gradient mismatch (ratio %.3g): %s", (what), r_, m_); } while (0)
#define GUARDS_EXPECT() EXPECT(gcheck(), "a guard region was overwritten")

// max |a-b| / (atol + rtol*|b|) <= 1
#define CLOSE_EXPECT(what, a, b, n, atol, rtol) do { size_t w_; \
    double r_ = tl_close_ratio((a), (b), (n), (atol), (rtol), &w_); \
    EXPECT(r_ <= 1.0, "%s: mismatch ratio %.3g at %zu: %.8g vs %.8g", (what), r_, w_, \
           (double)(a)[w_], (double)(b)[w_]); } while (0)
#define SAME_EXPECT(what, a, b, n) \
    EXPECT(memcmp((a), (b), sizeof(float) * (n)) == 0, "%s: results differ bitwise", (what))

// ====================================================================================
// GEMM (the op table's gemm on the CPU back end: cblas_sgemm's row-major convention)
static Backend *cpu;
// C[M,N] = alpha·op(A)·op(B) + beta·C in double, op(A) [M,K]
static void gemm_ref(float *C, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
            C[i * ldc + j] = (float)(alpha * acc + beta * C[i * ldc + j]);
        }
}

TEST(gemm_matches_naive) {
    // every transpose combination, leading dimensions wider than the rows, alpha and beta,
    // odd sizes; then the same GEMMs as one op_gemm_group
    int shapes[][3] = { {5, 7, 3}, {37, 19, 23}, {64, 130, 70} };
    for (int s = 0; s < 3; s++)
        for (int tr = 0; tr < 4; tr++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = tr & 1, tb = tr >> 1;
            int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
            float *A = grand((size_t)(ta ? K : M) * lda, 1), *B = grand((size_t)(tb ? N : K) * ldb, 1);
            float *C = grand((size_t)M * ldc, 1), *R = gcopy(C, (size_t)M * ldc);
            op_gemm(cpu, ta ? TR_T : TR_N, tb ? TR_T : TR_N, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, C, ldc);
            gemm_ref(R, ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, ldc);
            char what[64]; snprintf(what, sizeof what, "gemm %dx%dx%d ta=%d tb=%d", M, N, K, ta, tb);
            CLOSE_EXPECT(what, C, R, (size_t)M * ldc, 1e-5, 1e-5);   // padding columns too: untouched
            float *C2 = grand((size_t)M * ldc, 1), *R2 = gcopy(C2, (size_t)M * ldc);
            GemmArgs g[2] = { { ta ? TR_T : TR_N, tb ? TR_T : TR_N, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C2, ldc },
                              { ta ? TR_T : TR_N, tb ? TR_T : TR_N, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, R2, ldc } };
            float *X = gcopy(C2, (size_t)M * ldc), *Y = gcopy(R2, (size_t)M * ldc);
            op_gemm_group(cpu, 2, g);
            gemm_ref(X, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, ldc);
            gemm_ref(Y, ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, ldc);
            CLOSE_EXPECT("gemm_group[0]", C2, X, (size_t)M * ldc, 1e-5, 1e-5);
            CLOSE_EXPECT("gemm_group[1]", R2, Y, (size_t)M * ldc, 1e-5, 1e-5);
        }
    GUARDS_EXPECT();
    gfree_all();
}

// y = x @ W (W [din,dout]) and its backward as the model writes them: dx += dy W^T, dW += x^T dy.
typedef struct { float *y, *x, *W, *w; int N, din, dout; } MatCtx;
static double mat_obj(void *p) {
    MatCtx *c = p;
    op_gemm(cpu, TR_N, TR_N, c->N, c->dout, c->din, 1.0f, c->x, c->din, c->W, c->dout, 0.0f, c->y, c->dout);
    return dot_d(c->y, c->w, (size_t)c->N * c->dout);
}
TEST(gemm_gradcheck) {
    MatCtx c = { .N = 5, .din = 7, .dout = 3 };
    c.x = grand(35, 1); c.W = grand(21, 1); c.y = galloc(15); c.w = grand(15, 1);
    float *dx = gzeros(35), *dW = gzeros(21);
    op_gemm(cpu, TR_N, TR_T, 5, 7, 3, 1.0f, c.w, 3, c.W, 3, 1.0f, dx, 7);
    op_gemm(cpu, TR_T, TR_N, 7, 3, 5, 1.0f, c.x, 7, c.w, 3, 1.0f, dW, 3);
    FD_EXPECT("gemm dx", mat_obj, &c, c.x, dx, 35);
    FD_EXPECT("gemm dW", mat_obj, &c, c.W, dW, 21);
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// RMSNorm
typedef struct { float *y, *rstd, *x, *gamma, *w; int N, d; float eps; } RmsCtx;
static double rms_obj(void *p) {
    RmsCtx *c = p;
    cpu_rmsnorm_forward(c->y, c->rstd, c->x, c->gamma, c->N, c->d, c->eps);
    return dot_d(c->y, c->w, (size_t)c->N * c->d);
}

TEST(rmsnorm_forward_reference) {
    int N = 7, d = 13; float eps = 1e-5f;
    float *x = grand(N * d, 2), *gamma = grand(d, 1.5f), *y = galloc(N * d), *rstd = galloc(N), *ref = galloc(N * d);
    cpu_rmsnorm_forward(y, rstd, x, gamma, N, d, eps);
    for (int n = 0; n < N; n++) {
        double ss = 0; for (int j = 0; j < d; j++) ss += (double)x[n * d + j] * x[n * d + j];
        double r = 1.0 / sqrt(ss / d + eps);
        EXPECT(fabs(rstd[n] - r) <= 1e-6 * r, "rstd[%d] %.8g vs %.8g", n, rstd[n], r);
        for (int j = 0; j < d; j++) ref[n * d + j] = (float)(x[n * d + j] * r * gamma[j]);
    }
    CLOSE_EXPECT("rmsnorm y", y, ref, N * d, 1e-6, 1e-5);
    GUARDS_EXPECT();
    gfree_all();
}

TEST(rmsnorm_gradcheck) {
    int shapes[][2] = { {7, 13}, {3, 70} };   // d=70 spans two dgamma column blocks
    for (int s = 0; s < 2; s++) {
        RmsCtx c = { .N = shapes[s][0], .d = shapes[s][1], .eps = 1e-5f };
        size_t nd = (size_t)c.N * c.d;
        c.x = grand(nd, 2); c.gamma = grand(c.d, 1.5f); c.y = galloc(nd); c.rstd = galloc(c.N); c.w = grand(nd, 1);
        rms_obj(&c);
        float *dx = gzeros(nd), *dg = gzeros(c.d);
        cpu_rmsnorm_backward(dx, dg, c.w, c.x, c.gamma, c.rstd, c.N, c.d, 1, 1);
        FD_EXPECT("rmsnorm dx", rms_obj, &c, c.x, dx, nd);
        FD_EXPECT("rmsnorm dgamma", rms_obj, &c, c.gamma, dg, c.d);
    }
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// RMSNorm of a column-sharded residual (BTP): rowsumsq, rownorm, scale_rows, rowdot and
// sharded_rmsnorm_backward.
TEST(sharded_rmsnorm_equals_rmsnorm) {
    // Two column shards of x with S = S0 + S1 (the all-reduce) normalised with the full
    // width give the full row's RMSNorm; online: ŷ with the local width, then ×rms_local
    // and ÷rms_full (scale_rows) gives the same as normalising with the full statistic.
    int N = 9, d = 26, h = 13; float eps = 1e-5f;
    float *x = grand((size_t)N * d, 2), *gamma = grand(d, 1.5f), *y = galloc((size_t)N * d), *rstd = galloc(N);
    cpu_rmsnorm_forward(y, rstd, x, gamma, N, d, eps);
    float *x0 = galloc((size_t)N * h), *x1 = galloc((size_t)N * h), *S0 = galloc(N), *S1 = galloc(N), *S = galloc(N);
    for (int n = 0; n < N; n++) { memcpy(x0 + n * h, x + n * d, 4 * h); memcpy(x1 + n * h, x + n * d + h, 4 * h); }
    cpu_rowsumsq(S0, x0, N, h); cpu_rowsumsq(S1, x1, N, h);
    for (int n = 0; n < N; n++) {
        S[n] = S0[n] + S1[n];
        double ss = 0; for (int j = 0; j < d; j++) ss += (double)x[n * d + j] * x[n * d + j];
        EXPECT(fabs(S[n] - ss) <= 1e-5 * ss, "rowsumsq row %d: %.8g vs %.8g", n, S[n], ss);
    }
    float *y0 = galloc((size_t)N * h), *y1 = galloc((size_t)N * h), *got = galloc((size_t)N * d);
    cpu_rownorm(y0, x0, gamma, S, N, h, d, eps); cpu_rownorm(y1, x1, gamma + h, S, N, h, d, eps);
    for (int n = 0; n < N; n++) { memcpy(got + n * d, y0 + n * h, 4 * h); memcpy(got + n * d + h, y1 + n * h, 4 * h); }
    CLOSE_EXPECT("sync: shards normalised with the full statistic", got, y, (size_t)N * d, 1e-6, 1e-5);
    // online steps 2-3, 5, 7 on one shard, as a G = 2 bottleneck of r = h/2 (two slots)
    cpu_rownorm(y0, x0, gamma, S0, N, h, h, eps);                      // local scale
    SlotView v = { .N = N, .G = 2, .r = 6, .ld = 13, .off = { 0, 6 } };  // 12 of 13 columns as 2 slots
    float *P = gcopy(y0, (size_t)N * h);
    cpu_scale_rows(P, &v, S0, h, eps, +1);
    cpu_scale_rows(P, &v, S, d, eps, -1);
    float *want = galloc((size_t)N * h);
    cpu_rownorm(want, x0, gamma, S, N, h, d, eps);
    int ok = 1;
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < 12; k++) if (fabs(P[n * h + k] - want[n * h + k]) > 1e-6 + 1e-5 * fabs(want[n * h + k])) ok = 0;
        if (P[n * h + 12] != y0[n * h + 12]) ok = 0;   // column 12 is outside the view: untouched
    }
    EXPECT(ok, "online: cpu_scale_rows(+1 local, -1 full) differs from normalising with the full statistic");
    // rowdot over two slots of the view
    float *dot = galloc(N), *Q = grand((size_t)N * h, 1);
    cpu_rowdot(dot, P, Q, &v);
    for (int n = 0; n < N; n++) {
        double r = 0; for (int k = 0; k < 12; k++) r += (double)P[n * h + k] * Q[n * h + k];
        EXPECT(fabs(dot[n] - r) <= 1e-6 + 1e-5 * fabs(r), "rowdot row %d: %.8g vs %.8g", n, dot[n], r);
    }
    GUARDS_EXPECT();
    gfree_all();
}

// L = Σ w·a with a = x·γ/sqrt(Σx²/d + eps) over the full row (one shard = the whole row):
// sharded_rmsnorm_backward with dot = Σ da·a must be its gradient.
typedef struct { float *x, *gamma, *S, *a, *w; int N, d; float eps; } ShCtx;
static double sh_obj(void *p) {
    ShCtx *c = p;
    cpu_rowsumsq(c->S, c->x, c->N, c->d);
    cpu_rownorm(c->a, c->x, c->gamma, c->S, c->N, c->d, c->d, c->eps);
    return dot_d(c->a, c->w, (size_t)c->N * c->d);
}
TEST(sharded_rmsnorm_gradcheck) {
    int shapes[][2] = { {7, 13}, {3, 70} };   // d=70 spans two dgamma column blocks
    for (int s = 0; s < 2; s++) {
        ShCtx c = { .N = shapes[s][0], .d = shapes[s][1], .eps = 1e-5f };
        size_t nd = (size_t)c.N * c.d;
        c.x = grand(nd, 2); c.gamma = grand(c.d, 1.5f); c.S = galloc(c.N); c.a = galloc(nd); c.w = grand(nd, 1);
        sh_obj(&c);
        float *dot = galloc(c.N), *dx = gzeros(nd), *dg = gzeros(c.d);
        SlotView row = { .N = c.N, .G = 1, .r = c.d, .ld = c.d };
        cpu_rowdot(dot, c.w, c.a, &row);
        cpu_sharded_rmsnorm_backward(dx, dg, c.w, c.x, c.gamma, c.S, dot, c.N, c.d, c.d, c.eps, 1);
        FD_EXPECT("sharded rmsnorm dx", sh_obj, &c, c.x, dx, nd);
        FD_EXPECT("sharded rmsnorm dgamma", sh_obj, &c, c.gamma, dg, c.d);
        // and it is RMSNorm's own backward
        float *rstd = galloc(c.N), *y = galloc(nd), *rdx = gzeros(nd), *rdg = gzeros(c.d);
        cpu_rmsnorm_forward(y, rstd, c.x, c.gamma, c.N, c.d, c.eps);
        cpu_rmsnorm_backward(rdx, rdg, c.w, c.x, c.gamma, rstd, c.N, c.d, 1, 1);
        CLOSE_EXPECT("sharded vs full rmsnorm dx", dx, rdx, nd, 1e-6, 1e-4);
        CLOSE_EXPECT("sharded vs full rmsnorm dgamma", dg, rdg, c.d, 1e-6, 1e-4);
    }
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// activations
typedef struct { float *z, *g, *u, *w; size_t n; int mode; } ActCtx;   // mode: 0 silu, 1 swiglu, 2 g*u
static double act_obj(void *p) {
    ActCtx *c = p;
    if (c->mode == 0) cpu_silu_forward(c->z, c->g, c->n);
    else cpu_swiglu_forward(c->z, c->g, c->u, c->n, c->mode == 1);
    return dot_d(c->z, c->w, c->n);
}

TEST(activation_forward_reference) {
    size_t n = 1000;
    float *g = grand(n, 12), *u = grand(n, 2), *z = galloc(n), *ref = galloc(n);
    g[0] = -100.0f; g[1] = 100.0f; g[2] = 0.0f;    // saturated ends of the sigmoid
    cpu_silu_forward(z, g, n);
    for (size_t i = 0; i < n; i++) ref[i] = (float)(g[i] / (1.0 + exp(-(double)g[i])));
    CLOSE_EXPECT("silu", z, ref, n, 1e-7, 1e-6);
    cpu_swiglu_forward(z, g, u, n, 1);
    for (size_t i = 0; i < n; i++) ref[i] = (float)(g[i] / (1.0 + exp(-(double)g[i])) * u[i]);
    CLOSE_EXPECT("swiglu silu", z, ref, n, 1e-7, 1e-6);
    cpu_swiglu_forward(z, g, u, n, 0);
    for (size_t i = 0; i < n; i++) ref[i] = g[i] * u[i];
    SAME_EXPECT("swiglu plain", z, ref, n);
    float *x = gcopy(g, n);
    cpu_add_inplace(x, u, n);
    for (size_t i = 0; i < n; i++) ref[i] = g[i] + u[i];
    SAME_EXPECT("add_inplace", x, ref, n);
    GUARDS_EXPECT();
    gfree_all();
}

TEST(activation_gradcheck) {
    size_t n = 13;
    for (int mode = 0; mode < 3; mode++) {
        ActCtx c = { .n = n, .mode = mode };
        c.g = grand(n, 4); c.u = grand(n, 2); c.z = galloc(n); c.w = grand(n, 1);
        float *dg = gzeros(n), *du = gzeros(n);
        if (mode == 0) cpu_silu_backward(dg, c.w, c.g, n);
        else cpu_swiglu_backward(dg, du, c.w, c.g, c.u, n, mode == 1);
        const char *name = mode == 0 ? "silu dx" : mode == 1 ? "swiglu(silu) dg" : "swiglu(plain) dg";
        FD_EXPECT(name, act_obj, &c, c.g, dg, n);
        if (mode) {
            FD_EXPECT(mode == 1 ? "swiglu(silu) du" : "swiglu(plain) du", act_obj, &c, c.u, du, n);
            // one gradient at a time (NULL other) gives the same values
            float *dg2 = gzeros(n), *du2 = gzeros(n);
            cpu_swiglu_backward(dg2, NULL, c.w, c.g, c.u, n, mode == 1);
            cpu_swiglu_backward(NULL, du2, c.w, c.g, c.u, n, mode == 1);
            CLOSE_EXPECT("swiglu dg alone", dg2, dg, n, 1e-7, 1e-6);
            CLOSE_EXPECT("swiglu du alone", du2, du, n, 1e-7, 1e-6);
        }
    }
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// RoPE
typedef struct { float *x, *buf, *w; int B, T, H, hd; float theta; } RopeCtx;
static double rope_obj(void *p) {
    RopeCtx *c = p;
    size_t n = (size_t)c->B * c->T * c->H * c->hd;
    memcpy(c->buf, c->x, sizeof(float) * n);
    cpu_rope_forward(c->buf, c->B, c->T, c->H, c->hd, c->theta);
    return dot_d(c->buf, c->w, n);
}
// Double-precision reference of the documented formula.
static void rope_ref(float *y, const float *x, int B, int T, int H, int hd, double theta) {
    int half = hd / 2;
    for (int b = 0; b < B; b++) for (int t = 0; t < T; t++) for (int h = 0; h < H; h++) {
        size_t o = (((size_t)b * T + t) * H + h) * hd;
        for (int i = 0; i < half; i++) {
            double a = t * pow(theta, -2.0 * i / hd), x0 = x[o + i], x1 = x[o + i + half];
            y[o + i] = (float)(x0 * cos(a) - x1 * sin(a));
            y[o + i + half] = (float)(x0 * sin(a) + x1 * cos(a));
        }
    }
}

TEST(rope_reference_and_identity) {
    // T=4096: angles up to ~4096 rad, where an fp32 angle would be visibly off.
    int cases[][4] = { {2, 5, 3, 6}, {1, 4096, 2, 64} };
    for (int s = 0; s < 2; s++) {
        int B = cases[s][0], T = cases[s][1], H = cases[s][2], hd = cases[s][3];
        size_t n = (size_t)B * T * H * hd;
        float *x = grand(n, 1), *y = gcopy(x, n), *ref = galloc(n);
        cpu_rope_forward(y, B, T, H, hd, 10000.0f);
        rope_ref(ref, x, B, T, H, hd, 10000.0);
        CLOSE_EXPECT("rope vs double reference", y, ref, n, 2e-6, 1e-5);
        cpu_rope_backward(y, B, T, H, hd, 10000.0f);    // inverse rotation
        CLOSE_EXPECT("rope_backward(cpu_rope_forward(x)) == x", y, x, n, 2e-6, 1e-5);
    }
    GUARDS_EXPECT();
    gfree_all();
}

TEST(rope_gradcheck) {
    float thetas[] = { 10000.0f, 3.0f };   // small theta: large angles even at T=5
    for (int s = 0; s < 2; s++) {
        RopeCtx c = { .B = 2, .T = 5, .H = 3, .hd = 6, .theta = thetas[s] };
        size_t n = 2 * 5 * 3 * 6;
        c.x = grand(n, 1); c.buf = galloc(n); c.w = grand(n, 1);
        float *dx = gcopy(c.w, n);
        cpu_rope_backward(dx, c.B, c.T, c.H, c.hd, c.theta);   // in place: dL/dx from dL/dy
        FD_EXPECT("rope dx", rope_obj, &c, c.x, dx, n);
    }
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// attention
typedef struct { float *out, *lse, *q, *k, *v, *w; int B, T, H, Hkv, hd; } AttCtx;
static double att_obj(void *p) {
    AttCtx *c = p;
    cpu_attention_forward(c->out, c->lse, c->q, c->k, c->v, c->B, c->T, c->H, c->Hkv, c->hd);
    return dot_d(c->out, c->w, (size_t)c->B * c->T * c->H * c->hd);
}

// Naive double-precision attention forward and backward (per element, straight from
// the definitions, the probabilities materialised) — independent of the tiled flash kernel.
// lse[B,H,T] = log Σ_s exp(scale·q·k) of each query row.
static void att_ref(float *out, float *lse, float *dq, float *dk, float *dv, const float *dout,
                    const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int hd) {
    int G = H / Hkv; double sc = 1.0 / sqrt((double)hd);
    double *P = malloc(sizeof(double) * T * T), *dP = malloc(sizeof(double) * T * T);
    for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) {
        int kh = h / G;
        #define Q_(t, i) q[(((size_t)b * T + (t)) * H + h) * hd + (i)]
        #define K_(t, i) k[(((size_t)b * T + (t)) * Hkv + kh) * hd + (i)]
        #define V_(t, i) v[(((size_t)b * T + (t)) * Hkv + kh) * hd + (i)]
        #define DO_(t, i) dout[(((size_t)b * T + (t)) * H + h) * hd + (i)]
        for (int t = 0; t < T; t++) {
            double mx = -1e300;
            for (int s = 0; s <= t; s++) {
                double a = 0; for (int i = 0; i < hd; i++) a += (double)Q_(t, i) * K_(s, i);
                P[t * T + s] = a * sc; if (a * sc > mx) mx = a * sc;
            }
            double sum = 0;
            for (int s = 0; s <= t; s++) { P[t * T + s] = exp(P[t * T + s] - mx); sum += P[t * T + s]; }
            for (int s = 0; s < T; s++) P[t * T + s] = s <= t ? P[t * T + s] / sum : 0.0;
            lse[((size_t)b * H + h) * T + t] = (float)(mx + log(sum));
            for (int i = 0; i < hd; i++) {
                double o = 0; for (int s = 0; s <= t; s++) o += P[t * T + s] * V_(s, i);
                out[(((size_t)b * T + t) * H + h) * hd + i] = (float)o;
            }
        }
        if (!dq) continue;
        for (int t = 0; t < T; t++) {
            double rd = 0;
            for (int s = 0; s <= t; s++) {
                double a = 0; for (int i = 0; i < hd; i++) a += (double)DO_(t, i) * V_(s, i);
                dP[t * T + s] = a; rd += a * P[t * T + s];
            }
            for (int s = 0; s <= t; s++) {
                double ds = P[t * T + s] * (dP[t * T + s] - rd) * sc;
                for (int i = 0; i < hd; i++) {
                    dq[(((size_t)b * T + t) * H + h) * hd + i] += (float)(ds * K_(s, i));
                    dk[(((size_t)b * T + s) * Hkv + kh) * hd + i] += (float)(ds * Q_(t, i));
                    dv[(((size_t)b * T + s) * Hkv + kh) * hd + i] += (float)(P[t * T + s] * DO_(t, i));
                }
            }
        }
        #undef Q_
        #undef K_
        #undef V_
        #undef DO_
    }
    free(P); free(dP);
}

// The kernels in use against att_ref on one shape; `label` starts the failure messages.
static void att_check_naive(const char *label, int B, int T, int H, int Hkv, int hd) {
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, nl = (size_t)B * H * T;
    float *q = grand(nq, 1.5f), *k = grand(nk, 1.5f), *v = grand(nk, 1), *dout = grand(nq, 1);
    float *out = galloc(nq), *lse = galloc(nl), *rout = galloc(nq), *rlse = galloc(nl);
    float *dq = gzeros(nq), *dk = gzeros(nk), *dv = gzeros(nk);
    float *rdq = gzeros(nq), *rdk = gzeros(nk), *rdv = gzeros(nk);
    cpu_attention_forward(out, lse, q, k, v, B, T, H, Hkv, hd);
    cpu_attention_backward(dq, dk, dv, dout, out, q, k, v, lse, B, T, H, Hkv, hd);
    att_ref(rout, rlse, rdq, rdk, rdv, dout, q, k, v, B, T, H, Hkv, hd);
    const float *got[5] = { out, lse, dq, dk, dv }, *want[5] = { rout, rlse, rdq, rdk, rdv };
    const char *nm[5] = { "out", "lse", "dq", "dk", "dv" };
    size_t len[5] = { nq, nl, nq, nk, nk };
    for (int i = 0; i < 5; i++) {
        char what[120];
        snprintf(what, sizeof what, "%s B=%d T=%d H=%d:%d hd=%d %s", label, B, T, H, Hkv, hd, nm[i]);
        CLOSE_EXPECT(what, got[i], want[i], len[i], 1e-5, i == 1 ? 1e-5 : 1e-4);
    }
    GUARDS_EXPECT();
    gfree_all();
}

TEST(attention_matches_naive) {
    // T=150 spans three query blocks (the last ragged); T=300 and 600 span five and ten key
    // tiles (ATT_BK = 64: the online softmax re-bases its running sums); B*H >= threads takes
    // the one-task-per-head backward, B=1,H=Hkv=1 the two-pass one.
    int cases[][5] = { {2, 150, 4, 2, 8}, {1, 150, 1, 1, 16}, {2, 5, 3, 1, 6}, {3, 64, 2, 2, 4},
                       {1, 300, 2, 1, 8}, {1, 600, 1, 1, 4} };
    for (int s = 0; s < 6; s++) att_check_naive("attention", cases[s][0], cases[s][1], cases[s][2], cases[s][3], cases[s][4]);
}

TEST(attention_gradcheck) {
    // odd shapes, grouped KV (H=3, Hkv=1), plain MHA, T=70 > one query block, and T=260 > one
    // key tile (the rescaled running sums are differentiated through too); head dim 64 (the
    // target shape of the vector kernels) and, last, the scalar kernels at an odd head dim.
    int cases[][5] = { {2, 5, 3, 1, 6}, {1, 7, 2, 2, 4}, {1, 70, 2, 1, 4}, {1, 260, 1, 1, 2}, {1, 70, 2, 1, 64},
                       {1, 70, 2, 1, 12} };
    const char *was = cpu_attention_isa();
    for (int s = 0; s < 6; s++) {
        if (s == 5) cpu_attention_use_isa("scalar");
        AttCtx c = { .B = cases[s][0], .T = cases[s][1], .H = cases[s][2], .Hkv = cases[s][3], .hd = cases[s][4] };
        size_t nq = (size_t)c.B * c.T * c.H * c.hd, nk = (size_t)c.B * c.T * c.Hkv * c.hd;
        c.q = grand(nq, 1.5f); c.k = grand(nk, 1.5f); c.v = grand(nk, 1); c.w = grand(nq, 1);
        c.out = galloc(nq); c.lse = galloc((size_t)c.B * c.H * c.T);
        att_obj(&c);
        float *dq = gzeros(nq), *dk = gzeros(nk), *dv = gzeros(nk);
        cpu_attention_backward(dq, dk, dv, c.w, c.out, c.q, c.k, c.v, c.lse, c.B, c.T, c.H, c.Hkv, c.hd);
        char what[64];
        snprintf(what, sizeof what, "attention %s hd=%d dq", cpu_attention_isa(), c.hd); FD_EXPECT(what, att_obj, &c, c.q, dq, nq);
        snprintf(what, sizeof what, "attention %s hd=%d dk", cpu_attention_isa(), c.hd); FD_EXPECT(what, att_obj, &c, c.k, dk, nk);
        snprintf(what, sizeof what, "attention %s hd=%d dv", cpu_attention_isa(), c.hd); FD_EXPECT(what, att_obj, &c, c.v, dv, nk);
    }
    cpu_attention_use_isa(was);
    GUARDS_EXPECT();
    gfree_all();
}

// The tile kernels of every instruction set this build has (backend/cpu/attn_kernels.h:
// avx512, avx2, scalar), each against the float64 reference: T below one 64-row tile (1, 5,
// 37), exactly one, ragged (67, 100, 130, 150, 200: a partial diagonal tile and last query
// block); GQA 3:1, 4:2, 6:2 and plain MHA; head dims 8 … 128 (20 and 48: the masked tails of
// the 16-lane vectors, 128: two column blocks). B·Hkv = 1 < 2 threads takes the two-pass
// backward, the others one task per kv head.
static const char *ATT_ISAS[] = { "avx512", "avx2", "scalar" };
TEST(attention_kernels_match_float64) {
    int cases[][5] = { {1, 1, 2, 1, 64}, {2, 5, 3, 1, 16}, {1, 37, 4, 2, 64}, {1, 64, 2, 2, 32}, {2, 100, 4, 2, 64},
                       {1, 130, 6, 2, 48}, {1, 200, 2, 1, 128}, {1, 67, 2, 1, 20}, {2, 150, 4, 2, 8} };
    const char *was = cpu_attention_isa();
    int ran = 0;
    for (int is = 0; is < 3; is++) {
        if (!cpu_attention_use_isa(ATT_ISAS[is])) { printf("  (attention kernels %s: not in this build)\n", ATT_ISAS[is]); continue; }
        ran++;
        for (int s = 0; s < 9; s++) att_check_naive(ATT_ISAS[is], cases[s][0], cases[s][1], cases[s][2], cases[s][3], cases[s][4]);
    }
    cpu_attention_use_isa(was);
    EXPECT(ran >= 1 && !strcmp(cpu_attention_isa(), was), "kernel selection: %d sets ran, %s restored as %s", ran, was, cpu_attention_isa());
}

// Forward and backward (from zero gradients) into new buffers: r = { out, lse, dq, dk, dv }.
static const char *ATT_NAMES[5] = { "out", "lse", "dq", "dk", "dv" };
static void att_run(float *r[5], const float *q, const float *k, const float *v, const float *dout,
                    int B, int T, int H, int Hkv, int hd) {
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
    r[0] = galloc(nq); r[1] = galloc((size_t)B * H * T); r[2] = gzeros(nq); r[3] = gzeros(nk); r[4] = gzeros(nk);
    cpu_attention_forward(r[0], r[1], q, k, v, B, T, H, Hkv, hd);
    cpu_attention_backward(r[2], r[3], r[4], dout, r[0], q, k, v, r[1], B, T, H, Hkv, hd);
}

// The vector kernels against the scalar ones on a longer sequence (T = 300: five key tiles,
// online re-basing) at head dim 64 with GQA: the same algorithm, different rounding only.
TEST(attention_vector_matches_scalar) {
    int B = 1, T = 300, H = 4, Hkv = 2, hd = 64;
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, nl = (size_t)B * H * T;
    float *q = grand(nq, 2), *k = grand(nk, 2), *v = grand(nk, 1), *dout = grand(nq, 1);
    float *res[3][5];
    const char *was = cpu_attention_isa();
    int have[3] = { 0 };
    for (int is = 0; is < 3; is++) {
        if (!cpu_attention_use_isa(ATT_ISAS[is])) continue;
        have[is] = 1;
        att_run(res[is], q, k, v, dout, B, T, H, Hkv, hd);
    }
    cpu_attention_use_isa(was);
    size_t len[5] = { nq, nl, nq, nk, nk };
    int compared = 0;
    for (int is = 0; is < 2; is++) {
        if (!have[is]) continue;
        compared++;
        for (int i = 0; i < 5; i++) {
            char what[64]; snprintf(what, sizeof what, "%s vs scalar %s", ATT_ISAS[is], ATT_NAMES[i]);
            CLOSE_EXPECT(what, res[is][i], res[2][i], len[i], 1e-6, 1e-5);
        }
    }
    if (!compared) SKIP_TEST("this build has no vector attention kernels (neither AVX-512F nor AVX2+FMA targeted)");
    GUARDS_EXPECT();
    gfree_all();
}

// Same bits for 1, 2 and 3 threads: the forward's (head, query block) items, the backward's
// one-task-per-kv-head path (B·Hkv = 4 tasks) and its two-pass path (B·Hkv = 1 < threads)
// sum every element in the same order, and the threads' contiguous shares of items and tasks
// (uneven at 3 threads) cover each once. Two fixed cases, then generated shapes.
TEST(attention_threads_bit_identical) {
    int cases[8][5] = { {2, 200, 4, 2, 64}, {1, 200, 3, 1, 32} };
    for (int s = 2; s < 8; s++) {   // B 1-4, Hkv 1-3, 1-3 query heads per kv head, T 1-260, hd 16/32/64
        int Hkv = 1 + (int)(rng_uniform(&g_rng) * 3);
        cases[s][0] = 1 + (int)(rng_uniform(&g_rng) * 4);
        cases[s][1] = 1 + (int)(rng_uniform(&g_rng) * 260);
        cases[s][2] = Hkv * (1 + (int)(rng_uniform(&g_rng) * 3));
        cases[s][3] = Hkv;
        cases[s][4] = 16 << (int)(rng_uniform(&g_rng) * 3);
    }
    int nth = omp_get_max_threads();
    for (int s = 0; s < 8; s++) {
        int B = cases[s][0], T = cases[s][1], H = cases[s][2], Hkv = cases[s][3], hd = cases[s][4];
        size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, nl = (size_t)B * H * T;
        float *q = grand(nq, 1.5f), *k = grand(nk, 1.5f), *v = grand(nk, 1), *dout = grand(nq, 1);
        float *res[3][5];
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            att_run(res[t], q, k, v, dout, B, T, H, Hkv, hd);
        }
        omp_set_num_threads(nth);
        size_t len[5] = { nq, nl, nq, nk, nk };
        for (int t = 1; t < 3; t++)
            for (int i = 0; i < 5; i++) {
                char what[120];
                snprintf(what, sizeof what, "attention B %d T %d H %d Hkv %d hd %d %s, 1 vs %d threads", B, T, H, Hkv, hd,
                         ATT_NAMES[i], t + 1);
                SAME_EXPECT(what, res[0][i], res[t][i], len[i]);
            }
    }
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// embedding
typedef struct { float *out, *wte, *w; const int32_t *tok; int N, d; } EmbCtx;
static double emb_obj(void *p) {
    EmbCtx *c = p;
    cpu_embedding_forward_shard(c->out, c->tok, c->wte, c->N, c->d, 0, 5);
    return dot_d(c->out, c->w, (size_t)c->N * c->d);
}

TEST(embedding_forward_and_gradcheck) {
    int32_t tok[9] = { 3, 0, 3, 4, 1, 3, 0, 2, 4 };   // repeats: the scatter-add must sum them
    int ds[] = { 13, 45 };                             // 45 spans two column blocks
    for (int s = 0; s < 2; s++) {
        int V = 5, N = 9, d = ds[s];
        EmbCtx c = { .tok = tok, .N = N, .d = d };
        c.wte = grand((size_t)V * d, 1); c.out = galloc((size_t)N * d); c.w = grand((size_t)N * d, 1);
        emb_obj(&c);
        int ok = 1;
        for (int i = 0; i < N; i++) if (memcmp(c.out + i * d, c.wte + tok[i] * d, sizeof(float) * d)) ok = 0;
        EXPECT(ok, "embedding_forward did not copy the rows");
        float *dw = gzeros((size_t)V * d);
        cpu_embedding_backward_shard(dw, c.w, tok, N, d, 0, V, 1, NULL);
        FD_EXPECT("embedding dwte", emb_obj, &c, c.wte, dw, (size_t)V * d);
        // a shard of rows [2, 4): its rows, zeros for the other tokens; gradient only there
        float *part = galloc((size_t)N * d), *dpart = gzeros((size_t)2 * d);
        cpu_embedding_forward_shard(part, tok, c.wte + 2 * d, N, d, 2, 2);
        cpu_embedding_backward_shard(dpart, c.w, tok, N, d, 2, 2, 1, NULL);
        int okp = 1;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < d; j++)
                if (part[i * d + j] != (tok[i] >= 2 && tok[i] < 4 ? c.wte[tok[i] * d + j] : 0.0f)) okp = 0;
        EXPECT(okp, "embedding shard rows");
        SAME_EXPECT("embedding shard gradient = rows 2..3 of the full one", dpart, dw + 2 * d, (size_t)2 * d);
    }
    GUARDS_EXPECT();
    gfree_all();
}

// The storing embedding backward with the hint nz (rows with nz[r] = 0 are zero already, the
// model's embed_live): the same bits as without it, over generated cases — the buffer holding
// the previous step's rows (nonzero exactly where nz is set, as the model keeps it), vocabulary
// shards, row widths, 1 and 2 threads — and the rows it may skip are really left unwritten.
TEST(embedding_backward_live_rows) {
    int nth = omp_get_max_threads();
    for (int ci = 0; ci < 24; ci++) {
        int V = 1 + (int)(rng_uniform(&g_rng) * 700), d = ci % 3 ? 64 : 24 + ci, N = 1 + (int)(rng_uniform(&g_rng) * 300);
        int v0 = ci % 4 == 3 ? V / 3 : 0;
        int32_t *tok = malloc(sizeof(int32_t) * (size_t)N);
        for (int i = 0; i < N; i++) tok[i] = (int32_t)(rng_uniform(&g_rng) * (V + v0 + 5));   // some out of the shard
        unsigned char *nz = calloc((size_t)V + 1, 1);
        float *prev = gzeros((size_t)V * d), *dout = grand((size_t)N * d, 1.0f);
        for (int r = 0; r < V; r++)
            if (rng_uniform(&g_rng) < 0.1) { nz[r] = 1; for (int j = 0; j < d; j++) prev[(size_t)r * d + j] = 1.0f + j; }
        for (int th = 1; th <= 2; th++) {
            omp_set_num_threads(th);
            float *a = gcopy(prev, (size_t)V * d), *b = gcopy(prev, (size_t)V * d);
            cpu_embedding_backward_shard(a, dout, tok, N, d, v0, V, 0, NULL);
            cpu_embedding_backward_shard(b, dout, tok, N, d, v0, V, 0, nz);
            SAME_EXPECT("embedding_backward with the live-rows hint", b, a, (size_t)V * d);
            // a row marked zero that is not (a broken promise) stays as it was: the hint is taken
            int r = 0;
            while (r < V && nz[r]) r++;
            int hit = 0;
            for (int i = 0; i < N; i++) hit |= tok[i] - v0 == r;
            if (r < V && !hit) {
                float *c = gcopy(prev, (size_t)V * d);
                c[(size_t)r * d] = 7.0f;
                cpu_embedding_backward_shard(c, dout, tok, N, d, v0, V, 0, nz);
                EXPECT(c[(size_t)r * d] == 7.0f, "a row the hint marks zero was written (V %d, row %d)", V, r);
            }
        }
        free(tok); free(nz);
    }
    omp_set_num_threads(nth);
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// cross-entropy (the vocabulary-parallel pieces; one shard = the whole vocabulary)
typedef struct { float *logits, *losses, *lmax; double *sumexp, *tlogit; const int32_t *tgt; int N, V; float dscale; } CeCtx;
static double ce_obj(void *p) {
    CeCtx *c = p;
    cpu_xent_forward(c->lmax, c->sumexp, c->tlogit, c->logits, c->tgt, c->N, c->V, 0);
    return c->dscale * cpu_xent_loss(c->losses, c->sumexp, c->lmax, c->tlogit, c->N);
}
static void ce_alloc(CeCtx *c) {
    c->losses = galloc(c->N); c->lmax = galloc(c->N);
    c->sumexp = malloc(sizeof(double) * c->N); c->tlogit = malloc(sizeof(double) * c->N);
}

TEST(crossentropy_gradcheck) {
    int32_t tgt[4] = { 2, 10, 0, 7 };
    CeCtx c = { .tgt = tgt, .N = 4, .V = 11, .dscale = 0.7f };
    c.logits = grand(44, 3); ce_alloc(&c);
    ce_obj(&c);
    float *dl = galloc(44);
    cpu_xent_backward(dl, c.logits, c.lmax, c.sumexp, tgt, 4, 11, 0, c.dscale);
    FD_EXPECT("crossentropy dlogits", ce_obj, &c, c.logits, dl, 44);
    free(c.sumexp); free(c.tlogit);
    GUARDS_EXPECT();
    gfree_all();
}

TEST(crossentropy_reference_inplace_and_shards) {
    // V=32000 with large logits: exercises the exp range and the long double sums.
    int N = 5, V = 32000;
    int32_t tgt[5] = { 0, 31999, 17, 12345, 500 };
    CeCtx c = { .tgt = tgt, .N = N, .V = V };
    c.logits = grand((size_t)N * V, 20); ce_alloc(&c);
    c.logits[3 * V + 17] = 200.0f;   // one dominant logit (all other exps underflow)
    float dscale = 1.0f / N, *dl = galloc((size_t)N * V), *rl = galloc(N), *rdl = galloc((size_t)N * V);
    cpu_xent_forward(c.lmax, c.sumexp, c.tlogit, c.logits, tgt, N, V, 0);
    double tot = cpu_xent_loss(c.losses, c.sumexp, c.lmax, c.tlogit, N);
    cpu_xent_backward(dl, c.logits, c.lmax, c.sumexp, tgt, N, V, 0, dscale);
    double rtot = 0;
    for (int n = 0; n < N; n++) {
        const float *x = c.logits + (size_t)n * V;
        double mx = -1e300, sm = 0;
        for (int j = 0; j < V; j++) if (x[j] > mx) mx = x[j];
        for (int j = 0; j < V; j++) sm += exp(x[j] - mx);
        double lse = mx + log(sm);
        rl[n] = (float)(lse - x[tgt[n]]); rtot += lse - x[tgt[n]];
        for (int j = 0; j < V; j++) rdl[(size_t)n * V + j] = (float)(dscale * (exp(x[j] - lse) - (j == tgt[n])));
    }
    CLOSE_EXPECT("crossentropy losses", c.losses, rl, N, 1e-5, 1e-6);
    EXPECT(fabs(tot - rtot) <= 1e-5 * (1 + fabs(rtot)), "loss sum %.10g vs %.10g", tot, rtot);
    CLOSE_EXPECT("crossentropy dlogits", dl, rdl, (size_t)N * V, 1e-9, 1e-5);
    // in place (dlogits == logits) gives the same bits
    float *inplace = gcopy(c.logits, (size_t)N * V);
    cpu_xent_backward(inplace, inplace, c.lmax, c.sumexp, tgt, N, V, 0, dscale);
    SAME_EXPECT("in-place dlogits", inplace, dl, (size_t)N * V);
    // the tp = 1 fused pass: the forward's statistics and the backward's gradient, same bits,
    // out of place and in place
    for (int ip = 0; ip < 2; ip++) {
        float *lg = gcopy(c.logits, (size_t)N * V), *fm = galloc(N), *fg = ip ? lg : galloc((size_t)N * V);
        double fs[5], ft[5];
        cpu_xent_fused(fg, fm, fs, ft, lg, tgt, N, V, 0, dscale);
        SAME_EXPECT(ip ? "xent_fused in place: dlogits" : "xent_fused: dlogits", fg, dl, (size_t)N * V);
        SAME_EXPECT("xent_fused: lmax", fm, c.lmax, N);
        EXPECT(!memcmp(fs, c.sumexp, sizeof fs) && !memcmp(ft, c.tlogit, sizeof ft), "xent_fused: sumexp, tlogit differ");
    }
    // two vocabulary shards [0, 12000) and [12000, 32000), combined as the TP all-reduces
    // do (max; sums re-based on the global max; target logits summed): the same losses
    int V0 = 12000, V1 = V - V0;
    float *L0 = galloc((size_t)N * V0), *L1 = galloc((size_t)N * V1), *m0 = galloc(N), *m1 = galloc(N), *g = galloc(N);
    for (int n = 0; n < N; n++) {
        memcpy(L0 + (size_t)n * V0, c.logits + (size_t)n * V, 4 * (size_t)V0);
        memcpy(L1 + (size_t)n * V1, c.logits + (size_t)n * V + V0, 4 * (size_t)V1);
    }
    double s0[5], s1[5], t0[5], t1[5];
    cpu_xent_forward(m0, s0, t0, L0, tgt, N, V0, 0);
    cpu_xent_forward(m1, s1, t1, L1, tgt, N, V1, V0);
    for (int n = 0; n < N; n++) g[n] = m0[n] > m1[n] ? m0[n] : m1[n];
    cpu_xent_rescale(s0, m0, g, N); cpu_xent_rescale(s1, m1, g, N);
    for (int n = 0; n < N; n++) { s0[n] += s1[n]; t0[n] += t1[n]; }
    float *sl = galloc(N);
    double stot = cpu_xent_loss(sl, s0, g, t0, N);
    CLOSE_EXPECT("two shards: losses", sl, c.losses, N, 1e-6, 1e-6);
    EXPECT(fabs(stot - tot) <= 1e-6 * fabs(tot), "two shards: sum %.10g vs %.10g", stot, tot);
    float *d1 = galloc((size_t)N * V1);
    cpu_xent_backward(d1, L1, g, s0, tgt, N, V1, V0, dscale);
    int okd = 1;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < V1; j++)
            if (fabs(d1[(size_t)n * V1 + j] - dl[(size_t)n * V + V0 + j]) > 1e-9 + 1e-5 * fabs(dl[(size_t)n * V + V0 + j])) okd = 0;
    EXPECT(okd, "two shards: the second shard's dlogits differ from the full ones");
    free(c.sumexp); free(c.tlogit);
    GUARDS_EXPECT();
    gfree_all();
}

// The vector kernels (fmv_exp where the build has FM_VEC: AVX-512 or AVX2 + FMA) against the
// scalar definitions written with fast_expf, bit for bit: generated rows and lengths (tails of
// every size, rows shorter than a block), logits spread wide enough that some exps underflow
// to subnormals.
TEST(crossentropy_vector_bits) {
    int ncase = 0;
    for (int ci = 0; ci < 40; ci++) {
        int V = ci < 34 ? 1 + ci : 1 + (int)(rng_uniform(&g_rng) * 3000), N = 1 + ci % 4;
        float spread = ci % 3 == 0 ? 100.0f : 8.0f;
        float *x = grand((size_t)N * V, spread), *g = galloc((size_t)N * V), *lmax = galloc(N), *ref = galloc((size_t)N * V);
        int32_t tgt[4];
        double se[4], tl[4];
        for (int n = 0; n < N; n++) tgt[n] = (int32_t)(rng_uniform(&g_rng) * V);
        cpu_xent_forward(lmax, se, tl, x, tgt, N, V, 0);
        float scale = 0.37f;
        cpu_xent_backward(g, x, lmax, se, tgt, N, V, 0, scale);
        for (int n = 0; n < N; n++) {
            const float *r = x + (size_t)n * V;
            float mx = r[0];
            for (int j = 1; j < V; j++) mx = r[j] > mx ? r[j] : mx;
            double acc[RD_LANES] = {0};
            for (int j = 0; j < V; j++) acc[j % RD_LANES] += fast_expf(r[j] - mx);
            double sum = rd_fold(acc);
            EXPECT(lmax[n] == mx && memcmp(&sum, &se[n], sizeof sum) == 0,
                   "V %d row %d: max %.9g vs %.9g, sum of exps %.17g vs %.17g", V, n, lmax[n], mx, se[n], sum);
            float f = (float)(scale / sum);
            for (int j = 0; j < V; j++) ref[(size_t)n * V + j] = fast_expf(r[j] - mx) * f;
            ref[(size_t)n * V + tgt[n]] -= scale;
        }
        SAME_EXPECT("xent_backward vs fast_expf", g, ref, (size_t)N * V);
        GUARDS_EXPECT();
        gfree_all();
        ncase++;
    }
    EXPECT(ncase == 40, "cases %d", ncase);
}

TEST(activation_vector_bits) {
    for (int ci = 0; ci < 60; ci++) {
        size_t n = ci < 40 ? (size_t)ci + 1 : 1 + (size_t)(rng_uniform(&g_rng) * 5000);
        float *x = grand(n, ci % 2 ? 100.0f : 6.0f), *u = grand(n, 2), *dz = grand(n, 1);
        float *y = galloc(n), *dg = galloc(n), *du = galloc(n), *r0 = galloc(n), *r1 = galloc(n);
        x[0] = ci % 4 == 0 ? -INFINITY : ci % 4 == 1 ? 89.0f : ci % 4 == 2 ? -0.0f : -88.0f;   // ends of the clamp
        cpu_silu_forward(y, x, n);
        for (size_t i = 0; i < n; i++) r0[i] = x[i] * (1.0f / (1.0f + fast_expf(-x[i])));
        SAME_EXPECT("silu forward", y, r0, n);
        cpu_silu_backward(dg, dz, x, n);
        for (size_t i = 0; i < n; i++) {
            float s = 1.0f / (1.0f + fast_expf(-x[i]));
            r0[i] = dz[i] * s * (1.0f + x[i] * (1.0f - s));
        }
        SAME_EXPECT("silu backward", dg, r0, n);
        cpu_swiglu_forward(y, x, u, n, 1);
        for (size_t i = 0; i < n; i++) r0[i] = x[i] * (1.0f / (1.0f + fast_expf(-x[i]))) * u[i];
        SAME_EXPECT("swiglu forward", y, r0, n);
        cpu_swiglu_backward(dg, du, dz, x, u, n, 1);
        for (size_t i = 0; i < n; i++) {
            float s = 1.0f / (1.0f + fast_expf(-x[i]));
            r0[i] = dz[i] * u[i] * s * (1.0f + x[i] * (1.0f - s));
            r1[i] = dz[i] * x[i] * s;
        }
        SAME_EXPECT("swiglu backward dg", dg, r0, n);
        SAME_EXPECT("swiglu backward du", du, r1, n);
        GUARDS_EXPECT();
        gfree_all();
    }
}

// ====================================================================================
// AdamW and the norm helpers
TEST(adamw_matches_scalar_reference) {
    size_t n = 37;
    float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    float *p = grand(n, 1), *m = gzeros(n), *v = gzeros(n);
    double *rp = malloc(sizeof(double) * n), *rm = calloc(n, sizeof(double)), *rv = calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++) rp[i] = p[i];
    for (int t = 1; t <= 3; t++) {
        float *g = grand(n, 1);
        float *gsave = gcopy(g, n);
        cpu_adamw_update(p, g, m, v, n, lr, b1, b2, eps, wd, t, 1.0f);
        SAME_EXPECT("adamw leaves grad untouched", g, gsave, n);
        for (size_t i = 0; i < n; i++) {   // the formula in ops.h, in double
            rm[i] = b1 * rm[i] + (1.0 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1.0 - b2) * (double)g[i] * g[i];
            double mh = rm[i] / (1.0 - pow(b1, t)), vh = rv[i] / (1.0 - pow(b2, t));
            rp[i] -= lr * (mh / (sqrt(vh) + eps) + wd * rp[i]);
        }
    }
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(p[i] - rp[i]) / (1e-6 + 1e-5 * fabs(rp[i]));
        if (e > worst) worst = e;
        e = fabs(m[i] - rm[i]) / (1e-7 + 1e-5 * fabs(rm[i])); if (e > worst) worst = e;
        e = fabs(v[i] - rv[i]) / (1e-9 + 1e-5 * fabs(rv[i])); if (e > worst) worst = e;
    }
    EXPECT(worst <= 1.0, "adamw differs from the reference (ratio %.3g)", worst);
    free(rp); free(rm); free(rv);
    GUARDS_EXPECT();
    gfree_all();
}

// Clipping folded into AdamW: reading grad·gs is bit-identical to a scale pass over the
// gradient (what the optimizer did before) followed by the unscaled update.
TEST(adamw_grad_scale_is_the_scale_pass) {
    size_t n = 1031;
    float gs = 0.3713f;
    float *g = grand(n, 1), *gscaled = gcopy(g, n);
    cpu_scale_inplace(gscaled, gs, n);
    float *p1 = grand(n, 1), *p2 = gcopy(p1, n), *m1 = gzeros(n), *m2 = gzeros(n), *v1 = gzeros(n), *v2 = gzeros(n);
    for (int t = 1; t <= 2; t++) {
        cpu_adamw_update(p1, g, m1, v1, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, t, gs);
        cpu_adamw_update(p2, gscaled, m2, v2, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, t, 1.0f);
    }
    SAME_EXPECT("adamw param (folded vs separate clip)", p1, p2, n);
    SAME_EXPECT("adamw m", m1, m2, n);
    SAME_EXPECT("adamw v", v1, v2, n);
    GUARDS_EXPECT();
    gfree_all();
}

TEST(sumsq_and_scale) {
    size_t n = 2 * 65536 + 17;   // straddles the fixed reduction chunks
    float *x = grand(n, 3);
    double ref = 0; for (size_t i = 0; i < n; i++) ref += (double)x[i] * x[i];
    double s = cpu_sumsq(x, n);
    EXPECT(fabs(s - ref) <= 1e-12 * ref, "sumsq %.15g vs %.15g", s, ref);
    EXPECT(cpu_sumsq(x, 0) == 0.0, "sumsq of nothing");
    float *y = gcopy(x, n), *ry = galloc(n);
    cpu_scale_inplace(y, 0.37f, n);
    for (size_t i = 0; i < n; i++) ry[i] = x[i] * 0.37f;
    SAME_EXPECT("scale_inplace", y, ry, n);
    GUARDS_EXPECT();
    gfree_all();
}

// The multi-tensor pass reads runs of 4 chunks at once (rd_sumsq_ways): the same bits as
// each chunk summed alone (rd_sumsq), added in chunk order per tensor and weighted, for
// 1 and 2 threads. The lengths give runs of 4 full chunks, runs cut by a tail, lone tails.
TEST(sumsq_multi_chunks) {
    enum { C = 65536, NT = 4 };
    size_t len[NT] = { 5 * (size_t)C + 3, 4 * (size_t)C, 17, 3 * (size_t)C };
    double w[NT] = { 1.0, 0.5, 2.0, 1.0 };
    const float *x[NT];
    double ref = 0.0, s0 = 0.0;
    for (int t = 0; t < NT; t++) {
        x[t] = grand(len[t], 1.0f + (float)t);
        double s = 0.0;
        for (size_t lo = 0; lo < len[t]; lo += C) s += rd_sumsq(x[t] + lo, len[t] - lo < C ? len[t] - lo : C);
        ref += w[t] * s;
        if (t == 0) s0 = s;
    }
    int nth = omp_get_max_threads();
    for (int th = 1; th <= 2; th++) {
        omp_set_num_threads(th);
        double got = cpu_sumsq_multi(NT, x, len, w, NULL);
        EXPECT(got == ref, "sumsq_multi at %d threads: %.17g vs chunk by chunk %.17g", th, got, ref);
    }
    omp_set_num_threads(nth);
    EXPECT(cpu_sumsq(x[0], len[0]) == s0, "sumsq of one tensor: %.17g vs chunk by chunk %.17g", cpu_sumsq(x[0], len[0]), s0);
    gfree_all();
}

// AdamW with the live-rows hint (AdamWSpan.live: the embedding gradient's zero rows read from a
// zero row that stays in cache): the same weights and moments bit for bit as reading every row,
// over generated cases — row widths (one wider than the 64 Ki chunk: the hint is ignored), live
// densities, the span among others, clipping factors, 1 and 2 threads — and a dead row's
// gradient really not read.
TEST(adamw_multi_live) {
    const size_t rls[] = { 32, 512, 768, 100, 70000 };
    int nth = omp_get_max_threads(), nskip = 0;
    for (int ci = 0; ci < 20; ci++) {
        size_t rl = rls[ci % 5], rows = 1 + (size_t)(rng_uniform(&g_rng) * (2.5 * 65536 / rl)), n0 = rows * rl, n1 = 65536 + 77;
        double den = (ci / 5) % 4 * 0.3;
        unsigned char *live = calloc(rows + 1, 1);
        float *g0 = grand(n0, 1.0f), *g1 = grand(n1, 1.0f);
        for (size_t r = 0; r < rows; r++)
            if (!(live[r] = rng_uniform(&g_rng) < den)) memset(g0 + r * rl, 0, sizeof(float) * rl);
        float *p0 = grand(n0, 1.0f), *m0 = grand(n0, 0.1f), *v0 = grand(n0, 0.1f), *p1 = grand(n1, 1.0f);
        for (size_t i = 0; i < n0; i++) v0[i] = fabsf(v0[i]);
        AdamWHyper h = { 1e-2f, 0.9f, 0.95f, 1e-8f, 1 + ci % 3, ci % 2 ? 0.5f : 1.0f };
        for (int th = 1; th <= 2; th++) {
            omp_set_num_threads(th);
            float *st[2][4];   // [hint][p0, m0, v0, p1]
            for (int k = 0; k < 2; k++) {
                st[k][0] = gcopy(p0, n0); st[k][1] = gcopy(m0, n0); st[k][2] = gcopy(v0, n0); st[k][3] = gcopy(p1, n1);
                float *m1 = gzeros(n1), *v1 = gzeros(n1);
                AdamWSpan sp[2] = {
                    { st[k][0], g0, st[k][1], st[k][2], NULL, n0, 0.1f, k ? live : NULL, k ? rl : 0 },
                    { st[k][3], g1, m1, v1, NULL, n1, 0.0f, NULL, 0 },
                };
                cpu_adamw_multi(2, sp, &h);
            }
            for (int j = 0; j < 4; j++)
                EXPECT(memcmp(st[0][j], st[1][j], sizeof(float) * (j == 3 ? n1 : n0)) == 0,
                       "adamw with the live hint differs (row %zu, %zu rows, density %.1f, %d threads, array %d)", rl, rows, den, th, j);
        }
        // a dead row with a nonzero gradient: not read where the hint is taken (rl ≤ the chunk)
        size_t dead = 0;
        while (dead < rows && live[dead]) dead++;
        if (dead < rows) {
            float *pa = gcopy(p0, n0), *pb = gcopy(p0, n0), *ma = gcopy(m0, n0), *mb = gcopy(m0, n0), *va = gcopy(v0, n0), *vb = gcopy(v0, n0);
            AdamWSpan a = { pa, g0, ma, va, NULL, n0, 0.1f, live, rl };
            cpu_adamw_multi(1, &a, &h);
            g0[dead * rl] = 3.0f;
            AdamWSpan b = { pb, g0, mb, vb, NULL, n0, 0.1f, live, rl };
            cpu_adamw_multi(1, &b, &h);
            g0[dead * rl] = 0.0f;
            EXPECT((pa[dead * rl] == pb[dead * rl]) == (rl <= 65536), "a dead row's gradient read (row %zu) or not", rl);
            nskip += rl <= 65536;
        }
        free(live);
        gfree_all();
    }
    omp_set_num_threads(nth);
    EXPECT(nskip >= 8, "cases with a dead row skipped: %d", nskip);
    gfree_all();
}

// The embedding gradient's norm read in its live rows only (SumsqLive): exactly the bits of
// reading every row, over generated cases — row lengths that divide the 64 Ki chunk, 768 and
// 1376 that straddle its ends, 48 (not a multiple of the 32 partial sums: the hint is
// ignored) — live densities from none to all, the live tensor first of three or alone, 1 and
// 2 threads.
TEST(sumsq_multi_live) {
    const size_t rls[] = { 32, 512, 768, 2048, 1376, 48 };
    const double dens[] = { 0.0, 0.03, 0.5, 1.0 };
    int nth = omp_get_max_threads(), ncase = 0, nskip = 0;
    for (int ci = 0; ci < 48; ci++) {
        size_t rl = rls[ci % 6], rows = 1 + (size_t)(rng_uniform(&g_rng) * (3.5 * 65536 / rl));
        double den = dens[(ci / 6) % 4];
        int alone = ci / 24;
        unsigned char *live = calloc(rows + 1, 1);
        float *e = grand(rows * rl, 2.0f);
        for (size_t r = 0; r < rows; r++) {
            live[r] = rng_uniform(&g_rng) < den;
            if (!live[r]) memset(e + r * rl, 0, sizeof(float) * rl);
        }
        size_t len[3] = { rows * rl, 3 * 65536 + 40, 70001 };
        const float *x[3] = { e, grand(len[1], 1.0f), grand(len[2], 0.5f) };
        double w[3] = { 1.0, 0.25, 1.0 };
        int n = alone ? 1 : 3;
        SumsqLive h = { 0, rl, live };
        for (int th = 1; th <= 2; th++) {
            omp_set_num_threads(th);
            double all = cpu_sumsq_multi(n, x, len, w, NULL), got = cpu_sumsq_multi(n, x, len, w, &h);
            EXPECT(got == all, "sumsq live rows (row %zu, %zu rows, density %.2f, %d tensors, %d threads): %.17g vs %.17g",
                   rl, rows, den, n, th, got, all);
        }
        // the hint is taken (a dead row is not read) where the row length allows it
        size_t dead = 0;
        while (dead < rows && live[dead]) dead++;
        if (dead < rows) {
            double before = cpu_sumsq_multi(n, x, len, w, &h);
            e[dead * rl] = 1.0f;
            EXPECT((cpu_sumsq_multi(n, x, len, w, &h) == before) == (rl % 32 == 0),
                   "a dead row read (row %zu) or not (row %zu)", rl, rl);
            e[dead * rl] = 0.0f;
            nskip += rl % 32 == 0;
        }
        free(live);
        ncase++;
    }
    omp_set_num_threads(nth);
    EXPECT(ncase == 48 && nskip >= 20, "cases %d, with dead rows skipped %d", ncase, nskip);
    gfree_all();
}

TEST(fast_expf_accuracy) {
    double worst = 0;
    for (int i = 0; i <= 2000000; i++) {
        float x = -87.0f + 175.0f * (float)i / 2000000.0f;
        double e = exp((double)x), r = fabs(fast_expf(x) - e) / e;
        if (r > worst) worst = r;
    }
    EXPECT(worst < 2e-7, "fast_expf max relative error %.3g", worst);
    EXPECT(isnan(fast_expf(NAN)), "NaN must propagate");
    EXPECT(fast_expf(-INFINITY) < 1.2e-38f && fast_expf(-1000.0f) >= 0.0f, "large negative -> ~0");
    EXPECT(fast_expf(0.0f) == 1.0f, "exp(0) = %.9g", fast_expf(0.0f));
}


// fmv_exp (16 or 8 lanes, the build's widest) lane by lane against fast_expf: every
// float in [-90, -85] (the clamp and the subnormal results), a dense sweep of [-90, 90], random
// bit patterns, and the specials, in blocks whose last one is partial.
TEST(vector_expf_same_bits) {
#ifdef FM_VEC
    enum { B = 4096 };
    static uint32_t in[B];
    static float out[B];
    long nbad = 0, ncmp = 0;
    uint32_t lo, hi;
    float f = -85.0f; memcpy(&lo, &f, 4); f = -90.0f; memcpy(&hi, &f, 4);   // negative: bits grow with |x|
    uint32_t specials[] = { 0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                            0x7f800001u /* signalling */, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu };
    uint64_t total = (uint64_t)(hi - lo + 1) + 2000000 + 1000000 + sizeof specials / 4;
    for (uint64_t base = 0; base < total; base += B) {
        int m = (int)(total - base < B ? total - base : B);
        for (int i = 0; i < m; i++) {
            uint64_t k = base + (uint64_t)i, span = (uint64_t)(hi - lo + 1);
            if (k < span) in[i] = lo + (uint32_t)k;
            else if ((k -= span) < 2000000) { float v = -90.0f + 180.0f * (float)k / 2000000.0f; memcpy(&in[i], &v, 4); }
            else if ((k -= 2000000) < 1000000) in[i] = (uint32_t)(rng_uniform(&g_rng) * 4294967296.0);
            else in[i] = specials[k - 1000000];
        }
        for (int i = 0; i < m; i += FMV_LANES)
            fmv_storen(out, fmv_exp(fmv_loadn((const float *)in, (size_t)i, (size_t)m)), (size_t)i, (size_t)m);
        for (int i = 0; i < m; i++) {
            float x, e; memcpy(&x, &in[i], 4); e = fast_expf(x);
            if (memcmp(&e, &out[i], 4)) { if (nbad++ < 3) fprintf(stderr, "  x %08x: %a vs %a\n", in[i], e, out[i]); }
            ncmp++;
        }
    }
    EXPECT(nbad == 0 && ncmp == (long)total, "fmv_exp (%d lanes) differs from fast_expf on %ld of %ld inputs", FMV_LANES,
           nbad, ncmp);
#else
    SKIP_TEST("this build has no vector exp (neither AVX-512F nor AVX2 with FMA targeted)");
#endif
}

// ====================================================================================
// LaX latent crossing (lax.c; docs/lax.md §3): LayerNorm over r, dense gate, kron gate, each on
// strided row views (ld > r: the slots of a grouped bottleneck); the padding columns between
// rows must stay untouched.
// Naive double LayerNorm of row n of a strided view.
static void ln_ref(float *y, int ldy, const float *x, int ldx, const float *g, const float *b, int N, int r, float eps) {
    for (int n = 0; n < N; n++) {
        double mu = 0, v = 0;
        for (int j = 0; j < r; j++) mu += x[n * ldx + j];
        mu /= r;
        for (int j = 0; j < r; j++) v += (x[n * ldx + j] - mu) * (x[n * ldx + j] - mu);
        double rs = 1.0 / sqrt(v / r + eps);
        for (int j = 0; j < r; j++) y[n * ldy + j] = (float)((x[n * ldx + j] - mu) * rs * g[j] + b[j]);
    }
}
TEST(lax_layernorm_forward_reference) {
    int N = 7, r = 13, ldx = 16, ldy = 15; float eps = 1e-5f;
    float *x = grand((size_t)N * ldx, 2), *g = grand(r, 1.5f), *b = grand(r, 1);
    for (int n = 0; n < N; n++) x[n * ldx] += 3.0f;   // a mean far from 0
    float *y = grand((size_t)N * ldy, 1), *ref = gcopy(y, (size_t)N * ldy), *mean = galloc(N), *rstd = galloc(N);
    cpu_layernorm_forward(y, ldy, mean, rstd, x, ldx, g, b, N, r, eps);
    ln_ref(ref, ldy, x, ldx, g, b, N, r, eps);
    CLOSE_EXPECT("layernorm y (padding untouched)", y, ref, (size_t)N * ldy, 1e-6, 1e-5);
    // in place (y = x, same ld) gives the same values
    float *xi = gcopy(x, (size_t)N * ldx), *m2 = galloc(N), *r2 = galloc(N), *ri = gcopy(x, (size_t)N * ldx);
    cpu_layernorm_forward(xi, ldx, m2, r2, xi, ldx, g, b, N, r, eps);
    ln_ref(ri, ldx, x, ldx, g, b, N, r, eps);
    CLOSE_EXPECT("layernorm in place", xi, ri, (size_t)N * ldx, 1e-6, 1e-5);
    SAME_EXPECT("layernorm statistics in place", m2, mean, N);
    GUARDS_EXPECT();
    gfree_all();
}

// L = Σ w·LN(x) over the view
typedef struct { float *y, *mean, *rstd, *x, *g, *b, *w; int N, r, ldx, ldy; } LnCtx;
static double ln_obj(void *p) {
    LnCtx *c = p;
    cpu_layernorm_forward(c->y, c->ldy, c->mean, c->rstd, c->x, c->ldx, c->g, c->b, c->N, c->r, 1e-5f);
    return dot_d(c->y, c->w, (size_t)c->N * c->ldy);
}
TEST(lax_layernorm_gradcheck) {
    int shapes[][3] = { {7, 13, 17}, {3, 70, 70} };   // r = 70 spans two dgamma column blocks
    for (int s = 0; s < 2; s++) {
        LnCtx c = { .N = shapes[s][0], .r = shapes[s][1], .ldx = shapes[s][2], .ldy = shapes[s][1] + 2 };
        size_t nx = (size_t)c.N * c.ldx, ny = (size_t)c.N * c.ldy;
        c.x = grand(nx, 2); c.g = grand(c.r, 1.5f); c.b = grand(c.r, 1); c.y = gzeros(ny); c.w = grand(ny, 1);
        c.mean = galloc(c.N); c.rstd = galloc(c.N);
        for (int n = 0; n < c.N; n++) for (int j = c.r; j < c.ldy; j++) c.w[n * c.ldy + j] = 0;   // padding: no loss
        ln_obj(&c);
        float *dx = gzeros(nx), *dg = gzeros(c.r), *db = gzeros(c.r);
        cpu_layernorm_backward(dx, c.ldx, dg, db, c.w, c.ldy, c.x, c.ldx, c.mean, c.rstd, c.g, c.N, c.r, 1, 1);
        FD_EXPECT("layernorm dx", ln_obj, &c, c.x, dx, nx);
        FD_EXPECT("layernorm dgamma", ln_obj, &c, c.g, dg, c.r);
        FD_EXPECT("layernorm dbeta", ln_obj, &c, c.b, db, c.r);
    }
    GUARDS_EXPECT();
    gfree_all();
}

// L = Σ w·(out0 + g(z)): the gates accumulate into out
typedef struct { float *out, *out0, *z, *W, *bias, *G1, *G2, *w; int N, r1, r2, ldo, ldz, kron; } GateCtx;
static double gate_obj(void *p) {
    GateCtx *c = p;
    size_t no = (size_t)c->N * c->ldo;
    memcpy(c->out, c->out0, no * sizeof(float));
    int r = c->r1 * c->r2;
    if (c->kron) cpu_kron_gate_forward(c->out, c->ldo, c->z, c->ldz, c->G1, c->G2, c->N, c->r1, c->r2);
    else cpu_dense_gate_forward(c->out, c->ldo, c->z, c->ldz, c->W, c->bias, c->N, r);
    return dot_d(c->out, c->w, no);
}
static GateCtx gate_ctx(int N, int r1, int r2, int kron) {
    int r = r1 * r2;
    GateCtx c = { .N = N, .r1 = r1, .r2 = r2, .ldo = r + 3, .ldz = r + 1, .kron = kron };
    size_t no = (size_t)N * c.ldo;
    c.out = galloc(no); c.out0 = grand(no, 1); c.z = grand((size_t)N * c.ldz, 1); c.w = grand(no, 1);
    c.W = grand((size_t)r * r, 0.5f); c.bias = grand(r, 1); c.G1 = grand((size_t)r1 * r1, 1); c.G2 = grand((size_t)r2 * r2, 1);
    for (int n = 0; n < N; n++) for (int j = r; j < c.ldo; j++) c.w[n * c.ldo + j] = 0;
    return c;
}
TEST(lax_gates_forward_reference) {
    // kron: out += z @ (G1 ⊗ G2) with the r×r Kronecker product formed explicitly,
    // (G1 ⊗ G2)[i·r2 + j, k·r2 + l] = G1[i,k]·G2[j,l]; dense: out += z @ W + b
    int shapes[][2] = { {3, 5}, {1, 7}, {4, 4} };
    for (int s = 0; s < 3; s++)
        for (int kron = 0; kron < 2; kron++) {
            int N = 6, r1 = shapes[s][0], r2 = shapes[s][1], r = r1 * r2;
            GateCtx c = gate_ctx(N, r1, r2, kron);
            gate_obj(&c);
            float *M = galloc((size_t)r * r), *ref = gcopy(c.out0, (size_t)N * c.ldo);
            for (int a = 0; a < r; a++)
                for (int b = 0; b < r; b++)
                    M[a * r + b] = kron ? c.G1[(a / r2) * r1 + b / r2] * c.G2[(a % r2) * r2 + b % r2] : c.W[a * r + b];
            for (int n = 0; n < N; n++)
                for (int b = 0; b < r; b++) {
                    double acc = kron ? 0.0 : c.bias[b];
                    for (int a = 0; a < r; a++) acc += (double)c.z[n * c.ldz + a] * M[a * r + b];
                    ref[n * c.ldo + b] = (float)(ref[n * c.ldo + b] + acc);
                }
            char what[64]; snprintf(what, sizeof what, "%s gate r1 %d r2 %d", kron ? "kron" : "dense", r1, r2);
            CLOSE_EXPECT(what, c.out, ref, (size_t)N * c.ldo, 1e-5, 1e-5);
        }
    GUARDS_EXPECT();
    gfree_all();
}
TEST(lax_gates_gradcheck) {
    int shapes[][2] = { {3, 5}, {1, 7}, {2, 2} };
    for (int s = 0; s < 3; s++)
        for (int kron = 0; kron < 2; kron++) {
            int N = 5, r1 = shapes[s][0], r2 = shapes[s][1], r = r1 * r2;
            GateCtx c = gate_ctx(N, r1, r2, kron);
            size_t nz = (size_t)N * c.ldz;
            float *dz = gzeros(nz);
            char what[64];
            if (kron) {
                float *d1 = gzeros((size_t)r1 * r1), *d2 = gzeros((size_t)r2 * r2);
                cpu_kron_gate_backward(dz, c.ldz, d1, d2, c.w, c.ldo, c.z, c.ldz, c.G1, c.G2, N, r1, r2, 1, 1);
                snprintf(what, sizeof what, "kron (%d, %d) dG1", r1, r2); FD_EXPECT(what, gate_obj, &c, c.G1, d1, (size_t)r1 * r1);
                snprintf(what, sizeof what, "kron (%d, %d) dG2", r1, r2); FD_EXPECT(what, gate_obj, &c, c.G2, d2, (size_t)r2 * r2);
            } else {
                float *dW = gzeros((size_t)r * r), *db = gzeros(r);
                cpu_dense_gate_backward(dz, c.ldz, dW, db, c.w, c.ldo, c.z, c.ldz, c.W, N, r, 1, 1);
                snprintf(what, sizeof what, "dense r %d dW", r); FD_EXPECT(what, gate_obj, &c, c.W, dW, (size_t)r * r);
                snprintf(what, sizeof what, "dense r %d db", r); FD_EXPECT(what, gate_obj, &c, c.bias, db, r);
            }
            snprintf(what, sizeof what, "%s (%d, %d) dz", kron ? "kron" : "dense", r1, r2);
            FD_EXPECT(what, gate_obj, &c, c.z, dz, nz);
        }
    GUARDS_EXPECT();
    gfree_all();
}

// The same ops through the bf16 CPU back end's table (bf16 storage, fp32 math, one rounding
// per output): within bf16's resolution (2^-8 relative) of the fp32 results, padding untouched.
static void to_bf16(Backend *b16, void *dst, const float *src, size_t n) { op_cast(b16, dst, DT_BF16, src, DT_F32, n); }
static float *from_bf16(Backend *b16, const void *src, size_t n) {
    float *f = galloc(n); op_cast(b16, f, DT_F32, src, DT_BF16, n); return f;
}
TEST(lax_ops_bf16_table) {
    Backend *b16 = backend_cpu(DT_BF16);
    int N = 9, r1 = 3, r2 = 4, r = 12, ld = 15;
    size_t nv = (size_t)N * ld;
    float *x = grand(nv, 2), *g = grand(r, 1.5f), *b = grand(r, 1), *dy = grand(nv, 1), *G1 = grand(9, 1), *G2 = grand(16, 1);
    float *W = grand((size_t)r * r, 0.5f);
    // round every input to bf16 first, so that both back ends see the same values
    uint16_t *hx = malloc(nv * 2), *hg = malloc(r * 2), *hb = malloc(r * 2), *hdy = malloc(nv * 2), *h1 = malloc(18),
             *h2 = malloc(32), *hw = malloc((size_t)r * r * 2);
    to_bf16(b16, hx, x, nv); to_bf16(b16, hg, g, r); to_bf16(b16, hb, b, r); to_bf16(b16, hdy, dy, nv);
    to_bf16(b16, h1, G1, 9); to_bf16(b16, h2, G2, 16); to_bf16(b16, hw, W, (size_t)r * r);
    x = from_bf16(b16, hx, nv); g = from_bf16(b16, hg, r); b = from_bf16(b16, hb, r); dy = from_bf16(b16, hdy, nv);
    G1 = from_bf16(b16, h1, 9); G2 = from_bf16(b16, h2, 16); W = from_bf16(b16, hw, (size_t)r * r);
    float *m32 = galloc(N), *s32 = galloc(N), *m16 = galloc(N), *s16 = galloc(N);
    // LayerNorm forward and backward
    float *y = gcopy(dy, nv); uint16_t *hy = malloc(nv * 2); to_bf16(b16, hy, y, nv);
    op_layernorm_forward(cpu, y, ld, m32, s32, x, ld, g, b, N, r, 1e-5f);
    op_layernorm_forward(b16, hy, ld, m16, s16, hx, ld, hg, hb, N, r, 1e-5f);
    CLOSE_EXPECT("bf16 layernorm y", from_bf16(b16, hy, nv), y, nv, 1e-2, 1e-2);
    CLOSE_EXPECT("bf16 layernorm statistics", m16, m32, N, 1e-6, 1e-5);
    float *dx = gzeros(nv), *dg = gzeros(r), *db = gzeros(r);
    uint16_t *hdx = calloc(nv, 2), *hdg = calloc(r, 2), *hdb = calloc(r, 2);
    op_layernorm_backward(cpu, dx, ld, dg, db, dy, ld, x, ld, m32, s32, g, N, r, 1, 1);
    op_layernorm_backward(b16, hdx, ld, hdg, hdb, hdy, ld, hx, ld, m32, s32, hg, N, r, 1, 1);
    CLOSE_EXPECT("bf16 layernorm dx", from_bf16(b16, hdx, nv), dx, nv, 3e-2, 1e-2);
    CLOSE_EXPECT("bf16 layernorm dgamma", from_bf16(b16, hdg, r), dg, r, 3e-2, 1e-2);
    CLOSE_EXPECT("bf16 layernorm dbeta", from_bf16(b16, hdb, r), db, r, 3e-2, 1e-2);
    // kron and dense gates, forward and backward
    for (int kron = 0; kron < 2; kron++) {
        float *o = gcopy(dy, nv), *dz = gzeros(nv), *d1 = gzeros(kron ? 9 : (size_t)r * r), *d2 = gzeros(kron ? 16 : r);
        uint16_t *ho = malloc(nv * 2), *hdz = calloc(nv, 2), *hd1 = calloc((size_t)r * r, 2), *hd2 = calloc(r + 16, 2);
        to_bf16(b16, ho, o, nv);
        if (kron) {
            op_kron_gate_forward(cpu, o, ld, x, ld, G1, G2, N, r1, r2);
            op_kron_gate_forward(b16, ho, ld, hx, ld, h1, h2, N, r1, r2);
            op_kron_gate_backward(cpu, dz, ld, d1, d2, dy, ld, x, ld, G1, G2, N, r1, r2, 1, 1);
            op_kron_gate_backward(b16, hdz, ld, hd1, hd2, hdy, ld, hx, ld, h1, h2, N, r1, r2, 1, 1);
        } else {
            op_dense_gate_forward(cpu, o, ld, x, ld, W, b, N, r);
            op_dense_gate_forward(b16, ho, ld, hx, ld, hw, hb, N, r);
            op_dense_gate_backward(cpu, dz, ld, d1, d2, dy, ld, x, ld, W, N, r, 1, 1);
            op_dense_gate_backward(b16, hdz, ld, hd1, hd2, hdy, ld, hx, ld, hw, N, r, 1, 1);
        }
        const char *k = kron ? "kron" : "dense";
        char what[64];
        snprintf(what, sizeof what, "bf16 %s gate out", k); CLOSE_EXPECT(what, from_bf16(b16, ho, nv), o, nv, 5e-2, 1e-2);
        snprintf(what, sizeof what, "bf16 %s gate dz", k); CLOSE_EXPECT(what, from_bf16(b16, hdz, nv), dz, nv, 5e-2, 1e-2);
        size_t n1 = kron ? 9 : (size_t)r * r, n2 = kron ? 16 : r;
        snprintf(what, sizeof what, "bf16 %s gate dparam 1", k); CLOSE_EXPECT(what, from_bf16(b16, hd1, n1), d1, n1, 1e-1, 1e-2);
        snprintf(what, sizeof what, "bf16 %s gate dparam 2", k); CLOSE_EXPECT(what, from_bf16(b16, hd2, n2), d2, n2, 1e-1, 1e-2);
        free(ho); free(hdz); free(hd1); free(hd2);
    }
    free(hx); free(hg); free(hb); free(hdy); free(h1); free(h2); free(hw); free(hy); free(hdx); free(hdg); free(hdb);
    backend_free(b16);
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// every backward with an acc flag accumulates (acc 1): from G0, one call gives G0 + g; from 0,
// two calls give 2g; and stores (acc 0: `stores` below).
// Returns the worst closeness ratio over the given gradient buffers.
typedef void (*BwdFn)(float **grads, void *ctx);
static double accum_ratio(BwdFn f, void *ctx, int ng, const size_t *sizes) {
    float *g1[8], *g2[8], *g0[8], *gacc[8];
    for (int i = 0; i < ng; i++) {
        g1[i] = gzeros(sizes[i]); g2[i] = gzeros(sizes[i]);
        g0[i] = grand(sizes[i], 1); gacc[i] = gcopy(g0[i], sizes[i]);
    }
    f(g1, ctx);                  // g
    f(g2, ctx); f(g2, ctx);      // 2g
    f(gacc, ctx);                // G0 + g
    double worst = 0;
    for (int i = 0; i < ng; i++) {
        for (size_t j = 0; j < sizes[i]; j++) {
            double twice = 2.0 * g1[i][j], plus = (double)g0[i][j] + g1[i][j];
            double e1 = fabs(g2[i][j] - twice) / (1e-6 + 1e-5 * fabs(twice));
            double e2 = fabs(gacc[i][j] - plus) / (1e-6 + 1e-5 * fabs(plus));
            if (!(e1 <= worst)) worst = e1;
            if (!(e2 <= worst)) worst = e2;
        }
    }
    return worst;
}
typedef struct { const float *a, *b, *c, *d, *e; const int32_t *tok; int i0, i1, i2, i3, i4; } AnyCtx;
static const float *g_att_lse;   // the forward's lse for bw_att
static int g_acc = 1;            // the acc flag the wrappers below pass (ops.h: 1 +=, 0 store)
static void bw_sharded(float **g, void *p) { AnyCtx *c = p;
    cpu_sharded_rmsnorm_backward(g[0], g[1], c->a, c->b, c->c, c->d, c->e, c->i0, c->i1, c->i2, 1e-5f, g_acc); }
static void bw_rms(float **g, void *p) { AnyCtx *c = p;
    cpu_rmsnorm_backward(g[0], g[1], c->a, c->b, c->c, c->d, c->i0, c->i1, g_acc, g_acc); }
static void bw_silu(float **g, void *p) { AnyCtx *c = p; cpu_silu_backward(g[0], c->a, c->b, (size_t)c->i0); }
static void bw_swiglu(float **g, void *p) { AnyCtx *c = p; cpu_swiglu_backward(g[0], g[1], c->a, c->b, c->c, (size_t)c->i0, c->i1); }
static void bw_att(float **g, void *p) { AnyCtx *c = p;
    cpu_attention_backward(g[0], g[1], g[2], c->a, c->e, c->b, c->c, c->d, g_att_lse, c->i0, c->i1, c->i2, c->i3, c->i4); }
static void bw_emb(float **g, void *p) { AnyCtx *c = p;   // i2 rows
    cpu_embedding_backward_shard(g[0], c->a, c->tok, c->i0, c->i1, 0, c->i2, g_acc, NULL); }
static void bw_ln(float **g, void *p) { AnyCtx *c = p;   // [N, i1] views with ld i2
    cpu_layernorm_backward(g[0], c->i2, g[1], g[2], c->a, c->i2, c->b, c->i2, c->d, c->e, c->c, c->i0, c->i1, g_acc, g_acc); }
static void bw_kron(float **g, void *p) { AnyCtx *c = p;   // G1 = c, G2 = d; (r1, r2) = (i1, i3)
    cpu_kron_gate_backward(g[0], c->i2, g[1], g[2], c->a, c->i2, c->b, c->i2, c->c, c->d, c->i0, c->i1, c->i3, g_acc, g_acc); }
static void bw_dense(float **g, void *p) { AnyCtx *c = p;
    cpu_dense_gate_backward(g[0], c->i2, g[1], g[2], c->a, c->i2, c->b, c->i2, c->c, c->i0, c->i1, g_acc, g_acc); }
// With acc 0 the same op STORES: from any G0 (random here) the result is, bit for bit, that of
// += on zeros. view: gradient 0 is a [rows, cols] view with row stride ld (0: all of it), and
// the elements between its rows must stay as they were.
typedef struct { int rows, cols, ld; } View;
static int stores(BwdFn f, void *ctx, int ng, const size_t *sizes, View view) {
    float *z[8], *r[8];
    for (int i = 0; i < ng; i++) {
        r[i] = grand(sizes[i], 1);
        z[i] = i == 0 && view.ld ? gcopy(r[i], sizes[i]) : gzeros(sizes[i]);
    }
    if (view.ld)
        for (int n = 0; n < view.rows; n++) memset(z[0] + (size_t)n * view.ld, 0, sizeof(float) * (size_t)view.cols);
    f(z, ctx);
    g_acc = 0; f(r, ctx); g_acc = 1;
    int same = 1;
    for (int i = 0; i < ng; i++) same &= memcmp(z[i], r[i], sizeof(float) * sizes[i]) == 0;
    return same;
}
static const View ALL = { 0, 0, 0 };
// sharded_rmsnorm_backward: dx always adds (the residual's gradient), dgamma stores with acc 0
static int sharded_stores(AnyCtx *c, int N, int d) {
    float *z[2] = { gzeros((size_t)N * d), gzeros((size_t)d) }, *r[2] = { gzeros((size_t)N * d), grand((size_t)d, 1) };
    bw_sharded(z, c);
    g_acc = 0; bw_sharded(r, c); g_acc = 1;
    return !memcmp(z[0], r[0], sizeof(float) * (size_t)N * d) && !memcmp(z[1], r[1], sizeof(float) * (size_t)d);
}

TEST(backward_accumulates_or_stores) {
    double r;
    {   int N = 7, d = 70;   // sharded: one shard of d = 70 of a row of d_full = 140 (dx always +=)
        float *S = galloc(N); for (int n = 0; n < N; n++) S[n] = 50.0f + n;
        AnyCtx c = { grand(N * d, 1), grand(N * d, 2), grand(d, 1), S, grand(N, 3), 0, N, d, 140, 0, 0 };
        size_t sz[2] = { (size_t)N * d, (size_t)d };
        r = accum_ratio(bw_sharded, &c, 2, sz); EXPECT(r <= 1, "sharded_rmsnorm_backward (ratio %.3g)", r);
        EXPECT(sharded_stores(&c, N, d), "sharded_rmsnorm_backward does not store dgamma"); }
    {   int N = 7, d = 70;
        float *x = grand(N * d, 2), *gm = grand(d, 1), *y = galloc(N * d), *rs = galloc(N);
        cpu_rmsnorm_forward(y, rs, x, gm, N, d, 1e-5f);
        AnyCtx c = { grand(N * d, 1), x, gm, rs, 0, 0, N, d, 0, 0, 0 };
        size_t sz[2] = { (size_t)N * d, (size_t)d };
        r = accum_ratio(bw_rms, &c, 2, sz); EXPECT(r <= 1, "rmsnorm_backward (ratio %.3g)", r);
        EXPECT(stores(bw_rms, &c, 2, sz, ALL), "rmsnorm_backward does not store dx, dgamma"); }
    {   int n = 1001;
        AnyCtx c = { grand(n, 1), grand(n, 4), grand(n, 2), 0, 0, 0, n, 1, 0, 0, 0 };
        // the elementwise backwards OVERWRITE (ops.h): from any G0 the result is that from 0
        for (int gs = 1; gs >= 0; gs--) {
            c.i1 = gs;
            float *z0[2] = { gzeros(n), gzeros(n) }, *r0[2] = { grand(n, 1), grand(n, 1) };
            if (gs) { bw_silu(z0, &c); bw_silu(r0, &c); SAME_EXPECT("silu_backward overwrites dx", r0[0], z0[0], n); }
            z0[0] = gzeros(n); r0[0] = grand(n, 1);
            bw_swiglu(z0, &c); bw_swiglu(r0, &c);
            SAME_EXPECT(gs ? "swiglu_backward (silu) overwrites dg" : "swiglu_backward (plain) overwrites dg", r0[0], z0[0], n);
            SAME_EXPECT(gs ? "swiglu_backward (silu) overwrites du" : "swiglu_backward (plain) overwrites du", r0[1], z0[1], n);
        } }
    {   int B = 2, T = 70, H = 4, Hkv = 2, hd = 8;
        size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
        float *q = grand(nq, 1), *k = grand(nk, 1), *v = grand(nk, 1), *o = galloc(nq), *lse = galloc((size_t)B * H * T);
        cpu_attention_forward(o, lse, q, k, v, B, T, H, Hkv, hd);
        g_att_lse = lse;
        AnyCtx c = { grand(nq, 1), q, k, v, o, 0, B, T, H, Hkv, hd };
        size_t sz[3] = { nq, nk, nk };
        // attention_backward always stores dq, dk, dv (ops.h): from any G0 the result is that from 0
        float *z0[3] = { gzeros(nq), gzeros(nk), gzeros(nk) }, *r0[3] = { grand(nq, 1), grand(nk, 1), grand(nk, 1) };
        bw_att(z0, &c); bw_att(r0, &c);
        for (int i = 0; i < 3; i++) SAME_EXPECT("attention_backward stores dq, dk, dv", r0[i], z0[i], sz[i]); }
    {   int32_t tok[9] = { 3, 0, 3, 4, 1, 3, 0, 2, 4 };   // 6 rows: row 5 is hit by no token
        int N = 9, d = 45;
        AnyCtx c = { grand(N * d, 1), 0, 0, 0, 0, tok, N, d, 6, 0, 0 };
        size_t sz[1] = { (size_t)6 * d };
        r = accum_ratio(bw_emb, &c, 1, sz); EXPECT(r <= 1, "embedding_backward (ratio %.3g)", r);
        EXPECT(stores(bw_emb, &c, 1, sz, ALL), "embedding_backward does not store every row"); }
    {   int N = 9, w = 70, ld = 73;   // LaX: strided views, two dgamma column blocks
        float *x = grand((size_t)N * ld, 2), *g = grand(w, 1), *b = grand(w, 1), *mean = galloc(N), *rstd = galloc(N);
        float *y = galloc((size_t)N * ld);
        cpu_layernorm_forward(y, ld, mean, rstd, x, ld, g, b, N, w, 1e-5f);
        AnyCtx c = { grand((size_t)N * ld, 1), x, g, mean, rstd, 0, N, w, ld, 0, 0 };
        size_t sz[3] = { (size_t)N * ld, (size_t)w, (size_t)w };
        r = accum_ratio(bw_ln, &c, 3, sz); EXPECT(r <= 1, "layernorm_backward (ratio %.3g)", r);
        EXPECT(stores(bw_ln, &c, 3, sz, (View){ N, w, ld }), "layernorm_backward does not store dx, dgamma, dbeta"); }
    {   int N = 9, r1 = 3, r2 = 5, ld = 17;
        AnyCtx c = { grand((size_t)N * ld, 1), grand((size_t)N * ld, 1), grand(9, 1), grand(25, 1), 0, 0, N, r1, ld, r2, 0 };
        size_t sz[3] = { (size_t)N * ld, 9, 25 };
        r = accum_ratio(bw_kron, &c, 3, sz); EXPECT(r <= 1, "kron_gate_backward (ratio %.3g)", r);
        EXPECT(stores(bw_kron, &c, 3, sz, (View){ N, r1 * r2, ld }), "kron_gate_backward does not store dz, dG1, dG2");
        AnyCtx dc = { grand((size_t)N * ld, 1), grand((size_t)N * ld, 1), grand(225, 1), 0, 0, 0, N, 15, ld, 0, 0 };
        size_t dsz[3] = { (size_t)N * ld, 225, 15 };
        r = accum_ratio(bw_dense, &dc, 3, dsz); EXPECT(r <= 1, "dense_gate_backward (ratio %.3g)", r);
        EXPECT(stores(bw_dense, &dc, 3, dsz, (View){ N, 15, ld }), "dense_gate_backward does not store dz, dW, dbias"); }
    GUARDS_EXPECT();
    gfree_all();
}

// ====================================================================================
// determinism: the same call twice gives identical bits (shapes large enough that every
// op actually splits work across the OpenMP threads).
TEST(deterministic) {
    {   int N = 64, d = 300; size_t nd = (size_t)N * d;
        float *x = grand(nd, 2), *gm = grand(d, 1), *dy = grand(nd, 1);
        float *y1 = galloc(nd), *y2 = galloc(nd), *r1 = galloc(N), *r2 = galloc(N);
        float *dx1 = gzeros(nd), *dx2 = gzeros(nd), *dg1 = gzeros(d), *dg2 = gzeros(d);
        cpu_rmsnorm_forward(y1, r1, x, gm, N, d, 1e-6f); cpu_rmsnorm_forward(y2, r2, x, gm, N, d, 1e-6f);
        cpu_rmsnorm_backward(dx1, dg1, dy, x, gm, r1, N, d, 1, 1); cpu_rmsnorm_backward(dx2, dg2, dy, x, gm, r2, N, d, 1, 1);
        SAME_EXPECT("rmsnorm y", y1, y2, nd); SAME_EXPECT("rmsnorm dx", dx1, dx2, nd); SAME_EXPECT("rmsnorm dgamma", dg1, dg2, d); }
    {   int B = 2, T = 300, H = 4, Hkv = 2, hd = 16;
        size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, na = (size_t)B * H * T;
        float *q = grand(nq, 1), *k = grand(nk, 1), *v = grand(nk, 1), *dout = grand(nq, 1);
        float *o1 = galloc(nq), *o2 = galloc(nq), *a1 = galloc(na), *a2 = galloc(na);
        float *dq1 = gzeros(nq), *dq2 = gzeros(nq), *dk1 = gzeros(nk), *dk2 = gzeros(nk), *dv1 = gzeros(nk), *dv2 = gzeros(nk);
        cpu_attention_forward(o1, a1, q, k, v, B, T, H, Hkv, hd); cpu_attention_forward(o2, a2, q, k, v, B, T, H, Hkv, hd);
        cpu_attention_backward(dq1, dk1, dv1, dout, o1, q, k, v, a1, B, T, H, Hkv, hd);
        cpu_attention_backward(dq2, dk2, dv2, dout, o2, q, k, v, a2, B, T, H, Hkv, hd);
        SAME_EXPECT("attention out", o1, o2, nq); SAME_EXPECT("attention lse", a1, a2, na);
        SAME_EXPECT("attention dq", dq1, dq2, nq); SAME_EXPECT("attention dk", dk1, dk2, nk); SAME_EXPECT("attention dv", dv1, dv2, nk); }
    {   int N = 64, V = 1000; size_t nv = (size_t)N * V;
        int32_t tgt[64]; for (int i = 0; i < N; i++) tgt[i] = (i * 37) % V;
        float *lg = grand(nv, 5), *d1 = galloc(nv), *d2 = galloc(nv), *l1 = galloc(N), *l2 = galloc(N), *mx = galloc(N);
        double se[64], tl[64];
        cpu_xent_forward(mx, se, tl, lg, tgt, N, V, 0);
        double s1 = cpu_xent_loss(l1, se, mx, tl, N), s2 = cpu_xent_loss(l2, se, mx, tl, N);
        cpu_xent_backward(d1, lg, mx, se, tgt, N, V, 0, 0.5f);
        cpu_xent_backward(d2, lg, mx, se, tgt, N, V, 0, 0.5f);
        EXPECT(s1 == s2, "crossentropy loss sum"); SAME_EXPECT("crossentropy dlogits", d1, d2, nv); SAME_EXPECT("crossentropy losses", l1, l2, N); }
    {   int N = 300, d = 100; int32_t tok[300]; for (int i = 0; i < N; i++) tok[i] = (i * i) % 7;
        float *dout = grand((size_t)N * d, 1), *w1 = gzeros(7 * d), *w2 = gzeros(7 * d);
        cpu_embedding_backward_shard(w1, dout, tok, N, d, 0, 7, 1, NULL); cpu_embedding_backward_shard(w2, dout, tok, N, d, 0, 7, 1, NULL);
        SAME_EXPECT("embedding dwte", w1, w2, 7 * d); }
    {   size_t n = 300001; float *x = grand(n, 1);
        EXPECT(cpu_sumsq(x, n) == cpu_sumsq(x, n), "sumsq");
        float *g = grand(n, 1), *p1 = grand(n, 1), *p2 = gcopy(p1, n), *m1 = gzeros(n), *m2 = gzeros(n), *v1 = gzeros(n), *v2 = gzeros(n);
        cpu_adamw_update(p1, g, m1, v1, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1, 1.0f);
        cpu_adamw_update(p2, g, m2, v2, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1, 1.0f);
        SAME_EXPECT("adamw param", p1, p2, n); }
    {   // LaX: the LayerNorm and kron-gate reductions are bit-identical for 1 and 2 threads
        int N = 257, r1 = 8, r2 = 16, w = 128, nth = omp_get_max_threads();
        size_t nv = (size_t)N * w;
        float *x = grand(nv, 2), *g = grand(w, 1), *b = grand(w, 1), *dy = grand(nv, 1), *G1 = grand(64, 1), *G2 = grand(256, 1);
        float *res[2][7];
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t == 0 ? 1 : 2);
            float *y = galloc(nv), *m = galloc(N), *rs = galloc(N), *dx = gzeros(nv), *dg = gzeros(w), *db = gzeros(w);
            float *o = gzeros(nv), *dz = gzeros(nv), *d1 = gzeros(64), *d2 = gzeros(256);
            cpu_layernorm_forward(y, w, m, rs, x, w, g, b, N, w, 1e-6f);
            cpu_layernorm_backward(dx, w, dg, db, dy, w, x, w, m, rs, g, N, w, 1, 1);
            cpu_kron_gate_forward(o, w, x, w, G1, G2, N, r1, r2);
            cpu_kron_gate_backward(dz, w, d1, d2, dy, w, x, w, G1, G2, N, r1, r2, 1, 1);
            float *all[7] = { y, dx, dg, o, dz, d1, d2 };
            memcpy(res[t], all, sizeof all);
        }
        omp_set_num_threads(nth);
        size_t len[7] = { nv, nv, (size_t)w, nv, nv, 64, 256 };
        const char *nm[7] = { "layernorm y", "layernorm dx", "layernorm dgamma", "kron out", "kron dz", "kron dG1", "kron dG2" };
        for (int i = 0; i < 7; i++) SAME_EXPECT(nm[i], res[0][i], res[1][i], len[i]); }
    GUARDS_EXPECT();
    gfree_all();
}

int main(void) {
    cpu = backend_cpu(DT_F32);
    RUN(gemm_matches_naive);
    RUN(gemm_gradcheck);
    RUN(rmsnorm_forward_reference);
    RUN(rmsnorm_gradcheck);
    RUN(sharded_rmsnorm_equals_rmsnorm);
    RUN(sharded_rmsnorm_gradcheck);
    RUN(activation_forward_reference);
    RUN(activation_gradcheck);
    RUN(activation_vector_bits);
    RUN(rope_reference_and_identity);
    RUN(rope_gradcheck);
    RUN(attention_matches_naive);
    RUN(attention_gradcheck);
    RUN(attention_kernels_match_float64);
    RUN(attention_vector_matches_scalar);
    RUN(attention_threads_bit_identical);
    RUN(embedding_forward_and_gradcheck);
    RUN(crossentropy_gradcheck);
    RUN(crossentropy_reference_inplace_and_shards);
    RUN(crossentropy_vector_bits);
    RUN(adamw_matches_scalar_reference);
    RUN(adamw_grad_scale_is_the_scale_pass);
    RUN(sumsq_and_scale);
    RUN(sumsq_multi_chunks);
    RUN(sumsq_multi_live);
    RUN(adamw_multi_live);
    RUN(embedding_backward_live_rows);
    RUN(fast_expf_accuracy);
    RUN(vector_expf_same_bits);
    RUN(lax_layernorm_forward_reference);
    RUN(lax_layernorm_gradcheck);
    RUN(lax_gates_forward_reference);
    RUN(lax_gates_gradcheck);
    RUN(lax_ops_bf16_table);
    RUN(backward_accumulates_or_stores);
    RUN(deterministic);
    TL_EXIT();
}
