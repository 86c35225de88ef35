// kind.h — the interface of a linear kind (dense, cola, svd, lax, ...): everything that
// differs between the kinds of linear layer lives in the kind's own file (kind_<name>.c),
// behind this table; the drivers (model.c, params.c, layer_*.c, scratch.c) and the FLOP
// module call it and never test which kind they run.
//
// To add a kind (docs/architecture.md walks through svd): write kind_<name>.c with its
// `const Kind kind_<name>`, add one line to the registry (kind.c), give the model.linear key
// its name (config/config.h LinearKind, config.c linear_names: the config layer is below
// the model, so the key's enum lives there), and add its tests.
//
// The kinds sit below the drivers (model_internal.h: helpers -> kinds -> drivers -> model):
// a kind's file uses the shared helpers and linear.c, nothing above them.
#pragma once
#include <stdint.h>
#include "../config/config.h"
#include "model.h"

struct Bn; struct Lat; struct Scratch; struct ParamWalk;   // model_internal.h

typedef struct Kind {
    const char *name;          // model.linear's value
    // ---- data ------------------------------------------------------------------------------
    int lowrank;               // factors A [d_in, r], B [r, d_out] with a bottleneck of width r
                               // (else one W [d_in, d_out]); BTP and lowrank_ckpt need it
    int silu;                  // σ = SiLU on the bottleneck (cola; linear.c's factor hooks read it)
    int latent;                // its latents cross layers (LaX, docs/lax.md): the drivers keep
                               // the previous layer's latents (z_prev), the carry and the
                               // latents of a pipeline message
    // Its config keys and their validation are the config layer's (config/config.c: the schema
    // rows and config_finalize's rules), which is below the model and cannot call a kind.

    // ---- parameters (params.c's walk) --------------------------------------------------------
    // The tensors of one linear d_in -> d_out of rank r in global layer `layer`, with their init
    // and their shard under wk->lay's scheme: col_parallel says whether the dense layer is
    // column-parallel (q,k,v,gate,up) or row-parallel (o,down) in Megatron.
    LinearW (*take)(struct ParamWalk *wk, const char *prefix, int din, int dout, int r, int col_parallel, int layer);
    // The kind's own widths in a rank's layout, after the common ones (NULL: none). LaX: the
    // latents' widths lra, lrm and Vanilla-TP's gathered case.
    void (*layout)(Layout *lay, const ModelConfig *c);
    // Has the latent z = σ(N(h)) a buffer of its own (else z is the bottleneck buffer h, P)?
    int (*own_z)(const ModelConfig *c);

    // ---- Megatron / Vanilla-TP: one projection p (LX_Q .. LX_DOWN) of global layer gl, local
    // math on this rank's weights (layer_megatron.c places the collectives around it; a latent
    // kind's own gathers are inside). prev: the previous layer's latents (NULL in layer 0), out:
    // where this projection's latent also goes (NULL: nowhere). y[N,dout] = lin(x[N,din]), or
    // y = res + lin(x) when add_res (res [N,dout], may be y): the block's residual add inside
    // the kind's last GEMM (mm_forward_to), where no all-reduce completes y first.
    void (*forward)(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                    const LinearW *w, int din, int dout, int r, int p, int gl, const struct Lat *prev,
                    const struct Lat *out);
    // dx[N,din] = beta_dx·dx + ... (0: dx's first writer), dw (+)= ... (grad_acc); s: the layer's scratch
    // (a latent kind reads and rewrites its carry there).
    void (*backward)(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                     const LinearW *w, int din, int dout, int r, int p, int gl, const struct Lat *prev,
                     struct Scratch *s, float beta_dx);

    // ---- at a BTP bottleneck (layer_btp.c; low-rank kinds only, NULL otherwise) ----------------
    // The bottleneck b holds P after its all-reduce (slots p0 .. p0+G−1 of the layer's
    // projections, weights W[j]). Z from P: σ(P) (cola), nothing (svd: Z is P), the crossing
    // (LaX: U = P + g(Z_prev) in place, Z = σ(LN(U)), Z also into `out`).
    void (*bn_forward)(Model *m, const struct Bn *b, int p0, void *Z, void *P, LinearW *const *W, int gl,
                       const struct Lat *prev, const struct Lat *out);
    // The same from a kept bottleneck (CKPT_LOWRANK recompute; no collective).
    void (*bn_recompute)(Model *m, const struct Bn *b, void *Z, void *P, LinearW *const *W, int gl);
    // dP from the all-reduced dZ (returns where it is, laid out like the bottleneck; may be dZ).
    void *(*bn_backward)(Model *m, const struct Bn *b, int p0, void *dZ, void *P, LinearW *const *W,
                         LinearW *const *dW, int gl, const struct Lat *prev, struct Scratch *s);
    // The bottleneck RMSNorm(x) @ A that the norm backward's c-term needs (the kept buffer, or
    // LaX's U − g(Z_prev)).
    const void *(*bn_input)(Model *m, const struct Bn *b, int p0, void *P, LinearW *const *W, int gl,
                            const struct Lat *prev, struct Scratch *s);

    // ---- latents (latent kinds only, NULL otherwise; model.c) -----------------------------------
    // CKPT_LOWRANK under BTP: layer l's (local) latents recomputed from its kept bottlenecks into
    // dst (no collective).
    void (*latents_recompute)(Model *m, LayerActs *la, int l, const struct Lat *dst);

    // ---- sizes (the FLOP module, model/flops.c; info) -----------------------------------------
    // Parameters of one linear d_in -> d_out of rank r in global layer `layer`.
    int64_t (*linear_params)(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer);
    // Its training FLOPs per token (forward and backward, flops.h's convention): the sum of
    // the FLOPs its GEMM-class ops report.
    double (*linear_flops)(const ModelConfig *m, int din, int dout, int r, int layer);
    // One line of `info` about what the kind adds beyond its factors ("" = nothing).
    void (*describe)(const ModelConfig *m, char *buf, size_t n);
} Kind;

// The kind of model.linear (the registry, kind.c).
const Kind *kind_of(const ModelConfig *m);

// The kinds themselves (kind_<name>.c) are declared where they are registered (kind.c, from config/linear_kinds.h).

// The entries a plain factor pair (cola, svd) takes from linear.c, in a Kind initializer.
#define KIND_FACTOR_PAIR                                                                         \
    .lowrank = 1, .latent = 0, .take = kind_factor_take, .forward = kind_factor_forward,          \
    .backward = kind_factor_backward, .bn_input = kind_bn_input_kept, .linear_params = kind_factor_params, \
    .linear_flops = kind_factor_flops, .describe = kind_describe_none

// Shared by the low-rank kinds: a factor pair A [d_in, r], B [r, d_out] — r·(d_in + d_out)
// parameters, and per token 2·r·d_in + 2·r·d_out FLOPs forward, twice that backward (σ is
// elementwise: cola's sizes are svd's). In the Kind's signatures, for its table.
int64_t kind_factor_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer);
double kind_factor_flops(const ModelConfig *m, int din, int dout, int r, int layer);
void kind_describe_none(const ModelConfig *m, char *buf, size_t n);   // nothing to add
// forward/backward of a plain factor pair (cola, svd): linear.c's, σ by the kind's `silu`.
void kind_factor_forward(Model *m, void *y, const void *res, int add_res, LowRankActs *la, const void *x,
                         const LinearW *w, int din, int dout, int r, int p, int gl, const struct Lat *prev,
                         const struct Lat *out);
void kind_factor_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                          const LinearW *w, int din, int dout, int r, int p, int gl, const struct Lat *prev,
                          struct Scratch *s, float beta_dx);
// take of a plain factor pair (cola, svd): linear.c's factor_take.
LinearW kind_factor_take(struct ParamWalk *wk, const char *prefix, int din, int dout, int r, int col_parallel, int layer);
// bn_input of a kind whose kept bottleneck is P itself (cola, svd).
const void *kind_bn_input_kept(Model *m, const struct Bn *b, int p0, void *P, LinearW *const *W, int gl,
                               const struct Lat *prev, struct Scratch *s);
