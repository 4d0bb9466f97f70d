/* SPDX-License-Identifier: Apache-2.0 */
/* int8 inference of nets (host/src/nn/quant_net.c) on the golden model: the logits of small
 * nets (conv, relu, max or average pool, flatten, fc) equal, bit for bit, a scalar int8 model
 * written here from docs/training.md and docs/numerics.md (calibration, scales, rounding,
 * requantization); a small CNN trained on Fashion-MNIST keeps its bf16 accuracy in int8 within
 * 2 points on 600 held-out images; bad calls answer clearly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "net_fixture.h"
#include "ntpu/data.h"
#include "ntpu/nn.h"

static ntpu_device *dev;

static void open_ref(void)
{
    cr_assert_eq(ntpu_open("ref", &dev), NTPU_OK);
}

static void close_ref(void)
{
    ntpu_close(dev);
}

TestSuite(quant_net, .init = open_ref, .fini = close_ref);

static ntpu_model *create(const ntpu_arch *a, size_t batch, float lr, uint64_t seed)
{
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    opt.lr = lr;
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, a, batch, seed, &opt, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    return m;
}

/* ------------------------------------------------------------------ the scalar model */

/* The nets of the exact tests: conv (stride, padding), relu, a pool, an optional flatten, the
 * last fc. The model below follows the documents, not the library's loops. */
typedef struct scalar_net {
    const ntpu_arch *a;
    const ntpu_model *m;
    size_t conv, pool, fc; /* their items */
} scalar_net;

static int32_t sat(double v, double lim)
{
    v = nearbyint(v);
    return (int32_t)(v > lim ? lim : v < -lim ? -lim : v);
}

/* The conv's fp32 output for one sample (bias first, then (ky, kx, ci)), relu applied. */
static void conv_f32(const scalar_net *s, const float *x, float *y)
{
    const ntpu_layer *l = &s->a->item[s->conv];
    const ntpu_net_param *p = &s->m->param[s->conv];
    for (int co = 0; co < (int)l->out_c; co++)
        for (int oy = 0; oy < (int)l->out_h; oy++)
            for (int ox = 0; ox < (int)l->out_w; ox++) {
                float v = p->b[co];
                for (int ky = 0; ky < (int)l->k; ky++)
                    for (int kx = 0; kx < (int)l->k; kx++)
                        for (int ci = 0; ci < (int)l->in_c; ci++) {
                            int iy = oy * (int)l->stride + ky - (int)l->pad,
                                ix = ox * (int)l->stride + kx - (int)l->pad;
                            if (iy >= 0 && ix >= 0 && iy < (int)l->in_h && ix < (int)l->in_w)
                                v += x[(ci * (int)l->in_h + iy) * (int)l->in_w + ix] *
                                     p->w[((co * (int)l->in_c + ci) * (int)l->k + ky) * (int)l->k + kx];
                        }
                y[(co * (int)l->out_h + oy) * (int)l->out_w + ox] = v < 0.0f ? 0.0f : v;
            }
}

/* Per output channel: scale max|w| / 127 and the rounded weights. */
static void quantize_weights(const ntpu_net_param *p, size_t out, float *ws, int32_t *wq)
{
    const size_t per = p->nw / out;
    for (size_t o = 0; o < out; o++) {
        float mx = 0.0f;
        for (size_t j = 0; j < per; j++)
            mx = fabsf(p->w[o * per + j]) > mx ? fabsf(p->w[o * per + j]) : mx;
        ws[o] = mx > 0.0f ? mx / 127.0f : 1.0f;
        for (size_t j = 0; j < per; j++)
            wq[o * per + j] = sat(p->w[o * per + j] / ws[o], 127);
    }
}

/* The int8 logits of batch samples x after calibrating on count samples calib. */
static void scalar_int8(const scalar_net *s, const float *calib, size_t count, const float *x, size_t batch,
                        float *logits)
{
    const ntpu_layer *cl = &s->a->item[s->conv], *pl = &s->a->item[s->pool], *fl = &s->a->item[s->fc];
    const size_t in = (size_t)cl->in_c * cl->in_h * cl->in_w, cout = (size_t)cl->out_c * cl->out_h * cl->out_w;
    const size_t pout = (size_t)pl->out_c * pl->out_h * pl->out_w, classes = fl->out, K = pl->k;
    float amax_in = 0.0f, amax_conv = 0.0f, *cy = malloc(cout * 4);
    for (size_t n = 0; n < count; n++) {
        for (size_t j = 0; j < in; j++)
            amax_in = fabsf(calib[n * in + j]) > amax_in ? fabsf(calib[n * in + j]) : amax_in;
        conv_f32(s, calib + n * in, cy);
        for (size_t j = 0; j < cout; j++)
            amax_conv = cy[j] > amax_conv ? cy[j] : amax_conv;
    }
    const float s_in = amax_in / 127.0f, s_conv = amax_conv / 127.0f; /* the pool and fc keep s_conv */
    float cws[64], fws[64];
    int32_t *cwq = malloc(s->m->param[s->conv].nw * 4), *fwq = malloc(s->m->param[s->fc].nw * 4);
    quantize_weights(&s->m->param[s->conv], cl->out_c, cws, cwq);
    quantize_weights(&s->m->param[s->fc], classes, fws, fwq);
    int32_t am = 0;
    int ash = 0;
    if (pl->kind == NTPU_LAYER_AVGPOOL)
        cr_assert_eq(ntpu_quantize_multiplier(1.0 / (double)(K * K), &am, &ash), 0);
    int8_t *xq = malloc(in), *cq = malloc(cout), *pq = malloc(pout);
    for (size_t b = 0; b < batch; b++) {
        for (size_t j = 0; j < in; j++)
            xq[j] = (int8_t)sat(x[b * in + j] / s_in, 127);
        for (size_t co = 0; co < cl->out_c; co++) {
            double acc_scale = (double)s_in * cws[co];
            int32_t bq = sat(s->m->param[s->conv].b[co] / acc_scale, 2147483647.0), mult;
            int shift;
            cr_assert_eq(ntpu_quantize_multiplier(acc_scale / s_conv, &mult, &shift), 0);
            for (int oy = 0; oy < (int)cl->out_h; oy++)
                for (int ox = 0; ox < (int)cl->out_w; ox++) {
                    int32_t acc = 0;
                    for (int ci = 0; ci < (int)cl->in_c; ci++)
                        for (int ky = 0; ky < (int)cl->k; ky++)
                            for (int kx = 0; kx < (int)cl->k; kx++) {
                                int iy = oy * (int)cl->stride + ky - (int)cl->pad;
                                int ix = ox * (int)cl->stride + kx - (int)cl->pad;
                                if (iy >= 0 && ix >= 0 && iy < (int)cl->in_h && ix < (int)cl->in_w)
                                    acc += xq[(ci * (int)cl->in_h + iy) * (int)cl->in_w + ix] *
                                           cwq[((co * cl->in_c + ci) * cl->k + ky) * cl->k + kx];
                            }
                    acc += bq;
                    cq[(co * cl->out_h + oy) * cl->out_w + ox] = ntpu_requantize(acc < 0 ? 0 : acc, mult, shift, 0);
                }
        }
        for (size_t c = 0; c < pl->out_c; c++)
            for (size_t oy = 0; oy < pl->out_h; oy++)
                for (size_t ox = 0; ox < pl->out_w; ox++) {
                    int32_t v = pl->kind == NTPU_LAYER_MAXPOOL ? -128 : 0;
                    for (size_t ky = 0; ky < K; ky++)
                        for (size_t kx = 0; kx < K; kx++) {
                            int32_t e = cq[(c * pl->in_h + oy * K + ky) * pl->in_w + ox * K + kx];
                            v = pl->kind == NTPU_LAYER_AVGPOOL ? v + e : e > v ? e : v;
                        }
                    pq[(c * pl->out_h + oy) * pl->out_w + ox] =
                        (int8_t)(pl->kind == NTPU_LAYER_AVGPOOL ? ntpu_requantize(v, am, ash, 0) : v);
                }
        for (size_t o = 0; o < classes; o++) {
            int64_t acc = sat(s->m->param[s->fc].b[o] / ((double)s_conv * fws[o]), 2147483647.0);
            for (size_t k = 0; k < pout; k++)
                acc += pq[k] * fwq[o * pout + k];
            logits[b * classes + o] = (float)((double)acc * s_conv * fws[o]);
        }
    }
    free(cy), free(cwq), free(fwq), free(xq), free(cq), free(pq);
}

/* The library's int8 logits of a fresh net equal the scalar model's, bit for bit. */
static void check_exact(const char *spec, unsigned c, unsigned h, unsigned w, size_t pool, size_t fc)
{
    enum { CALIB = 9, B = 7 };
    ntpu_arch a = net_arch(spec, c, h, w);
    ntpu_model *m = create(&a, B, 0.01f, 5);
    const size_t in = (size_t)c * h * w, classes = a.item[fc].out;
    float *calib = malloc(CALIB * in * 4), *x = malloc(B * in * 4), *got = malloc(B * classes * 4),
          *want = malloc(B * classes * 4);
    net_inputs(calib, CALIB * in, 3);
    net_inputs(x, B * in, 4);
    ntpu_qmodel *q = NULL;
    cr_assert_eq(ntpu_qmodel_create(m, calib, CALIB, &q), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_qmodel_predict(q, x, B, got), NTPU_OK, "%s", ntpu_last_error(dev));
    scalar_net s = {.a = &a, .m = m, .conv = 0, .pool = pool, .fc = fc};
    scalar_int8(&s, calib, CALIB, x, B, want);
    size_t nonzero = 0;
    for (size_t j = 0; j < B * classes; j++) {
        cr_assert_eq(memcmp(&got[j], &want[j], 4), 0, "%s: logit %zu: %.9g, the scalar model %.9g", spec, j,
                     (double)got[j], (double)want[j]);
        nonzero += got[j] != 0.0f;
    }
    cr_assert_gt(nonzero, B * classes / 2, "%s: the logits are mostly zero", spec);
    ntpu_qmodel_free(q);
    ntpu_model_free(m);
    free(calib), free(x), free(got), free(want);
}

Test(quant_net, conv_relu_maxpool_fc_equals_a_scalar_int8_loop)
{
    check_exact("conv3k3p1,relu,maxpool2,fc5", 2, 6, 6, 2, 4); /* an implied flatten is item 3 */
}

Test(quant_net, strided_conv_avgpool_floor_mode_flatten_fc_equals_a_scalar_int8_loop)
{
    check_exact("conv4k3s2p1,relu,avgpool2,flatten,fc6", 2, 9, 9, 2, 4);
}

/* ------------------------------------------------------------------ accuracy */

/* A small CNN trained for 120 Adam steps on Fashion-MNIST: int8 accuracy on 600 test images
 * within 2 points of bf16's. */
Test(quant_net, a_trained_cnn_keeps_its_accuracy_in_int8, .timeout = 600)
{
    enum { BATCH = 50, STEPS = 120, TEST = 600, CALIB = 500 };
    ntpu_dataset train, test;
    const char *dir = "/usr/share/datasets/fashion-mnist";
    cr_assert_eq(ntpu_dataset_load(dir, "train", BATCH * STEPS, &train), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(ntpu_dataset_load(dir, "test", TEST, &test), NTPU_OK, "%s", ntpu_last_error(NULL));
    ntpu_arch a = net_arch("conv8k3s2p1,relu,maxpool2,fc10", 1, 28, 28);
    ntpu_model *m = create(&a, BATCH, 0.003f, 1);
    for (size_t s = 0; s < STEPS; s++)
        cr_assert_eq(ntpu_model_train_step(m, train.images + s * BATCH * 784, train.labels + s * BATCH, BATCH, NULL),
                     NTPU_OK);
    double acc = 0, loss = 0, acc8 = 0;
    cr_assert_eq(ntpu_model_evaluate(m, test.images, test.labels, TEST, &acc, &loss), NTPU_OK);
    ntpu_qmodel *q = NULL;
    cr_assert_eq(ntpu_qmodel_create(m, train.images, CALIB, &q), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_qmodel_evaluate(q, test.images, test.labels, TEST, &acc8), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_log_info("bf16 %.4f, int8 %.4f on %d test images", acc, acc8, TEST);
    cr_assert_gt(acc, 0.7, "bf16 accuracy %.4f: the net did not train", acc);
    cr_assert_lt(fabs(acc8 - acc), 0.02, "int8 %.4f, bf16 %.4f", acc8, acc);
    ntpu_qmodel_free(q);
    ntpu_model_free(m);
    ntpu_dataset_free(&train);
    ntpu_dataset_free(&test);
}

/* ------------------------------------------------------------------ errors */

Test(quant_net, bad_calls_answer_clearly)
{
    ntpu_arch a = net_arch("conv2k3,relu,fc3", 1, 5, 5);
    ntpu_model *m = create(&a, 4, 0.01f, 2);
    float x[5 * 25] = {0}, logits[5 * 3];
    uint8_t y[4] = {0, 1, 2, 3};
    ntpu_qmodel *q = NULL;
    cr_assert_eq(ntpu_qmodel_create(m, x, 0, &q), NTPU_ERR_INVALID_ARG);
    cr_assert_null(q);
    cr_assert_eq(ntpu_qmodel_create(m, x, 5, &q), NTPU_OK);
    cr_assert_eq(ntpu_qmodel_predict(q, x, 5, logits), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_qmodel_predict(q, x, 4, logits), NTPU_OK);
    for (size_t j = 0; j < 4 * 3; j++)
        cr_assert(isfinite(logits[j]));
    double acc = -1;
    cr_assert_eq(ntpu_qmodel_evaluate(q, x, y, 4, &acc), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "label 3"), "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_qmodel_evaluate(q, x, y, 3, &acc), NTPU_OK);
    cr_assert(acc >= 0.0 && acc <= 1.0);
    ntpu_qmodel_free(q);
    ntpu_model_free(m);
}
