// rng.h — deterministic, layout-independent random numbers.
//
// Every parameter is initialised from a seed derived from (base seed, parameter name),
// and element i of the FULL (unsharded) tensor is a pure function of (seed, i).
// So a tensor/pipeline-parallel rank that draws only its slice gets exactly the values
// the single-process run has at those positions: "draw the full tensor, keep the slice"
// without drawing the full tensor.
#pragma once
#include <stdint.h>
#include <stddef.h>

uint64_t rng_splitmix64(uint64_t x);             // one mixing step (bijective hash)
uint64_t rng_fnv1a64(const char *s);              // string hash
uint64_t rng_seed_for_name(uint64_t base_seed, const char *name);
// Standard normal for element `index` of the stream `seed` (counter-based Box-Muller).
float rng_normal_at(uint64_t seed, uint64_t index);
// Uniform [0,1) double for element `index` of the stream `seed`.
double rng_uniform_at(uint64_t seed, uint64_t index);
// Fill out[0..n) with std * rng_normal_at(seed, first + i).
void rng_fill_normal(float *out, size_t n, uint64_t seed, uint64_t first, float std);

// A small sequential generator for things that are not layout-sensitive (tests, synthetic data).
typedef struct { uint64_t state; } Rng;
static inline uint64_t rng_next(Rng *r) { r->state += 0x9E3779B97F4A7C15ull; return rng_splitmix64(r->state); }
static inline float rng_uniform(Rng *r) { return (float)((rng_next(r) >> 40) * (1.0 / 16777216.0)); }
