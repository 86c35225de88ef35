// model.h — the LLaMA decoder (dense, CoLA, SVD) as a parameter table, activation
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

#define PARAM_NAME_MAX 96

typedef enum { INIT_NORMAL = 0, INIT_ONES = 1 } InitKind;

typedef struct {
    char name[PARAM_NAME_MAX]; // HDF5-style path: model/layers/<i>/attn/q/A
    int ndim;                  // 1 (norm gains) or 2
    int64_t rows, cols;        // full shape; 1-D tensors have rows = 1
    size_t offset;             // offset (floats) in every tensor family
    size_t numel;
    int decay;                 // AdamW weight decay applies (2-D matrices)
    InitKind init;
    float init_std;
} ParamSpec;

typedef struct {
    ParamSpec *specs;
    int n_specs;
    size_t n_params;           // total floats
} ParamTable;

// A linear's weights inside one family: dense uses W [din,dout]; low-rank A [din,r], B [r,dout].
typedef struct { float *W, *A, *B; } LinearW;

typedef struct {
    float *input_norm;         // [d]
    float *post_attn_norm;     // [d]
    LinearW q, k, v, o;        // q: d->d, k,v: d->kv_dim, o: d->d
    LinearW gate, up, down;    // gate,up: d->d_ff, down: d_ff->d
} LayerW;

typedef struct {
    float *embed;              // [V,d]
    LayerW *layers;            // [L]
    float *final_norm;         // [d]
    float *lm_head;            // [d,V]; NULL when tied (embed^T is used)
} ModelW;

// A low-rank linear's saved activations: h = x@A [N,r]; z = σ(h) [N,r] (z == h for svd).
typedef struct { float *h, *z; } LowRankActs;

typedef struct {
    float *x;                  // [N,d] block input (residual stream)
    float *a, *rstd1;          // [N,d], [N]   input RMSNorm
    LowRankActs lq, lk, lv, lo;
    float *q, *k, *v;          // [N,d], [N,kvd], [N,kvd] after RoPE (q, k)
    float *att;                // [B,H,T,T]     softmax probabilities
    float *y;                  // [N,d]         attention output (pre o-projection)
    float *x_mid;              // [N,d]         residual after attention
    float *m, *rstd2;          // [N,d], [N]   post-attention RMSNorm
    LowRankActs lg, lu, ld;
    float *g, *u;              // [N,d_ff]
    float *gu;                 // [N,d_ff]      (SiLU(g) or g) * u
} LayerActs;

typedef struct {
    int32_t *inputs, *targets; // [N]
    LayerActs *layers;         // [L]
    float *x_final;            // [N,d] output of the last block
    float *xf, *rstdf;         // [N,d], [N]   final RMSNorm
    float *logits;             // [N,V] (overwritten in place by dlogits in backward)
    float *losses;             // [N]
} Acts;

typedef struct {
    ModelConfig cfg;
    int B, T, N;               // micro-batch shape the activations are sized for
    ParamTable table;
    float *params, *grads, *m, *v;     // each [n_params]; one allocation per family
    ModelW w, dw;              // views into params / grads
    Acts acts;
    float *act_memory; size_t act_floats;
    float *scratch; size_t scratch_floats;  // backward working set (one layer)
    size_t bytes_params, bytes_grads, bytes_optim, bytes_acts; // per-category accounting
} Model;

// Build the parameter table for cfg (no allocation of weights).
void param_table_build(ParamTable *t, const ModelConfig *cfg);
void param_table_free(ParamTable *t);
const ParamSpec *param_find(const ParamTable *t, const char *name);
// Point the views of `w` into the family buffer `base`.
void model_bind(ModelW *w, const ModelConfig *cfg, const ParamTable *t, float *base);

// Allocate everything for micro-batches of B sequences of length T, and initialise
// the weights from `seed` (layout-independent).
void model_init(Model *mdl, const ModelConfig *cfg, int B, int T, uint64_t seed);
void model_free(Model *mdl);
// Re-draw every parameter from seed (what model_init does).
void model_init_weights(Model *mdl, uint64_t seed);

// Forward over inputs/targets [B,T] (copied into acts). Returns the mean loss over
// the B*T tokens (double). Keeps what backward needs.
double model_forward(Model *mdl, const int32_t *inputs, const int32_t *targets);
// Backward of (loss_scale * sum of token losses): ACCUMULATES into mdl->grads. Call
// after model_forward with the same batch. For the mean over a whole optimizer step
// of K micro-batches use loss_scale = 1/(K*N).
void model_backward(Model *mdl, float loss_scale);
void model_zero_grads(Model *mdl);
