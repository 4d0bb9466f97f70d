/* SPDX-License-Identifier: Apache-2.0 */
/* The model's insides, shared by training (nn.c, nn_stream.c), checkpoints
 * (checkpoint.c) and quantization (quant.c). */
#ifndef NTPU_NN_INTERNAL_H
#define NTPU_NN_INTERNAL_H

#include "internal.h"
#include "ntpu/nn.h"
#include "ntpu/numerics.h"

/* One conv or fc item's parameters in a model that is not an MLP (net.c), in PyTorch's layouts:
 * conv w [C_out][C_in][K][K]; fc w [out][in], in the flattened input's C-H-W order; b [out].
 * ws1, ws2, bs1, bs2: the optimizer's slots (NULL when unused); gw, gb: the last step's gradients. */
typedef struct ntpu_net_param {
    float *w, *b, *ws1, *ws2, *bs1, *bs2, *gw, *gb;
    size_t nw, nb;
} ntpu_net_param;

struct ntpu_net; /* net.c's own state */

struct ntpu_model {
    ntpu_device *dev;
    /* the architecture; for any arch that is not an MLP (ntpu_arch_is_mlp) net is not NULL,
     * param[i] holds item i's parameters, and the MLP fields below are unused */
    ntpu_arch arch;
    struct ntpu_net *net;
    ntpu_net_param param[NTPU_MAX_ITEMS];
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
    /* Device optimizer (opt.device, decision 0014): the fp32 master weights live in ACC, per
     * output tile nt at acc_mw + nt*(1+mom)*T(l)*N: T(l)*N rows, ACC[.. + k][lane] =
     * W[k][nt*N + lane], then as many momentum rows (momentum only); the bias momentum
     * follows the biases at acc_b; lr, wd, mu at acc_k (k_bits: what is there, k_rows of them, if k_valid);
     * dW of one output tile at a time at acc_dw (one region for every layer). dev_ahead: a
     * step has run since w, b, ws1, bs1 (ws2, bs2) were last fetched.
     * Adam / AdamW (decision 0016): the master weights as for SGD; the moments in OS, per
     * output tile nt at os_w + nt*2*T(l)*N: T(l)*N rows of m, then as many of v (OPTIM ADAM's
     * layout); the biases' m and v at os_b (T(l+1) rows each); the nine constants at acc_k. */
    int devopt, dev_ahead, k_valid;
    unsigned k_rows;
    char devopt_why[160];
    uint32_t acc_mw[NTPU_MAX_LAYERS], acc_k, k_bits[NTPU_ADAM_CONSTS];
    uint32_t os_w[NTPU_MAX_LAYERS], os_b[NTPU_MAX_LAYERS];
    /* Programs (protocol 1.4, decision 0015): with either optimizer, the step's device
     * work for batches padded to prog_bp rows, recorded once: prog_fwd (batch in UB ->
     * logits in ACC) at PM row 0, prog_bwd (dlogits in ACC -> dW, or updated weights) after it;
     * prog_fits 0: they do not fit PM (the step sends its commands instead). In PM while
     * dev->pm_writes is still prog_pm_writes. */
    struct ntpu_program *prog_fwd, *prog_bwd;
    size_t prog_bp;
    int prog_fits;
    uint64_t prog_pm_writes;
    /* host staging for rows going to or coming from the device */
    void *scratch;
    size_t scratch_bytes;
    /* Streamed models (nn_stream.c): the resident layout did not fit (why says
     * how), so the device holds nothing between products. Padded to whole tiles
     * and bp rows: bf16 weights in x out (sw) and out x in (swt), fp32 bias bits
     * (sb), each layer's bf16 input (sx, max_bp x in). */
    int streamed;
    char why[160];
    uint16_t *sw[NTPU_MAX_LAYERS], *swt[NTPU_MAX_LAYERS], *sx[NTPU_MAX_LAYERS];
    uint32_t *sb[NTPU_MAX_LAYERS];
};

/* nn_stream.c. alloc and free take the model's sizes; forward leaves each layer's
 * input in sx and the logits (batch x classes) in logits; backward takes the
 * gradient of the loss with respect to them and fills gw and gb. */
ntpu_status ntpu_stream_alloc(ntpu_model *m);
void ntpu_stream_free(ntpu_model *m);
ntpu_status ntpu_stream_sync(ntpu_model *m);
ntpu_status ntpu_stream_forward(ntpu_model *m, const float *x, size_t batch, size_t bp, float *logits);
ntpu_status ntpu_stream_backward(ntpu_model *m, const float *grad, size_t batch, size_t bp);

/* optim.c: one step of the optimizer with its constants computed once, applied
 * to a tensor whole or in pieces (the same bits): ntpu_optim_update is
 * ntpu_optim_step_init then ntpu_optim_step_apply. */
typedef struct ntpu_optim_step {
    const ntpu_optim_config *cfg;
    float lr;                     /* this step's, from the schedule */
    int decoupled;                /* AdamW */
    uint32_t k[NTPU_ADAM_CONSTS]; /* Adam's constants, as ntpu_adam_f32_row takes them */
} ntpu_optim_step;
void ntpu_optim_step_init(ntpu_optim_step *s, const ntpu_optim_config *cfg, uint64_t t);
void ntpu_optim_step_apply(const ntpu_optim_step *s, float *p, const float *g, float *s1, float *s2, size_t n);

/* nn.c, shared with net_devopt.c: the device optimizer's constants for this step (m->step's lr, and
 * Adam's), in every lane of the ACC rows at m->acc_k, written only when they changed (m->k_valid). */
ntpu_status ntpu_model_write_optim_consts(ntpu_model *m);

/* net.c: a model of any arch that is not an MLP (ntpu_model_create_arch checked arch: what
 * ntpu_arch_parse makes, and not ntpu_arch_is_mlp). ntpu_net_create: arguments and errors as
 * ntpu_model_create_arch; ntpu_net_alloc: the same with every parameter and slot zero (for
 * checkpoint.c). The rest take a model with m->net set; ntpu_model_free calls ntpu_net_free. */
ntpu_status ntpu_net_create(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, uint64_t seed,
                            const ntpu_optim_config *opt, ntpu_model **out);
ntpu_status ntpu_net_alloc(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, const ntpu_optim_config *opt,
                           ntpu_model **out);
void ntpu_net_free(ntpu_model *m);
ntpu_status ntpu_net_train_step(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch,
                                ntpu_step_result *res);
ntpu_status ntpu_net_grad(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch, size_t divisor,
                          float *total, size_t *correct);
ntpu_status ntpu_net_predict(ntpu_model *m, const float *x, size_t batch, float *logits);
/* The host's parameters changed (a loaded checkpoint): a resident net writes them to the device before its next
 * work (net_resident.c). */
ntpu_status ntpu_net_sync(ntpu_model *m);
/* The device optimizer asked for or not (m->opt.device changed): a resident net lays itself out again,
 * with or without the optimizer's state (net_plan.c), and writes everything anew before its next work;
 * ntpu_net_devopt_fetch: the device optimizer's weights and state into m->param (ntpu_model_fetch). */
ntpu_status ntpu_net_replan(ntpu_model *m);
ntpu_status ntpu_net_devopt_fetch(ntpu_model *m);

/* quant_net.c: int8 inference of a net (m->net set) for quant.c's ntpu_qmodel_* (docs/training.md,
 * int8 inference). ntpu_qnet_check: whether the device can; ntpu_qnet_create: calibrates on count
 * samples and quantizes m into a copy that needs m no more; ntpu_qnet_predict: batch <= m's
 * max_batch samples (checked by the caller) to logits (batch x classes). */
typedef struct ntpu_qnet ntpu_qnet;
ntpu_status ntpu_qnet_check(ntpu_model *m);
ntpu_status ntpu_qnet_create(ntpu_model *m, const float *calib, size_t count, ntpu_qnet **out);
ntpu_status ntpu_qnet_predict(ntpu_qnet *q, const float *x, size_t batch, float *logits);
void ntpu_qnet_free(ntpu_qnet *q);

/* nn.c, shared with net.c: the weights' initial values, uniform in [-1, 1) from a splitmix64
 * stream; softmax cross-entropy in fp32: mean loss, correct count, and the gradient of the mean
 * loss with respect to the logits (batch x classes); the checks of a new model's batch size,
 * optimizer settings and device (bf16 and transposed weights). */
float ntpu_uniform_pm1(uint64_t *s);
void ntpu_softmax_xent(const float *logits, const uint8_t *labels, size_t batch, size_t classes, float *grad,
                       float *loss, size_t *correct);
/* The same for count samples of a larger batch of batch (the gradient's divisor): adds each sample's loss to
 * *total and its hit to *correct in sample order, so that parts in order give ntpu_softmax_xent's bits. */
void ntpu_softmax_xent_part(const float *logits, const uint8_t *labels, size_t count, size_t batch, size_t classes,
                            float *grad, float *total, size_t *correct);
ntpu_status ntpu_model_check_setup(ntpu_device *dev, size_t max_batch, const ntpu_optim_config *opt);

/* A training step in two halves, for data-parallel training (parallel.c): ntpu_model_grad runs the forward
 * and backward passes of count samples (1..max_batch) whose loss's gradient is divided by `divisor` (the
 * samples of the whole step), adds their losses to *total and their hits to *correct in sample order, and
 * leaves the gradients in the model's gradient tensors, changing nothing else (not with the device
 * optimizer: NTPU_ERR_UNSUPPORTED); ntpu_model_apply_grad runs the optimizer once on whatever those hold,
 * counts the step and writes the new weights to the device. With divisor = count the two give
 * ntpu_model_train_step's bits. ntpu_model_params lists the trainable tensors with their gradients and
 * the optimizer's slots (out: room for 2 * NTPU_MAX_ITEMS), in one order for every model of an arch. */
typedef struct ntpu_param_ref {
    float *w, *g, *s1, *s2;
    size_t n;
} ntpu_param_ref;
ntpu_status ntpu_model_grad(ntpu_model *m, const float *x, const uint8_t *labels, size_t count, size_t divisor,
                            float *total, size_t *correct);
ntpu_status ntpu_model_apply_grad(ntpu_model *m);
/* ntpu_model_evaluate's work on one batch of b <= max_batch samples: its mean loss and hits (scratch: room
 * for 2 * b * classes floats). */
ntpu_status ntpu_model_eval_batch(ntpu_model *m, const float *x, const uint8_t *labels, size_t b, float *scratch,
                                  float *loss, size_t *correct);
size_t ntpu_model_params(ntpu_model *m, ntpu_param_ref *out);

/* A model's classes and the floats of one sample, for an MLP or a net. */
static inline size_t ntpu_model_classes(const ntpu_model *m)
{
    return m->net ? m->arch.item[m->arch.n - 1].out : m->sizes[m->layers];
}

static inline size_t ntpu_model_inputs(const ntpu_model *m)
{
    return m->net ? (size_t)m->arch.in_c * m->arch.in_h * m->arch.in_w : m->sizes[0];
}

/* nn.c, for checkpoint.c: a model with zeroed weights and state for these sizes and settings (as
 * ntpu_model_create before its initialization), its layout planned in the device's memories or streamed. */
ntpu_status ntpu_model_alloc(ntpu_device *dev, const unsigned *sizes, size_t n_sizes, size_t max_batch,
                             const ntpu_optim_config *opt, ntpu_model **out);
/* The name of the first setting of o that the optimizers cannot run with, or NULL: one rule for a new
 * model and a loaded checkpoint. */
const char *ntpu_optim_bad_setting(const ntpu_optim_config *o);

/* optim.c: ntpu_optimizer_parse and ntpu_lr_schedule_parse without their detail text (a checkpoint
 * names its bad setting on the model's device): 0, or -1 for an unknown name or NULL. */
int ntpu_optimizer_find(const char *name, ntpu_optimizer *out);
int ntpu_lr_schedule_find(const char *name, ntpu_lr_schedule *out);

static inline size_t ntpu_round_up(size_t x, size_t n)
{
    return (x + n - 1) / n * n;
}

/* NTPU_OK when every label is below the model's class count, else NTPU_ERR_INVALID_ARG naming the
 * first that is not (what: "train", "evaluate", ...): a label indexes the logits. */
ntpu_status ntpu_check_labels(const ntpu_model *m, const uint8_t *labels, size_t count, const char *what);

#endif
