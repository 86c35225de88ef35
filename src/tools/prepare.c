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
#include "../config/options.h"
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
    {   // --encode / --decode: a form of their own (the first argument)
        const char *a = argv[1];
        if (!strcmp(a, "--encode") || !strcmp(a, "--decode")) {
            if (argc < 4) usage_error("%s needs a tokenizer file and input", a);
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
                static const ToolOption id = OPT_INT_ROW("decode", 0, INT32_MAX, NULL);
                for (size_t k = 0; k < n; k++) opt_value("prepare", "decode", &id, argv[3 + k], &ids[k]);
                uint8_t *bytes = tokenizer_decode(&t, ids, n, &nb);
                CHECK_ERRNO(fwrite(bytes, 1, nb, stdout) != nb, "fwrite(stdout)");
                printf("\n");
                free(ids); free(bytes);
            }
            tokenizer_free(&t);
            return 0;
        }
    }
    // the options are the schema's keys where they set one (config/options.h)
    const ToolOption opts[] = {
        OPT_KEY_ROW("dataset", "data.dataset", dc.dataset),
        OPT_KEY_ROW("vocab", "model.vocab_size", &vocab),
        OPT_KEY_ROW("cache-dir", "data.cache_dir", dc.cache_dir),
        OPT_KEY_ROW("val-fraction", "data.val_fraction", &dc.val_fraction),
        OPT_KEY_ROW("synthetic-tokens", "data.synthetic_tokens", &dc.synthetic_tokens),
        OPT_KEY_ROW("seed", "train.seed", &seed),
        OPT_PATH_ROW("check", &check_dir),
        OPT_KEY_ROW("seq-len", "model.seq_len", &T),
        OPT_KEY_ROW("model-vocab", "model.vocab_size", &model_vocab),
        OPT_END };
    opt_parse("prepare", opts, argc, argv, NULL, 0, NULL, USAGE);

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
