// kind.c — the registry of linear kinds: one line per kind (kind.h).
#include "kind.h"
#include "../core/check.h"

static const Kind *const kinds[] = {
    [LINEAR_DENSE] = &kind_dense,
    [LINEAR_COLA] = &kind_cola,
    [LINEAR_SVD] = &kind_svd,
    [LINEAR_LAX] = &kind_lax,
};

const Kind *kind_of(const ModelConfig *m) {
    int n = (int)(sizeof kinds / sizeof kinds[0]);
    CHECK((int)m->linear >= 0 && (int)m->linear < n && kinds[m->linear], "model.linear = %d has no registered kind (model/kind.c)",
          (int)m->linear);
    return kinds[m->linear];
}
