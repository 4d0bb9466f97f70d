/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice firmware's USB interface, shared by the firmware and the host's `usb` transport: the one
 * place these numbers live (docs/decisions/0036-pico-ice-usb-interface.md, docs/firmware.md).
 *
 * Interface 0, class 0xFF: bulk OUT NTPU_USB_EP_OUT and bulk IN NTPU_USB_EP_IN, 64-byte packets, carry the
 * link's byte stream (docs/protocol.md) to and from the FPGA; the firmware does not look inside it.
 * Vendor requests go to the device (bmRequestType 0x40 host-to-device, 0xC0 device-to-host). */
#ifndef NTPU_USB_REQUESTS_H
#define NTPU_USB_REQUESTS_H

/* pid.codes' VID; the PID is a provisional test PID until pid.codes assigns one (decision 0036). */
#define NTPU_USB_VID 0x1209
#define NTPU_USB_PID 0x0001

/* The protocol below: the host refuses a different major, accepts a higher minor. */
#define NTPU_USB_PROTO_MAJOR 1
#define NTPU_USB_PROTO_MINOR 0

#define NTPU_USB_EP_OUT 0x01
#define NTPU_USB_EP_IN 0x81
#define NTPU_USB_PACKET 64

#define NTPU_USB_REQTYPE_OUT 0x40 /* vendor, device, host-to-device */
#define NTPU_USB_REQTYPE_IN 0xC0  /* vendor, device, device-to-host */

enum ntpu_usb_request {
    /* IN, wLength >= 2: {NTPU_USB_PROTO_MAJOR, NTPU_USB_PROTO_MINOR}. */
    NTPU_USB_REQ_GET_VERSION = 0x01,
    /* IN, wLength >= 8: the struct below, little-endian. */
    NTPU_USB_REQ_GET_STATUS = 0x02,
    /* OUT, no data. wValue 1: hold CRESET_B low (the FPGA stops, the SPI bus is the RP2040's).
     * wValue 0: pulse CRESET_B with SS high, so the FPGA configures itself from its own flash. */
    NTPU_USB_REQ_FPGA_RESET = 0x10,
    /* OUT, no data. Starts SPI configuration of the FPGA; from here until FPGA_LOAD_END every byte on
     * bulk OUT is bitstream, sent MSB first, and the link is cut. */
    NTPU_USB_REQ_FPGA_LOAD_BEGIN = 0x11,
    /* IN, wLength >= 1: finishes the configuration (the bulk OUT bytes already accepted are sent first)
     * and answers CDONE: 1 the FPGA runs the bitstream, 0 it refused it. The link resumes. */
    NTPU_USB_REQ_FPGA_LOAD_END = 0x12,
    /* OUT, no data. wValue: the FPGA clock on GP24 is 48 MHz / wValue; 0 stops it. */
    NTPU_USB_REQ_SET_FPGA_CLOCK = 0x13,
    /* IN, wIndex 7 (MS_OS_20_DESCRIPTOR_INDEX): the Microsoft OS 2.0 descriptor set. The BOS names
     * this vendor code; Windows asks for it, nothing else needs to. */
    NTPU_USB_REQ_MS_OS_20 = 0x20,
};

/* GET_STATUS reply, 8 bytes. */
#define NTPU_USB_STATUS_CDONE 0x01   /* flags: the FPGA is configured */
#define NTPU_USB_STATUS_RUNNING 0x02 /* flags: CRESET_B is released */
#define NTPU_USB_STATUS_LOADING 0x04 /* flags: between FPGA_LOAD_BEGIN and FPGA_LOAD_END */
#define NTPU_USB_STATUS_LEN 8
/* byte 0 flags, byte 1 reserved (0), bytes 2..3 the clock divider (0: stopped),
 * bytes 4..7 the bitstream bytes received since the last FPGA_LOAD_BEGIN. */

#endif
