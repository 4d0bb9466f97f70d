/* SPDX-License-Identifier: Apache-2.0 */
/* The golden model through its byte interface only: frames in, frames out, as
 * a host sees it (docs/protocol.md, docs/isa.md). Expected results come from
 * plain loops written here, not from the model's own code. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "ntpu_ref.h"
#include "numerics_internal.h"

/* ---------------------------------------------------------------- host side */

#define BIG 70000 /* more than any frame */

/* The default simulated core's memories (docs/isa.md, "Device state"). */
enum { UB_ROWS = 16384, WB_ROWS = 32768, ACC_ROWS = 32768 };

static uint8_t next_seq;
static uint8_t txbuf[BIG];

typedef struct reply {
    uint8_t seq;
    uint8_t status;
    size_t len; /* data bytes after the status byte */
    uint8_t data[BIG];
} reply;
static reply rep; /* each Criterion test runs in its own process */

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static unsigned get16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* SOF SEQ LEN PAYLOAD CRC into out; returns the frame's size. */
static size_t make_frame(uint8_t *out, uint8_t seq, const uint8_t *payload, size_t len)
{
    out[0] = NTPU_SOF_CMD;
    out[1] = seq;
    put16(out + 2, (unsigned)len);
    memcpy(out + 4, payload, len);
    put32(out + 4 + len, (uint32_t)crc32(0L, out + 1, (uInt)(3 + len)));
    return len + NTPU_FRAME_OVERHEAD;
}

/* A new model expects SEQ 0 first: every frame after it is numbered from there. */
static ntpu_ref *new_model(const ntpu_ref_config *cfg)
{
    next_seq = 0;
    return ntpu_ref_new(cfg);
}

static uint8_t send(ntpu_ref *r, const uint8_t *payload, size_t len)
{
    uint8_t seq = next_seq++;
    ntpu_ref_write(r, txbuf, make_frame(txbuf, seq, payload, len));
    return seq;
}

/* Takes one whole reply frame off the model's queue, checking its framing. */
static void get_reply(ntpu_ref *r, reply *out)
{
    uint8_t h[4], t[4];
    cr_assert_geq(ntpu_ref_pending(r), NTPU_FRAME_OVERHEAD + 1, "a reply is queued");
    cr_assert_eq(ntpu_ref_read(r, h, 4), 4);
    cr_assert_eq(h[0], NTPU_SOF_REPLY);
    size_t len = get16(h + 2);
    cr_assert(len >= 1, "reply LEN %zu", len);
    cr_assert_geq(ntpu_ref_pending(r), len + 4);
    uint8_t *body = malloc(len);
    cr_assert(body);
    cr_assert_eq(ntpu_ref_read(r, body, len), len);
    cr_assert_eq(ntpu_ref_read(r, t, 4), 4);
    uint32_t crc = (uint32_t)crc32(crc32(0L, h + 1, 3), body, (uInt)len);
    cr_assert_eq(get32(t), crc, "reply CRC");
    out->seq = h[1];
    out->status = body[0];
    out->len = len - 1;
    memcpy(out->data, body + 1, len - 1);
    free(body);
}

/* One command, one reply: returns the reply's status. */
static uint8_t run(ntpu_ref *r, const uint8_t *payload, size_t len)
{
    uint8_t seq = send(r, payload, len);
    get_reply(r, &rep);
    cr_assert_eq(rep.seq, seq, "reply SEQ %u, want %u", rep.seq, seq);
    cr_assert_eq(ntpu_ref_pending(r), 0, "exactly one reply");
    return rep.status;
}

static uint8_t op0(ntpu_ref *r, uint8_t op)
{
    return run(r, &op, 1);
}

static unsigned row_bytes(unsigned n, unsigned mem)
{
    return n * (mem == NTPU_MEM_ACC ? 4u : 2u);
}

static uint8_t write_mem(ntpu_ref *r, unsigned n, unsigned mem, unsigned addr, unsigned rows, const uint8_t *bytes)
{
    static uint8_t c[BIG];
    size_t nb = (size_t)rows * row_bytes(n, mem);
    c[0] = NTPU_OP_WRITE_MEM;
    c[1] = (uint8_t)mem;
    put16(c + 2, addr);
    put16(c + 4, rows);
    memcpy(c + 6, bytes, nb);
    return run(r, c, 6 + nb);
}

static uint8_t read_mem(ntpu_ref *r, unsigned mem, unsigned addr, unsigned rows)
{
    uint8_t c[6] = {NTPU_OP_READ_MEM, (uint8_t)mem};
    put16(c + 2, addr);
    put16(c + 4, rows);
    return run(r, c, 6);
}

/* Rows per frame under the default max_payload (4112), as a host splits them. */
static unsigned rows_per_frame(unsigned n, unsigned mem)
{
    return (4112 - 6) / row_bytes(n, mem);
}

/* Lanes are 16-bit for UB/WB; packed little-endian. Returns the first non-OK
 * status, or OK. */
static uint8_t write_lanes16(ntpu_ref *r, unsigned n, unsigned mem, unsigned addr, unsigned rows, const uint16_t *v)
{
    static uint8_t b[BIG];
    for (unsigned done = 0, k; done < rows || rows == 0; done += k) {
        k = rows - done < rows_per_frame(n, mem) ? rows - done : rows_per_frame(n, mem);
        for (size_t i = 0; i < (size_t)k * n; i++)
            put16(b + 2 * i, v[(size_t)done * n + i]);
        uint8_t st = write_mem(r, n, mem, addr + done, k, b);
        if (st != NTPU_DEV_OK || rows == 0)
            return st;
    }
    return NTPU_DEV_OK;
}

static uint8_t write_acc(ntpu_ref *r, unsigned n, unsigned addr, unsigned rows, const uint32_t *v)
{
    static uint8_t b[BIG];
    cr_assert_leq(rows, rows_per_frame(n, NTPU_MEM_ACC));
    for (size_t i = 0; i < (size_t)rows * n; i++)
        put32(b + 4 * i, v[i]);
    return write_mem(r, n, NTPU_MEM_ACC, addr, rows, b);
}

static void read_acc(ntpu_ref *r, unsigned n, unsigned addr, unsigned rows, uint32_t *out)
{
    for (unsigned done = 0, k; done < rows; done += k) {
        k = rows - done < rows_per_frame(n, NTPU_MEM_ACC) ? rows - done : rows_per_frame(n, NTPU_MEM_ACC);
        cr_assert_eq(read_mem(r, NTPU_MEM_ACC, addr + done, k), NTPU_DEV_OK);
        cr_assert_eq(rep.len, (size_t)k * n * 4);
        for (size_t i = 0; i < (size_t)k * n; i++)
            out[(size_t)done * n + i] = get32(rep.data + 4 * i);
    }
}

static uint8_t load_w(ntpu_ref *r, unsigned flags, unsigned wb_addr)
{
    uint8_t c[4] = {NTPU_OP_LOAD_W, (uint8_t)flags};
    put16(c + 2, wb_addr);
    return run(r, c, 4);
}

static uint8_t matmul(ntpu_ref *r, unsigned flags, unsigned ub, unsigned acc, unsigned rows)
{
    uint8_t c[8] = {NTPU_OP_MATMUL, (uint8_t)flags};
    put16(c + 2, ub);
    put16(c + 4, acc);
    put16(c + 6, rows);
    return run(r, c, 8);
}

static void status_block(ntpu_ref *r, uint8_t *last_error, uint32_t *errors, uint32_t *commands, uint32_t *dropped)
{
    cr_assert_eq(op0(r, NTPU_OP_STATUS), NTPU_DEV_OK);
    cr_assert_eq(rep.len, NTPU_STATUS_BYTES);
    cr_assert_eq(rep.data[NTPU_STATUS_OFF_BUSY], 0);
    *last_error = rep.data[NTPU_STATUS_OFF_LAST_ERROR];
    *errors = get32(rep.data + NTPU_STATUS_OFF_ERRORS);
    *commands = get32(rep.data + NTPU_STATUS_OFF_COMMANDS);
    *dropped = get32(rep.data + NTPU_STATUS_OFF_DROPPED);
}

static void counters(ntpu_ref *r, unsigned flags, uint64_t *c)
{
    uint8_t p[2] = {NTPU_OP_COUNTERS, (uint8_t)flags};
    cr_assert_eq(run(r, p, 2), NTPU_DEV_OK);
    cr_assert_eq(rep.len, NTPU_COUNTERS_BYTES);
    for (unsigned i = 0; i < NTPU_CNT_COUNT; i++)
        c[i] = get64(rep.data + 8 * i);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static ntpu_ref *dev;
static unsigned N;
static void setup(void)
{
    dev = ntpu_ref_new(NULL);
    cr_assert(dev);
    N = ntpu_ref_default_config().n;
}
static void teardown(void)
{
    ntpu_ref_free(dev);
}

TestSuite(ref_model, .init = setup, .fini = teardown);

/* ---------------------------------------------------------------- identity */

Test(ref_model, default_config)
{
    ntpu_ref_config c = ntpu_ref_default_config();
#ifdef NTPU_DEFAULT_N
    cr_expect_eq(c.n, NTPU_DEFAULT_N);
#else
    cr_expect_eq(c.n, 8);
#endif
    cr_expect_eq(c.ub_rows, 16384);
    cr_expect_eq(c.wb_rows, 32768);
    cr_expect_eq(c.acc_rows, 32768);
    cr_expect_eq(c.os_rows, 65536);
    cr_expect_eq(c.max_payload, 4112);
    cr_expect_eq(c.no_vector, 0);
    cr_expect_eq(c.pm_rows, 8192);
}

Test(ref_model, info_block)
{
    uint8_t seq = send(dev, (const uint8_t[]){NTPU_OP_INFO}, 1);
    uint8_t raw[4 + 41 + 4];
    cr_assert_eq(ntpu_ref_pending(dev), sizeof raw);
    cr_assert_eq(ntpu_ref_read(dev, raw, sizeof raw), sizeof raw);
    cr_expect_eq(raw[0], 0x5A);
    cr_expect_eq(raw[1], seq);
    cr_expect_eq(get16(raw + 2), 41);
    cr_expect_eq(raw[4], NTPU_DEV_OK);
    cr_expect_eq(get32(raw + 45), (uint32_t)crc32(0L, raw + 1, 44));
    const uint8_t *id = raw + 5;
    cr_expect_eq(get32(id + 0), 0x5550544Eu);
    cr_expect_eq(memcmp(id, "NTPU", 4), 0);
    cr_expect_eq(id[4], 1);
    cr_expect_eq(id[5], 5, "version 1.5");
    cr_expect_eq(id[6], N);
    cr_expect_eq(id[7], N);
    cr_expect_eq(id[8], 3);
    cr_expect_eq(id[9], 0xFF, "features TRANSPOSE, TRANSPOSE_A, VECTOR, OPTIM, PROGRAM, ADAM, CONV, POOL");
    cr_expect_eq(get16(id + 10), 4112);
    cr_expect_eq(get32(id + 12), 16384);
    cr_expect_eq(get32(id + 16), 32768);
    cr_expect_eq(get32(id + 20), 32768);
    cr_expect_eq(get32(id + 24), 0);
    cr_expect_eq(id[28], 0);
    cr_expect_eq(id[29] | id[30] | id[31], 0);
    cr_expect_eq(get32(id + 32), 8192, "pm_rows");
    cr_expect_eq(get32(id + 36), 65536, "os_rows");
}

Test(ref_model, config_limits)
{
    ntpu_ref_config ok = {4, 16, 8, 32, 73, 0, 0, 0, 0, 0, 0, 0}; /* 73: the COUNTERS reply */
    ntpu_ref *r = new_model(&ok);
    cr_assert(r);
    cr_assert_eq(op0(r, NTPU_OP_INFO), NTPU_DEV_OK);
    cr_expect_eq(rep.data[6], 4);
    cr_expect_eq(get16(rep.data + 10), 73);
    cr_expect_eq(get32(rep.data + 12), 16);
    cr_expect_eq(get32(rep.data + 16), 8);
    cr_expect_eq(get32(rep.data + 20), 32);
    ntpu_ref_free(r);
    ntpu_ref_free(NULL);

    const ntpu_ref_config bad[] = {
        {1, 16, 8, 32, 73, 0, 0, 0, 0, 0, 0, 0},     {65, 16, 65, 32, 73, 0, 0, 0, 0, 0, 0, 0},
        {4, 0, 8, 32, 73, 0, 0, 0, 0, 0, 0, 0},      {4, 65537, 8, 32, 73, 0, 0, 0, 0, 0, 0, 0},
        {4, 16, 3, 32, 73, 0, 0, 0, 0, 0, 0, 0},     {4, 16, 65537, 32, 73, 0, 0, 0, 0, 0, 0, 0},
        {4, 16, 8, 0, 73, 0, 0, 0, 0, 0, 0, 0},      {4, 16, 8, 65537, 73, 0, 0, 0, 0, 0, 0, 0},
        {4, 16, 8, 32, 72, 0, 0, 0, 0, 0, 0, 0},     {4, 16, 8, 32, 65536, 0, 0, 0, 0, 0, 0, 0},
        {4, 16, 8, 32, 73, 2, 0, 0, 0, 0, 0, 0},     {4, 16, 8, 32, 73, 0, 2, 0, 0, 0, 0, 0},
        {4, 16, 8, 32, 73, 0, 0, 65, 0, 0, 0, 0},    {4, 16, 8, 32, 73, 0, 0, 0, 65537, 0, 0, 0},
        {4, 16, 8, 32, 73, 0, 0, 0, 0, 65537, 0, 0}, {4, 16, 8, 32, 73, 0, 0, 0, 0, 0, 2, 0},
        {4, 16, 8, 32, 73, 0, 0, 0, 0, 0, 0, 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_null(ntpu_ref_new(&bad[i]), "config %zu rejected", i);
    ntpu_ref_config big = {64, 65536, 65536, 65536, 65535, 0, 0, 0, 65536, 65536, 0, 0};
    r = new_model(&big);
    cr_assert(r, "largest config accepted");
    uint8_t c[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB};
    put16(c + 2, 65535);
    put16(c + 4, 1);
    cr_expect_eq(run(r, c, 6), NTPU_DEV_OK, "row 65535 exists");
    ntpu_ref_free(r);
}

/* ---------------------------------------------------------------- memories */

Test(ref_model, write_read_round_trips)
{
    static uint8_t data[BIG];
    const unsigned sizes[3] = {UB_ROWS, WB_ROWS, ACC_ROWS};
    for (unsigned mem = 0; mem < 3; mem++) {
        unsigned rb = row_bytes(N, mem), rows = 4096 / rb; /* as many rows as fit in one frame */
        const unsigned addrs[3] = {0, 37, sizes[mem] - rows};
        for (unsigned k = 0; k < 3; k++) {
            for (size_t i = 0; i < (size_t)rows * rb; i++)
                data[i] = (uint8_t)rnd();
            cr_assert_eq(write_mem(dev, N, mem, addrs[k], rows, data), NTPU_DEV_OK);
            cr_assert_eq(read_mem(dev, mem, addrs[k], rows), NTPU_DEV_OK);
            cr_assert_eq(rep.len, (size_t)rows * rb);
            cr_assert_eq(memcmp(rep.data, data, rep.len), 0, "mem %u at %u", mem, addrs[k]);
        }
        /* single rows read back from inside a block, and rows = 0 */
        cr_assert_eq(read_mem(dev, mem, sizes[mem] - 1, 1), NTPU_DEV_OK);
        cr_assert_eq(memcmp(rep.data, data + (size_t)(rows - 1) * rb, rb), 0);
        cr_assert_eq(read_mem(dev, mem, 5, 0), NTPU_DEV_OK);
        cr_assert_eq(rep.len, 0);
        cr_assert_eq(write_mem(dev, N, mem, 5, 0, data), NTPU_DEV_OK);
    }
    /* memories are separate and start at zero */
    cr_assert_eq(read_mem(dev, NTPU_MEM_UB, 5000, 1), NTPU_DEV_OK);
    for (size_t i = 0; i < rep.len; i++)
        cr_assert_eq(rep.data[i], 0);
}

/* ---------------------------------------------------------------- MATMUL */

static int8_t lo8(uint16_t v)
{
    return (int8_t)(v & 0xFF);
}

Test(ref_model, int8_matmul)
{
    enum { M = 13 };
    uint16_t a[M * 64], w[64 * 64];
    uint32_t got[M * 64];
    for (unsigned i = 0; i < M * N; i++) /* high byte is noise: ignored */
        a[i] = (uint16_t)rnd();
    for (unsigned i = 0; i < N * N; i++)
        w[i] = (uint16_t)rnd();
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 100, M, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 16, N, w), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 16), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, 0, 100, 7, M), NTPU_DEV_OK);
    read_acc(dev, N, 7, M, got);
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < N; n++) {
            int32_t want = 0;
            for (unsigned k = 0; k < N; k++)
                want += lo8(a[m * N + k]) * lo8(w[k * N + n]);
            cr_assert_eq((int32_t)got[m * N + n], want, "C[%u][%u]", m, n);
        }
}

Test(ref_model, int8_matmul_wraps)
{
    /* Every product is -128 * -128 = 2^14; start from INT32_MAX - 2^14*N + 1. */
    uint16_t a[64], w[64 * 64];
    uint32_t acc[64], got[64];
    for (unsigned i = 0; i < N; i++) {
        a[i] = 0x0080;
        acc[i] = (uint32_t)INT32_MAX - (1u << 14) * N + 1;
    }
    for (unsigned i = 0; i < N * N; i++)
        w[i] = 0xFF80;
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, 1, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 0, 1, acc), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_ACCUMULATE, 0, 0, 1), NTPU_DEV_OK);
    read_acc(dev, N, 0, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 0x80000000u);
}

/* Moderate random bf16: products and sums stay normal, so a plain fp32 loop
 * (no flushing needed) is the reference, and the order of its additions is
 * visible in the rounding. */
static uint16_t rnd_bf16(void)
{
    uint64_t r = rnd();
    return (uint16_t)(((r & 1) << 15) | ((0x78 + (r >> 8) % 12) << 7) | ((r >> 16) & 0x7F));
}

Test(ref_model, bf16_matmul_is_a_sequential_fp32_chain)
{
    enum { M = 11 };
    uint16_t a[M * 64], w[64 * 64];
    uint32_t got[M * 64];
    for (unsigned i = 0; i < M * N; i++)
        a[i] = rnd_bf16();
    for (unsigned i = 0; i < N * N; i++)
        w[i] = rnd_bf16();
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, M, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, WB_ROWS - N, N, w), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, WB_ROWS - N), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, 0, ACC_ROWS - M, M), NTPU_DEV_OK);
    read_acc(dev, N, ACC_ROWS - M, M, got);
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < N; n++) {
            float acc = 0.0f;
            for (unsigned k = 0; k < N; k++) {
                float p = ntpu_bf16_to_f32(a[m * N + k]) * ntpu_bf16_to_f32(w[k * N + n]);
                acc = acc + p;
            }
            cr_assert_eq(got[m * N + n], ntpu_f32_bits(acc), "C[%u][%u] = %a, want %a", m, n,
                         (double)ntpu_f32_from_bits(got[m * N + n]), (double)acc);
        }
}

Test(ref_model, bf16_accumulate_continues_the_chain)
{
    uint16_t a[2 * 64], w[64 * 64];
    uint32_t start[64], got[64];
    for (unsigned i = 0; i < 2 * N; i++)
        a[i] = rnd_bf16();
    for (unsigned i = 0; i < N * N; i++)
        w[i] = rnd_bf16();
    for (unsigned n = 0; n < N; n++)
        start[n] = ntpu_f32_bits((float)((int)n - 3) * 1.25f);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, 2, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 9, 1, start), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    /* row 0 onto the written value, then row 1 on top: one chain of 2N adds */
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, 0, 9, 1), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, 1, 9, 1), NTPU_DEV_OK);
    read_acc(dev, N, 9, 1, got);
    for (unsigned n = 0; n < N; n++) {
        float acc = ntpu_f32_from_bits(start[n]);
        for (unsigned row = 0; row < 2; row++)
            for (unsigned k = 0; k < N; k++) {
                float p = ntpu_bf16_to_f32(a[row * N + k]) * ntpu_bf16_to_f32(w[k * N + n]);
                acc = acc + p;
            }
        cr_assert_eq(got[n], ntpu_f32_bits(acc), "column %u", n);
    }
    /* without ACCUMULATE the chain restarts at +0 */
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, 1, 9, 1), NTPU_DEV_OK);
    read_acc(dev, N, 9, 1, got);
    for (unsigned n = 0; n < N; n++) {
        float acc = 0.0f;
        for (unsigned k = 0; k < N; k++)
            acc = acc + ntpu_bf16_to_f32(a[N + k]) * ntpu_bf16_to_f32(w[k * N + n]);
        cr_assert_eq(got[n], ntpu_f32_bits(acc));
    }
}

Test(ref_model, bf16_starts_at_plus_zero)
{
    /* -0 * 1 products: +0 + -0 = +0 in every lane (a -0 start would stay -0) */
    uint16_t a[64], w[64 * 64];
    uint32_t got[64];
    for (unsigned i = 0; i < N; i++)
        a[i] = 0x8000;
    for (unsigned i = 0; i < N * N; i++)
        w[i] = 0x3F80;
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, 1, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, 0, 0, 1), NTPU_DEV_OK);
    read_acc(dev, N, 0, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 0x00000000u);
}

/* One-hot activation rows pick out weight rows: ACC[m][n] = W[m][n]. */
static void identity_matmul(ntpu_ref *r, unsigned rows_out, uint32_t *got)
{
    uint16_t a[64 * 64] = {0};
    for (unsigned m = 0; m < rows_out; m++)
        a[m * N + m] = 1;
    cr_assert_eq(write_lanes16(r, N, NTPU_MEM_UB, 0, rows_out, a), NTPU_DEV_OK);
    cr_assert_eq(matmul(r, 0, 0, 0, rows_out), NTPU_DEV_OK);
    read_acc(r, N, 0, rows_out, got);
}

Test(ref_model, load_w_normal_and_transposed)
{
    uint16_t wb[64 * 64];
    uint32_t got[64 * 64];
    for (unsigned i = 0; i < N; i++)
        for (unsigned j = 0; j < N; j++)
            wb[i * N + j] = (uint16_t)(0x4200 + i * 10 + j); /* distinct low bytes, high byte ignored */
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 3, N, wb), NTPU_DEV_OK);

    cr_assert_eq(load_w(dev, 0, 3), NTPU_DEV_OK);
    identity_matmul(dev, N, got);
    for (unsigned i = 0; i < N; i++)
        for (unsigned j = 0; j < N; j++)
            cr_assert_eq((int32_t)got[i * N + j], lo8(wb[i * N + j]), "W[%u][%u]", i, j);

    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE, 3), NTPU_DEV_OK);
    identity_matmul(dev, N, got);
    for (unsigned i = 0; i < N; i++)
        for (unsigned j = 0; j < N; j++)
            cr_assert_eq((int32_t)got[i * N + j], lo8(wb[j * N + i]), "W^T[%u][%u]", i, j);
}

Test(ref_model, weights_zero_after_reset_and_pending_flag)
{
    uint16_t w1[64 * 64], w2[64 * 64];
    uint32_t got[64 * 64];
    for (unsigned i = 0; i < N * N; i++) {
        w1[i] = (uint16_t)(rnd() & 0xFF);
        w2[i] = (uint16_t)(rnd() & 0xFF);
    }
    /* before any LOAD_W the active weights are zero */
    uint32_t junk[64];
    for (unsigned i = 0; i < N; i++)
        junk[i] = 0xDEADBEEF;
    cr_assert_eq(write_acc(dev, N, 0, 1, junk), NTPU_DEV_OK);
    identity_matmul(dev, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 0);

    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w1), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, N, N, w2), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    /* the tile is taken at LOAD_W: overwriting WB afterwards changes nothing */
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w2), NTPU_DEV_OK);
    identity_matmul(dev, N, got);
    for (unsigned i = 0; i < N * N; i++)
        cr_assert_eq((int32_t)got[i], lo8(w1[i]));
    /* a MATMUL without a new LOAD_W reuses the active weights */
    identity_matmul(dev, N, got);
    for (unsigned i = 0; i < N * N; i++)
        cr_assert_eq((int32_t)got[i], lo8(w1[i]));
    /* two LOAD_Ws in a row: the later wins */
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE, N), NTPU_DEV_OK);
    identity_matmul(dev, N, got);
    for (unsigned i = 0; i < N; i++)
        for (unsigned j = 0; j < N; j++)
            cr_assert_eq((int32_t)got[i * N + j], lo8(w2[j * N + i]));
    /* a LOAD_W with an error loads nothing */
    cr_assert_eq(load_w(dev, 0, N), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE | 0x02, N), NTPU_DEV_ERR_ARG);
    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE, WB_ROWS - N + 1), NTPU_DEV_ERR_RANGE);
    identity_matmul(dev, N, got);
    for (unsigned i = 0; i < N * N; i++)
        cr_assert_eq((int32_t)got[i], lo8(w2[i]));
}

Test(ref_model, int8_accumulate_and_counters)
{
    uint16_t a[64], w[64 * 64];
    uint32_t got[64];
    for (unsigned i = 0; i < N; i++)
        a[i] = (uint16_t)(rnd() & 0xFF);
    for (unsigned i = 0; i < N * N; i++)
        w[i] = (uint16_t)(rnd() & 0xFF);
    uint64_t c[NTPU_CNT_COUNT];
    counters(dev, NTPU_COUNTERS_CLEAR, c);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, 1, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, 0, 0, 0, 1), NTPU_DEV_OK);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(matmul(dev, NTPU_MATMUL_ACCUMULATE, 0, 0, 1), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, 0, 100, 17), NTPU_DEV_OK);
    read_acc(dev, N, 0, 1, got);
    for (unsigned n = 0; n < N; n++) {
        int32_t want = 0;
        for (unsigned k = 0; k < N; k++)
            want += lo8(a[k]) * lo8(w[k * N + n]);
        cr_assert_eq((int32_t)got[n], 5 * want);
    }
    counters(dev, 0, c);
    cr_expect_eq(c[NTPU_CNT_MACS], (uint64_t)(5 + 17) * N * N);
    cr_expect_geq(c[NTPU_CNT_ARRAY_BUSY], 22);
    /* The estimate counts the link's cycles: link_bytes bytes per cycle. */
    cr_expect_gt(c[NTPU_CNT_CYCLES], c[NTPU_CNT_RX_BYTES] / ntpu_ref_default_config().link_bytes);
    counters(dev, NTPU_COUNTERS_CLEAR, c);
    cr_expect_eq(c[NTPU_CNT_MACS], (uint64_t)(5 + 17) * N * N, "CLEAR zeroes after reading");
    counters(dev, 0, c);
    cr_expect_eq(c[NTPU_CNT_MACS], 0);
    cr_expect_eq(c[NTPU_CNT_RX_BYTES], 10, "only this COUNTERS frame since the clear");
    cr_expect_eq(c[NTPU_CNT_TX_BYTES], 81, "only the clearing COUNTERS' reply");
    /* an erroring MATMUL counts no MACs */
    cr_assert_eq(matmul(dev, 0, 0, ACC_ROWS - 1, 2), NTPU_DEV_ERR_RANGE);
    counters(dev, 0, c);
    cr_expect_eq(c[NTPU_CNT_MACS], 0);
}

Test(ref_model, byte_counters_count_the_link)
{
    uint64_t c[NTPU_CNT_COUNT];
    counters(dev, NTPU_COUNTERS_CLEAR, c);
    cr_expect_eq(c[NTPU_CNT_RX_BYTES], 10);
    cr_expect_eq(c[NTPU_CNT_TX_BYTES], 0);
    uint8_t junk[7] = {1, 2, 3, 4, 5, 6, 7};
    ntpu_ref_write(dev, junk, sizeof junk);
    cr_assert_eq(op0(dev, NTPU_OP_INFO), NTPU_DEV_OK);
    counters(dev, 0, c);
    cr_expect_eq(c[NTPU_CNT_RX_BYTES], 7 + 9 + 10);
    cr_expect_eq(c[NTPU_CNT_TX_BYTES], 81 + 49); /* COUNTERS reply, INFO reply (40-byte ID block) */
}

Test(ref_model, nop_and_fence)
{
    cr_assert_eq(op0(dev, NTPU_OP_NOP), NTPU_DEV_OK);
    cr_assert_eq(rep.len, 0);
    cr_assert_eq(op0(dev, NTPU_OP_FENCE), NTPU_DEV_OK);
    cr_assert_eq(rep.len, 0);
}

/* ---------------------------------------------------------------- errors */

static uint8_t run_len(const uint8_t *p, size_t len)
{
    return run(dev, p, len);
}

Test(ref_model, error_length_in_header_is_immediate)
{
    uint8_t hdr[4] = {NTPU_SOF_CMD, 0x42, 0, 0};
    ntpu_ref_write(dev, hdr, 4);
    get_reply(dev, &rep);
    cr_assert_eq(rep.seq, 0x42);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(ntpu_ref_pending(dev), 0);

    put16(hdr + 2, 4113);
    hdr[1] = 0x43;
    ntpu_ref_write(dev, hdr, 4);
    get_reply(dev, &rep);
    cr_assert_eq(rep.seq, 0x43);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_LENGTH);

    /* hunting resumes right after LEN: a frame glued on is executed */
    uint8_t buf[64];
    memcpy(buf, hdr, 4);
    put16(buf + 2, 0xFFFF);
    uint8_t seq = next_seq++;
    size_t n = 4 + make_frame(buf + 4, seq, (const uint8_t[]){NTPU_OP_NOP}, 1);
    ntpu_ref_write(dev, buf, n);
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_LENGTH);
    get_reply(dev, &rep);
    cr_assert_eq(rep.seq, seq);
    cr_assert_eq(rep.status, NTPU_DEV_OK);

    /* LEN = max_payload passes the header check: the opcode check answers */
    static uint8_t big[4112];
    big[0] = 0x10;
    cr_assert_eq(run_len(big, sizeof big), NTPU_DEV_ERR_OPCODE);
}

Test(ref_model, every_error_status)
{
    uint8_t c[6 + 4 * 64 + 8] = {0};

    /* ERR_OPCODE, whatever the length */
    for (unsigned op = 0x10; op <= 0xFF; op++) {
        c[0] = (uint8_t)op;
        cr_assert_eq(run_len(c, 1 + op % 7), NTPU_DEV_ERR_OPCODE, "op 0x%02x", op);
    }
    memset(c, 0, sizeof c);

    /* ERR_LENGTH: wrong for the opcode */
    const struct {
        uint8_t op;
        size_t len;
    } bad_len[] = {
        {NTPU_OP_NOP, 2},      {NTPU_OP_INFO, 2},     {NTPU_OP_WRITE_MEM, 5}, {NTPU_OP_WRITE_MEM, 1},
        {NTPU_OP_READ_MEM, 5}, {NTPU_OP_READ_MEM, 7}, {NTPU_OP_LOAD_W, 3},    {NTPU_OP_LOAD_W, 5},
        {NTPU_OP_MATMUL, 7},   {NTPU_OP_MATMUL, 9},   {NTPU_OP_FENCE, 2},     {NTPU_OP_STATUS, 2},
        {NTPU_OP_COUNTERS, 1}, {NTPU_OP_COUNTERS, 3},
    };
    for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++) {
        c[0] = bad_len[i].op;
        cr_assert_eq(run_len(c, bad_len[i].len), NTPU_DEV_ERR_LENGTH, "op %u len %zu", bad_len[i].op, bad_len[i].len);
    }
    /* WRITE_MEM data not matching rows; READ_MEM reply over max_payload */
    c[0] = NTPU_OP_WRITE_MEM;
    c[1] = NTPU_MEM_UB;
    put16(c + 4, 1);
    cr_assert_eq(run_len(c, 6 + 2 * N - 1), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(run_len(c, 6 + 2 * N + 1), NTPU_DEV_ERR_LENGTH);
    put16(c + 4, 0);
    cr_assert_eq(run_len(c, 8), NTPU_DEV_ERR_LENGTH);
    c[0] = NTPU_OP_READ_MEM;
    put16(c + 4, (4112 - 1) / (2 * N) + 1);
    cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_LENGTH);
    put16(c + 4, (4112 - 1) / (2 * N));
    cr_assert_eq(run_len(c, 6), NTPU_DEV_OK);
    c[1] = NTPU_MEM_ACC;
    put16(c + 4, (4112 - 1) / (4 * N) + 1);
    cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_LENGTH);

    /* ERR_MEM (3 is PM and 4 is OS, 1.4) */
    memset(c, 0, sizeof c);
    for (unsigned mem = 5; mem < 256; mem += 41) {
        c[0] = NTPU_OP_READ_MEM;
        c[1] = (uint8_t)mem;
        cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_MEM);
        c[0] = NTPU_OP_WRITE_MEM;
        cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_MEM);
    }

    /* ERR_ARG: reserved flag bits */
    memset(c, 0, sizeof c);
    for (unsigned bit = 1; bit < 8; bit++) {
        c[0] = NTPU_OP_LOAD_W;
        c[1] = (uint8_t)(1u << bit);
        cr_assert_eq(run_len(c, 4), NTPU_DEV_ERR_ARG);
        c[0] = NTPU_OP_COUNTERS;
        cr_assert_eq(run_len(c, 2), NTPU_DEV_ERR_ARG);
        if (bit >= 5) { /* bits 2, 3, 4 are TRANSPOSE_A, CONV, CONV_T (1.5); with TRANSPOSE_A, LEN 10 */
            c[0] = NTPU_OP_MATMUL;
            cr_assert_eq(run_len(c, 8), NTPU_DEV_ERR_ARG);
            c[1] |= NTPU_MATMUL_TRANSPOSE_A;
            cr_assert_eq(run_len(c, 10), NTPU_DEV_ERR_ARG);
        }
    }

    /* ERR_RANGE, and the last valid address of each check */
    memset(c, 0, sizeof c);
    const struct {
        unsigned mem, last;
    } mems[] = {{0, UB_ROWS}, {1, WB_ROWS}, {2, ACC_ROWS}};
    for (size_t i = 0; i < 3; i++) {
        c[0] = NTPU_OP_READ_MEM;
        c[1] = (uint8_t)mems[i].mem;
        put16(c + 2, mems[i].last - 2);
        put16(c + 4, 2);
        cr_assert_eq(run_len(c, 6), NTPU_DEV_OK);
        put16(c + 2, mems[i].last - 1);
        cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_RANGE);
        put16(c + 2, 0xFFFF);
        put16(c + 4, 1);
        cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_RANGE);
        put16(c + 2, mems[i].last); /* an empty range ending at the end */
        put16(c + 4, 0);
        cr_assert_eq(run_len(c, 6), NTPU_DEV_OK);
        put16(c + 2, mems[i].last + 1);
        cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_RANGE);
    }
    c[0] = NTPU_OP_WRITE_MEM;
    c[1] = NTPU_MEM_ACC;
    put16(c + 2, ACC_ROWS);
    put16(c + 4, 1);
    cr_assert_eq(run_len(c, 6 + 4 * N), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(load_w(dev, 0, WB_ROWS - N), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, WB_ROWS - N + 1), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE, 0xFFFF), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul(dev, 0, UB_ROWS - 4, ACC_ROWS - 4, 4), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, 0, UB_ROWS - 3, 0, 4), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul(dev, 0, 0, ACC_ROWS - 3, 4), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul(dev, 0, 0xFFFF, 0xFFFF, 0xFFFF), NTPU_DEV_ERR_RANGE);
}

Test(ref_model, error_check_order)
{
    uint8_t c[64] = {0};
    /* CRC before opcode */
    size_t n = make_frame(txbuf, 9, (const uint8_t[]){0x77}, 1);
    txbuf[n - 1] ^= 0x01;
    ntpu_ref_write(dev, txbuf, n);
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_CRC);
    cr_assert_eq(rep.seq, 9);
    /* opcode before length */
    c[0] = 0x10;
    cr_assert_eq(run_len(c, 40), NTPU_DEV_ERR_OPCODE);
    /* fixed-part length before memory id */
    c[0] = NTPU_OP_READ_MEM;
    c[1] = 7;
    cr_assert_eq(run_len(c, 7), NTPU_DEV_ERR_LENGTH);
    c[0] = NTPU_OP_WRITE_MEM;
    cr_assert_eq(run_len(c, 5), NTPU_DEV_ERR_LENGTH);
    /* memory id before the data length and range */
    put16(c + 2, 0xFFFF);
    put16(c + 4, 3);
    cr_assert_eq(run_len(c, 7), NTPU_DEV_ERR_MEM);
    /* fixed-part length before flags */
    c[0] = NTPU_OP_MATMUL;
    c[1] = 0xF7; /* CONV clear */
    cr_assert_eq(run_len(c, 9), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(run_len(c, 8), NTPU_DEV_ERR_LENGTH, "TRANSPOSE_A set: LEN must be 10");
    /* flags before range */
    put16(c + 2, 0xFFFF);
    put16(c + 6, 0xFFFF);
    cr_assert_eq(run_len(c, 10), NTPU_DEV_ERR_ARG);
    c[1] = 0xF3;
    cr_assert_eq(run_len(c, 8), NTPU_DEV_ERR_ARG);
    c[0] = NTPU_OP_LOAD_W;
    cr_assert_eq(run_len(c, 4), NTPU_DEV_ERR_ARG);
    /* data length before range */
    memset(c, 0, sizeof c);
    c[0] = NTPU_OP_WRITE_MEM;
    put16(c + 2, 0xFFFF);
    put16(c + 4, 1);
    cr_assert_eq(run_len(c, 7), NTPU_DEV_ERR_LENGTH);
    c[0] = NTPU_OP_READ_MEM;
    put16(c + 4, 4000);
    cr_assert_eq(run_len(c, 6), NTPU_DEV_ERR_LENGTH);
}

Test(ref_model, status_block_counts)
{
    uint8_t last;
    uint32_t errors, commands, dropped;
    status_block(dev, &last, &errors, &commands, &dropped);
    cr_expect_eq(last, 0);
    cr_expect_eq(errors, 0);
    cr_expect_eq(commands, 0, "the STATUS itself is not counted in its reply");
    cr_expect_eq(dropped, 0);

    cr_assert_eq(op0(dev, NTPU_OP_NOP), NTPU_DEV_OK);
    cr_assert_eq(op0(dev, 0x30), NTPU_DEV_ERR_OPCODE);
    cr_assert_eq(load_w(dev, 0x80, 0), NTPU_DEV_ERR_ARG);
    uint8_t junk[5] = {0x00, 0x5A, 0x11, 0xFF, 0xA4};
    ntpu_ref_write(dev, junk, sizeof junk);
    cr_assert_eq(ntpu_ref_pending(dev), 0, "dropped bytes get no reply");
    cr_assert_eq(op0(dev, NTPU_OP_INFO), NTPU_DEV_OK);
    status_block(dev, &last, &errors, &commands, &dropped);
    cr_expect_eq(last, NTPU_DEV_ERR_ARG);
    cr_expect_eq(errors, 2);
    cr_expect_eq(commands, 3, "STATUS, NOP, INFO");
    cr_expect_eq(dropped, 5);

    /* CRC and header-length errors count too */
    size_t n = make_frame(txbuf, 1, (const uint8_t[]){NTPU_OP_NOP}, 1);
    txbuf[4] ^= 0x80;
    ntpu_ref_write(dev, txbuf, n);
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_CRC);
    status_block(dev, &last, &errors, &commands, &dropped);
    cr_expect_eq(last, NTPU_DEV_ERR_CRC);
    cr_expect_eq(errors, 3);
    cr_expect_eq(commands, 4);
}

/* ---------------------------------------------------------------- the link */

Test(ref_model, frames_run_strictly_in_seq_order)
{
    uint16_t v[64] = {0};
    for (unsigned k = 0; k < N; k++)
        v[k] = 0x1111;
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 3, 1, v), NTPU_DEV_OK);
    /* a frame out of order (here: the one after a lost frame) is refused, not run */
    uint8_t c[6 + 2 * 64] = {NTPU_OP_WRITE_MEM, NTPU_MEM_UB, 3, 0, 1, 0};
    memset(c + 6, 0x22, 2 * N);
    uint8_t ahead = (uint8_t)(next_seq + 1);
    ntpu_ref_write(dev, txbuf, make_frame(txbuf, ahead, c, 6 + 2 * N));
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_SEQ);
    cr_assert_eq(rep.seq, ahead, "the SEQ as received");
    cr_assert_eq(rep.len, 0);
    /* an old SEQ (a frame sent again that had already run) is refused too */
    ntpu_ref_write(dev, txbuf, make_frame(txbuf, (uint8_t)(next_seq - 1), c, 6 + 2 * N));
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_SEQ);
    /* SYNC: any SEQ, runs nothing, reports expected_seq, changes nothing */
    for (unsigned s = 0; s < 256; s += 51) {
        ntpu_ref_write(dev, txbuf, make_frame(txbuf, (uint8_t)s, (const uint8_t[]){NTPU_OP_SYNC}, 1));
        get_reply(dev, &rep);
        cr_assert_eq(rep.status, NTPU_DEV_OK);
        cr_assert_eq(rep.seq, s);
        cr_assert_eq(rep.len, 1);
        cr_assert_eq(rep.data[0], next_seq);
    }
    ntpu_ref_write(dev, txbuf, make_frame(txbuf, next_seq, (const uint8_t[]){NTPU_OP_SYNC, 0}, 2));
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_LENGTH, "SYNC's LEN is 1");
    cr_assert_eq(read_mem(dev, NTPU_MEM_UB, 3, 1), NTPU_DEV_OK);
    cr_assert_eq(get16(rep.data), 0x1111, "neither refused write ran");
    /* the expected SEQ runs, and so does the one after it */
    cr_assert_eq(run(dev, c, 6 + 2 * N), NTPU_DEV_OK);
    cr_assert_eq(read_mem(dev, NTPU_MEM_UB, 3, 1), NTPU_DEV_OK);
    cr_assert_eq(get16(rep.data), 0x2222);
    /* errors count ERR_SEQ; a command rejected with a status still took its place in the order */
    uint8_t last;
    uint32_t errors, commands, dropped;
    status_block(dev, &last, &errors, &commands, &dropped);
    cr_assert_eq(errors, 3);
    cr_assert_eq(last, NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(run_len((const uint8_t[]){NTPU_OP_NOP, 0}, 2), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(op0(dev, NTPU_OP_NOP), NTPU_DEV_OK);
}

Test(ref_model, flipped_bit_frame_is_not_executed)
{
    uint8_t before[4096 + 6];
    uint8_t c[6 + 4 * 64];
    c[0] = NTPU_OP_WRITE_MEM;
    c[1] = NTPU_MEM_ACC;
    put16(c + 2, 5);
    put16(c + 4, 1);
    for (unsigned i = 0; i < 4 * N; i++)
        c[6 + i] = (uint8_t)(i + 1);
    size_t len = 6 + 4 * N;
    cr_assert_eq(read_mem(dev, NTPU_MEM_ACC, 5, 1), NTPU_DEV_OK);
    memcpy(before, rep.data, rep.len);
    /* every bit of SEQ, LEN-preserving payload bytes and CRC, one at a time */
    for (size_t byte = 1; byte < len + NTPU_FRAME_OVERHEAD; byte++) {
        if (byte == 2 || byte == 3)
            continue; /* LEN: changes the framing, covered by the resync tests */
        for (unsigned bit = 0; bit < 8; bit++) {
            size_t n = make_frame(txbuf, 0x20, c, len);
            txbuf[byte] ^= (uint8_t)(1u << bit);
            ntpu_ref_write(dev, txbuf, n);
            get_reply(dev, &rep);
            cr_assert_eq(rep.status, NTPU_DEV_ERR_CRC, "byte %zu bit %u", byte, bit);
            cr_assert_eq(rep.seq, byte == 1 ? (uint8_t)(0x20 ^ (1u << bit)) : 0x20, "SEQ as received");
            cr_assert_eq(ntpu_ref_pending(dev), 0);
        }
    }
    cr_assert_eq(read_mem(dev, NTPU_MEM_ACC, 5, 1), NTPU_DEV_OK);
    cr_assert_eq(memcmp(rep.data, before, rep.len), 0, "memory unchanged");
    /* the unflipped frame does write */
    cr_assert_eq(run(dev, c, len), NTPU_DEV_OK);
    cr_assert_eq(read_mem(dev, NTPU_MEM_ACC, 5, 1), NTPU_DEV_OK);
    cr_assert_eq(memcmp(rep.data, c + 6, 4 * N), 0);
}

Test(ref_model, garbage_then_resync)
{
    static uint8_t junk[20000], replies[200000];
    for (int round = 0; round < 50; round++) {
        size_t n = 1 + rnd() % sizeof junk;
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)rnd();
        for (int k = 0; k < 5; k++) { /* fake headers, some with plausible lengths */
            size_t at = rnd() % n;
            junk[at] = NTPU_SOF_CMD;
            if (at + 3 < n && (rnd() & 1))
                put16(junk + at + 2, (unsigned)(rnd() % 5000));
        }
        ntpu_ref_write(dev, junk, n);
        /* the recipe of docs/protocol.md: max_payload + 8 zeros, then SYNC (any SEQ) */
        static uint8_t zeros[4112 + 8];
        ntpu_ref_write(dev, zeros, sizeof zeros);
        uint8_t sync_seq = (uint8_t)(0x80 + round);
        ntpu_ref_write(dev, txbuf, make_frame(txbuf, sync_seq, (const uint8_t[]){NTPU_OP_SYNC}, 1));
        /* discard replies until the SYNC's: they must still be well-formed frames */
        size_t have = ntpu_ref_read(dev, replies, sizeof replies);
        cr_assert_eq(ntpu_ref_pending(dev), 0);
        size_t i = 0;
        int found = 0;
        while (i < have) {
            cr_assert_eq(replies[i], NTPU_SOF_REPLY, "round %d: reply frame at %zu", round, i);
            size_t len = get16(replies + i + 2);
            cr_assert_leq(i + len + 8, have);
            cr_assert_eq(get32(replies + i + 4 + len), (uint32_t)crc32(0L, replies + i + 1, (uInt)(3 + len)));
            if (replies[i + 1] == sync_seq && len == 2 && replies[i + 4] == NTPU_DEV_OK && i + 10 == have) {
                /* junk has a valid CRC only by a 2^-32 chance: nothing ran */
                cr_assert_eq(replies[i + 5], next_seq, "round %d: SYNC says expected_seq", round);
                found = 1;
            }
            i += len + 8;
        }
        cr_assert(found, "round %d: the SYNC's reply comes last", round);
        /* and the link works */
        uint16_t v[64];
        for (unsigned k = 0; k < N; k++)
            v[k] = (uint16_t)rnd();
        cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 77, 1, v), NTPU_DEV_OK);
        cr_assert_eq(read_mem(dev, NTPU_MEM_UB, 77, 1), NTPU_DEV_OK);
        for (unsigned k = 0; k < N; k++)
            cr_assert_eq(get16(rep.data + 2 * k), v[k]);
    }
}

Test(ref_model, dropped_bytes_before_sof)
{
    uint8_t junk[300];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i == 0xA5 ? 0 : i); /* no SOF anywhere */
    ntpu_ref_write(dev, junk, sizeof junk);
    cr_assert_eq(ntpu_ref_pending(dev), 0);
    uint8_t last;
    uint32_t errors, commands, dropped;
    status_block(dev, &last, &errors, &commands, &dropped);
    cr_expect_eq(dropped, 300);
    cr_expect_eq(errors, 0);
}

Test(ref_model, chunking_does_not_matter)
{
    /* the same stream fed whole, byte by byte and in random pieces gives the same replies */
    static uint8_t stream[60000], out1[200000], out2[200000], out3[200000];
    size_t n = 0;
    for (int k = 0; k < 300; k++) {
        uint8_t c[600] = {0};
        size_t len;
        switch (rnd() % 8) {
        case 0:
            c[0] = NTPU_OP_WRITE_MEM;
            c[1] = (uint8_t)(rnd() % 3);
            put16(c + 2, (unsigned)(rnd() % 64));
            put16(c + 4, 2);
            len = 6 + 2 * row_bytes(N, c[1]);
            for (size_t i = 6; i < len; i++)
                c[i] = (uint8_t)rnd();
            break;
        case 1:
            c[0] = NTPU_OP_READ_MEM;
            c[1] = (uint8_t)(rnd() % 3);
            put16(c + 2, (unsigned)(rnd() % 64));
            put16(c + 4, 3);
            len = 6;
            break;
        case 2:
            c[0] = NTPU_OP_LOAD_W;
            c[1] = (uint8_t)(rnd() & 1);
            put16(c + 2, (unsigned)(rnd() % 64));
            len = 4;
            break;
        case 3:
            c[0] = NTPU_OP_MATMUL;
            c[1] = (uint8_t)(rnd() & 3);
            put16(c + 2, (unsigned)(rnd() % 64));
            put16(c + 4, (unsigned)(rnd() % 64));
            put16(c + 6, (unsigned)(rnd() % 8));
            len = 8;
            break;
        case 4:
            c[0] = (uint8_t)(NTPU_OP_STATUS + rnd() % 2);
            len = c[0] == NTPU_OP_STATUS ? 1 : 2;
            break;
        case 5: /* MATMUL TRANSPOSE_A */
            c[0] = NTPU_OP_MATMUL;
            c[1] = (uint8_t)(NTPU_MATMUL_TRANSPOSE_A | (rnd() & 3));
            put16(c + 2, (unsigned)(rnd() % 64));
            put16(c + 4, (unsigned)(rnd() % 64));
            put16(c + 6, (unsigned)(rnd() % 3) * N);
            put16(c + 8, (unsigned)(rnd() % 20));
            len = 10;
            break;
        case 6: /* the vector unit, some flags invalid */
            c[0] = (uint8_t)(NTPU_OP_ACT + rnd() % 3);
            c[1] = (uint8_t)(rnd() % 20);
            put16(c + 2, (unsigned)(rnd() % 64));
            put16(c + 4, (unsigned)(rnd() % 64));
            put16(c + 6, (unsigned)(rnd() % 8));
            put16(c + 8, (unsigned)(rnd() % 64));
            len = c[0] == NTPU_OP_COLSUM ? 8 : 10;
            break;
        default: /* garbage */
            len = rnd() % 40;
            for (size_t i = 0; i < len; i++)
                stream[n++] = (uint8_t)rnd();
            continue;
        }
        n += make_frame(stream + n, (uint8_t)k, c, len);
    }
    cr_assert_lt(n, sizeof stream);
    size_t got[3];
    for (int way = 0; way < 3; way++) {
        ntpu_ref *r = ntpu_ref_new(NULL);
        cr_assert(r);
        size_t i = 0;
        while (i < n) {
            size_t step = way == 0 ? n : way == 1 ? 1 : 1 + rnd() % 700;
            if (step > n - i)
                step = n - i;
            ntpu_ref_write(r, stream + i, step);
            i += step;
        }
        uint8_t *out = way == 0 ? out1 : way == 1 ? out2 : out3;
        got[way] = 0;
        size_t k;
        while ((k = ntpu_ref_read(r, out + got[way], 1 + rnd() % 100)) > 0) /* read in pieces too */
            got[way] += k;
        ntpu_ref_free(r);
    }
    cr_assert_gt(got[0], 1000);
    cr_assert_eq(got[1], got[0]);
    cr_assert_eq(got[2], got[0]);
    cr_assert_eq(memcmp(out1, out2, got[0]), 0);
    cr_assert_eq(memcmp(out1, out3, got[0]), 0);
}

Test(ref_model, fuzz_random_frames_one_reply_each)
{
    /* well-framed random commands: each gets exactly one reply, in order */
    static uint8_t c[4112];
    for (int k = 0; k < 3000; k++) {
        size_t len = 1 + (rnd() % 4 ? rnd() % 12 : rnd() % 4112);
        for (size_t i = 0; i < len; i++)
            c[i] = (uint8_t)rnd();
        c[0] = (uint8_t)(rnd() % 17); /* every opcode and 0x10, the first unknown one */
        if (rnd() & 1) {              /* small fields, so some pass the checks */
            c[1] = (uint8_t)(rnd() % 4);
            if (len > 5) {
                c[3] = c[5] = 0;
                c[4] = (uint8_t)(rnd() % 4);
            }
            if (len > 7)
                c[7] = 0;
        }
        uint8_t seq = send(dev, c, len);
        if (c[0] == NTPU_OP_SYNC)
            next_seq--; /* SYNC takes no place in the order */
        get_reply(dev, &rep);
        cr_assert_eq(rep.seq, seq);
        cr_assert_leq(rep.status, NTPU_DEV_ERR_ARG, "in order, so never ERR_SEQ");
        if (c[0] == NTPU_OP_SYNC && rep.status == NTPU_DEV_OK)
            cr_assert_eq(rep.data[0], next_seq);
        cr_assert_eq(ntpu_ref_pending(dev), 0);
    }
}

/* VEC_EN = 0's model: feature VECTOR clear, the vector opcodes unknown at any
 * length (the opcode check comes before the length check), the rest unchanged. */
Test(ref_model, no_vector_unit)
{
    ntpu_ref_config c = {4, 16, 8, 32, 73, 1, 0, 0, 0, 0, 0, 0};
    ntpu_ref *r = ntpu_ref_new(&c);
    cr_assert(r);
    cr_assert_eq(op0(r, NTPU_OP_INFO), NTPU_DEV_OK);
    cr_expect_eq(rep.data[9], NTPU_FEATURE_TRANSPOSE_BIT | NTPU_FEATURE_TRANSPOSE_A_BIT | NTPU_FEATURE_CONV_BIT);
    uint8_t v[12] = {0};
    for (uint8_t op = NTPU_OP_ACT; op <= NTPU_OP_COLSUM; op++)
        for (size_t len = 1; len <= sizeof v; len++) {
            v[0] = op;
            cr_expect_eq(run(r, v, len), NTPU_DEV_ERR_OPCODE, "op 0x%02x len %zu", op, len);
        }
    cr_expect_eq(op0(r, NTPU_OP_FENCE), NTPU_DEV_OK);
    uint8_t mm[8] = {NTPU_OP_MATMUL, NTPU_MATMUL_BF16};
    put16(mm + 6, 4);
    cr_expect_eq(run(r, mm, sizeof mm), NTPU_DEV_OK);
    ntpu_ref_free(r);
}

/* TRANSPOSE_A_EN = 0's model: feature TRANSPOSE_A clear; MATMUL with the flag is
 * checked for its length (10) first, then refused as a reserved flag; plain MATMUL unchanged. */
Test(ref_model, no_transpose_a)
{
    ntpu_ref_config c = {4, 16, 8, 32, 73, 0, 1, 0, 0, 0, 0, 0};
    ntpu_ref *r = ntpu_ref_new(&c);
    cr_assert(r);
    cr_assert_eq(op0(r, NTPU_OP_INFO), NTPU_DEV_OK);
    cr_expect_eq(rep.data[9], NTPU_FEATURE_TRANSPOSE_BIT | NTPU_FEATURE_VECTOR_BIT | NTPU_FEATURE_OPTIM_BIT |
                                  NTPU_FEATURE_CONV_BIT | NTPU_FEATURE_POOL_BIT);
    uint8_t mt[10] = {NTPU_OP_MATMUL, NTPU_MATMUL_BF16 | NTPU_MATMUL_TRANSPOSE_A};
    put16(mt + 6, 4);
    put16(mt + 8, 4);
    cr_expect_eq(run(r, mt, 8), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(run(r, mt, sizeof mt), NTPU_DEV_ERR_ARG);
    uint8_t mm[8] = {NTPU_OP_MATMUL, NTPU_MATMUL_BF16};
    put16(mm + 6, 4);
    cr_expect_eq(run(r, mm, sizeof mm), NTPU_DEV_OK);
    ntpu_ref_free(r);
}

Test(ref_model, fuzz_random_bytes_never_crash)
{
    static uint8_t junk[1 << 16], out[1 << 16];
    ntpu_ref_config small = {2, 4, 2, 3, 73, 0, 0, 0, 0, 0, 0, 0};
    ntpu_ref *r = ntpu_ref_new(&small);
    cr_assert(r);
    for (int k = 0; k < 200; k++) {
        size_t n = rnd() % sizeof junk;
        for (size_t i = 0; i < n; i++) /* dense in SOFs and small lengths */
            junk[i] = (rnd() % 8 == 0) ? NTPU_SOF_CMD : (uint8_t)(rnd() % (k & 1 ? 256 : 16));
        ntpu_ref_write(r, junk, n);
        ntpu_ref_write(dev, junk, n);
        while (ntpu_ref_read(r, out, sizeof out) > 0) {
        }
        while (ntpu_ref_read(dev, out, sizeof out) > 0) {
        }
    }
    ntpu_ref_write(r, NULL, 5);
    cr_assert_eq(ntpu_ref_read(r, NULL, 5), 0);
    ntpu_ref_free(r);
}

Test(ref_model, small_and_large_arrays)
{
    const unsigned sizes[] = {2, 4, 16, 64};
    for (size_t s = 0; s < 4; s++) {
        unsigned n = sizes[s];
        ntpu_ref_config cfg = {n, 64, 2 * n, 64, 65535, 0, 0, 0, 0, 0, 0, 0};
        ntpu_ref *r = new_model(&cfg);
        cr_assert(r);
        enum { M = 5 };
        static uint16_t a[M * 64], w[64 * 64];
        static uint32_t got[M * 64];
        for (unsigned i = 0; i < M * n; i++)
            a[i] = (uint16_t)rnd();
        for (unsigned i = 0; i < n * n; i++)
            w[i] = (uint16_t)rnd();
        cr_assert_eq(write_lanes16(r, n, NTPU_MEM_UB, 1, M, a), NTPU_DEV_OK);
        cr_assert_eq(write_lanes16(r, n, NTPU_MEM_WB, n, n, w), NTPU_DEV_OK);
        cr_assert_eq(load_w(r, NTPU_LOADW_TRANSPOSE, n), NTPU_DEV_OK);
        cr_assert_eq(load_w(r, 0, n + 1), NTPU_DEV_ERR_RANGE);
        cr_assert_eq(matmul(r, 0, 1, 2, M), NTPU_DEV_OK);
        cr_assert_eq(read_mem(r, NTPU_MEM_ACC, 2, M), NTPU_DEV_OK);
        for (unsigned m = 0; m < M; m++)
            for (unsigned j = 0; j < n; j++) {
                int32_t want = 0;
                for (unsigned k = 0; k < n; k++)
                    want += lo8(a[m * n + k]) * lo8(w[j * n + k]); /* transposed: W[k][j] = WB[j][k] */
                got[m * n + j] = get32(rep.data + 4 * (m * n + j));
                cr_assert_eq((int32_t)got[m * n + j], want, "n=%u C[%u][%u]", n, m, j);
            }
        ntpu_ref_free(r);
    }
}

/* ================================================================ version 1.1 */

static uint8_t matmul_t(ntpu_ref *r, unsigned flags, unsigned ub, unsigned acc, unsigned rows, unsigned stride)
{
    uint8_t c[10] = {NTPU_OP_MATMUL, (uint8_t)(flags | NTPU_MATMUL_TRANSPOSE_A)};
    put16(c + 2, ub);
    put16(c + 4, acc);
    put16(c + 6, rows);
    put16(c + 8, stride);
    return run(r, c, 10);
}

/* ACT and RELU_GRAD share a layout; `last` is aux or mask. */
static uint8_t vec_cmd(ntpu_ref *r, uint8_t op, unsigned flags, unsigned src, unsigned dst, unsigned rows,
                       unsigned last)
{
    uint8_t c[10] = {op, (uint8_t)flags};
    put16(c + 2, src);
    put16(c + 4, dst);
    put16(c + 6, rows);
    put16(c + 8, last);
    return run(r, c, op == NTPU_OP_COLSUM ? 8 : 10);
}

static uint8_t act(unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned aux)
{
    return vec_cmd(dev, NTPU_OP_ACT, flags, src, dst, rows, aux);
}

static uint8_t relu_grad(unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned mask)
{
    return vec_cmd(dev, NTPU_OP_RELU_GRAD, flags, src, dst, rows, mask);
}

static uint8_t colsum(unsigned flags, unsigned src, unsigned dst, unsigned rows)
{
    return vec_cmd(dev, NTPU_OP_COLSUM, flags, src, dst, rows, 0);
}

static void read_lanes16(ntpu_ref *r, unsigned n, unsigned mem, unsigned addr, unsigned rows, uint16_t *out)
{
    for (unsigned done = 0, k; done < rows; done += k) {
        k = rows - done < rows_per_frame(n, mem) ? rows - done : rows_per_frame(n, mem);
        cr_assert_eq(read_mem(r, mem, addr + done, k), NTPU_DEV_OK);
        for (size_t i = 0; i < (size_t)k * n; i++)
            out[(size_t)done * n + i] = (uint16_t)get16(rep.data + 2 * i);
    }
}

static void write_acc_rows(ntpu_ref *r, unsigned n, unsigned addr, unsigned rows, const uint32_t *v)
{
    for (unsigned done = 0, k; done < rows; done += k) {
        k = rows - done < rows_per_frame(n, NTPU_MEM_ACC) ? rows - done : rows_per_frame(n, NTPU_MEM_ACC);
        cr_assert_eq(write_acc(r, n, addr + done, k, v + (size_t)done * n), NTPU_DEV_OK);
    }
}

/* fp32 patterns of every class, both signs: zeros, Inf, NaNs with payloads,
 * subnormals, values that overflow bf16 when rounded, and ordinary values
 * close enough together that sums round. */
static uint32_t rnd_f32_any(void)
{
    uint64_t r = rnd();
    uint32_t sign = (uint32_t)(r & 1) << 31, frac = (uint32_t)(r >> 16) & 0x7FFFFFu;
    switch ((r >> 1) % 12) {
    case 0: return sign;
    case 1: return sign | 0x7F800000u;
    case 2: return sign | 0x7F800000u | (frac ? frac : 1);
    case 3: return sign | (frac ? frac : 1);
    case 4: return sign | 0x7F7F8000u | (frac & 0x7FFF); /* bf16 rounds it to Inf, or not */
    default: return sign | (uint32_t)(0x78 + (r >> 8) % 16) << 23 | frac;
    }
}

static uint16_t rnd_bf16_any(void)
{
    uint64_t r = rnd();
    uint16_t sign = (uint16_t)((r & 1) << 15), frac = (uint16_t)((r >> 16) & 0x7F);
    switch ((r >> 1) % 10) {
    case 0: return sign;
    case 1: return sign | 0x7F80;
    case 2: return sign | 0x7F80 | (frac ? frac : 1);
    case 3: return sign | (frac ? frac : 1);
    default: return sign | (uint16_t)((0x78 + (r >> 8) % 16) << 7) | frac;
    }
}

/* fadd of docs/isa.md in double: the sum of two fp32 values rounded to double
 * and then to fp32 is the correctly rounded fp32 sum. */
static double daz(uint32_t u)
{
    if ((u & 0x7F800000u) == 0)
        return (u & 0x80000000u) ? -0.0 : 0.0;
    return (double)ntpu_f32_from_bits(u);
}

static uint32_t fadd_ref(uint32_t a, uint32_t b)
{
    double s = daz(a) + daz(b);
    if (isnan(s))
        return NTPU_F32_CANONICAL_NAN;
    uint32_t r = ntpu_f32_bits((float)s);
    return (r & 0x7F800000u) ? r : r & 0x80000000u;
}

static uint32_t relu_ref(uint32_t u)
{
    float f = ntpu_f32_from_bits(u);
    return isnan(f) ? u : signbit(f) ? 0u : u;
}

/* m > 0 with subnormals read as zero. */
static int positive_ref(uint16_t m)
{
    float f = ntpu_bf16_to_f32(m);
    return f > 0 && fpclassify(f) != FP_SUBNORMAL;
}

/* ---------------------------------------------------------------- an image of the device */

/* The first WIN rows of each memory, as the device should hold them: the
 * vector-unit tests run each command on the device and, as plain loops
 * written from the words of docs/isa.md, on this copy, then compare. */
enum { WIN = 160 };
static uint16_t img_ub[WIN * 64], img_wb[WIN * 64];
static uint32_t img_acc[WIN * 64];

static void img_load(void)
{
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, WIN, img_ub), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, WIN, img_wb), NTPU_DEV_OK);
    write_acc_rows(dev, N, 0, WIN, img_acc);
}

static void img_randomize(void)
{
    for (unsigned i = 0; i < WIN * N; i++) {
        img_ub[i] = rnd_bf16_any();
        img_wb[i] = rnd_bf16_any();
        img_acc[i] = rnd_f32_any();
    }
    img_load();
}

static void img_check(const char *what)
{
    static uint16_t ub[WIN * 64], wb[WIN * 64];
    static uint32_t acc[WIN * 64];
    read_lanes16(dev, N, NTPU_MEM_UB, 0, WIN, ub);
    read_lanes16(dev, N, NTPU_MEM_WB, 0, WIN, wb);
    read_acc(dev, N, 0, WIN, acc);
    for (unsigned i = 0; i < WIN * N; i++) {
        cr_assert_eq(ub[i], img_ub[i], "%s: UB[%u][%u] = 0x%04x, want 0x%04x", what, i / N, i % N, ub[i], img_ub[i]);
        cr_assert_eq(wb[i], img_wb[i], "%s: WB[%u][%u] = 0x%04x, want 0x%04x", what, i / N, i % N, wb[i], img_wb[i]);
        cr_assert_eq(acc[i], img_acc[i], "%s: ACC[%u][%u] = 0x%08x, want 0x%08x", what, i / N, i % N, acc[i],
                     img_acc[i]);
    }
}

/* One result row to where OUT says; `v` holds fp32 bits, or for OUT_INT8 the
 * finished 16-bit lanes. */
static void img_store(unsigned out, unsigned row, const uint32_t *v)
{
    for (unsigned n = 0; n < N; n++) {
        if (out == NTPU_OUT_UB)
            img_ub[row * N + n] = ntpu_bf16_from_f32_bits(v[n]);
        else if (out == NTPU_OUT_WB)
            img_wb[row * N + n] = ntpu_bf16_from_f32_bits(v[n]);
        else if (out == NTPU_OUT_ACC)
            img_acc[row * N + n] = v[n];
        else
            img_ub[row * N + n] = (uint16_t)v[n];
    }
}

static void img_act(unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned aux)
{
    unsigned out = flags & NTPU_OUT_MASK;
    uint32_t bias[64] = {0}, mult[64] = {0}, shift[64] = {0}, v[64];
    for (unsigned n = 0; n < N; n++) { /* once, before row 0 */
        if (flags & NTPU_ACT_BIAS)
            bias[n] = img_acc[aux * N + n];
        if (out == NTPU_OUT_INT8) {
            mult[n] = img_acc[(aux + 1) * N + n];
            shift[n] = img_acc[(aux + 2) * N + n];
        }
    }
    for (unsigned r = 0; r < rows; r++) {
        for (unsigned n = 0; n < N; n++) {
            uint32_t x = img_acc[(src + r) * N + n];
            if (out == NTPU_OUT_INT8) {
                int64_t y = (int32_t)x;
                if (flags & NTPU_ACT_BIAS)
                    y = (int64_t)(int32_t)(uint32_t)((uint64_t)(y + (int32_t)bias[n]) & 0xFFFFFFFFu);
                if ((flags & NTPU_ACT_RELU) && y < 0)
                    y = 0;
                int32_t s = (int32_t)shift[n];
                int8_t q = ntpu_requantize((int32_t)y, (int32_t)mult[n], s < 0 ? 0 : s > 31 ? 31 : s, 0);
                v[n] = (uint16_t)(q < 0 ? 0xFF00u | (uint8_t)q : (uint8_t)q);
            } else {
                if (flags & NTPU_ACT_BIAS)
                    x = fadd_ref(x, bias[n]);
                if (flags & NTPU_ACT_RELU)
                    x = relu_ref(x);
                v[n] = x;
            }
        }
        img_store(out, dst + r, v);
    }
}

static void img_relu_grad(unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned mask)
{
    uint32_t v[64];
    for (unsigned r = 0; r < rows; r++) {
        for (unsigned n = 0; n < N; n++)
            v[n] = positive_ref(img_ub[(mask + r) * N + n]) ? img_acc[(src + r) * N + n] : 0u;
        img_store(flags & NTPU_OUT_MASK, dst + r, v);
    }
}

static void img_colsum(unsigned flags, unsigned src, unsigned dst, unsigned rows)
{
    uint32_t s[64];
    for (unsigned n = 0; n < N; n++) {
        s[n] = (flags & NTPU_COLSUM_ACCUMULATE) ? img_acc[dst * N + n] : 0u;
        for (unsigned r = 0; r < rows; r++)
            s[n] = fadd_ref(s[n], img_acc[(src + r) * N + n]);
    }
    for (unsigned n = 0; n < N; n++)
        img_acc[dst * N + n] = s[n];
}

static const unsigned outs[3] = {NTPU_OUT_UB, NTPU_OUT_WB, NTPU_OUT_ACC};

/* ---------------------------------------------------------------- MATMUL TRANSPOSE_A */

/* a[i] of stream row m, from the definition. */
static uint16_t t_lane(const uint16_t *ub, unsigned ub_addr, unsigned stride, unsigned m, unsigned i)
{
    return ub[(ub_addr + (m / N) * stride + i) * N + m % N];
}

Test(ref_model, matmul_transpose_a_int8_and_bf16_with_strides)
{
    const unsigned ROWS_UB = 7 * N + 16;
    static uint16_t ub[(7 * 64 + 16) * 64], w[64 * 64];
    static uint32_t got[3 * 64 * 64], start[3 * 64 * 64];
    for (unsigned i = 0; i < N * N; i++)
        w[i] = rnd_bf16(); /* as int8: its low byte */
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w), NTPU_DEV_OK);
    const unsigned strides[] = {N, N + 3, 2 * N + 1, 1, 0, 3 * N};
    for (size_t k = 0; k < sizeof strides / sizeof strides[0]; k++) {
        for (unsigned flags = 0; flags < 4; flags++) { /* BF16 x ACCUMULATE */
            unsigned stride = strides[k], rows = 3 * N, ub_addr = 5 + (unsigned)k;
            cr_assert_leq(ub_addr + 2 * stride + N, ROWS_UB);
            for (unsigned i = 0; i < ROWS_UB * N; i++)
                ub[i] = (flags & NTPU_MATMUL_BF16) ? rnd_bf16() : (uint16_t)rnd();
            for (unsigned i = 0; i < rows * N; i++)
                start[i] =
                    (flags & NTPU_MATMUL_BF16) ? ntpu_f32_bits((float)(int)(rnd() % 64) - 32.0f) : (uint32_t)rnd();
            cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, ROWS_UB, ub), NTPU_DEV_OK);
            write_acc_rows(dev, N, 40, rows, start);
            cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
            cr_assert_eq(matmul_t(dev, flags, ub_addr, 40, rows, stride), NTPU_DEV_OK);
            read_acc(dev, N, 40, rows, got);
            for (unsigned m = 0; m < rows; m++)
                for (unsigned n = 0; n < N; n++) {
                    uint32_t want;
                    if (flags & NTPU_MATMUL_BF16) {
                        float acc = (flags & NTPU_MATMUL_ACCUMULATE) ? ntpu_f32_from_bits(start[m * N + n]) : 0.0f;
                        for (unsigned i = 0; i < N; i++)
                            acc = acc +
                                  ntpu_bf16_to_f32(t_lane(ub, ub_addr, stride, m, i)) * ntpu_bf16_to_f32(w[i * N + n]);
                        want = ntpu_f32_bits(acc);
                    } else {
                        uint32_t acc = (flags & NTPU_MATMUL_ACCUMULATE) ? start[m * N + n] : 0;
                        for (unsigned i = 0; i < N; i++)
                            acc += (uint32_t)(lo8(t_lane(ub, ub_addr, stride, m, i)) * lo8(w[i * N + n]));
                        want = acc;
                    }
                    cr_assert_eq(got[m * N + n], want, "stride %u flags %u: C[%u][%u] = 0x%08x, want 0x%08x", stride,
                                 flags, m, n, got[m * N + n], want);
                }
        }
    }
}

/* The use docs/isa.md gives: X (B x K) stored as k-tiles, dW = X^T dY with
 * the tiles of dY as weights and no transpose on the host. */
Test(ref_model, matmul_transpose_a_weight_gradient)
{
    enum { BT = 3, KT = 2 }; /* batch and feature tiles */
    const unsigned B = BT * N, K = KT * N, x = 7, wdy = 11, dw = 100;
    static int8_t X[3 * 64][2 * 64], dY[3 * 64][64];
    static uint16_t rows[6 * 64 * 64];
    static uint32_t got[2 * 64 * 64];
    for (unsigned b = 0; b < B; b++) {
        for (unsigned k = 0; k < K; k++)
            X[b][k] = (int8_t)rnd();
        for (unsigned n = 0; n < N; n++)
            dY[b][n] = (int8_t)rnd();
    }
    for (unsigned t = 0; t < KT; t++) /* UB[x + t*B + b] = X[b][t*N ...] */
        for (unsigned b = 0; b < B; b++)
            for (unsigned i = 0; i < N; i++)
                rows[(t * B + b) * N + i] = (uint8_t)X[b][t * N + i];
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, x, KT * B, rows), NTPU_DEV_OK);
    for (unsigned b = 0; b < B; b++)
        for (unsigned n = 0; n < N; n++)
            rows[b * N + n] = (uint8_t)dY[b][n];
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, wdy, B, rows), NTPU_DEV_OK);
    for (unsigned j = 0; j < BT; j++) {
        cr_assert_eq(load_w(dev, 0, wdy + j * N), NTPU_DEV_OK);
        cr_assert_eq(matmul_t(dev, j ? NTPU_MATMUL_ACCUMULATE : 0, x + j * N, dw, K, B), NTPU_DEV_OK);
    }
    read_acc(dev, N, dw, K, got);
    for (unsigned k = 0; k < K; k++)
        for (unsigned n = 0; n < N; n++) {
            int32_t want = 0;
            for (unsigned b = 0; b < B; b++)
                want += X[b][k] * dY[b][n];
            cr_assert_eq((int32_t)got[k * N + n], want, "dW[%u][%u]", k, n);
        }
}

Test(ref_model, matmul_transpose_a_lengths_ranges_and_counters)
{
    uint8_t c[12] = {NTPU_OP_MATMUL, NTPU_MATMUL_TRANSPOSE_A};
    put16(c + 6, N);
    for (size_t len = 1; len <= 12; len++)
        cr_assert_eq(run_len(c, len), len == 10 ? NTPU_DEV_OK : NTPU_DEV_ERR_LENGTH, "LEN %zu", len);
    c[1] = 0;
    for (size_t len = 1; len <= 12; len++)
        cr_assert_eq(run_len(c, len), len == 8 ? NTPU_DEV_OK : NTPU_DEV_ERR_LENGTH, "LEN %zu", len);

    /* rows a multiple of N, checked before the range */
    for (unsigned rows = 1; rows < 3 * N; rows++)
        if (rows % N)
            cr_assert_eq(matmul_t(dev, 0, 0xFFFF, 0xFFFF, rows, 0xFFFF), NTPU_DEV_ERR_ARG, "rows %u", rows);
    cr_assert_eq(matmul_t(dev, NTPU_MATMUL_BF16, 0, 0, 0, 0), NTPU_DEV_OK);

    /* the UB range ends N rows after the last block's start */
    const unsigned blocks = 4, stride = 1000, last = UB_ROWS - N - (blocks - 1) * stride;
    cr_assert_eq(matmul_t(dev, 0, last, 0, blocks * N, stride), NTPU_DEV_OK);
    cr_assert_eq(matmul_t(dev, 0, last + 1, 0, blocks * N, stride), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul_t(dev, 0, last + 1, 0, blocks * N, stride - 1), NTPU_DEV_OK);
    cr_assert_eq(matmul_t(dev, 0, UB_ROWS - N, ACC_ROWS - 100 * N, 100 * N, 0), NTPU_DEV_OK, "stride 0 repeats");
    cr_assert_eq(matmul_t(dev, 0, UB_ROWS - N + 1, 0, 100 * N, 0), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul_t(dev, 0, 0, ACC_ROWS - N + 1, N, 0), NTPU_DEV_ERR_RANGE);
    /* no 16-bit or 32-bit wrap: (rows/N - 1) * stride is large */
    cr_assert_eq(matmul_t(dev, 0, 0, 0, 0xFFFF / N * N, 0xFFFF), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul_t(dev, 0, 1, 0, 2 * N, 0xFFFF), NTPU_DEV_ERR_RANGE);
    /* empty: only ub_addr <= ub_rows */
    cr_assert_eq(matmul_t(dev, 0, UB_ROWS, ACC_ROWS, 0, 0xFFFF), NTPU_DEV_OK);
    cr_assert_eq(matmul_t(dev, 0, UB_ROWS + 1, 0, 0, 0), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul_t(dev, 0, 0, ACC_ROWS + 1, 0, 0), NTPU_DEV_ERR_RANGE);

    /* MACS counts every row of a MATMUL that runs */
    uint64_t cnt[NTPU_CNT_COUNT];
    counters(dev, NTPU_COUNTERS_CLEAR, cnt);
    cr_assert_eq(matmul_t(dev, 0, 0, 0, 2 * N, 3), NTPU_DEV_OK);
    cr_assert_eq(matmul_t(dev, 0, 0, 0, 2 * N, 0xFFFF), NTPU_DEV_ERR_RANGE);
    counters(dev, 0, cnt);
    cr_expect_eq(cnt[NTPU_CNT_MACS], (uint64_t)2 * N * N * N);
}

/* ---------------------------------------------------------------- ACT */

Test(ref_model, act_fp32_every_flag_combination)
{
    for (int round = 0; round < 4; round++) {
        img_randomize();
        for (unsigned f = 0; f < 4; f++)
            for (unsigned o = 0; o < 3; o++) {
                unsigned flags = f | outs[o], rows = 1 + (unsigned)(rnd() % 20);
                unsigned src = (unsigned)(rnd() % (WIN - rows)), aux = (unsigned)(rnd() % WIN);
                unsigned dst = (unsigned)(rnd() % (WIN - rows));
                cr_assert_eq(act(flags, src, dst, rows, aux), NTPU_DEV_OK);
                img_act(flags, src, dst, rows, aux);
                char what[128];
                snprintf(what, sizeof what, "ACT flags 0x%02x src %u dst %u rows %u aux %u", flags, src, dst, rows,
                         aux);
                img_check(what);
            }
    }
}

Test(ref_model, act_fp32_corners_by_hand)
{
    /* lane k%8: x, bias -> with BIAS|RELU to ACC; the spec's words, value by value */
    static const uint32_t x[8] = {0x80000000u, 0xFF800000u, 0xFFC00001u, 0x00000001u,
                                  0x3F800000u, 0x80000001u, 0x7F800000u, 0xBF800000u};
    static const uint32_t b[8] = {0x80000000u, 0x3F800000u, 0x00000000u, 0x00000000u,
                                  0xBF800000u, 0x00000000u, 0xFF800000u, 0x3F000000u};
    static const uint32_t relu_only[8] = {0, 0, 0xFFC00001u, 0x00000001u, 0x3F800000u, 0, 0x7F800000u, 0};
    static const uint32_t bias_relu[8] = {0, 0, NTPU_F32_CANONICAL_NAN, 0, 0, 0, NTPU_F32_CANONICAL_NAN, 0};
    static const uint32_t bias_only[8] = {0x80000000u, 0xFF800000u, NTPU_F32_CANONICAL_NAN, 0,
                                          0,           0,           NTPU_F32_CANONICAL_NAN, 0xBF000000u};
    uint32_t xr[64], br[64], got[64];
    for (unsigned n = 0; n < N; n++) {
        xr[n] = x[n % 8];
        br[n] = b[n % 8];
    }
    cr_assert_eq(write_acc(dev, N, 3, 1, xr), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 4, 1, br), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_ACT_RELU | NTPU_OUT_ACC, 3, 10, 1, 0xFFFF), NTPU_DEV_OK, "aux unused: not checked");
    read_acc(dev, N, 10, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], relu_only[n % 8], "RELU lane %u: 0x%08x", n, got[n]);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_ACC, 3, 10, 1, 4), NTPU_DEV_OK);
    read_acc(dev, N, 10, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], bias_relu[n % 8], "BIAS|RELU lane %u: 0x%08x", n, got[n]);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 3, 10, 1, 4), NTPU_DEV_OK);
    read_acc(dev, N, 10, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], bias_only[n % 8], "BIAS lane %u: 0x%08x", n, got[n]);
    /* no flags, OUT ACC: a copy, bit for bit */
    cr_assert_eq(act(NTPU_OUT_ACC, 3, 10, 1, 0), NTPU_DEV_OK);
    read_acc(dev, N, 10, 1, got);
    cr_assert_eq(memcmp(got, xr, N * sizeof *got), 0);
    /* to bf16: subnormal -> signed zero, NaN quiet with its sign, -0 after RELU is +0 */
    uint16_t h[64];
    cr_assert_eq(act(NTPU_OUT_WB, 3, 0, 1, 0), NTPU_DEV_OK);
    read_lanes16(dev, N, NTPU_MEM_WB, 0, 1, h);
    static const uint16_t want_wb[8] = {0x8000, 0xFF80, 0xFFC0, 0x0000, 0x3F80, 0x8000, 0x7F80, 0xBF80};
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(h[n], want_wb[n % 8], "WB lane %u: 0x%04x", n, h[n]);
}

Test(ref_model, act_int8_every_flag_combination)
{
    for (int round = 0; round < 6; round++) {
        img_randomize();
        for (unsigned i = 0; i < WIN * N; i++) { /* int32 data: large, small, extremes */
            uint64_t r = rnd();
            img_acc[i] = r % 4 == 0   ? (uint32_t)(r >> 32)
                         : r % 4 == 1 ? (uint32_t)((int32_t)((r >> 40) % 10001) - 5000)
                         : r % 4 == 2 ? (uint32_t)((int32_t)(r >> 32) >> (r >> 8) % 31)
                                      : ((r >> 8) & 1 ? 0x80000000u : 0x7FFFFFFFu);
        }
        unsigned aux = (unsigned)(rnd() % (WIN - 2));
        for (unsigned n = 0; n < N; n++) {
            uint64_t r = rnd();
            static const int32_t odd_mult[] = {INT32_MIN, INT32_MAX, 0, -1, -(1 << 30), 1};
            static const int32_t odd_shift[] = {-1, 32, 1000, INT32_MIN, INT32_MAX, 31, 0};
            int32_t m = r % 5 ? (int32_t)((1u << 30) | (uint32_t)(r >> 34)) : odd_mult[(r >> 8) % 6];
            int32_t s = r % 7 ? (int32_t)((r >> 16) % 32) : odd_shift[(r >> 24) % 7];
            img_acc[(aux + 1) * N + n] = (uint32_t)m;
            img_acc[(aux + 2) * N + n] = (uint32_t)s;
        }
        img_load();
        for (unsigned f = 0; f < 4; f++) {
            unsigned flags = f | NTPU_OUT_INT8, rows = 1 + (unsigned)(rnd() % 30);
            unsigned src = (unsigned)(rnd() % (WIN - rows)), dst = (unsigned)(rnd() % (WIN - rows));
            cr_assert_eq(act(flags, src, dst, rows, aux), NTPU_DEV_OK);
            img_act(flags, src, dst, rows, aux);
            char what[128];
            snprintf(what, sizeof what, "ACT int8 flags 0x%02x src %u dst %u rows %u aux %u", flags, src, dst, rows,
                     aux);
            img_check(what);
        }
    }
}

Test(ref_model, act_int8_by_hand)
{
    /* multiplier 0.5, shift 1: x/4, rounded half away from zero, clamped, sign-extended */
    uint32_t rows[4 * 64];
    static const int32_t x[8] = {-6, 6, -2, 1000, -1000, INT32_MIN, 2, -10};
    static const int32_t b[8] = {0, 0, 0, 0, 0, -1, 0, 0};
    static const uint16_t plain[8] = {0xFFFE, 0x0002, 0xFFFF, 0x007F, 0xFF80, 0xFF80, 0x0001, 0xFFFB};
    static const uint16_t bias_relu[8] = {0, 0x0002, 0, 0x007F, 0, 0x007F, 0x0001, 0}; /* MIN - 1 wraps to MAX */
    for (unsigned n = 0; n < N; n++) {
        rows[n] = (uint32_t)x[n % 8];
        rows[N + n] = (uint32_t)b[n % 8];
        rows[2 * N + n] = 1u << 30;
        rows[3 * N + n] = n % 8 == 7 ? 0xFFFFFFFFu : 1; /* lane 7: shift -1 acts as 0, -10/2 = -5 */
    }
    cr_assert_eq(write_acc(dev, N, 20, 4, rows), NTPU_DEV_OK);
    uint16_t got[64];
    cr_assert_eq(act(NTPU_OUT_INT8, 20, 9, 1, 21), NTPU_DEV_OK, "aux + 2 = 23, BIAS row 21 unused");
    read_lanes16(dev, N, NTPU_MEM_UB, 9, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], plain[n % 8], "lane %u: 0x%04x", n, got[n]);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_INT8, 20, 9, 1, 21), NTPU_DEV_OK);
    read_lanes16(dev, N, NTPU_MEM_UB, 9, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], bias_relu[n % 8], "lane %u: 0x%04x", n, got[n]);
}

Test(ref_model, act_in_place_and_overlapping)
{
    const struct {
        int dst_minus_src, aux_minus_dst;
    } cases[] = {
        {0, 50}, {1, 50}, {3, 50}, {-2, 50}, {-7, 50}, {0, 1}, {2, 3}, {0, -40},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (unsigned f = 0; f < 4; f++) {
            img_randomize();
            unsigned src = 60, rows = 12, dst = (unsigned)(60 + cases[k].dst_minus_src);
            unsigned aux = (unsigned)((int)dst + cases[k].aux_minus_dst), flags = f | NTPU_OUT_ACC;
            cr_assert_eq(act(flags, src, dst, rows, aux), NTPU_DEV_OK);
            img_act(flags, src, dst, rows, aux);
            char what[128];
            snprintf(what, sizeof what, "ACT flags 0x%02x src %u dst %u aux %u", flags, src, dst, aux);
            img_check(what);
        }
    /* by hand: the bias row is read once, before row 0, even when row 1 overwrites it */
    uint32_t ones[3 * 64], got[3 * 64];
    for (unsigned i = 0; i < 3 * N; i++)
        ones[i] = 0x3F800000u;
    cr_assert_eq(write_acc(dev, N, 10, 3, ones), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 10, 10, 3, 11), NTPU_DEV_OK);
    read_acc(dev, N, 10, 3, got);
    for (unsigned i = 0; i < 3 * N; i++)
        cr_assert_eq(got[i], 0x40000000u, "row %u lane %u: 1 + 1, the old bias", 10 + i / N, i % N);
    /* and a destination running ahead of the source sees its own writes */
    cr_assert_eq(write_acc(dev, N, 10, 3, ones), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 20, 1, ones), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 10, 11, 2, 20), NTPU_DEV_OK);
    read_acc(dev, N, 10, 3, got);
    for (unsigned n = 0; n < N; n++) {
        cr_assert_eq(got[n], 0x3F800000u);
        cr_assert_eq(got[N + n], 0x40000000u);
        cr_assert_eq(got[2 * N + n], 0x40400000u, "row 12 = row 11 after row 0 wrote it, + 1");
    }
}

/* ---------------------------------------------------------------- RELU_GRAD */

Test(ref_model, relu_grad_every_out)
{
    for (int round = 0; round < 6; round++) {
        img_randomize();
        for (unsigned o = 0; o < 3; o++) {
            unsigned rows = 1 + (unsigned)(rnd() % 30), src = (unsigned)(rnd() % (WIN - rows));
            unsigned dst = (unsigned)(rnd() % (WIN - rows)), mask = (unsigned)(rnd() % (WIN - rows));
            cr_assert_eq(relu_grad(outs[o], src, dst, rows, mask), NTPU_DEV_OK);
            img_relu_grad(outs[o], src, dst, rows, mask);
            char what[128];
            snprintf(what, sizeof what, "RELU_GRAD out %u src %u dst %u rows %u mask %u", o, src, dst, rows, mask);
            img_check(what);
        }
    }
}

Test(ref_model, relu_grad_mask_by_hand)
{
    static const uint16_t m[8] = {0x3F80, 0xBF80, 0x0000, 0x8000, 0x0001, 0x7FC0, 0x7F80, 0xFFC1};
    static const int pass[8] = {1, 0, 0, 0, 0, 0, 1, 0}; /* +normal, +Inf only */
    uint16_t mask[64], h[64];
    uint32_t g[64], got[64];
    for (unsigned n = 0; n < N; n++) {
        mask[n] = m[n % 8];
        g[n] = n % 8 == 6 ? 0xFFC00123u : 0x80000001u; /* passed bit for bit to ACC */
    }
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 30, 1, mask), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 31, 1, g), NTPU_DEV_OK);
    cr_assert_eq(relu_grad(NTPU_OUT_ACC, 31, 40, 1, 30), NTPU_DEV_OK);
    read_acc(dev, N, 40, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], pass[n % 8] ? g[n] : 0u, "lane %u: 0x%08x", n, got[n]);
    cr_assert_eq(relu_grad(NTPU_OUT_UB, 31, 30, 1, 30), NTPU_DEV_OK, "in place over the mask");
    read_lanes16(dev, N, NTPU_MEM_UB, 30, 1, h);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(h[n], pass[n % 8] ? (n % 8 == 6 ? 0xFFC0 : 0x8000) : 0, "lane %u: 0x%04x", n, h[n]);
}

Test(ref_model, relu_grad_in_place_and_overlapping)
{
    const struct {
        unsigned out;
        int dst_minus;
    } cases[] = {
        {NTPU_OUT_UB, 0},  {NTPU_OUT_UB, 1},  {NTPU_OUT_UB, 4},  {NTPU_OUT_UB, -3},  /* relative to mask */
        {NTPU_OUT_ACC, 0}, {NTPU_OUT_ACC, 1}, {NTPU_OUT_ACC, 5}, {NTPU_OUT_ACC, -1}, /* relative to src */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        img_randomize();
        unsigned src = 50, mask = 80, rows = 20;
        unsigned dst = (unsigned)((int)(cases[k].out == NTPU_OUT_UB ? mask : src) + cases[k].dst_minus);
        cr_assert_eq(relu_grad(cases[k].out, src, dst, rows, mask), NTPU_DEV_OK);
        img_relu_grad(cases[k].out, src, dst, rows, mask);
        char what[128];
        snprintf(what, sizeof what, "RELU_GRAD case %zu", k);
        img_check(what);
    }
}

/* ---------------------------------------------------------------- COLSUM */

Test(ref_model, colsum_random_and_overlapping)
{
    for (int round = 0; round < 8; round++) {
        img_randomize();
        if (round & 1) /* ordinary values only: long sums that round at every step */
            for (unsigned i = 0; i < WIN * N; i++)
                img_acc[i] = ntpu_f32_bits((float)((int64_t)(rnd() % 2000001) - 1000000) * 0x1p-10f);
        img_load();
        for (unsigned f = 0; f < 2; f++) {
            unsigned rows = (unsigned)(rnd() % 100), src = (unsigned)(rnd() % (WIN - rows));
            unsigned dst = round >= 4 && rows ? src + (unsigned)(rnd() % rows) : (unsigned)(rnd() % WIN);
            cr_assert_eq(colsum(f, src, dst, rows), NTPU_DEV_OK);
            img_colsum(f, src, dst, rows);
            char what[128];
            snprintf(what, sizeof what, "COLSUM flags %u src %u dst %u rows %u", f, src, dst, rows);
            img_check(what);
        }
    }
}

Test(ref_model, colsum_by_hand)
{
    /* 1, 2^24, -2^24: the sum in order is 0 (1 + 2^24 rounds back to 2^24); any other order gives 1 */
    uint32_t v[3 * 64], got[3 * 64], start[64];
    for (unsigned n = 0; n < N; n++) {
        v[n] = 0x3F800000u;
        v[N + n] = 0x4B800000u;
        v[2 * N + n] = 0xCB800000u;
        start[n] = 0x00000001u; /* subnormal */
    }
    cr_assert_eq(write_acc(dev, N, 0, 3, v), NTPU_DEV_OK);
    cr_assert_eq(colsum(0, 0, 5, 3), NTPU_DEV_OK);
    read_acc(dev, N, 5, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 0u, "r ascending from +0");
    /* rows = 0: +0, or the old row untouched (no add, no flush) */
    cr_assert_eq(write_acc(dev, N, 5, 1, start), NTPU_DEV_OK);
    cr_assert_eq(colsum(NTPU_COLSUM_ACCUMULATE, 0, 5, 0), NTPU_DEV_OK);
    read_acc(dev, N, 5, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 1u);
    cr_assert_eq(colsum(NTPU_COLSUM_ACCUMULATE, 0, 5, 1), NTPU_DEV_OK);
    read_acc(dev, N, 5, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 0x3F800000u, "the subnormal start reads as 0");
    cr_assert_eq(colsum(0, ACC_ROWS, 5, 0), NTPU_DEV_OK);
    read_acc(dev, N, 5, 1, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[n], 0u);
    /* dst inside the source: summed with its old value, written at the end */
    cr_assert_eq(colsum(0, 0, 1, 3), NTPU_DEV_OK);
    read_acc(dev, N, 0, 3, got);
    for (unsigned n = 0; n < N; n++)
        cr_assert_eq(got[N + n], 0u);
}

/* ---------------------------------------------------------------- errors and counters */

Test(ref_model, vector_errors)
{
    uint8_t c[16] = {0};
    /* lengths */
    const struct {
        uint8_t op;
        size_t len;
    } ok_len[] = {
        {NTPU_OP_ACT, NTPU_LEN_ACT}, {NTPU_OP_RELU_GRAD, NTPU_LEN_RELU_GRAD}, {NTPU_OP_COLSUM, NTPU_LEN_COLSUM}};
    for (size_t i = 0; i < 3; i++) {
        c[0] = ok_len[i].op;
        c[1] = 0xFF; /* also: length before flags */
        for (size_t len = 1; len <= 14; len++)
            if (len != ok_len[i].len)
                cr_assert_eq(run_len(c, len), NTPU_DEV_ERR_LENGTH, "op %u LEN %zu", c[0], len);
        c[1] = 0;
        cr_assert_eq(run_len(c, ok_len[i].len), NTPU_DEV_OK, "op %u", c[0]);
    }
    /* reserved bits, before ranges */
    for (unsigned bit = 0; bit < 8; bit++) {
        unsigned f = 1u << bit;
        cr_assert_eq(vec_cmd(dev, NTPU_OP_ACT, f, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF),
                     bit >= 4 ? NTPU_DEV_ERR_ARG : NTPU_DEV_ERR_RANGE, "ACT bit %u", bit);
        cr_assert_eq(vec_cmd(dev, NTPU_OP_RELU_GRAD, f, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF),
                     bit == 2 || bit == 3 ? NTPU_DEV_ERR_RANGE : NTPU_DEV_ERR_ARG, "RELU_GRAD bit %u", bit);
        cr_assert_eq(vec_cmd(dev, NTPU_OP_COLSUM, f, 0xFFFF, 0xFFFF, 0xFFFF, 0),
                     bit == 0 ? NTPU_DEV_ERR_RANGE : NTPU_DEV_ERR_ARG, "COLSUM bit %u", bit);
    }
    cr_assert_eq(relu_grad(NTPU_OUT_INT8, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF), NTPU_DEV_ERR_ARG, "RELU_GRAD OUT 3");
    cr_assert_eq(relu_grad(NTPU_OUT_INT8, 0, 0, 1, 0), NTPU_DEV_ERR_ARG);

    /* ranges: the last valid row and one past it, per memory */
    const struct {
        unsigned out, rows;
    } mems[] = {{NTPU_OUT_UB, UB_ROWS}, {NTPU_OUT_WB, WB_ROWS}, {NTPU_OUT_ACC, ACC_ROWS}, {NTPU_OUT_INT8, UB_ROWS}};
    for (size_t i = 0; i < 4; i++) {
        unsigned o = mems[i].out, end = mems[i].rows;
        cr_assert_eq(act(o, 0, end - 3, 3, 0), NTPU_DEV_OK, "ACT out %u", o);
        cr_assert_eq(act(o, 0, end - 2, 3, 0), NTPU_DEV_ERR_RANGE, "ACT out %u", o);
        cr_assert_eq(act(o, 0, end, 0, 0), NTPU_DEV_OK);
        cr_assert_eq(act(o, 0, end + 1, 0, 0), NTPU_DEV_ERR_RANGE);
        if (o == NTPU_OUT_INT8)
            continue;
        cr_assert_eq(relu_grad(o, 0, end - 3, 3, 0), NTPU_DEV_OK, "RELU_GRAD out %u", o);
        cr_assert_eq(relu_grad(o, 0, end - 2, 3, 0), NTPU_DEV_ERR_RANGE, "RELU_GRAD out %u", o);
    }
    cr_assert_eq(act(0, ACC_ROWS - 3, 0, 3, 0), NTPU_DEV_OK);
    cr_assert_eq(act(0, ACC_ROWS - 2, 0, 3, 0), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(act(0, 0xFFFF, 0, 0xFFFF, 0), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(relu_grad(0, ACC_ROWS - 3, 0, 3, 0), NTPU_DEV_OK);
    cr_assert_eq(relu_grad(0, ACC_ROWS - 2, 0, 3, 0), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(relu_grad(NTPU_OUT_ACC, 0, 0, 3, UB_ROWS - 3), NTPU_DEV_OK);
    cr_assert_eq(relu_grad(NTPU_OUT_ACC, 0, 0, 3, UB_ROWS - 2), NTPU_DEV_ERR_RANGE, "mask rows in UB");
    /* aux: only the rows used */
    cr_assert_eq(act(NTPU_ACT_RELU, 0, 0, 1, 0xFFFF), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_OUT_ACC, 0, 0, 1, 0xFFFF), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_ACT_BIAS, 0, 0, 1, ACC_ROWS - 1), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_ACT_BIAS, 0, 0, 1, ACC_ROWS), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 0, 0, 0, ACC_ROWS), NTPU_DEV_ERR_RANGE, "also with rows = 0");
    for (unsigned f = 0; f < 4; f++) {
        cr_assert_eq(act(f | NTPU_OUT_INT8, 0, 0, 1, ACC_ROWS - 3), NTPU_DEV_OK, "int8 flags %u", f);
        cr_assert_eq(act(f | NTPU_OUT_INT8, 0, 0, 1, ACC_ROWS - 2), NTPU_DEV_ERR_RANGE, "int8 flags %u", f);
        cr_assert_eq(act(f | NTPU_OUT_INT8, 0, 0, 1, 0xFFFF), NTPU_DEV_ERR_RANGE, "int8 flags %u", f);
    }
    /* COLSUM */
    cr_assert_eq(colsum(0, ACC_ROWS - 5, ACC_ROWS - 1, 5), NTPU_DEV_OK);
    cr_assert_eq(colsum(0, ACC_ROWS - 4, 0, 5), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(colsum(0, 0, ACC_ROWS, 5), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(colsum(NTPU_COLSUM_ACCUMULATE, 0, ACC_ROWS, 0), NTPU_DEV_ERR_RANGE, "dst checked with rows = 0");
    cr_assert_eq(colsum(0, ACC_ROWS + 1, 0, 0), NTPU_DEV_ERR_RANGE);

    /* a command with an error writes nothing */
    img_randomize();
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 0, 0, 10, ACC_ROWS), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(act(0x10 | NTPU_OUT_ACC, 0, 5, 10, 0), NTPU_DEV_ERR_ARG);
    cr_assert_eq(relu_grad(NTPU_OUT_INT8, 0, 5, 10, 0), NTPU_DEV_ERR_ARG);
    cr_assert_eq(relu_grad(NTPU_OUT_UB, 0, 5, 10, UB_ROWS - 9), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(colsum(NTPU_COLSUM_ACCUMULATE, ACC_ROWS - 1, 0, 2), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(colsum(0x02, 0, 0, 2), NTPU_DEV_ERR_ARG);
    img_check("after failed commands");
}

Test(ref_model, vector_commands_count_no_macs)
{
    uint64_t c0[NTPU_CNT_COUNT], c1[NTPU_CNT_COUNT];
    counters(dev, NTPU_COUNTERS_CLEAR, c0);
    counters(dev, 0, c0);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_ACT_RELU, 0, 0, 100, 200), NTPU_DEV_OK);
    cr_assert_eq(relu_grad(NTPU_OUT_WB, 0, 0, 100, 0), NTPU_DEV_OK);
    cr_assert_eq(colsum(0, 0, 0, 100), NTPU_DEV_OK);
    counters(dev, 0, c1);
    cr_expect_eq(c1[NTPU_CNT_MACS], 0);
    cr_expect_eq(c1[NTPU_CNT_ARRAY_BUSY], c0[NTPU_CNT_ARRAY_BUSY]);
    cr_expect_geq(c1[NTPU_CNT_CYCLES] - c0[NTPU_CNT_CYCLES], 300, "a row per cycle at best");
}

/* ---------------------------------------------------------------- a training step */

/* One dense layer, forward and backward, in bf16, the way the host library
 * will run it: Z = X·W, H = relu(Z + b) in bf16, dZ = dH ⊙ relu'(H),
 * db = Σ_b dZ, dW = Xᵀ·dZ. The reference is plain fp32 loops in the order
 * the ISA fixes (ordinary values: nothing to flush). */
Test(ref_model, training_step_bf16)
{
    enum { BT = 2 };
    const unsigned B = BT * N, x = 0, h = B, w = 0, wdz = N, z = 0, bias = 2 * B, dh = 3 * B, dz = 5 * B, db = 7 * B,
                   dw = 8 * B;
    static uint16_t X[2 * 64 * 64], W[64 * 64], H[2 * 64 * 64], WDZ[2 * 64 * 64];
    static uint32_t bv[64], dH[2 * 64 * 64], got[2 * 64 * 64];
    static float Zr[2 * 64 * 64], dZr[2 * 64 * 64];
    for (unsigned i = 0; i < B * N; i++) {
        X[i] = rnd_bf16();
        dH[i] = ntpu_f32_bits(ntpu_bf16_to_f32(rnd_bf16()));
    }
    for (unsigned i = 0; i < N * N; i++)
        W[i] = rnd_bf16();
    for (unsigned n = 0; n < N; n++)
        bv[n] = ntpu_f32_bits(ntpu_bf16_to_f32(rnd_bf16()));
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, x, B, X), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, w, N, W), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, bias, 1, bv), NTPU_DEV_OK);
    write_acc_rows(dev, N, dh, B, dH);

    cr_assert_eq(load_w(dev, 0, w), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, x, z, B), NTPU_DEV_OK);
    cr_assert_eq(act(NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_UB, z, h, B, bias), NTPU_DEV_OK);
    cr_assert_eq(relu_grad(NTPU_OUT_ACC, dh, dz, B, h), NTPU_DEV_OK);
    cr_assert_eq(relu_grad(NTPU_OUT_WB, dh, wdz, B, h), NTPU_DEV_OK);
    cr_assert_eq(colsum(0, dz, db, B), NTPU_DEV_OK);
    for (unsigned j = 0; j < BT; j++) {
        cr_assert_eq(load_w(dev, 0, wdz + j * N), NTPU_DEV_OK);
        cr_assert_eq(matmul_t(dev, NTPU_MATMUL_BF16 | (j ? NTPU_MATMUL_ACCUMULATE : 0), x + j * N, dw, N, B),
                     NTPU_DEV_OK);
    }

    for (unsigned b = 0; b < B; b++)
        for (unsigned n = 0; n < N; n++) {
            float acc = 0.0f;
            for (unsigned k = 0; k < N; k++)
                acc += ntpu_bf16_to_f32(X[b * N + k]) * ntpu_bf16_to_f32(W[k * N + n]);
            Zr[b * N + n] = acc;
            float a = acc + ntpu_f32_from_bits(bv[n]);
            uint16_t hb = ntpu_bf16_from_f32(a > 0 ? a : 0.0f);
            H[b * N + n] = hb;
            dZr[b * N + n] = ntpu_bf16_to_f32(hb) > 0 ? ntpu_f32_from_bits(dH[b * N + n]) : 0.0f;
            WDZ[b * N + n] = ntpu_bf16_from_f32(dZr[b * N + n]);
        }
    read_acc(dev, N, z, B, got);
    for (unsigned i = 0; i < B * N; i++)
        cr_assert_eq(got[i], ntpu_f32_bits(Zr[i]), "Z[%u]", i);
    uint16_t got16[2 * 64 * 64];
    read_lanes16(dev, N, NTPU_MEM_UB, h, B, got16);
    for (unsigned i = 0; i < B * N; i++)
        cr_assert_eq(got16[i], H[i], "H[%u]", i);
    read_acc(dev, N, dz, B, got);
    for (unsigned i = 0; i < B * N; i++)
        cr_assert_eq(got[i], ntpu_f32_bits(dZr[i]), "dZ[%u]", i);
    read_acc(dev, N, db, 1, got);
    for (unsigned n = 0; n < N; n++) {
        float s = 0.0f;
        for (unsigned b = 0; b < B; b++)
            s += dZr[b * N + n];
        cr_assert_eq(got[n], ntpu_f32_bits(s), "db[%u]", n);
    }
    read_acc(dev, N, dw, N, got);
    for (unsigned k = 0; k < N; k++)
        for (unsigned n = 0; n < N; n++) {
            float s = 0.0f;
            for (unsigned b = 0; b < B; b++)
                s += ntpu_bf16_to_f32(X[b * N + k]) * ntpu_bf16_to_f32(WDZ[b * N + n]);
            cr_assert_eq(got[k * N + n], ntpu_f32_bits(s), "dW[%u][%u]", k, n);
        }
}

/* ---------------------------------------------------------------- RUN (1.4) */

/* A program under construction: [LEN u16][payload] ... in PM bytes. */
typedef struct prog {
    uint8_t b[8192];
    size_t len;
} prog;

static void prog_add(prog *p, const uint8_t *cmd, size_t len)
{
    put16(p->b + p->len, (unsigned)len);
    memcpy(p->b + p->len + 2, cmd, len);
    p->len += 2 + len;
}

/* Puts p at PM row addr (zero-padded to whole rows); returns its rows. */
static unsigned prog_store(ntpu_ref *r, const prog *p, unsigned addr)
{
    unsigned rowb = 2 * N, rows = (unsigned)((p->len + rowb - 1) / rowb);
    static uint8_t b[8192 + 64];
    memset(b, 0, sizeof b);
    memcpy(b, p->b, p->len);
    cr_assert_eq(write_mem(r, N, NTPU_MEM_PM, addr, rows, b), NTPU_DEV_OK);
    return rows;
}

static uint8_t run_prog(ntpu_ref *r, unsigned flags, unsigned addr, unsigned rows)
{
    uint8_t c[6] = {NTPU_OP_RUN, (uint8_t)flags};
    put16(c + 2, addr);
    put16(c + 4, rows);
    return run(r, c, 6);
}

/* The commands of a small bf16 product: weights, LOAD_W, MATMUL, ACT to ACC. */
static void product_cmds(prog *p)
{
    uint8_t lw[4] = {NTPU_OP_LOAD_W, 0};
    put16(lw + 2, 8);
    uint8_t mm[8] = {NTPU_OP_MATMUL, NTPU_MATMUL_BF16};
    put16(mm + 2, 3), put16(mm + 4, 100), put16(mm + 6, 5);
    uint8_t mm2[8] = {NTPU_OP_MATMUL, NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE};
    put16(mm2 + 2, 1), put16(mm2 + 4, 100), put16(mm2 + 6, 5);
    uint8_t act[10] = {NTPU_OP_ACT, NTPU_ACT_BIAS | NTPU_OUT_ACC};
    put16(act + 2, 100), put16(act + 4, 200), put16(act + 6, 5), put16(act + 8, 99);
    prog_add(p, lw, 4);
    prog_add(p, mm, 8);
    prog_add(p, mm2, 8);
    prog_add(p, act, 10);
}

static void fill_operands(ntpu_ref *r)
{
    uint16_t v[32 * 64];
    for (unsigned i = 0; i < 32 * N; i++)
        v[i] = ntpu_bf16_from_f32((float)((int)(i * 37 % 23) - 11) * 0.125f);
    cr_assert_eq(write_lanes16(r, N, NTPU_MEM_UB, 0, 16, v), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(r, N, NTPU_MEM_WB, 0, 32, v), NTPU_DEV_OK);
    uint32_t bias[64];
    for (unsigned n = 0; n < N; n++)
        bias[n] = ntpu_f32_bits(0.5f * (float)n);
    cr_assert_eq(write_acc(r, N, 99, 1, bias), NTPU_DEV_OK);
}

Test(ref_model, run_equals_the_frames_it_holds)
{
    fill_operands(dev);
    prog p = {.len = 0};
    product_cmds(&p);
    /* first the commands as frames */
    for (size_t at = 0; at < p.len;) {
        size_t len = get16(p.b + at);
        cr_assert_eq(run(dev, p.b + at + 2, len), NTPU_DEV_OK);
        at += 2 + len;
    }
    uint32_t want[5 * 64], got[5 * 64], zero[5 * 64] = {0};
    read_acc(dev, N, 200, 5, want);
    /* then the same as one RUN, over cleared results */
    cr_assert_eq(write_acc(dev, N, 100, 5, zero), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 200, 5, zero), NTPU_DEV_OK);
    unsigned rows = prog_store(dev, &p, 40);
    cr_assert_eq(rows, (p.len + 2 * N - 1) / (2 * N));
    uint8_t le;
    uint32_t errors, commands0, commands, dropped;
    status_block(dev, &le, &errors, &commands0, &dropped);
    cr_assert_eq(run_prog(dev, 0, 40, rows), NTPU_DEV_OK);
    cr_assert_eq(rep.len, 2, "RUN replies with done");
    cr_assert_eq(get16(rep.data), 4, "4 commands ran");
    status_block(dev, &le, &errors, &commands, &dropped);
    cr_expect_eq(commands, commands0 + 2, "RUN counts once (and the STATUS before it)");
    cr_expect_eq(errors, 0);
    read_acc(dev, N, 200, 5, got);
    cr_assert_eq(memcmp(got, want, 5 * N * 4), 0, "RUN's results are the frames' results");
    cr_assert_neq(memcmp(got, zero, 5 * N * 4), 0);
    /* PM reads back as written */
    cr_assert_eq(read_mem(dev, NTPU_MEM_PM, 40, rows), NTPU_DEV_OK);
    cr_assert_eq(memcmp(rep.data, p.b, p.len), 0);
    /* an empty program, and one that ends at a zero LEN, run fine */
    cr_assert_eq(run_prog(dev, 0, 40, 0), NTPU_DEV_OK);
    cr_assert_eq(get16(rep.data), 0);
    cr_assert_eq(run_prog(dev, 0, 40, rows + 3), NTPU_DEV_OK); /* rows 0 after it: LEN 0 */
    cr_assert_eq(get16(rep.data), 4);
}

/* Writes p to PM row 0 and runs it: the status; rep holds the reply. */
static uint8_t run_stored(const prog *p)
{
    return run_prog(dev, 0, 0, prog_store(dev, p, 0));
}

Test(ref_model, run_stops_at_the_first_failing_command)
{
    fill_operands(dev);
    uint32_t zero[5 * 64] = {0}, got[5 * 64];
    cr_assert_eq(write_acc(dev, N, 100, 5, zero), NTPU_DEV_OK);
    prog p = {.len = 0};
    product_cmds(&p);
    uint8_t bad_op = 0x7F;
    prog q = p;
    q.len = 0;
    prog_add(&q, p.b + 2, get16(p.b));     /* LOAD_W */
    prog_add(&q, p.b + 8, get16(p.b + 6)); /* MATMUL into ACC 100 */
    prog_add(&q, &bad_op, 1);
    prog_add(&q, p.b + 8, get16(p.b + 6));
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_OPCODE);
    cr_assert_eq(rep.len, 2);
    cr_assert_eq(get16(rep.data), 2, "index of the failing command");
    read_acc(dev, N, 100, 5, got);
    cr_assert_neq(memcmp(got, zero, 5 * N * 4), 0, "the commands before it ran");
    uint8_t le;
    uint32_t errors, commands, dropped;
    status_block(dev, &le, &errors, &commands, &dropped);
    cr_expect_eq(le, NTPU_DEV_ERR_OPCODE);
    cr_expect_eq(errors, 1, "one error: the RUN");

    /* ERR_RANGE inside: a MATMUL past ACC's end, as command 1 */
    q.len = 0;
    prog_add(&q, p.b + 2, 4);
    uint8_t mm[8] = {NTPU_OP_MATMUL, NTPU_MATMUL_BF16};
    put16(mm + 4, ACC_ROWS - 2), put16(mm + 6, 5);
    prog_add(&q, mm, 8);
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(get16(rep.data), 1);
    /* LEN wrong for the opcode */
    q.len = 0;
    prog_add(&q, mm, 7);
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(get16(rep.data), 0);
    /* a LEN that runs past the program's rows */
    q.len = 0;
    prog_add(&q, p.b + 2, 4);
    put16(q.b + q.len, 200);
    q.len += 2;
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(get16(rep.data), 1);
}

Test(ref_model, run_refuses_what_a_program_cannot_hold)
{
    const uint8_t none[] = {NTPU_OP_INFO, NTPU_OP_STATUS, NTPU_OP_SYNC};
    for (size_t i = 0; i < sizeof none; i++) {
        prog q = {.len = 0};
        uint8_t nop = NTPU_OP_NOP;
        prog_add(&q, &nop, 1);
        prog_add(&q, &none[i], 1);
        cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_OPCODE, "op 0x%02X", none[i]);
        cr_assert_eq(get16(rep.data), 1);
    }
    prog q = {.len = 0};
    uint8_t cnt[2] = {NTPU_OP_COUNTERS, 0}, rd[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 0, 0, 1, 0};
    uint8_t rn[6] = {NTPU_OP_RUN, 0, 0, 0, 1, 0}, wpm[6 + 128] = {NTPU_OP_WRITE_MEM, NTPU_MEM_PM, 0, 0, 1, 0};
    prog_add(&q, cnt, 2);
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_OPCODE);
    q.len = 0;
    prog_add(&q, rd, 6);
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_OPCODE);
    q.len = 0;
    prog_add(&q, rn, 6);
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_OPCODE, "no RUN inside RUN");
    q.len = 0;
    prog_add(&q, wpm, 6 + 2 * N);
    cr_assert_eq(run_stored(&q), NTPU_DEV_ERR_MEM, "a program does not write PM");
    /* ... but WRITE_MEM to UB is fine, and FENCE, NOP */
    q.len = 0;
    uint8_t wub[6 + 128] = {NTPU_OP_WRITE_MEM, NTPU_MEM_UB, 7, 0, 1, 0, 0x34, 0x12};
    uint8_t fence = NTPU_OP_FENCE;
    prog_add(&q, wub, 6 + 2 * N);
    prog_add(&q, &fence, 1);
    cr_assert_eq(run_stored(&q), NTPU_DEV_OK);
    cr_assert_eq(get16(rep.data), 2);
    cr_assert_eq(read_mem(dev, NTPU_MEM_UB, 7, 1), NTPU_DEV_OK);
    cr_assert_eq(get16(rep.data), 0x1234);
}

Test(ref_model, run_checks_its_own_fields)
{
    cr_assert_eq(run_prog(dev, 0, 8192 - 3, 4), NTPU_DEV_ERR_RANGE, "past pm_rows");
    cr_assert_eq(rep.len, 0, "no program ran: no data");
    cr_assert_eq(run_prog(dev, 0, 0xFFFF, 2), NTPU_DEV_ERR_RANGE, "no 16-bit wrap");
    cr_assert_eq(run_prog(dev, 0, 8192 - 4, 4), NTPU_DEV_OK, "the last rows (zeros: an empty program)");
    cr_assert_eq(run_prog(dev, 1, 0, 1), NTPU_DEV_ERR_ARG, "reserved flags");
    uint8_t c[7] = {NTPU_OP_RUN};
    cr_assert_eq(run(dev, c, 5), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(run(dev, c, 7), NTPU_DEV_ERR_LENGTH);
    cr_assert_eq(write_mem(dev, N, NTPU_MEM_PM, 8191, 2, (const uint8_t[64]){0}), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(read_mem(dev, 5, 0, 1), NTPU_DEV_ERR_MEM, "there is no memory 5");
}

Test(ref_model, without_pm_run_is_unknown)
{
    ntpu_ref_config c = ntpu_ref_default_config();
    c.pm_rows = 0;
    ntpu_ref *r = new_model(&c);
    cr_assert(r);
    cr_assert_eq(op0(r, NTPU_OP_INFO), NTPU_DEV_OK);
    cr_expect_eq(rep.data[9] & NTPU_FEATURE_PROGRAM_BIT, 0);
    cr_expect_eq(get32(rep.data + 32), 0);
    cr_expect_eq(run_prog(r, 0, 0, 0), NTPU_DEV_ERR_OPCODE);
    cr_expect_eq(rep.len, 0);
    uint8_t c7[7] = {NTPU_OP_RUN};
    cr_expect_eq(run(r, c7, 7), NTPU_DEV_ERR_OPCODE, "whatever LEN");
    cr_expect_eq(read_mem(r, NTPU_MEM_PM, 0, 0), NTPU_DEV_ERR_MEM);
    ntpu_ref_free(r);
}

/* A stream of frames split into two writes at every byte gives the replies of
 * the stream written whole: frames that one write holds whole run where they
 * lie, the split one is collected first, with the same outcome (counters too). */
Test(ref_model, a_frame_split_at_any_byte_runs_as_a_whole_one)
{
    static uint8_t stream[4096], whole[4096], split[4096];
    size_t n = 0;
    uint8_t w[6 + 16] = {NTPU_OP_WRITE_MEM, NTPU_MEM_UB, 3, 0, 1, 0};
    for (size_t i = 6; i < sizeof w; i++)
        w[i] = (uint8_t)(i * 13);
    const uint8_t r[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 3, 0, 1, 0}, l[4] = {NTPU_OP_LOAD_W, 0, 0, 0};
    const uint8_t c[2] = {NTPU_OP_COUNTERS, 0}, bad[2] = {NTPU_OP_NOP, 0};
    n += make_frame(stream + n, 0, w, sizeof w);
    stream[n++] = 0x11; /* a byte of garbage between frames */
    n += make_frame(stream + n, 1, r, sizeof r);
    n += make_frame(stream + n, 2, l, sizeof l);
    n += make_frame(stream + n, 3, bad, sizeof bad);
    n += make_frame(stream + n, 4, c, sizeof c);
    ntpu_ref *ref = ntpu_ref_new(NULL);
    ntpu_ref_write(ref, stream, n);
    size_t nwhole = ntpu_ref_read(ref, whole, sizeof whole);
    ntpu_ref_free(ref);
    cr_assert_gt(nwhole, 5 * NTPU_FRAME_OVERHEAD + 16 + NTPU_COUNTERS_BYTES);
    for (size_t at = 0; at <= n; at++) {
        ref = ntpu_ref_new(NULL);
        ntpu_ref_write(ref, stream, at);
        ntpu_ref_write(ref, stream + at, n - at);
        size_t nsplit = ntpu_ref_read(ref, split, sizeof split);
        ntpu_ref_free(ref);
        cr_assert_eq(nsplit, nwhole, "split at %zu", at);
        cr_assert_arr_eq(split, whole, nwhole, "split at %zu", at);
    }
}

/* peek shows the queued reply bytes as read would return them; consume takes
 * them in any pieces, and what is left reads on from there. */
Test(ref_model, replies_seen_in_place_and_taken_in_parts)
{
    const uint8_t r[6] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 0, 0, 2, 0};
    size_t n = 1;
    cr_assert_null(ntpu_ref_peek(dev, &n));
    cr_assert_eq(n, 0);
    send(dev, r, sizeof r);
    send(dev, r, sizeof r);
    uint8_t st = NTPU_OP_STATUS;
    send(dev, &st, 1);
    const uint8_t *view = ntpu_ref_peek(dev, &n);
    cr_assert_not_null(view);
    cr_assert_eq(n, ntpu_ref_pending(dev));
    static uint8_t copy[4096], rest[4096];
    memcpy(copy, view, n);
    ntpu_ref_consume(dev, 5);
    size_t left;
    view = ntpu_ref_peek(dev, &left);
    cr_assert_eq(left, n - 5);
    cr_assert_arr_eq(view, copy + 5, left);
    cr_assert_eq(ntpu_ref_read(dev, rest, 7), 7);
    cr_assert_arr_eq(rest, copy + 5, 7);
    ntpu_ref_consume(dev, 3);
    cr_assert_eq(ntpu_ref_read(dev, rest, sizeof rest), n - 15);
    cr_assert_arr_eq(rest, copy + 15, n - 15);
    ntpu_ref_consume(dev, 100); /* more than is queued: takes what there is */
    cr_assert_eq(ntpu_ref_pending(dev), 0);
}
