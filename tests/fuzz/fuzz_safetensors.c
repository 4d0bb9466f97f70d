/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the safetensors reader (host/src/io/safetensors.c) on any file. For a file it accepts, the
 * tensors a checkpoint names and the metadata keys it reads are looked up, and every byte a found tensor
 * claims is read (ASan sees one past the file's data). */
#include <stdint.h>

#include "fuzz_file.h"
#include "ntpu/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"0.weight", "0.bias", "1.weight", "2.weight", "a", "w", ""};
    static const char *const keys[] = {"format", "sizes", "arch", "model_crc32", "step", ""};
    char path[128];
    fuzz_write("in.safetensors", data, size, path, sizeof path);
    ntpu_safetensors *st = NULL;
    if (ntpu_safetensors_read(path, &st) != NTPU_OK) {
        return 0;
    }
    volatile size_t sink = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const ntpu_st_tensor *t = ntpu_safetensors_find(st, names[i]);
        if (t) {
            const uint8_t *p = t->data;
            for (size_t k = 0; k < t->nbytes; k++) {
                sink += p[k];
            }
            sink += strlen(t->name) + strlen(t->dtype) + t->rank;
        }
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = ntpu_safetensors_meta(st, keys[i]);
        sink += v ? strlen(v) : 0;
    }
    (void)sink;
    ntpu_safetensors_free(st);
    return 0;
}
