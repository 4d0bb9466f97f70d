/* SPDX-License-Identifier: Apache-2.0 */
/* The device optimizer (ntpu_optim_config.device, OPTIM of protocols 1.3 and 1.4):
 * a model whose SGD, momentum, Adam or AdamW runs on the device must end every
 * step with exactly the bits of the same model whose optimizer runs on the host
 * (weights, biases, momentum or moments, losses, logits), on the golden model at N = 8 and N = 2 and on the
 * RTL (vsim); the values here stay in the normal range, where the two agree
 * (docs/isa.md, OPTIM). Devices or optimizers that cannot do it fall back to the
 * host and say why; checkpoints carry the device's weights and state. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ntpu/nn.h"

#define NN_SEED 0x9E3779B97F4A7C15u
#include "nn_compare.h"

enum { STEPS = 4, IN = 20, HID = 12, CLASSES = 5, BATCH = 10 };

static const unsigned sizes[] = {IN, HID, CLASSES};

/* Weights, biases, optimizer state and step of two models equal bit for bit (after a fetch). */
static void assert_same_model(ntpu_model *a, ntpu_model *b)
{
    cr_assert_eq(ntpu_model_fetch(a), NTPU_OK);
    cr_assert_eq(ntpu_model_fetch(b), NTPU_OK);
    assert_same_view(a, b, 0);
}

static ntpu_optim_config config(ntpu_optimizer kind, int device)
{
    ntpu_optim_config o = ntpu_optim_defaults(kind);
    o.lr = 0.05f;
    o.weight_decay = 0.01f;
    o.schedule = NTPU_LR_STEP; /* lr changes after 2 steps: the device's constants are rewritten */
    o.step_size = 2;
    o.gamma = 0.5f;
    o.device = device;
    return o;
}

/* The reference (host optimizer on `ref_spec`) against the device optimizer on
 * `spec`: STEPS steps, losses, then weights and state, then logits. */
static void compare(const char *ref_spec, const char *spec, ntpu_optimizer kind)
{
    ntpu_device *dr, *dd;
    cr_assert_eq(ntpu_open(ref_spec, &dr), NTPU_OK);
    cr_assert_eq(ntpu_open(spec, &dd), NTPU_OK);
    ntpu_optim_config oh = config(kind, 0), od = config(kind, 1);
    ntpu_model *mh, *md;
    cr_assert_eq(ntpu_model_create(dr, sizes, 3, BATCH, 7, &oh, &mh), NTPU_OK, "%s", ntpu_last_error(dr));
    cr_assert_eq(ntpu_model_create(dd, sizes, 3, BATCH, 7, &od, &md), NTPU_OK, "%s", ntpu_last_error(dd));
    cr_assert_eq(ntpu_model_check_device_optimizer(mh), NTPU_ERR_UNSUPPORTED);
    cr_assert(strstr(ntpu_last_error(dr), "not asked"), "not asked for: %s", ntpu_last_error(dr));
    cr_assert_eq(ntpu_model_check_device_optimizer(md), NTPU_OK, "%s: %s", spec, ntpu_last_error(dd));
    ntpu_model_view v;
    ntpu_model_get_view(md, &v);
    static float w0[IN * HID];
    memcpy(w0, v.weights[0], sizeof w0);
    static float x[BATCH * IN], logits_h[BATCH * CLASSES], logits_d[BATCH * CLASSES];
    static uint8_t y[BATCH];
    for (int s = 0; s < STEPS; s++) {
        size_t batch = s == STEPS - 1 ? BATCH - 3 : BATCH; /* a short last batch: other padding */
        fill_data(x, y, batch, IN, CLASSES);
        ntpu_step_result rh, rd;
        cr_assert_eq(ntpu_model_train_step(mh, x, y, batch, &rh), NTPU_OK, "%s", ntpu_last_error(dr));
        cr_assert_eq(ntpu_model_train_step(md, x, y, batch, &rd), NTPU_OK, "%s", ntpu_last_error(dd));
        uint32_t lh, ld;
        memcpy(&lh, &rh.loss, 4);
        memcpy(&ld, &rd.loss, 4);
        cr_assert_eq(lh, ld, "step %d: loss %.9g (host optimizer) vs %.9g (device)", s, (double)rh.loss,
                     (double)rd.loss);
        cr_assert_eq(rh.correct, rd.correct);
    }
    assert_same_model(mh, md);
    fill_data(x, y, BATCH, IN, CLASSES);
    cr_assert_eq(ntpu_model_predict(mh, x, BATCH, logits_h), NTPU_OK);
    cr_assert_eq(ntpu_model_predict(md, x, BATCH, logits_d), NTPU_OK);
    assert_same_floats(logits_h, logits_d, BATCH * CLASSES, "logits", 0);
    /* the weights moved: the test is not comparing two untouched models */
    cr_assert_neq(memcmp(v.weights[0], w0, sizeof w0), 0, "training changed nothing");
    ntpu_model_free(mh);
    ntpu_model_free(md);
    ntpu_close(dr);
    ntpu_close(dd);
}

Test(nn_devopt, sgd_on_ref_equals_host)
{
    compare("ref", "ref", NTPU_OPT_SGD);
}

Test(nn_devopt, momentum_on_ref_equals_host)
{
    compare("ref", "ref", NTPU_OPT_MOMENTUM);
}

Test(nn_devopt, momentum_at_n2_equals_host)
{
    compare("ref:n=2", "ref:n=2", NTPU_OPT_MOMENTUM);
}

Test(nn_devopt, momentum_on_vsim_equals_host_on_ref)
{
    compare("ref", "vsim", NTPU_OPT_MOMENTUM);
}

Test(nn_devopt, sgd_on_vsim_equals_host_on_ref)
{
    compare("ref", "vsim", NTPU_OPT_SGD);
}

Test(nn_devopt, adam_on_ref_equals_host)
{
    compare("ref", "ref", NTPU_OPT_ADAM);
}

Test(nn_devopt, adamw_on_ref_equals_host)
{
    compare("ref", "ref", NTPU_OPT_ADAMW);
}

Test(nn_devopt, adam_at_n2_equals_host)
{
    compare("ref:n=2", "ref:n=2", NTPU_OPT_ADAM);
}

Test(nn_devopt, adamw_at_n2_equals_host)
{
    compare("ref:n=2", "ref:n=2", NTPU_OPT_ADAMW);
}

Test(nn_devopt, adam_on_vsim_equals_host_on_ref)
{
    compare("ref", "vsim", NTPU_OPT_ADAM);
}

Test(nn_devopt, adamw_on_vsim_equals_host_on_ref)
{
    compare("ref", "vsim", NTPU_OPT_ADAMW);
}

/* Asked for where it cannot run: the host optimizer, and the reason. */
static void expect_fallback(const char *spec, ntpu_optimizer kind, const char *reason_part)
{
    ntpu_device *dev;
    cr_assert_eq(ntpu_open(spec, &dev), NTPU_OK);
    ntpu_optim_config o = config(kind, 1);
    ntpu_model *m;
    cr_assert_eq(ntpu_model_create(dev, sizes, 3, BATCH, 7, &o, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_ERR_UNSUPPORTED, "%s", spec);
    const char *why = ntpu_last_error(dev);
    cr_assert(strstr(why, reason_part), "%s: reason '%s' lacks '%s'", spec, why, reason_part);
    static float x[BATCH * IN];
    static uint8_t y[BATCH];
    fill_data(x, y, BATCH, IN, CLASSES);
    cr_assert_eq(ntpu_model_train_step(m, x, y, BATCH, NULL), NTPU_OK, "%s", ntpu_last_error(dev));
    ntpu_model_free(m);
    ntpu_close(dev);
}

Test(nn_devopt, falls_back_without_optim)
{
    expect_fallback("ref:novec=1", NTPU_OPT_MOMENTUM, "no OPTIM");
}

Test(nn_devopt, falls_back_for_adam_without_os)
{
    expect_fallback("ref:os=0", NTPU_OPT_ADAM, "ADAM");
}

Test(nn_devopt, falls_back_for_adamw_without_optim)
{
    expect_fallback("ref:novec=1", NTPU_OPT_ADAMW, "no OPTIM");
}

/* Adam's moments of 20-12-5 at N = 8 take 134 OS rows. */
Test(nn_devopt, falls_back_when_os_is_too_small)
{
    expect_fallback("ref:os=133", NTPU_OPT_ADAM, "OS rows");
}

Test(nn_devopt, adam_fits_os_exactly)
{
    ntpu_device *dev;
    cr_assert_eq(ntpu_open("ref:os=134", &dev), NTPU_OK);
    ntpu_optim_config o = config(NTPU_OPT_ADAM, 1);
    ntpu_model *m;
    cr_assert_eq(ntpu_model_create(dev, sizes, 3, BATCH, 7, &o, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_OK, "%s", ntpu_last_error(dev));
    ntpu_model_free(m);
    ntpu_close(dev);
}

/* Resident needs 118 ACC rows at N = 8, batch 10; with the momentum on the device 212. */
Test(nn_devopt, falls_back_when_acc_is_too_small)
{
    expect_fallback("ref:acc=150", NTPU_OPT_MOMENTUM, "ACC rows");
}

/* A checkpoint of a device-optimizer model holds the device's weights and
 * momentum (or moments): loaded into a host-optimizer model it trains on in step. */
static void checkpoint_holds_device_state(ntpu_optimizer kind)
{
    ntpu_device *dr, *dd, *dl; /* one model per device: a model owns its device's memories */
    cr_assert_eq(ntpu_open("ref", &dr), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &dd), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &dl), NTPU_OK);
    ntpu_optim_config oh = config(kind, 0), od = config(kind, 1);
    ntpu_model *mh, *md;
    cr_assert_eq(ntpu_model_create(dr, sizes, 3, BATCH, 3, &oh, &mh), NTPU_OK);
    cr_assert_eq(ntpu_model_create(dd, sizes, 3, BATCH, 3, &od, &md), NTPU_OK);
    static float x[BATCH * IN];
    static uint8_t y[BATCH];
    for (int s = 0; s < 2; s++) {
        fill_data(x, y, BATCH, IN, CLASSES);
        cr_assert_eq(ntpu_model_train_step(mh, x, y, BATCH, NULL), NTPU_OK);
        cr_assert_eq(ntpu_model_train_step(md, x, y, BATCH, NULL), NTPU_OK);
    }
    char path[] = "/tmp/ntpu_devopt_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(ntpu_model_save(md, path, NULL, 0, NULL), NTPU_OK, "%s", ntpu_last_error(dd));
    ntpu_model *ml;
    cr_assert_eq(ntpu_model_load(dl, path, BATCH, &ml), NTPU_OK, "%s", ntpu_last_error(dl));
    unlink(path);
    char state[sizeof path + 8];
    snprintf(state, sizeof state, "%s.state", path); /* the sidecar with the optimizer's state */
    cr_assert_eq(unlink(state), 0);
    assert_same_model(mh, ml);
    fill_data(x, y, BATCH, IN, CLASSES);
    cr_assert_eq(ntpu_model_train_step(mh, x, y, BATCH, NULL), NTPU_OK);
    cr_assert_eq(ntpu_model_train_step(ml, x, y, BATCH, NULL), NTPU_OK);
    cr_assert_eq(ntpu_model_train_step(md, x, y, BATCH, NULL), NTPU_OK);
    assert_same_model(mh, ml);
    assert_same_model(mh, md);
    ntpu_model_free(ml);
    ntpu_model_free(mh);
    ntpu_model_free(md);
    ntpu_close(dr);
    ntpu_close(dd);
    ntpu_close(dl);
}

Test(nn_devopt, checkpoint_holds_device_momentum)
{
    checkpoint_holds_device_state(NTPU_OPT_MOMENTUM);
}

Test(nn_devopt, checkpoint_holds_device_moments)
{
    checkpoint_holds_device_state(NTPU_OPT_ADAMW);
}

/* The optimizer moves between host and device mid-run without changing a bit. */
static void switching_places_mid_run(ntpu_optimizer kind)
{
    ntpu_device *dr, *dd;
    cr_assert_eq(ntpu_open("ref", &dr), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &dd), NTPU_OK);
    ntpu_optim_config o = config(kind, 0);
    ntpu_model *mh, *ms;
    cr_assert_eq(ntpu_model_create(dr, sizes, 3, BATCH, 9, &o, &mh), NTPU_OK);
    cr_assert_eq(ntpu_model_create(dd, sizes, 3, BATCH, 9, &o, &ms), NTPU_OK);
    static float x[BATCH * IN];
    static uint8_t y[BATCH];
    const int on[] = {0, 1, 1, 0, 1};
    for (int s = 0; s < 5; s++) {
        cr_assert_eq(ntpu_model_set_device_optimizer(ms, on[s]), NTPU_OK, "%s", ntpu_last_error(dd));
        cr_assert_eq(ntpu_model_check_device_optimizer(ms) == NTPU_OK, on[s]);
        fill_data(x, y, BATCH, IN, CLASSES);
        cr_assert_eq(ntpu_model_train_step(mh, x, y, BATCH, NULL), NTPU_OK);
        cr_assert_eq(ntpu_model_train_step(ms, x, y, BATCH, NULL), NTPU_OK);
    }
    assert_same_model(mh, ms);
    ntpu_model_free(mh);
    ntpu_model_free(ms);
    ntpu_close(dr);
    ntpu_close(dd);
}

Test(nn_devopt, switching_places_mid_run_momentum)
{
    switching_places_mid_run(NTPU_OPT_MOMENTUM);
}

Test(nn_devopt, switching_places_mid_run_adam)
{
    switching_places_mid_run(NTPU_OPT_ADAM);
}
