// kind_svd.c — the plain low-rank linear y = (x @ A) @ B, A [d_in, r], B [r, d_out]: the
// bottleneck has no activation, so its latent z is the bottleneck buffer h itself.
#include "kind.h"

const Kind kind_svd = {
    .name = "svd", .lowrank = 1, .latent = 0,
    .linear_params = kind_factor_params, .linear_flops = kind_factor_flops, .describe = kind_describe_none,
};
