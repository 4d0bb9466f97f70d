/* SPDX-License-Identifier: Apache-2.0 */
/* Training a model that does not fit the device's memories (docs/training.md,
 * docs/decisions/0011-streamed-training.md): the weights, activations and
 * gradients live on the host, every product goes through the tiled
 * ntpu_matmul_bf16, and the elementwise work (bias, ReLU, rounding to bf16,
 * column sums, ReLU backward) runs on the host with the golden model's
 * arithmetic, as fallback/vector_host.c does for a device without the vector unit.
 *
 * Bit-identical to the resident path (nn.c forward() and backward()) because
 * every value is built from the same operands by the same chain:
 *   - Operands are the resident layout's, padding included: a batch of bp rows
 *     (a multiple of N, the padding rows zero on input), T(l)*N columns (zero
 *     weights and biases past the model's sizes). So the padding rows of a hidden
 *     activation are bf16(ReLU(bias)), as in UB, and contribute products X * 0
 *     to dW exactly where the resident MATMUL TRANSPOSE_A adds them.
 *   - ntpu_matmul_bf16 computes acc = +0; for k ascending acc = mac(acc, a, b),
 *     its own K padding being -0 weights (x + -0 == x for every x). The
 *     resident MATMULs over k-tiles ascending (accumulating after the first)
 *     are that chain over the same k: X·W over T(l)*N inputs, Xᵀ·dZ over the bp
 *     batch rows ascending, dZ·Wᵀ over T(l+1)*N outputs.
 *   - ACT, COLSUM and RELU_GRAD are ntpu_f32_add_row, ntpu_relu_f32,
 *     ntpu_bf16_from_f32_bits and ntpu_bf16_positive in the device's order:
 *     bias, then ReLU, then rounding; the column sum from +0 over rows
 *     ascending. tests/host/test_nn_stream.c checks it on two devices. */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "ntpu/numerics.h"
#include "numerics_internal.h"

static size_t padded(const ntpu_model *m, size_t i)
{
    return (size_t)m->tiles[i] * m->n;
}

ntpu_status ntpu_stream_alloc(ntpu_model *m)
{
    for (size_t l = 0; l < m->layers; l++) {
        size_t in = padded(m, l), out = padded(m, l + 1);
        if (!(m->sw[l] = malloc(in * out * 2)) || !(m->swt[l] = malloc(in * out * 2)) ||
            !(m->sb[l] = malloc(out * 4)) || !(m->sx[l] = malloc(m->max_bp * in * 2)))
            return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory for layer %zu", l);
    }
    return NTPU_OK;
}

void ntpu_stream_free(ntpu_model *m)
{
    for (size_t l = 0; l < NTPU_MAX_LAYERS; l++) {
        free(m->sw[l]);
        free(m->swt[l]);
        free(m->sb[l]);
        free(m->sx[l]);
    }
}

/* The bf16 weights (in x out and out x in) and fp32 biases the device would hold. */
ntpu_status ntpu_stream_sync(ntpu_model *m)
{
    for (size_t l = 0; l < m->layers; l++) {
        const size_t in = m->sizes[l], out = m->sizes[l + 1], ip = padded(m, l), op = padded(m, l + 1);
        for (size_t k = 0; k < ip; k++)
            for (size_t o = 0; o < op; o++) {
                uint16_t v = k < in && o < out ? ntpu_bf16_from_f32(m->w[l][k * out + o]) : 0;
                m->sw[l][k * op + o] = v;
                m->swt[l][o * ip + k] = v;
            }
        for (size_t o = 0; o < op; o++) {
            float v = o < out ? m->b[l][o] : 0.0f;
            memcpy(&m->sb[l][o], &v, 4);
        }
    }
    return NTPU_OK;
}

/* C (rows x cols fp32 bits) = A · B on the device. The library writes C through
 * memcpy of uint32_t values, so reading it as uint32_t is well defined. */
static ntpu_status product(ntpu_model *m, const uint16_t *A, const uint16_t *B, uint32_t *C, size_t rows, size_t k,
                           size_t cols)
{
    return ntpu_matmul_bf16(m->dev, A, B, (float *)(void *)C, rows, k, cols);
}

ntpu_status ntpu_stream_forward(ntpu_model *m, const float *x, size_t batch, size_t bp, float *logits)
{
    const size_t in = m->sizes[0], ip0 = padded(m, 0), L = m->layers, classes = m->sizes[L];
    for (size_t b = 0; b < bp; b++) {
        uint16_t *row = m->sx[0] + b * ip0;
        memset(row, 0, ip0 * 2);
        if (b < batch)
            ntpu_bf16_from_f32_row(row, &x[b * in], in);
    }
    size_t zcap = 0;
    for (size_t l = 1; l <= L; l++)
        zcap = padded(m, l) > zcap ? padded(m, l) : zcap;
    uint32_t *z = malloc(bp * zcap * 4);
    if (!z)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    ntpu_status st = NTPU_OK;
    for (size_t l = 0; l < L && st == NTPU_OK; l++) {
        const size_t ip = padded(m, l), op = padded(m, l + 1);
        if ((st = product(m, m->sx[l], m->sw[l], z, bp, ip, op)) != NTPU_OK)
            break;
        for (size_t b = 0; b < bp; b++) {
            uint32_t *row = z + b * op;
            ntpu_f32_add_row(row, m->sb[l], (unsigned)op);
            if (l + 1 == L) {
                if (b < batch)
                    memcpy(&logits[b * classes], row, classes * 4);
                continue;
            }
            for (size_t j = 0; j < op; j++)
                m->sx[l + 1][b * op + j] = ntpu_bf16_from_f32_bits(ntpu_relu_f32(row[j]));
        }
    }
    free(z);
    return st;
}

ntpu_status ntpu_stream_backward(ntpu_model *m, const float *grad, size_t batch, size_t bp)
{
    const size_t L = m->layers, classes = m->sizes[L];
    size_t cap = 0;
    for (size_t l = 0; l <= L; l++)
        cap = padded(m, l) > cap ? padded(m, l) : cap;
    /* dz: this layer's dZ (fp32 bits, bp x out); g: it in bf16; xt: Xᵀ; dw: dW, dx: dX */
    uint32_t *dz = calloc(bp * cap, 4), *dx = malloc(bp * cap * 4), *dw = malloc(cap * cap * 4);
    uint16_t *g = malloc(bp * cap * 2), *xt = malloc(cap * bp * 2);
    ntpu_status st = NTPU_OK;
    if (!dz || !dx || !dw || !g || !xt)
        st = ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    if (st == NTPU_OK)
        for (size_t b = 0; b < batch; b++)
            memcpy(&dz[b * padded(m, L)], &grad[b * classes], classes * 4);
    for (size_t l = L; l-- > 0 && st == NTPU_OK;) {
        const size_t in = m->sizes[l], out = m->sizes[l + 1], ip = padded(m, l), op = padded(m, l + 1);
        /* db = colsum(dZ) from +0 over the rows ascending, as COLSUM. */
        uint32_t *db = dw; /* dw is free until the product below */
        memset(db, 0, op * 4);
        for (size_t b = 0; b < bp; b++)
            ntpu_f32_add_row(db, dz + b * op, (unsigned)op);
        memcpy(m->gb[l], db, out * 4);
        ntpu_bf16_from_f32_row(g, dz, bp * op);
        for (size_t b = 0; b < bp; b++)
            for (size_t k = 0; k < ip; k++)
                xt[k * bp + b] = m->sx[l][b * ip + k];
        if ((st = product(m, xt, g, dw, ip, bp, op)) != NTPU_OK)
            break;
        for (size_t k = 0; k < in; k++)
            memcpy(&m->gw[l][k * out], &dw[k * op], out * 4);
        if (l == 0)
            break;
        /* dX = dZ·Wᵀ, then ReLU backward against this layer's input. */
        if ((st = product(m, g, m->swt[l], dx, bp, op, ip)) != NTPU_OK)
            break;
        for (size_t i = 0; i < bp * ip; i++)
            dz[i] = ntpu_bf16_positive(m->sx[l][i]) ? dx[i] : 0u;
    }
    free(dz);
    free(dx);
    free(dw);
    free(g);
    free(xt);
    return st;
}
