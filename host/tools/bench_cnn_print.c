/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench (e), the CNN step (bench_cnn.c): its JSON and its tables. */
#include <inttypes.h>
#include <string.h>

#include "bench_cnn.h"

/* Item l as the arch spec writes it. */
static const char *item_name(const ntpu_layer *l, char *buf, size_t len)
{
    switch (l->kind) {
    case NTPU_LAYER_CONV:
        snprintf(buf, len, "conv%uk%u", l->out, l->k);
        if (l->stride != 1)
            snprintf(buf + strlen(buf), len - strlen(buf), "s%u", l->stride);
        if (l->pad)
            snprintf(buf + strlen(buf), len - strlen(buf), "p%u", l->pad);
        break;
    case NTPU_LAYER_RELU: snprintf(buf, len, "relu"); break;
    case NTPU_LAYER_MAXPOOL: snprintf(buf, len, "maxpool%u", l->k); break;
    case NTPU_LAYER_AVGPOOL: snprintf(buf, len, "avgpool%u", l->k); break;
    case NTPU_LAYER_FLATTEN: snprintf(buf, len, "flatten"); break;
    case NTPU_LAYER_FC: snprintf(buf, len, "fc%u", l->out); break;
    }
    return buf;
}

/* MACs / (N^2 x cycles) of one counter delta. */
static double util(const cnn_row *r, const ntpu_counters *c)
{
    return c->cycles ? (double)c->macs / ((double)r->n * r->n * (double)c->cycles) : 0.0;
}

static void json_counters(const char *key, const cnn_row *r, const ntpu_counters *c)
{
    printf("\"%s\":{\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64 ",\"array_busy\":%" PRIu64 ",\"stall_link\":%" PRIu64
           ",\"utilization\":%.6f}",
           key, c->cycles, c->macs, c->array_busy, c->stall_link, util(r, c));
}

static void json_row(const cnn_row *r)
{
    char name[64];
    printf("{\"device\":");
    json_str(stdout, r->device);
    printf(",\"array\":%u,\"device_optimizer\":%s", r->n, r->devopt ? "true" : "false");
    if (r->skip[0]) {
        printf(",\"skipped\":");
        json_str(stdout, r->skip);
        printf("}");
        return;
    }
    const uint64_t bytes = r->tx + r->rx;
    printf(",\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64 ",\"array_busy\":%" PRIu64
           ",\"utilization\":%.6f,\"seconds\":%.6f,"
           "\"link_tx_bytes\":%" PRIu64 ",\"link_rx_bytes\":%" PRIu64 ",\"link_bytes\":%" PRIu64
           ",\"link_frames\":%" PRIu64 ",\"payload_ratio\":%.4f,\"budget_ratio\":%.4f,\"loss\":%.9g,\"items\":[",
           r->c.cycles, r->c.macs, r->c.array_busy, r->util, r->secs, r->tx, r->rx, bytes, r->frames,
           (double)bytes / cnn_payload_bytes(), (double)bytes / (1.1 * cnn_payload_bytes()), (double)r->loss);
    for (size_t i = 0; i < r->arch.n; i++) {
        printf("%s{\"item\":%zu,\"name\":\"%s\",", i ? "," : "", i, item_name(&r->arch.item[i], name, sizeof name));
        json_counters("forward", r, &r->prof.fwd[i]);
        printf(",");
        json_counters("backward", r, &r->prof.bwd[i]);
        printf("}");
    }
    printf("],");
    json_counters("optimizer", r, &r->prof.opt);
    printf(",");
    json_counters("host_io", r, &r->prof.host);
    printf("}");
}

void cnn_print_json(const cnn_row *rows, int count, int agree)
{
    printf("{\"arch\":\"%s\",\"input\":[1,28,28],\"batch\":%d,\"optimizer\":\"adam\",\"payload_bytes\":%.1f,"
           "\"budget_bytes\":%.1f,\"agree\":%s,\"runs\":[",
           CNN_SPEC, CNN_BATCH, cnn_payload_bytes(), 1.1 * cnn_payload_bytes(),
           agree < 0 ? "null"
           : agree   ? "true"
                     : "false");
    for (int i = 0; i < count; i++) {
        printf("%s", i ? "," : "");
        json_row(&rows[i]);
    }
    printf("]}");
}

static void print_items(const cnn_row *r, int w)
{
    char name[64], b[2][32];
    for (size_t i = 0; i < r->arch.n; i++) {
        const ntpu_counters *f = &r->prof.fwd[i], *g = &r->prof.bwd[i];
        if (!f->cycles && !g->cycles)
            continue;
        printf("%-*s %-6s %3zu %-12s %14s %6.1f%% %14s %6.1f%%\n", w, r->device, r->devopt ? "device" : "host", i,
               item_name(&r->arch.item[i], name, sizeof name), grouped(f->cycles, b[0], sizeof b[0]),
               100.0 * util(r, f), grouped(g->cycles, b[1], sizeof b[1]), 100.0 * util(r, g));
    }
    printf("%-*s %-6s %3s %-12s %14s %7s %14s\n", w, r->device, r->devopt ? "device" : "host", "-", "optimizer", "", "",
           grouped(r->prof.opt.cycles, b[0], sizeof b[0]));
    printf("%-*s %-6s %3s %-12s %14s\n", w, r->device, r->devopt ? "device" : "host", "-", "host I/O",
           grouped(r->prof.host.cycles, b[0], sizeof b[0]));
}

void cnn_print_table(const cnn_row *rows, int count, int agree, int w)
{
    char b[7][32];
    printf("\n(e) training step: CNN %s, batch %d, Adam, resident on the device (protocol 1.5),\n"
           "    the optimizer on the host and on the device; payload = batch %s + labels %d + loss/metrics 8 B\n\n",
           CNN_SPEC, CNN_BATCH, grouped((uint64_t)CNN_BATCH * 784 * 2, b[0], sizeof b[0]), CNN_BATCH);
    printf("%-*s %-6s %-6s %14s %14s %7s %9s %10s %10s %9s %12s %9s  %s\n", w, "device", "array", "optim", "cycles",
           "MACs", "util", "wall s", "link tx", "link rx", "frames", "link B/step", "/payload", "check");
    for (int i = 0; i < count; i++) {
        const cnn_row *r = &rows[i];
        snprintf(b[0], sizeof b[0], "%ux%u", r->n, r->n);
        if (r->skip[0]) {
            printf("%-*s %-6s %-6s not run: %s\n", w, r->device, b[0], r->devopt ? "device" : "host", r->skip);
            continue;
        }
        printf("%-*s %-6s %-6s %14s %14s %6.1f%% %9.3f %10s %10s %9s %12s %8.1fx  %s\n", w, r->device, b[0],
               r->devopt ? "device" : "host", grouped(r->c.cycles, b[1], sizeof b[1]),
               grouped(r->c.macs, b[2], sizeof b[2]), 100.0 * r->util, r->secs, bytes_str(r->tx, b[3], sizeof b[3]),
               bytes_str(r->rx, b[4], sizeof b[4]), grouped(r->frames, b[5], sizeof b[5]),
               grouped(r->tx + r->rx, b[6], sizeof b[6]), (double)(r->tx + r->rx) / cnn_payload_bytes(),
               agree < 0 ? "-"
               : agree   ? "all equal"
                         : "DIFFER");
    }
    printf("\n    per item, from the step before (the counters read and cleared between the items' commands; a\n"
           "    pool that its conv runs band by band, a fused relu and the spread of a dense input count with\n"
           "    the conv; host I/O: the input written, the logits read and their gradient written, the host\n"
           "    optimizer's reads and writes, dW and db zeroed at a step's start; the device optimizer's\n"
           "    update zeroes them for the next step)\n\n");
    printf("%-*s %-6s %3s %-12s %14s %7s %14s %7s\n", w, "device", "optim", "#", "item", "fwd cycles", "util",
           "bwd cycles", "util");
    for (int i = 0; i < count; i++)
        if (!rows[i].skip[0])
            print_items(&rows[i], w);
}
