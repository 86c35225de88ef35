// rope.c — rotary position embedding, non-interleaved halves (LLaMA/HF layout):
// element i of the first half pairs with element i + hd/2, rotated by
// angle = t * theta^(-2i/hd). The cos/sin table is built in double: at t ~ 4096 an fp32
// angle would already be off by ~2e-4 rad. It depends on (T, hd, theta) only, so it is built
// once per shape and kept for the process (rope_table_for): built per call, its T·hd/2 pow,
// cos and sin in double cost more than the rotation itself (2·L calls per step: at cola-60m's
// L = 8, T = 256, hd = 64 about 4 M double transcendentals a step).
#include <math.h>
#include <pthread.h>
#include "kernels.h"
#include "../../core/check.h"

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

// The kept tables: a process meets one or two shapes (training, validation); the entries are
// never freed (a table in use must stay valid), and past ROPE_KEPT shapes a call builds its own.
#define ROPE_KEPT 8
static struct { int T, hd; float theta; float *cs; } rope_kept[ROPE_KEPT];
static int rope_n_kept;
static pthread_mutex_t rope_lock = PTHREAD_MUTEX_INITIALIZER;

// The table of (T, hd, theta); *owned = 1 if the caller must free it.
static const float *rope_table_for(int T, int hd, float theta, int *owned) {
    const float *cs = NULL;
    CHECK(pthread_mutex_lock(&rope_lock) == 0, "rope: pthread_mutex_lock failed");
    for (int k = 0; k < rope_n_kept && !cs; k++)
        if (rope_kept[k].T == T && rope_kept[k].hd == hd && rope_kept[k].theta == theta) cs = rope_kept[k].cs;
    if (!cs && rope_n_kept < ROPE_KEPT) {
        float *t = rope_table(T, hd, theta);
        rope_kept[rope_n_kept].T = T; rope_kept[rope_n_kept].hd = hd; rope_kept[rope_n_kept].theta = theta;
        rope_kept[rope_n_kept++].cs = t;
        cs = t;
    }
    CHECK(pthread_mutex_unlock(&rope_lock) == 0, "rope: pthread_mutex_unlock failed");
    *owned = cs == NULL;
    return cs ? cs : rope_table(T, hd, theta);
}

// x[B,T,H,hd] in place; dir = +1 rotates by +angle (forward), -1 by -angle (backward:
// the Jacobian of a rotation is the rotation, its transpose the inverse rotation).
static void rope_apply(float *x, int B, int T, int H, int hd, float theta, float dir) {
    CHECK(hd % 2 == 0, "rope: head_dim %d must be even", hd);
    int half = hd / 2;
    int owned;
    const float *cs = rope_table_for(T, hd, theta, &owned);
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
    if (owned) free((void *)cs);
}

void cpu_rope_forward(float *x, int B, int T, int H, int hd, float theta) { rope_apply(x, B, T, H, hd, theta, 1.0f); }
void cpu_rope_backward(float *dx, int B, int T, int H, int hd, float theta) { rope_apply(dx, B, T, H, hd, theta, -1.0f); }
