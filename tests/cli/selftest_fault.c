/* SPDX-License-Identifier: Apache-2.0 */
/* Faults for ntpu selftest's own test: linked with -Wl,--wrap=ntpu_read_rows,--wrap=ntpu_matmul,
 * --wrap=ntpu_get_info, so the CLI sees a device that is wrong in one place, chosen by $NTPU_FAULT:
 *   mem     bit 5 of ACC row 4096 lane 3 reads back flipped (a power-of-two row the memory test samples)
 *   matmul  C[0][5] of every matmul on a device other than the golden model selftest opens as "ref:n=N"
 *   golden  C[0][5] of every matmul on that golden model only: the device is right, the oracle wrong
 * The selftest must report exactly those checks as FAIL and exit 1. And one that is not a fault:
 *   nobf16  the ID block claims no bf16: the checks that need it must be SKIP, not PASS, and exit 0. */
#include <stdlib.h>
#include <string.h>

#include "ntpu/ntpu.h"

ntpu_status __real_ntpu_read_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows, void *data);
ntpu_status __wrap_ntpu_read_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows, void *data);
ntpu_status __real_ntpu_matmul(ntpu_device *dev, ntpu_dtype dtype, const void *A, const void *B, void *C, size_t M,
                               size_t K, size_t N);
ntpu_status __wrap_ntpu_matmul(ntpu_device *dev, ntpu_dtype dtype, const void *A, const void *B, void *C, size_t M,
                               size_t K, size_t N);
ntpu_status __real_ntpu_get_info(const ntpu_device *dev, ntpu_info *out);
ntpu_status __wrap_ntpu_get_info(const ntpu_device *dev, ntpu_info *out);

static int fault(const char *name)
{
    const char *f = getenv("NTPU_FAULT");
    return f && !strcmp(f, name);
}

ntpu_status __wrap_ntpu_read_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows, void *data)
{
    ntpu_status st = __real_ntpu_read_rows(dev, mem, addr, rows, data);
    ntpu_info in;
    if (st == NTPU_OK && fault("mem") && mem == NTPU_MEM_ACC && addr <= 4096 && 4096 < addr + rows &&
        ntpu_get_info(dev, &in) == NTPU_OK && in.cols > 3)
        ((uint32_t *)data)[(size_t)(4096 - addr) * in.cols + 3] ^= 1u << 5;
    return st;
}

ntpu_status __wrap_ntpu_matmul(ntpu_device *dev, ntpu_dtype dtype, const void *A, const void *B, void *C, size_t M,
                               size_t K, size_t N)
{
    ntpu_status st = __real_ntpu_matmul(dev, dtype, A, B, C, M, K, N);
    ntpu_info in;
    if (st == NTPU_OK && (fault("matmul") || fault("golden")) && N > 5 && ntpu_get_info(dev, &in) == NTPU_OK) {
        int golden = !strncmp(in.device, "ref:n=", 6);
        if (golden == fault("golden"))
            ((uint32_t *)C)[5] ^= 1u; /* int32 and fp32 alike: the lowest bit */
    }
    return st;
}

ntpu_status __wrap_ntpu_get_info(const ntpu_device *dev, ntpu_info *out)
{
    ntpu_status st = __real_ntpu_get_info(dev, out);
    if (st == NTPU_OK && fault("nobf16"))
        out->dtypes &= ~(unsigned)NTPU_DTYPE_BF16_BIT;
    return st;
}
