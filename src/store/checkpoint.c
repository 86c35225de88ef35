// checkpoint.c — see checkpoint.h and docs/checkpoint-format.md.
#include "checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "../core/check.h"
#include "../core/crc32.h"
#include "../core/fileio.h"
#include "../config/manifest.h"

// Checksums are of the stored bytes: little-endian float32, which is the host's layout.
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoint checksums assume a little-endian host");

#define MAX_DATASETS (1 << 20)   // a bound on what a (hostile) file can make us list

// "/<prefix><name>" for family `fam` ("model" -> "/model/...", "m" -> "/optimizer/m/...").
// Names come from the parameter table and start with "model/" (checked before writing).
static void family_path(char *buf, size_t n, const char *fam, const char *name) {
    if (strcmp(fam, "model") == 0) xsnprintf(buf, n, "/%s", name);
    else xsnprintf(buf, n, "/optimizer/%s/%s", fam, name + 6);
}

// ---- the metadata checksum ----------------------------------------------------------
// CRC-32 of the text "step=<N>\ntokens_seen=<N>\nsamples_seen=<N>\nseed=<N>\n
// optimizer_step=<N>\ngit_commit=<s>\ncreated_at=<s>\nmanifest=<s>\nconfig=<s>\n"
// (decimal integers, strings as stored): docs/checkpoint-format.md.
static uint32_t text_field(uint32_t c, const char *name, const char *v) {
    c = crc32_update(c, name, strlen(name));
    c = crc32_update(c, "=", 1);
    if (v) c = crc32_update(c, v, strlen(v));
    return crc32_update(c, "\n", 1);
}
static uint32_t meta_crc(const CheckpointMeta *m, const char *created_at) {
    char num[256];
    snprintf(num, sizeof num, "step=%" PRId64 "\ntokens_seen=%" PRId64 "\nsamples_seen=%" PRIu64 "\nseed=%" PRIu64
             "\noptimizer_step=%" PRId64 "\n", m->step, m->tokens_seen, m->samples_seen, m->seed, m->adam_t);
    uint32_t c = crc32_update(0, num, strlen(num));
    c = text_field(c, "git_commit", m->git_commit);
    c = text_field(c, "created_at", created_at);
    c = text_field(c, "manifest", m->manifest);
    return text_field(c, "config", m->config_json);
}

// CRC-32 of "run_uid=<s>\nvariant=<s>\ntokenizer=<s>\n": the identity attributes, added to
// format 2 without changing meta_crc32 (older builds read these files and ignore them).
static uint32_t identity_crc(const CheckpointMeta *m) {
    uint32_t c = text_field(0, "run_uid", m->run_uid);
    c = text_field(c, "variant", m->variant);
    return text_field(c, "tokenizer", m->tokenizer_path);
}

// ---- the checksum block -------------------------------------------------------------
// The first CKPT_BLOCK bytes of a checkpoint are an HDF5 user block (HDF5 never reads or
// writes it; the HDF5 file proper starts after it). It holds, as text,
//   "boost-c checkpoint\nformat_version 2\nstep <N>\nsize <bytes>\ncrc32 <8 hex>\n"
// zero-padded, where crc32 covers every byte after the block. It is checked before HDF5
// reads anything: a damaged file is refused without HDF5 ever parsing damaged bytes
// (HDF5 does not survive every damaged object header), and listing needs no HDF5 at all.
#define CKPT_BLOCK 512
#define BLOCK_MAGIC "boost-c checkpoint\n"
static const unsigned char HDF5_SIGNATURE[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

// CRC-32 of bytes [CKPT_BLOCK, size) of fd.
static int crc_after_block(int fd, uint64_t size, uint32_t *crc, char *err, size_t n) {
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = xmalloc(CHUNK);
    uint32_t c = 0;
    for (uint64_t off = CKPT_BLOCK; off < size;) {
        size_t want = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
        ssize_t k = pread(fd, buf, want, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { snprintf(err, n, "cannot read it: %s", k < 0 ? strerror(errno) : "unexpected end of file"); free(buf); return -1; }
        c = crc32_update(c, buf, (size_t)k);
        off += (uint64_t)k;
    }
    free(buf);
    *crc = c;
    return 0;
}

// The checksum block of the open checkpoint file fd (shown: its name in messages).
static int seal_fd(int fd, const char *shown, int64_t step, char *err, size_t n) {
    struct stat st;
    uint32_t crc = 0;
    if (fstat(fd, &st) != 0) { snprintf(err, n, "cannot stat %s: %s", shown, strerror(errno)); return -1; }
    if ((uint64_t)st.st_size < CKPT_BLOCK + sizeof HDF5_SIGNATURE) { snprintf(err, n, "%s is too short to be a checkpoint", shown); return -1; }
    if (crc_after_block(fd, (uint64_t)st.st_size, &crc, err, n) != 0) return -1;
    char block[CKPT_BLOCK] = {0};
    snprintf(block, sizeof block, BLOCK_MAGIC "format_version %d\nstep %" PRId64 "\nsize %" PRIu64 "\ncrc32 %08x\n",
             CHECKPOINT_FORMAT_VERSION, step, (uint64_t)st.st_size, crc);
    if (pwrite(fd, block, sizeof block, 0) != (ssize_t)sizeof block) {
        snprintf(err, n, "cannot write the checksum block of %s: %s", shown, strerror(errno));
        return -1;
    }
    return 0;
}

int checkpoint_seal(const char *path, int64_t step, char *err, size_t n) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) { snprintf(err, n, "cannot open %s to seal it: %s", path, strerror(errno)); return -1; }
    int rc = seal_fd(fd, path, step, err, n);
    if (close(fd) != 0 && rc == 0) { snprintf(err, n, "cannot write %s: %s", path, strerror(errno)); rc = -1; }
    return rc;
}

// A file that starts with the block's magic text was written by boost-c: a sealed checkpoint,
// or one being written (its block says "unsealed" until the checksum is in).
#define BLOCK_UNSEALED BLOCK_MAGIC "unsealed: being written\n"
static int starts_with_magic(int fd) {
    char head[sizeof BLOCK_MAGIC];
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, head, sizeof head - 1, 0) == (ssize_t)(sizeof head - 1) &&
           memcmp(head, BLOCK_MAGIC, sizeof head - 1) == 0;
}
static int owned_at(int dirfd, const char *name) {
    int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    int ours = starts_with_magic(fd);
    close(fd);
    return ours;
}

enum { LOAD_OK = 0, LOAD_UNREADABLE, LOAD_DAMAGED, LOAD_FORMAT, LOAD_MODEL };

// The checksum block of `path`, verified against the whole file (no HDF5). LOAD_OK and
// *step, or the kind of problem and what it is in err.
static int check_block_fd(int fd, int64_t *step, char *err, size_t n) {
    struct stat st;
    char block[CKPT_BLOCK + 1] = {0};
    int kind = LOAD_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { snprintf(err, n, "not a regular file"); kind = LOAD_UNREADABLE; goto done; }
    if ((uint64_t)st.st_size < CKPT_BLOCK + sizeof HDF5_SIGNATURE) {
        snprintf(err, n, "the file is %lld bytes, too short for a checkpoint (truncated?)", (long long)st.st_size);
        kind = LOAD_DAMAGED;
        goto done;
    }
    if (pread(fd, block, CKPT_BLOCK, 0) != CKPT_BLOCK) { snprintf(err, n, "cannot read it: %s", strerror(errno)); kind = LOAD_UNREADABLE; goto done; }
    if (memcmp(block, BLOCK_MAGIC, strlen(BLOCK_MAGIC)) != 0) {
        if (!memcmp(block, HDF5_SIGNATURE, sizeof HDF5_SIGNATURE)) {
            snprintf(err, n, "an HDF5 file without the boost-c checksum block: a checkpoint of format_version 1 (written by "
                     "an older build, without checksums, so it cannot be verified) or a file of another tool; this build "
                     "reads format_version %d only (resume it with the build that wrote it, or start a new run)",
                     CHECKPOINT_FORMAT_VERSION);
            kind = LOAD_FORMAT;
        } else {
            snprintf(err, n, "not a boost-c checkpoint (no checksum block; the file does not start with \"boost-c checkpoint\")");
            kind = LOAD_UNREADABLE;
        }
        goto done;
    }
    int version = -1;
    long long bstep = -1;
    unsigned long long bsize = 0;
    unsigned crc = 0;
    int used = 0;
    if (sscanf(block + strlen(BLOCK_MAGIC), "format_version %d\nstep %lld\nsize %llu\ncrc32 %8x\n%n",
               &version, &bstep, &bsize, &crc, &used) != 4 || !used) {
        snprintf(err, n, "its checksum block does not parse (damaged)");
        kind = LOAD_DAMAGED;
        goto done;
    }
    if (version != CHECKPOINT_FORMAT_VERSION) {
        snprintf(err, n, "format_version is %d but this build reads format_version %d", version, CHECKPOINT_FORMAT_VERSION);
        kind = LOAD_FORMAT;
        goto done;
    }
    if (bsize != (unsigned long long)st.st_size) {
        snprintf(err, n, "the file is %lld bytes but its checksum block says %llu: truncated or extended", (long long)st.st_size, bsize);
        kind = LOAD_DAMAGED;
        goto done;
    }
    uint32_t got;
    if (crc_after_block(fd, (uint64_t)st.st_size, &got, err, n) != 0) { kind = LOAD_UNREADABLE; goto done; }
    if (got != crc) {
        snprintf(err, n, "its bytes do not match the file checksum (stored crc32 %08x, computed %08x)", crc, got);
        kind = LOAD_DAMAGED;
        goto done;
    }
    *step = bstep;
done:
    return kind;
}

static int check_block(const char *path, int64_t *step, char *err, size_t n) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) { snprintf(err, n, "cannot read it: %s", strerror(errno)); return LOAD_UNREADABLE; }
    int kind = check_block_fd(fd, step, err, n);
    close(fd);
    return kind;
}

// ---- writing ------------------------------------------------------------------------
static void write_family(H5Job *j, hid_t f, const ModelState *m, const char *fam, const float *base) {
    char path[256];
    for (int i = 0; i < m->table.n_specs && !j->failed; i++) {
        const ParamSpec *s = &m->table.specs[i];
        family_path(path, sizeof path, fam, s->name);
        const float *p = base + s->offset;
        uint32_t crc = crc32_update(0, p, (size_t)s->rows * (size_t)s->cols * sizeof(float));
        if (s->ndim == 1) h5j_write(j, f, path, 1, s->cols, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, p, &crc);
        else h5j_write(j, f, path, 2, s->rows, s->cols, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, p, &crc);
    }
}

// ---- the embedded tokenizer ---------------------------------------------------------
// /tokenizer/bpe: the bytes of the tokenizer.bin the run's data was encoded with
// (docs/data-format.md), uint8 [n] with its crc32; the group's attribute sha256 is the hex
// SHA-256 of those bytes (= `sha256sum tokenizer.bin`), what build/sample compares a
// --tokenizer file against. Older builds list only /model and /optimizer: they read
// these files unchanged.
#define TOKENIZER_GROUP "/tokenizer"
#define TOKENIZER_DATASET "/tokenizer/bpe"
#define TOKENIZER_FORMAT "boost-c tokenizer.bin"
#define TOKENIZER_MAX_BYTES ((size_t)1 << 28)   // tokenizer.bin is at most 20 + 8 * 2^24 bytes

static void write_tokenizer(H5Job *j, hid_t f, const char *ckpt, const char *tok_path) {
    if (!tok_path || !tok_path[0]) return;   // synthetic data: token ids without text
    char *buf, err[1300], hex[65];
    size_t n;
    if (file_read_regular(tok_path, TOKENIZER_MAX_BYTES, "tokenizer", &buf, &n, err, sizeof err) != 0) {
        // the checkpoint still resumes the run; only its use alone (build/sample) needs the file
        fprintf(stderr, "warning: %s is written without its tokenizer: %s (build/sample then needs --tokenizer PATH)\n",
                ckpt, err);
        return;
    }
    sha256_hex(buf, n, hex);
    uint32_t crc = crc32_update(0, buf, n);
    h5j_write(j, f, TOKENIZER_DATASET, 1, (int64_t)n, 0, H5T_STD_U8LE, H5T_NATIVE_UINT8, buf, &crc);
    hid_t g = h5j_group(j, f, TOKENIZER_GROUP);
    h5j_attr_fixed_str(j, g, "format", TOKENIZER_FORMAT);
    h5j_attr_fixed_str(j, g, "sha256", hex);
    h5j_close(j, g);
    free(buf);
}

static void write_in(const OutDir *d, const char *name, const ModelState *m, const CheckpointMeta *meta) {
    store_check_param_names(m);   // before anything is open
    char path[2600], now[32], err[1400];
    xsnprintf(path, sizeof path, "%s/%s", d->path, name);
    store_iso_now(now);
    H5Job j;
    h5j_begin(&j, path);
    // (a leftover "<name>.tmp.<pid>" of this project's, an earlier process with this pid, is replaced)
    hid_t f = h5j_create_in(&j, d, name, CKPT_BLOCK, owned_at);
    if (j.fd < 0)   // nothing was created: something is at the temporary name, or the folder refuses it
        die_input_hint("remove what is at that name (a run folder holds only what boost-c wrote there), or set "
                       "run.checkpoint_dir to a writable directory; the checkpoints written before are intact",
                       "cannot write checkpoint %s: %s", path, j.msg);
    if (!j.failed) {   // marked as this project's from the start: a crash leaves a file pruning may delete
        char block[CKPT_BLOCK] = BLOCK_UNSEALED;
        if (pwrite(j.fd, block, sizeof block, 0) != (ssize_t)sizeof block) h5j_fail(&j, "writing %s: %s", j.tmp, strerror(errno));
    }
    h5j_attr_fixed_str(&j, f, "format", CHECKPOINT_FORMAT);
    h5j_attr_i32(&j, f, "format_version", CHECKPOINT_FORMAT_VERSION);
    h5j_attr_i64(&j, f, "step", meta->step);
    h5j_attr_i64(&j, f, "tokens_seen", meta->tokens_seen);
    h5j_attr_u64(&j, f, "samples_seen", meta->samples_seen);
    h5j_attr_u64(&j, f, "seed", meta->seed);
    h5j_attr_fixed_str(&j, f, "manifest", meta->manifest);
    h5j_attr_fixed_str(&j, f, "config", meta->config_json);
    h5j_attr_fixed_str(&j, f, "git_commit", meta->git_commit);
    h5j_attr_fixed_str(&j, f, "created_at", now);
    h5j_attr_u32(&j, f, "meta_crc32", meta_crc(meta, now));
    h5j_attr_fixed_str(&j, f, "run_uid", meta->run_uid);
    h5j_attr_fixed_str(&j, f, "variant", meta->variant);
    h5j_attr_fixed_str(&j, f, "tokenizer", meta->tokenizer_path);
    h5j_attr_u32(&j, f, "identity_crc32", identity_crc(meta));
    write_tokenizer(&j, f, path, meta->tokenizer_path);
    write_family(&j, f, m, "model", m->params);
    write_family(&j, f, m, "m", m->m);
    write_family(&j, f, m, "v", m->v);
    hid_t g = h5j_group(&j, f, "/optimizer");
    h5j_attr_i64(&j, g, "step", meta->adam_t);
    h5j_close(&j, g);
    if (h5j_close_written(&j, f) == 0) {
        if (seal_fd(j.fd, j.tmp, meta->step, err, sizeof err) != 0) { h5j_fail(&j, "%s", err); outdir_discard(d, j.fd, j.tmp); j.fd = -1; }
        else h5j_commit(&j);
    }
    if (j.failed)
        die_input_hint("free space on that file system, or set run.checkpoint_dir to a writable directory; "
                       "the checkpoints written before are intact",
                       "cannot write checkpoint %s: %s (the partial file %s/%s was removed)", path, j.msg, d->path, j.tmp);
}

void checkpoint_write_in(const OutDir *d, const ModelState *m, const CheckpointMeta *meta) {
    char name[64];
    xsnprintf(name, sizeof name, "step_%" PRId64 ".h5", meta->step);
    write_in(d, name, m, meta);
}

void checkpoint_write(const char *path, const ModelState *m, const CheckpointMeta *meta) {
    OutDir d;
    char name[1024], err[1600];
    if (outdir_open_parent(&d, path, 1, name, sizeof name, err, sizeof err) != 0)
        die_input_hint("set run.checkpoint_dir to a writable directory", "cannot write checkpoint %s: %s", path, err);
    write_in(&d, name, m, meta);
    outdir_close(&d);
}

// ---- reading ------------------------------------------------------------------------
typedef struct {
    char path[256];      // without the leading '/'
    int ndim;
    hsize_t dims[2];
    int is_f32;
    char type[32];       // "float32", "float64", "int32", ...
    int has_crc;
    uint32_t crc;        // the stored "crc32" attribute
    float *dest;         // where checkpoint_read puts it (NULL: verify only)
} DsInfo;
typedef struct { DsInfo *v; int n, cap; H5Job *j; } DsList;

static void describe_type(hid_t t, char *buf, size_t n) {
    H5T_class_t c = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    if (c == H5T_FLOAT) snprintf(buf, n, "float%zu", sz * 8);
    else if (c == H5T_INTEGER) snprintf(buf, n, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", sz * 8);
    else if (c == H5T_STRING) snprintf(buf, n, "string");
    else snprintf(buf, n, "HDF5 class %d", (int)c);
}

static int is_tensor_name(const char *name) {
    return !strncmp(name, "model/", 6) || !strncmp(name, "optimizer/m/", 12) || !strncmp(name, "optimizer/v/", 12);
}

// Lists the datasets under /model and /optimizer/{m,v}. Never exits: a failure is
// recorded in the job and stops the iteration (returning -1).
static herr_t visit_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    DsList *L = data;
    H5Job *j = L->j;
    if (info->type != H5L_TYPE_HARD || !is_tensor_name(name)) return 0;
    if (strlen(name) >= sizeof L->v[0].path) return h5j_fail(j, "object name too long: '%.60s...'", name);
    hid_t o = H5J(j, H5Oopen(g, name, H5P_DEFAULT), "opening", name);
    if (o >= 0 && H5Iget_type(o) == H5I_DATASET) {
        if (L->n == MAX_DATASETS) h5j_fail(j, "more than %d datasets", MAX_DATASETS);
        else {
            if (L->n == L->cap) {
                L->cap = L->cap ? 2 * L->cap : 64;
                L->v = xrealloc(L->v, sizeof(DsInfo) * (size_t)L->cap);
            }
            DsInfo *d = &L->v[L->n++];
            memset(d, 0, sizeof *d);
            snprintf(d->path, sizeof d->path, "%s", name);
            hid_t sp = H5J(j, H5Dget_space(o), "reading the shape of", name);
            d->ndim = (int)H5J(j, H5Sget_simple_extent_ndims(sp), "reading the shape of", name);
            if (d->ndim >= 1 && d->ndim <= 2) H5J(j, H5Sget_simple_extent_dims(sp, d->dims, NULL), "reading the shape of", name);
            h5j_close(j, sp);
            hid_t t = H5J(j, H5Dget_type(o), "reading the type of", name);
            if (t >= 0) {
                d->is_f32 = H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 4;
                describe_type(t, d->type, sizeof d->type);
            }
            h5j_close(j, t);
            int64_t crc = 0;
            int r = j->failed ? -1 : h5j_attr_read_i64(j, o, "crc32", &crc);
            d->has_crc = r == 1 && crc >= 0 && crc <= 0xffffffffLL;
            d->crc = (uint32_t)crc;
        }
    }
    h5j_close(j, o);
    return j->failed ? -1 : 0;
}

static int ds_cmp(const void *a, const void *b) { return strcmp(((const DsInfo *)a)->path, ((const DsInfo *)b)->path); }

static DsInfo *ds_find(DsList *L, const char *path) {
    if (!L->n) return NULL;
    DsInfo key;
    if (strlen(path) >= sizeof key.path) return NULL;
    strcpy(key.path, path);
    return bsearch(&key, L->v, (size_t)L->n, sizeof(DsInfo), ds_cmp);
}

static void fmt_shape(char *buf, size_t n, int ndim, const hsize_t *dims) {
    size_t l = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && i < 2 && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%s%llu", i ? "," : "", (unsigned long long)dims[i]);
    if (ndim > 2 && l < n) l += (size_t)snprintf(buf + l, n - l, ",... (%d dimensions)", ndim);
    if (l < n) snprintf(buf + l, n - l, "]");
}

static void spec_dims(const ParamSpec *s, int *ndim, hsize_t dims[2]) {
    if (s->ndim == 1) { *ndim = 1; dims[0] = (hsize_t)s->cols; dims[1] = 0; }
    else { *ndim = 2; dims[0] = (hsize_t)s->rows; dims[1] = (hsize_t)s->cols; }
}

static int same_shape(const DsInfo *d, int nd, const hsize_t *dims) {
    if (d->ndim != nd) return 0;
    for (int k = 0; k < nd; k++) if (d->dims[k] != dims[k]) return 0;
    return 1;
}

#define REFUSED "the model changed; resuming with a different model is refused"

// Every tensor of family `fam` of the configured model must be in the file with its
// shape; marks it used and points it at its place in the state.
static int match_family(DsList *L, unsigned char *used, const ModelState *m, const char *fam, float *base,
                        char *err, size_t n) {
    char path[256], want[64], got[64];
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        family_path(path, sizeof path, fam, s->name);
        int nd; hsize_t dims[2];
        spec_dims(s, &nd, dims);
        fmt_shape(want, sizeof want, nd, dims);
        DsInfo *d = ds_find(L, path + 1);
        if (!d) {
            if (!strcmp(fam, "model"))
                snprintf(err, n, "%s is missing but the configuration expects it with shape %s: " REFUSED, path, want);
            else snprintf(err, n, "%s is missing (expected float32 %s): the checkpoint is incomplete", path, want);
            return LOAD_MODEL;
        }
        used[d - L->v] = 1;
        if (!same_shape(d, nd, dims)) {
            fmt_shape(got, sizeof got, d->ndim, d->dims);
            snprintf(err, n, "%s has shape %s but the configuration expects %s: " REFUSED, path, got, want);
            return LOAD_MODEL;
        }
        if (!d->is_f32) { snprintf(err, n, "%s has type %s but float32 was expected", path, d->type); return LOAD_MODEL; }
        d->dest = base + s->offset;
    }
    return LOAD_OK;
}

// Without a model: every /model/X is a float32 tensor of 1 or 2 dimensions with
// /optimizer/m/X and /optimizer/v/X of the same shape, and nothing else is there.
static int check_structure(DsList *L, char *err, size_t n) {
    int n_model = 0;
    char other[300], shape[64];
    for (int i = 0; i < L->n; i++) {
        const DsInfo *d = &L->v[i];
        if (!d->is_f32 || d->ndim < 1 || d->ndim > 2) {
            fmt_shape(shape, sizeof shape, d->ndim, d->dims);
            snprintf(err, n, "/%s is %s %s; expected a float32 tensor of 1 or 2 dimensions", d->path, d->type, shape);
            return LOAD_DAMAGED;
        }
        if (strncmp(d->path, "model/", 6)) continue;
        n_model++;
        for (int f = 0; f < 2; f++) {
            snprintf(other, sizeof other, "optimizer/%s/%s", f ? "v" : "m", d->path + 6);
            const DsInfo *o = ds_find(L, other);
            if (!o || !same_shape(o, d->ndim, d->dims)) {
                snprintf(err, n, "/%s %s, but /%s has that shape", other, o ? "has another shape" : "is missing", d->path);
                return LOAD_DAMAGED;
            }
        }
    }
    if (n_model == 0) { snprintf(err, n, "no tensors under /model"); return LOAD_DAMAGED; }
    if (L->n != 3 * n_model) {
        snprintf(err, n, "/optimizer holds %d tensors, expected m and v of the %d under /model", L->n - n_model, n_model);
        return LOAD_DAMAGED;
    }
    return LOAD_OK;
}

// Reads every listed tensor (into its place, or into scratch) and compares its CRC-32.
static int read_tensors(H5Job *j, hid_t f, DsList *L, uint64_t file_size, char *err, size_t n) {
    float *scratch = NULL;
    size_t scratch_n = 0;
    int kind = LOAD_OK;
    for (int i = 0; i < L->n && kind == LOAD_OK && !j->failed; i++) {
        DsInfo *d = &L->v[i];
        if (!d->has_crc) { snprintf(err, n, "/%s has no crc32 attribute", d->path); kind = LOAD_DAMAGED; break; }
        uint64_t numel = d->dims[0];
        if (d->ndim == 2) numel = d->dims[1] && numel > UINT64_MAX / d->dims[1] ? UINT64_MAX : numel * d->dims[1];
        if (numel > file_size / 4) {   // stored contiguous and uncompressed: the bytes must be in the file
            snprintf(err, n, "/%s claims %" PRIu64 " elements, more than the %" PRIu64 "-byte file holds", d->path, numel, file_size);
            kind = LOAD_DAMAGED;
            break;
        }
        float *dst = d->dest;
        if (!dst) {
            if (numel > scratch_n) { free(scratch); scratch_n = numel; scratch = xmalloc(scratch_n * sizeof(float)); }
            dst = scratch;
        }
        char p[260];
        snprintf(p, sizeof p, "/%s", d->path);
        hid_t ds = H5J(j, H5Dopen2(f, p, H5P_DEFAULT), "opening", p);
        if (numel) H5J(j, H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst), "reading", p);
        h5j_close(j, ds);
        if (j->failed) break;
        uint32_t crc = crc32_update(0, dst, numel * sizeof(float));
        if (crc != d->crc) {
            snprintf(err, n, "%s: checksum mismatch (stored crc32 %08x, computed %08x)", p, d->crc, crc);
            kind = LOAD_DAMAGED;
        }
    }
    free(scratch);
    return kind;
}

// format and format_version of an open file.
static int check_format(H5Job *j, hid_t f, char *err, size_t n) {
    char *fmt = NULL;
    int r = h5j_attr_read_str(j, f, "format", &fmt, 0);
    if (r < 0) return LOAD_DAMAGED;
    if (r == 0 || strcmp(fmt, CHECKPOINT_FORMAT)) {
        snprintf(err, n, "root attribute 'format' is %s%.60s%s, expected \"" CHECKPOINT_FORMAT "\": not a boost-c checkpoint",
                 fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "");
        free(fmt);
        return LOAD_FORMAT;
    }
    free(fmt);
    int64_t v = 0;
    r = h5j_attr_read_i64(j, f, "format_version", &v);
    if (r < 0) return LOAD_DAMAGED;
    if (r == 0) {
        snprintf(err, n, "root attribute 'format_version' is missing (expected the integer %d)", CHECKPOINT_FORMAT_VERSION);
        return LOAD_FORMAT;
    }
    if (v == 1) {
        snprintf(err, n, "format_version is 1: written by an older build, without checksums, so it cannot be verified; "
                 "this build reads format_version %d only (resume it with the build that wrote it — its git_commit "
                 "attribute — or start a new run)", CHECKPOINT_FORMAT_VERSION);
        return LOAD_FORMAT;
    }
    if (v != CHECKPOINT_FORMAT_VERSION) {
        snprintf(err, n, "format_version is %" PRId64 " but this build reads format_version %d", v, CHECKPOINT_FORMAT_VERSION);
        return LOAD_FORMAT;
    }
    return LOAD_OK;
}

// The metadata attributes, verified against meta_crc32.
static int read_meta(H5Job *j, hid_t f, CheckpointMeta *meta, char *err, size_t n) {
    const char *missing = NULL;
    int r;
    if ((r = h5j_attr_read_i64(j, f, "step", &meta->step)) <= 0) missing = "step";
    else if ((r = h5j_attr_read_i64(j, f, "tokens_seen", &meta->tokens_seen)) <= 0) missing = "tokens_seen";
    else if ((r = h5j_attr_read_u64(j, f, "samples_seen", &meta->samples_seen)) <= 0) missing = "samples_seen";
    else if ((r = h5j_attr_read_u64(j, f, "seed", &meta->seed)) <= 0) missing = "seed";
    if (r < 0) return LOAD_DAMAGED;
    if (missing) { snprintf(err, n, "root attribute '%s' (integer) is missing", missing); return LOAD_DAMAGED; }
    hid_t g = H5J(j, H5Gopen2(f, "/optimizer", H5P_DEFAULT), "opening", "/optimizer");
    r = g < 0 ? -1 : h5j_attr_read_i64(j, g, "step", &meta->adam_t);
    h5j_close(j, g);
    if (r < 0) return LOAD_DAMAGED;
    if (r == 0) { snprintf(err, n, "attribute /optimizer step (integer) is missing"); return LOAD_DAMAGED; }
    char *created = NULL;
    int64_t stored = -1;
    const char *names[4] = { "manifest", "config", "git_commit", "created_at" };
    char **dst[4] = { &meta->manifest, &meta->config_json, &meta->git_commit, &created };
    for (int i = 0; i < 4; i++) {
        r = h5j_attr_read_str(j, f, names[i], dst[i], 0);
        if (r < 0) { free(created); return LOAD_DAMAGED; }
        if (r == 0) {
            snprintf(err, n, "root attribute '%s' is missing or not a fixed-length string", names[i]);
            free(created);
            return LOAD_DAMAGED;
        }
    }
    r = h5j_attr_read_i64(j, f, "meta_crc32", &stored);
    uint32_t crc = meta_crc(meta, created);
    free(created);
    if (r < 0) return LOAD_DAMAGED;
    if (r == 0) { snprintf(err, n, "root attribute 'meta_crc32' is missing"); return LOAD_DAMAGED; }
    if (stored != (int64_t)crc) {
        snprintf(err, n, "the metadata (step, data position, manifest, configuration) do not match their checksum "
                 "(stored meta_crc32 %08" PRIx64 ", computed %08x)", (uint64_t)stored, crc);
        return LOAD_DAMAGED;
    }
    // The identity (run uid, variant, tokenizer): absent in files written before it ("").
    const char *inames[3] = { "run_uid", "variant", "tokenizer" };
    char **idst[3] = { &meta->run_uid, &meta->variant, &meta->tokenizer_path };
    int present = 0;
    for (int i = 0; i < 3; i++) {
        r = h5j_attr_read_str(j, f, inames[i], idst[i], 0);
        if (r < 0) return LOAD_DAMAGED;
        present += r > 0;
        if (r == 0) *idst[i] = xstrdup("");
    }
    if (present) {
        r = h5j_attr_read_i64(j, f, "identity_crc32", &stored);
        if (r < 0) return LOAD_DAMAGED;
        crc = identity_crc(meta);
        if (present < 3 || r == 0 || stored != (int64_t)crc) {
            snprintf(err, n, "the identity attributes (run_uid, variant, tokenizer) do not match their checksum identity_crc32");
            return LOAD_DAMAGED;
        }
    }
    return LOAD_OK;
}

// The group /tokenizer when the file has one: its bytes against their crc32 and sha256.
// LOAD_OK with meta's tokenizer_bin (NULL when there is no group), or why not in err.
static int read_tokenizer(H5Job *j, hid_t f, uint64_t file_size, CheckpointMeta *meta, char *err, size_t n) {
    int64_t has = H5J(j, H5Lexists(f, TOKENIZER_GROUP + 1, H5P_DEFAULT), "looking up", TOKENIZER_GROUP);
    if (has <= 0) return has < 0 ? LOAD_DAMAGED : LOAD_OK;   // synthetic data, or written before it was embedded
    int kind = LOAD_DAMAGED;
    hid_t g = H5J(j, H5Gopen2(f, TOKENIZER_GROUP, H5P_DEFAULT), "opening", TOKENIZER_GROUP);
    hid_t ds = -1, sp = -1, t = -1;
    char *fmt = NULL, *sha = NULL;
    uint8_t *buf = NULL;
    int64_t stored = -1;
    hsize_t dims[1] = {0};
    if (g < 0) goto done;
    int r1 = h5j_attr_read_str(j, g, "format", &fmt, 0), r2 = h5j_attr_read_str(j, g, "sha256", &sha, 0);
    if (r1 < 0 || r2 < 0) goto done;
    if (!r1 || strcmp(fmt, TOKENIZER_FORMAT) || !r2 || strlen(sha) != 64) {
        snprintf(err, n, TOKENIZER_GROUP " lacks its attributes format \"" TOKENIZER_FORMAT "\" and sha256 (64 hex digits)");
        goto done;
    }
    if (H5J(j, H5Lexists(f, TOKENIZER_DATASET + 1, H5P_DEFAULT), "looking up", TOKENIZER_DATASET) <= 0) {
        if (!j->failed) snprintf(err, n, TOKENIZER_DATASET " is missing");
        goto done;
    }
    ds = H5J(j, H5Dopen2(f, TOKENIZER_DATASET, H5P_DEFAULT), "opening", TOKENIZER_DATASET);
    sp = H5J(j, H5Dget_space(ds), "reading the shape of", TOKENIZER_DATASET);
    t = H5J(j, H5Dget_type(ds), "reading the type of", TOKENIZER_DATASET);
    if (j->failed) goto done;
    if (H5Sget_simple_extent_ndims(sp) != 1 || H5Tget_class(t) != H5T_INTEGER || H5Tget_size(t) != 1 ||
        H5J(j, H5Sget_simple_extent_dims(sp, dims, NULL), "reading the shape of", TOKENIZER_DATASET) < 0 ||
        dims[0] == 0 || dims[0] > TOKENIZER_MAX_BYTES || dims[0] > file_size) {
        if (!j->failed) snprintf(err, n, TOKENIZER_DATASET ": expected the bytes of a tokenizer.bin (uint8, one dimension, "
                                 "1 to %zu bytes, within the file)", TOKENIZER_MAX_BYTES);
        goto done;
    }
    buf = xmalloc((size_t)dims[0]);
    if (H5J(j, H5Dread(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), "reading", TOKENIZER_DATASET) < 0) goto done;
    int r = h5j_attr_read_i64(j, ds, "crc32", &stored);
    if (r < 0) goto done;
    uint32_t crc = crc32_update(0, buf, (size_t)dims[0]);
    if (r == 0 || stored != (int64_t)crc) {
        snprintf(err, n, TOKENIZER_DATASET ": checksum mismatch (stored crc32 %08" PRIx64 ", computed %08x)",
                 (uint64_t)(r ? stored : 0), crc);
        goto done;
    }
    char hex[65];
    sha256_hex(buf, (size_t)dims[0], hex);
    if (strcmp(hex, sha)) { snprintf(err, n, TOKENIZER_DATASET ": its sha256 is %s but the group says %.64s", hex, sha); goto done; }
    meta->tokenizer_bin = buf;
    meta->tokenizer_bin_n = (size_t)dims[0];
    memcpy(meta->tokenizer_sha256, hex, sizeof hex);
    buf = NULL;
    kind = LOAD_OK;
done:
    h5j_close(j, t); h5j_close(j, sp); h5j_close(j, ds); h5j_close(j, g);
    free(fmt); free(sha); free(buf);
    return kind;
}

// One pass over a checkpoint: open, format, list the tensors, match them against the
// model (m) or check their structure (m NULL: verify only), read and checksum every
// tensor, read and checksum the metadata. Returns LOAD_*; err says what, without the
// file name. Every HDF5 object is closed before it returns.
static int load(const char *path, ModelState *m, CheckpointMeta *meta_out, char *err, size_t n) {
    H5Job j;
    h5j_begin(&j, path);
    err[0] = 0;
    int kind = LOAD_OK;
    DsList L = { .j = &j };
    unsigned char *used = NULL;
    CheckpointMeta meta = {0};
    struct stat st;
    uint64_t file_size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;

    int64_t block_step = -1;
    hid_t f = -1;
    if ((kind = check_block(path, &block_step, err, n)) != LOAD_OK) goto done;   // before HDF5 reads a byte
    f = h5j_open_read(&j, path);
    if (f < 0) { kind = LOAD_UNREADABLE; goto done; }
    if ((kind = check_format(&j, f, err, n)) != LOAD_OK) goto done;
    if (H5J(&j, H5Lvisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, visit_cb, &L), "listing the tensors of", "the file") < 0) goto done;
    if (L.n) qsort(L.v, (size_t)L.n, sizeof(DsInfo), ds_cmp);
    if (m) {
        used = xcalloc((size_t)L.n + 1, 1);
        float *bases[3] = { m->params, m->m, m->v };
        const char *fams[3] = { "model", "m", "v" };
        for (int k = 0; k < 3 && kind == LOAD_OK; k++) kind = match_family(&L, used, m, fams[k], bases[k], err, n);
        for (int i = 0; i < L.n && kind == LOAD_OK; i++) {
            if (used[i]) continue;
            char got[64];
            fmt_shape(got, sizeof got, L.v[i].ndim, L.v[i].dims);
            snprintf(err, n, "/%s (shape %s) is not part of the configured model: " REFUSED, L.v[i].path, got);
            kind = LOAD_MODEL;
        }
    } else {
        kind = check_structure(&L, err, n);
    }
    if (kind != LOAD_OK) goto done;
    if ((kind = read_tensors(&j, f, &L, file_size, err, n)) != LOAD_OK) goto done;
    kind = read_meta(&j, f, &meta, err, n);
    if (kind == LOAD_OK) kind = read_tokenizer(&j, f, file_size, &meta, err, n);
    if (kind == LOAD_OK && meta.step != block_step) {
        snprintf(err, n, "the step attribute (%" PRId64 ") differs from the checksum block's (%" PRId64 ")", meta.step, block_step);
        kind = LOAD_DAMAGED;
    }

done:
    h5j_close(&j, f);   // the strong close degree closes anything of the file still open
    if (j.failed) {
        if (kind != LOAD_UNREADABLE) kind = LOAD_DAMAGED;
        snprintf(err, n, "%s", j.msg);
    }
    free(L.v); free(used);
    if (kind == LOAD_OK && meta_out) *meta_out = meta;
    else checkpoint_meta_free(&meta);
    return kind;
}

int checkpoint_read_meta(const char *path, CheckpointMeta *out, char *why, size_t n) {
    return load(path, NULL, out, why, n) == LOAD_OK;
}

void checkpoint_read(const char *path, ModelState *m, CheckpointMeta *out) {
    char err[1500];
    CheckpointMeta meta;
    int kind = load(path, m, &meta, err, sizeof err);
    if (kind == LOAD_DAMAGED)
        die_input_hint("the file was damaged after it was written (disk, copy); a resumed run (--resume) falls back "
                       "to the newest checkpoint that verifies",
                       "%s: the checkpoint is damaged: %s", path, err);
    if (kind == LOAD_UNREADABLE)
        die_input_hint("a resumed run (--resume) falls back to the newest checkpoint that verifies", "%s: %s", path, err);
    if (kind != LOAD_OK) die_input("%s: %s", path, err);
    if (out) *out = meta;
    else checkpoint_meta_free(&meta);
}

int checkpoint_verify(const char *path, char *why, size_t n) {
    char err[1500];
    int kind = load(path, NULL, NULL, err, sizeof err);
    if (kind != LOAD_OK) snprintf(why, n, "%s%.600s", kind == LOAD_DAMAGED ? "damaged: " : "", err);
    return kind == LOAD_OK;
}

void checkpoint_meta_free(CheckpointMeta *meta) {
    free(meta->manifest); free(meta->config_json); free(meta->git_commit);
    free(meta->run_uid); free(meta->variant); free(meta->tokenizer_path); free(meta->tokenizer_bin);
    meta->manifest = meta->config_json = meta->git_commit = NULL;
    meta->run_uid = meta->variant = meta->tokenizer_path = NULL;
    meta->tokenizer_bin = NULL;
    meta->tokenizer_bin_n = 0;
    meta->tokenizer_sha256[0] = 0;
}

void checkpoint_path(char *buf, size_t n, const char *dir, int64_t step) {
    xsnprintf(buf, n, "%s/step_%" PRId64 ".h5", dir, step);
}

// ---- listing ----------------------------------------------------------------------
// "step_<N>.h5" (tmp = 0) or a writer's leftover "step_<N>.h5.tmp.<pid>" / the older
// "step_<N>.h5.tmp" (tmp = 1) -> N, and *pid (0 when the name has none); -1 if neither.
static int64_t parse_name(const char *name, int tmp, long *pid) {
    if (strncmp(name, "step_", 5) != 0) return -1;
    const char *p = name + 5;
    if (*p < '0' || *p > '9') return -1;
    int64_t n = 0;
    while (*p >= '0' && *p <= '9') { if (n > INT64_MAX / 10 - 10) return -1; n = n * 10 + (*p++ - '0'); }
    if (pid) *pid = 0;
    if (!tmp) return strcmp(p, ".h5") == 0 ? n : -1;
    if (strcmp(p, ".h5.tmp") == 0) return n;
    long w;
    if (strncmp(p, ".h5.tmp.", 8) == 0 && file_is_tmp_name(p, &w) && strchr(p + 8, '.') == NULL) {
        if (pid) *pid = w;
        return n;
    }
    return -1;
}

int64_t checkpoint_name_step(const char *name) { return parse_name(name, 0, NULL); }

// The checksum block verifies (the whole file is read, HDF5 is not involved) and names
// step N. 1, or 0 with why. The entry is opened in its folder without following a link.
static int looks_complete(const OutDir *d, const char *name, int64_t step, char *why, size_t n) {
    int64_t s = -1;
    char err[1000];
    int fd = outdir_open_read(d, name), kind;
    if (fd < 0) { snprintf(err, sizeof err, "cannot read it: %s", errno == ELOOP ? "it is a symbolic link" : strerror(errno)); kind = LOAD_UNREADABLE; }
    else { kind = check_block_fd(fd, &s, err, sizeof err); close(fd); }
    if (kind != LOAD_OK) { snprintf(why, n, "%s%.600s", kind == LOAD_DAMAGED ? "damaged: " : "", err); return 0; }
    if (s != step) { snprintf(why, n, "its step (%" PRId64 ") does not match the file name", s); return 0; }
    return 1;
}

static int entry_cmp(const void *a, const void *b) {
    int64_t x = ((const CheckpointEntry *)a)->step, y = ((const CheckpointEntry *)b)->step;
    return x < y ? -1 : x > y;
}

static const char *base_name(const char *path) { const char *s = strrchr(path, '/'); return s ? s + 1 : path; }

// All step_<N>.h5 names (tmp = 0) or leftovers (tmp = 1, their pids in *pids) of the folder,
// sorted ascending. A checkpoint name that is a symbolic link is skipped with a warning: a
// run's checkpoints are files in its own folder (a link could resume it from another run's).
// A folder that cannot be read is a warning (0 entries), never fatal.
static int scan(const OutDir *d, int tmp, CheckpointEntry **out, long **pids) {
    *out = NULL;
    if (pids) *pids = NULL;
    int dfd = dup(d->fd);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir) {
        fprintf(stderr, "warning: cannot list checkpoint directory %s: %s\n", d->path, strerror(errno));
        if (dfd >= 0) close(dfd);
        return 0;
    }
    rewinddir(dir);
    int n = 0, cap = 0;
    CheckpointEntry *v = NULL;
    long *pv = NULL;
    struct dirent *e;
    while ((errno = 0, e = readdir(dir))) {
        long pid = 0;
        int64_t s = parse_name(e->d_name, tmp, &pid);
        if (s < 0) continue;
        struct stat st;
        if (!tmp && fstatat(d->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
            fprintf(stderr, "warning: skipping checkpoint %s/%s: a symbolic link (a run's checkpoints are files in its own "
                    "folder, never links)\n", d->path, e->d_name);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            v = xrealloc(v, sizeof *v * (size_t)cap);
            pv = xrealloc(pv, sizeof *pv * (size_t)cap);
        }
        v[n].step = s;
        pv[n] = pid;
        if (snprintf(v[n].path, sizeof v[n].path, "%s/%s", d->path, e->d_name) >= (int)sizeof v[n].path) continue;
        n++;
    }
    if (errno) fprintf(stderr, "warning: reading checkpoint directory %s: %s\n", d->path, strerror(errno));
    closedir(dir);
    if (n && !pids) qsort(v, (size_t)n, sizeof *v, entry_cmp);   // (leftovers are not sorted: their order is free)
    *out = v;
    if (pids) *pids = pv;
    else free(pv);
    return n;
}

int checkpoint_list_in(const OutDir *d, CheckpointEntry **out) {
    CheckpointEntry *all;
    char why[1300];
    int n = scan(d, 0, &all, NULL), k = 0;
    for (int i = 0; i < n; i++) {
        if (looks_complete(d, base_name(all[i].path), all[i].step, why, sizeof why)) all[k++] = all[i];
        else fprintf(stderr, "warning: skipping checkpoint %s: %s\n", all[i].path, why);
    }
    if (k == 0) { free(all); all = NULL; }
    *out = all;
    return k;
}

// checkpoint_verify, and the step attribute must be the N of the name.
static int verify_step(const OutDir *d, const char *path, int64_t step, char *why, size_t n) {
    if (!looks_complete(d, base_name(path), step, why, n)) return 0;
    if (!checkpoint_verify(path, why, n)) return 0;
    return 1;
}

// A checkpoint that verifies (checkpoint_verify), holds the step of its name and, when
// run_uid is given, belongs to that run (its run_uid attribute): 1 and *meta (when not NULL);
// else 0 and why. A file written before checkpoints stored their run names none: accepted,
// with a warning that its owner cannot be checked.
static int verify_own(const OutDir *d, const char *path, int64_t step, const char *run_uid, CheckpointMeta *meta, char *why, size_t n) {
    if (!looks_complete(d, base_name(path), step, why, n)) return 0;
    CheckpointMeta m = {0};
    char err[1500];
    int kind = load(path, NULL, &m, err, sizeof err);
    if (kind != LOAD_OK) { snprintf(why, n, "%s%.600s", kind == LOAD_DAMAGED ? "damaged: " : "", err); return 0; }
    int ok = 1;
    if (m.step != step) {
        snprintf(why, n, "its step (%" PRId64 ") does not match the file name", m.step);
        ok = 0;
    } else if (run_uid && m.run_uid[0] && strcmp(m.run_uid, run_uid)) {
        snprintf(why, n, "it belongs to run %.255s (its run_uid), not to run %.255s: a run resumes only from its own "
                 "checkpoints (move it back to its run's folder)", m.run_uid, run_uid);
        ok = 0;
    } else if (run_uid && !m.run_uid[0]) {
        fprintf(stderr, "warning: %s names no run (written before checkpoints stored their run uid): that it belongs to "
                "run %s cannot be checked\n", path, run_uid);
    }
    if (ok && meta) *meta = m;
    else checkpoint_meta_free(&m);
    return ok;
}

int checkpoint_latest_of_run_in(const OutDir *d, const char *run_uid, int64_t max_step, char *path, size_t n,
                                int64_t *step, CheckpointMeta *meta, CheckpointSkip **skipped, int *n_skipped) {
    CheckpointEntry *all;
    int cnt = scan(d, 0, &all, NULL), found = 0, ns = 0;
    CheckpointSkip *sk = NULL;
    for (int i = cnt - 1; i >= 0 && !found; i--) {   // newest first: stop at the first good one
        if (all[i].step > max_step) continue;
        CheckpointSkip s = { .step = all[i].step };
        snprintf(s.path, sizeof s.path, "%s", all[i].path);
        if (!verify_own(d, all[i].path, all[i].step, run_uid, meta, s.reason, sizeof s.reason)) {
            fprintf(stderr, "warning: skipping checkpoint %s: %s\n", s.path, s.reason);
            sk = xrealloc(sk, sizeof *sk * (size_t)(ns + 1));
            sk[ns++] = s;
            continue;
        }
        xsnprintf(path, n, "%s", all[i].path);
        if (step) *step = all[i].step;
        found = 1;
        if (ns) fprintf(stderr, "warning: falling back to %s (step %" PRId64 "), the newest checkpoint that verifies%s; "
                                "%d newer one%s skipped\n", path, all[i].step, run_uid ? " and is this run's" : "", ns,
                        ns == 1 ? "" : "s");
    }
    free(all);
    if (skipped) *skipped = sk;
    else free(sk);
    if (n_skipped) *n_skipped = ns;
    return found;
}

// A folder given by path, for reading (a link to it is followed: a folder the user names);
// 0 when it does not exist (nothing listed), -1 with a warning when it cannot be opened.
static int open_for_listing(OutDir *d, const char *dir) {
    d->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(d->path, sizeof d->path, "%s", dir);
    if (d->fd >= 0) return 1;
    if (errno != ENOENT) fprintf(stderr, "warning: cannot list checkpoint directory %s: %s\n", dir, strerror(errno));
    return 0;
}

int checkpoint_list(const char *dir, CheckpointEntry **out) {
    OutDir d;
    *out = NULL;
    if (!open_for_listing(&d, dir)) return 0;
    int n = checkpoint_list_in(&d, out);
    outdir_close(&d);
    return n;
}

int checkpoint_latest_good(const char *dir, char *path, size_t n, int64_t *step,
                           CheckpointSkip **skipped, int *n_skipped) {
    return checkpoint_latest_of_run(dir, NULL, INT64_MAX, path, n, step, NULL, skipped, n_skipped);
}

int checkpoint_latest_good_in(const OutDir *d, char *path, size_t n, int64_t *step,
                              CheckpointSkip **skipped, int *n_skipped) {
    return checkpoint_latest_of_run_in(d, NULL, INT64_MAX, path, n, step, NULL, skipped, n_skipped);
}

int checkpoint_latest_of_run(const char *dir, const char *run_uid, int64_t max_step, char *path, size_t n, int64_t *step,
                             CheckpointMeta *meta, CheckpointSkip **skipped, int *n_skipped) {
    OutDir d;
    if (skipped) *skipped = NULL;
    if (n_skipped) *n_skipped = 0;
    if (!open_for_listing(&d, dir)) return 0;
    int found = checkpoint_latest_of_run_in(&d, run_uid, max_step, path, n, step, meta, skipped, n_skipped);
    outdir_close(&d);
    return found;
}

static int pid_gone(long pid) {
    return pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int checkpoint_written_here(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);   // (a symlink is never ours)
    if (fd < 0) return 0;
    int ours = starts_with_magic(fd);
    close(fd);
    return ours;
}

int checkpoint_prune_in(const OutDir *d, int keep_last) {
    CHECK(keep_last >= 1, "checkpoint_prune: keep_last must be >= 1 (got %d)", keep_last);
    CheckpointEntry *all;
    int n = scan(d, 0, &all, NULL), good = 0, removed = 0;
    int64_t cut = INT64_MIN, newest = INT64_MIN;   // keep steps >= cut
    char why[1300];
    for (int i = n - 1; i >= 0 && good < keep_last; i--) {
        if (!verify_step(d, all[i].path, all[i].step, why, sizeof why)) {
            fprintf(stderr, "warning: checkpoint %s does not verify (%s); it is not counted as one of the %d kept\n",
                    all[i].path, why, keep_last);
            continue;
        }
        if (good++ == 0) newest = all[i].step;
        cut = all[i].step;
    }
    if (good < keep_last) cut = INT64_MIN;          // fewer good ones than wanted: delete none of them
    for (int i = 0; i < n && all[i].step < cut; i++) {
        // Only a file that says it is a boost-c checkpoint (its first bytes) is deleted: a
        // name like step_3.h5 proves nothing (a run folder outside checkpoints/, a user's file).
        int r = outdir_remove(d, base_name(all[i].path), owned_at, why, sizeof why);
        if (r > 0) removed++;
        else if (r == 0) fprintf(stderr, "warning: %s is named like a checkpoint but is not one written by boost-c (its first "
                                 "bytes); left alone\n", all[i].path);
        else fprintf(stderr, "warning: cannot remove old checkpoint: %s\n", why);
    }
    free(all);
    long *pids;
    n = scan(d, 1, &all, &pids);
    for (int i = 0; i < n; i++) {
        if (!((newest != INT64_MIN && all[i].step < newest) || pid_gone(pids[i]))) continue;
        int r = outdir_remove(d, base_name(all[i].path), owned_at, why, sizeof why);
        if (r > 0) removed++;
        else fprintf(stderr, "warning: unfinished checkpoint %s: %s\n", all[i].path, r == 0 ? why : why);
    }
    free(all); free(pids);
    char err[1600];
    if (removed && outdir_fsync(d, err, sizeof err) != 0) fprintf(stderr, "warning: %s\n", err);
    return removed;
}

int checkpoint_prune(const char *dir, int keep_last) {
    OutDir d;
    char err[1600];
    if (outdir_open(&d, dir, 0, err, sizeof err) != 0) {
        if (errno != ENOENT) fprintf(stderr, "warning: not pruning checkpoints: %s\n", err);
        return 0;
    }
    int removed = checkpoint_prune_in(&d, keep_last);
    outdir_close(&d);
    return removed;
}
