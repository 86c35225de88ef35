// gpu_probe — can this build train on a GPU here, and if not, is that because there is no GPU
// (nothing to test) or because something is broken (a failure to fix)? The node self-test and
// the device check ask it first (tests/gpu/selftest.sh, gpu-check.sh; tests/t_gpu.sh).
//
//   build/gpu_probe            the facts — the build, the NVIDIA device nodes and driver, the
//                              GPU libraries this binary loaded or will load (their versions and
//                              files), the devices and their parts' peaks — then "usable: yes"
//                              or "usable: no: <reason>"
//   build/gpu_probe --reason   only the reason (empty when usable)
//
// Exit status: 0 usable; 1 no NVIDIA GPU on this host (nothing to test: the checks skip);
// 2 an NVIDIA GPU is present but cannot be used — no driver or one too old for this build's CUDA,
// cuDNN or nvrtc missing, a build without CUDA, a device this build's kernels cannot run on —
// a failure, with the fix in the reason. (A binary that cannot start at all, because a library
// it is linked with is missing, is the scripts' to report: the loader's message names it.)
// BOOST_GPU_ASSUME_DEVICE=1 makes the probe believe a GPU is present (parallel/gpu_setup.h):
// the failure paths, tried on a machine without one.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "../../src/backend/backend.h"
#include "../../src/parallel/gpu_setup.h"
#ifdef BOOST_CUDA
#include <cuda_runtime.h>
#include "../../src/backend/cuda/cuda_backend.h"
#include "../../src/backend/cuda/cuda_peaks.h"
#include "../../src/backend/cuda/cudnn_attention.h"
#endif

#ifdef BOOST_CUDA
// The file a symbol of the process comes from ("?" when unknown).
static const char *file_of(const char *symbol) {
    void *p = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
}
// The libraries the binary is linked with: versions as each reports it, and their files.
static void linked_libraries(void) {
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    printf("  cudart     %d.%d %s\n", rt / 1000, rt % 1000 / 10, file_of("cudaRuntimeGetVersion"));
    size_t (*lt)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "cublasLtGetVersion");
    if (lt) { size_t v = lt(); printf("  cuBLASLt   %zu.%zu.%zu %s\n", v / 10000, v / 100 % 100, v % 100, file_of("cublasLtGetVersion")); }
    printf("  cuBLAS     %s\n", file_of("cublasCreate_v2"));
    int (*nccl)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "ncclGetVersion");
    int nv = 0;
    if (nccl && nccl(&nv) == 0) printf("  NCCL       %d.%d.%d %s\n", nv / 10000, nv / 100 % 100, nv % 100, file_of("ncclGetVersion"));
    void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (cu) {
        Dl_info info;
        void *sym = dlsym(cu, "cuInit");
        printf("  driver     libcuda.so.1 %s (CUDA %d.%d)\n", sym && dladdr(sym, &info) ? info.dli_fname : "?", drv / 1000, drv % 1000 / 10);
        dlclose(cu);
    } else {
        printf("  driver     none (%s)\n", dlerror());
    }
}
#endif

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: gpu_probe [--reason]\n"
               "  the CUDA build, the NVIDIA device nodes and driver, the GPU libraries, the devices, then\n"
               "  \"usable: yes\" or \"usable: no: <reason>\"; --reason: only the reason (empty when usable).\n"
               "  Exit 0 usable, 1 no NVIDIA GPU on this host, 2 a GPU is present but cannot be used.\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--reason")) { fprintf(stderr, "error: unknown argument '%s' (gpu_probe --help)\n", argv[1]); return 2; }
    int reason_only = argc > 1 && !strcmp(argv[1], "--reason");
    char why[1024] = "", node[256] = "";
    int present = gpu_nvidia_present(node, sizeof node);
    GpuPlacement gp;
    int unusable = gpu_place(&gp, why, sizeof why);
#ifdef BOOST_CUDA
    char libs[4096] = "", lib_why[1024] = "";
    int libs_bad = cudnn_att_libraries(libs, sizeof libs, lib_why, sizeof lib_why);
    if (!unusable && libs_bad) { unusable = 1; snprintf(why, sizeof why, "%s", lib_why); }
    Backend *b = NULL;
    if (!unusable) {   // the device itself: this build's kernels run on it, cuBLASLt makes a handle
        b = backend_cuda(DT_BF16, gp.device, why, sizeof why);
        if (!b) unusable = 1;
    }
#endif
    int rc = !unusable ? 0 : present || gp.n_devices > 0 ? 2 : 1;
    if (reason_only) { if (rc) printf("%s\n", why); return rc; }
#ifdef BOOST_CUDA
    printf("cuda build: yes\n");
#else
    printf("cuda build: no\n");
#endif
    printf("NVIDIA GPU on this host: %s\n", present ? node : "none (no /dev/nvidia*, no /proc/driver/nvidia/gpus)");
    printf("libraries:\n");
#ifdef BOOST_CUDA
    linked_libraries();
    fputs(libs, stdout);
#else
    printf("  none (built without CUDA)\n");
#endif
    printf("launcher: %s; local rank %d of %d\n", gpu_launched_by_mpi() ? "MPI" : "none", gp.local_rank, gp.local_ranks);
    printf("devices: %d\n", gp.n_devices);
    for (int d = 0; d < gp.n_devices; d++) {
        char desc[256];
        gpu_device_describe(d, desc, sizeof desc);
        printf("  %d: %s\n", d, desc);
#ifdef BOOST_CUDA
        // the part's dense datasheet peaks for MFU (cuda_peaks.h: name, SMs and clock)
        struct cudaDeviceProp prop;
        int khz = 0;
        if (cudaGetDeviceProperties(&prop, d) == cudaSuccess && cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d) == cudaSuccess) {
            const CudaPart *part = NULL;
            double bf16 = backend_cuda_part_peak(prop.name, prop.multiProcessorCount, khz / 1000, DT_BF16, 0, &part);
            if (part)
                printf("  %d peak TFLOP/s (%s, dense): bf16 %.1f, tf32 %.1f, fp32 %.1f; %d SMs at %d MHz\n", d, part->part, bf16,
                       backend_cuda_part_peak(prop.name, prop.multiProcessorCount, khz / 1000, DT_F32, 1, NULL),
                       backend_cuda_part_peak(prop.name, prop.multiProcessorCount, khz / 1000, DT_F32, 0, NULL),
                       prop.multiProcessorCount, khz / 1000);
            else
                printf("  %d peak TFLOP/s: unknown part (%d SMs at %d MHz): MFU needs BOOST_GPU_PEAK_TFLOPS\n", d,
                       prop.multiProcessorCount, khz / 1000);
        }
#endif
    }
#ifdef BOOST_CUDA
    if (b) {
        char note[512];
        snprintf(note, sizeof note, "this rank takes device %d%s", gp.device, gp.shares_device ? ", shared" : "");
        backend_free(b);
        printf("usable: yes (%s)\n", note);
        return 0;
    }
#endif
    printf("usable: no: %s\n", why);
    return rc;
}
