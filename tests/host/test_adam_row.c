/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu_adam_f32_row, the Adam of the golden model's OPTIM ADAM and of the host
 * optimizer, eight lanes at a time: with the device's arithmetic against
 * ntpu_adam_f32 element by element, with IEEE's against the plain float
 * formula, on ordinary values and on hostile ones (subnormals, values at and
 * around 2^-126, results that underflow, Inf, NaN, -0), for every period of
 * constants, length and offset around the blocks of eight. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ntpu/numerics.h"
#include "numerics_internal.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static uint32_t with_exp(uint32_t r, uint32_t e)
{
    return (r & 0x807FFFFFu) | e << 23;
}

/* Bit patterns that take the fallback: subnormals, the edge of the normal range, Inf, NaN, zeros. */
static const uint32_t hostile[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x80800000u,
                                   0x00800001u, 0x00FFFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                   0x7F800001u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x01000000u};

/* A value for an operand: mostly moderate, sometimes tiny enough that its
 * products underflow, sometimes hostile, sometimes any bits. */
static uint32_t rnd_operand(int hostile_share)
{
    uint32_t r = rnd(), pick = rnd() % 16;
    if ((int)pick < hostile_share)
        return hostile[r % (sizeof hostile / sizeof hostile[0])];
    if (pick == 15)
        return rnd();
    if (pick == 14)
        return with_exp(r, 1 + rnd() % 40); /* near the bottom of the range */
    return with_exp(r, 100 + rnd() % 40);
}

/* Ordinary constants, different per lane; `wild` mixes in tiny and hostile ones. */
static void make_consts(uint32_t *k, unsigned period, int decoupled, int wild)
{
    for (unsigned j = 0; j < period; j++) {
        float lr = 1e-3f * (float)(j + 1), wd = 0.01f * (float)(j % 5), b1 = 0.9f - 0.01f * (float)(j % 7);
        const float f[NTPU_ADAM_CONSTS] = {
            lr,   decoupled ? 1.0f - lr * wd : wd, b1, 1.0f - b1, 0.999f, 1.0f - 0.999f, 0.1f + 0.01f * (float)j, 1e-3f,
            1e-8f};
        for (unsigned c = 0; c < NTPU_ADAM_CONSTS; c++) {
            memcpy(&k[c * period + j], &f[c], 4);
            if (wild && rnd() % 8 == 0)
                k[c * period + j] = rnd() % 2 ? hostile[rnd() % (sizeof hostile / sizeof hostile[0])]
                                              : with_exp(rnd() & 0x7FFFFFFFu, 1 + rnd() % 30);
        }
    }
}

enum { LEN = 600 };

/* Runs the row function on count elements from off against the element
 * functions on copies; asserts every p, m, v bit (and that g is untouched). */
static void check(unsigned period, int decoupled, ntpu_adam_arith arith, int hostile_share, int wild)
{
    static uint32_t p[LEN], g[LEN], m[LEN], v[LEN], p2[LEN], g2[LEN], m2[LEN], v2[LEN];
    uint32_t k[NTPU_ADAM_CONSTS * 64];
    make_consts(k, period, decoupled, wild);
    for (unsigned i = 0; i < LEN; i++) {
        p[i] = rnd_operand(hostile_share);
        g[i] = rnd_operand(hostile_share);
        m[i] = rnd_operand(hostile_share);
        v[i] = rnd_operand(hostile_share) & (rnd() % 4 ? 0x7FFFFFFFu : ~0u); /* v >= 0 mostly */
        if (i % 5 == 0) /* gradients small enough that g * g underflows, or lands near 2^-126 */
            g[i] = with_exp(g[i], 50 + rnd() % 20);
    }
    const size_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 40, 64, 100, LEN};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const size_t len = lens[li];
        memcpy(p2, p, sizeof p);
        memcpy(g2, g, sizeof g);
        memcpy(m2, m, sizeof m);
        memcpy(v2, v, sizeof v);
        ntpu_adam_f32_row(p2, g2, m2, v2, len, k, period, decoupled, arith);
        for (size_t i = 0; i < LEN; i++) {
            uint32_t wp = p[i], wm = m[i], wv = v[i];
            if (i < len) {
                uint32_t e[NTPU_ADAM_CONSTS];
                for (unsigned c = 0; c < NTPU_ADAM_CONSTS; c++)
                    e[c] = k[c * period + i % period];
                if (arith == NTPU_ADAM_DEVICE) {
                    ntpu_adam_f32(&wp, g[i], &wm, &wv, e, decoupled);
                } else {
                    float f[NTPU_ADAM_CONSTS], fp = ntpu_f32_from_bits(p[i]), fg = ntpu_f32_from_bits(g[i]);
                    memcpy(f, e, sizeof f);
                    float gi = decoupled ? fg : fg + f[NTPU_ADAM_K_WD] * fp;
                    if (decoupled)
                        fp *= f[NTPU_ADAM_K_WD];
                    float fm = f[NTPU_ADAM_K_B1] * ntpu_f32_from_bits(m[i]) + f[NTPU_ADAM_K_1MB1] * gi;
                    float fv = f[NTPU_ADAM_K_B2] * ntpu_f32_from_bits(v[i]) + f[NTPU_ADAM_K_1MB2] * gi * gi;
                    fp -= f[NTPU_ADAM_K_LR] * (fm / f[NTPU_ADAM_K_C1]) /
                          (sqrtf(fv / f[NTPU_ADAM_K_C2]) + f[NTPU_ADAM_K_EPS]);
                    wp = ntpu_f32_bits(fp);
                    wm = ntpu_f32_bits(fm);
                    wv = ntpu_f32_bits(fv);
                }
            }
            /* IEEE NaNs may differ in payload between scalar and vector code: any NaN is one */
            int nan_ok = arith == NTPU_ADAM_IEEE && isnan(ntpu_f32_from_bits(wp)) && isnan(ntpu_f32_from_bits(p2[i]));
            if (p2[i] != wp && !nan_ok)
                cr_assert_fail("period %u dec %d arith %d len %zu elem %zu p: 0x%08X want 0x%08X (p 0x%08X g 0x%08X "
                               "m 0x%08X v 0x%08X)",
                               period, decoupled, arith, len, i, p2[i], wp, p[i], g[i], m[i], v[i]);
            cr_assert(m2[i] == wm || (arith == NTPU_ADAM_IEEE && isnan(ntpu_f32_from_bits(wm))), "elem %zu m", i);
            cr_assert(v2[i] == wv || (arith == NTPU_ADAM_IEEE && isnan(ntpu_f32_from_bits(wv))), "elem %zu v", i);
            cr_assert_eq(g2[i], g[i], "g untouched");
        }
    }
}

Test(adam_row, device_arithmetic_is_the_element_function)
{
    const unsigned periods[] = {1, 2, 3, 5, 8, 12, 16, 24, 64};
    for (size_t pi = 0; pi < sizeof periods / sizeof periods[0]; pi++)
        for (int dec = 0; dec < 2; dec++) {
            check(periods[pi], dec, NTPU_ADAM_DEVICE, 0, 0); /* ordinary: the vector path throughout */
            check(periods[pi], dec, NTPU_ADAM_DEVICE, 3, 0); /* some lanes redone */
            check(periods[pi], dec, NTPU_ADAM_DEVICE, 8, 1); /* many, constants too */
        }
}

Test(adam_row, ieee_arithmetic_is_the_float_formula)
{
    const unsigned periods[] = {1, 3, 8, 64};
    for (size_t pi = 0; pi < sizeof periods / sizeof periods[0]; pi++)
        for (int dec = 0; dec < 2; dec++) {
            check(periods[pi], dec, NTPU_ADAM_IEEE, 0, 0);
            check(periods[pi], dec, NTPU_ADAM_IEEE, 8, 1);
        }
}

/* The edge the fallback exists for: (1 - b2) * gi * gi exactly 2^-126 - 2^-150,
 * which IEEE rounds (ties to even) up to 2^-126 and the device flushes to 0,
 * on every other lane of two blocks. */
Test(adam_row, device_flushes_where_ieee_rounds_up_to_the_smallest_normal)
{
    uint32_t k[NTPU_ADAM_CONSTS];
    const float f[NTPU_ADAM_CONSTS] = {1e-3f, 0.0f, 0.9f, 0.1f, 0.999f, 0x1.fffffep-1f, 0.5f, 0.25f, 1e-30f};
    memcpy(k, f, sizeof k);
    uint32_t p[16], g[16], m[16], v[16], pd[16], md[16], vd[16], pi[16], mi[16], vi[16];
    for (unsigned i = 0; i < 16; i++) {
        p[i] = 0x3F800000u + i;
        g[i] = i % 2 ? 0x3C000000u + i : 0x20000000u; /* 2^-63 on even lanes */
        m[i] = 0x3A000000u;
        v[i] = 0u;
    }
    memcpy(pd, p, sizeof p);
    memcpy(md, m, sizeof m);
    memcpy(vd, v, sizeof v);
    memcpy(pi, p, sizeof p);
    memcpy(mi, m, sizeof m);
    memcpy(vi, v, sizeof v);
    ntpu_adam_f32_row(pd, g, md, vd, 16, k, 1, 0, NTPU_ADAM_DEVICE);
    ntpu_adam_f32_row(pi, g, mi, vi, 16, k, 1, 0, NTPU_ADAM_IEEE);
    for (unsigned i = 0; i < 16; i++) {
        ntpu_adam_f32(&p[i], g[i], &m[i], &v[i], k, 0);
        cr_assert_eq(pd[i], p[i], "lane %u p", i);
        cr_assert_eq(md[i], m[i], "lane %u m", i);
        cr_assert_eq(vd[i], v[i], "lane %u v", i);
        if (i % 2 == 0) {
            cr_assert_eq(vd[i], 0u, "lane %u: the device flushes", i);
            cr_assert_eq(vi[i], 0x00800000u, "lane %u: IEEE rounds up to 2^-126", i);
            cr_assert_neq(pd[i], pi[i], "lane %u: so p parts too", i);
        }
    }
}
