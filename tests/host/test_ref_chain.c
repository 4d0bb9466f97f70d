/* SPDX-License-Identifier: Apache-2.0 */
/* MATMUL chains fused in the golden model (sim/ref/ref_chain.c): the same
 * command streams through "ref" (chains fused) and "ref:fuse=0" (every MATMUL
 * at once) must leave the same bits in ACC and UB, read the same data back and
 * count the same: random chains (ACCUMULATE on or off at the start,
 * TRANSPOSE_A, every CONV mode, int8), operands that force the exact scalar path
 * (NaN, inf, subnormal, off-grid tiny values, -0 accumulators), zero lanes
 * next to inf weights, chains longer than the queue, threads, N of 6, 8 and 16,
 * two chains interleaved (run as one pass where they read the same A), and
 * every flush condition (a WRITE_MEM into a queued source or into an ACC
 * range, READ_MEM mid-chain, a vector op reading the range, a MATMUL into an
 * overlapping range, a third chain, the end of a program), blocks of A kept converted from
 * one chain to the next while UB changes under them, and products that
 * overflow (no fused multiply-add). One plain chain is also checked against
 * the scalar MAC of numerics.c. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/ntpu.h"
#include "ntpu/numerics.h"
#include "ntpu/program.h"
#include "ntpu/protocol.h"
#include "matmul_dot.h"
#include "ref_chain.h"

enum { UB_ROWS = 4096, ACC_ROWS = 1024, WB_ROWS = 512 }; /* the window every test works in */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* How wild the operands are: 0 ordinary values (some zero), 1 every special,
 * 2 every special in UB and ACC but ordinary weights (fill). */
static int wild;

/* A bf16: mostly moderate; with `wild` also NaN, inf, subnormal, tiny and huge ones and -0. */
static uint16_t rnd_bf16(void)
{
    uint32_t r = rnd(), s = (r >> 31) << 15, m = r & 0x7Fu;
    unsigned pick = r >> 7 & 63u;
    if (pick < 8)
        return 0;
    if (wild && pick < 10)
        return (uint16_t)(s | 0x7F80u | (pick == 8 ? 0x40u : 0)); /* NaN or inf */
    if (wild && pick < 12)
        return (uint16_t)(s | m); /* subnormal (or a zero) */
    if (wild && pick < 14)
        return (uint16_t)(s | (1u + r % 20u) << 7 | m); /* tiny: products leave the 2^-126 grid */
    if (wild && pick < 15)
        return (uint16_t)(s | (240u + r % 14u) << 7 | m); /* huge: sums overflow */
    if (wild && pick < 16)
        return 0x8000u;
    return (uint16_t)(s | (118u + r % 16u) << 7 | m);
}

/* Two devices fed the same calls. */
typedef struct pair {
    ntpu_device *d[2]; /* fused, unfused */
    unsigned n;
} pair;

static pair open_pair(const char *fused, const char *unfused)
{
    pair p;
    ntpu_info in[2];
    for (int i = 0; i < 2; i++) {
        p.d[i] = NULL;
        const char *spec = i ? unfused : fused;
        cr_assert_eq(ntpu_open(spec, &p.d[i]), NTPU_OK, "open %s: %s", spec, ntpu_last_error(p.d[i]));
        cr_assert_eq(ntpu_get_info(p.d[i], &in[i]), NTPU_OK);
    }
    cr_assert_eq(in[0].rows, in[1].rows, "%s and %s: one array size", fused, unfused);
    p.n = in[0].rows;
    return p;
}

static void close_pair(pair *p)
{
    ntpu_close(p->d[0]);
    ntpu_close(p->d[1]);
}

#define BOTH(p, call)                                                           \
    do {                                                                        \
        for (int i_ = 0; i_ < 2; i_++) {                                        \
            ntpu_device *dev = (p)->d[i_];                                      \
            cr_assert_eq(call, NTPU_OK, "%s: %s", #call, ntpu_last_error(dev)); \
        }                                                                       \
    } while (0)

/* Random UB, WB and ACC (fp32 bits of bf16 values, -0 among them, or int32). */
static void fill(pair *p, ntpu_dtype dt)
{
    const size_t n = p->n;
    uint16_t *ub = malloc(UB_ROWS * n * 2), *wb = malloc(WB_ROWS * n * 2);
    uint32_t *acc = malloc(ACC_ROWS * n * 4);
    cr_assert(ub && wb && acc);
    for (size_t i = 0; i < UB_ROWS * n; i++)
        ub[i] = dt == NTPU_DTYPE_BF16 ? rnd_bf16() : (uint16_t)rnd();
    const int wild_ub = wild;
    wild = wild == 2 ? 0 : wild;
    for (size_t i = 0; i < WB_ROWS * n; i++)
        wb[i] = dt == NTPU_DTYPE_BF16 ? rnd_bf16() : (uint16_t)rnd();
    wild = wild_ub;
    for (size_t i = 0; i < ACC_ROWS * n; i++)
        acc[i] = dt == NTPU_DTYPE_BF16 ? (uint32_t)rnd_bf16() << 16 : rnd();
    BOTH(p, ntpu_write_rows(dev, NTPU_MEM_UB, 0, UB_ROWS, ub));
    BOTH(p, ntpu_write_rows(dev, NTPU_MEM_WB, 0, WB_ROWS, wb));
    BOTH(p, ntpu_write_rows(dev, NTPU_MEM_ACC, 0, ACC_ROWS, acc));
    free(ub), free(wb), free(acc);
}

/* ACC and UB of both devices, and their counters, must be equal. */
static void same_state(pair *p, const char *what)
{
    const size_t n = p->n;
    uint32_t *a[2];
    uint16_t *u[2];
    ntpu_counters c[2];
    for (int i = 0; i < 2; i++) {
        a[i] = malloc(ACC_ROWS * n * 4);
        u[i] = malloc(UB_ROWS * n * 2);
        cr_assert(a[i] && u[i]);
        cr_assert_eq(ntpu_read_rows(p->d[i], NTPU_MEM_ACC, 0, ACC_ROWS, a[i]), NTPU_OK);
        cr_assert_eq(ntpu_read_rows(p->d[i], NTPU_MEM_UB, 0, UB_ROWS, u[i]), NTPU_OK);
        cr_assert_eq(ntpu_read_counters(p->d[i], &c[i], 0), NTPU_OK);
    }
    for (size_t k = 0; k < ACC_ROWS * n; k++)
        cr_assert_eq(a[0][k], a[1][k], "%s: ACC row %zu lane %zu: fused %08x, unfused %08x", what, k / n, k % n,
                     a[0][k], a[1][k]);
    cr_assert(memcmp(u[0], u[1], UB_ROWS * n * 2) == 0, "%s: UB differs", what);
    cr_assert_eq(c[0].macs, c[1].macs, "%s: macs", what);
    cr_assert_eq(c[0].cycles, c[1].cycles, "%s: cycles", what);
    cr_assert_eq(c[0].array_busy, c[1].array_busy, "%s: array_busy", what);
    for (int i = 0; i < 2; i++)
        free(a[i]), free(u[i]);
}

/* One chain of `len` LOAD_W + MATMUL pairs into ACC rows acc .. acc + rows - 1,
 * each from its own UB source; TRANSPOSE_A ones when `t` (rows a multiple of N). */
static void chain(pair *p, ntpu_dtype dt, unsigned acc, unsigned rows, unsigned len, int first_acc, int t)
{
    const unsigned n = p->n;
    for (unsigned k = 0; k < len; k++) {
        unsigned wb = rnd() % (WB_ROWS / n) * n, tr = rnd() % 2;
        BOTH(p, ntpu_load_w(dev, wb, (int)tr));
        int accumulate = k > 0 || first_acc;
        if (t) {
            unsigned stride = n + rnd() % 3 * n, ub = rnd() % 64;
            cr_assert_leq(ub + (rows / n - 1) * stride + n, UB_ROWS);
            BOTH(p, ntpu_matmul_tile_transpose_a(dev, dt, ub, stride, acc, rows, accumulate));
        } else {
            unsigned ub = rnd() % (UB_ROWS - rows);
            BOTH(p, ntpu_matmul_tile(dev, dt, ub, acc, rows, accumulate));
        }
    }
}

static void random_chains(const char *fused, const char *unfused, int wildness, ntpu_dtype dt)
{
    pair p = open_pair(fused, unfused);
    wild = wildness;
    fill(&p, dt);
    for (int round = 0; round < 40; round++) {
        unsigned rows = 1 + rnd() % 200, t = dt == NTPU_DTYPE_BF16 && rnd() % 3 == 0;
        if (t)
            rows = (rows + p.n - 1) / p.n * p.n;
        unsigned acc = rnd() % (ACC_ROWS - rows);
        chain(&p, dt, acc, rows, 1 + rnd() % 12, (int)(rnd() % 2), (int)t);
    }
    same_state(&p, fused);
    close_pair(&p);
}

Test(ref_chain, random_bf16_chains)
{
    random_chains("ref", "ref:fuse=0", 0, NTPU_DTYPE_BF16);
}

Test(ref_chain, special_operands_take_the_scalar_path)
{
    random_chains("ref", "ref:fuse=0", 1, NTPU_DTYPE_BF16);
}

Test(ref_chain, int8_chains)
{
    random_chains("ref", "ref:fuse=0", 0, NTPU_DTYPE_INT8);
}

Test(ref_chain, other_array_sizes)
{
    random_chains("ref:n=16", "ref:n=16,fuse=0", 1, NTPU_DTYPE_BF16);
    random_chains("ref:n=16", "ref:n=16,fuse=0", 0, NTPU_DTYPE_BF16);
    random_chains("ref:n=6", "ref:n=6,fuse=0", 1, NTPU_DTYPE_BF16); /* no 8-lane kernel: the scalar MACs */
}

/* Two chains of `len` tiles into acc0 and acc1 (disjoint), their LOAD_W +
 * MATMUL pairs interleaved as the host's forward pass and weight gradient
 * issue two output tiles; tile k of both reads the same UB source when
 * `same_a` (the golden model then runs them as one pass), else each its own. */
static void interleaved(pair *p, unsigned acc0, unsigned acc1, unsigned rows, unsigned len, int first_acc, int t,
                        int same_a)
{
    const unsigned n = p->n;
    for (unsigned k = 0; k < len; k++) {
        unsigned ub = rnd() % 64, stride = n + rnd() % 3 * n;
        for (unsigned way = 0; way < 2; way++) {
            const unsigned acc = way ? acc1 : acc0, wb = rnd() % (WB_ROWS / n) * n, tr = rnd() % 2;
            const int accumulate = k > 0 || first_acc;
            BOTH(p, ntpu_load_w(dev, wb, (int)tr));
            if (!same_a)
                ub = rnd() % 64, stride = n + rnd() % 3 * n;
            if (t)
                BOTH(p, ntpu_matmul_tile_transpose_a(dev, NTPU_DTYPE_BF16, ub, stride, acc, rows, accumulate));
            else
                BOTH(p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, ub * 8 % (UB_ROWS - rows), acc, rows, accumulate));
        }
    }
}

static void interleaved_chains(const char *fused, int wildness)
{
    pair p = open_pair(fused, "ref:fuse=0");
    wild = wildness;
    fill(&p, NTPU_DTYPE_BF16);
    for (int round = 0; round < 24; round++) {
        const int t = round % 3 == 0;
        unsigned rows = 8 + rnd() % 200;
        rows = t || round % 2 ? (rows + p.n - 1) / p.n * p.n : rows; /* some with rows past the last block of 8 */
        const unsigned half = ACC_ROWS / 2, acc0 = rnd() % (half - rows), acc1 = half + rnd() % (half - rows);
        interleaved(&p, acc0, acc1, rows, 1 + rnd() % 80, (int)(rnd() % 2), t, round % 4 != 3);
    }
    same_state(&p, fused);
    close_pair(&p);
}

Test(ref_chain, interleaved_chains)
{
    interleaved_chains("ref", 0);
    interleaved_chains("ref:threads=2", 0);
}

Test(ref_chain, interleaved_chains_with_special_operands)
{
    interleaved_chains("ref", 1);
}

/* Where the CPU has AVX512_BF16, paired chains run on its dot product (sim/ref/matmul_dot.c), which the
 * tests above then exercise; "dot=0" keeps the fp32 kernels that other CPUs run under the same tests. */
Test(ref_chain, the_dot_product_runs_where_the_cpu_has_it)
{
    const int has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
    cr_assert_eq(ref_dot_usable(), has, "the probe %s this CPU's VDPBF16PS", has ? "refused" : "accepted");
}

/* ref_dot_fill against the definitions it serves (ref_chain.h's ref_a_facts, ref_dot_pairs' layouts),
 * on blocks of every kind of value and blocks with zero rows and columns. */
Test(ref_chain, dot_cache_fill_matches_its_definitions)
{
    if (!ref_dot_usable())
        cr_skip_test("no AVX512_BF16 dot product on this CPU");
    for (unsigned round = 0; round < 4000; round++) {
        uint16_t src[64];
        wild = round % 2;
        for (unsigned i = 0; i < 64; i++)
            src[i] = rnd_bf16();
        for (unsigned i = 0; i < 8 && round % 3 == 0; i++) { /* a zero row and a zero column */
            src[(round / 3 % 8) * 8 + i] = rnd() % 2 ? 0x8000 : 0;
            src[i * 8 + round / 5 % 8] = rnd() % 2 ? 0x8000 : 0;
        }
        float f[64];
        uint32_t ap[64];
        ref_a_facts x;
        memset(&x, 0xA5, sizeof x);
        ref_dot_fill(f, ap, &x, src);
        uint32_t bits[64], e_min = 0xFFFFFFFFu;
        int big = 0;
        uint8_t zero_rows = 0xFF, zero_cols = 0xFF;
        for (unsigned i = 0; i < 64; i++) {
            const uint32_t u = (uint32_t)src[i] << 16, e = u >> 23 & 0xFFu;
            bits[i] = e ? u : u & 0x80000000u;
            e_min = e && e - 1 < e_min ? e - 1 : e_min;
            big |= e >= REF_BIG_FIELD && e < 255;
            if (bits[i] & 0x7FFFFFFFu) {
                zero_rows &= (uint8_t) ~(1u << (i % 8));
                zero_cols &= (uint8_t) ~(1u << (i / 8));
            }
            uint32_t got;
            memcpy(&got, &f[i], 4);
            cr_assert_eq(got, bits[i], "round %u lane %u: f %08x, not %08x", round, i, got, bits[i]);
        }
        cr_assert_eq(x.e_min, e_min, "round %u: e_min %u, not %u", round, x.e_min, e_min);
        cr_assert_eq(x.big, big, "round %u: big", round);
        cr_assert_eq(x.zero_rows, zero_rows, "round %u: zero_rows %02x, not %02x", round, x.zero_rows, zero_rows);
        cr_assert_eq(x.zero_cols, zero_cols, "round %u: zero_cols %02x, not %02x", round, x.zero_cols, zero_cols);
        for (unsigned r = 0; r < 8; r++)
            for (unsigned j = 0; j < 4; j++) {
                const uint32_t rows = bits[8 * r + 2 * j] | bits[8 * r + 2 * j + 1] >> 16;
                const uint32_t cols = bits[r + 16 * j] | bits[r + 16 * j + 8] >> 16;
                cr_assert_eq(ap[4 * r + j], rows, "round %u: row pair (%u, %u)", round, r, j);
                cr_assert_eq(ap[32 + 8 * j + r], cols, "round %u: column pair (%u, %u)", round, r, j);
            }
    }
    wild = 0;
}

Test(ref_chain, fp32_kernels_without_the_dot_product)
{
    random_chains("ref:dot=0", "ref:fuse=0", 0, NTPU_DTYPE_BF16);
    random_chains("ref:dot=0", "ref:fuse=0", 1, NTPU_DTYPE_BF16);
    interleaved_chains("ref:dot=0", 0);
    interleaved_chains("ref:dot=0,threads=2", 1);
}

/* Ordinary weights (the dot product takes the chains) with activations and accumulators off the 2^-126
 * grid, big, inf or NaN: those blocks leave it for the scalar MACs. */
Test(ref_chain, dot_product_blocks_with_special_activations)
{
    random_chains("ref", "ref:fuse=0", 2, NTPU_DTYPE_BF16);
    interleaved_chains("ref", 2);
    interleaved_chains("ref:threads=2", 2);
}

/* A third chain beside two queued ones, and a MATMUL that restarts one of
 * them (no ACCUMULATE onto its range): both run the queue first. */
Test(ref_chain, a_third_chain_or_a_restart_flushes)
{
    pair p = open_pair("ref", "ref:fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    interleaved(&p, 0, 200, 64, 5, 0, 0, 1);
    chain(&p, NTPU_DTYPE_BF16, 400, 64, 3, 1, 0);
    interleaved(&p, 0, 200, 64, 5, 1, 1, 1);
    chain(&p, NTPU_DTYPE_BF16, 200, 64, 3, 0, 0);
    same_state(&p, "a third chain, a restart");
    close_pair(&p);
}

/* Long chains past the queue's length, on threads, over rows enough to split. */
Test(ref_chain, long_chains_on_threads)
{
    pair p = open_pair("ref:threads=3", "ref:fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    chain(&p, NTPU_DTYPE_BF16, 0, ACC_ROWS, 150, 0, 0);
    chain(&p, NTPU_DTYPE_BF16, 0, ACC_ROWS, 70, 1, 1);
    same_state(&p, "long chains");
    close_pair(&p);
}

/* Zero A lanes (what the skip of zero k serves) against inf and NaN weights in
 * the same rows, and accumulators at -0: every case where a zero product is
 * not a no-op. */
Test(ref_chain, zero_lanes_next_to_inf_weights_and_negative_zero)
{
    pair p = open_pair("ref", "ref:fuse=0");
    const unsigned n = p.n;
    uint16_t *ub = calloc(UB_ROWS * n, 2), w[3 * 64 * 64];
    uint32_t *acc0 = malloc(ACC_ROWS * n * 4);
    cr_assert(ub && acc0);
    for (size_t r = 0; r < UB_ROWS; r++) /* lane 0 only, as a one-channel map; some rows -0, some blocks all zero */
        ub[r * n] = r % 5 == 0 || (r / 8) % 4 == 3 ? 0x8000u : (uint16_t)(0x3F80u + r % 100);
    for (unsigned i = 0; i < 3 * n * n; i++)
        w[i] = (uint16_t)(0x3E00u + rnd() % 0x200u);
    w[n * n + 3 * n + 1] = 0x7F80u;     /* tile 1: an inf in row 3, where A is zero */
    w[2 * n * n + 5 * n + 2] = 0xFFC1u; /* tile 2: a NaN in row 5 */
    for (size_t i = 0; i < ACC_ROWS * n; i++)
        acc0[i] = i % 3 ? 0x80000000u : 0u; /* -0 and +0 */
    BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_UB, 0, UB_ROWS, ub));
    BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_WB, 0, 3 * n, w));
    BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_ACC, 0, ACC_ROWS, acc0));
    /* onto -0 accumulators, from +0, and onto -0 with finite weights only (tile 0): -0 + +0 = +0; plain
     * rows, then TRANSPOSE_A tiles (whose zero rows of UB are zero k) */
    for (unsigned pass = 0; pass < 6; pass++)
        for (unsigned k = 0; k < 6; k++) {
            unsigned acc = pass % 3 * 256, accumulate = k > 0 || pass % 3 != 1;
            if (pass == 3 && k == 0) /* -0 and +0 again */
                BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_ACC, 0, ACC_ROWS, acc0));
            BOTH(&p, ntpu_load_w(dev, pass % 3 == 2 ? 0 : (k % 3) * n, 0));
            if (pass < 3)
                BOTH(&p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 64 * k, acc, 256, (int)accumulate));
            else if (pass == 5) /* every tile an all-zero UB block ((r / 8) % 4 == 3): nothing but -0 + +0 */
                BOTH(&p,
                     ntpu_matmul_tile_transpose_a(dev, NTPU_DTYPE_BF16, 64 * k + 24, 32, acc, 256, (int)accumulate));
            else
                BOTH(&p, ntpu_matmul_tile_transpose_a(dev, NTPU_DTYPE_BF16, 8 * k, n, acc, 256, (int)accumulate));
        }
    same_state(&p, "zero lanes");
    close_pair(&p);
    free(ub), free(acc0);
}

/* A product that overflows: 2^64 x 2^64 = 2^128 is inf once rounded, so its
 * sum onto -2^127 stays inf, where one fused multiply-add would give 2^127.
 * The chains multiply and add apart when a factor is big (REF_BIG_FIELD). */
Test(ref_chain, overflowing_products_are_not_fused)
{
    pair p = open_pair("ref", "ref:fuse=0");
    const unsigned n = p.n, rows = 64;
    uint16_t *ub = malloc(rows * n * 2), *w = calloc(2 * n * n, 2);
    uint32_t *acc = malloc(rows * n * 4);
    cr_assert(ub && w && acc);
    for (size_t i = 0; i < rows * n; i++)
        ub[i] = i % n == 0 ? 0x5F80u : 0x3F80u; /* k = 0: 2^64; else 1 */
    for (size_t i = 0; i < n * n; i++)          /* the first tile; the second is zeros */
        w[i] = i < n ? 0x5F80u : 0x3F80u;       /* row 0: 2^64; else 1 */
    for (size_t i = 0; i < rows * n; i++)
        acc[i] = 0xFF000000u; /* -2^127 */
    BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_UB, 0, rows, ub));
    BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_WB, 0, 2 * n, w));
    BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_ACC, 0, rows, acc));
    for (unsigned k = 0; k < 2; k++) { /* a chain of two tiles */
        BOTH(&p, ntpu_load_w(dev, k * n, 0));
        BOTH(&p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 0, 0, rows, 1));
    }
    same_state(&p, "overflow");
    cr_assert_eq(ntpu_read_rows(p.d[0], NTPU_MEM_ACC, 0, rows, acc), NTPU_OK);
    for (size_t i = 0; i < rows * n; i++)
        cr_assert_eq(acc[i], 0x7F800000u, "ACC row %zu lane %zu: %08x, not +inf", i / n, i % n, acc[i]);
    close_pair(&p);
    free(ub), free(w), free(acc);
}

/* Two chains run as one pass over the same A, where only the second's
 * weights call for care, once each: tiny weights (2^-107) whose products with
 * A's 2^-27 leave the 2^-126 grid (the device flushes every one: ACC stays
 * +0), an inf in weight row 3 where A's k = 3 is all zeros (inf x 0 is NaN, no
 * zero k to skip), and 2^65 in row 0 against A's 2^63 onto -2^127 (the product
 * overflows: +inf, where one fused multiply-add would give 2^127). The first
 * chain's weights are all 1. Both chains' results are checked, and against
 * the unfused model. */
Test(ref_chain, paired_chains_keep_each_tiles_checks)
{
    pair p = open_pair("ref", "ref:fuse=0");
    const unsigned n = p.n, rows = 64;
    cr_assert_eq(n, 8u);
    uint16_t ub[64 * 8], w[2 * 64];
    uint32_t acc[2 * 64 * 8];
    /* A's lanes (k = zero_k: 0), the second tile's row `row` (every row when 8; others 1), ACC before, the results */
    const struct {
        uint16_t a, w1;
        unsigned zero_k, row;
        uint32_t acc, want0, want1;
    } cases[] = {{0x3200u, 0x0A00u, 8, 8, 0, 0x33800000u, 0},
                 {0x3F80u, 0x7F80u, 3, 3, 0, 0x40E00000u, 0x7FC00000u},
                 {0x5F00u, 0x6000u, 8, 0, 0xFF000000u, 0xFF000000u, 0x7F800000u}};
    for (unsigned c = 0; c < 3; c++) {
        for (unsigned i = 0; i < rows * n; i++)
            ub[i] = i % n == cases[c].zero_k ? 0 : cases[c].a;
        for (unsigned i = 0; i < n * n; i++) {
            w[i] = 0x3F80u;
            w[n * n + i] = cases[c].row == 8 || i / n == cases[c].row ? cases[c].w1 : 0x3F80u;
        }
        for (unsigned i = 0; i < 2 * rows * n; i++)
            acc[i] = cases[c].acc;
        BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_UB, 0, rows, ub));
        BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_WB, 0, 2 * n, w));
        BOTH(&p, ntpu_write_rows(dev, NTPU_MEM_ACC, 0, 2 * rows, acc));
        for (unsigned way = 0; way < 2; way++) {
            BOTH(&p, ntpu_load_w(dev, way * n, 0));
            BOTH(&p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 0, way * rows, rows, 1));
        }
        same_state(&p, "paired checks");
        BOTH(&p, ntpu_read_rows(dev, NTPU_MEM_ACC, 0, 2 * rows, acc)); /* both: the counters stay alike */
        for (unsigned i = 0; i < 2 * rows * n; i++) {
            const uint32_t want = i < rows * n ? cases[c].want0 : cases[c].want1;
            cr_assert_eq(acc[i], want, "case %u: chain %u, lane %u: %08x, not %08x", c, i / (rows * n), i % (rows * n),
                         acc[i], want);
        }
    }
    close_pair(&p);
}

/* Four chains over the same UB sources (rows 0 .. 383, tiles 64 rows apart),
 * each followed by an ACT into UB elsewhere, as the MLP's forward pass runs:
 * the second to fourth find A in the cache. `t`: tiles read transposed
 * (the same 8-row blocks as 8 x 8 tiles). */
static void shared_source_chains(pair *p, unsigned acc0, int t)
{
    for (unsigned j = 0; j < 4; j++) {
        for (unsigned k = 0; k < 6; k++) {
            BOTH(p, ntpu_load_w(dev, (j * 6 + k) % (WB_ROWS / p->n) * p->n, 0));
            if (t)
                BOTH(p, ntpu_matmul_tile_transpose_a(dev, NTPU_DTYPE_BF16, 64 * k, p->n, acc0 + 64 * j, 64, k > 0));
            else
                BOTH(p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 64 * k, acc0 + 64 * j, 64, k > 0));
        }
        BOTH(p, ntpu_vec_act(dev, NTPU_ACT_RELU | NTPU_OUT_UB, acc0 + 64 * j, 2000 + 64 * j, 64, 0));
    }
}

/* New values into UB rows addr .. addr + rows - 1 of both devices. */
static void rewrite_ub(pair *p, unsigned addr, unsigned rows)
{
    uint16_t *ub = malloc((size_t)rows * p->n * 2);
    cr_assert(ub);
    for (size_t i = 0; i < (size_t)rows * p->n; i++)
        ub[i] = rnd_bf16();
    BOTH(p, ntpu_write_rows(dev, NTPU_MEM_UB, addr, rows, ub));
    free(ub);
}

/* Blocks of A kept converted across chains (ref_a_cache in ref_chain.h): the
 * sources rewritten in place between chains (with every special value, then
 * ordinary ones again), read plain and transposed, and sources at both ends
 * of a UB twice the default size in the same chain. */
Test(ref_chain, cached_a_blocks_follow_ub)
{
    pair p = open_pair("ref:ub=32768", "ref:ub=32768,fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    shared_source_chains(&p, 0, 0);
    shared_source_chains(&p, 256, 1);
    same_state(&p, "shared sources");
    for (int round = 0; round < 3; round++) {
        wild = round == 1;
        rewrite_ub(&p, 0, 384);
        shared_source_chains(&p, 0, round == 2);
        shared_source_chains(&p, 256, round != 2);
        same_state(&p, round == 1 ? "rewritten with special values" : "rewritten");
    }
    wild = 0;
    rewrite_ub(&p, 16384, 64); /* 16384 rows of 8 lanes: 256 KiB above row 0 */
    for (unsigned k = 0; k < 4; k++) {
        BOTH(&p, ntpu_load_w(dev, k * p.n, 0));
        BOTH(&p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, k % 2 ? 16384 : 0, 768, 64, k > 0));
    }
    same_state(&p, "two ends of UB");
    close_pair(&p);
}

/* Every command that writes UB, aimed into the sources of shared_source_chains
 * (rows 0 .. 383), at rows that start and end inside 8-row blocks: the chains
 * after it must see the new lanes, not the blocks the cache converted before
 * (the model tells the cache of every UB write). */
static void write_ub_by(pair *p, int how)
{
    switch (how) {
    case 0: rewrite_ub(p, 13, 21); break;
    case 1: BOTH(p, ntpu_vec_act(dev, NTPU_OUT_UB, 600, 67, 13, 0)); break; /* ACC's random values, to bf16 */
    case 2: BOTH(p, ntpu_vec_act(dev, NTPU_ACT_BIAS | NTPU_OUT_INT8, 600, 131, 11, 900)); break; /* int8 lanes */
    case 3: BOTH(p, ntpu_vec_relu_grad(dev, NTPU_OUT_UB, 640, 197, 9, 1000)); break;
    case 4: BOTH(p, ntpu_vec_pool(dev, NTPU_POOL_MODE_MAX, 1200, 229, 300, 4, 4, 5, 2)); break;  /* dst and argmax */
    default: BOTH(p, ntpu_vec_pool(dev, NTPU_POOL_MODE_AVG, 1200, 350, 920, 4, 4, 5, 2)); break; /* factor: ACC */
    }
}

/* The same, each writer between chains that read its rows (plain and
 * transposed), then all of them inside one program. */
Test(ref_chain, cached_a_blocks_follow_every_ub_writer)
{
    pair p = open_pair("ref", "ref:fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    for (int how = 0; how < 6; how++) {
        shared_source_chains(&p, 0, how % 2);
        write_ub_by(&p, how);
        shared_source_chains(&p, 0, how % 2);
        shared_source_chains(&p, 256, !(how % 2));
        same_state(&p, how == 0   ? "after WRITE_MEM"
                       : how == 1 ? "after ACT to UB"
                       : how == 2 ? "after ACT to int8"
                       : how == 3 ? "after RELU_GRAD to UB"
                       : how == 4 ? "after POOL MAX"
                                  : "after POOL AVG");
    }
    ntpu_program *prog[2];
    BOTH(&p, ntpu_program_begin(dev));
    for (int how = 1; how < 6; how++) { /* WRITE_MEM is not a program's */
        shared_source_chains(&p, 0, how % 2);
        write_ub_by(&p, how);
    }
    shared_source_chains(&p, 0, 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(ntpu_program_end(p.d[i], &prog[i]), NTPU_OK);
        cr_assert_eq(ntpu_program_upload(p.d[i], prog[i], 0), NTPU_OK);
    }
    shared_source_chains(&p, 256, 1); /* the cache filled before the program runs */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(ntpu_program_run(p.d[i], prog[i]), NTPU_OK);
    shared_source_chains(&p, 256, 0);
    same_state(&p, "writers inside a program");
    ntpu_program_free(prog[0]);
    ntpu_program_free(prog[1]);
    close_pair(&p);
}

/* Tap `tap` (ky * 3 + kx) of a 3x3 CONV MATMUL of `mode` over a 6 x 5 map of
 * 16 rows a pixel, summed at ACC row acc; dW over two channel tiles. */
static ntpu_conv_addr tap_addr(int mode, int tap, unsigned n, unsigned acc)
{
    ntpu_conv_addr c = {.mode = (ntpu_conv_mode)mode,
                        .ub_addr = 16,
                        .acc_addr = acc,
                        .rows = mode == 2 ? n * 9 * 2 : 5 * 6 * 16,
                        .in_h = 6,
                        .in_w = 5,
                        .mb = 16,
                        .out_w = 5,
                        .stride = mode == 1 ? 2 : 1,
                        .dy = tap / 3 - 1,
                        .dx = tap % 3 - 1};
    if (mode == 2) {
        c.k = 3;
        c.tile_stride = 6 * 5 * 16;
    }
    return c;
}

/* Every CONV mode, chained over taps, as the resident conv nets stream them. */
Test(ref_chain, conv_chains)
{
    pair p = open_pair("ref", "ref:fuse=0");
    const unsigned n = p.n;
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    for (int mode = 0; mode < 3; mode++)
        for (int tap = 0; tap < 9; tap++) {
            const ntpu_conv_addr c = tap_addr(mode, tap, n, mode == 2 ? 700 : mode ? 300 : 0);
            BOTH(&p, ntpu_load_w(dev, (unsigned)tap * n, 0));
            BOTH(&p, ntpu_matmul_tile_conv(dev, NTPU_DTYPE_BF16, &c, tap > 0));
        }
    same_state(&p, "conv chains");
    close_pair(&p);
}

/* Two output tiles of every CONV mode, interleaved tap by tap as the resident
 * conv nets issue them: the same rows of A for both (the golden model runs
 * them as one pass), or in `differ` one field of the second's address changed
 * from tap `differ_at` on (ub_addr, dy, dx or the map's width: then they must
 * run one at a time, each over its own rows). */
static void interleaved_conv(pair *p, int mode, int differ, int differ_at)
{
    const unsigned n = p->n;
    for (int tap = 0; tap < 9; tap++)
        for (unsigned way = 0; way < 2; way++) {
            ntpu_conv_addr c = tap_addr(mode, tap, n, mode == 2 ? (way ? 800 : 600) : (way ? 500 : 0));
            if (way && differ && tap >= differ_at) {
                if (differ == 1)
                    c.ub_addr += 8;
                else if (differ == 2)
                    c.dy = -c.dy;
                else if (differ == 3)
                    c.dx += 1;
                else
                    c.in_w = 4;
            }
            const unsigned wb = rnd() % (WB_ROWS / n) * n, tr = rnd() % 2; /* drawn once for both devices */
            BOTH(p, ntpu_load_w(dev, wb, (int)tr));
            BOTH(p, ntpu_matmul_tile_conv(dev, NTPU_DTYPE_BF16, &c, tap > 0));
        }
}

static void interleaved_conv_chains(const char *fused, int wildness)
{
    pair p = open_pair(fused, "ref:fuse=0");
    wild = wildness;
    fill(&p, NTPU_DTYPE_BF16);
    for (int mode = 0; mode < 3; mode++)
        for (int differ = 0; differ < 5; differ++) {
            interleaved_conv(&p, mode, differ, (int)(rnd() % 9));
            same_state(&p, differ ? "interleaved conv chains over different rows" : "interleaved conv chains");
        }
    close_pair(&p);
}

Test(ref_chain, interleaved_conv_chains)
{
    interleaved_conv_chains("ref", 0);
    interleaved_conv_chains("ref:threads=2", 0);
}

Test(ref_chain, interleaved_conv_chains_with_special_operands)
{
    interleaved_conv_chains("ref", 1);
}

/* A chain of 4 tiles into ACC 0..63 from UB 0.., 64.., 128.., 192..; `between`
 * runs after the second. */
static void interrupted(void (*between)(pair *p, int i), const char *what)
{
    pair p = open_pair("ref", "ref:fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    for (unsigned k = 0; k < 4; k++) {
        BOTH(&p, ntpu_load_w(dev, k * p.n, 0));
        BOTH(&p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 64 * k, 0, 64, k > 0));
        if (k == 1)
            for (int i = 0; i < 2; i++)
                between(&p, i);
    }
    same_state(&p, what);
    close_pair(&p);
}

/* Two interleaved chains of 4 tiles into ACC 0..63 and 64..127 from the same
 * UB sources; `between` runs after the second pair. */
static void interrupted_pair(void (*between)(pair *p, int i), const char *what)
{
    pair p = open_pair("ref", "ref:fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    for (unsigned k = 0; k < 4; k++) {
        for (unsigned way = 0; way < 2; way++) {
            BOTH(&p, ntpu_load_w(dev, (2 * k + way) * p.n, 0));
            BOTH(&p, ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 64 * k, 64 * way, 64, k > 0));
        }
        if (k == 1)
            for (int i = 0; i < 2; i++)
                between(&p, i);
    }
    same_state(&p, what);
    close_pair(&p);
}

/* Known values into rows of UB (bf16) or ACC (fp32) of device i. */
static void write_rows_at(pair *p, int i, enum ntpu_mem mem, unsigned addr, unsigned rows)
{
    uint32_t wide[64 * 64];
    uint16_t half[64 * 64];
    for (unsigned k = 0; k < rows * p->n; k++) {
        wide[k] = 0x3F800000u + k * 0x1000u;
        half[k] = (uint16_t)(0x3F80u + k % 128u);
    }
    cr_assert_eq(ntpu_write_rows(p->d[i], mem, addr, rows, mem == NTPU_MEM_ACC ? (void *)wide : (void *)half), NTPU_OK);
}

static void write_queued_source(pair *p, int i)
{
    write_rows_at(p, i, NTPU_MEM_UB, 40, 30); /* rows the first tile read */
}

static void write_acc_range(pair *p, int i)
{
    write_rows_at(p, i, NTPU_MEM_ACC, 10, 5);
}

static void write_elsewhere(pair *p, int i)
{
    write_rows_at(p, i, NTPU_MEM_UB, 1000, 40); /* what ntpu_matmul_bf16 interleaves: no flush needed */
    write_rows_at(p, i, NTPU_MEM_ACC, 500, 4);
}

/* READ_MEM of ACC rows addr .. addr + 63 mid-chain: both devices must show the same. */
static void read_acc_rows(pair *p, int i, unsigned addr)
{
    static uint32_t seen[2][64 * 64];
    cr_assert_eq(ntpu_read_rows(p->d[i], NTPU_MEM_ACC, addr, 64, seen[i]), NTPU_OK);
    if (i == 1)
        cr_assert(memcmp(seen[0], seen[1], 64 * p->n * 4) == 0, "READ_MEM mid-chain differs");
}

static void read_acc_range(pair *p, int i)
{
    read_acc_rows(p, i, 0);
}

static void act_reads_range(pair *p, int i)
{
    cr_assert_eq(ntpu_vec_act(p->d[i], NTPU_ACT_RELU | NTPU_OUT_UB, 0, 2000, 64, 0), NTPU_OK);
}

static void overlapping_matmul(pair *p, int i)
{
    cr_assert_eq(ntpu_matmul_tile(p->d[i], NTPU_DTYPE_BF16, 300, 32, 64, 1), NTPU_OK);
}

Test(ref_chain, flush_on_write_into_a_queued_source)
{
    interrupted(write_queued_source, "WRITE_MEM into a source");
}

Test(ref_chain, flush_on_write_into_the_acc_range)
{
    interrupted(write_acc_range, "WRITE_MEM into ACC");
}

Test(ref_chain, writes_elsewhere_leave_the_chain)
{
    interrupted(write_elsewhere, "WRITE_MEM elsewhere");
}

Test(ref_chain, flush_on_read_of_the_acc_range)
{
    interrupted(read_acc_range, "READ_MEM");
}

Test(ref_chain, flush_on_a_vector_op)
{
    interrupted(act_reads_range, "ACT");
}

Test(ref_chain, flush_on_an_overlapping_matmul)
{
    interrupted(overlapping_matmul, "overlapping MATMUL");
}

static void write_second_acc_range(pair *p, int i)
{
    write_rows_at(p, i, NTPU_MEM_ACC, 100, 5);
}

static void read_second_acc_range(pair *p, int i)
{
    read_acc_rows(p, i, 64);
}

Test(ref_chain, flush_on_write_into_either_chain)
{
    interrupted_pair(write_queued_source, "WRITE_MEM into the pair's source");
    interrupted_pair(write_acc_range, "WRITE_MEM into the first ACC range");
    interrupted_pair(write_second_acc_range, "WRITE_MEM into the second ACC range");
    interrupted_pair(write_elsewhere, "WRITE_MEM elsewhere");
}

Test(ref_chain, flush_on_read_or_matmul_into_either_chain)
{
    interrupted_pair(read_second_acc_range, "READ_MEM of the second range");
    interrupted_pair(overlapping_matmul, "a MATMUL over both ranges");
    interrupted_pair(act_reads_range, "ACT");
}

/* A program that ends in the middle of what would be a chain: the chain
 * continues outside it, after a WRITE_MEM into the program's source. */
Test(ref_chain, flush_at_the_end_of_a_program)
{
    pair p = open_pair("ref", "ref:fuse=0");
    wild = 0;
    fill(&p, NTPU_DTYPE_BF16);
    ntpu_program *prog[2];
    for (int i = 0; i < 2; i++) {
        ntpu_device *dev = p.d[i];
        cr_assert_eq(ntpu_program_begin(dev), NTPU_OK);
        for (unsigned k = 0; k < 3; k++) {
            cr_assert_eq(ntpu_load_w(dev, k * p.n, 0), NTPU_OK);
            cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 64 * k, 0, 64, k > 0), NTPU_OK);
        }
        cr_assert_eq(ntpu_program_end(dev, &prog[i]), NTPU_OK);
        cr_assert_eq(ntpu_program_upload(dev, prog[i], 0), NTPU_OK);
        cr_assert_eq(ntpu_program_run(dev, prog[i]), NTPU_OK);
        write_queued_source(&p, i);
        cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 40, 0, 64, 1), NTPU_OK);
    }
    same_state(&p, "program");
    ntpu_program_free(prog[0]);
    ntpu_program_free(prog[1]);
    close_pair(&p);
}

/* One plain chain against the scalar MAC: k ascending, tile after tile. */
Test(ref_chain, plain_chain_matches_the_scalar_mac)
{
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open("ref", &dev), NTPU_OK);
    const unsigned n = 8, rows = 100, len = 20;
    uint16_t ub[len * rows * 8], w[len * 64];
    uint32_t want[rows * 8], got[rows * 8];
    wild = 1;
    for (size_t i = 0; i < sizeof ub / 2; i++)
        ub[i] = rnd_bf16();
    for (size_t i = 0; i < sizeof w / 2; i++)
        w[i] = rnd_bf16();
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 0, len * rows, ub), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_WB, 0, len * n, w), NTPU_OK);
    memset(want, 0, sizeof want);
    for (unsigned k = 0; k < len; k++) {
        cr_assert_eq(ntpu_load_w(dev, k * n, 0), NTPU_OK);
        cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, k * rows, 0, rows, k > 0), NTPU_OK);
        for (unsigned r = 0; r < rows; r++)
            for (unsigned c = 0; c < n; c++)
                for (unsigned i = 0; i < n; i++)
                    want[r * n + c] = ntpu_mac_bf16(want[r * n + c], ub[(k * rows + r) * n + i], w[k * 64 + i * n + c]);
    }
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, 0, rows, got), NTPU_OK);
    for (unsigned k = 0; k < rows * n; k++)
        cr_assert_eq(got[k], want[k], "row %u lane %u: %08x, scalar %08x", k / n, k % n, got[k], want[k]);
    ntpu_close(dev);
}
