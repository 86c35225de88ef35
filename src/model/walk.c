// walk.c — one tensor of the parameter walk (model_internal.h ParamWalk): appended to the
// table with its full shape, this rank's block under the shard, init and decay, and/or its
// view into a family buffer. params.c walks the model; the kinds take their linears' tensors.
#include "model_internal.h"
#include "../core/check.h"

void *walk_take(ParamWalk *wk, const char *name, int ndim, int64_t rows, int64_t cols, ShardDim shard,
                int decay, InitKind init, float std) {
    int tp = wk->lay->tp, r = wk->lay->tp_rank;
    int64_t lr = rows, lc = cols, r0 = 0, c0 = 0;
    if (tp == 1) shard = SHARD_NONE;
    if (shard == SHARD_ROWS) { CHECK(rows % tp == 0, "%s: %lld rows over tp %d", name, (long long)rows, tp); lr = rows / tp; r0 = r * lr; }
    if (shard == SHARD_COLS) { CHECK(cols % tp == 0, "%s: %lld cols over tp %d", name, (long long)cols, tp); lc = cols / tp; c0 = r * lc; }
    size_t numel = (size_t)lr * (size_t)lc;
    if (wk->t) {
        ParamTable *t = wk->t;
        t->specs = xrealloc(t->specs, sizeof(ParamSpec) * (size_t)(t->n_specs + 1));
        ParamSpec *s = &t->specs[t->n_specs++];
        memset(s, 0, sizeof *s);
        xsnprintf(s->name, sizeof s->name, "%s", name);
        s->ndim = ndim; s->rows = rows; s->cols = cols;
        s->shard = shard; s->local_rows = lr; s->local_cols = lc; s->row0 = r0; s->col0 = c0;
        s->tp_replicated = shard == SHARD_NONE && tp > 1;
        s->offset = wk->offset; s->numel = numel;
        s->decay = decay; s->init = init; s->init_std = std;
    }
    void *p = bk_at_t(wk->base, wk->offset, wk->dtype);
    // Keep every tensor 16-float (64-byte) aligned inside its family.
    wk->offset += (numel + 15) / 16 * 16;
    return p;
}

