/* SPDX-License-Identifier: Apache-2.0 */
/* The library's host fallback for a device without MATMUL TRANSPOSE_A (an RTL core
 * built with TRANSPOSE_A_EN = 0, as on the iCEBreaker; the golden model with
 * notra=1): transposed MATMULs and a training run through the fallback must leave
 * exactly the bytes the device path leaves on "ref". */
#include <criterion/criterion.h>
#include <stdint.h>

#include "fallback_pair.h"

static void open_both(void)
{
    open_pair("notra=1", 0x2545F4914F6CDD1Du);
}

TestSuite(transpose_host, .init = open_both, .fini = close_pair);

/* bf16 near 1.0 with some zeros and specials; int8 MATMULs read the low bytes. */
static uint16_t rnd_val(void)
{
    static const uint16_t special[] = {0, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001};
    if (rnd() % 10 == 0)
        return special[rnd() % (sizeof special / sizeof special[0])];
    return (uint16_t)((rnd() & 0x807F) | ((0x78 + rnd() % 12) << 7));
}

static void fill_both(void)
{
    static uint32_t acc[ACC * N];
    static uint16_t ub[UB * N], wb[WB * N];
    for (size_t i = 0; i < ACC * N; i++)
        acc[i] = (uint32_t)rnd_val() << 16;
    for (size_t i = 0; i < UB * N; i++)
        ub[i] = rnd_val();
    for (size_t i = 0; i < WB * N; i++)
        wb[i] = rnd_val();
    write_both(acc, ub, wb);
}

/* ACC and UB of both devices equal byte for byte (UB: the fallback restores it). */
static void assert_same(const char *what)
{
    assert_same_mem(what, 0);
}

Test(transpose_host, info_and_errors)
{
    ntpu_info in;
    cr_assert_eq(ntpu_get_info(host, &in), NTPU_OK);
    cr_assert_eq(in.features & NTPU_FEATURE_TRANSPOSE_A_BIT, 0);
    cr_assert_neq(in.features & NTPU_FEATURE_TRANSPOSE_BIT, 0);
    /* Argument errors are still caught before anything is sent. */
    cr_assert_eq(ntpu_matmul_tile_transpose_a(host, NTPU_DTYPE_BF16, 0, 4, 0, 6, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile_transpose_a(host, NTPU_DTYPE_BF16, UB - 4, 4, 0, 8, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile_transpose_a(host, NTPU_DTYPE_BF16, 0, 4, ACC - 4, 8, 0), NTPU_ERR_INVALID_ARG);
}

/* Both dtypes, with and without accumulate, strides 0, below N (overlapping
 * blocks), N and beyond. */
Test(transpose_host, matmul_t_every_kind)
{
    static const uint32_t strides[] = {0, 1, 3, 4, 7, 20};
    for (int round = 0; round < 4; round++) {
        fill_both();
        for (size_t s = 0; s < sizeof strides / sizeof strides[0]; s++) {
            ntpu_dtype dt = (s + (size_t)round) % 2 ? NTPU_DTYPE_INT8 : NTPU_DTYPE_BF16;
            uint32_t blocks = 1 + rnd() % 6, stride = strides[s];
            uint32_t span = (blocks - 1) * stride + N;
            uint32_t ub = rnd() % (UB - span + 1), acc = rnd() % (ACC - blocks * N + 1), wb = rnd() % (WB - N + 1);
            int accumulate = (int)(rnd() % 2), wt = (int)(rnd() % 2);
            for (int k = 0; k < 2; k++)
                cr_assert_eq(ntpu_load_w(k ? host : dev, wb, wt), NTPU_OK);
            for (int k = 0; k < 2; k++) {
                ntpu_device *d = k ? host : dev;
                cr_assert_eq(ntpu_matmul_tile_transpose_a(d, dt, ub, stride, acc, blocks * N, accumulate), NTPU_OK,
                             "%s", ntpu_last_error(d));
            }
        }
        assert_same("MATMUL TRANSPOSE_A");
    }
}

/* Three Adam steps of a small MLP without the vector unit and without TRANSPOSE_A
 * (the iCEBreaker's build) against the full device: losses, logits and weights equal. */
Test(transpose_host, training)
{
    train_pair("novec=1,notra=1", 0);
}
