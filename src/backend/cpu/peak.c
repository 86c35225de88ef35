// peak.c — the sgemm "peak" of this machine: what the CPU back end's fp32 GEMM (cpu_sgemm,
// the library BOOST_CPU_GEMM chose: sgemm.h) achieves on a large square product with the
// current thread count. MFU on the CPU is measured against it.
#include <stdlib.h>
#include "sgemm.h"
#include "../backend.h"
#include "../../core/check.h"
#include "../../core/timer.h"

double cpu_sgemm_peak_gflops(void) {
    const int n = 2048;
    float *a = xaligned_alloc((size_t)n * n * sizeof(float));
    float *b = xaligned_alloc((size_t)n * n * sizeof(float));
    float *c = xaligned_alloc((size_t)n * n * sizeof(float));
    for (size_t i = 0; i < (size_t)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; }
    GemmArgs g = { TR_N, TR_N, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n };
    cpu_sgemm(&g);   // warm-up
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_seconds();
        cpu_sgemm(&g);
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
    }
    free(a); free(b); free(c);
    return 2.0 * n * n * (double)n / best * 1e-9;
}
