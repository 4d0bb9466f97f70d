/* SPDX-License-Identifier: Apache-2.0 */
/* Models of any arch that is not an MLP (conv, pools, ...). A placeholder so the
 * library links: helper "net" of issue 23 replaces this file with the real one. */
#include "nn_internal.h"

ntpu_status ntpu_net_create(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, uint64_t seed,
                            const ntpu_optim_config *opt, ntpu_model **out)
{
    (void)max_batch;
    (void)seed;
    (void)opt;
    (void)out;
    char spec[NTPU_MAX_ITEMS * 24];
    if (ntpu_arch_format(arch, spec, sizeof spec) != NTPU_OK)
        spec[0] = 0;
    return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "model: %s: conv and pool layers are not built yet", spec);
}
