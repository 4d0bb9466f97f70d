/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration sequence follows the vendor SDK and Linux's ice40-spi driver (docs/firmware.md):
 * mode 0, MSB first, the FPGA samples SI on SCK's rising edge. The bit-banged clock runs at a few MHz,
 * inside the 1-25 MHz the iCE40 accepts. */
#include "fpga.h"
#include "clocks.h"
#include "gpio.h"
#include "pins.h"
#include "spi_link.h"
#include "usb_dev.h"

static enum fpga_state state;
static uint32_t loaded;

static void bus_release(void)
{
    spi_link_detach();
    gpio_input(PIN_ICE_SI, 0);
    gpio_input(PIN_ICE_SSN, 0); /* the board's 10 k pull-up holds SS high */
    gpio_input(PIN_ICE_SCK, 0);
    gpio_input(PIN_ICE_SO, 0);
}

void fpga_init(void)
{
    gpio_input(PIN_ICE_CDONE, 0);
    bus_release();
    gpio_output(PIN_ICE_CRESET, 1);
    state = FPGA_BOOTING;
}

enum fpga_state fpga_state(void)
{
    return state;
}

int fpga_cdone(void)
{
    return gpio_get(PIN_ICE_CDONE);
}

void fpga_reset(int hold)
{
    bus_release();
    gpio_put(PIN_ICE_CRESET, 0);
    clocks_delay_us(1);
    state = FPGA_HELD;
    if (!hold) {
        gpio_put(PIN_ICE_CRESET, 1);
        state = FPGA_BOOTING;
    }
}

static void clock_byte(uint32_t b)
{
    for (int i = 7; i >= 0; i--) {
        gpio_put(PIN_ICE_SI, (int)((b >> i) & 1u));
        gpio_put(PIN_ICE_SCK, 1);
        __asm__ volatile("nop\n nop"); /* high time >= 40 ns at 48 MHz */
        gpio_put(PIN_ICE_SCK, 0);
    }
}

void fpga_load_begin(void)
{
    spi_link_detach();
    gpio_output(PIN_ICE_SCK, 0);
    gpio_output(PIN_ICE_SI, 0);
    gpio_output(PIN_ICE_SSN, 0);
    gpio_input(PIN_ICE_SO, 0);
    gpio_put(PIN_ICE_CRESET, 0);
    clocks_delay_us(1); /* >= 200 ns */
    gpio_put(PIN_ICE_CRESET, 1);
    clocks_delay_us(1300); /* >= 1200 us while the FPGA clears its configuration RAM */
    gpio_put(PIN_ICE_SSN, 1);
    clock_byte(0);
    gpio_put(PIN_ICE_SSN, 0);
    loaded = 0;
    state = FPGA_LOADING;
}

void fpga_load_bytes(const uint8_t *p, uint32_t n)
{
    if (state != FPGA_LOADING) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        usb_dev_ep0_guard(); /* a packet takes ~150 us to clock in: longer than SETUP to IN */
        clock_byte(p[i]);
    }
    loaded += n;
}

int fpga_load_end(void)
{
    if (state != FPGA_LOADING) {
        return fpga_cdone();
    }
    gpio_put(PIN_ICE_SSN, 1);
    for (int i = 0; i < 250 && !fpga_cdone(); i++) {
        clock_byte(0);
    }
    for (int i = 0; i < 7; i++) {
        clock_byte(0);
    }
    int done = fpga_cdone();
    bus_release();
    state = done ? FPGA_RUNNING : FPGA_FAILED;
    if (done) {
        spi_link_attach();
    }
    return done;
}

uint32_t fpga_loaded_bytes(void)
{
    return loaded;
}

void fpga_poll(void)
{
    if (state == FPGA_BOOTING && fpga_cdone()) {
        state = FPGA_RUNNING;
        spi_link_attach();
    }
}
