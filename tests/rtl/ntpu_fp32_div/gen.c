/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_fp32_div bench: every pair of hand-picked special values, quotients at the
 * flush edge and at overflow, and random pairs, each with the quotient the golden model's
 * ntpu_f32_div gives. ntpu_f32_div itself is checked here against the host's float division
 * wherever the exact quotient is at least 2^-126 (where the two must agree).
 *
 * Writes OUTDIR/vectors.hex (one line per pair: x, y, quotient as 24 hex digits) and OUTDIR/count.hex.
 * Usage: gen OUTDIR [SEED] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define N_RANDOM 40000u

static int is_normal(uint32_t u)
{
    return ((u >> 23) & 0xFFu) != 0 && ((u >> 23) & 0xFFu) != 0xFFu;
}

static FILE *out;
static unsigned count, bad;

static void emit(uint32_t x, uint32_t y)
{
    uint32_t q = ntpu_f32_div(x, y);
    if (is_normal(x) && is_normal(y)) {
        float f = ntpu_f32_from_bits(x) / ntpu_f32_from_bits(y);
        double d = (double)ntpu_f32_from_bits(x) / (double)ntpu_f32_from_bits(y);
        if (fabs(d) >= 0x1p-126 && ntpu_f32_bits(f) != q)
            bad++; /* from 2^-126 up the result is the IEEE one (below, IEEE rounds to a subnormal) */
    }
    fprintf(out, "%08X%08X%08X\n", x, y, q);
    count++;
}

static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x00800001, 0x00FFFFFF,
    0x01000000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FFFFFFF, 0x40000000, 0xC0400000, 0x3F000000, 0x3F7FFFFF,
    0x3FB504F3, 0x1F800000, 0x5F800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7F800000, 0xFF800000, 0x7FC00000,
    0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0x3C23D70A, 0x3A83126F, 0x3F666666, 0x322BCC77,
};

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E74707564697600ull))
        return 2;
    out = gen_open_vectors(argv[1]);
    if (!out)
        return 1;

    gen_all_pairs(specials, sizeof specials / sizeof specials[0], emit);
    emit(0x3F800000, 0x40400000); /* 1/3 */
    emit(0x00800000, 0x3F800001); /* 2^-126 / (1 + 2^-23): below 2^-126, flushed */
    emit(0x00800001, 0x3F800001); /* exactly 2^-126 */
    emit(0x00800000, 0x3F7FFFFF); /* just above 2^-126 */
    emit(0x7F7FFFFF, 0x3F7FFFFF); /* overflow */

    /* Quotients near 2^-126: biased exponents 0, 1, 2 before rounding. */
    for (unsigned k = 0; k < 8000; k++) {
        uint32_t ey = 127 + rnd(100), ex = ey - 127 + rnd(3);
        if (ex < 1)
            ex = 1;
        emit(fp32_make(rnd(2), ex, frac_pattern()), fp32_make(rnd(2), ey, frac_pattern()));
    }
    /* Overflow territory. */
    for (unsigned k = 0; k < 3000; k++) {
        uint32_t ey = 1 + rnd(120), ex = ey + 126 + rnd(3);
        if (ex > 254)
            ex = 254;
        emit(fp32_make(rnd(2), ex, frac_pattern()), fp32_make(rnd(2), ey, frac_pattern()));
    }
    /* Near each other: quotients near 1, where the dividend is scaled and ties are likely. */
    for (unsigned k = 0; k < 5000; k++) {
        uint32_t e = 1 + rnd(254);
        emit(fp32_make(rnd(2), e, frac_pattern()), fp32_make(rnd(2), e, frac_pattern()));
    }
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
        fprintf(stderr, "gen: ntpu_f32_div disagrees with the IEEE quotient on %u pairs\n", bad);
        return 1;
    }
    return gen_close_vectors(out, argv[1], count);
}
