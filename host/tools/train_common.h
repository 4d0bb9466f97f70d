/* SPDX-License-Identifier: Apache-2.0 */
/* What ntpu train and ntpu tune share (train_common.c). */
#ifndef NTPU_CLI_TRAIN_COMMON_H
#define NTPU_CLI_TRAIN_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/outfile.h"

/* path (the value of option opt) can be written: 0, or 1 after printing why. Checked before the long part. */
int check_output(const char *opt, const char *path);
/* path opened for replacement as a stream (io/outfile.h): NULL after printing the error. out_close puts it
 * in place: 0, or 1 after printing the error (the old file is then untouched). */
FILE *out_open(const char *opt, const char *path, ntpu_outfile *o);
int out_close(const char *opt, const char *path, FILE *f, ntpu_outfile *o);
/* Epoch e's order of n samples, from the seed and e alone (a resumed run sees the same). */
void epoch_order(uint64_t seed, uint64_t epoch, size_t *idx, size_t n);

#endif
