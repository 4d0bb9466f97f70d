/* SPDX-License-Identifier: Apache-2.0 */
/* The "vsim:board=..." transport: a whole board simulated (sim/vsim/vsim_board.cpp),
 * the board top's Verilator model reached through its UART pins at bit level.
 * It is that board as far as the host can tell, so it declares the same limits
 * as the transport that reaches the real one (transport_ftdi.c for the
 * iCEBreaker), and it starts, like a board, in an unknown state: open resyncs.
 * Timeouts count simulated cycles in which no byte finishes on either wire, at
 * the same nominal rate as plain vsim. */
#include "internal.h"
#include "ntpu_vsim_board.h"

#define VSIM_BOARD_CYCLES_PER_MS 1000u

static ntpu_status board_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ntpu_vsim_board_write(ctx, buf, n);
    return NTPU_OK;
}

static ntpu_status board_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                              size_t errlen)
{
    (void)err;
    (void)errlen;
    uint64_t idle = (uint64_t)timeout_ms * VSIM_BOARD_CYCLES_PER_MS;
    *got = ntpu_vsim_board_read(ctx, buf, n, idle ? idle : 1);
    return *got == n ? NTPU_OK : NTPU_ERR_TIMEOUT;
}

static void board_close(void *ctx)
{
    ntpu_vsim_board_free(ctx);
}

static const ntpu_transport_ops board_ops = {
    .name = "vsim:board",
    .send = board_send,
    .recv = board_recv,
    .close = board_close,
    .starts_in_sync = 0,
    /* The iCEBreaker's, as transport_ftdi.c declares them: a UART without flow
     * control into a 2,048-byte FIFO, and the board's max_payload. */
    .max_unanswered_tx_bytes = 1500,
    .max_payload_cap = 516,
    /* A UART can lose and flip bytes (ber=, drop= make it happen): the link
     * keeps the read-hazard rule as on the real board. */
    .lossy = 1,
};

ntpu_status ntpu_transport_vsim_board_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    ntpu_vsim_board *b = ntpu_vsim_board_new(opts, err, errlen);
    if (!b) {
        if (err && errlen && !err[0])
            ntpu_errf(err, errlen, "cannot create the simulated board (options '%s')", opts ? opts : "");
        return NTPU_ERR_INVALID_ARG;
    }
    out->ops = &board_ops;
    out->ctx = b;
    return NTPU_OK;
}
