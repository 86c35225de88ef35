// fuzz_tokenizer.c — libFuzzer harness: tokenizer files (tokenizer_peek, which never
// exits; tokenizer_file_vocab and tokenizer_load, which validate every merge). A file
// that loads must round-trip text exactly: decode(encode(s)) == s.
#include "fuzzlib.h"
#include "../src/data/data.h"

int fuzz_tokenizer_one(const uint8_t *data, size_t n) {
    const char *path = fz_file("tokenizer.bin", data, n);
    int vocab = 0;
    char why[600];
    int peeked = tokenizer_peek(path, &vocab, why, sizeof why);
    if (FZ_REFUSED()) return 0;
    int v2 = tokenizer_file_vocab(path);
    if (!peeked || v2 != vocab) { fprintf(stderr, "fuzz: tokenizer_peek said %d (%s), file_vocab %d\n", vocab, why, v2); abort(); }
    Tokenizer t;
    tokenizer_load(&t, path);
    static const char text[] = "In the beginning God created the heaven and the earth. 1234 \xce\xa9mega\n\x01\xff\tend";
    size_t ni = 0, nb = 0;
    int32_t *ids = tokenizer_encode(&t, (const uint8_t *)text, sizeof text - 1, &ni);
    uint8_t *back = tokenizer_decode(&t, ids, ni, &nb);
    if (nb != sizeof text - 1 || memcmp(back, text, nb)) { fprintf(stderr, "fuzz: the tokenizer does not round-trip\n"); abort(); }
    free(ids); free(back);
    tokenizer_free(&t);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) { return fuzz_tokenizer_one(data, n); }
#endif
