/* SPDX-License-Identifier: Apache-2.0 */
/* safetensors files: an 8-byte little-endian header length, a JSON header naming
 * each tensor's dtype, shape and byte range, then the raw little-endian data.
 * PyTorch and NumPy tools load them; the library writes checkpoints with them. */
#ifndef NTPU_SAFETENSORS_H
#define NTPU_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/ntpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTPU_ST_MAX_RANK 4

/* One tensor: a view, never owning its data. dtype is a safetensors name:
 * "F32", "BF16", "I8", "I32", "U8", "U16", "U32", "U64", "I64", "F64". */
typedef struct ntpu_st_tensor {
    const char *name;
    const char *dtype;
    unsigned rank;
    size_t shape[NTPU_ST_MAX_RANK];
    const void *data;
    size_t nbytes; /* must equal the product of shape times the dtype's size */
} ntpu_st_tensor;

/* Writes n tensors and optional string metadata (meta: key, value, key, value,
 * ..., NULL; or NULL) to path atomically: the data goes to a temporary file
 * beside the file path leads to (links followed), is flushed to disk, then
 * renamed over it, so it holds either its old contents or the whole new file,
 * never a part.
 * Errors (detail in ntpu_last_error(NULL)): NTPU_ERR_INVALID_ARG (bad dtype,
 * nbytes not matching the shape, a duplicate or empty name), NTPU_ERR_FILE
 * (with the OS's reason), NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_safetensors_write(const char *path, const ntpu_st_tensor *tensors, size_t n,
                                            const char *const *meta);

typedef struct ntpu_safetensors ntpu_safetensors; /* a file read into memory */

/* Reads and validates a whole file: header length within the file, JSON header
 * well formed, every tensor's dtype known, offsets in order, inside the data and
 * matching its shape. Release *out with ntpu_safetensors_free. Errors (detail in
 * ntpu_last_error(NULL)): NTPU_ERR_FILE, NTPU_ERR_FORMAT (truncated or
 * malformed), NTPU_ERR_NO_MEMORY. *out is NULL on failure. */
NTPU_API ntpu_status ntpu_safetensors_read(const char *path, ntpu_safetensors **out);

/* The tensor called name, or NULL. Valid until ntpu_safetensors_free. */
NTPU_API const ntpu_st_tensor *ntpu_safetensors_find(const ntpu_safetensors *st, const char *name);

/* The metadata value for key, or NULL. Valid until ntpu_safetensors_free. */
NTPU_API const char *ntpu_safetensors_meta(const ntpu_safetensors *st, const char *key);

/* NULL is a no-op. */
NTPU_API void ntpu_safetensors_free(ntpu_safetensors *st);

#ifdef __cplusplus
}
#endif

#endif
