// run.c — the run loop (see run.h).
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "plan.h"
#include "run.h"
#include "state_io.h"
#include "stop.h"
#include "watchdog.h"
#include "trainer.h"
#include "../config/config_diff.h"
#include "memory_fit.h"
#include "../core/check.h"
#include "../core/fs.h"
#include "../core/outdir.h"
#include "../core/shellword.h"
#include "../core/timer.h"
#include "../store/checkpoint.h"
#include "../store/compare.h"
#include "../store/db.h"
#include "../store/dump.h"
#include "../store/host.h"

// ---- fault injection (tests; run.h) ------------------------------------------------------
typedef struct { int kill_after_ckpt, fail_rank, fail_step, sig_rank, sig_step, sig; char sig_target[8]; } Faults;

// A signal by its name in stop.h's table ("TERM"), or 0.
static int signal_named(const char *name) {
    int n;
    const StopSignal *t = stop_signal_table(&n);
    for (int i = 0; i < n; i++) if (t[i].sig && !strcmp(t[i].name, name)) return t[i].sig;
    return 0;
}

static Faults parse_faults(void) {
    Faults f = { .kill_after_ckpt = -1, .fail_rank = -1, .sig_rank = -1 };
    const char *env = getenv("BOOST_FAULT");
    if (!env || !*env) return f;
    char buf[512];
    xsnprintf(buf, sizeof buf, "%s", env);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char sig[8] = "", target[8] = "self";
        int a, b, k = 0, k2 = 0;
        if (sscanf(tok, "kill_after_checkpoint=%d%n", &a, &k) == 1 && !tok[k]) f.kill_after_ckpt = a;
        else if (sscanf(tok, "fail=%d@%d%n", &a, &b, &k) == 2 && !tok[k]) { f.fail_rank = a; f.fail_step = b; }
        else if (sscanf(tok, "signal=%d@%d:%7[A-Z0-9]%n", &a, &b, sig, &k) == 3 &&
                 (!tok[k] || (sscanf(tok + k, ":%7[a-z]%n", target, &k2) == 1 && !tok[k + k2])) &&
                 signal_named(sig) > 0 &&
                 (!strcmp(target, "self") || !strcmp(target, "group") || !strcmp(target, "parent"))) {
            f.sig_rank = a; f.sig_step = b;
            f.sig = signal_named(sig);
            xsnprintf(f.sig_target, sizeof f.sig_target, "%s", target);
        } else {
            die_input("BOOST_FAULT: unknown fault '%s' (expected kill_after_checkpoint=N, fail=RANK@STEP or "
                      "signal=RANK@STEP:NAME[:self|group|parent] with a signal of build/train --signals, comma-separated)", tok);
        }
    }
    return f;
}

// A checkpoint holds what a healthy run wrote: every weight and moment finite (a run
// that diverged is never saved). A non-finite one is named here, with its tensor, not
// reported later as "training diverged; lower train.lr?".
static void check_finite_state(const char *path, const ModelState *s) {
    const float *fam[3] = { s->params, s->m, s->v };
    const char *fam_name[3] = { "weights", "AdamW m", "AdamW v" };
    for (int f = 0; f < 3; f++) {
        if (!fam[f]) continue;
        for (int i = 0; i < s->table.n_specs; i++) {
            const ParamSpec *sp = &s->table.specs[i];
            for (size_t k = 0; k < sp->numel; k++) {
                float x = fam[f][sp->offset + k];
                if (!isfinite(x) || (f == 2 && x < 0))
                    die_input_hint("resume from an earlier checkpoint of the run (move this one away), or start a new run",
                                   "RESUME: %s holds %s %g in %s (element %zu of %s); a checkpoint written by a healthy run "
                                   "holds none (the file was edited or resealed, or written by a broken build)",
                                   path, f == 2 && isfinite(x) ? "a negative value" : "a non-finite value", (double)x,
                                   fam_name[f], k, sp->name);
            }
        }
    }
}

// ---- the run context -------------------------------------------------------------------
// Everything one run holds, from run_setup through run_steps to run_teardown. No state of a
// run lives at file scope: the die hook is handed this context (core/check.h set_die_hook).
typedef struct {
    const RunOptions *opt;
    const Config *cfg;
    Comm *comm;
    int root;                  // world rank 0: decides, prints and records
    const char *experiment;    // the manifest's name, or "adhoc"
    const char *variant;       // "default" for the only variant
    RunDB *db;                 // rank 0's connection (NULL: --no-db, or closed)
    int64_t run_id;            // the run row once registered (0 before; every rank learns it)
    int registered;            // folders made before this are removed on a failure (core/outdir.h)
    char uid[256];
    char ckpt_dir[1300];
    OutDir ckpt_root, run_dir; // rank 0: run.checkpoint_dir and the run's own folder (locked)
    OutDir dump_out;           // rank 0: where step dumps go (run.dump_dir or <run folder>/dumps)
    char *config_json;
    char *manifest_text;
    ModelState *full;          // rank 0: the unsharded state (checkpoints, dumps)
    HostFacts host;            // rank 0: host, libraries, git commit (collected once)
    Faults faults;
    int64_t launch_id;         // the launch of the run (a resumed run keeps its own)
    // the decision (rank 0, then broadcast)
    char resume_path[1500];    // "" = a new run
    int64_t resume_run;        // rank 0: the run row resumed (0 = a new run)
    int restart;               // rank 0: resumed from step 0 (it stopped before its first checkpoint) ...
    int restart_stopped_at;    // ... at this step
    char *resume_config;       // rank 0: the configuration the resumed run ran with (its checkpoint's,
                               // or its recorded one when it restarts from step 0; malloc'd)
    char *resume_changes;      // rank 0: the changes of its meaning allowed at this resume (malloc'd)
    double resumed_peak;       // rank 0: its stored peak (host peak x hosts)
    // the training
    Trainer tr;
    int trainer_up;            // tr was initialised (teardown frees it)
    double host_peak;          // GFLOP/s of one host: the launch's, the resumed run's, or the back end's
    double peak_load;          // rank 0: the 1-minute load that peak was measured at (-1 unknown)
    char peak_note[400];       // rank 0: "" when measured quietly, else why MFU may be high (rundb_peak_note)
    int hosts;
    char resume_cmd[2048];
    // the end
    int exit_code;
    char end_message[4096];    // (room for the resume command and its prefix)
    double loop_t0;
    int first_step;            // the step this process's loop began at (a resume: its checkpoint's)
    double last_loss;          // rank 0: the training loss of the run's last step: of this process's last
                               // step, or at a resume the recorded loss of the checkpoint's step (NAN: none)
} RunCtx;

// A fatal error on any rank records the run 'failed' with that rank's message (the first
// failure wins: rundb_end_run keeps an earlier 'failed').
// Before the run is registered nothing is recorded; the folders made for it (still empty)
// are removed again: a refusal leaves nothing behind.
static void on_die(void *vctx, const char *message, int code) {
    (void)code;
    RunCtx *ctx = vctx;
    if (ctx->root && ctx->db && ctx->run_id) {
        stop_clear_run();
        char msg[2600];
        snprintf(msg, sizeof msg, ctx->comm->world > 1 ? "rank 0: %s" : "%s", message);
        rundb_set_patience(ctx->db, 2000, 30);   // a dying process does not wait 10 minutes for a lock
        rundb_end_run(ctx->db, ctx->run_id, "failed", msg);
        rundb_close(ctx->db);
        ctx->db = NULL;
    } else {
        stop_record_failure(message);
    }
    if (!ctx->registered) outdir_undo_created();
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
    trainer_gather_state(tr, ctx->full, STATE_PARAMS | STATE_GRADS);
    if (c->rank != 0) return;
    char name[64], path[1600];
    xsnprintf(name, sizeof name, "step_%d.h5", step);
    xsnprintf(path, sizeof path, "%s/%s", ctx->dump_out.path, name);
    if (c->world == 1) {   // the batch is this process's own; activations only here
        dump_write_in(&ctx->dump_out, name, ctx->uid, ctx->full, cfg->run.dump_activations ? &tr->model : NULL, step, ctx->config_json,
                      tr->inputs, tr->targets, K * B, T, loss);
        if (ctx->db) rundb_event(ctx->db, ctx->run_id, step, "dump", path);
        return;
    }
    size_t n = (size_t)K * B * T;
    int32_t *in = xmalloc(n * sizeof(int32_t)), *tg = xmalloc(n * sizeof(int32_t));
    uint64_t first = tr->samples_seen - (uint64_t)K * B;     // the step's first sample
    for (int k = 0; k < K; k++)
        loader_train_batch(&tr->loader, first + (uint64_t)k * B, B, in + (size_t)k * B * T, tg + (size_t)k * B * T);
    dump_write_in(&ctx->dump_out, name, ctx->uid, ctx->full, NULL, step, ctx->config_json, in, tg, K * B, T, loss);
    if (ctx->db) rundb_event(ctx->db, ctx->run_id, step, "dump", path);
    free(in); free(tg);
}

// A step's database rows are written BEFORE its checkpoint becomes final: a process
// killed right after the rename never leaves a checkpoint whose metrics are missing
// (the resume deletes and redoes rows after the checkpoint's step, never before it).
static void save_checkpoint(RunCtx *ctx, Trainer *tr) {
    Comm *c = tr->comm;
    trainer_gather_state(tr, ctx->full, STATE_PARAMS | STATE_OPTIM);
    if (c->rank != 0) return;
    if (ctx->db && rundb_flush_wait(ctx->db, 60) != 0) {
        // A checkpoint is final only after its rows: one without them would resume into a
        // run with missing rows (the resume then starts from the last complete one).
        fprintf(stderr, "warning: the rows of steps up to %d are not in the run database %s; the checkpoint of step %d is "
                "not written (a resume starts from the last checkpoint whose rows are all recorded)\n",
                tr->step, rundb_path(ctx->db), tr->step);
        return;
    }
    CheckpointMeta meta = {0};
    meta.step = tr->step; meta.tokens_seen = tr->tokens_seen; meta.samples_seen = tr->samples_seen;
    meta.seed = tr->cfg.train.seed; meta.adam_t = tr->step;
    meta.manifest = ctx->manifest_text; meta.config_json = ctx->config_json;
    meta.git_commit = ctx->host.git_commit;
    // what the file is, so it can be used alone (build/sample): run, variant, tokenizer
    char tok[PATH_MAX] = "";
    if (tr->data.tokenizer_path[0] && !realpath(tr->data.tokenizer_path, tok)) xsnprintf(tok, sizeof tok, "%s", tr->data.tokenizer_path);
    meta.run_uid = ctx->uid; meta.variant = tr->cfg.variant[0] ? tr->cfg.variant : "default"; meta.tokenizer_path = tok;
    char path[1500];
    checkpoint_path(path, sizeof path, ctx->ckpt_dir, tr->step);
    checkpoint_write_in(&ctx->run_dir, ctx->full, &meta);
    if (ctx->faults.kill_after_ckpt == tr->step) {
        fprintf(stderr, "BOOST_FAULT: killing this process (SIGKILL) right after the checkpoint of step %d\n", tr->step);
        fflush(stderr);
        kill(getpid(), SIGKILL);
    }
    checkpoint_prune_in(&ctx->run_dir, tr->cfg.run.keep_last);
    if (ctx->db) { rundb_event(ctx->db, ctx->run_id, tr->step, "checkpoint", path); rundb_flush(ctx->db); }
}

// Rank 0 decides the run (new or resumed) and tells everyone.
static void broadcast_bytes(Comm *c, void *buf, size_t n) {
    if (c->world > 1) comm_host_broadcast(c, GROUP_WORLD, buf, n, DTYPE_U8, 0, PHASE_OTHER, -1);
}

static void log_comm_rows(RunCtx *ctx, int step) {
    int it = 0; CommStatRow r;
    while (comm_stats_next(ctx->comm, &it, &r)) {
        rundb_log_comm(ctx->db, ctx->run_id, step, comm_kind_name(r.kind), comm_phase_name(r.phase),
                       comm_group_name(r.group), r.layer, (int64_t)r.s.calls, (int64_t)r.s.elements, (int64_t)r.s.bytes,
                       r.s.seconds, r.s.waited_calls == r.s.calls ? r.s.wait_seconds : NAN);
    }
}

// The GEMM peak of one host that MFU is measured against: the launch's (exp decided it), a
// resumed run's own, or, for a run made by hand, the one decision of store/db.h
// (rundb_decide_peak: the host's stored sgemm peak, raised by this run's measurement when that
// is higher by more than the margin) fed with the back end's own measurement (backend.h
// peak_gflops: the cpu's sgemm with all cores; a back end without one: the host's sgemm), made
// by rank 0 while the other ranks wait without spinning (a busy wait would take the cores
// being measured). A back end whose peak is its device's (peak_per_host 0) counts once per
// rank of the host: the launch's peak is the host's sgemm, and a device's own (a GPU's)
// replaces it. Rank 0 keeps the load the peak was measured at and its note (rundb_peak_note).
static double host_peak_gflops(RunCtx *ctx, Backend *bk, double resumed_peak) {
    const RunOptions *opt = ctx->opt;
    Comm *comm = ctx->comm;
    int device_peak = bk->peak_gflops && !bk->peak_per_host;
    ctx->peak_load = -1;
    ctx->peak_note[0] = 0;
    if (opt->peak_gflops > 0 && !device_peak) {
        LaunchRow lr;
        if (ctx->root && ctx->db && opt->launch_id > 0 && rundb_launch(ctx->db, opt->launch_id, &lr)) {
            ctx->peak_load = isnan(lr.peak_load) ? -1 : lr.peak_load;
            xsnprintf(ctx->peak_note, sizeof ctx->peak_note, "%s", lr.peak_note);
            rundb_launch_row_free(&lr);
        }
        return opt->peak_gflops;
    }
    double peak = resumed_peak;   // rank 0: a resumed run keeps the peak it started with
    if (comm->rank == 0 && !(peak > 0)) {
        int threads = opt->cfg.train.threads;
        trainer_set_threads(0);
        double load = host_load_average();
        peak = bk->peak_gflops ? bk->peak_gflops(bk) : cpu_sgemm_peak_gflops();
        trainer_set_threads(threads);
        if (device_peak) peak *= opt->ranks_per_host > 0 ? opt->ranks_per_host : 1;
        else if (ctx->db) {
            PeakDecision d;
            rundb_decide_peak(ctx->db, &ctx->host, peak, load, 0, &d);
            fputs(d.message, stdout);
            peak = d.gflops;
            ctx->peak_load = d.load_avg;
            xsnprintf(ctx->peak_note, sizeof ctx->peak_note, "%s", d.note);
        } else {
            ctx->peak_load = load;
            rundb_peak_note(peak, load, (int)sysconf(_SC_NPROCESSORS_ONLN), ctx->peak_note, sizeof ctx->peak_note);
        }
    }
    if (comm->world == 1) return peak;
    MPI_Request rq;
    CHECK_MPI(MPI_Ibcast(&peak, 1, MPI_DOUBLE, 0, comm->mpi[GROUP_WORLD], &rq));
    for (int done = 0; !done; ) {
        CHECK_MPI(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
        if (!done) { struct timespec ts = { 0, 2000000 }; nanosleep(&ts, NULL); }
    }
    return peak;
}

// The exact command that resumes this run: through the launch when it has one.
static void resume_command(char *buf, size_t n, const RunOptions *opt, int64_t launch_id, const char *experiment,
                           const char *variant, const char *uid, int world) {
    buf[0] = 0;
    char expected[600];
    snprintf(expected, sizeof expected, "experiments/%s.yaml", experiment);
    if (launch_id > 0) {
        // The launch keeps its overrides, except the one that says where it is recorded.
        const char *db_set = NULL;
        for (int i = 0; i < opt->n_overrides; i++) if (!strncmp(opt->overrides[i], "run.db=", 7)) db_set = opt->overrides[i];
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)launch_id);
        if (!strcmp(opt->config_path, expected)) {
            char e[1200];
            snprintf(e, sizeof e, "EXP=%s", experiment);
            shell_append_word(buf, n, "make"); shell_append_word(buf, n, "exp"); shell_append_word(buf, n, e);
            shell_append_word(buf, n, "RESUME=1"); snprintf(e, sizeof e, "LAUNCH=%s", id); shell_append_word(buf, n, e);
            if (db_set) { snprintf(e, sizeof e, "SET=%s", db_set); shell_append_word(buf, n, e); }
        } else {
            shell_append_word(buf, n, "build/exp"); shell_append_word(buf, n, opt->config_path);
            shell_append_word(buf, n, "--resume"); shell_append_word(buf, n, "--launch"); shell_append_word(buf, n, id);
            if (db_set) { shell_append_word(buf, n, "--set"); shell_append_word(buf, n, db_set); }
        }
        return;
    }
    if (world > 1) {
        char np[16];
        snprintf(np, sizeof np, "%d", world);
        shell_append_word(buf, n, "mpirun"); shell_append_word(buf, n, "-np"); shell_append_word(buf, n, np);
    }
    char r[300];
    snprintf(r, sizeof r, "--resume=%s", uid);
    shell_append_word(buf, n, opt->train_command ? opt->train_command : "build/train");
    shell_append_word(buf, n, opt->config_path);
    shell_append_word(buf, n, "--variant"); shell_append_word(buf, n, variant);
    shell_append_word(buf, n, r);
    for (int i = 0; i < opt->n_overrides; i++) { shell_append_word(buf, n, "--set"); shell_append_word(buf, n, opt->overrides[i]); }
}

static void format_duration(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 1e7) { snprintf(buf, n, "-"); return; }
    long t = lround(s);
    if (t < 60) snprintf(buf, n, "%lds", t);
    else if (t < 3600) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

// ---- setup: decide the run (new, or resume one), start the trainer, register the run ----
// Rank 0 decides a new run or the run to resume, makes and locks its folder (plan_run: the one
// place of that decision); the other ranks learn the decision. Returns 1 to train, 0 when
// there is nothing to do (a resume of a completed run).
static int run_decide(RunCtx *ctx) {
    const RunOptions *opt = ctx->opt;
    const Config *cfg = ctx->cfg;
    Comm *comm = ctx->comm;
    int noop = 0;
    if (ctx->root) {
        if (opt->print_config) config_print_table(cfg, stdout);
        host_facts(&ctx->host);
        if (opt->use_db) {
            ctx->db = rundb_open(cfg->run.db);
            rundb_mark_stale(ctx->db);
        }
        RunRequest rq = {
            .cfg = cfg, .experiment = ctx->experiment, .variant = ctx->variant,
            .manifest_sha256 = opt->manifest ? opt->manifest->sha256 : NULL,
            .resume = opt->resume, .resume_uid = opt->resume_uid, .launch_id = opt->launch_id,
        };
        RunPlan plan;
        if (plan_run(ctx->db, &rq, &plan)) die_input_hint(plan.refusal.hint[0] ? plan.refusal.hint : NULL, "%s", plan.refusal.message);
        if (plan.warning[0]) fprintf(stderr, "%s\n", plan.warning);
        noop = plan.noop;
        if (noop)   // (its row is left as it is: status, steps, loss)
            printf("run %s (%s/%s, run_id %lld) already completed its %d steps: nothing to do%s "
                   "(to continue it: raise train.steps and --allow-change train.steps, which stretches its schedule)\n",
                   plan.row.uid, ctx->experiment, ctx->variant, (long long)plan.row.id, plan.row.last_step,
                   cfg->train.steps < plan.row.last_step ? "; a completed run is never trained back to fewer steps (train.steps is "
                   "below them)" : "");
        xsnprintf(ctx->uid, sizeof ctx->uid, "%s", plan.uid);
        xsnprintf(ctx->ckpt_dir, sizeof ctx->ckpt_dir, "%s", plan.ckpt_dir);
        xsnprintf(ctx->resume_path, sizeof ctx->resume_path, "%s", plan.resume_path);
        ctx->ckpt_root = plan.ckpt_root; ctx->run_dir = plan.run_dir; ctx->dump_out = plan.dump_out;   // (the context closes them)
        ctx->resume_run = plan.resume_run;
        if (plan.resume_run) ctx->launch_id = plan.launch_id;
        ctx->resumed_peak = plan.resumed_peak;
        ctx->restart = plan.restart;
        ctx->restart_stopped_at = plan.restart_stopped_at;
        ctx->resume_config = plan.resume_config;   // (the context frees it)
        plan.resume_config = NULL;
        plan_run_free(&plan);
        if (ctx->resume_run) {
            // What the run resumes with against what it ran with: every change printed; the
            // model, and the run's meaning unless allowed, refused (config/config_diff.h).
            char run_name[300];
            snprintf(run_name, sizeof run_name, "run %s", ctx->uid);
            ResumeSource src = ctx->restart ? (ResumeSource){ run_name, "was started with", "its recorded configuration" }
                                            : (ResumeSource){ ctx->resume_path, "was written by", "the checkpoint" };
            ctx->resume_changes = config_resume_changes(ctx->resume_config, cfg, opt->allow_change, opt->n_allow_change, &src, stdout);
        }
    }
    broadcast_bytes(comm, &noop, sizeof noop);
    if (noop) return 0;
    broadcast_bytes(comm, ctx->uid, sizeof ctx->uid);
    broadcast_bytes(comm, ctx->ckpt_dir, sizeof ctx->ckpt_dir);
    broadcast_bytes(comm, ctx->resume_path, sizeof ctx->resume_path);
    return 1;
}

// A resume with another configuration: the one in effect from `step` (a config_change
// event, what the run_config view reads) and the changes of the run's meaning that were
// allowed, with the flag that allowed them (a warning event).
static void record_config_change(RunCtx *ctx, int step) {
    if (ctx->resume_config && strcmp(ctx->resume_config, ctx->config_json))
        rundb_event(ctx->db, ctx->run_id, step, "config_change", ctx->config_json);
    if (ctx->resume_changes) {
        char *d = xmalloc(strlen(ctx->resume_changes) + 128);
        sprintf(d, "resumed with changes of the run's meaning, allowed by --allow-change: %s", ctx->resume_changes);
        rundb_event(ctx->db, ctx->run_id, step, "warning", d);
        free(d);
    }
}

// Every rank: the trainer on this run's grid and back end, the peak, the resumed state.
static void run_start_trainer(RunCtx *ctx) {
    const RunOptions *opt = ctx->opt;
    const Config *cfg = ctx->cfg;
    Comm *comm = ctx->comm;
    Trainer *tr = &ctx->tr;
    int ranks_per_host = opt->ranks_per_host > 0 ? opt->ranks_per_host : 1;
    ctx->hosts = comm->world / ranks_per_host > 0 ? comm->world / ranks_per_host : 1;
    trainer_refuse_unless_fits(cfg, comm->rank, comm_ranks_on_node(comm), NULL, NULL);   // this rank's part (memory_fit.h)
    trainer_init(tr, cfg, comm);
    ctx->trainer_up = 1;
    ctx->host_peak = host_peak_gflops(ctx, tr->bk, ctx->resumed_peak / ctx->hosts);
    tr->peak_gflops = ctx->host_peak / ranks_per_host;     // per process: MFU = achieved / (peak x hosts)
    if (ctx->root) {
        ctx->full = xcalloc(1, sizeof(ModelState));
        model_state_init(ctx->full, &cfg->model, STATE_ALL);
    }
    if (cfg->run.dump_steps[0]) { tr->before_update = dump_hook; tr->hook_ctx = ctx; }
    if (cfg->run.dump_activations && comm->world > 1)
        die_input("run.dump_activations needs a single process (activations are sharded in a parallel run); step dumps without activations work at any layout");

    // ---- resume: every rank reads the unsharded checkpoint and keeps its blocks -------
    if (ctx->resume_path[0]) {
        ModelState full; model_state_init(&full, &cfg->model, STATE_PARAMS | STATE_OPTIM);
        CheckpointMeta meta;
        checkpoint_read(ctx->resume_path, &full, &meta);   // (its configuration was compared in run_decide)
        check_finite_state(ctx->resume_path, &full);
        trainer_scatter_state(tr, &full);
        tr->step = (int)meta.step; tr->tokens_seen = meta.tokens_seen; tr->samples_seen = meta.samples_seen;
        if (ctx->root) {
            printf("resumed %s from %s (step %lld)\n", ctx->uid, ctx->resume_path, (long long)meta.step);
            if (ctx->db) {
                rundb_resume_run(ctx->db, ctx->resume_run, (int)meta.step, opt->overrides, opt->n_overrides);
                ctx->run_id = ctx->resume_run;
                record_config_change(ctx, (int)meta.step);
                // the run's last step so far is the checkpoint's: its loss decides the run's end
                // when no step is left to train (train.steps at the checkpoint's step)
                ctx->last_loss = rundb_step_loss(ctx->db, ctx->run_id, (int)meta.step);
            }
        }
        checkpoint_meta_free(&meta);
        model_state_free(&full);
    } else if (ctx->restart) {   // rank 0: the same run from step 0 (run_decide)
        printf("resumed %s from step 0: it stopped at step %d before its first checkpoint (run.checkpoint_every %d), "
               "so it trains again from the start as the same run (run_id %lld); its recorded steps are replaced\n",
               ctx->uid, ctx->restart_stopped_at, cfg->run.checkpoint_every, (long long)ctx->resume_run);
        rundb_resume_run(ctx->db, ctx->resume_run, 0, opt->overrides, opt->n_overrides);
        ctx->run_id = ctx->resume_run;
        record_config_change(ctx, 0);
    }
}

// Rank 0 registers a new run; every rank learns the run id (a failure or a signal on any rank
// records itself), starts its liveness watch, and rank 0 prints the run's header.
static void run_register(RunCtx *ctx) {
    const RunOptions *opt = ctx->opt;
    const Config *cfg = ctx->cfg;
    Comm *comm = ctx->comm;
    Trainer *tr = &ctx->tr;
    if (ctx->root && ctx->db && !ctx->resume_run) {
        RunInfo ri;
        memset(&ri, 0, sizeof ri);
        runinfo_set_host(&ri, &ctx->host);
        if (tr->bk->gemm_library) runinfo_add_library(&ri, "gemm", tr->bk->gemm_library(tr->bk));
        xsnprintf(ri.uid, sizeof ri.uid, "%s", ctx->uid);
        xsnprintf(ri.experiment, sizeof ri.experiment, "%s", ctx->experiment);
        xsnprintf(ri.variant, sizeof ri.variant, "%s", ctx->variant);
        xsnprintf(ri.manifest_path, sizeof ri.manifest_path, "%s", opt->config_path);
        if (opt->manifest) {
            xsnprintf(ri.experiment_version, sizeof ri.experiment_version, "%s", opt->manifest->version);
            xsnprintf(ri.manifest_sha256, sizeof ri.manifest_sha256, "%s", opt->manifest->sha256);
            ri.manifest_format = opt->manifest->manifest_version;
        }
        ri.config_json = ctx->config_json;
        ri.overrides = opt->overrides; ri.n_overrides = opt->n_overrides;
        ri.launch_id = opt->launch_id; ri.repeat_index = opt->repeat_index;
        ri.tp = comm->tp; ri.pp = comm->pp; ri.dp = comm->dp; ri.world_size = comm->world;
        ri.params = model_param_count(&cfg->model);
        ri.flops_per_token = tr->flops_per_token;
        ri.peak_gflops = ctx->host_peak * ctx->hosts;
        ctx->run_id = rundb_begin_run(ctx->db, &ri);
        rundb_set_run_peak(ctx->db, ctx->run_id, ctx->peak_load, ctx->peak_note);
    }
    int64_t run_id = ctx->run_id;
    broadcast_bytes(comm, &run_id, sizeof run_id);
    if (!ctx->root) ctx->run_id = run_id;
    ctx->registered = 1;
    outdir_keep_created();   // the run's folders are the run's now
    broadcast_bytes(comm, &ctx->launch_id, sizeof ctx->launch_id);
    resume_command(ctx->resume_cmd, sizeof ctx->resume_cmd, opt, ctx->launch_id, ctx->experiment, ctx->variant, ctx->uid, comm->world);
    stop_set_run(opt->use_db && run_id ? cfg->run.db : "", run_id, comm->rank, comm->world, ctx->resume_cmd);
    if (comm->world > 1) {   // every rank's liveness (watchdog.h)
        unsigned long long session = ctx->root ? ((unsigned long long)getpid() << 32) ^ (unsigned long long)time(NULL) : 0;
        broadcast_bytes(comm, &session, sizeof session);
        watchdog_start(ctx->ckpt_dir, comm->rank, comm->world, session, stop_record_failure_as);
    }
    if (ctx->root) {
        char in_launch[64] = "";
        if (ctx->launch_id) snprintf(in_launch, sizeof in_launch, ", launch %lld", (long long)ctx->launch_id);
        printf("run %s (run_id %lld%s) | parameters %.3fM | train FLOPs/token %.4g | %s peak %.1f GFLOP/s x %d host%s%s | data %s (vocab %d)\n",
               ctx->uid, (long long)run_id, in_launch, model_param_count(&cfg->model) / 1e6,
               tr->flops_per_token, tr->bk->peak_label ? tr->bk->peak_label : "sgemm", ctx->host_peak, ctx->hosts,
               ctx->hosts == 1 ? "" : "s", opt->peak_gflops > 0 && !(tr->bk->peak_gflops && !tr->bk->peak_per_host) ? " (the launch's)" : "",
               tr->data.dir, tr->data.vocab_size);
        if (ctx->peak_note[0] && !ctx->resume_run) printf("note: %s\n", ctx->peak_note);
        if (opt->n_overrides) {
            char line[4096] = "";
            for (int i = 0; i < opt->n_overrides; i++) shell_append_word(line, sizeof line, opt->overrides[i]);
            printf("overrides%s: %s\n", ctx->resume_run ? " (stored with the run, then new ones)" : "", line);
        }
        fflush(stdout);
    }
}

// Stop codes exchanged at the end of every step (the largest wins on every rank).
#define STOP_DIVERGED 1000   // above any signal number

// This rank's verdict after a step: a signal, an injected fault, (rank 0) divergence.
static int step_verdict(RunCtx *ctx, const StepMetrics *sm, double *first_loss) {
    int code = 0;
    if (ctx->root) {
        if (isnan(*first_loss)) *first_loss = sm->loss;
        if (!isfinite(sm->loss) || sm->loss > DIVERGE_FACTOR * *first_loss) code = STOP_DIVERGED;
    }
    const Faults *f = &ctx->faults;
    if (f->fail_rank == ctx->comm->rank && f->fail_step == sm->step)
        DIE("injected failure (BOOST_FAULT) after step %d", sm->step);
    if (f->sig_rank == ctx->comm->rank && f->sig_step == sm->step) {
        // self: this process; group: its process group (a terminal's Ctrl-C); parent:
        // the process that started it (mpirun, which forwards SIGTERM to every rank)
        const char *t = f->sig_target;
        kill(!strcmp(t, "group") ? 0 : !strcmp(t, "parent") ? getppid() : getpid(), f->sig);
        for (int i = 0; i < 10000 && !stop_signal_received(); i++) { struct timespec ts = { 0, 1000000 }; nanosleep(&ts, NULL); }
    }
    if (stop_signal_received() && code == 0) code = stop_signal_received();
    return code;
}

// Every rank's communication totals and verdict, in one all-reduce (sum of disjoint slots),
// after rank 0 logged its own rows (this call is not in them); rank 0 records the totals.
// Returns the largest verdict.
static int exchange_verdicts(RunCtx *ctx, int step, int code, double *per_rank) {
    Comm *comm = ctx->comm;
    int W = comm->world;
    CommStat own = comm_stats_sum(comm, COMM_ANY, COMM_ANY, COMM_ANY, COMM_ANY);
    memset(per_rank, 0, (size_t)W * 5 * sizeof(double));
    double *mine = per_rank + (size_t)comm->rank * 5;
    mine[0] = (double)own.calls; mine[1] = (double)own.elements; mine[2] = (double)own.bytes; mine[3] = own.seconds;
    mine[4] = code;
    if (W > 1) comm_host_all_reduce(comm, GROUP_WORLD, per_rank, (size_t)W * 5, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    int stop = 0;
    for (int r = 0; r < W; r++) {
        int c = (int)per_rank[r * 5 + 4];
        if (c > stop) stop = c;
        if (ctx->root && ctx->db) {
            int tpr, dpr, ppr;
            grid_coords(comm->tp, comm->dp, r, &tpr, &dpr, &ppr);
            rundb_log_comm_rank(ctx->db, ctx->run_id, step, r, tpr, ppr, dpr, (int64_t)per_rank[r * 5], (int64_t)per_rank[r * 5 + 1],
                                (int64_t)per_rank[r * 5 + 2], per_rank[r * 5 + 3]);
        }
    }
    return stop;
}

// ---- the step loop ------------------------------------------------------------------------
static void run_steps(RunCtx *ctx) {
    const TrainConfig *tc = &ctx->cfg->train;
    const RunConfig *rc = &ctx->cfg->run;
    Comm *comm = ctx->comm;
    Trainer *tr = &ctx->tr;
    int root = ctx->root;
    double first_loss = NAN;   // the run's step-1 loss (the divergence rule's reference)
    if (root && ctx->db && tr->step > 0) first_loss = rundb_step_loss(ctx->db, ctx->run_id, 1);   // resumed: NAN if absent
    double *per_rank = xcalloc((size_t)comm->world * 5, sizeof(double));   // [rank][calls, elements, bytes, seconds, stop code]
    ctx->loop_t0 = now_seconds();
    int step0 = ctx->first_step = tr->step;
    if (root && step0 >= tc->steps)
        printf("run %s: its checkpoint is at step %d, train.steps %d: no step is left to train; the run ends here, "
               "checked from its recorded steps\n", ctx->uid, step0, tc->steps);
    while (tr->step < tc->steps) {
        comm_stats_reset(comm);
        StepMetrics sm = trainer_step(tr);
        comm_measure_waits(comm);   // every rank, outside the step's timing: the collectives' wait apart
        if (root) ctx->last_loss = sm.loss;
        if (root && ctx->db) { rundb_log_step(ctx->db, ctx->run_id, &sm); log_comm_rows(ctx, sm.step); }
        // what the back end decided during the step (which attention ran for a new shape, and why)
        for (const char *note; tr->bk->take_note && (note = tr->bk->take_note(tr->bk));)
            if (root && ctx->db) rundb_event(ctx->db, ctx->run_id, sm.step, "backend", note);
        int stop = exchange_verdicts(ctx, sm.step, step_verdict(ctx, &sm, &first_loss), per_rank);

        if (root && (sm.step % tc->log_every == 0 || sm.step == 1 || sm.step == tc->steps || stop)) {
            double elapsed = now_seconds() - ctx->loop_t0;
            char el[32], eta[32];
            format_duration(el, sizeof el, elapsed);
            format_duration(eta, sizeof eta, elapsed / (sm.step - step0) * (tc->steps - sm.step));
            printf("step %5d/%d | loss %.4f | lr %.3e | norm %7.3f | %8.1f ms | %9.0f tok/s | MFU %5.1f%% | %s | ETA %s\n",
                   sm.step, tc->steps, sm.loss, sm.lr, sm.grad_norm, sm.seconds * 1e3, sm.tokens_per_s, 100 * sm.mfu, el, eta);
        }
        if (stop == STOP_DIVERGED) {
            if (isfinite(sm.loss))
                snprintf(ctx->end_message, sizeof ctx->end_message, "training diverged: loss %.4g at step %d is more than %g x the loss "
                         "of the run's first step (%.4g); lower train.lr? (nothing is saved after the divergence; earlier checkpoints in %s stay)",
                         sm.loss, sm.step, DIVERGE_FACTOR, first_loss, ctx->ckpt_dir);
            else
                snprintf(ctx->end_message, sizeof ctx->end_message, "training diverged: loss is %g at step %d; lower train.lr? "
                         "(nothing is saved after the divergence; earlier checkpoints in %s stay)", sm.loss, sm.step, ctx->ckpt_dir);
            if (root) fprintf(stderr, "error: %s\n", ctx->end_message);
            ctx->exit_code = EXIT_DIVERGED;
            break;
        }
        if ((tc->val_every > 0 && sm.step % tc->val_every == 0) || sm.step == tc->steps) {
            double vl = trainer_validate(tr);
            if (root && isfinite(vl)) {
                printf("val   %5d | loss %.4f\n", sm.step, vl);
                if (ctx->db) rundb_log_val(ctx->db, ctx->run_id, sm.step, sm.tokens_seen, vl);
            }
        }
        int saved = (rc->checkpoint_every > 0 && sm.step % rc->checkpoint_every == 0) || sm.step == tc->steps;
        if (saved) save_checkpoint(ctx, tr);
        if (root && ctx->db && sm.step % rc->flush_every == 0) rundb_flush(ctx->db);
        if (root) fflush(stdout);
        stop_check_output();   // (a closed output stops the run at the next step's verdict)
        // a scheduler's warning (stop.h): this step's checkpoint, so the resume loses nothing
        if (stop && stop < STOP_DIVERGED && stop_signal_action(stop) == STOP_SIG_CHECKPOINT && !saved) save_checkpoint(ctx, tr);
        if (stop) {   // a signal: this step (and its checkpoint, if one was due) is complete
            snprintf(ctx->end_message, sizeof ctx->end_message, "%s after step %d; resume with: %s", strsignal(stop), sm.step, ctx->resume_cmd);
            if (root) fprintf(stderr, "interrupted by %s after step %d\n", strsignal(stop), sm.step);
            ctx->exit_code = 128 + stop;
            break;
        }
    }
    free(per_rank);
}

// ---- teardown: memory, the end of the run, the summary line --------------------------------
// 'completed' is a fact, checked before it is recorded (run.h): every planned step, a plausible
// loss, and (with a database) every row written into the intact file opened. 1, or 0 and why;
// *db_problem says the results are not where the run would say they are.
static int run_end_is_fact(RunCtx *ctx, char *why, size_t n, int *db_problem) {
    const TrainConfig *tc = &ctx->cfg->train;
    int V = ctx->cfg->model.vocab_size;
    double bound = PLAUSIBLE_LOSS_FACTOR * log((double)V);
    *db_problem = 0;
    if (ctx->tr.step < tc->steps) { snprintf(why, n, "it stopped at step %d of %d", ctx->tr.step, tc->steps); return 0; }
    if (isnan(ctx->last_loss)) {
        snprintf(why, n, "no training loss is recorded for its last step (%d)", ctx->tr.step);
        return 0;
    }
    if (!(ctx->last_loss <= bound)) {
        snprintf(why, n, "the loss of its last step (%d) is %.4g, more than %g x ln(vocab %d) = %.4g, where a model that "
                 "predicts every token uniformly scores ln %d = %.4g: the model did not train (look at its initialization: "
                 "model.embed_std, and at train.lr)", ctx->tr.step, ctx->last_loss, PLAUSIBLE_LOSS_FACTOR, V, bound, V, log((double)V));
        return 0;
    }
    if (ctx->db && !rundb_run_complete(ctx->db, ctx->run_id, ctx->uid, tc->steps, why, n)) { *db_problem = 1; return 0; }
    return 1;
}

static void run_finish(RunCtx *ctx) {
    const RunOptions *opt = ctx->opt;
    Comm *comm = ctx->comm;
    Trainer *tr = &ctx->tr;
    const size_t *bm = tr->bk->mem;
    double mem[RUN_MEM_COUNT] = { [RUN_MEM_PARAMETERS] = (double)bm[MEM_PARAMS], [RUN_MEM_GRADIENTS] = (double)bm[MEM_GRADS],
                                  [RUN_MEM_OPTIMIZER] = (double)bm[MEM_OPTIM],
                                  [RUN_MEM_ACTIVATIONS] = (double)(bm[MEM_ACTS] + bm[MEM_WORK]) };
    struct rusage ru; getrusage(RUSAGE_SELF, &ru); mem[RUN_MEM_PEAK_RSS] = (double)ru.ru_maxrss * 1024.0;
    comm_host_all_reduce(comm, GROUP_WORLD, mem, RUN_MEM_COUNT, DTYPE_F64, OP_MAX, PHASE_OTHER, -1);   // the largest rank
    watchdog_finish();
    stop_clear_run();
    set_die_hook(NULL, NULL);
    int results_lost = 0;   // rows or the end not in the database at its path: never "results <db>"
    // The memory a run records is that of a process that trained, or of its first process
    // (a new run that failed before its first step: what it had allocated); a resume that ran
    // no step (nothing left to train) leaves the run's recorded memory as it is.
    if (ctx->root && ctx->db && (tr->step > ctx->first_step || !ctx->resume_run))
        for (int i = 0; i < RUN_MEM_COUNT; i++) rundb_set_memory(ctx->db, ctx->run_id, RUNDB_MEMORY_NAMES[i], (int64_t)mem[i]);
    if (ctx->root && ctx->exit_code == 0) {
        char why[3000];
        int db_problem = 0;
        if (!run_end_is_fact(ctx, why, sizeof why, &db_problem)) {
            snprintf(ctx->end_message, sizeof ctx->end_message, "not completed: %s", why);
            fprintf(stderr, "error: run %s is not recorded as completed: %s\n", ctx->uid, why);
            ctx->exit_code = EXIT_INTERNAL;
            results_lost = db_problem;
        }
    }
    if (ctx->root && ctx->db) {
        int ex = ctx->exit_code;
        const char *status = RUNDB_END_STATUS[ex == 0 ? RUN_END_COMPLETED : ex == EXIT_DIVERGED ? RUN_END_DIVERGED
                                              : ex == EXIT_INTERNAL ? RUN_END_FAILED : RUN_END_INTERRUPTED];
        int lost = rundb_end_run(ctx->db, ctx->run_id, status, ctx->end_message[0] ? ctx->end_message : NULL);
        lost |= rundb_close(ctx->db);
        ctx->db = NULL;
        if (lost && ctx->exit_code == 0) ctx->exit_code = EXIT_INTERNAL;
        if (lost) results_lost = 1;
    }
    if (ctx->root) {
        int ex = ctx->exit_code;
        double secs = now_seconds() - ctx->loop_t0;
        char d[32];
        format_duration(d, sizeof d, secs);
        printf("run %s (run_id %lld) %s at step %d after %s | checkpoints %s/ | results %s",
               ctx->uid, (long long)ctx->run_id,
               ex == 0 ? "completed" : ex == EXIT_DIVERGED ? "diverged" : ex >= 128 ? "interrupted" : ex == EXIT_INTERNAL ? "failed" : "ended",
               tr->step, d, ctx->ckpt_dir, results_lost ? "NOT all recorded (see the error above)" : opt->use_db ? ctx->cfg->run.db : "not recorded (--no-db)");
        if (opt->use_db && !ctx->launch_id && !results_lost) printf(" | figures: make figures EXP=%s", ctx->experiment);
        printf("\n");
        fflush(stdout);
    }
}

// Whatever setup made, in every case (a completed run, or nothing to do).
static void run_free(RunCtx *ctx) {
    set_die_hook(NULL, NULL);
    if (ctx->db) rundb_close(ctx->db);
    ctx->db = NULL;
    if (ctx->full) { model_state_free(ctx->full); free(ctx->full); }
    if (ctx->trainer_up) trainer_free(&ctx->tr);
    outdir_close(&ctx->dump_out); outdir_close(&ctx->run_dir); outdir_close(&ctx->ckpt_root);   // (the run's lock with it)
    free(ctx->config_json); free(ctx->manifest_text); free(ctx->resume_config); free(ctx->resume_changes);
}

// ---- the run: setup, step loop, teardown ---------------------------------------------------
int run_training(const RunOptions *opt, Comm *comm) {
    RunCtx *ctx = xcalloc(1, sizeof *ctx);
    ctx->opt = opt;
    ctx->cfg = &opt->cfg;
    ctx->comm = comm;
    ctx->root = comm->rank == 0;
    ctx->launch_id = opt->launch_id;
    ctx->experiment = opt->manifest ? opt->manifest->name : "adhoc";
    ctx->variant = ctx->cfg->variant[0] ? ctx->cfg->variant : "default";
    ctx->ckpt_root.fd = ctx->run_dir.fd = ctx->dump_out.fd = -1;
    ctx->last_loss = NAN;
    set_die_hook(on_die, ctx);
    ctx->faults = parse_faults();
    ctx->config_json = config_to_json(ctx->cfg);
    ctx->manifest_text = fs_read_text(opt->config_path);   // stored in every checkpoint
    // The memory pre-flight of `make exp` (train/memory_fit.h), before a folder or the database is made.
    if (ctx->root) trainer_refuse_unless_fits(ctx->cfg, -1, opt->ranks_per_host, opt->manifest ? ctx->experiment : NULL,
                                              opt->manifest ? ctx->variant : NULL);
    if (run_decide(ctx)) {
        run_start_trainer(ctx);
        run_register(ctx);
        run_steps(ctx);
        run_finish(ctx);
    }
    int exit_code = ctx->exit_code;
    run_free(ctx);
    free(ctx);
    return exit_code;
}
