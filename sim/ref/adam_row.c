/* SPDX-License-Identifier: Apache-2.0 */
/* Adam over many elements at once, eight lanes at a time where the CPU has
 * AVX2: the golden model's OPTIM ADAM (bit-exact with ntpu_adam_f32) and the
 * host optimizer (plain IEEE fp32 in the same order) both run it.
 *
 * The vector unit's mul, div, sqrt and add differ from IEEE fp32 only where a
 * subnormal, an infinity or a NaN takes part: it reads subnormals as zero,
 * flushes results below 2^-126 (after rounding to 24 bits with an unbounded
 * exponent) and makes NaN canonical. When every operand and every IEEE result
 * is zero or a finite normal above 2^-126, each IEEE operation gave exactly the
 * device's result: a result above 2^-126 means the exact one was too (rounding
 * is monotonic and 2^-126 representable), where both roundings agree; a zero
 * means the exact magnitude was at most 2^-150, which the device flushes to the
 * same signed zero. 2^-126 itself is left out, as IEEE rounds up to it from
 * exact values the device flushes. A lane that fails this test anywhere is
 * done again by ntpu_adam_f32 from its inputs. */
#include <math.h>
#include <string.h>

#include "ntpu/numerics.h"
#include "numerics_internal.h"

/* The longest period the vector path takes, and its constant table's lanes:
 * lcm(period, 8) <= 8 * period. */
#define ADAM_MAX_N 64u
#define ADAM_MAX_TABLE (8u * ADAM_MAX_N)

/* Element i's constants (lane i % period of each row of k) into e. */
static void lane_consts(uint32_t e[NTPU_ADAM_CONSTS], const uint32_t *k, unsigned period, size_t i)
{
    for (unsigned c = 0; c < NTPU_ADAM_CONSTS; c++)
        e[c] = k[(size_t)c * period + i % period];
}

/* ntpu_adam_f32's steps in IEEE fp32 (the host optimizer's element), on bit patterns. */
static void ieee_one(uint32_t *pb, uint32_t gb, uint32_t *mb, uint32_t *vb, const uint32_t kb[NTPU_ADAM_CONSTS],
                     int decoupled)
{
    float k[NTPU_ADAM_CONSTS], p = ntpu_f32_from_bits(*pb), g = ntpu_f32_from_bits(gb);
    memcpy(k, kb, sizeof k);
    if (decoupled)
        p *= k[NTPU_ADAM_K_WD];
    else
        g += k[NTPU_ADAM_K_WD] * p;
    const float m = k[NTPU_ADAM_K_B1] * ntpu_f32_from_bits(*mb) + k[NTPU_ADAM_K_1MB1] * g;
    const float v = k[NTPU_ADAM_K_B2] * ntpu_f32_from_bits(*vb) + k[NTPU_ADAM_K_1MB2] * g * g;
    p -= k[NTPU_ADAM_K_LR] * (m / k[NTPU_ADAM_K_C1]) / (sqrtf(v / k[NTPU_ADAM_K_C2]) + k[NTPU_ADAM_K_EPS]);
    *pb = ntpu_f32_bits(p);
    *mb = ntpu_f32_bits(m);
    *vb = ntpu_f32_bits(v);
}

/* Element i, one at a time; the arrays are read and written by memcpy. */
static void adam_one(void *p, const void *g, void *m, void *v, size_t i, const uint32_t *k, unsigned period,
                     int decoupled, ntpu_adam_arith arith)
{
    uint32_t pi, gi, mi, vi, e[NTPU_ADAM_CONSTS];
    memcpy(&pi, (uint8_t *)p + 4 * i, 4);
    memcpy(&gi, (const uint8_t *)g + 4 * i, 4);
    memcpy(&mi, (uint8_t *)m + 4 * i, 4);
    memcpy(&vi, (uint8_t *)v + 4 * i, 4);
    lane_consts(e, k, period, i);
    if (arith == NTPU_ADAM_DEVICE)
        ntpu_adam_f32(&pi, gi, &mi, &vi, e, decoupled);
    else
        ieee_one(&pi, gi, &mi, &vi, e, decoupled);
    memcpy((uint8_t *)p + 4 * i, &pi, 4);
    memcpy((uint8_t *)m + 4 * i, &mi, 4);
    memcpy((uint8_t *)v + 4 * i, &vi, 4);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* Not zero and not a finite normal above 2^-126: where IEEE and the device may part. */
static int off_grid_bits(uint32_t u)
{
    const uint32_t a = u & 0x7FFFFFFFu;
    return (a != 0 && a <= 0x00800000u) || a >= 0x7F800000u;
}

static unsigned gcd(unsigned a, unsigned b)
{
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The constants laid out for eight lanes at a time: k[c][j] is constant c of
 * element j % period, over lcm(period, 8) lanes, so that the block of eight
 * elements from i finds its lanes at i % lanes, contiguous; bad[j] is all ones
 * where a constant of that lane is off the grid. */
typedef struct adam_table {
    float k[NTPU_ADAM_CONSTS][ADAM_MAX_TABLE];
    uint32_t bad[ADAM_MAX_TABLE];
    unsigned lanes;
    int c1_one; /* every lane's C1 is 1.0 */
} adam_table;

static void table_fill(adam_table *t, const uint32_t *k, unsigned period)
{
    t->lanes = period / gcd(period, 8) * 8;
    t->c1_one = 1;
    for (unsigned j = 0; j < t->lanes; j++) {
        uint32_t e[NTPU_ADAM_CONSTS];
        lane_consts(e, k, period, j);
        t->bad[j] = 0;
        for (unsigned c = 0; c < NTPU_ADAM_CONSTS; c++) {
            memcpy(&t->k[c][j], &e[c], 4);
            if (off_grid_bits(e[c]))
                t->bad[j] = 0xFFFFFFFFu;
        }
        t->c1_one &= e[NTPU_ADAM_K_C1] == 0x3F800000u;
    }
}

#define ADAM_TARGET __attribute__((target("avx2")))

/* One block's operands and results, eight lanes each, and what the grid test
 * has seen of them: with a2 a value's bits shifted left once (its magnitude
 * doubled, the sign gone), lo is the least a2 - 2 and hi the greatest a2. A
 * value is off the grid (not zero, not a finite normal above 2^-126) iff a2 - 2
 * is at most 0x00FFFFFE (magnitude bits 1 .. 0x00800000; a zero's wraps to the
 * top) or a2 is at least 0xFF000000 (Inf, NaN): two running bounds per lane
 * instead of a mask per value. */
typedef struct adam8_io {
    __m256 p, g, m, v;
    __m256i lo, hi;
} adam8_io;

ADAM_TARGET static inline void see(adam8_io *io, __m256 x)
{
    const __m256i a2 = _mm256_slli_epi32(_mm256_castps_si256(x), 1);
    io->lo = _mm256_min_epu32(io->lo, _mm256_sub_epi32(a2, _mm256_set1_epi32(2)));
    io->hi = _mm256_max_epu32(io->hi, a2);
}

/* The lanes where see() met a value off the grid, as a mask. */
ADAM_TARGET static inline __m256i off_grid_lanes(const adam8_io *io)
{
    const __m256i small = _mm256_cmpeq_epi32(_mm256_min_epu32(io->lo, _mm256_set1_epi32(0x00FFFFFE)), io->lo);
    const __m256i big = _mm256_cmpeq_epi32(_mm256_max_epu32(io->hi, _mm256_set1_epi32((int)0xFF000000u)), io->hi);
    return _mm256_or_si256(small, big);
}

/* ntpu_adam_f32's steps on eight lanes in IEEE fp32 (its order, no fused
 * operation), with `check` every result tested into io->bad. c1_one: every
 * lane's C1 is 1.0 (from about step 170 on with beta1 = 0.9), and m / 1.0 is
 * m exactly (a NaN stays the same quiet NaN), so the divider, which bounds
 * this loop, skips that division. */
ADAM_TARGET __attribute__((always_inline)) static inline void adam8(const adam_table *t, unsigned at, int decoupled,
                                                                    int check, int c1_one, adam8_io *io)
{
#define K(c) _mm256_loadu_ps(&t->k[c][at])
#define CHECK(e) (x = (e), check ? see(io, x) : (void)0, x)
    __m256 x, gi = io->g, p = io->p;
    if (decoupled)
        p = CHECK(_mm256_mul_ps(p, K(NTPU_ADAM_K_WD)));
    else
        gi = CHECK(_mm256_add_ps(gi, CHECK(_mm256_mul_ps(K(NTPU_ADAM_K_WD), p))));
    const __m256 m1 = CHECK(_mm256_mul_ps(K(NTPU_ADAM_K_B1), io->m));
    io->m = CHECK(_mm256_add_ps(m1, CHECK(_mm256_mul_ps(K(NTPU_ADAM_K_1MB1), gi))));
    const __m256 v1 = CHECK(_mm256_mul_ps(K(NTPU_ADAM_K_B2), io->v));
    const __m256 g2 = CHECK(_mm256_mul_ps(CHECK(_mm256_mul_ps(K(NTPU_ADAM_K_1MB2), gi)), gi));
    io->v = CHECK(_mm256_add_ps(v1, g2));
    const __m256 mc = c1_one ? io->m : CHECK(_mm256_div_ps(io->m, K(NTPU_ADAM_K_C1)));
    const __m256 num = CHECK(_mm256_mul_ps(K(NTPU_ADAM_K_LR), mc));
    const __m256 root = CHECK(_mm256_sqrt_ps(CHECK(_mm256_div_ps(io->v, K(NTPU_ADAM_K_C2)))));
    const __m256 den = CHECK(_mm256_add_ps(root, K(NTPU_ADAM_K_EPS)));
    io->p = CHECK(_mm256_sub_ps(p, CHECK(_mm256_div_ps(num, den))));
#undef CHECK
#undef K
}

/* The lanes of one block (elements i .. i+7) that failed the test, again by
 * the element function from the inputs, still in memory (the block has not
 * written yet); out[] (p, m, v) holds the vector results. */
static void redo_lanes(int mask, const float *p, const float *g, const float *m, const float *v, float out[3][8],
                       const uint32_t *k, unsigned period, size_t i, int decoupled)
{
    for (unsigned l = 0; l < 8; l++) {
        if (!(mask >> l & 1))
            continue;
        uint32_t pv, gv, mv, vv, e[NTPU_ADAM_CONSTS];
        memcpy(&pv, p + i + l, 4);
        memcpy(&gv, g + i + l, 4);
        memcpy(&mv, m + i + l, 4);
        memcpy(&vv, v + i + l, 4);
        lane_consts(e, k, period, i + l);
        ntpu_adam_f32(&pv, gv, &mv, &vv, e, decoupled);
        memcpy(&out[0][l], &pv, 4);
        memcpy(&out[1][l], &mv, 4);
        memcpy(&out[2][l], &vv, 4);
    }
}

/* Elements 0 .. count/8*8 - 1, eight at a time; returns how many it did. Each
 * block reads all its inputs before it writes. `check`: the device's
 * arithmetic, lanes off the grid redone by the element function. `one`: the
 * table is one block of eight lanes (period 1, 2, 4, 8), its loads loop-invariant. */
ADAM_TARGET __attribute__((always_inline)) static inline size_t adam_avx(float *p, const float *g, float *m, float *v,
                                                                         size_t count, const adam_table *t,
                                                                         const uint32_t *k, unsigned period,
                                                                         int decoupled, int check, int one, int c1_one)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const unsigned at = one ? 0u : (unsigned)(i % t->lanes);
        adam8_io io = {_mm256_loadu_ps(p + i), _mm256_loadu_ps(g + i), _mm256_loadu_ps(m + i),
                       _mm256_loadu_ps(v + i), _mm256_set1_epi32(-1),  _mm256_setzero_si256()};
        if (check) {
            see(&io, io.p);
            see(&io, io.g);
            see(&io, io.m);
            see(&io, io.v);
        }
        adam8(t, at, decoupled, check, c1_one, &io);
        int mask = 0;
        if (check) {
            const __m256i bad = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)&t->bad[at]), off_grid_lanes(&io));
            mask = _mm256_movemask_ps(_mm256_castsi256_ps(bad));
        }
        if (!mask) {
            _mm256_storeu_ps(p + i, io.p);
            _mm256_storeu_ps(m + i, io.m);
            _mm256_storeu_ps(v + i, io.v);
            continue;
        }
        float out[3][8];
        _mm256_storeu_ps(out[0], io.p);
        _mm256_storeu_ps(out[1], io.m);
        _mm256_storeu_ps(out[2], io.v);
        redo_lanes(mask, p, g, m, v, out, k, period, i, decoupled);
        memcpy(p + i, out[0], sizeof out[0]);
        memcpy(m + i, out[1], sizeof out[1]);
        memcpy(v + i, out[2], sizeof out[2]);
    }
    return i;
}

/* The arithmetics, each compiled with its own branches folded away. */
ADAM_TARGET static size_t adam_avx_device(float *p, const float *g, float *m, float *v, size_t count,
                                          const adam_table *t, const uint32_t *k, unsigned period, int decoupled)
{
    if (t->lanes == 8 && t->c1_one)
        return adam_avx(p, g, m, v, count, t, k, period, decoupled, 1, 1, 1);
    if (t->lanes == 8)
        return adam_avx(p, g, m, v, count, t, k, period, decoupled, 1, 1, 0);
    return adam_avx(p, g, m, v, count, t, k, period, decoupled, 1, 0, 0);
}

ADAM_TARGET static size_t adam_avx_ieee(float *p, const float *g, float *m, float *v, size_t count, const adam_table *t,
                                        int decoupled)
{
    if (t->lanes == 8 && t->c1_one)
        return adam_avx(p, g, m, v, count, t, NULL, 1, decoupled, 0, 1, 1);
    if (t->lanes == 8)
        return adam_avx(p, g, m, v, count, t, NULL, 1, decoupled, 0, 1, 0);
    return adam_avx(p, g, m, v, count, t, NULL, 1, decoupled, 0, 0, 0);
}
#endif

void ntpu_adam_f32_row(void *p, const void *g, void *m, void *v, size_t count, const uint32_t *k, unsigned period,
                       int decoupled, ntpu_adam_arith arith)
{
    size_t done = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (count >= 8 && period <= ADAM_MAX_N && __builtin_cpu_supports("avx2")) {
        adam_table t;
        table_fill(&t, k, period);
        done = arith == NTPU_ADAM_DEVICE ? adam_avx_device(p, g, m, v, count, &t, k, period, decoupled)
                                         : adam_avx_ieee(p, g, m, v, count, &t, decoupled);
    }
#endif
    for (size_t i = done; i < count; i++)
        adam_one(p, g, m, v, i, k, period, decoupled, arith);
}
