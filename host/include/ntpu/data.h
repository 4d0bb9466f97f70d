/* SPDX-License-Identifier: Apache-2.0 */
/* Datasets for training: the IDX format of the MNIST family (plain or gzip'd). */
#ifndef NTPU_DATA_H
#define NTPU_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/ntpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A labelled image set. Owns its arrays; release with ntpu_dataset_free. */
typedef struct ntpu_dataset {
    size_t count;     /* samples */
    size_t rows;      /* image height in pixels */
    size_t cols;      /* image width in pixels */
    size_t features;  /* rows * cols */
    unsigned classes; /* 1 + the largest label */
    float *images;    /* count x features, row-major, pixels scaled to [0, 1] */
    uint8_t *labels;  /* count labels */
} ntpu_dataset;

/* Loads one split of an IDX directory: split "train" reads
 * DIR/train-images-idx3-ubyte and DIR/train-labels-idx1-ubyte, split "test" the
 * t10k-* files; each may also be gzip'd with a .gz suffix. limit > 0 keeps only
 * the first `limit` samples. On failure *out is empty and ntpu_last_error(NULL)
 * says in one line which file and what is wrong with it.
 * Errors: NTPU_ERR_INVALID_ARG, NTPU_ERR_FILE (missing or unreadable),
 * NTPU_ERR_FORMAT (bad magic, wrong type or rank, truncated, images and labels
 * disagree), NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_dataset_load(const char *dir, const char *split, size_t limit, ntpu_dataset *out);

/* Frees the arrays and zeroes *ds. NULL is a no-op. */
NTPU_API void ntpu_dataset_free(ntpu_dataset *ds);

#ifdef __cplusplus
}
#endif

#endif
