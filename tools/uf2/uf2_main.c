/* SPDX-License-Identifier: Apache-2.0 */
/* build/tools/uf2: the firmware build's image tool.
 *   uf2 boot2 CODE.bin OUT.bin    pad boot2 to 252 bytes and append its CRC-32/MPEG-2
 *   uf2 pack IMAGE.bin OUT.uf2    UF2 blocks for the image at 0x10000000
 *   uf2 check FILE.uf2            exit 0 and one summary line when sound, else 1 and one line saying why */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uf2.h"

#define MAX_FILE (32u << 20)

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    uint8_t *buf = malloc(MAX_FILE);
    *n = buf ? fread(buf, 1, MAX_FILE, f) : 0;
    int bad = !buf || ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    int bad = fwrite(p, 1, n, f) != n;
    return fclose(f) || bad ? -1 : 0;
}

static int run(const char *cmd, const char *in, const char *out, const uint8_t *data, size_t n)
{
    char err[200];
    if (strcmp(cmd, "boot2") == 0 && out) {
        uint8_t stamped[256];
        if (uf2_boot2_stamp(data, n, stamped, err, sizeof err)) {
            fprintf(stderr, "uf2: %s: %s\n", in, err);
            return 1;
        }
        return write_file(out, stamped, sizeof stamped) ? (perror(out), 1) : 0;
    }
    if (strcmp(cmd, "pack") == 0 && out) {
        size_t len = uf2_blocks(n) * UF2_BLOCK;
        uint8_t *uf2 = malloc(len ? len : 1);
        if (!uf2) {
            return 1;
        }
        uf2_pack(data, n, RP2040_FLASH, uf2);
        int rc = write_file(out, uf2, len) ? (perror(out), 1) : 0;
        free(uf2);
        return rc;
    }
    if (strcmp(cmd, "check") == 0 && !out) {
        struct uf2_summary s;
        if (uf2_check(data, n, &s, err, sizeof err)) {
            fprintf(stderr, "uf2: %s: %s\n", in, err);
            return 1;
        }
        printf("uf2: %s: %u blocks, %u bytes at 0x%08x for the RP2040; boot2 CRC 0x%08x; SP 0x%08x, reset 0x%08x\n", in,
               s.blocks, s.bytes, RP2040_FLASH, s.boot2_crc, s.sp, s.reset);
        return 0;
    }
    fprintf(stderr, "usage: uf2 boot2 CODE.bin OUT.bin | uf2 pack IMAGE.bin OUT.uf2 | uf2 check FILE.uf2\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        return run("", "", NULL, NULL, 0);
    }
    size_t n;
    uint8_t *data = read_file(argv[2], &n);
    if (!data) {
        fprintf(stderr, "uf2: %s: cannot read it (or it is over %u MB)\n", argv[2], MAX_FILE >> 20);
        return 1;
    }
    int rc = run(argv[1], argv[2], argc == 4 ? argv[3] : NULL, data, n);
    free(data);
    return rc;
}
