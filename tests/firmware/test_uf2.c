/* SPDX-License-Identifier: Apache-2.0 */
/* The firmware image tool (tools/uf2/uf2.c): CRC-32/MPEG-2 against its published check value and a
 * table-driven implementation written separately here, boot2 stamping, the UF2 writer's blocks field by
 * field, and the checker: a sound image passes, and each kind of damage is refused with one line. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "uf2.h"

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* A byte-at-a-time table CRC: the same polynomial reached another way. */
static uint32_t crc_table_mpeg2(const uint8_t *p, size_t n)
{
    static uint32_t t[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i << 24;
        for (int b = 0; b < 8; b++) {
            c = (c << 1) ^ (c & 0x80000000u ? 0x04C11DB7u : 0u);
        }
        t[i] = c;
    }
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc = (crc << 8) ^ t[(crc >> 24) ^ p[i]];
    }
    return crc;
}

Test(uf2_crc, check_value_and_empty)
{
    cr_assert_eq(uf2_crc32_mpeg2((const uint8_t *)"123456789", 9), 0x0376E6E7u);
    cr_assert_eq(uf2_crc32_mpeg2(NULL, 0), 0xFFFFFFFFu);
}

Test(uf2_crc, equals_a_table_implementation)
{
    uint8_t buf[1000];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        s = s * 1103515245u + 12345u;
        buf[i] = (uint8_t)(s >> 16);
    }
    for (size_t n = 0; n <= sizeof buf; n += 37) {
        cr_assert_eq(uf2_crc32_mpeg2(buf, n), crc_table_mpeg2(buf, n), "length %zu", n);
    }
}

Test(uf2_boot2, padded_and_stamped)
{
    uint8_t code[68], out[256];
    char err[200];
    memset(code, 0xA5, sizeof code);
    cr_assert_eq(uf2_boot2_stamp(code, sizeof code, out, err, sizeof err), 0);
    cr_assert_eq(memcmp(out, code, sizeof code), 0);
    for (size_t i = sizeof code; i < 252; i++) {
        cr_assert_eq(out[i], 0, "byte %zu not padded with zero", i);
    }
    cr_assert_eq(get32(out + 252), crc_table_mpeg2(out, 252));
    /* 252 bytes fit exactly; 253 do not. */
    uint8_t big[253] = {0};
    cr_assert_eq(uf2_boot2_stamp(big, 252, out, err, sizeof err), 0);
    cr_assert_eq(uf2_boot2_stamp(big, 253, out, err, sizeof err), -1);
    cr_assert(strstr(err, "253 bytes") != NULL, "%s", err);
}

Test(uf2_pack, blocks_field_by_field)
{
    uint8_t img[300], out[2 * UF2_BLOCK];
    for (size_t i = 0; i < sizeof img; i++) {
        img[i] = (uint8_t)i;
    }
    cr_assert_eq(uf2_blocks(sizeof img), 2u);
    cr_assert_eq(uf2_blocks(256), 1u);
    cr_assert_eq(uf2_blocks(257), 2u);
    uf2_pack(img, sizeof img, 0x10000000u, out);
    for (uint32_t b = 0; b < 2; b++) {
        const uint8_t *p = out + b * UF2_BLOCK;
        cr_assert_eq(get32(p + 0), 0x0A324655u);
        cr_assert_eq(get32(p + 4), 0x9E5D5157u);
        cr_assert_eq(get32(p + 8), 0x00002000u);
        cr_assert_eq(get32(p + 12), 0x10000000u + 256u * b);
        cr_assert_eq(get32(p + 16), 256u);
        cr_assert_eq(get32(p + 20), b);
        cr_assert_eq(get32(p + 24), 2u);
        cr_assert_eq(get32(p + 28), 0xE48BFF56u);
        cr_assert_eq(get32(p + 508), 0x0AB16F30u);
        for (size_t i = 32 + 256; i < 508; i++) {
            cr_assert_eq(p[i], 0, "block %u byte %zu", b, i);
        }
    }
    cr_assert_eq(memcmp(out + 32, img, 256), 0);
    cr_assert_eq(memcmp(out + UF2_BLOCK + 32, img + 256, 44), 0);
    for (size_t i = 44; i < 256; i++) {
        cr_assert_eq(out[UF2_BLOCK + 32 + i], 0xFF, "the tail reads as erased flash");
    }
}

/* A sound three-block image: boot2, the vector table at 0x10000100 and a reset handler after it. */
static uint8_t img[768];
static uint8_t uf2[3 * UF2_BLOCK];
static char err[200];

static void build(void)
{
    char e[200];
    uint8_t code[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    memset(img, 0, sizeof img);
    cr_assert_eq(uf2_boot2_stamp(code, sizeof code, img, e, sizeof e), 0);
    put32(img + 256, 0x20042000u);
    put32(img + 260, 0x10000201u);
    uf2_pack(img, sizeof img, 0x10000000u, uf2);
}

TestSuite(uf2_check, .init = build);

static void refused(const char *what)
{
    cr_assert_eq(uf2_check(uf2, sizeof uf2, NULL, err, sizeof err), -1, "%s was accepted", what);
    cr_assert(strchr(err, '\n') == NULL && err[0] != 0, "%s: not one line: '%s'", what, err);
}

Test(uf2_check, a_sound_image_passes)
{
    struct uf2_summary s;
    cr_assert_eq(uf2_check(uf2, sizeof uf2, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.blocks, 3u);
    cr_assert_eq(s.sp, 0x20042000u);
    cr_assert_eq(s.reset, 0x10000201u);
    cr_assert_eq(s.boot2_crc, get32(img + 252));
}

Test(uf2_check, corrupted_boot2_crc)
{
    uf2[32 + 10] ^= 1;
    refused("a boot2 byte changed after stamping");
    cr_assert(strstr(err, "boot2 CRC") != NULL, "%s", err);
}

Test(uf2_check, bad_magics)
{
    static const size_t at[] = {0, 4, 508};
    for (size_t i = 0; i < 3; i++) {
        build();
        uf2[UF2_BLOCK + at[i]] ^= 0x40;
        refused("a bad magic number");
        cr_assert(strstr(err, "block 1: bad magic") != NULL, "%s", err);
    }
}

Test(uf2_check, wrong_family)
{
    put32(uf2 + 2 * UF2_BLOCK + 28, 0x68ED2B88u); /* the SAMD21's */
    refused("another family");
    cr_assert(strstr(err, "family 0x68ed2b88") != NULL, "%s", err);
}

Test(uf2_check, wrong_flags)
{
    put32(uf2 + 8, 0x00002001u); /* "not main flash" */
    refused("flags with NOT_MAIN_FLASH");
}

Test(uf2_check, payload_size_address_and_numbering)
{
    put32(uf2 + UF2_BLOCK + 16, 476);
    refused("a 476-byte payload");
    build();
    put32(uf2 + UF2_BLOCK + 12, 0x10000180u);
    refused("an unaligned address");
    build();
    put32(uf2 + UF2_BLOCK + 12, 0x20000000u);
    refused("an address outside flash");
    build();
    put32(uf2 + UF2_BLOCK + 12, 0x10000300u);
    refused("a gap in the image");
    build();
    put32(uf2 + UF2_BLOCK + 20, 2);
    refused("a block numbered twice");
    build();
    put32(uf2 + 2 * UF2_BLOCK + 24, 4);
    refused("a block count that disagrees");
    cr_assert_eq(uf2_check(uf2, sizeof uf2 - 1, NULL, err, sizeof err), -1, "a truncated file was accepted");
    cr_assert_eq(uf2_check(uf2, 0, NULL, err, sizeof err), -1, "an empty file was accepted");
}

Test(uf2_check, vector_table)
{
    put32(uf2 + UF2_BLOCK + 32, 0x30000000u);
    refused("a stack pointer outside SRAM");
    build();
    put32(uf2 + UF2_BLOCK + 32, 0x20041FFEu);
    refused("an unaligned stack pointer");
    build();
    put32(uf2 + UF2_BLOCK + 36, 0x10000200u);
    refused("an ARM (even) reset vector");
    cr_assert(strstr(err, "reset vector") != NULL, "%s", err);
    build();
    put32(uf2 + UF2_BLOCK + 36, 0x10000401u);
    refused("a reset vector past the image");
    build();
    put32(uf2 + UF2_BLOCK + 36, 0x100000C1u);
    refused("a reset vector into boot2");
}
