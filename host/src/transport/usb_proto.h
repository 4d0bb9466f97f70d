/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice firmware's USB interface (firmware/pico-ice/usb_requests.h,
 * decision 0036) as pure functions, for the "usb" transport (transport_usb.c):
 * the device-string options, the vendor requests, the checks of their replies,
 * the checks of an iCE40 bitstream before it is sent, and the choice of one
 * board among those plugged in. Nothing here touches libusb, so all of it is
 * unit-tested (tests/host/test_usb_proto.c). Not installed. */
#ifndef NTPU_USB_PROTO_H
#define NTPU_USB_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/ntpu.h"
#include "usb_requests.h"

/* What the firmware's product string says (docs/firmware.md). 1209:0001 is a
 * shared test PID, so a device must also say this before it is ours. */
#define NTPU_USB_PRODUCT "nanoTPU pico-ice"

/* ------------------------------------------------------------------ device-string options */

#define NTPU_USB_SERIAL_MAX 64 /* room for a serial number, with its NUL */

typedef struct ntpu_usb_opts {
    char serial[NTPU_USB_SERIAL_MAX]; /* "" = the only board there is */
} ntpu_usb_opts;

/* Parses the part of "usb[:serial=S]" after the colon (NULL or "" for the
 * defaults). timeout_ms=, faults= and fault_seed= never get here: device.c
 * takes them for every device kind. Returns 0, or -1 with a one-line reason in
 * err. */
int ntpu_usb_parse_opts(const char *opts, ntpu_usb_opts *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ vendor requests */

/* One control transfer: a vendor request to the device. length is wLength:
 * the bytes of the IN data stage (no request has an OUT data stage). */
typedef struct ntpu_usb_ctrl {
    uint8_t request_type;
    uint8_t request;
    uint16_t value;
    uint16_t index;
    uint16_t length;
    const char *what; /* names it in error messages */
} ntpu_usb_ctrl;

ntpu_usb_ctrl ntpu_usb_req_get_version(void);
ntpu_usb_ctrl ntpu_usb_req_get_status(void);
/* hold non-zero: keep CRESET_B low; 0: pulse it, so the FPGA boots from its own flash. */
ntpu_usb_ctrl ntpu_usb_req_fpga_reset(int hold);
ntpu_usb_ctrl ntpu_usb_req_load_begin(void);
ntpu_usb_ctrl ntpu_usb_req_load_end(void);
/* The FPGA clock becomes 48 MHz / divider; 0 stops it. */
ntpu_usb_ctrl ntpu_usb_req_set_clock(uint16_t divider);

/* ------------------------------------------------------------------ replies */

/* The GET_VERSION reply (n bytes, n < 0 a libusb error already handled by the
 * caller is not passed here). NTPU_OK when the major is NTPU_USB_PROTO_MAJOR (any
 * minor); NTPU_ERR_UNSUPPORTED for another major; NTPU_ERR_IO for a reply of
 * fewer than 2 bytes. *major and *minor (may be NULL) get what the board said. */
ntpu_status ntpu_usb_check_version(const uint8_t *buf, int n, unsigned *major, unsigned *minor, char *err,
                                   size_t errlen);

typedef struct ntpu_usb_status {
    uint8_t flags;      /* NTPU_USB_STATUS_CDONE, _RUNNING, _LOADING */
    uint16_t clock_div; /* the FPGA clock is 48 MHz / clock_div; 0: stopped */
    uint32_t loaded;    /* bitstream bytes received since the last FPGA_LOAD_BEGIN */
} ntpu_usb_status;

/* Decodes the GET_STATUS reply of n bytes. NTPU_OK, or NTPU_ERR_IO when it is
 * shorter than NTPU_USB_STATUS_LEN. */
ntpu_status ntpu_usb_parse_status(const uint8_t *buf, int n, ntpu_usb_status *out, char *err, size_t errlen);

/* The FPGA_LOAD_END reply of n bytes: NTPU_OK when CDONE is 1; NTPU_ERR_DEVICE
 * when it is 0 (the FPGA refused the bitstream); NTPU_ERR_IO for an empty
 * reply or a value other than 0 and 1. */
ntpu_status ntpu_usb_check_cdone(const uint8_t *buf, int n, char *err, size_t errlen);

/* ------------------------------------------------------------------ bitstreams */

/* A UP5K bitstream from icepack is 104,090 bytes; anything past this is not one. */
#define NTPU_USB_BITSTREAM_MAX (1u << 20)

/* What the header of an iCE40 bitstream says: the CRAM bank width and the
 * first bank height, which name the device (0 when the header does not set them
 * before the first data). */
typedef struct ntpu_usb_bitinfo {
    size_t sync_at;     /* offset of the sync word 0x7EAA997E */
    unsigned width;     /* CRAM bank width in bits */
    unsigned height;    /* the first CRAM bank's height */
    const char *device; /* "UP5K", "HX8K", ...; NULL when the width and height are unknown */
} ntpu_usb_bitinfo;

/* Checks bits[0..n) before it is sent to the pico-ice's iCE40UP5K: not empty,
 * at most NTPU_USB_BITSTREAM_MAX bytes, the optional comment (0xFF 0x00 ...
 * 0x00 0xFF) and 0xFF padding, then the sync word; and, when the header sets
 * the CRAM bank width and height before the first data (icepack's always do),
 * that they are the UP5K's (692 wide, 336 high). It cannot check the CRC or
 * that the file is whole: the FPGA does, and CDONE says. NTPU_OK, or
 * NTPU_ERR_FORMAT with a one-line reason in err. info may be NULL. */
ntpu_status ntpu_usb_check_bitstream(const uint8_t *bits, size_t n, ntpu_usb_bitinfo *info, char *err, size_t errlen);

/* ------------------------------------------------------------------ choosing a board */

/* One USB device with the firmware's VID:PID. */
typedef struct ntpu_usb_candidate {
    const char *serial;  /* "" if it has none or it could not be read */
    const char *product; /* the product string; NULL if it could not be read */
    int denied;          /* libusb_open said LIBUSB_ERROR_ACCESS: nothing could be read */
} ntpu_usb_candidate;

/* Chooses among the n candidates: skips those whose product string is known and
 * is not NTPU_USB_PRODUCT; then, with a serial asked for, the one with that
 * serial; without, the only one. NTPU_OK with *pick its index; else a one-line
 * reason in err and NTPU_ERR_NO_DEVICE (none, none with that serial, or only
 * ones we may not open) or NTPU_ERR_INVALID_ARG (several and no serial). */
ntpu_status ntpu_usb_choose(const ntpu_usb_candidate *c, size_t n, const char *serial, size_t *pick, char *err,
                            size_t errlen);

#endif
