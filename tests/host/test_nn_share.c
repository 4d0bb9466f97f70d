/* SPDX-License-Identifier: Apache-2.0 */
/* A model, its quantized copy, ntpu_matmul and a second model on one device take the device's
 * memories in turn (ntpu_claim_memories): each result equals the one it gives alone. Before, a
 * quantized copy left the model's evaluation NaN, and a matmul between two steps of a model with
 * the device optimizer lost its fp32 weights. */
#include <criterion/criterion.h>
#include <string.h>

#include "ntpu/nn.h"

enum { IN = 20, HID = 12, CLS = 5, B = 8, STEPS = 3 };
static const unsigned sizes[] = {IN, HID, CLS};

static void batch(int s, float *x, uint8_t *y)
{
    for (int i = 0; i < B * IN; i++)
        x[i] = (float)((i * 7 + s * 13) % 17) / 17.0f;
    for (int i = 0; i < B; i++)
        y[i] = (uint8_t)((i + s) % CLS);
}

static ntpu_model *model(ntpu_device *d, uint64_t seed)
{
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_MOMENTUM);
    opt.device = 1;
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create(d, sizes, 3, B, seed, &opt, &m), NTPU_OK, "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_OK, "the test needs the device optimizer: %s",
                 ntpu_last_error(d));
    return m;
}

static void step(ntpu_model *m, int s)
{
    float x[B * IN];
    uint8_t y[B];
    batch(s, x, y);
    ntpu_step_result r;
    cr_assert_eq(ntpu_model_train_step(m, x, y, B, &r), NTPU_OK);
}

static void weights(ntpu_model *m, float *w)
{
    cr_assert_eq(ntpu_model_fetch(m), NTPU_OK);
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    memcpy(w, v.weights[0], sizeof(float) * IN * HID);
    memcpy(w + IN * HID, v.weights[1], sizeof(float) * HID * CLS);
}

static void other_work(ntpu_device *d)
{
    float a[3 * 9], b[9 * 4], c[3 * 4];
    for (int i = 0; i < 27; i++)
        a[i] = (float)i;
    for (int i = 0; i < 36; i++)
        b[i] = 1.0f / (float)(i + 1);
    cr_assert_eq(ntpu_matmul(d, NTPU_DTYPE_BF16, a, b, c, 3, 9, 4), NTPU_OK);
}

Test(nn_share, matmul_and_a_second_model_between_steps)
{
    float alone[2][IN * HID + HID * CLS], shared[2][IN * HID + HID * CLS];
    for (int k = 0; k < 2; k++) { /* each model alone */
        ntpu_device *d = NULL;
        cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
        ntpu_model *m = model(d, 1 + k);
        for (int s = 0; s < STEPS; s++)
            step(m, s + 10 * k);
        weights(m, alone[k]);
        ntpu_model_free(m);
        ntpu_close(d);
    }
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_model *m[2] = {model(d, 1), model(d, 2)};
    for (int s = 0; s < STEPS; s++)
        for (int k = 0; k < 2; k++) {
            step(m[k], s + 10 * k);
            other_work(d);
        }
    for (int k = 0; k < 2; k++) {
        weights(m[k], shared[k]);
        cr_assert_eq(memcmp(shared[k], alone[k], sizeof alone[k]), 0, "model %d differs from its run alone", k);
        ntpu_model_free(m[k]);
    }
    ntpu_close(d);
}

Test(nn_share, quantized_copy_and_its_model_alternate)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_model *m = model(d, 3);
    for (int s = 0; s < STEPS; s++)
        step(m, s);
    float x[B * IN];
    uint8_t y[B];
    batch(99, x, y);
    float z0[B * CLS], z1[B * CLS], q0[B * CLS], q1[B * CLS];
    cr_assert_eq(ntpu_model_predict(m, x, B, z0), NTPU_OK);
    ntpu_qmodel *q = NULL;
    cr_assert_eq(ntpu_qmodel_create(m, x, B, &q), NTPU_OK, "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_qmodel_predict(q, x, B, q0), NTPU_OK);
    cr_assert_eq(ntpu_model_predict(m, x, B, z1), NTPU_OK);
    cr_assert_eq(memcmp(z1, z0, sizeof z0), 0, "bf16 logits after quantizing: %g, before %g", z1[0], z0[0]);
    other_work(d);
    cr_assert_eq(ntpu_qmodel_predict(q, x, B, q1), NTPU_OK);
    cr_assert_eq(memcmp(q1, q0, sizeof q0), 0, "int8 logits after a matmul: %g, before %g", q1[0], q0[0]);
    step(m, 7);         /* training goes on after its copy used the memories */
    ntpu_model_free(m); /* the copy outlives its model */
    ntpu_qmodel_free(q);
    ntpu_close(d);
}
