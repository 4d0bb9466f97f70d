/* SPDX-License-Identifier: Apache-2.0 */
/* The paired bf16 chains (ntpu_mac_bf16_chainw) on the CPU's bf16 dot
 * product, AVX512_BF16's VDPBF16PS: per fp32 lane it adds two bf16 products
 * to the accumulator, the high halves' first, each product exact and each
 * addition rounded to nearest even, subnormal inputs read and results
 * written as zero (Intel's pseudo-code of the instruction). That is two
 * steps of the device's chain, k then k + 1, wherever the chain stays on the
 * 2^-126 grid (matmul_kernel.c: then no product or sum is subnormal) and
 * nothing is inf, NaN or big; the caller checks those as for its fused
 * multiply-adds. Half the instructions of the fp32 kernel for the same MACs.
 *
 * Whether a CPU's instruction does round twice is not left to the manual:
 * ref_dot_usable() runs it once on awkward operands (cancellations, ties,
 * sums far apart) against ntpu_mac_bf16 and uses it only when every lane
 * agrees. */
#include <stdint.h>
#include <string.h>
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "matmul_dot.h"
#include "ref_chain.h"
#include "ntpu/numerics.h"

#ifdef REF_DOT_BUILT
#define DOT_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512bf16")))

/* The operands of the probe: bf16 values whose products stay on the grid. */
static uint64_t probe_rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint16_t probe_bf16(uint64_t *s)
{
    const uint64_t r = probe_rng(s);
    return (uint16_t)(((r & 1u) << 15) | ((100u + (r >> 8) % 50u) << 7) | ((r >> 1) & 0x7Fu));
}

/* 4,096 lanes: the accumulator random, zero, or next to -(a0 * b0) so that
 * the first sum cancels and the second decides the rounding. */
DOT_TARGET static int probe_agrees(void)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (unsigned round = 0; round < 256; round++) {
        uint32_t acc[16], a[16], b[16], want[16], got[16];
        for (unsigned l = 0; l < 16; l++) {
            const uint16_t a0 = probe_bf16(&s), a1 = probe_bf16(&s), b0 = probe_bf16(&s), b1 = probe_bf16(&s);
            const uint32_t p0 = ntpu_mac_bf16(0, a0, b0), kind = (uint32_t)(probe_rng(&s) % 4u);
            acc[l] = kind == 0   ? 0u
                     : kind == 1 ? (p0 ^ 0x80000000u) + (uint32_t)(probe_rng(&s) % 64u) - 32u
                                 : (uint32_t)ntpu_mac_bf16(0, probe_bf16(&s), probe_bf16(&s));
            a[l] = (uint32_t)a0 << 16 | a1;
            b[l] = (uint32_t)b0 << 16 | b1;
            want[l] = ntpu_mac_bf16(ntpu_mac_bf16(acc[l], a0, b0), a1, b1);
        }
        __m512 c = _mm512_loadu_ps(acc);
        c = _mm512_dpbf16_ps(c, (__m512bh)_mm512_loadu_si512(a), (__m512bh)_mm512_loadu_si512(b));
        _mm512_storeu_ps(got, c);
        if (memcmp(got, want, sizeof got))
            return 0;
    }
    return 1;
}

int ref_dot_usable(void)
{
    static int known = -1; /* benign race: every thread finds the same */
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v < 0) {
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16") && probe_agrees();
        __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    }
    return v;
}

DOT_TARGET void ref_dot_weights(ref_dot_w *wp, const uint16_t *w0, const uint16_t *w1)
{
    for (unsigned j = 0; j < 4; j++) { /* tile rows 2j and 2j + 1, interleaved column by column */
        const __m128i e0 = _mm_loadu_si128((const void *)(w0 + 16 * j)),
                      o0 = _mm_loadu_si128((const void *)(w0 + 16 * j + 8));
        const __m128i e1 = _mm_loadu_si128((const void *)(w1 + 16 * j)),
                      o1 = _mm_loadu_si128((const void *)(w1 + 16 * j + 8));
        const __m256i c0 = _mm256_set_m128i(_mm_unpackhi_epi16(o0, e0), _mm_unpacklo_epi16(o0, e0));
        const __m256i c1 = _mm256_set_m128i(_mm_unpackhi_epi16(o1, e1), _mm_unpacklo_epi16(o1, e1));
        _mm512_store_si512(wp->pair[j], _mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1));
    }
}

/* The pairs of a block of flushed bf16 (rows 0 .. 3 in h[0], 4 .. 7 in h[1]): the rows' form is each
 * 32-bit lane's halves swapped; the columns' form interleaves tile rows 2j and 2j + 1. */
DOT_TARGET static void pairs_of(uint32_t ap[64], const __m512i h[2])
{
    static const uint16_t cols[32] = {8,  0,  9,  1,  10, 2,  11, 3,  12, 4,  13, 5,  14, 6,  15, 7,
                                      24, 16, 25, 17, 26, 18, 27, 19, 28, 20, 29, 21, 30, 22, 31, 23};
    const __m512i idx = _mm512_loadu_si512(cols);
    for (unsigned q = 0; q < 2; q++) {
        _mm512_storeu_si512(ap + 16 * q, _mm512_rol_epi32(h[q], 16));
        _mm512_storeu_si512(ap + 32 + 16 * q, _mm512_permutexvar_epi16(idx, h[q]));
    }
}

DOT_TARGET void ref_dot_pairs(uint32_t ap[64], const float *af)
{
    __m512i h[2];
    for (unsigned q = 0; q < 2; q++) { /* the bf16 halves back: the lanes are flushed already */
        const __m256i lo = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_loadu_si512(af + 32 * q), 16));
        const __m256i hi = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_loadu_si512(af + 32 * q + 16), 16));
        h[q] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    pairs_of(ap, h);
}

DOT_TARGET void ref_dot_fill(float *f, uint32_t ap[64], ref_a_facts *x, const uint16_t *src)
{
    const __m512i field = _mm512_set1_epi16(0x7F80), sign = _mm512_set1_epi16((short)0x8000);
    __m512i h[2];
    uint64_t nonzero = 0;
    __m512i dmin = _mm512_set1_epi16(-1);
    __mmask32 big = 0;
    for (unsigned q = 0; q < 2; q++) { /* rows 4q .. 4q + 3 */
        const __m512i v = _mm512_loadu_si512(src + 32 * q);
        const __m512i e = _mm512_and_si512(v, field);
        h[q] = _mm512_mask_mov_epi16(v, _mm512_testn_epi16_mask(v, field), _mm512_and_si512(v, sign)); /* flushed */
        dmin = _mm512_min_epu16(dmin, _mm512_sub_epi16(e, _mm512_set1_epi16(0x80))); /* a zero field wraps high */
        big |= _mm512_cmpge_epu16_mask(e, _mm512_set1_epi16((short)(REF_BIG_FIELD << 7))) &
               _mm512_cmplt_epu16_mask(e, field);
        nonzero |= (uint64_t)_mm512_test_epi16_mask(h[q], _mm512_set1_epi16(0x7FFF)) << (32 * q);
        /* the fp32 lanes: the bf16 bits in the high halves */
        _mm512_storeu_si512(f + 32 * q, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h[q])), 16));
        _mm512_storeu_si512(f + 32 * q + 16,
                            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h[q], 1)), 16));
    }
    __m256i d = _mm256_min_epu16(_mm512_castsi512_si256(dmin), _mm512_extracti64x4_epi64(dmin, 1));
    const __m128i d8 = _mm_min_epu16(_mm256_castsi256_si128(d), _mm256_extracti128_si256(d, 1));
    const unsigned least = ((unsigned)_mm_cvtsi128_si32(_mm_minpos_epu16(d8)) & 0xFFFFu) >> 7;
    x->e_min = least == 0x1FFu ? 0xFFFFFFFFu : least; /* field - 1; every lane zero: none */
    x->big = big != 0;
    /* nonzero bit 8r + k: the block's row r, k its lane (a transposed tile's row k, its column r) */
    uint64_t any_row = nonzero;
    any_row |= any_row >> 32;
    any_row |= any_row >> 16;
    any_row |= any_row >> 8;
    x->zero_rows = (uint8_t)~any_row;
    uint8_t cols = 0;
    for (unsigned i = 0; i < 8; i++)
        cols |= (uint8_t)(((nonzero >> (8 * i)) & 0xFFu) == 0) << i;
    x->zero_cols = cols;
    pairs_of(ap, h);
}

/* The store of the fp32 kernels: eight lanes to each chain, a NaN canonical. */
DOT_TARGET static void store_rows(uint32_t *lo, uint32_t *hi, __m512 v)
{
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    v = _mm512_mask_blend_ps(nan, v, _mm512_castsi512_ps(_mm512_set1_epi32((int)NTPU_F32_CANONICAL_NAN)));
    _mm256_storeu_ps((float *)lo, _mm512_castps512_ps256(v));
    _mm256_storeu_pd((double *)hi, _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

DOT_TARGET static __m512 load_rows(const uint32_t *lo, const uint32_t *hi)
{
    const __m512d l = _mm512_castpd256_pd512(_mm256_loadu_pd((const double *)lo));
    return _mm512_castpd_ps(_mm512_insertf64x4(l, _mm256_loadu_pd((const double *)hi), 1));
}

/* *c += the products of w and the pair at a broadcast to every lane, the broadcast folded into the
 * instruction (VDPBF16PS's {1to16}), which GCC does not do for the intrinsic: half the instructions. */
static inline __attribute__((always_inline)) DOT_TARGET void dot_broadcast(__m512 *c, __m512bh w, const uint32_t *a)
{
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(*c) : "v"(w), "m"(*a));
}

/* c[r] += the products of pairs j (not in skip) of one tile, in order. */
static inline __attribute__((always_inline)) DOT_TARGET void tile_dots(__m512 c[8], const uint32_t *ap, unsigned rs,
                                                                       unsigned is, const ref_dot_w *wp, unsigned skip)
{
#pragma GCC unroll 4
    for (unsigned j = 0; j < 4; j++) {
        if ((skip >> j) & 1u)
            continue;
        const __m512bh w = (__m512bh)_mm512_load_si512(wp->pair[j]);
#pragma GCC unroll 8
        for (unsigned r = 0; r < 8; r++)
            dot_broadcast(&c[r], w, &ap[r * rs + j * is]);
    }
}

static inline __attribute__((always_inline)) DOT_TARGET void block_dots(uint32_t *const acc[2], const ref_dot_w *wp,
                                                                        const uint32_t *const *ap, const uint64_t *skip,
                                                                        unsigned count, int transposed, int zero)
{
    const unsigned rs = transposed ? 1 : 4, is = transposed ? 8 : 1;
    __m512 c[8];
#pragma GCC unroll 8
    for (unsigned r = 0; r < 8; r++)
        c[r] = zero ? _mm512_setzero_ps() : load_rows(acc[0] + r * 8, acc[1] + r * 8);
    for (unsigned e = 0; e < count; e++) {
        /* a pair is left out when both of its k are (a zero k adds nothing: matmul_kernel.c, chain_block) */
        const unsigned both = (unsigned)(skip[e] & (skip[e] >> 1)),
                       pairs = (both & 1u) | (both >> 1 & 2u) | (both >> 2 & 4u) | (both >> 3 & 8u);
        if (!pairs)
            tile_dots(c, ap[e], rs, is, wp + e, 0);
        else
            tile_dots(c, ap[e], rs, is, wp + e, pairs);
    }
#pragma GCC unroll 8
    for (unsigned r = 0; r < 8; r++)
        store_rows(acc[0] + r * 8, acc[1] + r * 8, c[r]);
}

DOT_TARGET void ref_dot_block(uint32_t *const acc[2], const ref_dot_w *wp, const uint32_t *const *ap,
                              const uint64_t *skip, unsigned count, int transposed, int zero)
{
    if (transposed)
        zero ? block_dots(acc, wp, ap, skip, count, 1, 1) : block_dots(acc, wp, ap, skip, count, 1, 0);
    else
        zero ? block_dots(acc, wp, ap, skip, count, 0, 1) : block_dots(acc, wp, ap, skip, count, 0, 0);
}
#else
int ref_dot_usable(void)
{
    return 0;
}

void ref_dot_pairs(uint32_t ap[64], const float *af)
{
    (void)ap, (void)af;
}

void ref_dot_fill(float *f, uint32_t ap[64], ref_a_facts *x, const uint16_t *src)
{
    (void)f, (void)ap, (void)x, (void)src;
}

void ref_dot_block(uint32_t *const acc[2], const ref_dot_w *wp, const uint32_t *const *ap, const uint64_t *skip,
                   unsigned count, int transposed, int zero)
{
    (void)acc, (void)wp, (void)ap, (void)skip, (void)count, (void)transposed, (void)zero;
}
#endif
