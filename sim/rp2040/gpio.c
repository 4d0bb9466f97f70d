/* SPDX-License-Identifier: Apache-2.0 */
/* IO_BANK0 (pin functions), PADS_BANK0, IO_QSPI's chip-select override and the SIO pins. A pin's level
 * is what drives it: the SIO when its function is SIO and its output is enabled, SPI1 on its pins, the
 * FPGA on CDONE, else the pulls (the board's 10 k pull-up on ICE_SSN). */
#include "rp2040_sim.h"

#define IO_BANK0 0x40014000u
#define IO_QSPI 0x40018000u
#define PADS_BANK0 0x4001C000u
#define FUNC_SIO 5u
#define FUNC_SPI 1u
#define PIN_CDONE 26
#define PIN_SSN 9

int gpio_level(struct rp2040 *s, int pin)
{
    uint32_t func = s->gpio_ctrl[pin] & 0x1Fu;
    if (func == FUNC_SIO && ((s->sio_oe >> pin) & 1u)) {
        return (int)((s->sio_out >> pin) & 1u);
    }
    if (pin == PIN_CDONE) {
        return s->fpga.cdone;
    }
    if (func == FUNC_SPI && pin == 10) {
        return 0; /* SPI1 SCK idles low in mode 0 */
    }
    if (pin == PIN_SSN) {
        return 1;
    }
    return (s->pads[pin] & (1u << 3)) ? 1 : 0; /* pull-up, else pull-down or floating read as 0 */
}

int gpio_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    if (a >= IO_BANK0 && a < IO_BANK0 + 8u * SIM_NPINS) {
        uint32_t n = (a - IO_BANK0) / 8u;
        if ((a & 7u) == 4u) {
            *v = s->gpio_ctrl[n];
            return 1;
        }
        return 0;
    }
    if (a >= PADS_BANK0 + 4u && a < PADS_BANK0 + 4u + 4u * SIM_NPINS) {
        *v = s->pads[(a - PADS_BANK0 - 4u) / 4u];
        return 1;
    }
    if (a == IO_QSPI + 0x0Cu) {
        *v = s->qspi_ss_ctrl;
        return 1;
    }
    return 0;
}

int gpio_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    if (a >= IO_BANK0 && a < IO_BANK0 + 8u * SIM_NPINS && (a & 7u) == 4u) {
        uint32_t n = (a - IO_BANK0) / 8u, f = v & 0x1Fu;
        if (f != FUNC_SIO && f != 0x1Fu && !(f == FUNC_SPI && n >= 8 && n <= 11) && !(f == 8u && n == 24)) {
            rp2040_fail(s, "GPIO%u set to function %u, which the emulator does not model", n, f);
            return 1;
        }
        s->gpio_ctrl[n] = v;
        fpga_pins_changed(s);
        return 1;
    }
    if (a >= PADS_BANK0 + 4u && a < PADS_BANK0 + 4u + 4u * SIM_NPINS) {
        s->pads[(a - PADS_BANK0 - 4u) / 4u] = v & 0xFFu;
        fpga_pins_changed(s);
        return 1;
    }
    if (a == IO_QSPI + 0x0Cu) {
        s->qspi_ss_ctrl = v;
        /* OUTOVER 2: chip select driven low, 3: high; 0: the SSI's own (low only during a transfer). */
        uint32_t over = (v >> 8) & 3u;
        int cs = over == 2u ? 0 : 1;
        if (cs != s->flash_cs) {
            s->flash_cs = cs;
            s->flash_cmd_pos = 0;
        }
        return 1;
    }
    return 0;
}

int sio_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    switch (a - 0xD0000000u) {
    case 0x00u: *v = 0; return 1; /* CPUID: core 0 */
    case 0x04u:
        *v = 0;
        for (int i = 0; i < SIM_NPINS; i++) {
            *v |= (uint32_t)gpio_level(s, i) << i;
        }
        return 1;
    case 0x10u: *v = s->sio_out; return 1;
    case 0x20u: *v = s->sio_oe; return 1;
    default: return 0;
    }
}

int sio_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    v &= (1u << SIM_NPINS) - 1u;
    switch (a - 0xD0000000u) {
    case 0x10u: s->sio_out = v; break;
    case 0x14u: s->sio_out |= v; break;
    case 0x18u: s->sio_out &= ~v; break;
    case 0x1Cu: s->sio_out ^= v; break;
    case 0x20u: s->sio_oe = v; break;
    case 0x24u: s->sio_oe |= v; break;
    case 0x28u: s->sio_oe &= ~v; break;
    case 0x2Cu: s->sio_oe ^= v; break;
    default: return 0;
    }
    fpga_pins_changed(s);
    return 1;
}
