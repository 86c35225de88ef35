// kind.h — the interface of a linear kind (dense, cola, svd, lax, ...): everything that
// differs between the kinds of linear layer lives in the kind's own file (kind_<name>.c),
// behind this table; the drivers (model.c, params.c, linear.c, layer_*.c, scratch.c) and the
// FLOP module call it and never test which kind they run.
//
// To add a kind (docs/architecture.md walks through svd): write kind_<name>.c with its
// `const Kind kind_<name>`, add one line to the registry (kind.c), give the model.linear key
// its name (config/config.h LinearKind, config.c linear_names: the config layer is below
// the model, so the key's enum lives there), and add its tests.
#pragma once
#include <stdint.h>
#include "../config/config.h"

typedef struct Kind {
    const char *name;          // model.linear's value
    // ---- data ------------------------------------------------------------------------------
    int lowrank;               // factors A [d_in, r], B [r, d_out] with a bottleneck of width r
                               // (else one W [d_in, d_out]); BTP and lowrank_ckpt need it
    int latent;                // its latents cross layers (LaX, docs/lax.md): the drivers keep
                               // the previous layer's latents (z_prev), the carry and the
                               // latents of a pipeline message
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

extern const Kind kind_dense, kind_cola, kind_svd, kind_lax;

// Shared by the low-rank kinds: a factor pair A [d_in, r], B [r, d_out] — r·(d_in + d_out)
// parameters, and per token 2·r·d_in + 2·r·d_out FLOPs forward, twice that backward (σ is
// elementwise: cola's sizes are svd's). In the Kind's signatures, for its table.
int64_t kind_factor_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer);
double kind_factor_flops(const ModelConfig *m, int din, int dout, int r, int layer);
void kind_describe_none(const ModelConfig *m, char *buf, size_t n);   // nothing to add
