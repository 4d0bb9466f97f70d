/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints of a model (ntpu_model_save, ntpu_model_load; see ntpu/nn.h): a
 * safetensors file with the weights in PyTorch's nn.Linear layout, the
 * optimizer's state under PyTorch's names, and the optimizer settings, the
 * layer sizes and the step as metadata. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "io/io.h"

#define CKPT_FORMAT "ntpu-mlp-1"

static const char *slot_name(ntpu_optimizer kind, unsigned slot)
{
    if (kind == NTPU_OPT_MOMENTUM)
        return "momentum_buffer";
    return slot == 0 ? "exp_avg" : "exp_avg_sq"; /* PyTorch's names for Adam's m and v */
}

/* in x out (ours) <-> out x in (PyTorch's nn.Linear layout) */
static void transpose(const float *src, float *dst, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
}

ntpu_status ntpu_model_save(ntpu_model *m, const char *path, const ntpu_st_tensor *extra, size_t n_extra,
                            const char *const *meta)
{
    if (!m || !path || (n_extra && !extra))
        return m ? ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "save: no path") : NTPU_ERR_INVALID_ARG;
    enum { PER_LAYER = 6, META_MAX = 64 };
    ntpu_status fst = ntpu_model_fetch(m); /* the device optimizer's weights and state */
    if (fst != NTPU_OK)
        return fst;
    const unsigned slots = ntpu_optimizer_slots(m->opt.kind);
    size_t cap = m->layers * PER_LAYER + n_extra, count = 0, floats = 0;
    for (size_t l = 0; l < m->layers; l++)
        floats += (size_t)m->sizes[l] * m->sizes[l + 1] * (1 + slots);
    ntpu_st_tensor *t = calloc(cap, sizeof *t);
    float *buf = malloc((floats ? floats : 1) * sizeof *buf);
    char(*names)[64] = calloc(cap, sizeof *names);
    if (!t || !buf || !names) {
        free(t);
        free(buf);
        free(names);
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "save: out of memory");
    }
    float *at = buf;
    for (size_t l = 0; l < m->layers; l++) {
        const size_t in = m->sizes[l], out = m->sizes[l + 1];
        const float *wsrc[3] = {m->w[l], m->ws1[l], m->ws2[l]}, *bsrc[3] = {m->b[l], m->bs1[l], m->bs2[l]};
        for (unsigned s = 0; s <= slots; s++) {
            transpose(wsrc[s], at, in, out);
            if (s == 0)
                snprintf(names[count], 64, "fc%zu.weight", l);
            else
                snprintf(names[count], 64, "fc%zu.weight.%s", l, slot_name(m->opt.kind, s - 1));
            t[count] = (ntpu_st_tensor){names[count], "F32", 2, {out, in}, at, in * out * 4};
            count++;
            at += in * out;
            if (s == 0)
                snprintf(names[count], 64, "fc%zu.bias", l);
            else
                snprintf(names[count], 64, "fc%zu.bias.%s", l, slot_name(m->opt.kind, s - 1));
            t[count] = (ntpu_st_tensor){names[count], "F32", 1, {out}, bsrc[s], out * 4};
            count++;
        }
    }
    for (size_t i = 0; i < n_extra; i++)
        t[count++] = extra[i];

    char sizes[256] = "", num[16][32];
    for (size_t l = 0; l <= m->layers; l++)
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%u", l ? "," : "", m->sizes[l]);
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
    const char *kv[META_MAX + 1] = {"format",       CKPT_FORMAT,
                                    "sizes",        sizes,
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
    size_t nkv = 28;
    for (size_t i = 0; meta && meta[i] && meta[i + 1] && nkv + 2 <= META_MAX; i += 2) {
        kv[nkv++] = meta[i];
        kv[nkv++] = meta[i + 1];
    }
    kv[nkv] = NULL;
    char err[NTPU_ERRMSG_LEN];
    ntpu_status st = ntpu_safetensors_write_err(path, t, count, kv, err, sizeof err);
    free(t);
    free(buf);
    free(names);
    return st == NTPU_OK ? st : ntpu_fail(m->dev, st, "%s", err);
}

/* Digits only: strtoull alone would take "-1" (as 2^64 - 1), spaces and a sign. */
static int meta_u64(const ntpu_safetensors *f, const char *key, uint64_t *out)
{
    const char *v = ntpu_safetensors_meta(f, key);
    return v && *v ? ntpu_parse_whole(v, 0, UINT64_MAX, out) : -1;
}

static int meta_float(const ntpu_safetensors *f, const char *key, float *out)
{
    const char *v = ntpu_safetensors_meta(f, key);
    char *end;
    if (!v || !*v)
        return -1;
    *out = strtof(v, &end);
    return *end ? -1 : 0;
}

/* Copies tensor `name` (F32, shape rows x cols, or a vector when cols is 0) into
 * dst, transposing a matrix back to in x out. */
static ntpu_status load_tensor(ntpu_device *dev, const ntpu_safetensors *f, const char *path, const char *name,
                               size_t rows, size_t cols, float *dst)
{
    const ntpu_st_tensor *t = ntpu_safetensors_find(f, name);
    int ok = t && strcmp(t->dtype, "F32") == 0 &&
             (cols ? t->rank == 2 && t->shape[0] == rows && t->shape[1] == cols : t->rank == 1 && t->shape[0] == rows);
    if (!ok)
        return ntpu_fail(dev, NTPU_ERR_FORMAT, "%s: tensor %s is missing or not F32 of the model's shape", path, name);
    if (cols) {
        float *tmp = malloc(rows * cols * 4);
        if (!tmp)
            return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "load: out of memory");
        memcpy(tmp, t->data, rows * cols * 4);
        transpose(tmp, dst, rows, cols);
        free(tmp);
    } else {
        memcpy(dst, t->data, rows * 4);
    }
    return NTPU_OK;
}

ntpu_status ntpu_model_load(ntpu_device *dev, const char *path, size_t max_batch, ntpu_model **out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!path || !out)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "load: no path");
    char err[NTPU_ERRMSG_LEN];
    ntpu_safetensors *f;
    if ((st = ntpu_safetensors_read_err(path, &f, err, sizeof err)) != NTPU_OK)
        return ntpu_fail(dev, st, "%s", err);
    const char *format = ntpu_safetensors_meta(f, "format"), *sizes_s = ntpu_safetensors_meta(f, "sizes");
    unsigned sizes[NTPU_MAX_LAYERS + 2];
    size_t n_sizes = 0;
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_SGD);
    uint64_t step = 0;
    int bad = !format || strcmp(format, CKPT_FORMAT) != 0 || !sizes_s;
    for (const char *p = sizes_s; !bad && *p && n_sizes < NTPU_MAX_LAYERS + 2;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        uint64_t v = 0;
        bad = !len || ntpu_parse_whole(p, len, 65536, &v) || v == 0 || (comma && !comma[1]);
        sizes[n_sizes++] = (unsigned)v;
        p += len + (comma != NULL);
    }
    if (bad) {
        ntpu_safetensors_free(f);
        return ntpu_fail(dev, NTPU_ERR_FORMAT, "%s: not a nanoTPU checkpoint (metadata missing or malformed)", path);
    }
    /* Each setting read and checked on its own, so that a damaged one is named. */
    const struct {
        const char *key;
        float *f;
        uint64_t *u;
    } keys[] = {{"lr", &opt.lr, NULL},
                {"momentum", &opt.momentum, NULL},
                {"beta1", &opt.beta1, NULL},
                {"beta2", &opt.beta2, NULL},
                {"eps", &opt.eps, NULL},
                {"weight_decay", &opt.weight_decay, NULL},
                {"gamma", &opt.gamma, NULL},
                {"step_size", NULL, &opt.step_size},
                {"total_steps", NULL, &opt.total_steps},
                {"step", NULL, &step}};
    const char *what = NULL;
    if (n_sizes < 2 || n_sizes > NTPU_MAX_LAYERS + 1)
        what = "sizes";
    else if (ntpu_optimizer_find(ntpu_safetensors_meta(f, "optimizer"), &opt.kind))
        what = "optimizer";
    else if (ntpu_lr_schedule_find(ntpu_safetensors_meta(f, "schedule"), &opt.schedule))
        what = "schedule";
    for (size_t i = 0; !what && i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].f ? meta_float(f, keys[i].key, keys[i].f) : meta_u64(f, keys[i].key, keys[i].u))
            what = keys[i].key;
    if (!what)
        what = ntpu_optim_bad_setting(&opt);
    if (what) {
        ntpu_safetensors_free(f);
        return ntpu_fail(dev, NTPU_ERR_FORMAT,
                         "%s: not a valid nanoTPU checkpoint (its '%s' is missing or out of range)", path, what);
    }
    ntpu_model *m;
    if ((st = ntpu_model_alloc(dev, sizes, n_sizes, max_batch, &opt, &m)) != NTPU_OK) {
        ntpu_safetensors_free(f);
        return st;
    }
    m->step = step;
    const unsigned slots = ntpu_optimizer_slots(opt.kind);
    char name[64];
    for (size_t l = 0; l < m->layers && st == NTPU_OK; l++) {
        const size_t in = sizes[l], outn = sizes[l + 1];
        float *wdst[3] = {m->w[l], m->ws1[l], m->ws2[l]}, *bdst[3] = {m->b[l], m->bs1[l], m->bs2[l]};
        for (unsigned s = 0; s <= slots && st == NTPU_OK; s++) {
            if (s == 0)
                snprintf(name, sizeof name, "fc%zu.weight", l);
            else
                snprintf(name, sizeof name, "fc%zu.weight.%s", l, slot_name(opt.kind, s - 1));
            st = load_tensor(dev, f, path, name, outn, in, wdst[s]);
            if (s == 0)
                snprintf(name, sizeof name, "fc%zu.bias", l);
            else
                snprintf(name, sizeof name, "fc%zu.bias.%s", l, slot_name(opt.kind, s - 1));
            if (st == NTPU_OK)
                st = load_tensor(dev, f, path, name, outn, 0, bdst[s]);
        }
    }
    ntpu_safetensors_free(f);
    if (st == NTPU_OK)
        st = ntpu_model_sync(m);
    if (st != NTPU_OK) {
        ntpu_model_free(m);
        return st;
    }
    *out = m;
    return NTPU_OK;
}

/* A placeholder until helper "ckpt" of issue 23 writes the real one (SPEC in the metadata,
 * PyTorch's files): an MLP file through ntpu_model_load, checked against an MLP arch. */
ntpu_status ntpu_model_load_arch(ntpu_device *dev, const char *path, const ntpu_arch *arch, size_t max_batch,
                                 ntpu_model **out)
{
    unsigned want[NTPU_MAX_LAYERS + 1];
    size_t n_want = 0;
    if (arch && !ntpu_arch_is_mlp(arch, want, &n_want)) {
        ntpu_status st = ntpu_check_dev(dev);
        return st != NTPU_OK ? st : ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "load: conv and pool archs are not built yet");
    }
    ntpu_model *m;
    ntpu_status st = ntpu_model_load(dev, path, max_batch, &m);
    if (st != NTPU_OK)
        return st;
    if (arch && (m->layers + 1 != n_want || memcmp(m->sizes, want, n_want * sizeof *want) != 0)) {
        char have_s[512] = "", want_s[512] = "";
        ntpu_arch_format(&m->arch, have_s, sizeof have_s);
        ntpu_arch_format(arch, want_s, sizeof want_s);
        ntpu_model_free(m);
        return ntpu_fail(dev, NTPU_ERR_FORMAT, "%s holds a model of arch %s, not %s", path, have_s, want_s);
    }
    if (arch)
        m->arch = *arch;
    *out = m;
    return NTPU_OK;
}
