/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.5 in the golden model: MATMUL's CONV addressing (docs/isa.md,
 * "Version 1.5"; POOL is ref_pool.c). The CONV modes only choose where each row of
 * the activation stream comes from: ref_conv_gather copies those rows (zero
 * rows outside the map) into a buffer that the ordinary MATMUL kernels
 * (matmul_kernel.c) then run over, so the arithmetic stays theirs and as fast. */
#include "ref_conv.h"

#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

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
 * samples of one pixel are a run of rows on both sides. Runs that continue one
 * another (neighbouring source pixels, or zero rows after zero rows) are
 * copied or cleared at once. */
static void gather_rows(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out)
{
    unsigned long b = m0 % c->mb, q = m0 / c->mb;
    unsigned long ox = q % c->out_w, oy = q / c->out_w;
    const uint16_t *from = NULL; /* the pending run: `lanes` lanes from `from`, or zeros when NULL */
    size_t lanes = 0;
    while (count > 0) {
        const unsigned run = (unsigned)(c->mb - b < count ? c->mb - b : count);
        const long pix = source_pixel(c, oy, ox);
        const uint16_t *src = pix < 0 ? NULL : ub + ((size_t)c->ub_addr + (size_t)pix * c->mb + b) * n;
        const int continues = src ? from != NULL && from + lanes == src : from == NULL; /* no arithmetic on NULL */
        if (lanes && !continues) {
            if (from)
                memcpy(out, from, lanes * sizeof *out);
            else
                memset(out, 0, lanes * sizeof *out);
            out += lanes;
            lanes = 0;
        }
        if (!lanes)
            from = src;
        lanes += (size_t)run * n;
        count -= run;
        b = 0;
        if (++ox == c->out_w) {
            ox = 0;
            oy++;
        }
    }
    if (from)
        memcpy(out, from, lanes * sizeof *out);
    else
        memset(out, 0, lanes * sizeof *out);
}

/* out (n x n) = the n x n block at blk, transposed: out[r][i] = blk[i][r]. */
static void transpose_block(uint16_t *out, const uint16_t *blk, unsigned n)
{
    unsigned from = 0;
#if defined(__x86_64__)
    if (n % 8 == 0) { /* 8 x 8 tiles: three rounds of interleaves (SSE2, which every x86-64 has) */
        for (unsigned ti = 0; ti < n; ti += 8)
            for (unsigned tr = 0; tr < n; tr += 8) {
                const uint16_t *src = blk + (size_t)ti * n + tr;
                __m128i a[8], b[8]; /* unrolled, so that they stay in registers */
#pragma GCC unroll 8
                for (unsigned i = 0; i < 8; i++)
                    a[i] = _mm_loadu_si128((const __m128i *)(src + (size_t)i * n));
#pragma GCC unroll 4
                for (unsigned i = 0; i < 8; i += 2) { /* pairs of rows, 16-bit lanes interleaved */
                    b[i / 2] = _mm_unpacklo_epi16(a[i], a[i + 1]);
                    b[4 + i / 2] = _mm_unpackhi_epi16(a[i], a[i + 1]);
                }
#pragma GCC unroll 2
                for (unsigned h = 0; h < 8; h += 4) { /* then 32-bit pairs of pairs */
                    a[h] = _mm_unpacklo_epi32(b[h], b[h + 1]);
                    a[h + 1] = _mm_unpackhi_epi32(b[h], b[h + 1]);
                    a[h + 2] = _mm_unpacklo_epi32(b[h + 2], b[h + 3]);
                    a[h + 3] = _mm_unpackhi_epi32(b[h + 2], b[h + 3]);
                }
                uint16_t *dst = out + (size_t)tr * n + ti;
#pragma GCC unroll 4
                for (unsigned q = 0; q < 4; q++) { /* and 64-bit halves: column 2q, 2q + 1 */
                    const unsigned lo = (q / 2) * 4 + q % 2;
                    _mm_storeu_si128((__m128i *)(dst + (size_t)(2 * q) * n), _mm_unpacklo_epi64(a[lo], a[lo + 2]));
                    _mm_storeu_si128((__m128i *)(dst + (size_t)(2 * q + 1) * n), _mm_unpackhi_epi64(a[lo], a[lo + 2]));
                }
            }
        from = n;
    }
#endif
    for (unsigned r = from; r < n; r++)
        for (unsigned i = 0; i < n; i++)
            out[(size_t)r * n + i] = blk[(size_t)i * n + r];
}

/* Weight gradient: block j (N rows) is the N x N UB block at tap (ky, kx) and
 * channel tile t, read transposed; blocks run in the order (ky, kx, t), t innermost. */
static void gather_blocks(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out)
{
    const unsigned long ct = c->rows / ((unsigned long)n * c->k * c->k);
    unsigned long j = m0 / n, t = j % ct, kx = (j / ct) % c->k, ky = j / (ct * c->k);
    for (const unsigned long end = (m0 + count) / n; j < end; j++, out += (size_t)n * n) {
        long y = c->dy + (long)ky, x = c->dx + (long)kx;
        if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
            memset(out, 0, (size_t)n * n * sizeof *out);
        else
            transpose_block(
                out, ub + ((size_t)c->ub_addr + t * c->tile_stride + ((size_t)y * c->in_w + (size_t)x) * c->mb) * n, n);
        if (++t == ct) { /* the next block's (ky, kx, t) */
            t = 0;
            if (++kx == c->k) {
                kx = 0;
                ky++;
            }
        }
    }
}

const uint16_t *ref_conv_rows8(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, uint16_t *scratch)
{
    static const uint16_t zero_rows[8 * 64];
    if (c->mb % 8 == 0 && m0 % 8 == 0 && n <= 64) { /* one pixel's samples b .. b + 7 */
        const unsigned long q = m0 / c->mb;
        const long pix = source_pixel(c, q / c->out_w, q % c->out_w);
        return pix < 0 ? zero_rows : ub + ((size_t)c->ub_addr + (size_t)pix * c->mb + m0 % c->mb) * n;
    }
    gather_rows(c, ub, n, m0, c->rows - m0 < 8 ? c->rows - m0 : 8, scratch);
    return scratch;
}

void ref_conv_gather(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out)
{
    if (dw_mode(c))
        gather_blocks(c, ub, n, m0, count, out);
    else
        gather_rows(c, ub, n, m0, count, out);
}
