/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_fp32_sqrt bench: hand-picked special values, every exponent with structured
 * fractions, squares and their neighbours, and random patterns, each with the root the golden
 * model's ntpu_f32_sqrt gives. ntpu_f32_sqrt itself is checked here against sqrtf for every normal
 * positive operand (where the two must agree).
 *
 * Writes OUTDIR/vectors.hex (one line per operand: x, 0, root as 24 hex digits) and OUTDIR/count.hex.
 * Usage: gen OUTDIR [SEED] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

static FILE *out;
static unsigned count, bad;

static void emit(uint32_t x)
{
    uint32_t r = ntpu_f32_sqrt(x);
    float f = ntpu_f32_from_bits(x);
    if (isnormal(f) && f > 0 && ntpu_f32_bits(sqrtf(f)) != r)
        bad++;
    fprintf(out, "%08X%08X%08X\n", x, 0u, r);
    count++;
}

static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x00800001,
    0x00FFFFFF, 0x01000000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FFFFFFF, 0x40000000, 0x40800000,
    0x3F000000, 0x3F7FFFFF, 0x3FB504F3, 0x1F800000, 0x5F800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000,
    0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0x3C23D70A, 0x322BCC77,
};

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E74707573717200ull))
        return 2;
    out = gen_open_vectors(argv[1]);
    if (!out)
        return 1;
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        emit(specials[i]);
    for (uint32_t e = 0; e < 256; e++)
        for (unsigned k = 0; k < 40; k++)
            emit(fp32_make(k < 4 ? 0 : rnd(8) == 0, e, frac_pattern()));
    /* Exact squares and their neighbours: remainders of zero and one ulp. */
    for (unsigned k = 0; k < 8000; k++) {
        float s = ntpu_f32_from_bits(fp32_make(0, 64 + rnd(126), (uint32_t)rng() & 0x7FF000u));
        uint32_t sq = ntpu_f32_bits(s * s);
        emit(sq);
        emit(sq + 1);
        emit(sq - 1);
    }
    for (unsigned k = 0; k < 30000; k++)
        emit(rnd(3) ? fp32_make(0, 1 + rnd(254), (uint32_t)rng()) : (uint32_t)rng());
    if (bad) {
        fprintf(stderr, "gen: ntpu_f32_sqrt disagrees with sqrtf on %u operands\n", bad);
        return 1;
    }
    return gen_close_vectors(out, argv[1], count);
}
