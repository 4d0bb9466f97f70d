/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_seq_conv bench (N = 4, CONV_EN = 1, UB 128 rows, WB 32, ACC 64): LOAD_W and
 * MATMULs with the 1.5 addressing modes (docs/isa.md: CONV, CONV_T, CONV with TRANSPOSE_A) among
 * plain and TRANSPOSE_A ones, given to the sequencer back to back, with taps that put rows and
 * whole blocks outside the map (zero rows), strides 1..3, CONV_T phases of negative and positive
 * offsets. CHECK markers make the bench wait for idle and compare the whole ACC with this model
 * (MACs from sim/ref/numerics.c). Output in DIR: ub.hex, wb.hex, acc.hex, cmds.hex (per command:
 * kind 0 LOAD_W / 1 MATMUL / 2 CHECK, flags, addr, acc_addr, rows, stride, in_h, in_w, out_w, mb,
 * conv stride, k, ct, dy, dx (16-bit two's complement), gap cycles before it), want.hex, counts.hex.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/numerics.h"

#define N 4u
#define UB_ROWS 128u
#define WB_ROWS 32u
#define ACC_ROWS 64u

#define GEN_SEED 0xC0417u
#include "../gen_common.h"

#define F_TA 4u
#define F_CONV 8u
#define F_CONV_T 16u

static uint16_t ub[UB_ROWS][N], wb[WB_ROWS][N];
static uint32_t acc[ACC_ROWS][N];
static uint16_t w_act[N][N], w_pend[N][N];
static int pending;

static FILE *fc, *fw;
static unsigned ncmds, nchecks;

/* The fields of one command (zero where its form has none). */
struct cmd {
    unsigned flags, ua, aa, rows, stride;
    unsigned in_h, in_w, out_w, mb, cs, k, ct;
    int dy, dx;
};

static uint16_t rnd_bf16(void)
{
    unsigned k = rnd_below(40);
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    if (k == 0)
        return s;
    if (k == 1)
        return (uint16_t)(s | 0x7F80);
    return (uint16_t)(s | (120 + rnd_below(16)) << 7 | rnd_below(128));
}

static void load_w(unsigned flags, unsigned a)
{
    for (unsigned i = 0; i < N; i++)
        for (unsigned n = 0; n < N; n++)
            w_pend[i][n] = (flags & 1) ? wb[a + n][i] : wb[a + i][n];
    pending = 1;
    fprintf(fc, "0 %x %x 0 0 0 0 0 0 0 0 0 0 0 0 0\n", flags, a);
    ncmds++;
}

static int floor_div(int a, int b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Activation row of stream row m (docs/isa.md 1.5); NULL: a zero row. */
static const uint16_t *row_of(const struct cmd *c, unsigned m, uint16_t *tmp)
{
    if ((c->flags & F_CONV) && (c->flags & F_TA)) {
        unsigned j = m / N, r = m % N;
        unsigned t = j % c->ct, kx = (j / c->ct) % c->k, ky = j / (c->ct * c->k);
        int y = c->dy + (int)ky, x = c->dx + (int)kx;
        int in = y >= 0 && y < (int)c->in_h && x >= 0 && x < (int)c->in_w;
        unsigned base = c->ua + t * c->stride + ((unsigned)y * c->in_w + (unsigned)x) * c->mb;
        for (unsigned i = 0; i < N; i++)
            tmp[i] = in ? ub[base + i][r] : 0;
        return tmp;
    }
    if (c->flags & F_CONV) {
        unsigned b = m % c->mb, q = m / c->mb, ox = q % c->out_w, oy = q / c->out_w;
        int y, x, in;
        if (c->flags & F_CONV_T) {
            int yp = (int)oy + c->dy, xp = (int)ox + c->dx, s = (int)c->cs;
            in = yp >= 0 && xp >= 0 && yp % s == 0 && xp % s == 0;
            y = floor_div(yp, s);
            x = floor_div(xp, s);
            in = in && y < (int)c->in_h && x < (int)c->in_w;
        } else {
            y = (int)(oy * c->cs) + c->dy;
            x = (int)(ox * c->cs) + c->dx;
            in = y >= 0 && y < (int)c->in_h && x >= 0 && x < (int)c->in_w;
        }
        return in ? ub[c->ua + ((unsigned)y * c->in_w + (unsigned)x) * c->mb + b] : NULL;
    }
    if (c->flags & F_TA) {
        for (unsigned i = 0; i < N; i++)
            tmp[i] = ub[c->ua + (m / N) * c->stride + i][m % N];
        return tmp;
    }
    return ub[c->ua + m];
}

static void matmul(const struct cmd *c, unsigned gap)
{
    if (pending) {
        memcpy(w_act, w_pend, sizeof w_act);
        pending = 0;
    }
    for (unsigned m = 0; m < c->rows; m++) {
        uint16_t tmp[N], zero[N] = {0};
        const uint16_t *x = row_of(c, m, tmp);
        if (!x)
            x = zero;
        for (unsigned n = 0; n < N; n++) {
            uint32_t a = (c->flags & 2) ? acc[c->aa + m][n] : 0;
            for (unsigned i = 0; i < N; i++) {
                if (c->flags & 1)
                    a = ntpu_mac_bf16(a, x[i], w_act[i][n]);
                else
                    a = (uint32_t)ntpu_mac_int8((int32_t)a, (int8_t)(x[i] & 0xFF), (int8_t)(w_act[i][n] & 0xFF));
            }
            acc[c->aa + m][n] = a;
        }
    }
    fprintf(fc, "1 %x %x %x %x %x %x %x %x %x %x %x %x %x %x %x\n", c->flags, c->ua, c->aa, c->rows, c->stride, c->in_h,
            c->in_w, c->out_w, c->mb, c->cs, c->k, c->ct, (unsigned)c->dy & 0xFFFF, (unsigned)c->dx & 0xFFFF, gap);
    ncmds++;
}

static void check(void)
{
    fprintf(fc, "2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
    ncmds++;
    for (unsigned r = 0; r < ACC_ROWS; r++) {
        for (int n = N - 1; n >= 0; n--)
            fprintf(fw, "%08x", acc[r][n]);
        fprintf(fw, "\n");
    }
    nchecks++;
}

static unsigned gap(void)
{
    return rnd_below(8) == 0 ? rnd_below(12) : 0;
}

static unsigned pick_aa(unsigned rows)
{
    return rnd_below(ACC_ROWS - rows + 1);
}

/* A random CONV / CONV_T (forward rows) that fits. */
static void rnd_conv(unsigned flags)
{
    struct cmd c = {0};
    c.flags = flags | F_CONV | (rnd_below(3) == 0 ? F_CONV_T : 0);
    c.in_h = 1 + rnd_below(5);
    c.in_w = 1 + rnd_below(5);
    c.mb = 1 + rnd_below(3);
    c.cs = 1 + rnd_below(3);
    c.out_w = 1 + rnd_below(6);
    c.dy = (int)rnd_below(5) - 2;
    c.dx = (int)rnd_below(5) - 2;
    if (rnd_below(10) == 0)
        c.dy = rnd_below(2) ? -128 : 127;
    c.rows = rnd_below(4) == 0 ? rnd_below(ACC_ROWS + 1) : c.out_w * c.mb * (1 + rnd_below(4));
    if (c.rows > ACC_ROWS)
        c.rows = ACC_ROWS;
    c.ua = rnd_below(UB_ROWS - c.in_h * c.in_w * c.mb + 1);
    c.aa = pick_aa(c.rows);
    matmul(&c, gap());
}

/* A random CONV with TRANSPOSE_A (weight-gradient blocks) that fits. */
static void rnd_conv_ta(unsigned flags)
{
    struct cmd c = {0};
    c.flags = flags | F_CONV | F_TA;
    c.k = 1 + rnd_below(3);
    c.ct = 1 + rnd_below(2);
    while (N * c.k * c.k * c.ct > ACC_ROWS)
        c.k--;
    c.rows = N * c.k * c.k * c.ct;
    c.in_h = 1 + rnd_below(4);
    c.in_w = 1 + rnd_below(4);
    c.mb = 1 + rnd_below(6);
    c.dy = (int)rnd_below(5) - 2;
    c.dx = (int)rnd_below(5) - 2;
    if (rnd_below(8) == 0) /* i16 offsets far outside, or just at the map's edge */
        c.dy = rnd_below(2) ? -32768 + (int)rnd_below(4) : (int)rnd_below(2) ? 32767 : 300;
    if (rnd_below(8) == 0)
        c.dx = rnd_below(2) ? -(int)c.k + 1 - (int)rnd_below(2) : (int)c.in_w - 1 + (int)rnd_below(2);
    unsigned span = (c.in_h * c.in_w - 1) * c.mb + N;
    c.stride = c.ct > 1 ? span + rnd_below(8) : rnd_below(40);
    if ((c.ct - 1) * c.stride + span > UB_ROWS)
        c.stride = 0;
    c.ua = rnd_below(UB_ROWS - (c.ct - 1) * c.stride - span + 1);
    c.aa = pick_aa(c.rows);
    matmul(&c, gap());
}

static int write_mem(const char *dir, const char *name, unsigned rows, unsigned digits, const void *mem)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    for (unsigned r = 0; r < rows; r++) {
        for (int n = N - 1; n >= 0; n--) {
            if (digits == 4)
                fprintf(f, "%04x", ((const uint16_t(*)[N])mem)[r][n]);
            else
                fprintf(f, "%08x", ((const uint32_t(*)[N])mem)[r][n]);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    return 0;
}

static void stream(void)
{
    /* A forward 3x3 conv, pad 1, stride 1 over a 4x4 map of 2 samples: the nine taps accumulate. */
    for (int t = 0; t < 9; t++) {
        load_w(0, 16 + (unsigned)t % 4);
        struct cmd c = {1 | 2 * (t > 0) | F_CONV, 0, 0, 32, 0, 4, 4, 4, 2, 1, 0, 0, t / 3 - 1, t % 3 - 1};
        matmul(&c, 0);
    }
    check();
    /* Its transposed form (stride 2), and weight-gradient blocks with a tap outside. */
    for (int t = 0; t < 9; t++) {
        load_w(1, 20 + (unsigned)t % 4);
        struct cmd c = {1 | 2 * (t > 0) | F_CONV | F_CONV_T, 40, 0, 50, 0, 2, 3, 5, 2, 2, 0, 0, 1 - t / 3, 1 - t % 3};
        matmul(&c, 0);
    }
    struct cmd g = {1 | 2 | F_CONV | F_TA, 64, 10, 2 * N * 4, 24, 3, 3, 0, 4, 0, 2, 2, -1, 1};
    matmul(&g, 0);
    check();
    unsigned last = 0;
    for (int k = 0; k < 1200; k++) {
        unsigned c = rnd_below(100), flags = rnd_below(4);
        if (c < 20) {
            load_w(rnd_below(2), rnd_below(WB_ROWS - N + 1));
        } else if (c < 55) {
            rnd_conv(flags);
        } else if (c < 75) {
            rnd_conv_ta(flags);
        } else if (c < 96) {
            struct cmd m = {0};
            m.flags = flags;
            m.rows = rnd_below(20);
            if (rnd_below(3) == 0) {
                m.flags |= F_TA;
                m.rows = N * (1 + rnd_below(4));
                m.stride = rnd_below(12);
                m.ua = rnd_below(UB_ROWS - N - (m.rows / N - 1) * m.stride + 1);
            } else {
                m.ua = rnd_below(UB_ROWS - m.rows + 1);
            }
            m.aa = rnd_below(2) && last + m.rows <= ACC_ROWS ? last : pick_aa(m.rows);
            last = m.aa;
            matmul(&m, gap());
        } else {
            check();
        }
    }
    check();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    for (unsigned r = 0; r < UB_ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            ub[r][n] = rnd_below(2) ? (uint16_t)rnd() : rnd_bf16();
    for (unsigned r = 0; r < WB_ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            wb[r][n] = rnd_below(2) ? (uint16_t)rnd() : rnd_bf16();
    for (unsigned r = 0; r < ACC_ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            acc[r][n] = rnd_below(2) ? rnd() : (uint32_t)rnd_bf16() << 16;
    if (write_mem(argv[1], "ub.hex", UB_ROWS, 4, ub) || write_mem(argv[1], "wb.hex", WB_ROWS, 4, wb) ||
        write_mem(argv[1], "acc.hex", ACC_ROWS, 8, acc))
        return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/cmds.hex", argv[1]);
    fc = fopen(path, "w");
    snprintf(path, sizeof path, "%s/want.hex", argv[1]);
    fw = fopen(path, "w");
    if (!fc || !fw) {
        perror(path);
        return 1;
    }
    stream();
    fclose(fc);
    fclose(fw);
    snprintf(path, sizeof path, "%s/counts.hex", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "%x\n%x\n", ncmds, nchecks);
    fclose(f);
    return 0;
}
