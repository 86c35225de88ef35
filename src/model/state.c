// state.c — see state.h.
#include "state.h"
#include "../core/check.h"

void model_state_init(ModelState *s, const ModelConfig *cfg, int families) {
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    param_table_build(&s->table, cfg, NULL);
    size_t bytes = s->table.n_params * sizeof(float);
    s->params = xaligned_alloc(bytes);
    if (families & STATE_GRADS) s->grads = xaligned_alloc(bytes);
    if (families & STATE_OPTIM) { s->m = xaligned_alloc(bytes); s->v = xaligned_alloc(bytes); }
}

void model_state_free(ModelState *s) {
    free(s->params); free(s->grads); free(s->m); free(s->v);
    param_table_free(&s->table);
    memset(s, 0, sizeof *s);
}

void model_state_init_weights(ModelState *s, uint64_t seed) {
    param_table_init_weights(&s->table, s->params, seed);
}
