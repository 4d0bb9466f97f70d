/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench (f): the link's throughput each way, in the device's own time. */
#ifndef NTPU_BENCH_LINK_H
#define NTPU_BENCH_LINK_H

#include <stdint.h>

#include "cli.h"

typedef struct link_row {
    char device[128];
    uint64_t up_bytes, down_bytes;   /* link bytes host -> device while writing, device -> host while reading */
    uint64_t up_cycles, down_cycles; /* device cycles each took, from COUNTERS */
    double clock_hz;
    uint64_t rows; /* weight-buffer rows written and read back */
    int correct;   /* what came back is what went out */
} link_row;

/* The weight buffer (up to 64 KiB of it) written, then read back, on dev: 0, or 1 after printing the error. */
int bench_link(ntpu_device *dev, const char *device, link_row *row);
void link_print_table(const link_row *rows, int count, int width);
void link_print_json(const link_row *rows, int count);

#endif
