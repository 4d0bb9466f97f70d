/* SPDX-License-Identifier: Apache-2.0 */
/* ref_conv_gather, the rows a CONV MATMUL streams (copied as runs, blocks
 * transposed eight by eight), against the ISA's addressing written row by row
 * (docs/isa.md, "Version 1.5"): forward with stride and padding, CONV_T, and
 * the weight gradient, for array sizes that do and do not take the fast paths,
 * from every kind of starting row. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ntpu/protocol.h"
#include "ref_conv.h"

static uint64_t rng = 0x510E527FADE682D1ull;
static uint16_t rnd16(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint16_t)((rng * 0x2545F4914F6CDD1Dull) >> 48);
}

enum { UB = 1 << 15 };
static uint16_t ub[UB];

/* Row m of the stream, as the ISA defines it, into row (n lanes). */
static void want_row(const ref_conv *c, unsigned n, unsigned long m, uint16_t *row)
{
    memset(row, 0, n * sizeof *row);
    if (c->flags & NTPU_MATMUL_TRANSPOSE_A) {
        unsigned long ct = c->rows / ((unsigned long)n * c->k * c->k), j = m / n, r = m % n;
        unsigned long t = j % ct, kx = (j / ct) % c->k, ky = j / (ct * c->k);
        long y = c->dy + (long)ky, x = c->dx + (long)kx;
        if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
            return;
        for (unsigned i = 0; i < n; i++)
            row[i] =
                ub[(c->ub_addr + t * c->tile_stride + ((unsigned long)y * c->in_w + (unsigned long)x) * c->mb + i) * n +
                   r];
        return;
    }
    unsigned long b = m % c->mb, q = m / c->mb, ox = q % c->out_w, oy = q / c->out_w;
    long y, x;
    if (c->flags & NTPU_MATMUL_CONV_T) {
        long ys = (long)oy + c->dy, xs = (long)ox + c->dx, s = (long)c->stride;
        if (ys < 0 || xs < 0 || ys % s || xs % s)
            return;
        y = ys / s;
        x = xs / s;
    } else {
        y = (long)(oy * c->stride) + c->dy;
        x = (long)(ox * c->stride) + c->dx;
    }
    if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
        return;
    memcpy(row, ub + (c->ub_addr + ((unsigned long)y * c->in_w + (unsigned long)x) * c->mb + b) * n, n * sizeof *row);
}

static void check(const ref_conv *c, unsigned n, unsigned m0, unsigned count)
{
    static uint16_t got[1024 * 24];
    uint16_t want[24];
    cr_assert_leq((size_t)count * n, sizeof got / sizeof got[0]);
    ref_conv_gather(c, ub, n, m0, count, got);
    for (unsigned m = 0; m < count; m++) {
        want_row(c, n, m0 + m, want);
        for (unsigned i = 0; i < n; i++)
            if (got[(size_t)m * n + i] != want[i])
                cr_assert_fail("flags 0x%x n %u rows from %u: row %u lane %u 0x%04X, want 0x%04X", c->flags, n, m0,
                               m0 + m, i, got[(size_t)m * n + i], want[i]);
    }
}

Test(ref_gather, forward_and_transposed_rows)
{
    for (unsigned i = 0; i < UB; i++)
        ub[i] = rnd16();
    const unsigned ns[] = {2, 3, 8, 16};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (unsigned t = 0; t < 2; t++)
            for (unsigned stride = 1; stride <= 3; stride++)
                for (int pad = -1; pad <= 2; pad++) {
                    const unsigned n = ns[ni];
                    ref_conv c = {.flags = NTPU_MATMUL_CONV | (t ? NTPU_MATMUL_CONV_T : 0),
                                  .ub_addr = 5,
                                  .in_h = 5,
                                  .in_w = 6,
                                  .mb = 3,
                                  .out_w = 7,
                                  .stride = stride,
                                  .dy = -pad,
                                  .dx = pad - 1};
                    c.rows = 7 * 6 * c.mb;
                    check(&c, n, 0, c.rows);
                    check(&c, n, 4, c.rows - 9); /* from inside a pixel's run */
                    check(&c, n, 2, 1);
                }
}

Test(ref_gather, weight_gradient_blocks)
{
    for (unsigned i = 0; i < UB; i++)
        ub[i] = rnd16();
    const unsigned ns[] = {2, 3, 8, 16, 24};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (int d = -2; d <= 1; d++) {
            const unsigned n = ns[ni], k = 3, ct = 2;
            ref_conv c = {.flags = NTPU_MATMUL_CONV | NTPU_MATMUL_TRANSPOSE_A,
                          .ub_addr = 3,
                          .in_h = 4,
                          .in_w = 3,
                          .mb = n + 2,
                          .k = k,
                          .dy = d,
                          .dx = -d - 1,
                          .rows = n * k * k * ct};
            c.tile_stride = c.in_h * c.in_w * c.mb + 1;
            check(&c, n, 0, c.rows);
            check(&c, n, 3 * n, c.rows - 5 * n); /* from a block in the middle of (ky, kx, t) */
            check(&c, n, 7 * n, n);
        }
}
