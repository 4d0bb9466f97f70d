/* SPDX-License-Identifier: Apache-2.0 */
/* int8 inference of a net (a model that is not an MLP, net.c), for quant.c's ntpu_qmodel_*
 * (docs/training.md, int8 inference; docs/numerics.md, int8 conv nets). Symmetric scales,
 * zero point 0. Every conv and fc product is one ntpu_matmul with NTPU_DTYPE_INT8 (int8 x
 * int8 -> int32) of the whole batch, its operand a patch matrix built on the host as the
 * net's bf16 path builds it, so it runs on every device with int8 matmuls. Bias, ReLU and
 * requantization run on the host with the integer functions of ACT's int8 mode (wrapping
 * int32 bias add, ReLU on the sign, ntpu_requantize), so a device-resident path gives the
 * same bits; pools and flatten work on the int8 values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

/* One conv or fc item, quantized. */
typedef struct qnet_item {
    int8_t *w;      /* the product's B operand: conv [(ky,kx,ci)][co], fc [in][o] (in in C-H-W order) */
    float *w_scale; /* per output channel: max|w| / 127 */
    int32_t *bias;  /* in the accumulator's scale, in_scale * w_scale */
    int32_t *mult;  /* requantization to the output's scale, per output channel (not the last item) */
    int *shift;     /* its right shift */
    int relu;       /* the next item is a relu, applied before requantizing (ACT's RELU) */
} qnet_item;

struct ntpu_qnet {
    ntpu_device *dev;
    ntpu_arch arch;
    size_t max_batch, classes, inputs;
    float scale[NTPU_MAX_ITEMS + 1]; /* scale[i]: of item i's input (scale[0]: the samples') */
    qnet_item item[NTPU_MAX_ITEMS];
    int32_t avg_mult[NTPU_MAX_ITEMS]; /* avgpool K > 1: 1 / (K*K) as multiplier and shift */
    int avg_shift[NTPU_MAX_ITEMS];
    ntpu_net_buf act[2], patch, prod; /* int8 activations (NCHW), the A operand, the int32 product */
};

static int has_params(const ntpu_layer *l)
{
    return l->kind == NTPU_LAYER_CONV || l->kind == NTPU_LAYER_FC;
}

void ntpu_qnet_free(ntpu_qnet *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < NTPU_MAX_ITEMS; i++) {
        qnet_item *it = &q->item[i];
        free(it->w), free(it->w_scale), free(it->bias), free(it->mult), free(it->shift);
    }
    free(q->act[0].p), free(q->act[1].p), free(q->patch.p), free(q->prod.p);
    free(q);
}

ntpu_status ntpu_qnet_check(ntpu_model *m)
{
    if (!(m->dev->info.dtypes & NTPU_DTYPE_INT8_BIT))
        return ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED, "int8 inference needs int8 matmuls");
    return NTPU_OK;
}

static int32_t sat_round(double v, double lim)
{
    v = nearbyint(v);
    return (int32_t)(v > lim ? lim : v < -lim ? -lim : v);
}

static float maxabs(float a, float v)
{
    return fabsf(v) > a ? fabsf(v) : a;
}

/* One sample through item i in fp32 (calibration): x -> y, both C-H-W. conv and fc start
 * from the bias and add the terms in order: conv (ky, kx, ci) as its bf16 chain, fc C-H-W. */
static void float_item(const ntpu_model *m, size_t i, const float *x, float *y)
{
    const ntpu_layer *l = &m->arch.item[i];
    const ntpu_net_param *p = &m->param[i];
    const size_t C = l->in_c, H = l->in_h, W = l->in_w, K = l->k, OH = l->out_h, OW = l->out_w;
    const size_t in = ntpu_layer_in_size(l), out = ntpu_layer_out_size(l);
    for (size_t o = 0; o < out; o++) {
        const size_t c = o / (OH * OW), oy = o / OW % OH, ox = o % OW;
        float v = 0.0f;
        if (l->kind == NTPU_LAYER_FC) {
            v = p->b[o];
            for (size_t k = 0; k < in; k++)
                v += x[k] * p->w[o * in + k];
        } else if (l->kind == NTPU_LAYER_CONV) {
            v = p->b[c];
            for (size_t t = 0; t < K * K; t++) {
                size_t iy = oy * l->stride + t / K - l->pad, ix = ox * l->stride + t % K - l->pad; /* wraps */
                for (size_t ci = 0; ci < C && iy < H && ix < W; ci++)
                    v += x[(ci * H + iy) * W + ix] * p->w[(c * C + ci) * K * K + t];
            }
        } else if (l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL) {
            const float *win = x + (c * H + oy * K) * W + ox * K;
            v = l->kind == NTPU_LAYER_MAXPOOL ? win[0] : 0.0f;
            for (size_t t = 0; t < K * K; t++) {
                float e = win[t / K * W + t % K];
                v = l->kind == NTPU_LAYER_AVGPOOL ? v + e : e > v ? e : v;
            }
            if (l->kind == NTPU_LAYER_AVGPOOL)
                v *= (float)(1.0 / (double)(K * K));
        } else {
            v = l->kind == NTPU_LAYER_RELU && x[o] < 0.0f ? 0.0f : x[o];
        }
        y[o] = v;
    }
}

/* amax[0]: the largest |value| of the samples; amax[i + 1]: of item i's output, over a host
 * fp32 forward pass of the master weights. */
static ntpu_status calibrate(ntpu_model *m, const float *x, size_t count, float *amax)
{
    size_t widest = m->net->inputs;
    for (size_t i = 0; i < m->arch.n; i++)
        widest = ntpu_layer_out_size(&m->arch.item[i]) > widest ? ntpu_layer_out_size(&m->arch.item[i]) : widest;
    float *a = malloc(widest * sizeof *a), *b = malloc(widest * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    }
    memset(amax, 0, (m->arch.n + 1) * sizeof *amax);
    for (size_t s = 0; s < count; s++) {
        memcpy(a, x + s * m->net->inputs, m->net->inputs * sizeof *a);
        for (size_t k = 0; k < m->net->inputs; k++)
            amax[0] = maxabs(amax[0], a[k]);
        for (size_t i = 0; i < m->arch.n; i++) {
            float_item(m, i, a, b);
            for (size_t k = 0; k < ntpu_layer_out_size(&m->arch.item[i]); k++)
                amax[i + 1] = maxabs(amax[i + 1], b[k]);
            float *t = a;
            a = b, b = t;
        }
    }
    free(a), free(b);
    return NTPU_OK;
}

/* The scale of every item's input: amax / 127 where a conv or fc requantizes (after its
 * relu when a relu follows), the input's scale elsewhere (relu, pools, flatten keep it). */
static void set_scales(ntpu_qnet *q, const float *amax)
{
    const ntpu_arch *a = &q->arch;
    q->scale[0] = amax[0] > 0.0f ? amax[0] / 127.0f : 1.0f;
    for (size_t i = 0; i < a->n; i++) {
        const ntpu_layer *l = &a->item[i];
        q->scale[i + 1] = q->scale[i];
        if (l->kind == NTPU_LAYER_AVGPOOL && l->k > 1)
            ntpu_quantize_multiplier(1.0 / (double)(l->k * l->k), &q->avg_mult[i], &q->avg_shift[i]);
        if (!has_params(l))
            continue;
        q->item[i].relu = i + 1 < a->n && a->item[i + 1].kind == NTPU_LAYER_RELU;
        float mx = amax[i + 1 + q->item[i].relu];
        q->scale[i + 1] = mx > 0.0f ? mx / 127.0f : 1.0f;
    }
}

/* Item i's int8 weights (symmetric per output channel), int32 biases and the multiplier and
 * shift that take its accumulator to the next scale, as quant.c does for an MLP's layer. */
static ntpu_status quantize_item(ntpu_qnet *q, const ntpu_model *m, size_t i)
{
    const ntpu_layer *l = &q->arch.item[i];
    const ntpu_net_param *p = &m->param[i];
    qnet_item *it = &q->item[i];
    const size_t out = l->out, per = p->nw / out, KK = (size_t)l->k * l->k;
    if (!(it->w = malloc(p->nw)) || !(it->w_scale = malloc(out * sizeof *it->w_scale)) ||
        !(it->bias = malloc(out * sizeof *it->bias)) || !(it->mult = calloc(out, sizeof *it->mult)) ||
        !(it->shift = calloc(out, sizeof *it->shift)))
        return ntpu_fail(q->dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    for (size_t o = 0; o < out; o++) {
        const float *w = p->w + o * per; /* conv [ci][ky][kx], fc [in] */
        float mx = 0.0f;
        for (size_t j = 0; j < per; j++)
            mx = maxabs(mx, w[j]);
        const float ws = it->w_scale[o] = mx > 0.0f ? mx / 127.0f : 1.0f;
        for (size_t j = 0; j < per; j++) {
            size_t row = l->kind == NTPU_LAYER_CONV ? j % KK * l->in_c + j / KK : j; /* conv: (ky, kx, ci) */
            it->w[row * out + o] = (int8_t)sat_round(w[j] / ws, 127);
        }
        double acc_scale = (double)q->scale[i] * ws;
        it->bias[o] = sat_round(p->b[o] / acc_scale, 2147483647.0);
        if (i + 1 < q->arch.n) {
            double ratio = acc_scale / q->scale[i + 1];
            if (ratio >= 1.0)
                ratio = 0.99999999; /* saturates instead, as quant.c */
            ntpu_quantize_multiplier(ratio, &it->mult[o], &it->shift[o]);
        }
    }
    return NTPU_OK;
}

ntpu_status ntpu_qnet_create(ntpu_model *m, const float *calib, size_t count, ntpu_qnet **out)
{
    ntpu_qnet *q = calloc(1, sizeof *q);
    if (!q)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    q->dev = m->dev;
    q->arch = m->arch;
    q->max_batch = m->max_batch;
    q->classes = m->net->classes;
    q->inputs = m->net->inputs;
    size_t widest = q->inputs;
    for (size_t i = 0; i < q->arch.n; i++)
        widest = ntpu_layer_out_size(&q->arch.item[i]) > widest ? ntpu_layer_out_size(&q->arch.item[i]) : widest;
    float amax[NTPU_MAX_ITEMS + 1];
    ntpu_status st = calibrate(m, calib, count, amax);
    if (st == NTPU_OK &&
        (!ntpu_net_need(&q->act[0], q->max_batch * widest) || !ntpu_net_need(&q->act[1], q->max_batch * widest)))
        st = ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    if (st == NTPU_OK)
        set_scales(q, amax);
    for (size_t i = 0; i < q->arch.n && st == NTPU_OK; i++)
        if (has_params(&q->arch.item[i]))
            st = quantize_item(q, m, i);
    if (st != NTPU_OK) {
        ntpu_qnet_free(q);
        return st;
    }
    *out = q;
    return NTPU_OK;
}

/* ACT's int8 mode on one accumulator: wrapping bias add, ReLU on the sign, requantization. */
static int8_t act_int8(int32_t acc, int32_t bias, int relu, int32_t mult, int shift)
{
    uint32_t t = (uint32_t)acc + (uint32_t)bias;
    if (relu && (t & 0x80000000u))
        t = 0;
    return ntpu_requantize((int32_t)t, mult, shift, 0);
}

/* A conv's int8 forward pass: its patch matrix (rows (b, oy, ox), columns (ky, kx, ci), 0
 * outside the input) times the weights on the device, then ACT's int8 step per element. */
static ntpu_status conv_int8(ntpu_qnet *q, size_t i, size_t batch, const int8_t *x, int8_t *y)
{
    const ntpu_layer *l = &q->arch.item[i];
    const qnet_item *it = &q->item[i];
    const size_t C = l->in_c, H = l->in_h, W = l->in_w, K = l->k, CO = l->out_c, OW = l->out_w;
    const size_t npos = (size_t)l->out_h * OW, kc = K * K * C, rows = batch * npos;
    int8_t *patch = ntpu_net_need(&q->patch, rows * kc);
    int32_t *z = ntpu_net_need(&q->prod, rows * CO * 4);
    if (!patch || !z)
        return ntpu_fail(q->dev, NTPU_ERR_NO_MEMORY, "int8 predict: out of memory");
    for (size_t r = 0; r < rows; r++) {
        const size_t b = r / npos, oy = r % npos / OW, ox = r % OW;
        for (size_t t = 0; t < K * K; t++) {
            size_t iy = oy * l->stride + t / K - l->pad, ix = ox * l->stride + t % K - l->pad; /* wraps */
            for (size_t ci = 0; ci < C; ci++)
                patch[r * kc + t * C + ci] = iy < H && ix < W ? x[((b * C + ci) * H + iy) * W + ix] : 0;
        }
    }
    ntpu_status st = ntpu_matmul(q->dev, NTPU_DTYPE_INT8, patch, it->w, z, rows, kc, CO);
    for (size_t r = 0; r < rows && st == NTPU_OK; r++)
        for (size_t co = 0; co < CO; co++)
            y[(r / npos * CO + co) * npos + r % npos] =
                act_int8(z[r * CO + co], it->bias[co], it->relu, it->mult[co], it->shift[co]);
    return st;
}

/* An fc's int8 forward pass on its C-H-W input; the last item's accumulators plus bias,
 * times in_scale * w_scale, are the logits. */
static ntpu_status fc_int8(ntpu_qnet *q, size_t i, size_t batch, const int8_t *x, int8_t *y, float *logits)
{
    const ntpu_layer *l = &q->arch.item[i];
    const qnet_item *it = &q->item[i];
    const size_t in = ntpu_layer_in_size(l), out = l->out;
    int32_t *z = ntpu_net_need(&q->prod, batch * out * 4);
    if (!z)
        return ntpu_fail(q->dev, NTPU_ERR_NO_MEMORY, "int8 predict: out of memory");
    ntpu_status st = ntpu_matmul(q->dev, NTPU_DTYPE_INT8, x, it->w, z, batch, in, out);
    for (size_t j = 0; j < batch * out && st == NTPU_OK; j++) {
        const size_t o = j % out;
        if (i + 1 == q->arch.n)
            logits[j] = (float)((double)((int64_t)z[j] + it->bias[o]) * q->scale[i] * it->w_scale[o]);
        else
            y[j] = act_int8(z[j], it->bias[o], it->relu, it->mult[o], it->shift[o]);
    }
    return st;
}

/* A pool on one sample's int8 map: max (the first largest in row-major order) or average
 * (the int32 sum requantized by 1 / (K*K)); floor mode. */
static void pool_int8(const ntpu_qnet *q, size_t i, const int8_t *x, int8_t *y)
{
    const ntpu_layer *l = &q->arch.item[i];
    const size_t K = l->k, H = l->in_h, W = l->in_w, OH = l->out_h, OW = l->out_w;
    for (size_t o = 0; o < l->in_c * OH * OW; o++) {
        const int8_t *win = x + (o / (OH * OW) * H + o / OW % OH * K) * W + o % OW * K;
        int32_t v = l->kind == NTPU_LAYER_MAXPOOL ? win[0] : 0;
        for (size_t t = 0; t < K * K; t++) {
            int32_t e = win[t / K * W + t % K];
            v = l->kind == NTPU_LAYER_AVGPOOL ? v + e : e > v ? e : v;
        }
        if (l->kind == NTPU_LAYER_AVGPOOL && K > 1)
            v = ntpu_requantize(v, q->avg_mult[i], q->avg_shift[i], 0);
        y[o] = (int8_t)v;
    }
}

/* Item i's int8 forward pass over batch samples, x -> y (the last item: logits). */
static ntpu_status item_int8(ntpu_qnet *q, size_t i, size_t batch, const int8_t *x, int8_t *y, float *logits)
{
    const ntpu_layer *l = &q->arch.item[i];
    const size_t in = ntpu_layer_in_size(l), out = ntpu_layer_out_size(l);
    if (l->kind == NTPU_LAYER_CONV)
        return conv_int8(q, i, batch, x, y);
    if (l->kind == NTPU_LAYER_FC)
        return fc_int8(q, i, batch, x, y, logits);
    for (size_t b = 0; b < batch && (l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL); b++)
        pool_int8(q, i, x + b * in, y + b * out);
    if (l->kind == NTPU_LAYER_RELU)
        for (size_t j = 0; j < batch * in; j++)
            y[j] = x[j] < 0 ? 0 : x[j];
    else if (l->kind == NTPU_LAYER_FLATTEN)
        memcpy(y, x, batch * in);
    return NTPU_OK;
}

ntpu_status ntpu_qnet_predict(ntpu_qnet *q, const float *x, size_t batch, float *logits)
{
    int8_t *a = q->act[0].p, *b = q->act[1].p;
    for (size_t j = 0; j < batch * q->inputs; j++)
        a[j] = (int8_t)sat_round(x[j] / q->scale[0], 127);
    ntpu_status st = NTPU_OK;
    for (size_t i = 0; i < q->arch.n && st == NTPU_OK; i++) {
        st = item_int8(q, i, batch, a, b, logits);
        int8_t *t = a;
        a = b, b = t;
    }
    return st;
}
