/* SPDX-License-Identifier: Apache-2.0 */
/* The libusb bulk engine of the USB transports (see usb_bulk.h). */
#include "usb_bulk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define CLOSE_WAIT_MS 2000u   /* for cancelled transfers to come back */
#define EVENT_SLICE_US 100000 /* the event thread looks at its stop flag this often */

/* ------------------------------------------------------------------ helpers */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits on cv (mu held) until at most the monotonic time deadline_ms. */
static void wait_until(ntpu_usb_bulk *b, uint64_t deadline_ms)
{
    struct timespec ts = {(time_t)(deadline_ms / 1000u), (long)(deadline_ms % 1000u) * 1000000L};
    pthread_cond_timedwait(&b->cv, &b->mu, &ts);
}

/* Records the first fatal error (mu held) and wakes every waiter. */
static void set_fail(ntpu_usb_bulk *b, ntpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_fail(ntpu_usb_bulk *b, ntpu_status st, const char *fmt, ...)
{
    if (b->fail == NTPU_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->fail_msg, sizeof b->fail_msg, fmt, ap);
        va_end(ap);
        b->fail = st;
    }
    pthread_cond_broadcast(&b->cv);
}

static void fail_unplugged(ntpu_usb_bulk *b)
{
    set_fail(b, b->cfg.unplugged_status, "%s", b->cfg.unplugged);
}

/* The fatal error a failed transfer means (mu held). */
static void fail_transfer(ntpu_usb_bulk *b, enum libusb_transfer_status s, uint8_t ep)
{
    const ntpu_usb_bulk_cfg *g = &b->cfg;
    switch (s) {
    case LIBUSB_TRANSFER_NO_DEVICE: fail_unplugged(b); break;
    case LIBUSB_TRANSFER_STALL:
        set_fail(b, NTPU_ERR_IO, "USB pipe error: endpoint 0x%02X of %s stalled (%s)", ep, g->name, g->stall_hint);
        break;
    case LIBUSB_TRANSFER_OVERFLOW:
        set_fail(b, NTPU_ERR_IO, "USB overflow on endpoint 0x%02X of %s", ep, g->name);
        break;
    default:
        set_fail(b, NTPU_ERR_IO, "USB transfer on endpoint 0x%02X of %s failed%s", ep, g->name, g->failed_hint);
        break;
    }
}

/* The error of a failed libusb call during a transfer (mu held). */
static void fail_call(ntpu_usb_bulk *b, int r, const char *what)
{
    if (r == LIBUSB_ERROR_NO_DEVICE)
        fail_unplugged(b);
    else
        set_fail(b, NTPU_ERR_IO, "%s on %s failed: %s%s", what, b->cfg.name, libusb_strerror(r), b->cfg.failed_hint);
}

/* ------------------------------------------------------------------ the event thread */

static int push(ntpu_usb_bulk *b, const uint8_t *data, size_t n)
{
    if (b->cfg.push)
        return b->cfg.push(b->cfg.owner, &b->rx, data, n);
    return ntpu_rx_queue_push(&b->rx, data, n);
}

static void LIBUSB_CALL in_done(struct libusb_transfer *t)
{
    ntpu_usb_bulk_in *s = t->user_data;
    ntpu_usb_bulk *b = s->b;
    pthread_mutex_lock(&b->mu);
    int again = 0;
    switch (t->status) {
    case LIBUSB_TRANSFER_COMPLETED: /* 0 bytes (a zero-length packet) is "nothing yet" */
    case LIBUSB_TRANSFER_TIMED_OUT: /* not asked for (timeout 0), but what came is still data */
        if (push(b, t->buffer, (size_t)t->actual_length))
            set_fail(b, NTPU_ERR_IO, "more than %zu MiB came from the board without being read, or out of memory",
                     b->cfg.rx_limit >> 20);
        again = !b->closing && b->fail == NTPU_OK;
        break;
    case LIBUSB_TRANSFER_CANCELLED: break;
    default: fail_transfer(b, t->status, b->cfg.ep_in); break;
    }
    if (!again) {
        s->busy = 0;
        b->in_busy--;
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (again) {
        int r = libusb_submit_transfer(t);
        if (r) {
            pthread_mutex_lock(&b->mu);
            s->busy = 0;
            b->in_busy--;
            fail_call(b, r, "resubmitting a read");
            pthread_mutex_unlock(&b->mu);
        }
    }
}

static void LIBUSB_CALL out_done(struct libusb_transfer *t)
{
    ntpu_usb_bulk *b = t->user_data;
    pthread_mutex_lock(&b->mu);
    b->out_busy = 0;
    b->out_status = t->status;
    b->out_actual = t->actual_length;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void *event_thread(void *arg)
{
    ntpu_usb_bulk *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int stop = b->stop;
        pthread_mutex_unlock(&b->mu);
        if (stop)
            return NULL;
        struct timeval tv = {0, EVENT_SLICE_US};
        int r = libusb_handle_events_timeout_completed(b->usb, &tv, NULL);
        if (r && r != LIBUSB_ERROR_INTERRUPTED && r != LIBUSB_ERROR_TIMEOUT) {
            pthread_mutex_lock(&b->mu);
            fail_call(b, r, "handling USB events");
            pthread_mutex_unlock(&b->mu);
            /* Do not spin on a broken event loop; close still needs it for cancellations. */
            struct timespec pause = {0, 10 * 1000000L};
            nanosleep(&pause, NULL);
        }
    }
}

/* ------------------------------------------------------------------ start */

ntpu_status ntpu_usb_bulk_init(ntpu_usb_bulk *b, char *err, size_t errlen)
{
    if (pthread_mutex_init(&b->mu, NULL))
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "cannot create a mutex");
    b->mu_ready = 1;
    /* Timeouts must not jump with the wall clock. */
    pthread_condattr_t ca;
    int bad = pthread_condattr_init(&ca);
    if (!bad) {
        bad = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&b->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (bad)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "cannot create a condition variable");
    b->cv_ready = 1;
    return NTPU_OK;
}

ntpu_status ntpu_usb_bulk_start(ntpu_usb_bulk *b, char *err, size_t errlen)
{
    const ntpu_usb_bulk_cfg *g = &b->cfg;
    for (unsigned i = 0; i < g->in_xfers && i < NTPU_USB_BULK_MAX_IN; i++) {
        ntpu_usb_bulk_in *s = &b->in[i];
        s->b = b;
        s->xfer = libusb_alloc_transfer(0);
        uint8_t *buf = s->xfer ? malloc(g->in_bytes) : NULL;
        if (!buf)
            return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory for the USB transfers");
        /* No timeout: a read waits for as long as the device has nothing to say. */
        libusb_fill_bulk_transfer(s->xfer, b->h, g->ep_in, buf, (int)g->in_bytes, in_done, s, 0);
    }
    b->out = libusb_alloc_transfer(0);
    b->out_buf = malloc(g->out_chunk);
    if (!b->out || !b->out_buf)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory for the USB transfers");
    b->rx.limit = g->rx_limit;
    if (pthread_create(&b->thread, NULL, event_thread, b))
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "cannot start the USB event thread");
    b->thread_started = 1;
    for (unsigned i = 0; i < g->in_xfers && i < NTPU_USB_BULK_MAX_IN; i++) {
        pthread_mutex_lock(&b->mu);
        b->in[i].busy = 1;
        b->in_busy++;
        pthread_mutex_unlock(&b->mu);
        int r = libusb_submit_transfer(b->in[i].xfer);
        if (r) {
            pthread_mutex_lock(&b->mu);
            b->in[i].busy = 0;
            b->in_busy--;
            pthread_mutex_unlock(&b->mu);
            return ntpu_errst(err, errlen, r == LIBUSB_ERROR_NO_DEVICE ? NTPU_ERR_NO_DEVICE : NTPU_ERR_IO,
                              "cannot start reading from %s: %s", g->name, libusb_strerror(r));
        }
    }
    return NTPU_OK;
}

/* ------------------------------------------------------------------ send and recv */

/* Waits for the write in flight (mu held); cancels it if the USB stack never
 * completes it. 0, or -1 with the failure recorded. */
static int wait_out(ntpu_usb_bulk *b, unsigned timeout)
{
    /* libusb times the transfer out itself; this deadline only guards against a stuck USB stack. */
    uint64_t deadline = now_ms() + timeout + CLOSE_WAIT_MS;
    while (b->out_busy && now_ms() < deadline)
        wait_until(b, deadline);
    if (!b->out_busy)
        return 0;
    pthread_mutex_unlock(&b->mu);
    libusb_cancel_transfer(b->out);
    pthread_mutex_lock(&b->mu);
    deadline = now_ms() + CLOSE_WAIT_MS;
    while (b->out_busy && now_ms() < deadline)
        wait_until(b, deadline);
    set_fail(b, NTPU_ERR_IO, "a write to %s did not finish in %u ms; the USB stack is stuck", b->cfg.name,
             timeout + CLOSE_WAIT_MS);
    return -1;
}

/* Writes one chunk (at most out_chunk bytes) on bulk OUT. */
static ntpu_status send_chunk(ntpu_usb_bulk *b, const uint8_t *buf, size_t chunk, char *err, size_t errlen)
{
    const ntpu_usb_bulk_cfg *g = &b->cfg;
    unsigned timeout = g->out_timeout_ms(g->owner, chunk);
    pthread_mutex_lock(&b->mu);
    if (b->fail == NTPU_OK && b->out_busy)
        set_fail(b, NTPU_ERR_IO, "an earlier write to %s never finished", g->name);
    if (b->fail != NTPU_OK) {
        ntpu_status st = b->fail;
        ntpu_errf(err, errlen, "%s", b->fail_msg);
        pthread_mutex_unlock(&b->mu);
        return st;
    }
    b->out_busy = 1;
    pthread_mutex_unlock(&b->mu);

    memcpy(b->out_buf, buf, chunk);
    libusb_fill_bulk_transfer(b->out, b->h, g->ep_out, b->out_buf, (int)chunk, out_done, b, timeout);
    int r = libusb_submit_transfer(b->out);
    pthread_mutex_lock(&b->mu);
    ntpu_status st = NTPU_OK;
    if (r) {
        b->out_busy = 0;
        fail_call(b, r, "a write");
        st = b->fail;
    } else if (wait_out(b, timeout)) {
        st = b->fail;
    } else if (b->out_status == LIBUSB_TRANSFER_TIMED_OUT) {
        /* Not fatal: the device stopped taking bytes, which a later call may see differently. */
        ntpu_errf(err, errlen, "%s took %d of %zu bytes in %u ms (%s)", g->name, b->out_actual, chunk, timeout,
                  g->timeout_hint);
        pthread_mutex_unlock(&b->mu);
        return NTPU_ERR_TIMEOUT;
    } else if (b->out_status != LIBUSB_TRANSFER_COMPLETED || (size_t)b->out_actual != chunk) {
        if (b->out_status == LIBUSB_TRANSFER_COMPLETED)
            set_fail(b, NTPU_ERR_IO, "%s took %d of %zu bytes", g->name, b->out_actual, chunk);
        else
            fail_transfer(b, b->out_status, g->ep_out);
        st = b->fail;
    }
    if (st != NTPU_OK)
        ntpu_errf(err, errlen, "%s", b->fail_msg);
    pthread_mutex_unlock(&b->mu);
    return st;
}

ntpu_status ntpu_usb_bulk_send(ntpu_usb_bulk *b, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    for (size_t off = 0; off < n;) {
        size_t chunk = n - off < b->cfg.out_chunk ? n - off : b->cfg.out_chunk;
        ntpu_status st = send_chunk(b, buf + off, chunk, err, errlen);
        if (st != NTPU_OK)
            return st;
        off += chunk;
    }
    return NTPU_OK;
}

ntpu_status ntpu_usb_bulk_recv(ntpu_usb_bulk *b, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                               size_t errlen)
{
    size_t have = 0;
    ntpu_status st = NTPU_OK;
    pthread_mutex_lock(&b->mu);
    uint64_t deadline = now_ms() + timeout_ms;
    while (have < n) {
        size_t m = ntpu_rx_queue_take(&b->rx, buf + have, n - have);
        if (m) {
            have += m;
            deadline = now_ms() + timeout_ms;
            continue;
        }
        /* Bytes that arrived before a failure are still delivered first. */
        if (b->fail != NTPU_OK) {
            ntpu_errf(err, errlen, "%s", b->fail_msg);
            st = b->fail;
            break;
        }
        if (now_ms() >= deadline) {
            ntpu_errf(err, errlen, "no bytes from the board for %u ms (%zu of %zu came)", timeout_ms, have, n);
            st = NTPU_ERR_TIMEOUT;
            break;
        }
        wait_until(b, deadline);
    }
    if (st != NTPU_OK && b->cfg.recv_note)
        b->cfg.recv_note(b->cfg.owner, err, errlen);
    pthread_mutex_unlock(&b->mu);
    *got = have;
    return st;
}

/* ------------------------------------------------------------------ close */

/* Cancels every transfer in flight and waits for them to come back. 0, or -1
 * if some never did (then they still belong to libusb). */
static int cancel_all(ntpu_usb_bulk *b)
{
    pthread_mutex_lock(&b->mu);
    b->closing = 1;
    uint64_t deadline = now_ms() + CLOSE_WAIT_MS;
    int stuck = 0;
    /* Cancel again each round: a callback may have resubmitted just before closing was set. */
    while (b->in_busy || b->out_busy) {
        if (now_ms() >= deadline) {
            stuck = 1;
            break;
        }
        struct libusb_transfer *cancel[NTPU_USB_BULK_MAX_IN + 1];
        unsigned k = 0;
        for (unsigned i = 0; i < NTPU_USB_BULK_MAX_IN; i++)
            if (b->in[i].busy)
                cancel[k++] = b->in[i].xfer;
        if (b->out_busy)
            cancel[k++] = b->out;
        pthread_mutex_unlock(&b->mu);
        for (unsigned i = 0; i < k; i++)
            libusb_cancel_transfer(cancel[i]);
        pthread_mutex_lock(&b->mu);
        uint64_t tick = now_ms() + 50u;
        wait_until(b, tick < deadline ? tick : deadline);
    }
    b->stop = 1;
    pthread_mutex_unlock(&b->mu);
    return stuck ? -1 : 0;
}

void ntpu_usb_bulk_close(ntpu_usb_bulk *b)
{
    int stuck = 0;
    if (b->thread_started) {
        stuck = cancel_all(b);
        libusb_interrupt_event_handler(b->usb);
        pthread_join(b->thread, NULL);
    }
    if (b->h) {
        if (b->claimed)
            libusb_release_interface(b->h, b->iface);
        if (b->detached)
            libusb_attach_kernel_driver(b->h, b->iface);
    }
    /* Transfers that never came back still belong to libusb: leaking them, the
     * handle and the context is the only safe thing left to do. */
    if (!stuck) {
        for (unsigned i = 0; i < NTPU_USB_BULK_MAX_IN; i++)
            if (b->in[i].xfer) {
                free(b->in[i].xfer->buffer);
                libusb_free_transfer(b->in[i].xfer);
            }
        libusb_free_transfer(b->out);
        free(b->out_buf);
        if (b->h)
            libusb_close(b->h);
        if (b->usb)
            libusb_exit(b->usb);
    }
    ntpu_rx_queue_free(&b->rx);
    if (b->cv_ready)
        pthread_cond_destroy(&b->cv);
    if (b->mu_ready)
        pthread_mutex_destroy(&b->mu);
}

/* ------------------------------------------------------------------ transport ops */

ntpu_status ntpu_usb_bulk_op_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    return ntpu_usb_bulk_send(ctx, buf, n, err, errlen);
}

ntpu_status ntpu_usb_bulk_op_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                                  size_t errlen)
{
    return ntpu_usb_bulk_recv(ctx, buf, n, timeout_ms, got, err, errlen);
}

void ntpu_usb_bulk_op_close(void *ctx)
{
    if (!ctx)
        return;
    ntpu_usb_bulk_close(ctx);
    free(ctx);
}
