/* The model's insides, shared by training (nn.c) and quantization (quant.c). */
#ifndef NTPU_NN_INTERNAL_H
#define NTPU_NN_INTERNAL_H

#include "internal.h"
#include "ntpu/nn.h"

struct ntpu_model {
    ntpu_device *dev;
    unsigned n;
    size_t layers;
    unsigned sizes[NTPU_MAX_LAYERS + 1];
    unsigned tiles[NTPU_MAX_LAYERS + 1];
    size_t max_batch, max_bp;
    ntpu_optim_config opt;
    uint64_t step;
    /* fp32 master weights (in x out) and biases, and the optimizer's slots */
    float *w[NTPU_MAX_LAYERS], *b[NTPU_MAX_LAYERS];
    float *ws1[NTPU_MAX_LAYERS], *ws2[NTPU_MAX_LAYERS], *bs1[NTPU_MAX_LAYERS], *bs2[NTPU_MAX_LAYERS];
    float *gw[NTPU_MAX_LAYERS], *gb[NTPU_MAX_LAYERS]; /* gradients of the last step */
    /* device addresses (rows) */
    uint32_t ub_x[NTPU_MAX_LAYERS], ub_g[NTPU_MAX_LAYERS];
    uint32_t wb_w[NTPU_MAX_LAYERS], wb_g[NTPU_MAX_LAYERS];
    uint32_t acc_z[NTPU_MAX_LAYERS], acc_b[NTPU_MAX_LAYERS], acc_db[NTPU_MAX_LAYERS], acc_dw[NTPU_MAX_LAYERS];
    /* host staging for rows going to or coming from the device */
    void *scratch;
    size_t scratch_bytes;
};

static inline size_t ntpu_round_up(size_t x, size_t n) { return (x + n - 1) / n * n; }

#endif
