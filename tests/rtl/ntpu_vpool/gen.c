/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_vpool bench (N = 4, UB and ACC 128 rows): random POOL commands (protocol 1.5,
 * docs/isa.md) of every MODE, windows k = 1..3 over maps up to 6 x 6 with 1..3 samples (rows and
 * columns past the last whole window left unread), bf16 inputs with zeros of both signs, subnormals,
 * Inf and NaN, argmax rows with indices in and out of the window. The model follows the ISA text with
 * the golden model's functions (ntpu_f32_add, ntpu_f32_mul, ntpu_bf16_from_f32_bits).
 * Output in DIR: cmds.hex (mode src dst aux in_h in_w mb k per command), pre_ub.hex, pre_acc.hex (both
 * memories before each command), want_ub.hex, want_acc.hex (after it), counts.hex.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ntpu/numerics.h"

#define N 4u
#define ROWS 128u
#define GEN_SEED 0x9001u
#include "../gen_common.h"

static uint16_t ub[ROWS][N];
static uint32_t acc[ROWS][N];
static FILE *fc, *fu, *fa, *fpu, *fpa;
static unsigned ncmds;

static uint16_t rnd_bf16(void)
{
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    switch (rnd_below(24)) {
    case 0: return s;
    case 1: return (uint16_t)(s | (1 + rnd_below(127)));
    case 2: return (uint16_t)(s | 0x7F80);
    case 3: return (uint16_t)(s | 0x7FC0 | rnd_below(64));
    default: return (uint16_t)(s | (124 + rnd_below(8)) << 7 | rnd_below(128));
    }
}

static int bf16_nan(uint16_t v)
{
    return (v & 0x7F80) == 0x7F80 && (v & 0x7F);
}

/* v > b as bf16 operands: subnormals are zero of their sign, +0 = -0; NaN b is never beaten. */
static int greater(uint16_t v, uint16_t b)
{
    if (bf16_nan(b))
        return 0;
    int kv = (v & 0x7F80) ? (v & 0x8000 ? -(int)(v & 0x7FFF) : (int)(v & 0x7FFF)) : 0;
    int kb = (b & 0x7F80) ? (b & 0x8000 ? -(int)(b & 0x7FFF) : (int)(b & 0x7FFF)) : 0;
    return kv > kb;
}

static void pool(unsigned mode, unsigned src, unsigned dst, unsigned aux, unsigned in_h, unsigned in_w, unsigned mb,
                 unsigned k)
{
    unsigned oh = in_h / k, ow = in_w / k;
    static uint16_t nub[ROWS][N];
    static uint32_t nacc[ROWS][N];
    memcpy(nub, ub, sizeof ub);
    memcpy(nacc, acc, sizeof acc);
    if (mode >= 2)
        for (unsigned q = 0; q < in_h * in_w * mb; q++)
            for (unsigned n = 0; n < N; n++)
                nacc[dst + q][n] = 0;
    for (unsigned py = 0; py < oh; py++)
        for (unsigned px = 0; px < ow; px++)
            for (unsigned b = 0; b < mb; b++) {
                unsigned r = (py * ow + px) * mb + b;
                for (unsigned n = 0; n < N; n++) {
                    uint16_t best = 0;
                    unsigned idx = 0;
                    uint32_t s = 0;
                    for (unsigned wy = 0; wy < k; wy++)
                        for (unsigned wx = 0; wx < k; wx++) {
                            unsigned w = ((py * k + wy) * in_w + px * k + wx) * mb + b, i = wy * k + wx;
                            if (mode == 0) {
                                uint16_t v = ub[src + w][n];
                                if (i == 0 || bf16_nan(v) || greater(v, best))
                                    best = v, idx = i;
                            } else if (mode == 1) {
                                s = ntpu_f32_add(s, (uint32_t)ub[src + w][n] << 16);
                            } else if (mode == 2) {
                                nacc[dst + w][n] = ub[aux + r][n] == i ? acc[src + r][n] : 0;
                            } else {
                                nacc[dst + w][n] = ntpu_f32_mul(acc[src + r][n], acc[aux][n]);
                            }
                        }
                    if (mode == 0)
                        nub[dst + r][n] = best, nub[aux + r][n] = (uint16_t)idx;
                    if (mode == 1)
                        nub[dst + r][n] = ntpu_bf16_from_f32_bits(ntpu_f32_mul(s, acc[aux][n]));
                }
            }
    memcpy(ub, nub, sizeof ub);
    memcpy(acc, nacc, sizeof acc);
}

static int overlap(unsigned a, unsigned la, unsigned b, unsigned lb)
{
    return a < b + lb && b < a + la;
}

static void dump(FILE *fu_, FILE *fa_)
{
    for (unsigned r = 0; r < ROWS; r++) {
        for (int n = N - 1; n >= 0; n--)
            fprintf(fu_, "%04x", ub[r][n]);
        fprintf(fu_, "\n");
        for (int n = N - 1; n >= 0; n--)
            fprintf(fa_, "%08x", acc[r][n]);
        fprintf(fa_, "\n");
    }
}

/* A random valid POOL; its inputs refreshed first so that results do not feed each other only. */
static void one(void)
{
    static const uint32_t recip[3] = {0x3F800000u, 0x3E800000u, 0x3DE38E39u}; /* fp32(1 / k^2) */
    unsigned mode, k, in_h, in_w, mb, map, pooled, ls, ld, la;
    int aux_shared;
    do { /* sizes whose ranges fit apart */
        mode = rnd_below(4), k = 1 + rnd_below(3);
        in_h = k + rnd_below(7 - k), in_w = k + rnd_below(7 - k), mb = 1 + rnd_below(3);
        map = in_h * in_w * mb, pooled = (in_h / k) * (in_w / k) * mb;
        ls = mode >= 2 ? pooled : map, ld = mode >= 2 ? map : pooled, la = mode & 1 ? 1 : pooled;
        aux_shared = mode == 0 || mode == 3;
    } while (ls + ld + (aux_shared ? la : 0) > ROWS * 3 / 4);
    unsigned src, dst, aux;
    for (;;) {
        src = rnd_below(ROWS - ls + 1);
        dst = rnd_below(ROWS - ld + 1);
        aux = rnd_below(ROWS - la + 1);
        if (overlap(src, ls, dst, ld))
            continue;
        if (aux_shared && (overlap(src, ls, aux, la) || overlap(dst, ld, aux, la)))
            continue;
        break;
    }
    unsigned inmem_rows = ls;
    for (unsigned r = 0; r < inmem_rows; r++)
        for (unsigned n = 0; n < N; n++) {
            if (mode < 2)
                ub[src + r][n] = rnd_bf16();
            else
                acc[src + r][n] = rnd_below(8) == 0 ? 0x7FC00000u : (uint32_t)rnd_bf16() << 16 | rnd_below(65536);
        }
    if (mode == 2)
        for (unsigned r = 0; r < pooled; r++)
            for (unsigned n = 0; n < N; n++)
                ub[aux + r][n] = (uint16_t)(rnd_below(6) == 0 ? rnd() : rnd_below(k * k));
    if (mode & 1)
        for (unsigned n = 0; n < N; n++)
            acc[aux][n] = rnd_below(2) ? recip[k - 1] : (uint32_t)rnd_bf16() << 16 | rnd_below(65536);
    dump(fpu, fpa);
    pool(mode, src, dst, aux, in_h, in_w, mb, k);
    fprintf(fc, "%x %x %x %x %x %x %x %x\n", mode, src, dst, aux, in_h, in_w, mb, k);
    dump(fu, fa);
    ncmds++;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    char path[4096];
    for (unsigned r = 0; r < ROWS; r++)
        for (unsigned n = 0; n < N; n++)
            ub[r][n] = rnd_bf16(), acc[r][n] = rnd();
    snprintf(path, sizeof path, "%s/cmds.hex", argv[1]);
    fc = fopen(path, "w");
    snprintf(path, sizeof path, "%s/want_ub.hex", argv[1]);
    fu = fopen(path, "w");
    snprintf(path, sizeof path, "%s/want_acc.hex", argv[1]);
    fa = fopen(path, "w");
    snprintf(path, sizeof path, "%s/pre_ub.hex", argv[1]);
    fpu = fopen(path, "w");
    snprintf(path, sizeof path, "%s/pre_acc.hex", argv[1]);
    fpa = fopen(path, "w");
    if (!fc || !fu || !fa || !fpu || !fpa)
        return 1;
    for (int t = 0; t < 300; t++)
        one();
    fclose(fc);
    fclose(fu);
    fclose(fa);
    fclose(fpu);
    fclose(fpa);
    snprintf(path, sizeof path, "%s/counts.hex", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "%x\n", ncmds);
    fclose(f);
    return 0;
}
