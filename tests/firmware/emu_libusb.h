/* SPDX-License-Identifier: Apache-2.0 */
/* A libusb whose one device is the emulated pico-ice (tests/firmware/emu_libusb.c): the core of the fake
 * libusb (tests/cli/fakeusb_core.c) with the pico-ice firmware on the emulated RP2040 (sim/rp2040/) behind
 * it, so the usb transport (host/src/transport/transport_usb.c) runs unchanged against the real firmware. */
#ifndef EMU_LIBUSB_H
#define EMU_LIBUSB_H

#include "usb_host.h"

/* Puts the booted, enumerated and configured device behind libusb; every libusb call on it then runs the
 * emulator under fakeusb_core's lock. */
void emu_libusb_attach(struct usb_host *h);

#endif
