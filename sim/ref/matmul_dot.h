/* SPDX-License-Identifier: Apache-2.0 */
/* The paired bf16 chains on the CPU's bf16 dot-product instruction
 * (matmul_dot.c), for matmul_kernel.c's AVX-512 pass. Internal to the model. */
#ifndef NTPU_MATMUL_DOT_H
#define NTPU_MATMUL_DOT_H

#include <stdint.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define REF_DOT_BUILT 1
#endif

/* One weight tile of each of two chains (N = 8) as the instruction reads it:
 * pair[j] lane c holds column c (c < 8: chain 0's, else chain 1's column
 * c - 8) of tile rows 2j (high half) and 2j + 1 (low half). */
typedef struct ref_dot_w {
    uint32_t pair[4][16] __attribute__((aligned(64)));
} ref_dot_w;

/* Whether the CPU has the instruction and it gives the device's bits (a
 * probe against ntpu_mac_bf16, run once). */
int ref_dot_usable(void);

/* wp from the two chains' bf16 tiles w0 and w1 (8 x 8, row i = array row i). */
void ref_dot_weights(ref_dot_w *wp, const uint16_t *w0, const uint16_t *w1);

/* The A of one block and tile (64 lanes of fp32, flushed, the bf16 in their
 * high halves; af row i holds k = i of the block's 8 rows, or of its 8
 * columns for a transposed tile) as the instruction's pairs, k = 2j in the
 * high half and 2j + 1 in the low: ap[4r + j] pair j of row r, and for a
 * transposed tile ap[32 + 8j + r]. */
void ref_dot_pairs(uint32_t ap[64], const float *af);

/* A block of the A cache (ref_chain.h) made from its 64 bf16 lanes at src:
 * f and the facts as matmul_kernel.c's block_fill makes them, ap as
 * ref_dot_pairs makes it from f. One pass, for CPUs that have the dot
 * product (ref_dot_usable). */
struct ref_a_facts;
void ref_dot_fill(float *f, uint32_t ap[64], struct ref_a_facts *x, const uint16_t *src);

/* Eight rows of two chains (acc[k] at the block's row 0, eight lanes a row)
 * through `count` tiles: wp[e] their weights, ap[e] the block's A of tile e
 * (ref_dot_pairs, the half for its form), skip[e] the k the block may leave
 * out. zero: start from +0.0 instead of acc. The caller has checked what
 * matmul_kernel.c's fused pass checks: every term on the 2^-126 grid, no big
 * factor, no inf or NaN weight. */
void ref_dot_block(uint32_t *const acc[2], const ref_dot_w *wp, const uint32_t *const *ap, const uint64_t *skip,
                   unsigned count, int transposed, int zero);

#endif
