/* SPDX-License-Identifier: Apache-2.0 */
/* The libusb bulk engine the "ftdi" and "usb" transports share: an event
 * thread that keeps several bulk-IN transfers in flight for as long as the
 * handle is open and queues what they bring (rx_queue.h), a bulk-OUT write in
 * chunks with a timeout, cancel-and-reap at close or unplug, and the mapping
 * of libusb's errors to ntpu_status with a one-line message naming the device.
 * Finding the device, claiming it and its control requests stay with each
 * transport. Not installed.
 *
 * Locking: the callbacks run on the event thread and touch the shared state
 * under mu; libusb calls are never made while holding mu. The hooks below run
 * with mu held. */
#ifndef NTPU_USB_BULK_H
#define NTPU_USB_BULK_H

#include <libusb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ntpu/ntpu.h"
#include "rx_queue.h"

#define NTPU_USB_BULK_MAX_IN 8 /* most bulk-IN transfers in flight */
#define NTPU_USB_BULK_MSG_LEN 200

/* What differs between the transports: sizes, endpoints, the words of the
 * messages and two hooks. Filled by the transport before ntpu_usb_bulk_start. */
typedef struct ntpu_usb_bulk_cfg {
    const char *name;             /* the device in messages: "the FT2232H", "the pico-ice" */
    const char *unplugged;        /* the whole message when the device leaves the bus */
    ntpu_status unplugged_status; /* and the status it comes with */
    const char *failed_hint;      /* appended to a failed transfer or call, e.g. " (board unplugged?)"; "" for none */
    const char *stall_hint;       /* why an endpoint may stall, e.g. "board reset?" */
    const char *timeout_hint;     /* why a write may time out, e.g. "is the board's UART stuck?" */
    unsigned in_xfers;            /* bulk-IN transfers in flight, at most NTPU_USB_BULK_MAX_IN */
    size_t in_bytes;              /* each: a whole number of packets */
    size_t out_chunk;             /* bytes per bulk-OUT transfer */
    size_t rx_limit;              /* bytes queued and unread before the transport gives up */
    uint8_t ep_in, ep_out;
    void *owner; /* passed to the hooks */
    /* The bytes of one bulk-IN transfer onto the queue (NULL: as they came).
     * 0, or -1 if the queue refused them. */
    int (*push)(void *owner, ntpu_rx_queue *q, const uint8_t *data, size_t n);
    /* The timeout of a bulk-OUT transfer of chunk bytes. */
    unsigned (*out_timeout_ms)(void *owner, size_t chunk);
    /* Adds to the message of a failed recv (NULL: nothing to add). */
    void (*recv_note)(void *owner, char *err, size_t errlen);
} ntpu_usb_bulk_cfg;

typedef struct ntpu_usb_bulk ntpu_usb_bulk;

typedef struct ntpu_usb_bulk_in {
    ntpu_usb_bulk *b;
    struct libusb_transfer *xfer;
    int busy; /* submitted and its callback not yet run */
} ntpu_usb_bulk_in;

/* Embedded in a transport's context, zeroed; the transport sets usb and h (and
 * iface, claimed, detached once it claims) and closes it with ntpu_usb_bulk_close. */
struct ntpu_usb_bulk {
    ntpu_usb_bulk_cfg cfg;
    libusb_context *usb; /* our own: nothing shared with other handles or the application */
    libusb_device_handle *h;
    int iface;
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
    ntpu_usb_bulk_in in[NTPU_USB_BULK_MAX_IN];
    unsigned in_busy;
    struct libusb_transfer *out;
    uint8_t *out_buf; /* the bytes of the write in flight: ours, so a stuck transfer never points at the caller's */
    int out_busy;
    enum libusb_transfer_status out_status;
    int out_actual;
    ntpu_rx_queue rx;
    ntpu_status fail; /* the first fatal USB error: every later call returns it */
    char fail_msg[NTPU_USB_BULK_MSG_LEN];
};

/* Creates the mutex and the condition variable. NTPU_OK or NTPU_ERR_NO_MEMORY. */
ntpu_status ntpu_usb_bulk_init(ntpu_usb_bulk *b, char *err, size_t errlen);

/* Allocates the transfers, starts the event thread and puts the reads in
 * flight on the claimed handle. NTPU_OK, NTPU_ERR_NO_MEMORY, or
 * NTPU_ERR_NO_DEVICE / NTPU_ERR_IO if the first reads cannot be submitted. */
ntpu_status ntpu_usb_bulk_start(ntpu_usb_bulk *b, char *err, size_t errlen);

/* Writes n bytes on bulk OUT in chunks. NTPU_ERR_TIMEOUT if the device stopped
 * taking bytes (not fatal); after a fatal error, that error on every call. */
ntpu_status ntpu_usb_bulk_send(ntpu_usb_bulk *b, const uint8_t *buf, size_t n, char *err, size_t errlen);

/* Reads n bytes from the queue, waiting up to timeout_ms for each new byte;
 * *got says how many came. Bytes that came before a failure are delivered
 * before it is returned. NTPU_ERR_TIMEOUT or the fatal error when short. */
ntpu_status ntpu_usb_bulk_recv(ntpu_usb_bulk *b, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                               size_t errlen);

/* Cancels and reaps the transfers, stops the thread, gives the interface back
 * and closes the handle and the context. A transfer that never comes back
 * still belongs to libusb: then those are leaked, as the only safe thing. */
void ntpu_usb_bulk_close(ntpu_usb_bulk *b);

/* The transport ops (internal.h) of a context that starts with its
 * ntpu_usb_bulk, so that the context's pointer is the engine's, and was
 * allocated with malloc: close closes the engine and frees the context. */
ntpu_status ntpu_usb_bulk_op_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen);
ntpu_status ntpu_usb_bulk_op_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                                  size_t errlen);
void ntpu_usb_bulk_op_close(void *ctx);

#endif
