/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel-driver calls of the fake libusb for a vendor-class interface (class 0xFF), which no kernel
 * driver binds: shared by the pico-ice models, the simulated boards of usb_fakeusb.c and the emulated
 * firmware of tests/firmware/emu_libusb.c. (ftdi_fakeusb.c models ftdi_sio holding its chip instead.) */
#include "fakeusb_core.h"

int LIBUSB_CALL libusb_kernel_driver_active(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    return 0;
}

int LIBUSB_CALL libusb_detach_kernel_driver(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    return LIBUSB_ERROR_NOT_FOUND;
}

int LIBUSB_CALL libusb_attach_kernel_driver(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    return LIBUSB_ERROR_NOT_FOUND;
}
