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
#include "../config/options.h"
#include "../core/check.h"
#include "../core/env.h"
#include "../parallel/comm.h"
#include "../parallel/gpu_setup.h"
#include "../store/db.h"
#include "../train/run.h"
#include "../train/stop.h"
#include "../train/trainer.h"

static const char *USAGE =
"usage: train FILE.yaml [--variant NAME] [--set key=value]... [--resume[=UID] [--allow-change KEY]...] [--no-db]\n"
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
"  --allow-change KEY  a resume may change KEY although that changes the run's meaning (data,\n"
"                      batch, seed, schedule, optimizer, numerics, evaluation; repeatable); the\n"
"                      change is printed and recorded with the run (docs/configuration.md)\n"
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
    OptList set_list = {0}, allow_list = {0};
    const char *resume = NULL;
    int no_db = 0, no_table = 0, n_pos = 0, signals = 0;
    // the options through the schema's types and messages (config/options.h)
    const ToolOption opts[] = {
        OPT_STR_ROW("variant", &opt.variant_name),
        OPT_LIST_ROW("set", &set_list),
        { .name = "resume", .kind = OPT_FLAG_OR_VALUE, .type = CK_STRING, .dst = &resume },
        OPT_LIST_ROW("allow-change", &allow_list),
        OPT_FLAG_ROW("no-db", &no_db),
        OPT_FLAG_ROW("no-config-table", &no_table),
        OPT_FLAG_ROW("signals", &signals),
        OPT_INT64_ROW("launch", 1, INT64_MAX, &opt.launch_id),
        OPT_INT_ROW("repeat-index", 0, INT32_MAX, &opt.repeat_index),
        { .name = "peak-gflops", .kind = OPT_VALUE, .type = CK_DOUBLE, .min = 0, .flags = CKF_MIN, .dst = &opt.peak_gflops },
        OPT_END };
    opt_parse("train", opts, argc, argv, &opt.config_path, 1, &n_pos, USAGE);
    if (signals) {   // train/stop.h's table: what each signal does to a run
        int n;
        const StopSignal *t = stop_signal_table(&n);
        for (int k = 0; k < n; k++) printf("%s\t%s\t%s\n", t[k].name, stop_action_name(t[k].action), t[k].why);
        return 0;
    }
    const char **sets = set_list.v; int n_sets = set_list.n;
    if (resume) { opt.resume = 1; opt.resume_uid = resume; }
    opt.use_db = !no_db;
    opt.print_config = !no_table;
    opt.allow_change = allow_list.v; opt.n_allow_change = allow_list.n;
    if (allow_list.n && !opt.resume)
        usage_error("--allow-change goes with --resume (a new run has nothing to change)");
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
    free(sets); free(allow_list.v);
    if (use_mpi) CHECK_MPI(MPI_Finalize());
    return rc;
}
