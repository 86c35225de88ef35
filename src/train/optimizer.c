// optimizer.c — see optimizer.h.
#include <math.h>
#include "optimizer.h"
#include "../backend/ops.h"
#include "../core/check.h"

double optimizer_lr_at(const TrainConfig *tc, int step) {
    if (tc->warmup_steps > 0 && step < tc->warmup_steps)
        return tc->lr * (double)(step + 1) / tc->warmup_steps;
    int decay_steps = tc->steps - tc->warmup_steps;
    if (decay_steps <= 1) return tc->lr;
    double progress = (double)(step - tc->warmup_steps) / (double)(decay_steps - 1);  // 0..1
    if (progress > 1) progress = 1;
    double min_lr = tc->lr * tc->min_lr_ratio;
    return min_lr + 0.5 * (tc->lr - min_lr) * (1.0 + cos(M_PI * progress));
}

static CommDtype comm_dtype_of(DType t) { return t == DT_BF16 ? DTYPE_BF16 : DTYPE_F32; }

// ---- the data-parallel reduction in buckets (optimizer.h) -----------------------------------
// Start bucket i's reduction (it is final): an all-reduce, or under ZeRO-1 the reduce-scatter
// of its part of each DP rank's slice.
static void bucket_start(Optimizer *o, int i) {
    Comm *c = o->comm;
    const GradPart *p = &o->parts[i];
    CommDtype ct = comm_dtype_of(o->bk->dtype);
    void *g = bk_at(o->bk, o->mdl->grads, p->off);
    CHECK(!o->started[i], "optimizer: the gradient bucket of layer %d started twice in one step", p->layer);
    o->started[i] = 1;
    if (!o->zero1 || o->want_full) {
        o->pending[i] = comm_all_reduce_start(c, GROUP_DP, g, p->n, ct, OP_SUM, PHASE_OPTIMIZER, p->layer);
        return;
    }
    size_t *counts = xcalloc((size_t)c->dp, sizeof *counts);
    for (int j = 0; j < c->dp; j++) {   // [off, off + n) ∩ slice j, in slice order
        size_t lo = (size_t)j * o->shard_len, hi = lo + o->shard_len;
        size_t a = p->off > lo ? p->off : lo, b = p->off + p->n < hi ? p->off + p->n : hi;
        counts[j] = b > a ? b - a : 0;
    }
    o->pending[i] = comm_reduce_scatter_v_start(c, GROUP_DP, g, counts, ct, PHASE_OPTIMIZER, p->layer);
    free(counts);
}
// The model's hook: part i of the step's last backward is final.
static void bucket_final(void *ctx, int i) {
    Optimizer *o = ctx;
    CHECK(i >= 0 && i < o->n_parts, "optimizer: gradient part %d of %d", i, o->n_parts);
    comm_progress(o->comm);   // (the buckets started before move on meanwhile)
    bucket_start(o, i);
}

void optimizer_want_full(Optimizer *o, int want_full) {
    for (int i = 0; i < o->n_parts; i++)
        CHECK(!o->started[i], "optimizer_want_full: the step's gradient reduction has started already");
    o->want_full = want_full;
}

void optimizer_init(Optimizer *o, Model *mdl, int zero1) {
    memset(o, 0, sizeof *o);
    Comm *c = mdl->comm;
    o->bk = mdl->bk; o->comm = c; o->table = &mdl->table; o->tp = mdl->lay.tp;
    o->mixed = mdl->bk->dtype != DT_F32;
    o->zero1 = zero1 && c->dp > 1;
    o->n_params = mdl->table.n_params; o->n_alloc = mdl->n_alloc;
    o->grad_scale = 1.0f;
    if (o->zero1) {
        CHECK(o->n_alloc == model_family_len(o->n_params, c->dp),
              "optimizer: ZeRO-1 over %d ranks needs the model built with family_parts = %d", c->dp, c->dp);
        o->shard_len = o->n_alloc / (size_t)c->dp;
        o->shard_off = (size_t)c->dp_rank * o->shard_len;
    } else {
        o->shard_off = 0; o->shard_len = o->n_params;
    }
    // The tensors' parts inside [shard_off, shard_off + shard_len): the spans of one launch.
    const ParamTable *t = o->table;
    o->spans = xcalloc((size_t)t->n_specs + 1, sizeof *o->spans);
    for (int i = 0; i < t->n_specs; i++) {
        const ParamSpec *s = &t->specs[i];
        size_t lo = s->offset > o->shard_off ? s->offset : o->shard_off;
        size_t hi = s->offset + s->numel < o->shard_off + o->shard_len ? s->offset + s->numel : o->shard_off + o->shard_len;
        if (lo >= hi) continue;
        o->spans[o->n_spans].off = lo; o->spans[o->n_spans].n = hi - lo;
        o->spans[o->n_spans].decay = s->decay;
        o->spans[o->n_spans].norm_weight = s->tp_replicated ? 1.0 / o->tp : 1.0;
        o->n_spans++;
    }
    if (o->mixed) {
        o->master = bk_alloc(o->bk, o->shard_len, DT_F32, MEM_OPTIM);
        op_cast(o->bk, o->master, DT_F32, bk_at(o->bk, mdl->params, o->shard_off), o->bk->dtype, o->shard_len);
    } else {
        o->master = bk_at_t(mdl->params, o->shard_off, DT_F32);
    }
    o->m = bk_alloc(o->bk, o->shard_len, DT_F32, MEM_OPTIM);
    o->v = bk_alloc(o->bk, o->shard_len, DT_F32, MEM_OPTIM);
    // the buckets: the model's gradient parts, each reduced as soon as the backward finishes it
    o->mdl = mdl;
    o->n_parts = model_grad_parts(mdl, NULL);
    o->parts = xcalloc((size_t)o->n_parts + 1, sizeof *o->parts);
    model_grad_parts(mdl, o->parts);
    o->pending = xcalloc((size_t)o->n_parts + 1, sizeof *o->pending);
    o->started = xcalloc((size_t)o->n_parts + 1, sizeof *o->started);
    for (int i = 0; i < o->n_parts; i++) o->pending[i] = COMM_DONE;
    if (c->dp > 1) model_grads_final_hook(mdl, bucket_final, o);
}

void optimizer_free(Optimizer *o) {
    if (o->mixed) bk_free(o->bk, o->master, o->shard_len, DT_F32, MEM_OPTIM);
    bk_free(o->bk, o->m, o->shard_len, DT_F32, MEM_OPTIM);
    bk_free(o->bk, o->v, o->shard_len, DT_F32, MEM_OPTIM);
    free(o->spans);
    if (o->mdl && o->mdl->grads_final_ctx == o) model_grads_final_hook(o->mdl, NULL, NULL);
    free(o->parts); free(o->pending); free(o->started);
    memset(o, 0, sizeof *o);
}

void optimizer_reduce_grads(Optimizer *o, Model *mdl, int want_full) {
    CHECK(mdl == o->mdl, "optimizer_reduce_grads: not the optimizer's model");
    int any = 0;
    for (int i = 0; i < o->n_parts; i++) any |= o->started[i];
    CHECK(!any || !want_full == !o->want_full, "optimizer_reduce_grads: the step's buckets were started with "
          "want_full %d, now %d (optimizer_want_full before the step)", o->want_full, want_full);
    o->want_full = want_full;
    // the buckets no backward started (a caller without the step loop), in the same order
    for (int i = 0; i < o->n_parts; i++)
        if (!o->started[i]) bucket_start(o, i);
    for (int i = 0; i < o->n_parts; i++) {
        comm_wait(o->comm, &o->pending[i]);
        o->started[i] = 0;
    }
    o->want_full = 0;
}

double optimizer_clip(Optimizer *o, Model *mdl, double clip) {
    bk_label(o->bk, PHASE_OPTIMIZER, -1);
    int n = o->n_spans;
    const void **x = xcalloc((size_t)n + 1, sizeof *x);
    size_t *len = xcalloc((size_t)n + 1, sizeof *len);
    double *w = xcalloc((size_t)n + 1, sizeof *w);
    // The embedding gradient is zero outside its live rows (model.h embed_live): its span is
    // read in those rows only.
    SumsqLive live = { -1, 0, NULL };
    size_t d = (size_t)mdl->cfg.d_model, n_embed = (size_t)mdl->lay.V * d;
    for (int i = 0; i < n; i++) {
        x[i] = bk_at(o->bk, mdl->grads, o->spans[i].off);
        len[i] = o->spans[i].n;
        w[i] = o->spans[i].norm_weight;
        if (mdl->embed_live_ok && x[i] == mdl->dw.embed && len[i] == n_embed) live = (SumsqLive){ i, d, mdl->embed_live };
    }
    double ss = op_sumsq_multi(o->bk, n, x, len, w, live.t >= 0 ? &live : NULL);
    free(x); free(len); free(w);
    // Sum of squares of the FULL model: sharded tensors add up over TP and PP (and over the
    // ZeRO-1 slices of DP); a tensor replicated on the TP ranks is counted once.
    // (ss is a host scalar: the host entry point)
    comm_host_all_reduce(o->comm, GROUP_TP, &ss, 1, DTYPE_F64, OP_SUM, PHASE_OPTIMIZER, -1);
    comm_host_all_reduce(o->comm, GROUP_PP, &ss, 1, DTYPE_F64, OP_SUM, PHASE_OPTIMIZER, -1);
    if (o->zero1) comm_host_all_reduce(o->comm, GROUP_DP, &ss, 1, DTYPE_F64, OP_SUM, PHASE_OPTIMIZER, -1);
    double norm = sqrt(ss);
    // The clipping factor is applied by the next optimizer_step as AdamW reads each gradient:
    // no pass of its own over the gradients (the product is the one a scale pass would store).
    o->grad_scale = clip > 0 && norm > clip ? (float)(clip / norm) : 1.0f;
    return norm;
}

void optimizer_step(Optimizer *o, Model *mdl, const TrainConfig *tc, double lr, int t) {
    bk_label(o->bk, PHASE_OPTIMIZER, -1);
    AdamWSpan *sp = xcalloc((size_t)o->n_spans + 1, sizeof *sp);
    for (int i = 0; i < o->n_spans; i++) {
        size_t off = o->spans[i].off, rel = off - o->shard_off;
        sp[i] = (AdamWSpan){ .master = o->master + (o->master ? rel : 0),
                             .grad = bk_at(o->bk, mdl->grads, off),
                             .m = o->m + (o->m ? rel : 0), .v = o->v + (o->v ? rel : 0),
                             .param = o->mixed ? bk_at(o->bk, mdl->params, off) : NULL,
                             .n = o->spans[i].n,
                             .weight_decay = o->spans[i].decay ? (float)tc->weight_decay : 0.0f };
        if (mdl->embed_live_ok && sp[i].grad == mdl->dw.embed && sp[i].n == (size_t)mdl->lay.V * mdl->cfg.d_model) {
            sp[i].live = mdl->embed_live;   // zero outside these rows (model.h embed_live)
            sp[i].row_len = (size_t)mdl->cfg.d_model;
        }
        if (o->bk->dry) sp[i].master = sp[i].m = sp[i].v = NULL;
    }
    AdamWHyper h = { (float)lr, (float)tc->beta1, (float)tc->beta2, (float)tc->adam_eps, t, o->grad_scale };
    op_adamw_multi(o->bk, o->n_spans, sp, &h);
    o->grad_scale = 1.0f;   // used once: a step without optimizer_clip before it does not clip
    free(sp);
    if (o->zero1)   // every DP rank updated its slice; assemble the full parameters again
        comm_all_gather(o->comm, GROUP_DP, bk_at(o->bk, mdl->params, o->shard_off), mdl->params,
                           o->shard_len, comm_dtype_of(o->bk->dtype), PHASE_OPTIMIZER, -1);
}

// dst_host[n_params] = the full span of a [shard_len] fp32 family (assembled over DP under
// ZeRO-1 through a temporary of the padded length).
static void family_to_host(Optimizer *o, const float *fam, float *dst_host) {
    if (!dst_host) return;
    if (!o->zero1) { op_to_host(o->bk, dst_host, fam, o->n_params, DT_F32); return; }
    float *full = bk_alloc(o->bk, o->n_alloc, DT_F32, MEM_WORK);
    comm_all_gather(o->comm, GROUP_DP, fam, full, o->shard_len, DTYPE_F32, PHASE_OTHER, -1);
    op_to_host(o->bk, dst_host, full, o->n_params, DT_F32);
    bk_free(o->bk, full, o->n_alloc, DT_F32, MEM_WORK);
}

void optimizer_state_to_host(Optimizer *o, Model *mdl, float *params, float *m, float *v) {
    if (params) {
        if (o->mixed) family_to_host(o, o->master, params);
        else op_to_host(o->bk, params, mdl->params, o->n_params, DT_F32);   // complete after each step
    }
    family_to_host(o, o->m, m);
    family_to_host(o, o->v, v);
}

// fam[shard_len] (fp32, the back end's) = this rank's slice of host[n_params]; the padding
// beyond n_params stays zero.
static void family_from_host(Optimizer *o, float *fam, const float *host) {
    if (!host) return;
    size_t n = o->shard_off >= o->n_params ? 0
             : (o->shard_off + o->shard_len <= o->n_params ? o->shard_len : o->n_params - o->shard_off);
    op_zero(o->bk, fam, o->shard_len, DT_F32);
    if (n) op_from_host(o->bk, fam, host + o->shard_off, n, DT_F32);
}

void optimizer_state_from_host(Optimizer *o, Model *mdl, const float *params, const float *m, const float *v) {
    if (params) {
        model_set_params(mdl, params);
        if (o->mixed) family_from_host(o, o->master, params);
    }
    family_from_host(o, o->m, m);
    family_from_host(o, o->v, v);
}
