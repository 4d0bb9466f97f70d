/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice firmware's USB interface as pure functions (see usb_proto.h). */
#include "usb_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ------------------------------------------------------------------ options */

int ntpu_usb_parse_opts(const char *opts, ntpu_usb_opts *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int seen_serial = 0;
    const char *p = opts;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len < 7 || strncmp(p, "serial=", 7)) {
            ntpu_errf(err, errlen,
                      "unknown usb option '%.*s' (expected serial=S; any device also takes timeout_ms=T, faults=RATE, "
                      "fault_seed=S)",
                      (int)len, p);
            return -1;
        }
        if (seen_serial++) {
            ntpu_errf(err, errlen, "usb option 'serial' is given twice");
            return -1;
        }
        const char *v = p + 7;
        size_t vlen = len - 7;
        if (vlen == 0 || vlen >= sizeof out->serial) {
            ntpu_errf(err, errlen, "usb serial= needs 1 to %zu characters", sizeof out->serial - 1);
            return -1;
        }
        for (size_t i = 0; i < vlen; i++)
            if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] > '~') {
                ntpu_errf(err, errlen, "usb serial '%.*s' has a character that cannot be in a serial number", (int)vlen,
                          v);
                return -1;
            }
        memcpy(out->serial, v, vlen);
        out->serial[vlen] = 0;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

/* ------------------------------------------------------------------ vendor requests */

static ntpu_usb_ctrl req(uint8_t type, uint8_t request, uint16_t value, uint16_t length, const char *what)
{
    /* Every request goes to the device (wIndex 0); none has an OUT data stage. */
    return (ntpu_usb_ctrl){type, request, value, 0, length, what};
}

ntpu_usb_ctrl ntpu_usb_req_get_version(void)
{
    return req(NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_VERSION, 0, 2, "GET_VERSION");
}

ntpu_usb_ctrl ntpu_usb_req_get_status(void)
{
    return req(NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, NTPU_USB_STATUS_LEN, "GET_STATUS");
}

ntpu_usb_ctrl ntpu_usb_req_fpga_reset(int hold)
{
    return req(NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_FPGA_RESET, hold ? 1 : 0, 0, "FPGA_RESET");
}

ntpu_usb_ctrl ntpu_usb_req_load_begin(void)
{
    return req(NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_FPGA_LOAD_BEGIN, 0, 0, "FPGA_LOAD_BEGIN");
}

ntpu_usb_ctrl ntpu_usb_req_load_end(void)
{
    return req(NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_FPGA_LOAD_END, 0, 1, "FPGA_LOAD_END");
}

ntpu_usb_ctrl ntpu_usb_req_set_clock(uint16_t divider)
{
    return req(NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_SET_FPGA_CLOCK, divider, 0, "SET_FPGA_CLOCK");
}

/* ------------------------------------------------------------------ replies */

ntpu_status ntpu_usb_check_version(const uint8_t *buf, int n, unsigned *major, unsigned *minor, char *err,
                                   size_t errlen)
{
    if (n < 2)
        return ntpu_errst(err, errlen, NTPU_ERR_IO,
                          "the board answered GET_VERSION with %d bytes, not 2: is it running the nanoTPU firmware?",
                          n < 0 ? 0 : n);
    if (major)
        *major = buf[0];
    if (minor)
        *minor = buf[1];
    if (buf[0] != NTPU_USB_PROTO_MAJOR)
        return ntpu_errst(
            err, errlen, NTPU_ERR_UNSUPPORTED, "firmware protocol %u.%u, this host speaks %u.x: update %s", buf[0],
            buf[1], NTPU_USB_PROTO_MAJOR,
            buf[0] > NTPU_USB_PROTO_MAJOR ? "nanoTPU on this host"
                                          : "the board's firmware (make firmware flash-firmware, docs/firmware.md)");
    return NTPU_OK;
}

ntpu_status ntpu_usb_parse_status(const uint8_t *buf, int n, ntpu_usb_status *out, char *err, size_t errlen)
{
    if (n < NTPU_USB_STATUS_LEN)
        return ntpu_errst(err, errlen, NTPU_ERR_IO, "the board answered GET_STATUS with %d bytes, not %d",
                          n < 0 ? 0 : n, NTPU_USB_STATUS_LEN);
    out->flags = buf[0];
    out->clock_div = ntpu_rd16(buf + 2);
    out->loaded = ntpu_rd32(buf + 4);
    return NTPU_OK;
}

ntpu_status ntpu_usb_check_cdone(const uint8_t *buf, int n, char *err, size_t errlen)
{
    if (n < 1)
        return ntpu_errst(err, errlen, NTPU_ERR_IO, "the board answered FPGA_LOAD_END with no CDONE byte");
    if (buf[0] == 0)
        return ntpu_errst(err, errlen, NTPU_ERR_DEVICE, "the FPGA refused the bitstream (CDONE stayed low)");
    if (buf[0] != 1)
        return ntpu_errst(err, errlen, NTPU_ERR_IO, "the board answered FPGA_LOAD_END with 0x%02X, not CDONE 0 or 1",
                          buf[0]);
    return NTPU_OK;
}

/* ------------------------------------------------------------------ bitstreams */

/* The iCE40 parts by their CRAM bank width and (first) height, as the
 * configuration header sets them (icestorm's bitstream notes). */
static const struct {
    unsigned width, height;
    const char *name;
} ice40_parts[] = {
    {692, 336, "UP5K"}, {692, 176, "iCE5LP4K (u4k)"}, {656, 176, "LM4K"},
    {182, 80, "LP384"}, {332, 144, "HX1K/LP1K"},      {872, 272, "HX8K/LP8K"},
};

/* Offset just past the optional comment and 0xFF padding, or SIZE_MAX when a
 * comment never ends. */
static size_t skip_preamble(const uint8_t *b, size_t n)
{
    size_t p = 0;
    if (n >= 2 && b[0] == 0xFF && b[1] == 0x00) {
        p = 2;
        while (p + 1 < n && !(b[p] == 0x00 && b[p + 1] == 0xFF))
            p++;
        if (p + 1 >= n)
            return SIZE_MAX;
        p += 2;
    }
    while (p < n && b[p] == 0xFF)
        p++;
    return p;
}

/* Walks the commands after the sync word up to the first data (an opcode byte:
 * command in the high nibble, payload length in the low one, payload MSB
 * first), noting the first bank width (command 6, width - 1) and height
 * (command 7). 0, or -1 if the file ends before any data. */
static int walk_header(const uint8_t *b, size_t n, size_t p, ntpu_usb_bitinfo *bi)
{
    while (p < n) {
        unsigned cmd = b[p] >> 4, len = b[p] & 15u;
        if (p + 1 + len > n)
            return -1;
        uint32_t v = 0;
        for (unsigned i = 0; i < len && i < 4; i++)
            v = v << 8 | b[p + 1 + i];
        if (cmd == 0 && (v == 1 || v == 3)) /* CRAM or BRAM data follows */
            return 0;
        if (cmd == 6 && !bi->width)
            bi->width = v + 1;
        if (cmd == 7 && !bi->height)
            bi->height = v;
        p += 1 + len;
    }
    return -1;
}

ntpu_status ntpu_usb_check_bitstream(const uint8_t *bits, size_t n, ntpu_usb_bitinfo *info, char *err, size_t errlen)
{
    ntpu_usb_bitinfo bi = {0, 0, 0, NULL};
    if (n == 0)
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "the bitstream is empty");
    if (n > NTPU_USB_BITSTREAM_MAX)
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                          "the bitstream is %zu bytes; an iCE40UP5K's is about 104 KB, at most %u is accepted", n,
                          NTPU_USB_BITSTREAM_MAX);
    size_t p = skip_preamble(bits, n);
    if (p == SIZE_MAX)
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                          "the bitstream's comment (FF 00 ...) never ends with 00 FF: not an iCE40 bitstream");
    static const uint8_t sync[4] = {0x7E, 0xAA, 0x99, 0x7E};
    if (n - p < 4 || memcmp(bits + p, sync, 4))
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                          "no iCE40 sync word (7E AA 99 7E) at byte %zu: not an iCE40 bitstream (the .bin from "
                          "icepack, not the .asc)",
                          p);
    bi.sync_at = p;
    if (walk_header(bits, n, p + 4, &bi))
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                          "the bitstream ends inside its header, before any configuration data (truncated?)");
    if (bi.width && bi.height) {
        for (size_t i = 0; i < sizeof ice40_parts / sizeof ice40_parts[0]; i++)
            if (ice40_parts[i].width == bi.width && ice40_parts[i].height == bi.height)
                bi.device = ice40_parts[i].name;
        if (!bi.device || strcmp(bi.device, "UP5K"))
            return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                              "a bitstream for the iCE40 %s (CRAM banks %u x %u); the pico-ice has an iCE40UP5K "
                              "(692 x 336)",
                              bi.device ? bi.device : "of unknown size", bi.width, bi.height);
    }
    if (info)
        *info = bi;
    return NTPU_OK;
}

/* ------------------------------------------------------------------ choosing a board */

/* Appends ", s" (or "s" first) to list, as room allows. */
static void list_add(char *list, size_t len, const char *s)
{
    size_t used = strlen(list);
    if (used + 1 < len)
        snprintf(list + used, len - used, "%s%s", used ? ", " : "", s);
}

ntpu_status ntpu_usb_choose(const ntpu_usb_candidate *c, size_t n, const char *serial, size_t *pick, char *err,
                            size_t errlen)
{
    size_t ours = 0, denied = 0, foreign = 0, match = SIZE_MAX, only = SIZE_MAX;
    char serials[160] = "", others[120] = "";
    for (size_t i = 0; i < n; i++) {
        if (c[i].denied) {
            denied++;
            continue;
        }
        if (c[i].product && strcmp(c[i].product, NTPU_USB_PRODUCT)) {
            foreign++;
            list_add(others, sizeof others, c[i].product[0] ? c[i].product : "(no product string)");
            continue;
        }
        ours++;
        only = i;
        list_add(serials, sizeof serials, c[i].serial[0] ? c[i].serial : "(no serial)");
        if (serial && serial[0] && !strcmp(c[i].serial, serial) && match == SIZE_MAX)
            match = i;
    }
    static const char udev[] = "permission denied: add a udev rule (see docs/boards.md)";
    if (serial && serial[0]) {
        if (match != SIZE_MAX) {
            *pick = match;
            return NTPU_OK;
        }
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "no nanoTPU pico-ice board with serial '%s' (found: %s%s%s)",
                          serial, ours ? serials : "none", denied ? "; others could not be opened, " : "",
                          denied ? udev : "");
    }
    if (ours == 1 && denied == 0) {
        *pick = only;
        return NTPU_OK;
    }
    if (ours + denied > 1)
        return ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG,
                          "%zu nanoTPU pico-ice boards found (serials: %s%s): name one with usb:serial=S",
                          ours + denied, ours ? serials : "",
                          denied ? (ours ? ", and some not readable" : "not readable") : "");
    if (denied)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE, "cannot open the pico-ice (%04x:%04x): %s", NTPU_USB_VID,
                          NTPU_USB_PID, udev);
    return ntpu_errst(err, errlen, NTPU_ERR_NO_DEVICE,
                      "no nanoTPU pico-ice board found (VID:PID %04x:%04x); is it plugged in and running the nanoTPU "
                      "firmware (docs/firmware.md)?%s%s%s",
                      NTPU_USB_VID, NTPU_USB_PID, foreign ? " Other products use that VID:PID: " : "",
                      foreign ? others : "", foreign ? "." : "");
}
