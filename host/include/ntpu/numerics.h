/* SPDX-License-Identifier: Apache-2.0 */
/* nanoTPU numerics: the arithmetic the device performs, bit for bit.
 * docs/numerics.md states it in words; sim/ref/numerics.c is the implementation
 * every backend is checked against.
 */
#ifndef NTPU_NUMERICS_H
#define NTPU_NUMERICS_H

#include <stdint.h>

#include "ntpu/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTPU_F32_CANONICAL_NAN 0x7FC00000u /* the only NaN the device produces */

/* fp32 bits -> bf16 bits, round to nearest, ties to even. Subnormal inputs
 * become zero of the same sign; overflow rounds to Inf; NaN stays NaN (sign and
 * top payload bits kept, quiet bit set). */
NTPU_API uint16_t ntpu_bf16_from_f32_bits(uint32_t f);
NTPU_API uint16_t ntpu_bf16_from_f32(float f);

/* bf16 bits -> fp32 value, exact (plain widening; no flushing). */
NTPU_API float ntpu_bf16_to_f32(uint16_t b);

/* One bf16 multiply-accumulate step of a PE, on bit patterns:
 * returns round_rne(acc + a*b) as fp32 bits, where subnormal a, b and acc read
 * as zero of their sign, the product is exact (or Inf on overflow, signed zero
 * when below the normal range), a subnormal sum is flushed to zero of its sign,
 * and any NaN result is NTPU_F32_CANONICAL_NAN. */
NTPU_API uint32_t ntpu_mac_bf16(uint32_t acc, uint16_t a, uint16_t b);

/* The fp32 addition of the PE and of the vector unit (the add of
 * ntpu_mac_bf16 alone), on bit patterns: round_rne(a + b), where subnormal a
 * and b read as zero of their sign, a subnormal sum is flushed to zero of its
 * sign, and any NaN result is NTPU_F32_CANONICAL_NAN. */
NTPU_API uint32_t ntpu_f32_add(uint32_t a, uint32_t b);

/* The fp32 multiplication of the vector unit (OPTIM), on bit patterns: a
 * subnormal a or b reads as zero of its sign; the exact product is rounded to
 * a 24-bit significand (RNE) with unbounded exponent, then a result below
 * 2^-126 in magnitude is flushed to zero of its sign and one above the fp32
 * range is +-Inf; Inf * 0 and any NaN give NTPU_F32_CANONICAL_NAN. */
NTPU_API uint32_t ntpu_f32_mul(uint32_t a, uint32_t b);

/* One element of OPTIM (docs/isa.md), on fp32 bit patterns, with the device's
 * ntpu_f32_add and ntpu_f32_mul, x - y being x + (y with its sign flipped):
 *   t = g + wd * p
 *   s == NULL (SGD):   p = p - lr * t
 *   s != NULL (momentum): s = mu * s + t;  p = p - lr * s
 * the expression order of ntpu_optim_update (optim.h). */
NTPU_API void ntpu_optim_f32(uint32_t *p, uint32_t g, uint32_t *s, uint32_t lr, uint32_t wd, uint32_t mu);

/* The fp32 division of the vector unit (OPTIM ADAM), on bit patterns, with
 * the conventions of ntpu_f32_mul: subnormal a or b reads as zero of its sign;
 * the exact quotient is rounded to 24 bits (RNE) with unbounded exponent, then
 * flushed to zero of its sign below 2^-126 or made +-Inf above the range;
 * x / 0 = +-Inf for x != 0, 0 / 0, Inf / Inf and any NaN give
 * NTPU_F32_CANONICAL_NAN. */
NTPU_API uint32_t ntpu_f32_div(uint32_t a, uint32_t b);

/* The fp32 square root of the vector unit, on bit patterns: a subnormal reads
 * as zero of its sign; sqrt(+-0) = +-0, sqrt(+Inf) = +Inf, the exact root
 * rounded to nearest even otherwise; a NaN or anything below zero (-Inf
 * included) gives NTPU_F32_CANONICAL_NAN. */
NTPU_API uint32_t ntpu_f32_sqrt(uint32_t a);

/* The per-lane constants of OPTIM ADAM, one ACC row each at aux + index
 * (docs/isa.md, "Version 1.4"): the host computes them in fp32 exactly as
 * ntpu_optim_update does. */
enum {
    NTPU_ADAM_K_LR = 0,   /* lr (after the schedule) */
    NTPU_ADAM_K_WD = 1,   /* Adam: weight decay wd; AdamW (decoupled): 1 - lr * wd */
    NTPU_ADAM_K_B1 = 2,   /* beta1 */
    NTPU_ADAM_K_1MB1 = 3, /* 1 - beta1 */
    NTPU_ADAM_K_B2 = 4,   /* beta2 */
    NTPU_ADAM_K_1MB2 = 5, /* 1 - beta2 */
    NTPU_ADAM_K_C1 = 6,   /* 1 - beta1^(t+1) */
    NTPU_ADAM_K_C2 = 7,   /* 1 - beta2^(t+1) */
    NTPU_ADAM_K_EPS = 8,  /* eps */
    NTPU_ADAM_CONSTS = 9
};

/* One element of OPTIM ADAM, on fp32 bit patterns, with the device's
 * ntpu_f32_add / _mul / _div / _sqrt, one rounding each, in the order of
 * ntpu_optim_update (x - y is x + (y with its sign flipped)):
 *   gi = decoupled ? g : g + k[WD] * p;   decoupled (AdamW): p = p * k[WD] (= 1 - lr*wd)
 *   m = b1 * m + (1 - b1) * gi;        v = b2 * v + ((1 - b2) * gi) * gi
 *   p = p - (lr * (m / c1)) / (sqrt(v / c2) + eps)
 * k: the NTPU_ADAM_CONSTS constants, indexed by NTPU_ADAM_K_*. */
NTPU_API void ntpu_adam_f32(uint32_t *p, uint32_t g, uint32_t *m, uint32_t *v, const uint32_t k[NTPU_ADAM_CONSTS],
                            int decoupled);

/* ReLU of the vector unit on fp32 bits: +0 if x's sign bit is set and x is not
 * NaN (so -0 and -Inf give +0), else x unchanged (NaN keeps its bits, a
 * positive subnormal is not flushed). */
NTPU_API uint32_t ntpu_relu_f32(uint32_t x);

/* One int8 multiply-accumulate step: acc + a*b with two's-complement wrap. */
NTPU_API int32_t ntpu_mac_int8(int32_t acc, int8_t a, int8_t b);

/* Requantization int32 -> int8 (the gemmlowp/TFLite scheme):
 *   y = round_half_away(x * multiplier / 2^31)   (saturating when x = multiplier = INT32_MIN)
 *   y = round_half_away(y / 2^shift)             (0 <= shift <= 31)
 *   y = clamp(y + zero_point, -128, 127)
 * multiplier is a Q31 fixed-point number in [2^30, 2^31) for a normalized scale. */
NTPU_API int8_t ntpu_requantize(int32_t x, int32_t multiplier, int shift, int32_t zero_point);

/* Splits a real scale in (0, 1) into the Q31 multiplier and right shift used by
 * ntpu_requantize. Returns 0, or -1 if scale is outside (0, 1). */
NTPU_API int ntpu_quantize_multiplier(double scale, int32_t *multiplier, int *shift);

#ifdef __cplusplus
}
#endif

#endif
