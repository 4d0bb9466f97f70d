/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the device-string parser: ntpu_open's kind and link options (device.c) and each kind's own
 * options: ref's (transport_ref.c, opened for real), ftdi's and usb's (their pure parsers, fuzz_boards.h).
 * vsim's options are parsed by the Verilator harness (C++), which is not in this build: the string is
 * refused after the link options are taken. A string that opens must give a working device (its STATUS
 * answers, or says in one line why not); one that does not must say why in one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_boards.h"
#include "ntpu/ntpu.h"

ntpu_status ntpu_transport_vsim_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    (void)opts;
    (void)out;
    ntpu_errf(err, errlen, "no Verilator model in the fuzz build");
    return NTPU_ERR_NO_DEVICE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) {
        return 0;
    }
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    /* Big models and many threads are valid but slow: keep each run to milliseconds. */
    if (strstr(s, "threads=") || strstr(s, "ub=") || strstr(s, "acc=") || strstr(s, "wb=")) {
        free(s);
        return 0;
    }
    ntpu_device *dev = NULL;
    ntpu_status st = ntpu_open(s, &dev);
    if (st == NTPU_OK) {
        ntpu_info info;
        ntpu_device_status ds;
        if (ntpu_get_info(dev, &info) != NTPU_OK || info.rows < 2) {
            abort();
        }
        if (ntpu_read_status(dev, &ds) != NTPU_OK) { /* with faults= a round trip may fail, but say why */
            fuzz_check_one_line(ntpu_last_error(dev));
        }
    } else if (dev) {
        fuzz_check_one_line(ntpu_last_error(dev));
    }
    ntpu_close(dev);
    free(s);
    return 0;
}
