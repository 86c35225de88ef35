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

static int n_families(int families, float *fam_local[4], float *fam_full[4], Model *local, const ModelState *full) {
    int n = 0;
    if (families & STATE_PARAMS) { fam_local[n] = local->params; fam_full[n] = full ? full->params : NULL; n++; }
    if (families & STATE_GRADS) { fam_local[n] = local->grads; fam_full[n] = full ? full->grads : NULL; n++; }
    if (families & STATE_OPTIM) {
        fam_local[n] = local->m; fam_full[n] = full ? full->m : NULL; n++;
        fam_local[n] = local->v; fam_full[n] = full ? full->v : NULL; n++;
    }
    return n;
}

void state_gather(Model *local, ModelState *full, int families) {
    Comm *c = local->comm;
    float *fl[4], *ff[4];
    int nf = n_families(families, fl, ff, local, full);
    if (c->rank != 0) {
        if (c->dp_rank != 0) return;   // replica 0 holds everything; others are copies
        const ParamTable *t = &local->table;
        for (int i = 0; i < t->n_specs; i++)
            for (int f = 0; f < nf; f++)
                comm_send(c, GROUP_WORLD, fl[f] + t->specs[i].offset, t->specs[i].numel, 0, 100 + f, PHASE_OTHER, -1);
        return;
    }
    CHECK(full, "state_gather: rank 0 needs the full state");
    for (int pp_rank = 0; pp_rank < c->pp; pp_rank++) {
        for (int tp_rank = 0; tp_rank < c->tp; tp_rank++) {
            int peer = grid_world_rank(c->tp, c->dp, tp_rank, 0, pp_rank);
            Layout lay; ParamTable t; char msg[512];
            CHECK(layout_make(&lay, &local->cfg, local->lay.scheme, c->tp, tp_rank, c->pp, pp_rank, msg, sizeof msg), "%s", msg);
            param_table_build(&t, &local->cfg, &lay);
            float *buf = peer == 0 ? NULL : xmalloc(t.n_params * sizeof(float));
            for (int i = 0; i < t.n_specs; i++) {
                const ParamSpec *s = &t.specs[i];
                const ParamSpec *fs = param_find(&full->table, s->name);
                CHECK(fs, "state_gather: %s missing from the full table", s->name);
                for (int f = 0; f < nf; f++) {
                    float *src = peer == 0 ? fl[f] + s->offset : buf;
                    if (peer != 0) comm_recv(c, GROUP_WORLD, buf, s->numel, peer, 100 + f, PHASE_OTHER, -1);
                    block_copy(ff[f] + fs->offset, src, s, 1);
                }
            }
            free(buf);
            param_table_free(&t);
        }
    }
}

void state_scatter(Model *local, const ModelState *full, int families) {
    float *fl[4], *ff[4];
    int nf = n_families(families, fl, ff, local, full);
    const ParamTable *t = &local->table;
    for (int i = 0; i < t->n_specs; i++) {
        const ParamSpec *s = &t->specs[i];
        const ParamSpec *fs = param_find(&full->table, s->name);
        CHECK(fs, "state_scatter: %s missing from the full table", s->name);
        for (int f = 0; f < nf; f++) block_copy(ff[f] + fs->offset, fl[f] + s->offset, s, 0);
    }
}

// Saved shard pointers while whole-span m, v are swapped in.
static float *zero_m, *zero_v;

void zero1_optim_begin(Model *local, int assemble) {
    if (local->opt_len == local->n_alloc) return;        // not sharded
    float *m = xaligned_alloc(local->n_alloc * sizeof(float));
    float *v = xaligned_alloc(local->n_alloc * sizeof(float));
    if (assemble) {
        comm_all_gather(local->comm, GROUP_DP, local->m, m, local->opt_len, PHASE_OTHER, -1);
        comm_all_gather(local->comm, GROUP_DP, local->v, v, local->opt_len, PHASE_OTHER, -1);
    }
    zero_m = local->m; zero_v = local->v;
    local->m = m; local->v = v;
}

void zero1_optim_end(Model *local) {
    if (!zero_m) return;
    memcpy(zero_m, local->m + local->opt_offset, local->opt_len * sizeof(float));
    memcpy(zero_v, local->v + local->opt_offset, local->opt_len * sizeof(float));
    free(local->m); free(local->v);
    local->m = zero_m; local->v = zero_v;
    zero_m = zero_v = NULL;
}
