/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_requant bench: operand triples (x, multiplier, shift) with the int8 that
 * ntpu_requantize(x, multiplier, shift, 0) gives. Covers every shift from below 0 to above 31 (as
 * int32 lanes carry them), the saturating product, ties at both rounding steps, the clamp edges
 * and random operands.
 *
 * Writes OUTDIR/vectors.hex (one line per triple: x, multiplier, shift as 8 hex digits each, then
 * y as 2) and OUTDIR/count.hex. Usage: gen OUTDIR [SEED] */
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

static FILE *out;
static unsigned count;

/* The shift lane is an int32; the device clamps it to 0..31 as ntpu_requantize does. */
static void emit(uint32_t x, uint32_t m, uint32_t shift)
{
    int32_t s = (int32_t)shift;
    int sh = s < 0 ? -1 : s > 40 ? 40 : (int)s; /* ntpu_requantize clamps any int */
    int8_t y = ntpu_requantize((int32_t)x, (int32_t)m, sh, 0);
    fprintf(out, "%08X%08X%08X%02X\n", x, m, shift, (unsigned)(uint8_t)y);
    count++;
}

static const uint32_t xs[] = {
    0x00000000, 0x00000001, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x80000001, 0x7FFFFFFE,
    0x00000002, 0xFFFFFFFE, 0x00000003, 0xFFFFFFFD, 0x0000007F, 0xFFFFFF80, 0x00000080,
    0xFFFFFF7F, 0x40000000, 0xC0000000, 0x00010000, 0xFFFF0000, 0x12345678, 0xEDCBA988,
};
static const uint32_t ms[] = {
    0x80000000, 0x7FFFFFFF, 0x40000000, 0x40000001, 0x00000000, 0x00000001,
    0xFFFFFFFF, 0x80000001, 0x55555555, 0x6487ED51, 0xC0000000, 0x20000000,
};

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x72657175616E7400ull))
        return 2;
    out = gen_open_vectors(argv[1]);
    if (!out)
        return 1;

    /* Every special x and multiplier at every shift from -3 to 35, and at the int32 extremes. */
    static const uint32_t far_shifts[] = {0x80000000u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x00000040u,
                                          0x00000020u, 0x40000000u, 0x00000100u, 0xFFFFFFE0u};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
            for (int s = -3; s <= 35; s++)
                emit(xs[i], ms[j], (uint32_t)s);
            for (size_t k = 0; k < sizeof far_shifts / sizeof far_shifts[0]; k++)
                emit(xs[i], ms[j], far_shifts[k]);
        }

    /* Ties in the first rounding: M = 2^30 halves x exactly, so odd x ends in .5. */
    for (int k = 0; k < 2000; k++) {
        uint32_t x = (uint32_t)rng() | 1u;
        emit(x, 0x40000000u, rnd(34) - 1u);
    }
    /* Ties in the second rounding: x = (2k+1)*2^s with M = 2^30 gives q = (2k+1)*2^(s-1). */
    for (int s = 1; s <= 31; s++)
        for (int k = 0; k < 60; k++) {
            int64_t odd = (int64_t)(rnd(512) * 2 + 1) * (rnd(2) ? 1 : -1);
            int64_t x = odd << s;
            if (x > INT32_MAX || x < INT32_MIN)
                x = (rnd(2) ? 1 : -1) * ((int64_t)1 << s);
            if (x > INT32_MAX)
                x = -x;
            emit((uint32_t)(int32_t)x, 0x40000000u, (uint32_t)s);
            emit((uint32_t)(int32_t)x, 0x40000000u, (uint32_t)(s - 1));
        }
    /* Results around the clamp: r near +-127.5 for every shift. */
    for (int s = 0; s <= 31; s++)
        for (int k = 0; k < 40; k++) {
            int64_t target = (int64_t)(rnd(8) + 124) * (rnd(2) ? 1 : -1);
            int64_t x = target * ((int64_t)1 << s) * 2 + (int64_t)rnd(9) - 4; /* with M = 2^30 */
            if (x > INT32_MAX || x < INT32_MIN)
                continue;
            emit((uint32_t)(int32_t)x, 0x40000000u, (uint32_t)s);
        }
    /* Random: normalized multipliers with the shifts a real scale gives, then anything at all. */
    for (int k = 0; k < 30000; k++) {
        uint32_t x, m, s;
        switch (rnd(4)) {
        case 0:
            x = (uint32_t)rng();
            m = 0x40000000u | ((uint32_t)rng() & 0x3FFFFFFFu);
            s = rnd(32);
            break;
        case 1: /* small accumulators, as int8 layers produce */
            x = (uint32_t)(int32_t)((int32_t)rnd(1u << 20) - (1 << 19));
            m = 0x40000000u | ((uint32_t)rng() & 0x3FFFFFFFu);
            s = rnd(16);
            break;
        case 2:
            x = (uint32_t)rng() >> rnd(32);
            if (rnd(2))
                x = ~x + 1u;
            m = (uint32_t)rng();
            s = rnd(40) - 4u;
            break;
        default:
            x = (uint32_t)rng();
            m = (uint32_t)rng();
            s = (uint32_t)rng();
            break;
        }
        emit(x, m, s);
    }

    return gen_close_vectors(out, argv[1], count);
}
