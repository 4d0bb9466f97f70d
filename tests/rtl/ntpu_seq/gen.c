/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_seq bench (N = 4, UB 64 rows, WB 32, ACC 48): starting memory contents and
 * a stream of LOAD_W / MATMUL commands, given to the sequencer as fast as it takes them (no link in
 * between), so MATMULs queue behind each other, tiles load while rows stream, and short MATMULs
 * fill every hazard slot; TRANSPOSE_A MATMULs (1.1) take their rows through the transposer, with
 * strides that overlap, repeat and skip blocks. CHECK markers make the bench wait for idle and
 * compare the whole ACC with this model (docs/isa.md semantics, MACs from sim/ref/numerics.c).
 * Output in DIR: ub.hex, wb.hex, acc.hex (one row a line, lane 0 in the low bits), cmds.hex (per
 * command: kind 0 LOAD_W / 1 MATMUL / 2 CHECK, flags, addr, acc_addr, rows, stride, gap cycles
 * before it), want.hex (the ACC rows at each CHECK, in order), counts.hex (commands, checks).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/numerics.h"

#define N 4u
#define UB_ROWS 64u
#define WB_ROWS 32u
#define ACC_ROWS 48u

#define GEN_SEED 0xA11CE5u
#include "../gen_common.h"

static uint16_t rnd_bf16(void)
{
    unsigned k = rnd_below(40);
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    if (k == 0)
        return s;
    if (k == 1)
        return (uint16_t)(s | (1 + rnd_below(127)));
    if (k == 2)
        return (uint16_t)(s | 0x7F80);
    return (uint16_t)(s | (120 + rnd_below(16)) << 7 | rnd_below(128));
}

static uint16_t ub[UB_ROWS][N], wb[WB_ROWS][N];
static uint32_t acc[ACC_ROWS][N];
static uint16_t w_act[N][N], w_pend[N][N];
static int pending;

static FILE *fc, *fw;
static unsigned ncmds, nchecks;

static void load_w(unsigned flags, unsigned a, unsigned gap)
{
    for (unsigned i = 0; i < N; i++)
        for (unsigned n = 0; n < N; n++)
            w_pend[i][n] = (flags & 1) ? wb[a + n][i] : wb[a + i][n];
    pending = 1;
    fprintf(fc, "0 %x %x 0 0 0 %x\n", flags, a, gap);
    ncmds++;
}

/* flags: bit 0 bf16, bit 1 accumulate, bit 2 TRANSPOSE_A (row m is column m % N of the block of
 * UB rows at ua + (m / N) * stride; rows a multiple of N). */
static void matmul_t(unsigned flags, unsigned ua, unsigned aa, unsigned rows, unsigned stride, unsigned gap)
{
    if (pending) {
        memcpy(w_act, w_pend, sizeof w_act);
        pending = 0;
    }
    for (unsigned m = 0; m < rows; m++) {
        uint16_t x[N];
        for (unsigned i = 0; i < N; i++)
            x[i] = (flags & 4) ? ub[ua + (m / N) * stride + i][m % N] : ub[ua + m][i];
        for (unsigned n = 0; n < N; n++) {
            uint32_t a = (flags & 2) ? acc[aa + m][n] : 0;
            for (unsigned i = 0; i < N; i++) {
                if (flags & 1)
                    a = ntpu_mac_bf16(a, x[i], w_act[i][n]);
                else
                    a = (uint32_t)ntpu_mac_int8((int32_t)a, (int8_t)(x[i] & 0xFF), (int8_t)(w_act[i][n] & 0xFF));
            }
            acc[aa + m][n] = a;
        }
    }
    fprintf(fc, "1 %x %x %x %x %x %x\n", flags, ua, aa, rows, stride, gap);
    ncmds++;
}

static void matmul(unsigned flags, unsigned ua, unsigned aa, unsigned rows, unsigned gap)
{
    matmul_t(flags, ua, aa, rows, 0, gap);
}

static void check(void)
{
    fprintf(fc, "2 0 0 0 0 0 0\n");
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

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    char path[4096];
    FILE *f;
    /* Operands: UB rows 0..31 int8-ish (random bits), 32..63 bf16; WB likewise by halves. */
    for (unsigned r = 0; r < UB_ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            ub[r][n] = r < UB_ROWS / 2 ? (uint16_t)rnd() : rnd_bf16();
    for (unsigned r = 0; r < WB_ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            wb[r][n] = r < WB_ROWS / 2 ? (uint16_t)rnd() : rnd_bf16();
    for (unsigned r = 0; r < ACC_ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            acc[r][n] = rnd_below(2) ? rnd() : (uint32_t)rnd_bf16() << 16;
    snprintf(path, sizeof path, "%s/ub.hex", argv[1]);
    f = fopen(path, "w");
    for (unsigned r = 0; f && r < UB_ROWS; r++) {
        for (int n = N - 1; n >= 0; n--)
            fprintf(f, "%04x", ub[r][n]);
        fprintf(f, "\n");
    }
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/wb.hex", argv[1]);
    f = fopen(path, "w");
    for (unsigned r = 0; f && r < WB_ROWS; r++) {
        for (int n = N - 1; n >= 0; n--)
            fprintf(f, "%04x", wb[r][n]);
        fprintf(f, "\n");
    }
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/acc.hex", argv[1]);
    f = fopen(path, "w");
    for (unsigned r = 0; f && r < ACC_ROWS; r++) {
        for (int n = N - 1; n >= 0; n--)
            fprintf(f, "%08x", acc[r][n]);
        fprintf(f, "\n");
    }
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/cmds.hex", argv[1]);
    fc = fopen(path, "w");
    snprintf(path, sizeof path, "%s/want.hex", argv[1]);
    fw = fopen(path, "w");
    if (!fc || !fw) {
        perror(path);
        return 1;
    }

    /* Before any LOAD_W the weights are the zeros of reset, also right after it. */
    matmul(2, 0, 0, 4, 0);
    matmul(3, 40, 4, 4, 0);
    matmul(0, 8, 8, 2, 0);
    check();

    /* Back-to-back tiles: every MATMUL right behind a LOAD_W (weight stalls), tiles loading
     * while long MATMULs stream, accumulate into the rows the previous MATMUL is still writing. */
    for (int k = 0; k < 6; k++) {
        load_w(k & 1, 16 + 4 * (unsigned)k % 16, 0);
        matmul(1 | 2 * (k > 0), 32, 0, 30, 0);
    }
    check();
    for (int k = 0; k < 6; k++) {
        load_w(0, 4 * (unsigned)k, 0);
        matmul(2, k * 3, 10 + k, 1, 0); /* one-row MATMULs on overlapping rows */
    }
    check();
    /* Runs of one-row MATMULs: all hazard slots fill. */
    for (int k = 0; k < 12; k++)
        matmul(2 | (k & 1), (unsigned)k, 20 + (unsigned)k % 3, 1, 0);
    for (int k = 0; k < 12; k++)
        matmul(0, (unsigned)k, 30 + (unsigned)k, 1 + (unsigned)k % 2, 0);
    check();
    /* LOAD_Ws with no MATMUL between (the last wins), rows = 0 MATMULs that only swap. */
    load_w(0, 0, 0);
    load_w(1, 8, 0);
    matmul(0, 0, 0, 0, 0);
    matmul(2, 0, 0, 6, 0);
    load_w(0, 20, 0);
    matmul(3, 40, 0, 0, 0);
    load_w(1, 24, 0);
    matmul(3, 40, 6, 6, 0);
    check();

    /* TRANSPOSE_A between plain MATMULs, with strides 0 (one block repeated), below N (blocks
     * overlapping), N and beyond, accumulating into rows still in flight. Each starts right behind
     * a LOAD_W of its own tile that has to wait for the rows of the MATMUL two back to leave the
     * array, so the transposer has its first column ready before the tile is in, and that column
     * enters the array right at the tile's last beat. */
    for (int k = 0; k < 8; k++) {
        unsigned kk = (unsigned)k;
        load_w(kk & 1, 4 * kk % 28, 0);
        matmul(1 | 2 * (k > 0), 32, 0, 20, 0);
        load_w((kk >> 1) & 1, 4 + 4 * kk % 24, 0);
        matmul(kk & 1, 8, 40 + kk, 1, 0);
        load_w((kk >> 2) & 1, 12 + kk, 0);
        matmul_t(4 | (kk & 1) | 2, (k & 1) ? 32 : 0, 28 + kk, 4 * (1 + kk % 3), kk % 6, 0);
        matmul(2, 3, 30 + kk, 3, 0);
        matmul_t(6, 5, 33, 8, 9, 0);
    }
    check();
    matmul_t(4, 0, 0, 0, 0, 0); /* rows = 0: nothing but the swap */
    load_w(1, 2, 0);
    matmul_t(4, 60, 40, 4, 0, 0); /* the last UB rows */
    matmul_t(5, 32, 0, 32, 1, 0); /* 8 overlapping blocks */
    matmul_t(7, 0, 0, 32, 4, 0);
    check();

    /* Random streams. */
    unsigned last_acc = 0, last_rows = 1;
    for (int k = 0; k < 1500; k++) {
        unsigned c = rnd_below(100);
        if (c < 25) {
            load_w(rnd_below(2), rnd_below(WB_ROWS - N + 1), gap());
        } else if (c < 96) {
            int tr = rnd_below(4) == 0;
            unsigned rows = rnd_below(3) == 0   ? rnd_below(3)
                            : rnd_below(3) == 0 ? rnd_below(ACC_ROWS + 1)
                                                : rnd_below(10);
            unsigned flags = rnd_below(4), stride = 0, ua;
            unsigned aa;
            if (tr) {
                /* Whole blocks; the last block must end inside UB. */
                unsigned blocks = rows / N ? rows / N : 1;
                rows = blocks * N * (rnd_below(8) != 0);
                stride = blocks > 1 ? rnd_below((UB_ROWS - N) / (blocks - 1) + 1) : rnd();
                stride &= 0xFFFF;
                ua = rnd_below(UB_ROWS - N - (blocks - 1) * (blocks > 1 ? stride : 0) + 1);
                flags |= 4;
            } else {
                ua = rnd_below(UB_ROWS - rows + 1);
            }
            if (rnd_below(2) && last_acc + last_rows - 1 + rows <= ACC_ROWS)
                aa = last_acc + last_rows - 1 - rnd_below(last_rows < 3 ? last_rows : 3);
            else
                aa = rnd_below(ACC_ROWS - rows + 1);
            matmul_t(flags, ua, aa, rows, stride, gap());
            last_acc = aa;
            last_rows = rows ? rows : 1;
        } else {
            check();
        }
    }
    check();
    fclose(fc);
    fclose(fw);
    snprintf(path, sizeof path, "%s/counts.hex", argv[1]);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "%x\n%x\n", ncmds, nchecks);
    fclose(f);
    return 0;
}
