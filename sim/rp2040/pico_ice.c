/* SPDX-License-Identifier: Apache-2.0 */
#include "pico_ice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usb_requests.h"

#define NAK_WAIT_US 20 /* the CPU runs this long after a NAKed IN before the next try */

static void d_configured(void *ctx, uint64_t now)
{
    vsim_pico_ice_configured(ctx, now);
}

static void d_select(void *ctx, uint64_t now, uint32_t div, int level)
{
    vsim_pico_ice_select(ctx, now, div, level);
}

static uint8_t d_xfer(void *ctx, uint64_t now, uint32_t div, uint8_t mosi, uint32_t bit_time)
{
    return vsim_pico_ice_xfer(ctx, now, div, mosi, bit_time);
}

static int failed(pico_ice *p, char *err, size_t errlen, const char *what)
{
    if (err && errlen) {
        snprintf(err, errlen, "emulated pico-ice: %s%s%s", what, p->s.error[0] ? ": " : "", p->s.error);
    }
    return -1;
}

int pico_ice_boot(pico_ice *p, const uint8_t *image, size_t len, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (rp2040_init(&p->s, image, len) != 0) {
        return failed(p, err, errlen, "the firmware image does not boot");
    }
    p->fpga = vsim_pico_ice_new();
    if (!p->fpga) {
        return failed(p, err, errlen, "out of memory");
    }
    p->design = (struct fpga_design){p->fpga, d_configured, d_select, d_xfer};
    p->s.fpga.design = &p->design;
    while (!usbd_connected(&p->s) && p->s.icount < 20000000u && rp2040_run(&p->s, 10000) == 0) {
    }
    if (!usbd_connected(&p->s)) {
        return failed(p, err, errlen, "the firmware never connected to USB");
    }
    p->h.s = &p->s;
    p->h.nak_budget = 480000000u; /* 10 s emulated: the FPGA may be busy */
    usbd_bus_reset(&p->s);
    usbh_wait_us(&p->h, 100);
    if (usbh_control_nodata(&p->h, 0x00, 5, 1, 0) != 0) {
        return failed(p, err, errlen, "SET_ADDRESS failed");
    }
    usbh_wait_us(&p->h, 2000); /* SET_ADDRESS recovery interval, USB 2.0 9.2.6.3 */
    p->h.addr = 1;
    if (usbh_control_nodata(&p->h, 0x00, 9, 1, 0) != 0) {
        return failed(p, err, errlen, "SET_CONFIGURATION failed");
    }
    return 0;
}

int pico_ice_load(pico_ice *p, const uint8_t *bits, size_t n, char *err, size_t errlen)
{
    uint8_t cdone = 0;
    if (usbh_control_nodata(&p->h, 0x40, NTPU_USB_REQ_FPGA_LOAD_BEGIN, 0, 0) != 0) {
        return failed(p, err, errlen, "FPGA_LOAD_BEGIN failed");
    }
    for (size_t i = 0; i < n; i += 64) {
        if (usbh_bulk_out(&p->h, bits + i, n - i < 64 ? (uint32_t)(n - i) : 64u) != 0) {
            return failed(p, err, errlen, "the bitstream's bulk OUT failed");
        }
    }
    if (usbh_control_in(&p->h, 0xC0, NTPU_USB_REQ_FPGA_LOAD_END, 0, 0, 1, &cdone) != 1 || cdone != 1) {
        return failed(p, err, errlen, "FPGA_LOAD_END: CDONE stayed low");
    }
    return 0;
}

void pico_ice_free(pico_ice *p)
{
    vsim_pico_ice_free(p->fpga);
    p->fpga = NULL;
    rp2040_free(&p->s);
    free(p->tx);
    p->tx = NULL;
}

int pico_ice_write(pico_ice *p, const uint8_t *buf, size_t n)
{
    if (p->tx_head > 0 && p->tx_head == p->tx_len) {
        p->tx_head = p->tx_len = 0;
    }
    if (p->tx_len + n > p->tx_cap) {
        size_t cap = (p->tx_len + n) * 2;
        uint8_t *t = realloc(p->tx, cap);
        if (!t) {
            return -1;
        }
        p->tx = t, p->tx_cap = cap;
    }
    memcpy(p->tx + p->tx_len, buf, n);
    p->tx_len += n;
    return 0;
}

/* One bulk OUT packet from the queue and one bulk IN attempt: 1 if a byte moved, 0 if not, -1 on error. */
static int usb_round(pico_ice *p)
{
    int moved = 0;
    if (p->tx_head < p->tx_len) {
        uint32_t n = p->tx_len - p->tx_head < 64u ? (uint32_t)(p->tx_len - p->tx_head) : 64u;
        int r = usbh_bulk_out_once(&p->h, p->tx + p->tx_head, n);
        if (r == 0) {
            p->tx_head += n, p->out_bytes += n, moved = 1;
        } else if (r != -3) {
            return -1;
        }
    }
    if (p->rx_head == p->rx_len) {
        int r = usbh_bulk_in_once(&p->h, p->rx);
        if (r > 0) {
            p->rx_head = 0, p->rx_len = (size_t)r, p->in_bytes += (uint64_t)r, moved = 1;
        } else if (r != -3 && r != 0) {
            return -1;
        }
    }
    if (!moved && usbh_wait_us(&p->h, NAK_WAIT_US) != 0) {
        return -1;
    }
    return moved;
}

size_t pico_ice_read(pico_ice *p, uint8_t *buf, size_t n, uint64_t idle_us)
{
    size_t got = 0;
    uint64_t last = pico_ice_time_us(p);
    while (got < n) {
        if (p->rx_head < p->rx_len) {
            size_t k = p->rx_len - p->rx_head < n - got ? p->rx_len - p->rx_head : n - got;
            memcpy(buf + got, p->rx + p->rx_head, k);
            p->rx_head += k, got += k;
            continue;
        }
        int r = usb_round(p);
        if (r < 0) {
            break;
        }
        if (r > 0) {
            last = pico_ice_time_us(p);
        } else if (pico_ice_time_us(p) - last >= idle_us) {
            break;
        }
    }
    return got;
}

uint64_t pico_ice_time_us(const pico_ice *p)
{
    return p->s.icount / (SIM_CLK_HZ / 1000000u);
}
