/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu tune's search space and its trials' settings (tune_space.c). A space is items separated by white
 * space (on the command line, or lines of a file with # comments): KEY=VALUES, VALUES either a list
 * (a,b,c: one of them, uniformly) or a range, log:A:B (log-uniform) or uniform:A:B. Keys: lr, batch,
 * optimizer, weight_decay, momentum, hidden (an MLP's hidden widths, several joined by '-': 256-128).
 * A key not given keeps ntpu train's default. */
#ifndef NTPU_CLI_TUNE_SPACE_H
#define NTPU_CLI_TUNE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/nn.h"
#include "ntpu/optim.h"

enum { TUNE_KEYS = 6, TUNE_CHOICES = 16, TUNE_HIDDEN = NTPU_MAX_LAYERS - 1 };

typedef struct tune_range {
    int given; /* 0: the default */
    int kind;  /* 0 a list, 1 log-uniform, 2 uniform */
    double lo, hi;
    char choice[TUNE_CHOICES][40];
    size_t n;
} tune_range;

typedef struct tune_space {
    tune_range key[TUNE_KEYS]; /* in the order of tune_key_names */
} tune_space;

/* One trial's settings. */
typedef struct tune_config {
    float lr, weight_decay, momentum;
    unsigned batch;
    ntpu_optimizer optimizer;
    unsigned hidden[TUNE_HIDDEN];
    size_t n_hidden;
} tune_config;

extern const char *const tune_key_names[TUNE_KEYS];

/* Parses text (what: "--space" or the file's name, for errors) into *sp, adding to what it holds: 0, or 1
 * after printing the first error. */
int tune_space_parse(const char *what, const char *text, tune_space *sp);
/* Trial t's settings, from the study's seed and t alone: every key drawn in one order from one stream. */
void tune_space_sample(const tune_space *sp, uint64_t study_seed, uint64_t t, tune_config *out);
/* The space as canonical text (the journal's header holds it) and a config as "lr=... batch=...". */
void tune_space_format(const tune_space *sp, char *buf, size_t len);
void tune_config_format(const tune_config *c, char *buf, size_t len);

#endif
