// tokenizer.c — byte-level BPE: pre-tokenizer, training, encode/decode, file format.
//
// Training (the usual fast scheme): count unique pre-tokenizer chunks ("words") once
// with a hash map; keep, for every adjacent symbol pair, its weighted count and the
// list of words it occurs in; pick the best pair with a lazy max-heap (count, then the
// smallest (left, right) ids); rewrite only the words that hold it and update the pair
// counts of those words by difference. Encoding applies merges by rank inside each
// chunk, with a per-thread cache chunk -> ids, split over OpenMP threads at newline
// boundaries (where the pre-tokenizer is guaranteed to start a new chunk).
#include "data.h"
#include "../core/check.h"
#include "../core/fileio.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../core/timer.h"
#include <limits.h>
#include "cache_hint.h"
#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_max_threads(void) { return 1; }   // (a build without OpenMP: the fuzzers)
#endif

#define BPE_MAGIC "BOOSTBPE"
#define BPE_VERSION 1u
#define BPE_HEADER 20

// ---- hashing -----------------------------------------------------------------------
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

uint64_t data_hash_bytes(const void *p, size_t n, uint64_t seed) {
    const uint8_t *s = p;
    uint64_t h = seed ^ (n * 0x9E3779B97F4A7C15ull);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w; memcpy(&w, s + i, 8);
        h = (h ^ mix64(w)) * 0x100000001b3ull + 0x9E3779B97F4A7C15ull;
    }
    uint64_t w = 0;
    for (size_t k = 0; i < n; i++, k++) w |= (uint64_t)s[i] << (8 * k);
    h = (h ^ mix64(w ^ 0xA5)) * 0x100000001b3ull;
    return mix64(h);
}

// ---- pre-tokenizer -----------------------------------------------------------------
enum { C_LETTER, C_DIGIT, C_SPACE, C_PUNCT };
static uint8_t g_cls[256];
static void init_cls(void) {
    static int done = 0;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
    uint8_t t[256];
    for (int c = 0; c < 256; c++) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) t[c] = C_LETTER;
        else if (c >= '0' && c <= '9') t[c] = C_DIGIT;
        else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') t[c] = C_SPACE;
        else t[c] = C_PUNCT;
    }
    memcpy(g_cls, t, 256);      // idempotent: racing initialisers write identical bytes
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

size_t bpe_chunk_end(const uint8_t *s, size_t n, size_t i) {
    init_cls();
    size_t j = i;
    int c = g_cls[s[i]];
    if (s[i] == ' ' && i + 1 < n && (g_cls[s[i + 1]] == C_LETTER || g_cls[s[i + 1]] == C_PUNCT)) {
        j = i + 1; c = g_cls[s[j]];
    }
    size_t lim = n - i > BPE_MAX_CHUNK ? i + BPE_MAX_CHUNK : n;
    while (j < lim && g_cls[s[j]] == c) j++;
    if (c == C_SPACE) {
        // leave the last ' ' of a longer run to prefix the following word/punctuation
        if (j < n && j - i > 1 && s[j - 1] == ' ' && (g_cls[s[j]] == C_LETTER || g_cls[s[j]] == C_PUNCT)) j--;
    } else if (c == C_LETTER && j == lim && j < n && g_cls[s[j]] == C_LETTER) {
        // cut by the length cap: don't split a UTF-8 sequence if avoidable
        size_t k = j;
        while (k > i + 1 && k + 4 > j && (s[k] & 0xC0) == 0x80) k--;
        if ((s[k] & 0xC0) != 0x80 && k > i + 1) j = k;
    }
    return j;
}

// ---- generic open-addressing map: u64 key -> int32 value ----------------------------
typedef struct { uint64_t *keys; int32_t *vals; size_t cap, n; } U64Map;   // key 0 is "empty": we store key+1

static void u64map_init(U64Map *m, size_t cap_hint) {
    size_t cap = 16;
    while (cap < cap_hint * 2) cap <<= 1;
    m->cap = cap; m->n = 0;
    m->keys = xcalloc(cap, sizeof(uint64_t));
    m->vals = xmalloc(cap * sizeof(int32_t));
}
static void u64map_free(U64Map *m) { free(m->keys); free(m->vals); memset(m, 0, sizeof *m); }
static inline int32_t u64map_get(const U64Map *m, uint64_t key) {
    uint64_t k = key + 1;
    size_t mask = m->cap - 1, i = mix64(k) & mask;
    while (m->keys[i]) {
        if (m->keys[i] == k) return m->vals[i];
        i = (i + 1) & mask;
    }
    return -1;
}
static void u64map_grow(U64Map *m);
// Returns a pointer to the value slot; *created set when the key was new (value = -1).
static int32_t *u64map_slot(U64Map *m, uint64_t key, int *created) {
    if ((m->n + 1) * 2 > m->cap) u64map_grow(m);
    uint64_t k = key + 1;
    size_t mask = m->cap - 1, i = mix64(k) & mask;
    while (m->keys[i]) {
        if (m->keys[i] == k) { *created = 0; return &m->vals[i]; }
        i = (i + 1) & mask;
    }
    m->keys[i] = k; m->vals[i] = -1; m->n++;
    *created = 1;
    return &m->vals[i];
}
static void u64map_grow(U64Map *m) {
    U64Map b; u64map_init(&b, m->cap);
    for (size_t i = 0; i < m->cap; i++) if (m->keys[i]) {
        size_t mask = b.cap - 1, j = mix64(m->keys[i]) & mask;
        while (b.keys[j]) j = (j + 1) & mask;
        b.keys[j] = m->keys[i]; b.vals[j] = m->vals[i]; b.n++;
    }
    u64map_free(m); *m = b;
}
static inline uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

// ---- chunk map: byte string (pointing into a caller buffer) -> int32 -----------------
typedef struct { uint64_t hash; size_t off; uint32_t len; int32_t val; } ChunkEnt;
typedef struct { ChunkEnt *e; size_t cap, n; const uint8_t *base; } ChunkMap;   // len 0 = empty

static void chunkmap_init(ChunkMap *m, const uint8_t *base, size_t cap) {
    m->cap = cap; m->n = 0; m->base = base;
    m->e = xcalloc(cap, sizeof(ChunkEnt));
}
static void chunkmap_grow(ChunkMap *m) {
    ChunkMap b; chunkmap_init(&b, m->base, m->cap * 2);
    for (size_t i = 0; i < m->cap; i++) if (m->e[i].len) {
        size_t j = m->e[i].hash & (b.cap - 1);
        while (b.e[j].len) j = (j + 1) & (b.cap - 1);
        b.e[j] = m->e[i]; b.n++;
    }
    free(m->e); *m = b;
}
// Find (or, when insert, add with val -1) the chunk base[off..off+len). NULL if absent.
static ChunkEnt *chunkmap_find(ChunkMap *m, const uint8_t *p, size_t off, uint32_t len, int insert) {
    if (insert && (m->n + 1) * 2 > m->cap) chunkmap_grow(m);
    uint64_t h = data_hash_bytes(p, len, 0x5eed);
    size_t mask = m->cap - 1, i = h & mask;
    while (m->e[i].len) {
        ChunkEnt *e = &m->e[i];
        if (e->hash == h && e->len == len && memcmp(m->base + e->off, p, len) == 0) return e;
        i = (i + 1) & mask;
    }
    if (!insert) return NULL;
    ChunkEnt *e = &m->e[i];
    e->hash = h; e->off = off; e->len = len; e->val = -1; m->n++;
    return e;
}

// ---- training ----------------------------------------------------------------------
typedef struct { int32_t a, b; int64_t count; int32_t *w; int32_t wn, wcap; } Pair;
typedef struct { int64_t count; int32_t p; } HeapEnt;

typedef struct {
    Pair *pairs; int32_t np, pcap;
    U64Map index;            // (a,b) -> pair id
    HeapEnt *heap; size_t hn, hcap;
} Trainer;

// heap order: larger count first, then smaller a, then smaller b
static inline int heap_better(const Trainer *t, HeapEnt x, HeapEnt y) {
    if (x.count != y.count) return x.count > y.count;
    const Pair *px = &t->pairs[x.p], *py = &t->pairs[y.p];
    if (px->a != py->a) return px->a < py->a;
    return px->b < py->b;
}
static void heap_push(Trainer *t, HeapEnt e) {
    if (t->hn == t->hcap) {
        t->hcap = t->hcap ? 2 * t->hcap : 1024;
        t->heap = xrealloc(t->heap, t->hcap * sizeof(HeapEnt));
    }
    size_t i = t->hn++;
    while (i > 0) {
        size_t par = (i - 1) / 2;
        if (!heap_better(t, e, t->heap[par])) break;
        t->heap[i] = t->heap[par]; i = par;
    }
    t->heap[i] = e;
}
static HeapEnt heap_pop(Trainer *t) {
    HeapEnt top = t->heap[0], last = t->heap[--t->hn];
    size_t i = 0, n = t->hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_better(t, t->heap[c + 1], t->heap[c])) c++;
        if (!heap_better(t, t->heap[c], last)) break;
        t->heap[i] = t->heap[c]; i = c;
    }
    if (n) t->heap[i] = last;
    return top;
}

static int32_t pair_get_or_add(Trainer *t, int32_t a, int32_t b, int *created) {
    int32_t *slot = u64map_slot(&t->index, pair_key(a, b), created);
    if (*created) {
        if (t->np == t->pcap) {
            t->pcap = t->pcap ? 2 * t->pcap : 4096;
            t->pairs = xrealloc(t->pairs, (size_t)t->pcap * sizeof(Pair));
        }
        Pair *p = &t->pairs[t->np];
        memset(p, 0, sizeof *p);
        p->a = a; p->b = b;
        *slot = t->np++;
    }
    return *slot;
}
static void pair_add_word(Pair *p, int32_t w) {
    if (p->wn && p->w[p->wn - 1] == w) return;
    if (p->wn == p->wcap) {
        p->wcap = p->wcap ? 2 * p->wcap : 4;
        p->w = xrealloc(p->w, (size_t)p->wcap * sizeof(int32_t));
    }
    p->w[p->wn++] = w;
}

static void build_token_bytes(Tokenizer *t);
static void build_encode_index(Tokenizer *t, const char *path_for_errors);

void tokenizer_train(Tokenizer *tok, const uint8_t *text, size_t n, int vocab_size, int progress) {
    CHECK(vocab_size >= 256, "tokenizer_train: vocab_size %d < 256 (byte-level BPE needs the 256 bytes)", vocab_size);
    double t0 = now_seconds();
    memset(tok, 0, sizeof *tok);
    int target = vocab_size - 256;

    // 1. unique chunks with counts
    ChunkMap cm; chunkmap_init(&cm, text, 1 << 16);
    int64_t *wcount = NULL; size_t nw = 0, wcap = 0;
    for (size_t i = 0; i < n;) {
        size_t j = bpe_chunk_end(text, n, i);
        ChunkEnt *e = chunkmap_find(&cm, text + i, i, (uint32_t)(j - i), 1);
        if (e->val < 0) {
            CHECK(nw < INT32_MAX, "too many distinct chunks for BPE training");
            if (nw == wcap) {
                wcap = wcap ? 2 * wcap : 1 << 14;
                wcount = xrealloc(wcount, wcap * sizeof(int64_t));
            }
            e->val = (int32_t)nw; wcount[nw++] = 0;
        }
        wcount[e->val]++;
        i = j;
    }
    // symbols of every word in one pool
    size_t *woff = xmalloc((nw + 1) * sizeof(size_t));
    int32_t *wlen = xmalloc((nw ? nw : 1) * sizeof(int32_t));
    size_t total = 0;
    for (size_t i = 0; i < cm.cap; i++) if (cm.e[i].len) total += cm.e[i].len;
    int32_t *sym = xmalloc((total ? total : 1) * sizeof(int32_t));
    {
        // lay out in word-id order for determinism of where-lists
        size_t *tmpoff = xmalloc((nw ? nw : 1) * sizeof(size_t));
        uint32_t *tmplen = xmalloc((nw ? nw : 1) * sizeof(uint32_t));
        for (size_t i = 0; i < cm.cap; i++) if (cm.e[i].len) { tmpoff[cm.e[i].val] = cm.e[i].off; tmplen[cm.e[i].val] = cm.e[i].len; }
        size_t o = 0;
        for (size_t w = 0; w < nw; w++) {
            woff[w] = o; wlen[w] = (int32_t)tmplen[w];
            for (uint32_t k = 0; k < tmplen[w]; k++) sym[o++] = text[tmpoff[w] + k];
        }
        woff[nw] = o;
        free(tmpoff); free(tmplen);
    }
    free(cm.e);
    if (progress)
        fprintf(stderr, "bpe: %.1f MB of text, %zu distinct chunks (%.2fs); training %d merges\n",
                n / 1e6, nw, now_seconds() - t0, target);

    // 2. initial pair counts
    Trainer tr = {0};
    u64map_init(&tr.index, 1 << 16);
    for (size_t w = 0; w < nw; w++) {
        int32_t *s = sym + woff[w];
        for (int32_t k = 0; k + 1 < wlen[w]; k++) {
            int cr; int32_t p = pair_get_or_add(&tr, s[k], s[k + 1], &cr);
            tr.pairs[p].count += wcount[w];
            pair_add_word(&tr.pairs[p], (int32_t)w);
        }
    }
    for (int32_t p = 0; p < tr.np; p++) heap_push(&tr, (HeapEnt){tr.pairs[p].count, p});

    // 3. merges
    tok->merges = xmalloc((size_t)(target ? target : 1) * sizeof(int32_t[2]));
    int m = 0;
    int32_t *newpairs = NULL; size_t nnp = 0, npcap = 0;
    int report_every = target >= 20000 ? 2000 : target >= 4000 ? 1000 : 250;
    while (m < target && tr.hn) {
        HeapEnt top = heap_pop(&tr);
        Pair *pp = &tr.pairs[top.p];
        if (pp->count <= 0) continue;
        if (top.count != pp->count) { heap_push(&tr, (HeapEnt){pp->count, top.p}); continue; }
        int32_t a = pp->a, b = pp->b, nid = 256 + m;
        tok->merges[m][0] = a; tok->merges[m][1] = b;
        int64_t merged_count = pp->count;
        int32_t *wl = pp->w, wn = pp->wn;
        pp->w = NULL; pp->wn = pp->wcap = 0;
        nnp = 0;
        for (int32_t wi = 0; wi < wn; wi++) {
            int32_t w = wl[wi];
            int32_t *s = sym + woff[w], L = wlen[w];
            int found = 0;
            for (int32_t k = 0; k + 1 < L; k++) if (s[k] == a && s[k + 1] == b) { found = 1; break; }
            if (!found) continue;
            int64_t c = wcount[w];
            for (int32_t k = 0; k + 1 < L; k++) {
                int32_t p = u64map_get(&tr.index, pair_key(s[k], s[k + 1]));
                tr.pairs[p].count -= c;
            }
            int32_t o = 0;
            for (int32_t k = 0; k < L;) {
                if (k + 1 < L && s[k] == a && s[k + 1] == b) { s[o++] = nid; k += 2; }
                else s[o++] = s[k++];
            }
            wlen[w] = L = o;
            for (int32_t k = 0; k + 1 < L; k++) {
                int cr; int32_t p = pair_get_or_add(&tr, s[k], s[k + 1], &cr);
                tr.pairs[p].count += c;
                if (s[k] == nid || s[k + 1] == nid) pair_add_word(&tr.pairs[p], w);
                if (cr) {
                    if (nnp == npcap) {
                        npcap = npcap ? 2 * npcap : 256;
                        newpairs = xrealloc(newpairs, npcap * sizeof(int32_t));
                    }
                    newpairs[nnp++] = p;
                }
            }
        }
        free(wl);
        CHECK(tr.pairs[top.p].count == 0, "BPE internal: pair count %lld after merge",
              (long long)tr.pairs[top.p].count);
        for (size_t i = 0; i < nnp; i++)
            if (tr.pairs[newpairs[i]].count > 0) heap_push(&tr, (HeapEnt){tr.pairs[newpairs[i]].count, newpairs[i]});
        m++;
        if (progress && (m % report_every == 0 || m == target))
            fprintf(stderr, "bpe: merge %d/%d (pair count %lld) %.1fs\n", m, target,
                    (long long)merged_count, now_seconds() - t0);
    }
    if (m < target)
        fprintf(stderr, "bpe: stopped at vocab %d (requested %d): no pair left to merge in this corpus\n",
                256 + m, vocab_size);
    tok->n_merges = m;
    tok->vocab_size = 256 + m;

    for (int32_t p = 0; p < tr.np; p++) free(tr.pairs[p].w);
    free(tr.pairs); free(tr.heap); u64map_free(&tr.index); free(newpairs);
    free(sym); free(woff); free(wlen); free(wcount);

    build_token_bytes(tok);
    build_encode_index(tok, NULL);
}

// ---- token bytes and encode index --------------------------------------------------
typedef struct {
    U64Map ranks;            // (a,b) -> merge index
    uint8_t *pool;           // all token bytes
} EncodeIndex;

static void build_token_bytes(Tokenizer *t) {
    int V = t->vocab_size;
    t->token_len = xmalloc((size_t)V * sizeof(int));
    t->token_bytes = xmalloc((size_t)V * sizeof(uint8_t *));
    size_t total = 256;
    for (int i = 0; i < 256; i++) t->token_len[i] = 1;
    for (int i = 0; i < t->n_merges; i++) {
        t->token_len[256 + i] = t->token_len[t->merges[i][0]] + t->token_len[t->merges[i][1]];
        total += (size_t)t->token_len[256 + i];
    }
    uint8_t *pool = xmalloc(total);
    size_t o = 0;
    for (int i = 0; i < 256; i++) { pool[o] = (uint8_t)i; t->token_bytes[i] = pool + o; o++; }
    for (int i = 0; i < t->n_merges; i++) {
        int a = t->merges[i][0], b = t->merges[i][1];
        t->token_bytes[256 + i] = pool + o;
        memcpy(pool + o, t->token_bytes[a], (size_t)t->token_len[a]); o += (size_t)t->token_len[a];
        memcpy(pool + o, t->token_bytes[b], (size_t)t->token_len[b]); o += (size_t)t->token_len[b];
    }
    EncodeIndex *ei = xcalloc(1, sizeof(EncodeIndex));
    ei->pool = pool;
    t->encode_index = ei;
}

static void bad_tokenizer(const char *path, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

static void build_encode_index(Tokenizer *t, const char *path) {
    EncodeIndex *ei = t->encode_index;
    u64map_init(&ei->ranks, (size_t)t->n_merges + 16);
    for (int i = 0; i < t->n_merges; i++) {
        int cr; int32_t *slot = u64map_slot(&ei->ranks, pair_key(t->merges[i][0], t->merges[i][1]), &cr);
        if (!cr) {
            if (path) bad_tokenizer(path, "merge %d repeats merge %d (%d, %d); every merge must be distinct",
                                    i, *slot, t->merges[i][0], t->merges[i][1]);
            DIE("BPE internal: duplicate merge %d", i);
        }
        *slot = i;
    }
}

void tokenizer_free(Tokenizer *t) {
    EncodeIndex *ei = t->encode_index;
    if (ei) { u64map_free(&ei->ranks); free(ei->pool); free(ei); }
    free(t->merges); free(t->token_bytes); free(t->token_len);
    memset(t, 0, sizeof *t);
}

// ---- file format -------------------------------------------------------------------
static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

void tokenizer_save(const Tokenizer *t, const char *path) {
    size_t n = BPE_HEADER + 8 * (size_t)t->n_merges;
    uint8_t *buf = xmalloc(n);
    memcpy(buf, BPE_MAGIC, 8);
    put_u32(buf + 8, BPE_VERSION);
    put_u32(buf + 12, (uint32_t)t->vocab_size);
    put_u32(buf + 16, (uint32_t)t->n_merges);
    for (int i = 0; i < t->n_merges; i++) {
        put_u32(buf + BPE_HEADER + 8 * (size_t)i, (uint32_t)t->merges[i][0]);
        put_u32(buf + BPE_HEADER + 8 * (size_t)i + 4, (uint32_t)t->merges[i][1]);
    }
    char tmp[1200];
    FILE *f = file_atomic_open(path, tmp, sizeof tmp);
    file_atomic_write(f, buf, n, tmp);
    file_atomic_commit(f, tmp, path);
    free(buf);
}

// The file's name, or for a tokenizer read from memory (tokenizer_load_bytes) the text
// naming where the bytes came from; such bytes have no cache entry to rebuild.
static __thread int g_from_memory;
static void bad_tokenizer(const char *path, const char *fmt, ...) {
    char msg[1200], hint[PATH_MAX + 1024];
    va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
    if (g_from_memory) snprintf(hint, sizeof hint, "the tokenizer was stored damaged; give its tokenizer.bin with --tokenizer PATH");
    else data_damage_hint(hint, sizeof hint, path, "tokenizer");   // (never "rm -rf ." : cache_hint.h)
    die_input_hint(hint, "%s: %s", path, msg);
}

// A tokenizer file is the 20-byte header and 8 bytes per merge, at most MAX_TOKENIZER_VOCAB.
#define TOKENIZER_MAX_BYTES ((size_t)BPE_HEADER + 8 * (size_t)MAX_TOKENIZER_VOCAB)

static uint8_t *read_whole(const char *path, size_t *n_out, const char *what) {
    char *buf, err[1300];
    if (file_read_regular(path, TOKENIZER_MAX_BYTES, what, &buf, n_out, err, sizeof err) != 0)
        die_input_hint("check the path, or delete the cache directory so it is rebuilt", "%s", err);
    return (uint8_t *)buf;
}

// The header's problem (a static text with the numbers in buf), or NULL when it is fine;
// *merges = n_merges.
static const char *header_problem(const uint8_t *buf, size_t len, uint32_t *merges, char *msg, size_t n) {
    if (len < BPE_HEADER) { snprintf(msg, n, "file is %zu bytes, shorter than the %d-byte BOOSTBPE header", len, BPE_HEADER); return msg; }
    if (memcmp(buf, BPE_MAGIC, 8) != 0) { snprintf(msg, n, "not a tokenizer file: magic is \"%.8s\", expected \"" BPE_MAGIC "\"", (const char *)buf); return msg; }
    uint32_t ver = get_u32(buf + 8), V = get_u32(buf + 12), M = get_u32(buf + 16);
    if (ver != BPE_VERSION) { snprintf(msg, n, "tokenizer format version %u, expected %u", ver, BPE_VERSION); return msg; }
    if (M > (uint32_t)MAX_TOKENIZER_VOCAB - 256 || V != 256 + M) {
        snprintf(msg, n, "vocab_size %u with %u merges; expected vocab_size = 256 + n_merges <= %d", V, M, MAX_TOKENIZER_VOCAB);
        return msg;
    }
    size_t want = BPE_HEADER + 8 * (size_t)M;
    if (len != want) { snprintf(msg, n, "file is %zu bytes, expected %zu (20-byte header + %u merges x 8 bytes)", len, want, M); return msg; }
    *merges = M;
    return NULL;
}

int tokenizer_peek(const char *path, int *vocab, char *why, size_t n) {
    uint8_t head[BPE_HEADER];
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) { snprintf(why, n, "cannot open %s: %s", path, strerror(errno)); return 0; }
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    ssize_t k = ok ? pread(fd, head, sizeof head, 0) : -1;
    close(fd);
    if (!ok) { snprintf(why, n, "%s is not a regular file", path); return 0; }
    uint32_t M;
    char msg[300];
    // (the merges are not read: the length check against the header is what is cheap)
    if (k != (ssize_t)sizeof head) { snprintf(why, n, "%s: shorter than its header", path); return 0; }
    if (header_problem(head, (size_t)st.st_size, &M, msg, sizeof msg)) {
        snprintf(why, n, "%s: %s", path, msg);
        return 0;
    }
    *vocab = (int)(256 + M);
    return 1;
}

// Validates the header; returns n_merges.
static uint32_t check_header(const uint8_t *buf, size_t len, const char *path) {
    uint32_t M = 0;
    char msg[300];
    if (header_problem(buf, len, &M, msg, sizeof msg)) bad_tokenizer(path, "%s", msg);
    return M;
}

int tokenizer_file_vocab(const char *path) {
    size_t len; uint8_t *buf = read_whole(path, &len, "tokenizer");
    uint32_t M = check_header(buf, len, path);
    for (uint32_t i = 0; i < M; i++) {
        uint32_t a = get_u32(buf + BPE_HEADER + 8 * (size_t)i), b = get_u32(buf + BPE_HEADER + 8 * (size_t)i + 4);
        if (a >= 256 + i || b >= 256 + i)
            bad_tokenizer(path, "merge %u = (%u, %u) uses an id >= its own id %u", i, a, b, 256 + i);
    }
    free(buf);
    return (int)(256 + M);
}

// The bytes of a tokenizer file (header and merges) into t; `path` names them in messages.
static void parse_tokenizer(Tokenizer *t, const uint8_t *buf, size_t len, const char *path) {
    memset(t, 0, sizeof *t);
    uint32_t M = check_header(buf, len, path);
    t->n_merges = (int)M;
    t->vocab_size = (int)(256 + M);
    t->merges = xmalloc((size_t)(M ? M : 1) * sizeof(int32_t[2]));
    // token lengths are checked as we go so a hostile file cannot make them explode
    int64_t *tl = xmalloc((256 + (size_t)M) * sizeof(int64_t));
    for (int i = 0; i < 256; i++) tl[i] = 1;
    for (uint32_t i = 0; i < M; i++) {
        uint32_t a = get_u32(buf + BPE_HEADER + 8 * (size_t)i), b = get_u32(buf + BPE_HEADER + 8 * (size_t)i + 4);
        if (a >= 256 + i || b >= 256 + i)
            bad_tokenizer(path, "merge %u = (%u, %u) uses an id >= its own id %u", i, a, b, 256 + i);
        tl[256 + i] = tl[a] + tl[b];
        if (tl[256 + i] > BPE_MAX_CHUNK)
            bad_tokenizer(path, "merge %u makes a token of %lld bytes; tokens are at most %d bytes",
                          i, (long long)tl[256 + i], BPE_MAX_CHUNK);
        t->merges[i][0] = (int32_t)a; t->merges[i][1] = (int32_t)b;
    }
    free(tl);
    build_token_bytes(t);
    build_encode_index(t, path);
}

void tokenizer_load(Tokenizer *t, const char *path) {
    size_t len; uint8_t *buf = read_whole(path, &len, "tokenizer");
    parse_tokenizer(t, buf, len, path);
    free(buf);
}

void tokenizer_load_bytes(Tokenizer *t, const uint8_t *bytes, size_t n, const char *where) {
    g_from_memory = 1;
    parse_tokenizer(t, bytes, n, where);
    g_from_memory = 0;
}

// ---- encoding ----------------------------------------------------------------------
// Apply merges by rank to one chunk (len <= BPE_MAX_CHUNK). Writes ids to out, returns count.
static int encode_chunk(const Tokenizer *t, const uint8_t *s, int L, int32_t *out) {
    const U64Map *rk = &((const EncodeIndex *)t->encode_index)->ranks;
    int32_t sym[BPE_MAX_CHUNK], rank[BPE_MAX_CHUNK], nsym[BPE_MAX_CHUNK], nrank[BPE_MAX_CHUNK];
    uint8_t fresh[BPE_MAX_CHUNK];
    int n = L;
    for (int i = 0; i < n; i++) sym[i] = s[i];
    if (rk->n == 0 || n < 2) { memcpy(out, sym, (size_t)n * sizeof(int32_t)); return n; }
    for (int i = 0; i + 1 < n; i++) {
        int32_t r = u64map_get(rk, pair_key(sym[i], sym[i + 1]));
        rank[i] = r < 0 ? INT32_MAX : r;
    }
    for (;;) {
        int32_t best = INT32_MAX;
        for (int i = 0; i + 1 < n; i++) if (rank[i] < best) best = rank[i];
        if (best == INT32_MAX) break;
        int32_t nid = 256 + best;
        // merge every occurrence left to right; carry over ranks of untouched pairs
        int o = 0;
        int32_t keep_rank[BPE_MAX_CHUNK];
        for (int i = 0; i < n;) {
            if (i + 1 < n && rank[i] == best) { nsym[o] = nid; fresh[o] = 1; keep_rank[o] = INT32_MAX; i += 2; }
            else { nsym[o] = sym[i]; fresh[o] = 0; keep_rank[o] = i + 1 < n ? rank[i] : INT32_MAX; i++; }
            o++;
        }
        for (int i = 0; i + 1 < o; i++) {
            if (fresh[i] || fresh[i + 1]) {
                int32_t r = u64map_get(rk, pair_key(nsym[i], nsym[i + 1]));
                nrank[i] = r < 0 ? INT32_MAX : r;
            } else nrank[i] = keep_rank[i];
        }
        n = o;
        memcpy(sym, nsym, (size_t)n * sizeof(int32_t));
        memcpy(rank, nrank, (size_t)(n > 0 ? n - 1 : 0) * sizeof(int32_t));
        if (n < 2) break;
    }
    memcpy(out, sym, (size_t)n * sizeof(int32_t));
    return n;
}

typedef struct { int32_t *ids; size_t n, cap; } IdBuf;
static void idbuf_reserve(IdBuf *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + extra) cap *= 2;
    b->ids = xrealloc(b->ids, cap * sizeof(int32_t));
    b->cap = cap;
}

#define CACHE_MAX_ENTRIES (1u << 20)
// Encode text[lo..hi) (lo must be a chunk start) appending to out. cache->base == text.
static void encode_range(const Tokenizer *t, const uint8_t *text, size_t lo, size_t hi,
                         ChunkMap *cache, IdBuf *pool, IdBuf *out) {
    int32_t tmp[BPE_MAX_CHUNK];
    for (size_t i = lo; i < hi;) {
        size_t j = bpe_chunk_end(text, hi, i);
        uint32_t L = (uint32_t)(j - i);
        ChunkEnt *e = chunkmap_find(cache, text + i, i, L, cache->n < CACHE_MAX_ENTRIES);
        idbuf_reserve(out, L);
        if (e && e->val >= 0) {
            // cached: val = offset into pool, first entry is the count
            const int32_t *c = pool->ids + e->val;
            memcpy(out->ids + out->n, c + 1, (size_t)c[0] * sizeof(int32_t));
            out->n += (size_t)c[0];
        } else {
            int k = encode_chunk(t, text + i, (int)L, tmp);
            memcpy(out->ids + out->n, tmp, (size_t)k * sizeof(int32_t));
            out->n += (size_t)k;
            if (e && pool->n + (size_t)k + 1 < INT32_MAX) {
                idbuf_reserve(pool, (size_t)k + 1);
                e->val = (int32_t)pool->n;
                pool->ids[pool->n++] = k;
                memcpy(pool->ids + pool->n, tmp, (size_t)k * sizeof(int32_t));
                pool->n += (size_t)k;
            }
        }
        i = j;
    }
}

int32_t *tokenizer_encode(const Tokenizer *t, const uint8_t *text, size_t n, size_t *n_out) {
    // segment boundaries: just after a '\n' (or other non-' ' whitespace) followed by a
    // non-whitespace byte — the pre-tokenizer always starts a chunk there.
    init_cls();
    int nth = omp_get_max_threads();
    size_t seg_target = (size_t)4 << 20;   // per-thread caches warm up over a few MB
    int nseg = (n >= 2 * seg_target && nth > 1) ? (int)(n / seg_target) : 1;
    if (nseg > 4096) nseg = 4096;
    size_t *cut = xmalloc((size_t)(nseg + 1) * sizeof(size_t));
    cut[0] = 0;
    int k = 1;
    for (int s = 1; s < nseg; s++) {
        size_t p = n / (size_t)nseg * (size_t)s;
        if (p <= cut[k - 1]) p = cut[k - 1] + 1;
        size_t lim = p + seg_target / 2 < n ? p + seg_target / 2 : n;
        while (p < lim && !(g_cls[text[p - 1]] == C_SPACE && text[p - 1] != ' ' && g_cls[text[p]] != C_SPACE)) p++;
        if (p < lim) cut[k++] = p;
    }
    cut[k] = n;
    nseg = k;
    IdBuf *outs = xcalloc((size_t)nseg, sizeof(IdBuf));
    if (nseg == 1) {
        ChunkMap cache; chunkmap_init(&cache, text, 1 << 12);
        IdBuf pool = {0};
        idbuf_reserve(&outs[0], n / 3 + 16);
        encode_range(t, text, 0, n, &cache, &pool, &outs[0]);
        free(cache.e); free(pool.ids);
    } else {
        #pragma omp parallel
        {
            ChunkMap cache; chunkmap_init(&cache, text, 1 << 12);
            IdBuf pool = {0};
            #pragma omp for schedule(dynamic, 1)
            for (int s = 0; s < nseg; s++) {
                idbuf_reserve(&outs[s], (cut[s + 1] - cut[s]) / 3 + 16);
                encode_range(t, text, cut[s], cut[s + 1], &cache, &pool, &outs[s]);
            }
            free(cache.e); free(pool.ids);
        }
    }
    size_t total = 0;
    for (int s = 0; s < nseg; s++) total += outs[s].n;
    int32_t *ids = xmalloc((total ? total : 1) * sizeof(int32_t));
    size_t o = 0;
    for (int s = 0; s < nseg; s++) {
        memcpy(ids + o, outs[s].ids, outs[s].n * sizeof(int32_t));
        o += outs[s].n;
        free(outs[s].ids);
    }
    free(outs); free(cut);
    *n_out = total;
    return ids;
}

uint8_t *tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, size_t *n_out) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size)
            die_input("token id %d at position %zu is outside the tokenizer's vocabulary [0, %d)",
                      ids[i], i, t->vocab_size);
        total += (size_t)t->token_len[ids[i]];
    }
    uint8_t *out = xmalloc(total ? total : 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(out + o, t->token_bytes[ids[i]], (size_t)t->token_len[ids[i]]);
        o += (size_t)t->token_len[ids[i]];
    }
    *n_out = total;
    return out;
}
