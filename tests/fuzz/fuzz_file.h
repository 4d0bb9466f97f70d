/* SPDX-License-Identifier: Apache-2.0 */
/* For the fuzz targets whose readers take a path: the input written to a file in a directory of this
 * process's own under /dev/shm (or /tmp), rewritten on every run, so the readers see it exactly as a
 * user's file. */
#ifndef NTPU_FUZZ_FILE_H
#define NTPU_FUZZ_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory, made on first use and removed at exit. */
static const char *fuzz_dir(void);

static char fuzz_dir_path[64];

static void fuzz_dir_remove(void)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir_path);
    if (system(cmd) != 0) {
        fprintf(stderr, "fuzz: could not remove %s\n", fuzz_dir_path);
    }
}

static const char *fuzz_dir(void)
{
    if (!fuzz_dir_path[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/ntpu-fuzz-XXXXXX", base);
        if (!mkdtemp(fuzz_dir_path)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir_path;
}

/* Writes n bytes to DIR/name (replacing it); the path goes to path. */
static void fuzz_write(const char *name, const uint8_t *data, size_t n, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror("fuzz: writing the input");
        abort();
    }
}

#endif
