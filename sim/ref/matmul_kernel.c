/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL's arithmetic over many rows at once: fast, and bit-exact with the
 * scalar MACs of numerics.c.
 *
 * The device's bf16 chain (docs/numerics.md) differs from plain IEEE fp32
 * arithmetic only where a subnormal appears (it reads and writes them as zero)
 * and in NaN payloads. If every term of a chain is a multiple of 2^-126 (an
 * accumulator that is zero or has a biased exponent >= 24; products whose two
 * bf16 biased exponents sum to >= 142, as two 8-bit significands put the
 * product's last bit at 2^(Ea+Eb-268)), then every exact sum is one too, and
 * so is its rounding, which only coarsens the grid: no subnormal can arise,
 * and IEEE multiply and add give the device's bits. Blocks of rows that fail
 * this test (none in ordinary training data) take the scalar path. A NaN is
 * made canonical once at the end: once NaN, a chain stays NaN. The chains
 * fuse each multiply and add where no factor is big (REF_BIG_FIELD in
 * ref_chain.h): the product is then exact, so one rounding is the same.
 *
 * The speed comes from doing a block of rows together: their chains are
 * independent, so the adders never wait for one another, and the columns of a
 * row map onto SIMD lanes. Each chain still sees k (the array row i) ascending. */
#include <stdlib.h>
#include <string.h>
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h> /* declares the FMA builtin that chain_fma uses */
#endif

#include "ntpu/numerics.h"
#include "numerics_internal.h"
#include "matmul_dot.h"
#include "ref_chain.h"

#define MAX_N 64u

/* GCC/Clang vector types: eight lanes, which the compiler maps onto whatever
 * SIMD the target has (two SSE registers, or one AVX register). */
typedef float f32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_FMA_VARIANT 1 /* the chains built for AVX2 and FMA, chosen at run time */
#endif

/* Eight bf16 lanes as fp32 bits, a subnormal read as zero of its sign; and
 * whether any nonzero one has an exponent field below `thr` + 1. */
#define LOAD_BF16(dst_bits, bad, src, thr)                   \
    do {                                                     \
        u16x8 h_;                                            \
        memcpy(&h_, (src), sizeof h_);                       \
        u32x8 u_ = __builtin_convertvector(h_, u32x8) << 16; \
        u32x8 e_ = (u_ >> 23) & 0xFFu;                       \
        (bad) |= (u32x8)((e_ - 1u) < (thr));                 \
        (dst_bits) = u_ & ((u32x8)(e_ != 0u) | 0x80000000u); \
    } while (0)

typedef uint16_t u16x16 __attribute__((vector_size(32)));

/* bf16 lanes (count a multiple of 16) to flushed fp32 in af; 0 when some
 * nonzero one has an exponent field below thr + 1 (its products could leave
 * the 2^-126 grid); *big set when a finite lane is big (REF_BIG_FIELD). The
 * checks run on the bf16 bits, sixteen lanes at a time: field e bad when
 * 1 <= e <= thr, that is (e << 7) - 0x80 < thr << 7 in 16 bits, where e = 0
 * wraps to 0xFF80 and never counts; thr above 256 marks every nonzero field,
 * as 256 does. Widened by interleaving with zeros: the bf16 bits become the
 * high half of each fp32. */
static inline __attribute__((always_inline)) int convert_a(float *af, const uint16_t *a, size_t count, uint32_t thr_exp,
                                                           uint32_t *big)
{
    const u16x16 zero = {0}, thr = zero + (uint16_t)((thr_exp < 256u ? thr_exp : 256u) << 7);
    u16x16 bad = {0}, huge = {0};
    for (size_t k = 0; k < count; k += 16) {
        u16x16 v;
        memcpy(&v, a + k, sizeof v);
        const u16x16 e = v & 0x7F80u;
        bad |= (u16x16)((u16x16)(e - 0x80u) < thr);
        huge |= (u16x16)((u16x16)(e - (REF_BIG_FIELD << 7)) < ((255u - REF_BIG_FIELD) << 7)); /* not inf or NaN */
        v &= ~((u16x16)(e == 0u) & 0x7FFFu); /* a subnormal reads as zero of its sign */
        const u16x16 lo = __builtin_shufflevector(zero, v, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        const u16x16 hi = __builtin_shufflevector(zero, v, 0, 24, 1, 25, 2, 26, 3, 27, 4, 28, 5, 29, 6, 30, 7, 31);
        memcpy(af + k, &lo, sizeof lo);
        memcpy(af + k + 8, &hi, sizeof hi);
    }
    uint64_t w[4], h[4];
    memcpy(w, &bad, sizeof w);
    memcpy(h, &huge, sizeof h);
    *big |= (h[0] | h[1] | h[2] | h[3]) != 0;
    return (w[0] | w[1] | w[2] | w[3]) == 0;
}

/* Columns q .. q + 7 of `block` accumulator rows (row r at acc + r * n) into
 * registers, and back with a NaN made canonical (docs/numerics.md). */
static inline __attribute__((always_inline)) void acc_load(f32x8 *c, const uint32_t *acc, unsigned n, unsigned q,
                                                           unsigned block)
{
#pragma GCC unroll 8
    for (unsigned r = 0; r < block; r++)
        memcpy(&c[r], acc + (size_t)r * n + q, sizeof c[r]);
}

/* acc_load, or +0.0 in every lane for a chain that starts there (zero). */
static inline __attribute__((always_inline)) void acc_start(f32x8 *c, const uint32_t *acc, unsigned n, unsigned q,
                                                            unsigned block, int zero)
{
    if (!zero) {
        acc_load(c, acc, n, q, block);
        return;
    }
#pragma GCC unroll 8
    for (unsigned r = 0; r < block; r++)
        c[r] = (f32x8){0};
}

/* Rows m .. m1 - 1 of a chain that starts at +0.0, cleared for a path that reads ACC. */
static void acc_clear(uint32_t *acc, size_t m, size_t m1, unsigned n)
{
    memset(acc + m * n, 0, (m1 - m) * n * sizeof *acc);
}

static inline __attribute__((always_inline)) void acc_store(uint32_t *acc, const f32x8 *c, unsigned n, unsigned q,
                                                            unsigned block)
{
#pragma GCC unroll 8
    for (unsigned r = 0; r < block; r++) {
        u32x8 bits = (u32x8)c[r];
        u32x8 nan = (u32x8)(c[r] != c[r]);
        bits = (bits & ~nan) | (NTPU_F32_CANONICAL_NAN & nan);
        memcpy(acc + (size_t)r * n + q, &bits, sizeof bits);
    }
}

/* The chains of `block` rows of acc (block x n) against the flushed tile wf,
 * with a(r, i) = af[r * rs + i * is], for n a multiple of 8. Returns 0 when an
 * accumulator is off the 2^-126 grid, having written nothing. */
static inline __attribute__((always_inline)) int chains(uint32_t *acc, const float *af, size_t rs, size_t is,
                                                        const float *wf, unsigned n, unsigned block)
{
    u32x8 bad = {0};
    for (unsigned k = 0; k < block * n; k += 8) {
        u32x8 c;
        memcpy(&c, acc + k, sizeof c);
        bad |= (u32x8)((c & 0x7FFFFFFFu) != 0u) & (u32x8)(((c >> 23) & 0xFFu) < 24u);
    }
    for (unsigned l = 0; l < 8; l++)
        if (bad[l])
            return 0;
    /* Unrolled over r so that the accumulators live in registers. */
    for (unsigned q = 0; q < n; q += 8) {
        f32x8 c[8];
        acc_load(c, acc, n, q, block);
        for (unsigned i = 0; i < n; i++) {
            f32x8 wv;
            memcpy(&wv, wf + (size_t)i * n + q, sizeof wv);
#pragma GCC unroll 8
            for (unsigned r = 0; r < block; r++)
                c[r] += af[r * rs + i * is] * wv;
        }
        acc_store(acc, c, n, q, block);
    }
    return 1;
}

/* The same with n a constant where it is the common size: then the compiler
 * unrolls the lanes of a row completely. */
static inline __attribute__((always_inline)) int chains_n(uint32_t *acc, const float *af, size_t rs, size_t is,
                                                          const float *wf, unsigned n, unsigned block)
{
    return n == 8    ? chains(acc, af, rs, is, wf, 8, block)
           : n == 16 ? chains(acc, af, rs, is, wf, 16, block)
                     : chains(acc, af, rs, is, wf, n, block);
}

/* Row m of a transposed-A MATMUL (tiles of n x n at a + t * t_stride, row m
 * being column m % n of tile m / n) through the scalar kernel. */
static void scalar_row_t(uint32_t *acc_row, const uint16_t *a, size_t t_stride, const uint16_t *w, unsigned n, size_t m)
{
    uint16_t row[MAX_N];
    const uint16_t *tile = a + (m / n) * t_stride;
    for (unsigned i = 0; i < n; i++)
        row[i] = tile[(size_t)i * n + m % n];
    ntpu_mac_bf16_row(acc_row, row, w, n);
}

/* The whole MATMUL for one block size; `block` rows share the checks. With
 * `transposed`, A comes in n x n tiles t_stride lanes apart, read column by
 * column (MATMUL's TRANSPOSE_A), and rows is a multiple of n. */
static inline __attribute__((always_inline)) void rows_impl(uint32_t *acc, const uint16_t *a, size_t t_stride,
                                                            const uint16_t *w, unsigned n, size_t rows, unsigned block,
                                                            int transposed)
{
    size_t m = 0;
    if (n % 8 == 0) {
        float wf[MAX_N * MAX_N], af[MAX_N * MAX_N];
        u32x8 wmin = {255, 255, 255, 255, 255, 255, 255, 255}, dummy = {0};
        for (unsigned k = 0; k < n * n; k += 8) {
            u32x8 bits;
            LOAD_BF16(bits, dummy, w + k, (u32x8){0});
            memcpy(wf + k, &bits, sizeof bits);
            u32x8 e = (((bits >> 23) & 0xFFu) - 1u) & 0xFFu; /* 0 -> 255: zeros never limit */
            u32x8 lt = (u32x8)(e < wmin);
            wmin = (e & lt) | (wmin & ~lt);
        }
        unsigned w_exp = 255;
        for (unsigned l = 0; l < 8; l++)
            if (wmin[l] + 1u < w_exp)
                w_exp = wmin[l] + 1u;
        /* A product is on the 2^-126 grid when Ea + Ew >= 142: bad when Ea - 1 < 141 - w_exp. */
        const uint32_t thr = w_exp < 141 ? 141u - w_exp : 0u;
        uint32_t big = 0; /* unused: these chains multiply and add apart */
        if (!transposed) {
            for (; m + block <= rows; m += block)
                if (!convert_a(af, a + m * n, (size_t)block * n, thr, &big) ||
                    !chains_n(acc + m * n, af, n, 1, wf, n, block))
                    for (unsigned r = 0; r < block; r++)
                        ntpu_mac_bf16_row(acc + (m + r) * n, a + (m + r) * n, w, n);
        } else {
            /* One tile is n rows: converted once, its columns are the rows. */
            for (; m < rows; m += n) {
                int tile_ok = convert_a(af, a + (m / n) * t_stride, (size_t)n * n, thr, &big);
                for (unsigned r0 = 0; r0 < n; r0 += block)
                    if (!tile_ok || !chains_n(acc + (m + r0) * n, af + r0, 1, n, wf, n, block))
                        for (unsigned r = 0; r < block; r++)
                            scalar_row_t(acc + (m + r0 + r) * n, a, t_stride, w, n, m + r0 + r);
            }
        }
    }
    for (; m < rows; m++)
        if (transposed)
            scalar_row_t(acc + m * n, a, t_stride, w, n, m);
        else
            ntpu_mac_bf16_row(acc + m * n, a + m * n, w, n);
}

#if defined(__GNUC__) && defined(__x86_64__)
/* Eight AVX accumulators, one row each at N = 8; chosen at run time. */
__attribute__((target("avx2"))) static void rows_avx2(uint32_t *acc, const uint16_t *a, size_t t_stride,
                                                      const uint16_t *w, unsigned n, size_t rows, int transposed)
{
    if (transposed)
        rows_impl(acc, a, t_stride, w, n, rows, 8, 1);
    else
        rows_impl(acc, a, 0, w, n, rows, 8, 0);
}
#define HAVE_AVX2_VARIANT 1
#endif

/* Four rows: their 8-lane accumulators fill the 16 SSE registers. */
void ntpu_mac_bf16_rows_generic(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows)
{
    rows_impl(acc, a, 0, w, n, rows, 4, 0);
}

void ntpu_mac_bf16_rows_t_generic(uint32_t *acc, const uint16_t *a, size_t t_stride, const uint16_t *w, unsigned n,
                                  size_t rows)
{
    rows_impl(acc, a, t_stride, w, n, rows, 4, 1);
}

void ntpu_mac_bf16_rows(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows)
{
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2")) {
        rows_avx2(acc, a, 0, w, n, rows, 0);
        return;
    }
#endif
    ntpu_mac_bf16_rows_generic(acc, a, w, n, rows);
}

void ntpu_mac_bf16_rows_t(uint32_t *acc, const uint16_t *a, size_t t_stride, const uint16_t *w, unsigned n, size_t rows)
{
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2")) {
        rows_avx2(acc, a, t_stride, w, n, rows, 1);
        return;
    }
#endif
    ntpu_mac_bf16_rows_t_generic(acc, a, t_stride, w, n, rows);
}

/* ---------------------------------------------------------------- chains
 *
 * A chain of tiles (ref_chain.h) runs block by block: a block's accumulators
 * are loaded once, stay in registers through every tile, and are stored
 * once. The grid argument above holds across tiles (each sum of the chain is
 * a sum of terms on the 2^-126 grid), so a block takes the fast path when its
 * accumulators and every tile's A values pass the checks; else each tile on
 * its own, as the one-tile kernel would (fast or scalar): the same bits. */

/* w (n x n bf16, n a multiple of 8) flushed into wf (a subnormal reads as
 * zero of its sign); returns the least nonzero exponent field (255 when none
 * is). *any_wild: some lane is an inf or a NaN; *any_big: some lane's field
 * is REF_BIG_FIELD or more (an inf or a NaN counts: the caller looks again).
 * Sixteen lanes at a time, on the bf16 bits, as convert_a does. */
static inline __attribute__((always_inline)) unsigned prepare_lanes(const uint16_t *w, float *wf, unsigned n,
                                                                    int *any_wild, int *any_big, int convert)
{
    const u16x16 zero = {0};
    u16x16 dmin = zero - 1u, emax = zero;
    for (size_t k = 0; k < (size_t)n * n; k += 16) { /* n a multiple of 8: n * n of 64 */
        u16x16 v;
        memcpy(&v, w + k, sizeof v);
        const u16x16 e = v & 0x7F80u, d = e - 0x80u; /* field - 1, shifted; a zero field wraps to the top */
        dmin = ((u16x16)(d < dmin) & d) | ((u16x16)(d >= dmin) & dmin);
        emax = ((u16x16)(e > emax) & e) | ((u16x16)(e <= emax) & emax);
        if (!convert)
            continue;
        v &= ~((u16x16)(e == 0u) & 0x7FFFu);
        const u16x16 lo = __builtin_shufflevector(zero, v, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        const u16x16 hi = __builtin_shufflevector(zero, v, 0, 24, 1, 25, 2, 26, 3, 27, 4, 28, 5, 29, 6, 30, 7, 31);
        memcpy(wf + k, &lo, sizeof lo);
        memcpy(wf + k + 8, &hi, sizeof hi);
    }
    unsigned least = 0xFFFFu, most = 0;
    for (unsigned l = 0; l < 16; l++) {
        least = dmin[l] < least ? dmin[l] : least;
        most = emax[l] > most ? emax[l] : most;
    }
    *any_wild = (most >> 7) == 255u;
    *any_big = (most >> 7) >= REF_BIG_FIELD;
    return (least >> 7) + 1u < 255u ? (least >> 7) + 1u : 255u;
}

#ifdef HAVE_AVX2_VARIANT
/* AVX2 has the unsigned compares of 32-bit lanes; SSE2 makes them scalar. */
__attribute__((target("avx2"))) static unsigned prepare_avx2(const uint16_t *w, float *wf, unsigned n, int *any_wild,
                                                             int *any_big)
{
    return prepare_lanes(w, wf, n, any_wild, any_big, 1);
}

/* prepare_lanes' facts alone, with AVX2's unsigned word minimum and maximum
 * (which GCC does not find in the generic form) and SSE4.1's horizontal one. */
__attribute__((target("avx2"))) static unsigned facts_avx2(const uint16_t *w, unsigned n, int *any_wild, int *any_big)
{
    const __m256i field = _mm256_set1_epi16(0x7F80), one = _mm256_set1_epi16(0x80);
    __m256i dmin = _mm256_set1_epi16(-1), emax = _mm256_setzero_si256();
    for (size_t k = 0; k < (size_t)n * n; k += 16) {
        const __m256i e = _mm256_and_si256(_mm256_loadu_si256((const void *)(w + k)), field);
        dmin = _mm256_min_epu16(dmin, _mm256_sub_epi16(e, one)); /* a zero field wraps to the top */
        emax = _mm256_max_epu16(emax, e);
    }
    const __m128i d = _mm_min_epu16(_mm256_castsi256_si128(dmin), _mm256_extracti128_si256(dmin, 1));
    const __m128i x = _mm_max_epu16(_mm256_castsi256_si128(emax), _mm256_extracti128_si256(emax, 1));
    const unsigned least = (unsigned)_mm_cvtsi128_si32(_mm_minpos_epu16(d)) & 0xFFFFu;
    const unsigned most =
        0xFFFFu - ((unsigned)_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(x, _mm_set1_epi16(-1)))) & 0xFFFFu);
    *any_wild = (most >> 7) == 255u;
    *any_big = (most >> 7) >= REF_BIG_FIELD;
    return (least >> 7) + 1u < 255u ? (least >> 7) + 1u : 255u;
}
#endif

static unsigned prepare_any(const uint16_t *w, float *wf, unsigned n, int *any_wild, int *any_big)
{
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2"))
        return wf ? prepare_avx2(w, wf, n, any_wild, any_big) : facts_avx2(w, n, any_wild, any_big);
#endif
    return wf ? prepare_lanes(w, wf, n, any_wild, any_big, 1) : prepare_lanes(w, NULL, n, any_wild, any_big, 0);
}

void ntpu_chain_tile_convert(ntpu_chain_tile *t, unsigned n)
{
    if (t->wf)
        return;
    int any_wild, any_big;
    prepare_any(t->w, t->wf_room, n, &any_wild, &any_big); /* NULL only where prepare found n % 8 == 0, none wild */
    t->wf = t->wf_room;
}

void ntpu_chain_tile_prepare(ntpu_chain_tile *t, float *wf, unsigned n, int convert)
{
    unsigned w_exp = 255; /* the least nonzero exponent field: zeros never limit */
    uint64_t wild = 0;
    int any_wild = 1, any_big = 0;
    t->wf_room = wf;
    if (n % 8 == 0 && !convert) { /* the facts alone, when they need no lane by lane look */
        w_exp = prepare_any(t->w, NULL, n, &any_wild, &any_big);
        if (!any_wild) {
            t->wf = NULL;
            t->w_wild = 0;
            t->w_big = any_big;
            t->a_thr = w_exp < 141 ? 141u - w_exp : 0u;
            return;
        }
    }
    if (n % 8 == 0)
        w_exp = prepare_any(t->w, wf, n, &any_wild, &any_big);
    if (any_wild) /* inf and NaN lanes are not big: the loop below tells */
        any_big = 0;
    for (unsigned i = 0; i < n && any_wild; i++) /* every lane, where vectors do not fit or a row may be wild */
        for (unsigned j = 0; j < n; j++) {
            uint32_t bits = (uint32_t)t->w[i * n + j] << 16, e = (bits >> 23) & 0xFFu;
            if (e == 0)
                bits &= 0x80000000u; /* a subnormal reads as zero of its sign */
            else if (e < w_exp)
                w_exp = e;
            if (e == 255)
                wild |= 1ull << i;
            else if (e >= REF_BIG_FIELD)
                any_big = 1;
            wf[i * n + j] = ntpu_f32_from_bits(bits);
        }
    t->wf = wf;
    t->w_wild = wild;
    t->w_big = any_big;
    /* A product is on the 2^-126 grid when Ea + Ew >= 142. */
    t->a_thr = w_exp < 141 ? 141u - w_exp : 0u;
}

/* Which k (bits 0 .. n-1) have A zero (+-0 once flushed) in every row of a
 * block of af (block x n, row-major). */
static inline __attribute__((always_inline)) uint64_t zero_ks(const float *af, unsigned block, unsigned n)
{
    const u32x8 bit = {1, 2, 4, 8, 16, 32, 64, 128};
    uint64_t nonzero = 0;
    for (unsigned g = 0; g < n; g += 8) {
        u32x8 o = {0};
        for (unsigned r = 0; r < block; r++) {
            u32x8 v;
            memcpy(&v, af + (size_t)r * n + g, sizeof v);
            o |= v;
        }
        u32x8 b = (u32x8)((o & 0x7FFFFFFFu) != 0u) & bit;
        b |= __builtin_shufflevector(b, b, 4, 5, 6, 7, 0, 1, 2, 3);
        b |= __builtin_shufflevector(b, b, 2, 3, 0, 1, 6, 7, 4, 5);
        b |= __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6);
        nonzero |= (uint64_t)b[0] << g;
    }
    return ~nonzero;
}

/* The same for a transposed 8 x 8 tile whose 8 columns are the block's rows:
 * k = i is tile row i. */
static inline __attribute__((always_inline)) uint64_t zero_ks_t8(const float *af)
{
    u32x8 b = {0};
    for (unsigned i = 0; i < 8; i++) {
        u32x8 v;
        memcpy(&v, af + (size_t)i * 8, sizeof v);
        b |= (u32x8)((v & 0x7FFFFFFFu) != 0u) & (1u << i);
    }
    b |= __builtin_shufflevector(b, b, 4, 5, 6, 7, 0, 1, 2, 3);
    b |= __builtin_shufflevector(b, b, 2, 3, 0, 1, 6, 7, 4, 5);
    b |= __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6);
    return ~(uint64_t)b[0];
}

/* Where row m of tile t has its A: the row itself, or with `transposed` the n x n tile holding it. */
static inline const uint16_t *tile_src(const ntpu_chain_tile *t, size_t m, unsigned n)
{
    if (t->locate)
        return t->locate(t, m, n);
    return t->transposed ? t->a + m / n * t->t_stride : t->a + m * n;
}

/* Floats of converted A one block of a chain may hold: every tile's, on the stack. */
#define CHAIN_AF_FLOATS 16384u

/* The 64 lanes at src converted (as convert_a does) into f, with the least
 * exponent field - 1 that convert_a's check compares, `big` and both zero-k
 * masks. */
static inline __attribute__((always_inline)) void block_fill(float *f, ref_a_facts *x, const uint16_t *src)
{
    u32x8 e_min = (u32x8){0} - 1u, big = {0};
    for (unsigned k = 0; k < REF_A_BLOCK_LANES; k += 8) {
        u16x8 h;
        memcpy(&h, src + k, sizeof h);
        u32x8 u = __builtin_convertvector(h, u32x8) << 16;
        u32x8 e = (u >> 23) & 0xFFu, d = e - 1u; /* a zero or subnormal: 2^32 - 1, never below a threshold */
        u32x8 lt = (u32x8)(d < e_min);
        e_min = (d & lt) | (e_min & ~lt);
        big |= (u32x8)(e - REF_BIG_FIELD < 255u - REF_BIG_FIELD);
        u32x8 bits = u & ((u32x8)(e != 0u) | 0x80000000u);
        memcpy(f + k, &bits, sizeof bits);
    }
    x->e_min = e_min[0];
    x->big = big[0] != 0;
    for (unsigned l = 1; l < 8; l++) {
        if (e_min[l] < x->e_min)
            x->e_min = e_min[l];
        x->big |= big[l] != 0;
    }
    x->zero_rows = (uint8_t)zero_ks(f, 8, 8);
    x->zero_cols = (uint8_t)zero_ks_t8(f);
}

/* Block g of the cache, converted now unless it was since UB's last write to its rows. */
static inline __attribute__((always_inline)) const ref_a_facts *cache_block(ref_a_cache *c, size_t g)
{
    ref_a_facts *x = &c->facts[g];
    if (!x->valid) {
        float *f = c->f + g * REF_A_BLOCK_LANES;
        if (c->pairs) /* only where the dot product runs */
            ref_dot_fill(f, c->pairs + g * REF_A_BLOCK_LANES, x, c->ub + g * REF_A_BLOCK_LANES);
        else
            block_fill(f, x, c->ub + g * REF_A_BLOCK_LANES);
        x->valid = 1;
    }
    return x;
}

/* The cache's block for src, converted now unless it was since UB's last
 * write to its rows. NULL when src is not a block of UB (ref_a_cache). */
static inline __attribute__((always_inline)) const float *cached_block(ref_a_cache *c, const uint16_t *src,
                                                                       const ref_a_facts **facts)
{
    const size_t at = (size_t)(src - c->ub);
    if (src < c->ub || at % REF_A_BLOCK_LANES || at / REF_A_BLOCK_LANES >= c->blocks)
        return NULL;
    const size_t g = at / REF_A_BLOCK_LANES;
    *facts = cache_block(c, g);
    return c->f + g * REF_A_BLOCK_LANES;
}

/* A of tile t for the block at row m: from the cache (N = 8, blocks of 8)
 * or converted into af. NULL when a lane fails the grid check (convert_a).
 * *skip: the zero k the block may skip (see chain_block); *big: set when a
 * lane is big (REF_BIG_FIELD). */
static inline __attribute__((always_inline)) const float *tile_a(const ntpu_chain_tile *t, size_t m, unsigned n,
                                                                 unsigned block, int may_skip, float *af,
                                                                 ref_a_cache *cache, uint64_t *skip, uint32_t *big)
{
    const uint16_t *src = tile_src(t, m, n);
    *skip = 0;
    const ref_a_facts *x = NULL;
    const float *f = cache && t->cached && n == 8 && block == 8 ? cached_block(cache, src, &x) : NULL;
    if (f) {
        if (x->e_min < t->a_thr)
            return NULL;
        *big |= x->big;
        if (may_skip)
            *skip = (t->transposed ? x->zero_cols : x->zero_rows) & ~t->w_wild;
        return f;
    }
    /* a transposed tile's columns are the rows: converted whole */
    if (!convert_a(af, src, t->transposed ? (size_t)n * n : (size_t)block * n, t->a_thr, big))
        return NULL;
    if (may_skip && !t->transposed)
        *skip = zero_ks(af, block, n) & ~t->w_wild;
    else if (may_skip && n == 8 && block == 8) /* a transposed tile, its columns the whole block */
        *skip = zero_ks_t8(af) & ~t->w_wild;
    return af;
}

/* c = c + a * w rounded once. Only code built for FMA (chain_fma) reaches
 * it; elsewhere `fused` is a constant 0 and it is never compiled. */
#ifdef HAVE_FMA_VARIANT
#define FUSED_MAC(c, a, w) ((c) = __builtin_ia32_vfmaddps256((a), (w), (c)))
#else
#define FUSED_MAC(c, a, w) ((c) += (a) * (w))
#endif

/* The builtin's AVX return value would change the ABI of a function built
 * without AVX; the only function that keeps a call to it is built with it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
/* c[r] += a(r, i) * w(i, q .. q + 7) for k = i ascending, a(r, i) at
 * a[r * rs + i * is] and w's row i at wq + i * n; a k in `skip` is left out.
 * fused: as one fused multiply-add (the same bits when no factor is big). */
static inline __attribute__((always_inline)) void tile_products(f32x8 *c, const float *a, unsigned rs, unsigned is,
                                                                const float *wq, unsigned n, unsigned block,
                                                                uint64_t skip, int fused)
{
#pragma GCC unroll 8
    for (unsigned i = 0; i < n; i++) {
        if ((skip >> i) & 1u)
            continue;
        f32x8 wv;
        memcpy(&wv, wq + (size_t)i * n, sizeof wv);
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++)
            if (fused) {
                const float v = a[r * rs + i * is];
                FUSED_MAC(c[r], ((f32x8){v, v, v, v, v, v, v, v}), wv);
            } else
                c[r] += a[r * rs + i * is] * wv;
    }
}
#pragma GCC diagnostic pop

/* The products of chain_block: each block of 8 columns' accumulators loaded
 * once, through every tile, stored once. */
static inline __attribute__((always_inline)) void chain_products(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                                 unsigned count, size_t m, unsigned n, unsigned block,
                                                                 const float *const *at_a, const uint64_t *skip,
                                                                 int fused, int zero)
{
    for (unsigned q = 0; q < n; q += 8) {
        f32x8 c[8];
        acc_start(c, acc, n, q, block, zero);
        for (unsigned e = 0; e < count; e++) {
            const ntpu_chain_tile *t = tiles + e;
            /* constant strides, and most tiles without a branch per k */
            if (!t->transposed && !skip[e])
                tile_products(c, at_a[e], n, 1, t->wf + q, n, block, 0, fused);
            else if (!t->transposed)
                tile_products(c, at_a[e], n, 1, t->wf + q, n, block, skip[e], fused);
            else if (!skip[e]) /* a transposed tile: the block's rows are its columns */
                tile_products(c, at_a[e] + m % n, 1, n, t->wf + q, n, block, 0, fused);
            else
                tile_products(c, at_a[e] + m % n, 1, n, t->wf + q, n, block, skip[e], fused);
        }
        acc_store(acc, c, n, q, block);
    }
}

/* Whether the `lanes` accumulators at acc are all on the 2^-126 grid (zero or
 * a biased exponent >= 24); *may_skip cleared when one is -0 (chain_block). */
static inline __attribute__((always_inline)) int acc_on_grid(const uint32_t *acc, unsigned lanes, int *may_skip)
{
    u32x8 bad = {0}, negz = {0};
    for (unsigned k = 0; k < lanes; k += 8) {
        u32x8 c;
        memcpy(&c, acc + k, sizeof c);
        bad |= (u32x8)((c & 0x7FFFFFFFu) != 0u) & (u32x8)(((c >> 23) & 0xFFu) < 24u);
        negz |= (u32x8)(c == 0x80000000u);
    }
    for (unsigned l = 0; l < 8; l++) {
        if (bad[l])
            return 0;
        if (negz[l])
            *may_skip = 0;
    }
    return 1;
}

/* Every tile's A for the block at row m (tile_a), converted ones into af:
 * at_a[e], skip[e] and *big for chain_block. 0 when one fails a check or af
 * is full. */
static inline __attribute__((always_inline)) int chain_a(const ntpu_chain_tile *tiles, unsigned count, size_t m,
                                                         unsigned n, unsigned block, int may_skip, float *af,
                                                         ref_a_cache *cache, const float **at_a, uint64_t *skip,
                                                         uint32_t *big)
{
    size_t at = 0;
    for (unsigned e = 0; e < count; e++) {
        const ntpu_chain_tile *t = tiles + e;
        *big |= (uint32_t)t->w_big;
        const size_t size = t->transposed ? (size_t)n * n : (size_t)block * n;
        if (at + size > CHAIN_AF_FLOATS)
            return 0;
        if (!(at_a[e] = tile_a(t, m, n, block, may_skip, af + at, cache, &skip[e], big)))
            return 0;
        if (at_a[e] == af + at)
            at += size;
    }
    return 1;
}

/* One block of `block` rows (row m of the stream at acc) through `count`
 * tiles with the accumulators in registers: first every tile's A converted
 * (or found in the cache) and checked, then the products, so that the
 * conversion's constants do not crowd the accumulators out of the registers.
 * Returns 0, having written nothing, when the block fails a check (or its A
 * would not fit in af: then the caller runs the tiles one at a time).
 *
 * Zero k skipped: when every A value of k = i in the block is +-0 (after the
 * flush), the step adds a product p = (+-0) x w to each accumulator c. If w
 * is finite, p is +-0, and c + p = c bit for bit unless c is -0 (-0 + +0 =
 * +0): for c nonzero (or NaN) IEEE returns c, and +0 + (+-0) = +0 in round to
 * nearest. So the step changes nothing when the weight row has no inf or NaN
 * (w_wild) and no accumulator is -0. No accumulator of the block becomes -0
 * on the fast path if none was at the load: a sum is -0 only when both terms
 * are -0 or it underflows to zero, and on the 2^-126 grid a nonzero exact sum
 * rounds to a normal number. Checked once per block, at the load.
 *
 * fma: the products may be fused multiply-adds, which they are unless a
 * tile's A or W has a big value (REF_BIG_FIELD). */
static inline __attribute__((always_inline)) int chain_block(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                             unsigned count, size_t m, unsigned n, unsigned block,
                                                             ref_a_cache *cache, int fma, int zero)
{
    int may_skip = 1; /* +0.0 accumulators (zero) are on the grid, and none is -0 */
    if (!zero && !acc_on_grid(acc, block * n, &may_skip))
        return 0;
    float af[CHAIN_AF_FLOATS];
    const float *at_a[REF_CHAIN_MAX];
    uint64_t skip[REF_CHAIN_MAX];
    uint32_t big = 0;
    if (!chain_a(tiles, count, m, n, block, may_skip, af, cache, at_a, skip, &big))
        return 0;
    if (fma && !big)
        chain_products(acc, tiles, count, m, n, block, at_a, skip, 1, zero);
    else
        chain_products(acc, tiles, count, m, n, block, at_a, skip, 0, zero);
    return 1;
}

static inline __attribute__((always_inline)) int chain_block_n(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                               unsigned count, size_t m, unsigned n, unsigned block,
                                                               ref_a_cache *cache, int fma, int zero)
{
    return n == 8    ? chain_block(acc, tiles, count, m, 8, block, cache, fma, zero)
           : n == 16 ? chain_block(acc, tiles, count, m, 16, block, cache, fma, zero)
                     : chain_block(acc, tiles, count, m, n, block, cache, fma, zero);
}

/* Rows m .. m + count - 1 (of the chain, acc being its row 0) through one
 * tile by the scalar MACs. */
static void chain_scalar(uint32_t *acc, const ntpu_chain_tile *t, size_t m, size_t count, unsigned n)
{
    uint16_t row[MAX_N];
    for (size_t r = m; r < m + count; r++) {
        const uint16_t *src = tile_src(t, r, n);
        if (t->transposed) { /* the row is a column of the tile */
            for (unsigned i = 0; i < n; i++)
                row[i] = src[(size_t)i * n + r % n];
            src = row;
        }
        ntpu_mac_bf16_row(acc + r * n, src, t->w, n);
    }
}

void ref_a_cache_release(ref_a_cache *c)
{
    free(c->f);
    free(c->pairs);
    free(c->facts);
    memset(c, 0, sizeof *c);
}

int ref_a_cache_mirror(ref_a_cache *c, const uint16_t *ub, size_t lanes)
{
    const size_t blocks = ub ? lanes / REF_A_BLOCK_LANES : 0;
    if (c->ub != ub || c->blocks != blocks) {
        ref_a_cache_release(c);
        if (blocks == 0)
            return 1;
        c->f = aligned_alloc(64, blocks * REF_A_BLOCK_LANES * sizeof *c->f);
        c->facts = calloc(blocks, sizeof *c->facts);
        if (ref_dot_usable())
            c->pairs = aligned_alloc(64, blocks * REF_A_BLOCK_LANES * sizeof *c->pairs);
        if (!c->f || !c->facts || (ref_dot_usable() && !c->pairs)) {
            ref_a_cache_release(c);
            return 0;
        }
        c->ub = ub;
        c->blocks = blocks;
    }
    return 1;
}

/* Rows m .. m + block - 1 of one chain, the whole chain at once when it
 * can, else each tile as the one-tile kernel runs it, else by the scalar MACs
 * (those read ACC: a chain that starts at +0.0 clears it first). */
static inline __attribute__((always_inline)) void chain_rows(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                             unsigned count, unsigned n, size_t m, unsigned block,
                                                             ref_a_cache *cache, int fma, int zero)
{
    if (chain_block_n(acc + m * n, tiles, count, m, n, block, cache, fma, zero))
        return;
    if (zero)
        acc_clear(acc, m, m + block, n);
    for (unsigned e = 0; e < count; e++)
        if (!chain_block_n(acc + m * n, tiles + e, 1, m, n, block, cache, fma, 0))
            chain_scalar(acc, tiles + e, m, block, n);
}

static inline __attribute__((always_inline)) void chain_impl(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                             unsigned count, unsigned n, size_t m0, size_t m1,
                                                             unsigned block, ref_a_cache *cache, int fma, int zero)
{
    size_t m = m0;
    if (n % 8 == 0)
        for (; m + block <= m1; m += block)
            chain_rows(acc, tiles, count, n, m, block, cache, fma, zero);
    if (zero && m < m1)
        acc_clear(acc, m, m1, n);
    for (; m < m1; m++)
        for (unsigned e = 0; e < count; e++)
            chain_scalar(acc, tiles + e, m, 1, n);
}

#ifdef HAVE_FMA_VARIANT
/* Blocks of eight rows, products fused where no factor is big. */
__attribute__((target("avx2,fma"))) static void chain_fma(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count,
                                                          unsigned n, size_t m0, size_t m1, ref_a_cache *cache,
                                                          int zero)
{
    if (zero)
        chain_impl(acc, tiles, count, n, m0, m1, 8, cache, 1, 1);
    else
        chain_impl(acc, tiles, count, n, m0, m1, 8, cache, 1, 0);
}
#endif

/* Blocks of four rows: the cache (blocks of eight) stays unused. */
void ntpu_mac_bf16_chain_generic(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0,
                                 size_t m1, ref_a_cache *cache, int zero)
{
    if (zero)
        acc_clear(acc, m0, m1, n);
    chain_impl(acc, tiles, count, n, m0, m1, 4, cache, 0, 0);
}

void ntpu_mac_bf16_chain(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0, size_t m1,
                         ref_a_cache *cache, int zero)
{
    if (cache && !cache->ub)
        cache = NULL;
#ifdef HAVE_FMA_VARIANT
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        chain_fma(acc, tiles, count, n, m0, m1, cache, zero);
        return;
    }
#endif
    ntpu_mac_bf16_chain_generic(acc, tiles, count, n, m0, m1, cache, zero);
}

#ifdef HAVE_FMA_VARIANT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
/* tile_products for two tiles at once, N = 8: c0[r] += a(r, i) * w0(i, .),
 * c1[r] += a(r, i) * w1(i, .) for `rows` rows, one broadcast of a for both. */
static inline __attribute__((always_inline)) void tile2_products(f32x8 *c0, f32x8 *c1, const float *a, unsigned rs,
                                                                 unsigned is, const float *w0, const float *w1,
                                                                 unsigned rows, uint64_t skip, int fused)
{
#pragma GCC unroll 8
    for (unsigned i = 0; i < 8; i++) {
        if ((skip >> i) & 1u)
            continue;
        f32x8 v0, v1;
        memcpy(&v0, w0 + (size_t)i * 8, sizeof v0);
        memcpy(&v1, w1 + (size_t)i * 8, sizeof v1);
#pragma GCC unroll 4
        for (unsigned r = 0; r < rows; r++) {
            const float v = a[r * rs + i * is];
            const f32x8 av = {v, v, v, v, v, v, v, v};
            if (fused) {
                FUSED_MAC(c0[r], av, v0);
                FUSED_MAC(c1[r], av, v1);
            } else {
                c0[r] += av * v0;
                c1[r] += av * v1;
            }
        }
    }
}
#pragma GCC diagnostic pop

/* The products of chain2_block: four rows of both chains at a time (eight
 * accumulators), A read once for both; every tile `transposed` or none, so
 * that the strides are constants. */
static inline __attribute__((always_inline)) void
chain2_products(uint32_t *acc0, uint32_t *acc1, const ntpu_chain_tile *t0, const ntpu_chain_tile *t1, unsigned count,
                int transposed, const float *const *at_a, const uint64_t *skip, int fused, int zero)
{
    /* a(r, i): row r of the block is row r of a tile, or its column r (m is a multiple of 8) */
    const unsigned rs = transposed ? 1 : 8, is = transposed ? 8 : 1;
    for (unsigned h = 0; h < 8; h += 4) {
        f32x8 c0[4], c1[4];
        acc_start(c0, acc0 + h * 8, 8, 0, 4, zero);
        acc_start(c1, acc1 + h * 8, 8, 0, 4, zero);
        for (unsigned e = 0; e < count; e++) {
            const float *a = at_a[e] + h * rs;
            if (!skip[e])
                tile2_products(c0, c1, a, rs, is, t0[e].wf, t1[e].wf, 4, 0, fused);
            else
                tile2_products(c0, c1, a, rs, is, t0[e].wf, t1[e].wf, 4, skip[e], fused);
        }
        acc_store(acc0 + h * 8, c0, 8, 0, 4);
        acc_store(acc1 + h * 8, c1, 8, 0, 4);
    }
}

/* chain_block for two chains over the same A, N = 8, eight rows: `both` is
 * tile e's A with the stricter of the two tiles' checks (ntpu_mac_bf16_chain2).
 * Returns 0, having written nothing, when a check fails for either chain. */
static inline __attribute__((always_inline)) int chain2_block(uint32_t *acc0, uint32_t *acc1,
                                                              const ntpu_chain_tile *both, const ntpu_chain_tile *t0,
                                                              const ntpu_chain_tile *t1, unsigned count, size_t m,
                                                              ref_a_cache *cache, int transposed, int zero)
{
    int may_skip = 1;
    if (!zero && (!acc_on_grid(acc0, 64, &may_skip) || !acc_on_grid(acc1, 64, &may_skip)))
        return 0;
    float af[CHAIN_AF_FLOATS];
    const float *at_a[REF_CHAIN_MAX];
    uint64_t skip[REF_CHAIN_MAX];
    uint32_t big = 0;
    if (!chain_a(both, count, m, 8, 8, may_skip, af, cache, at_a, skip, &big))
        return 0;
    if (!big)
        chain2_products(acc0, acc1, t0, t1, count, transposed, at_a, skip, 1, zero);
    else
        chain2_products(acc0, acc1, t0, t1, count, transposed, at_a, skip, 0, zero);
    return 1;
}

static inline __attribute__((always_inline)) void chain2_impl(uint32_t *acc0, uint32_t *acc1,
                                                              const ntpu_chain_tile *both, const ntpu_chain_tile *t0,
                                                              const ntpu_chain_tile *t1, unsigned count, size_t m0,
                                                              size_t m1, ref_a_cache *cache, int transposed, int zero)
{
    size_t m = m0;
    for (; m + 8 <= m1; m += 8)
        if (!chain2_block(acc0 + m * 8, acc1 + m * 8, both, t0, t1, count, m, cache, transposed, zero)) {
            chain_rows(acc0, t0, count, 8, m, 8, cache, 1, zero);
            chain_rows(acc1, t1, count, 8, m, 8, cache, 1, zero);
        }
    if (zero && m < m1) {
        acc_clear(acc0, m, m1, 8);
        acc_clear(acc1, m, m1, 8);
    }
    for (; m < m1; m++)
        for (unsigned e = 0; e < count; e++) {
            chain_scalar(acc0, t0 + e, m, 1, 8);
            chain_scalar(acc1, t1 + e, m, 1, 8);
        }
}

__attribute__((target("avx2,fma"))) static void chain2_fma(uint32_t *acc0, uint32_t *acc1, const ntpu_chain_tile *both,
                                                           const ntpu_chain_tile *t0, const ntpu_chain_tile *t1,
                                                           unsigned count, size_t m0, size_t m1, ref_a_cache *cache,
                                                           int zero)
{
    if (zero)
        chain2_impl(acc0, acc1, both, t0, t1, count, m0, m1, cache, 0, 1);
    else
        chain2_impl(acc0, acc1, both, t0, t1, count, m0, m1, cache, 0, 0);
}

__attribute__((target("avx2,fma"))) static void chain2_fma_t(uint32_t *acc0, uint32_t *acc1,
                                                             const ntpu_chain_tile *both, const ntpu_chain_tile *t0,
                                                             const ntpu_chain_tile *t1, unsigned count, size_t m0,
                                                             size_t m1, ref_a_cache *cache, int zero)
{
    if (zero)
        chain2_impl(acc0, acc1, both, t0, t1, count, m0, m1, cache, 1, 1);
    else
        chain2_impl(acc0, acc1, both, t0, t1, count, m0, m1, cache, 1, 0);
}
#endif

void ntpu_mac_bf16_chain2(uint32_t *acc0, uint32_t *acc1, const ntpu_chain_tile *tiles0, const ntpu_chain_tile *tiles1,
                          unsigned count, unsigned n, size_t m0, size_t m1, ref_a_cache *cache, int zero)
{
#ifdef HAVE_FMA_VARIANT
    if (cache && !cache->ub)
        cache = NULL;
    if (n == 8 && count <= REF_CHAIN_MAX && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        /* tile e's A, checked for both tiles: the stricter grid threshold, either's inf or NaN rows */
        ntpu_chain_tile both[REF_CHAIN_MAX];
        unsigned transposed = 0;
        for (unsigned e = 0; e < count; e++) {
            transposed += tiles0[e].transposed != 0;
            both[e] = tiles0[e];
            both[e].a_thr = tiles0[e].a_thr > tiles1[e].a_thr ? tiles0[e].a_thr : tiles1[e].a_thr;
            both[e].w_wild = tiles0[e].w_wild | tiles1[e].w_wild;
            both[e].w_big = tiles0[e].w_big | tiles1[e].w_big;
        }
        if (transposed == 0) {
            chain2_fma(acc0, acc1, both, tiles0, tiles1, count, m0, m1, cache, zero);
            return;
        }
        if (transposed == count) {
            chain2_fma_t(acc0, acc1, both, tiles0, tiles1, count, m0, m1, cache, zero);
            return;
        }
    }
#endif
    ntpu_mac_bf16_chain(acc0, tiles0, count, n, m0, m1, cache, zero);
    ntpu_mac_bf16_chain(acc1, tiles1, count, n, m0, m1, cache, zero);
}

/* ---------------------------------------------------------------- AVX-512
 *
 * The chains of a queue (REF_CHAIN_WAYS, two) over the same A (N = 8) in one
 * pass with AVX-512: a zmm holds one row of two chains (8 + 8 columns), and
 * its 32 registers keep a block's eight rows, the weights and the broadcast
 * A without the spills of the AVX2 pair. Lane for lane, each chain's products
 * and sums are those of chain2_products. (Four output tiles a pass, 16
 * accumulators, measured no faster: the FMAs run near their peak either way.) */
#ifdef HAVE_FMA_VARIANT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#define AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx2,fma")))
#define WAYS_MAX REF_CHAIN_WAYS

/* Eight lanes at lo and eight at hi as one zmm, and back. */
static inline __attribute__((always_inline)) AVX512_TARGET __m512 pair_load(const void *lo, const void *hi)
{
    const __m512d l = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(lo)));
    return _mm512_castpd_ps(_mm512_insertf64x4(l, _mm256_castps_pd(_mm256_loadu_ps(hi)), 1));
}

/* The store of acc_store: a NaN made canonical. */
static inline __attribute__((always_inline)) AVX512_TARGET void pair_store(void *lo, void *hi, __m512 v)
{
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    v = _mm512_mask_blend_ps(nan, v, _mm512_castsi512_ps(_mm512_set1_epi32((int)NTPU_F32_CANONICAL_NAN)));
    _mm256_storeu_ps(lo, _mm512_castps512_ps256(v));
    _mm256_storeu_ps(hi, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* c[r][p] += a(r, i) * (w[2p] | w[2p + 1])(i, .) for i ascending, not those in skip. */
static inline __attribute__((always_inline)) AVX512_TARGET void tilew_products(__m512 c[8][WAYS_MAX / 2],
                                                                               const float *a, unsigned rs, unsigned is,
                                                                               const float *const *w, unsigned pairs,
                                                                               uint64_t skip, int fused)
{
#pragma GCC unroll 8
    for (unsigned i = 0; i < 8; i++) {
        if ((skip >> i) & 1u)
            continue;
        __m512 wv[WAYS_MAX / 2];
        for (unsigned p = 0; p < pairs; p++)
            wv[p] = pair_load(w[2 * p] + i * 8, w[2 * p + 1] + i * 8);
#pragma GCC unroll 8
        for (unsigned r = 0; r < 8; r++) {
            const __m512 av = _mm512_set1_ps(a[r * rs + i * is]);
            for (unsigned p = 0; p < pairs; p++)
                c[r][p] =
                    fused ? _mm512_fmadd_ps(av, wv[p], c[r][p]) : _mm512_add_ps(c[r][p], _mm512_mul_ps(av, wv[p]));
        }
    }
}

/* chain2_products for 2 x pairs chains, eight rows of each (acc[k] at the block's row 0). */
static inline __attribute__((always_inline)) AVX512_TARGET void
chainw_products(uint32_t *const *acc, const ntpu_chain_tile *const *t, unsigned pairs, unsigned count, int transposed,
                const float *const *at_a, const uint64_t *skip, int fused, int zero)
{
    const unsigned rs = transposed ? 1 : 8, is = transposed ? 8 : 1;
    __m512 c[8][WAYS_MAX / 2];
    for (unsigned r = 0; r < 8; r++)
        for (unsigned p = 0; p < pairs; p++)
            c[r][p] = zero ? _mm512_setzero_ps() : pair_load(acc[2 * p] + r * 8, acc[2 * p + 1] + r * 8);
    for (unsigned e = 0; e < count; e++) {
        const float *w[WAYS_MAX];
        for (unsigned k = 0; k < 2 * pairs; k++)
            w[k] = t[k][e].wf;
        if (!skip[e])
            tilew_products(c, at_a[e], rs, is, w, pairs, 0, fused);
        else
            tilew_products(c, at_a[e], rs, is, w, pairs, skip[e], fused);
    }
    for (unsigned r = 0; r < 8; r++)
        for (unsigned p = 0; p < pairs; p++)
            pair_store(acc[2 * p] + r * 8, acc[2 * p + 1] + r * 8, c[r][p]);
}

/* chain2_block for 2 x pairs chains: both holds tile e's A with the strictest of their checks. */
static inline __attribute__((always_inline)) AVX512_TARGET int
chainw_block(uint32_t *const *acc, const ntpu_chain_tile *both, const ntpu_chain_tile *const *t, unsigned pairs,
             unsigned count, size_t m, ref_a_cache *cache, const ref_dot_w *wp, int transposed, int zero)
{
    int may_skip = 1;
    for (unsigned k = 0; k < 2 * pairs && !zero; k++)
        if (!acc_on_grid(acc[k], 64, &may_skip))
            return 0;
    float af[CHAIN_AF_FLOATS];
    const float *at_a[REF_CHAIN_MAX];
    uint64_t skip[REF_CHAIN_MAX];
    uint32_t big = 0;
    if (!chain_a(both, count, m, 8, 8, may_skip, af, cache, at_a, skip, &big))
        return 0;
    if (wp && big) /* its products could overflow: dot_fits let no weight be big, but A can be */
        return 0;
    if (wp) {
        const uint32_t *ap[REF_CHAIN_MAX];
        uint32_t own[REF_CHAIN_MAX * REF_A_BLOCK_LANES] __attribute__((aligned(64)));
        for (unsigned e = 0; e < count; e++) {
            const int in_cache =
                cache && cache->pairs && at_a[e] >= cache->f && at_a[e] < cache->f + cache->blocks * REF_A_BLOCK_LANES;
            if (in_cache) /* a block of the cache: its pairs are kept beside it */
                ap[e] = cache->pairs + (size_t)(at_a[e] - cache->f);
            else {
                ref_dot_pairs(own + e * REF_A_BLOCK_LANES, at_a[e]);
                ap[e] = own + e * REF_A_BLOCK_LANES;
            }
            ap[e] += transposed ? 32 : 0;
        }
        ref_dot_block(acc, wp, ap, skip, count, transposed, zero);
    } else if (!big)
        chainw_products(acc, t, pairs, count, transposed, at_a, skip, 1, zero);
    else
        chainw_products(acc, t, pairs, count, transposed, at_a, skip, 0, zero);
    return 1;
}

/* Where the dot pass finds every tile's A in the cache: rows m .. m + 7 of
 * tile e are block g0[e] + m / 8 * gs[e], for every block of m0 .. m1 - 1.
 * 0 when a tile's A is not such a block of UB (chain_a then looks each up). */
static int dot_layout(size_t *g0, size_t *gs, const ntpu_chain_tile *both, unsigned count, const ref_a_cache *c,
                      size_t m0, size_t m1)
{
    if (!c || !c->pairs || m1 < m0 + 8)
        return 0;
    for (unsigned e = 0; e < count; e++) {
        const ntpu_chain_tile *t = both + e;
        if (t->locate || !t->cached || t->a < c->ub)
            return 0;
        const size_t at = (size_t)(t->a - c->ub), step = t->transposed ? t->t_stride : 64;
        if (at % REF_A_BLOCK_LANES || step % REF_A_BLOCK_LANES)
            return 0;
        g0[e] = at / REF_A_BLOCK_LANES;
        gs[e] = step / REF_A_BLOCK_LANES;
        if (g0[e] + (m1 - 8) / 8 * gs[e] >= c->blocks)
            return 0;
    }
    return 1;
}

/* chainw_block on the dot product where dot_layout holds: each tile's A
 * straight from the cache. 0 when a block fails a check (chainw_block then
 * runs it). */
static inline __attribute__((always_inline)) AVX512_TARGET int
dot_block(uint32_t *const *acc, const ntpu_chain_tile *both, const ref_dot_w *wp, const size_t *g0, const size_t *gs,
          unsigned count, size_t m, ref_a_cache *cache, int transposed, int zero)
{
    int may_skip = 1;
    for (unsigned k = 0; k < 2 && !zero; k++)
        if (!acc_on_grid(acc[k], 64, &may_skip))
            return 0;
    const uint32_t *ap[REF_CHAIN_MAX];
    uint64_t skip[REF_CHAIN_MAX];
    for (unsigned e = 0; e < count; e++) {
        const size_t g = g0[e] + m / 8 * gs[e];
        const ref_a_facts *x = cache_block(cache, g);
        if (x->e_min < both[e].a_thr || x->big)
            return 0;
        skip[e] = may_skip ? (transposed ? x->zero_cols : x->zero_rows) : 0; /* no weight row is wild here */
        ap[e] = cache->pairs + g * REF_A_BLOCK_LANES + (transposed ? 32 : 0);
    }
    ref_dot_block(acc, wp, ap, skip, count, transposed, zero);
    return 1;
}

static inline __attribute__((always_inline)) AVX512_TARGET void
chainw_impl(uint32_t *const *acc, const ntpu_chain_tile *both, const ntpu_chain_tile *const *t, unsigned pairs,
            unsigned count, size_t m0, size_t m1, ref_a_cache *cache, const ref_dot_w *wp, int transposed, int zero)
{
    const unsigned ways = 2 * pairs;
    size_t m = m0, g0[REF_CHAIN_MAX], gs[REF_CHAIN_MAX];
    const int in_cache = wp && dot_layout(g0, gs, both, count, cache, m0, m1);
    for (; m + 8 <= m1; m += 8) {
        uint32_t *at[WAYS_MAX];
        for (unsigned k = 0; k < ways; k++)
            at[k] = acc[k] + m * 8;
        if (in_cache && dot_block(at, both, wp, g0, gs, count, m, cache, transposed, zero))
            continue;
        if (chainw_block(at, both, t, pairs, count, m, cache, wp, transposed, zero))
            continue;
        for (unsigned k = 0; k < ways; k++) {
            if (!wp) {
                chain_rows(acc[k], t[k], count, 8, m, 8, cache, 1, zero);
                continue;
            }
            if (zero) /* the dot product's tiles have no wf: the scalar MACs */
                acc_clear(acc[k], m, m + 8, 8);
            for (unsigned e = 0; e < count; e++)
                chain_scalar(acc[k], t[k] + e, m, 8, 8);
        }
    }
    for (unsigned k = 0; k < ways && zero && m < m1; k++)
        acc_clear(acc[k], m, m1, 8);
    for (; m < m1; m++)
        for (unsigned k = 0; k < ways; k++)
            for (unsigned e = 0; e < count; e++)
                chain_scalar(acc[k], t[k] + e, m, 1, 8);
}

/* The instances: transposed and zero as constants. */
AVX512_TARGET static void chainw_avx512(uint32_t *const *acc, const ntpu_chain_tile *both,
                                        const ntpu_chain_tile *const *t, unsigned count, size_t m0, size_t m1,
                                        ref_a_cache *cache, const ref_dot_w *wp, int transposed, int zero)
{
    const unsigned pairs = WAYS_MAX / 2;
    if (transposed)
        zero ? chainw_impl(acc, both, t, pairs, count, m0, m1, cache, wp, 1, 1)
             : chainw_impl(acc, both, t, pairs, count, m0, m1, cache, wp, 1, 0);
    else
        zero ? chainw_impl(acc, both, t, pairs, count, m0, m1, cache, wp, 0, 1)
             : chainw_impl(acc, both, t, pairs, count, m0, m1, cache, wp, 0, 0);
}

#endif

/* The dot product runs where the CPU's instruction agrees with the device
 * and no weight is inf, NaN or big (their products the fused pass leaves to
 * its checks block by block). */
int ntpu_chain_dot_fits(const ntpu_chain_tile *const *tiles, unsigned ways, unsigned count, unsigned n)
{
#ifdef HAVE_FMA_VARIANT
    if (n != 8 || ways != WAYS_MAX || count > REF_CHAIN_MAX || !__builtin_cpu_supports("avx512f") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("fma"))
        return 0;
    unsigned transposed = 0;
    for (unsigned e = 0; e < count; e++) {
        for (unsigned k = 0; k < ways; k++)
            if (tiles[k][e].w_wild || tiles[k][e].w_big || tiles[k][e].transposed != tiles[0][e].transposed)
                return 0;
        transposed += tiles[0][e].transposed != 0;
    }
    return (transposed == 0 || transposed == count) && ref_dot_usable();
#else
    (void)tiles, (void)ways, (void)count, (void)n;
    return 0;
#endif
}
#ifdef HAVE_FMA_VARIANT
#pragma GCC diagnostic pop
#endif

void ntpu_mac_bf16_chainw(uint32_t *const *acc, const ntpu_chain_tile *const *tiles, unsigned ways, unsigned count,
                          unsigned n, size_t m0, size_t m1, ref_a_cache *cache, int zero, int dot)
{
#ifdef HAVE_FMA_VARIANT
    if (cache && !cache->ub)
        cache = NULL;
    if (n == 8 && ways == WAYS_MAX && count <= REF_CHAIN_MAX && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma")) {
        /* tile e's A, checked for every chain's tile: the strictest grid threshold, any inf or NaN row */
        ntpu_chain_tile both[REF_CHAIN_MAX];
        unsigned transposed = 0;
        for (unsigned e = 0; e < count; e++) {
            both[e] = tiles[0][e];
            for (unsigned k = 1; k < ways; k++) {
                const ntpu_chain_tile *x = &tiles[k][e];
                both[e].a_thr = x->a_thr > both[e].a_thr ? x->a_thr : both[e].a_thr;
                both[e].w_wild |= x->w_wild;
                both[e].w_big |= x->w_big;
            }
            transposed += both[e].transposed != 0;
        }
        if (transposed == 0 || transposed == count) {
            ref_dot_w wp[REF_CHAIN_MAX]; /* 32 KB: beside the 64 KB of converted A below it */
            for (unsigned e = 0; e < count && dot; e++)
                ref_dot_weights(&wp[e], tiles[0][e].w, tiles[1][e].w);
            chainw_avx512(acc, both, tiles, count, m0, m1, cache, dot ? wp : NULL, transposed != 0, zero);
            return;
        }
    }
#endif
    unsigned k = 0;
    for (; k + 2 <= ways; k += 2)
        ntpu_mac_bf16_chain2(acc[k], acc[k + 1], tiles[k], tiles[k + 1], count, n, m0, m1, cache, zero);
    if (k < ways)
        ntpu_mac_bf16_chain(acc[k], tiles[k], count, n, m0, m1, cache, zero);
}

/* int32 additions wrap, so any order gives the same bits: eight lanes of
 * uint32 per row, several rows at once, like the bf16 chains. */
typedef int32_t i32x8 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) void int8_block(uint32_t *acc, const uint16_t *a, const int32_t *wi,
                                                             unsigned n, unsigned block)
{
    for (unsigned q = 0; q < n; q += 8) {
        i32x8 c[8];
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++)
            memcpy(&c[r], acc + (size_t)r * n + q, sizeof c[r]);
        for (unsigned i = 0; i < n; i++) {
            i32x8 wv;
            memcpy(&wv, wi + (size_t)i * n + q, sizeof wv);
#pragma GCC unroll 8
            for (unsigned r = 0; r < block; r++) /* |a*w| <= 2^14: the product never wraps */
                c[r] = (i32x8)((u32x8)c[r] + (u32x8)((int32_t)(int8_t)(a[r * n + i] & 0xFFu) * wv));
        }
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++)
            memcpy(acc + (size_t)r * n + q, &c[r], sizeof c[r]);
    }
}

static inline __attribute__((always_inline)) void int8_impl(uint32_t *acc, const uint16_t *a, const uint16_t *w,
                                                            unsigned n, size_t rows, unsigned block)
{
    size_t m = 0;
    if (n % 8 == 0) {
        int32_t wi[MAX_N * MAX_N];
        for (unsigned k = 0; k < n * n; k++)
            wi[k] = (int8_t)(w[k] & 0xFFu);
        for (; m + block <= rows; m += block) {
            if (n == 8)
                int8_block(acc + m * n, a + m * n, wi, 8, block);
            else
                int8_block(acc + m * n, a + m * n, wi, n, block);
        }
    }
    for (; m < rows; m++)
        ntpu_mac_int8_row(acc + m * n, a + m * n, w, n);
}

#ifdef HAVE_AVX2_VARIANT
__attribute__((target("avx2"))) static void int8_avx2(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n,
                                                      size_t rows)
{
    int8_impl(acc, a, w, n, rows, 8);
}
#endif

void ntpu_mac_int8_rows_generic(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows)
{
    int8_impl(acc, a, w, n, rows, 4);
}

void ntpu_mac_int8_rows(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows)
{
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2")) {
        int8_avx2(acc, a, w, n, rows);
        return;
    }
#endif
    ntpu_mac_int8_rows_generic(acc, a, w, n, rows);
}
