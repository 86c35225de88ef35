// cache_hint.c — see cache_hint.h.
#include "cache_hint.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/shellword.h"

// Is `dir` (absolute) a cache entry build/prepare made? Its marker file is there, and it
// is not the root or the home folder (a marker there proves nothing).
static int made_by_prepare(const char *dir) {
    char marker[PATH_MAX + 32];
    const char *home = getenv("HOME");
    if (!strcmp(dir, "/") || (home && !strcmp(dir, home))) return 0;
    snprintf(marker, sizeof marker, "%s/prepared.ok", dir);
    return access(marker, F_OK) == 0;
}

void data_entry_hint(char *hint, size_t n, const char *dir) {
    char abs[PATH_MAX], cmd[PATH_MAX + 64] = "";
    if (realpath(dir, abs) && made_by_prepare(abs)) {
        shell_append_word(cmd, sizeof cmd, "rm"); shell_append_word(cmd, sizeof cmd, "-rf");
        shell_append_word(cmd, sizeof cmd, abs);
        snprintf(hint, n, "the cache entry is damaged or from another version; delete it (%s) and rerun build/prepare "
                 "or the training run to rebuild it", cmd);
    } else {
        snprintf(hint, n, "the file is damaged or from another version; replace it with a good copy, or rebuild it with "
                 "build/prepare --dataset NAME --vocab N (which writes a new cache entry; nothing here needs deleting)");
    }
}

void data_damage_hint(char *hint, size_t n, const char *path, const char *what) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) dir[1] = 0; else if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    char inner[PATH_MAX + 512];
    data_entry_hint(inner, sizeof inner, dir);
    snprintf(hint, n, "this %s: %s", what, inner);
}
