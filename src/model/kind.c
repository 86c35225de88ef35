// kind.c — the registry of linear kinds, generated from config/linear_kinds.h (kind.h).
#include "kind.h"
#include "../core/check.h"

// Each kind of config/linear_kinds.h: its `const Kind kind_<name>` (kind_<name>.c) at its enum value.
#define KIND_DECLARE_ROW(NAME, name) extern const Kind kind_##name;
LINEAR_KINDS(KIND_DECLARE_ROW)
#define KIND_TABLE_ROW(NAME, name) [LINEAR_##NAME] = &kind_##name,
static const Kind *const kinds[LINEAR_KIND_COUNT] = {LINEAR_KINDS(KIND_TABLE_ROW)};

const Kind *kind_of(const ModelConfig *m) {
    int n = (int)(sizeof kinds / sizeof kinds[0]);
    CHECK((int)m->linear >= 0 && (int)m->linear < n && kinds[m->linear], "model.linear = %d has no registered kind (model/kind.c)",
          (int)m->linear);
    return kinds[m->linear];
}
