// export — a checkpoint in the formats researchers evaluate with (docs/export.md).
//
// dense: Hugging Face's LlamaForCausalLM — model.safetensors (HF's tensor names, PyTorch's
// [out, in] weights), config.json, generation_config.json; the low-rank kinds (cola, svd,
// lax), which no Hugging Face class implements: model.safetensors under the checkpoint's own
// tensor names and shapes, with a config.json that analysis/load_export.py builds the model
// from. Both: the tokenizer as tokenizer.bin (the checkpoint's embedded bytes) and, when
// Hugging Face's BPE can hold it, tokenizer.json + tokenizer_config.json. Everything is
// float32, as stored; the checkpoint is verified (every checksum) before anything is written.
#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "../config/config.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/fileio.h"
#include "../core/json.h"
#include "../data/data.h"
#include "../model/state.h"
#include "../store/checkpoint.h"

static const char *USAGE =
"usage: export CHECKPOINT OUT_DIR\n"
"\n"
"Writes the model of a checkpoint (a step_<N>.h5 file, or a run's folder: its newest\n"
"checkpoint that verifies) into OUT_DIR, a new or empty folder (docs/export.md):\n"
"  dense             Hugging Face LlamaForCausalLM: model.safetensors, config.json,\n"
"                    generation_config.json (AutoModelForCausalLM.from_pretrained(OUT_DIR))\n"
"  cola, svd, lax    model.safetensors under the checkpoint's tensor names, config.json;\n"
"                    analysis/load_export.py OUT_DIR builds the model in PyTorch\n"
"and the tokenizer: tokenizer.bin (boost-c's) and tokenizer.json + tokenizer_config.json\n"
"(AutoTokenizer.from_pretrained(OUT_DIR)) when Hugging Face's BPE can hold it.\n"
"Exit 0, or 2 on bad input (a damaged checkpoint, an OUT_DIR that is not empty).\n";

// ---- a growing text buffer -----------------------------------------------------------
typedef struct { char *s; size_t n, cap; } Buf;

__attribute__((format(printf, 2, 3)))
static void bprintf(Buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        CHECK(k >= 0, "vsnprintf");
        if (b->s && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        CHECK(b->s, "out of memory");
    }
}

static void bstr(Buf *b, const char *s) {   // a JSON string literal
    size_t need = json_escape(NULL, 0, s) + 1;
    char *t = xmalloc(need);
    json_escape(t, need, s);
    bprintf(b, "%s", t);
    free(t);
}

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[1300], tmp[1400];
    xsnprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = file_atomic_open(path, tmp, sizeof tmp);
    file_atomic_write(f, data, n, tmp);
    file_atomic_commit(f, tmp, path);
}

// ---- safetensors ---------------------------------------------------------------------
// 8 bytes little-endian header length, the JSON header (padded with spaces to 8 bytes),
// then every tensor's bytes in header order, no gaps: the format of the safetensors library.
typedef struct {
    char name[160];
    int ndim;
    int64_t dims[2];
    const float *data;   // row-major [dims[0], dims[1]] (ndim 1: [dims[0]])
    int transpose;       // data holds [dims[1], dims[0]]: write its transpose
} Tensor;

static void write_safetensors(const char *dir, const Tensor *t, int n, const char *meta_json) {
    Buf h = {0};
    bprintf(&h, "{\"__metadata__\": %s", meta_json);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes = 4ull * (uint64_t)t[i].dims[0] * (uint64_t)(t[i].ndim == 2 ? t[i].dims[1] : 1);
        bprintf(&h, ", ");
        bstr(&h, t[i].name);
        if (t[i].ndim == 1) bprintf(&h, ": {\"dtype\": \"F32\", \"shape\": [%" PRId64 "]", t[i].dims[0]);
        else bprintf(&h, ": {\"dtype\": \"F32\", \"shape\": [%" PRId64 ", %" PRId64 "]", t[i].dims[0], t[i].dims[1]);
        bprintf(&h, ", \"data_offsets\": [%" PRIu64 ", %" PRIu64 "]}", off, off + bytes);
        off += bytes;
    }
    bprintf(&h, "}");
    while (h.n % 8) bprintf(&h, " ");
    char path[1300], tmp[1400];
    xsnprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = file_atomic_open(path, tmp, sizeof tmp);
    unsigned char len[8];
    for (int k = 0; k < 8; k++) len[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    file_atomic_write(f, len, 8, tmp);
    file_atomic_write(f, h.s, h.n, tmp);
    for (int i = 0; i < n; i++) {
        int64_t rows = t[i].dims[0], cols = t[i].ndim == 2 ? t[i].dims[1] : 1;
        if (!t[i].transpose) { file_atomic_write(f, t[i].data, 4 * (size_t)(rows * cols), tmp); continue; }
        float *row = xmalloc((size_t)cols * sizeof *row);   // row r of the transpose: column r of data [cols, rows]
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t c = 0; c < cols; c++) row[c] = t[i].data[c * rows + r];
            file_atomic_write(f, row, 4 * (size_t)cols, tmp);
        }
        free(row);
    }
    file_atomic_commit(f, tmp, path);
    free(h.s);
}

// ---- the tensors of each layout --------------------------------------------------------
// Hugging Face's Llama names for the dense model: weights [out, in], the engine's transposed.
static int hf_name(const char *engine, char *out, size_t n, int *transpose) {
    int layer;
    char grp[16], proj[16];
    static const char *map[][2] = { { "q", "self_attn.q_proj" }, { "k", "self_attn.k_proj" }, { "v", "self_attn.v_proj" },
                                    { "o", "self_attn.o_proj" }, { "gate", "mlp.gate_proj" }, { "up", "mlp.up_proj" },
                                    { "down", "mlp.down_proj" } };
    *transpose = 0;
    if (!strcmp(engine, "model/embed_tokens")) { snprintf(out, n, "model.embed_tokens.weight"); return 1; }
    if (!strcmp(engine, "model/final_norm")) { snprintf(out, n, "model.norm.weight"); return 1; }
    if (!strcmp(engine, "model/lm_head")) { snprintf(out, n, "lm_head.weight"); *transpose = 1; return 1; }
    int used = 0;
    if (sscanf(engine, "model/layers/%d/input_norm%n", &layer, &used) == 1 && !engine[used]) {
        snprintf(out, n, "model.layers.%d.input_layernorm.weight", layer);
        return 1;
    }
    if (sscanf(engine, "model/layers/%d/post_attn_norm%n", &layer, &used) == 1 && !engine[used]) {
        snprintf(out, n, "model.layers.%d.post_attention_layernorm.weight", layer);
        return 1;
    }
    if (sscanf(engine, "model/layers/%d/%15[a-z]/%15[a-z]/W%n", &layer, grp, proj, &used) == 3 && !engine[used])
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (!strcmp(proj, map[i][0])) { snprintf(out, n, "model.layers.%d.%s.weight", layer, map[i][1]); *transpose = 1; return 1; }
    return 0;
}

static Tensor *tensors_of(const ModelState *st, int hf, int *n_out) {
    Tensor *t = xcalloc((size_t)st->table.n_specs, sizeof *t);
    for (int i = 0; i < st->table.n_specs; i++) {
        const ParamSpec *s = &st->table.specs[i];
        Tensor *x = &t[i];
        x->data = st->params + s->offset;
        x->ndim = s->ndim == 1 ? 1 : 2;
        x->dims[0] = s->ndim == 1 ? s->cols : s->rows;
        x->dims[1] = s->ndim == 1 ? 0 : s->cols;
        if (!hf) { snprintf(x->name, sizeof x->name, "%s", s->name); continue; }
        if (!hf_name(s->name, x->name, sizeof x->name, &x->transpose))
            DIE("export: parameter %s has no Hugging Face Llama name", s->name);   // the dense table is fixed
        if (x->transpose) { int64_t d = x->dims[0]; x->dims[0] = x->dims[1]; x->dims[1] = d; }
    }
    *n_out = st->table.n_specs;
    return t;
}

// ---- the tokenizer in Hugging Face's form ------------------------------------------------
// Byte-level BPE as GPT-2 spells it: each byte is one printable character (bytes_to_unicode:
// the printable Latin-1 bytes stand for themselves, the others for 256 + k in byte order),
// a token is its bytes so spelled, a merge "left right". The pre-tokenizer runs after the
// byte mapping, so its pattern counts bytes, as bpe_chunk_end does (data.h): the classes of
// docs/data-format.md, spelled as the mapped characters.
static void byte_chars(uint32_t cp[256]) {
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        cp[b] = printable ? (uint32_t)b : (uint32_t)(256 + k++);
    }
}

static void put_utf8(Buf *b, uint32_t c) {
    if (c < 0x80) bprintf(b, "%c", (char)c);
    else if (c < 0x800) bprintf(b, "%c%c", (char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F)));
    else bprintf(b, "%c%c%c", (char)(0xE0 | (c >> 12)), (char)(0x80 | ((c >> 6) & 0x3F)), (char)(0x80 | (c & 0x3F)));
}

static void put_token(Buf *b, const uint32_t cp[256], const uint8_t *bytes, int len) {
    bprintf(b, "\"");
    for (int i = 0; i < len; i++) {
        uint32_t c = cp[bytes[i]];
        if (c == '"' || c == '\\') bprintf(b, "\\%c", (char)c);
        else put_utf8(b, c);
    }
    bprintf(b, "\"");
}

// A character class of the mapped bytes for which in(b) holds: "[\x{..}...]".
static void put_class(Buf *b, const uint32_t cp[256], int (*in)(int)) {
    bprintf(b, "[");
    for (int c = 0; c < 256; c++)
        if (in(c)) bprintf(b, "\\\\x{%X}", cp[c]);
    bprintf(b, "]");
}
static int is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_punct(int c) { return !is_letter(c) && !is_digit(c) && !is_space(c); }
static int is_lp(int c) { return is_letter(c) || is_punct(c); }
static int is_cont(int c) { return (c & 0xC0) == 0x80; }
static int is_blank(int c) { return c == ' '; }

// The pre-tokenizer as one pattern (the JSON text of it: backslashes doubled). With L, P, D,
// S the classes, C the UTF-8 continuation bytes and " " the space, in bpe_chunk_end's order:
//   " "?L{1,255 or 256}(?!C)   a word, its leading space, cut at 256 bytes before a UTF-8 lead byte
//   " "?P{1,255 or 256}        punctuation, likewise (P is ASCII: no cut inside a character)
//   D{1,256}                   digits
//   S{1,255}(?=" "[LP])        whitespace that leaves its last space to the next word
//   S{1,256}                   whitespace
static void put_pattern(Buf *b, const uint32_t cp[256]) {
    Buf sp = {0}, L = {0}, P = {0}, D = {0}, S = {0}, C = {0}, LP = {0};
    put_class(&sp, cp, is_blank); put_class(&L, cp, is_letter); put_class(&P, cp, is_punct);
    put_class(&D, cp, is_digit); put_class(&S, cp, is_space); put_class(&C, cp, is_cont); put_class(&LP, cp, is_lp);
    bprintf(b, "%s%s{1,255}(?!%s)|%s{1,256}(?!%s)|%s%s{1,255}|%s{1,256}|%s{1,256}|%s{1,255}(?=%s%s)|%s{1,256}",
            sp.s, L.s, C.s, L.s, C.s, sp.s, P.s, P.s, D.s, S.s, sp.s, LP.s, S.s);
    free(sp.s); free(L.s); free(P.s); free(D.s); free(S.s); free(C.s); free(LP.s);
}

static int cmp_token(const void *a, const void *b, void *ctx) {
    const Tokenizer *t = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int n = t->token_len[x] < t->token_len[y] ? t->token_len[x] : t->token_len[y];
    int c = memcmp(t->token_bytes[x], t->token_bytes[y], (size_t)n);
    return c ? c : t->token_len[x] - t->token_len[y];
}

// tokenizer.json and tokenizer_config.json, or 0 and why not in why: Hugging Face's BPE maps
// each string to one id, so two merges that make the same bytes cannot both be held.
static int write_hf_tokenizer(const char *dir, const Tokenizer *t, char *why, size_t wn) {
    int V = t->vocab_size;
    int *order = xmalloc((size_t)V * sizeof *order);
    for (int i = 0; i < V; i++) order[i] = i;
    qsort_r(order, (size_t)V, sizeof *order, cmp_token, (void *)t);
    for (int i = 1; i < V; i++)
        if (!cmp_token(&order[i - 1], &order[i], (void *)t)) {
            int a = order[i - 1] < order[i] ? order[i - 1] : order[i], b = order[i - 1] ^ order[i] ^ a;
            snprintf(why, wn, "tokens %d and %d are the same %d bytes (merges %d and %d make one string two ways), and "
                     "Hugging Face's BPE holds one id per string", a, b, t->token_len[a], a - 256, b - 256);
            free(order);
            return 0;
        }
    free(order);
    uint32_t cp[256];
    byte_chars(cp);
    Buf b = {0};
    bprintf(&b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [],\n"
                "  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [\n"
                "    {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n"
                "    {\"type\": \"Split\", \"pattern\": {\"Regex\": \"");
    put_pattern(&b, cp);
    bprintf(&b, "\"}, \"behavior\": \"Isolated\", \"invert\": false}]},\n  \"post_processor\": null,\n"
                "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n"
                "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": null,\n"
                "    \"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n"
                "    \"vocab\": {");
    for (int i = 0; i < V; i++) {
        bprintf(&b, "%s\n      ", i ? "," : "");
        put_token(&b, cp, t->token_bytes[i], t->token_len[i]);
        bprintf(&b, ": %d", i);
    }
    bprintf(&b, "},\n    \"merges\": [");
    for (int i = 0; i < t->n_merges; i++) {
        int l = t->merges[i][0], r = t->merges[i][1];
        bprintf(&b, "%s\n      [", i ? "," : "");
        put_token(&b, cp, t->token_bytes[l], t->token_len[l]);
        bprintf(&b, ", ");
        put_token(&b, cp, t->token_bytes[r], t->token_len[r]);
        bprintf(&b, "]");
    }
    bprintf(&b, "]\n  }\n}\n");
    write_file(dir, "tokenizer.json", b.s, b.n);
    free(b.s);
    const char *cfg = "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"model_max_length\": 1000000000,\n"
                      "  \"clean_up_tokenization_spaces\": false\n}\n";
    write_file(dir, "tokenizer_config.json", cfg, strlen(cfg));
    return 1;
}

// ---- config.json -------------------------------------------------------------------------
// What every export says of where it comes from, as the JSON object "boost_c".
static void put_provenance(Buf *b, const char *file, const CheckpointMeta *m, const char *layout) {
    bprintf(b, "  \"boost_c\": {\n    \"format\": \"boost-c export\",\n    \"format_version\": 1,\n    \"layout\": ");
    bstr(b, layout);
    bprintf(b, ",\n    \"checkpoint\": ");
    bstr(b, file);
    bprintf(b, ",\n    \"step\": %" PRId64 ",\n    \"run_uid\": ", m->step);
    bstr(b, m->run_uid ? m->run_uid : "");
    bprintf(b, ",\n    \"variant\": ");
    bstr(b, m->variant ? m->variant : "");
    bprintf(b, ",\n    \"git_commit\": ");
    bstr(b, m->git_commit ? m->git_commit : "");
    bprintf(b, ",\n    \"tokenizer_sha256\": ");
    bstr(b, m->tokenizer_sha256);
    bprintf(b, ",\n    \"config\": %s\n  }", m->config_json);   // the resolved configuration, as JSON
}

// The shortest decimal text that reads back as the same float (1e-06, not 9.99999997e-07).
static const char *short_float(float v, char buf[32]) {
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, 32, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    return buf;
}

// tok_vocab: the embedded tokenizer's vocabulary (0: none).
static void write_hf_config(const char *dir, const ModelConfig *mc, const char *file, const CheckpointMeta *m, int tok_vocab) {
    Buf b = {0};
    char eps[32], theta[32], std[32];
    bprintf(&b, "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
                "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
                "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
                "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": %s,\n  \"rope_theta\": %s,\n"
                "  \"rope_scaling\": null,\n  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"
                "  \"tie_word_embeddings\": %s,\n  \"initializer_range\": %s,\n  \"torch_dtype\": \"float32\",\n"
                "  \"use_cache\": true,\n  \"bos_token_id\": null,\n  \"eos_token_id\": null,\n  \"pad_token_id\": null,\n",
            mc->vocab_size, mc->d_model, mc->d_ff, mc->n_layers, mc->n_heads, mc->n_kv_heads, mc->d_model / mc->n_heads,
            mc->seq_len, short_float(mc->norm_eps, eps), short_float(mc->rope_theta, theta),
            mc->tie_embeddings ? "true" : "false", short_float(mc->embed_std, std));
    put_provenance(&b, file, m, "hf-llama");
    bprintf(&b, "\n}\n");
    write_file(dir, "config.json", b.s, b.n);
    free(b.s);
    // build/sample's defaults: greedy, the window of one training sequence, and the ids past
    // the tokenizer's vocabulary never generated (a corpus whose BPE saturated below
    // model.vocab_size leaves embedding rows no text decodes to; sample masks them too)
    b = (Buf){0};
    bprintf(&b, "{\n  \"do_sample\": false,\n  \"max_length\": %d,\n  \"bos_token_id\": null,\n  \"eos_token_id\": null,\n"
                "  \"pad_token_id\": null", mc->seq_len);
    if (tok_vocab > 0 && tok_vocab < mc->vocab_size) {
        bprintf(&b, ",\n  \"suppress_tokens\": [");
        for (int i = tok_vocab; i < mc->vocab_size; i++) bprintf(&b, "%s%d", i > tok_vocab ? ", " : "", i);
        bprintf(&b, "]");
    }
    bprintf(&b, "\n}\n");
    write_file(dir, "generation_config.json", b.s, b.n);
    free(b.s);
}

static void write_lowrank_config(const char *dir, const ModelConfig *mc, const char *file, const CheckpointMeta *m) {
    Buf b = {0};
    bprintf(&b, "{\n  \"architectures\": [\"BoostCLowRankForCausalLM\"],\n  \"model_type\": \"boost-c\",\n"
                "  \"linear\": \"%s\",\n  \"vocab_size\": %d,\n  \"max_position_embeddings\": %d,\n"
                "  \"loader\": \"analysis/load_export.py\",\n",
            linear_kind_name(mc->linear), mc->vocab_size, mc->seq_len);
    put_provenance(&b, file, m, "boost-c");
    bprintf(&b, "\n}\n");
    write_file(dir, "config.json", b.s, b.n);
    free(b.s);
}

// OUT_DIR: created, or an empty folder (an export never replaces files it did not write).
static void prepare_out(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) die_input_hint("give a new folder name", "export: %s is a file, not a folder", dir);
        DIR *d = opendir(dir);
        if (!d) die_input("export: cannot read the folder %s: %s", dir, strerror(errno));
        struct dirent *e;
        int n = 0;
        while ((e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
        closedir(d);
        if (n > 0) die_input_hint("give a new folder, or empty that one", "export: %s is not empty (%d entries)", dir, n);
        return;
    }
    char err[1200];
    if (file_mkdir_p(dir, err, sizeof err) != 0) die_input_hint("choose a writable place", "export: cannot create %s: %s", dir, err);
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    const char *path = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(USAGE, stdout); return 0; }
        if (a[0] == '-') die_input_hint(USAGE, "export: unknown option '%s'", a);
        if (!path) path = a;
        else if (!out) out = a;
        else die_input_hint(USAGE, "export: one checkpoint and one folder (got '%s' too)", a);
    }
    if (!path || !out) die_input_hint(USAGE, "export: %s", !path ? "no checkpoint given" : "no output folder given");

    char file[1200];
    CheckpointMeta meta;
    Config cfg;
    checkpoint_open(path, file, sizeof file, &meta, &cfg);
    const ModelConfig *mc = &cfg.model;
    Tokenizer tok = {0};
    if (meta.tokenizer_bin) {
        char where[1300];
        snprintf(where, sizeof where, "%.1200s: the embedded tokenizer", file);
        tokenizer_load_bytes(&tok, meta.tokenizer_bin, meta.tokenizer_bin_n, where);
    }
    ModelState st;
    model_state_init(&st, mc, STATE_PARAMS | STATE_OPTIM);
    checkpoint_read(file, &st, NULL);
    prepare_out(out);

    int hf = mc->linear == LINEAR_DENSE, n;
    Tensor *t = tensors_of(&st, hf, &n);
    Buf md = {0};   // safetensors' metadata: string values only
    bprintf(&md, "{\"format\": \"pt\", \"boost_c_layout\": \"%s\", \"boost_c_checkpoint\": ", hf ? "hf-llama" : "boost-c");
    bstr(&md, file);
    bprintf(&md, ", \"boost_c_step\": \"%" PRId64 "\"}", meta.step);
    write_safetensors(out, t, n, md.s);
    free(md.s);
    if (hf) write_hf_config(out, mc, file, &meta, meta.tokenizer_bin ? tok.vocab_size : 0);
    else write_lowrank_config(out, mc, file, &meta);
    char tok_note[600] = "", why[400];
    if (meta.tokenizer_bin) {
        write_file(out, "tokenizer.bin", meta.tokenizer_bin, meta.tokenizer_bin_n);
        if (!write_hf_tokenizer(out, &tok, why, sizeof why))
            snprintf(tok_note, sizeof tok_note, "; no tokenizer.json: %.500s (tokenizer.bin is boost-c's)", why);
    } else {
        snprintf(tok_note, sizeof tok_note, "; no tokenizer: the checkpoint holds none (%s)",
                 meta.tokenizer_path && meta.tokenizer_path[0] ? "written before checkpoints embedded it" : "synthetic data");
    }
    printf("exported %s (step %" PRId64 ", %s, %s) to %s: %s%s%s\n", file, meta.step, linear_kind_name(mc->linear),
           hf ? "Hugging Face LlamaForCausalLM" : "the boost-c low-rank layout of docs/export.md", out,
           "model.safetensors, config.json", hf ? ", generation_config.json" : "",
           meta.tokenizer_bin ? (tok_note[0] ? ", tokenizer.bin" : ", tokenizer.bin, tokenizer.json, tokenizer_config.json") : "");
    if (tok_note[0]) printf("note: %s\n", tok_note + 2);
    free(t);
    model_state_free(&st);
    if (meta.tokenizer_bin) tokenizer_free(&tok);
    checkpoint_meta_free(&meta);
    return 0;
}
