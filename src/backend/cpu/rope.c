// rope.c — rotary position embedding, non-interleaved halves (LLaMA/HF layout):
// element i of the first half pairs with element i + hd/2, rotated by
// angle = t * theta^(-2i/hd). The cos/sin table is built per call in double: at
// t ~ 4096 an fp32 angle would already be off by ~2e-4 rad.
#include "kernels.h"
#include "../../core/check.h"
#include <math.h>

// cs[T, hd/2, 2] = (cos, sin) of t * theta^(-2i/hd)
static float *rope_table(int T, int hd, float theta) {
    int half = hd / 2;
    float *cs = xmalloc(sizeof(float) * 2 * (size_t)T * half);
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            double a = (double)t * pow((double)theta, -2.0 * i / hd);
            cs[2 * ((size_t)t * half + i)] = (float)cos(a);
            cs[2 * ((size_t)t * half + i) + 1] = (float)sin(a);
        }
    return cs;
}

// x[B,T,H,hd] in place; dir = +1 rotates by +angle (forward), -1 by -angle (backward:
// the Jacobian of a rotation is the rotation, its transpose the inverse rotation).
static void rope_apply(float *x, int B, int T, int H, int hd, float theta, float dir) {
    CHECK(hd % 2 == 0, "rope: head_dim %d must be even", hd);
    int half = hd / 2;
    float *cs = rope_table(T, hd, theta);
    #pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        const float *c = cs + 2 * (size_t)(bt % T) * half;
        for (int h = 0; h < H; h++) {
            float *xr = x + ((size_t)bt * H + h) * hd;
            for (int i = 0; i < half; i++) {
                float co = c[2 * i], si = dir * c[2 * i + 1];
                float x0 = xr[i], x1 = xr[i + half];
                xr[i] = x0 * co - x1 * si;
                xr[i + half] = x0 * si + x1 * co;
            }
        }
    }
    free(cs);
}

void rope_forward(float *x, int B, int T, int H, int hd, float theta) { rope_apply(x, B, T, H, hd, theta, 1.0f); }
void rope_backward(float *dx, int B, int T, int H, int hd, float theta) { rope_apply(dx, B, T, H, hd, theta, -1.0f); }
