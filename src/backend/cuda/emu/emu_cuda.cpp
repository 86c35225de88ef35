// emu_cuda.cpp — the CPU emulator's runtime (emu_cuda.h says what it models and why).
#include "emu_cuda.h"
#include <map>
#include <mutex>
#include <stdarg.h>
#include <thread>

thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {
thread_local Block *t_block;
thread_local int t_lane, t_warp;

static std::mutex mu;                         // the emulator's globals
static cudaError_t last_error = cudaSuccess;
static std::map<const void *, int> smem_limit;

void fail(const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "cuda emulator: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

void set_error(cudaError_t e, const char *what) {
    std::lock_guard<std::mutex> g(mu);
    fprintf(stderr, "cuda emulator: %s\n", what);
    if (last_error == cudaSuccess) last_error = e;
}

void set_smem_limit(const void *kernel, int bytes) {
    std::lock_guard<std::mutex> g(mu);
    smem_limit[kernel] = bytes;
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void run_grid(dim3 g, dim3 b, size_t smem, const void *kernel, const std::function<void()> &body) {
    unsigned nt = b.x * b.y * b.z;
    if (nt == 0 || nt > 1024 || b.z > 64) { set_error(cudaErrorInvalidConfiguration, "launch: bad block size"); return; }
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.y > 65535 || g.z > 65535) {
        set_error(cudaErrorInvalidConfiguration, "launch: bad grid size");
        return;
    }
    int limit = SMEM_DEFAULT;
    {
        std::lock_guard<std::mutex> l(mu);
        auto it = smem_limit.find(kernel);
        if (it != smem_limit.end()) limit = it->second;
    }
    if (smem > (size_t)limit) {
        char msg[160];
        snprintf(msg, sizeof msg, "launch: %zu bytes of dynamic shared memory, the kernel's limit is %d", smem, limit);
        set_error(cudaErrorInvalidValue, msg);
        return;
    }
    // One OS thread per CUDA thread of a block, reused for every block of the launch: thread 0
    // makes each block's barriers between two launch-wide barriers.
    size_t nblocks = (size_t)g.x * g.y * g.z;
    size_t dyn_bytes = (smem + 127) / 128 * 128;
    int nw = (int)((nt + 31) / 32);
    Block blk;
    blk.dyn = dyn_bytes ? (unsigned char *)aligned_alloc(128, dyn_bytes) : NULL;
    auto setup = [&]() {
        blk.bar = new std::barrier<>((std::ptrdiff_t)nt);
        for (int w = 0; w < nw; w++) {
            blk.size[w] = (int)std::min(32u, nt - 32u * (unsigned)w);
            blk.warp_bar[w] = new std::barrier<>(blk.size[w]);
            blk.live[w] = blk.size[w];
        }
        if (blk.dyn) memset(blk.dyn, 0xFF, dyn_bytes);        // NaN until written
    };
    auto teardown = [&]() {
        for (int w = 0; w < nw; w++) delete blk.warp_bar[w];
        delete blk.bar;
    };
    setup();
    std::barrier<> between((std::ptrdiff_t)nt);
    std::vector<std::thread> th;
    th.reserve(nt);
    for (unsigned t = 0; t < nt; t++) {
        th.emplace_back([&, t]() {
            threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
            blockDim = b;
            gridDim = g;
            t_block = &blk;
            t_warp = (int)(t / 32);
            t_lane = (int)(t % 32);
            for (size_t bi = 0; bi < nblocks; bi++) {
                blockIdx = dim3((unsigned)(bi % g.x), (unsigned)((bi / g.x) % g.y), (unsigned)(bi / ((size_t)g.x * g.y)));
                body();
                blk.live[t_warp]--;                     // an exited thread leaves the barriers
                blk.warp_bar[t_warp]->arrive_and_drop();
                blk.bar->arrive_and_drop();
                between.arrive_and_wait();              // every thread is done with this block
                if (t == 0) { teardown(); if (bi + 1 < nblocks) setup(); }
                between.arrive_and_wait();              // the next block's barriers exist
            }
        });
    }
    for (auto &x : th) x.join();
    free(blk.dyn);
}
}   // namespace emu

void __threadfence() { std::lock_guard<std::mutex> g(emu::mu); }

unsigned atomicAdd(unsigned *p, unsigned v) {
    std::lock_guard<std::mutex> g(emu::mu);
    unsigned old = *p;
    *p = old + v;
    return old;
}

// ---- runtime API ----------------------------------------------------------------------------------
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    default: return "unspecified launch failure";
    }
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    default: return "cudaErrorLaunchFailure";
    }
}
cudaError_t cudaGetLastError(void) {
    std::lock_guard<std::mutex> g(emu::mu);
    cudaError_t e = emu::last_error;
    emu::last_error = cudaSuccess;
    return e;
}
cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev) {
    if (dev != 0) return cudaErrorInvalidValue;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CPU emulator (src/backend/cuda/emu)");
    p->major = 8; p->minor = 0; p->multiProcessorCount = 2; p->totalGlobalMem = (size_t)8 << 30;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev) {
    (void)dev;
    if (a != cudaDevAttrMaxSharedMemoryPerBlockOptin) return cudaErrorInvalidValue;
    *v = emu::SMEM_OPTIN;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaMalloc(void **p, size_t n) {
    *p = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xFF, (n + 255) / 256 * 256);       // garbage, as on the device
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMallocHost(void **p, size_t n) { *p = aligned_alloc(256, (n + 255) / 256 * 256); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMemGetInfo(size_t *free_, size_t *total) { *free_ = (size_t)4 << 30; *total = (size_t)8 << 30; return cudaSuccess; }
cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t) { memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind, cudaStream_t) {
    if (dp < w || sp < w) return cudaErrorInvalidValue;
    for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w);
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = new CUstream_st{ 1 }; return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { delete s; return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new CUevent_st{ 0 }; return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) { e->t = emu::now_ms(); return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { *ms = (float)(b->t - a->t); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }

// ---- cuBLAS / cuBLASLt ------------------------------------------------------------------------------
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "the GPU program failed to execute";
    }
}
const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_EXECUTION_FAILED";
    }
}
cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = new cublasContext{ NULL }; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy(cublasHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) { h->stream = s; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { *h = new cublasLtContext{ 0 }; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t scale) {
    *d = new EmuLtDesc{ c, scale, CUBLAS_OP_N, CUBLAS_OP_N };
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { delete d; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n) {
    if (n != sizeof(cublasOperation_t)) return CUBLAS_STATUS_INVALID_VALUE;
    if (a == CUBLASLT_MATMUL_DESC_TRANSA) memcpy(&d->ta, buf, n);
    else if (a == CUBLASLT_MATMUL_DESC_TRANSB) memcpy(&d->tb, buf, n);
    else return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld) {
    if (ld < (int64_t)rows || ld < 1) return CUBLAS_STATUS_INVALID_VALUE;    // column-major: ld >= rows
    *l = new EmuLtLayout{ t, rows, cols, ld };
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { delete l; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) { *p = new EmuLtPref{ { 256, 256, 256, 256 } }; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { delete p; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *buf, size_t n) {
    if (a >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) {
        if (n != 4) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&p->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, 4);
    }
    return CUBLAS_STATUS_SUCCESS;
}
// EMU_NO_LT_ALGO=1: the heuristic finds nothing (the back end's cublasGemmEx path)
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t p,
                                              int requested, cublasLtMatmulHeuristicResult_t *res, int *found) {
    const char *no = getenv("EMU_NO_LT_ALGO");
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    if (no && !strcmp(no, "1")) { *found = 0; return CUBLAS_STATUS_NOT_SUPPORTED; }
    memset(res, 0, sizeof *res);
    for (int i = 0; i < 4; i++) res->algo.data[i] = p->align[i];      // the algorithm relies on these
    res->state = CUBLAS_STATUS_SUCCESS;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

static float tf32(float x) {
    uint32_t u; memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) { u += 0xfffu + ((u >> 13) & 1u); u &= ~0x1fffu; }
    memcpy(&x, &u, 4);
    return x;
}
static float load(const void *p, cudaDataType_t t, size_t i) {
    return t == CUDA_R_16BF ? __bfloat162float(((const __nv_bfloat16 *)p)[i]) : ((const float *)p)[i];
}
static void store(void *p, cudaDataType_t t, size_t i, float v) {
    if (t == CUDA_R_16BF) ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    else ((float *)p)[i] = v;
}
// Column-major C[m,n] = alpha·op(A)[m,k]·op(B)[k,n] + beta·C, fp32 accumulation (beta = 0: C not read).
static void gemm_cm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const void *A, cudaDataType_t at, long lda, const void *B, cudaDataType_t bt, long ldb,
                    float beta, void *C, cudaDataType_t ct, long ldc, cublasComputeType_t compute) {
    int t32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32 && at == CUDA_R_32F;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float acc = 0.0f;
            for (int p = 0; p < k; p++) {
                float a = load(A, at, ta == CUBLAS_OP_N ? (size_t)i + (size_t)p * lda : (size_t)p + (size_t)i * lda);
                float b = load(B, bt, tb == CUBLAS_OP_N ? (size_t)p + (size_t)j * ldb : (size_t)j + (size_t)p * ldb);
                if (t32) { a = tf32(a); b = tf32(b); }
                acc += a * b;
            }
            size_t ci = (size_t)i + (size_t)j * ldc;
            float v = alpha * acc;
            if (beta != 0.0f) v += beta * load(C, ct, ci);
            store(C, ct, ci, v);
        }
}
static unsigned alignment_of(const void *p) { unsigned a = 256; while (a > 1 && (uintptr_t)p % a) a >>= 1; return a; }

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
                              const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc,
                              void *D, cublasLtMatrixLayout_t ldd, const cublasLtMatmulAlgo_t *algo, void *, size_t, cudaStream_t) {
    if (C != D || lc != ldd) { fprintf(stderr, "cuda emulator: cublasLtMatmul: only C == D is emulated\n"); return CUBLAS_STATUS_NOT_SUPPORTED; }
    uint64_t m = lc->rows, n = lc->cols;
    uint64_t am = d->ta == CUBLAS_OP_N ? la->rows : la->cols, ak = d->ta == CUBLAS_OP_N ? la->cols : la->rows;
    uint64_t bk = d->tb == CUBLAS_OP_N ? lb->rows : lb->cols, bn = d->tb == CUBLAS_OP_N ? lb->cols : lb->rows;
    if (am != m || bn != n || ak != bk) {
        fprintf(stderr, "cuda emulator: cublasLtMatmul: layouts disagree: op(A) %llux%llu, op(B) %llux%llu, C %llux%llu\n",
                (unsigned long long)am, (unsigned long long)ak, (unsigned long long)bk, (unsigned long long)bn,
                (unsigned long long)m, (unsigned long long)n);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const void *ptr[3] = { A, B, C };
    for (int i = 0; i < 3; i++)
        if (alignment_of(ptr[i]) < algo->data[i]) {
            fprintf(stderr, "cuda emulator: cublasLtMatmul: operand %c at %p is less aligned than the %llu bytes promised to the heuristic\n",
                    "ABC"[i], ptr[i], (unsigned long long)algo->data[i]);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    if (la->type != lb->type || la->type != lc->type) return CUBLAS_STATUS_NOT_SUPPORTED;
    gemm_cm(d->ta, d->tb, (int)m, (int)n, (int)ak, *(const float *)alpha, A, la->type, la->ld, B, lb->type, lb->ld,
            *(const float *)beta, D, lc->type, lc->ld, d->compute);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
                            void *C, cudaDataType_t ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t) {
    if (m < 0 || n < 0 || k < 0 || ldc < std::max(1, m) || lda < std::max(1, ta == CUBLAS_OP_N ? m : k) ||
        ldb < std::max(1, tb == CUBLAS_OP_N ? k : n))
        return CUBLAS_STATUS_INVALID_VALUE;
    gemm_cm(ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb, *(const float *)beta, C, ct, ldc, compute);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmGroupedBatchedEx(cublasHandle_t h, const cublasOperation_t ta[], const cublasOperation_t tb[],
                                          const int m[], const int n[], const int k[], const void *alpha, const void *const A[],
                                          cudaDataType_t at, const int lda[], const void *const B[], cudaDataType_t bt,
                                          const int ldb[], const void *beta, void *const C[], cudaDataType_t ct, const int ldc[],
                                          int group_count, const int group_size[], cublasComputeType_t compute) {
    int idx = 0;
    for (int g = 0; g < group_count; g++)
        for (int i = 0; i < group_size[g]; i++, idx++) {
            cublasStatus_t s = cublasGemmEx(h, ta[g], tb[g], m[g], n[g], k[g], (const float *)alpha + g, A[idx], at, lda[g],
                                            B[idx], bt, ldb[g], (const float *)beta + g, C[idx], ct, ldc[g], compute, CUBLAS_GEMM_DEFAULT);
            if (s != CUBLAS_STATUS_SUCCESS) return s;
        }
    return CUBLAS_STATUS_SUCCESS;
}
