// h5compare — two boost-c HDF5 files (step dumps or checkpoints) compared tensor by tensor,
// with nothing but the engine's own libraries (the GPU checks run it on machines without
// Python; the tests run it everywhere).
//
//   build/h5compare A.h5 B.h5 [--groups model,grads,loss] [--atol 1e-5] [--rtol 1e-4] [--exact]
//
// For every dataset under the named groups (a top-level dataset such as /loss counts as its
// own group) both files must hold the same names and shapes, and per tensor
//     max|a - b| <= atol + rtol * max|b|
// (--exact: bit-identical values; a NaN equals a NaN, and never a number). Values are compared in double precision
// whatever their stored type. Prints one line per failing tensor and the summary
//     "N tensors compared, K beyond tolerance, worst diff/allowed = W"
// Exit 0 when every tensor is within tolerance, 1 when one is not, 2 on unreadable input or
// when no tensor is under the named groups in either file (nothing compared is no pass).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../config/options.h"
#include "../core/check.h"
#include "../store/util.h"

#define USAGE "usage: h5compare A.h5 B.h5 [--groups model,grads,loss] [--atol X] [--rtol X] [--exact]\n"

typedef struct { char *name; int ndim; hsize_t dims[8]; double *v; size_t n; } Tensor;
typedef struct { Tensor *t; int n, cap; } Tensors;
typedef struct { H5Job *j; hid_t file; const char *prefix; Tensors *out; } Walk;

// Reads dataset `path` of file into a new tensor (the job fails on an HDF5 error).
static void read_tensor(H5Job *j, hid_t file, const char *path, Tensors *out) {
    hid_t d = (hid_t)H5J(j, H5Dopen2(file, path, H5P_DEFAULT), "opening dataset", path);
    hid_t sp = (hid_t)H5J(j, H5Dget_space(d), "reading the dataspace of", path);
    int nd = (int)H5J(j, H5Sget_simple_extent_ndims(sp), "reading the rank of", path);
    Tensor t = { .name = xstrdup(path) };
    if (!j->failed && nd > 8) h5j_fail(j, "%s: %d dimensions (at most 8)", path, nd);
    if (!j->failed) {
        t.ndim = nd;
        H5J(j, H5Sget_simple_extent_dims(sp, t.dims, NULL), "reading the dimensions of", path);
        t.n = 1;
        for (int i = 0; i < nd; i++) t.n *= (size_t)t.dims[i];
        t.v = xmalloc((t.n ? t.n : 1) * sizeof(double));
        if (t.n) H5J(j, H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.v), "reading", path);
    }
    h5j_close(j, sp);
    h5j_close(j, d);
    out->t = vec_grow(out->t, &out->n, &out->cap, sizeof(Tensor));
    out->t[out->n - 1] = t;
}

// H5Lvisit callback: remembers the datasets' paths (no exits and no reads inside HDF5's iteration).
typedef struct { char **names; int n, cap; const char *prefix; hid_t group; int failed; } Names;
static herr_t visit(hid_t group, const char *name, const H5L_info_t *info, void *data) {
    Names *nm = data;
    if (info->type != H5L_TYPE_HARD) return 0;
    hid_t o = H5Oopen(group, name, H5P_DEFAULT);
    if (o < 0) { nm->failed = 1; return -1; }
    int is_dataset = H5Iget_type(o) == H5I_DATASET;
    H5Oclose(o);
    if (!is_dataset) return 0;
    nm->names = vec_grow(nm->names, &nm->n, &nm->cap, sizeof(char *));
    size_t len = strlen(nm->prefix) + strlen(name) + 2;
    nm->names[nm->n - 1] = xmalloc(len);
    snprintf(nm->names[nm->n - 1], len, "%s/%s", nm->prefix, name);
    return 0;
}

static int cmp_tensor(const void *a, const void *b) { return strcmp(((const Tensor *)a)->name, ((const Tensor *)b)->name); }

// Every dataset under `groups` (comma-separated) of path; 0, or -1 with the job's message.
static int collect(const char *path, const char *groups, Tensors *out, char *err, size_t err_n) {
    H5Job j;
    h5j_begin(&j, path);
    hid_t f = h5j_open_read(&j, path);
    char *list = xstrdup(groups), *save = NULL;
    for (char *g = strtok_r(list, ",", &save); g && !j.failed; g = strtok_r(NULL, ",", &save)) {
        char abs[512];
        snprintf(abs, sizeof abs, "/%s", g[0] == '/' ? g + 1 : g);
        htri_t there = (htri_t)H5J(&j, H5Lexists(f, abs, H5P_DEFAULT), "looking for", abs);
        if (there <= 0) continue;   // a group neither file has is no difference; one file only is (below)
        hid_t o = (hid_t)H5J(&j, H5Oopen(f, abs, H5P_DEFAULT), "opening", abs);
        H5I_type_t type = j.failed ? H5I_BADID : H5Iget_type(o);
        h5j_close(&j, o);
        if (type == H5I_DATASET) { read_tensor(&j, f, abs, out); continue; }
        if (j.failed) break;
        hid_t grp = (hid_t)H5J(&j, H5Gopen2(f, abs, H5P_DEFAULT), "opening group", abs);
        Names nm = { .prefix = abs, .group = grp };
        H5J(&j, H5Lvisit(grp, H5_INDEX_NAME, H5_ITER_INC, visit, &nm), "listing", abs);
        if (nm.failed && !j.failed) h5j_fail(&j, "listing %s: an object could not be opened", abs);
        h5j_close(&j, grp);
        for (int i = 0; i < nm.n; i++) {
            if (!j.failed) read_tensor(&j, f, nm.names[i], out);
            free(nm.names[i]);
        }
        free(nm.names);
    }
    free(list);
    h5j_close(&j, f);
    if (j.failed) { snprintf(err, err_n, "%.300s: %.1090s", j.file, j.msg); return -1; }
    qsort(out->t, (size_t)out->n, sizeof(Tensor), cmp_tensor);
    return 0;
}

static void shape_text(const Tensor *t, char *buf, size_t n) {
    size_t l = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%s%llu", i ? ", " : "", (unsigned long long)t->dims[i]);
    if (l < n) snprintf(buf + l, n - l, ")");
}

// The group list: comma-separated names, none empty (",," or "" would name nothing and so
// compare nothing).
static void check_groups(const char *groups) {
    const char *p = groups;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 0)
            die_input_hint("--groups model,grads,loss (the default; h5ls FILE lists a file's groups)",
                           "h5compare --groups: an empty group name in '%s'", groups);
        if (!p[n]) break;
        p += n + 1;
    }
}

int main(int argc, char **argv) {
    const char *files[2] = { NULL, NULL }, *groups = "model,grads,loss";
    double atol = 1e-5, rtol = 1e-4;
    int exact = 0, nf = 0;
    // tolerances: finite, >= 0 (an infinite one would pass any difference)
    const ToolOption opts[] = {
        OPT_STR_ROW("groups", &groups),
        OPT_REAL_ROW("atol", 0, 1e30, &atol),
        OPT_REAL_ROW("rtol", 0, 1e30, &rtol),
        OPT_FLAG_ROW("exact", &exact),
        OPT_END,
    };
    opt_parse("h5compare", opts, argc, argv, files, 2, &nf, USAGE);
    if (nf != 2) die_input_hint(USAGE, "h5compare: two files to compare, got %d", nf);
    check_groups(groups);
    store_h5_init();
    Tensors ta = { 0 }, tb = { 0 };
    char err[1400];
    if (collect(files[0], groups, &ta, err, sizeof err) || collect(files[1], groups, &tb, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return EXIT_BAD_INPUT;
    }
    // a comparison that found no tensor compared nothing: never a pass
    if (ta.n == 0 && tb.n == 0)
        die_input_hint("h5ls FILE lists a file's groups; --groups model,grads,loss is the default",
                       "h5compare: no tensor under --groups %s in %s or %s: nothing to compare", groups, files[0], files[1]);
    int bad = 0, ia = 0, ib = 0, both = 0;
    double worst = 0;
    char only_a[512] = "", only_b[512] = "";
    while (ia < ta.n || ib < tb.n) {
        int c = ia == ta.n ? 1 : ib == tb.n ? -1 : strcmp(ta.t[ia].name, tb.t[ib].name);
        if (c) {   // in one file only
            char *list = c < 0 ? only_a : only_b;
            const char *name = c < 0 ? ta.t[ia++].name : tb.t[ib++].name;
            size_t l = strlen(list);
            if (l < 300) snprintf(list + l, sizeof only_a - l, "%s%s", l ? ", " : "", name);
            continue;
        }
        const Tensor *a = &ta.t[ia++], *b = &tb.t[ib++];
        both++;
        int same_shape = a->ndim == b->ndim;
        for (int k = 0; same_shape && k < a->ndim; k++) same_shape = a->dims[k] == b->dims[k];
        if (!same_shape) {
            char sa[128], sb[128];
            shape_text(a, sa, sizeof sa); shape_text(b, sb, sizeof sb);
            printf("%s: shape %s vs %s\n", a->name, sa, sb);
            bad++;
            continue;
        }
        double diff = 0, scale = 0;
        int unequal = 0;
        for (size_t k = 0; k < a->n; k++) {
            double x = a->v[k], y = b->v[k];
            int both_nan = isnan(x) && isnan(y);
            double d = both_nan ? 0.0 : fabs(x - y);
            if (isnan(d)) d = INFINITY;                    // a NaN against a number: never within tolerance
            if (d > diff) diff = d;
            if (exact && !both_nan && memcmp(&x, &y, sizeof x)) unequal = 1;   // -0 vs 0 too
            if (fabs(y) > scale) scale = fabs(y);
        }
        double allowed = exact ? 0.0 : atol + rtol * scale;
        double ratio = allowed > 0 ? diff / allowed : (diff == 0 && !unequal ? 0.0 : INFINITY);
        if (ratio > worst) worst = ratio;
        if (diff > allowed || unequal) {
            printf("%s: max|a-b| = %.3e > %.3e (max|b| = %.3e)\n", a->name, diff, allowed, scale);
            bad++;
        }
    }
    if (only_a[0] || only_b[0]) {
        printf("different tensors: only in A [%s], only in B [%s]\n", only_a, only_b);
        bad++;
    }
    printf("%d tensors compared, %d beyond tolerance, worst diff/allowed = %.3g\n", both, bad, worst);
    for (int i = 0; i < ta.n; i++) { free(ta.t[i].name); free(ta.t[i].v); }
    for (int i = 0; i < tb.n; i++) { free(tb.t[i].name); free(tb.t[i].v); }
    free(ta.t); free(tb.t);
    return bad ? 1 : 0;
}
