/* SPDX-License-Identifier: Apache-2.0 */
/* The start of an iCE40 bitstream as icepack writes one, for the tests of the usb transport's bitstream
 * checks (tests/host/test_usb_proto.c) and of its loading (tests/cli/usb_fakeusb.c). */
#ifndef NTPU_TEST_ICE40_BITS_H
#define NTPU_TEST_ICE40_BITS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* At b: a comment (empty, or a short one when `comment`), the sync word, frequency range, CRC reset, warm
 * boot, bank width (width - 1), offset, height and bank 0; the caller appends CRAM data. Returns the bytes
 * written (at most 34). */
static inline size_t ice40_bits_header(uint8_t *b, unsigned width, unsigned height, int comment)
{
    static const uint8_t with_comment[] = {0xFF, 0x00, 'L', 'a', 't', 0x00, 'x', 0x00, 0x00, 0xFF};
    static const uint8_t empty_comment[] = {0xFF, 0x00, 0x00, 0xFF};
    static const uint8_t head[] = {0x7E, 0xAA, 0x99, 0x7E, 0x51, 0x00, 0x01, 0x05, 0x92, 0x00, 0x20, 0x62,
                                   0x00, 0x00, 0x82, 0x00, 0x00, 0x72, 0x00, 0x00, 0x11, 0x00, 0x01, 0x01};
    size_t n = comment ? sizeof with_comment : sizeof empty_comment;
    memcpy(b, comment ? with_comment : empty_comment, n);
    memcpy(b + n, head, sizeof head);
    b[n + 12] = (uint8_t)((width - 1) >> 8); /* the 0x62 command's operand */
    b[n + 13] = (uint8_t)(width - 1);
    b[n + 18] = (uint8_t)(height >> 8); /* the 0x72 command's operand */
    b[n + 19] = (uint8_t)height;
    return n + sizeof head;
}

/* A bitstream laid out as icepack writes one, for a UP5K (or another part), with `data` bytes of
 * configuration, ended by the CRC, wakeup and padding unless cut. */
static inline size_t ice40_bits_make(uint8_t *b, unsigned width, unsigned height, size_t data, int cut)
{
    size_t n = ice40_bits_header(b, width, height, 0);
    for (size_t i = 0; i < data; i++)
        b[n++] = (uint8_t)(i * 13u & 0xF0u); /* never 01 06 */
    if (!cut) {
        const uint8_t t[] = {0x00, 0x00, 0x22, 0x12, 0x34, 0x01, 0x06, 0x00};
        memcpy(b + n, t, sizeof t);
        n += sizeof t;
    }
    return n;
}

#endif
