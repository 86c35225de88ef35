// outdir.c — see outdir.h.
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

int outdir_fail(char *err, size_t n, const char *fmt, ...) {
    int e = errno;
    if (err && n) { va_list ap; va_start(ap, fmt); vsnprintf(err, n, fmt, ap); va_end(ap); }
    errno = e;
    return -1;
}

// ---- the trace (BOOST_TRACE_WRITES) ---------------------------------------------------------
static void trace(const char *op, const char *dir, const char *name) {
    const char *file = getenv("BOOST_TRACE_WRITES");
    if (!file || !*file) return;
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);   // (a FIFO never waited on)
    if (fd < 0) return;
    char line[3000];
    int k = snprintf(line, sizeof line, "%s\t%s%s%s\n", op, dir, name ? "/" : "", name ? name : "");
    if (k > 0 && (size_t)k < sizeof line && write(fd, line, (size_t)k) != k) { /* a trace is best effort */ }
    close(fd);
}

// What an entry is, for messages ("a symbolic link").
const char *file_kind_name(mode_t m) {
    return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO (pipe)"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket"
         : S_ISREG(m) ? "a regular file" : "not a regular file";
}

// ---- folders this process created (outdir_undo_created) --------------------------------------
typedef struct { char path[1400]; dev_t dev; ino_t ino; } Created;
static struct { Created *v; int n, cap; } created;   // file-scope: a refusal reaches the undo from
                                                      // any depth (the die hook), like check.c's hook

static void remember(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    Created *c = vec_grow(created.v, &created.n, &created.cap, sizeof *created.v);
    created.v = c;
    c = &created.v[created.n - 1];
    snprintf(c->path, sizeof c->path, "%s", path);
    c->dev = st.st_dev; c->ino = st.st_ino;
}

void outdir_undo_created(void) {
    for (int i = created.n - 1; i >= 0; i--) {
        struct stat st;
        // still the folder made (a link or another folder in its place is left alone); rmdir
        // removes only an empty one
        if (lstat(created.v[i].path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == created.v[i].dev &&
            st.st_ino == created.v[i].ino && rmdir(created.v[i].path) == 0)
            trace("rmdir", created.v[i].path, NULL);
    }
    outdir_keep_created();
}

void outdir_keep_created(void) { free(created.v); created.v = NULL; created.n = created.cap = 0; }

// ---- opening folders ------------------------------------------------------------------------
static int open_dir_nofollow(int at, const char *name, const char *shown, char *err, size_t n) {
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return fd;
    int e = errno;
    struct stat st;
    if ((e == ELOOP || e == ENOTDIR) && fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
        if (S_ISLNK(st.st_mode))
            return outdir_fail(err, n, "%s is a symbolic link; boost-c never writes through a link in its folders "
                        "(a folder it writes must be its own: remove the link)", shown);
        return outdir_fail(err, n, "%s exists but is %s, not a directory", shown, file_kind_name(st.st_mode));
    }
    errno = e;
    return outdir_fail(err, n, "cannot open directory %s: %s", shown, strerror(e));
}

// mkdir -p: every missing component is created (and remembered). Components above the last may
// be links of the user's making.
int outdir_mkdir_p(const char *dir, char *err, size_t n) {
    if (!dir || !dir[0] || !strcmp(dir, ".")) return 0;
    char buf[4096];
    if (strlen(dir) >= sizeof buf) { errno = ENAMETOOLONG; return outdir_fail(err, n, "%.200s...: path too long", dir); }
    strcpy(buf, dir);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/') buf[--len] = 0;
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p != 0) continue;
        char c = *p;
        *p = 0;
        struct stat st;
        if (mkdir(buf, 0777) == 0) { remember(buf); trace("mkdir", buf, NULL); }
        else if (errno != EEXIST) return outdir_fail(err, n, "cannot create directory %s: %s", buf, strerror(errno));
        else if (stat(buf, &st) == 0 && !S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return outdir_fail(err, n, "cannot create %s: it exists but is not a directory (%s)", buf, file_kind_name(st.st_mode));
        }
        if (c == 0) break;
        *p = c;
    }
    struct stat st;
    if (stat(buf, &st) != 0) return outdir_fail(err, n, "cannot create directory %s: %s", buf, strerror(errno));
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return outdir_fail(err, n, "%s exists but is not a directory", buf); }
    return 0;
}

int outdir_open(OutDir *d, const char *path, int create, char *err, size_t n) {
    d->fd = -1;
    const char *p = path && path[0] ? path : ".";
    if (snprintf(d->path, sizeof d->path, "%s", p) >= (int)sizeof d->path) {
        errno = ENAMETOOLONG;
        return outdir_fail(err, n, "%.200s...: path too long", p);
    }
    if (create && outdir_mkdir_p(p, err, n) != 0) return -1;
    d->fd = open_dir_nofollow(AT_FDCWD, p, p, err, n);
    return d->fd < 0 ? -1 : 0;
}

int outdir_sub(OutDir *sub, const OutDir *parent, const char *name, int create, char *err, size_t n) {
    sub->fd = -1;
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
        errno = EINVAL;
        return outdir_fail(err, n, "'%s' is not one folder name inside %s", name, parent->path);
    }
    if (snprintf(sub->path, sizeof sub->path, "%s/%s", parent->path, name) >= (int)sizeof sub->path) {
        errno = ENAMETOOLONG;
        return outdir_fail(err, n, "%.200s/%s: path too long", parent->path, name);
    }
    if (create) {
        if (mkdirat(parent->fd, name, 0777) == 0) { remember(sub->path); trace("mkdir", sub->path, NULL); }
        else if (errno != EEXIST) return outdir_fail(err, n, "cannot create directory %s: %s", sub->path, strerror(errno));
    }
    sub->fd = open_dir_nofollow(parent->fd, name, sub->path, err, n);
    return sub->fd < 0 ? -1 : 0;
}

int outdir_open_parent(OutDir *d, const char *path, int create, char *name, size_t n_name, char *err, size_t n) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!base[0]) { errno = EISDIR; d->fd = -1; return outdir_fail(err, n, "%s names a directory (it ends in '/'), not a file", path); }
    if (snprintf(name, n_name, "%s", base) >= (int)n_name) { errno = ENAMETOOLONG; d->fd = -1; return outdir_fail(err, n, "%.200s...: name too long", path); }
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) >= sizeof dir) {   // (cut short, it would name another folder)
        errno = ENAMETOOLONG; d->fd = -1;
        return outdir_fail(err, n, "%.200s...: a folder path of %zu bytes (at most %zu)", path, (size_t)(slash - path), sizeof dir - 1);
    } else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return outdir_open(d, dir, create, err, n);
}

void outdir_close(OutDir *d) {
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
}

// ---- files ----------------------------------------------------------------------------------
int outdir_open_read(const OutDir *d, const char *name) {
    return openat(d->fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
}

int outdir_create(const OutDir *d, const char *name, OutOwned owned, char *err, size_t n) {
    for (int attempt = 0; ; attempt++) {
        int fd = openat(d->fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) { trace("create", d->path, name); return fd; }
        if (errno != EEXIST) return outdir_fail(err, n, "cannot create %s/%s: %s", d->path, name, strerror(errno));
        struct stat st;
        if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT && attempt < 3) continue;   // (removed meanwhile)
            return outdir_fail(err, n, "cannot create %s/%s: %s", d->path, name, strerror(errno));
        }
        int ours = S_ISREG(st.st_mode) && owned && owned(d->fd, name);
        if (ours && attempt == 0) {   // a leftover of this project's own (an earlier process with this pid)
            if (unlinkat(d->fd, name, 0) != 0 && errno != ENOENT)
                return outdir_fail(err, n, "cannot remove the leftover %s/%s: %s", d->path, name, strerror(errno));
            trace("remove", d->path, name);
            continue;
        }
        errno = EEXIST;
        return outdir_fail(err, n, "%s/%s exists and is %s%s; boost-c writes a new file there only where nothing is "
                    "(it never writes through a link or over a file it cannot prove it wrote): remove it",
                    d->path, name, file_kind_name(st.st_mode), S_ISREG(st.st_mode) ? " boost-c did not write" : "");
    }
}

int outdir_tmp_create(const OutDir *d, const char *name, char *tmp, size_t tmp_cap, OutOwned owned, char *err, size_t n) {
    if (snprintf(tmp, tmp_cap, "%s.tmp.%ld", name, (long)getpid()) >= (int)tmp_cap) {
        errno = ENAMETOOLONG;
        return outdir_fail(err, n, "%s/%s: name too long", d->path, name);
    }
    return outdir_create(d, tmp, owned, err, n);
}

// Is `name` still the file open as fd?
static int same_file(const OutDir *d, const char *name, int fd) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstatat(d->fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int outdir_remove_held(const OutDir *d, const char *name, int fd) {
    if (!same_file(d, name, fd)) return 0;
    if (unlinkat(d->fd, name, 0) != 0) return 0;
    trace("remove", d->path, name);
    return 1;
}

void outdir_discard(const OutDir *d, int fd, const char *tmp) {
    if (fd < 0) return;
    int e = errno;
    outdir_remove_held(d, tmp, fd);
    close(fd);
    errno = e;
}

int outdir_fsync(const OutDir *d, char *err, size_t n) {
    if (fsync(d->fd) != 0 && errno != EINVAL) return outdir_fail(err, n, "fsync of directory %s failed: %s", d->path, strerror(errno));
    return 0;
}

int outdir_commit(const OutDir *d, int fd, const char *tmp, const char *name, char *err, size_t n) {
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        outdir_discard(d, fd, tmp);
        errno = e;
        return outdir_fail(err, n, "fsync of %s/%s failed: %s", d->path, tmp, strerror(e));
    }
    struct stat held;
    if (fstat(fd, &held) != 0) { int e = errno; outdir_discard(d, fd, tmp); errno = e; return outdir_fail(err, n, "cannot stat %s/%s: %s", d->path, tmp, strerror(e)); }
    if (!same_file(d, tmp, fd)) {   // someone replaced the temporary file: never rename what is not ours
        outdir_discard(d, fd, tmp);
        errno = EEXIST;
        return outdir_fail(err, n, "%s/%s was replaced while being written; not renamed to %s", d->path, tmp, name);
    }
    if (close(fd) != 0) {
        int e = errno;
        struct stat st;
        if (fstatat(d->fd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == held.st_ino && st.st_dev == held.st_dev) unlinkat(d->fd, tmp, 0);
        errno = e;
        return outdir_fail(err, n, "close of %s/%s failed: %s", d->path, tmp, strerror(e));
    }
    if (renameat(d->fd, tmp, d->fd, name) != 0) {
        int e = errno;
        struct stat st;
        if (fstatat(d->fd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == held.st_ino && st.st_dev == held.st_dev) unlinkat(d->fd, tmp, 0);
        errno = e;
        return outdir_fail(err, n, "cannot rename %s/%s to %s: %s", d->path, tmp, name, strerror(e));
    }
    trace("replace", d->path, name);
    // the file is complete under its name; only the durability of the rename is left
    return outdir_fsync(d, err, n);
}

int outdir_remove(const OutDir *d, const char *name, OutOwned owned, char *err, size_t n) {
    struct stat st;
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        return outdir_fail(err, n, "cannot stat %s/%s: %s", d->path, name, strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, n, "%s/%s is %s, never one boost-c wrote; left alone", d->path, name, file_kind_name(st.st_mode));
        return 0;
    }
    if (!owned || !owned(d->fd, name)) {
        snprintf(err, n, "%s/%s is not a file boost-c wrote (its first bytes); left alone", d->path, name);
        return 0;
    }
    if (unlinkat(d->fd, name, 0) != 0) return outdir_fail(err, n, "cannot remove %s/%s: %s", d->path, name, strerror(errno));
    trace("remove", d->path, name);
    return 1;
}

int outdir_rmdir(const OutDir *parent, const char *name) {
    if (unlinkat(parent->fd, name, AT_REMOVEDIR) != 0) return -1;   // (ENOTDIR for a link: left alone)
    trace("rmdir", parent->path, name);
    return 0;
}

// A write test's leftover (a process with this pid that died between its create and remove):
// empty, or the one byte it writes.
static int write_test_owned(int dirfd, const char *name) {
    struct stat st;
    char c = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_size == 0 || (st.st_size == 1 && pread(fd, &c, 1, 0) == 1 && c == 'x'));
    close(fd);
    return ok;
}

int outdir_probe_writable(const OutDir *d, char *err, size_t n) {
    char name[64];
    snprintf(name, sizeof name, ".write-test.%ld", (long)getpid());
    int fd = outdir_create(d, name, write_test_owned, err, n);
    if (fd < 0) return -1;
    int ok = write(fd, "x", 1) == 1;
    int e = errno;
    outdir_remove_held(d, name, fd);
    if (close(fd) != 0 && ok) { ok = 0; e = errno; }
    errno = e;
    return ok ? 0 : outdir_fail(err, n, "cannot write to %s: %s", d->path, strerror(e));
}
