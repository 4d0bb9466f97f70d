/* SPDX-License-Identifier: Apache-2.0 */
/* Model descriptions: the layers of a network as `ntpu train --arch SPEC` writes
 * them (docs/training.md), a comma-separated list of
 *   conv<C>k<K>[s<S>][p<P>]  2-D convolution, C output channels, K x K kernel,
 *                            stride S (1), zero padding P (0), with bias
 *   relu                     max(x, 0)
 *   maxpool<K>, avgpool<K>   K x K window, stride K (PyTorch's floor mode)
 *   flatten                  C x H x W -> C*H*W features, in PyTorch's C-H-W order
 *   fc<N>                    dense layer, N outputs, with bias
 * A flatten is implied before the first fc when no flatten or fc came before
 * it and its input has H x W > 1 x 1 or comes from a conv or pool (it is then
 * not a module: it has the fc's index and implied = 1). Ranges: C and N
 * 1..65536, K and S 1..15, P 0..K-1; the input and every item's output at
 * most 2^24 values a sample.
 * Each written item is one module of the equivalent torch.nn.Sequential, in
 * order: its index there is the item's position in the SPEC, and its tensors
 * are "<index>.weight" and "<index>.bias" (docs/training.md, Checkpoints).
 */
#ifndef NTPU_ARCH_H
#define NTPU_ARCH_H

#include <stddef.h>

#include "ntpu/ntpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTPU_MAX_ITEMS 32 /* layers in one SPEC, an implied flatten included */

typedef enum ntpu_layer_kind {
    NTPU_LAYER_CONV = 0,
    NTPU_LAYER_RELU = 1,
    NTPU_LAYER_MAXPOOL = 2,
    NTPU_LAYER_AVGPOOL = 3,
    NTPU_LAYER_FLATTEN = 4,
    NTPU_LAYER_FC = 5,
} ntpu_layer_kind;

/* One layer. The shapes are filled in by ntpu_arch_parse: C x H x W of its input
 * and output (after a flatten or an fc: C features, H = W = 1). */
typedef struct ntpu_layer {
    ntpu_layer_kind kind;
    unsigned out;    /* conv: output channels; fc: outputs; otherwise 0 */
    unsigned k;      /* conv: kernel size; pools: window (and stride); otherwise 0 */
    unsigned stride; /* conv: stride (1 unless written); otherwise 0 */
    unsigned pad;    /* conv: zero padding (0 unless written); otherwise 0 */
    int implied;     /* flatten: 1 when the SPEC did not write it */
    unsigned index;  /* position among the written items: the torch.nn.Sequential index */
    unsigned in_c, in_h, in_w, out_c, out_h, out_w;
} ntpu_layer;

typedef struct ntpu_arch {
    size_t n; /* items, an implied flatten included */
    ntpu_layer item[NTPU_MAX_ITEMS];
    unsigned in_c, in_h, in_w; /* the input's shape: a 28 x 28 IDX image is 1 x 28 x 28 */
} ntpu_arch;

/* Parses spec for inputs of in_c x in_h x in_w, inserts the implied flatten and
 * fills every item's shapes. NTPU_OK, or NTPU_ERR_INVALID_ARG with a one-line
 * reason in why (may be NULL): a malformed item ("item 2 'conv16k': no kernel
 * size after 'k'"), a value out of range, a layer that does not fit its input
 * ("item 5 'maxpool2': its input is 1x1"), no fc as the last item. */
NTPU_API ntpu_status ntpu_arch_parse(const char *spec, unsigned in_c, unsigned in_h, unsigned in_w, ntpu_arch *out,
                                     char *why, size_t why_len);

/* The SPEC of a: its written items, defaults left out ("conv16k3p1,relu,maxpool2,fc10"),
 * as parsing it gives a again. NTPU_ERR_INVALID_ARG when it does not fit len. */
NTPU_API ntpu_status ntpu_arch_format(const ntpu_arch *a, char *buf, size_t len);

/* The arch of an MLP of layer sizes sizes[0..n_sizes-1] (2..NTPU_MAX_LAYERS + 1
 * sizes, each 1..65536): input a vector of sizes[0] features (sizes[0] x 1 x 1,
 * so no flatten is implied), items fc<sizes[1]>,relu,...,fc<sizes[n-1]> (what
 * --layers means). NTPU_ERR_INVALID_ARG for sizes out of range. */
NTPU_API ntpu_status ntpu_arch_from_sizes(const unsigned *sizes, size_t n_sizes, ntpu_arch *out);

/* 1 when a is an MLP of the dense path: fc items with a relu between every two
 * and none after the last, at most a flatten first, at most NTPU_MAX_LAYERS fc
 * items and at most 65536 features anywhere; then its layer sizes (the
 * flattened input first) go to sizes (NTPU_MAX_LAYERS + 1 values) and their
 * count to *n_sizes (either may be NULL). 0 otherwise. */
NTPU_API int ntpu_arch_is_mlp(const ntpu_arch *a, unsigned *sizes, size_t *n_sizes);

#ifdef __cplusplus
}
#endif

#endif
