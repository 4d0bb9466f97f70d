/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the host's reply parser (link.c: frame checks, sequence numbers, retransmission and resync)
 * and what the device API makes of reply payloads (device.c's ID block, STATUS, COUNTERS, READ data). A
 * small golden model answers the host's commands through a transport that damages its replies as the input
 * says: the input is a list of 4-byte edits {reply frame number, 16-bit offset in that frame, byte to XOR};
 * offset 0xFFFF drops the frame, 0xFFFE sends it twice. The first input byte's low bit says whether each
 * edited frame gets a valid CRC again, so the fuzzer reaches the payload checks behind the CRC. The device
 * API then opens the device and runs a short session (writes, int8 and bf16 matmuls, reads, counters,
 * status). Findings: a crash, a sanitizer report, a hang, a multi-line error, or a failure with no edits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "fuzz_boards.h"
#include "ntpu/ntpu.h"
#include "ntpu_ref.h"

typedef struct script {
    ntpu_ref *ref;
    const uint8_t *edits;
    size_t n_edits;
    int fix_crc;
    unsigned frame_no; /* reply frames seen so far */
    uint8_t *q;        /* damaged reply bytes not yet received */
    size_t q_len, q_head, q_cap;
} script;

static const uint8_t *fuzz_input;
static size_t fuzz_size;

static void q_put(script *s, const uint8_t *p, size_t n)
{
    if (s->q_len + n > s->q_cap) {
        s->q_cap = (s->q_len + n) * 2;
        s->q = realloc(s->q, s->q_cap);
    }
    memcpy(s->q + s->q_len, p, n);
    s->q_len += n;
}

/* One whole reply frame of the model, damaged as the edits for its number say. */
static void damage_frame(script *s, uint8_t *f, size_t n)
{
    int copies = 1, edited = 0;
    for (size_t i = 0; i < s->n_edits; i++) {
        const uint8_t *e = s->edits + 4 * i;
        unsigned off = (unsigned)(e[1] | e[2] << 8);
        if (e[0] != s->frame_no % 256) {
            continue;
        }
        if (off == 0xFFFF) {
            copies = 0;
        } else if (off == 0xFFFE) {
            copies = copies ? 2 : 0;
        } else if (off < n) {
            f[off] ^= e[3];
            edited = 1;
        }
    }
    if (edited && s->fix_crc && n >= NTPU_FRAME_HEADER + NTPU_FRAME_TRAILER) {
        uint32_t crc = (uint32_t)crc32(0L, f + 1, (uInt)(n - 1 - NTPU_FRAME_TRAILER));
        for (int i = 0; i < 4; i++) {
            f[n - 4 + i] = (uint8_t)(crc >> (8 * i));
        }
    }
    s->frame_no++;
    while (copies-- > 0) {
        q_put(s, f, n);
    }
}

static ntpu_status script_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    script *s = ctx;
    ntpu_ref_write(s->ref, buf, n);
    /* The model's output is whole, well-formed frames: split it by their LEN fields. */
    size_t have;
    const uint8_t *out;
    while ((out = ntpu_ref_peek(s->ref, &have)) != NULL && have >= NTPU_FRAME_HEADER) {
        size_t len = NTPU_FRAME_HEADER + (size_t)(out[2] | out[3] << 8) + NTPU_FRAME_TRAILER;
        if (len > have) {
            abort(); /* the model queued part of a frame */
        }
        uint8_t *f = malloc(len);
        memcpy(f, out, len);
        ntpu_ref_consume(s->ref, len);
        damage_frame(s, f, len);
        free(f);
    }
    return NTPU_OK;
}

static ntpu_status script_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                               size_t errlen)
{
    (void)timeout_ms;
    (void)err;
    (void)errlen;
    script *s = ctx;
    size_t avail = s->q_len - s->q_head, k = avail < n ? avail : n;
    if (k) {
        memcpy(buf, s->q + s->q_head, k);
        s->q_head += k;
    }
    if (s->q_head == s->q_len) {
        s->q_head = s->q_len = 0;
    }
    *got = k;
    return k == n ? NTPU_OK : NTPU_ERR_TIMEOUT; /* in-process: what is not queued never comes */
}

static void script_close(void *ctx)
{
    script *s = ctx;
    ntpu_ref_free(s->ref);
    free(s->q);
    free(s);
}

static const ntpu_transport_ops script_ops = {
    .name = "fuzzed replies",
    .send = script_send,
    .recv = script_recv,
    .close = script_close,
    .starts_in_sync = 1,
};

/* "vsim" in this build is the golden model behind the damaging transport. */
ntpu_status ntpu_transport_vsim_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    (void)opts;
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = 4, cfg.ub_rows = 64, cfg.wb_rows = 64, cfg.acc_rows = 64, cfg.pm_rows = 16, cfg.os_rows = 16;
    cfg.max_payload = 256;
    script *s = calloc(1, sizeof *s);
    s->ref = ntpu_ref_new(&cfg);
    if (!s->ref) {
        ntpu_errf(err, errlen, "cannot make the golden model");
        free(s);
        return NTPU_ERR_NO_MEMORY;
    }
    s->fix_crc = fuzz_input[0] & 1;
    s->edits = fuzz_input + 1;
    s->n_edits = (fuzz_size - 1) / 4;
    out->ops = &script_ops;
    out->ctx = s;
    return NTPU_OK;
}

/* Runs one step of the session; with no edits every step must succeed. */
static int step(ntpu_device *dev, ntpu_status st)
{
    if (st == NTPU_OK) {
        return 1;
    }
    if (fuzz_size < 5) {
        abort(); /* undamaged replies, yet an error */
    }
    fuzz_check_one_line(ntpu_last_error(dev));
    return ntpu_reset_link(dev) == NTPU_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4 * 64 + 1) {
        return 0;
    }
    fuzz_input = data, fuzz_size = size;
    ntpu_device *dev = NULL;
    if (ntpu_open("vsim", &dev) != NTPU_OK) {
        if (size < 5) {
            abort();
        }
        fuzz_check_one_line(ntpu_last_error(dev));
        ntpu_close(dev);
        return 0;
    }
    int8_t a8[6 * 5], b8[5 * 7];
    int32_t c32[6 * 7];
    uint16_t a16[6 * 5], b16[5 * 7];
    float c16[6 * 7];
    uint8_t rows[8 * 4 * 4];
    for (int i = 0; i < 35; i++) {
        b8[i] = (int8_t)(i * 7 - 100);
        b16[i] = (uint16_t)(0x3f80 + i);
        if (i < 30) {
            a8[i] = (int8_t)(i * 3 - 40);
            a16[i] = (uint16_t)(0xbf00 + i * 5);
        }
    }
    memset(rows, 0x11, sizeof rows);
    ntpu_counters ctr;
    ntpu_device_status ds;
    (void)(step(dev, ntpu_write_rows(dev, NTPU_MEM_UB, 3, 8, rows)) &&
           step(dev, ntpu_matmul(dev, NTPU_DTYPE_INT8, a8, b8, c32, 6, 5, 7)) &&
           step(dev, ntpu_matmul_bf16(dev, a16, b16, c16, 6, 5, 7)) &&
           step(dev, ntpu_read_rows(dev, NTPU_MEM_UB, 3, 8, rows)) && step(dev, ntpu_read_counters(dev, &ctr, 1)) &&
           step(dev, ntpu_read_status(dev, &ds)));
    if (size < 5) { /* undamaged: the int8 product is exact */
        for (int i = 0; i < 6; i++) {
            for (int j = 0; j < 7; j++) {
                int32_t want = 0;
                for (int k = 0; k < 5; k++) {
                    want += a8[i * 5 + k] * b8[k * 7 + j];
                }
                if (c32[i * 7 + j] != want) {
                    abort();
                }
            }
        }
    }
    ntpu_close(dev);
    return 0;
}
