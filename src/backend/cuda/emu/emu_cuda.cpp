// emu_cuda.cpp — the CPU emulator's runtime (emu_cuda.h says what it models and why).
#include "emu_cuda.h"
#include <unistd.h>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
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

void set_error(cudaError_t e, const char *fmt, ...) {
    std::lock_guard<std::mutex> g(mu);
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "cuda emulator: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (last_error == cudaSuccess) last_error = e;
}

// ---- address spaces ------------------------------------------------------------------------------
static std::mutex mem_mu;
static std::map<uintptr_t, std::pair<size_t, Space>> allocs;   // base -> (bytes, space)
static void mem_add(const void *p, size_t n, Space sp) { std::lock_guard<std::mutex> g(mem_mu); allocs[(uintptr_t)p] = { n, sp }; }
// Forgets p if it is the base of an allocation of space sp: 1, else 0 (nothing changes).
static int mem_remove(const void *p, Space sp) {
    std::lock_guard<std::mutex> g(mem_mu);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end() || it->second.second != sp) return 0;
    allocs.erase(it);
    return 1;
}
// Inside [base, base + bytes] (one past the end counts: an empty span's pointer).
Space space_of(const void *p) {
    std::lock_guard<std::mutex> g(mem_mu);
    uintptr_t u = (uintptr_t)p;
    auto it = allocs.upper_bound(u);
    if (it == allocs.begin()) return SPACE_HOST;
    --it;
    return u <= it->first + it->second.first ? it->second.second : SPACE_HOST;
}
const char *space_name(Space s) {
    return s == SPACE_DEVICE ? "device memory" : s == SPACE_PINNED ? "page-locked host memory" : "host memory";
}
int want_device(const void *p, const char *what, const char *arg) {
    Space sp = space_of(p);
    if (sp == SPACE_DEVICE) return 1;
    set_error(cudaErrorInvalidDevicePointer, "%s: %s (%p) is %s, not device memory (cudaMalloc)", what, arg, p, space_name(sp));
    return 0;
}
static int want_host(const void *p, const char *what, const char *arg) {
    Space sp = space_of(p);
    if (sp != SPACE_DEVICE) return 1;
    set_error(cudaErrorInvalidValue, "%s: %s (%p) is device memory, but the copy's kind says host memory", what, arg, p);
    return 0;
}
void check_kernel_pointer(const char *file, int line, const char *kernel_name, int i, const void *p) {
    if (!p) return;
    Space sp = space_of(p);
    if (sp == SPACE_HOST)
        set_error(cudaErrorInvalidDevicePointer, "%s:%d: launch of %s: pointer argument %d (%p) is host memory "
                  "(neither cudaMalloc nor cudaMallocHost returned it); the kernel cannot read it", file, line, kernel_name, i, p);
}

// ---- streams and events --------------------------------------------------------------------------
}   // namespace emu

struct CUstream_st {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> q;
    uint64_t queued = 0, done = 0;
    bool stop = false;
    std::thread worker;
    void run() {
        for (;;) {
            std::function<void()> w;
            {
                std::unique_lock<std::mutex> l(m);
                cv.wait(l, [&] { return stop || !q.empty(); });
                if (q.empty()) return;
                w = std::move(q.front());
                q.pop_front();
            }
            w();
            { std::lock_guard<std::mutex> l(m); done++; }
            cv.notify_all();
        }
    }
    void push(std::function<void()> w) {
        { std::lock_guard<std::mutex> l(m); q.push_back(std::move(w)); queued++; }
        cv.notify_all();
    }
    void wait() {   // everything queued so far has run
        std::unique_lock<std::mutex> l(m);
        uint64_t want = queued;
        cv.wait(l, [&] { return done >= want; });
    }
    CUstream_st() : worker([this] { run(); }) {}
    ~CUstream_st() {
        { std::lock_guard<std::mutex> l(m); stop = true; }
        cv.notify_all();
        worker.join();
    }
};
// An event: records are numbered; the stream's worker marks a record reached when it gets there.
struct CUevent_st {
    std::mutex m;
    std::condition_variable cv;
    uint64_t recorded = 0, reached = 0;
    double t = 0;
};

namespace emu {
static std::mutex streams_mu;
static std::set<cudaStream_t> streams;          // every live stream, for cudaDeviceSynchronize
static cudaStream_t legacy() {                  // stream 0: its own queue, not ordered with the others
    static cudaStream_t s = [] { cudaStream_t x = new CUstream_st(); std::lock_guard<std::mutex> g(streams_mu); streams.insert(x); return x; }();
    return s;
}
static cudaStream_t resolve(cudaStream_t s) { return s ? s : legacy(); }
void enqueue(cudaStream_t s, std::function<void()> work) { resolve(s)->push(std::move(work)); }
static void sync_all() {
    std::vector<cudaStream_t> all;
    { std::lock_guard<std::mutex> g(streams_mu); all.assign(streams.begin(), streams.end()); }
    for (cudaStream_t s : all) s->wait();
}

void set_smem_limit(const void *kernel, int bytes) {
    std::lock_guard<std::mutex> g(mu);
    smem_limit[kernel] = bytes;
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int launch_ok(const char *file, int line, const char *kernel_name, dim3 g, dim3 b, size_t smem, const void *kernel) {
    unsigned nt = b.x * b.y * b.z;
    if (nt == 0 || nt > 1024 || b.z > 64) {
        set_error(cudaErrorInvalidConfiguration, "%s:%d: launch of %s: bad block size", file, line, kernel_name);
        return 0;
    }
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.y > 65535 || g.z > 65535) {
        set_error(cudaErrorInvalidConfiguration, "%s:%d: launch of %s: bad grid size", file, line, kernel_name);
        return 0;
    }
    int limit = SMEM_DEFAULT;
    {
        std::lock_guard<std::mutex> l(mu);
        auto it = smem_limit.find(kernel);
        if (it != smem_limit.end()) limit = it->second;
    }
    if (smem > (size_t)limit) {
        set_error(cudaErrorInvalidValue, "%s:%d: launch of %s: %zu bytes of dynamic shared memory, the kernel's limit is %d",
                  file, line, kernel_name, smem, limit);
        return 0;
    }
    return 1;
}

// The OS threads that play a block's CUDA threads: made once per stream worker and reused by
// every launch (creating blockDim threads per launch made a training step take minutes).
struct Pool {
    std::mutex m;
    std::condition_variable go, done;
    uint64_t gen = 0;
    unsigned want = 0, finished = 0;
    bool quit = false;
    const std::function<void(unsigned)> *job = nullptr;
    std::vector<std::thread> th;
    void loop(unsigned id) {
        uint64_t seen = 0;
        for (;;) {
            const std::function<void(unsigned)> *f;
            {
                std::unique_lock<std::mutex> l(m);
                go.wait(l, [&] { return quit || (gen != seen && id < want); });
                if (quit) return;
                seen = gen;
                f = job;
            }
            (*f)(id);
            { std::lock_guard<std::mutex> l(m); finished++; }
            done.notify_all();
        }
    }
    // Runs f(0) .. f(n-1) on n pool threads at once; returns when all have returned.
    void run(unsigned n, const std::function<void(unsigned)> &f) {
        {
            std::lock_guard<std::mutex> l(m);
            while (th.size() < n) { unsigned id = (unsigned)th.size(); th.emplace_back([this, id] { loop(id); }); }
            job = &f; want = n; finished = 0; gen++;
        }
        go.notify_all();
        std::unique_lock<std::mutex> l(m);
        done.wait(l, [&] { return finished == want; });
    }
    ~Pool() {
        { std::lock_guard<std::mutex> l(m); quit = true; }
        go.notify_all();
        for (auto &t : th) t.join();
    }
};
static thread_local Pool pool;

void run_grid(dim3 g, dim3 b, size_t smem, const std::function<void()> &body) {
    unsigned nt = b.x * b.y * b.z;
    // One OS thread per CUDA thread of a block (from the pool), reused for every block of the
    // launch: thread 0 makes each block's barriers between two launch-wide barriers.
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
    pool.run(nt, [&](unsigned t) {
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
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
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
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
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
cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev) {
    if (dev != 0) return cudaErrorInvalidValue;
    memset(p, 0, sizeof *p);
    // EMU_DEVICE_NAME / EMU_DEVICE_SMS / EMU_DEVICE_MHZ: the emulated device presents itself as
    // a real part (tests/emu/test_emu_peak.c: the peak for MFU from the device's own properties)
    const char *nm = getenv("EMU_DEVICE_NAME"), *sms = getenv("EMU_DEVICE_SMS");
    snprintf(p->name, sizeof p->name, "%s", nm && *nm ? nm : "CPU emulator (src/backend/cuda/emu)");
    p->major = 8; p->minor = 0; p->multiProcessorCount = sms && atoi(sms) > 0 ? atoi(sms) : 2;
    p->totalGlobalMem = (size_t)8 << 30;
    // uuid: zero, the same on every process (one "GPU" per machine), unless EMU_GPU_PER_RANK=1
    // gives each process its own "GPU" (the process id in the uuid): the NCCL stand-in's runs
    // (emu_nccl.cpp), where NCCL's one-GPU-per-rank rule must hold
    const char *per = getenv("EMU_GPU_PER_RANK");
    if (per && !strcmp(per, "1")) {
        long pid = (long)getpid();
        memcpy(p->uuid.bytes, "emu-gpu-", 8);
        memcpy(p->uuid.bytes + 8, &pid, sizeof pid < 8 ? sizeof pid : 8);
    }
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev) {
    if (dev != 0) return cudaErrorInvalidValue;
    if (a == cudaDevAttrMaxSharedMemoryPerBlockOptin) { *v = emu::SMEM_OPTIN; return cudaSuccess; }
    if (a == cudaDevAttrClockRate) {   // kHz
        const char *mhz = getenv("EMU_DEVICE_MHZ");
        *v = (mhz && atoi(mhz) > 0 ? atoi(mhz) : 1000) * 1000;
        return cudaSuccess;
    }
    if (a == cudaDevAttrMultiProcessorCount) {
        cudaDeviceProp p;
        cudaGetDeviceProperties(&p, 0);
        *v = p.multiProcessorCount;
        return cudaSuccess;
    }
    return cudaErrorInvalidValue;
}
cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaDeviceSynchronize(void) { emu::sync_all(); return cudaSuccess; }
cudaError_t cudaMalloc(void **p, size_t n) {
    size_t bytes = (n + 255) / 256 * 256;
    *p = aligned_alloc(256, bytes ? bytes : 256);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xFF, bytes);       // garbage, as on the device
    emu::mem_add(*p, n, emu::SPACE_DEVICE);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    emu::sync_all();               // cudaFree waits for the device
    if (!emu::mem_remove(p, emu::SPACE_DEVICE)) {
        emu::set_error(cudaErrorInvalidDevicePointer, "cudaFree(%p): not a pointer that cudaMalloc returned", p);
        return cudaErrorInvalidDevicePointer;
    }
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
    *p = aligned_alloc(256, n ? (n + 255) / 256 * 256 : 256);
    if (!*p) return cudaErrorMemoryAllocation;
    emu::mem_add(*p, n, emu::SPACE_PINNED);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    if (!p) return cudaSuccess;
    emu::sync_all();
    if (!emu::mem_remove(p, emu::SPACE_PINNED)) {
        emu::set_error(cudaErrorInvalidValue, "cudaFreeHost(%p): not a pointer that cudaMallocHost returned", p);
        return cudaErrorInvalidValue;
    }
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_, size_t *total) { *free_ = (size_t)4 << 30; *total = (size_t)8 << 30; return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
    if (!n) return cudaSuccess;
    if (!emu::want_device(p, "cudaMemsetAsync", "the destination")) return cudaErrorInvalidDevicePointer;
    emu::enqueue(s, [=]() { memset(p, v, n); });
    return cudaSuccess;
}
// On the legacy stream 0 (which the back end's non-blocking streams are not ordered with).
cudaError_t cudaMemset(void *p, int v, size_t n) {
    if (!n) return cudaSuccess;
    if (!emu::want_device(p, "cudaMemset", "the destination")) return cudaErrorInvalidDevicePointer;
    emu::enqueue(0, [=]() { memset(p, v, n); });
    return cudaSuccess;
}
static const char *kind_name(cudaMemcpyKind k) {
    switch (k) {
    case cudaMemcpyHostToHost: return "HostToHost";
    case cudaMemcpyHostToDevice: return "HostToDevice";
    case cudaMemcpyDeviceToHost: return "DeviceToHost";
    case cudaMemcpyDeviceToDevice: return "DeviceToDevice";
    default: return "?";
    }
}
// The kind's promise about each side, checked; 0 and the error recorded if broken.
static int check_kind(const char *what, cudaMemcpyKind k, void *d, const void *s) {
    char w[96];
    snprintf(w, sizeof w, "%s(%s)", what, kind_name(k));
    int src_dev = k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice;
    int dst_dev = k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice;
    if (k < cudaMemcpyHostToHost || k > cudaMemcpyDeviceToDevice) { emu::set_error(cudaErrorInvalidValue, "%s: unknown kind %d", what, (int)k); return 0; }
    if (src_dev ? !emu::want_device(s, w, "the source") : !emu::want_host(s, w, "the source")) return 0;
    if (dst_dev ? !emu::want_device(d, w, "the destination") : !emu::want_host(d, w, "the destination")) return 0;
    return 1;
}
// Rows of a (possibly pitched) copy, run in stream order. As CUDA: a source in pageable
// host memory is taken at the call; a destination in pageable host memory is complete on return.
static cudaError_t copy_rows(const char *what, void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                             cudaMemcpyKind k, cudaStream_t st) {
    if (!w || !h) return cudaSuccess;
    if (dp < w || sp < w) return cudaErrorInvalidValue;
    if (!check_kind(what, k, d, s)) return k == cudaMemcpyDeviceToHost || k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice
                                             ? cudaErrorInvalidDevicePointer : cudaErrorInvalidValue;
    int src_pageable = (k == cudaMemcpyHostToDevice || k == cudaMemcpyHostToHost) && emu::space_of(s) == emu::SPACE_HOST;
    int dst_pageable = (k == cudaMemcpyDeviceToHost || k == cudaMemcpyHostToHost) && emu::space_of(d) == emu::SPACE_HOST;
    if (src_pageable) {   // staged at the call
        auto buf = std::make_shared<std::vector<unsigned char>>(w * h);
        for (size_t r = 0; r < h; r++) memcpy(buf->data() + r * w, (const char *)s + r * sp, w);
        emu::enqueue(st, [=]() { for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, buf->data() + r * w, w); });
    } else {
        emu::enqueue(st, [=]() { for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w); });
    }
    if (dst_pageable) emu::resolve(st)->wait();
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
    return copy_rows("cudaMemcpyAsync", d, n, s, n, n, 1, k, st);
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t st) {
    return copy_rows("cudaMemcpy2DAsync", d, dp, s, sp, w, h, k, st);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    *s = new CUstream_st();
    std::lock_guard<std::mutex> g(emu::streams_mu);
    emu::streams.insert(*s);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { emu::resolve(s)->wait(); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return cudaErrorInvalidValue;
    { std::lock_guard<std::mutex> g(emu::streams_mu); emu::streams.erase(s); }
    s->wait();
    delete s;
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new CUevent_st(); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (!e) return cudaErrorInvalidValue;
    uint64_t n;
    { std::lock_guard<std::mutex> l(e->m); n = ++e->recorded; }
    emu::enqueue(s, [e, n]() {
        // notified under the lock: once a waiter (or cudaEventQuery) sees the record reached and
        // takes the lock, this task no longer touches e, so the event may be destroyed
        std::lock_guard<std::mutex> l(e->m);
        e->t = emu::now_ms();
        if (e->reached < n) e->reached = n;
        e->cv.notify_all();
    });
    return cudaSuccess;
}
// Waits for the event's latest record (none: returns at once, as CUDA).
static void event_wait(cudaEvent_t e) {
    std::unique_lock<std::mutex> l(e->m);
    uint64_t want = e->recorded;
    e->cv.wait(l, [&] { return e->reached >= want; });
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) { if (!e) return cudaErrorInvalidValue; event_wait(e); return cudaSuccess; }
// cudaSuccess once the stream has reached the event's latest record (none: at once), else cudaErrorNotReady
cudaError_t cudaEventQuery(cudaEvent_t e) {
    if (!e) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> l(e->m);
    return e->reached >= e->recorded ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    if (!e) return cudaErrorInvalidValue;
    uint64_t want;
    { std::lock_guard<std::mutex> l(e->m); want = e->recorded; }
    emu::enqueue(s, [e, want]() {
        std::unique_lock<std::mutex> l(e->m);
        e->cv.wait(l, [&] { return e->reached >= want; });
    });
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    double ta, tb;
    {
        std::lock_guard<std::mutex> la(a->m);
        if (!a->recorded || a->reached < a->recorded) return cudaErrorNotReady;
        ta = a->t;
    }
    {
        std::lock_guard<std::mutex> lb(b->m);
        if (!b->recorded || b->reached < b->recorded) return cudaErrorNotReady;
        tb = b->t;
    }
    *ms = (float)(tb - ta);
    return cudaSuccess;
}
// (CUDA releases a pending event when it completes; here the record must finish first)
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    if (!e) return cudaErrorInvalidValue;
    event_wait(e);
    { std::lock_guard<std::mutex> l(e->m); }   // the recording task has let go of e (it notifies under the lock)
    delete e;
    return cudaSuccess;
}

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
    *d = new EmuLtDesc{ c, scale, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, nullptr, -1 };
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { delete d; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n) {
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: case CUBLASLT_MATMUL_DESC_TRANSB:
        if (n != sizeof(cublasOperation_t)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(a == CUBLASLT_MATMUL_DESC_TRANSA ? &d->ta : &d->tb, buf, n);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        if (n != sizeof(cublasLtEpilogue_t)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&d->epilogue, buf, n);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        if (n != sizeof(void *)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&d->bias, buf, n);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        if (n != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&d->bias_type, buf, n);
        return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
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
// EMU_NO_LT_ALGO=1: the heuristic finds nothing (the back end's cublasGemmEx path). The
// algorithm records the alignments it relies on: A, B, C, D from the preference, and the
// bias pointer's from the descriptor (cuBLASLt reads the bias pointer's value for that).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t p,
                                              int requested, cublasLtMatmulHeuristicResult_t *res, int *found) {
    const char *no = getenv("EMU_NO_LT_ALGO");
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    if (no && !strcmp(no, "1")) { *found = 0; return CUBLAS_STATUS_NOT_SUPPORTED; }
    memset(res, 0, sizeof *res);
    for (int i = 0; i < 4; i++) res->algo.data[i] = p->align[i];      // the algorithm relies on these
    if (d->epilogue == CUBLASLT_EPILOGUE_BIAS) {
        unsigned a = 256;
        while (a > 1 && (uintptr_t)d->bias % a) a >>= 1;
        res->algo.data[4] = a;
    }
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
// Column-major D[m,n] = alpha·op(A)[m,k]·op(B)[k,n] + beta·C (+ bias[i] for row i when bias is
// given, type ct), fp32 accumulation, one rounding of D (beta = 0: C not read). D may be C
// (same ld); the caller refuses a partial overlap.
static void gemm_cm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const void *A, cudaDataType_t at, long lda, const void *B, cudaDataType_t bt, long ldb,
                    float beta, const void *C, cudaDataType_t ct, long ldc, cublasComputeType_t compute,
                    void *D, long ldd, const void *bias) {
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
            float v = alpha * acc;
            if (beta != 0.0f) v += beta * load(C, ct, (size_t)i + (size_t)j * ldc);
            if (bias) v += load(bias, ct, (size_t)i);
            store(D, ct, (size_t)i + (size_t)j * ldd, v);
        }
}
static void gemm_cm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const void *A, cudaDataType_t at, long lda, const void *B, cudaDataType_t bt, long ldb,
                    float beta, void *C, cudaDataType_t ct, long ldc, cublasComputeType_t compute) {
    gemm_cm(ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, C, ldc, nullptr);
}
static size_t type_size(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }
// The byte range a column-major [rows, cols] matrix with leading dimension ld spans
static void extent(const void *p, const EmuLtLayout *l, const char **lo, const char **hi) {
    *lo = (const char *)p;
    *hi = *lo + ((size_t)(l->cols - 1) * (size_t)l->ld + l->rows) * type_size(l->type);
}
static unsigned alignment_of(const void *p) { unsigned a = 256; while (a > 1 && (uintptr_t)p % a) a >>= 1; return a; }

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
                              const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc,
                              void *D, cublasLtMatrixLayout_t ldd, const cublasLtMatmulAlgo_t *algo, void *, size_t, cudaStream_t stream) {
    uint64_t m = lc->rows, n = lc->cols;
    uint64_t am = d->ta == CUBLAS_OP_N ? la->rows : la->cols, ak = d->ta == CUBLAS_OP_N ? la->cols : la->rows;
    uint64_t bk = d->tb == CUBLAS_OP_N ? lb->rows : lb->cols, bn = d->tb == CUBLAS_OP_N ? lb->cols : lb->rows;
    if (am != m || bn != n || ak != bk || ldd->rows != m || ldd->cols != n) {
        fprintf(stderr, "cuda emulator: cublasLtMatmul: layouts disagree: op(A) %llux%llu, op(B) %llux%llu, C %llux%llu, D %llux%llu\n",
                (unsigned long long)am, (unsigned long long)ak, (unsigned long long)bk, (unsigned long long)bn,
                (unsigned long long)m, (unsigned long long)n, (unsigned long long)ldd->rows, (unsigned long long)ldd->cols);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (d->epilogue != CUBLASLT_EPILOGUE_DEFAULT && d->epilogue != CUBLASLT_EPILOGUE_BIAS) {
        fprintf(stderr, "cuda emulator: cublasLtMatmul: epilogue %d is not emulated (DEFAULT and BIAS are)\n", (int)d->epilogue);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const void *bias = d->epilogue == CUBLASLT_EPILOGUE_BIAS ? d->bias : nullptr;
    const void *ptr[5] = { A, B, C, D, bias };
    static const char *const name[5] = { "operand A", "operand B", "operand C", "operand D", "the bias" };
    for (int i = 0; i < 5; i++)
        if (ptr[i] && alignment_of(ptr[i]) < algo->data[i]) {
            fprintf(stderr, "cuda emulator: cublasLtMatmul: %s at %p is less aligned than the %llu bytes promised to the heuristic\n",
                    name[i], ptr[i], (unsigned long long)algo->data[i]);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    if (la->type != lb->type || la->type != lc->type || ldd->type != lc->type) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (bias && d->bias_type != -1 && d->bias_type != (int32_t)lc->type) return CUBLAS_STATUS_NOT_SUPPORTED;
    // In place only as C == D with one layout; otherwise C and D must not share memory
    if (C == D && lc->ld != ldd->ld) {
        fprintf(stderr, "cuda emulator: cublasLtMatmul: C == D with different leading dimensions (%lld, %lld)\n",
                (long long)lc->ld, (long long)ldd->ld);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    float a = *(const float *)alpha, be = *(const float *)beta;
    if (C != D && be != 0.0f) {
        const char *clo, *chi, *dlo, *dhi;
        extent(C, lc, &clo, &chi); extent(D, ldd, &dlo, &dhi);
        if (clo < dhi && dlo < chi) {
            fprintf(stderr, "cuda emulator: cublasLtMatmul: D (%p) overlaps C (%p) without being C\n", D, C);
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    for (int i = 0; i < 5; i++)
        if ((i < 4 || bias) && !emu::want_device(ptr[i], "cublasLtMatmul", i < 4 ? name[i] : "bias")) return CUBLAS_STATUS_INVALID_VALUE;
    // alpha, beta and the descriptor: host state, read at the call; the product runs in stream order
    cublasOperation_t ta = d->ta, tb = d->tb;
    cudaDataType_t at = la->type, bt = lb->type, ct = lc->type;
    long lda = la->ld, ldb = lb->ld, ldc = lc->ld, ld_d = ldd->ld;
    cublasComputeType_t compute = d->compute;
    emu::enqueue(stream, [=]() { gemm_cm(ta, tb, (int)m, (int)n, (int)ak, a, A, at, lda, B, bt, ldb, be, C, ct, ldc, compute, D, ld_d, bias); });
    return CUBLAS_STATUS_SUCCESS;
}
static int gemm_args_ok(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc) {
    return !(m < 0 || n < 0 || k < 0 || ldc < std::max(1, m) || lda < std::max(1, ta == CUBLAS_OP_N ? m : k) ||
             ldb < std::max(1, tb == CUBLAS_OP_N ? k : n));
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
                            void *C, cudaDataType_t ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t) {
    if (!gemm_args_ok(ta, tb, m, n, k, lda, ldb, ldc)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!emu::want_device(A, "cublasGemmEx", "A") || !emu::want_device(B, "cublasGemmEx", "B") ||
        !emu::want_device(C, "cublasGemmEx", "C"))
        return CUBLAS_STATUS_INVALID_VALUE;
    float a = *(const float *)alpha, be = *(const float *)beta;
    emu::enqueue(h->stream, [=]() { gemm_cm(ta, tb, m, n, k, a, A, at, lda, B, bt, ldb, be, C, ct, ldc, compute); });
    return CUBLAS_STATUS_SUCCESS;
}
// The pointer arrays are device memory (the back end uploads them): read when the stream
// reaches the call, and each pointer in them must be device memory too.
cublasStatus_t cublasGemmGroupedBatchedEx(cublasHandle_t h, const cublasOperation_t ta[], const cublasOperation_t tb[],
                                          const int m[], const int n[], const int k[], const void *alpha, const void *const A[],
                                          cudaDataType_t at, const int lda[], const void *const B[], cudaDataType_t bt,
                                          const int ldb[], const void *beta, void *const C[], cudaDataType_t ct, const int ldc[],
                                          int group_count, const int group_size[], cublasComputeType_t compute) {
    const char *what = "cublasGemmGroupedBatchedEx";
    if (!emu::want_device(A, what, "Aarray") || !emu::want_device(B, what, "Barray") || !emu::want_device(C, what, "Carray"))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct Group { cublasOperation_t ta, tb; int m, n, k, lda, ldb, ldc, size; float alpha, beta; };
    auto groups = std::make_shared<std::vector<Group>>();
    for (int g = 0; g < group_count; g++) {   // the host arrays, read at the call
        if (!gemm_args_ok(ta[g], tb[g], m[g], n[g], k[g], lda[g], ldb[g], ldc[g]) || group_size[g] < 0) return CUBLAS_STATUS_INVALID_VALUE;
        groups->push_back({ ta[g], tb[g], m[g], n[g], k[g], lda[g], ldb[g], ldc[g], group_size[g],
                            ((const float *)alpha)[g], ((const float *)beta)[g] });
    }
    emu::enqueue(h->stream, [=]() {
        int idx = 0;
        for (const Group &g : *groups)
            for (int i = 0; i < g.size; i++, idx++) {
                if (emu::space_of(A[idx]) != emu::SPACE_DEVICE || emu::space_of(B[idx]) != emu::SPACE_DEVICE ||
                    emu::space_of(C[idx]) != emu::SPACE_DEVICE)
                    emu::fail("%s: GEMM %d of the batch has an operand outside device memory (A %p, B %p, C %p): "
                              "an illegal address on the GPU", what, idx, A[idx], B[idx], C[idx]);
                gemm_cm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, A[idx], at, g.lda, B[idx], bt, g.ldb, g.beta, C[idx], ct, g.ldc, compute);
            }
    });
    return CUBLAS_STATUS_SUCCESS;
}
