/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL chains in the golden model: consecutive bf16 MATMULs into one ACC
 * range, each accumulating onto the last, are queued and then run as one
 * pass that keeps each block of rows' accumulators in registers across all
 * their weight tiles (ref_chain.c; the kernel is in matmul_kernel.c). Each
 * output element still sees k ascending, tile after tile, so the bits are
 * those of one MATMUL at a time. Two chains into disjoint ACC ranges may be
 * queued at once, their MATMULs interleaved (two output tiles over the same
 * activations, as the host issues them); when their tiles read the same A
 * they run as one pass over it, sixteen columns wide. Internal to the model. */
#ifndef NTPU_REF_CHAIN_H
#define NTPU_REF_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "ref_conv.h"
#include "ref_threads.h"

/* Tiles a chain queues before it runs: bounds the memory (weights, gathers). */
#define REF_CHAIN_MAX 128u
/* Chains queued at once, each into its own ACC range. */
#define REF_CHAIN_WAYS 2u

/* One weight tile of a chain and where its activation rows come from. */
typedef struct ntpu_chain_tile {
    /* Row m of the stream: a + m * n; with `transposed`, column m % n of
     * the n x n tile at a + (m / n) * t_stride. */
    const uint16_t *a;
    size_t t_stride;
    int transposed;
    /* When set, row m's A (or the tile holding it) is at locate(t, m, n)
     * instead: a CONV tile. Valid until the thread's next call; a row m a
     * multiple of 8 starts 8 rows (or the tile holding them). */
    const uint16_t *(*locate)(const struct ntpu_chain_tile *t, size_t rel, unsigned n);
    const void *ctx;   /* for locate */
    const uint16_t *w; /* n x n bf16, row i = array row i */
    const float *wf;   /* the same, flushed to fp32 (ntpu_chain_tile_prepare); NULL until converted */
    float *wf_room;    /* where it goes */
    uint32_t a_thr;    /* a nonzero A exponent field <= a_thr leaves the 2^-126 grid */
    uint64_t w_wild;   /* bit i (i < 64): weight row i holds an inf or a NaN */
    int w_big;         /* some finite weight is >= 2^64: a product could overflow (no fused multiply-add) */
    int cached;        /* its A may be kept in a ref_a_cache (a block read in place in UB) */
} ntpu_chain_tile;

/* A kept converted across chains. The MLP's forward pass reads the same
 * 64 x 784 activations for each of its 32 output tiles, each a chain of its
 * own (an ACT between them); the backward passes do the same, and a conv's
 * weight gradient reads each block of its input once per tap and output
 * tile. So the cache mirrors UB: block g (rows 8g .. 8g + 7 of N = 8, which
 * a transposed tile also is) as fp32 with what the kernel checks of it,
 * converted when first read and valid until a command writes its rows (the
 * model reports every UB write: ref_chain_ub_written). A block that is not
 * one of these (outside UB, not 8-row aligned, gathered rows) is converted
 * each time. Internal to the model. */
#define REF_A_BLOCK_LANES 64u

/* What the kernel checks of one block. */
typedef struct ref_a_facts {
    uint32_t e_min;               /* least (exponent field - 1) over lanes, unsigned: a zero is 2^32 - 1 */
    uint8_t big;                  /* some finite lane is >= 2^64 (see REF_BIG_FIELD) */
    uint8_t zero_rows, zero_cols; /* bit k: every A value of k is +-0, of the 8 rows, of the tile's 8 columns */
    uint8_t valid;                /* f and the facts hold the lanes as they are now */
} ref_a_facts;

typedef struct ref_a_cache {
    const uint16_t *ub; /* UB's row 0; NULL: nothing kept */
    size_t blocks;      /* of UB, mirrored */
    float *f;           /* blocks x 64 lanes, 64-byte aligned */
    ref_a_facts *facts; /* blocks */
    uint32_t *pairs;    /* blocks x 64: f as ref_dot_pairs (matmul_dot.h) makes it; NULL without that kernel */
} ref_a_cache;

/* Makes c mirror UB at ub (lanes of it; NULL: nothing), keeping what it holds
 * when it mirrors that already. 0 when memory is short (c then keeps nothing). */
int ref_a_cache_mirror(ref_a_cache *c, const uint16_t *ub, size_t lanes);

/* Frees what a cache holds (not the cache). */
void ref_a_cache_release(ref_a_cache *c);

/* A finite A or W value with this exponent field or more (>= 2^64) is big.
 * When neither factor is big, a product is below 2^128, so it is exact in
 * fp32 (on the 2^-126 grid, as the chains check) and a fused multiply-add
 * gives the bits of the multiply and the add; only an overflowing product
 * (inf after the multiply, finite inside an fma) would tell them apart. */
#define REF_BIG_FIELD 191u

/* Fills a_thr, w_wild and w_big from w, and wf (n x n floats, the
 * caller's); without `convert`, wf stays NULL where it can (n a multiple of
 * 8, no lane wild) until ntpu_chain_tile_convert: the dot-product kernel
 * reads w itself (ntpu_chain_dot_fits). */
void ntpu_chain_tile_prepare(ntpu_chain_tile *t, float *wf, unsigned n, int convert);

/* Fills t->wf if it is NULL. */
void ntpu_chain_tile_convert(ntpu_chain_tile *t, unsigned n);

/* Whether ntpu_mac_bf16_chainw with dot set runs these chains on the CPU's
 * bf16 dot product (matmul_dot.h), reading no tile's wf: two of them, N = 8,
 * all tiles transposed or none, no weight inf, NaN or big. Else the caller
 * converts every tile (ntpu_chain_tile_convert) first. */
int ntpu_chain_dot_fits(const ntpu_chain_tile *const *tiles, unsigned ways, unsigned count, unsigned n);

/* Rows m0 .. m1 - 1 of acc (row m at acc + m * n) through every tile in
 * order, bit-exact with one ntpu_mac_bf16_rows (or _t) per tile. m0 is a
 * multiple of 8 and of n. cache: blocks of A kept from earlier chains (NULL:
 * none; one thread at a time per cache). zero: the rows start at +0.0 (a
 * chain whose first MATMUL does not accumulate), whatever acc holds; the
 * kernel starts its registers there instead of clearing and reading ACC.
 * The AVX2 variant when the CPU has it. */
void ntpu_mac_bf16_chain(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0, size_t m1,
                         ref_a_cache *cache, int zero);
void ntpu_mac_bf16_chain_generic(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0,
                                 size_t m1, ref_a_cache *cache, int zero);

/* Two chains of `count` tiles each over the same rows, into acc0 and acc1
 * (disjoint), tile e of both reading the same A (a, t_stride, transposed; no
 * locate): bit-exact with one ntpu_mac_bf16_chain each. With N = 8 on AVX2
 * each block of A is converted (or found) once for both. */
void ntpu_mac_bf16_chain2(uint32_t *acc0, uint32_t *acc1, const ntpu_chain_tile *tiles0, const ntpu_chain_tile *tiles1,
                          unsigned count, unsigned n, size_t m0, size_t m1, ref_a_cache *cache, int zero);

/* ways (at most REF_CHAIN_WAYS) chains of `count` tiles each over the same
 * rows, chain k into acc[k] (disjoint) through tiles[k], tile e of every chain
 * reading the same A: bit-exact with one ntpu_mac_bf16_chain each. With N = 8
 * and AVX-512, a pair runs as one pass, its sixteen columns in one register
 * (32 of them: a block's eight rows need no spill); else in pairs with AVX2
 * (ntpu_mac_bf16_chain2). */
/* dot: ntpu_chain_dot_fits holds, and the chains run on the dot product
 * (their tiles' wf unread); else every tile has its wf. */
void ntpu_mac_bf16_chainw(uint32_t *const *acc, const ntpu_chain_tile *const *tiles, unsigned ways, unsigned count,
                          unsigned n, size_t m0, size_t m1, ref_a_cache *cache, int zero, int dot);

/* The queue of one model. */
typedef struct ref_chain ref_chain;

ref_chain *ref_chain_new(unsigned n);
void ref_chain_free(ref_chain *c);
/* Whether paired chains may run on the CPU's bf16 dot product (matmul_dot.c;
 * on by default where it agrees with the device): the same bits either way. */
void ref_chain_set_dot(ref_chain *c, int on);

/* Whether a bf16 MATMUL with these fields may join the queue as it is: it
 * accumulates onto a queued chain's ACC range (the same rows) that has room,
 * or its ACC range meets no queued one and there is room for another chain.
 * Otherwise flush first. */
int ref_chain_joins(const ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows);

/* Queues a bf16 MATMUL; the caller has checked ref_chain_joins, or flushed.
 * One without ACCUMULATE starts a chain whose ACC rows the flush writes from
 * +0.0: the caller does not clear them (nothing reads them before the flush).
 * w: the active n x n tile (copied). UB rows ub_lo .. ub_hi - 1 are what it
 * may read. conv: its CONV geometry or NULL; else rows from ub_addr, or with
 * TRANSPOSE_A tiles `stride` rows apart. */
void ref_chain_add(ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows, const uint16_t *w,
                   const uint16_t *ub, unsigned ub_addr, unsigned stride, const ref_conv *conv, unsigned long ub_lo,
                   unsigned long ub_hi);

/* Whether the queue holds something a write of UB rows [addr, addr + rows)
 * (ub) or ACC rows (!ub) would change: then flush first. */
int ref_chain_touches(const ref_chain *c, int ub, unsigned addr, unsigned rows);

/* Runs the queued chains into acc (the model's ACC) and empties the queue.
 * ub: the model's UB, ub_rows rows, every write of which the model reports
 * (ref_chain_ub_written); NULL: no blocks kept converted. */
void ref_chain_flush(ref_chain *c, uint32_t *acc, const uint16_t *ub, size_t ub_rows, ntpu_ref_pool *pool);

/* UB rows [addr, addr + rows) are written: blocks of them kept converted go. */
void ref_chain_ub_written(ref_chain *c, unsigned long addr, unsigned long rows);

#endif
