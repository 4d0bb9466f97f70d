/* SPDX-License-Identifier: Apache-2.0 */
/* The queue of a MATMUL chain (ref_chain.h). ref.c decides when a MATMUL
 * extends the chain and flushes the queue before anything could observe or
 * change what it reads or writes; here the tiles are kept (weights copied, as
 * LOAD_W may replace them) and run. CONV tiles find their rows 8 at a time
 * as the kernel asks for them: in place in UB where they can. */
#include "matmul_dot.h"
#include "ref_chain.h"

#include <stdlib.h>
#include <string.h>

#include "ntpu/protocol.h"

/* What a block of A outside the map reads: zeros, n x n lanes for any n. */
static const uint16_t zero_tile[64 * 64];

/* One queued chain: its ACC range and tiles. */
typedef struct chain_way {
    unsigned acc_addr, rows, count;
    int zero; /* its first MATMUL does not accumulate: the rows start at +0.0 */
    ntpu_chain_tile tiles[REF_CHAIN_MAX];
    ref_conv conv[REF_CHAIN_MAX];
} chain_way;

struct ref_chain {
    unsigned n, ways;           /* chains queued */
    unsigned long ub_lo, ub_hi; /* UB rows the queued tiles read */
    uint16_t *w;                /* REF_CHAIN_WAYS x REF_CHAIN_MAX x n x n: the tiles' weights */
    float *wf;                  /* the same, flushed to fp32 */
    chain_way way[REF_CHAIN_WAYS];
    ref_a_cache **caches; /* one per part of a flush (ref_threads.h), made when first needed */
    unsigned n_caches;
    int no_dot; /* ref_chain_set_dot(c, 0) */
};

void ref_chain_set_dot(ref_chain *c, int on)
{
    c->no_dot = !on;
}

ref_chain *ref_chain_new(unsigned n)
{
    ref_chain *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n = n;
    const size_t tile = (size_t)n * n;
    c->w = malloc(REF_CHAIN_WAYS * REF_CHAIN_MAX * tile * sizeof *c->w);
    c->wf = malloc(REF_CHAIN_WAYS * REF_CHAIN_MAX * tile * sizeof *c->wf);
    if (!c->w || !c->wf) {
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
    for (unsigned i = 0; i < c->n_caches; i++) {
        ref_a_cache_release(c->caches[i]);
        free(c->caches[i]);
    }
    free(c->caches);
    free(c);
}

/* The queued chain into exactly these ACC rows, or NULL. */
static const chain_way *way_of(const ref_chain *c, unsigned acc_addr, unsigned rows)
{
    for (unsigned i = 0; i < c->ways; i++)
        if (c->way[i].acc_addr == acc_addr && c->way[i].rows == rows)
            return &c->way[i];
    return NULL;
}

/* Whether ACC rows [addr, addr + rows) meet a queued chain's range. */
static int meets_acc(const ref_chain *c, unsigned long addr, unsigned long rows)
{
    for (unsigned i = 0; i < c->ways; i++)
        if (addr < (unsigned long)c->way[i].acc_addr + c->way[i].rows && c->way[i].acc_addr < addr + rows)
            return 1;
    return 0;
}

int ref_chain_joins(const ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows)
{
    const chain_way *w = way_of(c, acc_addr, rows);
    if (w)
        return (flags & NTPU_MATMUL_ACCUMULATE) && w->count < REF_CHAIN_MAX;
    return c->ways > 0 && c->ways < REF_CHAIN_WAYS && !meets_acc(c, acc_addr, rows);
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

/* Rows rel .. rel + 7 of a forward or CONV_T stream (ref_conv_rows8); what
 * it gathers lives until this thread's next call. */
static const uint16_t *conv_rows(const ntpu_chain_tile *tile, size_t rel, unsigned n)
{
    static _Thread_local uint16_t scratch[8 * 64];
    return ref_conv_rows8(tile->ctx, tile->a, n, (unsigned)rel, scratch);
}

void ref_chain_add(ref_chain *c, unsigned flags, unsigned acc_addr, unsigned rows, const uint16_t *w,
                   const uint16_t *ub, unsigned ub_addr, unsigned stride, const ref_conv *conv, unsigned long ub_lo,
                   unsigned long ub_hi)
{
    chain_way *way = (chain_way *)way_of(c, acc_addr, rows);
    if (!way) {
        way = &c->way[c->ways];
        way->acc_addr = acc_addr;
        way->rows = rows;
        way->count = 0;
        way->zero = !(flags & NTPU_MATMUL_ACCUMULATE);
        if (c->ways++ == 0) {
            c->ub_lo = ub_lo;
            c->ub_hi = ub_hi;
        }
    }
    c->ub_lo = ub_lo < c->ub_lo ? ub_lo : c->ub_lo;
    c->ub_hi = ub_hi > c->ub_hi ? ub_hi : c->ub_hi;
    const unsigned k = way->count++, n = c->n;
    const size_t tile = (size_t)n * n, at = ((size_t)(way - c->way) * REF_CHAIN_MAX + k) * tile;
    ntpu_chain_tile *t = &way->tiles[k];
    memset(t, 0, sizeof *t);
    memcpy(c->w + at, w, tile * sizeof *w);
    t->w = c->w + at;
    ntpu_chain_tile_prepare(t, c->wf + at, n, c->no_dot || !ref_dot_usable());
    t->cached = 1;
    if (conv) { /* the weight gradient's blocks read in place and transposed, or the other modes' rows */
        way->conv[k] = *conv;
        t->a = ub;
        t->transposed = (flags & NTPU_MATMUL_TRANSPOSE_A) != 0;
        t->locate = t->transposed ? weight_grad_block : conv_rows;
        t->ctx = &way->conv[k];
    } else {
        t->a = ub + (size_t)ub_addr * n;
        t->t_stride = (size_t)stride * n;
        t->transposed = (flags & NTPU_MATMUL_TRANSPOSE_A) != 0;
    }
}

int ref_chain_touches(const ref_chain *c, int ub, unsigned addr, unsigned rows)
{
    if (c->ways == 0 || rows == 0)
        return 0;
    unsigned long lo = addr, hi = (unsigned long)addr + rows;
    if (ub)
        return lo < c->ub_hi && c->ub_lo < hi;
    return meets_acc(c, lo, rows);
}

/* A part of the rows of one flush, for the pool: `ways` chains over the same A, run as one pass. */
typedef struct chain_job {
    uint32_t *acc[REF_CHAIN_WAYS]; /* the chains' row 0 */
    const ntpu_chain_tile *tiles[REF_CHAIN_WAYS];
    unsigned ways, count, n;
    int zero, dot;
    ref_a_cache **caches; /* one per part, or NULL */
} chain_job;

static void chain_part(void *ctx, size_t m0, size_t m1, unsigned part)
{
    const chain_job *j = ctx;
    ref_a_cache *cache = j->caches ? j->caches[part] : NULL;
    if (j->ways > 1)
        ntpu_mac_bf16_chainw(j->acc, j->tiles, j->ways, j->count, j->n, m0, m1, cache, j->zero, j->dot);
    else
        ntpu_mac_bf16_chain(j->acc[0], j->tiles[0], j->count, j->n, m0, m1, cache, j->zero);
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
            if (!(c->caches[c->n_caches] = calloc(1, sizeof **grown)))
                return NULL;
    }
    return c->caches;
}

void ref_chain_ub_written(ref_chain *c, unsigned long addr, unsigned long rows)
{
    if (c->n != 8 || rows == 0) /* blocks of 8 rows: only N = 8 keeps them */
        return;
    for (unsigned i = 0; i < c->n_caches; i++) {
        ref_a_cache *a = c->caches[i];
        for (unsigned long g = addr / 8; g <= (addr + rows - 1) / 8 && g < a->blocks; g++)
            a->facts[g].valid = 0;
    }
}

/* Whether two CONV MATMULs read the same rows of A: every field but where they sum. */
static int same_conv_a(const ref_conv *a, const ref_conv *b)
{
    return a->flags == b->flags && a->ub_addr == b->ub_addr && a->rows == b->rows && a->in_h == b->in_h &&
           a->in_w == b->in_w && a->mb == b->mb && a->out_w == b->out_w && a->stride == b->stride &&
           a->tile_stride == b->tile_stride && a->k == b->k && a->dy == b->dy && a->dx == b->dx;
}

/* Whether two queued chains read the same A, tile by tile, so that they can run as one pass. */
static int same_a(const chain_way *x, const chain_way *y)
{
    if (x->rows != y->rows || x->count != y->count || x->zero != y->zero)
        return 0;
    for (unsigned e = 0; e < x->count; e++) {
        const ntpu_chain_tile *s = &x->tiles[e], *t = &y->tiles[e];
        if (s->locate != t->locate || s->a != t->a || s->transposed != t->transposed ||
            (s->locate && !same_conv_a(&x->conv[e], &y->conv[e])) ||
            (!s->locate && s->transposed && s->t_stride != t->t_stride))
            return 0;
    }
    return 1;
}

void ref_chain_flush(ref_chain *c, uint32_t *acc, const uint16_t *ub, size_t ub_rows, ntpu_ref_pool *pool)
{
    if (c->ways == 0)
        return;
    const size_t n = c->n;
    ref_a_cache **caches = part_caches(c, pool);
    for (unsigned i = 0; caches && i < c->n_caches; i++)
        if (!ref_a_cache_mirror(caches[i], ub, ub_rows * n))
            caches = NULL; /* memory is short: nothing kept */
    /* each run of queued chains that read the same A as its first: one pass */
    for (unsigned i = 0, k; i < c->ways; i = k) {
        const chain_way *w = &c->way[i];
        chain_job job = {.ways = 0, .count = w->count, .n = c->n, .zero = w->zero, .dot = !c->no_dot, .caches = caches};
        for (k = i; k < c->ways && (k == i || same_a(w, &c->way[k])); k++) {
            job.acc[job.ways] = acc + (size_t)c->way[k].acc_addr * n;
            job.tiles[job.ways++] = c->way[k].tiles;
        }
        job.dot = job.dot && ntpu_chain_dot_fits(job.tiles, job.ways, job.count, c->n);
        for (unsigned k = 0; k < job.ways && !job.dot; k++) /* the fp32 kernels read wf */
            for (unsigned e = 0; e < job.count; e++)
                ntpu_chain_tile_convert(&c->way[i + k].tiles[e], c->n);
        /* rows split among threads a multiple of 8 and of n apart */
        ntpu_ref_pool_for(pool, w->rows, 8 * n, (uint64_t)w->rows * n * n * w->count * job.ways, chain_part, &job);
    }
    c->ways = 0;
}
