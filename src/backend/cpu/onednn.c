// onednn.c — bf16 matmul through oneDNN (onednn.h). One engine and stream for the process;
// a primitive per distinct GEMM (shape, strides, transposes, alpha, beta), created on first
// use and kept: a training step repeats the same few dozen shapes, and creating a primitive
// costs far more than a small GEMM.
#include <cpuid.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <string.h>
#include "onednn.h"
#include "../../core/check.h"

#define DNNL_CHECK(call)                                                                       \
    do {                                                                                       \
        dnnl_status_t st_ = (call);                                                            \
        if (st_ != dnnl_success) die_at(__FILE__, __LINE__, "%s failed: %s", #call, dnnl_status2str(st_)); \
    } while (0)

int onednn_bf16_supported(char *isa, size_t isa_n, char *why, size_t why_n) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    const char *name = dnnl_cpu_isa2str(e);
    if (!strncmp(name, "cpu_isa_", 8)) name += 8;
    if (isa) snprintf(isa, isa_n, "%s", name);
    // the ISA values are bit sets: every bf16-capable level contains avx512_core_bf16's bits
    // (avx512_core_amx included); ONEDNN_MAX_CPU_ISA caps it
    if (((unsigned)e & (unsigned)dnnl_cpu_isa_avx512_core_bf16) == (unsigned)dnnl_cpu_isa_avx512_core_bf16) return 1;
    if (why) snprintf(why, why_n, "oneDNN's ISA on this CPU is %s, without AVX512-BF16 or AMX", name);
    return 0;
}

// The CPU's vendor from CPUID leaf 0 ("AuthenticAMD", "GenuineIntel", ...).
static void cpu_vendor(char out[13]) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    memset(out, 0, 13);
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    memcpy(out, &b, 4); memcpy(out + 4, &d, 4); memcpy(out + 8, &c, 4);
}

int onednn_bf16_faster(char *why, size_t why_n) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    const char *name = dnnl_cpu_isa2str(e);
    if (!strncmp(name, "cpu_isa_", 8)) name += 8;
    if (((unsigned)e & (unsigned)dnnl_cpu_isa_avx512_core_amx) == (unsigned)dnnl_cpu_isa_avx512_core_amx) return 1;
    char vendor[13];
    cpu_vendor(vendor);
    if (!strcmp(vendor, "AuthenticAMD")) return 1;
    if (why) snprintf(why, why_n, "oneDNN's ISA on this CPU is %s: AVX512-BF16 without AMX on a %s CPU, where "
                      "its bf16 matmul was slower than fp32 sgemm", name, *vendor ? vendor : "non-AMD");
    return 0;
}

const char *onednn_version(void) {
    static char buf[32];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

typedef struct {
    Trans ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} MatmulEntry;

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static MatmulEntry *cache;
static int n_cache, cap_cache;

static int same(const MatmulEntry *e, const GemmArgs *g) {
    return e->ta == g->ta && e->tb == g->tb && e->M == g->M && e->N == g->N && e->K == g->K && e->lda == g->lda &&
           e->ldb == g->ldb && e->ldc == g->ldc && e->alpha == g->alpha && e->beta == g->beta;
}

// A [rows, cols] bf16 matrix view: row-major with row stride ld, or its transpose (column
// stride ld) — oneDNN takes both as strides, no copy here.
static void md_2d(dnnl_memory_desc_t *md, int rows, int cols, int ld, int transposed) {
    dnnl_dims_t dims = { rows, cols }, strides = { ld, 1 };
    if (transposed) { strides[0] = 1; strides[1] = ld; }
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_bf16, strides));
}

static MatmulEntry *entry_for(const GemmArgs *g) {
    for (int i = 0; i < n_cache; i++) if (same(&cache[i], g)) return &cache[i];
    if (!engine) {
        DNNL_CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
        DNNL_CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    }
    MatmulEntry *e = vec_grow(cache, &n_cache, &cap_cache, sizeof *cache);
    cache = e; e = &cache[n_cache - 1];
    *e = (MatmulEntry){ .ta = g->ta, .tb = g->tb, .M = g->M, .N = g->N, .K = g->K, .lda = g->lda, .ldb = g->ldb,
                        .ldc = g->ldc, .alpha = g->alpha, .beta = g->beta };
    dnnl_memory_desc_t a, b, c;
    md_2d(&a, g->M, g->K, g->lda, g->ta == TR_T);   // op(A) [M, K]
    md_2d(&b, g->K, g->N, g->ldb, g->tb == TR_T);   // op(B) [K, N]
    md_2d(&c, g->M, g->N, g->ldc, 0);               // C [M, N]
    dnnl_matmul_desc_t desc;
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    if (g->alpha != 1.0f) DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &g->alpha));
    if (g->beta != 0.0f) {   // C = alpha·AB + beta·C: the old C read, summed in fp32, rounded once
        dnnl_post_ops_t po;
        DNNL_CHECK(dnnl_post_ops_create(&po));
        DNNL_CHECK(dnnl_post_ops_append_sum(po, g->beta));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
        DNNL_CHECK(dnnl_post_ops_destroy(po));
    }
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL));
    DNNL_CHECK(dnnl_primitive_create(&e->prim, pd));
    DNNL_CHECK(dnnl_memory_create(&e->a, &a, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->b, &b, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->c, &c, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
    DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
    return e;
}

void onednn_bf16_gemm(const GemmArgs *g) {
    CHECK(g->M > 0 && g->N > 0 && g->K > 0, "onednn_bf16_gemm: empty GEMM %dx%dx%d", g->M, g->N, g->K);
    MatmulEntry *e = entry_for(g);
    DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void *)g->A));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->b, (void *)g->B));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->c, g->C));
    dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, e->a }, { DNNL_ARG_WEIGHTS, e->b }, { DNNL_ARG_DST, e->c } };
    DNNL_CHECK(dnnl_primitive_execute(e->prim, stream, 3, args));
    DNNL_CHECK(dnnl_stream_wait(stream));
}

int onednn_bf16_cached(void) { return n_cache; }
