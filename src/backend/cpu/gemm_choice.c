// gemm_choice.c — the per-shape measurement and the host's table (gemm_choice.h).
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gemm_choice.h"
#include "../../core/check.h"
#include "../../core/fileio.h"
#include "../../core/rng.h"
#include "../../core/stats.h"
#include "../../core/timer.h"

GemmKey cpu_gemm_key(const GemmArgs *g, int threads) {
    return (GemmKey){ g->ta == TR_T, g->tb == TR_T, g->M, g->N, g->K, g->lda, g->ldb, g->ldc, threads };
}
int cpu_gemm_key_equal(const GemmKey *a, const GemmKey *b) { return !memcmp(a, b, sizeof *a); }
void cpu_gemm_key_format(const GemmKey *k, char *buf, size_t n) {
    snprintf(buf, n, "%c%c %dx%dx%d ld %d,%d,%d x%d", k->ta ? 'T' : 'N', k->tb ? 'T' : 'N', k->M, k->N, k->K, k->lda,
             k->ldb, k->ldc, k->threads);
}

// ---- the measurement ----------------------------------------------------------------------
static size_t span(int rows, int cols, int ld) { return rows ? (size_t)(rows - 1) * (size_t)ld + (size_t)cols : 0; }

static double timed(GemmLib l, const GemmArgs *g) {
    double t0 = now_seconds();
    cpu_gemm_lib_run(l, g);
    return now_seconds() - t0;
}
enum { MIN_ROUNDS = 7, MAX_ROUNDS = GEMM_MAX_ROUNDS, CUT = 3 };
#define SLOW 1.5
#define WIN_SHARE (2.0 / 3.0)

// Whether library i beats library ref round by round (gemm_choice.h): its median time over
// ref's, over the rounds both ran, CHOICE_MARGIN below 1, and faster in WIN_SHARE of them.
static int beats(const double (*tt)[MAX_ROUNDS], int rounds, int i, int ref) {
    double q[MAX_ROUNDS];
    int k = 0, wins = 0;
    for (int r = 0; r < rounds; r++)
        if (!isnan(tt[i][r]) && !isnan(tt[ref][r])) { q[k] = tt[i][r] / tt[ref][r]; wins += q[k] < 1; k++; }
    return k > 0 && stats_median(q, k) < 1 - CHOICE_MARGIN && wins >= WIN_SHARE * k;
}

void cpu_gemm_decide(const double (*tt)[MAX_ROUNDS], int rounds, const GemmLib *libs, int n, GemmLib def, GemmChoice *out) {
    CHECK(n >= 1 && n <= GEMM_N_LIBS && libs[0] == GEMM_OPENBLAS && rounds >= 1 && rounds <= MAX_ROUNDS,
          "cpu_gemm_decide: %d libraries (the first must be OpenBLAS), %d rounds", n, rounds);
    memset(out, 0, sizeof *out);
    for (int l = 0; l < GEMM_N_LIBS; l++) out->med[l] = out->q1[l] = out->q3[l] = NAN;
    int ref = 0;   // the default where it is a candidate, else OpenBLAS
    for (int i = 0; i < n; i++) {
        double ratio[MAX_ROUNDS];
        int k = 0;
        for (int r = 0; r < rounds; r++) if (!isnan(tt[i][r])) ratio[k++] = tt[i][r] / tt[0][r];
        CHECK(k > 0, "cpu_gemm_decide: %s ran in no round", cpu_gemm_lib_name(libs[i]));
        GemmLib l = libs[i];
        out->med[l] = (float)stats_median(ratio, k);   // (sorts ratio)
        out->q1[l] = (float)ratio[(k - 1) / 4];
        out->q3[l] = (float)ratio[(3 * (k - 1) + 3) / 4];
        if (l == def) ref = i;
    }
    // Every candidate against the default, not only the fastest: the one of the lowest median
    // among those that beat it clearly; none does: the default stays.
    int pick = ref;
    for (int i = 0; i < n; i++)
        if (i != ref && (pick == ref || out->med[libs[i]] < out->med[libs[pick]]) && beats(tt, rounds, i, ref)) pick = i;
    out->lib = libs[pick];
    out->rounds = rounds;
}

void cpu_gemm_measure(const GemmArgs *g, const GemmLib *libs, int n, GemmLib def, double budget_s, GemmChoice *out) {
    CHECK(n >= 1 && n <= GEMM_N_LIBS && libs[0] == GEMM_OPENBLAS, "cpu_gemm_measure: %d libraries, the first must be OpenBLAS", n);
    size_t na = g->ta == TR_N ? span(g->M, g->K, g->lda) : span(g->K, g->M, g->lda);
    size_t nb = g->tb == TR_N ? span(g->K, g->N, g->ldb) : span(g->N, g->K, g->ldb);
    size_t nc = span(g->M, g->N, g->ldc);
    float *A = xaligned_alloc(na * 4 + 64), *B = xaligned_alloc(nb * 4 + 64), *C = xaligned_alloc(nc * 4 + 64);
    Rng rng = { .state = 0x63686f6fu };
    for (size_t i = 0; i < na; i++) A[i] = 2 * rng_uniform(&rng) - 1;
    for (size_t i = 0; i < nb; i++) B[i] = 2 * rng_uniform(&rng) - 1;
    for (size_t i = 0; i < nc; i++) C[i] = 2 * rng_uniform(&rng) - 1;
    GemmArgs h = *g;
    h.A = A; h.B = B; h.C = C;
    h.alpha = 1.0f;
    h.beta = g->beta != 0.0f ? 1.0f : 0.0f;   // beta 1 adds into C each call: bounded over ~20 calls

    // warm-up (oneDNN builds its primitive, MKL and BLIS load their kernels), then one call
    // each for the round's length
    double round_s = 0;
    for (int i = 0; i < n; i++) timed(libs[i], &h);
    for (int i = 0; i < n; i++) round_s += timed(libs[i], &h);
    int rounds = round_s > 0 ? (int)(budget_s / round_s) : MAX_ROUNDS;
    if (rounds < MIN_ROUNDS) rounds = MIN_ROUNDS;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    // A library slower than SLOW x the round's fastest in each of the first CUT rounds is out
    // for the rest (its ratios are those rounds'): BLIS's AVX2 kernels at 2-13x OpenBLAS on an
    // AVX-512 CPU would otherwise make each round as long as theirs. OpenBLAS, the ratios'
    // reference, stays.
    double tt[GEMM_N_LIBS][MAX_ROUNDS];   // seconds per round (NAN: sat out)
    int slow[GEMM_N_LIBS] = { 0 }, live[GEMM_N_LIBS];
    for (int i = 0; i < n; i++) live[i] = 1;
    for (int r = 0; r < rounds; r++) {
        double fastest = 1e30;
        for (int j = 0; j < n; j++) {
            int i = (j + r) % n;
            tt[i][r] = live[i] ? timed(libs[i], &h) : NAN;
            if (live[i] && tt[i][r] < fastest) fastest = tt[i][r];
        }
        for (int i = 1; i < n; i++) {
            if (!live[i]) continue;
            slow[i] += tt[i][r] > SLOW * fastest;
            if (r == CUT - 1 && slow[i] == CUT) live[i] = 0;
        }
    }
    free(A); free(B); free(C);

    GemmKey key = cpu_gemm_key(g, omp_get_max_threads());
    cpu_gemm_decide((const double (*)[MAX_ROUNDS])tt, rounds, libs, n, def, out);
    out->key = key;
    out->beta_nz = g->beta != 0.0f;
    double l1;
    out->load = getloadavg(&l1, 1) == 1 ? l1 : -1;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out->when, sizeof out->when, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

// ---- the host -----------------------------------------------------------------------------
// Tabs and newlines of a field become spaces (the table is tab-separated, one line a shape).
static void field_clean(char *s) { for (; *s; s++) if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' '; }

void cpu_gemm_host(GemmHost *h, const GemmLib *libs, int n) {
    memset(h, 0, sizeof *h);
    if (gethostname(h->host, sizeof h->host - 1) != 0) snprintf(h->host, sizeof h->host, "unknown");
    snprintf(h->cpu, sizeof h->cpu, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10)) continue;
            const char *v = strchr(line, ':');
            if (v) { v++; while (*v == ' ') v++; snprintf(h->cpu, sizeof h->cpu, "%s", v); h->cpu[strcspn(h->cpu, "\n")] = 0; }
            break;
        }
        fclose(f);
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    h->cores = c > 0 ? (int)c : 1;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(h->libs);
        snprintf(h->libs + l, sizeof h->libs - l, "%s%s", i ? ", " : "", cpu_gemm_lib_version(libs[i]));
    }
    field_clean(h->host); field_clean(h->cpu); field_clean(h->libs);
}

// ---- the table ----------------------------------------------------------------------------
enum { F_HOST, F_CPU, F_CORES, F_LIBS, F_THREADS, F_OP, F_M, F_N, F_K, F_LDA, F_LDB, F_LDC, F_BETA, F_CHOICE, F_RATIOS,
       F_ROUNDS, F_LOAD, F_WHEN, N_FIELDS };
static const char HEADER[] =
    "# boost-c: the faster fp32 GEMM library per shape, measured on each host (src/backend/cpu/gemm_choice.h).\n"
    "# One line per shape; a line applies to its host, CPU, cores and library versions only. Delete a line (or the\n"
    "# file) to have the shape measured again on its next use. ratios: time / OpenBLAS's time, median:q1:q3;\n"
    "# beta: measured with beta 1 (else 0); the choice holds for both (the same product, the same bits).\n"
    "# host\tcpu\tcores\tlibraries\tthreads\top\tM\tN\tK\tlda\tldb\tldc\tbeta\tchoice\tratios\trounds\tload\tmeasured\n";

#define BAD(...) die_input_hint("delete the line (or the file): the shape is measured again on its next use", __VA_ARGS__)

static int int_field(const char *path, int line, const char *name, const char *s, int lo) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > (1L << 30))
        BAD("%s:%d: %s is '%s'; expected an integer >= %d", path, line, name, s, lo);
    return (int)v;
}

static void parse_ratios(const char *path, int line, char *s, GemmChoice *c) {
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char name[16];
        float m, a, b;
        int used = 0;
        if (sscanf(tok, "%15[a-z_]:%f:%f:%f%n", name, &m, &a, &b, &used) != 4 || tok[used] || cpu_gemm_lib_by_name(name) < 0 ||
            !(m > 0) || !(a > 0) || !(b > 0))
            BAD("%s:%d: ratios has '%s'; expected library:median:q1:q3 (a library of %s; positive numbers)", path, line, tok,
                cpu_gemm_lib_names());
        int l = cpu_gemm_lib_by_name(name);
        c->med[l] = m; c->q1[l] = a; c->q3[l] = b;
    }
}

// One line into c; 1 when it applies (of this host, unless any_host).
static int parse_line(const char *path, int lineno, char *line, const GemmHost *h, int any_host, GemmChoice *c) {
    char *f[N_FIELDS + 1];
    int nf = 0;
    for (char *p = line; p && nf <= N_FIELDS; nf++) {   // split at every tab (one field more is an error)
        f[nf] = p;
        p = strchr(p, '\t');
        if (p) *p++ = 0;
    }
    if (nf != N_FIELDS)
        BAD("%s:%d: %s%d tab-separated fields; expected %d (host, cpu, cores, libraries, threads, op, M, N, K, lda, ldb, "
            "ldc, beta, choice, ratios, rounds, load, measured)", path, lineno, nf > N_FIELDS ? "more than " : "",
            nf > N_FIELDS ? N_FIELDS : nf, N_FIELDS);
    memset(c, 0, sizeof *c);
    for (int l = 0; l < GEMM_N_LIBS; l++) c->med[l] = c->q1[l] = c->q3[l] = NAN;
    int cores = int_field(path, lineno, "cores", f[F_CORES], 1);
    GemmKey *k = &c->key;
    k->threads = int_field(path, lineno, "threads", f[F_THREADS], 1);
    const char *op = f[F_OP];
    if (strlen(op) != 2 || !strchr("NT", op[0]) || !strchr("NT", op[1]))
        BAD("%s:%d: op is '%s'; expected NN, NT, TN or TT", path, lineno, op);
    k->ta = op[0] == 'T'; k->tb = op[1] == 'T';
    k->M = int_field(path, lineno, "M", f[F_M], 1);
    k->N = int_field(path, lineno, "N", f[F_N], 1);
    k->K = int_field(path, lineno, "K", f[F_K], 1);
    k->lda = int_field(path, lineno, "lda", f[F_LDA], 1);
    k->ldb = int_field(path, lineno, "ldb", f[F_LDB], 1);
    k->ldc = int_field(path, lineno, "ldc", f[F_LDC], 1);
    c->beta_nz = int_field(path, lineno, "beta", f[F_BETA], 0);   // the beta measured with (not the key)
    if (c->beta_nz > 1) BAD("%s:%d: beta is '%s'; expected 0 (beta 0) or 1 (beta not 0)", path, lineno, f[F_BETA]);
    int lib = cpu_gemm_lib_by_name(f[F_CHOICE]);
    if (lib < 0) BAD("%s:%d: choice is '%s'; expected one of %s", path, lineno, f[F_CHOICE], cpu_gemm_lib_names());
    c->lib = (GemmLib)lib;
    char ratios[400];
    snprintf(ratios, sizeof ratios, "%s", f[F_RATIOS]);
    parse_ratios(path, lineno, ratios, c);
    if (isnan(c->med[GEMM_OPENBLAS]) || isnan(c->med[c->lib]))
        BAD("%s:%d: ratios is '%s'; expected openblas's and %s's (the choice) among them", path, lineno, f[F_RATIOS],
            f[F_CHOICE]);
    c->rounds = int_field(path, lineno, "rounds", f[F_ROUNDS], 1);
    char *end;
    c->load = strtod(f[F_LOAD], &end);
    if (!*f[F_LOAD] || *end || !(c->load >= -1 && c->load < 1e6))
        BAD("%s:%d: load is '%s'; expected the 1-minute load average (-1: unknown)", path, lineno, f[F_LOAD]);
    snprintf(c->when, sizeof c->when, "%s", f[F_WHEN]);
    return any_host || (!strcmp(f[F_HOST], h->host) && !strcmp(f[F_CPU], h->cpu) && cores == h->cores &&
                        !strcmp(f[F_LIBS], h->libs));
}

void cpu_gemm_table_load(const char *path, int fd, const GemmHost *h, int any_host, GemmChoice **out, int *n, int *cap) {
    FILE *f;
    if (fd >= 0) {
        int dup_fd = dup(fd);
        CHECK_ERRNO(dup_fd < 0, path);
        f = fdopen(dup_fd, "r");
        CHECK_ERRNO(!f, path);
        CHECK_ERRNO(fseek(f, 0, SEEK_SET) != 0, path);
    } else {
        char err[1400];
        f = file_fopen_regular(path, "r", "GEMM choice table", err, sizeof err);
        if (!f && errno == ENOENT) return;
        if (!f) die_input_hint("BOOST_CPU_GEMM_CACHE (or BOOST_CPU_GEMM=table:PATH) names a regular file (or a new name)", "%s", err);
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    for (int lineno = 1; (len = getline(&line, &lcap, f)) >= 0; lineno++) {
        if (len > 0 && line[len - 1] == '\n') line[--len] = 0;
        if (len == 0 || line[0] == '#') continue;
        GemmChoice c;
        if (!parse_line(path, lineno, line, h, any_host, &c)) continue;
        int i = 0;
        while (i < *n && !cpu_gemm_key_equal(&(*out)[i].key, &c.key)) i++;
        if (i == *n) *out = vec_grow(*out, n, cap, sizeof **out);
        (*out)[i] = c;
    }
    free(line);
    fclose(f);
}

void cpu_gemm_ratios_format(const GemmChoice *c, char *buf, size_t n) {
    size_t l = 0;
    buf[0] = 0;
    for (int i = 0; i < GEMM_N_LIBS && l < n; i++) {
        if (isnan(c->med[i])) continue;
        l += (size_t)snprintf(buf + l, n - l, "%s%s %.3f", l ? ", " : "", cpu_gemm_lib_name((GemmLib)i), c->med[i]);
        if (i != GEMM_OPENBLAS && l < n) l += (size_t)snprintf(buf + l, n - l, " (%.3f-%.3f)", c->q1[i], c->q3[i]);
    }
}

void cpu_gemm_table_append(const char *path, int fd, const GemmHost *h, const GemmChoice *c) {
    char line[1400], ratios[300] = "";
    size_t rl = 0;
    for (int i = 0; i < GEMM_N_LIBS; i++) {
        if (isnan(c->med[i])) continue;
        rl += (size_t)snprintf(ratios + rl, sizeof ratios - rl, "%s%s:%.4f:%.4f:%.4f", rl ? "," : "",
                               cpu_gemm_lib_name((GemmLib)i), c->med[i], c->q1[i], c->q3[i]);
    }
    const GemmKey *k = &c->key;
    int n = snprintf(line, sizeof line, "%s%s\t%s\t%d\t%s\t%d\t%c%c\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%.2f\t%s\n",
                     lseek(fd, 0, SEEK_END) == 0 ? HEADER : "", h->host, h->cpu, h->cores, h->libs, k->threads,
                     k->ta ? 'T' : 'N', k->tb ? 'T' : 'N', k->M, k->N, k->K, k->lda, k->ldb, k->ldc, c->beta_nz,
                     cpu_gemm_lib_name(c->lib), ratios, c->rounds, c->load, c->when);
    CHECK(n > 0 && (size_t)n < sizeof line, "%s: a table line of %d bytes", path, n);
    // one write of the whole line (O_APPEND): a reader never sees half of it
    ssize_t w = write(fd, line, (size_t)n);
    CHECK_ERRNO(w != n, path);
}
