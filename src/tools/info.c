// info — model shapes, parameter counts and training FLOPs per token, from a preset, a
// manifest, or --set overrides; the schema as markdown (docs/configuration.md).
//
//   build/info --preset cola-60m --linear cola
//   build/info --config experiments/quickstart.yaml [--variant NAME] [--set train.lr=1e-3]
//   build/info --all                 every preset x {dense, cola, svd, lax}
//   build/info --keys-markdown       the schema table of docs/configuration.md
//   build/info ... --memory          also the memory per rank (a dry run of the model and optimizer)
//   build/info --memory-table        the memory of the BOOST paper's shapes (docs/boost.md)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/config_diff.h"
#include "../config/manifest.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../train/trainer.h"
#include "../model/kind.h"

static const char *USAGE =
    "usage: info [--preset NAME] [--linear dense|cola|svd|lax] [--config FILE [--variant NAME]]\n"
    "            [--set KEY=VALUE]... [--print-config] [--json] [--memory]\n"
    "       info --all [--set KEY=VALUE]...\n"
    "       info --keys-markdown | --keys-tsv\n"
    "       info --memory-table";

static void group(int64_t x, char *buf, size_t n) {  // 12345678 -> "12,345,678"
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", (long long)(x < 0 ? -x : x));
    size_t l = strlen(raw), j = 0;
    char out[48];
    if (x < 0) out[j++] = '-';
    for (size_t i = 0; i < l; i++) {
        out[j++] = raw[i];
        if ((l - i - 1) % 3 == 0 && i + 1 < l) out[j++] = ',';
    }
    out[j] = 0;
    snprintf(buf, n, "%s", out);
}

static void human(double x, char *buf, size_t n) {
    if (x >= 1e9) snprintf(buf, n, "%.2f B", x / 1e9);
    else if (x >= 1e6) snprintf(buf, n, "%.2f M", x / 1e6);
    else if (x >= 1e3) snprintf(buf, n, "%.2f K", x / 1e3);
    else snprintf(buf, n, "%.0f", x);
}

static void row(const char *name, int64_t din, int64_t dout, int rank, int dense) {
    int64_t p = dense ? din * dout : (int64_t)rank * (din + dout);
    char ps[32];
    group(p, ps, sizeof ps);
    if (dense) printf("  %-10s %7lld %7lld %7s %16s\n", name, (long long)din, (long long)dout, "-", ps);
    else printf("  %-10s %7lld %7lld %7d %16s\n", name, (long long)din, (long long)dout, rank, ps);
}

static void report(const Config *c, const char *title) {
    const ModelConfig *m = &c->model;
    int dense = !kind_of(m)->lowrank;
    int hd = m->d_model / m->n_heads, kv = m->n_kv_heads * hd;
    if (title) printf("== %s ==\n", title);
    printf("model    %s, linear %s%s", m->preset[0] ? m->preset : "(no preset)", linear_kind_name(m->linear),
           latent_silu(m) ? (m->only_lr_act ? " (only_lr_act: z = g*u)" : " (only_lr_act false: z = SiLU(g)*u)") : "");
    char extra[256];
    kind_of(m)->describe(m, extra, sizeof extra);   // what the kind adds (LaX: its crossings)
    printf("\n");
    printf("shape    layers %d, d_model %d, heads %d (kv %d, head_dim %d), d_ff %d", m->n_layers, m->d_model, m->n_heads,
           m->n_kv_heads, hd, m->d_ff);
    if (!dense) printf(", rank attn %d / mlp %d", m->rank_attn, m->rank_mlp);
    printf(", seq_len %d, vocab %d, %s embeddings\n\n", m->seq_len, m->vocab_size, m->tie_embeddings ? "tied" : "untied");

    printf("  %-10s %7s %7s %7s %16s\n", "per layer", "d_in", "d_out", "rank", "params");
    row("attn.q", m->d_model, m->d_model, m->rank_attn, dense);
    row("attn.k", m->d_model, kv, m->rank_attn, dense);
    row("attn.v", m->d_model, kv, m->rank_attn, dense);
    row("attn.o", m->d_model, m->d_model, m->rank_attn, dense);
    row("mlp.gate", m->d_model, m->d_ff, m->rank_mlp, dense);
    row("mlp.up", m->d_model, m->d_ff, m->rank_mlp, dense);
    row("mlp.down", m->d_ff, m->d_model, m->rank_mlp, dense);
    char s[32], h[32];
    group(2LL * m->d_model, s, sizeof s);
    printf("  %-10s %7s %7s %7s %16s\n", "norms", "2 x d", "", "", s);

    int64_t total = model_param_count(m), emb = model_embedding_param_count(m);
    int64_t vd = (int64_t)m->vocab_size * m->d_model;
    // layer 0's parameters: a kind may add more in later layers (LaX's crossings)
    ModelConfig one = *m;
    one.n_layers = 1;
    int64_t per_layer = model_param_count(&one) - model_embedding_param_count(m) - m->d_model;
    int64_t extra_params = total - emb - m->d_model - per_layer * m->n_layers;
    group(per_layer, s, sizeof s);
    printf("  %-10s %7s %7s %7s %16s   x %d layers\n", "layer", "", "", "", s, m->n_layers);
    if (extra[0]) {
        group(extra_params, s, sizeof s);
        printf("  %-10s %7s %7s %7s %16s   (%s)\n", kind_of(m)->name, "", "", "", s, extra);
    }
    printf("\n");

    group(total, s, sizeof s);
    human((double)total, h, sizeof h);
    printf("parameters              %16s  (%s)\n", s, h);
    group(vd, s, sizeof s);
    printf("  embedding             %16s  (%d x %d)\n", s, m->vocab_size, m->d_model);
    if (m->tie_embeddings) printf("  lm_head               %16s  (tied to the embedding)\n", "0");
    else printf("  lm_head               %16s  (%d x %d)\n", s, m->d_model, m->vocab_size);
    group(total - emb, s, sizeof s);
    human((double)(total - emb), h, sizeof h);
    printf("  non-embedding         %16s  (%s: layers + final norm)\n", s, h);

    double f = flops_train_per_token(m), attn = flops_attention_per_token(m);
    printf("train FLOPs per token   %16.4e  (GEMMs incl. lm_head %.4e + causal attention 7*L*d*(T+1) %.4e; "
           "model/flops.h)\n", f, flops_gemm_per_token(m), attn);
    printf("train FLOPs per step    %16.4e  (%d x %d x %d tokens)\n",
           f * c->train.batch_size * c->train.grad_accum * m->seq_len, c->train.batch_size, c->train.grad_accum, m->seq_len);
}

static void all_table(const char *const *sets, int n_sets) {
    printf("%-10s %-6s %14s %14s %14s %10s %10s\n", "preset", "linear", "params", "non-embedding", "FLOPs/token",
           "p/dense", "F/dense");
    for (const char *const *p = preset_names(); *p; p++) {
        double dense_p = 0, dense_f = 0;
        for (int lk = 0; lk < LINEAR_KIND_COUNT; lk++) {
            Config c;
            config_defaults(&c);
            char a[128];
            snprintf(a, sizeof a, "model.preset=%s", *p);
            config_set_override(&c, a);
            snprintf(a, sizeof a, "model.linear=%s", linear_kind_name((LinearKind)lk));
            config_set_override(&c, a);
            for (int i = 0; i < n_sets; i++) config_set_override(&c, sets[i]);
            config_finalize(&c);
            double tp = (double)model_param_count(&c.model);
            double ne = tp - (double)model_embedding_param_count(&c.model);
            double fl = flops_train_per_token(&c.model);
            if (lk == LINEAR_DENSE) { dense_p = tp; dense_f = fl; }
            char ts[32], ns[32];
            human(tp, ts, sizeof ts);
            human(ne, ns, sizeof ns);
            printf("%-10s %-6s %14s %14s %14.4e %10.3f %10.3f\n", *p, linear_kind_name((LinearKind)lk), ts, ns, fl,
                   tp / dense_p, fl / dense_f);
        }
    }
    printf("(p/dense, F/dense: params and FLOPs relative to the dense model of the same preset)\n");
}

static void md_cell(const char *s) {  // a table cell: escape the column separator
    for (; *s; s++) {
        if (*s == '|') putchar('\\');
        putchar(*s);
    }
}

// What a change of the key at a resume does (config_diff.h).
static const char *change_cell(ConfigChangeClass c) {
    static char buf[64];
    snprintf(buf, sizeof buf, "%s%s", config_change_class_name(c),
             c == CHANGE_MODEL ? ": refused" : config_change_is_free(c) ? ": accepted" : ": --allow-change");
    return buf;
}

static void keys_markdown(void) {
    Config d;
    config_defaults(&d);
    int n;
    const ConfigKey *s = config_schema(&n);
    printf("| key | type | default | accepted values | at a resume | description |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const ConfigKey *k = &s[i];
        char def[1100], want[600];
        config_format_value(&d, k, def, sizeof def);
        config_describe_key(k, want, sizeof want);
        if (!strcmp(k->section, "model") && (!strcmp(k->key, "rank_attn") || !strcmp(k->key, "rank_mlp")))
            snprintf(def, sizeof def, "d_model/4");
        if (!strcmp(k->section, "model") && !strcmp(k->key, "n_kv_heads") && d.model.n_kv_heads == 0)
            snprintf(def, sizeof def, "n_heads");
        printf("| `%s.%s` | %s | %s%s%s | ", k->section, k->key, config_type_name(k->type), def[0] ? "`" : "",
               def[0] ? def : "\"\"", def[0] ? "`" : "");
        md_cell(want);
        printf(" | %s | ", change_cell(k->change));
        md_cell(k->help);
        printf(" |\n");
    }
}

// The schema for programs (tools/probe_keys.py): key, type, lower and upper bound ('>' or
// '<' before an exclusive one), enum names, the default, the change class, a string's most
// characters, the accepted values as the docs say them, "path" for a key that names a file or
// folder (CKF_PATH); tab-separated.
static void keys_tsv(void) {
    Config d;
    config_defaults(&d);
    int n;
    const ConfigKey *s = config_schema(&n);
    for (int i = 0; i < n; i++) {
        const ConfigKey *k = &s[i];
        char def[1100];
        config_format_value(&d, k, def, sizeof def);
        printf("%s.%s\t%s\t", k->section, k->key, config_type_name(k->type));
        if (k->flags & CKF_MIN) printf("%s%.17g", (k->flags & CKF_MIN_EXCL) ? ">" : "", k->min);
        printf("\t");
        if (k->flags & CKF_MAX) printf("%s%.17g", (k->flags & CKF_MAX_EXCL) ? "<" : "", k->max);
        printf("\t");
        const char *const *names = k->type == CK_PRESET ? preset_names() : k->enum_names;
        for (int j = 0; names && names[j]; j++) printf("%s%s", j ? "," : "", names[j]);
        char want[600];
        config_describe_key(k, want, sizeof want);
        printf("\t%s\t%s\t%zu\t%s\t%s\n", def, config_change_class_name(k->change),
               k->type == CK_STRING || k->type == CK_PRESET ? k->size - 1 : 0, want, (k->flags & CKF_PATH) ? "path" : "");
    }
}

// docs/boost.md's table: the paper's shapes and layouts (paper notes §7: b 4, s 4096,
// tp ≤ 4, pp across nodes; micro-batches per step = pp), CoLA with BTP + online RMSNorm +
// grouping, per checkpointing scheme: the largest rank's peak in bf16 and fp32. The BOOST
// presets tie the embeddings; with pp > 1 they are untied (embedding and head on different stages).
static void memory_table(void) {
    static const struct { const char *preset; int tp, pp; } rows[] = {
        { "boost-1b", 1, 1 }, { "boost-3b", 2, 1 }, { "boost-7b", 4, 1 }, { "boost-13b", 4, 2 }, { "boost-30b", 4, 4 } };
    static const char *const ck[3] = { "none", "low-rank", "full recompute" };
    printf("| model | tp × pp | checkpointing | params+grads+optimizer GiB (bf16) | activations + working set GiB (bf16) | peak GiB bf16 | peak GiB fp32 |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < 5; i++)
        for (int c = 0; c < 3; c++) {
            Config cfg;
            config_defaults(&cfg);
            char kv[96];
            snprintf(kv, sizeof kv, "model.preset=%s", rows[i].preset); config_set_override(&cfg, kv);
            const char *sets[] = { "model.linear=cola", "model.seq_len=4096", "train.batch_size=4", "boost.btp=true",
                                   "boost.online_rmsnorm=true", "boost.grouping=true", "data.dataset=synthetic",
                                   "train.warmup_steps=0" };
            for (size_t k = 0; k < sizeof sets / sizeof *sets; k++) config_set_override(&cfg, sets[k]);
            snprintf(kv, sizeof kv, "parallel.tp=%d", rows[i].tp); config_set_override(&cfg, kv);
            snprintf(kv, sizeof kv, "parallel.pp=%d", rows[i].pp); config_set_override(&cfg, kv);
            snprintf(kv, sizeof kv, "train.grad_accum=%d", rows[i].pp); config_set_override(&cfg, kv);
            if (rows[i].pp > 1) config_set_override(&cfg, "model.tie_embeddings=false");   // the stages cannot share them
            if (c == 1) config_set_override(&cfg, "boost.lowrank_ckpt=true");
            if (c == 2) config_set_override(&cfg, "boost.full_recompute=true");
            config_finalize(&cfg);
            MemReport best[2];
            memset(best, 0, sizeof best);
            for (int s = 0; s < rows[i].pp; s++)
                for (int k = 0; k < 2; k++) {
                    MemReport r;
                    trainer_memory_report(&cfg, grid_world_rank(rows[i].tp, 1, 0, 0, s), k ? DT_F32 : DT_BF16, &r);
                    if (r.total > best[k].total) best[k] = r;
                }
            const MemReport *b = &best[0];
            double state = b->bytes[MEM_PARAMS] + b->bytes[MEM_GRADS] + b->bytes[MEM_OPTIM];
            double acts = b->bytes[MEM_ACTS] + b->bytes[MEM_WORK] + b->bytes[MEM_COMM];
            printf("| %s | %d × %d | %s | %.1f | %.1f | %.1f | %.1f |\n", rows[i].preset, rows[i].tp, rows[i].pp, ck[c],
                   state / 1073741824.0, acts / 1073741824.0, b->total / 1073741824.0, best[1].total / 1073741824.0);
        }
}

int main(int argc, char **argv) {
    const char *config_path = NULL, *variant = NULL;
    const char *preset = NULL, *linear = NULL;
    int all = 0, md = 0, tsv = 0, print_cfg = 0, json = 0, memory = 0, mem_table = 0;
    OptList set_list = {0};
    const ToolOption opts[] = {   // (config/options.h: the schema's types and messages)
        OPT_FLAG_ROW("all", &all),
        OPT_FLAG_ROW("keys-markdown", &md),
        OPT_FLAG_ROW("keys-tsv", &tsv),
        OPT_FLAG_ROW("print-config", &print_cfg),
        OPT_FLAG_ROW("json", &json),
        OPT_FLAG_ROW("memory", &memory),
        OPT_FLAG_ROW("memory-table", &mem_table),
        OPT_STR_ROW("preset", &preset),
        OPT_STR_ROW("linear", &linear),
        OPT_LIST_ROW("set", &set_list),
        OPT_PATH_ROW("config", &config_path),
        OPT_STR_ROW("variant", &variant),
        OPT_END };
    opt_parse("info", opts, argc, argv, NULL, 0, NULL, USAGE);
    // --preset and --linear are the keys model.preset and model.linear, applied before --set
    const char **sets = xcalloc((size_t)set_list.n + 3, sizeof *sets);
    char *owned[2] = { NULL, NULL };
    int n_sets = 0;
    if (preset) { owned[0] = xmalloc(strlen(preset) + 16); sprintf(owned[0], "model.preset=%s", preset); sets[n_sets++] = owned[0]; }
    if (linear) { owned[1] = xmalloc(strlen(linear) + 16); sprintf(owned[1], "model.linear=%s", linear); sets[n_sets++] = owned[1]; }
    for (int i = 0; i < set_list.n; i++) sets[n_sets++] = set_list.v[i];
    if (variant && !config_path) die_input_hint(USAGE, "info: --variant needs --config FILE");
    if (all && config_path) die_input_hint(USAGE, "info: --all takes no --config");
    if (mem_table) {
        memory_table();
    } else if (md) {
        keys_markdown();
    } else if (tsv) {
        keys_tsv();
    } else if (all) {
        all_table(sets, n_sets);
    } else if (config_path) {
        Manifest *m = manifest_load_with(config_path, sets, n_sets);
        if (variant) (void)manifest_variant(m, variant);  // unknown name -> error listing the names
        printf("manifest %s (name %s%s%s, manifest_version %d, sha256 %.16s..., %d variant%s)\n", m->path, m->name,
               m->version[0] ? ", version " : "", m->version, m->manifest_version, m->sha256, m->n_variants,
               m->n_variants == 1 ? "" : "s");
        for (int i = 1; i < m->n_sources; i++) printf("  extends %s (sha256 %.16s...)\n", m->sources[i].path, m->sources[i].sha256);
        if (m->description[0]) printf("  %s\n", m->description);
        printf("\n");
        for (int i = 0; i < m->n_variants; i++) {
            const ManifestVariant *v = &m->variants[i];
            if (variant && strcmp(v->name, variant)) continue;
            if (json) { char *j = config_to_json(&v->config); printf("%s\n", j); free(j); continue; }
            report(&v->config, v->name);
            if (memory) { printf("\n"); trainer_memory_print(&v->config, stdout); }
            if (print_cfg) { printf("\n"); config_print_table(&v->config, stdout); }
            printf("\n");
        }
        manifest_free(m);
    } else {
        Config c;
        config_defaults(&c);
        for (int i = 0; i < n_sets; i++) config_set_override(&c, sets[i]);
        config_finalize(&c);
        if (json) { char *j = config_to_json(&c); printf("%s\n", j); free(j); }
        else {
            report(&c, NULL);
            if (memory) { printf("\n"); trainer_memory_print(&c, stdout); }
            if (print_cfg) { printf("\n"); config_print_table(&c, stdout); }
        }
    }
    free(owned[0]); free(owned[1]);
    free(sets); free(set_list.v);
    return 0;
}
