// backend.h — a back end is an op table plus a context (ggml's seam, llm.c's style).
//
// The model drivers (src/model/) and the optimizer are written once against the op front
// ends of backend/ops.h; the same driver runs on
//   cpu   the fp32 reference (OpenBLAS + OpenMP; backend/cpu/), or bf16 storage with fp32
//         math (every op rounds its outputs to bf16 where the GPU kernels do): the CPU
//         check of the bf16 path;
//   dry   the accounting back end: no memory is touched and no math is done, but every op
//         is reported with its FLOPs and bytes, and every allocation is counted (the
//         memory report, bench_comm, the simulator) — backend/dry.c;
//   cuda  cuBLASLt + hand-written kernels, fp32 (TF32 optional) or bf16 (backend/cuda/).
//
// Tensors are untyped pointers into buffers of the back end's compute dtype `dtype`
// (weights as the model sees them, activations, gradients); statistics (RMSNorm rstd,
// attention log-sum-exp, cross-entropy maxima) are always fp32, token ids int32, and a few
// reductions double, as each signature says. Element offsets inside a tensor go through
// bk_at() so that the driver code is the same for 4- and 2-byte elements.
//
// Every op call goes through backend/ops.c, which builds an OpInfo (name, class, FLOPs,
// bytes, GEMM shape, the phase and layer labels the driver set with bk_label) and hands it
// to an optional observer before and after the implementation runs: the timing wrapper
// (backend/timing.c) and the dry back end's records are such observers. So a per-op
// profile of the real drivers needs no second copy of the model's op sequence.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "../core/phase.h"

typedef enum { DT_F32 = 0, DT_BF16 = 1, DT_F64 = 2, DT_I32 = 3, DT_COUNT } DType;
size_t dtype_size(DType t);
const char *dtype_name(DType t);          // "fp32", "bf16", "fp64", "int32"

// What an allocation is for: the memory report's columns.
typedef enum {
    MEM_PARAMS,      // the weights the model computes with (compute dtype)
    MEM_GRADS,       // their gradients (compute dtype)
    MEM_OPTIM,       // fp32 master weights (bf16 runs) and AdamW m, v
    MEM_ACTS,        // activations kept for backward, all micro-batch slots
    MEM_WORK,        // working set: checkpoint recompute buffers, backward scratch, op workspaces
    MEM_COMM,        // communication staging
    MEM_COUNT
} MemCategory;
const char *mem_category_name(MemCategory c);   // "params", "grads", ...

typedef enum { TR_N = 0, TR_T = 1 } Trans;

// Class of an op, for the performance model: GEMMs are timed from a GEMM efficiency table,
// attention from its FLOPs at attention efficiency, everything else from bytes/bandwidth.
typedef enum { OPC_GEMM, OPC_ATTENTION, OPC_MEMORY, OPC_TRANSFER, OPC_COUNT } OpClass;

typedef struct {
    const char *name;      // op name: "gemm", "rmsnorm_forward", "attention_backward", ...
    OpClass cls;
    double flops;          // floating-point operations (2·M·N·K for a GEMM)
    double bytes;          // bytes read + written, at the dtypes involved
    int M, N, K;           // GEMM shape; attention: batch × heads, sequence, head dim; 0 otherwise. A GEMM group reports its first
    int count;             // GEMMs in a group (1 otherwise)
    Phase phase;           // labels from bk_label()
    int layer;             // global layer index, -1 = embedding / head / optimizer
    DType dtype;
} OpInfo;

typedef struct {
    void (*begin)(void *ctx, const OpInfo *op);   // may be NULL
    void (*end)(void *ctx, const OpInfo *op);     // may be NULL
} OpObserver;

typedef struct Backend Backend;

// One GEMM, row-major, cblas_sgemm's convention: C[M,N] = alpha·op(A)·op(B) + beta·C with
// op(A) [M,K] (A stored [M,K] with TR_N, [K,M] with TR_T), op(B) [K,N]; lda, ldb, ldc are
// row strides in elements. Accumulation is fp32 for every dtype.
typedef struct {
    Trans ta, tb;
    int M, N, K;
    float alpha;
    const void *A; int lda;
    const void *B; int ldb;
    float beta;
    void *C; int ldc;
} GemmArgs;

// A bottleneck buffer of G ≤ 3 slots of width r for N tokens (BTP, docs/boost.md): slot j,
// row n starts at element off[j] + n·ld. Grouped: [N, G·r] (ld = G·r, off[j] = j·r);
// ungrouped: G blocks [N, r] (ld = r).
typedef struct { int N, G, r, ld; size_t off[3]; } SlotView;

// One tensor of a multi-tensor optimizer launch. master: fp32 weights the update is applied
// to; grad: compute dtype; m, v: fp32 moments; param: the compute-dtype copy written after
// the update (NULL when master is itself the parameter, i.e. fp32 runs); n elements. live
// (NULL: none): a hint that grad, [n / row_len rows, row_len], is zero outside the rows r with
// live[r] != 0 (as SumsqLive below); a back end may skip reading the others (the same update).
typedef struct {
    float *master;
    const void *grad;
    float *m, *v;
    void *param;
    size_t n;
    float weight_decay;
    const unsigned char *live;
    size_t row_len;
} AdamWSpan;

// A hint to sumsq_multi: tensor t, [len / row_len rows, row_len], is zero outside the rows r
// with live[r] != 0 (the embedding gradient: only the rows of the step's tokens; model.h
// embed_live). A back end may read only the live rows or ignore the hint: a zero adds nothing
// to a sum of squares, so the result is the same bits either way.
typedef struct { int t; size_t row_len; const unsigned char *live; } SumsqLive;

// grad_scale: every gradient is read as grad·grad_scale, the global-norm clipping factor
// (1: no clipping) folded into the update instead of a pass of its own over the gradients.
typedef struct { float lr, beta1, beta2, eps; int t; float grad_scale; } AdamWHyper;

// The implementation table. Every entry takes the context first; the front ends in
// backend/ops.h state the shapes. An entry may be NULL only in the dry back end.
// Gradient outputs (ops.h's contract): an acc_* flag 1 adds into its output(s) (+=), 0 stores
// without reading them (the output's first writer of a step: no zero pass before it).
typedef struct BackendOps {
    // ---- buffers ----
    void *(*alloc)(Backend *b, size_t bytes);                    // zeroed, 64-byte aligned
    void (*free)(Backend *b, void *p);
    void (*zero)(Backend *b, void *p, size_t bytes);
    void (*copy)(Backend *b, void *dst, const void *src, size_t bytes);        // within the back end
    void (*copy2d)(Backend *b, void *dst, size_t dpitch, const void *src, size_t spitch,
                   size_t width, size_t rows);                                // bytes
    void (*to_host)(Backend *b, void *host, const void *src, size_t bytes);
    void (*from_host)(Backend *b, void *dst, const void *host, size_t bytes);
    void (*sync)(Backend *b);
    void (*cast)(Backend *b, void *dst, DType dt, const void *src, DType st, size_t n);
    void (*add2d)(Backend *b, void *dst, size_t ldd, const void *src, size_t lds, int rows, int cols);
    void (*destroy)(Backend *b);          // release handles, streams, workspaces and b->impl (may be NULL)
    // ---- matrix products ----
    void (*gemm)(Backend *b, const GemmArgs *g);
    // D[M,N] (row stride ldd) = alpha·op(A)·op(B) + beta·C: g's product with a separate output
    // (C is read, not written). D may be C with ldd == ldc; otherwise, when beta ≠ 0, the two
    // must not overlap. cuBLASLt does it in one pass (no copy of C into D first).
    void (*gemm_into)(Backend *b, const GemmArgs *g, void *D, int ldd);
    void (*gemm_group)(Backend *b, int count, const GemmArgs *g);
    // ---- normalisation ----
    void (*rmsnorm_forward)(Backend *b, void *y, float *rstd, const void *x, const void *gamma,
                            int N, int d, float eps);
    void (*rmsnorm_backward)(Backend *b, void *dx, void *dgamma, const void *dy, const void *x,
                             const void *gamma, const float *rstd, int N, int d, int acc_dx, int acc_dgamma);
    void (*rowsumsq)(Backend *b, void *S, const void *x, int N, int d);
    void (*rownorm)(Backend *b, void *y, const void *x, const void *gamma, const void *S,
                    int N, int d, int width, float eps);
    void (*scale_rows)(Backend *b, void *P, const SlotView *v, const void *S, int width,
                       float eps, int power);
    void (*rowdot)(Backend *b, float *dot, const void *X, const void *Y, const SlotView *v);
    void (*sharded_rmsnorm_backward)(Backend *b, void *dx, void *dgamma, const void *da,
                                     const void *x, const void *gamma, const void *S,
                                     const float *dot, int N, int d, int d_full, float eps, int acc_dgamma);
    // ---- elementwise ----
    void (*silu_forward)(Backend *b, void *y, const void *x, size_t n);
    void (*silu_backward)(Backend *b, void *dx, const void *dy, const void *x, size_t n);
    void (*swiglu_forward)(Backend *b, void *z, const void *g, const void *u, size_t n, int gate_silu);
    void (*swiglu_backward)(Backend *b, void *dg, void *du, const void *dz, const void *g,
                            const void *u, size_t n, int gate_silu);
    void (*add)(Backend *b, void *x, const void *y, size_t n);
    void (*scale)(Backend *b, void *x, float s, size_t n);
    // ---- attention ----
    void (*rope)(Backend *b, void *x, int B, int T, int H, int hd, float theta, int inverse);
    void (*attention_forward)(Backend *b, void *out, float *lse, const void *q, const void *k,
                              const void *v, int B, int T, int H, int Hkv, int hd);
    void (*attention_backward)(Backend *b, void *dq, void *dk, void *dv, const void *dout,
                               const void *out, const void *q, const void *k, const void *v,
                               const float *lse, int B, int T, int H, int Hkv, int hd);
    // ---- embedding, loss ----
    void (*embedding_forward)(Backend *b, void *out, const int32_t *tokens, const void *wte,
                              int N, int d, int v0, int V);
    void (*embedding_backward)(Backend *b, void *dwte, const void *dout, const int32_t *tokens,
                               int N, int d, int v0, int V, int acc, const unsigned char *nz);
    void (*xent_forward)(Backend *b, float *lmax, double *sumexp, double *tlogit, const void *logits,
                         const int32_t *targets, int N, int V, int v0);
    void (*xent_rescale)(Backend *b, double *sumexp, const float *lmax, const float *gmax, int N);
    void (*xent_loss)(Backend *b, double *loss, float *losses, const double *sumexp, const float *gmax,
                      const double *tlogit, int N, int accumulate);
    void (*xent_backward)(Backend *b, void *dlogits, const void *logits, const float *gmax,
                          const double *sumexp, const int32_t *targets, int N, int V, int v0,
                          float scale);
    void (*xent_fused)(Backend *b, void *dlogits, float *lmax, double *sumexp, double *tlogit,
                       const void *logits, const int32_t *targets, int N, int V, int v0, float scale);
    // ---- optimizer ----
    double (*sumsq_multi)(Backend *b, int n, const void *const *x, const size_t *len, const double *w,
                          const SumsqLive *live);
    void (*adamw_multi)(Backend *b, int n, const AdamWSpan *spans, const AdamWHyper *h);
    // ---- LaX latent crossing (docs/lax.md §3; strided [N, r] views, ld in elements) ----
    void (*layernorm_forward)(Backend *b, void *y, int ldy, float *mean, float *rstd, const void *x, int ldx,
                              const void *gamma, const void *beta, int N, int r, float eps);
    void (*layernorm_backward)(Backend *b, void *dx, int lddx, void *dgamma, void *dbeta, const void *dy, int lddy,
                               const void *x, int ldx, const float *mean, const float *rstd, const void *gamma,
                               int N, int r, int acc_dx, int acc_dw);
    void (*dense_gate_forward)(Backend *b, void *out, int ldo, const void *z, int ldz, const void *W,
                               const void *bias, int N, int r);
    void (*dense_gate_backward)(Backend *b, void *dz, int lddz, void *dW, void *dbias, const void *dout, int lddo,
                                const void *z, int ldz, const void *W, int N, int r, int acc_dz, int acc_dw);
    void (*kron_gate_forward)(Backend *b, void *out, int ldo, const void *z, int ldz, const void *G1,
                              const void *G2, int N, int r1, int r2);
    void (*kron_gate_backward)(Backend *b, void *dz, int lddz, void *dG1, void *dG2, const void *dout, int lddo,
                               const void *z, int ldz, const void *G1, const void *G2, int N, int r1, int r2,
                               int acc_dz, int acc_dw);
} BackendOps;

struct Backend {
    const BackendOps *ops;
    const char *name;          // "cpu", "dry", "cuda"
    DType dtype;               // compute dtype of weights, activations and gradients
    int dry;                   // 1: no memory, no math (the front ends call no entry but alloc)
    int device_memory;         // 1: buffers are not host-addressable (to_host/from_host needed)
    int tf32;                  // cuda fp32: let cuBLAS use TF32 tensor cores
    // ---- capabilities: what a caller may rely on (set by the constructor; callers test
    // these, never b->name) ----
    // The GEMM rate (GFLOP/s) that MFU is measured against, and whose it is: peak_per_host
    // = 1 when the rate is the whole host's, shared by the ranks on it (cpu: OpenBLAS sgemm
    // with every core), 0 when it is this process's device's. NULL: the back end has no
    // measurement of its own and MFU uses the host's sgemm (cpu_sgemm_peak_gflops).
    double (*peak_gflops)(Backend *b);
    int peak_per_host;
    const char *peak_label;    // what the peak is, in the run line: "sgemm" (NULL), "GPU datasheet", ...
    // The library the GEMMs run on and why, one line for the run's record (runs.library_versions
    // "gemm"); NULL: nothing to say beyond the libraries every run records.
    const char *(*gemm_library)(Backend *b);
    // Collectives on the device (NCCL): the CUDA device index and the CUDA stream
    // (cudaStream_t) its work is queued on. NULL on back ends whose buffers NCCL cannot use.
    int (*cuda_device)(const Backend *b);
    void *(*cuda_stream)(const Backend *b);
    // How the host waits for the device (NULL on back ends without a stream). With wait set,
    // every wait of the back end for its stream (to_host, sync, from_host's staging, results
    // handed to the host, frees) records a CUDA event and calls wait(ctx, event, what)
    // instead of blocking in the driver; the hook returns once the event has completed, or
    // does not return (the NCCL back end polls its communicators' asynchronous errors and a
    // timeout there, comm_nccl.c). wait = NULL: the driver's blocking wait again.
    void (*set_wait)(Backend *b, void (*wait)(void *ctx, void *event, const char *what), void *ctx);
    // Choose the attention kernels (train.attention's values, CudaAttention); 0, or 1 and a
    // reason. NULL: one attention implementation, nothing to choose.
    int (*set_attention)(Backend *b, int mode, char *why, size_t why_len);
    // What the back end decided that belongs in the run's record, one line at a time: the next
    // line not yet taken, or NULL (cuda: which attention ran for each direction and shape, and
    // why; the run loop stores them as events of kind 'backend'). NULL: nothing to record.
    const char *(*take_note)(Backend *b);
    void *impl;                // the back end's private state (handles, streams, workspaces)
    // labels for OpInfo (bk_label)
    Phase phase;
    int layer;
    // observer (timing wrapper, dry records); NULL = none
    const OpObserver *obs;
    void *obs_ctx;
    // memory accounting: bytes currently allocated per category, and the peak of the total
    size_t mem[MEM_COUNT];
    size_t mem_total, mem_peak;
};

// ---- construction ---------------------------------------------------------------------
// The CPU back end in `dtype` (DT_F32: the reference; DT_BF16: bf16 storage, bf16 GEMMs
// where the CPU has them, docs/cpu-bf16.md).
Backend *backend_cpu(DType dtype);
// The accounting back end: every allocation returns NULL and is counted at dtype's size.
Backend *backend_dry(DType dtype);
// The CUDA back end on `device` (-1: the local rank's device, CUDA_VISIBLE_DEVICES order).
// Returns NULL and writes a one-line reason into why (no CUDA in this build, no device,
// driver too old) — the caller decides whether that is an error or a skipped test.
Backend *backend_cuda(DType dtype, int device, char *why, size_t why_len);
// ---- the registry (backend/select.c: the one file that knows every back end) ----
// One entry per back end a run can choose (run.device, build/sample --device, the tests).
// per_rank_device: the back end runs on a device of the rank's own, chosen by its local
// rank (parallel/gpu_setup.h gpu_place); create's device -1 = the local rank's.
typedef struct {
    const char *name;          // "cpu" | "dry" | "cuda"
    Backend *(*create)(DType dtype, int device, char *why, size_t why_len);
    int per_rank_device;
} BackendKind;
const BackendKind *backend_kind(const char *name);   // NULL: no such back end
// By name: "cpu" | "dry" | "cuda"; NULL + reason as above, or an unknown name.
Backend *backend_create(const char *name, DType dtype, char *why, size_t why_len);
void backend_free(Backend *b);
// The process-wide CPU fp32 back end that model_init and a NULL bk use (never freed).
Backend *backend_default(void);
// Is a CUDA device usable from this process? 0 and a reason otherwise (no build, no GPU).
int backend_cuda_available(char *why, size_t why_len);

// ---- buffers (all counted in b->mem) ---------------------------------------------------
void *bk_alloc(Backend *b, size_t n, DType t, MemCategory cat);   // n elements, zeroed
void bk_free(Backend *b, void *p, size_t n, DType t, MemCategory cat);
// Pointer to element i of a tensor of dtype t (NULL stays NULL: the dry back end).
static inline void *bk_at_t(void *p, size_t i, DType t) {
    static const unsigned char sz[] = { 4, 2, 8, 4 };
    return p ? (void *)((char *)p + i * sz[t]) : NULL;
}
// ... of the back end's compute dtype.
static inline void *bk_at(const Backend *b, const void *p, size_t i) { return bk_at_t((void *)p, i, b->dtype); }
static inline void bk_label(Backend *b, Phase phase, int layer) { b->phase = phase; b->layer = layer; }
void bk_observe(Backend *b, const OpObserver *obs, void *ctx);

// Best-of-3 GFLOP/s of a 2048³ fp32 sgemm on this CPU with the current thread count: the
// "peak" that CPU MFU is measured against (backend/cpu/peak.c; 0.4 s).
double cpu_sgemm_peak_gflops(void);
