/* SPDX-License-Identifier: Apache-2.0 */
/* RP2040 register addresses the firmware uses (RP2040 datasheet, chapter 2 and 4), and the access helpers.
 * Only what the firmware touches is named here. */
#ifndef NTPU_RP2040_H
#define NTPU_RP2040_H

#include <stdint.h>

#define REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
/* Atomic aliases every APB/AHB peripheral has: write-1-to-set and write-1-to-clear without read-modify-write. */
#define REG_SET(addr) REG((addr) + 0x2000u)
#define REG_CLR(addr) REG((addr) + 0x3000u)

/* RESETS: a peripheral is held in reset until its bit is cleared and RESET_DONE shows it. */
#define RESETS_BASE 0x4000C000u
#define RESETS_RESET (RESETS_BASE + 0x00u)
#define RESETS_DONE (RESETS_BASE + 0x08u)
#define RESET_IO_BANK0 (1u << 5)
#define RESET_IO_QSPI (1u << 6)
#define RESET_PADS_BANK0 (1u << 8)
#define RESET_PLL_USB (1u << 13)
#define RESET_SPI1 (1u << 17)
#define RESET_TIMER (1u << 21)
#define RESET_USBCTRL (1u << 24)

/* CLOCKS: each generator is CTRL, DIV, SELECTED at a 12-byte stride. */
#define CLOCKS_BASE 0x40008000u
#define CLK_GPOUT2_CTRL (CLOCKS_BASE + 0x18u)
#define CLK_GPOUT2_DIV (CLOCKS_BASE + 0x1Cu)
#define CLK_REF_CTRL (CLOCKS_BASE + 0x30u)
#define CLK_REF_SELECTED (CLOCKS_BASE + 0x38u)
#define CLK_SYS_CTRL (CLOCKS_BASE + 0x3Cu)
#define CLK_SYS_DIV (CLOCKS_BASE + 0x40u)
#define CLK_SYS_SELECTED (CLOCKS_BASE + 0x44u)
#define CLK_PERI_CTRL (CLOCKS_BASE + 0x48u)
#define CLK_USB_CTRL (CLOCKS_BASE + 0x54u)
#define CLK_USB_DIV (CLOCKS_BASE + 0x58u)
#define CLK_CTRL_ENABLE (1u << 11)

#define XOSC_BASE 0x40024000u
#define XOSC_CTRL (XOSC_BASE + 0x00u)
#define XOSC_STATUS (XOSC_BASE + 0x04u)
#define XOSC_STARTUP (XOSC_BASE + 0x0Cu)
#define XOSC_STATUS_STABLE (1u << 31)

#define PLL_USB_BASE 0x4002C000u
#define PLL_CS (PLL_USB_BASE + 0x00u)
#define PLL_PWR (PLL_USB_BASE + 0x04u)
#define PLL_FBDIV_INT (PLL_USB_BASE + 0x08u)
#define PLL_PRIM (PLL_USB_BASE + 0x0Cu)
#define PLL_CS_LOCK (1u << 31)
#define PLL_PWR_PD (1u << 0)
#define PLL_PWR_POSTDIVPD (1u << 3)
#define PLL_PWR_VCOPD (1u << 5)

/* WATCHDOG's tick generator also clocks the microsecond TIMER. */
#define WATCHDOG_TICK 0x4005802Cu
#define WATCHDOG_TICK_ENABLE (1u << 9)
#define TIMER_TIMERAWL 0x40054028u

#define IO_BANK0_BASE 0x40014000u
#define GPIO_CTRL(n) (IO_BANK0_BASE + 8u * (n) + 4u)
#define PADS_BANK0_BASE 0x4001C000u
#define PADS_GPIO(n) (PADS_BANK0_BASE + 4u + 4u * (n))
#define PADS_IE (1u << 6)
#define PADS_OD (1u << 7)
#define PADS_PUE (1u << 3)
#define PADS_PDE (1u << 2)

#define IO_QSPI_SS_CTRL 0x4001800Cu
#define SIO_BASE 0xD0000000u
#define SIO_GPIO_IN (SIO_BASE + 0x04u)
#define SIO_GPIO_OUT_SET (SIO_BASE + 0x14u)
#define SIO_GPIO_OUT_CLR (SIO_BASE + 0x18u)
#define SIO_GPIO_OE_SET (SIO_BASE + 0x24u)
#define SIO_GPIO_OE_CLR (SIO_BASE + 0x28u)

/* SSI: the flash interface; XIP runs through it. */
#define SSI_BASE 0x18000000u
#define SSI_CTRLR0 (SSI_BASE + 0x00u)
#define SSI_SSIENR (SSI_BASE + 0x08u)
#define SSI_SR (SSI_BASE + 0x28u)
#define SSI_DR0 (SSI_BASE + 0x60u)
#define SSI_SR_RFNE (1u << 3)

/* SPI1 (ARM PL022). */
#define SPI1_BASE 0x40040000u
#define SPI_CR0 (SPI1_BASE + 0x00u)
#define SPI_CR1 (SPI1_BASE + 0x04u)
#define SPI_DR (SPI1_BASE + 0x08u)
#define SPI_SR (SPI1_BASE + 0x0Cu)
#define SPI_CPSR (SPI1_BASE + 0x10u)
#define SPI_SR_TNF (1u << 1)
#define SPI_SR_RNE (1u << 2)
#define SPI_SR_BSY (1u << 4)

/* USB controller: its registers and its 4 KB dual-port RAM. */
#define USB_DPRAM 0x50100000u
#define USB_REGS 0x50110000u
#define USB_ADDR_ENDP (USB_REGS + 0x00u)
#define USB_MAIN_CTRL (USB_REGS + 0x40u)
#define USB_SIE_CTRL (USB_REGS + 0x4Cu)
#define USB_SIE_STATUS (USB_REGS + 0x50u)
#define USB_BUFF_STATUS (USB_REGS + 0x58u)
#define USB_EP_STALL_ARM (USB_REGS + 0x68u)
#define USB_MUXING (USB_REGS + 0x74u)
#define USB_PWR (USB_REGS + 0x78u)
#define USB_MAIN_CTRL_CONTROLLER_EN (1u << 0)
#define USB_SIE_CTRL_PULLUP_EN (1u << 16)
#define USB_SIE_CTRL_EP0_INT_1BUF (1u << 29)
#define USB_SIE_STATUS_SETUP_REC (1u << 17)
#define USB_SIE_STATUS_BUS_RESET (1u << 19)
#define USB_MUXING_TO_PHY (1u << 0)
#define USB_MUXING_SOFTCON (1u << 3)
#define USB_PWR_VBUS_DETECT (1u << 2)
#define USB_PWR_VBUS_DETECT_OVERRIDE_EN (1u << 3)

#define PPB_VTOR 0xE000ED08u

/* Takes the peripherals in `mask` out of reset and waits until they are ready. */
static inline void rp2040_unreset(uint32_t mask)
{
    REG_CLR(RESETS_RESET) = mask;
    while ((REG(RESETS_DONE) & mask) != mask) {
    }
}

static inline void rp2040_reset(uint32_t mask)
{
    REG_SET(RESETS_RESET) = mask;
}

#endif
