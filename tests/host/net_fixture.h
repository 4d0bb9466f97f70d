/* SPDX-License-Identifier: Apache-2.0 */
/* What the conv-net tests share (test_net.c, test_net_resident.c, test_net_devopt.c,
 * test_quant_net.c, test_checkpoint.c): an arch from its SPEC, and seeded inputs and labels. */
#ifndef NTPU_TEST_NET_FIXTURE_H
#define NTPU_TEST_NET_FIXTURE_H

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>

#include "ntpu/arch.h"

/* spec on inputs c x h x w; the test fails when it does not parse. */
static inline ntpu_arch net_arch(const char *spec, unsigned c, unsigned h, unsigned w)
{
    ntpu_arch a;
    char why[160] = "";
    cr_assert_eq(ntpu_arch_parse(spec, c, h, w, &a, why, sizeof why), NTPU_OK, "%s: %s", spec, why);
    return a;
}

/* n inputs in [-1, 1) from seed, some exact zeros; returns the stream's state after them. */
static inline uint64_t net_inputs(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = i % 7 == 3 ? 0.0f : (float)((double)(seed >> 40) / (double)(1ull << 23) - 1.0);
    }
    return seed;
}

/* A batch: n inputs as net_inputs makes them, and batch labels below classes. */
static inline void net_batch(float *x, size_t n, uint8_t *y, size_t batch, size_t classes, uint64_t seed)
{
    seed = net_inputs(x, n, seed);
    for (size_t b = 0; b < batch; b++)
        y[b] = (uint8_t)((b * 7 + seed % 5) % classes);
}

#endif
