// model.h — the LLaMA decoder (dense, CoLA, SVD, LaX) as a parameter table, activation
// buffers and hand-written forward/backward drivers.
//
// Memory follows llm.c: ONE allocation per tensor family — parameters, gradients,
// AdamW m, AdamW v, activations, backward scratch — described by a table built from
// the configuration. Gradients and optimizer state use the parameter table's offsets,
// so "all gradients" is one contiguous span (one norm, one memset, later one
// all-reduce), and a named tensor is found at the same offset in every family.
//
// Every parameter has a full (unsharded) shape and a name that is also its HDF5 path
// ("model/layers/3/attn/q/A"); its initial values are a pure function of
// (train.seed, name, element index in the full tensor) — see core/rng.h — so any
// later process layout starts from the same weights.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "../config/config.h"
#include "../backend/backend.h"
#include "flops.h"              // parameter and FLOP counts (model_param_count, flops_train_per_token)

#define PARAM_NAME_MAX 96

struct Comm;
struct Kind;

// INIT_NORMAL: init_std·N(0,1); INIT_UNIFORM: init_std·U(−1, 1) (init_std is the bound).
typedef enum { INIT_NORMAL = 0, INIT_ONES = 1, INIT_ZEROS = 2, INIT_UNIFORM = 3 } InitKind;

// How a tensor is split over the TP ranks: not at all, along its rows (d_in of a
// linear, the vocabulary of the embedding) or along its columns (d_out).
typedef enum { SHARD_NONE = 0, SHARD_ROWS = 1, SHARD_COLS = 2 } ShardDim;

// Tensor-parallel scheme. MEGATRON is "FullRank-TP" for dense models (column-parallel
// q,k,v,gate,up; row-parallel o,down) and the paper's "Vanilla-TP" for low-rank models
// (every A column-parallel over r, every B row-parallel over r, an all-reduce after each
// B). BTP is bottleneck-aware TP (paper notes §3). At tp = 1 all compute the same thing.
typedef enum { TP_MEGATRON = 0, TP_BTP = 1 } TPScheme;

typedef struct {
    char name[PARAM_NAME_MAX]; // HDF5-style path: model/layers/<i>/attn/q/A
    int ndim;                  // 1 (norm gains) or 2
    int64_t rows, cols;        // FULL shape; 1-D tensors have rows = 1
    ShardDim shard;            // how this rank's piece is cut from the full tensor
    int64_t local_rows, local_cols, row0, col0; // this rank's block [row0.., col0..]
    size_t offset;             // offset (floats) in every tensor family
    size_t numel;              // local_rows * local_cols
    int tp_replicated;         // identical copy on every TP rank (count once in norms)
    int decay;                 // AdamW weight decay applies (2-D matrices)
    InitKind init;
    float init_std;
} ParamSpec;

// This rank's place in the grid and the local widths of every activation. At
// tp = pp = 1 every local width is the full one.
typedef struct {
    TPScheme scheme;
    int tp, tp_rank, pp, pp_rank;
    int layer_begin, layer_end;  // layers held by this pipeline stage [begin, end)
    int first_stage, last_stage; // holds the embedding / the final norm, head and loss
    int d_res;                   // residual stream width here (d; d/tp under BTP)
    int H, Hkv;                  // attention heads computed here
    int dq, dkv;                 // width of q and of k, v here (H*hd, Hkv*hd)
    int dff;                     // width of g, u here
    int ra, rm;                  // bottleneck width here (r/tp under Vanilla-TP)
    int V, v0;                   // vocabulary rows held here [v0, v0+V)
    // LaX (docs/lax.md §6): width of the latents Z held here per projection (0 unless lax):
    // BTP r (replicated); Vanilla-TP r/tp when the crossing is slice-local (identity gate, no
    // norm; or a single layer), else r (the latent chain is gathered and replicated).
    int lra, lrm;
    int lax_gathered;            // Vanilla-TP LaX case (b): P all-gathered, Z replicated
    // Sequence parallelism in effect (boost.sequence_parallel at tp > 1; docs/parallelism.md §8):
    // the residual stream, the norms and the residual adds hold N/tp tokens here (Model.N_res),
    // all-gathered along the sequence before a column-parallel group and reduce-scattered after
    // a row-parallel linear (Megatron-LM's mappings).
    int sp;
} Layout;

typedef struct {
    ParamSpec *specs;
    int n_specs;
    size_t n_params;           // total floats (local)
} ParamTable;

// LaX crossing weights of one projection in a layer ≥ 1 (docs/lax.md §4; NULL when absent):
// dense gate W [r,r], b [r]; kron gate G1 [r1,r1], G2 [r2,r2]; LayerNorm gamma, beta [r].
typedef struct { void *W, *b, *G1, *G2, *gamma, *beta; } LaxW;

// A linear's weights inside one family: dense uses W [din,dout]; low-rank A [din,r], B [r,dout];
// LaX adds its crossing x. Pointers into a back end's buffers of its compute dtype (void: fp32
// or bf16).
typedef struct { void *W, *A, *B; LaxW x; } LinearW;

typedef struct {
    void *input_norm;          // [d]
    void *post_attn_norm;      // [d]
    LinearW q, k, v, o;        // q: d->d, k,v: d->kv_dim, o: d->d
    LinearW gate, up, down;    // gate,up: d->d_ff, down: d_ff->d
} LayerW;

typedef struct {
    void *embed;               // [V,d]
    LayerW *layers;            // [L]
    void *final_norm;          // [d]
    void *lm_head;             // [d,V]; NULL when tied (embed^T is used)
} ModelW;

// A low-rank linear's saved activations: h = x@A [N,r]; z = σ(h) [N,r] (z == h for svd).
// LaX (layer_megatron.c): h = U = x@A + g(z_prev) (x@A in layer 0; all-gathered to the full
// r in case (b)), z = σ(LN(U)), of width Layout.lra / lrm.
typedef struct { void *h, *z; } LowRankActs;

// One block's activations (compute dtype unless marked f32). Which of them a layer keeps
// depends on the checkpointing in effect (CkptMode); the rest point into the shared working
// set Model.work.
// Under sequence parallelism (Layout.sp) x, a, rstd1, x_mid, m and rstd2 hold N_res = N/tp rows.
typedef struct {
    void *x;                   // [N,d_res] block input (residual stream)
    void *a; float *rstd1;     // [N,d], [N] f32  input RMSNorm
    LowRankActs lq, lk, lv, lo;
    void *q, *k, *v;           // [N,dq], [N,dkv], [N,dkv] after RoPE (q, k)
    float *lse;                // [B,H,T] f32   attention row log-sum-exp (flash attention)
    void *y;                   // [N,dq]        attention output (pre o-projection)
    void *x_mid;               // [N,d_res]     residual after attention
    void *m; float *rstd2;     // [N,d], [N] f32  post-attention RMSNorm
    LowRankActs lg, lu, ld;
    void *g, *u;               // [N,d_ff]
    void *gu;                  // [N,d_ff]      (SiLU(g) or g) * u
    // Bottleneck-aware TP only (layer_btp.c; a, m, rstd*, l* unused there): the four
    // bottleneck buffers after their all-reduce — p pre-σ, z = σ(p) (z == p for svd) — in
    // the layout of btp_bn() (model_internal.h): q|k|v and gate|up grouped [N,G·r] or as
    // G blocks [N,r], the full-row Σx² of the norm input [N] after the q|k|v, gate|up payload.
    void *pqkv, *zqkv, *po, *zo, *pgu, *zgu, *pd, *zd;
    // BTP with sequence parallelism (Layout.sp; docs/boost.md §8): the p buffers hold this rank's
    // N/tp tokens (the layout of btp_bn for N/tp), the z buffers every token, and the norms'
    // full-row Σx² of every token is kept here [N] (the z buffer's statistic slot, or a buffer of
    // its own under CKPT_LOWRANK, where z is the working set's). NULL otherwise.
    void *stat_qkv, *stat_gu;
    // LaX (docs/lax.md §6): the p buffers hold U = P + g(Z_prev) after the crossing (P itself
    // in layer 0); z = σ(LN(U)) always has its own buffer. Under CKPT_FULL each layer also keeps
    // its incoming latents zin [N, 4·lra + 3·lrm] (the message layout of model_stage_input).
    void *zin;
} LayerActs;

typedef struct {
    int32_t *inputs, *targets; // [N] token ids (the back end's memory)
    LayerActs *layers;         // [L]
    void *x_final;             // [N,d_res] output of the last block ([N_res,d] under sequence parallelism)
    void *x_full;              // [N,d] x_final all-gathered (BTP, tp > 1; else == x_final)
    void *xf; float *rstdf;    // [N,d], [N] f32  final RMSNorm ([N_res,d], [N_res] under sequence
                               // parallelism: all-gathered before the head, again in its backward)
    void *logits;              // [N,V] (overwritten in place by dlogits in backward, or by the
                               // fused forward: model_fuse_loss_grad)
    float dlogits_scale;       // > 0: logits already hold the loss gradient at this loss_scale
    float *losses;             // [N] f32
    // LaX with pipeline stages: the latents that travel with the residual (docs/lax.md §6.6),
    // [N, 4·lra + 3·lrm] as Z_q|Z_k|Z_v|Z_o|Z_gate|Z_up|Z_down, each [N, lr] row-major, right
    // after the residual in one message: lat_in follows layers[0].x (received, kept for the
    // backward), lat_out follows x_final (sent). NULL when not lax or at the pipeline's ends.
    void *lat_in, *lat_out;
} Acts;

// Activation checkpointing in effect (docs/boost.md): CKPT_LOWRANK keeps per layer the
// bottleneck buffers p (7·N·r + 2·N statistics) and the residual slices x, x_mid, and
// recomputes each chunk's interior in backward with no collective (BTP only);
// CKPT_FULL keeps each block's input only and replays the whole block (collectives
// included, counted under PHASE_RECOMPUTE) before its backward (any scheme).
// CKPT_SELECTIVE keeps everything but the attention core's output y and its row log-sum-exp
// (boost.selective_recompute): the backward replays flash attention's forward from the kept
// q, k, v first (no collective). The scores and probabilities are never stored in any mode
// (flash attention): Korthikanti et al.'s "selective" saving is the kernel's own.
typedef enum { CKPT_NONE = 0, CKPT_LOWRANK = 1, CKPT_FULL = 2, CKPT_SELECTIVE = 3 } CkptMode;

// Parameters, gradients and activations of this rank's part of the model, in the buffers
// of one back end. The optimizer state (fp32 master weights, AdamW m and v, ZeRO-1 shards)
// is the optimizer's (train/optimizer.h).
typedef struct {
    ModelConfig cfg;
    const struct Kind *kind;   // the linear kind of cfg.linear (kind.h): what differs between kinds
    int B, T, N;               // micro-batch shape the activations are sized for
    int N_res;                 // tokens of the residual stream held here: N, or N/tp under
                               // sequence parallelism (Layout.sp; a contiguous block of the B·T)
    Layout lay;
    BoostConfig boost;         // which BOOST techniques are on (as requested)
    CkptMode ckpt;             // checkpointing in effect (boost switches after fall-backs)
    int fwd_phase;             // Phase of a block forward's collectives and ops: PHASE_FORWARD,
                               // PHASE_RECOMPUTE while CKPT_FULL replays it in backward
    LayerActs work;            // CKPT_*: the working set shared by every layer and slot
    Backend *bk;               // where the buffers live and the ops run
    int comm_dtype;            // CommDtype of the activation collectives (the compute dtype)
    struct Comm *comm;         // process groups and the accounted collectives
    ParamTable table;
    void *params, *grads;      // each [n_alloc >= n_params] of the compute dtype; one allocation per family
    int grad_acc;              // how the next backward writes the gradients: 1 adds (+=) into them;
                               // 0 (model_grads_overwrite) each one's first writer stores it
    // The embedding gradient's rows that may be nonzero: with embed_live_ok, every row r of
    // dw.embed with embed_live[r] = 0 is zero. Kept where embed_backward is the only writer of
    // dw.embed (host back ends, first stage, untied, dp = 1: no DP reduction adds other ranks'
    // rows), NULL elsewhere. Made valid by a storing backward (model_grads_overwrite) that
    // wrote every row, or by model_zero_grads — not at creation: the caller may fill the
    // gradients before the first step (a storing backward must not depend on what they held).
    // Then each backward marks its tokens' rows, a storing one after zeroing only the rows live
    // before; so a step's embedding backward, gradient norm and AdamW touch the gradient rows of
    // its tokens (at most 1024 of 32000 in a CoLA-60M step) instead of the whole [V,d]
    // (optimizer_clip, optimizer_step).
    // A caller that writes dw.embed itself after that calls model_zero_grads.
    unsigned char *embed_live;
    int embed_live_ok;
    float fuse_loss_scale;     // > 0: the last stage's forward at tp = 1 also writes the gradient
                               // of fuse_loss_scale · Σ token losses (model_fuse_loss_grad)
    size_t n_alloc;            // padded family length (n_params, or ZeRO-1 shards x dp)
    ModelW w, dw;              // views into params / grads
    Acts acts;                 // activations of micro-batch slot 0 (== slots[0])
    Acts *slots;               // [n_slots] one per micro-batch in flight (pipeline 1F1B)
    int n_slots;
    void *act_memory; size_t act_bytes;
    void *scratch; size_t scratch_bytes;    // backward working set (one layer; BTP: also
                                            // the forward's normed input and A concatenation)
    double *loss;              // last stage: [1] f64 on the back end, the token-loss sum of the
                               // forwards since model_loss_begin (NULL elsewhere)
    int loss_written;          // a forward wrote *loss since model_loss_begin (host flag)
    // Where gradients become final (model_grads_final_hook): called by the backward that
    // model_final_backward marked, once per part (model_grad_parts) as soon as it is final
    int final_backward;
    void (*grads_final)(void *ctx, int part);
    void *grads_final_ctx;
    // Weight gradients held back (layer_megatron.c, with comm->overlap): while dw_defer is set,
    // mm_backward queues its weight-gradient GEMM here instead of running it; they run when the
    // driver has started the collective of the input gradient they do not feed (Megatron-LM's
    // overlap of a column-parallel linear's input-gradient all-reduce with its weight gradient)
    int dw_defer, n_dw;
    GemmArgs dw_queue[4];
} Model;

// A part of a stage's gradient family whose gradients become final together in a backward:
// [off, off + n) of the family; layer its global layer (-1: the head's part — final norm and
// LM head — or the embedding's).
typedef struct { size_t off, n; int layer; } GradPart;

// The layout of rank (tp_rank, pp_rank) in a tp x pp grid under `scheme`. Returns 0
// and writes a message naming the key and the divisibility that fails, if impossible.
int layout_make(Layout *lay, const ModelConfig *cfg, TPScheme scheme, int tp, int tp_rank,
                int pp, int pp_rank, char *msg, size_t msg_len);
// Build the parameter table for cfg (no allocation of weights). lay NULL = single process.
void param_table_build(ParamTable *t, const ModelConfig *cfg, const Layout *lay);
void param_table_free(ParamTable *t);
const ParamSpec *param_find(const ParamTable *t, const char *name);
// Point the views of `w` into the family buffer `base` (elements of `dtype`).
void model_bind(ModelW *w, const ModelConfig *cfg, const Layout *lay, const ParamTable *t, void *base, DType dtype);

// Allocate everything for micro-batches of B sequences of length T on the default CPU fp32
// back end, and initialise the weights from `seed` (layout-independent). Single process.
void model_init(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed);
// The same for this rank of `comm`'s grid with the BOOST switches `boost` (NULL = all
// off; boost->btp selects TP_BTP, else TP_MEGATRON) on back end `bk` (NULL = the default CPU
// fp32 one). B is this rank's micro-batch. n_slots: micro-batches whose activations are kept
// at once (pipeline: min(pp - stage, M)). family_parts > 1 pads the parameter and gradient
// families to family_parts equal slices (ZeRO-1 over that many DP ranks).
void model_init_parallel(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed,
                         struct Comm *comm, const BoostConfig *boost, int n_slots, Backend *bk,
                         int family_parts);
void model_free(Model *mdl);
// params = host[n_params] (fp32, this rank's table order), converted to the compute dtype.
void model_set_params(Model *mdl, const float *host);
// host[n_params] (fp32) = params, resp. grads.
void model_get_params(const Model *mdl, float *host);
void model_get_grads(const Model *mdl, float *host);
// Re-draw every parameter from seed (what model_init does).
void model_init_weights(Model *mdl, uint64_t seed);
// params[t->n_params] (host fp32) = the initial weights of `seed` for the blocks of table t:
// element (i, j) of a full tensor is a pure function of (seed, name, i·cols + j).
void param_table_init_weights(const ParamTable *t, float *params, uint64_t seed);
// Family padding for ZeRO-1: n_params rounded up to parts equal slices of 16-element multiples.
size_t model_family_len(size_t n_params, int parts);

// ---- pipeline-stage interface (one micro-batch in activation slot `slot`) ----------
// Forward of this stage's layers. First stage: embeds `inputs` (host token ids [N]); other
// stages read their input from model_stage_input(slot) (the previous stage's output,
// received there). `targets` (host [N]) are needed on the last stage.
// Last stage: computes the loss and adds the SUM of the N token losses to the model's loss
// sum, on the back end (model_loss_read returns it); other stages leave their output in
// model_stage_output(slot).
void model_stage_forward(Model *mdl, int slot, const int32_t *inputs, const int32_t *targets);
// The token-loss sum of the last stage's forwards since model_loss_begin stays on the back end
// (the cross-entropy adds each micro-batch's sum to a device f64: no host synchronisation per
// micro-batch); model_loss_read hands it to the host once (a GPU waits for its stream there).
// 0 off the last stage or when no forward ran since model_loss_begin. The sum is the same
// double additions, in the same order, as adding each micro-batch's sum on the host.
void model_loss_begin(Model *mdl);
double model_loss_read(Model *mdl);
void *model_stage_input(Model *mdl, int slot);     // [N, d_res] compute dtype (+ LaX latents)
void *model_stage_output(Model *mdl, int slot);    // [N, d_res] (+ LaX latents)
// Elements of one pipeline message (activation forward, gradient backward) in the compute
// dtype: N·d_res, plus N·(4·lra + 3·lrm) for LaX's latents (forward) and their gradient (the
// carry, backward) — docs/lax.md §6.6.
size_t model_stage_elems(const Model *mdl);
// Backward of this stage for `slot`, accumulating into grads (or storing them, after
// model_grads_overwrite; every later backward accumulates). Last stage: from the loss
// (gradient of loss_scale * sum of token losses). Other stages: from the gradient of
// the stage output, which the caller has put into model_stage_grad(). Afterwards (not
// first stage) model_stage_grad() holds the gradient of the stage input, to send back.
void model_stage_backward(Model *mdl, int slot, float loss_scale);
void *model_stage_grad(Model *mdl);                // [N, d_res] (+ LaX carry)
// After the step's last backward on this stage: under sequence parallelism the replicated norm
// gains' gradients hold this rank's tokens only, and one TP all-reduce (phase optimizer, layer
// −1) sums them, after their data-parallel reduction (started in the backward: waited for
// here), as Megatron-LM's finalize_model_grads does. Nothing otherwise. The step loop
// (train/step_loop.c) calls it.
void model_finish_grads(Model *mdl);
// The parts of this stage's gradient family in the order a backward makes them final: the
// head's (last stage), each layer's from the last to the first, the embedding's (first stage,
// or tied to the head); out may be NULL (count only). They cover [0, n_params), each tensor in
// one part. Returns their number.
int model_grad_parts(const Model *mdl, GradPart *out);
// fn(ctx, i) is called with part i of model_grad_parts as soon as the backward marked by
// model_final_backward has finished writing it (the step's last micro-batch on this stage: its
// gradients are then final), so that their data-parallel reduction can start while the rest of
// the backward runs (train/optimizer.c). NULL: none.
void model_grads_final_hook(Model *mdl, void (*fn)(void *ctx, int part), void *ctx);
// The next model_stage_backward is (1) or is not (0) the step's last on this stage (the step
// loop marks it: train/step_loop.c).
void model_final_backward(Model *mdl, int last);

// Single-stage convenience (slot 0):
// Forward over inputs/targets [B,T] (copied into acts). Returns the mean loss over
// the B*T tokens (double; read from the back end: it waits for the device). Keeps what
// backward needs.
double model_forward(Model *mdl, const int32_t *inputs, const int32_t *targets);
// Backward of (loss_scale * sum of token losses): ACCUMULATES into mdl->grads (or stores,
// after model_grads_overwrite). Call after model_forward with the same batch. For the mean over
// a whole optimizer step of K micro-batches use loss_scale = 1/(K*N).
void model_backward(Model *mdl, float loss_scale);
// grads = 0 (a pass over the family); the next backward adds to them.
void model_zero_grads(Model *mdl);
// What a step does instead, with no pass at all: the next backward (the step's first micro-batch
// on this stage) STORES every gradient — each tensor's first writer overwrites it (GEMM beta 0,
// acc 0 of the other ops, backend/ops.h) and any later writer of the same backward adds — and
// every backward after it adds. The same numbers as model_zero_grads then backward: the first
// write is 0 + its sum either way. The buffer's old contents are never read.
void model_grads_overwrite(Model *mdl);
// Fuse the loss gradient into the forward: with loss_scale > 0, each later model_stage_forward of
// the last stage at tp = 1 computes the loss and the gradient of loss_scale · Σ token losses in one
// pass over the logits (backend/ops.h xent_fused), the logits overwritten by it, and its backward
// (which must come with the same loss_scale: checked) starts from there. 0: off (forwards without
// a backward, e.g. validation, keep their logits). At tp > 1 the TP all-reduces of the row maxima
// and sums sit between the loss and its gradient: two passes, fused or not.
void model_fuse_loss_grad(Model *mdl, float loss_scale);
// The start of a training step, as the trainer, the simulator and the benchmarks take it: the
// gradients to be stored by their first writers (model_grads_overwrite), the loss gradient fused
// at this loss_scale (model_fuse_loss_grad), the loss sum started (model_loss_begin). Turn the
// fusion off (model_fuse_loss_grad 0) before forwards that have no backward.
void model_step_begin(Model *mdl, float loss_scale);
