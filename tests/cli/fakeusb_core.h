/* SPDX-License-Identifier: Apache-2.0 */
/* The core of the fake libusb that ftdi_fakeusb.c (an FTDI chip) and usb_fakeusb.c (pico-ice boards) put
 * their device models behind: the libusb calls that do not depend on the device (strerror, exit, close,
 * release, the device list's bus numbers), the transfer calls, a queue of transfers in flight, an event loop that
 * completes them about once a millisecond like libusb's, and unplugging. A model defines the rest of the
 * libusb calls and the two fk_model_ hooks below. Test code only; no real USB is touched. */
#ifndef FAKEUSB_CORE_H
#define FAKEUSB_CORE_H

#include <libusb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct libusb_context {
    int unused;
};
struct libusb_device {
    int id; /* index of the device in the model */
};
struct libusb_device_handle {
    struct libusb_device *dev;
};

/* A transfer in flight. */
typedef struct fk_xfer {
    struct libusb_transfer *t;
    size_t done;    /* bytes of it moved so far: its actual_length */
    uint64_t at_ms; /* submitted */
    int cancelled;
} fk_xfer;

/* Everything below is guarded by fk_mu; fk_cv is broadcast on every change. */
extern pthread_mutex_t fk_mu;
extern pthread_cond_t fk_cv;
extern int fk_unplugged;
extern int fk_allocs, fk_frees; /* transfers allocated and freed */
/* Calls counted, to check that everything opened is closed. */
extern int fk_inits, fk_exits, fk_opens, fk_closes, fk_claims, fk_releases;
extern uint8_t fk_eps_seen[256]; /* endpoints a transfer was submitted on */

uint64_t ms_now(void); /* monotonic milliseconds */

/* Forgets the transfers, the counts and any unplug: a fresh bus (fk_mu held). */
void fk_core_reset(void);

/* Unplugs the device: every transfer in flight and every later call fails with NO_DEVICE. */
void fk_unplug(void);

/* Defined by the model, called with fk_mu held. Whether the device has endpoint ep. */
int fk_model_has_endpoint(uint8_t ep);
/* Moves the bytes of one transfer for this round and sets its status; 1 when it is finished. A transfer
 * that is not finished holds back the later ones on the same direction. */
int fk_model_move(fk_xfer *x);

#endif
