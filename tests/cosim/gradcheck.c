/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient check: the gradients a device training step computes (softmax
 * cross-entropy gradient on the host; dW through the transposed activation
 * stream, db through COLSUM, dX through transposed weights, ReLU backward in the
 * vector unit) agree with central finite differences of an fp64 reference of the
 * same network. Sizes that are not multiples of N and a batch that is not one
 * exercise every padding path; three layers exercise dX twice.
 * Tolerance: every gradient tensor within 3% of its largest element (bf16
 * operands carry 2^-9 relative rounding; observed errors are well under 1%).
 * Usage: gradcheck [device=ref] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/nn.h"

enum { L = 3, BATCH = 12 };
static const unsigned sizes[L + 1] = {20, 19, 12, 10};

static double W[L][32 * 32], B[L][32];
static double X[BATCH][32];
static unsigned Y[BATCH];

/* Mean cross-entropy of the fp64 network. */
static double loss64(void)
{
    double total = 0;
    for (int s = 0; s < BATCH; s++) {
        double a[32], z[32];
        memcpy(a, X[s], sizeof a);
        for (int l = 0; l < L; l++) {
            for (unsigned o = 0; o < sizes[l + 1]; o++) {
                z[o] = B[l][o];
                for (unsigned k = 0; k < sizes[l]; k++)
                    z[o] += a[k] * W[l][k * sizes[l + 1] + o];
            }
            for (unsigned o = 0; o < sizes[l + 1]; o++)
                a[o] = l + 1 < L && z[o] < 0 ? 0 : z[o];
        }
        double mx = a[0], sum = 0;
        for (unsigned c = 1; c < sizes[L]; c++)
            mx = a[c] > mx ? a[c] : mx;
        for (unsigned c = 0; c < sizes[L]; c++)
            sum += exp(a[c] - mx);
        total += log(sum) + mx - a[Y[s]];
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

/* Compares n device gradients with finite differences of the parameters p. */
static int check(const char *name, const float *dev, double *p, size_t n)
{
    double gmax = 0, emax = 0;
    for (size_t i = 0; i < n; i++) {
        double g = fd(&p[i]);
        gmax = fabs(g) > gmax ? fabs(g) : gmax;
        emax = fabs(g - dev[i]) > emax ? fabs(g - dev[i]) : emax;
    }
    int ok = gmax > 1e-4 && emax <= 0.03 * gmax;
    printf("%-6s %4zu values: largest |grad| %.3e, largest error %.3e (%.2f%%)  %s\n", name, n, gmax, emax,
           100 * emax / gmax, ok ? "ok" : "FAIL");
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
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_SGD);
    opt.lr = 0; /* the step computes gradients and leaves the weights alone */
    ntpu_model *m;
    if (ntpu_model_create(dev, sizes, L + 1, BATCH, 42, &opt, &m) != NTPU_OK) {
        printf("FAIL model: %s\n", ntpu_last_error(dev));
        return 1;
    }
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    /* The fp64 network uses the device's operands exactly: weights and inputs
     * rounded to bf16, as the device sees them. */
    for (int l = 0; l < L; l++) {
        for (unsigned i = 0; i < sizes[l] * sizes[l + 1]; i++) {
            v.weights[l][i] = ntpu_bf16_to_f32(ntpu_bf16_from_f32(v.weights[l][i]));
            W[l][i] = v.weights[l][i];
        }
        for (unsigned i = 0; i < sizes[l + 1]; i++)
            B[l][i] = v.biases[l][i];
    }
    ntpu_model_sync(m);
    float x[BATCH * 20];
    uint8_t y[BATCH];
    uint64_t s = 7;
    for (int i = 0; i < BATCH * 20; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ntpu_bf16_to_f32(ntpu_bf16_from_f32((float)((s >> 40) % 1000) / 1000.0f));
        X[i / 20][i % 20] = x[i];
    }
    for (int i = 0; i < BATCH; i++)
        Y[i] = y[i] = (uint8_t)(i * 7 % 10);
    ntpu_step_result r;
    if (ntpu_model_train_step(m, x, y, BATCH, &r) != NTPU_OK) {
        printf("FAIL step: %s\n", ntpu_last_error(dev));
        return 1;
    }
    printf("device %s: loss %.6f, fp64 reference %.6f\n", device, r.loss, loss64());
    int ok = fabs(r.loss - loss64()) < 0.01;
    char name[16];
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "dW%d", l);
        ok &= check(name, v.grad_w[l], W[l], sizes[l] * sizes[l + 1]);
        snprintf(name, sizeof name, "db%d", l);
        ok &= check(name, v.grad_b[l], B[l], sizes[l + 1]);
    }
    ntpu_model_free(m);
    ntpu_close(dev);
    puts(ok ? "PASS gradcheck" : "FAIL gradcheck");
    return ok ? 0 : 1;
}
