/* SPDX-License-Identifier: Apache-2.0 */
/* The link's CRC-32, fast: every frame is checked at both ends, so on the
 * golden model this ran at zlib's speed over every byte twice.
 *
 * Polynomials below are over GF(2). Message bit j (LSB of byte 0 first) of an
 * L-bit message is the coefficient of x^(L-1-j), and the CRC without its
 * pre- and post-inversion is M(x) * x^32 mod P(x), P = 0x104C11DB7.
 *
 * Large buffers: four 16-byte lanes are folded forward 64 bytes at a time
 * with carry-less multiplies (PCLMULQDQ): a 128-bit chunk A = H x^64 + Lo is
 * congruent, D bits further on, to H (x^(D+64) mod P) + Lo (x^D mod P), a
 * polynomial of fewer than 96 bits that is XORed into the chunk there. The
 * last 16-byte remainder and the tail then go through the tables as if they
 * were message bytes (they are congruent to the message). Everything else,
 * and CPUs without the instruction, use tables eight bytes at a time, and the
 * last 1..7 bytes in one more step. */
#include "ntpu_crc32.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define CRC32_REFLECTED 0xEDB88320u /* P without x^32, bits reversed */
#define CRC32_NORMAL 0x04C11DB7u    /* P without x^32 */

/* table[k][b]: the CRC state after byte b followed by k zero bytes. */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
/* Set once the tables are made: most frames are a few bytes, and a plain
 * load is all the check then costs. */
static atomic_int tables_made;

static void make_tables(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++)
            c = (c & 1u) ? (c >> 1) ^ CRC32_REFLECTED : c >> 1;
        table[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t b = 0; b < 256; b++)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xFFu];
    atomic_store_explicit(&tables_made, 1, memory_order_release);
}

static inline void need_tables(void)
{
    if (!atomic_load_explicit(&tables_made, memory_order_acquire))
        pthread_once(&table_once, make_tables);
}

/* The state c advanced over the four bytes of w, least significant first. */
static inline uint32_t word_step(uint32_t c, uint32_t w)
{
    c ^= w;
    return table[3][c & 0xFFu] ^ table[2][(c >> 8) & 0xFFu] ^ table[1][(c >> 16) & 0xFFu] ^ table[0][c >> 24];
}

uint32_t ntpu_crc32_word(uint32_t crc, uint32_t w)
{
    need_tables();
    return ~word_step(~crc, w);
}

static uint32_t load32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The table lookups of k (1..7) bytes of v in one step: byte i, followed by
 * k-1-i more bytes, is table[k-1-i] of it. They do not wait for each other,
 * as a byte at a time they would. */
static inline __attribute__((always_inline)) uint32_t bytes_step(uint64_t v, unsigned k)
{
    uint32_t out = 0;
    for (unsigned i = 0; i < k; i++)
        out ^= table[k - 1 - i][(v >> (8 * i)) & 0xFFu];
    return out;
}

/* The state c advanced over the last k (1..7) bytes at p in one step; what
 * is left of c moves down k bytes. Most frames end in such a tail, and most
 * are a few bytes long. */
static inline uint32_t tail_step(uint32_t c, const uint8_t *p, size_t k)
{
    uint64_t v;
    if (k >= 4) /* two loads that overlap, none past the end */
        v = load32(p) | ((uint64_t)load32(p + k - 4) >> (8 * (8 - k))) << 32;
    else
        v = p[0] | (k > 1 ? (uint64_t)p[1] << 8 : 0) | (k > 2 ? (uint64_t)p[2] << 16 : 0);
    v ^= c;
    switch (k) { /* a constant k each: the lookups unrolled */
    case 1: return (c >> 8) ^ bytes_step(v, 1);
    case 2: return (c >> 16) ^ bytes_step(v, 2);
    case 3: return (c >> 24) ^ bytes_step(v, 3);
    case 4: return bytes_step(v, 4);
    case 5: return bytes_step(v, 5);
    case 6: return bytes_step(v, 6);
    default: return bytes_step(v, 7);
    }
}

/* The CRC state c (already inverted) advanced over n bytes. */
static uint32_t by_tables(uint32_t c, const uint8_t *p, size_t n)
{
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t lo = c ^ load32(p), hi = load32(p + 4);
        c = table[7][lo & 0xFFu] ^ table[6][(lo >> 8) & 0xFFu] ^ table[5][(lo >> 16) & 0xFFu] ^ table[4][lo >> 24] ^
            table[3][hi & 0xFFu] ^ table[2][(hi >> 8) & 0xFFu] ^ table[1][(hi >> 16) & 0xFFu] ^ table[0][hi >> 24];
    }
    return n ? tail_step(c, p, n) : c;
}

uint32_t ntpu_crc32_tables(uint32_t crc, const void *p, size_t len)
{
    need_tables();
    return ~by_tables(~crc, p, len);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* Folding constants, made once: fold1024 for eight lanes, fold512 for four,
 * fold128 for one. */
static uint64_t fold1024[2], fold512[2], fold128[2];
static int have_clmul, have_vclmul;
static pthread_once_t clmul_once = PTHREAD_ONCE_INIT;

/* x^e mod P as a 32-bit polynomial, bit t the coefficient of x^t. */
static uint32_t x_pow_mod(unsigned e)
{
    uint32_t v = 1;
    while (e--)
        v = (v & 0x80000000u) ? (v << 1) ^ CRC32_NORMAL : v << 1;
    return v;
}

/* The operand PCLMULQDQ multiplies a lane half by so that the product, read
 * as a 128-bit chunk (bit k the coefficient of x^(127-k)), is that half times
 * x^e mod P: the bits of x^(e-1) mod P reversed into the top of 64 (the
 * product of two reflected operands comes out one bit short). */
static uint64_t fold_operand(unsigned e)
{
    uint32_t v = x_pow_mod(e - 1), r = 0;
    for (int t = 0; t < 32; t++)
        r |= ((v >> t) & 1u) << (31 - t);
    return (uint64_t)r << 32;
}

static void make_clmul(void)
{
    /* The low half of a lane is its first 64 message bits: it travels 64 bits further. */
    fold512[0] = fold_operand(512 + 64);
    fold512[1] = fold_operand(512);
    fold128[0] = fold_operand(128 + 64);
    fold128[1] = fold_operand(128);
    fold1024[0] = fold_operand(1024 + 64);
    fold1024[1] = fold_operand(1024);
    have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    have_vclmul = have_clmul && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq");
}

__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i x, __m128i k, __m128i next)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

/* The state c over n >= 64 bytes. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t by_clmul(uint32_t c, const uint8_t *p, size_t n)
{
    const __m128i k4 = _mm_set_epi64x((long long)fold512[1], (long long)fold512[0]);
    const __m128i k1 = _mm_set_epi64x((long long)fold128[1], (long long)fold128[0]);
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)c));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
        x0 = fold(x0, k4, _mm_loadu_si128((const __m128i *)p));
        x1 = fold(x1, k4, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = fold(x2, k4, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = fold(x3, k4, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    __m128i x = fold(fold(fold(x0, k1, x1), k1, x2), k1, x3);
    for (; n >= 16; p += 16, n -= 16)
        x = fold(x, k1, _mm_loadu_si128((const __m128i *)p));
    uint8_t rest[16];
    _mm_storeu_si128((__m128i *)rest, x);
    return by_tables(by_tables(0, rest, sizeof rest), p, n);
}

#define VCLMUL_TARGET __attribute__((target("vpclmulqdq,avx2,pclmul,sse4.1")))

/* 32 bytes at p, stored at d too unless d is NULL (ntpu_crc32_copy). */
VCLMUL_TARGET static inline __m256i load32b(const uint8_t *p, uint8_t *d)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)p);
    if (d)
        _mm256_storeu_si256((__m256i *)d, v);
    return v;
}

VCLMUL_TARGET static inline __m256i fold2(__m256i x, __m256i k, const uint8_t *next, uint8_t *d)
{
    const __m256i lo = _mm256_clmulepi64_epi128(x, k, 0x00), hi = _mm256_clmulepi64_epi128(x, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), load32b(next, d));
}

/* The state c over n >= 256 bytes: by_clmul's folding on eight 16-byte lanes,
 * two to a 256-bit register (VPCLMULQDQ multiplies each half on its own), 128
 * bytes a step: twice the lanes to hide the multiplies' latency. With d, the
 * bytes are copied there as they are read (NULL: a constant, folded away). */
VCLMUL_TARGET static inline __attribute__((always_inline)) uint32_t vclmul_impl(uint32_t c, const uint8_t *p, size_t n,
                                                                                uint8_t *d)
{
    const __m256i k8 = _mm256_set_epi64x((long long)fold1024[1], (long long)fold1024[0], (long long)fold1024[1],
                                         (long long)fold1024[0]);
    const __m128i k1 = _mm_set_epi64x((long long)fold128[1], (long long)fold128[0]);
    /* Four named registers, not an array: GCC kept the array on the stack,
     * a store and a reload in every fold's dependency chain. */
    __m256i y0 = load32b(p, d), y1 = load32b(p + 32, d ? d + 32 : NULL), y2 = load32b(p + 64, d ? d + 64 : NULL),
            y3 = load32b(p + 96, d ? d + 96 : NULL);
    y0 = _mm256_xor_si256(y0, _mm256_setr_epi32((int)c, 0, 0, 0, 0, 0, 0, 0));
    for (p += 128, n -= 128, d = d ? d + 128 : NULL; n >= 128; p += 128, n -= 128, d = d ? d + 128 : NULL) {
        y0 = fold2(y0, k8, p, d);
        y1 = fold2(y1, k8, p + 32, d ? d + 32 : NULL);
        y2 = fold2(y2, k8, p + 64, d ? d + 64 : NULL);
        y3 = fold2(y3, k8, p + 96, d ? d + 96 : NULL);
    }
    if (d) /* the last n < 128 bytes: copied whole, folded below as before */
        memcpy(d, p, n);
    const __m256i y[4] = {y0, y1, y2, y3};
    /* The eight lanes in message order, folded into one. */
    __m128i x = _mm256_castsi256_si128(y[0]);
    x = fold(x, k1, _mm256_extracti128_si256(y[0], 1));
    for (int i = 1; i < 4; i++)
        x = fold(fold(x, k1, _mm256_castsi256_si128(y[i])), k1, _mm256_extracti128_si256(y[i], 1));
    for (; n >= 16; p += 16, n -= 16)
        x = fold(x, k1, _mm_loadu_si128((const __m128i *)p));
    uint8_t rest[16];
    _mm_storeu_si128((__m128i *)rest, x);
    return by_tables(by_tables(0, rest, sizeof rest), p, n);
}

VCLMUL_TARGET static uint32_t by_vclmul(uint32_t c, const uint8_t *p, size_t n)
{
    return vclmul_impl(c, p, n, NULL);
}

VCLMUL_TARGET static uint32_t by_vclmul_copy(uint32_t c, const uint8_t *p, size_t n, uint8_t *d)
{
    return vclmul_impl(c, p, n, d);
}

uint32_t ntpu_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    if (len >= 256) {
        need_tables();
        pthread_once(&clmul_once, make_clmul);
        if (have_vclmul)
            return ~by_vclmul_copy(~crc, src, len, dst);
    }
    memcpy(dst, src, len);
    return ntpu_crc32(crc, dst, len);
}

uint32_t ntpu_crc32(uint32_t crc, const void *p, size_t len)
{
    need_tables();
    if (len >= 128) {
        pthread_once(&clmul_once, make_clmul);
        if (have_vclmul && len >= 256)
            return ~by_vclmul(~crc, p, len);
        if (have_clmul)
            return ~by_clmul(~crc, p, len);
    }
    return ~by_tables(~crc, p, len);
}
#else
uint32_t ntpu_crc32(uint32_t crc, const void *p, size_t len)
{
    return ntpu_crc32_tables(crc, p, len);
}

uint32_t ntpu_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
    return ntpu_crc32(crc, dst, len);
}
#endif
