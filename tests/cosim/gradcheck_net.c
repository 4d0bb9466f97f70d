/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient check of the net layers (host/src/nn/net*.c): the gradients a training step
 * computes on a device (every product through ntpu_matmul_bf16; pools, relu and the
 * loss on the host) agree with central finite differences of an fp64 model of the same
 * network, for small nets with conv at stride 1 and 2 with padding (dX through the
 * transposed convolution, twice), max and average pooling, relu and an fc on a
 * flattened map, and a batch that is not a multiple of 8.
 * Tolerance, as tests/cosim/gradcheck.c: every gradient tensor within 3% of its largest
 * element (bf16 operands and activations carry 2^-9 relative rounding a layer).
 * Usage: gradcheck_net [device=ref] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "ntpu/nn.h"

enum { BATCH = 11, C = 2, H = 6, W = 6, MAXV = 4096 };

static const ntpu_arch *arch;
static double *P[NTPU_MAX_ITEMS][2]; /* fp64 weights and biases, PyTorch layouts */
static double X[BATCH][C * H * W];
static unsigned Y[BATCH];

static size_t in_size(const ntpu_layer *l)
{
    return (size_t)l->in_c * l->in_h * l->in_w;
}

/* One item of the fp64 model on one sample: x (its input, C-H-W) -> y. */
static void item64(size_t i, const double *x, double *y)
{
    const ntpu_layer *l = &arch->item[i];
    const int K = (int)l->k, S = (int)l->stride, Pd = (int)l->pad, h = (int)l->in_h, w = (int)l->in_w;
    const int oh = (int)l->out_h, ow = (int)l->out_w;
    if (l->kind == NTPU_LAYER_CONV)
        for (int co = 0; co < (int)l->out_c; co++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double z = P[i][1][co];
                    for (int ci = 0; ci < (int)l->in_c; ci++)
                        for (int ky = 0; ky < K; ky++)
                            for (int kx = 0; kx < K; kx++) {
                                int iy = oy * S + ky - Pd, ix = ox * S + kx - Pd;
                                if (iy >= 0 && ix >= 0 && iy < h && ix < w)
                                    z += x[(ci * h + iy) * w + ix] * P[i][0][((co * l->in_c + ci) * K + ky) * K + kx];
                            }
                    y[(co * oh + oy) * ow + ox] = z;
                }
    else if (l->kind == NTPU_LAYER_FC)
        for (unsigned o = 0; o < l->out; o++) {
            double z = P[i][1][o];
            for (size_t k = 0; k < in_size(l); k++)
                z += x[k] * P[i][0][o * in_size(l) + k];
            y[o] = z;
        }
    else if (l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL)
        for (int c = 0; c < (int)l->in_c; c++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double mx = -INFINITY, s = 0;
                    for (int t = 0; t < K * K; t++) {
                        double v = x[(c * h + oy * K + t / K) * w + ox * K + t % K];
                        mx = v > mx ? v : mx;
                        s += v;
                    }
                    y[(c * oh + oy) * ow + ox] = l->kind == NTPU_LAYER_MAXPOOL ? mx : s / (K * K);
                }
    else
        for (size_t j = 0; j < in_size(l); j++)
            y[j] = l->kind == NTPU_LAYER_RELU && x[j] < 0 ? 0 : x[j];
}

/* Mean cross-entropy of the fp64 network over the batch. */
static double loss64(void)
{
    static double a[2][MAXV];
    double total = 0;
    for (int s = 0; s < BATCH; s++) {
        memcpy(a[0], X[s], sizeof X[s]);
        int cur = 0;
        for (size_t i = 0; i < arch->n; i++, cur ^= 1)
            item64(i, a[cur], a[cur ^ 1]);
        const double *z = a[cur];
        const size_t classes = arch->item[arch->n - 1].out;
        double mx = z[0], sum = 0;
        for (size_t c = 1; c < classes; c++)
            mx = z[c] > mx ? z[c] : mx;
        for (size_t c = 0; c < classes; c++)
            sum += exp(z[c] - mx);
        total += log(sum) + mx - z[Y[s]];
    }
    return total / BATCH;
}

static double fd(double *p)
{
    const double h = 1e-5, keep = *p;
    *p = keep + h;
    double up = loss64();
    *p = keep - h;
    double down = loss64();
    *p = keep;
    return (up - down) / (2 * h);
}

static int check(const char *name, const float *dev, double *p, size_t n)
{
    double gmax = 0, emax = 0;
    for (size_t i = 0; i < n; i++) {
        double g = fd(&p[i]);
        gmax = fabs(g) > gmax ? fabs(g) : gmax;
        emax = fabs(g - dev[i]) > emax ? fabs(g - dev[i]) : emax;
    }
    int ok = gmax > 1e-4 && emax <= 0.03 * gmax;
    printf("  %-8s %4zu values: largest |grad| %.3e, largest error %.3e (%.2f%%)  %s\n", name, n, gmax, emax,
           100 * emax / gmax, ok ? "ok" : "FAIL");
    return ok;
}

/* One step with lr 0 on dev; every conv and fc gradient against finite differences. */
static int check_net(ntpu_device *dev, const char *spec)
{
    ntpu_arch a;
    char why[160];
    if (ntpu_arch_parse(spec, C, H, W, &a, why, sizeof why) != NTPU_OK) {
        printf("FAIL %s: %s\n", spec, why);
        return 0;
    }
    arch = &a;
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_SGD);
    opt.lr = 0;
    ntpu_model *m;
    if (ntpu_model_create_arch(dev, &a, BATCH, 42, &opt, &m) != NTPU_OK) {
        printf("FAIL model %s: %s\n", spec, ntpu_last_error(dev));
        return 0;
    }
    /* The fp64 network takes the device's operands exactly: weights rounded to bf16. */
    for (size_t i = 0; i < a.n; i++) {
        ntpu_net_param *p = &m->param[i];
        P[i][0] = calloc(p->nw + 1, sizeof(double));
        P[i][1] = calloc(p->nb + 1, sizeof(double));
        for (size_t j = 0; j < p->nw; j++)
            P[i][0][j] = p->w[j] = ntpu_bf16_to_f32(ntpu_bf16_from_f32(p->w[j]));
        for (size_t j = 0; j < p->nb; j++)
            P[i][1][j] = p->b[j];
    }
    float x[BATCH * C * H * W];
    uint8_t y[BATCH];
    uint64_t s = 7;
    for (int i = 0; i < BATCH * C * H * W; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ntpu_bf16_to_f32(ntpu_bf16_from_f32((float)((s >> 40) % 1000) / 500.0f - 0.8f));
        X[i / (C * H * W)][i % (C * H * W)] = x[i];
    }
    for (int i = 0; i < BATCH; i++)
        Y[i] = y[i] = (uint8_t)(i * 7 % a.item[a.n - 1].out);
    ntpu_step_result r;
    int ok = ntpu_model_train_step(m, x, y, BATCH, &r) == NTPU_OK;
    printf("%s: loss %.6f, fp64 reference %.6f\n", spec, r.loss, loss64());
    ok = ok && fabs(r.loss - loss64()) < 0.01;
    for (size_t i = 0; i < a.n; i++) {
        char name[16];
        if (!m->param[i].w)
            continue;
        snprintf(name, sizeof name, "%u.weight", a.item[i].index);
        ok &= check(name, m->param[i].gw, P[i][0], m->param[i].nw);
        snprintf(name, sizeof name, "%u.bias", a.item[i].index);
        ok &= check(name, m->param[i].gb, P[i][1], m->param[i].nb);
    }
    for (size_t i = 0; i < a.n; i++)
        free(P[i][0]), free(P[i][1]), P[i][0] = P[i][1] = NULL;
    ntpu_model_free(m);
    return ok;
}

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "ref";
    ntpu_device *dev;
    if (ntpu_open(device, &dev) != NTPU_OK) {
        printf("FAIL cannot open %s: %s\n", device, ntpu_last_error(dev));
        return 1;
    }
    printf("device %s\n", device);
    int ok = check_net(dev, "conv3k3s2p1,relu,maxpool2,fc4");
    ok &= check_net(dev, "conv3k3p1,relu,conv4k3s2p1,maxpool2,fc5");
    ok &= check_net(dev, "conv3k3p1,avgpool2,relu,conv4k3s2p1,relu,fc5");
    ntpu_close(dev);
    puts(ok ? "PASS gradcheck_net" : "FAIL gradcheck_net");
    return ok ? 0 : 1;
}
