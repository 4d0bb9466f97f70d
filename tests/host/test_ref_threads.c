/* SPDX-License-Identifier: Apache-2.0 */
/* ref:threads=T (sim/ref/ref_threads.c): a MATMUL split among threads gives
 * the bits of one thread, for bf16 and int8 products, MATMUL TRANSPOSE_A
 * (training's dW), ragged row counts and accumulation, with values from every
 * regime of the bf16 kernel (normal, near the 2^-126 grid, overflowing). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/ntpu.h"

static uint64_t rng = 7;

static uint16_t next_bf16(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(rng >> 33);
    /* mostly ordinary magnitudes; some tiny (off the grid) and some huge (overflow) */
    unsigned e = r % 16 == 0 ? r / 16 % 24 : r % 16 == 1 ? 230 + r / 16 % 24 : 112 + r / 16 % 24;
    return (uint16_t)((r >> 31) << 15 | e << 7 | (r >> 8 & 0x7Fu));
}

static ntpu_device *open_ok(const char *spec)
{
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open(spec, &dev), NTPU_OK, "open %s: %s", spec, dev ? ntpu_last_error(dev) : "");
    return dev;
}

Test(ref_threads, matmuls_match_one_thread)
{
    const size_t M = 9001, K = 40, N = 24; /* rows of each MATMUL well past the split size, ragged */
    uint16_t *A = malloc(M * K * 2), *B = malloc(K * N * 2);
    float *C1 = malloc(M * N * 4), *C3 = malloc(M * N * 4);
    int8_t *Ai = malloc(M * K), *Bi = malloc(K * N);
    int32_t *I1 = malloc(M * N * 4), *I3 = malloc(M * N * 4);
    cr_assert(A && B && C1 && C3 && Ai && Bi && I1 && I3);
    for (size_t i = 0; i < M * K; i++) {
        A[i] = next_bf16();
        Ai[i] = (int8_t)A[i];
    }
    for (size_t i = 0; i < K * N; i++) {
        B[i] = next_bf16();
        Bi[i] = (int8_t)(B[i] >> 3);
    }
    ntpu_device *one = open_ok("ref"), *three = open_ok("ref:threads=3");
    cr_assert_eq(ntpu_matmul_bf16(one, A, B, C1, M, K, N), NTPU_OK);
    cr_assert_eq(ntpu_matmul_bf16(three, A, B, C3, M, K, N), NTPU_OK);
    cr_assert(memcmp(C1, C3, M * N * 4) == 0, "bf16 products differ");
    cr_assert_eq(ntpu_matmul(one, NTPU_DTYPE_INT8, Ai, Bi, I1, M, K, N), NTPU_OK);
    cr_assert_eq(ntpu_matmul(three, NTPU_DTYPE_INT8, Ai, Bi, I3, M, K, N), NTPU_OK);
    cr_assert(memcmp(I1, I3, M * N * 4) == 0, "int8 products differ");
    ntpu_close(one);
    ntpu_close(three);
    free(A), free(B), free(C1), free(C3), free(Ai), free(Bi), free(I1), free(I3);
}

/* MATMUL TRANSPOSE_A over 8192 rows (1024 tiles of 8 x 8), accumulating onto
 * what a first product left in ACC. */
static void transposed_product(ntpu_device *dev, const uint16_t *ub, const uint16_t *w, uint32_t *out)
{
    const uint32_t rows = 8192;
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 0, rows, ub), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_WB, 0, 16, w), NTPU_OK);
    cr_assert_eq(ntpu_load_w(dev, 0, 0), NTPU_OK);
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 0, 0, rows, 0), NTPU_OK);
    cr_assert_eq(ntpu_load_w(dev, 8, 0), NTPU_OK);
    cr_assert_eq(ntpu_matmul_tile_transpose_a(dev, NTPU_DTYPE_BF16, 0, 8, 0, rows, 1), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, 0, rows, out), NTPU_OK);
}

Test(ref_threads, transposed_matches_one_thread)
{
    const size_t lanes = 8192 * 8;
    uint16_t *ub = malloc(lanes * 2), w[128];
    uint32_t *o1 = malloc(lanes * 4), *o2 = malloc(lanes * 4);
    cr_assert(ub && o1 && o2);
    for (size_t i = 0; i < lanes; i++)
        ub[i] = next_bf16();
    for (size_t i = 0; i < 128; i++)
        w[i] = next_bf16();
    ntpu_device *one = open_ok("ref:n=8"), *two = open_ok("ref:n=8,threads=2");
    transposed_product(one, ub, w, o1);
    transposed_product(two, ub, w, o2);
    cr_assert(memcmp(o1, o2, lanes * 4) == 0, "transposed products differ");
    ntpu_close(one);
    ntpu_close(two);
    free(ub), free(o1), free(o2);
}

Test(ref_threads, option_range)
{
    ntpu_device *dev = NULL;
    cr_assert_neq(ntpu_open("ref:threads=0", &dev), NTPU_OK);
    ntpu_close(dev);
    dev = NULL;
    cr_assert_neq(ntpu_open("ref:threads=65", &dev), NTPU_OK);
    ntpu_close(dev);
}
