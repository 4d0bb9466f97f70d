/* The golden model through its byte interface only: frames in, frames out, as
 * a host sees it (docs/protocol.md, docs/isa.md). Expected results come from
 * plain loops written here, not from the model's own code. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "ntpu_ref.h"

/* ---------------------------------------------------------------- host side */

#define BIG 70000 /* more than any frame */

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

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

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

static uint8_t op0(ntpu_ref *r, uint8_t op) { return run(r, &op, 1); }

static unsigned row_bytes(unsigned n, unsigned mem) { return n * (mem == NTPU_MEM_ACC ? 4u : 2u); }

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
static unsigned rows_per_frame(unsigned n, unsigned mem) { return (4112 - 6) / row_bytes(n, mem); }

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
static void teardown(void) { ntpu_ref_free(dev); }

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
    cr_expect_eq(c.ub_rows, 8192);
    cr_expect_eq(c.wb_rows, 4096);
    cr_expect_eq(c.acc_rows, 2048);
    cr_expect_eq(c.max_payload, 4112);
}

Test(ref_model, info_block)
{
    uint8_t seq = send(dev, (const uint8_t[]){NTPU_OP_INFO}, 1);
    uint8_t raw[4 + 33 + 4];
    cr_assert_eq(ntpu_ref_pending(dev), sizeof raw);
    cr_assert_eq(ntpu_ref_read(dev, raw, sizeof raw), sizeof raw);
    cr_expect_eq(raw[0], 0x5A);
    cr_expect_eq(raw[1], seq);
    cr_expect_eq(get16(raw + 2), 33);
    cr_expect_eq(raw[4], NTPU_DEV_OK);
    cr_expect_eq(get32(raw + 37), (uint32_t)crc32(0L, raw + 1, 36));
    const uint8_t *id = raw + 5;
    cr_expect_eq(get32(id + 0), 0x5550544Eu);
    cr_expect_eq(memcmp(id, "NTPU", 4), 0);
    cr_expect_eq(id[4], 1);
    cr_expect_eq(id[5], 0);
    cr_expect_eq(id[6], N);
    cr_expect_eq(id[7], N);
    cr_expect_eq(id[8], 3);
    cr_expect_eq(id[9], 1);
    cr_expect_eq(get16(id + 10), 4112);
    cr_expect_eq(get32(id + 12), 8192);
    cr_expect_eq(get32(id + 16), 4096);
    cr_expect_eq(get32(id + 20), 2048);
    cr_expect_eq(get32(id + 24), 0);
    cr_expect_eq(id[28], 0);
    cr_expect_eq(id[29] | id[30] | id[31], 0);
}

Test(ref_model, config_limits)
{
    ntpu_ref_config ok = {4, 16, 8, 32, 73}; /* 73: the COUNTERS reply */
    ntpu_ref *r = ntpu_ref_new(&ok);
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
        {1, 16, 8, 32, 73},  {65, 16, 65, 32, 73},   {4, 0, 8, 32, 73},     {4, 65537, 8, 32, 73},
        {4, 16, 3, 32, 73},  {4, 16, 65537, 32, 73}, {4, 16, 8, 0, 73},     {4, 16, 8, 65537, 73},
        {4, 16, 8, 32, 72},  {4, 16, 8, 32, 65536},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_null(ntpu_ref_new(&bad[i]), "config %zu rejected", i);
    ntpu_ref_config big = {64, 65536, 65536, 65536, 65535};
    r = ntpu_ref_new(&big);
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
    const unsigned sizes[3] = {8192, 4096, 2048};
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

static int8_t lo8(uint16_t v) { return (int8_t)(v & 0xFF); }

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

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
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
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 4096 - N, N, w), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 4096 - N), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, 0, 2048 - M, M), NTPU_DEV_OK);
    read_acc(dev, N, 2048 - M, M, got);
    for (unsigned m = 0; m < M; m++)
        for (unsigned n = 0; n < N; n++) {
            float acc = 0.0f;
            for (unsigned k = 0; k < N; k++) {
                float p = ntpu_bf16_to_f32(a[m * N + k]) * ntpu_bf16_to_f32(w[k * N + n]);
                acc = acc + p;
            }
            cr_assert_eq(got[m * N + n], bits(acc), "C[%u][%u] = %a, want %a", m, n, (double)f32(got[m * N + n]),
                         (double)acc);
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
        start[n] = bits((float)((int)n - 3) * 1.25f);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_UB, 0, 2, a), NTPU_DEV_OK);
    cr_assert_eq(write_lanes16(dev, N, NTPU_MEM_WB, 0, N, w), NTPU_DEV_OK);
    cr_assert_eq(write_acc(dev, N, 9, 1, start), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 0), NTPU_DEV_OK);
    /* row 0 onto the written value, then row 1 on top: one chain of 2N adds */
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, 0, 9, 1), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, 1, 9, 1), NTPU_DEV_OK);
    read_acc(dev, N, 9, 1, got);
    for (unsigned n = 0; n < N; n++) {
        float acc = f32(start[n]);
        for (unsigned row = 0; row < 2; row++)
            for (unsigned k = 0; k < N; k++) {
                float p = ntpu_bf16_to_f32(a[row * N + k]) * ntpu_bf16_to_f32(w[k * N + n]);
                acc = acc + p;
            }
        cr_assert_eq(got[n], bits(acc), "column %u", n);
    }
    /* without ACCUMULATE the chain restarts at +0 */
    cr_assert_eq(matmul(dev, NTPU_MATMUL_BF16, 1, 9, 1), NTPU_DEV_OK);
    read_acc(dev, N, 9, 1, got);
    for (unsigned n = 0; n < N; n++) {
        float acc = 0.0f;
        for (unsigned k = 0; k < N; k++)
            acc = acc + ntpu_bf16_to_f32(a[N + k]) * ntpu_bf16_to_f32(w[k * N + n]);
        cr_assert_eq(got[n], bits(acc));
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
    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE, 4096 - N + 1), NTPU_DEV_ERR_RANGE);
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
    cr_expect_gt(c[NTPU_CNT_CYCLES], c[NTPU_CNT_RX_BYTES]);
    counters(dev, NTPU_COUNTERS_CLEAR, c);
    cr_expect_eq(c[NTPU_CNT_MACS], (uint64_t)(5 + 17) * N * N, "CLEAR zeroes after reading");
    counters(dev, 0, c);
    cr_expect_eq(c[NTPU_CNT_MACS], 0);
    cr_expect_eq(c[NTPU_CNT_RX_BYTES], 10, "only this COUNTERS frame since the clear");
    cr_expect_eq(c[NTPU_CNT_TX_BYTES], 81, "only the clearing COUNTERS' reply");
    /* an erroring MATMUL counts no MACs */
    cr_assert_eq(matmul(dev, 0, 0, 2047, 2), NTPU_DEV_ERR_RANGE);
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
    cr_expect_eq(c[NTPU_CNT_TX_BYTES], 81 + 41);
}

Test(ref_model, nop_and_fence)
{
    cr_assert_eq(op0(dev, NTPU_OP_NOP), NTPU_DEV_OK);
    cr_assert_eq(rep.len, 0);
    cr_assert_eq(op0(dev, NTPU_OP_FENCE), NTPU_DEV_OK);
    cr_assert_eq(rep.len, 0);
}

/* ---------------------------------------------------------------- errors */

static uint8_t run_len(const uint8_t *p, size_t len) { return run(dev, p, len); }

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
    size_t n = 4 + make_frame(buf + 4, 0x44, (const uint8_t[]){NTPU_OP_NOP}, 1);
    ntpu_ref_write(dev, buf, n);
    get_reply(dev, &rep);
    cr_assert_eq(rep.status, NTPU_DEV_ERR_LENGTH);
    get_reply(dev, &rep);
    cr_assert_eq(rep.seq, 0x44);
    cr_assert_eq(rep.status, NTPU_DEV_OK);

    /* LEN = max_payload passes the header check: the opcode check answers */
    static uint8_t big[4112];
    big[0] = 0x09;
    cr_assert_eq(run_len(big, sizeof big), NTPU_DEV_ERR_OPCODE);
}

Test(ref_model, every_error_status)
{
    uint8_t c[6 + 4 * 64 + 8] = {0};

    /* ERR_OPCODE, whatever the length */
    for (unsigned op = 0x09; op <= 0xFF; op++) {
        c[0] = (uint8_t)op;
        cr_assert_eq(run_len(c, 1 + op % 7), NTPU_DEV_ERR_OPCODE, "op 0x%02x", op);
    }
    memset(c, 0, sizeof c);

    /* ERR_LENGTH: wrong for the opcode */
    const struct { uint8_t op; size_t len; } bad_len[] = {
        {NTPU_OP_NOP, 2},      {NTPU_OP_INFO, 2},   {NTPU_OP_WRITE_MEM, 5}, {NTPU_OP_WRITE_MEM, 1},
        {NTPU_OP_READ_MEM, 5}, {NTPU_OP_READ_MEM, 7}, {NTPU_OP_LOAD_W, 3},  {NTPU_OP_LOAD_W, 5},
        {NTPU_OP_MATMUL, 7},   {NTPU_OP_MATMUL, 9}, {NTPU_OP_FENCE, 2},     {NTPU_OP_STATUS, 2},
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

    /* ERR_MEM */
    memset(c, 0, sizeof c);
    for (unsigned mem = 3; mem < 256; mem += 41) {
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
        if (bit >= 2) {
            c[0] = NTPU_OP_MATMUL;
            cr_assert_eq(run_len(c, 8), NTPU_DEV_ERR_ARG);
        }
    }

    /* ERR_RANGE, and the last valid address of each check */
    memset(c, 0, sizeof c);
    const struct { unsigned mem, last; } mems[] = {{0, 8192}, {1, 4096}, {2, 2048}};
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
    put16(c + 2, 2048);
    put16(c + 4, 1);
    cr_assert_eq(run_len(c, 6 + 4 * N), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(load_w(dev, 0, 4096 - N), NTPU_DEV_OK);
    cr_assert_eq(load_w(dev, 0, 4096 - N + 1), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(load_w(dev, NTPU_LOADW_TRANSPOSE, 0xFFFF), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul(dev, 0, 8192 - 4, 2048 - 4, 4), NTPU_DEV_OK);
    cr_assert_eq(matmul(dev, 0, 8192 - 3, 0, 4), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(matmul(dev, 0, 0, 2048 - 3, 4), NTPU_DEV_ERR_RANGE);
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
    c[0] = 0x09;
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
    c[1] = 0xFF;
    cr_assert_eq(run_len(c, 9), NTPU_DEV_ERR_LENGTH);
    /* flags before range */
    put16(c + 2, 0xFFFF);
    put16(c + 6, 0xFFFF);
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
        /* the recipe of docs/protocol.md: max_payload + 8 zeros, then a NOP */
        static uint8_t zeros[4112 + 8];
        ntpu_ref_write(dev, zeros, sizeof zeros);
        uint8_t nop_seq = (uint8_t)(0x80 + round);
        ntpu_ref_write(dev, txbuf, make_frame(txbuf, nop_seq, (const uint8_t[]){NTPU_OP_NOP}, 1));
        /* discard replies until the NOP's: they must still be well-formed frames */
        size_t have = ntpu_ref_read(dev, replies, sizeof replies);
        cr_assert_eq(ntpu_ref_pending(dev), 0);
        size_t i = 0;
        int found = 0;
        while (i < have) {
            cr_assert_eq(replies[i], NTPU_SOF_REPLY, "round %d: reply frame at %zu", round, i);
            size_t len = get16(replies + i + 2);
            cr_assert_leq(i + len + 8, have);
            cr_assert_eq(get32(replies + i + 4 + len), (uint32_t)crc32(0L, replies + i + 1, (uInt)(3 + len)));
            if (replies[i + 1] == nop_seq && len == 1 && replies[i + 4] == NTPU_DEV_OK && i + 9 == have)
                found = 1;
            i += len + 8;
        }
        cr_assert(found, "round %d: the NOP's reply comes last", round);
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
        switch (rnd() % 6) {
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
        c[0] = (uint8_t)(rnd() % 11);
        if (rnd() & 1) { /* small fields, so some pass the checks */
            c[1] = (uint8_t)(rnd() % 4);
            if (len > 5) {
                c[3] = c[5] = 0;
                c[4] = (uint8_t)(rnd() % 4);
            }
            if (len > 7)
                c[7] = 0;
        }
        uint8_t seq = send(dev, c, len);
        get_reply(dev, &rep);
        cr_assert_eq(rep.seq, seq);
        cr_assert_leq(rep.status, NTPU_DEV_ERR_ARG);
        cr_assert_eq(ntpu_ref_pending(dev), 0);
    }
}

Test(ref_model, fuzz_random_bytes_never_crash)
{
    static uint8_t junk[1 << 16], out[1 << 16];
    ntpu_ref_config small = {2, 4, 2, 3, 73};
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
        ntpu_ref_config cfg = {n, 64, 2 * n, 64, 65535};
        ntpu_ref *r = ntpu_ref_new(&cfg);
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
