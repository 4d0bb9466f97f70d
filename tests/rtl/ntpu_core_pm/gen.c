/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_core_pm bench: the core with program memory (PM_ROWS = 24) on a byte-wide
 * link (LINK_BYTES = 1, as the boards), N = 4. Writes a host -> device stream of frames: memory
 * writes, LOAD_W, MATMUL and vector commands, and programs of them stored in PM and run with RUN
 * (LEN prefixes across PM rows, inner WRITE_MEM, FENCE, forbidden commands, LENs past the end, RUN's
 * own errors), PM and ACC read back. The expected reply stream is the golden model's (sim/ref), byte
 * for byte: the stream has no STATUS, COUNTERS or INFO, whose bytes differ between models.
 * Output in DIR: in.hex (a byte a line), exp.hex (0x1XX: must be XX), counts.hex (bytes in, out, replies).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/protocol.h"
#include "ntpu_ref.h"

#define GEN_SEED 0x9E11A7u
#include "../gen_common.h"

enum { N = 4, UB = 48, WB = 20, ACC = 40, MAXP = 201, PM = 24, ROWB = 2 * N };

static uint8_t in[1 << 20];
static size_t nin;
static uint8_t seq;
static ntpu_ref *ref;

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* One command frame, to the stream and to the golden model. */
static void frame(const uint8_t *p, unsigned len)
{
    uint8_t *f = in + nin;
    f[0] = NTPU_SOF_CMD;
    f[1] = seq++;
    put16(f + 2, len);
    memcpy(f + 4, p, len);
    uint32_t c = crc32_bits(f + 1, 3 + len);
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(c >> (8 * i));
    ntpu_ref_write(ref, f, 8 + len);
    nin += 8 + len;
}

/* A random command that a program may hold (mostly valid), written to c; returns its LEN. */
static unsigned random_cmd(uint8_t *c)
{
    unsigned k = rnd_below(10), rows = rnd_below(6);
    memset(c, 0, 64);
    switch (k) {
    case 0:
    case 1: { /* WRITE_MEM to UB, WB or ACC */
        unsigned mem = rnd_below(3), rb = mem == NTPU_MEM_ACC ? 4 * N : 2 * N,
                 max = mem == 0   ? UB
                       : mem == 1 ? WB
                                  : ACC;
        rows = 1 + rnd_below(3);
        c[0] = NTPU_OP_WRITE_MEM;
        c[1] = (uint8_t)mem;
        put16(c + 2, rnd_below(max - rows + 1));
        put16(c + 4, rows);
        for (unsigned i = 0; i < rows * rb; i++)
            c[6 + i] = (uint8_t)(mem == NTPU_MEM_ACC ? rnd() : (i & 1) ? 0x3C + rnd_below(8) : rnd());
        return 6 + rows * rb;
    }
    case 2:
    case 3:
        c[0] = NTPU_OP_LOAD_W;
        c[1] = (uint8_t)rnd_below(2);
        put16(c + 2, rnd_below(WB - N + 1));
        return 4;
    case 4:
    case 5:
        c[0] = NTPU_OP_MATMUL;
        c[1] = (uint8_t)(1 | rnd_below(2) << 1);
        put16(c + 2, rnd_below(UB - rows + 1));
        put16(c + 4, rnd_below(ACC - rows + 1));
        put16(c + 6, rows);
        return 8;
    case 6:
        c[0] = NTPU_OP_ACT;
        c[1] = (uint8_t)(rnd_below(2) | (rnd_below(3) << 2));
        put16(c + 2, rnd_below(ACC - rows + 1));
        put16(c + 4, rnd_below(WB - rows + 1));
        put16(c + 6, rows);
        put16(c + 8, rnd_below(ACC));
        return 10;
    case 7: c[0] = rnd_below(2) ? NTPU_OP_FENCE : NTPU_OP_NOP; return 1;
    case 8: { /* what a program may not hold, or may not do */
        static const uint8_t bad[] = {NTPU_OP_INFO, NTPU_OP_STATUS, NTPU_OP_SYNC, 0x7F, NTPU_OP_RUN, NTPU_OP_READ_MEM};
        c[0] = bad[rnd_below(sizeof bad)];
        if (rnd_below(3) == 0) { /* WRITE_MEM to PM */
            c[0] = NTPU_OP_WRITE_MEM;
            c[1] = NTPU_MEM_PM;
            put16(c + 4, 1);
            return 6 + ROWB;
        }
        return c[0] == NTPU_OP_RUN || c[0] == NTPU_OP_READ_MEM ? 6 : 1;
    }
    default: /* ERR_RANGE inside */
        c[0] = NTPU_OP_MATMUL;
        c[1] = 1;
        put16(c + 4, ACC - 1);
        put16(c + 6, 2);
        return 8;
    }
}

static void read_mem(unsigned mem, unsigned addr, unsigned rows)
{
    uint8_t c[6] = {NTPU_OP_READ_MEM, (uint8_t)mem};
    put16(c + 2, addr);
    put16(c + 4, rows);
    frame(c, 6);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = N, cfg.ub_rows = UB, cfg.wb_rows = WB, cfg.acc_rows = ACC, cfg.max_payload = MAXP;
    cfg.pm_rows = PM, cfg.link_bytes = 1, cfg.no_conv = 1, cfg.no_pool = 1; /* the core's CONV_EN = POOL_EN = 0 */
    ref = ntpu_ref_new(&cfg);
    if (!ref)
        return 1;
    /* defined contents first (memories after reset are unspecified) */
    static uint8_t z[6 + 48 * 16];
    const unsigned rows_of[4] = {UB, WB, ACC, PM}, rb_of[4] = {2 * N, 2 * N, 4 * N, 2 * N};
    for (unsigned mem = 0; mem < 4; mem++)
        for (unsigned a = 0; a < rows_of[mem];) {
            unsigned k = rows_of[mem] - a < (MAXP - 6) / rb_of[mem] ? rows_of[mem] - a : (MAXP - 6) / rb_of[mem];
            memset(z, 0, sizeof z);
            z[0] = NTPU_OP_WRITE_MEM, z[1] = (uint8_t)mem;
            put16(z + 2, a);
            put16(z + 4, k);
            frame(z, 6 + k * rb_of[mem]);
            a += k;
        }
    for (int t = 0; t < 160; t++) {
        /* a program: random commands, [LEN][payload] each, zero-padded to rows */
        static uint8_t prog[PM * ROWB + 64], c[64];
        size_t len = 0;
        unsigned cmds = 1 + rnd_below(5);
        if (rnd_below(3) == 0) /* shift it so LEN prefixes and payloads cross rows anywhere */
            for (unsigned i = rnd_below(3); i > 0; i--) {
                prog[len++] = 1, prog[len++] = 0, prog[len++] = NTPU_OP_NOP;
            }
        for (unsigned i = 0; i < cmds; i++) {
            unsigned l = random_cmd(c);
            if (len + 2 + l > 12 * ROWB)
                break;
            put16(prog + len, l);
            memcpy(prog + len + 2, c, l);
            len += 2 + l;
        }
        if (rnd_below(8) == 0) { /* a LEN past the end */
            put16(prog + len, 50 + rnd_below(200));
            len += 2;
        }
        unsigned rows = (unsigned)((len + ROWB - 1) / ROWB);
        memset(prog + len, 0, rows * ROWB - len);
        unsigned addr = rnd_below(PM - rows + 1);
        uint8_t w[6 + PM * ROWB];
        w[0] = NTPU_OP_WRITE_MEM, w[1] = NTPU_MEM_PM;
        put16(w + 2, addr);
        put16(w + 4, rows);
        memcpy(w + 6, prog, rows * ROWB);
        frame(w, 6 + rows * ROWB);
        uint8_t r[7] = {NTPU_OP_RUN, 0};
        put16(r + 2, addr);
        put16(r + 4, rows - (rows > 1 && rnd_below(6) == 0));
        unsigned e = rnd_below(16);
        if (e == 0)
            r[1] = 0x80; /* ERR_ARG */
        if (e == 1)
            put16(r + 4, PM - addr + 1); /* ERR_RANGE */
        frame(r, e == 2 ? 7 : 6);        /* ERR_LENGTH */
        if (rnd_below(3) == 0)
            read_mem(NTPU_MEM_PM, addr, rows);
        if (rnd_below(2) == 0) {
            unsigned k = random_cmd(c); /* between programs, the same commands as frames */
            frame(c, k);
        }
        if (rnd_below(4) == 0)
            read_mem(NTPU_MEM_ACC, rnd_below(ACC - 4), 4);
    }
    for (unsigned a = 0; a < ACC; a += 8)
        read_mem(NTPU_MEM_ACC, a, 8);
    for (unsigned a = 0; a < WB; a += 10)
        read_mem(NTPU_MEM_WB, a, 10);

    char path[4096];
    size_t nout = ntpu_ref_pending(ref), nrep = 0;
    uint8_t *out = malloc(nout + 1);
    if (!out || ntpu_ref_read(ref, out, nout) != nout)
        return 1;
    for (size_t at = 0; at < nout; at += 8 + (out[at + 2] | out[at + 3] << 8))
        nrep++;
    snprintf(path, sizeof path, "%s/in.hex", dir);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; f && i < nin; i++)
        fprintf(f, "%02x\n", in[i]);
    if (!f || fclose(f))
        return 1;
    snprintf(path, sizeof path, "%s/exp.hex", dir);
    f = fopen(path, "w");
    for (size_t i = 0; f && i < nout; i++)
        fprintf(f, "1%02x\n", out[i]);
    if (!f || fclose(f))
        return 1;
    snprintf(path, sizeof path, "%s/counts.hex", dir);
    f = fopen(path, "w");
    if (!f || fprintf(f, "%zx %zx %zx\n", nin, nout, nrep) < 0 || fclose(f))
        return 1;
    free(out);
    ntpu_ref_free(ref);
    return 0;
}
