/* SPDX-License-Identifier: Apache-2.0 */
/* What the training-equivalence tests share (test_nn_stream.c, test_nn_devopt.c): a seeded
 * stream of pixel-like samples, and bit-for-bit comparison of two models, a float array at a
 * time. A test defines NN_SEED before including this file, and may define NN_SIDE_A and
 * NN_SIDE_B ("streamed ", "resident ") to name its two models in failure messages. */
#ifndef NTPU_TEST_NN_COMPARE_H
#define NTPU_TEST_NN_COMPARE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ntpu/nn.h"

#ifndef NN_SIDE_A
#define NN_SIDE_A ""
#define NN_SIDE_B "vs "
#endif

static uint64_t rng = NN_SEED;
static inline uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Pixel-like inputs: a third exact zeros, the rest in (0, 1]. x: count x in, y: count labels. */
static inline void fill_data(float *x, uint8_t *y, size_t count, size_t in, size_t classes)
{
    for (size_t i = 0; i < count * in; i++)
        x[i] = rnd() % 3 == 0 ? 0.0f : (float)(1 + rnd() % 255) / 255.0f;
    for (size_t i = 0; i < count; i++)
        y[i] = (uint8_t)(rnd() % classes);
}

/* Two arrays that are absent on both sides, or equal bit for bit. */
static inline void assert_same_floats(const float *a, const float *b, size_t count, const char *what, size_t l)
{
    if (count == 0 || (!a && !b))
        return;
    cr_assert(a && b, "%s of layer %zu: present on one side only", what, l);
    for (size_t i = 0; i < count; i++) {
        uint32_t ua, ub;
        memcpy(&ua, &a[i], 4);
        memcpy(&ub, &b[i], 4);
        cr_assert_eq(ua, ub, "%s of layer %zu, element %zu: " NN_SIDE_A "%08x (%.9g), " NN_SIDE_B "%08x (%.9g)", what,
                     l, i, ua, (double)a[i], ub, (double)b[i]);
    }
}

/* Layers, step, weights, biases and optimizer state of two models' views equal bit for bit, and
 * with `grads` their gradients too. */
static inline void assert_same_view(ntpu_model *a, ntpu_model *b, int grads)
{
    ntpu_model_view va, vb;
    ntpu_model_get_view(a, &va);
    ntpu_model_get_view(b, &vb);
    cr_assert_eq(va.n_layers, vb.n_layers);
    cr_assert_eq(*va.step, *vb.step);
    for (size_t l = 0; l < va.n_layers; l++) {
        size_t nw = (size_t)va.sizes[l] * va.sizes[l + 1], nb = va.sizes[l + 1];
        assert_same_floats(va.weights[l], vb.weights[l], nw, "weights", l);
        assert_same_floats(va.biases[l], vb.biases[l], nb, "biases", l);
        if (grads) {
            assert_same_floats(va.grad_w[l], vb.grad_w[l], nw, "weight gradients", l);
            assert_same_floats(va.grad_b[l], vb.grad_b[l], nb, "bias gradients", l);
        }
        assert_same_floats(va.w_state1[l], vb.w_state1[l], nw, "weight state 1", l);
        assert_same_floats(va.w_state2[l], vb.w_state2[l], nw, "weight state 2", l);
        assert_same_floats(va.b_state1[l], vb.b_state1[l], nb, "bias state 1", l);
        assert_same_floats(va.b_state2[l], vb.b_state2[l], nb, "bias state 2", l);
    }
}

#endif
