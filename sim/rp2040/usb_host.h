/* SPDX-License-Identifier: Apache-2.0 */
/* A USB host at the transaction level for the emulated RP2040: control transfers on EP0 (SETUP, data,
 * status) and bulk packets on EP1, retrying NAKed transactions while the CPU runs. It checks the
 * handshakes and data toggles as it goes and counts each violation in `errors` with a line on stderr. */
#ifndef NTPU_USB_HOST_H
#define NTPU_USB_HOST_H

#include "rp2040_sim.h"

struct usb_host {
    struct rp2040 *s;
    uint8_t addr;
    int bulk_out_data1, bulk_in_data1;
    uint64_t nak_budget; /* instructions a transaction may wait through NAKs */
    uint32_t naks, errors;
};

#define USBH_STALL (-1)
#define USBH_ERROR (-2)

/* A control transfer with an IN data stage (or none when wLength is 0): returns the bytes received,
 * USBH_STALL or USBH_ERROR. */
int usbh_control_in(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index, uint16_t length,
                    uint8_t *buf);
/* A control transfer with no data stage: 0, USBH_STALL or USBH_ERROR. */
int usbh_control_nodata(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index);
/* One bulk OUT packet (<= 64 bytes), retried through NAKs: 0, USBH_STALL or USBH_ERROR. */
int usbh_bulk_out(struct usb_host *h, const uint8_t *buf, uint32_t len);
/* One bulk OUT attempt: 0, USBH_STALL, USBH_ERROR, or -3 for a NAK. */
int usbh_bulk_out_once(struct usb_host *h, const uint8_t *buf, uint32_t len);
/* One bulk IN attempt: the packet's length, USBH_STALL, USBH_ERROR, or -3 for a NAK. */
int usbh_bulk_in_once(struct usb_host *h, uint8_t *buf);
/* Runs the CPU for `us` microseconds of emulated time (at SIM_CLK_HZ). */
int usbh_wait_us(struct usb_host *h, uint64_t us);
/* A SETUP alone, as a host that abandons the transfer before its data or status stage sends it. */
int usbh_setup_only(struct usb_host *h, uint8_t type, uint8_t req, uint16_t value, uint16_t index, uint16_t length);

#endif
