/* SPDX-License-Identifier: Apache-2.0 */
/* The fake libusb's transfers, event loop and the calls every device model answers alike (see fakeusb_core.h). */
#include "fakeusb_core.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FK_MAXQ 64

pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fk_cv = PTHREAD_COND_INITIALIZER;
int fk_unplugged;
int fk_allocs, fk_frees;
int fk_inits, fk_exits, fk_opens, fk_closes, fk_claims, fk_releases;
uint8_t fk_eps_seen[256];
static int fk_interrupted;
static fk_xfer fk_q[FK_MAXQ];
static size_t fk_nq;

uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void fk_core_reset(void)
{
    fk_unplugged = fk_interrupted = 0;
    fk_nq = 0;
    fk_allocs = fk_frees = 0;
    fk_inits = fk_exits = fk_opens = fk_closes = fk_claims = fk_releases = 0;
    memset(fk_eps_seen, 0, sizeof fk_eps_seen);
}

void fk_unplug(void)
{
    pthread_mutex_lock(&fk_mu);
    fk_unplugged = 1;
    pthread_cond_broadcast(&fk_cv);
    pthread_mutex_unlock(&fk_mu);
}

/* ------------------------------------------------------------------ calls every model answers alike */

void LIBUSB_CALL libusb_exit(libusb_context *ctx)
{
    free(ctx);
    fk_exits++;
}

const char *LIBUSB_CALL libusb_strerror(int code)
{
    switch (code) {
    case LIBUSB_ERROR_ACCESS: return "Access denied (insufficient permissions)";
    case LIBUSB_ERROR_NO_DEVICE: return "No such device (it may have been disconnected)";
    case LIBUSB_ERROR_BUSY: return "Resource busy";
    case LIBUSB_ERROR_PIPE: return "Pipe error";
    case LIBUSB_ERROR_OTHER: return "Other error";
    }
    return "fake error";
}

void LIBUSB_CALL libusb_free_device_list(libusb_device **list, int unref)
{
    (void)unref;
    free(list);
}

uint8_t LIBUSB_CALL libusb_get_bus_number(libusb_device *dev)
{
    return (uint8_t)(1 + dev->id);
}

uint8_t LIBUSB_CALL libusb_get_device_address(libusb_device *dev)
{
    return (uint8_t)(5 + dev->id);
}

libusb_device *LIBUSB_CALL libusb_get_device(libusb_device_handle *h)
{
    return h->dev;
}

void LIBUSB_CALL libusb_close(libusb_device_handle *h)
{
    free(h);
    fk_closes++;
}

int LIBUSB_CALL libusb_release_interface(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    fk_releases++;
    return 0;
}

/* ------------------------------------------------------------------ transfers */

struct libusb_transfer *LIBUSB_CALL libusb_alloc_transfer(int iso)
{
    (void)iso;
    fk_allocs++;
    return calloc(1, sizeof(struct libusb_transfer));
}

void LIBUSB_CALL libusb_free_transfer(struct libusb_transfer *t)
{
    if (!t)
        return;
    fk_frees++;
    free(t);
}

int LIBUSB_CALL libusb_submit_transfer(struct libusb_transfer *t)
{
    pthread_mutex_lock(&fk_mu);
    int r = 0;
    if (fk_unplugged)
        r = LIBUSB_ERROR_NO_DEVICE;
    else if (fk_nq == FK_MAXQ)
        r = LIBUSB_ERROR_BUSY;
    else if (!fk_model_has_endpoint(t->endpoint))
        r = LIBUSB_ERROR_NOT_FOUND;
    else {
        for (size_t i = 0; i < fk_nq; i++)
            if (fk_q[i].t == t)
                abort(); /* submitted twice */
        fk_q[fk_nq++] = (fk_xfer){t, 0, ms_now(), 0};
        fk_eps_seen[t->endpoint] = 1;
        pthread_cond_broadcast(&fk_cv);
    }
    pthread_mutex_unlock(&fk_mu);
    return r;
}

int LIBUSB_CALL libusb_cancel_transfer(struct libusb_transfer *t)
{
    pthread_mutex_lock(&fk_mu);
    int r = LIBUSB_ERROR_NOT_FOUND;
    for (size_t i = 0; i < fk_nq; i++)
        if (fk_q[i].t == t) {
            fk_q[i].cancelled = 1;
            r = 0;
        }
    pthread_cond_broadcast(&fk_cv);
    pthread_mutex_unlock(&fk_mu);
    return r;
}

void LIBUSB_CALL libusb_interrupt_event_handler(libusb_context *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&fk_mu);
    fk_interrupted = 1;
    pthread_cond_broadcast(&fk_cv);
    pthread_mutex_unlock(&fk_mu);
}

/* One round of USB: waits up to 1 ms (less if tv says so) unless interrupted, then lets the model move
 * the transfers in flight, in submission order per direction, and runs the callbacks of those that
 * finished outside the lock, as libusb does. */
int LIBUSB_CALL libusb_handle_events_timeout_completed(libusb_context *ctx, struct timeval *tv, int *completed)
{
    (void)ctx;
    (void)completed;
    uint64_t wait_ms = (uint64_t)tv->tv_sec * 1000u + (uint64_t)tv->tv_usec / 1000u;
    if (wait_ms > 1)
        wait_ms = 1;
    struct libusb_transfer *done[FK_MAXQ];
    size_t ndone = 0;
    pthread_mutex_lock(&fk_mu);
    if (!fk_interrupted) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)wait_ms * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&fk_cv, &fk_mu, &ts);
    }
    fk_interrupted = 0;
    int blocked[2] = {0, 0}; /* OUT, IN: an earlier transfer is still moving */
    size_t keep = 0;
    for (size_t i = 0; i < fk_nq; i++) {
        fk_xfer *x = &fk_q[i];
        struct libusb_transfer *t = x->t;
        int is_in = (t->endpoint & 0x80) != 0, finish = 1;
        if (x->cancelled)
            t->status = LIBUSB_TRANSFER_CANCELLED;
        else if (fk_unplugged)
            t->status = LIBUSB_TRANSFER_NO_DEVICE;
        else if (t->timeout && ms_now() >= x->at_ms + t->timeout)
            t->status = LIBUSB_TRANSFER_TIMED_OUT; /* libusb's own timer; what moved stays in actual_length */
        else
            finish = !blocked[is_in] && fk_model_move(x);
        t->actual_length = (int)x->done;
        if (finish)
            done[ndone++] = t;
        else {
            blocked[is_in] = 1; /* later transfers wait behind this one */
            fk_q[keep++] = *x;
        }
    }
    fk_nq = keep;
    pthread_mutex_unlock(&fk_mu);
    for (size_t i = 0; i < ndone; i++)
        done[i]->callback(done[i]);
    return 0;
}
