/* SPDX-License-Identifier: Apache-2.0 */
/* Stored command programs (protocol 1.4, feature NTPU_FEATURE_PROGRAM_BIT;
 * docs/isa.md, "Version 1.4"). A program is a sequence of commands kept in the
 * device's program memory (PM) and run by one RUN frame, so a loop that sends
 * the same commands again and again sends them once.
 *
 *     ntpu_program *p;
 *     ntpu_program_begin(dev);             // record instead of sending
 *     ntpu_load_w(dev, ...); ntpu_matmul_tile(dev, ...); ...
 *     ntpu_program_end(dev, &p);
 *     ntpu_program_upload(dev, p, 0);      // WRITE_MEM to PM rows 0 ..
 *     ntpu_program_run(dev, p);            // one RUN: the commands, in order
 *     ntpu_program_free(p);
 *
 * A RUN does exactly what sending the recorded commands would have done, in the
 * same order; only the replies of the inner commands are not sent. A model
 * trained with the device optimizer (ntpu/nn.h) keeps its own two programs in
 * PM from row 0 and uploads them again if anything else wrote PM meanwhile. */
#ifndef NTPU_PROGRAM_H
#define NTPU_PROGRAM_H

#include "ntpu/ntpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntpu_program ntpu_program; /* opaque; belongs to the device it was recorded on */

/* Starts recording on dev: until ntpu_program_end, every queued call
 * (ntpu_write_rows to UB, WB or ACC, ntpu_load_w, ntpu_matmul_tile,
 * ntpu_matmul_tile_transpose_a, ntpu_matmul_tile_conv, ntpu_vec_*) appends its
 * commands to the program and sends nothing. A call that needs data back or waits (ntpu_read_rows, ntpu_fence,
 * ntpu_read_status, ...; the vector calls on a device without the vector unit)
 * fails with NTPU_ERR_INVALID_ARG and a clear message, as does a write to PM.
 * A call that fails leaves in the program what it recorded before failing.
 * Works on any device; running needs the feature. Errors: NTPU_ERR_INVALID_ARG
 * (dev NULL, already recording), NTPU_ERR_NO_DEVICE. */
NTPU_API ntpu_status ntpu_program_begin(ntpu_device *dev);

/* Stops recording and returns what was recorded in *out (free with
 * ntpu_program_free; an empty program is allowed). Errors: NTPU_ERR_INVALID_ARG
 * (not recording, out NULL: then recording stops anyway), NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_program_end(ntpu_device *dev, ntpu_program **out);

/* PM rows the program takes (its bytes, rounded up to whole rows of 2N bytes;
 * a zero LEN ends it early when it does not fill its last row), and its number of
 * commands. 0 for NULL. */
NTPU_API uint32_t ntpu_program_rows(const ntpu_program *p);
NTPU_API size_t ntpu_program_commands(const ntpu_program *p);

/* Writes the program to PM rows pm_addr .. pm_addr + rows - 1 (queued, like
 * ntpu_write_rows) and remembers where it is. Errors: NTPU_ERR_INVALID_ARG
 * (NULL, recording), NTPU_ERR_UNSUPPORTED (no PROGRAM feature, or the rows run
 * past PM's end), link errors. */
NTPU_API ntpu_status ntpu_program_upload(ntpu_device *dev, ntpu_program *p, uint32_t pm_addr);

/* RUN: queues one frame that runs the uploaded program. Its reply is checked
 * like any queued command's: a command of the program that the device rejects
 * stops the program there and shows at the next call that waits as
 * NTPU_ERR_DEVICE, with the command's index in ntpu_last_error(). Errors:
 * NTPU_ERR_INVALID_ARG (NULL, recording, not uploaded), link errors. */
NTPU_API ntpu_status ntpu_program_run(ntpu_device *dev, const ntpu_program *p);

NTPU_API void ntpu_program_free(ntpu_program *p); /* NULL is a no-op */

#ifdef __cplusplus
}
#endif

#endif
