/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.5 in the golden model and the library (docs/isa.md, "Version 1.5"):
 * every MATMUL CONV mode and every POOL mode against scalar loops written here
 * from the spec (bf16 and int8, padding, strides, odd sizes, blocks outside the
 * map), a tiny conv layer against the stage-1 chain order, the errors in their
 * order, the feature gates and the program recorder. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/ntpu.h"
#include "ntpu/numerics.h"
#include "ntpu/program.h"
#include "ntpu/protocol.h"
#include "ntpu_ref.h"

static uint64_t rng = 0x3C6EF372FE94F82Bull;
static uint32_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A bf16 of moderate size, random sign; 1 in 8 a zero. */
static uint16_t rnd_bf16(void)
{
    if (rnd() % 8 == 0)
        return 0;
    return (uint16_t)((rnd() & 0x807Fu) | (uint32_t)(120 + rnd() % 12) << 7);
}

/* A lane value for dtype: a bf16, or an int8 in the low byte (the high byte is ignored: random). */
static uint16_t rnd_lane(ntpu_dtype dt)
{
    return dt == NTPU_DTYPE_BF16 ? rnd_bf16() : (uint16_t)rnd();
}

static ntpu_device *open_dev(const char *spec)
{
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open(spec, &d), NTPU_OK, "%s: %s", spec, ntpu_last_error(d));
    return d;
}

static unsigned dev_n(ntpu_device *d)
{
    ntpu_info in;
    cr_assert_eq(ntpu_get_info(d, &in), NTPU_OK);
    return in.rows;
}

static void *alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    cr_assert(p);
    return p;
}

/* One array row through the scalar MAC: acc[c] chains a[i] * w[i][c], i ascending. */
static void mac_row(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, ntpu_dtype dt)
{
    for (unsigned c = 0; c < n; c++)
        for (unsigned i = 0; i < n; i++)
            acc[c] = dt == NTPU_DTYPE_BF16 ? ntpu_mac_bf16(acc[c], a[i], w[i * n + c])
                                           : (uint32_t)ntpu_mac_int8((int32_t)acc[c], (int8_t)(a[i] & 0xFF),
                                                                     (int8_t)(w[i * n + c] & 0xFF));
}

/* ---------------------------------------------------------------- MATMUL CONV */

/* The activation row m of a CONV MATMUL, from the spec's pseudo-code: into a (n lanes). */
static void spec_row(const ntpu_conv_addr *c, const uint16_t *ub, unsigned n, unsigned m, uint16_t *a)
{
    memset(a, 0, n * sizeof *a);
    if (c->mode == NTPU_CONV_WEIGHT_GRAD) {
        unsigned ct = c->rows / (n * c->k * c->k), j = m / n, r = m % n;
        unsigned t = j % ct, kx = (j / ct) % c->k, ky = j / (ct * c->k);
        long y = c->dy + (long)ky, x = c->dx + (long)kx;
        if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
            return;
        size_t base = c->ub_addr + (size_t)t * c->tile_stride + ((size_t)y * c->in_w + (size_t)x) * c->mb;
        for (unsigned i = 0; i < n; i++)
            a[i] = ub[(base + i) * n + r];
        return;
    }
    unsigned b = m % c->mb, q = m / c->mb, ox = q % c->out_w, oy = q / c->out_w;
    long y, x;
    if (c->mode == NTPU_CONV_TRANSPOSED) {
        long ys = (long)oy + c->dy, xs = (long)ox + c->dx, s = (long)c->stride;
        if (ys < 0 || xs < 0 || ys % s || xs % s)
            return;
        y = ys / s;
        x = xs / s;
    } else {
        y = (long)oy * c->stride + c->dy;
        x = (long)ox * c->stride + c->dx;
    }
    if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
        return;
    memcpy(a, ub + (c->ub_addr + ((size_t)y * c->in_w + (size_t)x) * c->mb + b) * n, n * sizeof *a);
}

/* Runs *c on the device with random UB (ub_rows rows), weights and starting ACC, and checks every
 * result row against the spec's loop; accumulate alternates. */
static void check_conv(ntpu_device *d, ntpu_dtype dt, const ntpu_conv_addr *c, unsigned ub_rows, int accumulate)
{
    const unsigned n = dev_n(d);
    uint16_t *ub = alloc((size_t)ub_rows * n * 2), w[64 * 64], a[64];
    uint32_t *acc = alloc((size_t)c->rows * n * 4), *got = alloc((size_t)c->rows * n * 4);
    for (size_t i = 0; i < (size_t)ub_rows * n; i++)
        ub[i] = rnd_lane(dt);
    for (unsigned i = 0; i < n * n; i++)
        w[i] = rnd_lane(dt);
    for (size_t i = 0; i < (size_t)c->rows * n; i++)
        acc[i] = accumulate ? (dt == NTPU_DTYPE_BF16 ? (uint32_t)rnd_bf16() << 16 : rnd()) : rnd();
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_UB, 0, ub_rows, ub), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_WB, 0, n, w), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_ACC, c->acc_addr, c->rows, acc), NTPU_OK);
    cr_assert_eq(ntpu_load_w(d, 0, 0), NTPU_OK);
    cr_assert_eq(ntpu_matmul_tile_conv(d, dt, c, accumulate), NTPU_OK, "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, c->acc_addr, c->rows, got), NTPU_OK, "%s", ntpu_last_error(d));
    for (unsigned m = 0; m < c->rows; m++) {
        uint32_t *e = acc + (size_t)m * n;
        if (!accumulate)
            memset(e, 0, n * sizeof *e);
        spec_row(c, ub, n, m, a);
        mac_row(e, a, w, n, dt);
        for (unsigned j = 0; j < n; j++)
            cr_assert_eq(got[(size_t)m * n + j], e[j], "mode %d dtype %d row %u lane %u: 0x%08x, spec 0x%08x",
                         (int)c->mode, (int)dt, m, j, got[(size_t)m * n + j], e[j]);
    }
    free(ub);
    free(acc);
    free(got);
}

Test(ref_conv, forward_padding_and_stride)
{
    ntpu_device *d = open_dev("ref");
    for (int dt = 0; dt < 2; dt++)
        for (unsigned s = 1; s <= 2; s++)
            for (unsigned tap = 0; tap < 9; tap++) {
                /* 5 x 6 map, 3 samples, K 3, P 1: OH = (5 + 2 - 3) / s + 1 */
                unsigned oh = 4 / s + 1, ow = 5 / s + 1;
                ntpu_conv_addr c = {.mode = NTPU_CONV_FORWARD,
                                    .ub_addr = 7,
                                    .acc_addr = 3,
                                    .in_h = 5,
                                    .in_w = 6,
                                    .mb = 3,
                                    .out_w = ow,
                                    .stride = s,
                                    .dy = (int)(tap / 3) - 1,
                                    .dx = (int)(tap % 3) - 1};
                c.rows = oh * ow * 3 - (tap == 4); /* once, a stream that stops inside a pixel */
                check_conv(d, (ntpu_dtype)dt, &c, 7 + 5 * 6 * 3, tap & 1);
            }
    ntpu_close(d);
}

Test(ref_conv, transposed_stride_2_odd_sizes)
{
    ntpu_device *d = open_dev("ref");
    for (int dt = 0; dt < 2; dt++)
        for (unsigned tap = 0; tap < 9; tap++) {
            /* dY 3 x 4 (in), dX 7 x 9 (out, odd), K 3, P 1, S 2: dy = P - ky */
            ntpu_conv_addr c = {.mode = NTPU_CONV_TRANSPOSED,
                                .ub_addr = 0,
                                .acc_addr = 11,
                                .in_h = 3,
                                .in_w = 4,
                                .mb = 2,
                                .out_w = 9,
                                .stride = 2,
                                .dy = 1 - (int)(tap / 3),
                                .dx = 1 - (int)(tap % 3)};
            c.rows = 7 * 9 * 2;
            check_conv(d, (ntpu_dtype)dt, &c, 3 * 4 * 2 + 5, tap & 1);
        }
    ntpu_close(d);
}

Test(ref_conv, weight_gradient_slices)
{
    ntpu_device *d = open_dev("ref");
    const unsigned n = dev_n(d), map = 5 * 4 * 2 * n; /* 5 x 4 pixels, mb = 2N */
    /* output pixels' offsets (oy*S - P, ox*S - P) at the corners and inside: blocks outside the map */
    const int off[][2] = {{-1, -1}, {0, 2}, {3, -1}, {3, 2}, {-2, 4}, {1, 1}};
    for (int dt = 0; dt < 2; dt++)
        for (unsigned i = 0; i < sizeof off / sizeof off[0]; i++) {
            ntpu_conv_addr c = {.mode = NTPU_CONV_WEIGHT_GRAD,
                                .ub_addr = 1 + (i % 2) * n,
                                .acc_addr = 5,
                                .in_h = 5,
                                .in_w = 4,
                                .mb = 2 * n,
                                .k = 3,
                                .tile_stride = map + 3,
                                .dy = off[i][0],
                                .dx = off[i][1]};
            c.rows = 2 * n * 9; /* CT = 2 channel tiles */
            check_conv(d, (ntpu_dtype)dt, &c, 1 + 2 * (map + 3), (int)(i & 1));
        }
    /* dy past i8: a tall map, the window at row 130 */
    ntpu_conv_addr c = {.mode = NTPU_CONV_WEIGHT_GRAD, .in_h = 140, .in_w = 1, .mb = n, .k = 2, .dy = 130, .dx = -1};
    c.rows = n * 4;
    check_conv(d, NTPU_DTYPE_BF16, &c, 140 * n, 0);
    ntpu_close(d);
}

/* A whole conv layer forward (C_in = 2N, C_out = N, K 3, P 1, S 1, 5 x 5, a micro-batch of 8):
 * one accumulating CONV MATMUL per tap and channel tile, in the order (ky, kx, t), gives the
 * stage-1 contract's chain over (ky, kx, ci), ci innermost, padding terms skipped. */
Test(ref_conv, conv_layer_is_the_stage1_chain)
{
    ntpu_device *d = open_dev("ref");
    const unsigned n = dev_n(d), cin = 2 * n, hw = 5, mb = 8, k = 3, px = hw * hw * mb;
    uint16_t *x = alloc((size_t)2 * px * n * 2), *wt = alloc((size_t)k * k * 2 * n * n * 2);
    uint32_t *z = alloc((size_t)px * n * 4);
    float *w = alloc((size_t)n * cin * k * k * sizeof *w); /* PyTorch's [co][ci][ky][kx] */
    for (size_t i = 0; i < (size_t)2 * px * n; i++)
        x[i] = rnd_bf16();
    for (size_t i = 0; i < (size_t)n * cin * k * k; i++)
        w[i] = (float)((int)(rnd() % 2001) - 1000) / 1500.0f;
    /* UB: tile t of the map at t * px, rows (y * W + x) * mb + b; WB: tile (ky, kx, t) W[i][n] = w[n][t*N+i][ky][kx] */
    for (unsigned tap = 0; tap < k * k; tap++)
        for (unsigned t = 0; t < 2; t++)
            for (unsigned i = 0; i < n; i++)
                for (unsigned co = 0; co < n; co++)
                    wt[((size_t)(tap * 2 + t) * n + i) * n + co] =
                        ntpu_bf16_from_f32(w[((size_t)co * cin + t * n + i) * k * k + tap]);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_UB, 0, 2 * px, x), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_WB, 0, k * k * 2 * n, wt), NTPU_OK);
    for (unsigned tap = 0; tap < k * k; tap++)
        for (unsigned t = 0; t < 2; t++) {
            ntpu_conv_addr c = {.mode = NTPU_CONV_FORWARD,
                                .ub_addr = t * px,
                                .rows = px,
                                .in_h = hw,
                                .in_w = hw,
                                .mb = mb,
                                .out_w = hw,
                                .stride = 1,
                                .dy = (int)(tap / k) - 1,
                                .dx = (int)(tap % k) - 1};
            cr_assert_eq(ntpu_load_w(d, (tap * 2 + t) * n, 0), NTPU_OK);
            cr_assert_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, tap + t > 0), NTPU_OK);
        }
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, 0, px, z), NTPU_OK);
    for (unsigned b = 0; b < mb; b++)
        for (unsigned oy = 0; oy < hw; oy++)
            for (unsigned ox = 0; ox < hw; ox++)
                for (unsigned co = 0; co < n; co++) {
                    uint32_t s = 0; /* +0 */
                    for (unsigned ky = 0; ky < k; ky++)
                        for (unsigned kx = 0; kx < k; kx++)
                            for (unsigned ci = 0; ci < cin; ci++) {
                                int iy = (int)(oy + ky) - 1, ix = (int)(ox + kx) - 1;
                                if (iy < 0 || ix < 0 || iy >= (int)hw || ix >= (int)hw)
                                    continue; /* padding: a no-op term */
                                uint16_t xv = x[((size_t)(ci / n) * px + ((size_t)iy * hw + ix) * mb + b) * n + ci % n];
                                s = ntpu_mac_bf16(s, xv,
                                                  ntpu_bf16_from_f32(w[((size_t)co * cin + ci) * k * k + ky * k + kx]));
                            }
                    uint32_t got = z[(((size_t)oy * hw + ox) * mb + b) * n + co];
                    cr_assert_eq(got, s, "b %u (%u, %u) co %u: 0x%08x, chain 0x%08x", b, oy, ox, co, got, s);
                }
    free(x);
    free(wt);
    free(z);
    free(w);
    ntpu_close(d);
}

/* ---------------------------------------------------------------- POOL */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float operand(uint16_t h) /* MAX's comparison: a subnormal is zero */
{
    return (h & 0x7F80u) ? ntpu_bf16_to_f32(h) : 0.0f;
}

static int is_nan(uint16_t h)
{
    return (h & 0x7FFFu) > 0x7F80u;
}

/* bf16 values that make MAX interesting: ties, NaNs, signed zeros, subnormals, infinities. */
static uint16_t pool_value(void)
{
    static const uint16_t special[] = {0x3F80, 0x3F80, 0x0000, 0x8000, 0x0001, 0x8001, 0x7FC0,
                                       0xFFC1, 0x7F80, 0xFF80, 0x4000, 0xC000, 0x7F81};
    return rnd() % 3 ? special[rnd() % (sizeof special / sizeof special[0])] : rnd_bf16();
}

Test(ref_conv, pool_every_mode)
{
    ntpu_device *d = open_dev("ref");
    const unsigned n = dev_n(d);
    for (unsigned k = 1; k <= 3; k++) {
        const unsigned ih = 7, iw = 5, mb = 3, oh = ih / k, ow = iw / k, map = ih * iw * mb, pooled = oh * ow * mb;
        uint16_t *x = alloc((size_t)map * n * 2), *y = alloc((size_t)pooled * n * 2),
                 *idx = alloc((size_t)pooled * n * 2);
        uint32_t *g = alloc((size_t)pooled * n * 4), *dx = alloc((size_t)map * n * 4), r[64];
        for (size_t i = 0; i < (size_t)map * n; i++)
            x[i] = pool_value();
        for (size_t i = 0; i < (size_t)pooled * n; i++)
            g[i] = (uint32_t)rnd_bf16() << 16 | (rnd() & 0xFFFF);
        for (unsigned j = 0; j < n; j++)
            r[j] = f32_bits(1.0f / (float)(k * k)); /* the host writes fp32(1/k^2) */
        const uint32_t X = 10, Y = X + map, I = Y + pooled, G = 100, R = 50, DX = G + pooled;
        cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_UB, X, map, x), NTPU_OK);
        cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_ACC, G, pooled, g), NTPU_OK);
        cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_ACC, R, 1, r), NTPU_OK);
        for (unsigned mode = 0; mode < 4; mode++) {
            const int grad = mode >= NTPU_POOL_MODE_MAX_GRAD, avg = mode & 1;
            /* dst filled with garbage first: every row must be written */
            uint32_t *junk = alloc((size_t)map * n * 4);
            memset(junk, 0xA5, (size_t)map * n * 4);
            cr_assert_eq(
                ntpu_write_rows(d, grad ? NTPU_MEM_ACC : NTPU_MEM_UB, grad ? DX : Y, grad ? map : pooled, junk),
                NTPU_OK);
            free(junk);
            cr_assert_eq(ntpu_vec_pool(d, mode, grad ? G : X, grad ? DX : Y, avg ? R : I, ih, iw, mb, k), NTPU_OK, "%s",
                         ntpu_last_error(d));
            if (!grad) {
                cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_UB, Y, pooled, y), NTPU_OK);
                if (!avg)
                    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_UB, I, pooled, idx), NTPU_OK);
            } else {
                cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, DX, map, dx), NTPU_OK);
            }
            for (unsigned py = 0; py < oh && !grad; py++)
                for (unsigned px = 0; px < ow; px++)
                    for (unsigned b = 0; b < mb; b++)
                        for (unsigned j = 0; j < n; j++) {
                            size_t pr = ((size_t)(py * ow + px) * mb + b) * n + j;
                            uint16_t best = 0, bi = 0;
                            uint32_t s = 0;
                            for (unsigned wy = 0; wy < k; wy++)
                                for (unsigned wx = 0; wx < k; wx++) {
                                    uint16_t v = x[((((size_t)py * k + wy) * iw + px * k + wx) * mb + b) * n + j];
                                    s = ntpu_f32_add(s, (uint32_t)v << 16);
                                    if ((wy == 0 && wx == 0) || is_nan(v) || operand(v) > operand(best)) {
                                        best = v;
                                        bi = (uint16_t)(wy * k + wx);
                                    }
                                }
                            if (avg) {
                                uint16_t e = ntpu_bf16_from_f32_bits(ntpu_f32_mul(s, r[j]));
                                cr_assert_eq(y[pr], e, "AVG k %u row %zu: 0x%04x, spec 0x%04x", k, pr / n, y[pr], e);
                            } else {
                                cr_assert_eq(y[pr], best, "MAX k %u row %zu lane %u", k, pr / n, j);
                                cr_assert_eq(idx[pr], bi, "argmax k %u row %zu lane %u", k, pr / n, j);
                            }
                        }
            for (unsigned yy = 0; yy < ih && grad; yy++)
                for (unsigned xx = 0; xx < iw; xx++)
                    for (unsigned b = 0; b < mb; b++)
                        for (unsigned j = 0; j < n; j++) {
                            uint32_t e = 0;
                            if (yy < oh * k && xx < ow * k) {
                                size_t pr = ((size_t)((yy / k) * ow + xx / k) * mb + b) * n + j;
                                if (avg)
                                    e = ntpu_f32_mul(g[pr], r[j]);
                                else if (idx[pr] == (yy % k) * k + xx % k)
                                    e = g[pr];
                            }
                            uint32_t got = dx[(((size_t)yy * iw + xx) * mb + b) * n + j];
                            cr_assert_eq(got, e, "mode %u k %u (%u, %u) b %u lane %u: 0x%08x, spec 0x%08x", mode, k, yy,
                                         xx, b, j, got, e);
                        }
        }
        free(x);
        free(y);
        free(idx);
        free(g);
        free(dx);
    }
    ntpu_close(d);
}

/* ---------------------------------------------------------------- errors, raw frames */

static uint8_t seq_next;

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* One command frame to the model; returns the reply's status. */
static uint8_t run(ntpu_ref *r, const uint8_t *payload, size_t len)
{
    static uint8_t f[256], in[256];
    f[0] = NTPU_SOF_CMD;
    f[1] = seq_next++;
    put16(f + 2, (unsigned)len);
    memcpy(f + 4, payload, len);
    uint32_t crc = (uint32_t)crc32(0L, f + 1, (uInt)(3 + len));
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(crc >> (8 * i));
    ntpu_ref_write(r, f, len + 8);
    size_t n = ntpu_ref_read(r, in, sizeof in);
    cr_assert_geq(n, 9, "a reply");
    return in[4];
}

/* A model of N = 8 with 4096 UB and 2048 ACC rows; options as ntpu_ref_config's. */
static ntpu_ref *model(unsigned no_vector, unsigned no_transpose_a, unsigned no_conv, unsigned no_pool)
{
    ntpu_ref_config c = ntpu_ref_default_config();
    c.n = 8;
    c.ub_rows = 4096;
    c.acc_rows = 2048;
    c.no_vector = no_vector;
    c.no_transpose_a = no_transpose_a;
    c.no_conv = no_conv;
    c.no_pool = no_pool;
    seq_next = 0;
    ntpu_ref *r = ntpu_ref_new(&c);
    cr_assert(r);
    return r;
}

/* A valid forward CONV MATMUL: a 4 x 4 map of 8 samples at ub, 3 x 3 taps. */
static void conv_fwd(uint8_t *c, unsigned flags)
{
    memset(c, 0, NTPU_LEN_MATMUL_CONV_DW);
    c[0] = NTPU_OP_MATMUL;
    c[1] = (uint8_t)flags;
    put16(c + 2, 16);
    put16(c + 4, 32);
    put16(c + 6, 4 * 4 * 8);
    c[8] = 4, c[9] = 4, c[10] = 4, c[11] = 8, c[12] = 1, c[13] = 0xFF, c[14] = 1;
}

/* A valid weight-gradient CONV MATMUL: 2 tiles of a 4 x 4 map, k 3. */
static void conv_dw(uint8_t *c, unsigned flags)
{
    memset(c, 0, NTPU_LEN_MATMUL_CONV_DW);
    c[0] = NTPU_OP_MATMUL;
    c[1] = (uint8_t)flags;
    put16(c + 2, 16);
    put16(c + 4, 32);
    put16(c + 6, 2 * 8 * 9);
    put16(c + 8, 4 * 4 * 8);
    c[10] = 4, c[11] = 4, c[12] = 8, c[13] = 3;
    put16(c + 14, 0xFFFF);
    put16(c + 16, 2);
}

Test(ref_conv, matmul_len_for_every_flag_combination)
{
    ntpu_ref *r = model(0, 0, 0, 0);
    uint8_t c[NTPU_LEN_MATMUL_CONV_DW + 2] = {0};
    for (unsigned f = 0; f < 32; f++) {
        const int conv = f & NTPU_MATMUL_CONV, ta = f & NTPU_MATMUL_TRANSPOSE_A, ct = f & NTPU_MATMUL_CONV_T;
        size_t want = conv ? (ta ? 18 : 15) : (ta ? 10 : 8);
        if (conv && ta)
            conv_dw(c, f);
        else if (conv)
            conv_fwd(c, f);
        else {
            memset(c, 0, sizeof c);
            c[0] = NTPU_OP_MATMUL, c[1] = (uint8_t)f;
            put16(c + 6, 8);
        }
        for (size_t len = 1; len <= sizeof c; len++) {
            uint8_t st = run(r, c, len);
            uint8_t exp = len != want                   ? NTPU_DEV_ERR_LENGTH
                          : (ct && !conv) || (ct && ta) ? NTPU_DEV_ERR_ARG
                                                        : NTPU_DEV_OK;
            cr_assert_eq(st, exp, "flags 0x%02x LEN %zu: %u, expected %u", f, len, st, exp);
        }
    }
    ntpu_ref_free(r);
}

Test(ref_conv, matmul_conv_errors_in_order)
{
    ntpu_ref *r = model(0, 0, 0, 0);
    uint8_t c[NTPU_LEN_MATMUL_CONV_DW];
    const unsigned bf = NTPU_MATMUL_BF16 | NTPU_MATMUL_CONV;
    for (unsigned field = 8; field <= 12; field++) { /* in_h, in_w, out_w, mb, stride: 0 is ERR_ARG */
        conv_fwd(c, bf);
        c[field] = 0;
        cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_ARG, "forward field %u", field);
        conv_fwd(c, bf | NTPU_MATMUL_CONV_T);
        c[field] = 0;
        put16(c + 2, 0xFFFF); /* also out of range: ERR_ARG comes first */
        cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_ARG, "transposed field %u", field);
    }
    for (unsigned field = 10; field <= 13; field++) { /* in_h, in_w, mb, k */
        conv_dw(c, bf | NTPU_MATMUL_TRANSPOSE_A);
        c[field] = 0;
        cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_ARG, "weight-gradient field %u", field);
    }
    conv_dw(c, bf | NTPU_MATMUL_TRANSPOSE_A);
    put16(c + 6, 2 * 8 * 9 + 8); /* not a multiple of N*k*k, though one of N */
    cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_ARG);
    put16(c + 6, 0); /* rows 0: the empty range, ub_addr <= ub_rows */
    cr_expect_eq(run(r, c, 18), NTPU_DEV_OK);
    conv_dw(c, bf | NTPU_MATMUL_CONV_T | NTPU_MATMUL_TRANSPOSE_A);
    cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_ARG, "CONV_T with TRANSPOSE_A");
    conv_fwd(c, bf | 0x20);
    cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_ARG, "reserved bit 5");

    /* ranges, exactly: the whole input map in UB, rows in ACC */
    conv_fwd(c, bf);
    put16(c + 2, 4096 - 4 * 4 * 8);
    cr_expect_eq(run(r, c, 15), NTPU_DEV_OK, "the map ends at the last UB row");
    put16(c + 2, 4096 - 4 * 4 * 8 + 1);
    cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_RANGE);
    conv_fwd(c, bf);
    c[8] = c[9] = c[11] = 255; /* 255*255*255 rows: far past any UB, no 16-bit wrap */
    cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_RANGE);
    conv_fwd(c, bf);
    put16(c + 4, 2048 - 4 * 4 * 8 + 1);
    cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_RANGE, "ACC");
    /* weight gradient: ub + (CT-1)*tile_stride + (in_h*in_w - 1)*mb + N */
    const unsigned end = 16 + 128 + 15 * 8 + 8;
    conv_dw(c, bf | NTPU_MATMUL_TRANSPOSE_A);
    put16(c + 2, 16 + 4096 - end);
    cr_expect_eq(run(r, c, 18), NTPU_DEV_OK);
    put16(c + 2, 16 + 4096 - end + 1);
    cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_RANGE);
    conv_dw(c, bf | NTPU_MATMUL_TRANSPOSE_A);
    put16(c + 8, 0xFFFF);
    cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_RANGE, "tile_stride: no wrap");
    ntpu_ref_free(r);
}

/* Without CONV, bits 3 and 4 are reserved: the length still follows them, then ERR_ARG; without
 * TRANSPOSE_A the weight-gradient mode is refused the same way. */
Test(ref_conv, matmul_without_the_features)
{
    uint8_t c[NTPU_LEN_MATMUL_CONV_DW];
    ntpu_ref *r = model(0, 0, 1, 0);
    uint8_t id = NTPU_OP_INFO;
    run(r, &id, 1);
    conv_fwd(c, NTPU_MATMUL_CONV);
    cr_expect_eq(run(r, c, 8), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(run(r, c, 15), NTPU_DEV_ERR_ARG);
    conv_fwd(c, NTPU_MATMUL_CONV_T);
    cr_expect_eq(run(r, c, 8), NTPU_DEV_ERR_ARG);
    conv_dw(c, NTPU_MATMUL_CONV | NTPU_MATMUL_TRANSPOSE_A);
    cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_ARG);
    ntpu_ref_free(r);
    r = model(0, 1, 0, 0);
    conv_dw(c, NTPU_MATMUL_CONV | NTPU_MATMUL_TRANSPOSE_A);
    cr_expect_eq(run(r, c, 10), NTPU_DEV_ERR_LENGTH);
    cr_expect_eq(run(r, c, 18), NTPU_DEV_ERR_ARG);
    conv_fwd(c, NTPU_MATMUL_CONV);
    cr_expect_eq(run(r, c, 15), NTPU_DEV_OK);
    ntpu_ref_free(r);
}

/* A valid POOL; the ranges by mode as in the spec's table. */
static void pool_cmd(uint8_t *c, unsigned mode, unsigned src, unsigned dst, unsigned aux)
{
    memset(c, 0, NTPU_LEN_POOL + 1);
    c[0] = NTPU_OP_POOL, c[1] = (uint8_t)mode;
    put16(c + 2, src);
    put16(c + 4, dst);
    put16(c + 6, aux);
    c[8] = 5, c[9] = 4, c[10] = 2, c[11] = 2; /* map 40 rows, pooled 2*2*2 = 8 */
}

Test(ref_conv, pool_errors_in_order)
{
    ntpu_ref *r = model(0, 0, 0, 0);
    uint8_t c[NTPU_LEN_POOL + 1];
    for (unsigned mode = 0; mode < 4; mode++) {
        pool_cmd(c, mode, 0, 100, 200);
        cr_expect_eq(run(r, c, 12), NTPU_DEV_OK, "mode %u", mode);
        cr_expect_eq(run(r, c, 11), NTPU_DEV_ERR_LENGTH);
        cr_expect_eq(run(r, c, 13), NTPU_DEV_ERR_LENGTH);
        for (unsigned bit = 2; bit < 8; bit++) {
            c[1] = (uint8_t)(mode | 1u << bit);
            cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_ARG, "mode %u bit %u", mode, bit);
        }
        const unsigned bad[][2] = {{11, 0}, {10, 0}, {8, 1}, {9, 1}, {8, 0}};
        for (unsigned i = 0; i < 5; i++) {
            pool_cmd(c, mode, 0xFFF0, 100, 200); /* out of range too: ERR_ARG first */
            c[bad[i][0]] = (uint8_t)bad[i][1];
            cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_ARG, "mode %u field %u = %u", mode, bad[i][0], bad[i][1]);
        }
    }
    /* overlaps: src/dst always one memory; aux with them where it is in the same one */
    pool_cmd(c, NTPU_POOL_MODE_MAX, 0, 39, 200);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_ARG, "MAX dst over the map's last row");
    pool_cmd(c, NTPU_POOL_MODE_MAX, 0, 40, 47);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_ARG, "MAX aux over dst");
    pool_cmd(c, NTPU_POOL_MODE_MAX, 0, 40, 48);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_OK, "adjacent ranges");
    pool_cmd(c, NTPU_POOL_MODE_AVG, 0, 40, 0);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_OK, "AVG aux is in ACC");
    pool_cmd(c, NTPU_POOL_MODE_MAX_GRAD, 0, 8, 0);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_OK, "MAX_GRAD aux is in UB");
    pool_cmd(c, NTPU_POOL_MODE_MAX_GRAD, 0, 7, 0);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_ARG);
    pool_cmd(c, NTPU_POOL_MODE_AVG_GRAD, 0, 8, 47);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_ARG, "AVG_GRAD aux inside dst");
    pool_cmd(c, NTPU_POOL_MODE_AVG_GRAD, 0, 8, 48);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_OK);
    /* ranges, exactly */
    pool_cmd(c, NTPU_POOL_MODE_MAX, 4096 - 40, 0, 8);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_OK);
    pool_cmd(c, NTPU_POOL_MODE_MAX, 4096 - 39, 0, 8);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_RANGE);
    pool_cmd(c, NTPU_POOL_MODE_AVG, 0, 100, 2048);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_RANGE, "AVG's factor row in ACC");
    pool_cmd(c, NTPU_POOL_MODE_AVG_GRAD, 0, 2048 - 40, 100);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_OK);
    pool_cmd(c, NTPU_POOL_MODE_AVG_GRAD, 0, 2048 - 39, 100);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_RANGE);
    pool_cmd(c, NTPU_POOL_MODE_MAX_GRAD, 0, 100, 4096 - 7);
    cr_expect_eq(run(r, c, 12), NTPU_DEV_ERR_RANGE, "the argmax rows in UB");
    ntpu_ref_free(r);
}

/* Without POOL (and without the vector unit) POOL is an unknown opcode at any length. */
Test(ref_conv, pool_absent)
{
    uint8_t c[NTPU_LEN_POOL + 4] = {NTPU_OP_POOL}, id = NTPU_OP_INFO;
    for (int without_vector = 0; without_vector < 2; without_vector++) {
        ntpu_ref *r = model((unsigned)without_vector, 0, 0, (unsigned)!without_vector);
        run(r, &id, 1);
        for (size_t len = 1; len <= sizeof c; len++)
            cr_expect_eq(run(r, c, len), NTPU_DEV_ERR_OPCODE, "LEN %zu", len);
        ntpu_ref_free(r);
    }
}

/* ---------------------------------------------------------------- the library */

Test(ref_conv, api_feature_gates_and_arguments)
{
    ntpu_conv_addr fwd = {
        .mode = NTPU_CONV_FORWARD, .rows = 16, .in_h = 2, .in_w = 2, .mb = 4, .out_w = 2, .stride = 1};
    ntpu_conv_addr dw = {.mode = NTPU_CONV_WEIGHT_GRAD, .rows = 8, .in_h = 2, .in_w = 2, .mb = 8, .k = 1};
    const char *specs[] = {"ref:noconv=1", "ref:notra=1", "ref:nopool=1", "ref:novec=1"};
    for (unsigned i = 0; i < 4; i++) {
        ntpu_device *d = open_dev(specs[i]);
        ntpu_info in;
        cr_assert_eq(ntpu_get_info(d, &in), NTPU_OK);
        cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &fwd, 0), i == 0 ? NTPU_ERR_UNSUPPORTED : NTPU_OK, "%s",
                     specs[i]);
        cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &dw, 0), i <= 1 ? NTPU_ERR_UNSUPPORTED : NTPU_OK, "%s",
                     specs[i]);
        cr_expect_eq(ntpu_vec_pool(d, NTPU_POOL_MODE_MAX, 0, 100, 200, 4, 4, 2, 2),
                     i >= 2 ? NTPU_ERR_UNSUPPORTED : NTPU_OK, "%s", specs[i]);
        cr_expect_eq(!!(in.features & NTPU_FEATURE_POOL_BIT), i < 2, "%s", specs[i]);
        cr_expect_eq(ntpu_fence(d), NTPU_OK, "%s: nothing refused was sent", specs[i]);
        ntpu_close(d);
    }
    ntpu_device *d = open_dev("ref:ub=64");
    ntpu_conv_addr c = fwd;
    c.in_h = 0;
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, 0), NTPU_ERR_INVALID_ARG);
    c = fwd, c.dy = 128;
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, 0), NTPU_ERR_INVALID_ARG);
    c = fwd, c.ub_addr = 64 - 16 + 1;
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, 0), NTPU_ERR_INVALID_ARG, "the map past UB");
    c = fwd, c.ub_addr = 64 - 16;
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, 0), NTPU_OK);
    c = dw, c.rows = 12;
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, 0), NTPU_ERR_INVALID_ARG);
    c = dw, c.dy = 300;
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, &c, 0), NTPU_OK, "i16 offsets");
    cr_expect_eq(ntpu_matmul_tile_conv(d, NTPU_DTYPE_BF16, NULL, 0), NTPU_ERR_INVALID_ARG);
    cr_expect_eq(ntpu_vec_pool(d, 4, 0, 100, 200, 4, 4, 2, 2), NTPU_ERR_INVALID_ARG, "mode");
    cr_expect_eq(ntpu_vec_pool(d, 0, 0, 31, 40, 4, 4, 2, 2), NTPU_ERR_INVALID_ARG, "overlap");
    cr_expect_eq(ntpu_vec_pool(d, 0, 0, 32, 40, 4, 4, 2, 3), NTPU_OK);
    cr_expect_eq(ntpu_vec_pool(d, 0, 0, 32, 40, 2, 4, 2, 3), NTPU_ERR_INVALID_ARG, "k over in_h");
    cr_expect_eq(ntpu_vec_pool(d, 0, 0, 32, 60, 4, 4, 2, 2), NTPU_ERR_INVALID_ARG, "argmax past UB");
    cr_expect_eq(ntpu_fence(d), NTPU_OK);
    ntpu_close(d);
}

/* The program recorder keeps the new commands: a RUN gives the bits of sending them. */
Test(ref_conv, program_records_conv_and_pool)
{
    ntpu_device *d[2] = {open_dev("ref"), open_dev("ref")};
    const unsigned n = dev_n(d[0]);
    uint16_t ub[512 * 8], w[64];
    for (unsigned i = 0; i < 512 * n; i++)
        ub[i] = rnd_bf16();
    for (unsigned i = 0; i < n * n; i++)
        w[i] = rnd_bf16();
    uint32_t out[2][200 * 8];
    uint16_t pooled[2][64 * 8];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ntpu_write_rows(d[k], NTPU_MEM_UB, 0, 512, ub), NTPU_OK);
        cr_assert_eq(ntpu_write_rows(d[k], NTPU_MEM_WB, 0, n, w), NTPU_OK);
        ntpu_program *p = NULL;
        if (k == 1)
            cr_assert_eq(ntpu_program_begin(d[k]), NTPU_OK);
        ntpu_conv_addr c = {.mode = NTPU_CONV_FORWARD,
                            .rows = 200,
                            .in_h = 6,
                            .in_w = 5,
                            .mb = 8,
                            .out_w = 5,
                            .stride = 1,
                            .dy = -1,
                            .dx = 1};
        ntpu_conv_addr t = {.mode = NTPU_CONV_TRANSPOSED,
                            .rows = 200,
                            .in_h = 3,
                            .in_w = 3,
                            .mb = 8,
                            .out_w = 5,
                            .stride = 2,
                            .dy = 1,
                            .dx = 0};
        ntpu_conv_addr g = {
            .mode = NTPU_CONV_WEIGHT_GRAD, .rows = 9 * n, .in_h = 6, .in_w = 5, .mb = 8, .k = 3, .dy = -1, .dx = 2};
        cr_assert_eq(ntpu_load_w(d[k], 0, 0), NTPU_OK);
        cr_assert_eq(ntpu_matmul_tile_conv(d[k], NTPU_DTYPE_BF16, &c, 0), NTPU_OK);
        cr_assert_eq(ntpu_matmul_tile_conv(d[k], NTPU_DTYPE_BF16, &t, 1), NTPU_OK);
        cr_assert_eq(ntpu_matmul_tile_conv(d[k], NTPU_DTYPE_INT8, &g, 0), NTPU_OK);
        cr_assert_eq(ntpu_vec_pool(d[k], NTPU_POOL_MODE_MAX, 0, 300, 400, 6, 5, 8, 2), NTPU_OK);
        if (k == 1) {
            cr_assert_eq(ntpu_program_end(d[k], &p), NTPU_OK);
            cr_assert_eq(ntpu_program_upload(d[k], p, 0), NTPU_OK);
            cr_assert_eq(ntpu_program_run(d[k], p), NTPU_OK, "%s", ntpu_last_error(d[k]));
            ntpu_program_free(p);
        }
        cr_assert_eq(ntpu_read_rows(d[k], NTPU_MEM_ACC, 0, 200, out[k]), NTPU_OK);
        cr_assert_eq(ntpu_read_rows(d[k], NTPU_MEM_UB, 300, 3 * 2 * 8, pooled[k]), NTPU_OK);
    }
    cr_expect_eq(memcmp(out[0], out[1], sizeof out[0]), 0);
    cr_expect_eq(memcmp(pooled[0], pooled[1], sizeof pooled[0]), 0);
    ntpu_close(d[0]);
    ntpu_close(d[1]);
}
