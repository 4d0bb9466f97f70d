/* SPDX-License-Identifier: Apache-2.0 */
/* What checkpoint.c (saving) and checkpoint_load.c (loading) share: the list of
 * a model's tensors as the equivalent torch.nn.Sequential names them, and the
 * check that ties the optimizer-state sidecar to its model file
 * (docs/training.md, Checkpoints; docs/decisions/0030-torch-checkpoints.md). */
#ifndef NTPU_NN_CHECKPOINT_H
#define NTPU_NN_CHECKPOINT_H

#include <stdint.h>

#include "nn_internal.h"
#include "ntpu/safetensors.h"

#define CKPT_STATE_SUFFIX ".state"       /* the sidecar: FILE.state */
#define CKPT_NEXT_SUFFIX ".state.new"    /* the sidecar of a save not finished yet */
#define CKPT_STATE_FORMAT "ntpu-state-1" /* its metadata "format" */
#define CKPT_LEGACY_FORMAT "ntpu-mlp-1"  /* one file, fc<l>. names, read only */
#define CKPT_MAX_TENSORS (2 * NTPU_MAX_ITEMS)

/* One model tensor: its name and shape in the file, and where the model keeps it. */
typedef struct ckpt_tensor {
    char name[32]; /* "3.weight", or "fc1.weight" in a legacy file */
    unsigned rank;
    size_t shape[4];
    size_t count;
    /* the value and the optimizer's two slots (NULL when unused or without a model) */
    float *val[3];
    /* an MLP's weight, kept in x out (rows x cols) and transposed to PyTorch's [out, in] in the
     * file; 0 when the model keeps the file's layout */
    size_t rows, cols;
} ckpt_tensor;

/* Item by item of a, weight then bias of each conv and fc: the tensors' names (legacy: fc<l>.
 * counting the fc items) and shapes, and with m (may be NULL) where m keeps them. Returns their
 * count. */
size_t ckpt_list(const ntpu_arch *a, ntpu_model *m, int legacy, ckpt_tensor *out);

/* PyTorch's name of an optimizer's slot: exp_avg, exp_avg_sq (Adam), momentum_buffer. */
const char *ckpt_slot_name(ntpu_optimizer kind, unsigned slot);

/* zlib's CRC-32 of the tensors' data, one after the other, continuing crc (0 to start). */
uint32_t ckpt_crc(uint32_t crc, const ntpu_st_tensor *const *t, size_t n);

/* The index of the first float of n (F32 data, possibly unaligned) that is NaN or infinite, or n when
 * all are finite: a model that diverged is neither saved nor loaded (docs/training.md). */
size_t ckpt_first_non_finite(const void *data, size_t n);

/* The CRC-32 of model file f's tensor data in the order of its header: for a file that
 * ntpu_model_save wrote, of its data section, what its sidecar records as model_crc32. */
uint32_t ckpt_file_crc(const ntpu_safetensors *f);

/* The sidecar of the model file path (model: that file, read; NULL to read it here) into *out, NULL
 * when there is none, after finishing a save that stopped between its renames (checkpoint_state.c).
 * NTPU_ERR_FORMAT when it is not a sidecar or was saved with other weights. */
ntpu_status ckpt_state_open(const char *path, const ntpu_safetensors *model, ntpu_safetensors **out, char *err,
                            size_t errlen);

/* path + suffix (CKPT_STATE_SUFFIX, CKPT_NEXT_SUFFIX) in a new string (free it), or NULL when out
 * of memory. */
char *ckpt_path_with(const char *path, const char *suffix);

/* The SPEC of a (ntpu_arch_format) and its input shape, "1x28x28". 0, or -1 if they do not fit. */
int ckpt_arch_text(const ntpu_arch *a, char *spec, size_t spec_len, char *input, size_t input_len);

#endif
