/* SPDX-License-Identifier: Apache-2.0 */
/* Random-shape matmuls through the library on the golden model and the RTL:
 * shapes 1..3N in each dimension, both dtypes, bf16 special values mixed in.
 * ref and vsim must agree bit for bit; ref must equal a plain integer matmul
 * (int8) and the plain sequential fp32 chain (bf16), and lie within the bound of
 * docs/numerics.md of an fp64 matmul whenever every value is finite.
 * Usage: matmul_shapes [count=1000] [seed=5] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/ntpu.h"

static uint64_t rng = 5;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A bf16 value: mostly ordinary, sometimes ±0, ±Inf, NaN, subnormal, huge or tiny. */
static uint16_t rnd_bf16(int specials)
{
    uint16_t sign = (uint16_t)((rnd() & 1) << 15);
    unsigned r = (unsigned)(rnd() % 40);
    if (specials && r == 0)
        return sign | 0x7F80;
    if (specials && r == 1)
        return 0x7FC1;
    if (r == 2)
        return sign;
    if (r == 3)
        return sign | (uint16_t)(1 + rnd() % 0x7F);
    unsigned exp = r == 4               ? 1 + (unsigned)(rnd() % 8)
                   : specials && r == 5 ? 240 + (unsigned)(rnd() % 14)
                                        : 120 + (unsigned)(rnd() % 14);
    return sign | (uint16_t)(exp << 7) | (uint16_t)(rnd() & 0x7F);
}

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int main(int argc, char **argv)
{
    unsigned count = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 5;
    /* NTPU_TEST_VSIM: vsim's options, as in pair.h (rtl: the core from rtl/ alone; board=...: a
     * whole simulated board, and then the golden model is configured as its ID block says). */
    const char *opts = getenv("NTPU_TEST_VSIM");
    char vsim_dev[256], ref_dev[160] = "ref";
    snprintf(vsim_dev, sizeof vsim_dev, "vsim%s%s", opts && *opts ? ":" : "", opts ? opts : "");
    ntpu_device *ref = NULL, *vsim = NULL;
    ntpu_info info;
    if (opts && strstr(opts, "board=")) {
        if (ntpu_open(vsim_dev, &vsim) != NTPU_OK) {
            printf("FAIL cannot open %s: %s\n", vsim_dev, ntpu_last_error(vsim));
            return 1;
        }
        ntpu_get_info(vsim, &info);
        snprintf(ref_dev, sizeof ref_dev,
                 "ref:n=%u,ub=%u,wb=%u,acc=%u,payload=%u,novec=%u,notra=%u,pm=%u,os=%u,noconv=%u,nopool=%u", info.rows,
                 (unsigned)info.ub_rows, (unsigned)info.wb_rows, (unsigned)info.acc_rows, info.max_payload,
                 !(info.features & NTPU_FEATURE_VECTOR_BIT), !(info.features & NTPU_FEATURE_TRANSPOSE_A_BIT),
                 (unsigned)info.pm_rows, (unsigned)info.os_rows, !(info.features & NTPU_FEATURE_CONV_BIT),
                 !(info.features & NTPU_FEATURE_POOL_BIT));
        printf("%s against %s\n", vsim_dev, ref_dev);
    }
    if (ntpu_open(ref_dev, &ref) != NTPU_OK || (!vsim && ntpu_open(vsim_dev, &vsim) != NTPU_OK)) {
        printf("FAIL cannot open %s and %s\n", ref_dev, vsim_dev);
        return 1;
    }
    ntpu_get_info(ref, &info);
    const size_t n3 = 3 * info.rows;
    static int8_t a8[64 * 96], b8[96 * 96];
    static uint16_t a16[96 * 96], b16[96 * 96];
    static uint32_t c_ref[96 * 96], c_vsim[96 * 96];
    unsigned long values = 0, finite_checked = 0;
    double worst = 0;
    for (unsigned t = 0; t < count; t++) {
        size_t M = 1 + rnd() % n3, K = 1 + rnd() % n3, N = 1 + rnd() % n3;
        int bf16 = t & 1, specials = bf16 && t % 4 == 1;
        ntpu_status s1, s2;
        if (bf16) {
            for (size_t i = 0; i < M * K; i++)
                a16[i] = rnd_bf16(specials);
            for (size_t i = 0; i < K * N; i++)
                b16[i] = rnd_bf16(specials);
            s1 = ntpu_matmul_bf16(ref, a16, b16, (float *)c_ref, M, K, N);
            s2 = ntpu_matmul_bf16(vsim, a16, b16, (float *)c_vsim, M, K, N);
        } else {
            for (size_t i = 0; i < M * K; i++)
                a8[i] = (int8_t)rnd();
            for (size_t i = 0; i < K * N; i++)
                b8[i] = (int8_t)rnd();
            s1 = ntpu_matmul(ref, NTPU_DTYPE_INT8, a8, b8, c_ref, M, K, N);
            s2 = ntpu_matmul(vsim, NTPU_DTYPE_INT8, a8, b8, c_vsim, M, K, N);
        }
        if (s1 != NTPU_OK || s2 != NTPU_OK) {
            printf("FAIL case %u: %s / %s\n", t, ntpu_last_error(ref), ntpu_last_error(vsim));
            return 1;
        }
        if (memcmp(c_ref, c_vsim, M * N * 4) != 0) {
            printf("FAIL case %u (%s %zux%zux%zu): ref and vsim differ\n", t, bf16 ? "bf16" : "int8", M, K, N);
            return 1;
        }
        for (size_t m = 0; m < M; m++)
            for (size_t j = 0; j < N; j++) {
                uint32_t got = c_ref[m * N + j];
                if (!bf16) {
                    int64_t want = 0;
                    for (size_t k = 0; k < K; k++)
                        want += a8[m * K + k] * b8[k * N + j];
                    if ((int32_t)got != (int32_t)want) {
                        printf("FAIL case %u: C[%zu][%zu] = %d, integer matmul %lld\n", t, m, j, (int32_t)got,
                               (long long)want);
                        return 1;
                    }
                    continue;
                }
                uint32_t chain = 0;
                double exact = 0, mag = 0;
                int finite = 1;
                for (size_t k = 0; k < K; k++) {
                    chain = ntpu_mac_bf16(chain, a16[m * K + k], b16[k * N + j]);
                    double x = ntpu_bf16_to_f32(a16[m * K + k]), y = ntpu_bf16_to_f32(b16[k * N + j]);
                    if ((a16[m * K + k] & 0x7F80) == 0)
                        x = 0; /* subnormals read as zero */
                    if ((b16[k * N + j] & 0x7F80) == 0)
                        y = 0;
                    finite &= isfinite(x) && isfinite(y);
                    exact += x * y;
                    mag += fabs(x * y);
                }
                if (got != chain) {
                    printf("FAIL case %u: C[%zu][%zu] = 0x%08x, sequential fp32 chain 0x%08x\n", t, m, j, got, chain);
                    return 1;
                }
                if (finite && isfinite(f32(got)) && mag < 1e38) {
                    double err = fabs(f32(got) - exact), bound = (double)K * ldexp(1, -24) * mag + 1e-30;
                    if (err > bound) {
                        printf("FAIL case %u: C[%zu][%zu] error %g over the bound %g\n", t, m, j, err, bound);
                        return 1;
                    }
                    if (mag > 1e-30) /* below that the absolute term of the bound rules */
                        worst = err / mag > worst ? err / mag : worst;
                    finite_checked++;
                }
            }
        values += M * N;
    }
    printf("%u random matmuls (shapes 1..%zu, int8 and bf16 with special values): %lu results, ref == vsim bit "
           "for bit, int8 exact, bf16 equal to the fp32 chain; %lu finite bf16 results within the bound "
           "(worst error %.2e of sum|a*b|)\n",
           count, n3, values, finite_checked, worst);
    ntpu_close(ref);
    ntpu_close(vsim);
    puts("PASS matmul_shapes");
    return 0;
}
