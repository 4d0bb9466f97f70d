/* SPDX-License-Identifier: Apache-2.0 */
/* The "ref" transport: the golden model (sim/ref) in-process. It executes each
 * frame the moment its last byte arrives, so a reply that is not queued when
 * asked for will never come: recv gives up at once instead of waiting. The
 * link reads replies where the model queued them (peek, consume). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ntpu_ref.h"

static ntpu_status ref_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ntpu_ref_write(ctx, buf, n);
    return NTPU_OK;
}

static ntpu_status ref_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                            size_t errlen)
{
    (void)timeout_ms;
    (void)err;
    (void)errlen;
    *got = ntpu_ref_read(ctx, buf, n);
    return *got == n ? NTPU_OK : NTPU_ERR_TIMEOUT;
}

static const uint8_t *ref_peek(void *ctx, size_t *n)
{
    return ntpu_ref_peek(ctx, n);
}

static void ref_consume(void *ctx, size_t n)
{
    ntpu_ref_consume(ctx, n);
}

static void ref_close(void *ctx)
{
    ntpu_ref_free(ctx);
}

static const ntpu_transport_ops ref_ops = {
    .name = "ref",
    .send = ref_send,
    .recv = ref_recv,
    .close = ref_close,
    .starts_in_sync = 1,
    .runs_on_send = 1,
    .peek = ref_peek,
    .consume = ref_consume,
};

/* The model's configuration and the threads its MATMULs may use. */
typedef struct ref_opts {
    ntpu_ref_config cfg;
    unsigned threads;
    unsigned fuse; /* MATMUL chains fused (ntpu_ref_set_fusion): 1, or 0 as a reference for tests */
    unsigned dot;  /* the CPU's bf16 dot product where it agrees (ntpu_ref_set_dot): 1, or 0 for tests */
} ref_opts;

/* Parses "key=value,key=value" into o. */
static int parse_opts(const char *opts, ref_opts *o, char *err, size_t errlen)
{
    /* The ranges are ntpu_ref_config's (ntpu_ref.h); checked here to name the option. */
    static const struct {
        const char *key;
        size_t off;
        unsigned lo, hi;
    } keys[] = {
        {"n", offsetof(ref_opts, cfg.n), 2, 64},
        {"ub", offsetof(ref_opts, cfg.ub_rows), 1, 65536},
        {"wb", offsetof(ref_opts, cfg.wb_rows), 1, 65536},
        {"acc", offsetof(ref_opts, cfg.acc_rows), 1, 65536},
        {"os", offsetof(ref_opts, cfg.os_rows), 0, 65536}, /* 0: no OS, as the boards (no ADAM) */
        {"payload", offsetof(ref_opts, cfg.max_payload), 1 + NTPU_COUNTERS_BYTES, 65535},
        {"novec", offsetof(ref_opts, cfg.no_vector), 0, 1},      /* 1: as a board built with VEC_EN = 0 */
        {"notra", offsetof(ref_opts, cfg.no_transpose_a), 0, 1}, /* 1: as one with TRANSPOSE_A_EN = 0 */
        {"pm", offsetof(ref_opts, cfg.pm_rows), 0, 65536},       /* 0: no PROGRAM, as PM_ROWS = 0 */
        {"noconv", offsetof(ref_opts, cfg.no_conv), 0, 1},       /* 1: as a core with CONV_EN = 0 */
        {"nopool", offsetof(ref_opts, cfg.no_pool), 0, 1},       /* 1: as one with POOL_EN = 0 */
        {"threads", offsetof(ref_opts, threads), 1, 64},         /* for large MATMULs; the same bits */
        {"fuse", offsetof(ref_opts, fuse), 0, 1},                /* 0: MATMULs one at a time; the same bits */
        {"dot", offsetof(ref_opts, dot), 0, 1},                  /* 0: no bf16 dot-product instruction; the same bits */
    };
    const char *p = opts;
    unsigned given = 0; /* a bit per key: one given twice is a mistake, not "the last wins" */
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t i = 0, nk = sizeof keys / sizeof keys[0];
        if (eq)
            while (i < nk && !(strlen(keys[i].key) == (size_t)(eq - p) && !strncmp(keys[i].key, p, eq - p)))
                i++;
        if (!eq || i == nk) {
            ntpu_errf(err, errlen,
                      "unknown ref option '%.*s' (expected n=, ub=, wb=, acc=, os=, pm=, payload=, novec=, notra=, "
                      "noconv=, nopool=, threads=, fuse=, dot=)",
                      (int)len, p);
            return -1;
        }
        uint64_t v = 0;
        size_t vlen = len - (size_t)(eq + 1 - p);
        if (!vlen || ntpu_parse_whole(eq + 1, vlen, 0xFFFFFFFFu, &v)) {
            ntpu_errf(err, errlen, "ref option '%.*s' needs a whole number", (int)len, p);
            return -1;
        }
        if (v < keys[i].lo || v > keys[i].hi) {
            ntpu_errf(err, errlen, "ref option '%.*s' is out of range: %s= takes %u..%u", (int)len, p, keys[i].key,
                      keys[i].lo, keys[i].hi);
            return -1;
        }
        if (given & (1u << i)) {
            ntpu_errf(err, errlen, "ref option %s= is given twice", keys[i].key);
            return -1;
        }
        given |= 1u << i;
        *(unsigned *)((char *)o + keys[i].off) = (unsigned)v;
        p = end ? end + 1 : NULL;
    }
    if (o->cfg.wb_rows < o->cfg.n) {
        ntpu_errf(err, errlen, "ref option wb=%u is out of range: the weight buffer needs at least n=%u rows",
                  o->cfg.wb_rows, o->cfg.n);
        return -1;
    }
    return 0;
}

ntpu_status ntpu_transport_ref_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    ref_opts o = {ntpu_ref_default_config(), 1, 1, 1};
    if (parse_opts(opts, &o, err, errlen))
        return NTPU_ERR_INVALID_ARG;
    const ntpu_ref_config cfg = o.cfg;
    ntpu_ref *ref = ntpu_ref_new(&cfg);
    if (ref && ntpu_ref_set_threads(ref, o.threads) != 0) {
        ntpu_ref_free(ref);
        ntpu_errf(err, errlen, "cannot start %u threads for the golden model", o.threads);
        return NTPU_ERR_INVALID_ARG;
    }
    if (ref) {
        ntpu_ref_set_fusion(ref, (int)o.fuse);
        ntpu_ref_set_dot(ref, (int)o.dot);
    }
    if (!ref) {
        ntpu_errf(
            err, errlen,
            "cannot create the golden model with n=%u ub=%u wb=%u acc=%u os=%u pm=%u payload=%u novec=%u notra=%u "
            "noconv=%u nopool=%u (out of memory)",
            cfg.n, cfg.ub_rows, cfg.wb_rows, cfg.acc_rows, cfg.os_rows, cfg.pm_rows, cfg.max_payload, cfg.no_vector,
            cfg.no_transpose_a, cfg.no_conv, cfg.no_pool);
        return NTPU_ERR_INVALID_ARG;
    }
    out->ops = &ref_ops;
    out->ctx = ref;
    return NTPU_OK;
}
