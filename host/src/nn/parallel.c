/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel training (ntpu/parallel.h, docs/training.md): a copy of the model on every other device,
 * a thread per device for its shards, every shard's gradient kept whole until all are in, then one sum in
 * shard order and one optimizer step on the caller's model, whose weights each copy takes at the start of
 * the next step. Keeping the shards apart costs memory (one gradient a shard) but makes the sum's order a
 * property of the shards alone, not of which device or process ran them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "ntpu/parallel.h"

struct ntpu_parallel {
    ntpu_model *rep[NTPU_MAX_DEVICES]; /* rep[0] is the caller's model; the others are ours */
    char name[NTPU_MAX_DEVICES][136];  /* each device's, for errors */
    size_t n, shard;
    size_t first, workers; /* this process's first worker, and the workers of all */
    ntpu_shard_exchange exchange;
    void *ctx;
    size_t floats; /* the trainable parameters' */
    float *records;
    size_t records_cap; /* in shards */
};

/* One device's share of a step, or of an evaluation (batches: its batches' losses and hits go there). */
typedef struct job {
    ntpu_parallel *p;
    size_t d;
    const float *x;
    const uint8_t *labels;
    size_t batch, shards;
    float *batch_loss;
    size_t *batch_correct;
    ntpu_status st;
    size_t failed; /* the shard or batch that failed */
    char why[512];
} job;

static size_t stride(const ntpu_parallel *p)
{
    return p->floats + 2;
}

/* m's weights into copy c (the same arch, so the same tensors in the same order). */
static void copy_weights(ntpu_model *c, ntpu_model *m)
{
    ntpu_param_ref from[2 * NTPU_MAX_ITEMS], to[2 * NTPU_MAX_ITEMS];
    const size_t n = ntpu_model_params(m, from);
    ntpu_model_params(c, to);
    for (size_t i = 0; i < n; i++)
        memcpy(to[i].w, from[i].w, from[i].n * sizeof *from[i].w);
}

/* Shard i's gradient, loss sum and hits from the model into its record. */
static void keep_record(ntpu_model *r, float *rec, float total, size_t correct)
{
    ntpu_param_ref g[2 * NTPU_MAX_ITEMS];
    const size_t n = ntpu_model_params(r, g);
    for (size_t i = 0; i < n; rec += g[i].n, i++)
        memcpy(rec, g[i].g, g[i].n * sizeof *rec);
    rec[0] = total;
    rec[1] = (float)correct; /* exact: a shard has at most 4096 samples */
}

static void *failed(job *j, size_t at)
{
    j->failed = at;
    snprintf(j->why, sizeof j->why, "%s", ntpu_last_error(j->p->rep[j->d]->dev));
    return NULL;
}

/* Evaluation: batch k of the primary's max_batch samples on local device k mod n. */
static void *evaluate(job *j)
{
    ntpu_parallel *p = j->p;
    ntpu_model *r = p->rep[j->d];
    const size_t in = ntpu_model_inputs(r), mb = p->rep[0]->max_batch;
    float *scratch = malloc(mb * ntpu_model_classes(r) * 2 * sizeof *scratch);
    if (!scratch) {
        j->st = ntpu_fail(r->dev, NTPU_ERR_NO_MEMORY, "evaluate: out of memory");
        return failed(j, j->d);
    }
    for (size_t k = j->d; k * mb < j->batch; k += p->n) {
        const size_t at = k * mb, b = j->batch - at < mb ? j->batch - at : mb;
        if ((j->st = ntpu_model_eval_batch(r, j->x + at * in, j->labels + at, b, scratch, &j->batch_loss[k],
                                           &j->batch_correct[k])) != NTPU_OK) {
            free(scratch);
            return failed(j, k);
        }
    }
    free(scratch);
    return NULL;
}

static void *work(void *arg)
{
    job *j = arg;
    ntpu_parallel *p = j->p;
    ntpu_model *r = p->rep[j->d];
    const size_t in = ntpu_model_inputs(r);
    if (j->d > 0) { /* the primary's weights: those of the step before */
        copy_weights(r, p->rep[0]);
        if ((j->st = ntpu_model_sync(r)) != NTPU_OK)
            return failed(j, p->first + j->d);
    }
    if (j->batch_loss)
        return evaluate(j);
    for (size_t i = p->first + j->d; i < j->shards; i += p->workers) {
        const size_t at = i * p->shard, count = j->batch - at < p->shard ? j->batch - at : p->shard;
        float total = 0.0f;
        size_t correct = 0;
        j->st = ntpu_model_grad(r, j->x + at * in, j->labels + at, count, j->batch, &total, &correct);
        if (j->st != NTPU_OK)
            return failed(j, i);
        keep_record(r, p->records + i * stride(p), total, correct);
    }
    return NULL;
}

/* Every device's shards, at once: 0, or the first failure (lowest shard) in *bad. */
static ntpu_status run_jobs(ntpu_parallel *p, job *jobs, job **bad)
{
    pthread_t th[NTPU_MAX_DEVICES];
    int started[NTPU_MAX_DEVICES] = {0};
    for (size_t d = 1; d < p->n; d++)
        started[d] = pthread_create(&th[d], NULL, work, &jobs[d]) == 0;
    work(&jobs[0]);
    for (size_t d = 1; d < p->n; d++) {
        if (started[d])
            pthread_join(th[d], NULL);
        else
            work(&jobs[d]); /* no thread to be had: here, after the others */
    }
    *bad = NULL;
    for (size_t d = 0; d < p->n; d++)
        if (jobs[d].st != NTPU_OK && (!*bad || jobs[d].failed < (*bad)->failed))
            *bad = &jobs[d];
    return *bad ? (*bad)->st : NTPU_OK;
}

/* G = s0, then G += s_i in shard order, into m's gradient tensors; the loss sums the same way. */
static void reduce(ntpu_parallel *p, size_t shards, float *total, size_t *correct)
{
    ntpu_param_ref g[2 * NTPU_MAX_ITEMS];
    const size_t n = ntpu_model_params(p->rep[0], g);
    const float *rec = p->records;
    for (size_t k = 0, o = 0; k < n; o += g[k].n, k++)
        memcpy(g[k].g, rec + o, g[k].n * sizeof *rec);
    *total = rec[p->floats];
    *correct = (size_t)rec[p->floats + 1];
    for (size_t i = 1; i < shards; i++) {
        rec = p->records + i * stride(p);
        for (size_t k = 0, o = 0; k < n; o += g[k].n, k++) {
            float *dst = g[k].g;
            const float *src = rec + o;
            for (size_t e = 0; e < g[k].n; e++)
                dst[e] += src[e];
        }
        *total += rec[p->floats];
        *correct += (size_t)rec[p->floats + 1];
    }
}

ntpu_status ntpu_parallel_train_step(ntpu_parallel *p, const float *x, const uint8_t *labels, size_t batch,
                                     ntpu_step_result *res)
{
    if (!p)
        return NTPU_ERR_INVALID_ARG;
    ntpu_model *m = p->rep[0];
    if (!x || !labels || batch == 0 || batch > m->max_batch)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "batch of %zu samples: need 1..%zu, data and labels", batch,
                         m->max_batch);
    if (p->n == 1 && p->workers == 1 && batch <= p->shard)
        return ntpu_model_train_step(m, x, labels, batch, res); /* one shard on one device: the same bits */
    const size_t shards = (batch + p->shard - 1) / p->shard;
    if (shards > p->records_cap) {
        float *r = realloc(p->records, shards * stride(p) * sizeof *r);
        if (!r)
            return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
        p->records = r;
        p->records_cap = shards;
    }
    job jobs[NTPU_MAX_DEVICES], *bad;
    for (size_t d = 0; d < p->n; d++)
        jobs[d] = (job){.p = p, .d = d, .x = x, .labels = labels, .batch = batch, .shards = shards};
    ntpu_status st = run_jobs(p, jobs, &bad);
    if (st != NTPU_OK)
        return ntpu_fail(m->dev, st, "shard %zu on device %zu (%s): %s", bad->failed, bad->d, p->name[bad->d],
                         bad->why);
    char why[512] = "";
    if (p->exchange && p->exchange(p->ctx, p->records, stride(p), shards, why, sizeof why) != 0)
        return ntpu_fail(m->dev, NTPU_ERR_IO, "train: %s", why[0] ? why : "the other processes' shards did not come");
    ntpu_step_result r = {0};
    float total;
    reduce(p, shards, &total, &r.correct);
    r.loss = total / (float)batch;
    if ((st = ntpu_model_apply_grad(m)) == NTPU_OK && res)
        *res = r;
    return st;
}

ntpu_status ntpu_parallel_evaluate(ntpu_parallel *p, const float *x, const uint8_t *labels, size_t count,
                                   double *accuracy, double *loss)
{
    if (!p)
        return NTPU_ERR_INVALID_ARG;
    ntpu_model *m = p->rep[0];
    if (p->n == 1)
        return ntpu_model_evaluate(m, x, labels, count, accuracy, loss);
    if (!x || !labels || count == 0)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "evaluate: no samples");
    ntpu_status st = ntpu_check_labels(m, labels, count, "evaluate");
    if (st != NTPU_OK)
        return st;
    const size_t batches = (count + m->max_batch - 1) / m->max_batch;
    float *bl = malloc(batches * sizeof *bl);
    size_t *bc = malloc(batches * sizeof *bc);
    if (!bl || !bc) {
        free(bl);
        free(bc);
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "evaluate: out of memory");
    }
    job jobs[NTPU_MAX_DEVICES], *bad;
    for (size_t d = 0; d < p->n; d++)
        jobs[d] =
            (job){.p = p, .d = d, .x = x, .labels = labels, .batch = count, .batch_loss = bl, .batch_correct = bc};
    if ((st = run_jobs(p, jobs, &bad)) != NTPU_OK)
        st = ntpu_fail(m->dev, st, "evaluate: batch %zu on device %zu (%s): %s", bad->failed, bad->d, p->name[bad->d],
                       bad->why);
    double total = 0; /* in batch order, as ntpu_model_evaluate sums */
    size_t correct = 0;
    for (size_t k = 0; k < batches && st == NTPU_OK; k++) {
        const size_t b = count - k * m->max_batch < m->max_batch ? count - k * m->max_batch : m->max_batch;
        total += (double)bl[k] * (double)b;
        correct += bc[k];
    }
    free(bl);
    free(bc);
    if (st == NTPU_OK && accuracy)
        *accuracy = (double)correct / (double)count;
    if (st == NTPU_OK && loss)
        *loss = total / (double)count;
    return st;
}

ntpu_status ntpu_parallel_create(ntpu_model *m, ntpu_device *const *more, size_t n_more, size_t shard,
                                 ntpu_parallel **out)
{
    if (!out)
        return NTPU_ERR_INVALID_ARG;
    *out = NULL;
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (shard == 0 || shard > m->max_batch || n_more >= NTPU_MAX_DEVICES || (n_more && !more))
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG,
                         "data parallel: a shard of %zu samples and %zu more devices: need 1..%zu samples (the "
                         "model's batch) and up to %d devices",
                         shard, n_more, m->max_batch, NTPU_MAX_DEVICES);
    if (m->devopt && (n_more || shard < m->max_batch))
        return ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED,
                         "data parallel: the device optimizer runs only on one device with shards of the whole "
                         "batch (here %zu devices, shards of %zu)",
                         n_more + 1, shard);
    ntpu_parallel *p = calloc(1, sizeof *p);
    if (!p)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "data parallel: out of memory");
    p->rep[0] = m;
    p->n = 1 + n_more;
    p->shard = shard;
    p->workers = p->n;
    ntpu_param_ref g[2 * NTPU_MAX_ITEMS];
    const size_t np = ntpu_model_params(m, g);
    for (size_t i = 0; i < np; i++)
        p->floats += g[i].n;
    ntpu_optim_config opt = m->opt;
    opt.device = 0; /* the copies only compute gradients */
    ntpu_status st = NTPU_OK;
    for (size_t d = 0; d < p->n && st == NTPU_OK; d++) {
        ntpu_device *dev = d ? more[d - 1] : m->dev;
        ntpu_info info;
        if (!dev || ntpu_get_info(dev, &info) != NTPU_OK)
            snprintf(p->name[d], sizeof p->name[d], "%s", dev ? "?" : "none");
        else
            snprintf(p->name[d], sizeof p->name[d], "%s", info.device);
        for (size_t e = 0; e < d && dev; e++)
            if ((e ? more[e - 1] : m->dev) == dev)
                st = ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "data parallel: device %zu is device %zu again", d, e);
        if (!dev)
            st = ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "data parallel: device %zu is NULL", d);
        if (st != NTPU_OK || d == 0)
            continue;
        if ((st = ntpu_model_create_arch(dev, &m->arch, m->max_batch, 0, &opt, &p->rep[d])) != NTPU_OK)
            st = ntpu_fail(m->dev, st, "data parallel: device %zu (%s) cannot train the model: %s", d, p->name[d],
                           ntpu_last_error(dev));
    }
    if (st != NTPU_OK) {
        ntpu_parallel_free(p);
        return st;
    }
    *out = p;
    return NTPU_OK;
}

ntpu_status ntpu_parallel_set_peers(ntpu_parallel *p, size_t first, size_t workers, ntpu_shard_exchange exchange,
                                    void *ctx)
{
    if (!p)
        return NTPU_ERR_INVALID_ARG;
    if (workers > 1 && p->rep[0]->devopt)
        return ntpu_fail(p->rep[0]->dev, NTPU_ERR_UNSUPPORTED,
                         "data parallel: the device optimizer runs only on one device with shards of the whole "
                         "batch (here %zu devices)",
                         workers);
    if (workers < p->n || first > workers - p->n || (workers > p->n && !exchange))
        return ntpu_fail(p->rep[0]->dev, NTPU_ERR_INVALID_ARG,
                         "data parallel: workers %zu..%zu of %zu, %s exchange: not a place for %zu devices", first,
                         first + p->n - 1, workers, exchange ? "with an" : "without", p->n);
    p->first = first;
    p->workers = workers;
    p->exchange = exchange;
    p->ctx = ctx;
    return NTPU_OK;
}

size_t ntpu_parallel_record_floats(const ntpu_parallel *p)
{
    return p ? stride(p) : 0;
}

void ntpu_parallel_free(ntpu_parallel *p)
{
    if (!p)
        return;
    for (size_t d = 1; d < p->n; d++)
        ntpu_model_free(p->rep[d]);
    free(p->records);
    free(p);
}
