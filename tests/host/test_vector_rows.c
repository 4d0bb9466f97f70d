/* SPDX-License-Identifier: Apache-2.0 */
/* The golden model's vector unit over many rows at once (vector_rows.c):
 * ntpu_act_f32_lanes, ntpu_relu_grad_lanes, ntpu_colsum_f32_rows,
 * ntpu_optim_f32_lanes and ntpu_f32_add_row against
 * the scalar functions that define them, on hostile values (NaNs, infinities,
 * subnormals and zeros of both signs, bf16 rounding ties), for row widths that
 * do and do not fill blocks of eight; and ACT / RELU_GRAD through the model
 * with destinations just ahead of their sources, where the rows must still run
 * one at a time, for array sizes below eight. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "ntpu_ref.h"
#include "numerics_internal.h"

static uint64_t rng = 0x9B05688C2B3E6C1Full;
static uint32_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static const uint32_t hostile[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x80800000u,
                                   0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7F7FFFFFu,
                                   0xFF7FFFFFu, 0x3F808000u, 0x3F818000u, 0x7F7F8000u, 0x807F8000u};

static uint32_t rnd_f32(void)
{
    uint32_t r = rnd();
    switch (r % 4) {
    case 0: return hostile[(r >> 8) % (sizeof hostile / sizeof hostile[0])];
    case 1: return (rnd() & 0xFFFF0000u) | 0x8000u | (r & 0x10000u); /* bf16 rounding ties */
    case 2: return (rnd() & 0x807FFFFFu) | (1u + rnd() % 4) << 23;   /* sums that land below 2^-126 */
    default: return rnd();
    }
}

static uint16_t rnd_bf16(void)
{
    return (uint16_t)(rnd_f32() >> (rnd() % 2 ? 16 : 0));
}

enum { LEN = 24 * 40 };
static uint32_t src[LEN], bias[64], d32[LEN], w32[LEN];
static uint16_t mask[LEN], d16[LEN], w16[LEN];

static void fill(void)
{
    for (unsigned i = 0; i < LEN; i++) {
        src[i] = rnd_f32();
        mask[i] = rnd_bf16();
        d32[i] = w32[i] = rnd();
        d16[i] = w16[i] = (uint16_t)rnd();
    }
    for (unsigned j = 0; j < 64; j++)
        bias[j] = rnd_f32();
}

static void compare(const char *what, unsigned n, size_t count)
{
    for (size_t i = 0; i < LEN; i++) {
        if (d32[i] != w32[i])
            cr_assert_fail("%s n %u count %zu: fp32 lane %zu 0x%08X, want 0x%08X", what, n, count, i, d32[i], w32[i]);
        if (d16[i] != w16[i])
            cr_assert_fail("%s n %u count %zu: bf16 lane %zu 0x%04X, want 0x%04X", what, n, count, i, d16[i], w16[i]);
    }
}

Test(vector_rows, act_lanes_are_the_scalar_steps)
{
    const unsigned ns[] = {2, 3, 5, 8, 16, 24};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (unsigned f = 0; f < 8; f++) {
            const unsigned n = ns[ni];
            const int with_bias = f & 1, relu = (f >> 1) & 1, wide = (f >> 2) & 1;
            const size_t counts[] = {0, 1, 7, 8, 9, n, 3 * n, 17 * n, LEN};
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
                const size_t count = counts[ci];
                fill();
                ntpu_act_f32_lanes(src, count, n, with_bias ? bias : NULL, relu, wide ? d32 : NULL, wide ? NULL : d16);
                for (size_t i = 0; i < count; i++) {
                    uint32_t x = src[i];
                    if (with_bias)
                        x = ntpu_f32_add(x, bias[i % n]);
                    if (relu)
                        x = ntpu_relu_f32(x);
                    if (wide)
                        w32[i] = x;
                    else
                        w16[i] = ntpu_bf16_from_f32_bits(x);
                }
                compare(with_bias ? (relu ? "ACT bias relu" : "ACT bias") : relu ? "ACT relu" : "ACT", n, count);
            }
        }
}

Test(vector_rows, add_row_is_the_scalar_add)
{
    for (unsigned n = 0; n <= 40; n++)
        for (unsigned off = 0; off < 3; off++) {
            fill();
            memcpy(w32, src + 100, sizeof w32[0] * 64);
            memcpy(d32, w32, sizeof w32[0] * 64);
            ntpu_f32_add_row(d32 + off, src + off, n);
            for (unsigned j = 0; j < n; j++)
                w32[off + j] = ntpu_f32_add(w32[off + j], src[off + j]);
            for (unsigned j = 0; j < 64; j++)
                cr_assert_eq(d32[j], w32[j], "n %u offset %u lane %u: 0x%08X, want 0x%08X", n, off, j, d32[j], w32[j]);
        }
}

Test(vector_rows, relu_grad_lanes_are_the_scalar_select)
{
    const size_t counts[] = {0, 1, 7, 8, 9, 16, 100, LEN};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int wide = 0; wide < 2; wide++) {
            const size_t count = counts[ci];
            fill();
            ntpu_relu_grad_lanes(src, mask, count, wide ? d32 : NULL, wide ? NULL : d16);
            for (size_t i = 0; i < count; i++) {
                uint32_t x = ntpu_bf16_positive(mask[i]) ? src[i] : 0u;
                if (wide)
                    w32[i] = x;
                else
                    w16[i] = ntpu_bf16_from_f32_bits(x);
            }
            compare("RELU_GRAD", 0, count);
        }
}

Test(vector_rows, colsum_rows_are_the_scalar_chains)
{
    const unsigned ns[] = {2, 3, 8, 16, 24};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (size_t rows = 0; rows <= 40; rows += 13) {
            const unsigned n = ns[ni];
            fill();
            uint32_t s[64], want[64];
            for (unsigned j = 0; j < n; j++)
                s[j] = want[j] = rnd_f32();
            ntpu_colsum_f32_rows(s, src, rows, n);
            for (size_t r = 0; r < rows; r++)
                for (unsigned j = 0; j < n; j++)
                    want[j] = ntpu_f32_add(want[j], src[r * n + j]);
            for (unsigned j = 0; j < n; j++)
                cr_assert_eq(s[j], want[j], "n %u rows %zu column %u: 0x%08X, want 0x%08X", n, rows, j, s[j], want[j]);
        }
}

Test(vector_rows, optim_lanes_are_the_element_function)
{
    const unsigned ns[] = {2, 3, 8, 16, 24};
    static uint32_t p[LEN], g[LEN], st[LEN], wp[LEN], ws[LEN];
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (int mom = 0; mom < 2; mom++)
            for (size_t count = 0; count <= LEN; count += count < 20 ? 1 : 97) {
                const unsigned n = ns[ni];
                uint32_t lr[64], wd[64], mu[64];
                for (unsigned j = 0; j < n; j++) { /* ordinary constants mostly, hostile ones too */
                    lr[j] = rnd() % 4 ? ntpu_f32_bits(0.01f * (float)(j + 1)) : rnd_f32();
                    wd[j] = rnd() % 4 ? ntpu_f32_bits(1e-4f * (float)j) : rnd_f32();
                    mu[j] = rnd() % 4 ? ntpu_f32_bits(0.9f) : rnd_f32();
                }
                for (size_t i = 0; i < LEN; i++) {
                    p[i] = wp[i] = rnd_f32();
                    g[i] = rnd_f32();
                    st[i] = ws[i] = rnd_f32();
                }
                ntpu_optim_f32_lanes(p, g, mom ? st : NULL, count, n, lr, wd, mu);
                for (size_t i = 0; i < count; i++)
                    ntpu_optim_f32(&wp[i], g[i], mom ? &ws[i] : NULL, lr[i % n], wd[i % n], mu[i % n]);
                for (size_t i = 0; i < LEN; i++) {
                    cr_assert_eq(p[i], wp[i], "n %u mom %d count %zu: p lane %zu 0x%08X, want 0x%08X", n, mom, count, i,
                                 p[i], wp[i]);
                    cr_assert_eq(st[i], ws[i], "n %u mom %d count %zu: s lane %zu", n, mom, count, i);
                }
            }
}

/* ---------------------------------------------------------------- through the model */

static uint8_t seq_next;

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Sends one command frame; returns the reply's status and its data in data (if any). */
static uint8_t run(ntpu_ref *r, const uint8_t *payload, size_t len, uint8_t *data)
{
    static uint8_t f[8192], in[8192];
    f[0] = NTPU_SOF_CMD;
    f[1] = seq_next++;
    put16(f + 2, (unsigned)len);
    memcpy(f + 4, payload, len);
    uint32_t crc = (uint32_t)crc32(0L, f + 1, (uInt)(3 + len));
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(crc >> (8 * i));
    ntpu_ref_write(r, f, len + 8);
    size_t got = ntpu_ref_read(r, in, sizeof in);
    cr_assert_geq(got, 9, "a reply");
    size_t rlen = (size_t)in[2] | (size_t)in[3] << 8;
    if (data)
        memcpy(data, in + 5, rlen - 1);
    return in[4];
}

static void mem(ntpu_ref *r, uint8_t op, unsigned m, unsigned rows, void *data, size_t bytes)
{
    uint8_t c[8192] = {op, (uint8_t)m};
    put16(c + 4, rows);
    if (op == NTPU_OP_WRITE_MEM)
        memcpy(c + 6, data, bytes);
    cr_assert_eq(run(r, c, op == NTPU_OP_WRITE_MEM ? 6 + bytes : 6, op == NTPU_OP_READ_MEM ? data : NULL), NTPU_DEV_OK);
}

enum { ROWS = 64 };

/* ACT (with bias and ReLU) or RELU_GRAD with n lanes, dst = base + ahead over
 * src (ACC) or mask (UB), against the rows run one at a time here. */
static void overlap_case(unsigned n, int relu_grad, unsigned out, unsigned ahead)
{
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = n;
    cfg.ub_rows = cfg.acc_rows = ROWS;
    seq_next = 0;
    ntpu_ref *r = ntpu_ref_new(&cfg);
    cr_assert(r);
    static uint32_t acc[ROWS * 8], acc_got[ROWS * 8];
    static uint16_t ub[ROWS * 8], ub_got[ROWS * 8];
    for (unsigned i = 0; i < ROWS * n; i++) {
        acc[i] = rnd_f32();
        ub[i] = rnd_bf16();
    }
    mem(r, NTPU_OP_WRITE_MEM, NTPU_MEM_ACC, ROWS, acc, ROWS * n * 4);
    mem(r, NTPU_OP_WRITE_MEM, NTPU_MEM_UB, ROWS, ub, ROWS * n * 2);
    const unsigned src = 4, msk = 30, aux = 60, rows = 20;
    const unsigned dst = (out == NTPU_OUT_ACC ? src : msk) + ahead;
    uint8_t c[10] = {relu_grad ? NTPU_OP_RELU_GRAD : NTPU_OP_ACT,
                     (uint8_t)(out | (relu_grad ? 0 : NTPU_ACT_BIAS | NTPU_ACT_RELU))};
    put16(c + 2, src);
    put16(c + 4, dst);
    put16(c + 6, rows);
    put16(c + 8, relu_grad ? msk : aux);
    cr_assert_eq(run(r, c, sizeof c, NULL), NTPU_DEV_OK);
    for (unsigned row = 0; row < rows; row++) /* the ISA: a row reads its operands, then writes */
        for (unsigned j = 0; j < n; j++) {
            uint32_t x = acc[(src + row) * n + j];
            x = relu_grad ? (ntpu_bf16_positive(ub[(msk + row) * n + j]) ? x : 0u)
                          : ntpu_relu_f32(ntpu_f32_add(x, acc[aux * n + j]));
            if (out == NTPU_OUT_ACC)
                acc[(dst + row) * n + j] = x;
            else
                ub[(dst + row) * n + j] = ntpu_bf16_from_f32_bits(x);
        }
    mem(r, NTPU_OP_READ_MEM, NTPU_MEM_ACC, ROWS, acc_got, 0);
    mem(r, NTPU_OP_READ_MEM, NTPU_MEM_UB, ROWS, ub_got, 0);
    for (unsigned i = 0; i < ROWS * n; i++) {
        cr_assert_eq(acc_got[i], acc[i], "%s n %u out %u ahead %u: ACC row %u lane %u", relu_grad ? "RELU_GRAD" : "ACT",
                     n, out, ahead, i / n, i % n);
        cr_assert_eq(ub_got[i], ub[i], "%s n %u out %u ahead %u: UB row %u lane %u", relu_grad ? "RELU_GRAD" : "ACT", n,
                     out, ahead, i / n, i % n);
    }
    ntpu_ref_free(r);
}

/* OPTIM (momentum when mom) with g's rows `below` rows under p's (or s's when
 * below_s), n lanes, against the rows run one at a time here. */
static void optim_case(unsigned n, int mom, unsigned below, int below_s)
{
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = n;
    cfg.ub_rows = cfg.acc_rows = ROWS;
    seq_next = 0;
    ntpu_ref *r = ntpu_ref_new(&cfg);
    cr_assert(r);
    static uint32_t acc[ROWS * 8], got[ROWS * 8];
    for (unsigned i = 0; i < ROWS * n; i++)
        acc[i] = rnd_f32();
    const unsigned prow = 10, rows = 12, aux = 55;
    const unsigned grow = (below_s ? prow + rows : prow) - below;
    for (unsigned j = 0; j < n; j++) {
        acc[aux * n + j] = ntpu_f32_bits(0.01f);
        acc[(aux + 1) * n + j] = ntpu_f32_bits(0.001f);
        acc[(aux + 2) * n + j] = ntpu_f32_bits(0.9f);
    }
    mem(r, NTPU_OP_WRITE_MEM, NTPU_MEM_ACC, ROWS, acc, ROWS * n * 4);
    uint8_t c[10] = {NTPU_OP_OPTIM, (uint8_t)(mom ? NTPU_OPTIM_MOMENTUM : 0)};
    put16(c + 2, prow);
    put16(c + 4, grow);
    put16(c + 6, rows);
    put16(c + 8, aux);
    cr_assert_eq(run(r, c, sizeof c, NULL), NTPU_DEV_OK);
    for (unsigned row = 0; row < rows; row++) /* a row reads p, g, s, then writes */
        for (unsigned j = 0; j < n; j++) {
            uint32_t gv = acc[(grow + row) * n + j];
            ntpu_optim_f32(&acc[(prow + row) * n + j], gv, mom ? &acc[(prow + rows + row) * n + j] : NULL,
                           acc[aux * n + j], acc[(aux + 1) * n + j], acc[(aux + 2) * n + j]);
        }
    mem(r, NTPU_OP_READ_MEM, NTPU_MEM_ACC, ROWS, got, 0);
    for (unsigned i = 0; i < ROWS * n; i++)
        cr_assert_eq(got[i], acc[i], "OPTIM n %u mom %d g %u below %s: ACC row %u lane %u", n, mom, below,
                     below_s ? "s" : "p", i / n, i % n);
    ntpu_ref_free(r);
}

Test(vector_rows, optim_with_g_just_below_p_or_s)
{
    const unsigned ns[] = {2, 3, 4, 8};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (unsigned below = 0; below <= 5; below++) {
            optim_case(ns[ni], 0, below, 0);
            optim_case(ns[ni], 1, below, 0);
            optim_case(ns[ni], 1, below, 1);
        }
}

Test(vector_rows, destinations_just_ahead_still_run_row_by_row)
{
    const unsigned ns[] = {2, 3, 4, 8};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (unsigned ahead = 0; ahead <= 5; ahead++) {
            overlap_case(ns[ni], 0, NTPU_OUT_ACC, ahead);
            overlap_case(ns[ni], 1, NTPU_OUT_ACC, ahead);
            overlap_case(ns[ni], 1, NTPU_OUT_UB, ahead);
        }
}
