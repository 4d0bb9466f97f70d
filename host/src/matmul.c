/* SPDX-License-Identifier: Apache-2.0 */
/* C = A . B of any shape on the N x N array: tiling, padding, double buffering
 * and pipelining (docs/isa.md for the commands, docs/numerics.md for why the
 * order and the padding values below make the result exact).
 *
 * Layout on the device, for a chunk of Mc rows of A:
 *   UB:  A's K-slices, one after another: row (kt - k0) * mc + m holds
 *        A[m0 + m][kt*N .. kt*N + N-1], zero-padded past K.
 *   WB:  B's N x N tiles in slots of N rows: row i of tile (kt, pt) holds
 *        B[kt*N + i][pt*N .. pt*N + N-1]; k-rows past K are bf16 -0 (0x8000) so
 *        the padding products add nothing, even to a -0 accumulator.
 *   ACC: one block of mc rows per output column tile, pt - p0.
 * For each output column tile, k-tiles go in ascending order: LOAD_W then
 * MATMUL (accumulating after the first), so each dot product is the plain
 * sequential chain. The next LOAD_W follows each MATMUL, so the array loads
 * tile t+1 while it streams tile t.
 *
 * When B fits in WB it is sent once and stays; otherwise WB is a ring that the
 * tiles stream through, written a frame ahead of their LOAD_W. UB holds all of a
 * chunk's K when it can (A is then sent once, one k-slice just before its first
 * MATMUL); ACC holds as many column tiles as fit, and each column tile is read
 * back as soon as its last MATMUL is queued, while the next ones compute. A
 * device with a wide link runs these memory commands beside the MATMULs
 * (docs/decisions/0012-array-utilization.md). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "numerics_internal.h"

enum src_kind { SRC_INT8, SRC_F32, SRC_BF16 };

typedef struct mm {
    ntpu_device *dev;
    ntpu_link *l;
    size_t n;
    int bf16;
    enum src_kind src;
    const void *A, *B;
    void *C;
    size_t M, K, P;      /* C is M x P (the API's N) */
    size_t KT, PT;       /* k-tiles, output column tiles */
    size_t Mc, Kc, Pc;   /* rows per chunk, k-tiles per UB load, column tiles per ACC block */
    size_t nchunks, T;   /* m-chunks; weight tiles per m-chunk (KT * PT) */
    size_t slots;        /* weight tiles WB holds */
    int b_resident;      /* all T tiles fit: write them once */
    uint64_t b_written;  /* tile sequence numbers written to WB so far */
    int ub_alt, acc_alt; /* room for two blocks: alternate halves */
    /* The block the row fillers are producing. */
    size_t blk_m0, blk_mc, blk_k0;
    uint64_t blk_seq0;
    size_t fill_q, fill_pt, fill_kt; /* fill_b's last tile and its place (fill_q = SIZE_MAX: none) */
} mm;

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}
static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static uint16_t b_lane(const mm *s, size_t k, size_t p)
{
    if (k >= s->K)
        return s->bf16 ? 0x8000u : 0; /* -0: see the header comment */
    if (p >= s->P)
        return 0; /* feeds only columns that are never read back */
    size_t i = k * s->P + p;
    switch (s->src) {
    case SRC_INT8: return (uint8_t)((const int8_t *)s->B)[i];
    case SRC_F32: return ntpu_bf16_from_f32(((const float *)s->B)[i]);
    case SRC_BF16: break;
    }
    return ((const uint16_t *)s->B)[i];
}

/* Column tiles that take turns, k-tile by k-tile, in the first sub-group of
 * each block: each A k-slice then feeds this many MATMULs in a row, so the
 * block's first pass, which must also bring its A slices in, has that much more
 * array time to do it in. The other column tiles go one by one, so they finish
 * (and are read back) evenly spread. */
#define PT_GROUP 4

/* Column tiles in the sub-group starting at column tile `at` of a group of pc. */
static size_t sub_group(const mm *s, size_t pc, size_t at)
{
    (void)s;
    return at == 0 ? min_sz(PT_GROUP, pc) : 1;
}

/* Tile q of an m-chunk's sequence: for each group of Pc column tiles, for each
 * group of Kc k-tiles, for each sub-group of column tiles (sub_group), for each
 * k-tile ascending, for each column tile of the sub-group. Every group but the
 * last of its kind is full, which is what makes the divisions work. */
static void tile_of(const mm *s, size_t q, size_t *pt, size_t *kt)
{
    size_t pg = q / (s->Pc * s->KT), p0 = pg * s->Pc, pc = min_sz(s->Pc, s->PT - p0);
    size_t rem = q - pg * s->Pc * s->KT;
    size_t kg = rem / (pc * s->Kc), k0 = kg * s->Kc, kc = min_sz(s->Kc, s->KT - k0);
    rem -= kg * pc * s->Kc;
    size_t g0 = sub_group(s, pc, 0), s0 = 0, gc = g0;
    if (rem >= g0 * kc) {
        s0 = g0 + (rem - g0 * kc) / kc;
        gc = 1;
        rem = (rem - g0 * kc) % kc;
    }
    *pt = p0 + s0 + rem % gc;
    *kt = k0 + rem / gc;
}

/* The first `count` lanes of a row from element i of src (the elements that
 * exist), without per-lane checks or conversion calls. */
static void fill_lanes(const mm *s, const void *src, size_t i, size_t count, uint8_t *out)
{
    switch (s->src) {
    case SRC_INT8:
        for (size_t j = 0; j < count; j++) {
            out[2 * j] = (uint8_t)((const int8_t *)src)[i + j];
            out[2 * j + 1] = 0;
        }
        break;
    case SRC_F32:
        for (size_t j = 0; j < count; j += 64) {
            uint16_t lanes[64];
            size_t cnt = min_sz(64, count - j);
            ntpu_bf16_from_f32_row(lanes, (const float *)src + i + j, cnt);
            ntpu_wr16_lanes(out + 2 * j, lanes, cnt);
        }
        break;
    case SRC_BF16: ntpu_wr16_lanes(out, (const uint16_t *)src + i, count); break;
    }
}

/* Rows r0 .. r0+cnt-1 of the A block: k-slice after k-slice of blk_mc rows.
 * Lanes past K are +0: they meet the -0 rows of B (see the header comment). */
static void fill_a(mm *s, size_t r0, size_t cnt, uint8_t *out)
{
    const size_t n = s->n, end_m = s->blk_m0 + s->blk_mc;
    size_t kt = s->blk_k0 + r0 / s->blk_mc, m = s->blk_m0 + r0 % s->blk_mc;
    for (size_t r = 0; r < cnt; r++, out += 2 * n) {
        size_t k0 = kt * n, valid = k0 >= s->K ? 0 : min_sz(n, s->K - k0);
        fill_lanes(s, s->A, m * s->K + k0, valid, out);
        if (valid < n)
            memset(out + 2 * valid, 0, 2 * (n - valid));
        if (++m == end_m) {
            m = s->blk_m0;
            kt++;
        }
    }
}

static void fill_b_row(mm *s, size_t r, uint8_t *out)
{
    size_t i = r % s->n, q = (size_t)((s->blk_seq0 + r / s->n) % s->T);
    if (q != s->fill_q) { /* a tile's n rows come one after another: its place is found once */
        tile_of(s, q, &s->fill_pt, &s->fill_kt);
        s->fill_q = q;
    }
    size_t k = s->fill_kt * s->n + i, p = s->fill_pt * s->n;
    if (k < s->K && p + s->n <= s->P) {
        fill_lanes(s, s->B, k * s->P + p, s->n, out);
        return;
    }
    for (size_t j = 0; j < s->n; j++)
        ntpu_wr16(out + 2 * j, b_lane(s, k, p + j));
}

static void fill_b(mm *s, size_t r0, size_t cnt, uint8_t *out)
{
    for (size_t r = 0; r < cnt; r++)
        fill_b_row(s, r0 + r, out + r * 2 * s->n);
}

/* WRITE_MEM of `rows` rows made by fill (rows r0 .. r0+rows-1 of its block),
 * in as few frames as fit. */
static ntpu_status write_block(mm *s, unsigned mem, size_t addr, size_t r0, size_t rows,
                               void (*fill)(mm *, size_t, size_t, uint8_t *))
{
    size_t rb = 2 * s->n, per = (s->l->max_payload - NTPU_LEN_MEM_HDR) / rb;
    for (size_t done = 0; done < rows;) {
        size_t cnt = min_sz(per, rows - done);
        ntpu_status st;
        uint8_t *p = ntpu_link_begin(s->l, NTPU_LEN_MEM_HDR + cnt * rb, 0, &st);
        if (!p)
            return st;
        p[0] = NTPU_OP_WRITE_MEM;
        p[1] = (uint8_t)mem;
        ntpu_wr16(p + 2, (uint32_t)(addr + done));
        ntpu_wr16(p + 4, (uint32_t)cnt);
        fill(s, r0 + done, cnt, p + NTPU_LEN_MEM_HDR);
        if ((st = ntpu_link_commit(s->l, NULL, NULL)) != NTPU_OK)
            return st;
        done += cnt;
    }
    return NTPU_OK;
}

/* Writes the current A block's rows *done .. upto-1 (k-slice after k-slice,
 * at ub_base) if they are not there yet. */
static ntpu_status write_a(mm *s, size_t ub_base, size_t upto, size_t *done)
{
    if (upto <= *done)
        return NTPU_OK;
    ntpu_status st = write_block(s, NTPU_MEM_UB, ub_base + *done, *done, upto - *done, fill_a);
    if (st == NTPU_OK)
        *done = upto;
    return st;
}

/* Makes sure the tile with sequence number seq is in its WB slot, writing
 * tiles ahead a frame at a time. The first frames are small (1, 1, 2, 4, ...
 * tiles): the array starts on tile 0 while the rest arrive, since a device
 * writes WB beside running MATMULs where it can (docs/isa.md, Semantics). */
static ntpu_status ensure_tile(mm *s, uint64_t seq)
{
    uint64_t total = s->b_resident ? s->T : (uint64_t)s->nchunks * s->T;
    size_t per_frame = (s->l->max_payload - NTPU_LEN_MEM_HDR) / (2 * s->n * s->n);
    if (per_frame == 0)
        per_frame = 1;
    while (s->b_written <= seq) {
        uint64_t w = s->b_written;
        size_t slot = (size_t)(w % s->slots);
        /* ... and none longer than a quarter of a MATMUL of the chunk (Mc
         * rows): the device holds one MATMUL beyond the streaming one, so
         * every gap between two MATMULs must be shorter than one. */
        size_t cap = s->Mc / (4 * s->n) ? min_sz(per_frame, s->Mc / (4 * s->n)) : 1;
        size_t ramp = w == 0 ? 1 : (size_t)min_sz(cap, (size_t)w);
        size_t cnt = min_sz(min_sz(ramp, s->slots - slot), (size_t)(total - w));
        s->blk_seq0 = w;
        ntpu_status st = write_block(s, NTPU_MEM_WB, slot * s->n, 0, cnt * s->n, fill_b);
        if (st != NTPU_OK)
            return st;
        s->b_written += cnt;
    }
    return NTPU_OK;
}

static ntpu_status cmd_load_w(mm *s, size_t wb_addr)
{
    uint8_t cmd[NTPU_LEN_LOAD_W] = {NTPU_OP_LOAD_W, 0};
    ntpu_wr16(cmd + 2, (uint32_t)wb_addr);
    return ntpu_link_command(s->l, cmd, sizeof cmd, 0, NULL, NULL);
}

static ntpu_status cmd_matmul(mm *s, size_t ub, size_t acc, size_t rows, int accumulate)
{
    uint8_t cmd[NTPU_LEN_MATMUL] = {
        NTPU_OP_MATMUL, (uint8_t)((s->bf16 ? NTPU_MATMUL_BF16 : 0) | (accumulate ? NTPU_MATMUL_ACCUMULATE : 0))};
    ntpu_wr16(cmd + 2, (uint32_t)ub);
    ntpu_wr16(cmd + 4, (uint32_t)acc);
    ntpu_wr16(cmd + 6, (uint32_t)rows);
    return ntpu_link_command(s->l, cmd, sizeof cmd, 0, NULL, NULL);
}

/* Read-back of finished column tiles. A tile's READ_MEMs wait until two more
 * MATMULs are queued (the device runs a READ_MEM beside the MATMULs once no
 * queued one writes its rows), and go out one piece per MATMUL: the device
 * holds one MATMUL beyond the streaming one, so no gap between two MATMULs in
 * the command stream may grow long. */
#define READ_PIECES 4 /* READ_MEMs per column tile */
#define READ_DELAY 2  /* MATMULs queued after a tile's last one before its read */
#define RQ_CAP 8      /* tiles read back at once; more wait for the oldest */

typedef struct readback {
    size_t m0, mc, pt; /* C rows m0 .. m0+mc-1, column tile pt */
    size_t acc;        /* its first ACC row */
    uint8_t *stage;    /* mc rows of 4N bytes */
    unsigned pieces;   /* READ_MEMs issued */
    uint64_t due;      /* MATMUL count from which it may be read */
    uint64_t last;     /* MATMUL count when its last piece went */
    uint64_t ticket;   /* of its last READ_MEM */
} readback;

typedef struct readq {
    readback t[RQ_CAP];
    size_t head, count, issuing; /* oldest, tiles held, tiles fully issued from head on */
    uint64_t mm;                 /* MATMULs queued so far */
    uint64_t last_piece;         /* MATMUL count at the last piece */
} readq;

/* Issues the next READ_MEM piece of the oldest tile not fully issued. */
static ntpu_status read_piece(mm *s, readq *q)
{
    readback *rb = &q->t[(q->head + q->issuing) % RQ_CAP];
    size_t row = 4 * s->n, per = (s->l->max_payload - 1) / row, step = ceil_div(rb->mc, READ_PIECES);
    size_t from = min_sz(rb->mc, rb->pieces * step), to = min_sz(rb->mc, from + step);
    for (size_t done = from; done < to;) {
        size_t cnt = min_sz(per, to - done);
        uint8_t cmd[NTPU_LEN_MEM_HDR] = {NTPU_OP_READ_MEM, NTPU_MEM_ACC};
        ntpu_wr16(cmd + 2, (uint32_t)(rb->acc + done));
        ntpu_wr16(cmd + 4, (uint32_t)cnt);
        ntpu_status st =
            ntpu_link_command(s->l, cmd, sizeof cmd, (uint32_t)(cnt * row), rb->stage + done * row, &rb->ticket);
        if (st != NTPU_OK)
            return st;
        done += cnt;
    }
    q->last_piece = q->mm;
    rb->last = q->mm;
    if (++rb->pieces == READ_PIECES)
        q->issuing++;
    return NTPU_OK;
}

/* Waits for the oldest tile's replies and copies its valid lanes into C. */
static ntpu_status finish_oldest(mm *s, readq *q)
{
    readback *rb = &q->t[q->head];
    q->head = (q->head + 1) % RQ_CAP;
    q->count--;
    q->issuing--;
    ntpu_status st = ntpu_link_wait(s->l, rb->ticket);
    if (st != NTPU_OK)
        return st;
    size_t p = rb->pt * s->n, cnt = min_sz(s->n, s->P - p);
    for (size_t m = 0; m < rb->mc; m++) {
        const uint8_t *src = rb->stage + m * 4 * s->n;
        size_t at = (rb->m0 + m) * s->P + p;
        if (NTPU_HOST_WIRE_ORDER) { /* fp32 and int32 lanes alike: the bytes are the value */
            memcpy((uint32_t *)s->C + at, src, cnt * 4);
            continue;
        }
        for (size_t j = 0; j < cnt; j++) {
            uint32_t v = ntpu_rd32(src + 4 * j);
            if (s->bf16)
                memcpy((float *)s->C + at + j, &v, sizeof v);
            else
                ((int32_t *)s->C)[at + j] = (int32_t)v;
        }
    }
    return NTPU_OK;
}

/* Link bytes of one LOAD_W + MATMUL pair: two frames out, two replies back. */
#define TILE_OP_BYTES (2 * 2 * NTPU_FRAME_OVERHEAD + NTPU_LEN_LOAD_W + NTPU_LEN_MATMUL + 2)

/* Link bytes of the whole product in chunks of mc rows, each with as much of K
 * in UB as fits: the commands, the weight tiles and A (C is the same for every
 * choice). */
static uint64_t chunk_cost(const mm *s, size_t mc)
{
    const ntpu_info *in = &s->dev->info;
    size_t nch = ceil_div(s->M, mc), n = s->n;
    mc = ceil_div(s->M, nch);
    size_t kc = min_sz(s->KT, in->ub_rows / mc), pc = min_sz(s->PT, in->acc_rows / mc);
    uint64_t tiles = (uint64_t)s->KT * s->PT, tile_bytes = 2 * n * n;
    uint64_t w = (tiles <= in->wb_rows / n ? 1 : nch) * tiles * tile_bytes;
    uint64_t a = (uint64_t)s->M * s->KT * n * 2 * (kc < s->KT ? ceil_div(s->PT, pc) : 1);
    return nch * tiles * TILE_OP_BYTES + w + a;
}

/* After each MATMUL: at most one piece, then every tile whose last piece has
 * two MATMULs queued behind it is collected (the device is still busy then).
 * With flush, everything left is issued and collected. */
static ntpu_status read_progress(mm *s, readq *q, int flush)
{
    ntpu_status st = NTPU_OK;
    if (q->issuing < q->count && (flush || (q->t[(q->head + q->issuing) % RQ_CAP].due <= q->mm &&
                                            (q->mm > q->last_piece || q->last_piece == 0))))
        st = read_piece(s, q);
    while (st == NTPU_OK && flush && q->issuing < q->count)
        st = read_piece(s, q);
    while (st == NTPU_OK && q->issuing > 0 && (flush || q->t[q->head].last + READ_DELAY <= q->mm))
        st = finish_oldest(s, q);
    return st;
}

/* Before MATMULs write ACC rows [lo, hi): every read-back of those rows still
 * to go out goes now (and so do the older ones, which go in order). */
static ntpu_status read_before_overwrite(mm *s, readq *q, size_t lo, size_t hi)
{
    size_t last = 0, found = 0;
    for (size_t i = q->issuing; i < q->count; i++) {
        const readback *rb = &q->t[(q->head + i) % RQ_CAP];
        if (rb->acc < hi && lo < rb->acc + rb->mc) {
            last = i;
            found = 1;
        }
    }
    ntpu_status st = NTPU_OK;
    while (st == NTPU_OK && found && q->issuing <= last)
        st = read_piece(s, q);
    return st;
}

/* Column tile pt of the m-chunk is complete after the MATMUL just queued. */
static ntpu_status read_later(mm *s, readq *q, uint8_t *stage, size_t m0, size_t mc, size_t pt, size_t acc)
{
    ntpu_status st = NTPU_OK;
    while (st == NTPU_OK && q->count == RQ_CAP) {
        while (st == NTPU_OK && q->issuing == 0)
            st = read_piece(s, q);
        if (st == NTPU_OK)
            st = finish_oldest(s, q);
    }
    if (st != NTPU_OK)
        return st;
    size_t slot = (q->head + q->count) % RQ_CAP;
    q->t[slot] = (readback){
        .m0 = m0, .mc = mc, .pt = pt, .acc = acc, .stage = stage + slot * s->Mc * 4 * s->n, .due = q->mm + READ_DELAY};
    q->count++;
    return NTPU_OK;
}

/* Chooses chunk sizes: as many rows as possible per chunk (fewer weight loads),
 * all of K resident in UB when a reasonable chunk still fits (A sent once); then
 * larger chunks if they cost fewer link bytes (a board's small UB: chunks of a
 * few rows spend most bytes on command frames). */
static void plan(mm *s)
{
    const ntpu_info *in = &s->dev->info;
    size_t ub = in->ub_rows, acc = in->acc_rows, n = s->n;
    s->KT = ceil_div(s->K, n);
    s->PT = ceil_div(s->P, n);
    size_t cap = min_sz(min_sz(s->M, 65535), min_sz(ub, acc));
    size_t threshold = min_sz(s->M, 4 * n);
    if (ub / s->KT >= threshold) {
        s->Mc = min_sz(cap, ub / s->KT);
        s->Kc = s->KT;
    } else {
        s->Mc = min_sz(cap, threshold);
        s->Kc = min_sz(s->KT, ub / s->Mc);
    }
    /* Larger chunks with part of K in UB, when they cost fewer link bytes; room
     * stays for two UB blocks (2 * mc <= ub), so loads still overlap. */
    uint64_t best = chunk_cost(s, s->Mc);
    for (size_t mc = s->Mc + n; mc <= cap && 2 * mc <= ub; mc += n) {
        uint64_t c = chunk_cost(s, mc);
        if (c < best) {
            best = c;
            s->Mc = mc;
            s->Kc = min_sz(s->KT, ub / mc);
        }
    }
    s->Pc = min_sz(s->PT, acc / s->Mc);
    /* Even out the pieces so the last one is not a sliver. */
    s->nchunks = ceil_div(s->M, s->Mc);
    s->Mc = ceil_div(s->M, s->nchunks);
    s->Kc = ceil_div(s->KT, ceil_div(s->KT, s->Kc));
    s->Pc = ceil_div(s->PT, ceil_div(s->PT, s->Pc));
    s->T = s->KT * s->PT;
    s->slots = in->wb_rows / n;
    s->b_resident = s->T <= s->slots;
    s->ub_alt = 2 * s->Mc * s->Kc <= ub;
    s->acc_alt = 2 * s->Mc * s->Pc <= acc;
}

static ntpu_status run(mm *s)
{
    size_t stage_bytes = RQ_CAP * s->Mc * 4 * s->n; /* RQ_CAP column tiles of a chunk */
    uint8_t *stage = malloc(stage_bytes);
    if (!stage)
        return ntpu_fail(s->dev, NTPU_ERR_NO_MEMORY, "out of memory for %zu bytes of read-back buffers", stage_bytes);
    readq rq;
    memset(&rq, 0, sizeof rq);
    struct {
        int valid;
        size_t m0, k0;
    } ub_tag[2] = {{0}};
    size_t ub_next = 0, group = 0;
    ntpu_status st = NTPU_OK;
    for (size_t mi = 0, m0 = 0; m0 < s->M && st == NTPU_OK; mi++, m0 += s->Mc) {
        size_t mc = min_sz(s->Mc, s->M - m0), q = 0;
        for (size_t p0 = 0; p0 < s->PT && st == NTPU_OK; p0 += s->Pc) {
            size_t pc = min_sz(s->Pc, s->PT - p0);
            size_t acc_base = s->acc_alt ? (group % 2) * s->Mc * s->Pc : 0;
            if ((st = read_before_overwrite(s, &rq, acc_base, acc_base + pc * mc)) != NTPU_OK)
                break;
            for (size_t k0 = 0; k0 < s->KT && st == NTPU_OK; k0 += s->Kc) {
                size_t kc = min_sz(s->Kc, s->KT - k0), half, a_rows = kc * mc; /* rows of the block written */
                for (half = 0; half < 2; half++)
                    if (ub_tag[half].valid && ub_tag[half].m0 == m0 && ub_tag[half].k0 == k0)
                        break;
                if (half == 2) {
                    /* A new block: its k-slices are written as they are
                     * needed (below), so the array starts on slice 0 while
                     * the others arrive; the first sub-group's pass uses every
                     * slice, in order. */
                    half = s->ub_alt ? ub_next++ % 2 : 0;
                    s->blk_m0 = m0;
                    s->blk_mc = mc;
                    s->blk_k0 = k0;
                    ub_tag[half].valid = 1;
                    ub_tag[half].m0 = m0;
                    ub_tag[half].k0 = k0;
                    a_rows = 0;
                }
                size_t ub_base = half * s->Mc * s->Kc;
                for (size_t s0 = p0; s0 < p0 + pc && st == NTPU_OK;) {
                    size_t gc = sub_group(s, pc, s0 - p0);
                    for (size_t i = 0; i < kc * gc && st == NTPU_OK; i++, q++) {
                        size_t kt = k0 + i / gc, pt = s0 + i % gc;
                        uint64_t seq = s->b_resident ? q : (uint64_t)mi * s->T + q;
                        if ((st = write_a(s, ub_base, (kt - k0 + 1) * mc, &a_rows)) != NTPU_OK) {
                            ub_tag[half].valid = 0;
                            break;
                        }
                        if ((st = ensure_tile(s, seq)) != NTPU_OK ||
                            (st = cmd_load_w(s, (size_t)(seq % s->slots) * s->n)) != NTPU_OK)
                            break;
                        if ((st = cmd_matmul(s, ub_base + (kt - k0) * mc, acc_base + (pt - p0) * mc, mc, kt > 0)) !=
                            NTPU_OK)
                            break;
                        rq.mm++;
                        /* The next k-slice goes in while this one's MATMULs run,
                         * a share after each, so it is there before the array
                         * needs it and no gap between two MATMULs grows long. */
                        size_t share = ceil_div(mc, gc) * (i % gc + 1);
                        if ((st = write_a(s, ub_base, min_sz(kc * mc, (kt - k0 + 1) * mc + min_sz(share, mc)),
                                          &a_rows)) != NTPU_OK) {
                            ub_tag[half].valid = 0;
                            break;
                        }
                        if (kt + 1 == s->KT)
                            st = read_later(s, &rq, stage, m0, mc, pt, acc_base + (pt - p0) * mc);
                        if (st == NTPU_OK)
                            st = read_progress(s, &rq, 0);
                    }
                    s0 += gc;
                }
            }
            group++;
        }
    }
    if (st == NTPU_OK)
        st = read_progress(s, &rq, 1);
    if (st != NTPU_OK && !s->l->broken) {
        /* Replies still on their way point into the buffer freed below: take
         * them off the link first, keeping the first error's text. */
        char why[NTPU_ERRMSG_LEN];
        memcpy(why, s->dev->err, sizeof why);
        ntpu_link_sync(s->l);
        memcpy(s->dev->err, why, sizeof why);
    }
    free(stage);
    return st;
}

static ntpu_status matmul(ntpu_device *dev, enum src_kind src, const void *A, const void *B, void *C, size_t M,
                          size_t K, size_t N)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!A || !B || !C)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "matmul: A, B and C must not be NULL");
    if (M == 0 || K == 0 || N == 0)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "matmul: sizes must be at least 1 (M=%zu K=%zu N=%zu)", M, K, N);
    if (M > SIZE_MAX / 4 / K || K > SIZE_MAX / 4 / N || M > SIZE_MAX / 4 / N)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "matmul: sizes M=%zu K=%zu N=%zu overflow", M, K, N);
    int bf16 = src != SRC_INT8;
    unsigned bit = bf16 ? NTPU_DTYPE_BF16_BIT : NTPU_DTYPE_INT8_BIT;
    if (!(dev->info.dtypes & bit))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "this device does not compute in %s", bf16 ? "bf16" : "int8");
    if ((st = ntpu_claim_memories(dev, NULL, NULL, NULL)) != NTPU_OK) /* a model there saves its state first */
        return st;
    mm s = {.dev = dev,
            .l = &dev->link,
            .n = dev->n,
            .bf16 = bf16,
            .src = src,
            .A = A,
            .B = B,
            .C = C,
            .M = M,
            .K = K,
            .P = N,
            .fill_q = SIZE_MAX};
    plan(&s);
    return run(&s);
}

ntpu_status ntpu_matmul(ntpu_device *dev, ntpu_dtype dtype, const void *A, const void *B, void *C, size_t M, size_t K,
                        size_t N)
{
    if (dtype != NTPU_DTYPE_INT8 && dtype != NTPU_DTYPE_BF16) {
        ntpu_status st = ntpu_check_dev(dev);
        return st != NTPU_OK ? st : ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "matmul: unknown dtype %d", (int)dtype);
    }
    return matmul(dev, dtype == NTPU_DTYPE_INT8 ? SRC_INT8 : SRC_F32, A, B, C, M, K, N);
}

ntpu_status ntpu_matmul_bf16(ntpu_device *dev, const uint16_t *A, const uint16_t *B, float *C, size_t M, size_t K,
                             size_t N)
{
    return matmul(dev, SRC_BF16, A, B, C, M, K, N);
}
