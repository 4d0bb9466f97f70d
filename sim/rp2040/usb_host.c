/* SPDX-License-Identifier: Apache-2.0 */
/* USB 2.0 chapter 8 and 9 as a host sees them: a SETUP is always DATA0 and always acknowledged; the data
 * stage starts at DATA1 and alternates; the status stage is a DATA1 zero-length packet in the other
 * direction; a short packet (or wLength reached) ends the data stage; more than 64 bytes is babble. */
#include <stdio.h>

#include "usb_host.h"

#define SLICE 2000u /* instructions between retries of a NAKed transaction */

/* The CPU runs while a transaction of `len` data bytes is on the bus: 12 Mbit/s at 4 clk_sys cycles a
 * bit, with about 10 bytes of token, PIDs, CRC, handshake and gaps around the data. A NAKed transaction
 * is retried after SLICE instructions instead. */
static void bus_time(struct usb_host *h, uint32_t len)
{
    rp2040_run(h->s, (len + 10u) * 8u * (SIM_CLK_HZ / 12000000u));
}

static void error(struct usb_host *h, const char *what)
{
    h->errors++;
    fprintf(stderr, "usb host: %s%s%s\n", what, h->s->error[0] ? ": " : "", h->s->error);
}

int usbh_wait_us(struct usb_host *h, uint64_t us)
{
    return rp2040_run(h->s, us * (SIM_CLK_HZ / 1000000u));
}

/* Retries an IN or OUT through NAKs within the budget. */
static enum usb_result in_retry(struct usb_host *h, uint8_t ep, uint8_t *buf, uint32_t *len, int *d1)
{
    for (uint64_t spent = 0; spent < h->nak_budget; spent += SLICE) {
        enum usb_result r = usbd_in(h->s, h->addr, ep, buf, len, d1);
        if (r != USB_NAK) {
            bus_time(h, r == USB_ACK ? *len : 0u);
            return r;
        }
        h->naks++;
        if (rp2040_run(h->s, SLICE) != 0) {
            return USB_TIMEOUT;
        }
    }
    return USB_NAK;
}

static enum usb_result out_retry(struct usb_host *h, uint8_t ep, const uint8_t *buf, uint32_t len, int d1)
{
    for (uint64_t spent = 0; spent < h->nak_budget; spent += SLICE) {
        enum usb_result r = usbd_out(h->s, h->addr, ep, buf, len, d1);
        if (r != USB_NAK) {
            bus_time(h, len);
            return r;
        }
        h->naks++;
        if (rp2040_run(h->s, SLICE) != 0) {
            return USB_TIMEOUT;
        }
    }
    return USB_NAK;
}

static int setup(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index, uint16_t length)
{
    const uint8_t pkt[8] = {type,
                            req,
                            (uint8_t)value,
                            (uint8_t)(value >> 8),
                            (uint8_t)index,
                            (uint8_t)(index >> 8),
                            (uint8_t)length,
                            (uint8_t)(length >> 8)};
    if (usbd_setup(h->s, h->addr, pkt) != USB_ACK) {
        error(h, "SETUP not acknowledged");
        return USBH_ERROR;
    }
    bus_time(h, 8);
    return 0;
}

int usbh_setup_only(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index, uint16_t length)
{
    return setup(h, type, req, value, index, length);
}

int usbh_control_in(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index, uint16_t length,
                    uint8_t *buf)
{
    if (setup(h, type, req, value, index, length) != 0) {
        return USBH_ERROR;
    }
    uint32_t got = 0, n;
    int expect = 1, d1;
    for (;;) {
        enum usb_result r = in_retry(h, 0, buf + got, &n, &d1);
        if (r == USB_STALL) {
            return USBH_STALL;
        }
        if (r != USB_ACK) {
            error(h,
                  r == USB_NAK ? "control IN data stage: NAKed past the budget" : "control IN data stage: no answer");
            return USBH_ERROR;
        }
        if (d1 != expect) {
            error(h, "control IN data stage: wrong data toggle");
        }
        expect ^= 1;
        got += n;
        if (got > length) {
            error(h, "control IN data stage: more than wLength bytes");
            return USBH_ERROR;
        }
        if (n < 64 || got == length) {
            break;
        }
    }
    enum usb_result r = out_retry(h, 0, NULL, 0, 1);
    if (r == USB_STALL) {
        return USBH_STALL;
    }
    if (r != USB_ACK) {
        error(h, "control IN status stage (OUT DATA1 ZLP) not acknowledged");
        return USBH_ERROR;
    }
    if (h->s->usb_seq_errors) {
        error(h, "status stage: the device expected another data toggle");
        h->s->usb_seq_errors = 0;
    }
    return (int)got;
}

int usbh_control_nodata(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index)
{
    uint8_t buf[64];
    uint32_t n;
    int d1;
    if (setup(h, type, req, value, index, 0) != 0) {
        return USBH_ERROR;
    }
    enum usb_result r = in_retry(h, 0, buf, &n, &d1);
    if (r == USB_STALL) {
        return USBH_STALL;
    }
    if (r != USB_ACK) {
        error(h, "control status stage (IN) not answered");
        return USBH_ERROR;
    }
    if (n != 0 || !d1) {
        error(h, "control status stage: not a DATA1 zero-length packet");
        return USBH_ERROR;
    }
    return 0;
}

/* The end of a bulk OUT transaction that was not NAKed. */
static int out_result(struct usb_host *h, enum usb_result r)
{
    if (r == USB_STALL) {
        return USBH_STALL;
    }
    if (r != USB_ACK) {
        error(h, "bulk OUT not acknowledged");
        return USBH_ERROR;
    }
    if (h->s->usb_seq_errors) {
        error(h, "bulk OUT: the device expected the other data toggle (packet dropped)");
        h->s->usb_seq_errors = 0;
        return USBH_ERROR;
    }
    h->bulk_out_data1 ^= 1;
    return 0;
}

int usbh_bulk_out(struct usb_host *h, const uint8_t *buf, uint32_t len)
{
    return out_result(h, out_retry(h, 1, buf, len, h->bulk_out_data1));
}

int usbh_bulk_out_once(struct usb_host *h, const uint8_t *buf, uint32_t len)
{
    enum usb_result r = usbd_out(h->s, h->addr, 1, buf, len, h->bulk_out_data1);
    if (r == USB_NAK) {
        h->naks++;
        return -3;
    }
    bus_time(h, len);
    return out_result(h, r);
}

int usbh_bulk_in_once(struct usb_host *h, uint8_t *buf)
{
    uint32_t n;
    int d1;
    enum usb_result r = usbd_in(h->s, h->addr, 1, buf, &n, &d1);
    if (r == USB_NAK) {
        return -3;
    }
    if (r == USB_STALL) {
        return USBH_STALL;
    }
    if (r != USB_ACK) {
        error(h, "bulk IN: no answer");
        return USBH_ERROR;
    }
    if (d1 != h->bulk_in_data1) {
        error(h, "bulk IN: wrong data toggle");
    }
    h->bulk_in_data1 ^= 1;
    return (int)n;
}
