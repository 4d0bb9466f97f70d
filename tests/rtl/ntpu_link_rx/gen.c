/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_link_rx bench (MAX_PAYLOAD = 100). Builds a host -> device byte stream of
 * good frames, frames with a corrupted payload or CRC, headers with LEN 0 or over the maximum,
 * truncated frames and random junk (which may contain SOF bytes), ending with the host's resync
 * (max_payload + 8 zeros) and good frames. A receiver model written from docs/protocol.md then
 * computes what the RTL must deliver.
 * Output in DIR: in.hex (the stream), frames.hex (per frame: status, seq, len, then the payload if
 * the status is OK), drops.hex (bytes dropped while hunting). One hex word a line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 100u
#define MAX_STREAM (1u << 20)

#define GEN_SEED 0xC0FFEEu
#include "../gen_common.h"

static uint8_t stream[MAX_STREAM];
static size_t nstream;

static void put(uint8_t b)
{
    stream[nstream++] = b;
}

/* A frame; corrupt: 0 good, 1 flip a payload bit, 2 flip a CRC bit. */
static void frame(uint8_t seq, const uint8_t *p, unsigned len, int corrupt)
{
    uint8_t f[4 + 65536 + 4];
    f[0] = 0xA5;
    f[1] = seq;
    f[2] = (uint8_t)len;
    f[3] = (uint8_t)(len >> 8);
    memcpy(f + 4, p, len);
    uint32_t c = crc32_bits(f + 1, 3 + len);
    for (int i = 0; i < 4; i++)
        f[4 + len + i] = (uint8_t)(c >> (8 * i));
    if (corrupt == 1)
        f[4 + rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
    if (corrupt == 2)
        f[4 + len + rnd() % 4] ^= (uint8_t)(1u << (rnd() % 8));
    for (unsigned i = 0; i < 8 + len; i++)
        put(f[i]);
}

/* ---------------------------------------------------------------- receiver model */
static FILE *ffr;
static unsigned nframes, drops;

static void model(void)
{
    enum { HUNT, HDR, BODY } st = HUNT;
    uint8_t f[3 + 65536 + 4];
    size_t have = 0, need = 0;
    for (size_t i = 0; i < nstream; i++) {
        uint8_t b = stream[i];
        if (st == HUNT) {
            if (b == 0xA5) {
                st = HDR;
                have = 0;
            } else {
                drops++;
            }
        } else if (st == HDR) {
            f[have++] = b;
            if (have == 3) {
                unsigned len = f[1] | f[2] << 8;
                if (len == 0 || len > MAXP) {
                    fprintf(ffr, "2\n%x\n%x\n", f[0], len);
                    nframes++;
                    st = HUNT;
                } else {
                    need = 3 + len + 4;
                    st = BODY;
                }
            }
        } else {
            f[have++] = b;
            if (have == need) {
                unsigned len = f[1] | f[2] << 8;
                uint32_t c = f[3 + len] | f[4 + len] << 8 | f[5 + len] << 16 | (uint32_t)f[6 + len] << 24;
                int ok = crc32_bits(f, 3 + len) == c;
                fprintf(ffr, "%x\n%x\n%x\n", ok ? 0 : 1, f[0], len);
                if (ok)
                    for (unsigned k = 0; k < len; k++)
                        fprintf(ffr, "%x\n", f[3 + k]);
                nframes++;
                st = HUNT;
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    uint8_t p[65536];
    uint8_t seq = 0;
    /* Plain good frames: shortest, longest, and a run of short ones (both buffers fill). */
    memset(p, 0x11, sizeof p);
    frame(seq++, p, 1, 0);
    for (unsigned i = 0; i < MAXP; i++)
        p[i] = (uint8_t)rnd();
    frame(seq++, p, MAXP, 0);
    for (int k = 0; k < 10; k++) {
        p[0] = (uint8_t)k;
        frame(seq++, p, 1 + k % 3, 0);
    }
    /* LEN just over the maximum, the largest LEN, LEN 0: each answered at once, and the
     * frame right behind is still found. */
    const unsigned bad_lens[] = {MAXP + 1, 0xFFFF, 0, MAXP + 1};
    for (int k = 0; k < 4; k++) {
        put(0xA5);
        put(seq++);
        put((uint8_t)bad_lens[k]);
        put((uint8_t)(bad_lens[k] >> 8));
        frame(seq++, p, 3, 0);
    }
    /* A frame whose payload contains SOF bytes. */
    memset(p, 0xA5, 20);
    frame(seq++, p, 20, 0);
    for (int k = 0; k < 300; k++) {
        unsigned kind = rnd() % 16;
        unsigned len = 1 + rnd() % MAXP;
        for (unsigned i = 0; i < len; i++)
            p[i] = (uint8_t)rnd();
        if (kind < 8) {
            frame(seq++, p, len, 0);
        } else if (kind == 8) {
            frame(seq++, p, len, 1);
        } else if (kind == 9) {
            frame(seq++, p, len, 2);
        } else if (kind == 10) { /* LEN 0 or too long, then whatever follows */
            unsigned bad = (rnd() % 2) ? 0 : MAXP + 1 + rnd() % (65536 - MAXP - 1);
            put(0xA5);
            put(seq++);
            put((uint8_t)bad);
            put((uint8_t)(bad >> 8));
        } else if (kind == 11) { /* junk without SOF */
            unsigned n = rnd() % 20;
            for (unsigned i = 0; i < n; i++) {
                uint8_t b = (uint8_t)rnd();
                put(b == 0xA5 ? 0 : b);
            }
        } else if (kind == 12) { /* junk of any bytes, then the host's resync */
            unsigned n = rnd() % 40;
            for (unsigned i = 0; i < n; i++)
                put((uint8_t)((rnd() % 4) ? rnd() : 0xA5));
            for (unsigned i = 0; i < MAXP + 8; i++)
                put(0);
        } else {
            frame(seq++, p, 1 + rnd() % 6, 0);
        }
    }
    /* Truncated frame, resync, good frame. */
    frame(seq, p, 50, 0);
    nstream -= 30;
    seq++;
    for (unsigned i = 0; i < MAXP + 8; i++)
        put(0);
    frame(seq++, p, 7, 0);

    char path[4096];
    snprintf(path, sizeof path, "%s/in.hex", argv[1]);
    FILE *fi = fopen(path, "w");
    snprintf(path, sizeof path, "%s/frames.hex", argv[1]);
    ffr = fopen(path, "w");
    if (!fi || !ffr) {
        perror(path);
        return 1;
    }
    for (size_t i = 0; i < nstream; i++)
        fprintf(fi, "%02x\n", stream[i]);
    fclose(fi);
    model();
    fclose(ffr);
    snprintf(path, sizeof path, "%s/drops.hex", argv[1]);
    FILE *fd = fopen(path, "w");
    if (!fd) {
        perror(path);
        return 1;
    }
    fprintf(fd, "%x\n%x\n%zx\n", drops, nframes, nstream);
    fclose(fd);
    return 0;
}
