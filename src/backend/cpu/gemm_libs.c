// gemm_libs.c — the fp32 GEMM libraries (gemm_libs.h): one runner each, the two optional
// ones loaded with dlopen on first use.
#include <cblas.h>
#include <dlfcn.h>
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gemm_libs.h"
#include "onednn.h"
#include "../../core/check.h"

static const char *const NAMES[GEMM_N_LIBS] = { "openblas", "onednn", "blis", "mkl", "openblas_sliced", "onednn_sliced" };

const char *cpu_gemm_lib_name(GemmLib l) { return l >= 0 && l < GEMM_N_LIBS ? NAMES[l] : "?"; }
const char *cpu_gemm_lib_names(void) {
    static char all[128];
    if (!all[0])
        for (int l = 0; l < GEMM_N_LIBS; l++) {
            size_t k = strlen(all);
            snprintf(all + k, sizeof all - k, "%s%s", l ? ", " : "", NAMES[l]);
        }
    return all;
}
int cpu_gemm_lib_by_name(const char *name) {
    for (int l = 0; l < GEMM_N_LIBS; l++) if (name && !strcmp(name, NAMES[l])) return l;
    return -1;
}
int cpu_gemm_lib_on_openmp(GemmLib l) { return l != GEMM_OPENBLAS; }

// ---- a library loaded at run time ------------------------------------------------------
typedef struct {
    int tried, ok;
    void *h;
    char why[PATH_MAX + 256], version[96];   // (why may name a path)
    int threads;   // the thread count last handed to the library (0: none yet)
} Loaded;
static Loaded blis, mkl;

static void *sym(Loaded *L, const char *name) {
    void *p = dlsym(L->h, name);
    if (!p) snprintf(L->why, sizeof L->why, "%s has no symbol %s", L->version, name);
    return p;
}
// RTLD_DEEPBIND: the library's own BLAS symbols bind to itself, never to OpenBLAS's. The address
// sanitizer's runtime aborts the process on a DEEPBIND dlopen, so a sanitizer build (make
// test-asan) loads neither optional library: they are left out, saying why. Asked of the
// process, not of this file's build: the emulated CUDA binaries of make cuda-emu-test link this
// library, built without the sanitizer, into a process that has its runtime.
#define SANITIZER_BUILD (dlsym(RTLD_DEFAULT, "__asan_init") != NULL)
static const char SANITIZER_WHY[] = "left out in a sanitizer build (its runtime refuses the RTLD_DEEPBIND load)";
static void *open_local(const char *path) {
    if (SANITIZER_BUILD) return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}

// BLIS (typed API: general strides, no BLAS symbols): bli_sgemm(transa, transb, m, n, k,
// alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc), dims and strides int64 (dim_t, inc_t of
// Debian's 64-bit build), trans_t 0 or BLIS_TRANSPOSE (8).
typedef void (*bli_sgemm_fn)(int, int, int64_t, int64_t, int64_t, const float *, const float *, int64_t, int64_t,
                             const float *, int64_t, int64_t, const float *, float *, int64_t, int64_t);
static bli_sgemm_fn bli_sgemm_p;
static void (*bli_threads_p)(int64_t);
enum { BLIS_TRANS = 8 };

static void blis_load(void) {
    blis.tried = 1;
    blis.h = open_local("libblis.so.4");
    if (!blis.h) {
        if (SANITIZER_BUILD) snprintf(blis.why, sizeof blis.why, "BLIS %s", SANITIZER_WHY);
        else snprintf(blis.why, sizeof blis.why, "BLIS is not installed (libblis.so.4: apt-get install libblis4-openmp)");
        return;
    }
    char *(*ver)(void) = (char *(*)(void))dlsym(blis.h, "bli_info_get_version_str");
    int64_t (*arch_id)(void) = (int64_t (*)(void))dlsym(blis.h, "bli_arch_query_id");
    const char *(*arch_str)(int64_t) = (const char *(*)(int64_t))dlsym(blis.h, "bli_arch_string");
    snprintf(blis.version, sizeof blis.version, "BLIS %s%s%s", ver ? ver() : "?", arch_id && arch_str ? " " : "",
             arch_id && arch_str ? arch_str(arch_id()) : "");
    bli_sgemm_p = (bli_sgemm_fn)sym(&blis, "bli_sgemm");
    bli_threads_p = (void (*)(int64_t))sym(&blis, "bli_thread_set_num_threads");
    blis.ok = bli_sgemm_p && bli_threads_p;
}

// MKL (libmkl_rt, LP64): cblas_sgemm with CBLAS's enums (row-major 101, no-trans 111, trans 112).
typedef void (*mkl_sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                             float *, int);
static mkl_sgemm_fn mkl_sgemm_p;
static void (*mkl_threads_p)(int);

// Where libmkl_rt is looked for: BOOST_MKL (a path), the loader's own search (LD_LIBRARY_PATH,
// the system), then build/venv-mkl/lib beside this binary (.ci/deps.sh --mkl installs it there).
static void *mkl_open(char *tried, size_t n) {
    const char *user = getenv("BOOST_MKL");
    if (user && *user) { snprintf(tried, n, "%s (BOOST_MKL)", user); return open_local(user); }
    static const char *const names[] = { "libmkl_rt.so.3", "libmkl_rt.so.2" };
    for (int i = 0; i < 2; i++) { void *h = open_local(names[i]); if (h) return h; }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        for (int up = 0; up < 2; up++) {   // build/venv-mkl beside build/<tool>, or beside build/ (the tests' binaries are there too)
            for (int i = 0; i < 2; i++) {
                char path[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/%svenv-mkl/lib/%s", exe, up ? "../build/" : "", names[i]);
                void *h = open_local(path);
                if (h) return h;
            }
        }
        snprintf(tried, n, "libmkl_rt.so.3/.2 on the loader's path or in %s/venv-mkl/lib", exe);
    } else snprintf(tried, n, "libmkl_rt.so.3/.2 on the loader's path");
    return NULL;
}

static void mkl_load(void) {
    mkl.tried = 1;
    char tried[PATH_MAX + 128] = "";
    mkl.h = mkl_open(tried, sizeof tried);
    if (!mkl.h) {
        if (SANITIZER_BUILD) snprintf(mkl.why, sizeof mkl.why, "MKL %s", SANITIZER_WHY);
        else snprintf(mkl.why, sizeof mkl.why, "MKL is not installed (%s: bash .ci/deps.sh --mkl installs PyPI's mkl)", tried);
        return;
    }
    snprintf(mkl.version, sizeof mkl.version, "MKL");
    int (*layer)(int) = (int (*)(int))sym(&mkl, "MKL_Set_Threading_Layer");
    int (*iface)(int) = (int (*)(int))sym(&mkl, "MKL_Set_Interface_Layer");
    int (*cbwr)(int) = (int (*)(int))sym(&mkl, "MKL_CBWR_Set");
    void (*ver)(char *, int) = (void (*)(char *, int))sym(&mkl, "MKL_Get_Version_String");
    mkl_sgemm_p = (mkl_sgemm_fn)sym(&mkl, "cblas_sgemm");
    mkl_threads_p = (void (*)(int))sym(&mkl, "MKL_Set_Num_Threads");
    if (!(layer && iface && cbwr && ver && mkl_sgemm_p && mkl_threads_p)) return;
    // OpenMP's threads (libgomp, this process's pool) rather than Intel's runtime beside it;
    // LP64 ints as declared above; the same bits on every run with the same threads.
    iface(0);                                            // MKL_INTERFACE_LP64
    if (layer(3) != 3) {                                 // MKL_THREADING_GNU
        snprintf(mkl.why, sizeof mkl.why, "MKL could not take the GNU OpenMP threading layer");
        return;
    }
    if (cbwr(2 | 0x10000) != 0 && cbwr(2) != 0) {       // MKL_CBWR_AUTO | MKL_CBWR_STRICT, else AUTO
        snprintf(mkl.why, sizeof mkl.why, "MKL refused conditional numerical reproducibility (MKL_CBWR_AUTO)");
        return;
    }
    char full[256] = "";
    ver(full, (int)sizeof full);
    // "Intel(R) oneAPI Math Kernel Library Version 2026.2-Product Build ...": the version word
    const char *v = strstr(full, "Version ");
    char word[32] = "?";
    if (v) sscanf(v + 8, "%31[0-9.]", word);
    snprintf(mkl.version, sizeof mkl.version, "MKL %s", word);
    mkl.ok = 1;
}

int cpu_gemm_lib_available(GemmLib l, char *why, size_t why_n) {
    Loaded *L = l == GEMM_BLIS ? &blis : l == GEMM_MKL ? &mkl : NULL;
    if (!L) return l == GEMM_OPENBLAS || l == GEMM_ONEDNN || l == GEMM_OPENBLAS_SLICED || l == GEMM_ONEDNN_SLICED;
    if (!L->tried) { if (l == GEMM_BLIS) blis_load(); else mkl_load(); }
    if (!L->ok && why) snprintf(why, why_n, "%s", L->why);
    return L->ok;
}

int cpu_gemm_lib_below_cpu(GemmLib l, char *why, size_t why_n) {
    if (l != GEMM_BLIS || !cpu_gemm_lib_available(l, NULL, 0)) return 0;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return 0;
    static const char *const avx512[] = { " skx", " knl", " zen4", " zen5" };
    for (int i = 0; i < 4; i++) if (strstr(blis.version, avx512[i])) return 0;
    if (why) snprintf(why, why_n, "%s, no AVX-512 kernels", blis.version);
    return 1;
}

const char *cpu_gemm_lib_version(GemmLib l) {
    static char ob[96];
    switch (l) {
    case GEMM_OPENBLAS:
        {   // "OpenBLAS 0.3.21" of "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY ...", then the kernels
            char v[32] = "?";
            sscanf(openblas_get_config(), "OpenBLAS %31s", v);
            snprintf(ob, sizeof ob, "OpenBLAS %s %s", v, openblas_get_corename());
        }
        return ob;
    case GEMM_ONEDNN: return onednn_version();
    case GEMM_OPENBLAS_SLICED: case GEMM_ONEDNN_SLICED: {
        static char sl[2][112];
        int i = l == GEMM_ONEDNN_SLICED;
        snprintf(sl[i], sizeof sl[i], "%s sliced", cpu_gemm_lib_version(i ? GEMM_ONEDNN : GEMM_OPENBLAS));
        return sl[i];
    }
    case GEMM_BLIS: return blis.version[0] ? blis.version : "BLIS";
    case GEMM_MKL: return mkl.version[0] ? mkl.version : "MKL";
    default: return "?";
    }
}

// A loaded library's thread count follows OpenMP's maximum (trainer_set_threads sets it).
static void follow_threads(Loaded *L, GemmLib l) {
    int t = omp_get_max_threads();
    if (t == L->threads) return;
    if (l == GEMM_BLIS) bli_threads_p(t); else mkl_threads_p(t);
    L->threads = t;
}

// The edge before slice i of n over len rows or columns: on a multiple of 16 (whole vector
// blocks of the libraries' kernels in every slice but the last), at least 16 apart.
static int slice_edge(int len, int n, int i) {
    if (i == n) return len;
    return (int)(((long)len * i / n + 8) / 16 * 16);
}

// The grid C is cut into for n threads: gm x gn <= n slices, each side at least 16 long. The
// most slices, and of those the grid that reads the least of A and B (each slice reads its
// rows of A and its columns of B: K·(M·gn + N·gm) elements), so a skinny C is cut along its
// long side and a squarer one in both (at 2 threads: along the longer side, M on a tie).
static void slice_grid(int M, int N, int n, int *gm, int *gn) {
    int mm = M / 16 > 0 ? M / 16 : 1, mn = N / 16 > 0 ? N / 16 : 1;
    *gm = *gn = 1;
    for (int a = 1; a <= n && a <= mm; a++)
        for (int b = 1; a * b <= n && b <= mn; b++) {
            long cost = (long)M * b + (long)N * a, best = (long)M * *gn + (long)N * *gm;
            if (a * b > *gm * *gn || (a * b == *gm * *gn && cost <= best)) { *gm = a; *gn = b; }   // a tie: rows
        }
}

// C cut into a grid of slices (slice_grid), one per OpenMP thread, each slice one 1-thread call
// of the library: every element of C is summed by one call, so the bits are the same run to run
// at a thread count. OpenBLAS is told 1 thread for the calls (its own pool would otherwise start
// under each), then its count before.
static void run_sliced(GemmLib base, const GemmArgs *g) {
    int gm, gn;
    slice_grid(g->M, g->N, omp_get_max_threads(), &gm, &gn);
    int n = gm * gn;
    int ob_threads = base == GEMM_OPENBLAS ? openblas_get_num_threads() : 0;
    if (base == GEMM_OPENBLAS) openblas_set_num_threads(1);
#pragma omp parallel num_threads(n)
    for (int i = omp_get_thread_num(); i < n; i += omp_get_num_threads()) {   // a smaller team still covers C
        int m0 = slice_edge(g->M, gm, i / gn), m1 = slice_edge(g->M, gm, i / gn + 1);
        int n0 = slice_edge(g->N, gn, i % gn), n1 = slice_edge(g->N, gn, i % gn + 1);
        const float *A = g->A, *B = g->B;
        float *C = g->C;
        GemmArgs s = *g;
        s.M = m1 - m0;
        s.N = n1 - n0;
        s.A = g->ta == TR_T ? A + m0 : A + (size_t)m0 * g->lda;
        s.B = g->tb == TR_T ? B + (size_t)n0 * g->ldb : B + n0;
        s.C = C + (size_t)m0 * g->ldc + n0;
        if (base == GEMM_OPENBLAS) cpu_gemm_lib_run(GEMM_OPENBLAS, &s);
        else onednn_sgemm(&s);
    }
    if (base == GEMM_OPENBLAS) openblas_set_num_threads(ob_threads);
}

void cpu_gemm_lib_run(GemmLib l, const GemmArgs *g) {
    switch (l) {
    case GEMM_OPENBLAS_SLICED: run_sliced(GEMM_OPENBLAS, g); return;
    case GEMM_ONEDNN_SLICED: run_sliced(GEMM_ONEDNN, g); return;
    case GEMM_OPENBLAS:
        cblas_sgemm(CblasRowMajor, g->ta == TR_T ? CblasTrans : CblasNoTrans, g->tb == TR_T ? CblasTrans : CblasNoTrans,
                    g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, g->C, g->ldc);
        return;
    case GEMM_ONEDNN: onednn_gemm(g, DT_F32); return;
    case GEMM_BLIS: {
        CHECK(blis.ok, "cpu_gemm_lib_run: BLIS is not loaded");
        follow_threads(&blis, l);
        // row-major storage: row stride ld, column stride 1, of the matrix as stored
        bli_sgemm_p(g->ta == TR_T ? BLIS_TRANS : 0, g->tb == TR_T ? BLIS_TRANS : 0, g->M, g->N, g->K, &g->alpha,
                    g->A, g->lda, 1, g->B, g->ldb, 1, &g->beta, g->C, g->ldc, 1);
        return;
    }
    case GEMM_MKL:
        CHECK(mkl.ok, "cpu_gemm_lib_run: MKL is not loaded");
        follow_threads(&mkl, l);
        mkl_sgemm_p(101, g->ta == TR_T ? 112 : 111, g->tb == TR_T ? 112 : 111, g->M, g->N, g->K, g->alpha, g->A, g->lda,
                    g->B, g->ldb, g->beta, g->C, g->ldc);
        return;
    default: DIE("cpu_gemm_lib_run: library %d", (int)l);
    }
}
