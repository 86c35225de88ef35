// fileio.h — crash-safe file replacement and directory creation: the one implementation
// for the whole project (token shards, tokenizers, cache markers, checkpoints, step dumps).
//
// A file is replaced crash-safely by writing "<path>.tmp.<pid>", flushing and fsync'ing
// it, closing it, renaming it over <path> and fsync'ing the directory. After a crash at
// any point <path> is either the old file or the complete new one; at most a
// "<path>.tmp.<pid>" is left behind, which no reader opens, and the pid says whose it is.
// One fsync rule everywhere: a failed fsync is a failed write, except EINVAL (a file
// system without fsync support), which is accepted.
//
// Functions returning int give 0 on success, or -1 with a message naming the file and
// the operation in err (they never exit, so callers close what they opened first).
// file_atomic_open/file_atomic_write/file_atomic_commit are for stdio writers and exit 2 with that
// message (nothing else is open then); on any failure the temporary file is removed.
#pragma once
#include <stddef.h>
#include <stdio.h>

// "<path>.tmp.<pid>"
void file_tmp_name(char *tmp, size_t cap, const char *path);
// Does `name` (a file name, no directory) end in ".tmp.<digits>"? Then *pid is those digits.
int file_is_tmp_name(const char *name, long *pid);
// mkdir -p (core/outdir.h outdir_mkdir_p); the directory itself may exist. An existing
// non-directory is an error.
int file_mkdir_p(const char *dir, char *err, size_t n);
int file_mkdir_parent(const char *path, char *err, size_t n);
// fsync of a file by name, and of the directory holding `path`.
int file_fsync_path(const char *path, char *err, size_t n);
int file_fsync_dir_of(const char *path, char *err, size_t n);
int file_fsync_dir(const char *dir, char *err, size_t n);   // the directory itself ("" = ".")
// The last steps of a crash-safe write, for a temporary file already written and closed
// (by stdio or a library such as HDF5): fsync tmp, rename it over path, fsync the
// directory. On failure tmp is removed.
int file_commit_tmp(const char *tmp, const char *path, char *err, size_t n);

// stdio writers: file_atomic_open refuses a path that is not a regular file (file_check_replace),
// then creates "<path>.tmp.<pid>" (its name into tmp) after creating path's directory, exclusively and never through a link (core/outdir.h); file_atomic_write is a
// checked fwrite; file_atomic_commit flushes, fsyncs, closes and renames it over path in the
// same folder (outdir_commit).
FILE *file_atomic_open(const char *path, char *tmp, size_t tmp_cap);
void file_atomic_write(FILE *f, const void *data, size_t bytes, const char *tmp);
void file_atomic_commit(FILE *f, const char *tmp, const char *path);

// A file at a path the user gave (an option, an environment variable, a configuration key),
// opened only if it is a regular file, or with O_CREAT a new one: a FIFO, a device (/dev/null,
// /dev/stdin), a directory, a socket or a symbolic link to nothing is refused before a byte is
// read or written, and never waited on (opened O_NONBLOCK, checked with fstat, then blocking
// again). flags as open(2): O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_TRUNC (applied after
// the check), O_APPEND. A new file is created exclusively and never through a link. `what`
// names the file in messages ("--json", "GEMM choice table"). The descriptor (O_CLOEXEC), or -1
// with errno and "WHAT 'PATH' is a FIFO (pipe); expected a regular file" (or the system's
// reason) in err. file_fopen_regular: the same as a stdio stream, mode "r", "w", "a" or "r+".
int file_open_regular(const char *path, int flags, const char *what, char *err, size_t n);
FILE *file_fopen_regular(const char *path, const char *mode, const char *what, char *err, size_t n);
// For a file a library opens by name itself (SQLite): is path a regular file? 0, or -1 with err
// as above (opened and closed through file_open_regular, so never waited on).
int file_check_regular(const char *path, const char *what, char *err, size_t n);
// May path be replaced by a new file (file_atomic_open)? 0 when nothing is there, a regular file
// or a link (a rename replaces the link itself, never its target); -1 with err for a FIFO, a
// device, a directory or a socket ("'PATH' is a FIFO (pipe); expected a regular file or a new name").
int file_check_replace(const char *path, char *err, size_t n);

// The whole of a regular file, at most max_bytes, NUL-terminated (so text can be used
// as a string; *n excludes the NUL). Refuses (-1, err) what is not a regular file — a
// FIFO, a device such as /dev/zero or /dev/stdin, a directory — before reading a byte,
// and a file larger than max_bytes (also one that grows past it while being read).
// `what` names the kind of file in messages ("manifest", "tokenizer").
int file_read_regular(const char *path, size_t max_bytes, const char *what, char **out, size_t *n,
                      char *err, size_t errn);
