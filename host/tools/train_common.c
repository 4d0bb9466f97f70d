/* SPDX-License-Identifier: Apache-2.0 */
/* What ntpu train and ntpu tune share: their output files, replaced whole, and the order of an epoch's
 * samples (train_common.h). */
#include "train_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* An output that cannot be written must fail now, not after the first epoch. */
int check_output(const char *opt, const char *path)
{
    char err[600];
    return ntpu_outfile_check(path, err, sizeof err) == NTPU_OK ? 0 : fail("%s: %s", opt, err);
}

/* Opens path for replacement as a stdio stream (io/outfile.h, the library's own); NULL after
 * printing the error. */
FILE *out_open(const char *opt, const char *path, ntpu_outfile *o)
{
    char err[600];
    if (ntpu_outfile_open(o, path, err, sizeof err) != NTPU_OK) {
        fail("%s: %s", opt, err);
        return NULL;
    }
    int fd = dup(o->fd); /* the stream closes its own descriptor; commit closes o->fd */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fail("%s: cannot write %s: %s", opt, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        ntpu_outfile_abort(o);
    }
    return f;
}

/* Closes the stream and puts the file in place: 0, or 1 after printing the error
 * (the old file is then untouched). */
int out_close(const char *opt, const char *path, FILE *f, ntpu_outfile *o)
{
    char err[600];
    int bad = ferror(f), e = 0;
    if (fclose(f) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        ntpu_outfile_abort(o);
        return fail("%s: cannot write %s: %s", opt, path, e ? strerror(e) : "write error");
    }
    return ntpu_outfile_commit(o, err, sizeof err) == NTPU_OK ? 0 : fail("%s: %s", opt, err);
}

/* Epoch e's order of the samples: Fisher-Yates from a splitmix64 stream that
 * depends only on the seed and e, so a resumed run sees the same order. */
void epoch_order(uint64_t seed, uint64_t epoch, size_t *idx, size_t n)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull ^ (epoch + 1) * 0xD1B54A32D192ED03ull;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = n; i > 1; i--) {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        size_t j = (size_t)(z % i), t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}
