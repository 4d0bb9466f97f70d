/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the .npy reader (host/src/io/npy.c) on any file. A tensor it accepts must hold as many
 * elements as its shape says (ASan sees a read past them). */
#include <stdint.h>

#include "fuzz_file.h"
#include "ntpu/ntpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fuzz_write("in.npy", data, size, path, sizeof path);
    ntpu_tensor t;
    if (ntpu_npy_read(path, &t) == NTPU_OK) {
        size_t n = t.shape[0] * (t.ndim == 2 ? t.shape[1] : 1), es = ntpu_elem_size(t.elem);
        volatile uint8_t sink = 0;
        const uint8_t *p = t.data;
        for (size_t i = 0; i < n * es; i++) {
            sink ^= p[i];
        }
        (void)sink;
        ntpu_tensor_free(&t);
    }
    return 0;
}
