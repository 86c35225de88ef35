// sample — text from a checkpoint: a look at the model itself. The checkpoint carries
// everything needed (its configuration, its run uid and variant, the tokenizer its data was
// encoded with: docs/checkpoint-format.md), so a file can be used alone. The prompt is
// encoded with that tokenizer, then tokens are generated one at a time by the model's own
// forward pass (B = 1, the window of the last seq_len tokens; causal attention makes the
// padding after them irrelevant): greedy (--temperature 0) or sampled from the softmax of
// logits / T. Checkpoints are unsharded fp32, so any back end loads them: the CPU in fp32
// (the reference) or bf16, or a GPU (--device cuda). `sample --help` lists the options.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "../backend/bf16.h"
#include "../backend/ops.h"
#include "../config/config.h"
#include "../core/fileio.h"
#include "../config/manifest.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../core/json.h"
#include "../core/rng.h"
#include "../data/data.h"
#include "../model/model.h"
#include "../model/state.h"
#include "../parallel/comm.h"
#include "../store/checkpoint.h"
#include "../train/trainer.h"

static const char *USAGE =
"usage: sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T] [--seed S]\n"
"              [--device cpu|cuda] [--precision fp32|bf16] [--tokenizer PATH]\n"
"\n"
"Generates text from a checkpoint (a step_<N>.h5 file, or a run's folder: its newest\n"
"checkpoint that verifies). The model, its run and the tokenizer come from the file.\n"
"\n"
"  --prompt TEXT      the text to continue (default \"In the beginning\"), encoded with the\n"
"                     checkpoint's tokenizer\n"
"  --tokens N         tokens to generate (default 48)\n"
"  --temperature T    0: greedy, the most likely token each time (default); > 0: sampled from\n"
"                     softmax(logits / T)\n"
"  --seed S           the sampling seed (default 1): the same seed, the same text\n"
"  --device D         cpu (default) or cuda (one GPU; the CUDA build)\n"
"  --precision P      fp32 (default; the reference) or bf16\n"
"  --tokenizer PATH   a tokenizer.bin for a checkpoint written before checkpoints embedded\n"
"                     their tokenizer (checked against the model's vocabulary); with an\n"
"                     embedded one it must be the same file (its sha256), else it is refused\n"
"  --logits FILE      also write the logits of every prompt position, from the model's own\n"
"                     forward pass, as JSON {\"prompt\": TEXT, \"ids\": [...], \"logits\":\n"
"                     [[V floats], ...]}\n"
"                     (the prompt must fit model.seq_len): what analysis/load_export.py\n"
"                     checks an export of the checkpoint against (docs/export.md)\n"
"Exit 0, or 2 on bad input (a damaged or unknown checkpoint, a missing or foreign tokenizer).\n";

static int pick(const float *logits, int V, double temperature, Rng *rng) {
    int best = 0;
    for (int i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
    if (temperature <= 0) return best;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((logits[i] - logits[best]) / temperature);
    double u = rng_uniform(rng) * sum, acc = 0;
    for (int i = 0; i < V; i++) {
        acc += exp((logits[i] - logits[best]) / temperature);
        if (acc >= u) return i;
    }
    return best;
}

// The tokenizer a checkpoint's model reads: the one embedded in the file, or `given`
// (--tokenizer), which must then be that one (its sha256); a file written before
// checkpoints embedded their tokenizer takes `given` or the path it names, checked against
// the model's vocabulary only (a note says so). *desc says which one was used.
static void load_tokenizer(Tokenizer *tok, const CheckpointMeta *meta, const char *given, const char *file, int model_vocab,
                           char *desc, size_t n) {
    if (meta->tokenizer_bin) {
        char where[1300];
        snprintf(where, sizeof where, "%.1200s: the embedded tokenizer", file);
        tokenizer_load_bytes(tok, meta->tokenizer_bin, meta->tokenizer_bin_n, where);
        snprintf(desc, n, "embedded (sha256 %.12s, vocab %d)", meta->tokenizer_sha256, tok->vocab_size);
        if (given) {
            char hex[65];
            Tokenizer other;
            tokenizer_load(&other, given);   // a damaged or foreign file: refused by name
            if (sha256_file_hex(given, hex) != 0) die_input("--tokenizer %s: cannot read it", given);
            if (strcmp(hex, meta->tokenizer_sha256))
                die_input_hint("leave out --tokenizer: the checkpoint carries its own",
                               "--tokenizer %s (sha256 %.12s, vocab %d) is not the tokenizer %s was trained with "
                               "(sha256 %.12s, vocab %d)", given, hex, other.vocab_size, file, meta->tokenizer_sha256,
                               tok->vocab_size);
            tokenizer_free(&other);
            snprintf(desc, n, "%.900s (the embedded one: sha256 %.12s, vocab %d)", given, hex, tok->vocab_size);
        }
    } else {
        const char *path = given ? given : meta->tokenizer_path;
        if (!path || !path[0])
            die_input_hint("give it with --tokenizer PATH (datasets/cache/<dataset>-v<vocab>-*/tokenizer.bin)",
                           "%s: the checkpoint holds no tokenizer (%s)", file,
                           meta->run_uid && meta->run_uid[0] && meta->tokenizer_path && !meta->tokenizer_path[0]
                               ? "its data was synthetic: token ids without text"
                               : "written before checkpoints stored it");
        struct stat sb;
        if (stat(path, &sb) != 0)
            die_input_hint("give another with --tokenizer PATH, or prepare the data again (build/prepare, or a run of the experiment)",
                           "%s: the tokenizer %s the checkpoint names is not there", file, path);
        tokenizer_load(tok, path);
        fprintf(stderr, "note: %s was written before checkpoints embedded their tokenizer: %s is checked against the "
                        "model's vocabulary (%d) only\n", file, path, model_vocab);
        snprintf(desc, n, "%.1000s", path);
    }
    if (tok->vocab_size > model_vocab)
        die_input("%s: the tokenizer %s has %d tokens, more than the model's vocabulary (%d): not the tokenizer of this model",
                  file, desc, tok->vocab_size, model_vocab);
}

// The logits of position p of the last forward pass, as float32 on the host (row16: a
// scratch row for a bf16 back end).
static void logits_row(Backend *bk, const Model *mdl, size_t p, int V, float *row, uint16_t *row16) {
    const char *src = (const char *)mdl->acts.logits + p * (size_t)V * (bk->dtype == DT_BF16 ? 2 : 4);
    if (bk->dtype == DT_BF16) {
        op_to_host(bk, row16, src, (size_t)V, DT_BF16);
        for (int i = 0; i < V; i++) row[i] = bf16_to_f32(row16[i]);
    } else {
        op_to_host(bk, row, src, (size_t)V, DT_F32);
    }
}

// --logits FILE: the prompt's ids and every position's logits, as JSON (%.9g: float32 exact).
static void write_logits(const char *path, const char *prompt, const int32_t *ids, size_t n, const float *logits, int V) {
    char err[1400];
    FILE *f = file_fopen_regular(path, "w", "--logits", err, sizeof err);
    if (!f) die_input_hint("--logits names a regular file to write (or a new name)", "%s", err);
    size_t need = json_escape(NULL, 0, prompt) + 1;
    char *lit = xmalloc(need);
    json_escape(lit, need, prompt);
    fprintf(f, "{\"prompt\": %s,\n \"ids\": [", lit);
    free(lit);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s%d", i ? ", " : "", (int)ids[i]);
    fprintf(f, "],\n \"logits\": [");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n  [", i ? "," : "");
        for (int v = 0; v < V; v++) fprintf(f, "%s%.9g", v ? ", " : "", (double)logits[i * (size_t)V + (size_t)v]);
        fprintf(f, "]");
    }
    fprintf(f, "]}\n");
    if (ferror(f) | (fclose(f) != 0)) die_input("--logits %s: cannot write it: %s", path, strerror(errno));
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    const char *path = NULL, *prompt = "In the beginning", *tok_path = NULL, *logits_path = NULL;
    int n_new = 48, device = DEVICE_CPU, prec = PRECISION_FP32, n_pos = 0;
    double temperature = 0;
    uint64_t seed = 1;
    // the options through the schema's types and messages (config/options.h); --device and
    // --precision are the keys run.device and train.precision
    const ToolOption opts[] = {
        OPT_STR_ROW("prompt", &prompt),
        OPT_INT_ROW("tokens", 1, 100000, &n_new),
        OPT_REAL_ROW("temperature", 0, 100, &temperature),
        { .name = "seed", .kind = OPT_VALUE, .type = CK_UINT64, .min = 0, .flags = CKF_MIN, .dst = &seed },
        OPT_KEY_ROW("device", "run.device", &device),
        OPT_KEY_ROW("precision", "train.precision", &prec),
        OPT_PATH_ROW("tokenizer", &tok_path),
        OPT_PATH_ROW("logits", &logits_path),
        OPT_END };
    opt_parse("sample", opts, argc, argv, &path, 1, &n_pos, USAGE);
    if (!path) die_input_hint(USAGE, "sample: no checkpoint given (checkpoints/<run uid>/step_<N>.h5)");

    char file[1200];
    CheckpointMeta meta;
    Config cfg;
    checkpoint_open(path, file, sizeof file, &meta, &cfg);
    cfg.run.device = device;         // (the keys run.device and train.precision: parsed above)
    cfg.train.precision = prec;
    const char *precision = prec == PRECISION_BF16 ? "bf16" : "fp32";
    const ModelConfig *mc = &cfg.model;
    Tokenizer tok;
    char tok_desc[1100];
    load_tokenizer(&tok, &meta, tok_path, file, mc->vocab_size, tok_desc, sizeof tok_desc);

    // the model on the chosen back end, its weights from the file
    ModelState st;
    model_state_init(&st, mc, STATE_PARAMS | STATE_OPTIM);
    checkpoint_read(file, &st, NULL);
    Backend *bk = trainer_backend(&cfg);
    Model mdl;
    const int T = mc->seq_len, V = mc->vocab_size;
    model_init_parallel(&mdl, mc, 1, T, 0, comm_single(), NULL, 1, bk, 1);
    model_set_params(&mdl, st.params);
    model_state_free(&st);

    size_t n_prompt = 0;
    int32_t *ids = tokenizer_encode(&tok, (const uint8_t *)prompt, strlen(prompt), &n_prompt);
    if (n_prompt == 0) die_input("--prompt: empty (nothing to continue)");
    if (logits_path && n_prompt > (size_t)T)
        die_input("--logits: the prompt is %zu tokens, more than the model's window (model.seq_len %d): give a shorter one",
                  n_prompt, T);
    size_t cap = n_prompt + (size_t)n_new;
    ids = realloc(ids, cap * sizeof *ids);
    CHECK(ids, "out of memory");
    int32_t *in = xcalloc((size_t)T, sizeof *in), *tg = xcalloc((size_t)T, sizeof *tg);
    float *row = xmalloc((size_t)V * sizeof *row);
    uint16_t *row16 = xmalloc((size_t)V * sizeof *row16);
    Rng rng = { .state = rng_splitmix64(seed) };
    printf("checkpoint %s: step %lld of run %s (variant %s); model %s%s%s, on %s in %s; tokenizer %s\n", file,
           (long long)meta.step, meta.run_uid && meta.run_uid[0] ? meta.run_uid : "? (written before checkpoints named it)",
           meta.variant && meta.variant[0] ? meta.variant : "?", linear_kind_name(mc->linear), mc->preset[0] ? " preset " : "",
           mc->preset, config_device_name(cfg.run.device), precision, tok_desc);
    printf("%s, %d tokens, seed %llu; the prompt is %zu token%s\n---\n",
           temperature > 0 ? "sampled" : "greedy", n_new, (unsigned long long)seed, n_prompt, n_prompt == 1 ? "" : "s");
    size_t n = n_prompt;
    for (int t = 0; t < n_new; t++) {
        size_t w = n < (size_t)T ? n : (size_t)T, first = n - w;   // the last T tokens
        memset(in, 0, (size_t)T * sizeof *in);
        memcpy(in, ids + first, w * sizeof *in);
        model_forward(&mdl, in, tg);
        logits_row(bk, &mdl, w - 1, V, row, row16);
        if (t == 0 && logits_path) {   // every prompt position of this first forward pass
            float *all = xmalloc(w * (size_t)V * sizeof *all);
            for (size_t p = 0; p < w; p++) logits_row(bk, &mdl, p, V, all + p * (size_t)V, row16);
            write_logits(logits_path, prompt, ids, w, all, V);
            free(all);
        }
        for (int i = tok.vocab_size; i < V; i++) row[i] = -INFINITY;   // ids the tokenizer cannot decode
        ids[n++] = pick(row, V, temperature, &rng);
    }
    size_t nb = 0;
    uint8_t *text = tokenizer_decode(&tok, ids, n, &nb);
    fwrite(text, 1, nb, stdout);
    printf("\n---\n");
    free(text); free(ids); free(in); free(tg); free(row); free(row16);
    model_free(&mdl);
    backend_free(bk);
    tokenizer_free(&tok);
    checkpoint_meta_free(&meta);
    return 0;
}
