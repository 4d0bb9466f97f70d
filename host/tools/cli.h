/* SPDX-License-Identifier: Apache-2.0 */
/* The ntpu command-line tool's shared plumbing (cli.c) and its commands. */
#ifndef NTPU_CLI_H
#define NTPU_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ntpu/ntpu.h"
#include "ntpu/parallel.h"

/* Options every command understands. */
typedef struct common {
    const char *device; /* NULL: the library's default (NTPU_DEVICE, else vsim) */
    /* Every -d in order (device is the first): a command that takes several sets max_devices
     * before parse_args; for the others a second -d is an error. */
    const char *devices[NTPU_MAX_DEVICES];
    size_t n_devices, max_devices;
    int json;
    int help;
} common;

/* One command-specific option: a flag (val NULL) or one taking a value. */
typedef struct option {
    const char *name; /* "--dtype" */
    char short_name;  /* 'o', or 0 */
    const char **val;
    int *flag;
} option;

/* Prints "ntpu: <message>" on stderr; returns 1 (the exit status). */
__attribute__((format(printf, 1, 2))) int fail(const char *fmt, ...);

/* s as a whole decimal number in lo..hi, digits only (no sign, space or 0x): 0, or -1. */
int whole_number(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* The same for option opt's value: 0, or 1 after printing the error. */
int parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* Parses argv (after the command name) into the common options, the command's
 * options and up to max_pos positional arguments. "--opt=value", "-oVALUE" and
 * "--" work as usual. Returns 0, or 1 after printing the error. */
int parse_args(int argc, char **argv, common *cm, const option *opts, size_t nopts, char **pos, int max_pos, int *npos);

void json_str(FILE *f, const char *s);                    /* a JSON string literal of s */
const char *grouped(uint64_t v, char *buf, size_t len);   /* 1234567 -> "1,234,567" */
const char *bytes_str(uint64_t v, char *buf, size_t len); /* 1536 -> "1.5 KiB" */
double now_s(void);                                       /* monotonic seconds */
ntpu_device *open_device(const char *device);             /* NULL after printing why */
/* device with --threads T added (ref only: ref:threads=T); device itself when threads is NULL; NULL after
 * printing why it cannot be. buf holds the result. */
const char *device_with_threads(const char *device, const char *threads, char *buf, size_t len);
const char *dtype_name(ntpu_dtype d); /* "int8" or "bf16" */

/* The commands (argv: what follows the command's name). */
int cmd_train(common *cm, int argc, char **argv);
int cmd_eval(common *cm, int argc, char **argv);
int cmd_selftest(common *cm, int argc, char **argv);
int cmd_bench(common *cm, int argc, char **argv);
int cmd_flash(common *cm, int argc, char **argv);
int cmd_tune(common *cm, int argc, char **argv);

#endif
