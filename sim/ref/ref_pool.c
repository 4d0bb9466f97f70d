/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.5's POOL in the golden model (docs/isa.md, "POOL"): decoding, the
 * argument and range checks, and the four modes.
 *
 * The mb rows of one map pixel are contiguous, and so are their mb * n lanes:
 * a window's k x k pixels and its pooled pixel line up lane for lane (lane L is
 * lane L mod n of the pixel's row L div n). So each mode runs over whole pixels
 * of lanes, eight at a time (GCC vector types, AVX2 where the CPU has it), with
 * the lanes left over done one at a time by the scalar form, which is also
 * the definition the vector form is tested against (ref_pool_run_scalar). */
#include <string.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "lanes8.h"
#include "numerics_internal.h"
#include "ref_conv.h"

/* AVG's factor row laid out over lcm(n, 8) lanes, for n up to 64. */
#define REF_POOL_SCALE_LANES 512u

static unsigned get16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

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

unsigned ref_pool_ub_written(const ref_pool *c, unsigned long start[2], unsigned long count[2])
{
    pool_range rg[3];
    pool_ranges(c, rg);
    unsigned k = 0;
    /* dst, and MAX's argmax in aux: the forward modes' outputs; the gradients write ACC */
    for (int i = 1; i < 3; i++)
        if (!rg[i].wide && c->mode < NTPU_POOL_MODE_MAX_GRAD) {
            start[k] = rg[i].start;
            count[k++] = rg[i].count;
        }
    return k;
}

/* ---------------------------------------------------------------- geometry */

/* Where one POOL's lanes are. A pixel is `pix` lanes; map pixel (y, x) of the
 * forward source starts at `map + (y * in_w + x) * pix`, pooled pixel (py, px)
 * at `pooled + (py * ow + px) * pix`. */
typedef struct pool_geom {
    size_t pix, row;      /* lanes of a pixel, of a map row of pixels (in_w * pix) */
    unsigned long oh, ow; /* pooled pixels down and across */
    unsigned n, k;
    uint32_t scale[REF_POOL_SCALE_LANES]; /* AVG's factor, lane L at L mod lanes; lanes = lcm(n, 8) */
    unsigned scale_lanes;
} pool_geom;

static unsigned gcd(unsigned a, unsigned b)
{
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void geom_init(pool_geom *g, const ref_pool *c, const uint32_t *acc, unsigned n)
{
    g->n = n;
    g->k = c->k;
    g->pix = (size_t)c->mb * n;
    g->row = (size_t)c->in_w * g->pix;
    g->oh = c->in_h / c->k;
    g->ow = c->in_w / c->k;
    g->scale_lanes = n / gcd(n, 8) * 8;
    const int avg = c->mode == NTPU_POOL_MODE_AVG || c->mode == NTPU_POOL_MODE_AVG_GRAD;
    for (unsigned j = 0; j < g->scale_lanes; j++)
        g->scale[j] = avg ? acc[(size_t)c->aux * n + j % n] : 0u;
}

/* ---------------------------------------------------------------- one lane: the definition */

/* A bf16 operand's value for MAX's comparison: a subnormal reads as zero. */
static float bf16_operand(uint16_t h)
{
    return (h & 0x7F80u) ? ntpu_bf16_to_f32(h) : 0.0f;
}

static int bf16_is_nan(uint16_t h)
{
    return (h & 0x7FFFu) > 0x7F80u;
}

/* MAX or AVG of lane L of the window whose top-left pixel's lanes start at win. */
static void pool_lane(const ref_pool *c, const pool_geom *g, const uint16_t *win, size_t L, uint16_t *dst,
                      uint16_t *arg)
{
    uint16_t best = 0, idx = 0;
    uint32_t s = 0;
    for (unsigned wy = 0; wy < g->k; wy++)
        for (unsigned wx = 0; wx < g->k; wx++) {
            uint16_t v = win[wy * g->row + wx * g->pix + L];
            if (c->mode == NTPU_POOL_MODE_AVG) {
                s = ntpu_f32_add(s, (uint32_t)v << 16);
            } else if ((wy == 0 && wx == 0) || bf16_is_nan(v) || bf16_operand(v) > bf16_operand(best)) {
                best = v;
                idx = (uint16_t)(wy * g->k + wx);
            }
        }
    if (c->mode == NTPU_POOL_MODE_AVG) {
        dst[L] = ntpu_bf16_from_f32_bits(ntpu_f32_mul(s, g->scale[L % g->scale_lanes]));
    } else {
        dst[L] = best;
        arg[L] = idx;
    }
}

/* MAX_GRAD or AVG_GRAD of lane L: the window's pixels (top-left at win) from
 * the pooled gradient grad and argmax arg. */
static void unpool_lane(const ref_pool *c, const pool_geom *g, uint32_t *win, size_t L, const uint32_t *grad,
                        const uint16_t *arg)
{
    for (unsigned wy = 0; wy < g->k; wy++)
        for (unsigned wx = 0; wx < g->k; wx++) {
            uint32_t *d = win + wy * g->row + wx * g->pix + L;
            if (c->mode == NTPU_POOL_MODE_AVG_GRAD)
                *d = ntpu_f32_mul(grad[L], g->scale[L % g->scale_lanes]);
            else
                *d = arg[L] == wy * g->k + wx ? grad[L] : 0u;
        }
}

/* ---------------------------------------------------------------- eight lanes */

#ifdef NTPU_LANES8
/* pool_lane on lanes L .. L+7. */
LANES8_INLINE void pool8(const ref_pool *c, const pool_geom *g, const uint16_t *win, size_t L, uint16_t *dst,
                         uint16_t *arg)
{
    u32x8 best = {0}, best_val = {0}, idx = {0}, s = {0};
    for (unsigned wy = 0; wy < g->k; wy++)
        for (unsigned wx = 0; wx < g->k; wx++) {
            u32x8 v;
            load_bf16(&v, win + wy * g->row + wx * g->pix + L);
            if (c->mode == NTPU_POOL_MODE_AVG) {
                fadd8(&s, &v);
                continue;
            }
            /* operands compared flushed: a subnormal is zero, and its sign cannot matter to > */
            u32x8 val = v & (u32x8)((v & 0x7F800000u) != 0u);
            u32x8 take = (wy == 0 && wx == 0) ? ~(u32x8){0} : IS_NAN(v) | (u32x8)((f32x8)val > (f32x8)best_val);
            best = SELECT(take, v, best);
            best_val = SELECT(take, val, best_val);
            idx = SELECT(take, (u32x8){0} + wy * g->k + wx, idx);
        }
    if (c->mode == NTPU_POOL_MODE_AVG) {
        u32x8 scale, h;
        memcpy(&scale, g->scale + L % g->scale_lanes, sizeof scale);
        fmul8(&s, &s, &scale);
        bf16_round8(&h, &s);
        store_u16(dst + L, &h);
    } else {
        best >>= 16;
        store_u16(dst + L, &best);
        store_u16(arg + L, &idx);
    }
}

/* unpool_lane on lanes L .. L+7. */
LANES8_INLINE void unpool8(const ref_pool *c, const pool_geom *g, uint32_t *win, size_t L, const uint32_t *grad,
                           const uint16_t *arg)
{
    u32x8 gv, out = {0}, at = {0};
    memcpy(&gv, grad + L, sizeof gv);
    if (c->mode == NTPU_POOL_MODE_AVG_GRAD) {
        u32x8 scale;
        memcpy(&scale, g->scale + L % g->scale_lanes, sizeof scale);
        fmul8(&out, &gv, &scale);
    } else {
        u16x8 h;
        memcpy(&h, arg + L, sizeof h);
        at = __builtin_convertvector(h, u32x8);
    }
    for (unsigned wy = 0; wy < g->k; wy++)
        for (unsigned wx = 0; wx < g->k; wx++) {
            u32x8 d = out;
            if (c->mode != NTPU_POOL_MODE_AVG_GRAD)
                d = gv & (u32x8)(at == wy * g->k + wx);
            memcpy(win + wy * g->row + wx * g->pix + L, &d, sizeof d);
        }
}
#endif

/* ---------------------------------------------------------------- the command */

/* The forward modes on every pooled pixel; `vec`: eight lanes at a time. */
LANES8_INLINE void pool_all(const ref_pool *c, const pool_geom *g, uint16_t *ub, unsigned n, int vec)
{
    for (unsigned long py = 0; py < g->oh; py++)
        for (unsigned long px = 0; px < g->ow; px++) {
            const uint16_t *win = ub + (size_t)c->src * n + (py * g->k * g->row + px * g->k * g->pix);
            const size_t out = (size_t)(py * g->ow + px) * g->pix;
            uint16_t *dst = ub + (size_t)c->dst * n + out;
            uint16_t *arg = c->mode == NTPU_POOL_MODE_MAX ? ub + (size_t)c->aux * n + out : NULL;
            size_t L = 0;
#ifdef NTPU_LANES8
            for (; vec && L + 8 <= g->pix; L += 8)
                pool8(c, g, win, L, dst, arg);
#endif
            for (; L < g->pix; L++)
                pool_lane(c, g, win, L, dst, arg);
        }
}

/* The backward modes: every map pixel a window covers, then +0 in those none does. */
LANES8_INLINE void unpool_all(const ref_pool *c, const pool_geom *g, const uint16_t *ub, uint32_t *acc, unsigned n,
                              int vec)
{
    uint32_t *map = acc + (size_t)c->dst * n;
    for (unsigned long py = 0; py < g->oh; py++)
        for (unsigned long px = 0; px < g->ow; px++) {
            uint32_t *win = map + (py * g->k * g->row + px * g->k * g->pix);
            const size_t in = (size_t)(py * g->ow + px) * g->pix;
            const uint32_t *grad = acc + (size_t)c->src * n + in;
            const uint16_t *arg = c->mode == NTPU_POOL_MODE_MAX_GRAD ? ub + (size_t)c->aux * n + in : NULL;
            size_t L = 0;
#ifdef NTPU_LANES8
            for (; vec && L + 8 <= g->pix; L += 8)
                unpool8(c, g, win, L, grad, arg);
#endif
            for (; L < g->pix; L++)
                unpool_lane(c, g, win, L, grad, arg);
        }
    const size_t covered_w = g->ow * g->k * g->pix; /* lanes of a map row's whole windows */
    for (unsigned long y = 0; y < c->in_h; y++) {
        const size_t from = y < g->oh * g->k ? covered_w : 0;
        memset(map + y * g->row + from, 0, (g->row - from) * sizeof *map);
    }
}

LANES8_INLINE void run_modes(const ref_pool *c, const pool_geom *g, uint16_t *ub, uint32_t *acc, unsigned n, int vec)
{
    /* The ranges in one memory do not overlap (checked), so the order of the
     * writes cannot matter: the ISA's "every source row read first" holds. */
    if (c->mode < NTPU_POOL_MODE_MAX_GRAD)
        pool_all(c, g, ub, n, vec);
    else
        unpool_all(c, g, ub, acc, n, vec);
}

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx2"))) static void run_avx2(const ref_pool *c, const pool_geom *g, uint16_t *ub, uint32_t *acc,
                                                     unsigned n)
{
    run_modes(c, g, ub, acc, n, 1);
}
#endif

static void run_vec(const ref_pool *c, const pool_geom *g, uint16_t *ub, uint32_t *acc, unsigned n)
{
    run_modes(c, g, ub, acc, n, 1);
}

unsigned long ref_pool_run(const ref_pool *c, uint16_t *ub, uint32_t *acc, unsigned n)
{
    pool_geom g;
    geom_init(&g, c, acc, n);
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        run_avx2(c, &g, ub, acc, n);
        return map_rows(c);
    }
#endif
    run_vec(c, &g, ub, acc, n);
    return map_rows(c);
}

unsigned long ref_pool_run_scalar(const ref_pool *c, uint16_t *ub, uint32_t *acc, unsigned n)
{
    pool_geom g;
    geom_init(&g, c, acc, n);
    run_modes(c, &g, ub, acc, n, 0);
    return map_rows(c);
}
