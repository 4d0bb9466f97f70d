/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol 1.5 in the golden model: where MATMUL's CONV modes take their rows
 * from (ref_conv.c), and POOL (ref_pool.c) (docs/isa.md, "Version 1.5"). ref.c decodes the frame and runs
 * the checks in the ISA's order with these; the arithmetic stays the MATMUL
 * kernels' and the vector unit's. Internal to the model. */
#ifndef NTPU_REF_CONV_H
#define NTPU_REF_CONV_H

#include <stddef.h>
#include <stdint.h>

/* A MATMUL's CONV geometry, decoded from its payload. */
typedef struct ref_conv {
    unsigned flags; /* MATMUL flags: CONV, with CONV_T or TRANSPOSE_A */
    unsigned ub_addr, acc_addr, rows;
    unsigned in_h, in_w, mb; /* the input map: in_h x in_w pixels of mb rows */
    unsigned out_w, stride;  /* forward and CONV_T */
    unsigned tile_stride, k; /* weight gradient (CONV with TRANSPOSE_A) */
    long dy, dx;
} ref_conv;

/* MATMUL's LEN for its flags: bits 2 (TRANSPOSE_A) and 3 (CONV) choose it. */
size_t ref_matmul_len(unsigned flags);

/* Decodes a CONV MATMUL (flags bit 3 set, LEN already checked) and checks its
 * fields: NTPU_DEV_ERR_ARG for a zero size, or rows not a multiple of N*k*k in
 * the weight-gradient mode; else NTPU_DEV_OK. */
int ref_conv_decode(const uint8_t *p, unsigned n, ref_conv *c);

/* One past the last UB row the command may read, computed exactly. */
unsigned long long ref_conv_ub_end(const ref_conv *c, unsigned n);

/* The activation rows m0 .. m0+count-1 of the stream, as the array sees them
 * (a zero row outside the map), into out (count x n lanes). In the
 * weight-gradient mode m0 is a multiple of n. */
void ref_conv_gather(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, unsigned count, uint16_t *out);

/* Rows m0 .. m0 + 7 of the stream of a forward or CONV_T command (those
 * below c->rows): in place in ub when they are 8 samples of one pixel, the
 * constant zero rows when that pixel is outside the map, else gathered into
 * scratch (8 x n lanes). */
const uint16_t *ref_conv_rows8(const ref_conv *c, const uint16_t *ub, unsigned n, unsigned m0, uint16_t *scratch);

/* POOL, decoded. */
typedef struct ref_pool {
    unsigned mode, src, dst, aux, in_h, in_w, mb, k;
} ref_pool;

/* Decodes POOL (LEN checked) and runs its argument checks (reserved flags, zero
 * fields, k over the map, overlapping ranges in one memory): NTPU_DEV_ERR_ARG,
 * else NTPU_DEV_OK. The range check comes after it: ref_pool_in_range. */
int ref_pool_decode(const uint8_t *p, ref_pool *c);

/* Whether every range POOL touches lies inside its memory (exactly, no wrap). */
int ref_pool_in_range(const ref_pool *c, unsigned ub_rows, unsigned acc_rows);

/* The UB rows a decoded POOL writes: ranges start[i] .. + count[i] - 1 for i
 * below the count it returns (at most 2). */
unsigned ref_pool_ub_written(const ref_pool *c, unsigned long start[2], unsigned long count[2]);

/* Runs POOL on the memories (n lanes a row, n <= 64), eight lanes at a time
 * (ref_pool.c). Returns the rows of the map, for the cycle estimate. */
unsigned long ref_pool_run(const ref_pool *c, uint16_t *ub, uint32_t *acc, unsigned n);

/* The same one lane at a time: the definition, for tests. */
unsigned long ref_pool_run_scalar(const ref_pool *c, uint16_t *ub, uint32_t *acc, unsigned n);

#endif
