/* SPDX-License-Identifier: Apache-2.0 */
/* Worker threads for the golden model's large MATMULs (ref:threads=T): their
 * rows are independent chains, so parts of them run at once and the bits are
 * those of one thread. Internal to the library. */
#ifndef NTPU_REF_THREADS_H
#define NTPU_REF_THREADS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ntpu_ref_pool ntpu_ref_pool;

/* threads - 1 workers beside the calling thread; NULL when they cannot start. */
ntpu_ref_pool *ntpu_ref_pool_new(unsigned threads);
void ntpu_ref_pool_free(ntpu_ref_pool *p);

/* A MATMUL's kernel call over rows: transposed (TRANSPOSE_A, a in n x n tiles
 * t_stride lanes apart), bf16 or int8 (not transposed). */
typedef struct ntpu_ref_rows {
    uint32_t *acc;
    const uint16_t *a;
    const uint16_t *w;
    size_t t_stride;
    size_t rows;
    unsigned n;
    int bf16, transposed;
} ntpu_ref_rows;

/* Runs the kernel over all rows, split among the pool's threads when there
 * are enough MACs to pay for it (p may be NULL: one thread). */
void ntpu_ref_rows_run(ntpu_ref_pool *p, const ntpu_ref_rows *job);

/* Any work over independent rows: fn(ctx, m0, m1, part) for parts [m0, m1)
 * that cover 0 .. rows - 1, each part a multiple of `unit` rows (but the
 * last), split among the pool's threads when `macs` pays for it (p may be
 * NULL). part < ntpu_ref_pool_threads(p) numbers the parts of one call: no two
 * run at once, so per-part scratch needs no lock. */
typedef void ntpu_ref_part_fn(void *ctx, size_t m0, size_t m1, unsigned part);
void ntpu_ref_pool_for(ntpu_ref_pool *p, size_t rows, size_t unit, uint64_t macs, ntpu_ref_part_fn *fn, void *ctx);

/* How many threads the pool runs parts on, the caller's among them: 1 for NULL. */
unsigned ntpu_ref_pool_threads(const ntpu_ref_pool *p);

#endif
