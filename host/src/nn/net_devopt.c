/* SPDX-License-Identifier: Apache-2.0 */
/* The device optimizer of a resident net (net_resident.h has the layout): the fp32 master weights sit in
 * ACC in dW's layout, so one OPTIM (or OPTIM ADAM) per output tile updates them from dW row for row, and
 * one ACT OUT_WB per output tile rounds them to bf16 into the weight rows the forward pass loads, which
 * have that layout too. The step's parameters never cross the link; ntpu_model_fetch reads them back.
 * Each update is ntpu_optim_update's, element by element (docs/isa.md, OPTIM), so the bits are the host
 * optimizer's. */
#include <string.h>

#include "net_resident.h"

static int is_adam(const ntpu_model *m)
{
    return m->opt.kind == NTPU_OPT_ADAM || m->opt.kind == NTPU_OPT_ADAMW;
}

/* Item i's shape on the device: output tiles, dW rows an output tile, and the map from a row to the
 * PyTorch index of the weight it holds. */
typedef struct shape {
    size_t n, cto, rows, cti, outer, C, KK;
    int conv;
} shape;

static shape shape_of(const ntpu_model *m, size_t i)
{
    const ntpu_layer *l = &m->arch.item[i];
    const ntpu_net_res *r = m->net->res;
    shape s = {.n = m->n, .cto = r->ct[i + 1], .cti = r->ct[i], .conv = l->kind == NTPU_LAYER_CONV};
    const size_t hw = (size_t)r->h[i] * r->w[i];
    s.KK = s.conv ? (size_t)l->k * l->k : 1;
    s.outer = s.conv ? s.KK : hw;
    s.C = s.conv ? l->in_c : ntpu_layer_in_size(l) / hw;
    s.rows = s.outer * s.cti * s.n;
    return s;
}

/* The PyTorch index of the weight in row k (within an output tile's rows), lane b of output tile ot, or
 * SIZE_MAX for a padded lane or channel. */
static size_t weight_index(const shape *s, size_t nb, size_t ot, size_t k, size_t b)
{
    const size_t j = k / s->n, co = ot * s->n + b, ci = j % s->cti * s->n + k % s->n, outer = j / s->cti;
    if (co >= nb || ci >= s->C)
        return SIZE_MAX;
    return (co * s->C + ci) * s->outer + outer;
}

/* The tensors src[0 .. count-1] (weight-shaped, PyTorch layout) into rows: output tile ot's rows of
 * tensor t at rows + (ot*count + t)*R rows, padding zero. */
static void to_rows(const shape *s, size_t nb, const float *const *src, size_t count, float *rows)
{
    for (size_t ot = 0; ot < s->cto; ot++)
        for (size_t t = 0; t < count; t++)
            for (size_t k = 0; k < s->rows; k++)
                for (size_t b = 0; b < s->n; b++) {
                    const size_t at = weight_index(s, nb, ot, k, b);
                    rows[((ot * count + t) * s->rows + k) * s->n + b] = at == SIZE_MAX ? 0.0f : src[t][at];
                }
}

static void from_rows(const shape *s, size_t nb, float *const *dst, size_t count, const float *rows)
{
    for (size_t ot = 0; ot < s->cto; ot++)
        for (size_t t = 0; t < count; t++)
            for (size_t k = 0; k < s->rows; k++)
                for (size_t b = 0; b < s->n; b++) {
                    const size_t at = weight_index(s, nb, ot, k, b);
                    if (at != SIZE_MAX)
                        dst[t][at] = rows[((ot * count + t) * s->rows + k) * s->n + b];
                }
}

/* Bias-shaped tensors: CTo rows each, one after another. */
static void bias_rows(const shape *s, size_t nb, const float *const *src, size_t count, float *rows)
{
    for (size_t t = 0; t < count; t++)
        for (size_t o = 0; o < s->cto * s->n; o++)
            rows[t * s->cto * s->n + o] = o < nb ? src[t][o] : 0.0f;
}

static float *staging(ntpu_model *m, size_t rows)
{
    return ntpu_net_need(&m->net->res->rows, rows * m->n * 4);
}

/* Item i's master weights (and momentum) to ACC, its Adam moments to OS. */
static ntpu_status upload_item(ntpu_model *m, size_t i)
{
    const ntpu_net_res *r = m->net->res;
    const ntpu_net_param *p = &m->param[i];
    const shape s = shape_of(m, i);
    const size_t mom = m->opt.kind == NTPU_OPT_MOMENTUM, adam = is_adam(m);
    float *rows = staging(m, s.cto * 2 * s.rows);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    const float *w[2] = {p->w, p->ws1}, *b[2] = {p->b, p->bs1};
    to_rows(&s, p->nb, w, 1 + mom, rows);
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, r->acc_mw[i], (uint32_t)(s.cto * (1 + mom) * s.rows), rows);
    if (st == NTPU_OK && mom) {
        bias_rows(&s, p->nb, b + 1, 1, rows);
        st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, r->acc_b[i] + (uint32_t)s.cto, (uint32_t)s.cto, rows);
    }
    if (st != NTPU_OK || !adam)
        return st;
    const float *moments[2] = {p->ws1, p->ws2}, *bmoments[2] = {p->bs1, p->bs2};
    to_rows(&s, p->nb, moments, 2, rows);
    if ((st = ntpu_write_rows(m->dev, NTPU_MEM_OS, r->os_w[i], (uint32_t)(s.cto * 2 * s.rows), rows)) != NTPU_OK)
        return st;
    bias_rows(&s, p->nb, bmoments, 2, rows);
    return ntpu_write_rows(m->dev, NTPU_MEM_OS, r->os_b[i], (uint32_t)(2 * s.cto), rows);
}

ntpu_status ntpu_net_devopt_upload(ntpu_model *m)
{
    ntpu_status st = NTPU_OK;
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++)
        if (m->param[i].w)
            st = upload_item(m, i);
    m->k_valid = 0;
    m->dev_ahead = 0;
    return st;
}

/* Item i: OPTIM over each output tile's master rows and dW, then its bf16 weights to WB; its biases. */
static ntpu_status step_item(ntpu_model *m, size_t i)
{
    const ntpu_net_res *r = m->net->res;
    const shape s = shape_of(m, i);
    const int adam = is_adam(m), decoupled = m->opt.kind == NTPU_OPT_ADAMW;
    const unsigned flags = m->opt.kind == NTPU_OPT_MOMENTUM ? NTPU_OPTIM_MOMENTUM : 0;
    const uint32_t R = (uint32_t)s.rows, pitch = (flags ? 2 : 1) * R;
    ntpu_status st = NTPU_OK;
    for (uint32_t ot = 0; ot < s.cto && st == NTPU_OK; ot++) {
        const uint32_t mw = r->acc_mw[i] + ot * pitch, dw = r->acc_dw[i] + ot * R;
        st = adam ? ntpu_vec_optim_adam(m->dev, decoupled, mw, dw, R, m->acc_k, r->os_w[i] + ot * 2 * R)
                  : ntpu_vec_optim(m->dev, flags, mw, dw, R, m->acc_k);
        if (st == NTPU_OK)
            st = ntpu_vec_act(m->dev, NTPU_OUT_WB, mw, r->wb_w[i] + ot * R, R, 0);
    }
    if (st != NTPU_OK)
        return st;
    const uint32_t cto = (uint32_t)s.cto;
    return adam ? ntpu_vec_optim_adam(m->dev, decoupled, r->acc_b[i], r->acc_db[i], cto, m->acc_k, r->os_b[i])
                : ntpu_vec_optim(m->dev, flags, r->acc_b[i], r->acc_db[i], cto, m->acc_k);
}

ntpu_status ntpu_net_devopt_update(ntpu_model *m)
{
    ntpu_status st = NTPU_OK;
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++)
        if (m->param[i].w)
            st = step_item(m, i);
    return st == NTPU_OK ? ntpu_net_zero_grads(m) : st; /* the next step's sums start here */
}

ntpu_status ntpu_net_devopt_step(ntpu_model *m, int prog)
{
    ntpu_net_profile *prof = m->net->profile;
    ntpu_status st = prof ? ntpu_net_profile_mark(m, &prof->host) : NTPU_OK;
    if (st == NTPU_OK)
        st = ntpu_model_write_optim_consts(m);
    if (st == NTPU_OK)
        st = prog ? ntpu_net_prog_update(m) : ntpu_net_devopt_update(m);
    if (st == NTPU_OK && prof)
        st = ntpu_net_profile_mark(m, &prof->opt);
    if (st == NTPU_OK) {
        m->step++;
        m->dev_ahead = 1;
    }
    return st;
}

/* Item i's master weights, biases and optimizer state from the device into its parameters. */
static ntpu_status fetch_item(ntpu_model *m, size_t i)
{
    const ntpu_net_res *r = m->net->res;
    ntpu_net_param *p = &m->param[i];
    const shape s = shape_of(m, i);
    const size_t mom = m->opt.kind == NTPU_OPT_MOMENTUM;
    float *rows = staging(m, s.cto * 2 * s.rows);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    float *w[2] = {p->w, p->ws1};
    ntpu_status st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, r->acc_mw[i], (uint32_t)(s.cto * (1 + mom) * s.rows), rows);
    if (st != NTPU_OK)
        return st;
    from_rows(&s, p->nb, w, 1 + mom, rows);
    if ((st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, r->acc_b[i], (uint32_t)(s.cto * (1 + mom)), rows)) != NTPU_OK)
        return st;
    memcpy(p->b, rows, p->nb * 4);
    if (mom)
        memcpy(p->bs1, rows + s.cto * s.n, p->nb * 4);
    if (!is_adam(m))
        return NTPU_OK;
    float *moments[2] = {p->ws1, p->ws2};
    if ((st = ntpu_read_rows(m->dev, NTPU_MEM_OS, r->os_w[i], (uint32_t)(s.cto * 2 * s.rows), rows)) != NTPU_OK)
        return st;
    from_rows(&s, p->nb, moments, 2, rows);
    if ((st = ntpu_read_rows(m->dev, NTPU_MEM_OS, r->os_b[i], (uint32_t)(2 * s.cto), rows)) != NTPU_OK)
        return st;
    memcpy(p->bs1, rows, p->nb * 4);
    memcpy(p->bs2, rows + s.cto * s.n, p->nb * 4);
    return NTPU_OK;
}

ntpu_status ntpu_net_devopt_fetch(ntpu_model *m)
{
    ntpu_status st = NTPU_OK;
    for (size_t i = 0; i < m->arch.n && st == NTPU_OK; i++)
        if (m->param[i].w)
            st = fetch_item(m, i);
    if (st == NTPU_OK)
        m->dev_ahead = 0;
    return st;
}
