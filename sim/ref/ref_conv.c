/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.5 in the golden model: MATMUL's CONV addressing and POOL
 * (docs/isa.md, "Version 1.5"). The CONV modes only choose where each row of
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

/* ---------------------------------------------------------------- POOL */

/* A range of rows POOL touches: in UB (wide 0) or ACC (1). */
typedef struct pool_range {
    int wide;
    unsigned long start, count;
} pool_range;

static unsigned long map_rows(const ref_pool *c)
{
    return (unsigned long)c->in_h * c->in_w * c->mb;
}

static unsigned long pooled_rows(const ref_pool *c)
{
    return (unsigned long)(c->in_h / c->k) * (c->in_w / c->k) * c->mb;
}

/* src, dst, aux of the mode (docs/isa.md's table). */
static void pool_ranges(const ref_pool *c, pool_range rg[3])
{
    const int grad = c->mode >= NTPU_POOL_MODE_MAX_GRAD;
    const int avg = c->mode == NTPU_POOL_MODE_AVG || c->mode == NTPU_POOL_MODE_AVG_GRAD;
    rg[0] = (pool_range){grad, c->src, grad ? pooled_rows(c) : map_rows(c)};
    rg[1] = (pool_range){grad, c->dst, grad ? map_rows(c) : pooled_rows(c)};
    rg[2] = (pool_range){avg, c->aux, avg ? 1 : pooled_rows(c)};
}

int ref_pool_decode(const uint8_t *p, ref_pool *c)
{
    c->mode = p[1] & NTPU_POOL_MODE_MASK;
    c->src = get16(p + 2);
    c->dst = get16(p + 4);
    c->aux = get16(p + 6);
    c->in_h = p[8];
    c->in_w = p[9];
    c->mb = p[10];
    c->k = p[11];
    if ((p[1] & NTPU_POOL_RESERVED) || !c->k || !c->mb || c->in_h < c->k || c->in_w < c->k)
        return NTPU_DEV_ERR_ARG;
    pool_range rg[3];
    pool_ranges(c, rg);
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (rg[i].wide == rg[j].wide && rg[i].start < rg[j].start + rg[j].count &&
                rg[j].start < rg[i].start + rg[i].count)
                return NTPU_DEV_ERR_ARG;
    return NTPU_DEV_OK;
}

int ref_pool_in_range(const ref_pool *c, unsigned ub_rows, unsigned acc_rows)
{
    pool_range rg[3];
    pool_ranges(c, rg);
    for (int i = 0; i < 3; i++)
        if (rg[i].start + rg[i].count > (rg[i].wide ? acc_rows : ub_rows))
            return 0;
    return 1;
}

/* A bf16 operand's value for MAX's comparison: a subnormal reads as zero. */
static float bf16_operand(uint16_t h)
{
    return (h & 0x7F80u) ? ntpu_bf16_to_f32(h) : 0.0f;
}

static int bf16_is_nan(uint16_t h)
{
    return (h & 0x7FFFu) > 0x7F80u;
}

/* MAX and AVG: one pooled row r (window at pooled pixel (py, px), sample b). */
static void pool_row(const ref_pool *c, uint16_t *ub, const uint32_t *acc, unsigned n, unsigned long py,
                     unsigned long px, unsigned long b, unsigned long r)
{
    for (unsigned lane = 0; lane < n; lane++) {
        uint16_t best = 0, idx = 0;
        uint32_t s = 0;
        for (unsigned wy = 0; wy < c->k; wy++)
            for (unsigned wx = 0; wx < c->k; wx++) {
                unsigned long q = ((py * c->k + wy) * c->in_w + px * c->k + wx) * c->mb + b;
                uint16_t v = ub[(c->src + q) * n + lane];
                if (c->mode == NTPU_POOL_MODE_AVG) {
                    s = ntpu_f32_add(s, (uint32_t)v << 16);
                } else if ((wy == 0 && wx == 0) || bf16_is_nan(v) || bf16_operand(v) > bf16_operand(best)) {
                    best = v;
                    idx = (uint16_t)(wy * c->k + wx);
                }
            }
        if (c->mode == NTPU_POOL_MODE_AVG) {
            ub[(c->dst + r) * n + lane] = ntpu_bf16_from_f32_bits(ntpu_f32_mul(s, acc[(size_t)c->aux * n + lane]));
        } else {
            ub[(c->dst + r) * n + lane] = best;
            ub[(c->aux + r) * n + lane] = idx;
        }
    }
}

/* MAX_GRAD and AVG_GRAD: one map row q = (y * in_w + x) * mb + b. */
static void unpool_row(const ref_pool *c, const uint16_t *ub, uint32_t *acc, unsigned n, unsigned long y,
                       unsigned long x, unsigned long b, unsigned long q)
{
    const unsigned long oh = c->in_h / c->k, ow = c->in_w / c->k;
    uint32_t *d = acc + (c->dst + q) * n;
    if (y >= oh * c->k || x >= ow * c->k) { /* past the last whole window: no window reads it */
        memset(d, 0, n * sizeof *d);
        return;
    }
    unsigned long r = ((y / c->k) * ow + x / c->k) * c->mb + b;
    const uint32_t *g = acc + (c->src + r) * n;
    for (unsigned lane = 0; lane < n; lane++) {
        if (c->mode == NTPU_POOL_MODE_AVG_GRAD)
            d[lane] = ntpu_f32_mul(g[lane], acc[(size_t)c->aux * n + lane]);
        else
            d[lane] = ub[(c->aux + r) * n + lane] == (y % c->k) * c->k + x % c->k ? g[lane] : 0u;
    }
}

unsigned long ref_pool_run(const ref_pool *c, uint16_t *ub, uint32_t *acc, unsigned n)
{
    const unsigned long oh = c->in_h / c->k, ow = c->in_w / c->k;
    /* The ranges in one memory do not overlap (checked), so the order of the
     * writes cannot matter: the ISA's "every source row read first" holds. */
    if (c->mode < NTPU_POOL_MODE_MAX_GRAD) {
        for (unsigned long py = 0; py < oh; py++)
            for (unsigned long px = 0; px < ow; px++)
                for (unsigned long b = 0; b < c->mb; b++)
                    pool_row(c, ub, acc, n, py, px, b, (py * ow + px) * c->mb + b);
    } else {
        for (unsigned long y = 0; y < c->in_h; y++)
            for (unsigned long x = 0; x < c->in_w; x++)
                for (unsigned long b = 0; b < c->mb; b++)
                    unpool_row(c, ub, acc, n, y, x, b, (y * c->in_w + x) * c->mb + b);
    }
    return map_rows(c);
}
