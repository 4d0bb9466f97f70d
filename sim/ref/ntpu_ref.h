/* SPDX-License-Identifier: Apache-2.0 */
/* The golden model: the whole device in C. It consumes the host -> device byte
 * stream of docs/protocol.md and produces the device -> host byte stream, bit for
 * bit what the RTL produces (docs/isa.md, docs/numerics.md). In-process, no
 * threads; one thread at a time per model. */
#ifndef NTPU_REF_H
#define NTPU_REF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntpu_ref_config {
    unsigned n;              /* array rows = columns, 2..64 (the RTL: 2..32) */
    unsigned ub_rows;        /* unified buffer rows, 1..65536 */
    unsigned wb_rows;        /* weight buffer rows, N..65536 */
    unsigned acc_rows;       /* accumulator rows, 1..65536 */
    unsigned max_payload;    /* largest frame payload, 73..65535 (a COUNTERS reply is 73) */
    unsigned no_vector;      /* 1: no vector unit, as the RTL's VEC_EN = 0: INFO clears feature
                           * VECTOR and OPTIM, ACT / RELU_GRAD / COLSUM / OPTIM answer ERR_OPCODE.
                           * 0 by default */
    unsigned no_transpose_a; /* 1: as the RTL's TRANSPOSE_A_EN = 0: INFO clears feature TRANSPOSE_A,
                              * MATMUL's TRANSPOSE_A flag is reserved (ERR_ARG). 0 by default */
    unsigned link_bytes;     /* link bytes per cycle in the cycle estimate, 0..64 (0 and 1: byte-wide,
                              * as the boards); NTPU_LINK_BYTES (32, as vsim) by default */
    unsigned pm_rows;        /* program memory rows of 2N bytes, 0..65536 (1.4): 0 as the RTL's
                              * PM_ROWS = 0, no feature PROGRAM, RUN is ERR_OPCODE and memory 3
                              * ERR_MEM. NTPU_DEFAULT_PM_ROWS (8192) by default */
    unsigned os_rows;        /* optimizer-state rows (memory OS, OPTIM ADAM, 1.4), 0..65536; 0: none, as
                              * the boards (feature ADAM clear; last, so that an initializer without it
                              * means none). Also 0 with no_vector. 65536 by default */
    unsigned no_conv;        /* 1: no convolution addressing (1.5), as the RTL's CONV_EN = 0: INFO clears
                              * feature CONV, MATMUL's flags CONV and CONV_T are reserved (ERR_ARG) */
    unsigned no_pool;        /* 1: no POOL (1.5), as the RTL's POOL_EN = 0: INFO clears feature POOL, POOL
                              * is ERR_OPCODE. Also 1 with no_vector (POOL is part of the vector unit) */
} ntpu_ref_config;

/* The configuration of the default simulated core (same as vsim's): N from
 * NTPU_DEFAULT_N (8), 16384 UB rows, 32768 WB rows, 32768 ACC rows, 8192 PM rows,
 * 65536 OS rows, max_payload 4112, with the vector unit, a link of NTPU_LINK_BYTES
 * (32) bytes per cycle. */
ntpu_ref_config ntpu_ref_default_config(void);

typedef struct ntpu_ref ntpu_ref;

/* Creates a model in its reset state (memories zero). cfg NULL = defaults.
 * Returns NULL if cfg is out of range or memory runs out. */
ntpu_ref *ntpu_ref_new(const ntpu_ref_config *cfg);
void ntpu_ref_free(ntpu_ref *ref); /* NULL is a no-op */
/* Threads for large MATMULs, 1..64 (1, the default: the calling thread only).
 * Rows are independent chains, so the results are the same bits whatever it
 * is. 0, or -1 when out of range or the threads cannot start (then one). */
int ntpu_ref_set_threads(ntpu_ref *ref, unsigned threads);
/* Chain fusion (on by default): consecutive bf16 MATMULs accumulating into
 * one ACC range run as one pass, each element's sum in the same order, so
 * the same bits as one MATMUL at a time (what on = 0 gives: a reference for
 * tests). 0, or -1 when ref is NULL. */
int ntpu_ref_set_fusion(ntpu_ref *ref, int on);
/* The bf16 chains on the CPU's bf16 dot-product instruction where it has one
 * that gives the device's bits (on by default; off: the fp32 fused
 * multiply-adds, a reference for tests). The same bits. 0, or -1 when ref is
 * NULL. */
int ntpu_ref_set_dot(ntpu_ref *ref, int on);

/* Feeds n bytes of the host -> device stream. The model executes every complete
 * frame at once and queues its reply bytes. A frame that buf holds whole runs
 * where it lies (buf is only read); one split across calls is collected. */
void ntpu_ref_write(ntpu_ref *ref, const uint8_t *buf, size_t n);

/* Moves up to cap queued reply bytes into buf; returns how many. */
size_t ntpu_ref_read(ntpu_ref *ref, uint8_t *buf, size_t cap);

/* The queued reply bytes where they lie, for a reader that checks them in
 * place: sets *n to how many (NULL when none). Valid until the next call
 * that writes to or consumes from the model. */
const uint8_t *ntpu_ref_peek(const ntpu_ref *ref, size_t *n);

/* Drops the first n queued reply bytes (at most all of them), as reading
 * them would. */
void ntpu_ref_consume(ntpu_ref *ref, size_t n);

/* Reply bytes queued and not yet read. */
size_t ntpu_ref_pending(const ntpu_ref *ref);

#ifdef __cplusplus
}
#endif

#endif
