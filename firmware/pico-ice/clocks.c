/* SPDX-License-Identifier: Apache-2.0 */
/* clk_sys runs from PLL_USB too: one PLL is enough for a 48 MHz core that only moves bytes, and
 * clk_sys = clk_usb keeps the USB controller's DPRAM timing simple. PLL_SYS stays powered down. */
#include "clocks.h"
#include "gpio.h"
#include "rp2040.h"

#define XOSC_MHZ 12u
#define FPGA_CLK_PIN 24u
#define GPIO_FUNC_GPCK 8u
#define GPOUT_AUXSRC_CLK_USB (7u << 5)

static void xosc_start(void)
{
    /* STARTUP counts 256-cycle units of the crystal: about 1 ms. */
    REG(XOSC_STARTUP) = (XOSC_MHZ * 1000u + 255u) / 256u;
    REG(XOSC_CTRL) = (0xFABu << 12) | 0xAA0u; /* ENABLE magic, 1-15 MHz range */
    while (!(REG(XOSC_STATUS) & XOSC_STATUS_STABLE)) {
    }
}

/* 12 MHz / REFDIV 1 * FBDIV 100 = 1200 MHz VCO, / 5 / 5 = 48 MHz (datasheet 2.18). */
static void pll_usb_start(void)
{
    rp2040_reset(RESET_PLL_USB);
    rp2040_unreset(RESET_PLL_USB);
    REG(PLL_CS) = 1u;
    REG(PLL_FBDIV_INT) = 100u;
    REG_CLR(PLL_PWR) = PLL_PWR_PD | PLL_PWR_VCOPD;
    while (!(REG(PLL_CS) & PLL_CS_LOCK)) {
    }
    REG(PLL_PRIM) = (5u << 16) | (5u << 12);
    REG_CLR(PLL_PWR) = PLL_PWR_POSTDIVPD;
}

void clocks_init(void)
{
    xosc_start();
    /* clk_sys back to clk_ref (glitchless) before its aux source changes. */
    REG_CLR(CLK_SYS_CTRL) = 1u;
    while (REG(CLK_SYS_SELECTED) != 1u) {
    }
    REG(CLK_REF_CTRL) = 2u; /* SRC = xosc */
    while (REG(CLK_REF_SELECTED) != (1u << 2)) {
    }
    pll_usb_start();
    REG(CLK_SYS_DIV) = 1u << 8;
    REG(CLK_SYS_CTRL) = 1u << 5; /* AUXSRC = pll_usb: the aux mux is not glitchless, so while unselected */
    REG_SET(CLK_SYS_CTRL) = 1u;  /* SRC = aux */
    while (REG(CLK_SYS_SELECTED) != (1u << 1)) {
    }
    REG(CLK_USB_DIV) = 1u << 8;
    REG(CLK_USB_CTRL) = CLK_CTRL_ENABLE;  /* AUXSRC 0 = pll_usb */
    REG(CLK_PERI_CTRL) = CLK_CTRL_ENABLE; /* AUXSRC 0 = clk_sys */
    /* The timer ticks once a microsecond: clk_ref (12 MHz) / 12. */
    REG(WATCHDOG_TICK) = WATCHDOG_TICK_ENABLE | XOSC_MHZ;
    rp2040_unreset(RESET_TIMER);
}

void clocks_delay_us(uint32_t us)
{
    uint32_t t0 = REG(TIMER_TIMERAWL);
    /* +1: the first tick may come at once. Unsigned difference survives the counter's wrap. */
    while (REG(TIMER_TIMERAWL) - t0 < us + 1u) {
    }
}

void clocks_set_fpga_div(uint16_t div)
{
    if (div == 0) {
        REG_CLR(CLK_GPOUT2_CTRL) = CLK_CTRL_ENABLE;
        gpio_output(FPGA_CLK_PIN, 0);
        return;
    }
    REG_CLR(CLK_GPOUT2_CTRL) = CLK_CTRL_ENABLE;
    REG(CLK_GPOUT2_DIV) = (uint32_t)div << 8;
    REG(CLK_GPOUT2_CTRL) = CLK_CTRL_ENABLE | GPOUT_AUXSRC_CLK_USB;
    gpio_set_function(FPGA_CLK_PIN, GPIO_FUNC_GPCK);
}
