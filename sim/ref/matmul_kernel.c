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
 * made canonical once at the end: once NaN, a chain stays NaN.
 *
 * The speed comes from doing a block of rows together: their chains are
 * independent, so the adders never wait for one another, and the columns of a
 * row map onto SIMD lanes. Each chain still sees k (the array row i) ascending. */
#include <string.h>

#include "ntpu/numerics.h"
#include "numerics_internal.h"
#include "ref_chain.h"

#define MAX_N 64u

/* GCC/Clang vector types: eight lanes, which the compiler maps onto whatever
 * SIMD the target has (two SSE registers, or one AVX register). */
typedef float f32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));

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
 * the 2^-126 grid). The checks run on the bf16 bits, sixteen lanes at a time:
 * field e bad when 1 <= e <= thr, that is (e << 7) - 0x80 < thr << 7 in 16
 * bits, where e = 0 wraps to 0xFF80 and never counts; thr above 256 marks
 * every nonzero field, as 256 does. Widened by interleaving with zeros: the
 * bf16 bits become the high half of each fp32. */
static inline __attribute__((always_inline)) int convert_a(float *af, const uint16_t *a, size_t count, uint32_t thr_exp)
{
    const u16x16 zero = {0}, thr = zero + (uint16_t)((thr_exp < 256u ? thr_exp : 256u) << 7);
    u16x16 bad = {0};
    for (size_t k = 0; k < count; k += 16) {
        u16x16 v;
        memcpy(&v, a + k, sizeof v);
        const u16x16 e = v & 0x7F80u;
        bad |= (u16x16)((u16x16)(e - 0x80u) < thr);
        v &= ~((u16x16)(e == 0u) & 0x7FFFu); /* a subnormal reads as zero of its sign */
        const u16x16 lo = __builtin_shufflevector(zero, v, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        const u16x16 hi = __builtin_shufflevector(zero, v, 0, 24, 1, 25, 2, 26, 3, 27, 4, 28, 5, 29, 6, 30, 7, 31);
        memcpy(af + k, &lo, sizeof lo);
        memcpy(af + k + 8, &hi, sizeof hi);
    }
    uint64_t w[4];
    memcpy(w, &bad, sizeof w);
    return (w[0] | w[1] | w[2] | w[3]) == 0;
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
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++)
            memcpy(&c[r], acc + (size_t)r * n + q, sizeof c[r]);
        for (unsigned i = 0; i < n; i++) {
            f32x8 wv;
            memcpy(&wv, wf + (size_t)i * n + q, sizeof wv);
#pragma GCC unroll 8
            for (unsigned r = 0; r < block; r++)
                c[r] += af[r * rs + i * is] * wv;
        }
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++) {
            u32x8 bits = (u32x8)c[r];
            u32x8 nan = (u32x8)(c[r] != c[r]);
            bits = (bits & ~nan) | (NTPU_F32_CANONICAL_NAN & nan);
            memcpy(acc + (size_t)r * n + q, &bits, sizeof bits);
        }
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
        if (!transposed) {
            for (; m + block <= rows; m += block)
                if (!convert_a(af, a + m * n, (size_t)block * n, thr) || !chains_n(acc + m * n, af, n, 1, wf, n, block))
                    for (unsigned r = 0; r < block; r++)
                        ntpu_mac_bf16_row(acc + (m + r) * n, a + (m + r) * n, w, n);
        } else {
            /* One tile is n rows: converted once, its columns are the rows. */
            for (; m < rows; m += n) {
                int tile_ok = convert_a(af, a + (m / n) * t_stride, (size_t)n * n, thr);
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

/* The least nonzero exponent field of w (n x n, n a multiple of 8), 255 when
 * none is, with w flushed into wf; *any_wild: some lane is an inf or a NaN. */
static inline __attribute__((always_inline)) unsigned prepare_lanes(const uint16_t *w, float *wf, unsigned n,
                                                                    int *any_wild)
{
    u32x8 wmin = (u32x8){0} + 255u, dummy = {0}, wild = {0};
    for (unsigned k = 0; k < n * n; k += 8) {
        u32x8 bits;
        LOAD_BF16(bits, dummy, w + k, (u32x8){0});
        memcpy(wf + k, &bits, sizeof bits);
        u32x8 e = (((bits >> 23) & 0xFFu) - 1u) & 0xFFu; /* 0 -> 255: zeros never limit */
        u32x8 lt = (u32x8)(e < wmin);
        wmin = (e & lt) | (wmin & ~lt);
        wild |= (u32x8)(e == 254u);
    }
    unsigned w_exp = 255;
    *any_wild = 0;
    for (unsigned l = 0; l < 8; l++) {
        if (wmin[l] + 1u < w_exp)
            w_exp = wmin[l] + 1u;
        *any_wild |= wild[l] != 0;
    }
    return w_exp;
}

#ifdef HAVE_AVX2_VARIANT
/* AVX2 has the unsigned compares of 32-bit lanes; SSE2 makes them scalar. */
__attribute__((target("avx2"))) static unsigned prepare_avx2(const uint16_t *w, float *wf, unsigned n, int *any_wild)
{
    return prepare_lanes(w, wf, n, any_wild);
}
#endif

static unsigned prepare_any(const uint16_t *w, float *wf, unsigned n, int *any_wild)
{
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2"))
        return prepare_avx2(w, wf, n, any_wild);
#endif
    return prepare_lanes(w, wf, n, any_wild);
}

void ntpu_chain_tile_prepare(ntpu_chain_tile *t, float *wf, unsigned n)
{
    unsigned w_exp = 255; /* the least nonzero exponent field: zeros never limit */
    uint64_t wild = 0;
    int any_wild = 1;
    if (n % 8 == 0)
        w_exp = prepare_any(t->w, wf, n, &any_wild);
    for (unsigned i = 0; i < n && any_wild; i++) /* every lane, where vectors do not fit or a row may be wild */
        for (unsigned j = 0; j < n; j++) {
            uint32_t bits = (uint32_t)t->w[i * n + j] << 16, e = (bits >> 23) & 0xFFu;
            if (e == 0)
                bits &= 0x80000000u; /* a subnormal reads as zero of its sign */
            else if (e < w_exp)
                w_exp = e;
            if (e == 255)
                wild |= 1ull << i;
            wf[i * n + j] = ntpu_f32_from_bits(bits);
        }
    t->wf = wf;
    t->w_wild = wild;
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
    size_t rel = m - t->row0;
    if (t->locate)
        return t->locate(t, rel, n);
    return t->transposed ? t->a + rel / n * t->t_stride : t->a + rel * n;
}

/* Floats of converted A one block of a chain may hold: every tile's, on the stack. */
#define CHAIN_AF_FLOATS 16384u

/* Whether f holds the 64 bf16 lanes at src, widened: a lane that differs,
 * or a subnormal (f holds it flushed), says no. Compared as bf16: the high
 * halves of f, sixteen lanes at a time (a shift, a pack and a permute). */
static inline __attribute__((always_inline)) int same_lanes(const float *f, const uint16_t *src)
{
    u16x16 d = {0};
#pragma GCC unroll 4
    for (unsigned k = 0; k < REF_A_BLOCK_LANES; k += 16) {
        u16x16 s, f0, f1;
        memcpy(&s, src + k, sizeof s);
        memcpy(&f0, f + k, sizeof f0);
        memcpy(&f1, f + k + 8, sizeof f1);
        d |= __builtin_shufflevector(f0, f1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31) ^ s;
    }
    uint64_t w[4];
    memcpy(w, &d, sizeof w);
    return (w[0] | w[1] | w[2] | w[3]) == 0;
}

/* The 64 lanes at src converted (as convert_a does) into b, with the least
 * exponent field - 1 that convert_a's check compares and both zero-k masks. */
static inline __attribute__((always_inline)) void a_block_fill(ref_a_block *b, const uint16_t *src)
{
    u32x8 e_min = (u32x8){0} - 1u;
    for (unsigned k = 0; k < REF_A_BLOCK_LANES; k += 8) {
        u16x8 h;
        memcpy(&h, src + k, sizeof h);
        u32x8 u = __builtin_convertvector(h, u32x8) << 16;
        u32x8 e = (u >> 23) & 0xFFu, d = e - 1u; /* a zero or subnormal: 2^32 - 1, never below a threshold */
        u32x8 lt = (u32x8)(d < e_min);
        e_min = (d & lt) | (e_min & ~lt);
        u32x8 bits = u & ((u32x8)(e != 0u) | 0x80000000u);
        memcpy(b->f + k, &bits, sizeof bits);
    }
    b->e_min = e_min[0];
    for (unsigned l = 1; l < 8; l++)
        if (e_min[l] < b->e_min)
            b->e_min = e_min[l];
    b->key = src;
    b->zero_rows = zero_ks(b->f, 8, 8);
    b->zero_cols = zero_ks_t8(b->f);
}

/* Whether no command wrote UB's lanes src .. src + 63 (8 rows of N = 8, in
 * at most two stamped groups) after write number `seen`; 0 outside UB or
 * without stamps, where only a comparison can tell. */
static inline __attribute__((always_inline)) int unwritten_since(const ref_ub_stamps *u, const uint16_t *src,
                                                                 uint64_t seen)
{
    if (!u || src < u->ub || (size_t)(src - u->ub) + REF_A_BLOCK_LANES > u->lanes)
        return 0;
    const size_t row = (size_t)(src - u->ub) / 8u;
    return u->stamp[row / REF_UB_STAMP_ROWS] <= seen && u->stamp[(row + 7u) / REF_UB_STAMP_ROWS] <= seen;
}

/* The cache's block for src: kept when its lanes are still those of src (UB
 * not written there since, or the same lanes), else converted anew; NULL when
 * the slot holds another block the current chain block reads (its floats are
 * still to be used). */
static inline __attribute__((always_inline)) const ref_a_block *a_block_get(ref_a_cache *c, const uint16_t *src)
{
    ref_a_block *b = &c->slot[((uintptr_t)src / (REF_A_BLOCK_LANES * sizeof *src)) % REF_A_CACHE_SLOTS];
    if (b->key != src || (!unwritten_since(c->ub, src, b->seen) && !same_lanes(b->f, src))) {
        if (b->used == c->stamp)
            return NULL;
        a_block_fill(b, src);
    }
    b->seen = c->ub ? c->ub->now : 0;
    b->used = c->stamp;
    return b;
}

/* A of tile t for the block at row m, as fp32: from the cache when it can
 * hold it (N = 8 and blocks of 8: each tile's block is 64 lanes), else
 * converted into af. NULL when a lane fails the grid check (convert_a).
 * *skip: the zero k the block may skip (see chain_block). */
static inline __attribute__((always_inline)) const float *tile_a(const ntpu_chain_tile *t, size_t m, unsigned n,
                                                                 unsigned block, int may_skip, float *af,
                                                                 ref_a_cache *cache, uint64_t *skip)
{
    const uint16_t *src = tile_src(t, m, n);
    *skip = 0;
    const ref_a_block *b = cache && t->cached && n == 8 && block == 8 ? a_block_get(cache, src) : NULL;
    if (b) {
        if (b->e_min < t->a_thr)
            return NULL;
        if (may_skip)
            *skip = (t->transposed ? b->zero_cols : b->zero_rows) & ~t->w_wild;
        return b->f;
    }
    /* a transposed tile's columns are the rows: converted whole */
    if (!convert_a(af, src, t->transposed ? (size_t)n * n : (size_t)block * n, t->a_thr))
        return NULL;
    if (may_skip && !t->transposed)
        *skip = zero_ks(af, block, n) & ~t->w_wild;
    else if (may_skip && n == 8 && block == 8) /* a transposed tile, its columns the whole block */
        *skip = zero_ks_t8(af) & ~t->w_wild;
    return af;
}

/* c[r] += a(r, i) * w(i, q .. q + 7) for k = i ascending, a(r, i) at
 * a[r * rs + i * is] and w's row i at wq + i * n; a k in `skip` is left out. */
static inline __attribute__((always_inline)) void tile_products(f32x8 *c, const float *a, unsigned rs, unsigned is,
                                                                const float *wq, unsigned n, unsigned block,
                                                                uint64_t skip)
{
#pragma GCC unroll 8
    for (unsigned i = 0; i < n; i++) {
        if ((skip >> i) & 1u)
            continue;
        f32x8 wv;
        memcpy(&wv, wq + (size_t)i * n, sizeof wv);
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++)
            c[r] += a[r * rs + i * is] * wv;
    }
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
 * rounds to a normal number. Checked once per block, at the load. */
static inline __attribute__((always_inline)) int chain_block(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                             unsigned count, size_t m, unsigned n, unsigned block,
                                                             ref_a_cache *cache)
{
    u32x8 bad = {0}, negz = {0};
    for (unsigned k = 0; k < block * n; k += 8) {
        u32x8 c;
        memcpy(&c, acc + k, sizeof c);
        bad |= (u32x8)((c & 0x7FFFFFFFu) != 0u) & (u32x8)(((c >> 23) & 0xFFu) < 24u);
        negz |= (u32x8)(c == 0x80000000u);
    }
    int may_skip = 1;
    for (unsigned l = 0; l < 8; l++) {
        if (bad[l])
            return 0;
        if (negz[l])
            may_skip = 0;
    }
    if (cache)
        cache->stamp++; /* a new block: every slot free to refill */
    float af[CHAIN_AF_FLOATS];
    const float *at_a[REF_CHAIN_MAX];
    uint64_t skip[REF_CHAIN_MAX];
    size_t at = 0;
    for (unsigned e = 0; e < count; e++) {
        const size_t size = tiles[e].transposed ? (size_t)n * n : (size_t)block * n;
        if (at + size > CHAIN_AF_FLOATS)
            return 0;
        at_a[e] = tile_a(tiles + e, m, n, block, may_skip, af + at, cache, &skip[e]);
        if (!at_a[e])
            return 0;
        if (at_a[e] == af + at)
            at += size;
    }
    for (unsigned q = 0; q < n; q += 8) {
        f32x8 c[8];
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++)
            memcpy(&c[r], acc + (size_t)r * n + q, sizeof c[r]);
        for (unsigned e = 0; e < count; e++) {
            const ntpu_chain_tile *t = tiles + e;
            /* constant strides, and most tiles without a branch per k */
            if (!t->transposed && !skip[e])
                tile_products(c, at_a[e], n, 1, t->wf + q, n, block, 0);
            else if (!t->transposed)
                tile_products(c, at_a[e], n, 1, t->wf + q, n, block, skip[e]);
            else if (!skip[e]) /* a transposed tile: the block's rows are its columns */
                tile_products(c, at_a[e] + (m - t->row0) % n, 1, n, t->wf + q, n, block, 0);
            else
                tile_products(c, at_a[e] + (m - t->row0) % n, 1, n, t->wf + q, n, block, skip[e]);
        }
#pragma GCC unroll 8
        for (unsigned r = 0; r < block; r++) {
            u32x8 bits = (u32x8)c[r];
            u32x8 nan = (u32x8)(c[r] != c[r]);
            bits = (bits & ~nan) | (NTPU_F32_CANONICAL_NAN & nan);
            memcpy(acc + (size_t)r * n + q, &bits, sizeof bits);
        }
    }
    return 1;
}

static inline __attribute__((always_inline)) int chain_block_n(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                               unsigned count, size_t m, unsigned n, unsigned block,
                                                               ref_a_cache *cache)
{
    return n == 8    ? chain_block(acc, tiles, count, m, 8, block, cache)
           : n == 16 ? chain_block(acc, tiles, count, m, 16, block, cache)
                     : chain_block(acc, tiles, count, m, n, block, cache);
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
                row[i] = src[(size_t)i * n + (r - t->row0) % n];
            src = row;
        }
        ntpu_mac_bf16_row(acc + r * n, src, t->w, n);
    }
}

static inline __attribute__((always_inline)) void chain_impl(uint32_t *acc, const ntpu_chain_tile *tiles,
                                                             unsigned count, unsigned n, size_t m0, size_t m1,
                                                             unsigned block, ref_a_cache *cache)
{
    size_t m = m0;
    if (n % 8 == 0)
        for (; m + block <= m1; m += block)
            if (!chain_block_n(acc + m * n, tiles, count, m, n, block, cache))
                for (unsigned e = 0; e < count; e++) /* each tile as the one-tile kernel runs it */
                    if (!chain_block_n(acc + m * n, tiles + e, 1, m, n, block, cache))
                        chain_scalar(acc, tiles + e, m, block, n);
    for (; m < m1; m++)
        for (unsigned e = 0; e < count; e++)
            chain_scalar(acc, tiles + e, m, 1, n);
}

#ifdef HAVE_AVX2_VARIANT
__attribute__((target("avx2"))) static void chain_avx2(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count,
                                                       unsigned n, size_t m0, size_t m1, ref_a_cache *cache)
{
    chain_impl(acc, tiles, count, n, m0, m1, 8, cache);
}
#endif

/* Blocks of four rows: the cache (blocks of eight) stays unused. */
void ntpu_mac_bf16_chain_generic(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0,
                                 size_t m1, ref_a_cache *cache)
{
    chain_impl(acc, tiles, count, n, m0, m1, 4, cache);
}

void ntpu_mac_bf16_chain(uint32_t *acc, const ntpu_chain_tile *tiles, unsigned count, unsigned n, size_t m0, size_t m1,
                         ref_a_cache *cache)
{
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2")) {
        chain_avx2(acc, tiles, count, n, m0, m1, cache);
        return;
    }
#endif
    ntpu_mac_bf16_chain_generic(acc, tiles, count, n, m0, m1, cache);
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
