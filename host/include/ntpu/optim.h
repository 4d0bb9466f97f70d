/* SPDX-License-Identifier: Apache-2.0 */
/* Optimizers and learning-rate schedules, in fp32 on the host: the reference
 * for the on-device optimizer and what training uses by default. */
#ifndef NTPU_OPTIM_H
#define NTPU_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/ntpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ntpu_optimizer {
    NTPU_OPT_SGD = 0,      /* p -= lr * (g + wd * p)                                    */
    NTPU_OPT_MOMENTUM = 1, /* b = momentum * b + (g + wd * p); p -= lr * b  (PyTorch SGD) */
    NTPU_OPT_ADAM = 2,     /* Adam with L2 weight decay added to the gradient            */
    NTPU_OPT_ADAMW = 3,    /* Adam with decoupled weight decay: p *= 1 - lr * wd first    */
} ntpu_optimizer;

typedef enum ntpu_lr_schedule {
    NTPU_LR_CONSTANT = 0, /* lr                                                  */
    NTPU_LR_STEP = 1,     /* lr * gamma ^ floor(t / step_size)                   */
    NTPU_LR_COSINE = 2,   /* lr * (1 + cos(pi * min(t, total) / total)) / 2     */
} ntpu_lr_schedule;

typedef struct ntpu_optim_config {
    ntpu_optimizer kind;
    float lr;           /* base learning rate */
    float momentum;     /* NTPU_OPT_MOMENTUM */
    float beta1, beta2; /* Adam, AdamW */
    float eps;          /* Adam, AdamW */
    float weight_decay; /* 0 = none */
    ntpu_lr_schedule schedule;
    uint64_t step_size;   /* NTPU_LR_STEP: steps between decays */
    float gamma;          /* NTPU_LR_STEP: decay factor */
    uint64_t total_steps; /* NTPU_LR_COSINE: length of the schedule */
    int device;           /* 1: training keeps the fp32 master weights and the momentum in the
                           * device's ACC and updates them there (OPTIM, protocol 1.3), for SGD and
                           * momentum; Adam and AdamW keep their moments in the device's OS
                           * memory (OPTIM ADAM, 1.4); on a device that has it and room for them;
                           * else (and by default, 0) the host runs the optimizer. The results are
                           * the same bits while every value stays in the normal range
                           * (docs/training.md). */
} ntpu_optim_config;

/* Defaults of the usual frameworks for `kind`: lr 0.01 (SGD, momentum) or 0.001
 * (Adam, AdamW), momentum 0.9, betas 0.9 / 0.999, eps 1e-8, weight decay 0 (0.01
 * for AdamW), constant schedule (step_size 1, gamma 0.1 if STEP is chosen later). */
NTPU_API ntpu_optim_config ntpu_optim_defaults(ntpu_optimizer kind);

/* Learning rate at step t (0-based) under the schedule. */
NTPU_API float ntpu_optim_lr(const ntpu_optim_config *cfg, uint64_t t);

/* Name <-> value: "sgd", "momentum", "adam", "adamw"; "constant", "step", "cosine".
 * The names of unknown values are "unknown". The parsers return NTPU_OK, or
 * NTPU_ERR_INVALID_ARG for an unknown name (detail in ntpu_last_error(NULL)). */
NTPU_API const char *ntpu_optimizer_name(ntpu_optimizer kind);
NTPU_API ntpu_status ntpu_optimizer_parse(const char *name, ntpu_optimizer *out);
NTPU_API const char *ntpu_lr_schedule_name(ntpu_lr_schedule s);
NTPU_API ntpu_status ntpu_lr_schedule_parse(const char *name, ntpu_lr_schedule *out);

/* Slots of optimizer state per parameter: 0 (SGD), 1 (momentum), 2 (Adam, AdamW). */
NTPU_API unsigned ntpu_optimizer_slots(ntpu_optimizer kind);

/* One update of n parameters p with gradients g, as step t (0-based; Adam's bias
 * correction uses t + 1). s1, s2: the state slots (momentum buffer; Adam's m and
 * v), each n floats, zero before the first step; unused slots may be NULL. */
NTPU_API void ntpu_optim_update(const ntpu_optim_config *cfg, uint64_t t, float *p, const float *g, float *s1,
                                float *s2, size_t n);

#ifdef __cplusplus
}
#endif

#endif
