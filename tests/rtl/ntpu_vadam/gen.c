/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_vadam bench: rows of Adam / AdamW updates, each lane with its own nine
 * constants, gradient, moments and parameter, and the results the golden model's ntpu_adam_f32
 * gives. Mostly the values of real training (small gradients, b1 and b2 near 1, tiny eps), some
 * with any bit pattern in any operand (NaN, Inf, zeros, subnormals).
 *
 * Writes OUTDIR/vectors.hex (per row: DEC, then per lane k0..k8, g, m, p, v, and the expected p, m,
 * v: 1 + 16 * LANES words, one a line) and OUTDIR/count.hex (rows). Usage: gen OUTDIR [SEED] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "ntpu/numerics.h"

#include "../common/gen_vectors.h"

#define LANES 3 /* tb.sv's N */
#define ROWS 1500u

static uint32_t any(void)
{
    return (uint32_t)rng();
}

/* ±[2^(lo-127), 2^(hi-127)) with a structured fraction */
static uint32_t range(uint32_t lo, uint32_t hi, int neg)
{
    return fp32_make(neg ? rnd(2) : 0, lo + rnd(hi - lo), frac_pattern());
}

int main(int argc, char **argv)
{
    if (!gen_args(argc, argv, 0x6E74707561646D00ull))
        return 2;
    FILE *out = gen_open_vectors(argv[1]);
    if (!out)
        return 1;
    for (unsigned r = 0; r < ROWS; r++) {
        int dec = (int)rnd(2), wild = rnd(4) == 0;
        fprintf(out, "%08X\n", (unsigned)dec);
        for (unsigned n = 0; n < LANES; n++) {
            uint32_t k[NTPU_ADAM_CONSTS];
            float lr = ntpu_f32_from_bits(range(110, 124, 0)), wd = ntpu_f32_from_bits(range(100, 124, 0));
            float b1 = 1.0f - ntpu_f32_from_bits(range(115, 124, 0)),
                  b2 = 1.0f - ntpu_f32_from_bits(range(105, 118, 0));
            k[NTPU_ADAM_K_LR] = ntpu_f32_bits(lr);
            k[NTPU_ADAM_K_WD] = ntpu_f32_bits(dec ? 1.0f - lr * wd : wd);
            k[NTPU_ADAM_K_B1] = ntpu_f32_bits(b1);
            k[NTPU_ADAM_K_1MB1] = ntpu_f32_bits(1.0f - b1);
            k[NTPU_ADAM_K_B2] = ntpu_f32_bits(b2);
            k[NTPU_ADAM_K_1MB2] = ntpu_f32_bits(1.0f - b2);
            k[NTPU_ADAM_K_C1] = ntpu_f32_bits(1.0f - powf(b1, (float)(1 + rnd(50))));
            k[NTPU_ADAM_K_C2] = ntpu_f32_bits(1.0f - powf(b2, (float)(1 + rnd(50))));
            k[NTPU_ADAM_K_EPS] = range(90, 110, 0);
            uint32_t g = range(100, 127, 1), m = range(100, 125, 1), p = range(110, 128, 1), v = range(80, 120, 0);
            if (rnd(10) == 0)
                g = 0;
            if (rnd(10) == 0)
                m = v = 0; /* the first step */
            if (wild) {    /* any operand may be anything */
                switch (rnd(6)) {
                case 0: g = any(); break;
                case 1: m = any(); break;
                case 2: p = any(); break;
                case 3: v = any(); break;
                default: k[rnd(NTPU_ADAM_CONSTS)] = any();
                }
            }
            uint32_t ep = p, em = m, ev = v;
            ntpu_adam_f32(&ep, g, &em, &ev, k, dec);
            for (unsigned i = 0; i < NTPU_ADAM_CONSTS; i++)
                fprintf(out, "%08X\n", k[i]);
            fprintf(out, "%08X\n%08X\n%08X\n%08X\n%08X\n%08X\n%08X\n", g, m, p, v, ep, em, ev);
        }
    }
    return gen_close_vectors(out, argv[1], ROWS);
}
