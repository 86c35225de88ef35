// checkpoint_config.c — what a tool needs to use a checkpoint alone: the file a user names
// (a file, or a run folder's newest good one), and the configuration it was trained with
// (config/config_diff.h's config_from_json: each section.key through config_set_key as a
// manifest would set it).
#include <string.h>
#include <sys/stat.h>
#include "checkpoint.h"
#include "../config/config.h"
#include "../config/config_diff.h"
#include "../core/check.h"

static void resolve(const char *path, char *file, size_t n) {
    struct stat sb;
    if (stat(path, &sb) != 0) die_input_hint("checkpoints are checkpoints/<run uid>/step_<N>.h5", "%s: no such file or folder", path);
    if (!S_ISDIR(sb.st_mode)) { xsnprintf(file, n, "%s", path); return; }
    int64_t step;
    char dir[1100];
    xsnprintf(dir, sizeof dir, "%s", path);
    for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--) dir[l - 1] = 0;
    if (!checkpoint_latest_good(dir, file, n, &step, NULL, NULL))
        die_input("%s: no checkpoint there that verifies (step_<N>.h5)", path);
}

void checkpoint_open(const char *path, char *file, size_t n, CheckpointMeta *meta, Config *cfg) {
    resolve(path, file, n);
    char why[1500];
    if (!checkpoint_read_meta(file, meta, why, sizeof why)) die_input("%s: %s", file, why);
    char where[1300];
    snprintf(where, sizeof where, "%.1200s (its attribute config)", file);
    config_from_json(cfg, meta->config_json, where);
    config_finalize(cfg);
}
