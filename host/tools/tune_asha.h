/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu tune's scheduler (tune_asha.c): asynchronous successive halving (ASHA, Li et al. 2018), and random
 * search as its one-rung case. Budgets are epochs: rung k trains a trial to min * eta^k epochs, the last
 * rung to max. A free worker is given the best not yet promoted trial among the top 1/eta of a rung's
 * finished ones (highest rung first), else a new trial. */
#ifndef NTPU_CLI_TUNE_ASHA_H
#define NTPU_CLI_TUNE_ASHA_H

#include <stddef.h>

#define ASHA_MAX_RUNGS 16

typedef struct asha_job {
    size_t trial;
    unsigned rung, from, to; /* epochs: the trial has `from`, the job trains it to `to` */
} asha_job;

typedef struct asha {
    size_t trials, started;
    unsigned eta, rungs[ASHA_MAX_RUNGS], nrungs;
    double (*score)[ASHA_MAX_RUNGS];           /* per trial and rung; < 0: not finished there (or diverged) */
    unsigned char (*promoted)[ASHA_MAX_RUNGS]; /* per trial and rung */
} asha;

/* random: every trial straight to max epochs. 0, or -1 out of memory. */
int asha_init(asha *a, size_t trials, unsigned min_epochs, unsigned max_epochs, unsigned eta, int random);
void asha_free(asha *a);
/* The next job for a free worker: 1 and *job, or 0 when there is none until another job finishes. */
int asha_next(asha *a, asha_job *job);
/* A job finished with this score (the validation accuracy; < 0 for a trial that diverged). */
void asha_report(asha *a, const asha_job *job, double score);

#endif
