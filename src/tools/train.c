// train — train one variant of a manifest (or a plain configuration file).
//   build/train FILE.yaml [--variant NAME] [--set key=value]... [--resume] [--no-db]
// Single process, or under mpirun with parallel.tp * pp * dp ranks. Prints the resolved
// configuration, one line per step, validation losses; records the run in run.db.
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
#include "../train/run.h"
#include "../train/trainer.h"

static void usage(void) {
    fprintf(stderr, "usage: train FILE.yaml [--variant NAME] [--set key=value]... [--resume] [--no-db]\n");
    exit(EXIT_BAD_INPUT);
}

// Ranks sharing this node, so that train.threads = 0 divides the cores among them.
static int ranks_on_node(void) {
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int n; CHECK_MPI(MPI_Comm_size(node, &n));
    CHECK_MPI(MPI_Comm_free(&node));
    return n;
}

int main(int argc, char **argv) {
    ensure_passive_omp(argv);
    RunOptions opt; memset(&opt, 0, sizeof opt);
    opt.use_db = 1; opt.variant_name = "";
    const char **sets = xcalloc((size_t)argc, sizeof(char *)); int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--set")) {
            if (i + 1 >= argc) die_input("--set needs key=value");
            sets[n_sets++] = argv[++i];
        } else if (!strncmp(argv[i], "--set=", 6)) sets[n_sets++] = argv[i] + 6;
        else if (!strcmp(argv[i], "--variant")) {
            if (i + 1 >= argc) die_input("--variant needs a name");
            opt.variant_name = argv[++i];
        } else if (!strcmp(argv[i], "--resume")) opt.resume = 1;
        else if (!strcmp(argv[i], "--no-db")) opt.use_db = 0;
        else if (argv[i][0] == '-') die_input("unknown option '%s' (expected --variant, --set, --resume, --no-db)", argv[i]);
        else if (!opt.config_path) opt.config_path = argv[i];
        else usage();
    }
    if (!opt.config_path) usage();
    // Parse before MPI: a bad manifest is reported once per rank but costs nothing.
    Manifest *man = manifest_load_with(opt.config_path, sets, n_sets);
    const ManifestVariant *var = manifest_variant(man, opt.variant_name);
    opt.manifest = man;
    opt.cfg = var->config;
    xsnprintf(opt.cfg.variant, sizeof opt.cfg.variant, "%s", var->name);
    free(sets);

    const ParallelConfig *pc = &opt.cfg.parallel;
    int use_mpi = launched_by_mpi() || (long long)pc->tp * pc->pp * pc->dp != 1;
    Comm comm;
    if (use_mpi) {
        CHECK_MPI(MPI_Init(&argc, &argv));
        comm_init(&comm, pc->tp, pc->pp, pc->dp);
    } else {
        comm_init_virtual(&comm, 1, 1, 1);   // every group has one member: nothing to send
    }
    int threads = opt.cfg.train.threads;
    if (threads == 0) {
        threads = omp_get_num_procs() / (use_mpi ? ranks_on_node() : 1);
        if (threads < 1) threads = 1;
    }
    set_threads(threads);
    opt.cfg.train.threads = threads;
    int rc = run_training(&opt, &comm);
    comm_free(&comm);
    manifest_free(man);
    if (use_mpi) CHECK_MPI(MPI_Finalize());
    return rc;
}
