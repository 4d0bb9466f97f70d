/* SPDX-License-Identifier: Apache-2.0 */
/* A golden model and the Verilator RTL side by side, fed the same bytes: the
 * harness of the differential tests. Header-only: each test is one program.
 * The RTL side is vsim's core, or with NTPU_TEST_VSIM naming a board
 * (board=...) a whole simulated board behind its UART, the golden model then
 * configured as the board says in its ID block. With NTPU_TEST_TWIN set (to an
 * array size N, or 0 for the default) a second golden model takes the RTL's
 * place, both of that size: the streams' generators run against a device with
 * every feature, before an RTL has it; the twin runs every MATMUL at once
 * (ntpu_ref_set_fusion(0)), so fused chains meet the unfused bits. */
#ifndef NTPU_TESTS_PAIR_H
#define NTPU_TESTS_PAIR_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/protocol.h"
#include "ntpu_ref.h"
#include "ntpu_vsim.h"
#include "ntpu_vsim_board.h"

#define PAIR_IDLE_LIMIT 200000u /* cycles without a byte moving before vsim counts as stuck */
/* A board's clock cycles without a byte finishing on either wire before it
 * counts as stuck: a byte crosses the UART every few dozen cycles, so only a
 * command computing with no reply going out leaves the wires quiet. On the
 * iCEBreaker none of diff_random's does for 100 cycles; this leaves room for
 * bigger boards (programs, Adam) and costs time only when a run fails. */
#define PAIR_BOARD_IDLE_LIMIT 2000000u
/* Byte times (10 * CLOCK_HZ / BAUD cycles, 40 on the iCEBreaker) to wait after
 * the last reply for bytes the golden model did not send: a reply longer than
 * its would follow at once, one more reply within a command's time. */
#define PAIR_BOARD_TAIL_BYTES 100u
/* A UART without flow control: bytes of frames whose replies have not all
 * come back sit in the board's RX FIFO (2048 bytes on the iCEBreaker); the
 * host keeps at most this many in flight (NTPU_TEST_WINDOW overrides it). */
#define PAIR_BOARD_WINDOW 1500u

typedef struct pair {
    ntpu_ref *ref;
    ntpu_vsim *vsim;        /* the RTL side: vsim's core, or */
    ntpu_vsim_board *board; /* a whole board (NTPU_TEST_VSIM with board=); the other is NULL */
    ntpu_ref *twin;         /* or NTPU_TEST_TWIN's second golden model, in the RTL's place */
    size_t window;          /* board: bytes of unanswered frames in flight at most */
    uint64_t tail_limit;    /* board: cycles of PAIR_BOARD_TAIL_BYTES byte times */
    uint8_t seq;
    /* the bytes sent since the last exchange, and what each side replied */
    uint8_t *tx;
    size_t tx_len, tx_cap;
    uint8_t *ref_rx, *vsim_rx;
    size_t rx_cap;
} pair;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    exit(1);
}

static inline void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned get16(const uint8_t *p)
{
    return p[0] | p[1] << 8;
}

static void pair_append(pair *p, const uint8_t *buf, size_t n)
{
    if (p->tx_len + n > p->tx_cap) {
        p->tx_cap = (p->tx_len + n) * 2;
        p->tx = realloc(p->tx, p->tx_cap);
        if (!p->tx)
            die("out of memory");
    }
    memcpy(p->tx + p->tx_len, buf, n);
    p->tx_len += n;
}

/* Opens a board and asks its ID block with INFO (SEQ 0); the golden model is
 * created with the board's configuration and fed the same frame, its reply
 * dropped, so both expect SEQ 1 next. */
static void pair_open_board(pair *p, const char *opts)
{
    char err[256] = "";
    p->board = ntpu_vsim_board_new(opts, err, sizeof err);
    if (!p->board)
        die("cannot create the board %s: %s", opts, err);
    const char *w = getenv("NTPU_TEST_WINDOW");
    p->window = w && *w ? strtoul(w, NULL, 0) : PAIR_BOARD_WINDOW;
    ntpu_vsim_board_stats st;
    ntpu_vsim_board_get_stats(p->board, &st);
    p->tail_limit = (uint64_t)PAIR_BOARD_TAIL_BYTES * 10 * st.clock_hz / (st.baud ? st.baud : 1);
    uint8_t frame[NTPU_FRAME_OVERHEAD + 1] = {NTPU_SOF_CMD, 0, 1, 0, NTPU_OP_INFO};
    put32(frame + 5, crc32(0, frame + 1, 4));
    uint8_t rx[NTPU_FRAME_OVERHEAD + 1 + NTPU_ID_BYTES];
    ntpu_vsim_board_write(p->board, frame, sizeof frame);
    size_t got = ntpu_vsim_board_read(p->board, rx, sizeof rx, PAIR_BOARD_IDLE_LIMIT);
    if (got != sizeof rx || rx[0] != NTPU_SOF_REPLY || rx[1] != 0 || get16(rx + 2) != 1 + NTPU_ID_BYTES ||
        crc32(0, rx + 1, 3 + 1 + NTPU_ID_BYTES) != get32(rx + 4 + 1 + NTPU_ID_BYTES) || rx[4] != NTPU_DEV_OK)
        die("the board's INFO reply is malformed (%zu of %zu bytes)", got, sizeof rx);
    const uint8_t *id = rx + 5;
    unsigned features = id[NTPU_ID_OFF_FEATURES];
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = id[NTPU_ID_OFF_ROWS];
    cfg.ub_rows = get32(id + NTPU_ID_OFF_UB_ROWS);
    cfg.wb_rows = get32(id + NTPU_ID_OFF_WB_ROWS);
    cfg.acc_rows = get32(id + NTPU_ID_OFF_ACC_ROWS);
    cfg.max_payload = get16(id + NTPU_ID_OFF_MAX_PAYLOAD);
    cfg.no_vector = !(features & NTPU_FEATURE_VECTOR_BIT);
    cfg.no_transpose_a = !(features & NTPU_FEATURE_TRANSPOSE_A_BIT);
    cfg.no_conv = !(features & NTPU_FEATURE_CONV_BIT);
    cfg.no_pool = !(features & NTPU_FEATURE_POOL_BIT);
    cfg.pm_rows = get32(id + NTPU_ID_OFF_PM_ROWS);
    cfg.os_rows = get32(id + NTPU_ID_OFF_OS_ROWS);
    cfg.link_bytes = 1; /* byte-wide, as a board */
    p->ref = ntpu_ref_new(&cfg);
    if (!p->ref)
        die("cannot create the golden model as the board: n=%u ub=%u wb=%u acc=%u payload=%u novec=%u notra=%u "
            "pm=%u os=%u",
            cfg.n, cfg.ub_rows, cfg.wb_rows, cfg.acc_rows, cfg.max_payload, cfg.no_vector, cfg.no_transpose_a,
            cfg.pm_rows, cfg.os_rows);
    ntpu_ref_write(p->ref, frame, sizeof frame);
    if (ntpu_ref_read(p->ref, rx, sizeof rx) != sizeof rx || ntpu_ref_pending(p->ref) != 0)
        die("the golden model's INFO reply is not %zu bytes", sizeof rx);
    p->seq = 1;
}

static void pair_open(pair *p)
{
    char err[256] = "";
    memset(p, 0, sizeof *p);
    /* NTPU_TEST_VSIM: vsim's options (ntpu_vsim.h), e.g. rtl for the core from rtl/ alone;
     * or a board's (ntpu_vsim_board.h), e.g. board=icebreaker, passed on whole. */
    const char *opts = getenv("NTPU_TEST_VSIM");
    if (opts && strstr(opts, "board=")) {
        pair_open_board(p, opts);
        return;
    }
    const char *twin = getenv("NTPU_TEST_TWIN");
    if (twin && *twin) {
        ntpu_ref_config cfg = ntpu_ref_default_config();
        unsigned n = (unsigned)strtoul(twin, NULL, 0);
        cfg.n = n ? n : cfg.n;
        p->ref = ntpu_ref_new(&cfg);
        p->twin = ntpu_ref_new(&cfg);
        ntpu_ref_set_fusion(p->twin, 0);
        if (!p->ref || !p->twin)
            die("cannot create two golden models with NTPU_TEST_TWIN=%s (an array size 2..64, or 0)", twin);
        return;
    }
    p->ref = ntpu_ref_new(NULL);
    p->vsim = ntpu_vsim_new(opts, err, sizeof err);
    if (!p->ref || !p->vsim)
        die("cannot create the models: %s", err);
}

/* Cycles the RTL side has been clocked: the core's, or the board's clock. */
static inline uint64_t pair_cycles(const pair *p)
{
    if (p->twin)
        return 0;
    if (!p->board)
        return ntpu_vsim_cycles(p->vsim);
    ntpu_vsim_board_stats st;
    ntpu_vsim_board_get_stats(p->board, &st);
    return st.cycles;
}

static void pair_close(pair *p)
{
    ntpu_ref_free(p->ref);
    ntpu_ref_free(p->twin);
    ntpu_vsim_free(p->vsim);
    ntpu_vsim_board_free(p->board);
    free(p->tx);
    free(p->ref_rx);
    free(p->vsim_rx);
}

/* Appends raw bytes, frames or not (vsim only: a board's UART has no flow
 * control, so the host must know where each frame ends to pace them). */
static inline void pair_raw(pair *p, const uint8_t *buf, size_t n)
{
    if (p->board)
        die("raw link bytes on a board: pair paces a board's UART frame by frame, so a test that sends "
            "non-frame bytes runs on vsim only");
    pair_append(p, buf, n);
}

/* Appends one frame with this SEQ. */
static void pair_frame(pair *p, uint8_t seq, const uint8_t *payload, size_t len)
{
    uint8_t hdr[4] = {NTPU_SOF_CMD, seq, (uint8_t)len, (uint8_t)(len >> 8)};
    uint32_t crc = crc32(crc32(0, hdr + 1, 3), payload, (uInt)len);
    uint8_t tail[4];
    put32(tail, crc);
    pair_append(p, hdr, 4);
    pair_append(p, payload, len);
    pair_append(p, tail, 4);
}

/* Appends one command frame with the SEQ the device expects next; returns it. */
static inline uint8_t pair_cmd(pair *p, const uint8_t *payload, size_t len)
{
    pair_frame(p, p->seq, payload, len);
    return p->seq++;
}

static void pair_rx_room(pair *p, size_t n)
{
    if (n + 1 > p->rx_cap) {
        p->rx_cap = (n + 1) * 2;
        p->ref_rx = realloc(p->ref_rx, p->rx_cap);
        p->vsim_rx = realloc(p->vsim_rx, p->rx_cap);
        if (!p->ref_rx || !p->vsim_rx)
            die("out of memory");
    }
}

/* pair_exchange on a board: the queued frames go out in windows of at most
 * p->window bytes whose replies have not all come back (a longer frame alone,
 * after every earlier reply). The golden model, fed frame by frame first, says
 * how long each reply is; the board must send exactly that many bytes. */
static size_t pair_exchange_board(pair *p)
{
    size_t nf = 0, cap = 0, *end = NULL, *rend = NULL; /* per frame: where it ends in tx, its reply in ref_rx */
    for (size_t i = 0; i < p->tx_len; nf++) {
        if (p->tx[i] != NTPU_SOF_CMD || p->tx_len - i < NTPU_FRAME_OVERHEAD ||
            p->tx_len - i < NTPU_FRAME_OVERHEAD + get16(p->tx + i + 2))
            die("queued bytes at %zu are not a whole frame", i);
        if (nf == cap) {
            cap = cap ? 2 * cap : 256;
            end = realloc(end, cap * sizeof *end);
            rend = realloc(rend, cap * sizeof *rend);
            if (!end || !rend)
                die("out of memory");
        }
        i += NTPU_FRAME_OVERHEAD + get16(p->tx + i + 2);
        end[nf] = i;
    }
    size_t n = 0;
    for (size_t f = 0; f < nf; f++) {
        size_t at = f ? end[f - 1] : 0;
        ntpu_ref_write(p->ref, p->tx + at, end[f] - at);
        size_t k = ntpu_ref_pending(p->ref);
        pair_rx_room(p, n + k);
        if (ntpu_ref_read(p->ref, p->ref_rx + n, k) != k)
            die("golden model lost reply bytes");
        rend[f] = n += k;
    }
    pair_rx_room(p, n);
    /* sent: frames written to the board; done: frames whose replies are in (or, with
     * none, a later frame's); got: reply bytes received */
    size_t sent = 0, done = 0, got = 0, answered = 0;
    while (answered < nf) {
        size_t base = done ? end[done - 1] : 0;
        while (sent < nf && (sent == done || end[sent] - base <= p->window)) {
            size_t at = sent ? end[sent - 1] : 0;
            ntpu_vsim_board_write(p->board, p->tx + at, end[sent] - at);
            sent++;
        }
        size_t want = rend[answered] - got;
        if (want) {
            size_t r = ntpu_vsim_board_read(p->board, p->vsim_rx + got, want, PAIR_BOARD_IDLE_LIMIT);
            got += r;
            if (r != want)
                die("the board sent %zu reply bytes by frame %zu of %zu, the golden model %zu (stuck for %u cycles)",
                    got, answered, nf, rend[answered], PAIR_BOARD_IDLE_LIMIT);
            done = answered + 1;
        } else if (answered + 1 == sent && sent < nf) {
            /* no reply to mark this frame taken in: wait until the board is quiet */
            if (ntpu_vsim_board_read(p->board, p->vsim_rx + got, 1, p->tail_limit) != 0)
                die("the board sent a reply to frame %zu of %zu, the golden model none", answered, nf);
            done = answered + 1;
        }
        answered++;
    }
    if (ntpu_vsim_board_read(p->board, p->vsim_rx + n, 1, p->tail_limit) != 0)
        die("the board sent more reply bytes than the golden model (%zu)", n);
    free(end);
    free(rend);
    p->tx_len = 0;
    return n;
}

/* pair_exchange with a second golden model in the RTL's place. */
static size_t pair_exchange_twin(pair *p)
{
    ntpu_ref_write(p->ref, p->tx, p->tx_len);
    ntpu_ref_write(p->twin, p->tx, p->tx_len);
    p->tx_len = 0;
    size_t n = ntpu_ref_pending(p->ref);
    pair_rx_room(p, n);
    if (ntpu_ref_read(p->ref, p->ref_rx, n) != n)
        die("golden model lost reply bytes");
    if (ntpu_ref_pending(p->twin) != n || ntpu_ref_read(p->twin, p->vsim_rx, n) != n)
        die("the twin golden model sent %zu reply bytes, the first %zu", ntpu_ref_pending(p->twin), n);
    return n;
}

/* Sends everything queued to both sides and collects both reply streams; the
 * RTL must produce exactly as many bytes as the golden model. Returns that count. */
static size_t pair_exchange(pair *p)
{
    if (p->board)
        return pair_exchange_board(p);
    if (p->twin)
        return pair_exchange_twin(p);
    ntpu_ref_write(p->ref, p->tx, p->tx_len);
    ntpu_vsim_write(p->vsim, p->tx, p->tx_len);
    p->tx_len = 0;
    size_t n = ntpu_ref_pending(p->ref);
    pair_rx_room(p, n);
    if (ntpu_ref_read(p->ref, p->ref_rx, n) != n)
        die("golden model lost reply bytes");
    size_t got = ntpu_vsim_read(p->vsim, p->vsim_rx, n, PAIR_IDLE_LIMIT);
    if (got != n)
        die("vsim sent %zu reply bytes, the golden model %zu", got, n);
    if (ntpu_vsim_read(p->vsim, p->vsim_rx + n, 1, 64) != 0)
        die("vsim sent more reply bytes than the golden model (%zu)", n);
    return n;
}

/* Walks a reply stream frame by frame; checks framing and CRC. Returns the
 * number of frames, filling (offset, length) of each payload. */
static inline size_t split_replies(const uint8_t *rx, size_t n, size_t *off, size_t *len, size_t max)
{
    size_t i = 0, k = 0;
    while (i < n) {
        if (k == max || n - i < NTPU_FRAME_OVERHEAD || rx[i] != NTPU_SOF_REPLY)
            die("malformed reply stream at byte %zu", i);
        size_t l = get16(rx + i + 2);
        if (n - i < NTPU_FRAME_OVERHEAD + l)
            die("truncated reply at byte %zu", i);
        if (crc32(0, rx + i + 1, (uInt)(3 + l)) != get32(rx + i + 4 + l))
            die("reply with bad CRC at byte %zu", i);
        off[k] = i + 4;
        len[k] = l;
        k++;
        i += NTPU_FRAME_OVERHEAD + l;
    }
    return k;
}

static uint64_t rng_state;
static uint64_t rnd(void) /* splitmix64: a seeded stream the test can replay */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline unsigned rnd_below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

#endif
