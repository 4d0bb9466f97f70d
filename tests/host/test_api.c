/* SPDX-License-Identifier: Apache-2.0 */
/* The public API over the golden model: matmul of every awkward shape in both
 * dtypes against plain loops (bf16 bit for bit against the sequential
 * ntpu_mac_bf16 chain), on the default device and on tiny configurations that
 * force every tiling path; device memory, counters and status; and the error
 * contract (bad arguments send nothing, failures never abort). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ntpu/nn.h"
#include "ntpu/ntpu.h"

static uint64_t rng = 1;

static uint64_t next(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static ntpu_device *open_ok(const char *s)
{
    ntpu_device *dev = NULL;
    ntpu_status st = ntpu_open(s, &dev);
    cr_assert_eq(st, NTPU_OK, "open %s: %s", s, ntpu_last_error(dev));
    return dev;
}

/* A random bf16 input with a spread of magnitudes and some exact zeros of
 * both signs, as a float. */
static float rand_f(void)
{
    uint64_t r = next();
    if ((r & 31) == 0)
        return (r & 32) ? -0.0f : 0.0f;
    double v = (double)((r >> 11) & 0xFFFFF) / 1048576.0 * 2.0 - 1.0;
    int e = (int)((r >> 40) % 16) - 8;
    for (; e > 0; e--)
        v *= 2;
    for (; e < 0; e++)
        v /= 2;
    return (float)v;
}

/* Checks one int8 and one bf16 matmul of this shape against the plain loops. */
static void check_shape(ntpu_device *dev, size_t M, size_t K, size_t N)
{
    int8_t *a8 = malloc(M * K), *b8 = malloc(K * N);
    float *af = malloc(M * K * 4), *bf = malloc(K * N * 4);
    int32_t *c8 = malloc(M * N * 4);
    float *cf = malloc(M * N * 4);
    for (size_t i = 0; i < M * K; i++) {
        a8[i] = (int8_t)next();
        af[i] = rand_f();
    }
    for (size_t i = 0; i < K * N; i++) {
        b8[i] = (int8_t)next();
        bf[i] = rand_f();
    }
    memset(c8, 0x55, M * N * 4);
    memset(cf, 0x55, M * N * 4);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a8, b8, c8, M, K, N), NTPU_OK, "int8 %zux%zux%zu: %s", M, K, N,
                 ntpu_last_error(dev));
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_BF16, af, bf, cf, M, K, N), NTPU_OK, "bf16 %zux%zux%zu: %s", M, K, N,
                 ntpu_last_error(dev));
    for (size_t m = 0; m < M; m++) {
        for (size_t n = 0; n < N; n++) {
            int32_t want8 = 0;
            uint32_t wantf = 0; /* +0.0f */
            for (size_t k = 0; k < K; k++) {
                want8 += (int32_t)a8[m * K + k] * b8[k * N + n];
                wantf = ntpu_mac_bf16(wantf, ntpu_bf16_from_f32(af[m * K + k]), ntpu_bf16_from_f32(bf[k * N + n]));
            }
            cr_assert_eq(c8[m * N + n], want8, "int8 %zux%zux%zu: C[%zu][%zu] = %d, want %d", M, K, N, m, n,
                         c8[m * N + n], want8);
            uint32_t got;
            memcpy(&got, &cf[m * N + n], 4);
            cr_assert_eq(got, wantf, "bf16 %zux%zux%zu: C[%zu][%zu] = 0x%08x, want 0x%08x", M, K, N, m, n, got, wantf);
        }
    }
    free(a8);
    free(b8);
    free(af);
    free(bf);
    free(c8);
    free(cf);
}

/* Every combination of sizes around the tile boundaries, 1 .. 3N. */
static void sweep(const char *device)
{
    ntpu_device *dev = open_ok(device);
    ntpu_info in;
    ntpu_get_info(dev, &in);
    size_t n = in.rows;
    size_t sizes[] = {1, 2, n - 1, n, n + 1, 2 * n - 1, 2 * n, 2 * n + 1, 3 * n - 1, 3 * n};
    size_t ns = sizeof sizes / sizeof sizes[0];
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < ns; j++)
            for (size_t k = 0; k < ns; k++)
                check_shape(dev, sizes[i], sizes[j], sizes[k]);
    /* And random shapes in the same range. */
    for (int t = 0; t < 40; t++)
        check_shape(dev, 1 + next() % (3 * n), 1 + next() % (3 * n), 1 + next() % (3 * n));
    ntpu_close(dev);
}

Test(api, matmul_shapes_default_device)
{
    sweep("ref");
}

/* Tiny memories and frames: K split across UB loads, weights streamed through a
 * WB ring of one or two tiles, several ACC blocks, multi-frame tiles. */
Test(api, matmul_shapes_tiny_device_n4)
{
    sweep("ref:n=4,ub=10,wb=8,acc=6,payload=80");
}
Test(api, matmul_shapes_tiny_device_n3)
{
    sweep("ref:n=3,ub=5,wb=3,acc=4,payload=80");
}
Test(api, matmul_shapes_n16)
{
    sweep("ref:n=16");
}

/* The same library path over the Verilator RTL: a few shapes, bit for bit. */
Test(api, matmul_on_vsim, .timeout = 300)
{
    ntpu_device *dev = open_ok("vsim");
    check_shape(dev, 1, 1, 1);
    check_shape(dev, 9, 17, 10);
    check_shape(dev, 20, 8, 24);
    ntpu_close(dev);
}

Test(api, matmul_larger_shapes)
{
    ntpu_device *dev = open_ok("ref");
    check_shape(dev, 300, 200, 150);
    check_shape(dev, 3, 5000, 17); /* K longer than UB holds for a full chunk */
    check_shape(dev, 70, 4801, 9); /* K split into several UB loads */
    check_shape(dev, 5000, 9, 3);  /* many M chunks */
    check_shape(dev, 2, 9, 700);   /* many column tiles: more than ACC holds at once */
    ntpu_close(dev);
    dev = open_ok("ref:n=8,ub=64,wb=16,acc=16,payload=100");
    check_shape(dev, 45, 77, 33);
    ntpu_close(dev);
}

Test(api, matmul_macs_counter)
{
    ntpu_device *dev = open_ok("ref");
    size_t M = 50, K = 20, N = 17; /* 3 k-tiles x 3 column tiles */
    int8_t a[50 * 20] = {0}, b[20 * 17] = {0};
    int32_t c[50 * 17];
    ntpu_counters cnt;
    cr_assert_eq(ntpu_read_counters(dev, &cnt, 1), NTPU_OK);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, c, M, K, N), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_read_counters(dev, &cnt, 0), NTPU_OK);
    cr_assert_eq(cnt.macs, (uint64_t)M * 3 * 3 * 64);
    cr_assert_gt(cnt.cycles, 0);
    double u = ntpu_counters_utilization(dev, &cnt);
    cr_assert(u > 0 && u <= 1, "utilization %g", u);
    ntpu_close(dev);
}

/* The padding rule of docs/numerics.md: a -0 accumulator (a flushed negative
 * subnormal sum) must come out as -0 even though K is not a multiple of N. */
Test(api, bf16_negative_zero_survives_padding)
{
    ntpu_device *dev = open_ok("ref");
    /* a0*b0 = -1.5 * 2^-126, a1*b1 = 2^-126: the sum -0.5 * 2^-126 flushes to -0. */
    const uint16_t A[2] = {0xA040 /* -1.5 * 2^-63 */, 0x2000 /* 2^-63 */};
    const uint16_t B[2] = {0x2000, 0x2000};
    float C;
    cr_assert_eq(ntpu_matmul_bf16(dev, A, B, &C, 1, 2, 1), NTPU_OK, "%s", ntpu_last_error(dev));
    uint32_t bits;
    memcpy(&bits, &C, 4);
    uint32_t want = ntpu_mac_bf16(ntpu_mac_bf16(0, A[0], B[0]), A[1], B[1]);
    cr_assert_eq(want, 0x80000000u, "the reference chain itself should give -0");
    cr_assert_eq(bits, 0x80000000u, "got 0x%08x", bits);
    ntpu_close(dev);
}

Test(api, bf16_raw_inputs_match_float_inputs)
{
    ntpu_device *dev = open_ok("ref");
    enum { M = 13, K = 29, N = 11 };
    float af[M * K], bf[K * N], c1[M * N], c2[M * N];
    uint16_t ah[M * K], bh[K * N];
    for (int i = 0; i < M * K; i++)
        ah[i] = ntpu_bf16_from_f32(af[i] = rand_f());
    for (int i = 0; i < K * N; i++)
        bh[i] = ntpu_bf16_from_f32(bf[i] = rand_f());
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_BF16, af, bf, c1, M, K, N), NTPU_OK);
    cr_assert_eq(ntpu_matmul_bf16(dev, ah, bh, c2, M, K, N), NTPU_OK);
    cr_assert_arr_eq(c1, c2, sizeof c1);
    ntpu_close(dev);
}

Test(api, bf16_special_values)
{
    ntpu_device *dev = open_ok("ref:n=4");
    /* Inf, NaN, overflow to Inf, subnormals read as zero. */
    const float inf = __builtin_inff(), nan = __builtin_nanf("");
    const float A[2 * 5] = {inf, 1, 2, 3, 4, 1e38f, 1e38f, 1e-40f, -0.0f, nan};
    const float B[5 * 3] = {1, 0, -1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5};
    float C[2 * 3];
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_BF16, A, B, C, 2, 5, 3), NTPU_OK);
    for (int m = 0; m < 2; m++)
        for (int n = 0; n < 3; n++) {
            uint32_t want = 0, got;
            for (int k = 0; k < 5; k++)
                want = ntpu_mac_bf16(want, ntpu_bf16_from_f32(A[m * 5 + k]), ntpu_bf16_from_f32(B[k * 3 + n]));
            memcpy(&got, &C[m * 3 + n], 4);
            cr_assert_eq(got, want, "C[%d][%d] = 0x%08x, want 0x%08x", m, n, got, want);
        }
    ntpu_close(dev);
}

Test(api, int8_wraps_like_int32)
{
    ntpu_device *dev = open_ok("ref");
    enum { K = 140000 };
    int8_t *a = malloc(K), *b = malloc(K);
    memset(a, -128, K);
    memset(b, -128, K);
    int32_t c;
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, &c, 1, K, 1), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(c, (int32_t)(uint32_t)(16384ull * K));
    free(a);
    free(b);
    ntpu_close(dev);
}

/* ------------------------------------------------------------------ memory, status, counters */

Test(api, rows_round_trip_in_every_memory)
{
    ntpu_device *dev = open_ok("ref:n=8,payload=100"); /* many frames per call */
    uint16_t ub[300 * 8], ub2[300 * 8];
    uint32_t acc[200 * 8], acc2[200 * 8];
    for (int i = 0; i < 300 * 8; i++)
        ub[i] = (uint16_t)next();
    for (int i = 0; i < 200 * 8; i++)
        acc[i] = (uint32_t)next();
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 100, 300, ub), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_WB, 4096 - 300, 300, ub), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_ACC, 2048 - 200, 200, acc), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_UB, 100, 300, ub2), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_arr_eq(ub, ub2, sizeof ub);
    memset(ub2, 0, sizeof ub2);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_WB, 4096 - 300, 300, ub2), NTPU_OK);
    cr_assert_arr_eq(ub, ub2, sizeof ub);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, 2048 - 200, 200, acc2), NTPU_OK);
    cr_assert_arr_eq(acc, acc2, sizeof acc);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 0, 0, NULL), NTPU_OK);
    cr_assert_eq(ntpu_fence(dev), NTPU_OK);
    ntpu_close(dev);
}

Test(api, low_level_matmul_and_transpose)
{
    ntpu_device *dev = open_ok("ref:n=2");
    /* W = [[1, 2], [3, 4]] in WB rows 0..1; x = [5, 6]. x.W = [23, 34]; x.W^T = [17, 39]. */
    uint16_t w[4] = {1, 2, 3, 4}, x[2] = {5, 6};
    int32_t out[4];
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_WB, 0, 2, w), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 7, 1, x), NTPU_OK);
    cr_assert_eq(ntpu_load_w(dev, 0, 0), NTPU_OK);
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_INT8, 7, 0, 1, 0), NTPU_OK);
    cr_assert_eq(ntpu_load_w(dev, 0, 1), NTPU_OK);
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_INT8, 7, 1, 1, 0), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, 0, 2, out), NTPU_OK, "%s", ntpu_last_error(dev));
    cr_assert_eq(out[0], 23);
    cr_assert_eq(out[1], 34);
    cr_assert_eq(out[2], 17);
    cr_assert_eq(out[3], 39);
    /* Accumulate: ACC row 0 += x.W (active weights unchanged since the last LOAD_W: transposed). */
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_INT8, 7, 0, 1, 1), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, 0, 1, out), NTPU_OK);
    cr_assert_eq(out[0], 23 + 17);
    cr_assert_eq(out[1], 34 + 39);
    ntpu_close(dev);
}

Test(api, status_and_counters)
{
    ntpu_device *dev = open_ok("ref");
    ntpu_device_status s;
    cr_assert_eq(ntpu_read_status(dev, &s), NTPU_OK);
    cr_assert_eq(s.errors, 0);
    cr_assert_eq(s.last_error, 0);
    uint32_t before = s.commands;
    cr_assert_eq(ntpu_fence(dev), NTPU_OK);
    cr_assert_eq(ntpu_read_status(dev, &s), NTPU_OK);
    cr_assert_eq(s.commands, before + 2, "FENCE and the first STATUS: %u -> %u", before, s.commands);
    ntpu_counters c;
    cr_assert_eq(ntpu_read_counters(dev, &c, 1), NTPU_OK);
    cr_assert_gt(c.rx_bytes, 0);
    cr_assert_eq(ntpu_read_counters(dev, &c, 0), NTPU_OK);
    cr_assert_eq(c.macs, 0);
    ntpu_link_stats ls;
    cr_assert_eq(ntpu_get_link_stats(dev, &ls), NTPU_OK);
    cr_assert_eq(ls.tx_frames, ls.rx_frames);
    cr_assert_eq(ntpu_reset_link(dev), NTPU_OK);
    cr_assert_eq(ntpu_get_link_stats(dev, &ls), NTPU_OK);
    cr_assert_eq(ls.resyncs, 1);
    ntpu_close(dev);
}

Test(api, device_error_becomes_ntpu_err_device)
{
    /* The API never sends a bad command, so go below it: a MATMUL past UB. */
    ntpu_device *dev = open_ok("ref");
    uint8_t bad[8] = {NTPU_OP_MATMUL, 0, 0xFF, 0xFF, 0, 0, 4, 0};
    cr_assert_eq(ntpu_link_command(&dev->link, bad, sizeof bad, 0, NULL, NULL), NTPU_OK);
    cr_assert_eq(ntpu_fence(dev), NTPU_ERR_DEVICE);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "ERR_RANGE"), "%s", ntpu_last_error(dev));
    ntpu_device_status s;
    cr_assert_eq(ntpu_read_status(dev, &s), NTPU_OK);
    cr_assert_eq(s.last_error, NTPU_DEV_ERR_RANGE);
    cr_assert_eq(s.errors, 1);
    /* The device and the link are fine afterwards. */
    int8_t a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    int32_t c;
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, &c, 1, 3, 1), NTPU_OK);
    cr_assert_eq(c, 32);
    ntpu_close(dev);
}

Test(api, garbage_on_the_link_then_reset)
{
    ntpu_device *dev = open_ok("ref");
    uint8_t junk[100];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)next();
    junk[0] = NTPU_SOF_CMD;
    junk[2] = 0xFF;
    junk[3] = 0x0F; /* a header promising a long frame */
    cr_assert_eq(dev->link.tp.ops->send(dev->link.tp.ctx, junk, sizeof junk, NULL, 0), NTPU_OK);
    cr_assert_eq(ntpu_reset_link(dev), NTPU_OK, "%s", ntpu_last_error(dev));
    check_shape(dev, 9, 10, 11);
    ntpu_close(dev);
}

/* ------------------------------------------------------------------ errors */

Test(api, bad_arguments_send_nothing)
{
    ntpu_device *dev = open_ok("ref");
    ntpu_link_stats s0, s1;
    ntpu_get_link_stats(dev, &s0);
    int8_t a[4] = {0}, b[4] = {0};
    int32_t c[4];
    uint16_t rows[8 * 4] = {0};
    cr_assert_eq(ntpu_matmul(NULL, NTPU_DTYPE_INT8, a, b, c, 2, 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, NULL, b, c, 2, 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, NULL, c, 2, 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, NULL, 2, 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, c, 0, 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, c, 2, 0, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, c, 2, 2, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul(dev, (ntpu_dtype)7, a, b, c, 2, 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "dtype"), "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, a, b, c, SIZE_MAX / 2, SIZE_MAX / 2, 2), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_bf16(dev, NULL, NULL, NULL, 1, 1, 1), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_write_rows(dev, (enum ntpu_mem)5, 0, 1, rows), NTPU_ERR_INVALID_ARG);
    ntpu_info info; /* ranges relative to this device's memories */
    cr_assert_eq(ntpu_get_info(dev, &info), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, info.ub_rows - 2, 4, rows), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "UB"), "%s", ntpu_last_error(dev));
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 0xFFFFFFFFu, 2, rows), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_write_rows(dev, NTPU_MEM_UB, 0, 1, NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_read_rows(dev, NTPU_MEM_ACC, info.acc_rows - 1, 2, rows), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_load_w(dev, info.wb_rows - 6, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, info.ub_rows - 2, 0, 3, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 0, info.acc_rows - 1, 2, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, 0, 0, 70000, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_matmul_tile(dev, (ntpu_dtype)-1, 0, 0, 1, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_read_status(dev, NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_read_counters(dev, NULL, 0), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_get_info(dev, NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_get_info(NULL, NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_fence(NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(ntpu_reset_link(NULL), NTPU_ERR_INVALID_ARG);
    ntpu_get_link_stats(dev, &s1);
    cr_assert_eq(s1.tx_bytes, s0.tx_bytes, "a rejected call sent bytes");
    cr_assert_eq(s1.tx_frames, s0.tx_frames);
    /* The handle still works. */
    int8_t x[1] = {3}, y[1] = {-5};
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, x, y, c, 1, 1, 1), NTPU_OK);
    cr_assert_eq(c[0], -15);
    ntpu_close(dev);
}

Test(api, open_errors)
{
    ntpu_device *dev = NULL;
    cr_assert_eq(ntpu_open("ref", NULL), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(NULL), "out is NULL"), "%s", ntpu_last_error(NULL));

    /* A usb board (the pico-ice) that is not there, whether or not USB can be used here or other boards are
     * plugged in; the usb and ftdi transports themselves are tested against fake libusbs (tests/cli). */
    cr_assert_eq(ntpu_open("usb:serial=NTPU-TEST-NO-SUCH-BOARD", &dev), NTPU_ERR_NO_DEVICE);
    cr_assert_not_null(dev);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "pico-ice"), "%s", ntpu_last_error(dev));
    /* A failed handle refuses everything and keeps its reason. */
    int8_t a = 1;
    int32_t c;
    ntpu_info in;
    cr_assert_eq(ntpu_matmul(dev, NTPU_DTYPE_INT8, &a, &a, &c, 1, 1, 1), NTPU_ERR_NO_DEVICE);
    cr_assert_eq(ntpu_get_info(dev, &in), NTPU_ERR_NO_DEVICE);
    cr_assert_eq(ntpu_fence(dev), NTPU_ERR_NO_DEVICE);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "pico-ice"));
    ntpu_close(dev);

    cr_assert_eq(ntpu_open("usb:port=1234", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "unknown usb option 'port=1234'"), "%s", ntpu_last_error(dev));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("tpu9000", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "tpu9000"));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:n=1", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_str_eq(ntpu_last_error(dev), "ref option 'n=1' is out of range: n= takes 2..64");
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:ub=0", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_str_eq(ntpu_last_error(dev), "ref option 'ub=0' is out of range: ub= takes 1..65536");
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:n=2,payload=72", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_str_eq(ntpu_last_error(dev), "ref option 'payload=72' is out of range: payload= takes 73..65535");
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:novec=2", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "novec= takes 0..1"));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:n=16,wb=8", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_str_eq(ntpu_last_error(dev),
                     "ref option wb=8 is out of range: the weight buffer needs at least n=16 rows");
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:n=64,ub=65536,wb=64,acc=1,payload=257,novec=1,notra=1", &dev), NTPU_OK, "%s",
                 ntpu_last_error(dev));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:colour=red", &dev), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(dev), "colour"));
    ntpu_close(dev);
    cr_assert_eq(ntpu_open("ref:n=x", &dev), NTPU_ERR_INVALID_ARG);
    ntpu_close(dev);
    /* Digits only, each option once (strtoul alone took a sign and spaces, and the last n= won). */
    const char *loose[] = {"ref:n=+8",           "ref:n= 8",
                           "ref:n=8,n=4",        "ref:fault_seed=-1,faults=0.1",
                           "ref:timeout_ms=+5",  "ref:faults=0.1,fault_seed= 3",
                           "ref:fault_seed=0x10"};
    for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
        cr_assert_eq(ntpu_open(loose[i], &dev), NTPU_ERR_INVALID_ARG, "%s", loose[i]);
        ntpu_close(dev);
    }
    cr_assert_eq(ntpu_open("ref:n=8,ub=100,faults=0.001,fault_seed=16", &dev), NTPU_OK, "%s", ntpu_last_error(dev));
    ntpu_close(dev);
    char long_name[300];
    memset(long_name, 'r', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    cr_assert_eq(ntpu_open(long_name, &dev), NTPU_ERR_INVALID_ARG);
    ntpu_close(dev);
    ntpu_close(NULL);
}

Test(api, default_device_from_environment)
{
    setenv("NTPU_DEVICE", "ref:n=4", 1);
    ntpu_device *dev = open_ok(NULL);
    ntpu_info in;
    cr_assert_eq(ntpu_get_info(dev, &in), NTPU_OK);
    cr_assert_str_eq(in.device, "ref:n=4");
    cr_assert_eq(in.rows, 4);
    cr_assert_eq(in.platform, 0);
    ntpu_close(dev);
    dev = open_ok("");
    ntpu_close(dev);
}

Test(api, info_fields)
{
    ntpu_device *dev = open_ok("ref:n=16,ub=100,wb=64,acc=50,payload=1000");
    ntpu_info in;
    cr_assert_eq(ntpu_get_info(dev, &in), NTPU_OK);
    cr_assert_eq(in.version_major, 1);
    cr_assert_eq(in.rows, 16);
    cr_assert_eq(in.cols, 16);
    cr_assert_eq(in.ub_rows, 100);
    cr_assert_eq(in.wb_rows, 64);
    cr_assert_eq(in.acc_rows, 50);
    cr_assert_eq(in.max_payload, 1000);
    cr_assert_eq(in.dtypes, NTPU_DTYPE_INT8_BIT | NTPU_DTYPE_BF16_BIT);
    cr_assert_str_eq(in.platform_name, "golden model");
    ntpu_close(dev);
}

Test(api, status_strings_never_null)
{
    for (int s = -20; s <= 5; s++)
        cr_assert_not_null(ntpu_status_str((ntpu_status)s));
    cr_assert_str_eq(ntpu_status_str(NTPU_OK), "ok");
    cr_assert_str_eq(ntpu_status_str((ntpu_status)42), "unknown status");
    cr_assert_str_eq(ntpu_status_str(NTPU_ERR_TIMEOUT), "timeout");
}

/* ntpu_qmodel_check answers before any work whether the int8 copy would fit. */
Test(api, qmodel_check_before_quantizing)
{
    static const unsigned sizes[] = {784, 16, 10};
    const char *devs[2] = {"ref", "ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1,notra=1"};
    for (int k = 0; k < 2; k++) {
        ntpu_device *d = NULL;
        cr_assert_eq(ntpu_open(devs[k], &d), NTPU_OK);
        ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_SGD);
        ntpu_model *m = NULL;
        cr_assert_eq(ntpu_model_create(d, sizes, 3, 64, 1, &opt, &m), NTPU_OK, "%s", ntpu_last_error(d));
        ntpu_status st = ntpu_qmodel_check(m);
        if (k == 0) {
            cr_assert_eq(st, NTPU_OK, "%s", ntpu_last_error(d));
        } else {
            cr_assert_eq(st, NTPU_ERR_UNSUPPORTED);
            cr_assert(strstr(ntpu_last_error(d), "does not fit the device's memories") != NULL, "%s",
                      ntpu_last_error(d));
        }
        ntpu_model_free(m);
        ntpu_close(d);
    }
    cr_assert_eq(ntpu_qmodel_check(NULL), NTPU_ERR_INVALID_ARG);
}

/* A label at or above the class count is refused before anything is read by it (it indexed the
 * logits past their end); the same labels below it evaluate. */
Test(api, evaluate_checks_labels)
{
    static const unsigned sizes[] = {6, 5, 3};
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_SGD);
    ntpu_model *m = NULL;
    cr_assert_eq(ntpu_model_create(d, sizes, 3, 4, 1, &opt, &m), NTPU_OK, "%s", ntpu_last_error(d));
    float x[8 * 6];
    for (int i = 0; i < 8 * 6; i++)
        x[i] = (float)(i % 7) / 7.0f;
    uint8_t y[8] = {0, 1, 2, 0, 1, 2, 0, 200};
    double acc = -1, loss = -1;
    cr_assert_eq(ntpu_model_evaluate(m, x, y, 8, &acc, &loss), NTPU_ERR_INVALID_ARG);
    cr_assert(strstr(ntpu_last_error(d), "label 200 of sample 7 is not below 3") != NULL, "%s", ntpu_last_error(d));
    cr_assert_eq(acc, -1);
    y[7] = 2;
    cr_assert_eq(ntpu_model_evaluate(m, x, y, 8, &acc, &loss), NTPU_OK, "%s", ntpu_last_error(d));
    cr_assert(acc >= 0 && acc <= 1 && loss > 0, "acc %g loss %g", acc, loss);
    ntpu_qmodel *q = NULL;
    cr_assert_eq(ntpu_qmodel_create(m, x, 8, &q), NTPU_OK, "%s", ntpu_last_error(d));
    y[7] = 3;
    cr_assert_eq(ntpu_qmodel_evaluate(q, x, y, 8, &acc), NTPU_ERR_INVALID_ARG);
    cr_assert(strstr(ntpu_last_error(d), "label 3 of sample 7 is not below 3") != NULL, "%s", ntpu_last_error(d));
    ntpu_qmodel_free(q);
    ntpu_model_free(m);
    ntpu_close(d);
}

/* The optimizer settings a checkpoint may hold are the ones a model may be created with. */
Test(api, model_create_checks_optimizer_settings)
{
    static const unsigned sizes[] = {6, 5, 3};
    ntpu_device *d = NULL;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_model *m = NULL;
    ntpu_optim_config bad[4] = {ntpu_optim_defaults(NTPU_OPT_SGD), ntpu_optim_defaults(NTPU_OPT_ADAM),
                                ntpu_optim_defaults(NTPU_OPT_ADAMW), ntpu_optim_defaults(NTPU_OPT_MOMENTUM)};
    bad[0].lr = NAN;
    bad[1].eps = 0.0f;
    bad[2].beta2 = 1.0f;
    bad[3].momentum = -0.5f;
    const char *what[4] = {"lr", "eps", "beta2", "momentum"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(ntpu_model_create(d, sizes, 3, 4, 1, &bad[i], &m), NTPU_ERR_INVALID_ARG, "%s", what[i]);
        cr_assert(strstr(ntpu_last_error(d), what[i]) != NULL, "%s", ntpu_last_error(d));
    }
    ntpu_optim_config sgd = ntpu_optim_defaults(NTPU_OPT_SGD);
    sgd.eps = 0.0f; /* not SGD's */
    cr_assert_eq(ntpu_model_create(d, sizes, 3, 4, 1, &sgd, &m), NTPU_OK, "%s", ntpu_last_error(d));
    ntpu_model_free(m);
    ntpu_close(d);
}
