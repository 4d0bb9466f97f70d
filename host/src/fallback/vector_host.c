/* SPDX-License-Identifier: Apache-2.0 */
/* ACT, RELU_GRAD and COLSUM on the host, for a device built without the vector
 * unit (feature VECTOR clear, e.g. the iCEBreaker): READ_MEM the operands, compute
 * with the golden model's arithmetic (sim/ref/numerics.c), WRITE_MEM the result.
 * Bit for bit what the unit writes (docs/isa.md), also when the destination
 * overlaps a source: rows go in order and a result row is seen by the later rows
 * that read it, as on the device. Not queued: each call waits for its reads. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ntpu/numerics.h"
#include "ntpu/protocol.h"
#include "numerics_internal.h"

/* A host copy of rows base .. base+rows-1 of one memory (host-order lanes). */
typedef struct window {
    unsigned mem;
    uint32_t base, rows;
    void *data;
} window;

static size_t lane_bytes(unsigned mem)
{
    return mem == NTPU_MEM_ACC ? 4 : 2;
}

static void *alloc_rows(ntpu_device *dev, unsigned mem, uint32_t rows)
{
    void *p = malloc((size_t)rows * dev->n * lane_bytes(mem) + 1);
    if (!p)
        ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "vector operation on the host: out of memory");
    return p;
}

static ntpu_status window_read(ntpu_device *dev, window *w, unsigned mem, uint32_t base, uint32_t rows)
{
    w->mem = mem;
    w->base = base;
    w->rows = rows;
    if (!(w->data = alloc_rows(dev, mem, rows)))
        return NTPU_ERR_NO_MEMORY;
    return ntpu_read_rows(dev, (enum ntpu_mem)mem, base, rows, w->data);
}

/* A result row written to row addr of mem also lands in w, if w holds that row. */
static void window_update(const ntpu_device *dev, window *w, unsigned mem, uint32_t addr, const void *row)
{
    if (mem != w->mem || addr < w->base || addr - w->base >= w->rows)
        return;
    size_t rb = (size_t)dev->n * lane_bytes(mem);
    memcpy((uint8_t *)w->data + (size_t)(addr - w->base) * rb, row, rb);
}

static unsigned out_mem(unsigned out)
{
    return out == NTPU_OUT_WB ? NTPU_MEM_WB : out == NTPU_OUT_ACC ? NTPU_MEM_ACC : NTPU_MEM_UB;
}

/* Stores the fp32 row v as result row r: fp32 for ACC, else rounded to bf16.
 * Returns where it went, for window_update. */
static const void *put_row(void *res, unsigned mem, uint32_t r, unsigned n, const uint32_t *v)
{
    if (mem == NTPU_MEM_ACC) {
        uint32_t *d = (uint32_t *)res + (size_t)r * n;
        memcpy(d, v, n * sizeof *d);
        return d;
    }
    uint16_t *d = (uint16_t *)res + (size_t)r * n;
    for (unsigned j = 0; j < n; j++)
        d[j] = ntpu_bf16_from_f32_bits(v[j]);
    return d;
}

ntpu_status ntpu_host_act(ntpu_device *dev, unsigned flags, uint32_t src, uint32_t dst, uint32_t rows, uint32_t aux)
{
    const unsigned n = dev->n, out = flags & NTPU_OUT_MASK, mem = out_mem(out);
    const uint32_t aux_rows = out == NTPU_OUT_INT8 ? 3 : (flags & NTPU_ACT_BIAS) ? 1 : 0;
    window x = {0}, a = {0};
    uint32_t *v = NULL;
    void *res = NULL;
    ntpu_status st = window_read(dev, &x, NTPU_MEM_ACC, src, rows);
    /* The aux rows are read once, before row 0 (docs/isa.md). */
    if (st == NTPU_OK && aux_rows)
        st = window_read(dev, &a, NTPU_MEM_ACC, aux, aux_rows);
    if (st == NTPU_OK && (!(res = alloc_rows(dev, mem, rows)) || !(v = alloc_rows(dev, NTPU_MEM_ACC, 1))))
        st = NTPU_ERR_NO_MEMORY;
    if (st == NTPU_OK) {
        const uint32_t *bias = a.data, *mult = NULL, *shift = NULL;
        if (aux_rows == 3) {
            mult = bias + n;
            shift = bias + 2 * n;
        }
        for (uint32_t r = 0; r < rows; r++) {
            memcpy(v, (const uint32_t *)x.data + (size_t)r * n, n * sizeof *v);
            if (out == NTPU_OUT_INT8) {
                /* int32 mode: wrapping bias add, ReLU on the sign, requantize to UB (not ACC). */
                uint16_t *d = (uint16_t *)res + (size_t)r * n;
                for (unsigned j = 0; j < n; j++) {
                    uint32_t t = v[j] + ((flags & NTPU_ACT_BIAS) ? bias[j] : 0u);
                    if ((flags & NTPU_ACT_RELU) && (t & 0x80000000u))
                        t = 0;
                    d[j] = (uint16_t)(int16_t)ntpu_requantize((int32_t)t, (int32_t)mult[j], (int)(int32_t)shift[j], 0);
                }
                continue;
            }
            if (flags & NTPU_ACT_BIAS)
                ntpu_f32_add_row(v, bias, n);
            if (flags & NTPU_ACT_RELU)
                for (unsigned j = 0; j < n; j++)
                    v[j] = ntpu_relu_f32(v[j]);
            window_update(dev, &x, mem, dst + r, put_row(res, mem, r, n, v));
        }
        st = ntpu_write_rows(dev, (enum ntpu_mem)mem, dst, rows, res);
    }
    free(x.data);
    free(a.data);
    free(res);
    free(v);
    return st;
}

ntpu_status ntpu_host_relu_grad(ntpu_device *dev, unsigned out, uint32_t src, uint32_t dst, uint32_t rows,
                                uint32_t mask)
{
    const unsigned n = dev->n, mem = out_mem(out);
    window x = {0}, m = {0};
    uint32_t *v = NULL;
    void *res = NULL;
    ntpu_status st = window_read(dev, &x, NTPU_MEM_ACC, src, rows);
    if (st == NTPU_OK)
        st = window_read(dev, &m, NTPU_MEM_UB, mask, rows);
    if (st == NTPU_OK && (!(res = alloc_rows(dev, mem, rows)) || !(v = alloc_rows(dev, NTPU_MEM_ACC, 1))))
        st = NTPU_ERR_NO_MEMORY;
    if (st == NTPU_OK) {
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t *s = (const uint32_t *)x.data + (size_t)r * n;
            const uint16_t *k = (const uint16_t *)m.data + (size_t)r * n;
            for (unsigned j = 0; j < n; j++)
                v[j] = ntpu_bf16_positive(k[j]) ? s[j] : 0u;
            const void *row = put_row(res, mem, r, n, v);
            window_update(dev, &x, mem, dst + r, row);
            window_update(dev, &m, mem, dst + r, row);
        }
        st = ntpu_write_rows(dev, (enum ntpu_mem)mem, dst, rows, res);
    }
    free(x.data);
    free(m.data);
    free(res);
    free(v);
    return st;
}

ntpu_status ntpu_host_colsum(ntpu_device *dev, uint32_t src, uint32_t dst, uint32_t rows, int accumulate)
{
    const unsigned n = dev->n;
    window x = {0};
    uint32_t *s = alloc_rows(dev, NTPU_MEM_ACC, 1);
    if (!s)
        return NTPU_ERR_NO_MEMORY;
    memset(s, 0, n * sizeof *s);
    /* The destination is read before the sum starts, the sum is written after it ends. */
    ntpu_status st = accumulate ? ntpu_read_rows(dev, NTPU_MEM_ACC, dst, 1, s) : NTPU_OK;
    if (st == NTPU_OK)
        st = window_read(dev, &x, NTPU_MEM_ACC, src, rows);
    if (st == NTPU_OK) {
        for (uint32_t r = 0; r < rows; r++)
            ntpu_f32_add_row(s, (const uint32_t *)x.data + (size_t)r * n, n);
        st = ntpu_write_rows(dev, NTPU_MEM_ACC, dst, 1, s);
    }
    free(x.data);
    free(s);
    return st;
}
