// optim.h — learning-rate schedule, global-norm clipping and the AdamW step over the
// parameter table, plus the measured sgemm peak used for MFU.
#pragma once
#include "../config/config.h"
#include "../model/model.h"

// lr for 0-based optimizer step `step`: linear warm-up from lr/warmup to lr over
// `warmup_steps`, then cosine decay to lr*min_lr_ratio at the last step.
double lr_at(const TrainConfig *tc, int step);
// Global L2 norm of all gradients of the whole model (over TP and PP ranks; double
// accumulation); if clip > 0 and the norm
// exceeds it, scales the gradients by clip/norm. Returns the norm BEFORE clipping.
double clip_grad_norm(Model *mdl, double clip);
// One AdamW step (1-based step t for bias correction). Weight decay only on tensors
// whose spec says decay (2-D matrices: linears, embedding, LM head; not norm gains).
void adamw_step(Model *mdl, const TrainConfig *tc, double lr, int t);
// Best-of-3 GFLOP/s of a 2048x2048x2048 sgemm with the current thread count: the
// "peak" that MFU is measured against (what OpenBLAS achieves on this machine).
double measure_sgemm_peak_gflops(void);
