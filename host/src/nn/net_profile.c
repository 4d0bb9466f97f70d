/* SPDX-License-Identifier: Apache-2.0 */
/* The counters between a resident net's items, for ntpu bench (net_profile.h). */
#include "net_profile.h"
#include "net_resident.h"

ntpu_status ntpu_net_set_profile(ntpu_model *m, ntpu_net_profile *p)
{
    if (!m || !m->net || !m->net->res)
        return m ? ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED, "profile: the model is not a net resident on its device")
                 : NTPU_ERR_INVALID_ARG;
    m->net->profile = p;
    return NTPU_OK;
}

int ntpu_net_item_params(const ntpu_model *m, size_t i, const float **w, size_t *nw, const float **b, size_t *nb)
{
    if (!m || !m->net || i >= m->arch.n || !m->param[i].w)
        return -1;
    *w = m->param[i].w, *nw = m->param[i].nw, *b = m->param[i].b, *nb = m->param[i].nb;
    return 0;
}

static void add(ntpu_counters *to, const ntpu_counters *c)
{
    to->cycles += c->cycles, to->array_busy += c->array_busy, to->macs += c->macs;
    to->stall_link += c->stall_link, to->stall_weight += c->stall_weight, to->stall_hazard += c->stall_hazard;
    to->stall_tx += c->stall_tx, to->rx_bytes += c->rx_bytes, to->tx_bytes += c->tx_bytes;
}

ntpu_status ntpu_net_profile_mark(ntpu_model *m, ntpu_counters *bucket)
{
    if (!m->net->profile)
        return NTPU_OK;
    ntpu_counters c;
    ntpu_status st = ntpu_read_counters(m->dev, &c, 1);
    if (st == NTPU_OK)
        add(bucket, &c);
    return st;
}
