/* The host end of the link (docs/protocol.md): frames, sequence numbers, the
 * pipelined queue of commands whose replies are still to come, reply checking
 * and resynchronization.
 *
 * Commands are appended to a transmit buffer and written to the transport in
 * large batches; replies are read only when the caller needs data, when the
 * window of unanswered frames is full, or at a check point. Device errors are
 * remembered and reported at the next check point, so a long stream of
 * commands costs no round trips. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "internal.h"

const char *ntpu_op_name(unsigned op)
{
    static const char *const names[] = {"NOP",    "INFO",  "WRITE_MEM", "READ_MEM", "LOAD_W",
                                        "MATMUL", "FENCE", "STATUS",    "COUNTERS"};
    return op < sizeof names / sizeof names[0] ? names[op] : "unknown command";
}

uint32_t ntpu_frame_crc(const uint8_t *frame, size_t payload_len)
{
    return (uint32_t)crc32(0L, frame + 1, (uInt)(3 + payload_len));
}

size_t ntpu_frame_encode(uint8_t *out, uint8_t sof, uint8_t seq, const uint8_t *payload, size_t payload_len)
{
    out[0] = sof;
    out[1] = seq;
    ntpu_wr16(out + 2, (uint32_t)payload_len);
    if (payload && payload != out + NTPU_FRAME_HEADER)
        memmove(out + NTPU_FRAME_HEADER, payload, payload_len);
    ntpu_wr32(out + NTPU_FRAME_HEADER + payload_len, ntpu_frame_crc(out, payload_len));
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
    free(l->tx);
    free(l->rx);
    l->tx = l->rx = NULL;
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

/* The link is out of sync: keep the reason, try to resync, and say how that went. */
static ntpu_status link_failed(ntpu_link *l, ntpu_status st)
{
    char why[NTPU_ERRMSG_LEN];
    memcpy(why, l->err, sizeof why);
    why[sizeof why - 1] = 0;
    if (ntpu_link_resync(l) == NTPU_OK) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "%s (link resynchronized; recent commands may not have run)", why);
    } else {
        char again[NTPU_ERRMSG_LEN];
        memcpy(again, l->err, sizeof again);
        again[sizeof again - 1] = 0;
        l->broken = 1;
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "%s; resync failed too (%s): call ntpu_reset_link", why, again);
    }
    return st;
}

ntpu_status ntpu_link_flush(ntpu_link *l)
{
    if (l->tx_len == 0)
        return NTPU_OK;
    ntpu_status st = raw_send(l, l->tx, l->tx_len);
    l->tx_len = 0;
    return st == NTPU_OK ? NTPU_OK : link_failed(l, st);
}

/* Reads and checks the reply to the oldest unanswered frame. */
static ntpu_status read_reply(ntpu_link *l)
{
    ntpu_status st = ntpu_link_flush(l);
    if (st != NTPU_OK)
        return st;
    const ntpu_pending *p = &l->pend[l->pend_head];
    uint8_t *f = l->rx;
    st = raw_recv(l, f, NTPU_FRAME_HEADER);
    if (st != NTPU_OK)
        return link_failed(l, st);
    size_t len = ntpu_rd16(f + 2);
    if (f[0] != NTPU_SOF_REPLY) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply starts with 0x%02X, not 0x%02X", f[0], NTPU_SOF_REPLY);
        return link_failed(l, NTPU_ERR_IO);
    }
    if (f[1] != p->seq) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply has SEQ %u, expected %u (the reply to %s)", f[1], p->seq,
                  ntpu_op_name(p->op));
        return link_failed(l, NTPU_ERR_IO);
    }
    if (len == 0 || len > l->max_payload) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply LEN %zu outside 1..%u", len, l->max_payload);
        return link_failed(l, NTPU_ERR_IO);
    }
    st = raw_recv(l, f + NTPU_FRAME_HEADER, len + NTPU_FRAME_TRAILER);
    if (st != NTPU_OK)
        return link_failed(l, st);
    if (ntpu_frame_check(f, len + NTPU_FRAME_OVERHEAD, NTPU_SOF_REPLY, l->max_payload, l->err, NTPU_ERRMSG_LEN)) {
        return link_failed(l, NTPU_ERR_IO);
    }
    uint8_t status = f[NTPU_FRAME_HEADER];
    if (status == NTPU_DEV_OK) {
        if (len != 1 + (size_t)p->data_len) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "reply to %s has %zu data bytes, expected %u", ntpu_op_name(p->op),
                      len - 1, (unsigned)p->data_len);
            return link_failed(l, NTPU_ERR_IO);
        }
        if (p->dst)
            memcpy(p->dst, f + NTPU_FRAME_HEADER + 1, p->data_len);
    } else if (!l->dev_error) {
        l->dev_error = 1;
        l->dev_error_status = status;
        l->dev_error_op = p->op;
        l->dev_error_seq = p->seq;
    }
    l->pend_reply_bytes -= 1 + (size_t)p->data_len;
    l->pend_tx_bytes -= p->tx_bytes;
    l->pend_head = (l->pend_head + 1) % NTPU_LINK_WINDOW;
    l->pend_count--;
    l->answered_total++;
    l->stats.rx_frames++;
    return NTPU_OK;
}

uint8_t *ntpu_link_begin(ntpu_link *l, size_t len, uint32_t reply_len, ntpu_status *st)
{
    if (l->broken) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "the link is out of sync: call ntpu_reset_link");
        *st = NTPU_ERR_IO;
        return NULL;
    }
    if (len == 0 || len > l->max_payload || 1 + (size_t)reply_len > l->max_payload) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "command of %zu bytes (reply %u) does not fit a frame", len,
                  (unsigned)reply_len);
        *st = NTPU_ERR_INVALID_ARG;
        return NULL;
    }
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
    size_t need = l->tx_len + len + NTPU_FRAME_OVERHEAD;
    if (need > l->tx_cap) {
        size_t cap = l->tx_cap ? l->tx_cap : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *tx = realloc(l->tx, cap);
        if (!tx) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory for the transmit buffer");
            *st = NTPU_ERR_NO_MEMORY;
            return NULL;
        }
        l->tx = tx;
        l->tx_cap = cap;
    }
    l->open_frame = l->tx_len;
    l->open_len = len;
    l->open_reply = reply_len;
    *st = NTPU_OK;
    return l->tx + l->tx_len + NTPU_FRAME_HEADER;
}

uint64_t ntpu_link_commit(ntpu_link *l, void *dst)
{
    uint8_t *f = l->tx + l->open_frame;
    uint8_t seq = l->next_seq++;
    size_t flen = ntpu_frame_encode(f, NTPU_SOF_CMD, seq, f + NTPU_FRAME_HEADER, l->open_len);
    l->tx_len += flen;
    ntpu_pending *p = &l->pend[(l->pend_head + l->pend_count) % NTPU_LINK_WINDOW];
    p->tx_bytes = (uint32_t)flen;
    l->pend_tx_bytes += flen;
    p->seq = seq;
    p->op = f[NTPU_FRAME_HEADER];
    p->data_len = l->open_reply;
    p->dst = dst;
    l->pend_count++;
    l->pend_reply_bytes += 1 + (size_t)l->open_reply;
    l->open_frame = SIZE_MAX;
    l->stats.tx_frames++;
    return ++l->sent_total;
}

ntpu_status ntpu_link_command(ntpu_link *l, const uint8_t *payload, size_t len, uint32_t reply_len, void *dst,
                              uint64_t *ticket)
{
    ntpu_status st;
    uint8_t *p = ntpu_link_begin(l, len, reply_len, &st);
    if (!p)
        return st;
    memcpy(p, payload, len);
    uint64_t t = ntpu_link_commit(l, dst);
    if (ticket)
        *ticket = t;
    return NTPU_OK;
}

static ntpu_status take_dev_error(ntpu_link *l)
{
    if (!l->dev_error)
        return NTPU_OK;
    l->dev_error = 0;
    if (l->dev_error_status == NTPU_DEV_ERR_CRC) {
        /* Our frame was corrupted on the way: a link fault, though SEQ kept us in sync. */
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "the device received %s (SEQ %u) with a bad CRC and discarded it",
                  ntpu_op_name(l->dev_error_op), l->dev_error_seq);
        return NTPU_ERR_IO;
    }
    ntpu_errf(l->err, NTPU_ERRMSG_LEN, "device replied %s to %s (SEQ %u)",
              ntpu_dev_status_str(l->dev_error_status), ntpu_op_name(l->dev_error_op), l->dev_error_seq);
    return NTPU_ERR_DEVICE;
}

ntpu_status ntpu_link_wait(ntpu_link *l, uint64_t ticket)
{
    if (l->broken) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "the link is out of sync: call ntpu_reset_link");
        return NTPU_ERR_IO;
    }
    while (l->answered_total < ticket && l->pend_count > 0) {
        ntpu_status st = read_reply(l);
        if (st != NTPU_OK)
            return st;
    }
    return take_dev_error(l);
}

ntpu_status ntpu_link_sync(ntpu_link *l) { return ntpu_link_wait(l, l->sent_total); }

/* The whole reply to a NOP is known in advance, so resync looks for exactly
 * those bytes in the stream; anything before them is the tail of older replies
 * or garbage. */
ntpu_status ntpu_link_resync(ntpu_link *l)
{
    l->tx_len = 0; /* frames never sent are dropped with the rest */
    l->open_frame = SIZE_MAX;
    size_t nzero = (size_t)l->max_payload + NTPU_FRAME_OVERHEAD;
    uint8_t *zeros = calloc(nzero, 1);
    if (!zeros) {
        ntpu_errf(l->err, NTPU_ERRMSG_LEN, "out of memory while resynchronizing");
        l->broken = 1;
        return NTPU_ERR_NO_MEMORY;
    }
    uint8_t seq = l->next_seq++;
    uint8_t nop[NTPU_FRAME_OVERHEAD + 1], want[NTPU_FRAME_OVERHEAD + 1];
    uint8_t op = NTPU_OP_NOP, ok = NTPU_DEV_OK;
    ntpu_frame_encode(nop, NTPU_SOF_CMD, seq, &op, 1);
    ntpu_frame_encode(want, NTPU_SOF_REPLY, seq, &ok, 1);
    ntpu_status st = raw_send(l, zeros, nzero);
    free(zeros);
    if (st == NTPU_OK)
        st = raw_send(l, nop, sizeof nop);
    l->stats.tx_frames++;
    /* Everything unanswered is abandoned; a babbling device cannot keep us here forever. */
    size_t limit = (size_t)NTPU_LINK_WINDOW * (l->max_payload + NTPU_FRAME_OVERHEAD) + NTPU_LINK_REPLY_BUDGET +
                   l->max_payload + 2 * sizeof want;
    uint8_t win[sizeof want];
    size_t have = 0, scanned = 0;
    while (st == NTPU_OK) {
        uint8_t b;
        st = raw_recv(l, &b, 1);
        if (st != NTPU_OK)
            break;
        if (have == sizeof win) {
            memmove(win, win + 1, sizeof win - 1);
            have--;
        }
        win[have++] = b;
        if (have == sizeof want && memcmp(win, want, sizeof want) == 0)
            break;
        if (++scanned > limit) {
            ntpu_errf(l->err, NTPU_ERRMSG_LEN, "no reply to the resync NOP in %zu bytes", scanned);
            st = NTPU_ERR_IO;
        }
    }
    l->pend_head = l->pend_count = 0;
    l->pend_reply_bytes = 0;
    l->pend_tx_bytes = 0;
    l->answered_total = ++l->sent_total;
    l->dev_error = 0;
    if (st != NTPU_OK) {
        l->broken = 1;
        return st;
    }
    l->broken = 0;
    l->stats.rx_frames++;
    l->stats.resyncs++;
    return NTPU_OK;
}
