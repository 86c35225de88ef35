// cuda_backend.cu — the CUDA back end: construction, buffers, transfers, scratch, and the
// op table whose entries live in the other files of this directory (cuda_common.cuh).
//
// Everything is queued on one non-blocking stream per back end (backend_cuda_stream):
// kernels, cuBLASLt calls, copies and the NCCL collectives of the communication back end.
// Ops return as soon as their work is queued, except those that hand a value to the host
// (to_host, sumsq_multi), which wait for the stream: the loss stays on the device (xent_loss
// adds into a device scalar the caller reads once per step). Every such wait goes through
// cuda_wait_stream / cuda_wait_event, which a communication back end sharing the stream (NCCL)
// may turn into a polled wait with a timeout (Backend.set_wait).
#include "cuda_common.cuh"
#include "lax_kernels.h"
extern "C" {
#include "../../core/env.h"
}
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    PIN_BYTES = 4 << 20,          // each of the two pinned staging buffers of to/from_host
    LT_WORKSPACE = 32 << 20,      // cuBLASLt workspace (NVIDIA's advice for Hopper: 32 MiB)
};

// ---- waiting for the stream -----------------------------------------------------------------------
void cuda_wait_event(Backend *b, cudaEvent_t e, const char *what) {
    CudaImpl *im = impl_of(b);
    if (im->wait) im->wait(im->wait_ctx, (void *)e, what);
    else CUDA_CHECK(cudaEventSynchronize(e));
}
void cuda_wait_stream(Backend *b, const char *what) {
    CudaImpl *im = impl_of(b);
    if (!im->wait) { CUDA_CHECK(cudaStreamSynchronize(im->stream)); return; }
    CUDA_CHECK(cudaEventRecord(im->wait_ev, im->stream));
    im->wait(im->wait_ctx, (void *)im->wait_ev, what);
}
static void cu_set_wait(Backend *b, void (*wait)(void *ctx, void *event, const char *what), void *ctx) {
    CudaImpl *im = impl_of(b);
    im->wait = wait;
    im->wait_ctx = wait ? ctx : NULL;
}

// ---- buffers ---------------------------------------------------------------------------------
// Plain device allocations (never managed memory), zeroed in stream order: every later op
// is queued behind the memset.
static void *cu_alloc(Backend *b, size_t bytes) {
    CudaImpl *im = impl_of(b);
    void *p = NULL;
    size_t n = bytes ? bytes : 256;
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        die_at(__FILE__, __LINE__, "cudaMalloc(%zu bytes) on device %d failed: %s (%zu of %zu MiB free)",
               n, im->device, cudaGetErrorString(e), fr >> 20, tot >> 20);
    }
    CUDA_CHECK(cudaMemsetAsync(p, 0, n, im->stream));
    return p;
}

// Waits for the stream first: no queued kernel may still read or write p.
static void cu_free(Backend *b, void *p) {
    if (!p) return;
    cuda_wait_stream(b, "the work queued before a buffer is freed");
    CUDA_CHECK(cudaFree(p));
}

static void cu_zero(Backend *b, void *p, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_of(b)));
}

static void cu_copy(Backend *b, void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(b)));
}

static void cu_copy2d(Backend *b, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows) {
    if (!width || !rows) return;
    CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, stream_of(b)));
}

// Device -> host through the two pinned buffers: chunk i is copied out of its pinned buffer
// while chunk i+1 is in flight. Returns when host[] holds the data.
static void cu_to_host(Backend *b, void *host, const void *src, size_t bytes) {
    CudaImpl *im = impl_of(b);
    size_t off = 0, prev_off = 0, prev_len = 0;
    int k = 0, have_prev = 0;
    while (off < bytes) {
        size_t len = bytes - off < im->pin_size ? bytes - off : im->pin_size;
        CUDA_CHECK(cudaMemcpyAsync(im->pin[k], (const char *)src + off, len, cudaMemcpyDeviceToHost, im->stream));
        CUDA_CHECK(cudaEventRecord(im->pin_ev[k], im->stream));
        if (have_prev) {
            cuda_wait_event(b, im->pin_ev[k ^ 1], "a copy to the host");
            memcpy((char *)host + prev_off, im->pin[k ^ 1], prev_len);
        }
        have_prev = 1; prev_off = off; prev_len = len;
        off += len; k ^= 1;
    }
    if (have_prev) {
        cuda_wait_event(b, im->pin_ev[k ^ 1], "a copy to the host");
        memcpy((char *)host + prev_off, im->pin[k ^ 1], prev_len);
    }
}

// Host -> device through the pinned buffers; a buffer is refilled only after the copy that
// last read it has completed (its event). host[] may be reused as soon as this returns.
static void cu_from_host(Backend *b, void *dst, const void *host, size_t bytes) {
    CudaImpl *im = impl_of(b);
    size_t off = 0;
    int k = 0;
    while (off < bytes) {
        size_t len = bytes - off < im->pin_size ? bytes - off : im->pin_size;
        cuda_wait_event(b, im->pin_ev[k], "a staging buffer of a copy from the host");
        memcpy(im->pin[k], (const char *)host + off, len);
        CUDA_CHECK(cudaMemcpyAsync((char *)dst + off, im->pin[k], len, cudaMemcpyHostToDevice, im->stream));
        CUDA_CHECK(cudaEventRecord(im->pin_ev[k], im->stream));
        off += len; k ^= 1;
    }
}

static void cu_sync(Backend *b) { cuda_wait_stream(b, "the stream (sync)"); }

// ---- scratch and tables ------------------------------------------------------------------------
void *cuda_scratch(Backend *b, int slot, size_t bytes) {
    CudaImpl *im = impl_of(b);
    if (bytes <= im->scr_size[slot] && im->scr[slot]) return im->scr[slot];
    size_t want = bytes < 4096 ? 4096 : bytes + bytes / 4;   // grow with headroom
    if (im->scr[slot]) {
        cuda_wait_stream(b, "the work queued before op scratch grows");
        CUDA_CHECK(cudaFree(im->scr[slot]));
        im->scr[slot] = NULL;
    }
    cudaError_t e = cudaMalloc(&im->scr[slot], want);
    if (e != cudaSuccess)
        die_at(__FILE__, __LINE__, "cudaMalloc(%zu bytes) for op scratch failed: %s", want, cudaGetErrorString(e));
    im->scr_size[slot] = want;
    return im->scr[slot];
}

void *cuda_upload_table(Backend *b, const void *host, size_t bytes) {
    CudaImpl *im = impl_of(b);
    cuda_wait_event(b, im->tab_ev, "the last table upload");   // it has left tab_host
    if (bytes > im->tab_host_size) {
        if (im->tab_host) CUDA_CHECK(cudaFreeHost(im->tab_host));
        im->tab_host_size = bytes + bytes / 4 + 4096;
        CUDA_CHECK(cudaMallocHost(&im->tab_host, im->tab_host_size));
    }
    void *dev = cuda_scratch(b, SCR_TABLE, bytes);
    memcpy(im->tab_host, host, bytes);
    CUDA_CHECK(cudaMemcpyAsync(dev, im->tab_host, bytes, cudaMemcpyHostToDevice, im->stream));
    CUDA_CHECK(cudaEventRecord(im->tab_ev, im->stream));
    return dev;
}

static void cu_destroy(Backend *b);

// ---- the op table -----------------------------------------------------------------------------
static const BackendOps cuda_ops = {
    // buffers
    .alloc = cu_alloc, .free = cu_free, .zero = cu_zero, .copy = cu_copy, .copy2d = cu_copy2d,
    .to_host = cu_to_host, .from_host = cu_from_host, .sync = cu_sync, .cast = cuda_cast,
    .add2d = cuda_add2d, .destroy = cu_destroy,
    // matrix products
    .gemm = cuda_gemm, .gemm_into = cuda_gemm_to, .gemm_group = cuda_gemm_group,
    // normalisation
    .rmsnorm_forward = cuda_rmsnorm_forward, .rmsnorm_backward = cuda_rmsnorm_backward,
    .rowsumsq = cuda_rowsumsq, .rownorm = cuda_rownorm, .scale_rows = cuda_scale_rows,
    .rowdot = cuda_rowdot, .sharded_rmsnorm_backward = cuda_sharded_rmsnorm_backward,
    // elementwise
    .silu_forward = cuda_silu_forward, .silu_backward = cuda_silu_backward,
    .swiglu_forward = cuda_swiglu_forward, .swiglu_backward = cuda_swiglu_backward,
    .add = cuda_add, .scale = cuda_scale,
    // attention
    .rope = cuda_rope, .attention_forward = cuda_attention_forward,
    .attention_backward = cuda_attention_backward,
    // embedding, loss
    .embedding_forward = cuda_embedding_forward, .embedding_backward = cuda_embedding_backward,
    .xent_forward = cuda_xent_forward, .xent_rescale = cuda_xent_rescale, .xent_loss = cuda_xent_loss,
    .xent_backward = cuda_xent_backward, .xent_fused = cuda_xent_fused,
    // optimizer
    .sumsq_multi = cuda_sumsq_multi, .adamw_multi = cuda_adamw_multi,
    // LaX's crossing (lax_kernels.cu)
    .layernorm_forward = cuda_lax_layernorm_forward, .layernorm_backward = cuda_lax_layernorm_backward,
    .dense_gate_forward = cuda_lax_dense_gate_forward, .dense_gate_backward = cuda_lax_dense_gate_backward,
    .kron_gate_forward = cuda_lax_kron_gate_forward, .kron_gate_backward = cuda_lax_kron_gate_backward,
};

// ---- construction ---------------------------------------------------------------------------
// Writes a one-line reason into why and returns NULL: construction never dies on a missing
// or unsuitable GPU; the caller decides whether that is an error or a skipped test.
__attribute__((format(printf, 3, 4)))
static Backend *refuse(char *why, size_t why_len, const char *fmt, ...) {
    if (why && why_len) {
        va_list ap; va_start(ap, fmt); vsnprintf(why, why_len, fmt, ap); va_end(ap);
    }
    return NULL;
}

int cuda_debug_sync(void) {
    static int on = -1;   // (read once; the first call is on the host thread that builds the back end)
    if (on < 0) { const char *v = getenv("BOOST_CUDA_DEBUG"); on = v && *v && strcmp(v, "0") != 0; }
    return on;
}

// Does nothing: launching it proves that this binary holds code the device can run
// (sm_80 / sm_90 machine code, or compute_90 PTX for the driver to compile).
__global__ void probe_kernel(int *p) { if (p) *p = 0; }

// Number of visible devices, or 0 and a reason.
static int device_count(char *why, size_t why_len) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();   // clear it: a later call must not report this one
        refuse(why, why_len, "no usable CUDA device: %s", cudaGetErrorString(e));
        return 0;
    }
    if (count == 0) refuse(why, why_len, "no CUDA device visible");
    return count;
}

extern "C" int backend_cuda_available(char *why, size_t why_len) {
    return device_count(why, why_len) > 0;
}

// MFU's peak on a GPU: BOOST_GPU_PEAK_TFLOPS, else the datasheet's dense peak for the device's
// name and the compute dtype (backend_cuda_peak_gflops, below); 0 (MFU not measured, said once)
// for a device the table does not know.
static double cu_peak_for_mfu(Backend *b) {
    const char *source = NULL;
    double g = backend_cuda_peak_gflops(b, &source);
    if (!(g > 0))
        fprintf(stderr, "warning: no GEMM peak known for GPU '%s': MFU is not measured (hint: BOOST_GPU_PEAK_TFLOPS=989.4 "
                "for an H200 in bf16, from its datasheet)\n", backend_cuda_device_name(b));
    return g;
}

extern "C" Backend *backend_cuda(DType dtype, int device, char *why, size_t why_len) {
    if (dtype != DT_F32 && dtype != DT_BF16)
        return refuse(why, why_len, "the CUDA back end computes in fp32 or bf16, not %s", dtype_name(dtype));
    int count = device_count(why, why_len);
    if (count == 0) return NULL;
    if (device < 0) device = env_local_rank(NULL) % count;   // core/env.h: the one parser
    if (device >= count)
        return refuse(why, why_len, "CUDA device %d requested, %d visible", device, count);
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess) return refuse(why, why_len, "cudaGetDeviceProperties(%d): %s", device, cudaGetErrorString(e));
    if (prop.major < 8)
        return refuse(why, why_len, "CUDA device %d (%s) has compute capability %d.%d; this back end needs 8.0+ (bf16 tensor cores)",
                      device, prop.name, prop.major, prop.minor);
    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return refuse(why, why_len, "cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
    LAUNCH(1, 1, 0, 0, probe_kernel)((int *)NULL);
    if ((e = cudaDeviceSynchronize()) != cudaSuccess || (e = cudaGetLastError()) != cudaSuccess) {
        cudaGetLastError();
        return refuse(why, why_len, "CUDA device %d (%s, sm_%d%d) cannot run this build's kernels: %s",
                      device, prop.name, prop.major, prop.minor, cudaGetErrorString(e));
    }

    // From here on a failure is an error of the machine or the library, not a missing GPU.
    CudaImpl *im = (CudaImpl *)xcalloc(1, sizeof *im);
    im->device = device;
    im->prop = prop;
    CUDA_CHECK(cudaDeviceGetAttribute(&im->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&im->clock_mhz, cudaDevAttrClockRate, device));
    im->clock_mhz /= 1000;   // kHz
    CUDA_CHECK(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasLtCreate(&im->lt));
    CUBLAS_CHECK(cublasCreate(&im->blas));
    CUBLAS_CHECK(cublasSetStream(im->blas, im->stream));
    im->lt_ws_size = LT_WORKSPACE;
    CUDA_CHECK(cudaMalloc(&im->lt_ws, im->lt_ws_size));
    CUBLAS_CHECK(cublasSetWorkspace(im->blas, im->lt_ws, im->lt_ws_size));
    CUBLAS_CHECK(cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH));   // no TF32 unless asked (compute type)
    const char *grouped = getenv("BOOST_CUDA_GROUPED");                 // "0": GEMM groups as loops
    im->grouped_ok = !(grouped && !strcmp(grouped, "0"));
    im->pin_size = PIN_BYTES;
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(cudaMallocHost(&im->pin[k], im->pin_size));
        CUDA_CHECK(cudaEventCreateWithFlags(&im->pin_ev[k], cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaEventCreateWithFlags(&im->tab_ev, cudaEventDisableTiming));
    CUDA_CHECK(cudaMallocHost((void **)&im->result_host, sizeof(double)));
    CUDA_CHECK(cudaMalloc((void **)&im->counter, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemsetAsync(im->counter, 0, sizeof(unsigned int), im->stream));   // on the compute stream: the legacy stream is not ordered with it
    CUDA_CHECK(cudaEventCreate(&im->t0));
    CUDA_CHECK(cudaEventCreate(&im->t1));
    CUDA_CHECK(cudaEventCreateWithFlags(&im->wait_ev, cudaEventDisableTiming));

    Backend *b = (Backend *)xcalloc(1, sizeof *b);
    b->ops = &cuda_ops;
    b->name = "cuda";
    b->dtype = dtype;
    b->dry = 0;
    b->device_memory = 1;
    b->tf32 = 0;          // exact fp32 GEMMs unless the caller opts in (parity tests need it off)
    b->impl = im;
    b->layer = -1;
    b->phase = PHASE_OTHER;
    b->cuda_device = backend_cuda_device;     // capabilities (backend.h): NCCL on this device and stream,
    b->cuda_stream = backend_cuda_stream;     // a choice of attention kernels; the device's GEMM peak
    b->peak_gflops = cu_peak_for_mfu;         // for MFU (per process: one device each, peak_per_host 0)
    b->peak_per_host = 0;
    b->peak_label = "GPU";
    b->set_attention = backend_cuda_set_attention;
    b->set_wait = cu_set_wait;
    cuda_attention_init(b);
    return b;
}

// The op table's destroy: releases everything backend_cuda() made (after the queued work);
// backend_free() then frees b. Buffers from bk_alloc must have been freed before.
static void cu_destroy(Backend *b) {
    CudaImpl *im = impl_of(b);
    CUDA_CHECK(cudaSetDevice(im->device));
    cuda_wait_stream(b, "the work queued before the back end is destroyed");
    cuda_gemm_free_plans(im);
    cuda_attention_free(b);
    for (int s = 0; s < SCR_COUNT; s++) if (im->scr[s]) CUDA_CHECK(cudaFree(im->scr[s]));
    if (im->rope_cs) CUDA_CHECK(cudaFree(im->rope_cs));
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(cudaFreeHost(im->pin[k]));
        CUDA_CHECK(cudaEventDestroy(im->pin_ev[k]));
    }
    if (im->tab_host) CUDA_CHECK(cudaFreeHost(im->tab_host));
    CUDA_CHECK(cudaEventDestroy(im->tab_ev));
    CUDA_CHECK(cudaFreeHost(im->result_host));
    CUDA_CHECK(cudaFree(im->counter));
    CUDA_CHECK(cudaEventDestroy(im->t0));
    CUDA_CHECK(cudaEventDestroy(im->t1));
    CUDA_CHECK(cudaEventDestroy(im->wait_ev));
    CUBLAS_CHECK(cublasDestroy(im->blas));
    CUBLAS_CHECK(cublasLtDestroy(im->lt));
    CUDA_CHECK(cudaFree(im->lt_ws));
    CUDA_CHECK(cudaStreamDestroy(im->stream));
    free(im);
    b->impl = NULL;
}

extern "C" int backend_cuda_device(const Backend *b) { return ((const CudaImpl *)b->impl)->device; }
extern "C" const char *backend_cuda_device_name(const Backend *b) { return ((const CudaImpl *)b->impl)->prop.name; }
extern "C" void *backend_cuda_stream(const Backend *b) { return (void *)((const CudaImpl *)b->impl)->stream; }

extern "C" void backend_cuda_timer_start(Backend *b) {
    CUDA_CHECK(cudaEventRecord(impl_of(b)->t0, stream_of(b)));
}
extern "C" double backend_cuda_timer_stop(Backend *b) {
    CudaImpl *im = impl_of(b);
    float ms = 0.0f;
    CUDA_CHECK(cudaEventRecord(im->t1, im->stream));
    cuda_wait_event(b, im->t1, "the timed work");
    CUDA_CHECK(cudaEventElapsedTime(&ms, im->t0, im->t1));
    return ms;
}

// ---- the device's peak, for the MFU of a GPU run ------------------------------------------------
// The datasheet's dense peak of the device's part (cuda_peaks.c: the name, the SM count and the
// clock tell SXM, PCIe and NVL apart), or BOOST_GPU_PEAK_TFLOPS.
extern "C" double backend_cuda_peak_gflops(const Backend *b, const char **source) {
    const char *env = getenv("BOOST_GPU_PEAK_TFLOPS");
    if (env && *env) {
        char *end = NULL;
        double t = strtod(env, &end);
        CHECK(end != env && *end == '\0' && t > 0,
              "BOOST_GPU_PEAK_TFLOPS='%s': expected a positive number of TFLOP/s (hint: BOOST_GPU_PEAK_TFLOPS=989.4, or unset it for the datasheet's)", env);
        if (source) *source = "BOOST_GPU_PEAK_TFLOPS";
        return t * 1e3;
    }
    const CudaImpl *im = (const CudaImpl *)b->impl;
    const CudaPart *part = NULL;
    double t = backend_cuda_part_peak(im->prop.name, im->prop.multiProcessorCount, im->clock_mhz, b->dtype,
                                      b->dtype == DT_F32 && b->tf32, &part);
    if (source) *source = part ? part->part : "unknown device";
    return t * 1e3;
}
