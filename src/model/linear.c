// linear.c — one linear layer's local math on this rank's weights, shared by the layer
// drivers (no communication: the drivers place the collectives around it).
//   dense: y = x @ W
//   cola:  y = σ(x @ A) @ B,  σ = SiLU        svd: y = (x @ A) @ B
#include "model_internal.h"

void linear_forward(Model *m, void *y, LowRankActs *la, const void *x, const LinearW *w,
                    int N, int din, int dout, int r) {
    if (!is_lowrank(&m->cfg)) { mm_forward(m, y, x, w->W, N, din, dout, 0.0f); return; }
    mm_forward(m, la->h, x, w->A, N, din, r, 0.0f);                         // h = x@A   [N,r]
    if (m->cfg.linear == LINEAR_COLA) op_silu_forward(m->bk, la->z, la->h, (size_t)N * r);  // z = σ(h)
    mm_forward(m, y, la->z, w->B, N, r, dout, 0.0f);                        // y = z@B   [N,dout]
}

void linear_backward(Model *m, void *dx, LinearW *dw, const void *dy, const void *x, const LowRankActs *la,
                     const LinearW *w, int N, int din, int dout, int r, void *dz, void *dh, float beta_dx) {
    if (!is_lowrank(&m->cfg)) { mm_backward(m, dx, dw->W, dy, x, w->W, N, din, dout, beta_dx); return; }
    size_t nr = (size_t)N * r;
    mm_backward(m, dz, dw->B, dy, la->z, w->B, N, r, dout, 0.0f);   // dz = dy@B^T, dB += z^T dy
    const void *dpre = dz;
    if (m->cfg.linear == LINEAR_COLA) {
        op_silu_backward(m->bk, dh, dz, la->h, nr);              // dh = dz * σ'(h)
        dpre = dh;
    }
    mm_backward(m, dx, dw->A, dpre, x, w->A, N, din, r, beta_dx);   // dx (+)= dh@A^T, dA += x^T dh
}
