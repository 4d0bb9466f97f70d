/* SPDX-License-Identifier: Apache-2.0 */
/* UB rows for a resident net's maps, shared where their lifetimes do not meet. Within a micro-batch,
 * item i's forward pass runs at time i and its backward pass at time 2*items - i; a map lives from the
 * item that writes it to the last that reads it: the next items' forward passes, the dW of a conv or fc
 * that takes it, a relu's mask, a maxpool's argmax and (relu then maxpool) its pooled output as the
 * relu's mask; with rewrite_input the input map lives for the first item's forward pass and again, written
 * anew, for its dW. The device's N rows of +0 (net_spread.c) live always, a dense input (written before
 * the forward pass) until the last spread that reads it. Two maps whose lifetimes meet get disjoint rows; each is placed, in the order of the
 * items, at the lowest row that keeps it so (first fit). */
#include "net_resident.h"

typedef struct ubuf {
    uint32_t *addr;
    size_t rows;
    long start, end;
} ubuf;

typedef struct ub_plan {
    ubuf buf[3 * NTPU_MAX_ITEMS + 4];
    size_t n;
    size_t of_value[NTPU_MAX_ITEMS + 1]; /* the buffer that holds value v's map */
} ub_plan;

static size_t add(ub_plan *p, uint32_t *addr, size_t rows, long start)
{
    p->buf[p->n] = (ubuf){addr, rows, start, start};
    return p->n++;
}

static void use(ub_plan *p, size_t b, long t)
{
    p->buf[b].end = t > p->buf[b].end ? t : p->buf[b].end;
}

static size_t rows_of(const ntpu_net_res *r, size_t v)
{
    return (r->band[v] ? r->band[v] : (size_t)r->ct[v] * r->h[v]) * r->w[v] * NTPU_NET_MB;
}

/* The maps each item writes (forward) and its own buffers (argmax, gZ for dX). */
static void writes(const ntpu_model *m, ntpu_net_res *r, ub_plan *p)
{
    const long items = (long)m->arch.n;
    use(p, add(p, &r->ub_pad, m->n, -1), 2 * items + 1);
    if (r->dense) /* read by the spreads: of the forward pass, and of the first item's dW */
        use(p, add(p, &r->ub_dense, rows_of(r, 0) / m->n, -1), r->rewrite_input ? 2 * items - (long)r->first : 0);
    p->of_value[0] = add(p, &r->ub[0], rows_of(r, 0), -1);
    for (size_t i = 0; i < m->arch.n; i++) {
        const ntpu_layer_kind kind = m->arch.item[i].kind;
        const long back = 2 * items - (long)i;
        if (kind == NTPU_LAYER_RELU || kind == NTPU_LAYER_FLATTEN) {
            p->of_value[i + 1] = p->of_value[i];
            continue;
        }
        /* a pool the conv before it runs tile by tile writes while that conv still reads its input */
        const long at = r->band[i] ? (long)i - 1 : i >= 1 && r->fused[i - 1] && r->band[i - 1] ? (long)i - 2 : (long)i;
        if (i + 1 < m->arch.n)
            p->of_value[i + 1] = add(p, &r->ub[i + 1], rows_of(r, i + 1), at);
        if (kind == NTPU_LAYER_MAXPOOL)
            use(p, add(p, &r->ub_arg[i], rows_of(r, i + 1), at), back);
        if ((kind == NTPU_LAYER_CONV || kind == NTPU_LAYER_FC) && i > r->first)
            add(p, &r->ub_gz[i], (size_t)r->ct[i + 1] * r->h[i + 1] * r->w[i + 1] * NTPU_NET_MB, back);
        if (i == r->first && r->rewrite_input)
            add(p, &r->ub_x2, rows_of(r, 0), back);
    }
}

/* Who reads each map, and when. */
static void reads(const ntpu_model *m, const ntpu_net_res *r, ub_plan *p)
{
    const long items = (long)m->arch.n;
    for (size_t i = 0; i < m->arch.n; i++) {
        const ntpu_layer_kind kind = m->arch.item[i].kind;
        const long back = 2 * items - (long)i;
        const int grad = i >= r->first;
        if (kind != NTPU_LAYER_RELU && kind != NTPU_LAYER_FLATTEN)
            use(p, p->of_value[i], (long)i);
        if ((kind == NTPU_LAYER_CONV || kind == NTPU_LAYER_FC) && grad && !(i == r->first && r->rewrite_input))
            use(p, p->of_value[i], back);
        if (kind == NTPU_LAYER_RELU && grad && !(i + 1 < m->arch.n && r->pooled_mask[i + 1]))
            use(p, p->of_value[i + 1], back);
        if (kind == NTPU_LAYER_MAXPOOL && grad && r->pooled_mask[i])
            use(p, p->of_value[i + 1], back);
    }
}

static int meet(const ubuf *a, const ubuf *b)
{
    return a->start <= b->end && b->start <= a->end;
}

/* The lowest row where buffer k fits beside every placed buffer whose lifetime meets its own. */
static size_t first_fit(const ub_plan *p, size_t k, const int *placed)
{
    size_t best = SIZE_MAX;
    for (size_t c = 0; c <= p->n; c++) {
        if (c < p->n && (!placed[c] || !meet(&p->buf[c], &p->buf[k])))
            continue;
        const size_t at = c < p->n ? *p->buf[c].addr + p->buf[c].rows : 0;
        int ok = at < best;
        for (size_t o = 0; o < p->n && ok; o++)
            if (placed[o] && meet(&p->buf[o], &p->buf[k]))
                ok = at + p->buf[k].rows <= *p->buf[o].addr || *p->buf[o].addr + p->buf[o].rows <= at;
        best = ok ? at : best;
    }
    return best;
}

void ntpu_net_res_place_ub(const ntpu_model *m, ntpu_net_res *r)
{
    ub_plan p = {.n = 0};
    int placed[3 * NTPU_MAX_ITEMS + 4] = {0};
    writes(m, r, &p);
    reads(m, r, &p);
    r->ub_rows = 0;
    for (size_t k = 0; k < p.n; k++) {
        const size_t at = first_fit(&p, k, placed);
        *p.buf[k].addr = (uint32_t)(at < UINT32_MAX ? at : UINT32_MAX);
        placed[k] = 1;
        r->ub_rows = at + p.buf[k].rows > r->ub_rows ? at + p.buf[k].rows : r->ub_rows;
    }
    for (size_t v = 1; v < m->arch.n; v++) /* a relu's and a flatten's map: their input's */
        r->ub[v] = *p.buf[p.of_value[v]].addr;
}
