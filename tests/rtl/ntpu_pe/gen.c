/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_pe bench, from the golden numerics (sim/ref/numerics.c).
 *
 * OUTDIR/mul.hex: bf16 pairs and their exact product for ntpu_bf16_mul alone (a, b, p: 16 hex
 *   digits a line). The product is ntpu_mac_bf16(-0, a, b): adding -0 changes nothing, so that is
 *   the flushed product, NaN canonical.
 * OUTDIR/pe.hex: one line per clock cycle of a single PE, 52 hex digits:
 *   stimulus  ctrl(8) w_top(32: buffer 1, buffer 0) w_left(32) a_in(16) psum_in(32)
 *   expected  psum_q(32) w_q(32: buffer 1, buffer 0) a_q(16) flags(8: bit 1 a_bf16_q, bit 0 a_buf_q)
 *   ctrl: bit 0 w_valid, 1 w_buf, 2 w_transpose, 3 a_buf, 4 a_bf16, 5 check psum_q,
 *         6 check w_q[0], 7 check w_q[1] (a weight is unknown until first loaded).
 * OUTDIR/count.hex: the number of lines of mul.hex, then of pe.hex.
 * Usage: gen OUTDIR [SEED] */
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define N_MUL 100000u
#define N_CYCLES 100000u

static const uint16_t bf16_specials[] = {
    0x0000, 0x8000, 0x0001, 0x807F, 0x0040, 0x0080, 0x8080, 0x00FF, 0x3F80, 0xBF80,
    0x3FFF, 0xBFFF, 0x4000, 0x7F7F, 0xFF7F, 0x7F00, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0,
    0x7F81, 0xFFFF, 0x1F80, 0x2000, 0x5F80, 0x6000, 0x0100, 0x3F00, 0x4B00, 0x3C00,
};
#define N_BF16_SPECIALS (sizeof bf16_specials / sizeof bf16_specials[0])

/* A bf16 operand: mostly moderate magnitudes, some extremes (for overflow and underflow of the
 * product), some special values. */
static uint16_t bf16_operand(void)
{
    uint32_t sign = rnd(2), frac = rnd(128), e;
    switch (rnd(16)) {
    case 0: return bf16_specials[rnd(N_BF16_SPECIALS)];
    case 1: return (uint16_t)rng();
    case 2: e = rnd(2) ? 1 + rnd(40) : 214 + rnd(40); break; /* product leaves the range */
    default: e = 107 + rnd(41); break;
    }
    return (uint16_t)((sign << 15) | (e << 7) | frac);
}

/* An fp32 accumulator near the magnitude of the product p, so that the sum rounds, cancels and
 * carries; sometimes a special value or an arbitrary pattern. */
static uint32_t fp32_acc(uint32_t p)
{
    static const uint32_t sp[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
                                  0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x3F800000};
    switch (rnd(10)) {
    case 0: return sp[rnd(sizeof sp / sizeof sp[0])];
    case 1: return (uint32_t)rng();
    case 2: return p ^ 0x80000000u ^ (uint32_t)(rng() & 0xFFu); /* near cancellation */
    default: {
        int e = (int)((p >> 23) & 0xFF);
        if (e == 0 || e == 255)
            e = 127;
        e += (int)rnd(61) - 30;
        if (e < 1)
            e = 1;
        if (e > 254)
            e = 254;
        return ((uint32_t)rnd(2) << 31) | ((uint32_t)e << 23) | ((uint32_t)rng() & 0x7FFFFFu);
    }
    }
}

static int32_t int32_acc(void)
{
    switch (rnd(4)) {
    case 0: return (int32_t)(0x7FFFFFFFu - rnd(20000)); /* wraps upward */
    case 1: return (int32_t)(0x80000000u + rnd(20000)); /* wraps downward */
    default: return (int32_t)(uint32_t)rng();
    }
}

static uint32_t product(uint16_t a, uint16_t b)
{
    return ntpu_mac_bf16(0x80000000u, a, b);
}

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E74707570650000ull))
        return 2;

    char path[4096];
    unsigned n_mul = 0, n_pe = 0;

    snprintf(path, sizeof path, "%s/mul.hex", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    for (unsigned i = 0; i < N_BF16_SPECIALS; i++)
        for (unsigned j = 0; j < N_BF16_SPECIALS; j++, n_mul++)
            fprintf(f, "%04X%04X%08X\n", bf16_specials[i], bf16_specials[j],
                    product(bf16_specials[i], bf16_specials[j]));
    for (unsigned k = 0; k < N_MUL; k++, n_mul++) {
        uint16_t a = rnd(2) ? bf16_operand() : (uint16_t)rng();
        uint16_t b = rnd(2) ? bf16_operand() : (uint16_t)rng();
        fprintf(f, "%04X%04X%08X\n", a, b, product(a, b));
    }
    /* Around the edges of the product's range: exponent sums near 127 + 1 and 127 + 254. */
    for (unsigned k = 0; k < 20000; k++, n_mul++) {
        uint32_t ea = 1 + rnd(254);
        int eb = (rnd(2) ? 128 : 381) - (int)ea + (int)rnd(5) - 2;
        if (eb < 1 || eb > 254)
            eb = 1 + (int)rnd(254);
        uint16_t a = (uint16_t)((rnd(2) << 15) | (ea << 7) | rnd(128));
        uint16_t b = (uint16_t)((rnd(2) << 15) | ((uint32_t)eb << 7) | rnd(128));
        fprintf(f, "%04X%04X%08X\n", a, b, product(a, b));
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }

    snprintf(path, sizeof path, "%s/pe.hex", argv[1]);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    uint16_t w[2] = {0, 0};
    int known[2] = {0, 0};
    for (unsigned k = 0; k < N_CYCLES; k++, n_pe++) {
        /* The first two cycles load both buffers; after that loads come at random. */
        int w_valid = k < 2 || rnd(10) < 3;
        int w_buf = k < 2 ? (int)k : (int)rnd(2);
        int w_transpose = (int)rnd(2);
        uint16_t top[2] = {bf16_operand(), bf16_operand()};
        uint16_t left[2] = {bf16_operand(), bf16_operand()};
        int a_buf = (int)rnd(2), a_bf16 = (int)rnd(2);
        uint16_t a = a_bf16 ? bf16_operand() : (uint16_t)rng();
        uint16_t wsel = w[a_buf]; /* the weight before this cycle's shift */
        uint32_t psum_in, psum_out;
        if (a_bf16) {
            psum_in = fp32_acc(product(a, wsel));
            psum_out = ntpu_mac_bf16(psum_in, a, wsel);
        } else {
            psum_in = (uint32_t)int32_acc();
            psum_out = (uint32_t)ntpu_mac_int8((int32_t)psum_in, (int8_t)(a & 0xFF), (int8_t)(wsel & 0xFF));
        }
        int check_psum = known[a_buf];
        if (w_valid) {
            w[w_buf] = w_transpose ? left[w_buf] : top[w_buf];
            known[w_buf] = 1;
        }
        unsigned ctrl = (unsigned)(w_valid | w_buf << 1 | w_transpose << 2 | a_buf << 3 | a_bf16 << 4 |
                                   check_psum << 5 | known[0] << 6 | known[1] << 7);
        fprintf(f, "%02X%04X%04X%04X%04X%04X%08X%08X%04X%04X%04X%02X\n", ctrl, top[1], top[0], left[1], left[0], a,
                psum_in, psum_out, w[1], w[0], a, (unsigned)(a_bf16 << 1 | a_buf));
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }

    snprintf(path, sizeof path, "%s/count.hex", argv[1]);
    f = fopen(path, "w");
    if (!f || fprintf(f, "%08X\n%08X\n", n_mul, n_pe) < 0 || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    printf("gen: %u products, %u PE cycles\n", n_mul, n_pe);
    return 0;
}
