/* SPDX-License-Identifier: Apache-2.0 */
/* Streamed training (host/src/nn/nn_stream.c): a model too big for a board's memories
 * trains on the golden model with the iCEBreaker's configuration (N = 2, UB 1024,
 * WB 16384, ACC 512, no vector unit, no TRANSPOSE_A) and must give exactly the
 * bits of the resident path on devices that hold it: the same N (identical
 * padding) and the default N (other padding). Losses, gradients, weights, biases,
 * optimizer state, logits and evaluation, and checkpoints moved between paths. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ntpu/nn.h"

#define NN_SEED 0x243F6A8885A308D3u
#define NN_SIDE_A "streamed "
#define NN_SIDE_B "resident "
#include "nn_compare.h"

#define BOARD "ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1,notra=1"

enum { DEVS = 3, STEPS = 3, MAX_IN = 784, MAX_BATCH = 16, MAX_CLASSES = 10, EVAL = 40 };

/* Device 0 streams; 1 and 2 hold the model resident. */
static const char *const spec[DEVS] = {BOARD, "ref:n=2", "ref"};

/* Weights, biases, gradients, optimizer state and step of two models equal bit for bit. */
static void assert_same_model(ntpu_model *a, ntpu_model *b)
{
    assert_same_view(a, b, 1);
}

/* STEPS steps of `batch` samples on every device, then predict and evaluate:
 * all identical to device 0's, which must have streamed (and only it). */
static void train_and_compare(const unsigned *sizes, size_t n_sizes, size_t batch, ntpu_optimizer kind)
{
    const size_t in = sizes[0], classes = sizes[n_sizes - 1];
    static float x[EVAL * MAX_IN], logits[DEVS][MAX_BATCH * MAX_CLASSES];
    static uint8_t y[EVAL];
    fill_data(x, y, EVAL, in, classes);
    ntpu_optim_config opt = ntpu_optim_defaults(kind);
    opt.lr = kind == NTPU_OPT_SGD ? 0.1f : 0.01f; /* large enough to move every weight */
    ntpu_device *dev[DEVS];
    ntpu_model *m[DEVS];
    ntpu_step_result res[DEVS][STEPS];
    double acc[DEVS], loss[DEVS];
    for (int d = 0; d < DEVS; d++) {
        cr_assert_eq(ntpu_open(spec[d], &dev[d]), NTPU_OK, "%s", spec[d]);
        cr_assert_eq(ntpu_model_create(dev[d], sizes, n_sizes, batch, 5, &opt, &m[d]), NTPU_OK, "%s: %s", spec[d],
                     ntpu_last_error(dev[d]));
        if (d == 0)
            cr_assert(ntpu_model_check_resident(m[d]) == NTPU_ERR_UNSUPPORTED &&
                          strstr(ntpu_last_error(dev[d]), "rows"),
                      "the board-sized device must stream this model");
        else
            cr_assert_eq(ntpu_model_check_resident(m[d]), NTPU_OK, "%s holds the model: %s", spec[d],
                         ntpu_last_error(dev[d]));
        for (int s = 0; s < STEPS; s++)
            cr_assert_eq(ntpu_model_train_step(m[d], x + s * batch * in, y + s * batch, batch, &res[d][s]), NTPU_OK,
                         "%s: %s", spec[d], ntpu_last_error(dev[d]));
        cr_assert_eq(ntpu_model_predict(m[d], x, batch - 2, logits[d]), NTPU_OK, "%s", ntpu_last_error(dev[d]));
        cr_assert_eq(ntpu_model_evaluate(m[d], x, y, EVAL, &acc[d], &loss[d]), NTPU_OK, "%s", ntpu_last_error(dev[d]));
    }
    for (int d = 1; d < DEVS; d++) {
        for (int s = 0; s < STEPS; s++) {
            cr_assert(memcmp(&res[0][s].loss, &res[d][s].loss, 4) == 0, "step %d loss: streamed %.9g, %s %.9g", s,
                      (double)res[0][s].loss, spec[d], (double)res[d][s].loss);
            cr_assert_eq(res[0][s].correct, res[d][s].correct);
        }
        assert_same_model(m[0], m[d]);
        assert_same_floats(logits[0], logits[d], (batch - 2) * classes, "logits", n_sizes - 2);
        cr_assert(acc[0] == acc[d] && loss[0] == loss[d], "evaluate: streamed %.6f / %.9g, %s %.6f / %.9g", acc[0],
                  loss[0], spec[d], acc[d], loss[d]);
    }
    for (int d = 0; d < DEVS; d++) {
        ntpu_model_free(m[d]);
        ntpu_close(dev[d]);
    }
}

/* 784-16-10 (Fashion-MNIST's shape) with plain SGD; an odd batch pads rows. */
Test(nn_stream, sgd_784_16_10_batch_13)
{
    train_and_compare((const unsigned[]){784, 16, 10}, 3, 13, NTPU_OPT_SGD);
}

/* Three layers, Adam, and layer sizes that are not multiples of 2 or 8, so
 * every product pads its k and its columns. */
Test(nn_stream, adam_three_layers_odd_sizes)
{
    train_and_compare((const unsigned[]){783, 23, 13, 7}, 4, 13, NTPU_OPT_ADAM);
}

/* A checkpoint of a streamed model loads on both paths, and both continue
 * exactly as the model that never stopped. */
Test(nn_stream, checkpoint_moves_between_paths)
{
    static const unsigned sizes[] = {784, 12, 10};
    enum { B = 9 };
    static float x[3 * B * 784];
    static uint8_t y[3 * B];
    fill_data(x, y, 3 * B, 784, 10);
    char path[] = "/tmp/ntpu_stream_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    ntpu_device *board, *big;
    cr_assert_eq(ntpu_open(BOARD, &board), NTPU_OK);
    cr_assert_eq(ntpu_open("ref", &big), NTPU_OK);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_MOMENTUM);
    ntpu_model *orig, *back[2];
    cr_assert_eq(ntpu_model_create(board, sizes, 3, B, 9, &opt, &orig), NTPU_OK, "%s", ntpu_last_error(board));
    cr_assert_eq(ntpu_model_train_step(orig, x, y, B, NULL), NTPU_OK, "%s", ntpu_last_error(board));
    cr_assert_eq(ntpu_model_save(orig, path, NULL, 0, NULL), NTPU_OK, "%s", ntpu_last_error(board));
    cr_assert_eq(ntpu_model_load(board, path, B, &back[0]), NTPU_OK, "%s", ntpu_last_error(board));
    cr_assert_eq(ntpu_model_load(big, path, B, &back[1]), NTPU_OK, "%s", ntpu_last_error(big));
    cr_assert_eq(ntpu_model_check_resident(back[0]), NTPU_ERR_UNSUPPORTED);
    cr_assert_eq(ntpu_model_check_resident(back[1]), NTPU_OK);
    for (int s = 1; s < 3; s++) {
        cr_assert_eq(ntpu_model_train_step(orig, x + s * B * 784, y + s * B, B, NULL), NTPU_OK);
        for (int k = 0; k < 2; k++)
            cr_assert_eq(ntpu_model_train_step(back[k], x + s * B * 784, y + s * B, B, NULL), NTPU_OK);
    }
    assert_same_model(orig, back[0]);
    assert_same_model(orig, back[1]);
    ntpu_model_free(orig);
    ntpu_model_free(back[0]);
    ntpu_model_free(back[1]);
    ntpu_close(board);
    ntpu_close(big);
    close(fd);
    remove(path);
    char state[sizeof path + 8];
    snprintf(state, sizeof state, "%s.state", path); /* the sidecar with the optimizer's state */
    cr_assert_eq(remove(state), 0);
}
