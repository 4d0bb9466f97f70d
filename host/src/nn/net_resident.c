/* SPDX-License-Identifier: Apache-2.0 */
/* A training step and a prediction of a net resident on the device (net_resident.h): the host writes each
 * micro-batch's input map and reads its logits back, computes the loss and its gradient, and after the
 * last micro-batch reads dW and db and runs the optimizer on its fp32 master weights (m->param, PyTorch
 * layouts), whose bf16 copy it writes to WB before the device's next work; or, with the device optimizer
 * (net_devopt.c), the device updates its own fp32 master weights. The results are the host
 * path's (net.c) bit for bit: the same chains, with zero terms for padded lanes and samples. */
#include <stdlib.h>
#include <string.h>

#include "net_resident.h"
#include "numerics_internal.h"

#define MB NTPU_NET_MB

static uint32_t *staging(ntpu_model *m, size_t rows)
{
    return ntpu_net_need(&m->net->res->rows, rows * m->n * 4);
}

/* Item i's weights as bf16 tiles to WB (the layout in net_resident.h), its biases to ACC. */
static ntpu_status upload_params(ntpu_model *m, size_t i)
{
    const ntpu_layer *l = &m->arch.item[i];
    const ntpu_net_res *r = m->net->res;
    const ntpu_net_param *p = &m->param[i];
    const size_t n = m->n, cti = r->ct[i], cto = r->ct[i + 1], hw = (size_t)r->h[i] * r->w[i];
    const size_t conv = l->kind == NTPU_LAYER_CONV, KK = conv ? (size_t)l->k * l->k : 1;
    const size_t block = conv ? KK * cti : hw * cti, C = conv ? l->in_c : ntpu_layer_in_size(l) / hw;
    uint16_t *rows = (uint16_t *)staging(m, cto * block * n);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    /* tile j of output tile ot: (tap, t) for a conv, (pix, t) for an fc; row a is channel t*N + a */
    for (size_t ot = 0; ot < cto; ot++)
        for (size_t j = 0; j < block; j++)
            for (size_t a = 0; a < n; a++)
                for (size_t b = 0; b < n; b++) {
                    const size_t co = ot * n + b, ci = j % cti * n + a, outer = j / cti;
                    const size_t at = conv ? (co * C + ci) * KK + outer : (co * C + ci) * hw + outer;
                    rows[((ot * block + j) * n + a) * n + b] = co < p->nb && ci < C ? ntpu_bf16_from_f32(p->w[at]) : 0;
                }
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_WB, r->wb_w[i], (uint32_t)(cto * block * n), rows);
    if (st != NTPU_OK)
        return st;
    uint32_t *bias = staging(m, cto);
    if (!bias)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    for (size_t o = 0; o < cto * n; o++)
        bias[o] = o < p->nb ? ntpu_f32_bits(p->b[o]) : 0u;
    return ntpu_write_rows(m->dev, NTPU_MEM_ACC, r->acc_b[i], (uint32_t)cto, bias);
}

/* Another user takes the memories: the device optimizer's weights and state to the host first. */
static ntpu_status evict(void *m)
{
    return ntpu_model_fetch(m);
}

/* The parameters (with the device optimizer their fp32 state too) and the avgpools' factors to the device,
 * when it does not hold them already. */
static ntpu_status own_device(ntpu_model *m)
{
    ntpu_net_res *r = m->net->res;
    int changed;
    ntpu_status st = ntpu_claim_memories(m->dev, m, evict, &changed);
    if (st != NTPU_OK || (!changed && !r->stale))
        return st;
    r->grads_zero = 0; /* another user's data may be in those rows */
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++) {
        const ntpu_layer *l = &m->arch.item[i];
        if (l->kind == NTPU_LAYER_CONV || l->kind == NTPU_LAYER_FC)
            st = upload_params(m, i);
        else if (l->kind == NTPU_LAYER_AVGPOOL) {
            uint32_t *f = staging(m, 1);
            if (!f) {
                st = ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
                break;
            }
            for (size_t j = 0; j < m->n; j++)
                f[j] = ntpu_f32_bits((float)(1.0 / (double)(l->k * l->k)));
            st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, r->acc_r[i], 1, f);
        }
    }
    if (st == NTPU_OK)
        st = ntpu_net_spread_constants(m);
    if (st == NTPU_OK && r->devopt)
        st = ntpu_net_devopt_upload(m);
    if (st != NTPU_OK)
        ntpu_release_memories(m->dev, m); /* half written: the next call writes it all again */
    r->stale = st != NTPU_OK;
    return st;
}

/* Rounded to bf16, padded with zero lanes and samples. */
ntpu_status ntpu_net_res_write_input(ntpu_model *m, const float *x, size_t b0, size_t count, uint32_t at)
{
    const ntpu_net_res *r = m->net->res;
    const size_t n = m->n, hw = (size_t)r->h[0] * r->w[0], C = m->arch.in_c, rows = r->ct[0] * hw * MB;
    uint16_t *u = (uint16_t *)staging(m, rows);
    if (!u)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    memset(u, 0, rows * n * 2);
    for (size_t b = 0; b < count; b++)
        for (size_t c = 0; c < C; c++)
            for (size_t pix = 0; pix < hw; pix++)
                u[((c / n * hw + pix) * MB + b) * n + c % n] = ntpu_bf16_from_f32(x[((b0 + b) * C + c) * hw + pix]);
    return ntpu_write_rows(m->dev, NTPU_MEM_UB, at, (uint32_t)rows, u);
}

/* The logits of count samples (ACC rows of the last item) into logits (count x classes). */
static ntpu_status read_logits(ntpu_model *m, size_t count, float *logits)
{
    const ntpu_net_res *r = m->net->res;
    const size_t n = m->n, L = m->arch.n, cto = r->ct[L], classes = m->net->classes;
    uint32_t *rows = staging(m, cto * MB);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    ntpu_status st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, r->acc_g[L], (uint32_t)(cto * MB), rows);
    for (size_t b = 0; b < count && st == NTPU_OK; b++)
        for (size_t c = 0; c < classes; c++)
            memcpy(&logits[b * classes + c], &rows[((c / n) * MB + b) * n + c % n], 4);
    return st;
}

/* The gradient of count samples' logits to where the logits were; zero for the padded samples. */
static ntpu_status write_dlogits(ntpu_model *m, size_t count, const float *grad)
{
    const ntpu_net_res *r = m->net->res;
    const size_t n = m->n, L = m->arch.n, cto = r->ct[L], classes = m->net->classes;
    uint32_t *rows = staging(m, cto * MB);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    memset(rows, 0, cto * MB * n * 4);
    for (size_t b = 0; b < count; b++)
        for (size_t c = 0; c < classes; c++)
            memcpy(&rows[((c / n) * MB + b) * n + c % n], &grad[b * classes + c], 4);
    return ntpu_write_rows(m->dev, NTPU_MEM_ACC, r->acc_g[L], (uint32_t)(cto * MB), rows);
}

/* Item i's dW and db from ACC into the parameters' gradients, in PyTorch's layouts. */
static ntpu_status read_grads(ntpu_model *m, size_t i)
{
    const ntpu_layer *l = &m->arch.item[i];
    const ntpu_net_res *r = m->net->res;
    ntpu_net_param *p = &m->param[i];
    const size_t n = m->n, cti = r->ct[i], cto = r->ct[i + 1], hw = (size_t)r->h[i] * r->w[i];
    const size_t conv = l->kind == NTPU_LAYER_CONV, KK = conv ? (size_t)l->k * l->k : 1;
    const size_t block = conv ? KK * cti : hw * cti, C = conv ? l->in_c : ntpu_layer_in_size(l) / hw;
    uint32_t *rows = staging(m, cto * block * n + cto);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    ntpu_status st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, r->acc_dw[i], (uint32_t)(cto * block * n), rows);
    if (st == NTPU_OK)
        st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, r->acc_db[i], (uint32_t)cto, rows + cto * block * n * n);
    if (st != NTPU_OK)
        return st;
    for (size_t co = 0; co < p->nb; co++)
        for (size_t ci = 0; ci < C; ci++)
            for (size_t outer = 0; outer < (conv ? KK : hw); outer++) {
                size_t row = (co / n * block + outer * cti + ci / n) * n + ci % n;
                size_t at = conv ? (co * C + ci) * KK + outer : (co * C + ci) * hw + outer;
                memcpy(&p->gw[at], &rows[row * n + co % n], 4);
            }
    memcpy(p->gb, rows + cto * block * n * n, p->nb * 4);
    return NTPU_OK;
}

/* Samples b0 .. b0+count-1 of x to the device, dense when they spread (net_spread.c), and the forward pass:
 * *run 1 when it ran as the stored program (prog: the programs are in use), which the backward pass then
 * uses too; else -1 with the input spread, 0 written padded. */
static ntpu_status input_and_forward(ntpu_model *m, const float *x, size_t b0, size_t count, int prog, int *run)
{
    const ntpu_net_res *r = m->net->res;
    const int spread = ntpu_net_spread_ok(m, x, b0, count);
    ntpu_status st =
        spread ? ntpu_net_write_dense(m, x, b0, count) : ntpu_net_res_write_input(m, x, b0, count, r->ub[0]);
    *run = prog && spread == r->dense ? 1 : spread ? -1 : 0;
    if (st != NTPU_OK)
        return st;
    return *run > 0 ? ntpu_net_prog_forward(m) : ntpu_net_res_forward(m, spread);
}

/* The logits and their gradient for max_batch samples. */
static float *host_logits(ntpu_model *m)
{
    return ntpu_net_need(&m->net->res->host, m->max_batch * m->net->classes * 2 * sizeof(float));
}

/* Every micro-batch's forward pass, loss and backward pass, the loss's gradient divided by divisor: dW and db
 * summed in ACC (or the device optimizer's update after the last, *prog saying whether by program). */
static ntpu_status backprop(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch, size_t divisor,
                            float *total, size_t *correct, int *prog)
{
    const size_t classes = m->net->classes;
    float *logits = host_logits(m);
    if (!logits)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    float *grad = logits + m->max_batch * classes;
    *prog = 0;
    ntpu_status st = own_device(m);
    if (st == NTPU_OK)
        st = ntpu_net_prog_prepare(m, prog);
    if (st == NTPU_OK && !m->net->res->grads_zero)
        st = *prog ? ntpu_net_prog_zero(m) : ntpu_net_zero_grads(m);
    m->net->res->grads_zero = 0;
    for (size_t b0 = 0; b0 < batch && st == NTPU_OK; b0 += MB) {
        const size_t count = batch - b0 < MB ? batch - b0 : MB;
        int run;
        if ((st = input_and_forward(m, x, b0, count, *prog, &run)) != NTPU_OK ||
            (st = read_logits(m, count, logits + b0 * classes)) != NTPU_OK)
            break;
        ntpu_softmax_xent_part(logits + b0 * classes, labels + b0, count, divisor, classes, grad + b0 * classes, total,
                               correct);
        if ((st = write_dlogits(m, count, grad + b0 * classes)) == NTPU_OK)
            st = run > 0 ? ntpu_net_prog_backward(m, x, b0, count) : ntpu_net_res_backward(m, run < 0, x, b0, count);
    }
    return st;
}

ntpu_status ntpu_net_res_grad(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch, size_t divisor,
                              float *total, size_t *correct)
{
    int prog;
    ntpu_status st = backprop(m, x, labels, batch, divisor, total, correct, &prog);
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++)
        if (m->param[i].w)
            st = read_grads(m, i);
    return st;
}

ntpu_status ntpu_net_res_train_step(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch,
                                    ntpu_step_result *res)
{
    float total = 0.0f;
    ntpu_step_result r = {0};
    int prog;
    ntpu_status st = backprop(m, x, labels, batch, batch, &total, &r.correct, &prog);
    if (st == NTPU_OK)
        m->net->res->grads_zero = (st = ntpu_net_devopt_step(m, prog)) == NTPU_OK;
    if (st == NTPU_OK && res) {
        r.loss = total / (float)batch;
        *res = r;
    }
    return st;
}

ntpu_status ntpu_net_res_predict(ntpu_model *m, const float *x, size_t batch, float *logits)
{
    int prog = 0;
    ntpu_status st = own_device(m);
    if (st == NTPU_OK)
        st = ntpu_net_prog_prepare(m, &prog);
    for (size_t b0 = 0; b0 < batch && st == NTPU_OK; b0 += MB) {
        const size_t count = batch - b0 < MB ? batch - b0 : MB;
        int run;
        if ((st = input_and_forward(m, x, b0, count, prog, &run)) == NTPU_OK)
            st = read_logits(m, count, logits + b0 * m->net->classes);
    }
    return st;
}

ntpu_status ntpu_net_sync(ntpu_model *m)
{
    if (m->net->res)
        m->net->res->stale = 1;
    m->dev_ahead = 0; /* the host's parameters are the model's now */
    return NTPU_OK;
}
