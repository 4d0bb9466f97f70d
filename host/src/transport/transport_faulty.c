/* SPDX-License-Identifier: Apache-2.0 */
/* A transport that damages the bytes of another one, for testing the link's
 * recovery (docs/protocol.md, "Retransmission"): in both directions each byte
 * is dropped with probability rate/2, or has one bit flipped with probability
 * rate/2, from a seeded generator, so a failing run can be repeated. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct faulty {
    ntpu_transport_ops ops; /* the inner transport's, made lossy */
    ntpu_transport inner;
    double rate;
    uint64_t rng;
    uint8_t *buf; /* a damaged copy of what is sent */
    size_t cap;
} faulty;

/* splitmix64: small, and good enough to place faults. */
static uint64_t next(faulty *f)
{
    uint64_t z = (f->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Damages n bytes of p in place; returns how many are left after drops. */
static size_t damage(faulty *f, uint8_t *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next(f);
        double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
        if (u < f->rate / 2)
            continue;
        uint8_t b = p[i];
        if (u < f->rate)
            b ^= (uint8_t)(1u << (r & 7));
        p[k++] = b;
    }
    return k;
}

static ntpu_status faulty_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    faulty *f = ctx;
    if (n > f->cap) {
        uint8_t *b = realloc(f->buf, n);
        if (!b) {
            ntpu_errf(err, errlen, "out of memory in the faulty transport");
            return NTPU_ERR_IO;
        }
        f->buf = b;
        f->cap = n;
    }
    memcpy(f->buf, buf, n);
    size_t k = damage(f, f->buf, n);
    return k ? f->inner.ops->send(f->inner.ctx, f->buf, k, err, errlen) : NTPU_OK;
}

static ntpu_status faulty_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                               size_t errlen)
{
    faulty *f = ctx;
    size_t have = 0;
    ntpu_status st = NTPU_OK;
    while (have < n && st == NTPU_OK) {
        size_t g = 0;
        st = f->inner.ops->recv(f->inner.ctx, buf + have, n - have, timeout_ms, &g, err, errlen);
        have += damage(f, buf + have, g);
    }
    *got = have;
    return have == n ? NTPU_OK : st;
}

static void faulty_close(void *ctx)
{
    faulty *f = ctx;
    f->inner.ops->close(f->inner.ctx);
    free(f->buf);
    free(f);
}

ntpu_status ntpu_transport_faulty_wrap(ntpu_transport inner, double rate, uint64_t seed, ntpu_transport *out, char *err,
                                       size_t errlen)
{
    if (!(rate >= 0.0 && rate <= 1.0)) {
        ntpu_errf(err, errlen, "faults=%g is not a probability in 0..1", rate);
        return NTPU_ERR_INVALID_ARG;
    }
    faulty *f = calloc(1, sizeof *f);
    if (!f) {
        ntpu_errf(err, errlen, "out of memory for the faulty transport");
        return NTPU_ERR_NO_MEMORY;
    }
    f->ops = *inner.ops;
    f->ops.name = "faulty";
    f->ops.send = faulty_send;
    f->ops.recv = faulty_recv;
    f->ops.close = faulty_close;
    f->ops.lossy = 1;
    /* Bytes go through the faults: none is seen in place, and a frame sent may not run. */
    f->ops.runs_on_send = 0;
    f->ops.peek = NULL;
    f->ops.consume = NULL;
    f->inner = inner;
    f->rate = rate;
    f->rng = seed;
    out->ops = &f->ops;
    out->ctx = f;
    return NTPU_OK;
}
