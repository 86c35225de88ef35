// scratch.c — the backward working set of one layer (Scratch, model_internal.h): carved from
// one buffer, reused layer by layer and micro-batch by micro-batch; and the layout of a
// latent message (Lat: the latents that travel with the residual, or their gradient).
#include "model_internal.h"
#include "../core/check.h"

size_t scratch_carve(Carve *cv, Scratch *s, const Model *mdl) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    DType t = mdl->bk->dtype;
    size_t N = (size_t)mdl->N, dr = L->d_res, d = c->d_model;
    size_t r = L->ra > L->rm ? L->ra : L->rm;
    memset(s, 0, sizeof *s);
    // first: the stage gradient (model_stage_grad); LaX: the carry right after it (one message)
    size_t nlat = mdl->kind->latent ? lax_elems(mdl) : 0;
    s->dx = carve(cv, (size_t)mdl->N_res * dr + nlat, t);
    if (nlat) s->carry = at(mdl, s->dx, (size_t)mdl->N_res * dr);
    s->da = carve(cv, N * (dr > d ? dr : d), t);
    s->dq = carve(cv, N * L->dq, t); s->dk = carve(cv, N * L->dkv, t); s->dv = carve(cv, N * L->dkv, t);
    s->dy = carve(cv, N * L->dq, t);
    s->dg = carve(cv, N * L->dff, t); s->du = carve(cv, N * L->dff, t); s->dgu = carve(cv, N * L->dff, t);
    s->dz = carve(cv, N * r, t); s->dh = carve(cv, N * r, t);
    s->lmax = carve(cv, N, DT_F32); s->gmax = carve(cv, N, DT_F32);
    s->sumexp = carve(cv, N, DT_F64); s->tlogit = carve(cv, N, DT_F64);
    s->dot = carve(cv, N, DT_F32);
    if (L->scheme == TP_BTP) {
        size_t gr = 3 * (size_t)L->ra > 2 * (size_t)L->rm ? 3 * (size_t)L->ra : 2 * (size_t)L->rm;
        s->xn = carve(cv, N * dr, t);
        s->acat = carve(cv, dr * gr, t); s->dacat = carve(cv, dr * gr, t);
        s->dzb = carve(cv, N * gr + N, t); s->dpb = carve(cv, N * gr + N, t);   // ≥ every btp_bn size
        s->dfull = carve(cv, N * d, t);
        if (L->sp) {
            s->bns = carve(cv, (N / (size_t)L->tp) * (gr + 1), t);
            s->stage = carve(cv, N * gr + N, t);
        }
    }
    if (seq_residual(L)) {
        size_t gains = (size_t)(2 * (L->layer_end - L->layer_begin) + L->last_stage) * d;
        s->seq_full = carve(cv, N * d, t);
        s->gains = carve(cv, gains, t);
    }
    if (nlat) {   // LaX (kind_lax.c): the crossing's recompute and backward on full-width latents
        size_t ra = (size_t)c->rank_attn, rm = (size_t)c->rank_mlp, r = ra > rm ? ra : rm;
        // a chunk's buffer: BTP's largest bottleneck, Vanilla-TP's one projection [N, r]
        size_t chunk = L->scheme == TP_BTP ? N * (3 * ra > 2 * rm ? 3 * ra : 2 * rm) + N : N * r;
        int ln = c->lax_norm == LAX_NORM_LAYERNORM;
        if (mdl->ckpt == CKPT_LOWRANK) s->zprev = carve(cv, nlat, t);
        if (ln) { s->luh = carve(cv, chunk, t); s->lduh = carve(cv, chunk, t); }
        s->lp = carve(cv, chunk, t);
        if (L->scheme == TP_BTP) s->lg = carve(cv, N * r, t);
        else s->lz = carve(cv, chunk, t);
        if (ln) { s->lmean = carve(cv, 3 * N, DT_F32); s->lrstd = carve(cv, 3 * N, DT_F32); }
    }
    return cv->off;
}

void scratch_view(const Model *mdl, Scratch *s) {
    Carve cv = { .base = mdl->scratch, .off = 0 };
    scratch_carve(&cv, s, mdl);
}

Lat lat_message(const Model *m, void *base) {
    Lat t = {0};
    size_t off = 0;
    for (int p = 0; p < LX_N; p++) {
        int w = lax_width(&m->lay, p);
        t.z[p] = base ? at(m, base, off) : NULL;
        t.ld[p] = w;
        off += (size_t)m->N * w;
    }
    return t;
}

Slots lat_slots(const Model *m, const Lat *lat, int p0, int G, int r) {
    Slots s = { .G = G, .N = m->N, .r = r, .ld = lat->ld[p0], .base = lat->z[p0] };
    size_t es = dtype_size(m->bk->dtype);
    for (int j = 0; j < G; j++) {
        CHECK(lat->ld[p0 + j] == s.ld, "lat_slots: projections %d..%d have different strides", p0, p0 + G - 1);
        s.off[j] = lat->z[p0] ? (size_t)((char *)lat->z[p0 + j] - (char *)lat->z[p0]) / es : (size_t)j * m->N * r;
    }
    return s;
}
