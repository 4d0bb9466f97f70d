/* SPDX-License-Identifier: Apache-2.0 */
/* Bytes that came from a board over USB and were not yet read: a byte queue
 * that grows as needed up to a limit, shared by the "ftdi" and "usb"
 * transports (their libusb callbacks push, ntpu reads take). Pure memory
 * handling, unit-tested in tests/host/test_rx_queue.c. Not installed. */
#ifndef NTPU_RX_QUEUE_H
#define NTPU_RX_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ntpu_rx_queue {
    uint8_t *buf;
    size_t head; /* first unread byte */
    size_t len;  /* unread bytes */
    size_t cap;
    size_t limit; /* most bytes it may hold; a push past it fails */
} ntpu_rx_queue;

/* Makes room for n more bytes at the end and returns where they go; they
 * count once ntpu_rx_queue_commit says how many were written. NULL (nothing
 * changes) if the queue would pass its limit or memory runs out. */
uint8_t *ntpu_rx_queue_reserve(ntpu_rx_queue *q, size_t n);

/* Adds the first n bytes written at the last reserve (at most what it asked for). */
void ntpu_rx_queue_commit(ntpu_rx_queue *q, size_t n);

/* Appends n bytes. Returns 0, or -1 (nothing added) past the limit or out of memory. */
int ntpu_rx_queue_push(ntpu_rx_queue *q, const uint8_t *in, size_t n);

/* Moves up to n bytes from the front of the queue to out; returns how many. */
size_t ntpu_rx_queue_take(ntpu_rx_queue *q, uint8_t *out, size_t n);

/* Frees the buffer; the queue is empty and may be used again. */
void ntpu_rx_queue_free(ntpu_rx_queue *q);

#endif
