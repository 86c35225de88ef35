// test_emu_peak.c — the GPU peak a GPU run's MFU divides by (backend_cuda_peak_gflops,
// src/backend/cuda/cuda_backend.cu), on the emulated CUDA back end: the part is found from the
// device's own name, SM count and clock (the emulator presents itself as a real part through
// EMU_DEVICE_NAME / EMU_DEVICE_SMS / EMU_DEVICE_MHZ: an "NVIDIA H100" of 132 SMs at 1785 MHz is
// an H100 NVL, at 1980 MHz an SXM5), an unknown device (the emulator's own name) gives 0 with
// its source named, and BOOST_GPU_PEAK_TFLOPS takes precedence. The table itself is
// tests/test_gpu_peaks.c's. Built and run by `make cuda-emu-test` (build/emu/test_emu_peak).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cuda/cuda_backend.h"

static int n_fail = 0;
#define CK(name, cond) do { if (cond) printf("PASS %s\n", name); else { printf("FAIL %s: %s\n", name, #cond); n_fail++; } } while (0)

// The peak (GFLOP/s) and its source of an emulated device that calls itself name, with sms SMs at mhz
static double peak_of(const char *name, const char *sms, const char *mhz, DType dt, const char **src) {
    if (name) setenv("EMU_DEVICE_NAME", name, 1); else unsetenv("EMU_DEVICE_NAME");
    if (sms) setenv("EMU_DEVICE_SMS", sms, 1); else unsetenv("EMU_DEVICE_SMS");
    if (mhz) setenv("EMU_DEVICE_MHZ", mhz, 1); else unsetenv("EMU_DEVICE_MHZ");
    char why[256] = "";
    Backend *b = backend_cuda(dt, 0, why, sizeof why);
    if (!b) { printf("FAIL peak_backend: no emulated back end: %s\n", why); exit(1); }
    double g = backend_cuda_peak_gflops(b, src);
    backend_free(b);
    return g;
}

int main(void) {
    const char *src = NULL;
    unsetenv("BOOST_GPU_PEAK_TFLOPS");
    double g = peak_of(NULL, NULL, NULL, DT_BF16, &src);
    CK("peak_of_the_emulated_device_is_unknown", g == 0.0 && src && !strcmp(src, "unknown device"));
    g = peak_of("NVIDIA H100", "132", "1785", DT_BF16, &src);
    CK("peak_of_a_bare_h100_name_at_the_nvl_clock", g == 835500.0 && src && !strcmp(src, "H100 NVL"));
    g = peak_of("NVIDIA H100", "132", "1980", DT_BF16, &src);
    CK("peak_of_a_bare_h100_name_at_the_sxm_clock", g == 989400.0 && src && !strcmp(src, "H100 SXM5"));
    g = peak_of("NVIDIA H100 PCIe", "114", "1755", DT_F32, &src);
    CK("peak_of_an_h100_pcie_in_fp32", g == 51200.0 && src && !strcmp(src, "H100 PCIe"));
    setenv("BOOST_GPU_PEAK_TFLOPS", "123.5", 1);
    g = peak_of(NULL, NULL, NULL, DT_BF16, &src);
    CK("peak_from_the_environment", g == 123500.0 && src && !strcmp(src, "BOOST_GPU_PEAK_TFLOPS"));
    return n_fail ? 1 : 0;
}
