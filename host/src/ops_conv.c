/* SPDX-License-Identifier: Apache-2.0 */
/* The low-level calls of protocol 1.5 (convolution on the device): MATMUL with
 * CONV addressing and POOL. Every argument is checked here as the device checks
 * it (docs/isa.md, "Version 1.5"), so nothing the device would refuse is sent.
 * There is no host fallback: a device without the feature gets
 * NTPU_ERR_UNSUPPORTED and the caller takes its host path. */
#include "internal.h"

/* The fields of *c against their wire widths and the device's ERR_ARG rules. */
static ntpu_status check_conv_fields(ntpu_device *dev, const ntpu_conv_addr *c)
{
    const int dw = c->mode == NTPU_CONV_WEIGHT_GRAD;
    const long lo = dw ? -32768 : -128, hi = dw ? 32767 : 127;
    if (c->rows > 65535 || c->in_h - 1 > 254 || c->in_w - 1 > 254 || c->mb - 1 > 254)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                         "CONV MATMUL: rows %u (at most 65535), in_h %u, in_w %u, mb %u "
                         "(each 1..255)",
                         (unsigned)c->rows, c->in_h, c->in_w, c->mb);
    if (c->dy < lo || c->dy > hi || c->dx < lo || c->dx > hi)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "CONV MATMUL: dy %d, dx %d out of %ld..%ld", c->dy, c->dx, lo, hi);
    if (dw) {
        if (c->k - 1 > 254 || c->tile_stride > 65535 || c->rows % ((uint64_t)dev->n * c->k * c->k))
            return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                             "CONV weight-gradient MATMUL: k %u (1..255), tile_stride %u (at most 65535), rows %u "
                             "(a multiple of N*k*k = %llu)",
                             c->k, (unsigned)c->tile_stride, (unsigned)c->rows,
                             (unsigned long long)dev->n * c->k * c->k);
    } else if (c->out_w - 1 > 254 || c->stride - 1 > 254) {
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "CONV MATMUL: out_w %u, stride %u (each 1..255)", c->out_w,
                         c->stride);
    }
    return NTPU_OK;
}

/* The UB rows the device's range check covers: the whole input map (the weight
 * gradient: to the last block of the last channel tile). */
static ntpu_status check_conv_ranges(ntpu_device *dev, const ntpu_conv_addr *c)
{
    uint64_t map = (uint64_t)c->in_h * c->in_w * c->mb, end = c->ub_addr + map;
    if (c->mode == NTPU_CONV_WEIGHT_GRAD) {
        uint64_t tiles = c->rows / ((uint64_t)dev->n * c->k * c->k);
        end = c->rows == 0 ? c->ub_addr : c->ub_addr + (tiles - 1) * c->tile_stride + map - c->mb + dev->n;
    }
    if (c->ub_addr > 65535 || end > dev->info.ub_rows)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "CONV MATMUL reads UB rows %u..%llu, past UB's %u rows",
                         (unsigned)c->ub_addr, (unsigned long long)end - 1, (unsigned)dev->info.ub_rows);
    return ntpu_check_range(dev, NTPU_MEM_ACC, c->acc_addr, c->rows);
}

static void encode_conv(uint8_t *cmd, const ntpu_conv_addr *c)
{
    ntpu_wr16(cmd + 2, c->ub_addr);
    ntpu_wr16(cmd + 4, c->acc_addr);
    ntpu_wr16(cmd + 6, c->rows);
    if (c->mode == NTPU_CONV_WEIGHT_GRAD) {
        ntpu_wr16(cmd + 8, c->tile_stride);
        cmd[10] = (uint8_t)c->in_h;
        cmd[11] = (uint8_t)c->in_w;
        cmd[12] = (uint8_t)c->mb;
        cmd[13] = (uint8_t)c->k;
        ntpu_wr16(cmd + 14, (uint32_t)c->dy & 0xFFFFu);
        ntpu_wr16(cmd + 16, (uint32_t)c->dx & 0xFFFFu);
        return;
    }
    cmd[8] = (uint8_t)c->in_h;
    cmd[9] = (uint8_t)c->in_w;
    cmd[10] = (uint8_t)c->out_w;
    cmd[11] = (uint8_t)c->mb;
    cmd[12] = (uint8_t)c->stride;
    cmd[13] = (uint8_t)(c->dy & 0xFF);
    cmd[14] = (uint8_t)(c->dx & 0xFF);
}

ntpu_status ntpu_matmul_tile_conv(ntpu_device *dev, ntpu_dtype dtype, const ntpu_conv_addr *c, int accumulate)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK || (st = ntpu_check_dtype(dev, dtype)) != NTPU_OK)
        return st;
    if (!c || (unsigned)c->mode > NTPU_CONV_WEIGHT_GRAD)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "CONV MATMUL: %s", c ? "unknown mode" : "c is NULL");
    if ((st = check_conv_fields(dev, c)) != NTPU_OK || (st = check_conv_ranges(dev, c)) != NTPU_OK)
        return st;
    const int dw = c->mode == NTPU_CONV_WEIGHT_GRAD;
    if (!(dev->info.features & NTPU_FEATURE_CONV_BIT) || (dw && !(dev->info.features & NTPU_FEATURE_TRANSPOSE_A_BIT)))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED,
                         "CONV MATMUL: the device has no convolution addressing%s "
                         "(protocol 1.5)",
                         dw ? " or no TRANSPOSE_A" : "");
    unsigned flags = NTPU_MATMUL_CONV | (dtype == NTPU_DTYPE_BF16 ? NTPU_MATMUL_BF16 : 0) |
                     (accumulate ? NTPU_MATMUL_ACCUMULATE : 0) | (dw ? NTPU_MATMUL_TRANSPOSE_A : 0) |
                     (c->mode == NTPU_CONV_TRANSPOSED ? NTPU_MATMUL_CONV_T : 0);
    uint8_t cmd[NTPU_LEN_MATMUL_CONV_DW] = {NTPU_OP_MATMUL, (uint8_t)flags};
    encode_conv(cmd, c);
    return ntpu_link_command(&dev->link, cmd, dw ? NTPU_LEN_MATMUL_CONV_DW : NTPU_LEN_MATMUL_CONV, 0, NULL, NULL);
}

/* Two row ranges of one memory share a row. */
static int overlap(uint64_t a, uint64_t na, uint64_t b, uint64_t nb)
{
    return a < b + nb && b < a + na;
}

ntpu_status ntpu_vec_pool(ntpu_device *dev, unsigned mode, uint32_t src, uint32_t dst, uint32_t aux, unsigned in_h,
                          unsigned in_w, unsigned mb, unsigned k)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (mode & ~NTPU_POOL_MODE_MASK || k == 0 || mb == 0 || in_h < k || in_w < k || in_h > 255 || in_w > 255 ||
        mb > 255 || src > 65535 || dst > 65535 || aux > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                         "POOL: mode %u (0..3), in_h %u, in_w %u, mb %u, k %u (k 1..in_h "
                         "and in_w, each up to 255), addresses below 65536",
                         mode, in_h, in_w, mb, k);
    const int grad = mode >= NTPU_POOL_MODE_MAX_GRAD;
    const int avg = mode == NTPU_POOL_MODE_AVG || mode == NTPU_POOL_MODE_AVG_GRAD;
    const uint32_t map = in_h * in_w * mb, pooled = (in_h / k) * (in_w / k) * mb;
    const unsigned src_mem = grad ? NTPU_MEM_ACC : NTPU_MEM_UB, aux_mem = avg ? NTPU_MEM_ACC : NTPU_MEM_UB;
    const uint32_t src_rows = grad ? pooled : map, dst_rows = grad ? map : pooled, aux_rows = avg ? 1 : pooled;
    if (overlap(src, src_rows, dst, dst_rows) ||
        (aux_mem == src_mem && (overlap(aux, aux_rows, src, src_rows) || overlap(aux, aux_rows, dst, dst_rows))))
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "POOL: src, dst and aux rows in one memory overlap");
    if ((st = ntpu_check_range(dev, src_mem, src, src_rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, src_mem, dst, dst_rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, aux_mem, aux, aux_rows)) != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_POOL_BIT))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "POOL: the device has no POOL (protocol 1.5)");
    uint8_t cmd[NTPU_LEN_POOL] = {NTPU_OP_POOL, (uint8_t)mode};
    ntpu_wr16(cmd + 2, src);
    ntpu_wr16(cmd + 4, dst);
    ntpu_wr16(cmd + 6, aux);
    cmd[8] = (uint8_t)in_h;
    cmd[9] = (uint8_t)in_w;
    cmd[10] = (uint8_t)mb;
    cmd[11] = (uint8_t)k;
    return ntpu_link_command(&dev->link, cmd, sizeof cmd, 0, NULL, NULL);
}
