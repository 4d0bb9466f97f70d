/* A golden model and the Verilator RTL side by side, fed the same bytes: the
 * harness of the differential tests. Header-only: each test is one program. */
#ifndef NTPU_TESTS_PAIR_H
#define NTPU_TESTS_PAIR_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ntpu/protocol.h"
#include "ntpu_ref.h"
#include "ntpu_vsim.h"

#define PAIR_IDLE_LIMIT 200000u /* cycles without a byte moving before vsim counts as stuck */

typedef struct pair {
    ntpu_ref *ref;
    ntpu_vsim *vsim;
    uint8_t seq;
    /* the bytes sent since the last exchange, and what each side replied */
    uint8_t *tx;
    size_t tx_len, tx_cap;
    uint8_t *ref_rx, *vsim_rx;
    size_t rx_cap;
} pair;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    exit(1);
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static unsigned get16(const uint8_t *p) { return p[0] | p[1] << 8; }

static void pair_open(pair *p)
{
    char err[256] = "";
    memset(p, 0, sizeof *p);
    p->ref = ntpu_ref_new(NULL);
    /* NTPU_TEST_VSIM: vsim's options (ntpu_vsim.h), e.g. rtl for the core from rtl/ alone. */
    p->vsim = ntpu_vsim_new(getenv("NTPU_TEST_VSIM"), err, sizeof err);
    if (!p->ref || !p->vsim)
        die("cannot create the models: %s", err);
}

static void pair_close(pair *p)
{
    ntpu_ref_free(p->ref);
    ntpu_vsim_free(p->vsim);
    free(p->tx);
    free(p->ref_rx);
    free(p->vsim_rx);
}

static void pair_raw(pair *p, const uint8_t *buf, size_t n)
{
    if (p->tx_len + n > p->tx_cap) {
        p->tx_cap = (p->tx_len + n) * 2;
        p->tx = realloc(p->tx, p->tx_cap);
        if (!p->tx)
            die("out of memory");
    }
    memcpy(p->tx + p->tx_len, buf, n);
    p->tx_len += n;
}

/* Appends one frame with this SEQ. */
static void pair_frame(pair *p, uint8_t seq, const uint8_t *payload, size_t len)
{
    uint8_t hdr[4] = {NTPU_SOF_CMD, seq, (uint8_t)len, (uint8_t)(len >> 8)};
    uint32_t crc = crc32(crc32(0, hdr + 1, 3), payload, (uInt)len);
    uint8_t tail[4];
    put32(tail, crc);
    pair_raw(p, hdr, 4);
    pair_raw(p, payload, len);
    pair_raw(p, tail, 4);
}

/* Appends one command frame with the SEQ the device expects next; returns it. */
static uint8_t pair_cmd(pair *p, const uint8_t *payload, size_t len)
{
    pair_frame(p, p->seq, payload, len);
    return p->seq++;
}

/* Sends everything queued to both sides and collects both reply streams; the
 * RTL must produce exactly as many bytes as the golden model. Returns that count. */
static size_t pair_exchange(pair *p)
{
    ntpu_ref_write(p->ref, p->tx, p->tx_len);
    ntpu_vsim_write(p->vsim, p->tx, p->tx_len);
    p->tx_len = 0;
    size_t n = ntpu_ref_pending(p->ref);
    if (n + 1 > p->rx_cap) {
        p->rx_cap = (n + 1) * 2;
        p->ref_rx = realloc(p->ref_rx, p->rx_cap);
        p->vsim_rx = realloc(p->vsim_rx, p->rx_cap);
        if (!p->ref_rx || !p->vsim_rx)
            die("out of memory");
    }
    if (ntpu_ref_read(p->ref, p->ref_rx, n) != n)
        die("golden model lost reply bytes");
    size_t got = ntpu_vsim_read(p->vsim, p->vsim_rx, n, PAIR_IDLE_LIMIT);
    if (got != n)
        die("vsim sent %zu reply bytes, the golden model %zu", got, n);
    if (ntpu_vsim_read(p->vsim, p->vsim_rx + n, 1, 64) != 0)
        die("vsim sent more reply bytes than the golden model (%zu)", n);
    return n;
}

/* Walks a reply stream frame by frame; checks framing and CRC. Returns the
 * number of frames, filling (offset, length) of each payload. */
static size_t split_replies(const uint8_t *rx, size_t n, size_t *off, size_t *len, size_t max)
{
    size_t i = 0, k = 0;
    while (i < n) {
        if (k == max || n - i < NTPU_FRAME_OVERHEAD || rx[i] != NTPU_SOF_REPLY)
            die("malformed reply stream at byte %zu", i);
        size_t l = get16(rx + i + 2);
        if (n - i < NTPU_FRAME_OVERHEAD + l)
            die("truncated reply at byte %zu", i);
        if (crc32(0, rx + i + 1, (uInt)(3 + l)) != get32(rx + i + 4 + l))
            die("reply with bad CRC at byte %zu", i);
        off[k] = i + 4;
        len[k] = l;
        k++;
        i += NTPU_FRAME_OVERHEAD + l;
    }
    return k;
}

static uint64_t rng_state;
static uint64_t rnd(void) /* splitmix64: a seeded stream the test can replay */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static unsigned rnd_below(unsigned n) { return (unsigned)(rnd() % n); }

#endif
