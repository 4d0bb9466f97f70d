/* SPDX-License-Identifier: Apache-2.0 */
/* The low-level API: one call per device command (docs/isa.md). Arguments are
 * checked against the ID block first, so nothing malformed is ever sent. */
#include <string.h>

#include "internal.h"

ntpu_status ntpu_check_range(ntpu_device *dev, unsigned mem, uint32_t addr, uint32_t rows)
{
    uint32_t size = ntpu_mem_rows(dev, mem);
    if (size == 0)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                         "memory id %u is not UB (0), WB (1), ACC (2), PM (3, with PROGRAM) or OS (4, with ADAM)", mem);
    if ((uint64_t)addr + rows > size)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "rows %u..%llu are past the end of %s (%u rows)", (unsigned)addr,
                         (unsigned long long)addr + rows - 1,
                         mem == NTPU_MEM_UB   ? "UB"
                         : mem == NTPU_MEM_WB ? "WB"
                         : mem == NTPU_MEM_PM ? "PM"
                         : mem == NTPU_MEM_OS ? "OS"
                                              : "ACC",
                         (unsigned)size);
    return NTPU_OK;
}

ntpu_status ntpu_write_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows, const void *data)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if ((st = ntpu_check_range(dev, mem, addr, rows)) != NTPU_OK)
        return st;
    if (!data && rows > 0)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "data is NULL");
    size_t rb = ntpu_row_bytes(dev, mem), lanes = dev->n;
    dev->pm_writes += mem == NTPU_MEM_PM;
    size_t per = (dev->info.max_payload - NTPU_LEN_MEM_HDR) / rb;
    for (uint32_t done = 0; done < rows;) {
        uint32_t cnt = (uint32_t)(rows - done < per ? rows - done : per);
        uint8_t *p = ntpu_link_begin(&dev->link, NTPU_LEN_MEM_HDR + cnt * rb, 0, &st);
        if (!p)
            return st;
        p[0] = NTPU_OP_WRITE_MEM;
        p[1] = (uint8_t)mem;
        ntpu_wr16(p + 2, addr + done);
        ntpu_wr16(p + 4, cnt);
        uint8_t *q = p + NTPU_LEN_MEM_HDR;
        size_t first = (size_t)done * lanes, count = (size_t)cnt * lanes;
        if (mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS)
            ntpu_wr32_lanes(q, (const uint32_t *)data + first, count);
        else
            ntpu_wr16_lanes(q, (const uint16_t *)data + first, count);
        if ((st = ntpu_link_commit(&dev->link, NULL, NULL)) != NTPU_OK)
            return st;
        done += cnt;
    }
    return NTPU_OK;
}

ntpu_status ntpu_read_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows, void *data)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if ((st = ntpu_check_range(dev, mem, addr, rows)) != NTPU_OK)
        return st;
    if (!data && rows > 0)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "data is NULL");
    size_t rb = ntpu_row_bytes(dev, mem);
    size_t per = (dev->info.max_payload - 1) / rb;
    uint64_t ticket = 0;
    /* Replies land as little-endian bytes where their rows belong, and are turned
     * into host-order lanes in place afterwards (same size, so no extra buffer). */
    for (uint32_t done = 0; done < rows;) {
        uint32_t cnt = (uint32_t)(rows - done < per ? rows - done : per);
        uint8_t cmd[NTPU_LEN_MEM_HDR] = {NTPU_OP_READ_MEM, (uint8_t)mem};
        ntpu_wr16(cmd + 2, addr + done);
        ntpu_wr16(cmd + 4, cnt);
        st = ntpu_link_command(&dev->link, cmd, sizeof cmd, (uint32_t)(cnt * rb), (uint8_t *)data + done * rb, &ticket);
        if (st != NTPU_OK)
            return st;
        done += cnt;
    }
    if ((st = ntpu_link_wait(&dev->link, ticket)) != NTPU_OK)
        return st;
    size_t count = NTPU_HOST_WIRE_ORDER ? 0 : (size_t)rows * dev->n; /* nothing to turn on a little-endian host */
    if (mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS) {
        uint32_t *w = data;
        for (size_t i = 0; i < count; i++)
            w[i] = ntpu_rd32((const uint8_t *)&w[i]);
    } else {
        uint16_t *h = data;
        for (size_t i = 0; i < count; i++)
            h[i] = ntpu_rd16((const uint8_t *)&h[i]);
    }
    return NTPU_OK;
}

ntpu_status ntpu_load_w(ntpu_device *dev, uint32_t wb_addr, int transpose)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if ((uint64_t)wb_addr + dev->n > dev->info.wb_rows)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "weight tile at WB row %u runs past WB's %u rows",
                         (unsigned)wb_addr, (unsigned)dev->info.wb_rows);
    if (transpose && !(dev->info.features & NTPU_FEATURE_TRANSPOSE_BIT))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "this device has no transposed weight load");
    uint8_t cmd[NTPU_LEN_LOAD_W] = {NTPU_OP_LOAD_W, transpose ? NTPU_LOADW_TRANSPOSE : 0};
    ntpu_wr16(cmd + 2, wb_addr);
    return ntpu_link_command(&dev->link, cmd, sizeof cmd, 0, NULL, NULL);
}

ntpu_status ntpu_check_dtype(ntpu_device *dev, ntpu_dtype dtype)
{
    if (dtype != NTPU_DTYPE_INT8 && dtype != NTPU_DTYPE_BF16)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "unknown dtype %d", (int)dtype);
    unsigned bit = dtype == NTPU_DTYPE_BF16 ? NTPU_DTYPE_BF16_BIT : NTPU_DTYPE_INT8_BIT;
    if (!(dev->info.dtypes & bit))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "this device does not compute in %s",
                         dtype == NTPU_DTYPE_BF16 ? "bf16" : "int8");
    return NTPU_OK;
}

ntpu_status ntpu_matmul_tile(ntpu_device *dev, ntpu_dtype dtype, uint32_t ub_addr, uint32_t acc_addr, uint32_t rows,
                             int accumulate)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK || (st = ntpu_check_dtype(dev, dtype)) != NTPU_OK)
        return st;
    if (rows > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "MATMUL takes at most 65535 rows, not %u", (unsigned)rows);
    if ((st = ntpu_check_range(dev, NTPU_MEM_UB, ub_addr, rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, acc_addr, rows)) != NTPU_OK)
        return st;
    uint8_t cmd[NTPU_LEN_MATMUL] = {NTPU_OP_MATMUL, (uint8_t)((dtype == NTPU_DTYPE_BF16 ? NTPU_MATMUL_BF16 : 0) |
                                                              (accumulate ? NTPU_MATMUL_ACCUMULATE : 0))};
    ntpu_wr16(cmd + 2, ub_addr);
    ntpu_wr16(cmd + 4, acc_addr);
    ntpu_wr16(cmd + 6, rows);
    return ntpu_link_command(&dev->link, cmd, sizeof cmd, 0, NULL, NULL);
}

ntpu_status ntpu_fence(ntpu_device *dev)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (dev->link.rec_on) /* checked first, so no FENCE lands in the program */
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "recording a program: a fence waits, which a program cannot");
    uint8_t op = NTPU_OP_FENCE;
    if ((st = ntpu_link_command(&dev->link, &op, 1, 0, NULL, NULL)) != NTPU_OK)
        return st;
    return ntpu_link_sync(&dev->link);
}

/* Sends a command with a reply block and waits for it. */
static ntpu_status query(ntpu_device *dev, const uint8_t *cmd, size_t len, uint8_t *reply, uint32_t reply_len)
{
    uint64_t ticket;
    memset(reply, 0, reply_len);
    ntpu_status st = ntpu_link_command(&dev->link, cmd, len, reply_len, reply, &ticket);
    return st != NTPU_OK ? st : ntpu_link_wait(&dev->link, ticket);
}

ntpu_status ntpu_read_status(ntpu_device *dev, ntpu_device_status *out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!out)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "out is NULL");
    uint8_t op = NTPU_OP_STATUS, b[NTPU_STATUS_BYTES];
    st = query(dev, &op, 1, b, sizeof b);
    out->busy = b[NTPU_STATUS_OFF_BUSY];
    out->last_error = b[NTPU_STATUS_OFF_LAST_ERROR];
    out->errors = ntpu_rd32(b + NTPU_STATUS_OFF_ERRORS);
    out->commands = ntpu_rd32(b + NTPU_STATUS_OFF_COMMANDS);
    out->dropped = ntpu_rd32(b + NTPU_STATUS_OFF_DROPPED);
    return st;
}

ntpu_status ntpu_read_counters(ntpu_device *dev, ntpu_counters *out, int clear)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!out)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "out is NULL");
    uint8_t cmd[NTPU_LEN_COUNTERS] = {NTPU_OP_COUNTERS, clear ? NTPU_COUNTERS_CLEAR : 0}, b[NTPU_COUNTERS_BYTES];
    st = query(dev, cmd, sizeof cmd, b, sizeof b);
    uint64_t *dst[NTPU_CNT_COUNT] = {&out->cycles,     &out->array_busy,   &out->macs,
                                     &out->stall_link, &out->stall_weight, &out->stall_hazard,
                                     &out->stall_tx,   &out->rx_bytes,     &out->tx_bytes};
    for (unsigned i = 0; i < NTPU_CNT_COUNT; i++)
        *dst[i] = ntpu_rd64(b + 8 * i);
    return st;
}

double ntpu_counters_utilization(const ntpu_device *dev, const ntpu_counters *c)
{
    if (!dev || !dev->ok || !c || c->cycles == 0)
        return 0.0;
    return (double)c->macs / ((double)dev->n * dev->n * (double)c->cycles);
}

ntpu_status ntpu_reset_link(ntpu_device *dev)
{
    ntpu_status st = ntpu_check_dev(dev);
    return st != NTPU_OK ? st : ntpu_link_resync(&dev->link);
}

ntpu_status ntpu_get_link_stats(const ntpu_device *dev, ntpu_link_stats *out)
{
    if (!dev || !out)
        return NTPU_ERR_INVALID_ARG;
    if (!dev->ok)
        return NTPU_ERR_NO_DEVICE;
    *out = dev->link.stats;
    return NTPU_OK;
}
