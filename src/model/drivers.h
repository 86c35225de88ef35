// drivers.h — the drivers' entries that model.c calls (not part of the public interface):
// the ends of the model (head.c) and one block under each tensor-parallel scheme. The kinds
// (below the drivers) never include this.
#pragma once
#include "model_internal.h"

// head.c — the vocabulary-parallel embedding, LM head and loss (tp > 1: Megatron's
// collectives; BTP: the residual's column slice and the all-gather of the last layer).
void embed_forward(Model *mdl, void *x0, const int32_t *tokens);          // x0 [N,d_res]
void embed_backward(Model *mdl, void *dx0, const int32_t *tokens);        // dx0 [N,d_res]
void head_loss_forward(Model *mdl, Acts *A, double *loss, int accumulate); // *loss (+)= Σ token losses
void head_loss_backward(Model *mdl, Acts *A, float loss_scale, Scratch *s); // -> s->dx

// Megatron FullRank-TP (dense) / Vanilla-TP (low-rank) block; l is the local layer index.
// LaX: prev = the latents this layer crosses with (NULL in global layer 0), out = where its
// own latents also go (NULL: nowhere); the backward reads and rewrites s->carry.
void megatron_layer_forward(Model *mdl, LayerActs *la, int l, void *x_out, const Lat *prev, const Lat *out);
void megatron_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s, const Lat *prev);

// Bottleneck-aware TP block (layer_btp.c): same contract. The forward's collectives use
// mdl->fwd_phase; under CKPT_LOWRANK the backward recomputes each chunk's interior from
// the kept bottleneck buffers first (no collective).
void btp_layer_forward(Model *mdl, LayerActs *la, int l, void *x_out, const Lat *prev, const Lat *out);
void btp_layer_backward(Model *mdl, LayerActs *la, int l, Scratch *s, const Lat *prev);

