// util.c — see util.h.
#include "util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "../core/check.h"
#include "../core/fileio.h"
#include "../core/json.h"
#include "../core/outdir.h"

void store_mkdir_p(const char *dir) {
    char err[1200];
    if (file_mkdir_p(dir, err, sizeof err) != 0) die_input("%s", err);
}

void store_mkdir_parent(const char *path) {
    char err[1200];
    if (file_mkdir_parent(path, err, sizeof err) != 0) die_input("%s", err);
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
    CHECK(len < n && json_escape(buf + len, n - len, s) < n - len, "JSON buffer of %zu bytes too small", n);
}

// ---- HDF5 -------------------------------------------------------------------------
// HDF5 closes whatever is left open from an exit handler. After a failed write (a full
// disk, RLIMIT_FSIZE) H5Fclose fails and leaves the file half-closed, and that handler
// then crashed (HDF5 1.10, H5F__close_cb, at the exit after the error message). So it is
// never installed: every file is closed by its H5Job before anything exits, and all the
// handler would add at a normal exit is freeing memory. A constructor, because it must
// run before the library's first call, wherever that is (db.c asks for its version).
__attribute__((constructor)) static void no_hdf5_exit_handler(void) { H5dont_atexit(); }

void store_h5_init(void) {
    static int done = 0;
    if (done) return;
    if (H5open() < 0) DIE("H5open failed: the HDF5 library could not be initialised");
    if (H5Eset_auto2(H5E_DEFAULT, NULL, NULL) < 0) DIE("H5Eset_auto2 failed");
    done = 1;
}

void h5j_begin(H5Job *j, const char *file) {
    store_h5_init();
    memset(j, 0, sizeof *j);
    j->fd = -1;
    snprintf(j->file, sizeof j->file, "%s", file);
}

int h5j_fail(H5Job *j, const char *fmt, ...) {
    if (j->failed) return -1;
    j->failed = 1;
    va_list ap; va_start(ap, fmt); vsnprintf(j->msg, sizeof j->msg, fmt, ap); va_end(ap);
    return -1;
}

// The innermost message of the HDF5 error stack (where the error was detected); for a
// failed system call only its "error message = '...'" part (e.g. "No space left on device").
typedef struct { char text[512]; } ErrText;
static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data) {
    ErrText *t = data;
    snprintf(t->text, sizeof t->text, "%s", e->desc ? e->desc : "?");   // downward walk: the last one wins
    return 0;
}
static void hdf5_message(char *buf, size_t n) {
    ErrText t = { "" };
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost, &t);
    H5Eclear2(H5E_DEFAULT);
    const char *m = strstr(t.text, "error message = '");
    if (m) {
        m += 17;
        const char *end = strchr(m, '\'');
        snprintf(buf, n, "%.*s", end ? (int)(end - m) : (int)strlen(m), m);
    } else snprintf(buf, n, "%s", t.text[0] ? t.text : "HDF5 error without a message");
}

int64_t h5j_check(H5Job *j, int64_t v, const char *op, const char *obj) {
    if (v >= 0) return v;
    char m[600];
    hdf5_message(m, sizeof m);
    h5j_fail(j, "%s%s%s: %s", op, obj && obj[0] ? " " : "", obj ? obj : "", m);
    return v;
}

void h5j_close(H5Job *j, hid_t id) {
    if (id < 0) return;
    char name[300] = "";
    H5I_type_t type = H5Iget_type(id);
    if (!j->failed && type != H5I_FILE && H5Iget_name(id, name, sizeof name) <= 0) name[0] = 0;
    herr_t r;
    switch (type) {
    case H5I_FILE: r = H5Fclose(id); break;
    case H5I_GROUP: r = H5Gclose(id); break;
    case H5I_DATASET: r = H5Dclose(id); break;
    case H5I_ATTR: r = H5Aclose(id); break;
    case H5I_DATASPACE: r = H5Sclose(id); break;
    case H5I_DATATYPE: r = H5Tclose(id); break;
    case H5I_GENPROP_LST: r = H5Pclose(id); break;
    default: r = H5Idec_ref(id) < 0 ? -1 : 0; break;
    }
    if (r < 0) h5j_check(j, r, "closing", name[0] ? name : type == H5I_FILE ? "the file" : "an HDF5 object");
}

static hid_t file_access(H5Job *j, int for_writing) {
    hid_t fapl = H5J(j, H5Pcreate(H5P_FILE_ACCESS), "creating", "a file access list");
    H5J(j, H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), "setting", "the close degree");
    if (for_writing) H5J(j, H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110), "setting", "the format bounds");
    return fapl;
}

hid_t h5j_open_read(H5Job *j, const char *path) {
    hid_t fapl = file_access(j, 0);
    hid_t f = -1;
    if (!j->failed) {
        struct stat st;
        if (access(path, R_OK) != 0) h5j_fail(j, "cannot read it: %s", strerror(errno));
        // a FIFO or a device would block or stream: only a regular file (or a link to one) is read
        else if (stat(path, &st) != 0) h5j_fail(j, "cannot stat it: %s", strerror(errno));
        else if (!S_ISREG(st.st_mode)) h5j_fail(j, "it is %s, not a regular file", file_kind_name(st.st_mode));
        else {
            f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
            if (f < 0) {
                char m[600];
                hdf5_message(m, sizeof m);
                h5j_fail(j, "not a readable HDF5 file (truncated or damaged?): %s", m);
            }
        }
    }
    h5j_close(j, fapl);
    return f;
}

// The in-memory file (the core driver's buffer, through HDF5's file-image callbacks): grown
// with zeros, and at the file's close written through the descriptor after its user block.
static void *image_malloc(size_t size, H5FD_file_image_op_t op, void *u) {
    (void)op;
    H5Job *j = u;
    void *p = calloc(1, size ? size : 1);
    if (p) j->image_size = size;
    return p;
}
static void *image_memcpy(void *dest, const void *src, size_t size, H5FD_file_image_op_t op, void *u) {
    (void)op; (void)u;
    return memcpy(dest, src, size);
}
static void *image_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *u) {
    (void)op;
    H5Job *j = u;
    size_t old = ptr ? j->image_size : 0;
    char *p = realloc(ptr, size ? size : 1);
    if (!p) return NULL;
    if (size > old) memset(p + old, 0, size - old);   // beyond HDF5's end of file: zeros, never stale heap bytes
    j->image_size = size;
    return p;
}
static herr_t image_free(void *ptr, H5FD_file_image_op_t op, void *u) {
    H5Job *j = u;
    if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && ptr && !j->failed) {
        const char *img = ptr;
        for (size_t off = j->userblock; off < j->image_size && !j->failed; ) {
            ssize_t k = pwrite(j->fd, img + off, j->image_size - off, (off_t)off);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) h5j_fail(j, "writing %s/%s: %s", j->dir->path, j->tmp, k < 0 ? strerror(errno) : "no progress");
            else off += (size_t)k;
        }
        if (!j->failed && ftruncate(j->fd, (off_t)j->image_size) != 0)
            h5j_fail(j, "writing %s/%s: %s", j->dir->path, j->tmp, strerror(errno));
    }
    free(ptr);
    return 0;
}
static void *image_udata_copy(void *u) { return u; }
static herr_t image_udata_free(void *u) { (void)u; return 0; }

hid_t h5j_create_in(H5Job *j, const OutDir *d, const char *name, size_t userblock, OutOwned owned) {
    char err[1400];
    j->dir = d;
    j->userblock = userblock;
    snprintf(j->name, sizeof j->name, "%s", name);
    j->fd = outdir_tmp_create(d, name, j->tmp, sizeof j->tmp, owned, err, sizeof err);
    if (j->fd < 0) { h5j_fail(j, "%s", err); return -1; }
    char via[64], shown[2600];
    snprintf(via, sizeof via, "/proc/self/fd/%d", j->fd);
    snprintf(shown, sizeof shown, "%s/%s", d->path, j->tmp);
    struct stat a, b;
    j->in_memory = !(stat(via, &a) == 0 && fstat(j->fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino);
    hid_t fapl = file_access(j, 1);
    if (j->in_memory) {
        H5FD_file_image_callbacks_t cb = { image_malloc, image_memcpy, image_realloc, image_free,
                                           image_udata_copy, image_udata_free, j };
        H5J(j, H5Pset_fapl_core(fapl, 1 << 16, 0), "setting", "the in-memory driver");
        H5J(j, H5Pset_file_image_callbacks(fapl, &cb), "setting", "the in-memory image's callbacks");
    }
    hid_t fcpl = H5J(j, H5Pcreate(H5P_FILE_CREATE), "creating", "a file creation list");
    if (userblock) H5J(j, H5Pset_userblock(fcpl, (hsize_t)userblock), "reserving", "the user block");
    errno = 0;
    hid_t f = H5J(j, H5Fcreate(j->in_memory ? shown : via, H5F_ACC_TRUNC, fcpl, fapl), "creating", shown);
    h5j_close(j, fcpl);
    if (f < 0 && errno && j->failed) {   // the system's reason says more than HDF5's
        char m[sizeof j->msg];
        snprintf(m, sizeof m, "%.1000s (%s)", j->msg, strerror(errno));
        snprintf(j->msg, sizeof j->msg, "%s", m);
    }
    h5j_close(j, fapl);
    return f;
}

int h5j_close_written(H5Job *j, hid_t file) {
    H5J(j, H5Fflush(file, H5F_SCOPE_GLOBAL), "flushing", j->tmp);
    h5j_close(j, file);   // (in memory: the image is written through the descriptor here)
    if (j->failed) { outdir_discard(j->dir, j->fd, j->tmp); j->fd = -1; return -1; }
    return 0;
}

int h5j_commit(H5Job *j) {
    char err[1400];
    int rc = outdir_commit(j->dir, j->fd, j->tmp, j->name, err, sizeof err);
    j->fd = -1;
    return rc != 0 ? h5j_fail(j, "%s", err) : 0;
}

int h5j_close_commit(H5Job *j, hid_t file) {
    if (h5j_close_written(j, file) != 0) return -1;
    return h5j_commit(j);
}

// ---- attributes ---------------------------------------------------------------------
static void attr_write(H5Job *j, hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v) {
    hid_t sp = H5J(j, H5Screate(H5S_SCALAR), "creating a dataspace for attribute", name);
    if (H5J(j, H5Aexists(loc, name), "looking up attribute", name) > 0) H5J(j, H5Adelete(loc, name), "deleting attribute", name);
    hid_t a = H5J(j, H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT), "creating attribute", name);
    H5J(j, H5Awrite(a, mtype, v), "writing attribute", name);
    h5j_close(j, a);
    h5j_close(j, sp);
}

void h5j_attr_str(H5Job *j, hid_t loc, const char *name, const char *text) {
    hid_t t = H5J(j, H5Tcopy(H5T_C_S1), "creating a string type for", name);
    H5J(j, H5Tset_size(t, H5T_VARIABLE), "creating a string type for", name);
    H5J(j, H5Tset_cset(t, H5T_CSET_UTF8), "creating a string type for", name);
    const char *p = text ? text : "";
    attr_write(j, loc, name, t, t, &p);
    h5j_close(j, t);
}
void h5j_attr_fixed_str(H5Job *j, hid_t loc, const char *name, const char *text) {
    const char *p = text ? text : "";
    size_t n = strlen(p);
    hid_t t = H5J(j, H5Tcopy(H5T_C_S1), "creating a string type for", name);
    H5J(j, H5Tset_size(t, n ? n : 1), "creating a string type for", name);   // (a size of 0 is not allowed)
    H5J(j, H5Tset_strpad(t, H5T_STR_NULLPAD), "creating a string type for", name);
    H5J(j, H5Tset_cset(t, H5T_CSET_UTF8), "creating a string type for", name);
    char *buf = xcalloc(n + 1, 1);
    memcpy(buf, p, n);
    attr_write(j, loc, name, t, t, buf);
    free(buf);
    h5j_close(j, t);
}

void h5j_attr_i64(H5Job *j, hid_t loc, const char *name, int64_t v) { attr_write(j, loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v); }
void h5j_attr_u64(H5Job *j, hid_t loc, const char *name, uint64_t v) { attr_write(j, loc, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v); }
void h5j_attr_i32(H5Job *j, hid_t loc, const char *name, int32_t v) { attr_write(j, loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &v); }
void h5j_attr_u32(H5Job *j, hid_t loc, const char *name, uint32_t v) { attr_write(j, loc, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &v); }

// Opens attribute `name` if it exists and is a single value of class `cls`: 1 (id in *a),
// 0 if absent or different, -1 on an HDF5 error.
static int attr_open_class(H5Job *j, hid_t loc, const char *name, H5T_class_t cls, hid_t *a) {
    *a = -1;
    htri_t ex = (htri_t)H5J(j, H5Aexists(loc, name), "looking up attribute", name);
    if (ex <= 0) return ex < 0 ? -1 : 0;
    *a = H5J(j, H5Aopen(loc, name, H5P_DEFAULT), "opening attribute", name);
    hid_t t = H5J(j, H5Aget_type(*a), "reading the type of attribute", name);
    hid_t sp = H5J(j, H5Aget_space(*a), "reading the shape of attribute", name);
    int ok = !j->failed && H5Tget_class(t) == cls &&
             H5J(j, H5Sget_simple_extent_npoints(sp), "reading the shape of attribute", name) == 1;
    h5j_close(j, t); h5j_close(j, sp);
    if (j->failed || !ok) { h5j_close(j, *a); *a = -1; return j->failed ? -1 : 0; }
    return 1;
}

int h5j_attr_read_str(H5Job *j, hid_t loc, const char *name, char **out, int allow_vlen) {
    *out = NULL;
    hid_t a;
    int r = attr_open_class(j, loc, name, H5T_STRING, &a);
    if (r <= 0) return r;
    hid_t ft = H5J(j, H5Aget_type(a), "reading the type of attribute", name);
    hid_t mt = H5J(j, H5Tcopy(H5T_C_S1), "reading attribute", name);
    int vlen = !j->failed && H5J(j, H5Tis_variable_str(ft), "reading attribute", name) > 0;
    if (vlen && !allow_vlen) {
        h5j_close(j, mt); h5j_close(j, ft); h5j_close(j, a);
        return j->failed ? -1 : 0;
    }
    if (vlen) {
        H5J(j, H5Tset_size(mt, H5T_VARIABLE), "reading attribute", name);
        H5J(j, H5Tset_cset(mt, H5Tget_cset(ft)), "reading attribute", name);
        char *p = NULL;
        if (H5J(j, H5Aread(a, mt, &p), "reading attribute", name) >= 0) {
            *out = xstrdup(p ? p : "");
            hid_t sp = H5J(j, H5Screate(H5S_SCALAR), "reading attribute", name);
            H5J(j, H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &p), "reading attribute", name);
            h5j_close(j, sp);
        }
    } else if (!j->failed) {                       // fixed-length (e.g. written by h5py as bytes)
        size_t n = H5Tget_size(ft);
        if (n == 0 || n > (1u << 30)) h5j_fail(j, "attribute %s: fixed-length string of %zu bytes", name, n);
        H5J(j, H5Tset_size(mt, n + 1), "reading attribute", name);
        H5J(j, H5Tset_cset(mt, H5Tget_cset(ft)), "reading attribute", name);
        if (!j->failed) {
            *out = xcalloc(n + 2, 1);
            H5J(j, H5Aread(a, mt, *out), "reading attribute", name);
        }
    }
    h5j_close(j, mt); h5j_close(j, ft); h5j_close(j, a);
    if (j->failed) { free(*out); *out = NULL; return -1; }
    return 1;
}

static int attr_read_int(H5Job *j, hid_t loc, const char *name, hid_t mem_type, void *out) {
    hid_t a;
    int r = attr_open_class(j, loc, name, H5T_INTEGER, &a);
    if (r <= 0) return r;
    H5J(j, H5Aread(a, mem_type, out), "reading attribute", name);
    h5j_close(j, a);
    return j->failed ? -1 : 1;
}
int h5j_attr_read_i64(H5Job *j, hid_t loc, const char *name, int64_t *out) { return attr_read_int(j, loc, name, H5T_NATIVE_INT64, out); }
int h5j_attr_read_u64(H5Job *j, hid_t loc, const char *name, uint64_t *out) { return attr_read_int(j, loc, name, H5T_NATIVE_UINT64, out); }

// ---- datasets and groups -------------------------------------------------------------
static hid_t lcpl_intermediate(H5Job *j) {
    hid_t lcpl = H5J(j, H5Pcreate(H5P_LINK_CREATE), "creating", "a link property list");
    H5J(j, H5Pset_create_intermediate_group(lcpl, 1), "creating", "a link property list");
    return lcpl;
}

void h5j_write(H5Job *j, hid_t file, const char *path, int ndim, int64_t d0, int64_t d1,
               hid_t file_type, hid_t mem_type, const void *data, const uint32_t *crc32) {
    hsize_t dims[2] = { (hsize_t)d0, (hsize_t)d1 };
    hid_t sp = ndim == 0 ? H5J(j, H5Screate(H5S_SCALAR), "creating the dataspace of", path)
                         : H5J(j, H5Screate_simple(ndim, dims, NULL), "creating the dataspace of", path);
    hid_t lcpl = lcpl_intermediate(j);
    hid_t ds = H5J(j, H5Dcreate2(file, path, file_type, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT), "creating dataset", path);
    if (!(ndim > 0 && (d0 == 0 || (ndim == 2 && d1 == 0))))
        H5J(j, H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "writing dataset", path);
    if (crc32) h5j_attr_u32(j, ds, "crc32", *crc32);
    h5j_close(j, ds); h5j_close(j, lcpl); h5j_close(j, sp);
}

hid_t h5j_group(H5Job *j, hid_t file, const char *path) {
    if (H5J(j, H5Lexists(file, path, H5P_DEFAULT), "looking up group", path) > 0)
        return H5J(j, H5Gopen2(file, path, H5P_DEFAULT), "opening group", path);
    hid_t lcpl = lcpl_intermediate(j);
    hid_t g = H5J(j, H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT), "creating group", path);
    h5j_close(j, lcpl);
    return g;
}

void store_check_param_names(const ModelState *m) {
    for (int i = 0; i < m->table.n_specs; i++)
        CHECK(strncmp(m->table.specs[i].name, "model/", 6) == 0, "parameter name '%s' does not start with model/",
              m->table.specs[i].name);
}
