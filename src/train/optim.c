#include <cblas.h>
#include <math.h>
#include "optim.h"
#include "../core/check.h"
#include "../core/timer.h"
#include "../ops/ops.h"
#include "../parallel/comm.h"

double lr_at(const TrainConfig *tc, int step) {
    if (tc->warmup_steps > 0 && step < tc->warmup_steps)
        return tc->lr * (double)(step + 1) / tc->warmup_steps;
    int decay_steps = tc->steps - tc->warmup_steps;
    if (decay_steps <= 1) return tc->lr;
    double progress = (double)(step - tc->warmup_steps) / (double)(decay_steps - 1);  // 0..1
    if (progress > 1) progress = 1;
    double min_lr = tc->lr * tc->min_lr_ratio;
    return min_lr + 0.5 * (tc->lr - min_lr) * (1.0 + cos(M_PI * progress));
}

// The part [lo, hi) of tensor s inside this rank's optimizer range (empty: lo >= hi).
static void opt_part(const Model *mdl, const ParamSpec *s, size_t *lo, size_t *hi) {
    size_t a = mdl->opt_offset, b = mdl->opt_offset + mdl->opt_len;
    *lo = s->offset > a ? s->offset : a;
    *hi = s->offset + s->numel < b ? s->offset + s->numel : b;
}

double clip_grad_norm(Model *mdl, double clip) {
    // Sum of squares of the FULL model: sharded tensors add up over TP and PP (and over
    // the ZeRO-1 shards of DP); a tensor replicated on the TP ranks is counted once
    // (weight 1/tp on each).
    const ParamTable *t = &mdl->table;
    double ss = 0;
    for (int i = 0; i < t->n_specs; i++) {
        const ParamSpec *s = &t->specs[i];
        size_t lo, hi;
        opt_part(mdl, s, &lo, &hi);
        if (lo >= hi) continue;
        double part = sumsq(mdl->grads + lo, hi - lo);
        ss += s->tp_replicated ? part / mdl->lay.tp : part;
    }
    comm_all_reduce_f64(mdl->comm, GROUP_TP, &ss, 1, PHASE_OPTIMIZER, -1);
    comm_all_reduce_f64(mdl->comm, GROUP_PP, &ss, 1, PHASE_OPTIMIZER, -1);
    if (mdl->opt_len < mdl->table.n_params)   // ZeRO-1: each DP rank holds one shard
        comm_all_reduce_f64(mdl->comm, GROUP_DP, &ss, 1, PHASE_OPTIMIZER, -1);
    double norm = sqrt(ss);
    if (clip > 0 && norm > clip) scale_inplace(mdl->grads + mdl->opt_offset, (float)(clip / norm), mdl->opt_len);
    return norm;
}

void adamw_step(Model *mdl, const TrainConfig *tc, double lr, int t) {
    const ParamTable *tab = &mdl->table;
    for (int i = 0; i < tab->n_specs; i++) {
        const ParamSpec *s = &tab->specs[i];
        size_t lo, hi;
        opt_part(mdl, s, &lo, &hi);
        if (lo >= hi) continue;
        float wd = s->decay ? (float)tc->weight_decay : 0.0f;
        size_t o = lo - mdl->opt_offset;    // m, v cover the optimizer range only
        adamw_update(mdl->params + lo, mdl->grads + lo, mdl->m + o, mdl->v + o, hi - lo, (float)lr,
                     (float)tc->beta1, (float)tc->beta2, (float)tc->adam_eps, wd, t);
    }
}

double measure_sgemm_peak_gflops(void) {
    const int n = 2048;
    float *a = xaligned_alloc((size_t)n * n * sizeof(float));
    float *b = xaligned_alloc((size_t)n * n * sizeof(float));
    float *c = xaligned_alloc((size_t)n * n * sizeof(float));
    for (size_t i = 0; i < (size_t)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);  // warm-up
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_seconds();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
    }
    free(a); free(b); free(c);
    return 2.0 * n * n * (double)n / best * 1e-9;
}
