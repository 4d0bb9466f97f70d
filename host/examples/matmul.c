/* SPDX-License-Identifier: Apache-2.0 */
/* The smallest useful libntpu program: a bf16 matmul on a device, checked
 * against the host's own loop.
 *
 *   make && cc -Ihost/include host/examples/matmul.c build/libntpu.a -lstdc++ -lusb-1.0 -lunicorn -lcjson -lz -lm -lpthread -o matmul
 *   ./matmul ref        # or vsim (the default), or any device string
 */
#include <stdio.h>
#include <string.h>

#include "ntpu/ntpu.h"

#define M 5
#define K 20
#define N 3

int main(int argc, char **argv)
{
    ntpu_device *dev;
    ntpu_status st = ntpu_open(argc > 1 ? argv[1] : NULL, &dev);
    if (st != NTPU_OK) {
        fprintf(stderr, "open: %s\n", ntpu_last_error(dev)); /* dev may be NULL: then the thread's text */
        ntpu_close(dev);
        return 1;
    }
    ntpu_info info;
    ntpu_get_info(dev, &info);
    printf("%s: %ux%u array, %s\n", info.device, info.rows, info.cols, info.platform_name);

    float a[M][K], b[K][N], c[M][N];
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            a[i][k] = (float)(i + 1) / (float)(k + 1);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            b[k][j] = (float)(k - j) * 0.25f;

    st = ntpu_matmul(dev, NTPU_DTYPE_BF16, a, b, c, M, K, N);
    if (st != NTPU_OK) {
        fprintf(stderr, "matmul: %s\n", ntpu_last_error(dev));
        ntpu_close(dev);
        return 1;
    }

    /* The device's answer is, bit for bit, this sequential chain over the
     * bf16-rounded inputs (docs/numerics.md). */
    int same = 1;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            uint32_t acc = 0, got;
            for (int k = 0; k < K; k++)
                acc = ntpu_mac_bf16(acc, ntpu_bf16_from_f32(a[i][k]), ntpu_bf16_from_f32(b[k][j]));
            memcpy(&got, &c[i][j], sizeof got);
            same &= got == acc;
            printf("%10.4f%s", c[i][j], j + 1 < N ? " " : "\n");
        }
    }
    printf("%s\n", same ? "matches the host's reference bit for bit" : "MISMATCH");
    ntpu_close(dev);
    return same ? 0 : 1;
}
