// cache_hint.h — the one hint for a damaged data file (shard, tokenizer, cache entry).
// Deleting a folder is suggested only for a cache entry boost-c made (it holds the
// `prepared.ok` marker that build/prepare writes), by its absolute path, shell-quoted;
// for any other folder (`.`, a user's data folder) the hint is to rebuild the file, never
// to delete the folder around it (a hint once suggested "rm -rf .").
#pragma once
#include <stddef.h>

// Writes into hint (size n) what to do about the damaged file `path` ("tokenizer", "shard").
void data_damage_hint(char *hint, size_t n, const char *path, const char *what);
// The same for the cache entry folder `dir` itself.
void data_entry_hint(char *hint, size_t n, const char *dir);
