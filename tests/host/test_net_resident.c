/* SPDX-License-Identifier: Apache-2.0 */
/* Nets resident on the device (protocol 1.5, host/src/nn/net_resident*.c, net_plan.c) against the host
 * path (net.c) on the golden model: trained for some steps on `ref` (CONV and POOL) and on
 * `ref:noconv=1` (the host path), every loss, correct count, weight, bias, gradient and optimizer slot is
 * the same bits, for archs with stride, padding, both pools, floor mode, more channels than N, an fc on a
 * flattened map and after an fc, and batches that are not a multiple of 8; also at N = 4 and 2; predictions
 * agree; ntpu_matmul between steps does not disturb a resident net; what keeps a net on the host path is
 * named. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/net_resident.h"
#include "net_fixture.h"
#include "ntpu/nn.h"

static ntpu_model *create(ntpu_device *dev, const ntpu_arch *a, size_t batch)
{
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    opt.lr = 0.01f;
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, a, batch, 7, &opt, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    return m;
}

static void same_floats(const float *a, const float *b, size_t n, const char *what, size_t item)
{
    if (!a || !b) {
        cr_assert_eq(a, b, "%s of item %zu", what, item);
        return;
    }
    for (size_t j = 0; j < n; j++)
        cr_assert_eq(memcmp(&a[j], &b[j], 4), 0, "%s of item %zu differs at %zu: %a vs %a", what, item, j, (double)a[j],
                     (double)b[j]);
}

static void same_params(const ntpu_model *r, const ntpu_model *h)
{
    for (size_t i = 0; i < r->arch.n; i++) {
        const ntpu_net_param *p = &r->param[i], *q = &h->param[i];
        same_floats(p->w, q->w, p->nw, "weights", i);
        same_floats(p->b, q->b, p->nb, "biases", i);
        same_floats(p->gw, q->gw, p->nw, "dW", i);
        same_floats(p->gb, q->gb, p->nb, "db", i);
        same_floats(p->ws1, q->ws1, p->nw, "Adam m", i);
        same_floats(p->ws2, q->ws2, p->nw, "Adam v", i);
        same_floats(p->bs1, q->bs1, p->nb, "Adam m of the bias", i);
        same_floats(p->bs2, q->bs2, p->nb, "Adam v of the bias", i);
    }
}

/* Changes step s's inputs (n floats) before both models train on them, or NULL. */
typedef void (*edit_fn)(float *x, size_t n, int s);

/* Trains spec on the resident device and on the host path for steps steps of batches of sizes
 * batch, batch - 1, ... (so the last micro-batch is partly empty) and compares everything. */
static void compare_edited(const char *resident, const char *host, const char *spec, unsigned c, unsigned hgt,
                           unsigned w, size_t batch, int steps, int vary, edit_fn edit)
{
    ntpu_device *dr = NULL, *dh = NULL;
    cr_assert_eq(ntpu_open(resident, &dr), NTPU_OK, "%s: %s", resident, ntpu_last_error(dr));
    cr_assert_eq(ntpu_open(host, &dh), NTPU_OK, "%s: %s", host, ntpu_last_error(dh));
    const ntpu_arch a = net_arch(spec, c, hgt, w);
    ntpu_model *mr = create(dr, &a, batch), *mh = create(dh, &a, batch);
    cr_assert_eq(ntpu_model_check_resident(mr), NTPU_OK, "%s on %s: %s", spec, resident, ntpu_last_error(dr));
    cr_assert_eq(ntpu_model_check_resident(mh), NTPU_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(ntpu_last_error(dh), "CONV"), "%s", ntpu_last_error(dh));
    const size_t in = (size_t)c * hgt * w, classes = a.item[a.n - 1].out;
    float *x = malloc(batch * in * sizeof *x), *lr = malloc(batch * classes * 8), *lh = lr + batch * classes;
    uint8_t *y = malloc(batch);
    cr_assert(x && lr && y);
    for (int s = 0; s < steps; s++) {
        const size_t b = batch - (vary ? (size_t)s % 3 : 0);
        net_batch(x, b * in, y, b, classes, 100 + (uint64_t)s);
        if (edit)
            edit(x, b * in, s);
        ntpu_step_result rr, rh;
        cr_assert_eq(ntpu_model_train_step(mr, x, y, b, &rr), NTPU_OK, "%s", ntpu_last_error(dr));
        cr_assert_eq(ntpu_model_train_step(mh, x, y, b, &rh), NTPU_OK, "%s", ntpu_last_error(dh));
        cr_assert_eq(memcmp(&rr.loss, &rh.loss, 4), 0, "%s step %d: loss %a vs %a", spec, s, (double)rr.loss,
                     (double)rh.loss);
        cr_assert_eq(rr.correct, rh.correct);
        same_params(mr, mh);
    }
    net_batch(x, batch * in, y, batch, classes, 99);
    cr_assert_eq(ntpu_model_predict(mr, x, batch, lr), NTPU_OK, "%s", ntpu_last_error(dr));
    cr_assert_eq(ntpu_model_predict(mh, x, batch, lh), NTPU_OK);
    cr_assert_eq(memcmp(lr, lh, batch * classes * 4), 0, "%s: predictions differ", spec);
    free(x), free(lr), free(y);
    ntpu_model_free(mr), ntpu_model_free(mh);
    ntpu_close(dr), ntpu_close(dh);
}

static void compare(const char *resident, const char *host, const char *spec, unsigned c, unsigned hgt, unsigned w,
                    size_t batch, int steps, int vary)
{
    compare_edited(resident, host, spec, c, hgt, w, batch, steps, vary, NULL);
}

/* Whether spec on device c x h x w is resident with a dense input (net_spread.c), and writes its input twice. */
static int dense_layout(const char *device, const char *spec, unsigned c, unsigned hgt, unsigned w, int *twice)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open(device, &d), NTPU_OK);
    const ntpu_arch a = net_arch(spec, c, hgt, w);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(d, &a, 8, 1, &opt, &m), NTPU_OK);
    cr_assert_not_null(m->net->res, "%s on %s is not resident", spec, device);
    const int dense = m->net->res->dense;
    if (twice)
        *twice = m->net->res->rewrite_input;
    ntpu_model_free(m);
    ntpu_close(d);
    return dense;
}

TestSuite(net_resident);

Test(net_resident, stride_padding_both_pools_and_a_partial_micro_batch)
{
    compare("ref", "ref:noconv=1", "conv4k3p1,relu,maxpool2,conv9k3s2p1,relu,avgpool2,fc5", 1, 12, 12, 13, 3, 1);
}

Test(net_resident, more_channels_than_n_and_fcs_after_a_flatten)
{
    compare("ref", "ref:noconv=1", "conv10k5p2,relu,avgpool2,conv12k2,flatten,fc16,relu,fc3", 3, 10, 10, 20, 3, 1);
}

Test(net_resident, floor_mode_pools_without_relu_and_a_stride_larger_than_the_kernel)
{
    compare("ref", "ref:noconv=1", "conv3k2s3,maxpool2,conv5k1,avgpool3,fc4", 2, 19, 17, 9, 3, 1);
}

Test(net_resident, arrays_of_4_and_2_against_the_host_path_of_8)
{
    compare("ref:n=4", "ref:noconv=1", "conv6k3p1,relu,maxpool2,conv5k3,relu,fc7", 2, 9, 9, 11, 3, 1);
    compare("ref:n=2", "ref:noconv=1", "conv3k3s2,relu,avgpool2,fc5,relu,fc3", 3, 11, 11, 10, 2, 1);
}

/* Maps that share UB rows by lifetime: three convs in a row (each gZ over a dead map), then a pooled one. */
Test(net_resident, convs_in_a_row_sharing_rows)
{
    compare("ref", "ref:noconv=1", "conv5k3p1,relu,conv7k3s2p1,relu,conv9k1,relu,maxpool2,fc4", 2, 10, 10, 17, 3, 1);
}

Test(net_resident, a_batch_below_one_micro_batch_and_a_pool_first)
{
    compare("ref", "ref:noconv=1", "maxpool2,conv3k3p2,relu,fc2", 1, 8, 8, 3, 3, 1);
}

/* A UB too small to hold the input map all through a micro-batch: it is spread again (or written again, for
 * a micro-batch that does not spread) for the first conv's dW (odd height, a partial micro-batch). */
Test(net_resident, the_input_written_twice)
{
    const char *spec = "conv6k3p1,relu,maxpool2,conv12k3p1,relu,maxpool2,fc7";
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref:ub=2500", &d), NTPU_OK);
    const ntpu_arch a = net_arch(spec, 1, 13, 12);
    ntpu_model *m = create(d, &a, 13);
    cr_assert_not_null(m->net->res);
    cr_assert(m->net->res->rewrite_input);
    ntpu_model_free(m);
    ntpu_close(d);
    compare("ref:ub=2500", "ref:noconv=1", spec, 1, 13, 12, 13, 3, 1);
}

/* ntpu_matmul uses every memory: the net writes its weights again before its next step. */
Test(net_resident, a_matmul_between_steps)
{
    ntpu_device *dr = NULL, *dh = NULL;
    cr_assert_eq(ntpu_open("ref", &dr), NTPU_OK);
    cr_assert_eq(ntpu_open("ref:noconv=1", &dh), NTPU_OK);
    const ntpu_arch a = net_arch("conv4k3,relu,maxpool2,fc3", 1, 8, 8);
    ntpu_model *mr = create(dr, &a, 8), *mh = create(dh, &a, 8);
    float x[8 * 64], A[64 * 64], B[64 * 64], C[64 * 64];
    uint8_t y[8];
    net_batch(A, 64 * 64, y, 8, 3, 5);
    net_batch(B, 64 * 64, y, 8, 3, 6);
    for (int s = 0; s < 2; s++) {
        net_batch(x, 8 * 64, y, 8, 3, 9 + (uint64_t)s);
        ntpu_step_result rr, rh;
        cr_assert_eq(ntpu_model_train_step(mr, x, y, 8, &rr), NTPU_OK, "%s", ntpu_last_error(dr));
        cr_assert_eq(ntpu_model_train_step(mh, x, y, 8, &rh), NTPU_OK);
        cr_assert_eq(memcmp(&rr.loss, &rh.loss, 4), 0);
        cr_assert_eq(ntpu_matmul(dr, NTPU_DTYPE_BF16, A, B, C, 64, 64, 64), NTPU_OK);
    }
    same_params(mr, mh);
    ntpu_model_free(mr), ntpu_model_free(mh);
    ntpu_close(dr), ntpu_close(dh);
}

static void stays_on_host(const char *device, const char *spec, size_t batch, const char *why)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open(device, &d), NTPU_OK);
    const ntpu_arch a = net_arch(spec, 1, 28, 28);
    ntpu_model *m = create(d, &a, batch);
    cr_assert_eq(ntpu_model_check_resident(m), NTPU_ERR_UNSUPPORTED, "%s on %s", spec, device);
    cr_assert_not_null(strstr(ntpu_last_error(d), why), "%s on %s: %s", spec, device, ntpu_last_error(d));
    ntpu_model_free(m);
    ntpu_close(d);
}

Test(net_resident, what_keeps_a_net_on_the_host_path_is_named)
{
    stays_on_host("ref:noconv=1", "conv4k3,relu,fc3", 8, "no convolution addressing");
    stays_on_host("ref:nopool=1", "conv4k3,relu,fc3", 8, "POOL");
    stays_on_host("ref:novec=1", "conv4k3,relu,fc3", 8, "POOL");
    stays_on_host("ref:notra=1", "conv4k3,relu,fc3", 8, "TRANSPOSE_A");
    stays_on_host("ref:n=16", "conv4k3,relu,fc3", 8, "micro-batch of 8");
    stays_on_host("ref", "conv4k3,maxpool2,relu,fc3", 8, "a relu that does not follow a conv or fc");
    stays_on_host("ref:ub=4096", "conv4k3,relu,fc3", 8, "UB rows for micro-batches of 8");
}

/* The layout of the issue's CNN on device (UB, WB, ACC rows and whether the input map is written twice). */
static ntpu_net_res cnn_layout(const char *device)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open(device, &d), NTPU_OK);
    const ntpu_arch a = net_arch("conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10", 1, 28, 28);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(d, &a, 64, 1, &opt, &m), NTPU_OK);
    ntpu_net_res r = {0};
    char why[160];
    const char *no = ntpu_net_res_layout(m, &r, why, sizeof why);
    fprintf(stderr, "the issue's CNN on %s, micro-batches of 8: UB %zu, WB %zu, ACC %zu rows, input written %s (%s)\n",
            device, r.ub_rows, r.wb_rows, r.acc_rows, r.rewrite_input ? "twice" : "once", no ? no : "fits");
    cr_assert_null(no, "%s", no);
    cr_assert_eq(ntpu_model_check_resident(m), NTPU_OK);
    ntpu_model_free(m);
    ntpu_close(d);
    return r;
}

/* The issue's CNN on MNIST's shape: on the default core (UB 16384 rows) it fits by writing the input map
 * twice a micro-batch, with UB of 32768 once; two steps of batch 64 bit for bit the host path's on each. */
Test(net_resident, the_issues_cnn, .timeout = 600)
{
    const ntpu_net_res small = cnn_layout("ref"), large = cnn_layout("ref:ub=32768");
    cr_assert(small.rewrite_input && !large.rewrite_input);
    cr_assert_lt(small.ub_rows, large.ub_rows);
    const char *spec = "conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10";
    compare("ref", "ref:noconv=1", spec, 1, 28, 28, 64, 2, 0);
    compare("ref:ub=32768", "ref:noconv=1", spec, 1, 28, 28, 64, 2, 0);
}

/* A first conv with one input channel takes its input densely and spreads it on the device, at N = 8, 4
 * and 2, with the input map written once and twice; a first item that is no conv, a conv on three
 * channels, or a UB without room for the dense rows, takes the padded map as before. Bit for bit the host
 * path's either way. */
Test(net_resident, a_dense_input_spread_on_the_device, .timeout = 300)
{
    const char *spec = "conv5k3p1,relu,maxpool2,conv6k3,relu,fc4";
    int twice = 1;
    cr_assert(dense_layout("ref", spec, 1, 10, 9, &twice));
    cr_assert_not(twice);
    const char *small = "conv6k3p1,relu,maxpool2,conv12k3p1,relu,maxpool2,fc7"; /* as the_input_written_twice */
    cr_assert(dense_layout("ref:ub=2500", small, 1, 13, 12, &twice));
    cr_assert(twice);
    cr_assert(dense_layout("ref:n=4", spec, 1, 10, 9, NULL));
    cr_assert(dense_layout("ref:n=2", spec, 1, 10, 9, NULL));
    cr_assert_not(dense_layout("ref", "maxpool2,conv3k3p2,relu,fc2", 1, 8, 8, NULL));
    cr_assert_not(dense_layout("ref", spec, 3, 10, 9, NULL));
    /* 144 rows of dense input: a UB with room for the padded layout (1,928 rows) but not for those takes
     * the padded input, and stays bit for bit the host path's */
    const char *pools = "conv4k3p1,relu,maxpool2,conv9k3s2p1,relu,avgpool2,fc5";
    cr_assert(dense_layout("ref:ub=2072", pools, 1, 12, 12, NULL));
    cr_assert_not(dense_layout("ref:ub=2071", pools, 1, 12, 12, NULL));
    compare("ref:ub=2071", "ref:noconv=1", pools, 1, 12, 12, 13, 2, 1);
    compare("ref", "ref:noconv=1", spec, 1, 10, 9, 21, 3, 1);
    compare("ref:n=4", "ref:noconv=1", spec, 1, 10, 9, 13, 2, 1);
    compare("ref:n=2", "ref:noconv=1", spec, 1, 10, 9, 11, 2, 1);
    compare("ref:pm=0", "ref:noconv=1", spec, 1, 10, 9, 11, 2, 1);
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Step 0: positive subnormals everywhere (they spread: the conv reads them as +0), then -0 in the second
 * micro-batch and a negative subnormal in the third (those go padded); step 1: +Inf in the first
 * micro-batch and -Inf in the second; step 2: a NaN. */
static void special_inputs(float *x, size_t n, int s)
{
    const size_t per_mb = n / 21 * 8; /* batches of 21 - s % 3 samples */
    for (size_t k = 0; s == 0 && k < n; k += 5)
        x[k] = from_bits(0x00200000u + (uint32_t)k);
    if (s == 0) {
        x[per_mb + 3] = -0.0f;
        x[2 * per_mb + 7] = from_bits(0x80300000u);
    } else if (s == 1) {
        x[11] = from_bits(0x7F800000u);
        x[per_mb + 1] = from_bits(0xFF800000u);
    } else
        x[n - 2] = from_bits(0x7FC00001u);
}

Test(net_resident, inputs_that_do_not_spread_go_padded, .timeout = 300)
{
    const char *spec = "conv5k3p1,relu,maxpool2,conv6k3,relu,fc4";
    compare_edited("ref", "ref:noconv=1", spec, 1, 10, 9, 21, 3, 1, special_inputs);
    compare_edited("ref:ub=2500", "ref:noconv=1", "conv6k3p1,relu,maxpool2,conv12k3p1,relu,maxpool2,fc7", 1, 13, 12, 21,
                   3, 1, special_inputs);
    compare_edited("ref:n=4", "ref:noconv=1", spec, 1, 10, 9, 21, 3, 1, special_inputs);
}

/* Which micro-batches spread: every value rounded to bf16 finite, and not -0 nor a negative subnormal. */
Test(net_resident, which_inputs_spread)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    const ntpu_arch a = net_arch("conv2k3,relu,fc2", 1, 4, 4);
    ntpu_model *m = create(d, &a, 16);
    float x[16 * 16];
    uint8_t y[16];
    net_batch(x, 16 * 16, y, 16, 2, 3);
    cr_assert(ntpu_net_spread_ok(m, x, 0, 16));
    const uint32_t bad[] = {0x80000000u, 0x80000001u, 0x807FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFFFFFFFu};
    const uint32_t good[] = {0x00000001u, 0x007FFFFFu, 0x00000000u, 0x80800000u, 0x7F7F0000u};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const float keep = x[8 * 16 + 5];
        x[8 * 16 + 5] = from_bits(bad[k]);
        cr_assert(ntpu_net_spread_ok(m, x, 0, 8), "%08x in another micro-batch", bad[k]);
        cr_assert_not(ntpu_net_spread_ok(m, x, 8, 8), "%08x", bad[k]);
        x[8 * 16 + 5] = keep;
    }
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        x[3] = from_bits(good[k]);
        cr_assert(ntpu_net_spread_ok(m, x, 0, 8), "%08x", good[k]);
    }
    x[3] = 3.4e38f; /* rounds to +Inf in bf16 */
    cr_assert_not(ntpu_net_spread_ok(m, x, 0, 8));
    ntpu_model_free(m);
    ntpu_close(d);
}
