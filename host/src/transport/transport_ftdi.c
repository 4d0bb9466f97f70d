/* SPDX-License-Identifier: Apache-2.0 */
/* The "ftdi" transport: a board behind an FTDI USB-UART chip (the
 * iCEBreaker's FT2232H, the ULX3S's FT231X), one channel of it used as a UART
 * to the FPGA, driven through libusb.
 *
 * The board's UART has two wires and so no flow control: once the chip's 4 KB
 * receive buffer is full, bytes from the FPGA are lost (about 13 ms at
 * 3 Mbaud), and the link lets the device run up to 64 KB of replies ahead of
 * the reader. So a thread of this transport keeps several bulk-IN transfers in
 * flight the whole time the handle is open and queues the data bytes; recv
 * takes from that queue. Every bulk-IN packet starts with two status bytes,
 * stripped by ftdi_proto.c, which also holds every other fact about the chip
 * as pure, unit-tested functions.
 *
 * The event thread, the transfers and their errors are usb_bulk.c's, shared
 * with the "usb" transport; this file adds the stripping of the status bytes
 * and the UART's line errors to it. */
#include <libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftdi_proto.h"
#include "internal.h"
#include "usb_bulk.h"

#define FTDI_IN_XFERS 8                 /* bulk-IN transfers kept in flight */
#define FTDI_IN_XFER_BYTES (16u * 1024) /* each: a whole number of 512- and 64-byte packets */
#define FTDI_OUT_CHUNK (64u * 1024)     /* bytes per bulk-OUT transfer */
#define FTDI_CTRL_TIMEOUT_MS 1000u
#define FTDI_LATENCY_MS 1u
#define FTDI_RX_LIMIT (64u << 20) /* bytes queued and unread before the transport gives up */
#define FTDI_OUT_MARGIN_MS 1000u  /* write timeout beyond twice the time on the wire */

static const char udev_hint[] = "add a udev rule (see docs/boards.md)";

typedef struct ftdi_ctx {
    ntpu_usb_bulk bulk;         /* first: the ops take this context for the engine (usb_bulk.h) */
    const ntpu_ftdi_chip *chip; /* the one found */
    unsigned iface;
    uint8_t ep_in, ep_out;
    size_t max_packet;
    uint32_t baud;
    char name[32];      /* "the FT2232H", for the bulk engine's messages */
    char unplugged[80]; /* its message when the chip leaves the bus */
    /* Guarded by bulk.mu: the bulk engine calls the hooks below with it held. */
    ntpu_ftdi_status line;
    unsigned line_reported; /* error bits already put into a message */
} ftdi_ctx;

/* ------------------------------------------------------------------ helpers */

static char iface_letter(unsigned iface)
{
    return iface == NTPU_FTDI_IFACE_A ? 'A' : 'B';
}

/* Appends what the UART reported since the last message, if anything, to err
 * (the bulk engine's recv_note hook). */
static void add_line_errors(void *owner, char *err, size_t errlen)
{
    ftdi_ctx *c = owner;
    unsigned fresh = c->line.errors & ~c->line_reported;
    if (!fresh || !err || !errlen)
        return;
    c->line_reported |= fresh;
    char names[96];
    size_t used = strlen(err);
    if (used + 1 < errlen)
        snprintf(err + used, errlen - used, " (the %s's UART reported: %s)", c->chip->name,
                 ntpu_ftdi_line_errors_str(fresh, names, sizeof names));
}

/* One bulk-IN transfer onto the queue without its status bytes (the push hook). */
static int push_stripped(void *owner, ntpu_rx_queue *q, const uint8_t *data, size_t n)
{
    ftdi_ctx *c = owner;
    return ntpu_ftdi_rx_push(q, data, n, c->max_packet, &c->line);
}

/* Ten bits a byte on the wire; allow twice that plus a margin before calling the chip stuck. */
static unsigned out_timeout_ms(void *owner, size_t chunk)
{
    ftdi_ctx *c = owner;
    return (unsigned)((uint64_t)chunk * 10u * 2000u / c->baud) + FTDI_OUT_MARGIN_MS;
}

static const ntpu_transport_ops ftdi_ops = {
    .name = "ftdi",
    .send = ntpu_usb_bulk_op_send,
    .recv = ntpu_usb_bulk_op_recv,
    .close = ntpu_usb_bulk_op_close,
    /* A board keeps running between programs and may be mid-frame: resync at open. */
    .starts_in_sync = 0,
    /* The iCEBreaker's UART has no flow control and feeds a 2,048-byte FIFO
     * (docs/boards.md). Worst case, after a link fault, the FIFO holds the
     * abandoned frames (up to this limit) plus recovery's max_payload + 8 zeros
     * and its 9-byte SYNC: 1,500 + 524 + 9 = 2,033 bytes still fit. */
    .max_unanswered_tx_bytes = 1500,
    /* The board's own max_payload (decision 0006). */
    .max_payload_cap = 516,
    /* A UART can lose and corrupt bytes. */
    .lossy = 1,
};

/* ------------------------------------------------------------------ open */

/* Reads a device's serial number ("" if it has none or it cannot be read). */
static void read_serial(libusb_device_handle *h, const struct libusb_device_descriptor *d, char *out, size_t len)
{
    out[0] = 0;
    if (!d->iSerialNumber)
        return;
    int r = libusb_get_string_descriptor_ascii(h, d->iSerialNumber, (unsigned char *)out, (int)len);
    if (r < 0)
        out[0] = 0;
    else
        out[r < (int)len ? r : (int)len - 1] = 0;
}

/* Appends ", name" (or "name" at the start) to a list, as room allows. */
static void list_add(char *list, size_t len, const char *name)
{
    size_t used = strlen(list);
    if (used + 1 < len)
        snprintf(list + used, len - used, "%s%s", used ? ", " : "", name);
}

/* The chip of a USB device if it is one the options accept, else NULL. */
static const ntpu_ftdi_chip *wanted_chip(libusb_device *dev, const ntpu_ftdi_opts *o)
{
    struct libusb_device_descriptor d;
    if (libusb_get_device_descriptor(dev, &d) || d.idVendor != NTPU_FTDI_VID)
        return NULL;
    const ntpu_ftdi_chip *chip = ntpu_ftdi_chip_by_pid(d.idProduct);
    return chip && (!o->chip || o->chip == chip) ? chip : NULL;
}

/* "FT2232H (0403:6010)", or every known chip when the options name no board. */
static const char *wanted_str(const ntpu_ftdi_opts *o, char *buf, size_t len)
{
    buf[0] = 0;
    for (size_t i = 0; i < NTPU_FTDI_NCHIPS; i++) {
        const ntpu_ftdi_chip *chip = &ntpu_ftdi_chips[i];
        if (o->chip && o->chip != chip)
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s (%04x:%04x)", used ? " or " : "", chip->name, NTPU_FTDI_VID, chip->pid);
    }
    return buf;
}

/* Finds and opens the board the options name: the one with that serial, or
 * the only one there is. */
static ntpu_status find_device(ftdi_ctx *c, const ntpu_ftdi_opts *o, char *err, size_t errlen)
{
    char what[96];
    wanted_str(o, what, sizeof what);
    libusb_device **list;
    ssize_t cnt = libusb_get_device_list(c->bulk.usb, &list);
    if (cnt < 0) {
        ntpu_errf(err, errlen, "cannot list USB devices to look for the board's %s: %s", what,
                  libusb_strerror((int)cnt));
        return NTPU_ERR_NO_DEVICE;
    }
    unsigned found = 0, denied = 0;
    char seen[160] = "";
    libusb_device *denied_dev = NULL;
    ntpu_status st = NTPU_OK;
    for (ssize_t i = 0; i < cnt && !c->bulk.h; i++) {
        const ntpu_ftdi_chip *chip = wanted_chip(list[i], o);
        if (!chip)
            continue;
        found++;
        libusb_device_handle *h;
        int r = libusb_open(list[i], &h);
        if (r == LIBUSB_ERROR_ACCESS) {
            denied++;
            denied_dev = list[i];
            continue;
        }
        if (r == LIBUSB_ERROR_NO_DEVICE) /* unplugged while we looked */
            continue;
        if (r) {
            ntpu_errf(err, errlen, "cannot open the %s (%04x:%04x) at USB bus %u device %u: %s", chip->name,
                      NTPU_FTDI_VID, chip->pid, libusb_get_bus_number(list[i]), libusb_get_device_address(list[i]),
                      libusb_strerror(r));
            st = NTPU_ERR_NO_DEVICE;
            break;
        }
        struct libusb_device_descriptor d;
        libusb_get_device_descriptor(list[i], &d);
        char serial[NTPU_FTDI_SERIAL_MAX];
        read_serial(h, &d, serial, sizeof serial);
        if (!o->serial[0] || !strcmp(serial, o->serial)) {
            c->bulk.h = h;
            c->chip = chip;
        } else {
            list_add(seen, sizeof seen, serial[0] ? serial : "(no serial)");
            libusb_close(h);
        }
    }
    /* Without a serial, a second board makes the choice ambiguous: a JTAG
     * adapter on the same chip would be sent the link's bytes. */
    if (st == NTPU_OK && c->bulk.h && !o->serial[0]) {
        for (ssize_t i = 0; i < cnt; i++) {
            if (list[i] == libusb_get_device(c->bulk.h) || !wanted_chip(list[i], o))
                continue;
            ntpu_errf(err, errlen,
                      "more than one %s on USB: name the board with ftdi:serial=S (lsusb -v -d 0403: shows the "
                      "serials)",
                      what);
            st = NTPU_ERR_INVALID_ARG;
            break;
        }
    }
    if (st == NTPU_OK && !c->bulk.h) {
        if (denied)
            ntpu_errf(err, errlen, "permission denied opening %04x:%04x (USB bus %u device %u): %s", NTPU_FTDI_VID,
                      wanted_chip(denied_dev, o)->pid, libusb_get_bus_number(denied_dev),
                      libusb_get_device_address(denied_dev), udev_hint);
        else if (!found)
            ntpu_errf(err, errlen, "no %s found on USB: is the %s plugged in?", what,
                      o->chip ? o->chip->board_name : "iCEBreaker or ULX3S");
        else
            ntpu_errf(err, errlen, "no %s with serial '%s' on USB (found: %s)", what, o->serial,
                      seen[0] ? seen : "none that could be opened");
        st = NTPU_ERR_NO_DEVICE;
    }
    if (st != NTPU_OK && c->bulk.h) {
        libusb_close(c->bulk.h);
        c->bulk.h = NULL;
    }
    libusb_free_device_list(list, 1);
    return st;
}

/* Takes the interface from the kernel's serial driver and claims it. */
static ntpu_status claim(ftdi_ctx *c, char *err, size_t errlen)
{
    int r = libusb_kernel_driver_active(c->bulk.h, (int)c->iface);
    if (r == 1) {
        r = libusb_detach_kernel_driver(c->bulk.h, (int)c->iface);
        if (r == 0)
            c->bulk.detached = 1;
        else if (r != LIBUSB_ERROR_NOT_FOUND) {
            ntpu_errf(err, errlen, "cannot detach the kernel's serial driver from interface %c of the %s: %s%s%s",
                      iface_letter(c->iface), c->chip->name, libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "",
                      r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
            return NTPU_ERR_NO_DEVICE;
        }
    }
    /* r < 0 here means the platform cannot tell (not Linux): claim and see. */
    r = libusb_claim_interface(c->bulk.h, (int)c->iface);
    if (r == LIBUSB_ERROR_BUSY) {
        ntpu_errf(err, errlen,
                  "interface %c of the %s is in use by another program (another ntpu, iceprog, openFPGALoader "
                  "or a serial terminal?)",
                  iface_letter(c->iface), c->chip->name);
        return NTPU_ERR_NO_DEVICE;
    }
    if (r) {
        ntpu_errf(err, errlen, "cannot claim interface %c of the %s: %s%s%s", iface_letter(c->iface), c->chip->name,
                  libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "", r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
        return NTPU_ERR_NO_DEVICE;
    }
    c->bulk.iface = (int)c->iface;
    c->bulk.claimed = 1;
    return NTPU_OK;
}

static ntpu_status control(ftdi_ctx *c, ntpu_ftdi_ctrl q, char *err, size_t errlen)
{
    int r =
        libusb_control_transfer(c->bulk.h, q.request_type, q.request, q.value, q.index, NULL, 0, FTDI_CTRL_TIMEOUT_MS);
    if (r >= 0)
        return NTPU_OK;
    if (r == LIBUSB_ERROR_NO_DEVICE) {
        ntpu_errf(err, errlen, "the %s left the USB bus while being set up (%s)", c->chip->name, q.what);
        return NTPU_ERR_NO_DEVICE;
    }
    ntpu_errf(err, errlen, "the %s refused '%s' (request 0x%02X, value 0x%04X, index 0x%04X): %s", c->chip->name,
              q.what, q.request, q.value, q.index, libusb_strerror(r));
    return NTPU_ERR_IO;
}

/* The chip from its reset state to a UART at the chosen rate, 8N1, no flow
 * control, 1 ms latency, with both buffers empty. */
static ntpu_status configure(ftdi_ctx *c, char *err, size_t errlen)
{
    ntpu_ftdi_baud b;
    if (ntpu_ftdi_baud_encode(c->chip, c->baud, c->iface, &b)) {
        ntpu_errf(err, errlen, "the %s cannot run at %u baud", c->chip->name, (unsigned)c->baud);
        return NTPU_ERR_INVALID_ARG;
    }
    const ntpu_ftdi_ctrl steps[] = {
        ntpu_ftdi_req_reset(c->iface),
        /* Channel A may have been left in MPSSE mode by iceprog or openFPGALoader. */
        ntpu_ftdi_req_bitmode(c->iface, NTPU_FTDI_BITMODE_RESET, 0),
        ntpu_ftdi_req_baud(&b),
        ntpu_ftdi_req_line_8n1(c->iface),
        ntpu_ftdi_req_flow_none(c->iface),
        ntpu_ftdi_req_latency(c->iface, FTDI_LATENCY_MS),
        ntpu_ftdi_req_purge(c->iface, NTPU_FTDI_PURGE_RX),
        ntpu_ftdi_req_purge(c->iface, NTPU_FTDI_PURGE_TX),
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        ntpu_status st = control(c, steps[i], err, errlen);
        if (st != NTPU_OK)
            return st;
    }
    return NTPU_OK;
}

/* Puts the bulk engine to work on the claimed channel. */
static ntpu_status start_io(ftdi_ctx *c, char *err, size_t errlen)
{
    snprintf(c->name, sizeof c->name, "the %s", c->chip->name);
    snprintf(c->unplugged, sizeof c->unplugged, "the board was unplugged (the %s left the USB bus)", c->chip->name);
    c->bulk.cfg = (ntpu_usb_bulk_cfg){
        .name = c->name,
        .unplugged = c->unplugged,
        .unplugged_status = NTPU_ERR_IO,
        .failed_hint = " (board unplugged?)",
        .stall_hint = "board unplugged or reset?",
        .timeout_hint = "is the board's UART stuck?",
        /* No timeout on reads: the chip answers every read within its latency timer anyway. */
        .in_xfers = FTDI_IN_XFERS,
        .in_bytes = FTDI_IN_XFER_BYTES,
        .out_chunk = FTDI_OUT_CHUNK,
        .rx_limit = FTDI_RX_LIMIT,
        .ep_in = c->ep_in,
        .ep_out = c->ep_out,
        .owner = c,
        .push = push_stripped,
        .out_timeout_ms = out_timeout_ms,
        .recv_note = add_line_errors,
    };
    return ntpu_usb_bulk_start(&c->bulk, err, errlen);
}

static ntpu_status open_ctx(ftdi_ctx *c, const char *opts, char *err, size_t errlen)
{
    ntpu_ftdi_opts o;
    if (ntpu_ftdi_parse_opts(opts, &o, err, errlen))
        return NTPU_ERR_INVALID_ARG;

    ntpu_status st = ntpu_usb_bulk_init(&c->bulk, err, errlen);
    if (st != NTPU_OK)
        return st;

    /* A context of our own: no state shared with other handles or with the
     * application's own use of libusb. */
    int r = libusb_init(&c->bulk.usb);
    if (r) {
        c->bulk.usb = NULL;
        char what[96];
        ntpu_errf(err, errlen, "cannot use USB here to look for the board's %s: libusb_init: %s",
                  wanted_str(&o, what, sizeof what), libusb_strerror(r));
        return NTPU_ERR_NO_DEVICE;
    }
    st = find_device(c, &o, err, errlen);
    if (st != NTPU_OK)
        return st;
    /* The rate and channel follow the chip found, unless the options chose them. */
    if (ntpu_ftdi_settle(&o, c->chip, &c->baud, &c->iface, err, errlen))
        return NTPU_ERR_INVALID_ARG;
    c->ep_in = ntpu_ftdi_ep_in(c->iface);
    c->ep_out = ntpu_ftdi_ep_out(c->iface);
    r = libusb_get_max_packet_size(libusb_get_device(c->bulk.h), c->ep_in);
    if (r < 3) {
        ntpu_errf(err, errlen, "the %s has no usable bulk-IN endpoint 0x%02X for interface %c (%s)", c->chip->name,
                  c->ep_in, iface_letter(c->iface), r < 0 ? libusb_strerror(r) : "packets too small");
        return NTPU_ERR_NO_DEVICE;
    }
    /* 512 at high speed; 64 if the board sits behind a full-speed hub. */
    c->max_packet = (size_t)r;
    st = claim(c, err, errlen);
    if (st == NTPU_OK)
        st = configure(c, err, errlen);
    if (st == NTPU_OK)
        st = start_io(c, err, errlen);
    return st;
}

ntpu_status ntpu_transport_ftdi_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    ftdi_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        ntpu_errf(err, errlen, "out of memory");
        return NTPU_ERR_NO_MEMORY;
    }
    ntpu_status st = open_ctx(c, opts, err, errlen);
    if (st != NTPU_OK) {
        ntpu_usb_bulk_op_close(c);
        return st;
    }
    out->ops = &ftdi_ops;
    out->ctx = c;
    return NTPU_OK;
}
