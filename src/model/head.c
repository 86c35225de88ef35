// head.c — the ends of the model: the vocabulary-parallel embedding (first stage) and the
// final norm, LM head and cross-entropy (last stage), with Megatron's collectives in plain
// sight. Under BTP with tp > 1 the residual stream is a d/tp column slice: the embedding's
// full [N,d] output is cut to this rank's columns, and the last block's slices are
// all-gathered before the (replicated) final norm. Under sequence parallelism (Megatron
// scheme, Layout.sp) the residual holds this rank's N_res tokens: the embedding's partial
// lookup is reduce-scattered to them (in place of the all-reduce), the final norm runs on them,
// and its output is all-gathered before the column-parallel head (again in the head's
// backward, whose input gradient is reduce-scattered), as in Megatron-LM.
#include "drivers.h"
#include "../core/check.h"

static int btp_sharded(const Layout *L) { return L->scheme == TP_BTP && L->tp > 1; }

// Embedding (vocab-parallel over TP): out[N,d] = E[tokens]. Each rank looks up the rows it
// holds (zeros elsewhere) and the TP all-reduce assembles the full vectors.
static void embed_full(Model *mdl, void *out, const int32_t *tokens) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model;
    op_embedding_forward(mdl->bk, out, tokens, mdl->w.embed, N, d, L->v0, L->V);
    tp_all_reduce(mdl, out, (size_t)N * d, PHASE_FORWARD, -1);
}

// x0[N,d_res] = the embedding of tokens[N] (this rank's columns under BTP, its tokens under
// sequence parallelism).
void embed_forward(Model *mdl, void *x0, const int32_t *tokens) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model, dr = L->d_res;
    bk_label(mdl->bk, PHASE_FORWARD, -1);
    if (seq_residual(L)) {   // the partial lookup of every token, reduce-scattered to this rank's tokens
        Scratch s; scratch_view(mdl, &s);
        op_embedding_forward(mdl->bk, s.seq_full, tokens, mdl->w.embed, N, d, L->v0, L->V);
        tp_seq_scatter(mdl, x0, s.seq_full, (size_t)d, PHASE_FORWARD, -1);
        return;
    }
    if (!btp_sharded(L)) { embed_full(mdl, x0, tokens); return; }
    Scratch s; scratch_view(mdl, &s);
    embed_full(mdl, s.dfull, tokens);                                    // [N,d]
    op_copy2d(mdl->bk, x0, (size_t)dr, at(mdl, s.dfull, (size_t)L->tp_rank * dr), (size_t)d,
              (size_t)N, (size_t)dr, mdl->bk->dtype);
}

// dE[local rows] (+)= the gradient of the embedding output: the embedding's own gradient is
// stored (grad_acc); a tied one adds to what the head's GEMM stored before it (the same stage:
// params.c refuses tied embeddings with pp > 1). Under BTP the slices are all-gathered first;
// under sequence parallelism the tokens' gradients are all-gathered (the reduce-scatter's
// backward); otherwise dx0 is replicated on the TP ranks: no collective.
void embed_backward(Model *mdl, void *dx0, const int32_t *tokens) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model, dr = L->d_res;
    bk_label(mdl->bk, PHASE_BACKWARD, -1);
    const void *dfull = dx0;
    if (seq_residual(L)) {
        Scratch s; scratch_view(mdl, &s);
        tp_seq_gather(mdl, s.seq_full, dx0, (size_t)d, PHASE_BACKWARD, -1);
        dfull = s.seq_full;
    } else if (btp_sharded(L)) {
        Scratch s; scratch_view(mdl, &s);
        comm_all_gather_cols(mdl->comm, GROUP_TP, dx0, s.dfull, (size_t)N, (size_t)dr,
                                (CommDtype)mdl->comm_dtype, PHASE_BACKWARD, -1);
        dfull = s.dfull;
    }
    // model.h embed_live: a storing backward zeroes only the rows live before (the hint), or
    // every row while they are not known; then the rows of its tokens are the live ones, and
    // each accumulating backward adds its own
    unsigned char *live = mdl->embed_live;
    op_embedding_backward(mdl->bk, mdl->dw.embed, dfull, tokens, N, d, L->v0, L->V,
                          mdl->cfg.tie_embeddings ? 1 : grad_acc(mdl), mdl->embed_live_ok ? live : NULL);
    if (!live) return;
    if (!grad_acc(mdl)) { memset(live, 0, (size_t)L->V); mdl->embed_live_ok = 1; }
    for (int i = 0; i < N; i++)
        if (tokens[i] >= L->v0 && tokens[i] < L->v0 + L->V) live[tokens[i] - L->v0] = 1;
}

// logits_i = xf @ H_i [N, V/tp] with H = lm_head [d,V] (column block) or E^T (tied: E's
// row block); xf [N,d] the final norm's output of every token.
static void head_logits(Model *mdl, Acts *A, const void *xf) {
    const Layout *L = &mdl->lay;
    int N = mdl->N, d = mdl->cfg.d_model;
    // by the configuration, never by the pointer: the dry back end allocates nothing, so a NULL
    // test would take the tied path there (tests/test_flops.c dry_trace_equals_cpu_trace)
    if (!mdl->cfg.tie_embeddings) mm_forward(mdl, A->logits, xf, mdl->w.lm_head, N, d, L->V, 0.0f);
    else op_gemm(mdl->bk, TR_N, TR_T, N, L->V, d, 1.0f, xf, d, mdl->w.embed, d, 0.0f, A->logits, L->V);
}
// The final norm's output of every token: A->xf itself, or under sequence parallelism this
// rank's tokens of it gathered into the scratch (forward, and again in the head's backward).
static const void *head_input(Model *mdl, Acts *A, Scratch *s, int phase) {
    if (!seq_residual(&mdl->lay)) return A->xf;
    tp_seq_gather(mdl, s->seq_full, A->xf, (size_t)mdl->cfg.d_model, phase, -1);
    return s->seq_full;
}

// The all-gather (BTP), final norm, head and loss of one micro-batch: loss[0] (f64 on the back
// end) = the sum of token losses, or += it when accumulating (no host synchronisation).
// Three small all-reduces when tp > 1 (Megatron): the row max, the sum of exponentials (re-based on the global max) and the target logit. The statistics stay in
// the scratch for head_loss_backward: on the last stage the 1F1B schedule runs a
// micro-batch's backward right after its forward. At tp = 1 with model_fuse_loss_grad on,
// the loss and its gradient come from one pass over the logits (xent_fused), which leaves the
// gradient in their place for head_loss_backward.
void head_loss_forward(Model *mdl, Acts *A, double *loss, int accumulate) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    Backend *bk = mdl->bk;
    int N = mdl->N, d = c->d_model;
    bk_label(bk, PHASE_FORWARD, -1);
    if (btp_sharded(L))   // the hidden slices -> [N,d] for the replicated final norm
        comm_all_gather_cols(mdl->comm, GROUP_TP, A->x_final, A->x_full, (size_t)N, (size_t)L->d_res,
                                (CommDtype)mdl->comm_dtype, PHASE_FORWARD, -1);
    op_rmsnorm_forward(bk, A->xf, A->rstdf, A->x_full, mdl->w.final_norm, mdl->N_res, d, c->norm_eps);
    Scratch s; scratch_view(mdl, &s);
    head_logits(mdl, A, head_input(mdl, A, &s, PHASE_FORWARD));
    A->dlogits_scale = 0;
    if (L->tp == 1 && mdl->fuse_loss_scale > 0) {
        op_xent_fused(bk, A->logits, s.lmax, s.sumexp, s.tlogit, A->logits, A->targets, N, L->V, L->v0,
                      mdl->fuse_loss_scale);
        A->dlogits_scale = mdl->fuse_loss_scale;
        op_xent_loss(bk, loss, A->losses, s.sumexp, s.lmax, s.tlogit, N, accumulate);
        return;
    }
    op_xent_forward(bk, s.lmax, s.sumexp, s.tlogit, A->logits, A->targets, N, L->V, L->v0);
    const float *gmax = s.lmax;
    if (L->tp > 1) {
        op_copy(bk, s.gmax, s.lmax, (size_t)N, DT_F32);
        comm_all_reduce(mdl->comm, GROUP_TP, s.gmax, (size_t)N, DTYPE_F32, OP_MAX, PHASE_FORWARD, -1);
        op_xent_rescale(bk, s.sumexp, s.lmax, s.gmax, N);
        comm_all_reduce(mdl->comm, GROUP_TP, s.sumexp, (size_t)N, DTYPE_F64, OP_SUM, PHASE_FORWARD, -1);
        comm_all_reduce(mdl->comm, GROUP_TP, s.tlogit, (size_t)N, DTYPE_F64, OP_SUM, PHASE_FORWARD, -1);
        gmax = s.gmax;
    }
    op_xent_loss(bk, loss, A->losses, s.sumexp, gmax, s.tlogit, N, accumulate);
}

// The gradient of loss_scale · Σ token losses, from the logits (in place) back through the
// head and the final norm into s->dx [N,d_res]. The head is column-parallel: its input
// gradient is a partial sum over the vocab shards, completed by the f-operator's backward
// all-reduce.
void head_loss_backward(Model *mdl, Acts *A, float loss_scale, Scratch *s) {
    const ModelConfig *c = &mdl->cfg;
    const Layout *L = &mdl->lay;
    Backend *bk = mdl->bk;
    int N = mdl->N, d = c->d_model, dr = L->d_res;
    bk_label(bk, PHASE_BACKWARD, -1);
    if (A->dlogits_scale > 0) {   // the fused forward wrote the gradient already
        CHECK(A->dlogits_scale == loss_scale, "head_loss_backward: the forward fused the loss gradient at loss_scale "
              "%g, the backward asks for %g (model_fuse_loss_grad: the same scale, or 0 before the forward)",
              (double)A->dlogits_scale, (double)loss_scale);
        A->dlogits_scale = 0;
    } else {
        const float *gmax = L->tp > 1 ? s->gmax : s->lmax;
        op_xent_backward(bk, A->logits, A->logits, gmax, s->sumexp, A->targets, N, L->V, L->v0, loss_scale);
    }
    const void *xf = head_input(mdl, A, s, PHASE_BACKWARD);
    if (!c->tie_embeddings) {   // s->da's first writer: beta 0 (by the configuration, as head_logits)
        mm_backward(mdl, s->da, mdl->dw.lm_head, A->logits, xf, mdl->w.lm_head, N, d, L->V, 0.0f);
    } else {   // tied: dxf = dlogits @ E, dE (+)= dlogits^T @ xf (E's first writer; the embedding adds)
        op_gemm(bk, TR_N, TR_N, N, d, L->V, 1.0f, A->logits, L->V, mdl->w.embed, d, 0.0f, s->da, d);
        op_gemm(bk, TR_T, TR_N, L->V, d, N, 1.0f, A->logits, L->V, xf, d, grad_beta(mdl), mdl->dw.embed, d);
    }
    if (seq_residual(L)) tp_seq_scatter(mdl, s->da, s->da, (size_t)d, PHASE_BACKWARD, -1);   // this rank's tokens
    else tp_all_reduce(mdl, s->da, (size_t)N * d, PHASE_BACKWARD, -1);        // f backward
    // the final norm's dx is its first writer: stored (acc_dx 0)
    if (btp_sharded(L)) {   // d(x_full) is replicated: keep this rank's column slice
        op_rmsnorm_backward(bk, s->dfull, mdl->dw.final_norm, s->da, A->x_full, mdl->w.final_norm, A->rstdf, N, d, 0,
                            grad_acc(mdl));
        op_copy2d(bk, s->dx, (size_t)dr, at(mdl, s->dfull, (size_t)L->tp_rank * dr), (size_t)d,
                  (size_t)N, (size_t)dr, bk->dtype);
    } else {
        op_rmsnorm_backward(bk, s->dx, mdl->dw.final_norm, s->da, A->x_final, mdl->w.final_norm, A->rstdf, mdl->N_res,
                            d, 0, grad_acc(mdl));
    }
}
