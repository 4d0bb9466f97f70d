/* SPDX-License-Identifier: Apache-2.0 */
/* A small CNN trained on a device and on the golden model `ref` side by side is the
 * same bit for bit (docs/numerics.md, Convolutional layers): a 1 x 8 x 8 input,
 * conv4k3p1,relu,maxpool2,conv8k3s2p1,relu,avgpool2,fc10 (stride, padding, both pools),
 * a batch of 10 (not a multiple of 8), three Adam steps: every loss, weight, bias and
 * Adam moment equal, then the logits of a prediction, and the int8 logits of the trained
 * net's quantized copy (host/src/nn/quant_net.c) when the device has int8 matmuls. Then the
 * same with the device's model asking for the device optimizer (host/src/nn/net_devopt.c; a
 * device without it keeps it on the host), its state fetched before each comparison.
 * Usage: net_backends DEVICE (vsim, vsim:rtl, vsim:board=..., ...) */
#include <stdio.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "ntpu/nn.h"

enum { B = 10, IN = 64, CLASSES = 10, STEPS = 3 };
static const char spec[] = "conv4k3p1,relu,maxpool2,conv8k3s2p1,relu,avgpool2,fc10";

/* The number of values of two models' parameters and optimizer state that differ. */
static size_t differences(const ntpu_model *a, const ntpu_model *b)
{
    size_t diff = 0;
    for (size_t i = 0; i < a->arch.n; i++) {
        const ntpu_net_param *p = &a->param[i], *q = &b->param[i];
        const float *x[] = {p->w, p->b, p->ws1, p->bs1, p->ws2, p->bs2},
                    *y[] = {q->w, q->b, q->ws1, q->bs1, q->ws2, q->bs2};
        for (size_t t = 0; t < 6 && p->w; t++)
            for (size_t j = 0; j < (t % 2 ? p->nb : p->nw); j++)
                diff += memcmp(&x[t][j], &y[t][j], 4) != 0;
    }
    return diff;
}

static ntpu_model *create(ntpu_device *dev, const ntpu_arch *a, int devopt)
{
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    opt.lr = 0.01f;
    opt.device = devopt;
    ntpu_model *m = NULL;
    if (ntpu_model_create_arch(dev, a, B, 1234, &opt, &m) != NTPU_OK)
        printf("FAIL model: %s\n", ntpu_last_error(dev));
    return m;
}

/* The int8 logits of m's and r's quantized copies, calibrated on x, are the same bits: 1,
 * else 0 (and 1 for a device without int8 matmuls, which says so). */
static int same_int8(ntpu_model *m, ntpu_model *r, const float *x)
{
    if (ntpu_qmodel_check(m) == NTPU_ERR_UNSUPPORTED) {
        printf("int8: skipped (%s)\n", ntpu_last_error(m->dev));
        return 1;
    }
    ntpu_qmodel *qm = NULL, *qr = NULL;
    float lm[B * CLASSES], lr[B * CLASSES];
    int ok = ntpu_qmodel_create(m, x, B, &qm) == NTPU_OK && ntpu_qmodel_create(r, x, B, &qr) == NTPU_OK &&
             ntpu_qmodel_predict(qm, x, B, lm) == NTPU_OK && ntpu_qmodel_predict(qr, x, B, lr) == NTPU_OK;
    if (!ok)
        printf("FAIL int8: %s / %s\n", ntpu_last_error(m->dev), ntpu_last_error(r->dev));
    size_t diff = 0;
    for (size_t j = 0; ok && j < B * CLASSES; j++)
        diff += memcmp(&lm[j], &lr[j], 4) != 0;
    printf("int8: %zu of %d logits differ  %s\n", diff, B * CLASSES, ok && diff == 0 ? "ok" : "FAIL");
    ntpu_qmodel_free(qm);
    ntpu_qmodel_free(qr);
    return ok && diff == 0;
}

/* Trains a on dev (its optimizer on the device when devopt and the device can) and on ref side by side:
 * 1 when every step, the prediction and the int8 copies agree. */
static int compare(ntpu_device *dev, ntpu_device *ref, const ntpu_arch *a, int devopt)
{
    ntpu_model *m = create(dev, a, devopt), *r = create(ref, a, 0);
    if (!m || !r)
        return 0;
    printf("%s optimizer%s\n", devopt ? "device" : "host",
           devopt && ntpu_model_check_device_optimizer(m) != NTPU_OK ? " asked for, on the host" : "");
    float x[B * IN], lm[B * CLASSES], lr[B * CLASSES];
    uint8_t y[B];
    uint64_t s = 99;
    int ok = 1;
    for (int step = 0; step < STEPS && ok; step++) {
        for (int i = 0; i < B * IN; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)((s >> 40) % 2000) / 1000.0f - 0.7f;
        }
        for (int i = 0; i < B; i++)
            y[i] = (uint8_t)((i * 3 + step) % CLASSES);
        ntpu_step_result rm, rr;
        if (ntpu_model_train_step(m, x, y, B, &rm) != NTPU_OK || ntpu_model_train_step(r, x, y, B, &rr) != NTPU_OK) {
            printf("FAIL step %d: %s / %s\n", step, ntpu_last_error(dev), ntpu_last_error(ref));
            return 0;
        }
        size_t diff = ntpu_model_fetch(m) == NTPU_OK ? differences(m, r) : 1;
        int same = memcmp(&rm.loss, &rr.loss, 4) == 0 && rm.correct == rr.correct && diff == 0;
        printf("step %d: loss %.7f (ref %.7f), %zu parameter and state values differ  %s\n", step, rm.loss, rr.loss,
               diff, same ? "ok" : "FAIL");
        ok &= same;
    }
    ok &= ntpu_model_predict(m, x, B, lm) == NTPU_OK && ntpu_model_predict(r, x, B, lr) == NTPU_OK &&
          memcmp(lm, lr, sizeof lm) == 0;
    ok = same_int8(m, r, x) && ok;
    ntpu_model_free(m);
    ntpu_model_free(r);
    return ok;
}

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "vsim";
    ntpu_device *dev = NULL, *ref = NULL;
    if (ntpu_open(device, &dev) != NTPU_OK || ntpu_open("ref", &ref) != NTPU_OK) {
        printf("FAIL cannot open %s: %s\n", device, ntpu_last_error(dev));
        return 1;
    }
    ntpu_arch a;
    char why[160];
    if (ntpu_arch_parse(spec, 1, 8, 8, &a, why, sizeof why) != NTPU_OK) {
        printf("FAIL %s: %s\n", spec, why);
        return 1;
    }
    int ok = compare(dev, ref, &a, 0);
    ok = compare(dev, ref, &a, 1) && ok;
    ntpu_close(dev);
    ntpu_close(ref);
    printf("%s net_backends %s\n", ok ? "PASS" : "FAIL", device);
    return ok ? 0 : 1;
}
