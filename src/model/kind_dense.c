// kind_dense.c — the full-rank linear y = x @ W, W [d_in, d_out] (FullRank-TP: Megatron's
// column- and row-parallel pairs).
#include "kind.h"
#include "flops.h"

static int64_t dense_params(const ModelConfig *m, int64_t din, int64_t dout, int64_t r, int layer) {
    (void)m; (void)r; (void)layer;
    return din * dout;
}
static double dense_flops(const ModelConfig *m, int din, int dout, int r, int layer) {
    (void)m; (void)r; (void)layer;
    return 3.0 * flops_gemm(1, dout, din);      // y = x@W; dx, dW
}

const Kind kind_dense = {
    .name = "dense", .lowrank = 0, .latent = 0,
    .linear_params = dense_params, .linear_flops = dense_flops, .describe = kind_describe_none,
};
