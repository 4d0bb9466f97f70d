/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu tune's scheduler (tune_asha.h). It decides only from the scores it was told, in the order it was
 * told them; cmd_tune.c tells them in a fixed order (by the jobs' ends in epochs, then trial), so a
 * study's decisions do not depend on how fast its workers ran. */
#include "tune_asha.h"

#include <stdlib.h>

int asha_init(asha *a, size_t trials, unsigned min_epochs, unsigned max_epochs, unsigned eta, int random)
{
    *a = (asha){.trials = trials, .eta = eta < 2 ? 2 : eta};
    if (random)
        a->rungs[a->nrungs++] = max_epochs;
    else {
        for (unsigned long r = min_epochs; r < max_epochs && a->nrungs < ASHA_MAX_RUNGS - 1; r *= a->eta)
            a->rungs[a->nrungs++] = (unsigned)r;
        a->rungs[a->nrungs++] = max_epochs;
    }
    a->score = malloc(trials * sizeof *a->score);
    a->promoted = calloc(trials, sizeof *a->promoted);
    if (!a->score || !a->promoted)
        return -1;
    for (size_t t = 0; t < trials; t++)
        for (unsigned k = 0; k < ASHA_MAX_RUNGS; k++)
            a->score[t][k] = -1.0;
    return 0;
}

void asha_free(asha *a)
{
    free(a->score);
    free(a->promoted);
}

/* Trial t before trial u at rung k: higher score, then lower number. */
static int better(const asha *a, unsigned k, size_t t, size_t u)
{
    return a->score[t][k] > a->score[u][k] || (a->score[t][k] == a->score[u][k] && t < u);
}

int asha_next(asha *a, asha_job *job)
{
    for (unsigned k = a->nrungs - 1; k-- > 0;) {
        size_t finished = 0;
        for (size_t t = 0; t < a->started; t++)
            finished += a->score[t][k] >= 0;
        const size_t top = finished / a->eta;
        /* the best trial not yet promoted, if it ranks among the top `top` */
        size_t best = a->trials;
        for (size_t t = 0; t < a->started; t++)
            if (a->score[t][k] >= 0 && !a->promoted[t][k] && (best == a->trials || better(a, k, t, best)))
                best = t;
        if (best == a->trials)
            continue;
        size_t rank = 0;
        for (size_t t = 0; t < a->started; t++)
            rank += a->score[t][k] >= 0 && better(a, k, t, best);
        if (rank < top) {
            a->promoted[best][k] = 1;
            *job = (asha_job){best, k + 1, a->rungs[k], a->rungs[k + 1]};
            return 1;
        }
    }
    if (a->started == a->trials)
        return 0;
    *job = (asha_job){a->started++, 0, 0, a->rungs[0]};
    return 1;
}

void asha_report(asha *a, const asha_job *job, double score)
{
    a->score[job->trial][job->rung] = score < 0 ? -1.0 : score;
    if (score < 0) /* a diverged trial is never promoted */
        a->promoted[job->trial][job->rung] = 1;
}
