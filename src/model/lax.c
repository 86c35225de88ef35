// lax.c — the LaX latent crossing (docs/lax.md), shared by both tensor-parallel drivers:
// one projection of layer l, rank r, input x:
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
#include "model_internal.h"
#include "../core/check.h"

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

void lat_store(Model *m, const Lat *dst, const Slots *Z, int p0) {
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
static void zero_slots(Model *m, const Slots *s) {
    size_t off[3], len; int n = segments(s, off, &len);
    for (int i = 0; i < n; i++) zero_t(m, at(m, s->base, off[i]), len);
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
// dz += g'(z)ᵀ dout, the gate's parameter gradients into dw
static void gate_backward(Model *m, const LaxW *w, LaxW *dw, void *dz, int lddz, const void *dout, int lddo,
                          const void *z, int ldz, int N, int r) {
    switch (m->cfg.lax_gate) {
    case LAX_GATE_IDENTITY: op_add2d(m->bk, dz, (size_t)lddz, dout, (size_t)lddo, N, r); break;
    case LAX_GATE_DENSE: op_dense_gate_backward(m->bk, dz, lddz, dw->W, dw->b, dout, lddo, z, ldz, w->W, N, r); break;
    default: {
        int r1, r2;
        lax_kron_factors(r, &r1, &r2);
        op_kron_gate_backward(m->bk, dz, lddz, dw->G1, dw->G2, dout, lddo, z, ldz, w->G1, w->G2, N, r1, r2);
    }
    }
}

// ---- the crossing --------------------------------------------------------------------------
void lax_cross_add(Model *m, const Slots *U, LinearW *const *w, const Lat *prev, int p0) {
    for (int j = 0; j < U->G; j++)
        gate_forward(m, &w[j]->x, slot_at(m, U, j), U->ld, prev->z[p0 + j], prev->ld[p0 + j], U->N, U->r);
}

void lax_latent(Model *m, const Slots *Z, const Slots *U, LinearW *const *w, int cross) {
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

Slots lax_latent_backward(Model *m, void *dU_buf, const Slots *dZ, const Slots *U, LinearW *const *w,
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
    Slots dU = dUh;                                        // dU = LN'(dÛ), dγ, dβ
    if (ln) {
        dU = slots_like(U, dU_buf);
        zero_slots(m, &dU);
        for (int j = 0; j < U->G; j++)
            op_layernorm_backward(m->bk, slot_at(m, &dU, j), dU.ld, dw[j]->x.gamma, dw[j]->x.beta, slot_at(m, &dUh, j),
                                  dUh.ld, slot_at(m, U, j), U->ld, s.lmean + (size_t)j * N, s.lrstd + (size_t)j * N,
                                  w[j]->x.gamma, N, r);
    }
    if (cross) {                                           // the gate: dL/dZ_prev replaces the carry
        for (int j = 0; j < U->G; j++) {
            int p = p0 + j;
            zero_t(m, carry->z[p], (size_t)N * carry->ld[p]);
            gate_backward(m, &w[j]->x, &dw[j]->x, carry->z[p], carry->ld[p], slot_at(m, &dU, j), dU.ld,
                          prev->z[p], prev->ld[p], N, r);
        }
    }
    return dU;                                             // dP = dU: U = P + terms free of P
}

Slots lax_p_from_u(Model *m, void *P_buf, size_t n, const Slots *U, LinearW *const *w, const Lat *prev, int p0) {
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

void lax_linear_forward(Model *m, void *y, LowRankActs *la, const void *x, const LinearW *w, int din, int dout,
                        int p, int gl, const Lat *prev, const Lat *out) {
    const Layout *L = &m->lay;
    int N = m->N, rl = p < LX_GATE ? L->ra : L->rm, rf = lax_width(L, p), gathered = L->lax_gathered;
    int cross = gl >= 1;
    LinearW *const wv[1] = { (LinearW *)w };
    SlotView v = { .N = N, .G = 1, .r = rf, .ld = rf };
    Slots U = slots_of(la->h, &v), Zb = slots_of(la->z, &v);
    const Slots *Z = z_own(&m->cfg) ? &Zb : &U;                      // svd without a norm: Z is U
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
    op_gemm(m->bk, TR_N, TR_N, N, dout, rl, 1.0f, zi, rf, w->B, dout, 0.0f, y, dout);
}

void lax_linear_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                         const LinearW *w, int din, int dout, int p, int gl, const Lat *prev, const Lat *carry,
                         float beta_dx) {
    const Layout *L = &m->lay;
    Backend *bk = m->bk;
    int N = m->N, rl = p < LX_GATE ? L->ra : L->rm, rf = lax_width(L, p), gathered = L->lax_gathered;
    int cross = gl >= 1;
    size_t c0 = gathered ? (size_t)L->tp_rank * rl : 0;              // S_i's first column in the full width
    LinearW *const wv[1] = { (LinearW *)w }, *const dwv[1] = { dw };
    Scratch s; scratch_view(m, &s);
    // dZ[:, S_i] = dy @ B_iᵀ (dy is replicated), dB_i += Z[:, S_i]ᵀ dy
    op_gemm(bk, TR_N, TR_T, N, rl, dout, 1.0f, dy, dout, w->B, dout, 0.0f, s.dz, rl);
    op_gemm(bk, TR_T, TR_N, rl, dout, N, 1.0f, at(m, la->z, c0), rf, dy, dout, 1.0f, dw->B, dout);
    Slots dP;
    int ldp;
    if (gathered && cross) {                                          // full width, replicated
        split_fwd_backward(m, s.lz, s.dz, rl, gl);                    // dZ [N, r]
        op_add2d(bk, s.lz, (size_t)rf, carry->z[p], (size_t)carry->ld[p], N, rf);
        SlotView v = { .N = N, .G = 1, .r = rf, .ld = rf };
        Slots U = slots_of(la->h, &v), dZ = slots_of(s.lz, &v);
        dP = lax_latent_backward(m, s.lp, &dZ, &U, wv, dwv, 1, prev, carry, p);
        ldp = rf;
    } else {                                                          // this rank's slice only
        op_add2d(bk, s.dz, (size_t)rl, at(m, carry->z[p], c0), (size_t)carry->ld[p], N, rl);
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
    // dA_i += xᵀ dP[:, S_i], dx (+)= dP[:, S_i] A_iᵀ (completed by the caller's f all-reduce)
    const void *dPi = at(m, dP.base, dP.off[0] + c0);
    op_gemm(bk, TR_T, TR_N, din, rl, N, 1.0f, x, din, dPi, ldp, 1.0f, dw->A, rl);
    op_gemm(bk, TR_N, TR_T, N, din, rl, 1.0f, dPi, ldp, w->A, rl, beta_dx, dx, din);
}
