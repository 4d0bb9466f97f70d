/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the pico-ice firmware's control requests (firmware/pico-ice/usb_ctrl.c, the code the
 * firmware runs, built for the host): the input is a list of 8-byte setup packets, each answered in
 * turn on one device state; a packet whose first byte is 0xFF is a bus reset instead. Checks beyond the
 * sanitizers (every reply byte is read): an IN data stage never longer than wLength nor than its
 * buffer, a request with an OUT data stage always stalled (none is accepted), the address within
 * 0..127, the configuration 0 or 1, the board operations called only with values the requests allow. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "usb_ctrl.h"

static void configure(void *ctx, uint8_t config)
{
    (void)ctx;
    if (config > 1)
        abort();
}

static void set_halt(void *ctx, uint8_t ep, int halt)
{
    (void)ctx;
    if ((ep != 0x01 && ep != 0x81) || (halt != 0 && halt != 1))
        abort();
}

static void fpga_reset(void *ctx, int hold)
{
    (void)ctx;
    if (hold != 0 && hold != 1)
        abort();
}

static void fpga_load_begin(void *ctx)
{
    (void)ctx;
}

static int fpga_load_end(void *ctx)
{
    (void)ctx;
    return 1;
}

static void fpga_clock(void *ctx, uint16_t div)
{
    (void)ctx;
    (void)div;
}

static void fpga_status(void *ctx, uint8_t out[NTPU_USB_STATUS_LEN])
{
    (void)ctx;
    memset(out, 0x5A, NTPU_USB_STATUS_LEN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct usb_board_ops ops = {NULL,          configure,  set_halt,   fpga_reset, fpga_load_begin,
                                             fpga_load_end, fpga_clock, fpga_status};
    static const uint8_t flash_id[8] = {0xE6, 0x61, 0x38, 0x93, 0x5F, 0x2B, 0x2B, 0x2F};
    struct usb_state st;
    usb_ctrl_init(&st, &ops, flash_id);
    for (size_t at = 0; at + 8 <= size; at += 8) {
        if (data[at] == 0xFF) {
            usb_ctrl_bus_reset(&st);
            continue;
        }
        struct usb_setup s;
        struct usb_reply r;
        memset(&r, 0xEE, sizeof r);
        usb_setup_parse(data + at, &s);
        usb_control(&s, &st, &r);
        if (r.kind != USB_REPLY_STALL && r.kind != USB_REPLY_IN && r.kind != USB_REPLY_ACK)
            abort();
        if (!(s.bmRequestType & 0x80) && s.wLength > 0 && r.kind != USB_REPLY_STALL)
            abort(); /* an OUT data stage: no request takes one */
        if (r.kind == USB_REPLY_IN) {
            if (r.len > s.wLength || (r.len && !r.data))
                abort();
            volatile uint8_t sum = 0;
            for (uint16_t i = 0; i < r.len; i++) /* ASan: every byte of the data stage is there */
                sum ^= r.data[i];
            (void)sum;
        }
        if (st.address > 127 || st.configuration > 1)
            abort();
    }
    return 0;
}
