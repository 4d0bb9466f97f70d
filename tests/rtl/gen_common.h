/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the bench vector generators (tests/rtl/<bench>/gen.c): a bit-serial CRC-32 written
 * independently of zlib and of the RTL, and a seeded xorshift32 stream. A generator defines GEN_SEED
 * before including this file. */
#ifndef NTPU_GEN_COMMON_H
#define NTPU_GEN_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 as zlib's crc32 (reflected 0xEDB88320, init and final XOR 0xFFFFFFFF), one bit at a time. */
static inline uint32_t crc32_bits(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

static uint32_t rng = GEN_SEED;
static inline uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static inline unsigned rnd_below(unsigned n)
{
    return n ? rnd() % n : 0;
}

#endif
