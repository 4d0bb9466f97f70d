/* SPDX-License-Identifier: Apache-2.0 */
/* LD_PRELOAD shim for tests/cli/train_kill.sh: a full disk for the files whose path contains
 * $NTPU_TEST_ENOSPC. write() and fsync() on such a file fail with ENOSPC, as on a file system with no
 * free blocks; every other descriptor is left alone. Built by the test itself. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int on_full_disk(int fd)
{
    const char *want = getenv("NTPU_TEST_ENOSPC");
    char link[64], path[PATH_MAX];
    if (!want || !*want)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    return strstr(path, want) != NULL;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (on_full_disk(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, buf, n);
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (on_full_disk(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd);
}
