/* SPDX-License-Identifier: Apache-2.0 */
/* The device arithmetic of docs/numerics.md, checked two ways: hand-written bit
 * patterns for every corner the spec names, and random sweeps against
 * references built by a different method (wider arithmetic, exact distances,
 * roundl) rather than by calling the function under test. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ntpu/numerics.h"
#include "ntpu/optim.h"
#include "numerics_internal.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) /* xorshift64*: reproducible */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

/* ---------------------------------------------------------------- fp32 -> bf16 */

#define BF(f32, want)                                                                                         \
    cr_expect_eq(ntpu_bf16_from_f32_bits(f32), (want), "bf16(0x%08x) = 0x%04x, want 0x%04x", (unsigned)(f32), \
                 ntpu_bf16_from_f32_bits(f32), (unsigned)(want))

Test(numerics, bf16_round_ties_to_even)
{
    BF(0x3F808000u, 0x3F80u); /* halfway, even below: down */
    BF(0x3F818000u, 0x3F82u); /* halfway, odd below: up */
    BF(0x3F808001u, 0x3F81u); /* just above half */
    BF(0x3F807FFFu, 0x3F80u); /* just below half */
    BF(0xBF808000u, 0xBF80u); /* same, negative: magnitude rounds alike */
    BF(0xBF818000u, 0xBF82u);
    BF(0xBF808001u, 0xBF81u);
    BF(0x3F80FFFFu, 0x3F81u);
    BF(0x3F800000u, 0x3F80u); /* exact */
}

Test(numerics, bf16_round_carry_into_exponent)
{
    BF(0x3FFF8000u, 0x4000u); /* 1.99609375 + tie -> 2.0 */
    BF(0x3FFFFFFFu, 0x4000u);
    BF(0xBFFFC000u, 0xC000u);
    BF(0x007FFFFFu + 0x00800000u, 0x0100u); /* fraction all ones at the smallest exponent */
}

Test(numerics, bf16_overflow_and_max_finite)
{
    BF(0x7F7FFFFFu, 0x7F80u); /* FLT_MAX rounds past the largest bf16 */
    BF(0x7F7F8000u, 0x7F80u); /* tie with odd 0x7F7F: up, to Inf */
    BF(0xFF7FFFFFu, 0xFF80u);
    BF(0x7F7F7FFFu, 0x7F7Fu); /* below the tie: largest finite */
    BF(0x7F7F0000u, 0x7F7Fu);
    BF(0xFF7F0000u, 0xFF7Fu);
    cr_expect_eq(ntpu_bf16_from_f32(3.3895313892515355e38f), 0x7F7Fu);
    BF(0x7F800000u, 0x7F80u);
    BF(0xFF800000u, 0xFF80u);
}

Test(numerics, bf16_nan_stays_quiet_nan_with_sign)
{
    BF(0x7FC00000u, 0x7FC0u);
    BF(0xFFC00000u, 0xFFC0u);
    BF(0x7F800001u, 0x7FC0u); /* payload only in dropped bits: quiet bit keeps it a NaN */
    BF(0xFF800001u, 0xFFC0u);
    BF(0x7F810000u, 0x7FC1u); /* signalling NaN with kept payload */
    BF(0xFFA00000u, 0xFFE0u);
    BF(0x7FFFFFFFu, 0x7FFFu); /* must not round up into the sign bit */
    BF(0xFFFFFFFFu, 0xFFFFu);
}

Test(numerics, bf16_signed_zero_and_subnormals)
{
    BF(0x00000000u, 0x0000u);
    BF(0x80000000u, 0x8000u);
    BF(0x007FFFFFu, 0x0000u); /* would round to 0x0080 without flushing */
    BF(0x807FFFFFu, 0x8000u);
    BF(0x00000001u, 0x0000u);
    BF(0x80400000u, 0x8000u);
    BF(0x00800000u, 0x0080u); /* smallest normal survives */
    cr_expect_eq(ntpu_bf16_from_f32(1.0f), 0x3F80u);
    cr_expect_eq(ntpu_bf16_from_f32(-2.5f), 0xC020u);
}

/* Reference rounding by exact distance: the two bf16 neighbours of x are
 * exact in double, so are their distances to x; pick the nearer, the even one
 * on a tie. A truncation at the largest finite value rounds against 2^128. */
static uint16_t bf16_by_distance(uint32_t f)
{
    uint32_t exp = (f >> 23) & 0xFF, frac = f & 0x7FFFFF;
    if (exp == 0xFF)
        return frac ? (uint16_t)((f >> 16) | 0x40) : (uint16_t)(f >> 16);
    if (exp == 0)
        return (uint16_t)((f >> 16) & 0x8000);
    double x = fabs((double)ntpu_f32_from_bits(f));
    uint16_t lo = (uint16_t)((f >> 16) & 0x7FFF);
    double vlo = (double)ntpu_f32_from_bits((uint32_t)lo << 16);
    double vhi = lo == 0x7F7F ? ldexp(1.0, 128) : (double)ntpu_f32_from_bits((uint32_t)(lo + 1) << 16);
    uint16_t mag;
    if (x - vlo < vhi - x)
        mag = lo;
    else if (x - vlo > vhi - x)
        mag = (uint16_t)(lo + 1);
    else
        mag = (lo & 1) ? (uint16_t)(lo + 1) : lo;
    return (uint16_t)(mag | ((f >> 16) & 0x8000));
}

Test(numerics, bf16_from_f32_random_against_distance)
{
    for (int k = 0; k < 2000000; k++) {
        uint32_t f = (uint32_t)rnd();
        if (k & 1) /* half the draws land on or next to a tie */
            f = (f & 0xFFFF0000u) | (0x8000u + (uint32_t)((int)(rnd() % 3) - 1));
        uint16_t want = bf16_by_distance(f), got = ntpu_bf16_from_f32_bits(f);
        if (got != want)
            cr_assert_fail("bf16(0x%08x) = 0x%04x, want 0x%04x", f, got, want);
    }
}

Test(numerics, bf16_to_f32_every_pattern)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        uint32_t exp = (b >> 7) & 0xFF, frac = b & 0x7F;
        float got = ntpu_bf16_to_f32((uint16_t)b);
        if (exp == 0xFF && frac) {
            cr_assert(isnan(got));
            cr_assert_eq(ntpu_f32_bits(got), b << 16, "NaN 0x%04x keeps its bits", b);
            continue;
        }
        double v = exp == 0xFF ? INFINITY
                   : exp == 0  ? ldexp((double)frac, -133)                   /* subnormal: 0.frac * 2^-126 */
                               : ldexp((double)(128 + frac), (int)exp - 134); /* 1.frac * 2^(e-127) */
        if (b & 0x8000)
            v = -v;
        cr_assert_eq((double)got, v, "bf16 0x%04x -> %a, want %a", b, (double)got, v);
        cr_assert_eq(signbit(got) != 0, (b & 0x8000) != 0, "sign of 0x%04x", b);
    }
}

/* ---------------------------------------------------------------- mac_bf16 */

#define MAC(acc, a, b, want)                                                                                         \
    cr_expect_eq(ntpu_mac_bf16((acc), (a), (b)), (uint32_t)(want),                                                   \
                 "mac(0x%08x, 0x%04x, 0x%04x) = 0x%08x, want 0x%08x", (unsigned)(acc), (unsigned)(a), (unsigned)(b), \
                 ntpu_mac_bf16((acc), (a), (b)), (unsigned)(want))

Test(numerics, mac_bf16_exact_products)
{
    MAC(0x00000000u, 0x3FC0u, 0x3FC0u, 0x40100000u); /* 1.5 * 1.5 = 2.25 */
    MAC(0x00000000u, 0x3FFFu, 0x3FFFu, 0x407E0100u); /* (255/128)^2 needs all 16 product bits */
    MAC(0x00000000u, 0xBFFFu, 0x3FFFu, 0xC07E0100u);
    MAC(0x3F800000u, 0x3F80u, 0x3F80u, 0x40000000u); /* 1 + 1*1 */
    MAC(0x00000000u, 0x4040u, 0xC0A0u, 0xC1700000u); /* 3 * -5 = -15 */
}

Test(numerics, mac_bf16_subnormal_inputs_read_as_zero)
{
    MAC(0x00000000u, 0x0040u, 0x7F00u, 0x00000000u); /* 2^-127 * 2^127 would be 1.0 */
    MAC(0x00000000u, 0x7F00u, 0x0040u, 0x00000000u);
    MAC(0x80000000u, 0x8040u, 0x7F00u, 0x80000000u); /* flushed to -0: -0 + -0 */
    MAC(0x3F800000u, 0x0001u, 0x7F7Fu, 0x3F800000u);
    /* acc = 2^-127 (subnormal) reads as 0: the sum is the product alone, not 2^-125 */
    MAC(0x00400000u, 0x2040u, 0x2000u, 0x00C00000u);
    MAC(0x80400000u, 0x0000u, 0x3F80u, 0x00000000u); /* -0 + +0 = +0 */
    MAC(0x80400000u, 0x8000u, 0x3F80u, 0x80000000u); /* -0 + -0 = -0: the sign survives the flush */
}

Test(numerics, mac_bf16_product_overflow_and_underflow)
{
    MAC(0xFF7FFFFFu, 0x7F00u, 0x4000u, 0x7F800000u); /* 2^128 is Inf before the add */
    MAC(0x7F7FFFFFu, 0xFF00u, 0x4000u, 0xFF800000u);
    MAC(0x00000000u, 0x7F7Fu, 0x7F7Fu, 0x7F800000u);
    MAC(0x00000000u, 0x7F00u, 0x3FFFu, 0x7F7F0000u); /* 2^127 * (2 - 2^-7) still finite */
    /* 2^-126 * 0.5 = 2^-127 is below the normal range: zero, not a subnormal */
    MAC(0x00800000u, 0x0080u, 0x3F00u, 0x00800000u);
    MAC(0x00000000u, 0x0080u, 0x3F00u, 0x00000000u);
    MAC(0x80000000u, 0x8080u, 0x3F00u, 0x80000000u); /* product keeps its sign: -0 */
    MAC(0x00000000u, 0x8080u, 0x3F00u, 0x00000000u);
    MAC(0x00000000u, 0x0080u, 0x3F80u, 0x00800000u); /* exactly 2^-126 is normal */
}

Test(numerics, mac_bf16_nan_cases_are_canonical)
{
    MAC(0x00000000u, 0x7F80u, 0x0000u, 0x7FC00000u); /* Inf * 0 */
    MAC(0x3F800000u, 0x8000u, 0xFF80u, 0x7FC00000u);
    MAC(0x00000000u, 0x7F80u, 0x0001u, 0x7FC00000u); /* Inf * subnormal(=0) */
    MAC(0xFF800000u, 0x7F80u, 0x3F80u, 0x7FC00000u); /* -Inf + Inf */
    MAC(0x7F800000u, 0xFF80u, 0x3F80u, 0x7FC00000u);
    MAC(0x00000000u, 0xFFC1u, 0x3F80u, 0x7FC00000u); /* NaN operand with sign and payload */
    MAC(0xFFFFFFFFu, 0x3F80u, 0x3F80u, 0x7FC00000u); /* NaN accumulator */
    MAC(0x7F800001u, 0x0000u, 0x0000u, 0x7FC00000u);
    MAC(0x7F800000u, 0x3F80u, 0x3F80u, 0x7F800000u); /* Inf + finite stays Inf */
    MAC(0x3F800000u, 0xFF80u, 0x3F80u, 0xFF800000u);
}

Test(numerics, mac_bf16_signed_zeros)
{
    MAC(0x3F800000u, 0xBF80u, 0x3F80u, 0x00000000u); /* 1 + (-1) = +0 */
    MAC(0xBF800000u, 0x3F80u, 0x3F80u, 0x00000000u); /* -1 + 1 = +0 */
    MAC(0x80000000u, 0x8000u, 0x3F80u, 0x80000000u); /* -0 + -0 = -0 */
    MAC(0x80000000u, 0x3F80u, 0x8000u, 0x80000000u);
    MAC(0x80000000u, 0x8000u, 0x8000u, 0x00000000u); /* -0 + (+0) = +0 */
    MAC(0x00000000u, 0x8000u, 0x3F80u, 0x00000000u);
    MAC(0x80000000u, 0xBF80u, 0xBF80u, 0x3F800000u);
}

Test(numerics, mac_bf16_flushes_subnormal_sums)
{
    MAC(0x00C00000u, 0x8080u, 0x3F80u, 0x00000000u); /* 1.5*2^-126 - 2^-126 = 2^-127: +0 */
    MAC(0x80C00000u, 0x0080u, 0x3F80u, 0x80000000u); /* negative side: -0 */
    MAC(0x00800000u, 0x8080u, 0x3F80u, 0x00000000u); /* exact cancellation: +0 */
    MAC(0x01000000u, 0x8080u, 0x3F80u, 0x00800000u); /* 2^-125 - 2^-126 = 2^-126: normal, kept */
}

Test(numerics, mac_bf16_rounding_ties_in_the_add)
{
    MAC(0x3F800000u, 0x3380u, 0x3F80u, 0x3F800000u); /* 1 + 2^-24: tie, even is 1 */
    MAC(0x3F800001u, 0x3380u, 0x3F80u, 0x3F800002u); /* odd + tie: up to even */
    MAC(0x3F800000u, 0x3300u, 0x3F80u, 0x3F800000u); /* below the tie */
    MAC(0x3F800000u, 0x33C0u, 0x3F80u, 0x3F800001u); /* above the tie */
    MAC(0xBF800001u, 0xB380u, 0x3F80u, 0xBF800002u); /* negative tie */
    MAC(0x7F7FFFFFu, 0x7300u, 0x3F80u, 0x7F800000u); /* FLT_MAX + half an ulp: tie to even overflows */
    MAC(0x7F7FFFFFu, 0x7280u, 0x3F80u, 0x7F7FFFFFu); /* a quarter ulp does not */
    MAC(0x4B000000u, 0x3F00u, 0x3F80u, 0x4B000000u); /* 2^23 + 0.5: tie to even, down */
    MAC(0x4B000001u, 0x3F00u, 0x3F80u, 0x4B000002u);
}

/* The spec computed in double: products of bf16 values are exact there, and
 * double carries more than 2*24+2 bits, so rounding a double sum of two fp32
 * values to fp32 gives the correctly rounded fp32 sum. Flushing and NaN
 * handling follow the words of docs/numerics.md. */
static double flushed(uint32_t u)
{
    if (((u >> 23) & 0xFF) == 0)
        return (u & 0x80000000u) ? -0.0 : 0.0;
    return (double)ntpu_f32_from_bits(u);
}

static uint32_t mac_bf16_by_double(uint32_t acc, uint16_t a, uint16_t b)
{
    double x = flushed(acc), p = flushed((uint32_t)a << 16) * flushed((uint32_t)b << 16);
    if (isnan(p) || isnan(x))
        return NTPU_F32_CANONICAL_NAN;
    if (isfinite(p) && fabs(p) >= ldexp(1.0, 128))
        p = copysign(INFINITY, p);
    else if (fabs(p) < ldexp(1.0, -126))
        p = copysign(0.0, p);
    double s = x + p;
    if (isnan(s))
        return NTPU_F32_CANONICAL_NAN;
    uint32_t r = ntpu_f32_bits((float)s);
    if (((r >> 23) & 0xFF) == 0)
        r &= 0x80000000u;
    return r;
}

static uint16_t rnd_bf16(void)
{
    static const uint16_t special[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8040,
                                       0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x3F80, 0xBF80};
    uint64_t r = rnd();
    switch (r % 8) {
    case 0: return special[(r >> 8) % (sizeof special / sizeof special[0])];
    case 1: /* exponents near the edges of the range */
        return (uint16_t)((r >> 8) & 0x807F) | (uint16_t)((((r >> 20) % 8) + ((r >> 30) & 1 ? 0 : 0xF6)) << 7);
    default: /* moderate magnitudes: the sums then round */
        return (uint16_t)(((r >> 8) & 0x807F) | ((0x70 + (r >> 20) % 32) << 7));
    }
}

Test(numerics, mac_bf16_random_against_double)
{
    for (int k = 0; k < 1000000; k++) {
        uint32_t acc;
        uint64_t r = rnd();
        if (r % 4 == 0)
            acc = (uint32_t)(r >> 32);
        else /* a chain-like accumulator: the last result */
            acc = ntpu_mac_bf16(0, rnd_bf16(), rnd_bf16()) ^ (uint32_t)((r >> 32) & 0xFF);
        uint16_t a = rnd_bf16(), b = rnd_bf16();
        uint32_t want = mac_bf16_by_double(acc, a, b), got = ntpu_mac_bf16(acc, a, b);
        if (got != want)
            cr_assert_fail("mac(0x%08x, 0x%04x, 0x%04x) = 0x%08x, want 0x%08x", acc, a, b, got, want);
    }
}

/* ---------------------------------------------------------------- f32_add */

#define ADD(a, b, want)                                                                                                \
    cr_expect_eq(ntpu_f32_add((a), (b)), (uint32_t)(want), "add(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", (unsigned)(a), \
                 (unsigned)(b), ntpu_f32_add((a), (b)), (unsigned)(want))

Test(numerics, f32_add_hand_cases)
{
    ADD(0x3F800000u, 0x40000000u, 0x40400000u); /* 1 + 2 = 3 */
    ADD(0x3F800000u, 0x33800000u, 0x3F800000u); /* 1 + 2^-24: tie, even is 1 */
    ADD(0x3F800001u, 0x33800000u, 0x3F800002u); /* odd + tie: up */
    ADD(0x3F800000u, 0x33800001u, 0x3F800001u); /* just above the tie */
    ADD(0xBF800001u, 0xB3800000u, 0xBF800002u);
    ADD(0x7F7FFFFFu, 0x73000000u, 0x7F800000u); /* FLT_MAX + half an ulp: Inf */
    ADD(0x7F7FFFFFu, 0x72FFFFFFu, 0x7F7FFFFFu);
    ADD(0xFF7FFFFFu, 0xF3000000u, 0xFF800000u);
    /* subnormal operands read as zero of their sign */
    ADD(0x00400000u, 0x00400000u, 0x00000000u); /* would be 2^-126, a normal */
    ADD(0x80000001u, 0x80000001u, 0x80000000u); /* -0 + -0 */
    ADD(0x80000001u, 0x00000001u, 0x00000000u);
    ADD(0x00000001u, 0x3F800000u, 0x3F800000u);
    ADD(0x007FFFFFu, 0x00800000u, 0x00800000u); /* not 2^-125 - 2^-149 */
    /* subnormal sums are flushed */
    ADD(0x00C00000u, 0x80800000u, 0x00000000u); /* 1.5*2^-126 - 2^-126 */
    ADD(0x80C00000u, 0x00800000u, 0x80000000u);
    ADD(0x01000000u, 0x80800000u, 0x00800000u); /* 2^-126 exactly: kept */
    /* signed zeros */
    ADD(0x00000000u, 0x80000000u, 0x00000000u);
    ADD(0x80000000u, 0x80000000u, 0x80000000u);
    ADD(0x3F800000u, 0xBF800000u, 0x00000000u);
    ADD(0x80000000u, 0x3F800000u, 0x3F800000u);
    /* Inf and NaN */
    ADD(0x7F800000u, 0xFF800000u, NTPU_F32_CANONICAL_NAN);
    ADD(0x7F800000u, 0x7F800000u, 0x7F800000u);
    ADD(0xFF800000u, 0x3F800000u, 0xFF800000u);
    ADD(0xFFC12345u, 0x3F800000u, NTPU_F32_CANONICAL_NAN); /* sign and payload dropped */
    ADD(0x3F800000u, 0x7F800001u, NTPU_F32_CANONICAL_NAN);
    ADD(0x7F800001u, 0xFF800000u, NTPU_F32_CANONICAL_NAN);
}

/* The spec in double: the sum of two fp32 values rounded to double and then to
 * fp32 is the correctly rounded fp32 sum (53 >= 2*24 + 2). */
static uint32_t add_by_double(uint32_t a, uint32_t b)
{
    double s = flushed(a) + flushed(b);
    if (isnan(s))
        return NTPU_F32_CANONICAL_NAN;
    uint32_t r = ntpu_f32_bits((float)s);
    if (((r >> 23) & 0xFF) == 0)
        r &= 0x80000000u;
    return r;
}

static uint32_t rnd_f32_near(uint32_t other)
{
    uint64_t r = rnd();
    switch (r % 6) {
    case 0: return (uint32_t)(r >> 32);               /* anything, NaNs and subnormals included */
    case 1: return (uint32_t)(r >> 32) & 0x80FFFFFFu; /* tiny: subnormal or near the flush edge */
    case 2: return (other & 0x7F800000u) ^ 0x80000000u ^ (uint32_t)((r >> 32) & 0x807FFFFFu); /* cancel */
    default: /* within 30 binades of the other operand: sums round */
        return (uint32_t)(((r >> 32) & 0x807FFFFFu) |
                          ((uint32_t)(((other >> 23) & 0xFF) + (r >> 8) % 61 + 226) % 256 << 23));
    }
}

Test(numerics, f32_add_random_against_double)
{
    for (int k = 0; k < 2000000; k++) {
        uint32_t a = (uint32_t)rnd();
        uint32_t b = rnd_f32_near(a);
        uint32_t want = add_by_double(a, b), got = ntpu_f32_add(a, b);
        if (got != want)
            cr_assert_fail("add(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, got, want);
        if (ntpu_f32_add(b, a) != got)
            cr_assert_fail("add(0x%08x, 0x%08x) is not commutative", a, b);
    }
}

Test(numerics, f32_add_is_the_add_of_the_mac)
{
    /* acc + x*1.0: the product is x exactly, so the MAC is the adder alone */
    for (int k = 0; k < 200000; k++) {
        uint32_t acc = (uint32_t)rnd();
        uint16_t x = rnd_bf16();
        if (k & 1)
            acc = rnd_f32_near((uint32_t)x << 16);
        uint32_t mac = ntpu_mac_bf16(acc, x, 0x3F80), add = ntpu_f32_add(acc, (uint32_t)x << 16);
        if (mac != add)
            cr_assert_fail("mac(0x%08x, 0x%04x, 1) = 0x%08x, add = 0x%08x", acc, x, mac, add);
    }
}

/* ---------------------------------------------------------------- f32_mul, optim_f32 */

#define EXPECT_MUL(a, b, want)                                                                                         \
    cr_expect_eq(ntpu_f32_mul((a), (b)), (uint32_t)(want), "mul(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", (unsigned)(a), \
                 (unsigned)(b), ntpu_f32_mul((a), (b)), (unsigned)(want))

Test(numerics, f32_mul_hand_cases)
{
    EXPECT_MUL(0x3F800000, 0x40000000, 0x40000000); /* 1 * 2 */
    EXPECT_MUL(0xBF800000, 0x00000000, 0x80000000); /* -1 * +0 = -0 */
    EXPECT_MUL(0x00400000, 0x7F000000, 0x00000000); /* a subnormal operand reads as zero */
    EXPECT_MUL(0x80400000, 0x3F800000, 0x80000000); /* ... of its sign */
    EXPECT_MUL(0x00400000, 0x7F800000, 0x7FC00000); /* so (subnormal) * Inf is 0 * Inf: NaN */
    EXPECT_MUL(0x7F800000, 0xBF800000, 0xFF800000); /* Inf * -1 */
    EXPECT_MUL(0xFFC00001, 0x3F800000, 0x7FC00000); /* NaN canonical */
    EXPECT_MUL(0x7F7FFFFF, 0x40000000, 0x7F800000); /* overflow */
    EXPECT_MUL(0x3F800001, 0x3F800001, 0x3F800002); /* (1 + 2^-23)^2 rounds down to 1 + 2^-22 */
    EXPECT_MUL(0x00800000, 0x3F000000, 0x00000000); /* 2^-127: flushed */
    EXPECT_MUL(0x00800000, 0x3F7FFFFF, 0x00000000); /* 2^-126 - 2^-150 is a 24-bit value: flushed */
    EXPECT_MUL(0x00FFFFFF, 0x3F000000, 0x00000000); /* (2 - 2^-23) 2^-127, also a 24-bit value: flushed */
    EXPECT_MUL(0x3F000001, 0x00FFFFFE, 0x00800000); /* 2^-126 (1 - 2^-46): rounds up to 2^-126 */
    EXPECT_MUL(0xBF000001, 0x00FFFFFE, 0x80800000);
}

Test(numerics, f32_mul_random_against_float)
{
    /* wherever the exact product is at least 2^-126, the device's product is IEEE's */
    for (int k = 0; k < 1000000; k++) {
        uint32_t a = (uint32_t)rnd(), b = rnd_f32_near(0x3F800000u ^ (a & 0x80000000u));
        if (k & 1)
            b = (uint32_t)rnd();
        float fa = ntpu_f32_from_bits(a), fb = ntpu_f32_from_bits(b);
        if (!isnormal(fa) || !isnormal(fb) || fabs((double)fa * (double)fb) < 0x1p-126)
            continue;
        uint32_t want = ntpu_f32_bits(fa * fb), got = ntpu_f32_mul(a, b);
        if (isnan(fa * fb))
            want = 0x7FC00000u;
        if (got != want)
            cr_assert_fail("mul(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, got, want);
    }
}

/* The device's optimizer element is the host optimizer's expression, bit for bit,
 * for ordinary hyperparameters and values (nothing subnormal along the way). */
Test(numerics, optim_f32_is_the_host_optimizer)
{
    for (int kind = NTPU_OPT_SGD; kind <= NTPU_OPT_MOMENTUM; kind++) {
        ntpu_optim_config c = ntpu_optim_defaults((ntpu_optimizer)kind);
        c.lr = 0.0371f;
        c.weight_decay = 1e-3f;
        c.momentum = 0.9f;
        uint32_t lr = ntpu_f32_bits(c.lr), wd = ntpu_f32_bits(c.weight_decay), mu = ntpu_f32_bits(c.momentum);
        for (int k = 0; k < 200000; k++) {
            float p = (float)((int64_t)(rnd() % 2000001) - 1000000) * 1e-6f;
            float g = (float)((int64_t)(rnd() % 2000001) - 1000000) * 1e-5f;
            float s = (float)((int64_t)(rnd() % 2000001) - 1000000) * 1e-4f;
            float hp = p, hs = s;
            ntpu_optim_update(&c, 0, &hp, &g, &hs, NULL, 1);
            uint32_t dp = ntpu_f32_bits(p), ds = ntpu_f32_bits(s);
            ntpu_optim_f32(&dp, ntpu_f32_bits(g), kind == NTPU_OPT_MOMENTUM ? &ds : NULL, lr, wd, mu);
            if (dp != ntpu_f32_bits(hp) || (kind == NTPU_OPT_MOMENTUM && ds != ntpu_f32_bits(hs)))
                cr_assert_fail("%s p %.9g g %.9g s %.9g: device p %08x s %08x, host p %08x s %08x",
                               ntpu_optimizer_name((ntpu_optimizer)kind), (double)p, (double)g, (double)s, dp, ds,
                               ntpu_f32_bits(hp), ntpu_f32_bits(hs));
        }
    }
}

/* ---------------------------------------------------------------- f32_div, f32_sqrt, adam_f32 */

#define EXPECT_DIV(a, b, want)                                                                                         \
    cr_expect_eq(ntpu_f32_div((a), (b)), (uint32_t)(want), "div(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", (unsigned)(a), \
                 (unsigned)(b), ntpu_f32_div((a), (b)), (unsigned)(want))
#define EXPECT_SQRT(a, want)                                                                              \
    cr_expect_eq(ntpu_f32_sqrt(a), (uint32_t)(want), "sqrt(0x%08x) = 0x%08x, want 0x%08x", (unsigned)(a), \
                 ntpu_f32_sqrt(a), (unsigned)(want))

Test(numerics, f32_div_hand_cases)
{
    EXPECT_DIV(0x40400000, 0x40000000, 0x3FC00000); /* 3 / 2 */
    EXPECT_DIV(0x3F800000, 0x40400000, 0x3EAAAAAB); /* 1 / 3 rounds up */
    EXPECT_DIV(0x40000000, 0x40400000, 0x3F2AAAAB); /* 2 / 3 */
    EXPECT_DIV(0x3F800000, 0x00000000, 0x7F800000); /* 1 / +0 = +Inf */
    EXPECT_DIV(0x3F800000, 0x80000000, 0xFF800000); /* 1 / -0 = -Inf */
    EXPECT_DIV(0xBF800000, 0x00400000, 0xFF800000); /* a subnormal divisor reads as +0 */
    EXPECT_DIV(0x00400000, 0x3F800000, 0x00000000); /* a subnormal dividend reads as zero */
    EXPECT_DIV(0x80400000, 0x3F800000, 0x80000000); /* ... of its sign */
    EXPECT_DIV(0x00000000, 0x00000000, 0x7FC00000); /* 0 / 0 */
    EXPECT_DIV(0x00400000, 0x80400000, 0x7FC00000); /* subnormal / subnormal is 0 / 0 */
    EXPECT_DIV(0x7F800000, 0xFF800000, 0x7FC00000); /* Inf / Inf */
    EXPECT_DIV(0xFF800000, 0x3F800000, 0xFF800000); /* -Inf / 1 */
    EXPECT_DIV(0x3F800000, 0xFF800000, 0x80000000); /* 1 / -Inf = -0 */
    EXPECT_DIV(0x00000000, 0xBF800000, 0x80000000); /* +0 / -1 = -0 */
    EXPECT_DIV(0xFFC00001, 0x3F800000, 0x7FC00000); /* NaN canonical */
    EXPECT_DIV(0x3F800000, 0x7F800001, 0x7FC00000);
    EXPECT_DIV(0x7F7FFFFF, 0x3F000000, 0x7F800000); /* overflow */
    EXPECT_DIV(0x7F7FFFFF, 0x3F800000, 0x7F7FFFFF);
    EXPECT_DIV(0x00800000, 0x40000000, 0x00000000); /* 2^-127: flushed */
    EXPECT_DIV(0x00FFFFFF, 0x40000000, 0x00000000); /* (2 - 2^-23) 2^-127 is a 24-bit value: flushed */
    EXPECT_DIV(0x00800000, 0x3F800001, 0x00000000); /* 2^-126 / (1 + 2^-23) rounds to 2^-126 - 2^-150 */
    EXPECT_DIV(0x00800001, 0x3F800001, 0x00800000); /* exactly 2^-126 */
    EXPECT_DIV(0x80800001, 0x3F800001, 0x80800000);
    EXPECT_DIV(0x00800000, 0x3F7FFFFF, 0x00800001); /* 2^-126 / (1 - 2^-24) = 2^-126 (1 + 2^-24 + ...) */
    EXPECT_DIV(0x3F7FFFFF, 0x3F800001, 0x3F7FFFFD); /* (1 - 2^-24) / (1 + 2^-23) */
}

/* Exact reference by integers: the quotient of the significands to 64 bits
 * plus a sticky bit, rounded to 24 bits at an unbounded exponent, then the
 * device's flush and overflow rules. Normal operands only. */
static uint32_t div_exact(uint32_t a, uint32_t b)
{
    uint64_t ma = (a & 0x7FFFFFu) | 0x800000u, mb = (b & 0x7FFFFFu) | 0x800000u;
    int e = (int)((a >> 23) & 0xFF) - (int)((b >> 23) & 0xFF) + 127; /* biased, for ma >= mb */
    if (ma < mb) {
        ma <<= 1;
        e--;
    }
    /* (ma << 26) / mb is in [2^26, 2^27): 27 quotient bits, 24 kept, 3 below */
    uint64_t q = (ma << 26) / mb, rem = (ma << 26) % mb;
    uint64_t keep = q >> 3, below = q & 7u;
    int up = below > 4 || (below == 4 && (rem != 0 || (keep & 1)));
    keep += (uint64_t)up;
    if (keep >> 24) {
        keep >>= 1;
        e++;
    }
    uint32_t sign = (a ^ b) & 0x80000000u;
    if (e >= 255)
        return sign | 0x7F800000u;
    if (e <= 0)
        return sign;
    return sign | ((uint32_t)e << 23) | (uint32_t)(keep & 0x7FFFFFu);
}

static uint32_t rnd_normal(int emin, int emax)
{
    uint64_t r = rnd();
    uint32_t e = (uint32_t)(emin + (int)((r >> 40) % (uint64_t)(emax - emin + 1)));
    return (uint32_t)(r & 0x807FFFFFu) | e << 23;
}

Test(numerics, f32_div_random_against_float_and_integers)
{
    /* normal range: the device's quotient is IEEE's (the C library's `/`) */
    for (int k = 0; k < 2000000; k++) {
        uint32_t a = rnd_normal(1, 254), b = rnd_normal(1, 254);
        if (k & 1) /* near each other: quotients near 1, where ties and carries happen */
            b = (b & 0x807FFFFFu) | (a & 0x7F800000u);
        float q = ntpu_f32_from_bits(a) / ntpu_f32_from_bits(b);
        uint32_t got = ntpu_f32_div(a, b);
        if (isnormal(q) || isinf(q)) {
            if (got != ntpu_f32_bits(q))
                cr_assert_fail("div(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, got, ntpu_f32_bits(q));
        }
        if (got != div_exact(a, b))
            cr_assert_fail("div(0x%08x, 0x%08x) = 0x%08x, exact 0x%08x", a, b, got, div_exact(a, b));
    }
    /* around the flush edge, against the integer reference alone */
    for (int k = 0; k < 1000000; k++) {
        uint32_t a = rnd_normal(1, 40), b = rnd_normal(127, 140);
        if (k & 1) /* biased quotient exponent 0, 1 or 2 */
            a = (a & 0x807FFFFFu) | ((uint32_t)(((b >> 23) & 0xFF) - 126 + (rnd() & 1)) << 23);
        uint32_t got = ntpu_f32_div(a, b);
        if (got != div_exact(a, b))
            cr_assert_fail("div(0x%08x, 0x%08x) = 0x%08x, exact 0x%08x", a, b, got, div_exact(a, b));
    }
}

Test(numerics, f32_sqrt_hand_cases)
{
    EXPECT_SQRT(0x40800000, 0x40000000); /* sqrt 4 = 2 */
    EXPECT_SQRT(0x40000000, 0x3FB504F3); /* sqrt 2 */
    EXPECT_SQRT(0x00000000, 0x00000000);
    EXPECT_SQRT(0x80000000, 0x80000000); /* sqrt(-0) = -0 */
    EXPECT_SQRT(0x00400000, 0x00000000); /* a subnormal reads as zero */
    EXPECT_SQRT(0x80400000, 0x80000000); /* ... of its sign: -0, not NaN */
    EXPECT_SQRT(0x7F800000, 0x7F800000); /* sqrt(+Inf) */
    EXPECT_SQRT(0xFF800000, 0x7FC00000); /* sqrt(-Inf) */
    EXPECT_SQRT(0xBF800000, 0x7FC00000); /* sqrt(-1) */
    EXPECT_SQRT(0x80800000, 0x7FC00000); /* the smallest negative normal */
    EXPECT_SQRT(0x7FA00000, 0x7FC00000); /* NaN canonical */
    EXPECT_SQRT(0x00800000, 0x20000000); /* sqrt 2^-126 = 2^-63 */
    EXPECT_SQRT(0x7F7FFFFF, 0x5F7FFFFF); /* the largest: rounds to 2^64 (1 - 2^-24) */
}

Test(numerics, f32_sqrt_random_against_sqrtf)
{
    for (int k = 0; k < 2000000; k++) {
        uint32_t a = rnd_normal(1, 254) & 0x7FFFFFFFu;
        if (k & 1) /* near squares, where the remainder is small */
            a = ntpu_f32_bits(ntpu_f32_from_bits((uint32_t)rnd_normal(64, 190) & 0x7FFFFFFFu) *
                              ntpu_f32_from_bits((uint32_t)rnd_normal(64, 190) & 0x7FFFFFFFu));
        if (!isnormal(ntpu_f32_from_bits(a)))
            continue;
        uint32_t want = ntpu_f32_bits(sqrtf(ntpu_f32_from_bits(a))), got = ntpu_f32_sqrt(a);
        if (got != want)
            cr_assert_fail("sqrt(0x%08x) = 0x%08x, want 0x%08x", a, got, want);
    }
    /* every exponent, a few significands each: against sqrtf, and root^2 brackets a */
    for (uint32_t e = 1; e < 255; e++)
        for (uint32_t f = 0; f < 0x800000u; f += 0x1FFFFu) {
            uint32_t a = e << 23 | f;
            cr_expect_eq(ntpu_f32_sqrt(a), ntpu_f32_bits(sqrtf(ntpu_f32_from_bits(a))), "sqrt(0x%08x)", a);
        }
}

/* The device's Adam element is the host's Adam / AdamW, bit for bit, for
 * ordinary hyperparameters and values. */
Test(numerics, adam_f32_is_the_host_optimizer)
{
    for (int kind = NTPU_OPT_ADAM; kind <= NTPU_OPT_ADAMW; kind++)
        for (uint64_t t = 0; t < 40; t += 13) {
            ntpu_optim_config c = ntpu_optim_defaults((ntpu_optimizer)kind);
            c.lr = 0.00371f;
            c.weight_decay = kind == NTPU_OPT_ADAM ? 1e-3f : 0.013f;
            float lr = ntpu_optim_lr(&c, t), wd = c.weight_decay, b1 = c.beta1, b2 = c.beta2;
            uint32_t k[NTPU_ADAM_CONSTS];
            k[NTPU_ADAM_K_LR] = ntpu_f32_bits(lr);
            k[NTPU_ADAM_K_WD] = ntpu_f32_bits(kind == NTPU_OPT_ADAMW ? 1.0f - lr * wd : wd);
            k[NTPU_ADAM_K_B1] = ntpu_f32_bits(b1);
            k[NTPU_ADAM_K_1MB1] = ntpu_f32_bits(1.0f - b1);
            k[NTPU_ADAM_K_B2] = ntpu_f32_bits(b2);
            k[NTPU_ADAM_K_1MB2] = ntpu_f32_bits(1.0f - b2);
            k[NTPU_ADAM_K_C1] = ntpu_f32_bits(1.0f - powf(b1, (float)(t + 1)));
            k[NTPU_ADAM_K_C2] = ntpu_f32_bits(1.0f - powf(b2, (float)(t + 1)));
            k[NTPU_ADAM_K_EPS] = ntpu_f32_bits(c.eps);
            for (int i = 0; i < 200000; i++) {
                float p = (float)((int64_t)(rnd() % 2000001) - 1000000) * 1e-6f;
                float g = (float)((int64_t)(rnd() % 2000001) - 1000000) * 1e-5f;
                float m = (float)((int64_t)(rnd() % 2000001) - 1000000) * 1e-7f;
                float v = (float)(rnd() % 1000001) * 1e-9f;
                float hp = p, hm = m, hv = v;
                ntpu_optim_update(&c, t, &hp, &g, &hm, &hv, 1);
                uint32_t dp = ntpu_f32_bits(p), dm = ntpu_f32_bits(m), dv = ntpu_f32_bits(v);
                ntpu_adam_f32(&dp, ntpu_f32_bits(g), &dm, &dv, k, kind == NTPU_OPT_ADAMW);
                if (dp != ntpu_f32_bits(hp) || dm != ntpu_f32_bits(hm) || dv != ntpu_f32_bits(hv))
                    cr_assert_fail("%s t %llu p %.9g g %.9g m %.9g v %.9g: device %08x %08x %08x, host %08x %08x %08x",
                                   ntpu_optimizer_name((ntpu_optimizer)kind), (unsigned long long)t, (double)p,
                                   (double)g, (double)m, (double)v, dp, dm, dv, ntpu_f32_bits(hp), ntpu_f32_bits(hm),
                                   ntpu_f32_bits(hv));
            }
        }
}

/* ---------------------------------------------------------------- relu_f32 */

Test(numerics, relu_f32_is_a_select)
{
    cr_expect_eq(ntpu_relu_f32(0x3F800000u), 0x3F800000u);
    cr_expect_eq(ntpu_relu_f32(0xBF800000u), 0x00000000u);
    cr_expect_eq(ntpu_relu_f32(0x00000000u), 0x00000000u);
    cr_expect_eq(ntpu_relu_f32(0x80000000u), 0x00000000u, "-0 -> +0");
    cr_expect_eq(ntpu_relu_f32(0x7F800000u), 0x7F800000u);
    cr_expect_eq(ntpu_relu_f32(0xFF800000u), 0x00000000u, "-Inf -> +0");
    cr_expect_eq(ntpu_relu_f32(0x00000001u), 0x00000001u, "positive subnormal not flushed");
    cr_expect_eq(ntpu_relu_f32(0x80000001u), 0x00000000u);
    cr_expect_eq(ntpu_relu_f32(0x7FC00000u), 0x7FC00000u);
    cr_expect_eq(ntpu_relu_f32(0xFFC00000u), 0xFFC00000u, "negative NaN passes unchanged");
    cr_expect_eq(ntpu_relu_f32(0xFF800001u), 0xFF800001u, "signalling NaN too");
    cr_expect_eq(ntpu_relu_f32(0x7F812345u), 0x7F812345u);
    for (int k = 0; k < 100000; k++) {
        uint32_t x = (uint32_t)rnd();
        float f = ntpu_f32_from_bits(x);
        uint32_t want = isnan(f) ? x : signbit(f) ? 0u : x;
        cr_assert_eq(ntpu_relu_f32(x), want, "relu(0x%08x)", x);
    }
}

/* ---------------------------------------------------------------- mac_int8 */

Test(numerics, mac_int8_wraps)
{
    cr_expect_eq(ntpu_mac_int8(INT32_MAX, 1, 1), INT32_MIN);
    cr_expect_eq(ntpu_mac_int8(INT32_MIN, -128, 1), 2147483520);
    cr_expect_eq(ntpu_mac_int8(INT32_MIN, -1, 1), INT32_MAX);
    cr_expect_eq(ntpu_mac_int8(0, -128, -128), 16384);
    cr_expect_eq(ntpu_mac_int8(INT32_MAX - 16383, -128, -128), INT32_MIN);
    cr_expect_eq(ntpu_mac_int8(-5, 127, -128), -16261);
    for (int k = 0; k < 100000; k++) {
        int32_t acc = (int32_t)(uint32_t)rnd();
        int8_t a = (int8_t)rnd(), b = (int8_t)rnd();
        int64_t wide = (int64_t)acc + (int64_t)a * b;
        int32_t want = (int32_t)(uint32_t)((uint64_t)wide & 0xFFFFFFFFu);
        cr_assert_eq(ntpu_mac_int8(acc, a, b), want);
    }
}

/* ---------------------------------------------------------------- requantize */

/* x * M is at most 2^62 in magnitude: exact in long double's 64-bit
 * significand, as is any division by a power of two; roundl rounds halves
 * away from zero. */
static int8_t requantize_by_long_double(int32_t x, int32_t m, int s, int32_t z)
{
    long double y = roundl((long double)x * (long double)m / 2147483648.0L);
    if (y > (long double)INT32_MAX)
        y = (long double)INT32_MAX;
    y = roundl(y / ldexpl(1.0L, s));
    long long v = (long long)y + z;
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

Test(numerics, requantize_hand_cases)
{
    const int32_t half = 1 << 30;                      /* M for 0.5 */
    cr_expect_eq(ntpu_requantize(3, half, 0, 0), 2);   /* 1.5 -> 2 */
    cr_expect_eq(ntpu_requantize(-3, half, 0, 0), -2); /* -1.5 -> -2 */
    cr_expect_eq(ntpu_requantize(1, half, 0, 0), 1);   /* 0.5 -> 1 */
    cr_expect_eq(ntpu_requantize(-1, half, 0, 0), -1);
    cr_expect_eq(ntpu_requantize(6, half, 1, 0), 2); /* 3 / 2 = 1.5 -> 2 */
    cr_expect_eq(ntpu_requantize(-6, half, 1, 0), -2);
    cr_expect_eq(ntpu_requantize(10, half, 2, 0), 1);   /* 5 / 4 = 1.25 */
    cr_expect_eq(ntpu_requantize(-14, half, 2, 0), -2); /* -7 / 4 = -1.75 */
    cr_expect_eq(ntpu_requantize(1000, half, 0, 0), 127);
    cr_expect_eq(ntpu_requantize(-1000, half, 0, 0), -128);
    cr_expect_eq(ntpu_requantize(254, half, 0, 0), 127);
    cr_expect_eq(ntpu_requantize(256, half, 0, 0), 127);
    cr_expect_eq(ntpu_requantize(-256, half, 0, 0), -128);
    cr_expect_eq(ntpu_requantize(-258, half, 0, 0), -128);
    cr_expect_eq(ntpu_requantize(10, half, 0, -3), 2); /* zero point after rounding */
    cr_expect_eq(ntpu_requantize(10, half, 0, 200), 127);
    cr_expect_eq(ntpu_requantize(10, half, 0, -200), -128);
    cr_expect_eq(ntpu_requantize(-300, half, 1, 100), 25); /* -75 + 100 */
    cr_expect_eq(ntpu_requantize(INT32_MAX, INT32_MAX, 31, 0), 1);
    cr_expect_eq(ntpu_requantize(0, INT32_MAX, 31, 5), 5);
}

Test(numerics, requantize_int32_min_squared_saturates)
{
    /* (-2^31)(-2^31)/2^31 = 2^31 does not fit: step 1 gives 2^31 - 1, which
     * rounds to 64 under a 2^25 divide (it would be -64 had it wrapped). */
    cr_expect_eq(ntpu_requantize(INT32_MIN, INT32_MIN, 25, 0), 64);
    cr_expect_eq(ntpu_requantize(INT32_MIN, INT32_MIN, 25, -64), 0);
    cr_expect_eq(ntpu_requantize(INT32_MIN, INT32_MIN, 31, 0), 1);
    cr_expect_eq(ntpu_requantize(INT32_MIN, INT32_MIN, 0, 0), 127);
    cr_expect_eq(ntpu_requantize(INT32_MIN, INT32_MAX, 25, 0), -64); /* no saturation on this side */
    cr_expect_eq(ntpu_requantize(INT32_MIN, 1 << 30, 31, 0), -1);    /* -2^30 / 2^31 = -0.5 */
}

Test(numerics, requantize_every_shift_against_long_double)
{
    for (int s = 0; s <= 31; s++) {
        for (int k = 0; k < 20000; k++) {
            uint64_t r = rnd();
            int32_t x, m = (int32_t)((1u << 30) | (uint32_t)(r & 0x3FFFFFFFu));
            switch (k % 4) {
            case 0: x = (int32_t)(uint32_t)(r >> 32); break;
            case 1: x = (int32_t)(r >> 40) >> (int)((r >> 32) % 24); break;
            case 2: /* exact halves at this shift, both signs */
                x = (int32_t)(((r >> 33) % 2048) << (s < 20 ? s : 20)) * ((r >> 45) & 1 ? -1 : 1);
                m = 1 << 30;
                break;
            default: x = (int32_t)((r >> 32) % 2001) - 1000; break;
            }
            if (k % 97 == 0)
                m = (k & 128) ? INT32_MIN : INT32_MAX;
            if (k % 193 == 0)
                x = (k & 256) ? INT32_MIN : INT32_MAX;
            int32_t z = (k % 3 == 0) ? (int32_t)((r >> 16) % 256) - 128 : 0;
            int8_t want = requantize_by_long_double(x, m, s, z), got = ntpu_requantize(x, m, s, z);
            if (got != want)
                cr_assert_fail("requantize(%d, %d, %d, %d) = %d, want %d", x, m, s, z, got, want);
        }
    }
}

/* ---------------------------------------------------------------- quantize_multiplier */

static void expect_qm(double scale, int32_t want_m, int want_s)
{
    int32_t m = -1;
    int s = -1;
    cr_expect_eq(ntpu_quantize_multiplier(scale, &m, &s), 0, "scale %a accepted", scale);
    cr_expect_eq(m, want_m, "scale %a: multiplier %d, want %d", scale, m, want_m);
    cr_expect_eq(s, want_s, "scale %a: shift %d, want %d", scale, s, want_s);
}

Test(numerics, quantize_multiplier_hand_cases)
{
    expect_qm(0.5, 1 << 30, 0);
    expect_qm(0.25, 1 << 30, 1);
    expect_qm(0.75, 1610612736, 0);
    expect_qm(1.0 / 3.0, 1431655765, 1); /* 2/3 * 2^31 = 1431655765.33 */
    expect_qm(ldexp(1.0, -31), 1 << 30, 30);
    expect_qm(ldexp(1.0, -32), 1 << 30, 31);
    expect_qm(ldexp(1.0, -1) * (1.0 - ldexp(1.0, -40)), 1 << 30, 0); /* f rounds to 1: M halves, e rises */
    /* within 2^-32 of 1: the fraction rounds to 1, and no shift is below 0 */
    expect_qm(1.0 - ldexp(1.0, -40), INT32_MAX, 0);
    int32_t m;
    int s;
    cr_expect_eq(ntpu_quantize_multiplier(0.0, &m, &s), -1);
    cr_expect_eq(ntpu_quantize_multiplier(1.0, &m, &s), -1);
    cr_expect_eq(ntpu_quantize_multiplier(-0.25, &m, &s), -1);
    cr_expect_eq(ntpu_quantize_multiplier(1.5, &m, &s), -1);
    cr_expect_eq(ntpu_quantize_multiplier(NAN, &m, &s), -1);
    cr_expect_eq(ntpu_quantize_multiplier(INFINITY, &m, &s), -1);
}

Test(numerics, quantize_multiplier_random_scales)
{
    for (int k = 0; k < 100000; k++) {
        /* scales in [2^-31, 1): the whole range a 31-bit shift reaches */
        double scale = ldexp(0.5 + (double)(rnd() >> 12) * 0x1p-53, -(int)(rnd() % 31));
        int32_t m;
        int s;
        cr_assert_eq(ntpu_quantize_multiplier(scale, &m, &s), 0);
        cr_assert(s >= 0 && s <= 31, "scale %a: shift %d", scale, s);
        cr_assert(m >= (1 << 30), "scale %a: multiplier %d below 2^30", scale, m);
        /* M / 2^(31+s) is the nearest 31-bit multiple: within half a step */
        double err = fabs(ldexp((double)m, -31 - s) - scale);
        cr_assert(err <= ldexp(1.0, -32 - s), "scale %a: M=%d s=%d off by %a", scale, m, s, err);
    }
}
