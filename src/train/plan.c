// plan.c — the launch decision and the run decision (plan.h).
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "plan.h"
#include "memory_fit.h"
#include "trainer.h"
#include "../backend/backend.h"
#include "../core/check.h"
#include "../core/crc32.h"
#include "../core/fileio.h"
#include "../core/env.h"
#include "../core/fs.h"
#include "../parallel/gpu_setup.h"
#include "../store/checkpoint.h"
#include "../store/compare.h"
#include "../store/dump.h"

#define GIB 1073741824.0

static int refuse(PlanRefusal *r, const char *hint, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(PlanRefusal *r, const char *hint, const char *fmt, ...) {
    r->refused = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    snprintf(r->hint, sizeof r->hint, "%s", hint ? hint : "");
    return 1;
}

// ---- words: NULL-terminated vectors of malloc'd strings ----------------------------------------
typedef struct { char **v; int n, cap; } Words;
static void words_add(Words *w, const char *s) {
    if (w->n + 2 > w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->v = realloc(w->v, (size_t)w->cap * sizeof *w->v);
        CHECK(w->v, "out of memory");
    }
    w->v[w->n++] = xstrdup(s);
    w->v[w->n] = NULL;
}
static void words_addf(Words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void words_addf(Words *w, const char *fmt, ...) {
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    words_add(w, buf);
}
static char **words_take(Words *w) {
    if (!w->v) w->v = xcalloc(1, sizeof *w->v);   // an empty vector: just the NULL
    return w->v;
}
void plan_free_words(char **words) {
    if (!words) return;
    for (char **p = words; *p; p++) free(*p);
    free(words);
}
static char **copy_strings(const char *const *s, int n) {
    char **out = xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) out[i] = xstrdup(s[i]);
    return out;
}

// ---- resources ----------------------------------------------------------------------------------
// Physical cores of this process's CPU set (distinct core/package pairs; Open MPI's slots count
// cores, not hardware threads), else the CPUs of the set.
static int physical_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) { long n = sysconf(_SC_NPROCESSORS_ONLN); return n > 0 ? (int)n : 0; }
    int n_cpus = CPU_COUNT(&set), n = 0;
    long seen[CPU_SETSIZE];
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        char path[128];
        long core = -1, pkg = -1;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        FILE *f = fopen(path, "r");
        if (f) { if (fscanf(f, "%ld", &core) != 1) core = -1; fclose(f); }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        f = fopen(path, "r");
        if (f) { if (fscanf(f, "%ld", &pkg) != 1) pkg = -1; fclose(f); }
        if (core < 0 || pkg < 0) return n_cpus;   // no topology: count CPUs
        long key = pkg * 1000000 + core;
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = seen[i] == key;
        if (!dup) seen[n++] = key;
    }
    return n > 0 ? n : n_cpus;
}

void plan_resources_here(PlanResources *r) {
    memset(r, 0, sizeof *r);
    if (gethostname(r->host, sizeof r->host - 1) != 0) snprintf(r->host, sizeof r->host, "?");
    snprintf(r->where, sizeof r->where, "this host (%.250s)", r->host);
    r->here = 1;
    r->mem_available = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        double kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) { r->mem_available = kb * 1024.0; break; }
        fclose(f);
    }
    r->cores = physical_cores();
    r->n_devices = gpu_device_count(r->no_device, sizeof r->no_device);
    if (r->n_devices > PLAN_MAX_DEVICES) r->n_devices = PLAN_MAX_DEVICES;
    for (int d = 0; d < r->n_devices; d++)
        r->device_memory[d] = gpu_device_memory(d, d == 0 ? r->device_name : NULL, sizeof r->device_name);
}

void plan_resources_print(const PlanResources *r, FILE *f) {
    fprintf(f, "boost-resources 1\nwhere %s\nhost %s\nmem_available %.0f\ncores %d\ndevices %d\n", r->where, r->host,
            r->mem_available, r->cores, r->n_devices);
    for (int d = 0; d < r->n_devices; d++) fprintf(f, "device_memory %d %.0f\n", d, r->device_memory[d]);
    if (r->device_name[0]) fprintf(f, "device_name %s\n", r->device_name);
    if (r->no_device[0]) fprintf(f, "no_device %s\n", r->no_device);
}

int plan_resources_parse(const char *text, PlanResources *r) {
    memset(r, 0, sizeof *r);
    r->mem_available = -1;
    int seen = 0;
    for (const char *p = text; p && *p; ) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[700];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        int d; double x;
        if (!strncmp(line, "boost-resources ", 16)) seen = 1;
        else if (!strncmp(line, "where ", 6)) snprintf(r->where, sizeof r->where, "%.299s", line + 6);
        else if (!strncmp(line, "host ", 5)) snprintf(r->host, sizeof r->host, "%.255s", line + 5);
        else if (sscanf(line, "mem_available %lf", &x) == 1) r->mem_available = x;
        else if (sscanf(line, "cores %d", &d) == 1) r->cores = d;
        else if (sscanf(line, "devices %d", &d) == 1) r->n_devices = d >= 0 && d <= PLAN_MAX_DEVICES ? d : PLAN_MAX_DEVICES;
        else if (sscanf(line, "device_memory %d %lf", &d, &x) == 2 && d >= 0 && d < PLAN_MAX_DEVICES) r->device_memory[d] = x;
        else if (!strncmp(line, "device_name ", 12)) snprintf(r->device_name, sizeof r->device_name, "%.127s", line + 12);
        else if (!strncmp(line, "no_device ", 10)) snprintf(r->no_device, sizeof r->no_device, "%.299s", line + 10);
        p = e ? e + 1 : NULL;
    }
    return seen;
}

// ---- the pre-flight -------------------------------------------------------------------------------
int plan_preflight(const Config *c, const char *experiment, const char *variant, const PlanResources *res,
                   int ranks_per_node, PlanRefusal *out) {
    memset(out, 0, sizeof *out);
    const char *device = config_device_name(c->run.device);
    const BackendKind *kind = backend_kind(device);
    if (!kind || !strcmp(kind->name, "dry")) return 0;
    int world = c->parallel.tp * c->parallel.pp * c->parallel.dp;
    if (ranks_per_node < 1 || ranks_per_node > world) ranks_per_node = world;
    double need = 0;
    DType dt = c->train.precision == PRECISION_BF16 ? DT_BF16 : DT_F32;
    for (int r = 0; r < world; r++) {   // the largest rank (pipeline stages differ)
        MemReport m;
        trainer_memory_report(c, r, dt, &m);
        if (m.total > need) need = m.total;
    }
    char simulate[1500], reduce[] = "lower train.batch_size, raise parallel.tp or parallel.pp, or turn on "
                                    "boost.lowrank_ckpt / boost.full_recompute";
    char manifest[400];
    if (c->source_path[0]) snprintf(manifest, sizeof manifest, "%.399s", c->source_path);
    else snprintf(manifest, sizeof manifest, "experiments/%.300s.yaml", experiment);
    snprintf(simulate, sizeof simulate, "make exp EXP=%.200s VARIANT=%.200s SIMULATE=1 prices it on a GPU profile without one; "
             "build/info --config %s --variant %.200s --memory shows its memory", experiment, variant, manifest, variant);
    if (kind->per_rank_device) {
        if (res->n_devices <= 0) {
            char hint[4096];
            snprintf(hint, sizeof hint, "launch it where the ranks get a GPU (inside a GPU allocation: salloc/sbatch with "
                     "--gpus-per-node, docs/gpu.md), or set run.device=cpu; %s", simulate);
            out->preflight = 1;
            return refuse(out, hint, "variant %s runs on %s (run.device=%s), but %s has no usable CUDA device: %s; "
                          "refused before any of its %d rank%s started", variant, device, device, res->where,
                          res->no_device[0] ? res->no_device : "none visible", world, world == 1 ? "" : "s");
        }
        // ranks share the node's devices round-robin (local rank modulo devices): the busiest
        // device holds ceil(ranks / devices) of them
        int per_device = (ranks_per_node + res->n_devices - 1) / res->n_devices;
        double smallest = INFINITY;
        int which = 0;
        for (int d = 0; d < res->n_devices; d++)
            if (res->device_memory[d] > 0 && res->device_memory[d] < smallest) { smallest = res->device_memory[d]; which = d; }
        if (isfinite(smallest) && need * per_device > smallest) {
            char hint[4096];
            snprintf(hint, sizeof hint, "%s; or a device with more memory; %s", reduce, simulate);
            out->preflight = 1;
            return refuse(out, hint, "variant %s needs %.1f GiB per device (%d rank%s of %.1f GiB each on a device, the dry "
                          "back end's accounting), but device %d of %s (%s) has %.1f GiB: refused before any rank started",
                          variant, need * per_device / GIB, per_device, per_device == 1 ? "" : "s", need / GIB, which,
                          res->where, res->device_name[0] ? res->device_name : "CUDA", smallest / GIB);
        }
        return 0;
    }
    char hint[4096];
    snprintf(hint, sizeof hint, "%s; a paper-scale variant runs on GPUs: the GPU recipes are experiments/paper-*.yaml "
             "(e.g. make exp EXP=paper-ablations on a 4-GPU node, docs/gpu.md); %s", reduce, simulate);
    if (res->here) {   // this host: the one memory pre-flight build/train makes too (MemAvailable, cgroup, ulimit)
        char why[1500];
        if (trainer_memory_fits(c, -1, ranks_per_node, why, sizeof why)) return 0;
        out->preflight = 1;
        return refuse(out, hint, "variant %s does not fit: %s; refused before starting it", variant, why);
    }
    if (!(res->mem_available > 0)) return 0;
    double avail = res->mem_available / ranks_per_node;
    if (need <= avail) return 0;
    out->preflight = 1;
    return refuse(out, hint, "variant %s needs %.1f GiB per rank (%d rank%s on a node, the dry back end's accounting) but "
                  "%s has %.1f GiB available per rank: refused before starting it", variant, need / GIB, ranks_per_node,
                  ranks_per_node == 1 ? "" : "s", res->where, avail / GIB);
}

// ---- the launcher --------------------------------------------------------------------------------
void plan_launch_env(LaunchEnv *e) {
    memset(e, 0, sizeof *e);
    const char *job = getenv("SLURM_JOB_ID");
    if (job && *job) snprintf(e->slurm_job, sizeof e->slurm_job, "%s", job);
    const char *t = getenv("SLURM_TASKS_PER_NODE");
    if (e->slurm_job[0] && t) snprintf(e->slurm_tasks_spec, sizeof e->slurm_tasks_spec, "%s", t);
    const char *m = getenv("SLURM_MPI_TYPE");
    e->slurm_mpi_type = m && *m;
    e->cores = physical_cores();
    e->root = geteuid() == 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) e->openmpi = strstr(lib, "Open MPI") != NULL;
    e->pid = (long)getpid();
}

static const char *base_name(const char *p) { const char *s = strrchr(p, '/'); return s ? s + 1 : p; }

// Is `prog` an executable file (a path), or one on PATH?
static int executable(const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0;
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

// A hostfile's hosts and slots: Open MPI's "host slots=N" lines (or a plain host per line, as
// srun's --nodefile takes them). *slots 0 when a line gives none (the launcher then decides).
static int read_hostfile(const char *path, int *hosts, int *slots, int *first, PlanRefusal *r) {
    char err[1400];
    FILE *f = file_fopen_regular(path, "r", "HOSTFILE", err, sizeof err);
    if (!f) return refuse(r, "HOSTFILE=path of a readable file: one host per line, \"host slots=N\" for Open MPI's mpirun",
                          "%s", err);
    char line[1024];
    int n = 0, total = 0, unknown = 0;
    *first = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char host[512];
        if (sscanf(line, "%511s", host) != 1) continue;
        const char *s = strstr(line, "slots=");
        int k = 0;
        if (s && (s == line || isspace((unsigned char)s[-1])) && sscanf(s + 6, "%d", &k) == 1 && k > 0) total += k;
        else unknown = 1, k = 0;
        if (n == 0) *first = k;
        n++;
    }
    fclose(f);
    if (n == 0) return refuse(r, "one host per line (\"host slots=N\" for Open MPI's mpirun)", "HOSTFILE=%s names no host", path);
    *hosts = n;
    *slots = unknown ? 0 : total;
    return 0;
}

static int has_word(const char *const *w, int n, const char *prefix) {
    for (int i = 0; i < n; i++) if (!strncmp(w[i], prefix, strlen(prefix))) return 1;
    return 0;
}

// Which launcher, with which fixed words: LAUNCHER= when given; else srun inside a Slurm
// allocation, mpirun elsewhere.
static int choose_launcher(const LaunchEnv *e, PlanLauncher *l, PlanRefusal *r) {
    memset(l, 0, sizeof *l);
    l->nodes = 1;
    Words w = {0};
    const char *first;
    if (e->n_words > 0) {
        first = base_name(e->words[0]);
        l->kind = !strcmp(first, "srun") ? LAUNCHER_SRUN
                : e->openmpi && (!strcmp(first, "mpirun") || !strcmp(first, "mpiexec") || !strcmp(first, "orterun"))
                ? LAUNCHER_MPIRUN : LAUNCHER_OTHER;
        for (int i = 0; i < e->n_words; i++) words_add(&w, e->words[i]);
        snprintf(l->why, sizeof l->why, "named by LAUNCHER=");
    } else if (e->slurm_job[0]) {
        l->kind = LAUNCHER_SRUN;
        words_add(&w, "srun");
        snprintf(l->why, sizeof l->why, "the default inside Slurm job %s", e->slurm_job);
    } else {
        l->kind = e->openmpi ? LAUNCHER_MPIRUN : LAUNCHER_OTHER;
        words_add(&w, e->openmpi ? "mpirun" : "mpiexec");
        snprintf(l->why, sizeof l->why, "the default outside a Slurm allocation");
    }
    int hosts = 0, slots = 0, first_slots = 0;
    const char *hf = e->hostfile && *e->hostfile ? e->hostfile : NULL;
    if (hf && read_hostfile(hf, &hosts, &slots, &first_slots, r)) { plan_free_words(words_take(&w)); return 1; }
    if (l->kind == LAUNCHER_SRUN) {
        // Debian 12's Open MPI speaks PMIx, not PMI-2 (docs/gpu.md); a site's default stands
        // when SLURM_MPI_TYPE or an --mpi word says which
        if (!e->slurm_mpi_type && !has_word(e->words, e->n_words, "--mpi")) words_add(&w, "--mpi=pmix");
        words_add(&w, "--kill-on-bad-exit=1");   // one rank failing stops the others, as mpirun does
        if (hf) words_addf(&w, "--nodefile=%s", hf);
    } else if (l->kind == LAUNCHER_MPIRUN) {
        if (e->root) words_add(&w, "--allow-run-as-root");
        // mpirun sends SIGTERM then SIGKILL: leave the ranks time to record 'interrupted'
        words_add(&w, "--mca"); words_add(&w, "odls_base_sigkill_timeout"); words_add(&w, "5");
        if (hf) { words_add(&w, "--hostfile"); words_add(&w, hf); }
    } else if (hf) {
        plan_free_words(words_take(&w));
        return refuse(r, "pass the launcher's own hostfile option in LAUNCHER_ARGS (e.g. LAUNCHER_ARGS=\"-f hosts\" for "
                      "MPICH's mpiexec), or use mpirun (Open MPI) or srun",
                      "HOSTFILE=%s: %s is neither Open MPI's mpirun nor Slurm's srun, and its hostfile option is not known "
                      "here", hf, e->words[0]);
    }
    for (int i = 0; i < e->n_args; i++) words_add(&w, e->args[i]);
    l->words = words_take(&w);
    l->n_words = w.n;
    l->label[0] = 0;
    for (int i = 0; i < l->n_words; i++) {
        size_t len = strlen(l->label);
        snprintf(l->label + len, sizeof l->label - len, "%s%s", len ? " " : "", l->words[i]);
    }
    // where the ranks go: the hostfile's hosts, the allocation's nodes, or this host
    int alloc_nodes = 0, alloc_tasks = 0;
    int alloc_first = e->slurm_tasks_spec[0] ? env_slurm_tasks(e->slurm_tasks_spec, 0, &alloc_tasks, &alloc_nodes) : -1;
    if (hf) {
        l->nodes = hosts; l->slots = slots; l->first_node_slots = first_slots; l->remote = 1;
        snprintf(l->slots_from, sizeof l->slots_from, "HOSTFILE %s: %d host%s, %s", hf, hosts, hosts == 1 ? "" : "s",
                 slots ? "slots as listed" : "slots not listed");
    } else if (e->slurm_job[0] && l->kind != LAUNCHER_OTHER && alloc_first >= 0) {
        // srun, or Open MPI's mpirun reading the allocation (its ras/slurm component)
        l->nodes = alloc_nodes; l->slots = alloc_tasks; l->first_node_slots = alloc_first;
        l->remote = l->kind == LAUNCHER_SRUN;
        snprintf(l->slots_from, sizeof l->slots_from, "Slurm job %s: SLURM_TASKS_PER_NODE=%s", e->slurm_job, e->slurm_tasks_spec);
    } else if (l->kind == LAUNCHER_SRUN) {
        l->remote = 1;   // srun outside an allocation asks for one: nodes and slots are Slurm's
        snprintf(l->slots_from, sizeof l->slots_from, "srun asks Slurm for an allocation");
    } else {
        l->slots = e->cores; l->first_node_slots = e->cores;
        snprintf(l->slots_from, sizeof l->slots_from, "this host's %d core%s", e->cores, e->cores == 1 ? "" : "s");
    }
    if (l->nodes < 1) l->nodes = 1;
    return 0;
}

char **plan_launcher_argv(const PlanLauncher *l, const LaunchEnv *e, int world, int step, int *oversubscribed) {
    Words w = {0};
    int over = l->slots > 0 && world > l->slots;
    words_add(&w, l->words[0]);
    if (l->kind == LAUNCHER_SRUN) {
        words_addf(&w, "--ntasks=%d", world);
        if (over) words_add(&w, "--overcommit");
        if (step >= 0) words_addf(&w, "--job-name=boost.%ld.%d", e->pid, step);   // exp signals the step by it
    } else {
        words_add(&w, "-np"); words_addf(&w, "%d", world);
        if (over && l->kind == LAUNCHER_MPIRUN) words_add(&w, "--oversubscribe");
        else over = over && l->kind == LAUNCHER_MPIRUN;
    }
    for (int i = 1; i < l->n_words; i++) words_add(&w, l->words[i]);
    if (oversubscribed) *oversubscribed = over;
    return words_take(&w);
}

// ---- a launch ---------------------------------------------------------------------------------------
// The launch's overrides, then the new ones; one assignment per key (the last wins).
static int merge_sets(char **first, int n1, const char *const *second, int n2, char ***out) {
    const char **all = xcalloc((size_t)(n1 + n2 + 1), sizeof *all);
    int n = 0, k = 0;
    for (int i = 0; i < n1; i++) all[n++] = first[i];
    for (int i = 0; i < n2; i++) all[n++] = second[i];
    *out = xcalloc((size_t)n + 1, sizeof **out);
    for (int i = 0; i < n; i++) {
        size_t kl = strcspn(all[i], "=");
        int later = 0;
        for (int j = i + 1; j < n && !later; j++) later = strcspn(all[j], "=") == kl && !strncmp(all[i], all[j], kl);
        if (!later) (*out)[k++] = xstrdup(all[i]);
    }
    free(all);
    return k;
}

static int world_of(const Config *c) { return c->parallel.tp * c->parallel.pp * c->parallel.dp; }

// The ranks of a `world`-rank run on its busiest node.
static int ranks_on_a_node(const PlanLauncher *l, int world, int under_launcher) {
    if (!under_launcher) return world;
    if (l->first_node_slots > 0 && l->slots > 0 && world <= l->slots) return world < l->first_node_slots ? world : l->first_node_slots;
    return (world + l->nodes - 1) / l->nodes;
}

int plan_launch(const LaunchRequest *rq, RunDB *db, LaunchPlan *p) {
    memset(p, 0, sizeof *p);
    p->rq = rq;
    p->resume = rq->resume;
    p->dry = rq->dry;
    p->simulate = rq->simulate_profile != NULL;
    p->repeat = rq->repeat > 0 ? rq->repeat : 1;
    xsnprintf(p->path, sizeof p->path, "%s", rq->path);
    snprintf(p->only, sizeof p->only, "%s", rq->only ? rq->only : "");
    p->new_sets = copy_strings(rq->sets, rq->n_sets);
    p->n_new = rq->n_sets;
    p->man = manifest_load_with(rq->path, rq->sets, rq->n_sets);
    if (p->only[0]) (void)manifest_variant(p->man, p->only);   // dies listing the names if unknown
    xsnprintf(p->db_path, sizeof p->db_path, "%s", p->man->variants[0].config.run.db);

    // ---- a resume continues a launch with its own overrides
    if (rq->resume) {
        CHECK(db, "plan_launch: a resume needs the launch's database");
        int have = rq->launch_id ? rundb_launch(db, rq->launch_id, &p->launch) : rundb_latest_launch(db, p->man->name, &p->launch);
        const char *hint = "start one with make exp EXP=<name>; a run made by hand resumes with build/train FILE --variant V --resume";
        if (!have && rq->launch_id) return refuse(&p->refusal, hint, "no launch %lld in %s", (long long)rq->launch_id, p->db_path);
        if (!have) return refuse(&p->refusal, hint, "no launch of %s in %s to resume", p->man->name, p->db_path);
        if (strcmp(p->launch.experiment, p->man->name))
            return refuse(&p->refusal, "name the launch's own experiment (make exp EXP=<its experiment> RESUME=1 LAUNCH=id)",
                          "launch %lld is of experiment %s, not %s", (long long)p->launch.id, p->launch.experiment, p->man->name);
        if (strcmp(p->launch.manifest_sha256, p->man->sha256))
            return refuse(&p->refusal, "restore the manifest of the launch, or start a new launch (make exp without RESUME)",
                          "%s changed since launch %lld (sha256 %.12s..., now %.12s...): a launch is resumed with its own manifest",
                          p->path, (long long)p->launch.id, p->launch.manifest_sha256, p->man->sha256);
        p->n_all = merge_sets(p->launch.overrides, p->launch.n_overrides, rq->sets, rq->n_sets, &p->all_sets);
        manifest_free(p->man);
        p->man = manifest_load_with(p->path, (const char *const *)p->all_sets, p->n_all);
        if (!p->only[0] && p->launch.variant_filter[0]) snprintf(p->only, sizeof p->only, "%s", p->launch.variant_filter);
        if (p->only[0]) (void)manifest_variant(p->man, p->only);
        p->repeat = p->launch.repeat > 0 ? p->launch.repeat : 1;
    } else {
        p->all_sets = copy_strings(rq->sets, rq->n_sets);
        p->n_all = rq->n_sets;
    }
    const Manifest *man = p->man;

    // A launch and its runs live in one database: a variant recording elsewhere would put its
    // run under a launch id that means another launch (or nothing) in that database.
    for (int v = 1; v < man->n_variants; v++)
        if (strcmp(man->variants[v].config.run.db, p->db_path) && (!p->only[0] || !strcmp(man->variants[v].name, p->only)))
            return refuse(&p->refusal, "set run.db once for the whole experiment (top-level run: db:), not per variant",
                          "%s: variant %s sets run.db=%s, but the launch is recorded in %s (the first variant's); "
                          "a launch and all its runs must be in one database", p->path, man->variants[v].name,
                          man->variants[v].config.run.db, p->db_path);
    // An edited manifest must get a new version: results of one version come from one text.
    if (!rq->resume && db) {
        RunRow first;
        if (rundb_manifest_conflicts(db, man->name, man->version, man->sha256, &first) > 0)
            return refuse(&p->refusal, "bump `version:` in the manifest (results of one version must come from one text), or use another run.db",
                          "%s changed since run %s (version %s, sha256 %.12s...) was recorded in %s; its content is now %.12s...",
                          p->path, first.uid, man->version, first.manifest_sha256, p->db_path, man->sha256);
    }

    // ---- the launcher
    if (!p->simulate && choose_launcher(rq->env, &p->launcher, &p->refusal)) return 1;

    // ---- the runs: REPEAT rounds of the variants, interleaved
    p->runs = xcalloc((size_t)p->repeat * (size_t)man->n_variants + 1, sizeof *p->runs);
    const char *needs = NULL;
    int needs_world = 0;
    for (int r = 0; r < p->repeat; r++)
        for (int i = 0; i < man->n_variants; i++) {
            const ManifestVariant *v = &man->variants[i];
            if (p->only[0] && strcmp(v->name, p->only)) continue;
            PlannedRun *pr = &p->runs[p->n_runs];
            pr->variant = i;
            pr->repeat_index = r;
            pr->world = world_of(&v->config);
            if (!p->only[0] && v->config.run.on_demand && !p->simulate) {
                if (r == 0) { pr->action = PLAN_RUN_ON_DEMAND; p->n_runs++; }
                continue;
            }
            pr->action = PLAN_RUN_START;
            if (rq->resume && rundb_launch_run(db, p->launch.id, v->name, r, &pr->prior))
                pr->action = !strcmp(pr->prior.status, RUNDB_END_STATUS[RUN_END_COMPLETED]) &&
                             pr->prior.last_step >= v->config.train.steps ? PLAN_RUN_DONE : PLAN_RUN_RESUME;
            pr->under_launcher = !p->simulate && (pr->world > 1 || p->launcher.kind == LAUNCHER_SRUN ||
                                                  (rq->env->hostfile && rq->env->hostfile[0]));
            if (pr->action != PLAN_RUN_DONE) {
                p->n_to_run++;
                if (pr->under_launcher) {
                    p->uses_launcher = 1;
                    if (!needs) { needs = v->name; needs_world = pr->world; }
                    int rpn = ranks_on_a_node(&p->launcher, pr->world, 1);
                    if (rpn > p->ranks_per_node) p->ranks_per_node = rpn;
                } else if (pr->world > p->ranks_per_node) p->ranks_per_node = pr->world;
            }
            p->n_runs++;
        }
    if (needs && !executable(p->launcher.words[0])) {
        const char *what = p->launcher.kind == LAUNCHER_SRUN ? "Slurm's srun (run inside the cluster's environment, or "
                           "Debian: apt-get install slurm-client)" : "Debian: apt-get install openmpi-bin";
        return refuse(&p->refusal, what, "variant %s needs %d rank%s, but %s is not on PATH (the launcher: %s)", needs,
                      needs_world, needs_world == 1 ? "" : "s", p->launcher.words[0], p->launcher.label);
    }
    return 0;
}

int plan_launch_preflight(LaunchPlan *p, const PlanResources *res) {
    if (p->simulate) return 0;
    for (int k = 0; k < p->n_runs; k++) {
        const PlannedRun *pr = &p->runs[k];
        if (pr->repeat_index || pr->action == PLAN_RUN_DONE || pr->action == PLAN_RUN_ON_DEMAND) continue;
        const ManifestVariant *v = &p->man->variants[pr->variant];
        if (plan_preflight(&v->config, p->man->name, v->name, res, ranks_on_a_node(&p->launcher, pr->world, pr->under_launcher),
                           &p->refusal))
            return 1;
    }
    return 0;
}

char **plan_probe_argv(const LaunchPlan *p, const char *exp_bin) {
    if (p->simulate || !p->uses_launcher || !p->launcher.remote) return NULL;
    LaunchEnv e = *p->rq->env;
    PlanLauncher one = p->launcher;
    one.slots = 0;   // one task: never oversubscribed
    char **w = plan_launcher_argv(&one, &e, 1, -1, NULL);
    int n = 0;
    while (w[n]) n++;
    w = realloc(w, (size_t)(n + 3) * sizeof *w);
    CHECK(w, "out of memory");
    w[n] = xstrdup(exp_bin); w[n + 1] = xstrdup("--probe-resources"); w[n + 2] = NULL;
    return w;
}

void plan_commands(LaunchPlan *p, int64_t launch_id, double peak) {
    const LaunchRequest *rq = p->rq;
    char launch_s[32], peak_s[40];
    snprintf(launch_s, sizeof launch_s, "%lld", (long long)launch_id);
    snprintf(peak_s, sizeof peak_s, "%.17g", peak);   // exact: runs record the launch's peak
    for (int k = 0; k < p->n_runs; k++) {
        PlannedRun *pr = &p->runs[k];
        plan_free_words(pr->argv);
        pr->argv = NULL;
        if (pr->action == PLAN_RUN_DONE || pr->action == PLAN_RUN_ON_DEMAND) continue;
        const ManifestVariant *v = &p->man->variants[pr->variant];
        Words w = {0};
        char rep_s[16];
        snprintf(rep_s, sizeof rep_s, "%d", pr->repeat_index);
        if (p->simulate) {   // the simulated run records itself (kind simulated) in the launch
            words_add(&w, rq->sim_bin); words_add(&w, p->path); words_add(&w, "--variant"); words_add(&w, v->name);
            words_add(&w, "--hardware"); words_add(&w, rq->simulate_profile);
            for (int s = 0; s < p->n_all; s++) { words_add(&w, "--set"); words_add(&w, p->all_sets[s]); }
            if (!p->dry) {
                words_add(&w, "--record");
                words_add(&w, "--launch"); words_add(&w, launch_s);
                words_add(&w, "--repeat-index"); words_add(&w, rep_s);
            }
            pr->argv = words_take(&w);
            continue;
        }
        if (pr->under_launcher) {
            char **l = plan_launcher_argv(&p->launcher, rq->env, pr->world, k, &pr->oversubscribed);
            for (char **x = l; *x; x++) words_add(&w, *x);
            plan_free_words(l);
        }
        words_add(&w, rq->train_bin); words_add(&w, p->path); words_add(&w, "--variant"); words_add(&w, v->name);
        words_add(&w, "--no-config-table");
        if (pr->action == PLAN_RUN_RESUME) {
            words_addf(&w, "--resume=%s", pr->prior.uid);
            words_add(&w, "--peak-gflops"); words_add(&w, peak_s);   // the launch's one peak, again
            // new overrides only: train adds the run's stored ones
            for (int s = 0; s < p->n_new; s++) { words_add(&w, "--set"); words_add(&w, p->new_sets[s]); }
            for (int s = 0; s < rq->n_allow_change; s++) { words_add(&w, "--allow-change"); words_add(&w, rq->allow_change[s]); }
        } else {
            for (int s = 0; s < p->n_all; s++) { words_add(&w, "--set"); words_add(&w, p->all_sets[s]); }
            if (!p->dry) {
                words_add(&w, "--launch"); words_add(&w, launch_s);
                words_add(&w, "--repeat-index"); words_add(&w, rep_s);
                words_add(&w, "--peak-gflops"); words_add(&w, peak_s);
            }
        }
        pr->argv = words_take(&w);
    }
}

void plan_free(LaunchPlan *p) {
    for (int k = 0; k < p->n_runs; k++) plan_free_words(p->runs[k].argv);
    free(p->runs);
    plan_free_words(p->launcher.words);
    plan_free_words(p->all_sets);
    plan_free_words(p->new_sets);
    rundb_launch_row_free(&p->launch);
    manifest_free(p->man);
    memset(p, 0, sizeof *p);
}

// ---- a run ------------------------------------------------------------------------------------------
// A run uid names a folder under run.checkpoint_dir: one path component of
// [A-Za-z0-9._+=,@%:~-], not starting with '.', at most 255 bytes. A uid from the database or
// the command line that is anything else (`../../victim`, `a/b`) is refused, never used
// as a path.
static int check_uid(const char *uid, const char *where, PlanRefusal *r) {
    size_t n = strlen(uid);
    int ok = n > 0 && n <= 255 && uid[0] != '.';
    for (const char *p = uid; ok && *p; p++)
        ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+=,@%:~-", *p) != NULL;
    if (ok) return 0;
    return refuse(r, "resume a run by the uid exp or train printed (sqlite3 RUN_DB 'SELECT uid FROM runs')",
                  "%s: run uid '%.300s' is not a plain folder name (one path component of letters, digits and ._+=,@%%:~-, "
                  "not starting with '.', at most 255 bytes); it is never used as a path", where, uid);
}

// An output folder opened as a handle (mkdir -p; core/outdir.h: its last component never a
// link) and proven writable: a checkpoint or dump folder that cannot be written stops the run
// before step 1, not after the training.
static int open_writable_dir(OutDir *d, const char *dir, const char *key, PlanRefusal *r) {
    char err[2000];
    if (outdir_open(d, dir, 1, err, sizeof err) != 0 || outdir_probe_writable(d, err, sizeof err) != 0)
        return refuse(r, NULL, "%s: %s (the run would lose its output; choose a writable %s)", key, err, key);
    return 0;
}

// The run's own folder <run.checkpoint_dir>/<uid>, made if absent: a real directory, never a
// link (a folder replaced by a link to another run's would resume that run and write into it),
// proven writable, and locked: one owner per run, an exclusive flock on the folder's handle,
// held until the process exits. A second process (a resume of a live run) is refused.
// Everything of the run is written through this handle.
static int open_run_dir(RunPlan *p, const char *checkpoint_dir, PlanRefusal *r) {
    char err[2000];
    if (open_writable_dir(&p->ckpt_root, checkpoint_dir, "run.checkpoint_dir", r)) return 1;
    if (outdir_sub(&p->run_dir, &p->ckpt_root, p->uid, 1, err, sizeof err) != 0) {
        if (errno == ELOOP)
            return refuse(r, "remove the link (rm on the link itself) or restore the run's own folder",
                          "run folder %s is a symbolic link; a run's folder must be its own directory "
                          "(a link could make this run resume from and write into another run's)", p->ckpt_dir);
        return refuse(r, NULL, "run.checkpoint_dir: %s (choose a writable run.checkpoint_dir)", err);
    }
    if (outdir_probe_writable(&p->run_dir, err, sizeof err) != 0)
        return refuse(r, NULL, "run.checkpoint_dir: %s (choose a writable run.checkpoint_dir)", err);
    if (flock(p->run_dir.fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return refuse(r, "wait for it to end, or stop it (Ctrl-C / kill -TERM): it records 'interrupted' and can then be resumed",
                          "run %s is live: another process holds its lock on %s (a run is never trained or resumed by two processes at once)",
                          p->uid, p->ckpt_dir);
        DIE("flock %s failed: %s", p->ckpt_dir, strerror(errno));
    }
    return 0;
}

// <experiment>.<variant>.<stamp>.<pid>, within a folder name's 255 bytes: a longer pair of
// names is cut and followed by the CRC-32 of the full pair (docs/configuration.md).
static void new_run_uid(char *uid, size_t n, const char *experiment, const char *variant, const char *stamp, long pid) {
    char tail[64], pair[600];
    snprintf(tail, sizeof tail, ".%s.%ld", stamp, pid);
    snprintf(pair, sizeof pair, "%s.%s", experiment, variant);
    size_t room = 255 - strlen(tail);
    if (strlen(pair) > room) {
        uint32_t c = crc32_update(0, pair, strlen(pair));
        snprintf(pair + room - 9, sizeof pair - (room - 9), "~%08x", c);
    }
    xsnprintf(uid, n, "%s%s", pair, tail);
}

void plan_dump_dir(const Config *cfg, const char *ckpt_dir, char *buf, size_t n) {
    if (cfg->run.dump_dir[0]) xsnprintf(buf, n, "%s", cfg->run.dump_dir);
    else xsnprintf(buf, n, "%s/dumps", ckpt_dir);
}

// The run to resume: its folder, lock and checkpoint (plan_run).
static int plan_resume(RunDB *db, const RunRequest *rq, RunPlan *p) {
    const Config *cfg = rq->cfg;
    const char *uid = rq->resume_uid ? rq->resume_uid : "";
    if (uid[0] && check_uid(uid, "--resume", &p->refusal)) return 1;
    RunRow *row = &p->row;
    if (!db || !(uid[0] ? rundb_run_by_uid(db, uid, row) : rundb_latest_run(db, rq->experiment, rq->variant, row)))
        return refuse(&p->refusal, NULL, "RESUME: no run %s%s%s/%s in %s to resume", uid[0] ? uid : "of ", uid[0] ? " (" : "",
                      rq->experiment, rq->variant, db ? cfg->run.db : "(--no-db)");
    if (uid[0] && (strcmp(row->experiment, rq->experiment) || strcmp(row->variant, rq->variant)))
        return refuse(&p->refusal, NULL, "RESUME: run %s is of %s/%s, not of %s/%s", uid, row->experiment, row->variant,
                      rq->experiment, rq->variant);
    if (!strcmp(row->status, RUNDB_END_STATUS[RUN_END_COMPLETED]) && row->last_step >= cfg->train.steps) {
        p->noop = 1;
        return 0;
    }
    char where[1200];
    snprintf(where, sizeof where, "%s: run %lld", cfg->run.db, (long long)row->id);
    if (check_uid(row->uid, where, &p->refusal)) return 1;
    xsnprintf(p->uid, sizeof p->uid, "%s", row->uid);
    xsnprintf(p->ckpt_dir, sizeof p->ckpt_dir, "%s/%s", cfg->run.checkpoint_dir, p->uid);
    if (open_run_dir(p, cfg->run.checkpoint_dir, &p->refusal)) return 1;
    int n_damaged = 0;
    CheckpointMeta meta = {0};
    if (!checkpoint_latest_of_run_in(&p->run_dir, p->uid, INT64_MAX, p->resume_path, sizeof p->resume_path, &p->resume_step,
                                  &meta, NULL, &n_damaged)) {
        // None there. A run that never wrote one (stopped before its first checkpoint) trains
        // again from step 0 as the same run (its row, uid and folder): never a second run beside
        // an orphaned first. One whose checkpoints are damaged, or recorded and gone, is refused:
        // starting it again would discard its recorded steps.
        char recorded[1500];
        int rec_step = rundb_last_checkpoint(db, row->id, recorded, sizeof recorded);
        if (n_damaged)
            return refuse(&p->refusal, NULL, "RESUME: run %s has no checkpoint that verifies and is its own in %s (%d skipped: see the warnings above)",
                          p->uid, p->ckpt_dir, n_damaged);
        if (rec_step >= 0)
            return refuse(&p->refusal, "restore the run's checkpoint folder (or its newest checkpoint), or start a new run (without --resume)",
                          "RESUME: run %s has no checkpoint in %s, but %s records its checkpoint of step %d (%s): "
                          "its checkpoints were moved or deleted; starting it again from step 0 would discard its "
                          "recorded steps", p->uid, p->ckpt_dir, cfg->run.db, rec_step, recorded);
        p->restart = 1;
        p->restart_stopped_at = row->last_step;
        p->resume_config = rundb_run_config(db, row->id);
    } else {
        p->resume_config = meta.config_json;
        meta.config_json = NULL;
        checkpoint_meta_free(&meta);
    }
    // Rows lost to a failing database (a full disk) are recomputed: the resume starts from a
    // checkpoint whose steps all have their rows.
    int rows_upto = rundb_steps_contiguous(db, row->id);
    if (!p->restart && p->resume_step > rows_upto) {
        char newest[1500];
        snprintf(newest, sizeof newest, "%s", p->resume_path);
        free(p->resume_config);
        p->resume_config = NULL;
        if (checkpoint_latest_of_run_in(&p->run_dir, p->uid, rows_upto, p->resume_path, sizeof p->resume_path, &p->resume_step,
                                     &meta, NULL, NULL)) {
            p->resume_config = meta.config_json;
            meta.config_json = NULL;
            checkpoint_meta_free(&meta);
        } else {
            p->resume_path[0] = 0;
        }
        if (!p->resume_path[0])
            return refuse(&p->refusal, "start a new run (without --resume): this one cannot be completed truthfully",
                          "RESUME: run %s: %s has the step rows only up to step %d, and no checkpoint at or before "
                          "it verifies (the newest, %s, is later); resuming would record a run with missing rows",
                          p->uid, cfg->run.db, rows_upto, newest);
        snprintf(p->warning, sizeof p->warning, "warning: %s has the step rows of run %s only up to step %d (rows were lost: "
                 "a full disk?); resuming from %s (step %lld) so that the lost steps are recomputed", cfg->run.db, p->uid,
                 rows_upto, p->resume_path, (long long)p->resume_step);
    }
    // A resume continues from its checkpoint: a run never goes back below a step it trained.
    // (train.steps at the checkpoint's step ends the run there: nothing is left to train.)
    if (!p->restart && cfg->train.steps < p->resume_step) {
        char hint[300];
        snprintf(hint, sizeof hint, "--set train.steps=%lld --allow-change train.steps ends the run at its checkpoint (a "
                 "larger value trains on); or start a new run (without --resume)", (long long)p->resume_step);
        return refuse(&p->refusal, hint,
                      "RESUME: train.steps=%d is below step %lld of the checkpoint run %s resumes from (%s): a resume continues "
                      "from its checkpoint and never trains a run back to fewer steps", cfg->train.steps,
                      (long long)p->resume_step, p->uid, p->resume_path);
    }
    p->resume_run = row->id;
    p->launch_id = row->launch_id;
    p->resumed_peak = row->peak_gflops;
    return 0;
}

// Where the run's step dumps go: opened, proven writable, and the run's own. Never inside
// run.checkpoint_dir except below this run's folder, and never that folder itself (its
// checkpoints have the names of step dumps, step_<N>.h5). A dump folder holds the dumps of
// one run: it is locked as the run's folder is (a second live run is refused), and every
// step_<N>.h5 already in it must be this run's (a resume redoes its own): a second run given
// the same run.dump_dir never overwrites another's dumps nor mixes its own in among them.
static int open_dump_dir(RunPlan *p, const Config *cfg) {
    char err[3000];
    const char *key = cfg->run.dump_dir[0] ? "run.dump_dir" : "run.checkpoint_dir";
    if (cfg->run.dump_dir[0]) {
        if (open_writable_dir(&p->dump_out, cfg->run.dump_dir, "run.dump_dir", &p->refusal)) return 1;
        char rd[PATH_MAX], rc_[PATH_MAX], own[PATH_MAX];
        if (realpath(p->dump_dir, rd) && realpath(cfg->run.checkpoint_dir, rc_) && realpath(p->ckpt_dir, own)) {
            size_t lc = strlen(rc_), lo = strlen(own);
            int in_ckpt = !strncmp(rd, rc_, lc) && (rd[lc] == '/' || !rd[lc]);
            int in_own = !strncmp(rd, own, lo) && (rd[lo] == '/' || !rd[lo]);
            if (in_ckpt && !in_own)
                return refuse(&p->refusal, "set run.dump_dir outside run.checkpoint_dir (or leave it unset: <run folder>/dumps)",
                              "run.dump_dir=%s is inside run.checkpoint_dir (%s) but not inside this run's folder; "
                              "a run never writes into another run's checkpoints", cfg->run.dump_dir, cfg->run.checkpoint_dir);
            if (!strcmp(rd, own))
                return refuse(&p->refusal, "set run.dump_dir to a folder of its own (or leave it unset: <run folder>/dumps)",
                              "run.dump_dir=%s is the run's own folder, where its checkpoints step_<N>.h5 have the names of "
                              "its step dumps: a dump never replaces a checkpoint, nor a checkpoint a dump", cfg->run.dump_dir);
        }
    } else if (outdir_sub(&p->dump_out, &p->run_dir, "dumps", 1, err, sizeof err) != 0 ||
               outdir_probe_writable(&p->dump_out, err, sizeof err) != 0) {
        return refuse(&p->refusal, NULL, "run.checkpoint_dir: %s (the run's step dumps go there)", err);
    }
    if (flock(p->dump_out.fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return refuse(&p->refusal, "set run.dump_dir to a folder of its own (a new one, or leave it unset: <run folder>/dumps), "
                          "or wait for that run to end", "%s: %s is in use: another live run writes its step dumps there (it holds the "
                          "folder's lock); the step dumps of two runs never share a folder", key, p->dump_out.path);
        DIE("flock %s failed: %s", p->dump_out.path, strerror(errno));
    }
    if (dump_folder_is_runs(&p->dump_out, p->uid, err, sizeof err) != 0)
        return refuse(&p->refusal, "set run.dump_dir to a folder of its own (a new one, or leave it unset: <run folder>/dumps), "
                      "or move the file named away from that folder", "%s: %s; a dump folder holds the step dumps of one run, and this run's would "
                      "overwrite them or be mixed in among them", key, err);
    return 0;
}

static int plan_run_body(RunDB *db, const RunRequest *rq, RunPlan *p) {
    const Config *cfg = rq->cfg;
    if (rq->launch_id > 0 && db) {   // (store/db.h: the one rule of joining a launch)
        char why[sizeof p->refusal.message], hint[sizeof p->refusal.hint];
        if (!rundb_launch_joinable(db, rq->launch_id, rq->experiment, rq->manifest_sha256, "measured", NULL, why, sizeof why,
                                   hint, sizeof hint))
            return refuse(&p->refusal, hint, "%s", why);
    }
    if (rq->resume) {
        if (plan_resume(db, rq, p)) return 1;
        if (p->noop) return 0;
    } else {
        char stamp[32];
        if (rq->stamp) snprintf(stamp, sizeof stamp, "%s", rq->stamp);
        else { time_t now = time(NULL); struct tm tmv; gmtime_r(&now, &tmv); strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv); }
        char alias[64];   // a long (grid) variant name: its short alias in the uid and folder name
        store_variant_alias(rq->variant, alias, sizeof alias);
        new_run_uid(p->uid, sizeof p->uid, rq->experiment, alias, stamp, rq->pid ? rq->pid : (long)getpid());
        if (check_uid(p->uid, "the new run", &p->refusal)) return 1;
        xsnprintf(p->ckpt_dir, sizeof p->ckpt_dir, "%s/%s", cfg->run.checkpoint_dir, p->uid);
        if (open_run_dir(p, cfg->run.checkpoint_dir, &p->refusal)) return 1;
    }
    plan_dump_dir(cfg, p->ckpt_dir, p->dump_dir, sizeof p->dump_dir);
    if (!cfg->run.dump_steps[0]) return 0;
    return open_dump_dir(p, cfg);
}

int plan_run(RunDB *db, const RunRequest *rq, RunPlan *p) {
    memset(p, 0, sizeof *p);
    p->ckpt_root.fd = p->run_dir.fd = p->dump_out.fd = -1;
    if (!plan_run_body(db, rq, p)) return 0;
    // refused: what this plan made is undone (its handles and lock, the folders it created)
    outdir_close(&p->dump_out); outdir_close(&p->run_dir); outdir_close(&p->ckpt_root);
    outdir_undo_created();
    return 1;
}

void plan_run_free(RunPlan *p) {
    free(p->resume_config);
    p->resume_config = NULL;
}
