/* SPDX-License-Identifier: Apache-2.0 */
/* The RP2040 USB device controller, polled: enumeration on EP0 (requests answered by usb_ctrl.c) and
 * the two single-buffered bulk endpoints of the link. */
#ifndef NTPU_USB_DEV_H
#define NTPU_USB_DEV_H

#include <stdint.h>

#include "usb_ctrl.h"

/* Starts the controller and connects to the bus (pull-up on D+). `st` must outlive the driver. */
void usb_dev_init(struct usb_state *st);
/* Handles bus resets, setup packets and EP0/bulk completions. Call often: EP0 has no buffer to spare. */
void usb_dev_poll(void);

/* A SETUP leaves the buffers of the transfer it abandons armed (the controller clears only the stall
 * arm), and the host's next IN or OUT, a few microseconds later, would take them: this disarms both EP0
 * buffers as soon as a SETUP is pending, and leaves the SETUP to usb_dev_poll(). Cheap: the loops that
 * hold the CPU longer than that (link transactions, bitstream bytes) call it between bytes. */
void usb_dev_ep0_guard(void);

/* Notes a bulk OUT packet completed since the last poll, and nothing else: for a request handler that
 * must see the bulk data the host sent before the request (FPGA_LOAD_END). */
void usb_dev_poll_out_only(void);
/* Bulk OUT: a packet received since the last take? Copies it to buf (64 bytes) and returns its length,
 * or returns -1 when none. The endpoint NAKs the host until usb_dev_out_arm(). */
int usb_dev_out_take(uint8_t *buf);
/* Lets the host send the next packet, when the endpoint is enabled, not halted and not armed already. */
void usb_dev_out_arm(void);
/* Bulk IN: 1 while a packet waits for the host (or the endpoint is disabled or halted). */
int usb_dev_in_busy(void);
/* Queues a packet of len <= 64 bytes (0: a zero-length packet); only when usb_dev_in_busy() is 0. */
void usb_dev_in_send(const uint8_t *buf, uint32_t len);

/* The board operations' endpoint halves (usb_ctrl.h). */
void usb_dev_configure(uint8_t config);
void usb_dev_set_halt(uint8_t ep, int halt);

#endif
