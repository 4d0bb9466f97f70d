/* Vectors for the ntpu_fp32_mul bench: hand-picked special cases and random pairs, each with the
 * product the golden model's ntpu_f32_mul gives. ntpu_f32_mul itself is checked here against the
 * host's float multiply wherever the result is a normal number (where the two must agree), and
 * against a direct statement of the flush rule around 2^-126.
 *
 * Writes OUTDIR/vectors.hex (one line per pair: x, y, product as 24 hex digits) and OUTDIR/count.hex.
 * Usage: gen OUTDIR [SEED] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/numerics.h"

#define N_RANDOM 150000u

static uint64_t rng_state;

static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rnd(uint32_t n) { return (uint32_t)(rng() % n); }

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int is_normal(uint32_t u) { return ((u >> 23) & 0xFFu) != 0 && ((u >> 23) & 0xFFu) != 0xFFu; }

static FILE *out;
static unsigned count, bad;

static void emit(uint32_t x, uint32_t y)
{
    uint32_t p = ntpu_f32_mul(x, y);
    if (is_normal(x) && is_normal(y)) {
        uint32_t f = bits_of(float_of(x) * float_of(y));
        double d = (double)float_of(x) * (double)float_of(y);
        if (fabs(d) >= 0x1p-126 && f != p)
            bad++; /* from 2^-126 up the result is the IEEE one */
        if (fabs(d) < 0x1p-126) { /* tiny: 2^-126 or zero of the sign */
            uint32_t want = fabs(d) >= 0x1p-126 - 0x1p-151 ? ((x ^ y) & 0x80000000u) | 0x00800000u
                                                           : (x ^ y) & 0x80000000u;
            if (p != want)
                bad++;
        }
    }
    fprintf(out, "%08X%08X%08X\n", x, y, p);
    count++;
}

static void emit4(uint32_t x, uint32_t y)
{
    emit(x, y);
    emit(y, x);
    emit(x ^ 0x80000000u, y);
    emit(x, y ^ 0x80000000u);
}

static uint32_t make(uint32_t sign, uint32_t exp, uint32_t frac)
{
    return (sign << 31) | ((exp & 0xFFu) << 23) | (frac & 0x7FFFFFu);
}

static uint32_t frac_pattern(void)
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

static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000,
    0x80800000, 0x00800001, 0x00FFFFFF, 0x01000000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FFFFFFF,
    0x40000000, 0xC0000000, 0x3F000000, 0x3F7FFFFF, 0x3FB504F3, 0x3FB504F4, 0x33800000, 0x1F800000,
    0x1F7FFFFF, 0x20000000, 0x5F800000, 0x5F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7F800000,
    0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x3C23D70A,
    0x3A83126F, 0x3F666666, 0x42F6E979,
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [SEED]\n", argv[0]);
        return 2;
    }
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x6E7470756D756C00ull;

    char path[4096];
    snprintf(path, sizeof path, "%s/vectors.hex", argv[1]);
    out = fopen(path, "w");
    if (!out) {
        perror(path);
        return 1;
    }

    size_t ns = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < ns; j++)
            emit(specials[i], specials[j]);

    emit4(0x3F800001, 0x3F800001); /* (1 + 2^-23)^2: 1 + 2^-22 + 2^-46, below the tie */
    emit4(0x3FFFFFFF, 0x3FFFFFFF); /* carry into the exponent */
    emit4(0x3FFFFFFF, 0x3F800001); /* rounds up to 4 */
    emit4(0x3F7FFFFF, 0x3F800001); /* 1 - 2^-47... below 1 */
    emit4(0x1F800000, 0x1F800000); /* 2^-64 * 2^-64 = 2^-128: flushed */
    emit4(0x1F800000, 0x20000000); /* 2^-126 exactly */
    emit4(0x00800000, 0x3F7FFFFF); /* 2^-126 (1 - 2^-24): rounds up to 2^-126 (tie, even) */
    emit4(0x00800000, 0x3F7FFFFE); /* just below: flushed */
    emit4(0x00FFFFFF, 0x3F000000); /* (2 - 2^-23) 2^-127 = 2^-126 - 2^-150, a 24-bit value: flushed */
    emit4(0x3F000001, 0x00FFFFFE); /* 2^-126 (1 - 2^-46): rounds up to 2^-126 */
    emit4(0x3F000001, 0x00FFFFFD); /* further below: flushed */
    emit4(0x7F7FFFFF, 0x3F800001); /* overflow by rounding */
    emit4(0x7F7FFFFF, 0x3F7FFFFF); /* stays finite */
    emit4(0x5F800000, 0x5F800000); /* 2^128: Inf */
    emit4(0x5F7FFFFF, 0x5F800000); /* just finite */

    /* Around the bottom of the range: products near 2^-126. */
    for (unsigned k = 0; k < 20000; k++) {
        uint32_t ex = 1 + rnd(126), ey = 126 - ex + rnd(3);
        if (ey < 1)
            ey = 1;
        emit(make(rnd(2), ex, frac_pattern()), make(rnd(2), ey, frac_pattern()));
    }
    /* Overflow territory. */
    for (unsigned k = 0; k < 5000; k++) {
        uint32_t ex = 128 + rnd(127), ey = 254 - ex + 125 + rnd(4);
        if (ey > 254)
            ey = 254;
        emit(make(rnd(2), ex, frac_pattern()), make(rnd(2), ey, frac_pattern()));
    }
    /* Random pairs: ordinary values, structured fractions, arbitrary bit patterns. */
    for (unsigned k = 0; k < N_RANDOM; k++) {
        switch (rnd(4)) {
        case 0: emit((uint32_t)rng(), (uint32_t)rng()); break;
        case 1: emit(make(rnd(2), 100 + rnd(56), frac_pattern()), make(rnd(2), 100 + rnd(56), frac_pattern())); break;
        default: emit(make(rnd(2), 1 + rnd(254), (uint32_t)rng()), make(rnd(2), 1 + rnd(254), (uint32_t)rng()));
        }
    }
    if (bad) {
        fprintf(stderr, "gen: ntpu_f32_mul disagrees with the IEEE product on %u pairs\n", bad);
        return 1;
    }
    if (fclose(out) != 0) {
        perror(path);
        return 1;
    }
    snprintf(path, sizeof path, "%s/count.hex", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%08X\n", count) < 0 || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    printf("gen: %u vectors\n", count);
    return 0;
}
