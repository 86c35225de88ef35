// test_emu_gemm_into.cpp — the CUDA back end's cuda_gemm_into (cuda_gemm.cu: cuBLASLt with
// D != C and the BIAS epilogue; cublasGemmEx, a copy and a bias kernel without an Lt
// algorithm) on the emulator, against a double-precision loop: D = alpha·op(A)·op(B) + beta·C
// + bias with strided C and D (ldc != ldd != N), C left unchanged, for fp32 (within 1e-5) and
// bf16 (within 1e-2: one or, on the fallback, two bf16 roundings), both transposes, on the Lt
// path and with EMU_NO_LT_ALGO=1 (the fallback). Built and run by `make cuda-emu-test`.
#include "backend/cuda/cuda_common.cuh"
extern "C" {
#include "backend/ops.h"
}
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

static int n_fail = 0;

static void put(Backend *b, void *d, const std::vector<float> &h) {
    if (b->dtype == DT_F32) { op_from_host(b, d, h.data(), h.size(), DT_F32); return; }
    std::vector<__nv_bfloat16> t(h.size());
    for (size_t i = 0; i < h.size(); i++) t[i] = __float2bfloat16_rn(h[i]);
    op_from_host(b, d, t.data(), t.size(), DT_BF16);
}
static std::vector<float> get(Backend *b, const void *d, size_t n) {
    std::vector<float> h(n);
    if (b->dtype == DT_F32) { op_to_host(b, h.data(), d, n, DT_F32); return h; }
    std::vector<__nv_bfloat16> t(n);
    op_to_host(b, t.data(), d, n, DT_BF16);
    for (size_t i = 0; i < n; i++) h[i] = __bfloat162float(t[i]);
    return h;
}
// bf16-representable inputs, so every dtype computes from the same values
static std::vector<float> rnd(size_t n, unsigned *seed) {
    std::vector<float> v(n);
    for (float &x : v) { *seed = *seed * 1103515245u + 12345u; x = __bfloat162float(__float2bfloat16_rn((float)((*seed >> 8) % 2001) / 1000.0f - 1.0f)); }
    return v;
}

static void one(DType dt, int ta, int tb, const char *path) {
    char why[256] = "";
    Backend *b = backend_cuda(dt, 0, why, sizeof why);
    if (!b) { printf("FAIL gemm_into: no emulated back end: %s\n", why); n_fail++; return; }
    const int M = 37, N = 29, K = 19, ldc = 33, ldd = 31;
    const int lda = ta ? M : K, ldb = tb ? K : N;
    unsigned seed = 7u + (unsigned)(ta * 2 + tb);
    std::vector<float> A = rnd((size_t)(ta ? K : M) * lda, &seed), B = rnd((size_t)(tb ? N : K) * ldb, &seed);
    std::vector<float> C = rnd((size_t)M * ldc, &seed), D0 = rnd((size_t)M * ldd, &seed), bias = rnd((size_t)N, &seed);
    void *dA = bk_alloc(b, A.size(), dt, MEM_WORK), *dB = bk_alloc(b, B.size(), dt, MEM_WORK);
    void *dC = bk_alloc(b, C.size(), dt, MEM_WORK), *dD = bk_alloc(b, D0.size(), dt, MEM_WORK), *db = bk_alloc(b, bias.size(), dt, MEM_WORK);
    put(b, dA, A); put(b, dB, B); put(b, dC, C); put(b, dD, D0); put(b, db, bias);
    const float alpha = 1.5f, beta = 0.5f;
    GemmArgs g = { ta ? TR_T : TR_N, tb ? TR_T : TR_N, M, N, K, alpha, dA, lda, dB, ldb, beta, dC, ldc };
    cuda_gemm_into(b, &g, dD, ldd, db);
    std::vector<float> D = get(b, dD, D0.size()), C2 = get(b, dC, C.size());
    double rms = 0, worst = 0;
    std::vector<double> ref((size_t)M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)A[ta ? (size_t)k * lda + m : (size_t)m * lda + k] * B[tb ? (size_t)n * ldb + k : (size_t)k * ldb + n];
            double r = alpha * acc + beta * C[(size_t)m * ldc + n] + bias[n];
            ref[(size_t)m * N + n] = r;
            rms += r * r;
        }
    rms = sqrt(rms / ref.size());
    bool pad_kept = true;
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            double r = ref[(size_t)m * N + n];
            worst = fmax(worst, fabs(D[(size_t)m * ldd + n] - r) / (rms + fabs(r)));
        }
        for (int n = N; n < ldd && (size_t)m * ldd + n < D.size(); n++) pad_kept &= D[(size_t)m * ldd + n] == D0[(size_t)m * ldd + n];
    }
    bool c_kept = C2 == C;
    double limit = dt == DT_F32 ? 1e-5 : 1e-2;
    bool ok = worst <= limit && c_kept && pad_kept;
    printf("%s gemm_into.%s.%s.t%c%c (err %.1e, limit %.0e%s%s)\n", ok ? "PASS" : "FAIL", dt == DT_F32 ? "fp32" : "bf16", path,
           ta ? 'T' : 'N', tb ? 'T' : 'N', worst, limit, c_kept ? "" : ", C changed", pad_kept ? "" : ", D's row padding written");
    if (!ok) n_fail++;
    bk_free(b, dA, A.size(), dt, MEM_WORK); bk_free(b, dB, B.size(), dt, MEM_WORK); bk_free(b, dC, C.size(), dt, MEM_WORK);
    bk_free(b, dD, D0.size(), dt, MEM_WORK); bk_free(b, db, bias.size(), dt, MEM_WORK);
    backend_free(b);
}

int main() {
    for (int pass = 0; pass < 2; pass++) {
        if (pass) setenv("EMU_NO_LT_ALGO", "1", 1);   // new back ends, new plans: no Lt algorithm
        for (DType dt : { DT_F32, DT_BF16 })
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) one(dt, ta, tb, pass ? "fallback" : "lt");
    }
    return n_fail ? 1 : 0;
}
