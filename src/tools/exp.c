// exp — run an experiment: every variant of experiments/<name>.yaml (or one), each as
// its own training process (under mpirun when the variant asks for several ranks),
// then a table comparing the variants from the run database.
//   build/exp NAME|PATH [--variant V] [--resume] [--dry-run] [--set key=value]...
// `make exp EXP=name [VARIANT=v] [RESUME=1] [DRY_RUN=1]` calls this.
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../config/manifest.h"
#include "../core/check.h"
#include "../store/db.h"
#include "../train/trainer.h"

static void usage(void) {
    fprintf(stderr, "usage: exp NAME|PATH [--variant V] [--resume] [--dry-run] [--set key=value]...\n");
    exit(EXIT_BAD_INPUT);
}

// argv of one variant's launch: [mpirun -np W --oversubscribe [--allow-run-as-root]] train ...
static int build_command(const char **argv, char *train_bin, const char *path, const char *variant,
                         const char **sets, int n_sets, int resume, int world, char *npbuf) {
    int n = 0;
    if (world > 1) {
        argv[n++] = "mpirun"; argv[n++] = "-np"; argv[n++] = npbuf; argv[n++] = "--oversubscribe";
        if (geteuid() == 0) argv[n++] = "--allow-run-as-root";
    }
    argv[n++] = train_bin; argv[n++] = path; argv[n++] = "--variant"; argv[n++] = variant;
    for (int i = 0; i < n_sets; i++) { argv[n++] = "--set"; argv[n++] = sets[i]; }
    if (resume) argv[n++] = "--resume";
    argv[n] = NULL;
    return n;
}

static int run_command(const char **argv) {
    pid_t pid = fork();
    CHECK_ERRNO(pid < 0, "fork");
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    CHECK_ERRNO(waitpid(pid, &status, 0) < 0, "waitpid");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void human_bytes(char *buf, size_t n, double b) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static void print_comparison(const char *db_path, const char *experiment) {
    RunDB *db = rundb_open(db_path);
    VariantSummary *vs = NULL;
    int n = rundb_compare(db, experiment, &vs);
    printf("\n%s — latest run of each variant (%s); comm = all collectives of the run\n", experiment, db_path);
    printf("%-28s %-11s %6s %10s %10s %10s %11s %11s %12s %10s\n", "variant", "status", "steps", "loss",
           "val loss", "ms/step", "tokens/s", "peak mem", "comm bytes", "comm calls");
    for (int i = 0; i < n; i++) {
        char mem[32], comm[32], val[32], loss[32];
        human_bytes(mem, sizeof mem, (double)vs[i].peak_memory);
        human_bytes(comm, sizeof comm, (double)vs[i].comm_bytes);
        snprintf(loss, sizeof loss, isnan(vs[i].final_loss) ? "-" : "%.4f", vs[i].final_loss);
        snprintf(val, sizeof val, isnan(vs[i].val_loss) ? "-" : "%.4f", vs[i].val_loss);
        printf("%-28s %-11s %6d %10s %10s %10.1f %11.0f %11s %12s %10lld\n", vs[i].variant, vs[i].status, vs[i].steps,
               loss, val, vs[i].ms_per_step, vs[i].tokens_per_s, mem, comm, (long long)vs[i].comm_calls);
    }
    free(vs);
    rundb_close(db);
}

int main(int argc, char **argv) {
    const char *name = NULL, *only = NULL;
    int resume = 0, dry = 0;
    const char **sets = xcalloc((size_t)argc, sizeof(char *)); int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--variant")) { if (++i >= argc) usage(); only = argv[i]; }
        else if (!strcmp(argv[i], "--resume")) resume = 1;
        else if (!strcmp(argv[i], "--dry-run")) dry = 1;
        else if (!strcmp(argv[i], "--set")) { if (++i >= argc) usage(); sets[n_sets++] = argv[i]; }
        else if (argv[i][0] == '-') die_input("unknown option '%s' (expected --variant, --resume, --dry-run, --set)", argv[i]);
        else if (!name) name = argv[i];
        else usage();
    }
    if (!name || !*name) usage();
    // NAME -> experiments/NAME.yaml; a path is taken as it is
    char path[1024];
    if (strchr(name, '/') || strstr(name, ".yaml")) xsnprintf(path, sizeof path, "%s", name);
    else xsnprintf(path, sizeof path, "experiments/%s.yaml", name);
    struct stat st;
    if (stat(path, &st) != 0)
        die_input_hint("the experiments are the files in experiments/ (make exp EXP=<file stem>)",
                       "no experiment '%s': %s does not exist", name, path);
    Manifest *man = manifest_load_with(path, sets, n_sets);
    if (only && *only) (void)manifest_variant(man, only);    // dies listing the names if unknown

    // The train binary next to this one.
    char self[1024], train_bin[1100];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK_ERRNO(k < 0, "readlink /proc/self/exe");
    self[k] = 0;
    xsnprintf(train_bin, sizeof train_bin, "%s/train", dirname(self));

    const char *db_path = man->variants[0].config.run.db;
    printf("experiment %s version %s (%s, sha256 %.12s) — %d variant%s\n", man->name,
           man->version[0] ? man->version : "-", path, man->sha256, man->n_variants, man->n_variants == 1 ? "" : "s");
    if (man->description[0]) printf("  %s\n", man->description);
    if (!dry) {
        // An edited manifest must get a new version: results of one version must come
        // from one text.
        RunDB *db = rundb_open(db_path);
        rundb_mark_stale(db);
        RunRow first;
        int nc = rundb_manifest_conflicts(db, man->name, man->version, man->sha256, &first);
        rundb_close(db);
        if (nc > 0)
            die_input_hint("bump `version:` in the manifest (results of one version must come from one text), or use another run.db",
                           "%s changed since run %s (version %s, sha256 %.12s...) was recorded in %s; its content is now %.12s...",
                           path, first.uid, man->version, first.manifest_sha256, db_path, man->sha256);
    }

    int failures = 0;
    for (int i = 0; i < man->n_variants; i++) {
        const ManifestVariant *v = &man->variants[i];
        if (only && *only && strcmp(v->name, only)) continue;
        if ((!only || !*only) && v->config.run.on_demand) {
            printf("\n== variant %s: on demand only (make exp EXP=%s VARIANT=%s) ==\n", v->name, man->name, v->name);
            continue;
        }
        const ParallelConfig *pc = &v->config.parallel;
        int world = pc->tp * pc->pp * pc->dp;
        char np[16]; snprintf(np, sizeof np, "%d", world);
        const char *cmd[64 + 2 * 64];
        CHECK(n_sets < 60, "too many --set options");
        build_command(cmd, train_bin, path, v->name, sets, n_sets, resume, world, np);
        printf("\n== variant %s (%d rank%s) ==\n$", v->name, world, world == 1 ? "" : "s");
        for (int j = 0; cmd[j]; j++) printf(" %s", cmd[j]);
        printf("\n");
        fflush(stdout);
        if (dry) {   // the configuration and the memory per rank (dry back end: nothing allocated)
            config_print_table(&v->config, stdout);
            printf("\n");
            trainer_memory_print(&v->config, stdout);
            continue;
        }
        int rc = run_command(cmd);
        if (rc != 0) { fprintf(stderr, "variant %s failed (exit %d)\n", v->name, rc); failures++; }
    }
    if (!dry) print_comparison(db_path, man->name);
    manifest_free(man);
    free(sets);
    return failures ? 1 : 0;
}
