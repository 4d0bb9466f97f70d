/* SPDX-License-Identifier: Apache-2.0 */
/* Stimulus for the ntpu_array_shared bench: ntpu_array/gen.c's schedule (weight tiles loaded at the
 * tightest timing the array allows, rows of both dtypes with special values, the golden numerics'
 * results) for arrays with BF16_SHARED = 1, the next row right after a bf16 row's BF16_LATENCY.
 * Usage: gen OUTDIR [SEED] */
#define NTPU_ARRAY_GEN_MAIN_ELSEWHERE
#include "../ntpu_array/gen.c"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [SEED]\n", argv[0]);
        return 2;
    }
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x6E74707573686172ull;
    if (generate(argv[1], 2, 5, 1, 20000) || generate(argv[1], 2, 1, 1, 8000) || generate(argv[1], 3, 2, 1, 12000) ||
        generate(argv[1], 4, 4, 1, 12000) || generate(argv[1], 8, 5, 1, 16000))
        return 1;
    return 0;
}
