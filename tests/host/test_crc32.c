/* SPDX-License-Identifier: Apache-2.0 */
/* The link's CRC-32 (sim/ref/crc32.c) against zlib's crc32, the definition the
 * protocol names: every length around the folding path's thresholds, every
 * alignment, chained calls, the table path that CPUs without carry-less
 * multiplication take, and the copy that computes the CRC on the way. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "ntpu_crc32.h"

static uint8_t data[70000];

static void fill(void)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof data; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        data[i] = (uint8_t)(s >> 56);
    }
}

TestSuite(crc32, .init = fill);

Test(crc32, check_value)
{
    cr_assert_eq(ntpu_crc32(0, "123456789", 9), 0xCBF43926u);
    cr_assert_eq(ntpu_crc32_tables(0, "123456789", 9), 0xCBF43926u);
    cr_assert_eq(ntpu_crc32(0x1234u, data, 0), 0x1234u);
}

Test(crc32, every_length_and_alignment_as_zlib)
{
    for (size_t off = 0; off < 16; off++)
        for (size_t len = 0; len < 600; len++) {
            uint32_t seed = (uint32_t)(off * 0x01000193u), want = (uint32_t)crc32(seed, data + off, (uInt)len);
            cr_assert_eq(ntpu_crc32(seed, data + off, len), want, "offset %zu length %zu", off, len);
            cr_assert_eq(ntpu_crc32_tables(seed, data + off, len), want, "tables: offset %zu length %zu", off, len);
        }
}

Test(crc32, large_and_chained)
{
    uint32_t want = (uint32_t)crc32(0, data, (uInt)sizeof data);
    cr_assert_eq(ntpu_crc32(0, data, sizeof data), want);
    uint32_t c = 0;
    for (size_t at = 0, step = 1; at < sizeof data; at += step, step = step * 3 % 4099 + 1)
        c = ntpu_crc32(c, data + at, at + step <= sizeof data ? step : sizeof data - at);
    cr_assert_eq(c, want);
}

Test(crc32, a_word_from_registers_as_its_bytes)
{
    for (size_t at = 0; at + 4 <= 4000; at += 4) {
        uint32_t seed = (uint32_t)(at * 0x9E3779B9u);
        uint32_t w = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 | (uint32_t)data[at + 2] << 16 |
                     (uint32_t)data[at + 3] << 24;
        cr_assert_eq(ntpu_crc32_word(seed, w), (uint32_t)crc32(seed, data + at, 4), "at %zu", at);
    }
}

Test(crc32, copy_gives_the_crc_and_the_bytes)
{
    static uint8_t out[5000];
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len < 4200; len += len < 600 ? 1 : 97) {
            memset(out, 0xA5, sizeof out);
            uint32_t seed = (uint32_t)(len * 0x01000193u), want = (uint32_t)crc32(seed, data + off, (uInt)len);
            cr_assert_eq(ntpu_crc32_copy(seed, out + 3 + off, data + off, len), want, "offset %zu length %zu", off,
                         len);
            cr_assert(memcmp(out + 3 + off, data + off, len) == 0, "bytes: offset %zu length %zu", off, len);
            cr_assert_eq(out[2 + off], 0xA5, "a byte before the copy: offset %zu length %zu", off, len);
            cr_assert_eq(out[3 + off + len], 0xA5, "a byte after the copy: offset %zu length %zu", off, len);
        }
}
