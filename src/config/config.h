// config.h — the one configuration format: YAML manifests (experiments/*.yaml) parsed
// with libfyaml into this struct, every key validated, `--set a.b=v` overrides.
//
// Key names in YAML are exactly the field names below under their section
// (model.d_model, train.lr, data.dataset, ...). docs/configuration.md lists them all.
#pragma once
#include <stdint.h>
#include <stdio.h>

typedef enum { LINEAR_DENSE = 0, LINEAR_COLA = 1, LINEAR_SVD = 2 } LinearKind;

typedef struct {
    char preset[64];        // preset that filled the shape ("" = none); explicit keys override it
    LinearKind linear;      // dense | cola | svd
    int vocab_size;         // embedding rows; must be >= the tokenizer's vocabulary
    int n_layers;
    int d_model;
    int n_heads;
    int n_kv_heads;         // grouped-query attention; == n_heads for plain MHA
    int d_ff;
    int rank_attn;          // low-rank only: r of q,k,v,o (default d_model/4)
    int rank_mlp;           // low-rank only: r of gate,up,down (default d_model/4)
    int seq_len;            // training context length T
    int tie_embeddings;     // 1: lm_head = embed_tokens^T
    int only_lr_act;        // cola only: 1 = z = g*u (SiLU only inside the bottlenecks, CoLA default);
                            //            0 = z = SiLU(g)*u. dense/svd always use SiLU(g)*u.
    float norm_eps;         // RMSNorm epsilon (1e-6)
    float rope_theta;       // 10000
    float embed_std;        // std of embedding and LM head init (0.02)
} ModelConfig;

typedef struct {
    char dataset[512];      // kjv | text:PATH | synthetic | tinyshakespeare
    char cache_dir[512];    // prepared tokenizer/shards live here (datasets/cache)
    double val_fraction;    // tail fraction of the corpus held out for validation
    int64_t synthetic_tokens; // size of the synthetic corpus
} DataConfig;

typedef struct {
    uint64_t seed;
    int batch_size;         // sequences per micro-batch
    int grad_accum;         // micro-batches per optimizer step
    int steps;              // optimizer steps
    double lr;              // peak learning rate
    double min_lr_ratio;    // cosine decays to lr * min_lr_ratio
    int warmup_steps;       // linear warm-up from 0
    double weight_decay;    // decoupled (AdamW), 2-D weight matrices only
    double beta1, beta2, adam_eps;
    double grad_clip;       // global L2 norm clip; 0 = off
    int val_every;          // validate every N steps (0 = only at the end)
    int val_batches;        // micro-batches per validation
    int log_every;          // print a step line every N steps
    int threads;            // OpenMP/BLAS threads; 0 = all cores
} TrainConfig;

typedef struct {
    ModelConfig model;
    DataConfig data;
    TrainConfig train;
    char source_path[1024]; // manifest file this came from ("" = defaults only)
} Config;

// Defaults for everything (a tiny CoLA model on kjv).
void config_defaults(Config *c);
// Parse a YAML file into c (on top of what is there). Any error: message naming the
// file, line, key and what was expected, then exit(2).
void config_load_file(Config *c, const char *path);
// Apply one "dotted.key=value" override (value parsed as YAML scalar). Errors exit(2).
void config_set_override(Config *c, const char *assignment);
// Derive defaults (ranks = d_model/4 when unset, n_kv_heads = n_heads, ...) and check
// cross-field constraints (d_model % n_heads, n_heads % n_kv_heads, even head_dim, ...).
void config_finalize(Config *c);
// Print the resolved configuration as an aligned key/value table.
void config_print_table(const Config *c, FILE *f);
// Resolved configuration as one JSON object (malloc'd string).
char *config_to_json(const Config *c);

// Model presets: "cola-60m", "cola-130m", "cola-350m", "cola-1b", "cola-7b",
// "boost-1b", "boost-3b", "boost-7b", "boost-13b", "boost-30b", "tiny", "tiny-odd".
// The linear kind is NOT part of a preset (set model.linear). Returns 0 if unknown.
int preset_apply(const char *name, ModelConfig *m);
// NULL-terminated list of preset names.
const char *const *preset_names(void);

const char *linear_kind_name(LinearKind k);

// Closed-form sizes from the paper notes (independent of the parameter table, so a
// test can check one against the other).
int64_t model_param_count(const ModelConfig *m);
// Training FLOPs per token: 6 * (matmul parameters incl. LM head) + 12 * L * T * d
// (attention scores and weighted sum, forward+backward, full TxT as in PaLM/Chinchilla).
double model_train_flops_per_token(const ModelConfig *m);
