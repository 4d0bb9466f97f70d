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
 * Locking: the callbacks run on the event thread and touch the shared state
 * under mu; libusb calls are never made while holding mu. */
#include <libusb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftdi_proto.h"
#include "internal.h"

#define FTDI_IN_XFERS 8                 /* bulk-IN transfers kept in flight */
#define FTDI_IN_XFER_BYTES (16u * 1024) /* each: a whole number of 512- and 64-byte packets */
#define FTDI_OUT_CHUNK (64u * 1024)     /* bytes per bulk-OUT transfer */
#define FTDI_CTRL_TIMEOUT_MS 1000u
#define FTDI_LATENCY_MS 1u
#define FTDI_RX_LIMIT (64u << 20)  /* bytes queued and unread before the transport gives up */
#define FTDI_CLOSE_WAIT_MS 2000u   /* for cancelled transfers to come back */
#define FTDI_EVENT_SLICE_US 100000 /* the event thread looks at its stop flag this often */
#define FTDI_OUT_MARGIN_MS 1000u   /* write timeout beyond twice the time on the wire */
#define FTDI_MSG_LEN 200

static const char udev_hint[] = "add a udev rule (see docs/boards.md)";

typedef struct ftdi_ctx ftdi_ctx;

typedef struct ftdi_in_slot {
    ftdi_ctx *c;
    struct libusb_transfer *xfer;
    int busy; /* submitted and its callback not yet run */
} ftdi_in_slot;

struct ftdi_ctx {
    libusb_context *usb;
    libusb_device_handle *h;
    const ntpu_ftdi_chip *chip; /* the one found */
    unsigned iface;
    uint8_t ep_in, ep_out;
    size_t max_packet;
    uint32_t baud;
    int claimed;  /* the interface is ours: release it at close */
    int detached; /* we detached the kernel driver: reattach it at close */

    pthread_t thread;
    int thread_started;
    int cv_ready, mu_ready;
    /* Everything below is shared with the event thread and guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast on every completion and failure */
    int stop;          /* the event thread returns */
    int closing;       /* no more resubmits */
    ftdi_in_slot in[FTDI_IN_XFERS];
    unsigned in_busy;
    struct libusb_transfer *out;
    uint8_t *out_buf; /* the bytes of the write in flight: ours, so a stuck transfer never points at the caller's */
    int out_busy;
    enum libusb_transfer_status out_status;
    int out_actual;
    ntpu_rx_queue rx;
    ntpu_ftdi_status line;
    unsigned line_reported; /* error bits already put into a message */
    ntpu_status fail;       /* the first fatal USB error: every later call returns it */
    char fail_msg[FTDI_MSG_LEN];
};

/* ------------------------------------------------------------------ helpers */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits on cv (mu held) until at most the monotonic time deadline_ms. */
static void wait_until(ftdi_ctx *c, uint64_t deadline_ms)
{
    struct timespec ts = {(time_t)(deadline_ms / 1000u), (long)(deadline_ms % 1000u) * 1000000L};
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

static char iface_letter(unsigned iface)
{
    return iface == NTPU_FTDI_IFACE_A ? 'A' : 'B';
}

/* Records the first fatal error (mu held) and wakes every waiter. */
static void set_fail(ftdi_ctx *c, ntpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_fail(ftdi_ctx *c, ntpu_status st, const char *fmt, ...)
{
    if (c->fail == NTPU_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->fail_msg, sizeof c->fail_msg, fmt, ap);
        va_end(ap);
        c->fail = st;
    }
    pthread_cond_broadcast(&c->cv);
}

/* The fatal error a failed transfer means (mu held). */
static void fail_transfer(ftdi_ctx *c, enum libusb_transfer_status s, uint8_t ep)
{
    switch (s) {
    case LIBUSB_TRANSFER_NO_DEVICE:
        set_fail(c, NTPU_ERR_IO, "the board was unplugged (the %s left the USB bus)", c->chip->name);
        break;
    case LIBUSB_TRANSFER_STALL:
        set_fail(c, NTPU_ERR_IO, "USB pipe error: endpoint 0x%02X of the %s stalled (board unplugged or reset?)", ep,
                 c->chip->name);
        break;
    case LIBUSB_TRANSFER_OVERFLOW:
        set_fail(c, NTPU_ERR_IO, "USB overflow on endpoint 0x%02X of the %s", ep, c->chip->name);
        break;
    default:
        set_fail(c, NTPU_ERR_IO, "USB transfer on endpoint 0x%02X of the %s failed (board unplugged?)", ep,
                 c->chip->name);
        break;
    }
}

/* The error of a failed libusb call during a transfer (mu held). */
static void fail_call(ftdi_ctx *c, int r, const char *what)
{
    if (r == LIBUSB_ERROR_NO_DEVICE)
        set_fail(c, NTPU_ERR_IO, "the board was unplugged (the %s left the USB bus)", c->chip->name);
    else
        set_fail(c, NTPU_ERR_IO, "%s on the %s failed: %s (board unplugged?)", what, c->chip->name, libusb_strerror(r));
}

/* Appends what the UART reported since the last message, if anything, to err. */
static void add_line_errors(ftdi_ctx *c, char *err, size_t errlen)
{
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

/* ------------------------------------------------------------------ the event thread */

static void LIBUSB_CALL in_done(struct libusb_transfer *t)
{
    ftdi_in_slot *s = t->user_data;
    ftdi_ctx *c = s->c;
    pthread_mutex_lock(&c->mu);
    int again = 0;
    switch (t->status) {
    case LIBUSB_TRANSFER_COMPLETED:
    case LIBUSB_TRANSFER_TIMED_OUT: /* not asked for (timeout 0), but what came is still data */
        if (ntpu_ftdi_rx_push(&c->rx, t->buffer, (size_t)t->actual_length, c->max_packet, &c->line))
            set_fail(c, NTPU_ERR_IO, "more than %u MiB came from the board without being read, or out of memory",
                     FTDI_RX_LIMIT >> 20);
        again = !c->closing && c->fail == NTPU_OK;
        break;
    case LIBUSB_TRANSFER_CANCELLED: break;
    default: fail_transfer(c, t->status, c->ep_in); break;
    }
    if (!again) {
        s->busy = 0;
        c->in_busy--;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (again) {
        int r = libusb_submit_transfer(t);
        if (r) {
            pthread_mutex_lock(&c->mu);
            s->busy = 0;
            c->in_busy--;
            fail_call(c, r, "resubmitting a read");
            pthread_mutex_unlock(&c->mu);
        }
    }
}

static void LIBUSB_CALL out_done(struct libusb_transfer *t)
{
    ftdi_ctx *c = t->user_data;
    pthread_mutex_lock(&c->mu);
    c->out_busy = 0;
    c->out_status = t->status;
    c->out_actual = t->actual_length;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void *event_thread(void *arg)
{
    ftdi_ctx *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int stop = c->stop;
        pthread_mutex_unlock(&c->mu);
        if (stop)
            return NULL;
        struct timeval tv = {0, FTDI_EVENT_SLICE_US};
        int r = libusb_handle_events_timeout_completed(c->usb, &tv, NULL);
        if (r && r != LIBUSB_ERROR_INTERRUPTED && r != LIBUSB_ERROR_TIMEOUT) {
            pthread_mutex_lock(&c->mu);
            fail_call(c, r, "handling USB events");
            pthread_mutex_unlock(&c->mu);
            /* Do not spin on a broken event loop; close still needs it for cancellations. */
            struct timespec pause = {0, 10 * 1000000L};
            nanosleep(&pause, NULL);
        }
    }
}

/* ------------------------------------------------------------------ send and recv */

static ntpu_status ftdi_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    ftdi_ctx *c = ctx;
    size_t off = 0;
    while (off < n) {
        size_t chunk = n - off < FTDI_OUT_CHUNK ? n - off : FTDI_OUT_CHUNK;
        /* Ten bits a byte on the wire; allow twice that plus a margin before calling the chip stuck. */
        unsigned timeout = (unsigned)((uint64_t)chunk * 10u * 2000u / c->baud) + FTDI_OUT_MARGIN_MS;
        pthread_mutex_lock(&c->mu);
        if (c->fail == NTPU_OK && c->out_busy)
            set_fail(c, NTPU_ERR_IO, "an earlier write to the %s never finished", c->chip->name);
        if (c->fail != NTPU_OK) {
            ntpu_errf(err, errlen, "%s", c->fail_msg);
            pthread_mutex_unlock(&c->mu);
            return c->fail;
        }
        c->out_busy = 1;
        pthread_mutex_unlock(&c->mu);

        memcpy(c->out_buf, buf + off, chunk);
        libusb_fill_bulk_transfer(c->out, c->h, c->ep_out, c->out_buf, (int)chunk, out_done, c, timeout);
        int r = libusb_submit_transfer(c->out);
        pthread_mutex_lock(&c->mu);
        if (r) {
            c->out_busy = 0;
            fail_call(c, r, "a write");
            ntpu_errf(err, errlen, "%s", c->fail_msg);
            pthread_mutex_unlock(&c->mu);
            return NTPU_ERR_IO;
        }
        /* libusb times the transfer out itself; this deadline only guards against a stuck USB stack. */
        uint64_t deadline = now_ms() + timeout + FTDI_CLOSE_WAIT_MS;
        while (c->out_busy && now_ms() < deadline)
            wait_until(c, deadline);
        if (c->out_busy) {
            pthread_mutex_unlock(&c->mu);
            libusb_cancel_transfer(c->out);
            pthread_mutex_lock(&c->mu);
            deadline = now_ms() + FTDI_CLOSE_WAIT_MS;
            while (c->out_busy && now_ms() < deadline)
                wait_until(c, deadline);
            set_fail(c, NTPU_ERR_IO, "a write to the %s did not finish in %u ms; the USB stack is stuck", c->chip->name,
                     timeout + FTDI_CLOSE_WAIT_MS);
            ntpu_errf(err, errlen, "%s", c->fail_msg);
            pthread_mutex_unlock(&c->mu);
            return NTPU_ERR_IO;
        }
        enum libusb_transfer_status s = c->out_status;
        int actual = c->out_actual;
        ntpu_status st = NTPU_OK;
        if (s == LIBUSB_TRANSFER_TIMED_OUT) {
            /* Not fatal: the chip stopped taking bytes, which a later call may see differently. */
            ntpu_errf(err, errlen, "the %s took %d of %zu bytes in %u ms (is the board's UART stuck?)", c->chip->name,
                      actual, chunk, timeout);
            st = NTPU_ERR_TIMEOUT;
        } else if (s != LIBUSB_TRANSFER_COMPLETED || (size_t)actual != chunk) {
            if (s == LIBUSB_TRANSFER_COMPLETED)
                set_fail(c, NTPU_ERR_IO, "the %s took %d of %zu bytes", c->chip->name, actual, chunk);
            else
                fail_transfer(c, s, c->ep_out);
            ntpu_errf(err, errlen, "%s", c->fail_msg);
            st = c->fail;
        }
        pthread_mutex_unlock(&c->mu);
        if (st != NTPU_OK)
            return st;
        off += chunk;
    }
    return NTPU_OK;
}

static ntpu_status ftdi_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                             size_t errlen)
{
    ftdi_ctx *c = ctx;
    size_t have = 0;
    ntpu_status st = NTPU_OK;
    pthread_mutex_lock(&c->mu);
    uint64_t deadline = now_ms() + timeout_ms;
    while (have < n) {
        size_t m = ntpu_rx_queue_take(&c->rx, buf + have, n - have);
        if (m) {
            have += m;
            deadline = now_ms() + timeout_ms;
            continue;
        }
        /* Bytes that arrived before a failure are still delivered first. */
        if (c->fail != NTPU_OK) {
            ntpu_errf(err, errlen, "%s", c->fail_msg);
            st = c->fail;
            break;
        }
        if (now_ms() >= deadline) {
            ntpu_errf(err, errlen, "no bytes from the board for %u ms (%zu of %zu came)", timeout_ms, have, n);
            st = NTPU_ERR_TIMEOUT;
            break;
        }
        wait_until(c, deadline);
    }
    if (st != NTPU_OK)
        add_line_errors(c, err, errlen);
    pthread_mutex_unlock(&c->mu);
    *got = have;
    return st;
}

/* ------------------------------------------------------------------ close */

static void ftdi_close(void *ctx)
{
    ftdi_ctx *c = ctx;
    if (!c)
        return;
    int stuck = 0;
    if (c->thread_started) {
        pthread_mutex_lock(&c->mu);
        c->closing = 1;
        uint64_t deadline = now_ms() + FTDI_CLOSE_WAIT_MS;
        /* Cancel again each round: a callback may have resubmitted just before closing was set. */
        while (c->in_busy || c->out_busy) {
            if (now_ms() >= deadline) {
                stuck = 1;
                break;
            }
            struct libusb_transfer *cancel[FTDI_IN_XFERS + 1];
            unsigned k = 0;
            for (unsigned i = 0; i < FTDI_IN_XFERS; i++)
                if (c->in[i].busy)
                    cancel[k++] = c->in[i].xfer;
            if (c->out_busy)
                cancel[k++] = c->out;
            pthread_mutex_unlock(&c->mu);
            for (unsigned i = 0; i < k; i++)
                libusb_cancel_transfer(cancel[i]);
            pthread_mutex_lock(&c->mu);
            uint64_t tick = now_ms() + 50u;
            wait_until(c, tick < deadline ? tick : deadline);
        }
        c->stop = 1;
        pthread_mutex_unlock(&c->mu);
        libusb_interrupt_event_handler(c->usb);
        pthread_join(c->thread, NULL);
    }
    if (c->h) {
        if (c->claimed)
            libusb_release_interface(c->h, (int)c->iface);
        if (c->detached)
            libusb_attach_kernel_driver(c->h, (int)c->iface);
    }
    /* Transfers that never came back still belong to libusb: leaking them, the
     * handle and the context is the only safe thing left to do. */
    if (!stuck) {
        for (unsigned i = 0; i < FTDI_IN_XFERS; i++)
            if (c->in[i].xfer) {
                free(c->in[i].xfer->buffer);
                libusb_free_transfer(c->in[i].xfer);
            }
        libusb_free_transfer(c->out);
        free(c->out_buf);
        if (c->h)
            libusb_close(c->h);
        if (c->usb)
            libusb_exit(c->usb);
    }
    ntpu_rx_queue_free(&c->rx);
    if (c->cv_ready)
        pthread_cond_destroy(&c->cv);
    if (c->mu_ready)
        pthread_mutex_destroy(&c->mu);
    free(c);
}

static const ntpu_transport_ops ftdi_ops = {
    .name = "ftdi",
    .send = ftdi_send,
    .recv = ftdi_recv,
    .close = ftdi_close,
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
    ssize_t cnt = libusb_get_device_list(c->usb, &list);
    if (cnt < 0) {
        ntpu_errf(err, errlen, "cannot list USB devices to look for the board's %s: %s", what,
                  libusb_strerror((int)cnt));
        return NTPU_ERR_NO_DEVICE;
    }
    unsigned found = 0, denied = 0;
    char seen[160] = "";
    libusb_device *denied_dev = NULL;
    ntpu_status st = NTPU_OK;
    for (ssize_t i = 0; i < cnt && !c->h; i++) {
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
            c->h = h;
            c->chip = chip;
        } else {
            list_add(seen, sizeof seen, serial[0] ? serial : "(no serial)");
            libusb_close(h);
        }
    }
    /* Without a serial, a second board makes the choice ambiguous: a JTAG
     * adapter on the same chip would be sent the link's bytes. */
    if (st == NTPU_OK && c->h && !o->serial[0]) {
        for (ssize_t i = 0; i < cnt; i++) {
            if (list[i] == libusb_get_device(c->h) || !wanted_chip(list[i], o))
                continue;
            ntpu_errf(err, errlen,
                      "more than one %s on USB: name the board with ftdi:serial=S (lsusb -v -d 0403: shows the "
                      "serials)",
                      what);
            st = NTPU_ERR_INVALID_ARG;
            break;
        }
    }
    if (st == NTPU_OK && !c->h) {
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
    if (st != NTPU_OK && c->h) {
        libusb_close(c->h);
        c->h = NULL;
    }
    libusb_free_device_list(list, 1);
    return st;
}

/* Takes the interface from the kernel's serial driver and claims it. */
static ntpu_status claim(ftdi_ctx *c, char *err, size_t errlen)
{
    int r = libusb_kernel_driver_active(c->h, (int)c->iface);
    if (r == 1) {
        r = libusb_detach_kernel_driver(c->h, (int)c->iface);
        if (r == 0)
            c->detached = 1;
        else if (r != LIBUSB_ERROR_NOT_FOUND) {
            ntpu_errf(err, errlen, "cannot detach the kernel's serial driver from interface %c of the %s: %s%s%s",
                      iface_letter(c->iface), c->chip->name, libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "",
                      r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
            return NTPU_ERR_NO_DEVICE;
        }
    }
    /* r < 0 here means the platform cannot tell (not Linux): claim and see. */
    r = libusb_claim_interface(c->h, (int)c->iface);
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
    c->claimed = 1;
    return NTPU_OK;
}

static ntpu_status control(ftdi_ctx *c, ntpu_ftdi_ctrl q, char *err, size_t errlen)
{
    int r = libusb_control_transfer(c->h, q.request_type, q.request, q.value, q.index, NULL, 0, FTDI_CTRL_TIMEOUT_MS);
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

/* Allocates the transfers, starts the event thread and puts the reads in flight. */
static ntpu_status start_io(ftdi_ctx *c, char *err, size_t errlen)
{
    for (unsigned i = 0; i < FTDI_IN_XFERS; i++) {
        ftdi_in_slot *s = &c->in[i];
        s->c = c;
        s->xfer = libusb_alloc_transfer(0);
        uint8_t *b = s->xfer ? malloc(FTDI_IN_XFER_BYTES) : NULL;
        if (!b) {
            ntpu_errf(err, errlen, "out of memory for the USB transfers");
            return NTPU_ERR_NO_MEMORY;
        }
        /* No timeout: the chip answers every read within its latency timer anyway. */
        libusb_fill_bulk_transfer(s->xfer, c->h, c->ep_in, b, (int)FTDI_IN_XFER_BYTES, in_done, s, 0);
    }
    c->out = libusb_alloc_transfer(0);
    c->out_buf = malloc(FTDI_OUT_CHUNK);
    if (!c->out || !c->out_buf) {
        ntpu_errf(err, errlen, "out of memory for the USB transfers");
        return NTPU_ERR_NO_MEMORY;
    }
    c->rx.limit = FTDI_RX_LIMIT;
    if (pthread_create(&c->thread, NULL, event_thread, c)) {
        ntpu_errf(err, errlen, "cannot start the USB event thread");
        return NTPU_ERR_NO_MEMORY;
    }
    c->thread_started = 1;
    for (unsigned i = 0; i < FTDI_IN_XFERS; i++) {
        pthread_mutex_lock(&c->mu);
        c->in[i].busy = 1;
        c->in_busy++;
        pthread_mutex_unlock(&c->mu);
        int r = libusb_submit_transfer(c->in[i].xfer);
        if (r) {
            pthread_mutex_lock(&c->mu);
            c->in[i].busy = 0;
            c->in_busy--;
            pthread_mutex_unlock(&c->mu);
            ntpu_errf(err, errlen, "cannot start reading from the %s: %s", c->chip->name, libusb_strerror(r));
            return r == LIBUSB_ERROR_NO_DEVICE ? NTPU_ERR_NO_DEVICE : NTPU_ERR_IO;
        }
    }
    return NTPU_OK;
}

static ntpu_status open_ctx(ftdi_ctx *c, const char *opts, char *err, size_t errlen)
{
    ntpu_ftdi_opts o;
    if (ntpu_ftdi_parse_opts(opts, &o, err, errlen))
        return NTPU_ERR_INVALID_ARG;

    pthread_condattr_t ca;
    if (pthread_mutex_init(&c->mu, NULL)) {
        ntpu_errf(err, errlen, "cannot create a mutex");
        return NTPU_ERR_NO_MEMORY;
    }
    c->mu_ready = 1;
    /* Timeouts must not jump with the wall clock. */
    int bad = pthread_condattr_init(&ca);
    if (!bad) {
        bad = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&c->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (bad) {
        ntpu_errf(err, errlen, "cannot create a condition variable");
        return NTPU_ERR_NO_MEMORY;
    }
    c->cv_ready = 1;

    /* A context of our own: no state shared with other handles or with the
     * application's own use of libusb. */
    int r = libusb_init(&c->usb);
    if (r) {
        c->usb = NULL;
        char what[96];
        ntpu_errf(err, errlen, "cannot use USB here to look for the board's %s: libusb_init: %s",
                  wanted_str(&o, what, sizeof what), libusb_strerror(r));
        return NTPU_ERR_NO_DEVICE;
    }
    ntpu_status st = find_device(c, &o, err, errlen);
    if (st != NTPU_OK)
        return st;
    /* The rate and channel follow the chip found, unless the options chose them. */
    if (ntpu_ftdi_settle(&o, c->chip, &c->baud, &c->iface, err, errlen))
        return NTPU_ERR_INVALID_ARG;
    c->ep_in = ntpu_ftdi_ep_in(c->iface);
    c->ep_out = ntpu_ftdi_ep_out(c->iface);
    r = libusb_get_max_packet_size(libusb_get_device(c->h), c->ep_in);
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
        ftdi_close(c);
        return st;
    }
    out->ops = &ftdi_ops;
    out->ctx = c;
    return NTPU_OK;
}
