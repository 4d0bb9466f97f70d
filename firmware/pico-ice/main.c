/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice firmware: a USB bridge between the host and the FPGA's link. Bulk OUT bytes go to the
 * FPGA (or, between FPGA_LOAD_BEGIN and FPGA_LOAD_END, into its configuration port), FPGA bytes go to
 * bulk IN. Flow control both ways: bulk OUT is armed only when a whole packet fits in the host-to-FPGA
 * ring (the host sees NAKs otherwise), and the FPGA is offered only the room left in the FPGA-to-host
 * ring. One loop polls everything; no interrupt is enabled. */
#include <stdint.h>

#include "clocks.h"
#include "flash_id.h"
#include "fpga.h"
#include "gpio.h"
#include "spi_link.h"
#include "usb_ctrl.h"
#include "usb_dev.h"

#define RING 512u               /* a power of two, at least 2 packets */
#define FPGA_CLK_DIV_DEFAULT 4u /* 12 MHz, the iCEBreaker top's clock */

struct ring {
    uint8_t b[RING];
    uint32_t head, tail; /* free-running; head - tail bytes are held */
};

static struct ring to_fpga, to_host;
static struct usb_state usb_st;
static uint16_t fpga_clk_div;
static uint8_t last_in_full; /* the last bulk IN packet was 64 bytes: a ZLP ends the host's transfer */

static uint32_t ring_used(const struct ring *r)
{
    return r->head - r->tail;
}

static void ring_put(struct ring *r, const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        r->b[r->head++ & (RING - 1)] = p[i];
    }
}

static uint32_t ring_get(struct ring *r, uint8_t *p, uint32_t max)
{
    uint32_t n = ring_used(r) < max ? ring_used(r) : max;
    for (uint32_t i = 0; i < n; i++) {
        p[i] = r->b[(r->tail + i) & (RING - 1)];
    }
    return n;
}

static void op_configure(void *ctx, uint8_t config)
{
    (void)ctx;
    usb_dev_configure(config);
}

static void op_set_halt(void *ctx, uint8_t ep, int halt)
{
    (void)ctx;
    usb_dev_set_halt(ep, halt);
}

static void op_fpga_reset(void *ctx, int hold)
{
    (void)ctx;
    fpga_reset(hold);
}

static void op_fpga_load_begin(void *ctx)
{
    (void)ctx;
    to_fpga.head = to_fpga.tail = 0; /* link bytes meant for the old design */
    fpga_load_begin();
}

/* The bulk OUT packet the host sent just before this request may be in the controller, not yet read. */
static int op_fpga_load_end(void *ctx)
{
    uint8_t pkt[NTPU_USB_PACKET];
    (void)ctx;
    usb_dev_poll_out_only();
    int n = usb_dev_out_take(pkt);
    if (n > 0) {
        fpga_load_bytes(pkt, (uint32_t)n);
    }
    int done = fpga_load_end();
    to_host.head = to_host.tail = 0;
    return done;
}

static void op_fpga_clock(void *ctx, uint16_t div)
{
    (void)ctx;
    fpga_clk_div = div;
    clocks_set_fpga_div(div);
}

static void op_fpga_status(void *ctx, uint8_t out[NTPU_USB_STATUS_LEN])
{
    (void)ctx;
    enum fpga_state s = fpga_state();
    uint32_t n = fpga_loaded_bytes();
    out[0] = (uint8_t)((fpga_cdone() ? NTPU_USB_STATUS_CDONE : 0) | (s != FPGA_HELD ? NTPU_USB_STATUS_RUNNING : 0) |
                       (s == FPGA_LOADING ? NTPU_USB_STATUS_LOADING : 0));
    out[1] = 0;
    out[2] = (uint8_t)fpga_clk_div;
    out[3] = (uint8_t)(fpga_clk_div >> 8);
    for (int i = 0; i < 4; i++) {
        out[4 + i] = (uint8_t)(n >> (8 * i));
    }
}

static const struct usb_board_ops board_ops = {
    .configure = op_configure,
    .set_halt = op_set_halt,
    .fpga_reset = op_fpga_reset,
    .fpga_load_begin = op_fpga_load_begin,
    .fpga_load_end = op_fpga_load_end,
    .fpga_clock = op_fpga_clock,
    .fpga_status = op_fpga_status,
};

static void host_to_fpga(void)
{
    uint8_t pkt[NTPU_USB_PACKET];
    int n = usb_dev_out_take(pkt);
    if (n > 0) {
        if (fpga_state() == FPGA_LOADING) {
            fpga_load_bytes(pkt, (uint32_t)n);
        } else if (spi_link_attached()) {
            ring_put(&to_fpga, pkt, (uint32_t)n);
        } /* else: no FPGA design to take them; dropped, as a cut link drops bytes */
    }
    if (RING - ring_used(&to_fpga) >= NTPU_USB_PACKET) {
        usb_dev_out_arm();
    }
}

static void fpga_link(void)
{
    uint8_t tx[NTPU_USB_PACKET], rx[NTPU_USB_PACKET], sent, got;
    if (!spi_link_attached()) {
        return;
    }
    uint32_t room = RING - ring_used(&to_host);
    uint8_t have = (uint8_t)ring_get(&to_fpga, tx, sizeof tx);
    uint8_t take = (uint8_t)(room < sizeof rx ? room : sizeof rx);
    if (have == 0 && take == 0) {
        return;
    }
    spi_link_exchange(tx, have, rx, take, &sent, &got);
    to_fpga.tail += sent;
    ring_put(&to_host, rx, got);
}

static void fpga_to_host(void)
{
    uint8_t pkt[NTPU_USB_PACKET];
    if (usb_dev_in_busy()) {
        return;
    }
    uint32_t n = ring_get(&to_host, pkt, sizeof pkt);
    if (n == 0 && !last_in_full) {
        return;
    }
    to_host.tail += n;
    usb_dev_in_send(pkt, n);
    last_in_full = n == NTPU_USB_PACKET;
}

int main(void)
{
    uint8_t id[8];
    clocks_init();
    flash_read_unique_id(id);
    gpio_init();
    fpga_clk_div = FPGA_CLK_DIV_DEFAULT;
    clocks_set_fpga_div(fpga_clk_div);
    fpga_init();
    usb_ctrl_init(&usb_st, &board_ops, id);
    usb_dev_init(&usb_st);
    for (;;) {
        usb_dev_poll();
        fpga_poll();
        host_to_fpga();
        fpga_link();
        fpga_to_host();
    }
}
