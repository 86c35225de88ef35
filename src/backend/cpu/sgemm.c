// sgemm.c — the CPU back ends' fp32 GEMM and its library (sgemm.h).
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include "sgemm.h"
#include "onednn.h"
#include "../../core/check.h"

static int lib = -1;   // SgemmLib, -1 until chosen
static char line[320];

// The library a request names (NULL: BOOST_CPU_GEMM, unset or empty = auto), -1 for a bad
// request; why: auto's reason where it takes OpenBLAS (may be NULL).
static int request_lib(const char *request, const char **req, char *why, size_t why_n) {
    const char *env = getenv("BOOST_CPU_GEMM");
    *req = request ? request : env && *env ? env : "auto";
    if (!strcmp(*req, "auto")) return onednn_f32_faster(why, why_n) ? SGEMM_ONEDNN : SGEMM_OPENBLAS;
    return !strcmp(*req, "onednn") ? SGEMM_ONEDNN : !strcmp(*req, "openblas") ? SGEMM_OPENBLAS : -1;
}

int cpu_sgemm_on_openmp(void) {
    const char *req;
    return request_lib(NULL, &req, NULL, 0) == SGEMM_ONEDNN;
}

SgemmLib cpu_sgemm_choose(const char *request) {
    const char *req, *hint = "set BOOST_CPU_GEMM to auto (oneDNN where it is the faster library: AMD with AVX-512; "
                             "else OpenBLAS), openblas or onednn";
    char why[200] = "";
    lib = request_lib(request, &req, why, sizeof why);
    if (lib < 0) die_input_hint(hint, "BOOST_CPU_GEMM is '%s'; expected auto, openblas or onednn", req);
    int is_auto = !strcmp(req, "auto");
    if (lib == SGEMM_ONEDNN)
        xsnprintf(line, sizeof line, "%s fp32 matmul (%s)", onednn_version(),
                  is_auto ? "BOOST_CPU_GEMM=auto: AMD with AVX-512, where it is the faster library; "
                            "BOOST_CPU_GEMM=openblas for OpenBLAS" : "BOOST_CPU_GEMM=onednn");
    else
        xsnprintf(line, sizeof line, "OpenBLAS sgemm (%s%s)", is_auto ? "BOOST_CPU_GEMM=auto: " : "BOOST_CPU_GEMM=openblas",
                  why);
    return (SgemmLib)lib;
}

const char *cpu_sgemm_describe(void) {
    if (lib < 0) cpu_sgemm_choose(NULL);
    return line;
}

void cpu_sgemm(const GemmArgs *g) {
    if (lib < 0) cpu_sgemm_choose(NULL);
    if (lib == SGEMM_ONEDNN && g->M > 0 && g->N > 0 && g->K > 0) { onednn_gemm(g, DT_F32); return; }
    // OpenBLAS, and the empty products (K 0: C = beta·C) on either library
    cblas_sgemm(CblasRowMajor, g->ta == TR_T ? CblasTrans : CblasNoTrans, g->tb == TR_T ? CblasTrans : CblasNoTrans,
                g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, g->C, g->ldc);
}
