// fuzz_checkpoint.c — libFuzzer harness: the checkpoint reader (checkpoint_verify, which
// never exits, and checkpoint_read into a fixed micro model, which refuses with exit 2).
// The first byte of an input chooses the mode, the rest is the file:
//   even: the file as it is — the checksum block must stop every damaged file before HDF5;
//   odd:  the file resealed first (checkpoint_seal), so that HDF5 and every check behind the
//         checksum block see the damaged bytes (what a tool that edits and reseals could make).
// Whatever checkpoint_read loads, checkpoint_verify must have accepted.
#include "fuzzlib.h"
#include "../src/store/checkpoint.h"

// The micro model of the seeds (fuzz/corpus/checkpoint): make_seed() writes one.
static ModelConfig fz_micro(void) {
    ModelConfig c = {0};
    c.linear = LINEAR_COLA; c.vocab_size = 16; c.n_layers = 1; c.d_model = 8; c.n_heads = 2; c.n_kv_heads = 2;
    c.d_ff = 8; c.rank_attn = 2; c.rank_mlp = 2; c.seq_len = 4; c.tie_embeddings = 1; c.only_lr_act = 1;
    c.norm_eps = 1e-6f; c.rope_theta = 10000.0f; c.embed_std = 0.02f;
    return c;
}

static ModelState fz_state;

int fuzz_checkpoint_one(const uint8_t *data, size_t n) {
    if (n < 1) return 0;
    if (!fz_state.params) { ModelConfig c = fz_micro(); model_state_init(&fz_state, &c, STATE_PARAMS | STATE_OPTIM); }
    const char *path = fz_file("step_3.h5", data + 1, n - 1);
    char why[800], err[400];
    if (data[0] & 1) (void)checkpoint_seal(path, 3, err, sizeof err);
    int good = checkpoint_verify(path, why, sizeof why);
    if (FZ_REFUSED()) return 0;   // (a file that verifies may still be of another model)
    CheckpointMeta meta;
    checkpoint_read(path, &fz_state, &meta);
    checkpoint_meta_free(&meta);
    if (!good) { fprintf(stderr, "fuzz: checkpoint_read loaded what checkpoint_verify refused (%s)\n", why); abort(); }
    return 0;
}

// `fuzz_checkpoint --write-seed PATH`: a checkpoint of the micro model (mode byte 0 first).
int fuzz_checkpoint_write_seed(const char *path) {
    ModelConfig c = fz_micro();
    ModelState s;
    model_state_init(&s, &c, STATE_ALL);
    model_state_init_weights(&s, 1);
    CheckpointMeta meta = { .step = 3, .tokens_seen = 48, .samples_seen = 6, .seed = 1, .adam_t = 3,
                            .manifest = "name: fuzz\n", .config_json = "{}", .git_commit = "fuzz" };
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.h5", path);
    checkpoint_write(tmp, &s, &meta);
    model_state_free(&s);
    FILE *in = fopen(tmp, "rb"), *out = fopen(path, "wb");
    if (!in || !out) return 1;
    fputc(0, out);
    int ch;
    while ((ch = fgetc(in)) != EOF) fputc(ch, out);
    fclose(in); fclose(out);
    unlink(tmp);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    for (int i = 1; i + 1 < *argc; i++)
        if (!strcmp((*argv)[i], "--write-seed")) exit(fuzz_checkpoint_write_seed((*argv)[i + 1]));
    return 0;
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) { return fuzz_checkpoint_one(data, n); }
#endif
