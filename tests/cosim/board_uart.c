/* SPDX-License-Identifier: Apache-2.0 */
/* The whole board path: the host library, the UART at bit level, the board's
 * FIFO, the link framing and the core, through vsim:board=icebreaker. An int8
 * and a bf16 matmul larger than one tile, and two Adam steps of a small MLP,
 * must come out bit for bit as on the golden model configured like the board
 * (results, losses, weights, biases and optimizer state).
 * On a clean line every byte must reach the core (the host never overruns the
 * board's FIFO). With noise (ber=P drop=P seed=N: bit errors and lost bytes on
 * the wire both ways) the results must still be right, and the noise must have
 * reached the device.
 * Prints the simulation's speed: board cycles and link bytes per second.
 * board=B, config=C: any board and configuration that vsim:board= knows (icebreaker by
 * default); with the library linked to a board's synthesized netlist (make fpga-test,
 * mk/fpga_test.mk), that netlist.
 * small=1: 8x6 by 6x5 matmuls and one Adam step of an 8-8-4 MLP at batch 4.
 * device=D: any other device instead (tests/firmware/emu_usb_path.c runs this with device=usb, the
 * pico-ice emulated end to end).
 * Usage: board_uart [board=B | device=D] [config=C] [small=1] [ber=P] [drop=P] [seed=N] [timeout_ms=T] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntpu/nn.h"
#include "ntpu/numerics.h"

/* The sizes; small=1 shrinks them for the gate-level netlists (make fpga-test), which simulate
 * about 100 times slower than the RTL: still more than one tile each way on a 2x2 or 4x4 array. */
enum { M_MAX = 20, K_MAX = 12, N_MAX = 10, BATCH_MAX = 8, IN_MAX = 20 };
static int M = 20, K = 12, N = 10, BATCH = 8, STEPS = 2;
static unsigned sizes[] = {20, 16, 10};
#define LAYERS (sizeof sizes / sizeof sizes[0] - 1)

static uint64_t rng = 1;
static uint64_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what, ntpu_device *dev)
{
    printf("FAIL %s: %s\n", what, dev ? ntpu_last_error(dev) : "");
    return 1;
}

static int matmuls(ntpu_device *board, ntpu_device *ref)
{
    static int8_t a8[M_MAX * K_MAX], b8[K_MAX * N_MAX];
    static uint16_t a16[M_MAX * K_MAX], b16[K_MAX * N_MAX];
    static int32_t c8[2][M_MAX * N_MAX];
    static float c16[2][M_MAX * N_MAX];
    for (int i = 0; i < M * K; i++) {
        a8[i] = (int8_t)rnd();
        a16[i] = ntpu_bf16_from_f32((float)((int)(rnd() % 2001) - 1000) / 256.0f);
    }
    for (int i = 0; i < K * N; i++) {
        b8[i] = (int8_t)rnd();
        b16[i] = ntpu_bf16_from_f32((float)((int)(rnd() % 2001) - 1000) / 512.0f);
    }
    ntpu_device *devs[2] = {board, ref};
    for (int d = 0; d < 2; d++) {
        if (ntpu_matmul(devs[d], NTPU_DTYPE_INT8, a8, b8, c8[d], M, K, N) != NTPU_OK)
            return fail("int8 matmul", devs[d]);
        if (ntpu_matmul_bf16(devs[d], a16, b16, c16[d], M, K, N) != NTPU_OK)
            return fail("bf16 matmul", devs[d]);
    }
    if (memcmp(c8[0], c8[1], (size_t)M * N * sizeof c8[0][0]) != 0) {
        printf("FAIL int8 %dx%dx%d: the board and ref differ\n", M, K, N);
        return 1;
    }
    if (memcmp(c16[0], c16[1], (size_t)M * N * sizeof c16[0][0]) != 0) {
        printf("FAIL bf16 %dx%dx%d: the board and ref differ\n", M, K, N);
        return 1;
    }
    printf("ok   int8 and bf16 matmul %dx%d by %dx%d: bit-identical to ref\n", M, K, K, N);
    return 0;
}

/* Bit-identical floats, or a line saying where they differ. */
static int same(const char *what, unsigned l, const float *a, const float *b, size_t n)
{
    if ((a == NULL) != (b == NULL) || (a && memcmp(a, b, n * sizeof *a) != 0)) {
        printf("FAIL %s of layer %u differs between the board and ref\n", what, l);
        return 0;
    }
    return 1;
}

static int training(ntpu_device *board, ntpu_device *ref)
{
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m[2];
    ntpu_device *devs[2] = {board, ref};
    for (int d = 0; d < 2; d++)
        if (ntpu_model_create(devs[d], sizes, LAYERS + 1, BATCH, 7, &opt, &m[d]) != NTPU_OK)
            return fail("model", devs[d]);
    float x[BATCH_MAX * IN_MAX];
    uint8_t y[BATCH_MAX];
    int ok = 1;
    for (int s = 0; s < STEPS && ok; s++) {
        for (int i = 0; i < BATCH * (int)sizes[0]; i++)
            x[i] = (float)(rnd() % 1000) / 1000.0f;
        for (int i = 0; i < BATCH; i++)
            y[i] = (uint8_t)(rnd() % sizes[LAYERS]);
        ntpu_step_result r[2];
        for (int d = 0; d < 2; d++)
            if (ntpu_model_train_step(m[d], x, y, BATCH, &r[d]) != NTPU_OK)
                return fail("training step", devs[d]);
        if (memcmp(&r[0].loss, &r[1].loss, sizeof r[0].loss) != 0 || r[0].correct != r[1].correct) {
            printf("FAIL step %d: loss %.9g on the board, %.9g on ref\n", s, r[0].loss, r[1].loss);
            ok = 0;
        }
        printf("     step %d: loss %.6f (board and ref)\n", s, r[0].loss);
    }
    ntpu_model_view v[2];
    ntpu_model_get_view(m[0], &v[0]);
    ntpu_model_get_view(m[1], &v[1]);
    for (unsigned l = 0; l < LAYERS && ok; l++) {
        size_t nw = (size_t)sizes[l] * sizes[l + 1], nb = sizes[l + 1];
        ok = same("weights", l, v[0].weights[l], v[1].weights[l], nw) &&
             same("biases", l, v[0].biases[l], v[1].biases[l], nb) &&
             same("weight state 1", l, v[0].w_state1[l], v[1].w_state1[l], nw) &&
             same("weight state 2", l, v[0].w_state2[l], v[1].w_state2[l], nw) &&
             same("bias state 1", l, v[0].b_state1[l], v[1].b_state1[l], nb) &&
             same("bias state 2", l, v[0].b_state2[l], v[1].b_state2[l], nb);
    }
    if (ok && *v[0].step != *v[1].step) {
        printf("FAIL the board took %llu optimizer steps, ref %llu\n", (unsigned long long)*v[0].step,
               (unsigned long long)*v[1].step);
        ok = 0;
    }
    ntpu_model_free(m[0]);
    ntpu_model_free(m[1]);
    if (!ok)
        return 1;
    printf("ok   %u-%u-%u MLP, batch %d, %d Adam step(s): losses, weights, biases, optimizer state bit-identical\n",
           sizes[0], sizes[1], sizes[2], BATCH, STEPS);
    return 0;
}

int main(int argc, char **argv)
{
    char device[160] = "vsim:board=icebreaker";
    int noisy = 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress through a pipe too: a netlist run takes minutes */
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "board=", 6))
            snprintf(device, sizeof device, "vsim:%s", argv[i]);
        if (!strncmp(argv[i], "device=", 7))
            snprintf(device, sizeof device, "%s", argv[i] + 7);
    }
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "board=", 6) || !strncmp(argv[i], "device=", 7))
            continue;
        if (!strcmp(argv[i], "small=1")) {
            M = 8, K = 6, N = 5, BATCH = 4, STEPS = 1;
            sizes[0] = 8, sizes[1] = 8, sizes[2] = 4;
            continue;
        }
        if (strncmp(argv[i], "ber=", 4) && strncmp(argv[i], "drop=", 5) && strncmp(argv[i], "seed=", 5) &&
            strncmp(argv[i], "timeout_ms=", 11) && strncmp(argv[i], "config=", 7)) {
            printf("FAIL usage: board_uart [board=B | device=D] [config=C] [small=1] [ber=P] [drop=P] [seed=N] "
                   "[timeout_ms=T]\n");
            return 2;
        }
        int knob = !strncmp(argv[i], "ber=", 4) || !strncmp(argv[i], "drop=", 5);
        noisy |= knob && strtod(strchr(argv[i], '=') + 1, NULL) > 0;
        size_t used = strlen(device);
        snprintf(device + used, sizeof device - used, ",%s", argv[i]);
    }
    double t0 = now_s();
    clock_t cpu0 = clock();
    ntpu_device *board, *ref;
    if (ntpu_open(device, &board) != NTPU_OK)
        return fail(device, board);
    ntpu_info in;
    ntpu_get_info(board, &in);
    char refdev[128];
    snprintf(refdev, sizeof refdev, "ref:n=%u,ub=%u,wb=%u,acc=%u,payload=%u", in.rows, (unsigned)in.ub_rows,
             (unsigned)in.wb_rows, (unsigned)in.acc_rows, in.max_payload);
    if (ntpu_open(refdev, &ref) != NTPU_OK)
        return fail(refdev, ref);
    printf("     %s (%ux%u, %.0f MHz) against %s\n", device, in.rows, in.cols, in.clock_hz / 1e6, refdev);

    if (matmuls(board, ref) || training(board, ref))
        return 1;

    ntpu_counters c;
    ntpu_device_status ds;
    ntpu_link_stats ls;
    /* Counters last: the frame that reads them is the last the host sends. */
    if (ntpu_read_status(board, &ds) != NTPU_OK || ntpu_read_counters(board, &c, 0) != NTPU_OK ||
        ntpu_get_link_stats(board, &ls) != NTPU_OK)
        return fail("counters", board);
    /* CPU time says how fast the simulation is; wall time also how loaded the machine is. */
    double dt = now_s() - t0, cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC;
    if (cpu <= 0)
        cpu = 1e-3;
    printf("     %.2f s (%.2f s CPU): %llu board cycles, %.3g per CPU second (%.0fx slower than the board); "
           "link %llu bytes out, %llu in, %.3g B per CPU second each way; %llu resyncs, %llu recoveries, "
           "%llu frames resent\n",
           dt, cpu, (unsigned long long)c.cycles, c.cycles / cpu, in.clock_hz / (c.cycles / cpu),
           (unsigned long long)ls.tx_bytes, (unsigned long long)ls.rx_bytes, (ls.tx_bytes + ls.rx_bytes) / 2.0 / cpu,
           (unsigned long long)ls.resyncs, (unsigned long long)ls.recoveries, (unsigned long long)ls.retransmits);
    /* Bytes the host sent that never reached the core, and frames it rejected. */
    long long lost = (long long)ls.tx_bytes - (long long)c.rx_bytes;
    printf("     %lld bytes sent but not received by the core, %u error replies\n", lost, (unsigned)ds.errors);
    if (noisy && (ls.recoveries == 0 || (lost <= 0 && ds.errors == 0))) {
        puts("FAIL the noise never made the host recover: raise ber or drop");
        return 1;
    }
    /* On a clean line every byte must get through: a lost one means the host overran the FIFO. */
    if (!noisy && (lost != 0 || ds.errors != 0)) {
        puts("FAIL bytes were lost or frames rejected on a clean line");
        return 1;
    }
    ntpu_close(board);
    ntpu_close(ref);
    printf("PASS board_uart%s\n", noisy ? " with noise" : "");
    return 0;
}
