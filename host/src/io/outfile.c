/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing a file whole (see outfile.h). */
#define _DEFAULT_SOURCE /* realpath, fchmod, lstat, readlink */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "io/outfile.h"

#define FIFO_WAIT_MS 5000 /* how long a FIFO may be without a reader before a write is refused */

/* Whether name is a temporary file of ntpu_outfile_open's: "<prefix>[...].tmp<PID>.<K>" beside a file
 * whose name starts with prefix (its sidecar's too), or ".ntpu-tmp<PID>.<K>" when prefix is NULL (beside
 * a long name). *pid is its writer's. */
static int temp_name(const char *name, const char *prefix, long *pid)
{
    const char *tag = prefix ? ".tmp" : ".ntpu-tmp", *at = NULL;
    if (prefix && strncmp(name, prefix, strlen(prefix)) != 0)
        return 0;
    for (const char *p = name; (p = strstr(p, tag)) != NULL; p++)
        at = p; /* the last one */
    if (!at || (!prefix && at != name))
        return 0;
    const char *digits = at + strlen(tag);
    char *end;
    if (*digits < '0' || *digits > '9')
        return 0;
    *pid = strtol(digits, &end, 10);
    if (*end != '.' || end[1] < '0' || end[1] > '9')
        return 0;
    strtoul(end + 1, &end, 10);
    return *end == '\0';
}

/* Removes the temporary files that runs killed while writing target left beside it (SIGKILL, a power
 * cut): those whose writer's PID is no running process. Best effort: a file that cannot be removed is
 * left. (A PID is only meaningful on this machine: a directory shared over the network with a writer
 * elsewhere is not supported.) */
static void remove_stale_temps(const char *dname, const char *base)
{
    DIR *d = opendir(dname);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = 0;
        if (!temp_name(e->d_name, base, &pid) && !temp_name(e->d_name, NULL, &pid))
            continue;
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[PATH_MAX];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dname, e->d_name) < sizeof p)
            (void)unlink(p);
    }
    closedir(d);
}

/* Whether the directory part of p lies in /proc (where /dev/stdout and /dev/fd/N lead): its links
 * name open descriptors, not files that can be replaced by name. */
static int in_proc(const char *p)
{
    const char *slash = strrchr(p, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    size_t n = slash ? (size_t)(slash - p) : 0;
    if (n >= sizeof dir)
        return 0;
    memcpy(dir, p, n);
    dir[n] = '\0';
    return realpath(slash ? (n ? dir : "/") : ".", real) && strncmp(real, "/proc/", 6) == 0;
}

/* path with its symbolic links followed by name, also when the last one names a file that does not
 * exist yet (which realpath cannot do); *proc is set when a link lies in /proc. NULL with errno. */
static char *follow_links(const char *path, int *proc)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops <= 40; hops++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode))
            return cur;
        if (in_proc(cur)) {
            *proc = 1;
            return cur;
        }
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link);
        if (n < 0 || (size_t)n >= sizeof link) {
            if (n >= 0)
                errno = ENAMETOOLONG;
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

static ntpu_status failed(char *err, size_t errlen, const char *path, int e)
{
    ntpu_errf(err, errlen, "%s: cannot write: %s", path, e == ENOMEM ? "out of memory" : strerror(e));
    return e == ENOMEM ? NTPU_ERR_NO_MEMORY : NTPU_ERR_FILE;
}

ntpu_status ntpu_outfile_open(ntpu_outfile *o, const char *path, char *err, size_t errlen)
{
    o->fd = -1;
    o->target = o->tmp = NULL;
    if (!path || !*path) {
        ntpu_errf(err, errlen, "cannot write a file with an empty name");
        return NTPU_ERR_INVALID_ARG;
    }
    struct stat ps; /* what the path leads to, every link followed by the kernel */
    int exists = stat(path, &ps) == 0;
    if (exists && S_ISDIR(ps.st_mode)) {
        ntpu_errf(err, errlen, "%s: cannot write: it is a directory", path);
        return NTPU_ERR_FILE;
    }
    if (exists && !S_ISREG(ps.st_mode)) { /* a device, FIFO, pipe or terminal: renaming over it would remove it */
        /* A FIFO without a reader (one that went away) would block the open for good: a reader gets
         * FIFO_WAIT_MS to arrive (one started beside the writer may not have opened it yet), then the
         * write is refused. */
        const int fifo = S_ISFIFO(ps.st_mode);
        o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
        for (int waited = 0; o->fd < 0 && errno == ENXIO && fifo && waited < FIFO_WAIT_MS; waited += 10) {
            struct timespec ten_ms = {0, 10 * 1000 * 1000};
            nanosleep(&ten_ms, NULL);
            o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        }
        if (o->fd < 0 && errno == ENXIO) {
            ntpu_errf(err, errlen, "%s: cannot write: no process has been reading the FIFO for %d s", path,
                      FIFO_WAIT_MS / 1000);
            return NTPU_ERR_FILE;
        }
        if (o->fd < 0)
            return failed(err, errlen, path, errno);
        if (fifo)
            (void)fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) & ~O_NONBLOCK); /* then wait for a slow reader */
        if (!(o->target = strdup(path))) {
            close(o->fd);
            o->fd = -1;
            return failed(err, errlen, path, ENOMEM);
        }
        return NTPU_OK;
    }
    int proc = 0;
    char *target = follow_links(path, &proc);
    if (!target)
        return failed(err, errlen, path, errno);
    struct stat ts;
    if (proc || (exists && (stat(target, &ts) != 0 || ts.st_dev != ps.st_dev || ts.st_ino != ps.st_ino))) {
        /* /dev/stdout redirected to a file: replacing that file would leave the descriptor on the old one */
        ntpu_errf(err, errlen, "%s: cannot replace a file reached through an open descriptor; give its name", path);
        free(target);
        return NTPU_ERR_FILE;
    }
    /* What rename would refuse only after the work: a name too long for the directory, and (sticky
     * directories such as /tmp) a file of another user's. */
    const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;
    size_t dir = (size_t)(base - target), len = strlen(target) + 40;
    char dname[PATH_MAX];
    snprintf(dname, sizeof dname, "%.*s", dir ? (int)dir : 1, dir ? target : ".");
    long name_max = pathconf(dname, _PC_NAME_MAX);
    struct stat ds;
    int e = 0;
    if (strlen(base) > (size_t)(name_max > 0 ? name_max : NAME_MAX))
        e = ENAMETOOLONG;
    else if (exists && geteuid() != 0 && stat(dname, &ds) == 0 && (ds.st_mode & S_ISVTX) && ps.st_uid != geteuid() &&
             ds.st_uid != geteuid())
        e = EPERM;
    if (e) {
        free(target);
        return failed(err, errlen, path, e);
    }
    remove_stale_temps(dname, base);
    /* A fresh name beside the target, so the rename stays on one file system; O_EXCL with a counter
     * steps past files left by a killed run (which may have had this process's ID). */
    char *tmp = malloc(len);
    if (!tmp) {
        free(target);
        return failed(err, errlen, path, ENOMEM);
    }
    int fd = -1;
    for (unsigned attempt = 0; attempt < 1000 && fd < 0; attempt++) {
        if (strlen(base) + 32 <= (size_t)(name_max > 0 ? name_max : NAME_MAX))
            snprintf(tmp, len, "%s.tmp%ld.%u", target, (long)getpid(), attempt);
        else /* a name near the file system's limit: a short one beside it */
            snprintf(tmp, len, "%.*s.ntpu-tmp%ld.%u", (int)dir, target, (long)getpid(), attempt);
        /* An existing file's replacement is private until it has the file's permissions. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        e = errno;
        free(tmp);
        free(target);
        return failed(err, errlen, path, e);
    }
    if (exists)
        (void)fchown(fd, (uid_t)-1, ps.st_gid);         /* the file's group where allowed: its group bits mean it */
    if (exists && fchmod(fd, ps.st_mode & 0777) != 0) { /* not set-id bits */
        e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        free(target);
        return failed(err, errlen, path, e);
    }
    o->fd = fd;
    o->target = target;
    o->tmp = tmp;
    return NTPU_OK;
}

ntpu_status ntpu_outfile_commit(ntpu_outfile *o, char *err, size_t errlen)
{
    int bad = 0, e = 0;
    if (o->tmp && fsync(o->fd) != 0) { /* a device written in place has nothing to keep whole */
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

int ntpu_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
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
    struct stat sb;
    if (path && *path && stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode)) {
        /* Opening a FIFO to try it would wait for a reader. */
        if (access(path, W_OK) == 0)
            return NTPU_OK;
        return failed(err, errlen, path, errno);
    }
    if (path && *path && stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) {
        /* A device, terminal, pipe or socket: opened as the write will open it (a socket's /proc link
         * cannot be), without waiting. */
        int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return failed(err, errlen, path, errno);
        close(fd);
        return NTPU_OK;
    }
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
    int proc = 0;
    char *t = follow_links(p, &proc);
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
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if ((ea && !S_ISREG(sa.st_mode)) || (eb && !S_ISREG(sb.st_mode)))
        return 0; /* two outputs to one terminal or /dev/null are both written, in turn */
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    int same = ca && cb && strcmp(ca, cb) == 0;
    free(ca);
    free(cb);
    return same;
}
