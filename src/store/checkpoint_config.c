// checkpoint_config.c — what a tool needs to use a checkpoint alone: the file a user names
// (a file, or a run folder's newest good one), and the configuration it was trained with,
// from its JSON (config_to_json), each section.key through config_set_key as a manifest
// would set it. The JSON is parsed by SQLite's json_each (the store links SQLite anyway).
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include "checkpoint.h"
#include "../config/config.h"
#include "../core/check.h"

void checkpoint_config(Config *c, const char *json, const char *where) {
    config_defaults(c);
    Config defaults;
    config_defaults(&defaults);
    int nk; const ConfigKey *keys = config_schema(&nk);
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_open(":memory:", &h) == SQLITE_OK, "sqlite3_open(:memory:)");
    CHECK(sqlite3_prepare_v2(h, "SELECT s.key || '.' || k.key, k.type, CAST(k.atom AS TEXT) FROM json_each(?1) s, "
                                "json_each(s.value) k WHERE s.type = 'object'", -1, &st, NULL) == SQLITE_OK,
          "preparing the configuration query: %s", sqlite3_errmsg(h));
    sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
    int rc, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0), *type = (const char *)sqlite3_column_text(st, 1);
        const char *val = (const char *)sqlite3_column_text(st, 2);
        int ki = config_key_index(key);
        if (ki < 0) continue;   // a key of another engine's version: its default
        const char *text = !strcmp(type, "true") ? "true" : !strcmp(type, "false") ? "false" : val ? val : "";
        char dv[1100];
        config_format_value(&defaults, &keys[ki], dv, sizeof dv);
        if (!strcmp(dv, text)) continue;   // as the default: left unset, as the manifest left it (finalize's checks)
        char w[1200];
        snprintf(w, sizeof w, "%.900s: config %.200s", where, key);
        int is_null = !strcmp(type, "null");
        config_set_key(c, key, text, is_null, w);
        n++;
    }
    if (rc != SQLITE_DONE || (n == 0 && !strstr(json, "\"model\"")))
        die_input("%s: the checkpoint's configuration (attribute config) is not the JSON of a configuration: %s", where,
                  rc != SQLITE_DONE ? sqlite3_errmsg(h) : "no keys");
    sqlite3_finalize(st);
    sqlite3_close(h);
    config_finalize(c);
}


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
    checkpoint_config(cfg, meta->config_json, file);
}
