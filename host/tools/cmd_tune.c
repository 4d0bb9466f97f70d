/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu tune: hyperparameter search over MLPs on an IDX dataset (docs/training.md, Tuning). Trials get
 * their settings from the study's seed and their number (tune_space.c); ASHA or random search decides
 * what runs (tune_asha.c). The workers are the -d devices, a host thread each; a job's length is its
 * epochs, and the scheduler is asked and told in the order of the jobs' ends in epochs, as if every epoch
 * took the same time on every device, so the decisions and the journal are the same however fast the
 * devices are and however many there are. Every finished job appends one line to the journal (fsync'd)
 * and leaves its trial's checkpoint in JOURNAL.d/; a study run again with the journal replays what it
 * holds and trains only what is missing. */
#define _DEFAULT_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ntpu/data.h"
#include "ranks.h"
#include "ntpu/nn.h"
#include "train_common.h"
#include "tune_asha.h"
#include "tune_space.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"
#define MAX_EPOCHS 1000
#define MAX_TRIALS 4096

static const char tune_help[] =
    "usage: ntpu tune [-d DEV ...] [--space \"KEY=VALUES ...\"] [--space-file FILE] [--trials N]\n"
    "                 [--method asha|random] [--epochs E] [--min-epochs R] [--eta H] [--seed S] [--data DIR]\n"
    "                 [--train-limit N] [--val N] [--test-limit N] [--journal FILE] [--csv FILE] [--plot FILE.svg]\n"
    "                 [--json]\n"
    "\n"
    "Searches hyperparameters of an MLP on an IDX dataset: --trials settings drawn from the space, each\n"
    "from the study's --seed and its number, trained on the first --train-limit images less the last --val\n"
    "(the validation set, which ranks them); every epoch also evaluated on the test set. Trials run on the\n"
    "given devices at once, a thread each. The same command gives the same journal and result.\n"
    "\n"
    "  --space S         items KEY=VALUES, VALUES a list (64,128) or a range log:A:B / uniform:A:B;\n"
    "                    KEY: lr, batch, optimizer, weight_decay, momentum, hidden (widths, 256-128 for\n"
    "                    two layers). Default: lr=log:1e-4:1e-1 batch=32,64,128 hidden=64,128,256\n"
    "  --space-file F    the same items in a file, # comments (adds to --space)\n"
    "  --trials N        trials (16)\n"
    "  --method M        asha: asynchronous successive halving (default); random: every trial to --epochs\n"
    "  --epochs E        the largest budget, epochs (9)\n"
    "  --min-epochs R    ASHA's smallest budget (1); rungs R, R*H, R*H^2, ... and E\n"
    "  --eta H           ASHA: the top 1/H of a rung go on (3)\n"
    "  --seed S          the study's seed (0)\n"
    "  --data DIR        IDX dataset directory; default " DEFAULT_DATA "\n"
    "  --train-limit N   the first N training images (10000), of which the last --val validate (2000)\n"
    "  --test-limit N    the first N test images (all)\n"
    "  --journal FILE    the study's append-only journal (ntpu-tune.journal); checkpoints in FILE.d/.\n"
    "                    Run again, the study goes on from it without repeating finished jobs\n"
    "  --csv FILE        a row per trial: settings, epochs, validation and test accuracy\n"
    "  --plot FILE.svg   each trial's validation accuracy over its epochs\n"
    "  --json            one JSON object on stdout instead of the table\n";

/* The study: what the command line asks. */
typedef struct study {
    const char *data, *space_s, *space_file, *trials_s, *method_s, *epochs_s, *min_s, *eta_s, *seed_s, *limit_s, *val_s,
        *test_s, *journal, *csv, *plot;
    tune_space space;
    uint64_t trials, epochs, min_epochs, eta, seed, train_limit, val, test_limit;
    int random;
    char space_text[2048], header[4096], dir[4200];
    ntpu_dataset train, test;
    size_t n_train; /* training samples: the first n_train; the validation set follows */
} study;

/* One job (a trial trained from `from` to `to` epochs): its place in epoch-time, its worker, its results. */
typedef struct job {
    asha_job a;
    size_t worker;
    uint64_t vend; /* epoch-time at which it ends: its start plus its epochs */
    tune_config cfg;
    float *val, *test; /* accuracy after each of its epochs (to - from of them) */
    int diverged, from_journal, running, told;
    pthread_t th;
    ntpu_device *dev;
    const study *s;
    int rc;
    char why[600];
} job;

/* ------------------------------------------------------------------ the command line */

static int read_file(const char *opt, const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail("%s: cannot read %s: %s", opt, path, strerror(errno));
    char *buf = malloc(65537);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    int big = buf && n == 65536 && fgetc(f) != EOF;
    fclose(f);
    if (!buf || big) {
        free(buf);
        return fail("%s: %s is larger than 64 KiB", opt, path);
    }
    buf[n] = 0;
    if (memchr(buf, 0, n)) {
        free(buf);
        return fail("%s: %s is not text", opt, path);
    }
    *out = buf;
    return 0;
}

static int tune_args(common *cm, int argc, char **argv, study *s)
{
    memset(s, 0, sizeof *s);
    s->data = DEFAULT_DATA;
    s->journal = "ntpu-tune.journal";
    const option opts[] = {
        {"--space", 0, &s->space_s, NULL},   {"--space-file", 0, &s->space_file, NULL},
        {"--trials", 0, &s->trials_s, NULL}, {"--method", 0, &s->method_s, NULL},
        {"--epochs", 0, &s->epochs_s, NULL}, {"--min-epochs", 0, &s->min_s, NULL},
        {"--eta", 0, &s->eta_s, NULL},       {"--seed", 0, &s->seed_s, NULL},
        {"--data", 0, &s->data, NULL},       {"--train-limit", 0, &s->limit_s, NULL},
        {"--val", 0, &s->val_s, NULL},       {"--test-limit", 0, &s->test_s, NULL},
        {"--journal", 0, &s->journal, NULL}, {"--csv", 0, &s->csv, NULL},
        {"--plot", 0, &s->plot, NULL},
    };
    char *pos[1];
    int npos;
    cm->max_devices = NTPU_MAX_DEVICES;
    if (parse_args(argc, argv, cm, opts, sizeof opts / sizeof opts[0], pos, 0, &npos))
        return 1;
    if (cm->help) {
        fputs(tune_help, stdout);
        return -1;
    }
    s->trials = 16, s->epochs = 9, s->min_epochs = 1, s->eta = 3, s->train_limit = 10000, s->val = 2000;
    if ((s->trials_s && parse_u64("--trials", s->trials_s, 1, MAX_TRIALS, &s->trials)) ||
        (s->epochs_s && parse_u64("--epochs", s->epochs_s, 1, MAX_EPOCHS, &s->epochs)) ||
        (s->min_s && parse_u64("--min-epochs", s->min_s, 1, MAX_EPOCHS, &s->min_epochs)) ||
        (s->eta_s && parse_u64("--eta", s->eta_s, 2, 100, &s->eta)) ||
        (s->seed_s && parse_u64("--seed", s->seed_s, 0, UINT64_MAX, &s->seed)) ||
        (s->limit_s && parse_u64("--train-limit", s->limit_s, 2, UINT32_MAX, &s->train_limit)) ||
        (s->val_s && parse_u64("--val", s->val_s, 1, UINT32_MAX, &s->val)) ||
        (s->test_s && parse_u64("--test-limit", s->test_s, 1, UINT32_MAX, &s->test_limit)))
        return 1;
    if (s->method_s && strcmp(s->method_s, "asha") && strcmp(s->method_s, "random"))
        return fail("--method: '%s' is not asha or random", s->method_s);
    s->random = s->method_s && !strcmp(s->method_s, "random");
    if (s->min_epochs > s->epochs)
        return fail("--min-epochs %" PRIu64 " is more than --epochs %" PRIu64, s->min_epochs, s->epochs);
    if (s->random && (s->min_s || s->eta_s))
        return fail("%s applies to --method asha, not random", s->min_s ? "--min-epochs" : "--eta");
    if (s->val >= s->train_limit)
        return fail("--val %" PRIu64 " leaves no training images of --train-limit %" PRIu64, s->val, s->train_limit);
    if (!s->space_s && !s->space_file &&
        tune_space_parse("--space", "lr=log:1e-4:1e-1 batch=32,64,128 hidden=64,128,256", &s->space))
        return 1;
    if (s->space_s && tune_space_parse("--space", s->space_s, &s->space))
        return 1;
    char *text = NULL;
    if (s->space_file &&
        (read_file("--space-file", s->space_file, &text) || tune_space_parse(s->space_file, text, &s->space))) {
        free(text);
        return 1;
    }
    free(text);
    tune_space_format(&s->space, s->space_text, sizeof s->space_text);
    if ((s->csv && check_output("--csv", s->csv)) || (s->plot && check_output("--plot", s->plot)))
        return 1;
    snprintf(s->dir, sizeof s->dir, "%s.d", s->journal);
    return 0;
}

/* ------------------------------------------------------------------ the journal */

/* The header line: everything that decides the study's results. */
static void make_header(study *s, size_t workers)
{
    char data[1200];
    snprintf(data, sizeof data, "%s", s->data);
    for (char *p = data; *p; p++) /* kept out of the JSON's way; the path is for the reader only */
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            *p = '?';
    snprintf(s->header, sizeof s->header,
             "{\"ntpu_tune\":1,\"method\":\"%s\",\"space\":\"%s\",\"trials\":%" PRIu64 ",\"epochs\":%" PRIu64
             ",\"min_epochs\":%" PRIu64 ",\"eta\":%" PRIu64 ",\"seed\":%" PRIu64
             ",\"data\":\"%s\",\"train_limit\":%" PRIu64 ",\"val\":%" PRIu64 ",\"test_limit\":%zu,\"workers\":%zu}\n",
             s->random ? "random" : "asha", s->space_text, s->trials, s->epochs, s->random ? s->epochs : s->min_epochs,
             s->eta, s->seed, data, s->train_limit, s->val, s->test.count, workers);
}

static void job_line(const job *j, char *buf, size_t len)
{
    char cfg[512];
    tune_config_format(&j->cfg, cfg, sizeof cfg);
    int at = snprintf(buf, len, "{\"trial\":%zu,\"rung\":%u,\"from\":%u,\"to\":%u,\"config\":\"%s\",\"diverged\":%s",
                      j->a.trial, j->a.rung, j->a.from, j->a.to, cfg, j->diverged ? "true" : "false");
    for (int pass = 0; pass < 2; pass++) {
        at += snprintf(buf + at, len - (size_t)at, ",\"%s\":[", pass ? "test" : "val");
        for (unsigned e = 0; e < j->a.to - j->a.from; e++)
            at += snprintf(buf + at, len - (size_t)at, "%s%.6f", e ? "," : "", (double)(pass ? j->test : j->val)[e]);
        at += snprintf(buf + at, len - (size_t)at, "]");
    }
    snprintf(buf + at, len - (size_t)at, "}\n");
}

/* The journal's finished jobs (records[i] the text of line i + 1). A last line without its newline (a run
 * killed while writing it) is cut off. 0, or 1 after printing why. */
static int journal_open(study *s, int *fd, char ***records, size_t *n)
{
    *records = NULL;
    *n = 0;
    if (mkdir(s->dir, 0777) != 0 && errno != EEXIST)
        return fail("--journal: cannot make %s: %s", s->dir, strerror(errno));
    *fd = open(s->journal, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (*fd < 0)
        return fail("--journal: cannot open %s: %s", s->journal, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20))
        return fail("--journal: %s is not a journal of ntpu tune (not a regular file under 64 MiB)", s->journal);
    char *text = malloc((size_t)st.st_size + 1);
    if (!text || pread(*fd, text, (size_t)st.st_size, 0) != st.st_size) {
        free(text);
        return fail("--journal: cannot read %s", s->journal);
    }
    text[st.st_size] = 0;
    size_t whole = 0; /* bytes in whole lines */
    for (size_t i = 0; i < (size_t)st.st_size; i++)
        if (text[i] == '\n')
            whole = i + 1;
    if (whole < (size_t)st.st_size && ftruncate(*fd, (off_t)whole) != 0) {
        free(text);
        return fail("--journal: cannot cut the unfinished last line of %s: %s", s->journal, strerror(errno));
    }
    text[whole] = 0;
    const size_t hl = strlen(s->header);
    if (whole == 0) {
        if (write(*fd, s->header, hl) != (ssize_t)hl || fsync(*fd) != 0) {
            free(text);
            return fail("--journal: cannot write %s: %s", s->journal, strerror(errno));
        }
    } else if (whole < hl || memcmp(text, s->header, hl)) {
        free(text);
        return fail("--journal: %s holds another study (other options, space, seed, data or number of devices); give "
                    "another --journal or remove it",
                    s->journal);
    }
    for (char *p = whole ? text + hl : text + whole; *p;) {
        char *nl = strchr(p, '\n');
        *nl = 0;
        char **r = realloc(*records, (*n + 1) * sizeof *r);
        if (!r || !(r[*n] = strdup(p))) {
            free(r ? r : *records);
            free(text);
            return fail("out of memory");
        }
        *records = r;
        (*n)++;
        p = nl + 1;
    }
    free(text);
    return 0;
}

/* Job j's results from a journal line, when the line is that job's: 1, 0 when it is another's, -1 when it
 * is malformed. */
static int journal_take(const char *line, job *j)
{
    cJSON *o = cJSON_Parse(line);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "trial"), *r = cJSON_GetObjectItemCaseSensitive(o, "rung");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "val"), *x = cJSON_GetObjectItemCaseSensitive(o, "test");
    const cJSON *dv = cJSON_GetObjectItemCaseSensitive(o, "diverged");
    int rc = -1;
    const unsigned n = j->a.to - j->a.from;
    if (cJSON_IsNumber(t) && cJSON_IsNumber(r) && cJSON_IsArray(v) && cJSON_IsArray(x) && cJSON_IsBool(dv)) {
        rc = (size_t)t->valuedouble == j->a.trial && (unsigned)r->valuedouble == j->a.rung;
        if (rc == 1 && ((unsigned)cJSON_GetArraySize(v) != n || (unsigned)cJSON_GetArraySize(x) != n))
            rc = -1;
        for (unsigned e = 0; rc == 1 && e < n; e++) {
            j->val[e] = (float)cJSON_GetArrayItem(v, (int)e)->valuedouble;
            j->test[e] = (float)cJSON_GetArrayItem(x, (int)e)->valuedouble;
        }
        j->diverged = cJSON_IsTrue(dv);
    }
    cJSON_Delete(o);
    return rc;
}

/* ------------------------------------------------------------------ one job */

static void checkpoint_path(const study *s, size_t trial, unsigned epochs, char *buf, size_t len)
{
    snprintf(buf, len, "%s/trial-%zu-e%u.safetensors", s->dir, trial, epochs);
}

static uint64_t trial_seed(const study *s, size_t trial)
{
    return s->seed * 0x9E3779B97F4A7C15ull + trial * 0xBF58476D1CE4E5B9ull + 1;
}

static int epoch_of(job *j, ntpu_model *m, unsigned e, size_t *order, float *xb, uint8_t *yb)
{
    const study *s = j->s;
    const size_t in = s->train.features, B = j->cfg.batch;
    epoch_order(trial_seed(s, j->a.trial), e, order, s->n_train);
    for (size_t at = 0; at < s->n_train && !j->diverged; at += B) {
        const size_t nb = s->n_train - at < B ? s->n_train - at : B;
        for (size_t i = 0; i < nb; i++) {
            memcpy(xb + i * in, s->train.images + order[at + i] * in, in * sizeof *xb);
            yb[i] = s->train.labels[order[at + i]];
        }
        ntpu_step_result r;
        if (ntpu_model_train_step(m, xb, yb, nb, &r) != NTPU_OK)
            return -1;
        j->diverged = !isfinite(r.loss);
    }
    double va = 0, ta = 0;
    if (!j->diverged && (ntpu_model_evaluate(m, s->train.images + s->n_train * in, s->train.labels + s->n_train,
                                             s->train.count - s->n_train, &va, NULL) != NTPU_OK ||
                         ntpu_model_evaluate(m, s->test.images, s->test.labels, s->test.count, &ta, NULL) != NTPU_OK))
        return -1;
    j->val[e - j->a.from] = (float)va;
    j->test[e - j->a.from] = (float)ta;
    return 0;
}

static void *run_job(void *arg)
{
    job *j = arg;
    const study *s = j->s;
    ntpu_model *m = NULL;
    char path[4400];
    const size_t B = j->cfg.batch;
    size_t *order = malloc(s->n_train * sizeof *order);
    float *xb = malloc(B * s->train.features * sizeof *xb);
    uint8_t *yb = malloc(B);
    j->rc = -1;
    ntpu_status st = order && xb && yb ? NTPU_OK : NTPU_ERR_NO_MEMORY;
    if (st == NTPU_OK && j->a.from == 0) {
        unsigned sizes[NTPU_MAX_LAYERS + 1];
        size_t n = 0;
        sizes[n++] = (unsigned)s->train.features;
        for (size_t i = 0; i < j->cfg.n_hidden; i++)
            sizes[n++] = j->cfg.hidden[i];
        sizes[n++] = s->train.classes > s->test.classes ? s->train.classes : s->test.classes;
        ntpu_optim_config opt = ntpu_optim_defaults(j->cfg.optimizer);
        opt.lr = j->cfg.lr;
        opt.weight_decay = j->cfg.weight_decay;
        opt.momentum = j->cfg.momentum;
        st = ntpu_model_create(j->dev, sizes, n, B, trial_seed(s, j->a.trial), &opt, &m);
    } else if (st == NTPU_OK) {
        checkpoint_path(s, j->a.trial, j->a.from, path, sizeof path);
        st = ntpu_model_load(j->dev, path, B, &m);
    }
    for (unsigned e = j->a.from; e < j->a.to && st == NTPU_OK; e++)
        if (epoch_of(j, m, e, order, xb, yb))
            st = NTPU_ERR_IO;
    for (unsigned e = j->a.from; e < j->a.to && j->diverged; e++)
        j->val[e - j->a.from] = j->test[e - j->a.from] = 0.0f; /* it scores nothing from there on */
    if (st == NTPU_OK && !j->diverged) {
        checkpoint_path(s, j->a.trial, j->a.to, path, sizeof path);
        st = ntpu_model_save(m, path, NULL, 0, NULL);
    }
    if (st == NTPU_OK)
        j->rc = 0;
    else
        snprintf(j->why, sizeof j->why, "trial %zu, epochs %u..%u: %s", j->a.trial, j->a.from + 1, j->a.to,
                 st == NTPU_ERR_NO_MEMORY && !m ? "out of memory" : ntpu_last_error(j->dev));
    ntpu_model_free(m);
    free(order);
    free(xb);
    free(yb);
    return NULL;
}

/* ------------------------------------------------------------------ the schedule */

typedef struct schedule {
    study *s;
    asha a;
    job *jobs; /* room for every job there can be (a trial has one a rung): running ones never move */
    size_t njobs, cap;
    ntpu_device *dev[NTPU_MAX_DEVICES]; /* this rank's: workers first .. first + local - 1 */
    size_t workers, first, local;
    uint64_t *vfree; /* per worker of all ranks */
    int fd;          /* rank 0's journal; -1 on the other ranks */
    char **records;
    size_t nrecords, next_record; /* the journal's lines replay in order */
    uint64_t epochs_trained;      /* this run's, not the journal's */
} schedule;

/* Job j's thread joined (or nothing to join), its result told to the scheduler and, if new, journalled. */
/* Under mpirun: rank 0's journal lines to every rank, which all replay them. 0, or 1 after printing why. */
static int share_records(schedule *sc)
{
    if (ranks_size() == 1)
        return 0;
    char *text = NULL;
    size_t len = 1;
    for (size_t i = 0; i < sc->nrecords; i++)
        len += strlen(sc->records[i]) + 1;
    if (ranks_rank() == 0) {
        if (!(text = malloc(len)))
            return fail("out of memory");
        text[0] = 0;
        for (size_t i = 0; i < sc->nrecords; i++)
            strcat(strcat(text, sc->records[i]), "\n");
    }
    if (ranks_share_text(0, &text))
        return 1;
    char *header = ranks_rank() == 0 ? sc->s->header : NULL; /* every rank must run the same study */
    if (ranks_share_text(0, &header))
        return 1;
    if (ranks_rank() != 0) {
        const int same = !strcmp(header, sc->s->header);
        free(header);
        if (!same) {
            free(text);
            return fail("this rank's study (options, space, seed or data) is not rank 0's");
        }
    }
    for (char *p = text; ranks_rank() != 0 && *p;) {
        char *nl = strchr(p, '\n');
        *nl = 0;
        char **r = realloc(sc->records, (sc->nrecords + 1) * sizeof *r);
        if (!r || !(r[sc->nrecords] = strdup(p))) {
            free(text);
            return fail("out of memory");
        }
        sc->records = r;
        sc->nrecords++;
        p = nl + 1;
    }
    free(text);
    return 0;
}

/* A new job's line: made here when this rank ran it, else from the rank that did. NULL after printing why. */
static char *job_result(job *j)
{
    char *line = NULL;
    const int owner = ranks_owner(j->worker);
    if (owner == ranks_rank()) {
        const size_t len = 1024 + 32 * (size_t)(j->a.to - j->a.from);
        if (!(line = malloc(len))) {
            fail("out of memory");
            return NULL;
        }
        job_line(j, line, len);
    }
    if (ranks_share_text(owner, &line)) {
        free(line);
        return NULL;
    }
    if (owner != ranks_rank() && journal_take(line, j) != 1) {
        fail("rank %d sent a result that is not trial %zu's (rung %u)", owner, j->a.trial, j->a.rung);
        free(line);
        return NULL;
    }
    return line;
}

static int finish(schedule *sc, job *j)
{
    if (j->running) {
        pthread_join(j->th, NULL);
        j->running = 0;
        if (j->rc != 0)
            return fail("%s", j->why);
    }
    if (!j->from_journal) { /* rank 0 journals it */
        char *line = job_result(j);
        if (!line)
            return 1;
        const size_t n = strlen(line);
        const int bad = sc->fd >= 0 && (write(sc->fd, line, n) != (ssize_t)n || fsync(sc->fd) != 0);
        free(line);
        if (bad)
            return fail("--journal: cannot write %s: %s", sc->s->journal, strerror(errno));
        sc->epochs_trained += j->a.to - j->a.from;
        if (ranks_rank() == 0) /* progress: a line a job, as it is journalled */
            fprintf(stderr,
                    "trial %zu to epoch %u: validation %.4f, test %.4f%s (worker %zu; %" PRIu64 " epochs trained)\n",
                    j->a.trial, j->a.to, j->val[j->a.to - j->a.from - 1], j->test[j->a.to - j->a.from - 1],
                    j->diverged ? ", diverged" : "", j->worker, sc->epochs_trained);
        if (j->a.from && sc->fd >= 0) { /* journalled: only a promotion from its new rung reads the trial again */
            char path[4400];
            checkpoint_path(sc->s, j->a.trial, j->a.from, path, sizeof path);
            unlink(path);
            strncat(path, ".state", sizeof path - strlen(path) - 1);
            unlink(path);
        }
    }
    asha_report(&sc->a, &j->a, j->diverged ? -1.0 : (double)j->val[j->a.to - j->a.from - 1]);
    j->told = 1;
    return 0;
}

/* Tells the scheduler every job that ends by epoch-time t, in order of (end, trial). */
static int tell_until(schedule *sc, uint64_t t)
{
    for (;;) {
        job *next = NULL;
        for (size_t i = 0; i < sc->njobs; i++) {
            job *j = &sc->jobs[i];
            if (!j->told && j->vend <= t &&
                (!next || j->vend < next->vend || (j->vend == next->vend && j->a.trial < next->a.trial)))
                next = j;
        }
        if (!next)
            return 0;
        if (finish(sc, next))
            return 1;
    }
}

static int start(schedule *sc, const asha_job *a, size_t w, uint64_t t)
{
    if (sc->njobs == sc->cap)
        return fail("tune: more jobs than trials x rungs (a bug)");
    job *j = &sc->jobs[sc->njobs++];
    memset(j, 0, sizeof *j);
    j->a = *a, j->worker = w, j->vend = t + (a->to - a->from), j->s = sc->s;
    j->val = calloc(a->to - a->from, sizeof *j->val);
    j->test = calloc(a->to - a->from, sizeof *j->test);
    if (!j->val || !j->test)
        return fail("out of memory");
    tune_space_sample(&sc->s->space, sc->s->seed, a->trial, &j->cfg);
    if (sc->next_record < sc->nrecords) { /* the journal has it: replayed, not trained */
        int r = journal_take(sc->records[sc->next_record], j);
        if (r != 1)
            return fail("--journal: %s line %zu is %s (trial %zu, rung %u was next); remove the journal to start "
                        "again",
                        sc->s->journal, sc->next_record + 2, r ? "not a job's record" : "another job's", a->trial,
                        a->rung);
        sc->next_record++;
        j->from_journal = 1;
        return 0;
    }
    if (w < sc->first || w >= sc->first + sc->local)
        return 0; /* another rank's worker: its result comes from there (job_result) */
    j->dev = sc->dev[w - sc->first];
    if (pthread_create(&j->th, NULL, run_job, j) != 0)
        return fail("cannot start a thread for trial %zu", a->trial);
    j->running = 1;
    return 0;
}

/* The study, from epoch-time 0 to its end. */
static int schedule_run(schedule *sc)
{
    for (;;) {
        size_t w = 0; /* the first worker free, in epoch-time */
        for (size_t i = 1; i < sc->workers; i++)
            if (sc->vfree[i] < sc->vfree[w])
                w = i;
        const uint64_t t = sc->vfree[w];
        if (tell_until(sc, t))
            return 1;
        asha_job a;
        if (asha_next(&sc->a, &a)) {
            if (start(sc, &a, w, t))
                return 1;
            sc->vfree[w] = t + (a.to - a.from);
            continue;
        }
        uint64_t later = UINT64_MAX; /* idle until the next job ends */
        for (size_t i = 0; i < sc->njobs; i++)
            if (!sc->jobs[i].told && sc->jobs[i].vend > t && sc->jobs[i].vend < later)
                later = sc->jobs[i].vend;
        if (later == UINT64_MAX)
            return tell_until(sc, UINT64_MAX);
        sc->vfree[w] = later;
    }
}

/* ------------------------------------------------------------------ the results */

typedef struct trial_result {
    size_t trial;
    unsigned epochs;
    float val, test;
    int diverged;
    tune_config cfg;
    const job *last;
} trial_result;

static void results(const schedule *sc, trial_result *r)
{
    for (size_t t = 0; t < sc->s->trials; t++)
        r[t] = (trial_result){.trial = t};
    for (size_t i = 0; i < sc->njobs; i++) {
        const job *j = &sc->jobs[i];
        trial_result *x = &r[j->a.trial];
        if (j->a.to > x->epochs) {
            x->epochs = j->a.to, x->last = j, x->cfg = j->cfg, x->diverged = j->diverged;
            x->val = j->val[j->a.to - j->a.from - 1];
            x->test = j->test[j->a.to - j->a.from - 1];
        }
    }
}

/* The best trial: most epochs first (the highest rung), then validation accuracy, then number. */
static size_t best_of(const trial_result *r, size_t n)
{
    size_t b = 0;
    for (size_t t = 1; t < n; t++)
        if (r[t].epochs > r[b].epochs || (r[t].epochs == r[b].epochs && r[t].val > r[b].val))
            b = t;
    return b;
}

static int write_csv(const study *s, const trial_result *r)
{
    ntpu_outfile o;
    FILE *f = out_open("--csv", s->csv, &o);
    if (!f)
        return 1;
    fprintf(f, "trial,lr,batch,optimizer,weight_decay,momentum,hidden,epochs,val_accuracy,test_accuracy,diverged\n");
    for (size_t t = 0; t < s->trials; t++) {
        const tune_config *c = &r[t].cfg;
        fprintf(f, "%zu,%.9g,%u,%s,%.9g,%.9g,", t, c->lr, c->batch, ntpu_optimizer_name(c->optimizer), c->weight_decay,
                c->momentum);
        for (size_t i = 0; i < c->n_hidden; i++)
            fprintf(f, "%s%u", i ? "-" : "", c->hidden[i]);
        fprintf(f, ",%u,%.6f,%.6f,%d\n", r[t].epochs, r[t].val, r[t].test, r[t].diverged);
    }
    return out_close("--csv", s->csv, f, &o);
}

/* Each trial's validation accuracy after each epoch it trained (its jobs' epochs joined). */
static int write_plot(const schedule *sc, const trial_result *r, size_t best)
{
    const study *s = sc->s;
    ntpu_outfile o;
    FILE *f = out_open("--plot", s->plot, &o);
    if (!f)
        return 1;
    const double W = 740, H = 360, L = 60, R = 30, T = 40, B = 40, pw = W - L - R, ph = H - T - B;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H);
    fprintf(
        f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">ntpu tune: %s, %" PRIu64 " trials, validation accuracy</text>\n",
        L, s->random ? "random search" : "ASHA", s->trials);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n", L, T, pw,
            ph);
    for (int k = 0; k <= 4; k++)
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>\n", L - 6, T + ph * (1 - k / 4.0) + 4,
                25.0 * k);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">epoch (1 .. %" PRIu64 ")</text>\n", L + pw / 2,
            H - 10, s->epochs);
    for (size_t t = 0; t < s->trials; t++) {
        if (!r[t].epochs)
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%d\" points=\"", t == best ? "#c33" : "#79b",
                t == best ? 3 : 1);
        for (size_t i = 0; i < sc->njobs; i++) {
            const job *j = &sc->jobs[i];
            for (unsigned e = j->a.from; j->a.trial == t && e < j->a.to; e++)
                fprintf(f, "%.1f,%.1f ", L + pw * (e + 1) / (double)s->epochs, T + ph * (1.0 - j->val[e - j->a.from]));
        }
        fprintf(f, "\"><title>trial %zu</title></polyline>\n", t);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#c33\">best: trial %zu</text>\n</svg>\n", L + 8, T + 16, best);
    return out_close("--plot", s->plot, f, &o);
}

static void report(const common *cm, const schedule *sc, const trial_result *r, size_t best)
{
    const study *s = sc->s;
    uint64_t epochs = 0;
    for (size_t i = 0; i < sc->njobs; i++)
        epochs += sc->jobs[i].a.to - sc->jobs[i].a.from;
    char cfg[512];
    tune_config_format(&r[best].cfg, cfg, sizeof cfg);
    if (cm->json) {
        printf("{\"method\":\"%s\",\"trials\":%" PRIu64 ",\"epochs\":%" PRIu64 ",\"epochs_trained\":%" PRIu64
               ",\"epochs_this_run\":%" PRIu64 ",\"full_budget_epochs\":%" PRIu64
               ",\"best\":{\"trial\":%zu,\"config\":",
               s->random ? "random" : "asha", s->trials, s->epochs, epochs, sc->epochs_trained, s->trials * s->epochs,
               best);
        json_str(stdout, cfg);
        printf(",\"epochs\":%u,\"val_accuracy\":%.6f,\"test_accuracy\":%.6f},\"results\":[", r[best].epochs,
               r[best].val, r[best].test);
        for (size_t t = 0; t < s->trials; t++) {
            tune_config_format(&r[t].cfg, cfg, sizeof cfg);
            printf("%s{\"trial\":%zu,\"config\":", t ? "," : "", t);
            json_str(stdout, cfg);
            printf(",\"epochs\":%u,\"val_accuracy\":%.6f,\"test_accuracy\":%.6f,\"diverged\":%s}", r[t].epochs,
                   r[t].val, r[t].test, r[t].diverged ? "true" : "false");
        }
        printf("]}\n");
        return;
    }
    printf("%5s %6s %8s %8s  %s\n", "trial", "epochs", "val acc", "test acc", "settings");
    for (size_t t = 0; t < s->trials; t++) {
        tune_config_format(&r[t].cfg, cfg, sizeof cfg);
        printf("%5zu %6u %8.4f %8.4f  %s%s\n", t, r[t].epochs, r[t].val, r[t].test, cfg,
               r[t].diverged ? " (diverged)" : "");
    }
    tune_config_format(&r[best].cfg, cfg, sizeof cfg);
    char path[4400];
    checkpoint_path(s, best, r[best].epochs, path, sizeof path);
    printf("best: trial %zu after %u epochs: validation accuracy %.4f, test accuracy %.4f: %s (model: %s)\n", best,
           r[best].epochs, r[best].val, r[best].test, cfg, path);
    printf("epochs trained: %" PRIu64 " (%.0f%% of every trial to %" PRIu64 " epochs, %" PRIu64 "); this run: %" PRIu64
           ", the rest from %s\n",
           epochs, 100.0 * (double)epochs / (double)(s->trials * s->epochs), s->epochs, s->trials * s->epochs,
           sc->epochs_trained, s->journal);
}

int cmd_tune(common *cm, int argc, char **argv)
{
    study s;
    int rc = tune_args(cm, argc, argv, &s);
    if (rc)
        return rc > 0;
    if (ranks_start())
        return 1;
    if (ranks_rank() != 0) { /* rank 0 writes the journal, the outputs and stdout */
        s.csv = s.plot = NULL;
        if (!freopen("/dev/null", "w", stdout))
            return fail("cannot quiet this rank's output: %s", strerror(errno));
    }
    if (ntpu_dataset_load(s.data, "train", (size_t)s.train_limit, &s.train) != NTPU_OK ||
        ntpu_dataset_load(s.data, "test", (size_t)s.test_limit, &s.test) != NTPU_OK) {
        ntpu_dataset_free(&s.train);
        return fail("%s", ntpu_last_error(NULL));
    }
    rc = 1;
    schedule sc = {.s = &s, .fd = -1};
    trial_result *r = NULL;
    if (s.train.count <= s.val) {
        fail("--val %" PRIu64 ": %s has only %zu training images", s.val, s.data, s.train.count);
        goto out;
    }
    if (s.test.features != s.train.features) {
        fail("%s: the test images have %zu pixels, the training images %zu", s.data, s.test.features, s.train.features);
        goto out;
    }
    s.n_train = s.train.count - (size_t)s.val;
    sc.local = cm->n_devices ? cm->n_devices : 1;
    for (size_t w = 0; w < sc.local; w++)
        if (!(sc.dev[w] = open_device(cm->n_devices ? cm->devices[w] : NULL)))
            goto out;
    if (ranks_place(sc.local, &sc.first, &sc.workers))
        goto out;
    if (!(sc.vfree = calloc(sc.workers, sizeof *sc.vfree))) {
        fail("out of memory");
        goto out;
    }
    make_header(&s, sc.workers);
    if (asha_init(&sc.a, (size_t)s.trials, (unsigned)s.min_epochs, (unsigned)s.epochs, (unsigned)s.eta, s.random) ||
        !(sc.jobs = calloc((sc.cap = (size_t)s.trials * sc.a.nrungs), sizeof *sc.jobs))) {
        fail("out of memory");
        goto out;
    }
    if ((ranks_rank() == 0 && journal_open(&s, &sc.fd, &sc.records, &sc.nrecords)) || share_records(&sc))
        goto out;
    ranks_watch_signals("the journal holds every finished job: the same command continues the study");
    if (schedule_run(&sc))
        goto out;
    if (sc.next_record < sc.nrecords) {
        fail("--journal: %s holds %zu jobs more than this study makes", s.journal, sc.nrecords - sc.next_record);
        goto out;
    }
    if (!(r = malloc(s.trials * sizeof *r))) {
        fail("out of memory");
        goto out;
    }
    results(&sc, r);
    const size_t best = best_of(r, (size_t)s.trials);
    if ((s.csv && write_csv(&s, r)) || (s.plot && write_plot(&sc, r, best)))
        goto out;
    report(cm, &sc, r, best);
    rc = 0;
out:
    for (size_t i = 0; i < sc.njobs; i++) /* an error leaves jobs running: their threads end first */
        if (sc.jobs[i].running)
            pthread_join(sc.jobs[i].th, NULL);
    for (size_t w = 0; w < sc.local; w++)
        ntpu_close(sc.dev[w]);
    free(sc.vfree);
    for (size_t i = 0; i < sc.njobs; i++) {
        free(sc.jobs[i].val);
        free(sc.jobs[i].test);
    }
    for (size_t i = 0; i < sc.nrecords; i++)
        free(sc.records[i]);
    free(sc.records);
    free(sc.jobs);
    free(r);
    asha_free(&sc.a);
    if (sc.fd >= 0)
        close(sc.fd);
    ntpu_dataset_free(&s.train);
    ntpu_dataset_free(&s.test);
    ranks_finish(rc);
    return rc;
}
