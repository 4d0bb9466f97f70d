/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_core bench, for three core configurations (see configs[] in main).
 *
 * Writes a host -> device byte stream of command frames (directed tests of the 1.0 and the 1.1
 * commands, then random command streams) and, from a device model written here from
 * docs/protocol.md and docs/isa.md (the MACs, fadd, bf16 rounding and requantization are
 * sim/ref/numerics.c's), the exact reply stream the core must send back. Reply bytes that the
 * ISA leaves to the implementation (STATUS busy unless the device must be idle, COUNTERS other than
 * macs) and the CRC of such replies are marked "don't care"; the bench checks every reply's CRC
 * itself.
 * Output in DIR: in.hex (one byte a line), exp.hex (one word a line: 0x1XX = must be XX, 0x0XX =
 * don't care), counts.hex (input bytes, output bytes, replies).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/numerics.h"
#include "ntpu/protocol.h"

/* The core's parameters; tb.sv instantiates one core per entry of configs[] in main. */
struct config {
    unsigned n, ub_rows, wb_rows, acc_rows, maxp;
    unsigned novec;     /* 1: built with VEC_EN = 0 */
    unsigned counter_w; /* COUNTER_W: counters wrap at 2^counter_w, upper bytes read 0 */
    unsigned notra;     /* 1: built with TRANSPOSE_A_EN = 0 (the flag is reserved) */
    unsigned os_rows;   /* OS_ROWS: the optimizer-state memory and OPTIM ADAM (1.4); 0: none */
};
static struct config cfg;
#define N cfg.n
#define UB_ROWS cfg.ub_rows
#define WB_ROWS cfg.wb_rows
#define ACC_ROWS cfg.acc_rows
#define MAXP cfg.maxp
#define MAX_N 8u /* array sizes for the largest configuration */
#define MAX_ROWS 64u

#define MAX_STREAM (1u << 20)

#define GEN_SEED 0x5EED1234u
#include "../gen_common.h"

/* ================================================================ the host -> device stream */

static uint8_t in[MAX_STREAM];
static size_t nin;
static uint8_t seq_next; /* the SEQ the device expects next (1.2: it runs frames in SEQ order) */

static void put(uint8_t b)
{
    if (nin >= MAX_STREAM) {
        fprintf(stderr, "gen: stream too long\n");
        exit(1);
    }
    in[nin++] = b;
}

/* corrupt: 0 good, 1 payload bit flipped, 2 CRC bit flipped */
static void frame_at(const uint8_t *p, unsigned len, int corrupt, uint8_t seq)
{
    static uint8_t f[4 + 65536 + 4];
    f[0] = NTPU_SOF_CMD;
    f[1] = seq;
    f[2] = (uint8_t)len;
    f[3] = (uint8_t)(len >> 8);
    memcpy(f + 4, p, len);
    uint32_t c = crc32_bits(f + 1, 3 + len);
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(c >> (8 * i));
    if (corrupt == 1)
        f[4 + rnd_below(len)] ^= (uint8_t)(1u << rnd_below(8));
    if (corrupt == 2)
        f[4 + len + rnd_below(4)] ^= (uint8_t)(1u << rnd_below(8));
    for (unsigned i = 0; i < 8 + len; i++)
        put(f[i]);
}

/* A frame with the expected SEQ; it takes its place in the order unless it is
 * corrupted (never runs) or a SYNC (runs nothing). */
static void frame_ex(const uint8_t *p, unsigned len, int corrupt)
{
    frame_at(p, len, corrupt, seq_next);
    if (!corrupt && p[0] != NTPU_OP_SYNC)
        seq_next++;
}

static void frame(const uint8_t *p, unsigned len)
{
    frame_ex(p, len, 0);
}

static void cmd1(uint8_t op)
{
    frame(&op, 1);
}

static void counters(uint8_t flags)
{
    uint8_t p[2] = {NTPU_OP_COUNTERS, flags};
    frame(p, 2);
}

static unsigned row_bytes(unsigned mem)
{
    return mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS ? 4 * N : 2 * N;
}

static void write_mem(unsigned mem, unsigned addr, unsigned rows, const uint8_t *data)
{
    static uint8_t p[65536];
    unsigned n = rows * row_bytes(mem);
    p[0] = NTPU_OP_WRITE_MEM;
    p[1] = (uint8_t)mem;
    p[2] = (uint8_t)addr;
    p[3] = (uint8_t)(addr >> 8);
    p[4] = (uint8_t)rows;
    p[5] = (uint8_t)(rows >> 8);
    memcpy(p + 6, data, n);
    frame(p, 6 + n);
}

static void read_mem(unsigned mem, unsigned addr, unsigned rows)
{
    uint8_t p[6] = {NTPU_OP_READ_MEM,     (uint8_t)mem,  (uint8_t)addr,
                    (uint8_t)(addr >> 8), (uint8_t)rows, (uint8_t)(rows >> 8)};
    frame(p, 6);
}

static void load_w(unsigned flags, unsigned addr)
{
    uint8_t p[4] = {NTPU_OP_LOAD_W, (uint8_t)flags, (uint8_t)addr, (uint8_t)(addr >> 8)};
    frame(p, 4);
}

static void matmul(unsigned flags, unsigned ub, unsigned acc, unsigned rows)
{
    uint8_t p[8] = {NTPU_OP_MATMUL, (uint8_t)flags,      (uint8_t)ub,   (uint8_t)(ub >> 8),
                    (uint8_t)acc,   (uint8_t)(acc >> 8), (uint8_t)rows, (uint8_t)(rows >> 8)};
    frame(p, 8);
}

static void matmul_t(unsigned flags, unsigned ub, unsigned acc, unsigned rows, unsigned stride)
{
    uint8_t p[10] = {NTPU_OP_MATMUL,  (uint8_t)(flags | NTPU_MATMUL_TRANSPOSE_A),
                     (uint8_t)ub,     (uint8_t)(ub >> 8),
                     (uint8_t)acc,    (uint8_t)(acc >> 8),
                     (uint8_t)rows,   (uint8_t)(rows >> 8),
                     (uint8_t)stride, (uint8_t)(stride >> 8)};
    frame(p, 10);
}

/* ACT, RELU_GRAD (LEN 10) and COLSUM (LEN 8): [op][flags][src][dst][rows]([aux]). */
static void vcmd(uint8_t op, unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned aux)
{
    uint8_t p[10] = {op,           (uint8_t)flags,      (uint8_t)src,  (uint8_t)(src >> 8),
                     (uint8_t)dst, (uint8_t)(dst >> 8), (uint8_t)rows, (uint8_t)(rows >> 8),
                     (uint8_t)aux, (uint8_t)(aux >> 8)};
    frame(p, op == NTPU_OP_COLSUM ? NTPU_LEN_COLSUM : NTPU_LEN_ACT);
}

static void act(unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned aux)
{
    vcmd(NTPU_OP_ACT, flags, src, dst, rows, aux);
}

static void relu_grad(unsigned flags, unsigned src, unsigned dst, unsigned rows, unsigned mask)
{
    vcmd(NTPU_OP_RELU_GRAD, flags, src, dst, rows, mask);
}

static void colsum(unsigned flags, unsigned src, unsigned dst, unsigned rows)
{
    vcmd(NTPU_OP_COLSUM, flags, src, dst, rows, 0);
}

static void optim(unsigned flags, unsigned prow, unsigned grow, unsigned rows, unsigned aux)
{
    vcmd(NTPU_OP_OPTIM, flags, prow, grow, rows, aux);
}

/* ================================================================ the device model */

static uint16_t ub[MAX_ROWS][MAX_N], wb[MAX_ROWS][MAX_N];
static uint32_t acc[MAX_ROWS][MAX_N];
static uint32_t os[MAX_ROWS][MAX_N]; /* 1.4: OS, cfg.os_rows rows */
static uint16_t w_act[MAX_N][MAX_N], w_pend[MAX_N][MAX_N];
static int pending;
static uint8_t last_error;
static uint32_t errors, commands, dropped;
static uint64_t macs;
static int maybe_busy = 1; /* the loader zeroes the weights after reset */
static uint8_t expected_seq;

static uint16_t out[MAX_STREAM]; /* 0x100 | byte, or byte alone when any value is allowed */
static size_t nout;
static unsigned nreplies;

static unsigned get16(const uint8_t *p)
{
    return p[0] | (unsigned)p[1] << 8;
}

/* dropped_ahead[i]: some byte in (i, i + DROP_WINDOW] is dropped while hunting. STATUS reports
 * `dropped` as counted when it executes, and the receiver runs ahead of execution by at most the
 * next frame and the header of the one after it, plus whatever junk lies between them; with no junk
 * in that window the count is exact. */
#define DROP_WINDOW (2 * (MAXP + 8))
static uint8_t dropped_ahead[MAX_STREAM];
static size_t cur_pos; /* index of the byte that completed the frame being executed */

/* replies.txt: one line per reply, what it answers, to find a failing reply's command. */
static FILE *flog;
static const uint8_t *cur_cmd;
static unsigned cur_len;

static void reply(uint8_t seq, uint8_t st, const uint8_t *data, unsigned n, const uint8_t *care)
{
    static uint8_t f[4 + 65536 + 4];
    unsigned len = 1 + n;
    int all_care = 1;
    if (st == NTPU_DEV_OK) {
        commands++;
    } else {
        errors++;
        last_error = st;
    }
    f[0] = NTPU_SOF_REPLY;
    f[1] = seq;
    f[2] = (uint8_t)len;
    f[3] = (uint8_t)(len >> 8);
    f[4] = st;
    memcpy(f + 5, data, n);
    uint32_t c = crc32_bits(f + 1, 3 + len);
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(c >> (8 * i));
    for (unsigned i = 0; i < n; i++)
        if (care && !care[i])
            all_care = 0;
    for (unsigned i = 0; i < 8 + len; i++) {
        int k = 1;
        if (i >= 5 && i < 4 + len && care)
            k = care[i - 5];
        if (i >= 4 + len)
            k = all_care;
        out[nout++] = (uint16_t)(f[i] | (k ? 0x100 : 0));
    }
    if (flog) {
        fprintf(flog, "%u seq %u status %u len %u:", nreplies, seq, st, cur_len);
        for (unsigned i = 0; i < cur_len && i < 10; i++)
            fprintf(flog, " %02x", cur_cmd[i]);
        fprintf(flog, "\n");
    }
    nreplies++;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static unsigned mem_rows(unsigned mem)
{
    return mem == 0 ? UB_ROWS : mem == 1 ? WB_ROWS : mem == NTPU_MEM_OS ? cfg.os_rows : ACC_ROWS;
}

/* OUT of ACT (fp32 mode) and RELU_GRAD: 0 UB, 1 WB, 2 ACC. */
static unsigned out_rows(unsigned out)
{
    return out == 1 ? WB_ROWS : out == 2 ? ACC_ROWS : UB_ROWS;
}

static void put_out(unsigned out, unsigned row, unsigned n, uint32_t x)
{
    if (out == 2)
        acc[row][n] = x;
    else if (out == 1)
        wb[row][n] = ntpu_bf16_from_f32_bits(x);
    else
        ub[row][n] = ntpu_bf16_from_f32_bits(x);
}

static int f32_is_nan(uint32_t x)
{
    return (x & 0x7F800000u) == 0x7F800000u && (x & 0x007FFFFFu) != 0;
}

/* ACT's ReLU is a select: +0 for a set sign bit unless NaN; everything else passes untouched. */
static uint32_t relu_bits(uint32_t x)
{
    return (x & 0x80000000u) && !f32_is_nan(x) ? 0 : x;
}

/* RELU_GRAD's mask test: m > 0 with a subnormal read as zero (so also false for NaN). */
static int bf16_positive(uint16_t m)
{
    unsigned e = (m >> 7) & 0xFFu;
    return !(m & 0x8000u) && e != 0 && !(e == 0xFF && (m & 0x7Fu) != 0);
}

static int exec(uint8_t seq, const uint8_t *p, unsigned len)
{
    uint8_t d[256], care[256];
    unsigned op = p[0];
    switch (op) {
    case NTPU_OP_NOP:
    case NTPU_OP_FENCE:
        if (len != 1)
            return NTPU_DEV_ERR_LENGTH;
        if (op == NTPU_OP_FENCE)
            maybe_busy = 0;
        return NTPU_DEV_OK;
    case NTPU_OP_INFO:
        if (len != 1)
            return NTPU_DEV_ERR_LENGTH;
        memset(d, 0, NTPU_ID_BYTES); /* 1.4: pm_rows and os_rows 0, these cores have neither */
        put32(d, NTPU_ID_MAGIC);
        d[4] = NTPU_VERSION_MAJOR;
        d[5] = NTPU_VERSION_MINOR;
        d[6] = N;
        d[7] = N;
        d[8] = 3;
        d[9] = NTPU_FEATURE_TRANSPOSE_BIT | (cfg.notra ? 0 : NTPU_FEATURE_TRANSPOSE_A_BIT) |
               (cfg.novec ? 0 : NTPU_FEATURE_VECTOR_BIT | NTPU_FEATURE_OPTIM_BIT) |
               (cfg.os_rows ? NTPU_FEATURE_ADAM_BIT : 0);
        put32(d + NTPU_ID_OFF_OS_ROWS, cfg.os_rows);
        d[10] = (uint8_t)MAXP;
        d[11] = (uint8_t)(MAXP >> 8);
        put32(d + 12, UB_ROWS);
        put32(d + 16, WB_ROWS);
        put32(d + 20, ACC_ROWS);
        put32(d + 24, 0);
        d[28] = 1; /* RTL */
        reply(seq, NTPU_DEV_OK, d, NTPU_ID_BYTES, NULL);
        return -1;
    case NTPU_OP_STATUS:
        if (len != 1)
            return NTPU_DEV_ERR_LENGTH;
        memset(d, 0, 16);
        memset(care, 1, 16);
        d[0] = 0;
        care[0] = !maybe_busy;
        d[1] = last_error;
        put32(d + 4, errors);
        put32(d + 8, commands);
        put32(d + 12, dropped);
        if (dropped_ahead[cur_pos])
            memset(care + 12, 0, 4);
        reply(seq, NTPU_DEV_OK, d, 16, care);
        return -1;
    case NTPU_OP_COUNTERS:
        if (len != 2)
            return NTPU_DEV_ERR_LENGTH;
        if (p[1] & ~NTPU_COUNTERS_CLEAR)
            return NTPU_DEV_ERR_ARG;
        memset(d, 0, 72);
        memset(care, 0, 72);
        {
            uint64_t m = cfg.counter_w < 64 ? macs & ((1ull << cfg.counter_w) - 1) : macs;
            put32(d + 16, (uint32_t)m);
            put32(d + 20, (uint32_t)(m >> 32));
        }
        memset(care + 16, 1, 8);
        /* A narrower counter is zero-extended: its upper bytes are 0 in every counter. */
        for (unsigned k = 0; k < 9; k++)
            for (unsigned b = cfg.counter_w / 8; b < 8; b++)
                care[8 * k + b] = 1;
        if (p[1] & NTPU_COUNTERS_CLEAR)
            macs = 0;
        maybe_busy = 0;
        reply(seq, NTPU_DEV_OK, d, 72, care);
        return -1;
    case NTPU_OP_WRITE_MEM:
    case NTPU_OP_READ_MEM: {
        int wr = op == NTPU_OP_WRITE_MEM;
        if (wr ? len < 6 : len != 6)
            return NTPU_DEV_ERR_LENGTH;
        unsigned mem = p[1], addr = get16(p + 2), rows = get16(p + 4);
        if (mem > 2 && !(mem == NTPU_MEM_OS && cfg.os_rows))
            return NTPU_DEV_ERR_MEM;
        unsigned long bytes = (unsigned long)rows * row_bytes(mem);
        if (wr ? len != 6 + bytes : 1 + bytes > MAXP)
            return NTPU_DEV_ERR_LENGTH;
        if ((unsigned long)addr + rows > mem_rows(mem))
            return NTPU_DEV_ERR_RANGE;
        maybe_busy = 0;
        if (wr) {
            const uint8_t *s = p + 6;
            for (unsigned r = 0; r < rows; r++)
                for (unsigned n = 0; n < N; n++) {
                    if (mem == 2 || mem == NTPU_MEM_OS) {
                        (mem == 2 ? acc : os)[addr + r][n] =
                            s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
                        s += 4;
                    } else {
                        uint16_t v = (uint16_t)get16(s);
                        if (mem == 0)
                            ub[addr + r][n] = v;
                        else
                            wb[addr + r][n] = v;
                        s += 2;
                    }
                }
            return NTPU_DEV_OK;
        }
        uint8_t *o = d;
        for (unsigned r = 0; r < rows; r++)
            for (unsigned n = 0; n < N; n++) {
                if (mem == 2 || mem == NTPU_MEM_OS) {
                    put32(o, (mem == 2 ? acc : os)[addr + r][n]);
                    o += 4;
                } else {
                    uint16_t v = mem == 0 ? ub[addr + r][n] : wb[addr + r][n];
                    o[0] = (uint8_t)v;
                    o[1] = (uint8_t)(v >> 8);
                    o += 2;
                }
            }
        reply(seq, NTPU_DEV_OK, d, (unsigned)bytes, NULL);
        return -1;
    }
    case NTPU_OP_LOAD_W: {
        if (len != 4)
            return NTPU_DEV_ERR_LENGTH;
        unsigned fl = p[1], a = get16(p + 2);
        if (fl & ~NTPU_LOADW_TRANSPOSE)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)a + N > WB_ROWS)
            return NTPU_DEV_ERR_RANGE;
        for (unsigned i = 0; i < N; i++)
            for (unsigned n = 0; n < N; n++)
                w_pend[i][n] = (fl & NTPU_LOADW_TRANSPOSE) ? wb[a + n][i] : wb[a + i][n];
        pending = 1;
        maybe_busy = 1;
        return NTPU_DEV_OK;
    }
    case NTPU_OP_MATMUL: {
        /* The fixed part's length depends on the flags; with LEN 1 there are none (zero). */
        unsigned fl = len >= 2 ? p[1] : 0;
        int tr = (fl & NTPU_MATMUL_TRANSPOSE_A) != 0, cv = (fl & NTPU_MATMUL_CONV) != 0; /* 1.5: CONV's forms */
        if (len != (cv   ? (tr ? NTPU_LEN_MATMUL_CONV_DW : NTPU_LEN_MATMUL_CONV)
                    : tr ? NTPU_LEN_MATMUL_T
                         : NTPU_LEN_MATMUL))
            return NTPU_DEV_ERR_LENGTH;
        unsigned ua = get16(p + 2), aa = get16(p + 4), rows = get16(p + 6);
        unsigned stride = tr ? get16(p + 8) : 0;
        if (fl & ~(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE | NTPU_MATMUL_TRANSPOSE_A) || (tr && cfg.notra))
            return NTPU_DEV_ERR_ARG;
        if (tr && rows % N != 0)
            return NTPU_DEV_ERR_ARG;
        unsigned long ub_end = !tr         ? (unsigned long)ua + rows
                               : rows == 0 ? ua
                                           : ua + (unsigned long)(rows / N - 1) * stride + N;
        if (ub_end > UB_ROWS || (unsigned long)aa + rows > ACC_ROWS)
            return NTPU_DEV_ERR_RANGE;
        if (pending) {
            memcpy(w_act, w_pend, sizeof w_act);
            pending = 0;
        }
        for (unsigned m = 0; m < rows; m++) {
            uint16_t x[MAX_N]; /* the activation row: UB row m, or column m % N of block m / N */
            for (unsigned i = 0; i < N; i++)
                x[i] = tr ? ub[ua + (m / N) * stride + i][m % N] : ub[ua + m][i];
            for (unsigned n = 0; n < N; n++) {
                uint32_t a = (fl & NTPU_MATMUL_ACCUMULATE) ? acc[aa + m][n] : 0;
                for (unsigned i = 0; i < N; i++) {
                    if (fl & NTPU_MATMUL_BF16)
                        a = ntpu_mac_bf16(a, x[i], w_act[i][n]);
                    else
                        a = (uint32_t)ntpu_mac_int8((int32_t)a, (int8_t)(x[i] & 0xFF), (int8_t)(w_act[i][n] & 0xFF));
                }
                acc[aa + m][n] = a;
            }
        }
        macs += (uint64_t)rows * N * N;
        maybe_busy = 1;
        return NTPU_DEV_OK;
    }
    case NTPU_OP_ACT: {
        if (cfg.novec)
            return NTPU_DEV_ERR_OPCODE;
        if (len != NTPU_LEN_ACT)
            return NTPU_DEV_ERR_LENGTH;
        unsigned fl = p[1], src = get16(p + 2), dst = get16(p + 4), rows = get16(p + 6);
        unsigned aux = get16(p + 8), out = (fl & NTPU_OUT_MASK) >> 2;
        int int8 = (fl & NTPU_OUT_MASK) == NTPU_OUT_INT8, bias = (fl & NTPU_ACT_BIAS) != 0;
        int relu = (fl & NTPU_ACT_RELU) != 0;
        if (fl & 0xF0)
            return NTPU_DEV_ERR_ARG;
        unsigned long aux_end = int8 ? aux + 3ul : bias ? aux + 1ul : 0;
        if ((unsigned long)src + rows > ACC_ROWS || (unsigned long)dst + rows > out_rows(int8 ? 0 : out) ||
            aux_end > ACC_ROWS)
            return NTPU_DEV_ERR_RANGE;
        uint32_t b[MAX_N] = {0}, mult[MAX_N] = {0}, shift[MAX_N] = {0};
        for (unsigned n = 0; n < N; n++) { /* read once, before row 0 */
            if (bias)
                b[n] = acc[aux][n];
            if (int8) {
                mult[n] = acc[aux + 1][n];
                shift[n] = acc[aux + 2][n];
            }
        }
        for (unsigned r = 0; r < rows; r++) {
            uint32_t x[MAX_N];
            memcpy(x, acc[src + r], sizeof x);
            for (unsigned n = 0; n < N; n++) {
                if (int8) {
                    int32_t v = (int32_t)(bias ? x[n] + b[n] : x[n]);
                    int32_t sh = (int32_t)shift[n];
                    if (relu && v < 0)
                        v = 0;
                    int8_t y = ntpu_requantize(v, (int32_t)mult[n], sh < 0 ? 0 : sh > 31 ? 31 : sh, 0);
                    ub[dst + r][n] = (uint16_t)(int16_t)y;
                } else {
                    uint32_t v = bias ? ntpu_f32_add(x[n], b[n]) : x[n];
                    put_out(out, dst + r, n, relu ? relu_bits(v) : v);
                }
            }
        }
        maybe_busy = 1;
        return NTPU_DEV_OK;
    }
    case NTPU_OP_RELU_GRAD: {
        if (cfg.novec)
            return NTPU_DEV_ERR_OPCODE;
        if (len != NTPU_LEN_RELU_GRAD)
            return NTPU_DEV_ERR_LENGTH;
        unsigned fl = p[1], src = get16(p + 2), dst = get16(p + 4), rows = get16(p + 6);
        unsigned mask = get16(p + 8), out = (fl & NTPU_OUT_MASK) >> 2;
        if ((fl & ~NTPU_OUT_MASK) || out == 3)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)src + rows > ACC_ROWS || (unsigned long)mask + rows > UB_ROWS ||
            (unsigned long)dst + rows > out_rows(out))
            return NTPU_DEV_ERR_RANGE;
        for (unsigned r = 0; r < rows; r++) {
            uint32_t x[MAX_N];
            uint16_t m[MAX_N];
            memcpy(x, acc[src + r], sizeof x);
            memcpy(m, ub[mask + r], sizeof m);
            for (unsigned n = 0; n < N; n++)
                put_out(out, dst + r, n, bf16_positive(m[n]) ? x[n] : 0);
        }
        maybe_busy = 1;
        return NTPU_DEV_OK;
    }
    case NTPU_OP_COLSUM: {
        if (cfg.novec)
            return NTPU_DEV_ERR_OPCODE;
        if (len != NTPU_LEN_COLSUM)
            return NTPU_DEV_ERR_LENGTH;
        unsigned fl = p[1], src = get16(p + 2), dst = get16(p + 4), rows = get16(p + 6);
        if (fl & ~NTPU_COLSUM_ACCUMULATE)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)src + rows > ACC_ROWS || (unsigned long)dst + 1 > ACC_ROWS)
            return NTPU_DEV_ERR_RANGE;
        uint32_t sum[MAX_N];
        for (unsigned n = 0; n < N; n++) {
            sum[n] = (fl & NTPU_COLSUM_ACCUMULATE) ? acc[dst][n] : 0;
            for (unsigned r = 0; r < rows; r++)
                sum[n] = ntpu_f32_add(sum[n], acc[src + r][n]);
        }
        memcpy(acc[dst], sum, sizeof sum);
        maybe_busy = 1;
        return NTPU_DEV_OK;
    }
    case NTPU_OP_OPTIM: {
        if (cfg.novec)
            return NTPU_DEV_ERR_OPCODE;
        /* 1.4: LEN 12 with ADAM, which a core without OS refuses as a reserved flag */
        if (len != (len >= 2 && (p[1] & NTPU_OPTIM_ADAM) ? NTPU_LEN_OPTIM_ADAM : NTPU_LEN_OPTIM))
            return NTPU_DEV_ERR_LENGTH;
        unsigned fl = p[1], pr = get16(p + 2), gr = get16(p + 4), rows = get16(p + 6), aux = get16(p + 8);
        unsigned mom = fl & NTPU_OPTIM_MOMENTUM;
        if (fl & (NTPU_OPTIM_ADAM | NTPU_OPTIM_DECOUPLED)) {
            if ((fl & ~(NTPU_OPTIM_MOMENTUM | NTPU_OPTIM_ADAM | NTPU_OPTIM_DECOUPLED)) || !cfg.os_rows ||
                !(fl & NTPU_OPTIM_ADAM) || mom)
                return NTPU_DEV_ERR_ARG;
            unsigned sr = get16(p + 10);
            if ((unsigned long)pr + rows > ACC_ROWS || (unsigned long)gr + rows > ACC_ROWS ||
                (unsigned long)aux + NTPU_ADAM_AUX_ROWS > ACC_ROWS || (unsigned long)sr + 2ul * rows > cfg.os_rows)
                return NTPU_DEV_ERR_RANGE;
            uint32_t k[MAX_N][NTPU_ADAM_CONSTS];
            for (unsigned i = 0; i < NTPU_ADAM_CONSTS; i++)
                for (unsigned n = 0; n < N; n++)
                    k[n][i] = acc[aux + i][n];
            for (unsigned r = 0; r < rows; r++) {
                uint32_t pv[MAX_N], gv[MAX_N], mv[MAX_N], vv[MAX_N];
                memcpy(pv, acc[pr + r], sizeof pv);
                memcpy(gv, acc[gr + r], sizeof gv);
                memcpy(mv, os[sr + r], sizeof mv);
                memcpy(vv, os[sr + rows + r], sizeof vv);
                for (unsigned n = 0; n < N; n++)
                    ntpu_adam_f32(&pv[n], gv[n], &mv[n], &vv[n], k[n], (fl & NTPU_OPTIM_DECOUPLED) != 0);
                memcpy(os[sr + r], mv, sizeof mv);
                memcpy(os[sr + rows + r], vv, sizeof vv);
                memcpy(acc[pr + r], pv, sizeof pv);
            }
            maybe_busy = 1;
            return NTPU_DEV_OK;
        }
        if (fl & ~NTPU_OPTIM_MOMENTUM)
            return NTPU_DEV_ERR_ARG;
        if ((unsigned long)pr + rows * (1ul + mom) > ACC_ROWS || (unsigned long)gr + rows > ACC_ROWS ||
            (unsigned long)aux + 2 + mom > ACC_ROWS)
            return NTPU_DEV_ERR_RANGE;
        uint32_t lr[MAX_N], wd[MAX_N], mu[MAX_N];
        memcpy(lr, acc[aux], sizeof lr);
        memcpy(wd, acc[aux + 1], sizeof wd);
        if (mom)
            memcpy(mu, acc[aux + 2], sizeof mu);
        for (unsigned r = 0; r < rows; r++) {
            uint32_t pv[MAX_N], gv[MAX_N], sv[MAX_N];
            memcpy(pv, acc[pr + r], sizeof pv);
            memcpy(gv, acc[gr + r], sizeof gv);
            if (mom)
                memcpy(sv, acc[pr + rows + r], sizeof sv);
            for (unsigned n = 0; n < N; n++)
                ntpu_optim_f32(&pv[n], gv[n], mom ? &sv[n] : NULL, lr[n], wd[n], mom ? mu[n] : 0);
            if (mom)
                memcpy(acc[pr + rows + r], sv, sizeof sv);
            memcpy(acc[pr + r], pv, sizeof pv);
        }
        maybe_busy = 1;
        return NTPU_DEV_OK;
    }
    default: return NTPU_DEV_ERR_OPCODE;
    }
}

/* mode 0: only mark dropped bytes in dropped_ahead; mode 1: run the device. */
static void model(int mode)
{
    enum { HUNT, HDR, BODY } st = HUNT;
    static uint8_t f[3 + 65536 + 4];
    size_t have = 0, need = 0;
    for (size_t i = 0; i < nin; i++) {
        uint8_t b = in[i];
        cur_pos = i;
        if (st == HUNT) {
            if (b == NTPU_SOF_CMD) {
                st = HDR;
                have = 0;
            } else if (mode == 0) {
                for (size_t k = i > DROP_WINDOW ? i - DROP_WINDOW : 0; k < i; k++)
                    dropped_ahead[k] = 1;
            } else {
                dropped++;
            }
            continue;
        }
        if (mode == 0) { /* framing only */
            f[have++] = b;
            if (st == HDR && have == 3) {
                unsigned len = get16(f + 1);
                if (len == 0 || len > MAXP) {
                    st = HUNT;
                } else {
                    need = 3 + len + 4;
                    st = BODY;
                }
            } else if (st == BODY && have == need) {
                st = HUNT;
            }
            continue;
        } else if (st == HDR) {
            f[have++] = b;
            if (have == 3) {
                unsigned len = get16(f + 1);
                if (len == 0 || len > MAXP) {
                    cur_len = 0;
                    reply(f[0], NTPU_DEV_ERR_LENGTH, NULL, 0, NULL);
                    st = HUNT;
                } else {
                    need = 3 + len + 4;
                    st = BODY;
                }
            }
        } else {
            f[have++] = b;
            if (have == need) {
                unsigned len = get16(f + 1);
                uint32_t c =
                    f[3 + len] | (uint32_t)f[4 + len] << 8 | (uint32_t)f[5 + len] << 16 | (uint32_t)f[6 + len] << 24;
                cur_cmd = f + 3;
                cur_len = len;
                if (crc32_bits(f, 3 + len) != c) {
                    reply(f[0], NTPU_DEV_ERR_CRC, NULL, 0, NULL);
                } else if (f[3] == NTPU_OP_SYNC) {
                    if (len != 1)
                        reply(f[0], NTPU_DEV_ERR_LENGTH, NULL, 0, NULL);
                    else
                        reply(f[0], NTPU_DEV_OK, &expected_seq, 1, NULL);
                } else if (f[0] != expected_seq) {
                    reply(f[0], NTPU_DEV_ERR_SEQ, NULL, 0, NULL);
                } else {
                    expected_seq++;
                    int s = exec(f[0], f + 3, len);
                    if (s >= 0)
                        reply(f[0], (uint8_t)s, NULL, 0, NULL);
                }
                st = HUNT;
            }
        }
    }
}

/* ================================================================ test content */

/* bf16 values: mostly normal with a spread of exponents, some signed zeros, subnormals, Inf, NaN. */
static uint16_t rnd_bf16(void)
{
    unsigned k = rnd_below(64);
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    if (k == 0)
        return s; /* +-0 */
    if (k == 1)
        return (uint16_t)(s | (1 + rnd_below(127))); /* subnormal */
    if (k == 2)
        return (uint16_t)(s | 0x7F80); /* Inf */
    if (k == 3)
        return (uint16_t)(0x7FC0 | rnd_below(64)); /* NaN */
    if (k == 4)
        return (uint16_t)(s | (1u << 7) | rnd_below(128)); /* smallest exponent */
    unsigned e = 120 + rnd_below(16);
    return (uint16_t)(s | e << 7 | rnd_below(128));
}

static uint16_t rnd_lane(int bf16)
{
    return bf16 ? rnd_bf16() : (uint16_t)rnd();
}

static void fill_rows16(uint8_t *d, unsigned rows, int bf16)
{
    for (unsigned i = 0; i < rows * N; i++) {
        uint16_t v = rnd_lane(bf16);
        d[2 * i] = (uint8_t)v;
        d[2 * i + 1] = (uint8_t)(v >> 8);
    }
}

static void fill_rows32(uint8_t *d, unsigned rows, int bf16)
{
    for (unsigned i = 0; i < rows * N; i++) {
        uint32_t v = bf16 ? ((uint32_t)rnd_bf16() << 16 | (rnd() & 0xFFFF)) : rnd();
        if (bf16 && rnd_below(8) == 0)
            v = rnd_below(2) ? 0x80000000u : 0; /* signed zero starts */
        put32(d + 4 * i, v);
    }
}

/* Largest row count per WRITE_MEM frame (and, conservatively, READ_MEM). */
static unsigned max_rows(unsigned mem)
{
    return (MAXP - 6) / row_bytes(mem);
}

/* Random rows, in as many WRITE_MEM frames as max_payload needs. */
static void write_random(unsigned mem, unsigned addr, unsigned rows, int bf16)
{
    static uint8_t d[65536];
    do {
        unsigned r = rows < max_rows(mem) ? rows : max_rows(mem);
        if (mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS)
            fill_rows32(d, r, bf16);
        else
            fill_rows16(d, r, bf16);
        write_mem(mem, addr, r, d);
        addr += r;
        rows -= r;
    } while (rows > 0);
}

/* READ_MEM of any number of rows, in frames that fit. */
static void read_rows(unsigned mem, unsigned addr, unsigned rows)
{
    do {
        unsigned r = rows < max_rows(mem) ? rows : max_rows(mem);
        read_mem(mem, addr, r);
        addr += r;
        rows -= r;
    } while (rows > 0);
}

static void read_all(unsigned mem)
{
    read_rows(mem, 0, mem_rows(mem));
}

/* fp32 bit patterns for the vector unit: every class of docs/numerics.md, both signs. */
static uint32_t rnd_f32(void)
{
    uint32_t s = (rnd() & 1u) << 31;
    switch (rnd_below(32)) {
    case 0: return s;                                                               /* +-0 */
    case 1: return s | (1 + rnd_below(0x7FFFFF));                                   /* subnormal */
    case 2: return s | 0x7F800000u;                                                 /* Inf */
    case 3: return s | 0x7F800000u | (1 + rnd_below(0x7FFFFF));                     /* NaN, any payload */
    case 4: return s | (0x7F7FFFFFu - rnd_below(0x10000));                          /* near the largest finite */
    case 5: return s | 0x00800000u | rnd_below(0x20000);                            /* near the smallest normal */
    case 6: return s | (120 + rnd_below(16)) << 23 | (rnd() & 0x7F0000u) | 0x8000u; /* bf16 ties */
    default: return s | (110 + rnd_below(36)) << 23 | (rnd() & 0x7FFFFFu);
    }
}

/* int32 accumulators for int8 mode: small, medium and any, with the extremes. */
static uint32_t rnd_i32(void)
{
    unsigned k = rnd_below(16);
    if (k == 0)
        return 0x80000000u;
    if (k == 1)
        return 0x7FFFFFFFu;
    if (k < 5)
        return rnd();
    uint32_t v = rnd() & (k < 10 ? 0xFFFu : 0xFFFFFu);
    return (rnd() & 1u) ? 0u - v : v;
}

/* Requantization multipliers: mostly normalized ([2^30, 2^31)), and any int32. */
static uint32_t rnd_mult(void)
{
    switch (rnd_below(10)) {
    case 0: return 0x80000000u;
    case 1: return 0;
    case 2: return rnd();
    case 3: return 0x7FFFFFFFu;
    default: return 0x40000000u | (rnd() & 0x3FFFFFFFu);
    }
}

/* Shifts: mostly in range, and below 0 / above 31 (clamped). */
static uint32_t rnd_shift(void)
{
    switch (rnd_below(10)) {
    case 0: return 0u - (1 + rnd_below(40));
    case 1: return 32 + rnd_below(1000);
    case 2: return rnd_below(2) ? 0x80000000u : 0x7FFFFFFFu;
    case 3: return rnd_below(2) ? 0 : 31;
    default: return 2 + rnd_below(14);
    }
}

/* RELU_GRAD masks: the bf16 classes that decide positive(m), both signs. */
static uint16_t rnd_mask(void)
{
    static const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80,
                                       0x7FC0, 0xFFC1, 0x7F81, 0x0080, 0x8080, 0x7F7F};
    unsigned k = rnd_below(24);
    return k < 12 ? special[k] : rnd_bf16();
}

enum { V_F32, V_I32, V_MULT, V_SHIFT };

/* ACC rows of one kind of value, in as many WRITE_MEM frames as needed. */
static void write_acc(unsigned addr, unsigned rows, int kind)
{
    static uint8_t d[65536];
    do {
        unsigned r = rows < max_rows(NTPU_MEM_ACC) ? rows : max_rows(NTPU_MEM_ACC);
        for (unsigned i = 0; i < r * N; i++)
            put32(d + 4 * i, kind == V_F32    ? rnd_f32()
                             : kind == V_I32  ? rnd_i32()
                             : kind == V_MULT ? rnd_mult()
                                              : rnd_shift());
        write_mem(NTPU_MEM_ACC, addr, r, d);
        addr += r;
        rows -= r;
    } while (rows > 0);
}

/* UB rows of masks. */
static void write_masks(unsigned addr, unsigned rows)
{
    static uint8_t d[65536];
    do {
        unsigned r = rows < max_rows(NTPU_MEM_UB) ? rows : max_rows(NTPU_MEM_UB);
        for (unsigned i = 0; i < r * N; i++) {
            uint16_t v = rnd_mask();
            d[2 * i] = (uint8_t)v;
            d[2 * i + 1] = (uint8_t)(v >> 8);
        }
        write_mem(NTPU_MEM_UB, addr, r, d);
        addr += r;
        rows -= r;
    } while (rows > 0);
}

/* The destination rows of a vector command, read back. */
static void read_out(unsigned out, unsigned addr, unsigned rows)
{
    if (rows)
        read_rows(out == 1 ? NTPU_MEM_WB : out == 2 ? NTPU_MEM_ACC : NTPU_MEM_UB, addr, rows);
}

/* The 1.1 commands: MATMUL TRANSPOSE_A, ACT, RELU_GRAD, COLSUM, their checks, and their order with
 * the 1.0 commands (no FENCE in between). Addresses scale with the configuration's memories. */
/* 1.4, OS and OPTIM ADAM: only on a core with OS (n4); the others answer these with ERR_MEM /
 * ERR_ARG in directed_v11. Random p, g, m, v (every class of value), constants mostly like
 * training's, Adam and AdamW, g and the constants overlapping p, every error, then everything read
 * back. */
static void adam12(unsigned flags, unsigned p, unsigned g, unsigned rows, unsigned aux, unsigned sr, unsigned len)
{
    uint8_t c[12] = {NTPU_OP_OPTIM, (uint8_t)flags,      (uint8_t)p,    (uint8_t)(p >> 8),
                     (uint8_t)g,    (uint8_t)(g >> 8),   (uint8_t)rows, (uint8_t)(rows >> 8),
                     (uint8_t)aux,  (uint8_t)(aux >> 8), (uint8_t)sr,   (uint8_t)(sr >> 8)};
    frame(c, len);
}

static void directed_adam(void)
{
    const unsigned A = NTPU_OPTIM_ADAM, D = NTPU_OPTIM_DECOUPLED, S = cfg.os_rows;
    if (!S)
        return;
    write_random(NTPU_MEM_ACC, 0, ACC_ROWS, 1);
    write_random(NTPU_MEM_OS, 0, S, 1);
    read_all(NTPU_MEM_OS);
    /* constants at ACC 30..38: lr, wd, b1, 1-b1, b2, 1-b2, c1, c2, eps of a plausible run */
    static uint8_t d[NTPU_ADAM_AUX_ROWS * 4 * MAX_N];
    const float k[NTPU_ADAM_AUX_ROWS] = {1e-3f,         1e-2f,  0.9f,      1.0f - 0.9f, 0.999f,
                                         1.0f - 0.999f, 0.271f, 0.002997f, 1e-8f};
    for (unsigned i = 0; i < NTPU_ADAM_AUX_ROWS; i++)
        for (unsigned n = 0; n < N; n++) {
            float v = k[i] * (1.0f + 0.125f * (float)n); /* a different value per lane */
            uint32_t u;
            memcpy(&u, &v, 4);
            put32(d + 4 * (i * N + n), u);
        }
    write_mem(NTPU_MEM_ACC, 30, NTPU_ADAM_AUX_ROWS, d);
    adam12(A, 0, 10, 8, 30, 0, 12);                               /* Adam: m at OS 0..7, v at 8..15 */
    adam12(A | D, 4, 4, 6, 30, 12, 12);                           /* AdamW, g = p */
    adam12(A, 2, 5, 5, 30, 1, 12);                                /* g overlapping p */
    adam12(A | D, 26, 20, 6, 30, 0, 12);                          /* p overlapping the constants (read first) */
    adam12(A, 0, 0, 0, ACC_ROWS - NTPU_ADAM_AUX_ROWS, S, 12);     /* no rows, at the very end */
    adam12(A, 0, 0, 1, 30, 0, 10);                                /* ERR_LENGTH: ADAM is 12 bytes */
    adam12(0, 0, 0, 1, 30, 0, 12);                                /* ERR_LENGTH: without ADAM 10 */
    adam12(A | NTPU_OPTIM_MOMENTUM, 0, 0, 1, 30, 0, 12);          /* ERR_ARG */
    adam12(A | 0x40, 0xFFFF, 0, 1, 30, 0, 12);                    /* ERR_ARG before ERR_RANGE */
    adam12(A, ACC_ROWS - 1, 0, 2, 30, 0, 12);                     /* ERR_RANGE: p */
    adam12(A, 0, ACC_ROWS - 1, 2, 30, 0, 12);                     /* ERR_RANGE: g */
    adam12(A, 0, 0, 1, ACC_ROWS - NTPU_ADAM_AUX_ROWS + 1, 0, 12); /* ERR_RANGE: the last constant */
    adam12(A, 0, 0, 4, 30, S - 7, 12);                            /* ERR_RANGE: v's last row */
    read_all(NTPU_MEM_ACC);
    read_all(NTPU_MEM_OS);
    read_mem(NTPU_MEM_OS, S - 1, 2); /* ERR_RANGE */
    read_mem(3, 0, 1);               /* ERR_MEM: no PM */
    cmd1(NTPU_OP_STATUS);
}

static void directed_v11(void)
{
    const unsigned U = UB_ROWS, W = WB_ROWS, A = ACC_ROWS;
    uint8_t p[16];

    /* ---- MATMUL TRANSPOSE_A: strides 0 (one block again), below N (overlapping blocks), N,
     * beyond N; int8 and bf16, with and without accumulate, normal and transposed tiles. */
    write_random(NTPU_MEM_UB, 0, U / 2, 0);
    write_random(NTPU_MEM_UB, U / 2, U - U / 2, 1);
    write_random(NTPU_MEM_WB, 0, 2 * N, 0);
    write_random(NTPU_MEM_WB, 2 * N, 2 * N, 1);
    write_random(NTPU_MEM_ACC, 0, A, 1);
    const unsigned strides[] = {0, 1, N - 1, N, N + 1, 2 * N + 1, 2, N};
    for (unsigned t = 0; t < 8; t++) {
        unsigned bf16 = t & 1, blocks = 1 + t % 3, rows = blocks * N;
        unsigned aa = (t * 5) % (A - rows + 1);
        load_w((t & 2) ? NTPU_LOADW_TRANSPOSE : 0, bf16 ? 2 * N : 0);
        matmul_t((bf16 ? NTPU_MATMUL_BF16 : 0) | ((t & 4) ? NTPU_MATMUL_ACCUMULATE : 0), bf16 ? U / 2 : t, aa, rows,
                 strides[t]);
        read_rows(NTPU_MEM_ACC, aa, rows);
    }
    /* Plain and transposed MATMULs back to back on one tile, each accumulating onto rows the one
     * before is still writing. */
    load_w(0, 2 * N);
    matmul(NTPU_MATMUL_BF16, U / 2, 0, 2 * N);
    matmul_t(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, U / 2 + 1, 0, 2 * N, N + 2);
    matmul(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, U / 2 + 3, N, 2 * N);
    matmul_t(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, U - N, N, N, 0);
    read_rows(NTPU_MEM_ACC, 0, 3 * N);
    /* The last block ends on UB's last row; rows = 0 only swaps in the pending tile (its ub_addr
     * may be ub_rows); one block with the largest stride, which is never added. */
    load_w(NTPU_LOADW_TRANSPOSE, 0);
    matmul_t(NTPU_MATMUL_BF16, U - N - 2 * 5, 1, 3 * N, 5);
    load_w(0, 2 * N);
    matmul_t(0, U, 0, 0, 0xFFFF);
    matmul_t(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, U - N, A - N, N, 0xFFFF);
    read_rows(NTPU_MEM_ACC, 0, 3 * N + 1);
    read_rows(NTPU_MEM_ACC, A - N, N);
    /* Checks: LEN for the flags, reserved bits, rows a multiple of N, the exact range. */
    matmul_t(0, U - N - 2 * 5 + 1, 1, 3 * N, 5); /* ERR_RANGE: one row past UB */
    matmul_t(0, 0, 0, 2 * N, 0xFFFF);            /* ERR_RANGE, no 16-bit wrap */
    matmul_t(0, 0xFFFF, 0, 0, 0);                /* ERR_RANGE with rows = 0 */
    matmul_t(0, 0, A - N + 1, N, 0);             /* ERR_RANGE: acc */
    matmul_t(0, 0, 0, N + 1, 1);                 /* ERR_ARG: rows not a multiple of N */
    matmul_t(0, 0xFFFF, 0, 1, 0);                /* ERR_ARG before ERR_RANGE */
    matmul_t(0x08, 0, 0, N, 0);                  /* ERR_ARG: reserved */
    memset(p, 0, sizeof p);
    p[0] = NTPU_OP_MATMUL;
    p[1] = NTPU_MATMUL_TRANSPOSE_A;
    p[6] = (uint8_t)N;
    frame(p, 9); /* ERR_LENGTH */
    frame(p, 11);
    frame(p, 10); /* fine: one block at 0 */
    p[1] = NTPU_MATMUL_ACCUMULATE;
    frame(p, 10); /* ERR_LENGTH: 10 without TRANSPOSE_A */
    read_rows(NTPU_MEM_ACC, 0, N);

    /* ---- ACT, fp32 mode: every OUT, BIAS and RELU. */
    write_acc(0, A, V_F32);
    for (unsigned fl = 0; fl < 12; fl++) {
        unsigned out = fl >> 2, rows = 1 + rnd_below(2 * N);
        unsigned src = rnd_below(A - rows + 1), dst = rnd_below(out_rows(out) - rows + 1);
        act(fl, src, dst, rows, rnd_below(A));
        read_out(out, dst, rows);
    }
    /* x + (-x) is +0: a row and its negation as the bias. */
    {
        uint8_t d[8 * MAX_N];
        for (unsigned n = 0; n < N; n++) {
            uint32_t v = rnd_f32();
            put32(d + 4 * n, v);
            put32(d + 4 * (N + n), v ^ 0x80000000u);
        }
        write_mem(NTPU_MEM_ACC, 3, 2, d);
        act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 3, A - 1, 1, 4);
        read_rows(NTPU_MEM_ACC, A - 1, 1);
    }
    /* Overlaps in ACC: in place, destinations starting 1, 2, 3 and N + 2 rows further on (each
     * row reads what a row before it wrote), one before the source, and a bias row that the
     * command itself overwrites (it is read once, before row 0). */
    write_acc(0, A, V_F32);
    act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 2, 2, 6, 0);
    act(NTPU_ACT_RELU | NTPU_OUT_ACC, 2, 3, 6, 0);
    act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 4, 6, 7, 1);
    act(NTPU_OUT_ACC, 6, 9, 8, 0);
    act(NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_ACC, 9, 9 + N + 2, 10, 0);
    act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 12, 11, 6, 13);
    act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 20, 22, 6, 24);
    read_rows(NTPU_MEM_ACC, 0, A);
    /* Memory ends, rows = 0, an aux that is ignored. */
    act(NTPU_OUT_UB, A - 2, U - 2, 2, 0xFFFF);
    act(NTPU_ACT_BIAS | NTPU_OUT_WB, A - 3, W - 3, 3, A - 1);
    act(NTPU_ACT_RELU | NTPU_OUT_ACC, A, A, 0, 0xFFFF);
    read_rows(NTPU_MEM_UB, U - 2, 2);
    read_rows(NTPU_MEM_WB, W - 3, 3);

    /* ---- ACT, int8 mode: bias, ReLU, multipliers and shifts per lane, aux at ACC's end. */
    for (unsigned t = 0; t < 6; t++) {
        unsigned aux = t == 5 ? A - 3 : rnd_below(A - 3 + 1), rows = 1 + rnd_below(2 * N);
        unsigned src = rnd_below(A - rows + 1), dst = rnd_below(U - rows + 1);
        write_acc(0, A, V_I32);
        write_acc(aux + 1, 1, V_MULT);
        write_acc(aux + 2, 1, V_SHIFT);
        act(NTPU_OUT_INT8 | (t & 3), src, dst, rows, aux);
        read_rows(NTPU_MEM_UB, dst, rows);
    }

    /* ---- RELU_GRAD: every OUT; in place over the mask; overlaps in UB and ACC. */
    write_acc(0, A, V_F32);
    write_masks(0, U);
    for (unsigned out = 0; out < 3; out++) {
        unsigned rows = 1 + rnd_below(2 * N), src = rnd_below(A - rows + 1);
        unsigned mask = rnd_below(U - rows + 1), dst = rnd_below(out_rows(out) - rows + 1);
        relu_grad(out << 2, src, dst, rows, mask);
        read_out(out, dst, rows);
    }
    relu_grad(NTPU_OUT_UB, 0, 4, 6, 4);
    relu_grad(NTPU_OUT_UB, 1, 9, 6, 8);
    relu_grad(NTPU_OUT_UB, 2, 15, 7, 12);
    relu_grad(NTPU_OUT_UB, 3, 16, 4, 20);
    relu_grad(NTPU_OUT_ACC, 5, 7, 8, 0);
    relu_grad(NTPU_OUT_WB, A - 2, W - 2, 2, U - 2);
    relu_grad(NTPU_OUT_ACC, 0, 0, 0, U);
    read_rows(NTPU_MEM_UB, 0, 28);
    read_rows(NTPU_MEM_ACC, 0, 16);
    read_rows(NTPU_MEM_WB, W - 2, 2);

    /* ---- COLSUM: with and without ACCUMULATE, rows = 0, dst inside the source, all of ACC. */
    write_acc(0, A, V_F32);
    colsum(0, 0, A - 1, 5);
    colsum(NTPU_COLSUM_ACCUMULATE, 3, A - 1, 4);
    colsum(0, 6, 1, 0);
    colsum(NTPU_COLSUM_ACCUMULATE, 6, 2, 0);
    colsum(NTPU_COLSUM_ACCUMULATE, 4, 6, 5);
    colsum(0, 10, 12, 6);
    colsum(NTPU_COLSUM_ACCUMULATE, 0, A - 2, A);
    read_rows(NTPU_MEM_ACC, 0, A);

    /* ---- Checks of the vector commands, in order. */
    act(0x10, 0, 0, 1, 0);                               /* ERR_ARG: reserved */
    act(0x80 | NTPU_OUT_INT8, 0xFFFF, 0, 1, 0);          /* ERR_ARG before ERR_RANGE */
    act(NTPU_OUT_ACC, A - 1, 0, 2, 0);                   /* ERR_RANGE: src */
    act(NTPU_OUT_UB, 0, U - 1, 2, 0);                    /* ERR_RANGE: dst in UB */
    act(NTPU_OUT_WB, 0, W - 1, 2, 0);                    /* ERR_RANGE: dst in WB */
    act(NTPU_OUT_ACC, 0, A - 1, 2, 0);                   /* ERR_RANGE: dst in ACC */
    act(NTPU_OUT_INT8, 0, U - 1, 2, 0);                  /* ERR_RANGE: int8 goes to UB */
    act(NTPU_ACT_BIAS, 0, 0, 1, A);                      /* ERR_RANGE: bias row */
    act(NTPU_ACT_BIAS | NTPU_OUT_ACC, 0, 0, 1, A - 1);   /* fine */
    act(NTPU_OUT_INT8, 0, 0, 1, A - 2);                  /* ERR_RANGE: shift row */
    act(NTPU_OUT_INT8 | NTPU_ACT_BIAS, 0, 0, 0, A - 2);  /* ERR_RANGE, also with rows = 0 */
    act(NTPU_ACT_RELU, A + 1, 0, 0, 0);                  /* ERR_RANGE: empty range past the end */
    relu_grad(NTPU_ACT_BIAS, 0, 0, 1, 0);                /* ERR_ARG: reserved bit 0 */
    relu_grad(NTPU_ACT_RELU, 0, 0, 1, 0);                /* ERR_ARG: reserved bit 1 */
    relu_grad(0x40, 0, 0, 1, 0);                         /* ERR_ARG: reserved bit 6 */
    relu_grad(NTPU_OUT_INT8, 0, 0, 1, 0);                /* ERR_ARG: OUT = 3 */
    relu_grad(NTPU_OUT_INT8, 0xFFFF, 0xFFFF, 9, 0xFFFF); /* ERR_ARG before ERR_RANGE */
    relu_grad(NTPU_OUT_UB, 0, 0, 2, U - 1);              /* ERR_RANGE: mask */
    relu_grad(NTPU_OUT_UB, A - 1, 0, 2, 0);              /* ERR_RANGE: src */
    relu_grad(NTPU_OUT_WB, 0, W - 1, 2, 0);              /* ERR_RANGE: dst in WB */
    relu_grad(NTPU_OUT_ACC, 0, A - 1, 2, 0);             /* ERR_RANGE: dst in ACC */
    colsum(0x02, 0, 0, 1);                               /* ERR_ARG */
    colsum(0x80, 0xFFFF, 0, 1);                          /* ERR_ARG before ERR_RANGE */
    colsum(0, 0, A, 1);                                  /* ERR_RANGE: dst */
    colsum(0, A - 1, 0, 2);                              /* ERR_RANGE: src */
    colsum(0, A, A - 1, 0);                              /* fine: empty range at the end */
    /* OPTIM (1.3): random constants and values, SGD and momentum, gradients overlapping the
     * parameters, then each error. */
    write_random(NTPU_MEM_ACC, 0, 6 * N + 3, 1);
    optim(0, 0, 3 * N, 2 * N, 6 * N);                   /* SGD */
    optim(NTPU_OPTIM_MOMENTUM, 0, 4 * N, 2 * N, 6 * N); /* momentum: state rows 2N .. 4N-1 */
    optim(NTPU_OPTIM_MOMENTUM, N, N + 1, 3, 6 * N);     /* g inside p and s */
    optim(NTPU_OPTIM_MOMENTUM, 0, 0, 0, 6 * N);         /* no rows */
    optim(0, A - 1, 0, 1, A - 2);                       /* fine: at the very end */
    optim(0x04, 0, 0, 1, 0);                            /* ERR_ARG: DECOUPLED without ADAM */
    optim(0x02, 0, 0, 1, 0);                            /* ERR_LENGTH: ADAM (1.4) is 12 bytes */
    memset(p, 0, sizeof p);
    p[0] = NTPU_OP_OPTIM;
    p[1] = NTPU_OPTIM_ADAM;
    p[6] = 1;
    frame(p, NTPU_LEN_OPTIM_ADAM); /* ERR_ARG: ADAM without OS */
    p[1] = NTPU_OPTIM_ADAM | NTPU_OPTIM_DECOUPLED;
    frame(p, NTPU_LEN_OPTIM_ADAM);              /* ERR_ARG */
    read_mem(NTPU_MEM_OS, 0, 1);                /* ERR_MEM: no OS on these cores */
    optim(0x80, 0xFFFF, 0, 1, 0);               /* ERR_ARG before ERR_RANGE */
    optim(NTPU_OPTIM_MOMENTUM, A - 3, 0, 2, 0); /* ERR_RANGE: state rows; SGD would fit */
    optim(0, A - 1, 0, 2, 0);                   /* ERR_RANGE: p */
    optim(0, 0, A - 1, 2, 0);                   /* ERR_RANGE: g */
    optim(NTPU_OPTIM_MOMENTUM, 0, 0, 1, A - 2); /* ERR_RANGE: mu; SGD would fit */
    optim(0, 0, 0, 1, A - 1);                   /* ERR_RANGE: wd */
    read_rows(NTPU_MEM_ACC, 0, 6 * N);
    memset(p, 0, sizeof p);
    for (uint8_t op = NTPU_OP_ACT; op <= NTPU_OP_OPTIM; op++) {
        if (op == NTPU_OP_SYNC)
            continue;
        unsigned fixed = op == NTPU_OP_COLSUM ? NTPU_LEN_COLSUM : NTPU_LEN_ACT;
        p[0] = op;
        frame(p, 1); /* ERR_LENGTH */
        frame(p, fixed - 1);
        frame(p, fixed + 1);
        p[1] = 0xFF;
        frame(p, fixed + 1); /* LEN before flags */
        p[1] = 0;
    }
    read_rows(NTPU_MEM_ACC, 0, 2);
    cmd1(NTPU_OP_STATUS);

    /* ---- Order between the units with no FENCE: each command sees the ones before it.
     * MATMUL -> ACT of its rows into UB -> MATMUL of those -> COLSUM of the results -> ACT into
     * WB -> LOAD_W of that tile -> MATMUL with it -> RELU_GRAD of its rows -> READ_MEM. */
    write_random(NTPU_MEM_UB, 0, 2 * N, 1);
    write_random(NTPU_MEM_WB, 0, N, 1);
    load_w(0, 0);
    matmul(NTPU_MATMUL_BF16, 0, 0, 2 * N);
    act(NTPU_ACT_RELU | NTPU_OUT_UB, 0, 2 * N, 2 * N, 0);
    matmul_t(NTPU_MATMUL_BF16, 2 * N, 2 * N, 2 * N, N);
    colsum(0, 2 * N, 4 * N, 2 * N);
    act(NTPU_ACT_BIAS | NTPU_OUT_WB, 2 * N, W - N, N, 4 * N);
    load_w(NTPU_LOADW_TRANSPOSE, W - N);
    matmul(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, 0, 0, 2 * N);
    relu_grad(NTPU_OUT_ACC, 0, 0, 2 * N, 2 * N);
    cmd1(NTPU_OP_STATUS);
    read_rows(NTPU_MEM_ACC, 0, 4 * N + 1);
    read_rows(NTPU_MEM_WB, W - N, N);
    cmd1(NTPU_OP_FENCE);
    cmd1(NTPU_OP_STATUS);
    counters(0);
}

/* One random vector command or TRANSPOSE_A MATMUL, mostly valid, sometimes out of range. */
static void random_v11(void)
{
    unsigned c = rnd_below(10), big = rnd_below(8) == 0;
    unsigned rows = big ? rnd_below(ACC_ROWS + 2) : rnd_below(2 * N + 1);
    if (c < 3) {
        unsigned blocks = (rows + N - 1) / N, stride = rnd_below(2 * N + 2);
        if (blocks > 1 && (blocks - 1) * stride + N > UB_ROWS)
            stride = (UB_ROWS - N) / (blocks - 1);
        unsigned span = blocks ? (blocks - 1) * stride + N : 0;
        unsigned ua = span <= UB_ROWS ? rnd_below(UB_ROWS - span + 1 + big) : 0;
        unsigned aa = blocks * N <= ACC_ROWS ? rnd_below(ACC_ROWS - blocks * N + 1 + big) : 0;
        matmul_t(rnd_below(4), ua, aa, rnd_below(6) ? blocks * N : rows, stride);
    } else if (c < 6) {
        unsigned fl = rnd_below(16), out = fl >> 2;
        unsigned lim = out_rows(out == 3 ? 0 : out);
        if (lim > ACC_ROWS)
            lim = ACC_ROWS;
        if (rows > lim)
            rows = lim;
        unsigned dst_rows = out_rows(out == 3 ? 0 : out);
        act(fl, rnd_below(ACC_ROWS - rows + 1 + big), rnd_below(dst_rows - rows + 1 + big), rows,
            rnd_below(ACC_ROWS - 2 + big));
    } else if (c < 8) {
        unsigned out = rnd_below(3), lim = out_rows(out) < UB_ROWS ? out_rows(out) : UB_ROWS;
        if (lim > ACC_ROWS)
            lim = ACC_ROWS;
        if (rows > lim)
            rows = lim;
        relu_grad(out << 2, rnd_below(ACC_ROWS - rows + 1), rnd_below(out_rows(out) - rows + 1 + big), rows,
                  rnd_below(UB_ROWS - rows + 1));
    } else {
        if (rows > ACC_ROWS)
            rows = ACC_ROWS;
        colsum(rnd_below(2), rnd_below(ACC_ROWS - rows + 1 + big), rnd_below(ACC_ROWS + big), rows);
    }
}

static void directed(void)
{
    static uint8_t d[65536];
    uint8_t p[16];

    cmd1(NTPU_OP_NOP);
    cmd1(NTPU_OP_INFO);
    cmd1(NTPU_OP_STATUS);

    /* MATMULs before any LOAD_W use the zero weights of reset: ACC keeps its start value (int8), or
     * becomes start + 0 (bf16: -0 turns +0). */
    write_random(NTPU_MEM_UB, 0, 8, 1);
    write_random(NTPU_MEM_ACC, 0, 8, 1);
    matmul(NTPU_MATMUL_BF16 | NTPU_MATMUL_ACCUMULATE, 0, 0, 4);
    matmul(NTPU_MATMUL_ACCUMULATE, 4, 4, 2);
    matmul(0, 6, 6, 2);
    read_rows(NTPU_MEM_ACC, 0, 8);

    /* Round trips on all three memories, first and last rows, rows = 0. */
    for (unsigned mem = 0; mem < 3; mem++) {
        write_random(mem, 0, max_rows(mem) < mem_rows(mem) ? max_rows(mem) : mem_rows(mem), rnd() & 1);
        write_random(mem, mem_rows(mem) - 3, 3, rnd() & 1);
        write_mem(mem, 5, 0, d);
        read_mem(mem, 5, 0);
        read_all(mem);
    }
    cmd1(NTPU_OP_FENCE);
    cmd1(NTPU_OP_STATUS);

    /* LOAD_W normal and transposed, int8 and bf16, with and without accumulate. */
    for (int t = 0; t < 8; t++) {
        int bf16 = t & 1, tr = (t >> 1) & 1, accu = (t >> 2) & 1;
        write_random(NTPU_MEM_WB, 4, N, bf16);
        write_random(NTPU_MEM_UB, 10, 10, bf16);
        write_random(NTPU_MEM_ACC, 12, 10, bf16);
        load_w(tr ? NTPU_LOADW_TRANSPOSE : 0, 4);
        matmul((bf16 ? NTPU_MATMUL_BF16 : 0) | (accu ? NTPU_MATMUL_ACCUMULATE : 0), 10, 12, 10);
        read_rows(NTPU_MEM_ACC, 12, 10);
    }
    /* The pending tile is taken by the next MATMUL only; a MATMUL with rows = 0 still swaps. */
    write_random(NTPU_MEM_WB, 0, N, 0);
    write_random(NTPU_MEM_WB, 8, N, 0);
    load_w(0, 0);
    matmul(0, 0, 0, 3);
    load_w(NTPU_LOADW_TRANSPOSE, 8);
    matmul(0, 0, 3, 0);                      /* swap, nothing else */
    matmul(NTPU_MATMUL_ACCUMULATE, 3, 0, 3); /* the transposed tile */
    load_w(0, 0);
    load_w(0, 8); /* the second LOAD_W wins */
    matmul(0, 6, 6, 5);
    matmul(NTPU_MATMUL_ACCUMULATE, 6, 6, 5); /* same tile again, reads its own earlier writes */
    read_rows(NTPU_MEM_ACC, 0, 11);
    cmd1(NTPU_OP_FENCE);
    cmd1(NTPU_OP_STATUS);
    counters(0);
    counters(NTPU_COUNTERS_CLEAR);
    counters(0);

    /* Errors, each check in turn, and precedence between them. */
    p[0] = 0x0E;
    frame(p, 1); /* ERR_OPCODE: the first opcode past 1.3's */
    p[0] = 0xFF;
    p[1] = 7;
    frame(p, 2); /* ERR_OPCODE before LEN */
    p[0] = NTPU_OP_NOP;
    p[1] = 0;
    frame(p, 2); /* ERR_LENGTH: NOP with 2 bytes */
    p[0] = NTPU_OP_INFO;
    frame(p, 3);
    p[0] = NTPU_OP_FENCE;
    frame(p, 2);
    p[0] = NTPU_OP_STATUS;
    frame(p, 8);
    p[0] = NTPU_OP_COUNTERS;
    frame(p, 1);
    p[0] = NTPU_OP_COUNTERS;
    p[1] = 0x80;
    frame(p, 3); /* LEN before flags */
    frame(p, 2); /* ERR_ARG */
    memset(p, 0, sizeof p);
    p[0] = NTPU_OP_LOAD_W;
    frame(p, 3);
    frame(p, 5);
    p[1] = 2;
    frame(p, 4); /* ERR_ARG */
    p[1] = 1;
    p[2] = (uint8_t)(WB_ROWS - N + 1);
    frame(p, 4); /* ERR_RANGE */
    p[1] = 0x81;
    frame(p, 4); /* ERR_ARG before ERR_RANGE */
    p[2] = 0xFF;
    p[3] = 0xFF;
    p[1] = 0;
    frame(p, 4); /* ERR_RANGE, wb_addr 65535 */
    memset(p, 0, sizeof p);
    p[0] = NTPU_OP_MATMUL;
    frame(p, 7);
    frame(p, 9);
    p[1] = NTPU_MATMUL_TRANSPOSE_A;
    frame(p, 8); /* ERR_LENGTH in 1.1 (ERR_ARG in 1.0): TRANSPOSE_A needs 10 */
    p[1] = 8;
    frame(p, 8); /* ERR_ARG */
    p[1] = 3;
    p[6] = 1;
    p[2] = (uint8_t)UB_ROWS;
    frame(p, 8); /* ERR_RANGE: ub */
    p[2] = (uint8_t)(UB_ROWS - 1);
    frame(p, 8); /* fits: one row (bf16, accumulate) */
    p[4] = (uint8_t)ACC_ROWS;
    frame(p, 8); /* ERR_RANGE: acc */
    p[4] = 0;
    p[6] = 0xFF;
    p[7] = 0xFF;
    frame(p, 8); /* ERR_RANGE: rows 65535 */
    p[1] = 0xF0;
    frame(p, 8); /* ERR_ARG before ERR_RANGE */
    memset(p, 0, sizeof p);
    p[0] = NTPU_OP_READ_MEM;
    frame(p, 5);
    frame(p, 7);
    p[1] = 3;
    frame(p, 6); /* ERR_MEM */
    p[1] = 0xFF;
    p[4] = 0xFF;
    frame(p, 6); /* ERR_MEM before the reply size */
    p[1] = NTPU_MEM_ACC;
    p[4] = (uint8_t)((MAXP - 1) / row_bytes(NTPU_MEM_ACC) + 1);
    p[2] = (uint8_t)ACC_ROWS;
    frame(p, 6); /* ERR_LENGTH: reply too long, before the range */
    p[4] = (uint8_t)((MAXP - 1) / row_bytes(NTPU_MEM_ACC));
    p[2] = 0;
    frame(p, 6); /* the largest READ_MEM that fits */
    p[2] = (uint8_t)(ACC_ROWS - p[4] + 1);
    frame(p, 6); /* ERR_RANGE */
    p[4] = 0;
    p[2] = (uint8_t)(ACC_ROWS + 1);
    frame(p, 6); /* ERR_RANGE with rows = 0 */
    p[2] = (uint8_t)ACC_ROWS;
    frame(p, 6); /* rows = 0 at the end: fine */
    memset(d, 0x5A, sizeof d);
    d[0] = NTPU_OP_WRITE_MEM;
    d[1] = NTPU_MEM_UB;
    d[2] = 0;
    d[3] = 0;
    d[4] = 1;
    d[5] = 0;
    frame(d, 5);             /* ERR_LENGTH: short */
    frame(d, 6 + 2 * N - 1); /* ERR_LENGTH: data one short */
    frame(d, 6 + 2 * N + 1); /* ERR_LENGTH: data one long */
    d[1] = 7;
    frame(d, 5);             /* LEN before mem */
    frame(d, 6 + 2 * N + 1); /* ERR_MEM before the data length */
    d[1] = NTPU_MEM_WB;
    d[2] = (uint8_t)WB_ROWS;
    frame(d, 6 + 2 * N); /* ERR_RANGE */
    d[1] = NTPU_MEM_ACC;
    d[2] = (uint8_t)(ACC_ROWS - 1);
    frame(d, 6 + 4 * N); /* the last ACC row: fine */
    read_mem(NTPU_MEM_ACC, ACC_ROWS - 1, 1);
    /* A READ_MEM reply of exactly max_payload bytes, and one byte row more. */
    read_mem(NTPU_MEM_UB, 0, (MAXP - 1) / row_bytes(NTPU_MEM_UB));
    read_mem(NTPU_MEM_UB, 0, (MAXP - 1) / row_bytes(NTPU_MEM_UB) + 1);
    cmd1(NTPU_OP_STATUS);

    /* Link errors: bad CRC (payload or CRC bytes) never executes; LEN 0 or too long is answered
     * at once and the frame behind it is found. */
    write_random(NTPU_MEM_UB, 0, 4, 0);
    memset(d, 0x77, sizeof d);
    d[0] = NTPU_OP_WRITE_MEM;
    d[1] = NTPU_MEM_UB;
    d[2] = 0;
    d[3] = 0;
    d[4] = 4;
    d[5] = 0;
    frame_ex(d, 6 + 4 * 2 * N, 1);
    frame_ex(d, 6 + 4 * 2 * N, 2);
    read_mem(NTPU_MEM_UB, 0, 4);
    const unsigned bad_lens[] = {0, MAXP + 1, 0xFFFF};
    for (int k = 0; k < 3; k++) {
        put(NTPU_SOF_CMD);
        put(seq_next); /* never runs: the SEQ stays expected */
        put((uint8_t)bad_lens[k]);
        put((uint8_t)(bad_lens[k] >> 8));
        cmd1(NTPU_OP_NOP);
    }
    memset(d, 0, MAXP);
    frame(d, MAXP); /* the longest frame, a NOP: ERR_LENGTH */

    /* 1.2: frames out of SEQ order are refused (ERR_SEQ) and run nothing; SYNC answers
     * expected_seq whatever its own SEQ, and changes nothing. */
    p[0] = NTPU_OP_NOP;
    frame_at(p, 1, 0, (uint8_t)(seq_next + 1));
    frame_at(p, 1, 0, (uint8_t)(seq_next - 1));
    write_random(NTPU_MEM_UB, 1, 1, 0);
    d[0] = NTPU_OP_WRITE_MEM; /* the same rows again, one SEQ ahead: must not land */
    d[1] = NTPU_MEM_UB;
    d[2] = 1;
    d[3] = 0;
    d[4] = 1;
    d[5] = 0;
    for (unsigned i = 0; i < 2 * N; i++)
        d[6 + i] = (uint8_t)rnd();
    frame_at(d, 6 + 2 * N, 0, (uint8_t)(seq_next + 1));
    read_mem(NTPU_MEM_UB, 1, 1);
    p[0] = NTPU_OP_SYNC;
    frame_at(p, 1, 0, 0xA5);
    frame_at(p, 1, 0, seq_next);
    frame_at(p, 1, 0, (uint8_t)(seq_next + 77));
    frame_at(p, 2, 0, seq_next); /* SYNC of LEN 2: ERR_LENGTH, changes nothing either */
    cmd1(NTPU_OP_NOP);
    cmd1(NTPU_OP_STATUS);

    /* Junk, then the host's resync: MAXP + 8 zeros, a SYNC with its own SEQ. */
    for (int k = 0; k < 3; k++) {
        unsigned n = 5 + rnd_below(60);
        for (unsigned i = 0; i < n; i++)
            put((uint8_t)(rnd_below(3) ? rnd() : NTPU_SOF_CMD));
        for (unsigned i = 0; i < MAXP + 8; i++)
            put(0);
        p[0] = NTPU_OP_SYNC;
        frame_at(p, 1, 0, (uint8_t)rnd());
        cmd1(NTPU_OP_STATUS);
    }
    /* A frame cut short (it never runs), the resync, and everything still works. */
    write_random(NTPU_MEM_ACC, 0, max_rows(NTPU_MEM_ACC), 0);
    nin -= 20;
    seq_next--;
    for (unsigned i = 0; i < MAXP + 8; i++)
        put(0);
    p[0] = NTPU_OP_SYNC;
    frame_at(p, 1, 0, 0x33);
    read_rows(NTPU_MEM_ACC, 0, 10);
    cmd1(NTPU_OP_STATUS);
}

/* Random command streams, heavy on LOAD_W / MATMUL overlap and ACC hazards, with the 1.1
 * commands in between. */
static void random_stream(int count)
{
    unsigned last_acc = 0, last_rows = 1;
    for (int k = 0; k < count; k++) {
        unsigned c = rnd_below(100);
        if (c < 8) {
            unsigned mem = rnd_below(3);
            unsigned most = max_rows(mem) < mem_rows(mem) ? max_rows(mem) : mem_rows(mem);
            unsigned rows = rnd_below(most + 1);
            unsigned addr = rnd_below(mem_rows(mem) - rows + 1);
            write_random(mem, addr, rows, rnd() & 1);
        } else if (c < 14) {
            unsigned mem = rnd_below(3);
            unsigned most = max_rows(mem) < mem_rows(mem) ? max_rows(mem) : mem_rows(mem);
            unsigned rows = rnd_below(most + 1);
            unsigned addr = rnd_below(mem_rows(mem) - rows + 1);
            read_mem(mem, addr, rows);
        } else if (c < 34) {
            load_w(rnd_below(2), rnd_below(WB_ROWS - N + 1));
        } else if (c < 50) {
            random_v11();
        } else if (c < 80) {
            /* Long MATMULs let the next commands arrive while rows are still in flight. */
            unsigned lim = UB_ROWS < ACC_ROWS ? UB_ROWS : ACC_ROWS;
            unsigned rows = rnd_below(4) == 0   ? rnd_below(3)
                            : rnd_below(3) == 0 ? lim / 2 + rnd_below(lim / 2 + 1)
                                                : rnd_below(13);
            unsigned flags = rnd_below(4);
            unsigned ub_a = rnd_below(UB_ROWS - rows + 1);
            unsigned acc_a;
            /* Mostly overlap the previous MATMUL's ACC rows, often its last ones (still in
             * flight when this one starts): the hazard cases. */
            if (rnd_below(3) == 0 && last_rows > 2 && last_acc + last_rows - 2 + rows <= ACC_ROWS) {
                acc_a = last_acc + last_rows - 1 - rnd_below(2);
            } else if (rnd_below(2)) {
                int lo = (int)last_acc - (int)rows + 1, hi = (int)(last_acc + last_rows);
                if (lo < 0)
                    lo = 0;
                if (hi > (int)(ACC_ROWS - rows))
                    hi = (int)(ACC_ROWS - rows);
                if (hi < lo)
                    hi = lo;
                acc_a = (unsigned)lo + rnd_below((unsigned)(hi - lo + 1));
            } else {
                acc_a = rnd_below(ACC_ROWS - rows + 1);
            }
            matmul(flags, ub_a, acc_a, rows);
            last_acc = acc_a;
            last_rows = rows ? rows : 1;
        } else if (c < 84) {
            cmd1(NTPU_OP_FENCE);
        } else if (c < 88) {
            cmd1(NTPU_OP_STATUS);
        } else if (c < 90) {
            counters(rnd_below(2));
        } else if (c < 92) {
            cmd1(NTPU_OP_NOP);
        } else if (c < 93) {
            cmd1(NTPU_OP_INFO);
        } else if (c < 95) { /* an error of some kind */
            uint8_t p[10];
            for (int i = 0; i < 10; i++)
                p[i] = (uint8_t)rnd();
            p[0] = (uint8_t)rnd_below(14);
            frame(p, 1 + rnd_below(10));
        } else if (c < 96) {
            uint8_t p[8] = {NTPU_OP_MATMUL, 0, 0, 0, 0, 0, 1, 0};
            frame_ex(p, 8, 1 + rnd_below(2));
        } else {
            read_mem(NTPU_MEM_ACC, 0, max_rows(NTPU_MEM_ACC));
            read_mem(NTPU_MEM_ACC, ACC_ROWS - max_rows(NTPU_MEM_ACC), max_rows(NTPU_MEM_ACC));
        }
    }
    cmd1(NTPU_OP_FENCE);
    read_all(NTPU_MEM_ACC);
    cmd1(NTPU_OP_STATUS);
    counters(NTPU_COUNTERS_CLEAR);
}

/* Everything one configuration's run leaves behind. */
static void reset_state(void)
{
    nin = nout = 0;
    nreplies = 0;
    seq_next = 0;
    expected_seq = 0;
    memset(ub, 0, sizeof ub);
    memset(wb, 0, sizeof wb);
    memset(acc, 0, sizeof acc);
    memset(os, 0, sizeof os);
    memset(w_act, 0, sizeof w_act);
    memset(w_pend, 0, sizeof w_pend);
    memset(dropped_ahead, 0, sizeof dropped_ahead);
    pending = 0;
    last_error = 0;
    errors = commands = dropped = 0;
    macs = 0;
    maybe_busy = 1;
}

static int write_config(const char *dir, const char *prefix)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%sreplies.txt", dir, prefix);
    flog = fopen(path, "w");
    model(0);
    model(1);
    if (flog)
        fclose(flog);
    flog = NULL;

    snprintf(path, sizeof path, "%s/%sin.hex", dir, prefix);
    FILE *fi = fopen(path, "w");
    snprintf(path, sizeof path, "%s/%sexp.hex", dir, prefix);
    FILE *fe = fopen(path, "w");
    snprintf(path, sizeof path, "%s/%scounts.hex", dir, prefix);
    FILE *fc = fopen(path, "w");
    if (!fi || !fe || !fc) {
        perror(path);
        return 1;
    }
    for (size_t i = 0; i < nin; i++)
        fprintf(fi, "%02x\n", in[i]);
    for (size_t i = 0; i < nout; i++)
        fprintf(fe, "%03x\n", out[i]);
    fprintf(fc, "%zx\n%zx\n%x\n", nin, nout, nreplies);
    fclose(fi);
    fclose(fe);
    fclose(fc);
    return 0;
}

int main(int argc, char **argv)
{
    /* Must match the three ntpu_core instances in tb.sv. n4: a READ_MEM reply of 25 UB rows is
     * exactly max_payload (201). n3: an odd array size, memories that are not powers of two, and
     * 21 UB rows filling max_payload (127). n2: the iCEBreaker's options (no vector unit, no
     * TRANSPOSE_A, narrow counters), a shorter random stream. */
    static const struct config configs[3] = {
        {4, 48, 20, 40, 201, 0, 64, 0, 24}, {3, 40, 14, 33, 127, 0, 64, 0, 0}, {2, 24, 12, 20, 97, 1, 24, 1, 0}};
    static const char *prefixes[3] = {"n4_", "n3_", "n2_"};
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    for (int c = 0; c < 3; c++) {
        cfg = configs[c];
        reset_state();
        directed();
        directed_v11();
        directed_adam();
        /* Fresh operands for the random part. */
        write_random(NTPU_MEM_WB, 0, WB_ROWS, 0);
        write_random(NTPU_MEM_UB, 0, UB_ROWS / 2, 0);
        write_random(NTPU_MEM_UB, UB_ROWS / 2, UB_ROWS - UB_ROWS / 2, 1);
        random_stream(c == 0 ? 700 : c == 1 ? 400 : 200);
        if (write_config(argv[1], prefixes[c]) != 0)
            return 1;
    }
    return 0;
}
