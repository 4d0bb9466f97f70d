/* SPDX-License-Identifier: Apache-2.0 */
/* A scalar model of a net written from docs/numerics.md (Convolutional layers), for the
 * tests: plain fp32 loops, one chain at a time, acc = fp32(acc + (float)a * (float)b)
 * (exact products of bf16 values, one rounding per addition: the device's MAC for
 * normal values). Values are floats that hold bf16 values where the contract says bf16.
 * Independent of host/src/nn/net*.c: no patch matrices, no products on a device. */
#ifndef NTPU_TEST_NET_REF_H
#define NTPU_TEST_NET_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/arch.h"
#include "ntpu/numerics.h"

static float nr_bf16(float x)
{
    return ntpu_bf16_to_f32(ntpu_bf16_from_f32(x));
}

/* The net's state for one batch: act[i] item i's input, grad[i] the gradient of it. */
typedef struct nr_net {
    const ntpu_arch *a;
    size_t batch;
    const float *w[NTPU_MAX_ITEMS], *b[NTPU_MAX_ITEMS]; /* PyTorch layouts */
    float *act[NTPU_MAX_ITEMS + 1], *grad[NTPU_MAX_ITEMS + 1];
    float *gw[NTPU_MAX_ITEMS], *gb[NTPU_MAX_ITEMS];
} nr_net;

static size_t nr_in(const ntpu_layer *l)
{
    return (size_t)l->in_c * l->in_h * l->in_w;
}

static size_t nr_out(const ntpu_layer *l)
{
    return (size_t)l->out_c * l->out_h * l->out_w;
}

/* The map an fc's input was flattened from (the flatten before it, relus between). */
static const ntpu_layer *nr_map(const ntpu_arch *a, size_t i)
{
    size_t j = i;
    while (j > 0 && a->item[j - 1].kind == NTPU_LAYER_RELU)
        j--;
    return j > 0 && a->item[j - 1].kind == NTPU_LAYER_FLATTEN ? &a->item[j - 1] : &a->item[i];
}

static void nr_conv(const nr_net *n, size_t i, const float *x, float *y)
{
    const ntpu_layer *l = &n->a->item[i];
    const int K = (int)l->k, S = (int)l->stride, P = (int)l->pad, H = (int)l->in_h, W = (int)l->in_w;
    for (size_t b = 0; b < n->batch; b++)
        for (unsigned co = 0; co < l->out_c; co++)
            for (int oy = 0; oy < (int)l->out_h; oy++)
                for (int ox = 0; ox < (int)l->out_w; ox++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < K; ky++)
                        for (int kx = 0; kx < K; kx++)
                            for (unsigned ci = 0; ci < l->in_c; ci++) {
                                int iy = oy * S + ky - P, ix = ox * S + kx - P;
                                if (iy < 0 || ix < 0 || iy >= H || ix >= W)
                                    continue;
                                acc += x[((b * l->in_c + ci) * H + iy) * W + ix] *
                                       nr_bf16(n->w[i][((co * l->in_c + ci) * K + ky) * K + kx]);
                            }
                    y[((b * l->out_c + co) * l->out_h + oy) * l->out_w + ox] = nr_bf16(acc + n->b[i][co]);
                }
}

static void nr_fc(const nr_net *n, size_t i, const float *x, float *y)
{
    const ntpu_layer *l = &n->a->item[i], *map = nr_map(n->a, i);
    const size_t in = nr_in(l), hw = (size_t)map->in_h * map->in_w;
    for (size_t b = 0; b < n->batch; b++)
        for (unsigned o = 0; o < l->out; o++) {
            float acc = 0.0f;
            for (size_t yx = 0; yx < hw; yx++)
                for (size_t c = 0; c < in / hw; c++)
                    acc += x[b * in + c * hw + yx] * nr_bf16(n->w[i][o * in + c * hw + yx]);
            float z = acc + n->b[i][o];
            y[b * l->out + o] = i + 1 == n->a->n ? z : nr_bf16(z);
        }
}

/* Pools of one window: max keeps the first greatest (or a NaN), avg sums row-major. */
static void nr_pool(const nr_net *n, size_t i, const float *x, float *y)
{
    const ntpu_layer *l = &n->a->item[i];
    const size_t K = l->k, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    const float r = (float)(1.0 / (double)(K * K));
    for (size_t bc = 0; bc < n->batch * l->in_c; bc++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++) {
                float best = x[(bc * H + oy * K) * W + ox * K], s = 0.0f;
                for (size_t ky = 0; ky < K; ky++)
                    for (size_t kx = 0; kx < K; kx++) {
                        float v = x[(bc * H + oy * K + ky) * W + ox * K + kx];
                        best = isnan(v) || v > best ? v : best;
                        s += v;
                    }
                y[(bc * OH + oy) * OW + ox] = l->kind == NTPU_LAYER_MAXPOOL ? best : nr_bf16(s * r);
            }
}

/* Forward of batch samples x: act[0..n] filled, act[n] the logits. */
static void nr_forward(nr_net *n, const float *x)
{
    const ntpu_arch *a = n->a;
    for (size_t j = 0; j < n->batch * nr_in(&a->item[0]); j++)
        n->act[0][j] = nr_bf16(x[j]);
    for (size_t i = 0; i < a->n; i++) {
        const ntpu_layer *l = &a->item[i];
        const float *in = n->act[i];
        float *out = n->act[i + 1];
        if (l->kind == NTPU_LAYER_CONV)
            nr_conv(n, i, in, out);
        else if (l->kind == NTPU_LAYER_FC)
            nr_fc(n, i, in, out);
        else if (l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL)
            nr_pool(n, i, in, out);
        else
            for (size_t j = 0; j < n->batch * nr_in(l); j++)
                out[j] = l->kind == NTPU_LAYER_RELU && signbit(in[j]) && !isnan(in[j]) ? 0.0f : in[j];
    }
}

/* conv's dW and db, summed over p = (b div 8, oy, ox, b mod 8), and dX. */
static void nr_conv_back(nr_net *n, size_t i, const float *g, float *dx)
{
    const ntpu_layer *l = &n->a->item[i];
    const int K = (int)l->k, S = (int)l->stride, P = (int)l->pad, H = (int)l->in_h, W = (int)l->in_w;
    const int OH = (int)l->out_h, OW = (int)l->out_w, C = (int)l->in_c, CO = (int)l->out_c;
    const float *x = n->act[i];
    memset(n->gw[i], 0, (size_t)CO * C * K * K * 4);
    memset(n->gb[i], 0, (size_t)CO * 4);
    for (size_t b0 = 0; b0 < n->batch; b0 += 8)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (size_t b = b0; b < b0 + 8 && b < n->batch; b++)
                    for (int co = 0; co < CO; co++) {
                        float gv = g[((b * CO + co) * OH + oy) * OW + ox];
                        n->gb[i][co] += gv;
                        for (int ci = 0; ci < C; ci++)
                            for (int ky = 0; ky < K; ky++)
                                for (int kx = 0; kx < K; kx++) {
                                    int iy = oy * S + ky - P, ix = ox * S + kx - P;
                                    if (iy >= 0 && ix >= 0 && iy < H && ix < W)
                                        n->gw[i][((co * C + ci) * K + ky) * K + kx] +=
                                            x[((b * C + ci) * H + iy) * W + ix] * nr_bf16(gv);
                                }
                    }
    for (size_t b = 0; dx && b < n->batch; b++)
        for (int ci = 0; ci < C; ci++)
            for (int iy = 0; iy < H; iy++)
                for (int ix = 0; ix < W; ix++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < K; ky++)
                        for (int kx = 0; kx < K; kx++)
                            for (int co = 0; co < CO; co++) {
                                int ty = iy + P - ky, tx = ix + P - kx;
                                if (ty < 0 || tx < 0 || ty % S || tx % S || ty / S >= OH || tx / S >= OW)
                                    continue;
                                acc += nr_bf16(g[((b * CO + co) * OH + ty / S) * OW + tx / S]) *
                                       nr_bf16(n->w[i][((co * C + ci) * K + ky) * K + kx]);
                            }
                    dx[((b * C + ci) * H + iy) * W + ix] = acc;
                }
}

static void nr_fc_back(nr_net *n, size_t i, const float *g, float *dx)
{
    const ntpu_layer *l = &n->a->item[i], *map = nr_map(n->a, i);
    const size_t in = nr_in(l), out = l->out, hw = (size_t)map->in_h * map->in_w;
    for (size_t o = 0; o < out; o++) {
        float s = 0.0f;
        for (size_t b = 0; b < n->batch; b++)
            s += g[b * out + o];
        n->gb[i][o] = s;
        for (size_t k = 0; k < in; k++) {
            float acc = 0.0f;
            for (size_t b = 0; b < n->batch; b++)
                acc += n->act[i][b * in + k] * nr_bf16(g[b * out + o]);
            n->gw[i][o * in + k] = acc;
        }
    }
    for (size_t b = 0; dx && b < n->batch; b++)
        for (size_t yx = 0; yx < hw; yx++)
            for (size_t c = 0; c < in / hw; c++) {
                float acc = 0.0f;
                for (size_t o = 0; o < out; o++)
                    acc += nr_bf16(g[b * out + o]) * nr_bf16(n->w[i][o * in + c * hw + yx]);
                dx[b * in + c * hw + yx] = acc;
            }
}

static void nr_pool_back(nr_net *n, size_t i, const float *g, float *dx)
{
    const ntpu_layer *l = &n->a->item[i];
    const size_t K = l->k, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    const float r = (float)(1.0 / (double)(K * K));
    const float *x = n->act[i];
    memset(dx, 0, n->batch * nr_in(l) * 4);
    for (size_t bc = 0; bc < n->batch * l->in_c; bc++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++) {
                float gv = g[(bc * OH + oy) * OW + ox];
                size_t best = (bc * H + oy * K) * W + ox * K;
                for (size_t t = 0; t < K * K; t++) {
                    size_t at = (bc * H + oy * K + t / K) * W + ox * K + t % K;
                    if (l->kind == NTPU_LAYER_AVGPOOL)
                        dx[at] = gv * r;
                    else if (isnan(x[at]) || x[at] > x[best])
                        best = at;
                }
                if (l->kind == NTPU_LAYER_MAXPOOL)
                    dx[best] = gv;
            }
}

/* Backward from grad[n] (the logits' gradient) down to the first item with parameters. */
static void nr_backward(nr_net *n)
{
    const ntpu_arch *a = n->a;
    size_t first = 0;
    while (a->item[first].kind != NTPU_LAYER_CONV && a->item[first].kind != NTPU_LAYER_FC)
        first++;
    for (size_t i = a->n; i-- > first;) {
        const ntpu_layer *l = &a->item[i];
        float *g = n->grad[i + 1], *dx = i > first ? n->grad[i] : NULL;
        if (l->kind == NTPU_LAYER_CONV)
            nr_conv_back(n, i, g, dx);
        else if (l->kind == NTPU_LAYER_FC)
            nr_fc_back(n, i, g, dx);
        else if (l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL)
            nr_pool_back(n, i, g, dx);
        else
            for (size_t j = 0; j < n->batch * nr_in(l); j++) {
                float v = n->act[i + 1][j];
                dx[j] = l->kind == NTPU_LAYER_FLATTEN || (v > 0.0f && isnormal(v)) ? g[j] : 0.0f;
            }
    }
}

/* Buffers for every item of a, batch samples; release with nr_free. */
static void nr_alloc(nr_net *n, const ntpu_arch *a, size_t batch)
{
    memset(n, 0, sizeof *n);
    n->a = a;
    n->batch = batch;
    for (size_t i = 0; i <= a->n; i++) {
        size_t size = i < a->n ? nr_in(&a->item[i]) : nr_out(&a->item[a->n - 1]);
        n->act[i] = calloc(batch * size, 4);
        n->grad[i] = calloc(batch * size, 4);
    }
    for (size_t i = 0; i < a->n; i++) {
        n->gw[i] = calloc(nr_in(&a->item[i]) * nr_out(&a->item[i]) + 1, 4);
        n->gb[i] = calloc(a->item[i].out + 1, 4);
    }
}

static void nr_free(nr_net *n)
{
    for (size_t i = 0; i <= n->a->n; i++) {
        free(n->act[i]);
        free(n->grad[i]);
        if (i < n->a->n) {
            free(n->gw[i]);
            free(n->gb[i]);
        }
    }
}

#endif
