/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench's (e): one training step of the CNN, resident on the device (bench_cnn.c). */
#ifndef NTPU_BENCH_CNN_H
#define NTPU_BENCH_CNN_H

#include "cli.h"
#include "nn/net_profile.h"

#define CNN_SPEC "conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10"
#define CNN_BATCH 64

/* One device's step, with the optimizer on the host or the device. */
typedef struct cnn_row {
    char device[128];
    unsigned n;
    int devopt;
    ntpu_counters c;         /* the measured step */
    double util, secs;       /* its utilization and wall seconds */
    uint64_t tx, rx, frames; /* link bytes and frames (sent + received) of the measured step */
    float loss;              /* of the measured step */
    uint64_t digest;         /* the loss and every parameter after the measured step */
    ntpu_net_profile prof;   /* the step before it, with the counters read between items */
    ntpu_arch arch;          /* for the items' names */
    char skip[160];          /* why the step did not run (""); e.g. no resident layout or device optimizer */
} cnn_row;

/* The row's step on dev (named device), host optimizer or device optimizer: 0, or 1 after printing why. */
int bench_cnn(ntpu_device *dev, const char *device, int devopt, cnn_row *row);

/* The bytes the acceptance's ratio divides by: the bf16 batch, one label byte a sample, and the loss and
 * correct count (4 + 4 bytes). */
double cnn_payload_bytes(void);

/* 1 when every row that ran has the first's digest, 0 when one differs, -1 when fewer than two ran. */
int cnn_agree(const cnn_row *rows, int count);

void cnn_print_json(const cnn_row *rows, int count, int agree);
void cnn_print_table(const cnn_row *rows, int count, int agree, int width);

#endif
