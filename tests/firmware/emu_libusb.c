/* SPDX-License-Identifier: Apache-2.0 */
/* The device side of the fake libusb as the emulated pico-ice: descriptors and strings come from the firmware
 * through GET_DESCRIPTOR, vendor requests through control transfers, and bulk transfers move 64-byte packets
 * through the emulated controller, NAKs and all. Each round of fakeusb_core's event loop moves at most about
 * a millisecond of full-speed traffic per transfer and runs the CPU (and the FPGA behind it) meanwhile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_libusb.h"
#include "fakeusb_core.h"
#include "usb_requests.h"

#define PACKETS_PER_ROUND 16 /* a full-speed frame carries 19 bulk packets at most */
#define NAK_WAIT_US 50       /* the CPU runs this long after a NAKed IN before the next try */

static struct usb_host *host;
static struct libusb_device the_device = {0};

void emu_libusb_attach(struct usb_host *h)
{
    host = h;
}

int LIBUSB_CALL libusb_init(libusb_context **ctx)
{
    *ctx = calloc(1, sizeof **ctx);
    fk_inits++;
    return *ctx ? 0 : LIBUSB_ERROR_NO_MEM;
}

ssize_t LIBUSB_CALL libusb_get_device_list(libusb_context *ctx, libusb_device ***list)
{
    (void)ctx;
    *list = calloc(2, sizeof **list);
    if (!*list) {
        return LIBUSB_ERROR_NO_MEM;
    }
    int n = host && !fk_unplugged;
    (*list)[0] = n ? &the_device : NULL;
    return n;
}

int LIBUSB_CALL libusb_get_device_descriptor(libusb_device *dev, struct libusb_device_descriptor *d)
{
    (void)dev;
    uint8_t b[18];
    pthread_mutex_lock(&fk_mu);
    int n = usbh_control_in(host, 0x80, 6, 0x0100, 0, sizeof b, b);
    pthread_mutex_unlock(&fk_mu);
    if (n != (int)sizeof b) {
        return LIBUSB_ERROR_IO;
    }
    memcpy(d, b, sizeof b); /* the structure is the descriptor's bytes, little-endian, as on this host */
    return 0;
}

int LIBUSB_CALL libusb_get_max_packet_size(libusb_device *dev, unsigned char endpoint)
{
    (void)dev;
    return endpoint == NTPU_USB_EP_IN || endpoint == NTPU_USB_EP_OUT ? 64 : LIBUSB_ERROR_NOT_FOUND;
}

int LIBUSB_CALL libusb_open(libusb_device *dev, libusb_device_handle **h)
{
    *h = calloc(1, sizeof **h);
    if (!*h) {
        return LIBUSB_ERROR_NO_MEM;
    }
    (*h)->dev = dev;
    fk_opens++;
    return 0;
}

/* GET_DESCRIPTOR(string) in language 0x0409, as libusb does it, UTF-16LE to ASCII ('?' beyond it). */
int LIBUSB_CALL libusb_get_string_descriptor_ascii(libusb_device_handle *h, uint8_t idx, unsigned char *data,
                                                   int length)
{
    (void)h;
    uint8_t b[255];
    pthread_mutex_lock(&fk_mu);
    int n = fk_unplugged ? LIBUSB_ERROR_NO_DEVICE
                         : usbh_control_in(host, 0x80, 6, (uint16_t)(0x0300 | idx), 0x0409, sizeof b, b);
    pthread_mutex_unlock(&fk_mu);
    if (n < 0) {
        return n == USBH_STALL ? LIBUSB_ERROR_PIPE : LIBUSB_ERROR_IO;
    }
    if (n < 2 || b[1] != 3 || b[0] > n) {
        return LIBUSB_ERROR_IO;
    }
    int k = 0;
    for (int i = 2; i + 1 < b[0] && k < length - 1; i += 2) {
        data[k++] = b[i + 1] ? '?' : b[i];
    }
    data[k] = 0;
    return k;
}

int LIBUSB_CALL libusb_claim_interface(libusb_device_handle *h, int iface)
{
    (void)h;
    if (iface != 0) {
        return LIBUSB_ERROR_NOT_FOUND;
    }
    fk_claims++;
    return 0;
}

int LIBUSB_CALL libusb_control_transfer(libusb_device_handle *h, uint8_t rt, uint8_t req, uint16_t value,
                                        uint16_t index, unsigned char *data, uint16_t len, unsigned int timeout)
{
    (void)h;
    (void)timeout;
    pthread_mutex_lock(&fk_mu);
    int r;
    if (fk_unplugged) {
        r = LIBUSB_ERROR_NO_DEVICE;
    } else if (rt & 0x80) {
        r = usbh_control_in(host, rt, req, value, index, len, data);
    } else if (len == 0) {
        r = usbh_control_nodata(host, rt, req, value, index);
    } else {
        r = USBH_STALL; /* the firmware takes no OUT data stage */
    }
    pthread_mutex_unlock(&fk_mu);
    return r == USBH_STALL ? LIBUSB_ERROR_PIPE : r < 0 ? LIBUSB_ERROR_IO : r;
}

int fk_model_has_endpoint(uint8_t ep)
{
    return ep == NTPU_USB_EP_IN || ep == NTPU_USB_EP_OUT;
}

static int failed(struct libusb_transfer *t, int r)
{
    t->status = r == USBH_STALL ? LIBUSB_TRANSFER_STALL : LIBUSB_TRANSFER_ERROR;
    fprintf(stderr, "emulated pico-ice: bulk transfer on 0x%02x failed (%d)%s%s\n", t->endpoint, r,
            host->s->error[0] ? ": " : "", host->s->error);
    return 1;
}

int fk_model_move(fk_xfer *x)
{
    struct libusb_transfer *t = x->t;
    size_t len = (size_t)t->length;
    t->status = LIBUSB_TRANSFER_COMPLETED;
    if (!(t->endpoint & 0x80)) {
        for (int k = 0; k < PACKETS_PER_ROUND && x->done < len; k++) {
            uint32_t n = len - x->done < 64u ? (uint32_t)(len - x->done) : 64u;
            int r = usbh_bulk_out_once(host, t->buffer + x->done, n);
            if (r == -3) { /* NAK: the firmware's ring toward the FPGA is full; IN goes on meanwhile */
                usbh_wait_us(host, NAK_WAIT_US);
                continue;
            }
            if (r != 0) {
                return failed(t, r);
            }
            x->done += n;
        }
        return x->done == len;
    }
    for (int k = 0; k < PACKETS_PER_ROUND; k++) {
        uint8_t pkt[64];
        int r = usbh_bulk_in_once(host, pkt);
        if (r == -3) { /* NAK: nothing yet */
            usbh_wait_us(host, NAK_WAIT_US);
            continue;
        }
        if (r < 0 || x->done + (size_t)r > len) {
            return failed(t, r < 0 ? r : USBH_ERROR); /* an overflow, for libusb */
        }
        memcpy(t->buffer + x->done, pkt, (size_t)r);
        x->done += (size_t)r;
        if (r < 64 || x->done == len) {
            return 1;
        }
    }
    return 0;
}
