/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints (host/src/nn/checkpoint*.c, docs/training.md): the model file holds only the
 * tensors of the equivalent torch.nn.Sequential, in its names and layouts, with the SPEC as
 * metadata; the sidecar FILE.state the optimizer's slots, settings, step and the caller's
 * tensors and metadata. A net and an MLP come back bit for bit and train on in step; a file of
 * another arch names its first wrong tensor; a sidecar of other weights is refused; a save
 * stopped between its two renames is finished by the next reader; PyTorch's files (no
 * metadata) load with an arch; the old single-file format still loads. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NN_SEED 0x5EED0030u
#include "nn/nn_internal.h"
#include "nn_compare.h"
#include "net_fixture.h"
#include "ntpu/safetensors.h"

static ntpu_device *dev;
static char dir[] = "/tmp/ntpu_ckpt_XXXXXX";

static void setup(void)
{
    cr_assert_eq(ntpu_open("ref", &dev), NTPU_OK);
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    ntpu_close(dev);
    char cmd[sizeof dir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(checkpoint, .init = setup, .fini = teardown);

static const char *in_dir(const char *name)
{
    static char path[8][96];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 96, "%s/%s", dir, name);
    return p;
}

/* A model of spec (inputs c x h x w) after `steps` Adam steps on seeded data. */
static ntpu_model *trained(const char *spec, unsigned c, unsigned h, unsigned w, uint64_t seed, int steps)
{
    ntpu_arch a = net_arch(spec, c, h, w);
    ntpu_optim_config o = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m;
    cr_assert_eq(ntpu_model_create_arch(dev, &a, 8, seed, &o, &m), NTPU_OK, "%s", ntpu_last_error(dev));
    static float x[8 * 1024];
    static uint8_t y[8];
    for (int s = 0; s < steps; s++) {
        fill_data(x, y, 8, (size_t)c * h * w, a.item[a.n - 1].out);
        cr_assert_eq(ntpu_model_train_step(m, x, y, 8, NULL), NTPU_OK, "%s", ntpu_last_error(dev));
    }
    return m;
}

static void copy_file(const char *from, const char *to)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
    cr_assert_eq(system(cmd), 0);
}

static const ntpu_st_tensor *tensor(const ntpu_safetensors *f, const char *name, unsigned rank, size_t d0, size_t d1)
{
    const ntpu_st_tensor *t = ntpu_safetensors_find(f, name);
    cr_assert(t, "no tensor %s", name);
    cr_assert_str_eq(t->dtype, "F32");
    cr_assert_eq(t->rank, rank, "%s", name);
    cr_assert_eq(t->shape[0], d0, "%s", name);
    if (rank > 1)
        cr_assert_eq(t->shape[1], d1, "%s", name);
    return t;
}

Test(checkpoint, mlp_in_torch_names_state_beside)
{
    ntpu_model *m = trained("fc8,relu,fc3", 1, 1, 20, 1, 2);
    float extra_data[2] = {1.5f, -2.0f};
    ntpu_st_tensor extra = {"mine", "F32", 1, {2}, extra_data, 8};
    const char *meta[] = {"my.key", "my value", NULL};
    const char *path = in_dir("mlp.st");
    cr_assert_eq(ntpu_model_save(m, path, &extra, 1, meta), NTPU_OK, "%s", ntpu_last_error(dev));
    ntpu_safetensors *f, *s;
    cr_assert_eq(ntpu_safetensors_read(path, &f), NTPU_OK);
    cr_assert_str_eq(ntpu_safetensors_meta(f, "arch"), "fc8,relu,fc3");
    cr_assert_str_eq(ntpu_safetensors_meta(f, "input"), "1x1x20");
    cr_assert_null(ntpu_safetensors_find(f, "mine"), "the model file holds the model's tensors only");
    cr_assert_null(ntpu_safetensors_meta(f, "my.key"));
    const ntpu_st_tensor *w = tensor(f, "0.weight", 2, 8, 20);
    tensor(f, "0.bias", 1, 8, 0);
    tensor(f, "2.weight", 2, 3, 8);
    tensor(f, "2.bias", 1, 3, 0);
    for (size_t o = 0; o < 8; o++) /* PyTorch's [out, in]; the MLP keeps in x out */
        for (size_t i = 0; i < 20; i++)
            cr_assert_eq(((const float *)w->data)[o * 20 + i], m->w[0][i * 8 + o]);
    cr_assert_eq(ntpu_model_state_read(path, &s), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert(s);
    tensor(s, "0.weight.exp_avg", 2, 8, 20);
    tensor(s, "2.bias.exp_avg_sq", 1, 3, 0);
    const ntpu_st_tensor *e = tensor(s, "mine", 1, 2, 0);
    cr_assert_eq(((const float *)e->data)[1], -2.0f);
    cr_assert_str_eq(ntpu_safetensors_meta(s, "my.key"), "my value");
    cr_assert_str_eq(ntpu_safetensors_meta(s, "step"), "2");
    cr_assert_str_eq(ntpu_safetensors_meta(s, "optimizer"), "adam");
    ntpu_safetensors_free(f);
    ntpu_safetensors_free(s);
    ntpu_model *l;
    cr_assert_eq(ntpu_model_load(dev, path, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    assert_same_view(m, l, 0);
    ntpu_model_free(l);
    ntpu_model_free(m);
}

static void assert_same_net(const ntpu_model *a, const ntpu_model *b)
{
    cr_assert(a->net && b->net);
    cr_assert_eq(a->step, b->step);
    cr_assert_eq(a->arch.n, b->arch.n);
    for (size_t i = 0; i < a->arch.n; i++) {
        const ntpu_net_param *p = &a->param[i], *q = &b->param[i];
        cr_assert_eq(p->nw, q->nw);
        assert_same_floats(p->w, q->w, p->nw, "weights", i);
        assert_same_floats(p->b, q->b, p->nb, "biases", i);
        assert_same_floats(p->ws1, q->ws1, p->nw, "weights' m", i);
        assert_same_floats(p->ws2, q->ws2, p->nw, "weights' v", i);
        assert_same_floats(p->bs1, q->bs1, p->nb, "biases' m", i);
        assert_same_floats(p->bs2, q->bs2, p->nb, "biases' v", i);
    }
}

Test(checkpoint, net_round_trip_trains_on_in_step)
{
    const char *spec = "conv4k3p1,relu,maxpool2,conv6k3s2,relu,flatten,fc5";
    ntpu_model *m = trained(spec, 2, 10, 10, 3, 2);
    const char *path = in_dir("net.st");
    cr_assert_eq(ntpu_model_save(m, path, NULL, 0, NULL), NTPU_OK, "%s", ntpu_last_error(dev));
    ntpu_safetensors *f;
    cr_assert_eq(ntpu_safetensors_read(path, &f), NTPU_OK);
    const ntpu_st_tensor *w = ntpu_safetensors_find(f, "3.weight");
    cr_assert(w && w->rank == 4 && w->shape[0] == 6 && w->shape[1] == 4 && w->shape[2] == 3 && w->shape[3] == 3);
    tensor(f, "6.weight", 2, 5, 6 * 2 * 2); /* the flattened 6 x 2 x 2 map, C-H-W */
    cr_assert_eq(memcmp(w->data, m->param[3].w, m->param[3].nw * 4), 0, "conv weights in PyTorch's layout");
    cr_assert_str_eq(ntpu_safetensors_meta(f, "arch"), spec);
    cr_assert_str_eq(ntpu_safetensors_meta(f, "input"), "2x10x10");
    ntpu_safetensors_free(f);
    ntpu_model *l;
    cr_assert_eq(ntpu_model_load(dev, path, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    assert_same_net(m, l);
    static float x[8 * 200];
    static uint8_t y[8];
    fill_data(x, y, 8, 200, 5);
    cr_assert_eq(ntpu_model_train_step(m, x, y, 8, NULL), NTPU_OK);
    cr_assert_eq(ntpu_model_train_step(l, x, y, 8, NULL), NTPU_OK);
    assert_same_net(m, l);
    ntpu_model_free(l);
    ntpu_model_free(m);
}

/* Loading path as arch must fail with NTPU_ERR_FORMAT and an error that contains want. */
static void expect_refused(const char *path, const ntpu_arch *arch, const char *want)
{
    ntpu_model *l = NULL;
    cr_assert_eq(ntpu_model_load_arch(dev, path, arch, 8, &l), NTPU_ERR_FORMAT, "%s loaded", path);
    cr_assert_null(l);
    cr_assert(strstr(ntpu_last_error(dev), want), "'%s' does not say '%s'", ntpu_last_error(dev), want);
    cr_assert_null(strchr(ntpu_last_error(dev), '\n'));
}

/* Writes m's model tensors as PyTorch would (no metadata), one renamed or reshaped or added. */
static void write_torch_file(const char *path, ntpu_model *m, const char *rename_from, const char *rename_to,
                             int add_extra)
{
    ntpu_safetensors *f;
    const char *src = in_dir("src.st");
    cr_assert_eq(ntpu_model_save(m, src, NULL, 0, NULL), NTPU_OK);
    cr_assert_eq(ntpu_safetensors_read(src, &f), NTPU_OK);
    ntpu_st_tensor t[16];
    const ntpu_st_tensor *t0 = ntpu_safetensors_find(f, "0.weight");
    size_t n = 0;
    const char *names[] = {"0.weight", "0.bias", "3.weight", "3.bias", "6.weight", "6.bias"};
    for (size_t i = 0; i < 6; i++) {
        t[n] = *ntpu_safetensors_find(f, names[i]);
        if (rename_from && strcmp(names[i], rename_from) == 0)
            t[n].name = rename_to;
        n++;
    }
    if (add_extra) {
        t[n] = *t0;
        t[n++].name = "7.weight";
    }
    cr_assert_eq(ntpu_safetensors_write(path, t, n, NULL), NTPU_OK, "%s", ntpu_last_error(NULL));
    ntpu_safetensors_free(f);
}

Test(checkpoint, torch_files_and_other_archs)
{
    const char *spec = "conv4k3p1,relu,maxpool2,conv6k3s2,relu,flatten,fc5";
    ntpu_model *m = trained(spec, 2, 8, 8, 4, 1);
    ntpu_arch a = net_arch(spec, 2, 8, 8),
              wider = net_arch("conv4k3p1,relu,maxpool2,conv7k3s2,relu,flatten,fc5", 2, 8, 8);
    ntpu_arch one_channel = net_arch(spec, 1, 8, 8);
    const char *torch = in_dir("torch.st");
    write_torch_file(torch, m, NULL, NULL, 0);
    expect_refused(torch, NULL, "names no architecture");
    ntpu_model *l;
    cr_assert_eq(ntpu_model_load_arch(dev, torch, &a, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(l->step, 0);
    cr_assert_eq(memcmp(l->param[6].w, m->param[6].w, m->param[6].nw * 4), 0);
    cr_assert_eq(l->opt.kind, NTPU_OPT_SGD, "no sidecar: default settings");
    ntpu_model_free(l);
    expect_refused(torch, &wider, "tensor 3.weight has shape [6, 4, 3, 3], the arch needs [7, 4, 3, 3]");
    expect_refused(torch, &one_channel, "tensor 0.weight has shape [4, 2, 3, 3], the arch needs [4, 1, 3, 3]");
    write_torch_file(torch, m, "3.bias", "4.bias", 0);
    expect_refused(torch, &a, "holds no tensor 3.bias");
    write_torch_file(torch, m, NULL, NULL, 1);
    expect_refused(torch, &a, "extra tensor 7.weight");
    /* a file that names its arch: a different --arch is refused */
    const char *own = in_dir("own.st");
    cr_assert_eq(ntpu_model_save(m, own, NULL, 0, NULL), NTPU_OK);
    expect_refused(own, &wider,
                   "holds a model of arch "
                   "conv4k3p1,relu,maxpool2,conv6k3s2,relu,flatten,fc5");
    cr_assert_eq(ntpu_model_load_arch(dev, own, &a, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    assert_same_net(m, l);
    ntpu_model_free(l);
    ntpu_model_free(m);
}

Test(checkpoint, sidecar_of_other_weights_refused)
{
    ntpu_model *a = trained("fc8,relu,fc3", 1, 1, 20, 1, 1), *b = trained("fc8,relu,fc3", 1, 1, 20, 2, 1);
    const char *pa = in_dir("a.st"), *pb = in_dir("b.st");
    cr_assert_eq(ntpu_model_save(a, pa, NULL, 0, NULL), NTPU_OK);
    cr_assert_eq(ntpu_model_save(b, pb, NULL, 0, NULL), NTPU_OK);
    char sa[96], sb[96];
    snprintf(sa, sizeof sa, "%s.state", pa);
    snprintf(sb, sizeof sb, "%s.state", pb);
    copy_file(sb, sa);
    expect_refused(pa, NULL, "does not belong to");
    ntpu_safetensors *s = NULL;
    cr_assert_eq(ntpu_model_state_read(pa, &s), NTPU_ERR_FORMAT);
    cr_assert_null(s);
    ntpu_model_free(a);
    ntpu_model_free(b);
}

/* The disk after a save of `new` over `old` stopped between its renames: FILE.state.new holds the
 * new sidecar; `model_renamed` says whether FILE is the new model file yet. */
static void stopped_save(const char *old, const char *new, const char *path, int model_renamed)
{
    char from[128], to[128];
    copy_file(model_renamed ? new : old, path);
    snprintf(from, sizeof from, "%s.state", old);
    snprintf(to, sizeof to, "%s.state", path);
    copy_file(from, to);
    snprintf(from, sizeof from, "%s.state", new);
    snprintf(to, sizeof to, "%s.state.new", path);
    copy_file(from, to);
}

Test(checkpoint, stopped_save_is_finished_by_the_reader)
{
    ntpu_model *m = trained("fc8,relu,fc3", 1, 1, 20, 5, 1);
    const char *old = in_dir("old.st"), *new = in_dir("new.st"), *path = in_dir("ck.st");
    cr_assert_eq(ntpu_model_save(m, old, NULL, 0, NULL), NTPU_OK);
    static float x[8 * 20];
    static uint8_t y[8];
    fill_data(x, y, 8, 20, 3);
    cr_assert_eq(ntpu_model_train_step(m, x, y, 8, NULL), NTPU_OK);
    cr_assert_eq(ntpu_model_save(m, new, NULL, 0, NULL), NTPU_OK);
    char next[128];
    snprintf(next, sizeof next, "%s.state.new", path);
    ntpu_model *l;
    /* stopped after the new model file was in place: the reader finishes the save */
    stopped_save(old, new, path, 1);
    cr_assert_eq(ntpu_model_load(dev, path, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(l->step, 2);
    assert_same_view(m, l, 0);
    cr_assert_neq(access(next, F_OK), 0, "FILE.state.new was renamed");
    ntpu_model_free(l);
    /* stopped before: the old pair is whole, and the unfinished sidecar is not taken */
    stopped_save(old, new, path, 0);
    cr_assert_eq(ntpu_model_load(dev, path, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(l->step, 1);
    ntpu_model_free(l);
    ntpu_model_free(m);
}

Test(checkpoint, legacy_single_file_loads)
{
    ntpu_model *m = trained("fc8,relu,fc3", 1, 1, 20, 6, 2);
    /* format ntpu-mlp-1: fc<l>. names, [out, in] weights, the state in the same file */
    enum { L = 2 };
    static float buf[2][3][8 * 20];
    ntpu_st_tensor t[L * 6];
    static char names[L * 6][48];
    const unsigned sizes[] = {20, 8, 3};
    size_t n = 0;
    for (size_t l = 0; l < L; l++) {
        const size_t in = sizes[l], out = sizes[l + 1];
        const float *w[3] = {m->w[l], m->ws1[l], m->ws2[l]}, *b[3] = {m->b[l], m->bs1[l], m->bs2[l]};
        const char *suffix[3] = {"", ".exp_avg", ".exp_avg_sq"};
        for (int s = 0; s < 3; s++) {
            for (size_t i = 0; i < in; i++)
                for (size_t o = 0; o < out; o++)
                    buf[l][s][o * in + i] = w[s][i * out + o];
            snprintf(names[n], 48, "fc%zu.weight%s", l, suffix[s]);
            t[n] = (ntpu_st_tensor){names[n], "F32", 2, {out, in}, buf[l][s], in * out * 4};
            n++;
            snprintf(names[n], 48, "fc%zu.bias%s", l, suffix[s]);
            t[n] = (ntpu_st_tensor){names[n], "F32", 1, {out}, b[s], out * 4};
            n++;
        }
    }
    const char *meta[] = {
        "format",       "ntpu-mlp-1",  "sizes",    "20,8,3",      "optimizer", "adam",        "lr",    "0.00100000005",
        "momentum",     "0.899999976", "beta1",    "0.899999976", "beta2",     "0.999000013", "eps",   "9.99999994e-09",
        "weight_decay", "0",           "schedule", "constant",    "step_size", "1",           "gamma", "0.100000001",
        "total_steps",  "0",           "step",     "2",           NULL};
    const char *path = in_dir("legacy.st");
    cr_assert_eq(ntpu_safetensors_write(path, t, n, meta), NTPU_OK, "%s", ntpu_last_error(NULL));
    ntpu_model *l;
    cr_assert_eq(ntpu_model_load(dev, path, 8, &l), NTPU_OK, "%s", ntpu_last_error(dev));
    assert_same_view(m, l, 0);
    ntpu_model_free(l);
    ntpu_model_free(m);
}
