/* SPDX-License-Identifier: Apache-2.0 */
/* Stored programs (protocol 1.4 RUN, decision 0015) of a resident net (net_resident.h): a step starts by
 * setting dW and db to +0, every micro-batch's forward pass is the same commands and so is its backward
 * pass (it adds onto dW and db: decision 0035), and so is the device optimizer's update that ends the step
 * (its constants, written when they change, are data), so each is recorded once and run by one RUN frame. With a
 * dense input the passes spread it themselves; a micro-batch that crosses padded (net_spread.c says which)
 * runs as single commands. Without a dense input and with the input map written a second time
 * (rewrite_input) the backward pass is two programs, the host's write between them. A RUN does what its
 * commands would have done, in order: the bits do not change. */
#include "net_resident.h"
#include "ntpu/program.h"

enum part { ZERO, FORWARD, BACKWARD, FIRST_ITEM, UPDATE, PARTS };

/* Records a part into *out: NULL when it cannot be recorded. */
static ntpu_status record(ntpu_model *m, enum part part, ntpu_program **out)
{
    const ntpu_net_res *r = m->net->res;
    ntpu_net_profile *prof = m->net->profile; /* a program holds no counter reads */
    *out = NULL;
    ntpu_status st = ntpu_program_begin(m->dev);
    if (st != NTPU_OK)
        return st;
    m->net->profile = NULL;
    const size_t lo = r->rewrite_input && !r->dense ? r->first + 1 : r->first;
    ntpu_status pass = part == ZERO       ? ntpu_net_zero_grads(m)
                       : part == FORWARD  ? ntpu_net_res_forward(m, r->dense)
                       : part == BACKWARD ? ntpu_net_res_backward_items(m, r->dense, lo, m->arch.n)
                       : part == UPDATE   ? ntpu_net_devopt_update(m)
                                          : ntpu_net_res_backward_items(m, 0, r->first, r->first + 1);
    m->net->profile = prof;
    st = ntpu_program_end(m->dev, out);
    if (st == NTPU_OK && pass != NTPU_OK) {
        ntpu_program_free(*out);
        *out = NULL;
    }
    return st;
}

/* Records the programs and decides whether they fit PM (r->prog). */
static ntpu_status record_all(ntpu_model *m)
{
    ntpu_net_res *r = m->net->res;
    const int two = r->rewrite_input && !r->dense;
    ntpu_status st = record(m, ZERO, &r->prog_zero);
    if (st == NTPU_OK)
        st = record(m, FORWARD, &r->prog_fwd);
    if (st == NTPU_OK)
        st = record(m, BACKWARD, &r->prog_bwd);
    if (st == NTPU_OK && two)
        st = record(m, FIRST_ITEM, &r->prog_first);
    if (st == NTPU_OK && r->devopt)
        st = record(m, UPDATE, &r->prog_opt);
    if (st != NTPU_OK)
        return st;
    ntpu_program *const all[PARTS] = {r->prog_zero, r->prog_fwd, r->prog_bwd, r->prog_first, r->prog_opt};
    uint64_t rows = 0;
    int whole = r->prog_zero && r->prog_fwd && r->prog_bwd && (r->prog_first || !two) && (r->prog_opt || !r->devopt);
    for (int k = 0; k < PARTS; k++) {
        rows += ntpu_program_rows(all[k]);
        whole = whole && ntpu_program_rows(all[k]) <= 65535;
    }
    r->prog = whole && rows <= m->dev->info.pm_rows ? 1 : -1;
    r->prog_pm_writes = m->dev->pm_writes - 1; /* not uploaded yet */
    return NTPU_OK;
}

ntpu_status ntpu_net_prog_prepare(ntpu_model *m, int *use)
{
    ntpu_net_res *r = m->net->res;
    ntpu_device *dev = m->dev;
    *use = 0;
    if (!(dev->info.features & NTPU_FEATURE_PROGRAM_BIT) || dev->info.pm_rows == 0)
        return NTPU_OK;
    ntpu_status st = r->prog == 0 ? record_all(m) : NTPU_OK;
    if (st != NTPU_OK || r->prog < 0)
        return st;
    if (r->prog_pm_writes != dev->pm_writes) {
        ntpu_program *const all[PARTS] = {r->prog_zero, r->prog_fwd, r->prog_bwd, r->prog_first, r->prog_opt};
        uint32_t at = 0;
        for (int k = 0; k < PARTS; k++) {
            if (all[k] && (st = ntpu_program_upload(dev, all[k], at)) != NTPU_OK)
                return st;
            at += ntpu_program_rows(all[k]);
        }
        r->prog_pm_writes = dev->pm_writes;
    }
    *use = !m->net->profile; /* the counters between items need the commands one by one */
    return NTPU_OK;
}

ntpu_status ntpu_net_prog_zero(ntpu_model *m)
{
    return ntpu_program_run(m->dev, m->net->res->prog_zero);
}

ntpu_status ntpu_net_prog_update(ntpu_model *m)
{
    return ntpu_program_run(m->dev, m->net->res->prog_opt);
}

ntpu_status ntpu_net_prog_forward(ntpu_model *m)
{
    return ntpu_program_run(m->dev, m->net->res->prog_fwd);
}

ntpu_status ntpu_net_prog_backward(ntpu_model *m, const float *x, size_t b0, size_t count)
{
    const ntpu_net_res *r = m->net->res;
    ntpu_status st = ntpu_program_run(m->dev, r->prog_bwd);
    if (st != NTPU_OK || !r->rewrite_input || r->dense)
        return st;
    if ((st = ntpu_net_res_write_input(m, x, b0, count, r->ub_x2)) != NTPU_OK)
        return st;
    return ntpu_program_run(m->dev, r->prog_first);
}
