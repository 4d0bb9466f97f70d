/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu train and ntpu eval: training a model (an MLP, --layers, or any --arch) on an IDX dataset on the device,
 * with progress, per-epoch metrics, atomic checkpoints that resume bit for bit,
 * a CSV log and an SVG plot; and evaluating a checkpoint, in bf16 or int8. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ranks.h"
#include "train_common.h"
#include "ntpu/data.h"
#include "ntpu/nn.h"
#include "io/outfile.h"
#include "ntpu/safetensors.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* ------------------------------------------------------------------ helpers */

static int parse_float(const char *opt, const char *s, float *out)
{
    char *end;
    float v = s ? strtof(s, &end) : 0.0f;
    if (!s || !*s || *end || !isfinite(v) || v < 0.0f)
        return fail("%s: '%s' is not a non-negative number", opt, s ? s : "");
    *out = v;
    return 0;
}

/* "784,256,10" -> sizes; returns the count, or 0 after printing the error. */
static size_t parse_layers(const char *s, unsigned *sizes)
{
    size_t n = 0;
    for (const char *p = s; p && *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (*p < '0' || *p > '9' || v == 0 || v > 65536 || (*end && (*end != ',' || !end[1])) ||
            n == NTPU_MAX_LAYERS + 1) {
            fail("--layers: '%s' is not a list of 2 to %d sizes like 784,256,10", s, NTPU_MAX_LAYERS + 1);
            return 0;
        }
        sizes[n++] = (unsigned)v;
        p = *end ? end + 1 : end;
    }
    if (n < 2) {
        fail("--layers: '%s' is not a list of 2 to %d sizes like 784,256,10", s ? s : "", NTPU_MAX_LAYERS + 1);
        return 0;
    }
    return n;
}

static void layers_str(const unsigned *sizes, size_t n, char *buf, size_t len)
{
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%u", i ? "," : "", sizes[i]);
}

/* The layer sizes must fit the data: as many inputs as pixels, at least as many
 * outputs as classes, in the training and in the test split. */
static int check_layers(const unsigned *sizes, size_t n, const ntpu_dataset *train, const ntpu_dataset *test,
                        const char *dir)
{
    if (sizes[0] != train->features)
        return fail("--layers: the first size is %u but the images in %s have %zu pixels", sizes[0], dir,
                    train->features);
    const ntpu_dataset *sets[2] = {train, test};
    for (int i = 0; i < 2; i++)
        if (sizes[n - 1] < sets[i]->classes)
            return fail("--layers: the last size is %u but the %s labels in %s need %u classes", sizes[n - 1],
                        i ? "test" : "training", dir, sets[i]->classes);
    return 0;
}

/* The outputs of an arch's last fc must cover the classes of both splits (opt: whose arch). */
static int check_classes(const char *opt, const ntpu_arch *a, const ntpu_dataset *train, const ntpu_dataset *test,
                         const char *dir)
{
    const ntpu_dataset *sets[2] = {train, test};
    unsigned out = a->item[a->n - 1].out;
    for (int i = 0; i < 2; i++)
        if (out < sets[i]->classes)
            return fail("%s: the last fc has %u outputs but the %s labels in %s need %u classes", opt, out,
                        i ? "test" : "training", dir, sets[i]->classes);
    return 0;
}

/* The images of both splits as 1 x rows x cols inputs (an arch's input shape), or an error. */
static int image_shape(const ntpu_dataset *train, const ntpu_dataset *test, const char *dir, unsigned shape[3])
{
    if (test->rows != train->rows || test->cols != train->cols)
        return fail("%s: the test images are %zux%zu, the training images %zux%zu", dir, test->rows, test->cols,
                    train->rows, train->cols);
    if (train->rows > UINT32_MAX || train->cols > UINT32_MAX)
        return fail("%s: images of %zux%zu pixels are too large", dir, train->rows, train->cols);
    shape[0] = 1;
    shape[1] = (unsigned)train->rows;
    shape[2] = (unsigned)train->cols;
    return 0;
}

/* SPEC (--arch's, or "fc256,relu,fc10" for --layers 784,256,10) over the data's images into *a,
 * checked against the classes. 0, or 1 after printing the error as opt's. */
static int data_arch(const char *opt, const char *spec, const ntpu_dataset *train, const ntpu_dataset *test,
                     const char *dir, ntpu_arch *a)
{
    unsigned shape[3] = {0};
    char why[400];
    if (image_shape(train, test, dir, shape))
        return 1;
    if (ntpu_arch_parse(spec, shape[0], shape[1], shape[2], a, why, sizeof why) != NTPU_OK)
        return fail("%s: %s", opt, why);
    return check_classes(opt, a, train, test, dir);
}

/* "fc256,relu,fc10" for the sizes 784,256,10 (what --layers means). */
static void layers_spec(const unsigned *sizes, size_t n, char *buf, size_t len)
{
    buf[0] = 0;
    for (size_t i = 1; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%sfc%u", i > 1 ? ",relu," : "", sizes[i]);
}

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* ------------------------------------------------------------------ metrics */

typedef struct epoch_row {
    uint64_t epoch, steps;
    double train_loss, train_acc, test_acc, utilization, seconds, link_bytes_per_step;
} epoch_row;

/* Writes the CSV log atomically (temporary file, then rename). */
static int write_log(const char *path, const epoch_row *rows, size_t n)
{
    ntpu_outfile o;
    FILE *f = out_open("--log", path, &o);
    if (!f)
        return 1;
    fprintf(f, "epoch,steps,train_loss,train_accuracy,test_accuracy,utilization,seconds,link_bytes_per_step\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%" PRIu64 ",%" PRIu64 ",%.6f,%.6f,%.6f,%.6f,%.3f,%.0f\n", rows[i].epoch, rows[i].steps,
                rows[i].train_loss, rows[i].train_acc, rows[i].test_acc, rows[i].utilization, rows[i].seconds,
                rows[i].link_bytes_per_step);
    return out_close("--log", path, f, &o);
}

/* Room for element n of a growing array a (a run's steps and epochs have no fixed bound): a itself,
 * or a moved with *cap doubled; NULL (a freed) when out of memory. */
static void *room_for(void *a, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return a;
    size_t ncap = *cap ? 2 * *cap : 64;
    void *na = realloc(a, ncap * size);
    if (!na) {
        free(a);
        *cap = 0;
        return NULL;
    }
    *cap = ncap;
    return na;
}

/* Reads the rows of an earlier log (for --resume), keeping epochs before `upto`. */
static int read_log(const char *path, epoch_row **rows, size_t *n, size_t *cap, uint64_t upto)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0; /* a pipe, terminal or FIFO (--log /dev/stdout) has no earlier rows, and reading one waits */
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        epoch_row r;
        if (sscanf(line, "%" SCNu64 ",%" SCNu64 ",%lf,%lf,%lf,%lf,%lf,%lf", &r.epoch, &r.steps, &r.train_loss,
                   &r.train_acc, &r.test_acc, &r.utilization, &r.seconds, &r.link_bytes_per_step) == 8 &&
            r.epoch <= upto) {
            if ((*rows = room_for(*rows, *n, cap, sizeof r)))
                (*rows)[(*n)++] = r;
            else
                bad = fail("out of memory");
        }
    }
    fclose(f);
    return bad;
}

/* An SVG with the training loss per step (this run) and the per-epoch train loss
 * and test accuracy, written atomically. */
static int write_plot(const char *path, const float *step_loss, size_t nsteps, uint64_t first_step,
                      const epoch_row *rows, size_t nrows, const char *title)
{
    ntpu_outfile o;
    FILE *f = out_open("--plot", path, &o);
    if (!f)
        return 1;
    const double W = 740, H = 300, L = 60, R = 50, T = 40, B = 40, pw = W - L - R, ph = H - T - B;
    float lmax = 0.0f;
    for (size_t i = 0; i < nsteps; i++)
        lmax = step_loss[i] > lmax ? step_loss[i] : lmax;
    for (size_t i = 0; i < nrows; i++)
        lmax = rows[i].train_loss > lmax ? (float)rows[i].train_loss : lmax;
    if (lmax <= 0.0f)
        lmax = 1.0f;
    uint64_t last_step = first_step + nsteps;
    for (size_t i = 0; i < nrows; i++)
        last_step = rows[i].steps > last_step ? rows[i].steps : last_step;
    if (last_step == 0)
        last_step = 1;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">ntpu train, %s</text>\n", L, title);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n", L, T, pw,
            ph);
    for (int k = 0; k <= 4; k++) {
        double y = T + ph * (1.0 - k / 4.0);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#c33\">%.2f</text>\n", L - 6, y + 4,
                lmax * k / 4.0);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#36c\">%.0f%%</text>\n", L + pw + 4, y + 4, 25.0 * k);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">step (0 .. %" PRIu64 ")</text>\n", L + pw / 2,
            H - 10, last_step);
    if (nsteps) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"#e99\" stroke-width=\"1\" points=\"");
        for (size_t i = 0; i < nsteps; i++)
            fprintf(f, "%.1f,%.1f ", L + pw * (double)(first_step + i + 1) / (double)last_step,
                    T + ph * (1.0 - step_loss[i] / lmax));
        fprintf(f, "\"/>\n");
    }
    if (nrows) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"");
        for (size_t i = 0; i < nrows; i++)
            fprintf(f, "%.1f,%.1f ", L + pw * (double)rows[i].steps / (double)last_step,
                    T + ph * (1.0 - rows[i].train_loss / lmax));
        fprintf(f, "\"/>\n<polyline fill=\"none\" stroke=\"#36c\" stroke-width=\"2\" points=\"");
        for (size_t i = 0; i < nrows; i++)
            fprintf(f, "%.1f,%.1f ", L + pw * (double)rows[i].steps / (double)last_step,
                    T + ph * (1.0 - rows[i].test_acc));
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#c33\">train loss</text>\n", L + 8, T + 16);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#36c\">test accuracy</text>\n", L + 8, T + 32);
    fprintf(f, "</svg>\n");
    return out_close("--plot", path, f, &o);
}

/* Progress on stderr: a bar redrawn in place on a terminal, a plain line every
 * tenth of an epoch otherwise. */
static void progress(int tty, uint64_t epoch, uint64_t epochs, size_t done, size_t total, double rate, float loss,
                     int *last_tenth)
{
    double eta = rate > 0 ? (double)(total - done) / rate : 0;
    if (tty) {
        char bar[31];
        size_t fill = total ? done * 30 / total : 30;
        for (size_t i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\repoch %" PRIu64 "/%" PRIu64 " [%s] %zu/%zu  %.0f samples/s  loss %.4f  ETA %d:%02d ",
                epoch + 1, epochs, bar, done, total, rate, loss, (int)eta / 60, (int)eta % 60);
        fflush(stderr);
    } else {
        int tenth = total ? (int)(done * 10 / total) : 10;
        if (tenth != *last_tenth && tenth < 10) {
            fprintf(stderr, "epoch %" PRIu64 "/%" PRIu64 ": %zu/%zu samples, %.0f samples/s, loss %.4f, ETA %d:%02d\n",
                    epoch + 1, epochs, done, total, rate, loss, (int)eta / 60, (int)eta % 60);
            *last_tenth = tenth;
        }
    }
}

/* Reads the data-order state ntpu train stores beside its checkpoints (in the sidecar FILE.state; a
 * checkpoint of format ntpu-mlp-1 holds it itself): seed, epoch, batch index, batch size, training
 * samples; the epoch's loss and correct sums so far; the shard size (0 when the checkpoint is older than
 * --shard: its run had shards of the whole batch). Returns 0, or 1 after printing the error. */
static int read_resume_state(const char *model_path, uint64_t vals[5], double *loss_sum, uint64_t *correct,
                             uint64_t *shard)
{
    ntpu_safetensors *ck = NULL;
    if (ntpu_model_state_read(model_path, &ck) != NTPU_OK || (!ck && ntpu_safetensors_read(model_path, &ck) != NTPU_OK))
        return fail("--resume: %s", ntpu_last_error(NULL));
    /* The same ranges as the command line's (the batch index is checked against the data later). */
    const char *keys[] = {"train.seed",  "train.epoch",       "train.batch_index",
                          "train.batch", "train.train_limit", "train.correct"};
    const uint64_t lo[] = {0, 0, 0, 1, 0, 0}, hi[] = {UINT64_MAX, 1000000, UINT32_MAX, 4096, UINT32_MAX, UINT32_MAX};
    const char *ls = ntpu_safetensors_meta(ck, "train.loss_sum");
    uint64_t cs = 0;
    int found = ls != NULL, bad = -1;
    for (int i = 0; i < 6 && found && bad < 0; i++) {
        const char *v = ntpu_safetensors_meta(ck, keys[i]);
        found = v != NULL;
        if (found && whole_number(v, lo[i], hi[i], i < 5 ? &vals[i] : &cs))
            bad = i;
    }
    char *end = NULL;
    if (found && bad < 0 && (*loss_sum = strtod(ls, &end), *end || !isfinite(*loss_sum) || *loss_sum < 0))
        bad = 6;
    const char *sv = ck ? ntpu_safetensors_meta(ck, "train.shard") : NULL;
    *shard = 0;
    if (found && bad < 0 && sv && whole_number(sv, 1, vals[3], shard))
        bad = 7;
    ntpu_safetensors_free(ck);
    if (!found)
        return fail("--resume: %s is not a checkpoint of ntpu train (it has no data-order state in %s.state)",
                    model_path, model_path);
    if (bad >= 0)
        return fail("--resume: %s is not a valid checkpoint (its %s is out of range)", model_path,
                    bad < 6    ? keys[bad]
                    : bad == 6 ? "train.loss_sum"
                               : "train.shard");
    *correct = cs;
    return 0;
}

/* ------------------------------------------------------------------ train */

static const char train_help[] =
    "usage: ntpu train [-d DEV ...] [--shard S] [--data DIR] [--arch SPEC | --layers 784,256,10] [--epochs E] [--batch "
    "B]\n"
    "                  [--optimizer sgd|momentum|adam|adamw] [--lr X] [--momentum M] [--weight-decay W]\n"
    "                  [--schedule constant|step|cosine] [--step-size S] [--gamma G] [--seed S]\n"
    "                  [--train-limit N] [--test-limit N] [--save FILE.safetensors] [--save-every STEPS]\n"
    "                  [--resume FILE] [--log FILE.csv] [--plot FILE.svg] [--device-optimizer] [--threads T]\n"
    "                  [--json]\n"
    "\n"
    "Trains a model on the device, a multilayer perceptron (--layers) or any --arch, with softmax\n"
    "cross-entropy: bf16 matmuls with fp32 accumulation, fp32 master weights (docs/training.md).\n"
    "After every epoch it prints the train loss and accuracy and the test accuracy.\n"
    "\n"
    "  -d, --device DEV      ref, vsim (default, or $NTPU_DEVICE), ftdi[:serial=S], ...; repeated\n"
    "                        (-d ref -d vsim ...), the run is data parallel: every device works on\n"
    "                        its shards of each batch at once, the same bits on any number of them\n"
    "  --shard S             samples a shard: each batch is cut into shards of S in order (the last\n"
    "                        may be shorter), spread over the devices; the gradients add up in shard\n"
    "                        order, so the result depends on S but not on the devices (the batch)\n"
    "  --data DIR            IDX dataset directory (MNIST family, plain or .gz); default\n"
    "                        " DEFAULT_DATA "\n"
    "  --arch SPEC           the model's layers in order, comma separated: conv<C>k<K>[s<S>][p<P>]\n"
    "                        (C channels, KxK kernel, stride S 1, padding P 0), relu, maxpool<K>,\n"
    "                        avgpool<K>, flatten (implied before the first fc), fc<N>; the last is\n"
    "                        an fc of at least the classes. The input: the images, 1 x rows x cols.\n"
    "                        Example:\n"
    "                        conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10\n"
    "  --layers L            an MLP's layer sizes, input first and classes last (784,256,10:\n"
    "                        the same as --arch fc256,relu,fc10); the default\n"
    "  --epochs E            epochs from the run's start (5)\n"
    "  --batch B             samples a step (64)\n"
    "  --optimizer O         sgd, momentum, adam or adamw (adam)\n"
    "  --lr X                learning rate (0.001 for adam and adamw, 0.01 for sgd and momentum)\n"
    "  --momentum M          for momentum (0.9)\n"
    "  --weight-decay W      added to the gradient for sgd, momentum and adam; decoupled for adamw\n"
    "                        (0; adamw 0.01)\n"
    "  --schedule S          constant (default); step multiplies lr by --gamma (0.1) every\n"
    "                        --step-size steps (one epoch); cosine decays it to 0 over the run\n"
    "  --seed S              weight initialisation and data order (0)\n"
    "  --train-limit N       use the first N training samples (all)\n"
    "  --test-limit N        evaluate on the first N test samples (all)\n"
    "  --save FILE           checkpoint (weights, optimizer state, step, data order) at the end of\n"
    "                        every epoch, every --save-every steps, and on Ctrl-C; replaced atomically\n"
    "  --save-every STEPS    also checkpoint inside an epoch (needs --save)\n"
    "  --resume FILE         continue a checkpoint's run exactly where it stopped (same result, bit for\n"
    "                        bit, as an uninterrupted run); give more --epochs to train longer (a cosine\n"
    "                        schedule is then recomputed over the longer run)\n";
/* (two strings: one would be longer than C compilers must support) */
static const char train_help_more[] =
    "  --log FILE.csv        one row an epoch (a resumed run keeps the earlier rows)\n"
    "  --plot FILE.svg       the loss of every step and each epoch's train loss and test accuracy\n"
    "  --device-optimizer    keep the fp32 weights and optimizer state on the device: SGD / momentum\n"
    "                        in its ACC (protocol 1.3, OPTIM), Adam / AdamW with their moments in its\n"
    "                        OS memory (1.4, feature ADAM). The same bits, far fewer link bytes; with\n"
    "                        program memory (1.4, PROGRAM) a step is two RUN frames plus its batch.\n"
    "                        Refused where the device or its memories do not allow it\n"
    "  --threads T           the golden model's large MATMULs on T threads (-d ref only; the same bits)\n"
    "  --json                one JSON object on stdout instead of the table\n";

/* The command line of ntpu train: the options as given (NULL when not), and the settings they make:
 * the command line's, else the checkpoint's (when resuming), else the defaults. */
typedef struct train_opts {
    const char *data, *arch_s, *layers_s, *epochs_s, *batch_s, *opt_s, *lr_s, *mom_s, *wd_s, *sched_s, *stepsize_s,
        *gamma_s, *seed_s, *trainlim_s, *testlim_s, *save, *save_every_s, *resume, *log_path, *plot_path, *threads_s,
        *shard_s;
    int dev_opt;
    uint64_t epochs, batch, seed, train_limit, test_limit, save_every, shard;
    unsigned sizes[NTPU_MAX_LAYERS + 1]; /* an MLP's (n_sizes 0 for any other arch) */
    size_t n_sizes;
    ntpu_arch arch; /* the model's over the data's images: --arch, --layers or the checkpoint's */
    ntpu_optimizer kind;
    ntpu_optim_config opt;
    /* Where the run starts: a resumed run's epoch and batch index, and the epoch's loss and correct
     * sums so far. */
    uint64_t start_epoch, start_batch;
    double loss_sum;
    uint64_t correct_sum;
} train_opts;

/* A training run: the data, the device and the model, and what the run has measured so far. */
typedef struct train_run {
    ntpu_dataset train, test;
    ntpu_device *dev;
    ntpu_device *more[NTPU_MAX_DEVICES]; /* the devices after the first (-d given more than once) */
    size_t n_more;
    ntpu_info info;
    ntpu_model *model;
    ntpu_parallel *par; /* several devices, or shards smaller than the batch; else NULL */
    ntpu_model_view view;
    size_t steps_per_epoch;
    size_t *order;        /* this epoch's order of the training samples */
    float *xb;            /* one batch: its images, */
    uint8_t *yb;          /* and its labels */
    double loss_sum;      /* this epoch's so far: sum of the batches' mean loss times their size, */
    uint64_t correct_sum; /* and the correct count */
    uint64_t first_step;  /* the model's step count when the run started */
    float *step_loss;     /* every step's loss */
    size_t nloss, loss_cap;
    epoch_row *rows; /* one per finished epoch (a resumed run's earlier rows from its log first) */
    size_t nrows, rows_cap;
    char lstr[512];  /* the model: "784,256,10" (--layers), or its SPEC */
    char title[520]; /* the plot's: "layers 784,256,10", or the SPEC */
    int tty;         /* stderr is a terminal: the progress bar is redrawn in place */
    int follower;    /* a rank other than 0 under mpirun: trains, but prints, evaluates and saves nothing */
} train_run;

/* The command line into *o: 0, 1 after printing an error, or -1 after printing the help. */
static int train_args(common *cm, int argc, char **argv, train_opts *o)
{
    *o = (train_opts){
        .data = DEFAULT_DATA, .epochs = 5, .batch = 64, .sizes = {784, 256, 10}, .n_sizes = 3, .kind = NTPU_OPT_ADAM};
    const option opts[] = {
        {"--data", 0, &o->data, NULL},
        {"--arch", 0, &o->arch_s, NULL},
        {"--layers", 0, &o->layers_s, NULL},
        {"--epochs", 0, &o->epochs_s, NULL},
        {"--batch", 0, &o->batch_s, NULL},
        {"--optimizer", 0, &o->opt_s, NULL},
        {"--lr", 0, &o->lr_s, NULL},
        {"--momentum", 0, &o->mom_s, NULL},
        {"--weight-decay", 0, &o->wd_s, NULL},
        {"--schedule", 0, &o->sched_s, NULL},
        {"--step-size", 0, &o->stepsize_s, NULL},
        {"--gamma", 0, &o->gamma_s, NULL},
        {"--seed", 0, &o->seed_s, NULL},
        {"--train-limit", 0, &o->trainlim_s, NULL},
        {"--test-limit", 0, &o->testlim_s, NULL},
        {"--save", 0, &o->save, NULL},
        {"--save-every", 0, &o->save_every_s, NULL},
        {"--resume", 0, &o->resume, NULL},
        {"--log", 0, &o->log_path, NULL},
        {"--plot", 0, &o->plot_path, NULL},
        {"--device-optimizer", 0, NULL, &o->dev_opt},
        {"--threads", 0, &o->threads_s, NULL},
        {"--shard", 0, &o->shard_s, NULL},
    };
    int npos;
    char *pos[1];
    cm->max_devices = NTPU_MAX_DEVICES;
    if (parse_args(argc, argv, cm, opts, sizeof opts / sizeof opts[0], pos, 0, &npos))
        return 1;
    if (cm->help) {
        fputs(train_help, stdout);
        fputs(train_help_more, stdout);
        return -1;
    }
    return 0;
}

/* The settings from the options as given, checked: 0, or 1 after printing the error. */
static int train_settings(train_opts *o)
{
    if (o->opt_s && ntpu_optimizer_parse(o->opt_s, &o->kind))
        return fail("--optimizer: '%s' is not sgd, momentum, adam or adamw", o->opt_s);
    o->opt = ntpu_optim_defaults(o->kind);
    if (o->arch_s && o->layers_s)
        return fail("--arch and --layers both describe the model: give one");
    if ((o->layers_s && !(o->n_sizes = parse_layers(o->layers_s, o->sizes))) ||
        (o->epochs_s && parse_u64("--epochs", o->epochs_s, 1, 1000000, &o->epochs)) ||
        (o->batch_s && parse_u64("--batch", o->batch_s, 1, 4096, &o->batch)) ||
        (o->seed_s && parse_u64("--seed", o->seed_s, 0, UINT64_MAX, &o->seed)) ||
        (o->trainlim_s && parse_u64("--train-limit", o->trainlim_s, 1, UINT32_MAX, &o->train_limit)) ||
        (o->testlim_s && parse_u64("--test-limit", o->testlim_s, 1, UINT32_MAX, &o->test_limit)) ||
        (o->save_every_s && parse_u64("--save-every", o->save_every_s, 1, UINT64_MAX, &o->save_every)) ||
        (o->lr_s && parse_float("--lr", o->lr_s, &o->opt.lr)) ||
        (o->mom_s && parse_float("--momentum", o->mom_s, &o->opt.momentum)) ||
        (o->wd_s && parse_float("--weight-decay", o->wd_s, &o->opt.weight_decay)) ||
        (o->gamma_s && parse_float("--gamma", o->gamma_s, &o->opt.gamma)) ||
        (o->stepsize_s && parse_u64("--step-size", o->stepsize_s, 1, UINT64_MAX, &o->opt.step_size)) ||
        (o->shard_s && parse_u64("--shard", o->shard_s, 1, 4096, &o->shard)))
        return 1;
    if (!o->resume && o->shard > o->batch)
        return fail("--shard %" PRIu64 " is larger than the batch (--batch %" PRIu64 ")", o->shard, o->batch);
    if (o->sched_s && ntpu_lr_schedule_parse(o->sched_s, &o->opt.schedule))
        return fail("--schedule: '%s' is not constant, step or cosine", o->sched_s);
    /* An option that the run would not use is a mistake, not a silent no-op (a resumed run takes its
     * optimizer and schedule from the checkpoint). */
    if (!o->resume && o->mom_s && o->kind != NTPU_OPT_MOMENTUM)
        return fail("--momentum applies to --optimizer momentum, not %s", ntpu_optimizer_name(o->kind));
    if (!o->resume && (o->stepsize_s || o->gamma_s) && o->opt.schedule != NTPU_LR_STEP)
        return fail("%s applies to --schedule step, not %s", o->stepsize_s ? "--step-size" : "--gamma",
                    ntpu_lr_schedule_name(o->opt.schedule));
    if (o->save_every && !o->save)
        return fail("--save-every needs --save FILE");
    if ((o->save && check_output("--save", o->save)) || (o->log_path && check_output("--log", o->log_path)) ||
        (o->plot_path && check_output("--plot", o->plot_path)))
        return 1;
    /* One file for two outputs would leave only the last written (a checkpoint overwritten by the log). */
    const char *outs[][2] = {
        {"--save", o->save}, {"--log", o->log_path}, {"--plot", o->plot_path}, {"--resume", o->resume}};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = i + 1; j < 4; j++)
            if (outs[i][1] && outs[j][1] && !(i == 0 && j == 3) && ntpu_outfile_same(outs[i][1], outs[j][1]))
                return fail("%s and %s name the same file, %s", outs[i][0], outs[j][0], outs[j][1]);
    return 0;
}

/* Resuming: the run's data order comes from the checkpoint. 0, or 1 after printing the error. */
static int train_resume_settings(train_opts *o)
{
    uint64_t resumed[5], shard;
    if (read_resume_state(o->resume, resumed, &o->loss_sum, &o->correct_sum, &shard))
        return 1;
    shard = shard ? shard : resumed[3];
    if (o->shard_s && o->shard != shard)
        return fail("--resume: %s was trained with --shard %" PRIu64 "; the gradients' order depends on it, so "
                    "resuming needs the same (drop --shard)",
                    o->resume, shard);
    o->shard = shard;
    if ((o->seed_s && o->seed != resumed[0]) || (o->batch_s && o->batch != resumed[3]) ||
        (o->trainlim_s && o->train_limit != resumed[4]))
        return fail("--resume: %s was trained with --seed %" PRIu64 " --batch %" PRIu64 " --train-limit %" PRIu64
                    "; resuming needs the same values",
                    o->resume, resumed[0], resumed[3], resumed[4]);
    o->seed = resumed[0];
    o->start_epoch = resumed[1];
    o->start_batch = resumed[2];
    o->batch = resumed[3];
    o->train_limit = resumed[4];
    /* --epochs counts from the start of the run, not from the checkpoint. */
    if (o->start_epoch >= o->epochs && o->start_batch == 0)
        return fail("--resume: %s has finished epoch %" PRIu64 " already; --epochs %" PRIu64 " or more trains longer",
                    o->resume, o->start_epoch, o->start_epoch + 1);
    if (o->start_epoch >= o->epochs)
        return fail("--resume: %s stopped in epoch %" PRIu64 "; --epochs %" PRIu64 " or more continues it", o->resume,
                    o->start_epoch + 1, o->start_epoch + 1);
    return 0;
}

/* The checkpoint's arch against the command line's (--arch, --layers) and the data: an MLP takes
 * as many inputs as the images have pixels, any other arch the images' shape; the last fc covers
 * the classes. o->sizes become the checkpoint's (an MLP's). 0, or 1 after printing the error. */
static int resume_arch(train_opts *o, train_run *r)
{
    const ntpu_arch *a = ntpu_model_arch(r->model);
    char have[512], want[512];
    if (!a || ntpu_arch_format(a, have, sizeof have) != NTPU_OK)
        return fail("--resume: %s holds a model whose arch cannot be written", o->resume);
    if (o->arch_s && (ntpu_arch_format(&o->arch, want, sizeof want) != NTPU_OK || strcmp(have, want)))
        return fail("--resume: %s holds a model of arch %s, not %s", o->resume, have, want);
    unsigned sizes[NTPU_MAX_LAYERS + 1];
    size_t n = 0;
    int mlp = ntpu_arch_is_mlp(a, sizes, &n);
    if (o->layers_s && (!mlp || n != o->n_sizes || memcmp(sizes, o->sizes, n * sizeof *sizes)))
        return fail("--resume: %s holds a model with other --layers", o->resume);
    o->n_sizes = mlp ? n : 0;
    memcpy(o->sizes, sizes, n * sizeof *sizes);
    if (mlp)
        return check_layers(o->sizes, o->n_sizes, &r->train, &r->test, o->data);
    unsigned shape[3] = {0};
    if (image_shape(&r->train, &r->test, o->data, shape))
        return 1;
    if (a->in_c != shape[0] || a->in_h != shape[1] || a->in_w != shape[2])
        return fail("--resume: %s holds a model for %ux%ux%u inputs; the images in %s are %ux%ux%u", o->resume, a->in_c,
                    a->in_h, a->in_w, o->data, shape[0], shape[1], shape[2]);
    return check_classes("--resume", a, &r->train, &r->test, o->data);
}

/* The checkpoint's model, with the run's arch taken from it, its cosine schedule stretched
 * over a longer run, the device optimizer if asked for, and the log's earlier rows. */
static int resume_model(train_opts *o, train_run *r)
{
    /* A checkpoint of ntpu train names its arch; --arch is checked against it below, with the
     * command line's words. */
    if (ntpu_model_load(r->dev, o->resume, (size_t)o->batch, &r->model) != NTPU_OK)
        return fail("--resume: %s", ntpu_last_error(r->dev));
    if (resume_arch(o, r))
        return 1;
    ntpu_model_view v;
    ntpu_model_get_view(r->model, &v);
    const char *given = o->opt_s        ? "--optimizer"
                        : o->lr_s       ? "--lr"
                        : o->mom_s      ? "--momentum"
                        : o->wd_s       ? "--weight-decay"
                        : o->sched_s    ? "--schedule"
                        : o->stepsize_s ? "--step-size"
                        : o->gamma_s    ? "--gamma"
                                        : NULL;
    if (given) /* it would not apply: the checkpoint's optimizer settings do */
        return fail("%s: --resume continues with the checkpoint's optimizer and schedule; drop %s", given, given);
    /* A cosine schedule ends at lr 0 with the run it was made for; more --epochs would train on
     * at lr 0, so the schedule is recomputed over the longer run (lr rises to its value at this
     * step). Fewer epochs leave it as it was: the run just stops earlier. */
    ntpu_optim_config *ro = v.opt;
    uint64_t run_steps = o->epochs * r->steps_per_epoch;
    if (ro->schedule == NTPU_LR_COSINE && ro->total_steps < run_steps) {
        fprintf(stderr,
                "ntpu: note: the cosine schedule now ends with epoch %" PRIu64 " (%" PRIu64
                " steps; the checkpoint's run had %" PRIu64 ")\n",
                o->epochs, run_steps, ro->total_steps);
        ro->total_steps = run_steps;
    }
    if (o->dev_opt && ntpu_model_set_device_optimizer(r->model, 1) != NTPU_OK)
        return fail("%s", ntpu_last_error(r->dev));
    if (o->log_path && read_log(o->log_path, &r->rows, &r->nrows, &r->rows_cap, o->start_epoch))
        return 1;
    return 0;
}

/* A new model for the run's settings. */
static int new_model(train_opts *o, train_run *r)
{
    o->opt.total_steps = o->epochs * r->steps_per_epoch;
    /* The library's step_size is 1 step, which leaves no learning rate after a few steps. */
    if (o->opt.schedule == NTPU_LR_STEP && !o->stepsize_s)
        o->opt.step_size = r->steps_per_epoch;
    o->opt.device = o->dev_opt;
    if (ntpu_model_create_arch(r->dev, &o->arch, (size_t)o->batch, o->seed, &o->opt, &r->model) != NTPU_OK)
        return fail("%s", ntpu_last_error(r->dev));
    if (!ntpu_arch_is_mlp(&o->arch, o->sizes, &o->n_sizes))
        o->n_sizes = 0; /* no "layers" to report */
    return 0;
}

/* The model the command line describes over the data: --arch as written, else --layers (or its
 * default) as its MLP. 0, or 1 after printing the error. */
static int run_arch(train_opts *o, train_run *r)
{
    char spec[NTPU_MAX_LAYERS * 16];
    if (o->arch_s)
        return data_arch("--arch", o->arch_s, &r->train, &r->test, o->data, &o->arch);
    if (check_layers(o->sizes, o->n_sizes, &r->train, &r->test, o->data))
        return 1;
    layers_spec(o->sizes, o->n_sizes, spec, sizeof spec);
    return data_arch("--layers", spec, &r->train, &r->test, o->data, &o->arch);
}

/* Opens every -d device, --threads given to each golden model. 0, or 1 after printing the error. */
static int open_devices(const common *cm, const train_opts *o, train_run *r)
{
    const size_t n = cm->n_devices ? cm->n_devices : 1;
    int threaded = 0;
    for (size_t d = 0; d < n; d++) {
        const char *name = cm->n_devices ? cm->devices[d] : NULL;
        const char *is = name && *name ? name : getenv("NTPU_DEVICE");
        const int ref = is && !strncmp(is, "ref", 3) && (is[3] == 0 || is[3] == ':');
        char spec[512];
        /* one device: --threads on another than ref is refused as before; several: it is for the ref ones */
        if (o->threads_s && (ref || n == 1) && !(name = device_with_threads(name, o->threads_s, spec, sizeof spec)))
            return 1;
        threaded |= ref;
        ntpu_device *dev = open_device(name);
        if (!dev)
            return 1;
        if (d == 0)
            r->dev = dev;
        else
            r->more[r->n_more++] = dev;
    }
    if (o->threads_s && !threaded)
        return fail("--threads: only the golden model (-d ref) runs on more threads, and no -d is ref");
    return 0;
}

/* Checks the loaded data against the settings, opens the device and the model, and prints the
 * run's first line. 0, or 1 after printing the error. */
static int train_setup(common *cm, train_opts *o, train_run *r)
{
    r->steps_per_epoch = (r->train.count + o->batch - 1) / o->batch;
    if ((!o->resume || o->layers_s || o->arch_s) && run_arch(o, r))
        return 1;
    if (o->resume && o->start_batch >= r->steps_per_epoch)
        return fail("--resume: %s is not a valid checkpoint (its train.batch_index is past the epoch's end)",
                    o->resume);
    if (r->test.features != r->train.features)
        return fail("%s: the test images have %zu pixels, the training images %zu", o->data, r->test.features,
                    r->train.features);
    if (open_devices(cm, o, r))
        return 1;
    ntpu_get_info(r->dev, &r->info);
    if (o->resume ? resume_model(o, r) : new_model(o, r))
        return 1;
    if (o->dev_opt && ntpu_model_check_device_optimizer(r->model) != NTPU_OK) /* an option that would not apply */
        return fail("--device-optimizer: %s (without the option the host runs the optimizer)", ntpu_last_error(r->dev));
    if (!o->shard)
        o->shard = o->batch;
    if ((r->n_more || o->shard < o->batch || ranks_size() > 1) &&
        ntpu_parallel_create(r->model, r->more, r->n_more, (size_t)o->shard, &r->par) != NTPU_OK)
        return fail("%s%s", o->dev_opt ? "--device-optimizer: " : "", ntpu_last_error(r->dev));
    size_t first = 0, workers = r->n_more + 1;
    if (ranks_size() > 1 && (ranks_place(r->n_more + 1, &first, &workers) ||
                             ntpu_parallel_set_peers(r->par, first, workers, ranks_exchange, NULL) != NTPU_OK))
        return fail("%s%s", o->dev_opt ? "--device-optimizer: " : "", ntpu_last_error(r->dev));
    ntpu_model_get_view(r->model, &r->view);
    if (ntpu_model_check_resident(r->model) != NTPU_OK)
        fprintf(stderr,
                "ntpu: the model does not fit the device's memories (%s): streaming weights and "
                "activations through it every step\n",
                ntpu_last_error(r->dev));
    const size_t in = r->train.features;
    r->order = malloc(r->train.count * sizeof *r->order);
    r->xb = malloc((size_t)o->batch * in * sizeof *r->xb);
    r->yb = malloc((size_t)o->batch);
    if (!r->order || !r->xb || !r->yb)
        return fail("out of memory");
    /* --layers' sizes as given; an --arch (an MLP's too) or a checkpoint's other arch as its SPEC */
    if (o->n_sizes && !o->arch_s)
        layers_str(o->sizes, o->n_sizes, r->lstr, sizeof r->lstr);
    else if (ntpu_arch_format(ntpu_model_arch(r->model), r->lstr, sizeof r->lstr) != NTPU_OK)
        return fail("the model's arch cannot be written");
    snprintf(r->title, sizeof r->title, "%s%s", o->n_sizes && !o->arch_s ? "layers " : "", r->lstr);
    r->tty = isatty(STDERR_FILENO);
    char par[64] = "";
    if (r->par)
        snprintf(par, sizeof par, " in shards of %" PRIu64 " on %zu devices%s", o->shard, workers,
                 ranks_size() > 1 ? " of all ranks" : "");
    char others[1024] = ""; /* the devices after the first, by name */
    for (size_t d = 0, at = 0; d < r->n_more && at < sizeof others; d++) {
        ntpu_info in;
        ntpu_get_info(r->more[d], &in);
        at += (size_t)snprintf(others + at, sizeof others - at, ", %s", in.device);
    }
    if (!cm->json)
        printf("training %s on %s%s (%s, %ux%u array): %zu train / %zu test samples from %s, batch %" PRIu64
               "%s, %s lr %g\n",
               r->lstr, r->info.device, others, r->info.platform_name, r->info.rows, r->info.cols, r->train.count,
               r->test.count, o->data, o->batch, par, ntpu_optimizer_name(r->view.opt->kind), r->view.opt->lr);
    fflush(stdout); /* before the progress lines on stderr, also when both go to one pipe */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    /* under mpirun a signal means a rank has ended: stop at once */
    ranks_watch_signals("the last checkpoint is whole: --resume continues it");
    r->loss_sum = o->loss_sum;
    r->correct_sum = o->correct_sum;
    r->first_step = *r->view.step;
    return 0;
}

/* Checkpoints the model with the run's data-order state: the next step is batch `batch_index` of
 * epoch `epoch`, with the epoch's loss and correct sums so far. 0, or 1 after printing the error. */
static int save_checkpoint(const train_opts *o, train_run *r, uint64_t epoch, uint64_t batch_index, double loss_sum,
                           uint64_t correct_sum)
{
    char ms[8][32];
    snprintf(ms[0], 32, "%" PRIu64, o->seed);
    snprintf(ms[1], 32, "%" PRIu64, epoch);
    snprintf(ms[2], 32, "%" PRIu64, batch_index);
    snprintf(ms[3], 32, "%" PRIu64, o->batch);
    snprintf(ms[4], 32, "%zu", r->train.count);
    snprintf(ms[5], 32, "%.17g", loss_sum);
    snprintf(ms[6], 32, "%" PRIu64, correct_sum);
    snprintf(ms[7], 32, "%" PRIu64, o->shard);
    const char *meta[] = {"train.seed",
                          ms[0],
                          "train.epoch",
                          ms[1],
                          "train.batch_index",
                          ms[2],
                          "train.batch",
                          ms[3],
                          "train.train_limit",
                          ms[4],
                          "train.loss_sum",
                          ms[5],
                          "train.correct",
                          ms[6],
                          "train.shard",
                          ms[7],
                          NULL};
    if (ntpu_model_save(r->model, o->save, NULL, 0, meta) != NTPU_OK)
        return fail("--save: %s", ntpu_last_error(r->dev));
    return 0;
}

/* The steps of epoch e from batch *b on, until the epoch ends or a signal stops the run (*b is then
 * the batch it stopped before), checkpointing inside the epoch as --save-every and a signal ask.
 * t0: when the epoch started; done_at_start: the samples it had done already (a resumed run). */
/* Asks for the images of batch b (shuffled: scattered over the whole set) to
 * come towards the cache while step b - 1 runs, so copying them does not wait
 * for memory. */
static void prefetch_batch(const train_opts *o, const train_run *r, uint64_t b)
{
    const size_t in = r->train.features, at = (size_t)b * o->batch;
#ifdef __GNUC__
    for (size_t i = 0; i < (size_t)o->batch && at + i < r->train.count; i++) {
        const char *img = (const char *)(r->train.images + r->order[at + i] * in);
        for (size_t off = 0; off < in * sizeof *r->train.images; off += 64)
            __builtin_prefetch(img + off);
    }
#else
    (void)in, (void)at;
#endif
}

static int train_steps(const train_opts *o, train_run *r, uint64_t e, uint64_t *b, double t0, size_t done_at_start)
{
    const size_t in = r->train.features;
    int last_tenth = -1;
    for (; *b < r->steps_per_epoch && !stop_requested; (*b)++) {
        size_t at = (size_t)*b * o->batch;
        size_t nb = r->train.count - at < o->batch ? r->train.count - at : (size_t)o->batch;
        for (size_t i = 0; i < nb; i++) {
            memcpy(r->xb + i * in, r->train.images + r->order[at + i] * in, in * sizeof *r->xb);
            r->yb[i] = r->train.labels[r->order[at + i]];
        }
        prefetch_batch(o, r, *b + 1);
        ntpu_step_result res;
        if ((r->par ? ntpu_parallel_train_step(r->par, r->xb, r->yb, nb, &res)
                    : ntpu_model_train_step(r->model, r->xb, r->yb, nb, &res)) != NTPU_OK) {
            if (r->tty)
                fputc('\n', stderr);
            return fail("training step %" PRIu64 ": %s", *r->view.step, ntpu_last_error(r->dev));
        }
        if (!isfinite(res.loss)) { /* nothing after it would mean anything: stop before a save could keep it */
            if (r->tty)
                fputc('\n', stderr);
            const int kept = o->save && access(o->save, F_OK) == 0;
            return fail("training step %" PRIu64 ": the loss is %s: the model diverged (a lower --lr?)%s%s",
                        *r->view.step, isnan(res.loss) ? "NaN" : "infinite",
                        kept      ? "; the last checkpoint is kept: "
                        : o->save ? "; nothing was saved"
                                  : "",
                        kept ? o->save : "");
        }
        r->loss_sum += (double)res.loss * (double)nb;
        r->correct_sum += res.correct;
        if (!(r->step_loss = room_for(r->step_loss, r->nloss, &r->loss_cap, sizeof *r->step_loss)))
            return fail("out of memory");
        r->step_loss[r->nloss++] = res.loss;
        size_t done = at + nb;
        double dt = now_s() - t0;
        if (!r->follower)
            progress(r->tty, e, o->epochs, done, r->train.count, dt > 0 ? (double)(done - done_at_start) / dt : 0,
                     (float)(r->loss_sum / (double)done), &last_tenth);
        int periodic = o->save_every && (*r->view.step - r->first_step) % o->save_every == 0;
        if (o->save && (periodic || stop_requested) && *b + 1 < r->steps_per_epoch &&
            save_checkpoint(o, r, e, *b + 1, r->loss_sum, r->correct_sum))
            return 1;
    }
    return 0;
}

/* The end of epoch e: the test accuracy, the epoch's row, the checkpoint, the log, the plot and the
 * epoch's line. 0, or 1 after printing the error. */
static int finish_epoch(const common *cm, const train_opts *o, train_run *r, uint64_t e, double t0,
                        size_t done_at_start)
{
    double train_secs = now_s() - t0;
    ntpu_counters c;
    ntpu_read_counters(r->dev, &c, 1);
    epoch_row row = {.epoch = e + 1,
                     .steps = *r->view.step,
                     .train_loss = r->loss_sum / (double)r->train.count,
                     .train_acc = (double)r->correct_sum / (double)r->train.count,
                     .utilization = ntpu_counters_utilization(r->dev, &c),
                     .seconds = train_secs,
                     .link_bytes_per_step = (double)(c.rx_bytes + c.tx_bytes) / (double)r->steps_per_epoch};
    if (e == o->start_epoch && o->start_batch) /* resumed mid-epoch: rates cover only part of it */
        row.link_bytes_per_step = (double)(c.rx_bytes + c.tx_bytes) / (double)(r->steps_per_epoch - o->start_batch);
    if (!r->follower && /* rank 0 evaluates for all (the weights are the same), on all its devices */
        (r->par ? ntpu_parallel_evaluate(r->par, r->test.images, r->test.labels, r->test.count, &row.test_acc, NULL)
                : ntpu_model_evaluate(r->model, r->test.images, r->test.labels, r->test.count, &row.test_acc, NULL)) !=
            NTPU_OK)
        return fail("evaluation: %s", ntpu_last_error(r->dev));
    if (!(r->rows = room_for(r->rows, r->nrows, &r->rows_cap, sizeof row)))
        return fail("out of memory");
    r->rows[r->nrows++] = row;
    if (o->save && save_checkpoint(o, r, e + 1, 0, 0.0, 0))
        return 1;
    if (o->log_path && write_log(o->log_path, r->rows, r->nrows))
        return 1;
    if (o->plot_path && write_plot(o->plot_path, r->step_loss, r->nloss, r->first_step, r->rows, r->nrows, r->title))
        return 1;
    if (!cm->json)
        printf("epoch %" PRIu64 "/%" PRIu64 "  train loss %.4f  train accuracy %.4f  test accuracy %.4f  "
               "utilization %.1f%%  %.1f s (%.0f samples/s)\n",
               e + 1, o->epochs, row.train_loss, row.train_acc, row.test_acc, 100 * row.utilization, train_secs,
               (double)(r->train.count - done_at_start) / train_secs);
    /* Reported after the saves above: a reader that stops reading cannot cost the epoch's checkpoint. */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout))
        return fail("cannot write the output (%s): stopped after epoch %" PRIu64 "%s",
                    errno ? strerror(errno) : "write error", e + 1, o->save ? ", which the checkpoint holds" : "");
    return 0;
}

/* The run's epochs, from the start epoch (and batch) to --epochs or a signal. 0, or 1 after printing
 * the error (also when a signal stopped the run). */
static int train_epochs(const common *cm, const train_opts *o, train_run *r)
{
    for (uint64_t e = o->start_epoch; e < o->epochs && !stop_requested; e++) {
        epoch_order(o->seed, e, r->order, r->train.count);
        ntpu_counters c;
        ntpu_read_counters(r->dev, &c, 1);
        double t0 = now_s();
        size_t done_at_start = (size_t)(e == o->start_epoch ? o->start_batch : 0) * o->batch;
        if (e != o->start_epoch) {
            r->loss_sum = 0;
            r->correct_sum = 0;
        }
        uint64_t b = e == o->start_epoch ? o->start_batch : 0;
        if (train_steps(o, r, e, &b, t0, done_at_start))
            return 1;
        if (r->tty)
            fputs("\r\033[K", stderr); /* the epoch line replaces the bar */
        if (b < r->steps_per_epoch)
            break; /* interrupted: the checkpoint above has the state */
        if (finish_epoch(cm, o, r, e, t0, done_at_start))
            return 1;
    }
    if (stop_requested)
        return fail("interrupted%s",
                    o->save ? "; the checkpoint holds the last completed step (--resume continues)" : "");
    return 0;
}

/* The run's last line, or its JSON object. */
static void train_report(const common *cm, const train_opts *o, const train_run *r, double total)
{
    if (!cm->json) {
        printf("done: %" PRIu64 " steps in %.1f s%s%s\n", *r->view.step - r->first_step, total,
               o->save ? "; saved " : "", o->save ? o->save : "");
        return;
    }
    const epoch_row *last = r->nrows ? &r->rows[r->nrows - 1] : NULL;
    printf("{\"device\":");
    json_str(stdout, r->info.device);
    printf(",\"devices\":[");
    for (size_t d = 0; d <= r->n_more; d++) {
        ntpu_info in;
        ntpu_get_info(d ? r->more[d - 1] : r->dev, &in);
        printf("%s", d ? "," : "");
        json_str(stdout, in.device);
    }
    printf("],\"shard\":%" PRIu64 ",\"ranks\":%d", o->shard, ranks_size());
    char spec[512] = "";
    ntpu_arch_format(ntpu_model_arch(r->model), spec, sizeof spec);
    printf(",\"arch\":");
    json_str(stdout, spec);
    if (o->n_sizes) { /* an MLP's sizes, as before --arch */
        printf(",\"layers\":[");
        for (size_t i = 0; i < o->n_sizes; i++)
            printf("%s%u", i ? "," : "", o->sizes[i]);
        printf("]");
    }
    printf(",\"epochs\":%" PRIu64 ",\"batch\":%" PRIu64 ",\"optimizer\":\"%s\",\"lr\":%g,\"seed\":%" PRIu64
           ",\"train_samples\":%zu,\"test_samples\":%zu,\"steps\":%" PRIu64 ",\"seconds\":%.3f,\"history\":[",
           o->epochs, o->batch, ntpu_optimizer_name(r->view.opt->kind), r->view.opt->lr, o->seed, r->train.count,
           r->test.count, *r->view.step, total);
    for (size_t i = 0; i < r->nrows; i++) {
        const epoch_row *w = &r->rows[i];
        printf("%s{\"epoch\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"train_loss\":%.6f,\"train_accuracy\":%.6f,"
               "\"test_accuracy\":%.6f,\"utilization\":%.6f,\"seconds\":%.3f,\"link_bytes_per_step\":%.0f}",
               i ? "," : "", w->epoch, w->steps, w->train_loss, w->train_acc, w->test_acc, w->utilization, w->seconds,
               w->link_bytes_per_step);
    }
    printf("],\"train_loss\":%.6f,\"test_accuracy\":%.6f,\"utilization\":%.6f,\"link_bytes_per_step\":%.0f}\n",
           last ? last->train_loss : 0, last ? last->test_acc : 0, last ? last->utilization : 0,
           last ? last->link_bytes_per_step : 0);
}

int cmd_train(common *cm, int argc, char **argv)
{
    train_opts o;
    int rc = train_args(cm, argc, argv, &o);
    if (rc)
        return rc > 0;
    signal(SIGPIPE, SIG_IGN); /* a closed stdout (| head) ends the run after a save, with a reason */
    if (ranks_start() || train_settings(&o) || (o.resume && train_resume_settings(&o)))
        return 1;
    train_run r;
    memset(&r, 0, sizeof r);
    if ((r.follower = ranks_rank() != 0)) { /* rank 0 writes the checkpoints, the log, the plot and stdout */
        o.save = o.log_path = o.plot_path = NULL;
        o.save_every = 0;
        if (!freopen("/dev/null", "w", stdout))
            return fail("cannot quiet this rank's output: %s", strerror(errno));
    }

    /* Data first: a bad dataset should fail before the device is opened. */
    if (ntpu_dataset_load(o.data, "train", (size_t)o.train_limit, &r.train) != NTPU_OK ||
        ntpu_dataset_load(o.data, "test", (size_t)o.test_limit, &r.test) != NTPU_OK) {
        ntpu_dataset_free(&r.train);
        return fail("%s", ntpu_last_error(NULL));
    }
    rc = 1;
    if (train_setup(cm, &o, &r) == 0) {
        double t_run = now_s();
        if (train_epochs(cm, &o, &r) == 0) {
            train_report(cm, &o, &r, now_s() - t_run);
            rc = 0;
        }
    }
    ntpu_parallel_free(r.par);
    ntpu_model_free(r.model);
    ntpu_close(r.dev);
    for (size_t d = 0; d < r.n_more; d++)
        ntpu_close(r.more[d]);
    ntpu_dataset_free(&r.train);
    ntpu_dataset_free(&r.test);
    free(r.order);
    free(r.xb);
    free(r.yb);
    free(r.step_loss);
    free(r.rows);
    ranks_finish(rc);
    return rc;
}

/* ------------------------------------------------------------------ eval */

static const char eval_help[] =
    "usage: ntpu eval [-d DEV] --model FILE.safetensors [--arch SPEC] [--data DIR] [--test-limit N]\n"
    "                 [--int8] [--calib N] [--batch B] [--logits FILE.npy] [--json]\n"
    "\n"
    "Evaluates a checkpoint of ntpu train on the test split of an IDX directory: test accuracy and\n"
    "loss with bf16 matmuls on the device.\n"
    "\n"
    "  -d, --device DEV   ref, vsim (default, or $NTPU_DEVICE), ftdi[:serial=S], ...\n"
    "  --model FILE       the checkpoint (safetensors, as ntpu train --save writes it, or a PyTorch\n"
    "                     state_dict of the equivalent torch.nn.Sequential)\n"
    "  --arch SPEC        the model's arch (as ntpu train --arch), for a file that does not name\n"
    "                     its own (PyTorch's); when it does, the two must agree\n"
    "  --data DIR         IDX dataset directory (default " DEFAULT_DATA ")\n"
    "  --test-limit N     the first N test samples (all)\n"
    "  --batch B          samples a device pass (64)\n"
    "  --int8             also quantize the model (per-channel int8 weights, activation scales\n"
    "                     calibrated on the first --calib training samples) and run int8 inference:\n"
    "                     int8 matmuls, int32 accumulation, requantization in the vector unit\n"
    "                     (a conv net: on the host with the same integer functions)\n"
    "  --calib N          calibration samples for --int8 (1000)\n"
    "  --logits FILE.npy  also write the bf16 model's logits (test samples x classes, float32)\n"
    "  --json             one JSON object on stdout instead of the table\n";

/* The command line of ntpu eval: the options as given and the numbers they make. */
typedef struct eval_opts {
    const char *model_path, *arch_s, *data, *testlim_s, *calib_s, *batch_s, *logits_path;
    int int8;
    uint64_t test_limit, calib, batch;
} eval_opts;

/* The command line into *o: 0, 1 after printing an error, or -1 after printing the help. */
static int eval_args(common *cm, int argc, char **argv, eval_opts *o)
{
    *o = (eval_opts){.data = DEFAULT_DATA, .calib = 1000, .batch = 64};
    const option opts[] = {
        {"--model", 'm', &o->model_path, NULL}, {"--arch", 0, &o->arch_s, NULL},
        {"--data", 0, &o->data, NULL},          {"--test-limit", 0, &o->testlim_s, NULL},
        {"--calib", 0, &o->calib_s, NULL},      {"--batch", 0, &o->batch_s, NULL},
        {"--int8", 0, NULL, &o->int8},          {"--logits", 0, &o->logits_path, NULL},
    };
    int npos;
    char *pos[1];
    if (parse_args(argc, argv, cm, opts, sizeof opts / sizeof opts[0], pos, 0, &npos))
        return 1;
    if (cm->help) {
        fputs(eval_help, stdout);
        return -1;
    }
    if (!o->model_path)
        return fail("eval needs --model FILE (see --help)");
    if ((o->testlim_s && parse_u64("--test-limit", o->testlim_s, 1, UINT32_MAX, &o->test_limit)) ||
        (o->calib_s && parse_u64("--calib", o->calib_s, 1, UINT32_MAX, &o->calib)) ||
        (o->batch_s && parse_u64("--batch", o->batch_s, 1, 4096, &o->batch)))
        return 1;
    if (o->calib_s && !o->int8) /* it would not apply */
        return fail("--calib applies to --int8 (the calibration of the int8 model)");
    return o->logits_path ? check_output("--logits", o->logits_path) : 0;
}

/* The model's logits of every test sample to o->logits_path. 0, or 1 after printing the error. */
static int eval_logits(ntpu_device *dev, ntpu_model *model, const eval_opts *o, const ntpu_dataset *test)
{
    const ntpu_arch *a = ntpu_model_arch(model);
    const size_t classes = a->item[a->n - 1].out, step = (size_t)o->batch;
    float *logits = malloc((test->count * classes + 1) * sizeof *logits);
    if (!logits)
        return fail("out of memory");
    ntpu_status st = NTPU_OK;
    for (size_t at = 0; at < test->count && st == NTPU_OK; at += step)
        st = ntpu_model_predict(model, test->images + at * test->features,
                                test->count - at < step ? test->count - at : step, logits + at * classes);
    ntpu_tensor t = {NTPU_ELEM_FLOAT32, 2, {test->count, classes}, logits};
    int rc = st != NTPU_OK ? fail("logits: %s", ntpu_last_error(dev)) : 0;
    if (!rc && ntpu_npy_write(o->logits_path, &t) != NTPU_OK)
        rc = fail("--logits: %s", ntpu_last_error(NULL));
    free(logits);
    return rc;
}

/* The checkpoint (with --arch: of that arch) on dev, checked against the test images and classes.
 * 0, or 1 after printing the error. */
static int eval_load(const eval_opts *o, ntpu_device *dev, const ntpu_dataset *test, ntpu_model **model)
{
    ntpu_arch arch;
    unsigned shape[3] = {0};
    char why[400];
    if (o->arch_s && image_shape(test, test, o->data, shape))
        return 1;
    if (o->arch_s && ntpu_arch_parse(o->arch_s, shape[0], shape[1], shape[2], &arch, why, sizeof why) != NTPU_OK)
        return fail("--arch: %s", why);
    if (ntpu_model_load_arch(dev, o->model_path, o->arch_s ? &arch : NULL, (size_t)o->batch, model) != NTPU_OK)
        return fail("%s", ntpu_last_error(dev));
    const ntpu_arch *a = ntpu_model_arch(*model);
    unsigned sizes[NTPU_MAX_LAYERS + 1], classes = a->item[a->n - 1].out;
    size_t n;
    char spec[512] = "";
    ntpu_arch_format(a, spec, sizeof spec);
    if (ntpu_arch_is_mlp(a, sizes, &n) ? sizes[0] != test->features
                                       : a->in_c != 1 || a->in_h != test->rows || a->in_w != test->cols)
        return fail("%s: the model (%s) takes %ux%ux%u inputs; the images in %s are 1x%zux%zu", o->model_path, spec,
                    a->in_c, a->in_h, a->in_w, o->data, test->rows, test->cols);
    if (classes < test->classes)
        return fail("%s: the model gives %u classes; the labels in %s need %u", o->model_path, classes, o->data,
                    test->classes);
    return 0;
}

/* Evaluates the checkpoint on the test set, and with --int8 its quantized copy calibrated on the
 * training samples, and prints the accuracies. 0, or 1 after printing the error. */
static int eval_model(const common *cm, const eval_opts *o, const ntpu_dataset *test, const ntpu_dataset *train)
{
    int rc = 1;
    ntpu_model *model = NULL;
    ntpu_qmodel *q = NULL;
    ntpu_device *dev = open_device(cm->device);
    if (!dev)
        goto out;
    ntpu_info info;
    ntpu_get_info(dev, &info);
    if (eval_load(o, dev, test, &model))
        goto out;
    if (o->int8 && ntpu_qmodel_check(model) != NTPU_OK) {
        fail("int8: %s", ntpu_last_error(dev));
        goto out;
    }
    double t0 = now_s(), acc = 0, loss = 0, acc8 = 0, t_bf16, t_int8 = 0;
    if (ntpu_model_evaluate(model, test->images, test->labels, test->count, &acc, &loss) != NTPU_OK) {
        fail("evaluation: %s", ntpu_last_error(dev));
        goto out;
    }
    t_bf16 = now_s() - t0;
    if (o->logits_path && eval_logits(dev, model, o, test))
        goto out;
    if (o->int8) {
        t0 = now_s();
        if (ntpu_qmodel_create(model, train->images, train->count, &q) != NTPU_OK ||
            ntpu_qmodel_evaluate(q, test->images, test->labels, test->count, &acc8) != NTPU_OK) {
            fail("int8: %s", ntpu_last_error(dev));
            goto out;
        }
        t_int8 = now_s() - t0;
    }
    if (cm->json) {
        printf("{\"device\":");
        json_str(stdout, info.device);
        printf(",\"model\":");
        json_str(stdout, o->model_path);
        printf(",\"test_samples\":%zu,\"test_accuracy\":%.6f,\"test_loss\":%.6f", test->count, acc, loss);
        if (o->int8)
            printf(",\"int8_accuracy\":%.6f,\"calibration_samples\":%zu", acc8, train->count);
        printf("}\n");
    } else {
        printf("%s on %s: %zu test samples\n", o->model_path, info.device, test->count);
        printf("bf16  test accuracy %.4f  loss %.4f  (%.1f s)\n", acc, loss, t_bf16);
        if (o->int8)
            printf("int8  test accuracy %.4f  (%+.2f points; calibrated on %zu samples, %.1f s)\n", acc8,
                   100 * (acc8 - acc), train->count, t_int8);
    }
    rc = 0;
out:
    ntpu_qmodel_free(q);
    ntpu_model_free(model);
    ntpu_close(dev);
    return rc;
}

int cmd_eval(common *cm, int argc, char **argv)
{
    eval_opts o;
    int rc = eval_args(cm, argc, argv, &o);
    if (rc)
        return rc > 0;
    ntpu_dataset test = {0}, train = {0};
    if (ntpu_dataset_load(o.data, "test", (size_t)o.test_limit, &test) != NTPU_OK ||
        (o.int8 && ntpu_dataset_load(o.data, "train", (size_t)o.calib, &train) != NTPU_OK)) {
        ntpu_dataset_free(&test);
        return fail("%s", ntpu_last_error(NULL));
    }
    rc = eval_model(cm, &o, &test, &train);
    ntpu_dataset_free(&test);
    ntpu_dataset_free(&train);
    return rc;
}
