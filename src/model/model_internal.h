// model_internal.h — pieces shared by the model's drivers (model.c and the per-scheme
// layer drivers). Not part of the public interface.
#pragma once
#include "model.h"
#include "../parallel/comm.h"

// Backward working set of one layer (reused layer by layer), carved from mdl->scratch.
typedef struct {
    float *dx;           // [N,d_res] running gradient of the residual stream (stage grad)
    float *da;           // [N,d_res] gradient of a normed input (a, m); also [N,d] xf
    float *dq, *dk, *dv; // [N,dq], [N,dkv], [N,dkv]
    float *dy;           // [N,dq]
    float *dg, *du, *dgu;// [N,dff]
    float *dz, *dh;      // [N,r_max] low-rank inner gradients
    float *row_max;      // [N]   vocab-parallel cross-entropy statistics
    double *sumexp, *target_logit; // [N]
} Scratch;

void scratch_view(const Model *mdl, Scratch *s);

static inline int is_lowrank(const ModelConfig *c) { return c->linear != LINEAR_DENSE; }
// SiLU on the gate: always for dense and svd; for cola unless only_lr_act.
static inline int gate_silu(const ModelConfig *c) { return c->linear != LINEAR_COLA || !c->only_lr_act; }

// One linear's local math on this rank's factors, no communication:
// y[N,dout] = x[N,din] @ W, or σ(x @ A) @ B with the bottleneck width r.
void linear_forward(const ModelConfig *c, float *y, LowRankActs *la, const float *x,
                    const LinearW *w, int N, int din, int dout, int r);
// dx[N,din] += ..., dw += ...; dz, dh: scratch [N,r]
void linear_backward(const ModelConfig *c, float *dx, LinearW *dw, const float *dy,
                     const float *x, const LowRankActs *la, const LinearW *w,
                     int N, int din, int dout, int r, float *dz, float *dh);

// Megatron FullRank-TP (dense) / Vanilla-TP (low-rank) block; l is the local layer index.
void megatron_layer_forward(Model *mdl, LayerActs *la, int l, float *x_out);
void megatron_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s);
