// kind_cola.c — CoLA's low-rank linear y = σ(x @ A) @ B with σ = SiLU in the bottleneck,
// A [d_in, r], B [r, d_out] (paper notes §1). SiLU adds no parameter and is elementwise: the
// sizes are those of the factor pair.
#include "kind.h"

const Kind kind_cola = {
    .name = "cola", .lowrank = 1, .latent = 0,
    .linear_params = kind_factor_params, .linear_flops = kind_factor_flops, .describe = kind_describe_none,
};
