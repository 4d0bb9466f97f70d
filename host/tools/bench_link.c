/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench (f): bytes on the link over device time (cycles / clock), each way, for one large WRITE_MEM
 * and one large READ_MEM of the weight buffer. On a board that is the link's own rate (the UART's, the
 * pico-ice's USB and SPI); on the in-process models, whose link is a function call, it is how fast the
 * core takes and gives bytes. */
#include "bench_link.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/protocol.h"

#define LINK_BENCH_BYTES 65536u

/* Device cycles and link bytes of the work since the counters were last cleared; clears them. */
static ntpu_status lap(ntpu_device *dev, ntpu_link_stats *l, uint64_t *cycles, uint64_t *tx, uint64_t *rx)
{
    ntpu_counters c;
    ntpu_link_stats now;
    ntpu_status st = ntpu_read_counters(dev, &c, 1);
    ntpu_get_link_stats(dev, &now);
    *cycles = c.cycles;
    /* Less the COUNTERS exchange itself. */
    *tx = now.tx_bytes - l->tx_bytes - (NTPU_FRAME_OVERHEAD + NTPU_LEN_COUNTERS);
    *rx = now.rx_bytes - l->rx_bytes - (NTPU_FRAME_OVERHEAD + 1 + NTPU_COUNTERS_BYTES);
    *l = now;
    return st;
}

int bench_link(ntpu_device *dev, const char *device, link_row *row)
{
    ntpu_info info;
    ntpu_get_info(dev, &info);
    memset(row, 0, sizeof *row);
    snprintf(row->device, sizeof row->device, "%s", device);
    row->clock_hz = info.clock_hz;
    size_t row_bytes = (size_t)info.cols * 2, rows = LINK_BENCH_BYTES / row_bytes;
    rows = rows < info.wb_rows ? rows : info.wb_rows;
    row->rows = rows;
    uint16_t *w = malloc(rows * row_bytes), *r = malloc(rows * row_bytes);
    if (!w || !r) {
        free(w);
        free(r);
        return fail("out of memory");
    }
    uint64_t seed = 7;
    for (size_t i = 0; i < rows * info.cols; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (uint16_t)(seed >> 48);
    }
    ntpu_counters c;
    ntpu_link_stats l;
    uint64_t unused;
    ntpu_status st = ntpu_read_counters(dev, &c, 1);
    ntpu_get_link_stats(dev, &l);
    if (st == NTPU_OK)
        st = ntpu_write_rows(dev, NTPU_MEM_WB, 0, (uint32_t)rows, w);
    if (st == NTPU_OK)
        st = lap(dev, &l, &row->up_cycles, &row->up_bytes, &unused);
    if (st == NTPU_OK)
        st = ntpu_read_rows(dev, NTPU_MEM_WB, 0, (uint32_t)rows, r);
    if (st == NTPU_OK)
        st = lap(dev, &l, &row->down_cycles, &unused, &row->down_bytes);
    row->correct = st == NTPU_OK && memcmp(w, r, rows * row_bytes) == 0;
    free(w);
    free(r);
    if (st != NTPU_OK)
        return fail("bench: link throughput on %s: %s", device, ntpu_last_error(dev));
    return 0;
}

static double per_s(uint64_t bytes, uint64_t cycles, double clock_hz)
{
    return cycles ? bytes / (cycles / clock_hz) : 0.0;
}

void link_print_table(const link_row *rows, int count, int width)
{
    if (count == 0)
        return;
    printf("\n(f) link throughput: the weight buffer (64 KiB or all of it) written, then read back; link bytes\n"
           "    (frames included) over device time, cycles / clock\n\n");
    printf("%-*s %7s %10s %12s %10s %10s %12s %10s  %s\n", width, "device", "clock", "to device", "cycles", "kB/s",
           "to host", "cycles", "kB/s", "check");
    for (int i = 0; i < count; i++) {
        const link_row *r = &rows[i];
        char clock[16], up[16], down[16];
        /* A model with no clock (ref and vsim report 0 Hz) has cycles but no time. */
        snprintf(clock, sizeof clock, r->clock_hz > 0 ? "%.0f MHz" : "-", r->clock_hz / 1e6);
        snprintf(up, sizeof up, r->clock_hz > 0 ? "%.1f" : "-", per_s(r->up_bytes, r->up_cycles, r->clock_hz) / 1e3);
        snprintf(down, sizeof down, r->clock_hz > 0 ? "%.1f" : "-",
                 per_s(r->down_bytes, r->down_cycles, r->clock_hz) / 1e3);
        printf("%-*s %7s %10" PRIu64 " %12" PRIu64 " %10s %10" PRIu64 " %12" PRIu64 " %10s  %s\n", width, r->device,
               clock, r->up_bytes, r->up_cycles, up, r->down_bytes, r->down_cycles, down, r->correct ? "ok" : "WRONG");
    }
}

void link_print_json(const link_row *rows, int count)
{
    printf("[");
    for (int i = 0; i < count; i++) {
        const link_row *r = &rows[i];
        printf("%s{\"device\":", i ? "," : "");
        json_str(stdout, r->device);
        printf(",\"clock_hz\":%.0f,\"rows\":%" PRIu64 ",\"to_device_bytes\":%" PRIu64 ",\"to_device_cycles\":%" PRIu64
               ",\"to_device_bytes_per_s\":%.1f,\"to_host_bytes\":%" PRIu64 ",\"to_host_cycles\":%" PRIu64
               ",\"to_host_bytes_per_s\":%.1f,\"correct\":%s}",
               r->clock_hz, r->rows, r->up_bytes, r->up_cycles, per_s(r->up_bytes, r->up_cycles, r->clock_hz),
               r->down_bytes, r->down_cycles, per_s(r->down_bytes, r->down_cycles, r->clock_hz),
               r->correct ? "true" : "false");
    }
    printf("]");
}
