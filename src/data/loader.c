// loader.c — stateless batches from token shards (docs/data-format.md, "Sampling").
#include "data.h"
#include <limits.h>
#include "cache_hint.h"
#include "../core/check.h"
#include "../core/rng.h"

uint64_t loader_sample_offset(uint64_t seed, uint64_t k, uint64_t n_tokens, int T) {
    CHECK(n_tokens > (uint64_t)T, "loader_sample_offset: %llu tokens for T=%d", (unsigned long long)n_tokens, T);
    return rng_splitmix64(rng_splitmix64(seed) ^ rng_splitmix64(k)) % (n_tokens - (uint64_t)T);
}

static void vocab_mismatch(const char *shard, int v1, const char *other, int v2, const char *hint) {
    die_input_hint(hint, "vocabulary mismatch: shard %s has vocab %d, %s has %d", shard, v1, other, v2);
}

void loader_open(DataLoader *l, const PreparedData *p, int T, int model_vocab, uint64_t seed) {
    memset(l, 0, sizeof *l);
    CHECK(T >= 1, "loader_open: T=%d", T);
    char hint[PATH_MAX + 1024];
    data_entry_hint(hint, sizeof hint, p->dir);
    int tv = 0;
    const char *tname = "";
    char tdesc[1200];
    if (p->tokenizer_path[0]) {
        tv = tokenizer_file_vocab(p->tokenizer_path);
        xsnprintf(tdesc, sizeof tdesc, "tokenizer %s", p->tokenizer_path);
    } else {
        tv = p->vocab_size;
        xsnprintf(tdesc, sizeof tdesc, "the prepared dataset (no tokenizer)");
    }
    tname = tdesc;
    shard_open(&l->train, p->train_path);
    shard_open(&l->val, p->val_path);
    if (l->train.vocab_size != tv) vocab_mismatch(p->train_path, l->train.vocab_size, tname, tv, hint);
    if (l->val.vocab_size != tv) vocab_mismatch(p->val_path, l->val.vocab_size, tname, tv, hint);
    if (l->train.vocab_size > model_vocab) {
        char h2[200];
        xsnprintf(h2, sizeof h2, "set model.vocab_size >= %d (or prepare the data with a smaller vocabulary)", l->train.vocab_size);
        die_input_hint(h2, "vocabulary mismatch: shard %s has vocab %d but model.vocab_size is %d",
                       p->train_path, l->train.vocab_size, model_vocab);
    }
    if (l->train.n_tokens < (uint64_t)T + 1)
        die_input_hint("use a larger corpus or a smaller model.seq_len",
                       "%s: %llu tokens, too short for one training window of seq_len %d (+1 target)",
                       p->train_path, (unsigned long long)l->train.n_tokens, T);
    if (l->val.n_tokens && l->val.n_tokens < (uint64_t)T + 1)
        die_input_hint("raise data.val_fraction (or set it to 0 for no validation) or lower model.seq_len",
                       "%s: %llu tokens, too short for one validation window of seq_len %d (+1 target)",
                       p->val_path, (unsigned long long)l->val.n_tokens, T);
    l->seed = seed;
    l->T = T;
}

void loader_close(DataLoader *l) {
    shard_close(&l->train);
    shard_close(&l->val);
    memset(l, 0, sizeof *l);
}

static void fill_window(const TokenShard *s, uint64_t off, int T, int32_t *in, int32_t *tg) {
    if (s->token_bytes == 2) {
        const uint16_t *t = (const uint16_t *)s->tokens + off;
        for (int i = 0; i < T; i++) { in[i] = t[i]; tg[i] = t[i + 1]; }
    } else {
        const uint32_t *t = (const uint32_t *)s->tokens + off;
        for (int i = 0; i < T; i++) { in[i] = (int32_t)t[i]; tg[i] = (int32_t)t[i + 1]; }
    }
}

void loader_train_batch(const DataLoader *l, uint64_t first_sample, int B, int32_t *inputs, int32_t *targets) {
    int T = l->T;
    for (int b = 0; b < B; b++) {
        uint64_t off = loader_sample_offset(l->seed, first_sample + (uint64_t)b, l->train.n_tokens, T);
        fill_window(&l->train, off, T, inputs + (size_t)b * T, targets + (size_t)b * T);
    }
}

uint64_t loader_val_windows(const DataLoader *l) {
    return l->val.n_tokens > (uint64_t)l->T ? (l->val.n_tokens - 1) / (uint64_t)l->T : 0;
}

void loader_val_batch(const DataLoader *l, uint64_t first_window, int B, int32_t *inputs, int32_t *targets) {
    uint64_t W = loader_val_windows(l);
    CHECK(W > 0, "loader_val_batch: no validation data (val shard %s has %llu tokens); check loader_has_val()",
          l->val.path, (unsigned long long)l->val.n_tokens);
    int T = l->T;
    for (int b = 0; b < B; b++) {
        uint64_t off = ((first_window + (uint64_t)b) % W) * (uint64_t)T;
        fill_window(&l->val, off, T, inputs + (size_t)b * T, targets + (size_t)b * T);
    }
}
