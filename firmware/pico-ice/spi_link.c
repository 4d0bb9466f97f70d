/* SPDX-License-Identifier: Apache-2.0 */
#include "spi_link.h"
#include "clocks.h"
#include "gpio.h"
#include "link_flow.h"
#include "pins.h"
#include "usb_dev.h"

static int attached;

void spi_link_attach(void)
{
    rp2040_reset(RESET_SPI1);
    rp2040_unreset(RESET_SPI1);
    REG(SPI_CPSR) = 16;     /* clk_peri 48 MHz / 16 = 3 MHz: the FPGA's 12 MHz clock / 4 (ntpu_spi_target) */
    REG(SPI_CR0) = 7u;      /* 8-bit frames, Motorola mode 0 */
    REG(SPI_CR1) = 1u << 1; /* SSE: enabled, controller */
    gpio_output(PIN_ICE_SSN, 1);
    gpio_output(PIN_LINK_SEL, 1);
    gpio_set_function(PIN_ICE_SI, GPIO_FUNC_SPI);
    gpio_set_function(PIN_ICE_SCK, GPIO_FUNC_SPI);
    gpio_set_function(PIN_ICE_SO, GPIO_FUNC_SPI);
    attached = 1;
}

void spi_link_detach(void)
{
    if (attached) {
        REG(SPI_CR1) = 0;
        gpio_input(PIN_LINK_SEL, 0);
        attached = 0;
    }
}

int spi_link_attached(void)
{
    return attached;
}

static uint8_t xfer(uint8_t b)
{
    REG(SPI_DR) = b;
    while (!(REG(SPI_SR) & SPI_SR_RNE)) {
    }
    return (uint8_t)REG(SPI_DR);
}

void spi_link_exchange(const uint8_t *tx, uint8_t have, uint8_t *rx, uint8_t room, uint8_t *sent, uint8_t *received)
{
    gpio_put(PIN_LINK_SEL, 0);
    clocks_delay_us(1); /* the FPGA fixes its header >= 4 of its clocks after the select falls */
    uint8_t fpga_room = xfer(have);
    uint8_t fpga_have = xfer(room);
    struct link_plan p = link_plan(have, room, fpga_room, fpga_have);
    for (uint32_t i = 0; i < p.total; i++) {
        usb_dev_ep0_guard(); /* a 64-byte transaction outlasts the host's gap between SETUP and IN */
        uint8_t r = xfer(i < p.send ? tx[i] : 0u);
        if (i < p.recv) {
            rx[i] = r;
        }
    }
    while (REG(SPI_SR) & SPI_SR_BSY) {
    }
    gpio_put(PIN_LINK_SEL, 1);
    *sent = p.send;
    *received = p.recv;
}
