// calibrate — measure this machine and write the performance model's `cpu-local` profile.
//
//   build/calibrate [--out experiments/hardware/cpu-local.yaml] [--ranks 2,4] [--quick]
//
// Measures, printing each table as it goes:
//   1. sgemm (OpenBLAS, row-major NN, all cores) on a grid of shapes M × N × K, the skinny
//      low-rank ones included (N or K = 16 … 64): the profile's GEMM table;
//   2. the engine's sgemm peak (optim.h: best-of-3 2048³, what the trainer's MFU uses);
//   3. memory bandwidth: a STREAM-style triad a = b + s·c over 3 × 64 MiB (all cores);
//   4. the engine's causal attention forward and backward (ops/attention.c) at two
//      recipe-sized shapes, as a fraction of the sgemm peak (FLOPs counted with
//      FlashAttention-2's convention, docs/performance-model.md);
//   5. the engine's MPI collectives (parallel/comm.h: all-reduce, all-gather,
//      reduce-scatter, sendrecv) at 2 and 4 ranks (4 oversubscribed on this 2-core
//      machine) over message sizes 4 B … 16 MiB — each rank count in a child
//      `mpirun -np N build/calibrate --mpi-worker FILE` — then fits α (base + per-step
//      latency) and β (bus bandwidth) per collective by least squares on relative error.
// Then writes the profile with the date, host, CPU and load average in its comments.
// Takes about a minute and a half on 2 cores. Timings on a shared machine vary: rerun when
// the load average was high, and never read one number as a property of the code.
#include <cblas.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/check.h"
#include "../core/env.h"
#include "../core/timer.h"
#include "../ops/ops.h"
#include "../parallel/comm.h"
#include "../sim/profile.h"
#include "../train/optim.h"

// ---- helpers --------------------------------------------------------------------------------

static float *rand_buf(size_t n, unsigned seed) {
    float *p = xaligned_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void load_average(double la[3]) {
    if (getloadavg(la, 3) != 3) la[0] = la[1] = la[2] = -1;
}

// ---- 1. sgemm grid --------------------------------------------------------------------------

// Seconds of one C[M,N] = A[M,K] B[K,N]: the best of >= 3 timed repetitions, each repeating
// the call enough times to last >= 2 ms (small shapes), after one warm-up call. The best,
// because other processes on a shared machine only ever add time.
static double time_sgemm(int M, int N, int K, double min_total) {
    float *A = rand_buf((size_t)M * K, 1), *B = rand_buf((size_t)K * N, 2), *C = xaligned_alloc((size_t)M * N * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    double t0 = now_seconds();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    double one = now_seconds() - t0;
    int inner = one > 0 ? (int)ceil(2e-3 / one) : 1000;
    if (inner < 1) inner = 1;
    if (inner > 10000) inner = 10000;
    double per[64];
    int reps = 0;
    double spent = 0;
    while (reps < 64 && (reps < 3 || spent < min_total)) {
        t0 = now_seconds();
        for (int i = 0; i < inner; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        double dt = now_seconds() - t0;
        spent += dt;
        per[reps++] = dt / inner;
    }
    free(A); free(B); free(C);
    double best = per[0];
    for (int r = 1; r < reps; r++)
        if (per[r] < best) best = per[r];
    return best;
}

static void measure_gemm(HwGemm *g, const int *Ms, int nM, const int *Ns, int nN, const int *Ks, int nK, double min_total) {
    g->present = 1;
    g->model = GEMM_TABLE;
    g->nM = nM; g->nN = nN; g->nK = nK;
    g->Ms = xcalloc((size_t)nM, sizeof(int)); memcpy(g->Ms, Ms, sizeof(int) * (size_t)nM);
    g->Ns = xcalloc((size_t)nN, sizeof(int)); memcpy(g->Ns, Ns, sizeof(int) * (size_t)nN);
    g->Ks = xcalloc((size_t)nK, sizeof(int)); memcpy(g->Ks, Ks, sizeof(int) * (size_t)nK);
    g->rate = xcalloc((size_t)(nM * nN * nK), sizeof(double));
    printf("\n1. sgemm GFLOP/s (row-major NN, %d threads), rows M x N, columns K\n", omp_get_max_threads());
    for (int a = 0; a < nM; a++) {
        printf("%6s %6s", "M", "N");
        for (int k = 0; k < nK; k++) printf("  K=%-6d", Ks[k]);
        printf("\n");
        for (int b = 0; b < nN; b++) {
            printf("%6d %6d", Ms[a], Ns[b]);
            for (int k = 0; k < nK; k++) {
                double s = time_sgemm(Ms[a], Ns[b], Ks[k], min_total);
                double r = 2.0 * Ms[a] * Ns[b] * Ks[k] / s;
                g->rate[((size_t)a * nN + b) * nK + k] = r;
                printf("  %8.2f", r / 1e9);
                fflush(stdout);
            }
            printf("\n");
        }
    }
}

// ---- 3. memory bandwidth --------------------------------------------------------------------

static double measure_triad(size_t n, int reps) {
    float *a = xaligned_alloc(n * sizeof(float)), *b = rand_buf(n, 3), *c = rand_buf(n, 4);
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        double t0 = now_seconds();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
        double dt = now_seconds() - t0;
        if (r > 0 && dt < best) best = dt;   // the first pass faults the pages in
    }
    volatile float sink = a[n / 3];
    (void)sink;
    free(a); free(b); free(c);
    return 3.0 * sizeof(float) * n / best;   // STREAM counts 2 reads + 1 write
}

// ---- 4. attention ---------------------------------------------------------------------------

// FlashAttention-2's FLOP convention: forward 4·B·T²·hd·H / 2 (causal), backward 2.5× that.
static void measure_attention(int B, int T, int H, int hd, double *fwd_rate, double *bwd_rate) {
    size_t nq = (size_t)B * T * H * hd;
    float *q = rand_buf(nq, 5), *k = rand_buf(nq, 6), *v = rand_buf(nq, 7), *out = xaligned_alloc(nq * 4);
    float *att = xaligned_alloc((size_t)B * H * T * T * 4), *dout = rand_buf(nq, 8);
    float *dq = xaligned_alloc(nq * 4), *dk = xaligned_alloc(nq * 4), *dv = xaligned_alloc(nq * 4);
    double f = 4.0 * B * (double)T * T * hd * H / 2, tf[7], tb[7];
    attention_forward(out, att, q, k, v, B, T, H, H, hd);   // warm-up
    attention_backward(dq, dk, dv, dout, q, k, v, att, B, T, H, H, hd);
    for (int r = 0; r < 7; r++) {
        double t0 = now_seconds();
        attention_forward(out, att, q, k, v, B, T, H, H, hd);
        double t1 = now_seconds();
        attention_backward(dq, dk, dv, dout, q, k, v, att, B, T, H, H, hd);
        tf[r] = t1 - t0;
        tb[r] = now_seconds() - t1;
    }
    qsort(tf, 7, sizeof *tf, cmp_double);   // the best of 7 (see time_sgemm)
    qsort(tb, 7, sizeof *tb, cmp_double);
    *fwd_rate = f / tf[0];
    *bwd_rate = 2.5 * f / tb[0];
    free(q); free(k); free(v); free(out); free(att); free(dout); free(dq); free(dk); free(dv);
}

// ---- 5. collectives: the MPI worker ---------------------------------------------------------

enum { K_AR, K_AG, K_RS, K_P2P, K_N };
static const char *const kind_names[K_N] = { "all_reduce", "all_gather", "reduce_scatter", "p2p" };

// One call of kind k moving S bytes (the CommRecord's bytes) on the whole world as one TP group.
static void one_call(Comm *c, int k, float *buf, float *out, size_t S) {
    size_t n = S / sizeof(float), g = (size_t)c->tp;
    switch (k) {
    case K_AR: comm_all_reduce(c, GROUP_TP, buf, n, PHASE_OTHER, -1); break;
    case K_AG: comm_all_gather(c, GROUP_TP, buf, out, n / g, PHASE_OTHER, -1); break;
    case K_RS: comm_reduce_scatter(c, GROUP_TP, buf, out, n / g, PHASE_OTHER, -1); break;
    default: {
        // pairs (0,1), (2,3): every rank sends S bytes and receives S bytes at once
        int peer = c->tp_rank ^ 1;
        if (peer < c->tp) comm_sendrecv(c, GROUP_TP, buf, n, peer, 1, out, n, peer, 1, PHASE_OTHER, -1);
        break;
    }
    }
}

static int mpi_worker(int argc, char **argv, const char *path) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    int world;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
    Comm c;
    comm_init(&c, world, 1, 1);
    FILE *f = NULL;
    if (c.rank == 0) {
        f = fopen(path, "w");
        CHECK_ERRNO(!f, path);
    }
    size_t max_bytes = (size_t)16 << 20;
    float *buf = rand_buf(max_bytes / 4, 9), *out = xaligned_alloc(max_bytes);
    for (int k = 0; k < K_N; k++)
        for (size_t S = 4 * (size_t)world; S <= max_bytes; S *= 4) {
            // Every call is timed on its own between barriers, and the time of a call is the
            // slowest rank's; the size's time is the best call. On a shared machine a call
            // that is descheduled half-way is an outlier of the machine's load, not of the
            // collective: the best of many calls is what the hardware does.
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            double t0 = MPI_Wtime();
            one_call(&c, k, buf, out, S);   // warm-up, and an estimate for the repetitions
            double one = MPI_Wtime() - t0;
            CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
            int reps = one > 0 ? (int)(0.1 / one) : 300;
            if (reps < 10) reps = 10;
            if (reps > 300) reps = 300;
            double per[300];
            for (int r = 0; r < reps; r++) {
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                t0 = MPI_Wtime();
                one_call(&c, k, buf, out, S);
                per[r] = MPI_Wtime() - t0;
            }
            CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, per, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
            qsort(per, (size_t)reps, sizeof *per, cmp_double);
            if (f) fprintf(f, "%s %d %zu %.9g\n", kind_names[k], world, S, per[0]);
        }
    if (f) CHECK_ERRNO(fclose(f) != 0, path);
    free(buf); free(out);
    comm_free(&c);
    CHECK_MPI(MPI_Finalize());
    return 0;
}

// Runs the worker under mpirun with n ranks; returns 0 on success.
static int run_worker(int n, const char *out_path) {
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK_ERRNO(len <= 0, "readlink /proc/self/exe");
    self[len] = 0;
    char np[16];
    snprintf(np, sizeof np, "%d", n);
    const char *args[16];
    int a = 0;
    args[a++] = "timeout"; args[a++] = "300"; args[a++] = "mpirun"; args[a++] = "-np"; args[a++] = np;
    args[a++] = "--oversubscribe";
    if (geteuid() == 0) args[a++] = "--allow-run-as-root";
    args[a++] = "-x"; args[a++] = "OMP_NUM_THREADS=1";
    args[a++] = self; args[a++] = "--mpi-worker"; args[a++] = out_path; args[a] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        execvp(args[0], (char *const *)args);
        fprintf(stderr, "calibrate: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    CHECK_ERRNO(waitpid(pid, &status, 0) < 0, "waitpid");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// ---- the α-β fit ----------------------------------------------------------------------------

typedef struct { int kind, n; double bytes, t; int used; } Meas;   // used: kept by the fit

// Ring steps and bus factor of kind k on n ranks (sim.h); p2p: one step, the whole message.
static void kind_terms(int k, int n, double S, double *steps, double *bus_bytes) {
    if (k == K_AR) { *steps = 2.0 * (n - 1); *bus_bytes = S * 2.0 * (n - 1) / n; }
    else if (k == K_P2P) { *steps = 1; *bus_bytes = S; }
    else { *steps = n - 1.0; *bus_bytes = S * (n - 1.0) / n; }
}

// Weighted least squares t ≈ x0 + steps·x1 + bus·x2 on relative error, over the free
// unknowns of `mask` (bit j: x_j free, else 0); returns the weighted residual or inf when
// the solution is infeasible (x < 0, or x2 <= 0).
static double fit_mask(const Meas *m, int nm, int k, unsigned mask, double x[3]) {
    double A[3][3] = { { 0 } }, r[3] = { 0 };
    int idx[3], nf = 0;
    for (int j = 0; j < 3; j++)
        if (mask & (1u << j)) idx[nf++] = j;
    for (int i = 0; i < nm; i++) {
        if (m[i].kind != k || !m[i].used) continue;
        double row[3], w = 1.0 / m[i].t;
        kind_terms(k, m[i].n, m[i].bytes, &row[1], &row[2]);
        row[0] = 1;
        for (int a = 0; a < nf; a++) {
            r[a] += w * w * row[idx[a]] * m[i].t;
            for (int b = 0; b < nf; b++) A[a][b] += w * w * row[idx[a]] * row[idx[b]];
        }
    }
    // Gaussian elimination with partial pivoting on the nf×nf system
    for (int c = 0; c < nf; c++) {
        int piv = c;
        for (int i = c + 1; i < nf; i++)
            if (fabs(A[i][c]) > fabs(A[piv][c])) piv = i;
        if (fabs(A[piv][c]) < 1e-300) return INFINITY;
        for (int j = 0; j < nf; j++) { double t = A[c][j]; A[c][j] = A[piv][j]; A[piv][j] = t; }
        double t = r[c]; r[c] = r[piv]; r[piv] = t;
        for (int i = c + 1; i < nf; i++) {
            double fct = A[i][c] / A[c][c];
            for (int j = c; j < nf; j++) A[i][j] -= fct * A[c][j];
            r[i] -= fct * r[c];
        }
    }
    double sol[3] = { 0, 0, 0 };
    for (int c = nf - 1; c >= 0; c--) {
        double s = r[c];
        for (int j = c + 1; j < nf; j++) s -= A[c][j] * sol[j];
        sol[c] = s / A[c][c];
    }
    x[0] = x[1] = x[2] = 0;
    for (int a = 0; a < nf; a++) x[idx[a]] = sol[a];
    if (x[0] < 0 || x[1] < 0 || !(x[2] > 0)) return INFINITY;
    double res = 0;
    for (int i = 0; i < nm; i++) {
        if (m[i].kind != k || !m[i].used) continue;
        double st, bb;
        kind_terms(k, m[i].n, m[i].bytes, &st, &bb);
        double e = (x[0] + st * x[1] + bb * x[2] - m[i].t) / m[i].t;
        res += e * e;
    }
    return res;
}

static double model_time(const HwCollCost *c, const Meas *m) {
    double st, bb;
    kind_terms(m->kind, m->n, m->bytes, &st, &bb);
    return c->base_s + st * c->hop_s + bb / c->bw[0];
}

// Best feasible fit; p2p has one step at every n, so its base and per-step latency are one
// number: its hop is fixed at 0. Timings on a shared machine have outliers (a rank
// descheduled in the middle of a call): after a first fit, points more than 3× the median
// relative error off (and more than 30%) are dropped and the fit is redone once.
static void fit_kind(Meas *m, int nm, int k, HwCollCost *out) {
    for (int pass = 0; pass < 2; pass++) {
        double best = INFINITY, x[3], bx[3] = { 0, 0, 0 };
        for (unsigned mask = 4; mask < 8; mask++) {      // x2 (1/busbw) is always free
            if (k == K_P2P && (mask & 2)) continue;
            double r = fit_mask(m, nm, k, mask, x);
            if (r < best) { best = r; memcpy(bx, x, sizeof bx); }
        }
        CHECK(isfinite(best), "calibrate: no feasible α-β fit for %s", kind_names[k]);
        out->base_s = bx[0];
        out->hop_s = bx[1];
        out->n_bw = 1;
        out->bw_n[0] = 0;
        out->bw[0] = 1.0 / bx[2];
        if (pass) break;
        double err[4096];
        int n = 0;
        for (int i = 0; i < nm; i++)
            if (m[i].kind == k) err[n++] = fabs(model_time(out, &m[i]) - m[i].t) / m[i].t;
        double lim = 3 * median(err, n);
        if (lim < 0.3) lim = 0.3;
        for (int i = 0; i < nm; i++)
            if (m[i].kind == k && fabs(model_time(out, &m[i]) - m[i].t) / m[i].t > lim) m[i].used = 0;
    }
}

// ---- main -----------------------------------------------------------------------------------

static void host_facts(char *host, size_t nh, char *cpu, size_t nc) {
    if (gethostname(host, nh) != 0) snprintf(host, nh, "unknown");
    snprintf(cpu, nc, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ') p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(cpu, nc, "%s", p);
            }
            break;
        }
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--mpi-worker")) return mpi_worker(argc, argv, argv[2]);
    ensure_passive_omp(argv);
    const char *out_path = "experiments/hardware/cpu-local.yaml";
    int ranks[4] = { 2, 4 }, n_ranks = 2, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) { quick = 1; continue; }
        if (i + 1 >= argc) die_input("option %s needs a value (usage: build/calibrate [--out FILE] [--ranks 2,4] [--quick])", argv[i]);
        if (!strcmp(argv[i], "--out")) out_path = argv[++i];
        else if (!strcmp(argv[i], "--ranks")) {
            n_ranks = 0;
            for (char *s = argv[++i], *e; *s && n_ranks < 4; s = *e ? e + 1 : e) {
                long v = strtol(s, &e, 10);
                if (e == s || (*e && *e != ',') || v < 2 || v > 16) die_input("--ranks: expected a list like 2,4 of counts in 2..16, got '%s'", argv[i]);
                ranks[n_ranks++] = (int)v;
            }
            if (!n_ranks) die_input("--ranks: expected a list like 2,4");
        } else die_input("unknown option '%s' (expected --out, --ranks, --quick)", argv[i]);
    }
    {   // fail now, not after the measurements, when the output cannot be written
        char probe[1100];
        xsnprintf(probe, sizeof probe, "%s.tmp", out_path);
        FILE *f = fopen(probe, "w");
        if (!f) die_input("cannot write %s: %s", probe, strerror(errno));
        fclose(f);
        unlink(probe);
    }
    char host[256], cpu[256], date[64];
    host_facts(host, sizeof host, cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    double la0[3], la1[3];
    load_average(la0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double t_start = now_seconds();
    printf("calibrate: %s, host %s, %s, %ld cores, load average %.2f %.2f %.2f\n", date, host, cpu, cores, la0[0], la0[1], la0[2]);

    HwProfile p;
    memset(&p, 0, sizeof p);
    // the profile's name is its file stem (profile_load checks it)
    const char *base = strrchr(out_path, '/');
    base = base ? base + 1 : out_path;
    size_t stem = strlen(base);
    if (stem < 6 || strcmp(base + stem - 5, ".yaml")) die_input("--out %s: expected a path ending in .yaml", out_path);
    snprintf(p.name, sizeof p.name, "%.*s", (int)(stem - 5), base);
    snprintf(p.device, sizeof p.device, "%.100s (%ld cores)", cpu, cores);
    snprintf(p.description, sizeof p.description, "this machine (%s), measured by build/calibrate on %s", host, date);

    // 1. sgemm grid: M = tokens of a micro-batch, N and K down to the bottleneck widths
    static const int Ms[] = { 64, 256, 1024, 4096 }, Ns[] = { 16, 64, 256, 1024, 4096 }, Ks[] = { 16, 64, 256, 1024, 4096 };
    static const int qMs[] = { 256, 2048 }, qNs[] = { 16, 1024 }, qKs[] = { 16, 1024 };
    if (quick) measure_gemm(&p.gemm[PREC_FP32], qMs, 2, qNs, 2, qKs, 2, 0.005);
    else measure_gemm(&p.gemm[PREC_FP32], Ms, 4, Ns, 5, Ks, 5, 0.02);
    // 2. the engine's peak
    double peak = measure_sgemm_peak_gflops() * 1e9;
    p.peak_flops[PREC_FP32] = peak;
    printf("\n2. sgemm peak (best-of-3 2048^3, the trainer's MFU reference): %.2f GFLOP/s\n", peak / 1e9);
    // 3. memory bandwidth
    double bw = measure_triad((size_t)16 << 20, quick ? 2 : 5);
    p.memory_bandwidth = bw;
    p.memory_efficiency = 1.0;
    p.host_bandwidth = bw;   // "host" and device memory are the same memory here
    p.memory_bytes = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    printf("\n3. memory bandwidth (triad, 3 x 64 MiB, %d threads): %.2f GB/s\n", omp_get_max_threads(), bw / 1e9);
    // 4. attention
    static const int shapes[2][4] = { { 8, 128, 2, 32 }, { 4, 256, 4, 32 } };
    double ef = 0, eb = 0;
    printf("\n4. attention (engine ops, causal, FA2 FLOP convention) as a fraction of the sgemm peak\n");
    printf("   %4s %5s %3s %4s  %12s %12s\n", "B", "T", "H", "hd", "fwd GFLOP/s", "bwd GFLOP/s");
    for (int s = 0; s < 2; s++) {
        double rf, rb;
        measure_attention(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], &rf, &rb);
        printf("   %4d %5d %3d %4d  %12.2f %12.2f\n", shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], rf / 1e9, rb / 1e9);
        ef += rf / peak / 2;
        eb += rb / peak / 2;
    }
    p.attention[PREC_FP32] = (HwAttention){ 1, ef > 1 ? 1 : ef, eb > 1 ? 1 : eb };
    printf("   efficiency (mean of the shapes): forward %.3f, backward %.3f\n", p.attention[PREC_FP32].forward,
           p.attention[PREC_FP32].backward);

    // 5. collectives
    Meas *meas = xcalloc(4096, sizeof *meas);
    int nm = 0, max_n = 0;
    for (int r = 0; r < n_ranks; r++) {
        char tmp[] = "/tmp/calibrate.XXXXXX";
        int fd = mkstemp(tmp);
        CHECK_ERRNO(fd < 0, "mkstemp");
        close(fd);
        printf("\n5. collectives at %d ranks%s (mpirun ... --mpi-worker)\n", ranks[r], ranks[r] > cores ? ", oversubscribed" : "");
        if (run_worker(ranks[r], tmp)) die_input("calibrate: the MPI worker at %d ranks failed (is mpirun installed?)", ranks[r]);
        FILE *f = fopen(tmp, "r");
        CHECK_ERRNO(!f, tmp);
        char kind[32];
        int n;
        double S, t;
        while (nm < 4096 && fscanf(f, "%31s %d %lf %lf", kind, &n, &S, &t) == 4) {
            int k = 0;
            while (k < K_N && strcmp(kind_names[k], kind)) k++;
            CHECK(k < K_N, "calibrate: unknown kind '%s' in %s", kind, tmp);
            meas[nm++] = (Meas){ k, n, S, t, 1 };
        }
        fclose(f);
        unlink(tmp);
        if (ranks[r] > max_n) max_n = ranks[r];
    }
    p.ranks_per_node = max_n;
    HwLink *l = &p.link[HW_INTRA];
    l->present = 1;
    for (int k = 0; k < K_N; k++) fit_kind(meas, nm, k, &l->coll[k]);
    printf("\n   fitted: t = base + steps·hop + bytes·f/busbw (steps, f: docs/performance-model.md)\n");
    for (int k = 0; k < K_N; k++)
        printf("   %-15s base %8.2f us  hop %8.2f us  busbw %8.3f GB/s\n", kind_names[k], l->coll[k].base_s * 1e6,
               l->coll[k].hop_s * 1e6, l->coll[k].bw[0] / 1e9);
    printf("\n   %-15s %5s %10s %12s %12s %8s\n", "collective", "ranks", "bytes", "measured us", "model us", "error");
    double errs[4096];
    int ne = 0, dropped = 0;
    for (int i = 0; i < nm; i++) {
        double model = model_time(&l->coll[meas[i].kind], &meas[i]);
        double e = (model - meas[i].t) / meas[i].t;
        errs[ne++] = fabs(e);
        dropped += !meas[i].used;
        printf("   %-15s %5d %10.0f %12.2f %12.2f %+7.1f%%%s\n", kind_names[meas[i].kind], meas[i].n, meas[i].bytes,
               meas[i].t * 1e6, model * 1e6, 100 * e, meas[i].used ? "" : "  (outlier, not fitted)");
    }
    double med = ne ? median(errs, ne) : 0, mx = ne ? errs[ne - 1] : 0;
    printf("   fit error over all %d points: median %.1f%%, max %.1f%% (%d outliers not fitted)\n", ne, 100 * med, 100 * mx, dropped);
    free(meas);
    p.all_reduce_algorithm = AR_RING;

    load_average(la1);
    double took = now_seconds() - t_start;
    printf("\nload average after: %.2f %.2f %.2f; calibration took %.0f s\n", la1[0], la1[1], la1[2], took);

    // write the profile
    char header[2048], c_peak[256], c_gemm[512], c_mem[256], c_att[512], c_links[1024];
    snprintf(header, sizeof header,
             "cpu-local: THIS machine, measured by build/calibrate (src/tools/calibrate.c). Do not edit by\n"
             "hand: rerun `build/calibrate` (about a minute and a half) to refresh it.\n"
             "measured: %s on host %s\n"
             "CPU: %s, %ld cores; OpenBLAS and OpenMP with all cores (threads %d)\n"
             "load average before: %.2f %.2f %.2f, after: %.2f %.2f %.2f (other processes share this machine:\n"
             "timings are not properties of the code)\n"
             "calibration took %.0f s", date, host, cpu, cores, omp_get_max_threads(), la0[0], la0[1], la0[2],
             la1[0], la1[1], la1[2], took);
    snprintf(c_peak, sizeof c_peak, "peak: the engine's sgemm peak (train/optim.c measure_sgemm_peak_gflops: best-of-3 2048^3),\n"
             "the reference of the trainer's MFU; no nominal CPU peak is assumed");
    snprintf(c_gemm, sizeof c_gemm, "gemm: measured cblas_sgemm (row-major, no transpose) FLOP/s on the grid, the best of >= 3\n"
             "timed repetitions after a warm-up; the model interpolates in log2(M, N, K) and clamps outside.\n"
             "Transposed operands (backward GEMMs) are priced with the same table.");
    snprintf(c_mem, sizeof c_mem, "memory: STREAM-style triad (a = b + s*c, 3 x 64 MiB, best of the passes after the first),\n"
             "bytes counted as 2 reads + 1 write; memory_bytes = physical memory of the machine");
    snprintf(c_att, sizeof c_att, "attention: the engine's ops/attention.c forward and backward at B,T,H,hd = 8,128,2,32 and\n"
             "4,256,4,32 (best of 7 calls each); FLOPs with FlashAttention-2's convention (4*B*T^2*hd*H/2\n"
             "causal forward, x2.5 backward) over the sgemm peak, mean of the two shapes");
    char rank_list[64] = "";
    for (int r = 0; r < n_ranks; r++)
        snprintf(rank_list + strlen(rank_list), sizeof rank_list - strlen(rank_list), "%s%d", r ? (r == n_ranks - 1 ? " and " : ", ") : "", ranks[r]);
    snprintf(c_links, sizeof c_links, "links: the engine's MPI collectives (parallel/comm_mpi.c, shared memory) at %s ranks on this\n"
             "%ld-core machine (more ranks than cores oversubscribe it); sizes 4 B .. 16 MiB; per size the\n"
             "best of 10-300 calls, each timed between barriers (the slowest rank's time). Fit by least\n"
             "squares on relative error; error over all points median %.1f%%, max %.1f%% (%d outliers left\n"
             "out of the fit). p2p is a sendrecv exchange (both directions at once); its per-step latency\n"
             "is folded into base_s", rank_list, cores, 100 * med, 100 * mx, dropped);
    const char *comments[PW_COUNT] = { c_peak, c_gemm, c_mem, c_att, c_links };
    // Validate before replacing the old profile: write a copy under a temporary directory
    // (its file name must be the profile's name), load it, then write the real file via
    // a temporary name and rename.
    char dir[] = "/tmp/calibrate.XXXXXX", check_path[256], tmp_out[1100];
    CHECK_ERRNO(!mkdtemp(dir), "mkdtemp");
    xsnprintf(check_path, sizeof check_path, "%s/%s.yaml", dir, p.name);
    xsnprintf(tmp_out, sizeof tmp_out, "%s.tmp", out_path);
    const char *targets[2] = { check_path, tmp_out };
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(targets[t], "w");
        if (!f) die_input("cannot write %s: %s", targets[t], strerror(errno));
        profile_write_yaml(f, &p, header, comments);
        CHECK_ERRNO(fclose(f) != 0, targets[t]);
        if (t == 0) {
            HwProfile check;
            char err[1024];
            if (profile_load(check_path, &check, err, sizeof err)) DIE("calibrate wrote a profile that does not load: %s", err);
            profile_free(&check);
            CHECK_ERRNO(unlink(check_path) != 0 || rmdir(dir) != 0, "removing the check copy");
        }
    }
    CHECK_ERRNO(rename(tmp_out, out_path) != 0, "rename");
    printf("wrote %s\n", out_path);
    profile_free(&p);
    return 0;
}
