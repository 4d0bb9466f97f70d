/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu flash: loads an iCE40 bitstream into the FPGA of a board whose USB goes
 * through the nanoTPU firmware (the pico-ice: -d usb). The FTDI boards are
 * programmed by `make flash BOARD=...` (iceprog, openFPGALoader) instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "transport/usb_proto.h"

static const char flash_help[] = "usage: ntpu flash -d usb[:serial=S] [--json] FILE.bin\n"
                                 "\n"
                                 "Loads an iCE40UP5K bitstream (the .bin from icepack) into the FPGA of a pico-ice\n"
                                 "running the nanoTPU firmware, over USB: FPGA_LOAD_BEGIN, the file on the bulk\n"
                                 "endpoint, FPGA_LOAD_END, which answers whether the FPGA took it (CDONE). The file\n"
                                 "is checked first (sync word, size, the UP5K's configuration size when the header\n"
                                 "names it); a malformed one is never sent. The FPGA keeps the design until power\n"
                                 "is lost or the board is reset; its own flash is not written.\n"
                                 "For the iCEBreaker and ULX3S use 'make flash BOARD=icebreaker|ulx3s'.\n"
                                 "\n"
                                 "  -d, --device DEV  usb or usb:serial=S (default: $NTPU_DEVICE)\n"
                                 "  --json            one JSON object on stdout\n";

/* Reads a whole file of at most max bytes. NULL after printing why. */
static uint8_t *read_bitstream(const char *path, size_t max, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail("cannot open bitstream '%s'", path);
        return NULL;
    }
    /* One byte past the limit tells a file that is too large from one that fits exactly. */
    uint8_t *buf = malloc(max + 1);
    size_t got = buf ? fread(buf, 1, max + 1, f) : 0;
    int no_mem = !buf, bad = no_mem || ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        fail(no_mem ? "out of memory reading '%s'" : "cannot read bitstream '%s'", path);
        return NULL;
    }
    *n = got;
    return buf;
}

int cmd_flash(common *cm, int argc, char **argv)
{
    char *pos[1];
    int npos;
    if (parse_args(argc, argv, cm, NULL, 0, pos, 1, &npos))
        return 1;
    if (cm->help) {
        fputs(flash_help, stdout);
        return 0;
    }
    if (npos != 1)
        return fail("flash needs one bitstream file (ntpu flash -d usb FILE.bin)");
    const char *device = cm->device ? cm->device : getenv("NTPU_DEVICE");
    if (!device || strncmp(device, "usb", 3) || (device[3] && device[3] != ':'))
        return fail("flash loads a bitstream over the pico-ice's USB ('-d usb'), not '%s'; for the iCEBreaker and "
                    "ULX3S use 'make flash BOARD=...'",
                    device ? device : "(no device given)");
    const char *opts = device[3] == ':' ? device + 4 : NULL;
    size_t n = 0;
    uint8_t *bits = read_bitstream(pos[0], NTPU_USB_BITSTREAM_MAX, &n);
    if (!bits)
        return 1;
    char err[NTPU_ERRMSG_LEN] = "";
    double t0 = now_s();
    ntpu_status st = ntpu_usb_load_bitstream(opts && *opts ? opts : NULL, bits, n, err, sizeof err);
    free(bits);
    if (st != NTPU_OK)
        return fail("flash '%s': %s", pos[0], err);
    if (cm->json) {
        printf("{\"device\":");
        json_str(stdout, device);
        printf(",\"file\":");
        json_str(stdout, pos[0]);
        printf(",\"bytes\":%zu,\"cdone\":1,\"seconds\":%.3f}\n", n, now_s() - t0);
    } else {
        printf("flash: %s loaded into the FPGA of %s (%zu bytes, %.2f s); CDONE is high\n", pos[0], device, n,
               now_s() - t0);
    }
    return 0;
}
