// util.c — see util.h.
#include "util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../core/check.h"

void store_mkdir_p(const char *dir) {
    if (!dir || !dir[0] || strcmp(dir, ".") == 0) return;
    char buf[4096];
    xsnprintf(buf, sizeof buf, "%s", dir);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p; *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                DIE("mkdir %s failed: %s", buf, strerror(errno));
            if (c == 0) break;
            *p = c;
        }
    }
    struct stat st;
    CHECK_ERRNO(stat(buf, &st) != 0, buf);
    if (!S_ISDIR(st.st_mode)) die_input("%s exists but is not a directory", buf);
}

static void dir_part(const char *path, char *out, size_t n) {
    xsnprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash) xsnprintf(out, n, ".");
    else if (slash == out) out[1] = 0;   // "/file" -> "/"
    else *slash = 0;
}

void store_mkdir_parent(const char *path) {
    char dir[4096];
    dir_part(path, dir, sizeof dir);
    store_mkdir_p(dir);
}

static void fsync_at(const char *path, int flags) {
    int fd = open(path, flags);
    if (fd < 0) DIE("open %s for fsync failed: %s", path, strerror(errno));
    if (fsync(fd) != 0 && errno != EINVAL)   // EINVAL: the file system does not support it
        DIE("fsync %s failed: %s", path, strerror(errno));
    CHECK_ERRNO(close(fd) != 0, "close");
}

void store_fsync_path(const char *path) { fsync_at(path, O_RDONLY); }

void store_fsync_dir_of(const char *path) {
    char dir[4096];
    dir_part(path, dir, sizeof dir);
    fsync_at(dir, O_RDONLY | O_DIRECTORY);
}

void store_fsync_dir(const char *dir) { fsync_at(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY); }

void store_commit_rename(const char *tmp, const char *path) {
    if (rename(tmp, path) != 0) DIE("rename %s -> %s failed: %s", tmp, path, strerror(errno));
    store_fsync_dir_of(path);
}

void store_iso_now(char buf[32]) {
    struct timeval tv;
    CHECK_ERRNO(gettimeofday(&tv, NULL) != 0, "gettimeofday");
    struct tm tm;
    CHECK(gmtime_r(&tv.tv_sec, &tm), "gmtime_r failed");
    char s[24];
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    xsnprintf(buf, 32, "%s.%03dZ", s, (int)(tv.tv_usec / 1000));
}

void store_json_str(char *buf, size_t n, const char *s) {
    size_t len = strlen(buf);
#define PUT(c) do { CHECK(len + 1 < n, "JSON buffer of %zu bytes too small", n); buf[len++] = (c); } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { PUT('\\'); PUT((char)*p); }
        else if (*p == '\n') { PUT('\\'); PUT('n'); }
        else if (*p == '\t') { PUT('\\'); PUT('t'); }
        else if (*p < 0x20) {
            char e[8]; snprintf(e, sizeof e, "\\u%04x", *p);
            for (char *q = e; *q; q++) PUT(*q);
        } else PUT((char)*p);
    }
    PUT('"');
#undef PUT
    buf[len] = 0;
}

// ---- HDF5 -------------------------------------------------------------------------
void store_h5_init(void) {
    static int done = 0;
    if (done) return;
    if (H5open() < 0) DIE("H5open failed: the HDF5 library could not be initialised");
    if (H5Eset_auto2(H5E_DEFAULT, NULL, NULL) < 0) DIE("H5Eset_auto2 failed");
    done = 1;
}

typedef struct { char *buf; size_t n; } ErrText;
static herr_t collect_err(unsigned n, const H5E_error2_t *e, void *data) {
    ErrText *t = data;
    size_t len = strlen(t->buf);
    if (len + 8 < t->n)
        snprintf(t->buf + len, t->n - len, "%s%s(): %s", len ? "; " : "", e->func_name ? e->func_name : "?",
                 e->desc ? e->desc : "?");
    return 0;
}

void store_h5_die(const char *call, const char *file, int line) {
    char text[2048] = "";
    ErrText t = { text, sizeof text };
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_err, &t);
    die_at(file, line, "%s failed: %s", call, text[0] ? text : "(no HDF5 error message)");
}

static hid_t scalar_space(void) { return H5C(H5Screate(H5S_SCALAR)); }

static void attr_write(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v) {
    hid_t sp = scalar_space();
    if (H5C(H5Aexists(loc, name)) > 0) H5C(H5Adelete(loc, name));
    hid_t a = H5C(H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT));
    H5C(H5Awrite(a, mtype, v));
    H5C(H5Aclose(a));
    H5C(H5Sclose(sp));
}

void h5_attr_str(hid_t loc, const char *name, const char *text) {
    hid_t t = H5C(H5Tcopy(H5T_C_S1));
    H5C(H5Tset_size(t, H5T_VARIABLE));
    H5C(H5Tset_cset(t, H5T_CSET_UTF8));
    const char *p = text ? text : "";
    attr_write(loc, name, t, t, &p);
    H5C(H5Tclose(t));
}
void h5_attr_i64(hid_t loc, const char *name, int64_t v) { attr_write(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v); }
void h5_attr_u64(hid_t loc, const char *name, uint64_t v) { attr_write(loc, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v); }
void h5_attr_i32(hid_t loc, const char *name, int32_t v) { attr_write(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &v); }
void h5_attr_f64(hid_t loc, const char *name, double v) { attr_write(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v); }

// Opens attribute `name` if it exists and is scalar/1-element of class `cls`; else -1.
static hid_t attr_open_class(hid_t loc, const char *name, H5T_class_t cls) {
    if (H5C(H5Aexists(loc, name)) <= 0) return -1;
    hid_t a = H5C(H5Aopen(loc, name, H5P_DEFAULT));
    hid_t t = H5C(H5Aget_type(a));
    hid_t sp = H5C(H5Aget_space(a));
    int ok = H5Tget_class(t) == cls && H5C(H5Sget_simple_extent_npoints(sp)) == 1;
    H5C(H5Tclose(t)); H5C(H5Sclose(sp));
    if (!ok) { H5C(H5Aclose(a)); return -1; }
    return a;
}

int h5_attr_read_str(hid_t loc, const char *name, char **out) {
    *out = NULL;
    hid_t a = attr_open_class(loc, name, H5T_STRING);
    if (a < 0) return 0;
    hid_t ft = H5C(H5Aget_type(a));
    hid_t mt = H5C(H5Tcopy(H5T_C_S1));
    if (H5C(H5Tis_variable_str(ft)) > 0) {
        H5C(H5Tset_size(mt, H5T_VARIABLE));
        H5C(H5Tset_cset(mt, H5Tget_cset(ft)));
        char *p = NULL;
        H5C(H5Aread(a, mt, &p));
        *out = xstrdup(p ? p : "");
        hid_t sp = scalar_space();
        H5C(H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &p));
        H5C(H5Sclose(sp));
    } else {                                     // fixed-length (e.g. written by h5py as bytes)
        size_t n = H5Tget_size(ft);
        CHECK(n > 0, "H5Tget_size failed on attribute %s", name);
        H5C(H5Tset_size(mt, n + 1));
        H5C(H5Tset_cset(mt, H5Tget_cset(ft)));
        *out = xcalloc(n + 2, 1);
        H5C(H5Aread(a, mt, *out));
    }
    H5C(H5Tclose(mt)); H5C(H5Tclose(ft)); H5C(H5Aclose(a));
    return 1;
}

int h5_attr_read_i64(hid_t loc, const char *name, int64_t *out) {
    hid_t a = attr_open_class(loc, name, H5T_INTEGER);
    if (a < 0) return 0;
    H5C(H5Aread(a, H5T_NATIVE_INT64, out));
    H5C(H5Aclose(a));
    return 1;
}
int h5_attr_read_u64(hid_t loc, const char *name, uint64_t *out) {
    hid_t a = attr_open_class(loc, name, H5T_INTEGER);
    if (a < 0) return 0;
    H5C(H5Aread(a, H5T_NATIVE_UINT64, out));
    H5C(H5Aclose(a));
    return 1;
}

static hid_t lcpl_intermediate(void) {
    hid_t lcpl = H5C(H5Pcreate(H5P_LINK_CREATE));
    H5C(H5Pset_create_intermediate_group(lcpl, 1));
    return lcpl;
}

void h5_write(hid_t file, const char *path, int ndim, int64_t d0, int64_t d1,
              hid_t file_type, hid_t mem_type, const void *data) {
    hsize_t dims[2] = { (hsize_t)d0, (hsize_t)d1 };
    hid_t sp = ndim == 0 ? scalar_space() : H5C(H5Screate_simple(ndim, dims, NULL));
    hid_t lcpl = lcpl_intermediate();
    hid_t ds = H5C(H5Dcreate2(file, path, file_type, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT));
    if (!(ndim > 0 && (d0 == 0 || (ndim == 2 && d1 == 0))))
        H5C(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
    H5C(H5Dclose(ds)); H5C(H5Pclose(lcpl)); H5C(H5Sclose(sp));
}

hid_t h5_group(hid_t file, const char *path) {
    if (H5C(H5Lexists(file, path, H5P_DEFAULT)) > 0) return H5C(H5Gopen2(file, path, H5P_DEFAULT));
    hid_t lcpl = lcpl_intermediate();
    hid_t g = H5C(H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT));
    H5C(H5Pclose(lcpl));
    return g;
}

hid_t h5_create(const char *tmp_path) {
    store_h5_init();
    store_mkdir_parent(tmp_path);
    errno = 0;
    hid_t f = H5Fcreate(tmp_path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        int e = errno;
        char text[1024] = "";
        ErrText t = { text, sizeof text };
        H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_err, &t);
        die_input("cannot create %s: %s (%s)", tmp_path, e ? strerror(e) : "HDF5 error", text);
    }
    return f;
}

void h5_close_commit(hid_t file, const char *tmp_path, const char *path) {
    H5C(H5Fflush(file, H5F_SCOPE_GLOBAL));
    hid_t fapl = H5C(H5Fget_access_plist(file));
    void *handle = NULL;
    H5C(H5Fget_vfd_handle(file, fapl, &handle));
    if (H5C(H5Pget_driver(fapl)) == H5FD_SEC2 && handle) {
        int fd = *(int *)handle;
        if (fsync(fd) != 0 && errno != EINVAL) DIE("fsync %s failed: %s", tmp_path, strerror(errno));
    }
    H5C(H5Pclose(fapl));
    H5C(H5Fclose(file));
    store_fsync_path(tmp_path);   // whatever H5Fclose wrote after the flush
    store_commit_rename(tmp_path, path);
}
