// gpu_probe — can this build use a GPU here? Prints what it found and exits 0 if a CUDA
// device is usable, 1 if not (the first line after "usable: no" says why). The GPU tests
// and make gpu-check ask it before they run anything (tests/t_gpu.sh).
//   build/gpu_probe            the facts, then "usable: yes" or "usable: no: <reason>"
//   build/gpu_probe --reason   only the reason (empty when usable)
#include <stdio.h>
#include <string.h>
#include "../../src/parallel/gpu_setup.h"
#ifdef BOOST_CUDA
#include "../../src/backend/cuda/cuda_backend.h"
#endif

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: gpu_probe [--reason]\n"
               "  the CUDA build, the launcher, the devices, then \"usable: yes\" or \"usable: no: <reason>\";\n"
               "  --reason: only the reason (empty when usable). Exit 0 usable, 1 not.\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--reason")) { fprintf(stderr, "error: unknown argument '%s' (gpu_probe --help)\n", argv[1]); return 2; }
    int reason_only = argc > 1 && !strcmp(argv[1], "--reason");
    char why[256] = "";
    GpuPlacement gp;
    int rc = gpu_place(&gp, why, sizeof why);
    if (reason_only) { if (rc) printf("%s\n", why); return rc ? 1 : 0; }
#ifdef BOOST_CUDA
    printf("cuda build: yes\n");
#else
    printf("cuda build: no\n");
#endif
    printf("launcher: %s; local rank %d of %d\n", gpu_launched_by_mpi() ? "MPI" : "none", gp.local_rank, gp.local_ranks);
    printf("devices: %d\n", gp.n_devices);
    for (int d = 0; d < gp.n_devices; d++) {
        char desc[256];
        gpu_device_describe(d, desc, sizeof desc);
        printf("  %d: %s\n", d, desc);
#ifdef BOOST_CUDA
        // the datasheet's dense peaks for MFU (backend_cuda_peak_gflops); the name ends at the first comma
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(desc, ","), desc);
        printf("  %d peak TFLOP/s (datasheet, dense): bf16 %.1f, tf32 %.1f, fp32 %.1f\n", d,
               cuda_datasheet_peak_tflops(name, DT_BF16, 0), cuda_datasheet_peak_tflops(name, DT_F32, 1),
               cuda_datasheet_peak_tflops(name, DT_F32, 0));
#endif
    }
    if (rc) printf("usable: no: %s\n", why);
    else printf("usable: yes (this rank takes device %d%s)\n", gp.device, gp.shares_device ? ", shared" : "");
    return rc ? 1 : 0;
}
