/* SPDX-License-Identifier: Apache-2.0 */
/* The SSI (flash interface) and the W25Q16 behind it. XIP is on only in the one setup boot2 is meant to
 * make (standard SPI, EEPROM-read mode, 32-bit frames, command 0x03 with a 24-bit address and no wait
 * cycles): flash reads and fetches fail otherwise (cpu.c). With XIP off, 8-bit transmit-and-receive
 * frames go to the flash's command decoder, which knows the unique ID command 0x4B only. The chip
 * select is IO_QSPI's override when it drives the pin, else the SSI's own, which frames each byte alone. */
#include <string.h>

#include "rp2040_sim.h"

#define SSI 0x18000000u
#define CTRLR0 0x00u
#define SSIENR 0x08u
#define SR 0x28u
#define DR0 0x60u
#define SPI_CTRLR0 0xF4u

static const uint32_t known[] = {0x00u, 0x04u, 0x08u, 0x14u, 0xF4u};

static void xip_update(struct rp2040 *s)
{
    uint32_t c0 = s->ssi[CTRLR0 / 4], sc0 = s->ssi[SPI_CTRLR0 / 4];
    int en = s->ssi[SSIENR / 4] & 1u, eeprom = ((c0 >> 8) & 3u) == 3u, dfs32 = ((c0 >> 16) & 0x1Fu) == 31u;
    int std = ((c0 >> 21) & 3u) == 0u;
    int cmd03 = (sc0 >> 24) == 0x03u && ((sc0 >> 8) & 3u) == 2u && ((sc0 >> 2) & 0xFu) == 6u && (sc0 & 3u) == 0u &&
                ((sc0 >> 11) & 0x1Fu) == 0u;
    s->xip = en && eeprom && dfs32 && std && cmd03;
    if (en && eeprom && !s->xip) {
        rp2040_fail(s,
                    "SSI enabled for XIP with CTRLR0 0x%08x SPI_CTRLR0 0x%08x: the flash model reads only "
                    "with command 0x03, 8-bit instruction, 24-bit address, 32-bit frames",
                    c0, sc0);
    }
}

static uint8_t flash_byte(struct rp2040 *s, uint8_t tx)
{
    uint32_t pos = s->flash_cmd_pos++;
    if (pos == 0) {
        s->flash_cmd = tx;
        if (tx != 0x4Bu) {
            rp2040_fail(s, "flash command 0x%02x is not modelled (only 0x4B, the unique ID)", tx);
        }
        return 0xFFu;
    }
    return pos >= 5u && pos < 13u ? s->flash_uid[pos - 5u] : 0xFFu;
}

int ssi_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    uint32_t off = a - SSI;
    if (off == SR) {
        *v = (1u << 1) | (1u << 2) | (s->ssi_rx_n ? 1u << 3 : 0u); /* TFNF, TFE, RFNE; never busy */
        return 1;
    }
    if (off == DR0) {
        if (s->ssi_rx_n == 0) {
            rp2040_fail(s, "SSI DR0 read with its receive FIFO empty");
            return 1;
        }
        *v = s->ssi_rx[0];
        memmove(s->ssi_rx, s->ssi_rx + 1, --s->ssi_rx_n);
        return 1;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (off == known[i]) {
            *v = s->ssi[off / 4];
            return 1;
        }
    }
    return 0;
}

int ssi_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    uint32_t off = a - SSI;
    if (off == DR0) {
        uint32_t c0 = s->ssi[CTRLR0 / 4];
        if (!(s->ssi[SSIENR / 4] & 1u) || ((c0 >> 8) & 3u) != 0u || ((c0 >> 16) & 0x1Fu) != 7u) {
            rp2040_fail(s,
                        "SSI DR0 write with CTRLR0 0x%08x (enabled %u): only 8-bit transmit-and-receive is "
                        "modelled outside XIP",
                        c0, s->ssi[SSIENR / 4] & 1u);
            return 1;
        }
        if (s->ssi_rx_n == sizeof s->ssi_rx) {
            rp2040_fail(s, "SSI receive FIFO overrun");
            return 1;
        }
        int own_cs = ((s->qspi_ss_ctrl >> 8) & 3u) == 0u;
        if (own_cs) {
            s->flash_cmd_pos = 0; /* the select rises between bytes: each byte is a command of its own */
        } else if (s->flash_cs) {
            s->ssi_rx[s->ssi_rx_n++] = 0xFFu; /* select held high: the flash does not listen */
            return 1;
        }
        s->ssi_rx[s->ssi_rx_n++] = flash_byte(s, (uint8_t)v);
        return 1;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (off == known[i]) {
            if (off != SSIENR && (s->ssi[SSIENR / 4] & 1u)) {
                rp2040_fail(s, "SSI register 0x%08x written while the SSI is enabled (the SSI ignores it)", a);
                return 1;
            }
            s->ssi[off / 4] = v;
            xip_update(s);
            return 1;
        }
    }
    return 0;
}
