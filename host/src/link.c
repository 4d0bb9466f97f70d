/* SPDX-License-Identifier: Apache-2.0 */
/* The host end of the link (docs/protocol.md): frames, sequence numbers, the
 * pipelined queue of commands whose replies are still to come, reply checking,
 * and recovery by retransmission.
 *
 * Commands are appended to a transmit buffer and written to the transport in
 * large batches; replies are read only when the caller needs data, when the
 * window of unanswered frames is full, or at a check point. Device errors are
 * remembered and reported at the next check point, so a long stream of
 * commands costs no round trips.
 *
 * The device runs frames strictly in SEQ order. When a reply is bad or
 * missing, the link flushes the device's receiver, asks it with SYNC which
 * SEQ it expects next, and sends again, renumbered, every frame from there on
 * (plus the reads among the frames that ran, whose data was lost). Nothing
 * here knows which transport it talks to. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "ntpu_crc32.h"

const char *ntpu_op_name(unsigned op)
{
    static const char *const names[] = {"NOP",       "INFO",   "WRITE_MEM", "READ_MEM", "LOAD_W",
                                        "MATMUL",    "FENCE",  "STATUS",    "COUNTERS", "ACT",
                                        "RELU_GRAD", "COLSUM", "SYNC",      "OPTIM",    "RUN"};
    return op < sizeof names / sizeof names[0] ? names[op] : "unknown command";
}

uint32_t ntpu_frame_crc(const uint8_t *frame, size_t payload_len)
{
    return ntpu_crc32(0, frame + 1, 3 + payload_len);
}

size_t ntpu_frame_encode(uint8_t *out, uint8_t sof, uint8_t seq, const uint8_t *payload, size_t payload_len)
{
    out[0] = sof;
    out[1] = seq;
    ntpu_wr16(out + 2, (uint32_t)payload_len);
    if (payload && payload != out + NTPU_FRAME_HEADER)
        memmove(out + NTPU_FRAME_HEADER, payload, payload_len);
    /* The CRC of SEQ, LEN and the first payload byte from registers, not from
     * the bytes just stored (ntpu_crc32_word). */
    const uint8_t *p = out + NTPU_FRAME_HEADER;
    uint32_t head = seq | (uint32_t)payload_len << 8 | (payload_len ? (uint32_t)p[0] << 24 : 0);
    uint32_t crc = payload_len ? ntpu_crc32(ntpu_crc32_word(0, head), p + 1, payload_len - 1) : ntpu_frame_crc(out, 0);
    ntpu_wr32(out + NTPU_FRAME_HEADER + payload_len, crc);
    return payload_len + NTPU_FRAME_OVERHEAD;
}

int ntpu_frame_check(const uint8_t *frame, size_t n, uint8_t sof, unsigned max_payload, char *err, size_t errlen)
{
    if (n < NTPU_FRAME_OVERHEAD + 1) {
        ntpu_errf(err, errlen, "frame of %zu bytes is too short", n);
        return -1;
    }
    if (frame[0] != sof) {
        ntpu_errf(err, errlen, "frame starts with 0x%02X, expected 0x%02X", frame[0], sof);
        return -1;
    }
    size_t len = ntpu_rd16(frame + 2);
    if (len == 0 || len > max_payload) {
        ntpu_errf(err, errlen, "frame LEN %zu outside 1..%u", len, max_payload);
        return -1;
    }
    if (len + NTPU_FRAME_OVERHEAD != n) {
        ntpu_errf(err, errlen, "frame LEN %zu does not match its %zu bytes", len, n);
        return -1;
    }
    uint32_t want = ntpu_frame_crc(frame, len), got = ntpu_rd32(frame + NTPU_FRAME_HEADER + len);
    if (want != got) {
        ntpu_errf(err, errlen, "frame CRC 0x%08X, computed 0x%08X", (unsigned)got, (unsigned)want);
        return -1;
    }
    return 0;
}

ntpu_status ntpu_link_init(ntpu_link *l, ntpu_transport tp, unsigned max_payload, char *err)
{
    memset(l, 0, sizeof *l);
    l->tp = tp;
    l->err = err;
    if (tp.ops->max_payload_cap && max_payload > tp.ops->max_payload_cap)
        max_payload = tp.ops->max_payload_cap;
    l->max_payload = max_payload;
    l->timeout_ms = NTPU_LINK_TIMEOUT_MS;
    l->open_frame = SIZE_MAX;
    l->rx = malloc(max_payload + NTPU_FRAME_OVERHEAD);
    if (!l->rx) {
        ntpu_errf(err, NTPU_ERRMSG_LEN, "out of memory for the link buffers");
        return NTPU_ERR_NO_MEMORY;
    }
    return NTPU_OK;
}

void ntpu_link_free(ntpu_link *l)
{
    if (l->tp.ops)
        l->tp.ops->close(l->tp.ctx);
    l->tp.ops = NULL;
    for (unsigned i = 0; i < NTPU_LINK_WINDOW; i++) {
        free(l->pend[i].payload);
        l->pend[i].payload = NULL;
    }
    free(l->tx);
    free(l->rx);
    free(l->hold);
    free(l->rec);
    l->tx = l->rx = l->hold = l->rec = NULL;
}

static ntpu_status raw_send(ntpu_link *l, const uint8_t *buf, size_t n)
{
    ntpu_status st = l->tp.ops->send(l->tp.ctx, buf, n, l->err, NTPU_ERRMSG_LEN);
    if (st == NTPU_OK)
        l->stats.tx_bytes += n;
    return st;
}

static ntpu_status raw_recv(ntpu_link *l, uint8_t *buf, size_t n)
{
    size_t got = 0;
    ntpu_status st = l->tp.ops->recv(l->tp.ctx, buf, n, l->timeout_ms, &got, l->err, NTPU_ERRMSG_LEN);
    l->stats.rx_bytes += got;
    if (st == NTPU_ERR_TIMEOUT)
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "no reply from the device within %u ms (%zu of %zu bytes came)",
                  l->timeout_ms, got, n);
    return st;
}

/* Room for `extra` more bytes at the end of the transmit buffer. */
static ntpu_status tx_reserve(ntpu_link *l, size_t extra)
{
    size_t need = l->tx_len + extra;
    if (need <= l->tx_cap)
        return NTPU_OK;
    size_t cap = l->tx_cap ? l->tx_cap : 4096;
    while (cap < need)
        cap *= 2;
    uint8_t *tx = realloc(l->tx, cap);
    if (!tx) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory for the transmit buffer");
        return NTPU_ERR_NO_MEMORY;
    }
    l->tx = tx;
    l->tx_cap = cap;
    return NTPU_OK;
}

/* ------------------------------------------------------------------ recovery */

/* One SYNC exchange: max_payload + 8 zeros complete whatever frame a garbled
 * header left the device waiting for (it fails its CRC; the rest are dropped
 * while hunting for SOF), then SYNC. Its reply is known up to the one byte E,
 * so the reply stream is scanned for it and everything before it (older
 * replies, garbage) is discarded. *heard: some byte came back. */
static ntpu_status sync_once(ntpu_link *l, uint8_t *e, int *heard)
{
    *heard = 0;
    size_t nzero = (size_t)l->max_payload + NTPU_FRAME_OVERHEAD;
    uint8_t *zeros = calloc(nzero, 1);
    if (!zeros) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory while resynchronizing");
        return NTPU_ERR_NO_MEMORY;
    }
    uint8_t seq = l->sync_seq++, op = NTPU_OP_SYNC;
    uint8_t sync[NTPU_FRAME_OVERHEAD + NTPU_LEN_SYNC];
    ntpu_frame_encode(sync, NTPU_SOF_CMD, seq, &op, 1);
    ntpu_status st = raw_send(l, zeros, nzero);
    free(zeros);
    if (st == NTPU_OK)
        st = raw_send(l, sync, sizeof sync);
    if (st != NTPU_OK)
        return st;
    l->stats.tx_frames++;
    /* A babbling device cannot keep us here forever: at most every reply the
     * window can owe, twice over, precedes the SYNC's. */
    size_t limit = 2 * ((size_t)NTPU_LINK_WINDOW * (l->max_payload + NTPU_FRAME_OVERHEAD) + NTPU_LINK_REPLY_BUDGET) +
                   l->max_payload + 64;
    enum { REPLY = NTPU_FRAME_OVERHEAD + 2 };
    uint8_t w[REPLY];
    size_t have = 0;
    for (size_t scanned = 0;; scanned++) {
        uint8_t b;
        if ((st = raw_recv(l, &b, 1)) != NTPU_OK)
            return st;
        *heard = 1;
        if (have == REPLY) {
            memmove(w, w + 1, REPLY - 1);
            have--;
        }
        w[have++] = b;
        if (have == REPLY && w[0] == NTPU_SOF_REPLY && w[1] == seq && ntpu_rd16(w + 2) == 2 && w[4] == NTPU_DEV_OK &&
            ntpu_rd32(w + 6) == ntpu_frame_crc(w, 2)) {
            *e = w[5];
            l->stats.rx_frames++;
            return NTPU_OK;
        }
        if (scanned > limit) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "no reply to SYNC in %zu bytes", scanned);
            return NTPU_ERR_IO;
        }
    }
}

/* How a message ends once the link has given up: what brings it back, for API and CLI users alike. */
#define GAVE_UP "the link gave up (reopen the device, or call ntpu_reset_link)"

/* The link gives up until ntpu_reset_link; the error already in l->err says why,
 * and later calls repeat it rather than hide it behind a generic message. */
static void link_break(ntpu_link *l)
{
    l->broken = 1;
    memcpy(l->broken_why, l->err, sizeof l->broken_why);
    l->broken_why[sizeof l->broken_why - 1] = 0;
}

/* The error of a call on a broken link: the original cause. */
static void broken_error(ntpu_link *l)
{
    ntpu_errf(l->err, NTPU_ERRMSG_LEN, "the link is out of sync: %s", l->broken_why);
}

/* SYNC until the device answers; gives up as docs/protocol.md says. why is
 * the fault that started it, for the message (NULL: none, a resync). */
static ntpu_status learn_expected_seq(ntpu_link *l, const char *why, uint8_t *e)
{
    unsigned silent = 0, failed = 0;
    ntpu_status st = NTPU_ERR_IO;
    for (;;) {
        if (silent >= NTPU_LINK_MAX_SILENT || failed >= NTPU_LINK_MAX_SYNC_FAILS) {
            char last[NTPU_ERRMSG_LEN];
            memcpy(last, l->err, sizeof last);
            last[sizeof last - 1] = 0;
            if (why && strcmp(why, last) == 0) /* e.g. the board unplugged: one reason, said once */
                ntpu_errf(l->err, NTPU_ERRMSG_LEN, "%s; no answer to SYNC either: " GAVE_UP, why);
            else if (why)
                ntpu_errf(l->err, NTPU_ERRMSG_LEN, "%s; no answer to SYNC either (%s): " GAVE_UP, why, last);
            else
                ntpu_errf(l->err, NTPU_ERRMSG_LEN, "no answer to SYNC (%s)", last); /* also at open: no handle yet */
            link_break(l);
            return st;
        }
        if (l->no_progress >= NTPU_LINK_MAX_RECOVERIES) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "%s; no frame got through in %u recoveries: " GAVE_UP,
                      why ? why : "resynchronizing", l->no_progress);
            link_break(l);
            return NTPU_ERR_IO;
        }
        l->no_progress++;
        int heard;
        st = sync_once(l, e, &heard);
        if (st == NTPU_OK)
            return NTPU_OK;
        if (st == NTPU_ERR_NO_MEMORY) {
            link_break(l);
            return st;
        }
        silent = heard ? 0 : silent + 1;
        failed++;
    }
}

static void slot_forget(ntpu_link *l, const ntpu_pending *p)
{
    l->pend_reply_bytes -= 1 + (size_t)p->data_len;
    l->pend_tx_bytes -= p->tx_bytes;
    l->pend_reads -= p->rd_hi > p->rd_lo;
}

/* The device expects SEQ e. Frames before it ran: those whose reply carries
 * data go again (a read is idempotent, see the hazard rule), the others are
 * done. Frames from e on did not run: they go again, renumbered from e, in
 * their order, after the reads. */
static ntpu_status requeue(ntpu_link *l, uint8_t e)
{
    unsigned count = l->pend_count, head = l->pend_head;
    uint8_t oldest = count ? l->pend[head].seq : l->next_seq;
    unsigned ran = (uint8_t)(e - oldest);
    if (ran > count) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN,
                  "the device expects SEQ %u, outside the %u frames in flight from SEQ %u (was it reset?): " GAVE_UP, e,
                  count, oldest);
        link_break(l);
        return NTPU_ERR_IO;
    }
    /* The new ring, from slot 0: the frames to send, then every other slot
     * (their payload buffers are reused). */
    ntpu_pending ring[NTPU_LINK_WINDOW];
    uint8_t keep[NTPU_LINK_WINDOW];
    unsigned kept = 0, n;
    for (unsigned i = 0; i < count; i++) {
        ntpu_pending *p = &l->pend[(head + i) % NTPU_LINK_WINDOW];
        /* A read runs again harmlessly; a RUN that ran must not (its reply, and
         * any error in it, is lost, as for every other command that ran). */
        keep[i] = !(i < ran && (p->data_len == 0 || p->op == NTPU_OP_RUN || (i == 0 && l->len_err_pending)));
        if (keep[i] && !p->kept) {
            /* Only if a transport that runs every frame as it is sent did not. */
            ntpu_errf(l->err, NTPU_ERRMSG_LEN,
                      "the device expects SEQ %u, yet %s (SEQ %u) was sent to it and did not run: " GAVE_UP, e,
                      ntpu_op_name(p->op), p->seq);
            link_break(l);
            return NTPU_ERR_IO;
        }
        if (keep[i])
            ring[kept++] = *p;
    }
    n = kept;
    for (unsigned i = 0; i < count; i++) {
        ntpu_pending *p = &l->pend[(head + i) % NTPU_LINK_WINDOW];
        if (keep[i])
            continue;
        if (i == 0 && l->len_err_pending && !l->dev_error) {
            /* It ran, so its ERR_LENGTH was the device's verdict on the command. */
            l->dev_error = 1;
            l->dev_error_status = NTPU_DEV_ERR_LENGTH;
            l->dev_error_op = p->op;
            l->dev_error_seq = p->seq;
        }
        slot_forget(l, p);
        l->answered_total++;
        l->no_progress = 0;
        ring[n++] = *p;
    }
    for (unsigned i = count; i < NTPU_LINK_WINDOW; i++)
        ring[n++] = l->pend[(head + i) % NTPU_LINK_WINDOW];
    memcpy(l->pend, ring, sizeof ring);
    l->len_err_pending = 0;
    l->pend_head = 0;
    l->pend_count = kept;

    l->tx_len = 0;
    size_t bytes = 0;
    for (unsigned i = 0; i < kept; i++)
        bytes += l->pend[i].len + NTPU_FRAME_OVERHEAD;
    ntpu_status st = tx_reserve(l, bytes);
    if (st != NTPU_OK) {
        link_break(l);
        return st;
    }
    for (unsigned i = 0; i < kept; i++) {
        ntpu_pending *p = &l->pend[i];
        p->seq = (uint8_t)(e + i);
        l->tx_len += ntpu_frame_encode(l->tx + l->tx_len, NTPU_SOF_CMD, p->seq, p->payload, p->len);
    }
    l->next_seq = (uint8_t)(e + kept);
    l->stats.retransmits += kept;
    l->stats.tx_frames += kept;
    return NTPU_OK;
}

/* After a fault (reason in l->err): SYNC, then send again what did not get
 * through. NTPU_OK when the frames are on their way again. */
static ntpu_status recover(ntpu_link *l)
{
    char why[NTPU_ERRMSG_LEN];
    memcpy(why, l->err, sizeof why);
    why[sizeof why - 1] = 0;
    l->stats.recoveries++;
    uint8_t e;
    ntpu_status st = learn_expected_seq(l, why, &e);
    if (st == NTPU_OK)
        st = requeue(l, e);
    if (st == NTPU_OK && l->tx_len) {
        st = raw_send(l, l->tx, l->tx_len);
        l->tx_len = 0;
        if (st != NTPU_OK)
            link_break(l);
    }
    return st;
}

ntpu_status ntpu_link_flush(ntpu_link *l)
{
    if (l->tx_len == 0)
        return NTPU_OK;
    ntpu_status st = raw_send(l, l->tx, l->tx_len);
    l->tx_len = 0;
    return st == NTPU_OK ? NTPU_OK : recover(l);
}

/* The header of reply f (SOF, SEQ, LEN) against p, the oldest unanswered frame. */
static ntpu_status reply_header_ok(ntpu_link *l, const ntpu_pending *p, const uint8_t *f)
{
    size_t len = ntpu_rd16(f + 2);
    if (f[0] != NTPU_SOF_REPLY) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply starts with 0x%02X, not 0x%02X", f[0], NTPU_SOF_REPLY);
        return NTPU_ERR_IO;
    }
    if (f[1] != p->seq) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply has SEQ %u, expected %u (the reply to %s)", f[1], p->seq,
                  ntpu_op_name(p->op));
        return NTPU_ERR_IO;
    }
    if (len == 0 || len > l->max_payload) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply LEN %zu outside 1..%u", len, l->max_payload);
        return NTPU_ERR_IO;
    }
    return NTPU_OK;
}

/* A device error in reply f (payload of len bytes) to p: kept for the next check point. */
static void note_dev_error(ntpu_link *l, const ntpu_pending *p, const uint8_t *f, size_t len)
{
    if (l->dev_error)
        return;
    l->dev_error = 1;
    l->dev_error_status = f[NTPU_FRAME_HEADER];
    l->dev_error_op = p->op;
    l->dev_error_seq = p->seq;
    /* A program that started says how far it got. */
    l->dev_error_done =
        p->op == NTPU_OP_RUN && len == 1 + NTPU_RUN_REPLY_BYTES ? ntpu_rd16(f + NTPU_FRAME_HEADER + 1) : UINT16_MAX;
}

/* Whether reply f (len payload bytes) is the data p asked for, with a CRC
 * that holds; the data copied to p->dst while the CRC runs over it (one pass
 * over the bytes, not two). A reply that fails leaves dst written, as a
 * failed read may: the read goes again, or the call fails. */
static int data_reply_ok(ntpu_link *l, const ntpu_pending *p, const uint8_t *f, size_t len)
{
    uint32_t crc = ntpu_crc32(0, f + 1, NTPU_FRAME_HEADER); /* SEQ, LEN, status */
    crc = ntpu_crc32_copy(crc, p->dst, f + NTPU_FRAME_HEADER + 1, len - 1);
    uint32_t got = ntpu_rd32(f + NTPU_FRAME_HEADER + len);
    if (crc != got)
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "frame CRC 0x%08X, computed 0x%08X", (unsigned)got, (unsigned)crc);
    return crc == got;
}

/* The whole reply f (its header checked, len payload bytes) to p: CRC, status,
 * data to p->dst. NTPU_OK: good, and the frame is answered. */
static ntpu_status reply_body(ntpu_link *l, const ntpu_pending *p, const uint8_t *f, size_t len)
{
    const int data = p->dst && f[NTPU_FRAME_HEADER] == NTPU_DEV_OK && len == 1 + (size_t)p->data_len && len > 1;
    if (data ? !data_reply_ok(l, p, f, len)
             : ntpu_frame_check(f, len + NTPU_FRAME_OVERHEAD, NTPU_SOF_REPLY, l->max_payload, l->err, NTPU_ERRMSG_LEN))
        return NTPU_ERR_IO;
    uint8_t status = f[NTPU_FRAME_HEADER];
    switch (status) {
    case NTPU_DEV_OK:
        if (p->op == NTPU_OP_INFO && p->data_len == NTPU_ID_BYTES && len == 1 + (size_t)NTPU_ID_BYTES_1_3) {
            /* A device before 1.4 sends the shorter ID block: its missing fields read as 0. */
            if (p->dst) {
                memcpy(p->dst, f + NTPU_FRAME_HEADER + 1, NTPU_ID_BYTES_1_3);
                memset((uint8_t *)p->dst + NTPU_ID_BYTES_1_3, 0, NTPU_ID_BYTES - NTPU_ID_BYTES_1_3);
            }
            break;
        }
        if (len != 1 + (size_t)p->data_len) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply to %s has %zu data bytes, expected %u", ntpu_op_name(p->op),
                      len - 1, (unsigned)p->data_len);
            return NTPU_ERR_IO;
        }
        break; /* its data is in p->dst already (data_reply_ok) */
    case NTPU_DEV_ERR_CRC:
    case NTPU_DEV_ERR_SEQ:
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "the device answered %s (SEQ %u) with %s", ntpu_op_name(p->op), p->seq,
                  ntpu_dev_status_str(status));
        return NTPU_ERR_IO;
    case NTPU_DEV_ERR_LENGTH:
        /* Also the answer to a header whose LEN was garbled on the way, which
         * did not run: SYNC tells which. */
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "the device answered %s (SEQ %u) with ERR_LENGTH", ntpu_op_name(p->op),
                  p->seq);
        l->len_err_pending = 1;
        return NTPU_ERR_IO;
    default: note_dev_error(l, p, f, len);
    }
    slot_forget(l, p);
    l->pend_head = (l->pend_head + 1) % NTPU_LINK_WINDOW;
    l->pend_count--;
    l->answered_total++;
    l->stats.rx_frames++;
    l->no_progress = 0;
    return NTPU_OK;
}

/* take_reply on a reply the transport holds whole at f: checked where it lies,
 * then as many bytes taken as reading it would have taken (the header alone
 * when the header is bad). */
static ntpu_status take_reply_in_place(ntpu_link *l, const ntpu_pending *p, const uint8_t *f)
{
    size_t len = ntpu_rd16(f + 2);
    ntpu_status st = reply_header_ok(l, p, f);
    size_t took = st == NTPU_OK ? len + NTPU_FRAME_OVERHEAD : NTPU_FRAME_HEADER;
    if (st == NTPU_OK)
        st = reply_body(l, p, f, len);
    l->tp.ops->consume(l->tp.ctx, took);
    l->stats.rx_bytes += took;
    return st;
}

/* Reads and checks the reply to the oldest unanswered frame. NTPU_OK: it was
 * good and is consumed; otherwise a link fault, reason in l->err. */
static ntpu_status take_reply(ntpu_link *l)
{
    const ntpu_pending *p = &l->pend[l->pend_head];
    size_t have = 0;
    const uint8_t *view = l->tp.ops->peek ? l->tp.ops->peek(l->tp.ctx, &have) : NULL;
    if (view && have >= NTPU_FRAME_OVERHEAD && have - NTPU_FRAME_OVERHEAD >= ntpu_rd16(view + 2))
        return take_reply_in_place(l, p, view);
    uint8_t *f = l->rx;
    ntpu_status st = raw_recv(l, f, NTPU_FRAME_HEADER);
    if (st != NTPU_OK || (st = reply_header_ok(l, p, f)) != NTPU_OK)
        return st;
    size_t len = ntpu_rd16(f + 2);
    if ((st = raw_recv(l, f + NTPU_FRAME_HEADER, len + NTPU_FRAME_TRAILER)) != NTPU_OK)
        return st;
    return reply_body(l, p, f, len);
}

/* Reads the reply to the oldest unanswered frame, or recovers from a fault
 * (after which the caller looks again at what is unanswered). */
static ntpu_status read_reply(ntpu_link *l)
{
    ntpu_status st = ntpu_link_flush(l);
    if (st != NTPU_OK)
        return st;
    if (l->pend_count == 0)
        return NTPU_OK;
    l->len_err_pending = 0;
    return take_reply(l) == NTPU_OK ? NTPU_OK : recover(l);
}

static uint8_t *record_begin(ntpu_link *l, size_t len, uint32_t reply_len, ntpu_status *st);

uint8_t *ntpu_link_begin(ntpu_link *l, size_t len, uint32_t reply_len, ntpu_status *st)
{
    if (l->broken) {
        broken_error(l);
        *st = NTPU_ERR_IO;
        return NULL;
    }
    if (len == 0 || len > l->max_payload || 1 + (size_t)reply_len > l->max_payload) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "command of %zu bytes (reply %u) does not fit a frame", len,
                  (unsigned)reply_len);
        *st = NTPU_ERR_INVALID_ARG;
        return NULL;
    }
    if (l->rec_on)
        return record_begin(l, len, reply_len, st);
    /* Without flow control, a frame may go out only once the device has
     * provably drained enough older ones; alone, any frame may go. */
    size_t tx_limit = l->tp.ops->max_unanswered_tx_bytes;
    while (l->pend_count >= NTPU_LINK_WINDOW ||
           (l->pend_count > 0 && l->pend_reply_bytes + 1 + reply_len > NTPU_LINK_REPLY_BUDGET) ||
           (l->pend_count > 0 && tx_limit && l->pend_tx_bytes + len + NTPU_FRAME_OVERHEAD > tx_limit)) {
        if ((*st = read_reply(l)) != NTPU_OK)
            return NULL;
    }
    if (l->tx_len >= NTPU_LINK_TX_FLUSH && (*st = ntpu_link_flush(l)) != NTPU_OK)
        return NULL;
    if ((*st = tx_reserve(l, len + NTPU_FRAME_OVERHEAD)) != NTPU_OK)
        return NULL;
    l->open_frame = l->tx_len;
    l->open_len = len;
    l->open_reply = reply_len;
    return l->tx + l->tx_len + NTPU_FRAME_HEADER;
}

/* ------------------------------------------------------------------ programs */

void ntpu_link_record_begin(ntpu_link *l)
{
    l->rec_on = 1;
    l->rec_len = l->rec_cmds = 0;
}

void ntpu_link_record_end(ntpu_link *l, uint8_t **bytes, size_t *len, size_t *cmds)
{
    l->rec_on = 0;
    *bytes = l->rec_len ? l->rec : NULL;
    *len = l->rec_len;
    *cmds = l->rec_cmds;
    if (l->rec_len) {
        l->rec = NULL;
        l->rec_cap = 0;
    }
    l->rec_len = l->rec_cmds = 0;
}

/* ntpu_link_begin while recording: room for the LEN prefix and the payload. */
static uint8_t *record_begin(ntpu_link *l, size_t len, uint32_t reply_len, ntpu_status *st)
{
    if (reply_len > 0) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN,
                  "a command that answers with data (%u bytes) cannot be recorded into a program", (unsigned)reply_len);
        *st = NTPU_ERR_INVALID_ARG;
        return NULL;
    }
    size_t need = l->rec_len + NTPU_PROG_LEN_BYTES + len;
    if (need > l->rec_cap) {
        size_t cap = l->rec_cap ? l->rec_cap : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *b = realloc(l->rec, cap);
        if (!b) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory for the program being recorded");
            *st = NTPU_ERR_NO_MEMORY;
            return NULL;
        }
        l->rec = b;
        l->rec_cap = cap;
    }
    l->open_frame = l->rec_len;
    l->open_len = len;
    l->open_reply = 0;
    return l->rec + l->rec_len + NTPU_PROG_LEN_BYTES;
}

/* ntpu_link_commit while recording. A program may not hold what the device
 * refuses in one (docs/isa.md, RUN): commands with reply data never get here;
 * a WRITE_MEM to PM is caught now. */
static ntpu_status record_commit(ntpu_link *l, uint64_t *ticket)
{
    const uint8_t *p = l->rec + l->open_frame + NTPU_PROG_LEN_BYTES;
    size_t len = l->open_len;
    l->open_frame = SIZE_MAX;
    if (p[0] == NTPU_OP_WRITE_MEM && len >= 2 && p[1] == NTPU_MEM_PM) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "a program cannot write program memory");
        return NTPU_ERR_INVALID_ARG;
    }
    ntpu_wr16(l->rec + l->rec_len, (uint32_t)len);
    l->rec_len += NTPU_PROG_LEN_BYTES + len;
    l->rec_cmds++;
    if (ticket)
        *ticket = l->sent_total;
    return NTPU_OK;
}

/* The rows a command writes, per docs/isa.md: 0 if it writes no memory. */
static int written_rows(const uint8_t *p, size_t len, unsigned *mem, uint32_t *lo, uint32_t *hi)
{
    if (len < 8 && !(p[0] == NTPU_OP_WRITE_MEM && len >= NTPU_LEN_MEM_HDR))
        return 0;
    uint32_t a = ntpu_rd16(p + 2), b = ntpu_rd16(p + 4), c = len >= 8 ? ntpu_rd16(p + 6) : 0;
    unsigned out = p[1] & NTPU_OUT_MASK;
    unsigned out_mem = out == NTPU_OUT_WB ? NTPU_MEM_WB : out == NTPU_OUT_ACC ? NTPU_MEM_ACC : NTPU_MEM_UB;
    switch (p[0]) {
    case NTPU_OP_WRITE_MEM:
        *mem = p[1];
        *lo = a;
        *hi = a + b;
        return 1;
    case NTPU_OP_MATMUL:
        *mem = NTPU_MEM_ACC;
        *lo = b;
        *hi = b + c;
        return 1;
    case NTPU_OP_ACT:
    case NTPU_OP_RELU_GRAD:
        *mem = out_mem;
        *lo = b;
        *hi = b + c;
        return 1;
    case NTPU_OP_COLSUM:
        *mem = NTPU_MEM_ACC;
        *lo = b;
        *hi = b + 1;
        return 1;
    }
    return 0;
}

/* Would a frame writing these rows change what an unanswered READ_MEM reads? */
static int read_hazard(const ntpu_link *l, unsigned mem, uint32_t lo, uint32_t hi)
{
    for (unsigned i = 0; i < l->pend_count; i++) {
        const ntpu_pending *p = &l->pend[(l->pend_head + i) % NTPU_LINK_WINDOW];
        if (p->rd_hi > p->rd_lo && p->rd_mem == mem && lo < p->rd_hi && p->rd_lo < hi)
            return 1;
    }
    return 0;
}

/* Lossy links only: a lost READ_MEM reply is replaced by reading again, which
 * is right only if nothing that ran after the read wrote its rows. So such a
 * write waits until the read is answered. The open payload is parked in
 * l->hold meanwhile: recovery rewrites the transmit buffer. */
static ntpu_status wait_read_hazard(ntpu_link *l)
{
    const uint8_t *p = l->tx + l->open_frame + NTPU_FRAME_HEADER;
    unsigned mem;
    uint32_t lo, hi;
    /* A RUN may write anything: it waits for every read. */
    int run = p[0] == NTPU_OP_RUN;
    if (run) {
        mem = NTPU_MEM_UB;
        lo = hi = 0;
    } else if (!written_rows(p, l->open_len, &mem, &lo, &hi) || lo >= hi || !read_hazard(l, mem, lo, hi))
        return NTPU_OK;
    size_t len = l->open_len;
    uint32_t reply = l->open_reply;
    if (l->hold_cap < len) {
        uint8_t *h = realloc(l->hold, len);
        if (!h) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory for the link buffers");
            return NTPU_ERR_NO_MEMORY;
        }
        l->hold = h;
        l->hold_cap = len;
    }
    memcpy(l->hold, p, len);
    l->open_frame = SIZE_MAX;
    ntpu_status st = NTPU_OK;
    while (st == NTPU_OK && (run ? l->pend_reads > 0 : read_hazard(l, mem, lo, hi)))
        st = read_reply(l);
    if (st == NTPU_OK)
        st = tx_reserve(l, len + NTPU_FRAME_OVERHEAD);
    if (st != NTPU_OK)
        return st;
    memcpy(l->tx + l->tx_len + NTPU_FRAME_HEADER, l->hold, len);
    l->open_frame = l->tx_len;
    l->open_len = len;
    l->open_reply = reply;
    return NTPU_OK;
}

ntpu_status ntpu_link_commit(ntpu_link *l, void *dst, uint64_t *ticket)
{
    ntpu_status st;
    if (l->rec_on)
        return record_commit(l, ticket);
    if (l->tp.ops->lossy && l->pend_reads > 0 && (st = wait_read_hazard(l)) != NTPU_OK)
        return st;
    ntpu_pending *p = &l->pend[(l->pend_head + l->pend_count) % NTPU_LINK_WINDOW];
    /* The copy a recovery sends again: on a transport that runs each frame as
     * it is sent, only a read (its reply data lost with a fault) can go again. */
    int keep = !l->tp.ops->runs_on_send || l->open_reply > 0;
    if (keep && p->cap < l->open_len) {
        uint8_t *b = realloc(p->payload, l->open_len);
        if (!b) {
            l->open_frame = SIZE_MAX;
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory for the link buffers");
            return NTPU_ERR_NO_MEMORY;
        }
        p->payload = b;
        p->cap = l->open_len;
    }
    uint8_t *f = l->tx + l->open_frame;
    const uint8_t *payload = f + NTPU_FRAME_HEADER;
    if (keep)
        memcpy(p->payload, payload, l->open_len);
    p->kept = keep;
    p->len = l->open_len;
    uint8_t seq = l->next_seq++;
    size_t flen = ntpu_frame_encode(f, NTPU_SOF_CMD, seq, payload, l->open_len);
    l->tx_len += flen;
    p->tx_bytes = (uint32_t)flen;
    l->pend_tx_bytes += flen;
    p->seq = seq;
    p->op = payload[0];
    p->data_len = l->open_reply;
    p->dst = dst;
    p->rd_lo = p->rd_hi = 0;
    if (p->op == NTPU_OP_READ_MEM && p->len == NTPU_LEN_MEM_HDR) {
        p->rd_mem = payload[1];
        p->rd_lo = ntpu_rd16(payload + 2);
        p->rd_hi = p->rd_lo + ntpu_rd16(payload + 4);
        l->pend_reads += p->rd_hi > p->rd_lo;
    }
    p->ticket = ++l->sent_total;
    l->pend_count++;
    l->pend_reply_bytes += 1 + (size_t)l->open_reply;
    l->open_frame = SIZE_MAX;
    l->stats.tx_frames++;
    if (ticket)
        *ticket = p->ticket;
    return NTPU_OK;
}

ntpu_status ntpu_link_command(ntpu_link *l, const uint8_t *payload, size_t len, uint32_t reply_len, void *dst,
                              uint64_t *ticket)
{
    ntpu_status st;
    uint8_t *p = ntpu_link_begin(l, len, reply_len, &st);
    if (!p)
        return st;
    memcpy(p, payload, len);
    return ntpu_link_commit(l, dst, ticket);
}

static ntpu_status take_dev_error(ntpu_link *l)
{
    if (!l->dev_error)
        return NTPU_OK;
    l->dev_error = 0;
    if (l->dev_error_op == NTPU_OP_RUN && l->dev_error_done != UINT16_MAX)
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "device replied %s to RUN (SEQ %u), at command %u of the program",
                  ntpu_dev_status_str(l->dev_error_status), l->dev_error_seq, (unsigned)l->dev_error_done);
    else
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "device replied %s to %s (SEQ %u)", ntpu_dev_status_str(l->dev_error_status),
                  ntpu_op_name(l->dev_error_op), l->dev_error_seq);
    return NTPU_ERR_DEVICE;
}

ntpu_status ntpu_link_wait(ntpu_link *l, uint64_t ticket)
{
    if (l->rec_on) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN,
                  "recording a program: nothing runs until it does, so there is nothing to wait for");
        return NTPU_ERR_INVALID_ARG;
    }
    if (l->broken) {
        broken_error(l);
        return NTPU_ERR_IO;
    }
    while (l->pend_count > 0 && l->pend[l->pend_head].ticket <= ticket) {
        ntpu_status st = read_reply(l);
        if (st != NTPU_OK)
            return st;
    }
    return take_dev_error(l);
}

ntpu_status ntpu_link_sync(ntpu_link *l)
{
    return ntpu_link_wait(l, l->sent_total);
}

ntpu_status ntpu_link_resync(ntpu_link *l)
{
    l->tx_len = 0; /* frames never sent are dropped with the rest */
    l->open_frame = SIZE_MAX;
    l->pend_head = l->pend_count = 0;
    l->pend_reply_bytes = 0;
    l->pend_tx_bytes = 0;
    l->pend_reads = 0;
    l->answered_total = l->sent_total;
    l->dev_error = 0;
    l->len_err_pending = 0;
    l->broken = 0;
    l->no_progress = 0;
    uint8_t e;
    ntpu_status st = learn_expected_seq(l, NULL, &e);
    if (st != NTPU_OK)
        return st;
    l->next_seq = e;
    l->no_progress = 0;
    l->stats.resyncs++;
    return NTPU_OK;
}
