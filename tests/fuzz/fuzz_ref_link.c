/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the golden model's link receiver and command decoder (sim/ref/ref.c). The first byte picks
 * the mode: even, the rest goes in as raw link bytes (split into writes of a size the second byte gives,
 * so frames straddle calls); odd, the rest is a list of payloads (a 16-bit little-endian length, then
 * that many bytes) each sent as a frame with a valid CRC, so the fuzzer gets past the CRC to the decoder.
 * The model is small (N 4, small memories) so a command the fuzzer invents finishes quickly, and is made
 * anew for every input. Every reply byte is read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "ntpu_ref.h"

static void drain(ntpu_ref *r)
{
    uint8_t buf[4096];
    while (ntpu_ref_read(r, buf, sizeof buf) == sizeof buf) {
    }
}

/* docs/protocol.md's frame: SOF 0xA5, SEQ, LEN (16-bit LE), payload, CRC-32 (zlib's) of SEQ, LEN and the
 * payload, little-endian. */
static void send_frame(ntpu_ref *r, uint8_t seq, const uint8_t *payload, size_t len)
{
    uint8_t *f = malloc(len + 8);
    f[0] = 0xA5, f[1] = seq, f[2] = (uint8_t)len, f[3] = (uint8_t)(len >> 8);
    memcpy(f + 4, payload, len);
    uint32_t crc = (uint32_t)crc32(0L, f + 1, (uInt)(3 + len));
    for (int i = 0; i < 4; i++) {
        f[4 + len + i] = (uint8_t)(crc >> (8 * i));
    }
    ntpu_ref_write(r, f, len + 8);
    free(f);
    drain(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    ntpu_ref_config cfg = ntpu_ref_default_config();
    cfg.n = 4, cfg.ub_rows = 256, cfg.wb_rows = 256, cfg.acc_rows = 256, cfg.pm_rows = 64, cfg.os_rows = 64;
    cfg.max_payload = 1024;
    ntpu_ref *r = ntpu_ref_new(&cfg);
    if (!r) {
        abort();
    }
    const uint8_t *p = data + 2;
    size_t n = size - 2;
    if (data[0] % 2 == 0) {
        size_t chunk = data[1] ? data[1] : 256;
        for (size_t i = 0; i < n; i += chunk) {
            ntpu_ref_write(r, p + i, n - i < chunk ? n - i : chunk);
            drain(r);
        }
    } else {
        uint8_t seq = data[1];
        while (n >= 2) {
            size_t len = (size_t)(p[0] | p[1] << 8) % (cfg.max_payload + 1);
            p += 2, n -= 2;
            len = len < n ? len : n;
            send_frame(r, seq++, p, len);
            p += len, n -= len;
        }
    }
    ntpu_ref_free(r);
    return 0;
}
