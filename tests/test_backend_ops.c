// test_backend_ops.c — every op of backend/ops.h run on two back ends and compared (ggml's
// test-backend-ops idea): random inputs with odd shapes (N, d, V not multiples of 8 or 16,
// T not a multiple of the attention tiles, GQA, vocabulary slices with v0 > 0, unaligned
// operands), the reference back end cpu-fp32 against
//   cuda-fp32   backend_cuda(DT_F32), TF32 off
//   cuda-bf16   backend_cuda(DT_BF16)
//   cpu-bf16    backend_cpu(DT_BF16), bf16 storage (bf16 GEMMs where the CPU has them)
// Every buffer carries GUARD elements of a sentinel byte on each side; a write outside a
// tensor (or into the row padding of a strided one, which is compared too) fails the case.
//
// Command-line modes (tests/gpu/ and make gpu-check call these; keep them stable):
//   build/test_backend_ops
//       The test. For each target and case "PASS backend_ops.<target>.<case>" or
//       "FAIL backend_ops.<target>.<case>: <error> > <limit> (<tensor>[<index>])"; a target
//       that cannot be made here prints "SKIP backend_ops.<target>: <reason>" (never PASS).
//       Then the op table (each op's worst error per target). Exit 1 on any FAIL.
//   build/test_backend_ops --table
//       The same comparisons; prints only the op table (with ok/FAIL per cell). Same exit.
//   build/test_backend_ops --cases
//       Like the default, plus a table of every case.
//   build/test_backend_ops --json FILE [--sizes small,1b,7b] [--reps N] [--tf32]
//       Per-op device times of the CUDA back ends (bf16 and fp32; --tf32 lets the fp32 GEMMs
//       use TF32), measured with CUDA events over N repetitions (default 5, after one warm-up
//       call) at model-like shapes, written as JSON (one record per op, shape, dtype: ms,
//       FLOPs and bytes from the op front end's OpInfo) for the performance model's
//       calibration; a table is printed too. Without a CUDA device (or in a build without
//       CUDA) it prints "SKIP backend_ops_timing: <reason>" and writes {"skipped": "<reason>"}.
//   --only SUBSTRING   restrict any mode to the cases whose name contains it
//   --list             print the case names and limits, run nothing
//
// The error of a tensor a against the reference r is the normalised maximum
//     err = max_i |a_i − r_i| / (rms(r) + |r_i|)
// (relative where |r_i| is large, absolute on the tensor's own scale where r_i is near 0,
// as for sums that cancel); a case's error is the largest over its outputs, and a value
// returned to the host (loss, sum of squares) adds its relative error. Inputs are drawn
// bf16-representable, so every back end sees identical inputs and the differences are the
// op's own arithmetic. The limits, per case: fp32 targets 1e-5 for most ops (different
// summation order, FMA contraction, expf), 1e-4 for the attention backward; bf16 targets
// 1e-2 (one bf16 rounding of an output is at most 2^-9 relative) and 3e-2 for attention
// (P and dS are rounded to bf16 before their products); exact (0) for copies, casts and the
// embedding lookup. docs/gpu.md ("The CUDA back end") has the table.
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/ops.h"
#include "backend/cuda/cuda_backend.h"
#include "core/rng.h"

// build/emu/test_backend_ops_emu (make cuda-emu-test) links the CUDA back end compiled against
// the CPU emulator (src/backend/cuda/emu/): its targets are named emu-cuda-*.
#ifdef BACKEND_OPS_EMU
#define CUDA_NAME "emu-cuda"
#else
#define CUDA_NAME "cuda"
#endif

// ---- bf16 on the host (round to nearest even) ----------------------------------------------
static uint16_t f2bf(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static float round_bf16(float f) { return bf2f(f2bf(f)); }

// ---- cases -------------------------------------------------------------------------------------
// A tensor argument: its kind (K_T = the back end's compute dtype), its size, whether it is
// compared after the op, and how its values are drawn.
typedef enum { K_T, K_F32, K_BF16, K_F64, K_I32 } Kind;
typedef enum { G_UNIFORM, G_INT, G_GIVEN } Gen;
typedef struct {
    char name[16];
    Kind kind;
    size_t n;
    int cmp;            // compared after the op (an output, or an input it updates)
    Gen gen;            // uniform in [lo, hi), integers in [lo, hi), or set by the case's prep
    double lo, hi;
    double *h;          // the values (test mode)
    int ref_arg;        // compared with the reference's values of this argument (-1: itself)
    int bf16_only;      // compared on bf16 targets only (AdamW's compute-dtype copy)
} Arg;

#define MAXARGS 20
#define MAXCASES 200
typedef struct Case Case;
// Runs the op on b with the arguments' buffers p[]; returns the value the op hands to the
// host (0 for ops that return nothing).
typedef double (*CallFn)(Backend *b, void *const *p, const Case *c);
struct Case {
    char name[80];
    const char *op;             // the ops.h front end exercised (the op table's row)
    CallFn call;
    int na;
    Arg a[MAXARGS];
    int i[12];                  // shape parameters (each call documents its own); i[STORE]: the
                                // gradient outputs are stored, not added to (acc flags 0)
    float f[5];                 // scalars
    SlotView v;                 // BTP bottleneck view (scale_rows, rowdot)
    double tol32, tol16;        // limits of err for fp32 and bf16 targets
    int has_ret;                // the returned value is compared too
    void (*prep)(Case *c, Backend *ref);   // test mode: derive G_GIVEN inputs
};

static Case cases[MAXCASES];
static int ncases;

__attribute__((format(printf, 5, 6)))
static Case *new_case(const char *op, CallFn call, double tol32, double tol16, const char *fmt, ...) {
    if (ncases == MAXCASES) { fprintf(stderr, "test_backend_ops: more than %d cases\n", MAXCASES); exit(1); }
    Case *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    va_list ap; va_start(ap, fmt); vsnprintf(c->name, sizeof c->name, fmt, ap); va_end(ap);
    c->op = op; c->call = call; c->tol32 = tol32; c->tol16 = tol16;
    return c;
}
static int arg(Case *c, const char *name, Kind k, size_t n, int cmp, Gen g, double lo, double hi) {
    if (c->na == MAXARGS) { fprintf(stderr, "test_backend_ops: %s has too many arguments\n", c->name); exit(1); }
    Arg *a = &c->a[c->na];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->kind = k; a->n = n; a->cmp = cmp; a->gen = g; a->lo = lo; a->hi = hi; a->ref_arg = -1;
    return c->na++;
}
// Shorthands: an input, an output (compared; starts from random values so that a missed
// write or a missed accumulation shows), an in/out that the op updates (+=).
static int in_(Case *c, const char *name, Kind k, size_t n, double lo, double hi) { return arg(c, name, k, n, 0, G_UNIFORM, lo, hi); }
static int out_(Case *c, const char *name, Kind k, size_t n) { return arg(c, name, k, n, 1, G_UNIFORM, -1, 1); }
static int io_(Case *c, const char *name, Kind k, size_t n, double lo, double hi) { return arg(c, name, k, n, 1, G_UNIFORM, lo, hi); }

static DType dtype_of(Kind k, const Backend *b) {
    switch (k) {
    case K_T: return b->dtype;
    case K_F32: return DT_F32;
    case K_BF16: return DT_BF16;
    case K_F64: return DT_F64;
    default: return DT_I32;
    }
}

// Values as the kind stores them (bf16-representable for K_T and K_BF16).
static double as_kind(Kind k, double v) {
    switch (k) {
    case K_T: case K_BF16: return round_bf16((float)v);
    case K_F32: return (float)v;
    case K_I32: return (double)(int32_t)v;
    default: return v;
    }
}
static void draw_values(const Arg *a, double *out, size_t n, uint64_t seed) {
    Rng r = { seed };
    for (size_t i = 0; i < n; i++) {
        double u = (double)rng_uniform(&r);
        double v = a->gen == G_INT ? floor(a->lo + (a->hi - a->lo) * u) : a->lo + (a->hi - a->lo) * u;
        out[i] = as_kind(a->kind, v);
    }
}

// ---- buffers: host values <-> a back end's guarded buffers ---------------------------------------
#define GUARD 128                     // elements each side: 256..1024 bytes keep the data aligned
#define SENTINEL 0xA5

static void encode(void *dst, const double *src, size_t n, DType t) {
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case DT_F32: ((float *)dst)[i] = (float)src[i]; break;
        case DT_BF16: ((uint16_t *)dst)[i] = f2bf((float)src[i]); break;
        case DT_F64: ((double *)dst)[i] = src[i]; break;
        default: ((int32_t *)dst)[i] = (int32_t)src[i]; break;
        }
    }
}
static void decode(double *dst, const void *src, size_t n, DType t) {
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case DT_F32: dst[i] = ((const float *)src)[i]; break;
        case DT_BF16: dst[i] = bf2f(((const uint16_t *)src)[i]); break;
        case DT_F64: dst[i] = ((const double *)src)[i]; break;
        default: dst[i] = ((const int32_t *)src)[i]; break;
        }
    }
}

typedef struct { void *base; size_t n; DType t; } DevBuf;   // n counts the guards

static void *upload(Backend *b, DevBuf *d, const Arg *a) {
    d->t = dtype_of(a->kind, b);
    d->n = a->n + 2 * GUARD;
    size_t es = dtype_size(d->t);
    d->base = bk_alloc(b, d->n, d->t, MEM_WORK);
    unsigned char *host = malloc(d->n * es);
    memset(host, SENTINEL, d->n * es);
    encode(host + GUARD * es, a->h, a->n, d->t);
    op_from_host(b, d->base, host, d->n, d->t);
    free(host);
    return (char *)d->base + GUARD * es;
}
// Copies the tensor back into out[] (may be NULL); 0 if a guard byte changed.
static int download(Backend *b, const DevBuf *d, double *out) {
    size_t es = dtype_size(d->t), n = d->n - 2 * GUARD;
    unsigned char *host = malloc(d->n * es);
    op_to_host(b, host, d->base, d->n, d->t);
    int ok = 1;
    for (size_t i = 0; i < GUARD * es; i++)
        if (host[i] != SENTINEL || host[(GUARD + n) * es + i] != SENTINEL) { ok = 0; break; }
    if (out) decode(out, host + GUARD * es, n, d->t);
    free(host);
    return ok;
}

typedef struct {
    double *v[MAXARGS];     // values after the op (compared arguments)
    double ret;
    int guards_ok;
    char bad[16];           // the first argument whose guards changed
} Result;

static void run_case(Backend *b, const Case *c, Result *res) {
    DevBuf d[MAXARGS];
    void *p[MAXARGS];
    memset(res, 0, sizeof *res);
    for (int i = 0; i < c->na; i++) p[i] = upload(b, &d[i], &c->a[i]);
    res->ret = c->call(b, p, c);
    op_sync(b);
    res->guards_ok = 1;
    for (int i = 0; i < c->na; i++) {
        res->v[i] = c->a[i].cmp ? malloc(sizeof(double) * c->a[i].n) : NULL;
        if (!download(b, &d[i], res->v[i]) && res->guards_ok) {
            res->guards_ok = 0;
            snprintf(res->bad, sizeof res->bad, "%s", c->a[i].name);
        }
    }
    for (int i = 0; i < c->na; i++) bk_free(b, d[i].base, d[i].n, d[i].t, MEM_WORK);
}
static void free_result(Result *r) { for (int i = 0; i < MAXARGS; i++) free(r->v[i]); }

// err = max_i |a − r| / (rms(r) + |r_i|); NaN or Inf anywhere makes it infinite.
static double norm_err(const double *a, const double *r, size_t n, size_t *worst) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += r[i] * r[i];
    double rms = n ? sqrt(ss / (double)n) : 0.0, e = 0.0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - r[i]) / (rms + fabs(r[i]) + 1e-300);
        if (a[i] != r[i] && !isfinite(d)) d = INFINITY;
        if (!(d == d)) d = INFINITY;
        if (d > e) { e = d; *worst = i; }
    }
    return e;
}

// ---- op calls ----------------------------------------------------------------------------------
// Each documents its parameters: i[] shapes, f[] scalars, p[] the arguments in order.
#define TYP(b) ((b)->dtype)
// The acc flag of the ops that take one (ops.h): the "store" cases (i[STORE] = 1) pass 0, so
// their outputs, drawn at random first, must be overwritten everywhere.
enum { STORE = 11 };
#define ACC(c) (!(c)->i[STORE])

// i = {rows, cols, lds, ldd}: p = src, dst
static double call_copy2d(Backend *b, void *const *p, const Case *c) {
    op_copy2d(b, p[1], (size_t)c->i[3], p[0], (size_t)c->i[2], (size_t)c->i[0], (size_t)c->i[1], TYP(b));
    return 0;
}
static double call_add2d(Backend *b, void *const *p, const Case *c) {
    op_add2d(b, p[1], (size_t)c->i[3], p[0], (size_t)c->i[2], c->i[0], c->i[1]);
    return 0;
}
// i = {n, dst dtype, src dtype}: p = src, dst
static double call_cast(Backend *b, void *const *p, const Case *c) {
    op_cast(b, p[1], (DType)c->i[1], p[0], (DType)c->i[2], (size_t)c->i[0]);
    return 0;
}
// i = {ta, tb, M, N, K, lda, ldb, ldc, offset}: f = {alpha, beta}: p = A, B, C (used from
// element `offset` on: offset 1 makes every operand unaligned)
static double call_gemm(Backend *b, void *const *p, const Case *c) {
    size_t o = (size_t)c->i[8];
    op_gemm(b, (Trans)c->i[0], (Trans)c->i[1], c->i[2], c->i[3], c->i[4], c->f[0],
            bk_at(b, p[0], o), c->i[5], bk_at(b, p[1], o), c->i[6], c->f[1], bk_at(b, p[2], o), c->i[7]);
    return 0;
}
// i = {ta, tb, M, N, K, lda, ldb, ldc, offset, ldd}: f = {alpha, beta}: p = A, B, C (read), D
static double call_gemm_into(Backend *b, void *const *p, const Case *c) {
    size_t o = (size_t)c->i[8];
    op_gemm_into(b, (Trans)c->i[0], (Trans)c->i[1], c->i[2], c->i[3], c->i[4], c->f[0], bk_at(b, p[0], o), c->i[5],
                 bk_at(b, p[1], o), c->i[6], c->f[1], bk_at(b, p[2], o), c->i[7], bk_at(b, p[3], o), c->i[9]);
    return 0;
}
// i = {N rows, r, G, strided}: f = {beta}: p = Z (strided: one [N, G·r]; else G of [N, r]),
// then B_j [r, dout_j], then out_j [N, dout_j]; dout_j = i[4 + j]
static double call_gemm_group(Backend *b, void *const *p, const Case *c) {
    int N = c->i[0], r = c->i[1], G = c->i[2], strided = c->i[3];
    int zargs = strided ? 1 : G;
    GemmArgs g[3];
    for (int j = 0; j < G; j++) {
        int dout = c->i[4 + j];
        g[j] = (GemmArgs){ .ta = TR_N, .tb = TR_N, .M = N, .N = dout, .K = r, .alpha = 1.0f,
                           .A = strided ? bk_at(b, p[0], (size_t)j * r) : p[j], .lda = strided ? G * r : r,
                           .B = p[zargs + j], .ldb = dout, .beta = c->f[0], .C = p[zargs + G + j], .ldc = dout };
    }
    op_gemm_group(b, G, g);
    return 0;
}
// i = {N, d}: f = {eps}: p = x, gamma, y, rstd
static double call_rmsnorm_fwd(Backend *b, void *const *p, const Case *c) {
    op_rmsnorm_forward(b, p[2], p[3], p[0], p[1], c->i[0], c->i[1], c->f[0]);
    return 0;
}
// i = {N, d, no_dx}: p = dy, x, gamma, rstd, dx, dgamma
static double call_rmsnorm_bwd(Backend *b, void *const *p, const Case *c) {
    op_rmsnorm_backward(b, c->i[2] ? NULL : p[4], p[5], p[0], p[1], p[2], p[3], c->i[0], c->i[1], ACC(c), ACC(c));
    return 0;
}
// i = {N, d}: p = x, S
static double call_rowsumsq(Backend *b, void *const *p, const Case *c) {
    op_rowsumsq(b, p[1], p[0], c->i[0], c->i[1]);
    return 0;
}
// i = {N, d, width}: f = {eps}: p = x, gamma, S, y
static double call_rownorm(Backend *b, void *const *p, const Case *c) {
    op_rownorm(b, p[3], p[0], p[1], p[2], c->i[0], c->i[1], c->i[2], c->f[0]);
    return 0;
}
// i = {width, power}: f = {eps}: v: p = S, P
static double call_scale_rows(Backend *b, void *const *p, const Case *c) {
    op_scale_rows(b, p[1], &c->v, p[0], c->i[0], c->f[0], c->i[1]);
    return 0;
}
// v: p = X, Y, dot
static double call_rowdot(Backend *b, void *const *p, const Case *c) {
    op_rowdot(b, p[2], p[0], p[1], &c->v);
    return 0;
}
// i = {N, d, d_full}: f = {eps}: p = da, x, gamma, S, dot, dx, dgamma
static double call_sharded_bwd(Backend *b, void *const *p, const Case *c) {
    op_sharded_rmsnorm_backward(b, p[5], p[6], p[0], p[1], p[2], p[3], p[4], c->i[0], c->i[1], c->i[2], c->f[0], ACC(c));
    return 0;
}
// i = {n}: p = x, y
static double call_silu_fwd(Backend *b, void *const *p, const Case *c) { op_silu_forward(b, p[1], p[0], (size_t)c->i[0]); return 0; }
// i = {n}: p = dy, x, dx
static double call_silu_bwd(Backend *b, void *const *p, const Case *c) { op_silu_backward(b, p[2], p[0], p[1], (size_t)c->i[0]); return 0; }
// i = {n, gate_silu}: p = g, u, z
static double call_swiglu_fwd(Backend *b, void *const *p, const Case *c) {
    op_swiglu_forward(b, p[2], p[0], p[1], (size_t)c->i[0], c->i[1]);
    return 0;
}
// i = {n, gate_silu, no_du}: p = dz, g, u, dg, du
static double call_swiglu_bwd(Backend *b, void *const *p, const Case *c) {
    op_swiglu_backward(b, p[3], c->i[2] ? NULL : p[4], p[0], p[1], p[2], (size_t)c->i[0], c->i[1]);
    return 0;
}
// i = {n}: p = y, x  (x += y)
static double call_add(Backend *b, void *const *p, const Case *c) { op_add(b, p[1], p[0], (size_t)c->i[0]); return 0; }
// i = {n}: f = {s}: p = x
static double call_scale(Backend *b, void *const *p, const Case *c) { op_scale(b, p[0], c->f[0], (size_t)c->i[0]); return 0; }
// i = {B, T, H, hd, inverse}: f = {theta}: p = x
static double call_rope(Backend *b, void *const *p, const Case *c) {
    if (c->i[4]) op_rope_backward(b, p[0], c->i[0], c->i[1], c->i[2], c->i[3], c->f[0]);
    else op_rope_forward(b, p[0], c->i[0], c->i[1], c->i[2], c->i[3], c->f[0]);
    return 0;
}
// i = {B, T, H, Hkv, hd}: p = q, k, v, out, lse
static double call_attn_fwd(Backend *b, void *const *p, const Case *c) {
    op_attention_forward(b, p[3], p[4], p[0], p[1], p[2], c->i[0], c->i[1], c->i[2], c->i[3], c->i[4]);
    return 0;
}
// i = {B, T, H, Hkv, hd}: p = q, k, v, out, lse, dout, dq, dk, dv
static double call_attn_bwd(Backend *b, void *const *p, const Case *c) {
    op_attention_backward(b, p[6], p[7], p[8], p[5], p[3], p[0], p[1], p[2], p[4],
                          c->i[0], c->i[1], c->i[2], c->i[3], c->i[4]);
    return 0;
}
// i = {N, d, v0, V}: p = tokens, wte, out
static double call_emb_fwd(Backend *b, void *const *p, const Case *c) {
    op_embedding_forward(b, p[2], p[0], p[1], c->i[0], c->i[1], c->i[2], c->i[3]);
    return 0;
}
// i = {N, d, v0, V}: p = tokens, dout, dwte
static double call_emb_bwd(Backend *b, void *const *p, const Case *c) {
    op_embedding_backward(b, p[2], p[1], p[0], c->i[0], c->i[1], c->i[2], c->i[3], ACC(c), NULL);
    return 0;
}
// i = {N, V, v0}: p = logits, targets, lmax, sumexp, tlogit
static double call_xent_fwd(Backend *b, void *const *p, const Case *c) {
    op_xent_forward(b, p[2], p[3], p[4], p[0], p[1], c->i[0], c->i[1], c->i[2]);
    return 0;
}
// i = {N}: p = lmax, gmax, sumexp
static double call_xent_rescale(Backend *b, void *const *p, const Case *c) {
    op_xent_rescale(b, p[2], p[0], p[1], c->i[0]);
    return 0;
}
// i = {N, accumulate}: p = sumexp, gmax, tlogit, losses, loss (the f64 sum on the back end)
static double call_xent_loss(Backend *b, void *const *p, const Case *c) {
    op_xent_loss(b, p[4], p[3], p[0], p[1], p[2], c->i[0], c->i[1]);
    return 0;
}
// i = {N, V, v0, in_place}: f = {scale}: p = logits, gmax, sumexp, targets, dlogits
static double call_xent_bwd(Backend *b, void *const *p, const Case *c) {
    op_xent_backward(b, c->i[3] ? p[0] : p[4], p[0], p[1], p[2], p[3], c->i[0], c->i[1], c->i[2], c->f[0]);
    return 0;
}
// i = {N, V, v0, in_place}: f = {scale}: p = logits, targets, lmax, sumexp, tlogit, dlogits
static double call_xent_fused(Backend *b, void *const *p, const Case *c) {
    op_xent_fused(b, c->i[3] ? p[0] : p[5], p[2], p[3], p[4], p[0], p[1], c->i[0], c->i[1], c->i[2], c->f[0]);
    return 0;
}
// i = {n tensors}: p = x_0 .. x_{n-1}; weights w_j = f[j % 4]
static double call_sumsq(Backend *b, void *const *p, const Case *c) {
    int n = c->i[0];
    const void *x[MAXARGS]; size_t len[MAXARGS]; double w[MAXARGS];
    for (int j = 0; j < n; j++) { x[j] = p[j]; len[j] = c->a[j].n; w[j] = c->f[j % 4]; }
    return op_sumsq_multi(b, n, x, len, w, NULL);
}
// i = {n spans, t}: f = {lr, beta1, beta2, eps, grad_scale}: per span j: p[5j..5j+4] = master, grad, m,
// v, param (param passed on bf16 back ends only: fp32 runs update the master in place);
// weight decay of span j = 0.1·j
static double call_adamw(Backend *b, void *const *p, const Case *c) {
    int n = c->i[0];
    AdamWSpan s[4];
    for (int j = 0; j < n; j++) {
        void *const *q = p + 5 * j;
        s[j] = (AdamWSpan){ .master = q[0], .grad = q[1], .m = q[2], .v = q[3],
                            .param = b->dtype == DT_F32 ? NULL : q[4], .n = c->a[5 * j].n,
                            .weight_decay = 0.1f * (float)j };
    }
    AdamWHyper h = { .lr = c->f[0], .beta1 = c->f[1], .beta2 = c->f[2], .eps = c->f[3], .t = c->i[1],
                      .grad_scale = c->f[4] };
    op_adamw_multi(b, n, s, &h);
    return 0;
}

// LaX's crossing ops (docs/lax.md §3), on strided views: i = {N, r, ld}
// p = x, gamma, beta, y, mean, rstd  (f = {eps})
static double call_ln_fwd(Backend *b, void *const *p, const Case *c) {
    op_layernorm_forward(b, p[3], c->i[2], p[4], p[5], p[0], c->i[2], p[1], p[2], c->i[0], c->i[1], c->f[0]);
    return 0;
}
// p = dy, x, mean, rstd, gamma, dx, dgamma, dbeta
static double call_ln_bwd(Backend *b, void *const *p, const Case *c) {
    op_layernorm_backward(b, p[5], c->i[2], p[6], p[7], p[0], c->i[2], p[1], c->i[2], p[2], p[3], p[4], c->i[0], c->i[1],
                          ACC(c), ACC(c));
    return 0;
}
// p = z, W, bias, out
static double call_dense_fwd(Backend *b, void *const *p, const Case *c) {
    op_dense_gate_forward(b, p[3], c->i[2], p[0], c->i[2], p[1], p[2], c->i[0], c->i[1]);
    return 0;
}
// p = dout, z, W, dz, dW, dbias
static double call_dense_bwd(Backend *b, void *const *p, const Case *c) {
    op_dense_gate_backward(b, p[3], c->i[2], p[4], p[5], p[0], c->i[2], p[1], c->i[2], p[2], c->i[0], c->i[1], ACC(c),
                           ACC(c));
    return 0;
}
// i = {N, r1, r2, ld}: p = z, G1, G2, out
static double call_kron_fwd(Backend *b, void *const *p, const Case *c) {
    op_kron_gate_forward(b, p[3], c->i[3], p[0], c->i[3], p[1], p[2], c->i[0], c->i[1], c->i[2]);
    return 0;
}
// p = dout, z, G1, G2, dz, dG1, dG2
static double call_kron_bwd(Backend *b, void *const *p, const Case *c) {
    op_kron_gate_backward(b, p[4], c->i[3], p[5], p[6], p[0], c->i[3], p[1], c->i[3], p[2], p[3], c->i[0], c->i[1], c->i[2],
                          ACC(c), ACC(c));
    return 0;
}

// ---- preparations (test mode): inputs that must be consistent with others ----------------------
static Arg *arg_named(Case *c, const char *name) {
    for (int i = 0; i < c->na; i++) if (!strcmp(c->a[i].name, name)) return &c->a[i];
    fprintf(stderr, "test_backend_ops: %s has no argument %s\n", c->name, name);
    exit(1);
}
static double *given(Arg *a) { free(a->h); a->h = calloc(a->n, sizeof(double)); return a->h; }

// rstd[n] = 1/sqrt(mean(x²) + eps) of x
static void prep_rstd(Case *c, Backend *ref) {
    (void)ref;
    int N = c->i[0], d = c->i[1];
    const double *x = arg_named(c, "x")->h;
    double *r = given(arg_named(c, "rstd"));
    for (int n = 0; n < N; n++) {
        double ss = 0;
        for (int j = 0; j < d; j++) ss += x[(size_t)n * d + j] * x[(size_t)n * d + j];
        r[n] = (float)(1.0 / sqrt(ss / d + c->f[0]));
    }
}
// out, lse from the reference forward of q, k, v (out rounded to bf16 like every T input)
static void prep_attention(Case *c, Backend *ref) {
    Case f = *c;
    f.call = call_attn_fwd;
    f.na = 5;
    for (int i = 0; i < 5; i++) f.a[i].cmp = 1;
    Result r;
    run_case(ref, &f, &r);
    double *out = given(arg_named(c, "out")), *lse = given(arg_named(c, "lse"));
    for (size_t i = 0; i < f.a[3].n; i++) out[i] = as_kind(K_T, r.v[3][i]);
    for (size_t i = 0; i < f.a[4].n; i++) lse[i] = as_kind(K_F32, r.v[4][i]);
    free_result(&r);
}
// mean, rstd of x's rows (LayerNorm over r, on the strided view)
static void prep_ln(Case *c, Backend *ref) {
    (void)ref;
    int N = c->i[0], r = c->i[1], ld = c->i[2];
    const double *x = arg_named(c, "x")->h;
    double *mu = given(arg_named(c, "mean")), *rs = given(arg_named(c, "rstd"));
    for (int n = 0; n < N; n++) {
        double m = 0, v = 0;
        for (int j = 0; j < r; j++) m += x[(size_t)n * ld + j];
        m /= r;
        for (int j = 0; j < r; j++) v += (x[(size_t)n * ld + j] - m) * (x[(size_t)n * ld + j] - m);
        mu[n] = (float)m; rs[n] = (float)(1.0 / sqrt(v / r + c->f[0]));
    }
}
// gmax ≥ the local row max (other ranks may hold larger logits), sumexp = Σ_local exp(x −
// gmax) + the other ranks' share
static void prep_xent_bwd(Case *c, Backend *ref) {
    (void)ref;
    int N = c->i[0], V = c->i[1];
    const double *x = arg_named(c, "logits")->h;
    double *gmax = given(arg_named(c, "gmax")), *se = given(arg_named(c, "sumexp"));
    Rng r = { 777 };
    for (int n = 0; n < N; n++) {
        double mx = -INFINITY;
        for (int j = 0; j < V; j++) mx = fmax(mx, x[(size_t)n * V + j]);
        gmax[n] = as_kind(K_F32, mx + 0.5 * rng_uniform(&r));
        double s = 0;
        for (int j = 0; j < V; j++) s += exp(x[(size_t)n * V + j] - gmax[n]);
        se[n] = s + 3.0 * rng_uniform(&r);
    }
}

// ---- the cases -------------------------------------------------------------------------------------
// Limits (see the header): fp32 targets / bf16 targets.
#define EXACT 0.0, 0.0
#define TOL_EW 1e-5, 1e-2            // elementwise and row ops
#define TOL_RED 1e-5, 1e-2           // reductions (GEMMs, norms, sums)
#define TOL_STAT 1e-5, 1e-5          // fp32/fp64 statistics from identical inputs
#define TOL_ATT_F 1e-5, 1e-2
#define TOL_ATT_B 1e-4, 3e-2

static void case_gemm(Trans ta, Trans tb, int M, int N, int K, int pad, float alpha, float beta, int offset) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    Case *c = new_case("gemm", call_gemm, TOL_RED, "gemm %c%c %dx%dx%d ld+%d a=%g b=%g%s", ta ? 'T' : 'N', tb ? 'T' : 'N',
                       M, N, K, pad, alpha, beta, offset ? " unaligned" : "");
    int arows = ta ? K : M, brows = tb ? N : K;
    in_(c, "A", K_T, (size_t)arows * lda + offset, -1, 1);
    in_(c, "B", K_T, (size_t)brows * ldb + offset, -1, 1);
    io_(c, "C", K_T, (size_t)M * ldc + offset, -1, 1);
    int v[] = { ta, tb, M, N, K, lda, ldb, ldc, offset };
    memcpy(c->i, v, sizeof v);
    c->f[0] = alpha; c->f[1] = beta;
}

// D = alpha·op(A)·op(B) + beta·C with D ≠ C (its own row stride): C is compared too (read only)
static void case_gemm_into(Trans ta, Trans tb, int M, int N, int K, int pad, int padd, float alpha, float beta, int offset) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad, ldd = N + padd;
    Case *c = new_case("gemm_into", call_gemm_into, TOL_RED, "gemm_into %c%c %dx%dx%d ldc+%d ldd+%d a=%g b=%g%s",
                       ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, pad, padd, alpha, beta, offset ? " unaligned" : "");
    int arows = ta ? K : M, brows = tb ? N : K;
    in_(c, "A", K_T, (size_t)arows * lda + offset, -1, 1);
    in_(c, "B", K_T, (size_t)brows * ldb + offset, -1, 1);
    io_(c, "C", K_T, (size_t)M * ldc + offset, -1, 1);
    out_(c, "D", K_T, (size_t)M * ldd + offset);
    int v[] = { ta, tb, M, N, K, lda, ldb, ldc, offset, ldd };
    memcpy(c->i, v, sizeof v);
    c->f[0] = alpha; c->f[1] = beta;
}

static void case_gemm_group(int N, int r, int G, int strided, float beta, const int *dout) {
    Case *c = new_case("gemm_group", call_gemm_group, TOL_RED, "gemm_group %d x [%d x %d]->(%d,%d,%d) %s b=%g", G, N, r,
                       dout[0], G > 1 ? dout[1] : 0, G > 2 ? dout[2] : 0, strided ? "strided slots" : "separate", beta);
    if (strided) in_(c, "Z", K_T, (size_t)N * G * r, -1, 1);
    else for (int j = 0; j < G; j++) in_(c, "Z_j", K_T, (size_t)N * r, -1, 1);
    for (int j = 0; j < G; j++) in_(c, "B_j", K_T, (size_t)r * dout[j], -1, 1);
    for (int j = 0; j < G; j++) io_(c, "out_j", K_T, (size_t)N * dout[j], -1, 1);
    c->i[0] = N; c->i[1] = r; c->i[2] = G; c->i[3] = strided;
    for (int j = 0; j < G; j++) c->i[4 + j] = dout[j];
    c->f[0] = beta;
}

static void case_rmsnorm(int N, int d) {
    Case *c = new_case("rmsnorm_forward", call_rmsnorm_fwd, TOL_RED, "rmsnorm_forward N=%d d=%d", N, d);
    in_(c, "x", K_T, (size_t)N * d, -2, 2);
    in_(c, "gamma", K_T, (size_t)d, 0.5, 1.5);
    out_(c, "y", K_T, (size_t)N * d);
    out_(c, "rstd", K_F32, (size_t)N);
    c->i[0] = N; c->i[1] = d; c->f[0] = 1e-5f;

    for (int store = 0; store < 2; store++) {
        c = new_case("rmsnorm_backward", call_rmsnorm_bwd, TOL_RED, "rmsnorm_backward N=%d d=%d%s", N, d,
                     store ? " store" : "");
        in_(c, "dy", K_T, (size_t)N * d, -1, 1);
        in_(c, "x", K_T, (size_t)N * d, -2, 2);
        in_(c, "gamma", K_T, (size_t)d, 0.5, 1.5);
        arg(c, "rstd", K_F32, (size_t)N, 0, G_GIVEN, 0.5, 2);
        io_(c, "dx", K_T, (size_t)N * d, -0.5, 0.5);
        io_(c, "dgamma", K_T, (size_t)d, -0.5, 0.5);
        c->i[0] = N; c->i[1] = d; c->f[0] = 1e-5f; c->i[STORE] = store;
        c->prep = prep_rstd;
    }
}

static SlotView slot_view(int N, int G, int r, int grouped) {
    SlotView v = { .N = N, .G = G, .r = r, .ld = grouped ? G * r : r };
    for (int j = 0; j < G; j++) v.off[j] = grouped ? (size_t)j * r : (size_t)j * N * r;
    return v;
}

static void case_btp_norm(int N, int d, int d_full, int r, int G, int grouped) {
    Case *c = new_case("rowsumsq", call_rowsumsq, TOL_RED, "rowsumsq N=%d d=%d", N, d);
    in_(c, "x", K_T, (size_t)N * d, -2, 2);
    out_(c, "S", K_T, (size_t)N);
    c->i[0] = N; c->i[1] = d;

    for (int full = 0; full < 2; full++) {
        int width = full ? d_full : d;
        c = new_case("rownorm", call_rownorm, TOL_EW, "rownorm N=%d d=%d width=%d", N, d, width);
        in_(c, "x", K_T, (size_t)N * d, -2, 2);
        in_(c, "gamma", K_T, (size_t)d, 0.5, 1.5);
        in_(c, "S", K_T, (size_t)N, 0.5 * width, 2.0 * width);
        out_(c, "y", K_T, (size_t)N * d);
        c->i[0] = N; c->i[1] = d; c->i[2] = width; c->f[0] = 1e-5f;
    }
    SlotView v = slot_view(N, G, r, grouped);
    size_t plen = (size_t)N * G * r;
    for (int power = -1; power <= 1; power += 2) {
        int width = power > 0 ? d : d_full;
        c = new_case("scale_rows", call_scale_rows, TOL_EW, "scale_rows N=%d %dx%d %s power=%+d", N, G, r,
                     grouped ? "grouped" : "blocks", power);
        in_(c, "S", K_T, (size_t)N, 0.5 * width, 2.0 * width);
        io_(c, "P", K_T, plen, -1, 1);
        c->i[0] = width; c->i[1] = power; c->f[0] = 1e-5f; c->v = v;
    }
    c = new_case("rowdot", call_rowdot, TOL_STAT, "rowdot N=%d %dx%d %s", N, G, r, grouped ? "grouped" : "blocks");
    in_(c, "X", K_T, plen, -1, 1);
    in_(c, "Y", K_T, plen, -1, 1);
    out_(c, "dot", K_F32, (size_t)N);
    c->v = v;

    for (int store = 0; store < 2; store++) {
        c = new_case("sharded_rmsnorm_backward", call_sharded_bwd, TOL_RED, "sharded_rmsnorm_backward N=%d d=%d d_full=%d%s",
                     N, d, d_full, store ? " store" : "");
        in_(c, "da", K_T, (size_t)N * d, -1, 1);
        in_(c, "x", K_T, (size_t)N * d, -2, 2);
        in_(c, "gamma", K_T, (size_t)d, 0.5, 1.5);
        in_(c, "S", K_T, (size_t)N, 0.5 * d_full, 2.0 * d_full);
        in_(c, "dot", K_F32, (size_t)N, -5, 5);
        io_(c, "dx", K_T, (size_t)N * d, -0.5, 0.5);
        io_(c, "dgamma", K_T, (size_t)d, -0.5, 0.5);
        c->i[0] = N; c->i[1] = d; c->i[2] = d_full; c->f[0] = 1e-5f; c->i[STORE] = store;
    }
}

static void case_elementwise(int n) {
    Case *c = new_case("silu_forward", call_silu_fwd, TOL_EW, "silu_forward n=%d", n);
    in_(c, "x", K_T, (size_t)n, -6, 6); out_(c, "y", K_T, (size_t)n); c->i[0] = n;
    c = new_case("silu_backward", call_silu_bwd, TOL_EW, "silu_backward n=%d", n);
    in_(c, "dy", K_T, (size_t)n, -1, 1); in_(c, "x", K_T, (size_t)n, -6, 6); io_(c, "dx", K_T, (size_t)n, -0.5, 0.5); c->i[0] = n;
    for (int gate = 0; gate < 2; gate++) {
        c = new_case("swiglu_forward", call_swiglu_fwd, TOL_EW, "swiglu_forward n=%d gate_silu=%d", n, gate);
        in_(c, "g", K_T, (size_t)n, -6, 6); in_(c, "u", K_T, (size_t)n, -2, 2); out_(c, "z", K_T, (size_t)n);
        c->i[0] = n; c->i[1] = gate;
        for (int no_du = 0; no_du < 2; no_du++) {
            c = new_case("swiglu_backward", call_swiglu_bwd, TOL_EW, "swiglu_backward n=%d gate_silu=%d%s", n, gate, no_du ? " du=NULL" : "");
            in_(c, "dz", K_T, (size_t)n, -1, 1); in_(c, "g", K_T, (size_t)n, -6, 6); in_(c, "u", K_T, (size_t)n, -2, 2);
            io_(c, "dg", K_T, (size_t)n, -0.5, 0.5); io_(c, "du", K_T, (size_t)n, -0.5, 0.5);
            c->i[0] = n; c->i[1] = gate; c->i[2] = no_du;
        }
    }
    c = new_case("add", call_add, TOL_EW, "add n=%d", n);
    in_(c, "y", K_T, (size_t)n, -1, 1); io_(c, "x", K_T, (size_t)n, -1, 1); c->i[0] = n;
    c = new_case("scale", call_scale, TOL_EW, "scale n=%d s=0.37", n);
    io_(c, "x", K_T, (size_t)n, -3, 3); c->i[0] = n; c->f[0] = 0.37f;
}

static void case_buffers(void) {
    Case *c = new_case("copy2d", call_copy2d, EXACT, "copy2d 13x29 lds=40 ldd=33");
    in_(c, "src", K_T, 13 * 40, -1, 1); io_(c, "dst", K_T, 13 * 33, -1, 1);
    c->i[0] = 13; c->i[1] = 29; c->i[2] = 40; c->i[3] = 33;
    c = new_case("add2d", call_add2d, TOL_EW, "add2d 13x29 lds=40 ldd=33");
    in_(c, "src", K_T, 13 * 40, -1, 1); io_(c, "dst", K_T, 13 * 33, -1, 1);
    c->i[0] = 13; c->i[1] = 29; c->i[2] = 40; c->i[3] = 33;
    // casts: exact (round to nearest even on every back end); the fp32 source is drawn in
    // fp32 precision, not bf16, so that the rounding is exercised
    c = new_case("cast", call_cast, EXACT, "cast fp32->bf16 n=1001");
    in_(c, "src", K_F32, 1001, -3, 3); out_(c, "dst", K_BF16, 1001);
    c->i[0] = 1001; c->i[1] = DT_BF16; c->i[2] = DT_F32;
    c = new_case("cast", call_cast, EXACT, "cast bf16->fp32 n=1001");
    in_(c, "src", K_BF16, 1001, -3, 3); out_(c, "dst", K_F32, 1001);
    c->i[0] = 1001; c->i[1] = DT_F32; c->i[2] = DT_BF16;
}

static void case_rope(int B, int T, int H, int hd) {
    for (int inv = 0; inv < 2; inv++) {
        Case *c = new_case(inv ? "rope_backward" : "rope_forward", call_rope, TOL_EW, "rope_%s B=%d T=%d H=%d hd=%d",
                           inv ? "backward" : "forward", B, T, H, hd);
        io_(c, "x", K_T, (size_t)B * T * H * hd, -2, 2);
        c->i[0] = B; c->i[1] = T; c->i[2] = H; c->i[3] = hd; c->i[4] = inv; c->f[0] = 10000.0f;
    }
}

static void case_attention(int B, int T, int H, int Hkv, int hd) {
    size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd;
    Case *c = new_case("attention_forward", call_attn_fwd, TOL_ATT_F, "attention_forward B=%d T=%d H=%d Hkv=%d hd=%d", B, T, H, Hkv, hd);
    in_(c, "q", K_T, nq, -2, 2); in_(c, "k", K_T, nk, -2, 2); in_(c, "v", K_T, nk, -1, 1);
    out_(c, "out", K_T, nq); out_(c, "lse", K_F32, (size_t)B * H * T);
    int v[] = { B, T, H, Hkv, hd };
    memcpy(c->i, v, sizeof v);

    c = new_case("attention_backward", call_attn_bwd, TOL_ATT_B, "attention_backward B=%d T=%d H=%d Hkv=%d hd=%d", B, T, H, Hkv, hd);
    in_(c, "q", K_T, nq, -2, 2); in_(c, "k", K_T, nk, -2, 2); in_(c, "v", K_T, nk, -1, 1);
    arg(c, "out", K_T, nq, 0, G_GIVEN, -1, 1);                  // timing mode: drawn
    arg(c, "lse", K_F32, (size_t)B * H * T, 0, G_GIVEN, 3, 6);
    in_(c, "dout", K_T, nq, -1, 1);
    io_(c, "dq", K_T, nq, -0.5, 0.5); io_(c, "dk", K_T, nk, -0.5, 0.5); io_(c, "dv", K_T, nk, -0.5, 0.5);
    memcpy(c->i, v, sizeof v);
    c->prep = prep_attention;
}

static void case_vocab(int N, int d, int v0, int V, int Vfull, int Nx, int Vx, int v0x) {
    Case *c = new_case("embedding_forward", call_emb_fwd, EXACT, "embedding_forward N=%d d=%d rows [%d,%d)", N, d, v0, v0 + V);
    arg(c, "tokens", K_I32, (size_t)N, 0, G_INT, 0, Vfull);
    in_(c, "wte", K_T, (size_t)V * d, -1, 1);
    out_(c, "out", K_T, (size_t)N * d);
    c->i[0] = N; c->i[1] = d; c->i[2] = v0; c->i[3] = V;
    for (int store = 0; store < 2; store++) {
        c = new_case("embedding_backward", call_emb_bwd, TOL_RED, "embedding_backward N=%d d=%d rows [%d,%d)%s", N, d, v0,
                     v0 + V, store ? " store" : "");
        // tokens from a narrow range so that ids repeat (several rows summed into one) and some
        // rows are hit by none (stored as zeros)
        arg(c, "tokens", K_I32, (size_t)N, 0, G_INT, v0 - 10, v0 + V / 2);
        in_(c, "dout", K_T, (size_t)N * d, -1, 1);
        io_(c, "dwte", K_T, (size_t)V * d, -0.5, 0.5);
        c->i[0] = N; c->i[1] = d; c->i[2] = v0; c->i[3] = V; c->i[STORE] = store;
    }

    c = new_case("xent_forward", call_xent_fwd, TOL_STAT, "xent_forward N=%d V=%d v0=%d", Nx, Vx, v0x);
    in_(c, "logits", K_T, (size_t)Nx * Vx, -4, 4);
    arg(c, "targets", K_I32, (size_t)Nx, 0, G_INT, 0, v0x + Vx + 100);
    out_(c, "lmax", K_F32, (size_t)Nx); out_(c, "sumexp", K_F64, (size_t)Nx); out_(c, "tlogit", K_F64, (size_t)Nx);
    c->i[0] = Nx; c->i[1] = Vx; c->i[2] = v0x;
    c = new_case("xent_rescale", call_xent_rescale, TOL_STAT, "xent_rescale N=%d", Nx);
    in_(c, "lmax", K_F32, (size_t)Nx, -2, 2); in_(c, "gmax", K_F32, (size_t)Nx, 2, 4);
    io_(c, "sumexp", K_F64, (size_t)Nx, 1, 300);
    c->i[0] = Nx;
    for (int acc = 0; acc < 2; acc++) {   // the sum written, and added to a running sum
        c = new_case("xent_loss", call_xent_loss, TOL_STAT, "xent_loss N=%d%s", Nx, acc ? " accumulate" : "");
        in_(c, "sumexp", K_F64, (size_t)Nx, 1, 300); in_(c, "gmax", K_F32, (size_t)Nx, 2, 4);
        in_(c, "tlogit", K_F64, (size_t)Nx, -4, 4); out_(c, "losses", K_F32, (size_t)Nx);
        if (acc) io_(c, "loss", K_F64, 1, 100, 200); else out_(c, "loss", K_F64, 1);
        c->i[0] = Nx; c->i[1] = acc;
    }
    for (int inplace = 0; inplace < 2; inplace++) {
        c = new_case("xent_backward", call_xent_bwd, TOL_EW, "xent_backward N=%d V=%d v0=%d%s", Nx, Vx, v0x, inplace ? " in place" : "");
        arg(c, "logits", K_T, (size_t)Nx * Vx, inplace, G_UNIFORM, -4, 4);
        arg(c, "gmax", K_F32, (size_t)Nx, 0, G_GIVEN, 4, 5);
        arg(c, "sumexp", K_F64, (size_t)Nx, 0, G_GIVEN, 10, 1000);
        arg(c, "targets", K_I32, (size_t)Nx, 0, G_INT, 0, v0x + Vx + 100);
        io_(c, "dlogits", K_T, (size_t)Nx * Vx, -1, 1);
        if (inplace) c->a[4].cmp = 0;        // unused: the gradient overwrites logits
        c->i[0] = Nx; c->i[1] = Vx; c->i[2] = v0x; c->i[3] = inplace; c->f[0] = 1.0f / Nx;
        c->prep = prep_xent_bwd;
    }
    for (int inplace = 0; inplace < 2; inplace++) {   // the tp = 1 loss: every column here (v0 0)
        c = new_case("xent_fused", call_xent_fused, TOL_EW, "xent_fused N=%d V=%d%s", Nx, Vx, inplace ? " in place" : "");
        arg(c, "logits", K_T, (size_t)Nx * Vx, inplace, G_UNIFORM, -4, 4);
        arg(c, "targets", K_I32, (size_t)Nx, 0, G_INT, 0, Vx);
        out_(c, "lmax", K_F32, (size_t)Nx); out_(c, "sumexp", K_F64, (size_t)Nx); out_(c, "tlogit", K_F64, (size_t)Nx);
        io_(c, "dlogits", K_T, (size_t)Nx * Vx, -1, 1);
        if (inplace) c->a[5].cmp = 0;        // unused: the gradient overwrites logits
        c->i[0] = Nx; c->i[1] = Vx; c->i[2] = 0; c->i[3] = inplace; c->f[0] = 1.0f / Nx;
    }
}

static void case_optimizer(const size_t *sizes, int n) {
    Case *c = new_case("sumsq_multi", call_sumsq, 1e-6, 1e-6, "sumsq_multi %d tensors", n);
    for (int j = 0; j < n; j++) in_(c, "x_j", K_T, sizes[j], -1, 1);
    c->i[0] = n; c->f[0] = 1.0f; c->f[1] = 0.5f; c->f[2] = 2.0f; c->f[3] = 0.25f;
    c->has_ret = 1;
    int ns = n < 4 ? n : 4;
    c = new_case("adamw_multi", call_adamw, 1e-6, 1e-2, "adamw_multi %d spans", ns);
    for (int j = 0; j < ns; j++) {
        int master = io_(c, "master", K_F32, sizes[j], -1, 1);
        in_(c, "grad", K_T, sizes[j], -1, 1);
        io_(c, "m", K_F32, sizes[j], -0.01, 0.01);
        io_(c, "v", K_F32, sizes[j], 0, 0.01);
        int param = io_(c, "param", K_T, sizes[j], -1, 1);
        c->a[param].ref_arg = master;         // the compute-dtype copy of the updated master
        c->a[param].bf16_only = 1;
    }
    c->i[0] = ns; c->i[1] = 3;
    c->f[0] = 1e-3f; c->f[1] = 0.9f; c->f[2] = 0.95f; c->f[3] = 1e-8f; c->f[4] = 0.6f;   // clipped by 0.6
}

// LaX's crossing: row width r inside rows of ld (the bottleneck buffers are strided views).
static void case_lax(int N, int r, int ld, int r1, int r2) {
    size_t n = (size_t)(N - 1) * ld + r;
    Case *c = new_case("layernorm_forward", call_ln_fwd, TOL_RED, "layernorm_forward N=%d r=%d ld=%d", N, r, ld);
    in_(c, "x", K_T, n, -2, 2);
    in_(c, "gamma", K_T, (size_t)r, 0.5, 1.5);
    in_(c, "beta", K_T, (size_t)r, -0.5, 0.5);
    io_(c, "y", K_T, n, -1, 1);                 // the columns between rows must stay untouched
    out_(c, "mean", K_F32, (size_t)N);
    out_(c, "rstd", K_F32, (size_t)N);
    c->i[0] = N; c->i[1] = r; c->i[2] = ld; c->f[0] = 1e-6f;

    for (int store = 0; store < 2; store++) {
        c = new_case("layernorm_backward", call_ln_bwd, TOL_RED, "layernorm_backward N=%d r=%d ld=%d%s", N, r, ld,
                     store ? " store" : "");
        in_(c, "dy", K_T, n, -1, 1);
        in_(c, "x", K_T, n, -2, 2);
        arg(c, "mean", K_F32, (size_t)N, 0, G_GIVEN, -1, 1);
        arg(c, "rstd", K_F32, (size_t)N, 0, G_GIVEN, 0.5, 2);
        in_(c, "gamma", K_T, (size_t)r, 0.5, 1.5);
        io_(c, "dx", K_T, n, -0.5, 0.5);            // stored or not, the columns between rows stay
        io_(c, "dgamma", K_T, (size_t)r, -0.5, 0.5);
        io_(c, "dbeta", K_T, (size_t)r, -0.5, 0.5);
        c->i[0] = N; c->i[1] = r; c->i[2] = ld; c->f[0] = 1e-6f; c->i[STORE] = store;
        c->prep = prep_ln;
    }

    c = new_case("dense_gate_forward", call_dense_fwd, TOL_RED, "dense_gate_forward N=%d r=%d ld=%d", N, r, ld);
    in_(c, "z", K_T, n, -1, 1);
    in_(c, "W", K_T, (size_t)r * r, -0.2, 0.2);
    in_(c, "bias", K_T, (size_t)r, -0.5, 0.5);
    io_(c, "out", K_T, n, -1, 1);
    c->i[0] = N; c->i[1] = r; c->i[2] = ld;

    for (int store = 0; store < 2; store++) {
        c = new_case("dense_gate_backward", call_dense_bwd, TOL_RED, "dense_gate_backward N=%d r=%d ld=%d%s", N, r, ld,
                     store ? " store" : "");
        in_(c, "dout", K_T, n, -1, 1);
        in_(c, "z", K_T, n, -1, 1);
        in_(c, "W", K_T, (size_t)r * r, -0.2, 0.2);
        io_(c, "dz", K_T, n, -0.5, 0.5);
        io_(c, "dW", K_T, (size_t)r * r, -0.5, 0.5);
        io_(c, "dbias", K_T, (size_t)r, -0.5, 0.5);
        c->i[0] = N; c->i[1] = r; c->i[2] = ld; c->i[STORE] = store;
    }

    size_t nk = (size_t)(N - 1) * ld + (size_t)r1 * r2;
    c = new_case("kron_gate_forward", call_kron_fwd, TOL_RED, "kron_gate_forward N=%d r=%dx%d ld=%d", N, r1, r2, ld);
    in_(c, "z", K_T, nk, -1, 1);
    in_(c, "G1", K_T, (size_t)r1 * r1, -0.5, 0.5);
    in_(c, "G2", K_T, (size_t)r2 * r2, -0.5, 0.5);
    io_(c, "out", K_T, nk, -1, 1);
    c->i[0] = N; c->i[1] = r1; c->i[2] = r2; c->i[3] = ld;

    for (int store = 0; store < 2; store++) {
        c = new_case("kron_gate_backward", call_kron_bwd, TOL_RED, "kron_gate_backward N=%d r=%dx%d ld=%d%s", N, r1, r2, ld,
                     store ? " store" : "");
        in_(c, "dout", K_T, nk, -1, 1);
        in_(c, "z", K_T, nk, -1, 1);
        in_(c, "G1", K_T, (size_t)r1 * r1, -0.5, 0.5);
        in_(c, "G2", K_T, (size_t)r2 * r2, -0.5, 0.5);
        io_(c, "dz", K_T, nk, -0.5, 0.5);
        io_(c, "dG1", K_T, (size_t)r1 * r1, -0.5, 0.5);
        io_(c, "dG2", K_T, (size_t)r2 * r2, -0.5, 0.5);
        c->i[0] = N; c->i[1] = r1; c->i[2] = r2; c->i[3] = ld; c->i[STORE] = store;
    }
}

// The test mode's cases: small odd shapes.
static void build_test_cases(void) {
    case_buffers();
    case_gemm(TR_N, TR_N, 37, 29, 45, 3, 0.7f, 0.0f, 0);
    case_gemm(TR_N, TR_T, 37, 29, 45, 5, 1.0f, 1.0f, 0);
    case_gemm(TR_T, TR_N, 37, 29, 45, 0, 1.0f, 0.5f, 0);
    case_gemm(TR_T, TR_T, 37, 29, 45, 2, -1.3f, 0.0f, 0);
    case_gemm(TR_N, TR_N, 130, 70, 520, 0, 1.0f, 1.0f, 0);
    case_gemm(TR_N, TR_T, 33, 47, 129, 1, 1.0f, 0.0f, 1);
    case_gemm(TR_T, TR_N, 24, 40, 64, 0, 1.0f, 1.0f, 1);
    case_gemm_into(TR_N, TR_N, 37, 29, 45, 3, 0, 1.0f, 1.0f, 0);   // BTP's x_mid = x + z·B
    case_gemm_into(TR_N, TR_T, 33, 47, 19, 1, 5, 0.7f, 0.5f, 1);
    case_gemm_into(TR_T, TR_N, 24, 40, 64, 0, 2, 1.0f, 0.0f, 0);    // beta 0: C not read
    static const int dq[3] = { 24, 12, 12 }, dgu[2] = { 40, 40 };
    case_gemm_group(37, 11, 3, 1, 0.0f, dq);
    case_gemm_group(37, 16, 3, 0, 0.0f, dq);
    case_gemm_group(45, 16, 2, 0, 1.0f, dgu);
    case_rmsnorm(37, 100);
    case_rmsnorm(150, 1000);
    case_btp_norm(37, 50, 150, 11, 3, 1);
    case_btp_norm(150, 70, 210, 7, 2, 0);
    case_elementwise(1001);
    case_rope(2, 37, 3, 48);
    case_attention(2, 37, 6, 2, 48);
    case_attention(1, 130, 4, 4, 64);
    case_attention(1, 70, 3, 1, 16);
    case_attention(1, 67, 2, 1, 128);
    case_attention(2, 1, 2, 2, 20);
    case_vocab(53, 37, 100, 60, 250, 29, 301, 50);
    static const size_t sizes[5] = { 1, 17, 40000, 1000, 333 };
    case_optimizer(sizes, 5);
    case_lax(37, 15, 45, 3, 5);      // a grouped [N, 3r] bottleneck's slot, r = 15 = 3 x 5
    case_lax(130, 24, 24, 4, 6);
}

// ---- test mode ---------------------------------------------------------------------------------------
typedef struct { const char *name; Backend *b; char why[256]; } Target;
enum { NTARGET = 3 };
static const char *only;
static int failures;

static int selected(const Case *c) { return !only || strstr(c->name, only); }

// The op table: each op's worst error per target (errors < 0: not run).
typedef struct { const char *op; double err[NTARGET]; double lim[NTARGET]; int fail[NTARGET]; } OpRow;

static void print_table(const char *title, const char *const *rows, double (*err)[NTARGET],
                        double (*lim)[NTARGET], int (*fail)[NTARGET], int n, const Target *t) {
    printf("\n%s\n", title);
    printf("%-58s", "");
    for (int k = 0; k < NTARGET; k++) printf(" %-22s", t[k].name);
    printf("\n");
    for (int r = 0; r < n; r++) {
        printf("%-58s", rows[r]);
        for (int k = 0; k < NTARGET; k++) {
            char cell[64];
            if (!t[k].b || err[r][k] < 0) snprintf(cell, sizeof cell, "skip");
            else snprintf(cell, sizeof cell, "%.1e/%.0e %s", err[r][k], lim[r][k], fail[r][k] ? "FAIL" : "ok");
            printf(" %-22s", cell);
        }
        printf("\n");
    }
}

static int run_tests(int table_only, int case_table) {
    build_test_cases();
    Target t[NTARGET] = { { CUDA_NAME "-fp32", NULL, "" }, { CUDA_NAME "-bf16", NULL, "" }, { "cpu-bf16", NULL, "" } };
    t[0].b = backend_cuda(DT_F32, -1, t[0].why, sizeof t[0].why);
    if (t[0].b) t[0].b->tf32 = 0;           // exact fp32 GEMMs for the comparison
    t[1].b = backend_cuda(DT_BF16, -1, t[1].why, sizeof t[1].why);
    t[2].b = backend_cpu(DT_BF16);
    if (!t[2].b) snprintf(t[2].why, sizeof t[2].why, "backend_cpu(DT_BF16) returned NULL");
    Backend *ref = backend_cpu(DT_F32);
    if (!ref) { printf("FAIL backend_ops: backend_cpu(DT_F32) returned NULL\n"); return 1; }
    for (int k = 0; k < NTARGET; k++)
        if (!t[k].b && !table_only) printf("SKIP backend_ops.%s: %s\n", t[k].name, t[k].why);

    static const char *case_names[MAXCASES];
    static double case_err[MAXCASES][NTARGET], case_lim[MAXCASES][NTARGET];
    static int case_fail[MAXCASES][NTARGET];
    static const char *ops[MAXCASES];
    static double op_err[MAXCASES][NTARGET], op_lim[MAXCASES][NTARGET];
    static int op_fail[MAXCASES][NTARGET];
    int nrow = 0, nop = 0;

    for (int ci = 0; ci < ncases; ci++) {
        Case *c = &cases[ci];
        if (!selected(c)) continue;
        for (int i = 0; i < c->na; i++) {
            Arg *a = &c->a[i];
            a->h = malloc(sizeof(double) * (a->n ? a->n : 1));
            draw_values(a, a->h, a->n, 1000003ull * (uint64_t)(ci + 1) + (uint64_t)i);
        }
        if (c->prep) c->prep(c, ref);
        Result r0;
        run_case(ref, c, &r0);
        if (!r0.guards_ok) {
            failures++;
            printf("FAIL backend_ops.cpu-fp32.%s: the reference wrote outside %s\n", c->name, r0.bad);
        }
        int row = nrow++, orow = -1;
        case_names[row] = c->name;
        for (int o = 0; o < nop; o++) if (!strcmp(ops[o], c->op)) orow = o;
        if (orow < 0) {
            orow = nop++;
            ops[orow] = c->op;
            for (int k = 0; k < NTARGET; k++) { op_err[orow][k] = -1; op_lim[orow][k] = 0; op_fail[orow][k] = 0; }
        }
        for (int k = 0; k < NTARGET; k++) {
            case_err[row][k] = -1; case_fail[row][k] = 0;
            if (!t[k].b) continue;
            int bf = t[k].b->dtype == DT_BF16;
            double lim = bf ? c->tol16 : c->tol32;
            Result rt;
            run_case(t[k].b, c, &rt);
            double e = 0; char where[64] = "";
            for (int i = 0; i < c->na; i++) {
                const Arg *a = &c->a[i];
                if (!a->cmp || (a->bf16_only && !bf)) continue;
                size_t w;
                const double *ref_v = r0.v[a->ref_arg >= 0 ? a->ref_arg : i];
                double ei = norm_err(rt.v[i], ref_v, a->n, &w);
                if (ei > e || !where[0]) {
                    e = ei > e ? ei : e;
                    if (a->n) snprintf(where, sizeof where, "%s[%zu]: %.7g vs %.7g", a->name, w, rt.v[i][w], ref_v[w]);
                }
            }
            if (c->has_ret) {
                double er = fabs(rt.ret - r0.ret) / (fabs(r0.ret) + 1e-300);
                if (!(er == er)) er = INFINITY;
                if (er > e) { e = er; snprintf(where, sizeof where, "returned %.10g vs %.10g", rt.ret, r0.ret); }
            }
            int fail = !rt.guards_ok || !(e <= lim);
            if (fail) failures++;
            if (!table_only) {
                if (!rt.guards_ok) printf("FAIL backend_ops.%s.%s: wrote outside %s\n", t[k].name, c->name, rt.bad);
                else if (fail) printf("FAIL backend_ops.%s.%s: %.3g > %.3g (%s)\n", t[k].name, c->name, e, lim, where);
                else printf("PASS backend_ops.%s.%s\n", t[k].name, c->name);
            }
            case_err[row][k] = rt.guards_ok ? e : INFINITY; case_lim[row][k] = lim; case_fail[row][k] = fail;
            if (case_err[row][k] > op_err[orow][k]) { op_err[orow][k] = case_err[row][k]; op_lim[orow][k] = lim; }
            op_fail[orow][k] |= fail;
            free_result(&rt);
        }
        free_result(&r0);
        for (int i = 0; i < c->na; i++) { free(c->a[i].h); c->a[i].h = NULL; }
        fflush(stdout);
    }
    print_table("== op table: worst err = max|a-r|/(rms(r)+|r|) against cpu-fp32, per op (err/limit) ==",
                ops, op_err, op_lim, op_fail, nop, t);
    if (case_table)
        print_table("== every case (err/limit) ==", case_names, case_err, case_lim, case_fail, nrow, t);
    printf("\n%d failure(s)\n", failures);
    for (int k = 0; k < NTARGET; k++) if (t[k].b) backend_free(t[k].b);
    backend_free(ref);
    return failures ? 1 : 0;
}

// ---- timing mode ------------------------------------------------------------------------------------
// Model-like shapes: the token count N = B·T, model width d, bottleneck rank r, MLP width,
// vocabulary, heads and head dimension.
#ifdef BOOST_CUDA
typedef struct { const char *name; int B, T, d, r, dff, V, H, hd; } Size;
static const Size SIZES[] = {
    { "small", 1, 2048, 1024, 256, 2736, 32000, 16, 64 },
    { "1b", 2, 4096, 2048, 512, 5472, 32000, 32, 64 },
    { "7b", 2, 4096, 4096, 1024, 11008, 32000, 32, 128 },
};

static void build_timing_cases(const Size *s) {
    int N = s->B * s->T, d = s->d, r = s->r;
    case_gemm(TR_N, TR_N, N, r, d, 0, 1.0f, 0.0f, 0);          // down factor: [N,d]·[d,r]
    case_gemm(TR_N, TR_N, N, d, r, 0, 1.0f, 1.0f, 0);          // up factor into the residual
    case_gemm(TR_N, TR_N, N, d, d, 0, 1.0f, 0.0f, 0);          // a dense projection
    case_gemm(TR_T, TR_N, d, r, N, 0, 1.0f, 1.0f, 0);          // weight gradient x^T·dP
    case_gemm(TR_N, TR_T, N, d, r, 0, 1.0f, 1.0f, 0);          // input gradient dP·A^T
    case_gemm(TR_N, TR_T, N, s->V, d, 0, 1.0f, 0.0f, 0);       // tied LM head
    int qkv[3] = { d, d, d }, gu[2] = { s->dff, s->dff };
    case_gemm_group(N, r, 3, 1, 0.0f, qkv);
    case_gemm_group(N, r, 2, 1, 0.0f, gu);
    case_rmsnorm(N, d);
    case_btp_norm(N, d, d, r, 3, 1);
    case_elementwise(N * s->dff);
    case_rope(s->B, s->T, s->H, s->hd);
    case_attention(s->B, s->T, s->H, s->H, s->hd);
    case_vocab(N, d, 0, s->V, s->V, N, s->V, 0);
    size_t layer[7] = { (size_t)d * r, (size_t)r * d, (size_t)d * r, (size_t)r * s->dff, (size_t)d * r,
                        (size_t)r * s->dff, (size_t)s->dff * r };
    case_optimizer(layer, 7);
}

// One argument on the device with drawn values: at most FILL elements are drawn on the host,
// the rest of the buffer repeats them (device copies).
#define FILL ((size_t)1 << 20)
static void *upload_drawn(Backend *b, const Arg *a, uint64_t seed, DevBuf *d) {
    d->t = dtype_of(a->kind, b);
    d->n = a->n ? a->n : 1;
    size_t es = dtype_size(d->t), k = d->n < FILL ? d->n : FILL;
    d->base = bk_alloc(b, d->n, d->t, MEM_WORK);
    double *vals = malloc(sizeof(double) * k);
    draw_values(a, vals, k, seed);
    void *host = malloc(k * es);
    encode(host, vals, k, d->t);
    op_from_host(b, d->base, host, k, d->t);
    for (size_t have = k; have < d->n; ) {
        size_t len = d->n - have < have ? d->n - have : have;
        op_copy(b, (char *)d->base + have * es, d->base, len, d->t);
        have += len;
    }
    free(vals); free(host);
    return d->base;
}

typedef struct { OpInfo last; int seen; } Capture;
static void capture_end(void *ctx, const OpInfo *op) { Capture *c = ctx; c->last = *op; c->seen = 1; }

#endif

static int skip_timing(FILE *f, const char *why) {
    printf("SKIP backend_ops_timing: %s\n", why);
    fprintf(f, "{\"skipped\": \"%s\"}\n", why);
    fclose(f);
    return 0;
}

static int run_timing(const char *path, const char *sizes, int reps, int tf32) {
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "error: cannot write %s\n", path); return 2; }
#ifndef BOOST_CUDA
    (void)sizes; (void)reps; (void)tf32;
    return skip_timing(f, "built without CUDA (CUDA=0 or no nvcc)");
#else
    char why[256];
    Backend *bk[2] = { backend_cuda(DT_BF16, -1, why, sizeof why), NULL };
    if (!bk[0]) return skip_timing(f, why);
    bk[1] = backend_cuda(DT_F32, -1, why, sizeof why);
    if (!bk[1]) { fprintf(stderr, "error: cuda fp32 back end: %s\n", why); return 1; }
    bk[1]->tf32 = tf32;
    static const OpObserver obs = { NULL, capture_end };
    fprintf(f, "{\n  \"device\": \"%s\",\n  \"reps\": %d,\n  \"tf32\": %d,\n  \"records\": [", backend_cuda_device_name(bk[0]), reps, tf32);
    printf("%-8s %-5s %-58s %10s %9s %9s\n", "size", "dtype", "case", "ms", "TFLOP/s", "GB/s");
    int first = 1;
    for (size_t si = 0; si < sizeof SIZES / sizeof SIZES[0]; si++) {
        const Size *s = &SIZES[si];
        if (sizes && !strstr(sizes, s->name)) continue;
        ncases = 0;
        build_timing_cases(s);
        for (int bi = 0; bi < 2; bi++) {
            Backend *b = bk[bi];
            Capture cap;
            bk_observe(b, &obs, &cap);
            for (int ci = 0; ci < ncases; ci++) {
                Case *c = &cases[ci];
                if (!selected(c)) continue;
                DevBuf d[MAXARGS];
                void *p[MAXARGS];
                for (int i = 0; i < c->na; i++) p[i] = upload_drawn(b, &c->a[i], 7919ull * (uint64_t)(ci + 1) + (uint64_t)i, &d[i]);
                memset(&cap, 0, sizeof cap);
                c->call(b, p, c);                       // warm-up (plans, tables, workspaces)
                op_sync(b);
                backend_cuda_timer_start(b);
                for (int r = 0; r < reps; r++) c->call(b, p, c);
                double ms = backend_cuda_timer_stop(b) / reps;
                for (int i = 0; i < c->na; i++) bk_free(b, d[i].base, d[i].n, d[i].t, MEM_WORK);
                double fl = cap.seen ? cap.last.flops : 0, by = cap.seen ? cap.last.bytes : 0;
                printf("%-8s %-5s %-58s %10.4f %9.2f %9.1f\n", s->name, dtype_name(b->dtype), c->name, ms,
                       fl / (ms * 1e9), by / (ms * 1e6));
                fprintf(f, "%s\n    {\"op\": \"%s\", \"case\": \"%s\", \"size\": \"%s\", \"dtype\": \"%s\", \"ms\": %.6f, "
                           "\"flops\": %.6g, \"bytes\": %.6g, \"M\": %d, \"N\": %d, \"K\": %d, \"count\": %d}",
                        first ? "" : ",", c->op, c->name, s->name, dtype_name(b->dtype), ms, fl, by,
                        cap.seen ? cap.last.M : 0, cap.seen ? cap.last.N : 0, cap.seen ? cap.last.K : 0,
                        cap.seen ? cap.last.count : 0);
                first = 0;
                fflush(stdout);
            }
            bk_observe(b, NULL, NULL);
        }
    }
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
    backend_free(bk[0]);
    backend_free(bk[1]);
    printf("wrote %s\n", path);
    return 0;
#endif
}

int main(int argc, char **argv) {
    int table_only = 0, case_table = 0, list = 0, reps = 5, tf32 = 0;
    const char *json = NULL, *sizes = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--table")) table_only = 1;
        else if (!strcmp(argv[i], "--cases")) case_table = 1;
        else if (!strcmp(argv[i], "--list")) list = 1;
        else if (!strcmp(argv[i], "--tf32")) tf32 = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: %s [--table | --cases] [--only SUBSTRING] [--list]\n"
                   "       %s --json FILE [--sizes small,1b,7b] [--reps N] [--tf32] [--only SUBSTRING]\n"
                   "every back-end op against the fp32 reference (PASS/FAIL/SKIP lines); --json times them\n", argv[0], argv[0]);
            return 0;
        }
        else {
            fprintf(stderr, "error: unknown argument '%s'\nusage: %s [--table | --cases] [--only SUBSTRING] [--list]\n"
                            "       %s --json FILE [--sizes small,1b,7b] [--reps N] [--tf32] [--only SUBSTRING]\n",
                    argv[i], argv[0], argv[0]);
            return 2;
        }
    }
    if (reps < 1) { fprintf(stderr, "error: --reps must be >= 1\n"); return 2; }
    if (list) {
        build_test_cases();
        for (int i = 0; i < ncases; i++)
            if (selected(&cases[i])) printf("%-60s fp32 %.0e  bf16 %.0e\n", cases[i].name, cases[i].tol32, cases[i].tol16);
        return 0;
    }
    if (json) return run_timing(json, sizes, reps, tf32);
    return run_tests(table_only, case_table);
}
