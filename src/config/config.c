// config.c — the schema table, defaults, scalar parsing/validation, --set overrides,
// finalize (derived defaults + cross-field checks), table/JSON output, and the
// closed-form parameter and FLOP counts. YAML files and manifests: manifest.c.
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../core/check.h"
#include "../core/json.h"
#include "../core/yaml_walk.h"

// ---------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------

#define LINEAR_NAME_ROW(NAME, name) #name,
static const char *const linear_names[] = {LINEAR_KINDS(LINEAR_NAME_ROW) NULL};
#undef LINEAR_NAME_ROW
static const char *const lax_base_names[] = {"cola", "svd", NULL};
static const char *const lax_gate_names[] = {"identity", "dense", "kron", NULL};
static const char *const lax_norm_names[] = {"layernorm", "none", NULL};
static const char *const precision_names[] = {"fp32", "bf16", NULL};
static const char *const attention_names[] = {"auto", "cudnn", "flash", NULL};
static const char *const device_names[] = {"cpu", "cuda", NULL};
static const char *const sync_norm_backward_names[] = {"allreduce", "bottleneck", NULL};
static const char *const rmsnorm_variant_names[] = {"paper", "two_call", "shard_local", NULL};

// data.dataset: a known corpus name or text:PATH. Extend this list with new corpora.
static const char *const dataset_names[] = {"kjv", "synthetic", "tinyshakespeare", NULL};
static const char *check_dataset(const char *v, char *why, size_t n) {
    (void)why; (void)n;
    for (int i = 0; dataset_names[i]; i++)
        if (!strcmp(v, dataset_names[i])) return NULL;
    if (!strncmp(v, "text:", 5) && v[5]) return NULL;
    return "one of kjv, synthetic, tinyshakespeare, text:PATH";
}

// run.dump_steps: "" or comma-separated step numbers ("1,10,100"; "[1,10]" too). A step
// number has the type of train.steps, a 32-bit integer, and counts from 1; config_finalize
// refuses one beyond train.steps (it would never be dumped).
#define STEP_LIST_EXPECTED "comma-separated step numbers >= 1, e.g. \"1,100\""

// The list without its brackets into buf; NULL if the brackets do not match.
static const char *step_list_body(const char *v, char *buf, size_t n) {
    size_t l = strlen(v);
    if (!l || v[0] != '[') return v;
    if (l < 2 || v[l - 1] != ']') return NULL;
    snprintf(buf, n, "%.*s", (int)(l - 2), v + 1);
    return buf;
}

// The next step of a list body from *pp: 1 and *step; 0 at the end; -1 when the text is not
// a list of steps (why: the precise reason when there is one, else left empty).
static int step_list_next(const char **pp, int *step, char *why, size_t n) {
    const char *p = *pp;
    while (*p == ' ') p++;
    if (!*p) return 0;
    if (!isdigit((unsigned char)*p)) return -1;
    const char *d = p;
    uint64_t v = 0;
    while (isdigit((unsigned char)*p)) { if (v <= INT32_MAX) v = v * 10 + (uint64_t)(*p - '0'); p++; }
    if (v > INT32_MAX || v < 1) {
        if (why) snprintf(why, n, v ? "step %.*s is too large: a step number is a 32-bit integer (at most 2147483647)"
                                    : "step %.*s: steps count from 1", (int)(p - d) > 40 ? 40 : (int)(p - d), d);
        return -1;
    }
    while (*p == ' ') p++;
    if (*p == ',') { p++; while (*p == ' ') p++; if (!*p) return -1; }
    else if (*p) return -1;
    *pp = p;
    *step = (int)v;
    return 1;
}

static const char *check_step_list(const char *v, char *why, size_t n) {
    char buf[256];
    const char *p = step_list_body(v, buf, sizeof buf);
    if (why && n) why[0] = 0;
    if (!p) return STEP_LIST_EXPECTED;
    int r, step;
    while ((r = step_list_next(&p, &step, why, n)) > 0) {}
    return r < 0 ? STEP_LIST_EXPECTED : NULL;
}

int config_step_listed(const char *list, int step) {
    char buf[256];
    const char *p = step_list_body(list, buf, sizeof buf);
    int s;
    while (p && step_list_next(&p, &s, NULL, 0) > 0)
        if (s == step) return 1;
    return 0;
}

// The largest step of a valid list (0 for an empty one).
static int step_list_max(const char *list) {
    char buf[256];
    const char *p = step_list_body(list, buf, sizeof buf);
    int s, mx = 0;
    while (p && step_list_next(&p, &s, NULL, 0) > 0)
        if (s > mx) mx = s;
    return mx;
}

// Limits of sizes (docs/configuration.md, "Limits"): the ranges of single keys below, and the
// products of keys checked in config_finalize ("Size limits").
#define LIMIT_DIM (1 << 24)                 // vocab_size, d_model, d_ff, seq_len, heads, ranks
#define LIMIT_LAYERS (1 << 16)
#define LIMIT_TOKENS_PER_BATCH 2147483647LL // batch_size * seq_len: the model counts tokens in an int
#define LIMIT_ELEMENTS (1LL << 40)          // one tensor or activation buffer, in elements
#define LIMIT_PARAMS (1LL << 40)            // all parameters together
#define LIMIT_THREADS 1024                  // train.threads
#define LIMIT_SYNTHETIC_TOKENS (1LL << 34)  // data.synthetic_tokens (held in memory as int32)

#define F(sec, fld) offsetof(Config, sec.fld), sizeof(((Config *)0)->sec.fld)
#define GE(x) (x), 0, CKF_MIN
#define GT(x) (x), 0, CKF_MIN | CKF_MIN_EXCL
#define ANY 0, 0, 0
#define IN(a, b) (a), (b), CKF_MIN | CKF_MAX                       // [a, b]
#define IN_HALFOPEN(a, b) (a), (b), CKF_MIN | CKF_MAX | CKF_MAX_EXCL // [a, b)
#define IN_OPEN(a, b) (a), (b), CKF_MIN | CKF_MAX | CKF_MIN_EXCL | CKF_MAX_EXCL
#define IN_LEFTOPEN(a, b) (a), (b), CKF_MIN | CKF_MAX | CKF_MIN_EXCL  // (a, b]

static const ConfigKey SCHEMA[] = {
    // ---- model ----
    {"model", "preset", CK_PRESET, F(model, preset), 0, 0, CKF_FIRST, NULL, NULL,
     "named shape (cola-60m ... boost-30b, tiny, tiny-odd); applied before the other model keys of the same file, which override it", .change = CHANGE_RECORDING},
    {"model", "linear", CK_ENUM, F(model, linear), ANY, linear_names, NULL,
     "linear layers: dense (full rank), cola (SiLU bottleneck), svd (plain low rank), lax (latent crossing on a cola or svd base, docs/lax.md)", .change = CHANGE_MODEL},
    {"model", "vocab_size", CK_INT, F(model, vocab_size), IN(2, LIMIT_DIM), NULL, NULL,
     "embedding rows; also the BPE vocabulary size trained for the dataset", .change = CHANGE_MODEL},
    {"model", "n_layers", CK_INT, F(model, n_layers), IN(1, LIMIT_LAYERS), NULL, NULL, "transformer blocks", .change = CHANGE_MODEL},
    {"model", "d_model", CK_INT, F(model, d_model), IN(2, LIMIT_DIM), NULL, NULL, "residual width d", .change = CHANGE_MODEL},
    {"model", "n_heads", CK_INT, F(model, n_heads), IN(1, LIMIT_DIM), NULL, NULL,
     "attention heads; d_model/n_heads must be an even integer (RoPE)", .change = CHANGE_MODEL},
    {"model", "n_kv_heads", CK_INT, F(model, n_kv_heads), IN(1, LIMIT_DIM), NULL, NULL,
     "key/value heads (grouped-query attention); must divide n_heads; unless set itself, equals n_heads whenever n_heads is set", .change = CHANGE_MODEL},
    {"model", "d_ff", CK_INT, F(model, d_ff), IN(1, LIMIT_DIM), NULL, NULL, "MLP hidden width (SwiGLU)", .change = CHANGE_MODEL},
    {"model", "rank_attn", CK_INT, F(model, rank_attn), IN(1, LIMIT_DIM), NULL, NULL,
     "cola/svd/lax: rank r of q,k,v,o (default d_model/4); an error for dense", .change = CHANGE_MODEL},
    {"model", "rank_mlp", CK_INT, F(model, rank_mlp), IN(1, LIMIT_DIM), NULL, NULL,
     "cola/svd/lax: rank r of gate,up,down (default d_model/4); an error for dense", .change = CHANGE_MODEL},
    {"model", "seq_len", CK_INT, F(model, seq_len), IN(1, LIMIT_DIM), NULL, NULL, "training context length T", .change = CHANGE_MODEL},
    {"model", "tie_embeddings", CK_BOOL, F(model, tie_embeddings), ANY, NULL, NULL,
     "true: LM head = embedding^T (BOOST configs); false: separate LM head (CoLA)", .change = CHANGE_MODEL},
    {"model", "only_lr_act", CK_BOOL, F(model, only_lr_act), ANY, NULL, NULL,
     "cola (and lax on the cola base) only: true = z = g*u (SiLU only in the bottlenecks); false = SiLU(g)*u (CoLA 60M/130M)", .change = CHANGE_MODEL},
    {"model", "norm_eps", CK_FLOAT, F(model, norm_eps), IN_LEFTOPEN(0, 1), NULL, NULL,
     "RMSNorm epsilon (at most 1: a larger one outweighs the mean square it guards)", .change = CHANGE_MODEL},
    {"model", "rope_theta", CK_FLOAT, F(model, rope_theta), GT(0), NULL, NULL, "RoPE base", .change = CHANGE_MODEL},
    {"model", "embed_std", CK_FLOAT, F(model, embed_std), IN_LEFTOPEN(0, 1), NULL, NULL,
     "init std of the embedding and LM head (at most 1: the initial logits grow as std^2 * d_model)", .change = CHANGE_MODEL},
    {"model", "lax_base", CK_ENUM, F(model, lax_base), ANY, lax_base_names, NULL,
     "lax only: the low-rank layer being crossed, cola (SiLU latent) or svd (plain); docs/lax.md", .change = CHANGE_MODEL},
    {"model", "lax_gate", CK_ENUM, F(model, lax_gate), ANY, lax_gate_names, NULL,
     "lax only: g(z_prev) = z (identity), z @ W + b (dense), or z @ (G1 ⊗ G2) (kron, the authors' default)", .change = CHANGE_MODEL},
    {"model", "lax_norm", CK_ENUM, F(model, lax_norm), ANY, lax_norm_names, NULL,
     "lax only: a LayerNorm over r after the crossing sum (layernorm, the authors' default) or none", .change = CHANGE_MODEL},
    // ---- data ----
    {"data", "dataset", CK_STRING, F(data, dataset), 0, 0, CKF_NONEMPTY | CKF_PATH, NULL, check_dataset,
     "corpus: a built-in name, or text:PATH for a UTF-8 text file", .change = CHANGE_DATA},
    {"data", "cache_dir", CK_STRING, F(data, cache_dir), 0, 0, CKF_NONEMPTY | CKF_PATH, NULL, NULL,
     "where prepared tokenizers and token shards are cached", .change = CHANGE_RECORDING},
    {"data", "val_fraction", CK_DOUBLE, F(data, val_fraction), IN_OPEN(0, 0.5), NULL, NULL,
     "tail fraction of the corpus held out for validation", .change = CHANGE_DATA},
    {"data", "synthetic_tokens", CK_INT64, F(data, synthetic_tokens), IN(1, LIMIT_SYNTHETIC_TOKENS), NULL, NULL,
     "size of the synthetic corpus (data.dataset: synthetic)", .change = CHANGE_DATA},
    // ---- train ----
    {"train", "seed", CK_UINT64, F(train, seed), GE(0), NULL, NULL, "base seed (init, data order)", .change = CHANGE_SEED},
    {"train", "batch_size", CK_INT, F(train, batch_size), GE(1), NULL, NULL, "sequences per micro-batch", .change = CHANGE_BATCH},
    {"train", "grad_accum", CK_INT, F(train, grad_accum), GE(1), NULL, NULL, "micro-batches per optimizer step", .change = CHANGE_BATCH},
    {"train", "steps", CK_INT, F(train, steps), GE(1), NULL, NULL, "optimizer steps", .change = CHANGE_SCHEDULE},
    {"train", "lr", CK_FLOAT, F(train, lr), GT(0), NULL, NULL, "peak learning rate (the update takes the scheduled rate as fp32)", .change = CHANGE_SCHEDULE},
    {"train", "min_lr_ratio", CK_DOUBLE, F(train, min_lr_ratio), IN(0, 1), NULL, NULL,
     "cosine decays to lr * min_lr_ratio", .change = CHANGE_SCHEDULE},
    {"train", "warmup_steps", CK_INT, F(train, warmup_steps), GE(0), NULL, NULL,
     "linear warm-up from 0 (<= steps)", .change = CHANGE_SCHEDULE},
    {"train", "weight_decay", CK_FLOAT, F(train, weight_decay), GE(0), NULL, NULL,
     "decoupled AdamW weight decay (2-D weights only)", .change = CHANGE_OPTIMIZER},
    {"train", "beta1", CK_FLOAT, F(train, beta1), IN_HALFOPEN(0, 1), NULL, NULL, "AdamW beta1", .change = CHANGE_OPTIMIZER},
    {"train", "beta2", CK_FLOAT, F(train, beta2), IN_HALFOPEN(0, 1), NULL, NULL, "AdamW beta2", .change = CHANGE_OPTIMIZER},
    {"train", "adam_eps", CK_FLOAT, F(train, adam_eps), IN_LEFTOPEN(0, 1), NULL, NULL,
     "AdamW epsilon (at most 1: a larger one outweighs sqrt(v), and the update vanishes)", .change = CHANGE_OPTIMIZER},
    {"train", "grad_clip", CK_DOUBLE, F(train, grad_clip), GE(0), NULL, NULL,
     "global L2 gradient-norm clip (0 = off)", .change = CHANGE_OPTIMIZER},
    {"train", "val_every", CK_INT, F(train, val_every), GE(0), NULL, NULL,
     "validate every N steps (0 = only at the end)", .change = CHANGE_RECORDING},
    {"train", "val_batches", CK_INT, F(train, val_batches), GE(1), NULL, NULL, "micro-batches per validation", .change = CHANGE_EVALUATION},
    {"train", "log_every", CK_INT, F(train, log_every), GE(1), NULL, NULL, "print a step line every N steps", .change = CHANGE_RECORDING},
    {"train", "threads", CK_INT, F(train, threads), IN(0, LIMIT_THREADS), NULL, NULL,
     "OpenMP/BLAS threads per process (0 = the cores divided among the ranks on the node)", .change = CHANGE_LAYOUT},
    {"train", "precision", CK_ENUM, F(train, precision), ANY, precision_names, NULL,
     "dtype of weights, activations and gradients: fp32, or bf16 with fp32 master weights and optimizer state (docs/gpu.md)", .change = CHANGE_NUMERICS},
    {"train", "tf32", CK_BOOL, F(train, tf32), ANY, NULL, NULL,
     "run.device cuda with train.precision fp32: GEMMs use TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation); false = exact fp32 (the parity tests)", .change = CHANGE_NUMERICS},
    {"train", "attention", CK_ENUM, F(train, attention), ANY, attention_names, NULL,
     "run.device cuda: auto = cuDNN's fused flash attention for bf16 where cuDNN loads and accepts the shape, else the hand-written flash kernel (a note says why); cudnn = cuDNN or an error; flash = the hand-written kernel (docs/gpu.md)", .change = CHANGE_NUMERICS},
    // ---- parallel ----
    {"parallel", "tp", CK_INT, F(parallel, tp), GE(1), NULL, NULL, "tensor-parallel ranks (varies fastest)", .change = CHANGE_LAYOUT},
    {"parallel", "pp", CK_INT, F(parallel, pp), GE(1), NULL, NULL, "pipeline stages (1F1B schedule)", .change = CHANGE_LAYOUT},
    {"parallel", "dp", CK_INT, F(parallel, dp), GE(1), NULL, NULL, "data-parallel replicas", .change = CHANGE_LAYOUT},
    {"parallel", "micro_batches", CK_INT, F(parallel, micro_batches), GE(1), NULL, NULL,
     "micro-batches per optimizer step (same as train.grad_accum; set one of them)", .change = CHANGE_BATCH},
    {"parallel", "zero1", CK_BOOL, F(parallel, zero1), ANY, NULL, NULL,
     "ZeRO-1: shard the AdamW state over the dp ranks (reduce-scatter gradients, all-gather weights)", .change = CHANGE_LAYOUT},
    {"parallel", "overlap", CK_BOOL, F(parallel, overlap), ANY, NULL, NULL,
     "communication off the compute stream (off by default: not yet measured on a GPU): each layer's data-parallel gradient reduction starts as its gradients become final and overlaps the rest of the backward, and some TP collectives overlap GEMMs (NCCL: own streams and events; MPI: non-blocking calls); false = every collective blocking on the compute stream, the same bits (docs/parallelism.md)", .change = CHANGE_LAYOUT},
    {"parallel", "sequence_parallel", CK_BOOL, F(boost, sequence_parallel), ANY, NULL, NULL,
     "sequence parallelism: norms and residual adds on seq_len/tp-token shards, reduce-scatter and all-gather along the sequence in place of each all-reduce (Megatron-LM; with boost.btp: the bottlenecks cut by tokens, docs/boost.md §8); model.seq_len divisible by tp; no effect at tp = 1", .change = CHANGE_LAYOUT},
    // ---- boost ----
    {"boost", "btp", CK_BOOL, F(boost, btp), ANY, NULL, NULL,
     "bottleneck-aware tensor parallelism (needs model.linear cola or svd)", .change = CHANGE_LAYOUT},
    {"boost", "online_rmsnorm", CK_BOOL, F(boost, online_rmsnorm), ANY, NULL, NULL,
     "RMSNorm statistics travel in the bottleneck all-reduce (with boost.btp)", .change = CHANGE_LAYOUT},
    {"boost", "grouping", CK_BOOL, F(boost, grouping), ANY, NULL, NULL,
     "group A_q|A_k|A_v and A_gate|A_up into one GEMM and one all-reduce; batch the B's", .change = CHANGE_LAYOUT},
    {"boost", "lowrank_ckpt", CK_BOOL, F(boost, lowrank_ckpt), ANY, NULL, NULL,
     "low-rank activation checkpointing: keep the bottleneck activations, recompute in backward", .change = CHANGE_LAYOUT},
    {"boost", "full_recompute", CK_BOOL, F(boost, full_recompute), ANY, NULL, NULL,
     "baseline checkpointing: keep block inputs, recompute whole blocks (replays collectives)", .change = CHANGE_LAYOUT},
    {"boost", "sync_norm_backward", CK_ENUM, F(boost, sync_norm_backward), ANY, sync_norm_backward_names, NULL,
     "SyncRMSNorm's backward (boost.btp without boost.online_rmsnorm): allreduce = the authors' all-reduce of the local Σ da·a (2 more collectives per layer); bottleneck = from the replicated bottleneck gradient, no collective", .change = CHANGE_LAYOUT},
    {"boost", "rmsnorm_variant", CK_ENUM, F(boost, rmsnorm_variant), ANY, rmsnorm_variant_names, NULL,
     "BTP's norm: paper = as the paper describes it; two_call = the authors' online RMSNorm (payload all-reduce, then the fp32 statistic: same maths, one more collective per norm; needs boost.online_rmsnorm); shard_local = the authors' 7B default, statistics over d/tp only: a different function at tp > 1, no statistic collective (needs boost.online_rmsnorm: false)", .change = CHANGE_NUMERICS},
    {"boost", "selective_recompute", CK_BOOL, F(boost, selective_recompute), ANY, NULL, NULL,
     "selective recomputation: keep q, k, v; drop the attention core's output and row log-sum-exp and replay flash attention's forward (scores, softmax, P·V; no collective) before each layer's attention backward (the scores themselves are never stored: flash attention)", .change = CHANGE_LAYOUT},
    // ---- run ----
    {"run", "db", CK_STRING, F(run, db), 0, 0, CKF_NONEMPTY | CKF_PATH, NULL, NULL, "SQLite run registry", .change = CHANGE_RECORDING},
    {"run", "checkpoint_dir", CK_STRING, F(run, checkpoint_dir), 0, 0, CKF_NONEMPTY | CKF_PATH, NULL, NULL,
     "checkpoints go to <checkpoint_dir>/<run uid>/step_<N>.h5", .change = CHANGE_RECORDING},
    {"run", "checkpoint_every", CK_INT, F(run, checkpoint_every), GE(0), NULL, NULL,
     "steps between checkpoints (0 = only at the end)", .change = CHANGE_RECORDING},
    {"run", "keep_last", CK_INT, F(run, keep_last), GE(1), NULL, NULL, "complete checkpoints kept per run", .change = CHANGE_RECORDING},
    {"run", "dump_steps", CK_STRING, F(run, dump_steps), 0, 0, 0, NULL, check_step_list,
     "steps that write a step dump (HDF5 with weights, batch, loss, gradients), e.g. \"1,100\"", .change = CHANGE_RECORDING},
    {"run", "dump_activations", CK_BOOL, F(run, dump_activations), ANY, NULL, NULL,
     "step dumps also hold the activations of the last micro-batch", .change = CHANGE_RECORDING},
    {"run", "dump_dir", CK_STRING, F(run, dump_dir), 0, 0, CKF_PATH, NULL, NULL,
     "folder for step dumps (empty: <checkpoint_dir>/<run uid>/dumps); it holds one run's dumps", .change = CHANGE_RECORDING},
    {"run", "on_demand", CK_BOOL, F(run, on_demand), ANY, NULL, NULL,
     "make exp runs this variant only when it is named (VARIANT=...), e.g. paper-scale GPU variants", .change = CHANGE_RECORDING},
    {"run", "flush_every", CK_INT, F(run, flush_every), GE(1), NULL, NULL,
     "steps between SQLite writes (metrics are buffered in between)", .change = CHANGE_RECORDING},
    {"run", "device", CK_ENUM, F(run, device), ANY, device_names, NULL,
     "where the ops run: cpu (OpenBLAS/OpenMP), or cuda (one GPU per rank; docs/gpu.md)", .change = CHANGE_NUMERICS},
};
#define N_SCHEMA ((int)(sizeof SCHEMA / sizeof SCHEMA[0]))
_Static_assert(sizeof SCHEMA / sizeof SCHEMA[0] <= CONFIG_MAX_KEYS, "raise CONFIG_MAX_KEYS");

const ConfigKey *config_schema(int *n_keys) {
    if (n_keys) *n_keys = N_SCHEMA;
    return SCHEMA;
}

static char key_name_buf[N_SCHEMA][96];
static const char *key_name_ptrs[N_SCHEMA + 1];
const char *const *config_key_names(void) {
    if (!key_name_ptrs[0]) {
        for (int i = 0; i < N_SCHEMA; i++) {
            xsnprintf(key_name_buf[i], sizeof key_name_buf[i], "%s.%s", SCHEMA[i].section, SCHEMA[i].key);
            key_name_ptrs[i] = key_name_buf[i];
        }
        key_name_ptrs[N_SCHEMA] = NULL;
    }
    return key_name_ptrs;
}

int config_key_index(const char *dotted) {
    const char *dot = strchr(dotted, '.');
    if (!dot) return -1;
    size_t ls = (size_t)(dot - dotted);
    for (int i = 0; i < N_SCHEMA; i++)
        if (strlen(SCHEMA[i].section) == ls && !strncmp(SCHEMA[i].section, dotted, ls) &&
            !strcmp(SCHEMA[i].key, dot + 1))
            return i;
    return -1;
}

int config_key_was_set(const Config *c, const char *dotted) {
    int i = config_key_index(dotted);
    CHECK(i >= 0, "config_key_was_set: no key '%s'", dotted);
    return c->key_set[i];
}

const char *config_change_class_name(ConfigChangeClass c) {
    static const char *const names[CHANGE_CLASS_COUNT] = {
        [CHANGE_UNSET] = "unclassified", [CHANGE_MODEL] = "model", [CHANGE_DATA] = "data", [CHANGE_BATCH] = "batch",
        [CHANGE_SEED] = "seed", [CHANGE_SCHEDULE] = "schedule", [CHANGE_OPTIMIZER] = "optimizer",
        [CHANGE_NUMERICS] = "numerics", [CHANGE_EVALUATION] = "evaluation", [CHANGE_LAYOUT] = "layout",
        [CHANGE_RECORDING] = "recording" };
    return c >= 0 && c < CHANGE_CLASS_COUNT ? names[c] : "?";
}

const char *config_type_name(ConfigKeyType t) {
    switch (t) {
    case CK_INT: return "int32";
    case CK_INT64: return "int64";
    case CK_UINT64: return "uint64";
    case CK_FLOAT: return "fp32";
    case CK_DOUBLE: return "fp64";
    case CK_BOOL: return "bool";
    case CK_ENUM: return "enum";
    default: return "string";
    }
}

const char *linear_kind_name(LinearKind k) {
    return (k >= 0 && k < LINEAR_KIND_COUNT) ? linear_names[k] : "?";
}

const char *config_device_name(Device d) {
    return (d >= 0 && d < (int)(sizeof device_names / sizeof *device_names) - 1) ? device_names[d] : "?";
}

// ---------------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------------

void config_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    ModelConfig *m = &c->model;
    CHECK(preset_apply("tiny", m), "preset 'tiny' missing");
    m->preset[0] = 0;            // the shape of `tiny`, but no preset named
    m->rank_attn = m->rank_mlp = 0; // unset: d_model/4 at finalize (16 for the tiny shape)
    m->linear = LINEAR_COLA;
    m->norm_eps = 1e-6f;
    m->rope_theta = 10000.0f;
    m->embed_std = 0.02f;
    m->only_lr_act = 1;
    m->tie_embeddings = 0;
    m->lax_base = LAX_BASE_COLA;   // the authors' LaX-CoLA configs (docs/lax.md §1)
    m->lax_gate = LAX_GATE_KRON;
    m->lax_norm = LAX_NORM_LAYERNORM;

    DataConfig *d = &c->data;
    xsnprintf(d->dataset, sizeof d->dataset, "kjv");
    xsnprintf(d->cache_dir, sizeof d->cache_dir, "datasets/cache");
    d->val_fraction = 0.05;
    d->synthetic_tokens = 2000000;

    TrainConfig *t = &c->train;
    t->seed = 42;
    t->batch_size = 8;
    t->grad_accum = 1;
    t->steps = 100;
    t->lr = 3e-3;
    t->min_lr_ratio = 0.1;
    t->warmup_steps = 10;
    t->weight_decay = 0.01;
    t->beta1 = 0.9;
    t->beta2 = 0.999;
    t->adam_eps = 1e-8;
    t->grad_clip = 0.5;
    t->val_every = 0;
    t->val_batches = 4;
    t->log_every = 1;
    t->threads = 0;
    t->tf32 = 1;

    ParallelConfig *pc = &c->parallel;
    pc->tp = pc->pp = pc->dp = 1;
    pc->micro_batches = 1;
    pc->overlap = 0;   // off until a GPU run has measured it (docs/parallelism.md §9)

    RunConfig *r = &c->run;
    xsnprintf(r->db, sizeof r->db, "runs/boost.db");
    xsnprintf(r->checkpoint_dir, sizeof r->checkpoint_dir, "checkpoints");
    r->checkpoint_every = 0;
    r->keep_last = 2;
    r->dump_steps[0] = 0;
    r->dump_activations = 0;
    r->flush_every = 10;
}

// ---------------------------------------------------------------------------------
// Suggestions (optimal-string-alignment edit distance: a transposition costs 1)
// ---------------------------------------------------------------------------------

static int osa_distance(const char *a, const char *b) {
    int n = (int)strlen(a), m = (int)strlen(b);
    if (n > 120 || m > 120) return 1000;
    int d[122][122];
    for (int i = 0; i <= n; i++) d[i][0] = i;
    for (int j = 0; j <= m; j++) d[0][j] = j;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= m; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

static const char *leaf(const char *s) {
    const char *p = strrchr(s, '.');
    return p ? p + 1 : s;
}

const char *config_suggest(const char *name, const char *const *candidates) {
    const char *best = NULL;
    int best_score = 1 << 30;
    const char *ln = leaf(name);
    for (int i = 0; candidates && candidates[i]; i++) {
        const char *c = candidates[i];
        int s = osa_distance(name, c);
        // the right key in the wrong section ("model.lr" -> "train.lr"), or a typo in the leaf
        int sl = osa_distance(ln, leaf(c)) + (strcmp(name, ln) ? 1 : 0);
        if (sl < s) s = sl;
        if (s < best_score) { best_score = s; best = c; }
    }
    int len = (int)strlen(ln);
    int limit = len <= 4 ? 1 : len / 3 > 2 ? len / 3 : 2;
    return best && best_score <= limit ? best : NULL;
}

void config_die_unknown_key(const char *where, const char *key, const char *const *extra) {
    const char *all[CONFIG_MAX_KEYS + 64];
    int n = 0;
    for (const char *const *k = config_key_names(); *k; k++) all[n++] = *k;
    for (int i = 0; extra && extra[i] && n < CONFIG_MAX_KEYS + 63; i++) all[n++] = extra[i];
    all[n] = NULL;
    const char *s = config_suggest(key, all);
    const char *hint = "the valid keys are listed in docs/configuration.md (or run: build/info --keys-markdown)";
    if (s) die_input_hint(hint, "%s: unknown key '%s'; did you mean '%s'?", where, key, s);
    die_input_hint(hint, "%s: unknown key '%s'", where, key);
}

// ---------------------------------------------------------------------------------
// Scalar parsing
// ---------------------------------------------------------------------------------

// ---- values at the type they are used at ----------------------------------------------
// A value is checked after its conversion to the C type of its field, the type the engine
// uses it at: a 32-bit int, an fp32 the optimizer reads, ... Its range is the declared
// range within that type's own, stated in those terms ("an integer in [0, 2147483647]",
// "an fp32 number in [0, 1)"), and a refusal names the real reason: too large for the type,
// rounds to a bound (or to 0) in fp32, not finite, beyond train.steps.

static void fmt_real(double x, int is_float, char *buf, size_t n);   // (Output, below)

static void fmt_num(double x, char *buf, size_t n) {
    if (x == floor(x) && fabs(x) < 1e19) snprintf(buf, n, "%.0f", x);
    else snprintf(buf, n, "%g", x);
}

// The type's own limits (integers exactly, as long double).
static void type_limits(ConfigKeyType t, long double *lo, long double *hi) {
    switch (t) {
    case CK_INT: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case CK_INT64: *lo = (long double)INT64_MIN; *hi = (long double)INT64_MAX; break;
    case CK_UINT64: *lo = 0; *hi = (long double)UINT64_MAX; break;
    case CK_FLOAT: *lo = -FLT_MAX; *hi = FLT_MAX; break;
    default: *lo = -DBL_MAX; *hi = DBL_MAX; break;
    }
}

static const char *type_words(ConfigKeyType t) {
    switch (t) {
    case CK_INT: return "a 32-bit integer";
    case CK_INT64: return "a 64-bit integer";
    case CK_UINT64: return "an unsigned 64-bit integer";
    case CK_FLOAT: return "fp32";
    default: return "fp64";
    }
}

static int is_integer_type(ConfigKeyType t) { return t == CK_INT || t == CK_INT64 || t == CK_UINT64; }

void config_describe_key(const ConfigKey *k, char *buf, size_t n) {
    switch (k->type) {
    case CK_BOOL: snprintf(buf, n, "true or false"); return;
    case CK_ENUM: {
        size_t used = (size_t)snprintf(buf, n, "one of ");
        for (int i = 0; k->enum_names[i] && used < n; i++)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", k->enum_names[i]);
        return;
    }
    case CK_PRESET: {
        size_t used = (size_t)snprintf(buf, n, "a preset name (");
        const char *const *p = preset_names();
        for (int i = 0; p[i] && used < n; i++) used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", p[i]);
        if (used < n) snprintf(buf + used, n - used, ")");
        return;
    }
    case CK_STRING: {
        const char *c = k->check ? k->check("\x01", NULL, 0) : NULL;
        if (c) snprintf(buf, n, "%s", c);
        else snprintf(buf, n, "%s", (k->flags & CKF_NONEMPTY) ? "a non-empty string" : "a string");
        return;
    }
    default: break;
    }
    unsigned f = k->flags;
    char a[40], b[40];
    if (is_integer_type(k->type)) {
        // integers: the closed range within the type ("an integer in [1, 2147483647]")
        long double lo, hi;
        type_limits(k->type, &lo, &hi);
        long double tlo = lo, thi = hi;
        if (f & CKF_MIN) lo = (long double)k->min + ((f & CKF_MIN_EXCL) ? 1 : 0);
        if (f & CKF_MAX) hi = (long double)k->max - ((f & CKF_MAX_EXCL) ? 1 : 0);
        if (lo < tlo) lo = tlo;   // (a bound written as a double, INT64_MAX, is the type's own)
        if (hi > thi) hi = thi;
        snprintf(a, sizeof a, "%.0Lf", lo);
        snprintf(b, sizeof b, "%.0Lf", hi);
        snprintf(buf, n, "an integer in [%s, %s]", a, b);
        return;
    }
    const char *what = k->type == CK_FLOAT ? "an fp32 number" : "a number";
    fmt_num(k->min, a, sizeof a);
    fmt_num(k->max, b, sizeof b);
    if ((f & CKF_MIN) && (f & CKF_MAX))
        snprintf(buf, n, "%s in %c%s, %s%c", what, (f & CKF_MIN_EXCL) ? '(' : '[', a, b, (f & CKF_MAX_EXCL) ? ')' : ']');
    else if (f & CKF_MIN) snprintf(buf, n, "%s %s %s", what, (f & CKF_MIN_EXCL) ? ">" : ">=", a);
    else if (f & CKF_MAX) snprintf(buf, n, "%s %s %s", what, (f & CKF_MAX_EXCL) ? "<" : "<=", b);
    else snprintf(buf, n, "%s", what);
}

static int in_range_ld(const ConfigKey *k, long double x) {
    if (k->flags & CKF_MIN) { if ((k->flags & CKF_MIN_EXCL) ? !(x > (long double)k->min) : !(x >= (long double)k->min)) return 0; }
    if (k->flags & CKF_MAX) { if ((k->flags & CKF_MAX_EXCL) ? !(x < (long double)k->max) : !(x <= (long double)k->max)) return 0; }
    return 1;
}
static int in_range(const ConfigKey *k, double x) { return in_range_ld(k, x); }

// The magnitude and sign of an integer of the one scalar rule (yaml_plain_type: [+-]digits or
// 0x..), or of a decimal number that is exactly an integer (2e6, 1.5e3: for the hint that
// says how to write it as one), decided on the digits, never through a double. 1 with sign
// and magnitude; 0 if the text is no integer; -1 if it is one beyond 2^64 - 1.
static int parse_integer(const char *s, int *neg_out, uint64_t *mag_out) {
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') { neg = *p == '-'; p++; }
    if (!*p || strlen(p) > 120) return strspn(p, "0123456789") == strlen(p) && *p ? -1 : 0;
    if (p[0] == '0' && p[1] == 'x') {
        p += 2;
        if (!*p) return 0;
        uint64_t v = 0;
        for (const char *q = p; *q; q++) {
            if (!isxdigit((unsigned char)*q)) return 0;
            int d = isdigit((unsigned char)*q) ? *q - '0' : tolower((unsigned char)*q) - 'a' + 10;
            if (v > (UINT64_MAX - (uint64_t)d) / 16) return -1;
            v = v * 16 + (uint64_t)d;
        }
        *neg_out = neg && v != 0;
        *mag_out = v;
        return 1;
    }
    // decimal: digits [. digits] [e [+-] digits], at least one digit in the mantissa
    char digits[128];
    int nd = 0, point = -1, any = 0;
    for (; isdigit((unsigned char)*p) || *p == '.'; p++) {
        if (*p == '.') { if (point >= 0) return 0; point = nd; continue; }
        any = 1;
        digits[nd++] = *p;
    }
    if (!any) return 0;
    if (point < 0) point = nd;
    long exp10 = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        int eneg = 0;
        if (*p == '+' || *p == '-') { eneg = *p == '-'; p++; }
        if (!isdigit((unsigned char)*p)) return 0;
        for (; isdigit((unsigned char)*p); p++) if (exp10 < 100000) exp10 = exp10 * 10 + (*p - '0');
        if (eneg) exp10 = -exp10;
    }
    if (*p) return 0;
    // the integer part is digits[0 .. point + exp10); every digit after it must be 0
    long ip = point + exp10;
    for (long i = ip < 0 ? 0 : ip; i < nd; i++) if (digits[i] != '0') return 0;
    uint64_t v = 0;
    int over = 0;
    for (long i = 0; i < ip; i++) {
        int d = i < nd ? digits[i] - '0' : 0;
        if (v > (UINT64_MAX - (uint64_t)d) / 10) { over = 1; if (d || v) break; }
        else v = v * 10 + (uint64_t)d;
    }
    if (over) return -1;
    *neg_out = neg && v != 0;
    *mag_out = v;
    return 1;
}

// The value of an integer or a number of the one scalar rule (yaml_plain_type: decimal as
// YAML 1.2 writes it, 0x.., .inf, .nan). 1 and *out; -1 if it is .inf or .nan; -2 if it is
// beyond any double (*out is +-inf); -3 if it is not 0 but rounds to 0 or below the smallest
// normal double (*out is what strtod made of it).
static int parse_real(const char *s, double *out) {
    static const char *const nonfinite[] = {".inf", "+.inf", "-.inf", ".Inf", "+.Inf", "-.Inf", ".INF", "+.INF", "-.INF",
                                            ".nan", ".NaN", ".NAN", NULL};
    for (int i = 0; nonfinite[i]; i++) if (!strcmp(s, nonfinite[i])) return -1;
    const char *p = s + (*s == '+' || *s == '-');
    int hex = p[0] == '0' && p[1] == 'x';
    const char *m = p + (hex ? 2 : 0);
    int nonzero = strcspn(m, hex ? "123456789abcdefABCDEF" : "123456789") < (hex ? strlen(m) : strcspn(m, "eE"));
    errno = 0;
    double d = strtod(s, NULL);
    *out = d;
    if (isinf(d)) return -2;
    if (nonzero && (d == 0 || fabs(d) < DBL_MIN)) return -3;
    return 1;
}

// The value inside the range nearest to an exclusive bound, in the key's type: the largest
// fp32 below 1 for [0, 1) (0.99999994), for a refusal that says what is allowed.
static double nearest_inside(const ConfigKey *k, int at_max) {
    double b = at_max ? k->max : k->min;
    if (k->type == CK_FLOAT) {
        float f = (float)b;
        return nextafterf(f, at_max ? -INFINITY : INFINITY);
    }
    return nextafter(b, at_max ? -INFINITY : INFINITY);
}

int config_parse_value(const ConfigKey *k, const char *text, void *dst, char *why, size_t n) {
    char want[512], tw[700];
    config_describe_key(k, want, sizeof want);
    int neg = 0;
    uint64_t mag = 0;
    double dv;
    // what the text is by the one scalar rule (core/yaml_walk.h), as analysis/ reads it too
    YamlScalarType t = yaml_plain_type(text, tw, sizeof tw);
    if (t == YS_BAD && k->type != CK_STRING && k->type != CK_ENUM && k->type != CK_PRESET) {
        snprintf(why, n, "expected %s; %s", want, tw);
        return -1;
    }
    switch (k->type) {
    case CK_INT: case CK_INT64: case CK_UINT64: {
        int r = t == YS_INT || t == YS_FLOAT ? parse_integer(text, &neg, &mag) : 0;
        if (t == YS_FLOAT && r == 1) {
            // 2e6, 1000.0: a number with a point or an exponent is no integer to a YAML reader
            snprintf(why, n, "expected %s, got '%s' (written with a point or an exponent, it is not an integer in YAML): "
                     "write %s%" PRIu64, want, text, neg ? "-" : "", mag);
            return -1;
        }
        if (t != YS_INT || r == 0) { snprintf(why, n, "expected %s, got '%s'", want, text); return -1; }
        long double v = r < 0 ? (text[0] == '-' ? -INFINITY : INFINITY) : neg ? -(long double)mag : (long double)mag;
        if (!in_range_ld(k, v)) { snprintf(why, n, "expected %s, got '%s'", want, text); return -1; }
        long double lo, hi;
        type_limits(k->type, &lo, &hi);
        if (v > hi || v < lo) {
            snprintf(why, n, "%s is too %s: the engine holds it in %s (%s %.0Lf)", text, v > hi ? "large" : "small",
                     type_words(k->type), v > hi ? "at most" : "at least", v > hi ? hi : lo);
            return -1;
        }
        if (!dst) return 0;
        if (k->type == CK_INT) *(int *)dst = neg ? (int)(-(int64_t)mag) : (int)mag;
        else if (k->type == CK_INT64) *(int64_t *)dst = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        else *(uint64_t *)dst = mag;
        return 0;
    }
    case CK_FLOAT: case CK_DOUBLE: {
        int r = t == YS_INT || t == YS_FLOAT ? parse_real(text, &dv) : 0;
        if (r == 0) {
            int hexfloat = (strstr(text, "0x") || strstr(text, "0X")) && strpbrk(text, "pP");
            snprintf(why, n, "expected %s, got '%s'%s", want, text,
                     hexfloat ? " (a hexadecimal float: YAML has none, and readers of the file such as PyYAML see text; write it in decimal)" : "");
            return -1;
        }
        if (r == -1) { snprintf(why, n, "expected %s, got '%s' (not a finite number)", want, text); return -1; }
        int f32 = k->type == CK_FLOAT;
        double lim = f32 ? FLT_MAX : DBL_MAX, tiny = f32 ? FLT_MIN : DBL_MIN;
        char m[40];
        if (r != -3 && !in_range(k, dv)) { snprintf(why, n, "expected %s, got '%s'", want, text); return -1; }
        if (r == -2 || fabs(dv) > lim) {
            fmt_real(lim, f32, m, sizeof m);
            snprintf(why, n, "%s is too large for %s, the precision it is used at (at most %s)", text, type_words(k->type), m);
            return -1;
        }
        double used = f32 ? (double)(float)dv : dv;
        if (r == -3 || (dv != 0 && fabs(used) < tiny)) {
            // 0 or a subnormal: the value would be used as 0 or with less than the type's precision
            fmt_real(tiny, f32, m, sizeof m);
            if (used == 0) snprintf(why, n, "%s rounds to 0 in %s, the precision it is used at (the smallest normal %s number is %s)",
                                    text, type_words(k->type), type_words(k->type), m);
            else snprintf(why, n, "%s is below the smallest normal %s number (%s): %s would hold it with less than its "
                          "precision", text, type_words(k->type), m, type_words(k->type));
            return -1;
        }
        if (!in_range(k, used)) {
            // valid as written, not as used: it rounds onto an excluded bound
            char u[40], in[40];
            fmt_real(used, f32, u, sizeof u);
            int at_max = (k->flags & CKF_MAX) && !(used < k->max) ;
            fmt_real(nearest_inside(k, at_max), f32, in, sizeof in);
            snprintf(why, n, "%s rounds to %s in %s, the precision it is used at; expected %s (%s %s)", text, u,
                     type_words(k->type), want, at_max ? "at most" : "at least", in);
            return -1;
        }
        if (!dst) return 0;
        if (f32) *(float *)dst = (float)dv;
        else *(double *)dst = dv;
        return 0;
    }
    case CK_BOOL:
        if (t != YS_BOOL) { snprintf(why, n, "expected %s, got '%s'", want, text); return -1; }
        if (dst) *(int *)dst = text[0] == 't' || text[0] == 'T';
        return 0;
    case CK_ENUM: {
        int found = -1;
        for (int i = 0; k->enum_names[i]; i++)
            if (!strcmp(text, k->enum_names[i])) found = i;
        if (found < 0) { snprintf(why, n, "expected %s, got '%s'", want, text); return -1; }
        if (dst) *(int *)dst = found;
        return 0;
    }
    case CK_STRING: {
        char reason[300] = "";
        if (((k->flags & CKF_NONEMPTY) && !*text) || (k->check && k->check(text, reason, sizeof reason))) {
            if (reason[0]) snprintf(why, n, "%s (expected %s)", reason, want);
            else snprintf(why, n, "expected %s, got '%s'", want, text);
            return -1;
        }
        if (strlen(text) >= k->size) { snprintf(why, n, "value longer than %zu characters", k->size - 1); return -1; }
        if (dst) memcpy(dst, text, strlen(text) + 1);
        return 0;
    }
    case CK_PRESET: break;
    }
    snprintf(why, n, "expected %s, got '%s'", want, text);
    return -1;
}

// Keys a preset writes (cleared from key_set when a preset is applied).
static const char *const preset_keys[] = {
    "model.vocab_size", "model.n_layers", "model.d_model", "model.n_heads", "model.n_kv_heads",
    "model.d_ff", "model.rank_attn", "model.rank_mlp", "model.seq_len", "model.tie_embeddings",
    "model.only_lr_act", NULL};

void config_set_key(Config *c, const char *dotted, const char *text, YamlScalarType type, const char *where) {
    int idx = config_key_index(dotted);
    if (idx < 0) config_die_unknown_key(where, dotted, NULL);
    const ConfigKey *k = &SCHEMA[idx];
    void *p = (char *)c + k->offset;
    int is_null = type == YS_NULL;
    // An empty value clears a string key that may be empty (run.dump_steps=, ...).
    if ((is_null || !text) && k->type == CK_STRING && !(k->flags & CKF_NONEMPTY)) { text = ""; is_null = 0; type = YS_STR; }
    if (is_null || !text) {
        char want[512];
        config_describe_key(k, want, sizeof want);
        die_input("%s: %s.%s: expected %s, got an empty value", where, k->section, k->key, want);
    }
    // The value's YAML type (the one scalar rule, core/yaml_walk.h) is the key's: analysis/
    // reads the file with the same rule and would see another value otherwise.
    char want[512], tw[700];
    config_describe_key(k, want, sizeof want);
    YamlScalarType as_plain = yaml_plain_type(text, tw, sizeof tw);
    int textual = k->type == CK_STRING || k->type == CK_ENUM || k->type == CK_PRESET;
    if (textual && type == YS_BAD) die_input("%s: %s.%s: expected %s; %s", where, k->section, k->key, want, tw);
    if (textual && type != YS_STR) {
        char hint[1400];
        snprintf(hint, sizeof hint, "quote it for text: %s.%s: '%s'", k->section, k->key, text);
        die_input_hint(hint, "%s: %s.%s: expected %s, got %s (%s written plainly is %s in YAML)", where, k->section, k->key,
                       want, yaml_type_name(type), text, yaml_type_name(type));
    }
    if (!textual && type == YS_STR && as_plain != YS_STR && as_plain != YS_BAD) {
        char hint[1400];
        snprintf(hint, sizeof hint, "write it without quotes: %s.%s: %s", k->section, k->key, text);
        die_input_hint(hint, "%s: %s.%s: expected %s, got the quoted text '%s' (quotes make a YAML value text)", where,
                       k->section, k->key, want, text);
    }
    if (k->type == CK_PRESET) {
        if (!*text) {  // preset: "" = none (leaves the shape as it is)
            c->model.preset[0] = 0;
        } else {
            ModelConfig tmp = c->model;
            if (!preset_apply(text, &tmp)) {
                const char *s = config_suggest(text, preset_names());
                char known[512] = "known presets: ";
                size_t used = strlen(known);
                for (const char *const *q = preset_names(); *q && used < sizeof known; q++)
                    used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", q == preset_names() ? "" : ", ", *q);
                if (s) die_input_hint(known, "%s: model.preset: unknown preset '%s'; did you mean '%s'?", where, text, s);
                die_input_hint(known, "%s: model.preset: unknown preset '%s'", where, text);
            }
            c->model = tmp;
            for (int i = 0; preset_keys[i]; i++) c->key_set[config_key_index(preset_keys[i])] = 0;
        }
    } else {
        char why[1400];
        if (config_parse_value(k, text, p, why, sizeof why) != 0) die_input("%s: %s.%s: %s", where, k->section, k->key, why);
    }
    c->key_set[idx] = 1;
}

void config_set_override(Config *c, const char *assignment) {
    char where[600];
    snprintf(where, sizeof where, "--set %s", assignment);
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        die_input_hint("example: --set train.lr=3e-4", "--set expects KEY=VALUE, got '%s'", assignment);
    char key[256];
    size_t kl = (size_t)(eq - assignment);
    if (kl >= sizeof key) die_input("%s: key too long", where);
    memcpy(key, assignment, kl);
    key[kl] = 0;
    // trim spaces around the key
    char *ks = key;
    while (isspace((unsigned char)*ks)) ks++;
    for (char *e = ks + strlen(ks); e > ks && isspace((unsigned char)e[-1]);) *--e = 0;
    const char *v = eq + 1;
    while (isspace((unsigned char)*v)) v++;
    char val[1200];
    snprintf(val, sizeof val, "%s", v);
    for (char *e = val + strlen(val); e > val && isspace((unsigned char)e[-1]);) *--e = 0;
    // A YAML scalar: a quoted one is text (without its quotes), a plain one is typed by the
    // one scalar rule (core/yaml_walk.h), as in a manifest (but for text keys, below).
    char why[8];
    YamlScalarType type = yaml_plain_type(val, why, sizeof why);
    size_t vl = strlen(val);
    if (vl >= 2 && ((val[0] == '\'' && val[vl - 1] == '\'') || (val[0] == '"' && val[vl - 1] == '"'))) {
        memmove(val, val + 1, vl - 2);
        val[vl - 2] = 0;
        type = YS_STR;
    }
    int idx = config_key_index(ks);
    if (idx < 0) config_die_unknown_key(where, ks, NULL);
    // a text key takes the command line's text as given (--set run.dump_steps=2): no file
    // holds it, so no other reader can see another value
    ConfigKeyType kt = SCHEMA[idx].type;
    if ((kt == CK_STRING || kt == CK_ENUM || kt == CK_PRESET) && type != YS_NULL) type = YS_STR;
    config_set_key(c, ks, val, type, where);
}

// ---------------------------------------------------------------------------------
// Finalize
// ---------------------------------------------------------------------------------

static void ctx_prefix(const Config *c, char *buf, size_t n) {
    buf[0] = 0;
    int has_variant = c->variant[0] && strcmp(c->variant, "default");
    if (c->source_path[0] && has_variant) snprintf(buf, n, "%s (variant '%s'): ", c->source_path, c->variant);
    else if (c->source_path[0]) snprintf(buf, n, "%s: ", c->source_path);
    else if (has_variant) snprintf(buf, n, "variant '%s': ", c->variant);
}

// LaX keys (docs/lax.md §2): meaningful only with model.linear: lax. The rank rules are those
// of cola/svd (above); BTP and Vanilla-TP both accept lax (layout_make keeps Vanilla-TP's
// tp | r); FullRank-TP is model.linear: dense, which has no latent to cross.
static void config_check_lax(const Config *c, const char *pre) {
    static const char *const keys[] = { "model.lax_base", "model.lax_gate", "model.lax_norm" };
    if (c->model.linear == LINEAR_LAX) return;
    for (int i = 0; i < 3; i++)
        if (c->key_set[config_key_index(keys[i])])
            die_input_hint("remove it, or set model.linear: lax (e.g. in the LaX variant only)",
                           "%s%s applies only to model.linear: lax (this is %s)", pre, keys[i], linear_kind_name(c->model.linear));
}

static void check_size_limits(Config *c, const char *pre);   // below, "Size limits"

void config_for_shape(Config *c, const char *preset, const char *linear, int seq_len, const char *const *sets, int n_sets) {
    config_defaults(c);
    char kv[160];
    xsnprintf(kv, sizeof kv, "model.preset=%s", preset); config_set_override(c, kv);
    xsnprintf(kv, sizeof kv, "model.linear=%s", linear); config_set_override(c, kv);
    xsnprintf(kv, sizeof kv, "model.seq_len=%d", seq_len); config_set_override(c, kv);
    for (int i = 0; i < n_sets; i++) config_set_override(c, sets[i]);
    config_finalize(c);
}

// Selective recomputation and sequence parallelism: a switch that would do nothing, or a
// layout it cannot cut, is refused (docs/boost.md §4, docs/parallelism.md §8).
static void config_check_recompute_sp(const Config *c, const char *pre) {
    const BoostConfig *b = &c->boost;
    if (b->selective_recompute && (b->full_recompute || b->lowrank_ckpt))
        die_input_hint(b->full_recompute ? "set boost.full_recompute: false, or boost.selective_recompute: false"
                                         : "set boost.lowrank_ckpt: false, or boost.selective_recompute: false",
                       "%sboost.selective_recompute replays the attention core only; boost.%s already recomputes it "
                       "(and more): choose one", pre, b->full_recompute ? "full_recompute" : "lowrank_ckpt");
    // (at tp = 1 it has nothing to cut and no effect, as parallel.zero1 at dp = 1: one override
    // can then cover a manifest whose variants have several grids)
    if (!b->sequence_parallel) return;
    int tp = c->parallel.tp, T = c->model.seq_len;
    // BTP's form (docs/boost.md §8) cuts its bottlenecks by tokens; LaX's crossing, latents and
    // their messages would be cut too, which is not built
    if (b->btp && c->model.linear == LINEAR_LAX && tp > 1)
        die_input_hint("set parallel.sequence_parallel: false, or model.linear: cola or svd",
                       "%sparallel.sequence_parallel with boost.btp is not implemented for model.linear lax (its "
                       "crossing and latents would be cut by tokens too)", pre);
    if (T % tp) {
        char hint[160];
        xsnprintf(hint, sizeof hint, "set model.seq_len to a multiple of %d (e.g. %d), or parallel.sequence_parallel: false",
                  tp, (T + tp - 1) / tp * tp);
        die_input_hint(hint, "%sparallel.sequence_parallel needs model.seq_len = %d divisible by parallel.tp = %d "
                       "(each micro-batch's b·seq_len tokens are cut into tp equal shards, Megatron-LM's rule)", pre, T, tp);
    }
}

void config_finalize(Config *c) {
    char pre[1300];
    ctx_prefix(c, pre, sizeof pre);
    ModelConfig *m = &c->model;
    // every value within its schema range (catches code that filled the struct directly)
    for (int i = 0; i < N_SCHEMA; i++) {
        const ConfigKey *k = &SCHEMA[i];
        const void *p = (const char *)c + k->offset;
        double x;
        char want[512], got[64];
        switch (k->type) {
        case CK_INT: x = *(const int *)p; break;
        case CK_INT64: x = (double)*(const int64_t *)p; break;
        case CK_FLOAT: x = *(const float *)p; break;
        case CK_DOUBLE: x = *(const double *)p; break;
        case CK_BOOL:
            if (*(const int *)p != 0 && *(const int *)p != 1)
                die_input("%s%s.%s = %d: expected true or false", pre, k->section, k->key, *(const int *)p);
            continue;
        case CK_ENUM: {
            int v = *(const int *)p, nn = 0;
            while (k->enum_names[nn]) nn++;
            if (v < 0 || v >= nn) die_input("%s%s.%s = %d: not a valid value", pre, k->section, k->key, v);
            continue;
        }
        case CK_STRING: {
            const char *s = p;
            config_describe_key(k, want, sizeof want);
            if (!memchr(s, 0, k->size)) die_input("%s%s.%s: not terminated", pre, k->section, k->key);
            if (((k->flags & CKF_NONEMPTY) && !*s) || (k->check && k->check(s, NULL, 0)))
                die_input("%s%s.%s = '%s': expected %s", pre, k->section, k->key, s, want);
            continue;
        }
        case CK_PRESET: {
            ModelConfig tmp;
            if (((const char *)p)[0] && !preset_apply(p, &tmp))
                die_input("%smodel.preset: unknown preset '%s'", pre, (const char *)p);
            continue;
        }
        default: continue;
        }
        // rank_attn/rank_mlp/n_kv_heads may still be 0 (= unset) here
        if (x == 0 && (k->offset == offsetof(Config, model.rank_attn) || k->offset == offsetof(Config, model.rank_mlp) ||
                       k->offset == offsetof(Config, model.n_kv_heads)))
            continue;
        if (!isfinite(x) || !in_range(k, x)) {
            config_describe_key(k, want, sizeof want);
            config_format_value(c, k, got, sizeof got);
            die_input("%s%s.%s = %s: expected %s", pre, k->section, k->key, got, want);
        }
    }

    // n_kv_heads follows n_heads unless it was set itself: unset (0), or n_heads was set
    // explicitly while n_kv_heads still holds the default's/preset's value
    if (m->n_kv_heads == 0 ||
        (c->key_set[config_key_index("model.n_heads")] && !c->key_set[config_key_index("model.n_kv_heads")]))
        m->n_kv_heads = m->n_heads;
    if (m->d_model % m->n_heads)
        die_input("%smodel.d_model = %d is not divisible by model.n_heads = %d", pre, m->d_model, m->n_heads);
    if ((m->d_model / m->n_heads) % 2)
        die_input("%shead dimension model.d_model / model.n_heads = %d / %d = %d must be even (RoPE rotates pairs)",
                  pre, m->d_model, m->n_heads, m->d_model / m->n_heads);
    if (m->n_kv_heads > m->n_heads || m->n_heads % m->n_kv_heads)
        die_input("%smodel.n_heads = %d is not a multiple of model.n_kv_heads = %d", pre, m->n_heads, m->n_kv_heads);

    if (c->boost.btp && m->linear == LINEAR_DENSE)
        die_input_hint("use model.linear: cola or svd, or boost.btp: false (FullRank-TP)",
                       "%sboost.btp needs a low-rank model: model.linear is dense", pre);
    if (c->boost.lowrank_ckpt && c->boost.full_recompute)
        die_input("%sboost.lowrank_ckpt and boost.full_recompute are two checkpointing schemes; choose one", pre);
    if (c->boost.lowrank_ckpt && m->linear == LINEAR_DENSE)
        die_input("%sboost.lowrank_ckpt needs a low-rank model (its checkpoints are the bottleneck activations); model.linear is dense", pre);
    // A switch that would do nothing is refused: the run would be recorded with a technique
    // that did not run (docs/boost.md, "Switches and their combinations").
    static const char *const needs_btp[] = { "online_rmsnorm", "grouping", "lowrank_ckpt" };
    const int needs_btp_on[] = { c->boost.online_rmsnorm, c->boost.grouping, c->boost.lowrank_ckpt };
    for (int i = 0; i < 3; i++)
        if (needs_btp_on[i] && !c->boost.btp) {
            char hint[160];
            xsnprintf(hint, sizeof hint, "set boost.btp: true, or boost.%s: false (e.g. in the Vanilla-TP variant)", needs_btp[i]);
            die_input_hint(hint, "%sboost.%s acts on BTP's bottlenecks and does nothing without boost.btp", pre, needs_btp[i]);
        }
    if (c->boost.rmsnorm_variant != RMSNORM_PAPER && !c->boost.btp)
        die_input_hint("set boost.btp: true, or boost.rmsnorm_variant: paper", "%sboost.rmsnorm_variant = %s is a form of "
                       "BTP's norm and does nothing without boost.btp", pre, rmsnorm_variant_names[c->boost.rmsnorm_variant]);
    if (c->boost.rmsnorm_variant == RMSNORM_TWO_CALL && !c->boost.online_rmsnorm)
        die_input_hint("set boost.online_rmsnorm: true", "%sboost.rmsnorm_variant = two_call is the authors' online RMSNorm "
                       "(its statistic as a second all-reduce); boost.online_rmsnorm is false", pre);
    if (c->boost.rmsnorm_variant == RMSNORM_SHARD_LOCAL && c->boost.online_rmsnorm)
        die_input_hint("set boost.online_rmsnorm: false", "%sboost.rmsnorm_variant = shard_local has no statistic to carry "
                       "(statistics over d/tp only); boost.online_rmsnorm must be false", pre);
    if (c->key_set[config_key_index("boost.sync_norm_backward")] && (!c->boost.btp || c->boost.online_rmsnorm ||
                                                                       c->boost.rmsnorm_variant == RMSNORM_SHARD_LOCAL))
        die_input("%sboost.sync_norm_backward chooses SyncRMSNorm's backward; it has no effect %s", pre,
                  !c->boost.btp ? "without boost.btp" : c->boost.online_rmsnorm ? "with boost.online_rmsnorm (whose backward needs no collective)"
                  : "with boost.rmsnorm_variant = shard_local (a per-shard norm: no collective)");
    config_check_recompute_sp(c, pre);

    // parallel.micro_batches and train.grad_accum name one number
    int idx_mb = config_key_index("parallel.micro_batches"), idx_ga = config_key_index("train.grad_accum");
    if (c->key_set[idx_mb] && c->key_set[idx_ga] && c->parallel.micro_batches != c->train.grad_accum)
        die_input("%sparallel.micro_batches = %d and train.grad_accum = %d disagree: they are the same number (micro-batches per optimizer step); set one",
                  pre, c->parallel.micro_batches, c->train.grad_accum);
    if (c->key_set[idx_mb]) c->train.grad_accum = c->parallel.micro_batches;
    c->parallel.micro_batches = c->train.grad_accum;
    if (c->train.batch_size % c->parallel.dp)
        die_input("%strain.batch_size = %d is not divisible by parallel.dp = %d (each replica takes batch_size/dp sequences of every micro-batch)",
                  pre, c->train.batch_size, c->parallel.dp);

    int idx_ra = config_key_index("model.rank_attn"), idx_rm = config_key_index("model.rank_mlp");
    if (m->linear == LINEAR_DENSE) {
        if (c->key_set[idx_ra] || c->key_set[idx_rm])
            die_input_hint("set the ranks only where model.linear is cola or svd (e.g. in those variants)",
                           "%smodel.%s is set but model.linear is dense (dense layers have no rank)", pre,
                           c->key_set[idx_ra] ? "rank_attn" : "rank_mlp");
        m->rank_attn = m->rank_mlp = 0;
    } else {
        if (m->rank_attn == 0) m->rank_attn = m->d_model / 4;
        if (m->rank_mlp == 0) m->rank_mlp = m->d_model / 4;
        if (m->rank_attn < 1 || m->rank_mlp < 1)
            die_input("%smodel.rank_attn = %d, model.rank_mlp = %d: ranks must be >= 1 for model.linear %s", pre,
                      m->rank_attn, m->rank_mlp, linear_kind_name(m->linear));
    }
    if (!latent_silu(m) && c->key_set[config_key_index("model.only_lr_act")])
        die_input_hint("remove it, or set it only where model.linear is cola (or lax with model.lax_base: cola)",
                       "%smodel.only_lr_act applies only to model.linear: cola or lax on the cola base (this is %s%s)", pre,
                       linear_kind_name(m->linear), m->linear == LINEAR_LAX ? " with model.lax_base: svd" : "");
    config_check_lax(c, pre);

    TrainConfig *t = &c->train;
    if (t->warmup_steps > t->steps)
        die_input("%strain.warmup_steps = %d exceeds train.steps = %d", pre, t->warmup_steps, t->steps);
    int last_dump = step_list_max(c->run.dump_steps);
    if (last_dump > t->steps)
        die_input_hint("list steps within train.steps, or raise train.steps",
                       "%srun.dump_steps lists step %d, beyond train.steps = %d: it would never be dumped", pre, last_dump, t->steps);
    check_size_limits(c, pre);
}

// ---------------------------------------------------------------------------------
// Size limits: every size the configuration implies, in 64-bit arithmetic with overflow
// checks, against clear limits (docs/configuration.md, "Limits"), so that no product of
// valid keys can wrap later (B*T in the model, tensor sizes, vocab*d, tokens per run).
// ---------------------------------------------------------------------------------

// a * b into *out; 0 if it overflows int64 or exceeds `limit`.
static int mul_within(int64_t a, int64_t b, int64_t limit, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out) && *out <= limit;
}

// A product of keys above its limit: names the keys, the product and the limit.
__attribute__((noreturn))
static void die_product(const char *pre, const char *what, const char *formula, int64_t limit) {
    die_input("%s%s (%s) exceeds the limit of %lld elements", pre, what, formula, (long long)limit);
}

static void check_size_limits(Config *c, const char *pre) {
    const ModelConfig *m = &c->model;
    const TrainConfig *t = &c->train;
    // a rank above d_model is not low rank: A [d, r] alone would outgrow the dense [d, d]
    if (m->linear != LINEAR_DENSE && (m->rank_attn > m->d_model || m->rank_mlp > m->d_model))
        die_input_hint("lower the rank, or use model.linear: dense",
                       "%smodel.%s = %d exceeds model.d_model = %d: a low-rank factorisation needs r <= d_model",
                       pre, m->rank_attn > m->d_model ? "rank_attn" : "rank_mlp",
                       m->rank_attn > m->d_model ? m->rank_attn : m->rank_mlp, m->d_model);

    int64_t v;
    if (!mul_within(t->batch_size, m->seq_len, LIMIT_TOKENS_PER_BATCH, &v))
        die_input("%stokens per micro-batch train.batch_size * model.seq_len = %d * %d exceeds the limit of %lld",
                  pre, t->batch_size, m->seq_len, LIMIT_TOKENS_PER_BATCH);
    int64_t tokens = v, per_run;
    if (!mul_within(tokens, t->grad_accum, INT64_MAX, &v) || !mul_within(v, t->steps, INT64_MAX, &per_run))
        die_input("%stokens of the run train.steps * train.grad_accum * train.batch_size * model.seq_len = "
                  "%d * %d * %d * %d overflows a 64-bit count", pre, t->steps, t->grad_accum, t->batch_size, m->seq_len);
    // activations of one micro-batch (the largest buffers the model allocates)
    if (!mul_within(tokens, m->vocab_size, LIMIT_ELEMENTS, &v))
        die_product(pre, "the logits of a micro-batch", "train.batch_size * model.seq_len * model.vocab_size", LIMIT_ELEMENTS);
    if (!mul_within(tokens, m->d_ff > m->d_model ? m->d_ff : m->d_model, LIMIT_ELEMENTS, &v))
        die_product(pre, "an activation of a micro-batch", "train.batch_size * model.seq_len * max(d_model, d_ff)", LIMIT_ELEMENTS);
    if (!mul_within(tokens, m->seq_len, LIMIT_ELEMENTS, &v) || !mul_within(v, m->n_heads, LIMIT_ELEMENTS, &v))
        die_product(pre, "the attention probabilities of a micro-batch", "train.batch_size * n_heads * seq_len^2", LIMIT_ELEMENTS);
    // parameter tensors and their total (the formula of model_param_count, checked)
    int64_t d = m->d_model, f = m->d_ff, V = m->vocab_size, kv = (int64_t)m->n_kv_heads * (d / m->n_heads);
    int64_t ra = m->rank_attn, rm = m->rank_mlp, layer = 2 * d, x;
    if (!mul_within(V, d, LIMIT_ELEMENTS, &x)) die_product(pre, "the embedding", "model.vocab_size * model.d_model", LIMIT_ELEMENTS);
    int64_t embed = m->tie_embeddings ? x : 2 * x;
    const int64_t din[7] = { d, d, d, d, d, d, f }, dout[7] = { d, kv, kv, d, f, f, d };
    for (int i = 0; i < 7; i++) {
        int64_t r = i < 4 ? ra : rm;
        if (m->linear == LINEAR_DENSE) {
            if (!mul_within(din[i], dout[i], LIMIT_ELEMENTS, &x))
                die_product(pre, "a dense weight", "d_in * d_out of a linear layer", LIMIT_ELEMENTS);
        } else if (!mul_within(r, din[i] + dout[i], LIMIT_ELEMENTS, &x)) {
            die_product(pre, "a low-rank factor pair", "rank * (d_in + d_out)", LIMIT_ELEMENTS);
        }
        layer += x;
    }
    if (!mul_within(layer, m->n_layers, LIMIT_PARAMS, &x) || x + d + embed > LIMIT_PARAMS)
        die_input("%sthe model has more than %lld parameters (model.n_layers = %d layers of %lld)", pre,
                  (long long)LIMIT_PARAMS, m->n_layers, (long long)layer);
}

// ---------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------

// Shortest decimal text that reads back to the same float/double.
static void fmt_real(double x, int is_float, char *buf, size_t n) {
    for (int prec = is_float ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (is_float ? (strtof(buf, NULL) == (float)x) : (strtod(buf, NULL) == x)) break;
    }
    // make integers look like numbers of the float kind ("10000" stays; fine for YAML/JSON)
}

void config_format_value(const Config *c, const ConfigKey *k, char *buf, size_t n) {
    const void *p = (const char *)c + k->offset;
    switch (k->type) {
    case CK_INT: snprintf(buf, n, "%d", *(const int *)p); break;
    case CK_INT64: snprintf(buf, n, "%" PRId64, *(const int64_t *)p); break;
    case CK_UINT64: snprintf(buf, n, "%" PRIu64, *(const uint64_t *)p); break;
    case CK_FLOAT: fmt_real(*(const float *)p, 1, buf, n); break;
    case CK_DOUBLE: fmt_real(*(const double *)p, 0, buf, n); break;
    case CK_BOOL: snprintf(buf, n, "%s", *(const int *)p ? "true" : "false"); break;
    case CK_ENUM: {
        int v = *(const int *)p, nn = 0;
        while (k->enum_names[nn]) nn++;
        snprintf(buf, n, "%s", v >= 0 && v < nn ? k->enum_names[v] : "?");
        break;
    }
    case CK_STRING: case CK_PRESET: snprintf(buf, n, "%s", (const char *)p); break;
    }
}

void config_print_table(const Config *c, FILE *f) {
    int w = 0;
    const char *const *names = config_key_names();
    for (int i = 0; i < N_SCHEMA; i++)
        if ((int)strlen(names[i]) > w) w = (int)strlen(names[i]);
    if (c->source_path[0]) fprintf(f, "%-*s  %s\n", w, "(source)", c->source_path);
    if (c->variant[0]) fprintf(f, "%-*s  %s\n", w, "(variant)", c->variant);
    for (int i = 0; i < N_SCHEMA; i++) {
        char v[1100];
        config_format_value(c, &SCHEMA[i], v, sizeof v);
        if ((SCHEMA[i].type == CK_STRING || SCHEMA[i].type == CK_PRESET) && !v[0]) snprintf(v, sizeof v, "\"\"");
        fprintf(f, "%-*s  %s\n", w, names[i], v);
    }
}

static void jcat(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t l = strlen(s);
    if (*len + l + 1 > *cap) {
        while (*len + l + 1 > *cap) *cap = *cap ? *cap * 2 : 1024;
        char *nb = xmalloc(*cap);
        if (*buf) memcpy(nb, *buf, *len);
        free(*buf);
        *buf = nb;
    }
    memcpy(*buf + *len, s, l + 1);
    *len += l;
}
// A JSON string literal (core/json.h) appended.
static void json_str(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t need = json_escape(NULL, 0, s) + 1;
    char *lit = xmalloc(need);
    json_escape(lit, need, s);
    jcat(buf, len, cap, lit);
    free(lit);
}

char *config_to_json(const Config *c) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    jcat(&buf, &len, &cap, "{");
    const char *cur = NULL;
    for (int i = 0; i < N_SCHEMA; i++) {
        const ConfigKey *k = &SCHEMA[i];
        if (!cur || strcmp(cur, k->section)) {
            jcat(&buf, &len, &cap, cur ? "}, " : "");
            json_str(&buf, &len, &cap, k->section);
            jcat(&buf, &len, &cap, ": {");
            cur = k->section;
        } else {
            jcat(&buf, &len, &cap, ", ");
        }
        json_str(&buf, &len, &cap, k->key);
        jcat(&buf, &len, &cap, ": ");
        char v[1100];
        config_format_value(c, k, v, sizeof v);
        if (k->type == CK_STRING || k->type == CK_PRESET || k->type == CK_ENUM) json_str(&buf, &len, &cap, v);
        else jcat(&buf, &len, &cap, v);
    }
    jcat(&buf, &len, &cap, cur ? "}}" : "}");
    return buf;
}

// ---------------------------------------------------------------------------------
// LaX's kron factor pair (the parameter and FLOP counts are the FLOP module's, model/flops.c)
// ---------------------------------------------------------------------------------
void lax_kron_factors(int r, int *r1, int *r2) {
    int a = 1;
    for (int k = 1; (int64_t)k * k <= r; k++)
        if (r % k == 0) a = k;
    *r1 = a;
    *r2 = r / a;
}
