/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the model SPEC parser (host/src/nn/arch.c). The first 3 bytes give the input's channels
 * and size, the rest is the SPEC. A SPEC it accepts must format back to a SPEC that parses to the same
 * model (ntpu_arch_format's contract), and its error messages must be one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ntpu/arch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size > 4096) {
        return 0;
    }
    unsigned c = data[0] % 8 + 1, h = data[1] % 64 + 1, w = data[2] % 64 + 1;
    char *spec = malloc(size - 2);
    memcpy(spec, data + 3, size - 3);
    spec[size - 3] = 0;
    ntpu_arch a, b;
    char why[256], text[1024];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (ntpu_arch_parse(spec, c, h, w, &a, why, sizeof why) == NTPU_OK) {
        if (ntpu_arch_format(&a, text, sizeof text) == NTPU_OK) {
            if (ntpu_arch_parse(text, c, h, w, &b, why, sizeof why) != NTPU_OK || memcmp(&a, &b, sizeof a) != 0) {
                abort(); /* format did not give back the same model */
            }
        }
    } else if (strchr(why, '\n')) {
        abort(); /* an error message of more than one line */
    }
    free(spec);
    return 0;
}
