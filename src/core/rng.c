#include "rng.h"
#include <math.h>

uint64_t rng_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t rng_fnv1a64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ull; }
    return h;
}

uint64_t rng_seed_for_name(uint64_t base_seed, const char *name) {
    return rng_splitmix64(rng_splitmix64(base_seed) ^ rng_fnv1a64(name));
}

double rng_uniform_at(uint64_t seed, uint64_t index) {
    uint64_t h = rng_splitmix64(seed ^ rng_splitmix64(index));
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

float rng_normal_at(uint64_t seed, uint64_t index) {
    // Two independent 53-bit uniforms from two hashes of the counter; u1 in (0,1].
    uint64_t h1 = rng_splitmix64(seed ^ rng_splitmix64(2 * index));
    uint64_t h2 = rng_splitmix64(seed ^ rng_splitmix64(2 * index + 1));
    double u1 = ((double)(h1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(h2 >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void rng_fill_normal(float *out, size_t n, uint64_t seed, uint64_t first, float std) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = std * rng_normal_at(seed, first + i);
}
