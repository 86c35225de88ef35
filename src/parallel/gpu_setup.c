// gpu_setup.c — launcher detection, one GPU per rank, and the choice between NCCL and MPI
// with staging (gpu_setup.h). The CUDA parts are built only with CUDA (BOOST_CUDA, from
// mk/gpu.mk); without it there are no devices and page-locked memory is plain malloc.
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_setup.h"
#include "../backend/backend.h"
#include "../core/env.h"

#ifdef BOOST_CUDA
#include <cuda_runtime.h>
#define CHECK_CUDA(call) do { cudaError_t e_cu_ = (call); if (e_cu_ != cudaSuccess) \
    die_at(__FILE__, __LINE__, "%s failed: %s (%s)", #call, cudaGetErrorString(e_cu_), cudaGetErrorName(e_cu_)); } while (0)
#endif

// Variables that the common launchers set in every process they start.
static const char *const launcher_vars[] = {
    "OMPI_COMM_WORLD_SIZE",    // Open MPI mpirun / mpiexec (4.x, and 5.x's prterun)
    "PMIX_RANK",               // PMIx: Open MPI 5, srun --mpi=pmix
    "PMI_RANK", "PMI_SIZE",    // MPICH / Intel MPI hydra, srun --mpi=pmi2
    "MV2_COMM_WORLD_RANK",     // MVAPICH2
};
int gpu_launched_by_mpi(void) {
    for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++) {
        const char *v = getenv(launcher_vars[i]);
        if (v && *v) return 1;
    }
    return 0;
}

void gpu_local_rank(int *local_rank, int *local_ranks) {
    int inited = 0, finalized = 0;
    CHECK_MPI(MPI_Initialized(&inited));
    if (inited) CHECK_MPI(MPI_Finalized(&finalized));
    if (inited && !finalized) {
        MPI_Comm node;
        CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        CHECK_MPI(MPI_Comm_rank(node, local_rank));
        CHECK_MPI(MPI_Comm_size(node, local_ranks));
        CHECK_MPI(MPI_Comm_free(&node));
        return;
    }
    *local_rank = env_local_rank(local_ranks);
}

int gpu_nvidia_present(char *what, size_t n) {
    if (what && n) what[0] = 0;
    const char *assume = getenv("BOOST_GPU_ASSUME_DEVICE");
    if (assume && !strcmp(assume, "1")) {
        if (what) snprintf(what, n, "assumed: BOOST_GPU_ASSUME_DEVICE=1");
        return 1;
    }
    static const char *const globs[] = { "/dev/nvidia[0-9]*", "/proc/driver/nvidia/gpus/*" };
    for (size_t i = 0; i < sizeof globs / sizeof *globs; i++) {
        glob_t g;
        int rc = glob(globs[i], 0, NULL, &g);
        if (rc == 0 && g.gl_pathc > 0) {
            if (what) snprintf(what, n, "%s%s", g.gl_pathv[0], g.gl_pathc > 1 ? " and more" : "");
            globfree(&g);
            return 1;
        }
        if (rc == 0) globfree(&g);
    }
    return 0;
}

#ifdef BOOST_CUDA
// The NVIDIA kernel module's version ("580.65.06"), or "" (no driver loaded, or not readable).
static void driver_module_version(char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        const char *k = strstr(line, "Kernel Module");
        if (k && sscanf(k + strlen("Kernel Module"), " %63s", out) != 1) out[0] = 0;
    }
    fclose(f);
}
#endif

int gpu_device_count(char *why, size_t why_len) {
    if (why && why_len) why[0] = 0;
#ifdef BOOST_CUDA
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();   // clear the sticky-free error so later calls start clean
        if (!why) return 0;
        char node[256], module[64];
        int present = gpu_nvidia_present(node, sizeof node), drv = 0, rt = 0;
        driver_module_version(module, sizeof module);
        (void)cudaDriverGetVersion(&drv);   // 0: no libcuda.so.1
        (void)cudaRuntimeGetVersion(&rt);
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        if (!present)
            snprintf(why, why_len, "no NVIDIA GPU on this host (no /dev/nvidia*, no /proc/driver/nvidia/gpus)%s",
                     e == cudaSuccess ? "" : drv ? "" : "; no NVIDIA driver either (libcuda.so.1)");
        else if (e == cudaSuccess)
            snprintf(why, why_len, "an NVIDIA GPU is present (%s) but CUDA sees none (CUDA_VISIBLE_DEVICES=%s): unset it or list a device",
                     node, vis ? vis : "unset");
        else if (!drv)
            snprintf(why, why_len, "an NVIDIA GPU is present (%s) but the NVIDIA driver's libcuda.so.1 cannot be loaded%s%s: "
                     "install the driver on the host (a container needs it mounted: docker --gpus all, or the cluster's GPU "
                     "plugin)", node, module[0] ? "; kernel module " : "", module);
        else if (e == cudaErrorInsufficientDriver)
            snprintf(why, why_len, "the NVIDIA driver%s%s supports CUDA %d.%d, older than this build's CUDA runtime %d.%d: "
                     "update the driver (CUDA 13 needs driver 580 or newer)", module[0] ? " " : "", module,
                     drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
        else
            snprintf(why, why_len, "an NVIDIA GPU is present (%s) but CUDA cannot use it: %s (%s; driver %s, CUDA %d.%d)", node,
                     cudaGetErrorString(e), cudaGetErrorName(e), module[0] ? module : "?", drv / 1000, drv % 1000 / 10);
        return 0;
    }
    return n;
#else
    if (why) snprintf(why, why_len, "built without CUDA (this build has no CUDA back end; docs/gpu.md says how to build it)");
    return 0;
#endif
}

void gpu_device_describe(int device, char *out, size_t n) {
#ifdef BOOST_CUDA
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess) { snprintf(out, n, "device %d: %s", device, cudaGetErrorString(e)); (void)cudaGetLastError(); return; }
    snprintf(out, n, "%s, sm_%d%d, %.1f GiB, %d SMs", prop.name, prop.major, prop.minor,
             (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024), prop.multiProcessorCount);
#else
    snprintf(out, n, "device %d: built without CUDA", device);
#endif
}

double gpu_device_memory(int device, char *name, size_t n) {
    if (name && n) name[0] = 0;
#ifdef BOOST_CUDA
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
    if (name && n) snprintf(name, n, "%s", prop.name);
    return (double)prop.totalGlobalMem;
#else
    (void)device;
    return 0;
#endif
}

int gpu_place(GpuPlacement *p, char *why, size_t why_len) {
    memset(p, 0, sizeof *p);
    p->device = -1;
    gpu_local_rank(&p->local_rank, &p->local_ranks);
    p->n_devices = gpu_device_count(why, why_len);
    if (p->n_devices <= 0) return 1;
    p->device = p->local_rank % p->n_devices;
    p->shares_device = p->local_ranks > p->n_devices;
    return 0;
}

void gpu_setup(Comm *c, struct Backend *b, GpuPlacement *p) {
    comm_set_device(c, b, gpu_host_alloc, gpu_host_free);
    p->nccl = 0;
    p->comm_note[0] = 0;
    if (c->is_virtual) {   // a single process: no communication at all
        snprintf(p->comm_note, sizeof p->comm_note, "single process, no communication");
        return;
    }
    const char *force = getenv("BOOST_COMM");
    if (force && *force && strcmp(force, "mpi") != 0 && strcmp(force, "nccl") != 0)
        die_input_hint("unset it, or set it to mpi or nccl", "BOOST_COMM=%s is not a communication back end", force);
    if (force && !strcmp(force, "mpi")) {
        snprintf(p->comm_note, sizeof p->comm_note, "BOOST_COMM=mpi: MPI with host staging");
        return;
    }
    char why[256];
    if (comm_use_nccl(c, b, why, sizeof why) == 0) { p->nccl = 1; return; }
    if (force && !strcmp(force, "nccl"))   // asked for explicitly: not having it is an error
        die_input_hint("unset BOOST_COMM to fall back to MPI with host staging", "BOOST_COMM=nccl, but NCCL cannot be used: %s", why);
    snprintf(p->comm_note, sizeof p->comm_note, "MPI with host staging: %s", why);
}

void gpu_placement_print(const GpuPlacement *p, const Comm *c, FILE *f) {
    fprintf(f, "gpu: rank %d (local %d of %d) on device %d of %d%s; comm: %s%s%s\n", c->rank, p->local_rank,
            p->local_ranks, p->device, p->n_devices, p->shares_device ? " (shared with other ranks)" : "",
            p->nccl ? "nccl" : (c->backend ? c->backend->name : "none"), p->comm_note[0] ? " — " : "", p->comm_note);
}

// One allocator for the whole process, decided at the first call: page-locked if a CUDA
// device is present, else malloc (so gpu_host_free knows which free to call).
static int host_pinned = -1;
void *gpu_host_alloc(size_t bytes) {
    if (host_pinned < 0) host_pinned = gpu_device_count(NULL, 0) > 0;
    if (!bytes) bytes = 1;
#ifdef BOOST_CUDA
    if (host_pinned) {
        void *p = NULL;
        CHECK_CUDA(cudaMallocHost(&p, bytes));
        return p;
    }
#endif
    return xmalloc(bytes);
}
void gpu_host_free(void *p) {
    if (!p) return;
#ifdef BOOST_CUDA
    if (host_pinned > 0) { CHECK_CUDA(cudaFreeHost(p)); return; }
#endif
    free(p);
}
