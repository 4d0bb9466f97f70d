/* SPDX-License-Identifier: Apache-2.0 */
/* The emulated pico-ice as a whole: the firmware image on the emulated RP2040, the Verilator model of the
 * pico-ice board top as its FPGA (sim/vsim/vsim_pico_ice.h), and a USB host on the other side of its
 * controller. The library's vsim:board=pico-ice (host/src/transport/transport_pico_ice.c) and the test of
 * the whole path through libusb (tests/firmware/emu_usb_path.c) are built on it. One thread at a time. */
#ifndef NTPU_PICO_ICE_H
#define NTPU_PICO_ICE_H

#include <stddef.h>
#include <stdint.h>

#include "rp2040_sim.h"
#include "usb_host.h"
#include "vsim_pico_ice.h"

typedef struct pico_ice {
    struct rp2040 s;
    struct usb_host h;
    vsim_pico_ice *fpga;
    struct fpga_design design;
    uint8_t *tx; /* bytes queued for bulk OUT */
    size_t tx_head, tx_len, tx_cap;
    uint8_t rx[64]; /* a bulk IN packet's bytes not yet read */
    size_t rx_head, rx_len;
    uint64_t out_bytes, in_bytes; /* moved over USB since the link opened */
} pico_ice;

/* The firmware image `make firmware` builds, linked into the library (pico_ice_firmware.S). */
extern const uint8_t ntpu_pico_ice_firmware[], ntpu_pico_ice_firmware_end[];

/* Boots image (boot2 CRC checked), attaches the FPGA model and enumerates the device as a host's USB stack
 * does (reset, SET_ADDRESS(1), SET_CONFIGURATION(1)). 0, or -1 with a one-line reason in err. Free with
 * pico_ice_free either way. */
int pico_ice_boot(pico_ice *p, const uint8_t *image, size_t len, char *err, size_t errlen);
/* Loads a bitstream through the vendor requests (FPGA_LOAD_BEGIN, bulk OUT, FPGA_LOAD_END): 0 when CDONE
 * rose, -1 with a reason in err. The FPGA's configuration model checks only the sync word; the design it
 * then starts is the board top's RTL. */
int pico_ice_load(pico_ice *p, const uint8_t *bits, size_t n, char *err, size_t errlen);
void pico_ice_free(pico_ice *p);

/* The link's bytes: queued, then moved while pico_ice_read runs the board. */
int pico_ice_write(pico_ice *p, const uint8_t *buf, size_t n); /* 0, or -1 when out of memory */
/* Runs the board until n bytes have arrived on bulk IN, or for idle_us of emulated time in which no byte
 * moved either way, or until the emulation stops with an error (p->s.error). Returns the bytes read. */
size_t pico_ice_read(pico_ice *p, uint8_t *buf, size_t n, uint64_t idle_us);
/* Emulated time since boot, in microseconds. */
uint64_t pico_ice_time_us(const pico_ice *p);

#endif
