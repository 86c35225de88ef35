// train — train one variant of a manifest (or a plain configuration file).
// Single process, or under mpirun with parallel.tp * pp * dp ranks. Prints the resolved
// configuration, one line per step, validation losses; records the run in run.db.
// `train --help` prints the options; exit codes: src/train/run.h.
// Started without an MPI launcher and with tp·pp·dp = 1, it never initialises MPI (a
// machine without Open MPI's runtime, docs/gpu.md): the grid is the single-process one.
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include "../config/manifest.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../parallel/comm.h"
#include "../parallel/gpu_setup.h"
#include "../store/db.h"
#include "../train/run.h"
#include "../train/stop.h"
#include "../train/trainer.h"

static const char *USAGE =
"usage: train FILE.yaml [--variant NAME] [--set key=value]... [--resume[=UID]] [--no-db]\n"
"\n"
"Trains one variant of a manifest (experiments/*.yaml) or a plain configuration file,\n"
"on one process or under `mpirun -np tp*pp*dp`. Every run is recorded in run.db.\n"
"\n"
"  --variant NAME      the manifest variant to train (needed when it has several)\n"
"  --set key=value     override one configuration key (repeatable; docs/configuration.md)\n"
"  --resume            continue the latest run of (experiment, variant) from its newest\n"
"                      checkpoint, with the overrides it was started with (stored in\n"
"                      run.db) plus any --set given now; a completed run is left alone;\n"
"                      one stopped before its first checkpoint trains again from step 0\n"
"                      as the same run (its row and uid)\n"
"  --resume=UID        continue that run (runs.uid; the variant is taken from it)\n"
"  --no-db             do not record the run (stdout only; no resume possible)\n"
"  --signals           the signals this program stops, checkpoints, ignores or leaves at\n"
"                      their default on, one a line (docs/reliability.md)\n"
"  --help              this text\n"
"options set by `exp` (make exp):\n"
"  --launch ID --repeat-index N   the launch and repetition this run belongs to\n"
"  --peak-gflops X     the launch's measured sgemm peak of this host (else measured once here)\n"
"  --no-config-table   do not print the resolved configuration (exp prints the differences)\n"
"\n"
"Exit: 0 completed (or nothing to resume), 1 failed, 2 bad input or environment,\n"
"3 diverged, 128+N stopped by signal N (the run is 'interrupted' and can be resumed).\n";

static void usage_error(const char *what) { die_input_hint(USAGE, "train: %s", what); }


static double parse_number(const char *opt, const char *s, double lo) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo)) die_input("%s: expected a number >= %g, got '%s'", opt, lo, s);
    return v;
}

// stored overrides, then the new ones; one assignment per key (the last wins, as when
// they are applied in order).
static int merge_overrides(char **stored, int n_stored, const char **given, int n_given, const char **out) {
    int n = 0;
    const char *all[2048];
    CHECK(n_stored + n_given <= 2048, "too many --set overrides (%d)", n_stored + n_given);
    for (int i = 0; i < n_stored; i++) all[n++] = stored[i];
    for (int i = 0; i < n_given; i++) all[n++] = given[i];
    int k = 0;
    for (int i = 0; i < n; i++) {
        size_t key_len = strcspn(all[i], "=");
        int later = 0;
        for (int j = i + 1; j < n && !later; j++)
            later = strcspn(all[j], "=") == key_len && !strncmp(all[i], all[j], key_len);
        if (!later) out[k++] = all[i];
    }
    return k;
}

int main(int argc, char **argv) {
    env_runtime_setup(argv);
    stop_signals_init();
    RunOptions opt; memset(&opt, 0, sizeof opt);
    opt.use_db = 1; opt.variant_name = ""; opt.resume_uid = ""; opt.print_config = 1; opt.train_command = argv[0];
    const char **sets = xcalloc((size_t)argc + 1, sizeof(char *)); int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(USAGE, stdout); return 0; }
        if (!strcmp(a, "--signals")) {
            int n;
            const StopSignal *t = stop_signal_table(&n);
            for (int k = 0; k < n; k++) printf("%s\t%s\t%s\n", t[k].name, stop_action_name(t[k].action), t[k].why);
            return 0;
        }
        else if (!strcmp(a, "--set")) { if (!has_val) usage_error("--set needs key=value"); sets[n_sets++] = argv[++i]; }
        else if (!strncmp(a, "--set=", 6)) sets[n_sets++] = a + 6;
        else if (!strcmp(a, "--variant")) { if (!has_val) usage_error("--variant needs a name"); opt.variant_name = argv[++i]; }
        else if (!strcmp(a, "--resume")) opt.resume = 1;
        else if (!strncmp(a, "--resume=", 9)) { opt.resume = 1; opt.resume_uid = a + 9; }
        else if (!strcmp(a, "--no-db")) opt.use_db = 0;
        else if (!strcmp(a, "--no-config-table")) opt.print_config = 0;
        else if (!strcmp(a, "--launch")) { if (!has_val) usage_error("--launch needs an id"); opt.launch_id = (int64_t)parse_number(a, argv[++i], 1); }
        else if (!strcmp(a, "--repeat-index")) { if (!has_val) usage_error("--repeat-index needs a number"); opt.repeat_index = (int)parse_number(a, argv[++i], 0); }
        else if (!strcmp(a, "--peak-gflops")) { if (!has_val) usage_error("--peak-gflops needs a number"); opt.peak_gflops = parse_number(a, argv[++i], 0); }
        else if (a[0] == '-') die_input("unknown option '%s' (expected --variant, --set, --resume, --no-db; see train --help)", a);
        else if (!opt.config_path) opt.config_path = a;
        else usage_error("one configuration file only");
    }
    if (!opt.config_path) usage_error("no configuration file");
    // Parse before MPI: a bad manifest is reported once per rank but costs nothing.
    Manifest *man = manifest_load_with(opt.config_path, sets, n_sets);
    // A resume applies the overrides the run was started with (stored in run.db), then
    // those given now: `--resume` alone continues exactly what was running.
    char **stored = NULL; int n_stored = 0;
    const char **effective = sets; int n_effective = n_sets;
    if (opt.resume && opt.use_db) {
        // (--resume=UID names the variant through the run; run.db is where the runs are)
        const ManifestVariant *v = opt.resume_uid[0] ? &man->variants[0] : manifest_variant(man, opt.variant_name);
        RunRow row;
        if (rundb_peek_run(v->config.run.db, man->name, v->name, opt.resume_uid, &row, &stored, &n_stored)) {
            if (opt.resume_uid[0]) {
                if (opt.variant_name[0] && strcmp(opt.variant_name, row.variant))
                    die_input("--resume=%s: that run is of variant '%s', not '%s'", opt.resume_uid, row.variant, opt.variant_name);
                opt.variant_name = xstrdup(row.variant);
            }
            effective = xcalloc((size_t)n_stored + n_sets + 1, sizeof(char *));
            n_effective = merge_overrides(stored, n_stored, sets, n_sets, effective);
            manifest_free(man);
            man = manifest_load_with(opt.config_path, effective, n_effective);
        }
    }
    const ManifestVariant *var = manifest_variant(man, opt.variant_name);
    opt.manifest = man;
    opt.cfg = var->config;
    xsnprintf(opt.cfg.variant, sizeof opt.cfg.variant, "%s", var->name);
    opt.overrides = effective; opt.n_overrides = n_effective;

    const ParallelConfig *pc = &opt.cfg.parallel;
    int use_mpi = gpu_launched_by_mpi() || (long long)pc->tp * pc->pp * pc->dp != 1;
    Comm comm;
    if (use_mpi) {
        CHECK_MPI(MPI_Init(&argc, &argv));
        comm_init(&comm, pc->tp, pc->pp, pc->dp);
    } else {
        comm_init_virtual(&comm, 1, 1, 1);   // every group has one member: nothing to send
    }
    opt.ranks_per_host = comm_ranks_on_node(&comm);
    int threads = opt.cfg.train.threads;
    if (threads == 0) {
        threads = omp_get_num_procs() / opt.ranks_per_host;
        if (threads < 1) threads = 1;
    }
    trainer_set_threads(threads);
    opt.cfg.train.threads = threads;
    int rc = run_training(&opt, &comm);
    comm_free(&comm);
    manifest_free(man);
    if (effective != sets) free(effective);
    rundb_free_strings(stored, n_stored);
    free(sets);
    if (use_mpi) CHECK_MPI(MPI_Finalize());
    return rc;
}
