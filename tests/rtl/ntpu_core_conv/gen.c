/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_core_conv bench: the core with CONV_EN = 1 (protocol 1.5) and program memory
 * (PM_ROWS = 24) on a byte-wide link, N = 4. Writes a host -> device stream of frames: UB and WB
 * contents, LOAD_W, MATMUL CONV / CONV_T / CONV with TRANSPOSE_A (mostly valid; every ERR_ARG case,
 * ranges at and just past their limits, wrong LENs), the same commands stored in PM and run with RUN
 * (15- and 18-byte commands across PM rows), POOL of every MODE (valid and each error), UB and ACC read back. The expected reply stream is the golden
 * model's (sim/ref), byte for byte.
 * Output in DIR: in.hex (a byte a line), exp.hex (0x1XX: must be XX), counts.hex (bytes in, out, replies).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/protocol.h"
#include "ntpu_ref.h"

#define GEN_SEED 0xC0FFEEu
#include "../gen_common.h"

enum { N = 4, UB = 96, WB = 20, ACC = 64, MAXP = 201, PM = 24, ROWB = 2 * N };
enum { F_TA = 4, F_CONV = 8, F_CONV_T = 16 };

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

static int8_t rnd_off(void)
{
    return (int8_t)(rnd_below(10) == 0 ? (rnd_below(2) ? -128 : 127) : (int)rnd_below(7) - 3);
}

/* A forward / CONV_T MATMUL CONV (LEN 15), mostly valid; returns its LEN. */
static unsigned conv_cmd(uint8_t *c)
{
    unsigned in_h = 1 + rnd_below(5), in_w = 1 + rnd_below(5), mb = 1 + rnd_below(3);
    unsigned map = in_h * in_w * mb, out_w = 1 + rnd_below(6);
    unsigned rows = rnd_below(4) == 0 ? rnd_below(ACC + 1) : out_w * mb * (1 + rnd_below(4));
    if (rows > ACC)
        rows = ACC;
    memset(c, 0, 16);
    c[0] = NTPU_OP_MATMUL;
    c[1] = (uint8_t)(rnd_below(4) | F_CONV | (rnd_below(3) == 0 ? F_CONV_T : 0));
    put16(c + 2, rnd_below(UB - map + 1));
    put16(c + 4, rnd_below(ACC - rows + 1));
    put16(c + 6, rows);
    c[8] = (uint8_t)in_h, c[9] = (uint8_t)in_w, c[10] = (uint8_t)out_w, c[11] = (uint8_t)mb;
    c[12] = (uint8_t)(1 + rnd_below(3));
    c[13] = (uint8_t)rnd_off(), c[14] = (uint8_t)rnd_off();
    return 15;
}

/* A MATMUL CONV with TRANSPOSE_A (LEN 18), mostly valid; returns its LEN. */
static unsigned conv_ta_cmd(uint8_t *c)
{
    unsigned k = 1 + rnd_below(3), ct = 1 + rnd_below(2);
    while (N * k * k * ct > ACC)
        k--;
    unsigned rows = N * k * k * ct * (rnd_below(10) != 0);
    unsigned in_h = 1 + rnd_below(4), in_w = 1 + rnd_below(4), mb = 1 + rnd_below(6);
    unsigned span = (in_h * in_w - 1) * mb + N;
    unsigned ts = ct > 1 ? span + rnd_below(8) : rnd_below(40);
    if ((ct - 1) * ts + span > UB)
        ts = 0;
    memset(c, 0, 18);
    c[0] = NTPU_OP_MATMUL;
    c[1] = (uint8_t)(rnd_below(4) | F_CONV | F_TA);
    put16(c + 2, rnd_below(UB - (ct - 1) * ts - span + 1));
    put16(c + 4, rnd_below(ACC - rows + 1));
    put16(c + 6, rows);
    put16(c + 8, ts);
    c[10] = (uint8_t)in_h, c[11] = (uint8_t)in_w, c[12] = (uint8_t)mb, c[13] = (uint8_t)k;
    int dy = (int)rnd_below(5) - 2, dx = (int)rnd_below(5) - 2;
    if (rnd_below(8) == 0)
        dy = rnd_below(2) ? -32768 : 300 + (int)rnd_below(40000);
    put16(c + 14, (unsigned)dy & 0xFFFF);
    put16(c + 16, (unsigned)dx & 0xFFFF);
    return 18;
}

/* One of the checks failing: a field 0, a flag combination, a range past its end, a LEN. */
static unsigned bad_cmd(uint8_t *c)
{
    int ta = rnd_below(2);
    unsigned len = ta ? conv_ta_cmd(c) : conv_cmd(c);
    switch (rnd_below(9)) {
    case 0: c[ta ? 10 + rnd_below(4) : 8 + rnd_below(5)] = 0; break; /* a field 0 */
    case 1: c[1] |= (uint8_t)(0x20 << rnd_below(3)); break;          /* reserved bits */
    case 2: c[1] = (uint8_t)((c[1] & ~F_CONV) | F_CONV_T); break;    /* CONV_T without CONV */
    case 3: c[1] |= F_CONV_T | F_TA, len = 18; break;                /* CONV_T with TRANSPOSE_A */
    case 4: len += rnd_below(2) ? 1 : -1u; break;                    /* LEN */
    case 5: put16(c + 6, (c[6] | c[7] << 8) + 1); break;             /* rows (TA: not whole) */
    case 6: put16(c + 4, ACC - (c[6] | c[7] << 8) + 1); break;       /* ACC range */
    case 7: put16(c + 2, UB - 1 - rnd_below(4)); break;              /* UB range */
    default: c[ta ? 10 : 8] = 255, c[ta ? 11 : 9] = 255; break;      /* a map far past UB */
    }
    return len;
}

/* A POOL (LEN 12), mostly valid: ranges apart, inside their memories; sometimes one check failing. */
static unsigned pool_cmd(uint8_t *c)
{
    unsigned mode = rnd_below(4), k = 1 + rnd_below(3), in_h, in_w, mb, map, pooled, ls, ld, la;
    unsigned ms = mode >= 2 ? ACC : UB, md = ms, ma = mode & 1 ? ACC : UB;
    do {
        in_h = k + rnd_below(6 - k), in_w = k + rnd_below(6 - k), mb = 1 + rnd_below(3);
        map = in_h * in_w * mb, pooled = (in_h / k) * (in_w / k) * mb;
        ls = mode >= 2 ? pooled : map, ld = mode >= 2 ? map : pooled, la = mode & 1 ? 1 : pooled;
    } while (ls + ld + la > (ms < ma ? ms : ma) - 4);
    /* src, dst, aux in a random order, apart */
    unsigned order = rnd_below(6), len_of[3] = {ls, ld, la}, at[3], pos = rnd_below(3);
    static const unsigned perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (unsigned i = 0; i < 3; i++) {
        unsigned j = perm[order][i];
        at[j] = pos;
        pos += len_of[j] + rnd_below(2);
    }
    memset(c, 0, 12);
    c[0] = NTPU_OP_POOL;
    c[1] = (uint8_t)mode;
    put16(c + 2, at[0]);
    put16(c + 4, at[1]);
    put16(c + 6, at[2]);
    c[8] = (uint8_t)in_h, c[9] = (uint8_t)in_w, c[10] = (uint8_t)mb, c[11] = (uint8_t)k;
    switch (rnd_below(24)) {
    case 0: c[1] |= (uint8_t)(4 << rnd_below(6)); break; /* reserved */
    case 1: c[11] = rnd_below(2) ? 0 : (uint8_t)(in_h + 1); break;
    case 2: c[10] = 0; break;
    case 3: put16(c + 4, at[0] + rnd_below(ls)); break; /* dst over src */
    case 4: put16(c + 6, at[1] + rnd_below(ld)); break; /* aux over dst */
    case 5: put16(c + 2, ms - ls + 1); break;           /* range */
    case 6: return 11 + 2 * rnd_below(2);               /* LEN */
    default: break;
    }
    return 12;
}

static unsigned random_cmd(uint8_t *c)
{
    unsigned k = rnd_below(10);
    memset(c, 0, 64);
    if (k < 2) {
        c[0] = NTPU_OP_LOAD_W;
        c[1] = (uint8_t)rnd_below(2);
        put16(c + 2, rnd_below(WB - N + 1));
        return 4;
    }
    if (k < 4)
        return conv_cmd(c);
    if (k < 6)
        return conv_ta_cmd(c);
    if (k < 8)
        return pool_cmd(c);
    if (k < 9)
        return bad_cmd(c);
    c[0] = NTPU_OP_MATMUL; /* a plain one between */
    c[1] = (uint8_t)rnd_below(4);
    put16(c + 2, rnd_below(UB - 8));
    put16(c + 4, rnd_below(ACC - 8));
    put16(c + 6, rnd_below(8));
    return 8;
}

static void read_mem(unsigned mem, unsigned addr, unsigned rows)
{
    uint8_t c[6] = {NTPU_OP_READ_MEM, (uint8_t)mem};
    put16(c + 2, addr);
    put16(c + 4, rows);
    frame(c, 6);
}

static void fill(void)
{
    static uint8_t z[6 + 48 * 16];
    const unsigned rows_of[3] = {UB, WB, ACC}, rb_of[3] = {2 * N, 2 * N, 4 * N};
    for (unsigned mem = 0; mem < 3; mem++)
        for (unsigned a = 0; a < rows_of[mem];) {
            unsigned k = rows_of[mem] - a < (MAXP - 6) / rb_of[mem] ? rows_of[mem] - a : (MAXP - 6) / rb_of[mem];
            z[0] = NTPU_OP_WRITE_MEM, z[1] = (uint8_t)mem;
            put16(z + 2, a);
            put16(z + 4, k);
            for (unsigned i = 0; i < k * rb_of[mem]; i++)
                z[6 + i] = (uint8_t)(mem == 2 ? rnd() : (i & 1) ? 0x3C + rnd_below(8) : rnd());
            frame(z, 6 + k * rb_of[mem]);
            a += k;
        }
}

static void program(void)
{
    static uint8_t prog[PM * ROWB + 64], c[64];
    size_t len = rnd_below(2) ? 0 : 1 + rnd_below(5); /* shift it so commands cross rows anywhere */
    memset(prog, 0, sizeof prog);
    for (size_t i = 0; i < len; i += 3)
        prog[i] = 1, prog[i + 2] = NTPU_OP_NOP;
    len = len ? ((len + 2) / 3) * 3 : 0;
    for (unsigned i = 0, cmds = 1 + rnd_below(6); i < cmds; i++) {
        unsigned l = random_cmd(c);
        if (len + 2 + l > 20 * ROWB)
            break;
        put16(prog + len, l);
        memcpy(prog + len + 2, c, l);
        len += 2 + l;
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
    uint8_t r[6] = {NTPU_OP_RUN, 0};
    put16(r + 2, addr);
    put16(r + 4, rows);
    frame(r, 6);
}

static int write_out(const char *dir)
{
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
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = N, cfg.ub_rows = UB, cfg.wb_rows = WB, cfg.acc_rows = ACC, cfg.max_payload = MAXP;
    cfg.pm_rows = PM, cfg.link_bytes = 1, cfg.os_rows = 0, cfg.no_conv = 0, cfg.no_pool = 0;
    ref = ntpu_ref_new(&cfg);
    if (!ref)
        return 1;
    fill();
    for (int t = 0; t < 400; t++) {
        uint8_t c[64];
        unsigned k = rnd_below(10);
        if (k == 0)
            program();
        else if (k < 3)
            frame(c, bad_cmd(c));
        else
            frame(c, random_cmd(c));
        if (rnd_below(12) == 0)
            read_mem(rnd_below(2) ? NTPU_MEM_ACC : NTPU_MEM_UB, rnd_below(ACC - 8), 8);
    }
    for (unsigned a = 0; a < ACC; a += 8)
        read_mem(NTPU_MEM_ACC, a, 8);
    for (unsigned a = 0; a < UB; a += 12)
        read_mem(NTPU_MEM_UB, a, 12);
    int rc = write_out(dir);
    ntpu_ref_free(ref);
    return rc;
}
