/* SPDX-License-Identifier: Apache-2.0 */
/* The sidecar FILE.state of a checkpoint (docs/training.md, Checkpoints; decision 0030): finding the
 * one that belongs to the model file FILE. A save writes it whole as FILE.state.new, then puts FILE
 * in place, then renames FILE.state.new to FILE.state; whoever reads the state first finishes a save
 * that was stopped between those two renames, so the pair on disk is always the old one or the new. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "internal.h"
#include "io/io.h"

uint32_t ckpt_file_crc(const ntpu_safetensors *f)
{
    uint32_t crc = 0;
    for (size_t i = 0; i < ntpu_safetensors_count(f); i++) {
        const ntpu_st_tensor *t = ntpu_safetensors_at(f, i);
        crc = ckpt_crc(crc, &t, 1);
    }
    return crc;
}

/* 1 when sidecar s was saved with the model whose data has CRC `crc`. */
static int belongs(const ntpu_safetensors *s, uint32_t crc)
{
    const char *c = ntpu_safetensors_meta(s, "model_crc32");
    char want[16];
    snprintf(want, sizeof want, "%08x", (unsigned)crc);
    return c && strcmp(c, want) == 0;
}

/* A FILE.state.new that belongs to FILE is the end of an interrupted save: rename it to FILE.state. */
static ntpu_status finish_save(const char *path, const char *state, uint32_t crc, char *err, size_t errlen)
{
    char *next = ckpt_path_with(path, CKPT_NEXT_SUFFIX);
    if (!next)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "load: out of memory");
    ntpu_safetensors *s = NULL;
    ntpu_status st = NTPU_OK;
    if (access(next, F_OK) == 0 && ntpu_safetensors_read_err(next, &s, NULL, 0) == NTPU_OK && belongs(s, crc) &&
        rename(next, state) != 0)
        st = ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: cannot rename it to %s: %s", next, state, strerror(errno));
    ntpu_safetensors_free(s);
    free(next);
    return st;
}

ntpu_status ckpt_state_open(const char *path, const ntpu_safetensors *model, ntpu_safetensors **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    ntpu_safetensors *own = NULL;
    ntpu_status st = model ? NTPU_OK : ntpu_safetensors_read_err(path, &own, err, errlen);
    char *state = ckpt_path_with(path, CKPT_STATE_SUFFIX);
    if (st == NTPU_OK && !state)
        st = ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "load: out of memory");
    const uint32_t crc = st == NTPU_OK ? ckpt_file_crc(model ? model : own) : 0;
    if (st == NTPU_OK)
        st = finish_save(path, state, crc, err, errlen);
    if (st == NTPU_OK && access(state, F_OK) == 0 &&
        (st = ntpu_safetensors_read_err(state, out, err, errlen)) == NTPU_OK) {
        const char *format = ntpu_safetensors_meta(*out, "format");
        if (!format || strcmp(format, CKPT_STATE_FORMAT) != 0)
            st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                            "%s: not the optimizer state of a nanoTPU checkpoint (format %s)", state,
                            format ? format : "missing");
        else if (!belongs(*out, crc))
            st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                            "%s: does not belong to %s (saved with other weights); remove it to load the weights alone",
                            state, path);
    }
    if (st != NTPU_OK) {
        ntpu_safetensors_free(*out);
        *out = NULL;
    }
    ntpu_safetensors_free(own);
    free(state);
    return st;
}

ntpu_status ntpu_model_state_read(const char *path, ntpu_safetensors **out)
{
    if (!path || !out)
        return ntpu_errst(ntpu_thread_error(), NTPU_THREAD_ERRMSG_LEN, NTPU_ERR_INVALID_ARG, "state: no path");
    return ckpt_state_open(path, NULL, out, ntpu_thread_error(), NTPU_THREAD_ERRMSG_LEN);
}
