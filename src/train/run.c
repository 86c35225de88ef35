// run.c — the run loop (see run.h).
#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "run.h"
#include "trainer.h"
#include "state_io.h"
#include "../core/check.h"
#include "../store/checkpoint.h"
#include "../store/db.h"
#include "../store/dump.h"

// ---- state shared with the die hook and the signal handler ---------------------------
static RunDB *g_db;
static int64_t g_run_id;
static volatile sig_atomic_t g_stop_signal;

static void on_die(const char *message, int code) {
    if (g_db && g_run_id) {
        rundb_end_run(g_db, g_run_id, "failed", message);
        rundb_close(g_db);
        g_db = NULL;
    }
}
static void on_signal(int sig) { g_stop_signal = sig; }

// Refuse a checkpoint written by another model: every `"key": value` of our model
// section (the preset name aside) must appear in the checkpoint's model section.
static void check_same_model(const char *path, const Config *cfg, const char *ckpt_json) {
    const char *ms = ckpt_json ? strstr(ckpt_json, "\"model\": {") : NULL;
    if (!ms) return;
    const char *me = strchr(ms, '}');
    int nk; const ConfigKey *keys = config_schema(&nk);
    for (int i = 0; i < nk; i++) {
        if (strcmp(keys[i].section, "model") || !strcmp(keys[i].key, "preset")) continue;
        char v[1100], want[1300];
        config_format_value(cfg, &keys[i], v, sizeof v);
        int quoted = keys[i].type == CK_STRING || keys[i].type == CK_ENUM;
        xsnprintf(want, sizeof want, quoted ? "\"%s\": \"%s\"" : "\"%s\": %s", keys[i].key, v);
        const char *hit = strstr(ms, want);
        if (!hit || hit > me)
            die_input("RESUME: %s was written by a different model (model.%s is now %s); resuming with a different model is refused",
                      path, keys[i].key, v);
    }
}

typedef struct {
    const RunOptions *opt;
    char uid[256];
    char ckpt_dir[1300];
    char *config_json;
    char *manifest_text;
    ModelState *full;          // rank 0: the unsharded state (checkpoints, dumps)
    RunInfo facts;             // rank 0: host, libraries, git commit (collected once)
} RunCtx;

// The manifest's text, stored in every checkpoint (it was just parsed, so it exists).
static char *read_text_file(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK_ERRNO(!f, path);
    CHECK_ERRNO(fseek(f, 0, SEEK_END) != 0, path);
    long n = ftell(f);
    CHECK_ERRNO(n < 0 || fseek(f, 0, SEEK_SET) != 0, path);
    char *s = xmalloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    CHECK(got == (size_t)n, "%s: read %zu of %ld bytes", path, got, n);
    s[got] = 0;
    fclose(f);
    return s;
}

// <run.dump_dir or <checkpoint dir>/<uid>/dumps>/step_<N>.h5
static void dump_path(char *buf, size_t n, const RunCtx *ctx, const Config *cfg, int step) {
    if (cfg->run.dump_dir[0]) xsnprintf(buf, n, "%s/step_%d.h5", cfg->run.dump_dir, step);
    else xsnprintf(buf, n, "%s/dumps/step_%d.h5", ctx->ckpt_dir, step);
}

// Step dump hook (before clipping and the update): the weights this step used, its
// whole batch (rebuilt from the stateless loader on rank 0), the mean loss and the
// gradients of that loss, unsharded.
static void dump_hook(void *vctx, Trainer *tr, double loss) {
    RunCtx *ctx = vctx;
    const Config *cfg = &tr->cfg;
    int step = tr->step + 1;
    if (!config_step_listed(cfg->run.dump_steps, step)) return;
    Comm *c = tr->comm;
    int B = cfg->train.batch_size, K = cfg->train.grad_accum, T = tr->model.T;
    state_gather(&tr->model, ctx->full, STATE_PARAMS | STATE_GRADS);
    if (c->rank != 0) return;
    char path[1500];
    dump_path(path, sizeof path, ctx, cfg, step);
    if (c->world == 1) {   // the batch is this process's own; activations only here
        dump_write(path, ctx->full, cfg->run.dump_activations ? &tr->model : NULL, step, ctx->config_json,
                   tr->inputs, tr->targets, K * B, T, loss);
        if (g_db) rundb_event(g_db, g_run_id, step, "dump", path);
        return;
    }
    size_t n = (size_t)K * B * T;
    int32_t *in = xmalloc(n * sizeof(int32_t)), *tg = xmalloc(n * sizeof(int32_t));
    uint64_t first = tr->samples_seen - (uint64_t)K * B;     // the step's first sample
    for (int k = 0; k < K; k++)
        loader_train_batch(&tr->loader, first + (uint64_t)k * B, B, in + (size_t)k * B * T, tg + (size_t)k * B * T);
    dump_write(path, ctx->full, NULL, step, ctx->config_json, in, tg, K * B, T, loss);
    if (g_db) rundb_event(g_db, g_run_id, step, "dump", path);
    free(in); free(tg);
}

static void save_checkpoint(RunCtx *ctx, Trainer *tr) {
    Comm *c = tr->comm;
    zero1_optim_begin(&tr->model, 1);
    state_gather(&tr->model, ctx->full, STATE_PARAMS | STATE_OPTIM);
    zero1_optim_end(&tr->model);
    if (c->rank != 0) return;
    CheckpointMeta meta = {0};
    meta.step = tr->step; meta.tokens_seen = tr->tokens_seen; meta.samples_seen = tr->samples_seen;
    meta.seed = tr->cfg.train.seed; meta.adam_t = tr->step;
    meta.manifest = ctx->manifest_text; meta.config_json = ctx->config_json;
    meta.git_commit = ctx->facts.git_commit;
    char path[1500];
    checkpoint_path(path, sizeof path, ctx->ckpt_dir, tr->step);
    checkpoint_write(path, ctx->full, &meta);
    checkpoint_prune(ctx->ckpt_dir, tr->cfg.run.keep_last);
    if (g_db) { rundb_event(g_db, g_run_id, tr->step, "checkpoint", path); rundb_flush(g_db); }
}

// Rank 0 decides the run (new or resumed) and tells everyone: uid and resume path.
static void broadcast_text(Comm *c, char *buf, size_t n) {
    if (c->world > 1) comm_broadcast_ex(c, GROUP_WORLD, buf, n, DTYPE_U8, 0, PHASE_OTHER, -1);
}

static void log_comm_rows(Trainer *tr, int step) {
    int it = 0; CommStatRow r;
    while (comm_stats_next(tr->comm, &it, &r)) {
        rundb_log_comm(g_db, g_run_id, step, comm_kind_name(r.kind), comm_phase_name(r.phase),
                       comm_group_name(r.group), r.layer,
                       (int64_t)r.s.calls, (int64_t)r.s.elements, (int64_t)r.s.bytes, r.s.seconds);
    }
}

int run_training(const RunOptions *opt, Comm *comm) {
    const Config *cfg = &opt->cfg;
    int root = comm->rank == 0;
    RunCtx ctx = { .opt = opt };
    ctx.config_json = config_to_json(cfg);
    ctx.manifest_text = read_text_file(opt->config_path);
    const char *experiment = opt->manifest ? opt->manifest->name : "adhoc";
    const char *variant = cfg->variant[0] ? cfg->variant : "default";

    // ---- decide the run: new, or resume the latest of (experiment, variant) ----------
    char resume_path[1500] = "";
    int64_t resume_step = 0;
    if (root) {
        config_print_table(cfg, stdout);
        runinfo_host_facts(&ctx.facts);
        if (opt->use_db) {
            g_db = rundb_open(cfg->run.db);
            rundb_mark_stale(g_db);
        }
        if (opt->resume) {
            RunRow row;
            if (!g_db || !rundb_latest_run(g_db, experiment, variant, &row))
                die_input("RESUME: no earlier run of %s/%s in %s to resume", experiment, variant, cfg->run.db);
            if (!strcmp(row.status, "completed") && row.last_step >= cfg->train.steps)
                die_input("RESUME: run %s of %s/%s already completed its %d steps (raise train.steps to continue it)",
                          row.uid, experiment, variant, row.last_step);
            xsnprintf(ctx.uid, sizeof ctx.uid, "%s", row.uid);
            xsnprintf(ctx.ckpt_dir, sizeof ctx.ckpt_dir, "%s/%s", cfg->run.checkpoint_dir, ctx.uid);
            if (!checkpoint_latest_good(ctx.ckpt_dir, resume_path, sizeof resume_path, &resume_step, NULL, NULL))
                die_input("RESUME: run %s has no checkpoint that verifies in %s (set run.checkpoint_every to save them)",
                          ctx.uid, ctx.ckpt_dir);
            g_run_id = row.id;
        } else {
            char stamp[32]; time_t now = time(NULL); struct tm tmv; gmtime_r(&now, &tmv);
            strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
            xsnprintf(ctx.uid, sizeof ctx.uid, "%s.%s.%s.%d", experiment, variant, stamp, (int)getpid());
            xsnprintf(ctx.ckpt_dir, sizeof ctx.ckpt_dir, "%s/%s", cfg->run.checkpoint_dir, ctx.uid);
        }
    }
    broadcast_text(comm, ctx.uid, sizeof ctx.uid);
    broadcast_text(comm, ctx.ckpt_dir, sizeof ctx.ckpt_dir);
    broadcast_text(comm, resume_path, sizeof resume_path);

    Trainer tr;
    trainer_init(&tr, cfg, comm);
    if (root) {
        ctx.full = xcalloc(1, sizeof(ModelState));
        model_state_init(ctx.full, &cfg->model, STATE_ALL);
    }
    if (cfg->run.dump_steps[0]) { tr.before_update = dump_hook; tr.hook_ctx = &ctx; }
    if (cfg->run.dump_activations && comm->world > 1)
        die_input("run.dump_activations needs a single process (activations are sharded in a parallel run); step dumps without activations work at any layout");

    // ---- resume: every rank reads the unsharded checkpoint and keeps its blocks -------
    if (resume_path[0]) {
        ModelState full; model_state_init(&full, &cfg->model, STATE_PARAMS | STATE_OPTIM);
        CheckpointMeta meta;
        checkpoint_read(resume_path, &full, &meta);
        check_same_model(resume_path, cfg, meta.config_json);
        zero1_optim_begin(&tr.model, 0);
        state_scatter(&tr.model, &full, STATE_PARAMS | STATE_OPTIM);
        zero1_optim_end(&tr.model);
        tr.step = (int)meta.step; tr.tokens_seen = meta.tokens_seen; tr.samples_seen = meta.samples_seen;
        if (root) {
            printf("resumed %s from %s (step %lld)\n", ctx.uid, resume_path, (long long)meta.step);
            if (g_db) {
                rundb_resume_run(g_db, g_run_id, (int)meta.step);
                if (meta.config_json && strcmp(meta.config_json, ctx.config_json))
                    rundb_event(g_db, g_run_id, (int)meta.step, "config_change", ctx.config_json);
            }
        }
        checkpoint_meta_free(&meta);
        model_state_free(&full);
    }

    // ---- the run row -----------------------------------------------------------------
    if (root && g_db && !resume_path[0]) {
        RunInfo ri = ctx.facts;
        xsnprintf(ri.uid, sizeof ri.uid, "%s", ctx.uid);
        xsnprintf(ri.experiment, sizeof ri.experiment, "%s", experiment);
        xsnprintf(ri.variant, sizeof ri.variant, "%s", variant);
        xsnprintf(ri.manifest_path, sizeof ri.manifest_path, "%s", opt->config_path);
        if (opt->manifest) {
            xsnprintf(ri.manifest_version, sizeof ri.manifest_version, "%s", opt->manifest->version);
            xsnprintf(ri.manifest_sha256, sizeof ri.manifest_sha256, "%s", opt->manifest->sha256);
        }
        ri.config_json = ctx.config_json;
        ri.tp = comm->tp; ri.pp = comm->pp; ri.dp = comm->dp; ri.world_size = comm->world;
        ri.params = model_param_count(&cfg->model);
        ri.flops_per_token = tr.flops_per_token;
        ri.peak_gflops = tr.peak_gflops;
        g_run_id = rundb_begin_run(g_db, &ri);
    }
    if (root) {
        set_die_hook(on_die);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        printf("run %s | parameters %.3fM | train FLOPs/token %.4g | sgemm peak %.1f GFLOP/s x %d ranks | data %s (vocab %d)\n",
               ctx.uid, model_param_count(&cfg->model) / 1e6, tr.flops_per_token, tr.peak_gflops, comm->world,
               tr.data.dir, tr.data.vocab_size);
        fflush(stdout);
    }

    // ---- the step loop ---------------------------------------------------------------
    const TrainConfig *tc = &cfg->train;
    const RunConfig *rc = &cfg->run;
    int exit_code = 0;
    while (tr.step < tc->steps) {
        comm_stats_reset(comm);
        StepMetrics sm = trainer_step(&tr);
        if (!isfinite(sm.loss)) die_input("loss is %f at step %d: training diverged (lower train.lr?)", sm.loss, sm.step);
        if (root && g_db) { rundb_log_step(g_db, g_run_id, &sm); log_comm_rows(&tr, sm.step); }
        if (root && (sm.step % tc->log_every == 0 || sm.step == 1 || sm.step == tc->steps))
            printf("step %5d/%d | loss %.4f | lr %.3e | norm %7.3f | %8.1f ms | %9.0f tok/s | MFU %5.1f%%\n",
                   sm.step, tc->steps, sm.loss, sm.lr, sm.grad_norm, sm.seconds * 1e3, sm.tokens_per_s, 100 * sm.mfu);
        if ((tc->val_every > 0 && sm.step % tc->val_every == 0) || sm.step == tc->steps) {
            double vl = trainer_validate(&tr);
            if (root && isfinite(vl)) {
                printf("val   %5d | loss %.4f\n", sm.step, vl);
                if (g_db) rundb_log_val(g_db, g_run_id, sm.step, sm.tokens_seen, vl);
            }
        }
        if ((rc->checkpoint_every > 0 && sm.step % rc->checkpoint_every == 0) || sm.step == tc->steps)
            save_checkpoint(&ctx, &tr);
        if (root && g_db && sm.step % rc->flush_every == 0) rundb_flush(g_db);
        if (root) fflush(stdout);
        // A signal stops the run between steps on every rank (rank 0 decides).
        int stop = g_stop_signal;
        if (comm->world > 1) comm_broadcast_ex(comm, GROUP_WORLD, &stop, 1, DTYPE_I32, 0, PHASE_OTHER, -1);
        if (stop) {
            if (root) {
                fprintf(stderr, "interrupted by signal %d after step %d\n", stop, sm.step);
                if (g_db) rundb_end_run(g_db, g_run_id, "interrupted", "signal");
            }
            exit_code = 128 + stop;
            break;
        }
    }

    // ---- memory and the end of the run -----------------------------------------------
    double mem[5] = { (double)tr.model.bytes_params, (double)tr.model.bytes_grads, (double)tr.model.bytes_optim,
                      (double)tr.model.bytes_acts, 0 };
    struct rusage ru; getrusage(RUSAGE_SELF, &ru); mem[4] = (double)ru.ru_maxrss * 1024.0;
    comm_all_reduce_max_f64(comm, GROUP_WORLD, mem, 5, PHASE_OTHER, -1);   // the largest rank
    if (root && g_db) {
        const char *cat[5] = {"parameters", "gradients", "optimizer", "activations", "peak_rss"};
        for (int i = 0; i < 5; i++) rundb_set_memory(g_db, g_run_id, cat[i], (int64_t)mem[i]);
        if (!exit_code) rundb_end_run(g_db, g_run_id, "completed", NULL);
        rundb_close(g_db);
        g_db = NULL;
    }
    set_die_hook(NULL);
    if (ctx.full) { model_state_free(ctx.full); free(ctx.full); }
    trainer_free(&tr);
    free(ctx.config_json); free(ctx.manifest_text);
    return exit_code;
}
