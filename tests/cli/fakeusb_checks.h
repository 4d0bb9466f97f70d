/* SPDX-License-Identifier: Apache-2.0 */
/* What the fake-libusb tests of both USB transports (ftdi_fakeusb.c, usb_fakeusb.c) check alike: the CHECK
 * macro and its count, and the byte path every transport must give (fakeusb_checks.c). Test code only. */
#ifndef FAKEUSB_CHECKS_H
#define FAKEUSB_CHECKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"

extern int fk_failures; /* checks failed so far */

#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
            fk_failures++;                              \
        }                                               \
    } while (0)

/* Bytes the byte-path checks send: out[i] for i < total. */
void fk_fill_pattern(uint8_t *out, size_t total);

/* total bytes of out sent in one call (several bulk-OUT chunks), read back into in by reads of the seven
 * sizes in turn: they must come back unchanged. */
void fk_check_round_trip(const ntpu_transport *tp, const uint8_t *out, uint8_t *in, size_t total,
                         const size_t sizes[7]);

/* Nothing to read: a timeout after about the time asked for; then part of a read (10 of 20 bytes):
 * what came is delivered, the count says how much, and the message says "10 of 20". */
void fk_check_idle_and_short_reads(const ntpu_transport *tp, const uint8_t *out, uint8_t *in);

#endif
