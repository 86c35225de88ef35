// fileio.c — see fileio.h.
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "outdir.h"


void file_tmp_name(char *tmp, size_t cap, const char *path) {
    xsnprintf(tmp, cap, "%s.tmp.%ld", path, (long)getpid());
}

int file_is_tmp_name(const char *name, long *pid) {
    const char *p = strstr(name, ".tmp.");
    while (p) {
        const char *q = p + 5;
        long v = 0;
        int digits = 0;
        while (*q >= '0' && *q <= '9' && digits < 12) { v = v * 10 + (*q++ - '0'); digits++; }
        if (digits && !*q) { if (pid) *pid = v; return 1; }
        p = strstr(p + 1, ".tmp.");
    }
    return 0;
}

static void dir_part(const char *path, char *out, size_t n) {
    xsnprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash) xsnprintf(out, n, ".");
    else if (slash == out) out[1] = 0;   // "/file" -> "/"
    else *slash = 0;
}

int file_mkdir_p(const char *dir, char *err, size_t n) { return outdir_mkdir_p(dir, err, n); }

int file_mkdir_parent(const char *path, char *err, size_t n) {
    char dir[4096];
    dir_part(path, dir, sizeof dir);
    return file_mkdir_p(dir, err, n);
}

static int fsync_at(const char *path, int flags, const char *what, char *err, size_t n) {
    int fd = open(path, flags);
    if (fd < 0) return outdir_fail(err, n, "cannot open %s %s to fsync it: %s", what, path, strerror(errno));
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        errno = e;
        return outdir_fail(err, n, "fsync of %s %s failed: %s", what, path, strerror(e));
    }
    if (close(fd) != 0) return outdir_fail(err, n, "close of %s %s failed: %s", what, path, strerror(errno));
    return 0;
}

int file_fsync_path(const char *path, char *err, size_t n) { return fsync_at(path, O_RDONLY, "file", err, n); }

int file_fsync_dir_of(const char *path, char *err, size_t n) {
    char dir[4096];
    dir_part(path, dir, sizeof dir);
    return fsync_at(dir, O_RDONLY | O_DIRECTORY, "directory", err, n);
}

int file_fsync_dir(const char *dir, char *err, size_t n) {
    return fsync_at(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY, "directory", err, n);
}

int file_commit_tmp(const char *tmp, const char *path, char *err, size_t n) {
    if (file_fsync_path(tmp, err, n) != 0) { unlink(tmp); return -1; }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return outdir_fail(err, n, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    // the file is complete under its name; only the durability of the rename is left
    return file_fsync_dir_of(path, err, n);
}

// ---- stdio writers -------------------------------------------------------------------
// Through core/outdir.h: the temporary file is created exclusively in path's folder (never
// through a link), renamed there with renameat.
__attribute__((noreturn))
static void abandon(FILE *f, const char *tmp, const char *msg) {
    OutDir d;
    char name[1200], err[1200];
    int fd = f ? dup(fileno(f)) : -1;
    if (f) fclose(f);
    if (fd >= 0 && outdir_open_parent(&d, tmp, 0, name, sizeof name, err, sizeof err) == 0) {
        outdir_discard(&d, fd, name);
        outdir_close(&d);
    } else if (fd >= 0) close(fd);
    die_input_hint("free space on that file system, or choose another directory",
                   "%s (the partial file was removed)", msg);
}

FILE *file_atomic_open(const char *path, char *tmp, size_t tmp_cap) {
    char err[1600], name[1024], tname[1100];
    if (file_check_replace(path, err, sizeof err) != 0)
        die_input_hint("remove it, or choose another path", "cannot write %s: %s", path, err);
    OutDir d;
    if (outdir_open_parent(&d, path, 1, name, sizeof name, err, sizeof err) != 0)
        die_input_hint("choose a writable directory", "cannot write %s: %s", path, err);
    int fd = outdir_tmp_create(&d, name, tname, sizeof tname, NULL, err, sizeof err);
    outdir_close(&d);
    if (fd < 0) die_input_hint("choose a writable directory", "cannot write %s: %s", path, err);
    file_tmp_name(tmp, tmp_cap, path);
    FILE *f = fdopen(fd, "wb");
    if (!f) { int e = errno; close(fd); die_input("cannot write %s: fdopen: %s", tmp, strerror(e)); }
    return f;
}

void file_atomic_write(FILE *f, const void *data, size_t bytes, const char *tmp) {
    if (bytes && fwrite(data, 1, bytes, f) != bytes) {
        char msg[1300];
        snprintf(msg, sizeof msg, "cannot write %s: %s", tmp, strerror(errno));
        abandon(f, tmp, msg);
    }
}

void file_atomic_commit(FILE *f, const char *tmp, const char *path) {
    char msg[1700], err[1600], name[1024];
    if (fflush(f) != 0) {
        snprintf(msg, sizeof msg, "cannot write %s: %s", tmp, strerror(errno));
        abandon(f, tmp, msg);
    }
    OutDir d;
    if (outdir_open_parent(&d, path, 0, name, sizeof name, err, sizeof err) != 0) {
        snprintf(msg, sizeof msg, "cannot write %s: %s", path, err);
        abandon(f, tmp, msg);
    }
    int fd = dup(fileno(f));
    if (fclose(f) != 0 || fd < 0) {
        snprintf(msg, sizeof msg, "cannot write %s: close failed: %s", tmp, strerror(errno));
        const char *slash = strrchr(tmp, '/');
        if (fd >= 0) outdir_discard(&d, fd, slash ? slash + 1 : tmp);
        outdir_close(&d);
        abandon(NULL, tmp, msg);
    }
    const char *slash = strrchr(tmp, '/');
    if (outdir_commit(&d, fd, slash ? slash + 1 : tmp, name, err, sizeof err) != 0) {
        outdir_close(&d);
        snprintf(msg, sizeof msg, "cannot write %s: %s", path, err);
        abandon(NULL, tmp, msg);
    }
    outdir_close(&d);
}

// ---- user-given paths: regular files only ----------------------------------------------
// open(2) failed with e: the reason, naming what is at path when that is the cause (a FIFO
// without a reader is ENXIO, a directory opened for writing EISDIR, a link to nothing ENOENT).
static int open_failed(const char *path, int e, int creating, const char *what, char *err, size_t n) {
    struct stat st, lst;
    errno = e;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return outdir_fail(err, n, "%s '%s' is %s; expected a regular file", what, path, file_kind_name(st.st_mode));
    if (e == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        return outdir_fail(err, n, "%s '%s' is a symbolic link to nothing; expected a regular file%s", what, path,
                           creating ? " (or a new name)" : "");
    return outdir_fail(err, n, "cannot open %s '%s': %s", what, path, strerror(e));
}

int file_open_regular(const char *path, int flags, const char *what, char *err, size_t n) {
    // O_NONBLOCK: opening a FIFO must not wait for its other end (it is refused below)
    int base = (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NONBLOCK | O_CLOEXEC;
    int fd = open(path, base);
    if (fd < 0 && errno == ENOENT && (flags & O_CREAT)) {
        // a new file: exclusively and never through a link (a link to nothing would create its target)
        fd = open(path, base | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
        if (fd < 0 && errno == EEXIST) fd = open(path, base);   // (made meanwhile, or a link: checked below)
    }
    if (fd < 0) return open_failed(path, errno, (flags & O_CREAT) != 0, what, err, n);
    struct stat st;
    if (fstat(fd, &st) != 0) { int e = errno; close(fd); errno = e; return outdir_fail(err, n, "cannot stat %s '%s': %s", what, path, strerror(e)); }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return outdir_fail(err, n, "%s '%s' is %s; expected a regular file", what, path, file_kind_name(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || ((flags & O_TRUNC) && ftruncate(fd, 0) != 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return outdir_fail(err, n, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    return fd;
}

FILE *file_fopen_regular(const char *path, const char *mode, const char *what, char *err, size_t n) {
    int plus = strchr(mode, '+') != NULL;
    int flags = mode[0] == 'r' ? (plus ? O_RDWR : O_RDONLY)
              : mode[0] == 'w' ? (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC
              : (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    int fd = file_open_regular(path, flags, what, err, n);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, mode);
    if (!f) { int e = errno; close(fd); errno = e; outdir_fail(err, n, "cannot open %s '%s': fdopen: %s", what, path, strerror(e)); }
    return f;
}

int file_check_regular(const char *path, const char *what, char *err, size_t n) {
    int fd = file_open_regular(path, O_RDONLY, what, err, n);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

int file_check_replace(const char *path, char *err, size_t n) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : outdir_fail(err, n, "cannot stat '%s': %s", path, strerror(errno));
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return 0;
    errno = EINVAL;
    return outdir_fail(err, n, "'%s' is %s; expected a regular file or a new name", path, file_kind_name(st.st_mode));
}

// ---- bounded reading -----------------------------------------------------------------
int file_read_regular(const char *path, size_t max_bytes, const char *what, char **out, size_t *n,
                      char *err, size_t errn) {
    *out = NULL; *n = 0;
    int fd = file_open_regular(path, O_RDONLY, what, err, errn);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) { int e = errno; close(fd); errno = e; return outdir_fail(err, errn, "cannot stat %s '%s': %s", what, path, strerror(e)); }
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        errno = EFBIG;
        return outdir_fail(err, errn, "%s '%s' is %lld bytes; the limit is %zu bytes", what, path, (long long)st.st_size, max_bytes);
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (len == cap) {   // the file grew while we read it
            if (cap > max_bytes) {
                free(buf); close(fd); errno = EFBIG;
                return outdir_fail(err, errn, "%s '%s' grew past the limit of %zu bytes while being read", what, path, max_bytes);
            }
            size_t nc = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *nb = xmalloc(nc + 1);
            memcpy(nb, buf, len);
            free(buf);
            buf = nb; cap = nc;
        }
        ssize_t k = read(fd, buf + len, cap - len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { int e = errno; free(buf); close(fd); errno = e; return outdir_fail(err, errn, "cannot read %s '%s': %s", what, path, strerror(e)); }
        if (k == 0) break;
        len += (size_t)k;
    }
    close(fd);
    if (len > max_bytes) { free(buf); errno = EFBIG; return outdir_fail(err, errn, "%s '%s' grew past the limit of %zu bytes while being read", what, path, max_bytes); }
    buf[len] = 0;
    *out = buf; *n = len;
    return 0;
}
