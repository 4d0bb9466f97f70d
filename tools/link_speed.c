/* SPDX-License-Identifier: Apache-2.0 */
/* link_speed: what a frame and a row cost between the library and a device,
 * through the public API only (docs/perf/0032-ref-speed.md, "Per-frame cost").
 *
 *   link_speed [DEV] [PAIRS] [ROW_REPS]
 *
 * Frames: PAIRS times a LOAD_W and an 8-row bf16 MATMUL (the conv nets' weight
 * gradient pattern: two small frames and two status replies), then a fence.
 * Rows: ROW_REPS times 2048 UB rows written and 2048 ACC rows read back (the
 * host optimizer's weights down and gradients up), checked. Prints frames and
 * bytes per CPU second. DEV defaults to "ref". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntpu/ntpu.h"

enum { ROWS = 2048 };

static double cpu_seconds(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

static int fail(ntpu_device *dev, const char *what)
{
    fprintf(stderr, "link_speed: %s: %s\n", what, ntpu_last_error(dev));
    ntpu_close(dev);
    return 1;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "ref";
    long pairs = argc > 2 ? atol(argv[2]) : 1000000, reps = argc > 3 ? atol(argv[3]) : 2000;
    ntpu_device *dev;
    if (ntpu_open(name, &dev) != NTPU_OK)
        return fail(dev, "open");
    ntpu_info info;
    ntpu_get_info(dev, &info);
    const size_t n = info.cols;
    double t0 = cpu_seconds();
    for (long i = 0; i < pairs; i++)
        if (ntpu_load_w(dev, 0, 0) != NTPU_OK || ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 0, 0, 8, 0) != NTPU_OK)
            return fail(dev, "frames");
    if (ntpu_fence(dev) != NTPU_OK)
        return fail(dev, "fence");
    double t1 = cpu_seconds();
    uint16_t *down = malloc(ROWS * n * sizeof *down);
    uint32_t *up = malloc(ROWS * n * sizeof *up);
    if (!down || !up)
        return fail(dev, "out of memory");
    for (size_t i = 0; i < ROWS * n; i++)
        down[i] = (uint16_t)(i * 40503u);
    /* ACC rows the reads return: the same bits every time, so each read can be checked */
    for (size_t i = 0; i < ROWS * n; i++)
        up[i] = (uint32_t)i * 2654435761u;
    if (ntpu_write_rows(dev, NTPU_MEM_ACC, 0, ROWS, up) != NTPU_OK)
        return fail(dev, "write ACC");
    double t2 = cpu_seconds();
    for (long r = 0; r < reps; r++) {
        if (ntpu_write_rows(dev, NTPU_MEM_UB, 0, ROWS, down) != NTPU_OK ||
            ntpu_read_rows(dev, NTPU_MEM_ACC, 0, ROWS, up) != NTPU_OK)
            return fail(dev, "rows");
        if (up[ROWS * n - 1] != (uint32_t)(ROWS * n - 1) * 2654435761u)
            return fail(dev, "rows read back wrong");
    }
    double t3 = cpu_seconds();
    double mb = (double)reps * ROWS * n * (sizeof *down + sizeof *up) / 1e6;
    printf("%s: %ld frames in %.3f CPU s: %.0f frames/s\n", name, 2 * pairs, t1 - t0, 2 * pairs / (t1 - t0));
    printf("%s: %.1f MB of rows in %.3f CPU s: %.0f MB/s\n", name, mb, t3 - t2, mb / (t3 - t2));
    free(down);
    free(up);
    ntpu_close(dev);
    return 0;
}
