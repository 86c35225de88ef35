// util.h — helpers shared by the store (run database, checkpoints, dumps): directories,
// UTC timestamps, JSON strings, and HDF5 with errors that never crash. Internal to
// src/store. Crash-safe file writing and JSON escaping themselves live in core/
// (core/fileio.h, core/json.h), shared with the data pipeline and the configuration.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>
#include "../core/outdir.h"
#include "../model/state.h"

// mkdir -p `dir` / the directory part of `path` (no-op for "" or "."); exit 2 with a
// message naming the directory on failure.
void store_mkdir_p(const char *dir);
void store_mkdir_parent(const char *path);
// "2024-05-01T12:34:56.789Z" (ISO-8601 UTC, millisecond resolution; sorts as text).
void store_iso_now(char buf[32]);
// Before a checkpoint or dump file is opened: every parameter of m is named "model/..." (the
// group both formats keep the weights in); else a fatal error naming the parameter.
void store_check_param_names(const ModelState *m);
// Append `s` as a JSON string literal (with quotes) to buf (NUL-terminated, size n);
// dies on truncation. (The escape is core/json.h's json_escape.)
void store_json_str(char *buf, size_t n, const char *s);

// ---- HDF5 -------------------------------------------------------------------------
// Every HDF5 call on one file goes through an H5Job. The first failure is recorded (the
// operation, the object and HDF5's own innermost message) and turns every later H5J()
// of the job into a no-op that returns -1, so the caller closes what it opened, in
// order, and reports once, naming the file. Nothing here exits: never inside an HDF5
// iteration callback and never with HDF5 objects open (HDF5's exit handler closes what
// is left open, and on a damaged file or a full disk that crashed).
typedef struct {
    char file[1100];   // the file, as messages name it
    int failed;
    char msg[1200];    // "<operation>: <HDF5's message>" of the first failure
    // a file being written (h5j_create_in): its folder, its temporary file and descriptor
    const OutDir *dir;
    int fd;            // the temporary file, created by core/outdir.h (-1: none)
    int in_memory;     // HDF5 builds the file in memory; its image is written through fd at its close
    size_t userblock, image_size;
    char tmp[1100], name[1100];
} H5Job;

// Turns HDF5's automatic error-stack printing off (once): failures are reported by the
// job with the library's own messages; expected failures (probing a file) stay quiet.
void store_h5_init(void);
void h5j_begin(H5Job *j, const char *file);
// Records a failure described by fmt (the first one wins); returns -1.
__attribute__((format(printf, 2, 3)))
int h5j_fail(H5Job *j, const char *fmt, ...);
// v < 0: records "<op> <obj>: <innermost HDF5 message>". Returns v.
int64_t h5j_check(H5Job *j, int64_t v, const char *op, const char *obj);
// H5J(job, call, "reading", "/model/x"): the call runs only while the job has not failed.
#define H5J(j, call, op, obj) ((j)->failed ? (int64_t)-1 : h5j_check((j), (int64_t)(call), (op), (obj)))
// Closes any HDF5 id (file, group, dataset, attribute, dataspace, type, property list);
// ids < 0 are ignored. Runs even after a failure (objects are closed in every case).
void h5j_close(H5Job *j, hid_t id);

// Files. h5j_open_read opens read-only with HDF5's errors quiet (-1 and the job failed
// if it is not a readable HDF5 file). Both use the strong close degree: closing the
// file closes whatever of it is still open.
hid_t h5j_open_read(H5Job *j, const char *path);
// Writing `name` in the folder `d`: the temporary "<name>.tmp.<pid>" is created by
// core/outdir.h (exclusively, never through a link; `owned` may prove a leftover of the same
// name ours) and HDF5 writes that very file: through /proc/self/fd/<fd>, the descriptor's own
// file whatever is at its name by then, or, where /proc does not name it, in memory (the core
// driver, no backing store), whose final image is written through the descriptor when HDF5
// closes the file (its file-image callbacks: the buffer HDF5 frees at the close is the
// complete file; an image taken while the file is open has a stale superblock checksum in
// HDF5 1.10).
// The format is pinned to HDF5 1.8-1.10 object headers and superblock, whose metadata carry
// checksums (a damaged header is then detected, not parsed). userblock: 0, or the bytes
// reserved at the start of the file for the caller (a power of 2 >= 512), which HDF5 never
// writes: the caller writes them through j->fd.
hid_t h5j_create_in(H5Job *j, const OutDir *d, const char *name, size_t userblock, OutOwned owned);
// Flush and close; in memory, the image is written through j->fd. After a failure anywhere
// (before, or here) the temporary file is removed; returns 0, or -1 when the job failed.
int h5j_close_written(H5Job *j, hid_t file);
// The crash-safe commit of a closed file (core/outdir.h outdir_commit: fsync, rename over
// `name`, fsync of the folder); on failure the temporary file is removed. 0 or -1.
int h5j_commit(H5Job *j);
// h5j_close_written, then h5j_commit.
int h5j_close_commit(H5Job *j, hid_t file);

// Attributes on `loc` (file, group or dataset).
void h5j_attr_str(H5Job *j, hid_t loc, const char *name, const char *text);   // variable-length UTF-8
// Fixed-length UTF-8 (null-padded): stored in the object header (or its dense attribute
// storage), which HDF5 checksums; variable-length strings live in the global heap, which
// has no checksum (a damaged one made HDF5 loop forever: fuzz/fuzz_checkpoint.c).
void h5j_attr_fixed_str(H5Job *j, hid_t loc, const char *name, const char *text);
void h5j_attr_i64(H5Job *j, hid_t loc, const char *name, int64_t v);
void h5j_attr_u64(H5Job *j, hid_t loc, const char *name, uint64_t v);
void h5j_attr_i32(H5Job *j, hid_t loc, const char *name, int32_t v);
void h5j_attr_u32(H5Job *j, hid_t loc, const char *name, uint32_t v);
// Reads: 1 on success; 0 if the attribute is absent or of another class or shape (the
// job is not failed then); -1 on an HDF5 error (the job failed).
// Strings: fixed-length only, unless allow_vlen (a variable-length one is not read at all
// otherwise: its bytes are in the global heap, which nothing checksums; it counts as absent).
int h5j_attr_read_str(H5Job *j, hid_t loc, const char *name, char **out, int allow_vlen);     // malloc'd
int h5j_attr_read_i64(H5Job *j, hid_t loc, const char *name, int64_t *out);   // any integer type
int h5j_attr_read_u64(H5Job *j, hid_t loc, const char *name, uint64_t *out);
// Dataset at absolute `path` (intermediate groups created): ndim 0 (scalar), 1 [d0] or
// 2 [d0,d1]. file_type e.g. H5T_IEEE_F32LE, mem_type e.g. H5T_NATIVE_FLOAT. crc32: NULL,
// or the checksum to store as the dataset's uint32 attribute "crc32".
void h5j_write(H5Job *j, hid_t file, const char *path, int ndim, int64_t d0, int64_t d1,
               hid_t file_type, hid_t mem_type, const void *data, const uint32_t *crc32);
// Create `path`'s group (and parents) if absent; returns an open group id (-1 on failure).
hid_t h5j_group(H5Job *j, hid_t file, const char *path);
