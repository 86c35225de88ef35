// dump.c — see dump.h and docs/checkpoint-format.md.
#include "dump.h"

#include "util.h"
#include "../core/check.h"

static void write_params(hid_t f, const ModelState *m, const char *prefix, const float *base) {
    char path[256];
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        CHECK(strncmp(s->name, "model/", 6) == 0, "parameter name '%s' does not start with model/", s->name);
        xsnprintf(path, sizeof path, "/%s/%s", prefix, s->name + 6);
        if (s->ndim == 1) h5_write(f, path, 1, s->cols, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, base + s->offset);
        else h5_write(f, path, 2, s->rows, s->cols, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, base + s->offset);
    }
}

static void act(hid_t f, const char *dir, const char *name, const float *p, int64_t N, int64_t cols) {
    if (!p) return;
    char path[256];
    xsnprintf(path, sizeof path, "%s/%s", dir, name);
    h5_write(f, path, 2, N, cols, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, p);
}

// Bottleneck activations of one low-rank linear: <name>_h = x@A and, for cola, <name>_z = SiLU(h)
// (svd: z is h itself and is not stored twice). LaX (docs/lax.md): <name>_h = U = x@A + g(z_prev)
// (x@A in layer 0), <name>_z = σ(LN(U)) whenever it is not U itself.
static void act_lowrank(hid_t f, const char *dir, const char *name, const LowRankActs *la, const ModelConfig *c,
                        int64_t N, int64_t r) {
    if (c->linear == LINEAR_DENSE || !la->h) return;
    char nm[32];
    xsnprintf(nm, sizeof nm, "%s_h", name); act(f, dir, nm, la->h, N, r);
    if (c->linear == LINEAR_COLA || (c->linear == LINEAR_LAX && la->z != la->h)) {
        xsnprintf(nm, sizeof nm, "%s_z", name); act(f, dir, nm, la->z, N, r);
    }
}

static void write_activations(hid_t f, const Model *m, int rows) {
    const ModelConfig *c = &m->cfg;
    int64_t N = m->N, d = c->d_model, kvd = (int64_t)c->n_kv_heads * (d / c->n_heads), ff = c->d_ff;
    int64_t ra = c->rank_attn, rm = c->rank_mlp;
    hid_t g = h5_group(f, "/activations");
    int64_t first = rows - m->B;
    h5_attr_i64(g, "first_row", first < 0 ? 0 : first);   // rows [first_row, first_row + B) of /batch
    h5_attr_i64(g, "B", m->B);
    h5_attr_i64(g, "T", m->T);
    H5C(H5Gclose(g));
    char dir[96];
    for (int l = 0; l < c->n_layers; l++) {
        const LayerActs *la = &m->acts.layers[l];
        xsnprintf(dir, sizeof dir, "/activations/layers/%d", l);
        act(f, dir, "x", la->x, N, d);
        act(f, dir, "a", la->a, N, d);
        act(f, dir, "q", la->q, N, d);
        act(f, dir, "k", la->k, N, kvd);
        act(f, dir, "v", la->v, N, kvd);
        act(f, dir, "y", la->y, N, d);
        act(f, dir, "x_mid", la->x_mid, N, d);
        act(f, dir, "m", la->m, N, d);
        act(f, dir, "g", la->g, N, ff);
        act(f, dir, "u", la->u, N, ff);
        act(f, dir, "gu", la->gu, N, ff);
        act_lowrank(f, dir, "q", &la->lq, c, N, ra);
        act_lowrank(f, dir, "k", &la->lk, c, N, ra);
        act_lowrank(f, dir, "v", &la->lv, c, N, ra);
        act_lowrank(f, dir, "o", &la->lo, c, N, ra);
        act_lowrank(f, dir, "gate", &la->lg, c, N, rm);
        act_lowrank(f, dir, "up", &la->lu, c, N, rm);
        act_lowrank(f, dir, "down", &la->ld, c, N, rm);
    }
    act(f, "/activations", "x_final", m->acts.x_final, N, d);
    act(f, "/activations", "xf", m->acts.xf, N, d);
    h5_write(f, "/activations/losses", 1, N, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, m->acts.losses);
}

void dump_write(const char *path, const ModelState *m, const Model *acts, int64_t step,
                const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                double loss) {
    CHECK(rows >= 1 && T >= 1, "dump_write: bad batch shape [%d,%d]", rows, T);
    char tmp[1100], now[32];
    xsnprintf(tmp, sizeof tmp, "%s.tmp", path);
    hid_t f = h5_create(tmp);
    h5_attr_str(f, "format", DUMP_FORMAT);
    h5_attr_i32(f, "format_version", DUMP_FORMAT_VERSION);
    h5_attr_i64(f, "step", step);
    h5_attr_str(f, "config", config_json);
    store_iso_now(now);
    h5_attr_str(f, "created_at", now);
    write_params(f, m, "model", m->params);
    write_params(f, m, "grads", m->grads);
    h5_write(f, "/batch/inputs", 2, rows, T, H5T_STD_I32LE, H5T_NATIVE_INT32, inputs);
    h5_write(f, "/batch/targets", 2, rows, T, H5T_STD_I32LE, H5T_NATIVE_INT32, targets);
    h5_write(f, "/loss", 0, 0, 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &loss);
    if (acts) write_activations(f, acts, rows);
    h5_close_commit(f, tmp, path);
}
