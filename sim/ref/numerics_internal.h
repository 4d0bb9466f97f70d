/* SPDX-License-Identifier: Apache-2.0 */
/* Row kernels of the golden model, defined in numerics.c next to the
 * MACs they inline (one definition of the arithmetic, no call per MAC).
 * Internal to the library: not part of the public API. */
#ifndef NTPU_NUMERICS_INTERNAL_H
#define NTPU_NUMERICS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* An fp32's bit pattern and back (memcpy: no aliasing or FPU mode involved). Also used by the
 * tests and the RTL benches' vector generators. */
static inline uint32_t ntpu_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float ntpu_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* One activation row through the array: for i = 0 .. n-1 (ascending), for
 * every column j, acc[j] = mac(acc[j], a[i], w[i*n + j]).
 *   acc: n lanes (fp32 bits / int32 bits), updated in place
 *   a:   n lanes of 16 bits (bf16, or int8 in the low byte)
 *   w:   n x n lanes, row i = array row i */
void ntpu_mac_bf16_row(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n);
void ntpu_mac_int8_row(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n);

/* The same for `rows` consecutive rows (acc and a: rows x n lanes) against one
 * weight tile, bit-exact with the row kernels but much faster
 * (matmul_kernel.c); what MATMUL runs. */
void ntpu_mac_bf16_rows(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows);
void ntpu_mac_int8_rows(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows);
/* The same for MATMUL's TRANSPOSE_A: `rows` (a multiple of n) rows taken from
 * n x n tiles of a, t_stride lanes apart, row m being column m % n of tile m / n. */
void ntpu_mac_bf16_rows_t(uint32_t *acc, const uint16_t *a, size_t t_stride, const uint16_t *w, unsigned n,
                          size_t rows);

/* The same without the AVX2 variants they pick when the CPU has it: for tests. */
void ntpu_mac_bf16_rows_generic(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows);
void ntpu_mac_int8_rows_generic(uint32_t *acc, const uint16_t *a, const uint16_t *w, unsigned n, size_t rows);
void ntpu_mac_bf16_rows_t_generic(uint32_t *acc, const uint16_t *a, size_t t_stride, const uint16_t *w, unsigned n,
                                  size_t rows);

/* dst[i] = ntpu_bf16_from_f32_bits(bits of fp32 i of src) for n values, eight
 * at a time where the CPU has AVX2, else four: the host's conversions of whole rows. */
void ntpu_bf16_from_f32_row(uint16_t *dst, const void *src, size_t n);
/* The same on `groups` runs of `lanes` fp32 values, run g at src + g *
 * src_stride going to dst + g * dst_stride (strides in values): a matrix's
 * rows into the lanes of its tiles, or a tile's lanes from the matrix's rows. */
void ntpu_bf16_from_f32_groups(uint16_t *dst, size_t dst_stride, const void *src, size_t src_stride, size_t groups,
                               size_t lanes);

/* n lanes of the vector unit's fp32 add: acc[j] = ntpu_f32_add(acc[j], x[j]),
 * eight at a time where the CPU has AVX2. */
void ntpu_f32_add_row(uint32_t *acc, const uint32_t *x, unsigned n);

/* How ntpu_adam_f32_row computes. */
typedef enum ntpu_adam_arith {
    NTPU_ADAM_DEVICE, /* the vector unit's, ntpu_adam_f32: subnormals flushed, NaN canonical */
    NTPU_ADAM_IEEE,   /* the same steps in plain IEEE fp32: the host optimizer's reference */
} ntpu_adam_arith;

/* Adam on `count` elements, ascending, element i with the constants
 * k[c * period + i % period] (c = NTPU_ADAM_K_*, period <= 64 for the fast
 * path), eight at a time where the CPU has AVX2 (adam_row.c), every block of
 * eight reading its inputs before writing. p, g, m, v: count fp32 values each,
 * as float or as bit patterns (read through memcpy and unaligned loads). The
 * golden model's OPTIM ADAM (period N, DEVICE) and the host's Adam (period 1,
 * IEEE) both run it. */
void ntpu_adam_f32_row(void *p, const void *g, void *m, void *v, size_t count, const uint32_t *k, unsigned period,
                       int decoupled, ntpu_adam_arith arith);

/* The vector unit over `count` lanes of consecutive rows (vector_rows.c),
 * eight at a time in ascending order, each block of eight read before it is
 * written; the output goes to dst32 as fp32 bits when it is not NULL, else to
 * dst16 rounded to bf16 (ntpu_bf16_from_f32_bits).
 * ACT's fp32 part: x = src[i], fadd'ed to bias[i % n] with a bias (n <= 64
 * lanes, else NULL), through ntpu_relu_f32 with relu. */
void ntpu_act_f32_lanes(const uint32_t *src, size_t count, unsigned n, const uint32_t *bias, int relu, uint32_t *dst32,
                        uint16_t *dst16);
/* RELU_GRAD: x = ntpu_bf16_positive(mask[i]) ? src[i] : +0. */
void ntpu_relu_grad_lanes(const uint32_t *src, const uint16_t *mask, size_t count, uint32_t *dst32, uint16_t *dst16);
/* COLSUM: s[j] = ntpu_f32_add(s[j], x[r * n + j]) for the rows r ascending. */
void ntpu_colsum_f32_rows(uint32_t *s, const uint32_t *x, size_t rows, unsigned n);
/* OPTIM (SGD, or momentum with s not NULL): ntpu_optim_f32 on each lane, in
 * place, with lr[i % n], wd[i % n], mu[i % n] (n <= 64). */
void ntpu_optim_f32_lanes(uint32_t *p, const uint32_t *g, uint32_t *s, size_t count, unsigned n, const uint32_t *lr,
                          const uint32_t *wd, const uint32_t *mu);

/* RELU_GRAD's mask test: bf16 m > 0 with subnormals read as zero (sign clear,
 * exponent not 0, not NaN). */
int ntpu_bf16_positive(uint16_t m);

#endif
