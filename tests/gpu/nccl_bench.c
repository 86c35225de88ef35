// nccl_bench — the all-reduce of the engine's collectives (parallel/comm.h, the path a tp or dp
// group's gradients and activations take) over every rank of an mpirun, timed per message size
// and reported as nccl-tests reports it:
//   algbw = bytes / time;   busbw = algbw · 2(n − 1)/n   (n ranks; NVIDIA's nccl-tests,
//   doc/PERFORMANCE.md: the per-link traffic of a ring all-reduce, comparable across n)
// with the bytes of one rank's buffer, the time of the slowest rank (median of --reps calls
// between barriers). Before timing, one all-reduce of known values is checked on the host
// ("PASS nccl_bench_allreduce_correct"): every rank adds rank + 1, exact in bf16 below 256 ranks.
//
//   mpirun -np N build/nccl_bench [--device cuda|cpu] [--precision bf16|fp32] [--sizes 1M,16M,256M]
//                                 [--reps 20] [--require-nccl] [--json OUT]
//
// On cuda each rank takes the GPU of its local rank and the collectives go through NCCL when
// every rank has a GPU of its own (else MPI with host staging: the line "comm:" says which;
// --require-nccl makes that a FAIL). --device cpu measures the MPI path on host buffers (to try
// the tool without a GPU). One rank, or no back end: "SKIP nccl_bench: <why>", exit 0.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../src/backend/bf16.h"
#include "../../src/backend/ops.h"
#include "../../src/core/check.h"
#include "../../src/parallel/comm.h"
#include "../../src/parallel/gpu_setup.h"

#define USAGE "usage: mpirun -np N nccl_bench [--device cuda|cpu] [--precision bf16|fp32] [--sizes 1M,16M,256M] " \
              "[--reps N] [--require-nccl] [--json OUT]\n"

static size_t parse_size(const char *s) {   // "64K", "16M", "1G", "4096"
    char *end = NULL;
    double v = strtod(s, &end);
    double mul = !*end ? 1 : !strcmp(end, "K") ? 1024.0 : !strcmp(end, "M") ? 1048576.0 : !strcmp(end, "G") ? 1073741824.0 : -1;
    if (end == s || mul < 0 || !(v > 0) || v * mul > 8.0 * 1073741824.0) {
        fprintf(stderr, "nccl_bench: --sizes: '%s' is not a size like 64K, 16M or 1G (at most 8G)\n" USAGE, s);
        exit(EXIT_BAD_INPUT);
    }
    return (size_t)(v * mul);
}
static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
    const char *device = "cuda", *json = NULL, *sizes_arg = "1M,16M,128M";
    DType dt = DT_BF16;
    int reps = 20, require_nccl = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(USAGE, stdout); return 0; }
        if (!strcmp(a, "--require-nccl")) { require_nccl = 1; continue; }
        if (!v) { fprintf(stderr, "nccl_bench: %s needs a value\n" USAGE, a); return EXIT_BAD_INPUT; }
        i++;
        if (!strcmp(a, "--device") && (!strcmp(v, "cuda") || !strcmp(v, "cpu"))) device = v;
        else if (!strcmp(a, "--precision") && (!strcmp(v, "bf16") || !strcmp(v, "fp32"))) dt = !strcmp(v, "bf16") ? DT_BF16 : DT_F32;
        else if (!strcmp(a, "--sizes")) sizes_arg = v;
        else if (!strcmp(a, "--reps") && atoi(v) >= 1 && atoi(v) <= 1000) reps = atoi(v);
        else if (!strcmp(a, "--json")) json = v;
        else { fprintf(stderr, "nccl_bench: bad argument %s '%s'\n" USAGE, a, v); return EXIT_BAD_INPUT; }
    }
    size_t sizes[32]; int n_sizes = 0;
    char *list = xstrdup(sizes_arg), *save = NULL;
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        if (n_sizes == 32) { fprintf(stderr, "nccl_bench: --sizes: at most 32 sizes\n"); return EXIT_BAD_INPUT; }
        sizes[n_sizes++] = parse_size(s);
    }
    free(list);
    if (!gpu_launched_by_mpi()) { printf("SKIP nccl_bench: one process (start it with mpirun -np N, N >= 2)\n"); return 0; }

    CHECK_MPI(MPI_Init(&argc, &argv));
    int world;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
    Comm c;
    comm_init(&c, world, 1, 1);   // every rank in one tp group: GROUP_TP is the world
    int rc = 0;
    char why[256] = "";
    Backend *b = NULL;
    GpuPlacement gp = { 0 };
    if (!strcmp(device, "cuda")) {
        if (!gpu_place(&gp, why, sizeof why)) b = backend_create("cuda", dt, why, sizeof why);
        int ok = b != NULL, all_ok = 0;
        CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        if (!all_ok) {
            if (c.rank == 0) printf("SKIP nccl_bench: %s\n", b ? "another rank has no CUDA back end" : why);
            goto done;
        }
        gpu_setup(&c, b, &gp);
        if (c.rank == 0) gpu_placement_print(&gp, &c, stdout);
    } else {
        b = backend_create("cpu", dt, why, sizeof why);
        CHECK(b, "nccl_bench: the CPU back end: %s", why);
        comm_set_device(&c, b, NULL, NULL);
        if (c.rank == 0) printf("comm: mpi on host buffers (--device cpu)\n");
    }
    if (world < 2) { if (c.rank == 0) printf("SKIP nccl_bench: one rank (a bus bandwidth needs two or more)\n"); goto done; }
    if (require_nccl && !gp.nccl) {
        if (c.rank == 0) printf("FAIL nccl_bench_uses_nccl: the collectives take MPI with host staging, not NCCL: %s\n", gp.comm_note);
        rc = 1;
    }
    CommDtype ct = dt == DT_BF16 ? DTYPE_BF16 : DTYPE_F32;
    size_t esz = dtype_size(dt);

    // ---- correctness: every rank adds rank + 1 ----
    {
        size_t n = 4096 + 7;
        void *host = xmalloc(n * esz), *buf = bk_alloc(b, n, dt, MEM_COMM);
        for (size_t i = 0; i < n; i++) {
            float v = (float)(c.rank + 1);
            if (dt == DT_BF16) ((bf16 *)host)[i] = bf16_from_f32(v); else ((float *)host)[i] = v;
        }
        op_from_host(b, buf, host, n, dt);
        comm_all_reduce(&c, GROUP_TP, buf, n, ct, OP_SUM, PHASE_OTHER, -1);
        op_to_host(b, host, buf, n, dt);
        float want = (float)world * (float)(world + 1) / 2.0f;
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            float got = dt == DT_BF16 ? bf16_to_f32(((bf16 *)host)[i]) : ((float *)host)[i];
            if (got != want) bad++;
        }
        int any = bad > 0, all = 0;
        CHECK_MPI(MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        if (c.rank == 0) {
            if (all) printf("FAIL nccl_bench_allreduce_correct: the sum of rank + 1 over %d ranks is not %g everywhere (rank 0: %zu of %zu wrong)\n", world, want, bad, n);
            else printf("PASS nccl_bench_allreduce_correct (%d ranks, %zu %s values)\n", world, n, dtype_name(dt));
        }
        if (all) rc = 1;
        bk_free(b, buf, n, dt, MEM_COMM);
        free(host);
    }

    // ---- bandwidth ----
    FILE *jf = NULL;
    if (c.rank == 0) {
        printf("%12s %12s %12s %12s   (all_reduce, %s, %d ranks, median of %d)\n", "bytes", "time us", "algbw GB/s", "busbw GB/s",
               dtype_name(dt), world, reps);
        if (json) {
            jf = fopen(json, "w");
            CHECK_ERRNO(!jf, json);
            fprintf(jf, "{\"ranks\": %d, \"dtype\": \"%s\", \"device\": \"%s\", \"nccl\": %d, \"results\": [", world, dtype_name(dt), device, gp.nccl);
        }
    }
    double *per = xmalloc((size_t)reps * sizeof(double)), best_busbw = 0;
    for (int s = 0; s < n_sizes; s++) {
        size_t n = sizes[s] / esz;
        if (n < (size_t)world) n = (size_t)world;
        void *buf = bk_alloc(b, n, dt, MEM_COMM);   // zeros: the sums stay 0, no overflow
        for (int w = 0; w < 2; w++) comm_all_reduce(&c, GROUP_TP, buf, n, ct, OP_SUM, PHASE_OTHER, -1);
        op_sync(b);
        for (int r = 0; r < reps; r++) {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            double t0 = MPI_Wtime();
            comm_all_reduce(&c, GROUP_TP, buf, n, ct, OP_SUM, PHASE_OTHER, -1);
            op_sync(b);
            per[r] = MPI_Wtime() - t0;
        }
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, per, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        qsort(per, (size_t)reps, sizeof *per, cmp_double);
        double t = per[reps / 2], bytes = (double)n * (double)esz;
        double algbw = bytes / t / 1e9, busbw = algbw * 2.0 * (world - 1) / world;
        if (busbw > best_busbw) best_busbw = busbw;
        if (c.rank == 0) {
            printf("%12.0f %12.1f %12.2f %12.2f\n", bytes, t * 1e6, algbw, busbw);
            if (jf) fprintf(jf, "%s{\"bytes\": %.0f, \"us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f}", s ? ", " : "", bytes, t * 1e6, algbw, busbw);
        }
        bk_free(b, buf, n, dt, MEM_COMM);
    }
    free(per);
    if (c.rank == 0) {
        printf("busbw: %.2f GB/s (the largest of the sizes above)\n", best_busbw);
        if (jf) { fprintf(jf, "], \"busbw_gbs\": %.4f}\n", best_busbw); CHECK_ERRNO(fclose(jf) != 0, json); }
    }
done:
    if (b) { comm_detach_device(&c); backend_free(b); }
    comm_free(&c);
    CHECK_MPI(MPI_Finalize());
    return rc;
}
