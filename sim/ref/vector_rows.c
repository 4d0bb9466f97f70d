/* SPDX-License-Identifier: Apache-2.0 */
/* The golden model's ACT, RELU_GRAD, COLSUM and OPTIM over many rows at once: the
 * lanes of consecutive rows are contiguous, so one call runs a whole command
 * eight lanes at a time (lanes8.h; AVX2 where the CPU has it), the lanes left
 * over by the scalar functions of numerics.c, which define the results. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lanes8.h"
#include "ntpu/numerics.h"
#include "numerics_internal.h"

/* A per-lane row (n lanes, n <= 64) repeated over lcm(n, 8) lanes, so that
 * the block of eight lanes from i (a multiple of 8) finds its values at
 * i % lanes, contiguous. */
typedef struct lane_row {
    uint32_t v[512];
    unsigned lanes;
} lane_row;

static void lane_row_fill(lane_row *t, const uint32_t *row, unsigned n)
{
    unsigned a = n, b = 8;
    while (b) {
        unsigned r = a % b;
        a = b;
        b = r;
    }
    t->lanes = n / a * 8;
    for (unsigned j = 0; j < t->lanes; j++)
        t->v[j] = row[j % n];
}

/* One lane of ACT's fp32 part or of RELU_GRAD's select, then the output. */
static void out_lane(uint32_t x, size_t i, uint32_t *dst32, uint16_t *dst16)
{
    if (dst32)
        dst32[i] = x;
    else
        dst16[i] = ntpu_bf16_from_f32_bits(x);
}

#ifdef NTPU_LANES8
LANES8_INLINE void out8(const u32x8 *x, size_t i, uint32_t *dst32, uint16_t *dst16)
{
    if (dst32) {
        memcpy(dst32 + i, x, sizeof *x);
    } else {
        u32x8 h;
        bf16_round8(&h, x);
        store_u16(dst16 + i, &h);
    }
}

LANES8_INLINE size_t act8(const uint32_t *src, size_t count, const lane_row *bias, int relu, uint32_t *dst32,
                          uint16_t *dst16)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        u32x8 x;
        memcpy(&x, src + i, sizeof x);
        if (bias) {
            u32x8 b;
            memcpy(&b, bias->v + i % bias->lanes, sizeof b);
            fadd8(&x, &b);
        }
        if (relu)
            relu8(&x);
        out8(&x, i, dst32, dst16);
    }
    return i;
}

LANES8_INLINE size_t relu_grad8(const uint32_t *src, const uint16_t *mask, size_t count, uint32_t *dst32,
                                uint16_t *dst16)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        u32x8 x, m, keep;
        u16x8 h;
        memcpy(&x, src + i, sizeof x);
        memcpy(&h, mask + i, sizeof h);
        m = __builtin_convertvector(h, u32x8);
        bf16_positive8(&keep, &m);
        x &= keep;
        out8(&x, i, dst32, dst16);
    }
    return i;
}

/* COLSUM's chains, eight columns at a time, rows ascending; n a multiple of 8. */
LANES8_INLINE void colsum8(uint32_t *s, const uint32_t *x, size_t rows, unsigned n)
{
    for (unsigned j = 0; j < n; j += 8) {
        u32x8 acc, v;
        memcpy(&acc, s + j, sizeof acc);
        for (size_t r = 0; r < rows; r++) {
            memcpy(&v, x + r * n + j, sizeof v);
            fadd8(&acc, &v);
        }
        memcpy(s + j, &acc, sizeof acc);
    }
}

/* OPTIM's chain on eight lanes (ntpu_optim_f32's steps); k holds lr, wd, mu
 * laid out by lane_row_fill. */
LANES8_INLINE size_t optim8(uint32_t *p, const uint32_t *g, uint32_t *s, size_t count, const lane_row k[3])
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const unsigned at = (unsigned)(i % k[0].lanes);
        u32x8 pv, t, lr, wd, mu, prod;
        memcpy(&pv, p + i, sizeof pv);
        memcpy(&t, g + i, sizeof t);
        memcpy(&lr, k[0].v + at, sizeof lr);
        memcpy(&wd, k[1].v + at, sizeof wd);
        fmul8(&prod, &wd, &pv);
        fadd8(&t, &prod);
        if (s) {
            u32x8 sv;
            memcpy(&sv, s + i, sizeof sv);
            memcpy(&mu, k[2].v + at, sizeof mu);
            fmul8(&sv, &mu, &sv);
            fadd8(&sv, &t);
            memcpy(s + i, &sv, sizeof sv);
            t = sv;
        }
        fmul8(&prod, &lr, &t);
        prod ^= 0x80000000u;
        fadd8(&pv, &prod);
        memcpy(p + i, &pv, sizeof pv);
    }
    return i;
}

#if defined(__x86_64__)
#define VEC_TARGET __attribute__((target("avx2")))
#define VEC_AVAILABLE() __builtin_cpu_supports("avx2")
#else
#define VEC_TARGET
#define VEC_AVAILABLE() 1
#endif

VEC_TARGET static size_t act8_vec(const uint32_t *src, size_t count, const lane_row *bias, int relu, uint32_t *dst32,
                                  uint16_t *dst16)
{
    return act8(src, count, bias, relu, dst32, dst16);
}

static size_t act8_base(const uint32_t *src, size_t count, const lane_row *bias, int relu, uint32_t *dst32,
                        uint16_t *dst16)
{
    return act8(src, count, bias, relu, dst32, dst16);
}

VEC_TARGET static size_t relu_grad8_vec(const uint32_t *src, const uint16_t *mask, size_t count, uint32_t *dst32,
                                        uint16_t *dst16)
{
    return relu_grad8(src, mask, count, dst32, dst16);
}

static size_t relu_grad8_base(const uint32_t *src, const uint16_t *mask, size_t count, uint32_t *dst32, uint16_t *dst16)
{
    return relu_grad8(src, mask, count, dst32, dst16);
}

VEC_TARGET static void colsum8_vec(uint32_t *s, const uint32_t *x, size_t rows, unsigned n)
{
    colsum8(s, x, rows, n);
}

static void colsum8_base(uint32_t *s, const uint32_t *x, size_t rows, unsigned n)
{
    colsum8(s, x, rows, n);
}

VEC_TARGET static size_t optim8_vec(uint32_t *p, const uint32_t *g, uint32_t *s, size_t count, const lane_row k[3])
{
    return optim8(p, g, s, count, k);
}

static size_t optim8_base(uint32_t *p, const uint32_t *g, uint32_t *s, size_t count, const lane_row k[3])
{
    return optim8(p, g, s, count, k);
}
#endif

void ntpu_act_f32_lanes(const uint32_t *src, size_t count, unsigned n, const uint32_t *bias, int relu, uint32_t *dst32,
                        uint16_t *dst16)
{
    size_t i = 0;
#ifdef NTPU_LANES8
    if (count >= 8) {
        lane_row b;
        if (bias)
            lane_row_fill(&b, bias, n);
        i = VEC_AVAILABLE() ? act8_vec(src, count, bias ? &b : NULL, relu, dst32, dst16)
                            : act8_base(src, count, bias ? &b : NULL, relu, dst32, dst16);
    }
#endif
    for (; i < count; i++) {
        uint32_t x = src[i];
        if (bias)
            x = ntpu_f32_add(x, bias[i % n]);
        out_lane(relu ? ntpu_relu_f32(x) : x, i, dst32, dst16);
    }
}

void ntpu_relu_grad_lanes(const uint32_t *src, const uint16_t *mask, size_t count, uint32_t *dst32, uint16_t *dst16)
{
    size_t i = 0;
#ifdef NTPU_LANES8
    i = VEC_AVAILABLE() ? relu_grad8_vec(src, mask, count, dst32, dst16)
                        : relu_grad8_base(src, mask, count, dst32, dst16);
#endif
    for (; i < count; i++)
        out_lane(ntpu_bf16_positive(mask[i]) ? src[i] : 0u, i, dst32, dst16);
}

void ntpu_colsum_f32_rows(uint32_t *s, const uint32_t *x, size_t rows, unsigned n)
{
#ifdef NTPU_LANES8
    if (n % 8 == 0) {
        if (VEC_AVAILABLE())
            colsum8_vec(s, x, rows, n);
        else
            colsum8_base(s, x, rows, n);
        return;
    }
#endif
    for (size_t r = 0; r < rows; r++)
        for (unsigned j = 0; j < n; j++)
            s[j] = ntpu_f32_add(s[j], x[r * n + j]);
}

void ntpu_optim_f32_lanes(uint32_t *p, const uint32_t *g, uint32_t *s, size_t count, unsigned n, const uint32_t *lr,
                          const uint32_t *wd, const uint32_t *mu)
{
    size_t i = 0;
#ifdef NTPU_LANES8
    if (count >= 8) {
        lane_row k[3];
        lane_row_fill(&k[0], lr, n);
        lane_row_fill(&k[1], wd, n);
        lane_row_fill(&k[2], mu, n);
        i = VEC_AVAILABLE() ? optim8_vec(p, g, s, count, k) : optim8_base(p, g, s, count, k);
    }
#endif
    for (; i < count; i++)
        ntpu_optim_f32(&p[i], g[i], s ? &s[i] : NULL, lr[i % n], wd[i % n], mu[i % n]);
}
