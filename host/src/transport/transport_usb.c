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
 * This file calls only libusb functions that transport_ftdi.c calls too, so
 * each transport's fake libusb (tests/cli/ftdi_fakeusb.c, usb_fakeusb.c) links with the other.
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

#include "internal.h"
#include "rx_queue.h"
#include "usb_proto.h"

#define USB_IN_XFERS 4                 /* bulk-IN transfers kept in flight */
#define USB_IN_XFER_BYTES (16u * 1024) /* each: a whole number of 64-byte packets */
#define USB_OUT_CHUNK (64u * 1024)     /* bytes per bulk-OUT transfer */
/* A bulk-OUT chunk may wait while the FPGA drains the firmware's 512-byte ring;
 * this long without it finishing is a stuck board. */
#define USB_OUT_TIMEOUT_MS 5000u
#define USB_CTRL_TIMEOUT_MS 2000u
#define USB_RX_LIMIT (64u << 20)  /* bytes queued and unread before the transport gives up */
#define USB_CLOSE_WAIT_MS 2000u   /* for cancelled transfers to come back */
#define USB_EVENT_SLICE_US 100000 /* the event thread looks at its stop flag this often */
#define USB_MAX_CANDIDATES 16     /* 1209:0001 devices considered at open */
#define USB_IFACE 0
#define USB_MSG_LEN 200

static const char board_name[] = "the pico-ice";
static const char udev_hint[] = "add a udev rule (see docs/boards.md)";

typedef struct usb_ctx usb_ctx;

typedef struct usb_in_slot {
    usb_ctx *c;
    struct libusb_transfer *xfer;
    int busy; /* submitted and its callback not yet run */
} usb_in_slot;

struct usb_ctx {
    libusb_context *usb;
    libusb_device_handle *h;
    int claimed;  /* the interface is ours: release it at close */
    int detached; /* we detached a kernel driver: reattach it at close */

    pthread_t thread;
    int thread_started;
    int cv_ready, mu_ready;
    /* Everything below is shared with the event thread and guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast on every completion and failure */
    int stop;          /* the event thread returns */
    int closing;       /* no more resubmits */
    usb_in_slot in[USB_IN_XFERS];
    unsigned in_busy;
    struct libusb_transfer *out;
    uint8_t *out_buf; /* the bytes of the write in flight: ours, so a stuck transfer never points at the caller's */
    int out_busy;
    enum libusb_transfer_status out_status;
    int out_actual;
    ntpu_rx_queue rx;
    ntpu_status fail; /* the first fatal USB error: every later call returns it */
    char fail_msg[USB_MSG_LEN];
};

/* ------------------------------------------------------------------ helpers */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits on cv (mu held) until at most the monotonic time deadline_ms. */
static void wait_until(usb_ctx *c, uint64_t deadline_ms)
{
    struct timespec ts = {(time_t)(deadline_ms / 1000u), (long)(deadline_ms % 1000u) * 1000000L};
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

/* Records the first fatal error (mu held) and wakes every waiter. */
static void set_fail(usb_ctx *c, ntpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_fail(usb_ctx *c, ntpu_status st, const char *fmt, ...)
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

static void fail_unplugged(usb_ctx *c)
{
    set_fail(c, NTPU_ERR_NO_DEVICE, "%s was unplugged (it left the USB bus); close the device and open it again",
             board_name);
}

/* The fatal error a failed transfer means (mu held). */
static void fail_transfer(usb_ctx *c, enum libusb_transfer_status s, uint8_t ep)
{
    switch (s) {
    case LIBUSB_TRANSFER_NO_DEVICE: fail_unplugged(c); break;
    case LIBUSB_TRANSFER_STALL:
        set_fail(c, NTPU_ERR_IO, "USB pipe error: endpoint 0x%02X of %s stalled (board reset?)", ep, board_name);
        break;
    case LIBUSB_TRANSFER_OVERFLOW:
        set_fail(c, NTPU_ERR_IO, "USB overflow on endpoint 0x%02X of %s", ep, board_name);
        break;
    default: set_fail(c, NTPU_ERR_IO, "USB transfer on endpoint 0x%02X of %s failed", ep, board_name); break;
    }
}

/* The error of a failed libusb call during a transfer (mu held). */
static void fail_call(usb_ctx *c, int r, const char *what)
{
    if (r == LIBUSB_ERROR_NO_DEVICE)
        fail_unplugged(c);
    else
        set_fail(c, NTPU_ERR_IO, "%s on %s failed: %s", what, board_name, libusb_strerror(r));
}

/* ------------------------------------------------------------------ the event thread */

static void LIBUSB_CALL in_done(struct libusb_transfer *t)
{
    usb_in_slot *s = t->user_data;
    usb_ctx *c = s->c;
    pthread_mutex_lock(&c->mu);
    int again = 0;
    switch (t->status) {
    case LIBUSB_TRANSFER_COMPLETED: /* 0 bytes (a zero-length packet) is "nothing yet" */
        if (ntpu_rx_queue_push(&c->rx, t->buffer, (size_t)t->actual_length))
            set_fail(c, NTPU_ERR_IO, "more than %u MiB came from the board without being read, or out of memory",
                     USB_RX_LIMIT >> 20);
        again = !c->closing && c->fail == NTPU_OK;
        break;
    case LIBUSB_TRANSFER_CANCELLED: break;
    default: fail_transfer(c, t->status, NTPU_USB_EP_IN); break;
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
    usb_ctx *c = t->user_data;
    pthread_mutex_lock(&c->mu);
    c->out_busy = 0;
    c->out_status = t->status;
    c->out_actual = t->actual_length;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void *event_thread(void *arg)
{
    usb_ctx *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int stop = c->stop;
        pthread_mutex_unlock(&c->mu);
        if (stop)
            return NULL;
        struct timeval tv = {0, USB_EVENT_SLICE_US};
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

/* Waits for the write in flight (mu held); cancels it if the USB stack never
 * completes it. 0, or -1 with the failure recorded. */
static int wait_out(usb_ctx *c, unsigned timeout)
{
    /* libusb times the transfer out itself; this deadline only guards against a stuck USB stack. */
    uint64_t deadline = now_ms() + timeout + USB_CLOSE_WAIT_MS;
    while (c->out_busy && now_ms() < deadline)
        wait_until(c, deadline);
    if (!c->out_busy)
        return 0;
    pthread_mutex_unlock(&c->mu);
    libusb_cancel_transfer(c->out);
    pthread_mutex_lock(&c->mu);
    deadline = now_ms() + USB_CLOSE_WAIT_MS;
    while (c->out_busy && now_ms() < deadline)
        wait_until(c, deadline);
    set_fail(c, NTPU_ERR_IO, "a write to %s did not finish in %u ms; the USB stack is stuck", board_name,
             timeout + USB_CLOSE_WAIT_MS);
    return -1;
}

/* Writes one chunk (at most USB_OUT_CHUNK bytes) on bulk OUT. */
static ntpu_status send_chunk(usb_ctx *c, const uint8_t *buf, size_t chunk, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->mu);
    if (c->fail == NTPU_OK && c->out_busy)
        set_fail(c, NTPU_ERR_IO, "an earlier write to %s never finished", board_name);
    if (c->fail != NTPU_OK) {
        ntpu_status st = c->fail;
        ntpu_errf(err, errlen, "%s", c->fail_msg);
        pthread_mutex_unlock(&c->mu);
        return st;
    }
    c->out_busy = 1;
    pthread_mutex_unlock(&c->mu);

    memcpy(c->out_buf, buf, chunk);
    libusb_fill_bulk_transfer(c->out, c->h, NTPU_USB_EP_OUT, c->out_buf, (int)chunk, out_done, c, USB_OUT_TIMEOUT_MS);
    int r = libusb_submit_transfer(c->out);
    pthread_mutex_lock(&c->mu);
    ntpu_status st = NTPU_OK;
    if (r) {
        c->out_busy = 0;
        fail_call(c, r, "a write");
        st = c->fail;
    } else if (wait_out(c, USB_OUT_TIMEOUT_MS)) {
        st = c->fail;
    } else if (c->out_status == LIBUSB_TRANSFER_TIMED_OUT) {
        /* Not fatal: the board stopped taking bytes, which a later call may see differently. */
        ntpu_errf(err, errlen, "%s took %d of %zu bytes in %u ms (is the FPGA running the nanoTPU design?)", board_name,
                  c->out_actual, chunk, USB_OUT_TIMEOUT_MS);
        pthread_mutex_unlock(&c->mu);
        return NTPU_ERR_TIMEOUT;
    } else if (c->out_status != LIBUSB_TRANSFER_COMPLETED || (size_t)c->out_actual != chunk) {
        if (c->out_status == LIBUSB_TRANSFER_COMPLETED)
            set_fail(c, NTPU_ERR_IO, "%s took %d of %zu bytes", board_name, c->out_actual, chunk);
        else
            fail_transfer(c, c->out_status, NTPU_USB_EP_OUT);
        st = c->fail;
    }
    if (st != NTPU_OK)
        ntpu_errf(err, errlen, "%s", c->fail_msg);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static ntpu_status usb_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    usb_ctx *c = ctx;
    for (size_t off = 0; off < n;) {
        size_t chunk = n - off < USB_OUT_CHUNK ? n - off : USB_OUT_CHUNK;
        ntpu_status st = send_chunk(c, buf + off, chunk, err, errlen);
        if (st != NTPU_OK)
            return st;
        off += chunk;
    }
    return NTPU_OK;
}

static ntpu_status usb_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                            size_t errlen)
{
    usb_ctx *c = ctx;
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
    pthread_mutex_unlock(&c->mu);
    *got = have;
    return st;
}

/* ------------------------------------------------------------------ close */

/* Cancels every transfer in flight and waits for them to come back. 0, or -1
 * if some never did (then they still belong to libusb). */
static int cancel_all(usb_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    uint64_t deadline = now_ms() + USB_CLOSE_WAIT_MS;
    int stuck = 0;
    /* Cancel again each round: a callback may have resubmitted just before closing was set. */
    while (c->in_busy || c->out_busy) {
        if (now_ms() >= deadline) {
            stuck = 1;
            break;
        }
        struct libusb_transfer *cancel[USB_IN_XFERS + 1];
        unsigned k = 0;
        for (unsigned i = 0; i < USB_IN_XFERS; i++)
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
    return stuck ? -1 : 0;
}

static void usb_close(void *ctx)
{
    usb_ctx *c = ctx;
    if (!c)
        return;
    int stuck = 0;
    if (c->thread_started) {
        stuck = cancel_all(c);
        libusb_interrupt_event_handler(c->usb);
        pthread_join(c->thread, NULL);
    }
    if (c->h) {
        if (c->claimed)
            libusb_release_interface(c->h, USB_IFACE);
        if (c->detached)
            libusb_attach_kernel_driver(c->h, USB_IFACE);
    }
    /* Transfers that never came back still belong to libusb: leaking them, the
     * handle and the context is the only safe thing left to do. */
    if (!stuck) {
        for (unsigned i = 0; i < USB_IN_XFERS; i++)
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

static const ntpu_transport_ops usb_ops = {
    .name = "usb",
    .send = usb_send,
    .recv = usb_recv,
    .close = usb_close,
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
    ssize_t cnt = libusb_get_device_list(c->usb, &list);
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
            c->h = f->h[k];
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
    int r = libusb_kernel_driver_active(c->h, USB_IFACE);
    if (r == 1) {
        r = libusb_detach_kernel_driver(c->h, USB_IFACE);
        if (r == 0)
            c->detached = 1;
        else if (r != LIBUSB_ERROR_NOT_FOUND)
            return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot detach the kernel's driver from %s: %s%s%s",
                              board_name, libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "",
                              r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
    }
    /* r < 0 here means the platform cannot tell (not Linux): claim and see. */
    r = libusb_claim_interface(c->h, USB_IFACE);
    if (r == LIBUSB_ERROR_BUSY)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE,
                          "interface 0 of %s is in use by another program (another ntpu?)", board_name);
    if (r == LIBUSB_ERROR_NO_DEVICE)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "%s left the USB bus while being opened", board_name);
    if (r)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot claim interface 0 of %s: %s%s%s", board_name,
                          libusb_strerror(r), r == LIBUSB_ERROR_ACCESS ? "; " : "",
                          r == LIBUSB_ERROR_ACCESS ? udev_hint : "");
    c->claimed = 1;
    return NTPU_OK;
}

/* One vendor request; *got (may be NULL) is the length of the IN data stage. */
static ntpu_status control(usb_ctx *c, ntpu_usb_ctrl q, uint8_t *data, int *got, char *err, size_t errlen)
{
    int r =
        libusb_control_transfer(c->h, q.request_type, q.request, q.value, q.index, data, q.length, USB_CTRL_TIMEOUT_MS);
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

/* Allocates the transfers, starts the event thread and puts the reads in flight. */
static ntpu_status start_io(usb_ctx *c, char *err, size_t errlen)
{
    for (unsigned i = 0; i < USB_IN_XFERS; i++) {
        usb_in_slot *s = &c->in[i];
        s->c = c;
        s->xfer = libusb_alloc_transfer(0);
        uint8_t *b = s->xfer ? malloc(USB_IN_XFER_BYTES) : NULL;
        if (!b)
            return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory for the USB transfers");
        /* No timeout: a read waits for as long as the board has nothing to say. */
        libusb_fill_bulk_transfer(s->xfer, c->h, NTPU_USB_EP_IN, b, (int)USB_IN_XFER_BYTES, in_done, s, 0);
    }
    c->out = libusb_alloc_transfer(0);
    c->out_buf = malloc(USB_OUT_CHUNK);
    if (!c->out || !c->out_buf)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory for the USB transfers");
    c->rx.limit = USB_RX_LIMIT;
    if (pthread_create(&c->thread, NULL, event_thread, c))
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "cannot start the USB event thread");
    c->thread_started = 1;
    for (unsigned i = 0; i < USB_IN_XFERS; i++) {
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
            return ntpu_errst(err, errlen, r == LIBUSB_ERROR_NO_DEVICE ? NTPU_ERR_NO_DEVICE : NTPU_ERR_IO,
                              "cannot start reading from %s: %s", board_name, libusb_strerror(r));
        }
    }
    return NTPU_OK;
}

static ntpu_status open_ctx(usb_ctx *c, const char *opts, int need_fpga, char *err, size_t errlen)
{
    ntpu_usb_opts o;
    if (ntpu_usb_parse_opts(opts, &o, err, errlen))
        return NTPU_ERR_INVALID_ARG;
    if (pthread_mutex_init(&c->mu, NULL))
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "cannot create a mutex");
    c->mu_ready = 1;
    /* Timeouts must not jump with the wall clock. */
    pthread_condattr_t ca;
    int bad = pthread_condattr_init(&ca);
    if (!bad) {
        bad = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&c->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (bad)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "cannot create a condition variable");
    c->cv_ready = 1;
    /* A context of our own: no state shared with other handles or with the
     * application's own use of libusb. */
    int r = libusb_init(&c->usb);
    if (r) {
        c->usb = NULL;
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot use USB here to look for %s (%04x:%04x): %s: %s",
                          board_name, NTPU_USB_VID, NTPU_USB_PID, "libusb_init", libusb_strerror(r));
    }
    ntpu_status st = find_device(c, &o, err, errlen);
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
        usb_close(c);
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
        usb_close(c);
        return st;
    }
    st = usb_send(c, bits, n, err, errlen);
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
    usb_close(c);
    return st;
}
