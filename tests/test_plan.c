// test_plan.c — the launch and run decisions (train/plan.h) against a temporary database,
// without MPI or fork: generated cases rather than listed ones.
//   - Slurm's task lists ("2(x3),1") against the counts they were built from, and malformed ones;
//     a rank's local rank and count under srun;
//   - fresh launches of generated manifests (variants, tp, on-demand, REPEAT, VARIANT=): the runs
//     interleaved, the argument vectors (launcher, overrides, launch id, peak);
//   - the launcher over generated environments (Slurm or not, LAUNCHER=, LAUNCHER_ARGS=, HOSTFILE=,
//     root, cores, Open MPI or not): srun inside an allocation, --oversubscribe / --overcommit
//     exactly when the ranks exceed the slots, Open MPI's flags only for Open MPI's mpirun, every
//     word passed as given (no shell), a hostfile for an unknown launcher refused;
//   - a resume of each end status (completed, completed short of steps, failed, interrupted,
//     diverged, running, never started) and the refused resumes and launches;
//   - the pre-flight over generated resources: refused exactly when the largest rank (times the
//     ranks sharing a device or node) exceeds the memory, or when a cuda variant has no device;
//   - the run decision: a new run's uid, folder and lock; a resume's checkpoint against its
//     recorded rows, from step 0, refused when checkpoints are damaged or recorded and gone; the
//     dump folder rule; a refusal removes the folders it made.
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "core/check.h"
#include "core/env.h"
#include "store/checkpoint.h"
#include "store/db.h"
#include "train/plan.h"
#include "train/trainer.h"

TL_MAIN_DEFS

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
static int rnd(int n) {   // 0..n-1, deterministic
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (int)(g_rng % (uint64_t)n);
}

static int argv_has(char *const *argv, const char *w) {
    for (int i = 0; argv && argv[i]; i++) if (!strcmp(argv[i], w)) return 1;
    return 0;
}
static int argv_index(char *const *argv, const char *w) {
    for (int i = 0; argv && argv[i]; i++) if (!strcmp(argv[i], w)) return i;
    return -1;
}
static int argv_len(char *const *argv) { int n = 0; while (argv && argv[n]) n++; return n; }

// ---- Slurm's task lists ---------------------------------------------------------------------------
TEST(slurm_task_lists) {
    for (int c = 0; c < 300; c++) {
        int groups = 1 + rnd(4), tasks[8], reps[8], nodes = 0, total = 0;
        char spec[256] = "";
        for (int g = 0; g < groups; g++) {
            tasks[g] = 1 + rnd(64); reps[g] = rnd(3) ? 1 : 1 + rnd(9);
            size_t l = strlen(spec);
            if (reps[g] == 1 && rnd(2)) snprintf(spec + l, sizeof spec - l, "%s%d", g ? "," : "", tasks[g]);
            else snprintf(spec + l, sizeof spec - l, "%s%d(x%d)", g ? "," : "", tasks[g], reps[g]);
            nodes += reps[g]; total += tasks[g] * reps[g];
        }
        for (int node = 0, g = 0, k = 0; node < nodes + 1; node++) {
            int want = node < nodes ? tasks[g] : 0, got_total = -1, got_nodes = -1;
            int got = env_slurm_tasks(spec, node, &got_total, &got_nodes);
            EXPECT(got == want && got_total == total && got_nodes == nodes, "'%s' node %d: %d of %d on %d nodes, want %d of %d on %d",
                   spec, node, got, got_total, got_nodes, want, total, nodes);
            if (node < nodes && ++k == reps[g]) { g++; k = 0; }
        }
    }
    const char *bad[] = { "", "x", "2(", "2(x)", "2(3)", "2(x0)", "2,", ",2", "2(x3", "-1", "2 ,3", "2(x3)x", NULL };
    for (int i = 0; bad[i]; i++) EXPECT(env_slurm_tasks(bad[i], 0, NULL, NULL) == -1, "'%s' accepted", bad[i]);
}

// A rank started by srun: its local rank and the ranks of its node from SLURM_LOCALID and the
// step's task list at SLURM_NODEID (SLURM_NTASKS_PER_NODE is set only with --ntasks-per-node).
TEST(slurm_local_rank) {
    const char *others[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", NULL };
    for (int i = 0; others[i]; i++) unsetenv(others[i]);
    for (int c = 0; c < 200; c++) {
        int per[3] = { 1 + rnd(8), 1 + rnd(8), 1 + rnd(8) }, node = rnd(3), mode = rnd(3);
        char spec[64], v[16];
        snprintf(spec, sizeof spec, "%d,%d(x1),%d", per[0], per[1], per[2]);
        int local = rnd(per[node]);
        snprintf(v, sizeof v, "%d", local); setenv("SLURM_LOCALID", v, 1);
        snprintf(v, sizeof v, "%d", node); setenv("SLURM_NODEID", v, 1);
        unsetenv("SLURM_STEP_TASKS_PER_NODE"); unsetenv("SLURM_NTASKS_PER_NODE");
        int want = local + 1;   // nothing says more: at least this rank and those before it
        if (mode == 0) { setenv("SLURM_STEP_TASKS_PER_NODE", spec, 1); want = per[node]; }
        if (mode == 1) { snprintf(v, sizeof v, "%d", per[node]); setenv("SLURM_NTASKS_PER_NODE", v, 1); want = per[node]; }
        int n = -1, r = env_local_rank(&n);
        EXPECT(r == local && n == want, "case %d (mode %d, %s, node %d): local rank %d of %d, want %d of %d", c, mode, spec,
               node, r, n, local, want);
    }
    unsetenv("SLURM_LOCALID"); unsetenv("SLURM_NODEID"); unsetenv("SLURM_STEP_TASKS_PER_NODE"); unsetenv("SLURM_NTASKS_PER_NODE");
}

// ---- manifests -----------------------------------------------------------------------------------
static char g_dir[256], g_db[300];
#define IN_TMP(buf, name) snprintf(buf, sizeof buf, "%s/%s", g_dir, name)

// A manifest of n variants v0..v{n-1}, variant i with tp[i], on demand where od[i]; all recording in db.
static void write_manifest(const char *path, const char *name, int n, const int *tp, const int *od, const char *db,
                           const char *extra) {
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); exit(1); }
    fprintf(f, "manifest_version: 1\nname: %s\nversion: 1\n"
               "model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 48, seq_len: 16, "
               "rank_attn: 8, rank_mlp: 8}\n"
               "data: {dataset: synthetic}\n"
               "train: {batch_size: 4, steps: 6, lr: 3e-3, warmup_steps: 1, log_every: 3, val_every: 3, threads: 1}\n"
               "run: {db: %s, checkpoint_dir: %s/ckpt, checkpoint_every: 3}\n%s"
               "variants:\n", name, db, g_dir, extra ? extra : "");
    for (int i = 0; i < n; i++)
        fprintf(f, "  v%d: {parallel.tp: %d%s}\n", i, tp[i], od && od[i] ? ", run.on_demand: true" : "");
    fclose(f);
}

static LaunchEnv plain_env(void) {
    LaunchEnv e;
    memset(&e, 0, sizeof e);
    e.cores = 4; e.openmpi = 1; e.pid = 4242;
    return e;
}

// mpirun must be found for multi-rank variants: a PATH with a fake one, and srun beside it
static char g_bin[300];
static void fake_launchers(void) {
    IN_TMP(g_bin, "bin");
    mkdir(g_bin, 0755);
    const char *names[] = { "mpirun", "srun", "mpiexec.hydra", NULL };
    for (int i = 0; names[i]; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", g_bin, names[i]);
        FILE *f = fopen(p, "w");
        fputs("#!/bin/sh\nexit 0\n", f);
        fclose(f);
        chmod(p, 0755);
    }
    setenv("PATH", g_bin, 1);
}

TEST(fresh_launch_generated) {
    char path[400];
    IN_TMP(path, "gen.yaml");
    for (int c = 0; c < 40; c++) {
        int n = 1 + rnd(4), tp[4], od[4];
        for (int i = 0; i < n; i++) { tp[i] = rnd(2) ? 2 : 1; od[i] = rnd(4) == 0; }
        write_manifest(path, "gen", n, tp, od, g_db, NULL);
        int repeat = 1 + rnd(3), filter = rnd(3) == 0 ? rnd(n) : -1;
        char only[16] = "";
        if (filter >= 0) snprintf(only, sizeof only, "v%d", filter);
        const char *sets[] = { "train.seed=7", "train.lr=1e-3" };
        int n_sets = rnd(3);
        LaunchEnv env = plain_env();
        LaunchRequest rq = { .path = path, .sets = sets, .n_sets = n_sets, .only = only, .repeat = repeat, .dry = 0,
                             .train_bin = "/b/train", .sim_bin = "/b/simulate", .env = &env };
        LaunchPlan p;
        RunDB *db = rundb_open(g_db);
        int refused = plan_launch(&rq, db, &p);
        EXPECT(!refused, "case %d refused: %s", c, p.refusal.message);
        if (refused) { rundb_close(db); plan_free(&p); continue; }
        plan_commands(&p, 42, 123.5);
        // expected order: repeat-major, variants in manifest order; on-demand once (repeat 0) unless filtered
        int k = 0, ok = 1, to_run = 0;
        for (int r = 0; r < repeat; r++)
            for (int i = 0; i < n; i++) {
                if (filter >= 0 && i != filter) continue;
                if (filter < 0 && od[i] && r > 0) continue;
                if (k >= p.n_runs) { ok = 0; break; }
                const PlannedRun *pr = &p.runs[k++];
                int on_demand = filter < 0 && od[i];
                ok &= pr->variant == i && pr->repeat_index == r && pr->world == tp[i];
                ok &= pr->action == (on_demand ? PLAN_RUN_ON_DEMAND : PLAN_RUN_START);
                if (on_demand) { ok &= pr->argv == NULL; continue; }
                to_run++;
                int t = argv_index(pr->argv, "/b/train");
                ok &= tp[i] == 1 ? t == 0 : t > 0 && !strcmp(pr->argv[0], "mpirun") && argv_has(pr->argv, "-np");
                ok &= pr->under_launcher == (tp[i] > 1);
                char rep[16]; snprintf(rep, sizeof rep, "%d", r);
                int L = argv_index(pr->argv, "--launch"), R = argv_index(pr->argv, "--repeat-index"), P = argv_index(pr->argv, "--peak-gflops");
                ok &= L > 0 && !strcmp(pr->argv[L + 1], "42") && R > 0 && !strcmp(pr->argv[R + 1], rep) && P > 0 &&
                      atof(pr->argv[P + 1]) == 123.5;
                int s = 0;
                for (int j = 0; pr->argv[j]; j++) if (!strcmp(pr->argv[j], "--set")) ok &= !strcmp(pr->argv[j + 1], sets[s++]);
                ok &= s == n_sets;
            }
        EXPECT(ok && k == p.n_runs && p.n_to_run == to_run, "case %d (%d variants, REPEAT %d, VARIANT '%s'): %d runs planned, "
               "%d expected; %d to run, %d expected", c, n, repeat, only, p.n_runs, k, p.n_to_run, to_run);
        plan_free(&p);
        rundb_close(db);
    }
}

// ---- the launcher ---------------------------------------------------------------------------------
TEST(launcher_generated) {
    char path[400], hf_slots[400], hf_plain[400];
    IN_TMP(path, "launch.yaml");
    IN_TMP(hf_slots, "hosts-slots");
    IN_TMP(hf_plain, "hosts-plain");
    FILE *f = fopen(hf_slots, "w"); fputs("# two hosts\nnode1 slots=4\nnode2 slots=2 max_slots=8\n", f); fclose(f);
    f = fopen(hf_plain, "w"); fputs("node1\nnode2\nnode3\n", f); fclose(f);
    const char *launchers[][4] = { { NULL }, { "mpirun", NULL }, { "srun", NULL }, { "srun", "--mpi=pmi2", NULL },
                                   { "mpiexec.hydra", NULL }, { "mpirun", "--map-by", "ppr:1:node", NULL } };
    const char *args[] = { "-x", "NCCL_DEBUG=INFO", "--bind-to", "$(touch nowhere) ; 'quoted'" };
    int cases = 0;
    for (int c = 0; c < 400; c++) {
        int tp = 1 << rnd(4);   // 1 2 4 8
        int one[1] = { tp };
        write_manifest(path, "launch", 1, one, NULL, g_db, NULL);
        LaunchEnv e = plain_env();
        int li = rnd(6), slurm = rnd(2), hf = rnd(3), n_args = rnd(5);
        e.cores = 1 + rnd(4);
        e.root = rnd(2);
        e.openmpi = rnd(4) != 0;
        e.slurm_mpi_type = rnd(4) == 0;
        int alloc_tasks = 0;
        if (slurm) {
            snprintf(e.slurm_job, sizeof e.slurm_job, "%d", 100 + c);
            int per = 1 + rnd(4), nodes = 1 + rnd(3);
            snprintf(e.slurm_tasks_spec, sizeof e.slurm_tasks_spec, "%d(x%d)", per, nodes);
            alloc_tasks = per * nodes;
        }
        int nw = 0;
        while (launchers[li][nw]) nw++;
        e.words = launchers[li]; e.n_words = nw;
        e.args = args; e.n_args = n_args;
        e.hostfile = hf == 1 ? hf_slots : hf == 2 ? hf_plain : NULL;
        LaunchRequest rq = { .path = path, .repeat = 1, .dry = 1, .train_bin = "/b/train", .sim_bin = "/b/simulate", .env = &e };
        LaunchPlan p;
        int refused = plan_launch(&rq, NULL, &p);
        // which launcher: LAUNCHER=, else srun in an allocation, else mpirun (Open MPI) / mpiexec
        const char *first = nw ? launchers[li][0] : slurm ? "srun" : e.openmpi ? "mpirun" : "mpiexec";
        int srun = !strcmp(first, "srun"), ompi = !srun && e.openmpi && !strcmp(first, "mpirun");
        int other = !srun && !ompi;
        if (other && e.hostfile) {
            EXPECT(refused && strstr(p.refusal.message, "HOSTFILE=") && p.refusal.hint[0], "case %d: a hostfile for %s not refused",
                   c, first);
            plan_free(&p);
            continue;
        }
        if (!strcmp(first, "mpiexec")) {   // not among the fake launchers: refused as not on PATH when needed
            EXPECT(tp == 1 ? !refused : refused && strstr(p.refusal.message, "mpiexec is not on PATH"), "case %d: mpiexec %s",
                   c, refused ? p.refusal.message : "accepted");
            plan_free(&p);
            continue;
        }
        EXPECT(!refused, "case %d refused: %s", c, p.refusal.message);
        if (refused) { plan_free(&p); continue; }
        plan_commands(&p, 0, 0);
        char *const *a = p.runs[0].argv;
        int under = tp > 1 || srun || e.hostfile;
        int t = argv_index(a, "/b/train");
        int ok = under ? t > 0 && !strcmp(a[0], launchers[li][0] ? launchers[li][0] : first) : t == 0;
        // the slots: hostfile (when it lists them), else the allocation (srun, or Open MPI's mpirun in it), else cores
        int slots = e.hostfile ? (hf == 1 ? 6 : 0) : slurm && !other ? alloc_tasks : srun ? 0 : e.cores;
        int over = under && slots > 0 && tp > slots;
        if (under) {
            ok &= argv_has(a, "--oversubscribe") == (over && ompi);
            ok &= argv_has(a, "--overcommit") == (over && srun);
            ok &= argv_has(a, "--allow-run-as-root") == (ompi && e.root);
            ok &= argv_has(a, "--kill-on-bad-exit=1") == srun;
            int has_mpi_word = nw > 1 && !strncmp(launchers[li][1], "--mpi", 5);
            ok &= argv_has(a, "--mpi=pmix") == (srun && !has_mpi_word && !e.slurm_mpi_type);
            char np[32]; snprintf(np, sizeof np, "--ntasks=%d", tp);
            if (srun) ok &= argv_has(a, np);
            else { int k = argv_index(a, "-np"); ok &= k > 0 && atoi(a[k + 1]) == tp; }
            if (e.hostfile && ompi) { int k = argv_index(a, "--hostfile"); ok &= k > 0 && !strcmp(a[k + 1], e.hostfile); }
            if (e.hostfile && srun) { char w[500]; snprintf(w, sizeof w, "--nodefile=%s", e.hostfile); ok &= argv_has(a, w); }
            // LAUNCHER_ARGS: each word as given, in order, before the program
            int prev = 0;
            for (int i = 0; i < n_args; i++) { int k = argv_index(a, args[i]); ok &= k > prev && k < t; prev = k; }
            for (int i = 1; i < nw; i++) ok &= argv_index(a, launchers[li][i]) > 0 && argv_index(a, launchers[li][i]) < t;
            ok &= p.runs[0].oversubscribed == (over && !other);
            ok &= p.uses_launcher && strstr(p.launcher.label, first) == p.launcher.label;
        }
        EXPECT(ok, "case %d: LAUNCHER #%d, slurm %d (%s), hostfile %d, tp %d, cores %d, root %d, openmpi %d, mpi_type %d: %s ...",
               c, li, slurm, e.slurm_tasks_spec, hf, tp, e.cores, e.root, e.openmpi, e.slurm_mpi_type, p.launcher.label);
        if (!ok) for (int i = 0; a && a[i]; i++) printf("    argv[%d] %s\n", i, a[i]);
        cases++;
        plan_free(&p);
    }
    EXPECT(cases > 150, "only %d cases ran", cases);
}

// ---- a resume of each end status ------------------------------------------------------------------
static HostFacts g_host;

static int64_t add_run(RunDB *db, int64_t launch, const char *exp, const char *variant, int rep, const char *status,
                       int steps, const char *uid) {
    RunInfo ri;
    memset(&ri, 0, sizeof ri);
    runinfo_set_host(&ri, &g_host);
    snprintf(ri.uid, sizeof ri.uid, "%s", uid);
    snprintf(ri.experiment, sizeof ri.experiment, "%s", exp);
    snprintf(ri.variant, sizeof ri.variant, "%s", variant);
    snprintf(ri.experiment_version, sizeof ri.experiment_version, "1");
    ri.config_json = "{\"model\": {\"d_model\": 32}}";
    ri.launch_id = launch; ri.repeat_index = rep;
    ri.tp = ri.pp = ri.dp = ri.world_size = 1;
    ri.peak_gflops = 100;
    int64_t id = rundb_begin_run(db, &ri);
    for (int s = 1; s <= steps; s++) {
        StepMetrics sm = {0};
        sm.step = s; sm.loss = 5; sm.seconds = 0.1; sm.tokens_seen = 64LL * s;
        rundb_log_step(db, id, &sm);
    }
    if (strcmp(status, "running")) rundb_end_run(db, id, status, strcmp(status, "completed") ? "a test" : NULL);
    else rundb_flush(db);
    return id;
}

static int64_t add_launch(RunDB *db, const Manifest *m, const char *path, const char *const *sets, int n_sets, int repeat) {
    LaunchInfo li;
    memset(&li, 0, sizeof li);
    snprintf(li.experiment, sizeof li.experiment, "%s", m->name);
    snprintf(li.manifest_path, sizeof li.manifest_path, "%s", path);
    snprintf(li.experiment_version, sizeof li.experiment_version, "%s", m->version);
    snprintf(li.manifest_sha256, sizeof li.manifest_sha256, "%s", m->sha256);
    li.overrides = sets; li.n_overrides = n_sets;
    li.repeat = repeat;
    li.host = g_host;
    li.peak_gflops = 77;
    return rundb_begin_launch(db, &li);
}

TEST(resume_each_end_status) {
    char path[400], db_path[400];
    IN_TMP(path, "res.yaml");
    IN_TMP(db_path, "res.db");
    const char *statuses[] = { "completed", "completed-short", "failed", "interrupted", "diverged", "running", "absent" };
    const int ns = 7;
    int tp[2] = { 1, 2 };
    write_manifest(path, "res", 2, tp, NULL, db_path, NULL);
    Manifest *m = manifest_load(path);
    RunDB *db = rundb_open(db_path);
    const char *old_sets[] = { "train.seed=3", "train.lr=2e-3" };
    for (int c = 0; c < 12; c++) {
        int repeat = 1 + rnd(3);
        int64_t L = add_launch(db, m, path, old_sets, 2, repeat);
        int st[3][2];
        for (int r = 0; r < repeat; r++)
            for (int v = 0; v < 2; v++) {
                st[r][v] = rnd(ns);
                if (st[r][v] == 6) continue;
                char uid[128], vn[16];
                snprintf(uid, sizeof uid, "res.v%d.c%d.r%d.L%lld", v, c, r, (long long)L);
                snprintf(vn, sizeof vn, "v%d", v);
                const char *s = st[r][v] == 1 ? "completed" : statuses[st[r][v]];
                // 'running' with this live process as its owner: rundb_mark_stale leaves it alone
                add_run(db, L, "res", vn, r, s, st[r][v] == 1 ? 4 : 6, uid);
            }
        const char *new_sets[] = { "train.lr=5e-3" };
        LaunchEnv env = plain_env();
        LaunchRequest rq = { .path = path, .sets = new_sets, .n_sets = 1, .resume = 1, .launch_id = L,
                             .train_bin = "/b/train", .sim_bin = "/b/simulate", .env = &env };
        LaunchPlan p;
        int refused = plan_launch(&rq, db, &p);
        EXPECT(!refused, "case %d refused: %s", c, p.refusal.message);
        if (refused) { plan_free(&p); continue; }
        EXPECT(p.repeat == repeat && p.n_runs == 2 * repeat && p.n_all == 2 && !strcmp(p.all_sets[0], "train.seed=3") &&
               !strcmp(p.all_sets[1], "train.lr=5e-3"), "case %d: REPEAT %d (launch's %d), %d runs, overrides %d",
               c, p.repeat, repeat, p.n_runs, p.n_all);
        plan_commands(&p, L, 77);
        for (int k = 0; k < p.n_runs; k++) {
            const PlannedRun *pr = &p.runs[k];
            int s = st[pr->repeat_index][pr->variant];
            PlanRunAction want = s == 0 ? PLAN_RUN_DONE : s == 6 ? PLAN_RUN_START : PLAN_RUN_RESUME;
            int ok = pr->action == want;
            if (want == PLAN_RUN_RESUME) {
                char r[300];
                snprintf(r, sizeof r, "--resume=%s", pr->prior.uid);
                int set = argv_index(pr->argv, "--set");
                ok &= argv_has(pr->argv, r) && !argv_has(pr->argv, "--launch") && set > 0 &&
                      !strcmp(pr->argv[set + 1], "train.lr=5e-3") && argv_index(pr->argv + set + 1, "--set") < 0;
            } else if (want == PLAN_RUN_START) {
                int l = argv_index(pr->argv, "--launch");
                ok &= l > 0 && atoll(pr->argv[l + 1]) == L && argv_has(pr->argv, "train.seed=3") &&
                      argv_has(pr->argv, "train.lr=5e-3") && !argv_has(pr->argv, "train.lr=2e-3");
            } else ok &= pr->argv == NULL;
            EXPECT(ok, "case %d: run %d (v%d, repeat %d) was %s: action %d, want %d", c, k, pr->variant, pr->repeat_index,
                   statuses[s], pr->action, want);
        }
        plan_free(&p);
    }
    rundb_close(db);
    manifest_free(m);
}

// ---- refused launches and resumes -------------------------------------------------------------------
TEST(refused_launches) {
    char path[400], db_path[400], other[400];
    IN_TMP(path, "ref.yaml");
    IN_TMP(other, "other.yaml");
    IN_TMP(db_path, "ref.db");
    int tp[2] = { 1, 1 };
    write_manifest(path, "ref", 2, tp, NULL, db_path, NULL);
    write_manifest(other, "other", 2, tp, NULL, db_path, NULL);
    RunDB *db = rundb_open(db_path);
    LaunchEnv env = plain_env();
    struct { const char *what, *expect; } cases[] = {
        { "resume without a launch", "no launch of ref in" },
        { "resume of an unknown launch id", "no launch 999 in" },
        { "resume of another experiment's launch", "is of experiment other, not ref" },
        { "resume after the manifest changed", "changed since launch" },
        { "a new launch after the manifest changed (same version)", "was recorded in" },
        { "a variant recording into another database", "a launch and all its runs must be in one database" },
    };
    for (int c = 0; c < 6; c++) {
        LaunchRequest rq = { .path = path, .repeat = 1, .train_bin = "/b/train", .sim_bin = "/b/simulate", .env = &env };
        if (c == 0) rq.resume = 1;
        if (c == 1) { rq.resume = 1; rq.launch_id = 999; }
        if (c == 2) {
            Manifest *mo = manifest_load(other);
            rq.resume = 1; rq.launch_id = add_launch(db, mo, other, NULL, 0, 1);
            manifest_free(mo);
        }
        if (c == 3 || c == 4) {
            Manifest *m = manifest_load(path);
            int64_t L = add_launch(db, m, path, NULL, 0, 1);
            if (c == 4) {   // a run recorded with the old text, same version
                RunInfo ri; memset(&ri, 0, sizeof ri); runinfo_set_host(&ri, &g_host);
                snprintf(ri.uid, sizeof ri.uid, "ref.v0.old%d", c); snprintf(ri.experiment, sizeof ri.experiment, "ref");
                snprintf(ri.variant, sizeof ri.variant, "v0"); snprintf(ri.experiment_version, sizeof ri.experiment_version, "1");
                snprintf(ri.manifest_sha256, sizeof ri.manifest_sha256, "%s", m->sha256);
                ri.tp = ri.pp = ri.dp = ri.world_size = 1; ri.launch_id = L;
                rundb_end_run(db, rundb_begin_run(db, &ri), "completed", NULL);
            }
            manifest_free(m);
            write_manifest(path, "ref", 2, tp, NULL, db_path, "# edited\n");
            if (c == 3) { rq.resume = 1; rq.launch_id = L; }
        }
        if (c == 5) {
            FILE *f = fopen(path, "a");
            fprintf(f, "  v9: {run.db: %s/elsewhere.db}\n", g_dir);
            fclose(f);
        }
        LaunchPlan p;
        int refused = plan_launch(&rq, db, &p);
        EXPECT(refused && strstr(p.refusal.message, cases[c].expect) && p.refusal.hint[0] && !p.refusal.preflight, "%s: %s",
               cases[c].what, refused ? p.refusal.message : "not refused");
        plan_free(&p);
        write_manifest(path, "ref", 2, tp, NULL, db_path, NULL);
    }
    rundb_close(db);
}

// ---- the pre-flight ------------------------------------------------------------------------------
static double largest_rank(const Config *c) {
    int world = c->parallel.tp * c->parallel.pp * c->parallel.dp;
    double need = 0;
    for (int r = 0; r < world; r++) {
        MemReport m;
        trainer_memory_report(c, r, c->train.precision == PRECISION_BF16 ? DT_BF16 : DT_F32, &m);
        if (m.total > need) need = m.total;
    }
    return need;
}

TEST(preflight_generated) {
    char path[400];
    IN_TMP(path, "pf.yaml");
    int tp[4] = { 1, 2, 4, 2 };
    write_manifest(path, "pf", 4, tp, NULL, g_db, NULL);
    Manifest *m = manifest_load(path);
    int checked = 0;
    for (int c = 0; c < 300; c++) {
        int vi = rnd(4);
        Config cfg = m->variants[vi].config;
        int cuda = rnd(2);
        if (cuda) cfg.run.device = DEVICE_CUDA;
        if (rnd(2)) cfg.train.precision = PRECISION_BF16;
        int world = tp[vi];
        double need = largest_rank(&cfg);
        PlanResources res;
        memset(&res, 0, sizeof res);
        snprintf(res.where, sizeof res.where, "node n%d", c);
        int rpn = 1 + rnd(world);
        // capacities around the boundary: well below, just below, just above, well above
        double scale[] = { 0.3, 0.999, 1.001, 5 };
        double f = scale[rnd(4)];
        int expect;
        if (cuda) {
            res.n_devices = rnd(4);
            if (!res.n_devices) snprintf(res.no_device, sizeof res.no_device, "no CUDA device visible");
            int share = res.n_devices ? (rpn + res.n_devices - 1) / res.n_devices : 0;
            for (int d = 0; d < res.n_devices; d++) res.device_memory[d] = need * share * f * (d ? 1.5 : 1);
            snprintf(res.device_name, sizeof res.device_name, "Test GPU");
            expect = res.n_devices == 0 || f < 1;
        } else {
            res.mem_available = rnd(8) == 0 ? -1 : need * rpn * f;
            expect = res.mem_available > 0 && f < 1;
        }
        PlanRefusal r;
        int got = plan_preflight(&cfg, "pf", m->variants[vi].name, &res, rpn, &r);
        EXPECT(got == expect && (!got || (r.preflight && strstr(r.message, m->variants[vi].name) && strstr(r.message, res.where) &&
                                          strstr(r.hint, "SIMULATE=1"))),
               "case %d: %s variant %s, %d ranks per node, need %.3g B, scale %.3f, %d devices: refused %d, expected %d (%s)",
               c, cuda ? "cuda" : "cpu", m->variants[vi].name, rpn, need, f, res.n_devices, got, expect, got ? r.message : "");
        if (got && cuda && !res.n_devices) EXPECT(strstr(r.message, "no usable CUDA device"), "case %d: %s", c, r.message);
        checked++;
    }
    // through a launch plan: the ranks of a run on a node come from the launcher (2 nodes of 2 tasks)
    LaunchEnv e = plain_env();
    snprintf(e.slurm_job, sizeof e.slurm_job, "77");
    snprintf(e.slurm_tasks_spec, sizeof e.slurm_tasks_spec, "2(x2)");
    LaunchRequest rq = { .path = path, .only = "v2", .repeat = 1, .dry = 1, .train_bin = "/b/train", .sim_bin = "/b/s", .env = &e };
    LaunchPlan p;
    EXPECT(!plan_launch(&rq, NULL, &p), "tp 4 in a 2x2 allocation refused: %s", p.refusal.message);
    EXPECT(p.launcher.kind == LAUNCHER_SRUN && p.launcher.remote && p.ranks_per_node == 2, "srun %d remote %d, %d ranks per node",
           p.launcher.kind == LAUNCHER_SRUN, p.launcher.remote, p.ranks_per_node);
    double need = largest_rank(&m->variants[2].config);
    PlanResources res;
    memset(&res, 0, sizeof res);
    res.mem_available = need * 2.5;   // room for 2 ranks, not for 4
    EXPECT(!plan_launch_preflight(&p, &res), "2 of 4 ranks on a node with room for 2.5: refused: %s", p.refusal.message);
    res.mem_available = need * 1.5;
    EXPECT(plan_launch_preflight(&p, &res) && p.refusal.preflight, "2 ranks on a node with room for 1.5: not refused");
    char **probe = plan_probe_argv(&p, "/b/exp");
    EXPECT(probe && !strcmp(probe[0], "srun") && argv_has(probe, "--ntasks=1") && !strcmp(probe[argv_len(probe) - 1], "--probe-resources"),
           "the probe through srun: %s", probe ? probe[0] : "none");
    plan_free_words(probe);
    plan_free(&p);
    manifest_free(m);
    EXPECT(checked == 300, "%d cases", checked);
}

TEST(resources_round_trip) {
    for (int c = 0; c < 50; c++) {
        PlanResources a, b;
        memset(&a, 0, sizeof a);
        snprintf(a.where, sizeof a.where, "node n%d (probed through srun)", c);
        snprintf(a.host, sizeof a.host, "n%d", c);
        a.mem_available = rnd(2) ? -1 : (double)(1 + rnd(1 << 20)) * 4096;
        a.cores = rnd(256);
        a.n_devices = rnd(9);
        for (int d = 0; d < a.n_devices; d++) a.device_memory[d] = (double)(1 + rnd(200)) * 1073741824.0;
        if (a.n_devices) snprintf(a.device_name, sizeof a.device_name, "NVIDIA H%d", 100 + rnd(200));
        else snprintf(a.no_device, sizeof a.no_device, "no usable CUDA device: reason %d", c);
        char *text = NULL; size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        plan_resources_print(&a, f);
        fclose(f);
        int ok = plan_resources_parse(text, &b) && !strcmp(a.where, b.where) && !strcmp(a.host, b.host) && a.mem_available == b.mem_available &&
                 a.cores == b.cores && a.n_devices == b.n_devices && !strcmp(a.device_name, b.device_name) &&
                 !strcmp(a.no_device, b.no_device);
        for (int d = 0; d < a.n_devices; d++) ok &= a.device_memory[d] == b.device_memory[d];
        EXPECT(ok, "case %d: %s", c, text);
        free(text);
    }
    PlanResources r;
    EXPECT(!plan_resources_parse("srun: error: Unable to allocate resources\n", &r), "a launcher's error read as resources");
}

// ---- the run decision ------------------------------------------------------------------------------
static void write_ckpt(const Config *cfg, const char *dir, int step) {
    ModelState s;
    model_state_init(&s, &cfg->model, STATE_ALL);
    model_state_init_weights(&s, 1);
    char path[1500];
    checkpoint_path(path, sizeof path, dir, step);
    CheckpointMeta meta = { .step = step, .tokens_seen = 64LL * step, .samples_seen = 4ULL * step, .seed = 1, .adam_t = step,
                            .manifest = "", .config_json = "{}", .git_commit = "" };
    checkpoint_write(path, &s, &meta);
    model_state_free(&s);
}

static int locked_elsewhere(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return 0;
    int held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!held) flock(fd, LOCK_UN);
    close(fd);
    return held;
}

// <name>.yaml: one single-process variant v0 recording into <name>.db (path, db_path: 400 bytes each).
static Manifest *one_variant(const char *name, char *path, char *db_path) {
    snprintf(path, 400, "%s/%s.yaml", g_dir, name);
    snprintf(db_path, 400, "%s/%s.db", g_dir, name);
    int tp[1] = { 1 };
    write_manifest(path, name, 1, tp, NULL, db_path, NULL);
    return manifest_load(path);
}

// What run.c does with a plan: its handles closed (the lock with them), its text freed.
static void close_plan(RunPlan *p) {
    outdir_close(&p->dump_out); outdir_close(&p->run_dir); outdir_close(&p->ckpt_root);
    plan_run_free(p);
}

TEST(run_plan_new_run) {
    char path[400], db_path[400];
    Manifest *m = one_variant("run", path, db_path);
    const Config *cfg = &m->variants[0].config;
    RunDB *db = rundb_open(db_path);
    RunRequest rq = { .cfg = cfg, .experiment = "run", .variant = "v0", .stamp = "20260101-000000", .pid = 31337 };
    RunPlan p;
    EXPECT(!plan_run(db, &rq, &p), "a new run refused: %s", p.refusal.message);
    struct stat st;
    EXPECT(!strcmp(p.uid, "run.v0.20260101-000000.31337") && stat(p.ckpt_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           p.run_dir.fd >= 0 && !p.resume_run && !p.resume_path[0] && locked_elsewhere(p.ckpt_dir),
           "uid %s, folder %s, locked %d", p.uid, p.ckpt_dir, locked_elsewhere(p.ckpt_dir));
    outdir_keep_created();   // (as a registered run does: its folders are its own now)
    // the same folder again (same stamp and pid): its lock refuses a second owner, and the
    // refusal leaves the first run's folder in place
    RunPlan q;
    EXPECT(plan_run(db, &rq, &q) && strstr(q.refusal.message, "is live") && stat(p.ckpt_dir, &st) == 0,
           "a second owner: %s", q.refusal.message);
    close_plan(&p);
    // a dump folder inside another run's folder: refused, and the new folders are removed again
    Config c2 = *cfg;
    snprintf(c2.run.dump_steps, sizeof c2.run.dump_steps, "1");
    snprintf(c2.run.dump_dir, sizeof c2.run.dump_dir, "%.1000s/dumps", p.ckpt_dir);
    rq.cfg = &c2; rq.pid = 31338;
    EXPECT(plan_run(db, &rq, &q) && strstr(q.refusal.message, "run.dump_dir=") && stat(q.ckpt_dir, &st) != 0,
           "a dump folder in another run's: %s (folder %s left: %d)", q.refusal.message, q.ckpt_dir, stat(q.ckpt_dir, &st) == 0);
    // unset: <run folder>/dumps, made for the new run
    c2.run.dump_dir[0] = 0; rq.pid = 31339;
    EXPECT(!plan_run(db, &rq, &q), "dumps in the run's folder refused: %s", q.refusal.message);
    char want[1500];
    snprintf(want, sizeof want, "%s/dumps", q.ckpt_dir);
    EXPECT(!strcmp(q.dump_dir, want) && q.dump_out.fd >= 0 && !strcmp(q.dump_out.path, want) && stat(want, &st) == 0,
           "dump folder %s", q.dump_dir);
    outdir_keep_created();
    close_plan(&q);
    // a --launch of another experiment, and one that does not exist
    int64_t other;
    { Manifest *mo = manifest_load(path); snprintf(mo->name, sizeof mo->name, "else"); other = add_launch(db, mo, path, NULL, 0, 1); manifest_free(mo); }
    rq.cfg = cfg; rq.pid = 31340; rq.launch_id = other;
    EXPECT(plan_run(db, &rq, &q) && strstr(q.refusal.message, "is of experiment else"), "another experiment's launch: %s", q.refusal.message);
    rq.launch_id = 9999;
    EXPECT(plan_run(db, &rq, &q) && strstr(q.refusal.message, "has no launch 9999"), "an unknown launch: %s", q.refusal.message);
    rundb_close(db);
    manifest_free(m);
}

TEST(run_plan_resume_generated) {
    char path[400], db_path[400];
    Manifest *m = one_variant("rr", path, db_path);
    Config cfg = m->variants[0].config;
    cfg.train.steps = 12;
    RunDB *db = rundb_open(db_path);
    for (int c = 0; c < 24; c++) {
        char uid[64];
        snprintf(uid, sizeof uid, "rr.v0.case%d", c);
        int rows = rnd(13);                            // step rows 1..rows recorded
        int n_ck = rnd(4), steps[3];                   // checkpoints at some steps (may exceed rows: lost rows)
        int damaged_newest = n_ck && rnd(4) == 0, recorded_gone = !n_ck && rnd(3) == 0, completed = rnd(6) == 0;
        int64_t id = add_run(db, 0, "rr", "v0", 0, completed ? "completed" : "interrupted", completed ? 12 : rows, uid);
        if (completed) rows = 12;
        char dir[1300];
        snprintf(dir, sizeof dir, "%.1200s/%s", cfg.run.checkpoint_dir, uid);
        mkdir(cfg.run.checkpoint_dir, 0755);
        mkdir(dir, 0755);
        for (int i = 0; i < n_ck; i++) { steps[i] = 3 * (i + 1) + rnd(2); write_ckpt(&cfg, dir, steps[i]); }
        if (damaged_newest) {   // flip a byte in the newest: it no longer verifies
            char p[1500];
            checkpoint_path(p, sizeof p, dir, steps[n_ck - 1]);
            FILE *f = fopen(p, "r+b");
            fseek(f, 2000, SEEK_SET);
            int b = fgetc(f);
            fseek(f, 2000, SEEK_SET);
            fputc(b ^ 0xff, f);
            fclose(f);
        }
        if (recorded_gone) { rundb_event(db, id, 3, "checkpoint", "gone/step_3.h5"); rundb_flush(db); }
        RunRequest rq = { .cfg = &cfg, .experiment = "rr", .variant = "v0", .resume = 1, .resume_uid = uid };
        RunPlan p;
        int refused = plan_run(db, &rq, &p);
        // expectation: the newest verifying checkpoint at or below the recorded rows
        int good = -1, any_good = 0;
        for (int i = 0; i < n_ck; i++) {
            if (damaged_newest && i == n_ck - 1) continue;
            any_good = 1;
            if (steps[i] <= rows && steps[i] > good) good = steps[i];
        }
        int ok;
        const char *why;
        if (completed) { ok = !refused && p.noop; why = "completed: nothing to do"; }
        else if (!n_ck && recorded_gone) { ok = refused && strstr(p.refusal.message, "were moved or deleted"); why = "recorded and gone"; }
        else if (n_ck && !any_good) { ok = refused && strstr(p.refusal.message, "no checkpoint that verifies"); why = "all damaged"; }
        else if (!n_ck) { ok = !refused && p.restart && !p.resume_path[0] && p.restart_stopped_at == rows; why = "from step 0"; }
        else if (good < 0) { ok = refused && strstr(p.refusal.message, "only up to step"); why = "rows lost beyond every checkpoint"; }
        else {
            char want[1500];
            checkpoint_path(want, sizeof want, dir, good);
            ok = !refused && !p.restart && !strcmp(p.resume_path, want) && p.resume_step == good && p.resume_run == id;
            why = "the newest checkpoint with its rows";
        }
        EXPECT(ok, "case %d (%s): rows %d, %d checkpoints (newest damaged %d): refused %d (%s), resume %s step %lld, restart %d",
               c, why, rows, n_ck, damaged_newest, refused, refused ? p.refusal.message : "", p.resume_path,
               (long long)p.resume_step, p.restart);
        if (!refused && !p.noop) {
            EXPECT(locked_elsewhere(dir), "case %d: the run folder is not locked", c);
        }
        close_plan(&p);
    }
    // a uid that is not a plain folder name is never used as a path
    const char *bad[] = { "../../victim", "a/b", ".hidden", "", NULL };
    for (int i = 0; bad[i]; i++) {
        if (!bad[i][0]) continue;
        RunRequest rq = { .cfg = &cfg, .experiment = "rr", .variant = "v0", .resume = 1, .resume_uid = bad[i] };
        RunPlan p;
        EXPECT(plan_run(db, &rq, &p) && strstr(p.refusal.message, "is not a plain folder name"), "uid '%s': %s", bad[i], p.refusal.message);
    }
    rundb_close(db);
    manifest_free(m);
}

int main(void) {
    if (tl_tmpdir(g_dir, sizeof g_dir, "test_plan")) return 1;
    IN_TMP(g_db, "gen.db");
    host_facts(&g_host);
    fake_launchers();
    RUN(slurm_task_lists);
    RUN(slurm_local_rank);
    RUN(fresh_launch_generated);
    RUN(launcher_generated);
    RUN(resume_each_end_status);
    RUN(refused_launches);
    RUN(preflight_generated);
    RUN(resources_round_trip);
    RUN(run_plan_new_run);
    RUN(run_plan_resume_generated);
    return tl_finish(g_dir);
}
