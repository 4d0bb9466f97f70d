/* SPDX-License-Identifier: Apache-2.0 */
/* The USB protocol of the boards' FTDI chips as pure functions (see ftdi_proto.h). */
#include "ftdi_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ------------------------------------------------------------------ chips */

const ntpu_ftdi_chip ntpu_ftdi_chips[NTPU_FTDI_NCHIPS] = {
    {NTPU_FTDI_PID_2232H, "FT2232H", "icebreaker", "iCEBreaker", 2, 1, 12000000u, 3000000u, NTPU_FTDI_IFACE_B},
    /* The ULX3S core runs at 12 MHz from the PLL: 3 Mbaud is 4 clocks a bit, the chip's top rate. */
    {NTPU_FTDI_PID_231X, "FT231X", "ulx3s", "ULX3S", 1, 0, 3000000u, 3000000u, NTPU_FTDI_IFACE_A},
};

const ntpu_ftdi_chip *ntpu_ftdi_chip_by_pid(uint16_t pid)
{
    for (size_t i = 0; i < NTPU_FTDI_NCHIPS; i++)
        if (ntpu_ftdi_chips[i].pid == pid)
            return &ntpu_ftdi_chips[i];
    return NULL;
}

/* ------------------------------------------------------------------ baud rate */

/* An H-series chip's two baud clocks: 120 MHz / 10 and 48 MHz / 16. */
#define FTDI_H_CLK 120000000u
#define FTDI_H_DIV 10u
#define FTDI_C_CLK 48000000u
#define FTDI_C_DIV 16u
/* Selects the 120 MHz clock in the encoded divisor. */
#define FTDI_DIV_CLK10 0x20000u

/* Encodes the divisor for one clock: base = clk / div is the fastest rate.
 * Divisors below 2 are not allowed except 1 and 1.5, which have codes of their
 * own (0 and 1). Otherwise the divisor is kept in eighths: the integer part in
 * bits 0..13 and the eighths in bits 14..16, in a bit order of FTDI's own. */
static uint32_t encode_clock(uint32_t baud, uint32_t clk, uint32_t div, uint32_t *actual)
{
    static const uint8_t frac_code[8] = {0, 3, 2, 4, 1, 5, 6, 7};
    uint32_t base = clk / div;
    if (baud >= base) {
        *actual = base;
        return 0;
    }
    if (baud >= clk / (div + div / 2)) {
        *actual = clk / (div + div / 2);
        return 1;
    }
    if (baud >= clk / (2 * div)) {
        *actual = clk / (2 * div);
        return 2;
    }
    /* The divisor in eighths, rounded to nearest (halves up). */
    uint64_t base8 = (uint64_t)base * 8u;
    uint64_t d8 = (2 * base8 / baud + 1) / 2;
    if (d8 > 0x1FFFFu)
        d8 = 0x1FFFFu;
    *actual = (uint32_t)((2 * base8 + d8) / (2 * d8));
    return (uint32_t)(d8 >> 3) | ((uint32_t)frac_code[d8 & 7u] << 14);
}

int ntpu_ftdi_baud_encode(const ntpu_ftdi_chip *chip, uint32_t baud, unsigned iface, ntpu_ftdi_baud *out)
{
    if (!chip || baud < NTPU_FTDI_BAUD_MIN || baud > chip->baud_max || iface >= chip->channels)
        return -1;
    uint32_t enc, actual;
    if (!chip->h_series) {
        /* FT-X: the 48 MHz clock only, and divisor bit 16 alone in wIndex (no channel). */
        enc = encode_clock(baud, FTDI_C_CLK, FTDI_C_DIV, &actual);
        out->divisor = enc;
        out->actual = actual;
        out->value = (uint16_t)(enc & 0xFFFFu);
        out->index = (uint16_t)(enc >> 16);
        return 0;
    }
    /* The 120 MHz clock reaches every rate whose divisor fits 14 bits; only
     * rates below ~733 baud need the 48 MHz one (libftdi draws the line at the
     * same place). */
    if ((uint64_t)baud * FTDI_H_DIV > FTDI_H_CLK / 0x3FFFu)
        enc = encode_clock(baud, FTDI_H_CLK, FTDI_H_DIV, &actual) | FTDI_DIV_CLK10;
    else
        enc = encode_clock(baud, FTDI_C_CLK, FTDI_C_DIV, &actual);
    out->divisor = enc;
    out->actual = actual;
    out->value = (uint16_t)(enc & 0xFFFFu);
    /* H-series chips take divisor bits 16..17 in wIndex's high byte, next to the channel. */
    out->index = (uint16_t)(((enc >> 8) & 0xFF00u) | ntpu_ftdi_chan_index(iface));
    return 0;
}

uint32_t ntpu_ftdi_baud_error_ppm(uint32_t wanted, uint32_t actual)
{
    if (wanted == 0)
        return actual ? UINT32_MAX : 0;
    uint64_t diff = wanted > actual ? wanted - actual : actual - wanted;
    uint64_t ppm = diff * 1000000u / wanted;
    return ppm > UINT32_MAX ? UINT32_MAX : (uint32_t)ppm;
}

/* ------------------------------------------------------------------ control requests */

static ntpu_ftdi_ctrl req(uint8_t request, uint16_t value, uint16_t index, const char *what)
{
    ntpu_ftdi_ctrl c = {NTPU_FTDI_REQTYPE_OUT, request, value, index, what};
    return c;
}

ntpu_ftdi_ctrl ntpu_ftdi_req_reset(unsigned iface)
{
    return req(NTPU_FTDI_REQ_RESET, NTPU_FTDI_RESET_SIO, ntpu_ftdi_chan_index(iface), "reset");
}

ntpu_ftdi_ctrl ntpu_ftdi_req_purge(unsigned iface, unsigned which)
{
    return req(NTPU_FTDI_REQ_RESET, (uint16_t)which, ntpu_ftdi_chan_index(iface),
               which == NTPU_FTDI_PURGE_RX ? "purge RX" : "purge TX");
}

ntpu_ftdi_ctrl ntpu_ftdi_req_latency(unsigned iface, uint8_t ms)
{
    return req(NTPU_FTDI_REQ_SET_LATENCY_TIMER, ms, ntpu_ftdi_chan_index(iface), "set latency timer");
}

ntpu_ftdi_ctrl ntpu_ftdi_req_bitmode(unsigned iface, uint8_t mode, uint8_t direction_mask)
{
    return req(NTPU_FTDI_REQ_SET_BITMODE, (uint16_t)(mode << 8 | direction_mask), ntpu_ftdi_chan_index(iface),
               "set bit mode");
}

ntpu_ftdi_ctrl ntpu_ftdi_req_flow_none(unsigned iface)
{
    /* The flow-control kind would go in wIndex's high byte; none is 0. */
    return req(NTPU_FTDI_REQ_SET_FLOW_CTRL, 0, ntpu_ftdi_chan_index(iface), "disable flow control");
}

ntpu_ftdi_ctrl ntpu_ftdi_req_line_8n1(unsigned iface)
{
    /* Bits 0..7: data bits; 8..10 parity (0 none); 11..12 stop bits (0 one); 14 break (0 off). */
    return req(NTPU_FTDI_REQ_SET_DATA, 0x0008, ntpu_ftdi_chan_index(iface), "set line 8N1");
}

ntpu_ftdi_ctrl ntpu_ftdi_req_baud(const ntpu_ftdi_baud *b)
{
    return req(NTPU_FTDI_REQ_SET_BAUD_RATE, b->value, b->index, "set baud rate");
}

/* ------------------------------------------------------------------ bulk-IN status bytes */

const char *ntpu_ftdi_line_errors_str(unsigned errors, char *buf, size_t len)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {
        {NTPU_FTDI_LS_OE, "overrun"}, {NTPU_FTDI_LS_PE, "parity error"},         {NTPU_FTDI_LS_FE, "framing error"},
        {NTPU_FTDI_LS_BI, "break"},   {NTPU_FTDI_LS_FIFO, "receive FIFO error"},
    };
    if (!buf || !len)
        return buf;
    buf[0] = 0;
    size_t used = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(errors & names[i].bit))
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i].name);
        if (w < 0 || (size_t)w >= len - used)
            return buf; /* truncated, still terminated */
        used += (size_t)w;
    }
    if (!used)
        snprintf(buf, len, "none");
    return buf;
}

size_t ntpu_ftdi_strip(const uint8_t *in, size_t n, size_t max_packet, uint8_t *out, ntpu_ftdi_status *st)
{
    if (max_packet < 2)
        return 0;
    size_t o = 0;
    for (size_t off = 0; off < n; off += max_packet) {
        size_t len = n - off < max_packet ? n - off : max_packet;
        if (st)
            st->packets++;
        if (len < 2) {
            /* A packet too short for its header: nothing in it can be trusted as data. */
            if (st)
                st->runts++;
            continue;
        }
        if (st) {
            st->modem = in[off];
            st->line = in[off + 1];
            unsigned e = ntpu_ftdi_line_errors(in[off + 1]);
            if (e) {
                st->errors |= e;
                st->error_packets++;
            }
        }
        if (len > 2) {
            memmove(out + o, in + off + 2, len - 2);
            o += len - 2;
        }
    }
    return o;
}

/* ------------------------------------------------------------------ receive buffer */

/* The data bytes ntpu_ftdi_strip would produce from a transfer of n bytes. */
static size_t stripped_size(size_t n, size_t max_packet)
{
    if (max_packet < 2)
        return 0;
    size_t full = n / max_packet, tail = n % max_packet;
    return full * (max_packet - 2) + (tail > 2 ? tail - 2 : 0);
}

int ntpu_ftdi_rx_push(ntpu_rx_queue *q, const uint8_t *xfer, size_t n, size_t max_packet, ntpu_ftdi_status *st)
{
    uint8_t *dst = ntpu_rx_queue_reserve(q, stripped_size(n, max_packet));
    if (!dst)
        return -1;
    ntpu_rx_queue_commit(q, ntpu_ftdi_strip(xfer, n, max_packet, dst, st));
    return 0;
}

/* ------------------------------------------------------------------ device-string options */

/* Whether chip can make baud closely enough; if not, says why in err. */
static int baud_ok(const ntpu_ftdi_chip *chip, uint32_t baud, char *err, size_t errlen)
{
    if (baud > chip->baud_max) {
        ntpu_errf(err, errlen, "the %s cannot make %u baud: %u is its fastest", chip->name, (unsigned)baud,
                  (unsigned)chip->baud_max);
        return 0;
    }
    ntpu_ftdi_baud enc;
    ntpu_ftdi_baud_encode(chip, baud, 0, &enc);
    uint32_t ppm = ntpu_ftdi_baud_error_ppm(baud, enc.actual);
    if (ppm > NTPU_FTDI_BAUD_TOLERANCE_PPM) {
        ntpu_errf(err, errlen, "the %s cannot make %u baud: the nearest it can is %u baud, %u.%u%% off (at most %u%%)",
                  chip->name, (unsigned)baud, (unsigned)enc.actual, (unsigned)(ppm / 10000u),
                  (unsigned)(ppm / 1000u % 10u), NTPU_FTDI_BAUD_TOLERANCE_PPM / 10000u);
        return 0;
    }
    return 1;
}

int ntpu_ftdi_settle(const ntpu_ftdi_opts *o, const ntpu_ftdi_chip *chip, uint32_t *baud, unsigned *iface, char *err,
                     size_t errlen)
{
    *baud = o->baud ? o->baud : chip->default_baud;
    *iface = o->iface == NTPU_FTDI_IFACE_DEFAULT ? chip->default_iface : o->iface;
    if (*iface >= chip->channels) {
        ntpu_errf(err, errlen, "the %s of the %s has no interface %c", chip->name, chip->board_name,
                  *iface == NTPU_FTDI_IFACE_A ? 'A' : 'B');
        return -1;
    }
    return baud_ok(chip, *baud, err, errlen) ? 0 : -1;
}

int ntpu_ftdi_parse_opts(const char *opts, ntpu_ftdi_opts *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->iface = NTPU_FTDI_IFACE_DEFAULT;
    int seen_serial = 0, seen_baud = 0, seen_iface = 0, seen_board = 0;
    const char *p = opts;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        const char *v = eq ? eq + 1 : p + len;
        size_t vlen = len - (size_t)(v - p);
        int *seen = NULL;
        if (eq && klen == 6 && !strncmp(p, "serial", 6))
            seen = &seen_serial;
        else if (eq && klen == 4 && !strncmp(p, "baud", 4))
            seen = &seen_baud;
        else if (eq && klen == 9 && !strncmp(p, "interface", 9))
            seen = &seen_iface;
        else if (eq && klen == 5 && !strncmp(p, "board", 5))
            seen = &seen_board;
        if (!seen) {
            ntpu_errf(err, errlen,
                      "unknown ftdi option '%.*s' (expected serial=S, board=icebreaker|ulx3s, baud=B or "
                      "interface=A|B)",
                      (int)len, p);
            return -1;
        }
        if (*seen) {
            ntpu_errf(err, errlen, "ftdi option '%.*s' is given twice", (int)klen, p);
            return -1;
        }
        *seen = 1;
        if (seen == &seen_serial) {
            if (vlen == 0 || vlen >= sizeof out->serial) {
                ntpu_errf(err, errlen, "ftdi serial= needs 1 to %zu characters", sizeof out->serial - 1);
                return -1;
            }
            for (size_t i = 0; i < vlen; i++)
                if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] > '~') {
                    ntpu_errf(err, errlen, "ftdi serial '%.*s' has a character that cannot be in a serial number",
                              (int)vlen, v);
                    return -1;
                }
            memcpy(out->serial, v, vlen);
            out->serial[vlen] = 0;
        } else if (seen == &seen_baud) {
            size_t i = 0;
            while (i < vlen && v[i] >= '0' && v[i] <= '9')
                i++;
            unsigned long b = 0;
            if (vlen && i == vlen && vlen <= 9) /* nine digits cannot overflow */
                b = strtoul(v, NULL, 10);
            if (!vlen || i != vlen || vlen > 9 || b < NTPU_FTDI_BAUD_MIN || b > NTPU_FTDI_BAUD_MAX) {
                ntpu_errf(err, errlen, "ftdi baud '%.*s' is not a whole number from %u to %u", (int)vlen, v,
                          NTPU_FTDI_BAUD_MIN, NTPU_FTDI_BAUD_MAX);
                return -1;
            }
            out->baud = (uint32_t)b;
        } else if (seen == &seen_board) {
            for (size_t i = 0; i < NTPU_FTDI_NCHIPS && !out->chip; i++)
                if (strlen(ntpu_ftdi_chips[i].board) == vlen && !strncmp(v, ntpu_ftdi_chips[i].board, vlen))
                    out->chip = &ntpu_ftdi_chips[i];
            if (!out->chip) {
                ntpu_errf(err, errlen, "ftdi board '%.*s' is not icebreaker or ulx3s", (int)vlen, v);
                return -1;
            }
        } else {
            if (vlen == 1 && (v[0] == 'A' || v[0] == 'a')) {
                out->iface = NTPU_FTDI_IFACE_A;
            } else if (vlen == 1 && (v[0] == 'B' || v[0] == 'b')) {
                out->iface = NTPU_FTDI_IFACE_B;
            } else {
                ntpu_errf(err, errlen, "ftdi interface '%.*s' is not A or B", (int)vlen, v);
                return -1;
            }
        }
        p = end ? end + 1 : NULL;
        if (p && !*p) {
            ntpu_errf(err, errlen, "ftdi options end with a stray ','");
            return -1;
        }
    }
    /* Refuse what no chip could do before touching USB: without board= the
     * FT2232H, the more capable chip, is the yardstick. */
    uint32_t baud;
    unsigned iface;
    return ntpu_ftdi_settle(out, out->chip ? out->chip : &ntpu_ftdi_chips[0], &baud, &iface, err, errlen);
}
