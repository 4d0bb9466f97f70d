/* SPDX-License-Identifier: Apache-2.0 */
/* vsim_speed: how fast the Verilated core simulates, without the host library
 * in the timed loop (docs/decisions/0010-fast-vsim.md).
 *
 *   vsim_speed [int8|bf16] [S] [REPS] [SAVE]
 *
 * Records the bytes the library sends for one S x S x S matmul on vsim (the
 * link wrapped with -Wl,--wrap=ntpu_vsim_write), then replays that stream REPS
 * times into fresh models in one go, clocking until the last reply byte: the core reads it back to back, with no
 * host round trips, and only the harness's clock loop runs. Prints cycles per
 * wall second and MACs (S^3 per replay) per wall second, and per CPU second. SAVE, if given, gets
 * the recorded stream, for replaying into model builds outside the library. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntpu/ntpu.h"
#include "ntpu_vsim.h"

void __real_ntpu_vsim_write(ntpu_vsim *sim, const uint8_t *buf, size_t n);
void __wrap_ntpu_vsim_write(ntpu_vsim *sim, const uint8_t *buf, size_t n);
size_t __real_ntpu_vsim_read(ntpu_vsim *sim, uint8_t *buf, size_t n, uint64_t idle_limit);
size_t __wrap_ntpu_vsim_read(ntpu_vsim *sim, uint8_t *buf, size_t n, uint64_t idle_limit);

static uint8_t *rec;
static size_t rec_len, rec_cap, reply_len;
static int recording;

void __wrap_ntpu_vsim_write(ntpu_vsim *sim, const uint8_t *buf, size_t n)
{
    if (recording) {
        if (rec_len + n > rec_cap) {
            size_t cap = rec_cap ? rec_cap : 1 << 16;
            while (cap < rec_len + n)
                cap *= 2;
            uint8_t *p = realloc(rec, cap);
            if (!p) {
                fprintf(stderr, "vsim_speed: out of memory\n");
                exit(1);
            }
            rec = p;
            rec_cap = cap;
        }
        memcpy(rec + rec_len, buf, n);
        rec_len += n;
    }
    __real_ntpu_vsim_write(sim, buf, n);
}

size_t __wrap_ntpu_vsim_read(ntpu_vsim *sim, uint8_t *buf, size_t n, uint64_t idle_limit)
{
    size_t got = __real_ntpu_vsim_read(sim, buf, n, idle_limit);
    if (recording)
        reply_len += got;
    return got;
}

static double now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* One S x S x S matmul on vsim, recorded. */
static int record(ntpu_dtype dtype, size_t s)
{
    size_t count = s * s;
    int8_t *a8 = malloc(count), *b8 = malloc(count);
    float *af = malloc(count * 4), *bf = malloc(count * 4);
    uint32_t *c = malloc(count * 4);
    ntpu_device *dev = NULL;
    int rc = 1;
    if (!a8 || !b8 || !af || !bf || !c) {
        fprintf(stderr, "vsim_speed: out of memory\n");
        goto out;
    }
    uint64_t seed = 5;
    for (size_t i = 0; i < count; i++) {
        a8[i] = (int8_t)splitmix(&seed);
        b8[i] = (int8_t)splitmix(&seed);
        af[i] = (float)((double)(splitmix(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        bf[i] = (float)((double)(splitmix(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    recording = 1; /* from the open on: the core checks the frames' sequence numbers */
    if (ntpu_open("vsim", &dev) != NTPU_OK) {
        fprintf(stderr, "vsim_speed: cannot open vsim\n");
        goto out;
    }
    int i8 = dtype == NTPU_DTYPE_INT8;
    ntpu_status st = ntpu_matmul(dev, dtype, i8 ? (void *)a8 : (void *)af, i8 ? (void *)b8 : (void *)bf, c, s, s, s);
    recording = 0;
    if (st != NTPU_OK) {
        fprintf(stderr, "vsim_speed: matmul: %s\n", ntpu_last_error(dev));
        goto out;
    }
    rc = 0;
out:
    ntpu_close(dev);
    free(a8);
    free(b8);
    free(af);
    free(bf);
    free(c);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dt = argc > 1 ? argv[1] : "int8";
    long s = argc > 2 ? strtol(argv[2], NULL, 10) : 128;
    long reps = argc > 3 ? strtol(argv[3], NULL, 10) : 3;
    const char *save = argc > 4 ? argv[4] : NULL;
    if ((strcmp(dt, "int8") && strcmp(dt, "bf16")) || s < 1 || s > 4096 || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: vsim_speed [int8|bf16] [S 1..4096] [REPS 1..1000]\n");
        return 2;
    }
    ntpu_dtype dtype = strcmp(dt, "int8") ? NTPU_DTYPE_BF16 : NTPU_DTYPE_INT8;
    if (record(dtype, (size_t)s))
        return 1;

    if (save) {
        FILE *f = fopen(save, "wb");
        if (!f || fwrite(rec, 1, rec_len, f) != rec_len || fclose(f)) {
            fprintf(stderr, "vsim_speed: cannot write '%s'\n", save);
            return 1;
        }
        printf("saved %zu bytes to %s (%zu reply bytes)\n", rec_len, save, reply_len);
    }
    uint8_t *sink = malloc(reply_len + 1);
    if (!sink) {
        fprintf(stderr, "vsim_speed: out of memory\n");
        return 1;
    }
    double best = 0, total_secs = 0, total_cpu = 0;
    uint64_t total_cycles = 0;
    for (long r = 0; r < reps; r++) {
        char err[256];
        ntpu_vsim *sim = ntpu_vsim_new("", err, sizeof err);
        if (!sim) {
            fprintf(stderr, "vsim_speed: %s\n", err);
            return 1;
        }
        uint64_t c0 = ntpu_vsim_cycles(sim);
        double t0 = now(CLOCK_MONOTONIC), c0_cpu = now(CLOCK_PROCESS_CPUTIME_ID);
        __real_ntpu_vsim_write(sim, rec, rec_len);
        /* Clocks until the last reply byte: no idle tail in the figure. */
        size_t got = __real_ntpu_vsim_read(sim, sink, reply_len, UINT64_C(1) << 24);
        double secs = now(CLOCK_MONOTONIC) - t0;
        total_cpu += now(CLOCK_PROCESS_CPUTIME_ID) - c0_cpu;
        uint64_t cycles = ntpu_vsim_cycles(sim) - c0;
        ntpu_vsim_free(sim);
        if (got != reply_len) {
            fprintf(stderr, "vsim_speed: replay gave %zu reply bytes, the recording %zu\n", got, reply_len);
            return 1;
        }
        total_secs += secs;
        total_cycles += cycles;
        if (secs > 0 && (double)cycles / secs > best)
            best = (double)cycles / secs;
    }
    double macs = (double)s * (double)s * (double)s;
    double cyc = (double)total_cycles / (double)reps;
    printf("%s S=%ld: %zu bytes in, %zu out, %.0f cycles per run, %.3f s per run\n", dt, s, rec_len, reply_len, cyc,
           total_secs / (double)reps);
    printf("cycles/s %.3g (best %.3g)  MAC/s %.3g  MACs/cycle %.2f\n", (double)total_cycles / total_secs, best,
           macs * (double)reps / total_secs, macs / cyc);
    /* On a shared machine the CPU time is the steadier clock for comparing builds. */
    printf("per CPU second: cycles %.3g  MAC %.3g\n", (double)total_cycles / total_cpu,
           macs * (double)reps / total_cpu);
    free(sink);
    free(rec);
    return 0;
}
