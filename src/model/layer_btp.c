// layer_btp.c — one transformer block under bottleneck-aware tensor parallelism (BTP,
// paper notes §3-§6; docs/boost.md). A TP chunk runs from an up factor B to the next down
// factor A; both are split along their large dimension, never along r:
//
//   residual x, norm gains      column slice [N, d/tp] on every rank, all through the model
//   A (q,k,v,o,gate,up,down)    row-parallel: local input rows, full r outputs = partial sums
//   B (q,k,v,o,gate,up,down)    column-parallel: local heads / local d_ff / residual slice
//   attention core, g*u         local heads (H/tp, Hkv/tp) and local d_ff/tp
//
// so the only collective of a chunk is the all-reduce at its narrow bottleneck:
//
//   (1) P_qkv = AR(RMSNorm(x) @ A_qkv)   [N,3r]   (grouped; else three [N,r])
//   (2) P_o   = AR(attn(q,k,v) @ A_o)    [N,r]
//   (3) P_gu  = AR(RMSNorm(x_mid) @ A_gu)[N,2r]   (grouped; else two [N,r])
//   (4) P_d   = AR((g*u) @ A_down)       [N,r]
//
// and in backward one all-reduce of the gradient at the input of each group of B's
// (dZ_d, dZ_gu, dZ_o, dZ_qkv: the same shapes); the A's backward needs no collective.
//
// RMSNorm of a sharded residual. The statistic Σx² needs the full row:
//   boost.online_rmsnorm = 0 ("SyncRMSNorm"): one extra all-reduce of the per-token local
//     Σx² [N] (fp32, like the payload) before each of the two norms, then normalise locally.
//   boost.online_rmsnorm = 1 (paper §4, 7 steps): S_i local, ŷ_i = x_i/rms_i ⊙ γ_i with the
//     local rms_i, H_i = (ŷ_i @ A_i)·rms_i, ONE all-reduce of [H_i | S_i] (the statistic is
//     packed after the payload, see btp_bn), Y = H / sqrt(S/d + eps) == RMSNorm(x) @ A.
// Backward of either (no collective): with a = x·rstd·γ (rstd of the full row) and P = a@A
// the all-reduced bottleneck input, da_i = dP @ A_i^T is local and
//   dx_i = rstd·(γ_i ⊙ da_i − x_i·rstd·c),   c = (1/d)·Σ_{full row} da ⊙ a = (1/d)·Σ_k dP_k·P_k
// where the second sum runs over the G·r bottleneck columns, which are replicated after
// the backward all-reduce of dZ. So the full-row term costs nothing extra.
//
// The forward's collectives use mdl->fwd_phase (PHASE_FORWARD, or PHASE_RECOMPUTE while
// model.c replays the block for boost.full_recompute). Under CKPT_LOWRANK the backward
// first recomputes each chunk's interior from the kept bottleneck buffers: σ(P), the B
// products, RoPE, the attention core, g*u — none of which communicates.
#include <cblas.h>
#include <math.h>
#include "model_internal.h"
#include "../ops/ops.h"

// ---- small GEMM helpers with leading dimensions (row-major) ------------------------
// C[M,Nc] = beta·C + A[M,K] @ B[K,Nc]
static void gemm_nn(float *C, int ldc, const float *A, int lda, const float *B, int ldb,
                    int M, int Nc, int K, float beta) {
    if (ops_dry_run) return;   // accounting mode: no math
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, Nc, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
// C[M,Nc] = beta·C + A[M,K] @ B[Nc,K]^T
static void gemm_nt(float *C, int ldc, const float *A, int lda, const float *B, int ldb,
                    int M, int Nc, int K, float beta) {
    if (ops_dry_run) return;   // accounting mode: no math
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, Nc, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
// C[M,Nc] = beta·C + A[K,M]^T @ B[K,Nc]
static void gemm_tn(float *C, int ldc, const float *A, int lda, const float *B, int ldb,
                    int M, int Nc, int K, float beta) {
    if (ops_dry_run) return;   // accounting mode: no math
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, Nc, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

// rstd of the full row from the all-reduced Σx² (one formula, forward and backward).
static inline float rstd_full(float S, int d, float eps) { return (float)(1.0 / sqrt((double)S / d + (double)eps)); }
// rms of the local slice (online RMSNorm steps 2 and 5).
static inline float rms_local(float S, int dr, float eps) { return (float)sqrt((double)S / dr + (double)eps); }

// ---- bottleneck buffers (layout: btp_bn) ---------------------------------------------
// Number of contiguous payload segments: grouped = one of G·N·r, else G of N·r.
static int bn_segments(const Bn *b, size_t *off, size_t *len) {
    if (b->grouped) { off[0] = 0; *len = (size_t)b->G * b->N * b->r; return 1; }
    for (int j = 0; j < b->G; j++) off[j] = b->off[j];
    *len = (size_t)b->N * b->r;
    return b->G;
}
// z = σ(p) on the payload (cola); svd: z aliases p, nothing to do.
static void bn_act_forward(const ModelConfig *c, const Bn *b, float *z, const float *p) {
    if (c->linear != LINEAR_COLA || z == p) return;
    size_t off[3], len; int ns = bn_segments(b, off, &len);
    for (int i = 0; i < ns; i++) silu_forward(z + off[i], p + off[i], len);
}
// dp = dz ⊙ σ'(p) on the payload (cola; dp overwritten); svd: returns dz itself.
static float *bn_act_backward(const ModelConfig *c, const Bn *b, float *dp, const float *dz, const float *p) {
    if (c->linear != LINEAR_COLA) return (float *)dz;
    size_t off[3], len; int ns = bn_segments(b, off, &len);
    for (int i = 0; i < ns; i++) {
        zero_f(dp + off[i], len);
        silu_backward(dp + off[i], dz + off[i], p + off[i], len);
    }
    return dp;
}
// Every payload row n scaled by rms_local(S[n]) (online step 5) or by rstd_full(S[n])
// (online step 7).
static void bn_scale_rows(const Bn *b, float *p, const float *S, int full, int width, float eps) {
    if (ops_dry_run) return;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < b->N; n++) {
        float sc = full ? rstd_full(S[n], width, eps) : rms_local(S[n], width, eps);
        for (int j = 0; j < b->G; j++) {
            float *row = p + b->off[j] + (size_t)n * b->ld;
            for (int k = 0; k < b->r; k++) row[k] *= sc;
        }
    }
}

// The all-reduce(s) of a bottleneck over the TP group. fwd (phase = mdl->fwd_phase):
// with_stat adds the [N] statistic to the call that carries it (grouped: the one call;
// else the slot-0 call, q resp. gate). bwd: the gradient dZ, payload only.
// Grouped: 1 call of G·N·r (+N); ungrouped: G calls of N·r (+N on the first).
static void bn_all_reduce(Model *mdl, const Bn *b, float *buf, int with_stat, int phase, int gl) {
    size_t nr = (size_t)b->N * b->r, ns = with_stat ? (size_t)b->N : 0;
    if (b->grouped) {
        comm_all_reduce(mdl->comm, GROUP_TP, buf, (size_t)b->G * nr + ns, (CommPhase)phase, gl);
        return;
    }
    for (int j = 0; j < b->G; j++)
        comm_all_reduce(mdl->comm, GROUP_TP, buf + b->off[j], nr + (j == 0 ? ns : 0), (CommPhase)phase, gl);
}

// Concatenate the local A's [dr, r] of a group into acat [dr, G·r] (grouping).
static void concat_A(float *acat, LinearW *const *A, int G, int dr, int r) {
    if (ops_dry_run) return;
    for (int i = 0; i < dr; i++)
        for (int j = 0; j < G; j++)
            memcpy(acat + (size_t)i * G * r + (size_t)j * r, A[j]->A + (size_t)i * r, (size_t)r * sizeof(float));
}

// ---- chunk boundary into a bottleneck: P = RMSNorm(x_full) @ [A_1|..|A_G] --------------
// x [N,dr] this rank's residual slice, gamma [dr]. Writes P's payload (all-reduced, full)
// and its statistic slot (the full-row Σx²). Collectives: sync: AR(S) [N] then the
// payload AR(s); online: the payload AR(s) carrying S.
static void norm_down_forward(Model *mdl, const Bn *b, float *P, const float *x, const float *gamma,
                              LinearW *const *A, int gl, Scratch *s) {
    const ModelConfig *c = &mdl->cfg;
    int N = mdl->N, dr = mdl->lay.d_res, d = c->d_model, G = b->G, r = b->r;
    int online = mdl->boost.online_rmsnorm;
    float eps = c->norm_eps, *S = P + b->stat, *xn = s->xn;
    int rows = ops_dry_run ? 0 : N;   // accounting mode: the collectives only, no math
    // step 1: the local sum of squares (double accumulation, stored fp32)
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < rows; n++) {
        const float *xr = x + (size_t)n * dr;
        double ss = 0.0;
        for (int j = 0; j < dr; j++) ss += (double)xr[j] * xr[j];
        S[n] = (float)ss;
    }
    if (!online)   // SyncRMSNorm: the full row's Σx², a separate [N] all-reduce
        comm_all_reduce(mdl->comm, GROUP_TP, S, (size_t)N, (CommPhase)mdl->fwd_phase, gl);
    // sync: a = x·rstd(full)·γ;  online steps 2-3: ŷ = x / rms_local · γ
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < rows; n++) {
        float sc = online ? 1.0f / rms_local(S[n], dr, eps) : rstd_full(S[n], d, eps);
        const float *xr = x + (size_t)n * dr;
        float *yr = xn + (size_t)n * dr;
        for (int j = 0; j < dr; j++) yr[j] = xr[j] * sc * gamma[j];
    }
    // step 4: the row-parallel down factor(s): partial sums over this rank's rows
    if (b->grouped && G > 1) {
        concat_A(s->acat, A, G, dr, r);
        gemm_nn(P, b->ld, xn, dr, s->acat, G * r, N, G * r, dr, 0.0f);
    } else {
        for (int j = 0; j < G; j++) gemm_nn(P + b->off[j], b->ld, xn, dr, A[j]->A, r, N, r, dr, 0.0f);
    }
    if (online) bn_scale_rows(b, P, S, 0, dr, eps);   // step 5: undo the local scale
    // step 6 (online) / the bottleneck all-reduce (sync)
    bn_all_reduce(mdl, b, P, online, mdl->fwd_phase, gl);
    if (online) bn_scale_rows(b, P, S, 1, d, eps);    // step 7: Y = H / rms(full row)
}

// Backward of norm_down_forward given dP (the full gradient wrt P, replicated): dA_j +=,
// dgamma +=, dx += (this rank's slice). No collective (see the header).
static void norm_down_backward(Model *mdl, const Bn *b, const float *P, const float *dP,
                               const float *x, const float *gamma, LinearW *const *A,
                               LinearW *const *dA, float *dgamma, float *dx, Scratch *s) {
    const ModelConfig *c = &mdl->cfg;
    int N = mdl->N, dr = mdl->lay.d_res, d = c->d_model, G = b->G, r = b->r;
    float eps = c->norm_eps, *xn = s->xn, *da = s->da;
    const float *S = P + b->stat;
    if (ops_dry_run) return;   // accounting mode: no math (and no collective here)
    // the forward's normed input a = x·rstd·γ, recomputed elementwise
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float rs = rstd_full(S[n], d, eps);
        const float *xr = x + (size_t)n * dr;
        float *yr = xn + (size_t)n * dr;
        for (int j = 0; j < dr; j++) yr[j] = xr[j] * rs * gamma[j];
    }
    // da = dP @ A^T, dA += a^T dP
    if (b->grouped && G > 1) {
        concat_A(s->acat, A, G, dr, r);
        gemm_tn(s->dacat, G * r, xn, dr, dP, b->ld, dr, G * r, N, 0.0f);
        for (int i = 0; i < dr; i++)
            for (int j = 0; j < G; j++) {
                float *dst = dA[j]->A + (size_t)i * r;
                const float *src = s->dacat + (size_t)i * G * r + (size_t)j * r;
                for (int k = 0; k < r; k++) dst[k] += src[k];
            }
        gemm_nt(da, dr, dP, b->ld, s->acat, G * r, N, dr, G * r, 0.0f);
    } else {
        for (int j = 0; j < G; j++) {
            gemm_tn(dA[j]->A, r, xn, dr, dP + b->off[j], b->ld, dr, r, N, 1.0f);
            gemm_nt(da, dr, dP + b->off[j], b->ld, A[j]->A, r, N, dr, r, j ? 1.0f : 0.0f);
        }
    }
    // dx += rstd·(γ⊙da − x·rstd·c), c = Σ_k dP_k P_k / d over the replicated bottleneck
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        double dot = 0.0;
        for (int j = 0; j < G; j++) {
            const float *pr = P + b->off[j] + (size_t)n * b->ld, *gr = dP + b->off[j] + (size_t)n * b->ld;
            for (int k = 0; k < r; k++) dot += (double)gr[k] * pr[k];
        }
        float rs = rstd_full(S[n], d, eps), cc = (float)(dot / d);
        const float *xr = x + (size_t)n * dr, *dar = da + (size_t)n * dr;
        float *dxr = dx + (size_t)n * dr;
        for (int j = 0; j < dr; j++) dxr[j] += rs * (gamma[j] * dar[j] - xr[j] * rs * cc);
    }
    // dγ += Σ_n da ⊙ x·rstd (column blocks, rows in order: deterministic for any threads)
    enum { CB = 64 };
    int nblk = (dr + CB - 1) / CB;
    #pragma omp parallel for schedule(static)
    for (int bk = 0; bk < nblk; bk++) {
        int j0 = bk * CB, j1 = j0 + CB < dr ? j0 + CB : dr;
        double acc[CB] = {0};
        for (int n = 0; n < N; n++) {
            float rs = rstd_full(S[n], d, eps);
            const float *xr = x + (size_t)n * dr, *dar = da + (size_t)n * dr;
            for (int j = j0; j < j1; j++) acc[j - j0] += (double)(dar[j] * (xr[j] * rs));
        }
        for (int j = j0; j < j1; j++) dgamma[j] += (float)acc[j - j0];
    }
}

// ---- up factors (column-parallel B's) ---------------------------------------------------
// out_j [N, dout_j] = Z_j @ B_j for the G slots of a bottleneck (a batched product: G sgemm
// calls on the slices of one buffer).
static void up_forward(const Bn *b, const float *Z, LinearW *const *W, float *const *out, const int *dout) {
    for (int j = 0; j < b->G; j++) gemm_nn(out[j], dout[j], Z + b->off[j], b->ld, W[j]->B, dout[j], b->N, dout[j], b->r, 0.0f);
}
// dZ_j = dout_j @ B_j^T (partial over this rank's columns; the caller all-reduces) and
// dB_j += Z_j^T @ dout_j.
static void up_backward(const Bn *b, float *dZ, const float *Z, LinearW *const *W, LinearW *const *dW,
                        float *const *dout, const int *wd) {
    for (int j = 0; j < b->G; j++) {
        gemm_nt(dZ + b->off[j], b->ld, dout[j], wd[j], W[j]->B, wd[j], b->N, b->r, wd[j], 0.0f);
        gemm_tn(dW[j]->B, wd[j], Z + b->off[j], b->ld, dout[j], wd[j], b->r, wd[j], b->N, 1.0f);
    }
}

// ---- chunk interiors (forward, and the recompute of CKPT_LOWRANK) ----------------------
// Chunk 1 (from P_qkv): σ, B_q|B_k|B_v on the local heads, RoPE, causal attention -> y.
static void attn_chunk(Model *mdl, LayerActs *la, LayerW *w) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    int B = mdl->B, T = mdl->T, hd = c->d_model / c->n_heads;
    Bn b = bn_qkv(mdl);
    bn_act_forward(c, &b, la->zqkv, la->pqkv);
    LinearW *W[3] = { &w->q, &w->k, &w->v };
    float *out[3] = { la->q, la->k, la->v };
    int dout[3] = { L->dq, L->dkv, L->dkv };
    up_forward(&b, la->zqkv, W, out, dout);
    rope_forward(la->q, B, T, L->H, hd, c->rope_theta);
    rope_forward(la->k, B, T, L->Hkv, hd, c->rope_theta);
    attention_forward(la->y, la->att, la->q, la->k, la->v, B, T, L->H, L->Hkv, hd);
}
// Chunk 3 (from P_gu): σ, B_gate|B_up over the local d_ff, g*u.
static void mlp_chunk(Model *mdl, LayerActs *la, LayerW *w) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    Bn b = bn_gu(mdl);
    bn_act_forward(c, &b, la->zgu, la->pgu);
    LinearW *W[2] = { &w->gate, &w->up };
    float *out[2] = { la->g, la->u };
    int dout[2] = { L->dff, L->dff };
    up_forward(&b, la->zgu, W, out, dout);
    swiglu_forward(la->gu, la->g, la->u, (size_t)mdl->N * L->dff, gate_silu(c));
}

void btp_layer_forward(Model *mdl, LayerActs *la, int l, float *x_out) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    LayerW *w = &mdl->w.layers[l];
    int gl = L->layer_begin + l;                  // global layer index (accounting)
    int N = mdl->N, dr = L->d_res, ph = mdl->fwd_phase;
    Scratch s; scratch_view(mdl, &s);
    Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
    size_t Nr = (size_t)N * dr;

    // ---- attention ------------------------------------------------------------------
    LinearW *Aqkv[3] = { &w->q, &w->k, &w->v };
    norm_down_forward(mdl, &bq, la->pqkv, la->x, w->input_norm, Aqkv, gl, &s);  // (1) AR [N,3r] (+S)
    attn_chunk(mdl, la, w);
    matmul_forward(la->po, la->y, w->o.A, N, L->dq, L->ra, 0);      // A_o row-parallel (local heads)
    bn_all_reduce(mdl, &bo, la->po, 0, ph, gl);                     // (2) AR [N,r]
    bn_act_forward(c, &bo, la->zo, la->po);
    copy_f(la->x_mid, la->x, Nr);
    matmul_forward(la->x_mid, la->zo, w->o.B, N, L->ra, dr, 1);     // x_mid = x + σ(P_o) @ B_o (slice)

    // ---- MLP ------------------------------------------------------------------------
    LinearW *Agu[2] = { &w->gate, &w->up };
    norm_down_forward(mdl, &bg, la->pgu, la->x_mid, w->post_attn_norm, Agu, gl, &s); // (3) AR [N,2r] (+S)
    mlp_chunk(mdl, la, w);
    matmul_forward(la->pd, la->gu, w->down.A, N, L->dff, L->rm, 0); // A_down row-parallel (local d_ff)
    bn_all_reduce(mdl, &bd, la->pd, 0, ph, gl);                     // (4) AR [N,r]
    bn_act_forward(c, &bd, la->zd, la->pd);
    copy_f(x_out, la->x_mid, Nr);
    matmul_forward(x_out, la->zd, w->down.B, N, L->rm, dr, 1);      // x_out = x_mid + σ(P_d) @ B_down
}

// On entry s->dx = d(x_out) [N,d_res]; on exit s->dx = d(x).
void btp_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    LayerW *w = &mdl->w.layers[l], *dw = &mdl->dw.layers[l];
    int gl = L->layer_begin + l;
    int B = mdl->B, T = mdl->T, N = mdl->N, dr = L->d_res, hd = c->d_model / c->n_heads;
    int recompute = mdl->ckpt == CKPT_LOWRANK;
    Bn bq = bn_qkv(mdl), bo = bn_o(mdl), bg = bn_gu(mdl), bd = bn_down(mdl);
    size_t Nff = (size_t)N * L->dff;
    float *dP;

    // ---- MLP: s->dx is d(x_out), and d(x_mid) before the norm path is added -----------
    if (recompute) {                              // chunks 3 and 4 from P_gu, P_d
        bn_act_forward(c, &bd, la->zd, la->pd);
        mlp_chunk(mdl, la, w);
    }
    {   // B_down: dZ_d = d(x_out) @ B_down^T, partial over this rank's residual columns
        LinearW *W[1] = { &w->down }, *dW[1] = { &dw->down };
        float *dout[1] = { s->dx }; int wd[1] = { dr };
        up_backward(&bd, s->dzb, la->zd, W, dW, dout, wd);
    }
    bn_all_reduce(mdl, &bd, s->dzb, 0, PHASE_BACKWARD, gl);        // (4') AR dZ_d [N,r]
    dP = bn_act_backward(c, &bd, s->dpb, s->dzb, la->pd);
    zero_f(s->dgu, Nff);
    matmul_backward(s->dgu, dw->down.A, dP, la->gu, w->down.A, N, L->dff, L->rm);  // A_down: local
    zero_f(s->dg, Nff);
    zero_f(s->du, Nff);
    swiglu_backward(s->dg, s->du, s->dgu, la->g, la->u, Nff, gate_silu(c));
    {
        LinearW *W[2] = { &w->gate, &w->up }, *dW[2] = { &dw->gate, &dw->up };
        float *dout[2] = { s->dg, s->du }; int wd[2] = { L->dff, L->dff };
        up_backward(&bg, s->dzb, la->zgu, W, dW, dout, wd);
    }
    bn_all_reduce(mdl, &bg, s->dzb, 0, PHASE_BACKWARD, gl);        // (3') AR dZ_gu [N,2r] or 2×[N,r]
    dP = bn_act_backward(c, &bg, s->dpb, s->dzb, la->pgu);
    {
        LinearW *A[2] = { &w->gate, &w->up }, *dA[2] = { &dw->gate, &dw->up };
        norm_down_backward(mdl, &bg, la->pgu, dP, la->x_mid, w->post_attn_norm, A, dA,
                           dw->post_attn_norm, s->dx, s);          // s->dx = d(x_mid)
    }

    // ---- attention ------------------------------------------------------------------
    if (recompute) {                              // chunks 2 and 1 from P_o, P_qkv
        bn_act_forward(c, &bo, la->zo, la->po);
        attn_chunk(mdl, la, w);
    }
    {
        LinearW *W[1] = { &w->o }, *dW[1] = { &dw->o };
        float *dout[1] = { s->dx }; int wd[1] = { dr };
        up_backward(&bo, s->dzb, la->zo, W, dW, dout, wd);
    }
    bn_all_reduce(mdl, &bo, s->dzb, 0, PHASE_BACKWARD, gl);        // (2') AR dZ_o [N,r]
    dP = bn_act_backward(c, &bo, s->dpb, s->dzb, la->po);
    zero_f(s->dy, (size_t)N * L->dq);
    matmul_backward(s->dy, dw->o.A, dP, la->y, w->o.A, N, L->dq, L->ra);  // A_o: local
    zero_f(s->dq, (size_t)N * L->dq);
    zero_f(s->dk, (size_t)N * L->dkv);
    zero_f(s->dv, (size_t)N * L->dkv);
    attention_backward(s->dq, s->dk, s->dv, s->dy, la->q, la->k, la->v, la->att, B, T, L->H, L->Hkv, hd);
    rope_backward(s->dq, B, T, L->H, hd, c->rope_theta);
    rope_backward(s->dk, B, T, L->Hkv, hd, c->rope_theta);
    {
        LinearW *W[3] = { &w->q, &w->k, &w->v }, *dW[3] = { &dw->q, &dw->k, &dw->v };
        float *dout[3] = { s->dq, s->dk, s->dv }; int wd[3] = { L->dq, L->dkv, L->dkv };
        up_backward(&bq, s->dzb, la->zqkv, W, dW, dout, wd);
    }
    bn_all_reduce(mdl, &bq, s->dzb, 0, PHASE_BACKWARD, gl);        // (1') AR dZ_qkv [N,3r] or 3×[N,r]
    dP = bn_act_backward(c, &bq, s->dpb, s->dzb, la->pqkv);
    {
        LinearW *A[3] = { &w->q, &w->k, &w->v }, *dA[3] = { &dw->q, &dw->k, &dw->v };
        norm_down_backward(mdl, &bq, la->pqkv, dP, la->x, w->input_norm, A, dA,
                           dw->input_norm, s->dx, s);              // s->dx = d(x)
    }
}
