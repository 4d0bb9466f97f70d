/* SPDX-License-Identifier: Apache-2.0 */
/* Size arithmetic on counts that come from files (shapes, dimensions, offsets): every product and sum
 * is checked, so a header that claims more than this build can address is refused with one line, on a
 * 32-bit build as on a 64-bit one. NTPU_SIZE_LIMIT is the largest size a file may describe: SIZE_MAX,
 * or lower for the test that plays a 32-bit build on a 64-bit machine (tests/cli/size_limits.sh).
 * Internal: not installed. */
#ifndef NTPU_IO_SIZES_H
#define NTPU_IO_SIZES_H

#include <stdint.h>

#ifndef NTPU_SIZE_LIMIT
#define NTPU_SIZE_LIMIT SIZE_MAX
#endif

/* *out = a * b: 0, or -1 (and *out untouched) when the product is over NTPU_SIZE_LIMIT. */
static inline int ntpu_size_mul(uint64_t a, uint64_t b, size_t *out)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p) || p > (uint64_t)NTPU_SIZE_LIMIT)
        return -1;
    *out = (size_t)p;
    return 0;
}

/* *out = a + b: 0, or -1 when the sum is over NTPU_SIZE_LIMIT. */
static inline int ntpu_size_add(uint64_t a, uint64_t b, size_t *out)
{
    uint64_t s;
    if (__builtin_add_overflow(a, b, &s) || s > (uint64_t)NTPU_SIZE_LIMIT)
        return -1;
    *out = (size_t)s;
    return 0;
}

#endif
