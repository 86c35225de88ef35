// emu_cuda.h — a CPU emulator of the part of CUDA, cuBLAS(Lt) and CUB that the CUDA back end
// uses, so that the back end's own sources (src/backend/cuda/*.cu, unchanged) compile with
// g++ and run on a machine without a GPU: `make cuda-emu-test` (mk/cuda.mk) builds them
// against this and runs tests/test_backend_ops.c on the result.
//
// It is a test double, never a back end: it checks the back end's logic — indexing, tile
// and mask arithmetic, barriers, the row-major → column-major GEMM mapping, launch
// configurations — not the hardware. How it models CUDA:
//   * a launch runs its blocks one after another; each block runs blockDim OS threads with
//     __syncthreads / __syncwarp as barriers (a thread that returns leaves them, as on the
//     GPU) and shuffles through a per-warp exchange buffer; a full-mask shuffle in a warp
//     with exited lanes aborts (undefined on the GPU);
//   * dynamic shared memory is a fresh allocation of exactly the launch's size, filled with
//     0xFF bytes (NaN as float and bf16), so reading shared memory that the kernel never
//     wrote shows up as NaN; a launch asking for more than 48 KiB fails unless
//     cudaFuncSetAttribute raised the kernel's limit, and more than an A100's 163 KiB fails;
//   * wmma fragments hold the whole 16x16 tile in every lane; loads, stores and mma first
//     wait for every lane of the warp (CUDA: "waits until all warp lanes have arrived");
//     loads check the 256-bit alignment and ldm rules; mma accumulates in fp32; a store is
//     done by lane 0 (other lanes see it only after a __syncwarp, as on the GPU);
//   * cuBLASLt / cuBLAS GEMMs are a plain fp32-accumulating loop that first checks that the
//     layouts agree with the operation (and each pointer with the alignment the heuristic
//     was promised); TF32 compute rounds the inputs to TF32;
//   * CUB's radix sort is a stable sort on the key bits asked for;
//   * "device" memory is host memory, but the emulator keeps a table of what cudaMalloc
//     (device) and cudaMallocHost (page-locked host) returned, and every API that wants
//     device memory refuses anything else, naming the call and the argument: copies by their
//     kind (HostToDevice: the source is host memory, the destination device memory, ...),
//     memsets, kernel pointer arguments (page-locked host memory is accepted there, as with
//     UVA), cuBLASLt / cuBLAS operands (and the device tables of grouped GEMMs), CUB; the
//     error is returned (cudaErrorInvalidDevicePointer, or the launch's cudaGetLastError), so
//     the back end's CUDA_CHECK names the line of the call. cudaFree takes only what cudaMalloc
//     returned, cudaFreeHost what cudaMallocHost returned;
//   * asynchronous work runs asynchronously: every stream (and the legacy stream 0, which is
//     not ordered with the non-blocking streams) has a worker thread that runs its queue in
//     order — launches, copies, memsets, GEMMs, sorts, event records — while the host goes
//     on; cudaStreamSynchronize / cudaEventSynchronize / cudaStreamWaitEvent /
//     cudaDeviceSynchronize wait for what they name. So a missing stream or event dependency
//     (a host read before the copy completed, a pinned buffer refilled while a copy still
//     reads it, work on the legacy stream) shows up as a wrong result or a sanitizer report.
//     As CUDA: a copy from pageable host memory takes its source at the call; a copy into
//     pageable host memory returns when it is complete; cudaFree waits for the device;
//     events read a wall clock when the stream reaches them, and cudaEventElapsedTime of an
//     event not yet reached is cudaErrorNotReady.
// Build it with -fsanitize=address (out-of-bounds accesses) or -fsanitize=thread (missing
// barriers: shared-memory races between the threads of a block; host/stream races).
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <math.h>
#include <vector>
#include "emu_runtime.h"

#define BOOST_CUDA_EMU 1

// ---- qualifiers ---------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static

// ---- runtime types (the C part: emu_runtime.h) --------------------------------------------------
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct float2 { float x, y; };
static inline float2 make_float2(float x, float y) { return float2{ x, y }; }

// ---- the emulator's state ------------------------------------------------------------------------
namespace emu {
enum { SMEM_DEFAULT = 48 * 1024, SMEM_OPTIN = 166912 };   // the A100's opt-in limit
struct Block {
    std::barrier<> *bar;
    std::barrier<> *warp_bar[32];
    uint64_t shfl[32][32];
    std::atomic<int> live[32];
    int size[32];
    unsigned char *dyn;
};
extern thread_local Block *t_block;
extern thread_local int t_lane, t_warp;
void set_error(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void set_smem_limit(const void *kernel, int bytes);
[[noreturn]] void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double now_ms();

// ---- address spaces: every cudaMalloc'd range is device memory, every cudaMallocHost'd range
// page-locked host memory (addressable by kernels, as with UVA); anything else is plain host
// memory, which no device API accepts where it wants device memory.
enum Space { SPACE_HOST = 0, SPACE_DEVICE = 1, SPACE_PINNED = 2 };
Space space_of(const void *p);
const char *space_name(Space s);
// 1 if p is device memory; else records the error (cudaErrorInvalidDevicePointer) with a
// message naming the call (what) and the argument (arg), and returns 0.
int want_device(const void *p, const char *what, const char *arg);

// ---- streams: each stream has a worker thread that runs its queued work in order; the host
// returns from an asynchronous call at once (emu_cuda.h's header comment).
void enqueue(cudaStream_t s, std::function<void()> work);

// A launch: the configuration is checked at once (the error is the next cudaGetLastError,
// as on the GPU); the blocks run later, on the stream's worker.
int launch_ok(const char *file, int line, const char *kernel_name, dim3 g, dim3 b, size_t smem, const void *kernel);
void run_grid(dim3 g, dim3 b, size_t smem, const std::function<void()> &body);
void check_kernel_pointer(const char *file, int line, const char *kernel_name, int i, const void *p);
template <typename A>
static inline void check_kernel_arg(const char *file, int line, const char *kernel_name, int i, const A &a) {
    if constexpr (std::is_pointer_v<A>) check_kernel_pointer(file, line, kernel_name, i, (const void *)a);
}
template <typename K>
auto launch(const char *file, int line, const char *kernel_name, dim3 g, dim3 b, size_t smem, cudaStream_t s, K k) {
    return [=](auto... args) {
        if (!launch_ok(file, line, kernel_name, g, b, smem, reinterpret_cast<const void *>(k))) return;
        int i = 0;
        (check_kernel_arg(file, line, kernel_name, i++, args), ...);
        enqueue(s, [=]() { run_grid(g, b, smem, [&]() { k(args...); }); });
    };
}
static inline unsigned char *dyn_smem() { return t_block->dyn; }
}   // namespace emu

extern thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#define LAUNCH(grid, block, smem, stream, ...) \
    emu::launch(__FILE__, __LINE__, #__VA_ARGS__, dim3(grid), dim3(block), (size_t)(smem), (stream), __VA_ARGS__)
#define DYN_SMEM(name) unsigned char *name = emu::dyn_smem()

// ---- device intrinsics ------------------------------------------------------------------------------
static inline void __syncthreads() { emu::t_block->bar->arrive_and_wait(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)mask; emu::t_block->warp_bar[emu::t_warp]->arrive_and_wait(); }
template <typename T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    (void)width;
    emu::Block *b = emu::t_block;
    int w = emu::t_warp, lane = emu::t_lane;
    if (mask == 0xffffffffu && b->live[w].load() != 32)
        emu::fail("__shfl_xor_sync with a full mask in warp %d, which has %d live lanes", w, b->live[w].load());
    memcpy(&b->shfl[w][lane], &v, sizeof v);
    b->warp_bar[w]->arrive_and_wait();
    T r;
    memcpy(&r, &b->shfl[w][lane ^ lane_mask], sizeof r);
    b->warp_bar[w]->arrive_and_wait();
    return r;
}
unsigned atomicAdd(unsigned *p, unsigned v);
// (a lock, not std::atomic_thread_fence, which ThreadSanitizer does not model)
void __threadfence();
template <typename T> static inline T __ldcg(const T *p) { __threadfence(); return *p; }
template <typename A, typename B> static inline auto min(A a, B b) { return a < b ? a : b; }
template <typename A, typename B> static inline auto max(A a, B b) { return a < b ? b : a; }

// ---- bf16 ---------------------------------------------------------------------------------------------
struct __nv_bfloat16 { uint16_t x; };
static inline float __bfloat162float(__nv_bfloat16 h) { uint32_t u = (uint32_t)h.x << 16; float f; memcpy(&f, &u, 4); return f; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{ (uint16_t)((u >> 16) | 0x40) };
    u += 0x7fffu + ((u >> 16) & 1u);
    return __nv_bfloat16{ (uint16_t)(u >> 16) };
}
// (through fp32: may round twice; the back end's tests do not cast from fp64)
static inline __nv_bfloat16 __double2bfloat16(double d) { return __float2bfloat16_rn((float)d); }

// ---- runtime API (declared with C linkage in emu_runtime.h) ----------------------------------------
template <typename T> static inline cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
template <typename T> static inline cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMallocHost((void **)p, n); }
template <typename K>
static inline cudaError_t cudaFuncSetAttribute(K kernel, cudaFuncAttribute a, int v) {
    if (a != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    if (v > emu::SMEM_OPTIN) return cudaErrorInvalidValue;
    emu::set_smem_limit(reinterpret_cast<const void *>(kernel), v);
    return cudaSuccess;
}

// ---- wmma ------------------------------------------------------------------------------------------------
namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment { float x[16][16]; };

static inline float as_float(float v) { return v; }
static inline float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
static inline void check_ptr(const void *p, unsigned ldm, size_t esize, const char *what) {
    __syncwarp();                 // every lane has arrived
    if ((uintptr_t)p % 32) emu::fail("wmma::%s: pointer %p is not 256-bit aligned", what, p);
    if ((ldm * esize) % 16) emu::fail("wmma::%s: ldm %u is not a multiple of 16 bytes", what, ldm);
}
template <typename Use, typename T, typename L>
static inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p, unsigned ldm) {
    check_ptr(p, ldm, sizeof(T), "load_matrix_sync");
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.x[r][c] = as_float(std::is_same<L, col_major>::value ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c]);
}
static inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p, unsigned ldm, layout_t l) {
    check_ptr(p, ldm, sizeof(float), "load_matrix_sync");
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) f.x[r][c] = l == mem_col_major ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c];
}
static inline void fill_fragment(fragment<accumulator, 16, 16, 16, float> &f, float v) {
    for (int r = 0; r < 16; r++) for (int c = 0; c < 16; c++) f.x[r][c] = v;
}
template <typename T, typename LA, typename LB>
static inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d, const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                            const fragment<matrix_b, 16, 16, 16, T, LB> &b, const fragment<accumulator, 16, 16, 16, float> &c) {
    __syncwarp();
    float out[16][16];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            float s = c.x[i][j];
            for (int k = 0; k < 16; k++) s += a.x[i][k] * b.x[k][j];
            out[i][j] = s;
        }
    memcpy(d.x, out, sizeof out);
}
static inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f, unsigned ldm, layout_t l) {
    check_ptr(p, ldm, sizeof(float), "store_matrix_sync");
    if (emu::t_lane != 0) return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) {
            if (l == mem_col_major) p[(size_t)c * ldm + r] = f.x[r][c];
            else p[(size_t)r * ldm + c] = f.x[r][c];
        }
}
}   // namespace wmma
}   // namespace nvcuda

// ---- cuBLAS and cuBLASLt -----------------------------------------------------------------------------
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13, CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 } cudaDataType_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0 } cublasMath_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum {
    CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4, CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,
} cublasLtMatmulDescAttributes_t;
// Epilogues: DEFAULT and BIAS (D += bias[row], bias of D's rows, packed) are emulated; the
// others are refused (CUBLAS_STATUS_NOT_SUPPORTED) rather than run wrongly.
typedef enum { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_RELU = 2, CUBLASLT_EPILOGUE_BIAS = 4,
               CUBLASLT_EPILOGUE_GELU = 32 } cublasLtEpilogue_t;
typedef enum {
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
} cublasLtMatmulPreferenceAttributes_t;
enum { CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2 };
struct cublasContext { cudaStream_t stream; };
struct cublasLtContext { int unused; };
struct EmuLtDesc {
    cublasComputeType_t compute; cudaDataType_t scale; cublasOperation_t ta, tb;
    cublasLtEpilogue_t epilogue; const void *bias; int32_t bias_type;   // bias_type -1: D's type
};
struct EmuLtLayout { cudaDataType_t type; uint64_t rows, cols; int64_t ld; };
struct EmuLtPref { uint32_t align[4]; };
typedef cublasContext *cublasHandle_t;
typedef cublasLtContext *cublasLtHandle_t;
typedef EmuLtDesc *cublasLtMatmulDesc_t;
typedef EmuLtLayout *cublasLtMatrixLayout_t;
typedef EmuLtPref *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct { cublasLtMatmulAlgo_t algo; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]; } cublasLtMatmulHeuristicResult_t;

const char *cublasGetStatusString(cublasStatus_t s);
const char *cublasGetStatusName(cublasStatus_t s);
cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m);
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t scale);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *buf, size_t n);
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t p, int requested, cublasLtMatmulHeuristicResult_t *res, int *found);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
                              const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc,
                              void *D, cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsn, cudaStream_t s);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
                            void *C, cudaDataType_t ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmGroupedBatchedEx(cublasHandle_t h, const cublasOperation_t ta[], const cublasOperation_t tb[],
                                          const int m[], const int n[], const int k[], const void *alpha, const void *const A[],
                                          cudaDataType_t at, const int lda[], const void *const B[], cudaDataType_t bt,
                                          const int ldb[], const void *beta, void *const C[], cudaDataType_t ct, const int ldc[],
                                          int group_count, const int group_size[], cublasComputeType_t compute);

// ---- CUB --------------------------------------------------------------------------------------------------
namespace cub {
struct DeviceRadixSort {
    template <typename K, typename V>
    static cudaError_t SortPairs(void *tmp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, int n,
                                 int begin_bit = 0, int end_bit = (int)sizeof(K) * 8, cudaStream_t s = 0) {
        if (!tmp) { bytes = 64; return cudaSuccess; }
        const void *ptrs[5] = { tmp, kin, kout, vin, vout };
        static const char *const names[5] = { "d_temp_storage", "d_keys_in", "d_keys_out", "d_values_in", "d_values_out" };
        for (int i = 0; i < 5; i++)
            if (!emu::want_device(ptrs[i], "cub::DeviceRadixSort::SortPairs", names[i])) return cudaErrorInvalidDevicePointer;
        emu::enqueue(s, [=]() {
            int nb = end_bit - begin_bit;
            uint64_t mask = nb >= 64 ? ~0ull : ((1ull << nb) - 1);
            auto bits = [&](int i) { return ((uint64_t)(std::make_unsigned_t<K>)kin[i] >> begin_bit) & mask; };
            std::vector<int> idx((size_t)n);
            for (int i = 0; i < n; i++) idx[(size_t)i] = i;
            std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return bits(a) < bits(b); });
            std::vector<K> ko((size_t)n);
            std::vector<V> vo((size_t)n);
            for (int i = 0; i < n; i++) { ko[(size_t)i] = kin[idx[(size_t)i]]; vo[(size_t)i] = vin[idx[(size_t)i]]; }
            std::copy(ko.begin(), ko.end(), kout);
            std::copy(vo.begin(), vo.end(), vout);
        });
        return cudaSuccess;
    }
};
}   // namespace cub
