// test_data.c — pre-tokenizer, BPE training (vs a naive reference), encode/decode round
// trips, tokenizer files, token shards, dataset cache and the loader.
#include "testlib.h"
#include "data/data.h"
#include "core/check.h"
#include "core/rng.h"
#include <omp.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

TL_MAIN_DEFS

static char g_tmp[256];

static uint8_t *run_cmd(const char *cmd, size_t *n) {
    FILE *p = popen(cmd, "r");
    if (!p) { *n = 0; return NULL; }
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = xmalloc(cap);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len, p)) > 0) {
        len += k;
        if (len == cap) { cap *= 2; buf = realloc(buf, cap); }
    }
    int st = pclose(p);
    if (st != 0 || len == 0) { free(buf); *n = 0; return NULL; }
    *n = len;
    return buf;
}

// Whole KJV once (as printed by `bible`, references included: the tests only need text).
static uint8_t *g_kjv; static size_t g_kjv_n;
static const uint8_t *kjv(size_t *n) {
    if (!g_kjv) g_kjv = run_cmd("bible -f Gen1:1-Rev22:21 2>/dev/null", &g_kjv_n);
    *n = g_kjv_n;
    return g_kjv;
}
static Tokenizer g_tok1024; static int g_have_tok;
static const Tokenizer *tok1024(void) {
    if (!g_have_tok) {
        size_t n; const uint8_t *t = kjv(&n);
        if (!t) return NULL;
        tokenizer_train(&g_tok1024, t, n, 1024, 0);
        g_have_tok = 1;
    }
    return &g_tok1024;
}

static int roundtrip(const Tokenizer *t, const uint8_t *s, size_t n, size_t *ntok) {
    size_t ni, nb;
    int32_t *ids = tokenizer_encode(t, s, n, &ni);
    uint8_t *back = tokenizer_decode(t, ids, ni, &nb);
    int ok = nb == n && memcmp(back, s, n) == 0;
    for (size_t i = 0; i < ni; i++) if (ids[i] < 0 || ids[i] >= t->vocab_size) ok = 0;
    if (ntok) *ntok = ni;
    free(ids); free(back);
    return ok;
}

// ---- pre-tokenizer ---------------------------------------------------------------------
static int chunks_of(const char *s, char out[][64], int max) {
    size_t n = strlen(s); int k = 0;
    for (size_t i = 0; i < n && k < max;) {
        size_t j = bpe_chunk_end((const uint8_t *)s, n, i);
        snprintf(out[k++], 64, "%.*s", (int)(j - i), s + i);
        i = j;
    }
    return k;
}

TEST(pretokenizer_chunks) {
    char c[32][64];
    int k = chunks_of("Hello world,  big\n\nday 123x \xc3\xa9t\xc3\xa9 ;;a", c, 32);
    const char *want[] = {"Hello", " world", ",", " ", " big", "\n\n", "day", " ", "123", "x", " \xc3\xa9t\xc3\xa9", " ;;", "a"};
    int nw = (int)(sizeof want / sizeof want[0]);
    EXPECT(k == nw, "got %d chunks, expected %d", k, nw);
    for (int i = 0; i < k && i < nw; i++) EXPECT(!strcmp(c[i], want[i]), "chunk %d is \"%s\", expected \"%s\"", i, c[i], want[i]);
    // coverage and the length cap on random bytes
    Rng r = {7};
    size_t n = 100000;
    uint8_t *b = xmalloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i % 5000 < 2000 ? 'a' : rng_next(&r));
    size_t i = 0, cnt = 0, maxlen = 0;
    while (i < n) { size_t j = bpe_chunk_end(b, n, i); if (j - i > maxlen) maxlen = j - i; EXPECT(j > i, "empty chunk at %zu", i); if (j <= i) break; i = j; cnt++; }
    EXPECT(i == n, "chunks do not tile the input");
    EXPECT(maxlen == BPE_MAX_CHUNK, "longest chunk %zu, expected the cap %d", maxlen, BPE_MAX_CHUNK);
    free(b);
}

// ---- training vs a naive reference ------------------------------------------------------
// Naive BPE: words (chunks) with counts; each step recount all pairs, take the max by
// (count desc, a asc, b asc), merge left to right.
static int naive_train(const uint8_t *text, size_t n, int vocab, int32_t (*merges)[2]) {
    int nw = 0, cap = 1024;
    int32_t **w = xmalloc(cap * sizeof *w); int *wl = xmalloc(cap * sizeof(int)); int64_t *wc = xmalloc(cap * sizeof(int64_t));
    for (size_t i = 0; i < n;) {
        size_t j = bpe_chunk_end(text, n, i);
        int found = -1;
        for (int k = 0; k < nw; k++) if ((size_t)wl[k] == j - i) {
            int eq = 1; for (size_t q = 0; q < j - i; q++) if (w[k][q] != text[i + q]) { eq = 0; break; }
            if (eq) { found = k; break; }
        }
        if (found < 0) {
            if (nw == cap) { cap *= 2; w = realloc(w, cap * sizeof *w); wl = realloc(wl, cap * sizeof(int)); wc = realloc(wc, cap * sizeof(int64_t)); }
            w[nw] = xmalloc((j - i) * sizeof(int32_t)); wl[nw] = (int)(j - i); wc[nw] = 0;
            for (size_t q = 0; q < j - i; q++) w[nw][q] = text[i + q];
            found = nw++;
        }
        wc[found]++;
        i = j;
    }
    int m = 0;
    int64_t *cnt = xcalloc((size_t)vocab * vocab, sizeof(int64_t));
    for (; m < vocab - 256; m++) {
        memset(cnt, 0, (size_t)vocab * vocab * sizeof(int64_t));
        for (int k = 0; k < nw; k++) for (int q = 0; q + 1 < wl[k]; q++) cnt[(size_t)w[k][q] * vocab + w[k][q + 1]] += wc[k];
        int64_t best = 0; size_t bi = 0;
        for (size_t q = 0; q < (size_t)vocab * vocab; q++) if (cnt[q] > best) { best = cnt[q]; bi = q; }
        if (!best) break;
        int32_t a = (int32_t)(bi / vocab), b = (int32_t)(bi % vocab);
        merges[m][0] = a; merges[m][1] = b;
        for (int k = 0; k < nw; k++) {
            int o = 0;
            for (int q = 0; q < wl[k];) {
                if (q + 1 < wl[k] && w[k][q] == a && w[k][q + 1] == b) { w[k][o++] = 256 + m; q += 2; }
                else w[k][o++] = w[k][q++];
            }
            wl[k] = o;
        }
    }
    for (int k = 0; k < nw; k++) free(w[k]);
    free(w); free(wl); free(wc); free(cnt);
    return m;
}

TEST(train_matches_naive_reference) {
    size_t n;
    uint8_t *text = run_cmd("bible -f Gen1:1-Gen2:10 2>/dev/null", &n);
    EXPECT(text, "`bible` failed (apt-get install bible-kjv)");
    if (!text) return;
    // add overlapping repeats and odd bytes
    static const char extra[] = " aaaa aaaaa aaa aa aaaaaaa bbbbbb abab ababab \x01\x01\x01\x00\x00 \xff\xff\xfe\xff\xff\n";
    size_t ne = sizeof extra - 1;
    uint8_t *all = xmalloc(n + 3 * ne);
    memcpy(all, text, n);
    for (int r = 0; r < 3; r++) memcpy(all + n + (size_t)r * ne, extra, ne);
    n += 3 * ne;
    int V = 700;
    int32_t (*ref)[2] = xmalloc((size_t)V * sizeof *ref);
    int mref = naive_train(all, n, V, ref);
    Tokenizer t;
    tokenizer_train(&t, all, n, V, 0);
    EXPECT(t.n_merges == mref, "fast trainer made %d merges, reference %d", t.n_merges, mref);
    int first_diff = -1;
    for (int i = 0; i < t.n_merges && i < mref; i++)
        if (t.merges[i][0] != ref[i][0] || t.merges[i][1] != ref[i][1]) { first_diff = i; break; }
    EXPECT(first_diff < 0, "merge %d differs: (%d,%d) vs reference (%d,%d)", first_diff,
           first_diff >= 0 ? t.merges[first_diff][0] : 0, first_diff >= 0 ? t.merges[first_diff][1] : 0,
           first_diff >= 0 ? ref[first_diff][0] : 0, first_diff >= 0 ? ref[first_diff][1] : 0);
    EXPECT(roundtrip(&t, all, n, NULL), "round trip on the training text");
    // deterministic: same input, same merges
    Tokenizer t2;
    tokenizer_train(&t2, all, n, V, 0);
    EXPECT(t2.n_merges == t.n_merges && !memcmp(t2.merges, t.merges, (size_t)t.n_merges * sizeof *t.merges), "training is not deterministic");
    tokenizer_free(&t); tokenizer_free(&t2);
    free(ref); free(all); free(text);
}

TEST(stops_early_when_no_pairs_left) {
    const char *s = "ab ab ab cd";
    Tokenizer t;
    tokenizer_train(&t, (const uint8_t *)s, strlen(s), 5000, 0);
    // distinct chunks: "ab", " ab", " cd" -> at most 4 merges
    EXPECT(t.vocab_size < 300 && t.vocab_size == 256 + t.n_merges, "vocab %d", t.vocab_size);
    size_t nt;
    EXPECT(roundtrip(&t, (const uint8_t *)s, strlen(s), &nt) && nt == 4, "\"%s\" -> %zu tokens, expected 4", s, nt);
    tokenizer_free(&t);
}

// ---- round trips and compression ---------------------------------------------------------
TEST(kjv_roundtrip_and_compression) {
    size_t n, ne;
    const Tokenizer *t = tok1024();
    EXPECT(t, "`bible` failed (apt-get install bible-kjv)");
    if (!t) return;
    const uint8_t *all = kjv(&n);
    EXPECT(t->vocab_size == 1024, "vocab %d", t->vocab_size);
    uint8_t *ex = run_cmd("bible -f Gen1:1-Gen3:24 2>/dev/null", &ne);
    EXPECT(ex && roundtrip(t, ex, ne, NULL), "round trip on Gen1:1-Gen3:24");
    size_t ntok;
    EXPECT(roundtrip(t, all, n, &ntok), "round trip on the whole KJV");
    EXPECT(ntok < n / 2, "KJV: %zu tokens for %zu bytes; merges should at least halve it", ntok, n);
    printf("  kjv: %zu bytes -> %zu tokens at vocab 1024 (%.2f bytes/token)\n", n, ntok, (double)n / ntok);
    free(ex);
}

TEST(roundtrip_random_bytes_and_unicode) {
    const Tokenizer *t = tok1024();
    if (!t) { EXPECT(0, "no kjv tokenizer"); return; }
    Rng r = {42};
    for (int trial = 0; trial < 20; trial++) {
        size_t n = 1 + rng_next(&r) % 5000;
        uint8_t *b = xmalloc(n);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = rng_next(&r);
            b[i] = trial % 2 ? (uint8_t)x : (uint8_t)" etaoinAE\n\x00\xff\xc3\xa9,."[x % 16];
        }
        EXPECT(roundtrip(t, b, n, NULL), "random bytes trial %d (n=%zu)", trial, n);
        free(b);
    }
    const char *uni[] = {"", "\xce\x93\xce\xb5\xce\xb9\xce\xac \xcf\x83\xce\xbf\xcf\x85 \xce\xba\xcf\x8c\xcf\x83\xce\xbc\xce\xb5",
                         "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88",
                         "emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd and the end", "\xc0\x80 \xed\xa0\x80 lone \x80 bytes \xf8"};
    for (size_t i = 0; i < sizeof uni / sizeof uni[0]; i++)
        EXPECT(roundtrip(t, (const uint8_t *)uni[i], strlen(uni[i]), NULL), "unicode string %zu", i);
    // a tokenizer trained on random bytes and unicode (merges of high bytes, NULs)
    size_t n = 200000;
    uint8_t *b = xmalloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(rng_next(&r) % 7 == 0 ? 0 : 0x80 + rng_next(&r) % 8);
    Tokenizer t2;
    tokenizer_train(&t2, b, n, 600, 0);
    EXPECT(t2.vocab_size == 600, "vocab %d", t2.vocab_size);
    EXPECT(roundtrip(&t2, b, n, NULL), "round trip, tokenizer trained on random high bytes");
    for (size_t i = 0; i < sizeof uni / sizeof uni[0]; i++)
        EXPECT(roundtrip(&t2, (const uint8_t *)uni[i], strlen(uni[i]), NULL), "unicode string %zu (t2)", i);
    tokenizer_free(&t2);
    free(b);
}

TEST(parallel_encode_equals_serial) {
    const Tokenizer *t = tok1024();
    if (!t) { EXPECT(0, "no kjv tokenizer"); return; }
    // 3 x KJV (13 MB): large enough to be split into several segments
    size_t nk; const uint8_t *k1 = kjv(&nk);
    size_t n = 3 * nk;
    uint8_t *all = xmalloc(n);
    for (int r = 0; r < 3; r++) memcpy(all + (size_t)r * nk, k1, nk);
    int nth = omp_get_max_threads();
    size_t n1, n2;
    omp_set_num_threads(1);
    int32_t *a = tokenizer_encode(t, all, n, &n1);
    omp_set_num_threads(nth > 1 ? nth : 2);
    int32_t *b = tokenizer_encode(t, all, n, &n2);
    omp_set_num_threads(nth);
    EXPECT(n1 == n2 && !memcmp(a, b, n1 * sizeof(int32_t)), "serial %zu vs parallel %zu tokens", n1, n2);
    // encoding a concatenation at a newline boundary == concatenation of encodings
    size_t half = n / 2; while (!(all[half - 1] == '\n' && all[half] != '\n')) half++;
    size_t h1, h2;
    int32_t *x = tokenizer_encode(t, all, half, &h1), *y = tokenizer_encode(t, all + half, n - half, &h2);
    EXPECT(h1 + h2 == n1 && !memcmp(x, a, h1 * 4) && !memcmp(y, a + h1, h2 * 4), "split encoding differs");
    free(a); free(b); free(x); free(y); free(all);
}

TEST(tokenizer_save_load) {
    const Tokenizer *t = tok1024();
    if (!t) { EXPECT(0, "no kjv tokenizer"); return; }
    char path[300]; snprintf(path, sizeof path, "%s/tok.bin", g_tmp);
    tokenizer_save(t, path);
    EXPECT(tokenizer_file_vocab(path) == 1024, "file vocab");
    struct stat st; stat(path, &st);
    EXPECT(st.st_size == 20 + 8 * 768, "file size %lld", (long long)st.st_size);
    Tokenizer u;
    tokenizer_load(&u, path);
    EXPECT(u.vocab_size == t->vocab_size && u.n_merges == t->n_merges, "sizes");
    EXPECT(!memcmp(u.merges, t->merges, (size_t)t->n_merges * sizeof *t->merges), "merges differ");
    int same = 1;
    for (int i = 0; i < t->vocab_size; i++)
        if (u.token_len[i] != t->token_len[i] || memcmp(u.token_bytes[i], t->token_bytes[i], (size_t)t->token_len[i])) same = 0;
    EXPECT(same, "token bytes differ");
    size_t n; const uint8_t *all = kjv(&n);
    size_t n1, n2;
    int32_t *a = tokenizer_encode(t, all, 200000, &n1), *b = tokenizer_encode(&u, all, 200000, &n2);
    EXPECT(n1 == n2 && !memcmp(a, b, n1 * 4), "loaded tokenizer encodes differently");
    free(a); free(b);
    tokenizer_free(&u);
}

// ---- shards --------------------------------------------------------------------------------
static void shard_roundtrip(int vocab, int want_width) {
    uint64_t n = 123457;
    int32_t *tok = xmalloc(n * sizeof(int32_t));
    Rng r = {(uint64_t)vocab};
    for (uint64_t i = 0; i < n; i++) tok[i] = (int32_t)(rng_next(&r) % (uint64_t)vocab);
    tok[0] = vocab - 1; tok[1] = 0;
    char path[300]; snprintf(path, sizeof path, "%s/s%d.tok", g_tmp, vocab);
    shard_write(path, tok, n, vocab);
    struct stat st; stat(path, &st);
    EXPECT((uint64_t)st.st_size == 64 + n * (uint64_t)want_width, "file size %lld", (long long)st.st_size);
    TokenShard s;
    shard_open(&s, path);
    EXPECT(s.vocab_size == vocab && s.n_tokens == n && s.token_bytes == want_width, "header: vocab %d n %llu width %d",
           s.vocab_size, (unsigned long long)s.n_tokens, s.token_bytes);
    int same = 1;
    for (uint64_t i = 0; i < n; i++) if (shard_token(&s, i) != tok[i]) { same = 0; break; }
    EXPECT(same, "tokens differ after round trip (vocab %d)", vocab);
    shard_close(&s);
    free(tok);
}
TEST(shard_roundtrip_16bit) { shard_roundtrip(65536, 2); shard_roundtrip(300, 2); }
TEST(shard_roundtrip_32bit) { shard_roundtrip(70000, 4); }

// ---- datasets and loader ---------------------------------------------------------------------
TEST(dataset_synthetic_and_loader) {
    DataConfig dc; memset(&dc, 0, sizeof dc);
    strcpy(dc.dataset, "synthetic");
    snprintf(dc.cache_dir, sizeof dc.cache_dir, "%s/cache", g_tmp);
    dc.val_fraction = 0.1;
    dc.synthetic_tokens = 200000;
    PreparedData p;
    dataset_prepare(&dc, 70000, 5, &p);
    EXPECT(p.vocab_size == 70000 && p.tokenizer_path[0] == 0, "synthetic: vocab %d tokenizer \"%s\"", p.vocab_size, p.tokenizer_path);
    int T = 32, B = 8;
    DataLoader l;
    loader_open(&l, &p, T, 70000, 99);
    EXPECT(l.train.n_tokens == 180000 && l.val.n_tokens == 20000, "split %llu/%llu",
           (unsigned long long)l.train.n_tokens, (unsigned long long)l.val.n_tokens);
    EXPECT(l.train.token_bytes == 4, "70000-token vocab needs 32-bit tokens");
    int32_t *in = xmalloc(B * T * 4), *tg = xmalloc(B * T * 4), *in2 = xmalloc(B * T * 4), *tg2 = xmalloc(B * T * 4);
    loader_train_batch(&l, 1000, B, in, tg);
    loader_train_batch(&l, 1000, B, in2, tg2);
    EXPECT(!memcmp(in, in2, B * T * 4) && !memcmp(tg, tg2, B * T * 4), "same samples differ between calls");
    int shifted = 1, maxtok = 0;
    for (int b = 0; b < B; b++) {
        uint64_t off = loader_sample_offset(99, 1000 + b, l.train.n_tokens, T);
        for (int t = 0; t < T; t++) {
            if (in[b * T + t] != shard_token(&l.train, off + t) || tg[b * T + t] != shard_token(&l.train, off + t + 1)) shifted = 0;
            if (t + 1 < T && tg[b * T + t] != in[b * T + t + 1]) shifted = 0;
            if (in[b * T + t] > maxtok) maxtok = in[b * T + t];
        }
    }
    EXPECT(shifted, "targets are not the inputs shifted by one");
    EXPECT(maxtok > 60000, "synthetic tokens should span the full vocabulary (max %d)", maxtok);
    // sample k alone == sample k inside a batch
    for (int b = 0; b < B; b++) {
        loader_train_batch(&l, 1000 + b, 1, in2, tg2);
        EXPECT(!memcmp(in2, in + b * T, T * 4) && !memcmp(tg2, tg + b * T, T * 4), "sample %d differs alone vs in batch", 1000 + b);
    }
    // a different seed gives different samples
    DataLoader l2; loader_open(&l2, &p, T, 70000, 100);
    loader_train_batch(&l2, 1000, B, in2, tg2);
    EXPECT(memcmp(in, in2, B * T * 4) != 0, "seed has no effect");
    loader_close(&l2);
    // validation windows: sequential, non-overlapping, wrapping
    uint64_t W = loader_val_windows(&l);
    EXPECT(W == (uint64_t)((20000 - 1) / T), "val windows %llu", (unsigned long long)W);
    loader_val_batch(&l, W - 1, 2, in, tg);
    EXPECT(in[0] == shard_token(&l.val, (W - 1) * T) && tg[T - 1] == shard_token(&l.val, W * T), "last val window");
    EXPECT(in[T] == shard_token(&l.val, 0) && tg[T] == shard_token(&l.val, 1), "val windows wrap to 0");
    loader_close(&l);
    // same config again: cached, same directory
    PreparedData q;
    dataset_prepare(&dc, 70000, 5, &q);
    EXPECT(!strcmp(p.dir, q.dir) && q.vocab_size == 70000, "cache miss: %s vs %s", p.dir, q.dir);
    dataset_prepare(&dc, 70000, 6, &q);
    EXPECT(strcmp(p.dir, q.dir) != 0, "seed not in the synthetic cache key");
    free(in); free(tg); free(in2); free(tg2);
}

TEST(dataset_text_cache) {
    char path[300]; snprintf(path, sizeof path, "%s/corpus.txt", g_tmp);
    size_t n; const uint8_t *all = kjv(&n);
    if (!all) { EXPECT(0, "no kjv"); return; }
    FILE *f = fopen(path, "wb"); fwrite(all, 1, 300000, f); fclose(f);
    DataConfig dc; memset(&dc, 0, sizeof dc);
    snprintf(dc.dataset, sizeof dc.dataset, "text:%s", path);
    snprintf(dc.cache_dir, sizeof dc.cache_dir, "%s/cache", g_tmp);
    dc.val_fraction = 0.05;
    PreparedData p, q;
    dataset_prepare(&dc, 400, 1, &p);
    EXPECT(p.vocab_size == 400 && p.tokenizer_path[0], "vocab %d", p.vocab_size);
    EXPECT(strstr(p.dir, "/text-corpus.txt-v400-") != NULL, "cache dir name %s", p.dir);
    char marker[1200]; snprintf(marker, sizeof marker, "%s/prepared.ok", p.dir);
    struct stat st;
    EXPECT(stat(marker, &st) == 0, "no prepared.ok");
    // a val split of 5% of the token stream
    DataLoader l; loader_open(&l, &p, 16, 512, 1);
    uint64_t tot = l.train.n_tokens + l.val.n_tokens;
    EXPECT(l.val.n_tokens == (uint64_t)llround(tot * 0.05), "val %llu of %llu", (unsigned long long)l.val.n_tokens, (unsigned long long)tot);
    // train+val decode back to the corpus
    Tokenizer t; tokenizer_load(&t, p.tokenizer_path);
    int32_t *ids = xmalloc(tot * 4);
    for (uint64_t i = 0; i < l.train.n_tokens; i++) ids[i] = shard_token(&l.train, i);
    for (uint64_t i = 0; i < l.val.n_tokens; i++) ids[l.train.n_tokens + i] = shard_token(&l.val, i);
    size_t nb; uint8_t *back = tokenizer_decode(&t, ids, tot, &nb);
    EXPECT(nb == 300000 && !memcmp(back, all, nb), "shards do not decode to the corpus");
    free(back); free(ids); tokenizer_free(&t); loader_close(&l);
    // half-prepared (marker missing): rebuilt; cached otherwise; content change -> new key
    unlink(marker);
    dataset_prepare(&dc, 400, 1, &q);
    EXPECT(!strcmp(p.dir, q.dir) && stat(marker, &st) == 0, "half-prepared dir not rebuilt");
    f = fopen(path, "ab"); fputs("more", f); fclose(f);
    dataset_prepare(&dc, 400, 1, &q);
    EXPECT(strcmp(p.dir, q.dir) != 0, "content change kept the same cache key");
    dc.val_fraction = 0.1;
    PreparedData r; dataset_prepare(&dc, 400, 1, &r);
    EXPECT(strcmp(r.dir, q.dir) != 0, "val_fraction not in the cache key");
}

int main(void) {
    if (tl_tmpdir(g_tmp, sizeof g_tmp, "test_data")) return 1;
    RUN(pretokenizer_chunks);
    RUN(train_matches_naive_reference);
    RUN(stops_early_when_no_pairs_left);
    RUN(kjv_roundtrip_and_compression);
    RUN(roundtrip_random_bytes_and_unicode);
    RUN(parallel_encode_equals_serial);
    RUN(tokenizer_save_load);
    RUN(shard_roundtrip_16bit);
    RUN(shard_roundtrip_32bit);
    RUN(dataset_synthetic_and_loader);
    RUN(dataset_text_cache);
    if (g_have_tok) tokenizer_free(&g_tok1024);
    free(g_kjv);
    return tl_finish(g_tmp);
}
