/* SPDX-License-Identifier: Apache-2.0 */
/* fp32 optimizers and learning-rate schedules (see ntpu/optim.h). */
#include <math.h>
#include <string.h>

#include "nn_internal.h"
#include "numerics_internal.h"

ntpu_optim_config ntpu_optim_defaults(ntpu_optimizer kind)
{
    int adam = kind == NTPU_OPT_ADAM || kind == NTPU_OPT_ADAMW;
    return (ntpu_optim_config){
        .kind = kind,
        .lr = adam ? 1e-3f : 1e-2f,
        .momentum = 0.9f,
        .beta1 = 0.9f,
        .beta2 = 0.999f,
        .eps = 1e-8f,
        .weight_decay = kind == NTPU_OPT_ADAMW ? 0.01f : 0.0f,
        .schedule = NTPU_LR_CONSTANT,
        .step_size = 1,
        .gamma = 0.1f,
        .total_steps = 1,
    };
}

float ntpu_optim_lr(const ntpu_optim_config *cfg, uint64_t t)
{
    switch (cfg->schedule) {
    case NTPU_LR_STEP: return cfg->lr * powf(cfg->gamma, (float)(t / (cfg->step_size ? cfg->step_size : 1)));
    case NTPU_LR_COSINE: {
        uint64_t total = cfg->total_steps ? cfg->total_steps : 1;
        double x = (double)(t < total ? t : total) / (double)total;
        return (float)(cfg->lr * 0.5 * (1.0 + cos(3.14159265358979323846 * x)));
    }
    default: return cfg->lr;
    }
}

static const char *const optimizer_names[] = {"sgd", "momentum", "adam", "adamw"};
static const char *const schedule_names[] = {"constant", "step", "cosine"};

const char *ntpu_optimizer_name(ntpu_optimizer kind)
{
    return (unsigned)kind < 4 ? optimizer_names[kind] : "unknown";
}

const char *ntpu_lr_schedule_name(ntpu_lr_schedule s)
{
    return (unsigned)s < 3 ? schedule_names[s] : "unknown";
}

/* The index of name in names[0..n), or -1 (name NULL included). */
static int find_name(const char *const *names, unsigned n, const char *name)
{
    for (unsigned i = 0; name && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return (int)i;
    return -1;
}

int ntpu_optimizer_find(const char *name, ntpu_optimizer *out)
{
    int i = find_name(optimizer_names, 4, name);
    if (i >= 0)
        *out = (ntpu_optimizer)i;
    return i < 0 ? -1 : 0;
}

int ntpu_lr_schedule_find(const char *name, ntpu_lr_schedule *out)
{
    int i = find_name(schedule_names, 3, name);
    if (i >= 0)
        *out = (ntpu_lr_schedule)i;
    return i < 0 ? -1 : 0;
}

ntpu_status ntpu_optimizer_parse(const char *name, ntpu_optimizer *out)
{
    if (!out || ntpu_optimizer_find(name, out))
        return ntpu_fail(NULL, NTPU_ERR_INVALID_ARG, "unknown optimizer '%s' (expected sgd, momentum, adam or adamw)",
                         name ? name : "(null)");
    return NTPU_OK;
}

ntpu_status ntpu_lr_schedule_parse(const char *name, ntpu_lr_schedule *out)
{
    if (!out || ntpu_lr_schedule_find(name, out))
        return ntpu_fail(NULL, NTPU_ERR_INVALID_ARG,
                         "unknown learning-rate schedule '%s' (expected constant, step "
                         "or cosine)",
                         name ? name : "(null)");
    return NTPU_OK;
}

unsigned ntpu_optimizer_slots(ntpu_optimizer kind)
{
    return kind == NTPU_OPT_SGD ? 0 : kind == NTPU_OPT_MOMENTUM ? 1 : 2;
}

void ntpu_optim_step_init(ntpu_optim_step *s, const ntpu_optim_config *cfg, uint64_t t)
{
    const float lr = ntpu_optim_lr(cfg, t), wd = cfg->weight_decay, b1 = cfg->beta1, b2 = cfg->beta2;
    s->cfg = cfg;
    s->lr = lr;
    s->decoupled = cfg->kind == NTPU_OPT_ADAMW;
    s->k[NTPU_ADAM_K_LR] = ntpu_f32_bits(lr);
    s->k[NTPU_ADAM_K_WD] = ntpu_f32_bits(s->decoupled ? 1.0f - lr * wd : wd);
    s->k[NTPU_ADAM_K_B1] = ntpu_f32_bits(b1);
    s->k[NTPU_ADAM_K_1MB1] = ntpu_f32_bits(1.0f - b1);
    s->k[NTPU_ADAM_K_B2] = ntpu_f32_bits(b2);
    s->k[NTPU_ADAM_K_1MB2] = ntpu_f32_bits(1.0f - b2);
    s->k[NTPU_ADAM_K_C1] = ntpu_f32_bits(1.0f - powf(b1, (float)(t + 1)));
    s->k[NTPU_ADAM_K_C2] = ntpu_f32_bits(1.0f - powf(b2, (float)(t + 1)));
    s->k[NTPU_ADAM_K_EPS] = ntpu_f32_bits(cfg->eps);
}

/* Each element's update depends on that element alone: applying a step to a
 * tensor in pieces gives the bits of applying it whole. Adam / AdamW: the
 * golden model's OPTIM ADAM row function in plain IEEE fp32, which for values
 * in the normal range gives the device's bits (its constants are these,
 * docs/training.md). */
void ntpu_optim_step_apply(const ntpu_optim_step *s, float *p, const float *g, float *s1, float *s2, size_t n)
{
    const ntpu_optim_config *cfg = s->cfg;
    const float lr = s->lr, wd = cfg->weight_decay;
    switch (cfg->kind) {
    case NTPU_OPT_SGD:
        for (size_t i = 0; i < n; i++)
            p[i] -= lr * (g[i] + wd * p[i]);
        break;
    case NTPU_OPT_MOMENTUM:
        for (size_t i = 0; i < n; i++) {
            s1[i] = cfg->momentum * s1[i] + (g[i] + wd * p[i]);
            p[i] -= lr * s1[i];
        }
        break;
    case NTPU_OPT_ADAM:
    case NTPU_OPT_ADAMW: ntpu_adam_f32_row(p, g, s1, s2, n, s->k, 1, s->decoupled, NTPU_ADAM_IEEE); break;
    }
}

void ntpu_optim_update(const ntpu_optim_config *cfg, uint64_t t, float *p, const float *g, float *s1, float *s2,
                       size_t n)
{
    ntpu_optim_step s;
    ntpu_optim_step_init(&s, cfg, t);
    ntpu_optim_step_apply(&s, p, g, s1, s2, n);
}
