// test_emu_nccl.cpp — the emulator's NCCL stand-in (src/backend/cuda/emu/emu_nccl.cpp) between
// three forked processes, as the emulated ranks of build/emu/train_nccl are: every collective
// comm_nccl.c uses against values computed here, with sizes above the stand-in's 64 KiB
// slots and mailboxes (several rounds), in place and not; a ring exchange in one group larger
// than a mailbox (it would deadlock if the group ran its calls one after another); a host
// pointer refused at the call as NCCL refuses it; and ncclCommAbort freeing ranks stuck in a
// collective that a peer never joins. Built and run by `make cuda-emu-test`.
#include <cuda_runtime.h>
#include <nccl.h>
#include <future>
#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NRANK = 3, NCHECK = 16 };
static const char *const CHECKS[NCHECK] = {
    "emu_nccl_init", "emu_nccl_all_reduce_sum_f32", "emu_nccl_all_reduce_in_place_max_f64",
    "emu_nccl_all_reduce_bf16_same_bits_on_every_rank", "emu_nccl_all_gather_in_place", "emu_nccl_reduce_scatter",
    "emu_nccl_broadcast", "emu_nccl_group_ring_exchange_beyond_a_mailbox", "emu_nccl_refuses_host_pointer",
    "emu_nccl_accepts_pinned", "emu_nccl_is_asynchronous", "emu_nccl_abort_frees_a_stuck_collective",
    "emu_nccl_async_error_after_abort", nullptr, nullptr, nullptr,
};
struct Shared { int result[NRANK][NCHECK]; float bf16_bits[NRANK][64]; int looked[NRANK]; };   // 1 pass, 2 fail, 0 not run

static float *dev_f(size_t n) { float *p = nullptr; cudaMalloc((void **)&p, n * sizeof(float)); return p; }
static void up(void *d, const void *h, size_t bytes, cudaStream_t s) { cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s); }
static void down(void *h, const void *d, size_t bytes, cudaStream_t s) { cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s); }

static void rank_main(int r, ncclUniqueId id, ncclUniqueId id_abort, Shared *sh) {
    auto set = [&](int k, bool ok) { sh->result[r][k] = ok ? 1 : 2; };
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    ncclComm_t c = nullptr;
    set(0, ncclCommInitRank(&c, NRANK, id, r) == ncclSuccess);
    if (!c) return;
    const size_t n = 40000;                        // 160 KB of fp32: three slot rounds
    std::vector<float> h(n), o(n);
    // all-reduce (sum, out of place): Σ_r (r + 1)·(i % 97) = 6·(i % 97), exact
    for (size_t i = 0; i < n; i++) h[i] = (float)((r + 1) * (i % 97));
    float *a = dev_f(n), *b = dev_f(n);
    up(a, h.data(), n * 4, s);
    ncclAllReduce(a, b, n, ncclFloat32, ncclSum, c, s);
    down(o.data(), b, n * 4, s);
    bool ok = true;
    for (size_t i = 0; i < n; i++) ok &= o[i] == (float)(6 * (i % 97));
    set(1, ok);
    // all-reduce (max, in place, fp64)
    std::vector<double> hd(n), od(n);
    for (size_t i = 0; i < n; i++) hd[i] = (double)((i + r) % 5) - 0.5;
    double *ad = nullptr; cudaMalloc((void **)&ad, n * 8);
    up(ad, hd.data(), n * 8, s);
    ncclAllReduce(ad, ad, n, ncclFloat64, ncclMax, c, s);
    down(od.data(), ad, n * 8, s);
    ok = true;
    for (size_t i = 0; i < n; i++) {
        double want = -1e300;
        for (int q = 0; q < NRANK; q++) want = fmax(want, (double)((i + q) % 5) - 0.5);
        ok &= od[i] == want;
    }
    set(2, ok);
    // bf16 sum: the same bits on every rank (compared by the parent)
    std::vector<__nv_bfloat16> hb(64);
    for (int i = 0; i < 64; i++) hb[i] = __float2bfloat16_rn(1.0f + 0.01f * (float)(i * (r + 1)));
    __nv_bfloat16 *bb = nullptr; cudaMalloc((void **)&bb, 64 * 2);
    up(bb, hb.data(), 128, s);
    ncclAllReduce(bb, bb, 64, ncclBfloat16, ncclSum, c, s);
    down(hb.data(), bb, 128, s);
    for (int i = 0; i < 64; i++) sh->bf16_bits[r][i] = __bfloat162float(hb[i]);
    set(3, fabsf(sh->bf16_bits[r][10] - (3.0f + 0.01f * 10 * 6)) < 0.02f);
    // all-gather in place: rank r's part is recv + r·m
    const size_t m = 20000;
    float *g = dev_f(NRANK * m);
    for (size_t i = 0; i < m; i++) h[i] = (float)(r * 100000 + i);
    up(g + r * m, h.data(), m * 4, s);
    ncclAllGather(g + r * m, g, m, ncclFloat32, c, s);
    std::vector<float> og(NRANK * m);
    down(og.data(), g, og.size() * 4, s);
    ok = true;
    for (int q = 0; q < NRANK; q++)
        for (size_t i = 0; i < m; i++) ok &= og[q * m + i] == (float)(q * 100000 + i);
    set(4, ok);
    // reduce-scatter: rank p gets Σ_q (q + 1)·(p·m + i)
    std::vector<float> hs(NRANK * m);
    for (size_t i = 0; i < hs.size(); i++) hs[i] = (float)((r + 1) * (i % 1000));
    up(g, hs.data(), hs.size() * 4, s);
    ncclReduceScatter(g, b, m, ncclFloat32, ncclSum, c, s);
    down(o.data(), b, m * 4, s);
    ok = true;
    for (size_t i = 0; i < m; i++) ok &= o[i] == (float)(6 * ((r * m + i) % 1000));
    set(5, ok);
    // broadcast from rank 1
    for (size_t i = 0; i < n; i++) h[i] = r == 1 ? (float)i : -1.0f;
    up(a, h.data(), n * 4, s);
    ncclBroadcast(a, a, n, ncclFloat32, 1, c, s);
    down(o.data(), a, n * 4, s);
    ok = true;
    for (size_t i = 0; i < n; i++) ok &= o[i] == (float)i;
    set(6, ok);
    // a ring exchange of 160 KB in one group: send to r+1, receive from r-1
    for (size_t i = 0; i < n; i++) h[i] = (float)(r * 7 + i % 13);
    up(a, h.data(), n * 4, s);
    ncclGroupStart();
    ncclSend(a, n, ncclFloat32, (r + 1) % NRANK, c, s);
    ncclRecv(b, n, ncclFloat32, (r + NRANK - 1) % NRANK, c, s);
    ncclGroupEnd();
    down(o.data(), b, n * 4, s);
    ok = true;
    int from = (r + NRANK - 1) % NRANK;
    for (size_t i = 0; i < n; i++) ok &= o[i] == (float)(from * 7 + i % 13);
    set(7, ok);
    // a host pointer (the review's host scalar) is refused at the call; page-locked memory is not
    double scalar = 1.0, *pin = nullptr;
    set(8, ncclAllReduce(&scalar, &scalar, 1, ncclFloat64, ncclSum, c, s) == ncclInvalidArgument &&
           ncclSend(h.data(), 4, ncclFloat32, (r + 1) % NRANK, c, s) == ncclInvalidArgument);
    cudaMallocHost((void **)&pin, 8);
    *pin = (double)r;
    set(9, ncclAllReduce(pin, pin, 1, ncclFloat64, ncclSum, c, s) == ncclSuccess);
    cudaStreamSynchronize(s);
    sh->result[r][9] = sh->result[r][9] == 1 && *pin == 3.0 ? 1 : 2;
    // asynchronous: with the stream held, a new input is queued, then the all-reduce; a stand-in
    // that ran at the call would reduce the old input
    for (size_t i = 0; i < n; i++) h[i] = 1.0f;
    up(a, h.data(), n * 4, s);
    cudaStreamSynchronize(s);
    auto held = std::make_shared<std::promise<void>>();
    std::shared_future<void> f = held->get_future().share();
    emu::enqueue(s, [f]() { f.wait(); });
    for (size_t i = 0; i < n; i++) h[i] = 2.0f;
    up(a, h.data(), n * 4, s);                     // pageable: taken now, written in stream order
    ncclAllReduce(a, b, n, ncclFloat32, ncclSum, c, s);
    cudaEvent_t e; cudaEventCreate(&e);
    cudaEventRecord(e, s);
    bool pending = cudaEventQuery(e) == cudaErrorNotReady;
    held->set_value();
    down(o.data(), b, n * 4, s);
    set(10, pending && o[0] == 6.0f && o[n - 1] == 6.0f);
    // abort: ranks 0 and 1 all-reduce on a communicator that rank 2 never uses
    ncclComm_t ca = nullptr;
    ncclCommInitRank(&ca, NRANK, id_abort, r);
    if (r < 2) {
        ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, ca, s);
        cudaEventRecord(e, s);
        usleep(300000);
        bool stuck = cudaEventQuery(e) == cudaErrorNotReady;
        // both ranks look before either aborts (an abort releases the other rank too)
        __atomic_store_n(&sh->looked[r], 1, __ATOMIC_RELEASE);
        double t0 = emu::now_ms();
        while (!__atomic_load_n(&sh->looked[1 - r], __ATOMIC_ACQUIRE) && emu::now_ms() - t0 < 30e3) usleep(1000);
        ncclCommAbort(ca);
        t0 = emu::now_ms();
        while (cudaEventQuery(e) == cudaErrorNotReady && emu::now_ms() - t0 < 10e3) usleep(1000);
        set(11, stuck && cudaEventQuery(e) == cudaSuccess);
        ncclResult_t ae = ncclSuccess;
        ncclCommGetAsyncError(ca, &ae);
        set(12, ae == ncclRemoteError && strstr(ncclGetLastError(ca), "aborted"));
    } else {
        set(11, true); set(12, true);
    }
    cudaEventDestroy(e);
    ncclCommDestroy(c);
}

int main() {
    Shared *sh = (Shared *)mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(sh, 0, sizeof *sh);
    ncclUniqueId id, id_abort;
    ncclGetUniqueId(&id);
    ncclGetUniqueId(&id_abort);
    fflush(stdout);
    pid_t pid[NRANK];
    for (int r = 0; r < NRANK; r++) {
        pid[r] = fork();
        if (pid[r] == 0) { rank_main(r, id, id_abort, sh); fflush(stdout); _exit(0); }
    }
    int fails = 0;
    for (int r = 0; r < NRANK; r++) {
        int st = 0;
        waitpid(pid[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { printf("FAIL emu_nccl_rank_%d_exit: status %d\n", r, st); fails++; }
    }
    for (int k = 0; k < NCHECK && CHECKS[k]; k++) {
        int bad = -1;
        for (int r = 0; r < NRANK; r++) if (sh->result[r][k] != 1) { bad = r; break; }
        if (bad < 0) printf("PASS %s\n", CHECKS[k]);
        else { printf("FAIL %s: rank %d %s\n", CHECKS[k], bad, sh->result[bad][k] ? "failed" : "did not get there"); fails++; }
        if (k == 3) {   // the bf16 sums: bit for bit the same on every rank
            bool same = true;
            for (int r = 1; r < NRANK; r++) same &= !memcmp(sh->bf16_bits[r], sh->bf16_bits[0], sizeof sh->bf16_bits[0]);
            if (!same) { printf("FAIL %s: the ranks' bf16 sums differ\n", CHECKS[k]); fails++; }
        }
    }
    return fails ? 1 : 0;
}
