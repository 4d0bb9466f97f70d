/* SPDX-License-Identifier: Apache-2.0 */
/* The library's host fallback for a device without the vector unit (an RTL core
 * built with VEC_EN = 0, as on the iCEBreaker; the golden model with novec=1):
 * ACT, RELU_GRAD and COLSUM, a training run and int8 inference through the
 * fallback must leave exactly the bytes the vector unit leaves on "ref". */
#include <criterion/criterion.h>
#include <stdint.h>

#include "fallback_pair.h"

static void open_both(void)
{
    open_pair("novec=1", 0x9E3779B97F4A7C15u);
}

TestSuite(vector_host, .init = open_both, .fini = close_pair);

/* fp32 bits with the cases the unit treats specially: zeros, subnormals, Inf,
 * NaN, near-cancelling pairs, and plain values. */
static uint32_t rnd_f32(void)
{
    static const uint32_t special[] = {0,           0x80000000u, 0x00000001u, 0x807FFFFFu, 0x7F800000u,
                                       0xFF800000u, 0x7FC00000u, 0xFFA00001u, 0x3F800000u, 0xBF800000u};
    uint32_t r = rnd();
    if (r % 8 == 0)
        return special[rnd() % (sizeof special / sizeof special[0])];
    return (rnd() & 0x8000FFFFu) | ((uint32_t)(0x70 + rnd() % 32) << 23); /* exponents near 1.0 */
}

static uint16_t rnd_bf16(void)
{
    return (uint16_t)(rnd_f32() >> 16);
}

/* The same random contents into both devices' memories. */
static void fill_both(void)
{
    static uint32_t acc[ACC * N];
    static uint16_t ub[UB * N], wb[WB * N];
    for (size_t i = 0; i < ACC * N; i++)
        acc[i] = rnd() % 4 == 0 ? rnd() : rnd_f32(); /* int32 mode reads the same rows */
    for (size_t i = 0; i < UB * N; i++)
        ub[i] = rnd_bf16();
    for (size_t i = 0; i < WB * N; i++)
        wb[i] = rnd_bf16();
    write_both(acc, ub, wb);
}

/* Every memory of both devices must be equal byte for byte. */
static void assert_same(const char *what)
{
    assert_same_mem(what, 1);
}

Test(vector_host, info_and_opcodes)
{
    ntpu_info in;
    cr_assert_eq(ntpu_get_info(host, &in), NTPU_OK);
    cr_assert_eq(in.features & NTPU_FEATURE_VECTOR_BIT, 0);
    cr_assert_neq(in.features & NTPU_FEATURE_TRANSPOSE_A_BIT, 0);
    cr_assert_eq(ntpu_get_info(dev, &in), NTPU_OK);
    cr_assert_neq(in.features & NTPU_FEATURE_VECTOR_BIT, 0);
    /* Argument errors are still caught before anything is sent. */
    cr_assert_eq(ntpu_vec_act(host, NTPU_OUT_UB, ACC - 1, 0, 2, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_vec_act(host, 0x80, 0, 0, 1, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_vec_relu_grad(host, NTPU_OUT_INT8, 0, 0, 1, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_vec_colsum(host, 0, ACC, 1, 0), NTPU_ERR_INVALID_ARG);
}

Test(vector_host, act_every_mode)
{
    static const unsigned outs[] = {NTPU_OUT_UB, NTPU_OUT_WB, NTPU_OUT_ACC};
    for (int round = 0; round < 3; round++) {
        fill_both();
        for (unsigned o = 0; o < 3; o++)
            for (unsigned f = 0; f < 4; f++) {
                unsigned flags = outs[o] | (f & 1 ? NTPU_ACT_BIAS : 0) | (f & 2 ? NTPU_ACT_RELU : 0);
                uint32_t src = rnd() % 60, rows = 1 + rnd() % 40, dst = rnd() % 50, aux = 150 + rnd() % 40;
                /* ACC: also in place, and overlapping one row up and one row down */
                if (outs[o] == NTPU_OUT_ACC)
                    dst = round == 0 ? src : round == 1 ? src + 1 : (src ? src - 1 : 0);
                cr_assert_eq(ntpu_vec_act(dev, flags, src, dst, rows, aux), NTPU_OK);
                cr_assert_eq(ntpu_vec_act(host, flags, src, dst, rows, aux), NTPU_OK, "%s", ntpu_last_error(host));
            }
        assert_same("ACT");
    }
}

Test(vector_host, act_int8)
{
    fill_both();
    /* Multipliers in [2^30, 2^31) and shifts 0..40 (the unit clamps them), both devices alike. */
    uint32_t aux[3 * N];
    for (unsigned j = 0; j < N; j++) {
        aux[j] = rnd() % 2000 - 1000;
        aux[N + j] = 0x40000000u | (rnd() & 0x3FFFFFFFu);
        aux[2 * N + j] = rnd() % 41;
    }
    for (int k = 0; k < 2; k++)
        cr_assert_eq(ntpu_write_rows(k ? host : dev, NTPU_MEM_ACC, 190, 3, aux), NTPU_OK);
    for (unsigned f = 0; f < 4; f++) {
        unsigned flags = NTPU_OUT_INT8 | (f & 1 ? NTPU_ACT_BIAS : 0) | (f & 2 ? NTPU_ACT_RELU : 0);
        uint32_t src = rnd() % 100, rows = 1 + rnd() % 60, dst = rnd() % 90;
        cr_assert_eq(ntpu_vec_act(dev, flags, src, dst, rows, 190), NTPU_OK);
        cr_assert_eq(ntpu_vec_act(host, flags, src, dst, rows, 190), NTPU_OK, "%s", ntpu_last_error(host));
    }
    assert_same("ACT int8");
}

Test(vector_host, relu_grad_and_colsum)
{
    static const unsigned outs[] = {NTPU_OUT_UB, NTPU_OUT_WB, NTPU_OUT_ACC};
    for (int round = 0; round < 3; round++) {
        fill_both();
        for (unsigned o = 0; o < 3; o++) {
            uint32_t src = rnd() % 60, rows = 1 + rnd() % 40, mask = rnd() % 100, dst = rnd() % 50;
            /* in place in ACC, or onto its own mask rows in UB, shifted by round - 1 */
            if (outs[o] == NTPU_OUT_ACC)
                dst = src + 1 - (uint32_t)round + (src == 0 && round == 2);
            if (outs[o] == NTPU_OUT_UB)
                dst = mask + 1 - (uint32_t)round + (mask == 0 && round == 2);
            cr_assert_eq(ntpu_vec_relu_grad(dev, outs[o], src, dst, rows, mask), NTPU_OK);
            cr_assert_eq(ntpu_vec_relu_grad(host, outs[o], src, dst, rows, mask), NTPU_OK, "%s", ntpu_last_error(host));
        }
        for (int a = 0; a < 2; a++) {
            uint32_t src = rnd() % 100, rows = rnd() % 80, dst = a ? src + rows / 2 : 180 + rnd() % 20;
            cr_assert_eq(ntpu_vec_colsum(dev, src, dst, rows, a), NTPU_OK);
            cr_assert_eq(ntpu_vec_colsum(host, src, dst, rows, a), NTPU_OK, "%s", ntpu_last_error(host));
        }
        assert_same("RELU_GRAD / COLSUM");
    }
}

/* Three Adam steps and int8 inference of a small MLP on both devices: losses,
 * logits, weights and int8 logits equal bit for bit. */
Test(vector_host, training_and_int8)
{
    train_pair("novec=1", 1);
}
