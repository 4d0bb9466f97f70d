/* SPDX-License-Identifier: Apache-2.0 */
/* Link recovery end to end: the same matmuls and training steps run on a clean
 * device and on one behind the faulty transport (bits flipped and bytes
 * dropped in both directions), and must give the same bits. The host's
 * retransmission (docs/protocol.md) makes every command run exactly once, in
 * order; the run must actually have needed it (recoveries > 0).
 * Usage: link_faults CLEAN_DEVICE FAULTY_DEVICE [matmuls=300]
 *   e.g. link_faults ref ref:faults=0.0003,fault_seed=5,payload=516 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/nn.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what, ntpu_device *dev)
{
    printf("FAIL %s: %s\n", what, dev ? ntpu_last_error(dev) : "");
    exit(1);
}

static ntpu_device *open_dev(const char *name)
{
    ntpu_device *dev;
    if (ntpu_open(name, &dev) != NTPU_OK)
        die(name, dev);
    return dev;
}

/* count random matmuls of random shapes, both dtypes, on both devices. */
static void matmuls(ntpu_device *clean, ntpu_device *faulty, unsigned count)
{
    enum { MAXD = 40 };
    static float af[MAXD * MAXD], bf[MAXD * MAXD], cf[2][MAXD * MAXD];
    static int8_t a8[MAXD * MAXD], b8[MAXD * MAXD];
    static int32_t c8[2][MAXD * MAXD];
    for (unsigned t = 0; t < count; t++) {
        size_t M = 1 + rnd() % MAXD, K = 1 + rnd() % MAXD, N = 1 + rnd() % MAXD;
        int bf16 = t & 1;
        for (size_t i = 0; i < M * K; i++) {
            a8[i] = (int8_t)rnd();
            af[i] = (float)((int)(rnd() % 2001) - 1000) / 256.0f;
        }
        for (size_t i = 0; i < K * N; i++) {
            b8[i] = (int8_t)rnd();
            bf[i] = (float)((int)(rnd() % 2001) - 1000) / 256.0f;
        }
        for (int d = 0; d < 2; d++) {
            ntpu_device *dev = d ? faulty : clean;
            ntpu_status st = bf16 ? ntpu_matmul(dev, NTPU_DTYPE_BF16, af, bf, cf[d], M, K, N)
                                  : ntpu_matmul(dev, NTPU_DTYPE_INT8, a8, b8, c8[d], M, K, N);
            if (st != NTPU_OK)
                die(d ? "matmul on the faulty device" : "matmul on the clean device", dev);
        }
        if (bf16 ? memcmp(cf[0], cf[1], M * N * sizeof(float)) : memcmp(c8[0], c8[1], M * N * sizeof(int32_t))) {
            printf("FAIL matmul %u (%s %zux%zux%zu): the faulty device's result differs\n", t, bf16 ? "bf16" : "int8",
                   M, K, N);
            exit(1);
        }
    }
}

/* Two training steps of a 20-16-10 MLP, batch 8: losses, weights, biases and
 * optimizer state must match bit for bit. */
static void training(ntpu_device *clean, ntpu_device *faulty)
{
    enum { BATCH = 8, IN = 20 };
    static const unsigned sizes[3] = {IN, 16, 10};
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m[2];
    ntpu_step_result r[2][2];
    float x[BATCH * IN];
    uint8_t y[BATCH];
    for (int d = 0; d < 2; d++)
        if (ntpu_model_create(d ? faulty : clean, sizes, 3, BATCH, 42, &opt, &m[d]) != NTPU_OK)
            die("model", d ? faulty : clean);
    for (int step = 0; step < 2; step++) {
        for (int i = 0; i < BATCH * IN; i++)
            x[i] = (float)(rnd() % 1000) / 1000.0f;
        for (int i = 0; i < BATCH; i++)
            y[i] = (uint8_t)(rnd() % 10);
        for (int d = 0; d < 2; d++)
            if (ntpu_model_train_step(m[d], x, y, BATCH, &r[d][step]) != NTPU_OK)
                die("train step", d ? faulty : clean);
        if (memcmp(&r[0][step].loss, &r[1][step].loss, sizeof(float)) || r[0][step].correct != r[1][step].correct) {
            printf("FAIL step %d: loss %.9g vs %.9g\n", step, r[0][step].loss, r[1][step].loss);
            exit(1);
        }
        printf("training step %d: loss %.6f on both\n", step, r[0][step].loss);
    }
    ntpu_model_view v[2];
    ntpu_model_get_view(m[0], &v[0]);
    ntpu_model_get_view(m[1], &v[1]);
    for (int l = 0; l < 2; l++) {
        size_t nw = (size_t)sizes[l] * sizes[l + 1] * sizeof(float), nb = sizes[l + 1] * sizeof(float);
        if (memcmp(v[0].weights[l], v[1].weights[l], nw) || memcmp(v[0].biases[l], v[1].biases[l], nb) ||
            memcmp(v[0].grad_w[l], v[1].grad_w[l], nw) || memcmp(v[0].grad_b[l], v[1].grad_b[l], nb) ||
            memcmp(v[0].w_state1[l], v[1].w_state1[l], nw) || memcmp(v[0].w_state2[l], v[1].w_state2[l], nw)) {
            printf("FAIL layer %d: weights, gradients or optimizer state differ after training\n", l);
            exit(1);
        }
    }
    ntpu_model_free(m[0]);
    ntpu_model_free(m[1]);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        puts("usage: link_faults CLEAN_DEVICE FAULTY_DEVICE [matmuls=300]");
        return 2;
    }
    unsigned count = argc > 3 ? (unsigned)atoi(argv[3]) : 300;
    ntpu_device *clean = open_dev(argv[1]), *faulty = open_dev(argv[2]);
    matmuls(clean, faulty, count);
    training(clean, faulty);
    ntpu_link_stats ls;
    ntpu_get_link_stats(faulty, &ls);
    printf("%u matmuls and 2 training steps bit-identical on %s: %llu recoveries, %llu frames sent again, "
           "%llu frames out, %llu replies in\n",
           count, argv[2], (unsigned long long)ls.recoveries, (unsigned long long)ls.retransmits,
           (unsigned long long)ls.tx_frames, (unsigned long long)ls.rx_frames);
    if (ls.recoveries == 0) {
        puts("FAIL no link fault was recovered from: the test did not test recovery");
        return 1;
    }
    ntpu_close(faulty);
    ntpu_close(clean);
    puts("PASS link_faults");
    return 0;
}
