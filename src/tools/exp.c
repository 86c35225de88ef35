// exp — run an experiment as one launch: every variant of experiments/<name>.yaml (or
// one), REPEAT times interleaved (A B A B ...), each run its own training process (under
// the launcher — mpirun, or srun in a Slurm allocation — when the variant asks for several
// ranks), checked before any rank starts (plan_preflight), all recorded under one `launches` row
// (manifest text and hash, overrides, host, load, one measured sgemm peak); then the
// table comparing the variants from the runs of that launch. `exp --help` lists the
// options; `make exp EXP=name [VARIANT=v] [SET="k=v ..."] [REPEAT=n] [RESUME=1]
// [LAUNCH=id] [SUMMARY=1] [DRY_RUN=1] [LAUNCHER=...] [LAUNCHER_ARGS=...] [HOSTFILE=...]`
// calls this. What the launch does (its runs, launcher, commands, refusals) is decided by
// train/plan.h; this file keeps the command line, the processes and the printing.
#include <dirent.h>
#include <sqlite3.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../backend/backend.h"
#include "../config/manifest.h"
#include "../config/options.h"
#include "../core/check.h"
#include "../core/fs.h"
#include "../core/outdir.h"
#include "../core/shellword.h"
#include "../core/env.h"
#include "../store/compare.h"
#include "../store/db.h"
#include "../store/host.h"
#include "../sim/hardware.h"
#include "../train/plan.h"
#include "../train/stop.h"
#include "../train/trainer.h"

static const char *USAGE =
"usage: exp NAME|PATH [--variant V] [--set key=value]... [--repeat N] [--dry-run]\n"
"       exp NAME|PATH --resume [--launch ID] [--set key=value]... [--allow-change KEY]...\n"
"       exp NAME|PATH --summary [--launch ID] [--csv|--json] [--steps|--verdicts]\n"
"       exp [NAME|PATH] --compare [--launch ID]... [--run ID]... [--db PATH] [--csv|--json] [--steps|--verdicts]\n"
"       exp NAME|PATH --simulate PROFILE [--variant V] [--set key=value]... [--dry-run]\n"
"\n"
"Runs experiments/NAME.yaml as one launch: each variant (those marked run.on_demand only\n"
"when named) as its own training process, the variants REPEAT times interleaved, then\n"
"a table comparing the variants from the completed runs of this launch.\n"
"\n"
"  --variant V        only this variant (make exp VARIANT=V)\n"
"  --set key=value    override a configuration key in every variant (make exp SET=\"k=v k2=v2\")\n"
"  --repeat N         run the variants N times, interleaved A B A B ... (make exp REPEAT=N):\n"
"                     the table gives the median step time and its min..max over the repeats, and\n"
"                     whether each variant is faster or slower than the first beyond the runs' noise\n"
"                     (4 repeats are the fewest that can give that verdict)\n"
"  --dry-run          print each variant's launch command and configuration; run nothing\n"
"  --measure-peak     store this launch's sgemm measurement as this host's peak (make exp MEASURE_PEAK=1);\n"
"                     by default the peak stored for this machine (host, CPU model, cores) is reused,\n"
"                     raised when the launch's measurement is more than 10 % above it\n"
"  --resume           continue a launch (the latest, or --launch ID): runs not completed\n"
"                     resume from their newest checkpoint with their stored overrides (one\n"
"                     stopped before its first checkpoint: from step 0, as the same run),\n"
"                     runs not started start, completed runs are left alone (make exp RESUME=1)\n"
"  --allow-change KEY with --resume: a resumed run may change KEY although that changes its meaning\n"
"                     (repeatable; make exp RESUME=1 ALLOW_CHANGE=\"KEY ...\"; build/train --help)\n"
"  --summary          print the comparison table of a launch (the latest, or --launch ID)\n"
"  --launch ID        the launch for --resume or --summary (make exp LAUNCH=ID); --compare: repeatable\n"
"  --compare          the runs of several launches (--launch ID ..., make compare LAUNCH=\"5 6\") or\n"
"                     runs (--run ID ..., make compare RUNS=\"7 9\") side by side, one row per launch and\n"
"                     variant, the configuration keys on which they differ as columns; without ids:\n"
"                     the latest two launches of NAME\n"
"  --run ID           a run for --compare (repeatable)\n"
"  --db PATH          the run database of --compare (default: NAME's run.db, else runs/boost.db)\n"
"  --csv, --json      --summary and --compare as CSV or JSON on stdout (make compare FORMAT=csv|json)\n"
"  --format F         the same: table (the default), csv or json\n"
"  --steps            every logged step of the runs instead, as CSV (or --json) (make compare STEPS=1)\n"
"  --verdicts         only the timing verdicts: per pair of variants faster, slower, not distinguishable\n"
"                     or too few runs, with the time ratio and its 95 % interval (text, --csv or --json;\n"
"                     docs/database.md \"Timing verdicts\")\n"
"  --launcher WORD    the MPI launcher, one word per option (make exp LAUNCHER=\"srun --mpi=pmix\"); default:\n"
"                     srun inside a Slurm allocation (SLURM_JOB_ID set), else mpirun\n"
"  --launcher-arg W   one more word for the launcher (make exp LAUNCHER_ARGS=\"--map-by ppr:4:node -x NCCL_DEBUG\")\n"
"  --hostfile PATH    the hosts of the ranks (make exp HOSTFILE=hosts): mpirun --hostfile, srun --nodefile\n"
"  --probe-resources  print this host's memory, cores and CUDA devices (the pre-flight runs it where the\n"
"                     ranks run, through the launcher) and exit; given alone\n"
"  --simulate PROFILE price every variant (on-demand ones included) with build/simulate on the\n"
"                     hardware profile experiments/hardware/PROFILE.yaml instead of training it\n"
"                     (make exp SIMULATE=1 [HARDWARE=PROFILE], default a100-80gb-node4): one\n"
"                     launch whose runs are of kind `simulated` (docs/performance-model.md)\n"
"  --help             this text\n"
"\n"
"An option with a value is given once, except --set, --allow-change, --launch, --run, --launcher and --launcher-arg\n"
"(a later --set of the same key wins). Options that exclude each other (--csv, --json and --format;\n"
"--compare, --summary, --resume and --dry-run, as the usage lines above combine them) are refused,\n"
"naming both.\n"
"\n"
"Before any rank starts, every variant is checked where its ranks run: a cuda variant needs a visible\n"
"device, and the largest rank's memory (the dry back end's accounting) must fit the device or the node;\n"
"a refused launch is recorded with its reason (launches.error) and exits 2.\n"
"\n"
"Exit: 0 every run completed (or nothing left to do), 1 a run failed or diverged,\n"
"2 bad input or environment, 128+N interrupted by signal N (resume with --resume).\n";

static void usage_error(const char *what) { die_input_hint(USAGE, "exp: %s", what); }

// ---- signals: the launcher stops launching, lets the running variant record itself ---
static volatile sig_atomic_t g_stop;
static volatile pid_t g_child;
static volatile sig_atomic_t g_child_srun;   // the child is srun: its ranks are signalled through their step
static void on_signal(int sig) {
    if (!g_stop) g_stop = sig;
    // Ctrl-C reaches the whole foreground process group (the child too); a signal sent to
    // this process alone is passed on, so the run records 'interrupted' itself (a scheduler's
    // warning as itself: the run then writes its checkpoint; train/stop.h). srun answers
    // SIGTERM by killing its ranks at once: its step is signalled instead (run_command).
    if (sig != SIGINT && g_child > 0 && !g_child_srun)
        kill(g_child, stop_signal_action(sig) == STOP_SIG_CHECKPOINT ? sig : SIGTERM);
}

// Is the parent process make (the Makefile's exp recipe execs this process)? Only then is
// it handed the signal: an inherited BOOST_EXP_UNDER_MAKE never signals a shell.
static int parent_is_make(void) {
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)getppid());
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
    fclose(f);
    comm[strcspn(comm, "\n")] = 0;
    return !strcmp(comm, "make") || !strcmp(comm, "gmake");
}

// ---- launching ---------------------------------------------------------------------------
// fork + exec (no shell); stdout into out[n] when out is given. Returns the exit code, or
// 128 + the signal that ended it, 127 when it could not be run.
static int spawn(char *const *argv, char *out, size_t n) {
    int fd[2] = { -1, -1 };
    if (out) CHECK_ERRNO(pipe(fd) != 0, "pipe");
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        if (out) { dup2(fd[1], STDOUT_FILENO); close(fd[0]); close(fd[1]); }
        execvp(argv[0], argv);
        fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (out) {
        close(fd[1]);
        size_t len = 0;
        for (;;) {
            char buf[4096];
            ssize_t k = read(fd[0], buf, sizeof buf);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            size_t take = len + (size_t)k < n ? (size_t)k : n - 1 - len;
            memcpy(out + len, buf, take);
            len += take;
        }
        out[len] = 0;
        close(fd[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) CHECK_ERRNO(errno != EINTR, "waitpid");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// The stop signal to the ranks of the srun job step named `step` in this allocation: scancel
// --signal reaches them as a signal (they record 'interrupted' and end), where srun itself
// would kill them at once. The step is found by its name (plan_launcher_argv: --job-name).
// Without it (outside an allocation, or not registered yet) srun gets SIGTERM: the ranks
// end at once and exp records the run 'interrupted' for them.
static void signal_srun_step(pid_t srun, const char *step, int sig) {
    const char *job = getenv("SLURM_JOB_ID");
    char list[8192] = "", id[64] = "";
    if (job && *job) {
        char *q[] = { "squeue", "--steps", "--jobs", (char *)job, "--noheader", "--format", "%i %j", NULL };
        if (spawn(q, list, sizeof list) == 0)
            for (char *line = strtok(list, "\n"); line && !id[0]; line = strtok(NULL, "\n")) {
                char sid[64], name[256];
                if (sscanf(line, "%63s %255s", sid, name) == 2 && !strcmp(name, step)) snprintf(id, sizeof id, "%s", sid);
            }
    }
    char sig_s[16];
    snprintf(sig_s, sizeof sig_s, "--signal=%s", sig == SIGINT ? "INT" : sig == SIGHUP ? "HUP" : "TERM");
    char *c[] = { "scancel", sig_s, id, NULL };
    if (!id[0] || spawn(c, NULL, 0) != 0) kill(srun, SIGTERM);
}

// Run one variant's command; srun_step: its job step's name when the command is srun's.
static int run_command(char *const *argv, const char *srun_step) {
    g_child_srun = srun_step != NULL;
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    g_child = pid;
    int status, forwarded = 0;
    for (;;) {
        if (g_stop && srun_step && !forwarded) { forwarded = 1; signal_srun_step(pid, srun_step, g_stop); }
        // under srun: look every 0.1 s, so that a signal arriving just before the wait is passed on too
        pid_t w = waitpid(pid, &status, srun_step && !forwarded ? WNOHANG : 0);
        if (w == pid) break;
        CHECK_ERRNO(w < 0 && errno != EINTR, "waitpid");
        if (w == 0) { struct timespec ts = { 0, 100000000 }; nanosleep(&ts, NULL); }
    }
    g_child = 0;
    g_child_srun = 0;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Print `words` (NULL-terminated) as one shell command line: each one shell word, quoted
// where needed, so that pasting the line runs exactly this and nothing else.
static void print_command(const char *prefix, const char *const *words, const char *suffix) {
    size_t n = 1;
    for (int i = 0; words[i]; i++) n += 4 * strlen(words[i]) + 4;
    char *line = xcalloc(n, 1);
    for (int i = 0; words[i]; i++) shell_append_word(line, n, words[i]);
    printf("%s%s%s", prefix, line, suffix);
    free(line);
}

// ---- configurations ------------------------------------------------------------------------
// The few lines a launch prints of a variant's configuration; the whole resolved one is one
// command away (printed with it) and stored with every run (runs.config_json, run_config).
static void print_config_brief(const Config *c, const char *path, const char *variant, const char *const *sets, int n_sets) {
    const ModelConfig *m = &c->model;
    printf("configuration: %s, %d layers, d_model %d, %d heads, d_ff %d", linear_kind_name(m->linear), m->n_layers,
           m->d_model, m->n_heads, m->d_ff);
    if (m->linear != LINEAR_DENSE) printf(", rank %d/%d", m->rank_attn, m->rank_mlp);
    printf(", seq %d, vocab %d | tp %d pp %d dp %d", m->seq_len, m->vocab_size, c->parallel.tp, c->parallel.pp, c->parallel.dp);
    const BoostConfig *b = &c->boost;
    if (b->btp || b->lowrank_ckpt || b->full_recompute)
        printf(" | boost:%s%s%s%s%s", b->btp ? " btp" : "", b->online_rmsnorm ? " online_rmsnorm" : "",
               b->grouping ? " grouping" : "", b->lowrank_ckpt ? " lowrank_ckpt" : "", b->full_recompute ? " full_recompute" : "");
    printf("\n  train: %d steps, batch %d", c->train.steps, c->train.batch_size);
    if (c->train.grad_accum > 1) printf(" x %d accumulated", c->train.grad_accum);
    printf(", lr %g, %s on %s | data %s\n", c->train.lr, c->train.precision == PRECISION_BF16 ? "bf16" : "fp32",
           config_device_name(c->run.device), c->data.dataset);
    char line[8192] = "";
    shell_append_word(line, sizeof line, "build/info"); shell_append_word(line, sizeof line, "--config");
    shell_append_word(line, sizeof line, path); shell_append_word(line, sizeof line, "--variant");
    shell_append_word(line, sizeof line, variant);
    for (int i = 0; i < n_sets; i++) { shell_append_word(line, sizeof line, "--set"); shell_append_word(line, sizeof line, sets[i]); }
    shell_append_word(line, sizeof line, "--print-config");
    printf("  the whole configuration: %s\n", line);
}

// The keys of `c` whose value differs from `base` (the whole configuration is in the
// database; the console shows what distinguishes a variant).
static void print_config_diff(const Config *base, const char *base_name, const Config *c) {
    int nk; const ConfigKey *keys = config_schema(&nk);
    int shown = 0;
    for (int i = 0; i < nk; i++) {
        char a[1100], b[1100];
        config_format_value(base, &keys[i], a, sizeof a);
        config_format_value(c, &keys[i], b, sizeof b);
        if (strcmp(a, b) == 0) continue;
        if (!shown++) printf("configuration: as %s except\n", base_name);
        printf("  %s.%-*s %s   (%s: %s)\n", keys[i].section, 24 - (int)strlen(keys[i].section), keys[i].key, b, base_name, a);
    }
    if (!shown) printf("configuration: the same as %s\n", base_name);
}

// Warn about every key on which the runs of the comparison differ beyond what their
// variants' own overrides explain: a recorded configuration (the one in effect: after a
// resume with new --set, the last config_change) differs from the reference run's while
// the manifest gives the two variants the same value. train.threads is resolved at run
// time from the layout and is not compared.
static void warn_config_differences(RunDB *db, const Manifest *man, const RunRow *runs, int n) {
    if (n < 2) return;
    int nk; const ConfigKey *keys = config_schema(&nk);
    const RunRow *ref = &runs[0];
    const ManifestVariant *vref = NULL;
    for (int v = 0; v < man->n_variants; v++) if (!strcmp(man->variants[v].name, ref->variant)) vref = &man->variants[v];
    if (!vref) return;
    for (int k = 0; k < nk; k++) {
        char dotted[200];
        snprintf(dotted, sizeof dotted, "%s.%s", keys[k].section, keys[k].key);
        if (!strcmp(dotted, "train.threads")) continue;
        for (int i = 1; i < n; i++) {
            const ManifestVariant *vi = NULL;
            for (int v = 0; v < man->n_variants; v++) if (!strcmp(man->variants[v].name, runs[i].variant)) vi = &man->variants[v];
            if (!vi) continue;
            char ma[1100], mb[1100], ra[1100], rb[1100];
            config_format_value(&vref->config, &keys[k], ma, sizeof ma);
            config_format_value(&vi->config, &keys[k], mb, sizeof mb);
            if (strcmp(ma, mb) != 0) continue;    // the variants' own overrides explain it
            if (rundb_config_differs(db, ref->id, runs[i].id, dotted, ra, rb, sizeof ra)) {
                printf("warning: the compared runs differ on %s beyond their variants' overrides: %s = %s in run %lld (%s), "
                       "%s in run %lld (%s)\n", dotted, dotted, ra, (long long)ref->id, ref->variant, rb,
                       (long long)runs[i].id, runs[i].variant);
                break;
            }
        }
    }
}

// The peak check after the table: this launch's sgemm against the stored peak its MFU uses.
// A drift beyond the runs' own spread means MFU (and speed) of this launch cannot be
// compared with other launches' to better than that drift.
static void warn_peak_drift(const LaunchRow *launch, const VariantSummary *vs, int n) {
    if (!(launch->peak_check_gflops > 0) || !(launch->peak_gflops > 0)) return;
    double drift = launch->peak_check_gflops / launch->peak_gflops - 1;
    double tightest = INFINITY;
    const char *which = NULL;
    for (int i = 0; i < n; i++) {
        if (isnan(vs[i].ms_lo) || !(vs[i].ms_per_step > 0)) continue;
        double rel = (vs[i].ms_hi - vs[i].ms_lo) / vs[i].ms_per_step;
        if (rel < tightest) { tightest = rel; which = vs[i].variant; }
    }
    if (which && fabs(drift) > tightest)
        printf("warning: this launch's sgemm check (%.1f GFLOP/s at load %.2f) is %+.1f%% off the stored peak (%.1f GFLOP/s) "
               "its MFU uses: more than the runs' own spread (%.1f%%, %s); speed and MFU of this launch are not comparable "
               "with other launches' to better than that (a quieter machine, or MEASURE_PEAK=1 for a new peak)\n",
               launch->peak_check_gflops, launch->load_avg, 100 * drift, launch->peak_gflops, 100 * tightest, which);
}

// ---- the comparison table ------------------------------------------------------------------
// A simulated run whose configuration does not fit the profile's memory (the simulation row's
// memory_fits): the launch table shows it as not fitting, never with a time.
static int simulated_run_fits(RunDB *db, int64_t run) {
    sqlite3_stmt *st = NULL;
    int fits = 1;
    if (sqlite3_prepare_v2(rundb_handle(db), "SELECT memory_fits FROM simulation WHERE run_id = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) fits = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return fits;
}

static void print_table(RunDB *db, const Manifest *man, const char *experiment, const LaunchRow *launch) {
    RunRow *runs = NULL;
    int n_runs = 0;
    int simulated = launch && !strcmp(launch->kind, "simulated");
    if (launch) {
        n_runs = rundb_launch_runs(db, launch->id, &runs);
        if (simulated)
            printf("\n%s — launch %lld (%s%s%s%s): SIMULATED on hardware profile %s by build/simulate, nothing trained\n",
                   experiment, (long long)launch->id, launch->started_at, launch->variant_filter[0] ? ", VARIANT=" : "",
                   launch->variant_filter, launch->n_overrides ? ", SET given" : "", launch->hardware);
        else
        printf("\n%s — launch %lld (%s, host %s, load %.2f at start, sgemm peak %.1f GFLOP/s, REPEAT=%d%s%s%s)\n",
               experiment, (long long)launch->id, launch->started_at, launch->host, launch->load_avg, launch->peak_gflops,
               launch->repeat, launch->variant_filter[0] ? ", VARIANT=" : "", launch->variant_filter,
               launch->n_overrides ? ", SET given" : "");
        for (int i = 0; i < launch->n_overrides; i++) printf("  SET %s\n", launch->overrides[i]);
        if (!simulated && launch->peak_note[0]) printf("note: %s\n", launch->peak_note);
    }
    VariantSummary *vs = NULL;
    int n = 0;
    if (launch) {
        int64_t *ids = xcalloc((size_t)(n_runs ? n_runs : 1), sizeof *ids);
        for (int i = 0; i < n_runs; i++) ids[i] = runs[i].id;
        n = rundb_summarize(db, ids, n_runs, &vs);
        free(ids);
    } else {
        n = rundb_compare(db, experiment, &vs);
        printf("\n%s — no launch recorded: the latest run of each variant (runs made by hand; they may differ in settings)\n",
               experiment);
    }
    printf("%-28s %5s %6s %9s %9s %9s %21s %10s %7s %10s %11s %6s %15s\n", "variant", "runs", "steps", "loss", "val loss",
           "median ms", "spread", "tokens/s", "MFU", "peak mem", "comm/step", "calls", "coll ms (wait)");
    int spread_runs = 0, spread_steps = 0, loaded = 0, any_comm = 0, unfit = 0;
    for (int i = 0; i < n; i++) {
        const VariantSummary *s = &vs[i];
        char mem[32], comm[32], val[32], loss[32], ms[32], spread[48], tps[32], mfu[32], runs_col[16], coll[48];
        store_format_bytes(mem, sizeof mem, (double)s->peak_memory);
        store_format_comm_bytes(comm, sizeof comm, (double)s->comm_bytes);
        snprintf(loss, sizeof loss, isnan(s->final_loss) ? "-" : "%.4f", s->final_loss);
        snprintf(val, sizeof val, isnan(s->val_loss) ? "-" : "%.4f", s->val_loss);
        snprintf(ms, sizeof ms, isnan(s->ms_per_step) ? "-" : s->ms_per_step < 10 ? "%.3f" : "%.1f", s->ms_per_step);
        snprintf(tps, sizeof tps, isnan(s->tokens_per_s) ? "-" : "%.0f", s->tokens_per_s);
        snprintf(mfu, sizeof mfu, isnan(s->mfu) ? "-" : s->peak_loaded ? "%.1f%%*" : "%.1f%%", 100 * s->mfu);
        loaded |= s->peak_loaded && !isnan(s->mfu);
        store_format_comm_ms(coll, sizeof coll, s->comm_ms, s->comm_wait_ms);
        any_comm |= !isnan(s->comm_ms);
        if (isnan(s->ms_lo)) snprintf(spread, sizeof spread, "-");
        else snprintf(spread, sizeof spread, "%.1f-%.1f %s", s->ms_lo, s->ms_hi, s->n_completed > 1 ? "runs" : "p10-90");
        if (s->n_completed > 1) spread_runs = 1; else if (!isnan(s->ms_lo)) spread_steps = 1;
        snprintf(runs_col, sizeof runs_col, "%d/%d", s->n_completed, s->n_runs);
        if (s->n_completed == 0) { snprintf(mem, sizeof mem, "-"); snprintf(comm, sizeof comm, "-"); }
        if (simulated && !simulated_run_fits(db, s->run_id)) {   // a step that cannot run has no time
            snprintf(ms, sizeof ms, "no fit");
            snprintf(tps, sizeof tps, "-");
            snprintf(mfu, sizeof mfu, "-");
            snprintf(spread, sizeof spread, "does not fit (mem)");
            unfit++;
        }
        char alias[64];
        store_variant_alias(s->variant, alias, sizeof alias);   // a long grid name: a short alias, the key below
        printf("%-28s %5s %6d %9s %9s %9s %21s %10s %7s %10s %11s %6lld %15s\n", alias, runs_col, s->steps, loss, val, ms,
               spread, tps, mfu, mem, comm, (long long)s->comm_calls, coll);
    }
    for (int i = 0; i < n; i++) {
        char alias[64];
        store_variant_alias(vs[i].variant, alias, sizeof alias);
        if (strcmp(alias, vs[i].variant)) printf("  %s = %s\n", alias, vs[i].variant);
    }
    if (simulated) {
        printf("modeled: one simulated step per run on profile %s (no loss: nothing is computed). median ms: the modeled\n"
               "step time; MFU against the profile's peak x devices; peak mem: the largest rank's modeled total;\n"
               "comm/step: rank 0's collectives; coll ms: their modeled time (the model has no waiting: \"(-)\").\n"
               "The split: sqlite3 %s \"SELECT * FROM simulated_runs WHERE launch_id = %lld\"\n",
               launch->hardware, rundb_path(db), (long long)launch->id);
        if (unfit)
            printf("no fit: %d variant%s do%s not fit the profile's memory per device (peak mem): no time is shown for %s\n",
                   unfit, unfit > 1 ? "s" : "", unfit > 1 ? "" : "es", unfit > 1 ? "them" : "it");
        for (int i = 0; i < man->n_variants; i++)
            if (man->variants[i].config.boost.online_rmsnorm) {
                printf("online RMSNorm: the modeled op-level speed-up over SyncRMSNorm contradicts the paper's measured one; the\n"
                       "mechanism: analysis/reproduction/REPORT.md, \"What misses and why\"\n");
                break;
            }
    } else {
        char spread_s[160];
        if (spread_runs || spread_steps)
            snprintf(spread_s, sizeof spread_s, "%s%s%s", spread_runs ? "min-max of the run medians (\"runs\")" : "",
                     spread_runs && spread_steps ? "; " : "",
                     spread_steps ? "10th-90th percentile of the single run's steps (\"p10-90\")" : "");
        else
            snprintf(spread_s, sizeof spread_s, "none (no completed run has timed steps)");
        printf("runs: completed/total (only completed runs enter the numbers). median ms: median step time after warm-up\n"
               "(the first max(1, steps/10) steps; run_summary.median_ms_per_step), median over the runs; tokens/s = tokens per\n"
               "step / median ms. spread: %s.\n"
               "MFU against the %s sgemm peak. peak mem: the largest peak resident set (RSS) of any rank's\n"
               "process. comm/step and calls: rank 0's collectives per step (all phases, forward and backward).\n",
               spread_s, launch ? "host's stored (host_peaks; the launch's peak_gflops)" : "runs'");
        if (any_comm) store_print_comm_ms_legend(stdout);
        if (loaded) store_print_peak_legend(stdout);
    }
    if (launch && !simulated && launch->repeat == 1 && n > 0)
        printf("REPEAT=1: one run per variant gives no spread over runs; p10-90 is the spread of one run's steps, which says\n"
               "nothing about the next run: a difference between variants needs REPEAT>=%d to be told apart from that noise.\n",
               stats_min_runs());
    if (!simulated && n > 1) {   // each variant against the first, over the runs (core/stats.h)
        int64_t *ids = xcalloc((size_t)(n_runs + n + 1), sizeof *ids);
        int k = 0;
        if (launch) for (int i = 0; i < n_runs; i++) ids[k++] = runs[i].id;
        else for (int i = 0; i < n; i++) ids[k++] = vs[i].run_id;
        CompareVerdict *v = NULL;
        int nv = compare_verdicts(db, ids, k, &v);
        compare_print_verdicts(v, nv, FORMAT_TABLE, 0, stdout);
        free(v);
        free(ids);
    }
    if (launch && !simulated) warn_peak_drift(launch, vs, n);
    for (int i = 0; i < n && launch && !simulated; i++)
        if (vs[i].mfu > 1) {
            printf("warning: MFU above 100%% (%s: %.0f%%): the stored peak (%.1f GFLOP/s) is below what this machine reaches "
                   "now (measured under load?): MEASURE_PEAK=1 on a quieter machine\n", vs[i].variant, 100 * vs[i].mfu,
                   launch->peak_gflops);
            break;
        }
    for (int i = 0; i < n_runs; i++)
        if (strcmp(runs[i].status, "completed"))
            printf("not compared: run %lld (%s, repeat_index %d) is %s at step %d\n", (long long)runs[i].id, runs[i].variant,
                   runs[i].repeat_index, runs[i].status, runs[i].last_step);
    if (launch && man) {
        // compare completed runs only
        RunRow *done = xcalloc((size_t)(n_runs ? n_runs : 1), sizeof *done);
        int nd = 0;
        for (int i = 0; i < n_runs; i++) if (!strcmp(runs[i].status, "completed")) done[nd++] = runs[i];
        warn_config_differences(db, man, done, nd);
        free(done);
    }
    free(vs);
    free(runs);
}

// ---- the experiment's file ------------------------------------------------------------------
// NAME -> experiments/NAME.yaml (a path is taken as it is); an unknown name gets the
// closest experiment's name.
static void resolve_path(const char *name, char *path, size_t n) {
    if (strchr(name, '/') || strstr(name, ".yaml")) xsnprintf(path, n, "%s", name);
    else xsnprintf(path, n, "experiments/%s.yaml", name);
    struct stat st;
    if (stat(path, &st) == 0) return;
    const char *names[256];
    int k = 0;
    DIR *d = opendir("experiments");
    struct dirent *e;
    while (d && (e = readdir(d)) && k < 255) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml")) names[k++] = strndup(e->d_name, l - 5);
    }
    if (d) closedir(d);
    names[k] = NULL;
    const char *s = config_suggest(name, names);
    const char *hint = "the experiments are the files in experiments/ (make exp EXP=<file stem>; ls experiments)";
    if (s) die_input_hint(hint, "no experiment '%s': %s does not exist; did you mean '%s'?", name, path, s);
    die_input_hint(hint, "no experiment '%s': %s does not exist", name, path);
}

// ---- several launches or runs side by side, and exports ---------------------------------
// --compare: the runs of the launches and the runs named, in that order (no ids: the latest
// two launches of the experiment); --summary --csv/--json: the runs of one launch. Text,
// CSV or JSON summaries (compare.h), or the step series with --steps.
// The run database a reading command (--summary, --compare) opens: it must exist and hold
// something. rundb_open would create a missing one, or write the schema into an empty file,
// and a reading command must leave no file behind (a typo in run.db or DB=).
static RunDB *open_existing_db(const char *db_path) {
    struct stat st;
    int stat_rc = stat(db_path, &st), stat_errno = errno;
    if (stat_rc != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        die_input_hint("run an experiment first (make exp EXP=name), or name the database (make compare DB=path)",
                       "%s: no run database there (%s)", db_path,
                       stat_rc != 0 ? strerror(stat_errno) : !S_ISREG(st.st_mode) ? file_kind_name(st.st_mode) : "an empty file");
    return rundb_open(db_path);
}

static int print_compare(const char *db_path, const char *experiment, const int64_t *launches, int n_launches,
                         const int64_t *run_ids, int n_run_ids, OutputFormat format, int steps, int verdicts) {
    RunDB *db = open_existing_db(db_path);
    int64_t *ids = NULL;
    int n = 0;
    int64_t latest[2];
    if (!n_launches && !n_run_ids) {
        if (!experiment) usage_error("--compare needs --launch ID, --run ID or an experiment name");
        LaunchRow lr;
        if (!rundb_latest_launch(db, experiment, &lr))
            die_input_hint("run it first: make exp EXP=<name>", "no launch of %s in %s", experiment, db_path);
        latest[n_launches++] = lr.id;
        rundb_launch_row_free(&lr);
        LaunchRow prev;
        if (rundb_previous_launch(db, experiment, latest[0], &prev)) { latest[n_launches++] = prev.id; rundb_launch_row_free(&prev); }
        launches = latest;
        if (format == FORMAT_TABLE && !verdicts)
        {
            if (n_launches > 1) printf("%s: the latest two launches, %lld and %lld\n", experiment, (long long)latest[1], (long long)latest[0]);
            else printf("%s: its only launch, %lld\n", experiment, (long long)latest[0]);
        }
        if (n_launches > 1) { int64_t t = latest[0]; latest[0] = latest[1]; latest[1] = t; }   // older first
    }
    for (int i = 0; i < n_launches; i++) {
        LaunchRow lr;
        if (!rundb_launch(db, launches[i], &lr))
            die_input_hint("the launches: sqlite3 DB \"SELECT * FROM launch_summary\"", "no launch %lld in %s",
                           (long long)launches[i], db_path);
        rundb_launch_row_free(&lr);
        RunRow *runs;
        int k = rundb_launch_runs(db, launches[i], &runs);
        ids = realloc(ids, (size_t)(n + k + 1) * sizeof *ids);
        CHECK(ids, "out of memory");
        for (int j = 0; j < k; j++) ids[n++] = runs[j].id;
        free(runs);
    }
    ids = realloc(ids, (size_t)(n + n_run_ids + 1) * sizeof *ids);
    CHECK(ids, "out of memory");
    for (int i = 0; i < n_run_ids; i++) ids[n++] = run_ids[i];
    if (steps) compare_steps(db, ids, n, format, stdout);
    else if (verdicts) {
        CompareVerdict *v = NULL;
        int nv = compare_verdicts(db, ids, n, &v);
        compare_print_verdicts(v, nv, format, 1, stdout);
        if (!nv && format == FORMAT_TABLE) printf("no pair of variants to compare\n");
        free(v);
    }
    else compare_print(db, ids, n, format, stdout);
    free(ids);
    rundb_close(db);
    return 0;
}

// The launch row of a plan (its manifest text: malloc'd, returned; free it after recording).
static char *launch_info(LaunchInfo *li, const LaunchPlan *plan) {
    const Manifest *man = plan->man;
    memset(li, 0, sizeof *li);
    xsnprintf(li->experiment, sizeof li->experiment, "%s", man->name);
    xsnprintf(li->manifest_path, sizeof li->manifest_path, "%s", plan->path);
    xsnprintf(li->experiment_version, sizeof li->experiment_version, "%s", man->version);
    xsnprintf(li->manifest_sha256, sizeof li->manifest_sha256, "%s", man->sha256);
    li->manifest_format = man->manifest_version;
    char *text = fs_read_text(plan->path);
    li->manifest_text = text;
    li->overrides = (const char *const *)plan->all_sets; li->n_overrides = plan->n_all;
    xsnprintf(li->variant_filter, sizeof li->variant_filter, "%s", plan->only);
    li->repeat = plan->repeat;
    li->load_avg = host_load_average();
    host_facts(&li->host);
    if (plan->uses_launcher) xsnprintf(li->launcher, sizeof li->launcher, "%s", plan->launcher.label);
    return text;
}

// Two options given together that exclude each other: refused naming both, with why.
typedef struct { const char *name; int on; } GivenOption;
static int given(const GivenOption *g, const char *name) {
    for (; g->name; g++)
        if (!strcmp(g->name, name)) return g->on;
    CHECK(0, "exp: no option --%s in the table of given options", name);
    return 0;
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    const char *name = NULL, *only = NULL, *simulate = NULL, *db_opt = NULL, *hostfile = NULL;
    int resume = 0, dry = 0, summary = 0, repeat = 0, compare = 0, measure_peak = 0, steps_out = 0, verdicts = 0;
    int csv = 0, json = 0, format_opt = -1, probe = 0, n_pos = 0;
    OptList set_l, allow_l, launcher_l, launcher_arg_l, launch_l, run_l;
    static const char *const formats[] = { "table", "csv", "json", NULL };
    static const ToolOption ID_ROW = OPT_INT64_ROW("id", 1, INT64_MAX, NULL);   // a launch's or a run's id (as read back)
    const ToolOption opts[] = {
        OPT_STR_ROW("variant", &only),
        OPT_LIST_ROW("set", &set_l),
        OPT_INT_ROW("repeat", 1, 1000000000, &repeat),   // (0: not given)
        OPT_FLAG_ROW("dry-run", &dry),
        OPT_FLAG_ROW("measure-peak", &measure_peak),
        OPT_FLAG_ROW("resume", &resume),
        OPT_LIST_ROW("allow-change", &allow_l),
        OPT_FLAG_ROW("summary", &summary),
        OPT_INT64_LIST_ROW("launch", 1, INT64_MAX, &launch_l),
        OPT_FLAG_ROW("compare", &compare),
        OPT_INT64_LIST_ROW("run", 1, INT64_MAX, &run_l),
        OPT_PATH_ROW("db", &db_opt),
        OPT_FLAG_ROW("csv", &csv),
        OPT_FLAG_ROW("json", &json),
        OPT_ENUM_ROW("format", formats, &format_opt),     // (-1: not given)
        OPT_FLAG_ROW("steps", &steps_out),
        OPT_FLAG_ROW("verdicts", &verdicts),
        OPT_LIST_ROW("launcher", &launcher_l),
        OPT_LIST_ROW("launcher-arg", &launcher_arg_l),
        OPT_PATH_ROW("hostfile", &hostfile),
        OPT_FLAG_ROW("probe-resources", &probe),
        OPT_PATH_ROW("simulate", &simulate),
        OPT_END };
    opt_parse("exp", opts, argc, argv, &name, 1, &n_pos, USAGE);
    if (probe) {   // the pre-flight's facts of the host this process runs on (plan_probe_argv)
        if (argc != 2) usage_error("--probe-resources takes nothing else: it prints this host's facts and exits");
        PlanResources res;
        plan_resources_here(&res);
        plan_resources_print(&res, stdout);
        return 0;
    }
    const char **sets = set_l.v, **allow = allow_l.v, **launcher = launcher_l.v, **launcher_args = launcher_arg_l.v;
    int n_sets = set_l.n, n_allow = allow_l.n, n_launcher = launcher_l.n, n_launcher_args = launcher_arg_l.n;
    int n_launch_ids = launch_l.n, n_run_ids = run_l.n;
    int64_t *launch_ids = xcalloc((size_t)n_launch_ids + 1, sizeof *launch_ids), *run_ids = xcalloc((size_t)n_run_ids + 1, sizeof *run_ids);
    for (int i = 0; i < n_launch_ids; i++) opt_value("exp", "launch", &ID_ROW, launch_l.v[i], &launch_ids[i]);
    for (int i = 0; i < n_run_ids; i++) opt_value("exp", "run", &ID_ROW, run_l.v[i], &run_ids[i]);
    int64_t launch_id = n_launch_ids ? launch_ids[n_launch_ids - 1] : 0;

    // ---- options that exclude each other, or go only with another: refused naming both -----
    const GivenOption on[] = {
        { "resume", resume }, { "dry-run", dry }, { "summary", summary }, { "compare", compare }, { "simulate", simulate != NULL },
        { "variant", only != NULL }, { "repeat", repeat > 0 }, { "measure-peak", measure_peak }, { "csv", csv }, { "json", json },
        { "format", format_opt >= 0 }, { "steps", steps_out }, { "verdicts", verdicts }, { "allow-change", n_allow > 0 },
        { "launcher", n_launcher > 0 }, { "launcher-arg", n_launcher_args > 0 }, { "hostfile", hostfile != NULL },
        { NULL, 0 } };
    static const char *const COMPARE_ONLY = "--compare reads the database only: it takes --launch, --run, --db, --csv, --json, "
                                            "--format, --steps, --verdicts (and --set run.db=PATH with an experiment name)";
    static const char *const TRAINS = "they go with a launch that trains (not --summary, --compare or --simulate)";
    static const char *const PEAK = "the peak is measured at the start of a new launch that trains";
    static const struct { const char *a, *b, *why; } excl[] = {
        { "csv", "json", "one output format (or --format table|csv|json)" },
        { "csv", "format", "one output format (--format csv is --csv)" },
        { "json", "format", "one output format (--format json is --json)" },
        { "steps", "verdicts", "the step series or the timing verdicts (make compare STEPS=1 or VERDICTS=1)" },
        { "compare", "resume", COMPARE_ONLY }, { "compare", "dry-run", COMPARE_ONLY }, { "compare", "summary", COMPARE_ONLY },
        { "compare", "simulate", COMPARE_ONLY }, { "compare", "variant", COMPARE_ONLY }, { "compare", "repeat", COMPARE_ONLY },
        { "compare", "measure-peak", COMPARE_ONLY }, { "compare", "allow-change", COMPARE_ONLY },
        { "compare", "launcher", COMPARE_ONLY }, { "compare", "launcher-arg", COMPARE_ONLY }, { "compare", "hostfile", COMPARE_ONLY },
        { "resume", "summary", "--resume continues a launch, --summary prints one: one at a time" },
        { "resume", "dry-run", "--dry-run shows a new launch; a resume runs what is left of one" },
        { "summary", "dry-run", "--dry-run shows a new launch; --summary prints the table of one" },
        { "repeat", "resume", "a resume keeps the launch's REPEAT" },
        { "repeat", "summary", "--repeat starts a new launch" },
        { "simulate", "resume", "--simulate starts a new launch of simulated runs (a simulation has nothing to resume)" },
        { "simulate", "summary", "the table of a simulated launch: --summary without --simulate" },
        { "simulate", "repeat", "a simulation is deterministic, REPEAT would give the same run again" },
        { "launcher", "summary", TRAINS }, { "launcher-arg", "summary", TRAINS }, { "hostfile", "summary", TRAINS },
        { "launcher", "simulate", TRAINS }, { "launcher-arg", "simulate", TRAINS }, { "hostfile", "simulate", TRAINS },
        { "measure-peak", "resume", PEAK }, { "measure-peak", "summary", PEAK }, { "measure-peak", "dry-run", PEAK },
        { "measure-peak", "simulate", PEAK },
    };
    for (size_t i = 0; i < sizeof excl / sizeof excl[0]; i++)
        if (given(on, excl[i].a) && given(on, excl[i].b))
            die_input_hint("give one of them; exp --help says which options go together", "exp: --%s and --%s exclude each other: %s",
                           excl[i].a, excl[i].b, excl[i].why);
    static const char *const output[] = { "csv", "json", "format", "steps", "verdicts", NULL };
    for (int i = 0; output[i]; i++)
        if (given(on, output[i]) && !compare && !summary) {
            char what[160];
            snprintf(what, sizeof what, "--%s goes with --summary or --compare", output[i]);
            usage_error(what);
        }
    if (n_run_ids && !compare) usage_error("--run goes with --compare");
    if (db_opt && !compare) usage_error("--db goes with --compare (a launch's database: --set run.db=PATH)");
    OutputFormat format = csv || format_opt == 1 ? FORMAT_CSV : json || format_opt == 2 ? FORMAT_JSON : FORMAT_TABLE;
    if (steps_out && format == FORMAT_TABLE) format = FORMAT_CSV;   // the step series is a table of numbers
    if (compare) {
        char cpath[1024], db_from[1024];
        const char *dbp = db_opt;
        if (name && *name) {
            resolve_path(name, cpath, sizeof cpath);
            Manifest *m = manifest_load_with(cpath, sets, n_sets);
            if (!dbp) { xsnprintf(db_from, sizeof db_from, "%s", m->variants[0].config.run.db); dbp = db_from; }
            int rc = print_compare(dbp, m->name, launch_ids, n_launch_ids, run_ids, n_run_ids, format, steps_out, verdicts);
            manifest_free(m);
            return rc;
        }
        return print_compare(dbp ? dbp : "runs/boost.db", NULL, launch_ids, n_launch_ids, run_ids, n_run_ids, format, steps_out, verdicts);
    }
    if (n_launch_ids > 1) usage_error("several launches side by side: --compare --launch ID --launch ID (make compare LAUNCH=\"5 6\")");
    if (!name || !*name) usage_error("no experiment named (make exp EXP=name)");
    if (only && !*only) only = NULL;
    if (repeat == 0) repeat = 1;
    if (launch_id && !resume && !summary) usage_error("--launch goes with --resume, --summary or --compare");
    if (n_allow && !resume) usage_error("--allow-change goes with --resume (a new launch has nothing to change)");
    if (simulate && !*simulate) simulate = "a100-80gb-node4";
    HwProfile hw;
    memset(&hw, 0, sizeof hw);
    if (simulate) hw_load_or_die(simulate, "experiments/hardware", &hw);   // an unknown profile: exit 2 before anything
    char path[1024];
    resolve_path(name, path, sizeof path);

    // ---- the table of an earlier launch -------------------------------------------------
    if (summary) {
        Manifest *man = manifest_load_with(path, sets, n_sets);
        if (only) (void)manifest_variant(man, only);    // dies listing the names if unknown
        const char *db_path = man->variants[0].config.run.db;
        RunDB *db = open_existing_db(db_path);
        LaunchRow lr;
        int have = launch_id ? rundb_launch(db, launch_id, &lr) : rundb_latest_launch(db, man->name, &lr);
        if (launch_id && !have) die_input("no launch %lld in %s", (long long)launch_id, db_path);
        if (have && strcmp(lr.experiment, man->name))
            die_input("launch %lld is of experiment %s, not %s", (long long)launch_id, lr.experiment, man->name);
        if (format != FORMAT_TABLE || verdicts) {
            if (!have) die_input_hint("run it first: make exp EXP=<name>", "no launch of %s in %s", man->name, db_path);
            int64_t one = lr.id;
            char dbp[1024];
            xsnprintf(dbp, sizeof dbp, "%s", db_path);
            rundb_launch_row_free(&lr);
            rundb_close(db);
            manifest_free(man);
            return print_compare(dbp, NULL, &one, 1, NULL, 0, format, steps_out, verdicts);
        }
        print_table(db, man, man->name, have ? &lr : NULL);
        if (have) rundb_launch_row_free(&lr);
        rundb_close(db);
        manifest_free(man);
        return 0;
    }

    // ---- the plan: which runs, which launcher, which commands, what is refused ----------
    char self[1024], train_bin[1100], sim_bin[1100];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK_ERRNO(k < 0, "readlink /proc/self/exe");
    self[k] = 0;
    char exp_bin[1024];
    xsnprintf(exp_bin, sizeof exp_bin, "%s", self);
    const char *bin_dir = dirname(self);   // (dirname may modify self: called once)
    xsnprintf(train_bin, sizeof train_bin, "%s/train", bin_dir);
    xsnprintf(sim_bin, sizeof sim_bin, "%s/simulate", bin_dir);
    LaunchEnv env;
    plan_launch_env(&env);
    env.words = launcher; env.n_words = n_launcher;
    env.args = launcher_args; env.n_args = n_launcher_args;
    env.hostfile = hostfile;
    LaunchRequest rq = {
        .path = path, .sets = sets, .n_sets = n_sets, .allow_change = allow, .n_allow_change = n_allow, .only = only, .repeat = repeat, .resume = resume,
        .launch_id = launch_id, .dry = dry, .simulate_profile = simulate ? hw.path : NULL,
        .train_bin = train_bin, .sim_bin = sim_bin, .env = &env,
    };
    // The database named by the manifest (plan_launch refuses variants that name another): a
    // resume reads one that is there; a new launch reads one if there (an edited manifest), and
    // creates it only once the plan is accepted, so a refused launch leaves nothing behind.
    RunDB *db = NULL;
    if (resume || !dry) {
        Manifest *m0 = manifest_load_with(path, sets, n_sets);
        const char *p0 = m0->variants[0].config.run.db;
        struct stat st;
        if (resume) db = open_existing_db(p0);
        else if (lstat(p0, &st) == 0) db = rundb_open(p0);
        manifest_free(m0);
    }
    LaunchPlan plan;
    if (plan_launch(&rq, db, &plan)) die_input_hint(plan.refusal.hint[0] ? plan.refusal.hint : NULL, "%s", plan.refusal.message);
    if (!dry && !db) db = rundb_open(plan.db_path);
    if (db) rundb_mark_stale(db);
    const Manifest *man = plan.man;
    const char *db_path = plan.db_path;
    repeat = plan.repeat;

    printf("experiment %s version %s (%s, sha256 %.12s) — %d variant%s%s\n", man->name,
           man->version[0] ? man->version : "-", path, man->sha256, man->n_variants, man->n_variants == 1 ? "" : "s",
           repeat > 1 ? ", each run REPEAT times interleaved" : "");
    if (man->description[0]) printf("  %s\n", man->description);
    if (plan.uses_launcher)
        printf("launcher: %s (%s; slots: %s)\n", plan.launcher.label, plan.launcher.why, plan.launcher.slots_from);

    // ---- the pre-flight: every variant checked where its ranks run, before any starts ---
    if (!simulate && !dry && plan.n_to_run) {
        PlanResources res;
        char **probe_argv = plan_probe_argv(&plan, exp_bin);
        if (probe_argv) {
            char out[16384];
            int rc = spawn(probe_argv, out, sizeof out);
            if (rc != 0 || !plan_resources_parse(out, &res)) {
                char line[4096] = "";
                for (char **w = probe_argv; *w; w++) shell_append_word(line, sizeof line, *w);
                die_input_hint("check that the launcher works here (the line above, by hand), or name another one with LAUNCHER=",
                               "the pre-flight could not look where the ranks run: %s exited %d%s", line, rc,
                               rc == 0 ? " without its report" : "");
            }
            snprintf(res.where, sizeof res.where, "node %.200s (probed through %.60s)", res.host, plan.launcher.words[0]);
            plan_free_words(probe_argv);
        } else plan_resources_here(&res);
        if (plan_launch_preflight(&plan, &res)) {
            if (!resume) {   // the refused launch is recorded with its reason; nothing ran
                LaunchInfo li;
                char *text = launch_info(&li, &plan);
                int64_t id = rundb_begin_launch(db, &li);
                rundb_refuse_launch(db, id, plan.refusal.message);
                free(text);
                char q[128];
                snprintf(q, sizeof q, "SELECT error FROM launches WHERE id = %lld", (long long)id);
                const char *w[] = { "sqlite3", db_path, q, NULL };
                printf("launch %lld refused before any rank started; its record: ", (long long)id);
                print_command("", w, "\n");
            }
            rundb_close(db);
            die_input_hint(plan.refusal.hint[0] ? plan.refusal.hint : NULL, "%s", plan.refusal.message);
        }
    }

    // ---- a new launch: one load reading and one sgemm peak for all its runs -------------
    LaunchRow *launch = &plan.launch;
    double peak = resume ? launch->peak_gflops : 0, peak_check = 0;
    PeakDecision pd;
    memset(&pd, 0, sizeof pd);
    if (!dry && !resume) {
        LaunchInfo li;
        char *text = launch_info(&li, &plan);
        if (simulate) {   // nothing runs on this host's cores: no peak to measure
            xsnprintf(li.kind, sizeof li.kind, "simulated");
            xsnprintf(li.hardware, sizeof li.hardware, "%s", hw.name);
        } else {
            trainer_set_threads(0);
            peak_check = cpu_sgemm_peak_gflops();
            rundb_decide_peak(db, &li.host, peak_check, li.load_avg, measure_peak, &pd);   // the one decision (db.h)
            fputs(pd.message, stdout);
            peak = pd.gflops;
            li.peak_gflops = peak;
        }
        int64_t id = rundb_begin_launch(db, &li);
        if (!simulate) rundb_set_launch_peak(db, id, &pd);
        free(text);
        CHECK(rundb_launch(db, id, launch), "launch %lld vanished", (long long)id);
        if (simulate)
            printf("launch %lld: every variant simulated on %s (%s) by build/simulate; nothing is trained\n", (long long)id,
                   hw.name, hw.device);
        else
        printf("launch %lld on %s: load average %.2f at start; sgemm peak %.1f GFLOP/s (the host's, all %ld cores: every run's MFU "
               "is relative to it); this launch's check %.1f GFLOP/s (%+.1f%%)\n",
               (long long)id, li.host.host, li.load_avg, peak, sysconf(_SC_NPROCESSORS_ONLN), peak_check,
               100 * (peak_check / peak - 1));
    }
    plan_commands(&plan, launch->id, peak);

    // ---- the runs, in the plan's order ---------------------------------------------------
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    int n_sig;   // the signals build/train stops or checkpoints on (train/stop.h's table); PIPE ignored as it does
    const StopSignal *sigs = stop_signal_table(&n_sig);
    for (int k = 0; k < n_sig; k++)
        if (sigs[k].action == STOP_SIG_STOP || sigs[k].action == STOP_SIG_CHECKPOINT) sigaction(sigs[k].sig, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int failures = 0, completed = 0, planned = 0;
    const ManifestVariant *base = NULL;
    for (int r = 0; r < plan.n_runs && !g_stop; r++) {
        const PlannedRun *pr = &plan.runs[r];
        const ManifestVariant *v = &man->variants[pr->variant];
        if (pr->action == PLAN_RUN_ON_DEMAND) {
            char e[600], vv[600];
            snprintf(e, sizeof e, "EXP=%s", man->name); snprintf(vv, sizeof vv, "VARIANT=%s", v->name);
            const char *w[] = { "make", "exp", e, vv, NULL };
            printf("\n== variant %s: on demand only (", v->name);
            print_command("", w, ") ==\n");
            continue;
        }
        planned++;
        if (pr->action == PLAN_RUN_DONE) {
            printf("\n== variant %s, repeat %d/%d: run %lld (%s) already completed its %d steps: nothing to do ==\n",
                   v->name, pr->repeat_index + 1, repeat, (long long)pr->prior.id, pr->prior.uid, pr->prior.last_step);
            completed++;
            continue;
        }
        if (simulate) printf("\n== variant %s (simulated: %d device%s of %s)", v->name, pr->world, pr->world == 1 ? "" : "s", hw.name);
        else printf("\n== variant %s (%d rank%s)", v->name, pr->world, pr->world == 1 ? "" : "s");
        if (repeat > 1) printf(", repeat %d/%d", pr->repeat_index + 1, repeat);
        printf(" ==\n");
        print_command("$ ", (const char *const *)pr->argv, "\n");
        if (pr->oversubscribed)
            printf("(%d ranks on %d slot%s (%s): the launcher was told to oversubscribe them)\n", pr->world,
                   plan.launcher.slots, plan.launcher.slots == 1 ? "" : "s", plan.launcher.slots_from);
        if (pr->repeat_index == 0) {
            if (!base) {
                base = v;
                if (dry) config_print_table(&v->config, stdout);
                else print_config_brief(&v->config, path, v->name, (const char *const *)plan.all_sets, plan.n_all);
            } else print_config_diff(&base->config, base->name, &v->config);
        }
        fflush(stdout);
        if (dry) {   // and the memory per rank (dry back end: nothing allocated)
            if (pr->repeat_index == 0 && !simulate) { printf("\n"); trainer_memory_print(&v->config, stdout); }
            continue;
        }
        char step[64];
        snprintf(step, sizeof step, "boost.%ld.%d", env.pid, r);
        int rc = run_command(pr->argv, pr->under_launcher && plan.launcher.kind == LAUNCHER_SRUN ? step : NULL);
        // A process that ended without recording its end (SIGKILL, an MPI abort) is
        // recorded by the launcher.
        RunRow after;
        if (rundb_launch_run(db, launch->id, v->name, pr->repeat_index, &after) && !strcmp(after.status, "running")) {
            char msg[256];
            snprintf(msg, sizeof msg, "the run's process ended (%s %d) without recording its end (seen by exp)",
                     rc >= 128 ? "signal" : "exit", rc >= 128 ? rc - 128 : rc);
            // only if its owner is gone: a refused second resume leaves the live run alone
            rundb_mark_orphan(db_path, after.id, rc >= 128 || g_stop ? "interrupted" : "failed", msg);
        }
        if (rc == 0) completed++;
        else if (!g_stop) { fprintf(stderr, "variant %s failed (exit %d)\n", v->name, rc); failures++; }
    }
    if (dry) { if (db) rundb_close(db); plan_free(&plan); hw_free(&hw); return 0; }

    const char *status = g_stop ? "interrupted" : failures ? "failed" : "completed";
    rundb_end_launch(db, launch->id, status);
    print_table(db, man, man->name, launch);
    RunRow *runs;
    int n_runs = rundb_launch_runs(db, launch->id, &runs), n_done = 0;
    for (int i = 0; i < n_runs; i++) n_done += !strcmp(runs[i].status, "completed");
    printf("\nlaunch %lld %s: %d of %d planned runs completed\n", (long long)launch->id, status, completed, planned);
    printf("  runs (runs.id):  ");
    for (int i = 0; i < n_runs; i++) printf("%lld ", (long long)runs[i].id);
    printf("%s\n", n_runs ? "" : "none (no run was recorded)");
    if (n_runs && !simulate) printf("  checkpoints:     %s/<uid>/ (e.g. %s/%s/)\n", man->variants[0].config.run.checkpoint_dir,
                       man->variants[0].config.run.checkpoint_dir, runs[n_runs - 1].uid);
    int in_experiments = !strncmp(path, "experiments/", 12);
    char launch_s[32];
    snprintf(launch_s, sizeof launch_s, "%lld", (long long)launch->id);
    if (simulate) {
        char sq[128];
        snprintf(sq, sizeof sq, "SELECT * FROM simulated_runs WHERE launch_id = %lld", (long long)launch->id);
        const char *w[] = { "sqlite3", "-header", "-column", db_path, sq, NULL };
        print_command("  the split:       ", w, "\n");
    }
    char e_s[600], l_s[64], q_s[128];
    snprintf(e_s, sizeof e_s, "EXP=%s", man->name);
    snprintf(l_s, sizeof l_s, "LAUNCH=%lld", (long long)launch->id);
    snprintf(q_s, sizeof q_s, "SELECT * FROM run_summary WHERE launch_id = %lld", (long long)launch->id);
    if (simulate || !n_done) {
        // a simulated launch: the split above (make figures draws it too); no completed run: nothing to draw
    } else if (in_experiments) {
        const char *w[] = { "make", "figures", e_s, l_s, NULL };
        print_command("  figures:         ", w, "\n");
    } else {
        const char *w[] = { "/usr/bin/python3", "analysis/plot_losses.py", man->name, "--db", db_path, "--launch", launch_s, NULL };
        print_command("  figures:         ", w, "\n");
    }
    { const char *w[] = { "sqlite3", "-header", "-column", db_path, q_s, NULL }; print_command("  query:           ", w, "\n"); }
    if (g_stop) {
        // the launch keeps its overrides, except the one that says where it is recorded
        const char *db_set = NULL;
        for (int i = 0; i < plan.n_all; i++) if (!strncmp(plan.all_sets[i], "run.db=", 7)) db_set = plan.all_sets[i];
        char set_s[1100];
        snprintf(set_s, sizeof set_s, "SET=%s", db_set ? db_set : "");
        if (in_experiments) {
            const char *w[] = { "make", "exp", e_s, "RESUME=1", l_s, db_set ? set_s : NULL, NULL };
            print_command("interrupted: resume with  ", w, "\n");
        } else {
            const char *w[] = { argv[0], path, "--resume", "--launch", launch_s, db_set ? "--set" : NULL, db_set, NULL };
            print_command("interrupted: resume with  ", w, "\n");
        }
    }
    free(runs);
    rundb_close(db);
    hw_free(&hw);
    plan_free(&plan);
    free(sets); free(launcher); free(launcher_args); free(launch_ids); free(run_ids);
    if (g_stop) {
        fflush(stdout); fflush(stderr);
        // Under `make exp` (the Makefile sets BOOST_EXP_UNDER_MAKE and execs this process,
        // so make is the parent): make turns any exit code into its own 2, but dies by the
        // signal it receives. Handing make the same signal makes the shell see 128+N,
        // exp's own exit code, after everything above is printed.
        const char *under_make = getenv("BOOST_EXP_UNDER_MAKE");
        if (under_make && !strcmp(under_make, "1") && parent_is_make()) kill(getppid(), g_stop);
    }
    return g_stop ? 128 + g_stop : failures ? 1 : 0;
}
