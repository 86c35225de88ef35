// test_config.c — configuration: presets and closed-form sizes (hand-derived numbers),
// finalize defaults, overrides, YAML loading, manifests (extends, variants, grid), SHA-256.
// Error paths (exit 2 + message) are covered by tests/t_config.sh.
// `test_config --read-scalars FILE` is the engine's half of tests/config_scalars.py (below).
#define TL_USAGE "runs every test of this binary (no arguments); prints PASS/FAIL/SKIP lines, exit 1 if one failed;\n" \
    "  --read-scalars FILE: reads each case of FILE (KEY NEWLINE manifest text, cases ended by NUL) through the\n" \
    "  manifest reader, one child per case; prints OK<TAB>value or the refusal, then END<TAB>exit status\n"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <float.h>
#include <sys/wait.h>

#include "config/config.h"
#include "config/config_diff.h"
#include "config/manifest.h"
#include "model/flops.h"
#include "testlib.h"

TL_MAIN_DEFS

static char tmpdir[256];

static void write_file(const char *rel, const char *text) {
    char path[512], cmd[700];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    if (system(cmd) != 0) { fprintf(stderr, "%s failed\n", cmd); exit(1); }
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); exit(1); }
    fputs(text, f);
    fclose(f);
}
static const char *tpath(const char *rel) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, rel);
    return buf[k];
}

static Config preset_cfg(const char *preset, const char *linear) {
    Config c;
    config_defaults(&c);
    char a[128];
    snprintf(a, sizeof a, "model.preset=%s", preset);
    config_set_override(&c, a);
    snprintf(a, sizeof a, "model.linear=%s", linear);
    config_set_override(&c, a);
    config_finalize(&c);
    return c;
}

// ---- SHA-256 -----------------------------------------------------------------------

TEST(sha256_vectors) {
    // FIPS 180-2 appendix B vectors, plus block-boundary lengths (reference: Python hashlib).
    struct { const char *msg; const char *hex; } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char h[65];
        sha256_hex(v[i].msg, strlen(v[i].msg), h);
        EXPECT(!strcmp(h, v[i].hex), "sha256('%.20s...') = %s, want %s", v[i].msg, h, v[i].hex);
    }
    struct { int n; const char *hex; } x[] = {
        {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
        {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
        {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
    };
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) {
        char buf[64], h[65];
        memset(buf, 'x', sizeof buf);
        sha256_hex(buf, (size_t)x[i].n, h);
        EXPECT(!strcmp(h, x[i].hex), "sha256('x' * %d) = %s", x[i].n, h);
    }
    // one million 'a', fed in uneven pieces through the incremental API
    Sha256 s;
    sha256_init(&s);
    static char a[1000000];
    memset(a, 'a', sizeof a);
    size_t off = 0, step = 1;
    while (off < sizeof a) {
        size_t n = step < sizeof a - off ? step : sizeof a - off;
        sha256_update(&s, a + off, n);
        off += n;
        step = step * 3 + 1;
        if (step > 100000) step = 7;
    }
    uint8_t d[32];
    sha256_final(&s, d);
    char h[65];
    for (int i = 0; i < 32; i++) sprintf(h + 2 * i, "%02x", d[i]);
    EXPECT(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "million a: %s", h);
    // file hash == in-memory hash
    write_file("hash.txt", "abc");
    char fh[65];
    EXPECT(sha256_file_hex(tpath("hash.txt"), fh) == 0 && !strcmp(fh, v[1].hex), "sha256_file_hex: %s", fh);
    EXPECT(sha256_file_hex(tpath("nonexistent"), fh) == -1, "missing file must return -1");
}

// ---- presets and closed-form sizes --------------------------------------------------

TEST(param_count_cola60m) {
    // cola-60m: L=8, d=512, h=8 (MHA, so k/v are 512 wide), d_ff=1376, V=32000, untied, r=128.
    // dense, per layer:
    //   attention q,k,v,o  4 * 512*512              = 1,048,576
    //   MLP gate,up,down   3 * 512*1376             = 2,113,536
    //   2 RMSNorm gains    2 * 512                  =     1,024
    //   layer                                        = 3,163,136;  x 8 = 25,305,088
    //   final norm 512; embedding 32000*512 = 16,384,000; LM head another 16,384,000
    //   total = 25,305,088 + 512 + 32,768,000 = 58,073,600
    Config c = preset_cfg("cola-60m", "dense");
    EXPECT(model_param_count(&c.model) == 58073600LL, "dense cola-60m: %lld", (long long)model_param_count(&c.model));
    EXPECT(model_embedding_param_count(&c.model) == 32768000LL, "embedding+head");
    EXPECT(c.model.rank_attn == 0 && c.model.rank_mlp == 0, "dense: ranks zeroed (%d %d)", c.model.rank_attn, c.model.rank_mlp);
    // cola (and svd: same factor sizes), per layer:
    //   attention 4 * 128*(512+512)                  =   524,288
    //   MLP       3 * 128*(512+1376)                 =   724,992
    //   norms                                        =     1,024
    //   layer                                        = 1,250,304;  x 8 = 10,002,432
    //   total = 10,002,432 + 512 + 32,768,000 = 42,770,944  (the CoLA paper's "43M")
    c = preset_cfg("cola-60m", "cola");
    EXPECT(model_param_count(&c.model) == 42770944LL, "cola cola-60m: %lld", (long long)model_param_count(&c.model));
    EXPECT(c.model.only_lr_act == 0, "cola-60m uses only_lr_act=false");
    c = preset_cfg("cola-60m", "svd");
    EXPECT(model_param_count(&c.model) == 42770944LL, "svd cola-60m: %lld", (long long)model_param_count(&c.model));
}

TEST(param_count_tiny_odd_gqa) {
    // tiny-odd: L=3, d=48, h=3, kv=1 -> head_dim 16, k/v width 16; d_ff=70; V=300; untied.
    // dense layer: q 48*48=2304, k 48*16=768, v 768, o 2304 (6144); gate,up,down 3*48*70=10080;
    //   norms 96 -> 16,320; x3 = 48,960; + final 48 + 2*300*48 = 28,800 -> 77,808
    Config c = preset_cfg("tiny-odd", "dense");
    EXPECT(model_param_count(&c.model) == 77808, "dense tiny-odd: %lld", (long long)model_param_count(&c.model));
    // cola, r_attn=11, r_mlp=7: q 11*96=1056, k 11*64=704, v 704, o 1056 (3520);
    //   gate,up,down 3 * 7*(48+70) = 2478; norms 96 -> 6,094; x3 = 18,282; + 48 + 28,800 -> 47,130
    c = preset_cfg("tiny-odd", "cola");
    EXPECT(c.model.rank_attn == 11 && c.model.rank_mlp == 7, "tiny-odd ranks %d %d", c.model.rank_attn, c.model.rank_mlp);
    EXPECT(model_param_count(&c.model) == 47130, "cola tiny-odd: %lld", (long long)model_param_count(&c.model));
}

TEST(param_count_llama7b) {
    // boost-7b dense = the LLaMA-7B shape: 32 x (4*4096^2 + 3*4096*11008 + 2*4096) + 4096
    //   + 32000*4096 (tied) = 32 * 202,383,360 + 4096 + 131,072,000 = 6,607,343,616
    Config c = preset_cfg("boost-7b", "dense");
    EXPECT(c.model.tie_embeddings == 1, "BOOST presets tie embeddings");
    EXPECT(model_param_count(&c.model) == 6607343616LL, "boost-7b dense: %lld", (long long)model_param_count(&c.model));
    // untied it is the familiar LLaMA-7B 6,738,415,616 (cola-7b has the same shape, untied)
    c = preset_cfg("cola-7b", "dense");
    EXPECT(model_param_count(&c.model) == 6738415616LL, "cola-7b dense: %lld", (long long)model_param_count(&c.model));
}

TEST(preset_shapes) {
    struct { const char *p; int L, d, h, ff, r, T; } v[] = {
        {"cola-60m", 8, 512, 8, 1376, 128, 256},     {"cola-130m", 12, 768, 12, 2048, 256, 256},
        {"cola-350m", 24, 1024, 16, 2736, 256, 256}, {"cola-1b", 24, 2048, 32, 5461, 512, 256},
        {"cola-7b", 32, 4096, 32, 11008, 1024, 256}, {"boost-1b", 24, 2048, 32, 5472, 512, 4096},
        {"boost-3b", 28, 3072, 24, 8192, 768, 4096}, {"boost-7b", 32, 4096, 32, 11008, 1024, 4096},
        {"boost-13b", 40, 5120, 40, 13824, 1280, 4096}, {"boost-30b", 36, 8192, 64, 22016, 2048, 4096},
        {"tiny", 2, 64, 4, 172, 16, 32},             {"tiny-odd", 3, 48, 3, 70, 11, 13},
    };
    int n = 0;
    for (const char *const *p = preset_names(); *p; p++) n++;
    EXPECT(n == (int)(sizeof v / sizeof v[0]), "%d presets", n);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        Config c = preset_cfg(v[i].p, "cola");
        ModelConfig *m = &c.model;
        EXPECT(!strcmp(m->preset, v[i].p), "%s: preset name '%s'", v[i].p, m->preset);
        EXPECT(m->n_layers == v[i].L && m->d_model == v[i].d && m->n_heads == v[i].h && m->d_ff == v[i].ff &&
                   m->rank_attn == v[i].r && m->seq_len == v[i].T,
               "%s: %d %d %d %d %d %d", v[i].p, m->n_layers, m->d_model, m->n_heads, m->d_ff, m->rank_attn, m->seq_len);
        if (strncmp(v[i].p, "tiny", 4))
            EXPECT(m->vocab_size == 32000 && m->n_kv_heads == m->n_heads, "%s vocab/kv", v[i].p);
    }
    Config c = preset_cfg("tiny", "cola");
    EXPECT(c.model.vocab_size == 512 && c.model.n_kv_heads == 2, "tiny vocab %d kv %d", c.model.vocab_size, c.model.n_kv_heads);
    ModelConfig m;
    EXPECT(!preset_apply("cola-6m", &m), "unknown preset must return 0");
}

TEST(flops_formula) {
    // model/flops.h: 6 * (matmul weights incl. LM head) + causal attention 7 * L * d * (T+1)
    // cola-60m dense: matmuls 8*(1,048,576 + 2,113,536) + 512*32000 = 25,296,896 + 16,384,000
    //   = 41,680,896 -> x6 = 250,085,376; attention 7*8*512*257 = 7,368,704 -> 257,454,080
    Config c = preset_cfg("cola-60m", "dense");
    EXPECT(flops_train_per_token(&c.model) == 257454080.0, "dense: %.0f", flops_train_per_token(&c.model));
    // cola: matmuls 8*(524,288 + 724,992) + 16,384,000 = 26,378,240 -> x6 = 158,269,440 + 7,368,704
    c = preset_cfg("cola-60m", "cola");
    EXPECT(flops_train_per_token(&c.model) == 165638144.0, "cola: %.0f", flops_train_per_token(&c.model));
    // tying the embeddings removes parameters but not the LM-head matmul
    Config t = c;
    t.model.tie_embeddings = 1;
    EXPECT(flops_train_per_token(&t.model) == flops_train_per_token(&c.model), "tied flops differ");
    EXPECT(model_param_count(&c.model) - model_param_count(&t.model) == 512LL * 32000, "tied params");
    // the attention term is causal: doubling T adds 7*L*d*(513 - 257)
    Config u = c;
    u.model.seq_len *= 2;
    EXPECT(flops_train_per_token(&u.model) - flops_train_per_token(&c.model) == 7.0 * 8 * 512 * 256,
           "attention term");
}


// LaX (docs/lax.md §4-§5): params(lax) = params(base) + (L−1)·(4·X(r_a) + 3·X(r_m)) and
// flops(lax) = flops(base) + (L−1)·(4·G(r_a) + 3·G(r_m)) with G(r) the FLOPs the gate ops report
// per token (model/flops.h: dense 6r² + 2r, kron 2r(3r1 + 4r2)); the parameters are the doc's
// table (cola-60m: r 128, kron (8, 16); boost-7b: r 1024, kron (32, 32)). By hand, for the
// default kron + layernorm: cola-60m X(128) = 8² + 16² + 2·128 = 576 and 7·7·576 = 28,224
// parameters, G(128) = 256·(24 + 64) = 22,528 and 7·7·22,528 = 1,103,872 FLOPs/token.
TEST(lax_counts_worked_numbers) {
    struct { const char *preset, *gate, *norm; int64_t params; double flops; } v[] = {
        {"cola-60m", "identity", "layernorm", 42783488LL, 165638144.0},
        {"cola-60m", "identity", "none", 42770944LL, 165638144.0},
        {"cola-60m", "dense", "layernorm", 43592576LL, 170467584.0},
        {"cola-60m", "dense", "none", 43580032LL, 170467584.0},
        {"cola-60m", "kron", "layernorm", 42799168LL, 166742016.0},
        {"cola-60m", "kron", "none", 42786624LL, 166742016.0},
        {"boost-7b", "identity", "layernorm", 2690308096LL, 19896598528.0},
        {"boost-7b", "identity", "none", 2689863680LL, 19896598528.0},
        {"boost-7b", "dense", "layernorm", 2918071296LL, 21262288896.0},
        {"boost-7b", "dense", "none", 2917626880LL, 21262288896.0},
        {"boost-7b", "kron", "layernorm", 2690752512LL, 19996147712.0},
        {"boost-7b", "kron", "none", 2690308096LL, 19996147712.0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        Config c;
        config_defaults(&c);
        char a[128];
        snprintf(a, sizeof a, "model.preset=%s", v[i].preset); config_set_override(&c, a);
        config_set_override(&c, "model.linear=lax");
        snprintf(a, sizeof a, "model.lax_gate=%s", v[i].gate); config_set_override(&c, a);
        snprintf(a, sizeof a, "model.lax_norm=%s", v[i].norm); config_set_override(&c, a);
        config_finalize(&c);
        EXPECT(model_param_count(&c.model) == v[i].params && flops_train_per_token(&c.model) == v[i].flops,
               "%s lax %s %s: %lld params, %.0f FLOPs/token; want %lld, %.0f", v[i].preset, v[i].gate, v[i].norm,
               (long long)model_param_count(&c.model), flops_train_per_token(&c.model), (long long)v[i].params,
               v[i].flops);
        // the svd base has the same counts (σ and the base change no shape)
        config_set_override(&c, "model.lax_base=svd");
        config_finalize(&c);
        EXPECT(model_param_count(&c.model) == v[i].params, "%s lax svd base: %lld", v[i].preset,
               (long long)model_param_count(&c.model));
    }
    // the defaults are the authors' (cola base, kron gate, LayerNorm); a single layer has no crossing
    Config c = preset_cfg("cola-60m", "lax");
    EXPECT(c.model.lax_base == LAX_BASE_COLA && c.model.lax_gate == LAX_GATE_KRON && c.model.lax_norm == LAX_NORM_LAYERNORM,
           "lax defaults %d %d %d", c.model.lax_base, c.model.lax_gate, c.model.lax_norm);
    EXPECT(model_param_count(&c.model) == 42799168LL, "cola-60m lax defaults: %lld", (long long)model_param_count(&c.model));
    c.model.n_layers = 1;
    Config base = c; base.model.linear = LINEAR_COLA;
    EXPECT(model_param_count(&c.model) == model_param_count(&base.model) &&
           flops_train_per_token(&c.model) == flops_train_per_token(&base.model), "L = 1: no crossing");
    char *json = config_to_json(&c);
    EXPECT(strstr(json, "\"linear\": \"lax\"") && strstr(json, "\"lax_base\": \"cola\"") &&
           strstr(json, "\"lax_gate\": \"kron\"") && strstr(json, "\"lax_norm\": \"layernorm\""), "JSON: %s", json);
    free(json);
}

// ---- defaults, finalize, overrides -------------------------------------------------

TEST(defaults_and_finalize) {
    Config c;
    config_defaults(&c);
    EXPECT(c.model.preset[0] == 0 && c.model.linear == LINEAR_COLA && c.model.vocab_size == 512, "defaults");
    EXPECT(c.model.rank_attn == 0, "rank unset before finalize");
    EXPECT(!strcmp(c.data.dataset, "kjv") && !strcmp(c.data.cache_dir, "datasets/cache"), "data defaults");
    EXPECT(c.train.seed == 42 && c.train.lr == 3e-3f && c.train.grad_clip == 0.5 && c.train.steps == 100, "train defaults");
    config_finalize(&c);
    EXPECT(c.model.rank_attn == 16 && c.model.rank_mlp == 16, "ranks = d_model/4: %d %d", c.model.rank_attn, c.model.rank_mlp);
    EXPECT(c.model.n_kv_heads == 2, "kv heads of the tiny shape");
    config_finalize(&c);  // idempotent
    EXPECT(c.model.rank_attn == 16, "finalize twice");

    config_defaults(&c);
    config_set_override(&c, "model.d_model=128");
    c.model.n_kv_heads = 0;  // unset
    config_finalize(&c);
    EXPECT(c.model.rank_attn == 32 && c.model.n_kv_heads == 4, "rank %d kv %d", c.model.rank_attn, c.model.n_kv_heads);
    EXPECT(config_key_was_set(&c, "model.d_model") && !config_key_was_set(&c, "model.rank_attn"), "key_set tracking");
    // n_kv_heads follows an explicitly set n_heads unless it is set itself
    config_defaults(&c);
    config_set_override(&c, "model.n_heads=8");
    config_finalize(&c);
    EXPECT(c.model.n_kv_heads == 8, "kv follows n_heads: %d", c.model.n_kv_heads);
    config_defaults(&c);
    config_set_override(&c, "model.n_heads=8");
    config_set_override(&c, "model.n_kv_heads=2");
    config_finalize(&c);
    EXPECT(c.model.n_kv_heads == 2, "explicit kv: %d", c.model.n_kv_heads);
}

TEST(overrides) {
    Config c;
    config_defaults(&c);
    config_set_override(&c, "train.lr=3e-4");
    config_set_override(&c, "train.seed=18446744073709551615");
    config_set_override(&c, "model.tie_embeddings=true");
    config_set_override(&c, "model.linear=svd");
    config_set_override(&c, "data.dataset='text:/tmp/a b.txt'");
    config_set_override(&c, " data.synthetic_tokens = 2000000 ");
    config_set_override(&c, "train.steps=0x3e8");
    config_set_override(&c, "model.norm_eps=1e-5");
    EXPECT(c.train.lr == 3e-4f, "lr %g", c.train.lr);
    EXPECT(c.train.seed == UINT64_MAX, "seed");
    EXPECT(c.model.tie_embeddings == 1 && c.model.linear == LINEAR_SVD, "bool/enum");
    EXPECT(!strcmp(c.data.dataset, "text:/tmp/a b.txt"), "quoted string '%s'", c.data.dataset);
    EXPECT(c.data.synthetic_tokens == 2000000, "spaces around: %lld", (long long)c.data.synthetic_tokens);
    EXPECT(c.train.steps == 1000, "hexadecimal");
    EXPECT(c.model.norm_eps == 1e-5f, "float");
    // a preset given later replaces the shape, and resets "explicitly set" for its keys
    config_set_override(&c, "model.rank_attn=8");
    config_set_override(&c, "model.preset=cola-60m");
    EXPECT(c.model.d_model == 512 && c.model.rank_attn == 128 && !config_key_was_set(&c, "model.rank_attn"), "preset");
    config_set_override(&c, "model.linear=dense");
    config_finalize(&c);  // no error: the rank came from the preset
    EXPECT(c.model.rank_attn == 0, "dense ranks");
    char v[64];
    int n;
    const ConfigKey *s = config_schema(&n);
    config_format_value(&c, &s[config_key_index("model.norm_eps")], v, sizeof v);
    EXPECT(!strcmp(v, "1e-05"), "shortest float text '%s'", v);
    config_format_value(&c, &s[config_key_index("train.lr")], v, sizeof v);
    EXPECT(!strcmp(v, "0.0003"), "shortest double text '%s'", v);
}

TEST(suggest) {
    const char *const *k = config_key_names();
    const char *s = config_suggest("model.d_modle", k);
    EXPECT(s && !strcmp(s, "model.d_model"), "d_modle -> %s", s ? s : "NULL");
    s = config_suggest("model.lr", k);
    EXPECT(s && !strcmp(s, "train.lr"), "model.lr -> %s", s ? s : "NULL");
    s = config_suggest("trian.steps", k);
    EXPECT(s && !strcmp(s, "train.steps"), "trian.steps -> %s", s ? s : "NULL");
    s = config_suggest("model.completely_different", k);
    EXPECT(!s, "no suggestion expected, got %s", s ? s : "NULL");
    EXPECT(config_key_index("train.lr") >= 0 && config_key_index("train.lrr") < 0 && config_key_index("train") < 0, "index");
}

TEST(json_and_table) {
    Config c = preset_cfg("tiny", "cola");
    char *j = config_to_json(&c);
    EXPECT(j[0] == '{' && j[strlen(j) - 1] == '}', "json braces");
    EXPECT(strstr(j, "\"model\": {\"preset\": \"tiny\", \"linear\": \"cola\"") != NULL, "json model: %.80s", j);
    EXPECT(strstr(j, "\"norm_eps\": 1e-06") && strstr(j, "\"tie_embeddings\": false") && strstr(j, "\"seed\": 42"),
           "json values: %s", j);
    EXPECT(strstr(j, "\"data\": {\"dataset\": \"kjv\"") && strstr(j, "\"train\": {"), "json sections");
    free(j);
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    config_print_table(&c, f);
    fclose(f);
    EXPECT(strstr(buf, "model.d_model") && strstr(buf, "train.lr "), "table");
}

// ---- YAML files and manifests -------------------------------------------------------

TEST(load_file_preset_first) {
    // model.preset is applied before the other keys of the file, whatever the order
    write_file("plain.yaml",
               "model:\n  d_model: 96\n  preset: tiny-odd\n  n_heads: 6\n"
               "train:\n  lr: 1e-3\n  steps: 20\n  warmup_steps: 2\n"
               "data.val_fraction: 0.1\n");
    Config c;
    config_defaults(&c);
    config_load_file(&c, tpath("plain.yaml"));
    config_finalize(&c);
    EXPECT(c.model.d_model == 96 && c.model.n_heads == 6 && c.model.n_layers == 3 && c.model.d_ff == 70,
           "preset then keys: d %d h %d L %d", c.model.d_model, c.model.n_heads, c.model.n_layers);
    EXPECT(!strcmp(c.model.preset, "tiny-odd"), "preset recorded");
    EXPECT(c.train.lr == 1e-3f && c.train.steps == 20 && c.data.val_fraction == 0.1, "other keys");
    EXPECT(!strcmp(c.source_path, tpath("plain.yaml")), "source_path '%s'", c.source_path);
    // --set after the file: later keys override
    config_set_override(&c, "model.d_model=48");
    config_set_override(&c, "model.n_heads=3");
    config_finalize(&c);
    EXPECT(c.model.d_model == 48, "override after file");
    // (an empty file is refused: tests/t_config.sh)
}

// Aliases are expanded (within a node budget) and merge keys merge: explicit keys win.
TEST(manifest_aliases_and_merge_keys) {
    write_file("alias.yaml",
               "train: &t {lr: 0.002, steps: 30, warmup_steps: 3}\n"
               "variants:\n  a: {train: *t}\n  b: {train: {<<: *t, steps: 40}}\n  c: {train: {steps: 50, <<: [*t]}}\n");
    Manifest *m = manifest_load(tpath("alias.yaml"));
    EXPECT(m->n_variants == 3, "variants %d", m->n_variants);
    if (m->n_variants == 3) {
        const TrainConfig *a = &m->variants[0].config.train, *b = &m->variants[1].config.train, *c = &m->variants[2].config.train;
        EXPECT(a->lr == 0.002f && a->steps == 30 && a->warmup_steps == 3, "alias: lr %g steps %d", a->lr, a->steps);
        EXPECT(b->lr == 0.002f && b->steps == 40 && b->warmup_steps == 3, "merge: lr %g steps %d", b->lr, b->steps);
        EXPECT(c->lr == 0.002f && c->steps == 50, "merge list after the key: lr %g steps %d", c->lr, c->steps);
    }
    manifest_free(m);
}

TEST(manifest_extends_deep_merge) {
    write_file("experiments/base/parent.yaml",
               "manifest_version: 1\nname: parent\nversion: 1\ndescription: the parent\n"
               "model:\n  d_model: 96\n  n_heads: 4\n  n_kv_heads: 2\n  n_layers: 5\n"
               "train:\n  lr: 1e-3\n  steps: 50\n  warmup_steps: 5\n");
    // `extends` found through the ancestor experiments/ directory
    write_file("experiments/study/child.yaml",
               "manifest_version: 1\nname: child\nversion: 2b\nextends: base/parent.yaml\n"
               "model:\n  n_layers: 3\ntrain:\n  lr: 2e-3\n");
    Manifest *m = manifest_load(tpath("experiments/study/child.yaml"));
    EXPECT(m->n_variants == 1 && !strcmp(m->variants[0].name, "default"), "one default variant");
    EXPECT(!strcmp(m->name, "child") && !strcmp(m->version, "2b") && m->manifest_version == 1, "meta %s %s", m->name, m->version);
    EXPECT(!strcmp(m->description, "the parent"), "description inherits: '%s'", m->description);
    EXPECT(m->n_sources == 2, "sources %d", m->n_sources);
    char h[65];
    sha256_file_hex(tpath("experiments/study/child.yaml"), h);
    EXPECT(!strcmp(m->sha256, h) && !strcmp(m->sources[0].sha256, h), "sha256 of the file");
    if (m->n_sources == 2) {
        sha256_file_hex(tpath("experiments/base/parent.yaml"), h);
        EXPECT(!strcmp(m->sources[1].sha256, h), "parent sha");
    }
    const Config *c = &manifest_variant(m, NULL)->config;
    EXPECT(c->model.d_model == 96 && c->model.n_heads == 4 && c->model.n_layers == 3, "merged model d %d h %d L %d",
           c->model.d_model, c->model.n_heads, c->model.n_layers);
    EXPECT(c->train.lr == 2e-3f && c->train.steps == 50 && c->train.warmup_steps == 5, "merged train");
    EXPECT(c->model.rank_attn == 24, "finalized: rank = 96/4, got %d", c->model.rank_attn);
    EXPECT(!strcmp(c->source_path, tpath("experiments/study/child.yaml")), "source_path");
    manifest_free(m);

    // a preset in the child replaces the parent's shape keys; the child's own keys win over it
    write_file("experiments/study/child2.yaml",
               "extends: ../base/parent.yaml\nmodel:\n  n_layers: 7\n  preset: tiny\n");
    m = manifest_load(tpath("experiments/study/child2.yaml"));
    c = &m->variants[0].config;
    EXPECT(!strcmp(m->name, "child2"), "name defaults to the stem");
    EXPECT(c->model.d_model == 64 && c->model.n_layers == 7 && c->train.steps == 50, "preset layer: d %d L %d",
           c->model.d_model, c->model.n_layers);
    manifest_free(m);
    // three levels, nested mapping merge two deep
    write_file("experiments/study/grandchild.yaml", "extends: child\ntrain: {steps: 60}\n");
    m = manifest_load(tpath("experiments/study/grandchild.yaml"));
    c = &m->variants[0].config;
    EXPECT(m->n_sources == 3 && c->train.steps == 60 && c->train.lr == 2e-3f && c->model.d_model == 96, "3 levels");
    manifest_free(m);
}

TEST(manifest_named_variants) {
    write_file("named.yaml",
               "manifest_version: 1\nname: named\n"
               "model: {d_model: 64, n_layers: 2}\n"
               "train: {steps: 10, warmup_steps: 1}\n"
               "variants:\n"
               "  small: {model.rank_attn: 8, train.lr: 1e-3}\n"
               "  big:\n    model:\n      rank_attn: 32\n      rank_mlp: 24\n"
               "  base:\n"
               "  dense: {model.linear: dense}\n");
    const char *sets[] = {"train.steps=12"};
    Manifest *m = manifest_load_with(tpath("named.yaml"), sets, 1);
    EXPECT(m->n_variants == 4, "4 variants, got %d", m->n_variants);
    if (m->n_variants == 4) {
        EXPECT(!strcmp(m->variants[0].name, "small") && !strcmp(m->variants[1].name, "big") &&
                   !strcmp(m->variants[2].name, "base") && !strcmp(m->variants[3].name, "dense"),
               "names in file order");
        const Config *s = &manifest_variant(m, "small")->config, *b = &manifest_variant(m, "big")->config;
        const Config *z = &manifest_variant(m, "base")->config, *d = &manifest_variant(m, "dense")->config;
        EXPECT(s->model.rank_attn == 8 && s->model.rank_mlp == 16 && s->train.lr == 1e-3f, "small");
        EXPECT(b->model.rank_attn == 32 && b->model.rank_mlp == 24 && b->train.lr == 3e-3f, "big");
        EXPECT(z->model.rank_attn == 16, "base");
        EXPECT(d->model.linear == LINEAR_DENSE && d->model.rank_attn == 0, "dense");
        EXPECT(s->train.steps == 12 && d->train.steps == 12, "--set applies to every variant");
        EXPECT(!strcmp(s->variant, "small"), "Config.variant");
    }
    manifest_free(m);
}

TEST(manifest_grid) {
    write_file("grid.yaml",
               "name: grid\ntrain: {steps: 10, warmup_steps: 0}\n"
               "variants:\n  grid:\n    model.linear: [dense, cola]\n    train.lr: [0.001, 0.003, 1e-2]\n");
    Manifest *m = manifest_load(tpath("grid.yaml"));
    EXPECT(m->n_variants == 6, "2 x 3 = 6 variants, got %d", m->n_variants);
    const char *want[] = {"linear=dense,lr=0.001", "linear=dense,lr=0.003", "linear=dense,lr=1e-2",
                          "linear=cola,lr=0.001",  "linear=cola,lr=0.003",  "linear=cola,lr=1e-2"};
    float lr[] = {0.001f, 0.003f, 1e-2f};
    for (int i = 0; i < 6 && i < m->n_variants; i++) {
        const ManifestVariant *v = &m->variants[i];
        EXPECT(!strcmp(v->name, want[i]), "variant %d: '%s', want '%s'", i, v->name, want[i]);
        EXPECT(v->config.model.linear == (i < 3 ? LINEAR_DENSE : LINEAR_COLA) && v->config.train.lr == lr[i % 3],
               "variant %d values", i);
    }
    manifest_free(m);
}

// ---- values at the type they are used at (generated over the schema) ------------------------
// Every numeric key of the schema, its own bounds and its type's: what is accepted is read back
// as the value correctly rounded to the field's type, and what is refused says why in those
// terms. Generated from the schema rows: a new key is checked without a line here.

static int parse_ok(const ConfigKey *k, const char *text, void *dst, char *why, size_t n) {
    return config_parse_value(k, text, dst, why, n) == 0;
}

// Random decimal text: sign, 1-25 digits around a point, an exponent in [-60, 60].
static void random_decimal(unsigned long long *st, char *buf, size_t n) {
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    unsigned long long r = *st >> 11;
    int nd = 1 + (int)(r % 25), point = (int)((r >> 5) % (unsigned)(nd + 1)), e = (int)((r >> 10) % 121) - 60;
    size_t o = 0;
    if ((r >> 20) & 1) buf[o++] = '-';
    for (int i = 0; i < nd && o + 8 < n; i++) {
        if (i == point && i) buf[o++] = '.';
        *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
        buf[o++] = (char)('0' + (*st >> 33) % 10);
    }
    snprintf(buf + o, n - o, "e%d", e);
}

TEST(values_at_the_type_of_use) {
    int nk;
    const ConfigKey *keys = config_schema(&nk);
    const char *const *names = config_key_names();
    unsigned long long st = 12345;
    int n_checked = 0;
    for (int i = 0; i < nk; i++) {
        const ConfigKey *k = &keys[i];
        char why[1400], text[128];
        union { int i; int64_t l; uint64_t u; float f; double d; } v;
        int is_int = k->type == CK_INT || k->type == CK_INT64 || k->type == CK_UINT64;
        if (!is_int && k->type != CK_FLOAT && k->type != CK_DOUBLE) continue;
        n_checked++;
        // not numbers, not finite, not YAML's decimal form: refused whatever the key
        const char *never[] = { ".nan", ".inf", "-.inf", "nan", "inf", "0x1p-10", "1e", "", " 1", "1 ", "1_0.5", "++1" };
        for (size_t j = 0; j < sizeof never / sizeof *never; j++)
            EXPECT(!parse_ok(k, never[j], &v, why, sizeof why), "%s accepted '%s'", names[i], never[j]);
        if (is_int) {
            // one past the type's own limit: "too large", or outside the key's own range
            const char *past = k->type == CK_INT ? "2147483648" : k->type == CK_INT64 ? "9223372036854775808" : "18446744073709551616";
            EXPECT(!parse_ok(k, past, &v, why, sizeof why) && (strstr(why, "too large") || strstr(why, "expected an integer in")),
                   "%s = %s: %s", names[i], past, why);
            EXPECT(!parse_ok(k, "99999999999999999999999", &v, why, sizeof why), "%s: 10^23 accepted", names[i]);
            EXPECT(!parse_ok(k, "2.5", &v, why, sizeof why) && !parse_ok(k, "2.0000000000000000001e0", &v, why, sizeof why),
                   "%s: a fraction accepted", names[i]);
            // the bounds the docs state ("an integer in [lo, hi]") are accepted and read back exactly
            char desc[600], lo[40], hi[40];
            config_describe_key(k, desc, sizeof desc);
            EXPECT(sscanf(desc, "an integer in [%39[^,], %39[^]]]", lo, hi) == 2, "%s: '%s'", names[i], desc);
            const char *ends[2] = { lo, hi };
            for (int e = 0; e < 2; e++) {
                Config c;
                config_defaults(&c);
                EXPECT(parse_ok(k, ends[e], (char *)&c + k->offset, why, sizeof why), "%s = %s refused: %s", names[i], ends[e], why);
                char back[64];
                config_format_value(&c, k, back, sizeof back);
                EXPECT(!strcmp(back, ends[e]), "%s = %s reads back as %s", names[i], ends[e], back);
            }
            continue;
        }
        int f32 = k->type == CK_FLOAT;
        // beyond the type: too large for it (unless the key's own range says so first)
        EXPECT(!parse_ok(k, f32 ? "1e39" : "1e309", &v, why, sizeof why) &&
               (strstr(why, "too large") || strstr(why, "expected")), "%s: %s", names[i], why);
        // nonzero values that round to 0 or below the smallest normal of the type: refused
        EXPECT(!parse_ok(k, f32 ? "1e-46" : "1e-330", &v, why, sizeof why), "%s: a value rounding to 0 accepted", names[i]);
        EXPECT(!parse_ok(k, f32 ? "1e-40" : "1e-310", &v, why, sizeof why), "%s: a subnormal accepted", names[i]);
        // an exclusive bound: the nearest value written in decimal that rounds onto it is refused
        // ("rounds to"), the nearest value of the type inside it is accepted
        for (int side = 0; side < 2; side++) {
            unsigned excl = side ? CKF_MAX_EXCL : CKF_MIN_EXCL, has = side ? CKF_MAX : CKF_MIN;
            if (!(k->flags & has) || !(k->flags & excl)) continue;
            double b = side ? k->max : k->min;
            if (b == 0) continue;   // (0: the tests above)
            double onto = nextafter(b, side ? -INFINITY : INFINITY);   // a double inside, rounding onto b in fp32
            snprintf(text, sizeof text, "%.17g", onto);
            if (f32 && (float)onto == (float)b)
                EXPECT(!parse_ok(k, text, &v, why, sizeof why) && strstr(why, "rounds to"), "%s = %s: %s", names[i], text, why);
            double inside = f32 ? (double)nextafterf((float)b, side ? -INFINITY : INFINITY) : onto;
            snprintf(text, sizeof text, "%.17g", inside);
            EXPECT(parse_ok(k, text, &v, why, sizeof why), "%s = %s refused: %s", names[i], text, why);
        }
        // random decimals: accepted exactly when the correctly rounded value is in range and a
        // normal number of the type (or 0), and then read back as that value
        for (int r = 0; r < 400; r++) {
            random_decimal(&st, text, sizeof text);
            double x = strtod(text, NULL);
            double used = f32 ? (double)(float)x : x;
            double tiny = f32 ? FLT_MIN : DBL_MIN, lim = f32 ? FLT_MAX : DBL_MAX;
            int in = 1;
            if (k->flags & CKF_MIN) in &= (k->flags & CKF_MIN_EXCL) ? x > k->min && used > k->min : x >= k->min && used >= k->min;
            if (k->flags & CKF_MAX) in &= (k->flags & CKF_MAX_EXCL) ? x < k->max && used < k->max : x <= k->max && used <= k->max;
            int normal = fabs(x) <= lim && (used == 0 ? strspn(text, "-0.") == strcspn(text, "e") : fabs(used) >= tiny);
            // (a leading zero, 012.5: refused by the one scalar rule, whatever the value)
            const char *mant = text + (text[0] == '-');
            int lead0 = mant[0] == '0' && isdigit((unsigned char)mant[1]);
            int ok = parse_ok(k, text, &v, why, sizeof why);
            EXPECT(ok == (in && normal && !lead0), "%s = %s: %s (%s)", names[i], text, ok ? "accepted" : "refused", ok ? "" : why);
            if (ok) EXPECT(f32 ? v.f == (float)x : v.d == x, "%s = %s read back as %.9g", names[i], text, f32 ? v.f : v.d);
        }
    }
    EXPECT(n_checked >= 30, "only %d numeric keys", n_checked);
}

TEST(every_key_has_a_change_class) {
    int nk;
    const ConfigKey *keys = config_schema(&nk);
    for (int i = 0; i < nk; i++)
        EXPECT(keys[i].change > CHANGE_UNSET && keys[i].change < CHANGE_CLASS_COUNT, "%s.%s has no change class",
               keys[i].section, keys[i].key);
}

// A valid value of key k other than the default's (the schema's bounds and names).
static void other_value(const ConfigKey *k, const Config *d, char *buf, size_t n) {
    char def[1100];
    config_format_value(d, k, def, sizeof def);
    switch (k->type) {
    case CK_BOOL: snprintf(buf, n, "%s", strcmp(def, "true") ? "true" : "false"); return;
    case CK_ENUM: {
        int nn = 0, cur = *(const int *)((const char *)d + k->offset);
        while (k->enum_names[nn]) nn++;
        snprintf(buf, n, "%s", k->enum_names[(cur + 1) % nn]);
        return;
    }
    case CK_PRESET: snprintf(buf, n, "tiny-odd"); return;
    case CK_STRING:
        if (k->check) snprintf(buf, n, "%s", !strcmp(def, "kjv") ? "synthetic" : "1");
        else snprintf(buf, n, "%s.other", def);
        return;
    case CK_FLOAT: case CK_DOUBLE: {
        double x = strtod(def, NULL);
        snprintf(buf, n, "%.9g", x > 0 ? x / 2 : 0.25);
        return;
    }
    default: {
        long long x = strtoll(def, NULL, 10) + 1;
        if ((k->flags & CKF_MAX) && x > (long long)k->max) x -= 2;
        snprintf(buf, n, "%lld", x);
    }
    }
}

// Resuming with key K changed (generated for every key): refused for the model; refused for
// the run's meaning unless --allow-change K; accepted for the layout and the recording.
TEST(resume_changes_by_class) {
    int nk;
    const ConfigKey *keys = config_schema(&nk);
    const char *const *names = config_key_names();
    Config d;
    config_defaults(&d);
    char *before = config_to_json(&d);
    ResumeSource src = { "step_4.h5", "was written by", "the checkpoint" };
    for (int i = 0; i < nk; i++) {
        char val[1200], set[1400];
        other_value(&keys[i], &d, val, sizeof val);
        snprintf(set, sizeof set, "%s=%s", names[i], val);
        for (int allow = 0; allow < 2; allow++) {
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                FILE *null = fopen("/dev/null", "w");
                if (!freopen("/dev/null", "w", stderr)) _exit(9);
                Config now;
                config_defaults(&now);
                config_set_override(&now, set);
                const char *allowed[1] = { names[i] };
                char *rec = config_resume_changes(before, &now, allowed, allow, &src, null);
                _exit(rec ? 3 : 0);
            }
            int status = 0;
            waitpid(pid, &status, 0);
            int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
            ConfigChangeClass c = keys[i].change;
            int want = c == CHANGE_MODEL ? 2 : config_change_is_free(c) ? 0 : allow ? 3 : 2;
            // (model.preset tiny-odd changes the shape keys too: a model change)
            if (keys[i].type == CK_PRESET) want = 2;
            EXPECT(rc == want, "resume with %s (%s)%s: exit %d, want %d", set, config_change_class_name(c),
                   allow ? " allowed" : "", rc, want);
        }
    }
    free(before);
}

// The engine's half of tests/config_scalars.py: each case (a key, a manifest setting it) read
// by config_load_file in a child, as a run would read it; the child prints the key's value as
// the engine holds it, or dies with the engine's own refusal (stderr joined to stdout).
static int read_scalars(const char *list) {
    FILE *f = fopen(list, "rb");
    if (!f) { perror(list); return 1; }
    static char buf[1 << 22];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char path[300];
    snprintf(path, sizeof path, "%s/case.yaml", tmpdir);
    for (size_t at = 0; at < len;) {
        char *c = buf + at, *nl = strchr(c, '\n');
        at += strlen(c) + 1;
        if (!nl) continue;
        *nl = 0;
        FILE *m = fopen(path, "w");
        if (!m || fputs(nl + 1, m) < 0 || fclose(m) != 0) { perror(path); return 1; }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) {
            if (dup2(1, 2) < 0) _exit(9);
            Config cfg;
            config_defaults(&cfg);
            config_load_file(&cfg, path);
            int nk, i = config_key_index(c);
            if (i < 0) { printf("no key %s\n", c); _exit(9); }
            char v[1200];
            config_format_value(&cfg, &config_schema(&nk)[i], v, sizeof v);
            printf("OK\t%s\n", v);
            fflush(stdout);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        printf("END\t%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
    }
    return tl_finish(tmpdir);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--read-scalars")) {
        if (tl_tmpdir(tmpdir, sizeof tmpdir, "test_config")) return 1;
        return read_scalars(argv[2]);
    }
    if (tl_tmpdir(tmpdir, sizeof tmpdir, "test_config")) return 1;
    RUN(sha256_vectors);
    RUN(param_count_cola60m);
    RUN(param_count_tiny_odd_gqa);
    RUN(param_count_llama7b);
    RUN(preset_shapes);
    RUN(flops_formula);
    RUN(lax_counts_worked_numbers);
    RUN(defaults_and_finalize);
    RUN(overrides);
    RUN(suggest);
    RUN(json_and_table);
    RUN(load_file_preset_first);
    RUN(manifest_aliases_and_merge_keys);
    RUN(manifest_extends_deep_merge);
    RUN(manifest_named_variants);
    RUN(manifest_grid);
    RUN(values_at_the_type_of_use);
    RUN(every_key_has_a_change_class);
    RUN(resume_changes_by_class);
    return tl_finish(tmpdir);
}
