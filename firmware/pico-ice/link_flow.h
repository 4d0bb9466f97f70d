/* SPDX-License-Identifier: Apache-2.0 */
/* The SPI link's flow control (docs/firmware.md), a pure function the host tests check.
 * Each transaction starts with two header bytes each way: the RP2040 sends {bytes it will send, bytes
 * it can take}, the FPGA at the same time {bytes it can take, bytes it has}; both then move
 * min(what one has, what the other can take) bytes each way, in full duplex, padding the shorter side. */
#ifndef NTPU_LINK_FLOW_H
#define NTPU_LINK_FLOW_H

#include <stdint.h>

struct link_plan {
    uint8_t send;  /* payload bytes RP2040 -> FPGA */
    uint8_t recv;  /* payload bytes FPGA -> RP2040 */
    uint8_t total; /* bytes clocked after the header: max(send, recv) */
};

static inline struct link_plan link_plan(uint8_t have, uint8_t room, uint8_t fpga_room, uint8_t fpga_have)
{
    struct link_plan p;
    p.send = have < fpga_room ? have : fpga_room;
    p.recv = fpga_have < room ? fpga_have : room;
    p.total = p.send > p.recv ? p.send : p.recv;
    return p;
}

#endif
