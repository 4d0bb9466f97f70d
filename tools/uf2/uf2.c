/* SPDX-License-Identifier: Apache-2.0 */
/* UF2 (github.com/microsoft/uf2, uf2.md) for the RP2040: 512-byte blocks of 256-byte payloads, the
 * family ID flag set. The boot ROM writes whatever blocks arrive; a flaw found here would only show on
 * the board as a device that falls back to the RPI-RP2 drive, so the checker is strict. */
#include "uf2.h"

#include <stdio.h>
#include <string.h>

#define RP2040_SRAM 0x20000000u
#define RP2040_SRAM_END 0x20042000u
#define VECTORS (RP2040_FLASH + 0x100u)

uint32_t uf2_crc32_mpeg2(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint32_t)p[i] << 24;
        for (int b = 0; b < 8; b++) {
            crc = crc & 0x80000000u ? (crc << 1) ^ 0x04C11DB7u : crc << 1;
        }
    }
    return crc;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int uf2_boot2_stamp(const uint8_t *code, size_t n, uint8_t out[256], char *err, size_t errlen)
{
    if (n > RP2040_BOOT2_CODE) {
        snprintf(err, errlen, "boot2 is %zu bytes, more than the %d before its CRC", n, RP2040_BOOT2_CODE);
        return -1;
    }
    memset(out, 0, 256);
    memcpy(out, code, n);
    put32(out + RP2040_BOOT2_CODE, uf2_crc32_mpeg2(out, RP2040_BOOT2_CODE));
    return 0;
}

size_t uf2_blocks(size_t n)
{
    return (n + UF2_PAYLOAD - 1) / UF2_PAYLOAD;
}

void uf2_pack(const uint8_t *img, size_t n, uint32_t base, uint8_t *out)
{
    size_t blocks = uf2_blocks(n);
    for (size_t i = 0; i < blocks; i++) {
        uint8_t *b = out + i * UF2_BLOCK;
        size_t off = i * UF2_PAYLOAD, len = n - off < UF2_PAYLOAD ? n - off : UF2_PAYLOAD;
        memset(b, 0, UF2_BLOCK);
        put32(b + 0, UF2_MAGIC0);
        put32(b + 4, UF2_MAGIC1);
        put32(b + 8, UF2_FLAG_FAMILY);
        put32(b + 12, base + (uint32_t)off);
        put32(b + 16, UF2_PAYLOAD);
        put32(b + 20, (uint32_t)i);
        put32(b + 24, (uint32_t)blocks);
        put32(b + 28, UF2_FAMILY_RP2040);
        memset(b + 32, 0xFF, UF2_PAYLOAD);
        memcpy(b + 32, img + off, len);
        put32(b + UF2_BLOCK - 4, UF2_MAGIC_END);
    }
}

/* One block's fields against its position i of `count`; the address must follow the previous one. */
static int check_block(const uint8_t *b, uint32_t i, uint32_t count, char *err, size_t errlen)
{
    uint32_t addr = get32(b + 12), size = get32(b + 16), flags = get32(b + 8);
    if (get32(b) != UF2_MAGIC0 || get32(b + 4) != UF2_MAGIC1 || get32(b + UF2_BLOCK - 4) != UF2_MAGIC_END) {
        snprintf(err, errlen, "block %u: bad magic number", i);
    } else if (flags != UF2_FLAG_FAMILY) {
        snprintf(err, errlen, "block %u: flags 0x%08x, expected 0x%08x (family ID present)", i, flags, UF2_FLAG_FAMILY);
    } else if (get32(b + 28) != UF2_FAMILY_RP2040) {
        snprintf(err, errlen, "block %u: family 0x%08x, not the RP2040's 0x%08x", i, get32(b + 28), UF2_FAMILY_RP2040);
    } else if (size != UF2_PAYLOAD) {
        snprintf(err, errlen, "block %u: payload of %u bytes, expected %d", i, size, UF2_PAYLOAD);
    } else if (addr % UF2_PAYLOAD || addr < RP2040_FLASH || addr >= RP2040_FLASH_END) {
        snprintf(err, errlen, "block %u: address 0x%08x is not a 256-byte page of flash", i, addr);
    } else if (get32(b + 20) != i || get32(b + 24) != count) {
        snprintf(err, errlen, "block %u: numbered %u of %u, expected %u of %u", i, get32(b + 20), get32(b + 24), i,
                 count);
    } else if (addr != RP2040_FLASH + i * UF2_PAYLOAD) {
        snprintf(err, errlen, "block %u: address 0x%08x, expected 0x%08x (one contiguous image)", i, addr,
                 RP2040_FLASH + i * UF2_PAYLOAD);
    } else {
        return 0;
    }
    return -1;
}

int uf2_check(const uint8_t *uf2, size_t n, struct uf2_summary *summary, char *err, size_t errlen)
{
    if (n == 0 || n % UF2_BLOCK) {
        snprintf(err, errlen, "%zu bytes, not a whole number of 512-byte blocks", n);
        return -1;
    }
    uint32_t count = (uint32_t)(n / UF2_BLOCK);
    for (uint32_t i = 0; i < count; i++) {
        if (check_block(uf2 + (size_t)i * UF2_BLOCK, i, count, err, errlen)) {
            return -1;
        }
    }
    if (count < 2) {
        snprintf(err, errlen, "%u block: no room for boot2 and a vector table", count);
        return -1;
    }
    const uint8_t *boot2 = uf2 + 32, *vec = uf2 + UF2_BLOCK + 32;
    uint32_t crc = uf2_crc32_mpeg2(boot2, RP2040_BOOT2_CODE), stored = get32(boot2 + RP2040_BOOT2_CODE);
    uint32_t sp = get32(vec), reset = get32(vec + 4), end = RP2040_FLASH + count * UF2_PAYLOAD;
    if (crc != stored) {
        snprintf(err, errlen, "boot2 CRC is 0x%08x, its bytes give 0x%08x: the boot ROM would not run it", stored, crc);
    } else if (sp % 4 || sp <= RP2040_SRAM || sp > RP2040_SRAM_END) {
        snprintf(err, errlen, "initial stack pointer 0x%08x is not a word in SRAM", sp);
    } else if (!(reset & 1u) || (reset & ~1u) < VECTORS || (reset & ~1u) >= end) {
        snprintf(err, errlen, "reset vector 0x%08x is not Thumb code inside the image (0x%08x..0x%08x)", reset, VECTORS,
                 end);
    } else {
        if (summary) {
            *summary = (struct uf2_summary){count, count * UF2_PAYLOAD, crc, sp, reset};
        }
        return 0;
    }
    return -1;
}
