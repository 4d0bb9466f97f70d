/* SPDX-License-Identifier: Apache-2.0 */
/* RP2040 flash images: boot2's CRC, UF2 packing and checking (docs/firmware.md). Used by
 * `make firmware` (build/tools/uf2) and by the unit tests. */
#ifndef NTPU_UF2_H
#define NTPU_UF2_H

#include <stddef.h>
#include <stdint.h>

#define UF2_BLOCK 512
#define UF2_PAYLOAD 256
#define UF2_MAGIC0 0x0A324655u
#define UF2_MAGIC1 0x9E5D5157u
#define UF2_MAGIC_END 0x0AB16F30u
#define UF2_FLAG_FAMILY 0x00002000u
#define UF2_FAMILY_RP2040 0xE48BFF56u
#define RP2040_FLASH 0x10000000u
#define RP2040_FLASH_END 0x11000000u
#define RP2040_BOOT2_CODE 252 /* boot2's bytes before its CRC */

/* CRC-32/MPEG-2: polynomial 0x04C11DB7, initial 0xFFFFFFFF, MSB first, no final xor. */
uint32_t uf2_crc32_mpeg2(const uint8_t *p, size_t n);

/* out[0..256): code padded with zeros to 252 bytes, then its CRC little-endian. 0, or -1 with a reason
 * in err when the code is longer than 252 bytes. */
int uf2_boot2_stamp(const uint8_t *code, size_t n, uint8_t out[256], char *err, size_t errlen);

/* Blocks for an image of n bytes. */
size_t uf2_blocks(size_t n);
/* Packs img[0..n) for flash address `base` (256-aligned) into out (uf2_blocks(n) * 512 bytes); the last
 * payload is padded with 0xFF, as erased flash reads. */
void uf2_pack(const uint8_t *img, size_t n, uint32_t base, uint8_t *out);

/* Checks a UF2 file for the RP2040 (block fields, addresses, numbering, boot2's CRC, the vector table's
 * stack pointer and reset vector). 0 when it is sound; -1 with a one-line reason in err. On success,
 * *summary (if not NULL) gets the facts the tool prints. */
struct uf2_summary {
    uint32_t blocks, bytes, boot2_crc, sp, reset;
};
int uf2_check(const uint8_t *uf2, size_t n, struct uf2_summary *summary, char *err, size_t errlen);

#endif
