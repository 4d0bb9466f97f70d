/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel training: one model's steps spread over several devices (any mix
 * of backends) and, through an exchange the caller supplies, over several
 * processes, with weights that do not depend on how many (docs/training.md,
 * Data parallel).
 *
 * A step's batch is cut into shards of `shard` samples in order (the last may be
 * shorter); shard i runs on worker i mod W of the W workers (devices), each
 * worker's shards in order, its samples' loss gradient divided by the whole
 * batch. The step's gradient is the sum of the shards' gradients in shard order,
 * G = s0, then G = G + s_i for i = 1, 2, ... (fp32, round to nearest even,
 * elementwise); the optimizer runs once on G, on the host, and every device gets
 * the new weights. So the same data, seed, batch and shard size give the same
 * bits on any W. With one device and shard >= batch a step is exactly
 * ntpu_model_train_step (which then may use the device optimizer).
 */
#ifndef NTPU_PARALLEL_H
#define NTPU_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/nn.h"
#include "ntpu/ntpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTPU_MAX_DEVICES 64 /* devices of one process */

typedef struct ntpu_parallel ntpu_parallel;

/* Trains m data-parallel over m's own device and the n_more devices in `more`
 * (each gets a copy of m's arch and weights, for batches of m's max_batch;
 * a step's shards have `shard` samples, 1 <= shard <= max_batch). m keeps the optimizer, its state and
 * step: save, evaluate and read it as ever; it must outlive *out, and the
 * devices too. Errors: NTPU_ERR_INVALID_ARG; NTPU_ERR_UNSUPPORTED when m has
 * the device optimizer and there is more than one device or a shard smaller
 * than max_batch, or when a device cannot hold the model (the reason, naming
 * the device, in ntpu_last_error of m's device); as ntpu_model_create_arch.
 * Release *out with ntpu_parallel_free. */
NTPU_API ntpu_status ntpu_parallel_create(ntpu_model *m, ntpu_device *const *more, size_t n_more, size_t shard,
                                          ntpu_parallel **out);

/* One training step of batch samples (1 <= batch <= m's max_batch), as
 * ntpu_model_train_step: every device works on its shards at once (a thread
 * each). On an error (the first shard's to fail, naming its device) no weight
 * has changed. */
NTPU_API ntpu_status ntpu_parallel_train_step(ntpu_parallel *p, const float *x, const uint8_t *labels, size_t batch,
                                              ntpu_step_result *res);

/* As ntpu_model_evaluate of m, with the same results, its batches (m's max_batch samples) spread over this
 * process's devices. */
NTPU_API ntpu_status ntpu_parallel_evaluate(ntpu_parallel *p, const float *x, const uint8_t *labels, size_t count,
                                            double *accuracy, double *loss);

/* Across processes: each shard's record is its gradient (every trainable tensor
 * in order) followed by two floats, its samples' summed loss and their hit count.
 * A step calls exchange(ctx, records, stride, n_shards, why, why_len) after this
 * process's shards, with shard i's record at records + i * stride (floats)
 * filled for the shards of this process's workers; it must fill in the others
 * (the same bytes the processes that ran them hold) and return 0, or return
 * non-zero with a one-line reason in why. */
typedef int (*ntpu_shard_exchange)(void *ctx, float *records, size_t stride, size_t n_shards, char *why,
                                   size_t why_len);

/* Makes this process's devices workers first .. first + D - 1 of `workers` in
 * all (D: its own devices); exchange brings in the other processes' shards. Every
 * process must start from the same weights and optimizer state (each then runs
 * the same optimizer on the same G). Errors: NTPU_ERR_INVALID_ARG. */
NTPU_API ntpu_status ntpu_parallel_set_peers(ntpu_parallel *p, size_t first, size_t workers,
                                             ntpu_shard_exchange exchange, void *ctx);

/* The floats of one shard's record (gradients and the two sums). */
NTPU_API size_t ntpu_parallel_record_floats(const ntpu_parallel *p);

/* NULL is a no-op. Frees the copies, not m nor the devices. */
NTPU_API void ntpu_parallel_free(ntpu_parallel *p);

#ifdef __cplusplus
}
#endif

#endif
