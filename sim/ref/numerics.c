/* SPDX-License-Identifier: Apache-2.0 */
/* The device's arithmetic, bit for bit (see docs/numerics.md). Works on bit
 * patterns so that no compiler or FPU mode can change a result: the only
 * floating-point operations are one fp32 multiply and one fp32 add, both exact
 * IEEE round-to-nearest-even on every platform we build for, with flushing and
 * NaN canonicalization done explicitly around them. */
#include "ntpu/numerics.h"

#include <math.h>
#include <string.h>

#include "lanes8.h"
#include "numerics_internal.h"

static int is_nan_bits(uint32_t u)
{
    return (u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu);
}

/* Subnormal -> zero of the same sign; everything else unchanged. */
static uint32_t flush_subnormal(uint32_t u)
{
    return (u & 0x7F800000u) == 0 ? (u & 0x80000000u) : u;
}

uint16_t ntpu_bf16_from_f32_bits(uint32_t f)
{
    if (is_nan_bits(f))
        return (uint16_t)((f >> 16) | 0x0040u);
    f = flush_subnormal(f);
    /* Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even;
     * a carry out of the fraction bumps the exponent, up to Inf. */
    uint32_t lsb = (f >> 16) & 1u;
    return (uint16_t)((f + 0x7FFFu + lsb) >> 16);
}

uint16_t ntpu_bf16_from_f32(float f)
{
    return ntpu_bf16_from_f32_bits(ntpu_f32_bits(f));
}

#ifdef __GNUC__
/* Four lanes: one SSE register, which every x86-64 has (wider vectors' compares
 * are split lane by lane there). */
typedef uint32_t u32x4 __attribute__((vector_size(16)));
typedef int32_t i32x4 __attribute__((vector_size(16)));
typedef uint16_t u16x4 __attribute__((vector_size(8)));
#endif

#if defined(NTPU_LANES8) && defined(__x86_64__)
/* Eight lanes at a time where the CPU has AVX2 (lanes8.h's rounding, the same
 * steps); returns how many values it did. */
__attribute__((target("avx2"))) static size_t bf16_row_avx2(uint16_t *dst, const uint8_t *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        u32x8 f, h;
        memcpy(&f, s + 4 * i, sizeof f);
        bf16_round8(&h, &f);
        store_u16(dst + i, &h);
    }
    return i;
}

/* ntpu_bf16_from_f32_groups when lanes is a multiple of eight: one call for
 * many groups, so the constants are set up once, not once per group. */
__attribute__((target("avx2"))) static void bf16_groups_avx2(uint16_t *dst, size_t dst_stride, const uint8_t *s,
                                                             size_t src_stride, size_t groups, size_t lanes)
{
    for (size_t g = 0; g < groups; g++, dst += dst_stride, s += 4 * src_stride)
        for (size_t i = 0; i < lanes; i += 8) {
            u32x8 f, h;
            memcpy(&f, s + 4 * i, sizeof f);
            bf16_round8(&h, &f);
            store_u16(dst + i, &h);
        }
}

typedef uint32_t u32x16 __attribute__((vector_size(64)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
typedef uint16_t u16x16 __attribute__((vector_size(32)));
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

/* Groups of eight lanes side by side in src (src_stride 8, as a row of an
 * MLP's weights or inputs holds its k-tiles' or output tiles' rows), two at a
 * time in one AVX-512 register: bf16_round8's steps on sixteen lanes, each
 * half stored to its group's place. Returns the groups it did. */
AVX512_TARGET static size_t bf16_pairs_avx512(uint16_t *dst, size_t dst_stride, const uint8_t *s, size_t groups)
{
    size_t g = 0;
    for (; g + 2 <= groups; g += 2, dst += 2 * dst_stride, s += 64) {
        u32x16 x;
        memcpy(&x, s, sizeof x);
        const u32x16 nan = (u32x16)((i32x16)(x & 0x7FFFFFFFu) > 0x7F800000);
        const u32x16 f = x & ((u32x16)((x & 0x7F800000u) != 0u) | 0x80000000u); /* subnormal -> zero of its sign */
        const u32x16 r = (f + 0x7FFFu + ((f >> 16) & 1u)) >> 16, quiet = (x >> 16) | 0x0040u;
        const u16x16 h = __builtin_convertvector((quiet & nan) | (r & ~nan), u16x16);
        memcpy(dst, &h, 16);
        memcpy(dst + dst_stride, (const uint8_t *)&h + 16, 16);
    }
    return g;
}
#endif

void ntpu_bf16_from_f32_groups(uint16_t *dst, size_t dst_stride, const void *src, size_t src_stride, size_t groups,
                               size_t lanes)
{
#if defined(NTPU_LANES8) && defined(__x86_64__)
    if (lanes == 8 && src_stride == 8 && groups >= 2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
        const size_t done = bf16_pairs_avx512(dst, dst_stride, src, groups);
        dst += done * dst_stride;
        src = (const uint8_t *)src + done * 32;
        groups -= done;
    }
    if (lanes % 8 == 0 && __builtin_cpu_supports("avx2")) {
        bf16_groups_avx2(dst, dst_stride, src, src_stride, groups, lanes);
        return;
    }
#endif
    const uint8_t *s = src;
    for (size_t g = 0; g < groups; g++)
        ntpu_bf16_from_f32_row(dst + g * dst_stride, s + 4 * g * src_stride, lanes);
}

void ntpu_bf16_from_f32_row(uint16_t *dst, const void *src, size_t n)
{
    const uint8_t *s = src;
    size_t i = 0;
#if defined(NTPU_LANES8) && defined(__x86_64__)
    if (n >= 8 && __builtin_cpu_supports("avx2"))
        i = bf16_row_avx2(dst, s, n);
#endif
#ifdef __GNUC__
    /* ntpu_bf16_from_f32_bits on four lanes: the same steps, branches as
     * masks; compares on signed lanes (what SSE2 has; the values compared are
     * below 2^31). */
    for (; i + 4 <= n; i += 4) {
        u32x4 f;
        memcpy(&f, s + 4 * i, sizeof f);
        u32x4 nan = (u32x4)((i32x4)(f & 0x7FFFFFFFu) > 0x7F800000);
        u32x4 sub = (u32x4)((i32x4)(f & 0x7F800000u) == 0);
        u32x4 quiet = (f >> 16) | 0x0040u;
        f &= ~sub | 0x80000000u;
        u32x4 r = (f + 0x7FFFu + ((f >> 16) & 1u)) >> 16;
        u16x4 h = __builtin_convertvector((r & ~nan) | (quiet & nan), u16x4);
        memcpy(dst + i, &h, sizeof h);
    }
#endif
    for (; i < n; i++) {
        uint32_t f;
        memcpy(&f, s + 4 * i, sizeof f);
        dst[i] = ntpu_bf16_from_f32_bits(f);
    }
}

float ntpu_bf16_to_f32(uint16_t b)
{
    return ntpu_f32_from_bits((uint32_t)b << 16);
}

/* The one definition of the device's arithmetic: the public functions and the
 * golden model's row kernels below all inline these, so the MATMUL hot loop
 * pays no call per MAC and there is still a single copy to get right. */

/* The fp32 adder of a PE, also the vector unit's: subnormal operands read as
 * zero, one RNE rounding, a subnormal sum flushed, NaN made canonical. */
static inline uint32_t add_f32(uint32_t a, uint32_t b)
{
    float s = ntpu_f32_from_bits(flush_subnormal(a)) + ntpu_f32_from_bits(flush_subnormal(b));
    uint32_t r = flush_subnormal(ntpu_f32_bits(s));
    return is_nan_bits(r) ? NTPU_F32_CANONICAL_NAN : r;
}

static inline uint32_t mac_bf16(uint32_t acc, uint16_t a, uint16_t b)
{
    float fa = ntpu_f32_from_bits(flush_subnormal((uint32_t)a << 16));
    float fb = ntpu_f32_from_bits(flush_subnormal((uint32_t)b << 16));
    /* Two 8-bit significands give a 16-bit product: exact in fp32 unless the
     * exponent leaves the normal range, where IEEE gives Inf or a subnormal
     * (too small to round up to a normal, so the adder's flush of it is exact). */
    return add_f32(acc, ntpu_f32_bits(fa * fb));
}

static inline int32_t mac_int8(int32_t acc, int8_t a, int8_t b)
{
    return (int32_t)((uint32_t)acc + (uint32_t)((int32_t)a * (int32_t)b));
}

uint32_t ntpu_mac_bf16(uint32_t acc, uint16_t a, uint16_t b)
{
    return mac_bf16(acc, a, b);
}

uint32_t ntpu_f32_add(uint32_t a, uint32_t b)
{
    return add_f32(a, b);
}

/* The vector unit's fp32 multiplier. The product of two fp32 values is exact
 * in double (48 significant bits), so from 2^-126 up converting it to float is
 * the one RNE rounding. Below, the device rounds to 24 bits and then flushes:
 * only an exact product at or above the midpoint between 2^-126 and the
 * 24-bit value below it (2^-126 - 2^-150) survives, rounded up to 2^-126. */
uint32_t ntpu_f32_mul(uint32_t a, uint32_t b)
{
    double p = (double)ntpu_f32_from_bits(flush_subnormal(a)) * (double)ntpu_f32_from_bits(flush_subnormal(b));
    if (p != p)
        return NTPU_F32_CANONICAL_NAN;
    if (fabs(p) < 0x1p-126)
        return ((a ^ b) & 0x80000000u) | (fabs(p) >= 0x1p-126 - 0x1p-151 ? 0x00800000u : 0u);
    return ntpu_f32_bits((float)p);
}

void ntpu_optim_f32(uint32_t *p, uint32_t g, uint32_t *s, uint32_t lr, uint32_t wd, uint32_t mu)
{
    uint32_t t = add_f32(g, ntpu_f32_mul(wd, *p));
    if (s) {
        *s = add_f32(ntpu_f32_mul(mu, *s), t);
        t = *s;
    }
    *p = add_f32(*p, ntpu_f32_mul(lr, t) ^ 0x80000000u);
}

/* Below 2^-126 the device rounds to 24 bits and then flushes: only a value at
 * or above the midpoint between 2^-126 and the 24-bit value below it survives,
 * as 2^-126 (the midpoint itself rounds to even, up). `q` is the double nearest
 * the exact result, which is on the same side of that midpoint: a quotient of
 * two 24-bit values is either a 24-bit midpoint or further from it than half a
 * double ulp (the reason rounding through double is exact for / and sqrt). */
static uint32_t small_f32(double q, uint32_t sign)
{
    return sign | (fabs(q) >= 0x1p-126 - 0x1p-151 ? 0x00800000u : 0u);
}

/* The vector unit's fp32 divider (OPTIM ADAM). The quotient rounded to double
 * and then to float is the quotient rounded once to float (53 >= 2 * 24 + 2). */
uint32_t ntpu_f32_div(uint32_t a, uint32_t b)
{
    double q = (double)ntpu_f32_from_bits(flush_subnormal(a)) / (double)ntpu_f32_from_bits(flush_subnormal(b));
    if (q != q)
        return NTPU_F32_CANONICAL_NAN;
    if (fabs(q) < 0x1p-126)
        return small_f32(q, (a ^ b) & 0x80000000u);
    return ntpu_f32_bits((float)q);
}

/* The vector unit's fp32 square root. The root of a normal fp32 value is in
 * [2^-63, 2^64): never below the normal range, never rounded to Inf. */
uint32_t ntpu_f32_sqrt(uint32_t a)
{
    a = flush_subnormal(a);
    if (is_nan_bits(a) || (a > 0x80000000u))
        return NTPU_F32_CANONICAL_NAN; /* NaN, or below zero (-0 is 0x80000000) */
    return ntpu_f32_bits((float)sqrt((double)ntpu_f32_from_bits(a)));
}

void ntpu_adam_f32(uint32_t *p, uint32_t g, uint32_t *m, uint32_t *v, const uint32_t k[NTPU_ADAM_CONSTS], int decoupled)
{
    uint32_t gi = g;
    if (decoupled)
        *p = ntpu_f32_mul(*p, k[NTPU_ADAM_K_WD]); /* 1 - lr * wd */
    else
        gi = add_f32(g, ntpu_f32_mul(k[NTPU_ADAM_K_WD], *p));
    *m = add_f32(ntpu_f32_mul(k[NTPU_ADAM_K_B1], *m), ntpu_f32_mul(k[NTPU_ADAM_K_1MB1], gi));
    *v = add_f32(ntpu_f32_mul(k[NTPU_ADAM_K_B2], *v), ntpu_f32_mul(ntpu_f32_mul(k[NTPU_ADAM_K_1MB2], gi), gi));
    uint32_t num = ntpu_f32_mul(k[NTPU_ADAM_K_LR], ntpu_f32_div(*m, k[NTPU_ADAM_K_C1]));
    uint32_t den = add_f32(ntpu_f32_sqrt(ntpu_f32_div(*v, k[NTPU_ADAM_K_C2])), k[NTPU_ADAM_K_EPS]);
    *p = add_f32(*p, ntpu_f32_div(num, den) ^ 0x80000000u);
}

uint32_t ntpu_relu_f32(uint32_t x)
{
    return (x & 0x80000000u) && !is_nan_bits(x) ? 0u : x;
}

int32_t ntpu_mac_int8(int32_t acc, int8_t a, int8_t b)
{
    return mac_int8(acc, a, b);
}

/* j inner, so each step reads one contiguous weight row and the n chains
 * advance together; every chain still sees i ascending, its array order. */
void ntpu_mac_bf16_row(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const uint16_t ai = a[i];
        const uint16_t *wi = w + (size_t)i * n;
        for (unsigned j = 0; j < n; j++)
            acc[j] = mac_bf16(acc[j], ai, wi[j]);
    }
}

void ntpu_mac_int8_row(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const int8_t ai = (int8_t)(a[i] & 0xFFu);
        const uint16_t *wi = w + (size_t)i * n;
        for (unsigned j = 0; j < n; j++)
            acc[j] = (uint32_t)mac_int8((int32_t)acc[j], ai, (int8_t)(wi[j] & 0xFFu));
    }
}

#if defined(NTPU_LANES8) && defined(__x86_64__)
/* ntpu_f32_add_row eight lanes at a time where the CPU has AVX2; returns how many it did. */
__attribute__((target("avx2"))) static unsigned add_row_avx2(uint32_t *acc, const uint32_t *x, unsigned n)
{
    unsigned j = 0;
    for (; j + 8 <= n; j += 8) {
        u32x8 a, b;
        memcpy(&a, acc + j, sizeof a);
        memcpy(&b, x + j, sizeof b);
        fadd8(&a, &b);
        memcpy(acc + j, &a, sizeof a);
    }
    return j;
}
#endif

void ntpu_f32_add_row(uint32_t *acc, const uint32_t *x, unsigned n)
{
    unsigned j = 0;
#if defined(NTPU_LANES8) && defined(__x86_64__)
    if (n >= 8 && __builtin_cpu_supports("avx2"))
        j = add_row_avx2(acc, x, n);
#endif
    for (; j < n; j++)
        acc[j] = add_f32(acc[j], x[j]);
}

int ntpu_bf16_positive(uint16_t m)
{
    return !(m & 0x8000u) && (m & 0x7F80u) && (m & 0x7FFFu) <= 0x7F80u;
}

/* round(x * m / 2^31), halves away from zero; the one overflowing case saturates. */
static int32_t doubling_high_mul(int32_t x, int32_t m)
{
    if (x == INT32_MIN && m == INT32_MIN)
        return INT32_MAX;
    int64_t prod = (int64_t)x * (int64_t)m;
    int64_t half = (int64_t)1 << 30;
    int64_t q = prod >= 0 ? (prod + half) >> 31 : -((-prod + half) >> 31);
    return (int32_t)q;
}

/* round(x / 2^shift), halves away from zero. */
static int32_t shift_round(int32_t x, int shift)
{
    if (shift == 0)
        return x;
    int64_t v = x;
    int64_t half = (int64_t)1 << (shift - 1);
    return (int32_t)(v >= 0 ? (v + half) >> shift : -((-v + half) >> shift));
}

int8_t ntpu_requantize(int32_t x, int32_t multiplier, int shift, int32_t zero_point)
{
    if (shift < 0)
        shift = 0;
    if (shift > 31)
        shift = 31;
    int64_t y = (int64_t)shift_round(doubling_high_mul(x, multiplier), shift) + zero_point;
    if (y < -128)
        y = -128;
    if (y > 127)
        y = 127;
    return (int8_t)y;
}

int ntpu_quantize_multiplier(double scale, int32_t *multiplier, int *shift)
{
    if (!(scale > 0.0 && scale < 1.0))
        return -1;
    int exp;
    double frac = frexp(scale, &exp); /* scale = frac * 2^exp, frac in [0.5, 1) */
    int64_t q = llround(frac * 2147483648.0);
    if (q == ((int64_t)1 << 31)) { /* frac rounded up to 1.0 */
        q >>= 1;
        exp++;
    }
    if (exp > 0) { /* scale within 2^-32 of 1: no shift below 0, so take the largest M */
        *multiplier = INT32_MAX;
        *shift = 0;
        return 0;
    }
    if (-exp > 31) { /* below what a 31-bit shift reaches: the result is 0 */
        *multiplier = 0;
        *shift = 0;
        return 0;
    }
    *multiplier = (int32_t)q;
    *shift = -exp;
    return 0;
}
