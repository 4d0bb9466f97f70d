/* SPDX-License-Identifier: Apache-2.0 */
/* SPI1, an ARM PL022 as controller: each byte written to SSPDR is exchanged with the FPGA's link side and
 * its answer queued in the 8-entry receive FIFO, visible (RNE, BSY clear) only once its 8 bits have had
 * time to shift at clk_peri / (CPSR * (SCR + 1)); a write to a full FIFO fails the run, since the
 * silicon would lose a byte. Only the setup the link uses is modelled: 8-bit Motorola frames, mode 0. */
#include <string.h>

#include "rp2040_sim.h"

#define SPI1 0x40040000u

int spi_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    switch (a - SPI1) {
    case 0x00u: *v = s->spi_cr0; return 1;
    case 0x04u: *v = s->spi_cr1; return 1;
    case 0x10u: *v = s->spi_cpsr; return 1;
    case 0x0Cu: { /* SSPSR: TFE, TNF, RNE, RFF, BSY */
        uint32_t done = 0;
        while (done < s->spi_rx_n && s->spi_done[done] <= s->icount) {
            done++;
        }
        *v = (done == s->spi_rx_n ? 1u : 0u) | 2u | (done ? 4u : 0u) | (done == sizeof s->spi_rx ? 8u : 0u) |
             (done < s->spi_rx_n ? 16u : 0u);
        return 1;
    }
    case 0x08u:
        if (s->spi_rx_n == 0 || s->spi_done[0] > s->icount) {
            rp2040_fail(s, "SPI1 SSPDR read with its receive FIFO empty");
            return 1;
        }
        *v = s->spi_rx[0];
        memmove(s->spi_rx, s->spi_rx + 1, --s->spi_rx_n);
        memmove(s->spi_done, s->spi_done + 1, s->spi_rx_n * sizeof s->spi_done[0]);
        return 1;
    default: return 0;
    }
}

int spi_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    switch (a - SPI1) {
    case 0x00u: s->spi_cr0 = v & 0xFFFFu; return 1;
    case 0x04u: s->spi_cr1 = v & 0xFu; return 1;
    case 0x10u: s->spi_cpsr = v & 0xFFu; return 1;
    case 0x08u:
        if (!(s->spi_cr1 & 2u) || (s->spi_cr1 & 4u) || (s->spi_cr0 & 0xFFu) != 7u || s->spi_cpsr < 2u ||
            (s->spi_cpsr & 1u)) {
            rp2040_fail(s, "SPI1 SSPDR write with CR0 0x%x CR1 0x%x CPSR %u: not an enabled 8-bit mode-0 controller",
                        s->spi_cr0, s->spi_cr1, s->spi_cpsr);
            return 1;
        }
        for (int pin = 8; pin <= 11; pin++) {
            if (pin != 9 && (s->gpio_ctrl[pin] & 0x1Fu) != 1u) {
                rp2040_fail(s, "SPI1 transfer while GPIO%d is not given to SPI1", pin);
                return 1;
            }
        }
        if (s->spi_rx_n == sizeof s->spi_rx) {
            rp2040_fail(s, "SPI1 receive FIFO overrun: a byte from the FPGA is lost");
            return 1;
        }
        /* clk_peri = clk_sys here: 8 bits of CPSR * (SCR + 1) cycles, after the byte ahead of it. */
        uint64_t start =
            s->spi_rx_n && s->spi_done[s->spi_rx_n - 1] > s->icount ? s->spi_done[s->spi_rx_n - 1] : s->icount;
        uint32_t bit_time = s->spi_cpsr * (((s->spi_cr0 >> 8) & 0xFFu) + 1u);
        s->spi_done[s->spi_rx_n] = start + 8u * bit_time;
        s->spi_rx[s->spi_rx_n++] = fpga_link_xfer(s, (uint8_t)v, bit_time);
        return 1;
    default: return 0;
    }
}
