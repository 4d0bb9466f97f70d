/* SPDX-License-Identifier: Apache-2.0 */
/* While the SSI is out of XIP mode nothing may be fetched from flash: this function, its constants
 * (in its own literal pool) and everything it touches are in SRAM or registers, and it calls nothing. */
#include "flash_id.h"
#include "rp2040.h"

#define SS_OUTOVER_SHIFT 8u
#define SS_OUTOVER_LOW 2u
#define SS_OUTOVER_HIGH 3u
#define ID_CMD 0x4Bu
#define ID_LEN 13u /* command, four dummy bytes, eight ID bytes */

__attribute__((section(".ramfunc"), noinline)) void flash_read_unique_id(uint8_t id[8])
{
    uint32_t xip_ctrlr0 = REG(SSI_CTRLR0);
    REG(SSI_SSIENR) = 0;
    REG(SSI_CTRLR0) = (7u << 16); /* 8-bit frames, transmit and receive, standard SPI */
    REG(SSI_SSIENR) = 1;
    /* Chip select held low by the pad override for the whole command: the SSI's own select would rise
     * whenever its transmit FIFO ran empty between bytes. */
    REG(IO_QSPI_SS_CTRL) = SS_OUTOVER_LOW << SS_OUTOVER_SHIFT;
    for (uint32_t i = 0; i < ID_LEN; i++) {
        REG(SSI_DR0) = i == 0 ? ID_CMD : 0u;
        while (!(REG(SSI_SR) & SSI_SR_RFNE)) {
        }
        uint8_t b = (uint8_t)REG(SSI_DR0);
        if (i >= ID_LEN - 8u) {
            id[i - (ID_LEN - 8u)] = b;
        }
    }
    REG(IO_QSPI_SS_CTRL) = SS_OUTOVER_HIGH << SS_OUTOVER_SHIFT;
    REG(IO_QSPI_SS_CTRL) = 0; /* back to the SSI's own select */
    REG(SSI_SSIENR) = 0;
    REG(SSI_CTRLR0) = xip_ctrlr0;
    REG(SSI_SSIENR) = 1;
}
