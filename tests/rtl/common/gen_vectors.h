/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the vector generators of the numeric benches (tests/rtl/<bench>/gen.c, included as
 * "../common/gen_vectors.h"): the seeded splitmix64 stream, the `gen OUTDIR [SEED]` command line,
 * fp32 fields, and the vectors.hex / count.hex pair that single-file benches read.
 * Everything is static inline, so a generator pays only for what it uses. */
#ifndef NTPU_GEN_VECTORS_H
#define NTPU_GEN_VECTORS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics_internal.h"

static uint64_t rng_state;

static inline uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint32_t rnd(uint32_t n)
{
    return (uint32_t)(rng() % n);
}

/* Checks that OUTDIR is given and seeds the stream from SEED, else from `seed` (each bench has its
 * own, so that benches do not draw the same numbers). 0 after the usage message. */
static inline int gen_args(int argc, char **argv, uint64_t seed)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [SEED]\n", argv[0]);
        return 0;
    }
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : seed;
    return 1;
}

static inline uint32_t fp32_make(uint32_t sign, uint32_t exp, uint32_t frac)
{
    return (sign << 31) | ((exp & 0xFFu) << 23) | (frac & 0x7FFFFFu);
}

/* A fraction with structure: runs of ones or zeros at either end make ties and carries likely. */
static inline uint32_t frac_pattern(void)
{
    switch (rnd(6)) {
    case 0: return 0;
    case 1: return 0x7FFFFFu;
    case 2: return (uint32_t)rng() & (0x7FFFFFu << rnd(23)) & 0x7FFFFFu;
    case 3: return ((uint32_t)rng() | (0x7FFFFFu >> rnd(23))) & 0x7FFFFFu;
    case 4: return 1u << rnd(23);
    default: return (uint32_t)rng() & 0x7FFFFFu;
    }
}

/* Every ordered pair of v[0 .. n-1], row by row. */
static inline void gen_all_pairs(const uint32_t *v, size_t n, void (*emit)(uint32_t, uint32_t))
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            emit(v[i], v[j]);
}

/* OUTDIR/vectors.hex, opened for writing; NULL after a message. */
static inline FILE *gen_open_vectors(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vectors.hex", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

/* Closes vectors.hex and writes OUTDIR/count.hex holding `count`; 1 after a message. */
static inline int gen_close_vectors(FILE *f, const char *dir, unsigned count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vectors.hex", dir);
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    snprintf(path, sizeof path, "%s/count.hex", dir);
    FILE *c = fopen(path, "w");
    if (!c || fprintf(c, "%08X\n", count) < 0 || fclose(c) != 0) {
        perror(path);
        return 1;
    }
    printf("gen: %u vectors\n", count);
    return 0;
}

#endif
