/* SPDX-License-Identifier: Apache-2.0 */
/* Where a resident net lives in the device's memories (net_resident.h has the layout), and whether it
 * can: the features it needs, the items the commands cover, the fields' wire widths and the room. UB
 * rows are shared by lifetimes (net_plan_ub.c); WB and ACC rows are each value's and item's own, except
 * that a relu and a flatten share their input's gradient and gZ as weight tiles is one region for every
 * item. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_resident.h"
#include "ntpu/program.h"

#define FIELD_MAX 255u  /* in_h, in_w, out_w, stride, k: u8 fields of CONV and POOL */
#define ROWS_MAX 65535u /* rows of one command */

static int has_params(ntpu_layer_kind k)
{
    return k == NTPU_LAYER_CONV || k == NTPU_LAYER_FC;
}

/* Rows of one channel tile of value v for a micro-batch. */
static size_t tile_rows(const ntpu_net_res *r, size_t v)
{
    return (size_t)r->h[v] * r->w[v] * NTPU_NET_MB;
}

static size_t map_rows(const ntpu_net_res *r, size_t v)
{
    return r->ct[v] * tile_rows(r, v);
}

static uint32_t take(size_t *at, size_t rows)
{
    size_t a = *at;
    *at += rows;
    return (uint32_t)(a < UINT32_MAX ? a : UINT32_MAX);
}

/* Pool item i right after a conv, or after a relu fused into one when i is a maxpool: the conv's map
 * holds one band of pixel rows (the conv pools each as it goes); a maxpool also takes the relu's backward. */
static void pool_after_conv(const ntpu_model *m, ntpu_net_res *r, size_t i)
{
    if (i >= 1 && m->arch.item[i - 1].kind == NTPU_LAYER_CONV) {
        r->band[i] = m->arch.item[i].k;
        return;
    }
    if (i >= 2 && r->fused[i - 1] && m->arch.item[i - 2].kind == NTPU_LAYER_CONV &&
        m->arch.item[i].kind == NTPU_LAYER_MAXPOOL)
        r->band[i - 1] = m->arch.item[i].k, r->pooled_mask[i] = 1;
}

/* Item i of kind conv or fc: its weights, biases, db and dW. */
static void place_params(const ntpu_model *m, ntpu_net_res *r, size_t i, size_t v)
{
    const ntpu_layer *l = &m->arch.item[i];
    const size_t n = m->n, cto = r->ct[v + 1];
    const size_t block =
        l->kind == NTPU_LAYER_CONV ? (size_t)l->k * l->k * r->ct[v] * n : (size_t)r->h[v] * r->w[v] * r->ct[v] * n;
    const size_t mom = r->devopt && m->opt.kind == NTPU_OPT_MOMENTUM;
    r->wb_w[i] = take(&r->wb_rows, cto * block);
    r->acc_b[i] = take(&r->acc_rows, cto * (1 + mom));
    r->acc_db[i] = take(&r->acc_rows, cto);
    r->acc_dw[i] = take(&r->acc_rows, cto * block);
    if (!r->devopt)
        return;
    r->acc_mw[i] = take(&r->acc_rows, cto * (1 + mom) * block);
    if (m->opt.kind == NTPU_OPT_ADAM || m->opt.kind == NTPU_OPT_ADAMW) {
        r->os_w[i] = take(&r->os_rows, 2 * cto * block);
        r->os_b[i] = take(&r->os_rows, 2 * cto);
    }
}

/* The shape of value v + 1 (item i's output on the device) and its rows; NULL, or why not. */
static const char *place_item(const ntpu_model *m, ntpu_net_res *r, size_t i, size_t v)
{
    const ntpu_layer *l = &m->arch.item[i];
    const size_t n = m->n;
    const int grad = i >= r->first;
    r->ct[v + 1] = r->ct[v], r->h[v + 1] = r->h[v], r->w[v + 1] = r->w[v];
    switch (l->kind) {
    case NTPU_LAYER_RELU:
        if (i == 0 || r->fused[i - 1] || !has_params(m->arch.item[i - 1].kind))
            return "a relu that does not follow a conv or fc (the device applies relu in ACT)";
        r->fused[i] = 1;
        r->acc_g[v + 1] = r->acc_g[v];
        return NULL;
    case NTPU_LAYER_FLATTEN: r->acc_g[v + 1] = r->acc_g[v]; return NULL;
    case NTPU_LAYER_MAXPOOL:
    case NTPU_LAYER_AVGPOOL:
        r->h[v + 1] = l->out_h, r->w[v + 1] = l->out_w;
        pool_after_conv(m, r, i);
        if (l->kind == NTPU_LAYER_AVGPOOL)
            r->acc_r[i] = take(&r->acc_rows, 1);
        r->acc_g[v + 1] = grad ? take(&r->acc_rows, map_rows(r, v + 1)) : 0;
        return l->k > FIELD_MAX ? "a pool window over 255" : NULL;
    case NTPU_LAYER_CONV:
    case NTPU_LAYER_FC:
        r->ct[v + 1] = (l->out_c + (unsigned)n - 1) / (unsigned)n;
        r->h[v + 1] = l->kind == NTPU_LAYER_CONV ? l->out_h : 1;
        r->w[v + 1] = l->kind == NTPU_LAYER_CONV ? l->out_w : 1;
        r->acc_g[v + 1] = take(&r->acc_rows, map_rows(r, v + 1));
        r->wb_g = map_rows(r, v + 1) > r->wb_g ? (uint32_t)map_rows(r, v + 1) : r->wb_g;
        place_params(m, r, i, v);
        if (l->kind == NTPU_LAYER_CONV && (l->stride > FIELD_MAX || (size_t)l->k * l->k * r->ct[v] * n > ROWS_MAX))
            return "a conv whose stride or weight-gradient rows (N*K*K*channel tiles) exceed a command's fields";
        if (l->kind == NTPU_LAYER_FC && (size_t)r->ct[v] * n > ROWS_MAX)
            return "an fc whose input has more than 65535 channels a pixel";
        if (r->devopt && (size_t)r->h[v] * r->w[v] * r->ct[v] * n > ROWS_MAX)
            return "an fc with more than 65535 weight rows an output tile, more than one OPTIM covers";
        return NULL;
    }
    return "an unknown item";
}

/* NULL when every value's map fits the commands' fields, else why not. */
static const char *check_fields(const ntpu_model *m, const ntpu_net_res *r)
{
    for (size_t v = 0; v <= m->arch.n; v++)
        if (r->h[v] > FIELD_MAX || r->w[v] > FIELD_MAX || r->ct[v] * tile_rows(r, v) > ROWS_MAX)
            return "a feature map over 255 pixels a side or 65535 rows a micro-batch";
    return NULL;
}

/* UB rows for the maps; when they do not fit, with the input written twice if that fits. */
static void place_ub(const ntpu_model *m, ntpu_net_res *r)
{
    r->rewrite_input = 0;
    ntpu_net_res_place_ub(m, r);
    if (r->ub_rows > m->dev->info.ub_rows && r->first == 0) {
        ntpu_net_res twice = *r;
        twice.rewrite_input = 1;
        ntpu_net_res_place_ub(m, &twice);
        if (twice.ub_rows <= m->dev->info.ub_rows)
            *r = twice;
    }
}

const char *ntpu_net_res_layout(const ntpu_model *m, ntpu_net_res *r, char *why, size_t len)
{
    const ntpu_arch *a = &m->arch;
    const size_t n = m->n;
    while (r->first < a->n && !has_params(a->item[r->first].kind))
        r->first++;
    r->ct[0] = (a->in_c + (unsigned)n - 1) / (unsigned)n, r->h[0] = a->in_h, r->w[0] = a->in_w;
    for (size_t i = 0; i < a->n; i++) {
        const char *no = place_item(m, r, i, i);
        if (no)
            return no;
    }
    r->dense = a->item[0].kind == NTPU_LAYER_CONV && a->in_c == 1;
    place_ub(m, r);
    if (r->dense && r->ub_rows > m->dev->info.ub_rows) { /* the dense input's rows may be the ones too many */
        r->dense = 0;
        place_ub(m, r);
    }
    r->wb_g = take(&r->wb_rows, r->wb_g);
    r->wb_e0 = take(&r->wb_rows, n);
    if (r->devopt)
        r->acc_k =
            take(&r->acc_rows, m->opt.kind == NTPU_OPT_ADAM || m->opt.kind == NTPU_OPT_ADAMW ? NTPU_ADAM_AUX_ROWS : 3);
    const char *no = check_fields(m, r);
    if (no)
        return no;
    const ntpu_info *info = &m->dev->info;
    const struct {
        const char *name;
        size_t need, have;
    } mem[] = {{"UB", r->ub_rows, info->ub_rows},
               {"WB", r->wb_rows, info->wb_rows},
               {"ACC", r->acc_rows, info->acc_rows},
               {"OS", r->os_rows, info->os_rows}};
    for (size_t k = 0; k < 4; k++)
        if (mem[k].need > mem[k].have) {
            snprintf(why, len,
                     "needs %zu %s rows for micro-batches of %u (UB %zu, WB %zu, ACC %zu), the device has %zu",
                     mem[k].need, mem[k].name, NTPU_NET_MB, r->ub_rows, r->wb_rows, r->acc_rows, mem[k].have);
            return why;
        }
    return NULL;
}

/* NULL when the device has what a resident net needs, else why not. */
static const char *missing_feature(const ntpu_device *dev)
{
    const unsigned f = dev->info.features;
    if (!(f & NTPU_FEATURE_CONV_BIT))
        return "the device has no convolution addressing (feature CONV, protocol 1.5)";
    if (!(f & NTPU_FEATURE_POOL_BIT) || !(f & NTPU_FEATURE_VECTOR_BIT))
        return "the device has no vector unit with POOL (features VECTOR and POOL, protocol 1.5)";
    if (!(f & NTPU_FEATURE_TRANSPOSE_A_BIT) || !(f & NTPU_FEATURE_TRANSPOSE_BIT))
        return "the device has no transposed activations or weights (features TRANSPOSE_A, TRANSPOSE)";
    if (NTPU_NET_MB % dev->n != 0)
        return "the array's N does not divide the micro-batch of 8 samples";
    return NULL;
}

/* NULL when the device can run m's optimizer (which m->opt.device asks for), else why not. */
static const char *devopt_missing(const ntpu_model *m)
{
    const unsigned f = m->dev->info.features;
    if (!m->opt.device)
        return "the optimizer was not asked to run on the device (ntpu_optim_config.device is 0)";
    if (!(f & NTPU_FEATURE_OPTIM_BIT))
        return "the device has no OPTIM (protocol 1.3, vector unit)";
    if ((m->opt.kind == NTPU_OPT_ADAM || m->opt.kind == NTPU_OPT_ADAMW) && !(f & NTPU_FEATURE_ADAM_BIT))
        return "Adam and AdamW need the device's ADAM (protocol 1.4: divide, square root, OS memory)";
    return NULL;
}

/* The layout, with the device optimizer's state when m asks for it and it fits; m->devopt and
 * m->devopt_why say which. */
static const char *layout_with_optimizer(ntpu_model *m, ntpu_net_res *r, char *why, size_t len)
{
    const char *no = devopt_missing(m);
    if (no)
        snprintf(m->devopt_why, sizeof m->devopt_why, "%s", no);
    r->devopt = !no;
    no = ntpu_net_res_layout(m, r, why, len);
    if (no && r->devopt) {
        snprintf(m->devopt_why, sizeof m->devopt_why, "with its optimizer state the net %.120s", no);
        memset(r, 0, sizeof *r);
        no = ntpu_net_res_layout(m, r, why, len);
    }
    m->devopt = !no && r->devopt;
    m->acc_k = r->acc_k;
    return no;
}

ntpu_status ntpu_net_res_plan(ntpu_model *m)
{
    char why[160];
    const char *no = missing_feature(m->dev);
    ntpu_net_res *r = calloc(1, sizeof *r);
    if (!r)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    m->devopt = 0;
    if (!no)
        no = layout_with_optimizer(m, r, why, sizeof why);
    if (no) {
        snprintf(m->why, sizeof m->why, "a conv net on the host path: %s", no);
        snprintf(m->devopt_why, sizeof m->devopt_why, "a conv net on the host path keeps the optimizer on the host");
        free(r);
        return NTPU_OK;
    }
    r->stale = 1;
    m->net->res = r;
    m->streamed = 0;
    return NTPU_OK;
}

ntpu_status ntpu_net_replan(ntpu_model *m)
{
    if (!m->net->res)
        return NTPU_OK; /* the host path: devopt stays 0, devopt_why says why */
    ntpu_release_memories(m->dev, m);
    ntpu_net_res_free(m->net->res);
    m->net->res = NULL;
    m->streamed = 1;
    return ntpu_net_res_plan(m);
}

void ntpu_net_res_free(ntpu_net_res *r)
{
    if (!r)
        return;
    ntpu_program_free(r->prog_fwd);
    ntpu_program_free(r->prog_bwd);
    ntpu_program_free(r->prog_first);
    ntpu_program_free(r->prog_zero);
    ntpu_program_free(r->prog_opt);
    free(r->rows.p);
    free(r->host.p);
    free(r);
}
