/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_crc32 bench: messages and their zlib crc32, from a bit-serial C CRC written
 * from the definition (reflected polynomial 0xEDB88320, init and final XOR all ones). The first
 * message is the standard check string, whose CRC is the published 0xCBF43926 (checked here and in
 * the bench). Output: DIR/msgs.hex, per message: its length, its bytes, its CRC, one hex word a line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_SEED 0x1234567u
#include "../gen_common.h"

static void emit(FILE *f, const uint8_t *p, size_t n)
{
    fprintf(f, "%zx\n", n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x\n", p[i]);
    fprintf(f, "%08x\n", crc32_bits(p, n));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUTDIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/msgs.hex", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    const uint8_t check[] = "123456789";
    if (crc32_bits(check, 9) != 0xCBF43926u) {
        fprintf(stderr, "gen: C CRC is wrong\n");
        return 1;
    }
    emit(f, check, 9);
    uint8_t buf[600];
    emit(f, buf, 0); /* the empty message: 0 */
    memset(buf, 0, sizeof buf);
    emit(f, buf, 32);
    memset(buf, 0xFF, sizeof buf);
    emit(f, buf, 32);
    for (int m = 0; m < 200; m++) {
        size_t n = m < 100 ? 1 + rnd() % 8 : rnd() % 600;
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rnd();
        emit(f, buf, n);
    }
    fclose(f);
    return 0;
}
