/* SPDX-License-Identifier: Apache-2.0 */
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

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define N_RANDOM 150000u

static int is_normal(uint32_t u)
{
    return ((u >> 23) & 0xFFu) != 0 && ((u >> 23) & 0xFFu) != 0xFFu;
}

static FILE *out;
static unsigned count, bad;

static void emit(uint32_t x, uint32_t y)
{
    uint32_t p = ntpu_f32_mul(x, y);
    if (is_normal(x) && is_normal(y)) {
        uint32_t f = ntpu_f32_bits(ntpu_f32_from_bits(x) * ntpu_f32_from_bits(y));
        double d = (double)ntpu_f32_from_bits(x) * (double)ntpu_f32_from_bits(y);
        if (fabs(d) >= 0x1p-126 && f != p)
            bad++;                /* from 2^-126 up the result is the IEEE one */
        if (fabs(d) < 0x1p-126) { /* tiny: 2^-126 or zero of the sign */
            uint32_t want =
                fabs(d) >= 0x1p-126 - 0x1p-151 ? ((x ^ y) & 0x80000000u) | 0x00800000u : (x ^ y) & 0x80000000u;
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

static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000,
    0x00800001, 0x00FFFFFF, 0x01000000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FFFFFFF, 0x40000000, 0xC0000000,
    0x3F000000, 0x3F7FFFFF, 0x3FB504F3, 0x3FB504F4, 0x33800000, 0x1F800000, 0x1F7FFFFF, 0x20000000, 0x5F800000,
    0x5F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
    0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x3C23D70A, 0x3A83126F, 0x3F666666, 0x42F6E979,
};

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E7470756D756C00ull))
        return 2;

    out = gen_open_vectors(argv[1]);
    if (!out)
        return 1;

    gen_all_pairs(specials, sizeof specials / sizeof specials[0], emit);

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
        emit(fp32_make(rnd(2), ex, frac_pattern()), fp32_make(rnd(2), ey, frac_pattern()));
    }
    /* Overflow territory. */
    for (unsigned k = 0; k < 5000; k++) {
        uint32_t ex = 128 + rnd(127), ey = 254 - ex + 125 + rnd(4);
        if (ey > 254)
            ey = 254;
        emit(fp32_make(rnd(2), ex, frac_pattern()), fp32_make(rnd(2), ey, frac_pattern()));
    }
    /* Random pairs: ordinary values, structured fractions, arbitrary bit patterns. */
    for (unsigned k = 0; k < N_RANDOM; k++) {
        switch (rnd(4)) {
        case 0: emit((uint32_t)rng(), (uint32_t)rng()); break;
        case 1:
            emit(fp32_make(rnd(2), 100 + rnd(56), frac_pattern()), fp32_make(rnd(2), 100 + rnd(56), frac_pattern()));
            break;
        default:
            emit(fp32_make(rnd(2), 1 + rnd(254), (uint32_t)rng()), fp32_make(rnd(2), 1 + rnd(254), (uint32_t)rng()));
        }
    }
    if (bad) {
        fprintf(stderr, "gen: ntpu_f32_mul disagrees with the IEEE product on %u pairs\n", bad);
        return 1;
    }
    return gen_close_vectors(out, argv[1], count);
}
