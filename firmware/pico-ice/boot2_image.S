/* SPDX-License-Identifier: Apache-2.0 */
/* The padded, CRC-stamped boot2 (256 bytes) placed at the start of flash by link.ld. */
    .section .boot2, "a"
    .incbin BOOT2_IMAGE
