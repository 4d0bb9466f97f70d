/* SPDX-License-Identifier: Apache-2.0 */
/* The safetensors calls with a caller's error buffer (err, errlen bytes; may be
 * NULL), for the library's own use: a checkpoint's file error is reported on the
 * model's device (ntpu_last_error(dev)), not on the thread as the public calls
 * of ntpu/safetensors.h report theirs (ntpu_last_error(NULL)). Internal: not
 * installed, not exported from libntpu.so. */
#ifndef NTPU_IO_IO_H
#define NTPU_IO_IO_H

#include <stddef.h>

#include "io/outfile.h"
#include "ntpu/safetensors.h"

/* ntpu_safetensors_write and ntpu_safetensors_read, with the one-line reason of a failure in err. */
ntpu_status ntpu_safetensors_write_err(const char *path, const ntpu_st_tensor *tensors, size_t n,
                                       const char *const *meta, char *err, size_t errlen);
ntpu_status ntpu_safetensors_read_err(const char *path, ntpu_safetensors **out, char *err, size_t errlen);

/* As ntpu_safetensors_write_err, but leaves the written file in *o uncommitted: the caller puts it in
 * place with ntpu_outfile_commit (or drops it with ntpu_outfile_abort), e.g. after writing a second file
 * that belongs with it. On error *o holds nothing to release. */
ntpu_status ntpu_safetensors_write_open(const char *path, const ntpu_st_tensor *tensors, size_t n,
                                        const char *const *meta, ntpu_outfile *o, char *err, size_t errlen);

/* The file's tensors in the order of its header: count, and the i-th (NULL past the end). */
size_t ntpu_safetensors_count(const ntpu_safetensors *st);
const ntpu_st_tensor *ntpu_safetensors_at(const ntpu_safetensors *st, size_t i);

#endif
