// dry.c — the accounting back end: no memory is allocated (bk_alloc counts the bytes and
// returns NULL) and no op runs (the front ends see b->dry and call no entry), but every op
// still reports its OpInfo to the observer and every collective is still accounted by the
// Comm. So the real model drivers run their control flow at any scale in milliseconds:
// communication tables (bench_comm), memory reports and the simulator's traces.
#include "backend.h"
#include "../core/check.h"

static const BackendOps dry_ops = { .alloc = NULL };

Backend *backend_dry(DType dtype) {
    Backend *b = xcalloc(1, sizeof *b);
    b->ops = &dry_ops;
    b->name = "dry";
    b->dtype = dtype;
    b->dry = 1;
    b->layer = -1;
    return b;
}
