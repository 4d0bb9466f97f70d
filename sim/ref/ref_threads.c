/* SPDX-License-Identifier: Apache-2.0 */
/* Worker threads for large MATMULs (ref_threads.h). The caller takes parts
 * too, so T threads means T - 1 workers; parts are whole blocks of rows (a
 * multiple of 8 and of N), each computed exactly as the one-thread kernel
 * computes it. A MATMUL below REF_SPLIT_MACS stays on the calling thread: waking
 * a worker costs more than its share of the work. */
#include "ref_threads.h"

#include <pthread.h>
#include <stdlib.h>

#include "numerics_internal.h"

#define REF_SPLIT_MACS (1u << 18)

struct ntpu_ref_pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_t *workers;
    unsigned threads, started;
    ntpu_ref_part_fn *fn; /* the current job: fn(ctx, m0, m1, part) over rows */
    void *ctx;
    size_t rows, part_rows; /* rows per part */
    unsigned parts, next, pending;
    uint64_t generation; /* of job: a worker runs each one once */
    int stop;
};

static void run_part(void *ctx, size_t m0, size_t m1, unsigned part)
{
    (void)part;
    const ntpu_ref_rows *j = ctx;
    if (m0 >= m1)
        return;
    size_t n = j->n, cnt = m1 - m0;
    if (j->transposed)
        ntpu_mac_bf16_rows_t(j->acc + m0 * n, j->a + (m0 / n) * j->t_stride, j->t_stride, j->w, j->n, cnt);
    else if (j->bf16)
        ntpu_mac_bf16_rows(j->acc + m0 * n, j->a + m0 * n, j->w, j->n, cnt);
    else
        ntpu_mac_int8_rows(j->acc + m0 * n, j->a + m0 * n, j->w, j->n, cnt);
}

/* Takes parts of the current job until none is left; called with mu held. */
static void take_parts(ntpu_ref_pool *p)
{
    while (p->next < p->parts) {
        const unsigned part = p->next++;
        size_t m0 = part * p->part_rows, m1 = m0 + p->part_rows;
        ntpu_ref_part_fn *fn = p->fn;
        void *ctx = p->ctx;
        size_t rows = p->rows;
        pthread_mutex_unlock(&p->mu);
        fn(ctx, m0, m1 < rows ? m1 : rows, part);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
}

static void *worker(void *arg)
{
    ntpu_ref_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        take_parts(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

ntpu_ref_pool *ntpu_ref_pool_new(unsigned threads)
{
    ntpu_ref_pool *p = calloc(1, sizeof *p);
    if (!p || threads < 2 || !(p->workers = calloc(threads - 1, sizeof *p->workers))) {
        free(p);
        return NULL;
    }
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    for (; p->started < threads - 1; p->started++)
        if (pthread_create(&p->workers[p->started], NULL, worker, p) != 0) {
            ntpu_ref_pool_free(p);
            return NULL;
        }
    return p;
}

void ntpu_ref_pool_free(ntpu_ref_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

void ntpu_ref_pool_for(ntpu_ref_pool *p, size_t rows, size_t unit, uint64_t macs, ntpu_ref_part_fn *fn, void *ctx)
{
    if (!p || macs < REF_SPLIT_MACS || rows < 2 * unit) {
        fn(ctx, 0, rows, 0);
        return;
    }
    size_t per = (rows + p->threads - 1) / p->threads;
    per = (per + unit - 1) / unit * unit;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->rows = rows;
    p->part_rows = per;
    p->parts = (unsigned)((rows + per - 1) / per);
    p->next = 0;
    p->pending = p->parts;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    take_parts(p);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

unsigned ntpu_ref_pool_threads(const ntpu_ref_pool *p)
{
    return p ? p->threads : 1;
}

void ntpu_ref_rows_run(ntpu_ref_pool *p, const ntpu_ref_rows *job)
{
    /* whole blocks of rows and whole tiles */
    ntpu_ref_pool_for(p, job->rows, 8 * (size_t)job->n, (uint64_t)job->rows * job->n * job->n, run_part, (void *)job);
}
