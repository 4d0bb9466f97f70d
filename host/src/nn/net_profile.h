/* SPDX-License-Identifier: Apache-2.0 */
/* What ntpu bench measures inside a resident net's step (net_resident.h): the device's counters read
 * between the items' commands, and the parameters for a digest. For the tools, not the public API. */
#ifndef NTPU_NET_PROFILE_H
#define NTPU_NET_PROFILE_H

#include "ntpu/nn.h"

/* Counter deltas summed over a step's micro-batches: fwd[i] and bwd[i] cover item i's commands (a pool
 * that a conv runs band by band, a relu fused into its conv or fc, and the spread of a dense input count
 * with that conv or fc); opt the device optimizer's (its update ends by zeroing dW and db); host the rest
 * (the input written, the logits read and their gradient written, dW and db zeroed at a step's start). */
typedef struct ntpu_net_profile {
    ntpu_counters fwd[NTPU_MAX_ITEMS], bwd[NTPU_MAX_ITEMS], opt, host;
} ntpu_net_profile;

/* From the next call on, m's passes read (and clear) the counters between items and add them to *p; p NULL
 * stops that. NTPU_ERR_UNSUPPORTED when m is not a net resident on its device. Each read is a COUNTERS
 * exchange on the link, which the caller's own link figures then include. */
ntpu_status ntpu_net_set_profile(ntpu_model *m, ntpu_net_profile *p);

/* Item i's fp32 weights and biases as the host holds them (after ntpu_model_fetch): 0, or -1 when item i
 * has none. */
int ntpu_net_item_params(const ntpu_model *m, size_t i, const float **w, size_t *nw, const float **b, size_t *nb);

#endif
