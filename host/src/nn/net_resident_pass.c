/* SPDX-License-Identifier: Apache-2.0 */
/* The device commands of one micro-batch of a resident net (layout in net_resident.h), ordered so that
 * every sum is the chain of docs/numerics.md, Convolutional layers (decision 0031):
 *   conv forward: per output tile, one CONV MATMUL per tap and input tile in the order (ky, kx, t);
 *   fc forward:   per output tile, one MATMUL per k-tile in the order (y, x, t) (a flattened map: HWC);
 *   conv dW:      per output tile, one weight-gradient CONV MATMUL per output pixel and block of N samples,
 *                 summed onto the earlier micro-batches': the order (b div 8, oy, ox, b mod 8);
 *   fc dW:        per output tile, one TRANSPOSE_A MATMUL per pixel and block of N samples: b ascending;
 *   conv dX:      per input tile, CONV_T MATMULs in the order (ky, kx, output tile), weights transposed;
 *   fc dX:        per k-tile, the output tiles ascending, weights transposed;
 *   db:           COLSUM over the gradient's rows (pixel-major, samples innermost), onto the earlier ones'.
 * The MATMULs of two output tiles (dX: two input tiles) are interleaved one by one, each tile's in the
 * order above, so the sums are the same. */
#include "net_resident.h"

#define MB NTPU_NET_MB

/* Output tiles summed side by side: both read the same rows of A, so a golden model reads each block of
 * A once for the two (decision 0032, round 5). */
#define WAYS 2u

/* The end of the group of output tiles that starts at u0, of u in all. */
static unsigned group_end(unsigned u0, unsigned u)
{
    return u0 + WAYS < u ? u0 + WAYS : u;
}

typedef struct pass {
    ntpu_model *m;
    ntpu_net_res *r;
    ntpu_device *dev;
    unsigned n;
    int spread; /* the device spreads the dense input (net_spread.c) */
} pass;

static uint32_t tile_of(const ntpu_net_res *r, size_t v)
{
    return r->h[v] * r->w[v] * MB;
}

/* Where item i's dW reads its input map: the input written again, or the map of the forward pass. */
static uint32_t dw_input(const ntpu_net_res *r, size_t i)
{
    return i == r->first && r->rewrite_input ? r->ub_x2 : r->ub[i];
}

/* ACT of output tile ot of item i (the pre-activation at acc_g[i + 1]): bias, the fused relu, bf16 to
 * the output map; the last item's logits stay fp32 in place. */
static ntpu_status activate(const pass *p, size_t i, unsigned ot)
{
    const ntpu_net_res *r = p->r;
    const uint32_t tile = tile_of(r, i + 1), z = r->acc_g[i + 1] + ot * tile;
    if (i + 1 == p->m->arch.n)
        return ntpu_vec_act(p->dev, NTPU_ACT_BIAS | NTPU_OUT_ACC, z, z, tile, r->acc_b[i] + ot);
    const unsigned relu = i + 1 < p->m->arch.n && r->fused[i + 1] ? NTPU_ACT_RELU : 0;
    return ntpu_vec_act(p->dev, NTPU_ACT_BIAS | relu | NTPU_OUT_UB, z, r->ub[i + 1] + ot * tile, tile,
                        r->acc_b[i] + ot);
}

/* Output tile ot of conv i, which only a pool reads: ACT (bias, the fused relu) and POOL band by band,
 * one row of windows at a time, through UB rows for one band; rows past the last whole window stay in ACC. */
static ntpu_status pool_bands(const pass *p, size_t i, unsigned ot)
{
    const ntpu_net_res *r = p->r;
    const size_t pi = r->fused[i + 1] ? i + 2 : i + 1;
    const ntpu_layer *l = &p->m->arch.item[pi];
    const unsigned k = l->k, band = k * r->w[i + 1] * MB, pooled_row = r->w[pi + 1] * MB;
    const uint32_t z = r->acc_g[i + 1] + ot * tile_of(r, i + 1), out = ot * tile_of(r, pi + 1);
    const unsigned relu = r->fused[i + 1] ? NTPU_ACT_RELU : 0;
    const int max = l->kind == NTPU_LAYER_MAXPOOL;
    ntpu_status st = NTPU_OK;
    for (unsigned b = 0; b < r->h[pi + 1] && st == NTPU_OK; b++) {
        st = ntpu_vec_act(p->dev, NTPU_ACT_BIAS | relu | NTPU_OUT_UB, z + b * band, r->ub[i + 1], band,
                          r->acc_b[i] + ot);
        if (st == NTPU_OK)
            st = ntpu_vec_pool(p->dev, max ? NTPU_POOL_MODE_MAX : NTPU_POOL_MODE_AVG, r->ub[i + 1],
                               r->ub[pi + 1] + out + b * pooled_row,
                               max ? r->ub_arg[pi] + out + b * pooled_row : r->acc_r[pi], k, r->w[i + 1], MB, k);
    }
    return st;
}

/* Pool item i over channel tile t of its input map, which starts at src. */
static ntpu_status pool_tile(const pass *p, size_t i, unsigned t, uint32_t src)
{
    const ntpu_layer *l = &p->m->arch.item[i];
    const ntpu_net_res *r = p->r;
    const int max = l->kind == NTPU_LAYER_MAXPOOL;
    return ntpu_vec_pool(p->dev, max ? NTPU_POOL_MODE_MAX : NTPU_POOL_MODE_AVG, src,
                         r->ub[i + 1] + t * tile_of(r, i + 1), max ? r->ub_arg[i] + t * tile_of(r, i + 1) : r->acc_r[i],
                         r->h[i], r->w[i], MB, l->k);
}

static ntpu_status conv_forward(const pass *p, size_t i)
{
    const ntpu_layer *l = &p->m->arch.item[i];
    const ntpu_net_res *r = p->r;
    const unsigned K = l->k, cti = r->ct[i];
    ntpu_status st = NTPU_OK;
    for (unsigned ot0 = 0; ot0 < r->ct[i + 1] && st == NTPU_OK; ot0 = group_end(ot0, r->ct[i + 1])) {
        const unsigned ot1 = group_end(ot0, r->ct[i + 1]);
        for (unsigned tap = 0; tap < K * K && st == NTPU_OK; tap++)
            for (unsigned t = 0; t < cti && st == NTPU_OK; t++)
                for (unsigned ot = ot0; ot < ot1 && st == NTPU_OK; ot++) {
                    const ntpu_conv_addr c = {.mode = NTPU_CONV_FORWARD,
                                              .ub_addr = r->ub[i] + t * tile_of(r, i),
                                              .acc_addr = r->acc_g[i + 1] + ot * tile_of(r, i + 1),
                                              .rows = tile_of(r, i + 1),
                                              .in_h = r->h[i],
                                              .in_w = r->w[i],
                                              .mb = MB,
                                              .out_w = r->w[i + 1],
                                              .stride = l->stride,
                                              .dy = (int)(tap / K) - (int)l->pad,
                                              .dx = (int)(tap % K) - (int)l->pad};
                    st = ntpu_load_w(p->dev, r->wb_w[i] + ((ot * K * K + tap) * cti + t) * p->n, 0);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile_conv(p->dev, NTPU_DTYPE_BF16, &c, tap > 0 || t > 0);
                }
        for (unsigned ot = ot0; ot < ot1 && st == NTPU_OK; ot++)
            st = r->band[i + 1] ? pool_bands(p, i, ot) : activate(p, i, ot);
    }
    return st;
}

static ntpu_status fc_forward(const pass *p, size_t i)
{
    const ntpu_net_res *r = p->r;
    const unsigned cti = r->ct[i], kt_n = r->h[i] * r->w[i] * cti;
    ntpu_status st = NTPU_OK;
    for (unsigned ot0 = 0; ot0 < r->ct[i + 1] && st == NTPU_OK; ot0 = group_end(ot0, r->ct[i + 1])) {
        const unsigned ot1 = group_end(ot0, r->ct[i + 1]);
        for (unsigned kt = 0; kt < kt_n && st == NTPU_OK; kt++)
            for (unsigned ot = ot0; ot < ot1 && st == NTPU_OK; ot++) {
                st = ntpu_load_w(p->dev, r->wb_w[i] + (ot * kt_n + kt) * p->n, 0);
                if (st == NTPU_OK)
                    st = ntpu_matmul_tile(p->dev, NTPU_DTYPE_BF16, r->ub[i] + kt % cti * tile_of(r, i) + kt / cti * MB,
                                          r->acc_g[i + 1] + ot * MB, MB, kt > 0);
            }
        for (unsigned ot = ot0; ot < ot1 && st == NTPU_OK; ot++)
            st = activate(p, i, ot);
    }
    return st;
}

static ntpu_status pool_forward(const pass *p, size_t i)
{
    const ntpu_net_res *r = p->r;
    ntpu_status st = NTPU_OK;
    const int by_conv = r->band[i] || (i > 0 && r->fused[i - 1] && r->band[i - 1]); /* done already */
    for (unsigned t = 0; t < r->ct[i] && st == NTPU_OK && !by_conv; t++)
        st = pool_tile(p, i, t, r->ub[i] + t * tile_of(r, i));
    return st;
}

ntpu_status ntpu_net_res_forward(ntpu_model *m, int spread)
{
    const pass p = {m, m->net->res, m->dev, m->n, spread};
    ntpu_net_profile *prof = m->net->profile;
    ntpu_status st = prof ? ntpu_net_profile_mark(m, &prof->host) : NTPU_OK;
    if (st == NTPU_OK && spread)
        st = ntpu_net_spread(m, p.r->ub[0]);
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++) {
        ntpu_layer_kind kind = m->arch.item[i].kind;
        if (kind == NTPU_LAYER_CONV)
            st = conv_forward(&p, i);
        else if (kind == NTPU_LAYER_FC)
            st = fc_forward(&p, i);
        else if (kind == NTPU_LAYER_MAXPOOL || kind == NTPU_LAYER_AVGPOOL)
            st = pool_forward(&p, i);
        if (st == NTPU_OK && prof)
            st = ntpu_net_profile_mark(m, &prof->fwd[i]);
    }
    return st;
}

/* db onto the earlier micro-batches' (COLSUM), and the bf16 gZ of item i to WB (dW's weights) and to
 * UB (dX's input, when there is a dX). */
static ntpu_status grad_copies(const pass *p, size_t i)
{
    const ntpu_net_res *r = p->r;
    const uint32_t tile = tile_of(r, i + 1);
    ntpu_status st = NTPU_OK;
    for (unsigned ot = 0; ot < r->ct[i + 1] && st == NTPU_OK; ot++) {
        const uint32_t g = r->acc_g[i + 1] + ot * tile;
        st = ntpu_vec_colsum(p->dev, g, r->acc_db[i] + ot, tile, 1);
        if (st == NTPU_OK)
            st = ntpu_vec_act(p->dev, NTPU_OUT_WB, g, r->wb_g + ot * tile, tile, 0);
        if (st == NTPU_OK && i > r->first)
            st = ntpu_vec_act(p->dev, NTPU_OUT_UB, g, r->ub_gz[i] + ot * tile, tile, 0);
    }
    return st;
}

static ntpu_status conv_dw(const pass *p, size_t i)
{
    const ntpu_layer *l = &p->m->arch.item[i];
    const ntpu_net_res *r = p->r;
    const unsigned K = l->k, cti = r->ct[i], n = p->n, block = K * K * cti * n, tile = tile_of(r, i + 1);
    const unsigned npix = r->h[i + 1] * r->w[i + 1];
    ntpu_status st = NTPU_OK;
    for (unsigned ot0 = 0; ot0 < r->ct[i + 1] && st == NTPU_OK; ot0 = group_end(ot0, r->ct[i + 1]))
        for (unsigned pix = 0; pix < npix && st == NTPU_OK; pix++)
            for (unsigned b0 = 0; b0 < MB && st == NTPU_OK; b0 += n)
                for (unsigned ot = ot0; ot < group_end(ot0, r->ct[i + 1]) && st == NTPU_OK; ot++) {
                    const ntpu_conv_addr c = {.mode = NTPU_CONV_WEIGHT_GRAD,
                                              .ub_addr = dw_input(r, i) + b0,
                                              .acc_addr = r->acc_dw[i] + ot * block,
                                              .rows = block,
                                              .in_h = r->h[i],
                                              .in_w = r->w[i],
                                              .mb = MB,
                                              .k = K,
                                              .tile_stride = tile_of(r, i),
                                              .dy = (int)(pix / r->w[i + 1] * l->stride) - (int)l->pad,
                                              .dx = (int)(pix % r->w[i + 1] * l->stride) - (int)l->pad};
                    st = ntpu_load_w(p->dev, r->wb_g + ot * tile + pix * MB + b0, 0);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile_conv(p->dev, NTPU_DTYPE_BF16, &c, 1);
                }
    return st;
}

static ntpu_status conv_dx(const pass *p, size_t i)
{
    const ntpu_layer *l = &p->m->arch.item[i];
    const ntpu_net_res *r = p->r;
    const unsigned K = l->k, cti = r->ct[i], cto = r->ct[i + 1];
    ntpu_status st = NTPU_OK;
    for (unsigned t0 = 0; t0 < cti && st == NTPU_OK; t0 = group_end(t0, cti))
        for (unsigned tap = 0; tap < K * K && st == NTPU_OK; tap++)
            for (unsigned ot = 0; ot < cto && st == NTPU_OK; ot++)
                for (unsigned t = t0; t < group_end(t0, cti) && st == NTPU_OK; t++) {
                    const ntpu_conv_addr c = {.mode = NTPU_CONV_TRANSPOSED,
                                              .ub_addr = r->ub_gz[i] + ot * tile_of(r, i + 1),
                                              .acc_addr = r->acc_g[i] + t * tile_of(r, i),
                                              .rows = tile_of(r, i),
                                              .in_h = r->h[i + 1],
                                              .in_w = r->w[i + 1],
                                              .mb = MB,
                                              .out_w = r->w[i],
                                              .stride = l->stride,
                                              .dy = (int)l->pad - (int)(tap / K),
                                              .dx = (int)l->pad - (int)(tap % K)};
                    st = ntpu_load_w(p->dev, r->wb_w[i] + ((ot * K * K + tap) * cti + t) * p->n, 1);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile_conv(p->dev, NTPU_DTYPE_BF16, &c, tap > 0 || ot > 0);
                }
    return st;
}

/* With rewrite_input the first item's input map is spread again once its gradient's ACC rows, which the
 * spread passes through, are copied (a host write of it comes before the item's backward pass). */
static ntpu_status conv_backward(const pass *p, size_t i)
{
    ntpu_status st = grad_copies(p, i);
    if (st == NTPU_OK && p->spread && i == p->r->first && p->r->rewrite_input)
        st = ntpu_net_spread(p->m, p->r->ub_x2);
    if (st == NTPU_OK)
        st = conv_dw(p, i);
    return st == NTPU_OK && i > p->r->first ? conv_dx(p, i) : st;
}

static ntpu_status fc_backward(const pass *p, size_t i)
{
    const ntpu_net_res *r = p->r;
    const unsigned n = p->n, cti = r->ct[i], kt_n = r->h[i] * r->w[i] * cti, npix = r->h[i] * r->w[i];
    ntpu_status st = grad_copies(p, i);
    for (unsigned ot0 = 0; ot0 < r->ct[i + 1] && st == NTPU_OK; ot0 = group_end(ot0, r->ct[i + 1]))
        for (unsigned pix = 0; pix < npix && st == NTPU_OK; pix++)
            for (unsigned b0 = 0; b0 < MB && st == NTPU_OK; b0 += n)
                for (unsigned ot = ot0; ot < group_end(ot0, r->ct[i + 1]) && st == NTPU_OK; ot++) {
                    st = ntpu_load_w(p->dev, r->wb_g + ot * MB + b0, 0);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile_transpose_a(p->dev, NTPU_DTYPE_BF16, dw_input(r, i) + pix * MB + b0,
                                                          tile_of(r, i), r->acc_dw[i] + (ot * kt_n + pix * cti) * n,
                                                          cti * n, 1);
                }
    for (unsigned kt0 = 0; kt0 < kt_n && i > r->first && st == NTPU_OK; kt0 = group_end(kt0, kt_n))
        for (unsigned ot = 0; ot < r->ct[i + 1] && st == NTPU_OK; ot++)
            for (unsigned kt = kt0; kt < group_end(kt0, kt_n) && st == NTPU_OK; kt++) {
                st = ntpu_load_w(p->dev, r->wb_w[i] + (ot * kt_n + kt) * n, 1);
                if (st == NTPU_OK)
                    st = ntpu_matmul_tile(p->dev, NTPU_DTYPE_BF16, r->ub_gz[i] + ot * MB,
                                          r->acc_g[i] + kt % cti * tile_of(r, i) + kt / cti * MB, MB, ot > 0);
            }
    return st;
}

/* relu (fused: the mask is its output map) and the pools' backward, tile by tile. */
static ntpu_status elementwise_backward(const pass *p, size_t i)
{
    const ntpu_layer *l = &p->m->arch.item[i];
    const ntpu_net_res *r = p->r;
    const uint32_t tin = tile_of(r, i), tout = tile_of(r, i + 1);
    ntpu_status st = NTPU_OK;
    const int moved = l->kind == NTPU_LAYER_RELU && i + 1 < p->m->arch.n && r->pooled_mask[i + 1];
    for (unsigned t = 0; t < r->ct[i] && st == NTPU_OK && !moved; t++) {
        if (r->pooled_mask[i]) /* the relu before: against the pooled map, before the scatter */
            st = ntpu_vec_relu_grad(p->dev, NTPU_OUT_ACC, r->acc_g[i + 1] + t * tout, r->acc_g[i + 1] + t * tout, tout,
                                    r->ub[i + 1] + t * tout);
        if (st != NTPU_OK)
            break;
        if (l->kind == NTPU_LAYER_RELU)
            st = ntpu_vec_relu_grad(p->dev, NTPU_OUT_ACC, r->acc_g[i + 1] + t * tout, r->acc_g[i] + t * tin, tin,
                                    r->ub[i + 1] + t * tout);
        else if (l->kind == NTPU_LAYER_MAXPOOL)
            st = ntpu_vec_pool(p->dev, NTPU_POOL_MODE_MAX_GRAD, r->acc_g[i + 1] + t * tout, r->acc_g[i] + t * tin,
                               r->ub_arg[i] + t * tout, r->h[i], r->w[i], MB, l->k);
        else if (l->kind == NTPU_LAYER_AVGPOOL)
            st = ntpu_vec_pool(p->dev, NTPU_POOL_MODE_AVG_GRAD, r->acc_g[i + 1] + t * tout, r->acc_g[i] + t * tin,
                               r->acc_r[i], r->h[i], r->w[i], MB, l->k);
    }
    return st;
}

ntpu_status ntpu_net_res_backward(ntpu_model *m, int spread, const float *x, size_t b0, size_t count)
{
    const ntpu_net_res *r = m->net->res;
    if (!r->rewrite_input || spread)
        return ntpu_net_res_backward_items(m, spread, r->first, m->arch.n);
    ntpu_status st = ntpu_net_res_backward_items(m, 0, r->first + 1, m->arch.n);
    if (st == NTPU_OK)
        st = ntpu_net_res_write_input(m, x, b0, count, r->ub_x2);
    return st == NTPU_OK ? ntpu_net_res_backward_items(m, 0, r->first, r->first + 1) : st;
}

ntpu_status ntpu_net_res_backward_items(ntpu_model *m, int spread, size_t lo, size_t hi)
{
    const pass p = {m, m->net->res, m->dev, m->n, spread};
    ntpu_net_profile *prof = m->net->profile;
    ntpu_status st = prof ? ntpu_net_profile_mark(m, &prof->host) : NTPU_OK;
    for (size_t i = hi; i-- > lo && st == NTPU_OK;) {
        ntpu_layer_kind kind = m->arch.item[i].kind;
        if (kind == NTPU_LAYER_CONV)
            st = conv_backward(&p, i);
        else if (kind == NTPU_LAYER_FC)
            st = fc_backward(&p, i);
        else
            st = elementwise_backward(&p, i);
        if (st == NTPU_OK && prof)
            st = ntpu_net_profile_mark(m, &prof->bwd[i]);
    }
    return st;
}
