/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks: the 12 MHz crystal, PLL_USB at 48 MHz for clk_usb, clk_sys and clk_peri, the microsecond
 * timer, and the FPGA's clock on CLK_GPOUT2 (GP24). */
#ifndef NTPU_CLOCKS_H
#define NTPU_CLOCKS_H

#include <stdint.h>

/* Runs clk_ref from the crystal and clk_sys, clk_peri and clk_usb from PLL_USB (48 MHz); starts the timer. */
void clocks_init(void);
/* Busy-waits at least `us` microseconds (the timer counts from clk_ref / 12). */
void clocks_delay_us(uint32_t us);
/* The FPGA's clock on GP24: 48 MHz / div for div 1..65535; 0 stops it (GP24 then drives low). */
void clocks_set_fpga_div(uint16_t div);

#endif
