// test_emu_peak.c — the GPU peak a GPU run's MFU divides by (backend_cuda_peak_gflops,
// src/backend/cuda/cuda_backend.cu), on the emulated CUDA back end: the datasheet table by
// device name (the figures docs/gpu.md quotes), an unknown device (the emulator's) giving 0
// with its source named, and BOOST_GPU_PEAK_TFLOPS taking precedence. Built and run by
// `make cuda-emu-test` (build/emu/test_emu_peak).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cuda/cuda_backend.h"

static int n_fail = 0;
#define CK(name, cond) do { if (cond) printf("PASS %s\n", name); else { printf("FAIL %s: %s\n", name, #cond); n_fail++; } } while (0)

int main(void) {
    CK("peak_table_h200_bf16", cuda_datasheet_peak_tflops("NVIDIA H200", DT_BF16, 0) == 989.4);
    CK("peak_table_h100_pcie_before_h100", cuda_datasheet_peak_tflops("NVIDIA H100 PCIe", DT_BF16, 0) == 756.0);
    CK("peak_table_a100_tf32_and_fp32", cuda_datasheet_peak_tflops("NVIDIA A100-SXM4-80GB", DT_F32, 1) == 156.0 &&
                                        cuda_datasheet_peak_tflops("NVIDIA A100-SXM4-80GB", DT_F32, 0) == 19.5);
    CK("peak_table_unknown_is_zero", cuda_datasheet_peak_tflops("CPU emulator (src/backend/cuda/emu)", DT_BF16, 0) == 0.0 &&
                                     cuda_datasheet_peak_tflops(NULL, DT_BF16, 0) == 0.0);
    char why[256] = "";
    Backend *b = backend_cuda(DT_BF16, 0, why, sizeof why);
    if (!b) { printf("FAIL peak_backend: no emulated back end: %s\n", why); return 1; }
    const char *src = NULL;
    unsetenv("BOOST_GPU_PEAK_TFLOPS");
    double g = backend_cuda_peak_gflops(b, &src);
    CK("peak_of_the_emulated_device_is_unknown", g == 0.0 && src && !strcmp(src, "unknown device"));
    setenv("BOOST_GPU_PEAK_TFLOPS", "123.5", 1);
    g = backend_cuda_peak_gflops(b, &src);
    CK("peak_from_the_environment", g == 123500.0 && src && !strcmp(src, "BOOST_GPU_PEAK_TFLOPS"));
    backend_free(b);
    return n_fail ? 1 : 0;
}
