// test_fuzz_corpus.c — the fuzz harnesses (fuzz/) replayed on their seed corpus and on
// every input a fuzzer ever found crashing (fuzz/regressions/<harness>/): each input must
// be loaded or refused with a clean error (exit 2), in this ordinary build as in the
// sanitizer build of `make test-asan`. `make fuzz` (clang, libFuzzer) searches for new ones.
#include <dirent.h>
#include "testlib.h"
#include "../src/core/fileio.h"
#define FUZZ_NO_ENTRY
#include "../fuzz/fuzz_manifest.c"
#include "../fuzz/fuzz_shard.c"
#include "../fuzz/fuzz_tokenizer.c"
#include "../fuzz/fuzz_checkpoint.c"
TL_MAIN_DEFS

typedef int (*OneInput)(const uint8_t *, size_t);

// Every regular file of dir through fn; returns the number of inputs (-1: no directory).
static int replay_dir(const char *dir, OneInput fn) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int count = 0;
    struct dirent *e;
    char path[1200];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *buf; size_t n; char err[300];
        if (file_read_regular(path, 16 << 20, "fuzz input", &buf, &n, err, sizeof err) != 0) continue;
        fprintf(stderr, "replay %s\n", path);
        fn((const uint8_t *)buf, n);
        free(buf);
        count++;
    }
    closedir(d);
    return count;
}

static void replay(const char *name, OneInput fn) {
    char dir[300];
    int before = fz_refused, total = 0, k;
    snprintf(dir, sizeof dir, "fuzz/corpus/%s", name);
    k = replay_dir(dir, fn);
    EXPECT(k > 0, "no seed inputs in %s", dir);
    total += k > 0 ? k : 0;
    snprintf(dir, sizeof dir, "fuzz/regressions/%s", name);
    k = replay_dir(dir, fn);
    total += k > 0 ? k : 0;
    printf("INFO fuzz %s: %d inputs replayed, %d refused with a clean error, %d loaded\n", name, total,
           fz_refused - before, total - (fz_refused - before));
}

TEST(fuzz_replay_manifest) { replay("manifest", fuzz_manifest_one); }
TEST(fuzz_replay_shard) { replay("shard", fuzz_shard_one); }
TEST(fuzz_replay_tokenizer) { replay("tokenizer", fuzz_tokenizer_one); }
TEST(fuzz_replay_checkpoint) { replay("checkpoint", fuzz_checkpoint_one); }

int main(int argc, char **argv) {
    // the corpus is found from the repository root: the current directory (tests/run.sh),
    // else the parent of the binary's directory (build/..)
    char root[1100];
    snprintf(root, sizeof root, "%s", argc > 0 ? argv[0] : ".");
    char *slash = strrchr(root, '/');
    if (access("fuzz/corpus", F_OK) != 0 && slash) {
        strcpy(slash, "/..");
        if (chdir(root) != 0) { perror(root); return 1; }
    }
    RUN(fuzz_replay_manifest);
    RUN(fuzz_replay_shard);
    RUN(fuzz_replay_tokenizer);
    RUN(fuzz_replay_checkpoint);
    TL_EXIT();
}
