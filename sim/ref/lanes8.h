/* SPDX-License-Identifier: Apache-2.0 */
/* The device's vector-unit arithmetic on eight lanes at a time, with GCC
 * vector types (SSE2 pairs, or AVX2 in a function compiled for it): each
 * helper does the steps of its scalar twin in numerics.c lane by lane, the
 * branches as masks, so the bits are the same. Internal to the golden model. */
#ifndef NTPU_LANES8_H
#define NTPU_LANES8_H

#include <stdint.h>
#include <string.h>

#include "ntpu/numerics.h"

/* Helpers are inlined into the functions that pick the instruction set. */
#define LANES8_INLINE static inline __attribute__((always_inline))

#ifdef __GNUC__
#define NTPU_LANES8 1
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));

/* Lane-by-lane steps as macros, and the helpers below take vectors by
 * pointer: a 32-byte vector passed by value draws GCC's ABI note even inlined.
 * A cast between two vector types of one size keeps the bits. */
#define FLUSH(x) ((x) & ((u32x8)(((x)&0x7F800000u) != 0u) | 0x80000000u)) /* subnormal -> zero of its sign */
#define IS_NAN(x) ((u32x8)((i32x8)((x)&0x7FFFFFFFu) > 0x7F800000))        /* compared signed: below 2^31 */
#define SELECT(m, a, b) (((a) & (m)) | ((b) & ~(m)))

LANES8_INLINE void load_bf16(u32x8 *x, const uint16_t *p)
{
    u16x8 h;
    memcpy(&h, p, sizeof h);
    *x = __builtin_convertvector(h, u32x8) << 16;
}

LANES8_INLINE void store_u16(uint16_t *p, const u32x8 *x)
{
    u16x8 h = __builtin_convertvector(*x, u16x8);
    memcpy(p, &h, sizeof h);
}

/* ntpu_f32_add on eight lanes: its steps exactly (flush, IEEE add, flush, canonical NaN). */
LANES8_INLINE void fadd8(u32x8 *s, const u32x8 *b)
{
    u32x8 a = FLUSH(*s), c = FLUSH(*b);
    u32x8 r = (u32x8)((f32x8)a + (f32x8)c);
    r = FLUSH(r);
    *s = SELECT(IS_NAN(r), (u32x8){0} + NTPU_F32_CANONICAL_NAN, r);
}

/* ntpu_f32_mul on eight lanes: IEEE's product of the flushed operands is the
 * device's unless it is NaN or at most 2^-126 without being 0 (where IEEE keeps
 * subnormals or rounds up to 2^-126 from below); those lanes take the scalar. */
LANES8_INLINE void fmul8(u32x8 *p, const u32x8 *a, const u32x8 *b)
{
    u32x8 fa = FLUSH(*a), fb = FLUSH(*b);
    u32x8 r = (u32x8)((f32x8)fa * (f32x8)fb);
    u32x8 odd = (u32x8)(((r & 0x7FFFFFFFu) - 1u) < 0x00800000u) | IS_NAN(r);
    for (unsigned l = 0; l < 8; l++)
        if (odd[l])
            r[l] = ntpu_f32_mul((*a)[l], (*b)[l]);
    *p = r;
}

/* ntpu_bf16_from_f32_bits on eight lanes: its steps, the branches as masks. */
LANES8_INLINE void bf16_round8(u32x8 *h, const u32x8 *x)
{
    u32x8 quiet = (*x >> 16) | 0x0040u, f = FLUSH(*x);
    u32x8 r = (f + 0x7FFFu + ((f >> 16) & 1u)) >> 16;
    *h = SELECT(IS_NAN(*x), quiet, r);
}

/* ntpu_relu_f32 on eight lanes: +0 where the sign is set and the lane is not NaN. */
LANES8_INLINE void relu8(u32x8 *x)
{
    *x &= ~((u32x8)((i32x8)*x < 0) & ~IS_NAN(*x));
}

/* ntpu_bf16_positive on eight bf16 lanes (in the low half of each), as a mask. */
LANES8_INLINE void bf16_positive8(u32x8 *mask, const u32x8 *m)
{
    *mask = (u32x8)((*m & 0x8000u) == 0u) & (u32x8)((*m & 0x7F80u) != 0u) & (u32x8)((i32x8)(*m & 0x7FFFu) <= 0x7F80);
}

#endif

#endif
