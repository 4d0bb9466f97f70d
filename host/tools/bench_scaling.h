/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench (g): data-parallel scaling, the same training steps on 1 and 2 devices (bench_scaling.c). */
#ifndef NTPU_BENCH_SCALING_H
#define NTPU_BENCH_SCALING_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define SCALING_MAX_DEVICES 2

/* The steps on `devices` copies of one device. */
typedef struct scaling_row {
    char device[128];
    size_t devices, steps, batch, shard;
    double secs, cpu_secs;                  /* wall and process CPU seconds of the steps */
    double link_bytes[SCALING_MAX_DEVICES]; /* each device's link bytes (both ways) a step */
    uint64_t cycles[SCALING_MAX_DEVICES];   /* each device's cycles a step */
    uint64_t digest;                        /* every weight after the steps */
} scaling_row;

/* The MLP's steps on `devices` (1..SCALING_MAX_DEVICES) devices opened from `device`: 0, or 1 after printing
 * why. */
int bench_scaling(const char *device, size_t devices, scaling_row *row);
void scaling_print_table(const scaling_row *rows, int count);
void scaling_print_json(const scaling_row *rows, int count);

#endif
