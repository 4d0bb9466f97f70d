/* SPDX-License-Identifier: Apache-2.0 */
/* Stimulus for the ntpu_array_pipe bench: ntpu_array/gen.c's schedule (weight tiles loaded at the
 * tightest timing the array allows, rows of both dtypes, the golden numerics' results), written
 * for the pipelined arrays' LATENCY. Usage: gen OUTDIR [SEED] */
#define NTPU_ARRAY_GEN_MAIN_ELSEWHERE
#include "../ntpu_array/gen.c"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [SEED]\n", argv[0]);
        return 2;
    }
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x6E74707570697065ull;
    if (generate(argv[1], 4, 2, 0, 5000) || generate(argv[1], 4, 5, 0, 4000) || generate(argv[1], 8, 3, 0, 2500))
        return 1;
    return 0;
}
