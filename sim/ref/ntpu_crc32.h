/* SPDX-License-Identifier: Apache-2.0 */
/* The link's CRC-32 (docs/protocol.md): IEEE 802.3, reflected, the value
 * zlib's crc32 gives. One function for both ends of the link: the host
 * library (link.c) and the golden model (ref.c). Internal to the library. */
#ifndef NTPU_CRC32_H
#define NTPU_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc32(crc, p, len) as zlib defines it: start from 0, chain by passing the
 * previous result. Uses carry-less multiplication where the CPU has it. */
uint32_t ntpu_crc32(uint32_t crc, const void *p, size_t len);

/* ntpu_crc32 over the len bytes at src, which are copied to dst on the way
 * (one pass over them, not a copy and then a CRC); dst and src do not overlap. */
uint32_t ntpu_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* crc32 continued over the four bytes of w, least significant first: for a
 * frame header just assembled in registers. Reading it back from the bytes
 * just stored would wait for them (a wide load cannot take its bytes from
 * several narrow stores still in flight). */
uint32_t ntpu_crc32_word(uint32_t crc, uint32_t w);

/* The same with tables only, whatever the CPU: for the tests. */
uint32_t ntpu_crc32_tables(uint32_t crc, const void *p, size_t len);

#endif
