/* SPDX-License-Identifier: Apache-2.0 */
/* net.c: a model of any arch that is not an MLP (ntpu/arch.h), trained and run on any
 * device with the library's existing operations (docs/training.md, Conv nets): every
 * product through ntpu_matmul_bf16, one per item and pass for the whole batch; the
 * elementwise steps, the loss and the optimizer on the host, with the golden model's
 * arithmetic (docs/numerics.md, Convolutional layers). So results are bit-identical on
 * every backend. The parameters live in m->param[i] in PyTorch's layouts (checkpoints
 * use them); nothing stays on the device between calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"
#include "net_resident.h"
#include "numerics_internal.h"

static int has_params(const ntpu_layer *l)
{
    return l->kind == NTPU_LAYER_CONV || l->kind == NTPU_LAYER_FC;
}

/* Item l's output shape from its input shape, as the arch's contract defines it (0 x 0 when it does not fit). */
static void out_shape(const ntpu_layer *l, unsigned *c, unsigned *h, unsigned *w)
{
    *c = l->in_c, *h = l->in_h, *w = l->in_w;
    if (l->kind == NTPU_LAYER_CONV) {
        int fits = l->k && l->stride && l->in_h + 2 * l->pad >= l->k && l->in_w + 2 * l->pad >= l->k;
        *c = l->out;
        *h = fits ? (l->in_h + 2 * l->pad - l->k) / l->stride + 1 : 0;
        *w = fits ? (l->in_w + 2 * l->pad - l->k) / l->stride + 1 : 0;
    } else if (l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL) {
        *h = l->k ? l->in_h / l->k : 0;
        *w = l->k ? l->in_w / l->k : 0;
    } else if (l->kind == NTPU_LAYER_FLATTEN || l->kind == NTPU_LAYER_FC) {
        *c = l->kind == NTPU_LAYER_FC ? l->out : l->in_c * l->in_h * l->in_w;
        *h = *w = 1;
    }
}

/* The index of the first item whose shapes do not chain or agree with its kind, or
 * a->n when all do (and the last item is an fc). */
static size_t bad_item(const ntpu_arch *a)
{
    unsigned c = a->in_c, h = a->in_h, w = a->in_w;
    for (size_t i = 0; i < a->n; i++) {
        const ntpu_layer *l = &a->item[i];
        unsigned oc, oh, ow;
        out_shape(l, &oc, &oh, &ow);
        if ((unsigned)l->kind > NTPU_LAYER_FC || l->in_c != c || l->in_h != h || l->in_w != w || l->out_c != oc ||
            l->out_h != oh || l->out_w != ow || !oc || !oh || !ow || (size_t)oc * oh * ow > (1u << 24))
            return i;
        c = oc, h = oh, w = ow;
    }
    return a->n && a->item[a->n - 1].kind == NTPU_LAYER_FC ? a->n : a->n - 1;
}

static void free_item(ntpu_model *m, size_t i)
{
    ntpu_net_param *p = &m->param[i];
    free(p->w), free(p->b), free(p->ws1), free(p->ws2), free(p->bs1), free(p->bs2), free(p->gw), free(p->gb);
    memset(p, 0, sizeof *p);
}

void ntpu_net_free(ntpu_model *m)
{
    struct ntpu_net *net = m->net;
    for (size_t i = 0; i < NTPU_MAX_ITEMS; i++) {
        free_item(m, i);
        if (!net)
            continue;
        free(net->act[i + 1]), free(net->argmax[i]), free(net->patch[i].p), free(net->wm[i]), free(net->wt[i]);
    }
    if (net) {
        free(net->act[0]), free(net->logits), free(net->g[0]), free(net->g[1]), free(net->opa.p), free(net->opb.p),
            free(net->prod.p);
        ntpu_net_res_free(net->res);
        free(net);
    }
    m->net = NULL;
}

/* Item i's parameters, optimizer slots and bf16 operands; 0, or -1 when out of memory. */
static int alloc_params(ntpu_model *m, size_t i, unsigned slots)
{
    const ntpu_layer *l = &m->arch.item[i];
    ntpu_net_param *p = &m->param[i];
    p->nb = l->out;
    p->nw = l->kind == NTPU_LAYER_FC ? ntpu_layer_in_size(l) * l->out : (size_t)l->out * l->in_c * l->k * l->k;
    int bad = !(p->w = calloc(p->nw, 4)) || !(p->b = calloc(p->nb, 4)) || !(p->gw = calloc(p->nw, 4)) ||
              !(p->gb = calloc(p->nb, 4)) || !(m->net->wm[i] = malloc(p->nw * 2)) ||
              !(m->net->wt[i] = malloc(p->nw * 2));
    if (!bad && slots >= 1)
        bad = !(p->ws1 = calloc(p->nw, 4)) || !(p->bs1 = calloc(p->nb, 4));
    if (!bad && slots >= 2)
        bad = !(p->ws2 = calloc(p->nw, 4)) || !(p->bs2 = calloc(p->nb, 4));
    return bad ? -1 : 0;
}

/* Activations, gradients and parameters of every item for max_batch samples. */
static ntpu_status alloc_net(ntpu_model *m)
{
    const ntpu_arch *a = &m->arch;
    const size_t B = m->max_batch;
    struct ntpu_net *net = m->net;
    size_t feat = 0;
    int bad = !(net->act[0] = malloc(B * net->inputs * 2));
    for (size_t i = 0; i < a->n && !bad; i++) {
        const ntpu_layer *l = &a->item[i];
        size_t in = ntpu_layer_in_size(l), out = ntpu_layer_out_size(l);
        feat = in > feat ? in : feat;
        feat = out > feat ? out : feat;
        bad = !(net->act[i + 1] = malloc(B * out * 2));
        if (!bad && l->kind == NTPU_LAYER_MAXPOOL)
            bad = !(net->argmax[i] = malloc(B * out * 4));
        if (!bad && has_params(l))
            bad = alloc_params(m, i, ntpu_optimizer_slots(m->opt.kind)) != 0;
    }
    if (!bad)
        bad = !(net->logits = malloc(B * net->classes * 2 * 4)) || !(net->g[0] = malloc(B * feat * 4)) ||
              !(net->g[1] = malloc(B * feat * 4));
    if (bad)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory for a batch of %zu", B);
    net->dlogits = net->logits + B * net->classes;
    return NTPU_OK;
}

ntpu_status ntpu_net_alloc(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, const ntpu_optim_config *opt,
                           ntpu_model **out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!arch || !out || arch->n == 0 || arch->n > NTPU_MAX_ITEMS)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: need an arch of 1..%d items", NTPU_MAX_ITEMS);
    size_t bad = bad_item(arch);
    if (bad < arch->n)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: item %zu of the arch has shapes that do not fit%s", bad + 1,
                         bad + 1 == arch->n ? " or is not an fc" : "");
    if ((st = ntpu_model_check_setup(dev, max_batch, opt)) != NTPU_OK)
        return st;
    ntpu_model *m = calloc(1, sizeof *m);
    if (!m || !(m->net = calloc(1, sizeof *m->net))) {
        free(m);
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    }
    m->dev = dev;
    m->n = dev->n;
    m->arch = *arch;
    m->max_batch = max_batch;
    m->max_bp = max_batch;
    m->opt = *opt;
    m->streamed = 1; /* nothing stays on the device: what nn.c does for a streamed MLP holds */
    m->net->classes = arch->item[arch->n - 1].out;
    m->net->inputs = (size_t)arch->in_c * arch->in_h * arch->in_w;
    snprintf(m->why, sizeof m->why, "a conv net lives on the host: every product goes through ntpu_matmul_bf16");
    snprintf(m->devopt_why, sizeof m->devopt_why, "a conv net on the host path keeps the optimizer on the host");
    if ((st = alloc_net(m)) != NTPU_OK || (st = ntpu_net_res_plan(m)) != NTPU_OK) {
        ntpu_model_free(m);
        return st;
    }
    *out = m;
    return NTPU_OK;
}

ntpu_status ntpu_net_create(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, uint64_t seed,
                            const ntpu_optim_config *opt, ntpu_model **out)
{
    ntpu_model *m;
    ntpu_status st = ntpu_net_alloc(dev, arch, max_batch, opt, &m);
    if (st != NTPU_OK)
        return st;
    uint64_t s = seed;
    for (size_t i = 0; i < arch->n; i++) {
        const ntpu_layer *l = &arch->item[i];
        if (!has_params(l))
            continue;
        size_t fan_in = l->kind == NTPU_LAYER_FC ? ntpu_layer_in_size(l) : (size_t)l->in_c * l->k * l->k;
        float bound = 1.0f / sqrtf((float)fan_in);
        for (size_t j = 0; j < m->param[i].nw; j++)
            m->param[i].w[j] = bound * ntpu_uniform_pm1(&s);
        for (size_t j = 0; j < m->param[i].nb; j++)
            m->param[i].b[j] = bound * ntpu_uniform_pm1(&s);
    }
    *out = m;
    return NTPU_OK;
}

/* The forward pass of batch samples x (C-H-W floats each) to net->logits. */
static ntpu_status forward(ntpu_model *m, const float *x, size_t batch)
{
    struct ntpu_net *net = m->net;
    for (size_t j = 0; j < batch * net->inputs; j++)
        net->act[0][j] = ntpu_bf16_from_f32(x[j]);
    ntpu_status st = NTPU_OK;
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++) {
        ntpu_layer_kind kind = m->arch.item[i].kind;
        if (has_params(&m->arch.item[i]))
            ntpu_net_weights(m, i);
        if (kind == NTPU_LAYER_CONV)
            st = ntpu_net_conv_forward(m, i, batch);
        else if (kind == NTPU_LAYER_FC)
            st = ntpu_net_fc_forward(m, i, batch);
        else
            ntpu_net_elementwise_forward(m, i, batch);
    }
    return st;
}

/* The backward pass from net->dlogits to every parameter's gradient; the items before
 * the first with parameters, and that one's input, need no gradient. */
static ntpu_status backward(ntpu_model *m, size_t batch)
{
    struct ntpu_net *net = m->net;
    size_t first = 0;
    while (!has_params(&m->arch.item[first]))
        first++;
    uint32_t *g = net->g[0], *dx = net->g[1];
    memcpy(g, net->dlogits, batch * net->classes * 4);
    ntpu_status st = NTPU_OK;
    for (size_t i = m->arch.n; i-- > first && st == NTPU_OK;) {
        ntpu_layer_kind kind = m->arch.item[i].kind;
        uint32_t *to = i > first ? dx : NULL;
        if (kind == NTPU_LAYER_CONV)
            st = ntpu_net_conv_backward(m, i, batch, g, to);
        else if (kind == NTPU_LAYER_FC)
            st = ntpu_net_fc_backward(m, i, batch, g, to);
        else
            ntpu_net_elementwise_backward(m, i, batch, g, dx);
        dx = g;
        g = to ? to : g;
    }
    return st;
}

static ntpu_status check_batch(ntpu_model *m, const float *x, size_t batch)
{
    if (!x || batch == 0 || batch > m->max_batch)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "batch of %zu samples: need 1..%zu and data", batch,
                         m->max_batch);
    return NTPU_OK;
}

ntpu_status ntpu_net_grad(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch, size_t divisor,
                          float *total, size_t *correct)
{
    ntpu_status st = check_batch(m, x, batch);
    if (st != NTPU_OK)
        return st;
    if (!labels)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "train: labels is NULL");
    if ((st = ntpu_check_labels(m, labels, batch, "train")) != NTPU_OK)
        return st;
    if (m->net->res)
        return ntpu_net_res_grad(m, x, labels, batch, divisor, total, correct);
    if ((st = forward(m, x, batch)) != NTPU_OK)
        return st;
    struct ntpu_net *net = m->net;
    ntpu_softmax_xent_part(net->logits, labels, batch, divisor, net->classes, net->dlogits, total, correct);
    return backward(m, batch);
}

ntpu_status ntpu_net_train_step(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch,
                                ntpu_step_result *res)
{
    if (m->devopt) { /* the whole step on the device: checked here, as ntpu_net_grad checks its samples */
        ntpu_status st = check_batch(m, x, batch);
        if (st == NTPU_OK && !labels)
            st = ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "train: labels is NULL");
        if (st == NTPU_OK)
            st = ntpu_check_labels(m, labels, batch, "train");
        return st == NTPU_OK ? ntpu_net_res_train_step(m, x, labels, batch, res) : st;
    }
    float total = 0.0f;
    ntpu_step_result r = {0};
    ntpu_status st = ntpu_net_grad(m, x, labels, batch, batch, &total, &r.correct);
    if (st != NTPU_OK)
        return st;
    r.loss = total / (float)batch;
    for (size_t i = 0; i < m->arch.n; i++) {
        ntpu_net_param *p = &m->param[i];
        if (!p->w)
            continue;
        ntpu_optim_update(&m->opt, m->step, p->w, p->gw, p->ws1, p->ws2, p->nw);
        ntpu_optim_update(&m->opt, m->step, p->b, p->gb, p->bs1, p->bs2, p->nb);
    }
    m->step++;
    if (res)
        *res = r;
    return ntpu_net_sync(m);
}

ntpu_status ntpu_net_predict(ntpu_model *m, const float *x, size_t batch, float *logits)
{
    ntpu_status st = check_batch(m, x, batch);
    if (st != NTPU_OK)
        return st;
    if (!logits)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "predict: logits is NULL");
    if (m->net->res)
        return ntpu_net_res_predict(m, x, batch, logits);
    if ((st = forward(m, x, batch)) == NTPU_OK)
        memcpy(logits, m->net->logits, batch * m->net->classes * 4);
    return st;
}
