/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel training (ntpu/parallel.h): the same shards give the same weights and losses on 1, 2 and 3
 * devices, with a batch that leaves a short last shard and one that has fewer shards than devices; one shard
 * of the whole batch is the plain step; shards of another size give other bits; an exchange that fails
 * fails the step and leaves the weights; the misuses are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ntpu/parallel.h"

enum { IN = 20, HID = 12, CLS = 5, B = 10, STEPS = 3 };
static const unsigned sizes[] = {IN, HID, CLS};

static void batch(int s, float *x, uint8_t *y)
{
    /* magnitudes 2^-6 .. 2^6: the gradients' sums round, so their order shows in the bits */
    for (int i = 0; i < B * IN; i++)
        x[i] = ldexpf((float)((i * 7 + s * 13) % 17 - 8) / 17.0f, (i * 5) % 13 - 6);
    for (int i = 0; i < B; i++)
        y[i] = (uint8_t)((i * 3 + s) % CLS);
}

static ntpu_model *model(ntpu_device *d)
{
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create(d, sizes, 3, B, 11, &opt, &m), NTPU_OK, "%s", ntpu_last_error(d));
    return m;
}

/* STEPS steps (the last of 7 samples) on n devices (the first ref, then vsim, ref, ...), shards of `shard`:
 * the weights after them into w, the losses into loss. */
static void train(size_t n, size_t shard, float *w, float *loss)
{
    ntpu_device *dev[3] = {NULL};
    for (size_t d = 0; d < n; d++)
        cr_assert_eq(ntpu_open(d % 2 ? "vsim" : "ref", &dev[d]), NTPU_OK);
    ntpu_model *m = model(dev[0]);
    ntpu_parallel *p = NULL;
    cr_assert_eq(ntpu_parallel_create(m, dev + 1, n - 1, shard, &p), NTPU_OK, "%s", ntpu_last_error(dev[0]));
    for (int s = 0; s < STEPS; s++) {
        float x[B * IN];
        uint8_t y[B];
        batch(s, x, y);
        ntpu_step_result r;
        cr_assert_eq(ntpu_parallel_train_step(p, x, y, s == STEPS - 1 ? 7 : B, &r), NTPU_OK, "%s",
                     ntpu_last_error(dev[0]));
        loss[s] = r.loss;
    }
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    memcpy(w, v.weights[0], sizeof(float) * IN * HID);
    memcpy(w + IN * HID, v.weights[1], sizeof(float) * HID * CLS);
    ntpu_parallel_free(p);
    ntpu_model_free(m);
    for (size_t d = 0; d < n; d++)
        ntpu_close(dev[d]);
}

Test(parallel, any_number_of_devices_gives_the_same_bits)
{
    float w1[IN * HID + HID * CLS], w[IN * HID + HID * CLS], l1[STEPS], l[STEPS];
    train(1, 3, w1, l1);
    for (size_t n = 2; n <= 3; n++) {
        train(n, 3, w, l);
        cr_assert(!memcmp(w1, w, sizeof w), "weights differ on %zu devices", n);
        cr_assert(!memcmp(l1, l, sizeof l), "losses differ on %zu devices", n);
    }
    train(3, 6, w, l); /* 2 shards (and a batch of 7: 6 + 1) on 3 devices: one idles */
    train(1, 6, w1, l1);
    cr_assert(!memcmp(w1, w, sizeof w) && !memcmp(l1, l, sizeof l));
    train(1, 3, w, l);
    cr_assert(memcmp(w1, w, sizeof w), "shards of 3 and of 6 should sum in other orders");
}

Test(parallel, one_whole_shard_is_the_plain_step)
{
    float w[IN * HID + HID * CLS], l[STEPS];
    train(2, B, w, l);
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_model *m = model(d);
    for (int s = 0; s < STEPS; s++) {
        float x[B * IN];
        uint8_t y[B];
        batch(s, x, y);
        ntpu_step_result r;
        cr_assert_eq(ntpu_model_train_step(m, x, y, s == STEPS - 1 ? 7 : B, &r), NTPU_OK);
        cr_assert_eq(memcmp(&r.loss, &l[s], 4), 0, "step %d: loss %a, data parallel %a", s, r.loss, l[s]);
    }
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    cr_assert(!memcmp(v.weights[0], w, sizeof(float) * IN * HID));
    cr_assert(!memcmp(v.weights[1], w + IN * HID, sizeof(float) * HID * CLS));
    ntpu_model_free(m);
    ntpu_close(d);
}

static size_t calls, seen_stride, seen_shards;

static int failing_exchange(void *ctx, float *records, size_t stride, size_t n_shards, char *why, size_t len)
{
    (void)ctx, (void)records;
    calls++;
    seen_stride = stride;
    seen_shards = n_shards;
    snprintf(why, len, "rank 1 went away");
    return 1;
}

Test(parallel, a_failed_exchange_fails_the_step_and_changes_nothing)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_model *m = model(d);
    ntpu_parallel *p = NULL;
    cr_assert_eq(ntpu_parallel_create(m, NULL, 0, 4, &p), NTPU_OK);
    cr_assert_eq(ntpu_parallel_set_peers(p, 1, 2, NULL, NULL), NTPU_ERR_INVALID_ARG);             /* no exchange */
    cr_assert_eq(ntpu_parallel_set_peers(p, 2, 2, failing_exchange, NULL), NTPU_ERR_INVALID_ARG); /* past the end */
    cr_assert_eq(ntpu_parallel_set_peers(p, 0, 2, failing_exchange, NULL), NTPU_OK);
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    float before[IN * HID];
    memcpy(before, v.weights[0], sizeof before);
    float x[B * IN];
    uint8_t y[B];
    batch(0, x, y);
    cr_assert_eq(ntpu_parallel_train_step(p, x, y, B, NULL), NTPU_ERR_IO);
    cr_assert(strstr(ntpu_last_error(d), "rank 1 went away"), "%s", ntpu_last_error(d));
    cr_assert_eq(calls, 1);
    cr_assert_eq(seen_shards, 3); /* 4 + 4 + 2 */
    cr_assert_eq(seen_stride, ntpu_parallel_record_floats(p));
    cr_assert_eq(seen_stride, IN * HID + HID + HID * CLS + CLS + 2);
    cr_assert(!memcmp(before, v.weights[0], sizeof before), "a failed step changed the weights");
    cr_assert_eq(*v.step, 0);
    ntpu_parallel_free(p);
    ntpu_model_free(m);
    ntpu_close(d);
}

Test(parallel, misuse_is_refused)
{
    ntpu_device *d = NULL, *v = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &v), NTPU_OK);
    ntpu_model *m = model(d);
    ntpu_parallel *p = (ntpu_parallel *)1;
    cr_assert_eq(ntpu_parallel_create(m, &v, 1, 0, &p), NTPU_ERR_INVALID_ARG);
    cr_assert_null(p);
    cr_assert_eq(ntpu_parallel_create(m, &v, 1, B + 1, &p), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_parallel_create(m, &d, 1, 2, &p), NTPU_ERR_INVALID_ARG); /* the model's own device again */
    cr_assert(strstr(ntpu_last_error(d), "device 1 is device 0 again"), "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_parallel_create(NULL, &v, 1, 2, &p), NTPU_ERR_INVALID_ARG);
    ntpu_model_free(m);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    opt.device = 1;
    cr_assert_eq(ntpu_model_create(d, sizes, 3, B, 1, &opt, &m), NTPU_OK);
    cr_assert_eq(ntpu_parallel_create(m, &v, 1, B, &p), NTPU_ERR_UNSUPPORTED);
    cr_assert(strstr(ntpu_last_error(d), "device optimizer"), "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_parallel_create(m, NULL, 0, B, &p), NTPU_OK); /* one device, whole shards: the plain step */
    float x[B * IN];
    uint8_t y[B];
    batch(0, x, y);
    cr_assert_eq(ntpu_parallel_train_step(p, x, y, B + 1, NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_parallel_train_step(p, x, y, B, NULL), NTPU_OK);
    ntpu_parallel_free(p);
    ntpu_model_free(m);
    ntpu_close(d);
    ntpu_close(v);
}
