/* SPDX-License-Identifier: Apache-2.0 */
/* What the host-fallback tests share (test_vector_host.c, test_transpose_host.c): two
 * golden models of the same small configuration, `dev` with a feature and `host` without
 * it (so libntpu does that work on the host), the same random contents written into both,
 * and a byte-for-byte comparison of their memories. */
#ifndef NTPU_TEST_FALLBACK_PAIR_H
#define NTPU_TEST_FALLBACK_PAIR_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ntpu/nn.h"
#include "ntpu/ntpu.h"
#include "ntpu/protocol.h"

#define CFG "n=4,ub=160,wb=96,acc=200,payload=1000"
enum { N = 4, UB = 160, WB = 96, ACC = 200 };

static ntpu_device *dev, *host; /* with the feature, without */
static uint64_t rng;

/* Opens both; `without` is the ref option that hides the feature ("novec=1"). */
static inline void open_pair(const char *without, uint64_t seed)
{
    char spec[128];
    snprintf(spec, sizeof spec, "ref:" CFG ",%s", without);
    cr_assert_eq(ntpu_open("ref:" CFG, &dev), NTPU_OK);
    cr_assert_eq(ntpu_open(spec, &host), NTPU_OK, "%s", ntpu_last_error(host));
    rng = seed;
}

static inline void close_pair(void)
{
    ntpu_close(dev);
    ntpu_close(host);
}

static inline uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* The same ACC, UB and WB contents into both devices. */
static inline void write_both(const uint32_t *acc, const uint16_t *ub, const uint16_t *wb)
{
    ntpu_device *d[2] = {dev, host};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ntpu_write_rows(d[k], NTPU_MEM_ACC, 0, ACC, acc), NTPU_OK);
        cr_assert_eq(ntpu_write_rows(d[k], NTPU_MEM_UB, 0, UB, ub), NTPU_OK);
        cr_assert_eq(ntpu_write_rows(d[k], NTPU_MEM_WB, 0, WB, wb), NTPU_OK);
    }
}

/* ACC and UB (and WB when with_wb) of both devices equal byte for byte. */
static inline void assert_same_mem(const char *what, int with_wb)
{
    static uint32_t a0[ACC * N], a1[ACC * N];
    static uint16_t u0[UB * N], u1[UB * N], w0[WB * N], w1[WB * N];
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, 0, ACC, a0), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_read_rows(host, NTPU_MEM_ACC, 0, ACC, a1), NTPU_OK, "%s", ntpu_last_error(host));
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_UB, 0, UB, u0), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(host, NTPU_MEM_UB, 0, UB, u1), NTPU_OK);
    for (size_t i = 0; i < ACC * N; i++)
        cr_assert_eq(a0[i], a1[i], "%s: ACC row %zu lane %zu: device %08x, host %08x", what, i / N, i % N, a0[i],
                     a1[i]);
    for (size_t i = 0; i < UB * N; i++)
        cr_assert_eq(u0[i], u1[i], "%s: UB row %zu lane %zu: device %04x, host %04x", what, i / N, i % N, u0[i], u1[i]);
    if (!with_wb)
        return;
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_WB, 0, WB, w0), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(host, NTPU_MEM_WB, 0, WB, w1), NTPU_OK);
    for (size_t i = 0; i < WB * N; i++)
        cr_assert_eq(w0[i], w1[i], "%s: WB row %zu lane %zu: device %04x, host %04x", what, i / N, i % N, w0[i], w1[i]);
}

/* Reopens the pair as "ref:n=4" and "ref:n=4,<without>", runs three Adam steps of a small
 * MLP on both and requires losses, logits, weights and biases equal bit for bit; with
 * int8, also the logits of the quantized copies. */
static inline void train_pair(const char *without, int int8)
{
    char spec[64];
    snprintf(spec, sizeof spec, "ref:n=4,%s", without);
    ntpu_close(dev);
    ntpu_close(host);
    cr_assert_eq(ntpu_open("ref:n=4", &dev), NTPU_OK);
    cr_assert_eq(ntpu_open(spec, &host), NTPU_OK, "%s", ntpu_last_error(host));
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
    ntpu_qmodel *q[2] = {NULL, NULL};
    float loss[2][3], logits[2][B * 5], qlogits[2][B * 5];
    for (int k = 0; k < 2; k++) {
        ntpu_device *d = k ? host : dev;
        cr_assert_eq(ntpu_model_create(d, sizes, 3, B, 7, &opt, &m[k]), NTPU_OK, "%s", ntpu_last_error(d));
        for (int s = 0; s < 3; s++) {
            ntpu_step_result res;
            cr_assert_eq(ntpu_model_train_step(m[k], x, y, B, &res), NTPU_OK, "%s", ntpu_last_error(d));
            loss[k][s] = res.loss;
        }
        cr_assert_eq(ntpu_model_predict(m[k], x, B, logits[k]), NTPU_OK, "%s", ntpu_last_error(d));
        if (int8) {
            cr_assert_eq(ntpu_qmodel_create(m[k], x, B, &q[k]), NTPU_OK, "%s", ntpu_last_error(d));
            cr_assert_eq(ntpu_qmodel_predict(q[k], x, B, qlogits[k]), NTPU_OK, "%s", ntpu_last_error(d));
        }
    }
    cr_assert(memcmp(loss[0], loss[1], sizeof loss[0]) == 0, "losses differ: %.9g vs %.9g", (double)loss[0][2],
              (double)loss[1][2]);
    cr_assert(memcmp(logits[0], logits[1], sizeof logits[0]) == 0, "logits differ");
    if (int8)
        cr_assert(memcmp(qlogits[0], qlogits[1], sizeof qlogits[0]) == 0, "int8 logits differ");
    ntpu_model_view v[2];
    for (int k = 0; k < 2; k++)
        ntpu_model_get_view(m[k], &v[k]);
    for (size_t l = 0; l < 2; l++) {
        cr_assert(memcmp(v[0].weights[l], v[1].weights[l], sizeof(float) * sizes[l] * sizes[l + 1]) == 0,
                  "layer %zu weights differ", l);
        cr_assert(memcmp(v[0].biases[l], v[1].biases[l], sizeof(float) * sizes[l + 1]) == 0, "layer %zu biases differ",
                  l);
    }
    for (int k = 0; k < 2; k++) {
        ntpu_qmodel_free(q[k]);
        ntpu_model_free(m[k]);
    }
}

#endif
