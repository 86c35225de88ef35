// dataset.c — turn `data.dataset` into a cached tokenizer + train/val token shards.
//
//   kjv               King James Bible from Debian's bible-kjv (`bible -f Gen1:1-Rev22:21`),
//                     verse references ("Ge1:1 ") stripped: one verse per line.
//   text:PATH         any file (UTF-8 expected; any bytes work).
//   tinyshakespeare   downloaded once (curl/wget) into <cache_dir>/downloads/.
//   synthetic         uniform random tokens over the full vocabulary, no tokenizer.
// Cache entry: <cache_dir>/<name>-v<vocab>-<hash8>/ with prepared.ok written last.
#include "data.h"
#include "../core/check.h"
#include "../core/fileio.h"
#include "../core/rng.h"
#include "../core/timer.h"
#include "../core/utf8.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// Progress lines ("data: reading kjv ..."): from one process only (dataset_set_quiet).
static int g_data_quiet;
void dataset_set_quiet(int quiet) { g_data_quiet = quiet; }
__attribute__((format(printf, 1, 2)))
static void data_log(const char *fmt, ...) {
    if (g_data_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

#define DATA_FORMAT_VERSION 1   // bump when pre-tokenizer, training or shard layout change
#define TINYSHAKESPEARE_URL "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
#define MAX_VOCAB MAX_TOKENIZER_VOCAB
// A raw corpus is read whole into memory (tokenizer training): at most this many bytes.
#define CORPUS_MAX_BYTES (4ULL << 30)

static void mkdir_p(const char *path) {
    char err[1200];
    if (file_mkdir_p(path, err, sizeof err) != 0) die_input_hint("set data.cache_dir to a writable directory", "%s", err);
}

static int file_nonempty(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

static int find_in_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char buf[2048];
    for (const char *p = path; ; ) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && len + strlen(prog) + 2 < sizeof buf) {
            memcpy(buf, p, len); buf[len] = '/'; strcpy(buf + len + 1, prog);
            if (access(buf, X_OK) == 0) return 1;
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

typedef struct { uint8_t *p; size_t n, cap; } Bytes;
static void bytes_append(Bytes *b, const void *src, size_t n) {
    if (b->n + n > CORPUS_MAX_BYTES)
        die_input("the corpus is larger than the limit of %llu bytes (it is read whole to train the tokenizer)",
                  (unsigned long long)CORPUS_MAX_BYTES);
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < b->n + n) cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

// Read a whole corpus file (a regular file of at most CORPUS_MAX_BYTES); dies naming
// the dataset and the file otherwise.
static uint8_t *slurp(const char *dataset, const char *path, size_t *n) {
    char *buf, err[1300];
    if (file_read_regular(path, CORPUS_MAX_BYTES, "corpus", &buf, n, err, sizeof err) != 0)
        die_input_hint("data.dataset: text:PATH needs an existing, readable regular file", "dataset %s: %s", dataset, err);
    return (uint8_t *)buf;
}

// ---- sources ---------------------------------------------------------------------------
static uint8_t *read_kjv(size_t *n) {
    if (!find_in_path("bible"))
        die_input_hint("apt-get install bible-kjv (as root; `make deps` does it), or use data.dataset: text:PATH",
                       "dataset kjv needs the `bible` command from Debian's bible-kjv package, which is not installed");
    const char *cmd = "bible -f Gen1:1-Rev22:21";
    FILE *p = popen(cmd, "r");
    CHECK_ERRNO(!p, "popen(bible)");
    Bytes b = {0};
    char *line = NULL; size_t cap = 0; ssize_t len;
    size_t lines = 0;
    while ((len = getline(&line, &cap, p)) > 0) {
        // strip the verse reference: [1-3]?Letters Digits ':' Digits ' '
        ssize_t i = 0;
        if (i < len && line[i] >= '1' && line[i] <= '3') i++;
        ssize_t j = i;
        while (j < len && isalpha((unsigned char)line[j])) j++;
        ssize_t k = j;
        while (k < len && isdigit((unsigned char)line[k])) k++;
        int ok = j > i && k > j && k < len && line[k] == ':';
        if (ok) {
            ssize_t m = k + 1;
            while (m < len && isdigit((unsigned char)line[m])) m++;
            ok = m > k + 1 && m < len && line[m] == ' ';
            if (ok) { bytes_append(&b, line + m + 1, (size_t)(len - m - 1)); lines++; continue; }
        }
        bytes_append(&b, line, (size_t)len);
        lines++;
    }
    free(line);
    int st = pclose(p);
    CHECK_ERRNO(st == -1, "pclose(bible)");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || b.n < 1000000)
        die_input_hint("reinstall it: apt-get install --reinstall bible-kjv",
                       "`%s` failed (status %d, %zu bytes of output); the bible-kjv installation looks broken",
                       cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1, b.n);
    *n = b.n;
    return b.p;
}

static uint8_t *read_text(const char *path, size_t *n) {
    char what[1100];
    xsnprintf(what, sizeof what, "text:%s", path);
    uint8_t *p = slurp(what, path, n);
    if (*n == 0)
        die_input_hint("point data.dataset at a non-empty text file",
                       "dataset text:%s: %s is empty", path, path);
    // UTF-8 is expected but any bytes tokenize; warn once if it isn't valid UTF-8 (the one
    // rule of core/utf8.h: overlong forms and surrogates are invalid too)
    size_t bad = utf8_count_invalid(p, *n);
    if (bad) data_log("data: warning: %s is not valid UTF-8 (%zu bad bytes); tokenizing the raw bytes anyway\n", path, bad);
    return p;
}

static int run_argv(char *const argv[]) {
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) CHECK_ERRNO(errno != EINTR, "waitpid");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static uint8_t *read_tinyshakespeare(const char *cache_dir, size_t *n) {
    char dir[1100], path[1200], tmp[1300];
    xsnprintf(dir, sizeof dir, "%s/downloads", cache_dir);
    xsnprintf(path, sizeof path, "%s/tinyshakespeare.txt", dir);
    const char *url = getenv("BOOST_TINYSHAKESPEARE_URL");
    if (!url || !*url) url = TINYSHAKESPEARE_URL;
    if (!file_nonempty(path)) {
        mkdir_p(dir);
        file_tmp_name(tmp, sizeof tmp, path);
        data_log("data: downloading tinyshakespeare from %s\n", url);
        int rc = -1;
        if (find_in_path("curl")) {
            char *argv[] = {"curl", "-fsSL", "--connect-timeout", "15", "--max-time", "300",
                            "-o", tmp, (char *)url, NULL};
            rc = run_argv(argv);
        } else if (find_in_path("wget")) {
            char *argv[] = {"wget", "-q", "--timeout=15", "--tries=2", "-O", tmp, (char *)url, NULL};
            rc = run_argv(argv);
        }
        if (rc != 0 || !file_nonempty(tmp)) {
            unlink(tmp);
            char hint[2600];
            xsnprintf(hint, sizeof hint, "put the file at %s, or use data.dataset: text:PATH", path);
            die_input_hint(hint, "could not download tinyshakespeare from %s (%s)", url,
                           rc == -1 ? "neither curl nor wget is installed" : "no network?");
        }
        char err[1400];
        if (file_commit_tmp(tmp, path, err, sizeof err) != 0) die_input("cannot store the download: %s", err);
    }
    return slurp("tinyshakespeare", path, n);
}

static void synthetic_tokens(int32_t *out, uint64_t n, int vocab, uint64_t seed) {
    uint64_t s = rng_seed_for_name(seed, "data.synthetic");
    #pragma omp parallel for schedule(static)
    for (uint64_t i = 0; i < n; i++)
        out[i] = (int32_t)(rng_splitmix64(s ^ rng_splitmix64(i)) % (uint64_t)vocab);
}

// ---- cache -----------------------------------------------------------------------------
// prepared.ok: "vocab_size V\ntrain_tokens N\nval_tokens M\n# key K\n", written last. It is
// believed only when it parses exactly, its key is this entry's key, and the tokenizer and
// both shards agree with it (their headers and sizes): anything else rebuilds the entry.
typedef struct { int vocab; uint64_t train, val; } Marker;

static int parse_u64(const char *s, uint64_t *out) {
    if (*s < '0' || *s > '9') return 0;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (*s) return 0;
    *out = v;
    return 1;
}

static int read_marker(const char *path, const char *keystr, Marker *mk, char *why, size_t n) {
    char *text, err[1300];
    size_t len;
    if (file_read_regular(path, 64 * 1024, "cache marker", &text, &len, err, sizeof err) != 0) {
        snprintf(why, n, "%s", errno == ENOENT ? "prepared.ok is missing" : err);
        return 0;
    }
    int got = 0, ok = 1;
    uint64_t v;
    for (char *line = strtok(text, "\n"); line && ok; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "# key ", 6)) { got |= strcmp(line + 6, keystr) ? 0 : 8; continue; }
        char *sp = strchr(line, ' ');
        if (!sp || !parse_u64(sp + 1, &v)) { ok = 0; break; }
        *sp = 0;
        if (!strcmp(line, "vocab_size") && v >= 2 && v <= MAX_VOCAB) { mk->vocab = (int)v; got |= 1; }
        else if (!strcmp(line, "train_tokens")) { mk->train = v; got |= 2; }
        else if (!strcmp(line, "val_tokens")) { mk->val = v; got |= 4; }
        else ok = 0;
    }
    free(text);
    if (!ok || got != 15) { snprintf(why, n, "%s does not parse as this entry's marker", path); return 0; }
    return 1;
}

// The files of a prepared entry agree with its marker (headers and sizes; the full token
// check happens when the loader opens the shards).
static int cache_usable(const PreparedData *p, const Marker *mk, char *why, size_t n) {
    int v;
    uint64_t cnt;
    if (p->tokenizer_path[0]) {
        if (!tokenizer_peek(p->tokenizer_path, &v, why, n)) return 0;
        if (v != mk->vocab) { snprintf(why, n, "%s has vocab %d, prepared.ok says %d", p->tokenizer_path, v, mk->vocab); return 0; }
    }
    const char *paths[2] = { p->train_path, p->val_path };
    const uint64_t want[2] = { mk->train, mk->val };
    for (int i = 0; i < 2; i++) {
        if (!shard_peek(paths[i], &v, &cnt, why, n)) return 0;
        if (v != mk->vocab || cnt != want[i]) {
            snprintf(why, n, "%s has vocab %d and %llu tokens, prepared.ok says %d and %llu", paths[i], v,
                     (unsigned long long)cnt, mk->vocab, (unsigned long long)want[i]);
            return 0;
        }
    }
    return 1;
}

static void sanitize(char *dst, size_t cap, const char *src) {
    size_t o = 0;
    for (const char *p = src; *p && o + 1 < cap; p++)
        dst[o++] = (isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-') ? *p : '_';
    dst[o] = 0;
}

void dataset_prepare(const DataConfig *dc, int vocab_size, uint64_t seed, PreparedData *out) {
    double t0 = now_seconds();
    memset(out, 0, sizeof *out);
    const char *ds = dc->dataset;
    enum { D_KJV, D_TEXT, D_SYNTH, D_SHAKES } kind;
    char name[64];
    if (!strcmp(ds, "kjv")) { kind = D_KJV; strcpy(name, "kjv"); }
    else if (!strcmp(ds, "synthetic")) { kind = D_SYNTH; strcpy(name, "synthetic"); }
    else if (!strcmp(ds, "tinyshakespeare")) { kind = D_SHAKES; strcpy(name, "tinyshakespeare"); }
    else if (!strncmp(ds, "text:", 5)) {
        kind = D_TEXT;
        if (!ds[5]) die_input_hint("write data.dataset: text:/path/to/file.txt", "dataset \"text:\" names no file");
        const char *base = strrchr(ds + 5, '/');
        base = base ? base + 1 : ds + 5;
        char s[40]; sanitize(s, sizeof s, base);
        xsnprintf(name, sizeof name, "text-%s", s);
    } else {
        die_input_hint("data.dataset is one of: kjv, tinyshakespeare, synthetic, text:PATH",
                       "unknown dataset \"%s\"", ds);
    }
    if (kind == D_SYNTH) {
        if (vocab_size < 2 || vocab_size > MAX_VOCAB)
            die_input("synthetic data needs a vocabulary of 2..%d tokens, got %d", MAX_VOCAB, vocab_size);
        if (dc->synthetic_tokens < 2)
            die_input("data.synthetic_tokens must be >= 2, got %lld", (long long)dc->synthetic_tokens);
    } else if (vocab_size < 256 || vocab_size > MAX_VOCAB) {
        die_input_hint("the byte-level BPE needs vocab >= 256 (its 256 byte tokens + merges)",
                       "vocabulary size %d for dataset %s: expected 256..%d", vocab_size, ds, MAX_VOCAB);
    }
    if (!(dc->val_fraction >= 0 && dc->val_fraction < 1))
        die_input("data.val_fraction must be in [0, 1), got %g", dc->val_fraction);
    if (!dc->cache_dir[0]) die_input("data.cache_dir is empty");

    // raw corpus and its hash
    uint8_t *raw = NULL; size_t nraw = 0;
    if (kind == D_KJV) {
        data_log("data: reading kjv (bible -f Gen1:1-Rev22:21)\n");
        raw = read_kjv(&nraw);
    } else if (kind == D_TEXT) {
        raw = read_text(ds + 5, &nraw);
    } else if (kind == D_SHAKES) {
        raw = read_tinyshakespeare(dc->cache_dir, &nraw);
    }
    char keystr[800];
    xsnprintf(keystr, sizeof keystr, "fmt=%d|ds=%s|vocab=%d|val=%.17g|raw=%016llx:%zu|synth=%lld:%llu",
              DATA_FORMAT_VERSION, ds, vocab_size, dc->val_fraction,
              (unsigned long long)(raw ? data_hash_bytes(raw, nraw, 0x6b6a76) : 0), nraw,
              kind == D_SYNTH ? (long long)dc->synthetic_tokens : 0LL,
              kind == D_SYNTH ? (unsigned long long)seed : 0ULL);
    uint64_t key = data_hash_bytes(keystr, strlen(keystr), 0xcac4e);
    xsnprintf(out->dir, sizeof out->dir, "%s/%s-v%d-%08x", dc->cache_dir, name, vocab_size, (unsigned)(key >> 32));
    if (kind != D_SYNTH) xsnprintf(out->tokenizer_path, sizeof out->tokenizer_path, "%s/tokenizer.bin", out->dir);
    xsnprintf(out->train_path, sizeof out->train_path, "%s/train.tok", out->dir);
    xsnprintf(out->val_path, sizeof out->val_path, "%s/val.tok", out->dir);
    char marker[1100];
    xsnprintf(marker, sizeof marker, "%s/prepared.ok", out->dir);

    Marker mk = {0};
    char why[1400] = "";
    int have_marker = read_marker(marker, keystr, &mk, why, sizeof why);
    if (have_marker && cache_usable(out, &mk, why, sizeof why)) {
        out->vocab_size = mk.vocab;
        data_log("data: using cached %s (vocab %d, train %llu tokens, val %llu tokens)\n",
                out->dir, mk.vocab, (unsigned long long)mk.train, (unsigned long long)mk.val);
        free(raw);
        return;
    }
    if (have_marker || access(out->dir, F_OK) == 0)
        data_log("data: the cache entry %s is not usable (%s): rebuilding it\n", out->dir, why);

    mkdir_p(out->dir);
    if (unlink(marker) != 0) CHECK_ERRNO(errno != ENOENT, marker);
    data_log("data: preparing %s into %s\n", ds, out->dir);

    int32_t *ids; size_t nids;
    if (kind == D_SYNTH) {
        nids = (size_t)dc->synthetic_tokens;
        ids = xmalloc(nids * sizeof(int32_t));
        synthetic_tokens(ids, nids, vocab_size, seed);
        out->vocab_size = vocab_size;
    } else {
        Tokenizer tok;
        double t1 = now_seconds();
        data_log("data: training byte-level BPE, vocab %d, on %.2f MB\n", vocab_size, nraw / 1e6);
        tokenizer_train(&tok, raw, nraw, vocab_size, 1);
        data_log("data: tokenizer trained in %.1fs (vocab %d)\n", now_seconds() - t1, tok.vocab_size);
        tokenizer_save(&tok, out->tokenizer_path);
        t1 = now_seconds();
        data_log("data: encoding %.2f MB\n", nraw / 1e6);
        ids = tokenizer_encode(&tok, raw, nraw, &nids);
        data_log("data: encoded into %zu tokens (%.2f bytes/token) in %.1fs\n",
                nids, nids ? (double)nraw / (double)nids : 0.0, now_seconds() - t1);
        out->vocab_size = tok.vocab_size;
        tokenizer_free(&tok);
        free(raw);
    }
    // split: the last val_fraction of the token stream is validation
    uint64_t nval = (uint64_t)llround((double)nids * dc->val_fraction);
    if (nval >= nids) nval = nids ? nids - 1 : 0;
    uint64_t ntrain = nids - nval;
    shard_write(out->train_path, ids, ntrain, out->vocab_size);
    shard_write(out->val_path, ids + ntrain, nval, out->vocab_size);
    free(ids);

    char tmp[1200], text[1200];
    xsnprintf(text, sizeof text, "vocab_size %d\ntrain_tokens %llu\nval_tokens %llu\n# key %s\n", out->vocab_size,
              (unsigned long long)ntrain, (unsigned long long)nval, keystr);
    FILE *f = file_atomic_open(marker, tmp, sizeof tmp);
    file_atomic_write(f, text, strlen(text), tmp);
    file_atomic_commit(f, tmp, marker);
    data_log("data: prepared %s in %.1fs (vocab %d, train %llu tokens, val %llu tokens)\n",
            out->dir, now_seconds() - t0, out->vocab_size, (unsigned long long)ntrain, (unsigned long long)nval);
}
