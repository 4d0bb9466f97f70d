/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench (e): one training step of the CNN (CNN_SPEC, batch 64, Adam, random data) resident on
 * the device, with the optimizer on the host and on the device. Per model: a first step with the device's
 * counters read (and cleared) between the items' commands (net_profile.h), for the table of items; then
 * the measured step, its counters cleared just before and read just after, as (b)'s MLP step. Every
 * device and both optimizers must give the same bits (the loss and every parameter after the step). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cnn.h"

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

double cnn_payload_bytes(void)
{
    return (double)CNN_BATCH * 784 * 2 + CNN_BATCH + 8;
}

/* The measured step: counters cleared before, read after (which also sends what the step left queued);
 * the COUNTERS exchanges taken off the link figures. */
static ntpu_status measured_step(ntpu_model *m, ntpu_device *dev, const float *x, const uint8_t *y, cnn_row *row)
{
    ntpu_link_stats l0, l1;
    ntpu_step_result r = {0};
    ntpu_status st = ntpu_read_counters(dev, &row->c, 1);
    ntpu_get_link_stats(dev, &l0);
    double t = now_s();
    if (st == NTPU_OK)
        st = ntpu_model_train_step(m, x, y, CNN_BATCH, &r);
    row->secs = now_s() - t;
    if (st == NTPU_OK)
        st = ntpu_read_counters(dev, &row->c, 0);
    ntpu_get_link_stats(dev, &l1);
    row->tx = l1.tx_bytes - l0.tx_bytes - (NTPU_FRAME_OVERHEAD + NTPU_LEN_COUNTERS);
    row->rx = l1.rx_bytes - l0.rx_bytes - (NTPU_FRAME_OVERHEAD + 1 + NTPU_COUNTERS_BYTES);
    row->frames = l1.tx_frames - l0.tx_frames + l1.rx_frames - l0.rx_frames - 2;
    row->util = ntpu_counters_utilization(dev, &row->c);
    row->loss = r.loss;
    return st;
}

/* The profiled step: the counters between items onto row->prof, what follows the last item (the host
 * optimizer's reads and writes) onto its host row. */
static ntpu_status profiled_step(ntpu_model *m, ntpu_device *dev, const float *x, const uint8_t *y, cnn_row *row)
{
    ntpu_counters c;
    ntpu_status st = ntpu_net_set_profile(m, &row->prof);
    if (st == NTPU_OK)
        st = ntpu_read_counters(dev, &c, 1);
    if (st == NTPU_OK)
        st = ntpu_model_train_step(m, x, y, CNN_BATCH, NULL);
    if (st == NTPU_OK && (st = ntpu_read_counters(dev, &c, 1)) == NTPU_OK) {
        row->prof.host.cycles += c.cycles, row->prof.host.macs += c.macs;
        row->prof.host.array_busy += c.array_busy, row->prof.host.stall_link += c.stall_link;
    }
    ntpu_net_set_profile(m, NULL);
    return st;
}

static uint64_t digest(const ntpu_model *m, float loss)
{
    uint64_t h = fnv(0xCBF29CE484222325ull, &loss, sizeof loss);
    const float *w, *b;
    size_t nw, nb;
    for (size_t i = 0; i < ntpu_model_arch(m)->n; i++)
        if (ntpu_net_item_params(m, i, &w, &nw, &b, &nb) == 0)
            h = fnv(fnv(h, w, nw * sizeof *w), b, nb * sizeof *b);
    return h;
}

/* The model of the row on dev, or NULL with row->skip saying why it cannot run (or after printing an error). */
static ntpu_model *cnn_model(ntpu_device *dev, int devopt, cnn_row *row, int *err)
{
    char why[160] = "";
    *err = 1;
    if (ntpu_arch_parse(CNN_SPEC, 1, 28, 28, &row->arch, why, sizeof why) != NTPU_OK) {
        fail("bench: %s: %s", CNN_SPEC, why);
        return NULL;
    }
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    opt.device = devopt;
    ntpu_model *m = NULL;
    if (ntpu_model_create_arch(dev, &row->arch, CNN_BATCH, 0, &opt, &m) != NTPU_OK) {
        fail("bench: the CNN on %s: %s", row->device, ntpu_last_error(dev));
        return NULL;
    }
    *err = 0;
    if (ntpu_model_check_resident(m) == NTPU_OK && (!devopt || ntpu_model_check_device_optimizer(m) == NTPU_OK))
        return m;
    snprintf(row->skip, sizeof row->skip, "%s", ntpu_last_error(dev));
    ntpu_model_free(m);
    return NULL;
}

int bench_cnn(ntpu_device *dev, const char *device, int devopt, cnn_row *row)
{
    ntpu_info info;
    ntpu_get_info(dev, &info);
    memset(row, 0, sizeof *row);
    snprintf(row->device, sizeof row->device, "%s", device);
    row->n = info.rows;
    row->devopt = devopt;
    int err;
    ntpu_model *m = cnn_model(dev, devopt, row, &err);
    if (!m)
        return err;
    float *x = malloc(CNN_BATCH * 784 * sizeof *x);
    uint8_t y[CNN_BATCH];
    if (!x) {
        ntpu_model_free(m);
        return fail("out of memory");
    }
    uint64_t seed = 23;
    for (size_t i = 0; i < CNN_BATCH * 784; i++)
        x[i] = (float)((double)(mix(&seed) >> 11) / 9007199254740992.0);
    for (size_t i = 0; i < CNN_BATCH; i++)
        y[i] = (uint8_t)(mix(&seed) % 10);
    ntpu_status st = profiled_step(m, dev, x, y, row);
    if (st == NTPU_OK)
        st = measured_step(m, dev, x, y, row);
    if (st == NTPU_OK)
        st = ntpu_model_fetch(m);
    if (st == NTPU_OK)
        row->digest = digest(m, row->loss);
    else
        fail("bench: the CNN step on %s: %s", device, ntpu_last_error(dev));
    ntpu_model_free(m);
    free(x);
    return st != NTPU_OK;
}

int cnn_agree(const cnn_row *rows, int count)
{
    const cnn_row *first = NULL;
    int agree = -1;
    for (int i = 0; i < count; i++) {
        if (rows[i].skip[0])
            continue;
        if (first)
            agree = agree != 0 && rows[i].digest == first->digest;
        else
            first = &rows[i];
    }
    return agree;
}
