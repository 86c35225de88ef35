// kind_lax.c — LaX (latent crossing, docs/lax.md) on a cola or svd base, the whole kind:
// each projection of layer l ≥ 1 adds a gated copy of the same projection's latent of layer
// l−1 to its own bottleneck before the up factor. One projection of layer l, rank r, input x:
//
//   P = x @ A                 (BTP: after the bottleneck all-reduce; Vanilla-TP: all-gathered)
//   U = P + g(Z_prev)         layers ≥ 1; Z_prev = the same projection's latent in layer l−1
//   Û = LN(U)                 layers ≥ 1 with lax_norm: layernorm (over r); else Û = U
//   Z = σ(Û)                  σ = SiLU (cola base) or identity (svd base)
//   y = Z @ B
//
// The crossing is written into the bottleneck buffer itself (U replaces P), so every
// checkpointing mode keeps U; the LayerNorm's Û and statistics are recomputed from U in the
// backward (cheap and local), and BTP's norm backward gets P back as U − g(Z_prev). Every op
// here is a front end of backend/ops.h: no BLAS, no pragma, no loop over activations.
//
// The carry. Z_l is used twice: by B_l and by layer l+1's gate. Its gradient dZ is the
// sum of dy·Bᵀ and of what layer l+1's gate sent back; the backward of layer l+1 leaves the
// latter in Scratch.carry (one [N, 4·r_a + 3·r_m] buffer, the message layout), layer l adds it
// after its bottleneck all-reduce (it is replicated: adding it before would count it tp
// times) and then overwrites the slot with its own dL/dZ_{l−1}.
//
// Sizes (docs/lax.md §4-§5): layers 1 .. L−1 add to each of their 7 projections a crossing of
// that projection's width r (r_a for q,k,v,o; r_m for gate,up,down), layer 0 none:
//   parameters  gate: identity 0 | dense r² + r | kron r1² + r2²   + norm: layernorm 2r | none 0
//   FLOPs       those the gate ops report (model/flops.h): identity 0 (an add) | dense
//               (2r² + r) + (4r² + r) | kron 2r(r1 + r2) + 2r(2r1 + 3r2) per token.
#include <math.h>
#include <stdio.h>
#include "model_internal.h"
#include "flops.h"
#include "../core/check.h"

// Does the latent Z = σ(N(U)) need a buffer of its own, or is it the bottleneck buffer itself
// (the svd base without a norm)?
static int lax_own_z(const ModelConfig *c) { return latent_silu(c) || c->lax_norm == LAX_NORM_LAYERNORM; }

static void lat_store(Model *m, const Lat *dst, const Slots *Z, int p0) {
    if (!dst) return;
    for (int j = 0; j < Z->G; j++)
        op_copy2d(m->bk, dst->z[p0 + j], (size_t)dst->ld[p0 + j], slot_at(m, Z, j), (size_t)Z->ld, (size_t)Z->N,
                      (size_t)Z->r, m->bk->dtype);
}

// ---- elementwise work over slots ---------------------------------------------------------
// The contiguous runs of a slot layout: one run of G·N·r (grouped [N, G·r]) or G runs of N·r.
static int segments(const Slots *s, size_t *off, size_t *len) {
    size_t nr = (size_t)s->N * s->r;
    int grouped = s->ld == s->G * s->r;
    for (int j = 1; j < s->G && grouped; j++) grouped = s->off[j] == s->off[0] + (size_t)j * s->r;
    if (grouped) { off[0] = s->off[0]; *len = (size_t)s->G * nr; return 1; }
    CHECK(s->ld == s->r, "slot layout with ld %d is neither grouped nor contiguous (r %d, G %d)", s->ld, s->r, s->G);
    for (int j = 0; j < s->G; j++) off[j] = s->off[j];
    *len = nr;
    return s->G;
}
static int same_layout(const Slots *a, const Slots *b) {
    if (a->G != b->G || a->ld != b->ld || a->r != b->r) return 0;
    for (int j = 0; j < a->G; j++) if (a->off[j] != b->off[j]) return 0;
    return 1;
}

// ---- the gate g(z) -----------------------------------------------------------------------
// out[N, r] (row stride ldo) += g(z)
static void gate_forward(Model *m, const LaxW *w, void *out, int ldo, const void *z, int ldz, int N, int r) {
    switch (m->cfg.lax_gate) {
    case LAX_GATE_IDENTITY: op_add2d(m->bk, out, (size_t)ldo, z, (size_t)ldz, N, r); break;
    case LAX_GATE_DENSE: op_dense_gate_forward(m->bk, out, ldo, z, ldz, w->W, w->b, N, r); break;
    default: {
        int r1, r2;
        lax_kron_factors(r, &r1, &r2);
        op_kron_gate_forward(m->bk, out, ldo, z, ldz, w->G1, w->G2, N, r1, r2);
    }
    }
}
// dz = g'(z)ᵀ dout (stored: dz's only writer), the gate's parameter gradients into dw (grad_acc)
static void gate_backward(Model *m, const LaxW *w, LaxW *dw, void *dz, int lddz, const void *dout, int lddo,
                          const void *z, int ldz, int N, int r) {
    switch (m->cfg.lax_gate) {
    case LAX_GATE_IDENTITY:
        op_copy2d(m->bk, dz, (size_t)lddz, dout, (size_t)lddo, (size_t)N, (size_t)r, m->bk->dtype);
        break;
    case LAX_GATE_DENSE:
        op_dense_gate_backward(m->bk, dz, lddz, dw->W, dw->b, dout, lddo, z, ldz, w->W, N, r, 0, grad_acc(m));
        break;
    default: {
        int r1, r2;
        lax_kron_factors(r, &r1, &r2);
        op_kron_gate_backward(m->bk, dz, lddz, dw->G1, dw->G2, dout, lddo, z, ldz, w->G1, w->G2, N, r1, r2, 0,
                              grad_acc(m));
    }
    }
}

// ---- the crossing --------------------------------------------------------------------------
static void lax_cross_add(Model *m, const Slots *U, LinearW *const *w, const Lat *prev, int p0) {
    for (int j = 0; j < U->G; j++)
        gate_forward(m, &w[j]->x, slot_at(m, U, j), U->ld, prev->z[p0 + j], prev->ld[p0 + j], U->N, U->r);
}

static void lax_latent(Model *m, const Slots *Z, const Slots *U, LinearW *const *w, int cross) {
    const ModelConfig *c = &m->cfg;
    int ln = cross && c->lax_norm == LAX_NORM_LAYERNORM, silu = latent_silu(c);
    int N = U->N, r = U->r;
    size_t off[3], len; int ns;
    if (ln) {
        Scratch s; scratch_view(m, &s);
        for (int j = 0; j < U->G; j++)
            op_layernorm_forward(m->bk, slot_at(m, Z, j), Z->ld, s.lmean + (size_t)j * N, s.lrstd + (size_t)j * N,
                                 slot_at(m, U, j), U->ld, w[j]->x.gamma, w[j]->x.beta, N, r, c->norm_eps);
    } else if (Z == U) {
        CHECK(!silu, "lax_latent: Z aliases U but σ is SiLU");
        return;                                            // Z is U
    } else if (silu && same_layout(Z, U)) {
        ns = segments(U, off, &len);
        for (int i = 0; i < ns; i++) op_silu_forward(m->bk, at(m, Z->base, off[i]), at(m, U->base, off[i]), len);
        return;
    } else {
        for (int j = 0; j < U->G; j++)
            op_copy2d(m->bk, slot_at(m, Z, j), (size_t)Z->ld, slot_at(m, U, j), (size_t)U->ld, (size_t)N, (size_t)r,
                      m->bk->dtype);
    }
    if (!silu) return;
    ns = segments(Z, off, &len);                           // σ in place on N(U)
    for (int i = 0; i < ns; i++) op_silu_forward(m->bk, at(m, Z->base, off[i]), at(m, Z->base, off[i]), len);
}

static Slots lax_latent_backward(Model *m, void *dU_buf, const Slots *dZ, const Slots *U, LinearW *const *w,
                          LinearW *const *dw, int cross, const Lat *prev, const Lat *carry, int p0) {
    const ModelConfig *c = &m->cfg;
    int ln = cross && c->lax_norm == LAX_NORM_LAYERNORM, silu = latent_silu(c);
    int N = U->N, r = U->r;
    CHECK(same_layout(dZ, U), "lax_latent_backward: dZ and U laid out differently");
    Scratch s; scratch_view(m, &s);
    size_t off[3], len; int ns = segments(U, off, &len);
    Slots Uh = *U;                                         // Û = LN(U), recomputed with its statistics
    if (ln) {
        Uh = slots_like(U, s.luh);
        for (int j = 0; j < U->G; j++)
            op_layernorm_forward(m->bk, slot_at(m, &Uh, j), Uh.ld, s.lmean + (size_t)j * N, s.lrstd + (size_t)j * N,
                                 slot_at(m, U, j), U->ld, w[j]->x.gamma, w[j]->x.beta, N, r, c->norm_eps);
    }
    Slots dUh = *dZ;                                       // dÛ = dZ ⊙ σ'(Û)
    if (silu) {
        dUh = slots_like(U, ln ? s.lduh : dU_buf);      // overwritten by the SiLU backward
        for (int i = 0; i < ns; i++)
            op_silu_backward(m->bk, at(m, dUh.base, off[i]), at(m, dZ->base, off[i]), at(m, Uh.base, off[i]), len);
    }
    Slots dU = dUh;                                        // dU = LN'(dÛ) (stored), dγ, dβ
    if (ln) {
        dU = slots_like(U, dU_buf);
        for (int j = 0; j < U->G; j++)
            op_layernorm_backward(m->bk, slot_at(m, &dU, j), dU.ld, dw[j]->x.gamma, dw[j]->x.beta, slot_at(m, &dUh, j),
                                  dUh.ld, slot_at(m, U, j), U->ld, s.lmean + (size_t)j * N, s.lrstd + (size_t)j * N,
                                  w[j]->x.gamma, N, r, 0, grad_acc(m));
    }
    if (cross) {                                           // the gate: dL/dZ_prev replaces the carry
        for (int j = 0; j < U->G; j++) {
            int p = p0 + j;
            gate_backward(m, &w[j]->x, &dw[j]->x, carry->z[p], carry->ld[p], slot_at(m, &dU, j), dU.ld,
                          prev->z[p], prev->ld[p], N, r);
        }
    }
    return dU;                                             // dP = dU: U = P + terms free of P
}

static Slots lax_p_from_u(Model *m, void *P_buf, size_t n, const Slots *U, LinearW *const *w, const Lat *prev, int p0) {
    Scratch s; scratch_view(m, &s);
    Slots P = slots_like(U, P_buf);
    int N = U->N, r = U->r;
    copy_t(m, P_buf, U->base, n);
    for (int j = 0; j < U->G; j++) {
        zero_t(m, s.lg, (size_t)N * r);
        gate_forward(m, &w[j]->x, s.lg, r, prev->z[p0 + j], prev->ld[p0 + j], N, r);
        op_scale(m->bk, s.lg, -1.0f, (size_t)N * r);
        op_add2d(m->bk, slot_at(m, &P, j), (size_t)P.ld, s.lg, (size_t)r, N, r);
    }
    return P;
}

// ---- one projection under Vanilla-TP ---------------------------------------------------------
// Rank i holds A's columns S_i and B's rows S_i (rl = r/tp of them). Case (a), slice-local
// (identity gate, no norm): the latent chain stays sliced, rank i crosses its own columns, no
// collective. Case (b) (Layout.lax_gathered), docs/lax.md §6.2: two conjugate operators,
//   gather_fwd at P:   forward all-gather of the column slices x @ A_i -> P [N, r];
//                      backward: take the slice S_i of dP (no collective)
//   split_fwd at Z->B: forward: use the slice Z[:, S_i] (no collective);
//                      backward all-gather of dZ[:, S_i] = dy @ B_iᵀ -> dZ [N, r]
// and the chain P -> U -> Û -> Z, its backward and the carry run replicated on full width.
// Global layer 0 has no crossing: its backward needs only the slice S_i, no all-gather.
static void gather_fwd(Model *m, void *P, const void *slice, int rl, int gl) {
    comm_all_gather_cols(m->comm, GROUP_TP, slice, P, (size_t)m->N, (size_t)rl, (CommDtype)m->comm_dtype,
                            (CommPhase)m->fwd_phase, gl);
}
static void split_fwd_backward(Model *m, void *dZ, const void *slice, int rl, int gl) {
    comm_all_gather_cols(m->comm, GROUP_TP, slice, dZ, (size_t)m->N, (size_t)rl, (CommDtype)m->comm_dtype,
                            PHASE_BACKWARD, gl);
}

static void lax_linear_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                               const LinearW *w, int din, int dout, int p, int gl, const Lat *prev, const Lat *out) {
    const Layout *L = &m->lay;
    int N = m->N, rl = p < LX_GATE ? L->ra : L->rm, rf = lax_width(L, p), gathered = L->lax_gathered;
    int cross = gl >= 1;
    LinearW *const wv[1] = { (LinearW *)w };
    SlotView v = { .N = N, .G = 1, .r = rf, .ld = rf };
    Slots U = slots_of(la->h, &v), Zb = slots_of(la->z, &v);
    const Slots *Z = lax_own_z(&m->cfg) ? &Zb : &U;                      // svd without a norm: Z is U
    if (gathered) {
        Scratch s; scratch_view(m, &s);
        mm_forward(m, s.dz, x, w->A, N, din, rl, 0.0f);               // x @ A_i  [N, r/tp]
        gather_fwd(m, la->h, s.dz, rl, gl);                          // P [N, r]
    } else {
        mm_forward(m, la->h, x, w->A, N, din, rl, 0.0f);              // P_i = x @ A_i
    }
    if (cross) lax_cross_add(m, &U, wv, prev, p);                     // U = P + g(Z_prev)
    lax_latent(m, Z, &U, wv, cross);                                  // Z = σ(LN(U))
    lat_store(m, out, Z, p);
    // split_fwd: this rank's columns of Z against its rows of B (a partial sum: g completes it)
    const void *zi = gathered ? at(m, la->z, (size_t)L->tp_rank * rl) : la->z;
    if (add_res) op_gemm_into(m->bk, TR_N, TR_N, N, dout, rl, 1.0f, zi, rf, w->B, dout, 1.0f, res, dout, y, dout);
    else op_gemm(m->bk, TR_N, TR_N, N, dout, rl, 1.0f, zi, rf, w->B, dout, 0.0f, y, dout);   // y = (res +) zi @ B_i
}

static void lax_linear_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                         const LinearW *w, int din, int dout, int p, int gl, const Lat *prev, const Lat *carry,
                         float beta_dx) {
    const Layout *L = &m->lay;
    Backend *bk = m->bk;
    int N = m->N, rl = p < LX_GATE ? L->ra : L->rm, rf = lax_width(L, p), gathered = L->lax_gathered;
    int cross = gl >= 1;
    size_t c0 = gathered ? (size_t)L->tp_rank * rl : 0;              // S_i's first column in the full width
    LinearW *const wv[1] = { (LinearW *)w }, *const dwv[1] = { dw };
    Scratch s; scratch_view(m, &s);
    int carried = gl + 1 < m->cfg.n_layers;                           // the last layer receives no carry
    // dZ[:, S_i] = dy @ B_iᵀ (dy is replicated), dB_i (+)= Z[:, S_i]ᵀ dy
    op_gemm(bk, TR_N, TR_T, N, rl, dout, 1.0f, dy, dout, w->B, dout, 0.0f, s.dz, rl);
    op_gemm(bk, TR_T, TR_N, rl, dout, N, 1.0f, at(m, la->z, c0), rf, dy, dout, grad_beta(m), dw->B, dout);
    Slots dP;
    int ldp;
    if (gathered && cross) {                                          // full width, replicated
        split_fwd_backward(m, s.lz, s.dz, rl, gl);                    // dZ [N, r]
        if (carried) op_add2d(bk, s.lz, (size_t)rf, carry->z[p], (size_t)carry->ld[p], N, rf);
        SlotView v = { .N = N, .G = 1, .r = rf, .ld = rf };
        Slots U = slots_of(la->h, &v), dZ = slots_of(s.lz, &v);
        dP = lax_latent_backward(m, s.lp, &dZ, &U, wv, dwv, 1, prev, carry, p);
        ldp = rf;
    } else {                                                          // this rank's slice only
        if (carried) op_add2d(bk, s.dz, (size_t)rl, at(m, carry->z[p], c0), (size_t)carry->ld[p], N, rl);
        SlotView v = { .N = N, .G = 1, .r = rl, .ld = rl };
        const void *u = la->h;
        if (gathered) {                                               // layer 0 of case (b): P[:, S_i]
            op_copy2d(bk, s.lz, (size_t)rl, at(m, la->h, c0), (size_t)rf, (size_t)N, (size_t)rl, bk->dtype);
            u = s.lz;
        }
        Slots U = slots_of((void *)u, &v), dZ = slots_of(s.dz, &v);
        dP = lax_latent_backward(m, s.dh, &dZ, &U, wv, dwv, cross, prev, carry, p);
        ldp = rl;
        c0 = 0;
    }
    // dA_i (+)= xᵀ dP[:, S_i] (grad_beta), dx (+)= dP[:, S_i] A_iᵀ (completed by the caller's f all-reduce)
    const void *dPi = at(m, dP.base, dP.off[0] + c0);
    op_gemm(bk, TR_T, TR_N, din, rl, N, 1.0f, x, din, dPi, ldp, grad_beta(m), dw->A, rl);
    op_gemm(bk, TR_N, TR_T, N, din, rl, 1.0f, dPi, ldp, w->A, rl, beta_dx, dx, din);
}

// ---- parameters and layout ---------------------------------------------------------------------
// In layers ≥ 1 each projection's crossing follows its A and B (docs/lax.md §4) — the gate
// (dense W [r,r] ~ N(0, 0.02²) and b = 0, or kron G1 [r1,r1], G2 [r2,r2] ~ U(±sqrt(6/S)) for an
// S×S factor, the authors' kaiming_uniform), then the LayerNorm (gamma = 1, beta = 0). All
// replicated over TP (every rank crosses the full latent): SHARD_NONE. Decay: 2-D only.
static LaxW take_crossing(ParamWalk *wk, const char *prefix, int rank) {
    const ModelConfig *c = wk->cfg;
    LaxW x = {0};
    char name[PARAM_NAME_MAX];
    if (c->lax_gate == LAX_GATE_DENSE) {
        xsnprintf(name, sizeof name, "%s/lax_gate/W", prefix);
        x.W = walk_take(wk, name, 2, rank, rank, SHARD_NONE, 1, INIT_NORMAL, 0.02f);
        xsnprintf(name, sizeof name, "%s/lax_gate/b", prefix);
        x.b = walk_take(wk, name, 1, 1, rank, SHARD_NONE, 0, INIT_ZEROS, 0);
    } else if (c->lax_gate == LAX_GATE_KRON) {
        int r1, r2;
        lax_kron_factors(rank, &r1, &r2);
        xsnprintf(name, sizeof name, "%s/lax_gate/G1", prefix);
        x.G1 = walk_take(wk, name, 2, r1, r1, SHARD_NONE, 1, INIT_UNIFORM, (float)sqrt(6.0 / r1));
        xsnprintf(name, sizeof name, "%s/lax_gate/G2", prefix);
        x.G2 = walk_take(wk, name, 2, r2, r2, SHARD_NONE, 1, INIT_UNIFORM, (float)sqrt(6.0 / r2));
    }
    if (c->lax_norm == LAX_NORM_LAYERNORM) {
        xsnprintf(name, sizeof name, "%s/lax_norm/gamma", prefix);
        x.gamma = walk_take(wk, name, 1, 1, rank, SHARD_NONE, 0, INIT_ONES, 0);
        xsnprintf(name, sizeof name, "%s/lax_norm/beta", prefix);
        x.beta = walk_take(wk, name, 1, 1, rank, SHARD_NONE, 0, INIT_ZEROS, 0);
    }
    return x;
}
static LinearW lax_take(ParamWalk *wk, const char *prefix, int din, int dout, int r, int col_parallel, int layer) {
    (void)col_parallel;
    LinearW lw = factor_take(wk, prefix, din, dout, r);
    if (layer >= 1) lw.x = take_crossing(wk, prefix, r);
    return lw;
}
// The width of the latent chain held here (docs/lax.md §6): BTP r (replicated); Vanilla-TP
// r/tp when the crossing is slice-local (identity gate, no norm; or a single layer), else r
// (case (b): P all-gathered, Z replicated).
static void lax_layout(Layout *lay, const ModelConfig *c) {
    int megatron = lay->scheme == TP_MEGATRON;
    int sliced = (c->lax_gate == LAX_GATE_IDENTITY && c->lax_norm == LAX_NORM_NONE) || c->n_layers < 2;
    lay->lax_gathered = megatron && !sliced;
    lay->lra = megatron && sliced ? lay->ra : c->rank_attn;
    lay->lrm = megatron && sliced ? lay->rm : c->rank_mlp;
}

// ---- the Kind's hooks ----------------------------------------------------------------------------
static void lax_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                        const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, const Lat *out) {
    (void)r;   // the widths are the layout's (lax_width, ra/rm)
    lax_linear_forward(m, y, res, add_res, la, x, w, din, dout, p, gl, prev, out);
}
static void lax_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                         const LinearW *w, int din, int dout, int r, int p, int gl, const Lat *prev, Scratch *s,
                         float beta_dx) {
    (void)r;
    Lat carry = lat_message(m, s->carry);
    lax_linear_backward(m, dx, dw, dy, x, la, w, din, dout, p, gl, prev, &carry, beta_dx);
}

// BTP (docs/lax.md §6.3): after each bottleneck all-reduce P is full and replicated, and so is
// the previous layer's latent, so the crossing, the LayerNorm over r and σ run locally on every
// rank: no collective more, forward or backward. The crossing U = P + g(Z_prev) in place
// (layers ≥ 1), Z = σ(LN(U)), and Z also into `out` (the next stage's or the next layer's latents).
static void lax_bn_forward(Model *m, const Bn *b, int p0, void *Z, void *P, LinearW *const *W, int gl,
                           const Lat *prev, const Lat *out) {
    Slots U = slots_of(P, &b->v), Zs = slots_of(Z, &b->v);
    const Slots *Zp = lax_own_z(&m->cfg) ? &Zs : &U;
    if (gl >= 1) lax_cross_add(m, &U, W, prev, p0);
    lax_latent(m, Zp, &U, W, gl >= 1);
    lat_store(m, out, Zp, p0);
}
// From a kept bottleneck (CKPT_LOWRANK recompute; it holds U): Z = σ(LN(U)).
static void lax_bn_recompute(Model *m, const Bn *b, void *Z, void *U, LinearW *const *W, int gl) {
    Slots Us = slots_of(U, &b->v), Zs = slots_of(Z, &b->v);
    lax_latent(m, lax_own_z(&m->cfg) ? &Zs : &Us, &Us, W, gl >= 1);
}
// dZ += the carry first (replicated, so after the all-reduce; the last layer has none), then the
// latent's and the crossing's backward, which leaves dL/dZ_prev in the carry. Returns dP.
static void *lax_bn_backward(Model *m, const Bn *b, int p0, void *dZ, void *U, LinearW *const *W, LinearW *const *dW,
                             int gl, const Lat *prev, Scratch *s) {
    Lat carry = lat_message(m, s->carry);
    Slots dZs = slots_of(dZ, &b->v), Us = slots_of(U, &b->v);
    for (int j = 0; j < b->v.G && gl + 1 < m->cfg.n_layers; j++)
        op_add2d(m->bk, slot_at(m, &dZs, j), (size_t)b->v.ld, carry.z[p0 + j], (size_t)carry.ld[p0 + j], b->v.N, b->v.r);
    return lax_latent_backward(m, s->dpb, &dZs, &Us, W, dW, gl >= 1, prev, &carry, p0).base;
}
// The bottleneck P = RMSNorm(x) @ A that the norm backward's c-term needs: in layers ≥ 1
// U − g(Z_prev) (one subtraction: fp32 rounding only), else the kept buffer.
static const void *lax_bn_input(Model *m, const Bn *b, int p0, void *U, LinearW *const *W, int gl, const Lat *prev,
                                Scratch *s) {
    if (gl < 1) return U;
    Slots Us = slots_of(U, &b->v);
    return lax_p_from_u(m, s->lp, b->size, &Us, W, prev, p0).base;
}
// CKPT_LOWRANK under BTP: Z of layer l (local) from its kept U into dst (no collective).
static void lax_latents_recompute(Model *m, LayerActs *la, int l, const Lat *dst) {
    LayerW *w = &m->w.layers[l];
    int gl = m->lay.layer_begin + l;
    Bn b[4] = { bn_qkv(m), bn_o(m), bn_gu(m), bn_down(m) };
    void *U[4] = { la->pqkv, la->po, la->pgu, la->pd };
    int p0[4] = { LX_Q, LX_O, LX_GATE, LX_DOWN };
    LinearW *W[4][3] = { { &w->q, &w->k, &w->v }, { &w->o }, { &w->gate, &w->up }, { &w->down } };
    for (int c = 0; c < 4; c++) {
        Slots Us = slots_of(U[c], &b[c].v), Z = lat_slots(m, dst, p0[c], b[c].v.G, b[c].v.r);
        lax_latent(m, &Z, &Us, W[c], gl >= 1);
    }
}

// ---- sizes -----------------------------------------------------------------------------------------
static int64_t crossing_params(const ModelConfig *m, int64_t r) {
    int64_t g = 0;
    if (m->lax_gate == LAX_GATE_DENSE) g = r * r + r;
    else if (m->lax_gate == LAX_GATE_KRON) {
        int r1, r2;
        lax_kron_factors((int)r, &r1, &r2);
        g = (int64_t)r1 * r1 + (int64_t)r2 * r2;
    }
    return g + (m->lax_norm == LAX_NORM_LAYERNORM ? 2 * r : 0);
}
static double crossing_flops(const ModelConfig *m, int r) {
    if (m->lax_gate == LAX_GATE_DENSE) return flops_dense_gate_forward(1, r) + flops_dense_gate_backward(1, r);
    if (m->lax_gate == LAX_GATE_KRON) {
        int r1, r2;
        lax_kron_factors(r, &r1, &r2);
        return flops_kron_gate_forward(1, r1, r2) + flops_kron_gate_backward(1, r1, r2);
    }
    return 0;
}

static int64_t lax_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer) {
    return kind_factor_params(m, din, dout, r, layer) + (layer >= 1 ? crossing_params(m, r) : 0);
}
static double lax_flops(const ModelConfig *m, int din, int dout, int r, int layer) {
    return kind_factor_flops(m, din, dout, r, layer) + (layer >= 1 ? crossing_flops(m, r) : 0);
}
static void lax_describe(const ModelConfig *m, char *buf, size_t n) {
    static const char *const base[] = { "cola", "svd" }, *const gate[] = { "identity", "dense", "kron" },
                             *const norm[] = { "layernorm", "none" };
    snprintf(buf, n, "LaX base %s, gate %s, norm %s: layers 1..%d add 7 crossings of %lld + %lld parameters "
             "(attn/mlp), %.0f + %.0f FLOPs/token each", base[m->lax_base], gate[m->lax_gate], norm[m->lax_norm],
             m->n_layers - 1, (long long)crossing_params(m, m->rank_attn), (long long)crossing_params(m, m->rank_mlp),
             crossing_flops(m, m->rank_attn), crossing_flops(m, m->rank_mlp));
}

const Kind kind_lax = {
    .name = "lax", .lowrank = 1, .latent = 1,
    .take = lax_take, .layout = lax_layout, .own_z = lax_own_z,
    .forward = lax_forward, .backward = lax_backward,
    .bn_forward = lax_bn_forward, .bn_recompute = lax_bn_recompute, .bn_backward = lax_bn_backward,
    .bn_input = lax_bn_input, .latents_recompute = lax_latents_recompute,
    .linear_params = lax_params, .linear_flops = lax_flops, .describe = lax_describe,
};
