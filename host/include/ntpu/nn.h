/* SPDX-License-Identifier: Apache-2.0 */
/* Training and inference of multilayer perceptrons on the device.
 *
 * A model is a stack of dense layers, sizes[0] -> sizes[1] -> ... -> sizes[L],
 * with ReLU between layers and softmax cross-entropy on the last. Where each
 * step runs (docs/training.md):
 *   device: every matmul (forward X·W, backward dZ·Wᵀ and Xᵀ·dZ through the
 *           transposed operand paths), bias add, ReLU, ReLU backward, bias
 *           gradients, rounding to bf16 -- bf16 operands, fp32 accumulation;
 *   host:   softmax cross-entropy in fp32, and the optimizer on fp32 master
 *           weights, whose bf16 copy is written to the device after each step.
 * A model whose tensors do not fit the device's memories together (a board's
 * small UB, WB, ACC) is streamed: it lives on the host, every product goes
 * through ntpu_matmul_bf16 and the elementwise steps run on the host with the
 * device's arithmetic. Results are bit-identical on every backend and either
 * path for the same seed and data; streaming moves more bytes over the link.
 */
#ifndef NTPU_NN_H
#define NTPU_NN_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/arch.h"
#include "ntpu/ntpu.h"
#include "ntpu/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTPU_MAX_LAYERS 8

typedef struct ntpu_model ntpu_model; /* opaque; bound to one device handle */

/* Creates a model on dev with layer sizes sizes[0..n_sizes-1] (2 <= n_sizes <=
 * NTPU_MAX_LAYERS + 1; sizes[0] inputs, sizes[n_sizes-1] classes), weights
 * initialized like PyTorch's nn.Linear (uniform in ±1/sqrt(fan_in), weights and
 * biases) from `seed`, optimizer state zero, for batches of up to max_batch
 * samples. When the model's tensors do not fit the device's memories it is
 * streamed (see above and ntpu_model_check_resident). dev stays owned by the caller
 * and must outlive the model; release *out with ntpu_model_free. Errors: NTPU_ERR_INVALID_ARG, NTPU_ERR_UNSUPPORTED
 * (no bf16 or transposed weights), NTPU_ERR_NO_MEMORY, device and link errors. */
NTPU_API ntpu_status ntpu_model_create(ntpu_device *dev, const unsigned *sizes, size_t n_sizes, size_t max_batch,
                                       uint64_t seed, const ntpu_optim_config *opt, ntpu_model **out);

/* Creates a model of any architecture (ntpu/arch.h) on dev, initialized as
 * PyTorch initializes the equivalent torch.nn.Sequential's nn.Conv2d and
 * nn.Linear (weights and biases uniform in ±1/sqrt(fan_in)) from `seed`.
 * An MLP (ntpu_arch_is_mlp) is exactly ntpu_model_create of its sizes; any other
 * arch (conv, pools, ...) trains on every device with the same numerics
 * (docs/numerics.md, Convolutional layers): resident on a protocol 1.5 device
 * with room for it (ntpu_model_check_resident), else on the host path. Every call that takes samples
 * takes them as in_c x in_h x in_w floats each, in C-H-W order. Errors: as
 * ntpu_model_create; NTPU_ERR_INVALID_ARG also for an arch that is not what
 * ntpu_arch_parse makes of its own SPEC and input shape (one filled in by hand). */
NTPU_API ntpu_status ntpu_model_create_arch(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, uint64_t seed,
                                            const ntpu_optim_config *opt, ntpu_model **out);

/* The model's architecture (an MLP's: ntpu_arch_from_sizes of its sizes). */
NTPU_API const ntpu_arch *ntpu_model_arch(const ntpu_model *m);

/* Frees the model and gives up its place in the device's memories. NULL is a
 * no-op. Before ntpu_close of its device (which must outlive it). */
NTPU_API void ntpu_model_free(ntpu_model *m);

/* NTPU_OK when the model's tensors stay in the device's memories between calls.
 * NTPU_ERR_UNSUPPORTED when they do not fit and the model is streamed (see
 * above; it trains all the same), with the reason in ntpu_last_error(dev), e.g.
 * "needs 3208 UB rows for batches of 8, the device has 1024". Sends nothing.
 * NTPU_ERR_INVALID_ARG for m NULL. */
NTPU_API ntpu_status ntpu_model_check_resident(const ntpu_model *m);

/* What a training step reports. */
typedef struct ntpu_step_result {
    float loss;     /* mean softmax cross-entropy over the batch */
    size_t correct; /* samples whose largest logit is the label */
} ntpu_step_result;

/* One training step on `batch` samples (1 <= batch <= max_batch): x is batch x
 * sizes[0] floats (row-major; rounded to bf16 on the way in), labels batch values
 * < classes. Forward, loss, backward, optimizer update. *res may be NULL.
 * Errors: NTPU_ERR_INVALID_ARG, device and link errors (the model's weights are
 * then unchanged unless the error came after the update: see ntpu_last_error). */
NTPU_API ntpu_status ntpu_model_train_step(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch,
                                           ntpu_step_result *res);

/* Forward pass only: logits (batch x classes floats) for batch <= max_batch
 * samples. Errors: as ntpu_model_train_step. */
NTPU_API ntpu_status ntpu_model_predict(ntpu_model *m, const float *x, size_t batch, float *logits);

/* Accuracy and mean loss over count samples, in batches of max_batch. */
NTPU_API ntpu_status ntpu_model_evaluate(ntpu_model *m, const float *x, const uint8_t *labels, size_t count,
                                         double *accuracy, double *loss);

/* The model's shape and state. Arrays stay owned by the model; weights[l] is
 * sizes[l] x sizes[l+1] (in x out, row-major), biases[l] sizes[l+1]; state1/2
 * the optimizer's slots (NULL when the optimizer has fewer). */
typedef struct ntpu_model_view {
    size_t n_layers;
    const unsigned *sizes; /* n_layers + 1 values */
    float *weights[NTPU_MAX_LAYERS], *biases[NTPU_MAX_LAYERS];
    float *w_state1[NTPU_MAX_LAYERS], *w_state2[NTPU_MAX_LAYERS];
    float *b_state1[NTPU_MAX_LAYERS], *b_state2[NTPU_MAX_LAYERS];
    const float *grad_w[NTPU_MAX_LAYERS], *grad_b[NTPU_MAX_LAYERS]; /* the last step's gradients
                                                                     * (not kept with the device optimizer) */
    ntpu_optim_config *opt;
    uint64_t *step; /* optimizer steps taken */
} ntpu_model_view;

/* Fills *out with pointers into the model. After changing weights or biases
 * through them, call ntpu_model_sync before the next step. With the device
 * optimizer, call ntpu_model_fetch first: the newest values are on the device.
 * A model that is not an MLP (conv, pools, ...) has no dense layers to show:
 * n_layers is 0 and only opt and step are set (checkpoints hold its tensors). */
NTPU_API void ntpu_model_get_view(ntpu_model *m, ntpu_model_view *out);

/* Writes the host's master weights to the device (bf16 copies and biases; with
 * the device optimizer also the fp32 weights and the momentum or Adam's moments). */
NTPU_API ntpu_status ntpu_model_sync(ntpu_model *m);

/* NTPU_OK when training runs the optimizer on the device (ntpu_optim_config.device
 * was set and the device, the optimizer and ACC's and OS's sizes allow it).
 * Otherwise NTPU_ERR_UNSUPPORTED, with the reason in ntpu_last_error(dev) (it
 * was not asked for; the device has no OPTIM; the model is streamed; ...): the
 * optimizer runs on the host, with the same results. Sends nothing.
 * NTPU_ERR_INVALID_ARG for m NULL. */
NTPU_API ntpu_status ntpu_model_check_device_optimizer(const ntpu_model *m);

/* Moves the optimizer to the device (on = 1) or to the host (0), as
 * ntpu_optim_config.device at creation would have placed it: for a model from
 * ntpu_model_load, whose checkpoint does not say. Fetches the weights and state
 * first and writes them to their new places; ntpu_model_check_device_optimizer
 * tells where it runs now. Errors: link errors, NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_model_set_device_optimizer(ntpu_model *m, int on);

/* With the device optimizer, reads the fp32 weights, biases and momentum (or m and v) from
 * the device into the host copies (the view); ntpu_model_save and
 * ntpu_qmodel_create do it themselves. A no-op otherwise or when nothing changed
 * since. Errors: link errors, NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_model_fetch(ntpu_model *m);

/* Checkpoints (docs/training.md, Checkpoints): path holds only the model's
 * tensors as the equivalent torch.nn.Sequential names them ("<i>.weight",
 * "<i>.bias", i the item's position in the SPEC; fp32 in PyTorch's layouts) with
 * the SPEC and input shape as metadata ("arch", "input"); the sidecar
 * path + ".state" holds the optimizer state (PyTorch's names as suffixes:
 * .exp_avg and .exp_avg_sq, or .momentum_buffer), the step, the optimizer
 * settings, the CRC-32 of path's tensor data, and the caller's own tensors and
 * metadata (extra, meta: key, value, ..., NULL). Written atomically: a kill
 * leaves the old pair or the new, never a part or a mix. A model whose weights
 * are not all finite (it diverged) is not saved: NTPU_ERR_INVALID_ARG, path and
 * its sidecar left as they were. */
struct ntpu_st_tensor;
NTPU_API ntpu_status ntpu_model_save(ntpu_model *m, const char *path, const struct ntpu_st_tensor *extra,
                                     size_t n_extra, const char *const *meta);

/* Creates a model on dev from a checkpoint written by ntpu_model_save: the arch
 * and weights from path, the optimizer, its state and the step from its sidecar
 * (or, for the earlier single-file format "ntpu-mlp-1", from path). Errors:
 * NTPU_ERR_FILE, NTPU_ERR_FORMAT (truncated, missing tensors, wrong shapes, a
 * weight that is NaN or infinite: the reason is in ntpu_last_error(dev)), and as
 * ntpu_model_create. Release *out
 * with ntpu_model_free. */
NTPU_API ntpu_status ntpu_model_load(ntpu_device *dev, const char *path, size_t max_batch, ntpu_model **out);

/* As ntpu_model_load, also for a file that does not name its architecture (one
 * PyTorch wrote: safetensors.torch.save_file(model.state_dict(), FILE)). arch,
 * when not NULL, is the model's, and must agree with the SPEC the file names,
 * if it names one; NULL takes the SPEC and input shape from the file. Without
 * the optimizer state that ntpu_model_save keeps beside the model file
 * (docs/training.md) the model starts at step 0 with zero state and default
 * optimizer settings. Errors: as ntpu_model_load; NTPU_ERR_FORMAT for tensors
 * of another architecture, naming the first that does not match. */
NTPU_API ntpu_status ntpu_model_load_arch(ntpu_device *dev, const char *path, const ntpu_arch *arch, size_t max_batch,
                                          ntpu_model **out);

/* Reads the sidecar FILE.state that ntpu_model_save keeps beside the model file `path`: its
 * optimizer state, step and the caller's metadata (ntpu_safetensors_meta), finishing first a save
 * that was stopped between putting its two files in place. *out is NULL when path has none (a
 * PyTorch state_dict; a checkpoint of format ntpu-mlp-1 keeps all of it in FILE). Release it with
 * ntpu_safetensors_free. Errors (detail in ntpu_last_error(NULL)): as ntpu_safetensors_read;
 * NTPU_ERR_FORMAT for a sidecar that was saved with other weights than path's. */
struct ntpu_safetensors;
NTPU_API ntpu_status ntpu_model_state_read(const char *path, struct ntpu_safetensors **out);

/* ------------------------------------------------------------------ int8 inference */

typedef struct ntpu_qmodel ntpu_qmodel; /* a quantized copy of a model, on the same device */

/* NTPU_OK if m's quantized copy would fit the device (int8 matmuls and, for an MLP,
 * room in its memories), else NTPU_ERR_UNSUPPORTED with the reason in
 * ntpu_last_error(dev): lets a caller find out before it spends time on anything else. */
NTPU_API ntpu_status ntpu_qmodel_check(ntpu_model *m);

/* Post-training quantization of m: weights per output channel (symmetric, scale
 * max|w| / 127), activations per layer (symmetric, scale max / 127 over a host
 * fp32 forward pass of the `count` calibration samples calib, count x sizes[0]),
 * biases to int32. On the device: int8 matmuls with int32 accumulation, and
 * bias + ReLU + requantization to int8 in the vector unit (ACT with NTPU_OUT_INT8);
 * the last layer's int32 results are scaled to logits on the host. A conv net
 * (docs/training.md, int8 inference): weights per output channel, a scale per conv
 * or fc output, calib count x (C*H*W) samples; its products through ntpu_matmul
 * (int8), bias + ReLU + requantization on the host with ACT's integer functions;
 * nothing of it stays on the device. A model, its
 * quantized copy and ntpu_matmul on one device take the device's memories in
 * turn: each call of one of them writes its own data again when another used
 * them since (the low-level calls of ntpu.h do not take part). Release *out with
 * ntpu_qmodel_free. Errors: NTPU_ERR_INVALID_ARG, NTPU_ERR_UNSUPPORTED (no int8
 * or vector unit, or too little memory), NTPU_ERR_NO_MEMORY, device and link errors. */
NTPU_API ntpu_status ntpu_qmodel_create(ntpu_model *m, const float *calib, size_t count, ntpu_qmodel **out);

/* NULL is a no-op. Works also after its model was freed (nothing else does),
 * but not after ntpu_close of the device. */
NTPU_API void ntpu_qmodel_free(ntpu_qmodel *q);

/* Logits (batch x classes floats) of batch <= the model's max_batch samples. */
NTPU_API ntpu_status ntpu_qmodel_predict(ntpu_qmodel *q, const float *x, size_t batch, float *logits);

/* Accuracy over count samples, in batches of max_batch. */
NTPU_API ntpu_status ntpu_qmodel_evaluate(ntpu_qmodel *q, const float *x, const uint8_t *labels, size_t count,
                                          double *accuracy);

#ifdef __cplusplus
}
#endif

#endif
