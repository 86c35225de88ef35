// cpu_bf16.c — the CPU back end with bf16 storage: every compute-dtype tensor is bf16 in
// memory. GEMMs run in bf16 arithmetic where the CPU has it (oneDNN on AMX or AVX512-BF16,
// fp32 accumulation; cpu_bf16.h says how the path is chosen), else widen to fp32 sgemm.
// Every other op widens its inputs to fp32, runs the fp32 kernel and rounds its outputs to
// bf16 once, as the CUDA kernels do. Statistics (rstd, lse, maxima, dot) stay fp32; an
// accumulating output (+=) is read, summed in fp32 and rounded once per op. It is the CPU
// check of the bf16 path (the drivers' dtype handling, the master-weight optimizer, the bf16
// communication, with no GPU) and, with bf16 GEMMs, a faster CPU trainer than fp32.
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <string.h>
#include "cpu.h"
#include "cpu_bf16.h"
#include "onednn.h"
#include "kernels.h"
#include "../bf16.h"
#include "../../core/check.h"

// ---- fp32 scratch: the widened copies of one op, reused from op to op ----------------------
// A fresh malloc of a large buffer is an mmap whose every page faults in, zeroed, on each
// call again; at a training step's sizes (the logits, N·V fp32) that costs more than the
// conversion. The slots keep their buffers; one op holds at most 8 at a time. The back end
// is called from one thread (each op runs threaded inside).
#define SCRATCH_SLOTS 16
static struct { float *p; size_t cap; int used; } scratch[SCRATCH_SLOTS];
static float *scratch_get(size_t n) {
    if (n == 0) n = 1;
    int fit = -1, big = -1;   // the smallest free slot that fits; else the largest free one, grown
    for (int i = 0; i < SCRATCH_SLOTS; i++) {
        if (scratch[i].used) continue;
        if (scratch[i].cap >= n && (fit < 0 || scratch[i].cap < scratch[fit].cap)) fit = i;
        if (big < 0 || scratch[i].cap > scratch[big].cap) big = i;
    }
    if (fit < 0) {
        CHECK(big >= 0, "cpu bf16: more than %d fp32 scratch buffers in one op", SCRATCH_SLOTS);
        free(scratch[big].p);
        scratch[big].p = xmalloc(n * sizeof(float));
        scratch[big].cap = n;
        fit = big;
    }
    scratch[fit].used = 1;
    return scratch[fit].p;
}
static void scratch_put(float *p) {
    if (!p) return;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        if (scratch[i].used && scratch[i].p == p) { scratch[i].used = 0; return; }
    DIE("cpu bf16: %p is not a scratch buffer", (void *)p);
}

// f[n] = h[n] widened (exact)
static void widen(float *f, const bf16 *h, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) f[i] = bf16_to_f32(h[i]);
}
// fp32 copy of n bf16 elements (NULL stays NULL)
static float *up(const void *p, size_t n) {
    if (!p) return NULL;
    float *f = scratch_get(n);
    widen(f, p, n);
    return f;
}
// An fp32 buffer for a contiguous output of n elements: widened from p when the op adds to it
// (acc), else fresh scratch (stored, not read). NULL stays NULL. (A strided output's span
// holds other tensors' rows between its own: that one is always widened and written back.)
static float *out_buf(void *p, size_t n, int acc) { return acc ? up(p, n) : p ? scratch_get(n) : NULL; }
// p[n] = bf16(f[n]); returns f to the scratch
static void down(void *p, float *f, size_t n) {
    if (!p) { scratch_put(f); return; }
    bf16 *h = p;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) h[i] = bf16_from_f32(f[i]);
    scratch_put(f);
}
// ---- streaming ops in cache-sized blocks -----------------------------------------------
// Elementwise and row-wise ops run in one parallel region: each thread takes a contiguous
// part of the elements (rows), and for each block of it widens the inputs into its own
// scratch, runs the fp32 kernel on the block (the kernel's own parallel loop runs on this one
// thread: a nested region is inactive) and rounds the outputs. The fp32 copies never leave
// the cache, so an op moves its bf16 bytes through memory once, as the fp32 back end moves
// its fp32 ones. Same kernels, same per-element arithmetic as widening whole tensors.
#define EW_BLOCK 4096        // elements per block and buffer
#define EW_BUFS 5            // inputs + outputs of one op at most

// fn(f, n, arg): the kernel on block buffers f[0..n_in) (inputs), f[n_in..n_in+n_out)
// (outputs; widened first when out_read); NULL tensors stay NULL.
typedef void (*BlockFn)(float *const *f, size_t n, const void *arg);

static void ew_blocked(int n_in, const void *const *in, int n_out, void *const *out, int out_read, size_t n,
                       BlockFn fn, const void *arg) {
    #pragma omp parallel
    {
        float buf[EW_BUFS][EW_BLOCK];
        float *f[EW_BUFS];
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        size_t per = (n + (size_t)nt - 1) / (size_t)nt, lo = per * (size_t)t, hi = lo + per < n ? lo + per : n;
        for (size_t i0 = lo; i0 < hi; i0 += EW_BLOCK) {
            size_t m = hi - i0 < EW_BLOCK ? hi - i0 : EW_BLOCK;
            for (int j = 0; j < n_in + n_out; j++) {
                const bf16 *h = j < n_in ? in[j] : out[j - n_in];
                f[j] = h ? buf[j] : NULL;
                if (h && (j < n_in || out_read)) for (size_t k = 0; k < m; k++) buf[j][k] = bf16_to_f32(h[i0 + k]);
            }
            fn(f, m, arg);
            for (int j = 0; j < n_out; j++) {
                bf16 *h = out[j];
                if (h) for (size_t k = 0; k < m; k++) h[i0 + k] = bf16_from_f32(buf[n_in + j][k]);
            }
        }
    }
}

// Row-wise: fn(f, r0, rows, arg) on rows [r0, r0 + rows) of [N, width] tensors, the row
// blocks as large as EW_BLOCK allows (at least one row: a thread's scratch on the heap then).
typedef void (*RowFn)(float *const *f, int r0, int rows, const void *arg);

static void rows_blocked(int n_in, const void *const *in, int n_out, void *const *out, int out_read, int N, size_t width,
                         RowFn fn, const void *arg) {
    int rb = width >= EW_BLOCK ? 1 : (int)(EW_BLOCK / width);
    #pragma omp parallel
    {
        float *f[EW_BUFS], *mem = xmalloc((size_t)(n_in + n_out) * rb * width * sizeof(float));
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int per = (N + nt - 1) / nt, lo = per * t, hi = lo + per < N ? lo + per : N;
        for (int r0 = lo; r0 < hi; r0 += rb) {
            int rows = hi - r0 < rb ? hi - r0 : rb;
            size_t m = (size_t)rows * width, off = (size_t)r0 * width;
            for (int j = 0; j < n_in + n_out; j++) {
                const bf16 *h = j < n_in ? in[j] : out[j - n_in];
                f[j] = h ? mem + (size_t)j * rb * width : NULL;
                if (h && (j < n_in || out_read)) for (size_t k = 0; k < m; k++) f[j][k] = bf16_to_f32(h[off + k]);
            }
            fn(f, r0, rows, arg);
            for (int j = 0; j < n_out; j++) {
                bf16 *h = out[j];
                if (h) for (size_t k = 0; k < m; k++) h[off + k] = bf16_from_f32(f[n_in + j][k]);
            }
        }
        free(mem);
    }
}

// Elements spanned by a [rows, cols] block with row stride ld (the rows in between are
// converted up and back unchanged: bf16 -> fp32 -> bf16 is exact).
static size_t span(size_t rows, size_t cols, size_t ld) { return rows ? (rows - 1) * ld + cols : 0; }
static size_t view_span(const SlotView *v) {
    size_t s = 0;
    for (int j = 0; j < v->G; j++) {
        size_t e = v->off[j] + span((size_t)v->N, (size_t)v->r, (size_t)v->ld);
        if (e > s) s = e;
    }
    return s;
}

static void h_add2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols) {
    (void)b;
    size_t nd = span((size_t)rows, (size_t)cols, ldd), ns = span((size_t)rows, (size_t)cols, lds);
    float *d = up(dst, nd), *s = up(src, ns);
    cpu_add2d(d, ldd, s, lds, rows, cols);
    down(dst, d, nd); scratch_put(s);
}

// ---- GEMMs: the path (cpu_bf16.h) ---------------------------------------------------------
static int gemm_path = -1;   // Bf16GemmPath, -1 until chosen
static char gemm_line[384];

Bf16GemmPath cpu_bf16_gemm_choose(const char *request, int quiet) {
    const char *env = getenv("BOOST_CPU_BF16_GEMM");
    const char *req = request ? request : env && *env ? env : "auto";
    const char *hint = "set BOOST_CPU_BF16_GEMM to auto (bf16 where it is the faster path: AMX, or AVX512-BF16 on AMD; else fp32), bf16 or fp32";
    if (strcmp(req, "auto") && strcmp(req, "bf16") && strcmp(req, "fp32"))
        die_input_hint(hint, "BOOST_CPU_BF16_GEMM is '%s'; expected auto, bf16 or fp32", req);
    char isa[64] = "", why[256] = "";
    int have = strcmp(req, "fp32") ? onednn_bf16_supported(isa, sizeof isa, why, sizeof why) : 0;
    if (!strcmp(req, "bf16") && !have)
        die_input_hint(hint, "BOOST_CPU_BF16_GEMM is bf16 but %s", why);
    if (!strcmp(req, "auto") && have && !onednn_bf16_faster(why, sizeof why)) {   // onednn.h
        have = 0;
        size_t n = strlen(why);
        xsnprintf(why + n, sizeof why - n, "; BOOST_CPU_BF16_GEMM=bf16 uses it anyway");
    }
    gemm_path = have ? BF16_GEMM_BF16 : BF16_GEMM_FP32;
    if (have)
        xsnprintf(gemm_line, sizeof gemm_line, "cpu bf16: GEMMs in bf16 arithmetic, fp32 accumulation (%s matmul, ISA %s; "
                  "BOOST_CPU_BF16_GEMM=fp32 widens them to fp32)", onednn_version(), isa);
    else
        xsnprintf(gemm_line, sizeof gemm_line, "cpu bf16: GEMMs widened to fp32 sgemm (%s)",
                  !strcmp(req, "fp32") ? "BOOST_CPU_BF16_GEMM=fp32" : why);
    if (!quiet) { fprintf(stderr, "%s\n", gemm_line); fflush(stderr); }
    return (Bf16GemmPath)gemm_path;
}
const char *cpu_bf16_gemm_describe(void) { return gemm_line; }
const char *cpu_bf16_gemm_library(Backend *b) {
    (void)b;
    static char both[720];
    if (gemm_path < 0) cpu_bf16_gemm_choose(NULL, 0);
    xsnprintf(both, sizeof both, "%s; fp32 products: %s", gemm_line, cpu_sgemm_describe());
    return both;
}
int cpu_bf16_has_units(void) { return onednn_bf16_supported(NULL, 0, NULL, 0); }

// bf16 arithmetic on the operands as stored: no copies.
static void gemm_bf16(const GemmArgs *g) { onednn_gemm(g, DT_BF16); }

// The fp32 reference: widen the spans of A, B (and C) to fp32, sgemm, round C once.
static void gemm_fp32(const GemmArgs *g) {
    size_t na = g->ta == TR_N ? span((size_t)g->M, (size_t)g->K, (size_t)g->lda) : span((size_t)g->K, (size_t)g->M, (size_t)g->lda);
    size_t nb = g->tb == TR_N ? span((size_t)g->K, (size_t)g->N, (size_t)g->ldb) : span((size_t)g->N, (size_t)g->K, (size_t)g->ldb);
    size_t nc = span((size_t)g->M, (size_t)g->N, (size_t)g->ldc);
    GemmArgs f = *g;
    float *A = up(g->A, na), *B = up(g->B, nb), *C = up(g->C, nc);
    f.A = A; f.B = B; f.C = C;
    cpu_sgemm(&f);
    down(g->C, C, nc); scratch_put(A); scratch_put(B);
}
static void gemm_one(const GemmArgs *g) {
    if (gemm_path < 0) cpu_bf16_gemm_choose(NULL, 0);
    if (gemm_path == BF16_GEMM_BF16 && g->K > 0) gemm_bf16(g);   // K 0 (C = beta·C): the fp32 path
    else gemm_fp32(g);
}
static void h_gemm(Backend *b, const GemmArgs *g) { (void)b; gemm_one(g); }
static void h_gemm_into(Backend *b, const GemmArgs *g, void *D, int ldd) {
    (void)b;
    GemmArgs h = cpu_gemm_into_args(g, D, ldd, sizeof(bf16));
    gemm_one(&h);
}
static void h_gemm_group(Backend *b, int count, const GemmArgs *g) { (void)b; for (int i = 0; i < count; i++) gemm_one(&g[i]); }

typedef struct { float *rstd; const float *gamma; int d; float eps; } RmsArgs;
static void k_rmsnorm_forward(float *const *f, int r0, int rows, const void *arg) {
    const RmsArgs *a = arg;
    cpu_rmsnorm_forward(f[1], a->rstd + r0, f[0], a->gamma, rows, a->d, a->eps);
}
static void h_rmsnorm_forward(Backend *b, void *y, float *rstd, const void *x, const void *gamma, int N, int d, float eps) {
    (void)b;
    float *fg = up(gamma, (size_t)d);
    RmsArgs a = { .rstd = rstd, .gamma = fg, .d = d, .eps = eps };
    rows_blocked(1, (const void *[]){ x }, 1, (void *[]){ y }, 0, N, (size_t)d, k_rmsnorm_forward, &a);
    scratch_put(fg);
}
static void h_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *dy, const void *x, const void *gamma,
                               const float *rstd, int N, int d, int acc_dx, int acc_dgamma) {
    (void)b;
    size_t n = (size_t)N * d;
    float *fdx = out_buf(dx, n, acc_dx), *fdg = out_buf(dgamma, (size_t)d, acc_dgamma), *fdy = up(dy, n), *fx = up(x, n),
          *fg = up(gamma, (size_t)d);
    cpu_rmsnorm_backward(fdx, fdg, fdy, fx, fg, rstd, N, d, acc_dx, acc_dgamma);
    down(dx, fdx, n); down(dgamma, fdg, (size_t)d); scratch_put(fdy); scratch_put(fx); scratch_put(fg);
}
static void h_rowsumsq(Backend *b, void *S, const void *x, int N, int d) {
    (void)b;
    float *fx = up(x, (size_t)N * d), *fs = scratch_get((size_t)N);
    cpu_rowsumsq(fs, fx, N, d);
    down(S, fs, (size_t)N); scratch_put(fx);
}
static void h_rownorm(Backend *b, void *y, const void *x, const void *gamma, const void *S, int N, int d, int width, float eps) {
    (void)b;
    size_t n = (size_t)N * d;
    float *fx = up(x, n), *fg = up(gamma, (size_t)d), *fs = up(S, (size_t)N), *fy = scratch_get(n);
    cpu_rownorm(fy, fx, fg, fs, N, d, width, eps);
    down(y, fy, n); scratch_put(fx); scratch_put(fg); scratch_put(fs);
}
static void h_scale_rows(Backend *b, void *P, const SlotView *v, const void *S, int width, float eps, int power) {
    (void)b;
    size_t n = view_span(v);
    float *fp = up(P, n), *fs = up(S, (size_t)v->N);
    cpu_scale_rows(fp, v, fs, width, eps, power);
    down(P, fp, n); scratch_put(fs);
}
static void h_rowdot(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v) {
    (void)b;
    size_t n = view_span(v);
    float *fx = up(X, n), *fy = up(Y, n);
    cpu_rowdot(dot, fx, fy, v);
    scratch_put(fx); scratch_put(fy);
}
static void h_sharded_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *da, const void *x, const void *gamma,
                                       const void *S, const float *dot, int N, int d, int d_full, float eps,
                                       int acc_dgamma) {
    (void)b;
    size_t n = (size_t)N * d;
    float *fdx = up(dx, n), *fdg = out_buf(dgamma, (size_t)d, acc_dgamma), *fda = up(da, n), *fx = up(x, n),
          *fg = up(gamma, (size_t)d), *fs = up(S, (size_t)N);
    cpu_sharded_rmsnorm_backward(fdx, fdg, fda, fx, fg, fs, dot, N, d, d_full, eps, acc_dgamma);
    down(dx, fdx, n); down(dgamma, fdg, (size_t)d); scratch_put(fda); scratch_put(fx); scratch_put(fg); scratch_put(fs);
}
static void k_silu_forward(float *const *f, size_t n, const void *arg) { (void)arg; cpu_silu_forward(f[1], f[0], n); }
static void h_silu_forward(Backend *b, void *y, const void *x, size_t n) {
    (void)b;
    ew_blocked(1, (const void *[]){ x }, 1, (void *[]){ y }, 0, n, k_silu_forward, NULL);
}
static void k_silu_backward(float *const *f, size_t n, const void *arg) { (void)arg; cpu_silu_backward(f[2], f[0], f[1], n); }
static void h_silu_backward(Backend *b, void *dx, const void *dy, const void *x, size_t n) {
    (void)b;   // dx: overwritten
    ew_blocked(2, (const void *[]){ dy, x }, 1, (void *[]){ dx }, 0, n, k_silu_backward, NULL);
}
static void k_swiglu_forward(float *const *f, size_t n, const void *arg) { cpu_swiglu_forward(f[2], f[0], f[1], n, *(const int *)arg); }
static void h_swiglu_forward(Backend *b, void *z, const void *g, const void *u, size_t n, int gs) {
    (void)b;
    ew_blocked(2, (const void *[]){ g, u }, 1, (void *[]){ z }, 0, n, k_swiglu_forward, &gs);
}
static void k_swiglu_backward(float *const *f, size_t n, const void *arg) {
    cpu_swiglu_backward(f[3], f[4], f[0], f[1], f[2], n, *(const int *)arg);
}
static void h_swiglu_backward(Backend *b, void *dg, void *du, const void *dz, const void *g, const void *u, size_t n, int gs) {
    (void)b;   // dg, du: overwritten (not read); either may be NULL
    ew_blocked(3, (const void *[]){ dz, g, u }, 2, (void *[]){ dg, du }, 0, n, k_swiglu_backward, &gs);
}
static void k_add(float *const *f, size_t n, const void *arg) { (void)arg; cpu_add_inplace(f[1], f[0], n); }
static void h_add(Backend *b, void *x, const void *y, size_t n) {
    (void)b;
    ew_blocked(1, (const void *[]){ y }, 1, (void *[]){ x }, 1, n, k_add, NULL);
}
static void k_scale(float *const *f, size_t n, const void *arg) { cpu_scale_inplace(f[0], *(const float *)arg, n); }
static void h_scale(Backend *b, void *x, float s, size_t n) {
    (void)b;
    ew_blocked(0, NULL, 1, (void *[]){ x }, 1, n, k_scale, &s);
}
typedef struct { int T, H, hd, inverse; float theta; } RopeArgs;
static void k_rope(float *const *f, int r0, int rows, const void *arg) {
    (void)r0;   // whole sequences: the angle depends on the position within one
    const RopeArgs *a = arg;
    if (a->inverse) cpu_rope_backward(f[0], rows, a->T, a->H, a->hd, a->theta);
    else cpu_rope_forward(f[0], rows, a->T, a->H, a->hd, a->theta);
}
static void h_rope(Backend *b, void *x, int B, int T, int H, int hd, float theta, int inverse) {
    (void)b;
    RopeArgs a = { .T = T, .H = H, .hd = hd, .inverse = inverse, .theta = theta };
    rows_blocked(0, NULL, 1, (void *[]){ x }, 1, B, (size_t)T * H * hd, k_rope, &a);
}
static void h_attention_forward(Backend *b, void *out, float *lse, const void *q, const void *k, const void *v,
                                int B, int T, int H, int Hkv, int hd) {
    (void)b;
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
    float *fq = up(q, nq), *fk = up(k, nk), *fv = up(v, nk), *fo = scratch_get(nq);
    cpu_attention_forward(fo, lse, fq, fk, fv, B, T, H, Hkv, hd);
    down(out, fo, nq); scratch_put(fq); scratch_put(fk); scratch_put(fv);
}
static void h_attention_backward(Backend *b, void *dq, void *dk, void *dv, const void *dout, const void *out,
                                 const void *q, const void *k, const void *v, const float *lse,
                                 int B, int T, int H, int Hkv, int hd) {
    (void)b;
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
    float *fdq = scratch_get(nq), *fdk = scratch_get(nk), *fdv = scratch_get(nk), *fdo = up(dout, nq), *fo = up(out, nq),
          *fq = up(q, nq), *fk = up(k, nk), *fv = up(v, nk);
    cpu_attention_backward(fdq, fdk, fdv, fdo, fo, fq, fk, fv, lse, B, T, H, Hkv, hd);
    down(dq, fdq, nq); down(dk, fdk, nk); down(dv, fdv, nk);
    scratch_put(fdo); scratch_put(fo); scratch_put(fq); scratch_put(fk); scratch_put(fv);
}
// Embedding rows are copied as bf16 (widening and rounding a bf16 value is exact); the
// backward widens only the rows the batch touches (N of V; with acc 0 none: they are stored),
// renumbered in first-seen order, and runs the fp32 kernel on them: the same sums in the same
// token order; with acc 0 every row no token hits is zeroed.
static void h_embedding_forward(Backend *b, void *out, const int32_t *tokens, const void *wte, int N, int d, int v0, int V) {
    (void)b;
    bf16 *o = out;
    const bf16 *w = wte;
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t >= 0 && t < V) memcpy(o + (size_t)i * d, w + (size_t)t * d, sizeof(bf16) * d);
        else memset(o + (size_t)i * d, 0, sizeof(bf16) * d);
    }
}
static void h_embedding_backward(Backend *b, void *dwte, const void *dout, const int32_t *tokens, int N, int d, int v0, int V,
                                 int acc, const unsigned char *nz) {
    (void)b; (void)nz;   // every row written (the hint is optional)
    int *slot = xmalloc((size_t)V * sizeof(int)), *row = xmalloc((size_t)(N ? N : 1) * sizeof(int));
    int32_t *local = xmalloc((size_t)(N ? N : 1) * sizeof(int32_t));
    for (int v = 0; v < V; v++) slot[v] = -1;
    int nrows = 0;
    for (int i = 0; i < N; i++) {
        int t = tokens[i] - v0;
        if (t < 0 || t >= V) { local[i] = -1; continue; }
        if (slot[t] < 0) { slot[t] = nrows; row[nrows++] = t; }
        local[i] = slot[t];
    }
    bf16 *w = dwte;
    float *fdw = scratch_get((size_t)nrows * d), *fdo = up(dout, (size_t)N * d);
    if (acc) {
        #pragma omp parallel for schedule(static)
        for (int r = 0; r < nrows; r++)
            for (int j = 0; j < d; j++) fdw[(size_t)r * d + j] = bf16_to_f32(w[(size_t)row[r] * d + j]);
    } else {
        #pragma omp parallel for schedule(static)
        for (int v = 0; v < V; v++)
            if (slot[v] < 0) memset(w + (size_t)v * d, 0, sizeof(bf16) * d);
    }
    cpu_embedding_backward_shard(fdw, fdo, local, N, d, 0, nrows, acc, NULL);
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < nrows; r++)
        for (int j = 0; j < d; j++) w[(size_t)row[r] * d + j] = bf16_from_f32(fdw[(size_t)r * d + j]);
    scratch_put(fdw); scratch_put(fdo);
    free(slot); free(row); free(local);
}
typedef struct { float *lmax; double *sumexp, *tlogit; const float *gmax; const double *sexp; const int32_t *targets; int V, v0; float scale; } XentArgs;
static void k_xent_forward(float *const *f, int r0, int rows, const void *arg) {
    const XentArgs *a = arg;
    cpu_xent_forward(a->lmax + r0, a->sumexp + r0, a->tlogit + r0, f[0], a->targets + r0, rows, a->V, a->v0);
}
static void h_xent_forward(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                           const int32_t *targets, int N, int V, int v0) {
    (void)b;
    XentArgs a = { .lmax = lmax, .sumexp = sumexp, .tlogit = tlogit, .targets = targets, .V = V, .v0 = v0 };
    rows_blocked(1, (const void *[]){ logits }, 0, NULL, 0, N, (size_t)V, k_xent_forward, &a);
}
static void k_xent_backward(float *const *f, int r0, int rows, const void *arg) {
    const XentArgs *a = arg;
    cpu_xent_backward(f[1], f[0], a->gmax + r0, a->sexp + r0, a->targets + r0, rows, a->V, a->v0, a->scale);
}
static void h_xent_backward(Backend *b, void *dlogits, const void *logits, const float *gmax, const double *sumexp,
                            const int32_t *targets, int N, int V, int v0, float scale) {
    (void)b;
    XentArgs a = { .gmax = gmax, .sexp = sumexp, .targets = targets, .V = V, .v0 = v0, .scale = scale };
    rows_blocked(1, (const void *[]){ logits }, 1, (void *[]){ dlogits }, 0, N, (size_t)V, k_xent_backward, &a);
}
static void k_xent_fused(float *const *f, int r0, int rows, const void *arg) {
    const XentArgs *a = arg;
    cpu_xent_fused(f[1], a->lmax + r0, a->sumexp + r0, a->tlogit + r0, f[0], a->targets + r0, rows, a->V, a->v0, a->scale);
}
static void h_xent_fused(Backend *b, void *dlogits, float *lmax, double *sumexp, double *tlogit, const void *logits,
                         const int32_t *targets, int N, int V, int v0, float scale) {
    (void)b;
    XentArgs a = { .lmax = lmax, .sumexp = sumexp, .tlogit = tlogit, .targets = targets, .V = V, .v0 = v0, .scale = scale };
    rows_blocked(1, (const void *[]){ logits }, 1, (void *[]){ dlogits }, 0, N, (size_t)V, k_xent_fused, &a);
}
// The optimizer's passes: blocked like the streaming ops, the fp32 tensors (master, m, v)
// addressed in place. The sum of squares in fixed chunks of 65536 elements summed in chunk
// order: the same for any thread count.
#define SUMSQ_CHUNK 65536

static double h_sumsq_multi(Backend *b, int n, const void *const *x, const size_t *len, const double *w,
                            const SumsqLive *live) {
    (void)b; (void)live;   // every row read (the hint is optional)
    double total = 0;
    for (int i = 0; i < n; i++) {
        const bf16 *h = x[i];
        size_t nch = (len[i] + SUMSQ_CHUNK - 1) / SUMSQ_CHUNK;
        double *part = xmalloc((nch ? nch : 1) * sizeof(double));
        #pragma omp parallel for schedule(static)
        for (size_t c = 0; c < nch; c++) {
            size_t i0 = c * SUMSQ_CHUNK, i1 = i0 + SUMSQ_CHUNK < len[i] ? i0 + SUMSQ_CHUNK : len[i];
            double acc = 0;
            #pragma omp simd reduction(+:acc)
            for (size_t k = i0; k < i1; k++) { double v = bf16_to_f32(h[k]); acc += v * v; }
            part[c] = acc;
        }
        double s = 0;
        for (size_t c = 0; c < nch; c++) s += part[c];
        free(part);
        total += w[i] * s;
    }
    return total;
}
static void h_adamw_multi(Backend *b, int n, const AdamWSpan *s, const AdamWHyper *h) {
    (void)b;
    for (int i = 0; i < n; i++) {
        CHECK(s[i].param, "cpu bf16: the update must write the bf16 parameter copy");
        const bf16 *grad = s[i].grad;
        bf16 *param = s[i].param;
        size_t len = s[i].n;
        #pragma omp parallel
        {
            float g[EW_BLOCK];
            int nt = omp_get_num_threads(), t = omp_get_thread_num();
            size_t per = (len + (size_t)nt - 1) / (size_t)nt, lo = per * (size_t)t, hi = lo + per < len ? lo + per : len;
            for (size_t i0 = lo; i0 < hi; i0 += EW_BLOCK) {
                size_t m = hi - i0 < EW_BLOCK ? hi - i0 : EW_BLOCK;
                for (size_t k = 0; k < m; k++) g[k] = bf16_to_f32(grad[i0 + k]);
                float *master = s[i].master + i0;
                cpu_adamw_update(master, g, s[i].m + i0, s[i].v + i0, m, h->lr, h->beta1, h->beta2, h->eps,
                             s[i].weight_decay, h->t, h->grad_scale);
                for (size_t k = 0; k < m; k++) param[i0 + k] = bf16_from_f32(master[k]);
            }
        }
    }
}

// ---- LaX latent crossing (lax.c): strided [N, r] views, converted over their span ----------
static void h_layernorm_forward(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                                const void *gamma, const void *beta, int N, int r, float eps) {
    (void)b;
    size_t nx = span((size_t)N, (size_t)r, (size_t)ldx), ny = span((size_t)N, (size_t)r, (size_t)ldy);
    float *fx = up(x, nx), *fy = up(y, ny), *fg = up(gamma, (size_t)r), *fb = up(beta, (size_t)r);
    cpu_layernorm_forward(fy, ldy, mean, rstd, fx, ldx, fg, fb, N, r, eps);
    down(y, fy, ny); scratch_put(fx); scratch_put(fg); scratch_put(fb);
}
static void h_layernorm_backward(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                                 const void *x, int ldx, const float *mean, const float *rstd, const void *gamma,
                                 int N, int r, int acc_dx, int acc_dw) {
    (void)b;
    size_t ndx = span((size_t)N, (size_t)r, (size_t)lddx), ndy = span((size_t)N, (size_t)r, (size_t)lddy),
           nx = span((size_t)N, (size_t)r, (size_t)ldx);
    float *fdx = up(dx, ndx), *fdg = out_buf(dgamma, (size_t)r, acc_dw), *fdb = out_buf(dbeta, (size_t)r, acc_dw),
          *fdy = up(dy, ndy), *fx = up(x, nx), *fg = up(gamma, (size_t)r);
    cpu_layernorm_backward(fdx, lddx, fdg, fdb, fdy, lddy, fx, ldx, mean, rstd, fg, N, r, acc_dx, acc_dw);
    down(dx, fdx, ndx); down(dgamma, fdg, (size_t)r); down(dbeta, fdb, (size_t)r);
    scratch_put(fdy); scratch_put(fx); scratch_put(fg);
}
static void h_dense_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W,
                                 const void *bias, int N, int r) {
    (void)b;
    size_t no = span((size_t)N, (size_t)r, (size_t)ldo), nz = span((size_t)N, (size_t)r, (size_t)ldz);
    float *fo = up(out, no), *fz = up(z, nz), *fw = up(W, (size_t)r * r), *fb = up(bias, (size_t)r);
    cpu_dense_gate_forward(fo, ldo, fz, ldz, fw, fb, N, r);
    down(out, fo, no); scratch_put(fz); scratch_put(fw); scratch_put(fb);
}
static void h_dense_gate_backward(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                                  const void *z, int ldz, const void *W, int N, int r, int acc_dz, int acc_dw) {
    (void)b;
    size_t ndz = span((size_t)N, (size_t)r, (size_t)lddz), ndo = span((size_t)N, (size_t)r, (size_t)lddo),
           nz = span((size_t)N, (size_t)r, (size_t)ldz), rr = (size_t)r * r;
    float *fdz = up(dz, ndz), *fdw = out_buf(dW, rr, acc_dw), *fdb = out_buf(dbias, (size_t)r, acc_dw), *fdo = up(dout, ndo),
          *fz = up(z, nz), *fw = up(W, rr);
    cpu_dense_gate_backward(fdz, lddz, fdw, fdb, fdo, lddo, fz, ldz, fw, N, r, acc_dz, acc_dw);
    down(dz, fdz, ndz); down(dW, fdw, rr); down(dbias, fdb, (size_t)r); scratch_put(fdo); scratch_put(fz); scratch_put(fw);
}
static void h_kron_gate_forward(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1,
                                const void *G2, int N, int r1, int r2) {
    (void)b;
    size_t r = (size_t)r1 * r2, no = span((size_t)N, r, (size_t)ldo), nz = span((size_t)N, r, (size_t)ldz);
    float *fo = up(out, no), *fz = up(z, nz), *f1 = up(G1, (size_t)r1 * r1), *f2 = up(G2, (size_t)r2 * r2);
    cpu_kron_gate_forward(fo, ldo, fz, ldz, f1, f2, N, r1, r2);
    down(out, fo, no); scratch_put(fz); scratch_put(f1); scratch_put(f2);
}
static void h_kron_gate_backward(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                                 const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2,
                                 int acc_dz, int acc_dw) {
    (void)b;
    size_t r = (size_t)r1 * r2, ndz = span((size_t)N, r, (size_t)lddz), ndo = span((size_t)N, r, (size_t)lddo),
           nz = span((size_t)N, r, (size_t)ldz), n1 = (size_t)r1 * r1, n2 = (size_t)r2 * r2;
    float *fdz = up(dz, ndz), *fd1 = out_buf(dG1, n1, acc_dw), *fd2 = out_buf(dG2, n2, acc_dw), *fdo = up(dout, ndo),
          *fz = up(z, nz), *f1 = up(G1, n1), *f2 = up(G2, n2);
    cpu_kron_gate_backward(fdz, lddz, fd1, fd2, fdo, lddo, fz, ldz, f1, f2, N, r1, r2, acc_dz, acc_dw);
    down(dz, fdz, ndz); down(dG1, fd1, n1); down(dG2, fd2, n2); scratch_put(fdo); scratch_put(fz); scratch_put(f1); scratch_put(f2);
}

const BackendOps cpu_bf16_ops = {
    .alloc = cpu_alloc, .free = cpu_free, .zero = cpu_zero, .copy = cpu_copy, .copy2d = cpu_copy2d,
    .to_host = cpu_copy, .from_host = cpu_copy, .sync = cpu_sync, .cast = cpu_cast, .add2d = h_add2d,
    .gemm = h_gemm, .gemm_into = h_gemm_into, .gemm_group = h_gemm_group,
    .rmsnorm_forward = h_rmsnorm_forward, .rmsnorm_backward = h_rmsnorm_backward,
    .rowsumsq = h_rowsumsq, .rownorm = h_rownorm, .scale_rows = h_scale_rows, .rowdot = h_rowdot,
    .sharded_rmsnorm_backward = h_sharded_rmsnorm_backward,
    .silu_forward = h_silu_forward, .silu_backward = h_silu_backward,
    .swiglu_forward = h_swiglu_forward, .swiglu_backward = h_swiglu_backward,
    .add = h_add, .scale = h_scale, .rope = h_rope,
    .attention_forward = h_attention_forward, .attention_backward = h_attention_backward,
    .embedding_forward = h_embedding_forward, .embedding_backward = h_embedding_backward,
    .xent_forward = h_xent_forward, .xent_rescale = cpu_op_xent_rescale, .xent_loss = cpu_op_xent_loss,
    .xent_backward = h_xent_backward, .xent_fused = h_xent_fused,
    .sumsq_multi = h_sumsq_multi, .adamw_multi = h_adamw_multi,
    .layernorm_forward = h_layernorm_forward, .layernorm_backward = h_layernorm_backward,
    .dense_gate_forward = h_dense_gate_forward, .dense_gate_backward = h_dense_gate_backward,
    .kron_gate_forward = h_kron_gate_forward, .kron_gate_backward = h_kron_gate_backward,
};
