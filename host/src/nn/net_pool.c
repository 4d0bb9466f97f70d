/* SPDX-License-Identifier: Apache-2.0 */
/* A net's elementwise items on the host, with the golden model's arithmetic
 * (docs/numerics.md, Convolutional layers): relu as ACT's RELU and RELU_GRAD on bf16
 * values, max and average pooling over K x K windows of stride K (rows and columns
 * past the last whole window are not read), flatten (NCHW already is C-H-W order). */
#include <string.h>

#include "net_internal.h"
#include "numerics_internal.h"

static int bf16_nan(uint16_t v)
{
    return (v & 0x7F80u) == 0x7F80u && (v & 0x007Fu) != 0;
}

/* ReLU of a bf16 value: +0 for a set sign bit (not NaN), else the value. */
static uint16_t relu_bf16(uint16_t v)
{
    return (v & 0x8000u) && !bf16_nan(v) ? 0 : v;
}

/* Max pooling of one C x H x W sample: the window's first element, replaced in row-major
 * order by each later one that is greater or NaN; where it came from goes to arg. */
static void maxpool(const ntpu_layer *l, const uint16_t *x, uint16_t *y, uint32_t *arg, size_t base)
{
    const size_t K = l->k, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    for (size_t c = 0; c < l->in_c; c++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++) {
                size_t best = (c * H + oy * K) * W + ox * K;
                for (size_t t = 1; t < K * K; t++) {
                    size_t at = (c * H + oy * K + t / K) * W + ox * K + t % K;
                    if (bf16_nan(x[at]) || ntpu_bf16_to_f32(x[at]) > ntpu_bf16_to_f32(x[best]))
                        best = at;
                }
                size_t o = (c * OH + oy) * OW + ox;
                y[o] = x[best];
                arg[o] = (uint32_t)(base + best);
            }
}

/* 1 / (K * K) rounded to fp32, the factor of an average. */
static uint32_t avg_factor(const ntpu_layer *l)
{
    return ntpu_f32_bits((float)(1.0 / (double)(l->k * l->k)));
}

/* Average pooling of one sample: s = +0, s = fadd(s, x) over the window row-major,
 * out = bf16(fmul(s, 1 / (K * K))). */
static void avgpool(const ntpu_layer *l, const uint16_t *x, uint16_t *y)
{
    const size_t K = l->k, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    const uint32_t r = avg_factor(l);
    for (size_t c = 0; c < l->in_c; c++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++) {
                uint32_t s = 0;
                for (size_t t = 0; t < K * K; t++)
                    s = ntpu_f32_add(s,
                                     ntpu_f32_bits(ntpu_bf16_to_f32(x[(c * H + oy * K + t / K) * W + ox * K + t % K])));
                y[(c * OH + oy) * OW + ox] = ntpu_bf16_from_f32_bits(ntpu_f32_mul(s, r));
            }
}

void ntpu_net_elementwise_forward(ntpu_model *m, size_t i, size_t batch)
{
    const ntpu_layer *l = &m->arch.item[i];
    const size_t in = ntpu_layer_in_size(l), out = ntpu_layer_out_size(l);
    const uint16_t *x = m->net->act[i];
    uint16_t *y = m->net->act[i + 1];
    for (size_t b = 0; b < batch; b++) {
        if (l->kind == NTPU_LAYER_MAXPOOL)
            maxpool(l, x + b * in, y + b * out, m->net->argmax[i] + b * out, b * in);
        else if (l->kind == NTPU_LAYER_AVGPOOL)
            avgpool(l, x + b * in, y + b * out);
    }
    if (l->kind == NTPU_LAYER_RELU)
        for (size_t j = 0; j < batch * in; j++)
            y[j] = relu_bf16(x[j]);
    else if (l->kind == NTPU_LAYER_FLATTEN)
        memcpy(y, x, batch * in * 2);
}

/* Average pooling's backward for one sample: fmul(g, 1 / (K * K)) to each position of
 * the window, +0 where no window reads (dx is zero before). */
static void avgpool_back(const ntpu_layer *l, const uint32_t *g, uint32_t *dx)
{
    const size_t K = l->k, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    const uint32_t r = avg_factor(l);
    for (size_t c = 0; c < l->in_c; c++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++) {
                uint32_t v = ntpu_f32_mul(g[(c * OH + oy) * OW + ox], r);
                for (size_t t = 0; t < K * K; t++)
                    dx[(c * H + oy * K + t / K) * W + ox * K + t % K] = v;
            }
}

void ntpu_net_elementwise_backward(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx)
{
    const ntpu_layer *l = &m->arch.item[i];
    const size_t in = ntpu_layer_in_size(l), out = ntpu_layer_out_size(l);
    if (l->kind == NTPU_LAYER_RELU) {
        const uint16_t *a = m->net->act[i + 1]; /* relu's output: positive where its input was */
        for (size_t j = 0; j < batch * in; j++)
            dx[j] = ntpu_bf16_positive(a[j]) ? g[j] : 0u;
        return;
    }
    if (l->kind == NTPU_LAYER_FLATTEN) {
        memcpy(dx, g, batch * in * 4);
        return;
    }
    memset(dx, 0, batch * in * 4);
    for (size_t b = 0; b < batch; b++) {
        if (l->kind == NTPU_LAYER_MAXPOOL)
            for (size_t o = 0; o < out; o++)
                dx[m->net->argmax[i][b * out + o]] = g[b * out + o];
        else if (l->kind == NTPU_LAYER_AVGPOOL)
            avgpool_back(l, g + b * out, dx + b * in);
    }
}
