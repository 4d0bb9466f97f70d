/* SPDX-License-Identifier: Apache-2.0 */
/* A net resident on the device (protocol 1.5: CONV, POOL; decision 0031): the layout net_plan.c makes
 * and net_resident.c runs. A step runs micro-batch by micro-batch (NTPU_NET_MB samples); every value of
 * the net (act[v], the input of item v) is a feature map in UB as channel tiles, pixel-major, samples
 * innermost: UB[ub[v] + t*tile(v) + (y*w[v] + x)*MB + b] holds channels t*N .. t*N+N-1 of pixel (y, x)
 * of sample b, tile(v) = h[v]*w[v]*MB rows (an fc's output is a 1 x 1 map). Its gradient has the same
 * layout in ACC at acc_g[v] (fp32), where a conv or fc also sums its pre-activation in the forward pass.
 * A relu right after a conv or fc is that item's ACT (the same UB map); a flatten is nothing (an fc reads
 * its input map's k-tiles in (y, x, t) order). Maps share UB rows where their lifetimes allow
 * (net_plan_ub.c). Weights are output-tile-major, as the MLP's:
 *   conv: WB[wb_w[i] + ((ot*K*K + ky*K + kx)*CTi + t)*N + r][n] = w[ot*N + n][t*N + r][ky][kx]
 *   fc:   WB[wb_w[i] + (ot*KT + pix*CTi + t)*N + r][n] = w[ot*N + n][(t*N + r)*HW + pix], KT = HW*CTi
 * and dW accumulates in ACC at acc_dw[i] in the same layout (fp32), db at acc_db[i] (one row an output
 * tile), across the micro-batches of a step; the fp32 biases at acc_b[i].
 * With the device optimizer (net_devopt.c) item i's fp32 master weights are in ACC at acc_mw[i] in dW's
 * layout, output tile ot's rows at acc_mw[i] + ot*(1+mom)*R (R = the tile's dW rows), then (momentum) its
 * momentum rows; the bias momentum at acc_b[i] + CTo; Adam's moments in OS at os_w[i] + ot*2*R (R rows of
 * m, then of v) and os_b[i] (CTo rows of m, then of v); the optimizer's constants at m->acc_k. */
#ifndef NTPU_NET_RESIDENT_H
#define NTPU_NET_RESIDENT_H

#include "net_internal.h"
#include "net_profile.h"

#define NTPU_NET_MB 8u /* samples of a micro-batch (decision 0031) */

typedef struct ntpu_net_res {
    /* per value v = 0 .. items: the device map's channel tiles, height and width, UB and ACC bases */
    unsigned ct[NTPU_MAX_ITEMS + 1], h[NTPU_MAX_ITEMS + 1], w[NTPU_MAX_ITEMS + 1];
    uint32_t ub[NTPU_MAX_ITEMS + 1], acc_g[NTPU_MAX_ITEMS + 1];
    /* per item: relu fused into the conv or fc before it; maxpool argmax (UB), avgpool factor row (ACC);
     * conv and fc: weights, bf16 gZ for dX (UB: the item's own output map, dead by then), biases, db, dW */
    int fused[NTPU_MAX_ITEMS];
    /* a maxpool after a fused relu: the relu's backward is RELU_GRAD of the pooled gradient against the
     * pooled map (the relu's output at the argmax), before MAX_GRAD; the same bits, and the relu's map
     * dies with the forward pass */
    int pooled_mask[NTPU_MAX_ITEMS];
    /* value v is a conv's output that only a pool of band x band windows reads (0: any other map): UB holds
     * band rows of pixels of one channel tile, the conv writing them (ACT) and pooling them band by band */
    unsigned band[NTPU_MAX_ITEMS + 1];
    uint32_t ub_arg[NTPU_MAX_ITEMS], acc_r[NTPU_MAX_ITEMS], ub_gz[NTPU_MAX_ITEMS];
    uint32_t wb_w[NTPU_MAX_ITEMS], acc_b[NTPU_MAX_ITEMS], acc_db[NTPU_MAX_ITEMS], acc_dw[NTPU_MAX_ITEMS];
    uint32_t acc_mw[NTPU_MAX_ITEMS], os_w[NTPU_MAX_ITEMS], os_b[NTPU_MAX_ITEMS];
    int devopt;     /* the optimizer runs on the device (m->devopt): the layout has its state */
    uint32_t acc_k; /* its constants (m->acc_k) */
    size_t os_rows;
    uint32_t wb_g; /* gZ of the item being differentiated, as weight tiles (WB, one item at a time) */
    /* the input map is written again (at ub_x2) for the first item's dW, its rows free in between: what
     * the layout does when UB cannot hold the input map all through a micro-batch, at the cost of a
     * second write of it */
    int rewrite_input;
    uint32_t ub_x2;
    /* the device's constants (net_spread.c): N rows of +0 in UB at ub_pad, the tile E0 in WB at wb_e0;
     * dense: the first item is a conv with one input channel, whose input the host may write densely at
     * ub_dense (H*W*MB/N rows), for the device to spread into the map (at ub[0], and at ub_x2) */
    uint32_t ub_pad, wb_e0;
    int dense;
    uint32_t ub_dense;
    int grads_zero; /* dW and db are +0 on the device: the device optimizer's update ends by zeroing them */
    size_t first;   /* the first item with parameters: no gradient before it, no dX for it */
    size_t ub_rows, wb_rows, acc_rows; /* rows the layout takes */
    int stale;                         /* the device's weights and biases are not the host's parameters */
    /* stored programs (net_program.c): dW and db to +0 (a step's start), the forward pass, the backward
     * pass of items first+1 .. (all items unless the host writes the input again) and of item first (or NULL);
     * the passes spread a dense input when r->dense; prog 0 not recorded yet, 1 in use, -1 not used */
    struct ntpu_program *prog_zero, *prog_fwd, *prog_bwd, *prog_first;
    struct ntpu_program *prog_opt; /* the device optimizer's update after a step's last micro-batch, or NULL */
    int prog;
    uint64_t prog_pm_writes; /* dev->pm_writes when they were uploaded */
    ntpu_net_buf rows, host; /* staging for rows to and from the device; logits and their gradient */
} ntpu_net_res;

/* Places the net on the device when it has CONV, POOL, VECTOR, TRANSPOSE and TRANSPOSE_A, N divides
 * NTPU_NET_MB, every item maps onto those commands and the layout fits its memories: then m->net->res
 * is set and m->streamed is 0; else m->why says why not (the host path, net.c). NTPU_OK either way
 * unless out of memory. */
ntpu_status ntpu_net_res_plan(ntpu_model *m);

/* net_plan_ub.c: UB rows for every map, argmax and gZ of the shaped layout r; sets r->ub_rows. */
void ntpu_net_res_place_ub(const ntpu_model *m, ntpu_net_res *r);

/* The layout of the net's items for the device in m (res zeroed before): NULL when it fits, else why not
 * (static text, or the buffer why of len bytes). Fills res->ub_rows, wb_rows, acc_rows even when they do not fit. */
const char *ntpu_net_res_layout(const ntpu_model *m, ntpu_net_res *res, char *why, size_t len);

/* On the resident layout (the arguments checked by net.c): a training step with the device optimizer; one
 * without it in two halves, ntpu_net_res_grad (as ntpu_net_grad) and the host's update (net.c); a prediction. */
ntpu_status ntpu_net_res_grad(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch, size_t divisor,
                              float *total, size_t *correct);
ntpu_status ntpu_net_res_train_step(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch,
                                    ntpu_step_result *res);
ntpu_status ntpu_net_res_predict(ntpu_model *m, const float *x, size_t batch, float *logits);

/* Per micro-batch device work (net_resident_pass.c): the forward pass of the map in UB at ub[0] to the
 * logits in ACC at acc_g[items] (first spreading the dense input into that map when spread); the backward
 * pass from the logits' gradient there, its dW and db summed onto what they hold (+0 at a step's start:
 * ntpu_net_zero_grads); with rewrite_input the map again at ub_x2 for the first item's dW: spread again, or
 * samples b0 .. b0+count-1 of x written padded. */
ntpu_status ntpu_net_res_forward(ntpu_model *m, int spread);
ntpu_status ntpu_net_res_backward(ntpu_model *m, int spread, const float *x, size_t b0, size_t count);
/* The backward pass of items hi-1 down to lo only (no input written): what a stored program holds. */
ntpu_status ntpu_net_res_backward_items(ntpu_model *m, int spread, size_t lo, size_t hi);

/* net_program.c: on a device with PROGRAM and room in PM, the zeroing of dW and db, and the forward and
 * backward pass of a micro-batch whose input the device spreads (of every micro-batch when the layout has
 * no dense input) as stored programs, recorded once for the layout and uploaded to PM from row 0 whenever
 * something else wrote PM. *use: whether this call's passes run them (never while a profile reads the
 * counters between items). */
ntpu_status ntpu_net_prog_prepare(ntpu_model *m, int *use);
ntpu_status ntpu_net_prog_zero(ntpu_model *m);
ntpu_status ntpu_net_prog_update(ntpu_model *m); /* the device optimizer's update (r->devopt) */
ntpu_status ntpu_net_prog_forward(ntpu_model *m);
ntpu_status ntpu_net_prog_backward(ntpu_model *m, const float *x, size_t b0, size_t count);

/* net_spread.c: the pad and E0 to the device (with the parameters); whether samples b0 .. b0+count-1 of x
 * may cross densely (r->dense, and every value spreads to the padded write's bits); their dense rows to
 * ub_dense; the commands that spread them into the map at UB row dst (through the ACC rows of the first
 * item's output), and that set every dW and db to +0. */
ntpu_status ntpu_net_spread_constants(ntpu_model *m);
int ntpu_net_spread_ok(const ntpu_model *m, const float *x, size_t b0, size_t count);
ntpu_status ntpu_net_write_dense(ntpu_model *m, const float *x, size_t b0, size_t count);
ntpu_status ntpu_net_spread(ntpu_model *m, uint32_t dst);
ntpu_status ntpu_net_zero_grads(ntpu_model *m);

/* Samples b0 .. b0+count-1 of x (C-H-W floats each) as the input map at UB row at (net_resident.c). */
ntpu_status ntpu_net_res_write_input(ntpu_model *m, const float *x, size_t b0, size_t count, uint32_t at);

void ntpu_net_res_free(ntpu_net_res *r);

/* net_devopt.c, the device optimizer of a resident net (r->devopt): its master weights and state from the
 * host's parameters to the device; the step's update of every parameter after the last micro-batch's
 * backward pass (OPTIM, then ACT the bf16 weights to WB), which counts the step; ntpu_net_devopt_fetch
 * (nn_internal.h) reads them back. */
ntpu_status ntpu_net_devopt_upload(ntpu_model *m);
/* net_profile.c: with a profile set, the counters since the last mark (read and cleared) onto *bucket. */
ntpu_status ntpu_net_profile_mark(ntpu_model *m, ntpu_counters *bucket);
/* The step's update: its constants written when they changed, then the commands (ntpu_net_devopt_update:
 * OPTIM and ACT per output tile, then every dW and db to +0 for the next step), or their stored program
 * when prog. */
ntpu_status ntpu_net_devopt_step(ntpu_model *m, int prog);
ntpu_status ntpu_net_devopt_update(ntpu_model *m);

#endif
