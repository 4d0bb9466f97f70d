/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the IDX reader (host/src/io/idx.c), plain and gzip'd. The input's first byte picks gzip
 * (bit 0) and which file the rest is (bit 1: the labels, beside a valid 2-image images file; else the
 * images, beside 2 valid labels); the second byte is the limit. A dataset it accepts must be whole. */
#include <stdint.h>
#include <zlib.h>

#include "fuzz_file.h"
#include "ntpu/data.h"

static void write_gz(const char *name, const uint8_t *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    gzFile g = gzopen(path, "wb1");
    if (!g || (n && gzwrite(g, data, (unsigned)n) != (int)n) || gzclose(g) != Z_OK) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t images[16 + 2 * 4] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t labels[8 + 2] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 9};
    if (size < 2 || size > (1u << 20)) {
        return 0;
    }
    int gz = data[0] & 1, is_labels = (data[0] >> 1) & 1;
    size_t limit = data[1];
    char path[128];
    const char *dir = fuzz_dir();
    for (int k = 0; k < 4; k++) { /* a fresh directory: only this run's two files */
        static const char *const names[] = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                            "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        unlink(path);
    }
    const uint8_t *fz = data + 2;
    size_t fn = size - 2;
    const char *fuzzed = is_labels ? "t10k-labels-idx1-ubyte" : "t10k-images-idx3-ubyte";
    if (gz) {
        char name[64];
        snprintf(name, sizeof name, "%s.gz", fuzzed);
        write_gz(name, fz, fn);
    } else {
        fuzz_write(fuzzed, fz, fn, path, sizeof path);
    }
    if (is_labels) {
        fuzz_write("t10k-images-idx3-ubyte", images, sizeof images, path, sizeof path);
    } else {
        fuzz_write("t10k-labels-idx1-ubyte", labels, sizeof labels, path, sizeof path);
    }
    ntpu_dataset ds;
    if (ntpu_dataset_load(dir, "test", limit, &ds) == NTPU_OK) {
        volatile float sink = 0;
        for (size_t i = 0; i < ds.count * ds.features; i++) {
            sink += ds.images[i];
        }
        for (size_t i = 0; i < ds.count; i++) {
            sink += ds.labels[i];
        }
        (void)sink;
        ntpu_dataset_free(&ds);
    }
    return 0;
}
