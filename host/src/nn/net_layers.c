/* SPDX-License-Identifier: Apache-2.0 */
/* The passes of a net's fc, relu, pool and flatten items, and the bf16 weight operands
 * (docs/numerics.md, Convolutional layers). An fc whose input is a C x H x W map takes
 * it in (y, x, c) order, c innermost, as the device path will stream a map; its weights
 * stay in PyTorch's [out][in] layout (in in C-H-W order) and are permuted here. */
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"
#include "numerics_internal.h"

void *ntpu_net_need(ntpu_net_buf *b, size_t bytes)
{
    if (bytes > b->bytes) {
        void *p = realloc(b->p, bytes);
        if (!p)
            return NULL;
        b->p = p;
        b->bytes = bytes;
    }
    return b->p;
}

ntpu_status ntpu_net_product(ntpu_model *m, const uint16_t *A, const uint16_t *B, uint32_t *C, size_t rows, size_t k,
                             size_t cols)
{
    /* The library writes C through memcpy of uint32_t values: reading it as bits is well defined. */
    return ntpu_matmul_bf16(m->dev, A, B, (float *)(void *)C, rows, k, cols);
}

/* The C x H x W map an fc's input was flattened from: the input of the flatten before it
 * (with only relus between), else its own input shape (C x 1 x 1 for a plain vector). */
static void fc_map(const ntpu_arch *a, size_t i, size_t *c, size_t *hw)
{
    size_t j = i;
    while (j > 0 && a->item[j - 1].kind == NTPU_LAYER_RELU)
        j--;
    const ntpu_layer *l = j > 0 && a->item[j - 1].kind == NTPU_LAYER_FLATTEN ? &a->item[j - 1] : &a->item[i];
    *c = l->in_c;
    *hw = (size_t)l->in_h * l->in_w;
}

/* The feature in C-H-W order (PyTorch's flatten) of position k in (y, x, c) order, c innermost. */
static size_t chw_of(size_t c_count, size_t hw, size_t k)
{
    return k % c_count * hw + k / c_count;
}

void ntpu_net_weights(ntpu_model *m, size_t i)
{
    const ntpu_layer *l = &m->arch.item[i];
    const float *w = m->param[i].w;
    uint16_t *wm = m->net->wm[i], *wt = m->net->wt[i];
    if (l->kind == NTPU_LAYER_FC) {
        const size_t in = ntpu_layer_in_size(l), out = l->out;
        size_t c, hw;
        fc_map(&m->arch, i, &c, &hw);
        for (size_t k = 0; k < in; k++)
            for (size_t o = 0; o < out; o++)
                wm[k * out + o] = wt[o * in + k] = ntpu_bf16_from_f32(w[o * in + chw_of(c, hw, k)]);
        return;
    }
    const size_t C = l->in_c, CO = l->out_c, KK = (size_t)l->k * l->k;
    for (size_t co = 0; co < CO; co++)
        for (size_t ci = 0; ci < C; ci++)
            for (size_t t = 0; t < KK; t++) {
                uint16_t v = ntpu_bf16_from_f32(w[(co * C + ci) * KK + t]);
                wm[(t * C + ci) * CO + co] = v;
                wt[(t * CO + co) * C + ci] = v;
            }
}

ntpu_status ntpu_net_fc_forward(ntpu_model *m, size_t i, size_t batch)
{
    struct ntpu_net *net = m->net;
    const ntpu_layer *l = &m->arch.item[i];
    const size_t in = ntpu_layer_in_size(l), out = l->out;
    size_t c, hw;
    fc_map(&m->arch, i, &c, &hw);
    uint16_t *xk = ntpu_net_need(&net->patch[i], batch * in * 2);
    uint32_t *z = ntpu_net_need(&net->prod, batch * out * 4);
    if (!xk || !z)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    for (size_t b = 0; b < batch; b++)
        for (size_t k = 0; k < in; k++)
            xk[b * in + k] = net->act[i][b * in + chw_of(c, hw, k)];
    ntpu_status st = ntpu_net_product(m, xk, net->wm[i], z, batch, in, out);
    if (st != NTPU_OK)
        return st;
    const int last = i + 1 == m->arch.n;
    for (size_t j = 0; j < batch * out; j++) {
        uint32_t v = ntpu_f32_add(z[j], ntpu_f32_bits(m->param[i].b[j % out]));
        if (last)
            net->logits[j] = ntpu_f32_from_bits(v);
        else
            net->act[i + 1][j] = ntpu_bf16_from_f32_bits(v);
    }
    return NTPU_OK;
}

ntpu_status ntpu_net_fc_backward(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx)
{
    struct ntpu_net *net = m->net;
    const ntpu_layer *l = &m->arch.item[i];
    const size_t in = ntpu_layer_in_size(l), out = l->out;
    size_t c, hw;
    fc_map(&m->arch, i, &c, &hw);
    /* opa: bf16(g) (batch x out), then Xᵀ (in x batch) */
    uint16_t *gb = ntpu_net_need(&net->opa, (batch * out + in * batch) * 2);
    uint32_t *d = ntpu_net_need(&net->prod, (in * out > batch * in ? in * out : batch * in) * 4);
    if (!gb || !d)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    uint16_t *xt = gb + batch * out;
    float *db = m->param[i].gb;
    memset(db, 0, out * 4); /* +0 */
    for (size_t b = 0; b < batch; b++)
        for (size_t o = 0; o < out; o++) {
            ntpu_net_add_to(&db[o], g[b * out + o]);
            gb[b * out + o] = ntpu_bf16_from_f32_bits(g[b * out + o]);
        }
    const uint16_t *xk = net->patch[i].p;
    for (size_t b = 0; b < batch; b++)
        for (size_t k = 0; k < in; k++)
            xt[k * batch + b] = xk[b * in + k];
    ntpu_status st = ntpu_net_product(m, xt, gb, d, in, batch, out);
    if (st != NTPU_OK)
        return st;
    for (size_t k = 0; k < in; k++)
        for (size_t o = 0; o < out; o++)
            memcpy(&m->param[i].gw[o * in + chw_of(c, hw, k)], &d[k * out + o], 4);
    if (!dx || (st = ntpu_net_product(m, gb, net->wt[i], d, batch, out, in)) != NTPU_OK)
        return st;
    for (size_t b = 0; b < batch; b++)
        for (size_t k = 0; k < in; k++)
            dx[b * in + chw_of(c, hw, k)] = d[b * in + k];
    return NTPU_OK;
}
