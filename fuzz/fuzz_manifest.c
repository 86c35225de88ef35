// fuzz_manifest.c — libFuzzer harness: the manifest and configuration parser
// (manifest_load_with: YAML, aliases, merge keys, extends, variants, grids, every key's
// value, config_finalize's cross checks and size limits). An input that starts with the
// line "#set KEY=VALUE" also passes that override (the --set path). The input must be
// refused with exit 2 or loaded; nothing else (an internal error, a crash, a hang).
#include "fuzzlib.h"
#include "../src/config/manifest.h"
#include "../src/model/flops.h"

// Loads the manifest at path (refused: back through the hook) and uses it as the tools do.
static void fz_load_manifest(const char *path, const char *const *sets, int n_sets) {
    if (FZ_REFUSED()) return;
    Manifest *m = manifest_load_with(path, sets, n_sets);
    for (int i = 0; i < m->n_variants; i++) {
        char *json = config_to_json(&m->variants[i].config);
        free(json);
        (void)model_param_count(&m->variants[i].config.model);
        (void)flops_train_per_token(&m->variants[i].config.model);
    }
    manifest_free(m);
}

int fuzz_manifest_one(const uint8_t *data, size_t n) {
    static char set[512];
    const char *sets[1] = { set };
    int n_sets = 0;
    if (n > 5 && !memcmp(data, "#set ", 5)) {
        size_t k = 5;
        while (k < n && data[k] != '\n' && k - 5 < sizeof set - 1) k++;
        memcpy(set, data + 5, k - 5);
        set[k - 5] = 0;
        n_sets = strlen(set) == k - 5 ? 1 : 0;   // (no NUL inside)
    }
    fz_load_manifest(fz_file("fuzz.yaml", data, n), sets, n_sets);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) { return fuzz_manifest_one(data, n); }
#endif
