/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL chains in the golden model: consecutive bf16 MATMULs into one ACC
 * range, each accumulating onto the last, are queued and then run as one
 * pass that keeps each block of rows' accumulators in registers across all
 * their weight tiles (ref_chain.c; the kernel is in matmul_kernel.c). Each
 * output element still sees k ascending, tile after tile, so the bits are
 * those of one MATMUL at a time. Internal to the model. */
#ifndef NTPU_REF_CHAIN_H
#define NTPU_REF_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "ref_conv.h"
#include "ref_threads.h"

/* Tiles a chain queues before it runs: bounds the memory (weights, gathers). */
#define REF_CHAIN_MAX 64u

/* One weight tile of a chain and where its activation rows come from. */
typedef struct ntpu_chain_tile {
    /* Row m of the stream: a + (m - row0) * n; with `transposed`, column
     * (m - row0) % n of the n x n tile at a + ((m - row0) / n) * t_stride. */
    const uint16_t *a;
    size_t row0, t_stride;
    int transposed;
    /* When set, row m's A (or the tile holding it) is at locate(t, m - row0, n)
     * instead: a CONV tile read in place. */
    const uint16_t *(*locate)(const struct ntpu_chain_tile *t, size_t rel, unsigned n);
    const void *ctx;   /* for locate */
    const uint16_t *w; /* n x n bf16, row i = array row i */
    const float *wf;   /* the same, flushed to fp32 (ntpu_chain_tile_prepare) */
    uint32_t a_thr;    /* a nonzero A exponent field <= a_thr leaves the 2^-126 grid */
    uint64_t w_wild;   /* bit i (i < 64): weight row i holds an inf or a NaN */
    int cached;        /* its A may be kept in a ref_a_cache: not rows gathered anew at each flush */
} ntpu_chain_tile;

/* Blocks of A kept converted across chains. The MLP's forward pass reads the
 * same 64 x 784 activations for each of its 32 output tiles, each a chain of
 * its own (an ACT between them); the backward passes do the same. A block is
 * 64 lanes (8 rows of N = 8, or one 8 x 8 tile read transposed) at `key`.
 * A block in UB is still valid when no command wrote its rows since it was
 * filled: the model stamps every UB write (ref_ub_stamps). Without stamps, or
 * outside UB, a use compares its floats with the bf16 lanes as they are now.
 * Internal to the model. */
#define REF_A_BLOCK_LANES 64u
#define REF_A_CACHE_SLOTS 2048u /* one per 128-byte block of the default UB (16384 rows of N = 8) */
#define REF_UB_STAMP_ROWS 8u    /* UB rows that share a write stamp */

/* Which UB rows changed when: stamp[g] is the number of the last write to
 * rows g * REF_UB_STAMP_ROWS .. + REF_UB_STAMP_ROWS - 1 (0: none yet), `now`
 * the number of the latest write; ref.c counts every command that writes UB. */
typedef struct ref_ub_stamps {
    const uint16_t *ub; /* row 0 */
    size_t lanes;       /* of all of UB */
    uint64_t *stamp;    /* one per REF_UB_STAMP_ROWS rows */
    uint64_t now;
} ref_ub_stamps;

typedef struct ref_a_block {
    _Alignas(64) float f[REF_A_BLOCK_LANES]; /* the lanes as fp32, a subnormal flushed to zero of its sign */
    const uint16_t *key;                     /* where they were read; NULL: empty */
    uint32_t e_min;                          /* least (exponent field - 1) over lanes, unsigned: a zero is 2^32 - 1 */
    uint32_t used;                           /* the cache's stamp when a chain block last read it */
    uint64_t seen;                           /* ub->now when the lanes were last known to be those at key */
    uint64_t zero_rows, zero_cols;           /* k all zero: of 8 rows (zero_ks), of the tile's 8 columns (zero_ks_t8) */
} ref_a_block;

typedef struct ref_a_cache {
    ref_a_block slot[REF_A_CACHE_SLOTS]; /* direct-mapped by key */
    uint32_t stamp;                      /* one per chain block: a slot it reads is not refilled until it ends */
    const ref_ub_stamps *ub;             /* the model's UB writes, or NULL: every use compares */
} ref_a_cache;

/* Fills wf (n x n floats, the caller's), a_thr and w_wild from w. */
void ntpu_chain_tile_prepare(ntpu_chain_tile *t, float *wf, unsigned n);

/* Rows m0 .. m1 - 1 of acc (row m at acc + m * n) through every tile in
 * order, bit-exact with one ntpu_mac_bf16_rows (or _t) per tile. m0 is a
 * multiple of 8 and of n. cache: blocks of A kept from earlier chains (NULL:
 * none; one thread at a time per cache). The AVX2 variant when the CPU has it. */
void ntpu_mac_bf16_chain(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0, size_t m1,
                         ref_a_cache *cache);
void ntpu_mac_bf16_chain_generic(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0,
                                 size_t m1, ref_a_cache *cache);

/* The queue of one model. */
typedef struct ref_chain ref_chain;

ref_chain *ref_chain_new(unsigned n);
void ref_chain_free(ref_chain *c);

/* Whether a bf16 MATMUL with these fields extends the queued chain: one is
 * queued, same ACC range, ACCUMULATE set, and there is room. */
int ref_chain_extends(const ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows);

/* Queues a bf16 MATMUL (its ACC rows already cleared when it starts the
 * chain without ACCUMULATE). w: the active n x n tile (copied). UB rows
 * ub_lo .. ub_hi - 1 are what it may read. conv: its CONV geometry or NULL;
 * else rows from ub_addr, or with TRANSPOSE_A tiles `stride` rows apart.
 * Returns 1 when the queue is full (flush it). */
int ref_chain_add(ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows, const uint16_t *w, const uint16_t *ub,
                  unsigned ub_addr, unsigned stride, const ref_conv *conv, unsigned long ub_lo, unsigned long ub_hi);

/* Whether the queue holds something a write of UB rows [addr, addr + rows)
 * (ub) or ACC rows (!ub) would change: then flush first. */
int ref_chain_touches(const ref_chain *c, int ub, unsigned addr, unsigned rows);

/* Runs the queued chain into acc (the model's ACC) and empties the queue.
 * stamps: the model's UB writes (ub is stamps->ub), or NULL. */
void ref_chain_flush(ref_chain *c, uint32_t *acc, const uint16_t *ub, const ref_ub_stamps *stamps, ntpu_ref_pool *pool);

#endif
