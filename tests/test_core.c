// test_core.c — the shared pieces under everything: CRC-32 (known vectors, chained
// pieces), the one JSON string escape, the one crash-safe file write and the bounded
// reader of regular files (FIFOs and devices refused without blocking, size limits), the
// output folders (core/outdir.h: nothing written or deleted through a link).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testlib.h"
#include "../src/core/check.h"
#include "../src/core/crc32.h"
#include "../src/core/env.h"
#include "../src/core/utf8.h"
#include "../src/core/fileio.h"
#include "../src/core/json.h"
#include "../src/core/outdir.h"
TL_MAIN_DEFS

static char TMPD[256];
static void tpath(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", TMPD, name); }

TEST(crc32_known_values) {
    EXPECT(crc32_update(0, "123456789", 9) == 0xCBF43926u, "check value %08x", crc32_update(0, "123456789", 9));
    EXPECT(crc32_update(0, "", 0) == 0, "empty");
    unsigned char buf[1000];
    for (int i = 0; i < 1000; i++) buf[i] = (unsigned char)(i * 37 + 11);
    uint32_t whole = crc32_update(0, buf, 1000), parts = 0;
    for (int off = 0; off < 1000; off += 77) parts = crc32_update(parts, buf + off, off + 77 > 1000 ? (size_t)(1000 - off) : 77);
    EXPECT(whole == parts, "pieces %08x vs whole %08x", parts, whole);
    // Python: zlib.crc32(bytes((i * 37 + 11) & 255 for i in range(1000)))
    EXPECT(whole == 0xC3905A1Du, "zlib's value: %08x", whole);
}

TEST(json_escape_cases) {
    char out[64];
    size_t n = json_escape(out, sizeof out, "a\"b\\c\n\t\r\b\f\x01z");
    EXPECT(!strcmp(out, "\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001z\"") && n == strlen(out), "got %s (%zu)", out, n);
    EXPECT(json_escape(NULL, 0, "héllo") == 8, "UTF-8 passes through: %zu", json_escape(NULL, 0, "héllo"));
    char small[6];
    n = json_escape(small, sizeof small, "abcdefgh");
    EXPECT(n == 10 && !strcmp(small, "\"abcd"), "truncation: %zu '%s'", n, small);
}

TEST(tmp_names) {
    long pid = 0;
    EXPECT(file_is_tmp_name("step_3.h5.tmp.1234", &pid) && pid == 1234, "pid %ld", pid);
    EXPECT(!file_is_tmp_name("step_3.h5", NULL) && !file_is_tmp_name("step_3.h5.tmp", NULL) &&
           !file_is_tmp_name("x.tmp.12a", NULL), "non-tmp names");
    char t[300];
    file_tmp_name(t, sizeof t, "/a/b.bin");
    char want[64]; snprintf(want, sizeof want, "/a/b.bin.tmp.%ld", (long)getpid());
    EXPECT(!strcmp(t, want), "%s", t);
}

TEST(atomic_write_commits_and_cleans) {
    char path[300], tmp[400];
    tpath(path, sizeof path, "sub/dir/file.bin");
    FILE *f = file_atomic_open(path, tmp, sizeof tmp);
    file_atomic_write(f, "hello", 5, tmp);
    EXPECT(access(path, F_OK) != 0, "visible before commit");
    file_atomic_commit(f, tmp, path);
    EXPECT(access(tmp, F_OK) != 0, "tmp left behind");
    char *text; size_t n; char err[300];
    EXPECT(file_read_regular(path, 100, "test file", &text, &n, err, sizeof err) == 0 && n == 5 && !strcmp(text, "hello"),
           "read back: %s", err);
    free(text);
    // a file where a directory is needed
    char bad[300]; tpath(bad, sizeof bad, "sub/dir/file.bin/x");
    EXPECT(file_mkdir_parent(bad, err, sizeof err) != 0 && strstr(err, "exists but is not a directory"), "%s", err);
}

// A write that fails (RLIMIT_FSIZE in a child: the disk is "full") exits 2, names the
// file and removes its temporary.
TEST(atomic_write_full_disk) {
    char path[300], tmp[400], log[300];
    tpath(path, sizeof path, "full.bin");
    tpath(log, sizeof log, "full.err");
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        if (!freopen(log, "w", stderr)) _exit(99);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = { 4096, 4096 };
        setrlimit(RLIMIT_FSIZE, &rl);
        static char big[1 << 16];
        FILE *f = file_atomic_open(path, tmp, sizeof tmp);
        file_atomic_write(f, big, sizeof big, tmp);
        file_atomic_commit(f, tmp, path);
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    char err[2000] = "";
    FILE *f = fopen(log, "r");
    if (f) { size_t k = fread(err, 1, sizeof err - 1, f); err[k] = 0; fclose(f); }
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
    EXPECT(strstr(err, "full.bin") && strstr(err, "File too large") && strstr(err, "partial file was removed"), "%s", err);
    char t[400]; snprintf(t, sizeof t, "%s.tmp.%d", path, (int)p);
    EXPECT(access(t, F_OK) != 0 && access(path, F_OK) != 0, "files left behind");
}

TEST(read_regular_refuses_the_rest) {
    char *text; size_t n; char err[400], fifo[300], dir[300], big[300];
    EXPECT(file_read_regular("/dev/zero", 1 << 20, "manifest", &text, &n, err, sizeof err) != 0 &&
           strstr(err, "is a character device"), "/dev/zero: %s", err);
    tpath(fifo, sizeof fifo, "fifo");
    mkfifo(fifo, 0600);
    EXPECT(file_read_regular(fifo, 1 << 20, "manifest", &text, &n, err, sizeof err) != 0 && strstr(err, "is a FIFO"),
           "fifo: %s", err);   // (returns at once: a blocking open would hang this test)
    tpath(dir, sizeof dir, "sub");
    EXPECT(file_read_regular(dir, 1 << 20, "manifest", &text, &n, err, sizeof err) != 0 && strstr(err, "is a directory"),
           "dir: %s", err);
    tpath(big, sizeof big, "big.txt");
    FILE *f = fopen(big, "w"); for (int i = 0; i < 1000; i++) fputc('x', f); fclose(f);
    EXPECT(file_read_regular(big, 999, "manifest", &text, &n, err, sizeof err) != 0 && strstr(err, "1000 bytes; the limit is 999"),
           "size: %s", err);
    EXPECT(file_read_regular(big, 1000, "manifest", &text, &n, err, sizeof err) == 0 && n == 1000 && text[1000] == 0, "at the limit");
    free(text);
}

TEST(blas_core_for_isa) {
    // the kernel set each ISA gets, and the ranks that decide whether OpenBLAS's own choice stands
    EXPECT(strcmp(env_blas_core_for_isa(1, 1, 1, 1), "Cooperlake") == 0, "AVX-512 + BF16");
    EXPECT(strcmp(env_blas_core_for_isa(1, 1, 1, 0), "SkylakeX") == 0, "AVX-512");
    EXPECT(strcmp(env_blas_core_for_isa(1, 1, 0, 0), "Haswell") == 0, "AVX2");
    EXPECT(strcmp(env_blas_core_for_isa(1, 0, 0, 0), "Sandybridge") == 0, "AVX");
    EXPECT(env_blas_core_for_isa(0, 0, 0, 0) == NULL, "SSE only: OpenBLAS's choice");
    EXPECT(env_blas_core_rank("Prescott") == 0 && env_blas_core_rank("prescott") == 0, "Prescott (any case) is SSE");
    EXPECT(env_blas_core_rank("Zen") == 2 && env_blas_core_rank("SapphireRapids") == 4, "Zen, SapphireRapids");
    EXPECT(env_blas_core_rank("GraniteRapidsX") == -1 && env_blas_core_rank(NULL) == -1, "unknown names");
    for (int a = 0; a < 16; a++) {   // the kernels chosen for an ISA are never ranked below it
        const char *c = env_blas_core_for_isa(a & 1, a >> 1 & 1, a >> 2 & 1, a >> 3 & 1);
        if (c) EXPECT(env_blas_core_rank(c) >= 1, "%s", c);
    }
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    EXPECT(env_blas_core_wanted() == NULL, "the user's OPENBLAS_CORETYPE stands");
    unsetenv("OPENBLAS_CORETYPE");
}

// The UTF-8 rule against its definition, on every sequence of 1 to 3 bytes and a sample of
// 4: valid exactly when the bytes are the shortest encoding of a code point <= U+10FFFF
// that is not a surrogate (RFC 3629), decoded here independently of src/core/utf8.c.
static size_t utf8_reference(const unsigned char *p, size_t n) {
    static const unsigned lead_bits[5] = { 0, 0x7F, 0x1F, 0x0F, 0x07 }, min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    size_t k = p[0] < 0x80 ? 1 : (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (!k || k > n) return 0;
    unsigned cp = p[0] & lead_bits[k];
    for (size_t j = 1; j < k; j++) {
        if ((p[j] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[j] & 0x3F);
    }
    if (cp < min_cp[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return k;
}

TEST(utf8_rule_is_rfc3629) {
    unsigned char b[4];
    long bad = 0;
    for (unsigned x = 0; x < (1u << 24) && bad < 5; x++) {
        b[0] = (unsigned char)(x >> 16); b[1] = (unsigned char)(x >> 8); b[2] = (unsigned char)x;
        for (size_t n = 1; n <= 3; n++) {
            if (n < 3 && (x & ((1u << (8 * (3 - n))) - 1))) continue;   // (shorter ones: once each)
            if (utf8_seq_len(b, n) != utf8_reference(b, n)) {
                EXPECT(0, "bytes %02x %02x %02x (n %zu): rule %zu, definition %zu", b[0], b[1], b[2], n, utf8_seq_len(b, n),
                       utf8_reference(b, n));
                bad++;
            }
        }
    }
    unsigned long long st = 7;
    for (int i = 0; i < 2000000 && bad < 10; i++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        memcpy(b, &st, 4);
        b[0] = (unsigned char)(0xF0 | (b[0] & 0x0F));   // 4-byte leads and their neighbours
        if (utf8_seq_len(b, 4) != utf8_reference(b, 4)) { EXPECT(0, "4 bytes %02x %02x %02x %02x", b[0], b[1], b[2], b[3]); bad++; }
    }
    // two bad sequences in text: an overlong '/' and a surrogate, counted as bad bytes
    const unsigned char t[] = { 'a', 0xC0, 0xAF, 'b', 0xED, 0xA0, 0x80, 0xC3, 0xA9 };
    EXPECT(utf8_first_invalid(t, sizeof t) == 1 && utf8_count_invalid(t, sizeof t) == 5, "first %ld, count %zu",
           utf8_first_invalid(t, sizeof t), utf8_count_invalid(t, sizeof t));
    char d[64];
    EXPECT(utf8_describe_char("\xC3\xA9x", d, sizeof d) == 2 && !strcmp(d, "'\xC3\xA9' (U+00E9)"), "%s", d);
    EXPECT(utf8_describe_char("\xC0\xAF", d, sizeof d) == 1 && !strcmp(d, "byte 0xC0"), "%s", d);
    utf8_printable("a\nb\xFF\xC3\xA9", d, sizeof d);
    EXPECT(!strcmp(d, "a\\x0Ab\\xFF\xC3\xA9"), "printable: %s", d);
}

// ---- output folders: never through a link -------------------------------------------------
static int owned_if_ours(int dirfd, const char *name) {
    char buf[8] = "";
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) return 0;
    ssize_t k = read(fd, buf, 4);
    close(fd);
    return k == 4 && !memcmp(buf, "ours", 4);
}
static void put(const char *path, const char *text) { FILE *f = fopen(path, "w"); if (f) { fputs(text, f); fclose(f); } }
static int has(const char *path, const char *text) {
    char buf[64] = ""; FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t k = fread(buf, 1, sizeof buf - 1, f); buf[k] = 0; fclose(f);
    return !strcmp(buf, text);
}

TEST(outdir_never_through_a_link) {
    char base[300], out[300], p[400], err[2000];
    tpath(base, sizeof base, "od");
    tpath(out, sizeof out, "od_outside");
    mkdir(out, 0755);
    snprintf(p, sizeof p, "%s/victim", out); put(p, "keep");
    OutDir d, sub;
    EXPECT(outdir_open(&d, base, 1, err, sizeof err) == 0, "%s", err);
    // a folder below it replaced by a link: refused by name
    snprintf(p, sizeof p, "%s/linked", base);
    EXPECT(symlink(out, p) == 0, "symlink");
    EXPECT(outdir_sub(&sub, &d, "linked", 1, err, sizeof err) != 0 && strstr(err, "linked is a symbolic link"), "%s", err);
    EXPECT(outdir_open(&sub, p, 1, err, sizeof err) != 0 && strstr(err, "is a symbolic link"), "%s", err);
    snprintf(p, sizeof p, "%s/afile", base); put(p, "x");
    EXPECT(outdir_sub(&sub, &d, "afile", 1, err, sizeof err) != 0 && strstr(err, "is a regular file, not a directory"), "%s", err);
    // names inside: a link, a file of someone else's, a leftover of ours
    snprintf(p, sizeof p, "%s/victim", out);
    char name[64]; snprintf(name, sizeof name, "f.tmp.%ld", (long)getpid());
    char at[400]; snprintf(at, sizeof at, "%s/%s", base, name);
    EXPECT(symlink(p, at) == 0, "symlink");
    char tmp[128];
    EXPECT(outdir_tmp_create(&d, "f", tmp, sizeof tmp, owned_if_ours, err, sizeof err) < 0 && strstr(err, "is a symbolic link"), "%s", err);
    EXPECT(outdir_remove(&d, name, owned_if_ours, err, sizeof err) == 0 && strstr(err, "symbolic link"), "a link removed: %s", err);
    unlink(at); put(at, "theirs");
    EXPECT(outdir_tmp_create(&d, "f", tmp, sizeof tmp, owned_if_ours, err, sizeof err) < 0 && strstr(err, "did not write"), "%s", err);
    EXPECT(outdir_remove(&d, name, owned_if_ours, err, sizeof err) == 0 && has(at, "theirs"), "a foreign file removed: %s", err);
    put(at, "ours, left by an earlier process");
    int fd = outdir_tmp_create(&d, "f", tmp, sizeof tmp, owned_if_ours, err, sizeof err);
    EXPECT(fd >= 0 && !strcmp(tmp, name), "a leftover of ours is replaced: %s", err);
    EXPECT(write(fd, "new", 3) == 3, "write");
    // the final name a link: renameat replaces the link, never writes its target
    snprintf(at, sizeof at, "%s/f", base);
    EXPECT(symlink(p, at) == 0, "symlink");
    EXPECT(outdir_commit(&d, fd, tmp, "f", err, sizeof err) == 0, "%s", err);
    struct stat st;
    EXPECT(lstat(at, &st) == 0 && S_ISREG(st.st_mode) && has(at, "new") && has(p, "keep"), "commit over a link");
    snprintf(p, sizeof p, "%s/victim", out);
    EXPECT(has(p, "keep"), "the file outside changed");
    // held: removed only while it is still the file created
    fd = outdir_create(&d, "held", NULL, err, sizeof err);
    snprintf(at, sizeof at, "%s/held", base); unlink(at); put(at, "replaced");
    EXPECT(fd >= 0 && outdir_remove_held(&d, "held", fd) == 0 && has(at, "replaced"), "a replaced file was removed");
    close(fd);
    EXPECT(outdir_probe_writable(&d, err, sizeof err) == 0, "%s", err);
    outdir_close(&d);
}

TEST(outdir_undo_removes_only_what_it_made) {
    char base[300], p[400], err[2000];
    tpath(base, sizeof base, "undo");
    mkdir(base, 0755);
    snprintf(p, sizeof p, "%s/kept", base); mkdir(p, 0755);   // there before: kept
    outdir_keep_created();
    OutDir d, sub;
    snprintf(p, sizeof p, "%s/kept/a/b", base);
    EXPECT(outdir_open(&d, p, 1, err, sizeof err) == 0, "%s", err);
    EXPECT(outdir_sub(&sub, &d, "c", 1, err, sizeof err) == 0, "%s", err);
    snprintf(p, sizeof p, "%s/kept/x", base);
    OutDir x;
    EXPECT(outdir_open(&x, p, 1, err, sizeof err) == 0, "%s", err);
    snprintf(p, sizeof p, "%s/kept/x/user.txt", base); put(p, "a file made meanwhile");
    outdir_close(&d); outdir_close(&sub); outdir_close(&x);
    outdir_undo_created();
    snprintf(p, sizeof p, "%s/kept/a", base);
    char px[400]; snprintf(px, sizeof px, "%s/kept/x/user.txt", base);
    char pk[400]; snprintf(pk, sizeof pk, "%s/kept", base);
    EXPECT(access(p, F_OK) != 0 && access(px, F_OK) == 0 && access(pk, F_OK) == 0,
           "undo: a %s, x/user.txt %s, kept %s", access(p, F_OK) ? "gone" : "left", access(px, F_OK) ? "gone" : "kept",
           access(pk, F_OK) ? "gone" : "kept");
}

TEST(outdir_trace_lists_the_writes) {
    char base[300], trace[300], err[2000];
    tpath(base, sizeof base, "traced");
    tpath(trace, sizeof trace, "trace.txt");
    setenv("BOOST_TRACE_WRITES", trace, 1);
    OutDir d;
    EXPECT(outdir_open(&d, base, 1, err, sizeof err) == 0, "%s", err);
    char tmp[128];
    int fd = outdir_tmp_create(&d, "out.bin", tmp, sizeof tmp, NULL, err, sizeof err);
    EXPECT(fd >= 0 && outdir_commit(&d, fd, tmp, "out.bin", err, sizeof err) == 0, "%s", err);
    unsetenv("BOOST_TRACE_WRITES");
    outdir_close(&d);
    char want[3][700];
    snprintf(want[0], sizeof want[0], "mkdir\t%s\n", base);
    snprintf(want[1], sizeof want[1], "create\t%s/out.bin.tmp.%ld\n", base, (long)getpid());
    snprintf(want[2], sizeof want[2], "replace\t%s/out.bin\n", base);
    char got[4000] = ""; FILE *f = fopen(trace, "r");
    if (f) { size_t k = fread(got, 1, sizeof got - 1, f); got[k] = 0; fclose(f); }
    for (int i = 0; i < 3; i++) EXPECT(strstr(got, want[i]), "trace lacks '%s': %s", want[i], got);
}

int main(void) {
    if (tl_tmpdir(TMPD, sizeof TMPD, "test_core")) return 1;
    RUN(crc32_known_values);
    RUN(utf8_rule_is_rfc3629);
    RUN(json_escape_cases);
    RUN(tmp_names);
    RUN(atomic_write_commits_and_cleans);
    RUN(atomic_write_full_disk);
    RUN(read_regular_refuses_the_rest);
    RUN(blas_core_for_isa);
    RUN(outdir_never_through_a_link);
    RUN(outdir_undo_removes_only_what_it_made);
    RUN(outdir_trace_lists_the_writes);
    return tl_finish(TMPD);
}
