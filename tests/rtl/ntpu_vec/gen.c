/* SPDX-License-Identifier: Apache-2.0 */
/* Operations for the ntpu_vec bench, at N = 8 and N = 3: ACT in every flag combination (fp32 with
 * each OUT, int8), RELU_GRAD with each OUT, COLSUM with and without ACCUMULATE (0 rows included),
 * on lanes full of special values (NaN, +-0, +-Inf, subnormals, bf16 rounding ties, requantizer
 * saturation, every shift), each with the rows the golden numerics give.
 *
 * Per N, files OUTDIR/nN_ops.hex, nN_exp.hex, nN_count.hex. Every line is one word of N*32 bits
 * (lane N-1 first). An operation in ops.hex is
 *   header   bits 7:0 op (0 ACT, 1 RELU_GRAD, 2 COLSUM), 15:8 flags as in docs/isa.md (COLSUM:
 *            bit 0 ACCUMULATE), 31:16 beats
 *   aux0, mult, shift rows
 *   per beat: the ACC row, then a word with the mask row in bits N*16-1:0, void in bit N*16 and
 *   last in bit N*16+1.
 * exp.hex has one word per result row, in order. count.hex: operations, ops words, results.
 * Usage: gen OUTDIR [SEED] */
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define MAX_N 8u

static unsigned n_lanes;
static FILE *f_ops, *f_exp;
static unsigned n_ops, n_words, n_exp;

/* One word of N*32 bits as 32-bit pieces, piece 0 lowest. */
typedef struct {
    uint32_t w[MAX_N];
} word;

static void put_word(FILE *f, const word *x)
{
    for (unsigned i = n_lanes; i-- > 0;)
        fprintf(f, "%08X", x->w[i]);
    fputc('\n', f);
}

static void set16(word *x, unsigned lane, uint16_t v)
{
    unsigned sh = 16u * (lane & 1u);
    x->w[lane / 2] = (x->w[lane / 2] & ~(0xFFFFu << sh)) | ((uint32_t)v << sh);
}

static void set_bit(word *x, unsigned bit)
{
    x->w[bit / 32] |= 1u << (bit % 32);
}

/* ---------------------------------------------------------------- values */

static const uint32_t f32_specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
    0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF,
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF,
    0xBF808000, 0xBF818000, 0x3F800000, 0xBF800000, 0x0080FFFF, 0x00FF8000, 0x7FFF0000, 0x7F810000,
};

/* fp32 lanes: specials, arbitrary bits, bf16 rounding cases, and ordinary numbers. */
static uint32_t f32_any(void)
{
    switch (rnd(8)) {
    case 0: return f32_specials[rnd(sizeof f32_specials / sizeof f32_specials[0])];
    case 1: return (uint32_t)rng();
    case 2: /* low half at or next to the rounding tie */ return ((uint32_t)rng() & 0xFFFF0000u) | (0x7FFFu + rnd(3));
    default: return ((uint32_t)rnd(2) << 31) | ((uint32_t)(110 + rnd(36)) << 23) | ((uint32_t)rng() & 0x7FFFFFu);
    }
}

/* fp32 lanes that sum to something: similar magnitudes, both signs, rare specials. */
static uint32_t f32_sum(unsigned center)
{
    uint32_t r = rnd(40);
    if (r == 0)
        return f32_specials[rnd(sizeof f32_specials / sizeof f32_specials[0])];
    if (r == 1) /* subnormal: reads as zero */
        return ((uint32_t)rnd(2) << 31) | ((uint32_t)rng() & 0x7FFFFFu);
    return ((uint32_t)rnd(2) << 31) | ((center - 3 + rnd(7)) << 23) | ((uint32_t)rng() & 0x7FFFFFu);
}

static const uint16_t bf16_specials[] = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x807F, 0x0080, 0x8080, 0x7F80, 0xFF80, 0x7F81,
    0xFF81, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF, 0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x0100, 0x00FF,
};

static uint16_t mask_any(void)
{
    return rnd(3) == 0 ? bf16_specials[rnd(sizeof bf16_specials / sizeof bf16_specials[0])] : (uint16_t)rng();
}

static const uint32_t i32_specials[] = {0x00000000, 0x00000001, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF,
                                        0x80000001, 0x7FFFFFFE, 0x0000007F, 0xFFFFFF80, 0x00010000};

static uint32_t i32_any(void)
{
    switch (rnd(5)) {
    case 0: return i32_specials[rnd(sizeof i32_specials / sizeof i32_specials[0])];
    case 1: return (uint32_t)rng();
    default: return (uint32_t)((int32_t)rnd(1u << 22) - (1 << 21)); /* accumulator-sized */
    }
}

static uint32_t mult_any(void)
{
    switch (rnd(6)) {
    case 0: return i32_specials[rnd(sizeof i32_specials / sizeof i32_specials[0])];
    case 1: return (uint32_t)rng();
    default: return 0x40000000u | ((uint32_t)rng() & 0x3FFFFFFFu); /* normalized */
    }
}

static uint32_t shift_any(void)
{
    switch (rnd(6)) {
    case 0: return (uint32_t)rng();
    case 1: return i32_specials[rnd(sizeof i32_specials / sizeof i32_specials[0])];
    default: return rnd(44) - 6u; /* -6 .. 37 */
    }
}

/* ---------------------------------------------------------------- reference */

/* bf16 > 0, a subnormal being zero: sign clear, exponent not 0, not NaN (docs/isa.md). */
static int bf16_positive(uint16_t m)
{
    unsigned e = (m >> 7) & 0xFFu, f = m & 0x7Fu;
    return !(m & 0x8000u) && e != 0 && !(e == 0xFF && f != 0);
}

enum { OP_ACT = 0, OP_RELU_GRAD = 1, OP_COLSUM = 2 };

/* Emits one operation with `rows` data rows (COLSUM with 0 rows sends one void last beat) and
 * `voids` extra void beats at random places (not last). */
static void emit_op(unsigned op, unsigned flags, unsigned rows, unsigned voids)
{
    const unsigned n = n_lanes;
    const unsigned out = (flags >> 2) & 3u;
    word aux0 = {{0}}, mult = {{0}}, shift = {{0}}, hdr = {{0}};
    uint32_t sum[MAX_N];
    unsigned center = 100 + rnd(50);

    for (unsigned j = 0; j < n; j++) {
        if (op == OP_COLSUM)
            aux0.w[j] = rnd(3) ? f32_sum(center) : f32_any();
        else if (op == OP_ACT && out == 3)
            aux0.w[j] = i32_any();
        else
            aux0.w[j] = rnd(2) ? f32_any() : f32_sum(center);
        mult.w[j] = mult_any();
        shift.w[j] = shift_any();
        sum[j] = (op == OP_COLSUM && (flags & 1u)) ? aux0.w[j] : 0u;
    }
    unsigned beats = rows + voids + (op == OP_COLSUM && rows == 0 ? 1u : 0u);
    hdr.w[0] = op | flags << 8 | beats << 16;
    put_word(f_ops, &hdr);
    put_word(f_ops, &aux0);
    put_word(f_ops, &mult);
    put_word(f_ops, &shift);
    n_words += 4;

    /* The last beat is a row (a void one for COLSUM of 0 rows); the voids fall anywhere before. */
    unsigned rows_left = rows > 0 ? rows - 1 : 0, voids_left = beats - 1 - rows_left;
    for (unsigned b = 0; b < beats; b++) {
        int is_last = b == beats - 1, is_void;
        if (is_last)
            is_void = rows == 0;
        else if (rnd(rows_left + voids_left) < voids_left)
            is_void = 1, voids_left--;
        else
            is_void = 0, rows_left--;
        word x = {{0}}, mw = {{0}};
        uint16_t m[MAX_N];
        for (unsigned j = 0; j < n; j++) {
            if (op == OP_COLSUM)
                x.w[j] = f32_sum(center);
            else if (op == OP_ACT && out == 3)
                x.w[j] = i32_any();
            else
                x.w[j] = f32_any();
            m[j] = mask_any();
            set16(&mw, j, m[j]);
        }
        if (is_void)
            set_bit(&mw, 16 * n);
        if (is_last)
            set_bit(&mw, 16 * n + 1);
        put_word(f_ops, &x);
        put_word(f_ops, &mw);
        n_words += 2;

        if (is_void && !(op == OP_COLSUM && is_last))
            continue;
        word y = {{0}};
        if (op == OP_COLSUM) {
            if (!is_void)
                for (unsigned j = 0; j < n; j++)
                    sum[j] = ntpu_f32_add(sum[j], x.w[j]);
            if (!is_last)
                continue;
            for (unsigned j = 0; j < n; j++)
                y.w[j] = sum[j];
        } else {
            for (unsigned j = 0; j < n; j++) {
                uint32_t t = x.w[j];
                if (op == OP_RELU_GRAD) {
                    t = bf16_positive(m[j]) ? t : 0u;
                } else if (out == 3) {
                    if (flags & 1u)
                        t += aux0.w[j];
                    if ((flags & 2u) && (t & 0x80000000u))
                        t = 0;
                    int32_t s = (int32_t)shift.w[j];
                    int sh = s < 0 ? 0 : s > 31 ? 31 : (int)s;
                    int8_t q = ntpu_requantize((int32_t)t, (int32_t)mult.w[j], sh, 0);
                    set16(&y, j, (uint16_t)(int16_t)q);
                    continue;
                } else {
                    if (flags & 1u)
                        t = ntpu_f32_add(t, aux0.w[j]);
                    if (flags & 2u)
                        t = ntpu_relu_f32(t);
                }
                if (out == 2)
                    y.w[j] = t;
                else
                    set16(&y, j, ntpu_bf16_from_f32_bits(t));
            }
        }
        put_word(f_exp, &y);
        n_exp++;
    }
    n_ops++;
}

static unsigned rows_any(void)
{
    switch (rnd(6)) {
    case 0: return 1;
    case 1: return 1 + rnd(4);
    case 2: return 30 + rnd(70);
    default: return 1 + rnd(30);
    }
}

static int gen_n(const char *dir, unsigned n)
{
    char path[4096];
    n_lanes = n;
    n_ops = n_words = n_exp = 0;
    snprintf(path, sizeof path, "%s/n%u_ops.hex", dir, n);
    f_ops = fopen(path, "w");
    snprintf(path, sizeof path, "%s/n%u_exp.hex", dir, n);
    f_exp = fopen(path, "w");
    if (!f_ops || !f_exp) {
        perror(path);
        return 1;
    }
    /* Every ACT flag combination, every RELU_GRAD OUT, both COLSUMs (with 0 rows), a few times
     * over, in random order; then random operations. */
    for (unsigned k = 0; k < 1200; k++) {
        unsigned op, flags, rows, voids = rnd(8) == 0 ? 1 + rnd(3) : 0;
        unsigned pick = k < 240 ? k % 24 : rnd(24);
        if (pick < 16) {
            op = OP_ACT;
            flags = pick; /* BIAS, RELU, OUT */
        } else if (pick < 19) {
            op = OP_RELU_GRAD;
            flags = (pick - 16) << 2;
        } else {
            op = OP_COLSUM;
            flags = pick & 1u;
        }
        rows = rows_any();
        if (op == OP_COLSUM && rnd(6) == 0)
            rows = 0;
        emit_op(op, flags, rows, voids);
    }
    if (fclose(f_ops) != 0 || fclose(f_exp) != 0) {
        perror("gen");
        return 1;
    }
    snprintf(path, sizeof path, "%s/n%u_count.hex", dir, n);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%08X\n%08X\n%08X\n", n_ops, n_words, n_exp) < 0 || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    printf("gen: N=%u: %u operations, %u results\n", n, n_ops, n_exp);
    return 0;
}

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x76656374756E6974ull))
        return 2;
    return gen_n(argv[1], 8) || gen_n(argv[1], 3);
}
