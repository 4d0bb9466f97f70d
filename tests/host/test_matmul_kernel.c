/* SPDX-License-Identifier: Apache-2.0 */
/* The golden model's fast MATMUL kernels (sim/ref/matmul_kernel.c) against its
 * scalar row kernels (numerics.c, themselves checked in test_numerics.c), bit
 * for bit: random operands in regimes that keep the fast path, that straddle
 * its subnormal test, that overflow, and that are sprinkled with zeros of both
 * signs, Inf, NaN and subnormals, for array sizes with and without a fast path
 * and row counts that are not whole blocks. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numerics_internal.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) /* xorshift64*: reproducible */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static unsigned urange(unsigned lo, unsigned hi)
{
    return lo + (unsigned)(rnd() % (hi - lo + 1));
}

/* One regime: exponent fields of normal a, w and acc values, and how often
 * (out of 1024) a value is special instead. */
struct regime {
    const char *name;
    unsigned a_lo, a_hi, w_lo, w_hi, acc_lo, acc_hi, special;
};

static const struct regime regimes[] = {
    {"typical", 110, 135, 110, 135, 90, 150, 4},    /* training-like: the fast path */
    {"specials", 110, 135, 110, 135, 90, 150, 200}, /* many zeros, Inf, NaN, subnormals */
    {"threshold", 1, 80, 60, 141, 1, 40, 30},       /* Ea + Ew around 142, acc exponents around 24 */
    {"tiny", 1, 70, 1, 70, 1, 30, 30},              /* products below the normal range */
    {"overflow", 200, 254, 150, 254, 200, 254, 30}, /* products and sums past the largest float */
};

static uint16_t special_bf16(void)
{
    switch (rnd() % 6) {
    case 0: return 0x0000u;
    case 1: return 0x8000u;
    case 2: return 0x7F80u;
    case 3: return 0xFF80u;
    case 4: return (uint16_t)(0x7F80u | (rnd() & 0x807Fu) | 1u); /* NaN, either sign, any payload */
    default: return (uint16_t)((rnd() & 0x807Fu) | 1u);          /* subnormal */
    }
}

static uint16_t gen_bf16(unsigned lo, unsigned hi, unsigned special)
{
    if (rnd() % 1024 < special)
        return special_bf16();
    return (uint16_t)((rnd() & 0x807Fu) | (uint16_t)(urange(lo, hi) << 7));
}

static uint32_t gen_acc(const struct regime *g)
{
    if (rnd() % 1024 < g->special) {
        uint16_t s = special_bf16();
        return (uint32_t)s << 16 | (uint32_t)(rnd() & ((s & 0x7F80u) == 0x7F80u && !(s & 0x7Fu) ? 0 : 0xFFFFu));
    }
    return (uint32_t)(rnd() & 0x807FFFFFu) | (uint32_t)urange(g->acc_lo, g->acc_hi) << 23;
}

/* The reference: one row at a time through the scalar kernel. */
static void reference(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows)
{
    for (size_t m = 0; m < rows; m++)
        ntpu_mac_bf16_row(acc + m * n, a + m * n, w, n);
}

static void check_bf16(void (*kernel)(uint32_t *, const uint16_t *, const uint16_t *, unsigned, size_t),
                       const char *kname)
{
    static const unsigned sizes[] = {8, 16, 32, 4};
    for (size_t gi = 0; gi < sizeof regimes / sizeof regimes[0]; gi++) {
        const struct regime *g = &regimes[gi];
        for (unsigned iter = 0; iter < 200; iter++) {
            const unsigned n = sizes[iter % 4];
            const size_t rows = urange(1, 70);
            uint16_t *a = malloc(rows * n * 2), *w = malloc((size_t)n * n * 2);
            uint32_t *want = malloc(rows * n * 4), *got = malloc(rows * n * 4);
            cr_assert(a && w && want && got);
            for (size_t k = 0; k < (size_t)n * n; k++)
                w[k] = gen_bf16(g->w_lo, g->w_hi, g->special);
            for (size_t k = 0; k < rows * n; k++) {
                a[k] = gen_bf16(g->a_lo, g->a_hi, g->special);
                want[k] = got[k] = gen_acc(g);
            }
            reference(want, a, w, n, rows);
            kernel(got, a, w, n, rows);
            for (size_t k = 0; k < rows * n; k++)
                cr_assert_eq(got[k], want[k], "%s, regime %s, n=%u rows=%zu: lane %zu is 0x%08x, want 0x%08x", kname,
                             g->name, n, rows, k, (unsigned)got[k], (unsigned)want[k]);
            free(a);
            free(w);
            free(want);
            free(got);
        }
    }
}

Test(matmul_kernel, bf16_rows_match_scalar_chain)
{
    check_bf16(ntpu_mac_bf16_rows, "ntpu_mac_bf16_rows");
}

Test(matmul_kernel, bf16_rows_generic_match_scalar_chain)
{
    check_bf16(ntpu_mac_bf16_rows_generic, "ntpu_mac_bf16_rows_generic");
}

/* TRANSPOSE_A: rows taken column by column from n x n tiles t_stride lanes
 * apart (overlapping, or all the same tile when the stride is small). */
static void check_bf16_t(void (*kernel)(uint32_t *, const uint16_t *, size_t, const uint16_t *, unsigned, size_t),
                         const char *kname)
{
    static const unsigned sizes[] = {8, 16, 4};
    for (size_t gi = 0; gi < sizeof regimes / sizeof regimes[0]; gi++) {
        const struct regime *g = &regimes[gi];
        for (unsigned iter = 0; iter < 120; iter++) {
            const unsigned n = sizes[iter % 3];
            const size_t tiles = urange(1, 5), stride_rows = urange(0, 2 * n), rows = tiles * n;
            const size_t a_lanes = ((tiles - 1) * stride_rows + n) * n;
            uint16_t *a = malloc(a_lanes * 2), *w = malloc((size_t)n * n * 2), row[64];
            uint32_t *want = malloc(rows * n * 4), *got = malloc(rows * n * 4);
            cr_assert(a && w && want && got);
            for (size_t k = 0; k < (size_t)n * n; k++)
                w[k] = gen_bf16(g->w_lo, g->w_hi, g->special);
            for (size_t k = 0; k < a_lanes; k++)
                a[k] = gen_bf16(g->a_lo, g->a_hi, g->special);
            for (size_t k = 0; k < rows * n; k++)
                want[k] = got[k] = gen_acc(g);
            for (size_t m = 0; m < rows; m++) {
                const uint16_t *tile = a + (m / n) * stride_rows * n;
                for (unsigned i = 0; i < n; i++)
                    row[i] = tile[(size_t)i * n + m % n];
                ntpu_mac_bf16_row(want + m * n, row, w, n);
            }
            kernel(got, a, stride_rows * n, w, n, rows);
            for (size_t k = 0; k < rows * n; k++)
                cr_assert_eq(got[k], want[k],
                             "%s, regime %s, n=%u tiles=%zu stride=%zu: lane %zu is 0x%08x, "
                             "want 0x%08x",
                             kname, g->name, n, tiles, stride_rows, k, (unsigned)got[k], (unsigned)want[k]);
            free(a);
            free(w);
            free(want);
            free(got);
        }
    }
}

Test(matmul_kernel, bf16_rows_t_match_scalar_chain)
{
    check_bf16_t(ntpu_mac_bf16_rows_t, "ntpu_mac_bf16_rows_t");
}

Test(matmul_kernel, bf16_rows_t_generic_match_scalar_chain)
{
    check_bf16_t(ntpu_mac_bf16_rows_t_generic, "ntpu_mac_bf16_rows_t_generic");
}

/* Two products that cancel to a subnormal, which must be flushed to zero of its
 * sign: 2^-60 * 1.5*2^-60 then 2^-60 * -1.4921875*2^-60 leave 2^-127; the
 * rest of the tile is -0, so a -0 survives. Values worked out by hand. */
Test(matmul_kernel, bf16_cancellation_to_subnormal_is_flushed)
{
    enum { N = 8 };
    uint16_t a[N * N] = {0}, w[N * N];
    uint32_t acc[N * N] = {0};
    for (unsigned r = 0; r < N; r++)
        a[r * N] = a[r * N + 1] = (uint16_t)(67u << 7); /* 2^-60 */
    for (unsigned k = 0; k < N * N; k++)
        w[k] = 0x8000u;
    for (unsigned j = 0; j < N; j++) {
        uint16_t sign = j % 2 ? 0x8000u : 0;
        w[j] = (uint16_t)(sign | (67u << 7) | 0x40u);                 /* +-1.5 * 2^-60 */
        w[N + j] = (uint16_t)((sign ^ 0x8000u) | (67u << 7) | 0x3Fu); /* -+1.4921875 * 2^-60 */
    }
    ntpu_mac_bf16_rows(acc, a, w, N, N);
    for (unsigned k = 0; k < N * N; k++) {
        uint32_t want = k % 2 ? 0x80000000u : 0u;
        cr_assert_eq(acc[k], want, "lane %u is 0x%08x, want 0x%08x", k, (unsigned)acc[k], (unsigned)want);
    }
}

/* Accumulators off the 2^-126 grid: a subnormal one is read as zero, and a
 * normal one with low bits can cancel to a subnormal, which is flushed. Even
 * rows: (1 + 2^-23) * 2^-110 + 2^-55 * -2^-55 = 2^-133 -> +0, then -0 products
 * keep +0. Odd rows: a subnormal of lane j's sign plus -0 products -> that
 * sign's zero. Values worked out by hand. */
Test(matmul_kernel, bf16_accumulator_off_grid_is_flushed)
{
    enum { N = 8 };
    uint16_t a[N * N] = {0}, w[N * N];
    uint32_t acc[N * N];
    for (unsigned k = 0; k < N * N; k++)
        w[k] = 0x8000u;
    for (unsigned j = 0; j < N; j++)
        w[j] = (uint16_t)(0x8000u | (72u << 7)); /* -2^-55 */
    for (unsigned r = 0; r < N; r++)
        for (unsigned j = 0; j < N; j++) {
            if (r % 2 == 0) {
                a[r * N] = (uint16_t)(72u << 7);   /* 2^-55 */
                acc[r * N + j] = (17u << 23) | 1u; /* (1 + 2^-23) * 2^-110 */
            } else {
                acc[r * N + j] = (j % 2 ? 0x80000000u : 0u) | 0x1234u;
            }
        }
    ntpu_mac_bf16_rows(acc, a, w, N, N);
    for (unsigned r = 0; r < N; r++)
        for (unsigned j = 0; j < N; j++) {
            uint32_t want = r % 2 && j % 2 ? 0x80000000u : 0u, got = acc[r * N + j];
            cr_assert_eq(got, want, "row %u lane %u is 0x%08x, want 0x%08x", r, j, (unsigned)got, (unsigned)want);
        }
}

static void check_int8(void (*kernel)(uint32_t *, const uint16_t *, const uint16_t *, unsigned, size_t),
                       const char *kname)
{
    static const unsigned sizes[] = {8, 16, 4, 3};
    for (unsigned iter = 0; iter < 400; iter++) {
        const unsigned n = sizes[iter % 4];
        const size_t rows = urange(1, 40);
        uint16_t *a = malloc(rows * n * 2), *w = malloc((size_t)n * n * 2);
        uint32_t *want = malloc(rows * n * 4), *got = malloc(rows * n * 4);
        cr_assert(a && w && want && got);
        for (size_t k = 0; k < (size_t)n * n; k++)
            w[k] = (uint16_t)rnd(); /* high bytes must be ignored */
        for (size_t k = 0; k < rows * n; k++) {
            a[k] = (uint16_t)rnd();
            want[k] = got[k] = iter % 3 ? (uint32_t)rnd() : 0x7FFFFF00u; /* near the wrap */
        }
        for (size_t m = 0; m < rows; m++)
            ntpu_mac_int8_row(want + m * n, a + m * n, w, n);
        kernel(got, a, w, n, rows);
        for (size_t k = 0; k < rows * n; k++)
            cr_assert_eq(got[k], want[k], "%s, n=%u rows=%zu: lane %zu is 0x%08x, want 0x%08x", kname, n, rows, k,
                         (unsigned)got[k], (unsigned)want[k]);
        free(a);
        free(w);
        free(want);
        free(got);
    }
}

Test(matmul_kernel, int8_rows_match_scalar_chain)
{
    check_int8(ntpu_mac_int8_rows, "ntpu_mac_int8_rows");
}

Test(matmul_kernel, int8_rows_generic_match_scalar_chain)
{
    check_int8(ntpu_mac_int8_rows_generic, "ntpu_mac_int8_rows_generic");
}
