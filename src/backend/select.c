// select.c — the registry of back ends: the one file of backend/ that knows the concrete back
// ends (cpu/, dry.c, cuda/). backend.c is shared by all of them and knows none, so no back end
// and the seam call each other in a circle. Callers choose a back end by its entry here and
// then rely on its capabilities (backend.h), never on its name.
#include <stdio.h>
#include <string.h>
#include "backend.h"

static Backend *create_cpu(DType dtype, int device, char *why, size_t why_len) {
    (void)device; (void)why; (void)why_len;
    return backend_cpu(dtype);
}
static Backend *create_dry(DType dtype, int device, char *why, size_t why_len) {
    (void)device; (void)why; (void)why_len;
    return backend_dry(dtype);
}

static const BackendKind kinds[] = {
    { "cpu", create_cpu, 0 },
    { "dry", create_dry, 0 },
    { "cuda", backend_cuda, 1 },
};

const BackendKind *backend_kind(const char *name) {
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) if (!strcmp(kinds[i].name, name)) return &kinds[i];
    return NULL;
}

Backend *backend_create(const char *name, DType dtype, char *why, size_t why_len) {
    const BackendKind *k = backend_kind(name);
    if (!k) {
        if (why) snprintf(why, why_len, "unknown back end '%s' (expected cpu, dry or cuda)", name);
        return NULL;
    }
    return k->create(dtype, -1, why, why_len);
}

Backend *backend_default(void) {
    static Backend *cpu;
    if (!cpu) cpu = backend_cpu(DT_F32);
    return cpu;
}
