/* SPDX-License-Identifier: Apache-2.0 */
/* The flash's 64-bit unique ID (W25Q16: command 0x4B, four dummy bytes, eight ID bytes), the USB serial. */
#ifndef NTPU_FLASH_ID_H
#define NTPU_FLASH_ID_H

#include <stdint.h>

/* Reads the ID into id[0..7], most significant byte first as the flash sends it. Runs from SRAM: the
 * flash cannot serve instructions while the SSI talks to it directly. Call before anything else uses
 * the flash's SPI bus (the other core is asleep in the boot ROM; no interrupt is enabled). */
void flash_read_unique_id(uint8_t id[8]);

#endif
