/* SPDX-License-Identifier: Apache-2.0 */
/* Trains a 784-256-10 MLP on Fashion-MNIST on the nanoTPU and reports the test
 * accuracy after each epoch, then runs the trained model in int8.
 *
 *   cc train_mlp.c $(pkg-config --cflags --libs ntpu) -o train_mlp
 *   ./train_mlp [device] [train samples] [epochs]      (defaults: ref 10000 2)
 */
#include <stdio.h>
#include <stdlib.h>

#include <ntpu/data.h>
#include <ntpu/nn.h>

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "ref";
    long limit = argc > 2 ? atol(argv[2]) : 10000;
    int epochs = argc > 3 ? atoi(argv[3]) : 2;
    if (argc > 4 || limit < 1 || epochs < 1) {
        fprintf(stderr, "usage: train_mlp [device] [train samples >= 1] [epochs >= 1]\n");
        return 1;
    }
    const char *dir = "/usr/share/datasets/fashion-mnist";

    ntpu_dataset train, test; /* files, not a device: their errors are told by ntpu_last_error(NULL) */
    if (ntpu_dataset_load(dir, "train", (size_t)limit, &train) != NTPU_OK ||
        ntpu_dataset_load(dir, "test", 0, &test) != NTPU_OK) {
        fprintf(stderr, "%s\n", ntpu_last_error(NULL));
        return 1;
    }
    ntpu_device *dev;
    if (ntpu_open(device, &dev) != NTPU_OK) {
        fprintf(stderr, "cannot open %s: %s\n", device, ntpu_last_error(dev));
        ntpu_close(dev);
        return 1;
    }

    const unsigned sizes[] = {784, 256, 10};
    const size_t batch = 64;
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM); /* lr 1e-3 */
    ntpu_model *model;
    if (ntpu_model_create(dev, sizes, 3, batch, 0, &opt, &model) != NTPU_OK)
        goto fail;

    for (int e = 0; e < epochs; e++) {
        double loss = 0;
        for (size_t at = 0; at < train.count; at += batch) {
            size_t n = train.count - at < batch ? train.count - at : batch;
            ntpu_step_result r;
            if (ntpu_model_train_step(model, train.images + at * 784, train.labels + at, n, &r) != NTPU_OK)
                goto fail;
            loss += r.loss * (double)n;
        }
        double accuracy;
        if (ntpu_model_evaluate(model, test.images, test.labels, test.count, &accuracy, NULL) != NTPU_OK)
            goto fail;
        printf("epoch %d: train loss %.4f, test accuracy %.4f\n", e + 1, loss / (double)train.count, accuracy);
    }

    ntpu_qmodel *q; /* int8: calibrate on up to 1000 training images */
    double accuracy8;
    if (ntpu_qmodel_create(model, train.images, train.count < 1000 ? train.count : 1000, &q) != NTPU_OK ||
        ntpu_qmodel_evaluate(q, test.images, test.labels, test.count, &accuracy8) != NTPU_OK)
        goto fail;
    printf("int8 inference: test accuracy %.4f\n", accuracy8);
    ntpu_qmodel_free(q);
    ntpu_model_free(model);
    ntpu_close(dev);
    ntpu_dataset_free(&train);
    ntpu_dataset_free(&test);
    return 0;
fail:
    fprintf(stderr, "%s\n", ntpu_last_error(dev));
    return 1;
}
