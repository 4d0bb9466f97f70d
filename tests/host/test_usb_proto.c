/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice USB interface functions of the "usb" transport (host/src/transport/usb_proto.c):
 * device-string options, the vendor requests field by field against usb_requests.h and
 * docs/firmware.md, the GET_VERSION / GET_STATUS / FPGA_LOAD_END replies, the bitstream checks
 * on headers laid out as icepack writes them, and the choice of a board.
 * No USB is touched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice40_bits.h"
#include "transport/usb_proto.h"
#include "ntpu/ntpu.h"

static char err[256];

/* ------------------------------------------------------------------ options */

Test(usb_opts, defaults_and_serial)
{
    ntpu_usb_opts o;
    cr_assert_eq(ntpu_usb_parse_opts(NULL, &o, err, sizeof err), 0);
    cr_assert_str_eq(o.serial, "");
    cr_assert_eq(ntpu_usb_parse_opts("", &o, err, sizeof err), 0);
    cr_assert_str_eq(o.serial, "");
    cr_assert_eq(ntpu_usb_parse_opts("serial=E6614C311B7A5F2D", &o, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(o.serial, "E6614C311B7A5F2D");
}

Test(usb_opts, bad_options_are_one_line_naming_what_is_accepted)
{
    ntpu_usb_opts o;
    cr_assert_eq(ntpu_usb_parse_opts("baud=3000000", &o, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown usb option 'baud=3000000'") && strstr(err, "serial=S") &&
                  strstr(err, "timeout_ms=T"),
              "%s", err);
    cr_assert_null(strchr(err, '\n'));
    cr_assert_eq(ntpu_usb_parse_opts("serial", &o, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown usb option 'serial'"), "%s", err);
    cr_assert_eq(ntpu_usb_parse_opts("serial=", &o, err, sizeof err), -1);
    cr_assert(strstr(err, "needs 1 to 63 characters"), "%s", err);
    cr_assert_eq(ntpu_usb_parse_opts("serial=A,serial=B", &o, err, sizeof err), -1);
    cr_assert(strstr(err, "given twice"), "%s", err);
    cr_assert_eq(ntpu_usb_parse_opts("serial=A B", &o, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot be in a serial number"), "%s", err);
    char longer[100];
    memset(longer, 'X', sizeof longer);
    memcpy(longer, "serial=", 7);
    longer[7 + 64] = 0;
    cr_assert_eq(ntpu_usb_parse_opts(longer, &o, err, sizeof err), -1);
    longer[7 + 63] = 0;
    cr_assert_eq(ntpu_usb_parse_opts(longer, &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(strlen(o.serial), 63u);
}

/* ------------------------------------------------------------------ requests */

static void expect_req(ntpu_usb_ctrl q, uint8_t type, uint8_t request, uint16_t value, uint16_t length)
{
    cr_assert_eq(q.request_type, type, "%s: bmRequestType 0x%02X", q.what, q.request_type);
    cr_assert_eq(q.request, request, "%s: bRequest 0x%02X", q.what, q.request);
    cr_assert_eq(q.value, value, "%s: wValue 0x%04X", q.what, q.value);
    cr_assert_eq(q.index, 0, "%s: wIndex 0x%04X", q.what, q.index);
    cr_assert_eq(q.length, length, "%s: wLength %u", q.what, q.length);
}

Test(usb_requests, each_as_the_firmware_table_says)
{
    /* docs/firmware.md: 0x40 out, 0xC0 in; the numbers of usb_requests.h, written out here. */
    expect_req(ntpu_usb_req_get_version(), 0xC0, 0x01, 0, 2);
    expect_req(ntpu_usb_req_get_status(), 0xC0, 0x02, 0, 8);
    expect_req(ntpu_usb_req_fpga_reset(1), 0x40, 0x10, 1, 0);
    expect_req(ntpu_usb_req_fpga_reset(0), 0x40, 0x10, 0, 0);
    expect_req(ntpu_usb_req_load_begin(), 0x40, 0x11, 0, 0);
    expect_req(ntpu_usb_req_load_end(), 0xC0, 0x12, 0, 1);
    expect_req(ntpu_usb_req_set_clock(4), 0x40, 0x13, 4, 0);
    expect_req(ntpu_usb_req_set_clock(0), 0x40, 0x13, 0, 0);
    cr_assert_str_eq(ntpu_usb_req_load_end().what, "FPGA_LOAD_END");
    cr_assert_eq(NTPU_USB_VID, 0x1209);
    cr_assert_eq(NTPU_USB_PID, 0x0001);
}

/* ------------------------------------------------------------------ replies */

Test(usb_replies, version)
{
    unsigned major = 99, minor = 99;
    cr_assert_eq(ntpu_usb_check_version((const uint8_t[]){1, 0}, 2, &major, &minor, err, sizeof err), NTPU_OK);
    cr_assert(major == 1 && minor == 0);
    /* A higher minor is accepted. */
    cr_assert_eq(ntpu_usb_check_version((const uint8_t[]){1, 7}, 2, &major, &minor, err, sizeof err), NTPU_OK);
    cr_assert_eq(minor, 7u);
    cr_assert_eq(ntpu_usb_check_version((const uint8_t[]){2, 1}, 2, NULL, NULL, err, sizeof err), NTPU_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "firmware protocol 2.1, this host speaks 1.x: update nanoTPU on this host"), "%s", err);
    cr_assert_eq(ntpu_usb_check_version((const uint8_t[]){0, 9}, 2, NULL, NULL, err, sizeof err), NTPU_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "firmware protocol 0.9, this host speaks 1.x: update the board's firmware"), "%s", err);
    cr_assert_eq(ntpu_usb_check_version((const uint8_t[]){1, 0}, 1, NULL, NULL, err, sizeof err), NTPU_ERR_IO);
    cr_assert(strstr(err, "GET_VERSION with 1 bytes"), "%s", err);
}

Test(usb_replies, status)
{
    ntpu_usb_status s;
    const uint8_t r[8] = {0x03, 0x00, 0x04, 0x00, 0x9A, 0x96, 0x01, 0x00};
    cr_assert_eq(ntpu_usb_parse_status(r, 8, &s, err, sizeof err), NTPU_OK);
    cr_assert_eq(s.flags, NTPU_USB_STATUS_CDONE | NTPU_USB_STATUS_RUNNING);
    cr_assert_eq(s.clock_div, 4);
    cr_assert_eq(s.loaded, 104090u); /* 0x0001969A, little-endian */
    cr_assert_eq(ntpu_usb_parse_status(r, 7, &s, err, sizeof err), NTPU_ERR_IO);
    cr_assert(strstr(err, "GET_STATUS with 7 bytes, not 8"), "%s", err);
    cr_assert_eq(ntpu_usb_parse_status(r, -1, &s, err, sizeof err), NTPU_ERR_IO);
}

Test(usb_replies, cdone)
{
    cr_assert_eq(ntpu_usb_check_cdone((const uint8_t[]){1}, 1, err, sizeof err), NTPU_OK);
    cr_assert_eq(ntpu_usb_check_cdone((const uint8_t[]){0}, 1, err, sizeof err), NTPU_ERR_DEVICE);
    cr_assert_str_eq(err, "the FPGA refused the bitstream (CDONE stayed low)");
    cr_assert_eq(ntpu_usb_check_cdone((const uint8_t[]){1}, 0, err, sizeof err), NTPU_ERR_IO);
    cr_assert_eq(ntpu_usb_check_cdone((const uint8_t[]){0x80}, 1, err, sizeof err), NTPU_ERR_IO);
    cr_assert(strstr(err, "0x80"), "%s", err);
}

/* ------------------------------------------------------------------ bitstreams */

/* A bitstream's header (ice40_bits.h), then filler up to cap. */
static size_t make_bits(uint8_t *b, size_t cap, unsigned width, unsigned height, int comment)
{
    size_t n = ice40_bits_header(b, width, height, comment);
    while (n < cap)
        b[n++] = 0x5A;
    return n;
}

Test(usb_bitstream, a_up5k_header_passes)
{
    uint8_t b[200];
    ntpu_usb_bitinfo bi;
    size_t n = make_bits(b, sizeof b, 692, 336, 0);
    cr_assert_eq(ntpu_usb_check_bitstream(b, n, &bi, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(bi.sync_at, 4u);
    cr_assert(bi.width == 692 && bi.height == 336, "%u x %u", bi.width, bi.height);
    cr_assert_str_eq(bi.device, "UP5K");
    n = make_bits(b, sizeof b, 692, 336, 1);
    cr_assert_eq(ntpu_usb_check_bitstream(b, n, &bi, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(bi.sync_at, 10u);
}

Test(usb_bitstream, padding_before_the_sync_and_a_header_that_names_no_size)
{
    const uint8_t b[] = {0xFF, 0xFF, 0xFF, 0x7E, 0xAA, 0x99, 0x7E, 0x01, 0x01, 0x12, 0x34};
    ntpu_usb_bitinfo bi;
    cr_assert_eq(ntpu_usb_check_bitstream(b, sizeof b, &bi, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(bi.sync_at, 3u);
    cr_assert_null(bi.device);
}

Test(usb_bitstream, other_parts_are_named_and_refused)
{
    uint8_t b[200];
    size_t n = make_bits(b, sizeof b, 872, 272, 0);
    cr_assert_eq(ntpu_usb_check_bitstream(b, n, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "a bitstream for the iCE40 HX8K/LP8K (CRAM banks 872 x 272); the pico-ice has an iCE40UP5K"),
              "%s", err);
    n = make_bits(b, sizeof b, 692, 176, 0);
    cr_assert_eq(ntpu_usb_check_bitstream(b, n, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "u4k"), "%s", err);
    n = make_bits(b, sizeof b, 500, 100, 0);
    cr_assert_eq(ntpu_usb_check_bitstream(b, n, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "of unknown size (CRAM banks 500 x 100)"), "%s", err);
}

Test(usb_bitstream, malformed_files_are_refused)
{
    uint8_t b[200];
    size_t n = make_bits(b, sizeof b, 692, 336, 0);
    cr_assert_eq(ntpu_usb_check_bitstream(b, 0, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert_str_eq(err, "the bitstream is empty");
    cr_assert_eq(ntpu_usb_check_bitstream(b, NTPU_USB_BITSTREAM_MAX + 1, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "about 104 KB"), "%s", err);
    /* The sync word damaged. */
    b[5] ^= 0x01;
    cr_assert_eq(ntpu_usb_check_bitstream(b, n, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "no iCE40 sync word (7E AA 99 7E) at byte 4"), "%s", err);
    b[5] ^= 0x01;
    /* Text before the sync (an .asc file, say). */
    const char asc[] = ".comment Generated by icepack\n.device 5k\n";
    cr_assert_eq(ntpu_usb_check_bitstream((const uint8_t *)asc, sizeof asc - 1, NULL, err, sizeof err),
                 NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "at byte 0"), "%s", err);
    /* A comment that never ends. */
    const uint8_t open[] = {0xFF, 0x00, 'a', 'b', 0x00, 'c'};
    cr_assert_eq(ntpu_usb_check_bitstream(open, sizeof open, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "never ends"), "%s", err);
    /* Cut off inside the header: the sync and a few commands, no data. */
    cr_assert_eq(ntpu_usb_check_bitstream(b, 20, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "ends inside its header"), "%s", err);
    cr_assert_eq(ntpu_usb_check_bitstream(b, 8, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert_eq(ntpu_usb_check_bitstream(b, 7, NULL, err, sizeof err), NTPU_ERR_FORMAT);
    cr_assert(strstr(err, "sync word"), "%s", err);
}

/* ------------------------------------------------------------------ choosing */

Test(usb_choose, one_board)
{
    const ntpu_usb_candidate c[] = {{"AAAA", NTPU_USB_PRODUCT, 0}};
    size_t pick = 9;
    cr_assert_eq(ntpu_usb_choose(c, 1, NULL, &pick, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(pick, 0u);
    cr_assert_eq(ntpu_usb_choose(c, 1, "AAAA", &pick, err, sizeof err), NTPU_OK, "%s", err);
    /* A product string that could not be read does not disqualify it. */
    const ntpu_usb_candidate u[] = {{"", NULL, 0}};
    cr_assert_eq(ntpu_usb_choose(u, 1, NULL, &pick, err, sizeof err), NTPU_OK, "%s", err);
}

Test(usb_choose, several_boards)
{
    const ntpu_usb_candidate c[] = {{"AAAA", NTPU_USB_PRODUCT, 0}, {"BBBB", NTPU_USB_PRODUCT, 0}};
    size_t pick = 9;
    cr_assert_eq(ntpu_usb_choose(c, 2, "BBBB", &pick, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(pick, 1u);
    cr_assert_eq(ntpu_usb_choose(c, 2, NULL, &pick, err, sizeof err), NTPU_ERR_INVALID_ARG);
    cr_assert(strstr(err, "2 nanoTPU pico-ice boards found (serials: AAAA, BBBB): name one with usb:serial=S"), "%s",
              err);
    cr_assert_eq(ntpu_usb_choose(c, 2, "CCCC", &pick, err, sizeof err), NTPU_ERR_NO_DEVICE);
    cr_assert(strstr(err, "no nanoTPU pico-ice board with serial 'CCCC' (found: AAAA, BBBB)"), "%s", err);
}

Test(usb_choose, none_and_other_products)
{
    size_t pick = 9;
    cr_assert_eq(ntpu_usb_choose(NULL, 0, NULL, &pick, err, sizeof err), NTPU_ERR_NO_DEVICE);
    cr_assert(strstr(err, "no nanoTPU pico-ice board found (VID:PID 1209:0001); "), "%s", err);
    cr_assert_eq(pick, 9u);
    /* 1209:0001 is a shared test PID: another product behind it is passed over. */
    const ntpu_usb_candidate c[] = {{"X1", "Someone's Gadget", 0}, {"AAAA", NTPU_USB_PRODUCT, 0}};
    cr_assert_eq(ntpu_usb_choose(c, 2, NULL, &pick, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(pick, 1u);
    cr_assert_eq(ntpu_usb_choose(c, 1, NULL, &pick, err, sizeof err), NTPU_ERR_NO_DEVICE);
    cr_assert(strstr(err, "no nanoTPU pico-ice board found") && strstr(err, "Someone's Gadget"), "%s", err);
    cr_assert_eq(ntpu_usb_choose(c, 1, "X1", &pick, err, sizeof err), NTPU_ERR_NO_DEVICE);
}

Test(usb_choose, permission_denied)
{
    const ntpu_usb_candidate d[] = {{"", NULL, 1}};
    size_t pick = 9;
    cr_assert_eq(ntpu_usb_choose(d, 1, NULL, &pick, err, sizeof err), NTPU_ERR_NO_DEVICE);
    cr_assert(strstr(err, "cannot open the pico-ice (1209:0001): permission denied: add a udev rule"), "%s", err);
    const ntpu_usb_candidate two[] = {{"AAAA", NTPU_USB_PRODUCT, 0}, {"", NULL, 1}};
    cr_assert_eq(ntpu_usb_choose(two, 2, NULL, &pick, err, sizeof err), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_usb_choose(two, 2, "AAAA", &pick, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(ntpu_usb_choose(two, 2, "ZZ", &pick, err, sizeof err), NTPU_ERR_NO_DEVICE);
    cr_assert(strstr(err, "udev rule"), "%s", err);
}
