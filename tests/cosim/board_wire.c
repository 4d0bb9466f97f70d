/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated board's wire (sim/vsim/vsim_board.cpp) on its own, below the
 * host library: bytes really take 10 bits of CLOCK_HZ / BAUD cycles each way
 * and go back to back; memory traffic through the UART, the FIFO and the core
 * comes back byte for byte as from the golden model configured like the board;
 * more bytes in flight than the FIFO holds are lost (the host's limit is real);
 * the noise options drop and flip at the rates asked for.
 * Usage: board_wire */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/protocol.h"
#include "ntpu_ref.h"
#include "ntpu_vsim_board.h"

#define IDLE 20000u /* cycles without a byte finishing before a read gives up */

static int failures;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(ok ? "ok   " : "FAIL ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    failures += !ok;
}

static ntpu_vsim_board *board(const char *opts)
{
    char err[256] = "";
    ntpu_vsim_board *b = ntpu_vsim_board_new(opts, err, sizeof err);
    if (!b) {
        printf("FAIL cannot create the board (%s): %s\n", opts, err);
        exit(1);
    }
    return b;
}

static uint64_t cycles(const ntpu_vsim_board *b)
{
    ntpu_vsim_board_stats s;
    ntpu_vsim_board_get_stats(b, &s);
    return s.cycles;
}

static size_t frame(uint8_t *out, uint8_t seq, const uint8_t *payload, size_t len)
{
    out[0] = NTPU_SOF_CMD;
    out[1] = seq;
    out[2] = (uint8_t)len;
    out[3] = (uint8_t)(len >> 8);
    memcpy(out + 4, payload, len);
    uint32_t crc = (uint32_t)crc32(0, out + 1, (uInt)(3 + len));
    for (int i = 0; i < 4; i++)
        out[4 + len + i] = (uint8_t)(crc >> (8 * i));
    return len + NTPU_FRAME_OVERHEAD;
}

static uint64_t rng = 3;
static uint64_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
}

/* Line rate: a NOP and its reply are 9 bytes each way, 10 bits a byte at CLOCK_HZ / BAUD clocks a bit. */
static void line_rate(void)
{
    ntpu_vsim_board *b = board("board=icebreaker");
    ntpu_vsim_board_stats s;
    ntpu_vsim_board_get_stats(b, &s);
    const uint64_t byte = 10ull * s.clock_hz / s.baud;
    uint8_t nop = NTPU_OP_NOP, buf[64 * 9], rx[64 * 9];
    size_t n = frame(buf, 0, &nop, 1);
    uint64_t t0 = cycles(b);
    ntpu_vsim_board_write(b, buf, n);
    size_t got = ntpu_vsim_board_read(b, rx, n, IDLE);
    uint64_t dt = cycles(b) - t0;
    check(got == n && dt >= 2 * n * byte && dt <= 2 * n * byte + 200,
          "one NOP: %zu reply bytes in %llu cycles (%zu bytes each way at %llu cycles a byte, plus the core)", got,
          (unsigned long long)dt, n, (unsigned long long)byte);
    /* 64 NOPs written at once leave back to back: the replies overlap the commands. */
    size_t len = 0;
    for (unsigned i = 0; i < 64; i++)
        len += frame(buf + len, (uint8_t)(1 + i), &nop, 1);
    t0 = cycles(b);
    ntpu_vsim_board_write(b, buf, len);
    got = ntpu_vsim_board_read(b, rx, len, IDLE);
    dt = cycles(b) - t0;
    check(got == len && dt >= len * byte && dt <= len * byte + 2 * n * byte + 200,
          "64 NOPs back to back: %zu reply bytes in %llu cycles (the line alone: %llu)", got, (unsigned long long)dt,
          (unsigned long long)(len * byte));
    ntpu_vsim_board_free(b);
}

/* WRITE_MEM and READ_MEM of random rows in UB, WB and ACC: byte for byte the golden model's replies. */
static void memory_traffic(void)
{
    ntpu_vsim_board *b = board("board=icebreaker");
    ntpu_ref_config cfg = {.n = 2, .ub_rows = 1024, .wb_rows = 16384, .acc_rows = 512, .max_payload = 516};
    ntpu_ref *ref = ntpu_ref_new(&cfg);
    if (!ref) {
        puts("FAIL cannot create the golden model");
        exit(1);
    }
    static uint8_t tx[1 << 16], rx_ref[1 << 16], rx_board[1 << 16];
    size_t total = 0, frames = 0, same = 1;
    for (unsigned round = 0; round < 20; round++) {
        size_t len = 0;
        for (unsigned k = 0; k < 6; k++) { /* well under the FIFO's 2,048 bytes per round */
            static const uint32_t rows_of[3] = {1024, 16384, 512};
            static const unsigned bytes_of[3] = {4, 4, 8};
            unsigned mem = (unsigned)(rnd() % 3), rows = 1 + (unsigned)(rnd() % 24);
            uint32_t addr = (uint32_t)(rnd() % (rows_of[mem] - rows + 1));
            uint8_t p[NTPU_LEN_MEM_HDR + 24 * 8];
            p[0] = k & 1 ? NTPU_OP_READ_MEM : NTPU_OP_WRITE_MEM;
            p[1] = (uint8_t)mem;
            p[2] = (uint8_t)addr;
            p[3] = (uint8_t)(addr >> 8);
            p[4] = (uint8_t)rows;
            p[5] = (uint8_t)(rows >> 8);
            size_t plen = NTPU_LEN_MEM_HDR;
            if (!(k & 1))
                for (unsigned i = 0; i < rows * bytes_of[mem]; i++)
                    p[plen++] = (uint8_t)rnd();
            len += frame(tx + len, (uint8_t)frames++, p, plen);
        }
        ntpu_ref_write(ref, tx, len);
        ntpu_vsim_board_write(b, tx, len);
        size_t n = ntpu_ref_pending(ref);
        ntpu_ref_read(ref, rx_ref, n);
        size_t got = ntpu_vsim_board_read(b, rx_board, n, IDLE);
        size_t extra = ntpu_vsim_board_read(b, rx_board + n, 1, 2000);
        same &= got == n && extra == 0 && memcmp(rx_ref, rx_board, n) == 0;
        total += n;
    }
    ntpu_vsim_board_stats s;
    ntpu_vsim_board_get_stats(b, &s);
    check(same && s.red_led == 0,
          "%zu memory commands, %zu reply bytes: the board's replies are the golden model's, byte for byte; red LED "
          "dark",
          frames, total);
    ntpu_ref_free(ref);
    ntpu_vsim_board_free(b);
}

/* A host that ignores the board's limit: ten READ_MEMs whose replies take 42k cycles each on the
 * line, then 4 KB of WRITE_MEMs, all at once. The core takes no new frame while a reply waits for
 * the line, so the FIFO (2,048 bytes) overflows: the red LED lights and replies go missing or
 * report bad CRCs. The host library never does this (at most 1,500 bytes unanswered). */
static void overrun(void)
{
    ntpu_vsim_board *b = board("board=icebreaker");
    ntpu_ref_config cfg = {.n = 2, .ub_rows = 1024, .wb_rows = 16384, .acc_rows = 512, .max_payload = 516};
    ntpu_ref *ref = ntpu_ref_new(&cfg);
    if (!ref) {
        puts("FAIL cannot create the golden model");
        exit(1);
    }
    static uint8_t tx[8192], rx_ref[8192], rx_board[8192];
    size_t len = 0;
    uint8_t seq = 0;
    for (unsigned i = 0; i < 10; i++) {
        uint8_t p[NTPU_LEN_MEM_HDR] = {NTPU_OP_READ_MEM, NTPU_MEM_UB, 0, 0, 128, 0};
        len += frame(tx + len, seq++, p, sizeof p);
    }
    for (unsigned i = 0; i < 8; i++) {
        uint8_t p[NTPU_LEN_MEM_HDR + 127 * 4] = {NTPU_OP_WRITE_MEM, NTPU_MEM_UB, (uint8_t)i, 0, 127, 0};
        for (size_t k = NTPU_LEN_MEM_HDR; k < sizeof p; k++)
            p[k] = (uint8_t)rnd();
        len += frame(tx + len, seq++, p, sizeof p);
    }
    ntpu_ref_write(ref, tx, len);
    ntpu_vsim_board_write(b, tx, len);
    size_t n = ntpu_ref_pending(ref);
    ntpu_ref_read(ref, rx_ref, n);
    size_t got = ntpu_vsim_board_read(b, rx_board, n, IDLE);
    ntpu_vsim_board_stats s;
    ntpu_vsim_board_get_stats(b, &s);
    check(s.red_led >= 1 && (got != n || memcmp(rx_ref, rx_board, n) != 0),
          "%zu bytes sent at once overrun the FIFO: red LED lit %llu times, %zu of %zu reply bytes came", len,
          (unsigned long long)s.red_led, got, n);
    ntpu_ref_free(ref);
    ntpu_vsim_board_free(b);
}

/* 2,000 zero bytes (the device drops them while hunting for a frame start, so
 * it sends nothing back) under each kind of noise. */
static void noise(void)
{
    static uint8_t zeros[2000], rx[16];
    ntpu_vsim_board_stats s;

    ntpu_vsim_board *b = board("board=icebreaker,drop=0.1,seed=5");
    ntpu_vsim_board_write(b, zeros, sizeof zeros);
    ntpu_vsim_board_read(b, rx, sizeof rx, IDLE);
    ntpu_vsim_board_get_stats(b, &s);
    check(s.tx_bytes + s.dropped_bytes == sizeof zeros && s.dropped_bytes >= 140 && s.dropped_bytes <= 260,
          "drop=0.1: %llu of %zu bytes dropped, %llu sent", (unsigned long long)s.dropped_bytes, sizeof zeros,
          (unsigned long long)s.tx_bytes);
    ntpu_vsim_board_free(b);

    b = board("board=icebreaker,ber=0.01,seed=7");
    ntpu_vsim_board_write(b, zeros, sizeof zeros);
    ntpu_vsim_board_read(b, rx, sizeof rx, IDLE);
    ntpu_vsim_board_get_stats(b, &s);
    check(s.tx_bytes == sizeof zeros && s.flipped_bits >= 140 && s.flipped_bits <= 260 && s.dropped_bytes == 0,
          "ber=0.01: %llu of %llu bits flipped", (unsigned long long)s.flipped_bits,
          (unsigned long long)(10 * s.tx_bytes));
    ntpu_vsim_board_free(b);

    b = board("board=icebreaker,drop=1");
    uint8_t nop = NTPU_OP_NOP, f[16];
    size_t n = frame(f, 0, &nop, 1);
    ntpu_vsim_board_write(b, f, n);
    size_t got = ntpu_vsim_board_read(b, rx, n, IDLE);
    ntpu_vsim_board_get_stats(b, &s);
    check(got == 0 && s.tx_bytes == 0 && s.dropped_bytes == n, "drop=1: nothing goes out, nothing comes back");
    ntpu_vsim_board_free(b);
}

int main(void)
{
    line_rate();
    memory_traffic();
    overrun();
    noise();
    if (failures) {
        printf("FAIL board_wire: %d checks failed\n", failures);
        return 1;
    }
    puts("PASS board_wire");
    return 0;
}
