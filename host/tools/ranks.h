/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu train across mpirun's ranks (ranks.c, decision 0039): every rank trains the same model on its own
 * -d devices; the shards' records are gathered to every rank, which then sums them in shard order and runs
 * the same optimizer step, so all hold the same weights; rank 0 alone prints, evaluates and saves. */
#ifndef NTPU_CLI_RANKS_H
#define NTPU_CLI_RANKS_H

#include <stddef.h>

/* Joins the MPI job when the process was started by mpirun (its environment says so); otherwise, or with
 * one rank, there is nothing to join and every call below is a no-op with this process as rank 0 of 1.
 * 0, or 1 after printing why. */
int ranks_start(void);
int ranks_rank(void);
int ranks_size(void);

/* This process's devices among all ranks': *first is the number of devices of the ranks before it, *workers
 * all ranks' together. Every rank calls it once, before training. 0, or 1 after printing why. */
int ranks_place(size_t devices, size_t *first, size_t *workers);

/* root's *text (a string) to every rank: the others get a malloc'd copy in *text (root keeps its own).
 * Every rank calls it at the same point. 0, or 1 after printing why. */
int ranks_share_text(int root, char **text);
/* The rank whose devices are worker w (after ranks_place). */
int ranks_owner(size_t w);

/* The ntpu_shard_exchange of ntpu/parallel.h over MPI (ctx unused). */
int ranks_exchange(void *ctx, float *records, size_t stride, size_t n_shards, char *why, size_t why_len);

/* From here on SIGTERM and SIGINT (what mpirun sends every rank when one ends) end this rank at once with
 * one line naming a rank on this host whose process is gone, if one is, and `kept` (what is on disk, whole,
 * and how to go on). */
void ranks_watch_signals(const char *kept);

/* Leaves the job: MPI_Finalize after a run that went well (rc 0); after an error the process just exits and
 * mpirun ends the others. */
void ranks_finish(int rc);

#endif
