/* SPDX-License-Identifier: Apache-2.0 */
/* Saving a model (ntpu_model_save; see ntpu/nn.h): the model file FILE holds only the tensors of the
 * equivalent torch.nn.Sequential ("<i>.weight", "<i>.bias", fp32, PyTorch's layouts) with the SPEC
 * and input shape as metadata, so that PyTorch's strict load_state_dict takes it; the sidecar
 * FILE.state holds the optimizer's slots under PyTorch's names, the settings, the step, the
 * caller's tensors and metadata, and the CRC-32 of FILE's tensor data. Both are written to
 * temporary files first and put in place one after the other (docs/decisions/0030). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "checkpoint.h"
#include "io/io.h"

const char *ckpt_slot_name(ntpu_optimizer kind, unsigned slot)
{
    if (kind == NTPU_OPT_MOMENTUM)
        return "momentum_buffer";
    return slot == 0 ? "exp_avg" : "exp_avg_sq"; /* PyTorch's names for Adam's m and v */
}

/* The weight (w[0]) and bias (w[1]) of item `item` (it), the fc_seen-th fc before it: names, shapes,
 * and with m, where m keeps them (a net: param[item]; an MLP: layer fc_seen, weights transposed). */
static void list_item(const ntpu_layer *it, ntpu_model *m, size_t item, size_t fc_seen, int legacy, ckpt_tensor *w)
{
    ckpt_tensor *b = w + 1;
    const size_t in = (size_t)it->in_c * it->in_h * it->in_w;
    if (it->kind == NTPU_LAYER_CONV)
        *w = (ckpt_tensor){
            .rank = 4, .shape = {it->out, it->in_c, it->k, it->k}, .count = (size_t)it->out * it->in_c * it->k * it->k};
    else
        *w = (ckpt_tensor){.rank = 2, .shape = {it->out, in}, .count = (size_t)it->out * in};
    *b = (ckpt_tensor){.rank = 1, .shape = {it->out}, .count = it->out};
    if (legacy) {
        snprintf(w->name, sizeof w->name, "fc%zu.weight", fc_seen);
        snprintf(b->name, sizeof b->name, "fc%zu.bias", fc_seen);
    } else {
        snprintf(w->name, sizeof w->name, "%u.weight", it->index);
        snprintf(b->name, sizeof b->name, "%u.bias", it->index);
    }
    if (!m)
        return;
    if (m->net) {
        const ntpu_net_param *p = &m->param[item];
        memcpy(w->val, (float *[3]){p->w, p->ws1, p->ws2}, sizeof w->val);
        memcpy(b->val, (float *[3]){p->b, p->bs1, p->bs2}, sizeof b->val);
    } else {
        const size_t l = fc_seen;
        memcpy(w->val, (float *[3]){m->w[l], m->ws1[l], m->ws2[l]}, sizeof w->val);
        memcpy(b->val, (float *[3]){m->b[l], m->bs1[l], m->bs2[l]}, sizeof b->val);
        w->rows = m->sizes[l];
        w->cols = m->sizes[l + 1];
    }
}

size_t ckpt_list(const ntpu_arch *a, ntpu_model *m, int legacy, ckpt_tensor *out)
{
    size_t n = 0, fc_seen = 0;
    for (size_t i = 0; i < a->n && n + 2 <= CKPT_MAX_TENSORS; i++) {
        const ntpu_layer *it = &a->item[i];
        if (it->kind != NTPU_LAYER_CONV && it->kind != NTPU_LAYER_FC)
            continue;
        list_item(it, m, i, fc_seen, legacy, &out[n]);
        n += 2;
        fc_seen += it->kind == NTPU_LAYER_FC;
    }
    return n;
}

uint32_t ckpt_crc(uint32_t start, const ntpu_st_tensor *const *t, size_t n)
{
    uLong crc = start;
    for (size_t i = 0; i < n; i++)
        for (size_t at = 0; at < t[i]->nbytes;) {
            size_t chunk = t[i]->nbytes - at < (1u << 30) ? t[i]->nbytes - at : (1u << 30);
            crc = crc32(crc, (const Bytef *)t[i]->data + at, (uInt)chunk);
            at += chunk;
        }
    return (uint32_t)crc;
}

char *ckpt_path_with(const char *path, const char *suffix)
{
    size_t len = strlen(path) + strlen(suffix) + 1;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s%s", path, suffix);
    return s;
}

int ckpt_arch_text(const ntpu_arch *a, char *spec, size_t spec_len, char *input, size_t input_len)
{
    if (ntpu_arch_format(a, spec, spec_len) != NTPU_OK)
        return -1;
    int n = snprintf(input, input_len, "%ux%ux%u", a->in_c, a->in_h, a->in_w);
    return n < 0 || (size_t)n >= input_len ? -1 : 0;
}

/* in x out (ours) -> out x in (PyTorch's nn.Linear layout) */
static void transpose(const float *src, float *dst, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
}

size_t ckpt_first_non_finite(const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, b + 4 * i, sizeof v);
        if (!isfinite(v))
            return i;
    }
    return n;
}

/* What one save writes: the model file's tensors and metadata, the sidecar's. */
typedef struct save_plan {
    ckpt_tensor ct[CKPT_MAX_TENSORS];
    size_t n;
    unsigned slots;
    ntpu_st_tensor model[CKPT_MAX_TENSORS];
    ntpu_st_tensor *state; /* n * slots slots, then the caller's extra tensors */
    size_t n_state;
    char (*state_names)[48];
    float *buf; /* PyTorch-layout copies of an MLP's weights and their slots */
    char spec[1024], input[48];
} save_plan;

static void plan_free(save_plan *p)
{
    free(p->state);
    free(p->state_names);
    free(p->buf);
}

/* The tensor data of slot s (0: the value) of tensor t, in the file's layout (copied to *at when
 * the model keeps another). */
static const float *file_layout(const ckpt_tensor *t, unsigned s, float **at)
{
    if (!t->rows)
        return t->val[s];
    float *dst = *at;
    transpose(t->val[s], dst, t->rows, t->cols);
    *at += t->count;
    return dst;
}

static ntpu_status plan_tensors(ntpu_model *m, save_plan *p, const ntpu_st_tensor *extra, size_t n_extra)
{
    p->n = ckpt_list(ntpu_model_arch(m), m, 0, p->ct);
    p->slots = ntpu_optimizer_slots(m->opt.kind);
    size_t floats = 1;
    for (size_t i = 0; i < p->n; i++)
        floats += p->ct[i].rows ? p->ct[i].count * (1 + p->slots) : 0;
    p->n_state = p->n * p->slots + n_extra;
    p->state = calloc(p->n_state + 1, sizeof *p->state);
    p->state_names = calloc(p->n * p->slots + 1, sizeof *p->state_names);
    p->buf = malloc(floats * sizeof *p->buf);
    if (!p->state || !p->state_names || !p->buf)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "save: out of memory");
    float *at = p->buf;
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        const ckpt_tensor *t = &p->ct[i];
        ntpu_st_tensor base = {t->name, "F32",       t->rank, {t->shape[0], t->shape[1], t->shape[2], t->shape[3]},
                               NULL,    t->count * 4};
        p->model[i] = base;
        p->model[i].data = file_layout(t, 0, &at);
        for (unsigned s = 1; s <= p->slots; s++, k++) {
            snprintf(p->state_names[k], sizeof p->state_names[k], "%.31s.%.16s", t->name,
                     ckpt_slot_name(m->opt.kind, s - 1));
            p->state[k] = base;
            p->state[k].name = p->state_names[k];
            p->state[k].data = file_layout(t, s, &at);
        }
    }
    for (size_t i = 0; i < n_extra; i++)
        p->state[k++] = extra[i];
    if (ckpt_arch_text(ntpu_model_arch(m), p->spec, sizeof p->spec, p->input, sizeof p->input))
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "save: the model's SPEC is too long to write");
    return NTPU_OK;
}

/* The sidecar's metadata: key, value, ..., NULL into kv (room for max + 1), texts in num. */
static void state_meta(const ntpu_model *m, const save_plan *p, uint32_t crc, const char *const *meta, const char **kv,
                       size_t max, char (*num)[32])
{
    const ntpu_optim_config *o = &m->opt;
    snprintf(num[0], 32, "%.9g", o->lr);
    snprintf(num[1], 32, "%.9g", o->momentum);
    snprintf(num[2], 32, "%.9g", o->beta1);
    snprintf(num[3], 32, "%.9g", o->beta2);
    snprintf(num[4], 32, "%.9g", o->eps);
    snprintf(num[5], 32, "%.9g", o->weight_decay);
    snprintf(num[6], 32, "%llu", (unsigned long long)o->step_size);
    snprintf(num[7], 32, "%.9g", o->gamma);
    snprintf(num[8], 32, "%llu", (unsigned long long)o->total_steps);
    snprintf(num[9], 32, "%llu", (unsigned long long)m->step);
    snprintf(num[10], 32, "%08x", (unsigned)crc);
    const char *fixed[] = {"format",       CKPT_STATE_FORMAT,
                           "arch",         p->spec,
                           "input",        p->input,
                           "model_crc32",  num[10],
                           "optimizer",    ntpu_optimizer_name(o->kind),
                           "lr",           num[0],
                           "momentum",     num[1],
                           "beta1",        num[2],
                           "beta2",        num[3],
                           "eps",          num[4],
                           "weight_decay", num[5],
                           "schedule",     ntpu_lr_schedule_name(o->schedule),
                           "step_size",    num[6],
                           "gamma",        num[7],
                           "total_steps",  num[8],
                           "step",         num[9]};
    size_t n = sizeof fixed / sizeof fixed[0];
    memcpy(kv, fixed, sizeof fixed);
    for (size_t i = 0; meta && meta[i] && meta[i + 1] && n + 2 <= max; i += 2) {
        kv[n++] = meta[i];
        kv[n++] = meta[i + 1];
    }
    kv[n] = NULL;
}

/* Writes both files to temporary ones, then puts them in place: the sidecar as FILE.state.new, the
 * model file, the sidecar renamed to FILE.state (a reader finishes a save stopped before that last
 * step: checkpoint_state.c). A model file written in place (a device, a FIFO: outfile.h) gets no
 * sidecar. */
static ntpu_status write_pair(ntpu_model *m, const char *path, const save_plan *p, const char *const *kv)
{
    char err[NTPU_ERRMSG_LEN];
    const char *model_meta[] = {"arch", p->spec, "input", p->input, NULL};
    ntpu_outfile mo, so;
    ntpu_status st = ntpu_safetensors_write_open(path, p->model, p->n, model_meta, &mo, err, sizeof err);
    if (st != NTPU_OK)
        return ntpu_fail(m->dev, st, "%s", err);
    if (!mo.tmp)
        return ntpu_outfile_commit(&mo, err, sizeof err) == NTPU_OK ? NTPU_OK
                                                                    : ntpu_fail(m->dev, NTPU_ERR_FILE, "%s", err);
    char *state = ckpt_path_with(path, CKPT_STATE_SUFFIX), *next = ckpt_path_with(path, CKPT_NEXT_SUFFIX);
    if (!state || !next) {
        ntpu_outfile_abort(&mo);
        free(state);
        free(next);
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "save: out of memory");
    }
    if ((st = ntpu_safetensors_write_open(next, p->state, p->n_state, kv, &so, err, sizeof err)) != NTPU_OK)
        ntpu_outfile_abort(&mo);
    else if ((st = ntpu_outfile_commit(&so, err, sizeof err)) != NTPU_OK)
        ntpu_outfile_abort(&mo);
    else if ((st = ntpu_outfile_commit(&mo, err, sizeof err)) == NTPU_OK && rename(next, state) != 0)
        st = ntpu_errst(err, sizeof err, NTPU_ERR_FILE, "%s: cannot rename it to %s: %s", next, state, strerror(errno));
    free(state);
    free(next);
    return st == NTPU_OK ? st : ntpu_fail(m->dev, st, "%s", err);
}

ntpu_status ntpu_model_save(ntpu_model *m, const char *path, const ntpu_st_tensor *extra, size_t n_extra,
                            const char *const *meta)
{
    if (!m || !path || (n_extra && !extra))
        return m ? ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "save: no path") : NTPU_ERR_INVALID_ARG;
    enum { META_MAX = 64 };
    ntpu_status st = ntpu_model_fetch(m); /* the device optimizer's weights and state */
    if (st != NTPU_OK)
        return st;
    save_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "save: out of memory");
    if ((st = plan_tensors(m, p, extra, n_extra)) == NTPU_OK) {
        for (size_t i = 0; i < p->n && st == NTPU_OK; i++) {
            size_t count = p->model[i].nbytes / 4, bad = ckpt_first_non_finite(p->model[i].data, count);
            if (bad < count)
                st = ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG,
                               "save: %s[%zu] is not finite (the model diverged): not saved, %s is left as it was",
                               p->model[i].name, bad, path);
        }
    }
    if (st == NTPU_OK) {
        const ntpu_st_tensor *data[CKPT_MAX_TENSORS];
        for (size_t i = 0; i < p->n; i++)
            data[i] = &p->model[i];
        const char *kv[META_MAX + 1];
        char num[11][32];
        state_meta(m, p, ckpt_crc(0, data, p->n), meta, kv, META_MAX, num);
        st = write_pair(m, path, p, kv);
    }
    plan_free(p);
    free(p);
    return st;
}
