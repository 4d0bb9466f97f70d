/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing a file whole: what the library's writers (.npy, safetensors) use,
 * and the ntpu tool for the files it writes itself (ntpu train's log and plot).
 * Internal: not installed, nothing here is exported from libntpu.so. Errors are
 * one line in the caller's err buffer (errlen bytes; may be NULL), as the other
 * internal helpers report them; the public calls built on it pass theirs on to
 * ntpu_last_error.
 *
 * An existing regular file, or a new one, is written to a fresh temporary file
 * beside it, flushed to disk and renamed over it, so the path holds either its
 * old contents or the whole new file, never a part. A symbolic link is followed
 * (the file it names is replaced, the link stays). Anything else the path leads
 * to (a device such as /dev/null, a FIFO, or /dev/stdout on a pipe or terminal)
 * is written in place: renaming a file over it would remove it. A regular file
 * reached through an open descriptor (/dev/stdout redirected to a file) is
 * refused: the descriptor would stay on the replaced file. */
#ifndef NTPU_IO_OUTFILE_H
#define NTPU_IO_OUTFILE_H

#include <stddef.h>

#include "ntpu/ntpu.h"

typedef struct ntpu_outfile {
    int fd;       /* write the contents here */
    char *target; /* the file that commit replaces (path, its links followed) */
    char *tmp;    /* the temporary file, or NULL when writing directly */
} ntpu_outfile;

/* Opens path for replacement. Errors (one line in err, naming path):
 * NTPU_ERR_INVALID_ARG (empty path), NTPU_ERR_FILE (a directory, or the OS's
 * reason), NTPU_ERR_NO_MEMORY. On error *o holds nothing to release. */
ntpu_status ntpu_outfile_open(ntpu_outfile *o, const char *path, char *err, size_t errlen);

/* Flushes, closes and puts the new contents in place; on failure the old file
 * is untouched and the temporary one removed. Releases *o either way. */
ntpu_status ntpu_outfile_commit(ntpu_outfile *o, char *err, size_t errlen);

/* Writes all n bytes of buf to fd (an open ntpu_outfile's, or any), retrying
 * short writes and EINTR: 0, or -1 with errno set. */
int ntpu_write_all(int fd, const void *buf, size_t n);
/* Drops the new contents (the old file is untouched) and releases *o. */
void ntpu_outfile_abort(ntpu_outfile *o);

/* Whether ntpu_outfile_open would succeed, without changing anything: for a
 * program that writes its outputs only after long work. */
ntpu_status ntpu_outfile_check(const char *path, char *err, size_t errlen);

/* Whether two output paths name the same regular file (after links; a file
 * that does not exist yet by its directory and name), so that writing one would
 * overwrite the other. Devices, FIFOs and terminals are never "the same": both
 * writes reach them. */
int ntpu_outfile_same(const char *a, const char *b);

#endif
