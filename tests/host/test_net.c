/* SPDX-License-Identifier: Apache-2.0 */
/* Nets that are not MLPs (host/src/nn/net*.c) on the golden model: their logits and
 * every gradient equal, bit for bit, a scalar model written from docs/numerics.md
 * (net_ref.h), for archs with stride, padding, both pools, floor mode, an fc on a
 * flattened map and a batch that is not a multiple of 8; a hand-computed conv; pooling's
 * ties and NaNs; conv's dX at stride 2 with padding; training lowers the loss; what a
 * net does not do answers clearly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "net_ref.h"
#include "nn/net_internal.h"
#include "net_fixture.h"
#include "ntpu/nn.h"

static ntpu_device *dev;

static void open_ref(void)
{
    /* the host path (net.c), whose insides some tests read; test_net_resident.c holds the device's to it */
    cr_assert_eq(ntpu_open("ref:noconv=1", &dev), NTPU_OK);
}

static void close_ref(void)
{
    ntpu_close(dev);
}

TestSuite(net, .init = open_ref, .fini = close_ref);

static ntpu_model *create(const ntpu_arch *a, size_t batch, ntpu_optimizer kind, float lr)
{
    ntpu_optim_config opt = ntpu_optim_defaults(kind);
    opt.lr = lr;
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, a, batch, 11, &opt, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_not_null(m->net);
    return m;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* n floats as the fp32 bits the net's passes take, and back. */
static void to_bits(const float *f, uint32_t *u, size_t n)
{
    memcpy(u, f, n * 4);
}

static void from_bits(const uint32_t *u, float *f, size_t n)
{
    memcpy(f, u, n * 4);
}

/* The gradient of the mean cross-entropy with respect to the logits, as the MLP computes it. */
static void ref_dlogits(const float *z, const uint8_t *y, size_t batch, size_t classes, float *g)
{
    for (size_t b = 0; b < batch; b++) {
        const float *r = z + b * classes;
        size_t arg = 0;
        for (size_t c = 1; c < classes; c++)
            arg = r[c] > r[arg] ? c : arg;
        float sum = 0.0f;
        for (size_t c = 0; c < classes; c++)
            sum += expf(r[c] - r[arg]);
        for (size_t c = 0; c < classes; c++)
            g[b * classes + c] = (expf(r[c] - r[arg]) / sum - (c == y[b] ? 1.0f : 0.0f)) / (float)batch;
    }
}

/* One step with lr 0: logits (by predict) and every gradient equal the scalar model's. */
static void check_against_scalar(const char *spec, unsigned c, unsigned h, unsigned w, size_t batch)
{
    ntpu_arch a = net_arch(spec, c, h, w);
    ntpu_model *m = create(&a, batch, NTPU_OPT_SGD, 0.0f);
    const size_t in = (size_t)c * h * w, classes = a.item[a.n - 1].out;
    float *x = malloc(batch * in * 4), *logits = malloc(batch * classes * 4);
    uint8_t y[64];
    net_inputs(x, batch * in, 5);
    for (size_t b = 0; b < batch; b++)
        y[b] = (uint8_t)(b * 3 % classes);
    nr_net r;
    nr_alloc(&r, &a, batch);
    for (size_t i = 0; i < a.n; i++)
        r.w[i] = m->param[i].w, r.b[i] = m->param[i].b;
    nr_forward(&r, x);
    cr_assert_eq(ntpu_model_predict(m, x, batch, logits), NTPU_OK);
    for (size_t j = 0; j < batch * classes; j++)
        cr_assert_eq(bits(logits[j]), bits(r.act[a.n][j]), "%s: logit %zu: %a, the scalar model %a", spec, j, logits[j],
                     r.act[a.n][j]);
    ref_dlogits(r.act[a.n], y, batch, classes, r.grad[a.n]);
    nr_backward(&r);
    ntpu_step_result res;
    cr_assert_eq(ntpu_model_train_step(m, x, y, batch, &res), NTPU_OK, "%s", ntpu_last_error(dev));
    size_t checked = 0;
    for (size_t i = 0; i < a.n; i++)
        for (size_t j = 0; m->param[i].w && j < m->param[i].nw + m->param[i].nb; j++, checked++) {
            int isw = j < m->param[i].nw;
            size_t k = isw ? j : j - m->param[i].nw;
            float got = isw ? m->param[i].gw[k] : m->param[i].gb[k], want = isw ? r.gw[i][k] : r.gb[i][k];
            cr_assert_eq(bits(got), bits(want), "%s: item %zu %s[%zu]: %a, the scalar model %a", spec, i,
                         isw ? "dW" : "db", k, got, want);
        }
    cr_assert_gt(checked, 0);
    nr_free(&r);
    free(x);
    free(logits);
    ntpu_model_free(m);
}

Test(net, stride_padding_and_both_pools_match_the_scalar_model)
{
    check_against_scalar("conv3k3p1,relu,maxpool2,conv4k3s2p1,relu,avgpool2,fc5", 2, 8, 8, 11);
}

Test(net, fc_on_a_flattened_map_takes_it_in_hwc_order)
{
    check_against_scalar("conv3k3s2p1,relu,conv4k2,maxpool2,fc6", 2, 9, 9, 9);
}

/* On 8 lanes conv9k2 has fewer column tiles as gZᵀ · P, conv12k2s2 as Pᵀ · gZ: dW both ways. */
Test(net, conv_dw_in_either_orientation_of_its_product)
{
    check_against_scalar("conv9k2,relu,conv12k2s2,avgpool2,fc3", 1, 9, 9, 12);
}

Test(net, floor_mode_pools_and_a_relu_after_the_flatten)
{
    check_against_scalar("conv2k3p2,avgpool2,relu,conv3k2s2,maxpool2,flatten,relu,fc4,relu,fc3", 1, 9, 9, 17);
}

/* 1x3x3 input 1..9, conv1k2 with weights 1, 2, 3, 4 and bias 0.5: the sums
 * 1+4+12+20, 2+6+15+24, 4+10+21+32, 5+12+24+36 plus 0.5; an fc picks two of them. */
Test(net, hand_computed_conv)
{
    ntpu_arch a = net_arch("conv1k2,fc2", 1, 3, 3);
    ntpu_model *m = create(&a, 1, NTPU_OPT_SGD, 0.0f);
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4}, fc[8] = {1, 0, 0, 0, 0, 0, 0, 1};
    memcpy(m->param[0].w, w, sizeof w);
    m->param[0].b[0] = 0.5f;
    memcpy(m->param[2].w, fc, sizeof fc); /* item 1: the implied flatten */
    m->param[2].b[0] = m->param[2].b[1] = 0.0f;
    float logits[2];
    cr_assert_eq(ntpu_model_predict(m, x, 1, logits), NTPU_OK);
    cr_assert_eq(logits[0], 37.5f);
    cr_assert_eq(logits[1], 77.5f);
    const uint16_t want[4] = {ntpu_bf16_from_f32(37.5f), ntpu_bf16_from_f32(47.5f), ntpu_bf16_from_f32(67.5f),
                              ntpu_bf16_from_f32(77.5f)};
    cr_assert_arr_eq(m->net->act[1], want, sizeof want);
    ntpu_model_free(m);
}

static uint16_t bf(float f)
{
    return ntpu_bf16_from_f32(f);
}

/* Windows of a 1 x 2 x 8 map: a tie (the first wins), a NaN after greater values (kept
 * against a later 5), -0 and +0 (the first), a later greater value. Gradients go to the winners only. */
Test(net, maxpool_ties_nans_and_its_gradient)
{
    ntpu_arch a = net_arch("conv1k1,maxpool2,fc2", 1, 2, 8);
    ntpu_model *m = create(&a, 1, NTPU_OPT_SGD, 0.0f);
    const uint16_t map[16] = {bf(3), bf(3), bf(-1), bf(2), 0x8000, 0,      bf(1), bf(1),
                              bf(3), bf(3), 0x7FC0, bf(5), 0,      0x8000, bf(1), bf(4)};
    memcpy(m->net->act[1], map, sizeof map);
    ntpu_net_elementwise_forward(m, 1, 1);
    const uint16_t want[4] = {bf(3), 0x7FC0, 0x8000, bf(4)};
    cr_assert_arr_eq(m->net->act[2], want, sizeof want);
    const uint32_t argmax[4] = {0, 10, 4, 15};
    cr_assert_arr_eq(m->net->argmax[1], argmax, sizeof argmax);
    const float g[4] = {1, 2, 3, 4};
    float dx[16];
    uint32_t gu[4], dxu[16];
    to_bits(g, gu, 4);
    ntpu_net_elementwise_backward(m, 1, 1, gu, dxu);
    from_bits(dxu, dx, 16);
    for (size_t j = 0; j < 16; j++) {
        float e = j == 0 ? 1.0f : j == 10 ? 2.0f : j == 4 ? 3.0f : j == 15 ? 4.0f : 0.0f;
        cr_assert_eq(bits(dx[j]), bits(e), "dx[%zu] = %a", j, dx[j]);
    }
    ntpu_model_free(m);
}

/* A 1 x 3 x 3 map, avgpool2: one window (floor mode), (1 + 2 + 4 + 5) / 4; its gradient
 * g / 4 on the window's four positions, +0 on the five no window reads. */
Test(net, avgpool_floor_mode_and_its_gradient)
{
    ntpu_arch a = net_arch("conv1k1,avgpool2,fc2", 1, 3, 3);
    ntpu_model *m = create(&a, 1, NTPU_OPT_SGD, 0.0f);
    const uint16_t map[9] = {bf(1), bf(2), bf(100), bf(4), bf(5), bf(100), bf(100), bf(100), bf(100)};
    memcpy(m->net->act[1], map, sizeof map);
    ntpu_net_elementwise_forward(m, 1, 1);
    cr_assert_eq(m->net->act[2][0], bf(3.0f));
    const float g = 0.75f;
    float dx[9];
    uint32_t gu, dxu[9];
    to_bits(&g, &gu, 1);
    ntpu_net_elementwise_backward(m, 1, 1, &gu, dxu);
    from_bits(dxu, dx, 9);
    for (size_t j = 0; j < 9; j++)
        cr_assert_eq(bits(dx[j]), bits(j == 0 || j == 1 || j == 3 || j == 4 ? 0.1875f : 0.0f), "dx[%zu]", j);
    ntpu_model_free(m);
}

/* conv3k3s2p1 on 2 x 6 x 7 (every input position reached by 1, 2 or 4 kernel taps, or
 * none at the last column): dX and dW against the scalar transposed convolution. */
Test(net, conv_dx_at_stride_2_with_padding)
{
    enum { B = 10 };
    ntpu_arch a = net_arch("conv3k3s2p1,fc2", 2, 6, 8);
    ntpu_model *m = create(&a, B, NTPU_OPT_SGD, 0.0f);
    const ntpu_layer *l = &a.item[0];
    const size_t in = 2 * 6 * 8, out = nr_out(l);
    float x[B * 2 * 6 * 8], logits[B * 2], g[B * 3 * 3 * 4], dx[B * 2 * 6 * 8];
    net_inputs(x, B * in, 3);
    net_inputs(g, B * out, 4);
    cr_assert_eq(ntpu_model_predict(m, x, B, logits), NTPU_OK);
    uint32_t gu[B * 3 * 3 * 4], dxu[B * 2 * 6 * 8];
    to_bits(g, gu, B * out);
    cr_assert_eq(ntpu_net_conv_backward(m, 0, B, gu, dxu), NTPU_OK);
    from_bits(dxu, dx, B * in);
    nr_net r;
    nr_alloc(&r, &a, B);
    for (size_t i = 0; i < a.n; i++)
        r.w[i] = m->param[i].w, r.b[i] = m->param[i].b;
    nr_forward(&r, x);
    float want[B * 2 * 6 * 8];
    nr_conv_back(&r, 0, g, want);
    for (size_t j = 0; j < B * in; j++)
        cr_assert_eq(bits(dx[j]), bits(want[j]), "dx[%zu]: %a, the scalar loop %a", j, dx[j], want[j]);
    for (size_t j = 0; j < m->param[0].nw; j++)
        cr_assert_eq(bits(m->param[0].gw[j]), bits(r.gw[0][j]), "dW[%zu]", j);
    nr_free(&r);
    ntpu_model_free(m);
}

/* Three classes told apart by which third of a 6 x 6 image is bright: Adam lowers the loss. */
Test(net, training_lowers_the_loss)
{
    enum { B = 12, STEPS = 40 };
    ntpu_arch a = net_arch("conv4k3p1,relu,maxpool2,conv4k3s2p1,relu,fc3", 1, 6, 6);
    ntpu_model *m = create(&a, B, NTPU_OPT_ADAM, 0.01f);
    float x[B * 36];
    uint8_t y[B];
    float first = 0, last = 0;
    for (int s = 0; s < STEPS; s++) {
        net_inputs(x, B * 36, (uint64_t)s + 100);
        for (int b = 0; b < B; b++) {
            y[b] = (uint8_t)((b + s) % 3);
            for (int p = 0; p < 36; p++)
                x[b * 36 + p] = 0.2f * x[b * 36 + p] + (p / 12 == y[b] ? 1.0f : 0.0f);
        }
        ntpu_step_result r;
        cr_assert_eq(ntpu_model_train_step(m, x, y, B, &r), NTPU_OK, "%s", ntpu_last_error(dev));
        first = s == 0 ? r.loss : first;
        last = r.loss;
    }
    cr_assert_lt(last, 0.5f * first, "loss %f -> %f", first, last);
    double acc;
    cr_assert_eq(ntpu_model_evaluate(m, x, y, B, &acc, NULL), NTPU_OK);
    cr_assert_gt(acc, 0.9);
    ntpu_model_free(m);
}

Test(net, what_a_net_does_not_do_yet)
{
    ntpu_arch a = net_arch("conv2k3,relu,fc3", 1, 5, 5);
    ntpu_model *m = create(&a, 4, NTPU_OPT_SGD, 0.1f);
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    cr_assert_eq(v.n_layers, 0);
    cr_assert_eq(v.step, &m->step);
    cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_ERR_UNSUPPORTED);
    cr_assert_eq(ntpu_model_set_device_optimizer(m, 1), NTPU_OK);
    cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_ERR_UNSUPPORTED);
    cr_assert_str_eq(ntpu_last_error(dev), "a conv net on the host path keeps the optimizer on the host");
    cr_assert_eq(ntpu_qmodel_check(m), NTPU_OK); /* int8 inference: tests/host/test_quant_net.c */
    float x[5 * 25] = {0}, logits[3];
    uint8_t y[5] = {0, 1, 2, 3, 0};
    cr_assert_eq(ntpu_model_predict(m, x, 5, logits), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_model_train_step(m, x, y, 4, NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "label 3"));
    cr_assert_eq(ntpu_model_train_step(m, x, y, 3, NULL), NTPU_OK);
    cr_assert_eq(m->step, 1);
    ntpu_model_free(m);
}

Test(net, an_arch_whose_shapes_do_not_chain_is_refused)
{
    ntpu_arch a = net_arch("conv2k3,relu,fc3", 1, 5, 5);
    a.item[1].in_h = 4;
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_SGD);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, &a, 4, 1, &opt, &m), NTPU_ERR_INVALID_ARG);
    cr_assert_null(m);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "conv2k3,relu,fc3"), "%s", ntpu_last_error(dev));
}

/* The LR schedule applies as for an MLP: a step schedule with gamma 0 after one step leaves
 * the second step's weights where the first put them, with momentum's buffer still moving. */
Test(net, lr_schedules_apply)
{
    ntpu_arch a = net_arch("conv2k3,relu,fc3", 1, 5, 5);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_MOMENTUM);
    opt.lr = 0.1f;
    opt.schedule = NTPU_LR_STEP;
    opt.step_size = 1;
    opt.gamma = 0.0f;
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, &a, 4, 3, &opt, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    float x[4 * 25], w0[18], w1[18], s1[18];
    uint8_t y[4] = {0, 1, 2, 1};
    net_inputs(x, 4 * 25, 9);
    memcpy(w0, m->param[0].w, sizeof w0);
    cr_assert_eq(ntpu_model_train_step(m, x, y, 4, NULL), NTPU_OK);
    memcpy(w1, m->param[0].w, sizeof w1);
    memcpy(s1, m->param[0].ws1, sizeof s1);
    cr_assert_neq(memcmp(w0, w1, sizeof w0), 0, "the first step (lr 0.1) changed nothing");
    cr_assert_eq(ntpu_model_train_step(m, x, y, 4, NULL), NTPU_OK);
    cr_assert_eq(memcmp(w1, m->param[0].w, sizeof w1), 0, "the second step (lr 0) changed the weights");
    cr_assert_neq(memcmp(s1, m->param[0].ws1, sizeof s1), 0, "the momentum buffer did not move");
    ntpu_model_free(m);
}
