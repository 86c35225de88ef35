// sgemm.c — the CPU back ends' fp32 GEMM: the mode, the per-shape choice and the dispatch
// (sgemm.h).
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sgemm.h"
#include "gemm_choice.h"
#include "onednn.h"
#include "../../core/fileio.h"
#include "../../core/check.h"
#include "../../core/crc32.h"

// Seconds a new shape's measurement aims at (at least 7 rounds of every library): about 30 s
// for the ~30 distinct GEMMs of the CoLA-60M bench, once per host.
#define MEASURE_S 1.0

enum { SRC_FORCED, SRC_TABLE, SRC_MEASURED, SRC_DEFAULT };   // where a shape's library came from
static const char *const SRC_NAMES[] = { "forced", "table", "measured now", "default (no table entry)" };

// The shapes this process ran since the mode was chosen.
typedef struct {
    GemmChoice c;     // the key, the library and (table, measured) the ratios
    int source;
    long calls;
} Used;

static struct {
    int mode;                      // a GemmLib, SGEMM_PER_SHAPE, or -1 before the first choice
    int table_mode;                // table:PATH (read only, any host)
    char path[PATH_MAX];           // the table's file ("": none)
    int writable;                  // auto: the table's folder exists, shapes are measured and added
    GemmLib libs[GEMM_N_LIBS];     // the available libraries, OpenBLAS first
    int n_libs;
    GemmHost host;
    GemmChoice *table;             // the table's lines that apply
    int n_table, cap_table;
    Used *used;
    int n_used, cap_used, last;
    GemmLib def;                   // cpu_sgemm_default_lib
    char left_out[300];            // an installed library auto does not measure, and why
    char line[520];                // the describe line, capped: it goes into the run's 1 KiB library record
} S = { .mode = -1 };

GemmLib cpu_sgemm_default_lib(char *why, size_t why_n) {
    return onednn_f32_faster(why, why_n) ? GEMM_ONEDNN : GEMM_OPENBLAS;
}

// The mode a request names (NULL: BOOST_CPU_GEMM, unset or empty = auto): a GemmLib,
// SGEMM_PER_SHAPE (auto, or table:... with *table set), or -1.
static int request_mode(const char *request, const char **req, int *table) {
    const char *env = getenv("BOOST_CPU_GEMM");
    *req = request ? request : env && *env ? env : "auto";
    *table = !strncmp(*req, "table:", 6);
    if (*table) return (*req)[6] ? SGEMM_PER_SHAPE : -1;
    if (!strcmp(*req, "auto")) return SGEMM_PER_SHAPE;
    return cpu_gemm_lib_by_name(*req);
}

int cpu_sgemm_on_openmp(void) {
    const char *req;
    int table, m = request_mode(NULL, &req, &table);
    return m >= 0 && (m == SGEMM_PER_SHAPE || cpu_gemm_lib_on_openmp((GemmLib)m));
}

// The describe line; one longer than its buffer (a long BOOST_CPU_GEMM_CACHE path) ends in "...".
__attribute__((format(printf, 1, 2))) static void set_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(S.line, sizeof S.line, fmt, ap);
    va_end(ap);
    if (k >= (int)sizeof S.line) memcpy(S.line + sizeof S.line - 4, "...", 4);
}

static void forget_shapes(void) {
    free(S.table); free(S.used);
    S.table = NULL; S.n_table = S.cap_table = 0;
    S.used = NULL; S.n_used = S.cap_used = 0; S.last = 0;
}

// A library per shape: which file, and what this host's lines of it say.
static void per_shape_setup(const char *req, int table) {
    S.n_libs = 0;
    S.left_out[0] = 0;
    for (int l = 0; l < GEMM_N_LIBS; l++) {
        if (!cpu_gemm_lib_available((GemmLib)l, NULL, 0)) continue;
        if (cpu_gemm_lib_below_cpu((GemmLib)l, S.left_out, sizeof S.left_out)) continue;
        S.libs[S.n_libs++] = (GemmLib)l;
    }
    cpu_gemm_host(&S.host, S.libs, S.n_libs);
    S.table_mode = table;
    S.writable = 0;
    if (table) {
        xsnprintf(S.path, sizeof S.path, "%s", req + 6);
        struct stat st;
        if (stat(S.path, &st) != 0)
            die_input_hint("BOOST_CPU_GEMM=auto measures every shape into the host's table (BOOST_CPU_GEMM_CACHE)",
                           "BOOST_CPU_GEMM is '%s': %s: %s; expected a table written by BOOST_CPU_GEMM=auto", req, S.path,
                           strerror(errno));
        cpu_gemm_table_load(S.path, -1, &S.host, 1, &S.table, &S.n_table, &S.cap_table);
        return;
    }
    const char *cache = getenv("BOOST_CPU_GEMM_CACHE");
    xsnprintf(S.path, sizeof S.path, "%s", cache && *cache ? cache : "runs/gemm-choices.tsv");
    char dir[PATH_MAX];
    xsnprintf(dir, sizeof dir, "%s", S.path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else xsnprintf(dir, sizeof dir, ".");
    // measured into where the folder can take a new file and the file (if any) can be appended
    // to; a table that exists but cannot be written is still read
    struct stat st;
    int have = access(S.path, F_OK) == 0;
    S.writable = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK) == 0 && (!have || access(S.path, W_OK) == 0);
    if (have) cpu_gemm_table_load(S.path, -1, &S.host, 0, &S.table, &S.n_table, &S.cap_table);
}

// The table's lines that apply, as the run's record names them: CRC-32 of each shape and its
// library, in the file's order (a table that gained lines since has another digest).
static uint32_t table_digest(void) {
    uint32_t crc = 0;
    for (int i = 0; i < S.n_table; i++) {
        crc = crc32_update(crc, &S.table[i].key, sizeof S.table[i].key);
        crc = crc32_update(crc, &S.table[i].lib, sizeof S.table[i].lib);
    }
    return crc;
}

int cpu_sgemm_choose(const char *request) {
    const char *req;
    int table;
    int m = request_mode(request, &req, &table);
    char hint[300];
    xsnprintf(hint, sizeof hint, "set BOOST_CPU_GEMM to auto (per shape, the faster library measured on this host), "
              "one of %s, or table:PATH (a table written by auto)", cpu_gemm_lib_names());
    if (m < 0) die_input_hint(hint, "BOOST_CPU_GEMM is '%s'; expected auto, one of %s, or table:PATH", req, cpu_gemm_lib_names());
    char why[400] = "";
    if (m != SGEMM_PER_SHAPE && !cpu_gemm_lib_available((GemmLib)m, why, sizeof why))
        die_input_hint(hint, "BOOST_CPU_GEMM is '%s', but %s", req, why);
    forget_shapes();
    S.mode = m;
    S.def = cpu_sgemm_default_lib(why, sizeof why);
    if (m != SGEMM_PER_SHAPE) {
        set_line("%s (BOOST_CPU_GEMM=%s)", cpu_gemm_lib_version((GemmLib)m), req);
        return m;
    }
    per_shape_setup(req, table);
    char libs[400] = "";
    for (int i = 0; i < S.n_libs; i++) {
        size_t l = strlen(libs);
        xsnprintf(libs + l, sizeof libs - l, "%s%s", i ? ", " : "", cpu_gemm_lib_version(S.libs[i]));
    }
    int per[GEMM_N_LIBS] = { 0 };
    for (int i = 0; i < S.n_table; i++) per[S.table[i].lib]++;
    char counts[160] = "";
    for (int l = 0; l < GEMM_N_LIBS; l++) {
        size_t k = strlen(counts);
        if (per[l]) xsnprintf(counts + k, sizeof counts - k, "%s%s %d", k ? ", " : "", cpu_gemm_lib_name((GemmLib)l), per[l]);
    }
    if (table)
        set_line("per shape from %s (BOOST_CPU_GEMM=%s: %d shapes%s%s, crc32 %08x; a shape not "
                  "in it: %s)", S.path, req, S.n_table, counts[0] ? ": " : "", counts, table_digest(), cpu_gemm_lib_name(S.def));
    else if (S.writable)
        set_line("per shape, the faster of %s, measured on this host (BOOST_CPU_GEMM=auto; "
                  "%s holds %d shapes of this host%s%s, crc32 %08x; a new shape is measured on first use and added%s%s)",
                  libs, S.path, S.n_table, counts[0] ? ": " : "", counts, table_digest(), S.left_out[0] ? "; left out: " : "",
                  S.left_out);
    else if (S.n_table)
        set_line("per shape from %s, which cannot be written (BOOST_CPU_GEMM=auto: %d shapes of "
                  "this host%s%s, crc32 %08x; a shape not in it is not measured and runs on %s)", S.path, S.n_table,
                  counts[0] ? ": " : "", counts, table_digest(), cpu_gemm_lib_name(S.def));
    else
        set_line("%s for every shape (BOOST_CPU_GEMM=auto without a table: %s cannot be written, "
                  "so nothing is measured; the CPU's default: %s)", cpu_gemm_lib_version(S.def), S.path,
                  S.def == GEMM_ONEDNN ? "AMD with AVX-512" : why);
    return m;
}

const char *cpu_sgemm_mode_name(void) {
    if (S.mode < 0) cpu_sgemm_choose(NULL);
    return S.mode != SGEMM_PER_SHAPE ? cpu_gemm_lib_name((GemmLib)S.mode) : S.table_mode ? "table" : "auto";
}

const char *cpu_sgemm_describe(void) {
    if (S.mode < 0) cpu_sgemm_choose(NULL);
    return S.line;
}

// The table's line of a shape; a forced table (any host) also serves a shape measured at
// another thread count when it has none at this one.
static const GemmChoice *table_find(const GemmKey *k) {
    for (int i = 0; i < S.n_table; i++) if (cpu_gemm_key_equal(&S.table[i].key, k)) return &S.table[i];
    if (!S.table_mode) return NULL;
    GemmKey any = *k;
    for (int i = S.n_table - 1; i >= 0; i--) {
        any.threads = S.table[i].key.threads;
        if (cpu_gemm_key_equal(&S.table[i].key, &any)) return &S.table[i];
    }
    return NULL;
}

// Auto: the shape from the host's table, else measured now and added. The lock makes the
// processes of a host take turns: the second finds the first one's line and measures nothing.
static int decide_auto(const GemmArgs *g, const GemmKey *k, GemmChoice *c) {
    const GemmChoice *t = table_find(k);
    if (t) { *c = *t; return SRC_TABLE; }
    char err[1400];
    int fd = file_open_regular(S.path, O_RDWR | O_CREAT | O_APPEND, "GEMM choice table", err, sizeof err);
    if (fd < 0) die_input_hint("BOOST_CPU_GEMM_CACHE names a regular file (or a new name)", "%s", err);
    CHECK_ERRNO(flock(fd, LOCK_EX) != 0, S.path);
    S.n_table = 0;
    cpu_gemm_table_load(S.path, fd, &S.host, 0, &S.table, &S.n_table, &S.cap_table);
    int src = SRC_TABLE;
    t = table_find(k);
    if (t) *c = *t;
    else {
        cpu_gemm_measure(g, S.libs, S.n_libs, S.def, MEASURE_S, c);
        c->key = *k;
        cpu_gemm_table_append(S.path, fd, &S.host, c);
        static int noted;
        if (c->load >= S.host.cores && !noted++)   // once a process
            fprintf(stderr, "note: new GEMM shapes are being measured into %s at load %.1f on %d cores: other work shares "
                    "the cores; delete their lines (the load is the next-to-last column) to measure them again on a quieter "
                    "machine\n", S.path, c->load, S.host.cores);
        S.table = vec_grow(S.table, &S.n_table, &S.cap_table, sizeof *S.table);
        S.table[S.n_table - 1] = *c;
        src = SRC_MEASURED;
    }
    CHECK_ERRNO(flock(fd, LOCK_UN) != 0, S.path);
    CHECK_ERRNO(close(fd) != 0, S.path);
    return src;
}

// The shape's entry among those this process ran, deciding a new one.
static Used *shape_of(const GemmArgs *g) {
    GemmKey k = cpu_gemm_key(g, omp_get_max_threads());
    if (S.last < S.n_used && cpu_gemm_key_equal(&S.used[S.last].c.key, &k)) return &S.used[S.last];
    for (int i = 0; i < S.n_used; i++)
        if (cpu_gemm_key_equal(&S.used[i].c.key, &k)) { S.last = i; return &S.used[i]; }
    Used u = { .source = SRC_FORCED };
    for (int l = 0; l < GEMM_N_LIBS; l++) u.c.med[l] = u.c.q1[l] = u.c.q3[l] = NAN;
    u.c.key = k;
    if (S.mode != SGEMM_PER_SHAPE) u.c.lib = (GemmLib)S.mode;
    else if (S.table_mode) {
        const GemmChoice *t = table_find(&k);
        if (t) { u.c = *t; u.c.key = k; u.source = SRC_TABLE; }
        else {
            u.c.lib = S.def;
            u.source = SRC_DEFAULT;
            char s[160];
            cpu_gemm_key_format(&k, s, sizeof s);
            fprintf(stderr, "note: BOOST_CPU_GEMM=table:%s has no line for the GEMM %s: it runs on %s, the CPU's default\n",
                    S.path, s, cpu_gemm_lib_name(S.def));
        }
    } else if (S.writable) u.source = decide_auto(g, &k, &u.c);
    else {   // a table that cannot be written: its lines, the default for the rest
        const GemmChoice *t = table_find(&k);
        if (t) { u.c = *t; u.source = SRC_TABLE; }
        else { u.c.lib = S.def; u.source = SRC_DEFAULT; }
    }
    if (!cpu_gemm_lib_available(u.c.lib, NULL, 0)) {   // a forced table naming a library not installed here
        char why[400];
        cpu_gemm_lib_available(u.c.lib, why, sizeof why);
        die_input_hint("measure the table on this host (BOOST_CPU_GEMM=auto) or install the library",
                       "%s names %s for a GEMM, but %s", S.path, cpu_gemm_lib_name(u.c.lib), why);
    }
    S.used = vec_grow(S.used, &S.n_used, &S.cap_used, sizeof *S.used);
    S.used[S.n_used - 1] = u;
    S.last = S.n_used - 1;
    return &S.used[S.last];
}

GemmLib cpu_sgemm_lib_for(const GemmArgs *g) {
    if (S.mode < 0) cpu_sgemm_choose(NULL);
    return shape_of(g)->c.lib;
}

void cpu_sgemm(const GemmArgs *g) {
    if (S.mode < 0) cpu_sgemm_choose(NULL);
    if (g->M <= 0 || g->N <= 0 || g->K <= 0) {   // the empty products (K 0: C = beta·C) on OpenBLAS
        cpu_gemm_lib_run(GEMM_OPENBLAS, g);
        return;
    }
    Used *u = shape_of(g);
    u->calls++;
    cpu_gemm_lib_run(u->c.lib, g);
}

void cpu_sgemm_print_choices(FILE *f) {
    if (S.n_used == 0) return;
    fprintf(f, "| op | M | N | K | lda | ldb | ldc | beta measured | threads | calls | library | from | time / OpenBLAS's "
               "(median, quartiles) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < S.n_used; i++) {
        const Used *u = &S.used[i];
        const GemmKey *k = &u->c.key;
        char r[300];
        cpu_gemm_ratios_format(&u->c, r, sizeof r);
        fprintf(f, "| %c%c | %d | %d | %d | %d | %d | %d | %s | %d | %ld | %s | %s | %s |\n", k->ta ? 'T' : 'N',
                k->tb ? 'T' : 'N', k->M, k->N, k->K, k->lda, k->ldb, k->ldc,
                u->source == SRC_FORCED || u->source == SRC_DEFAULT ? "-" : u->c.beta_nz ? "1" : "0", k->threads, u->calls,
                cpu_gemm_lib_name(u->c.lib), SRC_NAMES[u->source], r[0] ? r : "-");
    }
}
