/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu_bf16_from_f32_row, the host's conversion of whole rows (eight or four
 * lanes at a time), against ntpu_bf16_from_f32_bits one value at a time: every rounding
 * case, subnormals of both signs, infinities and NaNs with any payload, at
 * every length and offset around the blocks of lanes. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "ntpu/numerics.h"
#include "numerics_internal.h"

/* Bit patterns that take every branch: ties to even either way, carries into
 * the exponent and up to Inf, subnormals, NaNs quiet and signalling. */
static const uint32_t special[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x00800000u, 0x80800000u, 0x3F808000u,
    0x3F818000u, 0x3F807FFFu, 0x3F808001u, 0x7F7FFFFFu, 0xFF7F8000u, 0x7F800000u, 0xFF800000u, 0x7F800001u,
    0xFFC00000u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0x3FFFFFFFu, 0x4B7FFFFFu, 0xC0000000u, 0x00FF8000u, 0x80FF7FFFu,
};

Test(bf16_row, matches_the_scalar_conversion)
{
    enum { LEN = 1000 };
    static uint32_t src[LEN + 8];
    uint64_t s = 12345;
    for (size_t i = 0; i < LEN + 8; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(s >> 32);
        /* a third special, a third random bits, a third near a rounding tie */
        src[i] = i % 3 == 0   ? special[(r >> 8) % (sizeof special / sizeof special[0])]
                 : i % 3 == 1 ? r
                              : (r & 0xFFFF0000u) | 0x8000u | (r & 1u);
    }
    uint16_t got[LEN];
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 40; len++) {
            ntpu_bf16_from_f32_row(got, src + off, len);
            for (size_t i = 0; i < len; i++)
                cr_assert_eq(got[i], ntpu_bf16_from_f32_bits(src[off + i]), "offset %zu length %zu lane %zu: 0x%08X",
                             off, len, i, (unsigned)src[off + i]);
        }
    ntpu_bf16_from_f32_row(got, src, LEN);
    for (size_t i = 0; i < LEN; i++)
        cr_assert_eq(got[i], ntpu_bf16_from_f32_bits(src[i]), "lane %zu: 0x%08X", i, (unsigned)src[i]);
}

/* ntpu_bf16_from_f32_groups (a matrix's rows into the lanes of its tiles)
 * against the scalar conversion: every group taken from and put at its stride,
 * lanes of 8 and 16 (the AVX2 path) and 3 and 4 (the row path), nothing else
 * written. */
Test(bf16_row, groups_land_at_their_stride)
{
    enum { GROUPS = 9, STRIDE = 40 };
    static uint32_t src[GROUPS * 20];
    for (size_t i = 0; i < GROUPS * 20; i++)
        src[i] = i % 2 ? special[i % (sizeof special / sizeof special[0])] : (uint32_t)(i * 0x9E3779B9u);
    const size_t lanes_list[] = {3, 4, 8, 16};
    for (size_t li = 0; li < 4; li++) {
        const size_t lanes = lanes_list[li];
        uint16_t got[GROUPS * STRIDE];
        for (size_t i = 0; i < GROUPS * STRIDE; i++)
            got[i] = 0xABCDu;
        const size_t src_stride = lanes + li; /* packed, then gaps between the runs */
        ntpu_bf16_from_f32_groups(got, STRIDE, src, src_stride, GROUPS, lanes);
        for (size_t g = 0; g < GROUPS; g++)
            for (size_t j = 0; j < STRIDE; j++) {
                uint16_t want = j < lanes ? ntpu_bf16_from_f32_bits(src[g * src_stride + j]) : 0xABCDu;
                cr_assert_eq(got[g * STRIDE + j], want, "lanes %zu group %zu lane %zu", lanes, g, j);
            }
    }
}

/* Groups of eight side by side in src (a weight row's output tiles, an input
 * row's k-tiles), which AVX-512 rounds two at a time: every count of groups,
 * so that an odd last one takes the eight-lane path, nothing else written. */
Test(bf16_row, side_by_side_groups_in_pairs)
{
    enum { GROUPS = 9, STRIDE = 24 };
    static uint32_t src[GROUPS * 8];
    for (size_t i = 0; i < GROUPS * 8; i++)
        src[i] = i % 3 ? special[i % (sizeof special / sizeof special[0])] : (uint32_t)(i * 0x9E3779B9u);
    for (size_t groups = 0; groups <= GROUPS; groups++) {
        uint16_t got[GROUPS * STRIDE];
        for (size_t i = 0; i < GROUPS * STRIDE; i++)
            got[i] = 0xABCDu;
        ntpu_bf16_from_f32_groups(got, STRIDE, src, 8, groups, 8);
        for (size_t g = 0; g < GROUPS; g++)
            for (size_t j = 0; j < STRIDE; j++) {
                uint16_t want = g < groups && j < 8 ? ntpu_bf16_from_f32_bits(src[g * 8 + j]) : 0xABCDu;
                cr_assert_eq(got[g * STRIDE + j], want, "groups %zu group %zu lane %zu", groups, g, j);
            }
    }
}
