/* SPDX-License-Identifier: Apache-2.0 */
/* The "usb" transport: a board whose USB goes through a microcontroller
 * running firmware/ (the pico-ice: RP2040 + iCE40UP5K), driven through libusb.
 * Interface 0 has one bulk OUT and one bulk IN endpoint that carry the link's
 * byte stream untouched; vendor control requests check the firmware's version,
 * read the FPGA's state and load a bitstream (decision 0036). Every fact about
 * the interface that can be a pure function lives in usb_proto.c.
 *
 * Unlike an FTDI UART, USB has flow control end to end: the firmware NAKs bulk
 * OUT while its ring toward the FPGA is full and sends bulk IN only what it
 * has. A thread still keeps several bulk-IN transfers in flight while the
 * handle is open, so replies stream in while the caller works, and queues
 * the bytes; recv takes from that queue. A read may end with 0 bytes (the
 * firmware's zero-length packet after a full one): that means "nothing yet".
 *
 * The event thread, the transfers and their errors are usb_bulk.c's, shared
 * with the "ftdi" transport. This file calls only libusb functions that
 * transport_ftdi.c calls too, so each transport's fake libusb
 * (tests/cli/ftdi_fakeusb.c, usb_fakeusb.c) links with the other. */
#include <libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "usb_bulk.h"
#include "usb_proto.h"

#define USB_IN_XFERS 4                 /* bulk-IN transfers kept in flight */
#define USB_IN_XFER_BYTES (16u * 1024) /* each: a whole number of 64-byte packets */
#define USB_OUT_CHUNK (64u * 1024)     /* bytes per bulk-OUT transfer */
/* A bulk-OUT chunk may wait while the FPGA drains the firmware's 512-byte ring;
 * this long without it finishing is a stuck board. */
#define USB_OUT_TIMEOUT_MS 5000u
#define USB_CTRL_TIMEOUT_MS 2000u
#define USB_RX_LIMIT (64u << 20) /* bytes queued and unread before the transport gives up */
#define USB_MAX_CANDIDATES 16    /* 1209:0001 devices considered at open */
#define USB_IFACE 0

static const char board_name[] = "the pico-ice";
static const char udev_hint[] = "add a udev rule (see docs/boards.md)";

typedef struct usb_ctx {
    ntpu_usb_bulk bulk; /* first: the ops take this context for the engine (usb_bulk.h) */
} usb_ctx;

static unsigned out_timeout_ms(void *owner, size_t chunk)
{
    (void)owner;
    (void)chunk;
    return USB_OUT_TIMEOUT_MS;
}

static const ntpu_transport_ops usb_ops = {
    .name = "usb",
    .send = ntpu_usb_bulk_op_send,
    .recv = ntpu_usb_bulk_op_recv,
    .close = ntpu_usb_bulk_op_close,
    /* A board keeps running between programs and may be mid-frame: resync at open. */
    .starts_in_sync = 0,
    /* USB has flow control end to end (the firmware NAKs bulk OUT while its
     * ring toward the FPGA is full): no limit on unanswered bytes. */
    .max_unanswered_tx_bytes = 0,
    /* The pico-ice's core follows the iCEBreaker core (the same iCE40UP5K:
     * same array size N, memories and max_payload, decision 0006). */
    .max_payload_cap = 516,
    /* USB itself does not lose bytes, but the RP2040-to-FPGA hop is the
     * provisional SPI link (docs/firmware.md), unverified on a board: keep
     * the link able to retransmit, as over a UART. */
    .lossy = 1,
};

/* ------------------------------------------------------------------ open */

/* Reads string descriptor idx into out ("" if it has none or it cannot be read).
 * Returns 0 if read, -1 if not. */
static int read_string(libusb_device_handle *h, uint8_t idx, char *out, size_t len)
{
    out[0] = 0;
    if (!idx)
        return -1;
    int r = libusb_get_string_descriptor_ascii(h, idx, (unsigned char *)out, (int)len);
    if (r < 0) {
        out[0] = 0;
        return -1;
    }
    out[r < (int)len ? r : (int)len - 1] = 0;
    return 0;
}

/* The 1209:0001 devices on the bus, opened where possible, with their strings. */
typedef struct usb_found {
    size_t n;
    libusb_device_handle *h[USB_MAX_CANDIDATES];
    char serial[USB_MAX_CANDIDATES][NTPU_USB_SERIAL_MAX];
    char product[USB_MAX_CANDIDATES][64];
    ntpu_usb_candidate cand[USB_MAX_CANDIDATES];
} usb_found;

/* Opens every device with the firmware's VID:PID and reads its serial and product strings. */
static ntpu_status scan(libusb_device **list, ssize_t cnt, usb_found *f, char *err, size_t errlen)
{
    for (ssize_t i = 0; i < cnt && f->n < USB_MAX_CANDIDATES; i++) {
        struct libusb_device_descriptor d;
        if (libusb_get_device_descriptor(list[i], &d) || d.idVendor != NTPU_USB_VID || d.idProduct != NTPU_USB_PID)
            continue;
        size_t k = f->n;
        f->h[k] = NULL;
        f->cand[k] = (ntpu_usb_candidate){f->serial[k], NULL, 0};
        f->serial[k][0] = 0;
        int r = libusb_open(list[i], &f->h[k]);
        if (r == LIBUSB_ERROR_NO_DEVICE) /* unplugged while we looked */
            continue;
        if (r == LIBUSB_ERROR_ACCESS) {
            f->h[k] = NULL;
            f->cand[k].denied = 1;
        } else if (r) {
            return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot open %s (%04x:%04x) at USB bus %u device %u: %s",
                              board_name, NTPU_USB_VID, NTPU_USB_PID, libusb_get_bus_number(list[i]),
                              libusb_get_device_address(list[i]), libusb_strerror(r));
        } else {
            read_string(f->h[k], d.iSerialNumber, f->serial[k], sizeof f->serial[k]);
            if (!read_string(f->h[k], d.iProduct, f->product[k], sizeof f->product[k]))
                f->cand[k].product = f->product[k];
        }
        f->n++;
    }
    return NTPU_OK;
}

/* Finds and opens the board the options name: the one with that serial, or
 * the only one there is. */
static ntpu_status find_device(usb_ctx *c, const ntpu_usb_opts *o, char *err, size_t errlen)
{
    libusb_device **list;
    ssize_t cnt = libusb_get_device_list(c->bulk.usb, &list);
    if (cnt < 0)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot list USB devices to look for %s (%04x:%04x): %s",
                          board_name, NTPU_USB_VID, NTPU_USB_PID, libusb_strerror((int)cnt));
    usb_found *f = calloc(1, sizeof *f);
    if (!f) {
        libusb_free_device_list(list, 1);
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory");
    }
    size_t pick = SIZE_MAX;
    ntpu_status st = scan(list, cnt, f, err, errlen);
    if (st == NTPU_OK)
        st = ntpu_usb_choose(f->cand, f->n, o->serial, &pick, err, errlen);
    for (size_t k = 0; k < f->n; k++) {
        if (st == NTPU_OK && k == pick)
            c->bulk.h = f->h[k];
        else if (f->h[k])
            libusb_close(f->h[k]);
    }
    free(f);
    libusb_free_device_list(list, 1);
    return st;
}

/* Takes interface 0 from a kernel driver, if one has it, and claims it. */
static ntpu_status claim(usb_ctx *c, char *err, size_t errlen)
{
    int r = libusb_kernel_driver_active(c->bulk.h, USB_IFACE);
    if (r == 1) {
        r = libusb_detach_kernel_driver(c->bulk.h, USB_IFACE);
        if (r == 0)
            c->bulk.detached = 1;
        else if (r != LIBUSB_ERROR_NOT_FOUND)
            return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot detach the kernel's driver from %s: %s%s%s",
                              board_name, libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "",
                              r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
    }
    /* r < 0 here means the platform cannot tell (not Linux): claim and see. */
    r = libusb_claim_interface(c->bulk.h, USB_IFACE);
    if (r == LIBUSB_ERROR_BUSY)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE,
                          "interface 0 of %s is in use by another program (another ntpu?)", board_name);
    if (r == LIBUSB_ERROR_NO_DEVICE)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "%s left the USB bus while being opened", board_name);
    if (r)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot claim interface 0 of %s: %s%s%s", board_name,
                          libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "",
                          r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
    c->bulk.iface = USB_IFACE;
    c->bulk.claimed = 1;
    return NTPU_OK;
}

/* One vendor request; *got (may be NULL) is the length of the IN data stage. */
static ntpu_status control(usb_ctx *c, ntpu_usb_ctrl q, uint8_t *data, int *got, char *err, size_t errlen)
{
    int r = libusb_control_transfer(c->bulk.h, q.request_type, q.request, q.value, q.index, data, q.length,
                                    USB_CTRL_TIMEOUT_MS);
    if (r >= 0) {
        if (got)
            *got = r;
        return NTPU_OK;
    }
    if (r == LIBUSB_ERROR_NO_DEVICE)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "%s left the USB bus during %s", board_name, q.what);
    if (r == LIBUSB_ERROR_TIMEOUT)
        return ntpu_errst(err, errlen, NTPU_ERR_TIMEOUT, "%s did not answer %s within %u ms", board_name, q.what,
                          USB_CTRL_TIMEOUT_MS);
    return ntpu_errst(err, errlen, NTPU_ERR_IO, "%s refused %s (request 0x%02X): %s%s", board_name, q.what, q.request,
                      libusb_strerror(r),
                      r == LIBUSB_ERROR_PIPE ? "; is it running the nanoTPU firmware (docs/firmware.md)?" : "");
}

/* GET_VERSION, then for a link (need_fpga) GET_STATUS: the FPGA must be configured. */
static ntpu_status check_board(usb_ctx *c, int need_fpga, char *err, size_t errlen)
{
    uint8_t buf[NTPU_USB_STATUS_LEN];
    int got = 0;
    ntpu_status st = control(c, ntpu_usb_req_get_version(), buf, &got, err, errlen);
    if (st == NTPU_OK)
        st = ntpu_usb_check_version(buf, got, NULL, NULL, err, errlen);
    if (st != NTPU_OK || !need_fpga)
        return st;
    ntpu_usb_status s;
    st = control(c, ntpu_usb_req_get_status(), buf, &got, err, errlen);
    if (st == NTPU_OK)
        st = ntpu_usb_parse_status(buf, got, &s, err, errlen);
    if (st != NTPU_OK)
        return st;
    if (s.flags & NTPU_USB_STATUS_LOADING)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE,
                          "%s is in the middle of loading a bitstream (an earlier 'ntpu flash' was cut short): run "
                          "'ntpu flash -d usb FILE.bin' again",
                          board_name);
    if (!(s.flags & NTPU_USB_STATUS_CDONE))
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE,
                          "the FPGA on %s is not configured (CDONE low): load the nanoTPU bitstream with 'ntpu flash "
                          "-d usb FILE.bin' (docs/firmware.md)",
                          board_name);
    return NTPU_OK;
}

/* Puts the bulk engine to work on the claimed interface. */
static ntpu_status start_io(usb_ctx *c, char *err, size_t errlen)
{
    c->bulk.cfg = (ntpu_usb_bulk_cfg){
        .name = board_name,
        .unplugged = "the pico-ice was unplugged (it left the USB bus); close the device and open it again",
        .unplugged_status = NTPU_ERR_NO_DEVICE,
        .failed_hint = "",
        .stall_hint = "board reset?",
        .timeout_hint = "is the FPGA running the nanoTPU design?",
        .in_xfers = USB_IN_XFERS,
        .in_bytes = USB_IN_XFER_BYTES,
        .out_chunk = USB_OUT_CHUNK,
        .rx_limit = USB_RX_LIMIT,
        .ep_in = NTPU_USB_EP_IN,
        .ep_out = NTPU_USB_EP_OUT,
        .owner = c,
        .out_timeout_ms = out_timeout_ms,
    };
    return ntpu_usb_bulk_start(&c->bulk, err, errlen);
}

static ntpu_status open_ctx(usb_ctx *c, const char *opts, int need_fpga, char *err, size_t errlen)
{
    ntpu_usb_opts o;
    if (ntpu_usb_parse_opts(opts, &o, err, errlen))
        return NTPU_ERR_INVALID_ARG;
    ntpu_status st = ntpu_usb_bulk_init(&c->bulk, err, errlen);
    if (st != NTPU_OK)
        return st;
    /* A context of our own: no state shared with other handles or with the
     * application's own use of libusb. */
    int r = libusb_init(&c->bulk.usb);
    if (r) {
        c->bulk.usb = NULL;
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot use USB here to look for %s (%04x:%04x): %s: %s",
                          board_name, NTPU_USB_VID, NTPU_USB_PID, "libusb_init", libusb_strerror(r));
    }
    st = find_device(c, &o, err, errlen);
    if (st == NTPU_OK)
        st = claim(c, err, errlen);
    if (st == NTPU_OK)
        st = check_board(c, need_fpga, err, errlen);
    if (st == NTPU_OK)
        st = start_io(c, err, errlen);
    return st;
}

static ntpu_status open_usb(const char *opts, int need_fpga, usb_ctx **out, char *err, size_t errlen)
{
    usb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory");
    ntpu_status st = open_ctx(c, opts, need_fpga, err, errlen);
    if (st != NTPU_OK) {
        ntpu_usb_bulk_op_close(c);
        return st;
    }
    *out = c;
    return NTPU_OK;
}

ntpu_status ntpu_transport_usb_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    usb_ctx *c = NULL;
    ntpu_status st = open_usb(opts, 1, &c, err, errlen);
    if (st != NTPU_OK)
        return st;
    out->ops = &usb_ops;
    out->ctx = c;
    return NTPU_OK;
}

/* ------------------------------------------------------------------ loading a bitstream */

ntpu_status ntpu_usb_load_bitstream(const char *opts, const uint8_t *bits, size_t n, char *err, size_t errlen)
{
    /* Checked before anything is opened: a malformed file never reaches the board. */
    ntpu_status st = ntpu_usb_check_bitstream(bits, n, NULL, err, errlen);
    if (st != NTPU_OK)
        return st;
    usb_ctx *c = NULL;
    st = open_usb(opts, 0, &c, err, errlen);
    if (st != NTPU_OK)
        return st;
    st = control(c, ntpu_usb_req_load_begin(), NULL, NULL, err, errlen);
    if (st != NTPU_OK) {
        ntpu_usb_bulk_op_close(c);
        return st;
    }
    st = ntpu_usb_bulk_send(&c->bulk, bits, n, err, errlen);
    if (st != NTPU_OK && st != NTPU_ERR_NO_DEVICE) {
        /* Best effort: end the load, so the board does not stay cut off from its link. */
        uint8_t ignored;
        char spare[NTPU_ERRMSG_LEN];
        control(c, ntpu_usb_req_load_end(), &ignored, NULL, spare, sizeof spare);
    }
    if (st == NTPU_OK) {
        /* The firmware sends the bulk bytes it still holds to the FPGA before it answers. */
        uint8_t cdone = 0;
        int got = 0;
        st = control(c, ntpu_usb_req_load_end(), &cdone, &got, err, errlen);
        if (st == NTPU_OK)
            st = ntpu_usb_check_cdone(&cdone, got, err, errlen);
    }
    ntpu_usb_bulk_op_close(c);
    return st;
}
