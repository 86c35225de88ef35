// test_sgemm.c — the fp32 GEMM's libraries and its per-shape choice (backend/cpu/sgemm.h,
// gemm_libs.h, gemm_choice.h): every installed library against a float64 product on generated
// shapes; the CPU's default; the modes BOOST_CPU_GEMM takes and refuses; the host's table
// (measured once per shape, read back, forced as table:PATH, its lines of other hosts ignored),
// one library and the same bits for a product stored (beta 0) and added into zeros (beta 1),
// and generated damage to its lines refused with the file and line named.
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cblas.h>
#include "testlib.h"
#include "backend/cpu/gemm_choice.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/sgemm.h"
#include "core/rng.h"

TL_MAIN_DEFS
static char dir[256];

// A child process with BOOST_CPU_GEMM=env (and the table at cache) choosing and running one
// GEMM: its exit status (2: refused), and its stderr in dir/child.err.
static int child_exit(const char *env, const char *cache) {
    char err[300];
    snprintf(err, sizeof err, "%s/child.err", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(err, "w", stderr)) _exit(99);
        // the parent's thread pools did not survive the fork: one thread, no pool to wait on
        omp_set_num_threads(1);
        openblas_set_num_threads(1);
        setenv("BOOST_CPU_GEMM", env, 1);
        if (cache) setenv("BOOST_CPU_GEMM_CACHE", cache, 1);
        cpu_sgemm_choose(NULL);
        float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 0, 0, 1, 1, 1 }, c[4];
        GemmArgs g = { TR_N, TR_N, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2 };
        cpu_sgemm(&g);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static int child_err_has(const char *s) {
    char path[300], buf[4096] = "";
    snprintf(path, sizeof path, "%s/child.err", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strstr(buf, s) != NULL;
}

// ---- generated shapes ----------------------------------------------------------------------
typedef struct { GemmArgs g; float *A, *B, *C0; size_t nc; } Shape;
// long_side > 0: the longer of M and N set to it; < 0: M and N both 32 .. 150 (the sliced runs
// cut the longer side, or both).
static Shape shape_make_long(Rng *r, int long_side) {
    Shape s;
    GemmArgs *g = &s.g;
    g->ta = rng_next(r) % 2 ? TR_T : TR_N;
    g->tb = rng_next(r) % 2 ? TR_T : TR_N;
    g->M = 1 + (int)(rng_next(r) % 70); g->N = 1 + (int)(rng_next(r) % 70); g->K = 1 + (int)(rng_next(r) % 90);
    if (long_side > 0) { if (g->M >= g->N) g->M = long_side; else g->N = long_side; }
    if (long_side < 0) { g->M = 32 + (int)(rng_next(r) % 119); g->N = 32 + (int)(rng_next(r) % 119); }
    int pad[3] = { (int)(rng_next(r) % 4), (int)(rng_next(r) % 4), (int)(rng_next(r) % 4) };
    g->lda = (g->ta == TR_N ? g->K : g->M) + pad[0];
    g->ldb = (g->tb == TR_N ? g->N : g->K) + pad[1];
    g->ldc = g->N + pad[2];
    g->alpha = rng_next(r) % 3 ? 1.0f : 0.5f;
    g->beta = (float[]){ 0.0f, 1.0f, 0.25f }[rng_next(r) % 3];
    size_t na = (size_t)(g->ta == TR_N ? g->M : g->K) * g->lda, nb = (size_t)(g->tb == TR_N ? g->K : g->N) * g->ldb;
    s.nc = (size_t)g->M * g->ldc;
    s.A = malloc(na * 4); s.B = malloc(nb * 4); s.C0 = malloc(s.nc * 4);
    for (size_t i = 0; i < na; i++) s.A[i] = 2 * rng_uniform(r) - 1;
    for (size_t i = 0; i < nb; i++) s.B[i] = 2 * rng_uniform(r) - 1;
    for (size_t i = 0; i < s.nc; i++) s.C0[i] = 2 * rng_uniform(r) - 1;
    g->A = s.A; g->B = s.B;
    return s;
}
static Shape shape_make(Rng *r) { return shape_make_long(r, 0); }
static void shape_free(Shape *s) { free(s->A); free(s->B); free(s->C0); }

// C of library l against float64: max |C - ref| / (alpha·Σ|a||b| + |beta·c0|) over M x N,
// and whether the columns past N of each row kept their values.
static double shape_error(const Shape *s, GemmLib l, int threads, float *C, int *pad_ok) {
    const GemmArgs *g0 = &s->g;
    memcpy(C, s->C0, s->nc * 4);
    GemmArgs g = *g0;
    g.C = C;
    omp_set_num_threads(threads);
    cpu_gemm_lib_run(l, &g);
    double worst = 0;
    *pad_ok = 1;
    for (int m = 0; m < g.M; m++) {
        for (int n = 0; n < g.N; n++) {
            double ref = g.beta * s->C0[(size_t)m * g.ldc + n], bound = fabs(ref);
            for (int k = 0; k < g.K; k++) {
                double av = g.ta == TR_N ? s->A[(size_t)m * g.lda + k] : s->A[(size_t)k * g.lda + m];
                double bv = g.tb == TR_N ? s->B[(size_t)k * g.ldb + n] : s->B[(size_t)n * g.ldb + k];
                ref += g.alpha * av * bv;
                bound += fabs(g.alpha * av * bv);
            }
            double d = fabs(C[(size_t)m * g.ldc + n] - ref) / (bound > 0 ? bound : 1);
            if (d > worst) worst = d;
        }
        for (int n = g.N; n < g.ldc; n++) *pad_ok &= C[(size_t)m * g.ldc + n] == s->C0[(size_t)m * g.ldc + n];
    }
    return worst;
}

// Every installed library: within fp32 accumulation bounds of float64 (K terms of 2^-24 each,
// and the alpha/beta roundings) on generated shapes, nothing written past N, the same bits
// run to run at one thread count, and the same bits for 1 and 2 threads (OpenBLAS; oneDNN
// where onednn_f32_thread_invariant says so, its AVX-512 kernels; MKL with its reproducibility
// mode across runs, not across thread counts; the sliced runs, whose slices follow the thread
// count, across runs only).
TEST(every_library_within_fp32_bounds) {
    Rng rng = { .state = 0x5e11 };
    int n_lib = 0, dnn_thread_bits = 0;
    char skipped[600] = "", dnn_why[300] = "";
    int dnn_invariant = onednn_f32_thread_invariant(dnn_why, sizeof dnn_why);
    for (int l = 0; l < GEMM_N_LIBS; l++) {
        char why[400];
        if (!cpu_gemm_lib_available((GemmLib)l, why, sizeof why)) {
            size_t k = strlen(skipped);
            snprintf(skipped + k, sizeof skipped - k, "%s%s", k ? "; " : "", why);
            continue;
        }
        n_lib++;
        for (int i = 0; i < 12; i++) {
            Shape s = shape_make(&rng);
            float *C1 = malloc(s.nc * 4), *C2 = malloc(s.nc * 4);
            int pad1, pad2;
            double e1 = shape_error(&s, (GemmLib)l, 1, C1, &pad1), e2 = shape_error(&s, (GemmLib)l, 2, C2, &pad2);
            double bound = (s.g.K + 2) * 1.2e-7;
            EXPECT(e1 <= bound && e2 <= bound, "%s, shape %d (%c%c %dx%dx%d ld %d,%d,%d alpha %g beta %g): error %.3g / %.3g "
                   "of the magnitude (bound %.3g)", cpu_gemm_lib_name((GemmLib)l), i, s.g.ta == TR_T ? 'T' : 'N',
                   s.g.tb == TR_T ? 'T' : 'N', s.g.M, s.g.N, s.g.K, s.g.lda, s.g.ldb, s.g.ldc, s.g.alpha, s.g.beta, e1, e2, bound);
            EXPECT(pad1 && pad2, "%s, shape %d: wrote past N in the row stride", cpu_gemm_lib_name((GemmLib)l), i);
            if (l == GEMM_OPENBLAS || (l == GEMM_ONEDNN && dnn_invariant))
                EXPECT(!memcmp(C1, C2, s.nc * 4), "%s, shape %d: the bits differ between 1 and 2 threads",
                       cpu_gemm_lib_name((GemmLib)l), i);
            else if (l == GEMM_ONEDNN) dnn_thread_bits += memcmp(C1, C2, s.nc * 4) != 0;
            // at one thread count: the same bits run to run, every library
            float *C3 = malloc(s.nc * 4);
            int pad3;
            shape_error(&s, (GemmLib)l, 2, C3, &pad3);
            EXPECT(!memcmp(C2, C3, s.nc * 4), "%s, shape %d: two runs at 2 threads differ in bits", cpu_gemm_lib_name((GemmLib)l), i);
            free(C3);
            free(C1); free(C2);
            shape_free(&s);
        }
    }
    omp_set_num_threads(2);
    EXPECT(n_lib >= 2, "OpenBLAS and oneDNN are linked: %d libraries available", n_lib);
    if (skipped[0]) printf("  not installed (not tested): %s\n", skipped);
    if (!dnn_invariant) printf("  oneDNN across thread counts not asserted (%s): %d of 12 shapes differed\n", dnn_why, dnn_thread_bits);
}

// The sliced runs cut C into one slice per thread along its longer side: at 1 to 5 threads, on
// generated shapes 16 to 150 on that side (1 to 5 slices), every element within the
// fp32 bounds (a slice missed or done twice is far outside them) and nothing past N written.
TEST(sliced_runs_cover_every_element) {
    Rng rng = { .state = 0x511ce };
    static const GemmLib sliced[] = { GEMM_OPENBLAS_SLICED, GEMM_ONEDNN_SLICED };
    int checked = 0;
    for (int i = 0; i < 30; i++) {   // the last 10 with both sides long: cut in both at 4 and 5 threads
        Shape s = shape_make_long(&rng, i < 20 ? 16 + (int)(rng_next(&rng) % 135) : -1);
        float *C = malloc(s.nc * 4);
        for (int l = 0; l < 2; l++)
            for (int t = 1; t <= 5; t++) {
                int pad;
                double e = shape_error(&s, sliced[l], t, C, &pad), bound = (s.g.K + 2) * 1.2e-7;
                EXPECT(e <= bound && pad, "%s at %d threads, shape %d (%c%c %dx%dx%d ld %d,%d,%d beta %g): error %.3g of the "
                       "magnitude (bound %.3g)%s", cpu_gemm_lib_name(sliced[l]), t, i, s.g.ta == TR_T ? 'T' : 'N',
                       s.g.tb == TR_T ? 'T' : 'N', s.g.M, s.g.N, s.g.K, s.g.lda, s.g.ldb, s.g.ldc, s.g.beta, e, bound,
                       pad ? "" : "; wrote past N");
                checked++;
            }
        free(C);
        shape_free(&s);
    }
    omp_set_num_threads(2);
    printf("  %d sliced products checked\n", checked);
}

// The default (the tie-keeper, and every shape's library without a table): oneDNN on AMD with
// AVX-512, written out here from /proc/cpuinfo; modes refused with exit 2 and forced ones taken.
TEST(modes_and_default) {
    int amd_avx512 = tl_cpuinfo_has("AuthenticAMD") && tl_cpuinfo_has("avx512f") && tl_cpuinfo_has("avx512bw") && tl_cpuinfo_has("avx512vl");
    GemmLib d = cpu_sgemm_default_lib(NULL, 0);
    EXPECT(d == (amd_avx512 ? GEMM_ONEDNN : GEMM_OPENBLAS), "the default is %s (AMD with AVX-512: %s)", cpu_gemm_lib_name(d),
           amd_avx512 ? "yes" : "no");
    char nofolder[400];
    snprintf(nofolder, sizeof nofolder, "%s/no-such-folder/t.tsv", dir);
    const char *bad[] = { "fast", "OpenBLAS", "table:", "auto ", "table:/no/such/file.tsv" };
    for (int i = 0; i < 5; i++) EXPECT(child_exit(bad[i], nofolder) == 2, "BOOST_CPU_GEMM='%s' must be refused with exit 2", bad[i]);
    EXPECT(child_err_has("expected"), "the refusal says what is expected");
    for (int l = 0; l < GEMM_N_LIBS; l++) {
        int avail = cpu_gemm_lib_available((GemmLib)l, NULL, 0);
        int rc = child_exit(cpu_gemm_lib_name((GemmLib)l), nofolder);
        EXPECT(rc == (avail ? 0 : 2), "BOOST_CPU_GEMM=%s (installed: %d) exited %d", cpu_gemm_lib_name((GemmLib)l), avail, rc);
    }
    // auto without the table's folder: nothing measured, the default named
    setenv("BOOST_CPU_GEMM_CACHE", nofolder, 1);
    EXPECT(cpu_sgemm_choose("auto") == SGEMM_PER_SHAPE, "auto is per shape");
    EXPECT(strstr(cpu_sgemm_describe(), "without a table"), "auto without a folder says so: %s", cpu_sgemm_describe());
    float a[4] = { 1, 2, 3, 4 }, c[4];
    GemmArgs g = { TR_N, TR_N, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2 };
    EXPECT(cpu_sgemm_lib_for(&g) == d, "a shape without a table runs on the default");
    struct stat st;
    EXPECT(stat(nofolder, &st) != 0, "no table was written without its folder");
    unsetenv("BOOST_CPU_GEMM_CACHE");
}

// A new, empty host table dir/name (into path), auto choosing with it.
static void fresh_table(char *path, size_t n, const char *name) {
    snprintf(path, n, "%s/%s", dir, name);
    unlink(path);
    setenv("BOOST_CPU_GEMM_CACHE", path, 1);
    cpu_sgemm_choose("auto");
}
// The lines of a table that are not comments.
static int table_lines(const char *path) {
    FILE *f = fopen(path, "r");
    char line[2000];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += line[0] != '#';
    if (f) fclose(f);
    return n;
}

static long file_size(const char *p) { struct stat st; return stat(p, &st) == 0 ? (long)st.st_size : -1; }

// auto measures each new shape once into the host's table; a second process (a new choice)
// reads it and measures nothing; table:PATH gives the same libraries; another host's lines
// do not apply to auto.
TEST(table_measured_once_and_read_back) {
    char path[400];
    fresh_table(path, sizeof path, "choices.tsv");
    Rng rng = { .state = 0x7ab1e };
    enum { NS = 6 };
    Shape s[NS];
    GemmLib first[NS];
    for (int i = 0; i < NS; i++) {
        s[i] = shape_make(&rng);
        float *C = malloc(s[i].nc * 4);
        memcpy(C, s[i].C0, s[i].nc * 4);
        s[i].g.C = C;
        cpu_sgemm(&s[i].g);
        cpu_sgemm(&s[i].g);
        first[i] = cpu_sgemm_lib_for(&s[i].g);
    }
    char line[2000];
    int lines = table_lines(path);
    EXPECT(lines == NS, "%d shapes measured into %d lines (expected one line per shape)", NS, lines);
    long size = file_size(path);
    cpu_sgemm_choose("auto");   // as a new process: reads the table
    for (int i = 0; i < NS; i++) EXPECT(cpu_sgemm_lib_for(&s[i].g) == first[i], "shape %d: %s read back as %s", i,
                                        cpu_gemm_lib_name(first[i]), cpu_gemm_lib_name(cpu_sgemm_lib_for(&s[i].g)));
    EXPECT(file_size(path) == size, "reading the table back measured again (%ld -> %ld bytes)", size, file_size(path));
    char req[450];
    snprintf(req, sizeof req, "table:%s", path);
    EXPECT(cpu_sgemm_choose(req) == SGEMM_PER_SHAPE, "table:PATH is per shape");
    for (int i = 0; i < NS; i++) EXPECT(cpu_sgemm_lib_for(&s[i].g) == first[i], "shape %d: table:PATH gives %s, auto %s", i,
                                        cpu_gemm_lib_name(cpu_sgemm_lib_for(&s[i].g)), cpu_gemm_lib_name(first[i]));
    // the same lines of another host: auto measures its own; table:PATH still takes them
    char other[400];
    snprintf(other, sizeof other, "%s/other.tsv", dir);
    FILE *in = fopen(path, "r"), *out = fopen(other, "w");
    int forced_lib = -1;
    while (in && out && fgets(line, sizeof line, in)) {
        if (line[0] == '#') { fputs(line, out); continue; }
        // another host whose choice is OpenBLAS everywhere, or oneDNN where the host chose OpenBLAS
        char *tab = strchr(line, '\t');
        char *f14 = line;
        for (int k = 0; k < 13 && f14; k++) f14 = strchr(f14, '\t') ? strchr(f14, '\t') + 1 : NULL;
        char *end = f14 ? strchr(f14, '\t') : NULL;
        if (!tab || !f14 || !end) continue;
        forced_lib = strncmp(f14, "onednn", 6) ? GEMM_ONEDNN : GEMM_OPENBLAS;   // a choice unlike the host's first line's
        fprintf(out, "another-host%.*s%s%s", (int)(f14 - tab), tab, cpu_gemm_lib_name((GemmLib)forced_lib), end);
        break;   // one line: the first shape
    }
    if (in) fclose(in);
    if (out) fclose(out);
    snprintf(req, sizeof req, "table:%s", other);
    cpu_sgemm_choose(req);
    EXPECT((int)cpu_sgemm_lib_for(&s[0].g) == forced_lib, "table:PATH takes another host's line: %s, expected %s",
           cpu_gemm_lib_name(cpu_sgemm_lib_for(&s[0].g)), cpu_gemm_lib_name((GemmLib)forced_lib));
    setenv("BOOST_CPU_GEMM_CACHE", other, 1);
    cpu_sgemm_choose("auto");
    (void)cpu_sgemm_lib_for(&s[0].g);
    lines = table_lines(other);
    EXPECT(lines == 2, "auto on a table with another host's line of the shape measured it for this host: %d lines", lines);
    for (int i = 0; i < NS; i++) { free(s[i].g.C); shape_free(&s[i]); }
    unsetenv("BOOST_CPU_GEMM_CACHE");
    cpu_sgemm_choose(NULL);
}

// Damage to a table line, generated field by field (emptied, non-numeric, negative, one field
// more, one less): auto and table:PATH refuse it with exit 2, naming the file and the line.
TEST(damaged_table_lines_refused) {
    char good[400];
    fresh_table(good, sizeof good, "good.tsv");
    float a[4] = { 1, 2, 3, 4 }, c[4];
    GemmArgs g = { TR_N, TR_N, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2 };
    cpu_sgemm(&g);
    unsetenv("BOOST_CPU_GEMM_CACHE");
    cpu_sgemm_choose(NULL);
    FILE *f = fopen(good, "r");
    char line[2000] = "", header[2000] = "";
    while (f && fgets(line, sizeof line, f)) if (line[0] == '#') strncat(header, line, sizeof header - strlen(header) - 1);
    if (f) fclose(f);
    line[strcspn(line, "\n")] = 0;
    char *field[24];
    int nf = 0;
    for (char *p = line; p && nf < 24; nf++) { field[nf] = p; p = strchr(p, '\t'); if (p) *p++ = 0; }
    EXPECT(nf == 18, "the table's line has %d fields", nf);
    const char *damage[] = { "", "x", "-3", "1e99", "NN NN" };
    int refused = 0, cases = 0;
    char bad[400];
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    // fields whose content is checked: cores and everything from threads on (host, cpu and the
    // libraries are names: any text is a host that is not this one)
    for (int k = 2; k < nf; k++) {
        if (k == 3) continue;
        for (int d = 0; d < 5; d++) {
            if (k == 16 && d == 2) continue;   // a negative load is a load (unknown: -1)
            if (k == 17) { if (d) continue; }   // the time is text; only its absence matters below
            else if ((k == 5 || k == 13) && d == 2) continue;
            FILE *o = fopen(bad, "w");
            fputs(header, o);
            for (int j = 0; j < nf; j++) fprintf(o, "%s%s", j ? "\t" : "", j == k ? damage[d] : field[j]);
            fputs("\n", o);
            fclose(o);
            if (k == 17) {   // the time emptied is not damage; a missing last field is: drop it
                o = fopen(bad, "w");
                fputs(header, o);
                for (int j = 0; j < nf - 1; j++) fprintf(o, "%s%s", j ? "\t" : "", field[j]);
                fputs("\n", o);
                fclose(o);
            }
            char req[450];
            snprintf(req, sizeof req, "table:%s", bad);
            int lineno = 1;
            for (const char *h = header; *h; h++) lineno += *h == '\n';
            char where[460];
            snprintf(where, sizeof where, "%s:%d", bad, lineno);
            int r1 = child_exit(req, NULL), named = child_err_has(where);
            cases++;
            if (r1 == 2 && named) refused++;
            else EXPECT(0, "field %d damaged to '%s': exit %d, message names %s: %s", k, k == 17 ? "(missing)" : damage[d],
                        r1, where, named ? "yes" : "no");
        }
    }
    // one field more
    FILE *o = fopen(bad, "w");
    fputs(header, o);
    for (int j = 0; j < nf; j++) fprintf(o, "%s%s", j ? "\t" : "", field[j]);
    fputs("\textra\n", o);
    fclose(o);
    char req[450];
    snprintf(req, sizeof req, "table:%s", bad);
    cases++;
    if (child_exit(req, NULL) == 2 && child_err_has("more than 18")) refused++;
    else EXPECT(0, "a line with a field more was not refused naming its count");
    // auto reads the host's table through the same parser
    cases++;
    if (child_exit("auto", bad) == 2) refused++;
    else EXPECT(0, "auto took a damaged table");
    printf("  %d of %d damaged tables refused\n", refused, cases);
}

// The measurement's rule on generated shapes, with every installed library: OpenBLAS's ratio
// is 1, each library's quartiles hold its median, and the choice is the lowest median or the
// default (which stays unless beaten clearly, round by round).
TEST(measurement_rule) {
    GemmLib libs[GEMM_N_LIBS];
    int n = 0;
    for (int l = 0; l < GEMM_N_LIBS; l++) if (cpu_gemm_lib_available((GemmLib)l, NULL, 0)) libs[n++] = (GemmLib)l;
    Rng rng = { .state = 0x3ea5 };
    for (int i = 0; i < 4; i++) {
        Shape s = shape_make(&rng);
        float *C = malloc(s.nc * 4);
        s.g.C = C;
        for (int d = 0; d < 2; d++) {
            GemmLib def = d ? GEMM_ONEDNN : GEMM_OPENBLAS;
            GemmChoice c;
            cpu_gemm_measure(&s.g, libs, n, def, 0.01, &c);
            EXPECT(c.med[GEMM_OPENBLAS] == 1.0f && c.rounds >= 7, "shape %d: OpenBLAS's ratio %g, %d rounds", i,
                   c.med[GEMM_OPENBLAS], c.rounds);
            float lowest = 1e30f;
            for (int k = 0; k < n; k++) {
                GemmLib l = libs[k];
                EXPECT(c.q1[l] <= c.med[l] && c.med[l] <= c.q3[l], "shape %d, %s: quartiles %g %g %g", i,
                       cpu_gemm_lib_name(l), c.q1[l], c.med[l], c.q3[l]);
                if (c.med[l] < lowest) lowest = c.med[l];
            }
            int ok = c.med[c.lib] == lowest || c.lib == def;   // the fastest, or the default it did not beat clearly
            EXPECT(ok, "shape %d, default %s: chose %s (median %g), the lowest median is %g", i, cpu_gemm_lib_name(def),
                   cpu_gemm_lib_name(c.lib), c.med[c.lib], lowest);
        }
        free(C);
        shape_free(&s);
    }
}

// The decision alone, on generated rounds (2-5 libraries, 7-31 rounds, some sitting rounds out
// after the third, times drawn around per-library speeds): the choice is the default or passes
// the default's test (median time over the default's 2 % below 1, faster in two thirds of the
// rounds both ran), and no other library that passes has a lower median over OpenBLAS. The
// oracle tests every library by brute force; built cases where the fastest median fails the
// test (one bad round too many) and a slower one passes check that the slower one is taken.
static int passes(const double (*tt)[GEMM_MAX_ROUNDS], int rounds, int i, int ref) {
    double q[GEMM_MAX_ROUNDS];
    int k = 0, wins = 0;
    for (int r = 0; r < rounds; r++)
        if (!isnan(tt[i][r]) && !isnan(tt[ref][r])) { q[k] = tt[i][r] / tt[ref][r]; wins += q[k] < 1; k++; }
    for (int a = 1; a < k; a++)   // insertion sort: the oracle shares no code with the rule
        for (int b = a; b > 0 && q[b] < q[b - 1]; b--) { double x = q[b]; q[b] = q[b - 1]; q[b - 1] = x; }
    double med = k % 2 ? q[k / 2] : 0.5 * (q[k / 2 - 1] + q[k / 2]);
    return k > 0 && med < 1 - CHOICE_MARGIN && 3 * wins >= 2 * k;
}
TEST(choice_tests_every_library_against_the_default) {
    Rng rng = { .state = 0xc401 };
    int took_slower = 0;
    for (int c = 0; c < 2000; c++) {
        int n = 2 + (int)(rng_uniform(&rng) * (GEMM_N_LIBS - 1));
        if (n > GEMM_N_LIBS) n = GEMM_N_LIBS;
        int rounds = 7 + (int)(rng_uniform(&rng) * 25);
        if (rounds > GEMM_MAX_ROUNDS) rounds = GEMM_MAX_ROUNDS;
        GemmLib libs[GEMM_N_LIBS];
        for (int i = 0; i < n; i++) libs[i] = (GemmLib)i;   // OpenBLAS first, as cpu_gemm_measure's
        GemmLib def = (GemmLib)(rng_uniform(&rng) < 0.5 ? 0 : (int)(rng_uniform(&rng) * n) % n);
        double tt[GEMM_N_LIBS][GEMM_MAX_ROUNDS], speed[GEMM_N_LIBS];
        for (int i = 0; i < n; i++) speed[i] = 0.8 + 0.4 * rng_uniform(&rng);
        for (int r = 0; r < rounds; r++)
            for (int i = 0; i < n; i++) tt[i][r] = speed[i] * (1 + (rng_uniform(&rng) < 0.2 ? 0.5 : 0.05) * rng_uniform(&rng));
        if (c % 4 == 3) {   // the fastest median loses the win share: a slow burst in over a third of its rounds
            int f = 1 + c % (n - 1), s2 = f == n - 1 ? 1 : f + 1;
            if (f != s2 && libs[f] != def && libs[s2] != def) {
                for (int r = 0; r < rounds; r++) {
                    tt[f][r] = tt[(int)def][r] * (r % 5 < 3 ? 0.7 : 1.2);
                    tt[s2][r] = tt[(int)def][r] * 0.9;
                }
            }
        }
        for (int i = 1; i < n; i++)   // a library that sat out after the third round
            if (rng_uniform(&rng) < 0.15) for (int r = 3; r < rounds; r++) tt[i][r] = NAN;
        GemmChoice ch;
        cpu_gemm_decide((const double (*)[GEMM_MAX_ROUNDS])tt, rounds, libs, n, def, &ch);
        int ref = (int)def < n ? (int)def : 0, got = (int)ch.lib;
        EXPECT(got == ref || passes((const double (*)[GEMM_MAX_ROUNDS])tt, rounds, got, ref),
               "case %d: chose %s, which does not beat the default %s", c, cpu_gemm_lib_name(ch.lib), cpu_gemm_lib_name(def));
        for (int i = 0; i < n; i++) {
            if (i == ref || !passes((const double (*)[GEMM_MAX_ROUNDS])tt, rounds, i, ref)) continue;
            EXPECT(got != ref && ch.med[i] >= ch.med[got], "case %d: %s beats the default %s with median %g, the choice %s has %g",
                   c, cpu_gemm_lib_name((GemmLib)i), cpu_gemm_lib_name(def), ch.med[i], cpu_gemm_lib_name(ch.lib), ch.med[got]);
        }
        for (int i = 0; i < n; i++)
            EXPECT(ch.q1[i] <= ch.med[i] && ch.med[i] <= ch.q3[i], "case %d, %s: quartiles %g %g %g", c,
                   cpu_gemm_lib_name((GemmLib)i), ch.q1[i], ch.med[i], ch.q3[i]);
        EXPECT(ch.med[0] == 1.0f && ch.rounds == rounds, "case %d: OpenBLAS's ratio %g, rounds %d of %d", c, ch.med[0], ch.rounds, rounds);
        int lowest = 0;
        for (int i = 1; i < n; i++) if (ch.med[i] < ch.med[lowest]) lowest = i;
        took_slower += got != lowest && got != ref;
    }
    EXPECT(took_slower > 0, "no generated case took a library other than the fastest median (the built cases must)");
}

// A product that stores its result (beta 0: a gradient's first writer) and the same product
// added into zeros (beta 1: zero + accumulate) run on one library and give the same bits,
// whichever of the two a shape meets first (the measurement's beta) and whatever a table says:
// generated shapes under auto, then a table holding one shape twice, with each beta naming
// another library (a table of the earlier key, which had beta in it): one choice serves both.
static void store_vs_accumulate(const Shape *s, const char *label, int i) {
    GemmArgs st = s->g, acc = s->g;
    float *Cs = malloc(s->nc * 4), *Ca = malloc(s->nc * 4);
    memset(Cs, 0xff, s->nc * 4);   // NaN: beta 0 must not read it
    memset(Ca, 0, s->nc * 4);
    st.C = Cs; st.beta = 0.0f;
    acc.C = Ca; acc.beta = 1.0f;
    if (i % 2) { cpu_sgemm(&acc); cpu_sgemm(&st); }   // which beta meets the shape first
    else { cpu_sgemm(&st); cpu_sgemm(&acc); }
    GemmLib ls = cpu_sgemm_lib_for(&st), la = cpu_sgemm_lib_for(&acc);
    EXPECT(ls == la, "%s, shape %d: beta 0 runs on %s, beta 1 on %s", label, i, cpu_gemm_lib_name(ls), cpu_gemm_lib_name(la));
    int same = 1;
    for (int m = 0; m < st.M; m++) same &= !memcmp(Cs + (size_t)m * st.ldc, Ca + (size_t)m * st.ldc, (size_t)st.N * 4);
    EXPECT(same, "%s, shape %d (%c%c %dx%dx%d): stored and zero + accumulate differ in bits", label, i,
           st.ta == TR_T ? 'T' : 'N', st.tb == TR_T ? 'T' : 'N', st.M, st.N, st.K);
    free(Cs); free(Ca);
}
TEST(store_and_accumulate_one_library_same_bits) {
    char path[400];
    fresh_table(path, sizeof path, "beta.tsv");
    Rng rng = { .state = 0xbe7a };
    enum { NS = 10 };
    for (int i = 0; i < NS; i++) {
        Shape s = shape_make(&rng);
        store_vs_accumulate(&s, "auto", i);
        shape_free(&s);
    }
    int lines = table_lines(path);
    EXPECT(lines == NS, "%d products measured into %d lines (expected one line per product, not per beta)", NS, lines);
    if (!cpu_gemm_lib_available(GEMM_ONEDNN, NULL, 0)) { unsetenv("BOOST_CPU_GEMM_CACHE"); cpu_sgemm_choose(NULL); return; }
    // the same shape twice in a table: beta 0 -> onednn, then beta 1 -> openblas (and the reverse)
    for (int order = 0; order < 2; order++) {
        Shape s = shape_make(&rng);
        char tab[400], req[450];
        snprintf(tab, sizeof tab, "%s/twice%d.tsv", dir, order);
        FILE *f = fopen(tab, "w");
        const GemmArgs *g = &s.g;
        for (int b = 0; b < 2 && f; b++) {
            GemmLib l = (b ^ order) ? GEMM_OPENBLAS : GEMM_ONEDNN;
            fprintf(f, "h\tcpu\t2\tlibs\t%d\t%c%c\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\topenblas:1:1:1,%s:1:1:1\t7\t0.5\t"
                    "2026-01-01T00:00:00Z\n", omp_get_max_threads(), g->ta == TR_T ? 'T' : 'N', g->tb == TR_T ? 'T' : 'N',
                    g->M, g->N, g->K, g->lda, g->ldb, g->ldc, b, cpu_gemm_lib_name(l), cpu_gemm_lib_name(l));
        }
        if (f) fclose(f);
        snprintf(req, sizeof req, "table:%s", tab);
        cpu_sgemm_choose(req);
        store_vs_accumulate(&s, order ? "a table naming openblas, then onednn" : "a table naming onednn, then openblas", order);
        GemmLib want = order ? GEMM_ONEDNN : GEMM_OPENBLAS;   // the shape's last line
        EXPECT(cpu_sgemm_lib_for(&s.g) == want, "the table's last line of the shape names %s; %s runs",
               cpu_gemm_lib_name(want), cpu_gemm_lib_name(cpu_sgemm_lib_for(&s.g)));
        shape_free(&s);
    }
    unsetenv("BOOST_CPU_GEMM_CACHE");
    cpu_sgemm_choose(NULL);
}

int main(void) {
    if (tl_tmpdir(dir, sizeof dir, "test_sgemm")) return 1;
    RUN(every_library_within_fp32_bounds);
    RUN(sliced_runs_cover_every_element);
    RUN(modes_and_default);
    RUN(measurement_rule);
    RUN(choice_tests_every_library_against_the_default);
    RUN(table_measured_once_and_read_back);
    RUN(damaged_table_lines_refused);
    RUN(store_and_accumulate_one_library_same_bits);
    return tl_finish(dir);
}
