/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.5 in the golden model: MATMUL's CONV addressing (docs/isa.md,
 * "Version 1.5"; POOL is ref_pool.c). The CONV modes only choose where each row of
 * the activation stream comes from: ref_conv_gather copies those rows (zero
 * rows outside the map) into a buffer that the ordinary MATMUL kernels
 * (matmul_kernel.c) then run over, so the arithmetic stays theirs and as fast. */
#include "ref_conv.h"

#include <string.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"

static unsigned get16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

size_t ref_matmul_len(unsigned flags)
{
    if (flags & NTPU_MATMUL_CONV)
        return (flags & NTPU_MATMUL_TRANSPOSE_A) ? NTPU_LEN_MATMUL_CONV_DW : NTPU_LEN_MATMUL_CONV;
    return (flags & NTPU_MATMUL_TRANSPOSE_A) ? NTPU_LEN_MATMUL_T : NTPU_LEN_MATMUL;
}

static int dw_mode(const ref_conv *c)
{
    return (c->flags & NTPU_MATMUL_TRANSPOSE_A) != 0;
}

int ref_conv_decode(const uint8_t *p, unsigned n, ref_conv *c)
{
    memset(c, 0, sizeof *c);
    c->flags = p[1];
    c->ub_addr = get16(p + 2);
    c->acc_addr = get16(p + 4);
    c->rows = get16(p + 6);
    if (dw_mode(c)) {
        c->tile_stride = get16(p + 8);
        c->in_h = p[10];
        c->in_w = p[11];
        c->mb = p[12];
        c->k = p[13];
        c->dy = (int16_t)get16(p + 14);
        c->dx = (int16_t)get16(p + 16);
        if (!c->in_h || !c->in_w || !c->mb || !c->k)
            return NTPU_DEV_ERR_ARG;
        return c->rows % ((unsigned long)n * c->k * c->k) ? NTPU_DEV_ERR_ARG : NTPU_DEV_OK;
    }
    c->in_h = p[8];
    c->in_w = p[9];
    c->out_w = p[10];
    c->mb = p[11];
    c->stride = p[12];
    c->dy = (int8_t)p[13];
    c->dx = (int8_t)p[14];
    return c->in_h && c->in_w && c->out_w && c->mb && c->stride ? NTPU_DEV_OK : NTPU_DEV_ERR_ARG;
}

unsigned long long ref_conv_ub_end(const ref_conv *c, unsigned n)
{
    unsigned long long map = (unsigned long long)c->in_h * c->in_w * c->mb;
    if (!dw_mode(c))
        return c->ub_addr + map; /* the whole input map, however little of it is read */
    if (c->rows == 0)
        return c->ub_addr;
    unsigned long long tiles = c->rows / ((unsigned long long)n * c->k * c->k); /* CT */
    return c->ub_addr + (tiles - 1) * c->tile_stride + map - c->mb + n;
}

/* The map pixel (y * in_w + x) that output pixel (oy, ox) reads, or -1 for a
 * zero row: forward (y = oy * stride + dy) or transposed (oy + dy = y * stride). */
static long source_pixel(const ref_conv *c, unsigned long oy, unsigned long ox)
{
    long y, x;
    if (c->flags & NTPU_MATMUL_CONV_T) {
        long ys = (long)oy + c->dy, xs = (long)ox + c->dx;
        if (ys < 0 || xs < 0 || ys % (long)c->stride || xs % (long)c->stride)
            return -1;
        y = ys / (long)c->stride;
        x = xs / (long)c->stride;
    } else {
        y = (long)(oy * c->stride) + c->dy;
        x = (long)(ox * c->stride) + c->dx;
    }
    if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
        return -1;
    return y * (long)c->in_w + x;
}

/* Forward and CONV_T: row m is sample m mod mb of output pixel m div mb; the
 * samples of one pixel are a run of rows on both sides, copied at once. */
static void gather_rows(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out)
{
    unsigned long b = m0 % c->mb, q = m0 / c->mb;
    unsigned long ox = q % c->out_w, oy = q / c->out_w;
    while (count > 0) {
        unsigned run = (unsigned)(c->mb - b < count ? c->mb - b : count);
        long pix = source_pixel(c, oy, ox);
        if (pix < 0)
            memset(out, 0, (size_t)run * n * sizeof *out);
        else
            memcpy(out, ub + ((size_t)c->ub_addr + (size_t)pix * c->mb + b) * n, (size_t)run * n * sizeof *out);
        out += (size_t)run * n;
        count -= run;
        b = 0;
        if (++ox == c->out_w) {
            ox = 0;
            oy++;
        }
    }
}

/* Weight gradient: block j (N rows) is the N x N UB block at tap (ky, kx) and
 * channel tile t, read transposed; blocks run in the order (ky, kx, t), t innermost. */
static void gather_blocks(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out)
{
    const unsigned long ct = c->rows / ((unsigned long)n * c->k * c->k);
    for (unsigned long j = m0 / n; j < (m0 + count) / n; j++, out += (size_t)n * n) {
        unsigned long t = j % ct, kx = (j / ct) % c->k, ky = j / (ct * c->k);
        long y = c->dy + (long)ky, x = c->dx + (long)kx;
        if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w) {
            memset(out, 0, (size_t)n * n * sizeof *out);
            continue;
        }
        const uint16_t *blk =
            ub + ((size_t)c->ub_addr + t * c->tile_stride + ((size_t)y * c->in_w + (size_t)x) * c->mb) * n;
        for (unsigned r = 0; r < n; r++)
            for (unsigned i = 0; i < n; i++)
                out[(size_t)r * n + i] = blk[(size_t)i * n + r];
    }
}

void ref_conv_gather(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out)
{
    if (dw_mode(c))
        gather_blocks(c, ub, n, m0, count, out);
    else
        gather_rows(c, ub, n, m0, count, out);
}
