// state_io.c — gather/scatter of sharded tensors (see state_io.h).
//
// Rank 0 knows every rank's layout: it is a pure function of the configuration and the
// rank's (tp_rank, pp_rank) (layout_make + param_table_build), so rank 0 rebuilds each
// peer's table and receives the blocks in that table's order; no metadata travels.
#include "state_io.h"
#include "../core/check.h"

// Copy a rows x cols block between a local buffer [lr, lc] and its place in the full
// tensor [rows, cols] at (row0, col0). to_full: local -> full, else full -> local.
static void block_copy(float *full, float *local, const ParamSpec *s, int to_full) {
    for (int64_t r = 0; r < s->local_rows; r++) {
        float *f = full + (s->row0 + r) * s->cols + s->col0;
        float *l = local + r * s->local_cols;
        if (to_full) memcpy(f, l, (size_t)s->local_cols * sizeof(float));
        else memcpy(l, f, (size_t)s->local_cols * sizeof(float));
    }
}

static int n_families(int families, float *fam_local[4], float *fam_full[4], const StateArrays *local,
                      const ModelState *full) {
    int n = 0;
    if (families & STATE_PARAMS) { fam_local[n] = local->params; fam_full[n] = full ? full->params : NULL; n++; }
    if (families & STATE_GRADS) { fam_local[n] = local->grads; fam_full[n] = full ? full->grads : NULL; n++; }
    if (families & STATE_OPTIM) {
        fam_local[n] = local->m; fam_full[n] = full ? full->m : NULL; n++;
        fam_local[n] = local->v; fam_full[n] = full ? full->v : NULL; n++;
    }
    for (int f = 0; f < n; f++) CHECK(fam_local[f], "state_io: a requested family has no local array");
    return n;
}

void state_gather(Comm *c, const ModelConfig *cfg, TPScheme scheme, const ParamTable *lt,
                  const StateArrays *local, ModelState *full, int families) {
    float *fl[4], *ff[4];
    int nf = n_families(families, fl, ff, local, full);
    if (c->rank != 0) {
        if (c->dp_rank != 0) return;   // replica 0 holds everything; others are copies
        for (int i = 0; i < lt->n_specs; i++)
            for (int f = 0; f < nf; f++)
                comm_host_send(c, GROUP_WORLD, fl[f] + lt->specs[i].offset, lt->specs[i].numel, DTYPE_F32, 0, 100 + f, PHASE_OTHER, -1);
        return;
    }
    CHECK(full, "state_gather: rank 0 needs the full state");
    for (int f = 0; f < nf; f++) CHECK(ff[f], "state_gather: the full state lacks a requested family");
    for (int pp_rank = 0; pp_rank < c->pp; pp_rank++) {
        for (int tp_rank = 0; tp_rank < c->tp; tp_rank++) {
            int peer = grid_world_rank(c->tp, c->dp, tp_rank, 0, pp_rank);
            Layout lay; ParamTable t; char msg[512];
            CHECK(layout_make(&lay, cfg, scheme, c->tp, tp_rank, c->pp, pp_rank, msg, sizeof msg), "%s", msg);
            param_table_build(&t, cfg, &lay);
            float *buf = peer == 0 ? NULL : xmalloc(t.n_params * sizeof(float) + 4);
            for (int i = 0; i < t.n_specs; i++) {
                const ParamSpec *s = &t.specs[i];
                const ParamSpec *fs = param_find(&full->table, s->name);
                CHECK(fs, "state_gather: %s missing from the full table", s->name);
                for (int f = 0; f < nf; f++) {
                    float *src = peer == 0 ? fl[f] + s->offset : buf;
                    if (peer != 0) comm_host_recv(c, GROUP_WORLD, buf, s->numel, DTYPE_F32, peer, 100 + f, PHASE_OTHER, -1);
                    block_copy(ff[f] + fs->offset, src, s, 1);
                }
            }
            free(buf);
            param_table_free(&t);
        }
    }
}

void state_scatter(const ParamTable *t, StateArrays *local, const ModelState *full, int families) {
    float *fl[4], *ff[4];
    int nf = n_families(families, fl, ff, local, full);
    for (int i = 0; i < t->n_specs; i++) {
        const ParamSpec *s = &t->specs[i];
        const ParamSpec *fs = param_find(&full->table, s->name);
        CHECK(fs, "state_scatter: %s missing from the full table", s->name);
        for (int f = 0; f < nf; f++) block_copy(ff[f] + fs->offset, fl[f] + s->offset, s, 0);
    }
}

void state_gather_model(Model *m, ModelState *full, int families) {
    CHECK(!(families & STATE_OPTIM), "state_gather_model: a Model holds no optimizer state");
    size_t bytes = m->table.n_params * sizeof(float) + 4;
    StateArrays a = {0};
    if (families & STATE_PARAMS) { a.params = xmalloc(bytes); model_get_params(m, a.params); }
    if (families & STATE_GRADS) { a.grads = xmalloc(bytes); model_get_grads(m, a.grads); }
    state_gather(m->comm, &m->cfg, m->lay.scheme, &m->table, &a, full, families);
    free(a.params); free(a.grads);
}
