/* SPDX-License-Identifier: Apache-2.0 */
/* The golden model: the device of docs/protocol.md and docs/isa.md in C.
 *
 * Bytes from the host go through a three-state receiver (hunt for SOF, header,
 * body + CRC); every complete frame is checked and executed at once, and its
 * reply frame is appended to the transmit queue. Nothing here runs
 * concurrently, so commands trivially "take effect in the order they arrive"
 * and the device is never busy. One exception, invisible from outside: a run
 * of bf16 MATMULs accumulating into one ACC range is queued and computed as
 * one chain (ref_chain.h) before any command that could see the difference.
 *
 * Performance counters: `macs` is exact (it is architectural); the rest are an
 * ESTIMATE of what the RTL would measure, from a deliberately simple model in
 * which link transfer and execution never overlap:
 *   - the link moves cfg.link_bytes bytes per cycle each way (NTPU_LINK_BYTES,
 *     32, as vsim; 0 or 1: the byte-wide link of the boards), and its cycles
 *     are added as if nothing else ran meanwhile; received bytes' cycles also
 *     count as `stall_link`. The RTL overlaps memory commands with MATMULs
 *     (docs/decisions/0012-array-utilization.md), so with a wide link this
 *     estimate is high;
 *   - LOAD_W costs N cycles (one weight row per clock);
 *   - MATMUL costs rows + 2N cycles (one activation row enters per clock, plus
 *     filling and draining the skewed N x N array), in every addressing mode
 *     (TRANSPOSE_A, CONV: a zero row outside the map enters like any other);
 *     `array_busy` grows by rows;
 *   - ACT, RELU_GRAD and COLSUM cost rows + REF_VECTOR_LATENCY cycles (one row
 *     per clock through a short pipeline); POOL the rows of its full-size map
 *     (read, or written by the backward modes) + REF_VECTOR_LATENCY;
 *   - OPTIM costs 11 cycles per row with momentum, 8 without (reads, the chain
 *     of multiplies and adds, writes, one after another, as the RTL), plus
 *     REF_VECTOR_LATENCY; with ADAM REF_ADAM_ROW_CYCLES per row, plus its aux rows;
 *   - RUN costs, per command of its program, one cycle plus its LEN prefix and
 *     payload fetched at the link's width, at most 2N bytes per cycle (the RTL
 *     reads PM a row of 2N bytes at a time), on top of what the command itself costs;
 *   - stall_weight, stall_hazard and stall_tx stay 0 (nothing overlaps here).
 */
#include "ntpu_ref.h"

#include <stdlib.h>
#include <string.h>
#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "ntpu_crc32.h"
#include "numerics_internal.h"
#include "ref_chain.h"
#include "ref_conv.h"
#include "ref_threads.h"

#ifndef NTPU_LINK_BYTES
#define NTPU_LINK_BYTES 32
#endif
#ifndef NTPU_DEFAULT_N
#define NTPU_DEFAULT_N 8
#endif
#ifndef NTPU_DEFAULT_PM_ROWS
#define NTPU_DEFAULT_PM_ROWS 8192
#endif
#ifndef NTPU_DEFAULT_OS_ROWS
#define NTPU_DEFAULT_OS_ROWS 65536
#endif

/* Extra cycles of a MATMUL beyond one per row: fill + drain of the array. */
#define REF_MATMUL_LATENCY(n) (2u * (n))
/* Extra cycles of a vector command beyond one per row: reading the aux rows
 * and the pipeline's fill. An estimate, like every counter but `macs`. */
#define REF_VECTOR_LATENCY 4u
/* Cycles of one OPTIM ADAM row in the RTL (ntpu_vseq): reads, the chain of
 * multiplies and adds, two divides and a square root five bits a cycle, writes. */
#define REF_ADAM_ROW_CYCLES 33u
/* Largest N a configuration accepts (config_ok): sizes the per-row scratch. */
#define REF_MAX_N 64u
/* Rows a CONV MATMUL gathers at a time before the kernel runs over them. */
#define REF_GATHER_ROWS 1024u

enum rx_state {
    RX_HUNT,   /* dropping bytes until SOF */
    RX_HEADER, /* collecting SEQ and LEN */
    RX_BODY,   /* collecting PAYLOAD and CRC */
};

struct ntpu_ref {
    ntpu_ref_config cfg;

    /* Architectural state (docs/isa.md, "Device state"). Lanes are kept as
     * host integers; the wire's little-endian order is applied at the edges. */
    uint16_t *ub;        /* ub_rows x N */
    uint16_t *wb;        /* wb_rows x N */
    uint32_t *acc;       /* acc_rows x N: int32 or fp32 bits */
    uint32_t *os;        /* os_rows x N: fp32 bits (NULL when os_rows is 0) */
    uint16_t *w_active;  /* N x N, row i = array row i */
    uint16_t *w_pending; /* N x N */
    int pending;
    uint16_t *a_block;   /* N x N: one UB block transposed, for MATMUL TRANSPOSE_A */
    uint16_t *gather;    /* REF_GATHER_ROWS x N: the rows a CONV MATMUL streams */
    uint8_t *pm;         /* pm_rows x 2N bytes: programs, as they came over the wire */
    ntpu_ref_pool *pool; /* ntpu_ref_set_threads: workers for large MATMULs, or NULL */
    ref_chain *chain;    /* bf16 MATMULs queued as one chain (ref_chain.h) */
    int no_fusion;       /* ntpu_ref_set_fusion(0): every MATMUL runs at once */

    /* Receiver. frame[] holds SEQ, LEN (2), PAYLOAD, CRC (4): what the CRC
     * covers starts at frame[0]. */
    enum rx_state rx_state;
    uint8_t *frame;
    size_t frame_have;
    size_t frame_need;

    /* Transmit queue: bytes [tx_head, tx_tail) of tx[] are unread. */
    uint8_t *tx;
    size_t tx_head, tx_tail, tx_cap;
    uint32_t reply_head; /* the reply being built: SEQ, LEN and STATUS, as its CRC reads them */

    /* The SEQ of the next frame to run (docs/protocol.md, "Sequence numbers"). */
    uint8_t expected_seq;

    /* STATUS block fields. */
    uint8_t last_error;
    uint32_t errors;
    uint32_t commands;
    uint32_t dropped;

    uint64_t cnt[NTPU_CNT_COUNT];
    unsigned rx_part, tx_part; /* link bytes not yet a whole cycle */
};

ntpu_ref_config ntpu_ref_default_config(void)
{
    ntpu_ref_config c;
    c.n = NTPU_DEFAULT_N;
    c.ub_rows = 16384;
    c.wb_rows = 32768;
    c.acc_rows = 32768;
    c.os_rows = NTPU_DEFAULT_OS_ROWS;
    c.max_payload = 4112;
    c.no_vector = 0;
    c.no_transpose_a = 0;
    c.link_bytes = NTPU_LINK_BYTES;
    c.pm_rows = NTPU_DEFAULT_PM_ROWS;
    c.no_conv = 0;
    c.no_pool = 0;
    return c;
}

static int config_ok(const ntpu_ref_config *c)
{
    return c->n >= 2 && c->n <= REF_MAX_N && c->ub_rows >= 1 && c->ub_rows <= 65536 && c->wb_rows >= c->n &&
           c->wb_rows <= 65536 && c->acc_rows >= 1 && c->acc_rows <= 65536 && c->os_rows <= 65536 &&
           c->max_payload >= 1 + NTPU_COUNTERS_BYTES && c->max_payload <= 65535 && c->no_vector <= 1 &&
           c->no_transpose_a <= 1 && c->link_bytes <= 64 && c->pm_rows <= 65536 && c->no_conv <= 1 && c->no_pool <= 1;
}

/* Cycles the link takes for `bytes` more bytes, carrying the remainder. */
static uint64_t link_cycles(const ntpu_ref *r, unsigned *part, size_t bytes)
{
    unsigned w = r->cfg.link_bytes > 1 ? r->cfg.link_bytes : 1;
    uint64_t total = *part + (uint64_t)bytes;
    if (total < w) { /* most frames and replies are a few bytes: no division for them */
        *part = (unsigned)total;
        return 0;
    }
    *part = (unsigned)(total % w);
    return total / w;
}

ntpu_ref *ntpu_ref_new(const ntpu_ref_config *cfg)
{
    ntpu_ref_config c = cfg ? *cfg : ntpu_ref_default_config();
    if (!config_ok(&c))
        return NULL;
    ntpu_ref *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (c.no_vector) /* OS belongs to the vector unit's OPTIM, as the RTL's OS_ROWS needs VEC_EN */
        c.os_rows = 0;
    if (c.no_vector) /* POOL belongs to the vector unit too */
        c.no_pool = 1;
    r->cfg = c;
    size_t n = c.n;
    r->ub = calloc((size_t)c.ub_rows * n, sizeof *r->ub);
    r->wb = calloc((size_t)c.wb_rows * n, sizeof *r->wb);
    r->acc = calloc((size_t)c.acc_rows * n, sizeof *r->acc);
    r->os = c.os_rows ? calloc((size_t)c.os_rows * n, sizeof *r->os) : NULL;
    r->w_active = calloc(n * n, sizeof *r->w_active);
    r->w_pending = calloc(n * n, sizeof *r->w_pending);
    r->a_block = calloc(n * n, sizeof *r->a_block);
    r->gather = calloc((size_t)REF_GATHER_ROWS * n, sizeof *r->gather);
    r->pm = calloc((size_t)c.pm_rows * 2 * n + 1, 1); /* + 1: never calloc(0) */
    r->chain = ref_chain_new(c.n);
    r->frame = malloc(3 + (size_t)c.max_payload + NTPU_FRAME_TRAILER);
    /* Room for a few largest replies up front: a host that reads as it goes
     * never makes the queue grow. */
    r->tx_cap = 4 * ((size_t)c.max_payload + NTPU_FRAME_OVERHEAD);
    r->tx = malloc(r->tx_cap);
    if (!r->ub || !r->wb || !r->acc || (c.os_rows && !r->os) || !r->w_active || !r->w_pending || !r->a_block ||
        !r->gather || !r->pm || !r->chain || !r->frame || !r->tx) {
        ntpu_ref_free(r);
        return NULL;
    }
    r->rx_state = RX_HUNT;
    return r;
}

int ntpu_ref_set_threads(ntpu_ref *r, unsigned threads)
{
    if (!r || threads < 1 || threads > 64)
        return -1;
    ntpu_ref_pool_free(r->pool);
    r->pool = threads > 1 ? ntpu_ref_pool_new(threads) : NULL;
    return threads > 1 && !r->pool ? -1 : 0;
}

/* Runs the queued MATMUL chain: before anything that may observe or change what it reads or writes. */
static void flush_chain(ntpu_ref *r)
{
    ref_chain_flush(r->chain, r->acc, r->ub, r->cfg.ub_rows, r->pool);
}

int ntpu_ref_set_fusion(ntpu_ref *r, int on)
{
    if (!r)
        return -1;
    flush_chain(r);
    r->no_fusion = !on;
    return 0;
}

int ntpu_ref_set_dot(ntpu_ref *r, int on)
{
    if (!r)
        return -1;
    flush_chain(r);
    ref_chain_set_dot(r->chain, on);
    return 0;
}

void ntpu_ref_free(ntpu_ref *r)
{
    if (!r)
        return;
    free(r->ub);
    free(r->wb);
    free(r->acc);
    free(r->os);
    free(r->w_active);
    free(r->w_pending);
    free(r->a_block);
    free(r->gather);
    free(r->pm);
    ref_chain_free(r->chain);
    free(r->frame);
    free(r->tx);
    ntpu_ref_pool_free(r->pool);
    free(r);
}

/* ---------------------------------------------------------------- bytes */

static unsigned get16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* ---------------------------------------------------------------- replies */

/* Makes room for `extra` more bytes at tx_tail. Returns 0, or -1 when memory
 * runs out (the reply is then lost; the host sees a timeout and resyncs).
 * The unread bytes move to the front only when fewer of them remain than
 * were read: a host that lets many replies queue and reads them one at a
 * time would otherwise have them all moved for every reply. */
static int tx_reserve(ntpu_ref *r, size_t extra)
{
    if (r->tx_tail + extra <= r->tx_cap)
        return 0;
    size_t unread = r->tx_tail - r->tx_head;
    if (r->tx_head > 0 && unread <= r->tx_head) {
        memmove(r->tx, r->tx + r->tx_head, unread);
        r->tx_tail = unread;
        r->tx_head = 0;
        if (r->tx_tail + extra <= r->tx_cap)
            return 0;
    }
    size_t cap = r->tx_cap;
    while (cap < r->tx_tail + extra)
        cap *= 2;
    uint8_t *p = realloc(r->tx, cap);
    if (!p)
        return -1;
    r->tx = p;
    r->tx_cap = cap;
    return 0;
}

/* Starts a reply frame with status byte `st` and room for `data_len` bytes of
 * data; returns where the data goes (NULL when out of memory). Finish it with
 * reply_end. Status bookkeeping happens here: an error reply counts as an
 * error, an OK reply as a command executed. Callers that report the STATUS
 * block fill it in before calling this. */
static uint8_t *reply_begin(ntpu_ref *r, uint8_t seq, uint8_t st, size_t data_len)
{
    if (st != NTPU_DEV_OK) {
        r->errors++;
        r->last_error = st;
    } else {
        r->commands++;
    }
    size_t len = 1 + data_len;
    if (tx_reserve(r, len + NTPU_FRAME_OVERHEAD) != 0)
        return NULL;
    uint8_t *f = r->tx + r->tx_tail;
    f[0] = NTPU_SOF_REPLY;
    f[1] = seq;
    put16(f + 2, (unsigned)len);
    f[4] = st;
    r->reply_head = seq | (uint32_t)len << 8 | (uint32_t)st << 24;
    return f + 5;
}

/* The CRC of the reply's SEQ, LEN and status, from the value reply_begin
 * kept, not from the bytes it just stored. */
static uint32_t reply_head_crc(const ntpu_ref *r)
{
    return ntpu_crc32_word(0, r->reply_head);
}

/* reply_end with the reply's CRC known (crc, over its whole payload). */
static void reply_end_crc(ntpu_ref *r, uint32_t crc)
{
    uint8_t *f = r->tx + r->tx_tail;
    size_t len = (r->reply_head >> 8) & 0xFFFFu;
    put32(f + 4 + len, crc);
    size_t total = len + NTPU_FRAME_OVERHEAD;
    r->tx_tail += total;
    r->cnt[NTPU_CNT_TX_BYTES] += total;
    r->cnt[NTPU_CNT_CYCLES] += link_cycles(r, &r->tx_part, total);
}

static void reply_end(ntpu_ref *r)
{
    const size_t len = (r->reply_head >> 8) & 0xFFFFu;
    reply_end_crc(r, ntpu_crc32(reply_head_crc(r), r->tx + r->tx_tail + 5, len - 1));
}

static void reply_status(ntpu_ref *r, uint8_t seq, uint8_t st)
{
    if (reply_begin(r, seq, st, 0))
        reply_end(r);
}

/* ---------------------------------------------------------------- commands */

/* A memory id WRITE_MEM / READ_MEM accept: UB, WB, ACC, and PM and OS when there are. */
static int mem_ok(const ntpu_ref *r, unsigned mem)
{
    return mem <= NTPU_MEM_ACC || (mem == NTPU_MEM_PM && r->cfg.pm_rows > 0) ||
           (mem == NTPU_MEM_OS && r->cfg.os_rows > 0);
}

static unsigned mem_rows(const ntpu_ref *r, unsigned mem)
{
    return mem == NTPU_MEM_UB   ? r->cfg.ub_rows
           : mem == NTPU_MEM_WB ? r->cfg.wb_rows
           : mem == NTPU_MEM_PM ? r->cfg.pm_rows
           : mem == NTPU_MEM_OS ? r->cfg.os_rows
                                : r->cfg.acc_rows;
}

/* ACC and OS have 32-bit lanes, UB and WB 16-bit ones. */
static int wide(unsigned mem)
{
    return mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS;
}

static uint32_t *wide_rows(const ntpu_ref *r, unsigned mem, unsigned addr)
{
    return (mem == NTPU_MEM_OS ? r->os : r->acc) + (size_t)addr * r->cfg.n;
}

/* Rows of the memory a vector command's OUT field writes. */
static unsigned out_rows(const ntpu_ref *r, unsigned out)
{
    return out == NTPU_OUT_WB ? r->cfg.wb_rows : out == NTPU_OUT_ACC ? r->cfg.acc_rows : r->cfg.ub_rows;
}

static size_t row_bytes(const ntpu_ref *r, unsigned mem)
{
    return (size_t)r->cfg.n * (wide(mem) ? 4u : 2u);
}

/* The wire is little-endian: on such a host, lanes are copied as they are. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define REF_WIRE_ORDER 1
#else
#define REF_WIRE_ORDER 0
#endif

/* UB rows addr .. addr + rows - 1, about to be written: every writer of UB
 * gets its rows here, so that the chains' cache of converted A (ref_chain.h)
 * does not keep their old lanes. */
static uint16_t *ub_rows_written(ntpu_ref *r, unsigned long addr, unsigned long rows)
{
    ref_chain_ub_written(r->chain, addr, rows);
    return r->ub + (size_t)addr * r->cfg.n;
}

/* Rows of UB or WB to write. */
static uint16_t *narrow_rows_written(ntpu_ref *r, unsigned mem, unsigned addr, unsigned rows)
{
    return mem == NTPU_MEM_UB ? ub_rows_written(r, addr, rows) : r->wb + (size_t)addr * r->cfg.n;
}

static void write_rows(ntpu_ref *r, unsigned mem, unsigned addr, unsigned rows, const uint8_t *src)
{
    size_t lanes = (size_t)rows * r->cfg.n;
    if (mem == NTPU_MEM_PM) { /* bytes, kept in wire order */
        memcpy(r->pm + (size_t)addr * 2 * r->cfg.n, src, lanes * 2);
        return;
    }
    if (REF_WIRE_ORDER) {
        void *dst = wide(mem) ? (void *)wide_rows(r, mem, addr) : (void *)narrow_rows_written(r, mem, addr, rows);
        memcpy(dst, src, lanes * (wide(mem) ? 4u : 2u));
        return;
    }
    if (wide(mem)) {
        uint32_t *dst = wide_rows(r, mem, addr);
        for (size_t i = 0; i < lanes; i++)
            dst[i] = get32(src + 4 * i);
    } else {
        uint16_t *dst = narrow_rows_written(r, mem, addr, rows);
        for (size_t i = 0; i < lanes; i++)
            dst[i] = (uint16_t)get16(src + 2 * i);
    }
}

/* Where READ_MEM copies its rows from as they are: ACC, OS, UB or WB on a
 * little-endian host; NULL where the bytes need arranging (read_rows). */
static const void *wire_rows(const ntpu_ref *r, unsigned mem, unsigned addr)
{
    if (!REF_WIRE_ORDER || mem == NTPU_MEM_PM)
        return NULL;
    return wide(mem) ? (const void *)wide_rows(r, mem, addr)
                     : (const void *)((mem == NTPU_MEM_UB ? r->ub : r->wb) + (size_t)addr * r->cfg.n);
}

static void read_rows(const ntpu_ref *r, unsigned mem, unsigned addr, unsigned rows, uint8_t *dst)
{
    size_t lanes = (size_t)rows * r->cfg.n;
    if (mem == NTPU_MEM_PM) {
        memcpy(dst, r->pm + (size_t)addr * 2 * r->cfg.n, lanes * 2);
        return;
    }
    if (REF_WIRE_ORDER) {
        const void *src = wide(mem) ? (const void *)wide_rows(r, mem, addr)
                                    : (const void *)((mem == NTPU_MEM_UB ? r->ub : r->wb) + (size_t)addr * r->cfg.n);
        memcpy(dst, src, lanes * (wide(mem) ? 4u : 2u));
        return;
    }
    if (wide(mem)) {
        const uint32_t *src = wide_rows(r, mem, addr);
        for (size_t i = 0; i < lanes; i++)
            put32(dst + 4 * i, src[i]);
    } else {
        const uint16_t *src = (mem == NTPU_MEM_UB ? r->ub : r->wb) + (size_t)addr * r->cfg.n;
        for (size_t i = 0; i < lanes; i++)
            put16(dst + 2 * i, src[i]);
    }
}

/* dst = the N x N tile src read column by column; N = 8 (the default) with
 * the size known, so the compiler unrolls it. */
static void transpose_tile(uint16_t *dst, const uint16_t *src, unsigned n)
{
    if (n == 8) {
        for (unsigned i = 0; i < 8; i++)
            for (unsigned j = 0; j < 8; j++)
                dst[i * 8 + j] = src[j * 8 + i];
        return;
    }
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < n; j++)
            dst[i * n + j] = src[j * n + i];
}

/* A plain load is the tile's rows whole: one copy, not a test per lane. */
static void load_w(ntpu_ref *r, unsigned flags, unsigned wb_addr)
{
    unsigned n = r->cfg.n;
    const uint16_t *tile = r->wb + (size_t)wb_addr * n;
    if (flags & NTPU_LOADW_TRANSPOSE)
        transpose_tile(r->w_pending, tile, n);
    else
        memcpy(r->w_pending, tile, (size_t)n * n * sizeof *tile);
    r->pending = 1;
    r->cnt[NTPU_CNT_CYCLES] += n;
}

/* One MATMUL at once (ACC rows already cleared when it does not accumulate).
 * Without TRANSPOSE_A row m is UB[ub_addr + m]. With it, rows come in blocks
 * of N: block j is the N x N tile at UB[ub_addr + j*stride] read column by
 * column: the bf16 kernel reads the tiles in place; int8 gathers each into
 * a_block for the row kernel. With CONV (conv not NULL) the rows come from a
 * feature map (ref_conv.c), gathered into r->gather for the same kernels.
 * Rows are independent chains, so the kernels take as many at once as are
 * contiguous in UB (or gathered), and split a large MATMUL among threads (ntpu_ref_set_threads). */
static void matmul_now(ntpu_ref *r, unsigned flags, unsigned ub_addr, uint32_t *acc, unsigned rows, unsigned stride,
                       const ref_conv *conv)
{
    unsigned n = r->cfg.n;
    ntpu_ref_rows job = {.acc = acc,
                         .a = r->ub + (size_t)ub_addr * n,
                         .w = r->w_active,
                         .t_stride = (size_t)stride * n,
                         .rows = rows,
                         .n = n,
                         .bf16 = (flags & NTPU_MATMUL_BF16) != 0,
                         .transposed = (flags & NTPU_MATMUL_TRANSPOSE_A) != 0};
    if (conv) { /* the rows gathered a chunk at a time; whole N-row blocks for the weight gradient */
        const unsigned chunk = REF_GATHER_ROWS / n * n;
        job.a = r->gather;
        job.transposed = 0;
        for (unsigned m = 0; m < rows; m += chunk) {
            job.rows = rows - m < chunk ? rows - m : chunk;
            job.acc = acc + (size_t)m * n;
            ref_conv_gather(conv, r->ub, n, m, (unsigned)job.rows, r->gather);
            ntpu_ref_rows_run(r->pool, &job);
        }
    } else if (!job.transposed || job.bf16) { /* bf16 dW reads the tiles in place */
        ntpu_ref_rows_run(r->pool, &job);
    } else {
        for (unsigned m = 0; m < rows; m += n) {
            const uint16_t *blk = r->ub + ((size_t)ub_addr + (size_t)(m / n) * stride) * n;
            for (unsigned i = 0; i < n; i++)
                for (unsigned c = 0; c < n; c++)
                    r->a_block[(size_t)c * n + i] = blk[(size_t)i * n + c];
            ntpu_mac_int8_rows(acc + (size_t)m * n, r->a_block, r->w_active, n, n);
        }
    }
}

/* MATMUL: a bf16 one joins the queue when it accumulates onto a queued
 * chain's ACC range or starts a second chain beside the first, else the
 * queue runs first and it starts a new one (ref_chain.h); int8 ones (and all with ntpu_ref_set_fusion(0)) run at once.
 * The counters count each command here, whenever its arithmetic runs.
 * ub_end: one past the last UB row it may read. */
static void matmul(ntpu_ref *r, unsigned flags, unsigned ub_addr, unsigned acc_addr, unsigned rows, unsigned stride,
                   const ref_conv *conv, unsigned long ub_end)
{
    unsigned n = r->cfg.n;
    if (r->pending) { /* the loaded tile becomes the active one; the old buffer takes the next load */
        uint16_t *loaded = r->w_pending;
        r->w_pending = r->w_active;
        r->w_active = loaded;
        r->pending = 0;
    }
    const int queue = !r->no_fusion && (flags & NTPU_MATMUL_BF16);
    if (!queue || !ref_chain_joins(r->chain, flags, acc_addr, rows))
        flush_chain(r);
    uint32_t *acc = r->acc + (size_t)acc_addr * n;
    /* int32 0 and fp32 +0.0 alike; a queued chain starts its rows at +0.0 itself */
    if (!queue && !(flags & NTPU_MATMUL_ACCUMULATE))
        memset(acc, 0, (size_t)rows * n * sizeof *acc);
    if (queue) {
        ref_chain_add(r->chain, flags, acc_addr, rows, r->w_active, r->ub, ub_addr, stride, conv,
                      conv ? conv->ub_addr : ub_addr, ub_end);
    } else {
        matmul_now(r, flags, ub_addr, acc, rows, stride, conv);
    }
    r->cnt[NTPU_CNT_MACS] += (uint64_t)rows * n * n;
    r->cnt[NTPU_CNT_ARRAY_BUSY] += rows;
    r->cnt[NTPU_CNT_CYCLES] += rows + REF_MATMUL_LATENCY(n);
}

/* ---------------------------------------------------------------- vector unit */

/* Whether a vector command may run its rows as one stream of lanes, eight at
 * a time (ntpu_act_f32_lanes and kin): yes unless a range it writes starts
 * fewer than eight lanes above one it reads in the same memory, where a block
 * of eight would read a lane an earlier row of the same block should have
 * written first (the ISA runs rows one at a time, each read before written). */
static int lanes_ok(unsigned read, unsigned write, unsigned rows, unsigned n)
{
    return !(read < write && write - read < rows && (write - read) * n < 8);
}

/* Where OUT puts `rows` fp32 result rows from row `dst`: ACC as they are, UB or WB as bf16. */
static void out_ptrs(ntpu_ref *r, unsigned out, unsigned dst, unsigned rows, uint32_t **d32, uint16_t **d16)
{
    *d32 = out == NTPU_OUT_ACC ? r->acc + (size_t)dst * r->cfg.n : NULL;
    *d16 =
        out == NTPU_OUT_ACC ? NULL : narrow_rows_written(r, out == NTPU_OUT_UB ? NTPU_MEM_UB : NTPU_MEM_WB, dst, rows);
}

/* ACT to int8 (OUT_INT8): bias, ReLU and requantization in int32, row by row. */
static void act_int8(ntpu_ref *r, unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned aux)
{
    const unsigned n = r->cfg.n;
    /* The aux rows are read once, before row 0 (docs/isa.md): copies, so that
     * this command's own writes to them cannot reach later rows. */
    uint32_t bias[REF_MAX_N] = {0}, mult[REF_MAX_N], shift[REF_MAX_N];
    if (flags & NTPU_ACT_BIAS)
        memcpy(bias, r->acc + (size_t)aux * n, n * sizeof *bias);
    memcpy(mult, r->acc + ((size_t)aux + 1) * n, n * sizeof *mult);
    memcpy(shift, r->acc + ((size_t)aux + 2) * n, n * sizeof *shift);
    uint16_t *out = ub_rows_written(r, dst, rows);
    for (unsigned row = 0; row < rows; row++) {
        const uint32_t *x = r->acc + (size_t)(src + row) * n;
        uint16_t *d = out + (size_t)row * n;
        for (unsigned j = 0; j < n; j++) {
            uint32_t v = x[j] + bias[j]; /* unsigned: the int32 add wraps */
            if ((flags & NTPU_ACT_RELU) && (v & 0x80000000u))
                v = 0;
            /* ntpu_requantize clamps the shift to 0..31 itself. */
            d[j] = (uint16_t)(int16_t)ntpu_requantize((int32_t)v, (int32_t)mult[j], (int32_t)shift[j], 0);
        }
    }
}

static void act(ntpu_ref *r, unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned aux)
{
    const unsigned n = r->cfg.n, out = flags & NTPU_OUT_MASK;
    r->cnt[NTPU_CNT_CYCLES] += rows + REF_VECTOR_LATENCY;
    if (out == NTPU_OUT_INT8) {
        act_int8(r, flags, src, dst, rows, aux);
        return;
    }
    uint32_t bias[REF_MAX_N], *d32; /* the bias row read once, before row 0, as for int8 */
    uint16_t *d16;
    if (flags & NTPU_ACT_BIAS)
        memcpy(bias, r->acc + (size_t)aux * n, n * sizeof *bias);
    out_ptrs(r, out, dst, rows, &d32, &d16);
    const unsigned step = out != NTPU_OUT_ACC || lanes_ok(src, dst, rows, n) ? rows : 1;
    for (unsigned row = 0; row < rows; row += step) {
        const size_t at = (size_t)row * n, count = (size_t)(rows - row < step ? rows - row : step) * n;
        ntpu_act_f32_lanes(r->acc + (size_t)src * n + at, count, n, (flags & NTPU_ACT_BIAS) ? bias : NULL,
                           (flags & NTPU_ACT_RELU) != 0, d32 ? d32 + at : NULL, d16 ? d16 + at : NULL);
    }
}

static void relu_grad(ntpu_ref *r, unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned mask)
{
    const unsigned n = r->cfg.n, out = flags & NTPU_OUT_MASK;
    uint32_t *d32;
    uint16_t *d16;
    out_ptrs(r, out, dst, rows, &d32, &d16);
    const int ok =
        out == NTPU_OUT_ACC ? lanes_ok(src, dst, rows, n) : out != NTPU_OUT_UB || lanes_ok(mask, dst, rows, n);
    const unsigned step = ok ? rows : 1;
    for (unsigned row = 0; row < rows; row += step) {
        const size_t at = (size_t)row * n, count = (size_t)(rows - row < step ? rows - row : step) * n;
        ntpu_relu_grad_lanes(r->acc + (size_t)src * n + at, r->ub + (size_t)mask * n + at, count, d32 ? d32 + at : NULL,
                             d16 ? d16 + at : NULL);
    }
    r->cnt[NTPU_CNT_CYCLES] += rows + REF_VECTOR_LATENCY;
}

static void colsum(ntpu_ref *r, unsigned flags, unsigned src, unsigned dst, unsigned rows)
{
    const unsigned n = r->cfg.n;
    uint32_t s[REF_MAX_N];
    if (flags & NTPU_COLSUM_ACCUMULATE)
        memcpy(s, r->acc + (size_t)dst * n, n * sizeof *s);
    else
        memset(s, 0, n * sizeof *s);
    ntpu_colsum_f32_rows(s, r->acc + (size_t)src * n, rows, n);
    memcpy(r->acc + (size_t)dst * n, s, n * sizeof *s);
    r->cnt[NTPU_CNT_CYCLES] += rows + REF_VECTOR_LATENCY;
}

/* OPTIM (docs/isa.md, "Version 1.3"): rows one at a time in the ISA, each
 * reading all its operands before writing; as one stream of lanes unless g's
 * rows sit just below p's or s's (lanes_ok), so any overlap gives its result. */
static void optim(ntpu_ref *r, unsigned flags, unsigned prow, unsigned grow, unsigned rows, unsigned aux)
{
    const unsigned n = r->cfg.n, mom = flags & NTPU_OPTIM_MOMENTUM;
    uint32_t lr[REF_MAX_N], wd[REF_MAX_N], mu[REF_MAX_N] = {0};
    memcpy(lr, r->acc + (size_t)aux * n, n * sizeof *lr);
    memcpy(wd, r->acc + ((size_t)aux + 1) * n, n * sizeof *wd);
    if (mom)
        memcpy(mu, r->acc + ((size_t)aux + 2) * n, n * sizeof *mu);
    uint32_t *p = r->acc + (size_t)prow * n, *s = mom ? r->acc + ((size_t)prow + rows) * n : NULL;
    const uint32_t *g = r->acc + (size_t)grow * n;
    const int ok = lanes_ok(grow, prow, rows, n) && (!mom || lanes_ok(grow, prow + rows, rows, n));
    const unsigned step = ok ? rows : 1;
    for (unsigned row = 0; row < rows; row += step) {
        const size_t at = (size_t)row * n, count = (size_t)(rows - row < step ? rows - row : step) * n;
        ntpu_optim_f32_lanes(p + at, g + at, s ? s + at : NULL, count, n, lr, wd, mu);
    }
    r->cnt[NTPU_CNT_CYCLES] += (uint64_t)rows * (mom ? 11u : 8u) + REF_VECTOR_LATENCY;
}

/* OPTIM ADAM (docs/isa.md, "Version 1.4"): as optim(), with m and v in OS.
 * The row function goes through the elements in order, each block of eight
 * reading before it writes: the ISA's row by row result, unless a block could
 * read a g that a row before it in the same block writes as p (g's rows just
 * below p's, less than eight lanes apart), which is then run a row at a time. */
static void optim_adam(ntpu_ref *r, unsigned flags, unsigned prow, unsigned grow, unsigned rows, unsigned aux,
                       unsigned srow)
{
    const unsigned n = r->cfg.n;
    const int decoupled = (flags & NTPU_OPTIM_DECOUPLED) != 0;
    uint32_t k[NTPU_ADAM_CONSTS * REF_MAX_N]; /* read once, before row 0 */
    memcpy(k, r->acc + (size_t)aux * n, sizeof(uint32_t) * NTPU_ADAM_CONSTS * n);
    uint32_t *p = r->acc + (size_t)prow * n, *m = r->os + (size_t)srow * n, *v = r->os + ((size_t)srow + rows) * n;
    const uint32_t *g = r->acc + (size_t)grow * n;
    const unsigned step = grow < prow && (prow - grow) * n < 8 ? 1 : rows;
    for (unsigned row = 0; row < rows; row += step) {
        const size_t at = (size_t)row * n;
        ntpu_adam_f32_row(p + at, g + at, m + at, v + at, (size_t)(rows - row < step ? rows - row : step) * n, k, n,
                          decoupled, NTPU_ADAM_DEVICE);
    }
    r->cnt[NTPU_CNT_CYCLES] += (uint64_t)rows * REF_ADAM_ROW_CYCLES + NTPU_ADAM_AUX_ROWS + REF_VECTOR_LATENCY;
}

static void info_block(const ntpu_ref *r, uint8_t *p)
{
    memset(p, 0, NTPU_ID_BYTES);
    put32(p + NTPU_ID_OFF_MAGIC, NTPU_ID_MAGIC);
    p[NTPU_ID_OFF_VERSION_MAJOR] = NTPU_VERSION_MAJOR;
    p[NTPU_ID_OFF_VERSION_MINOR] = NTPU_VERSION_MINOR;
    p[NTPU_ID_OFF_ROWS] = (uint8_t)r->cfg.n;
    p[NTPU_ID_OFF_COLS] = (uint8_t)r->cfg.n;
    p[NTPU_ID_OFF_DTYPES] = NTPU_DTYPE_INT8_BIT | NTPU_DTYPE_BF16_BIT;
    p[NTPU_ID_OFF_FEATURES] =
        (uint8_t)(NTPU_FEATURE_TRANSPOSE_BIT | (r->cfg.no_transpose_a ? 0 : NTPU_FEATURE_TRANSPOSE_A_BIT) |
                  (r->cfg.no_vector ? 0 : NTPU_FEATURE_VECTOR_BIT | NTPU_FEATURE_OPTIM_BIT) |
                  (r->cfg.pm_rows ? NTPU_FEATURE_PROGRAM_BIT : 0) | (r->cfg.os_rows ? NTPU_FEATURE_ADAM_BIT : 0) |
                  (r->cfg.no_conv ? 0 : NTPU_FEATURE_CONV_BIT) | (r->cfg.no_pool ? 0 : NTPU_FEATURE_POOL_BIT));
    put16(p + NTPU_ID_OFF_MAX_PAYLOAD, r->cfg.max_payload);
    put32(p + NTPU_ID_OFF_UB_ROWS, r->cfg.ub_rows);
    put32(p + NTPU_ID_OFF_WB_ROWS, r->cfg.wb_rows);
    put32(p + NTPU_ID_OFF_ACC_ROWS, r->cfg.acc_rows);
    put32(p + NTPU_ID_OFF_CLOCK_HZ, 0);
    p[NTPU_ID_OFF_PLATFORM] = 0;
    put32(p + NTPU_ID_OFF_PM_ROWS, r->cfg.pm_rows);
    put32(p + NTPU_ID_OFF_OS_ROWS, r->cfg.os_rows);
}

/* The first checks of a vector-unit command: the unit is there, and the length is the opcode's. */
static int vector_cmd_ok(const ntpu_ref *r, size_t len, size_t want)
{
    if (r->cfg.no_vector)
        return NTPU_DEV_ERR_OPCODE;
    return len != want ? NTPU_DEV_ERR_LENGTH : NTPU_DEV_OK;
}

static int run(ntpu_ref *r, uint8_t seq, const uint8_t *p, size_t len);

/* MATMUL's checks from the length on (docs/isa.md, "Errors"), then the command. */
static int matmul_cmd(ntpu_ref *r, const uint8_t *p, size_t len)
{
    const unsigned n = r->cfg.n;
    /* The flags byte says which fixed part applies, so it must exist first. */
    if (len < 2 || len != ref_matmul_len(p[1]))
        return NTPU_DEV_ERR_LENGTH;
    unsigned flags = p[1], ub_addr = get16(p + 2), acc_addr = get16(p + 4), rows = get16(p + 6);
    const unsigned conv = NTPU_MATMUL_CONV | NTPU_MATMUL_CONV_T;
    if ((flags & NTPU_MATMUL_RESERVED) || (r->cfg.no_transpose_a && (flags & NTPU_MATMUL_TRANSPOSE_A)) ||
        (r->cfg.no_conv && (flags & conv)))
        return NTPU_DEV_ERR_ARG;
    if (flags & conv) {
        ref_conv c;
        /* CONV_T is a variant of the forward gather: not alone, not with the weight-gradient mode */
        if (!(flags & NTPU_MATMUL_CONV) || ((flags & NTPU_MATMUL_CONV_T) && (flags & NTPU_MATMUL_TRANSPOSE_A)))
            return NTPU_DEV_ERR_ARG;
        int st = ref_conv_decode(p, n, &c);
        if (st != NTPU_DEV_OK)
            return st;
        if (ref_conv_ub_end(&c, n) > r->cfg.ub_rows || (unsigned long)acc_addr + rows > r->cfg.acc_rows)
            return NTPU_DEV_ERR_RANGE;
        matmul(r, flags, ub_addr, acc_addr, rows, 0, &c, (unsigned long)ref_conv_ub_end(&c, n));
        return NTPU_DEV_OK;
    }
    unsigned stride = (flags & NTPU_MATMUL_TRANSPOSE_A) ? get16(p + 8) : 0;
    unsigned long long ub_end = (unsigned long long)ub_addr + rows;
    if (flags & NTPU_MATMUL_TRANSPOSE_A) {
        if (rows % n)
            return NTPU_DEV_ERR_ARG;
        if (rows > 0) /* the last block ends N rows after its start */
            ub_end = (unsigned long long)ub_addr + (unsigned long long)(rows / n - 1) * stride + n;
    }
    if (ub_end > r->cfg.ub_rows || (unsigned long)acc_addr + rows > r->cfg.acc_rows)
        return NTPU_DEV_ERR_RANGE;
    matmul(r, flags, ub_addr, acc_addr, rows, stride, NULL, (unsigned long)ub_end);
    return NTPU_DEV_OK;
}

/* Checks a command in the order docs/isa.md ("Errors") fixes and runs it.
 * Returns the status for commands without reply data; commands with data
 * send their own reply and return -1. `inner`: the command comes from a
 * program (RUN), where the commands that reply with data or touch the link
 * are unknown opcodes and PM is no memory. */
static int execute(ntpu_ref *r, uint8_t seq, const uint8_t *p, size_t len, int inner)
{
    const unsigned n = r->cfg.n;
    if (inner && (p[0] == NTPU_OP_INFO || p[0] == NTPU_OP_READ_MEM || p[0] == NTPU_OP_STATUS ||
                  p[0] == NTPU_OP_COUNTERS || p[0] == NTPU_OP_SYNC || p[0] == NTPU_OP_RUN))
        return NTPU_DEV_ERR_OPCODE;
    /* Every other command may read or write what a queued chain does; WRITE_MEM checks below. */
    if (p[0] != NTPU_OP_LOAD_W && p[0] != NTPU_OP_MATMUL && p[0] != NTPU_OP_WRITE_MEM)
        flush_chain(r);
    switch (p[0]) {
    case NTPU_OP_NOP:
    case NTPU_OP_FENCE: return len == 1 ? NTPU_DEV_OK : NTPU_DEV_ERR_LENGTH;

    case NTPU_OP_INFO: {
        if (len != NTPU_LEN_INFO)
            return NTPU_DEV_ERR_LENGTH;
        uint8_t *d = reply_begin(r, seq, NTPU_DEV_OK, NTPU_ID_BYTES);
        if (d) {
            info_block(r, d);
            reply_end(r);
        }
        return -1;
    }

    case NTPU_OP_WRITE_MEM:
    case NTPU_OP_READ_MEM: {
        int write = p[0] == NTPU_OP_WRITE_MEM;
        if (write ? len < NTPU_LEN_MEM_HDR : len != NTPU_LEN_MEM_HDR)
            return NTPU_DEV_ERR_LENGTH;
        unsigned mem = p[1], addr = get16(p + 2), rows = get16(p + 4);
        if (!mem_ok(r, mem) || (mem == NTPU_MEM_PM && inner))
            return NTPU_DEV_ERR_MEM;
        size_t bytes = (size_t)rows * row_bytes(r, mem);
        if (write ? len != NTPU_LEN_MEM_HDR + bytes : 1 + bytes > r->cfg.max_payload)
            return NTPU_DEV_ERR_LENGTH;
        if ((unsigned long)addr + rows > mem_rows(r, mem))
            return NTPU_DEV_ERR_RANGE;
        if (write) {
            if ((mem == NTPU_MEM_UB || mem == NTPU_MEM_ACC) &&
                ref_chain_touches(r->chain, mem == NTPU_MEM_UB, addr, rows))
                flush_chain(r);
            write_rows(r, mem, addr, rows, p + NTPU_LEN_MEM_HDR);
            return NTPU_DEV_OK;
        }
        uint8_t *d = reply_begin(r, seq, NTPU_DEV_OK, bytes);
        const void *src = wire_rows(r, mem, addr);
        if (d && src) { /* the rows into the reply and its CRC in one pass */
            reply_end_crc(r, ntpu_crc32_copy(reply_head_crc(r), d, src, bytes));
        } else if (d) {
            read_rows(r, mem, addr, rows, d);
            reply_end(r);
        }
        return -1;
    }

    case NTPU_OP_LOAD_W: {
        if (len != NTPU_LEN_LOAD_W)
            return NTPU_DEV_ERR_LENGTH;
        unsigned flags = p[1], wb_addr = get16(p + 2);
        if (flags & ~NTPU_LOADW_TRANSPOSE)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)wb_addr + n > r->cfg.wb_rows)
            return NTPU_DEV_ERR_RANGE;
        load_w(r, flags, wb_addr);
        return NTPU_DEV_OK;
    }

    case NTPU_OP_MATMUL: return matmul_cmd(r, p, len);

    case NTPU_OP_POOL: {
        if (r->cfg.no_pool)
            return NTPU_DEV_ERR_OPCODE;
        if (len != NTPU_LEN_POOL)
            return NTPU_DEV_ERR_LENGTH;
        ref_pool pc;
        int st = ref_pool_decode(p, &pc);
        if (st != NTPU_DEV_OK)
            return st;
        if (!ref_pool_in_range(&pc, r->cfg.ub_rows, r->cfg.acc_rows))
            return NTPU_DEV_ERR_RANGE;
        unsigned long at[2], count[2];
        for (unsigned i = ref_pool_ub_written(&pc, at, count); i-- > 0;)
            ub_rows_written(r, at[i], count[i]);
        r->cnt[NTPU_CNT_CYCLES] += ref_pool_run(&pc, r->ub, r->acc, n) + REF_VECTOR_LATENCY;
        return NTPU_DEV_OK;
    }

    case NTPU_OP_ACT: {
        int st = vector_cmd_ok(r, len, NTPU_LEN_ACT);
        if (st != NTPU_DEV_OK)
            return st;
        unsigned flags = p[1], src = get16(p + 2), dst = get16(p + 4), rows = get16(p + 6), aux = get16(p + 8);
        if (flags & ~(NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_MASK))
            return NTPU_DEV_ERR_ARG;
        unsigned out = flags & NTPU_OUT_MASK;
        /* the highest aux row used, plus one; 0 when none is */
        unsigned long aux_end = out == NTPU_OUT_INT8 ? aux + 3ul : (flags & NTPU_ACT_BIAS) ? aux + 1ul : 0;
        if ((unsigned long)src + rows > r->cfg.acc_rows || (unsigned long)dst + rows > out_rows(r, out) ||
            aux_end > r->cfg.acc_rows)
            return NTPU_DEV_ERR_RANGE;
        act(r, flags, src, dst, rows, aux);
        return NTPU_DEV_OK;
    }

    case NTPU_OP_RELU_GRAD: {
        int st = vector_cmd_ok(r, len, NTPU_LEN_RELU_GRAD);
        if (st != NTPU_DEV_OK)
            return st;
        unsigned flags = p[1], src = get16(p + 2), dst = get16(p + 4), rows = get16(p + 6), mask = get16(p + 8);
        if ((flags & ~NTPU_OUT_MASK) || (flags & NTPU_OUT_MASK) == NTPU_OUT_INT8)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)src + rows > r->cfg.acc_rows || (unsigned long)mask + rows > r->cfg.ub_rows ||
            (unsigned long)dst + rows > out_rows(r, flags & NTPU_OUT_MASK))
            return NTPU_DEV_ERR_RANGE;
        relu_grad(r, flags, src, dst, rows, mask);
        return NTPU_DEV_OK;
    }

    case NTPU_OP_COLSUM: {
        int st = vector_cmd_ok(r, len, NTPU_LEN_COLSUM);
        if (st != NTPU_DEV_OK)
            return st;
        unsigned flags = p[1], src = get16(p + 2), dst = get16(p + 4), rows = get16(p + 6);
        if (flags & ~NTPU_COLSUM_ACCUMULATE)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)src + rows > r->cfg.acc_rows || dst >= r->cfg.acc_rows)
            return NTPU_DEV_ERR_RANGE;
        colsum(r, flags, src, dst, rows);
        return NTPU_DEV_OK;
    }

    case NTPU_OP_OPTIM: {
        /* The flags byte says which fixed part applies (ADAM adds s), so it must exist first. */
        int st = vector_cmd_ok(r, len, len >= 2 && (p[1] & NTPU_OPTIM_ADAM) ? NTPU_LEN_OPTIM_ADAM : NTPU_LEN_OPTIM);
        if (st != NTPU_DEV_OK)
            return st;
        unsigned flags = p[1], prow = get16(p + 2), grow = get16(p + 4), rows = get16(p + 6), aux = get16(p + 8);
        if (flags & ~(NTPU_OPTIM_MOMENTUM | NTPU_OPTIM_ADAM | NTPU_OPTIM_DECOUPLED))
            return NTPU_DEV_ERR_ARG;
        if (flags & (NTPU_OPTIM_ADAM | NTPU_OPTIM_DECOUPLED)) {
            /* ADAM needs OS; MOMENTUM with it and DECOUPLED without it are reserved combinations */
            if (!r->cfg.os_rows || !(flags & NTPU_OPTIM_ADAM) || (flags & NTPU_OPTIM_MOMENTUM))
                return NTPU_DEV_ERR_ARG;
            unsigned srow = get16(p + 10);
            if ((unsigned long)prow + rows > r->cfg.acc_rows || (unsigned long)grow + rows > r->cfg.acc_rows ||
                (unsigned long)aux + NTPU_ADAM_AUX_ROWS > r->cfg.acc_rows ||
                (unsigned long)srow + 2ul * rows > r->cfg.os_rows)
                return NTPU_DEV_ERR_RANGE;
            optim_adam(r, flags, prow, grow, rows, aux, srow);
            return NTPU_DEV_OK;
        }
        /* with MOMENTUM the state rows follow the parameter rows; aux + 2 (+ 3) constant rows */
        unsigned long mom = flags & NTPU_OPTIM_MOMENTUM;
        if ((unsigned long)prow + rows * (1 + mom) > r->cfg.acc_rows || (unsigned long)grow + rows > r->cfg.acc_rows ||
            (unsigned long)aux + 2 + mom > r->cfg.acc_rows)
            return NTPU_DEV_ERR_RANGE;
        optim(r, flags, prow, grow, rows, aux);
        return NTPU_DEV_OK;
    }

    case NTPU_OP_RUN: {
        if (r->cfg.pm_rows == 0)
            return NTPU_DEV_ERR_OPCODE;
        if (len != NTPU_LEN_RUN)
            return NTPU_DEV_ERR_LENGTH;
        if (p[1] != 0)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)get16(p + 2) + get16(p + 4) > r->cfg.pm_rows)
            return NTPU_DEV_ERR_RANGE;
        return run(r, seq, p, len);
    }

    case NTPU_OP_STATUS: {
        if (len != NTPU_LEN_STATUS)
            return NTPU_DEV_ERR_LENGTH;
        /* Snapshot before reply_begin counts this STATUS as a command. */
        uint8_t blk[NTPU_STATUS_BYTES] = {0};
        blk[NTPU_STATUS_OFF_BUSY] = 0;
        blk[NTPU_STATUS_OFF_LAST_ERROR] = r->last_error;
        put32(blk + NTPU_STATUS_OFF_ERRORS, r->errors);
        put32(blk + NTPU_STATUS_OFF_COMMANDS, r->commands);
        put32(blk + NTPU_STATUS_OFF_DROPPED, r->dropped);
        uint8_t *d = reply_begin(r, seq, NTPU_DEV_OK, sizeof blk);
        if (d) {
            memcpy(d, blk, sizeof blk);
            reply_end(r);
        }
        return -1;
    }

    case NTPU_OP_COUNTERS: {
        if (len != NTPU_LEN_COUNTERS)
            return NTPU_DEV_ERR_LENGTH;
        unsigned flags = p[1];
        if (flags & ~NTPU_COUNTERS_CLEAR)
            return NTPU_DEV_ERR_ARG;
        uint8_t blk[NTPU_COUNTERS_BYTES];
        for (unsigned i = 0; i < NTPU_CNT_COUNT; i++)
            put64(blk + 8 * i, r->cnt[i]);
        if (flags & NTPU_COUNTERS_CLEAR)
            memset(r->cnt, 0, sizeof r->cnt);
        uint8_t *d = reply_begin(r, seq, NTPU_DEV_OK, sizeof blk);
        if (d) {
            memcpy(d, blk, sizeof blk);
            reply_end(r);
        }
        return -1;
    }

    default: return NTPU_DEV_ERR_OPCODE;
    }
}

/* RUN, its own checks passed: the program is the bytes of PM rows addr ..
 * addr + rows - 1, a sequence of [LEN u16][payload] that ends at a LEN of 0 or
 * when fewer than 2 bytes remain. Each command runs as execute() would run a
 * frame, without a reply; the first that fails stops the program. The reply
 * carries the status and `done`, the number of commands that ran. */
static int run(ntpu_ref *r, uint8_t seq, const uint8_t *p, size_t len)
{
    (void)len;
    const size_t row = 2u * r->cfg.n;
    const uint8_t *prog = r->pm + (size_t)get16(p + 2) * row;
    const size_t size = (size_t)get16(p + 4) * row;
    /* PM bytes fetched per cycle in the estimate: the link's width, at most a
     * row of 2N (the RTL never reads across a row) */
    const unsigned w = r->cfg.link_bytes > 1 ? r->cfg.link_bytes : 1;
    const unsigned fetch = w < row ? w : (unsigned)row;
    size_t at = 0;
    unsigned done = 0;
    int st = NTPU_DEV_OK;
    while (at + NTPU_PROG_LEN_BYTES <= size) {
        size_t clen = get16(prog + at);
        if (clen == 0)
            break;
        /* one cycle per command, plus the prefix and the payload fetched from PM */
        r->cnt[NTPU_CNT_CYCLES] += 1 + (NTPU_PROG_LEN_BYTES + clen + fetch - 1) / fetch;
        if (clen > r->cfg.max_payload || at + NTPU_PROG_LEN_BYTES + clen > size) {
            st = NTPU_DEV_ERR_LENGTH;
            break;
        }
        st = execute(r, seq, prog + at + NTPU_PROG_LEN_BYTES, clen, 1);
        if (st != NTPU_DEV_OK)
            break;
        done++;
        at += NTPU_PROG_LEN_BYTES + clen;
    }
    flush_chain(r); /* a program's chains end with it */
    uint8_t *d = reply_begin(r, seq, (uint8_t)st, NTPU_RUN_REPLY_BYTES);
    if (d) {
        put16(d, done);
        reply_end(r);
    }
    return -1;
}

/* A whole frame at f: SEQ, LEN, PAYLOAD, CRC (r->frame, or in place in the
 * host's buffer). */
static void frame_done(ntpu_ref *r, const uint8_t *f)
{
    uint8_t seq = f[0];
    size_t len = get16(f + 1);
    if (ntpu_crc32(0, f, 3 + len) != get32(f + 3 + len)) {
        reply_status(r, seq, NTPU_DEV_ERR_CRC);
        return;
    }
    const uint8_t *p = f + 3;
    if (p[0] == NTPU_OP_SYNC) {
        /* Any SEQ: SYNC is how a host that lost track learns expected_seq. */
        if (len != NTPU_LEN_SYNC) {
            reply_status(r, seq, NTPU_DEV_ERR_LENGTH);
            return;
        }
        uint8_t *d = reply_begin(r, seq, NTPU_DEV_OK, 1);
        if (d) {
            d[0] = r->expected_seq;
            reply_end(r);
        }
        return;
    }
    if (seq != r->expected_seq) {
        /* A frame before this one was lost: run nothing until it comes again. */
        reply_status(r, seq, NTPU_DEV_ERR_SEQ);
        return;
    }
    r->expected_seq++;
    int st = execute(r, seq, p, len, 0);
    if (st > 0) /* an error changes no memory, but a queued chain need not outlive it */
        flush_chain(r);
    if (st >= 0)
        reply_status(r, seq, (uint8_t)st);
}

/* ---------------------------------------------------------------- stream */

/* Counted before executing, so a COUNTERS frame sees its own bytes. */
static void count_rx(ntpu_ref *r, size_t bytes)
{
    r->cnt[NTPU_CNT_RX_BYTES] += bytes;
    uint64_t rx_cycles = link_cycles(r, &r->rx_part, bytes);
    r->cnt[NTPU_CNT_STALL_LINK] += rx_cycles;
    r->cnt[NTPU_CNT_CYCLES] += rx_cycles;
}

/* The length of the frame at buf when the receiver is between frames, buf
 * holds all of it and its LEN is one the receiver accepts: it then runs
 * where it lies, with no copy into r->frame. 0: the byte-wise receiver
 * takes it (split frames, garbage, a bad LEN), with the same outcome. */
static size_t whole_frame(const ntpu_ref *r, const uint8_t *buf, size_t n)
{
    if (r->rx_state != RX_HUNT || n < NTPU_FRAME_OVERHEAD || buf[0] != NTPU_SOF_CMD)
        return 0;
    size_t len = get16(buf + 2);
    if (len == 0 || len > r->cfg.max_payload || n - NTPU_FRAME_OVERHEAD < len)
        return 0;
    return len + NTPU_FRAME_OVERHEAD;
}

/* One step of the byte-wise receiver over buf[0..n): returns the bytes it
 * used. Whatever it drops while hunting stops short of the next SOF, so a
 * whole frame behind garbage still runs in place. */
static size_t receive_step(ntpu_ref *r, const uint8_t *buf, size_t n)
{
    size_t used;
    int header_in = 0, frame_in = 0;
    switch (r->rx_state) {
    case RX_HUNT: {
        const uint8_t *sof = memchr(buf, NTPU_SOF_CMD, n);
        used = sof ? (size_t)(sof - buf) : n;
        r->dropped += (uint32_t)used;
        if (used == 0) { /* SOF first */
            used = 1;
            r->frame_have = 0;
            r->rx_state = RX_HEADER;
        }
        break;
    }
    case RX_HEADER:
        r->frame[r->frame_have++] = buf[0];
        used = 1;
        header_in = r->frame_have == 3;
        break;
    default: /* RX_BODY */
        used = r->frame_need - r->frame_have;
        if (used > n)
            used = n;
        memcpy(r->frame + r->frame_have, buf, used);
        r->frame_have += used;
        frame_in = r->frame_have == r->frame_need;
        break;
    }
    count_rx(r, used);
    if (header_in) {
        size_t len = get16(r->frame + 1);
        if (len == 0 || len > r->cfg.max_payload) {
            /* Answered now, and hunting resumes with the byte after LEN:
             * a garbage header must not swallow the frames behind it. */
            reply_status(r, r->frame[0], NTPU_DEV_ERR_LENGTH);
            r->rx_state = RX_HUNT;
        } else {
            r->frame_need = 3 + len + NTPU_FRAME_TRAILER;
            r->rx_state = RX_BODY;
        }
    } else if (frame_in) {
        frame_done(r, r->frame);
        r->rx_state = RX_HUNT;
    }
    return used;
}

void ntpu_ref_write(ntpu_ref *r, const uint8_t *buf, size_t n)
{
    if (!r || !buf)
        return;
    while (n > 0) {
        size_t used = whole_frame(r, buf, n);
        if (used) {
            count_rx(r, used);
            frame_done(r, buf + 1);
        } else {
            used = receive_step(r, buf, n);
        }
        buf += used;
        n -= used;
    }
}

const uint8_t *ntpu_ref_peek(const ntpu_ref *r, size_t *n)
{
    *n = r ? r->tx_tail - r->tx_head : 0;
    return *n ? r->tx + r->tx_head : NULL;
}

void ntpu_ref_consume(ntpu_ref *r, size_t n)
{
    if (!r)
        return;
    size_t k = r->tx_tail - r->tx_head;
    r->tx_head += n < k ? n : k;
    if (r->tx_head == r->tx_tail)
        r->tx_head = r->tx_tail = 0;
}

size_t ntpu_ref_read(ntpu_ref *r, uint8_t *buf, size_t cap)
{
    if (!r || !buf)
        return 0;
    size_t k = r->tx_tail - r->tx_head;
    if (k > cap)
        k = cap;
    memcpy(buf, r->tx + r->tx_head, k);
    ntpu_ref_consume(r, k);
    return k;
}

size_t ntpu_ref_pending(const ntpu_ref *r)
{
    return r ? r->tx_tail - r->tx_head : 0;
}
