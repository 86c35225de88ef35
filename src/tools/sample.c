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
#include "../config/config_diff.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
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
"  --tokenizer PATH   another tokenizer file (a checkpoint written before the tokenizer was\n"
"                     stored, or data moved since)\n"
"Exit 0, or 2 on bad input (a damaged or unknown checkpoint, a missing tokenizer).\n";

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

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    const char *path = NULL, *prompt = "In the beginning", *tok_path = NULL;
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
        OPT_STR_ROW("tokenizer", &tok_path),
        OPT_END };
    opt_parse("sample", opts, argc, argv, &path, 1, &n_pos, USAGE);
    if (!path) die_input_hint(USAGE, "sample: no checkpoint given (checkpoints/<run uid>/step_<N>.h5)");

    // a run's folder: its newest checkpoint that verifies
    char file[1200];
    struct stat sb;
    if (stat(path, &sb) != 0) die_input_hint("checkpoints are checkpoints/<run uid>/step_<N>.h5", "%s: no such file or folder", path);
    if (S_ISDIR(sb.st_mode)) {
        int64_t step;
        char dir[1100];
        snprintf(dir, sizeof dir, "%s", path);
        for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--) dir[l - 1] = 0;
        if (!checkpoint_latest_good(dir, file, sizeof file, &step, NULL, NULL))
            die_input("%s: no checkpoint there that verifies (step_<N>.h5)", path);
    } else {
        snprintf(file, sizeof file, "%s", path);
    }
    CheckpointMeta meta;
    char why[1500];
    if (!checkpoint_read_meta(file, &meta, why, sizeof why)) die_input("%s: %s", file, why);
    Config cfg;
    char where[1300];
    snprintf(where, sizeof where, "%s (its attribute config)", file);
    config_from_json(&cfg, meta.config_json, where);
    config_finalize(&cfg);
    cfg.run.device = device;
    cfg.train.precision = prec;
    const char *precision = prec == PRECISION_BF16 ? "bf16" : "fp32";
    const ModelConfig *mc = &cfg.model;
    if (!tok_path) tok_path = meta.tokenizer_path;
    if (!tok_path || !tok_path[0])
        die_input_hint("give it with --tokenizer PATH (datasets/cache/<dataset>-v<vocab>-*/tokenizer.bin)",
                       "%s: the checkpoint names no tokenizer (%s)", file,
                       meta.run_uid && meta.run_uid[0] ? "its data was synthetic: token ids without text"
                                                       : "written before checkpoints stored it");
    if (stat(tok_path, &sb) != 0)
        die_input_hint("give another with --tokenizer PATH, or prepare the data again (build/prepare, or a run of the experiment)",
                       "%s: the tokenizer %s the checkpoint names is not there", file, tok_path);
    Tokenizer tok;
    tokenizer_load(&tok, tok_path);
    if (tok.vocab_size > mc->vocab_size)
        die_input("%s: the tokenizer %s has %d tokens, more than the model's vocabulary (%d): not the tokenizer of this model",
                  file, tok_path, tok.vocab_size, mc->vocab_size);

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
           mc->preset, config_device_name(cfg.run.device), precision, tok_path);
    printf("%s, %d tokens, seed %llu; the prompt is %zu token%s\n---\n",
           temperature > 0 ? "sampled" : "greedy", n_new, (unsigned long long)seed, n_prompt, n_prompt == 1 ? "" : "s");
    size_t n = n_prompt;
    for (int t = 0; t < n_new; t++) {
        size_t w = n < (size_t)T ? n : (size_t)T, first = n - w;   // the last T tokens
        memset(in, 0, (size_t)T * sizeof *in);
        memcpy(in, ids + first, w * sizeof *in);
        model_forward(&mdl, in, tg);
        const char *lrow = (const char *)mdl.acts.logits + (w - 1) * (size_t)V * (bk->dtype == DT_BF16 ? 2 : 4);
        if (bk->dtype == DT_BF16) {
            op_to_host(bk, row16, lrow, (size_t)V, DT_BF16);
            for (int i = 0; i < V; i++) row[i] = bf16_to_f32(row16[i]);
        } else {
            op_to_host(bk, row, lrow, (size_t)V, DT_F32);
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
