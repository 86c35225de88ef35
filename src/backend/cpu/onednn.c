// onednn.c — fp32 and bf16 matmul through oneDNN (onednn.h). One engine and stream for the
// process; a primitive per distinct GEMM (element type, shape, strides, transposes, alpha,
// beta), created on first use and kept: a training step repeats the same few dozen shapes,
// and creating a primitive costs far more than a small GEMM. The cache holds at most
// CACHE_MAX primitives (a workload of many shapes, a test sweep say, replaces the oldest).
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

// oneDNN's effective ISA on this CPU (ONEDNN_MAX_CPU_ISA caps it) and its name without the
// "cpu_isa_" prefix. The ISA values are bit sets: a level contains the bits of every level
// below it (avx512_core_amx contains avx512_core_bf16's, which contains avx512_core's).
static dnnl_cpu_isa_t effective_isa(const char **name) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    *name = dnnl_cpu_isa2str(e);
    if (!strncmp(*name, "cpu_isa_", 8)) *name += 8;
    return e;
}
static int isa_has(dnnl_cpu_isa_t e, dnnl_cpu_isa_t level) { return ((unsigned)e & (unsigned)level) == (unsigned)level; }

int onednn_bf16_supported(char *isa, size_t isa_n, char *why, size_t why_n) {
    const char *name;
    dnnl_cpu_isa_t e = effective_isa(&name);
    if (isa) snprintf(isa, isa_n, "%s", name);
    if (isa_has(e, dnnl_cpu_isa_avx512_core_bf16)) return 1;
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
    const char *name;
    if (isa_has(effective_isa(&name), dnnl_cpu_isa_avx512_core_amx)) return 1;
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

int onednn_f32_faster(char *why, size_t why_n) {
    const char *name;
    int avx512 = isa_has(effective_isa(&name), dnnl_cpu_isa_avx512_core);
    char vendor[13];
    cpu_vendor(vendor);
    if (avx512 && !strcmp(vendor, "AuthenticAMD")) return 1;
    if (why) snprintf(why, why_n, "%s CPU, oneDNN's ISA %s: oneDNN's fp32 matmul is measured faster only on AMD with AVX-512",
                      *vendor ? vendor : "an unknown", name);
    return 0;
}

int onednn_f32_thread_invariant(char *why, size_t why_n) {
    const char *name;
    if (isa_has(effective_isa(&name), dnnl_cpu_isa_avx512_core)) return 1;
    if (why) snprintf(why, why_n, "oneDNN's ISA on this CPU is %s: its fp32 kernels below AVX-512 give other bits at another "
                      "thread count", name);
    return 0;
}

typedef struct {
    DType dt;
    Trans ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} MatmulEntry;

enum { CACHE_MAX = 512 };
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static MatmulEntry cache[CACHE_MAX];
static int n_cache, next_evict;

static int same(const MatmulEntry *e, const GemmArgs *g, DType dt) {
    return e->dt == dt && e->ta == g->ta && e->tb == g->tb && e->M == g->M && e->N == g->N && e->K == g->K &&
           e->lda == g->lda && e->ldb == g->ldb && e->ldc == g->ldc && e->alpha == g->alpha && e->beta == g->beta;
}

// A [rows, cols] matrix view: row-major with row stride ld, or its transpose (column stride
// ld) — oneDNN takes both as strides, no copy here.
static void md_2d(dnnl_memory_desc_t *md, int rows, int cols, int ld, int transposed, dnnl_data_type_t t) {
    dnnl_dims_t dims = { rows, cols }, strides = { ld, 1 };
    if (transposed) { strides[0] = 1; strides[1] = ld; }
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(md, 2, dims, t, strides));
}

static void entry_destroy(MatmulEntry *e) {
    DNNL_CHECK(dnnl_primitive_destroy(e->prim));
    DNNL_CHECK(dnnl_memory_destroy(e->a));
    DNNL_CHECK(dnnl_memory_destroy(e->b));
    DNNL_CHECK(dnnl_memory_destroy(e->c));
}

static MatmulEntry *entry_for(const GemmArgs *g, DType dt) {
    for (int i = 0; i < n_cache; i++) if (same(&cache[i], g, dt)) return &cache[i];
    if (!engine) {
        DNNL_CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
        DNNL_CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    }
    MatmulEntry *e;
    if (n_cache < CACHE_MAX) e = &cache[n_cache++];
    else { e = &cache[next_evict]; next_evict = (next_evict + 1) % CACHE_MAX; entry_destroy(e); }
    *e = (MatmulEntry){ .dt = dt, .ta = g->ta, .tb = g->tb, .M = g->M, .N = g->N, .K = g->K, .lda = g->lda,
                        .ldb = g->ldb, .ldc = g->ldc, .alpha = g->alpha, .beta = g->beta };
    dnnl_data_type_t t = dt == DT_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a, b, c;
    md_2d(&a, g->M, g->K, g->lda, g->ta == TR_T, t);   // op(A) [M, K]
    md_2d(&b, g->K, g->N, g->ldb, g->tb == TR_T, t);   // op(B) [K, N]
    md_2d(&c, g->M, g->N, g->ldc, 0, t);               // C [M, N]
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

void onednn_gemm(const GemmArgs *g, DType dt) {
    CHECK(g->M > 0 && g->N > 0 && g->K > 0, "onednn_gemm: empty GEMM %dx%dx%d", g->M, g->N, g->K);
    CHECK(dt == DT_F32 || dt == DT_BF16, "onednn_gemm: element type %s", dtype_name(dt));
    MatmulEntry *e = entry_for(g, dt);
    DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void *)g->A));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->b, (void *)g->B));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->c, g->C));
    dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, e->a }, { DNNL_ARG_WEIGHTS, e->b }, { DNNL_ARG_DST, e->c } };
    DNNL_CHECK(dnnl_primitive_execute(e->prim, stream, 3, args));
    DNNL_CHECK(dnnl_stream_wait(stream));
}

void onednn_sgemm(const GemmArgs *g) {
    DNNL_CHECK(dnnl_sgemm(g->ta == TR_T ? 'T' : 'N', g->tb == TR_T ? 'T' : 'N', g->M, g->N, g->K, g->alpha, g->A, g->lda,
                          g->B, g->ldb, g->beta, g->C, g->ldc));
}

int onednn_cached(void) { return n_cache; }
