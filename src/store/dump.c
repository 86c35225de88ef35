// dump.c — see dump.h and docs/checkpoint-format.md.
#include "dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "checkpoint.h"
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

// What is at `name` in `d`, read without following a link and with HDF5 only for a regular
// file that starts with HDF5's signature: 1 (nothing there), 0 and the run uid of a step dump
// into what[n] ("" for a dump that names no run), or -1 and what it is instead into what[n].
static int what_is_at(const OutDir *d, const char *name, char *what, size_t n) {
    struct stat st;
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 1;
        snprintf(what, n, "it cannot be examined (%s)", strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) { snprintf(what, n, "a symbolic link"); return -1; }
    if (!S_ISREG(st.st_mode)) { snprintf(what, n, "%s", S_ISDIR(st.st_mode) ? "a folder" : "not a regular file"); return -1; }
    char path[2600];
    xsnprintf(path, sizeof path, "%s/%s", d->path, name);
    if (checkpoint_written_here(path)) { snprintf(what, n, "a checkpoint"); return -1; }
    static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    unsigned char head[8];
    int fd = outdir_open_read(d, name);
    int hdf5 = fd >= 0 && pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head && !memcmp(head, sig, sizeof sig);
    if (fd >= 0) close(fd);
    if (!hdf5) { snprintf(what, n, "a file boost-c did not write (not a step dump)"); return -1; }
    H5Job j;
    h5j_begin(&j, path);
    hid_t f = h5j_open_read(&j, path);
    // (integer and fixed-length attributes only: they live in the checksummed object header,
    // never the global heap, which a damaged file can make HDF5 loop over)
    char *uid = NULL;
    int64_t version = 0, at_step = 0;
    int has_uid = f >= 0 ? h5j_attr_read_str(&j, f, "run_uid", &uid, 0) : -1;
    int is_dump = f >= 0 && h5j_attr_read_i64(&j, f, "format_version", &version) == 1 &&
                  h5j_attr_read_i64(&j, f, "step", &at_step) == 1;
    h5j_close(&j, f);
    int kind = -1;
    if (!is_dump) snprintf(what, n, "an HDF5 file that is not a step dump%s%s", j.failed ? ": " : "", j.failed ? j.msg : "");
    else { snprintf(what, n, "%s", has_uid == 1 ? uid : ""); kind = 0; }
    free(uid);
    return kind;
}

int dump_may_write_in(const OutDir *d, const char *name, const char *run_uid, char *err, size_t n) {
    char what[1400];
    int kind = what_is_at(d, name, what, sizeof what);
    if (kind == 1 || (kind == 0 && !strcmp(what, run_uid))) return 0;
    if (kind == 0 && what[0]) return outdir_fail(err, n, "%s/%s is a step dump of run %s, not of run %s", d->path, name, what, run_uid);
    if (kind == 0) return outdir_fail(err, n, "%s/%s is a step dump that names no run (written before dumps stored their run uid)",
                                      d->path, name);
    return outdir_fail(err, n, "%s/%s is %s", d->path, name, what);
}

int dump_folder_is_runs(const OutDir *d, const char *run_uid, char *err, size_t n) {
    int dfd = dup(d->fd);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir) {
        if (dfd >= 0) close(dfd);
        return outdir_fail(err, n, "cannot list %s: %s", d->path, strerror(errno));
    }
    rewinddir(dir);
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(dir)))
        if (checkpoint_name_step(e->d_name) >= 0) rc = dump_may_write_in(d, e->d_name, run_uid, err, n);
    if (rc == 0 && errno) rc = outdir_fail(err, n, "cannot list %s: %s", d->path, strerror(errno));
    closedir(dir);
    return rc;
}

void dump_write_in(const OutDir *d, const char *name, const char *run_uid, const ModelState *m, const Model *acts,
                   int64_t step, const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                   double loss) {
    CHECK(rows >= 1 && T >= 1, "dump_write: bad batch shape [%d,%d]", rows, T);
    store_check_param_names(m);   // before anything is open
    char path[2600], now[32], err[3000];
    xsnprintf(path, sizeof path, "%s/%s", d->path, name);
    if (dump_may_write_in(d, name, run_uid, err, sizeof err) != 0)
        die_input_hint("set run.dump_dir to a folder of its own (or leave it unset: <run folder>/dumps)",
                       "cannot write step dump %s: %s; a step dump replaces only a dump of its own run", path, err);
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
    h5j_attr_fixed_str(&j, f, "run_uid", run_uid);   // (checksummed, as in checkpoints)
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

void dump_write(const char *path, const char *run_uid, const ModelState *m, const Model *acts, int64_t step,
                const char *config_json, const int32_t *inputs, const int32_t *targets, int rows, int T,
                double loss) {
    OutDir d;
    char name[1024], err[1600];
    if (outdir_open_parent(&d, path, 1, name, sizeof name, err, sizeof err) != 0)
        die_input_hint("set run.dump_dir to a writable directory", "cannot write step dump %s: %s", path, err);
    dump_write_in(&d, name, run_uid, m, acts, step, config_json, inputs, targets, rows, T, loss);
    outdir_close(&d);
}
