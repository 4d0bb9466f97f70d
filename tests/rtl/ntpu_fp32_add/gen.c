/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_fp32_add bench: hand-picked special cases and random pairs, each with the
 * sum the device must produce. The expected sum is the fp32 add inside ntpu_mac_bf16, restated
 * below for arbitrary fp32 operands and checked against ntpu_mac_bf16 itself on every pair whose
 * second operand is a bf16 product.
 *
 * Writes OUTDIR/vectors.hex (one line per pair: x, y, sum as 24 hex digits) and OUTDIR/count.hex.
 * Usage: gen OUTDIR [SEED] */
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define N_RANDOM 150000u

static uint32_t flush(uint32_t u)
{
    return (u & 0x7F800000u) == 0 ? (u & 0x80000000u) : u;
}

static int is_nan(uint32_t u)
{
    return (u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu);
}

/* The sum step of ntpu_mac_bf16 (sim/ref/numerics.c) for any two fp32 operands. */
static uint32_t ref_add(uint32_t x, uint32_t y)
{
    uint32_t r = flush(ntpu_f32_bits(ntpu_f32_from_bits(flush(x)) + ntpu_f32_from_bits(flush(y))));
    return is_nan(r) ? NTPU_F32_CANONICAL_NAN : r;
}

static FILE *out;
static unsigned count;

static void emit(uint32_t x, uint32_t y)
{
    fprintf(out, "%08X%08X%08X\n", x, y, ref_add(x, y));
    count++;
}

/* Both orders and both sign combinations of one pair. */
static void emit4(uint32_t x, uint32_t y)
{
    emit(x, y);
    emit(y, x);
    emit(x ^ 0x80000000u, y ^ 0x80000000u);
    emit(y ^ 0x80000000u, x ^ 0x80000000u);
}

/* An exponent near e, kept inside 1..254 (normal). */
static uint32_t exp_near(uint32_t e, int spread)
{
    int v = (int)e + (int)rnd(2u * (uint32_t)spread + 1u) - spread;
    if (v < 1)
        v = 1;
    if (v > 254)
        v = 254;
    return (uint32_t)v;
}

static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000,
    0x80800000, 0x00800001, 0x80800001, 0x00FFFFFF, 0x01000000, 0x81000000, 0x01800000, 0x3F800000,
    0xBF800000, 0x3F800001, 0xBF800001, 0x3FFFFFFF, 0x40000000, 0xC0000000, 0x3F000000, 0x33800000,
    0xB3800000, 0x33000000, 0x33800001, 0x34000000, 0x4B800000, 0xCB7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF,
    0x7F7FFFFE, 0x7F000000, 0x73000000, 0x72FFFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
    0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x7FFFFFFF, 0x0C000000, 0x8C000000, 0x42F6E979,
};

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E74707561646400ull))
        return 2;

    out = gen_open_vectors(argv[1]);
    if (!out)
        return 1;

    /* Every pair of special values. */
    gen_all_pairs(specials, sizeof specials / sizeof specials[0], emit);

    /* Hand-picked: ties both ways, carries into the exponent, overflow, around 2^-126. */
    emit4(0x3F800000, 0x33800000); /* 1 + 2^-24: tie, stays even at 1 */
    emit4(0x3F800001, 0x33800000); /* tie, odd: rounds up to ...02 */
    emit4(0x3F800000, 0x33800001); /* just above the tie: up */
    emit4(0x3F800001, 0x337FFFFF); /* just below the tie: down */
    emit4(0x40000000, 0xB3000000); /* 2 - 2^-25: tie between 2 - 2^-24 (odd) and 2: 2 */
    emit4(0x40000000, 0xB3800000); /* 2 - 2^-24: exact */
    emit4(0x3FFFFFFF, 0x33800000); /* carry out of the significand into the exponent */
    emit4(0x3FFFFFFF, 0x34000000); /* above the tie: carry */
    emit4(0x7F7FFFFF, 0x7F7FFFFF); /* overflow */
    emit4(0x7F7FFFFF, 0x73000000); /* max + half an ulp: tie, odd: Inf */
    emit4(0x7F7FFFFF, 0x72FFFFFF); /* just below: max */
    emit4(0x7F7FFFFE, 0x73000000); /* tie, even: stays */
    emit4(0x00800000, 0x80800000); /* exact cancellation at the bottom: +0 */
    emit4(0x01000000, 0x80800001); /* 2^-126 - 2^-149: subnormal, flushed */
    emit4(0x00800001, 0x80800000); /* 2^-149: flushed */
    emit4(0x01000001, 0x80800000); /* 2^-126 + 2^-148: normal */
    emit4(0x01000000, 0x80800000); /* exactly 2^-126 */
    emit4(0x00C00000, 0x80400000); /* subnormal operand reads as zero */
    emit4(0x00FFFFFF, 0x00800001); /* sum of two tiny normals: normal */
    emit4(0x3F800000, 0xBF7FFFFF); /* 1 - (1 - 2^-24): long cancellation */
    emit4(0x4B800000, 0xCB7FFFFF); /* 2^24 - (2^24 - 1) */
    emit4(0x3F800000, 0x0C000000); /* far apart: only sticky */
    emit4(0x3F800001, 0xB3800000);
    emit4(0x3F800000, 0xB3800001); /* subtraction below a tie */
    emit4(0x3F800000, 0xB3400000); /* 1 - 0.75 ulp */

    /* Results just above and below 2^-126: operands with small exponents, nearly cancelling. */
    for (unsigned k = 0; k < 4000; k++) {
        uint32_t ex = 1 + rnd(4), fx = (uint32_t)rng() & 0x7FFFFFu;
        uint32_t ey = exp_near(ex, 1), fy = rnd(4) ? fx ^ (uint32_t)(rng() & 0xFFu) : (uint32_t)rng();
        emit(fp32_make(rnd(2), ex, fx), fp32_make(rnd(2), ey, fy));
    }
    /* Overflow territory. */
    for (unsigned k = 0; k < 2000; k++) {
        uint32_t ex = 250 + rnd(5), ey = exp_near(ex, 25);
        emit(fp32_make(rnd(2), ex, frac_pattern()), fp32_make(rnd(2), ey, frac_pattern()));
    }

    /* Random pairs, mostly with close exponents (where alignment, cancellation and rounding
     * interact), some far apart, some arbitrary bit patterns. */
    for (unsigned k = 0; k < N_RANDOM; k++) {
        uint32_t x, y, ex = 1 + rnd(254);
        switch (rnd(10)) {
        case 0:
            x = (uint32_t)rng();
            y = (uint32_t)rng();
            break;
        case 1:
        case 2:
        case 3:
            x = fp32_make(rnd(2), ex, (uint32_t)rng());
            y = fp32_make(rnd(2), exp_near(ex, 3), (uint32_t)rng());
            break;
        case 4:
        case 5:
            x = fp32_make(rnd(2), ex, (uint32_t)rng());
            y = fp32_make(rnd(2), exp_near(ex, 30), (uint32_t)rng());
            break;
        default:
            x = fp32_make(rnd(2), ex, frac_pattern());
            y = fp32_make(rnd(2), exp_near(ex, 26), frac_pattern());
            break;
        }
        emit(x, y);
    }

    /* Accumulator plus a bf16 product, with the expectation taken from ntpu_mac_bf16 itself:
     * ties this bench to the golden model, and checks ref_add above against it. */
    unsigned bad = 0;
    for (unsigned k = 0; k < 20000; k++) {
        uint16_t a = (uint16_t)rng(), b = (uint16_t)rng();
        uint32_t ea = (a >> 7) & 0xFF, eb = (b >> 7) & 0xFF;
        if (rnd(4)) { /* keep most products in range */
            ea = exp_near(127, 40);
            eb = exp_near(127, 40);
        }
        a = (uint16_t)((a & 0x807Fu) | (ea << 7));
        b = (uint16_t)((b & 0x807Fu) | (eb << 7));
        uint32_t p = ntpu_mac_bf16(0x80000000u, a, b); /* -0 + a*b = the flushed product, NaN canonical */
        uint32_t pe = (p >> 23) & 0xFF;
        uint32_t acc =
            rnd(8) ? fp32_make(rnd(2), pe == 0 ? 1 + rnd(254) : exp_near(pe, 25), frac_pattern()) : (uint32_t)rng();
        uint32_t want = ntpu_mac_bf16(acc, a, b);
        if (ref_add(acc, p) != want && !is_nan(p))
            bad++;
        if (!is_nan(p)) {
            fprintf(out, "%08X%08X%08X\n", acc, p, want);
            count++;
        }
    }
    if (bad) {
        fprintf(stderr, "gen: ref_add disagrees with ntpu_mac_bf16 on %u pairs\n", bad);
        return 1;
    }

    return gen_close_vectors(out, argv[1], count);
}
