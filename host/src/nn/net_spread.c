/* SPDX-License-Identifier: Apache-2.0 */
/* The device's own constants of a resident net (decision 0035): N rows of +0 in UB (the pad) and the tile
 * E0 in WB (E0[0][0] = 1, every other entry +0). With them the device
 *  - spreads a dense input (a first conv with one input channel: N values a UB row, pixel-major, samples
 *    innermost, the map's order) into the lane-padded map: LOAD_W E0, then MATMUL TRANSPOSE_A with
 *    stride 1 over the dense rows, whose stream row m has a[0] = dense value m and a[1 .. N-1] = later
 *    values or the pad, so lane 0 is +0 + d*1 (+ a[i]*0 ...) = d and every other lane +0; ACT rounds it
 *    to UB (the identity on a bf16 value). So the input crosses the link once, unpadded;
 *  - zeroes dW and db before a step (at its start, or at the end of the device optimizer's update before
 *    it): MATMUL TRANSPOSE_A with stride 0 over the pad, every product +0 * finite = +0 summed from +0;
 *    every micro-batch's backward pass then adds onto them, which is bit for bit the chain that starts at
 *    +0 (docs/numerics.md), so it is one program for all.
 * A product a[i]*0 is +0 or -0 only when a[i] is finite, and the sum from +0 gives +0 where the map would
 * hold -0 for an input -0 or negative subnormal (the conv reads that as -0, which an accumulator that an
 * underflow flushed to -0 would keep): a micro-batch with any NaN, Inf, -0 or negative subnormal (after
 * rounding to bf16) is written padded, as before. A positive subnormal d spreads to +0 where the padded
 * write holds d; both readers of the map (the conv's forward and its weight gradient, MATMUL CONV) read a
 * subnormal as +0, so the results are the same bits. */
#include <string.h>

#include "net_resident.h"
#include "numerics_internal.h"

#define MB NTPU_NET_MB
#define TA_ROWS_MAX 65535u /* rows of one MATMUL */

static uint16_t *staging16(ntpu_model *m, size_t rows)
{
    return ntpu_net_need(&m->net->res->rows, rows * m->n * 2);
}

ntpu_status ntpu_net_spread_constants(ntpu_model *m)
{
    const ntpu_net_res *r = m->net->res;
    const size_t n = m->n;
    uint16_t *rows = staging16(m, n);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    memset(rows, 0, n * n * 2);
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_UB, r->ub_pad, (uint32_t)n, rows);
    rows[0] = ntpu_bf16_from_f32(1.0f);
    return st == NTPU_OK ? ntpu_write_rows(m->dev, NTPU_MEM_WB, r->wb_e0, (uint32_t)n, rows) : st;
}

/* bf16 values the spread gives bit for bit: finite, and not -0 nor a negative subnormal. */
static int spreads(uint16_t v)
{
    const unsigned exp = (v >> 7) & 0xFFu;
    return exp != 0xFFu && !((v & 0x8000u) && exp == 0);
}

int ntpu_net_spread_ok(const ntpu_model *m, const float *x, size_t b0, size_t count)
{
    const ntpu_net_res *r = m->net->res;
    const size_t hw = (size_t)r->h[0] * r->w[0];
    if (!r->dense)
        return 0;
    for (size_t k = 0; k < count * hw; k++)
        if (!spreads(ntpu_bf16_from_f32(x[b0 * hw + k])))
            return 0;
    return 1;
}

ntpu_status ntpu_net_write_dense(ntpu_model *m, const float *x, size_t b0, size_t count)
{
    const ntpu_net_res *r = m->net->res;
    const size_t n = m->n, hw = (size_t)r->h[0] * r->w[0], rows = hw * MB / n;
    uint16_t *u = staging16(m, rows);
    if (!u)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    memset(u, 0, rows * n * 2);
    for (size_t b = 0; b < count; b++)
        for (size_t pix = 0; pix < hw; pix++)
            u[pix * MB + b] = ntpu_bf16_from_f32(x[(b0 + b) * hw + pix]);
    return ntpu_write_rows(m->dev, NTPU_MEM_UB, r->ub_dense, (uint32_t)rows, u);
}

/* The most rows one MATMUL TRANSPOSE_A may write into `have` free ACC rows: a multiple of N. */
static uint32_t chunk_rows(uint32_t have, unsigned n)
{
    const uint32_t cap = have < TA_ROWS_MAX ? have : TA_ROWS_MAX;
    return cap - cap % n;
}

ntpu_status ntpu_net_spread(ntpu_model *m, uint32_t dst)
{
    const ntpu_net_res *r = m->net->res;
    const unsigned n = m->n;
    const uint32_t total = r->h[0] * r->w[0] * MB, via = r->acc_g[r->first + 1];
    const uint32_t chunk = chunk_rows(r->ct[r->first + 1] * r->h[r->first + 1] * r->w[r->first + 1] * MB, n);
    ntpu_status st = NTPU_OK;
    for (uint32_t at = 0; at < total && st == NTPU_OK; at += chunk) {
        const uint32_t rows = total - at < chunk ? total - at : chunk;
        st = ntpu_load_w(m->dev, r->wb_e0, 0);
        if (st == NTPU_OK)
            st = ntpu_matmul_tile_transpose_a(m->dev, NTPU_DTYPE_BF16, r->ub_dense + at / n, 1, via, rows, 0);
        if (st == NTPU_OK)
            st = ntpu_vec_act(m->dev, NTPU_OUT_UB, via, dst + at, rows, 0);
    }
    return st;
}

/* rows (>= N) ACC rows from at to +0: whole chunks, then the last N rows again for a remainder. */
static ntpu_status zero_rows(ntpu_model *m, uint32_t at, uint32_t rows)
{
    const ntpu_net_res *r = m->net->res;
    const unsigned n = m->n;
    uint32_t done = 0;
    ntpu_status st = ntpu_load_w(m->dev, r->wb_e0, 0);
    while (st == NTPU_OK && rows - done >= n) {
        const uint32_t k = chunk_rows(rows - done, n);
        st = ntpu_matmul_tile_transpose_a(m->dev, NTPU_DTYPE_BF16, r->ub_pad, 0, at + done, k, 0);
        done += k;
    }
    if (st == NTPU_OK && done < rows)
        st = ntpu_matmul_tile_transpose_a(m->dev, NTPU_DTYPE_BF16, r->ub_pad, 0, at + rows - n, n, 0);
    return st;
}

ntpu_status ntpu_net_zero_grads(ntpu_model *m)
{
    const ntpu_net_res *r = m->net->res;
    ntpu_status st = NTPU_OK;
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++) {
        const ntpu_layer *l = &m->arch.item[i];
        if (l->kind != NTPU_LAYER_CONV && l->kind != NTPU_LAYER_FC)
            continue;
        const uint32_t cto = r->ct[i + 1], outer = l->kind == NTPU_LAYER_CONV ? l->k * l->k : r->h[i] * r->w[i];
        /* db, one row an output tile, and dW right after it (net_plan.c) */
        st = zero_rows(m, r->acc_db[i], cto * (1 + outer * r->ct[i] * m->n));
    }
    return st;
}
