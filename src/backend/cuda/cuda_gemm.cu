// cuda_gemm.cu — the back end's one GEMM through cuBLASLt (cuda_gemm; cuda_gemm_into with a
// separate D and a bias epilogue), and the GEMM group.
//
// Row-major (cblas) to column-major (cuBLAS): a row-major X [r, c] with row stride ld is
// the column-major X^T [c, r] with leading dimension ld. So C = op(A)·op(B) (row-major) is
// computed as C^T = op(B)^T · op(A)^T (column-major): cuBLAS's A is our B with transa = tb,
// its B is our A with transb = ta, m = N, n = M, k = K, and the leading dimensions pass
// through unchanged.
//
// Precision: bf16 operands with fp32 accumulation (CUBLAS_COMPUTE_32F) and fp32 alpha/beta;
// fp32 operands with CUBLAS_COMPUTE_32F (exact fp32), or CUBLAS_COMPUTE_32F_FAST_TF32 when
// b->tf32 is set. Split-K reductions are restricted to the compute type (fp32) in the
// workspace: the in-place and output-type schemes would add partial sums in bf16.
//
// Plans (descriptors, layouts and the heuristic's algorithm) are cached per shape, dtype,
// TF32 switch and operand alignment (16..256 bytes: the heuristic must not choose a kernel
// that needs more alignment than a sliced operand has). Shapes the heuristic has no
// algorithm for fall back to cublasGemmEx.
//
// C and D (cuda_gemm_into): cuBLASLt reads C and writes D, so D = alpha·op(A)·op(B) + beta·C
// with D ≠ C costs no copy of C into D first, and the BIAS epilogue adds a bias row (our
// bias[N]: cuBLAS's column-major D has N rows) before the one rounding of D. LaX's dense gate
// (lax_kernels.cu) uses both instead of an fp32 product in scratch plus a kernel adding it.
// cuBLASLt has no SiLU epilogue (CUDA 13.0's cublasLt.h: RELU, GELU, BIAS and their
// gradients), so CoLA's σ(x·A) stays an elementwise kernel. The op table's gemm is C == D, its
// gemm_into (cuda_gemm_to) D ≠ C: BTP's residual adds x_mid = x + z·B (layer_btp.c).
// The bias pointer's alignment is part of the plan: the heuristic reads it from the
// descriptor (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER), so each call sets its pointer
// in the cached descriptor, whose alignment class matches the key.
// Without a cuBLASLt algorithm (or with K = 0) cuda_gemm_into copies C into D when they
// differ, runs cublasGemmEx on D and adds the bias with a kernel (a second rounding of D in
// bf16; the emulator's EMU_NO_LT_ALGO=1 tests that path).
#include "cuda_common.cuh"
#include <string.h>

struct GemmKey {
    int ta, tb, M, N, K, lda, ldb, ldc, ldd;
    int dtype, tf32;
    unsigned align_a, align_b, align_c, align_d, align_bias;   // align_bias 0: no bias
};

struct GemmPlan {
    GemmKey key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld; // cuBLAS's A (our B), B (our A), C, D
    cublasLtMatmulAlgo_t algo;
    int has_algo;                          // 0: no Lt algorithm, use cublasGemmEx
};

enum { MAX_PLANS = 1024 };

static unsigned alignment(const void *p) {
    unsigned a = 256;
    while (a > 2 && ((uintptr_t)p % a) != 0) a >>= 1;
    return a;
}

static cudaDataType_t data_type(DType t) { return t == DT_BF16 ? CUDA_R_16BF : CUDA_R_32F; }
static cublasComputeType_t compute_type(const Backend *b) {
    return (b->dtype == DT_F32 && b->tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

static void destroy_plan(GemmPlan *p) {
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(p->desc));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->la));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->lb));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->lc));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->ld));
}

void cuda_gemm_free_plans(CudaImpl *im) {
    for (int i = 0; i < im->nplans; i++) destroy_plan(&im->plans[i]);
    free(im->plans);
    im->plans = NULL; im->nplans = im->cap_plans = 0;
}

static GemmPlan *make_plan(Backend *b, const GemmKey *k, const void *bias) {
    CudaImpl *im = impl_of(b);
    if (im->nplans == MAX_PLANS) {                 // a run uses a few dozen shapes; start over
        cuda_wait_stream(b, "the GEMMs queued before the plan cache was emptied");
        for (int i = 0; i < im->nplans; i++) destroy_plan(&im->plans[i]);
        im->nplans = 0;
    }
    if (im->nplans == im->cap_plans) {
        im->cap_plans = im->cap_plans ? 2 * im->cap_plans : 32;
        im->plans = (GemmPlan *)realloc(im->plans, sizeof(GemmPlan) * (size_t)im->cap_plans);
        CHECK(im->plans, "out of memory for GEMM plans");
    }
    GemmPlan *p = &im->plans[im->nplans];
    memset(p, 0, sizeof *p);
    p->key = *k;
    cudaDataType_t dt = data_type((DType)k->dtype);
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, compute_type(b), CUDA_R_32F));
    cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    // cuBLAS's A = our B as stored: [N rows, K cols] (tb = N) or [K, N] (tb = T), col-major
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, dt, k->tb ? k->K : k->N, k->tb ? k->N : k->K, k->ldb));
    // cuBLAS's B = our A as stored: [K, M] (ta = N) or [M, K] (ta = T)
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, dt, k->ta ? k->M : k->K, k->ta ? k->K : k->M, k->lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lc, dt, k->N, k->M, k->ldc));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->ld, dt, k->N, k->M, k->ldd));
    if (k->align_bias) {                           // D += bias[N] per column of cuBLAS's D, type T
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        int32_t bt = (int32_t)dt;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }

    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = im->lt_ws_size;
    uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;     // (NONE is always allowed)
    uint32_t aa = k->align_b, ab = k->align_a, ac = k->align_c, ad = k->align_d; // cuBLAS's A is our B
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof ad));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(im->lt, p->desc, p->la, p->lb, p->lc, p->ld, pref, 1, &res, &found);
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        die_at(__FILE__, __LINE__, "cublasLtMatmulAlgoGetHeuristic(M=%d N=%d K=%d) failed: %s (%s)",
               k->M, k->N, k->K, cublasGetStatusString(st), cublasGetStatusName(st));
    p->has_algo = st == CUBLAS_STATUS_SUCCESS && found > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    if (p->has_algo) p->algo = res.algo;
    im->nplans++;
    return p;
}

static GemmPlan *plan_for(Backend *b, const GemmKey *k, const void *bias) {
    CudaImpl *im = impl_of(b);
    for (int i = 0; i < im->nplans; i++)
        if (!memcmp(&im->plans[i].key, k, sizeof *k)) return &im->plans[i];
    return make_plan(b, k, bias);
}

static void check_args(const GemmArgs *g) {
    // row-major storage: A is [M,K] (ta = N) or [K,M]; B is [K,N] (tb = N) or [N,K]
    int acols = g->ta ? g->M : g->K, bcols = g->tb ? g->K : g->N;
    CHECK(g->M >= 0 && g->N >= 0 && g->K >= 0, "gemm: negative shape M=%d N=%d K=%d", g->M, g->N, g->K);
    CHECK(g->lda >= (acols > 1 ? acols : 1) && g->ldb >= (bcols > 1 ? bcols : 1) && g->ldc >= (g->N > 1 ? g->N : 1),
          "gemm: row strides lda=%d ldb=%d ldc=%d too small for M=%d N=%d K=%d (ta=%d tb=%d)",
          g->lda, g->ldb, g->ldc, g->M, g->N, g->K, (int)g->ta, (int)g->tb);
}

// cublasGemmEx: shapes without an Lt algorithm and K = 0 (C = beta·C)
static void gemm_ex(Backend *b, const GemmArgs *g) {
    CudaImpl *im = impl_of(b);
    cudaDataType_t dt = data_type(b->dtype);
    CUBLAS_CHECK(cublasGemmEx(im->blas, g->tb ? CUBLAS_OP_T : CUBLAS_OP_N, g->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                              g->N, g->M, g->K, &g->alpha, g->B, dt, g->ldb, g->A, dt, g->lda,
                              &g->beta, g->C, dt, g->ldc, compute_type(b), CUBLAS_GEMM_DEFAULT));
}

// D[M,N] (row stride ldd) += bias[N] per row (the fallback's epilogue), compute dtype
template <typename T>
__global__ void add_bias_kernel(T *D, int ldd, const T *bias, int M, int N) {
    RC_ROWS_LOOP(m, M) {
        T *d = D + (size_t)m * ldd;
        RC_COLS_LOOP(j, N) d[j] = stf<T>(ldf(d[j]) + ldf(bias[j]));
    }
}

// Whether two row-major [M, N] views (row strides ldx, ldy, element size es) share a byte:
// the extents of their address ranges are compared (conservative for interleaved views).
static int views_overlap(const void *x, int ldx, const void *y, int ldy, int M, int N, size_t es) {
    const char *xa = (const char *)x, *ya = (const char *)y;
    const char *xe = xa + ((size_t)(M - 1) * ldx + N) * es, *ye = ya + ((size_t)(M - 1) * ldy + N) * es;
    return xa < ye && ya < xe;
}

void cuda_gemm_into(Backend *b, const GemmArgs *g, void *D, int ldd, const void *bias) {
    check_args(g);
    CHECK(ldd >= (g->N > 1 ? g->N : 1), "gemm: row stride ldd=%d of D too small for N=%d", ldd, g->N);
    if (g->M == 0 || g->N == 0) return;
    size_t es = dtype_size(b->dtype);
    int same = D == g->C && ldd == g->ldc;
    // cuBLASLt computes in place only for C == D with one layout; beta = 0 does not read C
    CHECK(same || g->beta == 0.0f || !views_overlap(g->C, g->ldc, D, ldd, g->M, g->N, es),
          "gemm: D (%p, ldd %d) overlaps C (%p, ldc %d) without being C: an in-place product needs D == C and ldd == ldc",
          D, ldd, g->C, g->ldc);
    CudaImpl *im = impl_of(b);
    GemmPlan *p = NULL;
    if (g->K > 0) {
        GemmKey k;
        memset(&k, 0, sizeof k);                   // the key is compared bytewise
        k.ta = g->ta; k.tb = g->tb; k.M = g->M; k.N = g->N; k.K = g->K;
        k.lda = g->lda; k.ldb = g->ldb; k.ldc = g->ldc; k.ldd = ldd;
        k.dtype = b->dtype; k.tf32 = b->dtype == DT_F32 && b->tf32;
        k.align_a = alignment(g->A); k.align_b = alignment(g->B); k.align_c = alignment(g->C); k.align_d = alignment(D);
        k.align_bias = bias ? alignment(bias) : 0;
        p = plan_for(b, &k, bias);
    }
    if (p && p->has_algo) {
        if (bias) CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        CUBLAS_CHECK(cublasLtMatmul(im->lt, p->desc, &g->alpha, g->B, p->la, g->A, p->lb, &g->beta,
                                    g->C, p->lc, D, p->ld, &p->algo, im->lt_ws, im->lt_ws_size, im->stream));
        LAUNCH_CHECK();                            // BOOST_CUDA_DEBUG=1: a fault in cuBLASLt's kernel, named here
        return;
    }
    GemmArgs gd = *g;                              // cublasGemmEx: D = C first, then in place
    if (!same) {
        if (g->beta != 0.0f)
            CUDA_CHECK(cudaMemcpy2DAsync(D, (size_t)ldd * es, g->C, (size_t)g->ldc * es, (size_t)g->N * es, (size_t)g->M,
                                         cudaMemcpyDeviceToDevice, im->stream));
        gd.C = D; gd.ldc = ldd;
    }
    gemm_ex(b, &gd);
    LAUNCH_CHECK();
    if (bias) {
        DISPATCH(b->dtype, T, (LAUNCH(rc_grid(g->M, g->N), rc_block(), 0, im->stream, add_bias_kernel<T>)(
            (T *)D, ldd, (const T *)bias, g->M, g->N)));
    }
}

void cuda_gemm(Backend *b, const GemmArgs *g) { cuda_gemm_into(b, g, g->C, g->ldc, NULL); }
void cuda_gemm_to(Backend *b, const GemmArgs *g, void *D, int ldd) { cuda_gemm_into(b, g, D, ldd, NULL); }

// ---- GEMM groups --------------------------------------------------------------------------
// cublasGemmGroupedBatchedEx (one call; each GEMM its own group of size 1) where it applies:
// two or more non-empty GEMMs whose operands are 16-byte aligned. Otherwise, or once the
// library says NOT_SUPPORTED (remembered), or with BOOST_CUDA_GROUPED=0, a loop of cuda_gemm.
static int grouped_applies(const CudaImpl *im, int count, const GemmArgs *g) {
    if (!im->grouped_ok || count < 2) return 0;
    for (int i = 0; i < count; i++) {
        if (g[i].M <= 0 || g[i].N <= 0 || g[i].K <= 0) return 0;
        if (alignment(g[i].A) < 16 || alignment(g[i].B) < 16 || alignment(g[i].C) < 16) return 0;
    }
    return 1;
}

void cuda_gemm_group(Backend *b, int count, const GemmArgs *g) {
    CudaImpl *im = impl_of(b);
    for (int i = 0; i < count; i++) check_args(&g[i]);
    if (grouped_applies(im, count, g)) {
        size_t n = (size_t)count;
        cublasOperation_t *opa = (cublasOperation_t *)xmalloc(sizeof(cublasOperation_t) * 2 * n), *opb = opa + n;
        int *dims = (int *)xmalloc(sizeof(int) * 7 * n);
        int *m = dims, *nn = dims + n, *k = dims + 2 * n, *lda = dims + 3 * n, *ldb = dims + 4 * n, *ldc = dims + 5 * n, *gs = dims + 6 * n;
        float *ab = (float *)xmalloc(sizeof(float) * 2 * n), *alpha = ab, *beta = ab + n;
        const void **ptr = (const void **)xmalloc(sizeof(void *) * 3 * n);   // [A's | B's | C's] of cuBLAS
        for (int i = 0; i < count; i++) {
            opa[i] = g[i].tb ? CUBLAS_OP_T : CUBLAS_OP_N; opb[i] = g[i].ta ? CUBLAS_OP_T : CUBLAS_OP_N;
            m[i] = g[i].N; nn[i] = g[i].M; k[i] = g[i].K;
            lda[i] = g[i].ldb; ldb[i] = g[i].lda; ldc[i] = g[i].ldc; gs[i] = 1;
            alpha[i] = g[i].alpha; beta[i] = g[i].beta;
            ptr[i] = g[i].B; ptr[n + i] = g[i].A; ptr[2 * n + i] = g[i].C;
        }
        void **dptr = (void **)cuda_upload_table(b, ptr, sizeof(void *) * 3 * n);
        cudaDataType_t dt = data_type(b->dtype);
        cublasStatus_t st = cublasGemmGroupedBatchedEx(im->blas, opa, opb, m, nn, k, alpha,
                                                       (const void *const *)dptr, dt, lda,
                                                       (const void *const *)(dptr + n), dt, ldb, beta,
                                                       dptr + 2 * n, dt, ldc, count, gs, compute_type(b));
        free(opa); free(dims); free(ab); free(ptr);
        if (st == CUBLAS_STATUS_SUCCESS) { LAUNCH_CHECK(); return; }
        if (st != CUBLAS_STATUS_NOT_SUPPORTED)
            die_at(__FILE__, __LINE__, "cublasGemmGroupedBatchedEx(%d GEMMs) failed: %s (%s)", count,
                   cublasGetStatusString(st), cublasGetStatusName(st));
        im->grouped_ok = 0;                         // this library/GPU: loop from now on
    }
    for (int i = 0; i < count; i++) cuda_gemm(b, &g[i]);
}
