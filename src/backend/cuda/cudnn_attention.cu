// cudnn_attention.cu — cuDNN's fused causal GQA attention in bf16 (cudnn_attention.h), built
// with cuDNN 9's backend (graph) API directly: the installed toolkit has no cudnn-frontend
// headers, so the graphs below are the ones cudnn-frontend's CompositeSDPANode and
// CompositeSDPABackwardNode expand to (scaled_dot_product_flash_attention.h), op by op, with
// the causal mask as the frontend's classic top-left form (row index >= column index). cuDNN's
// heuristics (mode A) recognise the pattern and return its fused flash-attention engines.
//
// Forward (S, P virtual: cuDNN never writes them to memory):
//   S = Q·K^T · scale; S = (row >= col) ? S : -inf; M = rowmax S; E = exp(S − M);
//   Z = rowsum E; stats = M + log Z; out = (E / Z)·V
// Backward (FlashAttention-2's algorithm):
//   D = rowsum(dO ⊙ O) (fp32 workspace); P = exp(mask(Q·K^T · scale − stats)) (or the frontend's
//   older order, mask before − stats: backward_graph);
//   dV = P^T·dO; dS = P ⊙ (dO·V^T − D) · scale; dK = dS^T·Q; dQ = dS·K (fp32 accumulator,
//   workspace, copied to bf16); with Hkv < H, dK and dV are summed over each group's heads.
//
// cuDNN is loaded with dlopen (libcudnn.so.9) and every call goes through the table `api`;
// each call's status is checked, and a failure names the call and carries cuDNN's own text
// (cudnnGetErrorString and cudnnGetLastErrorString). While a graph is being built a failure
// is a refusal (the caller falls back); executing an accepted plan must succeed.
//
// Compiled without nvcc (the CPU emulator compiles the back end's sources with g++), this
// file has no cuDNN: cudnn_att_available() says why and the entry points refuse.
#include "cudnn_attention.h"
#include <stdio.h>
#include <string.h>

#ifndef __CUDACC__

static const char *const EMU_WHY = "this build has no cuDNN (compiled without nvcc: the CPU emulator)";
static int refuse_emu(char *why, size_t why_len) {
    if (why && why_len) snprintf(why, why_len, "%s", EMU_WHY);
    return 1;
}
extern "C" int cudnn_att_available(char *why, size_t why_len) { refuse_emu(why, why_len); return 0; }
extern "C" const char *cudnn_att_version(void) { return ""; }
extern "C" int cudnn_att_libraries(char *report, size_t report_len, char *why, size_t why_len) {
    if (report && report_len) snprintf(report, report_len, "  cuDNN      none: %s\n", EMU_WHY);
    return refuse_emu(why, why_len);
}
extern "C" int cudnn_att_forward(void *, void *, float *, const void *, const void *, const void *,
                                 int, int, int, int, int, char *why, size_t why_len) {
    return refuse_emu(why, why_len);
}
extern "C" int cudnn_att_backward(void *, void *, void *, void *, const void *, const void *,
                                  const void *, const void *, const void *, const float *,
                                  int, int, int, int, int, char *why, size_t why_len) {
    return refuse_emu(why, why_len);
}

#else  // nvcc: the real thing

#include <cuda_runtime.h>
#include <cudnn_graph.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdarg.h>
#include <math.h>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

extern "C" {
#include "../../core/check.h"
}

// ---- the library, loaded once ----------------------------------------------------------------
static struct {
    int tried, ok;
    char why[512];
    char version[32];
    size_t ver;                     // cudnnGetVersion(): 91900 for 9.19.0
    void *dl;
    decltype(&cudnnGetVersion) GetVersion;
    decltype(&cudnnGetErrorString) GetErrorString;
    decltype(&cudnnGetLastErrorString) GetLastErrorString;
    decltype(&cudnnCreate) Create;
    decltype(&cudnnSetStream) SetStream;
    decltype(&cudnnBackendCreateDescriptor) BackendCreateDescriptor;
    decltype(&cudnnBackendDestroyDescriptor) BackendDestroyDescriptor;
    decltype(&cudnnBackendSetAttribute) BackendSetAttribute;
    decltype(&cudnnBackendGetAttribute) BackendGetAttribute;
    decltype(&cudnnBackendFinalize) BackendFinalize;
    decltype(&cudnnBackendExecute) BackendExecute;
} api;

// "call failed: <status string>: <cuDNN's last error message>"
static void status_text(char *buf, size_t n, const char *call, cudnnStatus_t s) {
    char last[256] = "";
    if (api.GetLastErrorString) api.GetLastErrorString(last, sizeof last);
    snprintf(buf, n, "%s failed: %s%s%s", call, api.GetErrorString ? api.GetErrorString(s) : "?", *last ? ": " : "", last);
}

static int load_api(void) {
    if (api.tried) return api.ok;
    api.tried = 1;
    api.dl = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!api.dl) {
        snprintf(api.why, sizeof api.why, "cuDNN not found: dlopen(libcudnn.so.9): %s (docs/gpu.md: where the bundle looks for it)", dlerror());
        return 0;
    }
#define SYM(name) do { *(void **)&api.name = dlsym(api.dl, "cudnn" #name); \
        if (!api.name) { snprintf(api.why, sizeof api.why, "libcudnn.so.9 has no cudnn" #name); return 0; } } while (0)
    SYM(GetVersion); SYM(GetErrorString); SYM(GetLastErrorString); SYM(Create); SYM(SetStream);
    SYM(BackendCreateDescriptor); SYM(BackendDestroyDescriptor); SYM(BackendSetAttribute);
    SYM(BackendGetAttribute); SYM(BackendFinalize); SYM(BackendExecute);
#undef SYM
    api.ver = api.GetVersion();
    snprintf(api.version, sizeof api.version, "%zu.%zu.%zu", api.ver / 10000, api.ver / 100 % 100, api.ver % 100);
    if (api.ver < 90000) {
        snprintf(api.why, sizeof api.why, "cuDNN %s is older than 9.0 (the fused attention graphs need 9)", api.version);
        return 0;
    }
    api.ok = 1;
    return 1;
}

// ---- per device: a handle and a workspace that grows ----------------------------------------
// One of each per device, so every cuDNN attention call on a device must come from one host
// thread onto one stream (true: one back end per device). Two streams would race on the
// workspace and the backward's D and dQ regions.
enum { MAX_DEVICES = 64 };
static struct { cudnnHandle_t h; void *ws; size_t ws_size; char why[512]; int tried, sm_major; } dev[MAX_DEVICES];

static int current_device(char *why, size_t why_len) {
    int d = -1;
    cudaError_t e = cudaGetDevice(&d);
    if (e != cudaSuccess || d < 0 || d >= MAX_DEVICES) {
        snprintf(why, why_len, "cudaGetDevice: %s", e != cudaSuccess ? cudaGetErrorString(e) : "device index out of range");
        return -1;
    }
    return d;
}

static cudnnHandle_t handle_of(int d, char *why, size_t why_len) {
    if (!dev[d].tried) {
        dev[d].tried = 1;
        cudaError_t e = cudaDeviceGetAttribute(&dev[d].sm_major, cudaDevAttrComputeCapabilityMajor, d);
        cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
        if (e != cudaSuccess)
            snprintf(dev[d].why, sizeof dev[d].why, "cudaDeviceGetAttribute(compute capability) failed: %s",
                     cudaGetErrorString(e));
        else if ((s = api.Create(&dev[d].h)) != CUDNN_STATUS_SUCCESS)
            status_text(dev[d].why, sizeof dev[d].why, "cudnnCreate", s);
        if (e != cudaSuccess || s != CUDNN_STATUS_SUCCESS) dev[d].h = NULL;
    }
    if (!dev[d].h) snprintf(why, why_len, "%s", dev[d].why);
    return dev[d].h;
}

static void *workspace(int d, size_t bytes) {
    if (bytes <= dev[d].ws_size) return dev[d].ws;
    cudaError_t e;
    if (dev[d].ws && (e = cudaFree(dev[d].ws)) != cudaSuccess)   // cudaFree waits for queued work
        DIE("cudaFree(cuDNN attention workspace) failed: %s", cudaGetErrorString(e));
    size_t want = bytes + bytes / 4;
    if ((e = cudaMalloc(&dev[d].ws, want)) != cudaSuccess)
        DIE("cudaMalloc(%zu bytes) for the cuDNN attention workspace failed: %s", want, cudaGetErrorString(e));
    dev[d].ws_size = want;
    return dev[d].ws;
}

extern "C" int cudnn_att_available(char *why, size_t why_len) {
    if (!load_api()) { snprintf(why, why_len, "%s", api.why); return 0; }
    int d = current_device(why, why_len);
    return d >= 0 && handle_of(d, why, why_len) != NULL;
}
extern "C" const char *cudnn_att_version(void) { return api.ok ? api.version : ""; }

// ---- the node's libraries, without a device --------------------------------------------------
// appends a printf'd line to report
__attribute__((format(printf, 3, 4)))
static void add(char *report, size_t n, const char *fmt, ...) {
    size_t l = strlen(report);
    if (l + 1 >= n) return;
    va_list ap; va_start(ap, fmt); vsnprintf(report + l, n - l, fmt, ap); va_end(ap);
}
// The file a loaded symbol comes from ("?" when unknown)
static const char *file_of(const void *sym) {
    Dl_info info;
    return sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "?";
}
static int driver_loadable(void) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) dlclose(h);
    return h != NULL;
}

// nvrtc as cuDNN's runtime-compiled engines load it (libnvrtc.so.<CUDA major>): its version, and
// a kernel compiled to PTX (which needs its builtins library beside it)
static int check_nvrtc(char *report, size_t n, char *why, size_t why_len) {
    char name[32];
    snprintf(name, sizeof name, "libnvrtc.so.%d", CUDART_VERSION / 1000);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        add(report, n, "  nvrtc      NOT FOUND: %s\n", e ? e : name);
        snprintf(why, why_len, "%s cannot be loaded (%s): cuDNN's runtime-compiled engines need it; put it on the library path "
                 "(the CUDA toolkit's lib64, or the pip wheel nvidia-cuda-nvrtc's nvidia/cu13/lib)", name, e ? e : "not found");
        return 1;
    }
    auto ver = (decltype(&nvrtcVersion))dlsym(h, "nvrtcVersion");
    auto create = (decltype(&nvrtcCreateProgram))dlsym(h, "nvrtcCreateProgram");
    auto compile = (decltype(&nvrtcCompileProgram))dlsym(h, "nvrtcCompileProgram");
    auto ptx_size = (decltype(&nvrtcGetPTXSize))dlsym(h, "nvrtcGetPTXSize");
    auto destroy = (decltype(&nvrtcDestroyProgram))dlsym(h, "nvrtcDestroyProgram");
    auto err = (decltype(&nvrtcGetErrorString))dlsym(h, "nvrtcGetErrorString");
    int major = 0, minor = 0, rc = 1;
    if (!ver || !create || !compile || !ptx_size || !destroy || !err) {
        snprintf(why, why_len, "%s lacks the nvrtc API (nvrtcVersion, nvrtcCompileProgram, ...)", name);
    } else {
        ver(&major, &minor);
        nvrtcProgram prog = NULL;
        const char *src = "extern \"C\" __global__ void probe(float *x) { x[threadIdx.x] *= 2.0f; }";
        const char *opts[] = { "--gpu-architecture=compute_80" };
        size_t ptx = 0;
        nvrtcResult r = create(&prog, src, "probe.cu", 0, NULL, NULL);
        if (r == NVRTC_SUCCESS) r = compile(prog, 1, opts);
        if (r == NVRTC_SUCCESS) r = ptx_size(prog, &ptx);
        if (prog) destroy(&prog);
        if (r == NVRTC_SUCCESS && ptx > 0) rc = 0;
        else snprintf(why, why_len, "nvrtc %d.%d (%s) cannot compile a kernel: %s (its builtins library, libnvrtc-builtins.so, "
                      "must be beside it)", major, minor, file_of((const void *)ver), err(r));
    }
    add(report, n, "  nvrtc      %d.%d %s, compiles a kernel: %s\n", major, minor, file_of((const void *)ver), rc ? "NO" : "yes");
    dlclose(h);
    return rc;
}

extern "C" int cudnn_att_libraries(char *report, size_t report_len, char *why, size_t why_len) {
    if (report && report_len) report[0] = 0;
    if (why && why_len) why[0] = 0;
    if (!load_api()) {
        add(report, report_len, "  cuDNN      NOT LOADED: %s\n", api.why);
        snprintf(why, why_len, "%s; the bf16 attention would take the slower flash kernel", api.why);
        return 1;
    }
    const char *path = file_of((const void *)api.GetVersion);
    add(report, report_len, "  cuDNN      %s %s\n", api.version, path);
    // the engine libraries libcudnn.so.9 opens from its own folder when a graph is built
    static const char *const engines[] = { "libcudnn_graph.so.9", "libcudnn_heuristic.so.9",
                                           "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9" };
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    int rc = 0, driver = -1;
    for (size_t i = 0; i < sizeof engines / sizeof *engines; i++) {
        char file[1100];
        snprintf(file, sizeof file, "%s/%s", dir, engines[i]);
        void *h = dlopen(file, RTLD_LAZY | RTLD_LOCAL);
        if (h) { dlclose(h); add(report, report_len, "    %s: loads\n", engines[i]); continue; }
        char e[512];   // (copied: the next dlopen overwrites dlerror's text)
        const char *de = dlerror();
        snprintf(e, sizeof e, "%s", de ? de : "?");
        if (driver < 0) driver = driver_loadable();
        if (!driver && strstr(e, "libcuda.so")) {
            add(report, report_len, "    %s: needs the NVIDIA driver's libcuda.so.1 (none here)\n", engines[i]);
            continue;
        }
        add(report, report_len, "    %s: NOT LOADABLE: %s\n", engines[i], e);
        if (!rc) snprintf(why, why_len, "cuDNN %s's %s cannot be loaded (%s): cuDNN would refuse or fall back; install cuDNN's "
                          "complete library set beside %s", api.version, engines[i], e, path);
        rc = 1;
    }
    char nv_why[512] = "";
    if (check_nvrtc(report, report_len, nv_why, sizeof nv_why) && !rc) { snprintf(why, why_len, "%s", nv_why); rc = 1; }
    return rc;
}

// ---- graph building ------------------------------------------------------------------------------
// A Graph collects every descriptor it makes (destroyed together) and the operations; the
// first failing call is recorded in why and turns every later call into a no-op, so the
// builders below read as the op list they are.
typedef cudnnBackendDescriptor_t Desc;
struct Graph {
    cudnnHandle_t handle;
    std::vector<Desc> all, ops;
    int64_t next_virtual = 1000;
    int failed = 0;
    char why[512] = "";
};

static bool ok(Graph &g, cudnnStatus_t s, const char *call) {
    if (g.failed) return false;
    if (s == CUDNN_STATUS_SUCCESS) return true;
    status_text(g.why, sizeof g.why, call, s);
    g.failed = 1;
    return false;
}
static Desc make(Graph &g, cudnnBackendDescriptorType_t t, const char *what) {
    Desc d = NULL;
    if (g.failed) return NULL;
    if (ok(g, api.BackendCreateDescriptor(t, &d), what)) g.all.push_back(d);
    return d;
}
static void set(Graph &g, Desc d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n, const void *v,
                const char *what) {
    if (!g.failed) ok(g, api.BackendSetAttribute(d, a, t, n, v), what);
}
static void finalize(Graph &g, Desc d, const char *what) { if (!g.failed) ok(g, api.BackendFinalize(d), what); }

// Unique ids of the tensors the caller binds (the variant pack); virtual ones count from 1000.
enum { U_Q = 1, U_K, U_V, U_O, U_STATS, U_SCALE, U_NEG, U_ONE, U_DO, U_DQ, U_DK, U_DV, U_DSUM, U_DQACC };

struct Dims { int64_t d[4], s[4]; };
static Desc tensor(Graph &g, int64_t uid, cudnnDataType_t dt, Dims x, bool is_virtual, bool by_value = false) {
    Desc t = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "cudnnBackendCreateDescriptor(TENSOR)");
    int64_t align = 16;
    set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, x.d, "tensor dimensions");
    set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, x.s, "tensor strides");
    set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor unique id");
    set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, "tensor is_virtual");
    if (by_value) set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "tensor is_by_value");
    finalize(g, t, "cudnnBackendFinalize(TENSOR)");
    return t;
}
static Desc virt(Graph &g, cudnnDataType_t dt, Dims x) { return tensor(g, g.next_virtual++, dt, x, true); }
static Desc scalar(Graph &g, int64_t uid) {   // an fp32 value passed by host pointer
    return tensor(g, uid, CUDNN_DATA_FLOAT, Dims{{1, 1, 1, 1}, {1, 1, 1, 1}}, false, true);
}

// An operation of `type` with its (attribute, descriptor) inputs and outputs (NULL ones left
// out), appended to the graph's operations.
typedef std::pair<cudnnBackendAttributeName_t, Desc> Arg;
static void operation(Graph &g, cudnnBackendDescriptorType_t type, const char *what, std::initializer_list<Arg> args) {
    Desc op = make(g, type, what);
    for (const Arg &a : args)
        if (a.second) set(g, op, a.first, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a.second, what);
    finalize(g, op, what);
    if (!g.failed) g.ops.push_back(op);
}

// y = mode(x[, b][, t]); GEN_INDEX takes an axis; CMP_* compute in BOOLEAN, GEN_INDEX in INT32
static void pointwise(Graph &g, cudnnPointwiseMode_t mode, Desc x, Desc b, Desc t, Desc y,
                      cudnnDataType_t prec = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Desc pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "cudnnBackendCreateDescriptor(POINTWISE)");
    set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise math precision");
    if (axis >= 0) set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
    finalize(g, pw, "cudnnBackendFinalize(POINTWISE)");
    operation(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "OPERATION_POINTWISE",
              { { CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw }, { CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x },
                { CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b }, { CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t },
                { CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y } });
}
// c = a·b (batched over the first two dimensions; fewer heads in b broadcast: GQA)
static void matmul(Graph &g, Desc a, Desc b, Desc c) {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Desc mm = make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "cudnnBackendCreateDescriptor(MATMUL)");
    set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul compute type");
    finalize(g, mm, "cudnnBackendFinalize(MATMUL)");
    operation(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "OPERATION_MATMUL",
              { { CUDNN_ATTR_OPERATION_MATMUL_ADESC, a }, { CUDNN_ATTR_OPERATION_MATMUL_BDESC, b },
                { CUDNN_ATTR_OPERATION_MATMUL_CDESC, c }, { CUDNN_ATTR_OPERATION_MATMUL_DESC, mm } });
}
// y = reduce(x) to y's shape: over the dimensions where y has size 1 (row max and sums), or
// over groups of a dimension y has fewer of (GQA: H query heads summed into Hkv, contiguous groups)
static void reduction(Graph &g, cudnnReduceTensorOp_t mode, Desc x, Desc y) {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Desc rd = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "cudnnBackendCreateDescriptor(REDUCTION)");
    set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "reduction operator");
    set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "reduction compute type");
    finalize(g, rd, "cudnnBackendFinalize(REDUCTION)");
    operation(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "OPERATION_REDUCTION",
              { { CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x }, { CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y },
                { CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd } });
}
// y = x seen with other dimensions and strides (a transpose, no data movement)
static void reshape(Graph &g, Desc x, Desc y) {
    operation(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "OPERATION_RESHAPE",
              { { CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x }, { CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y } });
}

// The shapes of one attention call, as cuDNN sees the op table's layouts: a tensor [B,T,H,hd]
// is viewed as [B,H,T,hd] with strides (T·H·hd, hd, H·hd, 1); K^T and V^T swap the last two.
struct Shape { int64_t B, T, H, Hkv, hd; };
static Dims q_dims(Shape s) { return {{s.B, s.H, s.T, s.hd}, {s.T * s.H * s.hd, s.hd, s.H * s.hd, 1}}; }
static Dims kv_dims(Shape s) { return {{s.B, s.Hkv, s.T, s.hd}, {s.T * s.Hkv * s.hd, s.hd, s.Hkv * s.hd, 1}}; }
static Dims kvT_dims(Shape s) { return {{s.B, s.Hkv, s.hd, s.T}, {s.T * s.Hkv * s.hd, s.hd, 1, s.Hkv * s.hd}}; }
static Dims rows_dims(Shape s) { return {{s.B, s.H, s.T, 1}, {s.H * s.T, s.T, 1, 1}}; }             // stats, D
static Dims scores_dims(Shape s) { return {{s.B, s.H, s.T, s.T}, {s.H * s.T * s.T, s.T * s.T, s.T, 1}}; }
static Dims scoresT_dims(Shape s) { return {{s.B, s.H, s.T, s.T}, {s.H * s.T * s.T, s.T * s.T, 1, s.T}}; }
static Dims full_head_dims(Shape s) { return {{s.B, s.H, s.T, s.hd}, {s.H * s.T * s.hd, s.T * s.hd, s.hd, 1}}; }

// X with keys after the query set to neg (-inf: the frontend's causal_mask), X [B,H,T,T] fp32
static Desc causal(Graph &g, Shape s, Desc X, Desc neg) {
    Dims sd = scores_dims(s);
    Desc row = virt(g, CUDNN_DATA_INT32, sd), col = virt(g, CUDNN_DATA_INT32, sd), keep = virt(g, CUDNN_DATA_BOOLEAN, sd);
    pointwise(g, CUDNN_POINTWISE_GEN_INDEX, X, NULL, NULL, row, CUDNN_DATA_INT32, 2);
    pointwise(g, CUDNN_POINTWISE_GEN_INDEX, X, NULL, NULL, col, CUDNN_DATA_INT32, 3);
    pointwise(g, CUDNN_POINTWISE_CMP_GE, row, col, NULL, keep, CUDNN_DATA_BOOLEAN);
    Desc S2 = virt(g, CUDNN_DATA_FLOAT, sd);
    pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, X, neg, keep, S2);   // keep ? X : neg
    return S2;
}

static void forward_graph(Graph &g, Shape s) {
    Desc Q = tensor(g, U_Q, CUDNN_DATA_BFLOAT16, q_dims(s), false);
    Desc KT = tensor(g, U_K, CUDNN_DATA_BFLOAT16, kvT_dims(s), false);
    Desc V = tensor(g, U_V, CUDNN_DATA_BFLOAT16, kv_dims(s), false);
    Desc O = tensor(g, U_O, CUDNN_DATA_BFLOAT16, q_dims(s), false);
    Desc stats = tensor(g, U_STATS, CUDNN_DATA_FLOAT, rows_dims(s), false);
    Desc scale = scalar(g, U_SCALE), neg = scalar(g, U_NEG);
    Dims sd = scores_dims(s), rd = rows_dims(s);
    Desc S = virt(g, CUDNN_DATA_FLOAT, sd), S1 = virt(g, CUDNN_DATA_FLOAT, sd);
    matmul(g, Q, KT, S);
    pointwise(g, CUDNN_POINTWISE_MUL, S, scale, NULL, S1);
    Desc Sm = causal(g, s, S1, neg);                 // scale, then mask (the frontend's forward)
    Desc M = virt(g, CUDNN_DATA_FLOAT, rd), Z = virt(g, CUDNN_DATA_FLOAT, rd), logZ = virt(g, CUDNN_DATA_FLOAT, rd);
    Desc C = virt(g, CUDNN_DATA_FLOAT, sd), E = virt(g, CUDNN_DATA_FLOAT, sd), P = virt(g, CUDNN_DATA_BFLOAT16, sd);
    reduction(g, CUDNN_REDUCE_TENSOR_MAX, Sm, M);
    pointwise(g, CUDNN_POINTWISE_SUB, Sm, M, NULL, C);
    pointwise(g, CUDNN_POINTWISE_EXP, C, NULL, NULL, E);
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, E, Z);
    pointwise(g, CUDNN_POINTWISE_LOG, Z, NULL, NULL, logZ);
    pointwise(g, CUDNN_POINTWISE_ADD, M, logZ, NULL, stats);
    pointwise(g, CUDNN_POINTWISE_DIV, E, Z, NULL, P);
    matmul(g, P, V, O);
}

// x = a·b into the [B,Hkv,T,hd] output y; with Hkv < H through a full-head product summed per group
static void head_grouped_matmul(Graph &g, Shape s, Desc a, Desc b, Desc y) {
    if (s.H == s.Hkv) { matmul(g, a, b, y); return; }
    Desc full = virt(g, CUDNN_DATA_BFLOAT16, full_head_dims(s));
    matmul(g, a, b, full);
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, full, y);
}

// The backward's P in either of the two orders cudnn-frontend has emitted: mask_last (its
// releases from 1.10 on) P = exp(mask(scale·S − stats)), else (1.8, 1.9: this file's first
// form) P = exp(mask(scale·S) − stats). The same numbers (a masked entry is -inf or the most
// negative float either way, and exp gives 0); plan_for tries the current order first and the
// older one if cuDNN offers no engine for it.
static void backward_graph(Graph &g, Shape s, bool mask_last) {
    Desc Q = tensor(g, U_Q, CUDNN_DATA_BFLOAT16, q_dims(s), false);
    Desc KT = tensor(g, U_K, CUDNN_DATA_BFLOAT16, kvT_dims(s), false);
    Desc VT = tensor(g, U_V, CUDNN_DATA_BFLOAT16, kvT_dims(s), false);
    Desc O = tensor(g, U_O, CUDNN_DATA_BFLOAT16, q_dims(s), false);
    Desc dO = tensor(g, U_DO, CUDNN_DATA_BFLOAT16, q_dims(s), false);
    Desc stats = tensor(g, U_STATS, CUDNN_DATA_FLOAT, rows_dims(s), false);
    Desc dQ = tensor(g, U_DQ, CUDNN_DATA_BFLOAT16, q_dims(s), false);
    Desc dK = tensor(g, U_DK, CUDNN_DATA_BFLOAT16, kv_dims(s), false);
    Desc dV = tensor(g, U_DV, CUDNN_DATA_BFLOAT16, kv_dims(s), false);
    Desc Dsum = tensor(g, U_DSUM, CUDNN_DATA_FLOAT, rows_dims(s), false);                  // workspace
    Desc dQacc = tensor(g, U_DQACC, CUDNN_DATA_FLOAT, full_head_dims(s), false);            // workspace
    Desc scale = scalar(g, U_SCALE), neg = scalar(g, U_NEG), one = scalar(g, U_ONE);
    Dims sd = scores_dims(s), rd = rows_dims(s);
    Dims prod = {{s.B, s.H, s.T, s.hd}, {s.H * s.T * s.hd, s.T * s.hd, s.H * s.hd, 1}};

    // D = rowsum(dO ⊙ O)
    Desc dOO = virt(g, CUDNN_DATA_FLOAT, prod), D0 = virt(g, CUDNN_DATA_FLOAT, rd);
    pointwise(g, CUDNN_POINTWISE_MUL, dO, O, NULL, dOO);
    reduction(g, CUDNN_REDUCE_TENSOR_ADD, dOO, D0);
    pointwise(g, CUDNN_POINTWISE_MUL, D0, one, NULL, Dsum);
    // P = exp(mask(scale·Q·K^T − stats)) or exp(mask(scale·Q·K^T) − stats)
    Desc S = virt(g, CUDNN_DATA_FLOAT, sd), S1 = virt(g, CUDNN_DATA_FLOAT, sd);
    matmul(g, Q, KT, S);
    pointwise(g, CUDNN_POINTWISE_MUL, S, scale, NULL, S1);
    Desc C = virt(g, CUDNN_DATA_FLOAT, sd), P = virt(g, CUDNN_DATA_FLOAT, sd);
    if (mask_last) {
        pointwise(g, CUDNN_POINTWISE_SUB, S1, stats, NULL, C);
        pointwise(g, CUDNN_POINTWISE_EXP, causal(g, s, C, neg), NULL, NULL, P);
    } else {
        pointwise(g, CUDNN_POINTWISE_SUB, causal(g, s, S1, neg), stats, NULL, C);
        pointwise(g, CUDNN_POINTWISE_EXP, C, NULL, NULL, P);
    }
    // dV = P^T·dO
    Desc PT = virt(g, CUDNN_DATA_BFLOAT16, scoresT_dims(s));
    reshape(g, P, PT);
    head_grouped_matmul(g, s, PT, dO, dV);
    // dS = P ⊙ (dO·V^T − D) · scale
    Desc dP = virt(g, CUDNN_DATA_FLOAT, sd), d1 = virt(g, CUDNN_DATA_FLOAT, sd), d2 = virt(g, CUDNN_DATA_FLOAT, sd);
    Desc dS = virt(g, CUDNN_DATA_FLOAT, sd);
    matmul(g, dO, VT, dP);
    pointwise(g, CUDNN_POINTWISE_SUB, dP, Dsum, NULL, d1);
    pointwise(g, CUDNN_POINTWISE_MUL, d1, P, NULL, d2);
    pointwise(g, CUDNN_POINTWISE_MUL, d2, scale, NULL, dS);
    // dK = dS^T·Q
    Desc dST = virt(g, CUDNN_DATA_BFLOAT16, scoresT_dims(s));
    reshape(g, dS, dST);
    head_grouped_matmul(g, s, dST, Q, dK);
    // dQ = dS·K, accumulated in fp32
    Desc K = virt(g, CUDNN_DATA_BFLOAT16, kv_dims(s));
    reshape(g, KT, K);
    matmul(g, dS, K, dQacc);
    pointwise(g, CUDNN_POINTWISE_IDENTITY, dQacc, NULL, NULL, dQ);
}

// The operation graph, heuristics' engine configurations, and the first one whose execution
// plan cuDNN finalises.
static Desc build_plan(Graph &g, int64_t *ws_bytes) {
    Desc og = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "cudnnBackendCreateDescriptor(OPERATIONGRAPH)");
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g.handle, "operation graph handle");
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, (int64_t)g.ops.size(), g.ops.data(), "operation graph ops");
    finalize(g, og, "cudnnBackendFinalize(OPERATIONGRAPH)");
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    Desc heur = make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "cudnnBackendCreateDescriptor(ENGINEHEUR)");
    set(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og, "heuristics graph");
    set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
    finalize(g, heur, "cudnnBackendFinalize(ENGINEHEUR)");
    int64_t n = 0;
    if (!g.failed) ok(g, api.BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL),
                      "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS count)");
    if (g.failed) return NULL;
    if (n <= 0) { snprintf(g.why, sizeof g.why, "cuDNN's heuristics offer no engine for this graph"); g.failed = 1; return NULL; }
    std::vector<Desc> cfgs((size_t)n);
    for (auto &c : cfgs) c = make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "cudnnBackendCreateDescriptor(ENGINECFG)");
    int64_t got = 0;
    if (!g.failed) ok(g, api.BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs.data()),
                      "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)");
    if (g.failed) return NULL;
    char last[512] = "";
    for (int64_t i = 0; i < got; i++) {
        Desc plan = make(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "cudnnBackendCreateDescriptor(EXECUTION_PLAN)");
        set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g.handle, "plan handle");
        set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[(size_t)i], "plan engine config");
        if (g.failed) return NULL;
        cudnnStatus_t st = api.BackendFinalize(plan);
        if (st != CUDNN_STATUS_SUCCESS) { status_text(last, sizeof last, "cudnnBackendFinalize(EXECUTION_PLAN)", st); continue; }
        int64_t ws = 0, cnt = 0;
        if (!ok(g, api.BackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &cnt, &ws),
                "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)")) return NULL;
        *ws_bytes = ws;
        return plan;
    }
    snprintf(g.why, sizeof g.why, "none of the %lld engine configurations cuDNN offered could be finalised (last: %s)", (long long)got, last);
    g.failed = 1;
    return NULL;
}

// ---- the cache of plans (or refusals), one per (device, direction, shape) --------------------
struct Plan {
    int device, backward;
    Shape s;
    Desc plan;                      // NULL: refused, reason in why
    int64_t ws_bytes;               // cuDNN's workspace
    size_t extra_bytes;             // ours (backward: D and the fp32 dQ accumulator)
    std::vector<Desc> keep;         // every descriptor the plan was built from
    char why[512];
};
static std::vector<Plan *> plans;
static size_t al256(size_t x) { return (x + 255) / 256 * 256; }

static Plan *plan_for(int device, int backward, Shape s, cudnnHandle_t h) {
    for (Plan *p : plans)
        if (p->device == device && p->backward == backward && p->s.B == s.B && p->s.T == s.T && p->s.H == s.H &&
            p->s.Hkv == s.Hkv && p->s.hd == s.hd) return p;
    Plan *p = new Plan();
    p->device = device; p->backward = backward; p->s = s;
    // the backward in the frontend's current order first, then its older one (backward_graph)
    for (int attempt = 0; attempt < (backward ? 2 : 1); attempt++) {
        Graph g;
        g.handle = h;
        if (backward) backward_graph(g, s, attempt == 0); else forward_graph(g, s);
        p->plan = build_plan(g, &p->ws_bytes);
        if (p->plan) { p->keep = g.all; break; }
        if (attempt == 0) snprintf(p->why, sizeof p->why, "%s", g.why);
        else {   // both orders refused: say both
            char first[512];
            snprintf(first, sizeof first, "%s", p->why);
            snprintf(p->why, sizeof p->why, "mask after the statistics: %.200s; mask before them: %.200s", first, g.why);
        }
        for (Desc d : g.all) api.BackendDestroyDescriptor(d);   // a refused graph keeps nothing
    }
    if (p->plan) {
        p->extra_bytes = backward ? al256((size_t)s.B * s.H * s.T * sizeof(float)) + (size_t)s.B * s.H * s.T * s.hd * sizeof(float) : 0;
    }
    plans.push_back(p);
    return p;
}

// Shared by both directions: the checks, the handle, the plan, the workspace, the execution.
static int run(int backward, void *stream, int B, int T, int H, int Hkv, int hd,
               const int64_t *uids, void **ptrs, int n, char *why, size_t why_len) {
    if (!load_api()) { snprintf(why, why_len, "%s", api.why); return 1; }
    if (B < 1 || T < 1 || Hkv < 1 || H % Hkv) { snprintf(why, why_len, "shape B=%d T=%d H=%d Hkv=%d", B, T, H, Hkv); return 1; }
    if (hd < 8 || hd % 8 || hd > 256) { snprintf(why, why_len, "head_dim %d (cuDNN's fused attention needs a multiple of 8, at most 256)", hd); return 1; }
    // cudnn-frontend and Transformer Engine refuse bf16 fused attention on 9.10.0 and 9.10.1
    // ("known bugs"); the backend may accept the graph and run with the bug, so refuse here too
    if (api.ver == 91000 || api.ver == 91001) {
        snprintf(why, why_len, "cuDNN %s has known bugs in bf16 fused attention (cudnn-frontend refuses 9.10.0 and "
                 "9.10.1; use 9.10.2 or newer)", api.version);
        return 1;
    }
    if (backward && T == 1) {   // the frontend's backward refuses s_q = s_kv = 1
        snprintf(why, why_len, "T 1: cuDNN's fused attention backward does not take a sequence of one");
        return 1;
    }
    if (backward && T % 128 && api.ver <= 91500) {   // cudnn-frontend pads such shapes with a mask on these versions
        snprintf(why, why_len, "T %d is not a multiple of 128, which cuDNN %s's backward needs without a padding mask", T, api.version);
        return 1;
    }
    int d = current_device(why, why_len);
    if (d < 0) return 1;
    cudnnHandle_t h = handle_of(d, why, why_len);
    if (!h) return 1;
    // the frontend's support surface by architecture: SM80 and newer; head dims above 128 on
    // Hopper only in the backward (9.5+), forward from 9.1 on Hopper and 9.10.2 elsewhere
    int sm = dev[d].sm_major;
    if (sm < 8) { snprintf(why, why_len, "SM %d.x: cuDNN's fused attention needs SM 8.0 or newer", sm); return 1; }
    if (hd > 128 && !(backward ? sm == 9 && api.ver >= 90500 : (sm == 9 ? api.ver >= 90100 : api.ver >= 91002))) {
        snprintf(why, why_len, "head_dim %d > 128 %s on SM %d.x with cuDNN %s (cudnn-frontend's support surface: %s)", hd,
                 backward ? "backward" : "forward", sm, api.version,
                 backward ? "Hopper with 9.5 or newer" : "Hopper with 9.1+, other GPUs 9.10.2+");
        return 1;
    }
    Plan *p = plan_for(d, backward, Shape{B, T, H, Hkv, hd}, h);
    if (!p->plan) { snprintf(why, why_len, "%s", p->why); return 1; }

    char err[640];
    cudnnStatus_t st = api.SetStream(h, (cudaStream_t)stream);
    if (st != CUDNN_STATUS_SUCCESS) { status_text(err, sizeof err, "cudnnSetStream", st); DIE("cuDNN attention: %s", err); }
    size_t ws_off = al256(p->extra_bytes);
    char *ws = (char *)workspace(d, ws_off + (size_t)p->ws_bytes);
    // by-value scalars: the scale, the mask value (-inf; the most negative float before 9.10,
    // as the frontend), and 1
    float scale = (float)(1.0 / sqrt((double)hd));
    float neg = api.ver < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
    float one = 1.0f;
    std::vector<int64_t> u(uids, uids + n);
    std::vector<void *> v(ptrs, ptrs + n);
    u.push_back(U_SCALE); v.push_back(&scale);
    u.push_back(U_NEG); v.push_back(&neg);
    if (backward) {
        size_t dsum_bytes = al256((size_t)B * H * T * sizeof(float));
        u.push_back(U_ONE); v.push_back(&one);
        u.push_back(U_DSUM); v.push_back(ws);
        u.push_back(U_DQACC); v.push_back(ws + dsum_bytes);
        if (api.ver < 90600) {   // before 9.6 the dQ accumulator starts from zeros the caller writes
            cudaError_t e = cudaMemsetAsync(ws + dsum_bytes, 0, (size_t)B * H * T * hd * sizeof(float), (cudaStream_t)stream);
            if (e != cudaSuccess) DIE("cudaMemsetAsync(cuDNN dQ accumulator) failed: %s", cudaGetErrorString(e));
        }
    }
    Graph g;   // the variant pack is built with the same checked calls
    Desc vp = make(g, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "cudnnBackendCreateDescriptor(VARIANT_PACK)");
    void *wsp = ws + ws_off;
    set(g, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, (int64_t)u.size(), u.data(), "variant pack ids");
    set(g, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, (int64_t)v.size(), v.data(), "variant pack pointers");
    set(g, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp, "variant pack workspace");
    finalize(g, vp, "cudnnBackendFinalize(VARIANT_PACK)");
    if (!g.failed) ok(g, api.BackendExecute(h, p->plan, vp), "cudnnBackendExecute");
    for (Desc x : g.all) api.BackendDestroyDescriptor(x);
    if (g.failed) DIE("cuDNN attention %s (B %d T %d H %d Hkv %d hd %d): %s", backward ? "backward" : "forward", B, T, H, Hkv, hd, g.why);
    return 0;
}

extern "C" int cudnn_att_forward(void *stream, void *out, float *lse, const void *q, const void *k, const void *v,
                                 int B, int T, int H, int Hkv, int hd, char *why, size_t why_len) {
    const int64_t uids[] = { U_Q, U_K, U_V, U_O, U_STATS };
    void *ptrs[] = { (void *)q, (void *)k, (void *)v, out, lse };
    return run(0, stream, B, T, H, Hkv, hd, uids, ptrs, 5, why, why_len);
}

extern "C" int cudnn_att_backward(void *stream, void *dq, void *dk, void *dv, const void *dout, const void *out,
                                  const void *q, const void *k, const void *v, const float *lse,
                                  int B, int T, int H, int Hkv, int hd, char *why, size_t why_len) {
    const int64_t uids[] = { U_Q, U_K, U_V, U_O, U_DO, U_STATS, U_DQ, U_DK, U_DV };
    void *ptrs[] = { (void *)q, (void *)k, (void *)v, (void *)out, (void *)dout, (void *)lse, dq, dk, dv };
    return run(1, stream, B, T, H, Hkv, hd, uids, ptrs, 9, why, why_len);
}

#endif  // __CUDACC__
