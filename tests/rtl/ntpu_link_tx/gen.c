/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_link_tx bench: replies (SEQ, LEN, status, body) and the exact byte stream
 * docs/protocol.md says they become: SOF 0x5A, SEQ, LEN little-endian, status, body, CRC-32 (zlib's,
 * bit-serial here) over SEQ..body, little-endian.
 * Output in DIR: replies.hex (per reply: seq, len, status, then len-1 body bytes), out.hex (the
 * stream), counts.hex (replies, stream bytes). One hex word a line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define GEN_SEED 0xBADC0DEu
#include "../gen_common.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/replies.hex", argv[1]);
    FILE *fr = fopen(path, "w");
    snprintf(path, sizeof path, "%s/out.hex", argv[1]);
    FILE *fo = fopen(path, "w");
    if (!fr || !fo) {
        perror(path);
        return 1;
    }
    static uint8_t f[4 + 70000 + 4];
    unsigned nrep = 0;
    size_t nout = 0;
    for (int r = 0; r < 400; r++) {
        unsigned len;
        if (r < 150)
            len = 1; /* status-only replies, back to back */
        else if (r == 150)
            len = 300; /* LEN with a high byte */
        else if (r == 151)
            len = 4113; /* the largest reply the default core sends */
        else
            len = (rnd() % 3) ? 1 + rnd() % 80 : 1;
        f[0] = 0x5A;
        f[1] = (uint8_t)rnd();
        f[2] = (uint8_t)len;
        f[3] = (uint8_t)(len >> 8);
        f[4] = (uint8_t)(rnd() % 7);
        for (unsigned i = 1; i < len; i++)
            f[4 + i] = (uint8_t)rnd();
        uint32_t c = crc32_bits(f + 1, 3 + len);
        for (int i = 0; i < 4; i++)
            f[4 + len + i] = (uint8_t)(c >> (8 * i));
        fprintf(fr, "%x\n%x\n%x\n", f[1], len, f[4]);
        for (unsigned i = 1; i < len; i++)
            fprintf(fr, "%x\n", f[4 + i]);
        for (unsigned i = 0; i < 8 + len; i++)
            fprintf(fo, "%02x\n", f[i]);
        nout += 8 + len;
        nrep++;
    }
    fclose(fr);
    fclose(fo);
    snprintf(path, sizeof path, "%s/counts.hex", argv[1]);
    FILE *fc = fopen(path, "w");
    if (!fc) {
        perror(path);
        return 1;
    }
    fprintf(fc, "%x\n%zx\n", nrep, nout);
    fclose(fc);
    return 0;
}
