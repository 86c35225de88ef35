// config.h — the one configuration format: YAML manifests (experiments/*.yaml) parsed
// with libfyaml into this struct, every key validated, `--set a.b=v` overrides.
//
// Key names in YAML are exactly the field names below under their section
// (model.d_model, train.lr, data.dataset, ...). docs/configuration.md lists them all.
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "linear_kinds.h"
#include "../core/yaml_walk.h"

// model.linear: LINEAR_DENSE, LINEAR_COLA, LINEAR_SVD, LINEAR_LAX, ... (linear_kinds.h)
#define LINEAR_ENUM_ROW(NAME, name) LINEAR_##NAME,
typedef enum { LINEAR_KINDS(LINEAR_ENUM_ROW) LINEAR_KIND_COUNT } LinearKind;
#undef LINEAR_ENUM_ROW
// LaX (latent crossing, docs/lax.md): each low-rank layer adds a gated copy of the same
// projection's latent of the previous layer to its own before the up-projection.
// model.lax_base: the low-rank layer being crossed (σ = SiLU for cola, identity for svd).
typedef enum { LAX_BASE_COLA = 0, LAX_BASE_SVD = 1 } LaxBase;
// model.lax_gate: g(z_prev) = z | z @ W + b | z @ (G1 ⊗ G2)
typedef enum { LAX_GATE_IDENTITY = 0, LAX_GATE_DENSE = 1, LAX_GATE_KRON = 2 } LaxGate;
// model.lax_norm: a LayerNorm over r after the crossing sum, or none
typedef enum { LAX_NORM_LAYERNORM = 0, LAX_NORM_NONE = 1 } LaxNorm;
// train.precision: the dtype of weights, activations and gradients (fp32 master weights and
// optimizer state either way).
typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1 } Precision;
// train.attention on run.device cuda (the values of cuda_backend.h's CudaAttention)
typedef enum { ATTENTION_AUTO = 0, ATTENTION_CUDNN = 1, ATTENTION_FLASH = 2 } AttentionImpl;
// run.device: where the ops run (one GPU per rank for cuda).
typedef enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 } Device;
// boost.sync_norm_backward: how SyncRMSNorm (BTP without online RMSNorm) forms the backward's
// full-row term Σ da·a: the authors' all-reduce of the local sums (2 more collectives per
// layer), or from the replicated bottleneck gradient (Σ dP·P, no collective).
typedef enum { SYNC_NORM_BWD_ALLREDUCE = 0, SYNC_NORM_BWD_BOTTLENECK = 1 } SyncNormBackward;
// boost.rmsnorm_variant: the BTP norm as the paper describes it (paper: SyncRMSNorm, or online
// RMSNorm with its statistic in the payload all-reduce), or as the authors' code has it:
// two_call = online RMSNorm whose fp32 statistic is a second all-reduce after the payload (the
// same maths, one more collective per norm); shard_local = their 7B configuration's default,
// statistics over this rank's d/tp columns only — a DIFFERENT FUNCTION at tp > 1 (equal to
// RMSNorm at tp 1), with no statistic collective at all.
typedef enum { RMSNORM_PAPER = 0, RMSNORM_TWO_CALL = 1, RMSNORM_SHARD_LOCAL = 2 } RmsnormVariant;

// Upper bound on the number of schema keys (all sections together); config.c
// static-asserts it. Raise it when the schema grows past it.
#define CONFIG_MAX_KEYS 192

typedef struct {
    char preset[64];        // preset that filled the shape ("" = none); explicit keys override it
    LinearKind linear;      // dense | cola | svd | lax
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
    int lax_base;           // LaxBase (lax only; default cola)
    int lax_gate;           // LaxGate (lax only; default kron)
    int lax_norm;           // LaxNorm (lax only; default layernorm)
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
    // Each field has the type the engine uses the value at (the schema checks a value
    // after converting it to that type): the optimizer's constants are fp32 (AdamWHyper),
    // the schedule and the clip are computed in double.
    float lr;               // peak learning rate (the update takes the scheduled lr as fp32)
    double min_lr_ratio;    // cosine decays to lr * min_lr_ratio
    int warmup_steps;       // linear warm-up from 0
    float weight_decay;     // decoupled (AdamW), 2-D weight matrices only
    float beta1, beta2, adam_eps;
    double grad_clip;       // global L2 norm clip; 0 = off
    int val_every;          // validate every N steps (0 = only at the end)
    int val_batches;        // micro-batches per validation
    int log_every;          // print a step line every N steps
    int threads;            // OpenMP/BLAS threads; 0 = all cores
    int precision;          // Precision: fp32 | bf16
    int tf32;               // cuda fp32: GEMMs may use TF32 tensor cores (off: exact fp32)
    int attention;          // AttentionImpl: cuda attention from cuDNN or the flash kernel
} TrainConfig;

// Process grid (docs/parallelism.md): world = tp * pp * dp ranks, TP varies fastest.
typedef struct {
    int tp;                 // tensor-parallel ranks
    int pp;                 // pipeline stages (model.n_layers split evenly)
    int dp;                 // data-parallel replicas (train.batch_size split evenly)
    int micro_batches;      // micro-batches per optimizer step: the same number as
                            // train.grad_accum (set either; both set and different = error)
    int zero1;              // ZeRO-1: AdamW state sharded over the dp ranks (no effect at dp = 1)
    int overlap;            // communication off the compute stream: the data-parallel gradient
                            // reduction and some TP collectives overlap compute (docs/parallelism.md §9)
} ParallelConfig;

// The four BOOST techniques (paper notes §3-§6), each a switch, plus the baseline
// full-layer recomputation. docs/boost.md says what each does and how combinations fall
// back where a technique has no meaning (e.g. online RMSNorm without BTP).
typedef struct {
    int btp;                // bottleneck-aware tensor parallelism (low-rank models)
    int online_rmsnorm;     // norm statistics ride in the bottleneck all-reduce (BTP)
    int grouping;           // A_q|A_k|A_v and A_gate|A_up as one GEMM + one all-reduce (BTP)
    int lowrank_ckpt;       // keep only bottleneck activations; recompute chunks in backward
    int full_recompute;     // baseline: keep block inputs only; recompute whole blocks
    int sync_norm_backward; // SyncNormBackward (SyncRMSNorm only): allreduce (authors') | bottleneck
    int rmsnorm_variant;    // RmsnormVariant (BTP only): paper | two_call (authors') | shard_local (authors' 7B)
    int selective_recompute; // keep q, k, v; replay the attention core (flash forward) before its backward
    // The YAML key parallel.sequence_parallel (docs/parallelism.md §8), kept with the switches
    // the model is built with: the residual stream, norms and residual adds on N/tp-token
    // shards, reduce-scatter / all-gather along the sequence in place of the all-reduces.
    int sequence_parallel;
} BoostConfig;

// Where results go and what is saved (docs/database.md, docs/checkpoint-format.md).
typedef struct {
    char db[1024];          // SQLite run registry
    char checkpoint_dir[1024]; // checkpoints/<run uid>/step_<N>.h5
    int checkpoint_every;   // steps between checkpoints (0 = only the final one)
    int keep_last;          // complete checkpoints kept per run
    char dump_steps[256];   // comma-separated steps that write a step dump ("" = none)
    int dump_activations;   // step dumps also hold /activations
    char dump_dir[1024];    // where step dumps go ("" = <checkpoint_dir>/<run uid>/dumps)
    int flush_every;        // metrics are written to SQLite every N steps (and at exit)
    int on_demand;          // make exp runs this variant only when named (VARIANT=...):
                            // paper-scale GPU variants kept in CPU manifests
    int device;             // Device: cpu | cuda
} RunConfig;

typedef struct {
    ModelConfig model;
    DataConfig data;
    TrainConfig train;
    ParallelConfig parallel;
    BoostConfig boost;
    RunConfig run;
    char source_path[1024]; // manifest file this came from ("" = defaults only)
    // ---- added by the config layer (bookkeeping, not YAML keys) ----
    char variant[128];      // manifest variant this config belongs to ("" = none)
    unsigned char key_set[CONFIG_MAX_KEYS]; // [schema index] 1 = set explicitly (file/--set), not by default/preset
} Config;

// Defaults for everything (a tiny CoLA model on kjv).
void config_defaults(Config *c);
// Parse a YAML file into c (on top of what is there). Any error: message naming the
// file, line, key and what was expected, then exit(2). The file may be a manifest
// (manifest.h): `extends` is followed; `variants` are validated but not applied (use
// manifest_load for them). Sets c->source_path.
void config_load_file(Config *c, const char *path);
// Apply one "dotted.key=value" override (value parsed as YAML scalar). Errors exit(2).
void config_set_override(Config *c, const char *assignment);
// Derive defaults (ranks = d_model/4 when unset, 0 for dense; n_kv_heads = n_heads when
// unset or when n_heads was set explicitly without it) and check cross-field constraints
// (d_model % n_heads, n_heads % n_kv_heads, even head_dim, no explicit ranks for dense,
// only_lr_act only for cola, warmup <= steps, every value in range). Idempotent.
void config_finalize(Config *c);
// The benchmark tools' configuration: defaults, then model.preset, model.linear and
// model.seq_len, then each "key=value" of sets, finalized (errors exit(2) as above).
void config_for_shape(Config *c, const char *preset, const char *linear, int seq_len, const char *const *sets, int n_sets);
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
// run.device's value as the configuration spells it ("cpu", "cuda"): the back end's name in
// the registry (backend/select.c).
const char *config_device_name(Device d);
// Is `step` in a run.dump_steps list ("1,10" or "[1,10]")?
int config_step_listed(const char *list, int step);

// Parameter and FLOP counts: the FLOP module, model/flops.h.

// LaX (docs/lax.md §4, §5). The kron gate's factor pair of a width r: r1·r2 = r, r1 the
// largest divisor of r not above sqrt(r) (128 -> 8, 16; a prime r -> 1, r).
void lax_kron_factors(int r, int *r1, int *r2);
// Has the low-rank bottleneck an activation σ = SiLU? cola, and lax on the cola base.
static inline int latent_silu(const ModelConfig *m) {
    return m->linear == LINEAR_COLA || (m->linear == LINEAR_LAX && m->lax_base == LAX_BASE_COLA);
}

// ---- the schema: one row per YAML key; it drives validation, the printed table, the
// JSON, `info --keys-markdown` and docs/configuration.md. To add a key: add the field to
// the struct above and one row to the table in config.c (a new section: also a new
// member of Config; the section name is the row's `section`).
// A key's type is the C type of its field, which is the type the engine uses the value at:
// a value is accepted only if it is valid after its conversion to that type (an integer
// within int32, a number that does not round to a bound or to 0 in fp32), and the range
// the docs state is in those terms.
typedef enum {
    CK_INT,      // int (32 bits)
    CK_INT64,    // int64_t
    CK_UINT64,   // uint64_t
    CK_FLOAT,    // float (fp32): finite, 0 or a normal fp32 number
    CK_DOUBLE,   // double: finite, 0 or a normal double
    CK_BOOL,     // int, 0/1; YAML true/false
    CK_ENUM,     // int (an enum), YAML name from enum_names[value]
    CK_STRING,   // char[size]
    CK_PRESET,   // model.preset: applies the preset's shape when set
} ConfigKeyType;

enum {
    CKF_MIN = 1, CKF_MAX = 2,            // range bounds present
    CKF_MIN_EXCL = 4, CKF_MAX_EXCL = 8,  // ... and exclusive
    CKF_NONEMPTY = 16,                   // strings: must not be empty
    CKF_FIRST = 32,                      // applied before the other keys of a file
    CKF_PATH = 64,                       // strings: names a file or folder (data.dataset: text:PATH) the
                                         // engine reads or writes; tests/t_userpaths.sh must try each
};

// What a change of the key means for a run that resumes (config_diff.h, docs/configuration.md
// "Resuming with changes"). Every key has one (tests/test_config.c checks it).
typedef enum {
    CHANGE_UNSET = 0,
    CHANGE_MODEL,      // the model's function or shapes: never (the checkpoint holds another model)
    CHANGE_DATA,       // the corpus or its split                       } the run's meaning:
    CHANGE_BATCH,      // sequences per optimizer step                  } refused at resume
    CHANGE_SEED,       // initialisation and data order                 } unless asked for
    CHANGE_SCHEDULE,   // the learning-rate schedule and its length     } (--allow-change
    CHANGE_OPTIMIZER,  // AdamW's constants and the clip                }  KEY), and then
    CHANGE_NUMERICS,   // the arithmetic (precision, device, kernels)   }  recorded
    CHANGE_EVALUATION, // what the validation loss is measured on       }
    CHANGE_LAYOUT,     // the same function computed on another layout: printed, accepted
    CHANGE_RECORDING,  // where and how often things are written: printed, accepted
    CHANGE_CLASS_COUNT
} ConfigChangeClass;

typedef struct {
    const char *section, *key;     // "model", "d_model" -> YAML model.d_model
    ConfigKeyType type;
    size_t offset, size;           // offsetof(Config, ...), sizeof the field
    double min, max;               // with CKF_MIN / CKF_MAX
    unsigned flags;
    const char *const *enum_names; // CK_ENUM: NULL-terminated, indexed by value
    // Extra validation of strings: NULL if fine, else the "expected ..." text (static),
    // and when there is a more precise reason (a step beyond the range of a step), that
    // reason in why[0..n) (why may be NULL). It must return the "expected" text for any
    // invalid value: it is also called with "\x01" to describe the key in messages and docs.
    const char *(*check)(const char *value, char *why, size_t n);
    const char *help;
    ConfigChangeClass change;      // what changing it at a resume means
} ConfigKey;

const ConfigKey *config_schema(int *n_keys);
int config_key_index(const char *dotted);                 // -1 if unknown
int config_key_was_set(const Config *c, const char *dotted); // explicitly set?
// Set one key from its YAML scalar text; type: the scalar's type by the one scalar rule
// (core/yaml_walk.h: YS_STR for a quoted one, YS_NULL for an empty or null one), which must
// be the key's. `where` prefixes every message ("FILE:LINE", "--set k=v"). Errors exit(2).
void config_set_key(Config *c, const char *dotted, const char *text, YamlScalarType type, const char *where);
// Parse `text` as the value of key k at the type the engine uses it at, into dst (the
// field; NULL: check only): 0, or -1 with the reason, to follow "KEY: ", in why ("expected
// an integer in [1, 2147483647], got 'x'", "0.9999999999 rounds to 1 in fp32, ..."). The
// one parser of values: manifests, --set and the tools' options (options.h) use it.
int config_parse_value(const ConfigKey *k, const char *text, void *dst, char *why, size_t n);
// "int32", "int64", "uint64", "fp32", "fp64", "bool", "enum", "string": the type
// a key's value is used at, as the docs and the probes name it.
const char *config_type_name(ConfigKeyType t);
// "model", "data", ... "recording": the name of a change class (docs, messages).
const char *config_change_class_name(ConfigChangeClass c);
// The key's current value as text ("512", "cola", "true", "3e-4"); buf >= 64 bytes.
void config_format_value(const Config *c, const ConfigKey *k, char *buf, size_t n);
// "an integer >= 1", "one of dense, cola, svd", ... (what the key accepts).
void config_describe_key(const ConfigKey *k, char *buf, size_t n);
// Closest known name to `name` among `candidates` (NULL-terminated), or NULL if none is
// close (edit distance on the whole dotted name, or on the last component).
const char *config_suggest(const char *name, const char *const *candidates);
// NULL-terminated list of all dotted keys ("model.preset", ...).
const char *const *config_key_names(void);
// Dies with "unknown key 'X'; did you mean 'Y'?" (extra = more candidates, may be NULL).
__attribute__((noreturn))
void config_die_unknown_key(const char *where, const char *key, const char *const *extra);
