// dump.c — see dump.h and docs/checkpoint-format.md.
#include "dump.h"

#include "util.h"
#include "../core/check.h"

// Every write goes through the job `j`: after a failure the rest are no-ops and
// dump_write reports once, with the file closed and the partial file removed.
static void write_params(H5Job *j, hid_t f, const ModelState *m, const char *prefix, const float *base) {
    char path[256];
    for (int i = 0; i < m->table.n_specs && !j->failed; i++) {
        const ParamSpec *s = &m->table.specs[i];
        xsnprintf(path, sizeof path, "/%s/%s", prefix, s->name + 6);
        if (s->ndim == 1) h5j_write(j, f, path, 1, s->cols, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, base + s->offset, NULL);
        else h5j_write(j, f, path, 2, s->rows, s->cols, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, base + s->offset, NULL);
    }
}

static void act(H5Job *j, hid_t f, const char *dir, const char *name, const float *p, int64_t N, int64_t cols) {
    if (!p || j->failed) return;
    char path[256];
    xsnprintf(path, sizeof path, "%s/%s", dir, name);
    h5j_write(j, f, path, 2, N, cols, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, p, NULL);
}

// Bottleneck activations of one low-rank linear: <name>_h = x@A and, for cola, <name>_z = SiLU(h)
// (svd: z is h itself and is not stored twice). LaX (docs/lax.md): <name>_h = U = x@A + g(z_prev)
// (x@A in layer 0), <name>_z = σ(LN(U)) whenever it is not U itself.
static void act_lowrank(H5Job *j, hid_t f, const char *dir, const char *name, const LowRankActs *la, const ModelConfig *c,
                        int64_t N, int64_t r) {
    (void)c;
    if (!la->h) return;                                  // dense: no bottleneck
    char nm[32];
    xsnprintf(nm, sizeof nm, "%s_h", name); act(j, f, dir, nm, la->h, N, r);
    if (la->z != la->h) {                                // svd: z is h
        xsnprintf(nm, sizeof nm, "%s_z", name); act(j, f, dir, nm, la->z, N, r);
    }
}

static void write_activations(H5Job *j, hid_t f, const Model *m, int rows) {
    const ModelConfig *c = &m->cfg;
    int64_t N = m->N, d = c->d_model, kvd = (int64_t)c->n_kv_heads * (d / c->n_heads), ff = c->d_ff;
    int64_t ra = c->rank_attn, rm = c->rank_mlp;
    hid_t g = h5j_group(j, f, "/activations");
    int64_t first = rows - m->B;
    h5j_attr_i64(j, g, "first_row", first < 0 ? 0 : first);   // rows [first_row, first_row + B) of /batch
    h5j_attr_i64(j, g, "B", m->B);
    h5j_attr_i64(j, g, "T", m->T);
    h5j_close(j, g);
    char dir[96];
    for (int l = 0; l < c->n_layers; l++) {
        const LayerActs *la = &m->acts.layers[l];
        xsnprintf(dir, sizeof dir, "/activations/layers/%d", l);
        act(j, f, dir, "x", la->x, N, d);
        act(j, f, dir, "a", la->a, N, d);
        act(j, f, dir, "q", la->q, N, d);
        act(j, f, dir, "k", la->k, N, kvd);
        act(j, f, dir, "v", la->v, N, kvd);
        act(j, f, dir, "y", la->y, N, d);
        act(j, f, dir, "x_mid", la->x_mid, N, d);
        act(j, f, dir, "m", la->m, N, d);
        act(j, f, dir, "g", la->g, N, ff);
        act(j, f, dir, "u", la->u, N, ff);
        act(j, f, dir, "gu", la->gu, N, ff);
        act_lowrank(j, f, dir, "q", &la->lq, c, N, ra);
        act_lowrank(j, f, dir, "k", &la->lk, c, N, ra);
        act_lowrank(j, f, dir, "v", &la->lv, c, N, ra);
        act_lowrank(j, f, dir, "o", &la->lo, c, N, ra);
        act_lowrank(j, f, dir, "gate", &la->lg, c, N, rm);
        act_lowrank(j, f, dir, "up", &la->lu, c, N, rm);
        act_lowrank(j, f, dir, "down", &la->ld, c, N, rm);
    }
    act(j, f, "/activations", "x_final", m->acts.x_final, N, d);
    act(j, f, "/activations", "xf", m->acts.xf, N, d);
    h5j_write(j, f, "/activations/losses", 1, N, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, m->acts.losses, NULL);
}

void dump_write_in(const OutDir *d, const char *name, const ModelState *m, const Model *acts, int64_t step,
                   const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                   double loss) {
    CHECK(rows >= 1 && T >= 1, "dump_write: bad batch shape [%d,%d]", rows, T);
    store_check_param_names(m);   // before anything is open
    char path[2600], now[32];
    xsnprintf(path, sizeof path, "%s/%s", d->path, name);
    store_iso_now(now);
    H5Job j;
    h5j_begin(&j, path);
    hid_t f = h5j_create_in(&j, d, name, 0, NULL);
    if (j.fd < 0)   // nothing was created: something is at the temporary name, or the folder refuses it
        die_input_hint("remove what is at that name, or set run.dump_dir to a writable directory",
                       "cannot write step dump %s: %s", path, j.msg);
    h5j_attr_str(&j, f, "format", DUMP_FORMAT);
    h5j_attr_i32(&j, f, "format_version", DUMP_FORMAT_VERSION);
    h5j_attr_i64(&j, f, "step", step);
    h5j_attr_str(&j, f, "config", config_json);
    h5j_attr_str(&j, f, "created_at", now);
    write_params(&j, f, m, "model", m->params);
    write_params(&j, f, m, "grads", m->grads);
    h5j_write(&j, f, "/batch/inputs", 2, rows, T, H5T_STD_I32LE, H5T_NATIVE_INT32, inputs, NULL);
    h5j_write(&j, f, "/batch/targets", 2, rows, T, H5T_STD_I32LE, H5T_NATIVE_INT32, targets, NULL);
    h5j_write(&j, f, "/loss", 0, 0, 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &loss, NULL);
    if (acts) write_activations(&j, f, acts, rows);
    if (h5j_close_commit(&j, f) != 0)
        die_input_hint("free space on that file system, or set run.dump_dir to a writable directory",
                       "cannot write step dump %s: %s (the partial file %s/%s was removed)", path, j.msg, d->path, j.tmp);
}

void dump_write(const char *path, const ModelState *m, const Model *acts, int64_t step,
                const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                double loss) {
    OutDir d;
    char name[1024], err[1600];
    if (outdir_open_parent(&d, path, 1, name, sizeof name, err, sizeof err) != 0)
        die_input_hint("set run.dump_dir to a writable directory", "cannot write step dump %s: %s", path, err);
    dump_write_in(&d, name, m, acts, step, config_json, inputs, targets, rows, T, loss);
    outdir_close(&d);
}
