/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a model (ntpu_model_load, ntpu_model_load_arch; see ntpu/nn.h) from a model file that
 * ntpu_model_save or PyTorch wrote (a state_dict of the equivalent torch.nn.Sequential), with the
 * optimizer state of its sidecar FILE.state when there is one; and, read only, the single-file
 * checkpoints of format "ntpu-mlp-1" (fc<l>. names, the state in the same file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "io/io.h"

typedef struct load_ctx {
    ntpu_device *dev;
    const char *path;
    ntpu_safetensors *f;  /* the model file */
    ntpu_safetensors *sf; /* the state: the sidecar, f itself (legacy), or NULL (none) */
    char *state_path;     /* the sidecar's name, for its errors */
    int legacy;
    ntpu_arch arch, named;
    ckpt_tensor ct[CKPT_MAX_TENSORS];
    size_t n;
    const ntpu_st_tensor *found[CKPT_MAX_TENSORS]; /* ct's tensors in f */
    ntpu_optim_config opt;
    uint64_t step;
} load_ctx;

/* A legacy file's "sizes" ("784,256,10") as its arch. */
static ntpu_status legacy_arch(load_ctx *c)
{
    const char *s = ntpu_safetensors_meta(c->f, "sizes");
    unsigned sizes[NTPU_MAX_LAYERS + 2];
    size_t n = 0;
    int bad = !s;
    for (const char *p = s; !bad && *p && n < NTPU_MAX_LAYERS + 2;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        uint64_t v = 0;
        bad = !len || ntpu_parse_whole(p, len, 65536, &v) || v == 0 || (comma && !comma[1]);
        sizes[n++] = (unsigned)v;
        p += len + (comma != NULL);
    }
    if (bad || n < 2 || n > NTPU_MAX_LAYERS + 1 || ntpu_arch_from_sizes(sizes, n, &c->arch) != NTPU_OK)
        return ntpu_fail(c->dev, NTPU_ERR_FORMAT,
                         "%s: not a valid nanoTPU checkpoint (its 'sizes' is missing or out of range)", c->path);
    return NTPU_OK;
}

/* "1x28x28" -> c, h, w. 0, or -1. */
static int parse_input(const char *s, unsigned dims[3])
{
    for (int i = 0; i < 3; i++) {
        const char *x = i < 2 ? strchr(s, 'x') : s + strlen(s);
        uint64_t v;
        if (!x || x == s || ntpu_parse_whole(s, (size_t)(x - s), 65536, &v) || v == 0)
            return -1;
        dims[i] = (unsigned)v;
        s = x + (i < 2);
    }
    return 0;
}

/* The arch the file names in its metadata (1), none (0), or an error (-1, reported). */
static int file_arch(load_ctx *c, ntpu_arch *out)
{
    const char *spec = ntpu_safetensors_meta(c->f, "arch"), *input = ntpu_safetensors_meta(c->f, "input");
    if (!spec)
        return 0;
    unsigned d[3];
    char why[NTPU_ERRMSG_LEN];
    if (!input || parse_input(input, d)) {
        ntpu_fail(c->dev, NTPU_ERR_FORMAT,
                  "%s: its metadata names the arch '%s' but no input shape (\"input\": \"1x28x28\")", c->path, spec);
        return -1;
    }
    if (ntpu_arch_parse(spec, d[0], d[1], d[2], out, why, sizeof why) != NTPU_OK) {
        ntpu_fail(c->dev, NTPU_ERR_FORMAT, "%s: its arch '%s' (input %s): %s", c->path, spec, input, why);
        return -1;
    }
    return 1;
}

/* The same SPEC for the same input shape; or two MLPs of the same sizes, whatever shape their
 * inputs had before the flatten (--layers 784,... says 784x1x1, --arch fc... on images 1x28x28). */
static int same_model(const ntpu_arch *a, const ntpu_arch *b)
{
    char sa[1024], ia[48], sb[1024], ib[48];
    if (ckpt_arch_text(a, sa, sizeof sa, ia, sizeof ia) || ckpt_arch_text(b, sb, sizeof sb, ib, sizeof ib))
        return 0;
    if (strcmp(sa, sb) == 0 && strcmp(ia, ib) == 0)
        return 1;
    unsigned za[NTPU_MAX_LAYERS + 1], zb[NTPU_MAX_LAYERS + 1];
    size_t na, nb;
    return ntpu_arch_is_mlp(a, za, &na) && ntpu_arch_is_mlp(b, zb, &nb) && na == nb &&
           memcmp(za, zb, na * sizeof *za) == 0;
}

/* c->arch: the caller's or the file's; with both, they must be the same model (c->named: the
 * file's, when it names one). */
static ntpu_status resolve_arch(load_ctx *c, const ntpu_arch *given)
{
    ntpu_arch named = {0};
    int has = c->legacy ? 1 : file_arch(c, &named);
    if (has < 0)
        return NTPU_ERR_FORMAT;
    if (c->legacy) {
        ntpu_status st = legacy_arch(c);
        if (st != NTPU_OK)
            return st;
        named = c->arch;
    }
    if (!has && !given)
        return ntpu_fail(c->dev, NTPU_ERR_FORMAT,
                         "%s: names no architecture in its metadata (a PyTorch state_dict?); give its SPEC (--arch)",
                         c->path);
    c->named = named;
    c->arch = given ? *given : named;
    if (has && given && !same_model(&named, given)) {
        char a[1024], ai[48], b[1024], bi[48];
        ckpt_arch_text(&named, a, sizeof a, ai, sizeof ai);
        ckpt_arch_text(given, b, sizeof b, bi, sizeof bi);
        return ntpu_fail(c->dev, NTPU_ERR_FORMAT, "%s: holds a model of arch %s (input %s), not %s (input %s)", c->path,
                         a, ai, b, bi);
    }
    return NTPU_OK;
}

static void shape_text(const size_t *shape, unsigned rank, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (unsigned r = 0; r < rank && at < len; r++)
        at += (size_t)snprintf(buf + at, len - at, "%s%zu", r ? ", " : "", shape[r]);
    if (at < len)
        snprintf(buf + at, len - at, "]");
}

/* NTPU_OK when file f (called path) has tensor `name` as F32 of t's shape, which goes to *found. */
static ntpu_status check_tensor(ntpu_device *dev, const ntpu_safetensors *f, const char *path, const char *name,
                                const ckpt_tensor *t, const ntpu_st_tensor **found)
{
    const ntpu_st_tensor *x = ntpu_safetensors_find(f, name);
    if (!x)
        return ntpu_fail(dev, NTPU_ERR_FORMAT, "%s: holds no tensor %s", path, name);
    if (strcmp(x->dtype, "F32") != 0)
        return ntpu_fail(dev, NTPU_ERR_FORMAT, "%s: tensor %s is %s, the arch needs F32", path, name, x->dtype);
    int same = x->rank == t->rank;
    for (unsigned r = 0; same && r < t->rank; r++)
        same = x->shape[r] == t->shape[r];
    if (!same) {
        char has[96], needs[96];
        shape_text(x->shape, x->rank, has, sizeof has);
        shape_text(t->shape, t->rank, needs, sizeof needs);
        return ntpu_fail(dev, NTPU_ERR_FORMAT, "%s: tensor %s has shape %s, the arch needs %s", path, name, has, needs);
    }
    size_t bad = ckpt_first_non_finite(x->data, t->count);
    if (bad < t->count)
        return ntpu_fail(dev, NTPU_ERR_FORMAT,
                         "%s: tensor %s holds a NaN or infinity (element %zu): a model that diverged", path, name, bad);
    *found = x;
    return NTPU_OK;
}

/* Every tensor of the arch, in order, then none besides (a legacy file also holds the state). */
static ntpu_status check_tensors(load_ctx *c)
{
    c->n = ckpt_list(&c->arch, NULL, c->legacy, c->ct);
    for (size_t i = 0; i < c->n; i++) {
        ntpu_status st = check_tensor(c->dev, c->f, c->path, c->ct[i].name, &c->ct[i], &c->found[i]);
        if (st != NTPU_OK)
            return st;
    }
    for (size_t i = 0; !c->legacy && i < ntpu_safetensors_count(c->f); i++) {
        const char *name = ntpu_safetensors_at(c->f, i)->name;
        size_t k = 0;
        while (k < c->n && strcmp(c->ct[k].name, name) != 0)
            k++;
        if (k == c->n)
            return ntpu_fail(c->dev, NTPU_ERR_FORMAT, "%s: extra tensor %s (not in the arch)", c->path, name);
    }
    return NTPU_OK;
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

/* The optimizer's settings and the step from the state's metadata, each checked on its own so
 * that a damaged one is named. */
static ntpu_status read_settings(load_ctx *c)
{
    const ntpu_safetensors *f = c->sf;
    ntpu_optim_config *opt = &c->opt;
    const struct {
        const char *key;
        float *f;
        uint64_t *u;
    } keys[] = {{"lr", &opt->lr, NULL},
                {"momentum", &opt->momentum, NULL},
                {"beta1", &opt->beta1, NULL},
                {"beta2", &opt->beta2, NULL},
                {"eps", &opt->eps, NULL},
                {"weight_decay", &opt->weight_decay, NULL},
                {"gamma", &opt->gamma, NULL},
                {"step_size", NULL, &opt->step_size},
                {"total_steps", NULL, &opt->total_steps},
                {"step", NULL, &c->step}};
    const char *what = NULL;
    if (ntpu_optimizer_find(ntpu_safetensors_meta(f, "optimizer"), &opt->kind))
        what = "optimizer";
    else if (ntpu_lr_schedule_find(ntpu_safetensors_meta(f, "schedule"), &opt->schedule))
        what = "schedule";
    for (size_t i = 0; !what && i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].f ? meta_float(f, keys[i].key, keys[i].f) : meta_u64(f, keys[i].key, keys[i].u))
            what = keys[i].key;
    if (!what)
        what = ntpu_optim_bad_setting(opt);
    if (what)
        return ntpu_fail(c->dev, NTPU_ERR_FORMAT,
                         "%s: not a valid nanoTPU checkpoint (its '%s' is missing or out of range)",
                         c->legacy ? c->path : c->state_path, what);
    return NTPU_OK;
}

/* The sidecar, when there is one: it must belong to this model file, and be for this arch. */
static ntpu_status open_sidecar(load_ctx *c)
{
    char err[NTPU_ERRMSG_LEN], spec[1024], input[48];
    if (!(c->state_path = ckpt_path_with(c->path, CKPT_STATE_SUFFIX)))
        return ntpu_fail(c->dev, NTPU_ERR_NO_MEMORY, "load: out of memory");
    ntpu_status st = ckpt_state_open(c->path, c->f, &c->sf, err, sizeof err);
    if (st != NTPU_OK)
        return ntpu_fail(c->dev, st, "%s", err);
    if (!c->sf)
        return NTPU_OK;
    const char *sa = ntpu_safetensors_meta(c->sf, "arch"), *si = ntpu_safetensors_meta(c->sf, "input");
    const ntpu_arch *a = c->named.n ? &c->named : &c->arch; /* the model file's own, if it names one */
    if (!sa || !si || ckpt_arch_text(a, spec, sizeof spec, input, sizeof input) || strcmp(sa, spec) ||
        strcmp(si, input))
        return ntpu_fail(c->dev, NTPU_ERR_FORMAT,
                         "%s: the optimizer state of arch %s (input %s), not of %s's %s (input %s)", c->state_path,
                         sa ? sa : "(none)", si ? si : "(none)", c->path, spec, input);
    return NTPU_OK;
}

/* Copies tensor x's data (the file's layout) to the model's place for t, slot s. */
static ntpu_status put(ntpu_device *dev, const ckpt_tensor *t, unsigned s, const ntpu_st_tensor *x)
{
    if (!t->val[s])
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "load: the model has no place for %s", t->name);
    if (!t->rows) {
        memcpy(t->val[s], x->data, t->count * 4);
        return NTPU_OK;
    }
    float *tmp = malloc(t->count * 4);
    if (!tmp)
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "load: out of memory");
    memcpy(tmp, x->data, t->count * 4);
    for (size_t o = 0; o < t->cols; o++) /* [out, in] -> in x out */
        for (size_t i = 0; i < t->rows; i++)
            t->val[s][i * t->cols + o] = tmp[o * t->rows + i];
    free(tmp);
    return NTPU_OK;
}

/* The model with the file's weights, and the state's slots and step, on the device. */
static ntpu_status build(load_ctx *c, size_t max_batch, ntpu_model **out)
{
    unsigned sizes[NTPU_MAX_LAYERS + 1];
    size_t n_sizes;
    ntpu_model *m;
    ntpu_status st;
    if (ntpu_arch_is_mlp(&c->arch, sizes, &n_sizes)) {
        if ((st = ntpu_model_alloc(c->dev, sizes, n_sizes, max_batch, &c->opt, &m)) == NTPU_OK)
            m->arch = c->arch;
    } else {
        st = ntpu_net_alloc(c->dev, &c->arch, max_batch, &c->opt, &m);
    }
    if (st != NTPU_OK)
        return st;
    ckpt_tensor mt[CKPT_MAX_TENSORS];
    ckpt_list(&c->arch, m, c->legacy, mt);
    const unsigned slots = c->sf ? ntpu_optimizer_slots(c->opt.kind) : 0;
    for (size_t i = 0; i < c->n && st == NTPU_OK; i++) {
        st = put(c->dev, &mt[i], 0, c->found[i]);
        for (unsigned s = 1; s <= slots && st == NTPU_OK; s++) {
            char name[64];
            const ntpu_st_tensor *x = NULL;
            snprintf(name, sizeof name, "%.31s.%.16s", mt[i].name, ckpt_slot_name(c->opt.kind, s - 1));
            st = check_tensor(c->dev, c->sf, c->legacy ? c->path : c->state_path, name, &mt[i], &x);
            if (st == NTPU_OK)
                st = put(c->dev, &mt[i], s, x);
        }
    }
    m->step = c->step;
    if (st == NTPU_OK && !m->net) /* a net keeps nothing on the device between calls */
        st = ntpu_model_sync(m);
    if (st != NTPU_OK) {
        ntpu_model_free(m);
        return st;
    }
    *out = m;
    return NTPU_OK;
}

static ntpu_status load(load_ctx *c, const ntpu_arch *arch, size_t max_batch, ntpu_model **out)
{
    char err[NTPU_ERRMSG_LEN];
    ntpu_status st = ntpu_safetensors_read_err(c->path, &c->f, err, sizeof err);
    if (st != NTPU_OK)
        return ntpu_fail(c->dev, st, "%s", err);
    const char *format = ntpu_safetensors_meta(c->f, "format");
    c->legacy = format && strcmp(format, CKPT_LEGACY_FORMAT) == 0;
    if ((st = resolve_arch(c, arch)) != NTPU_OK || (st = check_tensors(c)) != NTPU_OK)
        return st;
    if (c->legacy)
        c->sf = c->f;
    else if ((st = open_sidecar(c)) != NTPU_OK)
        return st;
    c->opt = ntpu_optim_defaults(NTPU_OPT_SGD);
    if (c->sf && (st = read_settings(c)) != NTPU_OK)
        return st;
    return build(c, max_batch, out);
}

ntpu_status ntpu_model_load_arch(ntpu_device *dev, const char *path, const ntpu_arch *arch, size_t max_batch,
                                 ntpu_model **out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!path || !out)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "load: no path");
    load_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "load: out of memory");
    c->dev = dev;
    c->path = path;
    st = load(c, arch, max_batch, out);
    if (c->sf != c->f)
        ntpu_safetensors_free(c->sf);
    ntpu_safetensors_free(c->f);
    free(c->state_path);
    free(c);
    return st;
}

ntpu_status ntpu_model_load(ntpu_device *dev, const char *path, size_t max_batch, ntpu_model **out)
{
    return ntpu_model_load_arch(dev, path, NULL, max_batch, out);
}
