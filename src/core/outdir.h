// outdir.h — the one way the engine writes or deletes anything in its output folders: a
// run's folder, its dumps and heartbeat folders, run.dump_dir, the run database's folder, the
// data cache. A folder is opened once as a directory handle whose last component is never a
// symbolic link (O_DIRECTORY | O_NOFOLLOW), and every name inside it is opened, created,
// renamed and deleted relative to that handle (the openat family), never following a link:
//
//   create    a new file or folder only with O_CREAT | O_EXCL | O_NOFOLLOW (mkdirat): a name
//             that already exists as a link, a folder or another file is never written through
//   replace   crash-safe: "<name>.tmp.<pid>" created exclusively, written, fsync'ed, renamed over
//             <name> with renameat (which replaces a link, never its target), the folder fsync'ed
//   delete    only a regular file that the caller proves this project wrote (its content: the
//             checkpoint block's magic text, the heartbeat's first line), never a link
//
// The folder a user configures (run.checkpoint_dir, run.dump_dir, the database's folder) is
// created with mkdir -p and may be reached through links of the user's own making above it;
// what the engine creates below it never is. A run folder replaced by a link, a `.heartbeat`
// replaced by a link to another folder, a `step_6.h5.tmp.<pid>` planted as a link: each is
// refused by name (exit 2 through the caller), and nothing outside the folder is touched.
//
// BOOST_TRACE_WRITES=FILE appends one line per operation ("<op>\t<folder>/<name>"; op is
// mkdir, create, replace, remove or rmdir) to FILE: the list of names the engine writes,
// taken from the calls themselves (tests/t_paths.sh plants a link at each).
//
// Functions returning int give 0 (or a count) on success and -1 with a message naming the
// folder, the name and the system's reason in err; they never exit.
#pragma once
#include <stddef.h>
#include <sys/types.h>

// What a file's mode makes it, for a refusal: "a directory", "a FIFO (pipe)", "a character
// device", ... ("a regular file" for one).
const char *file_kind_name(mode_t mode);

typedef struct {
    int fd;              // O_DIRECTORY | O_NOFOLLOW handle (-1: closed)
    char path[1400];     // as messages name it
} OutDir;

// The message into err[n] (errno kept): returns -1. The error convention of core's file code.
__attribute__((format(printf, 3, 4)))
int outdir_fail(char *err, size_t n, const char *fmt, ...);

// Does a regular file `name` in folder `dirfd` hold what this project writes there (its first
// bytes)? The test that allows deleting or replacing it.
typedef int (*OutOwned)(int dirfd, const char *name);

// Open the folder `path` (create: mkdir -p first). Its last component must be a real folder,
// not a link ("... is a symbolic link"). Folders it creates are remembered for
// outdir_undo_created.
int outdir_open(OutDir *d, const char *path, int create, char *err, size_t n);
// The folder `name` (one path component) inside `parent`, created when `create`; never a link.
int outdir_sub(OutDir *sub, const OutDir *parent, const char *name, int create, char *err, size_t n);
// The folder holding `path` (its directory part, "." for a bare name; create: mkdir -p), and
// the last component into name[n_name].
int outdir_open_parent(OutDir *d, const char *path, int create, char *name, size_t n_name, char *err, size_t n);
void outdir_close(OutDir *d);
// mkdir -p `dir` (folders it creates are remembered for outdir_undo_created); an existing
// non-directory is an error. The one mkdir -p of the project (core/fileio.h file_mkdir_p).
int outdir_mkdir_p(const char *dir, char *err, size_t n);

// Open `name` for reading without following a link: a file descriptor, or -1 (errno set;
// ELOOP for a link).
int outdir_open_read(const OutDir *d, const char *name);
// Create `name` (O_CREAT | O_EXCL | O_NOFOLLOW, read-write). An existing entry that `owned`
// proves ours (a regular file) is removed first and the creation retried once; anything else
// in its place is refused, named with what it is. Returns the descriptor, or -1 and err.
int outdir_create(const OutDir *d, const char *name, OutOwned owned, char *err, size_t n);

// Crash-safe replacement of `name`: outdir_create of "<name>.tmp.<pid>" (its name into
// tmp[tmp_cap]); the caller writes through the descriptor, then outdir_commit fsyncs and
// closes it, renames it over `name` and fsyncs the folder, or outdir_discard closes it and
// removes the temporary file (only if it is still the file created).
int outdir_tmp_create(const OutDir *d, const char *name, char *tmp, size_t tmp_cap, OutOwned owned, char *err, size_t n);
int outdir_commit(const OutDir *d, int fd, const char *tmp, const char *name, char *err, size_t n);
void outdir_discard(const OutDir *d, int fd, const char *tmp);

// Delete `name` if it is a regular file (not a link) that `owned` proves ours: 1 removed, 0 left
// alone (why in err), -1 failed (err).
int outdir_remove(const OutDir *d, const char *name, OutOwned owned, char *err, size_t n);
// Remove the folder `name` inside `parent` if it is an empty folder (a link is never followed).
int outdir_rmdir(const OutDir *parent, const char *name);
// Unlink `name` only if it is still the file open as `fd` (same device and inode): what this
// process created and holds (a heartbeat). 1 removed, 0 not (another file is there now).
int outdir_remove_held(const OutDir *d, const char *name, int fd);
// fsync of the folder itself.
int outdir_fsync(const OutDir *d, char *err, size_t n);
// Prove the folder writable: create, write and remove ".write-test.<pid>" (exclusively).
int outdir_probe_writable(const OutDir *d, char *err, size_t n);

// The folders this process created through this module (outdir_open, outdir_sub), newest
// first, are removed again if they are still the folders created and empty: a refusal before
// anything was recorded leaves no folder behind. outdir_keep_created forgets them (they are a
// run's now).
void outdir_undo_created(void);
void outdir_keep_created(void);
