// shard.c — token shards: 64-byte header + uint16/uint32 tokens, written atomically,
// opened with mmap and validated in full (docs/data-format.md).
#include "data.h"
#include <limits.h>
#include "cache_hint.h"
#include "../core/check.h"
#include "../core/fileio.h"
#include <fcntl.h>
#include <libgen.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARD_MAGIC "BOOSTTOK"
#define SHARD_VERSION 1u
#define SHARD_HEADER 64

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

void shard_write(const char *path, const int32_t *tokens, uint64_t n, int vocab_size) {
    CHECK(vocab_size >= 1, "shard_write %s: vocab_size %d", path, vocab_size);
    int width = vocab_size <= 65536 ? 2 : 4;
    uint8_t hdr[SHARD_HEADER] = {0};
    memcpy(hdr, SHARD_MAGIC, 8);
    put_u32(hdr + 8, SHARD_VERSION);
    put_u32(hdr + 12, (uint32_t)vocab_size);
    put_u64(hdr + 16, n);
    put_u32(hdr + 24, (uint32_t)width);
    put_u32(hdr + 28, 0);
    put_u64(hdr + 32, SHARD_HEADER);
    char tmp[1200];
    FILE *f = file_atomic_open(path, tmp, sizeof tmp);
    file_atomic_write(f, hdr, SHARD_HEADER, tmp);
    enum { BLK = 1 << 16 };
    uint8_t *buf = xmalloc((size_t)BLK * 4);
    for (uint64_t i = 0; i < n; i += BLK) {
        size_t m = n - i < BLK ? (size_t)(n - i) : BLK;
        for (size_t k = 0; k < m; k++) {
            int32_t t = tokens[i + k];
            CHECK(t >= 0 && t < vocab_size, "shard_write %s: token %d at %llu outside [0, %d)",
                  path, t, (unsigned long long)(i + k), vocab_size);
            if (width == 2) { buf[2 * k] = (uint8_t)t; buf[2 * k + 1] = (uint8_t)(t >> 8); }
            else put_u32(buf + 4 * k, (uint32_t)t);
        }
        file_atomic_write(f, buf, (size_t)width * m, tmp);
    }
    free(buf);
    file_atomic_commit(f, tmp, path);
}

// exit 2 through die_input_hint (so a process that owns results records it): the shard,
// what is wrong, and how to rebuild it.
__attribute__((noreturn, format(printf, 2, 3)))
static void bad_shard(const char *path, const char *fmt, ...) {
    char msg[1200], hint[PATH_MAX + 1024];
    va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
    data_damage_hint(hint, sizeof hint, path, "shard");   // (never "rm -rf <a user's folder>": cache_hint.h)
    die_input_hint(hint, "%s: %s", path, msg);
}

// The problem of a header `h` of a file of `size` bytes (msg), or NULL; fills vocab, n, width.
static const char *header_problem(const uint8_t *h, uint64_t size, uint32_t *vocab_out, uint64_t *n_out,
                                  uint32_t *width_out, char *msg, size_t cap) {
    if (size < SHARD_HEADER) {
        snprintf(msg, cap, "file is %llu bytes, shorter than the %d-byte header; expected a BOOSTTOK token shard",
                 (unsigned long long)size, SHARD_HEADER);
        return msg;
    }
    if (size > SHARD_MAX_BYTES) {
        snprintf(msg, cap, "file is %llu bytes; token shards are at most %llu bytes", (unsigned long long)size, SHARD_MAX_BYTES);
        return msg;
    }
    if (memcmp(h, SHARD_MAGIC, 8) != 0) {
        snprintf(msg, cap, "not a token shard: magic is \"%.8s\", expected \"" SHARD_MAGIC "\"", (const char *)h);
        return msg;
    }
    uint32_t ver = get_u32(h + 8), vocab = get_u32(h + 12), width = get_u32(h + 24);
    uint64_t n = get_u64(h + 16), hb = get_u64(h + 32);
    if (ver != SHARD_VERSION) { snprintf(msg, cap, "shard format version %u, expected %u", ver, SHARD_VERSION); return msg; }
    if (hb != SHARD_HEADER) { snprintf(msg, cap, "header_bytes %llu, expected %d", (unsigned long long)hb, SHARD_HEADER); return msg; }
    if (vocab < 1 || vocab > MAX_TOKENIZER_VOCAB) {
        snprintf(msg, cap, "vocab_size %u, expected 1..%d", vocab, MAX_TOKENIZER_VOCAB);
        return msg;
    }
    uint32_t want_w = vocab <= 65536 ? 2 : 4;
    if (width != want_w) {
        snprintf(msg, cap, "token width %u bytes, expected %u for vocab_size %u", width, want_w, vocab);
        return msg;
    }
    if (n > (size - SHARD_HEADER) / width || size != SHARD_HEADER + n * width) {
        snprintf(msg, cap, "file is %llu bytes, but the header says %llu tokens x %u bytes after the %d-byte header "
                 "(truncated or padded)", (unsigned long long)size, (unsigned long long)n, width, SHARD_HEADER);
        return msg;
    }
    *vocab_out = vocab; *n_out = n; *width_out = width;
    return NULL;
}

// Opens a regular file (O_NONBLOCK: a FIFO must not block the open); -1 and why otherwise.
static int open_regular(const char *path, struct stat *st, char *why, size_t n) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) { snprintf(why, n, "cannot open token shard: %s", strerror(errno)); return -1; }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(why, n, "not a regular file (a token shard is a file)");
        close(fd);
        return -1;
    }
    return fd;
}

int shard_peek(const char *path, int *vocab, uint64_t *n_tokens, char *why, size_t n) {
    struct stat st;
    char msg[400];
    int fd = open_regular(path, &st, msg, sizeof msg);
    if (fd < 0) { snprintf(why, n, "%s: %s", path, msg); return 0; }
    uint8_t h[SHARD_HEADER] = {0};
    ssize_t k = pread(fd, h, sizeof h, 0);
    close(fd);
    uint32_t v, w;
    uint64_t cnt;
    if (k < 0 || header_problem(h, (uint64_t)st.st_size, &v, &cnt, &w, msg, sizeof msg)) {
        snprintf(why, n, "%s: %s", path, k < 0 ? strerror(errno) : msg);
        return 0;
    }
    *vocab = (int)v; *n_tokens = cnt;
    return 1;
}

void shard_open(TokenShard *s, const char *path) {
    memset(s, 0, sizeof *s);
    xsnprintf(s->path, sizeof s->path, "%s", path);
    struct stat st;
    char msg[400];
    int fd = open_regular(path, &st, msg, sizeof msg);
    if (fd < 0)
        die_input_hint("run build/prepare --dataset NAME --vocab N (or the training run) to create it", "%s: %s", path, msg);
    uint64_t size = (uint64_t)st.st_size;
    uint8_t head[SHARD_HEADER] = {0};
    ssize_t k = pread(fd, head, sizeof head, 0);
    CHECK_ERRNO(k < 0, path);
    uint32_t vocab, width;
    uint64_t n;
    if (header_problem(head, size, &vocab, &n, &width, msg, sizeof msg)) { close(fd); bad_shard(path, "%s", msg); }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK_ERRNO(map == MAP_FAILED, path);
    CHECK_ERRNO(close(fd) != 0, path);
    const uint8_t *h = map;
    s->vocab_size = (int)vocab;
    s->n_tokens = n;
    s->token_bytes = (int)width;
    s->tokens = h + SHARD_HEADER;
    s->map = map; s->map_len = (size_t)size;
    // every token < vocab (one parallel pass, first bad position reported)
    uint64_t bad = UINT64_MAX;
    #pragma omp parallel for schedule(static) reduction(min:bad)
    for (uint64_t i = 0; i < n; i++)
        if ((uint32_t)shard_token(s, i) >= vocab && i < bad) bad = i;
    if (bad != UINT64_MAX)
        bad_shard(path, "token %u at position %llu is out of range; expected every token < vocab_size %u",
                  (uint32_t)shard_token(s, bad), (unsigned long long)bad, vocab);
}

void shard_close(TokenShard *s) {
    if (s->map) CHECK_ERRNO(munmap(s->map, s->map_len) != 0, s->path);
    memset(s, 0, sizeof *s);
}
