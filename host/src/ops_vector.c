/* SPDX-License-Identifier: Apache-2.0 */
/* The low-level calls of protocol 1.1 (training): the transposed MATMUL and the
 * vector unit. Arguments are checked against the ID block before anything is sent.
 * A device built without the vector unit (feature VECTOR clear, e.g. the iCEBreaker)
 * gets ACT, RELU_GRAD and COLSUM done here on the host instead (fallback/vector_host.c),
 * bit for bit what the unit computes; one without TRANSPOSE_A gets the transposed
 * MATMUL from plain ones (fallback/transpose_host.c). */
#include "internal.h"

ntpu_status ntpu_matmul_tile_transpose_a(ntpu_device *dev, ntpu_dtype dtype, uint32_t ub_addr, uint32_t stride,
                                         uint32_t acc_addr, uint32_t rows, int accumulate)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK || (st = ntpu_check_dtype(dev, dtype)) != NTPU_OK)
        return st;
    if (rows == 0 || rows > 65535 || rows % dev->n || stride > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                         "transposed MATMUL: rows %u must be a multiple of %u below "
                         "65536, stride %u below 65536",
                         (unsigned)rows, dev->n, (unsigned)stride);
    uint64_t last = (uint64_t)ub_addr + (uint64_t)(rows / dev->n - 1) * stride;
    if (last + dev->n > dev->info.ub_rows)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "transposed MATMUL reads UB rows up to %llu of %u",
                         (unsigned long long)(last + dev->n - 1), (unsigned)dev->info.ub_rows);
    if ((st = ntpu_check_range(dev, NTPU_MEM_ACC, acc_addr, rows)) != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_TRANSPOSE_A_BIT))
        return ntpu_host_matmul_transpose_a(dev, dtype, ub_addr, stride, acc_addr, rows, accumulate);
    uint8_t cmd[NTPU_LEN_MATMUL_T] = {NTPU_OP_MATMUL,
                                      (uint8_t)((dtype == NTPU_DTYPE_BF16 ? NTPU_MATMUL_BF16 : 0) |
                                                (accumulate ? NTPU_MATMUL_ACCUMULATE : 0) | NTPU_MATMUL_TRANSPOSE_A)};
    ntpu_wr16(cmd + 2, ub_addr);
    ntpu_wr16(cmd + 4, acc_addr);
    ntpu_wr16(cmd + 6, rows);
    ntpu_wr16(cmd + 8, stride);
    return ntpu_link_command(&dev->link, cmd, sizeof cmd, 0, NULL, NULL);
}

/* Where the output field of the flags writes, and whether those rows exist. */
static ntpu_status check_out(ntpu_device *dev, unsigned out, uint32_t dst, uint32_t rows)
{
    unsigned mem = out == NTPU_OUT_WB ? NTPU_MEM_WB : out == NTPU_OUT_ACC ? NTPU_MEM_ACC : NTPU_MEM_UB;
    return ntpu_check_range(dev, mem, dst, rows);
}

static ntpu_status vec_command(ntpu_device *dev, unsigned op, unsigned flags, uint32_t src, uint32_t dst, uint32_t rows,
                               uint32_t aux, size_t len)
{
    uint8_t cmd[NTPU_LEN_ACT] = {(uint8_t)op, (uint8_t)flags};
    ntpu_wr16(cmd + 2, src);
    ntpu_wr16(cmd + 4, dst);
    ntpu_wr16(cmd + 6, rows);
    ntpu_wr16(cmd + 8, aux);
    return ntpu_link_command(&dev->link, cmd, len, 0, NULL, NULL);
}

ntpu_status ntpu_vec_act(ntpu_device *dev, unsigned flags, uint32_t src, uint32_t dst, uint32_t rows, uint32_t aux)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    const unsigned out = flags & NTPU_OUT_MASK;
    if (flags & ~(NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_MASK))
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "ACT: reserved flag bits in 0x%02x", flags);
    unsigned aux_rows = out == NTPU_OUT_INT8 ? 3 : (flags & NTPU_ACT_BIAS) ? 1 : 0;
    if ((st = ntpu_check_range(dev, NTPU_MEM_ACC, src, rows)) != NTPU_OK || (st = check_out(dev, out, dst, rows)) ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, aux, aux_rows)) != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_VECTOR_BIT))
        return ntpu_host_act(dev, flags, src, dst, rows, aux);
    return vec_command(dev, NTPU_OP_ACT, flags, src, dst, rows, aux, NTPU_LEN_ACT);
}

ntpu_status ntpu_vec_relu_grad(ntpu_device *dev, unsigned out, uint32_t src, uint32_t dst, uint32_t rows, uint32_t mask)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (out & ~NTPU_OUT_MASK || out == NTPU_OUT_INT8)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "RELU_GRAD writes bf16 to UB or WB, or fp32 to ACC");
    if ((st = ntpu_check_range(dev, NTPU_MEM_ACC, src, rows)) != NTPU_OK || (st = check_out(dev, out, dst, rows)) ||
        (st = ntpu_check_range(dev, NTPU_MEM_UB, mask, rows)) != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_VECTOR_BIT))
        return ntpu_host_relu_grad(dev, out, src, dst, rows, mask);
    return vec_command(dev, NTPU_OP_RELU_GRAD, out, src, dst, rows, mask, NTPU_LEN_RELU_GRAD);
}

ntpu_status ntpu_vec_colsum(ntpu_device *dev, uint32_t src, uint32_t dst, uint32_t rows, int accumulate)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if ((st = ntpu_check_range(dev, NTPU_MEM_ACC, src, rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, dst, 1)) != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_VECTOR_BIT))
        return ntpu_host_colsum(dev, src, dst, rows, accumulate);
    return vec_command(dev, NTPU_OP_COLSUM, accumulate ? NTPU_COLSUM_ACCUMULATE : 0, src, dst, rows, 0,
                       NTPU_LEN_COLSUM);
}

ntpu_status ntpu_vec_optim(ntpu_device *dev, unsigned flags, uint32_t p, uint32_t g, uint32_t rows, uint32_t aux)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (flags & ~NTPU_OPTIM_MOMENTUM)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "OPTIM: reserved flag bits in 0x%02x", flags);
    const unsigned mom = flags & NTPU_OPTIM_MOMENTUM;
    if (rows > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "OPTIM: %u rows, at most 65535", (unsigned)rows);
    if ((st = ntpu_check_range(dev, NTPU_MEM_ACC, p, rows * (1 + mom))) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, g, rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, aux, 2 + mom)) != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_OPTIM_BIT))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "OPTIM: the device has no on-device optimizer (protocol 1.3)");
    return vec_command(dev, NTPU_OP_OPTIM, flags, p, g, rows, aux, NTPU_LEN_OPTIM);
}

ntpu_status ntpu_vec_optim_adam(ntpu_device *dev, int decoupled, uint32_t p, uint32_t g, uint32_t rows, uint32_t aux,
                                uint32_t s)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (rows > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "OPTIM: %u rows, at most 65535", (unsigned)rows);
    if (!(dev->info.features & NTPU_FEATURE_ADAM_BIT))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED,
                         "OPTIM ADAM: the device has no optimizer-state memory "
                         "(protocol 1.4, feature ADAM)");
    if ((st = ntpu_check_range(dev, NTPU_MEM_ACC, p, rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, g, rows)) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_ACC, aux, NTPU_ADAM_AUX_ROWS)) != NTPU_OK ||
        (st = ntpu_check_range(dev, NTPU_MEM_OS, s, 2 * rows)) != NTPU_OK)
        return st;
    uint8_t cmd[NTPU_LEN_OPTIM_ADAM] = {NTPU_OP_OPTIM,
                                        (uint8_t)(NTPU_OPTIM_ADAM | (decoupled ? NTPU_OPTIM_DECOUPLED : 0))};
    ntpu_wr16(cmd + 2, p);
    ntpu_wr16(cmd + 4, g);
    ntpu_wr16(cmd + 6, rows);
    ntpu_wr16(cmd + 8, aux);
    ntpu_wr16(cmd + 10, s);
    return ntpu_link_command(&dev->link, cmd, sizeof cmd, 0, NULL, NULL);
}
