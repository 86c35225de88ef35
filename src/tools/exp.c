// exp — run an experiment as one launch: every variant of experiments/<name>.yaml (or
// one), REPEAT times interleaved (A B A B ...), each run its own training process (under
// mpirun when the variant asks for several ranks), all recorded under one `launches` row
// (manifest text and hash, overrides, host, load, one measured sgemm peak); then the
// table comparing the variants from the runs of that launch. `exp --help` lists the
// options; `make exp EXP=name [VARIANT=v] [SET="k=v ..."] [REPEAT=n] [RESUME=1]
// [LAUNCH=id] [SUMMARY=1] [DRY_RUN=1]` calls this.
#include <dirent.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../backend/backend.h"
#include "../config/manifest.h"
#include "../core/check.h"
#include "../core/fs.h"
#include "../core/shellword.h"
#include "../core/env.h"
#include "../store/compare.h"
#include "../store/db.h"
#include "../store/host.h"
#include "../sim/hardware.h"
#include "../train/memory_fit.h"
#include "../train/stop.h"
#include "../train/trainer.h"

static const char *USAGE =
"usage: exp NAME|PATH [--variant V] [--set key=value]... [--repeat N] [--dry-run]\n"
"       exp NAME|PATH --resume [--launch ID] [--set key=value]...\n"
"       exp NAME|PATH --summary [--launch ID] [--csv|--json] [--steps]\n"
"       exp [NAME|PATH] --compare [--launch ID]... [--run ID]... [--db PATH] [--csv|--json] [--steps]\n"
"       exp NAME|PATH --simulate PROFILE [--variant V] [--set key=value]... [--dry-run]\n"
"\n"
"Runs experiments/NAME.yaml as one launch: each variant (those marked run.on_demand only\n"
"when named) as its own training process, the variants REPEAT times interleaved, then\n"
"a table comparing the variants from the completed runs of this launch.\n"
"\n"
"  --variant V        only this variant (make exp VARIANT=V)\n"
"  --set key=value    override a configuration key in every variant (make exp SET=\"k=v k2=v2\")\n"
"  --repeat N         run the variants N times, interleaved A B A B ... (make exp REPEAT=N):\n"
"                     the table gives the median step time and its min..max over the repeats\n"
"  --dry-run          print each variant's launch command and configuration; run nothing\n"
"  --measure-peak     measure this host's sgemm peak again and store it (make exp MEASURE_PEAK=1); by\n"
"                     default the peak stored for this machine (host, CPU model, cores) is reused\n"
"  --resume           continue a launch (the latest, or --launch ID): runs not completed\n"
"                     resume from their newest checkpoint with their stored overrides (one\n"
"                     stopped before its first checkpoint: from step 0, as the same run),\n"
"                     runs not started start, completed runs are left alone (make exp RESUME=1)\n"
"  --summary          print the comparison table of a launch (the latest, or --launch ID)\n"
"  --launch ID        the launch for --resume or --summary (make exp LAUNCH=ID); --compare: repeatable\n"
"  --compare          the runs of several launches (--launch ID ..., make compare LAUNCH=\"5 6\") or\n"
"                     runs (--run ID ..., make compare RUNS=\"7 9\") side by side, one row per launch and\n"
"                     variant, the configuration keys on which they differ as columns; without ids:\n"
"                     the latest two launches of NAME\n"
"  --run ID           a run for --compare (repeatable)\n"
"  --db PATH          the run database of --compare (default: NAME's run.db, else runs/boost.db)\n"
"  --csv, --json      --summary and --compare as CSV or JSON on stdout (make compare FORMAT=csv|json)\n"
"  --steps            with --csv/--json: every logged step of the runs instead (make compare STEPS=1)\n"
"  --simulate PROFILE price every variant (on-demand ones included) with build/simulate on the\n"
"                     hardware profile experiments/hardware/PROFILE.yaml instead of training it\n"
"                     (make exp SIMULATE=1 [HARDWARE=PROFILE], default a100-80gb-node4): one\n"
"                     launch whose runs are of kind `simulated` (docs/performance-model.md)\n"
"  --help             this text\n"
"\n"
"Exit: 0 every run completed (or nothing left to do), 1 a run failed or diverged,\n"
"2 bad input or environment, 128+N interrupted by signal N (resume with --resume).\n";

static void usage_error(const char *what) { die_input_hint(USAGE, "exp: %s", what); }

// ---- signals: the launcher stops launching, lets the running variant record itself ---
static volatile sig_atomic_t g_stop;
static volatile pid_t g_child;
static void on_signal(int sig) {
    if (!g_stop) g_stop = sig;
    // Ctrl-C reaches the whole foreground process group (the child too); a signal sent to
    // this process alone is passed on, so the run records 'interrupted' itself (a scheduler's
    // warning as itself: the run then writes its checkpoint; train/stop.h).
    if (sig != SIGINT && g_child > 0) kill(g_child, stop_signal_action(sig) == STOP_SIG_CHECKPOINT ? sig : SIGTERM);
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
typedef struct { const char **v; int n, cap; } Args;
static void args_push(Args *a, const char *s) {
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? 2 * a->cap : 32;
        a->v = realloc(a->v, (size_t)a->cap * sizeof *a->v);
        CHECK(a->v, "out of memory");
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

static int run_command(const char *const *argv) {
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    g_child = pid;
    int status;
    while (waitpid(pid, &status, 0) < 0) CHECK_ERRNO(errno != EINTR, "waitpid");
    g_child = 0;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Is `prog` an executable on PATH? (A missing mpirun is the environment's fault: exit 2
// before anything runs, not a failed variant.)
static int on_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *copy = xstrdup(path), *save = NULL;
    int found = 0;
    for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", d, prog);
        found = access(p, X_OK) == 0;
    }
    free(copy);
    return found;
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

// ---- the host's sgemm peak: measured once per machine, stored, reused ----------------------
// MFU of two launches is comparable only against one peak: the stored one of this machine
// (host name, CPU model, cores) is reused; the first launch on a machine, or --measure-peak,
// stores `measured` (this launch's sgemm, taken at load `load`). Returns the peak to use.
static double host_peak_for_launch(RunDB *db, const HostFacts *h, double load, double measured, int remeasure) {
    HostPeak hp;
    int have = rundb_host_peak(db, h, &hp);
    if (have && !remeasure) {
        printf("sgemm peak of this machine: %.1f GFLOP/s, measured %s at load %.2f (host_peaks %lld; MEASURE_PEAK=1 "
               "measures it again)\n", hp.gflops, hp.measured_at, hp.load_avg, (long long)hp.id);
        if (load >= 0 && hp.load_avg >= 0 && fabs(load - hp.load_avg) >= 1.0)
            printf("warning: the load is %.2f now and was %.2f when the peak was measured: the runs' speed (and MFU) "
                   "is not comparable with launches at another load\n", load, hp.load_avg);
        return hp.gflops;
    }
    int64_t id = rundb_store_host_peak(db, h, measured, load);
    printf("sgemm peak of this machine: %.1f GFLOP/s, measured now at load %.2f and stored (host_peaks %lld)%s\n", measured,
           load, (long long)id, have ? ", replacing the earlier one for later launches" : ": later launches reuse it");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (load >= (double)cores)
        printf("warning: the peak was measured at load %.2f on %ld cores: other work took cores from it, so it is likely "
               "below this machine's peak and MFU above it; measure it again on a quieter machine (MEASURE_PEAK=1)\n",
               load, cores);
    return measured;
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
    printf("%-28s %5s %6s %9s %9s %9s %21s %10s %6s %10s %11s %8s\n", "variant", "runs", "steps", "loss", "val loss",
           "ms/step", "spread", "tokens/s", "MFU", "peak mem", "comm/step", "calls");
    int spread_runs = 0, spread_steps = 0;
    for (int i = 0; i < n; i++) {
        const VariantSummary *s = &vs[i];
        char mem[32], comm[32], val[32], loss[32], ms[32], spread[48], tps[32], mfu[32], runs_col[16];
        store_format_bytes(mem, sizeof mem, (double)s->peak_memory);
        store_format_comm_bytes(comm, sizeof comm, (double)s->comm_bytes);
        snprintf(loss, sizeof loss, isnan(s->final_loss) ? "-" : "%.4f", s->final_loss);
        snprintf(val, sizeof val, isnan(s->val_loss) ? "-" : "%.4f", s->val_loss);
        snprintf(ms, sizeof ms, isnan(s->ms_per_step) ? "-" : s->ms_per_step < 10 ? "%.3f" : "%.1f", s->ms_per_step);
        snprintf(tps, sizeof tps, isnan(s->tokens_per_s) ? "-" : "%.0f", s->tokens_per_s);
        snprintf(mfu, sizeof mfu, isnan(s->mfu) ? "-" : "%.1f%%", 100 * s->mfu);
        if (isnan(s->ms_lo)) snprintf(spread, sizeof spread, "-");
        else snprintf(spread, sizeof spread, "%.1f-%.1f %s", s->ms_lo, s->ms_hi, s->n_completed > 1 ? "runs" : "p10-90");
        if (s->n_completed > 1) spread_runs = 1; else if (!isnan(s->ms_lo)) spread_steps = 1;
        snprintf(runs_col, sizeof runs_col, "%d/%d", s->n_completed, s->n_runs);
        if (s->n_completed == 0) { snprintf(mem, sizeof mem, "-"); snprintf(comm, sizeof comm, "-"); }
        char alias[64];
        store_variant_alias(s->variant, alias, sizeof alias);   // a long grid name: a short alias, the key below
        printf("%-28s %5s %6d %9s %9s %9s %21s %10s %6s %10s %11s %8lld\n", alias, runs_col, s->steps, loss, val, ms,
               spread, tps, mfu, mem, comm, (long long)s->comm_calls);
    }
    for (int i = 0; i < n; i++) {
        char alias[64];
        store_variant_alias(vs[i].variant, alias, sizeof alias);
        if (strcmp(alias, vs[i].variant)) printf("  %s = %s\n", alias, vs[i].variant);
    }
    if (simulated)
        printf("modeled: one simulated step per run on profile %s (no loss: nothing is computed). ms/step: the modeled\n"
               "step time; MFU against the profile's peak x devices; peak mem: the largest rank's modeled total;\n"
               "comm/step: rank 0's collectives. The split: sqlite3 %s \"SELECT * FROM simulated_runs WHERE launch_id = %lld\"\n",
               launch->hardware, rundb_path(db), (long long)launch->id);
    else
    printf("runs: completed/total (only completed runs enter the numbers). ms/step: median step time after warm-up\n"
           "(the first max(1, steps/10) steps), median over the runs. spread: %s%s%s. tokens/s = tokens per step /\n"
           "median step time. MFU against the %s sgemm peak. peak mem: the largest peak resident set (RSS) of any\n"
           "rank's process. comm/step and calls: rank 0's collectives per step (all phases, forward and backward).\n",
           spread_runs ? "min-max of the run medians (\"runs\")" : "", spread_runs && spread_steps ? "; " : "",
           spread_steps ? "10th-90th percentile of the single run's steps (\"p10-90\")" : !spread_runs ? "-" : "",
           launch ? "host's stored (host_peaks, the launch's peak_gflops)" : "runs'");
    if (launch && !simulated && launch->repeat == 1 && n > 0)
        printf("REPEAT=1: one run per variant gives no spread over runs; p10-90 is the spread of one run's steps, and a\n"
               "difference between variants smaller than the machine's noise between runs cannot be told apart (REPEAT=3).\n");
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

// ---- a variant that cannot fit this machine ----------------------------------------------
// Refused here, once, before mpirun starts its ranks (each would print the same refusal, then
// mpirun its own boilerplate): the pre-flight build/train makes too (train/memory_fit.h).
static void refuse_if_too_big(const ManifestVariant *v, const char *experiment) {
    const Config *c = &v->config;
    trainer_refuse_unless_fits(c, -1, c->parallel.tp * c->parallel.pp * c->parallel.dp, experiment, v->name);
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

// The launch's overrides, then the new ones; one assignment per key (the last wins).
static int merge_sets(char **first, int n1, const char **second, int n2, const char **out) {
    const char **all = xcalloc((size_t)(n1 + n2 + 1), sizeof *all);
    int n = 0, k = 0;
    for (int i = 0; i < n1; i++) all[n++] = first[i];
    for (int i = 0; i < n2; i++) all[n++] = second[i];
    for (int i = 0; i < n; i++) {
        size_t kl = strcspn(all[i], "=");
        int later = 0;
        for (int j = i + 1; j < n && !later; j++) later = strcspn(all[j], "=") == kl && !strncmp(all[i], all[j], kl);
        if (!later) out[k++] = all[i];
    }
    free(all);
    return k;
}

// ---- several launches or runs side by side, and exports ---------------------------------
// --compare: the runs of the launches and the runs named, in that order (no ids: the latest
// two launches of the experiment); --summary --csv/--json: the runs of one launch. Text,
// CSV or JSON summaries (compare.h), or the step series with --steps.
static int print_compare(const char *db_path, const char *experiment, const int64_t *launches, int n_launches,
                         const int64_t *run_ids, int n_run_ids, OutputFormat format, int steps) {
    struct stat st;
    if (stat(db_path, &st) != 0)
        die_input_hint("run an experiment first (make exp EXP=name), or name the database (make compare DB=path)",
                       "%s: no run database there", db_path);
    RunDB *db = rundb_open(db_path);
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
        if (format == FORMAT_TABLE)
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
    else compare_print(db, ids, n, format, stdout);
    free(ids);
    rundb_close(db);
    return 0;
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    const char *name = NULL, *only = NULL;
    int resume = 0, dry = 0, summary = 0, repeat = 1;
    const char *simulate = NULL;
    int64_t launch_id = 0;
    int compare = 0, measure_peak = 0, steps_out = 0, n_launch_ids = 0, n_run_ids = 0;
    OutputFormat format = FORMAT_TABLE;
    const char *db_opt = NULL;
    int64_t *launch_ids = xcalloc((size_t)argc + 1, sizeof *launch_ids), *run_ids = xcalloc((size_t)argc + 1, sizeof *run_ids);
    const char **sets = xcalloc((size_t)argc + 1, sizeof(char *)); int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(USAGE, stdout); return 0; }
        else if (!strcmp(a, "--variant")) { if (!has_val) usage_error("--variant needs a name"); only = argv[++i]; }
        else if (!strcmp(a, "--resume")) resume = 1;
        else if (!strcmp(a, "--dry-run")) dry = 1;
        else if (!strcmp(a, "--summary")) summary = 1;
        else if (!strcmp(a, "--simulate")) { if (!has_val) usage_error("--simulate needs a hardware profile"); simulate = argv[++i]; }
        else if (!strcmp(a, "--set")) { if (!has_val) usage_error("--set needs key=value"); sets[n_sets++] = argv[++i]; }
        else if (!strcmp(a, "--compare")) compare = 1;
        else if (!strcmp(a, "--measure-peak")) measure_peak = 1;
        else if (!strcmp(a, "--csv")) format = FORMAT_CSV;
        else if (!strcmp(a, "--json")) format = FORMAT_JSON;
        else if (!strcmp(a, "--steps")) steps_out = 1;
        else if (!strcmp(a, "--db")) { if (!has_val) usage_error("--db needs a path"); db_opt = argv[++i]; }
        else if (!strcmp(a, "--repeat") || !strcmp(a, "--launch") || !strcmp(a, "--run")) {
            if (!has_val) usage_error("--repeat, --launch and --run need a number");
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || v < 1 || v > 1000000000L) die_input("%s: expected a whole number >= 1, got '%s'", a, argv[i]);
            if (!strcmp(a, "--repeat")) repeat = (int)v;
            else if (!strcmp(a, "--run")) run_ids[n_run_ids++] = v;
            else { launch_id = v; launch_ids[n_launch_ids++] = v; }
        }
        else if (a[0] == '-') die_input("unknown option '%s' (see exp --help)", a);
        else if (!name) name = a;
        else usage_error("one experiment at a time");
    }
    if (steps_out && format == FORMAT_TABLE) usage_error("--steps goes with --csv or --json");
    if ((format != FORMAT_TABLE || steps_out) && !compare && !summary) usage_error("--csv, --json and --steps go with --summary or --compare");
    if ((n_run_ids || db_opt) && !compare) usage_error("--run and --db go with --compare");
    if (compare) {
        if (resume || dry || summary || simulate || only || repeat > 1)
            usage_error("--compare reads the database only: it takes --launch, --run, --db, --csv, --json, --steps "
                        "(and --set run.db=PATH with an experiment name)");
        char cpath[1024], db_from[1024];
        const char *dbp = db_opt;
        if (name && *name) {
            resolve_path(name, cpath, sizeof cpath);
            Manifest *m = manifest_load_with(cpath, sets, n_sets);
            if (!dbp) { xsnprintf(db_from, sizeof db_from, "%s", m->variants[0].config.run.db); dbp = db_from; }
            int rc = print_compare(dbp, m->name, launch_ids, n_launch_ids, run_ids, n_run_ids, format, steps_out);
            manifest_free(m);
            return rc;
        }
        return print_compare(dbp ? dbp : "runs/boost.db", NULL, launch_ids, n_launch_ids, run_ids, n_run_ids, format, steps_out);
    }
    if (n_launch_ids > 1) usage_error("several launches side by side: --compare --launch ID --launch ID (make compare LAUNCH=\"5 6\")");
    if (!name || !*name) usage_error("no experiment named (make exp EXP=name)");
    if (only && !*only) only = NULL;
    if (resume + summary + dry > 1) usage_error("--resume, --summary and --dry-run exclude each other");
    if (repeat > 1 && (resume || summary)) usage_error("--repeat starts a new launch (a resume keeps the launch's REPEAT)");
    if (launch_id && !resume && !summary) usage_error("--launch goes with --resume or --summary");
    if (simulate && !*simulate) simulate = "a100-80gb-node4";
    if (simulate && (resume || summary))
        usage_error("--simulate starts a new launch of simulated runs (a simulation has nothing to resume; "
                    "the table of a simulated launch: --summary without --simulate)");
    if (simulate && repeat > 1) usage_error("--simulate: a simulation is deterministic, REPEAT would give the same run again");
    HwProfile hw;
    memset(&hw, 0, sizeof hw);
    if (simulate) hw_load_or_die(simulate, "experiments/hardware", &hw);   // an unknown profile: exit 2 before anything
    char path[1024];
    resolve_path(name, path, sizeof path);
    Manifest *man = manifest_load_with(path, sets, n_sets);
    if (only) (void)manifest_variant(man, only);    // dies listing the names if unknown
    char db_path[1024];   // (man is reloaded by a resume)
    xsnprintf(db_path, sizeof db_path, "%s", man->variants[0].config.run.db);
    // A launch and its runs live in one database: a variant recording elsewhere would put
    // its run under a launch id that means another launch (or nothing) in that database.
    for (int v = 1; v < man->n_variants; v++)
        if (strcmp(man->variants[v].config.run.db, db_path) && (!only || !strcmp(man->variants[v].name, only)))
            die_input_hint("set run.db once for the whole experiment (top-level run: db:), not per variant",
                           "%s: variant %s sets run.db=%s, but the launch is recorded in %s (the first variant's); "
                           "a launch and all its runs must be in one database", path, man->variants[v].name,
                           man->variants[v].config.run.db, db_path);

    // ---- the table of an earlier launch -------------------------------------------------
    if (summary) {
        RunDB *db = rundb_open(db_path);
        LaunchRow lr;
        int have = launch_id ? rundb_launch(db, launch_id, &lr) : rundb_latest_launch(db, man->name, &lr);
        if (launch_id && !have) die_input("no launch %lld in %s", (long long)launch_id, db_path);
        if (have && strcmp(lr.experiment, man->name))
            die_input("launch %lld is of experiment %s, not %s", (long long)launch_id, lr.experiment, man->name);
        if (format != FORMAT_TABLE) {
            if (!have) die_input_hint("run it first: make exp EXP=<name>", "no launch of %s in %s", man->name, db_path);
            int64_t one = lr.id;
            rundb_launch_row_free(&lr);
            rundb_close(db);
            manifest_free(man);
            return print_compare(db_path, NULL, &one, 1, NULL, 0, format, steps_out);
        }
        print_table(db, man, man->name, have ? &lr : NULL);
        if (have) rundb_launch_row_free(&lr);
        rundb_close(db);
        manifest_free(man);
        return 0;
    }

    // ---- a resume continues a launch with its own overrides ----------------------------
    RunDB *db = NULL;
    LaunchRow launch = {0};
    const char **all_sets = sets; int n_all = n_sets;
    if (resume) {
        db = rundb_open(db_path);
        rundb_mark_stale(db);
        int have = launch_id ? rundb_launch(db, launch_id, &launch) : rundb_latest_launch(db, man->name, &launch);
        if (!have) {
            const char *hint = "start one with make exp EXP=<name>; a run made by hand resumes with build/train FILE --variant V --resume";
            if (launch_id) die_input_hint(hint, "no launch %lld in %s", (long long)launch_id, db_path);
            die_input_hint(hint, "no launch of %s in %s to resume", man->name, db_path);
        }
        if (strcmp(launch.experiment, man->name))
            die_input("launch %lld is of experiment %s, not %s", (long long)launch.id, launch.experiment, man->name);
        if (strcmp(launch.manifest_sha256, man->sha256))
            die_input_hint("restore the manifest of the launch, or start a new launch (make exp without RESUME)",
                           "%s changed since launch %lld (sha256 %.12s..., now %.12s...): a launch is resumed with its own manifest",
                           path, (long long)launch.id, launch.manifest_sha256, man->sha256);
        all_sets = xcalloc((size_t)(launch.n_overrides + n_sets + 1), sizeof *all_sets);
        n_all = merge_sets(launch.overrides, launch.n_overrides, sets, n_sets, all_sets);
        manifest_free(man);
        man = manifest_load_with(path, all_sets, n_all);
        if (!only && launch.variant_filter[0]) only = launch.variant_filter;
        if (only) (void)manifest_variant(man, only);
        repeat = launch.repeat;
    }

    // The train binary next to this one.
    char self[1024], train_bin[1100], sim_bin[1100];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK_ERRNO(k < 0, "readlink /proc/self/exe");
    self[k] = 0;
    const char *bin_dir = dirname(self);   // (dirname may modify self: called once)
    xsnprintf(train_bin, sizeof train_bin, "%s/train", bin_dir);
    xsnprintf(sim_bin, sizeof sim_bin, "%s/simulate", bin_dir);

    printf("experiment %s version %s (%s, sha256 %.12s) — %d variant%s%s\n", man->name,
           man->version[0] ? man->version : "-", path, man->sha256, man->n_variants, man->n_variants == 1 ? "" : "s",
           repeat > 1 ? ", each run REPEAT times interleaved" : "");
    if (man->description[0]) printf("  %s\n", man->description);

    // A variant too big for this machine: refused before the launch is recorded or anything runs.
    if (!simulate && !dry)
        for (int i = 0; i < man->n_variants; i++) {
            const ManifestVariant *v = &man->variants[i];
            if (only ? !strcmp(v->name, only) : !v->config.run.on_demand) refuse_if_too_big(v, man->name);
        }

    // ---- a new launch: one load reading and one sgemm peak for all its runs -------------
    double peak = resume ? launch.peak_gflops : 0, peak_check = 0;
    if (!dry && !resume) {
        db = rundb_open(db_path);
        rundb_mark_stale(db);
        // An edited manifest must get a new version: results of one version come from one text.
        RunRow first;
        int nc = rundb_manifest_conflicts(db, man->name, man->version, man->sha256, &first);
        if (nc > 0)
            die_input_hint("bump `version:` in the manifest (results of one version must come from one text), or use another run.db",
                           "%s changed since run %s (version %s, sha256 %.12s...) was recorded in %s; its content is now %.12s...",
                           path, first.uid, man->version, first.manifest_sha256, db_path, man->sha256);
        LaunchInfo li;
        memset(&li, 0, sizeof li);
        xsnprintf(li.experiment, sizeof li.experiment, "%s", man->name);
        xsnprintf(li.manifest_path, sizeof li.manifest_path, "%s", path);
        xsnprintf(li.experiment_version, sizeof li.experiment_version, "%s", man->version);
        xsnprintf(li.manifest_sha256, sizeof li.manifest_sha256, "%s", man->sha256);
        li.manifest_format = man->manifest_version;
        char *text = fs_read_text(path);
        li.manifest_text = text;
        li.overrides = sets; li.n_overrides = n_sets;
        xsnprintf(li.variant_filter, sizeof li.variant_filter, "%s", only ? only : "");
        li.repeat = repeat;
        li.load_avg = host_load_average();
        host_facts(&li.host);
        if (simulate) {   // nothing runs on this host's cores: no peak to measure
            xsnprintf(li.kind, sizeof li.kind, "simulated");
            xsnprintf(li.hardware, sizeof li.hardware, "%s", hw.name);
        } else {
            trainer_set_threads(0);
            peak_check = cpu_sgemm_peak_gflops();
            peak = host_peak_for_launch(db, &li.host, li.load_avg, peak_check, measure_peak);
            li.peak_gflops = peak;
        }
        int64_t id = rundb_begin_launch(db, &li);
        if (!simulate) rundb_set_launch_peak_check(db, id, peak_check);
        free(text);
        CHECK(rundb_launch(db, id, &launch), "launch %lld vanished", (long long)id);
        if (simulate)
            printf("launch %lld: every variant simulated on %s (%s) by build/simulate; nothing is trained\n", (long long)id,
                   hw.name, hw.device);
        else
        printf("launch %lld on %s: load average %.2f at start; sgemm peak %.1f GFLOP/s (the host's, all %ld cores: every run's MFU "
               "is relative to it); this launch's check %.1f GFLOP/s (%+.1f%%)\n",
               (long long)id, li.host.host, li.load_avg, peak, sysconf(_SC_NPROCESSORS_ONLN), peak_check,
               100 * (peak_check / peak - 1));
    }

    // ---- the plan: REPEAT rounds of the variants, interleaved ---------------------------
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
    int mpirun_checked = 0;
    char peak_s[40], launch_s[32];
    snprintf(peak_s, sizeof peak_s, "%.17g", peak);   // exact: runs record the launch's peak
    snprintf(launch_s, sizeof launch_s, "%lld", (long long)launch.id);
    for (int r = 0; r < repeat && !g_stop; r++) {
        for (int i = 0; i < man->n_variants && !g_stop; i++) {
            const ManifestVariant *v = &man->variants[i];
            if (only && strcmp(v->name, only)) continue;
            if (!only && v->config.run.on_demand && !simulate) {
                if (r == 0) {
                    char e[600], vv[600];
                    snprintf(e, sizeof e, "EXP=%s", man->name); snprintf(vv, sizeof vv, "VARIANT=%s", v->name);
                    const char *w[] = { "make", "exp", e, vv, NULL };
                    printf("\n== variant %s: on demand only (", v->name);
                    print_command("", w, ") ==\n");
                }
                continue;
            }
            planned++;
            const ParallelConfig *pc = &v->config.parallel;
            int world = pc->tp * pc->pp * pc->dp;
            char np[16], rep_s[16];
            snprintf(np, sizeof np, "%d", world);
            snprintf(rep_s, sizeof rep_s, "%d", r);
            RunRow prior;
            int have_prior = resume && rundb_launch_run(db, launch.id, v->name, r, &prior);
            if (have_prior && !strcmp(prior.status, "completed") && prior.last_step >= v->config.train.steps) {
                printf("\n== variant %s, repeat %d/%d: run %lld (%s) already completed its %d steps: nothing to do ==\n",
                       v->name, r + 1, repeat, (long long)prior.id, prior.uid, prior.last_step);
                completed++;
                continue;
            }
            Args cmd = {0};
            if (simulate) {   // the simulated run records itself (kind simulated) in the launch
                args_push(&cmd, sim_bin); args_push(&cmd, path); args_push(&cmd, "--variant"); args_push(&cmd, v->name);
                args_push(&cmd, "--hardware"); args_push(&cmd, hw.path);
                for (int s = 0; s < n_all; s++) { args_push(&cmd, "--set"); args_push(&cmd, all_sets[s]); }
                if (!dry) {
                    args_push(&cmd, "--record");
                    args_push(&cmd, "--launch"); args_push(&cmd, launch_s);
                    args_push(&cmd, "--repeat-index"); args_push(&cmd, rep_s);
                }
            } else if (world > 1) {
                if (!mpirun_checked++ && !on_path("mpirun"))
                    die_input("variant %s needs %d ranks, but mpirun is not on PATH (Debian: apt-get install openmpi-bin)",
                              v->name, world);
                args_push(&cmd, "mpirun"); args_push(&cmd, "-np"); args_push(&cmd, np); args_push(&cmd, "--oversubscribe");
                if (geteuid() == 0) args_push(&cmd, "--allow-run-as-root");
                // mpirun sends SIGTERM then SIGKILL: leave the ranks time to record 'interrupted'
                args_push(&cmd, "--mca"); args_push(&cmd, "odls_base_sigkill_timeout"); args_push(&cmd, "5");
            }
            if (!simulate) { args_push(&cmd, train_bin); args_push(&cmd, path); args_push(&cmd, "--variant"); args_push(&cmd, v->name);
            args_push(&cmd, "--no-config-table"); }
            char resume_arg[300];
            if (simulate) {
            } else if (have_prior) {
                snprintf(resume_arg, sizeof resume_arg, "--resume=%s", prior.uid);
                args_push(&cmd, resume_arg);
                args_push(&cmd, "--peak-gflops"); args_push(&cmd, peak_s);   // the launch's one peak, again
                for (int s = 0; s < n_sets; s++) { args_push(&cmd, "--set"); args_push(&cmd, sets[s]); }   // new ones only: train adds the stored
            } else {
                for (int s = 0; s < n_all; s++) { args_push(&cmd, "--set"); args_push(&cmd, all_sets[s]); }
                if (!dry) {
                    args_push(&cmd, "--launch"); args_push(&cmd, launch_s);
                    args_push(&cmd, "--repeat-index"); args_push(&cmd, rep_s);
                    args_push(&cmd, "--peak-gflops"); args_push(&cmd, peak_s);
                }
            }
            if (simulate) printf("\n== variant %s (simulated: %d device%s of %s)", v->name, world, world == 1 ? "" : "s", hw.name);
            else printf("\n== variant %s (%d rank%s)", v->name, world, world == 1 ? "" : "s");
            if (repeat > 1) printf(", repeat %d/%d", r + 1, repeat);
            printf(" ==\n");
            print_command("$ ", cmd.v, "\n");
            if (r == 0) {
                if (!base) { base = v; config_print_table(&v->config, stdout); }
                else print_config_diff(&base->config, base->name, &v->config);
            }
            fflush(stdout);
            if (dry) {   // and the memory per rank (dry back end: nothing allocated)
                if (r == 0 && !simulate) { printf("\n"); trainer_memory_print(&v->config, stdout); }
                free(cmd.v);
                continue;
            }
            int rc = run_command(cmd.v);
            free(cmd.v);
            // A process that ended without recording its end (SIGKILL, an MPI abort) is
            // recorded by the launcher.
            RunRow after;
            if (rundb_launch_run(db, launch.id, v->name, r, &after) && !strcmp(after.status, "running")) {
                char msg[256];
                snprintf(msg, sizeof msg, "the run's process ended (%s %d) without recording its end (seen by exp)",
                         rc >= 128 ? "signal" : "exit", rc >= 128 ? rc - 128 : rc);
                // only if its owner is gone: a refused second resume leaves the live run alone
                rundb_mark_orphan(db_path, after.id, rc >= 128 || g_stop ? "interrupted" : "failed", msg);
            }
            if (rc == 0) completed++;
            else if (!g_stop) { fprintf(stderr, "variant %s failed (exit %d)\n", v->name, rc); failures++; }
        }
    }
    if (dry) { manifest_free(man); return 0; }

    const char *status = g_stop ? "interrupted" : failures ? "failed" : "completed";
    rundb_end_launch(db, launch.id, status);
    print_table(db, man, man->name, &launch);
    RunRow *runs;
    int n_runs = rundb_launch_runs(db, launch.id, &runs);
    printf("\nlaunch %lld %s: %d of %d planned runs completed\n", (long long)launch.id, status, completed, planned);
    printf("  runs (runs.id):  ");
    for (int i = 0; i < n_runs; i++) printf("%lld ", (long long)runs[i].id);
    printf("%s\n", n_runs ? "" : "none (no run was recorded)");
    if (n_runs && !simulate) printf("  checkpoints:     %s/<uid>/ (e.g. %s/%s/)\n", man->variants[0].config.run.checkpoint_dir,
                       man->variants[0].config.run.checkpoint_dir, runs[n_runs - 1].uid);
    int in_experiments = !strncmp(path, "experiments/", 12);
    if (simulate) {
        char sq[128];
        snprintf(sq, sizeof sq, "SELECT * FROM simulated_runs WHERE launch_id = %lld", (long long)launch.id);
        const char *w[] = { "sqlite3", "-header", "-column", db_path, sq, NULL };
        print_command("  the split:       ", w, "\n");
    }
    char e_s[600], l_s[64], q_s[128];
    snprintf(e_s, sizeof e_s, "EXP=%s", man->name);
    snprintf(l_s, sizeof l_s, "LAUNCH=%lld", (long long)launch.id);
    snprintf(q_s, sizeof q_s, "SELECT * FROM run_summary WHERE launch_id = %lld", (long long)launch.id);
    if (simulate) {
        // a simulated launch: the split above (make figures draws it too)
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
        for (int i = 0; i < n_all; i++) if (!strncmp(all_sets[i], "run.db=", 7)) db_set = all_sets[i];
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
    rundb_launch_row_free(&launch);
    if (all_sets != sets) free(all_sets);
    hw_free(&hw);
    manifest_free(man);
    free(sets);
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
