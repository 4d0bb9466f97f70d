/* SPDX-License-Identifier: Apache-2.0 */
/* RESETS, CLOCKS, XOSC, PLL_USB, the watchdog's tick and the microsecond TIMER. Time is the instruction
 * count at SIM_CLK_HZ. The models check what the silicon would punish: the PLL locks only with its VCO
 * in 400-1600 MHz, a clock generator's SELECTED follows its SRC, the crystal is stable only when
 * enabled with its magic. */
#include "rp2040_sim.h"

#define RESETS 0x4000C000u
#define CLOCKS 0x40008000u
#define XOSC 0x40024000u
#define PLL_USB 0x4002C000u
#define WD_TICK 0x4005802Cu
#define TIMER 0x40054000u

uint64_t timer_us(struct rp2040 *s)
{
    return s->timer_running ? (s->icount - s->timer_start) / (SIM_CLK_HZ / 1000000u) : 0;
}

static void timer_update(struct rp2040 *s)
{
    /* Ticks come once clk_ref / 12 runs (TICK enabled with CYCLES = 12) and the block is out of reset. */
    int run = (s->wd_tick & (1u << 9)) && (s->wd_tick & 0x1FFu) == 12u && !((s->resets >> 21) & 1u);
    if (run && !s->timer_running) {
        s->timer_start = s->icount;
    }
    s->timer_running = run;
}

static int pll_locked(struct rp2040 *s)
{
    uint32_t refdiv = s->pll_cs & 0x3Fu, vco = refdiv ? 12u * s->pll_fbdiv / refdiv : 0;
    return !(s->pll_pwr & ((1u << 0) | (1u << 5))) && vco >= 400u && vco <= 1600u && s->pll_fbdiv >= 16u &&
           s->pll_fbdiv <= 320u;
}

int clocks_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    if (a >= CLOCKS && a < CLOCKS + 0x78u) {
        uint32_t i = (a - CLOCKS) / 4u;
        if (a == CLOCKS + 0x38u) { /* CLK_REF_SELECTED: one-hot SRC */
            *v = 1u << (s->clk[0x30u / 4u] & 3u);
        } else if (a == CLOCKS + 0x44u) { /* CLK_SYS_SELECTED */
            *v = 1u << (s->clk[0x3Cu / 4u] & 1u);
        } else {
            *v = s->clk[i];
        }
        return 1;
    }
    switch (a) {
    case RESETS + 0x00u: *v = s->resets; return 1;
    case RESETS + 0x08u: *v = ~s->resets & 0x01FFFFFFu; return 1;
    case XOSC + 0x00u: *v = s->xosc_ctrl; return 1;
    case XOSC + 0x04u:
        *v = ((s->xosc_ctrl >> 12) & 0xFFFu) == 0xFABu && s->xosc_startup ? (1u << 31) | (1u << 12) : 0u;
        return 1;
    case XOSC + 0x0Cu: *v = s->xosc_startup; return 1;
    case PLL_USB + 0x00u: *v = s->pll_cs | (pll_locked(s) ? 1u << 31 : 0u); return 1;
    case PLL_USB + 0x04u: *v = s->pll_pwr; return 1;
    case PLL_USB + 0x08u: *v = s->pll_fbdiv; return 1;
    case PLL_USB + 0x0Cu: *v = s->pll_prim; return 1;
    case WD_TICK: *v = s->wd_tick | (s->timer_running ? 1u << 10 : 0u); return 1;
    case TIMER + 0x24u: *v = (uint32_t)(timer_us(s) >> 32); return 1; /* TIMERAWH */
    case TIMER + 0x28u: *v = (uint32_t)timer_us(s); return 1;         /* TIMERAWL */
    default: return 0;
    }
}

int clocks_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    if (a >= CLOCKS && a < CLOCKS + 0x78u && a != CLOCKS + 0x38u && a != CLOCKS + 0x44u) {
        s->clk[(a - CLOCKS) / 4u] = v;
        return 1;
    }
    switch (a) {
    case RESETS + 0x00u:
        if (v & ~s->resets & (1u << 13)) { /* a block put into reset comes back with its reset values */
            s->pll_cs = 1u, s->pll_pwr = 0x2Du, s->pll_fbdiv = 0, s->pll_prim = 0x77000u;
        }
        if (v & ~s->resets & (1u << 17)) {
            s->spi_cr0 = s->spi_cr1 = s->spi_cpsr = s->spi_rx_n = 0;
        }
        if (v & ~s->resets & (1u << 24)) {
            s->usb_addr_endp = s->usb_main_ctrl = s->usb_sie_ctrl = s->usb_sie_status = 0;
            s->usb_buff_status = s->usb_stall_arm = s->usb_muxing = s->usb_pwr = 0;
        }
        s->resets = v & 0x01FFFFFFu;
        timer_update(s);
        return 1;
    case XOSC + 0x00u: s->xosc_ctrl = v; return 1;
    case XOSC + 0x0Cu: s->xosc_startup = v; return 1;
    case PLL_USB + 0x00u: s->pll_cs = v & 0x3Fu; return 1;
    case PLL_USB + 0x04u: s->pll_pwr = v & 0x2Du; return 1;
    case PLL_USB + 0x08u: s->pll_fbdiv = v & 0xFFFu; return 1;
    case PLL_USB + 0x0Cu: s->pll_prim = v & 0x77000u; return 1;
    case WD_TICK:
        s->wd_tick = v & 0x3FFu;
        timer_update(s);
        return 1;
    default: return 0;
    }
}
