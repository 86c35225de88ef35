// fuzz_shard.c — libFuzzer harness: token shard headers and bodies (shard_peek, which
// never exits, and shard_open, which validates the header, the size and every token).
#include "fuzzlib.h"
#include "../src/data/data.h"

int fuzz_shard_one(const uint8_t *data, size_t n) {
    const char *path = fz_file("train.tok", data, n);
    int vocab = 0;
    uint64_t count = 0;
    char why[600];
    int peeked = shard_peek(path, &vocab, &count, why, sizeof why);
    if (FZ_REFUSED()) return 0;   // (with a good header, a token out of range)
    TokenShard s;
    shard_open(&s, path);
    if (!peeked || s.vocab_size != vocab || s.n_tokens != count) {
        fprintf(stderr, "fuzz: shard_open accepted what shard_peek described differently (%s)\n", peeked ? "counts" : why);
        abort();
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < s.n_tokens; i++) {
        int32_t t = shard_token(&s, i);
        if (t < 0 || t >= s.vocab_size) abort();
        sum += (uint64_t)t;
    }
    (void)sum;
    shard_close(&s);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) { return fuzz_shard_one(data, n); }
#endif
