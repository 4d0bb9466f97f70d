/* SPDX-License-Identifier: Apache-2.0 */
/* libntpu internals shared by the files of host/src: transports, the link
 * (framing, sequence numbers, the queue of replies still to come) and the
 * device handle. Not installed; nothing here is exported from libntpu.so. */
#ifndef NTPU_INTERNAL_H
#define NTPU_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ntpu/ntpu.h"

#define NTPU_ERRMSG_LEN 256

/* printf into err (errlen bytes, may be NULL/0); always NUL-terminated. */
void ntpu_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error is one line: control characters that came in with a user's text
 * (a device string, a file name, a SPEC) become '?'. The formatters here call it. */
void ntpu_one_line(char *s);
/* The same, returning st: `return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "...", ...);` */
ntpu_status ntpu_errst(char *err, size_t errlen, ntpu_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The detail text of the calling thread's most recent failure of a call made on
 * no device handle (the file formats, the parsers, an ntpu_open that could not
 * make a handle): what ntpu_last_error(NULL) returns. NTPU_THREAD_ERRMSG_LEN
 * bytes, always NUL-terminated. The one state the library keeps outside a
 * handle: such a call has no handle to keep it on (decision 0027). */
#define NTPU_THREAD_ERRMSG_LEN 512
char *ntpu_thread_error(void);

/* ------------------------------------------------------------------ transports */

/* A byte pipe to a device. Every transport (ref, vsim, ftdi, usb)
 * fills one of these; the link above never knows which it talks to. */
typedef struct ntpu_transport_ops {
    const char *name;
    /* Sends all n bytes. NTPU_OK or NTPU_ERR_IO (reason in err). */
    ntpu_status (*send)(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen);
    /* Receives exactly n bytes into buf, giving up when nothing has arrived for
     * timeout_ms. *got is how many did arrive. NTPU_OK (all n), NTPU_ERR_TIMEOUT
     * or NTPU_ERR_IO (reason in err). */
    ntpu_status (*recv)(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err, size_t errlen);
    void (*close)(void *ctx); /* frees ctx */
    /* Non-zero when a freshly opened device is known to be at a frame boundary
     * (in-process models start from reset), so open needs no resync. */
    int starts_in_sync;
    /* For a link without flow control (a UART into a small receive FIFO): at
     * most this many bytes of command frames whose replies have not all been
     * read may be outstanding, since only a reply proves the device took the
     * frame out of its FIFO. 0: unlimited (in-process models, USB with flow
     * control). A single frame larger than this is still sent when nothing else
     * is outstanding. */
    size_t max_unanswered_tx_bytes;
    /* Non-zero: the host uses at most this max_payload, whatever the ID block
     * says, so every frame (and open's resync, max_payload + 8 zeros and a NOP)
     * fits the FIFO behind max_unanswered_tx_bytes. The device's own max_payload
     * must not be larger, or resync could not flush a garbage frame. A FIFO for
     * limit L and cap P must hold L + P + 17 bytes: frames abandoned by a resync
     * plus its zeros and NOP (docs/boards.md). 0: no cap. */
    unsigned max_payload_cap;
    /* Non-zero when bytes can be lost or corrupted on the way (a UART, a
     * board): the link then keeps every write that overlaps a READ_MEM whose
     * reply is still to come back until the reply is in, so a lost reply can be
     * replaced by reading again (docs/protocol.md, "Retransmission"). 0 for the
     * in-process models, which keep their full pipelining. */
    int lossy;
    /* Non-zero when every frame handed to send has run, and its reply is
     * queued, by the time send returns (the in-process golden model): a
     * recovery then never has to send again a frame that did not run, so the
     * link keeps a copy of the payloads of reads only (docs/protocol.md,
     * "Retransmission"). */
    int runs_on_send;
    /* Optional, for transports whose received bytes sit in memory (the
     * in-process golden model): the bytes received and not yet taken, where
     * they lie, without waiting (*n of them, NULL when none), valid until the
     * next call on ctx; and consume, which takes the first n of them as recv
     * would. The link checks a whole reply in place and copies its data once. */
    const uint8_t *(*peek)(void *ctx, size_t *n);
    void (*consume)(void *ctx, size_t n);
} ntpu_transport_ops;

typedef struct ntpu_transport {
    const ntpu_transport_ops *ops;
    void *ctx;
} ntpu_transport;

/* Openers: opts is the part of the device string after ':' (NULL if none).
 * On failure: a status and a one-line reason in err. */
ntpu_status ntpu_transport_ref_open(const char *opts, ntpu_transport *out, char *err, size_t errlen);
ntpu_status ntpu_transport_vsim_open(const char *opts, ntpu_transport *out, char *err, size_t errlen);
/* A board top simulated behind its UART pins; vsim_open hands over when opts has board=. */
ntpu_status ntpu_transport_vsim_board_open(const char *opts, ntpu_transport *out, char *err, size_t errlen);
/* vsim:board=pico-ice: the firmware on the emulated RP2040 with the board top's RTL (transport_pico_ice.c). */
ntpu_status ntpu_transport_pico_ice_open(const char *opts, ntpu_transport *out, char *err, size_t errlen);
/* An FT2232H over libusb (transport/transport_ftdi.c); opts as in transport/ftdi_proto.h. */
ntpu_status ntpu_transport_ftdi_open(const char *opts, ntpu_transport *out, char *err, size_t errlen);
/* A board behind the pico-ice firmware over libusb (transport/transport_usb.c); opts as in transport/usb_proto.h. */
ntpu_status ntpu_transport_usb_open(const char *opts, ntpu_transport *out, char *err, size_t errlen);
/* Loads the n-byte iCE40 bitstream bits into the FPGA of the "usb" board that
 * opts names (FPGA_LOAD_BEGIN, the bytes on bulk OUT, FPGA_LOAD_END). The
 * bitstream is checked first (ntpu_usb_check_bitstream: NTPU_ERR_FORMAT, nothing
 * sent). NTPU_ERR_DEVICE when the FPGA refused it (CDONE low); the open errors
 * of ntpu_transport_usb_open otherwise. A link open on the board must be
 * reopened afterwards (the firmware drops its queued bytes). */
ntpu_status ntpu_usb_load_bitstream(const char *opts, const uint8_t *bits, size_t n, char *err, size_t errlen);

/* Wraps an opened transport in one that, in both directions, drops each byte
 * with probability rate/2 and flips one bit of it with probability rate/2,
 * from a generator seeded with seed (transport/transport_faulty.c). It takes `inner`
 * over (closing it on close) and is lossy. For tests and for trying the
 * link's recovery: device option faults=RATE[,fault_seed=S]. */
ntpu_status ntpu_transport_faulty_wrap(ntpu_transport inner, double rate, uint64_t seed, ntpu_transport *out, char *err,
                                       size_t errlen);

/* ------------------------------------------------------------------ frames */

/* Little-endian field access. */
static inline uint16_t ntpu_rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ntpu_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ntpu_rd64(const uint8_t *p)
{
    return ntpu_rd32(p) | ((uint64_t)ntpu_rd32(p + 4) << 32);
}
static inline void ntpu_wr16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void ntpu_wr32(uint8_t *p, uint32_t v)
{
    ntpu_wr16(p, v);
    ntpu_wr16(p + 2, v >> 16);
}

/* count lanes of 16 or 32 bits from host order to the wire's little-endian
 * bytes: one copy on a little-endian host. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NTPU_HOST_WIRE_ORDER 1
#else
#define NTPU_HOST_WIRE_ORDER 0
#endif
static inline void ntpu_wr16_lanes(uint8_t *dst, const uint16_t *src, size_t count)
{
    if (NTPU_HOST_WIRE_ORDER && count == 8) { /* a row of the default array: one move, no call */
        memcpy(dst, src, 16);
        return;
    }
    if (NTPU_HOST_WIRE_ORDER) {
        memcpy(dst, src, count * 2);
        return;
    }
    for (size_t i = 0; i < count; i++)
        ntpu_wr16(dst + 2 * i, src[i]);
}
static inline void ntpu_wr32_lanes(uint8_t *dst, const uint32_t *src, size_t count)
{
    if (NTPU_HOST_WIRE_ORDER) {
        memcpy(dst, src, count * 4);
        return;
    }
    for (size_t i = 0; i < count; i++)
        ntpu_wr32(dst + 4 * i, src[i]);
}

/* CRC-32 of a frame: over SEQ, LEN and PAYLOAD, i.e. bytes 1 .. 3+len of the
 * frame (the value of zlib's crc32; ntpu_crc32.h). */
uint32_t ntpu_frame_crc(const uint8_t *frame, size_t payload_len);

/* Writes a whole frame (header, payload, CRC) to out, which has room for
 * payload_len + NTPU_FRAME_OVERHEAD bytes; payload may already sit at out + 4.
 * Returns the frame's length. */
size_t ntpu_frame_encode(uint8_t *out, uint8_t sof, uint8_t seq, const uint8_t *payload, size_t payload_len);

/* Checks a received frame of `n` bytes: SOF, LEN in 1..max_payload and equal to
 * n - 8, and the CRC. Returns 0 if good, else -1 with the reason in err. */
int ntpu_frame_check(const uint8_t *frame, size_t n, uint8_t sof, unsigned max_payload, char *err, size_t errlen);

/* ------------------------------------------------------------------ link */

/* The host end of the link: numbers frames, batches them into large writes,
 * keeps the queue of replies still to come, and checks each reply. */
typedef struct ntpu_pending {
    uint8_t seq;
    uint8_t op;
    uint32_t data_len; /* reply data bytes expected after the status byte */
    uint32_t tx_bytes; /* the command frame's length on the wire */
    void *dst;         /* where the data goes (NULL: none expected) */
    uint64_t ticket;
    /* A copy of the payload, to send again after a recovery. The buffer
     * belongs to the ring slot and is reused. kept 0: no copy was needed
     * (runs_on_send and no reply data), payload holds an older frame's. */
    uint8_t *payload;
    size_t len, cap;
    int kept;
    /* READ_MEM: the rows it reads, [rd_lo, rd_hi) of memory rd_mem (the
     * hazard rule of lossy links); rd_hi == rd_lo for any other command. */
    uint8_t rd_mem;
    uint32_t rd_lo, rd_hi;
} ntpu_pending;

/* At most this many frames unanswered: well under 256, so a SEQ always names
 * one frame, and small enough to bound what the device has to buffer. */
#define NTPU_LINK_WINDOW 128u
/* At most this many reply bytes expected and not yet read. */
#define NTPU_LINK_REPLY_BUDGET (64u * 1024u)
/* Pending frames are written to the transport once this many bytes queue up. */
#define NTPU_LINK_TX_FLUSH (64u * 1024u)
#define NTPU_LINK_TIMEOUT_MS 5000u
/* The link gives up after this many recoveries in a row without a frame
 * getting through (at one fault per 3,000 bytes a 4 KB frame gets through
 * about one time in four: 32 tries fail together once in 10^4 or so); after
 * this many SYNCs in a row without a reply; or after this many in a row that
 * got no byte at all back (a silent device, e.g. a board not configured). */
#define NTPU_LINK_MAX_RECOVERIES 32u
#define NTPU_LINK_MAX_SYNC_FAILS 4u
#define NTPU_LINK_MAX_SILENT 2u

typedef struct ntpu_link {
    ntpu_transport tp;
    unsigned max_payload;
    unsigned timeout_ms;
    uint8_t next_seq; /* SEQ of the next new frame: the device's expected_seq once all have run */
    uint8_t sync_seq; /* SEQ of the next SYNC; each SYNC gets a new one, so a late reply cannot pass for it */
    /* Frames not yet handed to the transport. */
    uint8_t *tx;
    size_t tx_len, tx_cap;
    size_t open_frame;   /* offset of a frame begun with ntpu_link_begin, or SIZE_MAX */
    size_t open_len;     /* its payload length */
    uint32_t open_reply; /* its expected reply data length */
    /* Unanswered frames, oldest first, in a ring of NTPU_LINK_WINDOW. */
    ntpu_pending pend[NTPU_LINK_WINDOW];
    unsigned pend_head, pend_count;
    size_t pend_reply_bytes;
    size_t pend_tx_bytes;                /* command frame bytes of the unanswered frames, sent or queued */
    unsigned pend_reads;                 /* unanswered READ_MEMs */
    uint64_t sent_total, answered_total; /* frames; a frame's ticket is its sent_total */
    unsigned no_progress;                /* recoveries since a frame last got through */
    /* The oldest frame's reply said ERR_LENGTH: a command the device ran and
     * rejected, or a header the link garbled; recovery tells which. */
    int len_err_pending;
    uint8_t *hold; /* an open frame's payload while commit waits on a hazard */
    size_t hold_cap;
    uint8_t *rx; /* one reply frame */
    /* The first device error since the last check. */
    int dev_error;
    uint8_t dev_error_status, dev_error_op, dev_error_seq;
    int broken;                       /* lost sync and could not resync */
    char broken_why[NTPU_ERRMSG_LEN]; /* the error that broke it, repeated by every call until reset */
    uint16_t dev_error_done;          /* RUN: commands of the program that ran before the failing one */
    /* Recording a program (program.c): while rec_on, begin/commit append each
     * payload, prefixed by its u16 LEN, to rec[] instead of sending it; a
     * command that needs a reply's data fails, and so does waiting. */
    int rec_on;
    uint8_t *rec;
    size_t rec_len, rec_cap, rec_cmds;
    ntpu_link_stats stats;
    char *err; /* the owner's error text buffer, NTPU_ERRMSG_LEN bytes */
} ntpu_link;

/* Sets up l over an opened transport (l takes it over: ntpu_link_free closes it).
 * max_payload is lowered to the transport's max_payload_cap, if it has one. */
ntpu_status ntpu_link_init(ntpu_link *l, ntpu_transport tp, unsigned max_payload, char *err);
void ntpu_link_free(ntpu_link *l);

/* Starts a command frame with a payload of len bytes (1 .. max_payload) whose
 * reply carries reply_len data bytes after the status byte, and returns where
 * the payload goes, or NULL with *st set (error text set) on a link or memory
 * failure. May first read replies to make room in the window. Finish with
 * ntpu_link_commit before any other link call. */
uint8_t *ntpu_link_begin(ntpu_link *l, size_t len, uint32_t reply_len, ntpu_status *st);

/* Seals the frame begun last; its reply data will be copied to dst (NULL to
 * drop it). Sets *ticket (may be NULL) for ntpu_link_wait. On a lossy link it
 * first reads replies until no READ_MEM whose rows the frame writes is
 * unanswered, so it can fail as ntpu_link_wait does (then the frame is not
 * sent). */
ntpu_status ntpu_link_commit(ntpu_link *l, void *dst, uint64_t *ticket);

/* Sends a whole command payload (begin + copy + commit). */
ntpu_status ntpu_link_command(ntpu_link *l, const uint8_t *payload, size_t len, uint32_t reply_len, void *dst,
                              uint64_t *ticket);

/* Writes queued frames to the transport. */
ntpu_status ntpu_link_flush(ntpu_link *l);

/* Reads replies until the frame with this ticket has been answered. Returns the
 * first link error, else NTPU_ERR_DEVICE if any reply read since the last check
 * carried a device error (then clears it), else NTPU_OK. */
ntpu_status ntpu_link_wait(ntpu_link *l, uint64_t ticket);

/* Reads every outstanding reply; result as ntpu_link_wait. */
ntpu_status ntpu_link_sync(ntpu_link *l);

/* Abandons every unanswered frame, resynchronizes (zeros, then SYNC: docs/protocol.md)
 * and numbers the next frame with the device's expected SEQ. Clears `broken`
 * on success. */
ntpu_status ntpu_link_resync(ntpu_link *l);

/* Starts recording (any earlier recording is dropped) / stops it, handing the
 * bytes over (*bytes malloc'd, the caller frees; NULL when empty). */
void ntpu_link_record_begin(ntpu_link *l);
void ntpu_link_record_end(ntpu_link *l, uint8_t **bytes, size_t *len, size_t *cmds);

/* Name of an opcode ("MATMUL", ...), never NULL. */
const char *ntpu_op_name(unsigned op);

/* ------------------------------------------------------------------ device */

struct ntpu_device {
    int ok; /* 0: a handle whose open failed; it carries only err */
    ntpu_link link;
    ntpu_info info;
    unsigned n;         /* array size */
    uint64_t pm_writes; /* writes to PM so far: whoever keeps a program there can tell it is still there */
    void *mem_owner;    /* whose data UB, WB, ACC and OS hold (ntpu_claim_memories) */
    ntpu_status (*mem_evict)(void *owner);
    char err[NTPU_ERRMSG_LEN];
};

/* The high-level users of the memories (a model, a quantized model, ntpu_matmul) take them in turn:
 * before its work each claims them, which first lets the previous owner save what only the device
 * holds (evict: a device-optimizer model fetches its fp32 weights); *changed (when given) says that
 * who did not hold them, so its data must be written again. who NULL: a one-off user that keeps
 * nothing there. The low-level calls (ntpu_write_rows, ...) claim nothing. */
ntpu_status ntpu_claim_memories(ntpu_device *dev, void *who, ntpu_status (*evict)(void *owner), int *changed);
/* who gives the memories up (it is being freed): nothing is evicted. */
void ntpu_release_memories(ntpu_device *dev, const void *who);

/* The whole decimal number s[0..len) (len 0: up to the end), digits only (no sign, space or 0x),
 * into *out: 0, or -1 when it is not one or exceeds max. */
int ntpu_parse_whole(const char *s, size_t len, uint64_t max, uint64_t *out);

/* Sets dev->err (printf style), or the thread's text (ntpu_thread_error) when dev
 * is NULL, and returns st. */
ntpu_status ntpu_fail(ntpu_device *dev, ntpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* NTPU_OK if dev is a usable handle, else the status to return (with err set). */
ntpu_status ntpu_check_dev(ntpu_device *dev);

/* Rows of memory mem on this device (0 for a bad id); bytes per row on the wire. */
uint32_t ntpu_mem_rows(const ntpu_device *dev, unsigned mem);
size_t ntpu_row_bytes(const ntpu_device *dev, unsigned mem);

/* NTPU_OK if rows addr .. addr+rows-1 exist in memory mem, else
 * NTPU_ERR_INVALID_ARG with the reason set. */
ntpu_status ntpu_check_range(ntpu_device *dev, unsigned mem, uint32_t addr, uint32_t rows);

/* NTPU_OK if this device computes in dtype, else the status with the reason set. */
ntpu_status ntpu_check_dtype(ntpu_device *dev, ntpu_dtype dtype);

/* ACT, RELU_GRAD, COLSUM done on the host (fallback/vector_host.c) for a device without
 * feature VECTOR; arguments already checked as for ntpu_vec_*. Wait for the
 * device (READ_MEM), then queue the result (WRITE_MEM). */
ntpu_status ntpu_host_act(ntpu_device *dev, unsigned flags, uint32_t src, uint32_t dst, uint32_t rows, uint32_t aux);
ntpu_status ntpu_host_relu_grad(ntpu_device *dev, unsigned out, uint32_t src, uint32_t dst, uint32_t rows,
                                uint32_t mask);
ntpu_status ntpu_host_colsum(ntpu_device *dev, uint32_t src, uint32_t dst, uint32_t rows, int accumulate);
/* MATMUL TRANSPOSE_A done with plain MATMULs (fallback/transpose_host.c), for a device without
 * feature TRANSPOSE_A; arguments already checked. */
ntpu_status ntpu_host_matmul_transpose_a(ntpu_device *dev, ntpu_dtype dtype, uint32_t ub_addr, uint32_t stride,
                                         uint32_t acc_addr, uint32_t rows, int accumulate);

#endif
