// checkpoint.c — see checkpoint.h and docs/checkpoint-format.md.
#include "checkpoint.h"

#include <dirent.h>
#include <inttypes.h>
#include <unistd.h>

#include "util.h"
#include "../core/check.h"

static const char *strip_model(const char *name) {
    CHECK(strncmp(name, "model/", 6) == 0, "parameter name '%s' does not start with model/", name);
    return name + 6;
}

// "/<prefix><name>" for family `fam` ("model" -> "/model/...", "m" -> "/optimizer/m/...").
static void family_path(char *buf, size_t n, const char *fam, const char *name) {
    if (strcmp(fam, "model") == 0) xsnprintf(buf, n, "/%s", name);
    else xsnprintf(buf, n, "/optimizer/%s/%s", fam, strip_model(name));
}

static void write_family(hid_t f, const ModelState *m, const char *fam, const float *base) {
    char path[256];
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        family_path(path, sizeof path, fam, s->name);
        if (s->ndim == 1) h5_write(f, path, 1, s->cols, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, base + s->offset);
        else h5_write(f, path, 2, s->rows, s->cols, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, base + s->offset);
    }
}

void checkpoint_write(const char *path, const ModelState *m, const CheckpointMeta *meta) {
    char tmp[1100], now[32];
    xsnprintf(tmp, sizeof tmp, "%s.tmp", path);
    hid_t f = h5_create(tmp);
    h5_attr_str(f, "format", CHECKPOINT_FORMAT);
    h5_attr_i32(f, "format_version", CHECKPOINT_FORMAT_VERSION);
    h5_attr_i64(f, "step", meta->step);
    h5_attr_i64(f, "tokens_seen", meta->tokens_seen);
    h5_attr_u64(f, "samples_seen", meta->samples_seen);
    h5_attr_u64(f, "seed", meta->seed);
    h5_attr_str(f, "manifest", meta->manifest);
    h5_attr_str(f, "config", meta->config_json);
    h5_attr_str(f, "git_commit", meta->git_commit);
    store_iso_now(now);
    h5_attr_str(f, "created_at", now);
    write_family(f, m, "model", m->params);
    write_family(f, m, "m", m->m);
    write_family(f, m, "v", m->v);
    hid_t g = h5_group(f, "/optimizer");
    h5_attr_i64(g, "step", meta->adam_t);
    H5C(H5Gclose(g));
    h5_close_commit(f, tmp, path);
}

// ---- reading ----------------------------------------------------------------------
typedef struct {
    char path[256];      // without the leading '/'
    int ndim;
    hsize_t dims[8];
    int is_f32;
    char type[32];       // "float32", "float64", "int32", ...
} DsInfo;
typedef struct { DsInfo *v; int n, cap; } DsList;

static void describe_type(hid_t t, char *buf, size_t n) {
    H5T_class_t c = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    if (c == H5T_FLOAT) xsnprintf(buf, n, "float%zu", sz * 8);
    else if (c == H5T_INTEGER) xsnprintf(buf, n, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", sz * 8);
    else if (c == H5T_STRING) xsnprintf(buf, n, "string");
    else xsnprintf(buf, n, "HDF5 class %d", (int)c);
}

static herr_t visit_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    DsList *L = data;
    if (info->type != H5L_TYPE_HARD) return 0;
    if (strncmp(name, "model/", 6) && strncmp(name, "optimizer/m/", 12) && strncmp(name, "optimizer/v/", 12)) return 0;
    hid_t o = H5C(H5Oopen(g, name, H5P_DEFAULT));
    if (H5Iget_type(o) == H5I_DATASET) {
        if (L->n == L->cap) {
            L->cap = L->cap ? 2 * L->cap : 64;
            L->v = realloc(L->v, sizeof(DsInfo) * (size_t)L->cap);
            CHECK(L->v, "out of memory");
        }
        DsInfo *d = &L->v[L->n++];
        memset(d, 0, sizeof *d);
        xsnprintf(d->path, sizeof d->path, "%s", name);
        hid_t sp = H5C(H5Dget_space(o));
        d->ndim = (int)H5C(H5Sget_simple_extent_ndims(sp));
        if (d->ndim > 8) d->ndim = 8;   // (only for the message; such a dataset never matches)
        else H5C(H5Sget_simple_extent_dims(sp, d->dims, NULL));
        H5C(H5Sclose(sp));
        hid_t t = H5C(H5Dget_type(o));
        d->is_f32 = H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 4;
        describe_type(t, d->type, sizeof d->type);
        H5C(H5Tclose(t));
    }
    H5C(H5Oclose(o));
    return 0;
}

static int ds_cmp(const void *a, const void *b) { return strcmp(((const DsInfo *)a)->path, ((const DsInfo *)b)->path); }

static DsInfo *ds_find(DsList *L, const char *path) {
    DsInfo key; xsnprintf(key.path, sizeof key.path, "%s", path);
    return bsearch(&key, L->v, (size_t)L->n, sizeof(DsInfo), ds_cmp);
}

static void fmt_shape(char *buf, size_t n, int ndim, const hsize_t *dims) {
    xsnprintf(buf, n, "[");
    for (int i = 0; i < ndim; i++) {
        size_t l = strlen(buf);
        xsnprintf(buf + l, n - l, "%s%llu", i ? "," : "", (unsigned long long)dims[i]);
    }
    size_t l = strlen(buf);
    xsnprintf(buf + l, n - l, "]");
}

static void spec_dims(const ParamSpec *s, int *ndim, hsize_t dims[2]) {
    if (s->ndim == 1) { *ndim = 1; dims[0] = (hsize_t)s->cols; }
    else { *ndim = 2; dims[0] = (hsize_t)s->rows; dims[1] = (hsize_t)s->cols; }
}

#define REFUSED "the model changed; resuming with a different model is refused"

// Validate every tensor of family `fam` against m's table; mark found entries used.
static void validate_family(const char *file, DsList *L, unsigned char *used, const ModelState *m, const char *fam) {
    char path[256], want[64], got[64];
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        family_path(path, sizeof path, fam, s->name);
        int nd; hsize_t dims[2];
        spec_dims(s, &nd, dims);
        fmt_shape(want, sizeof want, nd, dims);
        DsInfo *d = ds_find(L, path + 1);
        if (!d) {
            if (strcmp(fam, "model") == 0)
                die_input("%s: %s is missing but the configuration expects it with shape %s: " REFUSED, file, path, want);
            die_input("%s: %s is missing (expected float32 %s): the checkpoint is incomplete", file, path, want);
        }
        used[d - L->v] = 1;
        int same = d->ndim == nd;
        for (int k = 0; same && k < nd; k++) same = d->dims[k] == dims[k];
        if (!same) {
            fmt_shape(got, sizeof got, d->ndim, d->dims);
            die_input("%s: %s has shape %s but the configuration expects %s: " REFUSED, file, path, got, want);
        }
        if (!d->is_f32) die_input("%s: %s has type %s but float32 was expected", file, path, d->type);
    }
}

static void read_family(hid_t f, const ModelState *m, const char *fam, float *base) {
    char path[256];
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        family_path(path, sizeof path, fam, s->name);
        hid_t ds = H5C(H5Dopen2(f, path, H5P_DEFAULT));
        H5C(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, base + s->offset));
        H5C(H5Dclose(ds));
    }
}

// Opens `path` read-only with errors quiet: -1 if it is not a readable HDF5 file.
static hid_t open_quiet(const char *path) {
    store_h5_init();
    if (access(path, R_OK) != 0) return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);
    return f;
}

static void check_format(const char *path, hid_t f) {
    char *fmt = NULL;
    if (!h5_attr_read_str(f, "format", &fmt) || strcmp(fmt, CHECKPOINT_FORMAT) != 0)
        die_input("%s: root attribute 'format' is %s%s%s, expected \"" CHECKPOINT_FORMAT "\": not a boost-c checkpoint",
                  path, fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "");
    free(fmt);
    int64_t v = 0;
    if (!h5_attr_read_i64(f, "format_version", &v))
        die_input("%s: root attribute 'format_version' is missing (expected the integer %d)", path, CHECKPOINT_FORMAT_VERSION);
    if (v != CHECKPOINT_FORMAT_VERSION)
        die_input("%s: format_version is %" PRId64 " but this build reads format_version %d", path, v, CHECKPOINT_FORMAT_VERSION);
}

void checkpoint_read(const char *path, ModelState *m, CheckpointMeta *out) {
    if (access(path, R_OK) != 0) die_input("%s: cannot read the checkpoint: %s", path, strerror(errno));
    hid_t f = open_quiet(path);
    if (f < 0) die_input("%s: not a readable HDF5 file (truncated or corrupt?)", path);
    check_format(path, f);

    DsList L = {0};
    H5C(H5Lvisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, visit_cb, &L));
    if (L.n) qsort(L.v, (size_t)L.n, sizeof(DsInfo), ds_cmp);
    unsigned char *used = xcalloc((size_t)L.n + 1, 1);
    validate_family(path, &L, used, m, "model");
    validate_family(path, &L, used, m, "m");
    validate_family(path, &L, used, m, "v");
    char got[64];
    for (int i = 0; i < L.n; i++) {
        if (used[i]) continue;
        fmt_shape(got, sizeof got, L.v[i].ndim, L.v[i].dims);
        die_input("%s: /%s (shape %s) is not part of the configured model: " REFUSED, path, L.v[i].path, got);
    }
    free(used); free(L.v);

    read_family(f, m, "model", m->params);
    read_family(f, m, "m", m->m);
    read_family(f, m, "v", m->v);

    CheckpointMeta meta = {0};
    const char *missing = NULL;
    if (!h5_attr_read_i64(f, "step", &meta.step)) missing = "step";
    else if (!h5_attr_read_i64(f, "tokens_seen", &meta.tokens_seen)) missing = "tokens_seen";
    else if (!h5_attr_read_u64(f, "samples_seen", &meta.samples_seen)) missing = "samples_seen";
    else if (!h5_attr_read_u64(f, "seed", &meta.seed)) missing = "seed";
    if (missing) die_input("%s: root attribute '%s' (integer) is missing", path, missing);
    hid_t g = H5C(H5Gopen2(f, "/optimizer", H5P_DEFAULT));
    if (!h5_attr_read_i64(g, "step", &meta.adam_t)) die_input("%s: attribute /optimizer step (integer) is missing", path);
    H5C(H5Gclose(g));
    if (!h5_attr_read_str(f, "manifest", &meta.manifest)) meta.manifest = xstrdup("");
    if (!h5_attr_read_str(f, "config", &meta.config_json)) meta.config_json = xstrdup("");
    if (!h5_attr_read_str(f, "git_commit", &meta.git_commit)) meta.git_commit = xstrdup("unknown");
    H5C(H5Fclose(f));
    if (out) *out = meta;
    else checkpoint_meta_free(&meta);
}

void checkpoint_meta_free(CheckpointMeta *meta) {
    free(meta->manifest); free(meta->config_json); free(meta->git_commit);
    meta->manifest = meta->config_json = meta->git_commit = NULL;
}

void checkpoint_path(char *buf, size_t n, const char *dir, int64_t step) {
    xsnprintf(buf, n, "%s/step_%" PRId64 ".h5", dir, step);
}

// ---- listing ----------------------------------------------------------------------
// "step_<N>.h5" (suffix ".h5", or ".h5.tmp" when tmp) -> N; -1 if the name differs.
static int64_t parse_name(const char *name, int tmp) {
    if (strncmp(name, "step_", 5) != 0) return -1;
    const char *p = name + 5;
    if (*p < '0' || *p > '9') return -1;
    int64_t n = 0;
    while (*p >= '0' && *p <= '9') { if (n > INT64_MAX / 10 - 10) return -1; n = n * 10 + (*p++ - '0'); }
    return strcmp(p, tmp ? ".h5.tmp" : ".h5") == 0 ? n : -1;
}

// 1 if `path` opens as a boost-c checkpoint whose step attribute is `step`; else warns.
static int is_complete(const char *path, int64_t step) {
    hid_t f = open_quiet(path);
    if (f < 0) {
        fprintf(stderr, "warning: skipping checkpoint %s: not a readable HDF5 file (truncated or corrupt?)\n", path);
        return 0;
    }
    char *fmt = NULL; int64_t s = -1;
    int ok = h5_attr_read_str(f, "format", &fmt) && strcmp(fmt, CHECKPOINT_FORMAT) == 0;
    if (!ok) fprintf(stderr, "warning: skipping %s: not a boost-c checkpoint (root attribute 'format')\n", path);
    else if (!h5_attr_read_i64(f, "step", &s) || s != step) {
        fprintf(stderr, "warning: skipping %s: its step attribute (%" PRId64 ") does not match the file name\n", path, s);
        ok = 0;
    }
    free(fmt);
    H5C(H5Fclose(f));
    return ok;
}

static int entry_cmp(const void *a, const void *b) {
    int64_t x = ((const CheckpointEntry *)a)->step, y = ((const CheckpointEntry *)b)->step;
    return x < y ? -1 : x > y;
}

// All step_<N>.h5 names (tmp = 0) or step_<N>.h5.tmp names (tmp = 1), sorted ascending.
static int scan(const char *dir, int tmp, CheckpointEntry **out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        DIE("opendir %s failed: %s", dir, strerror(errno));
    }
    int n = 0, cap = 0;
    CheckpointEntry *v = NULL;
    struct dirent *e;
    while ((errno = 0, e = readdir(d))) {
        int64_t s = parse_name(e->d_name, tmp);
        if (s < 0) continue;
        if (n == cap) { cap = cap ? 2 * cap : 16; v = realloc(v, sizeof *v * (size_t)cap); CHECK(v, "out of memory"); }
        v[n].step = s;
        xsnprintf(v[n].path, sizeof v[n].path, "%s/%s", dir, e->d_name);
        n++;
    }
    CHECK_ERRNO(errno != 0, "readdir");
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, entry_cmp);
    *out = v;
    return n;
}

int checkpoint_list(const char *dir, CheckpointEntry **out) {
    CheckpointEntry *all;
    int n = scan(dir, 0, &all), k = 0;
    for (int i = 0; i < n; i++)
        if (is_complete(all[i].path, all[i].step)) all[k++] = all[i];
    if (k == 0) { free(all); all = NULL; }
    *out = all;
    return k;
}

int checkpoint_latest(const char *dir, char *path, size_t n, int64_t *step) {
    CheckpointEntry *all;
    int cnt = scan(dir, 0, &all), found = 0;
    for (int i = cnt - 1; i >= 0 && !found; i--) {   // newest first: stop at the first good one
        if (!is_complete(all[i].path, all[i].step)) continue;
        xsnprintf(path, n, "%s", all[i].path);
        if (step) *step = all[i].step;
        found = 1;
    }
    free(all);
    return found;
}

int checkpoint_prune(const char *dir, int keep_last) {
    CHECK(keep_last >= 1, "checkpoint_prune: keep_last must be >= 1 (got %d)", keep_last);
    CheckpointEntry *good;
    int ng = checkpoint_list(dir, &good);
    if (ng == 0) return 0;
    int64_t cut = ng > keep_last ? good[ng - keep_last].step : good[0].step;  // keep steps >= cut
    int64_t newest = good[ng - 1].step;
    free(good);
    int removed = 0;
    for (int tmp = 0; tmp < 2; tmp++) {
        CheckpointEntry *all;
        int n = scan(dir, tmp, &all);
        for (int i = 0; i < n; i++) {
            if (tmp ? all[i].step >= newest : all[i].step >= cut) continue;
            if (unlink(all[i].path) != 0) DIE("unlink %s failed: %s", all[i].path, strerror(errno));
            removed++;
        }
        free(all);
    }
    if (removed) store_fsync_dir(dir);
    return removed;
}
