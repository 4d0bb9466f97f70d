/* SPDX-License-Identifier: Apache-2.0 */
/* The link layer (host/src/link.c): frame encoding and checking, CRC against a
 * bit-by-bit reference, sequence numbers, pipelining, and recovery by
 * retransmission from every kind of link fault, over the golden model behind a
 * transport that can corrupt, drop and inject bytes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ntpu_ref.h"

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320) one bit at a time: independent of zlib. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

Test(frame, crc_matches_the_standard)
{
    /* The standard check value: CRC-32 of "123456789" is 0xCBF43926. */
    cr_assert_eq(crc_bitwise((const uint8_t *)"123456789", 9), 0xCBF43926u);
    uint8_t f[64];
    const uint8_t payload[5] = {NTPU_OP_READ_MEM, 2, 0x34, 0x12, 3};
    size_t n = ntpu_frame_encode(f, NTPU_SOF_CMD, 200, payload, 5);
    cr_assert_eq(n, 5 + NTPU_FRAME_OVERHEAD);
    cr_assert_eq(f[0], 0xA5);
    cr_assert_eq(f[1], 200);
    cr_assert_eq(f[2], 5);
    cr_assert_eq(f[3], 0);
    cr_assert_arr_eq(f + 4, payload, 5);
    uint32_t crc = crc_bitwise(f + 1, 3 + 5);
    cr_assert_eq(ntpu_rd32(f + 9), crc);
    cr_assert_eq(ntpu_frame_crc(f, 5), crc);
}

Test(frame, check_accepts_good_and_rejects_every_single_bit_flip)
{
    uint8_t f[64], g[64];
    const uint8_t payload[7] = {NTPU_DEV_OK, 1, 2, 3, 4, 5, 6};
    size_t n = ntpu_frame_encode(f, NTPU_SOF_REPLY, 7, payload, sizeof payload);
    char err[128];
    cr_assert_eq(ntpu_frame_check(f, n, NTPU_SOF_REPLY, 4112, err, sizeof err), 0, "%s", err);
    for (size_t bit = 0; bit < n * 8; bit++) {
        memcpy(g, f, n);
        g[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        cr_assert_eq(ntpu_frame_check(g, n, NTPU_SOF_REPLY, 4112, err, sizeof err), -1, "flip of bit %zu passed", bit);
    }
    cr_assert_eq(ntpu_frame_check(f, n, NTPU_SOF_CMD, 4112, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "0x5A"), "%s", err);
    cr_assert_eq(ntpu_frame_check(f, n, NTPU_SOF_REPLY, 6, err, sizeof err), -1); /* LEN 7 > max 6 */
    cr_assert_eq(ntpu_frame_check(f, n - 1, NTPU_SOF_REPLY, 4112, err, sizeof err), -1);
}

Test(frame, encode_in_place)
{
    uint8_t f[32];
    f[4] = NTPU_OP_NOP;
    size_t n = ntpu_frame_encode(f, NTPU_SOF_CMD, 3, f + 4, 1);
    cr_assert_eq(n, 9);
    cr_assert_eq(f[4], NTPU_OP_NOP);
    cr_assert_eq(ntpu_rd32(f + 5), crc_bitwise(f + 1, 4));
}

/* ------------------------------------------------------------------ a faulty wire */

typedef struct wire {
    ntpu_ref *ref;
    uint8_t sent[1 << 16]; /* the first bytes the host sent, for inspection */
    size_t nsent;
    size_t recv_calls;
    long flip_rx_at;   /* flip a bit of the n-th reply byte (counting from 0), -1 none */
    long flip_tx_at;   /* flip a bit of the n-th byte sent, -1 none */
    int swallow;       /* drop every reply byte */
    int mangle_frames; /* corrupt byte 20 of every send of 30+ bytes that starts with SOF */
    size_t rx_count, tx_count;
    /* a device other than the golden model: these reply bytes instead of its own */
    uint8_t canned[64];
    size_t ncanned, canned_at;
    size_t peek_cap; /* with peek_wire_ops: at most this many reply bytes are seen in place */
} wire;

static ntpu_status wire_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    wire *w = ctx;
    int mangle = w->mangle_frames && n >= 30 && buf[0] == NTPU_SOF_CMD;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = buf[i];
        if ((long)w->tx_count == w->flip_tx_at || (mangle && i == 20))
            b ^= 0x10;
        w->tx_count++;
        if (w->nsent < sizeof w->sent)
            w->sent[w->nsent++] = b;
        ntpu_ref_write(w->ref, &b, 1);
    }
    return NTPU_OK;
}

static ntpu_status wire_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                             size_t errlen)
{
    (void)timeout_ms;
    (void)err;
    (void)errlen;
    wire *w = ctx;
    w->recv_calls++;
    if (w->swallow) {
        uint8_t junk[256];
        while (ntpu_ref_read(w->ref, junk, sizeof junk))
            ;
        *got = 0;
        return NTPU_ERR_TIMEOUT;
    }
    if (w->ncanned) {
        uint8_t junk[256];
        while (ntpu_ref_read(w->ref, junk, sizeof junk))
            ;
        *got = w->ncanned - w->canned_at < n ? w->ncanned - w->canned_at : n;
        memcpy(buf, w->canned + w->canned_at, *got);
        w->canned_at += *got;
        return *got == n ? NTPU_OK : NTPU_ERR_TIMEOUT;
    }
    *got = ntpu_ref_read(w->ref, buf, n);
    for (size_t i = 0; i < *got; i++, w->rx_count++)
        if ((long)w->rx_count == w->flip_rx_at)
            buf[i] ^= 0x01;
    return *got == n ? NTPU_OK : NTPU_ERR_TIMEOUT;
}

static void wire_close(void *ctx)
{
    (void)ctx; /* the test owns the wire */
}

/* The reply bytes in place, as the ref transport shows them, but at most peek_cap: a reply
 * longer than that is not whole in view and must be read through recv. */
static const uint8_t *wire_peek(void *ctx, size_t *n)
{
    wire *w = ctx;
    const uint8_t *p = ntpu_ref_peek(w->ref, n);
    if (*n > w->peek_cap)
        *n = w->peek_cap;
    return p;
}

static void wire_consume(void *ctx, size_t n)
{
    wire *w = ctx;
    ntpu_ref_consume(w->ref, n);
}

static const ntpu_transport_ops wire_ops = {
    .name = "wire", .send = wire_send, .recv = wire_recv, .close = wire_close, .starts_in_sync = 1};
static const ntpu_transport_ops lossy_wire_ops = {
    .name = "lossy wire", .send = wire_send, .recv = wire_recv, .close = wire_close, .starts_in_sync = 1, .lossy = 1};

static const ntpu_transport_ops peek_wire_ops = {.name = "peek wire",
                                                 .send = wire_send,
                                                 .recv = wire_recv,
                                                 .close = wire_close,
                                                 .starts_in_sync = 1,
                                                 .runs_on_send = 1,
                                                 .peek = wire_peek,
                                                 .consume = wire_consume};

static wire *W;
static ntpu_link L;
static char errbuf[NTPU_ERRMSG_LEN];

static void setup(void)
{
    W = calloc(1, sizeof *W);
    W->ref = ntpu_ref_new(NULL);
    W->flip_rx_at = W->flip_tx_at = -1;
    ntpu_transport tp = {&wire_ops, W};
    cr_assert_eq(ntpu_link_init(&L, tp, 4112, errbuf), NTPU_OK);
}

static void teardown(void)
{
    ntpu_link_free(&L);
    ntpu_ref_free(W->ref);
    free(W);
}

TestSuite(link, .init = setup, .fini = teardown);

static ntpu_status nop(uint64_t *ticket)
{
    uint8_t op = NTPU_OP_NOP;
    return ntpu_link_command(&L, &op, 1, 0, NULL, ticket);
}

static ntpu_status write_ub(uint16_t addr, uint16_t value)
{
    uint8_t cmd[6 + 16] = {NTPU_OP_WRITE_MEM, NTPU_MEM_UB};
    ntpu_wr16(cmd + 2, addr);
    ntpu_wr16(cmd + 4, 1);
    for (int i = 0; i < 8; i++)
        ntpu_wr16(cmd + 6 + 2 * i, value);
    return ntpu_link_command(&L, cmd, sizeof cmd, 0, NULL, NULL);
}

static uint16_t read_ub(uint16_t addr, ntpu_status *st)
{
    uint8_t cmd[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB}, data[16] = {0};
    ntpu_wr16(cmd + 2, addr);
    ntpu_wr16(cmd + 4, 1);
    uint64_t t;
    *st = ntpu_link_command(&L, cmd, sizeof cmd, 16, data, &t);
    if (*st == NTPU_OK)
        *st = ntpu_link_wait(&L, t);
    return ntpu_rd16(data);
}

Test(link, info_round_trip)
{
    uint8_t op = NTPU_OP_INFO, id[NTPU_ID_BYTES];
    uint64_t t;
    cr_assert_eq(ntpu_link_command(&L, &op, 1, NTPU_ID_BYTES, id, &t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_eq(ntpu_rd32(id), NTPU_ID_MAGIC);
    cr_assert_eq(L.stats.tx_frames, 1);
    cr_assert_eq(L.stats.rx_frames, 1);
    cr_assert_eq(L.stats.tx_bytes, 9);
    cr_assert_eq(L.stats.rx_bytes, 8 + 1 + NTPU_ID_BYTES);
}

/* A 1.3 device's ID block ends at byte 32: the 1.4 fields read as 0. */
Test(link, info_from_a_1_3_device_is_accepted)
{
    uint8_t body[1 + NTPU_ID_BYTES_1_3] = {NTPU_DEV_OK};
    for (unsigned i = 0; i < NTPU_ID_BYTES_1_3; i++)
        body[1 + i] = (uint8_t)(0x40 + i);
    W->ncanned = ntpu_frame_encode(W->canned, NTPU_SOF_REPLY, 0, body, sizeof body);
    uint8_t op = NTPU_OP_INFO, id[NTPU_ID_BYTES];
    memset(id, 0xAA, sizeof id);
    uint64_t t;
    cr_assert_eq(ntpu_link_command(&L, &op, 1, NTPU_ID_BYTES, id, &t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_arr_eq(id, body + 1, NTPU_ID_BYTES_1_3);
    for (unsigned i = NTPU_ID_BYTES_1_3; i < NTPU_ID_BYTES; i++)
        cr_assert_eq(id[i], 0, "byte %u", i);
    /* only INFO may be short */
    W->canned_at = 0;
    body[0] = NTPU_DEV_OK;
    W->ncanned = ntpu_frame_encode(W->canned, NTPU_SOF_REPLY, 1, body, 1 + 16);
    uint8_t st[NTPU_STATUS_BYTES + 8], sop = NTPU_OP_STATUS;
    L.timeout_ms = 10;
    cr_assert_eq(ntpu_link_command(&L, &sop, 1, NTPU_STATUS_BYTES + 8, st, &t), NTPU_OK);
    cr_assert_neq(ntpu_link_wait(&L, t), NTPU_OK);
}

Test(link, sequence_numbers_wrap_and_replies_are_checked_in_order)
{
    for (int i = 0; i < 300; i++)
        cr_assert_eq(nop(NULL), NTPU_OK, "%s", errbuf);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    /* The frames on the wire carry 0, 1, ..., 255, 0, ... */
    cr_assert_eq(W->nsent, 300 * 9);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(W->sent[9 * i], NTPU_SOF_CMD);
        cr_assert_eq(W->sent[9 * i + 1], (uint8_t)i, "frame %d has SEQ %u", i, W->sent[9 * i + 1]);
    }
    cr_assert_eq(L.stats.rx_frames, 300);
    cr_assert_eq(L.pend_count, 0);
}

Test(link, commands_are_pipelined)
{
    /* Fewer commands than the window: nothing is read until someone waits. */
    for (unsigned i = 0; i < NTPU_LINK_WINDOW; i++)
        cr_assert_eq(write_ub((uint16_t)i, (uint16_t)i), NTPU_OK);
    cr_assert_eq(W->recv_calls, 0);
    cr_assert_eq(W->nsent, 0, "frames should be batched until needed");
    /* One more: the oldest reply is read to make room, no more. */
    cr_assert_eq(write_ub(500, 1), NTPU_OK);
    cr_assert_eq(L.pend_count, NTPU_LINK_WINDOW);
    cr_assert_eq(L.answered_total, 1);
    ntpu_status st;
    cr_assert_eq(read_ub(77, &st), 77);
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.pend_count, 0);
}

Test(link, device_error_is_reported_at_the_next_check)
{
    /* MATMUL past the end of UB: the device says ERR_RANGE, the rest still runs. */
    uint8_t bad[8] = {NTPU_OP_MATMUL, 0, 0xFF, 0xFF, 0, 0, 2, 0};
    cr_assert_eq(write_ub(1, 11), NTPU_OK);
    cr_assert_eq(ntpu_link_command(&L, bad, sizeof bad, 0, NULL, NULL), NTPU_OK);
    cr_assert_eq(write_ub(2, 22), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_ERR_DEVICE);
    cr_assert_not_null(strstr(errbuf, "ERR_RANGE"), "%s", errbuf);
    cr_assert_not_null(strstr(errbuf, "MATMUL"), "%s", errbuf);
    cr_assert_eq(L.stats.resyncs, 0);
    ntpu_status st;
    cr_assert_eq(read_ub(2, &st), 22);
    cr_assert_eq(st, NTPU_OK, "the error must be reported once: %s", errbuf);
    cr_assert_eq(read_ub(1, &st), 11);
}

Test(link, corrupted_reply_is_recovered)
{
    cr_assert_eq(write_ub(3, 33), NTPU_OK);
    W->flip_rx_at = 6; /* inside the first reply's CRC */
    uint64_t t;
    cr_assert_eq(nop(&t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.recoveries, 1);
    cr_assert_eq(L.stats.retransmits, 0, "both frames ran; only their replies were lost");
    cr_assert_eq(L.pend_count, 0);
    ntpu_status st;
    cr_assert_eq(read_ub(3, &st), 33);
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
}

Test(link, corrupted_command_is_sent_again)
{
    W->flip_tx_at = 4 + 6; /* first data byte of the WRITE_MEM */
    cr_assert_eq(write_ub(4, 44), NTPU_OK);
    cr_assert_eq(write_ub(5, 55), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.recoveries, 1);
    cr_assert_eq(L.stats.retransmits, 2, "the discarded frame and the one refused after it");
    ntpu_status st;
    cr_assert_eq(read_ub(4, &st), 44, "the write must have landed on the second try");
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
    cr_assert_eq(read_ub(5, &st), 55);
}

Test(link, the_device_runs_nothing_after_a_lost_frame)
{
    /* Lose the SOF of the first frame: the device never sees it, and refuses
     * the two behind it with ERR_SEQ until the host sends all three again. */
    uint8_t info = NTPU_OP_STATUS, blk[16];
    cr_assert_eq(write_ub(6, 1), NTPU_OK);
    cr_assert_eq(write_ub(6, 2), NTPU_OK);
    cr_assert_eq(write_ub(6, 3), NTPU_OK);
    W->flip_tx_at = 0;
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.retransmits, 3);
    ntpu_status st;
    cr_assert_eq(read_ub(6, &st), 3, "the writes ran once each, in order");
    uint64_t t;
    cr_assert_eq(ntpu_link_command(&L, &info, 1, 16, blk, &t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_geq(ntpu_rd32(blk + NTPU_STATUS_OFF_ERRORS), 2, "two ERR_SEQ replies at least");
    cr_assert_eq(blk[NTPU_STATUS_OFF_LAST_ERROR], NTPU_DEV_ERR_SEQ);
}

Test(link, a_lost_read_reply_is_read_again)
{
    cr_assert_eq(write_ub(7, 77), NTPU_OK);
    uint8_t cmd[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 7, 0, 1, 0}, data[16] = {0};
    uint64_t t;
    cr_assert_eq(ntpu_link_command(&L, cmd, sizeof cmd, 16, data, &t), NTPU_OK);
    cr_assert_eq(write_ub(8, 88), NTPU_OK);
    W->flip_rx_at = 9 + 10; /* the READ_MEM reply's data: it ran, its data is lost */
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_eq(ntpu_rd16(data), 77);
    cr_assert_eq(L.stats.recoveries, 1);
    cr_assert_eq(L.stats.retransmits, 1, "the read, and not the write after it, which ran");
    ntpu_status st;
    cr_assert_eq(read_ub(8, &st), 88);
}

Test(link, garbled_len_is_a_link_fault_but_a_bad_length_is_the_devices_answer)
{
    /* LEN's high byte hit on the way: the device answers ERR_LENGTH at the
     * header without running the frame; the host must send it again. */
    W->flip_tx_at = 3;
    cr_assert_eq(write_ub(9, 99), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    ntpu_status st;
    cr_assert_eq(read_ub(9, &st), 99);
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.recoveries, 1);
    /* A NOP of LEN 2 reaches the device intact and is rejected: a device error. */
    uint8_t bad[2] = {NTPU_OP_NOP, 0};
    cr_assert_eq(ntpu_link_command(&L, bad, 2, 0, NULL, NULL), NTPU_OK);
    cr_assert_eq(write_ub(10, 100), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_ERR_DEVICE);
    cr_assert_not_null(strstr(errbuf, "ERR_LENGTH"), "%s", errbuf);
    cr_assert_not_null(strstr(errbuf, "NOP"), "%s", errbuf);
    cr_assert_eq(read_ub(10, &st), 100, "the rest still ran");
}

Test(link, unexpected_reply_means_lost_sync)
{
    /* A frame the link did not send: the device refuses it (ERR_SEQ, SEQ 77),
     * and that reply arrives where the link expects its own. */
    uint8_t f[16], op = NTPU_OP_NOP;
    size_t n = ntpu_frame_encode(f, NTPU_SOF_CMD, 77, &op, 1);
    wire_send(W, f, n, NULL, 0);
    uint64_t t;
    cr_assert_eq(nop(&t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.recoveries, 1);
    cr_assert_eq(L.stats.retransmits, 0, "the NOP ran; only its reply was out of place");
    cr_assert_eq(nop(&t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
}

Test(link, sync_reports_expected_seq_for_any_seq)
{
    for (int i = 0; i < 37; i++)
        cr_assert_eq(nop(NULL), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    uint8_t f[16], op = NTPU_OP_SYNC, r[16];
    wire_send(W, f, ntpu_frame_encode(f, NTPU_SOF_CMD, 200, &op, 1), NULL, 0);
    cr_assert_eq(ntpu_ref_read(W->ref, r, sizeof r), 10);
    cr_assert_eq(r[1], 200, "the SEQ as received");
    cr_assert_eq(ntpu_rd16(r + 2), 2);
    cr_assert_eq(r[4], NTPU_DEV_OK);
    cr_assert_eq(r[5], 37, "expected_seq");
    cr_assert_eq(ntpu_frame_check(r, 10, NTPU_SOF_REPLY, 4112, errbuf, NTPU_ERRMSG_LEN), 0);
    /* A fresh link (a program started against a running board) learns it. */
    ntpu_link l2;
    char err2[NTPU_ERRMSG_LEN];
    cr_assert_eq(ntpu_link_init(&l2, (ntpu_transport){&wire_ops, W}, 4112, err2), NTPU_OK);
    cr_assert_eq(ntpu_link_resync(&l2), NTPU_OK, "%s", err2);
    cr_assert_eq(l2.next_seq, 37);
    uint64_t t;
    cr_assert_eq(ntpu_link_command(&l2, (const uint8_t[]){NTPU_OP_NOP}, 1, 0, NULL, &t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&l2, t), NTPU_OK, "%s", err2);
    cr_assert_eq(l2.stats.recoveries, 0, "numbered as the device expects");
    l2.tp.ops = NULL; /* the wire belongs to L */
    ntpu_link_free(&l2);
}

Test(link, resync_after_garbage_in_both_directions)
{
    /* Garbage that looks like the start of a long frame leaves the device
     * waiting for thousands of bytes; resync must flush it. */
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 5);
    junk[0] = NTPU_SOF_CMD;
    junk[2] = 0x00;
    junk[3] = 0x10; /* LEN 4096 */
    wire_send(W, junk, sizeof junk, NULL, 0);
    cr_assert_eq(ntpu_link_resync(&L), NTPU_OK, "%s", errbuf);
    ntpu_status st;
    cr_assert_eq(write_ub(9, 99), NTPU_OK);
    cr_assert_eq(read_ub(9, &st), 99);
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
}

Test(link, timeout_then_broken_until_reset)
{
    W->swallow = 1;
    uint64_t t;
    cr_assert_eq(nop(&t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_ERR_TIMEOUT);
    cr_assert_not_null(strstr(errbuf, "ntpu_reset_link"), "%s", errbuf);
    cr_assert_not_null(strstr(errbuf, "no answer to SYNC"), "%s", errbuf);
    cr_assert(L.broken);
    /* Everything fails fast while broken, and nothing is sent. */
    size_t before = W->tx_count;
    cr_assert_eq(nop(&t), NTPU_ERR_IO);
    /* ...and says what broke it, not only that it is broken. */
    cr_assert_not_null(strstr(errbuf, "out of sync: "), "%s", errbuf);
    cr_assert_not_null(strstr(errbuf, "no answer to SYNC"), "%s", errbuf);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_ERR_IO);
    cr_assert_eq(W->tx_count, before);
    /* The wire heals: an explicit resync brings the link back. */
    W->swallow = 0;
    cr_assert_eq(ntpu_link_resync(&L), NTPU_OK, "%s", errbuf);
    cr_assert(!L.broken);
    ntpu_status st;
    cr_assert_eq(write_ub(5, 55), NTPU_OK);
    cr_assert_eq(read_ub(5, &st), 55);
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
}

Test(link, gives_up_when_nothing_gets_through)
{
    W->mangle_frames = 1; /* SYNC gets through, the WRITE_MEM never does */
    cr_assert_eq(write_ub(11, 1), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_ERR_IO);
    cr_assert_not_null(strstr(errbuf, "no frame got through in 32 recoveries"), "%s", errbuf);
    cr_assert(L.broken);
    cr_assert_eq(L.stats.retransmits, NTPU_LINK_MAX_RECOVERIES);
    W->mangle_frames = 0;
    cr_assert_eq(ntpu_link_resync(&L), NTPU_OK, "%s", errbuf);
    ntpu_status st;
    cr_assert_eq(read_ub(11, &st), 0, "reset abandons the frame that never ran");
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
}

/* READ_MEM of `rows` rows of mem from addr, reply into data; no wait. */
static void read_async(unsigned mem, uint16_t addr, uint16_t rows, uint8_t *data)
{
    uint8_t cmd[6] = {NTPU_OP_READ_MEM, (uint8_t)mem};
    ntpu_wr16(cmd + 2, addr);
    ntpu_wr16(cmd + 4, rows);
    cr_assert_eq(ntpu_link_command(&L, cmd, 6, rows * (mem == NTPU_MEM_ACC ? 32u : 16u), data, NULL), NTPU_OK);
}

static void matmul_async(uint16_t acc_addr, uint16_t rows)
{
    uint8_t cmd[8] = {NTPU_OP_MATMUL, 0, 0, 0};
    ntpu_wr16(cmd + 4, acc_addr);
    ntpu_wr16(cmd + 6, rows);
    cr_assert_eq(ntpu_link_command(&L, cmd, 8, 0, NULL, NULL), NTPU_OK);
}

Test(link, on_a_lossy_link_a_write_waits_for_the_read_of_its_rows)
{
    L.tp.ops = &lossy_wire_ops;
    static uint8_t d1[48], d2[160];
    cr_assert_eq(write_ub(20, 1), NTPU_OK);
    read_async(NTPU_MEM_UB, 19, 3, d1);
    cr_assert_eq(write_ub(30, 2), NTPU_OK); /* rows the read does not cover: no wait */
    read_async(NTPU_MEM_ACC, 100, 5, d2);
    matmul_async(105, 4); /* just past the ACC read */
    cr_assert_eq(W->recv_calls, 0);
    cr_assert_eq(L.pend_count, 5);
    cr_assert_eq(write_ub(21, 3), NTPU_OK); /* inside the UB read: waits for its reply */
    cr_assert_eq(L.pend_count, 4, "the reads of UB 19..21 and the write before it answered");
    cr_assert_eq(ntpu_rd16(d1 + 16), 1, "UB 20 as written");
    cr_assert_eq(ntpu_rd16(d1 + 32), 0, "UB 21 before the write");
    matmul_async(104, 1); /* writes ACC 104, which the ACC read covers */
    cr_assert_eq(L.pend_reads, 0);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    ntpu_status st;
    cr_assert_eq(read_ub(21, &st), 3);
}

/* A read whose reply is lost, then a write to its row: the read sent again
 * must still see the value from before the write. */
static uint16_t lost_read_then_write(void)
{
    static uint8_t d[16];
    cr_assert_eq(write_ub(40, 1), NTPU_OK);
    read_async(NTPU_MEM_UB, 40, 1, d);
    W->flip_rx_at = 9 + 6; /* the read's reply: it ran, its data is lost */
    cr_assert_eq(write_ub(40, 2), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.recoveries, 1);
    return ntpu_rd16(d);
}

Test(link, the_hazard_rule_keeps_a_read_sent_again_exact)
{
    L.tp.ops = &lossy_wire_ops;
    cr_assert_eq(lost_read_then_write(), 1);
}

Test(link, without_the_hazard_rule_a_read_sent_again_sees_a_later_write)
{
    /* The reason for the rule: pipelined, the read sent again runs after the write. */
    cr_assert_eq(lost_read_then_write(), 2);
}

Test(link, on_a_lossless_link_nothing_waits)
{
    static uint8_t d1[48];
    read_async(NTPU_MEM_UB, 19, 3, d1);
    cr_assert_eq(write_ub(21, 3), NTPU_OK);
    matmul_async(0, 8);
    cr_assert_eq(W->recv_calls, 0);
    cr_assert_eq(L.pend_count, 3);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    cr_assert_eq(ntpu_rd16(d1 + 32), 0, "the read ran before the write");
}

Test(link, rejects_oversized_commands)
{
    ntpu_status st;
    cr_assert_null(ntpu_link_begin(&L, 4113, 0, &st));
    cr_assert_eq(st, NTPU_ERR_INVALID_ARG);
    cr_assert_null(ntpu_link_begin(&L, 0, 0, &st));
    cr_assert_eq(st, NTPU_ERR_INVALID_ARG);
    cr_assert_null(ntpu_link_begin(&L, 6, 4112, &st));
    cr_assert_eq(st, NTPU_ERR_INVALID_ARG);
    cr_assert_eq(W->tx_count, 0);
}

/* The link over the ref transport itself: replies checked where the model
 * queued them, and no copy kept of a frame that ran unless it reads. */
static void use_ref_transport(void)
{
    ntpu_link_free(&L);
    ntpu_transport tp;
    cr_assert_eq(ntpu_transport_ref_open(NULL, &tp, errbuf, sizeof errbuf), NTPU_OK, "%s", errbuf);
    cr_assert_eq(ntpu_link_init(&L, tp, 4112, errbuf), NTPU_OK);
}

Test(link, over_ref_replies_are_read_in_place)
{
    use_ref_transport();
    enum { ROWS = 200 }; /* 3,200 bytes: one frame each way */
    uint8_t cmd[6 + ROWS * 16] = {NTPU_OP_WRITE_MEM, NTPU_MEM_UB, 0, 1, ROWS, 0};
    for (size_t i = 6; i < sizeof cmd; i++)
        cmd[i] = (uint8_t)(i * 7);
    cr_assert_eq(ntpu_link_command(&L, cmd, sizeof cmd, 0, NULL, NULL), NTPU_OK);
    static uint8_t back[ROWS * 16];
    uint8_t rd[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 0, 1, ROWS, 0};
    uint64_t t;
    cr_assert_eq(ntpu_link_command(&L, rd, sizeof rd, sizeof back, back, &t), NTPU_OK);
    cr_assert_eq(ntpu_link_wait(&L, t), NTPU_OK, "%s", errbuf);
    cr_assert_arr_eq(back, cmd + 6, sizeof back);
    cr_assert_eq(L.stats.rx_frames, 2);
    cr_assert_eq(L.stats.rx_bytes, 2 * NTPU_FRAME_OVERHEAD + 1 + 1 + sizeof back);
    size_t left;
    ntpu_ref_peek(L.tp.ctx, &left);
    cr_assert_eq(left, 0, "every reply byte taken");
}

Test(link, over_ref_only_reads_keep_a_copy_and_recovery_still_works)
{
    use_ref_transport();
    /* A NOP of LEN 2 between a write and a read: the device answers it
     * ERR_LENGTH, the link recovers by SYNC, and the read behind it, which ran
     * but whose reply was dropped with the fault, goes again from its copy. */
    uint8_t rd[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 4, 0, 1, 0}, data[16] = {0}, bad[2] = {NTPU_OP_NOP, 0};
    cr_assert_eq(write_ub(4, 44), NTPU_OK);
    cr_assert_eq(ntpu_link_command(&L, bad, 2, 0, NULL, NULL), NTPU_OK);
    cr_assert_eq(ntpu_link_command(&L, rd, sizeof rd, sizeof data, data, NULL), NTPU_OK);
    cr_assert_eq(write_ub(5, 55), NTPU_OK);
    cr_assert_eq(L.pend_count, 4);
    cr_assert_eq(L.pend[0].kept, 0, "a write that runs as it is sent needs no copy");
    cr_assert_eq(L.pend[1].kept, 0);
    cr_assert_eq(L.pend[2].kept, 1, "a read may have to go again");
    cr_assert_eq(L.pend[3].kept, 0);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_ERR_DEVICE);
    cr_assert_not_null(strstr(errbuf, "ERR_LENGTH"), "%s", errbuf);
    cr_assert_eq(L.stats.recoveries, 1);
    cr_assert_eq(L.stats.retransmits, 1, "the read only");
    cr_assert_eq(ntpu_rd16(data), 44);
    ntpu_status st;
    cr_assert_eq(read_ub(5, &st), 55, "the write after the read ran");
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
}

Test(link, a_reply_not_whole_in_view_is_read_through_recv)
{
    ntpu_link_free(&L);
    ntpu_transport tp = {&peek_wire_ops, W};
    cr_assert_eq(ntpu_link_init(&L, tp, 4112, errbuf), NTPU_OK);
    /* 9 bytes: a status reply is whole in view, a one-row READ_MEM reply (25) is not */
    W->peek_cap = NTPU_FRAME_OVERHEAD + 1;
    for (uint16_t i = 0; i < 20; i++)
        cr_assert_eq(write_ub(i, (uint16_t)(100 + i)), NTPU_OK);
    cr_assert_eq(ntpu_link_sync(&L), NTPU_OK, "%s", errbuf);
    cr_assert_eq(W->recv_calls, 0, "status replies checked in place");
    ntpu_status st;
    for (uint16_t i = 0; i < 20; i++) {
        cr_assert_eq(read_ub(i, &st), 100 + i);
        cr_assert_eq(st, NTPU_OK, "%s", errbuf);
    }
    cr_assert_eq(W->recv_calls, 2 * 20, "header and the rest, through recv");
    /* nothing in view at all: the same through recv alone */
    W->peek_cap = 0;
    cr_assert_eq(write_ub(3, 333), NTPU_OK);
    cr_assert_eq(read_ub(3, &st), 333);
    cr_assert_eq(st, NTPU_OK, "%s", errbuf);
    cr_assert_eq(L.stats.rx_frames, 20 + 20 + 2);
}

Test(link, names)
{
    cr_assert_str_eq(ntpu_op_name(NTPU_OP_MATMUL), "MATMUL");
    cr_assert_str_eq(ntpu_op_name(200), "unknown command");
    cr_assert_str_eq(ntpu_dev_status_str(NTPU_DEV_ERR_RANGE), "ERR_RANGE");
    cr_assert_str_eq(ntpu_dev_status_str(99), "unknown device status");
}

/* ------------------------------------------------------------------ a link without flow control */

/* Wraps a transport and watches the wire as a board's receive FIFO would:
 * a command frame stays unanswered until its whole reply has been read. At
 * every send it checks the bytes unanswered against the limit; more is only
 * allowed for a single frame alone. */
typedef struct meter {
    ntpu_transport inner;
    size_t limit;
    uint32_t frame_len[1024]; /* unanswered command frames' lengths, a ring */
    size_t head, count, unanswered, peak, sends;
    uint8_t tx_hdr[4];
    size_t tx_pos, tx_want; /* position in the command frame being sent, its length */
    uint8_t rx_hdr[4];
    size_t rx_pos, rx_want; /* the same for the reply being read */
    int violated;
} meter;

static ntpu_status meter_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    meter *m = ctx;
    for (size_t i = 0; i < n; i++) {
        if (m->tx_pos == 0 && buf[i] != NTPU_SOF_CMD)
            continue; /* resync's zeros: dropped by the device at once */
        if (m->tx_pos < 4)
            m->tx_hdr[m->tx_pos] = buf[i];
        if (++m->tx_pos == 4)
            m->tx_want = ntpu_rd16(m->tx_hdr + 2) + (size_t)NTPU_FRAME_OVERHEAD;
        if (m->tx_pos >= 4 && m->tx_pos == m->tx_want) {
            m->frame_len[(m->head + m->count++) % 1024] = (uint32_t)m->tx_want;
            m->unanswered += m->tx_want;
            m->tx_pos = 0;
        }
    }
    m->sends++;
    if (m->unanswered > m->peak)
        m->peak = m->unanswered;
    if (m->unanswered > m->limit && m->count > 1)
        m->violated = 1;
    return m->inner.ops->send(m->inner.ctx, buf, n, err, errlen);
}

static ntpu_status meter_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                              size_t errlen)
{
    meter *m = ctx;
    ntpu_status st = m->inner.ops->recv(m->inner.ctx, buf, n, timeout_ms, got, err, errlen);
    for (size_t i = 0; i < *got; i++) {
        if (m->rx_pos < 4)
            m->rx_hdr[m->rx_pos] = buf[i];
        if (++m->rx_pos == 4)
            m->rx_want = ntpu_rd16(m->rx_hdr + 2) + (size_t)NTPU_FRAME_OVERHEAD;
        if (m->rx_pos >= 4 && m->rx_pos == m->rx_want) {
            cr_assert_gt(m->count, 0, "a reply with no frame outstanding");
            m->unanswered -= m->frame_len[m->head];
            m->head = (m->head + 1) % 1024;
            m->count--;
            m->rx_pos = 0;
        }
    }
    return st;
}

static void meter_close(void *ctx)
{
    meter *m = ctx;
    m->inner.ops->close(m->inner.ctx);
}

/* Puts a meter with this limit between an opened device and its transport. */
static void meter_install(ntpu_device *dev, meter *m, ntpu_transport_ops *ops, size_t limit)
{
    memset(m, 0, sizeof *m);
    m->inner = dev->link.tp;
    m->limit = limit;
    *ops = (ntpu_transport_ops){.name = "meter",
                                .send = meter_send,
                                .recv = meter_recv,
                                .close = meter_close,
                                .starts_in_sync = 1,
                                .max_unanswered_tx_bytes = limit};
    dev->link.tp = (ntpu_transport){ops, m};
}

static uint16_t bf16_of(unsigned i)
{
    return (uint16_t)(0x3C00u + (i * 2654435761u >> 20) % 0x0700u) ^ (i & 1u) << 15;
}

static void limited_matmul_and_rows(size_t limit)
{
    ntpu_device *ref = NULL, *dev = NULL;
    cr_assert_eq(ntpu_open("ref", &ref), NTPU_OK);
    /* The board's frame size: payload 516, as the ftdi transport caps it. */
    cr_assert_eq(ntpu_open("ref:payload=516", &dev), NTPU_OK, "%s", ntpu_last_error(dev));
    static meter m;
    static ntpu_transport_ops ops;
    meter_install(dev, &m, &ops, limit);

    enum { M = 40, K = 136, N = 72 };
    static uint16_t A[M * K], B[K * N];
    static float C[M * N], want[M * N];
    for (unsigned i = 0; i < M * K; i++)
        A[i] = bf16_of(i);
    for (unsigned i = 0; i < K * N; i++)
        B[i] = bf16_of(i + 7777);
    cr_assert_eq(ntpu_matmul_bf16(ref, A, B, want, M, K, N), NTPU_OK, "%s", ntpu_last_error(ref));
    cr_assert_eq(ntpu_matmul_bf16(dev, A, B, C, M, K, N), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_arr_eq(C, want, sizeof C, "the metered device must compute the same bits");

    /* Many full frames of rows queued back to back. */
    enum { ROWS = 600 };
    static uint16_t rows[ROWS * 8], back[ROWS * 8];
    for (unsigned i = 0; i < ROWS * 8; i++)
        rows[i] = (uint16_t)(i * 40503u);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 3, ROWS, rows), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 3 + ROWS, ROWS, rows), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_UB, 3 + ROWS, ROWS, back), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_arr_eq(back, rows, sizeof rows);

    cr_assert(!m.violated, "%zu bytes unanswered, limit %zu", m.peak, limit);
    cr_assert_gt(m.sends, 20, "the test should have sent many batches");
    cr_assert_eq(m.count, 0);
    ntpu_close(dev);
    ntpu_close(ref);
}

Test(flow, unanswered_bytes_stay_under_the_limit)
{
    limited_matmul_and_rows(1500);
}

Test(flow, a_frame_larger_than_the_limit_goes_alone)
{
    /* Full frames are 524 bytes: each must wait for every older one to be answered. */
    limited_matmul_and_rows(300);
}

Test(flow, the_meter_catches_an_unlimited_link)
{
    /* The check itself must be able to fail: without a limit the link batches far more. */
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open("ref:payload=516", &dev), NTPU_OK, "%s", ntpu_last_error(dev));
    static meter m;
    static ntpu_transport_ops ops;
    meter_install(dev, &m, &ops, 1500);
    ops.max_unanswered_tx_bytes = 0;
    static uint16_t rows[600 * 8];
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 0, 600, rows), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_fence(dev), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert(m.violated);
    ntpu_close(dev);
}

Test(flow, the_transport_caps_max_payload)
{
    static const ntpu_transport_ops capped = {.name = "capped",
                                              .send = wire_send,
                                              .recv = wire_recv,
                                              .close = wire_close,
                                              .starts_in_sync = 1,
                                              .max_unanswered_tx_bytes = 2048,
                                              .max_payload_cap = 516};
    wire *w = calloc(1, sizeof *w);
    w->ref = ntpu_ref_new(NULL);
    ntpu_link l;
    char err[NTPU_ERRMSG_LEN];
    cr_assert_eq(ntpu_link_init(&l, (ntpu_transport){&capped, w}, 4112, err), NTPU_OK);
    cr_assert_eq(l.max_payload, 516);
    ntpu_status st;
    cr_assert_null(ntpu_link_begin(&l, 517, 0, &st));
    cr_assert_eq(st, NTPU_ERR_INVALID_ARG);
    ntpu_link_free(&l);
    ntpu_ref_free(w->ref);
    free(w);
}

/* ------------------------------------------------------------------ injected faults */

Test(faults, device_options)
{
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open("ref:faults=1.5", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "probability"), "%s", ntpu_last_error(dev));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:fault_seed=x", &dev), NTPU_ERR_INVALID_ARG);
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:timeout_ms=0", &dev), NTPU_ERR_INVALID_ARG);
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:faults=0", &dev), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_str_eq(dev->link.tp.ops->name, "ref", "no faults, no wrapper");
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:n=4,faults=0.0002,fault_seed=7,timeout_ms=20", &dev), NTPU_OK, "%s",
                 ntpu_last_error(dev));
    cr_assert_str_eq(dev->link.tp.ops->name, "faulty");
    cr_assert(dev->link.tp.ops->lossy);
    cr_assert_eq(dev->link.timeout_ms, 20);
    ntpu_info info;
    cr_assert_eq(ntpu_get_info(dev, &info), NTPU_OK);
    cr_assert_eq(info.rows, 4, "the model's own options still apply");
    ntpu_close(dev);
}

Test(faults, matmuls_under_faults_equal_a_clean_run)
{
    ntpu_device *clean = NULL, *dev = NULL;
    cr_assert_eq(ntpu_open("ref", &clean), NTPU_OK);
    cr_assert_eq(ntpu_open("ref:faults=0.001,fault_seed=3,payload=516", &dev), NTPU_OK, "%s", ntpu_last_error(dev));
    enum { M = 45, K = 70, N = 33 };
    static int8_t A[M * K], B[K * N];
    static int32_t C[M * N], want[M * N];
    for (int t = 0; t < 5; t++) {
        for (int i = 0; i < M * K; i++)
            A[i] = (int8_t)(i * 37 + t * 11);
        for (int i = 0; i < K * N; i++)
            B[i] = (int8_t)(i * 91 - t * 5);
        cr_assert_eq(ntpu_matmul(clean, NTPU_DTYPE_INT8, A, B, want, M, K, N), NTPU_OK);
        cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, A, B, C, M, K, N), NTPU_OK, "%s", ntpu_last_error(dev));
        cr_assert_arr_eq(C, want, sizeof C, "round %d", t);
    }
    ntpu_link_stats ls;
    cr_assert_eq(ntpu_get_link_stats(dev, &ls), NTPU_OK);
    cr_assert_gt(ls.recoveries, 0, "one fault per 1000 bytes must have hit");
    cr_assert_gt(ls.retransmits, 0);
    ntpu_close(dev);
    ntpu_close(clean);
}
