/* SPDX-License-Identifier: Apache-2.0 */
/* Every reader and writer refuses, in one line, a header that describes more data than the build can
 * address (host/src/io/sizes.h). tests/cli/size_limits.sh builds this twice: as the library is built
 * (size_t of 64 bits), and with NTPU_SIZE_LIMIT at 2^32 - 1, which is what a 32-bit build allows, so the
 * checks a 32-bit build depends on are tried here too. Argument: a scratch directory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "internal.h" /* ntpu_thread_error: what ntpu_last_error(NULL) returns */
#include "io/sizes.h"
#include "ntpu/data.h"
#include "ntpu/ntpu.h"
#include "ntpu/safetensors.h"

static const int small = NTPU_SIZE_LIMIT < SIZE_MAX; /* playing a 32-bit build */
static const char *dir;
static int failures;

/* The last call failed, with one line that contains want. */
static void expect(const char *what, ntpu_status st, const char *want)
{
    const char *e = ntpu_thread_error();
    if (st != NTPU_OK && !strchr(e, '\n') && strstr(e, want)) {
        printf("ok   %s: %s\n", what, e);
        return;
    }
    printf("FAIL %s: status %d, '%s' (wanted '%s')\n", what, (int)st, e, want);
    failures++;
}

static const char *at(const char *name)
{
    static char p[2][512];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void put(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        printf("FAIL cannot write %s\n", path);
        exit(1);
    }
}

/* A .npy file of the given shape text and no data. */
static ntpu_status npy(const char *shape)
{
    char h[128];
    int n = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
    unsigned char b[256] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)n, 0};
    memcpy(b + 10, h, (size_t)n);
    put(at("x.npy"), b, 10 + (size_t)n);
    ntpu_tensor t;
    return ntpu_npy_read(at("x.npy"), &t);
}

/* An IDX directory whose train images claim d0 x d1 x d2 (no pixels follow); real-looking labels. */
static ntpu_status idx(uint32_t d0, uint32_t d1, uint32_t d2)
{
    unsigned char im[16] = {0, 0, 8, 3}, lb[8] = {0, 0, 8, 1};
    uint32_t d[3] = {d0, d1, d2};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++)
            im[4 + 4 * i + k] = (unsigned char)(d[i] >> (24 - 8 * k));
    for (int k = 0; k < 4; k++)
        lb[4 + k] = im[4 + k];
    mkdir(at("idx"), 0700);
    put(at("idx/train-images-idx3-ubyte"), im, sizeof im);
    put(at("idx/train-labels-idx1-ubyte"), lb, sizeof lb);
    ntpu_dataset ds;
    return ntpu_dataset_load(at("idx"), "train", 0, &ds);
}

/* A safetensors file of one F32 tensor with this shape and end offset, and 8 data bytes. */
static ntpu_status st_read(const char *shape, const char *end)
{
    char h[256];
    int n = snprintf(h, sizeof h, "{\"w\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[0,%s]}}", shape, end);
    unsigned char b[512] = {(unsigned char)n};
    memcpy(b + 8, h, (size_t)n);
    put(at("x.st"), b, 8 + (size_t)n + 8);
    ntpu_safetensors *f;
    return ntpu_safetensors_read(at("x.st"), &f);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    dir = argv[1];
    printf("size_t limit %llu (%s)\n", (unsigned long long)NTPU_SIZE_LIMIT,
           small ? "a 32-bit build's" : "this build's");
    const char *over = "more data than this build can address";
    /* .npy: a shape whose byte count overflows 64 bits, and one of 19.6 GB */
    expect(".npy shape (2^32+1, 2^32)", npy("(4294967297, 4294967296)"), over);
    expect(".npy shape (70000, 70000)", npy("(70000, 70000)"), small ? over : "data is shorter than the shape says");
    /* IDX: 4.6 G pixels; 65536 x 65536 x 65535 */
    expect("IDX 70000 x 256 x 256", idx(70000, 256, 256), small ? over : "truncated");
    expect("IDX 2^32-1 x 65536 x 65536", idx(UINT32_MAX, 65536, 65536), small ? over : "truncated");
    /* safetensors: shapes beyond the file, and beyond 64 bits */
    expect("safetensors shape [70000, 70000]", st_read("[70000,70000]", "19600000000"), "bad shape");
    expect("safetensors shape [2^32, 2^32, 2^32]", st_read("[4294967296,4294967296,4294967296]", "8"), "bad shape");
    /* the writers: shapes whose byte count does not fit */
    ntpu_tensor t = {NTPU_ELEM_INT8, 2, {small ? (size_t)1 << 31 : (size_t)1 << 62, 8}, "x"};
    expect(".npy write of 2^31 (2^62) x 8 bytes", ntpu_npy_write(at("w.npy"), &t), "shape too large");
    ntpu_st_tensor w = {"w", "U8", 3, {65536, 65536, small ? 2 : (size_t)1 << 40}, "x", 0};
    expect("safetensors write of 2^33 (2^72) bytes", ntpu_safetensors_write(at("w.st"), &w, 1, NULL),
           "bad dtype, shape or size");
    ntpu_st_tensor two[2] = {{"a", "U8", 1, {1}, "x", 1}, {"a", "U8", 1, {1}, "y", 1}};
    expect("safetensors write of a name twice", ntpu_safetensors_write(at("w.st"), two, 2, NULL),
           "two tensors are named a");
    struct stat sb;
    if (stat(at("w.npy"), &sb) == 0 || stat(at("w.st"), &sb) == 0) {
        printf("FAIL a refused write left a file\n");
        failures++;
    }
    return failures ? 1 : 0;
}
