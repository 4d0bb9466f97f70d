/* The library's host fallback for a device without MATMUL TRANSPOSE_A (an RTL core
 * built with TRANSPOSE_A_EN = 0, as on the iCEBreaker; the golden model with
 * notra=1): transposed MATMULs and a training run through the fallback must leave
 * exactly the bytes the device path leaves on "ref". */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "fallback_pair.h"
#include "ntpu/nn.h"

static void open_both(void) { open_pair("notra=1", 0x2545F4914F6CDD1Du); }

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
static void assert_same(const char *what) { assert_same_mem(what, 0); }

Test(transpose_host, info_and_errors)
{
    ntpu_info in;
    cr_assert_eq(ntpu_get_info(host, &in), NTPU_OK);
    cr_assert_eq(in.features & NTPU_FEATURE_TRANSPOSE_A_BIT, 0);
    cr_assert_neq(in.features & NTPU_FEATURE_TRANSPOSE_BIT, 0);
    /* Argument errors are still caught before anything is sent. */
    cr_assert_eq(ntpu_matmul_tile_t(host, NTPU_DTYPE_BF16, 0, 4, 0, 6, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile_t(host, NTPU_DTYPE_BF16, UB - 4, 4, 0, 8, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile_t(host, NTPU_DTYPE_BF16, 0, 4, ACC - 4, 8, 0), NTPU_ERR_INVALID_ARG);
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
                cr_assert_eq(ntpu_matmul_tile_t(d, dt, ub, stride, acc, blocks * N, accumulate), NTPU_OK, "%s",
                             ntpu_last_error(d));
            }
        }
        assert_same("MATMUL TRANSPOSE_A");
    }
}

/* Three Adam steps of a small MLP without the vector unit and without TRANSPOSE_A
 * (the iCEBreaker's build) against the full device: losses, logits and weights equal. */
Test(transpose_host, training)
{
    ntpu_close(dev);
    ntpu_close(host);
    cr_assert_eq(ntpu_open("ref:n=4", &dev), NTPU_OK);
    cr_assert_eq(ntpu_open("ref:n=4,novec=1,notra=1", &host), NTPU_OK);
    static const unsigned sizes[] = {20, 12, 5};
    enum { B = 8 };
    float x[B * 20];
    uint8_t y[B];
    for (size_t i = 0; i < B * 20; i++)
        x[i] = (float)(rnd() % 2001) / 1000.0f - 1.0f;
    for (size_t i = 0; i < B; i++)
        y[i] = (uint8_t)(rnd() % 5);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m[2] = {NULL, NULL};
    float loss[2][3], logits[2][B * 5];
    for (int k = 0; k < 2; k++) {
        ntpu_device *d = k ? host : dev;
        cr_assert_eq(ntpu_model_create(d, sizes, 3, B, 7, &opt, &m[k]), NTPU_OK, "%s", ntpu_last_error(d));
        for (int s = 0; s < 3; s++) {
            ntpu_step_result res;
            cr_assert_eq(ntpu_train_step(m[k], x, y, B, &res), NTPU_OK, "%s", ntpu_last_error(d));
            loss[k][s] = res.loss;
        }
        cr_assert_eq(ntpu_predict(m[k], x, B, logits[k]), NTPU_OK, "%s", ntpu_last_error(d));
    }
    cr_assert(memcmp(loss[0], loss[1], sizeof loss[0]) == 0, "losses differ: %.9g vs %.9g", (double)loss[0][2],
              (double)loss[1][2]);
    cr_assert(memcmp(logits[0], logits[1], sizeof logits[0]) == 0, "logits differ");
    ntpu_model_view v[2];
    for (int k = 0; k < 2; k++)
        ntpu_model_view_get(m[k], &v[k]);
    for (size_t l = 0; l < 2; l++) {
        cr_assert(memcmp(v[0].weights[l], v[1].weights[l], sizeof(float) * sizes[l] * sizes[l + 1]) == 0,
                  "layer %zu weights differ", l);
        cr_assert(memcmp(v[0].biases[l], v[1].biases[l], sizeof(float) * sizes[l + 1]) == 0,
                  "layer %zu biases differ", l);
    }
    for (int k = 0; k < 2; k++)
        ntpu_model_destroy(m[k]);
}
