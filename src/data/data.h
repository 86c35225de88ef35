// data.h — corpus preparation, byte-level BPE tokenizer, token shards and the loader.
//
// Everything a user points `data.dataset` at is turned (once, cached) into:
//   <cache_dir>/<key>/tokenizer.bin   the trained BPE (docs/data-format.md)
//   <cache_dir>/<key>/train.tok       token shard (header + tokens)
//   <cache_dir>/<key>/val.tok         token shard, the held-out tail of the corpus
// where <key> is derived from (dataset, vocab size, val fraction, content hash of the
// raw corpus), so any change of inputs rebuilds and nothing stale is reused.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../config/config.h"

// ---- byte-level BPE --------------------------------------------------------------
// Ids 0..255 are the raw bytes; id 256+i is merge i (left, right) -> concatenation.
// Text is pre-split into chunks (a word with its leading space, a run of digits,
// punctuation, whitespace) and merges never cross chunk boundaries. Any byte string
// round-trips exactly: decode(encode(s)) == s.
typedef struct {
    int vocab_size;          // 256 + n_merges
    int n_merges;
    int32_t (*merges)[2];    // [n_merges][2] pair merged into id 256+i (priority = i)
    uint8_t **token_bytes;   // [vocab_size] bytes of each token
    int *token_len;          // [vocab_size]
    void *encode_index;      // private lookup for encoding
} Tokenizer;

// Train on text until vocab_size tokens (stops early, with a message on stderr, if
// the corpus has no pair left to merge). Shows progress on stderr for long runs when
// `progress` is non-zero.
void tokenizer_train(Tokenizer *t, const uint8_t *text, size_t n, int vocab_size, int progress);
void tokenizer_save(const Tokenizer *t, const char *path);
// Validates magic/version; any problem: error naming the file + a hint to rebuild, exit 2.
void tokenizer_load(Tokenizer *t, const char *path);
// The same from the bytes of a tokenizer file held in memory (a checkpoint's embedded copy);
// `where` names them in messages ("step_40.h5: the embedded tokenizer").
void tokenizer_load_bytes(Tokenizer *t, const uint8_t *bytes, size_t n, const char *where);
void tokenizer_free(Tokenizer *t);
// Returns malloc'd ids, *n_out set.
int32_t *tokenizer_encode(const Tokenizer *t, const uint8_t *text, size_t n, size_t *n_out);
// Returns malloc'd bytes (not NUL-terminated), *n_out set.
uint8_t *tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, size_t *n_out);

// Pre-tokenizer: end (exclusive) of the chunk that starts at text[i] (i < n). Chunks:
// [' ']letters (letters = A-Z a-z and every byte >= 0x80, so UTF-8 words stay whole),
// digit runs, [' ']punctuation runs (anything else, control bytes and NUL included),
// whitespace runs (a final ' ' before a word/punctuation is left to prefix it). No
// chunk is longer than BPE_MAX_CHUNK bytes, so no token is either.
#define BPE_MAX_CHUNK 256
size_t bpe_chunk_end(const uint8_t *text, size_t n, size_t i);
// Vocabulary size from a tokenizer file's header, fully validated like tokenizer_load.
int tokenizer_file_vocab(const char *path);
// Header only, never exits: 1 and *vocab when path is a regular file whose header is valid
// and whose length matches it; else 0 and why. (Cache checks: a bad entry is rebuilt.)
int tokenizer_peek(const char *path, int *vocab, char *why, size_t n);
// Largest vocabulary of a tokenizer or a shard (tokenizer files are then at most
// 20 + 8 * 2^24 bytes: the limit tokenizer_load reads).
#define MAX_TOKENIZER_VOCAB (1 << 24)
// Fast 64-bit content hash (not cryptographic); used for cache keys.
uint64_t data_hash_bytes(const void *p, size_t n, uint64_t seed);

// ---- token shards ------------------------------------------------------------------
// File: 64-byte little-endian header then tokens.
//   magic "BOOSTTOK" | u32 version (1) | u32 vocab_size | u64 n_tokens |
//   u32 token_bytes (2 or 4) | u32 reserved | u64 header_bytes (64) | zero pad to 64
// Tokens are uint16 when vocab_size <= 65536, else uint32. Offsets are 64-bit.
typedef struct {
    char path[1024];
    int vocab_size;
    uint64_t n_tokens;
    int token_bytes;
    const uint8_t *tokens;   // mmap'd token area
    void *map; size_t map_len;
} TokenShard;

void shard_write(const char *path, const int32_t *tokens, uint64_t n, int vocab_size);
// Validates magic, version, token width, file size against n_tokens, every token < vocab
// (sampled check is not enough: all are checked once). Errors name the file, say what
// was expected, hint how to rebuild (delete the cache dir / build/prepare), exit 2.
// A shard must be a regular file of at most SHARD_MAX_BYTES; a FIFO or device is refused
// before anything is read.
void shard_open(TokenShard *s, const char *path);
// Header only, never exits: 1 with vocab and token count when path is a regular file whose
// header is valid and whose size matches it; else 0 and why.
int shard_peek(const char *path, int *vocab, uint64_t *n_tokens, char *why, size_t n);
#define SHARD_MAX_BYTES (1ULL << 40)
void shard_close(TokenShard *s);
static inline int32_t shard_token(const TokenShard *s, uint64_t i) {
    if (s->token_bytes == 2) return ((const uint16_t *)s->tokens)[i];
    return (int32_t)((const uint32_t *)s->tokens)[i];
}

// ---- datasets ------------------------------------------------------------------------
typedef struct {
    char dir[1024];
    char tokenizer_path[1100];
    char train_path[1100];
    char val_path[1100];
    int vocab_size;          // tokenizer vocabulary actually trained (<= requested)
} PreparedData;

// Make sure the dataset is prepared for `vocab_size` (train the tokenizer, encode,
// split, write shards) unless an up-to-date cache exists. Prints what it does.
// Unknown dataset names, unreadable files, missing `bible` command, no network for
// downloads: clear error, exit 2.
void dataset_prepare(const DataConfig *dc, int vocab_size, uint64_t seed, PreparedData *out);
// quiet = 1: dataset_prepare prints no progress lines (the ranks other than 0 of a run).
void dataset_set_quiet(int quiet);

// ---- loader --------------------------------------------------------------------------
// Training samples are stateless: sample k (a global index, the same whatever the
// process layout) is the window starting at offset hash(seed, k) mod (n_tokens - T).
// So the loader's whole "position" is the number of samples consumed; resume and
// data-parallel splitting are arithmetic. Validation windows are sequential and
// non-overlapping: window j starts at j*T (wrapping).
typedef struct {
    TokenShard train, val;
    uint64_t seed;
    int T;
} DataLoader;

// Opens both shards; dies (exit 2) if their vocab differs from the tokenizer's (or
// from p->vocab_size when there is no tokenizer, i.e. synthetic data) or exceeds
// model_vocab, or the train shard is shorter than T+1 tokens, or the val shard is
// non-empty but shorter than T+1 tokens (an empty val shard = val_fraction 0: no
// validation; loader_val_batch then dies, check loader_has_val first).
void loader_open(DataLoader *l, const PreparedData *p, int T, int model_vocab, uint64_t seed);
void loader_close(DataLoader *l);
// inputs/targets [B,T] for global training samples first_sample .. first_sample+B-1.
void loader_train_batch(const DataLoader *l, uint64_t first_sample, int B, int32_t *inputs, int32_t *targets);
// inputs/targets [B,T] for validation windows first_window .. first_window+B-1.
void loader_val_batch(const DataLoader *l, uint64_t first_window, int B, int32_t *inputs, int32_t *targets);
// Start of training sample k: rng_splitmix64(rng_splitmix64(seed) ^ rng_splitmix64(k)) mod (n_tokens - T).
uint64_t loader_sample_offset(uint64_t seed, uint64_t k, uint64_t n_tokens, int T);
// Number of distinct validation windows ((n_val - 1) / T; 0 when there is no val shard).
uint64_t loader_val_windows(const DataLoader *l);
static inline int loader_has_val(const DataLoader *l) { return loader_val_windows(l) > 0; }
