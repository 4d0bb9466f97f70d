/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu train across mpirun's ranks (ranks.h). One collective a step, an all-gather of the shards'
 * records: every rank then holds every shard and reduces them itself in shard order, so no rank waits for
 * another's optimizer step and none needs the weights sent (decision 0039). When a rank dies, mpirun
 * sends the others SIGTERM; they answer with one line naming the lost rank, found by its process id on
 * this host (mpirun has reaped it by then), and exit at once: the checkpoint rank 0 last wrote is whole. */
#include "ranks.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct peer {
    int32_t pid;
    char host[64];
} peer;

static int active, rank_, size_ = 1;
static peer *peers;
static size_t *dev_first, *dev_n; /* each rank's first worker and device count */
static size_t workers_;
static char (*lost_line)[256]; /* "ntpu: rank R (pid P) was lost ...", made before any signal */
static char stop_line[160];

int ranks_rank(void)
{
    return rank_;
}

int ranks_size(void)
{
    return size_;
}

int ranks_start(void)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (!n || atoi(n) <= 1)
        return 0;
    int provided;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return fail("mpirun started this process, but it cannot join the MPI job");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* errors come back as codes: one line each */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    active = 1;
    peer me = {.pid = (int32_t)getpid()};
    gethostname(me.host, sizeof me.host - 1);
    peers = calloc((size_t)size_, sizeof *peers);
    lost_line = calloc((size_t)size_, sizeof *lost_line);
    dev_first = calloc((size_t)size_, sizeof *dev_first);
    dev_n = calloc((size_t)size_, sizeof *dev_n);
    if (!peers || !lost_line || !dev_first || !dev_n)
        return fail("out of memory");
    if (MPI_Allgather(&me, sizeof me, MPI_BYTE, peers, sizeof me, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS)
        return fail("the ranks did not all answer at the start");
    return 0;
}

int ranks_place(size_t devices, size_t *first, size_t *workers)
{
    *first = 0;
    *workers = devices;
    if (!active)
        return 0;
    unsigned long long mine = devices, *all = calloc((size_t)size_, sizeof *all);
    if (!all)
        return fail("out of memory");
    int rc = MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    workers_ = 0;
    for (int r = 0; r < size_ && rc == MPI_SUCCESS; r++) {
        dev_first[r] = workers_;
        dev_n[r] = (size_t)all[r];
        workers_ += (size_t)all[r];
    }
    free(all);
    if (rc != MPI_SUCCESS)
        return fail("the ranks did not all answer with their devices");
    *first = dev_first[rank_];
    *workers = workers_;
    return 0;
}

int ranks_owner(size_t w)
{
    int r = 0;
    while (active && r + 1 < size_ && dev_first[r + 1] <= w)
        r++;
    return r;
}

/* The rank whose devices run shard i (worker i mod workers). */
static int owner(size_t i)
{
    return ranks_owner(i % workers_);
}

int ranks_share_text(int root, char **text)
{
    if (!active)
        return 0;
    unsigned long long n = rank_ == root ? strlen(*text) : 0;
    if (MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD) != MPI_SUCCESS)
        return fail("rank %d did not send its results", root);
    if (n > INT32_MAX)
        return fail("rank %d's results are more than 2 GiB", root);
    if (rank_ != root && !(*text = malloc((size_t)n + 1)))
        return fail("out of memory");
    if (MPI_Bcast(*text, (int)n, MPI_CHAR, root, MPI_COMM_WORLD) != MPI_SUCCESS)
        return fail("rank %d did not send its results", root);
    (*text)[n] = 0;
    return 0;
}

int ranks_exchange(void *ctx, float *records, size_t stride, size_t n_shards, char *why, size_t why_len)
{
    (void)ctx;
    int *count = calloc((size_t)size_, sizeof *count), *displ = calloc((size_t)size_, sizeof *displ);
    const size_t bytes = stride * sizeof *records;
    float *all = malloc(n_shards * bytes), *mine = malloc(n_shards * bytes);
    int rc = -1;
    if (!count || !displ || !all || !mine) {
        snprintf(why, why_len, "rank %d: out of memory for the shards' records", rank_);
        goto out;
    }
    size_t at = 0, own = 0;
    for (int r = 0; r < size_; r++) {
        size_t n = 0;
        for (size_t i = 0; i < n_shards; i++)
            n += owner(i) == r;
        if (n * bytes > (size_t)INT32_MAX) {
            snprintf(why, why_len, "the shards' records of rank %d are more than 2 GiB a step", r);
            goto out;
        }
        count[r] = (int)(n * bytes);
        displ[r] = (int)at;
        at += n * bytes;
    }
    for (size_t i = 0; i < n_shards; i++)
        if (owner(i) == rank_)
            memcpy((char *)mine + own++ * bytes, records + i * stride, bytes);
    if (MPI_Allgatherv(mine, count[rank_], MPI_BYTE, all, count, displ, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS) {
        snprintf(why, why_len, "rank %d: the shards of the other ranks did not come", rank_);
        goto out;
    }
    for (int r = 0; r < size_; r++) { /* rank r's shards in shard order, as it packed them */
        const char *from = (const char *)all + displ[r];
        for (size_t i = 0; i < n_shards; i++)
            if (owner(i) == r) {
                memcpy(records + i * stride, from, bytes);
                from += bytes;
            }
    }
    rc = 0;
out:
    free(count);
    free(displ);
    free(all);
    free(mine);
    return rc;
}

/* A process on this host that is no more (or a zombie not yet reaped). Async-signal-safe. */
static int gone(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    char path[32] = "/proc/", stat[256];
    size_t at = 6;
    char digits[12];
    size_t nd = 0;
    for (unsigned v = (unsigned)pid; v || !nd; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        path[at++] = digits[--nd];
    memcpy(path + at, "/stat", 6);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0)
        return 1;
    stat[n] = 0;
    const char *paren = strrchr(stat, ')'); /* "pid (name) S ...": the state after the name */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static void on_stop(int sig)
{
    (void)sig;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    const char *line = stop_line;
    for (int r = 0; r < size_; r++)
        if (r != rank_ && !strcmp(peers[r].host, host) && gone(peers[r].pid)) {
            line = lost_line[r];
            break;
        }
    ssize_t w = write(STDERR_FILENO, line, strlen(line));
    (void)w;
    _exit(1);
}

void ranks_watch_signals(const char *kept)
{
    if (!active)
        return;
    for (int r = 0; r < size_; r++) /* made now: the handler may only write them */
        snprintf(lost_line[r], sizeof lost_line[r], "ntpu: rank %d: rank %d (pid %d) was lost; stopping (%s)\n", rank_,
                 r, (int)peers[r].pid, kept);
    snprintf(stop_line, sizeof stop_line, "ntpu: rank %d: stopped by a signal (mpirun ends every rank when one ends)\n",
             rank_);
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);
}

void ranks_finish(int rc)
{
    if (active && rc == 0)
        MPI_Finalize();
}
