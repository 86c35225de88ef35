// util.h — helpers shared by the store (run database, checkpoints, dumps): file-system
// durability (mkdir -p, fsync of a file and of its directory), UTC timestamps, JSON
// string escaping, and HDF5 error checking. Internal to src/store.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>

// mkdir -p `dir` (no-op for "" or "."); dies on failure.
void store_mkdir_p(const char *dir);
// mkdir -p the directory part of `path`.
void store_mkdir_parent(const char *path);
// fsync the file at `path` (opened read-only) and the directory holding it.
void store_fsync_path(const char *path);
void store_fsync_dir_of(const char *path);
void store_fsync_dir(const char *dir);
// rename tmp -> path, then fsync the directory (the rename is durable on return).
void store_commit_rename(const char *tmp, const char *path);
// "2024-05-01T12:34:56.789Z" (ISO-8601 UTC, millisecond resolution; sorts as text).
void store_iso_now(char buf[32]);
// Append `s` as a JSON string literal (with quotes) to buf (NUL-terminated, size n);
// dies on truncation.
void store_json_str(char *buf, size_t n, const char *s);

// ---- HDF5 -------------------------------------------------------------------------
// Turns HDF5's automatic error-stack printing off (once): failures are reported by
// H5C() with the library's own messages, expected failures (probing a file) stay quiet.
void store_h5_init(void);
__attribute__((noreturn))
void store_h5_die(const char *call, const char *file, int line);
static inline int64_t store_h5c(int64_t v, const char *call, const char *file, int line) {
    if (v < 0) store_h5_die(call, file, line);
    return v;
}
// Check an HDF5 call (hid_t / herr_t / htri_t < 0 = failure): dies with file:line, the
// call and the HDF5 error stack (innermost messages).
#define H5C(call) store_h5c((int64_t)(call), #call, __FILE__, __LINE__)

// Attributes on `loc` (file, group or dataset).
void h5_attr_str(hid_t loc, const char *name, const char *text);   // variable-length UTF-8
void h5_attr_i64(hid_t loc, const char *name, int64_t v);
void h5_attr_u64(hid_t loc, const char *name, uint64_t v);
void h5_attr_i32(hid_t loc, const char *name, int32_t v);
void h5_attr_f64(hid_t loc, const char *name, double v);
// Reads: return 0 if the attribute is absent (or of another class), 1 on success.
int h5_attr_read_str(hid_t loc, const char *name, char **out);     // malloc'd
int h5_attr_read_i64(hid_t loc, const char *name, int64_t *out);   // any integer type
int h5_attr_read_u64(hid_t loc, const char *name, uint64_t *out);
// Dataset at absolute `path` (intermediate groups created): ndim 0 (scalar), 1 [d0] or
// 2 [d0,d1]. file_type e.g. H5T_IEEE_F32LE, mem_type e.g. H5T_NATIVE_FLOAT.
void h5_write(hid_t file, const char *path, int ndim, int64_t d0, int64_t d1,
              hid_t file_type, hid_t mem_type, const void *data);
// Create `path`'s group (and parents) if absent; returns an open group id.
hid_t h5_group(hid_t file, const char *path);
// Create an HDF5 file for writing at `tmp_path` (truncating).
hid_t h5_create(const char *tmp_path);
// H5Fflush + fsync via the file's descriptor + H5Fclose + rename(tmp, path) + fsync dir.
void h5_close_commit(hid_t file, const char *tmp_path, const char *path);
