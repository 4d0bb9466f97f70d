/* SPDX-License-Identifier: Apache-2.0 */
/* For the fuzz targets that call ntpu_open: the openers of the USB boards stand in for the real ones (so
 * no libusb and no device is touched), and take their options through the same pure parsers the real ones
 * use (transport/ftdi_proto.c, transport/usb_proto.c) before saying there is no board. Each target defines
 * its own ntpu_transport_vsim_open. The linker then takes none of the real transport objects. */
#ifndef NTPU_FUZZ_BOARDS_H
#define NTPU_FUZZ_BOARDS_H

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "transport/ftdi_proto.h"
#include "transport/usb_proto.h"

/* An error message of more than one line (or none) breaks the library's contract. */
static void fuzz_check_one_line(const char *msg)
{
    if (!msg || !*msg || strchr(msg, '\n')) {
        abort();
    }
}

ntpu_status ntpu_transport_ftdi_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    (void)out;
    ntpu_ftdi_opts o;
    if (ntpu_ftdi_parse_opts(opts, &o, err, errlen)) {
        fuzz_check_one_line(err);
        return NTPU_ERR_INVALID_ARG;
    }
    ntpu_errf(err, errlen, "no FTDI board in the fuzz build");
    return NTPU_ERR_NO_DEVICE;
}

ntpu_status ntpu_transport_usb_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    (void)out;
    ntpu_usb_opts o;
    if (ntpu_usb_parse_opts(opts, &o, err, errlen)) {
        fuzz_check_one_line(err);
        return NTPU_ERR_INVALID_ARG;
    }
    ntpu_errf(err, errlen, "no USB board in the fuzz build");
    return NTPU_ERR_NO_DEVICE;
}

#endif
