// ops.c — the op front ends (ops.h): each states its cost (FLOPs, bytes read + written at
// the dtypes involved), tells the observer, and runs the back end's implementation unless the
// back end is dry. The costs are what the dry back end's records, the timing wrapper's
// profile and the performance model see, so they are written once: the rows of
// OP_FRONT_ENDS (ops.h), with the FLOP formulas of GEMMs, attention and the LaX gates from
// the FLOP module (backend/op_flops.h, layer 1 of model/flops.h). This file only expands the rows (OP_DEFINE) and holds the
// few cost helpers they name.
#include <math.h>
#include "ops.h"
#include "op_flops.h"   // the FLOPs of one op (the FLOP module's layer 1)
#include "../core/check.h"

static double es(const Backend *b) { return (double)dtype_size(b->dtype); }

static OpInfo mk(const Backend *b, const char *name, OpClass cls, double flops, double bytes) {
    OpInfo i = { .name = name, .cls = cls, .flops = flops, .bytes = bytes, .count = 1,
                 .phase = b->phase, .layer = b->layer, .dtype = b->dtype };
    return i;
}
static void begin(Backend *b, const OpInfo *i) { if (b->obs && b->obs->begin) b->obs->begin(b->obs_ctx, i); }
static void end(Backend *b, const OpInfo *i) { if (b->obs && b->obs->end) b->obs->end(b->obs_ctx, i); }

// A back end whose table lacks an entry (one that predates an op, or is still being
// written) refuses by name instead of calling through NULL.
static void need(const Backend *b, int present, const char *entry) {
    CHECK(present, "the %s back end (%s) has no '%s' entry in its op table (BackendOps, backend/backend.h): "
          "implement it there, or run on the cpu back end", b->name, dtype_name(b->dtype), entry);
}

// ---- cost helpers the rows name ---------------------------------------------------------------
static double gemm_bytes(const Backend *b, int M, int N, int K, float beta) {
    return es(b) * ((double)M * K + (double)K * N + (double)M * N * (beta != 0.0f ? 2 : 1));
}
static double group_flops(int count, const GemmArgs *g) {
    double f = 0;
    for (int j = 0; j < count; j++) f += flops_gemm(g[j].M, g[j].N, g[j].K);
    return f;
}
static double group_bytes(const Backend *b, int count, const GemmArgs *g) {
    double s = 0;
    for (int j = 0; j < count; j++) s += gemm_bytes(b, g[j].M, g[j].N, g[j].K, g[j].beta);
    return s;
}
static double slot_elems(const SlotView *v) { return (double)v->N * v->G * v->r; }
static double rope_elems(int B, int T, int H, int hd) { return (double)B * T * H * hd; }
static double len_total(int n, const size_t *len) {
    double total = 0;
    for (int j = 0; j < n; j++) total += (double)len[j];
    return total;
}
// Elements updated; checks the clipping factor first (on every back end, dry included).
static double adamw_total(int n, const AdamWSpan *spans, const AdamWHyper *h) {
    CHECK(h->grad_scale > 0 && isfinite(h->grad_scale),
          "adamw: grad_scale %g must be a finite factor > 0 (1 = no clipping)", (double)h->grad_scale);
    double total = 0;
    for (int j = 0; j < n; j++) total += (double)spans[j].n;
    return total;
}
static double adamw_bytes(const Backend *b, int n, const AdamWSpan *spans) {
    double bytes = 0;
    for (int j = 0; j < n; j++) bytes += (double)spans[j].n * (6 * 4 + es(b) + (spans[j].param ? es(b) : 0));
    return bytes;
}

// ---- the front ends: one definition per row of OP_FRONT_ENDS ----------------------------------
#define OP_RESULT_void
#define OP_RESULT_double double result = 0.0;
#define OP_ASSIGN_void
#define OP_ASSIGN_double result =
#define OP_RETURN_void
#define OP_RETURN_double return result;
#define OP_DEFINE(RET, name, label, params, entry, call, when, cls, flops, bytes, shape)             \
    RET op_##name params {                                                                          \
        OP_RESULT_##RET                                                                             \
        OpInfo i = mk(b, label, cls, flops, bytes);                                                 \
        shape;                                                                                      \
        begin(b, &i);                                                                               \
        if (!b->dry && (when)) {                                                                    \
            need(b, b->ops->entry != NULL, #entry);                                                 \
            OP_ASSIGN_##RET b->ops->entry call;                                                     \
        }                                                                                           \
        end(b, &i);                                                                                 \
        OP_RETURN_##RET                                                                             \
    }
OP_FRONT_ENDS(OP_DEFINE)
#undef OP_DEFINE

void op_sync(Backend *b) { if (!b->dry && b->ops->sync) b->ops->sync(b); }
