/* SPDX-License-Identifier: Apache-2.0 */
/* Convolution through ntpu_matmul_bf16 (docs/numerics.md, Convolutional layers): each
 * pass is one product of the whole batch, its operand built on the host as a patch
 * matrix so that every output element is one chain in the order the contract names.
 *   forward: Z = P · Wm, P's rows the output positions in the order p, its columns
 *            (ky, kx, ci); Wm[(ky,kx,ci)][co] = bf16(w[co][ci][ky][kx]);
 *   dW:      gZᵀ · P (or Pᵀ · gZ), a chain over p for every (co, (ky, kx, ci));
 *   dX:      Q · Wt, Q's rows the input positions (b, iy, ix), its columns (ky, kx, co)
 *            holding the gZ that reaches the position through that weight (+0 where
 *            none), Wt[(ky,kx,co)][ci] = bf16(w[co][ci][ky][kx]): the transposed
 *            convolution with the kernel flipped into the row order of Q.
 * The order p = (b div 8, oy, ox, b mod 8) is the micro-batch the device path will use;
 * as the batch is one chain there, dW's sums follow it here too. */
#include <string.h>

#include "net_internal.h"
#include "numerics_internal.h"

/* The row of sample b's output position pos (of npos) in the order p, for a batch of batch. */
static size_t p_row(size_t b, size_t pos, size_t npos, size_t batch)
{
    size_t b0 = b / 8 * 8, group = batch - b0 < 8 ? batch - b0 : 8;
    return b0 * npos + pos * group + (b - b0);
}

ntpu_status ntpu_net_conv_forward(ntpu_model *m, size_t i, size_t batch)
{
    struct ntpu_net *net = m->net;
    const ntpu_layer *l = &m->arch.item[i];
    const size_t C = l->in_c, H = l->in_h, W = l->in_w, K = l->k, S = l->stride, P = l->pad;
    const size_t CO = l->out_c, OH = l->out_h, OW = l->out_w, kc = K * K * C, npos = OH * OW;
    uint16_t *patch = ntpu_net_need(&net->patch[i], batch * npos * kc * 2);
    uint32_t *z = ntpu_net_need(&net->prod, batch * npos * CO * 4);
    if (!patch || !z)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    const uint16_t *x = net->act[i];
    for (size_t b = 0; b < batch; b++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++) {
                uint16_t *row = patch + p_row(b, oy * OW + ox, npos, batch) * kc;
                for (size_t ky = 0; ky < K; ky++)
                    for (size_t kx = 0; kx < K; kx++) {
                        /* unsigned wrap makes a position above or left of the input a large one */
                        size_t iy = oy * S + ky - P, ix = ox * S + kx - P;
                        int in = iy < H && ix < W;
                        for (size_t ci = 0; ci < C; ci++)
                            row[(ky * K + kx) * C + ci] = in ? x[((b * C + ci) * H + iy) * W + ix] : 0;
                    }
            }
    ntpu_status st = ntpu_net_product(m, patch, net->wm[i], z, batch * npos, kc, CO);
    if (st != NTPU_OK)
        return st;
    uint16_t *a = net->act[i + 1];
    const float *bias = m->param[i].b;
    for (size_t b = 0; b < batch; b++)
        for (size_t pos = 0; pos < npos; pos++) {
            const uint32_t *zr = z + p_row(b, pos, npos, batch) * CO;
            for (size_t co = 0; co < CO; co++)
                a[(b * CO + co) * npos + pos] = ntpu_bf16_from_f32_bits(ntpu_f32_add(zr[co], ntpu_f32_bits(bias[co])));
        }
    return NTPU_OK;
}

/* bf16(gZ) with its rows in the order p to opa, as B (rows x CO, tall) or as A (CO x rows,
 * transposed), and db = the fadd chain over p. */
static uint16_t *gz_in_p_order(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, int tall)
{
    const ntpu_layer *l = &m->arch.item[i];
    const size_t CO = l->out_c, npos = (size_t)l->out_h * l->out_w, rows = batch * npos;
    uint16_t *gz = ntpu_net_need(&m->net->opa, CO * rows * 2);
    if (!gz)
        return NULL;
    float *db = m->param[i].gb;
    memset(db, 0, CO * 4); /* +0 */
    size_t r = 0;
    for (size_t b0 = 0; b0 < batch; b0 += 8) {
        size_t group = batch - b0 < 8 ? batch - b0 : 8;
        for (size_t pos = 0; pos < npos; pos++)
            for (size_t bm = 0; bm < group; bm++, r++)
                for (size_t co = 0; co < CO; co++) {
                    uint32_t v = g[((b0 + bm) * CO + co) * npos + pos];
                    ntpu_net_add_to(&db[co], v);
                    gz[tall ? r * CO + co : co * rows + r] = ntpu_bf16_from_f32_bits(v);
                }
    }
    return gz;
}

/* dW as one product, a chain over p for each weight: gZᵀ · P (CO x kc) or, when that has fewer
 * column tiles on the device's N-wide array, Pᵀ · gZ (kc x CO): the same chains, fewer LOAD_Ws. */
static ntpu_status conv_dw(ntpu_model *m, size_t i, size_t batch, const uint32_t *g)
{
    struct ntpu_net *net = m->net;
    const ntpu_layer *l = &m->arch.item[i];
    const size_t C = l->in_c, KK = (size_t)l->k * l->k, CO = l->out_c, kc = KK * C;
    const size_t rows = batch * l->out_h * l->out_w, n = m->n;
    const int tall = (CO + n - 1) / n < (kc + n - 1) / n;
    const uint16_t *gz = gz_in_p_order(m, i, batch, g, tall), *patch = net->patch[i].p;
    uint16_t *pt = tall ? ntpu_net_need(&net->opb, kc * rows * 2) : NULL;
    uint32_t *dw = ntpu_net_need(&net->prod, CO * kc * 4);
    if (!gz || !dw || (tall && !pt))
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    for (size_t r = 0; tall && r < rows; r++)
        for (size_t k = 0; k < kc; k++)
            pt[k * rows + r] = patch[r * kc + k];
    ntpu_status st =
        tall ? ntpu_net_product(m, pt, gz, dw, kc, rows, CO) : ntpu_net_product(m, gz, patch, dw, CO, rows, kc);
    if (st != NTPU_OK)
        return st;
    float *gw = m->param[i].gw;
    for (size_t co = 0; co < CO; co++)
        for (size_t ci = 0; ci < C; ci++)
            for (size_t t = 0; t < KK; t++) {
                size_t k = t * C + ci;
                memcpy(&gw[(co * C + ci) * KK + t], &dw[tall ? k * CO + co : co * kc + k], 4);
            }
    return NTPU_OK;
}

/* dX = Q · Wt (see the top of the file), into dx (NCHW fp32 bits). */
static ntpu_status conv_dx(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx)
{
    struct ntpu_net *net = m->net;
    const ntpu_layer *l = &m->arch.item[i];
    const size_t C = l->in_c, H = l->in_h, W = l->in_w, K = l->k, S = l->stride, P = l->pad;
    const size_t CO = l->out_c, OH = l->out_h, OW = l->out_w, kc = K * K * CO;
    uint16_t *q = ntpu_net_need(&net->opa, batch * H * W * kc * 2);
    uint32_t *d = ntpu_net_need(&net->prod, batch * H * W * C * 4);
    if (!q || !d)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    for (size_t b = 0; b < batch; b++)
        for (size_t iy = 0; iy < H; iy++)
            for (size_t ix = 0; ix < W; ix++) {
                uint16_t *row = q + ((b * H + iy) * W + ix) * kc;
                for (size_t ky = 0; ky < K; ky++)
                    for (size_t kx = 0; kx < K; kx++) {
                        size_t ty = iy + P - ky, tx = ix + P - kx; /* wraps when negative */
                        size_t oy = ty / S, ox = tx / S;
                        int hit = ty % S == 0 && tx % S == 0 && oy < OH && ox < OW && iy + P >= ky && ix + P >= kx;
                        for (size_t co = 0; co < CO; co++)
                            row[(ky * K + kx) * CO + co] =
                                hit ? ntpu_bf16_from_f32_bits(g[((b * CO + co) * OH + oy) * OW + ox]) : 0;
                    }
            }
    ntpu_status st = ntpu_net_product(m, q, net->wt[i], d, batch * H * W, kc, C);
    if (st != NTPU_OK)
        return st;
    for (size_t b = 0; b < batch; b++)
        for (size_t pos = 0; pos < H * W; pos++)
            for (size_t ci = 0; ci < C; ci++)
                dx[(b * C + ci) * H * W + pos] = d[(b * H * W + pos) * C + ci];
    return NTPU_OK;
}

ntpu_status ntpu_net_conv_backward(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx)
{
    ntpu_status st = conv_dw(m, i, batch, g);
    return st == NTPU_OK && dx ? conv_dx(m, i, batch, g, dx) : st;
}
