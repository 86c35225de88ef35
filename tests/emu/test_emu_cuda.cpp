// test_emu_cuda.cpp — the CUDA emulator fails where a GPU would (src/backend/cuda/emu/):
// device APIs refuse pointers from the wrong address space, naming the call, and
// asynchronous work runs asynchronously (a missing stream or event dependency is visible).
// Built and run by `make cuda-emu-test` (build/emu/test_emu_cuda). The asynchrony checks are
// deterministic: a stream is held at a gate (a queued task waiting for the test), so the
// test knows what cannot have run yet.
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <future>
#include <stdio.h>

static int n_fail = 0;
#define CK(name, cond) do { if (cond) printf("PASS %s\n", name); else { printf("FAIL %s: %s\n", name, #cond); n_fail++; } } while (0)

__global__ void fill(float *p, float v) { p[threadIdx.x] = v; }

// Holds stream s until the returned promise is set.
static std::shared_ptr<std::promise<void>> gate(cudaStream_t s) {
    auto p = std::make_shared<std::promise<void>>();
    std::shared_future<void> f = p->get_future().share();
    emu::enqueue(s, [f]() { f.wait(); });
    return p;
}

int main() {
    float *dev = nullptr, *pin = nullptr;
    float host[64];
    cudaMalloc(&dev, 64 * sizeof(float));
    cudaMallocHost(&pin, 64 * sizeof(float));
    cudaStream_t s, s2;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);

    // ---- address spaces ----
    double scalar = 1;   // a host scalar where a device buffer belongs (the review's defect)
    CK("emu_d2h_refuses_host_source", cudaMemcpyAsync(pin, &scalar, 8, cudaMemcpyDeviceToHost, s) == cudaErrorInvalidDevicePointer);
    CK("emu_h2d_refuses_host_destination", cudaMemcpyAsync(host, pin, 8, cudaMemcpyHostToDevice, s) == cudaErrorInvalidDevicePointer);
    CK("emu_d2d_refuses_host_side", cudaMemcpyAsync(dev, host, 8, cudaMemcpyDeviceToDevice, s) == cudaErrorInvalidDevicePointer);
    CK("emu_h2d_refuses_device_source", cudaMemcpyAsync(dev, dev + 8, 8, cudaMemcpyHostToDevice, s) != cudaSuccess);
    CK("emu_2d_refuses_host", cudaMemcpy2DAsync(dev, 16, host, 16, 16, 2, cudaMemcpyDeviceToDevice, s) == cudaErrorInvalidDevicePointer);
    CK("emu_memset_refuses_host", cudaMemsetAsync(host, 0, 8, s) == cudaErrorInvalidDevicePointer);
    CK("emu_free_refuses_foreign", cudaFree(host) == cudaErrorInvalidDevicePointer && cudaFreeHost(dev) != cudaSuccess);
    CK("emu_device_apis_accept_device", cudaMemcpyAsync(dev, pin, 8, cudaMemcpyHostToDevice, s) == cudaSuccess &&
                                        cudaMemsetAsync(dev + 32, 0, 8, s) == cudaSuccess);
    (void)cudaGetLastError();
    LAUNCH(1, 4, 0, s, fill)(host, 1.0f);
    CK("emu_launch_refuses_host_pointer", cudaGetLastError() == cudaErrorInvalidDevicePointer);
    LAUNCH(1, 4, 0, s, fill)(pin, 1.0f);   // page-locked memory is addressable by kernels (UVA)
    CK("emu_launch_accepts_pinned_pointer", cudaGetLastError() == cudaSuccess);
    cublasLtHandle_t lt; cublasLtCreate(&lt);
    cublasLtMatmulDesc_t d; cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatrixLayout_t l; cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4);
    cublasLtMatmulAlgo_t algo = {}; float one = 1, zero = 0;
    CK("emu_cublaslt_refuses_host_operand",
       cublasLtMatmul(lt, d, &one, host, l, dev, l, &zero, dev + 16, l, dev + 16, l, &algo, nullptr, 0, s) == CUBLAS_STATUS_INVALID_VALUE);
    CK("emu_cublaslt_accepts_device", cublasLtMatmul(lt, d, &one, dev, l, dev, l, &zero, dev + 16, l, dev + 16, l, &algo, nullptr, 0, s) == CUBLAS_STATUS_SUCCESS);
    cudaStreamSynchronize(s);
    (void)cudaGetLastError();

    // ---- cuBLASLt with D != C and the BIAS epilogue (the back end's cuda_gemm_into) ----
    // Column-major 2x2: A = [1 2; 3 4], B = I, C = [10 20; 30 40], bias = [100, 200] per row:
    // D = 2·A·B + 1·C + bias = [112 124; 236 248]; C must stay as it was.
    {
        float *m = nullptr;
        cudaMalloc(&m, 32 * sizeof(float));    // A at 0, B at 4, C at 8, D at 12, bias at 16
        float init[20] = { 1, 3, 2, 4,  1, 0, 0, 1,  10, 30, 20, 40,  -1, -1, -1, -1,  100, 200, 0, 0 };
        cudaMemcpyAsync(m, init, sizeof init, cudaMemcpyHostToDevice, s);   // pageable: taken at the call
        cublasLtMatmulDesc_t db; cublasLtMatmulDescCreate(&db, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        cublasLtMatrixLayout_t l2; cublasLtMatrixLayoutCreate(&l2, CUDA_R_32F, 2, 2, 2);
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        const void *bias = m + 16;
        cublasLtMatmulDescSetAttribute(db, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        cublasLtMatmulDescSetAttribute(db, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
        uint32_t four = 4;
        for (int a = CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES; a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES; a++)
            cublasLtMatmulPreferenceSetAttribute(pref, (cublasLtMatmulPreferenceAttributes_t)a, &four, sizeof four);
        cublasLtMatmulHeuristicResult_t res; int found = 0;
        cublasLtMatmulAlgoGetHeuristic(lt, db, l2, l2, l2, l2, pref, 1, &res, &found);
        float two = 2;
        CK("emu_cublaslt_c_ne_d_with_bias_runs",
           cublasLtMatmul(lt, db, &two, m, l2, m + 4, l2, &one, m + 8, l2, m + 12, l2, &res.algo, nullptr, 0, s) == CUBLAS_STATUS_SUCCESS);
        float out[8];
        cudaMemcpyAsync(out, m + 8, sizeof out, cudaMemcpyDeviceToHost, s);   // pageable: complete on return
        CK("emu_cublaslt_c_ne_d_with_bias_exact", out[4] == 112 && out[5] == 236 && out[6] == 124 && out[7] == 248);
        CK("emu_cublaslt_c_ne_d_leaves_c", out[0] == 10 && out[1] == 30 && out[2] == 20 && out[3] == 40);
        // D overlapping C without being C (beta != 0) is refused, as cuBLASLt computes in place only for C == D
        CK("emu_cublaslt_refuses_partial_overlap",
           cublasLtMatmul(lt, db, &two, m, l2, m + 4, l2, &one, m + 8, l2, m + 10, l2, &res.algo, nullptr, 0, s) == CUBLAS_STATUS_INVALID_VALUE);
        // a bias less aligned than the one the heuristic saw (16 + 1 floats: 4-byte aligned, 64 promised)
        const void *bias_odd = m + 17;
        cublasLtMatmulDescSetAttribute(db, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_odd, sizeof bias_odd);
        CK("emu_cublaslt_refuses_misaligned_bias",
           cublasLtMatmul(lt, db, &two, m, l2, m + 4, l2, &one, m + 8, l2, m + 12, l2, &res.algo, nullptr, 0, s) == CUBLAS_STATUS_INVALID_VALUE);
        float hbias[2] = { 0, 0 };
        const void *bias_host = hbias;
        cublasLtMatmulDescSetAttribute(db, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_host, sizeof bias_host);
        cublasLtMatmulAlgo_t any = {};
        CK("emu_cublaslt_refuses_host_bias",
           cublasLtMatmul(lt, db, &two, m, l2, m + 4, l2, &one, m + 8, l2, m + 12, l2, &any, nullptr, 0, s) == CUBLAS_STATUS_INVALID_VALUE);
        epi = CUBLASLT_EPILOGUE_GELU;
        cublasLtMatmulDescSetAttribute(db, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        CK("emu_cublaslt_refuses_unemulated_epilogue",
           cublasLtMatmul(lt, db, &two, m, l2, m + 4, l2, &one, m + 8, l2, m + 12, l2, &any, nullptr, 0, s) == CUBLAS_STATUS_NOT_SUPPORTED);
        cudaStreamSynchronize(s);
        cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(l2); cublasLtMatmulDescDestroy(db);
        cudaFree(m);
    }

    // ---- asynchrony ----
    for (int i = 0; i < 64; i++) pin[i] = -1;
    auto g = gate(s);
    LAUNCH(1, 32, 0, s, fill)(dev, 7.0f);
    cudaMemcpyAsync(pin, dev, 32 * sizeof(float), cudaMemcpyDeviceToHost, s);
    cudaEvent_t e; cudaEventCreate(&e);
    cudaEventRecord(e, s);
    float ms = 0;
    CK("emu_copy_to_pinned_is_asynchronous", pin[0] == -1.0f);   // the stream is held: nothing ran
    CK("emu_event_not_ready_before_reached", cudaEventElapsedTime(&ms, e, e) == cudaErrorNotReady);
    // another stream waits for the event: its copy must not overtake the held stream
    float *pin2 = nullptr; cudaMallocHost(&pin2, 32 * sizeof(float));
    for (int i = 0; i < 32; i++) pin2[i] = -1;
    cudaStreamWaitEvent(s2, e, 0);
    cudaMemcpyAsync(pin2, dev, 32 * sizeof(float), cudaMemcpyDeviceToHost, s2);
    g->set_value();
    cudaStreamSynchronize(s2);
    CK("emu_stream_wait_event_orders_streams", pin2[31] == 7.0f);
    cudaEventSynchronize(e);
    CK("emu_event_synchronize_waits", pin[31] == 7.0f && cudaEventElapsedTime(&ms, e, e) == cudaSuccess);
    // the legacy stream is not ordered with a non-blocking stream (the review's cudaMemset)
    auto g0 = gate(0);
    cudaMemset(dev, 0, 32 * sizeof(float));        // held on the legacy stream
    cudaMemcpyAsync(pin, dev, 32 * sizeof(float), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    CK("emu_legacy_stream_not_ordered_with_nonblocking", pin[0] == 7.0f);
    g0->set_value();
    cudaDeviceSynchronize();
    cudaMemcpyAsync(pin, dev, 32 * sizeof(float), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    CK("emu_device_synchronize_waits_for_every_stream", pin[0] == 0.0f);
    // a copy from pageable memory takes its source at the call
    float src[4] = { 1, 2, 3, 4 };
    auto g2 = gate(s);
    cudaMemcpyAsync(dev, src, sizeof src, cudaMemcpyHostToDevice, s);
    src[0] = 99;
    g2->set_value();
    cudaMemcpyAsync(host, dev, sizeof src, cudaMemcpyDeviceToHost, s);   // pageable: complete on return
    CK("emu_pageable_copies_as_cuda", host[0] == 1.0f && host[3] == 4.0f);

    cudaEventDestroy(e);
    cublasLtMatrixLayoutDestroy(l); cublasLtMatmulDescDestroy(d); cublasLtDestroy(lt);
    cudaStreamDestroy(s); cudaStreamDestroy(s2);
    cudaFreeHost(pin2); cudaFreeHost(pin); cudaFree(dev);
    return n_fail ? 1 : 0;
}
