/* SPDX-License-Identifier: Apache-2.0 */
/* fp32 optimizers and learning-rate schedules (see ntpu/optim.h). */
#include <math.h>
#include <string.h>

#include "nn_internal.h"

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

/* Adam's constants for one step: what the per-element update reads. */
typedef struct adam_k {
    float lr, wd, decay, b1, omb1, b2, omb2, c1, c2, eps; /* decay = 1 - lr*wd (AdamW), omb = 1 - beta */
    int decoupled;
} adam_k;

/* Adam / AdamW on elements from .. n-1, one at a time. */
static void adam_scalar(const adam_k *k, float *p, const float *g, float *s1, float *s2, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        float gi = k->decoupled ? g[i] : g[i] + k->wd * p[i];
        if (k->decoupled)
            p[i] *= k->decay;
        s1[i] = k->b1 * s1[i] + k->omb1 * gi;
        s2[i] = k->b2 * s2[i] + k->omb2 * gi * gi;
        p[i] -= k->lr * (s1[i] / k->c1) / (sqrtf(s2[i] / k->c2) + k->eps);
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* The same eight elements at a time: every lane does adam_scalar's IEEE fp32
 * operations in its order (no FMA: neither this target nor -std=c11's
 * -ffp-contract=off fuses them), so the bits are the same. Returns how many
 * elements it did. */
__attribute__((target("avx"))) static size_t adam_avx(const adam_k *k, float *p, const float *g, float *s1, float *s2,
                                                      size_t n)
{
    const __m256 lr = _mm256_set1_ps(k->lr), wd = _mm256_set1_ps(k->wd), decay = _mm256_set1_ps(k->decay);
    const __m256 b1 = _mm256_set1_ps(k->b1), omb1 = _mm256_set1_ps(k->omb1), b2 = _mm256_set1_ps(k->b2);
    const __m256 omb2 = _mm256_set1_ps(k->omb2), c1 = _mm256_set1_ps(k->c1), c2 = _mm256_set1_ps(k->c2);
    const __m256 eps = _mm256_set1_ps(k->eps);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pv = _mm256_loadu_ps(p + i), gi = _mm256_loadu_ps(g + i);
        if (k->decoupled)
            pv = _mm256_mul_ps(pv, decay);
        else
            gi = _mm256_add_ps(gi, _mm256_mul_ps(wd, pv));
        __m256 m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(s1 + i)), _mm256_mul_ps(omb1, gi));
        __m256 v =
            _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(s2 + i)), _mm256_mul_ps(_mm256_mul_ps(omb2, gi), gi));
        __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(v, c2)), eps);
        pv = _mm256_sub_ps(pv, _mm256_div_ps(_mm256_mul_ps(lr, _mm256_div_ps(m, c1)), den));
        _mm256_storeu_ps(s1 + i, m);
        _mm256_storeu_ps(s2 + i, v);
        _mm256_storeu_ps(p + i, pv);
    }
    return i;
}
#endif

static void adam(const adam_k *k, float *p, const float *g, float *s1, float *s2, size_t n)
{
    size_t done = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx"))
        done = adam_avx(k, p, g, s1, s2, n);
#endif
    adam_scalar(k, p, g, s1, s2, done, n);
}

void ntpu_optim_update(const ntpu_optim_config *cfg, uint64_t t, float *p, const float *g, float *s1, float *s2,
                       size_t n)
{
    const float lr = ntpu_optim_lr(cfg, t), wd = cfg->weight_decay;
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
    case NTPU_OPT_ADAMW: {
        const float b1 = cfg->beta1, b2 = cfg->beta2;
        const adam_k k = {.lr = lr,
                          .wd = wd,
                          .decay = 1.0f - lr * wd,
                          .b1 = b1,
                          .omb1 = 1.0f - b1,
                          .b2 = b2,
                          .omb2 = 1.0f - b2,
                          .c1 = 1.0f - powf(b1, (float)(t + 1)),
                          .c2 = 1.0f - powf(b2, (float)(t + 1)),
                          .eps = cfg->eps,
                          .decoupled = cfg->kind == NTPU_OPT_ADAMW};
        adam(&k, p, g, s1, s2, n);
        break;
    }
    }
}
