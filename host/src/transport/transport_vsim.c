/* SPDX-License-Identifier: Apache-2.0 */
/* The "vsim" transport: the Verilator model of the RTL (sim/vsim) in-process.
 * Time is simulated, so a timeout is counted in clock cycles in which no byte
 * moves either way, not in wall-clock time. */
#include <string.h>

#include "internal.h"
#include "ntpu_vsim.h"

/* Idle cycles per millisecond of timeout: a nominal 1 MHz. At the default
 * timeout that is millions of cycles, far above any legal pause (one MATMUL is
 * at most 65535 rows). */
#define VSIM_CYCLES_PER_MS 1000u

static ntpu_status vsim_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ntpu_vsim_write(ctx, buf, n);
    return NTPU_OK;
}

static ntpu_status vsim_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                             size_t errlen)
{
    (void)err;
    (void)errlen;
    uint64_t idle = (uint64_t)timeout_ms * VSIM_CYCLES_PER_MS;
    *got = ntpu_vsim_read(ctx, buf, n, idle ? idle : 1);
    return *got == n ? NTPU_OK : NTPU_ERR_TIMEOUT;
}

static void vsim_close(void *ctx)
{
    ntpu_vsim_free(ctx);
}

/* Non-zero if one of the comma-separated options is board=...: a whole board. */
static int names_board(const char *opts)
{
    for (const char *p = opts; p && *p;) {
        if (strncmp(p, "board=", 6) == 0)
            return 1;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return 0;
}

static const ntpu_transport_ops vsim_ops = {
    .name = "vsim",
    .send = vsim_send,
    .recv = vsim_recv,
    .close = vsim_close,
    .starts_in_sync = 1,
};

ntpu_status ntpu_transport_vsim_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    if (opts && strstr(opts, "board=pico-ice"))
        return ntpu_transport_pico_ice_open(opts, out, err, errlen);
    if (names_board(opts))
        return ntpu_transport_vsim_board_open(opts, out, err, errlen);
    if (err && errlen)
        err[0] = 0;
    ntpu_vsim *sim = ntpu_vsim_new(opts, err, errlen);
    if (!sim) {
        if (err && errlen && !err[0])
            ntpu_errf(err, errlen, "cannot create the Verilator model (options '%s')", opts ? opts : "");
        return NTPU_ERR_INVALID_ARG;
    }
    out->ops = &vsim_ops;
    out->ctx = sim;
    return NTPU_OK;
}
