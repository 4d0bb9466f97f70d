/* SPDX-License-Identifier: Apache-2.0 */
/* The USB protocol of the FTDI UART chips on the boards (the iCEBreaker's
 * FT2232H, the ULX3S's FT231X) as pure functions, for the "ftdi" transport
 * (transport_ftdi.c): which chip is on which board, the baud-rate divisor, the
 * vendor control requests, the two status bytes at the start of every bulk-IN
 * packet, and the options of the device string. Nothing here touches libusb, so all of it is unit-tested
 * (tests/host/test_ftdi.c). Facts: /work/shared/notes/boards.md, which agree
 * with libftdi1 1.5's headers and encoder. Not installed. */
#ifndef NTPU_FTDI_PROTO_H
#define NTPU_FTDI_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "rx_queue.h"

#define NTPU_FTDI_VID 0x0403u
#define NTPU_FTDI_PID_2232H 0x6010u
#define NTPU_FTDI_PID_231X 0x6015u /* every FT-X chip: FT230X, FT231X, FT234X */

/* A chip the transport can drive, and the board it sits on. */
typedef struct ntpu_ftdi_chip {
    uint16_t pid;
    const char *name;       /* "FT2232H" */
    const char *board;      /* "icebreaker": the board= option, lower case */
    const char *board_name; /* "iCEBreaker": for messages */
    unsigned channels;      /* 2: interfaces A and B; 1: A only */
    int h_series;           /* a 120 MHz baud clock besides the 48 MHz one, and the channel in the baud wIndex */
    uint32_t baud_max;      /* fastest rate (the slowest is NTPU_FTDI_BAUD_MIN on every chip) */
    uint32_t default_baud;  /* the rate the board's bitstream runs at (fpga/boards/<board>/board.mk) */
    unsigned default_iface; /* the channel wired to the FPGA's UART */
} ntpu_ftdi_chip;

/* The known chips, FT2232H first; NTPU_FTDI_NCHIPS of them. */
#define NTPU_FTDI_NCHIPS 2u
extern const ntpu_ftdi_chip ntpu_ftdi_chips[NTPU_FTDI_NCHIPS];
const ntpu_ftdi_chip *ntpu_ftdi_chip_by_pid(uint16_t pid); /* NULL if unknown */

/* Interface 0 is channel A, interface 1 channel B. Control requests name a
 * channel as interface + 1 (wIndex), and each channel has its own endpoints. */
#define NTPU_FTDI_IFACE_A 0u
#define NTPU_FTDI_IFACE_B 1u
static inline uint16_t ntpu_ftdi_chan_index(unsigned iface)
{
    return (uint16_t)(iface + 1u);
}
static inline uint8_t ntpu_ftdi_ep_out(unsigned iface)
{
    return (uint8_t)(0x02u + 2u * iface);
} /* 0x02, 0x04 */
static inline uint8_t ntpu_ftdi_ep_in(unsigned iface)
{
    return (uint8_t)(0x81u + 2u * iface);
} /* 0x81, 0x83 */

/* ------------------------------------------------------------------ baud rate */

/* The rates the chips can make: an H-series one reaches 12 MHz / 1, an FT-X one
 * 3 MHz / 1; at the bottom the divisor register (17 bits, in eighths) runs out
 * on the 3 MHz clock both have. */
#define NTPU_FTDI_BAUD_MAX 12000000u
#define NTPU_FTDI_BAUD_MIN 184u
/* The farthest the achieved rate may be from the asked-for one: a UART
 * receiver samples mid-bit, so over the 10 bits of a character a few percent
 * is the most both ends' errors together can drift. */
#define NTPU_FTDI_BAUD_TOLERANCE_PPM 30000u

typedef struct ntpu_ftdi_baud {
    uint16_t value;   /* wValue of request 0x03 */
    uint16_t index;   /* wIndex of request 0x03: H-series, divisor bits 16..17 << 8 | channel; FT-X, bit 16 */
    uint32_t divisor; /* encoded divisor: 17 bits, and on H-series the clock-select bit (bit 17) */
    uint32_t actual;  /* the rate the chip will really run at, rounded to the nearest baud */
} ntpu_ftdi_baud;

/* Encodes baud (NTPU_FTDI_BAUD_MIN .. chip->baud_max) for the channel of
 * interface iface of chip. Returns 0, or -1 for a rate outside that range or an
 * interface the chip does not have. The achieved rate may be far from baud
 * (9 Mbaud gives 8 on an FT2232H); check it with ntpu_ftdi_baud_error_ppm. */
int ntpu_ftdi_baud_encode(const ntpu_ftdi_chip *chip, uint32_t baud, unsigned iface, ntpu_ftdi_baud *out);

/* |actual - wanted| / wanted in parts per million. */
uint32_t ntpu_ftdi_baud_error_ppm(uint32_t wanted, uint32_t actual);

/* ------------------------------------------------------------------ control requests */

#define NTPU_FTDI_REQTYPE_OUT 0x40u /* vendor request, host to device */
#define NTPU_FTDI_REQTYPE_IN 0xC0u  /* vendor request, device to host */

enum {
    NTPU_FTDI_REQ_RESET = 0x00,
    NTPU_FTDI_REQ_SET_FLOW_CTRL = 0x02,
    NTPU_FTDI_REQ_SET_BAUD_RATE = 0x03,
    NTPU_FTDI_REQ_SET_DATA = 0x04,
    NTPU_FTDI_REQ_SET_LATENCY_TIMER = 0x09,
    NTPU_FTDI_REQ_SET_BITMODE = 0x0B,
};

/* wValue of NTPU_FTDI_REQ_RESET. libftdi 1.5 warns that "RX" and "TX" here are
 * seen from the chip and easily swapped; the transport purges both, so it does
 * not matter which is which. */
enum { NTPU_FTDI_RESET_SIO = 0, NTPU_FTDI_PURGE_RX = 1, NTPU_FTDI_PURGE_TX = 2 };

/* Bit modes (wValue high byte of NTPU_FTDI_REQ_SET_BITMODE). */
enum { NTPU_FTDI_BITMODE_RESET = 0x00, NTPU_FTDI_BITMODE_MPSSE = 0x02, NTPU_FTDI_BITMODE_SYNCFF = 0x40 };

/* One control transfer with no data stage. */
typedef struct ntpu_ftdi_ctrl {
    uint8_t request_type;
    uint8_t request;
    uint16_t value;
    uint16_t index;
    const char *what; /* names it in error messages */
} ntpu_ftdi_ctrl;

ntpu_ftdi_ctrl ntpu_ftdi_req_reset(unsigned iface);
ntpu_ftdi_ctrl ntpu_ftdi_req_purge(unsigned iface, unsigned which); /* NTPU_FTDI_PURGE_RX or _TX */
/* Latency timer: how long the chip holds a part-filled packet before sending
 * it (1..255 ms; the chip's default 16 ms would add 16 ms to every reply). */
ntpu_ftdi_ctrl ntpu_ftdi_req_latency(unsigned iface, uint8_t ms);
ntpu_ftdi_ctrl ntpu_ftdi_req_bitmode(unsigned iface, uint8_t mode, uint8_t direction_mask);
ntpu_ftdi_ctrl ntpu_ftdi_req_flow_none(unsigned iface);
ntpu_ftdi_ctrl ntpu_ftdi_req_line_8n1(unsigned iface);
ntpu_ftdi_ctrl ntpu_ftdi_req_baud(const ntpu_ftdi_baud *b);

/* ------------------------------------------------------------------ bulk-IN status bytes */

/* Modem status (first byte of every packet): the high nibble holds the lines. */
#define NTPU_FTDI_MS_CTS 0x10u
#define NTPU_FTDI_MS_DSR 0x20u
#define NTPU_FTDI_MS_RI 0x40u
#define NTPU_FTDI_MS_DCD 0x80u
/* Line status (second byte), as in a 16550 UART's LSR. */
#define NTPU_FTDI_LS_DR 0x01u   /* data ready */
#define NTPU_FTDI_LS_OE 0x02u   /* overrun: the chip's receive buffer was full and bytes were lost */
#define NTPU_FTDI_LS_PE 0x04u   /* parity error (8N1 has no parity; seen only with a wrong line setting) */
#define NTPU_FTDI_LS_FE 0x08u   /* framing error: no stop bit (wrong baud, or noise) */
#define NTPU_FTDI_LS_BI 0x10u   /* break: the line was held low a whole character (FPGA not driving TX) */
#define NTPU_FTDI_LS_THRE 0x20u /* transmit holding register empty */
#define NTPU_FTDI_LS_TEMT 0x40u /* transmitter empty */
#define NTPU_FTDI_LS_FIFO 0x80u /* error in the receive FIFO */
#define NTPU_FTDI_LS_ERRORS (NTPU_FTDI_LS_OE | NTPU_FTDI_LS_PE | NTPU_FTDI_LS_FE | NTPU_FTDI_LS_BI | NTPU_FTDI_LS_FIFO)

/* What the status bytes of a stream of packets said. */
typedef struct ntpu_ftdi_status {
    uint8_t modem;          /* latest modem status byte */
    uint8_t line;           /* latest line status byte */
    unsigned errors;        /* OR of the NTPU_FTDI_LS_ERRORS bits seen */
    uint64_t packets;       /* packets seen (a runt packet of 0 or 1 bytes counts too) */
    uint64_t runts;         /* packets too short to hold the two status bytes: dropped */
    uint64_t error_packets; /* packets whose line status carried an error bit */
} ntpu_ftdi_status;

/* The error bits of a line status byte. */
static inline unsigned ntpu_ftdi_line_errors(uint8_t line)
{
    return line & NTPU_FTDI_LS_ERRORS;
}

/* Describes error bits ("overrun, framing error") into buf; "none" for 0.
 * Returns buf. */
const char *ntpu_ftdi_line_errors_str(unsigned errors, char *buf, size_t len);

/* Strips the two status bytes from the start of every max_packet-byte slice of
 * one bulk-IN transfer of n bytes (the last slice may be shorter) and writes
 * the data bytes to out, which may be in itself (the data only moves towards
 * the front) and has room for n bytes. A 2-byte packet carries no data. Records
 * the status bytes in st (may be NULL). Returns the number of data bytes. */
size_t ntpu_ftdi_strip(const uint8_t *in, size_t n, size_t max_packet, uint8_t *out, ntpu_ftdi_status *st);

/* ------------------------------------------------------------------ receive buffer */

/* Strips the transfer (as ntpu_ftdi_strip) onto the end of the queue, whose
 * limit counts data bytes. Returns 0, or -1 (nothing added) if the queue would
 * pass its limit or memory runs out. */
int ntpu_ftdi_rx_push(ntpu_rx_queue *q, const uint8_t *xfer, size_t n, size_t max_packet, ntpu_ftdi_status *st);

/* ------------------------------------------------------------------ device-string options */

#define NTPU_FTDI_SERIAL_MAX 64 /* room for a serial number, with its NUL */
#define NTPU_FTDI_DEFAULT_BAUD 3000000u

typedef struct ntpu_ftdi_opts {
    char serial[NTPU_FTDI_SERIAL_MAX]; /* "" = any */
    const ntpu_ftdi_chip *chip;        /* from board=; NULL = whichever known chip is plugged in */
    uint32_t baud;                     /* 0 = the chip's default_baud */
    unsigned iface;                    /* NTPU_FTDI_IFACE_A or _B; NTPU_FTDI_IFACE_DEFAULT = the chip's */
} ntpu_ftdi_opts;
#define NTPU_FTDI_IFACE_DEFAULT 0xFFu

/* Parses the part of "ftdi[:serial=S][,board=icebreaker|ulx3s][,baud=B]
 * [,interface=A|B]" after the colon (NULL or "" for the defaults: any serial,
 * any known chip, its board's rate and channel). Returns 0, or -1 with a
 * one-line reason in err. Without board= the rate and channel are checked
 * against the FT2232H here and against the chip found by ntpu_ftdi_settle. */
int ntpu_ftdi_parse_opts(const char *opts, ntpu_ftdi_opts *out, char *err, size_t errlen);

/* The rate and channel to use on chip: the options' or the chip's defaults.
 * Returns 0, or -1 with a one-line reason in err when the chip lacks the
 * channel or cannot make the rate within NTPU_FTDI_BAUD_TOLERANCE_PPM. */
int ntpu_ftdi_settle(const ntpu_ftdi_opts *o, const ntpu_ftdi_chip *chip, uint32_t *baud, unsigned *iface, char *err,
                     size_t errlen);

#endif
