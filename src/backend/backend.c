// backend.c — what every back end shares: dtype and category names, counted allocation,
// the observer. (Construction by name: select.c, which sits above the back ends.)
#include <string.h>
#include "backend.h"
#include "../core/check.h"

size_t dtype_size(DType t) {
    switch (t) {
    case DT_F32: return 4;
    case DT_BF16: return 2;
    case DT_F64: return 8;
    case DT_I32: return 4;
    default: DIE("dtype %d is not a DType", (int)t);
    }
}
const char *dtype_name(DType t) {
    static const char *const names[DT_COUNT] = { "fp32", "bf16", "fp64", "int32" };
    return (unsigned)t < DT_COUNT ? names[t] : "?";
}
const char *mem_category_name(MemCategory c) {
    static const char *const names[MEM_COUNT] = { "params", "grads", "optimizer", "activations", "working", "comm" };
    return (unsigned)c < MEM_COUNT ? names[c] : "?";
}

void *bk_alloc(Backend *b, size_t n, DType t, MemCategory cat) {
    CHECK((unsigned)cat < MEM_COUNT, "bk_alloc: category %d", (int)cat);
    size_t es = dtype_size(t);
    CHECK(n <= SIZE_MAX / es, "bk_alloc: %zu elements of %s overflow size_t", n, dtype_name(t));
    size_t bytes = n * es;
    b->mem[cat] += bytes;
    b->mem_total += bytes;
    if (b->mem_total > b->mem_peak) b->mem_peak = b->mem_total;
    if (b->dry || bytes == 0) return NULL;
    return b->ops->alloc(b, bytes);
}

void bk_free(Backend *b, void *p, size_t n, DType t, MemCategory cat) {
    size_t bytes = n * dtype_size(t);
    CHECK(b->mem[cat] >= bytes, "bk_free: %zu bytes of %s freed but %zu allocated", bytes,
          mem_category_name(cat), b->mem[cat]);
    b->mem[cat] -= bytes;
    b->mem_total -= bytes;
    if (p && !b->dry) b->ops->free(b, p);
}

void bk_observe(Backend *b, const OpObserver *obs, void *ctx) { b->obs = obs; b->obs_ctx = ctx; }

void backend_free(Backend *b) {
    if (!b) return;
    if (b->ops && b->ops->destroy) b->ops->destroy(b);
    free(b);
}
