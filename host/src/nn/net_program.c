/* SPDX-License-Identifier: Apache-2.0 */
/* Stored programs (protocol 1.4 RUN, decision 0015) of a resident net's micro-batch passes (net_resident.h):
 * every micro-batch's forward pass is the same commands, and so is the backward pass of every micro-batch
 * after a step's first (the first starts the sums of dW and db instead of adding to them), so each is
 * recorded once and run by one RUN frame. When the input map is written a second time (rewrite_input) the
 * backward pass is two programs, the host's write between them. A RUN does what its commands would have
 * done, in order: the bits do not change. */
#include "net_resident.h"
#include "ntpu/program.h"

/* Records part 0 (forward), 1 (backward of the items after first, or of all) or 2 (backward of item first),
 * the backward parts for a step's first micro-batch when first, into *out: NULL when a pass cannot be
 * recorded. */
static ntpu_status record(ntpu_model *m, int part, int first, ntpu_program **out)
{
    const ntpu_net_res *r = m->net->res;
    ntpu_net_profile *prof = m->net->profile; /* a program holds no counter reads */
    *out = NULL;
    ntpu_status st = ntpu_program_begin(m->dev);
    if (st != NTPU_OK)
        return st;
    m->net->profile = NULL;
    const size_t lo = r->rewrite_input ? r->first + 1 : r->first;
    ntpu_status pass = part == 0   ? ntpu_net_res_forward(m)
                       : part == 1 ? ntpu_net_res_backward_items(m, first, lo, m->arch.n)
                                   : ntpu_net_res_backward_items(m, first, r->first, r->first + 1);
    m->net->profile = prof;
    st = ntpu_program_end(m->dev, out);
    if (st == NTPU_OK && pass != NTPU_OK) {
        ntpu_program_free(*out);
        *out = NULL;
    }
    return st;
}

/* The first micro-batch's variants of backward parts 2 and 1, each kept when it fits the PM rows after
 * the used ones (the CNN: part 2, its first conv's dW, fits beside the others; part 1 does not). */
static ntpu_status record_first(ntpu_model *m, uint64_t used)
{
    ntpu_net_res *r = m->net->res;
    ntpu_program **slot[2] = {&r->prog_first0, &r->prog_bwd0};
    for (int k = 0; k < 2; k++) {
        if (k == 0 && !r->rewrite_input)
            continue;
        ntpu_status st = record(m, 2 - k, 1, slot[k]);
        if (st != NTPU_OK)
            return st;
        const uint64_t rows = ntpu_program_rows(*slot[k]);
        if (*slot[k] && used + rows <= m->dev->info.pm_rows && rows <= 65535)
            used += rows;
        else {
            ntpu_program_free(*slot[k]);
            *slot[k] = NULL;
        }
    }
    return NTPU_OK;
}

/* Records the programs and decides whether they fit PM (r->prog). */
static ntpu_status record_all(ntpu_model *m)
{
    ntpu_net_res *r = m->net->res;
    ntpu_status st = record(m, 0, 0, &r->prog_fwd);
    if (st == NTPU_OK)
        st = record(m, 1, 0, &r->prog_bwd);
    if (st == NTPU_OK && r->rewrite_input)
        st = record(m, 2, 0, &r->prog_first);
    if (st != NTPU_OK)
        return st;
    const uint64_t f = ntpu_program_rows(r->prog_fwd), b = ntpu_program_rows(r->prog_bwd),
                   g = ntpu_program_rows(r->prog_first);
    const int whole = r->prog_fwd && r->prog_bwd && (r->prog_first || !r->rewrite_input);
    r->prog = whole && f + b + g <= m->dev->info.pm_rows && f <= 65535 && b <= 65535 && g <= 65535 ? 1 : -1;
    r->prog_pm_writes = m->dev->pm_writes - 1; /* not uploaded yet */
    return r->prog > 0 ? record_first(m, f + b + g) : NTPU_OK;
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
        ntpu_program *const all[5] = {r->prog_fwd, r->prog_bwd, r->prog_first, r->prog_first0, r->prog_bwd0};
        uint32_t at = 0;
        for (int k = 0; k < 5; k++) {
            if (all[k] && (st = ntpu_program_upload(dev, all[k], at)) != NTPU_OK)
                return st;
            at += ntpu_program_rows(all[k]);
        }
        r->prog_pm_writes = dev->pm_writes;
    }
    *use = !m->net->profile; /* the counters between items need the commands one by one */
    return NTPU_OK;
}

ntpu_status ntpu_net_prog_forward(ntpu_model *m)
{
    return ntpu_program_run(m->dev, m->net->res->prog_fwd);
}

/* Backward part 1 or 2 of the micro-batch at b0: its program, or its commands when the first micro-batch's
 * variant did not fit PM. */
static ntpu_status run_part(ntpu_model *m, int part, size_t b0)
{
    const ntpu_net_res *r = m->net->res;
    const ntpu_program *p = part == 1 ? (b0 ? r->prog_bwd : r->prog_bwd0) : (b0 ? r->prog_first : r->prog_first0);
    if (p)
        return ntpu_program_run(m->dev, p);
    const size_t lo = r->rewrite_input ? r->first + 1 : r->first;
    return part == 1 ? ntpu_net_res_backward_items(m, b0 == 0, lo, m->arch.n)
                     : ntpu_net_res_backward_items(m, b0 == 0, r->first, r->first + 1);
}

ntpu_status ntpu_net_prog_backward(ntpu_model *m, const float *x, size_t b0, size_t count)
{
    const ntpu_net_res *r = m->net->res;
    ntpu_status st = run_part(m, 1, b0);
    if (st != NTPU_OK || !r->rewrite_input)
        return st;
    if ((st = ntpu_net_res_write_input(m, x, b0, count, r->ub_x2)) != NTPU_OK)
        return st;
    return run_part(m, 2, b0);
}
