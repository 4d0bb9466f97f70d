/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench (g): the 784-256-10 MLP's training steps (batch 64 in shards of 32, Adam on the host, random
 * batches) on one device and on two of the same kind, each device in its own thread (ntpu/parallel.h).
 * Both runs end with the same weights, bit for bit (checked): the speedup is the same work done faster.
 * One step is run first and not counted: it records the stored programs. */
#define _DEFAULT_SOURCE
#include "bench_scaling.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ntpu/nn.h"
#include "ntpu/parallel.h"

#define SCALING_STEPS 24
#define SCALING_BATCH 64
#define SCALING_SHARD 32
static const unsigned sizes[] = {784, 256, 10};

static double cpu_now(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

/* Step k's batch: inputs in [0, 1), labels below 10, the same on every run. */
static void batch_of(uint64_t k, float *x, uint8_t *y)
{
    uint64_t s = 0x5CA1E000u + k;
    for (size_t i = 0; i < SCALING_BATCH * sizes[0]; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(s >> 40) / 16777216.0f;
    }
    for (size_t i = 0; i < SCALING_BATCH; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        y[i] = (uint8_t)((s >> 33) % sizes[2]);
    }
}

static uint64_t digest(ntpu_model *m)
{
    ntpu_model_view v;
    ntpu_model_get_view(m, &v);
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t l = 0; l < v.n_layers; l++) {
        const unsigned char *w = (const unsigned char *)v.weights[l], *b = (const unsigned char *)v.biases[l];
        for (size_t i = 0; i < (size_t)v.sizes[l] * v.sizes[l + 1] * 4; i++)
            h = (h ^ w[i]) * 0x100000001B3ull;
        for (size_t i = 0; i < (size_t)v.sizes[l + 1] * 4; i++)
            h = (h ^ b[i]) * 0x100000001B3ull;
    }
    return h;
}

/* The counted steps, with the devices' counters and link bytes around them. */
static ntpu_status run_steps(ntpu_parallel *p, ntpu_device **dev, scaling_row *row, float *x, uint8_t *y)
{
    ntpu_link_stats l0[SCALING_MAX_DEVICES], l1;
    ntpu_counters c;
    ntpu_status st = NTPU_OK;
    for (size_t d = 0; d < row->devices && st == NTPU_OK; d++) {
        st = ntpu_read_counters(dev[d], &c, 1);
        ntpu_get_link_stats(dev[d], &l0[d]);
    }
    const double t0 = now_s(), c0 = cpu_now();
    for (uint64_t k = 1; k <= SCALING_STEPS && st == NTPU_OK; k++) {
        batch_of(k, x, y);
        st = ntpu_parallel_train_step(p, x, y, SCALING_BATCH, NULL);
    }
    row->secs = now_s() - t0;
    row->cpu_secs = cpu_now() - c0;
    for (size_t d = 0; d < row->devices && st == NTPU_OK; d++) {
        st = ntpu_read_counters(dev[d], &c, 0);
        ntpu_get_link_stats(dev[d], &l1);
        row->cycles[d] = c.cycles / SCALING_STEPS;
        row->link_bytes[d] =
            (double)(l1.tx_bytes - l0[d].tx_bytes + l1.rx_bytes - l0[d].rx_bytes) / (double)SCALING_STEPS;
    }
    return st;
}

int bench_scaling(const char *device, size_t devices, scaling_row *row)
{
    memset(row, 0, sizeof *row);
    snprintf(row->device, sizeof row->device, "%s", device);
    row->devices = devices;
    row->steps = SCALING_STEPS;
    row->batch = SCALING_BATCH;
    row->shard = SCALING_SHARD;
    ntpu_device *dev[SCALING_MAX_DEVICES] = {NULL};
    ntpu_model *m = NULL;
    ntpu_parallel *p = NULL;
    float *x = malloc(SCALING_BATCH * sizes[0] * sizeof *x);
    uint8_t y[SCALING_BATCH];
    int rc = 1;
    if (!x) {
        fail("out of memory");
        goto out;
    }
    for (size_t d = 0; d < devices; d++)
        if (!(dev[d] = open_device(device)))
            goto out;
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    if (ntpu_model_create(dev[0], sizes, 3, SCALING_BATCH, 1, &opt, &m) != NTPU_OK ||
        ntpu_parallel_create(m, dev + 1, devices - 1, SCALING_SHARD, &p) != NTPU_OK) {
        fail("bench (g) on %s: %s", device, ntpu_last_error(dev[0]));
        goto out;
    }
    batch_of(0, x, y); /* the uncounted first step */
    if (ntpu_parallel_train_step(p, x, y, SCALING_BATCH, NULL) != NTPU_OK || run_steps(p, dev, row, x, y) != NTPU_OK) {
        fail("bench (g) on %s: %s", device, ntpu_last_error(dev[0]));
        goto out;
    }
    row->digest = digest(m);
    rc = 0;
out:
    ntpu_parallel_free(p);
    ntpu_model_free(m);
    for (size_t d = 0; d < devices; d++)
        ntpu_close(dev[d]);
    free(x);
    return rc;
}

void scaling_print_table(const scaling_row *rows, int count)
{
    if (!count)
        return;
    printf("\n(g) data-parallel scaling: the 784-256-10 MLP, %zu steps of batch %zu in shards of %zu, Adam on the "
           "host\n",
           rows[0].steps, rows[0].batch, rows[0].shard);
    printf("%-10s %7s %8s %8s %8s %8s  %s\n", "device", "devices", "wall s", "CPU s", "steps/s", "speedup",
           "each device a step: cycles, link bytes");
    for (int i = 0; i < count; i++) {
        const scaling_row *r = &rows[i];
        printf("%-10s %7zu %8.2f %8.2f %8.2f %7.2fx ", r->device, r->devices, r->secs, r->cpu_secs,
               (double)r->steps / r->secs, rows[0].secs / r->secs);
        for (size_t d = 0; d < r->devices; d++)
            printf(" %" PRIu64 ", %.0f;", r->cycles[d], r->link_bytes[d]);
        printf("\n");
    }
    int same = 1;
    for (int i = 1; i < count; i++)
        same &= rows[i].digest == rows[0].digest;
    printf("weights after the steps: %s\n", same ? "identical on 1 and 2 devices" : "DIFFERENT");
}

void scaling_print_json(const scaling_row *rows, int count)
{
    printf("[");
    for (int i = 0; i < count; i++) {
        const scaling_row *r = &rows[i];
        printf("%s{\"device\":", i ? "," : "");
        json_str(stdout, r->device);
        printf(",\"devices\":%zu,\"steps\":%zu,\"batch\":%zu,\"shard\":%zu,\"seconds\":%.3f,\"cpu_seconds\":%.3f,"
               "\"speedup\":%.3f,\"digest\":\"%016" PRIx64 "\",\"per_device\":[",
               r->devices, r->steps, r->batch, r->shard, r->secs, r->cpu_secs, rows[0].secs / r->secs, r->digest);
        for (size_t d = 0; d < r->devices; d++)
            printf("%s{\"cycles_per_step\":%" PRIu64 ",\"link_bytes_per_step\":%.0f}", d ? "," : "", r->cycles[d],
                   r->link_bytes[d]);
        printf("]}");
    }
    printf("]");
}
