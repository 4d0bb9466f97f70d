/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu bench: the project's benchmark (`make bench` writes docs/benchmarks.md
 * from its JSON).
 *   (a) matmul sweep, M = K = N from the array size N to 16N, int8 and bf16,
 *       every result row checked against the host's loops;
 *   (b) one training step of the 784-256-10 MLP, batch 64, Adam: cycles,
 *       utilization, bytes over the link; ref and vsim must agree bit for bit;
 *   (c) simulator speed in MACs per wall-clock second, from (a) and (b);
 *   (d) with --epoch: one Fashion-MNIST epoch of `ntpu train -d ref` beside
 *       the same model in PyTorch on one CPU thread (tools/bench_torch.py),
 *       both run here, back to back, as a ratio of wall times;
 *   (e) one training step of the CNN resident on the device, the
 *       optimizer on the host and on the device, with a table of its items
 *       (bench_cnn.c); every device and both optimizers agree bit for bit.
 * Utilization counts every device cycle from the first command to the last
 * result read (the counters are cleared just before and read just after). */
#define _DEFAULT_SOURCE
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cnn.h"
#include "bench_link.h"
#include "bench_scaling.h"
#include "cli.h"
#include "ntpu/nn.h"
#include "ntpu/numerics.h"

static const char bench_help[] =
    "usage: ntpu bench [-d DEV] [--json] [--size S] [--epoch] [--cnn] [--link] [--scaling] [--data DIR]\n"
    "                  [--torch-script FILE]\n"
    "\n"
    "The benchmark, on ref, vsim and vsim:rtl (or only on DEV):\n"
    "  (a) matmuls M = K = N from the array size N to 16N (or only S), int8 and bf16, random\n"
    "      inputs, each result checked against the host: device cycles, array utilization\n"
    "      (MACs / (N^2 x cycles), every cycle from the first command to the last result read),\n"
    "      simulator speed in MAC/s of wall-clock time, and the bytes that crossed the link;\n"
    "  (b) one training step of the 784-256-10 MLP, batch 64, Adam, random data: the same\n"
    "      figures per step, and every device must agree bit for bit; then the same step with SGD\n"
    "      and Adam on the device (OPTIM, stored programs), or \"not run\" and why on a device\n"
    "      without them (the small boards);\n"
    "  (c) simulator speed of each device, from (a) and (b);\n"
    "  (d) with --epoch: one full epoch of `ntpu train -d ref` on Fashion-MNIST beside the same\n"
    "      model in PyTorch on one CPU thread (/usr/bin/python3, python3-torch), as a ratio of\n"
    "      wall times (training and test evaluation). Takes a minute or more;\n"
    "  (e) one training step of the CNN " CNN_SPEC " (1 x 28 x 28),\n"
    "      batch 64, Adam, random data, resident on the device (protocol 1.5), with the optimizer on\n"
    "      the host and on the device (OPTIM ADAM): device cycles, MACs, utilization, link bytes and\n"
    "      frames of the step, and its bytes / payload (the bf16 batch, the labels, 8 bytes of loss and\n"
    "      metrics); every device and both optimizers must agree bit for bit. Then a table of the items\n"
    "      (forward and backward of each conv, pool and fc: cycles and utilization), measured in the\n"
    "      step before the measured one by reading and clearing the device's counters (COUNTERS)\n"
    "      between one item's commands and the next's, each sent on its own rather than as the stored\n"
    "      programs the measured step runs (a pool that its conv runs band by band and a relu fused\n"
    "      into a conv count with the conv);\n"
    "  (g) data-parallel scaling: the MLP's steps (batch 64 in shards of 32) on one vsim (or DEV)\n"
    "      and on two, a thread each: wall and CPU seconds, speedup, each device's cycles and link\n"
    "      bytes a step; both must end with the same weights, bit for bit;\n"
    "  (f) the link's throughput: the weight buffer (64 KiB, or all of a smaller one) written, then\n"
    "      read back, checked: link bytes each way over device time (cycles / clock). On a board the\n"
    "      link's own rate; on ref and vsim, whose link is a function call, the core's pace.\n"
    "\n"
    "  --size S             one S x S x S matmul instead of the sweep\n"
    "  --epoch              add (d)\n"
    "  --cnn                only (e)\n"
    "  --link               only (f)\n"
    "  --scaling            only (g)\n"
    "  --data DIR           dataset for (d) (default /usr/share/datasets/fashion-mnist)\n"
    "  --torch-script FILE  the PyTorch reference (default tools/bench_torch.py, here or beside\n"
    "                       the ntpu binary's ../tools)\n"
    "  -d, --device DEV     bench only this device\n"
    "  --json               one JSON object on stdout instead of the tables\n";

#define MAX_DEVICES 3
#define SWEEP_STEPS 5 /* N, 2N, 4N, 8N, 16N */
#define MLP_BATCH 64
static const unsigned mlp_sizes[] = {784, 256, 10};

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Cycles, traffic and wall time of one measured piece of work. */
typedef struct measure {
    ntpu_counters c;
    double util, secs;
    uint64_t tx, rx;                  /* link bytes seen by the host */
    uint64_t recoveries, retransmits; /* link faults recovered from, frames sent again */
} measure;

typedef struct mm_row {
    char device[128];
    ntpu_dtype dtype;
    unsigned n; /* array size */
    size_t s;   /* M = K = N */
    measure m;
    int correct;
} mm_row;

typedef struct step_row {
    char device[128];
    unsigned n;
    measure m;
    float loss;
    uint64_t digest; /* of the loss and every weight after the step */
    char skip[160];  /* why the step was not run on this device (no OPTIM, ...); "" when it was */
} step_row;

/* (c): MACs per wall second of one device, each dtype from repeated 16N matmuls. */
typedef struct speed_row {
    double mac_per_s[2]; /* int8, bf16 */
    int correct;
} speed_row;

typedef struct epoch_res {
    double ref_secs, ref_train_secs, ref_test_acc, ref_loss;
    double torch_secs, torch_train_secs, torch_test_acc, torch_loss;
    char torch_version[32];
    long steps;
} epoch_res;

static ntpu_status measure_begin(ntpu_device *dev, measure *m, ntpu_link_stats *l0)
{
    ntpu_status st = ntpu_read_counters(dev, &m->c, 1);
    ntpu_get_link_stats(dev, l0);
    m->secs = now_s();
    return st;
}

/* The link bytes are read after COUNTERS, which sends every frame the work left
 * queued (a step ends with writes nobody waits for); the COUNTERS exchange
 * itself is taken off again. */
static ntpu_status measure_end(ntpu_device *dev, measure *m, const ntpu_link_stats *l0)
{
    ntpu_link_stats l1;
    m->secs = now_s() - m->secs;
    ntpu_status st = ntpu_read_counters(dev, &m->c, 0);
    ntpu_get_link_stats(dev, &l1);
    m->tx = l1.tx_bytes - l0->tx_bytes - (NTPU_FRAME_OVERHEAD + NTPU_LEN_COUNTERS);
    m->rx = l1.rx_bytes - l0->rx_bytes - (NTPU_FRAME_OVERHEAD + 1 + NTPU_COUNTERS_BYTES);
    m->recoveries = l1.recoveries - l0->recoveries;
    m->retransmits = l1.retransmits - l0->retransmits;
    m->util = ntpu_counters_utilization(dev, &m->c);
    return st;
}

/* ------------------------------------------------------------------ (a) matmul */

/* One s x s x s matmul on dev, checked against the host's loop. */
static int bench_matmul(ntpu_device *dev, ntpu_dtype dtype, size_t s, mm_row *row)
{
    size_t count = s * s;
    int8_t *a8 = malloc(count), *b8 = malloc(count);
    float *af = malloc(count * 4), *bf = malloc(count * 4);
    uint32_t *c = malloc(count * 4);
    int rc = 1;
    if (!a8 || !b8 || !af || !bf || !c) {
        fail("out of memory");
        goto out;
    }
    uint64_t seed = 2026;
    for (size_t i = 0; i < count; i++) {
        a8[i] = (int8_t)splitmix(&seed);
        b8[i] = (int8_t)splitmix(&seed);
        af[i] = (float)((double)(splitmix(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        bf[i] = (float)((double)(splitmix(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    ntpu_link_stats l0;
    ntpu_status st = measure_begin(dev, &row->m, &l0);
    if (st == NTPU_OK)
        st = ntpu_matmul(dev, dtype, dtype == NTPU_DTYPE_INT8 ? (void *)a8 : (void *)af,
                         dtype == NTPU_DTYPE_INT8 ? (void *)b8 : (void *)bf, c, s, s, s);
    if (st == NTPU_OK)
        st = measure_end(dev, &row->m, &l0);
    if (st != NTPU_OK) {
        fail("bench on %s: %s", row->device, ntpu_last_error(dev));
        goto out;
    }
    row->dtype = dtype;
    row->s = s;
    /* Check one row in 16 against the plain loops: the bench must not report
     * speed for wrong answers, and the full check would dominate the run time. */
    row->correct = 1;
    for (size_t m = 0; m < s && row->correct; m += 16) {
        for (size_t n = 0; n < s; n++) {
            uint32_t want = 0;
            if (dtype == NTPU_DTYPE_INT8) {
                int32_t acc = 0;
                for (size_t k = 0; k < s; k++)
                    acc = ntpu_mac_int8(acc, a8[m * s + k], b8[k * s + n]);
                want = (uint32_t)acc;
            } else {
                for (size_t k = 0; k < s; k++)
                    want = ntpu_mac_bf16(want, ntpu_bf16_from_f32(af[m * s + k]), ntpu_bf16_from_f32(bf[k * s + n]));
            }
            if (c[m * s + n] != want) {
                row->correct = 0;
                break;
            }
        }
    }
    rc = 0;
out:
    free(a8);
    free(b8);
    free(af);
    free(bf);
    free(c);
    return rc;
}

/* Repeats the s x s x s matmul until SPEED_SECS of wall time have passed:
 * one short run is too noisy a clock for a fast simulator. */
#define SPEED_SECS 0.3
#define SPEED_MAX_REPS 200
static int bench_speed(ntpu_device *dev, const char *device, ntpu_dtype dtype, size_t s, double *mac_per_s,
                       int *correct)
{
    double secs = 0, macs = 0;
    for (int rep = 0; rep < SPEED_MAX_REPS && secs < SPEED_SECS; rep++) {
        mm_row r;
        memset(&r, 0, sizeof r);
        snprintf(r.device, sizeof r.device, "%s", device);
        if (bench_matmul(dev, dtype, s, &r))
            return 1;
        secs += r.m.secs;
        macs += (double)r.m.c.macs;
        *correct &= r.correct;
    }
    *mac_per_s = secs > 0 ? macs / secs : 0;
    return 0;
}

/* ------------------------------------------------------------------ (b) training step */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

/* A random batch of the MLP: inputs in [0, 1), labels below the class count. NULL when out of memory. */
static float *random_batch(uint64_t seed, uint8_t y[MLP_BATCH])
{
    const size_t in = mlp_sizes[0], classes = mlp_sizes[2];
    float *x = malloc(MLP_BATCH * in * sizeof *x);
    if (!x)
        return NULL;
    for (size_t i = 0; i < MLP_BATCH * in; i++)
        x[i] = (float)((double)(splitmix(&seed) >> 11) / 9007199254740992.0);
    for (size_t i = 0; i < MLP_BATCH; i++)
        y[i] = (uint8_t)(splitmix(&seed) % classes);
    return x;
}

/* The step's loss and the model's weights and biases after it, hashed: devices that compute the same
 * bits give the same digest. */
static uint64_t step_digest(ntpu_model *model, float loss)
{
    ntpu_model_view v;
    ntpu_model_get_view(model, &v);
    uint64_t h = fnv1a(0xCBF29CE484222325ull, &loss, sizeof loss);
    for (size_t l = 0; l < v.n_layers; l++) {
        h = fnv1a(h, v.weights[l], (size_t)v.sizes[l] * v.sizes[l + 1] * sizeof(float));
        h = fnv1a(h, v.biases[l], (size_t)v.sizes[l + 1] * sizeof(float));
    }
    return h;
}

/* The optimizers (b) runs on the device. */
static const ntpu_optimizer devopt_kinds[] = {NTPU_OPT_SGD, NTPU_OPT_ADAM};
#define DEVOPT_KINDS (sizeof devopt_kinds / sizeof devopt_kinds[0])

/* One training step of the MLP on random data, measured: `kind` on the host, or with `device` on the
 * device and, when it has PROGRAM, the step's device work as stored programs (decision 0015), after an
 * unmeasured first step that records and uploads them. The model's creation (its first weight upload)
 * is never part of the measurement. *programs (when given): whether the device has PROGRAM. */
static int bench_step(ntpu_device *dev, ntpu_optimizer kind, int device, step_row *row, int *programs)
{
    uint8_t y[MLP_BATCH];
    float *x = random_batch(device ? 65 : 64, y);
    ntpu_model *model = NULL;
    int rc = 1;
    if (!x) {
        fail("out of memory");
        goto out;
    }
    ntpu_optim_config opt = ntpu_optim_defaults(kind);
    opt.device = device;
    ntpu_status st = ntpu_model_create(dev, mlp_sizes, 3, MLP_BATCH, 0, &opt, &model);
    ntpu_link_stats l0;
    ntpu_step_result r = {0};
    if (st == NTPU_OK && device && ntpu_model_check_device_optimizer(model) != NTPU_OK) {
        /* A device without OPTIM (a small board, ref:novec=1) still gets the rest of the table. */
        snprintf(row->skip, sizeof row->skip, "%s", ntpu_last_error(dev));
        rc = 0;
        goto out;
    }
    if (st == NTPU_OK && device)
        st = ntpu_model_train_step(model, x, y, MLP_BATCH, &r);
    if (st == NTPU_OK)
        st = measure_begin(dev, &row->m, &l0);
    if (st == NTPU_OK)
        st = ntpu_model_train_step(model, x, y, MLP_BATCH, &r);
    if (st == NTPU_OK)
        st = measure_end(dev, &row->m, &l0);
    if (st == NTPU_OK && device)
        st = ntpu_model_fetch(model);
    if (st != NTPU_OK) {
        fail("bench training step%s on %s: %s", device ? " (device optimizer)" : "", row->device, ntpu_last_error(dev));
        goto out;
    }
    if (programs) {
        ntpu_info info;
        ntpu_get_info(dev, &info);
        *programs = (info.features & NTPU_FEATURE_PROGRAM_BIT) != 0;
    }
    row->loss = r.loss;
    row->digest = step_digest(model, r.loss);
    rc = 0;
out:
    ntpu_model_free(model);
    free(x);
    return rc;
}

/* Issue 5's budget for a step's link traffic: 1.1 x (the bf16 batch, one label
 * byte a sample, and the loss and correct count read back: 4 + 4 bytes). */
#define STEP_PAYLOAD_BYTES ((double)MLP_BATCH * 784 * 2 + MLP_BATCH + 8)
#define STEP_BUDGET_BYTES (1.1 * STEP_PAYLOAD_BYTES)

/* ------------------------------------------------------------------ (d) epoch */

/* Appends s to buf in single quotes, for /bin/sh. */
static void sh_quote(char *buf, size_t len, const char *s)
{
    size_t at = strlen(buf);
    if (at + 1 < len)
        buf[at++] = '\'';
    for (; *s && at + 5 < len; s++) {
        if (*s == '\'') {
            memcpy(buf + at, "'\\''", 4);
            at += 4;
        } else {
            buf[at++] = *s;
        }
    }
    if (at + 1 < len)
        buf[at++] = '\'';
    buf[at] = 0;
}

/* Runs cmd through /bin/sh and parses the last line of its stdout as JSON;
 * NULL after printing why. */
static cJSON *run_json(const char *what, const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        fail("bench --epoch: cannot run %s", what);
        return NULL;
    }
    char line[8192], last[8192] = "";
    while (fgets(line, sizeof line, p))
        if (line[0] == '{')
            memcpy(last, line, sizeof last);
    int status = pclose(p);
    cJSON *j = status == 0 ? cJSON_Parse(last) : NULL;
    if (!j)
        fail("bench --epoch: %s failed (exit status %d%s)", what, status,
             status ? "; its error is above" : ", no JSON");
    return j;
}

static double json_num(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The PyTorch script: FILE if given, else tools/bench_torch.py from here or
 * from beside the binary (build/ntpu -> tools/). */
static int find_script(const char *given, char *out, size_t len)
{
    if (given) {
        snprintf(out, len, "%s", given);
        return access(out, R_OK) == 0 ? 0 : fail("--torch-script: cannot read %s", given);
    }
    snprintf(out, len, "tools/bench_torch.py");
    if (access(out, R_OK) == 0)
        return 0;
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(out, len, "%s/../tools/bench_torch.py", exe);
            if (access(out, R_OK) == 0)
                return 0;
        }
    }
    return fail("bench --epoch: tools/bench_torch.py not found (run from the source tree or give --torch-script)");
}

static int bench_epoch(const char *data, const char *script, epoch_res *e)
{
    char self[4096], cmd[16384] = "";
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0)
        return fail("bench --epoch: cannot find the ntpu binary (/proc/self/exe)");
    self[k] = 0;
    static const char common_args[] = " --layers 784,256,10 --batch 64 --lr 0.001 --seed 0";

    snprintf(cmd, sizeof cmd, "/usr/bin/python3 ");
    sh_quote(cmd, sizeof cmd, script);
    strncat(cmd, common_args, sizeof cmd - strlen(cmd) - 1);
    if (data) {
        strncat(cmd, " --data ", sizeof cmd - strlen(cmd) - 1);
        sh_quote(cmd, sizeof cmd, data);
    }
    cJSON *t = run_json("the PyTorch reference (tools/bench_torch.py)", cmd);
    if (!t)
        return 1;
    e->torch_secs = json_num(t, "seconds");
    e->torch_train_secs = json_num(t, "train_seconds");
    e->torch_test_acc = json_num(t, "test_accuracy");
    e->torch_loss = json_num(t, "train_loss");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(t, "torch");
    snprintf(e->torch_version, sizeof e->torch_version, "%s", cJSON_IsString(ver) ? ver->valuestring : "?");
    cJSON_Delete(t);

    cmd[0] = 0;
    sh_quote(cmd, sizeof cmd, self);
    strncat(cmd, " train -d ref --json --optimizer adam --epochs 1", sizeof cmd - strlen(cmd) - 1);
    strncat(cmd, common_args, sizeof cmd - strlen(cmd) - 1);
    if (data) {
        strncat(cmd, " --data ", sizeof cmd - strlen(cmd) - 1);
        sh_quote(cmd, sizeof cmd, data);
    }
    cJSON *r = run_json("ntpu train -d ref", cmd);
    if (!r)
        return 1;
    e->ref_secs = json_num(r, "seconds");
    e->ref_test_acc = json_num(r, "test_accuracy");
    e->ref_loss = json_num(r, "train_loss");
    e->steps = (long)json_num(r, "steps");
    const cJSON *hist = cJSON_GetObjectItemCaseSensitive(r, "history");
    e->ref_train_secs =
        cJSON_IsArray(hist) && cJSON_GetArraySize(hist) > 0 ? json_num(cJSON_GetArrayItem(hist, 0), "seconds") : -1;
    cJSON_Delete(r);
    if (e->ref_secs <= 0 || e->torch_secs <= 0)
        return fail("bench --epoch: a run reported no time");
    return 0;
}

/* ------------------------------------------------------------------ output */

static double rate(uint64_t macs, double secs)
{
    return secs > 0 ? (double)macs / secs : 0.0;
}

/* The CNN rows of (e) to print beside the rest. */
typedef struct cnn_part {
    const cnn_row *rows;
    int count, agree;
} cnn_part;

static void print_json(const mm_row *mm, int nmm, const step_row *st, const speed_row *sp, int nst, int step_agree,
                       step_row so[][MAX_DEVICES], const int *prog, const int *so_agree, const cnn_part *cnn,
                       const link_row *lk, int nlk, const scaling_row *sc, int nsc, const epoch_res *ep)
{
    printf("{\"runs\":[");
    for (int i = 0; i < nmm; i++) {
        const mm_row *r = &mm[i];
        printf("%s{\"device\":", i ? "," : "");
        json_str(stdout, r->device);
        printf(",\"dtype\":\"%s\",\"array\":%u,\"m\":%zu,\"k\":%zu,\"n\":%zu,\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64
               ",\"utilization\":%.6f,\"seconds\":%.6f,\"mac_per_s\":%.6g,"
               "\"link_tx_bytes\":%" PRIu64 ",\"link_rx_bytes\":%" PRIu64 ",\"link_recoveries\":%" PRIu64
               ",\"link_retransmits\":%" PRIu64 ",\"correct\":%s}",
               dtype_name(r->dtype), r->n, r->s, r->s, r->s, r->m.c.cycles, r->m.c.macs, r->m.util, r->m.secs,
               rate(r->m.c.macs, r->m.secs), r->m.tx, r->m.rx, r->m.recoveries, r->m.retransmits,
               r->correct ? "true" : "false");
    }
    printf("],\"train_step\":{\"layers\":[784,256,10],\"batch\":%d,\"optimizer\":\"adam\",\"agree\":%s,\"runs\":[",
           MLP_BATCH,
           step_agree < 0 ? "null"
           : step_agree   ? "true"
                          : "false");
    for (int i = 0; i < nst; i++) {
        const step_row *r = &st[i];
        printf("%s{\"device\":", i ? "," : "");
        json_str(stdout, r->device);
        printf(",\"array\":%u,\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64 ",\"array_busy\":%" PRIu64
               ",\"utilization\":%.6f,\"seconds\":%.6f,\"mac_per_s\":%.6g,\"link_tx_bytes\":%" PRIu64
               ",\"link_rx_bytes\":%" PRIu64 ",\"link_bytes\":%" PRIu64 ",\"loss\":%.9g}",
               r->n, r->m.c.cycles, r->m.c.macs, r->m.c.array_busy, r->m.util, r->m.secs, rate(r->m.c.macs, r->m.secs),
               r->m.tx, r->m.rx, r->m.tx + r->m.rx, (double)r->loss);
    }
    printf("]},\"train_step_device_optimizer\":[");
    for (size_t k = 0; k < DEVOPT_KINDS; k++) {
        printf("%s{\"layers\":[784,256,10],\"batch\":%d,\"optimizer\":\"%s\",\"budget_bytes\":%.1f,"
               "\"agree\":%s,\"runs\":[",
               k ? "," : "", MLP_BATCH, ntpu_optimizer_name(devopt_kinds[k]), STEP_BUDGET_BYTES,
               so_agree[k] < 0 ? "null"
               : so_agree[k]   ? "true"
                               : "false");
        for (int i = 0; i < nst; i++) {
            const step_row *r = &so[k][i];
            printf("%s{\"device\":", i ? "," : "");
            json_str(stdout, r->device);
            if (r->skip[0]) {
                printf(",\"skipped\":");
                json_str(stdout, r->skip);
                printf("}");
                continue;
            }
            printf(",\"programs\":%s,\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64 ",\"array_busy\":%" PRIu64
                   ",\"utilization\":%.6f,\"seconds\":%.6f,\"link_tx_bytes\":%" PRIu64 ",\"link_rx_bytes\":%" PRIu64
                   ",\"link_bytes\":%" PRIu64 ",\"budget_ratio\":%.4f,\"loss\":%.9g}",
                   prog[i] ? "true" : "false", r->m.c.cycles, r->m.c.macs, r->m.c.array_busy, r->m.util, r->m.secs,
                   r->m.tx, r->m.rx, r->m.tx + r->m.rx, (double)(r->m.tx + r->m.rx) / STEP_BUDGET_BYTES,
                   (double)r->loss);
        }
        printf("]}");
    }
    printf("],\"sim_speed\":[");
    for (int i = 0; i < nst; i++) {
        printf("%s{\"device\":", i ? "," : "");
        json_str(stdout, st[i].device);
        printf(",\"int8_mac_per_s\":%.6g,\"bf16_mac_per_s\":%.6g,\"train_step_mac_per_s\":%.6g}", sp[i].mac_per_s[0],
               sp[i].mac_per_s[1], rate(st[i].m.c.macs, st[i].m.secs));
    }
    printf("],\"train_step_cnn\":");
    cnn_print_json(cnn->rows, cnn->count, cnn->agree);
    printf(",\"link_throughput\":");
    link_print_json(lk, nlk);
    printf(",\"scaling\":");
    scaling_print_json(sc, nsc);
    printf(",\"epoch\":");
    if (!ep) {
        printf("null}\n");
        return;
    }
    printf("{\"layers\":[784,256,10],\"batch\":64,\"optimizer\":\"adam\",\"lr\":0.001,\"steps\":%ld,"
           "\"ref_seconds\":%.3f,\"ref_train_seconds\":%.3f,\"ref_test_accuracy\":%.4f,\"ref_train_loss\":%.4f,"
           "\"torch_seconds\":%.3f,\"torch_train_seconds\":%.3f,\"torch_test_accuracy\":%.4f,"
           "\"torch_train_loss\":%.4f,\"torch_version\":",
           ep->steps, ep->ref_secs, ep->ref_train_secs, ep->ref_test_acc, ep->ref_loss, ep->torch_secs,
           ep->torch_train_secs, ep->torch_test_acc, ep->torch_loss);
    json_str(stdout, ep->torch_version);
    printf(",\"ratio\":%.4f}}\n", ep->ref_secs / ep->torch_secs);
}

static void print_tables(const mm_row *mm, int nmm, const step_row *st, const speed_row *sp, int nst, int step_agree,
                         step_row so[][MAX_DEVICES], const int *prog, const int *so_agree, const cnn_part *cnn,
                         const link_row *lk, int nlk, const scaling_row *sc, int nsc, const epoch_res *ep)
{
    char b[6][32];
    int w = 10; /* the device column: as wide as the longest name (vsim:board=icebreaker,...) */
    for (int i = 0; i < nmm; i++)
        w = (int)strlen(mm[i].device) > w ? (int)strlen(mm[i].device) : w;
    for (int i = 0; i < nst; i++)
        w = (int)strlen(st[i].device) > w ? (int)strlen(st[i].device) : w;
    printf("(a) matmul M = K = N, random inputs\n\n");
    printf("%-*s %-5s %-6s %5s %14s %14s %7s %9s %11s %10s %10s %7s  %s\n", w, "device", "dtype", "array", "size",
           "cycles", "MACs", "util", "wall s", "MAC/s", "link tx", "link rx", "recov", "check");
    for (int i = 0; i < nmm; i++) {
        const mm_row *r = &mm[i];
        snprintf(b[0], sizeof b[0], "%ux%u", r->n, r->n);
        printf("%-*s %-5s %-6s %5zu %14s %14s %6.1f%% %9.3f %11.3g %10s %10s %7" PRIu64 "  %s\n", w, r->device,
               dtype_name(r->dtype), b[0], r->s, grouped(r->m.c.cycles, b[1], sizeof b[1]),
               grouped(r->m.c.macs, b[2], sizeof b[2]), 100.0 * r->m.util, r->m.secs, rate(r->m.c.macs, r->m.secs),
               bytes_str(r->m.tx, b[3], sizeof b[3]), bytes_str(r->m.rx, b[4], sizeof b[4]), r->m.recoveries,
               r->correct ? "ok" : "WRONG");
    }
    printf("\n(b) training step: MLP 784-256-10, batch %d, Adam, host optimizer\n\n", MLP_BATCH);
    printf("%-*s %-6s %14s %14s %7s %9s %11s %10s %10s %12s  %s\n", w, "device", "array", "cycles", "MACs", "util",
           "wall s", "MAC/s", "link tx", "link rx", "link B/step", "check");
    for (int i = 0; i < nst; i++) {
        const step_row *r = &st[i];
        snprintf(b[0], sizeof b[0], "%ux%u", r->n, r->n);
        printf("%-*s %-6s %14s %14s %6.1f%% %9.3f %11.3g %10s %10s %12s  %s\n", w, r->device, b[0],
               grouped(r->m.c.cycles, b[1], sizeof b[1]), grouped(r->m.c.macs, b[2], sizeof b[2]), 100.0 * r->m.util,
               r->m.secs, rate(r->m.c.macs, r->m.secs), bytes_str(r->m.tx, b[3], sizeof b[3]),
               bytes_str(r->m.rx, b[4], sizeof b[4]), grouped(r->m.tx + r->m.rx, b[5], sizeof b[5]),
               step_agree < 0 ? "-"
               : step_agree   ? "all equal"
                              : "DIFFER");
    }
    printf(
        "\n    the same step with the optimizer on the device (OPTIM; Adam: OPTIM ADAM) and, with PROGRAM, its device\n"
        "    work as two stored programs (RUN); budget 1.1 x (batch %s + labels %d + loss/metrics 8 B) = %s B\n\n",
        grouped((uint64_t)MLP_BATCH * 784 * 2, b[0], sizeof b[0]), MLP_BATCH,
        grouped((uint64_t)STEP_BUDGET_BYTES, b[1], sizeof b[1]));
    printf("%-*s %-6s %-5s %-8s %14s %7s %10s %10s %12s %8s  %s\n", w, "device", "array", "optim", "programs", "cycles",
           "util", "link tx", "link rx", "link B/step", "/budget", "check");
    for (size_t k = 0; k < DEVOPT_KINDS; k++) {
        for (int i = 0; i < nst; i++) {
            const step_row *r = &so[k][i];
            snprintf(b[0], sizeof b[0], "%ux%u", r->n, r->n);
            if (r->skip[0]) {
                printf("%-*s %-6s %-5s not run: %s\n", w, r->device, b[0], ntpu_optimizer_name(devopt_kinds[k]),
                       r->skip);
                continue;
            }
            printf("%-*s %-6s %-5s %-8s %14s %6.1f%% %10s %10s %12s %7.3fx  %s\n", w, r->device, b[0],
                   ntpu_optimizer_name(devopt_kinds[k]), prog[i] ? "yes" : "no",
                   grouped(r->m.c.cycles, b[1], sizeof b[1]), 100.0 * r->m.util, bytes_str(r->m.tx, b[3], sizeof b[3]),
                   bytes_str(r->m.rx, b[4], sizeof b[4]), grouped(r->m.tx + r->m.rx, b[5], sizeof b[5]),
                   (double)(r->m.tx + r->m.rx) / STEP_BUDGET_BYTES,
                   so_agree[k] < 0 ? "-"
                   : so_agree[k]   ? "all equal"
                                   : "DIFFER");
        }
    }
    printf("\n(c) simulator speed, MACs of simulated work per wall-clock second (16N matmuls, repeated)\n\n");
    printf("%-*s %16s %16s %16s\n", w, "device", "int8 matmul", "bf16 matmul", "training step");
    for (int i = 0; i < nst; i++)
        printf("%-*s %16.3g %16.3g %16.3g\n", w, st[i].device, sp[i].mac_per_s[0], sp[i].mac_per_s[1],
               rate(st[i].m.c.macs, st[i].m.secs));
    if (ep) {
        printf("\n(d) one epoch of Fashion-MNIST (60,000 samples, %ld steps) and the test set, one CPU thread each\n\n",
               ep->steps);
        printf("%-28s %9s %9s %9s %10s\n", "", "wall s", "train s", "loss", "test acc");
        printf("%-28s %9.2f %9.2f %9.4f %10.4f\n", "ntpu train -d ref", ep->ref_secs, ep->ref_train_secs, ep->ref_loss,
               ep->ref_test_acc);
        char who[48];
        snprintf(who, sizeof who, "PyTorch %s", ep->torch_version);
        printf("%-28s %9.2f %9.2f %9.4f %10.4f\n", who, ep->torch_secs, ep->torch_train_secs, ep->torch_loss,
               ep->torch_test_acc);
        printf("\nref / PyTorch wall time: %.2f x\n", ep->ref_secs / ep->torch_secs);
    }
    cnn_print_table(cnn->rows, cnn->count, cnn->agree, w);
    link_print_table(lk, nlk, w);
    scaling_print_table(sc, nsc);
    printf("\nutil = MACs / (N^2 x cycles), every cycle from the first command to the last result read; cycles on\n"
           "ref are the golden model's estimate, on vsim and vsim:rtl measured on the RTL. MAC/s is wall-clock\n"
           "simulator speed.\n");
}

/* ------------------------------------------------------------------ command */

/* The command line of ntpu bench. */
typedef struct bench_opts {
    const char *size_arg, *data, *script; /* as given; NULL when not */
    int epoch;                            /* --epoch: add (d) */
    int cnn_only;                         /* --cnn: only (e) */
    int link_only;                        /* --link: only (f) */
    int scaling_only;                     /* --scaling: only (g) */
    uint64_t s_one;                       /* --size, or 0 for the sweep */
    char script_path[4200];               /* the PyTorch reference, with --epoch */
} bench_opts;

/* The command line into *o: 0, 1 after printing an error, or -1 after printing the help. */
static int bench_args(common *cm, int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    const option opts[] = {{"--size", 0, &o->size_arg, NULL},       {"--epoch", 0, NULL, &o->epoch},
                           {"--cnn", 0, NULL, &o->cnn_only},        {"--link", 0, NULL, &o->link_only},
                           {"--data", 0, &o->data, NULL},           {"--torch-script", 0, &o->script, NULL},
                           {"--scaling", 0, NULL, &o->scaling_only}};
    char *pos[1];
    int npos;
    if (parse_args(argc, argv, cm, opts, sizeof opts / sizeof opts[0], pos, 0, &npos))
        return 1;
    if (cm->help) {
        fputs(bench_help, stdout);
        return -1;
    }
    if (o->size_arg && parse_u64("--size", o->size_arg, 1, 4096, &o->s_one))
        return 1;
    if (o->epoch && find_script(o->script, o->script_path, sizeof o->script_path)) /* before the long part */
        return 1;
    if (o->data && access(o->data, R_OK | X_OK) != 0)
        return fail("--data: cannot read the directory %s", o->data);
    return 0;
}

/* What (a), (b) and (c) measured, a row per run. */
typedef struct bench_res {
    mm_row mm[MAX_DEVICES * SWEEP_STEPS * 2];
    step_row st[MAX_DEVICES], so[DEVOPT_KINDS][MAX_DEVICES];
    int prog[MAX_DEVICES];
    speed_row sp[MAX_DEVICES];
    cnn_row cnn[MAX_DEVICES * 2];        /* (e): per device, the host optimizer's step, then the device optimizer's */
    link_row link[MAX_DEVICES];          /* (f) */
    scaling_row sc[SCALING_MAX_DEVICES]; /* (g): on 1 and 2 devices */
    int nmm, nst, ncnn, nlink, nsc;
} bench_res;

/* (e) on dev: 0, or 1 after printing the error. */
static int bench_cnn_rows(ntpu_device *dev, const char *device, bench_res *b)
{
    for (int devopt = 0; devopt < 2; devopt++)
        if (bench_cnn(dev, device, devopt, &b->cnn[b->ncnn++]))
            return 1;
    return 0;
}

/* (a), (b), (c), (e) and (f) on one device (only (e) with cnn_only, only (f) with link_only), appended to *b:
 * 0, or 1 after printing the error. */
static int bench_device(const char *device, uint64_t s_one, int cnn_only, int link_only, bench_res *b)
{
    ntpu_device *dev = open_device(device);
    if (!dev)
        return 1;
    ntpu_info info;
    ntpu_get_info(dev, &info);
    if (link_only) {
        int rc = bench_link(dev, info.device, &b->link[b->nlink++]);
        ntpu_close(dev);
        return rc;
    }
    if (cnn_only) {
        int rc = bench_cnn_rows(dev, info.device, b);
        ntpu_close(dev);
        return rc;
    }
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < (s_one ? 1 : SWEEP_STEPS); k++) {
            mm_row *r = &b->mm[b->nmm];
            memset(r, 0, sizeof *r);
            snprintf(r->device, sizeof r->device, "%s", info.device);
            r->n = info.rows;
            if (bench_matmul(dev, t ? NTPU_DTYPE_BF16 : NTPU_DTYPE_INT8, s_one ? s_one : (size_t)info.rows << k, r))
                goto fail;
            b->nmm++;
        }
    speed_row *v = &b->sp[b->nst];
    v->correct = 1;
    for (int t = 0; t < 2; t++)
        if (bench_speed(dev, info.device, t ? NTPU_DTYPE_BF16 : NTPU_DTYPE_INT8, (size_t)info.rows << 4,
                        &v->mac_per_s[t], &v->correct))
            goto fail;
    step_row *r = &b->st[b->nst];
    memset(r, 0, sizeof *r);
    snprintf(r->device, sizeof r->device, "%s", info.device);
    r->n = info.rows;
    if (bench_step(dev, NTPU_OPT_ADAM, 0, r, NULL))
        goto fail;
    for (size_t k = 0; k < DEVOPT_KINDS; k++) {
        step_row *o = &b->so[k][b->nst];
        memset(o, 0, sizeof *o);
        snprintf(o->device, sizeof o->device, "%s", info.device);
        o->n = info.rows;
        if (bench_step(dev, devopt_kinds[k], 1, o, &b->prog[b->nst]))
            goto fail;
    }
    b->nst++;
    if (bench_cnn_rows(dev, info.device, b) || bench_link(dev, info.device, &b->link[b->nlink++]))
        goto fail;
    ntpu_close(dev);
    return 0;
fail:
    ntpu_close(dev);
    return 1;
}

int cmd_bench(common *cm, int argc, char **argv)
{
    bench_opts o;
    int rc = bench_args(cm, argc, argv, &o);
    if (rc)
        return rc > 0;
    /* vsim:rtl, the core from rtl/ alone, beside vsim: what its simulation forms buy (decision 0025). */
    const char *defaults[] = {"ref", "vsim", "vsim:rtl"};
    const char *const *devices = cm->device ? &cm->device : defaults;
    int ndev = cm->device ? 1 : MAX_DEVICES;
    bench_res b;
    memset(&b, 0, sizeof b);
    for (int d = 0; d < ndev && !o.scaling_only; d++)
        if (bench_device(devices[d], o.s_one, o.cnn_only, o.link_only, &b))
            return 1;
    /* (g) on vsim, or the device given; its 1 and 2 devices must end with the same weights */
    for (size_t n = 1; n <= SCALING_MAX_DEVICES && (o.scaling_only || (!o.cnn_only && !o.link_only)); n++) {
        fflush(stdout);
        if (bench_scaling(cm->device ? cm->device : "vsim", n, &b.sc[b.nsc++]))
            return 1;
    }
    const int scaling_agree = b.nsc < 2 || b.sc[1].digest == b.sc[0].digest;
    /* Every device computes the same bits: a step that differs is a bug. */
    int step_agree = b.nst < 2 ? -1 : 1;
    for (int i = 1; i < b.nst; i++)
        step_agree &= b.st[i].digest == b.st[0].digest;
    int so_agree[DEVOPT_KINDS]; /* over the devices that ran the step; -1 when fewer than two did */
    for (size_t k = 0; k < DEVOPT_KINDS; k++) {
        const step_row *first = NULL;
        so_agree[k] = -1;
        for (int i = 0; i < b.nst; i++) {
            if (b.so[k][i].skip[0])
                continue;
            if (first)
                so_agree[k] = (so_agree[k] != 0) && b.so[k][i].digest == first->digest;
            else
                first = &b.so[k][i];
        }
    }
    epoch_res ep;
    memset(&ep, 0, sizeof ep);
    if (o.epoch) {
        fflush(stdout);
        if (bench_epoch(o.data, o.script_path, &ep))
            return 1;
    }
    const cnn_part cnn = {b.cnn, b.ncnn, cnn_agree(b.cnn, b.ncnn)};
    int w = 10; /* the device column: as wide as the longest name */
    for (int i = 0; i < b.nlink; i++)
        w = (int)strlen(b.link[i].device) > w ? (int)strlen(b.link[i].device) : w;
    if (o.scaling_only && cm->json) {
        printf("{\"scaling\":");
        scaling_print_json(b.sc, b.nsc);
        printf("}\n");
    } else if (o.scaling_only) {
        scaling_print_table(b.sc, b.nsc);
    } else if (o.link_only && cm->json) {
        printf("{\"link_throughput\":");
        link_print_json(b.link, b.nlink);
        printf("}\n");
    } else if (o.link_only) {
        link_print_table(b.link, b.nlink, w);
    } else if (o.cnn_only && cm->json) {
        printf("{\"train_step_cnn\":");
        cnn_print_json(cnn.rows, cnn.count, cnn.agree);
        printf("}\n");
    } else if (o.cnn_only) {
        for (int i = 0; i < b.ncnn; i++)
            w = (int)strlen(b.cnn[i].device) > w ? (int)strlen(b.cnn[i].device) : w;
        cnn_print_table(cnn.rows, cnn.count, cnn.agree, w);
    } else if (cm->json)
        print_json(b.mm, b.nmm, b.st, b.sp, b.nst, step_agree, b.so, b.prog, so_agree, &cnn, b.link, b.nlink, b.sc,
                   b.nsc, o.epoch ? &ep : NULL);
    else
        print_tables(b.mm, b.nmm, b.st, b.sp, b.nst, step_agree, b.so, b.prog, so_agree, &cnn, b.link, b.nlink, b.sc,
                     b.nsc, o.epoch ? &ep : NULL);
    int all_ok = 1;
    for (int i = 0; i < b.nst; i++)
        all_ok &= b.sp[i].correct;
    for (int i = 0; i < b.nmm; i++)
        all_ok &= b.mm[i].correct;
    for (int i = 0; i < b.nlink; i++)
        all_ok &= b.link[i].correct;
    if (!all_ok)
        return fail("bench: a result differs from the host's reference computation");
    int devopt_differs = 0;
    for (size_t k = 0; k < DEVOPT_KINDS; k++)
        devopt_differs |= so_agree[k] == 0;
    if (step_agree == 0 || devopt_differs)
        return fail("bench: the training step differs between the devices");
    if (cnn.agree == 0)
        return fail("bench: the CNN's training step differs between the devices or the optimizers");
    if (!scaling_agree)
        return fail("bench: the data-parallel steps on 1 and 2 devices ended with different weights");
    return 0;
}
