/* SPDX-License-Identifier: Apache-2.0 */
/* The FPGA as the RP2040's pins see it. Configuration: CRESET_B (GP27) released with SS (GP9) low puts
 * the iCE40 in SPI peripheral mode; bits on SI (GP8) are taken MSB first on SCK (GP10) rising edges while
 * SS is low; after SS rises, CDONE (GP26) goes high on the 8th clock if the bytes held the sync word
 * 0x7EAA997E with more bytes after it, and stays low otherwise. Released with SS high it would boot from
 * its own flash, which holds no design here: CDONE stays low. The link: SPI1 bytes framed by the select
 * on GP0 (link_flow.h's framing, checked independently here), whose far end is the user design at pin
 * level when set (the Verilator board top), else a byte-level model (the golden model, sim/ref) when set,
 * else a loopback FIFO. */
#include "rp2040_sim.h"

#define FIFO_CAP 256u
#define CDONE_CLOCKS 8u
#define PIN_SEL 0

static int valid_bitstream(const struct fpga_model *f)
{
    for (uint32_t i = 0; i + 4u < f->ncfg; i++) {
        if (f->cfg[i] == 0x7E && f->cfg[i + 1] == 0xAA && f->cfg[i + 2] == 0x99 && f->cfg[i + 3] == 0x7E) {
            return 1;
        }
    }
    return 0;
}

void fpga_pins_changed(struct rp2040 *s)
{
    struct fpga_model *f = &s->fpga;
    int creset = gpio_level(s, 27), ss = gpio_level(s, 9), sck = gpio_level(s, 10), si = gpio_level(s, 8);
    if (!creset && f->creset) {
        f->cdone = 0;
        f->spi_mode = 0;
        f->loaded = 0;
    }
    if (creset && !f->creset) {
        f->spi_mode = !ss;
        f->sck_rise = 0;
        f->nbits = f->ncfg = f->clocks_after = 0;
        f->loaded = 0;
    }
    if (f->spi_mode && sck && !f->sck) {
        uint64_t period = s->icount - f->sck_rise;
        if (f->sck_rise && (f->sck_min_period == 0 || period < f->sck_min_period)) {
            f->sck_min_period = period;
        }
        f->sck_rise = s->icount;
        if (!ss) {
            f->shift = (f->shift << 1) | (uint32_t)si;
            if (++f->nbits % 8u == 0 && f->ncfg < sizeof f->cfg) {
                f->cfg[f->ncfg++] = (uint8_t)f->shift;
            }
        } else if (f->ncfg > 0 && ++f->clocks_after == CDONE_CLOCKS) {
            f->loaded = valid_bitstream(f);
            f->cdone = f->loaded;
            if (f->cdone && f->design) {
                f->design->configured(f->design->ctx, s->icount);
            }
        }
    }
    f->creset = creset, f->ss = ss, f->sck = sck, f->si = si;

    int sel = gpio_level(s, PIN_SEL);
    if (sel != f->sel && f->design && f->cdone) {
        f->design->select(f->design->ctx, s->icount, fpga_clock_div(s), sel);
    }
    if (!sel && f->sel) { /* a transaction starts: the FPGA's header is fixed now */
        uint32_t used = f->far ? f->far_have(f->far) : f->fifo_head - f->fifo_tail;
        f->pos = 0;
        f->fpga_room =
            f->far ? 64 /* it takes every byte at once */ : (int)(FIFO_CAP - used < 64u ? FIFO_CAP - used : 64u);
        f->fpga_have = (int)(used < 64u ? used : 64u);
    }
    if (sel && !f->sel && f->pos > 0) {
        f->link_txns++;
        if (f->pos != 2 + f->plan_total) {
            f->link_errors++;
            rp2040_fail(s, "link transaction of %d bytes where the header planned %d", f->pos, 2 + f->plan_total);
        }
    }
    f->sel = sel;
}

uint32_t fpga_clock_div(struct rp2040 *s)
{
    /* CLK_GPOUT2_CTRL (ENABLE, bit 11) and CLK_GPOUT2_DIV (integer part in bits 31:8) */
    return (s->clk[0x18u / 4u] >> 11) & 1u ? s->clk[0x1Cu / 4u] >> 8 : 0u;
}

uint8_t fpga_link_xfer(struct rp2040 *s, uint8_t tx, uint32_t bit_time)
{
    struct fpga_model *f = &s->fpga;
    if (f->sel) {
        f->link_errors++;
        rp2040_fail(s, "SPI1 byte 0x%02x clocked with the link select (GP%d) high", tx, PIN_SEL);
        return 0;
    }
    int pos = f->pos++;
    uint8_t dout = 0;
    if (f->design) { /* the design answers; the framing is still checked below */
        uint8_t out = dout =
            f->cdone ? f->design->xfer(f->design->ctx, s->icount, fpga_clock_div(s), tx, bit_time) : 0xFF;
        if (pos == 0) {
            f->fpga_room = out;
        } else if (pos == 1) {
            f->fpga_have = out;
        }
    }
    if (pos == 0) {
        f->hdr_have = tx;
        return (uint8_t)f->fpga_room;
    }
    if (pos == 1) {
        f->hdr_room = tx;
        if (f->hdr_have > 64 || f->hdr_room > 64 || f->fpga_room > 64 || f->fpga_have > 64) {
            f->link_errors++;
            rp2040_fail(s, "link header {%d, %d} from the RP2040, {%d, %d} from the FPGA: counts are at most 64",
                        f->hdr_have, f->hdr_room, f->fpga_room, f->fpga_have);
        }
        f->plan_send = f->hdr_have < f->fpga_room ? f->hdr_have : f->fpga_room;
        f->plan_recv = f->fpga_have < f->hdr_room ? f->fpga_have : f->hdr_room;
        f->plan_total = f->plan_send > f->plan_recv ? f->plan_send : f->plan_recv;
        return (uint8_t)f->fpga_have;
    }
    int i = pos - 2;
    if (i >= f->plan_total) {
        f->link_errors++;
        rp2040_fail(s, "link byte %d beyond the %d the header planned", i, f->plan_total);
        return 0;
    }
    uint8_t out = 0;
    if (i < f->plan_recv) {
        out = f->design ? dout : f->far ? f->far_get(f->far) : f->fifo[f->fifo_tail++ % FIFO_CAP];
        f->link_bytes_out++;
    }
    if (i < f->plan_send) {
        if (f->design) {
            /* the design took it */
        } else if (f->far) {
            f->far_put(f->far, tx);
        } else {
            f->fifo[f->fifo_head++ % FIFO_CAP] = tx;
        }
        f->link_bytes_in++;
    }
    return out;
}
