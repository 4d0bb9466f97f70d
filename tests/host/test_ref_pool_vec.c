/* SPDX-License-Identifier: Apache-2.0 */
/* POOL eight lanes at a time (ref_pool_run) against its one-lane definition
 * (ref_pool_run_scalar), all four modes, on memories full of hostile values:
 * NaNs of every kind, infinities, subnormals and zeros of both signs, ties, fp32
 * values whose products underflow or land on 2^-126, and factor rows with them.
 * Whole memories are compared, so a write outside dst shows too. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/protocol.h"
#include "ref_conv.h"

static uint64_t rng = 0x3C6EF372FE94F82Bull;
static uint32_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static const uint16_t bf16_hostile[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F80, 0xFF80,
                                        0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x7F7F, 0xFF7F, 0x3F80, 0x3F80};
static const uint32_t f32_hostile[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u,
                                       0x80800000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                       0x7F800001u, 0x7F7FFFFFu, 0x20000000u, 0x1FFFFFFFu, 0x3F800000u};

/* Half hostile, half a few distinct values (ties) or random bits. */
static uint16_t rnd_bf16(void)
{
    uint32_t r = rnd();
    switch (r % 4) {
    case 0: return bf16_hostile[(r >> 8) % (sizeof bf16_hostile / sizeof bf16_hostile[0])];
    case 1: return (uint16_t)(0x3F80 + (r >> 8) % 4);
    case 2: return (uint16_t)((r >> 8) & 0x80FF) | 0x0100; /* tiny normals: sums near the flush edge */
    default: return (uint16_t)(r >> 8);
    }
}

static uint32_t rnd_f32(void)
{
    uint32_t r = rnd();
    switch (r % 4) {
    case 0: return f32_hostile[(r >> 8) % (sizeof f32_hostile / sizeof f32_hostile[0])];
    case 1: return (rnd() & 0x807FFFFFu) | (1u + rnd() % 70) << 23; /* products underflow */
    default: return rnd();
    }
}

enum { UB = 4096, ACC = 4096 };

static void check(unsigned mode, unsigned n, unsigned ih, unsigned iw, unsigned mb, unsigned k)
{
    static uint16_t ub[UB * 24], ub2[UB * 24];
    static uint32_t acc[ACC * 24], acc2[ACC * 24];
    const unsigned map = ih * iw * mb, pooled = (ih / k) * (iw / k) * mb;
    cr_assert_leq(map + 2 * pooled + 8, UB, "test geometry fits");
    for (size_t i = 0; i < (size_t)UB * n; i++)
        ub[i] = rnd_bf16();
    for (size_t i = 0; i < (size_t)ACC * n; i++)
        acc[i] = rnd_f32();
    const int grad = mode >= NTPU_POOL_MODE_MAX_GRAD;
    ref_pool c = {.mode = mode, .in_h = ih, .in_w = iw, .mb = mb, .k = k};
    c.src = 3;
    c.dst = c.src + (grad ? pooled : map) + 1;
    c.aux = mode == NTPU_POOL_MODE_MAX ? c.dst + pooled + 2 : mode == NTPU_POOL_MODE_MAX_GRAD ? 5 : c.dst + map + 1;
    if (mode == NTPU_POOL_MODE_MAX_GRAD) /* the argmax: mostly in the window, sometimes not */
        for (size_t i = 0; i < (size_t)pooled * n; i++)
            ub[(size_t)c.aux * n + i] = (uint16_t)(rnd() % 8 ? rnd() % (k * k) : rnd());
    memcpy(ub2, ub, sizeof ub);
    memcpy(acc2, acc, sizeof acc);
    unsigned long rows = ref_pool_run(&c, ub, acc, n);
    cr_assert_eq(rows, map);
    cr_assert_eq(ref_pool_run_scalar(&c, ub2, acc2, n), map);
    for (size_t i = 0; i < (size_t)UB * n; i++)
        if (ub[i] != ub2[i])
            cr_assert_fail("mode %u n %u %ux%u mb %u k %u: UB row %zu lane %zu 0x%04X, scalar 0x%04X", mode, n, ih, iw,
                           mb, k, i / n, i % n, ub[i], ub2[i]);
    for (size_t i = 0; i < (size_t)ACC * n; i++)
        if (acc[i] != acc2[i])
            cr_assert_fail("mode %u n %u %ux%u mb %u k %u: ACC row %zu lane %zu 0x%08X, scalar 0x%08X", mode, n, ih, iw,
                           mb, k, i / n, i % n, acc[i], acc2[i]);
}

Test(ref_pool_vec, every_mode_matches_the_scalar_definition)
{
    const unsigned ns[] = {2, 3, 5, 8, 16, 24};
    for (unsigned mode = 0; mode < 4; mode++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const unsigned n = ns[ni];
            check(mode, n, 4, 4, 1, 2);
            check(mode, n, 7, 5, 3, 2); /* rows and columns past the last window */
            check(mode, n, 6, 9, 2, 3);
            check(mode, n, 5, 5, 4, 1);
            check(mode, n, 8, 8, 5, 4);
            check(mode, n, 3, 3, 7, 3);
        }
}
