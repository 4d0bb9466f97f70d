/* Replacing a file whole (see ntpu/outfile.h). */
#define _DEFAULT_SOURCE /* realpath, fchmod, lstat, readlink */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "ntpu/outfile.h"

/* path with its symbolic links followed, also when the last one names a file
 * that does not exist yet (which realpath cannot do). NULL with errno set. */
static char *follow_links(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode))
            return cur;
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) {
            free(cur);
            return NULL;
        }
        link[n] = '\0';
        const char *slash = strrchr(cur, '/');
        size_t dir = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1; /* a relative link: from its directory */
        char *next = malloc(dir + (size_t)n + 1);
        if (next) {
            memcpy(next, cur, dir);
            memcpy(next + dir, link, (size_t)n + 1);
        }
        free(cur);
        cur = next;
    }
    if (cur) {
        free(cur);
        errno = ELOOP;
    }
    return NULL;
}

ntpu_status ntpu_outfile_open(ntpu_outfile *o, const char *path, char *err, size_t errlen)
{
    o->fd = -1;
    o->target = o->tmp = NULL;
    if (!path || !*path) {
        ntpu_errf(err, errlen, "cannot write a file with an empty name");
        return NTPU_ERR_INVALID_ARG;
    }
    char *target = follow_links(path);
    if (!target) {
        int e = errno;
        ntpu_errf(err, errlen, "%s: cannot write: %s", path, e == ENOMEM ? "out of memory" : strerror(e));
        return e == ENOMEM ? NTPU_ERR_NO_MEMORY : NTPU_ERR_FILE;
    }
    struct stat sb;
    int exists = stat(target, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode)) {
        ntpu_errf(err, errlen, "%s: cannot write: it is a directory", path);
        free(target);
        return NTPU_ERR_FILE;
    }
    if (exists && !S_ISREG(sb.st_mode)) { /* a device or a FIFO: renaming over it would remove it */
        o->fd = open(target, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0) {
            ntpu_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            free(target);
            return NTPU_ERR_FILE;
        }
        o->target = target;
        return NTPU_OK;
    }
    /* A fresh name beside the target, so the rename stays on one file system; O_EXCL with a counter
     * steps past files left by a killed run (which may have had this process's ID). */
    size_t len = strlen(target) + 40;
    char *tmp = malloc(len);
    if (!tmp) {
        free(target);
        ntpu_errf(err, errlen, "%s: out of memory", path);
        return NTPU_ERR_NO_MEMORY;
    }
    int fd = -1;
    for (unsigned attempt = 0; attempt < 1000 && fd < 0; attempt++) {
        snprintf(tmp, len, "%s.tmp%ld.%u", target, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        ntpu_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        free(target);
        return NTPU_ERR_FILE;
    }
    if (exists)
        (void)fchmod(fd, sb.st_mode & 07777); /* the replacement keeps the file's permissions */
    o->fd = fd;
    o->target = target;
    o->tmp = tmp;
    return NTPU_OK;
}

ntpu_status ntpu_outfile_commit(ntpu_outfile *o, char *err, size_t errlen)
{
    int bad = 0, e = 0;
    if (o->tmp && fsync(o->fd) != 0) { /* a device written directly may not sync: nothing to keep whole */
        bad = 1;
        e = errno;
    }
    if (close(o->fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->fd = -1;
    if (!bad && o->tmp && rename(o->tmp, o->target) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad)
        ntpu_errf(err, errlen, "%s: cannot write: %s", o->target, strerror(e));
    ntpu_outfile_abort(o);
    return bad ? NTPU_ERR_FILE : NTPU_OK;
}

void ntpu_outfile_abort(ntpu_outfile *o)
{
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp)
        unlink(o->tmp); /* after a commit's rename there is nothing left by that name */
    free(o->tmp);
    free(o->target);
    o->fd = -1;
    o->tmp = o->target = NULL;
}

ntpu_status ntpu_outfile_check(const char *path, char *err, size_t errlen)
{
    char *target = path && *path ? follow_links(path) : NULL;
    struct stat sb;
    if (target && stat(target, &sb) == 0 && !S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) {
        /* Opening a FIFO to try it would wait for a reader. */
        int ok = access(target, W_OK) == 0;
        if (!ok)
            ntpu_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        free(target);
        return ok ? NTPU_OK : NTPU_ERR_FILE;
    }
    free(target);
    ntpu_outfile o;
    ntpu_status st = ntpu_outfile_open(&o, path, err, errlen);
    if (st == NTPU_OK)
        ntpu_outfile_abort(&o);
    return st;
}

/* The directory part of p (links followed) made absolute, then the name: one
 * spelling per file, also for one that does not exist yet. */
static char *canonical(const char *p)
{
    char *t = follow_links(p);
    if (!t)
        return NULL;
    char *slash = strrchr(t, '/');
    const char *dir = ".", *name = t;
    if (slash) {
        name = slash + 1;
        *slash = '\0';
        dir = slash == t ? "/" : t;
    }
    char real[PATH_MAX], *out = NULL;
    if (realpath(dir, real)) {
        size_t n = strlen(real) + strlen(name) + 2;
        if ((out = malloc(n)))
            snprintf(out, n, "%s/%s", real, name);
    }
    free(t);
    return out;
}

int ntpu_outfile_same(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    int same = ca && cb && strcmp(ca, cb) == 0;
    free(ca);
    free(cb);
    return same;
}
