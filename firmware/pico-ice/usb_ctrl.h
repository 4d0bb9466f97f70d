/* SPDX-License-Identifier: Apache-2.0 */
/* The device's descriptors and its control requests (USB 2.0 chapter 9 and the vendor requests of
 * usb_requests.h), as pure functions of the setup packet and the device state: no register is touched
 * here, so the same code runs in the firmware and in the host's unit tests. What a request does to the
 * hardware goes through the board operations; the driver (usb_dev.c) moves the bytes. */
#ifndef NTPU_USB_CTRL_H
#define NTPU_USB_CTRL_H

#include <stdint.h>

#include "usb_requests.h"

struct usb_setup {
    uint8_t bmRequestType;
    uint8_t bRequest;
    uint16_t wValue;
    uint16_t wIndex;
    uint16_t wLength;
};

/* Reads the 8-byte setup packet as the controller stores it (little-endian fields). */
void usb_setup_parse(const uint8_t raw[8], struct usb_setup *s);

/* What requests do to the board. The firmware's are in main.c; the tests record the calls. */
struct usb_board_ops {
    void *ctx;
    /* SET_CONFIGURATION / SET_INTERFACE: 1 enables the bulk endpoints (both toggles DATA0, OUT armed),
     * 0 disables them. */
    void (*configure)(void *ctx, uint8_t config);
    /* SET_FEATURE / CLEAR_FEATURE(ENDPOINT_HALT) on ep (0x01 or 0x81); clearing resets its toggle to DATA0. */
    void (*set_halt)(void *ctx, uint8_t ep, int halt);
    void (*fpga_reset)(void *ctx, int hold);
    void (*fpga_load_begin)(void *ctx);
    int (*fpga_load_end)(void *ctx); /* CDONE after the trailing clocks */
    void (*fpga_clock)(void *ctx, uint16_t div);
    void (*fpga_status)(void *ctx, uint8_t out[NTPU_USB_STATUS_LEN]);
};

#define USB_MSOS20_LEN 162 /* set header 10 + compatible ID 20 + DeviceInterfaceGUIDs property 132 */
#define USB_SERIAL_LEN 16  /* the flash ID's 8 bytes in hexadecimal */

struct usb_state {
    const struct usb_board_ops *ops;
    uint8_t configuration;
    uint8_t address;         /* from SET_ADDRESS; the driver applies it after the status stage */
    uint8_t address_pending; /* set by SET_ADDRESS; the driver clears it when it applies the address */
    uint8_t halted_out;
    uint8_t halted_in;
    char serial[USB_SERIAL_LEN + 1];
    uint8_t msos20[USB_MSOS20_LEN];
};

enum usb_reply_kind {
    USB_REPLY_STALL, /* stall the data or status stage: an unknown or malformed request */
    USB_REPLY_IN,    /* a data stage of `len` bytes from `data` (already cut to wLength), then status */
    USB_REPLY_ACK,   /* no data stage: a zero-length status packet */
};

struct usb_reply {
    enum usb_reply_kind kind;
    const uint8_t *data;
    uint16_t len;
    uint8_t buf[64]; /* replies built on the fly (strings, status) */
};

/* Resets `st` for a device whose flash unique ID is `flash_id` (the serial number). */
void usb_ctrl_init(struct usb_state *st, const struct usb_board_ops *ops, const uint8_t flash_id[8]);
/* A bus reset: address 0, not configured, no endpoint halted. */
void usb_ctrl_bus_reset(struct usb_state *st);
/* Answers one setup packet. No request accepted here has an OUT data stage: one with wLength > 0
 * that sends data to the device stalls. */
void usb_control(const struct usb_setup *s, struct usb_state *st, struct usb_reply *r);

#endif
