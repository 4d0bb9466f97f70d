/* SPDX-License-Identifier: Apache-2.0 */
/* The device's mixed-precision training against a plain fp32 trainer written
 * here: the same 784-256-10 MLP, initial weights, data order and Adam recipe
 * (lr 1e-3, batch 64) on the first 5,000 Fashion-MNIST training images for 5
 * epochs. Their test accuracies (10,000 images) must end within 1 point of each
 * other; the device model's int8 quantization must stay within 1 point of it too.
 * Usage: train_vs_fp32 [device=ref] [train_samples=5000] [epochs=5] [data dir] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/data.h"
#include "ntpu/nn.h"

enum { IN = 784, HID = 256, OUT = 10, BATCH = 64 };

typedef struct fp32_mlp { /* the reference: plain fp32 everywhere */
    float w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT];
    float m[IN * HID + HID + HID * OUT + OUT], v[IN * HID + HID + HID * OUT + OUT];
    long t;
} fp32_mlp;

static void forward(const fp32_mlp *n, const float *x, float *h, float *z)
{
    for (int j = 0; j < HID; j++) {
        float s = n->b1[j];
        for (int k = 0; k < IN; k++)
            s += x[k] * n->w1[k * HID + j];
        h[j] = s > 0 ? s : 0;
    }
    for (int c = 0; c < OUT; c++) {
        float s = n->b2[c];
        for (int j = 0; j < HID; j++)
            s += h[j] * n->w2[j * OUT + c];
        z[c] = s;
    }
}

static void adam(float *p, const float *g, float *m, float *v, size_t n, long t)
{
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const float c1 = 1 - powf(b1, (float)t), c2 = 1 - powf(b2, (float)t);
    for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
    }
}

static void fp32_step(fp32_mlp *n, const float *x, const uint8_t *y, int bs, float *grad)
{
    float *gw1 = grad, *gb1 = gw1 + IN * HID, *gw2 = gb1 + HID, *gb2 = gw2 + HID * OUT;
    memset(grad, 0, sizeof(float) * (IN * HID + HID + HID * OUT + OUT));
    for (int s = 0; s < bs; s++) {
        float h[HID], z[OUT], dz[OUT], dh[HID];
        forward(n, x + s * IN, h, z);
        float mx = z[0], sum = 0;
        for (int c = 1; c < OUT; c++)
            mx = z[c] > mx ? z[c] : mx;
        for (int c = 0; c < OUT; c++)
            sum += expf(z[c] - mx);
        for (int c = 0; c < OUT; c++)
            dz[c] = (expf(z[c] - mx) / sum - (c == y[s])) / bs;
        for (int j = 0; j < HID; j++) {
            float d = 0;
            for (int c = 0; c < OUT; c++) {
                gw2[j * OUT + c] += h[j] * dz[c];
                d += dz[c] * n->w2[j * OUT + c];
            }
            dh[j] = h[j] > 0 ? d : 0;
        }
        for (int c = 0; c < OUT; c++)
            gb2[c] += dz[c];
        for (int k = 0; k < IN; k++) {
            float xk = x[s * IN + k];
            if (xk != 0)
                for (int j = 0; j < HID; j++)
                    gw1[k * HID + j] += xk * dh[j];
        }
        for (int j = 0; j < HID; j++)
            gb1[j] += dh[j];
    }
    n->t++;
    adam(n->w1, grad, n->m, n->v, IN * HID + HID + HID * OUT + OUT, n->t); /* w1 b1 w2 b2 are contiguous */
}

static double fp32_accuracy(const fp32_mlp *n, const ntpu_dataset *d)
{
    size_t ok = 0;
    for (size_t s = 0; s < d->count; s++) {
        float h[HID], z[OUT];
        forward(n, d->images + s * IN, h, z);
        int arg = 0;
        for (int c = 1; c < OUT; c++)
            arg = z[c] > z[arg] ? c : arg;
        ok += arg == d->labels[s];
    }
    return (double)ok / (double)d->count;
}

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "ref";
    size_t count = argc > 2 ? (size_t)atol(argv[2]) : 5000;
    int epochs = argc > 3 ? atoi(argv[3]) : 5;
    const char *dir = argc > 4 ? argv[4] : "/usr/share/datasets/fashion-mnist";
    ntpu_dataset train, test;
    if (ntpu_dataset_load(dir, "train", count, &train) != NTPU_OK ||
        ntpu_dataset_load(dir, "test", 0, &test) != NTPU_OK) {
        printf("FAIL %s\n", ntpu_last_error(NULL));
        return 1;
    }
    ntpu_device *dev;
    ntpu_model *m;
    const unsigned sizes[] = {IN, HID, OUT};
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    if (ntpu_open(device, &dev) != NTPU_OK || ntpu_model_create(dev, sizes, 3, BATCH, 0, &opt, &m) != NTPU_OK) {
        printf("FAIL %s: %s\n", device, ntpu_last_error(dev));
        return 1;
    }
    fp32_mlp *ref = calloc(1, sizeof *ref);
    float *grad = malloc(sizeof ref->m), *xb = malloc(sizeof(float) * BATCH * IN);
    size_t *order = malloc(train.count * sizeof *order);
    uint8_t yb[BATCH];
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    memcpy(ref->w1, v.weights[0], sizeof ref->w1);
    memcpy(ref->b1, v.biases[0], sizeof ref->b1);
    memcpy(ref->w2, v.weights[1], sizeof ref->w2);
    memcpy(ref->b2, v.biases[1], sizeof ref->b2);
    uint64_t s = 12345;
    for (int e = 0; e < epochs; e++) {
        for (size_t i = 0; i < train.count; i++)
            order[i] = i;
        for (size_t i = train.count; i > 1; i--) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t j = (size_t)((s >> 33) % i), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (size_t at = 0; at < train.count; at += BATCH) {
            int bs = (int)(train.count - at < BATCH ? train.count - at : BATCH);
            for (int i = 0; i < bs; i++) {
                memcpy(xb + i * IN, train.images + order[at + i] * IN, sizeof(float) * IN);
                yb[i] = train.labels[order[at + i]];
            }
            if (ntpu_model_train_step(m, xb, yb, (size_t)bs, NULL) != NTPU_OK) {
                printf("FAIL step: %s\n", ntpu_last_error(dev));
                return 1;
            }
            fp32_step(ref, xb, yb, bs, grad);
        }
    }
    double a_dev, a_ref = fp32_accuracy(ref, &test), a_int8;
    ntpu_model_evaluate(m, test.images, test.labels, test.count, &a_dev, NULL);
    ntpu_qmodel *q;
    if (ntpu_qmodel_create(m, train.images, train.count < 1000 ? train.count : 1000, &q) != NTPU_OK ||
        ntpu_qmodel_evaluate(q, test.images, test.labels, test.count, &a_int8) != NTPU_OK) {
        printf("FAIL int8: %s\n", ntpu_last_error(dev));
        return 1;
    }
    int ok = fabs(a_dev - a_ref) <= 0.01 && fabs(a_int8 - a_dev) <= 0.01;
    printf("final: device bf16 %.4f, fp32 reference %.4f (%+.2f points), int8 %.4f (%+.2f points)\n", a_dev, a_ref,
           100 * (a_dev - a_ref), a_int8, 100 * (a_int8 - a_dev));
    ntpu_qmodel_free(q);
    ntpu_model_free(m);
    ntpu_close(dev);
    free(ref);
    free(grad);
    free(xb);
    free(order);
    ntpu_dataset_free(&train);
    ntpu_dataset_free(&test);
    puts(ok ? "PASS train_vs_fp32" : "FAIL train_vs_fp32");
    return ok ? 0 : 1;
}
