/* SPDX-License-Identifier: Apache-2.0 */
/* The device optimizer of resident nets (host/src/nn/net_devopt.c) against the host optimizer on the same
 * device: for SGD with weight decay, momentum, Adam and AdamW, on archs with stride, padding, both pools, an
 * fc after a flatten and batches that are not a multiple of 8, at N = 8, 4 and 2, every loss, weight, bias
 * and optimizer slot is the same bits after every step (read back with ntpu_model_fetch), and so are the
 * predictions; checkpoints of both are the same bytes, and one resumed with the device optimizer goes on as
 * the run that was not interrupted; a matmul and a second net between steps, and int8 quantization, see the
 * device's weights; what keeps the optimizer on the host is named. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/net_resident.h"
#include "net_fixture.h"
#include "ntpu/nn.h"

static ntpu_optim_config settings(ntpu_optimizer kind, int device)
{
    ntpu_optim_config opt = ntpu_optim_defaults(kind);
    opt.lr = kind == NTPU_OPT_ADAM || kind == NTPU_OPT_ADAMW ? 0.01f : 0.05f;
    opt.weight_decay = kind == NTPU_OPT_MOMENTUM ? 0.0f : 0.02f;
    opt.device = device;
    return opt;
}

static ntpu_model *create(ntpu_device *dev, const ntpu_arch *a, size_t batch, ntpu_optimizer kind, int device)
{
    const ntpu_optim_config opt = settings(kind, device);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, a, batch, 7, &opt, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_model_check_resident(m), NTPU_OK, "%s", ntpu_last_error(dev));
    if (device)
        cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_OK, "%s", ntpu_last_error(dev));
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

/* The parameters and optimizer slots of d (fetched from its device first) and h (fetched by the caller,
 * if it has the device optimizer too). */
static void same_state(ntpu_model *d, const ntpu_model *h)
{
    cr_assert_eq(ntpu_model_fetch(d), NTPU_OK, "%s", ntpu_last_error(d->dev));
    cr_assert_eq(d->step, h->step);
    for (size_t i = 0; i < d->arch.n; i++) {
        const ntpu_net_param *p = &d->param[i], *q = &h->param[i];
        same_floats(p->w, q->w, p->nw, "weights", i);
        same_floats(p->b, q->b, p->nb, "biases", i);
        same_floats(p->ws1, q->ws1, p->nw, "first slot", i);
        same_floats(p->ws2, q->ws2, p->nw, "second slot", i);
        same_floats(p->bs1, q->bs1, p->nb, "first slot of the bias", i);
        same_floats(p->bs2, q->bs2, p->nb, "second slot of the bias", i);
    }
}

typedef struct run {
    const char *device, *spec;
    unsigned c, h, w;
    size_t batch;
    int steps;
    void (*edit)(float *x, size_t n, int s); /* changes step s's inputs (n floats), or NULL */
} run;

/* One step of both models on batch s of the run (batch, batch - 1, batch - 2, ...): the same loss and hits. */
static void step_both(const run *r, ntpu_model *d, ntpu_model *h, int s, float *x, uint8_t *y, size_t classes)
{
    const size_t b = r->batch - (size_t)s % 3, in = (size_t)r->c * r->h * r->w;
    net_batch(x, b * in, y, b, classes, 100 + (uint64_t)s);
    if (r->edit)
        r->edit(x, b * in, s);
    ntpu_step_result rd, rh;
    cr_assert_eq(ntpu_model_train_step(d, x, y, b, &rd), NTPU_OK, "%s", ntpu_last_error(d->dev));
    cr_assert_eq(ntpu_model_train_step(h, x, y, b, &rh), NTPU_OK, "%s", ntpu_last_error(h->dev));
    cr_assert_eq(memcmp(&rd.loss, &rh.loss, 4), 0, "%s step %d: loss %a vs %a", r->spec, s, (double)rd.loss,
                 (double)rh.loss);
    cr_assert_eq(rd.correct, rh.correct);
}

/* Trains the run with kind on the device and on the host, comparing every step's state (fetched every other
 * step, so that steps also follow steps the host did not see) and the predictions. */
static void compare(const run *r, ntpu_optimizer kind)
{
    ntpu_device *dd = NULL, *dh = NULL;
    cr_assert_eq(ntpu_open(r->device, &dd), NTPU_OK, "%s", ntpu_last_error(dd));
    cr_assert_eq(ntpu_open(r->device, &dh), NTPU_OK);
    const ntpu_arch a = net_arch(r->spec, r->c, r->h, r->w);
    ntpu_model *d = create(dd, &a, r->batch, kind, 1), *h = create(dh, &a, r->batch, kind, 0);
    const size_t in = (size_t)r->c * r->h * r->w, classes = a.item[a.n - 1].out;
    float *x = malloc(r->batch * in * sizeof *x), *ld = malloc(r->batch * classes * 8), *lh = ld + r->batch * classes;
    uint8_t *y = malloc(r->batch);
    cr_assert(x && ld && y);
    for (int s = 0; s < r->steps; s++) {
        step_both(r, d, h, s, x, y, classes);
        if (s % 2 == 1 || s + 1 == r->steps)
            same_state(d, h);
    }
    net_batch(x, r->batch * in, y, r->batch, classes, 99);
    cr_assert_eq(ntpu_model_predict(d, x, r->batch, ld), NTPU_OK, "%s", ntpu_last_error(dd));
    cr_assert_eq(ntpu_model_predict(h, x, r->batch, lh), NTPU_OK);
    cr_assert_eq(memcmp(ld, lh, r->batch * classes * 4), 0, "%s: predictions differ", r->spec);
    free(x), free(ld), free(y);
    ntpu_model_free(d), ntpu_model_free(h);
    ntpu_close(dd), ntpu_close(dh);
}

static const run pools = {"ref", "conv4k3p1,relu,maxpool2,conv9k3s2p1,relu,avgpool2,fc5", 1, 12, 12, 13, 4, NULL};
static const run flat = {"ref", "conv10k5p2,relu,avgpool2,conv12k2,flatten,fc16,relu,fc3", 3, 10, 10, 20, 4, NULL};

TestSuite(net_devopt);

Test(net_devopt, sgd_with_weight_decay)
{
    compare(&pools, NTPU_OPT_SGD);
    compare(&flat, NTPU_OPT_SGD);
}

Test(net_devopt, momentum)
{
    compare(&pools, NTPU_OPT_MOMENTUM);
    compare(&flat, NTPU_OPT_MOMENTUM);
}

Test(net_devopt, adam)
{
    compare(&pools, NTPU_OPT_ADAM);
    compare(&flat, NTPU_OPT_ADAM);
}

Test(net_devopt, adamw)
{
    compare(&pools, NTPU_OPT_ADAMW);
    compare(&flat, NTPU_OPT_ADAMW);
}

Test(net_devopt, arrays_of_4_and_2)
{
    run r = pools;
    r.device = "ref:n=4";
    compare(&r, NTPU_OPT_ADAM);
    compare(&r, NTPU_OPT_MOMENTUM);
    r = flat;
    r.device = "ref:n=2";
    r.steps = 2;
    compare(&r, NTPU_OPT_ADAMW);
}

/* Saves m to path (and path.state), returning the model file's bytes and length. */
static char *saved(ntpu_model *m, const char *path, size_t *len, char **state, size_t *slen)
{
    cr_assert_eq(ntpu_model_save(m, path, NULL, 0, NULL), NTPU_OK, "%s", ntpu_last_error(m->dev));
    char sp[256];
    snprintf(sp, sizeof sp, "%s.state", path);
    const char *paths[2] = {path, sp};
    char *out[2];
    size_t lens[2];
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(paths[k], "rb");
        cr_assert_not_null(f, "%s", paths[k]);
        fseek(f, 0, SEEK_END);
        lens[k] = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        out[k] = malloc(lens[k]);
        cr_assert_eq(fread(out[k], 1, lens[k], f), lens[k]);
        fclose(f);
    }
    *len = lens[0], *state = out[1], *slen = lens[1];
    return out[0];
}

static void same_files(ntpu_model *d, ntpu_model *h, const char *tag)
{
    char pd[128], ph[128];
    snprintf(pd, sizeof pd, "/tmp/ntpu_devopt_%d_%s_d.st", (int)getpid(), tag);
    snprintf(ph, sizeof ph, "/tmp/ntpu_devopt_%d_%s_h.st", (int)getpid(), tag);
    size_t ld, lh, sd, sh;
    char *std, *sth, *fd = saved(d, pd, &ld, &std, &sd), *fh = saved(h, ph, &lh, &sth, &sh);
    cr_assert(ld == lh && memcmp(fd, fh, ld) == 0, "%s: the model files differ", tag);
    cr_assert(sd == sh && memcmp(std, sth, sd) == 0, "%s: the state files differ", tag);
    free(fd), free(fh), free(std), free(sth);
}

/* Checkpoints of the device and host optimizers are the same bytes; a net loaded from the device's and put
 * back on it (ntpu_model_set_device_optimizer, as --resume does) goes on bit for bit as the host's run, and
 * so it does when its optimizer moves to the host again. */
Test(net_devopt, checkpoints_and_resume)
{
    run r = pools;
    ntpu_device *dd = NULL, *dh = NULL;
    cr_assert_eq(ntpu_open("ref", &dd), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &dh), NTPU_OK);
    const ntpu_arch a = net_arch(r.spec, r.c, r.h, r.w);
    ntpu_model *d = create(dd, &a, r.batch, NTPU_OPT_ADAM, 1), *h = create(dh, &a, r.batch, NTPU_OPT_ADAM, 0);
    const size_t in = (size_t)r.c * r.h * r.w, classes = a.item[a.n - 1].out;
    float x[13 * 144];
    uint8_t y[13];
    for (int s = 0; s < 3; s++)
        step_both(&r, d, h, s, x, y, classes);
    same_files(d, h, "a");
    char path[128];
    snprintf(path, sizeof path, "/tmp/ntpu_devopt_%d_a_d.st", (int)getpid());
    ntpu_model *back = NULL;
    cr_assert_eq(ntpu_model_load(dd, path, r.batch, &back), NTPU_OK, "%s", ntpu_last_error(dd));
    cr_assert_eq(ntpu_model_set_device_optimizer(back, 1), NTPU_OK, "%s", ntpu_last_error(dd));
    cr_assert_eq(ntpu_model_check_device_optimizer(back), NTPU_OK, "%s", ntpu_last_error(dd));
    ntpu_model_free(d);
    for (int s = 3; s < 6; s++)
        step_both(&r, back, h, s, x, y, classes);
    same_state(back, h);
    same_files(back, h, "b");
    cr_assert_eq(ntpu_model_set_device_optimizer(back, 0), NTPU_OK, "%s", ntpu_last_error(dd));
    cr_assert_eq(ntpu_model_check_device_optimizer(back), NTPU_ERR_UNSUPPORTED); /* back on the host */
    step_both(&r, back, h, 6, x, y, classes);
    same_state(back, h);
    (void)in;
    char p[160];
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 4; j++) {
            snprintf(p, sizeof p, "/tmp/ntpu_devopt_%d_%s_%s.st%s", (int)getpid(), k ? "b" : "a", j % 2 ? "h" : "d",
                     j / 2 ? ".state" : "");
            unlink(p);
        }
    ntpu_model_free(back), ntpu_model_free(h);
    ntpu_close(dd), ntpu_close(dh);
}

/* Two nets with the device optimizer and ntpu_matmul on one device, in turn between steps, and the int8
 * copy of one of them: each net's state is the one it reaches alone (the device's memories change hands,
 * ntpu_claim_memories fetching the weights first). */
Test(net_devopt, sharing_a_device_and_int8)
{
    run r = pools;
    const ntpu_arch a = net_arch(r.spec, r.c, r.h, r.w);
    const size_t classes = a.item[a.n - 1].out;
    ntpu_device *ds = NULL, *dh = NULL;
    cr_assert_eq(ntpu_open("ref", &ds), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &dh), NTPU_OK);
    ntpu_model *d[2] = {create(ds, &a, r.batch, NTPU_OPT_MOMENTUM, 1), create(ds, &a, r.batch, NTPU_OPT_ADAM, 1)};
    ntpu_model *h[2] = {create(dh, &a, r.batch, NTPU_OPT_MOMENTUM, 0), create(dh, &a, r.batch, NTPU_OPT_ADAM, 0)};
    float x[13 * 144], ma[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, mc[9];
    uint8_t y[13];
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 2; k++) {
            step_both(&r, d[k], h[k], s + 10 * k, x, y, classes);
            cr_assert_eq(ntpu_matmul(ds, NTPU_DTYPE_BF16, ma, ma, mc, 3, 3, 3), NTPU_OK);
        }
    for (int k = 0; k < 2; k++)
        same_state(d[k], h[k]);
    ntpu_qmodel *qd = NULL, *qh = NULL;
    net_batch(x, 8 * 144, y, 8, classes, 5);
    cr_assert_eq(ntpu_model_train_step(d[0], x, y, 8, NULL), NTPU_OK);
    cr_assert_eq(ntpu_model_train_step(h[0], x, y, 8, NULL), NTPU_OK);
    cr_assert_eq(ntpu_qmodel_create(d[0], x, 8, &qd), NTPU_OK, "%s", ntpu_last_error(ds));
    cr_assert_eq(ntpu_qmodel_create(h[0], x, 8, &qh), NTPU_OK, "%s", ntpu_last_error(dh));
    float lq[2][8 * 5];
    cr_assert_eq(ntpu_qmodel_predict(qd, x, 8, lq[0]), NTPU_OK, "%s", ntpu_last_error(ds));
    cr_assert_eq(ntpu_qmodel_predict(qh, x, 8, lq[1]), NTPU_OK);
    cr_assert_eq(memcmp(lq[0], lq[1], sizeof lq[0]), 0, "the int8 copies differ");
    step_both(&r, d[0], h[0], 7, x, y, classes); /* the net after its int8 copy used the device */
    same_state(d[0], h[0]);
    ntpu_qmodel_free(qd), ntpu_qmodel_free(qh);
    for (int k = 0; k < 2; k++)
        ntpu_model_free(d[k]), ntpu_model_free(h[k]);
    ntpu_close(ds), ntpu_close(dh);
}

/* Frames a step of d takes on its link. */
static uint64_t step_frames(ntpu_model *d, const run *r, int s, float *x, uint8_t *y, size_t classes)
{
    ntpu_link_stats a, b;
    ntpu_get_link_stats(d->dev, &a);
    const size_t in = (size_t)r->c * r->h * r->w;
    net_batch(x, r->batch * in, y, r->batch, classes, 200 + (uint64_t)s);
    cr_assert_eq(ntpu_model_train_step(d, x, y, r->batch, NULL), NTPU_OK, "%s", ntpu_last_error(d->dev));
    cr_assert_eq(ntpu_fence(d->dev), NTPU_OK);
    ntpu_get_link_stats(d->dev, &b);
    return b.tx_frames - a.tx_frames;
}

/* The zeroing of dW and db, the micro-batch passes and the optimizer's update as stored programs (PM) give
 * the bits of the same commands sent one by one (no PM), in a fraction of the frames: batches of 3
 * micro-batches, with the input spread once and (the CNN on the default UB) twice. A step sends
 * 8 frames a micro-batch (its dense input in 4 (the CNN) or 1, RUN, the logits read, their gradient, RUN)
 * and 3 more at most (RUN zero, on a step that follows no update; the optimizer's constants, RUN update). */
Test(net_devopt, stored_programs, .timeout = 300)
{
    const run runs[2] = {{"ref", "conv8k3p1,relu,maxpool2,conv8k3p1,relu,avgpool2,fc4", 1, 8, 8, 24, 3, NULL},
                         {"ref", "conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10", 1, 28, 28, 24, 2, NULL}};
    for (int k = 0; k < 2; k++) {
        const run *r = &runs[k];
        ntpu_device *dp = NULL, *dn = NULL;
        cr_assert_eq(ntpu_open("ref", &dp), NTPU_OK);
        cr_assert_eq(ntpu_open("ref:pm=0", &dn), NTPU_OK);
        const ntpu_arch a = net_arch(r->spec, r->c, r->h, r->w);
        const size_t in = (size_t)r->c * r->h * r->w, classes = a.item[a.n - 1].out;
        ntpu_model *p = create(dp, &a, r->batch, NTPU_OPT_ADAM, 1), *n = create(dn, &a, r->batch, NTPU_OPT_ADAM, 1);
        cr_assert_eq(p->net->res->rewrite_input, k, "%s: the input written %s", r->spec, k ? "twice" : "once");
        float *x = malloc(r->batch * in * sizeof *x);
        uint8_t y[24];
        uint64_t fp = 0, fn = 0;
        for (int s = 0; s < r->steps; s++) {
            fp = step_frames(p, r, s, x, y, classes);
            fn = step_frames(n, r, s, x, y, classes);
        }
        cr_assert_eq(p->net->res->prog, 1, "%s: the programs are not in use", r->spec);
        cr_assert(p->net->res->dense, "%s: no dense input", r->spec);
        const uint64_t most = 3 * (k ? 8 : 5) + 3 + 1; /* and step_frames' FENCE */
        cr_assert_leq(fp, most, "%s: %llu frames a step, more than %llu", r->spec, (unsigned long long)fp,
                      (unsigned long long)most);
        cr_assert_lt(fp * 2, fn, "%s: %llu frames a step with programs, %llu without", r->spec, (unsigned long long)fp,
                     (unsigned long long)fn);
        cr_assert_eq(ntpu_model_fetch(n), NTPU_OK);
        same_state(p, n);
        free(x);
        ntpu_model_free(p), ntpu_model_free(n);
        ntpu_close(dp), ntpu_close(dn);
    }
}

/* Step 1: a -0 in the last micro-batch (it crosses padded, its passes as single commands, after
 * micro-batches that run the programs); step 3: an Inf in the first. */
static void special_inputs(float *x, size_t n, int s)
{
    if (s == 1)
        x[n - 3] = -0.0f;
    if (s == 3)
        x[5] = 1.0f / 0.0f;
}

/* Micro-batches whose input does not spread among ones that do: the device optimizer's update program,
 * which also zeroes dW and db for the next step, gives the host optimizer's bits. */
Test(net_devopt, inputs_that_go_padded_among_programs)
{
    run r = pools;
    r.edit = special_inputs;
    compare(&r, NTPU_OPT_ADAM);
    const run twice = {"ref:ub=2500", "conv6k3p1,relu,maxpool2,conv12k3p1,relu,maxpool2,fc7", 1, 13, 12, 13, 4,
                       special_inputs}; /* the input map made twice (test_net_resident.c) */
    compare(&twice, NTPU_OPT_ADAM);
}

static void host_optimizer(const char *device, const char *spec, ntpu_optimizer kind, const char *why)
{
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open(device, &dev), NTPU_OK, "%s", device);
    const ntpu_arch a = net_arch(spec, 1, 12, 12);
    const ntpu_optim_config opt = settings(kind, 1);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create_arch(dev, &a, 8, 7, &opt, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_model_check_device_optimizer(m), NTPU_ERR_UNSUPPORTED, "%s on %s", spec, device);
    cr_assert_not_null(strstr(ntpu_last_error(dev), why), "%s on %s: %s", spec, device, ntpu_last_error(dev));
    float x[8 * 144];
    uint8_t y[8];
    net_batch(x, 8 * 144, y, 8, 3, 1);
    cr_assert_eq(ntpu_model_train_step(m, x, y, 8, NULL), NTPU_OK, "%s", ntpu_last_error(dev));
    ntpu_model_free(m);
    ntpu_close(dev);
}

Test(net_devopt, what_keeps_the_optimizer_on_the_host_is_named)
{
    host_optimizer("ref:os=0", "conv4k3,relu,fc3", NTPU_OPT_ADAM, "ADAM");
    host_optimizer("ref:novec=1", "conv4k3,relu,fc3", NTPU_OPT_SGD, "host path");
    host_optimizer("ref:acc=2500", "conv4k3,relu,fc3", NTPU_OPT_MOMENTUM, "with its optimizer state the net needs");
}
