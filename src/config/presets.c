// presets.c — named model shapes from the papers (shared/paper-notes.md §7, §8) plus two
// tiny test shapes. A preset fills the shape (and vocab, seq_len, tying, only_lr_act);
// the linear kind is not part of a preset (model.linear).
#include <string.h>

#include "config.h"

typedef struct {
    const char *name;
    int vocab, layers, d, heads, kv_heads, d_ff, rank_attn, rank_mlp, seq, tie, only_lr_act;
} Preset;

static const Preset PRESETS[] = {
    // CoLA paper recipe (notes §8): C4 with the T5 tokenizer (vocab 32000), sequence 256,
    // untied embeddings, rank = the table's r for attention and MLP. The 60M and 130M
    // runs use only_lr_act=False (SiLU(g)*u), the larger ones the CoLA default (g*u).
    {"cola-60m", 32000, 8, 512, 8, 8, 1376, 128, 128, 256, 0, 0},
    {"cola-130m", 32000, 12, 768, 12, 12, 2048, 256, 256, 256, 0, 0},
    {"cola-350m", 32000, 24, 1024, 16, 16, 2736, 256, 256, 256, 0, 1},
    {"cola-1b", 32000, 24, 2048, 32, 32, 5461, 512, 512, 256, 0, 1},
    {"cola-7b", 32000, 32, 4096, 32, 32, 11008, 1024, 1024, 256, 0, 1},
    // BOOST paper throughput setup (notes §7): vocab 32000, sequence 4096, r = d/4,
    // plain multi-head attention, tied embeddings (BOOST's configs tie them).
    {"boost-1b", 32000, 24, 2048, 32, 32, 5472, 512, 512, 4096, 1, 1},
    {"boost-3b", 32000, 28, 3072, 24, 24, 8192, 768, 768, 4096, 1, 1},
    {"boost-7b", 32000, 32, 4096, 32, 32, 11008, 1024, 1024, 4096, 1, 1},
    {"boost-13b", 32000, 40, 5120, 40, 40, 13824, 1280, 1280, 4096, 1, 1},
    {"boost-30b", 32000, 36, 8192, 64, 64, 22016, 2048, 2048, 4096, 1, 1},
    // Test shapes. tiny: the default shape (GQA 4:2). tiny-odd: odd sizes everywhere that
    // still satisfy the constraints (head_dim 16, 3 heads : 1 kv head, odd d_ff/ranks/seq).
    {"tiny", 512, 2, 64, 4, 2, 172, 16, 16, 32, 0, 1},
    {"tiny-odd", 300, 3, 48, 3, 1, 70, 11, 7, 13, 0, 1},
};
#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

int preset_apply(const char *name, ModelConfig *m) {
    for (int i = 0; i < N_PRESETS; i++) {
        const Preset *p = &PRESETS[i];
        if (strcmp(p->name, name)) continue;
        strncpy(m->preset, p->name, sizeof m->preset - 1);
        m->preset[sizeof m->preset - 1] = 0;
        m->vocab_size = p->vocab;
        m->n_layers = p->layers;
        m->d_model = p->d;
        m->n_heads = p->heads;
        m->n_kv_heads = p->kv_heads;
        m->d_ff = p->d_ff;
        m->rank_attn = p->rank_attn;
        m->rank_mlp = p->rank_mlp;
        m->seq_len = p->seq;
        m->tie_embeddings = p->tie;
        m->only_lr_act = p->only_lr_act;
        return 1;
    }
    return 0;
}

const char *const *preset_names(void) {
    static const char *names[N_PRESETS + 1];
    if (!names[0])
        for (int i = 0; i < N_PRESETS; i++) names[i] = PRESETS[i].name;
    return names;
}
