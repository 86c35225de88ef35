// cuda_common.cuh — what every file of the CUDA back end shares: checked calls, the
// back end's private state (CudaImpl), the compute-dtype helpers (load as fp32, store with
// round-to-nearest-even), warp/block reductions, scratch buffers and table uploads, and
// the entry points each .cu file implements for the op table (cuda_backend.cu).
//
// Precision rules (docs/gpu.md, "The CUDA back end"): tensors are T = float or
// __nv_bfloat16 (the back end's compute dtype); every kernel loads T, computes in fp32 and
// rounds once when it stores T. Statistics (rstd, lse, lmax, gmax) are fp32, sumexp and
// tlogit double, reductions that feed them accumulate in fp32 (double where the CPU
// reference does and the cost is nil).
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <stdint.h>
#include <stddef.h>

extern "C" {
#include "../backend.h"
#include "../../core/check.h"
#include "cuda_backend.h"
#include "cuda_peaks.h"
}

enum { ATTN_SHAPES_MAX = 32 };   // attention shapes whose choice a back end records (then one line says "more")
typedef __nv_bfloat16 bf16;

// ---- checked calls: file:line, the call, the library's own error text --------------------
#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) \
    die_at(__FILE__, __LINE__, "%s failed: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); } while (0)
#define CUBLAS_CHECK(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) \
    die_at(__FILE__, __LINE__, "%s failed: %s (%s)", #call, cublasGetStatusString(s_), cublasGetStatusName(s_)); } while (0)
// After every kernel launch: a bad launch configuration is reported here, at its line.
// Faults inside a kernel surface at the next synchronising call (usually the loss's), so they
// would be blamed on the wrong op; the debug mode BOOST_CUDA_DEBUG=1 (docs/gpu.md) waits for
// the device after every launch and names the op (its function, file and line) whose kernel
// failed. Off by default: it serialises the host with the device.
int cuda_debug_sync(void);   // cuda_backend.cu: BOOST_CUDA_DEBUG, read once
#define LAUNCH_CHECK() do { CUDA_CHECK(cudaGetLastError()); \
    if (cuda_debug_sync()) { cudaError_t e_d_ = cudaDeviceSynchronize(); \
        if (e_d_ == cudaSuccess) e_d_ = cudaGetLastError(); \
        if (e_d_ != cudaSuccess) die_at(__FILE__, __LINE__, "the kernel of op %s failed: %s (%s) " \
            "(BOOST_CUDA_DEBUG=1: every launch is synchronised and checked)", __func__, \
            cudaGetErrorString(e_d_), cudaGetErrorName(e_d_)); } } while (0)

// ---- the back end's private state ----------------------------------------------------------
// Scratch buffers owned by the back end (not counted in Backend.mem: they are op workspaces
// of a few MB; the dry back end's report accounts working sets separately). One slot per
// use so that an op can hold several at once.
enum {
    SCR_TABLE,      // device copy of a host table (multi-tensor spans, grouped-GEMM pointers)
    SCR_PART,       // per-block partial sums (column reductions)
    SCR_ROWS,       // per-row fp32 factors (rstd from S, ...)
    SCR_ATT_D,      // attention backward: D = rowsum(dout ⊙ out) [B,H,T]
    SCR_SORT,       // embedding backward: keys, positions and CUB's temporary storage
    SCR_COUNT
};

struct GemmPlan;    // cuda_gemm.cu

struct CudaImpl {
    int device;
    cudaDeviceProp prop;
    int clock_mhz;                  // the SM clock's maximum (cudaDevAttrClockRate), for the peak's part
    int smem_optin;                 // max dynamic shared memory per block (bytes)
    cudaStream_t stream;
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    void *lt_ws; size_t lt_ws_size; // cuBLASLt (and cuBLAS) workspace
    // GEMM plans cached per shape (cuda_gemm.cu)
    GemmPlan *plans; int nplans, cap_plans;
    int grouped_ok;                 // 1 until cublasGemmGroupedBatchedEx says NOT_SUPPORTED
    // host<->device transfers: two pinned staging buffers, each guarded by an event
    void *pin[2]; size_t pin_size; cudaEvent_t pin_ev[2];
    // host tables uploaded for one launch (pinned, guarded by an event)
    void *tab_host; size_t tab_host_size; cudaEvent_t tab_ev;
    // device scratch
    void *scr[SCR_COUNT]; size_t scr_size[SCR_COUNT];
    // small pinned result slot (double reductions returned to the host)
    double *result_host;
    unsigned int *counter;          // device: last-block-done counter (sumsq_multi), kept 0
    // RoPE cos/sin table [T, hd/2] (float2), rebuilt when (T, hd, theta) change
    float2 *rope_cs; int rope_T, rope_hd; float rope_theta; size_t rope_cap;
    // attention (cuda_attention.cu): the CudaAttention mode, cuDNN's availability (-1 not yet
    // asked), and which one-time notes were printed
    int attn_mode, attn_cudnn_ok; char attn_cudnn_why[512]; const char *attn_used;
    // which attention ran for each direction and shape met so far (cuda_attention.cu): said once
    // on stderr and kept as a note for the run's record (Backend.take_note)
    struct { int backward, B, T, H, Hkv, hd; } attn_seen[ATTN_SHAPES_MAX];
    char *attn_notes[ATTN_SHAPES_MAX + 1];
    int n_attn_seen, n_attn_notes, n_attn_taken;
    // timer (backend_cuda_timer_*)
    cudaEvent_t t0, t1;
    // how the host waits for the stream (Backend.set_wait): NULL = the driver's blocking wait;
    // else an event recorded on the stream is handed to wait (the NCCL back end's polling)
    void (*wait)(void *ctx, void *event, const char *what);
    void *wait_ctx;
    cudaEvent_t wait_ev;
};

static inline CudaImpl *impl_of(Backend *b) { return (CudaImpl *)b->impl; }
static inline cudaStream_t stream_of(Backend *b) { return impl_of(b)->stream; }

// The host waits until the stream has run everything queued so far (cuda_wait_stream), or
// until event e has completed (cuda_wait_event): through the wait hook when one is set
// (Backend.set_wait: polled, with a timeout, when NCCL shares the stream), else blocking in
// the driver. `what` names the wait in the hook's error ("a copy to the host", ...).
void cuda_wait_stream(Backend *b, const char *what);
void cuda_wait_event(Backend *b, cudaEvent_t e, const char *what);

// Device scratch of at least `bytes` in slot `slot` (grows; growing waits for the stream,
// so no queued kernel still uses the old buffer).
void *cuda_scratch(Backend *b, int slot, size_t bytes);
// Copies a host table of `bytes` to device scratch SCR_TABLE through pinned memory, in
// stream order; returns the device pointer. The host table may be reused on return.
void *cuda_upload_table(Backend *b, const void *host, size_t bytes);

// ---- compute-dtype helpers --------------------------------------------------------------------
__device__ __forceinline__ float ldf(float x) { return x; }
__device__ __forceinline__ float ldf(bf16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T stf(float x);
template <> __device__ __forceinline__ float stf<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 stf<bf16>(float x) { return __float2bfloat16_rn(x); }   // RNE

// Every launch is written LAUNCH(grid, block, smem, stream, kernel)(args...), which is
// kernel<<<grid, block, smem, stream>>>(args...), and a kernel's dynamic shared memory is
// DYN_SMEM(name): the CPU emulator (emu/, `make cuda-emu-test`) defines both its own way
// and runs these same sources.
#ifndef LAUNCH
#define LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<(grid), (block), (smem), (stream)>>>
#endif
#ifndef DYN_SMEM
#define DYN_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif

// Raises `kernel`'s dynamic shared memory limit to `bytes` (launches above 48 KiB need it);
// more than the device allows is an error naming `what`.
template <typename K>
static void cuda_set_smem(Backend *b, K kernel, size_t bytes, const char *what) {
    CudaImpl *im = impl_of(b);
    if ((int)bytes > im->smem_optin)
        die_at(__FILE__, __LINE__, "%s needs %zu bytes of shared memory per block; device %d (%s) allows %d",
               what, bytes, im->device, im->prop.name, im->smem_optin);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

// Launch helper: kernel<T> for the back end's dtype. Usage:
//   DISPATCH(b->dtype, T, (my_kernel<T><<<g, t, 0, s>>>(...)));
#define DISPATCH(dtype, T, ...) do { \
    if ((dtype) == DT_BF16) { typedef bf16 T; __VA_ARGS__; } \
    else if ((dtype) == DT_F32) { typedef float T; __VA_ARGS__; } \
    else die_at(__FILE__, __LINE__, "cuda back end: compute dtype %s is not fp32 or bf16", dtype_name(dtype)); \
    LAUNCH_CHECK(); } while (0)

// Grid size for a grid-stride loop over n elements with `threads` per block.
static inline unsigned grid_for(size_t n, int threads) {
    size_t g = (n + (size_t)threads - 1) / (size_t)threads;
    if (g < 1) g = 1;
    if (g > 65535u * 32u) g = 65535u * 32u;    // the loops stride; more blocks buy nothing
    return (unsigned)g;
}

// Elementwise work over rows: blocks of 32 columns (a warp, coalesced) × 8 rows, the columns
// strided by gridDim.x·32 and the rows by gridDim.y·8 — a row and a column index per thread
// with no division per element (a flat loop over N·d divides a 64-bit index by d each time).
enum { RC_COLS = 32, RC_ROWS = 8 };
static inline dim3 rc_block() { return dim3(RC_COLS, RC_ROWS); }
static inline dim3 rc_grid(int N, int cols) {
    unsigned gx = (unsigned)((cols + RC_COLS - 1) / RC_COLS), gy = (unsigned)((N + RC_ROWS - 1) / RC_ROWS);
    return dim3(gx < 1 ? 1 : gx > 16 ? 16 : gx, gy < 1 ? 1 : gy > 65535 ? 65535 : gy);
}
// The row and column loops of such a kernel (n over N rows, j over `cols` columns).
#define RC_ROWS_LOOP(n, N) for (int n = blockIdx.y * RC_ROWS + threadIdx.y; n < (N); n += gridDim.y * RC_ROWS)
#define RC_COLS_LOOP(j, cols) for (int j = blockIdx.x * RC_COLS + threadIdx.x; j < (cols); j += gridDim.x * RC_COLS)

// ---- reductions --------------------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. `sh` is __shared__ double[32]. The order is fixed: deterministic.
__device__ __forceinline__ double block_sum_d(double v, double *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum_d(v);
    __syncthreads();                 // sh may still be read from a previous call
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : 0.0;
    return warp_sum_d(v);
}

// ---- the op table's entries, by file ------------------------------------------------------------
// cuda_gemm.cu
void cuda_gemm(Backend *b, const GemmArgs *g);
void cuda_gemm_group(Backend *b, int count, const GemmArgs *g);
void cuda_gemm_free_plans(CudaImpl *im);
// D[M,N] (row stride ldd) = alpha·op(A)·op(B) + beta·C (+ bias[N] added to every row when
// bias != NULL), one rounding of D: cuBLASLt with D ≠ C and the BIAS epilogue. D may be C
// (with ldd == ldc) or must not overlap it (when beta ≠ 0). All in the compute dtype.
void cuda_gemm_into(Backend *b, const GemmArgs *g, void *D, int ldd, const void *bias);
// The op table's gemm_into: cuda_gemm_into without a bias
void cuda_gemm_to(Backend *b, const GemmArgs *g, void *D, int ldd);
// cuda_norm.cu
void cuda_rmsnorm_forward(Backend *b, void *y, float *rstd, const void *x, const void *gamma, int N, int d, float eps);
void cuda_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *dy, const void *x,
                           const void *gamma, const float *rstd, int N, int d, int acc_dx, int acc_dgamma);
void cuda_rowsumsq(Backend *b, void *S, const void *x, int N, int d);
void cuda_rownorm(Backend *b, void *y, const void *x, const void *gamma, const void *S, int N, int d, int width, float eps);
void cuda_scale_rows(Backend *b, void *P, const SlotView *v, const void *S, int width, float eps, int power);
void cuda_rowdot(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v);
void cuda_sharded_rmsnorm_backward(Backend *b, void *dx, void *dgamma, const void *da, const void *x,
                                   const void *gamma, const void *S, const float *dot, int N, int d,
                                   int d_full, float eps, int acc_dgamma);
// cuda_elementwise.cu
void cuda_cast(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n);
void cuda_add2d(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols);
void cuda_silu_forward(Backend *b, void *y, const void *x, size_t n);
void cuda_silu_backward(Backend *b, void *dx, const void *dy, const void *x, size_t n);
void cuda_swiglu_forward(Backend *b, void *z, const void *g, const void *u, size_t n, int gate_silu);
void cuda_swiglu_backward(Backend *b, void *dg, void *du, const void *dz, const void *g, const void *u,
                          size_t n, int gate_silu);
void cuda_add(Backend *b, void *x, const void *y, size_t n);
void cuda_scale(Backend *b, void *x, float s, size_t n);
void cuda_rope(Backend *b, void *x, int B, int T, int H, int hd, float theta, int inverse);
// cuda_attention.cu
void cuda_attention_forward(Backend *b, void *out, float *lse, const void *q, const void *k, const void *v,
                            int B, int T, int H, int Hkv, int hd);
void cuda_attention_init(Backend *b);   // the mode from BOOST_CUDA_ATTENTION (default auto); Backend.take_note
void cuda_attention_free(Backend *b);   // the recorded decisions' memory
void cuda_attention_backward(Backend *b, void *dq, void *dk, void *dv, const void *dout, const void *out,
                             const void *q, const void *k, const void *v, const float *lse,
                             int B, int T, int H, int Hkv, int hd);
// cuda_vocab.cu
void cuda_embedding_forward(Backend *b, void *out, const int32_t *tokens, const void *wte, int N, int d, int v0, int V);
void cuda_embedding_backward(Backend *b, void *dwte, const void *dout, const int32_t *tokens, int N, int d, int v0, int V,
                             int acc, const unsigned char *nz);
void cuda_xent_forward(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                       const int32_t *targets, int N, int V, int v0);
void cuda_xent_rescale(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N);
void cuda_xent_loss(Backend *b, double *loss, float *losses, const double *sumexp, const float *gmax, const double *tlogit,
                    int N, int accumulate);
void cuda_xent_backward(Backend *b, void *dlogits, const void *logits, const float *gmax, const double *sumexp,
                        const int32_t *targets, int N, int V, int v0, float scale);
void cuda_xent_fused(Backend *b, void *dlogits, float *lmax, double *sumexp, double *tlogit, const void *logits,
                     const int32_t *targets, int N, int V, int v0, float scale);
// cuda_optim.cu
double cuda_sumsq_multi(Backend *b, int n, const void *const *x, const size_t *len, const double *w,
                        const SumsqLive *live);
void cuda_adamw_multi(Backend *b, int n, const AdamWSpan *spans, const AdamWHyper *h);
