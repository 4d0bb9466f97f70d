/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.4's Adam in the golden model (docs/isa.md, "Version 1.4"): the ID
 * block, the optimizer-state memory OS, OPTIM with ADAM / DECOUPLED against the
 * element function ntpu_adam_f32 row by row, and every error in its order. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "ntpu_ref.h"

static uint8_t seq_next;
static uint8_t rep_status;
static uint8_t rep_data[8192];
static size_t rep_len;

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Sends one command frame and reads its reply into rep_*; returns the status. */
static uint8_t run(ntpu_ref *r, const uint8_t *payload, size_t len)
{
    static uint8_t f[8192];
    f[0] = NTPU_SOF_CMD;
    f[1] = seq_next++;
    put16(f + 2, (unsigned)len);
    memcpy(f + 4, payload, len);
    uint32_t crc = (uint32_t)crc32(0L, f + 1, (uInt)(3 + len));
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(crc >> (8 * i));
    ntpu_ref_write(r, f, len + 8);
    uint8_t in[8192];
    size_t n = ntpu_ref_read(r, in, sizeof in);
    cr_assert_geq(n, 9, "a reply");
    rep_len = (size_t)in[2] | (size_t)in[3] << 8;
    cr_assert_eq(n, rep_len + 8);
    rep_status = in[4];
    memcpy(rep_data, in + 5, rep_len - 1);
    return rep_status;
}

static uint8_t mem_cmd(ntpu_ref *r, uint8_t op, unsigned mem, unsigned addr, unsigned rows, const void *data,
                       size_t bytes)
{
    uint8_t c[8192] = {op, (uint8_t)mem};
    put16(c + 2, addr);
    put16(c + 4, rows);
    if (data)
        memcpy(c + 6, data, bytes);
    return run(r, c, 6 + (data ? bytes : 0));
}

/* OPTIM with the 1.4 field shape; len picks how many bytes go out. */
static uint8_t optim(ntpu_ref *r, unsigned flags, unsigned p, unsigned g, unsigned rows, unsigned aux, unsigned s,
                     size_t len)
{
    uint8_t c[12] = {NTPU_OP_OPTIM, (uint8_t)flags};
    put16(c + 2, p);
    put16(c + 4, g);
    put16(c + 6, rows);
    put16(c + 8, aux);
    put16(c + 10, s);
    return run(r, c, len);
}

static uint64_t rng = 0x6A09E667F3BCC909ull;
static uint32_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A value of moderate size with a random sign, or (1 in 8) any bit pattern. */
static uint32_t rnd_val(void)
{
    uint32_t r = rnd();
    if ((r & 7) == 0)
        return rnd();
    return (r & 0x807FFFFFu) | (uint32_t)(110 + rnd() % 30) << 23;
}

/* A fresh model expects SEQ 0 first. */
static ntpu_ref *fresh(const ntpu_ref_config *c)
{
    seq_next = 0;
    ntpu_ref *r = ntpu_ref_new(c);
    cr_assert(r);
    return r;
}

static ntpu_ref *model(unsigned n, unsigned acc, unsigned os)
{
    ntpu_ref_config c = ntpu_ref_default_config();
    c.n = n;
    c.acc_rows = acc;
    c.os_rows = os;
    c.pm_rows = 0; /* without programs: memory 3 and feature bit 4 stay clear */
    return fresh(&c);
}

Test(ref_adam, id_block_1_4)
{
    ntpu_ref *r = model(8, 32768, 65536);
    uint8_t op = NTPU_OP_INFO;
    cr_assert_eq(run(r, &op, 1), NTPU_DEV_OK);
    cr_assert_eq(rep_len, 1 + 40, "40-byte ID block");
    cr_expect_eq(rep_data[NTPU_ID_OFF_VERSION_MINOR], 5, "version 1.5");
    cr_expect_eq(rep_data[NTPU_ID_OFF_FEATURES], 0xEF, "TRANSPOSE, TRANSPOSE_A, VECTOR, OPTIM, ADAM, CONV, POOL");
    cr_expect_eq(get32(rep_data + NTPU_ID_OFF_PM_ROWS), 0, "no program memory here");
    cr_expect_eq(get32(rep_data + NTPU_ID_OFF_OS_ROWS), 65536);
    ntpu_ref_free(r);

    r = model(8, 32768, 0);
    cr_assert_eq(run(r, &op, 1), NTPU_DEV_OK);
    cr_expect_eq(rep_data[NTPU_ID_OFF_FEATURES], 0xCF, "no OS: no ADAM");
    cr_expect_eq(get32(rep_data + NTPU_ID_OFF_OS_ROWS), 0);
    ntpu_ref_free(r);

    ntpu_ref_config c = ntpu_ref_default_config();
    c.no_vector = 1;
    r = fresh(&c);
    cr_assert_eq(run(r, &op, 1), NTPU_DEV_OK);
    cr_expect_eq(rep_data[NTPU_ID_OFF_FEATURES] & (NTPU_FEATURE_OPTIM_BIT | NTPU_FEATURE_ADAM_BIT), 0);
    cr_expect_eq(get32(rep_data + NTPU_ID_OFF_OS_ROWS), 0, "OS belongs to the vector unit");
    ntpu_ref_free(r);
}

Test(ref_adam, os_memory_round_trip_and_ids)
{
    const unsigned n = 4, rows = 100;
    ntpu_ref *r = model(n, 64, 300);
    uint32_t v[100 * 4], back[100 * 4];
    for (unsigned i = 0; i < rows * n; i++)
        v[i] = rnd();
    cr_assert_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_OS, 200, rows, v, sizeof v), NTPU_DEV_OK);
    cr_assert_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_OS, 200, rows, NULL, 0), NTPU_DEV_OK);
    cr_assert_eq(rep_len, 1 + sizeof v);
    memcpy(back, rep_data, sizeof back);
    cr_expect_eq(memcmp(back, v, sizeof v), 0, "OS rows are 4N bytes, as ACC's");
    cr_expect_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_OS, 200, 101, NULL, 0), NTPU_DEV_ERR_RANGE);
    cr_expect_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_OS, 201, rows, v, sizeof v), NTPU_DEV_ERR_RANGE);
    cr_expect_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_OS, 300, 0, NULL, 0), NTPU_DEV_OK);
    cr_expect_eq(mem_cmd(r, NTPU_OP_READ_MEM, 3, 0, 1, NULL, 0), NTPU_DEV_ERR_MEM, "PM is not on this core");
    cr_expect_eq(mem_cmd(r, NTPU_OP_READ_MEM, 5, 0, 1, NULL, 0), NTPU_DEV_ERR_MEM);
    cr_expect_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, 3, 0, 0, NULL, 0), NTPU_DEV_ERR_MEM);
    /* ACC is another memory */
    cr_assert_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, 1, NULL, 0), NTPU_DEV_OK);
    cr_expect_eq(get32(rep_data), 0);
    ntpu_ref_free(r);

    r = model(4, 64, 0);
    cr_expect_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_OS, 0, 0, NULL, 0), NTPU_DEV_ERR_MEM, "no OS");
    cr_expect_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_OS, 0, 0, NULL, 0), NTPU_DEV_ERR_MEM);
    ntpu_ref_free(r);
}

/* Writes random p, g, m, v and constants, runs one OPTIM ADAM, and checks every
 * row against ntpu_adam_f32 (and that nothing else changed). */
static void check_adam(unsigned n, int decoupled, unsigned prow, unsigned grow, unsigned rows, unsigned aux,
                       unsigned srow)
{
    enum { ACC = 128, OS = 96 };
    ntpu_ref *r = model(n, ACC, OS);
    static uint32_t acc[ACC * 8], os[OS * 8], want_acc[ACC * 8], want_os[OS * 8];
    for (unsigned i = 0; i < ACC * n; i++)
        acc[i] = rnd_val();
    for (unsigned i = 0; i < OS * n; i++)
        os[i] = rnd_val() & 0x7FFFFFFFu; /* v >= 0 mostly; m's sign does not matter */
    /* ordinary constants, different per lane */
    for (unsigned j = 0; j < n; j++) {
        float lr = 1e-3f * (float)(j + 1), wd = 0.01f * (float)j, b1 = 0.9f - 0.01f * (float)j, b2 = 0.999f;
        const float k[NTPU_ADAM_CONSTS] = {lr,
                                           decoupled ? 1.0f - lr * wd : wd,
                                           b1,
                                           1.0f - b1,
                                           b2,
                                           1.0f - b2,
                                           0.1f + 0.1f * (float)j,
                                           0.001f * (float)(j + 1),
                                           1e-8f};
        for (unsigned i = 0; i < NTPU_ADAM_CONSTS; i++)
            memcpy(&acc[(aux + i) * n + j], &k[i], 4);
    }
    for (unsigned i = 0; i < ACC; i += 64)
        cr_assert_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_ACC, i, 64, acc + i * n, 64 * n * 4), NTPU_DEV_OK);
    for (unsigned i = 0; i < OS; i += 48)
        cr_assert_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_OS, i, 48, os + i * n, 48 * n * 4), NTPU_DEV_OK);
    memcpy(want_acc, acc, sizeof acc);
    memcpy(want_os, os, sizeof os);
    for (unsigned row = 0; row < rows; row++) /* the ISA's order: a row reads everything, then writes */
        for (unsigned j = 0; j < n; j++) {
            uint32_t k[NTPU_ADAM_CONSTS];
            for (unsigned i = 0; i < NTPU_ADAM_CONSTS; i++)
                k[i] = acc[(aux + i) * n + j]; /* read before row 0 */
            uint32_t g = want_acc[(grow + row) * n + j];
            ntpu_adam_f32(&want_acc[(prow + row) * n + j], g, &want_os[(srow + row) * n + j],
                          &want_os[(srow + rows + row) * n + j], k, decoupled);
        }
    cr_assert_eq(optim(r, NTPU_OPTIM_ADAM | (decoupled ? NTPU_OPTIM_DECOUPLED : 0), prow, grow, rows, aux, srow, 12),
                 NTPU_DEV_OK);
    for (unsigned i = 0; i < ACC; i += 64) {
        cr_assert_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_ACC, i, 64, NULL, 0), NTPU_DEV_OK);
        for (unsigned e = 0; e < 64 * n; e++)
            cr_assert_eq(get32(rep_data + 4 * e), want_acc[i * n + e], "ACC row %u lane %u", i + e / n, e % n);
    }
    for (unsigned i = 0; i < OS; i += 48) {
        cr_assert_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_OS, i, 48, NULL, 0), NTPU_DEV_OK);
        for (unsigned e = 0; e < 48 * n; e++)
            cr_assert_eq(get32(rep_data + 4 * e), want_os[i * n + e], "OS row %u lane %u", i + e / n, e % n);
    }
    ntpu_ref_free(r);
}

Test(ref_adam, adam_and_adamw_rows_against_the_element)
{
    for (int dec = 0; dec < 2; dec++) {
        check_adam(8, dec, 0, 40, 30, 100, 10);
        check_adam(2, dec, 5, 60, 40, 110, 0);
        check_adam(4, dec, 20, 20, 16, 70, 30); /* p and g the same rows */
        check_adam(4, dec, 10, 14, 16, 70, 64); /* overlapping: row r's p is row r - 4's g */
        check_adam(4, dec, 10, 6, 16, 20, 60);  /* the constants inside p: read once, before row 0 */
        check_adam(2, dec, 10, 9, 16, 70, 60);  /* row r's g is row r - 1's p, fewer than 8 lanes back */
        check_adam(4, dec, 10, 9, 16, 70, 60);
        check_adam(8, dec, 10, 9, 16, 70, 60);
        check_adam(3, dec, 10, 8, 20, 70, 50);
        check_adam(3, dec, 0, 0, 0, 119, 96); /* rows = 0 does nothing */
    }
}

Test(ref_adam, optim_errors_in_order)
{
    const unsigned A = NTPU_OPTIM_ADAM, D = NTPU_OPTIM_DECOUPLED, M = NTPU_OPTIM_MOMENTUM;
    ntpu_ref *r = model(4, 64, 40);
    /* LEN is 12 with ADAM, 10 without: checked before the flags */
    cr_expect_eq(optim(r, A, 0, 0, 1, 0, 0, 10), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(optim(r, A | M | 0x80, 0, 0, 1, 0, 0, 11), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(optim(r, 0, 0, 0, 1, 0, 0, 12), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(optim(r, D, 0, 0, 1, 0, 0, 12), NTPU_DEV_ERR_LENGTH, "DECOUPLED alone keeps LEN 10");
    cr_expect_eq(optim(r, A, 0, 0, 1, 0, 0, 1), NTPU_DEV_ERR_LENGTH, "no flags byte");
    /* flags */
    cr_expect_eq(optim(r, A | M, 0, 0, 1, 0, 0, 12), NTPU_DEV_ERR_ARG, "MOMENTUM with ADAM");
    cr_expect_eq(optim(r, D, 0, 0, 1, 0, 0, 10), NTPU_DEV_ERR_ARG, "DECOUPLED without ADAM");
    for (unsigned bit = 3; bit < 8; bit++)
        cr_expect_eq(optim(r, A | 1u << bit, 0xFFFF, 0, 1, 0, 0, 12), NTPU_DEV_ERR_ARG, "bit %u", bit);
    /* ranges: p, g, aux + 9 in ACC; s + 2 rows in OS */
    cr_expect_eq(optim(r, A, 54, 0, 10, 0, 0, 12), NTPU_DEV_OK);
    cr_expect_eq(optim(r, A, 55, 0, 10, 0, 0, 12), NTPU_DEV_ERR_RANGE);
    cr_expect_eq(optim(r, A | D, 0, 55, 10, 0, 0, 12), NTPU_DEV_ERR_RANGE);
    cr_expect_eq(optim(r, A, 0, 0, 10, 55, 0, 12), NTPU_DEV_OK);
    cr_expect_eq(optim(r, A, 0, 0, 10, 56, 0, 12), NTPU_DEV_ERR_RANGE, "nine constant rows");
    cr_expect_eq(optim(r, A, 0, 0, 0, 56, 0, 12), NTPU_DEV_ERR_RANGE, "also with rows = 0");
    cr_expect_eq(optim(r, A, 0, 0, 10, 0, 20, 12), NTPU_DEV_OK);
    cr_expect_eq(optim(r, A, 0, 0, 10, 0, 21, 12), NTPU_DEV_ERR_RANGE, "m and v: 2 rows each row");
    cr_expect_eq(optim(r, A, 0, 0, 0xFFFF, 0, 0xFFFF, 12), NTPU_DEV_ERR_RANGE, "exact, no wrap");
    /* the 1.3 forms are unchanged */
    cr_expect_eq(optim(r, M, 0, 0, 32, 61, 0, 10), NTPU_DEV_OK);
    cr_expect_eq(optim(r, 0x02 | 0x08, 0, 0, 1, 0, 0, 10), NTPU_DEV_ERR_LENGTH, "ADAM's length first");
    ntpu_ref_free(r);

    /* without OS, ADAM is a reserved flag; its length is still 12 */
    r = model(4, 64, 0);
    cr_expect_eq(optim(r, A, 0, 0, 1, 0, 0, 10), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(optim(r, A, 0, 0, 1, 0, 0, 12), NTPU_DEV_ERR_ARG);
    cr_expect_eq(optim(r, A | D, 0xFFFF, 0, 1, 0, 0, 12), NTPU_DEV_ERR_ARG);
    ntpu_ref_free(r);

    /* without the vector unit OPTIM is unknown, whatever its flags and length */
    ntpu_ref_config c = ntpu_ref_default_config();
    c.no_vector = 1;
    r = fresh(&c);
    for (size_t len = 1; len <= 12; len++)
        cr_expect_eq(optim(r, A, 0, 0, 1, 0, 0, len), NTPU_DEV_ERR_OPCODE, "LEN %zu", len);
    ntpu_ref_free(r);
}

Test(ref_adam, failed_optim_writes_nothing)
{
    ntpu_ref *r = model(4, 64, 40);
    uint32_t v[40 * 4];
    for (unsigned i = 0; i < 40 * 4; i++)
        v[i] = rnd_val();
    cr_assert_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_OS, 0, 40, v, sizeof v), NTPU_DEV_OK);
    cr_assert_eq(mem_cmd(r, NTPU_OP_WRITE_MEM, NTPU_MEM_ACC, 0, 40, v, sizeof v), NTPU_DEV_OK);
    cr_assert_eq(optim(r, NTPU_OPTIM_ADAM, 0, 10, 10, 20, 21, 12), NTPU_DEV_ERR_RANGE);
    cr_assert_eq(optim(r, NTPU_OPTIM_ADAM | NTPU_OPTIM_MOMENTUM, 0, 10, 10, 20, 0, 12), NTPU_DEV_ERR_ARG);
    cr_assert_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_OS, 0, 40, NULL, 0), NTPU_DEV_OK);
    cr_expect_eq(memcmp(rep_data, v, sizeof v), 0);
    cr_assert_eq(mem_cmd(r, NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, 40, NULL, 0), NTPU_DEV_OK);
    cr_expect_eq(memcmp(rep_data, v, sizeof v), 0);
    ntpu_ref_free(r);
}
