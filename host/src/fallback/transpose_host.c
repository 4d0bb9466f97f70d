/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL TRANSPOSE_A on a device built without it (feature TRANSPOSE_A clear, e.g.
 * the iCEBreaker): each N x N block of UB rows is read, written back transposed in
 * its own place, streamed by a plain MATMUL of N rows, and then restored. The array
 * sees the same rows in the same order as with the flag, so the results are bit for
 * bit the device path's. Blocks may overlap (stride < N): every block is read before
 * anything is written, and each is restored before the next one is transposed.
 * Not queued: the call waits for its reads. */
#include <stdlib.h>

#include "internal.h"

ntpu_status ntpu_host_matmul_transpose_a(ntpu_device *dev, ntpu_dtype dtype, uint32_t ub_addr, uint32_t stride,
                                         uint32_t acc_addr, uint32_t rows, int accumulate)
{
    const uint32_t n = dev->n, blocks = rows / n;
    uint16_t *orig = malloc((size_t)rows * n * sizeof *orig);
    uint16_t *tr = malloc((size_t)n * n * sizeof *tr);
    ntpu_status st = NTPU_OK;
    if (!orig || !tr)
        st = ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "transposed MATMUL on the host: out of memory");
    for (uint32_t j = 0; j < blocks && st == NTPU_OK; j++)
        st = ntpu_read_rows(dev, NTPU_MEM_UB, ub_addr + j * stride, n, orig + (size_t)j * n * n);
    for (uint32_t j = 0; j < blocks && st == NTPU_OK; j++) {
        const uint16_t *blk = orig + (size_t)j * n * n;
        uint32_t at = ub_addr + j * stride;
        /* Row c of the transposed block has lane i = lane c of row i. */
        for (uint32_t c = 0; c < n; c++)
            for (uint32_t i = 0; i < n; i++)
                tr[c * n + i] = blk[i * n + c];
        st = ntpu_write_rows(dev, NTPU_MEM_UB, at, n, tr);
        if (st == NTPU_OK)
            st = ntpu_matmul_tile(dev, dtype, at, acc_addr + j * n, n, accumulate);
        if (st == NTPU_OK)
            st = ntpu_write_rows(dev, NTPU_MEM_UB, at, n, blk);
    }
    free(orig);
    free(tr);
    return st;
}
