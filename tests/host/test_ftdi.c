/* SPDX-License-Identifier: Apache-2.0 */
/* The FTDI protocol functions of the "ftdi" transport (host/src/transport/ftdi_proto.c):
 * the chip table, baud divisors (FT2232H and FT231X) against the worked
 * examples in the notes and FTDI's application note, and against a decoder
 * written from FTDI's table of fractional codes, status-byte stripping on every
 * packet shape, the receive queue, line status, control requests, and the
 * options of the device string. No USB is touched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ftdi_proto.h"
#include "ntpu/ntpu.h"

/* ------------------------------------------------------------------ baud */

static const ntpu_ftdi_chip *const h2232 = &ntpu_ftdi_chips[0];

static ntpu_ftdi_baud enc(uint32_t baud, unsigned iface)
{
    ntpu_ftdi_baud b;
    cr_assert_eq(ntpu_ftdi_baud_encode(h2232, baud, iface, &b), 0, "encoding %u baud failed", (unsigned)baud);
    return b;
}

Test(ftdi_chips, the_table_knows_both_boards)
{
    const ntpu_ftdi_chip *h = ntpu_ftdi_chip_by_pid(0x6010), *x = ntpu_ftdi_chip_by_pid(0x6015);
    cr_assert_eq(h, h2232);
    cr_assert_str_eq(h->name, "FT2232H");
    cr_assert_str_eq(h->board, "icebreaker");
    cr_assert_eq(h->channels, 2u);
    cr_assert_eq(h->default_iface, NTPU_FTDI_IFACE_B);
    cr_assert_eq(h->default_baud, 3000000u);
    cr_assert_not_null(x);
    cr_assert_str_eq(x->name, "FT231X");
    cr_assert_str_eq(x->board, "ulx3s");
    cr_assert_eq(x->channels, 1u);
    cr_assert_eq(x->default_iface, NTPU_FTDI_IFACE_A);
    cr_assert_eq(x->default_baud, 3000000u);
    cr_assert_eq(x->baud_max, 3000000u);
    cr_assert_null(ntpu_ftdi_chip_by_pid(0x6001), "an FT232R is on no supported board");
}

/* FT-X chips: one 3 MHz baud clock, divisor bit 16 alone in wIndex, no channel
 * (FTDI AN232B-05's table: 115200 -> 0x001A). */
Test(ftdi_baud, ft231x_divisors)
{
    const ntpu_ftdi_chip *x = ntpu_ftdi_chip_by_pid(NTPU_FTDI_PID_231X);
    ntpu_ftdi_baud b;
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 500000, NTPU_FTDI_IFACE_A, &b), 0);
    cr_assert_eq(b.value, 0x0006);
    cr_assert_eq(b.index, 0x0000);
    cr_assert_eq(b.actual, 500000u);
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 3000000, NTPU_FTDI_IFACE_A, &b), 0);
    cr_assert_eq(b.value, 0x0000);
    cr_assert_eq(b.index, 0x0000);
    cr_assert_eq(b.actual, 3000000u);
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 2000000, NTPU_FTDI_IFACE_A, &b), 0); /* 3 MHz / 1.5: code 1 */
    cr_assert_eq(b.value, 0x0001);
    cr_assert_eq(b.actual, 2000000u);
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 115200, NTPU_FTDI_IFACE_A, &b), 0);
    cr_assert_eq(b.value, 0x001A);
    cr_assert_eq(b.index, 0x0000);
    cr_assert_eq(b.actual, 115385u); /* 3 MHz / 26 */
    /* 184 baud: 16304 and 3/8, whose fraction code (4) reaches divisor bit 16, which goes into wIndex. */
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 184, NTPU_FTDI_IFACE_A, &b), 0);
    cr_assert_eq(b.index, 0x0001);
    cr_assert_eq(b.value, (uint16_t)(b.divisor & 0xFFFFu));
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 3000001, NTPU_FTDI_IFACE_A, &b), -1, "an FT-X tops out at 3 Mbaud");
    cr_assert_eq(ntpu_ftdi_baud_encode(x, 500000, NTPU_FTDI_IFACE_B, &b), -1, "an FT231X has one channel");
}

Test(ftdi_baud, worked_examples_from_the_notes)
{
    ntpu_ftdi_baud b = enc(3000000, NTPU_FTDI_IFACE_B);
    cr_assert_eq(b.value, 0x0004);
    cr_assert_eq(b.index, 0x0202);
    cr_assert_eq(b.actual, 3000000u);
    b = enc(12000000, NTPU_FTDI_IFACE_B);
    cr_assert_eq(b.value, 0x0000);
    cr_assert_eq(b.index, 0x0202);
    cr_assert_eq(b.actual, 12000000u);
    b = enc(115200, NTPU_FTDI_IFACE_B);
    cr_assert_eq(b.value, 0xC068);
    cr_assert_eq(b.index, 0x0202);
    /* 12 MHz / 104.125 */
    cr_assert_eq(b.actual, 115246u);
    cr_assert_eq(ntpu_ftdi_baud_error_ppm(115200, b.actual), 399u);
}

Test(ftdi_baud, channel_goes_into_the_low_byte_of_index)
{
    ntpu_ftdi_baud a = enc(3000000, NTPU_FTDI_IFACE_A), b = enc(3000000, NTPU_FTDI_IFACE_B);
    cr_assert_eq(a.value, b.value);
    cr_assert_eq(a.index, 0x0201);
    cr_assert_eq(b.index, 0x0202);
    ntpu_ftdi_baud x;
    cr_assert_eq(ntpu_ftdi_baud_encode(h2232, 3000000, 2, &x), -1, "there is no interface C on a 2232H");
}

Test(ftdi_baud, the_special_divisors_one_and_one_and_a_half)
{
    ntpu_ftdi_baud b = enc(8000000, NTPU_FTDI_IFACE_B); /* 12 MHz / 1.5: code 1 */
    cr_assert_eq(b.value, 0x0001);
    cr_assert_eq(b.index, 0x0202);
    cr_assert_eq(b.actual, 8000000u);
    b = enc(6000000, NTPU_FTDI_IFACE_B); /* 12 MHz / 2: the ordinary code for 2 */
    cr_assert_eq(b.value, 0x0002);
    cr_assert_eq(b.actual, 6000000u);
    /* Between the allowed divisors the chip rounds down to the next slower rate. */
    b = enc(9000000, NTPU_FTDI_IFACE_B);
    cr_assert_eq(b.actual, 8000000u);
    cr_assert_eq(ntpu_ftdi_baud_error_ppm(9000000, b.actual), 111111u);
    b = enc(11999999, NTPU_FTDI_IFACE_B);
    cr_assert_eq(b.actual, 8000000u);
}

Test(ftdi_baud, other_common_rates_and_their_error)
{
    static const struct {
        uint32_t baud;
        uint16_t value, index;
        uint32_t actual, ppm;
    } t[] = {
        {2000000, 0x0006, 0x0202, 2000000, 0},  /* 12 MHz / 6 */
        {1000000, 0x000C, 0x0202, 1000000, 0},  /* / 12 */
        {921600, 0x000D, 0x0202, 923077, 1602}, /* / 13: 0.16 % fast */
        {500000, 0x0018, 0x0202, 500000, 0},
        {460800, 0x001A, 0x0202, 461538, 1601},
        {230400, 0xC034, 0x0202, 230216, 798}, /* / 52.125: eighth 1 is code 3 */
        {57600, 0x00D0, 0x0302, 57588, 208},   /* / 208.375: code 4 puts bit 16 into wIndex */
        {38400, 0x4138, 0x0202, 38400, 0},     /* / 312.5: code 1 */
        {19200, 0x0271, 0x0202, 19200, 0},
        {9600, 0x04E2, 0x0202, 9600, 0}, /* / 1250 */
        {1843200, 0x4006, 0x0202, 1846154, 1602},
        {1500000, 0x0008, 0x0202, 1500000, 0},
        {4000000, 0x0003, 0x0202, 4000000, 0},
        {250000, 0x0030, 0x0202, 250000, 0},
        {300, 0x2710, 0x0002, 300, 0}, /* the 3 MHz clock: / 10000, clock bit clear */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        ntpu_ftdi_baud b = enc(t[i].baud, NTPU_FTDI_IFACE_B);
        cr_expect_eq(b.actual, t[i].actual, "%u baud: actual %u, expected %u", (unsigned)t[i].baud, (unsigned)b.actual,
                     (unsigned)t[i].actual);
        cr_expect_eq(ntpu_ftdi_baud_error_ppm(t[i].baud, b.actual), t[i].ppm, "%u baud: error %u ppm",
                     (unsigned)t[i].baud, (unsigned)ntpu_ftdi_baud_error_ppm(t[i].baud, b.actual));
        cr_expect_eq(b.value, t[i].value, "%u baud: value 0x%04X", (unsigned)t[i].baud, b.value);
        cr_expect_eq(b.index, t[i].index, "%u baud: index 0x%04X", (unsigned)t[i].baud, b.index);
    }
}

/* The divisor an encoded value stands for, in eighths, decoded with FTDI's
 * table of fractional codes (AN232B-05): 000 0, 001 1/2, 010 1/4, 011 1/8,
 * 100 3/8, 101 5/8, 110 3/4, 111 7/8; codes 0 and 1 alone mean 1 and 1.5. */
static uint32_t decode_eighths(uint32_t divisor)
{
    static const uint32_t frac8[8] = {0, 4, 2, 1, 3, 5, 6, 7};
    uint32_t e = divisor & 0x1FFFFu;
    if (e == 0)
        return 8;
    if (e == 1)
        return 12;
    return (e & 0x3FFFu) * 8 + frac8[(e >> 14) & 7u];
}

Test(ftdi_baud, every_rate_decodes_to_the_nearest_legal_divisor)
{
    unsigned checked = 0;
    for (uint32_t baud = NTPU_FTDI_BAUD_MIN; baud <= NTPU_FTDI_BAUD_MAX; baud += 1 + baud / 211) {
        ntpu_ftdi_baud b = enc(baud, NTPU_FTDI_IFACE_B);
        uint32_t divisor = (uint32_t)b.value | ((uint32_t)(b.index & 0xFF00u) << 8);
        cr_assert_eq(divisor, b.divisor, "%u baud: value/index do not carry the divisor", (unsigned)baud);
        int fast = (divisor & 0x20000u) != 0;
        /* The 120 MHz / 10 clock for everything it can reach. */
        cr_assert_eq(fast, baud >= 733, "%u baud on the wrong clock", (unsigned)baud);
        double base = fast ? 12e6 : 3e6;
        uint32_t d8 = decode_eighths(divisor);
        double rate = base * 8.0 / d8;
        cr_assert(b.actual == (uint32_t)(rate + 0.5), "%u baud: reported %u, divisor gives %.1f", (unsigned)baud,
                  (unsigned)b.actual, rate);
        double want8 = base * 8.0 / baud;
        if (want8 >= 16.0) {
            /* Ordinary divisors (2 and up): the nearest eighth. */
            cr_assert(d8 + 0.5 >= want8 && d8 - 0.5 <= want8, "%u baud: divisor %u/8, ideal %.3f/8", (unsigned)baud,
                      (unsigned)d8, want8);
        } else {
            /* Above base / 2 only /1, /1.5 and /2 exist; the chip takes the fastest not above baud's. */
            cr_assert(rate <= baud + 0.5, "%u baud: %.0f is faster", (unsigned)baud, rate);
        }
        checked++;
    }
    cr_assert_gt(checked, 1000u);
}

Test(ftdi_baud, rates_outside_the_chip_are_refused)
{
    ntpu_ftdi_baud b;
    cr_assert_eq(ntpu_ftdi_baud_encode(h2232, 0, NTPU_FTDI_IFACE_B, &b), -1);
    cr_assert_eq(ntpu_ftdi_baud_encode(h2232, NTPU_FTDI_BAUD_MIN - 1, NTPU_FTDI_IFACE_B, &b), -1);
    cr_assert_eq(ntpu_ftdi_baud_encode(h2232, NTPU_FTDI_BAUD_MAX + 1, NTPU_FTDI_IFACE_B, &b), -1);
    /* The slowest rate still fits the 17-bit divisor in eighths. */
    b = enc(NTPU_FTDI_BAUD_MIN, NTPU_FTDI_IFACE_B);
    cr_assert_leq(decode_eighths(b.divisor), 0x1FFFFu);
    cr_assert_lt(ntpu_ftdi_baud_error_ppm(NTPU_FTDI_BAUD_MIN, b.actual), 100u);
}

Test(ftdi_baud, error_in_ppm)
{
    cr_assert_eq(ntpu_ftdi_baud_error_ppm(1000000, 1000000), 0u);
    cr_assert_eq(ntpu_ftdi_baud_error_ppm(1000000, 1030000), 30000u);
    cr_assert_eq(ntpu_ftdi_baud_error_ppm(1000000, 970000), 30000u);
    cr_assert_eq(ntpu_ftdi_baud_error_ppm(0, 0), 0u);
}

/* ------------------------------------------------------------------ control requests */

static void expect_req(ntpu_ftdi_ctrl q, uint8_t request, uint16_t value, uint16_t index)
{
    cr_assert_eq(q.request_type, 0x40, "%s: type 0x%02X", q.what, q.request_type);
    cr_assert_eq(q.request, request, "%s: request 0x%02X", q.what, q.request);
    cr_assert_eq(q.value, value, "%s: value 0x%04X", q.what, q.value);
    cr_assert_eq(q.index, index, "%s: index 0x%04X", q.what, q.index);
    cr_assert(q.what && *q.what);
}

Test(ftdi_req, vendor_requests_match_the_chip)
{
    unsigned B = NTPU_FTDI_IFACE_B, A = NTPU_FTDI_IFACE_A;
    expect_req(ntpu_ftdi_req_reset(B), 0x00, 0x0000, 2);
    expect_req(ntpu_ftdi_req_purge(B, NTPU_FTDI_PURGE_RX), 0x00, 0x0001, 2);
    expect_req(ntpu_ftdi_req_purge(B, NTPU_FTDI_PURGE_TX), 0x00, 0x0002, 2);
    expect_req(ntpu_ftdi_req_latency(B, 1), 0x09, 1, 2);
    expect_req(ntpu_ftdi_req_latency(A, 16), 0x09, 16, 1);
    expect_req(ntpu_ftdi_req_bitmode(B, NTPU_FTDI_BITMODE_RESET, 0), 0x0B, 0x0000, 2);
    expect_req(ntpu_ftdi_req_bitmode(A, NTPU_FTDI_BITMODE_MPSSE, 0xFB), 0x0B, 0x02FB, 1);
    expect_req(ntpu_ftdi_req_flow_none(B), 0x02, 0x0000, 2);
    expect_req(ntpu_ftdi_req_line_8n1(B), 0x04, 0x0008, 2);
    expect_req(ntpu_ftdi_req_line_8n1(A), 0x04, 0x0008, 1);
    ntpu_ftdi_baud b = enc(115200, B);
    expect_req(ntpu_ftdi_req_baud(&b), 0x03, 0xC068, 0x0202);
}

Test(ftdi_req, endpoints_of_each_channel)
{
    cr_assert_eq(ntpu_ftdi_ep_out(NTPU_FTDI_IFACE_A), 0x02);
    cr_assert_eq(ntpu_ftdi_ep_in(NTPU_FTDI_IFACE_A), 0x81);
    cr_assert_eq(ntpu_ftdi_ep_out(NTPU_FTDI_IFACE_B), 0x04);
    cr_assert_eq(ntpu_ftdi_ep_in(NTPU_FTDI_IFACE_B), 0x83);
    cr_assert_eq(ntpu_ftdi_chan_index(NTPU_FTDI_IFACE_A), 1);
    cr_assert_eq(ntpu_ftdi_chan_index(NTPU_FTDI_IFACE_B), 2);
}

/* ------------------------------------------------------------------ status bytes */

/* A transfer as the chip sends it: the data cut into packets of max_packet
 * bytes with two status bytes in front of each (a short packet ends a
 * transfer, so only the last may be short). Returns its length. */
static size_t make_transfer(uint8_t *out, const uint8_t *data, size_t n, size_t max_packet, uint8_t line)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += max_packet - 2) {
        size_t len = n - i < max_packet - 2 ? n - i : max_packet - 2;
        out[o++] = 0x31;
        out[o++] = line;
        memcpy(out + o, data + i, len);
        o += len;
    }
    return o;
}

static void fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 7u + seed + (i >> 8));
}

Test(ftdi_strip, full_packets_lose_two_bytes_each)
{
    uint8_t data[3 * 510], x[2048], out[2048];
    fill_pattern(data, sizeof data, 1);
    size_t n = make_transfer(x, data, sizeof data, 512, 0x60);
    cr_assert_eq(n, 3 * 512u);
    ntpu_ftdi_status st = {0};
    cr_assert_eq(ntpu_ftdi_strip(x, n, 512, out, &st), sizeof data);
    cr_assert_arr_eq(out, data, sizeof data);
    cr_assert_eq(st.packets, 3u);
    cr_assert_eq(st.runts, 0u);
    cr_assert_eq(st.modem, 0x31);
    cr_assert_eq(st.line, 0x60);
    cr_assert_eq(st.errors, 0u);
}

Test(ftdi_strip, partial_last_packet)
{
    uint8_t data[510 + 98], x[1024], out[1024];
    fill_pattern(data, sizeof data, 2);
    size_t n = make_transfer(x, data, sizeof data, 512, 0x60);
    cr_assert_eq(n, 512u + 100u);
    ntpu_ftdi_status st = {0};
    cr_assert_eq(ntpu_ftdi_strip(x, n, 512, out, &st), sizeof data);
    cr_assert_arr_eq(out, data, sizeof data);
    cr_assert_eq(st.packets, 2u);
}

Test(ftdi_strip, two_byte_packets_carry_no_data)
{
    uint8_t x[2] = {0x31, 0x60}, out[4] = {0xEE, 0xEE, 0xEE, 0xEE};
    ntpu_ftdi_status st = {0};
    cr_assert_eq(ntpu_ftdi_strip(x, 2, 512, out, &st), 0u);
    cr_assert_eq(out[0], 0xEE);
    cr_assert_eq(st.packets, 1u);
    cr_assert_eq(st.line, 0x60);
    cr_assert_eq(ntpu_ftdi_strip(x, 0, 512, out, &st), 0u);
    cr_assert_eq(st.packets, 1u, "an empty transfer holds no packet");
    /* A full packet followed by a status-only one (the chip ends a transfer that way). */
    uint8_t y[514], data[510];
    fill_pattern(data, sizeof data, 3);
    make_transfer(y, data, sizeof data, 512, 0x60);
    y[512] = 0x31;
    y[513] = 0x60;
    uint8_t o2[514];
    cr_assert_eq(ntpu_ftdi_strip(y, 514, 512, o2, NULL), 510u);
    cr_assert_arr_eq(o2, data, 510);
}

Test(ftdi_strip, odd_sizes_and_a_runt_at_the_end)
{
    /* 512 + 1: the one trailing byte cannot even hold the status bytes. */
    uint8_t x[513], data[510], out[513];
    fill_pattern(data, sizeof data, 4);
    make_transfer(x, data, sizeof data, 512, 0x60);
    x[512] = 0x31;
    ntpu_ftdi_status st = {0};
    cr_assert_eq(ntpu_ftdi_strip(x, 513, 512, out, &st), 510u);
    cr_assert_eq(st.runts, 1u);
    cr_assert_eq(st.packets, 2u);
    cr_assert_arr_eq(out, data, 510);
    /* Three bytes: one data byte. */
    uint8_t z[3] = {0x31, 0x60, 0x5A};
    cr_assert_eq(ntpu_ftdi_strip(z, 3, 512, out, NULL), 1u);
    cr_assert_eq(out[0], 0x5A);
    /* A lone byte: nothing. */
    cr_assert_eq(ntpu_ftdi_strip(z, 1, 512, out, NULL), 0u);
    /* A max_packet that cannot hold the header strips nothing instead of looping. */
    cr_assert_eq(ntpu_ftdi_strip(z, 3, 1, out, NULL), 0u);
    cr_assert_eq(ntpu_ftdi_strip(z, 3, 0, out, NULL), 0u);
}

Test(ftdi_strip, full_speed_packets_of_64_bytes_in_place)
{
    /* Behind a full-speed hub the packets are 64 bytes; strip in place. */
    uint8_t data[5 * 62 + 7], x[512], copy[512];
    fill_pattern(data, sizeof data, 5);
    size_t n = make_transfer(x, data, sizeof data, 64, 0x60);
    cr_assert_eq(n, 5 * 64u + 9u);
    memcpy(copy, x, n);
    ntpu_ftdi_status st = {0};
    cr_assert_eq(ntpu_ftdi_strip(x, n, 64, x, &st), sizeof data);
    cr_assert_arr_eq(x, data, sizeof data);
    cr_assert_eq(st.packets, 6u);
    /* The slicing is by max_packet from the start of the transfer: wrong if the
     * data were treated as one packet. */
    uint8_t once[512];
    cr_assert_eq(ntpu_ftdi_strip(copy, n, 4096, once, NULL), n - 2);
    cr_assert(memcmp(once, data, sizeof data) != 0);
}

Test(ftdi_strip, line_errors_are_collected_from_every_packet)
{
    uint8_t data[1020], x[2048], out[2048];
    fill_pattern(data, sizeof data, 6);
    size_t n = make_transfer(x, data, sizeof data, 512, 0x60);
    x[512 + 1] = 0x60 | NTPU_FTDI_LS_OE; /* the second packet reports an overrun */
    ntpu_ftdi_status st = {0};
    cr_assert_eq(ntpu_ftdi_strip(x, n, 512, out, &st), sizeof data);
    cr_assert_eq(st.errors, NTPU_FTDI_LS_OE);
    cr_assert_eq(st.error_packets, 1u);
    x[1] = 0x60 | NTPU_FTDI_LS_FE | NTPU_FTDI_LS_BI;
    ntpu_ftdi_strip(x, n, 512, out, &st);
    cr_assert_eq(st.errors, NTPU_FTDI_LS_OE | NTPU_FTDI_LS_FE | NTPU_FTDI_LS_BI);
    cr_assert_eq(st.error_packets, 3u);
    cr_assert_eq(st.packets, 4u);
}

/* ------------------------------------------------------------------ line status */

Test(ftdi_line, decoding_the_line_status_byte)
{
    cr_assert_eq(ntpu_ftdi_line_errors(0x60), 0u, "THRE|TEMT is the idle state, not an error");
    cr_assert_eq(ntpu_ftdi_line_errors(0x61), 0u, "data ready is not an error");
    cr_assert_eq(ntpu_ftdi_line_errors(0x62), NTPU_FTDI_LS_OE);
    cr_assert_eq(ntpu_ftdi_line_errors(0x64), NTPU_FTDI_LS_PE);
    cr_assert_eq(ntpu_ftdi_line_errors(0x68), NTPU_FTDI_LS_FE);
    cr_assert_eq(ntpu_ftdi_line_errors(0x70), NTPU_FTDI_LS_BI);
    cr_assert_eq(ntpu_ftdi_line_errors(0xE0), NTPU_FTDI_LS_FIFO);
    cr_assert_eq(ntpu_ftdi_line_errors(0xFF), 0x9Eu);
    char buf[128];
    cr_assert_str_eq(ntpu_ftdi_line_errors_str(0, buf, sizeof buf), "none");
    cr_assert_str_eq(ntpu_ftdi_line_errors_str(NTPU_FTDI_LS_OE, buf, sizeof buf), "overrun");
    cr_assert_str_eq(ntpu_ftdi_line_errors_str(NTPU_FTDI_LS_OE | NTPU_FTDI_LS_FE, buf, sizeof buf),
                     "overrun, framing error");
    cr_assert_str_eq(ntpu_ftdi_line_errors_str(NTPU_FTDI_LS_ERRORS, buf, sizeof buf),
                     "overrun, parity error, framing error, break, receive FIFO error");
    char small[10];
    ntpu_ftdi_line_errors_str(NTPU_FTDI_LS_ERRORS, small, sizeof small);
    cr_assert_lt(strlen(small), sizeof small);
}

/* ------------------------------------------------------------------ receive queue */

Test(ftdi_rx, queue_keeps_order_across_pushes_and_takes)
{
    ntpu_rx_queue q = {.limit = 1u << 20};
    ntpu_ftdi_status st = {0};
    enum { TOTAL = 50000 };
    uint8_t *data = malloc(TOTAL), *got = malloc(TOTAL), *x = malloc(8192);
    fill_pattern(data, TOTAL, 7);
    size_t pushed = 0, taken = 0;
    unsigned step = 0;
    while (taken < TOTAL) {
        /* Transfers of varying size, some only status packets; takes of varying size. */
        size_t chunk = (step * 733u) % 3000u;
        if (pushed + chunk > TOTAL)
            chunk = TOTAL - pushed;
        if (step % 3 == 1) { /* a status-only transfer, as the chip sends every latency period */
            const uint8_t idle[2] = {0x31, 0x60};
            cr_assert_eq(ntpu_ftdi_rx_push(&q, idle, 2, 512, &st), 0);
        }
        size_t n = make_transfer(x, data + pushed, chunk, 512, 0x60);
        cr_assert_eq(ntpu_ftdi_rx_push(&q, x, n, 512, &st), 0);
        pushed += chunk;
        size_t want = (step * 977u) % 2500u;
        if (want > TOTAL - taken)
            want = TOTAL - taken;
        size_t m = ntpu_rx_queue_take(&q, got + taken, want);
        cr_assert_eq(m, want < pushed - taken ? want : pushed - taken, "step %u: took %zu of %zu with %zu queued", step,
                     m, want, pushed - taken);
        taken += m;
        cr_assert_eq(q.len, pushed - taken);
        step++;
        cr_assert_lt(step, 100000u);
    }
    cr_assert_arr_eq(got, data, TOTAL);
    cr_assert_eq(ntpu_rx_queue_take(&q, got, 10), 0u);
    cr_assert_leq(q.cap, 16384u, "the queue compacts instead of growing without bound (cap %zu)", q.cap);
    ntpu_rx_queue_free(&q);
    cr_assert_null(q.buf);
    free(data);
    free(got);
    free(x);
}

Test(ftdi_rx, a_push_past_the_limit_is_refused_whole)
{
    ntpu_rx_queue q = {.limit = 1000};
    uint8_t data[1200], x[1400], out[1200];
    fill_pattern(data, sizeof data, 8);
    size_t n = make_transfer(x, data, 600, 512, 0x60);
    cr_assert_eq(ntpu_ftdi_rx_push(&q, x, n, 512, NULL), 0);
    n = make_transfer(x, data + 600, 401, 512, 0x60);
    cr_assert_eq(ntpu_ftdi_rx_push(&q, x, n, 512, NULL), -1);
    cr_assert_eq(q.len, 600u, "a refused push adds nothing");
    n = make_transfer(x, data + 600, 400, 512, 0x60);
    cr_assert_eq(ntpu_ftdi_rx_push(&q, x, n, 512, NULL), 0);
    cr_assert_eq(ntpu_rx_queue_take(&q, out, sizeof out), 1000u);
    cr_assert_arr_eq(out, data, 1000);
    ntpu_rx_queue_free(&q);
}

/* ------------------------------------------------------------------ options */

Test(ftdi_opts, defaults_and_good_strings)
{
    ntpu_ftdi_opts o;
    char err[256];
    uint32_t baud;
    unsigned iface;
    cr_assert_eq(ntpu_ftdi_parse_opts(NULL, &o, err, sizeof err), 0);
    cr_assert_str_eq(o.serial, "");
    cr_assert_null(o.chip, "no board= means any known chip");
    cr_assert_eq(o.baud, 0u);
    cr_assert_eq(o.iface, NTPU_FTDI_IFACE_DEFAULT);
    /* The defaults follow the chip found: the board's bitstream rate and UART channel. */
    cr_assert_eq(ntpu_ftdi_settle(&o, h2232, &baud, &iface, err, sizeof err), 0, "%s", err);
    cr_assert_eq(baud, 3000000u);
    cr_assert_eq(iface, NTPU_FTDI_IFACE_B);
    cr_assert_eq(ntpu_ftdi_settle(&o, &ntpu_ftdi_chips[1], &baud, &iface, err, sizeof err), 0, "%s", err);
    cr_assert_eq(baud, 3000000u);
    cr_assert_eq(iface, NTPU_FTDI_IFACE_A);
    cr_assert_eq(ntpu_ftdi_parse_opts("", &o, err, sizeof err), 0);
    cr_assert_eq(o.baud, 0u);
    cr_assert_eq(ntpu_ftdi_parse_opts("serial=FT4ZGU9X", &o, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(o.serial, "FT4ZGU9X");
    cr_assert_eq(ntpu_ftdi_parse_opts("board=ulx3s", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.chip, ntpu_ftdi_chip_by_pid(NTPU_FTDI_PID_231X));
    cr_assert_eq(ntpu_ftdi_parse_opts("board=icebreaker,serial=ib-7", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.chip, h2232);
    /* A rate only the FT2232H makes passes parsing but not the FT231X found later. */
    cr_assert_eq(ntpu_ftdi_parse_opts("baud=12000000", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ntpu_ftdi_settle(&o, &ntpu_ftdi_chips[1], &baud, &iface, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "the FT231X cannot make 12000000 baud"), "%s", err);
    cr_assert_eq(ntpu_ftdi_parse_opts("interface=B", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ntpu_ftdi_settle(&o, &ntpu_ftdi_chips[1], &baud, &iface, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "no interface B"), "%s", err);
    cr_assert_eq(ntpu_ftdi_parse_opts("baud=12000000", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.baud, 12000000u);
    cr_assert_eq(ntpu_ftdi_parse_opts("interface=A", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.iface, NTPU_FTDI_IFACE_A);
    cr_assert_eq(ntpu_ftdi_parse_opts("interface=b", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.iface, NTPU_FTDI_IFACE_B);
    cr_assert_eq(ntpu_ftdi_parse_opts("interface=A,baud=115200,serial=ib-0042", &o, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(o.serial, "ib-0042");
    cr_assert_eq(o.baud, 115200u);
    cr_assert_eq(o.iface, NTPU_FTDI_IFACE_A);
    /* 921600 is 0.16 % off on this chip: close enough. */
    cr_assert_eq(ntpu_ftdi_parse_opts("baud=921600", &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.baud, 921600u);
}

static void expect_bad(const char *opts, const char *needle)
{
    ntpu_ftdi_opts o;
    char err[256] = "";
    cr_assert_eq(ntpu_ftdi_parse_opts(opts, &o, err, sizeof err), -1, "'%s' was accepted", opts);
    cr_assert_not_null(strstr(err, needle), "'%s': message '%s' lacks '%s'", opts, err, needle);
    cr_assert_null(strchr(err, '\n'), "one line");
}

Test(ftdi_opts, bad_strings_are_refused_with_a_reason)
{
    expect_bad("color=red", "unknown ftdi option 'color=red'");
    expect_bad("serial", "unknown ftdi option 'serial'");
    expect_bad("Baud=115200", "unknown");
    expect_bad(",baud=115200", "unknown ftdi option ''");
    expect_bad("baud=115200,", "stray ','");
    expect_bad("baud=115200,,serial=x", "unknown ftdi option ''");
    expect_bad("serial=", "serial=");
    expect_bad("serial=a b", "serial 'a b'");
    expect_bad("serial=0123456789012345678901234567890123456789012345678901234567890123", "1 to 63");
    expect_bad("baud=", "baud ''");
    expect_bad("baud=abc", "baud 'abc'");
    expect_bad("baud=-5", "baud '-5'");
    expect_bad("baud=3000000x", "baud '3000000x'");
    expect_bad("baud=+3000000", "baud '+3000000'");
    expect_bad("baud=99999999999", "not a whole number from 184 to 12000000");
    expect_bad("baud=100", "184");
    expect_bad("baud=13000000", "12000000");
    expect_bad("baud=9000000", "nearest it can is 8000000");
    expect_bad("board=ulx3s,baud=6000000", "the FT231X cannot make 6000000 baud: 3000000 is its fastest");
    expect_bad("board=ulx3s,interface=B", "the FT231X of the ULX3S has no interface B");
    expect_bad("board=tinyfpga", "board 'tinyfpga' is not icebreaker or ulx3s");
    expect_bad("board=ulx3s,board=ulx3s", "given twice");
    expect_bad("baud=7000000", "6000000");
    expect_bad("interface=C", "interface 'C'");
    expect_bad("interface=", "interface ''");
    expect_bad("interface=AB", "not A or B");
    expect_bad("interface=1", "not A or B");
    expect_bad("baud=115200,baud=115200", "given twice");
    expect_bad("serial=a,serial=b", "given twice");
}

/* ------------------------------------------------------------------ through ntpu_open */

Test(ftdi_open, bad_options_fail_before_any_usb)
{
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open("ftdi:baud=fast", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "baud 'fast'"), "%s", ntpu_last_error(dev));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ftdi:port=/dev/ttyUSB1", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "unknown ftdi option"), "%s", ntpu_last_error(dev));
    ntpu_close(dev);
}
