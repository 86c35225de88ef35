// manifest.h — experiment manifests: the engine YAML (model/data/train sections, see
// config.h) plus an experiment layer on top. docs/configuration.md describes the format.
//
//   manifest_version: 1          # schema version of this file format (this engine: 1)
//   name: ablation-rank          # must equal the file stem (experiments/ablation-rank.yaml)
//   version: 3                   # the experiment's own version (string or integer)
//   description: ...
//   extends: base/tiny.yaml      # another manifest, relative to the file or to experiments/;
//                                # deep-merged: this file's keys override the parent's
//   model: {...}  data: {...}  train: {...}
//   variants:                    # optional; without it: one variant named "default"
//     small: {model.rank_attn: 8}          # named variants: dotted or nested overrides
//     big:   {model: {rank_attn: 32}}
//   # or   variants: {grid: {model.linear: [dense, cola], train.lr: [1e-3, 3e-3]}}
//   #      -> 4 variants named "linear=dense,lr=1e-3", ... (cartesian product, first key slowest)
//
// Every error (syntax, unknown key, type, range, cycle, missing parent) prints
// "error: FILE:LINE: ..." and exits 2.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define MANIFEST_VERSION 1  // the newest manifest_version this engine reads

typedef struct {
    char name[256];   // "default", a named variant, or "k=v,k=v" for a grid point
    Config config;    // defaults <- manifest sections <- variant overrides <- --set; finalized
} ManifestVariant;

typedef struct {
    char path[1024];
    char sha256[65];  // hex digest of the file's bytes
} ManifestSource;

typedef struct {
    char path[1024];         // as given to manifest_load
    char name[256];          // `name`, or the file stem if absent
    char version[128];       // `version` as written ("" if absent)
    char description[2048];  // `description` ("" if absent; inherited through extends)
    int manifest_version;    // `manifest_version` (MANIFEST_VERSION if absent)
    char sha256[65];         // hex sha256 of this file's bytes (== sources[0].sha256)
    int n_sources;           // this file, then the files it extends, nearest first
    ManifestSource *sources;
    int n_variants;          // >= 1
    ManifestVariant *variants;
} Manifest;

// Load, resolve `extends`, validate, expand variants, finalize each variant's Config.
Manifest *manifest_load(const char *path);
// Same, with "key=value" overrides (--set) applied to every variant after its own
// overrides and before finalize.
Manifest *manifest_load_with(const char *path, const char *const *overrides, int n_overrides);
// The variant called `name`; name NULL or "" = the only variant (dies, listing the
// names, if there are several or none matches).
const ManifestVariant *manifest_variant(const Manifest *m, const char *name);
void manifest_free(Manifest *m);

// ---- SHA-256 (FIPS 180-4), used for manifest hashes; usable for any bytes --------
typedef struct {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t buf[64];
    size_t buf_len;
} Sha256;
void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t n);
void sha256_final(Sha256 *s, uint8_t out[32]);
void sha256(const void *data, size_t n, uint8_t out[32]);
void sha256_hex(const void *data, size_t n, char out[65]);  // lowercase hex + NUL
// Hash of a file's bytes; returns 0, or -1 with errno set if it cannot be read.
int sha256_file_hex(const char *path, char out[65]);
