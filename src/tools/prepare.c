// prepare — build (or find cached) tokenizer + token shards for a dataset, and inspect them.
//
//   build/prepare --dataset kjv --vocab 2048 [--cache-dir D] [--val-fraction F]
//                 [--synthetic-tokens N] [--seed S]      (defaults: config_defaults())
//   build/prepare --encode TOKENIZER "text"      token ids of the text, one line
//   build/prepare --decode TOKENIZER ID...       the bytes of those ids
//   build/prepare --check DIR [--seq-len T] [--model-vocab V]
//                 open DIR/{tokenizer.bin,train.tok,val.tok} exactly like training does
#include "../data/data.h"
#include "../config/config.h"
#include "../core/check.h"
#include "../core/timer.h"
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>

#define USAGE "usage: build/prepare --dataset kjv|tinyshakespeare|synthetic|text:PATH --vocab N " \
              "[--cache-dir D] [--val-fraction F] [--synthetic-tokens N] [--seed S]\n" \
              "       build/prepare --encode TOKENIZER TEXT | --decode TOKENIZER ID... | " \
              "--check DIR [--seq-len T] [--model-vocab V]"

static void usage_error(const char *fmt, const char *arg) {
    fflush(stdout);
    fputs("error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fprintf(stderr, "%s\n", USAGE);
    exit(EXIT_BAD_INPUT);
}

static int64_t parse_int(const char *flag, const char *s, int64_t lo, int64_t hi) {
    char *end; errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fflush(stdout);
        fprintf(stderr, "error: %s expects an integer in [%lld, %lld], got \"%s\"\n%s\n",
                flag, (long long)lo, (long long)hi, s, USAGE);
        exit(EXIT_BAD_INPUT);
    }
    return v;
}
static double parse_double(const char *flag, const char *s) {
    char *end; errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) {
        fflush(stdout);
        fprintf(stderr, "error: %s expects a number, got \"%s\"\n%s\n", flag, s, USAGE);
        exit(EXIT_BAD_INPUT);
    }
    return v;
}

int main(int argc, char **argv) {
    // defaults = the training defaults, so a prepared entry is exactly the one a
    // training run with the same data.* keys and train.seed will find in the cache
    Config cfg;
    config_defaults(&cfg);
    DataConfig dc = cfg.data;
    dc.dataset[0] = 0;
    uint64_t seed = cfg.train.seed;
    int vocab = -1, T = 64, model_vocab = -1;
    const char *check_dir = NULL;

    if (argc < 2) usage_error("%s", "no arguments");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { printf("%s\n", USAGE); return 0; }
        if (!strcmp(a, "--encode") || !strcmp(a, "--decode")) {
            if (i != 1 || argc < 4) usage_error("%s needs a tokenizer file and input", a);
            Tokenizer t;
            tokenizer_load(&t, argv[2]);
            if (!strcmp(a, "--encode")) {
                if (argc != 4) usage_error("%s", "--encode takes exactly one TEXT argument (quote it)");
                size_t n;
                int32_t *ids = tokenizer_encode(&t, (const uint8_t *)argv[3], strlen(argv[3]), &n);
                for (size_t k = 0; k < n; k++) printf(k ? " %d" : "%d", ids[k]);
                printf("\n");
                fprintf(stderr, "%zu bytes -> %zu tokens\n", strlen(argv[3]), n);
                free(ids);
            } else {
                size_t n = (size_t)(argc - 3), nb;
                int32_t *ids = xmalloc(n * sizeof(int32_t));
                for (size_t k = 0; k < n; k++) ids[k] = (int32_t)parse_int("--decode", argv[3 + k], 0, INT32_MAX);
                uint8_t *bytes = tokenizer_decode(&t, ids, n, &nb);
                CHECK_ERRNO(fwrite(bytes, 1, nb, stdout) != nb, "fwrite(stdout)");
                printf("\n");
                free(ids); free(bytes);
            }
            tokenizer_free(&t);
            return 0;
        }
        if (i + 1 >= argc) usage_error("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--dataset")) xsnprintf(dc.dataset, sizeof dc.dataset, "%s", v);
        else if (!strcmp(a, "--vocab")) vocab = (int)parse_int(a, v, 2, INT32_MAX);
        else if (!strcmp(a, "--cache-dir")) xsnprintf(dc.cache_dir, sizeof dc.cache_dir, "%s", v);
        else if (!strcmp(a, "--val-fraction")) dc.val_fraction = parse_double(a, v);
        else if (!strcmp(a, "--synthetic-tokens")) dc.synthetic_tokens = parse_int(a, v, 2, INT64_MAX / 8);
        else if (!strcmp(a, "--seed")) seed = (uint64_t)parse_int(a, v, 0, INT64_MAX);
        else if (!strcmp(a, "--check")) check_dir = v;
        else if (!strcmp(a, "--seq-len")) T = (int)parse_int(a, v, 1, 1 << 24);
        else if (!strcmp(a, "--model-vocab")) model_vocab = (int)parse_int(a, v, 1, INT32_MAX);
        else usage_error("unknown option \"%s\"", a);
    }

    if (check_dir) {
        PreparedData p;
        memset(&p, 0, sizeof p);
        xsnprintf(p.dir, sizeof p.dir, "%s", check_dir);
        xsnprintf(p.train_path, sizeof p.train_path, "%s/train.tok", check_dir);
        xsnprintf(p.val_path, sizeof p.val_path, "%s/val.tok", check_dir);
        char tp[1100]; struct stat st;
        xsnprintf(tp, sizeof tp, "%s/tokenizer.bin", check_dir);
        if (stat(tp, &st) == 0) xsnprintf(p.tokenizer_path, sizeof p.tokenizer_path, "%s", tp);
        else {   // synthetic: no tokenizer, vocab from the shard itself
            TokenShard s; shard_open(&s, p.train_path); p.vocab_size = s.vocab_size; shard_close(&s);
        }
        DataLoader l;
        loader_open(&l, &p, T, model_vocab > 0 ? model_vocab : INT32_MAX, seed);
        printf("ok: %s  vocab %d  train %" PRIu64 " tokens  val %" PRIu64 " tokens  (%d-byte tokens)\n",
               check_dir, l.train.vocab_size, l.train.n_tokens, l.val.n_tokens, l.train.token_bytes);
        loader_close(&l);
        return 0;
    }
    if (!dc.dataset[0]) usage_error("%s", "--dataset is required");
    if (vocab < 0) usage_error("%s", "--vocab is required");
    double t0 = now_seconds();
    PreparedData p;
    dataset_prepare(&dc, vocab, seed, &p);
    TokenShard tr, va;
    shard_open(&tr, p.train_path);
    shard_open(&va, p.val_path);
    printf("dir        %s\n", p.dir);
    printf("tokenizer  %s\n", p.tokenizer_path[0] ? p.tokenizer_path : "(none: synthetic tokens)");
    printf("vocab      %d\n", p.vocab_size);
    printf("train      %s  %" PRIu64 " tokens\n", p.train_path, tr.n_tokens);
    printf("val        %s  %" PRIu64 " tokens\n", p.val_path, va.n_tokens);
    printf("time       %.2fs\n", now_seconds() - t0);
    shard_close(&tr); shard_close(&va);
    return 0;
}
