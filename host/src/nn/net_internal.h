/* SPDX-License-Identifier: Apache-2.0 */
/* A model of any arch that is not an MLP (net.c): its state and the layers' passes
 * (net_conv.c: conv; net_layers.c: fc, relu, pools, flatten), shared by those files only.
 * Host tensors are NCHW: activations bf16 bits, gradients fp32 bits; numerics in
 * docs/numerics.md, Convolutional layers. */
#ifndef NTPU_NET_INTERNAL_H
#define NTPU_NET_INTERNAL_H

#include <string.h>

#include "nn_internal.h"

/* A buffer that grows to the largest size asked of it and is kept between steps. */
typedef struct ntpu_net_buf {
    void *p;
    size_t bytes;
} ntpu_net_buf;

struct ntpu_net {
    size_t classes, inputs; /* the last fc's outputs; in_c * in_h * in_w */
    /* act[i]: item i's input for max_batch samples (act[0]: the batch, rounded to bf16) */
    uint16_t *act[NTPU_MAX_ITEMS + 1];
    uint32_t *argmax[NTPU_MAX_ITEMS]; /* maxpool: the input index each output came from */
    /* conv: the patch matrix (rows in the order p, columns (ky, kx, ci)); fc: the input
     * with its features in (y, x, c) order; both kept from the forward pass for dW */
    ntpu_net_buf patch[NTPU_MAX_ITEMS];
    /* bf16 weights as products take them, built from param at each pass: wm the forward
     * operand (conv [(ky,kx,ci)][co], fc [(y,x,c)][o]), wt dX's (conv [(ky,kx,co)][ci], fc [o][(y,x,c)]) */
    uint16_t *wm[NTPU_MAX_ITEMS], *wt[NTPU_MAX_ITEMS];
    float *logits, *dlogits;
    uint32_t *g[2];                   /* the gradient flowing backward, and the one being made */
    ntpu_net_buf opa, opb, prod;      /* a product's bf16 operands (A, or B when it is made) and its fp32 result */
    struct ntpu_net_res *res;         /* the device-resident layout (net_resident.h), NULL on the host path */
    struct ntpu_net_profile *profile; /* ntpu bench's counters between items (net_profile.h), or NULL */
};

/* Grows b to at least bytes; NULL when out of memory. */
void *ntpu_net_need(ntpu_net_buf *b, size_t bytes);

/* C (rows x cols fp32 bits) = A (rows x k bf16) * B (k x cols bf16) on the model's device. */
ntpu_status ntpu_net_product(ntpu_model *m, const uint16_t *A, const uint16_t *B, uint32_t *C, size_t rows, size_t k,
                             size_t cols);

/* The bf16 weight operands of item i (conv or fc) from its fp32 parameters. */
void ntpu_net_weights(ntpu_model *m, size_t i);

/* Item i's forward pass over batch samples: act[i] -> act[i + 1] (the last item: logits). */
ntpu_status ntpu_net_conv_forward(ntpu_model *m, size_t i, size_t batch);
ntpu_status ntpu_net_fc_forward(ntpu_model *m, size_t i, size_t batch);
void ntpu_net_elementwise_forward(ntpu_model *m, size_t i, size_t batch);

/* Item i's backward pass: g (the gradient of its output) -> its parameters' gradients and,
 * when dx is not NULL, the gradient of its input in dx. */
ntpu_status ntpu_net_conv_backward(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx);
ntpu_status ntpu_net_fc_backward(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx);
void ntpu_net_elementwise_backward(ntpu_model *m, size_t i, size_t batch, const uint32_t *g, uint32_t *dx);

/* *sum = fadd(*sum, x) on an fp32 held as a float (a bias gradient), through its bits. */
static inline void ntpu_net_add_to(float *sum, uint32_t x)
{
    uint32_t v;
    memcpy(&v, sum, 4);
    v = ntpu_f32_add(v, x);
    memcpy(sum, &v, 4);
}

static inline size_t ntpu_layer_in_size(const ntpu_layer *l)
{
    return (size_t)l->in_c * l->in_h * l->in_w;
}

static inline size_t ntpu_layer_out_size(const ntpu_layer *l)
{
    return (size_t)l->out_c * l->out_h * l->out_w;
}

#endif
