/* SPDX-License-Identifier: Apache-2.0 */
/* Stimulus and expected results for the ntpu_array bench, for N = 4 and N = 8.
 *
 * Plays the sequencer: loads random weight tiles, normal and transposed, into both buffers with
 * random gaps between beats, and sends random rows of both dtypes (special values mixed in) with
 * random gaps, each using a loaded buffer that is not being loaded, while the other buffer loads
 * whenever the schedule allows. It keeps to the limits ntpu_array.sv documents, at their tightest:
 * a load of buffer b starts LATENCY-1 cycles after the last row using b, and a row may use b in
 * the cycle of b's last beat. The expected result of each row is the chain of ntpu_mac_bf16 /
 * ntpu_mac_int8 from sim/ref/numerics.c down each column. A quarter of the bf16 rows sit at an end
 * of fp32's range, so that products and sums are flushed and overflow (counted; for single-cycle
 * PEs without the shared unit the run fails if any kind never happened), which vsim's array form
 * handles on a branch of its own.
 *
 * With shared = 1 (the array's BF16_SHARED, for the ntpu_array_shared bench) bf16 rows have their
 * own latency and the next row comes at the earliest that latency after a bf16 row, as ntpu_seq
 * keeps it (BF16_GAP).
 *
 * For each N, writes into OUTDIR:
 *   nN_stim.hex   one line per cycle: ctrl (2 hex digits: bit 0 w_valid, 1 w_buf, 2 w_transpose,
 *                 3 a_valid, 4 a_buf, 5 a_bf16), w_row, a_row, a_acc (each with lane 0 in the
 *                 low bits, as on the ports)
 *   nN_exp.hex    one line per row: the expected y_row
 *   nN_count.hex  the number of cycles, then of rows
 * Usage: gen OUTDIR [SEED] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define MAX_N 8

static int chance(unsigned percent)
{
    return rnd(100) < percent;
}

static const uint16_t bf16_specials[] = {
    0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F7F, 0xFF7F,
    0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x3F80, 0xBF80, 0x0100, 0x7E00,
};

/* A bf16 value: mostly moderate magnitudes, so that sums round and cancel, sometimes extreme (the
 * product overflows or underflows) or special. */
static uint16_t bf16_value(void)
{
    uint32_t e;
    switch (rnd(32)) {
    case 0: return bf16_specials[rnd(sizeof bf16_specials / sizeof bf16_specials[0])];
    case 1: return (uint16_t)rng();
    case 2: e = rnd(2) ? 1 + rnd(40) : 214 + rnd(40); break;
    default: e = 117 + rnd(21); break;
    }
    return (uint16_t)((rnd(2) << 15) | (e << 7) | rnd(128));
}

static uint32_t fp32_acc(void)
{
    static const uint32_t sp[] = {0x00000000, 0x80000000, 0x00000001, 0x80400000,
                                  0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF};
    switch (rnd(16)) {
    case 0: return sp[rnd(sizeof sp / sizeof sp[0])];
    case 1: return (uint32_t)rng();
    default: return (uint32_t)rnd(2) << 31 | (112 + rnd(31)) << 23 | ((uint32_t)rng() & 0x7FFFFFu);
    }
}

/* A bf16 value of either sign with a biased exponent in lo..hi. */
static uint16_t bf16_in(uint32_t lo, uint32_t hi)
{
    return (uint16_t)((rnd(2) << 15) | (lo + rnd(hi - lo + 1)) << 7 | rnd(128));
}

/* Rows at an end of fp32's range: activations of 2^-126..2^-113 (edge 1) or 2^113..2^127 (edge 2)
 * against weights of mostly 2^-10..2^10, so that products fall on both sides of the normal
 * range, and chain start values at the same end, so that sums cancel below it or overflow. */
static uint16_t bf16_edge(int edge)
{
    return edge == 1 ? bf16_in(1, 14) : bf16_in(240, 254);
}
static uint32_t fp32_edge(int edge)
{
    return (uint32_t)rnd(2) << 31 | (edge == 1 ? 1 + rnd(8) : 247 + rnd(8)) << 23 | ((uint32_t)rng() & 0x7FFFFFu);
}

/* A value as the device reads it (subnormal: zero), as a double. */
static double dev_f32(uint32_t x)
{
    return (x & 0x7F800000u) ? (double)ntpu_f32_from_bits(x) : 0.0;
}

/* What one bf16 MAC's range rules did, counted so that the schedule can show it reached them. */
struct edges {
    unsigned prod_flushed, prod_inf, sum_flushed, sum_inf;
};
static void count_edges(struct edges *e, uint32_t acc, uint16_t a, uint16_t w, uint32_t result)
{
    double p = dev_f32((uint32_t)a << 16) * dev_f32((uint32_t)w << 16), s = dev_f32(acc) + p;
    if (!isfinite(p) || !isfinite(s))
        return;
    if (p != 0 && fabs(p) < 0x1p-126)
        e->prod_flushed++;
    else if (fabs(p) >= 0x1p128)
        e->prod_inf++;
    else if (s != 0 && fabs(s) < 0x1p-126)
        e->sum_flushed++;
    else if ((result & 0x7FFFFFFFu) == 0x7F800000u)
        e->sum_inf++;
}

static uint32_t int32_acc(void)
{
    switch (rnd(4)) {
    case 0: return 0x7FFFFFFFu - rnd(3000); /* the sum wraps */
    case 1: return 0x80000000u + rnd(3000);
    default: return (uint32_t)rng();
    }
}

/* Writes a bus of n lanes of bits each (lane 0 least significant) as one hex number. */
static void put_lanes(FILE *f, const uint32_t *lane, int n, int hex_digits)
{
    for (int j = n - 1; j >= 0; j--)
        fprintf(f, "%0*X", hex_digits, (unsigned)lane[j]);
}

/* stages: ntpu_array's PE_STAGES; shared: its BF16_SHARED. Files nN_*.hex for stages 1, nN_sS_*.hex
 * otherwise, nN_shS_*.hex when shared. */
static int generate(const char *dir, int n, int stages, int shared, unsigned cycles)
{
    /* ntpu_array's LATENCY, and BF16_LATENCY for bf16 rows when shared */
    const int latency = stages == 1 || shared ? 2 * n : n + 1 + n * stages;
    const int period = n > stages ? n : stages;
    const int latency_bf16 = shared ? 2 + (n - 1) * period + n + stages - 1 : latency;
    char pre[4096], path[3][4200];
    if (shared)
        snprintf(pre, sizeof pre, "%s/n%d_sh%d_", dir, n, stages);
    else if (stages == 1)
        snprintf(pre, sizeof pre, "%s/n%d_", dir, n);
    else
        snprintf(pre, sizeof pre, "%s/n%d_s%d_", dir, n, stages);
    snprintf(path[0], sizeof path[0], "%sstim.hex", pre);
    snprintf(path[1], sizeof path[1], "%sexp.hex", pre);
    snprintf(path[2], sizeof path[2], "%scount.hex", pre);
    FILE *fs = fopen(path[0], "w"), *fe = fopen(path[1], "w");
    if (!fs || !fe) {
        perror(dir);
        return 1;
    }

    uint16_t w[2][MAX_N][MAX_N]; /* the loaded tiles, W[b][i][n] */
    int known[2] = {0, 0};
    long free_at[2] = {-1000, -1000}; /* first cycle a beat may shift each buffer again */
    long next_row = 0;                /* first cycle a row may enter (after a bf16 row, shared) */
    int loading = 0, ld_buf = 0, ld_tr = 0, ld_beat = 0;
    int fresh = 0;             /* the buffer loaded last: rows mostly use it, like a sequencer */
    uint16_t wb[MAX_N][MAX_N]; /* the tile being loaded, as WB rows wb[j][lane] */
    unsigned rows = 0, rows_bf16 = 0, rows_during_load = 0, loads[2][2] = {{0, 0}, {0, 0}};
    unsigned tight_load = 0, tight_row = 0; /* schedules right at the documented limits */
    struct edges edges = {0, 0, 0, 0};
    long last_beat = -1;
    unsigned p_row = 100, p_beat = 100, p_load = 50;

    for (unsigned t = 0; t < cycles; t++) {
        /* Change the traffic pattern now and then: back to back, or sparse. */
        if (t % 97 == 0) {
            p_row = (unsigned[]){100, 100, 60, 25}[rnd(4)];
            p_beat = (unsigned[]){100, 100, 70, 30}[rnd(4)];
            p_load = (unsigned[]){100, 50, 10}[rnd(3)];
        }
        uint32_t w_lane[MAX_N], a_lane[MAX_N], acc[MAX_N];
        for (int j = 0; j < n; j++) { /* what the buses carry when nothing is valid */
            w_lane[j] = (uint16_t)rng();
            a_lane[j] = (uint16_t)rng();
            acc[j] = (uint32_t)rng();
        }
        int w_valid = 0, w_buf = (int)rnd(2), w_tr = (int)rnd(2);
        int a_valid = 0, a_buf = (int)rnd(2), a_bf16 = (int)rnd(2);

        /* Weights: start a load of a buffer no row is still using, or send the next beat. */
        if (!loading && chance(p_load)) {
            int b = !known[0] ? 0 : chance(85) ? !fresh : fresh; /* mostly the idle buffer */
            if ((long)t >= free_at[b]) {
                tight_load += (long)t == free_at[b];
                loading = 1;
                ld_buf = b;
                ld_tr = (int)rnd(2);
                ld_beat = 0;
                for (int j = 0; j < n; j++)
                    for (int l = 0; l < n; l++)
                        wb[j][l] = bf16_value();
            }
        }
        if (loading && (ld_beat == 0 || chance(p_beat))) {
            w_valid = 1;
            w_buf = ld_buf;
            w_tr = ld_tr;
            for (int l = 0; l < n; l++) /* beats carry WB rows N-1 .. 0 */
                w_lane[l] = wb[n - 1 - ld_beat][l];
            if (++ld_beat == n) {
                loading = 0;
                known[ld_buf] = 1;
                fresh = ld_buf;
                last_beat = (long)t;
                loads[ld_buf][ld_tr]++;
                for (int i = 0; i < n; i++)
                    for (int c = 0; c < n; c++)
                        w[ld_buf][i][c] = ld_tr ? wb[c][i] : wb[i][c];
            }
        }

        /* Activations: a row using a loaded buffer that is not loading. */
        int ok[2] = {known[0] && !(loading && ld_buf == 0), known[1] && !(loading && ld_buf == 1)};
        if ((ok[0] || ok[1]) && (long)t >= next_row && chance(p_row)) {
            a_valid = 1;
            a_buf = ok[0] && ok[1] ? (chance(85) ? fresh : !fresh) : ok[1];
            a_bf16 = (int)rnd(2);
            free_at[a_buf] = (long)t + (a_bf16 ? latency_bf16 : latency) - 1;
            if (shared && a_bf16)
                next_row = (long)t + latency_bf16;
            rows++;
            rows_bf16 += (unsigned)a_bf16;
            rows_during_load += (unsigned)loading;
            tight_row += last_beat == (long)t && a_buf == fresh;
            int edge = a_bf16 && chance(25) ? 1 + (int)rnd(2) : 0; /* a row at an end of the range */
            for (int i = 0; i < n; i++)                            /* int8: the high byte is ignored */
                a_lane[i] = edge ? bf16_edge(edge) : a_bf16 ? bf16_value() : (uint16_t)rng();
            if (edge == 1 && chance(25)) /* zeros after lane 0: a flushed sum's sign can reach y_row */
                for (int i = 1; i < n; i++)
                    a_lane[i] = rnd(2) ? 0x8000 : 0x0000;
            uint32_t y[MAX_N];
            for (int c = 0; c < n; c++) {
                acc[c] = edge ? fp32_edge(edge) : a_bf16 ? fp32_acc() : int32_acc();
                if (edge == 1) {
                    uint32_t p0 = ntpu_mac_bf16(0, (uint16_t)a_lane[0], w[a_buf][0][c]);
                    if ((p0 & 0x7F800000u) && chance(50))
                        acc[c] = p0 ^ 0x80000001u; /* minus the first product, one ulp off: a sum below 2^-126 */
                }
                uint32_t s = acc[c];
                for (int i = 0; i < n; i++) {
                    uint16_t wv = w[a_buf][i][c];
                    uint32_t before = s;
                    s = a_bf16 ? ntpu_mac_bf16(s, (uint16_t)a_lane[i], wv)
                               : (uint32_t)ntpu_mac_int8((int32_t)s, (int8_t)(a_lane[i] & 0xFF), (int8_t)(wv & 0xFF));
                    if (a_bf16)
                        count_edges(&edges, before, (uint16_t)a_lane[i], wv, s);
                }
                y[c] = s;
            }
            put_lanes(fe, y, n, 8);
            fputc('\n', fe);
        }

        fprintf(fs, "%02X", (unsigned)(w_valid | w_buf << 1 | w_tr << 2 | a_valid << 3 | a_buf << 4 | a_bf16 << 5));
        put_lanes(fs, w_lane, n, 4);
        put_lanes(fs, a_lane, n, 4);
        put_lanes(fs, acc, n, 8);
        fputc('\n', fs);
    }

    FILE *fc = fopen(path[2], "w");
    if (fclose(fs) != 0 || fclose(fe) != 0 || !fc || fprintf(fc, "%08X\n%08X\n", cycles, rows) < 0 || fclose(fc) != 0) {
        perror(dir);
        return 1;
    }
    printf("gen N=%d PE_STAGES=%d%s: %u cycles, %u rows (%u bf16, %u while a buffer loaded, %u in the cycle of their "
           "tile's last beat), loads normal/transposed into buffer 0: %u/%u, buffer 1: %u/%u (%u "
           "started LATENCY-1 after the buffer's last row)\n",
           n, stages, shared ? " BF16_SHARED" : "", cycles, rows, rows_bf16, rows_during_load, tight_row, loads[0][0],
           loads[0][1], loads[1][0], loads[1][1], tight_load);
    printf("gen N=%d: bf16 MACs whose product was flushed %u, was Inf %u; whose sum was flushed %u, overflowed %u\n", n,
           edges.prod_flushed, edges.prod_inf, edges.sum_flushed, edges.sum_inf);
    /* The schedule must have exercised what the bench claims to test; the range ends for vsim's
     * configuration (single-cycle PEs, no shared unit), whose Verilator form has a branch for them. */
    int edges_thin = !edges.prod_flushed || !edges.prod_inf || !edges.sum_flushed || !edges.sum_inf;
    if (rows_during_load == 0 || tight_row == 0 || tight_load == 0 || rows_bf16 == 0 || rows_bf16 == rows ||
        !loads[0][0] || !loads[0][1] || !loads[1][0] || !loads[1][1] || (stages == 1 && !shared && edges_thin)) {
        fprintf(stderr, "gen N=%d: schedule too thin\n", n);
        return 1;
    }
    return 0;
}

#ifndef NTPU_ARRAY_GEN_MAIN_ELSEWHERE
int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E74707561727200ull))
        return 2;
    if (generate(argv[1], 4, 1, 0, 8000) || generate(argv[1], 8, 1, 0, 8000) || generate(argv[1], 3, 1, 0, 8000))
        return 1;
    return 0;
}
#endif
