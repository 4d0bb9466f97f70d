/* SPDX-License-Identifier: Apache-2.0 */
/* The queue of a MATMUL chain (ref_chain.h). ref.c decides when a MATMUL
 * extends the chain and flushes the queue before anything could observe or
 * change what it reads or writes; here the tiles are kept (weights copied, as
 * LOAD_W may replace them) and run. CONV tiles gather their rows a chunk at a
 * time, all tiles of the chunk together, so the kernel still passes each
 * block of rows through every tile at once. */
#include "ref_chain.h"

#include <stdlib.h>
#include <string.h>

#include "ntpu/protocol.h"

/* What a block of A outside the map reads: zeros, n x n lanes for any n. */
static const uint16_t zero_tile[64 * 64];

/* Lanes of gathered CONV rows per flush chunk: small enough to stay in L2. */
#define REF_CHAIN_GATHER_LANES (1u << 17)

struct ref_chain {
    unsigned n, count, acc_addr, rows;
    unsigned long ub_lo, ub_hi; /* UB rows the queued tiles read */
    uint16_t *w;                /* REF_CHAIN_MAX x n x n: the tiles' weights */
    float *wf;                  /* the same, flushed to fp32 */
    uint16_t *gather;           /* gather_lanes: CONV rows of a chunk */
    size_t gather_lanes;
    ntpu_chain_tile tiles[REF_CHAIN_MAX];
    ref_a_cache **caches; /* one per part of a flush (ref_threads.h), made when first needed */
    unsigned n_caches;
    ref_conv conv[REF_CHAIN_MAX];
    unsigned char is_conv[REF_CHAIN_MAX];
};

ref_chain *ref_chain_new(unsigned n)
{
    ref_chain *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n = n;
    size_t tile = (size_t)n * n, unit = 8 * (size_t)n;
    /* at least one block of 8 rows (and of n) for every tile */
    c->gather_lanes =
        REF_CHAIN_MAX * unit * n > REF_CHAIN_GATHER_LANES ? REF_CHAIN_MAX * unit * n : REF_CHAIN_GATHER_LANES;
    c->w = malloc(REF_CHAIN_MAX * tile * sizeof *c->w);
    c->wf = malloc(REF_CHAIN_MAX * tile * sizeof *c->wf);
    c->gather = malloc(c->gather_lanes * sizeof *c->gather);
    if (!c->w || !c->wf || !c->gather) {
        ref_chain_free(c);
        return NULL;
    }
    return c;
}

void ref_chain_free(ref_chain *c)
{
    if (!c)
        return;
    free(c->w);
    free(c->wf);
    free(c->gather);
    for (unsigned i = 0; i < c->n_caches; i++)
        free(c->caches[i]);
    free(c->caches);
    free(c);
}

int ref_chain_extends(const ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows)
{
    return c->count > 0 && c->count < REF_CHAIN_MAX && (flags & NTPU_MATMUL_ACCUMULATE) && c->acc_addr == acc_addr &&
           c->rows == rows;
}

/* Block j = rel / n of a weight-gradient MATMUL (docs/isa.md, "Version 1.5"):
 * the n x n UB block at tap (ky, kx) and channel tile t, blocks in the order
 * (ky, kx, t) with t innermost; zeros outside the map. The kernel reads it
 * transposed, as the ISA does, so it needs no copy. */
static const uint16_t *weight_grad_block(const ntpu_chain_tile *tile, size_t rel, unsigned n)
{
    const ref_conv *c = tile->ctx;
    const unsigned long ct = c->rows / ((unsigned long)n * c->k * c->k), j = rel / n;
    const unsigned long t = j % ct, kx = (j / ct) % c->k, ky = j / (ct * c->k);
    const long y = c->dy + (long)ky, x = c->dx + (long)kx;
    if (y < 0 || x < 0 || y >= (long)c->in_h || x >= (long)c->in_w)
        return zero_tile;
    return tile->a + ((size_t)c->ub_addr + t * c->tile_stride + ((size_t)y * c->in_w + (size_t)x) * c->mb) * n;
}

int ref_chain_add(ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows, const uint16_t *w, const uint16_t *ub,
                  unsigned ub_addr, unsigned stride, const ref_conv *conv, unsigned long ub_lo, unsigned long ub_hi)
{
    const unsigned k = c->count++, n = c->n;
    const size_t tile = (size_t)n * n;
    if (k == 0) {
        c->acc_addr = acc_addr;
        c->rows = rows;
        c->ub_lo = ub_lo;
        c->ub_hi = ub_hi;
    } else {
        c->ub_lo = ub_lo < c->ub_lo ? ub_lo : c->ub_lo;
        c->ub_hi = ub_hi > c->ub_hi ? ub_hi : c->ub_hi;
    }
    ntpu_chain_tile *t = &c->tiles[k];
    memset(t, 0, sizeof *t);
    memcpy(c->w + k * tile, w, tile * sizeof *w);
    t->w = c->w + k * tile;
    ntpu_chain_tile_prepare(t, c->wf + k * tile, n);
    c->is_conv[k] = conv != NULL;
    if (conv) {
        c->conv[k] = *conv;
    }
    if (conv && (flags & NTPU_MATMUL_TRANSPOSE_A)) { /* the weight gradient's blocks, read in place */
        c->is_conv[k] = 0;
        t->a = ub;
        t->transposed = 1;
        t->locate = weight_grad_block;
        t->ctx = &c->conv[k];
        t->cached = 1;
    } else if (!conv) { /* CONV's other modes gather their rows at the flush */
        t->cached = 1;  /* UB in place, as the weight gradient's blocks: worth keeping converted */
        t->a = ub + (size_t)ub_addr * n;
        t->t_stride = (size_t)stride * n;
        t->transposed = (flags & NTPU_MATMUL_TRANSPOSE_A) != 0;
    }
    return c->count == REF_CHAIN_MAX;
}

int ref_chain_touches(const ref_chain *c, int ub, unsigned addr, unsigned rows)
{
    if (c->count == 0 || rows == 0)
        return 0;
    unsigned long lo = addr, hi = (unsigned long)addr + rows;
    if (ub)
        return lo < c->ub_hi && c->ub_lo < hi;
    return lo < (unsigned long)c->acc_addr + c->rows && c->acc_addr < hi;
}

/* A part of the rows of one flush, for the pool. */
typedef struct chain_job {
    uint32_t *acc; /* the chain's row 0 */
    const ntpu_chain_tile *tiles;
    unsigned count, n;
    size_t base;          /* the rows of the part are base + m0 .. base + m1 - 1 */
    ref_a_cache **caches; /* one per part, or NULL */
} chain_job;

static void chain_part(void *ctx, size_t m0, size_t m1, unsigned part)
{
    const chain_job *j = ctx;
    ntpu_mac_bf16_chain(j->acc, j->tiles, j->count, j->n, j->base + m0, j->base + m1,
                        j->caches ? j->caches[part] : NULL);
}

/* A cache of converted A for each part the pool may make: NULL where none
 * would be used (N other than 8) or memory is short, and the chain runs as
 * it would without. */
static ref_a_cache **part_caches(ref_chain *c, ntpu_ref_pool *pool)
{
    const unsigned parts = ntpu_ref_pool_threads(pool);
    if (c->n != 8)
        return NULL;
    if (c->n_caches < parts) {
        ref_a_cache **grown = realloc(c->caches, parts * sizeof *grown);
        if (!grown)
            return NULL;
        c->caches = grown;
        for (; c->n_caches < parts; c->n_caches++)
            if (!(c->caches[c->n_caches] = aligned_alloc(64, sizeof **grown)))
                return NULL;
            else
                memset(c->caches[c->n_caches], 0, sizeof **grown);
    }
    return c->caches;
}

/* Rows base .. base + rows - 1 through every tile, split among threads. */
static void run_rows(ref_chain *c, uint32_t *acc, size_t base, size_t rows, const ref_ub_stamps *stamps,
                     ntpu_ref_pool *pool)
{
    const size_t n = c->n;
    chain_job job = {
        .acc = acc, .tiles = c->tiles, .count = c->count, .n = c->n, .base = base, .caches = part_caches(c, pool)};
    for (unsigned i = 0; job.caches && i < c->n_caches; i++)
        job.caches[i]->ub = stamps;
    ntpu_ref_pool_for(pool, rows, 8 * n, (uint64_t)rows * n * n * c->count, chain_part, &job);
}

void ref_chain_flush(ref_chain *c, uint32_t *acc, const uint16_t *ub, const ref_ub_stamps *stamps, ntpu_ref_pool *pool)
{
    if (c->count == 0)
        return;
    const size_t n = c->n, unit = 8 * n;
    uint32_t *chain_acc = acc + (size_t)c->acc_addr * n;
    unsigned convs = 0;
    for (unsigned k = 0; k < c->count; k++)
        convs += c->is_conv[k];
    if (convs == 0) {
        run_rows(c, chain_acc, 0, c->rows, stamps, pool);
        c->count = 0;
        return;
    }
    /* A chunk of rows, a multiple of 8 and of n, gathered for every CONV tile. */
    size_t chunk = c->gather_lanes / (convs * n) / unit * unit;
    for (size_t m = 0; m < c->rows; m += chunk) {
        size_t cnt = c->rows - m < chunk ? c->rows - m : chunk;
        uint16_t *slot = c->gather;
        for (unsigned k = 0; k < c->count; k++) {
            if (!c->is_conv[k])
                continue;
            ref_conv_gather(&c->conv[k], ub, c->n, (unsigned)m, (unsigned)cnt, slot);
            c->tiles[k].a = slot;
            c->tiles[k].row0 = m;
            slot += chunk * n;
        }
        run_rows(c, chain_acc, m, cnt, stamps, pool);
    }
    c->count = 0;
}
